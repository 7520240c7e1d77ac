"""Bisection pairing: every node sends to its furthest partner."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import positive_float
from ..topology import Topology, TorusTopology
from .base import Traffic, TrafficKind

__all__ = ['furthest_partner', 'bisection_pairing', 'BisectionPairingConfig', 'BISECTION_PAIRING']


def _router_distances(topology: Topology) -> np.ndarray:
    """All-pairs router hop distance by BFS (SciPy), shape [router, router]."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import shortest_path

    n = topology.n_router_links
    A = csr_matrix((np.ones(n), (topology.link_src[:n], topology.link_dst[:n])),
                   shape=(topology.n_routers, topology.n_routers))
    return shortest_path(A, unweighted=True, directed=True)


def furthest_partner(topology: Topology) -> np.ndarray:
    """Partner node of every node, at the largest hop distance (shape [node]).

    Torus: the coordinate ``x_k + floor(n_k/2) mod n_k`` in every wrapped
    dimension and the mirror ``n_k - 1 - x_k`` in every mesh dimension (the
    furthest-node scheme; a pairing when all wrapped sizes are even), same
    port. Other topologies (Dragonfly): the router permutation that maximises the
    total BFS hop distance (``scipy.optimize.linear_sum_assignment``), no router
    mapped to itself; node ``(router, port)`` goes to ``(partner, port)``.
    On Dragonflies every router then reaches a router at its eccentricity.
    """
    p = topology.nodes_per_router
    if isinstance(topology, TorusTopology):
        dims = np.array(topology.dims)
        c = topology.router_coords
        wrap = np.array(topology.wrap)
        pc = np.where(wrap, (c + dims // 2) % dims, dims - 1 - c)
        pr = np.ravel_multi_index(tuple(pc.T), topology.dims)
        return (np.repeat(pr, p) * p + np.tile(np.arange(p), topology.n_routers)).astype(np.int64)
    from scipy.optimize import linear_sum_assignment

    dist = _router_distances(topology)
    np.fill_diagonal(dist, -1.0)
    _, pr = linear_sum_assignment(dist, maximize=True)
    return (np.repeat(pr, p) * p + np.tile(np.arange(p), topology.n_routers)).astype(np.int64)


def bisection_pairing(topology: Topology, bytes_per_pair: float = 1.0) -> Traffic:
    """Bisection pairing: every node sends ``bytes_per_pair`` to its furthest partner.

    One task per node: task ``t`` is meant to run on node ``t`` (linear
    placement). See :func:`furthest_partner` for the pairing.
    """
    b = positive_float("traffic.bytes_per_pair", bytes_per_pair)
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
