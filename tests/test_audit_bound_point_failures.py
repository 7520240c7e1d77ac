"""Audit: a bound LP that fails at one point of a sweep is that point's outcome, never the sweep's end.

Failures are injected by replacing HiGHS (``evaluator.lp._solvers.solve_highs``, and the sweep module's own
name for it where ``bound_solver=pdhg`` sends a small bucket to HiGHS) with a stub that returns HiGHS's "no
optimum" answer (NaN objective and flows, the message SciPy gives) for the LPs of chosen placements, recognised
by a fingerprint of the LP's arrays. Sweeps run in this process (``ray.enabled=false``).

What must hold: the failed points keep their exact evaluation (link loads and times equal to the same sweep
without failures); their bound variables are NaN and ``bound_status`` names HiGHS's status; the other points'
bounds equal the optimum of a maximum-concurrent-flow LP written and solved here (SciPy ``linprog``, HiGHS); the
sweep prints one summary line; a query ranking by a bound never puts a NaN first; an unconverged batched PDHG
LP keeps its certified lower side with ``bound_status`` ``pdhg: <status>`` and is not counted as failed.
"""

from __future__ import annotations

import hashlib
import math
import re
import types

import numpy as np
import pytest
import scipy.optimize
import scipy.sparse as sp
import xarray as xr

from evaluator import config
from evaluator import config as C
from evaluator import placement as PL
from evaluator import topology as T
from evaluator import traffic as TR
from evaluator.config import RayConfig
from evaluator.lp import _solvers
from evaluator.query import best, open_results
from evaluator.sweep import assemble as SA
from evaluator.sweep import bounds as SB
from evaluator.sweep import plan_sweep, run_sweep

REAL_LINPROG = scipy.optimize.linprog
REAL_SOLVE_HIGHS = _solvers.solve_highs
REL = 1e-7  # HiGHS's optimum of the same LP in two formulations
ONE_THREAD = RayConfig(enabled=False, num_cpus=1)
EXTRA = ["topology.dims=[4,4]", "topology.injection_bandwidth=1e12", "traffic.n_tasks=16",  # router links bind
         "sweep.chunk_size=2", "sweep.keep_link_load=true"]
AXES = {"routing.tie": ["split", "positive"], "placement.seed": {"range": [0, 4]}}
NUMERICAL = "Numerical difficulties encountered."
INFEASIBLE = "The problem is infeasible. (HiGHS Status 8: model_status is Infeasible; primal_status is None)"
FAIL = {1: NUMERICAL, 3: INFEASIBLE}  # placement.seed -> HiGHS's message for its LP
BOUND_NUMBERS = ("optimal_completion_time", "optimal_completion_time_upper", "routing_efficiency", "bound_gap")
LINE = re.compile(r"^sweep \S+: (\d+) points' bound LPs failed: (.*); their bounds are NaN, see bound_status$")


# ---- the injected failure ----

def fingerprint(lp) -> str:
    """A digest of every array of an LP (the same demand gives the same LP, another demand another)."""
    h = hashlib.sha1()
    for a in (lp.c, lp.b_eq, lp.b_ub, lp.ub):
        h.update(np.ascontiguousarray(a, dtype=np.float64).tobytes())
    for m in (lp.A_eq, lp.A_ub):
        m = sp.csr_matrix(m)
        for a in (m.data, m.indices, m.indptr):
            h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()


def failing_highs(bad: dict[str, str], calls: list):
    """``solve_highs`` that answers HiGHS's no-optimum (NaN objective and flows, ``message``) for the LPs whose
    fingerprint is in ``bad`` (fingerprint -> message), and solves every other LP."""

    def solve(lp):
        fp = fingerprint(lp)
        if fp in bad:
            calls.append(fp)
            return _solvers.Solution(math.nan, np.full(lp.n_vars, np.nan), math.inf, "highs", bad[fp], 7)
        return REAL_SOLVE_HIGHS(lp)

    return solve


def build_point(plan, flat):
    cfg = plan.point_config(flat)
    topo = C.build_topology(cfg.topology)
    traffic = C.build_traffic(cfg.traffic, topo)
    return topo, traffic, C.build_placement(cfg.placement, topo, cfg.traffic, traffic.n_tasks, cfg.topology)


def seed_of(plan, flat) -> int:
    ax = [a.name for a in plan.axes].index("placement.seed")
    return int(plan.axes[ax].labels[np.unravel_index(flat, plan.shape)[ax]])


def bad_lps(plan) -> dict[str, str]:
    """Fingerprints of the edge LPs of the placements in :data:`FAIL` (built as the sweep builds them)."""
    from evaluator.lp import edge_lp
    from evaluator.lp.bounds import router_demand

    out = {}
    for flat in range(plan.n_points):
        if seed_of(plan, flat) in FAIL:
            topo, traffic, place = build_point(plan, flat)
            out[fingerprint(edge_lp(topo, router_demand(topo, traffic, place)))] = FAIL[seed_of(plan, flat)]
    return out


# ---- the reference: the all-paths optimum written out here, solved by HiGHS ----

def ref_optimal_time(topo, traffic, place) -> float:
    """Best time any routing reaches: max of (1) 1 / Z, Z the maximum concurrent flow of the router-pair demand
    over the router links (one commodity per pair, arc flows) and (2) the injection and ejection loads over their
    capacities (no routing changes them). Bytes between tasks on one node use no link."""
    tn = np.asarray(place.task_node)
    node_router = np.asarray(topo.node_router)
    cap = np.asarray(topo.capacity, float)
    fl = traffic.to_flows()
    inj, ej, pairs = np.zeros(topo.n_nodes), np.zeros(topo.n_nodes), {}
    for s, d, b in zip(fl.src, fl.dst, fl.nbytes):
        ns, nd = tn[s], tn[d]
        if ns == nd or b == 0:
            continue
        inj[ns] += b
        ej[nd] += b
        rs, rd = node_router[ns], node_router[nd]
        if rs != rd:
            pairs[(rs, rd)] = pairs.get((rs, rd), 0.0) + b
    nodes = np.arange(topo.n_nodes)
    t_fixed = max(np.max(inj / cap[topo.injection_link(nodes)]), np.max(ej / cap[topo.ejection_link(nodes)]))
    if not pairs:
        return float(t_fixed)
    ls, ld = np.asarray(topo.link_src), np.asarray(topo.link_dst)
    links = np.flatnonzero((ls >= 0) & (ld >= 0))
    E, R, Q = links.size, int(topo.n_routers), len(pairs)
    c_e = cap[links] / cap[links].max()
    dem = np.array(list(pairs.values())) / max(pairs.values())  # scaled; Z in units of that scale
    rows, cols, vals = [], [], []
    for q, (rs, rd) in enumerate(pairs):
        for j, e in enumerate(links):  # net outflow of router r = Z d_q at rs, -Z d_q at rd, 0 elsewhere
            rows += [q * R + ls[e], q * R + ld[e]]
            cols += [q * E + j] * 2
            vals += [1.0, -1.0]
        rows += [q * R + rs, q * R + rd]
        cols += [Q * E] * 2
        vals += [-dem[q], dem[q]]
    n = Q * E + 1
    A_eq = sp.csr_matrix((vals, (rows, cols)), shape=(Q * R, n))
    A_ub = sp.hstack([sp.kron(np.ones((1, Q)), sp.identity(E)), sp.csr_matrix((E, 1))]).tocsr()
    c = np.zeros(n)
    c[-1] = -1.0
    res = REAL_LINPROG(c, A_ub=A_ub, b_ub=c_e, A_eq=A_eq, b_eq=np.zeros(Q * R), bounds=(0, None), method="highs")
    assert res.status == 0, res.message
    z = -res.fun * cap[links].max() / max(pairs.values())  # exchanges per second
    return float(max(1.0 / z, t_fixed))


# ---- the sweeps (each run once) ----

def make_plan(out, *extra):
    ov = ["sweeps=torus_bounds", *EXTRA, *extra, f"sweep.output_dir={out}"]
    user = [o for o in [*EXTRA, *extra] if not o.startswith("sweep.")]
    return plan_sweep(config.compose_sweep(ov, user_overrides=user, axes=AXES))


def run(plan, capfd):
    capfd.readouterr()
    ds = open_results(run_sweep(plan, ONE_THREAD, progress=False))
    return ds, [x for x in capfd.readouterr().err.splitlines() if "bound LPs failed" in x]


_CACHE: dict = {}


@pytest.fixture
def sweeps(tmp_path_factory, capfd):
    """The sweep without failures, the same sweep with HiGHS failing on :data:`FAIL`'s placements, and the
    latter with ``bound_solver=pdhg`` (chunks of 2 LPs: every bucket goes to HiGHS); the printed lines."""
    if not _CACHE:  # (filled only when every sweep ran: a failed one fails every test that uses them)
        root = tmp_path_factory.mktemp("bound_failures")
        base = make_plan(root / "base")
        out = {"base": (base, *run(base, capfd)), "calls": []}
        mp = pytest.MonkeyPatch()
        try:
            bad = bad_lps(base)
            assert len(bad) == len(FAIL)  # the chosen placements have LPs of their own
            mp.setattr(_solvers, "solve_highs", failing_highs(bad, out["calls"]))
            mp.setattr(SB, "solve_highs", failing_highs(bad, out["calls"]))
            fail = make_plan(root / "fail")
            out["fail"] = (fail, *run(fail, capfd))
            pdhg = make_plan(root / "pdhg", "bound_solver=pdhg")
            out["pdhg"] = (pdhg, *run(pdhg, capfd))
        finally:
            mp.undo()
        out["refs"] = [ref_optimal_time(*build_point(base, f)) for f in range(base.n_points)]
        _CACHE.update(out)
    return _CACHE


def flat(ds, name):
    return np.asarray(ds[name].values).reshape(-1)


def failed_mask(plan):
    return np.array([seed_of(plan, f) in FAIL for f in range(plan.n_points)])


# ---- tests ----

def test_failed_points_keep_their_evaluation_and_the_others_their_bound(sweeps):
    base_plan, base, base_lines = sweeps["base"]
    failed = failed_mask(base_plan)
    assert 0 < failed.sum() < base_plan.n_points
    refs = np.asarray(sweeps["refs"])
    assert refs.min() > 100 * 1e6 / 1e12 and len(set(refs.round(12))) > 1  # the LP's side, not injection's
    # without failures: every bound is HiGHS's optimum of the reference LP
    np.testing.assert_allclose(flat(base, "optimal_completion_time"), refs, rtol=REL)
    assert set(flat(base, "bound_status")) == {SB.OK} and base.attrs["n_bound_failed"] == 0 and not base_lines
    for key in ("fail", "pdhg"):
        plan, ds, _ = sweeps[key]
        assert flat(ds, "feasible").all() and set(flat(ds, "reason")) == {""}
        # the exact evaluation is stored whatever the bound did: every metric and every link load equal
        for name in base.data_vars:
            if name in BOUND_NUMBERS or base[name].dtype.kind not in "fiub":
                continue
            np.testing.assert_array_equal(ds[name].values, base[name].values, err_msg=f"{key}: {name}")
        assert "link_load" in ds and np.isfinite(ds["link_load"].values).all()
        ok = ~failed
        lower, upper = flat(ds, "optimal_completion_time"), flat(ds, "optimal_completion_time_upper")
        np.testing.assert_allclose(lower[ok], refs[ok], rtol=REL)
        assert (upper[ok] >= refs[ok] * (1 - REL)).all() and (lower[ok] <= upper[ok] * (1 + REL)).all()
        np.testing.assert_allclose(flat(ds, "routing_efficiency")[ok], lower[ok] / flat(ds, "completion_time")[ok],
                                   rtol=1e-12)
        np.testing.assert_array_equal(lower[ok], flat(base, "optimal_completion_time")[ok])
        assert set(flat(ds, "bound_status")[ok]) == {SB.OK}
        # the failed points: no number that looks certified, and why (HiGHS's status without SciPy's detail)
        for name in BOUND_NUMBERS:
            assert np.isnan(flat(ds, name)[failed]).all(), (key, name)  # was: ConfigError, the sweep stopped
        want = [f"highs: {FAIL[seed_of(plan, f)].split(' (HiGHS')[0].rstrip('.')}" for f in np.flatnonzero(failed)]
        assert list(flat(ds, "bound_status")[failed]) == want
        assert set(flat(ds, "bound_solver")[failed]) == {"highs"} and set(flat(ds, "bound_method")) == {"edge"}
        assert ds.attrs["n_bound_failed"] == int(failed.sum())


def test_one_summary_line_names_the_failures(sweeps):
    for key in ("fail", "pdhg"):
        plan, ds, lines = sweeps[key]
        assert len(lines) == 1, lines
        m = LINE.match(lines[0])
        assert m, lines[0]
        n = int(failed_mask(plan).sum())
        assert int(m.group(1)) == n == 4
        parts = sorted(m.group(2).split(", "))
        assert parts == ["2 x highs: Numerical difficulties encountered", "2 x highs: The problem is infeasible"]
        assert ds.attrs["bound_failures"] == lines[0].split(": ", 1)[1]
    # HiGHS sweeps reuse a placement's answer across routings (the worker's cache), failures included
    assert len(sweeps["calls"]) >= len(FAIL)


def test_a_finished_run_asked_again_says_its_failures_again(sweeps, capfd):
    """The same command again: "already finished", and the line of its points without a bound (from the dataset's
    ``bound_failures``), not silence about them."""
    plan, ds, lines = sweeps["fail"]
    capfd.readouterr()
    run_sweep(plan, ONE_THREAD, progress=False)
    err = capfd.readouterr().err.splitlines()
    assert any("has already finished" in x for x in err), err
    assert [x for x in err if "bound LPs failed" in x] == lines, err


def test_queries_ranking_by_a_bound_never_put_nan_first(sweeps):
    plan, ds, _ = sweeps["fail"]
    failed = failed_mask(plan)
    refs = np.asarray(sweeps["refs"])
    table = best(ds, "optimal_completion_time")
    assert len(table) == int((~failed).sum())
    assert table["optimal_completion_time"].iloc[0] == pytest.approx(refs[~failed].min(), rel=REL)
    assert not table["optimal_completion_time"].isna().any()
    assert set(table["placement.seed"].astype(int)) == {0, 2}
    assert table.attrs["unranked"][0] == int(failed.sum())  # counted, with the note the table prints
    eff = best(ds, "routing_efficiency")  # larger is better: NaN is not the largest
    assert len(eff) == int((~failed).sum()) and not eff["routing_efficiency"].isna().any()
    per_tie = best(ds, "optimal_completion_time", over=["placement.seed"])
    for _, row in per_tie.iterrows():
        assert int(row["placement.seed"]) not in FAIL
    gap = best(ds, "bound_gap")
    assert len(gap) == int((~failed).sum())
    # over the seeds as random draws: a point with a failed draw is left out (not a mean of the others), and said
    drawn = best(ds, "optimal_completion_time", draws=["placement.seed"])
    assert len(drawn) == 0 and drawn.attrs["left_out"][0] == 2
    kept = best(ds.isel({"placement.seed": [0, 2]}), "optimal_completion_time", draws=["placement.seed"])
    np.testing.assert_allclose(sorted(kept["optimal_completion_time_mean"]), [refs[~failed][:2].mean()] * 2,
                               rtol=REL)


def _edge_items(topo, n_big: int):
    """``n_big`` exchanges of 4 flows (one PDHG shape bucket) and one of a single flow (a bucket of its own) on a
    linear placement: ``(items, references)``."""
    place = PL.linear(topo, topo.n_nodes)
    rng = np.random.default_rng(5)
    items, refs = [], []
    for k in range(n_big + 1):
        m = 4 if k < n_big else 1
        tr = TR.from_flows(topo.n_nodes, np.arange(m), rng.choice(np.arange(8, 16), m, replace=False),
                           rng.uniform(1e6, 3e6, m))
        items.append((k, topo, tr, place))
        refs.append(ref_optimal_time(topo, tr, place))
    return items, np.asarray(refs)


def test_unconverged_pdhg_keeps_its_lower_side_and_is_not_a_failure(monkeypatch, capsys):
    """A PDHG bucket that stopped short (MPAX status 6, iteration_limit) with exact duals: the certified lower
    side kept, no feasible side (inf), ``bound_status`` ``pdhg: iteration_limit``; a point of the same chunk whose
    small bucket HiGHS failed: NaN. Assembled, only the latter is counted as failed."""
    topo = T.torus([4, 4])
    items, refs = _edge_items(topo, SB.PDHG_MIN_BATCH)

    def stopped_pdhg(lps, warm_start=None, **kw):
        sols = [REAL_SOLVE_HIGHS(x) for x in lps]  # HiGHS's duals: the lower side they certify is the optimum
        return types.SimpleNamespace(x=[s.x for s in sols], ub_dual=[s.ub_dual for s in sols],
                                     objective=np.array([s.objective for s in sols]), status=np.full(len(lps), 6))

    bad = {}
    for k, t, tr, p in items[-1:]:
        from evaluator.lp import edge_lp
        from evaluator.lp.bounds import router_demand

        bad[fingerprint(edge_lp(t, router_demand(t, tr, p)))] = NUMERICAL
    monkeypatch.setattr(SB, "solve_pdhg", stopped_pdhg)
    monkeypatch.setattr(SB, "solve_highs", failing_highs(bad, []))
    plan = types.SimpleNamespace(bounds="edge", bound_solver="pdhg", name="audit", axes=[types.SimpleNamespace(
        name="point")], shape=(len(items),))
    achieved = refs * 1.5
    out = SB.chunk_bounds(plan, items, achieved)
    statuses = [out["statuses"][c] for c in out["bound_status"]]
    assert statuses == ["pdhg: iteration_limit"] * SB.PDHG_MIN_BATCH + ["highs: Numerical difficulties encountered"]
    lo, up = out["optimal_completion_time"], out["optimal_completion_time_upper"]
    big = slice(0, SB.PDHG_MIN_BATCH)
    assert (lo[big] <= refs[big] * (1 + REL)).all() and (lo[big] >= refs[big] * (1 - 1e-6)).all()
    assert np.isinf(up[big]).all() and np.isinf(out["bound_gap"][big]).all()
    np.testing.assert_allclose(out["routing_efficiency"][big], lo[big] / achieved[big], rtol=1e-12)
    for name in BOUND_NUMBERS:
        assert math.isnan(out[name][-1])
    # assembled: the unconverged points keep their lower side; only the failed one is counted and printed
    grid = SA._BoundGrid(len(items), "edge")
    grid.add(np.arange(len(items)), out)
    ds = xr.Dataset(coords={"point": np.arange(len(items))})
    capsys.readouterr()
    grid.into(ds, plan)
    assert ds.attrs["n_bound_failed"] == 1
    assert list(ds["bound_status"].values) == statuses
    err = [x for x in capsys.readouterr().err.splitlines() if x]
    assert err == ["sweep audit: 1 point's bound LP failed: 1 x highs: Numerical difficulties encountered; its "
                   "bound is NaN, see bound_status"]


def test_a_chunk_persisted_before_statuses_reads_as_ok():
    """Chunks written by the code before ``bound_status`` (a resumed run) had an optimum at every point."""
    grid = SA._BoundGrid(3, "edge")
    b = {k: np.array([1e-3, 2e-3]) for k in BOUND_NUMBERS}
    b.update(bound_method=np.zeros(2, np.int32), bound_solver=np.zeros(2, np.int32), methods=["edge"],
             solvers=["highs"])
    grid.add(np.array([0, 2]), b)
    assert grid.failed("optimal_completion_time") == (0, "")
    text = np.asarray(grid.tables["bound_status"] + [""], dtype=object)[grid.codes["bound_status"]]
    assert list(text) == [SB.OK, "", SB.OK]


def test_other_bound_errors_are_raised_not_recorded():
    """Only HiGHS's no-optimum becomes a per-point status; any other error of a bound still stops the chunk."""
    from evaluator.errors import ConfigError

    assert SB._highs_failure(ConfigError("bounds", "x", "something else")) is None
    assert SB._highs_failure(ConfigError("bound_solver", "foo", "'highs' or 'pdhg'")) is None
    sol = _solvers.Solution(math.nan, np.zeros(1), math.inf, "highs", INFEASIBLE, 12)
    with pytest.raises(ConfigError) as err:
        _solvers.check_solved(sol, "solver", "the edge LP (12 sources x 64 router links: 769 variables)")
    exc = err.value
    assert isinstance(exc, _solvers.NotSolved) and SB._highs_failure(exc) is None  # not yet named as the setting
    assert SB._highs_failure(ConfigError("bound_solver", exc.value, exc.allowed, exc.hint)) is None  # untyped
    renamed = exc.renamed("bound_solver")  # as evaluator.lp.bounds.optimal does
    assert SB._highs_failure(renamed) == "highs: The problem is infeasible"
