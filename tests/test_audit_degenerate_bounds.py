"""Degenerate demands through every bound method and both LP solvers (audit, 2026-12-07).

``evaluator.lp.bounds.optimal`` (``auto``, ``edge``, ``garg_konemann``, ``dragonfly_adaptive``,
``dragonfly_adaptive_router``; HiGHS and the batched PDHG where a method solves an LP), Model 1
(``solve_path_lp``) and a path-set routing with ``bounds=True``, and one sweep with ``bounds=true
bound_solver=pdhg``, on: nothing to route (zero bytes, self traffic only, both tasks on one node), one pair,
one pair of 1e-300 and of 1e300 bytes, fixed loads only (a one-router network), a ring of 2, the smallest
Dragonfly the adaptive bounds accept (DF(1,1,2): g = a h + 1 = 3) and the one they refuse (DF(1,1,1), g = 2),
phased traffic with an empty phase. Each interval must hold the closed form written here: certified lower side
<= optimum <= feasible side, no NaN, no hang (every call under ``tests.helpers.within``).

Closed forms (docs/bounds.md "Units and the meaning of Z": time = max over links of load / capacity at the best
split; injection/ejection are fixed loads; bytes between tasks on one node use no link): nothing to route: 0 s;
fixed loads only: bytes / node-link bandwidth; one pair on a ring of 2 (one link per direction): bytes / link
bandwidth or the node-link time if larger; DF(1,1,2) (one router per group, one global link per group pair):
the pair splits over the minimal global link and the Valiant detour's two, bytes / (2 x global bandwidth)
unless injection is slower.

Defect found and fixed (evaluator/lp/_flow.py ``normalized``, used by ``optimal_bound``,
``dragonfly_adaptive_bound``, ``evaluator.lp.bounds.optimal`` and the sweep's batched bounds): a pair of
1e-300 bytes on 1e9 B/s links (optimum 1e-309 s, Z = 1e309 1/s overflows) crashed every method: HiGHS with
SciPy's "A_ub must not contain values inf, nan, or None", Garg-Konemann with NumPy's "index -9999 is out of
bounds", PDHG answered [0 s, inf] (gap inf). The demand is now scaled by an exact power of two before any LP is
built and the times scaled back: [1e-309 s, 1e-309 s].
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import xarray as xr

import evaluator as ev
from evaluator import placement as P
from evaluator import traffic as T
from evaluator.errors import ConfigError
from evaluator.lp import solve_path_lp
from evaluator.lp.bounds import optimal
from tests.helpers import within as run_within

LIMIT_S = 60.0
BW = 1e9
LP_METHODS = [("auto", "highs"), ("edge", "highs"), ("garg_konemann", "highs"), ("auto", "pdhg"),
              ("edge", "pdhg")]
ADAPTIVE = [(m, s) for m in ("dragonfly_adaptive", "dragonfly_adaptive_router") for s in ("highs", "pdhg")]
TOL = {"highs": 1e-6, "pdhg": 1e-2}  # relative, the interval's sides against the closed form


def within(fn, seconds: float = LIMIT_S):
    return run_within(fn, seconds)


def ring(k: int, npr: int = 1):
    return ev.torus([k], link_bandwidth=BW, nodes_per_router=npr)


def flows(n, src, dst, nbytes):
    return T.from_flows(n, src, dst, [float(b) for b in nbytes])


def check(r, best: float, solver: str) -> None:
    """The interval holds ``best`` (with rounding), both sides close to it, nothing NaN."""
    lo, up = r.completion_time, r.completion_time_upper
    assert not (math.isnan(lo) or math.isnan(up) or math.isnan(r.gap)), r
    assert lo <= best * (1 + 1e-9) and up >= best * (1 - 1e-9), (lo, best, up)
    assert lo == pytest.approx(best, rel=TOL[solver], abs=0.0) and up == pytest.approx(best, rel=TOL[solver], abs=0.0)
    assert math.isfinite(r.gap) and r.gap <= TOL[solver], r


def nothing_cases():
    t4 = ring(4)
    return {  # (topology, traffic, placement): nothing crosses a link, optimum 0 s
        "zero bytes": (t4, flows(2, [0], [1], [0]), P.linear(t4, 2)),
        "self traffic only": (t4, flows(2, [0, 1], [0, 1], [5, 5]), P.linear(t4, 2)),
        "both tasks on one node": (t4, flows(2, [0], [1], [5]), P.linear(t4, 2, tasks_per_node=2)),
        "every phase empty": (t4, T.phased([flows(2, [0], [1], [0]), flows(2, [0, 1], [0, 1], [3, 3])]),
                              P.linear(t4, 2)),
    }


@pytest.mark.parametrize("method,solver", LP_METHODS)
def test_nothing_to_route_is_zero(method, solver):
    for name, (topo, tr, pl) in nothing_cases().items():
        r = within(lambda: optimal(topo, tr, pl, method=method, solver=solver))
        assert r.completion_time == 0.0 and r.completion_time_upper == 0.0 and r.gap == 0.0, (name, r)


@pytest.mark.parametrize("method,solver", LP_METHODS)
@pytest.mark.parametrize("nbytes", [1e9, 1e-300, 1e300])
def test_one_pair_on_a_ring_of_two(method, solver, nbytes):
    # one link per direction at 1 GB/s, injection at least that: bytes / 1e9 (1e-309 s is subnormal, exact)
    t = ring(2)
    r = within(lambda: optimal(t, flows(2, [0], [1], [nbytes]), P.linear(t, 2), method=method, solver=solver))
    check(r, nbytes / BW, solver)


@pytest.mark.parametrize("method,solver", LP_METHODS)
def test_phased_with_an_empty_phase_and_fixed_loads_only(method, solver):
    t2, t1 = ring(2), ring(1, npr=2)
    # phases add: the empty phase 0 s, the pair 2e9 / 1e9 = 2 s
    r = within(lambda: optimal(t2, T.phased([flows(2, [0], [1], [0]), flows(2, [0], [1], [2e9])]), P.linear(t2, 2),
                               method=method, solver=solver))
    check(r, 2.0, solver)
    # one router, two nodes: only the node links carry the 1e9 bytes (1 GB/s each): 1 s, no LP to solve
    r = within(lambda: optimal(t1, flows(2, [0], [1], [1e9]), P.linear(t1, 2), method=method, solver=solver))
    check(r, 1.0, "highs")


def df(h: int, bw_p: float = 4e9):
    return ev.dragonfly(1, 1, h, bandwidth_p=bw_p, bandwidth_l=BW, bandwidth_r=BW)


@pytest.mark.parametrize("method,solver", ADAPTIVE)
def test_smallest_dragonfly_the_adaptive_bounds_accept(method, solver):
    t = df(2)
    assert (t.g, t.a, t.links_per_pair) == (3, 1, 1)
    # router 0 -> router 1: minimal over 0->1, Valiant over 0->2->1; half each: 1e9 / 2e9 = 0.5 s (injection
    # 1e9 / 4e9 = 0.25 s)
    r = within(lambda: optimal(t, flows(3, [0], [1], [1e9]), P.linear(t, 3), method=method, solver=solver))
    check(r, 0.5, solver)
    for nbytes in (1e-300, 1e300):
        r = within(lambda: optimal(t, flows(3, [0], [1], [nbytes]), P.linear(t, 3), method=method, solver=solver))
        check(r, nbytes / (2 * BW), solver)
    r = within(lambda: optimal(t, T.phased([flows(3, [0], [1], [0]), flows(3, [0], [2], [2e9])]), P.linear(t, 3),
                               method=method, solver=solver))
    check(r, 1.0, solver)
    for tr in (flows(3, [0], [1], [0]), flows(3, [0, 1], [0, 1], [7, 7])):
        r = within(lambda: optimal(t, tr, P.linear(t, 3), method=method, solver=solver))
        assert r.completion_time == 0.0 and r.completion_time_upper == 0.0 and r.gap == 0.0


@pytest.mark.parametrize("method", ["dragonfly_adaptive", "dragonfly_adaptive_router"])
def test_a_dragonfly_of_two_groups_is_refused_by_name(method):
    t = df(1)
    assert t.g == 2
    with pytest.raises(ConfigError) as info:
        within(lambda: optimal(t, flows(2, [0], [1], [1e9]), P.linear(t, 2), method=method))
    msg = str(info.value).strip()
    assert "\n" not in msg and "topology" in msg and "DF(1,1,1,2)" in msg and "at least 3 groups" in msg, msg


@pytest.mark.parametrize("solver", ["highs", "pdhg"])
def test_model1_without_a_pair_to_route(solver):
    # two paths of pairs with no bytes: nothing limits Z (inf), no time
    inc = np.array([[1.0, 0.0], [0.0, 1.0]])
    r = within(lambda: solve_path_lp(inc, [0, 1], [0.0, 0.0], [BW, BW], solver=solver))
    assert r.z == math.inf and r.completion_time == 0.0 and r.completion_time_upper == 0.0 and r.gap == 0.0


@pytest.mark.parametrize("routing", ["optiq_lp", "kshortest"])
def test_path_set_routing_with_every_pair_on_one_router(routing):
    # both tasks on router 0 (two nodes): 1e9 bytes each way over the node links only: bytes / node-link
    # bandwidth (the topology's own injection capacity), the same for every routing and for the bound
    for topo in (ring(1, npr=2), ring(4, npr=2)):
        best = 1e9 / float(topo.capacity[topo.injection_link(np.arange(1))][0])
        ds = within(lambda: ev.evaluate(topo, flows(2, [0, 1], [1, 0], [1e9, 1e9]), P.linear(topo, 2), routing,
                                        bounds=True))
        got = {k: float(ds[k]) for k in ("completion_time", "optimal_completion_time",
                                         "optimal_completion_time_upper", "routing_efficiency")}
        assert got == pytest.approx({"completion_time": best, "optimal_completion_time": best,
                                     "optimal_completion_time_upper": best, "routing_efficiency": 1.0},
                                    rel=1e-12), got


def test_sweep_with_pdhg_bounds_on_degenerate_points(tmp_path):
    """One task (nothing to route), two adjacent tasks (0.5 ms: each 1 MB flow splits over its 1- and 3-hop
    paths, 0.5 MB a link, injection 1 MB / 2 GB/s) on a ring of 4; an LP in a bucket of fewer than 4 goes to
    HiGHS."""
    from evaluator import config
    from evaluator.config import RayConfig
    from evaluator.query import open_results
    from evaluator.sweep import plan_sweep, run_sweep

    base = ["topology=torus", "topology.dims=[4]", f"topology.link_bandwidth={BW:g}", "routing=dor",
            "traffic=all_to_all", "traffic.bytes=1e6", "placement=linear", "bounds=true", "bound_solver=pdhg",
            "sweep.chunk_size=4", f"sweep.output_dir={tmp_path}"]
    p = plan_sweep(config.compose_sweep(base, axes={"traffic.n_tasks": [1, 2]}))
    ds = open_results(within(lambda: run_sweep(p, RayConfig(enabled=False), progress=False)))
    assert isinstance(ds, xr.Dataset)
    lo, up = ds.optimal_completion_time.values, ds.optimal_completion_time_upper.values
    assert lo[0] == 0.0 and up[0] == 0.0
    assert lo[1] <= 0.5e-3 * (1 + 1e-9) <= up[1] * (1 + 2e-9) and lo[1] == pytest.approx(0.5e-3, rel=1e-6)
    assert ds.bound_status.values.tolist() == ["ok", "ok"] and not np.isnan(ds.bound_gap.values).any()


@pytest.mark.parametrize("method", ["edge", "garg_konemann"])
def test_public_optimal_bound_of_a_tiny_pair_keeps_both_sides_around_the_optimum(method):
    """``optimal_bound`` itself (not through ``optimal``): 1e-300 bytes on a 1 GB/s ring of 2 takes 1e-309 s, whose
    rate 1e309 1/s is above the largest float. Scaling back raised Python's OverflowError ("math range error"); the
    feasible rate is now the largest float (a time above the optimum, never 0 s) and the certified rate inf (a
    lower time of 0 s): an interval that holds the optimum."""
    from evaluator.lp import RouterDemand, optimal_bound

    topo = ring(2)
    demand = RouterDemand(np.array([0]), np.array([1]), np.array([1e-300]), np.zeros(topo.n_links))
    res = within(lambda: optimal_bound(topo, demand, method, "highs"))
    assert res.completion_time <= 1e-309 <= res.completion_time_upper < 1e-307, res
    assert res.completion_time_upper > 0 and not math.isnan(res.gap)
