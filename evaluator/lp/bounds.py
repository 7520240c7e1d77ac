"""Bounds of one design point: the demand of a (traffic, placement) on a topology, and the best any routing does.

:func:`router_demand` turns task-level traffic and a placement into a
:class:`~evaluator.lp.RouterDemand` (bytes per ordered router pair, and
the fixed injection/ejection loads, as the kernel counts them: bytes
between tasks on one node use no link, between nodes on one router only
injection and ejection). :func:`optimal` answers ``optimal_completion_time``
for :func:`evaluator.evaluate` (``bounds=True``); phased traffic's bound is
the sum of its phases' (each phase is an exchange of its own).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from ..dataset import BOUND_VARIABLES
from ..errors import ConfigError, check_memory, refuse_ignored
from ..placement import Placement
from ..topology import Topology
from ..traffic import AbstractTraffic
from ._flow import METHODS as FLOW_METHODS
from ._flow import RouterDemand, check_demand, normalized, optimal_bound
from ._dragonfly import METHOD as ADAPTIVE_METHOD
from ._dragonfly import dragonfly_adaptive_bound
from ._model1 import PathBound
from ._solvers import NotSolved, _check_solver

__all__ = ["router_demand", "optimal", "check_bounds", "BOUND_METHODS", "BoundResult", "BoundKind", "bound_kind",
           "combine"]

BOUND_METHODS = FLOW_METHODS + tuple(ADAPTIVE_METHOD.values())
"""What ``evaluate(..., bounds=...)`` may ask for: ``True`` (= ``"auto"``), a method of
:func:`~evaluator.lp.optimal_bound`, or ``"dragonfly_adaptive"`` / ``"dragonfly_adaptive_router"`` (the
ideal-UGAL bounds of the Dragonfly routings, not the all-paths one)."""


@dataclasses.dataclass(frozen=True)
class BoundKind:
    """What a bound is a bound *of*, and the variables it is stored under.

    ``lower``: the certified lower bound on the time (s); ``upper``: the
    feasible side (the time of a flow over the same paths that reaches it);
    ``efficiency``: ``lower / achieved``; ``bounds``: which routings it
    bounds (no such routing finishes sooner than ``lower``).
    """

    lower: str
    upper: str
    efficiency: str
    bounds: str

    @property
    def variables(self) -> tuple[str, str, str]:
        return self.lower, self.upper, self.efficiency


ANY_ROUTING = BoundKind(*BOUND_VARIABLES["optimal"],
                        "every routing (the maximum concurrent flow over all paths of the router graph)")
ADAPTIVE = BoundKind(*BOUND_VARIABLES["adaptive"],
                     "the Dragonfly routings minimal and valiant, and any per-group-pair mix of their paths (ideal "
                     "UGAL); not valiant_router (use bounds=dragonfly_adaptive_router), not path sets")
ADAPTIVE_ROUTER = dataclasses.replace(
    ADAPTIVE, bounds="the Dragonfly routings minimal, valiant and valiant_router, and any per-group-pair mix of "
                     "their paths (ideal UGAL); not path sets")


def bound_kind(method: str) -> BoundKind:
    """The :class:`BoundKind` of a bound method (:data:`BOUND_METHODS`)."""
    return {"dragonfly_adaptive": ADAPTIVE, "dragonfly_adaptive_router": ADAPTIVE_ROUTER}.get(method, ANY_ROUTING)


@dataclasses.dataclass(frozen=True)
class BoundResult:
    """A certified interval of the best time, summed over phases, and how it was computed.

    ``completion_time`` (s): a certified *lower* bound (the sum of each
    phase's certified lower bound: phases run one after another);
    ``completion_time_upper`` (s): the feasible side (the time of flows that
    reach it); ``gap = upper / lower - 1``; ``method`` and ``solver`` that ran.
    """

    completion_time: float
    method: str
    solver: str
    gap: float
    completion_time_upper: float


def combine(parts) -> BoundResult:
    """One :class:`BoundResult` from the phases' ``(lower s, upper s, method, solver)``."""
    lo = sum(x[0] for x in parts if math.isfinite(x[0]))
    up = sum(x[1] for x in parts)
    gap = up / lo - 1.0 if lo > 0 else (0.0 if up == lo else math.inf)
    return BoundResult(lo, "+".join(sorted({x[2] for x in parts})), "+".join(sorted({x[3] for x in parts})),
                       gap, up)


def router_demand(topology: Topology, traffic: AbstractTraffic, placement: Placement) -> RouterDemand:
    """Router-pair bytes and fixed injection/ejection loads of one exchange (see the module docstring; a phased
    traffic's summed over its phases): the traffic's
    :meth:`~evaluator.traffic.AbstractTraffic.location_bytes` per node and
    :meth:`~evaluator.traffic.AbstractTraffic.pair_bytes` per router pair."""
    N, R, nr = topology.n_nodes, topology.n_routers, topology.node_router
    fixed = np.zeros(topology.n_links)
    tn = np.asarray(placement.task_node, dtype=np.int64)
    sent, received = traffic.location_bytes(tn, N)
    fixed[topology.injection_link(np.arange(N))] = sent
    fixed[topology.ejection_link(np.arange(N))] = received

    def check(name: str, n_src: int, n_dst: int, n_pairs: int) -> None:
        check_memory("traffic", name, 48.0 * n_src * n_dst,
                     f"the router-pair demand of the bound ({n_src:,} x {n_dst:,} router pairs)",
                     "Bounds need the router-pair demand; use a smaller network or fewer communicating routers.")

    s, d, b = traffic.pair_bytes(np.asarray(nr)[tn], R, check)
    key, inv = np.unique(np.asarray(s, np.int64) * R + d, return_inverse=True)
    nbytes = np.bincount(inv.reshape(-1), weights=b, minlength=key.size)
    return RouterDemand(key // R, key % R, nbytes, fixed)


def _one(topology: Topology, demand: RouterDemand, method: str, solver: str) -> tuple[float, float, PathBound]:
    """``(lower s, upper s, bound)`` of one phase; the bound solved for the demand scaled by a power of two
    (:func:`~evaluator.lp._flow.normalized`) and its times scaled back exactly (1e-300 bytes: 1e-309 s, where
    the demand's own Z, 1e309 1/s, overflows)."""
    check_demand(topology, demand)
    demand, e = normalized(demand)
    if method in ADAPTIVE_METHOD.values():
        res = dragonfly_adaptive_bound(topology, demand, solver, router=method == ADAPTIVE_METHOD[True])
    else:
        res = optimal_bound(topology, demand, method, solver)
    return math.ldexp(res.completion_time, -e), math.ldexp(res.completion_time_upper, -e), res


def check_bounds(bounds, solver: str = "highs") -> str:
    """The method that ``bounds`` asks for (``True``: ``"auto"``); a :class:`ConfigError` for anything else."""
    method = "auto" if bounds is True else bounds
    if not isinstance(method, str) or method not in BOUND_METHODS:
        raise ConfigError("bounds", bounds, f"True, False or one of {list(BOUND_METHODS)}")
    try:
        _check_solver(solver)
    except ConfigError as exc:  # the setting's name, as the user wrote it
        raise ConfigError("bound_solver", exc.value, exc.allowed, exc.hint) from None
    refuse_ignored(method != "garg_konemann" or solver == "highs", "bound_solver", solver,  # (no LP to solve)
                   "'highs' (the default) with bounds=garg_konemann: multiplicative weights over shortest paths "
                   "solve no LP, so no LP solver is read",
                   "Drop bound_solver, or use bounds=edge (or true: auto) for an LP solved by it.")
    return method


def optimal(topology: Topology, traffic, placement: Placement, method: str = "auto",
            solver: str = "highs") -> BoundResult:
    """The best completion time (s) of ``traffic`` placed by ``placement`` as a certified interval, summed over
    its phases (:class:`BoundResult`: ``completion_time`` is the certified lower bound).

    ``method``: one of :data:`BOUND_METHODS`; ``solver``: ``highs`` or ``pdhg``.
    """
    method = check_bounds(method, solver)
    parts = []
    for x in traffic.phases:
        try:
            lower, upper, res = _one(topology, router_demand(topology, x, placement), method, solver)
        except NotSolved as exc:  # HiGHS without an optimum: named as the user's setting
            if exc.field != "solver":
                raise
            raise exc.renamed("bound_solver") from None
        parts.append((lower, upper, res.method, res.solver))
    return combine(parts)
