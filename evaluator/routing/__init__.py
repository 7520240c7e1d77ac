"""Routings (one module per member, one registry line each).

* ``dor``: torus dimension-order routing (:func:`dor`);
* ``minimal`` and ``valiant``: Dragonfly routings (:func:`minimal`, :func:`valiant`);
* ``valiant_router``: Dragonfly Valiant through a uniformly chosen intermediate *router* (:func:`valiant_router`);
* ``dmodk``, ``ecmp`` and ``ecmp_spray``: fat-tree routings (:func:`dmodk`: D-mod-k up*/down*; :func:`ecmp`:
  hashed ECMP, one path per flow by a seeded hash, :func:`ecmp_seeds` and :func:`ecmp_seed_summary` over seeds;
  :func:`ecmp_spray`: an ideal per-packet spraying, the even split over the up ports), with their per-flow
  walks :func:`dmodk_paths`, :func:`ecmp_hash_paths` and :func:`ecmp_paths` (the spray's);
* ``kshortest`` and ``optiq_heuristic``: path-set routings on any topology (:func:`kshortest`,
  :func:`optiq_heuristic`; :mod:`evaluator.routing._paths`);
* ``optiq_lp``: Bui et al. Model 1, each pair's bytes split over its k paths by an LP (:func:`optiq_lp`).
* ``tago``: reconfigurable Dragonfly routing over all direct links between two groups (:func:`tago`).
* ``ugal``, ``torus_adaptive`` and ``ft_adaptive``: adaptive routings as flow-level fixed points over linear
  candidates (:func:`ugal`, :func:`torus_adaptive`, :func:`ft_adaptive`; not linear: :attr:`Routing.linear`).

The contract (:class:`Routing`, :class:`RoutingOperator`) is in
:mod:`evaluator.routing.base`. :data:`KINDS` maps a config kind to its schema,
spec builder, the topology kinds it serves and its operator builder; a new
routing is a new module here, its YAML file in ``conf/routing/`` and one line
in :data:`KINDS`.
"""

from __future__ import annotations

import functools

from .._registry import Registry
from ..errors import ConfigError, ConfigTypeError, nearest, require
from ..topology import KINDS as TOPOLOGY_KINDS, Topology
from . import _dor, _dragonfly, _fat_tree, _ft_adaptive, _kshortest, _optiq, _optiq_lp, _tago, _torus_adaptive, _ugal
from ._adaptive import AdaptiveOperator, AdaptiveRouting
from ._ft_adaptive import FtAdaptiveRouting, ft_adaptive
from ._torus_adaptive import TorusAdaptiveRouting, torus_adaptive
from ._ugal import UgalRouting, ugal
from ._dor import DOR_ORDERS, TIE_RULES, DorRouting, dor, dor_order
from ._dragonfly import minimal, valiant, valiant_router
from ._fat_tree import (EcmpRouting, dmodk, dmodk_paths, ecmp, ecmp_hash_paths, ecmp_paths, ecmp_seed_summary,
                        ecmp_seeds, ecmp_spray)
from ._kshortest import kshortest
from ._optiq import OptiqHeuristicRouting, heuristic_table, optiq_heuristic
from ._optiq_lp import OptiqLpRouting, optiq_lp
from ._paths import PairSet, PathSetRouting, PathTable, path_incidence, path_table, unroutable_pair
from ._tago import TagoRouting, tago, unconnected_bytes
from .base import Routing, RoutingKind, RoutingOperator, require_linear

__all__ = [
    "Routing",
    "DorRouting",
    "RoutingOperator",
    "RoutingKind",
    "dor",
    "minimal",
    "valiant",
    "valiant_router",
    "dmodk",
    "ecmp",
    "ecmp_spray",
    "EcmpRouting",
    "ecmp_seeds",
    "ecmp_seed_summary",
    "dmodk_paths",
    "ecmp_paths",
    "ecmp_hash_paths",
    "kshortest",
    "optiq_heuristic",
    "OptiqHeuristicRouting",
    "optiq_lp",
    "OptiqLpRouting",
    "PairSet",
    "path_table",
    "path_incidence",
    "unroutable_pair",
    "heuristic_table",
    "unconnected_bytes",
    "PathSetRouting",
    "PathTable",
    "tago",
    "TagoRouting",
    "dor_order",
    "DOR_ORDERS",
    "TIE_RULES",
    "ugal",
    "torus_adaptive",
    "ft_adaptive",
    "AdaptiveRouting",
    "AdaptiveOperator",
    "UgalRouting",
    "TorusAdaptiveRouting",
    "FtAdaptiveRouting",
    "require_linear",
    "build_routing",
    "check_routing",
    "routings_for",
    "KINDS",
]

KINDS: Registry[RoutingKind] = Registry("routing", [
    _dor.DOR,
    _dragonfly.MINIMAL,
    _dragonfly.VALIANT,
    _dragonfly.VALIANT_ROUTER,
    _fat_tree.DMODK,
    _fat_tree.ECMP,
    _fat_tree.ECMP_SPRAY,
    _kshortest.KSHORTEST,
    _optiq.OPTIQ_HEURISTIC,
    _optiq_lp.OPTIQ_LP,
    _tago.TAGO,
    _ugal.UGAL,
    _torus_adaptive.TORUS_ADAPTIVE,
    _ft_adaptive.FT_ADAPTIVE,
])
"""Routing kinds by config name."""


def routings_for(topology_kind: str) -> list[str]:
    """Names of the routing kinds that serve a topology kind."""
    require(isinstance(topology_kind, str) and topology_kind in TOPOLOGY_KINDS, "topology.kind", topology_kind,
            f"one of {sorted(TOPOLOGY_KINDS)}", nearest(topology_kind, TOPOLOGY_KINDS))
    return [name for name, k in KINDS.items() if k.serves(topology_kind)]


@functools.lru_cache(maxsize=32)
def _cached_build(topo: Topology, routing: Routing) -> RoutingOperator:
    # Topology compares and hashes by identity (eq=False), so the cache is per topology object.
    return KINDS[routing.kind].operator(topo, routing)


def build_routing(topology: Topology, routing: Routing) -> RoutingOperator:
    """Compile ``routing`` for ``topology`` on the host (cached per topology object)."""
    if not isinstance(topology, Topology):  # (a name or None raised AttributeError)
        raise ConfigTypeError("topology", topology, "a Topology (e.g. evaluator.torus([4, 4, 4]))")
    if not isinstance(routing, Routing):
        raise ConfigTypeError("routing", routing, "a Routing (e.g. evaluator.dor(), evaluator.minimal())",
                              "evaluate() and evaluate_batch() also take a routing's name; build_routing takes the "
                              "object.")
    if routing.kind not in KINDS or not KINDS[routing.kind].serves(topology.kind):
        raise ConfigError("routing.kind", routing.kind, f"one of {routings_for(topology.kind)} on a {topology.kind}",
                          "Pick a routing group that matches the topology.")
    return _cached_build(topology, routing)


def check_routing(topology: Topology, routing: Routing) -> None:
    """Raise the :class:`ConfigError` :func:`build_routing` would, without building a path set's tables.

    A routing that is bound to its router pairs before it is compiled
    (:attr:`Routing.needs_pairs <evaluator.routing.base.Routing.needs_pairs>`: an unbound path set;
    :func:`evaluator.evaluation.evaluate_batch` binds them) gets only the topology kind checked; every other
    routing is built (and cached) as by :func:`build_routing`.
    """
    if routing.kind not in KINDS or not KINDS[routing.kind].serves(topology.kind):
        build_routing(topology, routing)  # raises
    if not routing.needs_pairs:
        build_routing(topology, routing)
