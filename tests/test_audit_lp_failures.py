"""Audit: what a user sees when an LP solve does not succeed (HiGHS without an optimum, PDHG not converged).

Failures are forced cheaply: ``scipy.optimize.linprog`` replaced by a stub that reports HiGHS's status 4
(numerical difficulties), tiny LPs that are infeasible or unbounded, and MPAX's PDHG given an iteration limit
of 1 (it stops at its first termination check, status ``ITERATION_LIMIT``). The references are written here
from the definitions in ``docs/bounds.md`` and solved with the real ``linprog`` (HiGHS): the maximum concurrent
flow over all paths (one commodity per router pair, arc flows on the topology's own link arrays) and Model 1
over a given path set.

What must hold: a bound's certified side bounds the reference optimum whatever the solver did; a feasible side
(``completion_time_upper``) is never below the optimum, so an unconverged primal is not reported as one; HiGHS
without an optimum is a ``ConfigError`` naming the solver setting (no trivial bound printed as the optimum, no
silent even split under ``optiq_lp``); a demand that makes the LP meaningless is refused naming the field.
"""

from __future__ import annotations

import functools
import math
import types

import numpy as np
import pytest
import scipy.optimize
import scipy.sparse as sp

import evaluator as ev
from evaluator import lp
from evaluator import placement as PL
from evaluator import routing as RT
from evaluator import topology as T
from evaluator import traffic as TR
from evaluator.errors import ConfigError
from evaluator.lp import _solvers
from evaluator.sweep import bounds as SB

REAL_LINPROG = scipy.optimize.linprog
REL = 1e-6


def _numerical_trouble(*args, **kwargs):
    """What ``linprog`` returns when HiGHS stops without an optimum (status 4)."""
    return types.SimpleNamespace(status=4, message="Numerical difficulties encountered.", nit=3, x=None, fun=None)


def _pdhg_limit(n):
    """MPAX's PDHG stopped after ``n`` iterations (it checks every 64: status ITERATION_LIMIT)."""
    return functools.partial(_solvers.solve_pdhg, iteration_limit=n)


# ---- independent references (HiGHS through the real linprog) ----

def ref_max_concurrent_flow(topo, src, dst, nbytes) -> float:
    """Max Z with every router pair q moving Z * nbytes[q] on any router-link paths (one commodity per pair)."""
    E, R, Q = int(topo.n_router_links), int(topo.n_routers), len(src)
    ls, ld = np.asarray(topo.link_src[:E]), np.asarray(topo.link_dst[:E])
    cap = np.asarray(topo.capacity[:E], float)
    scale = cap.max() / max(nbytes)
    n = Q * E + 1
    eq_rows, eq_cols, eq_vals = [], [], []
    for q in range(Q):
        for e in range(E):
            eq_rows += [q * R + ls[e], q * R + ld[e]]
            eq_cols += [q * E + e] * 2
            eq_vals += [1.0, -1.0]
        eq_rows += [q * R + src[q], q * R + dst[q]]
        eq_cols += [Q * E] * 2
        eq_vals += [-nbytes[q] * scale / cap.max(), nbytes[q] * scale / cap.max()]
    A_eq = sp.csr_matrix((eq_vals, (eq_rows, eq_cols)), shape=(Q * R, n))
    A_ub = sp.hstack([sp.kron(np.ones((1, Q)), sp.identity(E)), sp.csr_matrix((E, 1))]).tocsr()
    c = np.zeros(n)
    c[-1] = -1.0
    res = REAL_LINPROG(c, A_ub=A_ub, b_ub=cap / cap.max(), A_eq=A_eq, b_eq=np.zeros(Q * R), bounds=(0, None),
                       method="highs")
    assert res.status == 0, res.message
    return -res.fun * scale


def ref_model1(inc, pair, demand, cap) -> float:
    """Model 1's optimum Z (1/s) by HiGHS on its textbook form: max Z, sum_p f_p = Z d_q, inc f <= cap."""
    L, P = inc.shape
    Q = len(demand)
    E = sp.csr_matrix((np.ones(P), (pair, np.arange(P))), shape=(Q, P))
    A_eq = sp.hstack([E, sp.csr_matrix(-np.asarray(demand, float)[:, None])])
    A_ub = sp.hstack([sp.csr_matrix(inc), sp.csr_matrix((L, 1))])
    c = np.zeros(P + 1)
    c[-1] = -1.0
    res = REAL_LINPROG(c, A_ub=A_ub, b_ub=cap, A_eq=A_eq, b_eq=np.zeros(Q), bounds=(0, None), method="highs")
    assert res.status == 0, res.message
    return -res.fun


def _torus_demand():
    topo = T.torus([4, 4])
    rng = np.random.default_rng(0)
    src, dst = np.array([0, 1, 2, 3, 4]), np.array([10, 11, 12, 13, 14])
    nbytes = rng.uniform(1e6, 3e6, 5)
    return topo, lp.RouterDemand(src, dst, nbytes, np.zeros(topo.n_links)), src, dst, nbytes


# ---- the solvers' own reports ----

def test_solution_status_infeasible_unbounded_and_forced_failure(monkeypatch):
    """HiGHS without an optimum: NaN objective and x, gap inf, its message; an optimum agrees with linprog."""
    A = sp.csr_matrix(np.array([[1.0, 1.0]]))
    none = sp.csr_matrix((0, 2))
    infeasible = lp.LP(np.array([1.0, 1.0]), A, np.array([3.0]), none, np.zeros(0), np.array([1.0, 1.0]))
    unbounded = lp.LP(np.array([-1.0, 0.0]), none, np.zeros(0), none, np.zeros(0), np.array([np.inf, 1.0]))
    fine = lp.LP(np.array([-1.0, -2.0]), none, np.zeros(0), A, np.array([1.5]), np.array([1.0, 1.0]))
    for bad, word in ((infeasible, "infeasible"), (unbounded, "unbounded")):
        sol = lp.solve_highs(bad)
        assert sol.status != "optimal" and word in sol.status.lower()
        assert math.isnan(sol.objective) and np.isnan(sol.x).all() and sol.gap == math.inf
    ref = REAL_LINPROG([-1.0, -2.0], A_ub=[[1.0, 1.0]], b_ub=[1.5], bounds=[(0, 1), (0, 1)], method="highs")
    sol = lp.solve_highs(fine)
    assert sol.status == "optimal" and sol.objective == pytest.approx(ref.fun, rel=REL)
    monkeypatch.setattr(scipy.optimize, "linprog", _numerical_trouble)
    sol = lp.solve_highs(fine)
    assert sol.status == "Numerical difficulties encountered." and math.isnan(sol.objective)
    with pytest.raises(ConfigError) as err:
        _solvers.check_solved(sol, "solver", "a test LP")
    assert err.value.field == "solver" and err.value.value == "highs" and "Numerical difficulties" in str(err.value)


def test_pdhg_status_words():
    assert _solvers.pdhg_status(_solvers.PDHG_OPTIMAL) == "optimal"
    assert _solvers.pdhg_status(6) == "iteration_limit"
    assert _solvers.pdhg_status(3) == "primal_infeasible"


# ---- HiGHS without an optimum: refused, never a trivial bound or a silent even split ----

def test_highs_failure_is_an_error_naming_the_setting_everywhere(monkeypatch):
    topo, demand, *_ = _torus_demand()
    ring = T.torus((4,), link_bandwidth=1e9, injection_bandwidth=1e12)
    traffic = TR.from_flows(4, [0, 1], [2, 2], [8e6, 2e6])
    place = PL.linear(ring, 4)
    monkeypatch.setattr(scipy.optimize, "linprog", _numerical_trouble)
    with pytest.raises(ConfigError) as err:
        lp.edge_bound(topo, demand)
    assert err.value.field == "solver" and "Numerical difficulties" in str(err.value)
    with pytest.raises(ConfigError) as err:  # was: optimal_completion_time = the injection bound, upper inf
        ev.evaluate(ring, traffic, place, RT.dor(tie="positive"), bounds="edge")
    assert err.value.field == "bound_solver" and err.value.value == "highs"
    with pytest.raises(ConfigError) as err:  # was: the even split of kshortest, labelled optiq_lp
        ev.evaluate(ring, traffic, place, RT.optiq_lp(k=2))
    assert err.value.field == "routing.solver" and "Numerical difficulties" in str(err.value)
    inc = sp.csr_matrix(np.eye(2))
    with pytest.raises(ConfigError) as err:
        lp.solve_path_lp(inc, np.array([0, 1]), np.array([1.0, 1.0]), np.array([1.0, 2.0]))
    assert err.value.field == "solver"


def test_sweep_highs_bucket_failure_is_an_error(monkeypatch):
    """``bound_solver=pdhg`` sends small buckets to HiGHS: without an optimum, an error naming bound_solver."""
    ring = T.torus((4,), link_bandwidth=1e9, injection_bandwidth=1e12)
    points = [(ring, TR.from_flows(4, [0], [2], [8e6]), PL.linear(ring, 4))]
    monkeypatch.setattr(scipy.optimize, "linprog", _numerical_trouble)
    with pytest.raises(ConfigError) as err:
        SB._batched(points, "edge")
    assert err.value.field == "bound_solver" and "Numerical difficulties" in str(err.value)


def test_garg_konemann_survives_failed_restricted_lps(monkeypatch):
    """Its column generation's LPs fail: the multiplicative weights' interval stays certified and contains Z*."""
    topo, demand, src, dst, nbytes = _torus_demand()
    z_ref = ref_max_concurrent_flow(topo, src, dst, nbytes)
    monkeypatch.setattr(scipy.optimize, "linprog", _numerical_trouble)
    b = lp.garg_konemann(topo, demand, refine_after=5, max_steps=40)
    assert b.z <= z_ref * (1 + REL) and b.z_upper >= z_ref * (1 - REL)
    assert b.completion_time <= 1 / z_ref * (1 + REL)


# ---- PDHG not converged: the dual side certified, the primal never reported as feasible ----

def test_unconverged_pdhg_edge_bound_has_no_feasible_side(monkeypatch):
    topo, demand, src, dst, nbytes = _torus_demand()
    z_ref = ref_max_concurrent_flow(topo, src, dst, nbytes)
    monkeypatch.setattr(_solvers, "solve_pdhg", _pdhg_limit(1))
    b = lp.edge_bound(topo, demand, "pdhg")
    assert b.completion_time <= (1 / z_ref) * (1 + REL)  # certified lower side (dual lengths)
    # the feasible side is never below the optimum time; was 0.462 ms = the lower side, gap 0 (Z* 0.535 ms)
    assert b.completion_time_upper >= (1 / z_ref) * (1 - REL)
    assert b.z <= z_ref * (1 + REL)
    assert b.gap > 0.01
    assert lp.solve(lp.edge_lp(topo, demand), "pdhg").status == "iteration_limit"  # (was "6")


def test_unconverged_pdhg_in_a_sweep_batch(monkeypatch):
    """The sweep's batched PDHG (4 instances, one bucket) at an iteration limit of 1: each interval holds Z*."""
    topo = T.torus([4, 4])
    place = PL.linear(topo, 16)
    nr = np.asarray(topo.node_router)
    cap = np.asarray(topo.capacity, float)
    rng = np.random.default_rng(1)
    points, times = [], []
    for _ in range(SB.PDHG_MIN_BATCH):
        src = np.arange(4)
        dst = rng.choice(np.arange(8, 16), 4, replace=False)
        nb = rng.uniform(1e6, 3e6, 4)
        points.append((topo, TR.from_flows(16, src, dst, nb), place))
        # Z* = min(all-paths Z of the router pairs, c / fixed load of every injection and ejection link)
        t_fixed = max(np.max(nb / cap[topo.injection_link(src)]), np.max(nb / cap[topo.ejection_link(dst)]))
        times.append(max(1 / ref_max_concurrent_flow(topo, nr[src], nr[dst], nb), t_fixed))
    monkeypatch.setattr(SB, "solve_pdhg", functools.partial(SB.solve_pdhg, iteration_limit=1))
    out = SB._batched(points, "edge")
    for r, t_opt in zip(out, times):
        assert r.solver == "pdhg"
        assert r.completion_time <= t_opt * (1 + REL)
        assert r.completion_time_upper >= t_opt * (1 - REL)  # was below it (the unconverged primal's Z)


def test_unconverged_pdhg_model1_certified_and_optiq_lp_refused(monkeypatch):
    """Model 1 over optiq_lp's own k=2 paths of a 4-ring (one PDHG compilation for both checks)."""
    from evaluator.routing._paths import PairSet, path_incidence, path_table

    ring = T.torus((4,), link_bandwidth=1e9, injection_bandwidth=1e12)
    pairs = PairSet(np.array([0 * 4 + 2, 1 * 4 + 2]), 4, np.array([8e6, 2e6]))
    inc, pair = path_incidence(path_table(ring, RT.optiq_lp(k=2).bind(pairs), pairs))
    cap = np.asarray(ring.capacity[: ring.n_router_links], float)
    z_ref = ref_model1(inc, pair, pairs.demand, cap)
    monkeypatch.setattr(_solvers, "solve_pdhg", _pdhg_limit(1))
    b = lp.solve_path_lp(inc, pair, pairs.demand, cap, solver="pdhg")
    assert b.z <= z_ref * (1 + REL) <= b.z_upper * (1 + 2 * REL)  # rebuilt flows and dual lengths: certified
    traffic = TR.from_flows(4, [0, 1], [2, 2], [8e6, 2e6])
    with pytest.raises(ConfigError) as err:  # was: the unconverged split, labelled optiq_lp-pdhg
        ev.evaluate(ring, traffic, PL.linear(ring, 4), RT.optiq_lp(k=2, solver="pdhg"))
    assert err.value.field == "routing.solver" and "iteration_limit" in str(err.value)
    assert b.status == "iteration_limit"


def test_certify_path_with_infinite_or_nan_flows_certifies_nothing():
    """``certify_path`` takes any flows: infinite ones gave lower = inf (claimed above the optimum)."""
    inc = sp.csr_matrix(np.array([[1.0, 0], [0, 1]]))
    pair, demand, cap = np.array([0, 1]), np.array([1.0, 1.0]), np.array([1.0, 2.0])
    z_ref = ref_model1(inc, pair, demand, cap)  # 1.0
    for flow in (np.array([np.inf, np.inf]), np.array([np.nan, 1.0])):
        lo, up = lp.certify_path(inc, pair, demand, cap, None, flow, None)
        assert lo <= z_ref * (1 + REL) and up >= z_ref
    lo, up = lp.certify_path(inc, pair, demand, cap, None, np.array([1.0, 2.0]), np.array([1.0, 0.0]))
    assert lo == pytest.approx(z_ref, rel=REL) and up == pytest.approx(z_ref, rel=REL)  # finite flows: as before


# ---- a demand that makes the LP meaningless: refused, naming the field ----

@pytest.mark.parametrize("field, change", [
    ("demand.nbytes", dict(nbytes=np.array([-1e6, 1e6]))),  # was: a "certified" bound of an unbounded LP
    ("demand.nbytes", dict(nbytes=np.array([np.nan, 1e6]))),
    ("demand.nbytes", dict(nbytes=np.array([0.0, 0.0]))),  # was: ZeroDivisionError
    ("demand.src", dict(src=np.array([0, 99]))),
    ("demand.fixed_load", dict(fixed_load=-np.ones(64))),
])
@pytest.mark.parametrize("method", ["edge", "garg_konemann"])
def test_bad_router_demand_refused_naming_the_field(field, change, method):
    topo = T.torus([4, 4])
    base = dict(src=np.array([0, 1]), dst=np.array([5, 6]), nbytes=np.array([1e6, 2e6]),
                fixed_load=np.zeros(topo.n_links))
    base.update(change)
    with pytest.raises(ConfigError) as err:
        lp.optimal_bound(topo, lp.RouterDemand(**base), method)
    assert err.value.field == field
