"""``paths_per_pair`` (router paths per communicating router pair) and per-point infeasibility in path-set sweeps.

Against independent references:

* ``kshortest`` (k = 4, a hop limit) on a small torus: for every pair, NetworkX
  ``shortest_simple_paths`` counted up to k within the hop limit; the mean
  over the distinct communicating pairs (each pair once);
* DOR: exactly 1 (a single-path routing); Dragonfly expectations: NaN;
* ``optiq_lp``: the positive entries of Model 1 solved by HiGHS directly
  (``scipy.optimize.linprog``) on tiny cases whose zero pattern is the same
  in every optimum (checked by a min and a max LP per path at the optimal Z);
* ``optiq_heuristic``: the paths Algorithm 2 selects (:func:`select_paths` on
  NetworkX's candidates);
* a sweep whose chunk holds a point with a pair beyond the hop limit: that point
  infeasible with the pair named, the others equal to a per-point evaluate and
  to a per-flow walk over the path table; a resumed sweep equals per-point
  evaluation.
"""

from __future__ import annotations

import itertools

import networkx as nx
import numpy as np
import pytest
from scipy.optimize import linprog

import evaluator as ev
from evaluator import config
from evaluator import placement as PL
from evaluator import routing as RT
from evaluator import topology as T
from evaluator import traffic as TR
from evaluator.config import RayConfig
from evaluator.query import open_results
from evaluator.routing._optiq import select_paths
from evaluator.routing._paths import PairSet, path_table
from evaluator.sweep import plan_sweep, run_sweep
from evaluator.sweep.worker import evaluate_chunk
from tests.helpers import TOL, per_point

NO_RAY = RayConfig(enabled=False)
ONE_THREAD = RayConfig(enabled=False, num_cpus=1)


def nx_graph(topo) -> nx.DiGraph:
    g = nx.DiGraph()
    g.add_nodes_from(range(topo.n_routers))
    g.add_edges_from((s, d) for s, d, _ in topo.router_edges())
    return g


def nx_paths(g, s, t, k, hop_limit):
    """The first ``k`` loopless paths of NetworkX within ``hop_limit`` hops."""
    within = itertools.takewhile(lambda p: len(p) - 1 <= hop_limit, nx.shortest_simple_paths(g, s, t))
    return list(itertools.islice(within, k))


def one_task_per_router(topo, src, dst, nbytes):
    return TR.from_flows(topo.n_nodes, src, dst, nbytes), PL.linear(topo, topo.n_nodes)


# --------------------------------------------------------------------------------------
# values per routing
# --------------------------------------------------------------------------------------


def test_kshortest_counts_equal_networkx_within_the_hop_limit():
    topo = T.torus((4, 4))  # hop limit 3: neighbours 4 paths (1 + three of 3 hops), distance 2: 2, distance 3: 4+
    g = nx_graph(topo)
    rng = np.random.default_rng(5)
    dist = dict(nx.all_pairs_shortest_path_length(g))
    pairs = [(s, d) for s in range(16) for d in range(16) if 0 < dist[s][d] <= 3]
    pick = rng.choice(len(pairs), 40)
    src = np.array([pairs[i][0] for i in pick] + [3, 5])  # + a flow inside one router (no pair)
    dst = np.array([pairs[i][1] for i in pick] + [3, 5])
    nb = rng.integers(1, 100, src.size).astype(np.float64)
    tr, pl = one_task_per_router(topo, src, dst, nb)
    ds = ev.evaluate(topo, tr, pl, RT.kshortest(4, hop_limit=3))
    distinct = sorted({(int(s), int(d)) for s, d in zip(src, dst) if s != d})
    counts = [len(nx_paths(g, s, d, 4, 3)) for s, d in distinct]
    assert set(counts) == {2, 4}  # the case exercises both the limit and k
    assert float(ds.paths_per_pair) == pytest.approx(np.mean(counts), rel=TOL["rel"])
    assert ds.paths_per_pair.attrs["units"] == "1"
    # a pair's count, not its bytes, enters the mean: repeating one pair's flows changes nothing
    tr2, _ = one_task_per_router(topo, np.r_[src, [src[0]] * 5], np.r_[dst, [dst[0]] * 5], np.r_[nb, [1e9] * 5])
    assert float(ev.evaluate(topo, tr2, pl, RT.kshortest(4, hop_limit=3)).paths_per_pair) == pytest.approx(
        np.mean(counts), rel=TOL["rel"])


def test_dor_is_one_and_dragonfly_expectations_are_nan():
    topo = T.torus((4, 3, 2))
    rng = np.random.default_rng(1)
    src, dst = rng.integers(0, 24, 50), rng.integers(0, 24, 50)
    tr, pl = one_task_per_router(topo, src, dst, np.ones(50))
    tr2, _ = one_task_per_router(topo, dst, src, np.ones(50))
    batch = ev.evaluate_batch(topo, RT.dor(order="longest_first"), [tr, tr2], pl)  # dor_bgq (ties split)
    np.testing.assert_array_equal(batch.metrics["paths_per_pair"], [1.0, 1.0])
    assert batch.to_dataset().paths_per_pair.attrs["units"] == "1"
    df = T.dragonfly(p=1, a=4, h=1)
    trd = TR.random_pairs(df.n_nodes, 1e6, seed=2)
    assert np.isnan(float(ev.evaluate(df, trd, PL.linear(df, df.n_nodes), RT.minimal()).paths_per_pair))


def test_heuristic_counts_are_algorithm_2s_selection():
    topo = T.torus((4, 4))
    g = nx_graph(topo)
    rng = np.random.default_rng(11)
    src, dst = rng.integers(0, 16, 30), rng.integers(0, 16, 30)
    tr, pl = one_task_per_router(topo, src, dst, np.ones(30))
    spec = RT.optiq_heuristic(k=4)
    ds = ev.evaluate(topo, tr, pl, spec)
    # Algorithm 2 on the evaluator's Yen candidates written as link ids (4x4 torus: no parallel links)
    distinct = sorted({(int(s), int(d)) for s, d in zip(src, dst) if s != d}, key=lambda p: p[0] * 16 + p[1])
    table = path_table(topo, RT.kshortest(4), PairSet.of(src, dst, 16))
    cand = [table.paths_of(i) for i in range(table.n_pairs)]
    assert [len(c) for c in cand] == [len(nx_paths(g, s, d, 4, 99)) for s, d in distinct]
    chosen, _ = select_paths(cand, 1, topo.n_router_links)
    want = np.mean([len(c) for c in chosen])
    assert 1.0 < want < 4.0  # some pairs lose candidates
    assert float(ds.paths_per_pair) == pytest.approx(want, rel=TOL["rel"])


def _model1(inc, pair, demand, cap, fix_z=None, path=None, sign=1.0):
    """Model 1 by HiGHS: max Z s.t. sum_{p of j} f_p = d_j Z, inc f <= cap; or, with ``fix_z``, min/max f_path at
    Z >= fix_z."""
    n, m = inc.shape[1], demand.size
    a_ub = np.hstack([inc, np.zeros((inc.shape[0], 1))])
    b_ub = np.asarray(cap, np.float64)
    a_eq = np.zeros((m, n + 1))
    a_eq[pair, np.arange(n)] = 1.0
    a_eq[:, n] = -demand
    c = np.zeros(n + 1)
    if fix_z is None:
        c[n] = -1.0
    else:
        c[path] = sign
        a_ub = np.vstack([a_ub, -np.eye(n + 1)[n]])
        b_ub = np.append(b_ub, -fix_z)
    res = linprog(c, A_ub=a_ub, b_ub=b_ub, A_eq=a_eq, b_eq=np.zeros(m), bounds=[(0, None)] * (n + 1),
                  method="highs")
    assert res.status == 0
    return res.x


@pytest.mark.parametrize("dims,pairs,demand", [
    ((4,), [(2, 3), (3, 0)], [1.0, 4.0]),  # the heavy pair takes both ways, the light one only its short path
    ((3, 3), [(6, 2), (6, 3), (7, 1)], [1.0, 2.0, 3.0]),
])
def test_optiq_lp_counts_equal_the_positive_entries_of_highs(dims, pairs, demand):
    topo = T.torus(dims)
    R = topo.n_routers
    src, dst = np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs])
    k = 2 if len(dims) == 1 else 3
    # Model 1 built here over the k Yen paths of every pair (a 4-ring has two paths per pair; no parallel links)
    table = path_table(topo, RT.kshortest(k), PairSet.of(src, dst, R))
    assert [(int(s), int(d)) for s, d in zip(table.pair_src, table.pair_dst)] == pairs  # (given in key order)
    inc = np.zeros((topo.n_router_links, table.n_paths))
    for c in range(table.n_paths):
        inc[table.path_links[c, : table.path_hops[c]], c] = 1.0
    pair = np.asarray(table.path_pair)
    cols = range(table.n_paths)
    dem = np.asarray(demand)
    cap = np.asarray(topo.capacity[: topo.n_router_links], np.float64) / 1e9
    x = _model1(inc, pair, dem, cap)
    z = x[-1]
    positive = np.zeros(len(cols), bool)
    for c in cols:  # the zero pattern is that of every optimum: min and max of f_c at Z agree on it
        hi = _model1(inc, pair, dem, cap, z * (1 - 1e-9), c, -1.0)[c]
        lo = _model1(inc, pair, dem, cap, z * (1 - 1e-9), c, 1.0)[c]
        assert hi <= 1e-7 * z or lo > 1e-7 * z, (c, lo, hi)
        positive[c] = lo > 1e-7 * z
        assert positive[c] == (x[c] > 1e-7 * z)
    want = np.bincount(pair, weights=positive).mean()
    assert 1.0 <= want < k  # some path gets no share
    tr, pl = one_task_per_router(topo, src, dst, dem * 1e6)
    got = ev.evaluate(topo, tr, pl, RT.optiq_lp(k=k))
    assert float(got.paths_per_pair) == pytest.approx(want, rel=TOL["rel"])
    assert R == topo.n_nodes


# --------------------------------------------------------------------------------------
# sweeps: per-point infeasibility and the chunk path
# --------------------------------------------------------------------------------------


MESH = ["topology.dims=[4,4]", "topology.wrap=false", "routing=kshortest", "routing.k=2", "routing.hop_limit=5",
        "bounds=false"]


def mesh_plan(out, chunk_size=32, keep=False):
    """Random permutations of 8 and 16 tasks on random placements of a 4x4 mesh under kshortest, hop limit 5."""
    extra = [f"sweep.chunk_size={chunk_size}", f"sweep.keep_link_load={str(keep).lower()}", "sweep.name=ppp"]
    axes = {"traffic.n_tasks": [8, 16], "placement.seed": {"range": [0, 4]}}
    ov = ["sweeps=torus_bounds", *MESH, *extra, f"sweep.output_dir={out}"]
    return plan_sweep(config.compose_sweep(ov, user_overrides=MESH, axes=axes))


def walk(topo, table, src, dst, nbytes):
    """Router-link loads of flows walked over a path table's paths (Python loops)."""
    index = {(int(s), int(d)): i for i, (s, d) in enumerate(zip(table.pair_src, table.pair_dst))}
    out = np.zeros(topo.n_router_links)
    for s, d, b in zip(src, dst, nbytes):
        if s != d:
            i = index[(int(s), int(d))]
            for r in np.nonzero(table.path_pair == i)[0]:
                out[table.path_links[r, : table.path_hops[r]]] += b * table.path_weight[r]
    return out


def test_an_unroutable_pair_makes_only_its_point_infeasible(tmp_path):
    """A 4x4 mesh with a hop limit of 5: a point with a corner-to-corner pair (6 hops) is infeasible, naming it."""
    plan = mesh_plan(tmp_path, keep=True)
    chunks = plan.chunks()
    assert len(chunks) == 1  # every point in one chunk
    res = evaluate_chunk(plan, chunks[0][1])
    ok = set(res["flat"][res["ok"]].tolist())
    bad = [i for i in range(plan.n_points) if i not in ok]
    assert ok and bad  # the case mixes both
    for flat in range(plan.n_points):
        why, ref = per_point(plan, flat)
        pos = int(np.nonzero(res["flat"] == flat)[0][0])
        assert res["reasons"][res["reason_code"][pos]] == why, flat
        if ref is None:
            assert "routing.hop_limit" in why and "6 hops apart" in why and "router pair (" in why
            continue
        j = int(np.nonzero(res["flat"][res["ok"]] == flat)[0][0])
        np.testing.assert_allclose(res["link_load"][j], ref.link_load.values, rtol=TOL["rel"], atol=TOL["bytes"])
        assert res["metrics"]["paths_per_pair"][j] == pytest.approx(float(ref.paths_per_pair), rel=TOL["rel"])
        # and against a walk over the path table of the point's own pairs
        cfg = plan.point_config(flat)
        topo = config.build_topology(cfg.topology)
        tr = config.build_traffic(cfg.traffic, topo)
        pl = config.build_placement(cfg.placement, topo, cfg.traffic, tr.n_tasks, cfg.topology)
        r = topo.node_router[np.asarray(pl.task_node)]
        s, d = r[np.asarray(tr.src)], r[np.asarray(tr.dst)]
        table = path_table(topo, RT.kshortest(2, hop_limit=5), PairSet.of(s, d, topo.n_routers))
        want = walk(topo, table, s, d, np.asarray(tr.nbytes, np.float64))
        np.testing.assert_allclose(res["link_load"][j][: topo.n_router_links], want, rtol=TOL["rel"],
                                   atol=TOL["bytes"])


def test_resumed_chunked_sweep_carries_paths_per_pair_of_each_point(tmp_path):
    plan = mesh_plan(tmp_path / "a", chunk_size=2)
    assert run_sweep(plan, NO_RAY, progress=False, stop_after=1) is None
    again = mesh_plan(tmp_path / "a", chunk_size=2)
    ds = open_results(run_sweep(again, ONE_THREAD, progress=False))
    assert ds.paths_per_pair.attrs["units"] == "1"
    ppp = ds.paths_per_pair.values.reshape(-1)
    feasible = ds.feasible.values.reshape(-1)
    assert feasible.any() and not feasible.all()
    for flat in range(plan.n_points):
        why, ref = per_point(plan, flat)
        assert bool(feasible[flat]) == (why == "")
        if ref is None:
            assert np.isnan(ppp[flat])
        else:
            assert 1.0 < ppp[flat] <= 2.0
            assert ppp[flat] == pytest.approx(float(ref.paths_per_pair), rel=TOL["rel"])


# --------------------------------------------------------------------------------------
# plot and query
# --------------------------------------------------------------------------------------


def _gain_ds():
    ct = np.array([[[8.0, 4.0, 2.0], [10.0, 5.0, 2.5]], [[8.0, 2.0, 1.0], [9.0, 3.0, 3.0]]])  # [mode, size, routing]
    ppp = np.array([[[1.0, 3.5, 2.25], [1.0, 4.0, 2.0]], [[1.0, 3.0, 1.5], [1.0, 3.75, np.nan]]])
    feasible = np.isfinite(ppp)
    dims = ("traffic.mode", "size", "routing")
    coords = {"traffic.mode": ["disjoint", "overlap"], "size": ["512", "1024"], "routing": ["dor", "k4", "lp"]}
    import xarray as xr

    return xr.Dataset({"completion_time": (dims, ct, {"units": "s"}),
                       "paths_per_pair": (dims, ppp, {"units": "1"}),
                       "feasible": (dims, feasible)}, coords=coords)


def test_gain_plot_shows_paths_per_pair_next_to_the_gain(tmp_path, monkeypatch):
    from evaluator import plot as P
    from evaluator import cli

    figs = []
    real = P.save_figure
    monkeypatch.setattr(P, "save_figure", lambda fig, out, dpi: (figs.append(fig), real(fig, out, dpi))[1])
    ds = _gain_ds()
    path = tmp_path / "r.nc"
    ds.to_netcdf(path, engine="h5netcdf")
    out = tmp_path / "gain.png"
    assert cli.main(["plot", str(path), "--relative-to", "routing=dor", "--x", "size", "--out", str(out)]) == 0
    assert out.read_bytes()[:4] == b"\x89PNG"
    (fig,) = figs
    axes = fig.axes
    assert len(axes) == 4  # two modes (rows) x (gain, paths per pair)
    for row in range(2):  # traffic.mode disjoint, overlap
        gain_ax, ppp_ax = axes[2 * row], axes[2 * row + 1]
        assert "gain over routing=dor" in gain_ax.get_ylabel() and "paths per router pair" in ppp_ax.get_ylabel()
        order = [0, 1]  # sizes as the gain panels put them: ascending (a numeric axis)
        assert [t.get_text() for t in ppp_ax.get_xticklabels()] == ["512", "1024"]
        assert [t.get_text() for t in gain_ax.get_xticklabels()] == ["512", "1024"]
        for line, r in zip(ppp_ax.get_lines(), range(3)):
            np.testing.assert_array_equal(line.get_ydata(), ds.paths_per_pair.values[row, order, r])
        for line, r in zip(gain_ax.get_lines(), range(3)):  # the gain by hand: dor's time over the routing's
            want = ds.completion_time.values[row, order, 0] / ds.completion_time.values[row, order, r]
            want = np.where(ds.feasible.values[row, order, r], want, np.nan)
            np.testing.assert_allclose(line.get_ydata(), want, rtol=TOL["rel"])
    # without --relative-to, or without the variable, one column as before
    figs.clear()
    assert cli.main(["plot", str(path), "--x", "size", "--out", str(out)]) == 0
    assert len(figs[0].axes) == 2
    figs.clear()
    ds.drop_vars("paths_per_pair").to_netcdf(tmp_path / "s.nc", engine="h5netcdf")
    assert cli.main(["plot", str(tmp_path / "s.nc"), "--relative-to", "routing=dor", "--out", str(out)]) == 0
    assert len(figs[0].axes) == 2


def test_query_table_shows_paths_per_pair():
    from evaluator.query import best

    df = best(_gain_ds(), "completion_time", over=["routing"])
    assert "paths_per_pair" in df.columns
    row = df[(df["traffic.mode"] == "disjoint") & (df["size"] == "512")].iloc[0]
    assert row["routing"] == "lp" and row["paths_per_pair"] == 2.25
    # routings that are not path sets (NaN): the column is left out of their table, the other metrics stay
    ds = _gain_ds()
    ds["paths_per_pair"] = ds.paths_per_pair * np.nan
    nan_df = best(ds, "completion_time", over=["routing"])
    assert "paths_per_pair" not in nan_df.columns
    assert nan_df.equals(df.drop(columns=["paths_per_pair"]))


def test_unroutable_pair_is_the_error_path_table_raises():
    from evaluator.errors import ConfigError
    from evaluator.routing._paths import unroutable_pair

    topo = T.torus((6, 6))
    spec = RT.kshortest(2, hop_limit=5)
    keys = np.array([0 * 36 + 1, 0 * 36 + 21, 2 * 36 + 23, 5 * 36 + 4])  # (0, 21) and (2, 23): 6 hops apart
    with pytest.raises(ConfigError) as e:
        path_table(topo, spec, PairSet(keys, 36))
    err = unroutable_pair(topo, spec, keys[::-1])
    assert str(err) == str(e.value) and "(0, 21)" in str(err)
    assert unroutable_pair(topo, spec, keys[[0, 3]]) is None
    assert unroutable_pair(topo, RT.kshortest(2), keys) is None  # no limit
