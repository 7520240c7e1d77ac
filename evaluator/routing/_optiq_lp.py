"""``optiq_lp``: Bui et al. Model 1 — each pair's bytes split over its k Yen paths by a linear program.

For the communicating router pairs of one point and their bytes ``d_q``
(summed over flows and phases), the split maximises the common rate ``Z``
(1/s) at which every pair moves ``Z d_q`` bytes/s, subject to the capacity
of every router-to-router link (:func:`evaluator.lp.path_lp`). The optimum
minimises the largest router-link load over every split of the same
candidate paths, so the point's router links carry at most what
``kshortest`` (the even split of the same k paths) puts on them. Injection
and ejection links are not in the LP: no split changes their load (the
kernel still includes them in the completion time).

The split depends on the demand, so the spec is bound to a
:class:`~evaluator.routing._paths.PairSet` *with* bytes
(:meth:`OptiqLpRouting.bind_pairs`): every point with its own demand gets its own
LP and operator (``evaluate_batch`` groups points with equal demand). Paths
come from :func:`~evaluator.routing._paths.path_table` (Yen, ``k`` and
``hop_limit`` as in ``kshortest``); the LP is solved by HiGHS (exact, the
default) or MPAX's PDHG (``solver="pdhg"``, relative duality gap about
1e-4). Phased traffic is split once for the bytes of all its phases.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from .._types import ConfigOf
from ..errors import ConfigError
from ..topology import Topology
from ._paths import (PairSet, PathSetRouting, bind_by_pair_set, check_hop_limit, check_k, path_incidence,
                     path_operator, path_table)
from .base import Routing, RoutingKind, RoutingOperator

__all__ = ["OptiqLpRouting", "optiq_lp", "lp_split", "OptiqLpConfig", "OPTIQ_LP"]


@dataclasses.dataclass(frozen=True)
class OptiqLpRouting(PathSetRouting):
    """A path-set routing whose split is Model 1's optimum; ``solver``: ``highs`` or ``pdhg``."""

    kind: str = "optiq_lp"
    solver: str = "highs"

    @property
    def label(self) -> str:
        return super().label + ("" if self.solver == "highs" else f"-{self.solver}")

    def bind_pairs(self, point_pairs, n_routers: int) -> list[tuple[Routing, list[int]]]:
        """One spec per distinct demand (pair set and bytes per pair), bound to it, with the points that have it
        (the split is solved for the demand)."""
        return bind_by_pair_set(self, [PairSet(k, n_routers, b) for k, b in point_pairs])


def optiq_lp(k: int = 8, hop_limit: int | None = None, solver: str = "highs") -> OptiqLpRouting:
    """Model 1 over ``k`` Yen paths per pair (at most ``hop_limit`` hops), solved by ``solver``."""
    from ..lp import SOLVERS

    if solver not in SOLVERS:
        raise ConfigError("routing.solver", solver, " | ".join(SOLVERS),
                          "highs is exact; pdhg is MPAX's first-order solver (gap reported).")
    return OptiqLpRouting("optiq_lp", check_k(k), check_hop_limit(hop_limit), None, None, solver)


def lp_split(topo: Topology, routing: OptiqLpRouting):
    """``(table, bound)``: the k-path table of the bound pairs with Model 1's split as path weights.

    ``bound`` is the :class:`evaluator.lp.PathBound` (``z`` in 1/s over the router links only).
    """
    from ..lp import solve_path_lp

    pairs = routing.pairs
    if pairs is None or pairs.demand is None:
        raise ConfigError("routing.pairs", pairs, "the router pairs of the traffic with their bytes",
                          "optiq_lp is solved for a demand: evaluate through evaluator.evaluate / evaluate_batch, "
                          "which bind it, or routing.bind(PairSet(keys, n_routers, bytes)).")
    table = path_table(topo, routing, pairs)
    assert table.n_pairs == len(pairs)  # the table's pairs are the PairSet's keys, in order
    inc, path_pair = path_incidence(table)
    cap = np.asarray(topo.capacity[: topo.n_router_links], np.float64)
    demand = np.asarray(pairs.demand, np.float64)
    try:
        bound = solve_path_lp(inc, path_pair, demand, cap, solver=routing.solver, method="optiq_lp")
    except ConfigError as exc:  # HiGHS without an optimum: named as the routing's setting
        if exc.field != "solver":
            raise
        raise ConfigError("routing.solver", exc.value, exc.allowed, exc.hint) from None
    if bound.solver == "pdhg" and bound.status != "optimal":  # PDHG stopped short: not the optimum's split
        raise ConfigError("routing.solver", routing.solver, "a solver that reaches the LP's optimum",
                          f"MPAX's PDHG stopped without it ({bound.status}) on Model 1 over {inc.shape[1]:,} "
                          "paths, so its split is not Model 1's; solver=highs is exact.")
    flow = np.clip(np.asarray(bound.flow, np.float64), 0.0, None)
    per_pair = np.bincount(path_pair, weights=flow, minlength=table.n_pairs)
    even = table.path_weight  # pairs the LP leaves without flow (no demand) keep the even split
    ok = per_pair[path_pair] > 0
    weight = np.where(ok, flow / np.where(ok, per_pair[path_pair], 1.0), even)
    return table.with_weights(weight), bound


def build_operator(topo: Topology, routing: OptiqLpRouting) -> RoutingOperator:
    """Compile ``optiq_lp`` for ``topo`` and the pairs and bytes it is bound to (solves the LP on the host)."""
    table, _ = lp_split(topo, routing)
    return path_operator(topo, routing, table)


@dataclass
class OptiqLpConfig:
    """Bui et al. Model 1: ``k`` Yen paths per pair, ``hop_limit``, ``solver`` (highs | pdhg)."""

    kind: str = "optiq_lp"
    k: int = 8
    hop_limit: Optional[Any] = None
    solver: str = "highs"


def _from_config(cfg: ConfigOf[OptiqLpConfig]) -> OptiqLpRouting:
    return optiq_lp(cfg.k, cfg.hop_limit, cfg.solver)


OPTIQ_LP = RoutingKind("optiq_lp", OptiqLpConfig, _from_config, topologies=None,  # any router graph
                       operator=build_operator)
