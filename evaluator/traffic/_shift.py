"""Shift and tornado: task ``x`` sends to ``x + offset`` (per grid dimension)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from ..errors import positive_float, positive_int, require
from .base import Traffic, TrafficKind, tasks_or_nodes

__all__ = ['shift', 'tornado', 'ShiftConfig', 'TornadoConfig', 'SHIFT', 'TORNADO']


def shift(n_tasks: int | None = None, offset: int | Sequence[int] = 1, bytes_per_task: float = 1.0,
          grid: Sequence[int] | None = None) -> Traffic:
    """Shift pattern: task ``x`` sends to ``(x + offset) mod size`` (per grid dimension).

    With ``grid`` the tasks form a row-major grid and ``offset`` is one shift
    per dimension; otherwise tasks form a line of ``n_tasks``.
    """
    b = positive_float("traffic.bytes_per_task", bytes_per_task)
    if grid is None:
        n = positive_int("traffic.n_tasks", n_tasks)
        grid_t = (n,)
    else:
        grid_t = tuple(positive_int(f"traffic.grid[{k}]", v) for k, v in enumerate(grid))
    off = np.atleast_1d(np.asarray(offset, dtype=np.int64))
    if off.size == 1:
        off = np.full(len(grid_t), int(off[0]))
    require(off.size == len(grid_t), "traffic.offset", off.tolist(), f"a scalar or {len(grid_t)} offsets")
    n = math.prod(grid_t)
    coords = np.stack(np.unravel_index(np.arange(n), grid_t), axis=1)
    tgt = np.ravel_multi_index(tuple(((coords + off) % np.array(grid_t)).T), grid_t)
    return Traffic(n, np.arange(n, dtype=np.int64), tgt.astype(np.int64), np.full(n, b),
                   "shift " + ",".join(map(str, off.tolist())))


def tornado(grid: Sequence[int], bytes_per_task: float = 1.0) -> Traffic:
    """Tornado: shift by ``ceil(k/2) - 1`` in every dimension of size ``k`` (Dally & Towles)."""
    grid_t = tuple(positive_int(f"traffic.grid[{k}]", v) for k, v in enumerate(grid))
    t = shift(grid=grid_t, offset=[math.ceil(k / 2) - 1 for k in grid_t], bytes_per_task=bytes_per_task)
    return dataclasses.replace(t, name="tornado")


@dataclass
class ShiftConfig:
    """Shift: ``n_tasks`` (null: one per node) or a task ``grid``, ``offset`` (one or per dimension), ``bytes`` per task."""

    kind: str = "shift"
    n_tasks: Optional[int] = None
    grid: Optional[list[int]] = None
    offset: Any = 1
    bytes: float = 1.0e6


@dataclass
class TornadoConfig:
    """Tornado on a task ``grid``, ``bytes`` per task."""

    kind: str = "tornado"
    grid: Optional[list[int]] = None
    bytes: float = 1.0e6


def _shift_from_config(cfg: ShiftConfig, topology) -> Traffic:
    off = cfg.offset if isinstance(cfg.offset, int) else list(cfg.offset)
    return shift(tasks_or_nodes(cfg.n_tasks, topology), off, cfg.bytes, None if cfg.grid is None else list(cfg.grid))


def _tornado_from_config(cfg: TornadoConfig, topology) -> Traffic:
    require(cfg.grid is not None, "traffic.grid", None, "a task grid for tornado, e.g. [8, 8]")
    return tornado(list(cfg.grid), cfg.bytes)


SHIFT = TrafficKind("shift", ShiftConfig, _shift_from_config)
TORNADO = TrafficKind("tornado", TornadoConfig, _tornado_from_config)
