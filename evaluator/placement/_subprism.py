"""Tasks on a sub-prism of a host torus (embedded partitions, Cray Gemini)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Optional

import numpy as np

from ..errors import is_int, positive_int, require
from ..topology import Topology, TorusTopology
from .base import Placement, PlacementContext, PlacementKind, config_list, vec

__all__ = ['subprism', 'SubprismConfig', 'SUBPRISM']


def subprism(topology: Topology, prism: Sequence[int], offset: Sequence[int] | None = None,
             n_tasks: int | None = None, tasks_per_node: int = 1) -> Placement:
    """Tasks on the nodes of a sub-prism of a host torus (embedded partitions, e.g. Cray Gemini).

    ``prism`` is the job's extent in routers along each host dimension and
    ``offset`` its first router coordinate (default the origin; coordinates
    wrap around the host). Task ``t`` runs on the ``t // tasks_per_node``-th
    node of the prism, nodes taken in row-major order of prism coordinates and
    then by port. Traffic is routed over the host torus, so routes may leave
    the prism.
    """
    require(isinstance(topology, TorusTopology), "placement.kind", "subprism",
            f"a placement for a {topology.kind}; 'subprism' needs a torus")
    dims = topology.dims  # type: ignore[union-attr]
    pr = vec("placement.task_grid", prism, len(dims))
    for k, (a, d) in enumerate(zip(pr, dims)):
        require(a <= d, f"placement.task_grid[{k}]", a, f"at most the host size dims[{k}] = {d}")
    off_allowed = f"a list of {len(dims)} integer router coordinates (they wrap around the host torus)"
    if offset is None:
        off = (0,) * len(dims)
    else:
        ok = isinstance(offset, (list, tuple, np.ndarray)) and len(offset) == len(dims) \
            and all(is_int(o) for o in offset)
        require(ok, "placement.offset", list(offset) if isinstance(offset, (tuple, np.ndarray)) else offset,
                off_allowed)
        off = tuple(int(o) for o in offset)
    tpn = positive_int("placement.tasks_per_node", tasks_per_node)
    p = topology.nodes_per_router
    n_slots = math.prod(pr) * p * tpn
    n = n_slots if n_tasks is None else positive_int("placement.n_tasks", n_tasks)
    require(0 < n <= n_slots, "placement.n_tasks", n,
            f"at most prism routers x nodes/router x tasks/node = {n_slots}")
    c = np.stack(np.unravel_index(np.arange(math.prod(pr)), pr), axis=1)
    routers = np.ravel_multi_index(tuple(((c + np.array(off)) % np.array(dims)).T), dims)
    nodes = (routers[:, None] * p + np.arange(p)[None, :]).ravel()
    task_node = nodes[np.arange(n) // tpn]
    return Placement(task_node.astype(np.int64), topology.n_nodes, "subprism " + "x".join(map(str, pr)))


@dataclass
class SubprismConfig:
    """The job's prism in routers on a host torus (``task_grid``; null: the machine topology's partition),
    its first router ``offset``, ``tasks_per_node``."""

    kind: str = "subprism"
    task_grid: Optional[list[int]] = None
    offset: Optional[list[int]] = None
    tasks_per_node: int = 1


def _from_config(cfg: SubprismConfig, ctx: PlacementContext) -> Placement:
    grid = (config_list(cfg.task_grid) if cfg.task_grid is not None
            else config_list(getattr(ctx.topology_cfg, "partition", None)))
    require(grid is not None, "placement.task_grid", None,
            "the job's prism in routers (or a machine topology with a partition)")
    return subprism(ctx.topology, grid, config_list(cfg.offset), n_tasks=ctx.n_tasks,
                    tasks_per_node=cfg.tasks_per_node)


SUBPRISM = PlacementKind("subprism", SubprismConfig, _from_config)
