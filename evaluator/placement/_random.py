"""Fully random placement: tasks on uniformly random node slots."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import check_seed
from ..topology import Topology
from .base import Placement, PlacementKind, check_capacity

__all__ = ['fully_random', 'RandomConfig', 'RANDOM']


def fully_random(topology: Topology, n_tasks: int, tasks_per_node: int = 1, seed: int = 0) -> Placement:
    """Tasks on uniformly random node slots (at most ``tasks_per_node`` per node), seeded."""
    n, tpn = check_capacity(topology, n_tasks, tasks_per_node)
    seed = check_seed("placement.seed", seed)
    rng = np.random.default_rng(seed)
    slots = rng.choice(topology.n_nodes * tpn, size=n, replace=False)
    return Placement((slots // tpn).astype(np.int64), topology.n_nodes, f"random(seed={seed})")


@dataclass
class RandomConfig:
    """Uniformly random node slots: ``tasks_per_node``, ``seed``."""

    kind: str = "random"
    tasks_per_node: int = 1
    seed: int = 0


RANDOM = PlacementKind("random", RandomConfig,
                       lambda cfg, ctx: fully_random(ctx.topology, ctx.n_tasks, cfg.tasks_per_node, cfg.seed))
