"""ALPS-like allocation: a job takes the first free compute nodes of the ALPS order."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from .._types import ConfigOf, JobNodes, NodeBools, NodeInts
from ..errors import is_int, positive_int, require
from ..topology import Topology
from .base import TORUS_3D, Placement, PlacementContext, PlacementKind, check_topology
from .nodes import alps_order, compute_mask, fill_slots, nodes_needed
from .rank_order import RankOrderConfig, with_rank_order

__all__ = ["alps", "first_free", "AlpsConfig", "ALPS"]


def first_free(order: NodeInts, free: NodeBools, n_nodes: int, n_tasks: int, tasks_per_node: int,
               what: str, hint: str = "", skip: int = 0) -> JobNodes:
    """The first ``n_nodes`` nodes of ``order`` that are ``free``, after the first ``skip`` of them (a ConfigError
    on ``placement.n_tasks`` if there are fewer; the count it gives is of the free nodes after ``skip``)."""
    cand = order[free[order]][skip:]
    require(cand.size >= n_nodes, "placement.n_tasks", n_tasks,
            f"at most {what} x tasks_per_node = {cand.size} x {tasks_per_node} = {cand.size * tasks_per_node}",
            hint or None)
    return cand[:n_nodes]


def alps(topology: Topology, n_tasks: int, tasks_per_node: int = 1, slab: str = "yz", curve: str = "hilbert",
         skip: int = 0, free: NodeBools | None = None, rank_order=None, node_class: str | None = None) -> Placement:
    """A job on the first free compute nodes of the ALPS-like order (:func:`~evaluator.placement.nodes.alps_order`).

    ``skip``: free compute nodes passed over first (where the scheduler's list starts); ``free``: bool
    [node] of nodes not held by other jobs (default all); ``rank_order``: a ``rank_order`` config
    (default SMP); ``node_class``: only compute nodes of that class (e.g. XE). Service and down nodes are
    never taken.
    """
    check_topology(topology)
    TORUS_3D.require(topology, "alps")
    n = positive_int("placement.n_tasks", n_tasks)
    tpn = positive_int("placement.tasks_per_node", tasks_per_node)
    require(is_int(skip) and int(skip) >= 0, "placement.skip", skip, "an integer >= 0 (free nodes passed over)")
    order = alps_order(topology, slab, curve)
    ok = compute_mask(topology, node_class)
    if free is not None:
        free = np.asarray(free)
        require(free.dtype.kind == "b" and free.shape == (topology.n_nodes,), "placement.free",
                f"{free.dtype} {free.shape}", f"booleans, one per node ({topology.n_nodes})")
    ok = ok if free is None else (ok & free)
    need = nodes_needed(n, tpn)
    nodes = first_free(order, ok, need, n, tpn, f"free compute nodes after skip ({int(skip)})", skip=int(skip))
    pl = Placement(fill_slots(nodes, n, tpn), topology.n_nodes, f"alps {slab}/{tpn}")
    return with_rank_order(pl, rank_order)


@dataclass
class AlpsConfig:
    """The first free compute nodes in ALPS order: ``slab`` (yz | xz | xy: the slabs the order favours),
    ``curve`` (hilbert | serpentine), ``skip`` free nodes passed over, ``tasks_per_node``, ``rank_order``,
    ``node_class`` (null: any compute node; e.g. XE)."""

    kind: str = "alps"
    tasks_per_node: int = 1
    slab: str = "yz"
    curve: str = "hilbert"
    skip: int = 0
    rank_order: RankOrderConfig = field(default_factory=RankOrderConfig)
    node_class: Optional[str] = None


def _from_config(cfg: ConfigOf[AlpsConfig], ctx: PlacementContext) -> Placement:
    return alps(ctx.topology, ctx.n_tasks, cfg.tasks_per_node, cfg.slab, cfg.curve, cfg.skip,
                rank_order=cfg.rank_order, node_class=cfg.node_class)


ALPS = PlacementKind("alps", AlpsConfig, _from_config, needs=TORUS_3D)
