"""Tasks on a sub-prism of a host torus (embedded partitions, Cray Gemini)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from .._types import ConfigOf, JobNodes
from ..errors import is_int, positive_int, require
from ..topology import Topology
from .base import TORUS, Placement, PlacementContext, PlacementKind, config_list, vec, check_topology
from .nodes import compute_mask
from .rank_order import RankOrderConfig, with_rank_order

__all__ = ['subprism', 'prism_nodes', 'SubprismConfig', 'SUBPRISM']


def prism_nodes(topology: Topology, prism: Sequence[int], offset: Sequence[int] | None = None,
                field: str = "placement.task_grid") -> JobNodes:
    """Every node of a router prism of a host torus, row-major in prism coordinates then by port, shape [node].

    A prism larger than the host, or one holding a down node, is refused (a shaped request cannot be
    granted on a down node); service nodes are kept here and skipped by the caller.
    """
    TORUS.require(topology, "subprism")
    dims = topology.dims  # type: ignore[union-attr]
    pr = vec(field, prism, len(dims))
    for k, (a, d) in enumerate(zip(pr, dims)):
        require(a <= d, f"{field}[{k}]", a, f"at most the host size dims[{k}] = {d}")
    off_allowed = f"a list of {len(dims)} integer router coordinates (they wrap around the host torus)"
    if offset is None:
        off = (0,) * len(dims)
    else:
        ok = isinstance(offset, (list, tuple, np.ndarray)) and len(offset) == len(dims) \
            and all(is_int(o) for o in offset)
        require(ok, "placement.offset", list(offset) if isinstance(offset, (tuple, np.ndarray)) else offset,
                off_allowed)
        off = tuple(int(o) for o in offset)
    c = np.stack(np.unravel_index(np.arange(math.prod(pr)), pr), axis=1)
    routers = np.ravel_multi_index(tuple(((c + np.array(off)) % np.array(dims)).T), dims)
    p = topology.nodes_per_router
    nodes = (routers[:, None] * p + np.arange(p)[None, :]).ravel()
    names = getattr(topology, "node_class_names", ())
    if "down" in names:
        down = np.asarray(topology.node_class)[nodes] == names.index("down")  # type: ignore[attr-defined]
        if down.any():
            at = [int(v) for v in np.unravel_index(int(nodes[down][0]) // p, dims)]
            require(False, field, list(pr), f"a prism without down nodes; at offset {list(off)} it holds "
                    f"{int(down.sum())} (router {at} is down)", "Move the prism (placement.offset) or shrink it.")
    return nodes


def subprism(topology: Topology, prism: Sequence[int], offset: Sequence[int] | None = None,
             n_tasks: int | None = None, tasks_per_node: int = 1, rank_order=None,
             node_class: str | None = None) -> Placement:
    """Tasks on the nodes of a sub-prism of a host torus (embedded partitions, e.g. Cray Gemini).

    ``prism`` is the job's extent in routers along each host dimension and
    ``offset`` its first router coordinate (default the origin; coordinates
    wrap around the host). Task ``t`` runs on the ``t // tasks_per_node``-th
    node of the prism, nodes taken in row-major order of prism coordinates and
    then by port. Traffic is routed over the host torus, so routes may leave
    the prism.

    On a machine topology with service and down nodes (``layout=real``) the
    prism's service nodes are skipped (tasks fill its compute nodes) and a
    prism holding a down node is refused. ``rank_order``: a ``rank_order``
    config (default SMP); ``node_class``: only compute nodes of that class
    (the others are skipped like service nodes).
    """
    check_topology(topology)
    nodes = prism_nodes(topology, prism, offset)
    pr = vec("placement.task_grid", prism)
    tpn = positive_int("placement.tasks_per_node", tasks_per_node)
    p = topology.nodes_per_router
    ok = compute_mask(topology, node_class)[nodes]
    nodes = nodes[ok]
    n_slots = nodes.size * tpn
    n = n_slots if n_tasks is None else positive_int("placement.n_tasks", n_tasks)
    skipped = (f" ({int((~ok).sum())} service{'' if node_class is None else ' or non-' + node_class} nodes "
               "skipped)") if not ok.all() else ""
    require(0 < n <= n_slots, "placement.n_tasks", n,
            f"at most prism compute nodes x tasks/node = {nodes.size} x {tpn} = {n_slots}{skipped}"
            if skipped else f"at most prism routers x nodes/router x tasks/node = {n_slots}")
    task_node = nodes[np.arange(n) // tpn]
    pl = Placement(task_node.astype(np.int64), topology.n_nodes, "subprism " + "x".join(map(str, pr)))
    return with_rank_order(pl, rank_order)


@dataclass
class SubprismConfig:
    """The job's prism in routers on a host torus (``task_grid``; null: the machine topology's partition),
    its first router ``offset``, ``tasks_per_node``, ``rank_order`` (smp | grid_order), ``node_class`` (null: any
    compute node)."""

    kind: str = "subprism"
    task_grid: Optional[list[int]] = None
    offset: Optional[list[int]] = None
    tasks_per_node: int = 1
    rank_order: RankOrderConfig = field(default_factory=RankOrderConfig)
    node_class: Optional[str] = None


def _from_config(cfg: ConfigOf[SubprismConfig], ctx: PlacementContext) -> Placement:
    grid = (config_list(cfg.task_grid) if cfg.task_grid is not None
            else config_list(getattr(ctx.topology_cfg, "partition", None)))
    require(grid is not None, "placement.task_grid", None,
            "the job's prism in routers (or a machine topology with a partition)")
    return subprism(ctx.topology, grid, config_list(cfg.offset), n_tasks=ctx.n_tasks,
                    tasks_per_node=cfg.tasks_per_node, rank_order=cfg.rank_order, node_class=cfg.node_class)


SUBPRISM = PlacementKind("subprism", SubprismConfig, _from_config, needs=TORUS)
