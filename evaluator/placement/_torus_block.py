"""Cartesian block placement of a task grid onto a torus router grid."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Optional

import numpy as np

from .._types import ConfigOf
from ..errors import require
from ..topology import Topology
from .base import (TORUS, Placement, PlacementContext, PlacementKind, check_task_memory, check_topology, config_list,
                   vec)

__all__ = ['torus_block', 'TorusBlockConfig', 'TORUS_BLOCK']


def torus_block(topology: Topology, task_grid: Sequence[int]) -> Placement:
    """Cartesian block placement of a task grid onto a torus router grid.

    ``task_grid`` has one entry per torus dimension. Where ``task_grid[k] >=
    dims[k]`` it must be a multiple, and blocks of ``task_grid[k] / dims[k]``
    consecutive tasks share a router coordinate; where it is smaller the
    tasks occupy the first ``task_grid[k]`` routers. Tasks sharing a router
    are dealt to its nodes round-robin in row-major order of their offset in
    the block.
    """
    check_topology(topology)
    TORUS.require(topology, "torus_block")
    tg = vec("placement.task_grid", task_grid, topology.ndim)  # type: ignore[union-attr]
    dims = topology.dims  # type: ignore[union-attr]
    blk = []
    for k, (t, d) in enumerate(zip(tg, dims)):
        if t >= d:
            require(t % d == 0, f"placement.task_grid[{k}]", t, f"a multiple of dims[{k}] = {d}, or at most {d}")
            blk.append(t // d)
        else:
            blk.append(1)
    blk_t = tuple(blk)
    n = math.prod(tg)
    check_task_memory("placement.task_grid", list(tg), n, 8 * (3 * len(tg) + 5))  # coordinates, blocks, routers, nodes
    x = np.stack(np.unravel_index(np.arange(n), tg), axis=1)
    router = np.ravel_multi_index(tuple((x // np.array(blk_t)).T), dims)
    local = np.ravel_multi_index(tuple((x % np.array(blk_t)).T), blk_t)
    p = topology.nodes_per_router
    node = router * p + local % p
    return Placement(node.astype(np.int64), topology.n_nodes, "block " + "x".join(map(str, tg)))


@dataclass
class TorusBlockConfig:
    """Cartesian blocks of ``task_grid`` on the torus router grid (null: the stencil's beta)."""

    kind: str = "torus_block"
    task_grid: Optional[list[int]] = None


def _from_config(cfg: ConfigOf[TorusBlockConfig], ctx: PlacementContext) -> Placement:
    grid = config_list(cfg.task_grid) if cfg.task_grid is not None else ctx.beta
    require(grid is not None, "placement.task_grid", None, "a task grid (or a stencil traffic with beta)")
    return torus_block(ctx.topology, grid)


TORUS_BLOCK = PlacementKind("torus_block", TorusBlockConfig, _from_config, needs=TORUS,
                            grid_dims=lambda cfg, t: (t.ndim, t.ndim) if cfg.task_grid is None else None)
