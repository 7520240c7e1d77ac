"""``kshortest``: Yen's k shortest loopless paths per communicating router pair, demand split evenly.

Bui et al. Algorithm 1 on the router graph of any topology (the base
contract's router links; tori, meshes, machine partitions, Dragonflies,
reconfigurable Dragonflies, fat trees: ``topologies=None``): for every router pair with traffic, the
first ``k`` loopless paths in order of hop count (Yen's algorithm, paths
longer than ``hop_limit`` hops pruned), each carrying ``1/k`` of the pair's
bytes (``1/k'`` when only ``k' < k`` paths exist). ``k = 1`` is one shortest
path per pair (a fixed, deterministic one: not DOR's). Paths and the operator
are in :mod:`evaluator.routing._paths`; docs/routing_paths.md has the
decisions (which pairs, memory).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from .._types import ConfigOf
from ..topology import Topology
from ._paths import PathSetRouting, check_hop_limit, check_k, path_operator, path_table
from .base import RoutingKind, RoutingOperator

__all__ = ["kshortest", "KShortestConfig", "KSHORTEST"]


def kshortest(k: int = 4, hop_limit: int | None = None) -> PathSetRouting:
    """Yen's ``k`` shortest loopless paths per router pair (at most ``hop_limit`` hops), demand split evenly.

    A pair's paths do not depend on the other pairs, so a batch binds one spec to the union of its points' pairs
    (:meth:`PathSetRouting.bind_pairs <evaluator.routing._paths.PathSetRouting.bind_pairs>`)."""
    return PathSetRouting("kshortest", check_k(k), check_hop_limit(hop_limit))


def build_operator(topo: Topology, routing: PathSetRouting) -> RoutingOperator:
    """Compile ``kshortest`` for ``topo`` and the pairs it is bound to (host side)."""
    return path_operator(topo, routing, path_table(topo, routing, routing.pairs))


@dataclass
class KShortestConfig:
    """Yen's k shortest paths per router pair: ``k`` >= 1, ``hop_limit`` null or >= 1 (router hops)."""

    kind: str = "kshortest"
    k: int = 4
    hop_limit: Optional[Any] = None


def _from_config(cfg: ConfigOf[KShortestConfig]) -> PathSetRouting:
    return kshortest(cfg.k, cfg.hop_limit)


KSHORTEST = RoutingKind("kshortest", KShortestConfig, _from_config, topologies=None,  # any router graph
                        operator=build_operator)
