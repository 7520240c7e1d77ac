"""Bounds in sweeps (``bounds=true``): every point against its own ``evaluate(..., bounds=True)``.

The sweep computes the optimum once per distinct (topology, traffic,
placement) of a chunk and shares it across routings; the reference builds
each point's config alone and evaluates it with its own LP. Also: routing
efficiency never above 1, resume after interruption identical, sweeps without
bounds unchanged, refusals before anything runs.
"""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

from evaluator import config
from evaluator import config as C
from evaluator.config import RayConfig
from evaluator.errors import ConfigError, ResourceError
from evaluator.lp import solve_highs, z_from_objective
from evaluator.lp.bounds import bound_kind, optimal
from evaluator.query import open_results
from evaluator.sweep import plan_sweep, run_sweep
from evaluator.sweep import bounds as sb
from evaluator.sweep.worker import evaluate_chunk
from tests.helpers import TOL, per_point, strip

NO_RAY = RayConfig(enabled=False)
ONE_THREAD = RayConfig(enabled=False, num_cpus=1)
TORUS = ["topology.dims=[4,4]", "traffic.n_tasks=12"]
TORUS_AXES = {"routing.tie": ["split", "positive"], "placement.seed": {"range": [0, 3]}}
DF = ["topology.p=2", "topology.a=4", "topology.h=2", "traffic.alpha=[16,16,8]", "traffic.beta=[4,2,2]"]
DF_AXES = {"placement.gamma": [[2, 2, 2], [3, 1, 1]], "routing": ["minimal", "valiant"]}


def make_plan(name, extra, out, axes=None):
    ov = [f"sweeps={name}", *extra, f"sweep.output_dir={out}"]
    user = [o for o in extra if not o.startswith("sweep.")]
    return plan_sweep(config.compose_sweep(ov, user_overrides=user, axes=axes))





def check_points(plan, ds, bounds=True):
    method = "auto" if bounds is True else bounds
    lower, upper, eff = bound_kind(method).variables
    flat_of = {k: ds[k].values.reshape(-1) for k in sb.bound_variables(method) + ("reason", "completion_time")}
    n_ok = 0
    for flat in range(plan.n_points):
        why, ref = per_point(plan, flat, bounds=bounds)
        assert str(flat_of["reason"][flat]) == why
        if ref is None:
            assert np.isnan(flat_of[lower][flat]) and flat_of["bound_method"][flat] == ""
            continue
        n_ok += 1
        assert flat_of["completion_time"][flat] == pytest.approx(float(ref.completion_time), rel=TOL["rel"])
        for k in (lower, upper, eff):
            assert flat_of[k][flat] == pytest.approx(float(ref[k]), rel=TOL["rel"]), k
        assert flat_of["bound_method"][flat] == ref.attrs["bound_method"]
        assert flat_of["bound_solver"][flat] == ref.attrs["bound_solver"]
        assert flat_of["bound_gap"][flat] == pytest.approx(ref.attrs["bound_gap"], abs=TOL["lp"])
        # a certified interval: lower <= upper, and no routing of the class it bounds beats the lower side
        assert flat_of[lower][flat] <= flat_of[upper][flat] * (1 + TOL["lp"])
        assert flat_of[eff][flat] <= 1.0 + TOL["lp"]
    return n_ok


def test_torus_sweep_every_point_equals_its_own_bound_and_resumes_identically(tmp_path):
    extra = TORUS + ["sweep.chunk_size=2"]
    plan = make_plan("torus_bounds", extra, tmp_path / "a", TORUS_AXES)
    assert plan.bounds == "auto" and plan.bound_solver == "highs"
    ds = open_results(run_sweep(plan, NO_RAY, progress=False))
    assert check_points(plan, ds) == plan.n_points
    assert set(np.unique(ds.bound_method.values)) == {"edge"}
    assert ds.attrs["bounds"] == "auto"
    # the optimum depends on the placement, not the routing; DOR is below it somewhere
    opt = ds.optimal_completion_time
    xr.testing.assert_equal(opt.isel({"routing.tie": 0}, drop=True), opt.isel({"routing.tie": 1}, drop=True))
    assert float(ds.routing_efficiency.min()) < 1.0 - 0.01
    # interrupted after 2 of 4 chunks, resumed by a new driver (nothing in memory): the same dataset
    part = make_plan("torus_bounds", extra, tmp_path / "b", TORUS_AXES)
    assert run_sweep(part, NO_RAY, progress=False, stop_after=2) is None
    assert len(list((part.out_dir / f".{part.run_id}.chunks").glob("*.pkl"))) == 2
    again = make_plan("torus_bounds", extra, tmp_path / "b", TORUS_AXES)
    done = open_results(run_sweep(again, ONE_THREAD, progress=False))
    xr.testing.assert_identical(strip(done), strip(ds))


def test_dragonfly_sweep_with_infeasible_points_and_the_adaptive_bound(tmp_path):
    plan = make_plan("dragonfly_nne_placement", DF + ["bounds=dragonfly_adaptive", "sweep.chunk_size=4"], tmp_path,
                     DF_AXES)
    ds = open_results(run_sweep(plan, NO_RAY, progress=False))
    assert 0 < check_points(plan, ds, "dragonfly_adaptive") < plan.n_points  # gamma (3,1,1) does not divide beta
    assert set(np.unique(ds.bound_method.values)) == {"dragonfly_adaptive", ""}


def test_one_lp_per_placement_shared_across_routings(tmp_path, monkeypatch):
    """One LP per distinct (topology, traffic, placement): the chunks of the other routing reuse it."""
    plan = make_plan("torus_bounds", TORUS + ["sweep.chunk_size=2"], tmp_path, TORUS_AXES)
    calls = []
    real = sb.optimal
    monkeypatch.setattr(sb, "optimal", lambda *a: calls.append(a) or real(*a))
    chunks = plan.chunks()
    assert len(chunks) == 4  # 2 routings x 2 chunks of 3 seeds
    results = [evaluate_chunk(plan, pts) for _, pts in chunks]
    assert len(calls) == 3  # one per seed
    assert len({tuple(a[2].task_node) for a in calls}) == 3  # three placements
    # a chunk alone (a fresh worker: nothing cached) gives the same bounds
    fresh = make_plan("torus_bounds", TORUS + ["sweep.chunk_size=2"], tmp_path, TORUS_AXES)
    alone = evaluate_chunk(fresh, chunks[-1][1])
    assert len(calls) == 3 + chunks[-1][1].size
    for k in ("optimal_completion_time", "routing_efficiency", "bound_gap"):
        np.testing.assert_array_equal(alone["bounds"][k], results[-1]["bounds"][k])


def test_without_bounds_nothing_is_added(tmp_path):
    plan = make_plan("torus_bounds", TORUS + ["bounds=false"], tmp_path, TORUS_AXES)
    assert plan.bounds is None
    ds = open_results(run_sweep(plan, NO_RAY, progress=False))
    assert not set(sb.bound_variables("auto") + sb.bound_variables("dragonfly_adaptive")) & set(ds.data_vars) and "bounds" not in ds.attrs
    assert "bounds" not in evaluate_chunk(plan, plan.chunks()[0][1])


def test_refused_before_running(tmp_path, monkeypatch):
    plan = make_plan("torus_bounds", TORUS + ["bounds=edge"], tmp_path, TORUS_AXES)
    monkeypatch.setenv("EVALUATOR_MEMORY_LIMIT", "100000")  # 100 kB: the 4x4 edge LP needs more
    with pytest.raises(ResourceError, match="bounds = 'edge'.*edge LP.*need about") as e:
        run_sweep(plan, NO_RAY, progress=False)
    assert "\n" not in str(e.value)
    assert not (plan.out_dir / f".{plan.run_id}.chunks").exists() and not list(plan.out_dir.glob("*.nc"))
    monkeypatch.delenv("EVALUATOR_MEMORY_LIMIT")
    plan = make_plan("torus_bounds", TORUS + ["bounds=dragonfly_adaptive"], tmp_path, TORUS_AXES)
    with pytest.raises(ConfigError, match="bounds = 'dragonfly_adaptive'.*Dragonflies"):
        run_sweep(plan, NO_RAY, progress=False)
    with pytest.raises(ConfigError, match="bounds = 'maybe'"):
        make_plan("torus_bounds", TORUS + ["bounds=maybe"], tmp_path, TORUS_AXES)
    with pytest.raises(ConfigError, match="sweep.axes = 'bounds'"):
        make_plan("torus_bounds", TORUS, tmp_path, {**TORUS_AXES, "bounds": [True, False]})


def test_memory_estimate_is_an_upper_bound_of_the_edge_lp(tmp_path):
    """The estimate the refusal uses is never below the LP's own size (each sending task on its own router)."""
    from evaluator import lp
    from evaluator.lp.bounds import router_demand

    plan = make_plan("torus_bounds", ["topology.dims=[4,4]", "traffic.n_tasks=16"], tmp_path, TORUS_AXES)
    cfg = plan.point_config(0)
    topo = C.build_topology(cfg.topology)
    tr = C.build_traffic(cfg.traffic, topo)
    pl = C.build_placement(cfg.placement, topo, cfg.traffic, tr.n_tasks, cfg.topology)
    size = lp.edge_size(topo, router_demand(topo, tr, pl))
    for method in ("edge", "auto"):
        need, what = sb.bound_bytes(topo, sb._n_senders(tr), method)
        assert need >= size["bytes"] and "edge LP" in what
    assert sb.bound_bytes(topo, 16, "edge", batch=32)[0] == 32 * sb.bound_bytes(topo, 16, "edge")[0]


def test_batched_pdhg_chains_warm_starts_within_a_chunk_within_one_percent_and_chunks_stay_pure(tmp_path,
                                                                                                  monkeypatch):
    """bound_solver=pdhg with the batch lowered to 2 (``PDHG_BATCH``): each chunk of 6 same-size LPs is solved
    in 3 batched calls, the first cold and each later one warm-started from the previous call's final points
    (the object passed, and the solver reports it started from them); every Z within 1% of HiGHS (SciPy
    ``linprog(method="highs")``) on the same instance; the recorded gap is the solver's for that instance; the
    second chunk run alone (no warm start from the first) gives exactly what it gave in the full run."""
    monkeypatch.setattr(sb, "PDHG_BATCH", 2)
    calls = []  # (warm_start passed, result, LPs)
    real = sb.solve_pdhg

    def spy(lps, warm_start=None, **kw):
        out = real(lps, warm_start=warm_start, **kw)
        calls.append((warm_start, out, list(lps)))
        return out

    monkeypatch.setattr(sb, "solve_pdhg", spy)
    extra = ["topology.dims=[4,4]", "traffic.n_tasks=14", "placement=linear",  # LPs of one padded size
             "bound_solver=pdhg", "sweep.chunk_size=6"]
    axes = {"traffic.seed": list(range(12))}
    plan = make_plan("torus_bounds", extra, tmp_path / "p", axes)
    ds = open_results(run_sweep(plan, ONE_THREAD, progress=False))  # one chunk at a time: calls in chunk order
    assert len(plan.chunks()) == 2 and len(calls) == 6  # 2 chunks x 3 batches of 2
    assert len({out.bucket for _, out, _ in calls}) == 1
    for c in (0, 3):  # each chunk: cold, then warm from the previous call of the chunk
        assert calls[c][0] is None and not calls[c][1].warm_started
        for j in (c + 1, c + 2):
            assert calls[j][0] is calls[j - 1][1] and calls[j][1].warm_started
    assert set(ds.bound_solver.values.ravel()) == {"pdhg"} and ds.attrs["bounds_solver_requested"] == "pdhg"
    # every instance within 1% of HiGHS on the same LP; the point's recorded gap is its instance's
    z_pdhg, z_highs, gaps = [], [], []
    for _, out, lps in calls:
        for x, obj, gap in zip(lps, out.objective, out.gap):
            z_pdhg.append(z_from_objective(x, float(obj)))
            z_highs.append(z_from_objective(x, solve_highs(x).objective))
            gaps.append(float(gap))
    np.testing.assert_allclose(z_pdhg, z_highs, rtol=TOL["pdhg"])
    # chunks may run in any order: compare per chunk (3 consecutive calls) with the chunk's points, in order. Each
    # point's lower side is certified: never above the exact optimum (HiGHS on its LP), and within 1% of it; the
    # recorded gap is the interval's width
    exact = sorted(tuple(1 / np.asarray(z_highs[6 * c: 6 * c + 6])) for c in (0, 1))
    theirs = sorted(tuple(zip(*(ds[k].values.reshape(-1)[pts] for k in (
        "optimal_completion_time", "optimal_completion_time_upper", "bound_gap")))) for _, pts in plan.chunks())
    for t_exact, rows in zip(exact, theirs):
        lo, up, gap = np.asarray(rows).T
        assert (lo <= np.asarray(t_exact) * (1 + TOL["lp"])).all()  # the bound is certified (dual lengths)
        np.testing.assert_allclose(lo, t_exact, rtol=TOL["pdhg"])
        # the feasible side of an edge LP is the solver's primal value: within PDHG's tolerance, not certified
        np.testing.assert_allclose(up, t_exact, rtol=TOL["pdhg"])
        np.testing.assert_allclose(gap, up / lo - 1, rtol=TOL["rel"], atol=TOL["lp"])
    assert (ds.bound_gap < TOL["pdhg"]).all() and (ds.routing_efficiency <= 1 + TOL["lp"]).all()
    # and each point's optimum is that of its own demand (HiGHS on the point alone)
    for flat in (0, plan.n_points - 1):
        cfg = plan.point_config(flat)
        topo = C.build_topology(cfg.topology)
        tr = C.build_traffic(cfg.traffic, topo)
        exact = optimal(topo, tr, C.build_placement(cfg.placement, topo, cfg.traffic, tr.n_tasks, cfg.topology))
        assert float(ds.optimal_completion_time.values.reshape(-1)[flat]) == pytest.approx(exact.completion_time,
                                                                                          rel=TOL["pdhg"])
    # purity: the second chunk alone, in a fresh plan, starts cold and gives the same bounds bit for bit
    cid, pts = plan.chunks()[1]
    alone = evaluate_chunk(make_plan("torus_bounds", extra, tmp_path / "q", axes), pts)
    assert len(calls) == 9 and calls[6][0] is None
    for k in ("optimal_completion_time", "bound_gap"):
        np.testing.assert_array_equal(alone["bounds"][k], ds[k].values.reshape(-1)[pts][alone["ok"]])
