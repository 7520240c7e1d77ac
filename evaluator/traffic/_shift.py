"""Shift and tornado: task ``x`` sends to ``x + offset`` (per grid dimension)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from .._types import ConfigOf
from ..errors import ConfigError, check_memory, is_int, positive_float, positive_int, require
from .base import Traffic, TrafficKind, tasks_or_nodes

__all__ = ['shift', 'tornado', 'ShiftConfig', 'TornadoConfig', 'SHIFT', 'TORNADO']


def shift(n_tasks: int | None = None, offset: int | Sequence[int] = 1, bytes_per_task: float = 1.0,
          grid: Sequence[int] | None = None) -> Traffic:
    """Shift pattern: task ``x`` sends to ``(x + offset) mod size`` (per grid dimension).

    With ``grid`` the tasks form a row-major grid and ``offset`` is one shift
    per dimension; otherwise tasks form a line of ``n_tasks``.
    """
    b = positive_float("traffic.bytes", bytes_per_task)
    if grid is None:
        n = positive_int("traffic.n_tasks", n_tasks)
        grid_t = (n,)
    else:
        grid_t = check_task_grid(grid)
        if n_tasks is not None:  # (it was ignored: n_tasks=5 with grid [2, 2] made 4 tasks)
            require(is_int(n_tasks) and int(n_tasks) == math.prod(grid_t), "traffic.n_tasks", n_tasks,
                    f"the grid's task count {math.prod(grid_t)} (or null)")
    allowed = ("an integer" if len(grid_t) == 1 else
               f"an integer or a list of {len(grid_t)} integers (one per grid dimension)")
    if isinstance(offset, (list, tuple, np.ndarray)):
        offs = list(offset.tolist() if isinstance(offset, np.ndarray) else offset)
        require(all(is_int(o) for o in offs) and len(offs) in (1, len(grid_t)), "traffic.offset", offs, allowed,
                "Without traffic.grid the tasks form one line: give one offset, or set traffic.grid."
                if grid is None and len(offs) > 1 else None)
        off = [int(o) for o in offs]
    else:
        require(is_int(offset), "traffic.offset", offset, allowed)
        off = [int(offset)]
    if len(off) == 1:
        off = off * len(grid_t)
    # reduced mod the grid's sides in Python integers (an offset past int64, 2**63, crashed NumPy's conversion)
    step = np.asarray([o % k for o, k in zip(off, grid_t)], dtype=np.int64)
    n = math.prod(grid_t)
    check_memory("traffic.grid" if grid is not None else "traffic.n_tasks", list(grid_t) if grid is not None else n,
                 (24.0 * len(grid_t) + 40.0) * n, f"the {n} flows of a shift and their grid coordinates")
    coords = np.stack(np.unravel_index(np.arange(n), grid_t), axis=1)
    tgt = np.ravel_multi_index(tuple(((coords + step) % np.array(grid_t)).T), grid_t)
    return Traffic(n, np.arange(n, dtype=np.int64), tgt.astype(np.int64), np.full(n, b),
                   "shift " + ",".join(map(str, off)))


def check_task_grid(grid) -> tuple[int, ...]:
    """A task grid: a non-empty list of positive integers."""
    if not isinstance(grid, (list, tuple, np.ndarray)) or len(grid) == 0:
        raise ConfigError("traffic.grid", grid, "a non-empty list of positive integers (tasks per dimension), "
                                                "e.g. [8, 8]")
    return tuple(positive_int(f"traffic.grid[{k}]", v) for k, v in enumerate(grid))


def tornado(grid: Sequence[int], bytes_per_task: float = 1.0) -> Traffic:
    """Tornado: shift by ``ceil(k/2) - 1`` in every dimension of size ``k`` (Dally & Towles)."""
    grid_t = check_task_grid(grid)
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


def _shift_from_config(cfg: ConfigOf[ShiftConfig], topology) -> Traffic:
    off = cfg.offset if cfg.offset is None or isinstance(cfg.offset, (str, int, float, bool)) else list(cfg.offset)
    if cfg.grid is not None:  # the grid sets the tasks (n_tasks, if given, must agree)
        return shift(cfg.n_tasks, off, cfg.bytes, list(cfg.grid))
    return shift(tasks_or_nodes(cfg.n_tasks, topology), off, cfg.bytes, None)


def _tornado_from_config(cfg: ConfigOf[TornadoConfig], topology) -> Traffic:
    require(cfg.grid is not None, "traffic.grid", None, "a task grid for tornado, e.g. [8, 8]")
    return tornado(list(cfg.grid), cfg.bytes)


SHIFT = TrafficKind("shift", ShiftConfig, _shift_from_config)
TORNADO = TrafficKind("tornado", TornadoConfig, _tornado_from_config)
