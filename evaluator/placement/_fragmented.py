"""A fragmented machine: the free nodes left by a seeded history of jobs, then the ALPS rule."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from .._types import ConfigOf, NodeBools
from ..errors import check_seed, positive_float, positive_int, require
from ..topology import Topology
from .base import TORUS_3D, Placement, PlacementContext, PlacementKind, config_list, vec, check_topology
from ._alps import first_free
from .nodes import alps_order, compute_mask, fill_slots, nodes_needed
from .rank_order import RankOrderConfig, with_rank_order

MAX_EVENTS = 1_000_000
"""The longest machine history :func:`free_after_history` plays (about 20 s on this 2-core VM)."""

__all__ = ["fragmented", "free_after_history", "FragmentedConfig", "FRAGMENTED"]


def free_after_history(topology: Topology, occupancy: float, seed: int = 0, job_nodes=(1, 1024),
                       events: int = 2000, slab: str = "yz", curve: str = "hilbert") -> NodeBools:
    """Free nodes (bool [node]) after a seeded random history of jobs arriving and leaving.

    Each event: jobs arrive while fewer than ``occupancy`` of the compute nodes are busy (sizes drawn
    log-uniformly in ``job_nodes = [min, max]`` nodes, each taking the first free compute nodes in
    ALPS order, as ALPS does; an arrival that does not fit ends the arrivals of that event; the last
    may overrun the share), then one running job, drawn uniformly, leaves. After ``events`` events jobs
    arrive once more; then, while more than ``floor(occupancy * compute nodes)`` are busy, running jobs
    drawn uniformly leave, and jobs no larger than the room left arrive (log-uniform in ``[min,
    min(max, room)]``) until less than ``min`` is left: the busy nodes never exceed the share asked and
    fall short of it by less than ``min``. Draws use ``numpy.random.default_rng(seed)``.
    """
    check_topology(topology)
    TORUS_3D.require(topology, "fragmented")
    occupancy = positive_float("placement.occupancy", occupancy, allow_zero=True)
    require(occupancy < 1, "placement.occupancy", occupancy, "a number in [0, 1): the busy share of "
                                                                  "compute nodes")
    lo, hi = vec("placement.job_nodes", job_nodes, 2)
    require(lo <= hi, "placement.job_nodes", [lo, hi], "[min, max] job sizes in nodes with min <= max")
    ev = positive_int("placement.events", events, minimum=0)
    require(ev <= MAX_EVENTS, "placement.events", ev, f"at most {MAX_EVENTS:,} arrivals and departures",
            "A history of 10^5 events takes about 2 s here; 10^9 ran without end.")
    rng = np.random.default_rng(check_seed("placement.seed", seed))
    order = alps_order(topology, slab, curve)
    order = order[compute_mask(topology)[order]]
    busy = np.zeros(order.size, dtype=bool)  # by position in the order
    target = occupancy * order.size
    running: list[np.ndarray] = []

    def arrive() -> None:
        while busy.sum() < target:
            size = int(round(math.exp(rng.uniform(math.log(lo), math.log(hi)))))
            pos = np.flatnonzero(~busy)[:size]
            if pos.size < size:
                return
            busy[pos] = True
            running.append(pos)

    def leave() -> None:
        busy[running.pop(int(rng.integers(len(running))))] = False

    for _ in range(ev):
        arrive()
        if running:
            leave()
    arrive()
    cap = int(math.floor(target + 1e-9))  # the busy nodes asked for: never more
    while busy.sum() > cap:
        leave()
    while (room := cap - int(busy.sum())) >= lo:  # and at most one job short
        size = int(round(math.exp(rng.uniform(math.log(lo), math.log(min(hi, room))))))
        busy[np.flatnonzero(~busy)[:size]] = True
    free = np.zeros(topology.n_nodes, dtype=bool)
    free[order[~busy]] = True
    return free


def fragmented(topology: Topology, n_tasks: int, tasks_per_node: int = 1, occupancy: float = 0.7,
               seed: int = 0, job_nodes=(1, 1024), events: int = 2000, slab: str = "yz",
               curve: str = "hilbert", rank_order=None, node_class: str | None = None) -> Placement:
    """A job on the first free compute nodes in ALPS order of a machine fragmented by
    :func:`free_after_history` (``node_class``: the job takes only compute nodes of that class)."""
    check_topology(topology)
    TORUS_3D.require(topology, "fragmented")
    n = positive_int("placement.n_tasks", n_tasks)
    tpn = positive_int("placement.tasks_per_node", tasks_per_node)
    free = free_after_history(topology, occupancy, seed, job_nodes, events, slab, curve)
    free = free & compute_mask(topology, node_class)
    nodes = first_free(alps_order(topology, slab, curve), free, nodes_needed(n, tpn), n, tpn,
                       "free compute nodes", "Lower placement.occupancy or use fewer tasks.")
    pl = Placement(fill_slots(nodes, n, tpn), topology.n_nodes, f"fragmented {occupancy:g}/{tpn}")
    return with_rank_order(pl, rank_order)


@dataclass
class FragmentedConfig:
    """ALPS order on a machine fragmented by a seeded job history: ``occupancy`` (busy share of compute
    nodes), ``seed``, ``job_nodes`` ([min, max] job sizes, log-uniform), ``events`` (arrive/leave steps),
    ``slab``, ``curve``, ``tasks_per_node``, ``rank_order``, ``node_class`` (null: any compute node)."""

    kind: str = "fragmented"
    tasks_per_node: int = 1
    occupancy: float = 0.7
    seed: int = 0
    job_nodes: Optional[list[int]] = field(default_factory=lambda: [1, 1024])
    events: int = 2000
    slab: str = "yz"
    curve: str = "hilbert"
    rank_order: RankOrderConfig = field(default_factory=RankOrderConfig)
    node_class: Optional[str] = None


def _from_config(cfg: ConfigOf[FragmentedConfig], ctx: PlacementContext) -> Placement:
    return fragmented(ctx.topology, ctx.n_tasks, cfg.tasks_per_node, cfg.occupancy, cfg.seed,
                      config_list(cfg.job_nodes), cfg.events, cfg.slab, cfg.curve, cfg.rank_order, cfg.node_class)


FRAGMENTED = PlacementKind("fragmented", FragmentedConfig, _from_config, needs=TORUS_3D)
