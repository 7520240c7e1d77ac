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

from ..errors import ConfigError, check_memory
from ..placement import Placement
from ..topology import Topology
from ..traffic import DenseTraffic, PhasedTraffic, Traffic
from ._flow import METHODS as FLOW_METHODS
from ._flow import RouterDemand, optimal_bound
from ._dragonfly import dragonfly_adaptive_bound
from ._model1 import PathBound
from ._solvers import _check_solver

__all__ = ["router_demand", "optimal", "check_bounds", "BOUND_METHODS", "BoundResult"]

BOUND_METHODS = FLOW_METHODS + ("dragonfly_adaptive",)
"""What ``evaluate(..., bounds=...)`` may ask for: ``True`` (= ``"auto"``), a method of
:func:`~evaluator.lp.optimal_bound`, or ``"dragonfly_adaptive"`` (the ideal-UGAL bound, not the all-paths one)."""


@dataclasses.dataclass(frozen=True)
class BoundResult:
    """``completion_time`` (s, summed over phases), the method and solver that ran and the largest gap."""

    completion_time: float
    method: str
    solver: str
    gap: float


def router_demand(topology: Topology, traffic: Traffic | DenseTraffic, placement: Placement) -> RouterDemand:
    """Router-pair bytes and fixed injection/ejection loads of one exchange (see the module docstring)."""
    npr, N = topology.nodes_per_router, topology.n_nodes
    fixed = np.zeros(topology.n_links)
    tn = np.asarray(placement.task_node, dtype=np.int64)
    if isinstance(traffic, DenseTraffic):
        b = float(traffic.bytes_per_pair)
        U = np.bincount(tn, weights=traffic.src_weight, minlength=N) * b
        V = np.bincount(tn, weights=traffic.dst_weight, minlength=N)
        fixed[topology.injection_link(np.arange(N))] = U * (V.sum() - V)
        fixed[topology.ejection_link(np.arange(N))] = V * (U.sum() - U)
        Ur = U.reshape(-1, npr).sum(1)
        Vr = V.reshape(-1, npr).sum(1)
        s, d = np.nonzero(Ur)[0], np.nonzero(Vr)[0]
        check_memory("traffic", traffic.name, 48.0 * s.size * d.size,
                     f"the router-pair demand of the bound ({s.size:,} x {d.size:,} router pairs)",
                     "Bounds need the router-pair demand; use a smaller network or fewer communicating routers.")
        S, D = np.repeat(s, d.size), np.tile(d, s.size)
        keep = S != D
        S, D = S[keep], D[keep]
        return RouterDemand(S, D, Ur[S] * Vr[D], fixed)
    ns, nd = tn[traffic.src], tn[traffic.dst]
    off = (ns != nd) & (traffic.nbytes > 0)
    ns, nd, w = ns[off], nd[off], np.asarray(traffic.nbytes, dtype=np.float64)[off]
    np.add.at(fixed, topology.injection_link(ns), w)
    np.add.at(fixed, topology.ejection_link(nd), w)
    rs, rd = ns // npr, nd // npr
    cross = rs != rd
    key, inv = np.unique(rs[cross] * topology.n_routers + rd[cross], return_inverse=True)
    nbytes = np.bincount(inv, weights=w[cross], minlength=key.size)
    return RouterDemand(key // topology.n_routers, key % topology.n_routers, nbytes, fixed)


def _one(topology: Topology, demand: RouterDemand, method: str, solver: str) -> PathBound:
    if method == "dragonfly_adaptive":
        return dragonfly_adaptive_bound(topology, demand, solver)
    return optimal_bound(topology, demand, method, solver)


def check_bounds(bounds, solver: str = "highs") -> str:
    """The method that ``bounds`` asks for (``True``: ``"auto"``); a :class:`ConfigError` for anything else."""
    method = "auto" if bounds is True else bounds
    if not isinstance(method, str) or method not in BOUND_METHODS:
        raise ConfigError("bounds", bounds, f"True, False or one of {list(BOUND_METHODS)}")
    _check_solver(solver)
    return method


def optimal(topology: Topology, traffic, placement: Placement, method: str = "auto",
            solver: str = "highs") -> BoundResult:
    """The best completion time (s) of ``traffic`` placed by ``placement``: the sum over its phases.

    ``method``: one of :data:`BOUND_METHODS`; ``solver``: ``highs`` or ``pdhg``.
    """
    method = check_bounds(method, solver)
    phases = traffic.phases if isinstance(traffic, PhasedTraffic) else (traffic,)
    t, gap, methods, solvers = 0.0, 0.0, [], []
    for x in phases:
        res = _one(topology, router_demand(topology, x, placement), method, solver)
        t += res.completion_time if math.isfinite(res.completion_time) else 0.0
        gap = max(gap, res.gap)
        methods.append(res.method)
        solvers.append(res.solver)
    return BoundResult(t, "+".join(sorted(set(methods))), "+".join(sorted(set(solvers))), gap)
