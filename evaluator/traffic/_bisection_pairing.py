"""Bisection pairing: every node sends to its furthest partner."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._types import NodeInts
from ..errors import ConfigError, positive_float
from ..topology import Topology
from .base import Traffic, TrafficKind

__all__ = ['furthest_partner', 'bisection_pairing', 'BisectionPairingConfig', 'BISECTION_PAIRING']


def furthest_partner(topology: Topology) -> NodeInts:
    """Partner node of every node, at the largest hop distance (shape [node]).

    Torus: the coordinate ``x_k + floor(n_k/2) mod n_k`` in every wrapped
    dimension and the mirror ``n_k - 1 - x_k`` in every mesh dimension (the
    furthest-node scheme; a pairing when all wrapped sizes are even), same
    port. Other topologies (Dragonfly): the router permutation that maximises the
    total BFS hop distance (``scipy.optimize.linear_sum_assignment``), no router
    mapped to itself; node ``(router, port)`` goes to ``(partner, port)``.
    On Dragonflies every router then reaches a router at its eccentricity.
    The topology answers the router partner (:meth:`Topology.furthest_routers`).
    """
    pr = topology.furthest_routers()
    start, count = topology.router_nodes
    node = np.arange(topology.n_nodes, dtype=np.int64)
    r = topology.node_router
    port = node - start[r]
    partner = pr[r]
    if (count[partner] != count[r]).any():
        raise ConfigError("traffic.kind", "bisection_pairing",
                          f"a topology whose paired routers carry equal node counts ({topology.name} does not)")
    return (start[partner] + port).astype(np.int64)


def bisection_pairing(topology: Topology, bytes_per_pair: float = 1.0) -> Traffic:
    """Bisection pairing: every node sends ``bytes_per_pair`` to its furthest partner.

    One task per node: task ``t`` is meant to run on node ``t`` (linear
    placement). See :func:`furthest_partner` for the pairing.
    """
    b = positive_float("traffic.bytes", bytes_per_pair)
    partner = furthest_partner(topology)
    n = topology.n_nodes
    keep = partner != np.arange(n)
    src = np.arange(n, dtype=np.int64)[keep]
    return Traffic(n, src, partner[keep], np.full(src.size, b), "bisection-pairing")


@dataclass
class BisectionPairingConfig:
    """Furthest-node pairs, one task per node; ``bytes`` per pair."""

    kind: str = "bisection_pairing"
    bytes: float = 1.0e6


BISECTION_PAIRING = TrafficKind("bisection_pairing", BisectionPairingConfig,
                                lambda cfg, topology: bisection_pairing(topology, cfg.bytes))
