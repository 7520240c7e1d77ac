"""Linear placement: rank order onto consecutive nodes."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import is_int, require
from ..topology import Topology
from .base import Placement, PlacementKind, check_capacity, check_topology, fits_per_node

__all__ = ['linear', 'LinearConfig', 'LINEAR']


def linear(topology: Topology, n_tasks: int, tasks_per_node: int = 1, first_node: int = 0) -> Placement:
    """Rank order onto nodes: task ``t`` on node ``first_node + t // tasks_per_node``."""
    check_topology(topology)
    n, tpn = check_capacity(topology, n_tasks, tasks_per_node)
    require(is_int(first_node), "placement.first_node", first_node, "an integer >= 0 (the first node's id)")
    first_node = int(first_node)
    last = first_node + math.ceil(n / tpn) - 1
    require(0 <= first_node and last < topology.n_nodes, "placement.first_node", first_node,
            f"an integer in [0, {topology.n_nodes - math.ceil(n / tpn)}] so that {n} tasks fit")
    return Placement(first_node + np.arange(n, dtype=np.int64) // tpn, topology.n_nodes, f"linear/{tpn}")


@dataclass
class LinearConfig:
    """Rank order onto nodes: ``tasks_per_node``, ``first_node``."""

    kind: str = "linear"
    tasks_per_node: int = 1
    first_node: int = 0


LINEAR = PlacementKind("linear", LinearConfig,
                       lambda cfg, ctx: linear(ctx.topology, ctx.n_tasks, cfg.tasks_per_node, cfg.first_node),
                       fits=fits_per_node)
