"""LP bounds (evaluator.lp): Model 1, the all-paths optimum, Garg-Konemann, the Dragonfly adaptive bound.

References: hand optima on a 4-ring; Model 1 over every simple path (NetworkX) equals the edge LP (two different
LPs); HiGHS for the batched PDHG; the exact LP for Garg-Konemann; evaluate()'s routings for the bounds (no routing
beats the optimum); the minimal and Valiant routing operators for the Dragonfly classes' link loads.
"""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp

import evaluator as ev
from evaluator import lp
from evaluator.errors import ConfigError, ResourceError
from evaluator.lp.bounds import optimal, router_demand
from evaluator.traffic import Traffic
from tests.helpers import TOL

# 4-ring: router links 0->1, 1->2, 0->3, 3->2 (the two directions from 0 to 2)
RING_ONE = sp.csr_matrix(np.array([[1], [1], [0], [0]]))
RING_BOTH = sp.csr_matrix(np.array([[1, 0], [1, 0], [0, 1], [0, 1]]))


@pytest.mark.parametrize("inc,pairs,z", [(RING_ONE, [0], 1.0), (RING_BOTH, [0, 0], 2.0)])
def test_model1_ring_hand_optimum(inc, pairs, z):
    res = lp.solve_path_lp(inc, pairs, [1.0], np.ones(4))
    assert res.z == pytest.approx(z, rel=TOL["lp"])
    assert res.completion_time == pytest.approx(1 / z, rel=TOL["lp"])
    assert res.flow.sum() == pytest.approx(z, rel=TOL["lp"])  # the pair moves Z x demand bytes/s
    # units: 8 MB over 2 GB/s links; a fixed load on a link of the path shares it
    res = lp.solve_path_lp(inc, pairs, [8e6], np.full(4, 2e9))
    assert res.z == pytest.approx(z * 2e9 / 8e6, rel=TOL["lp"])
    res = lp.solve_path_lp(inc, pairs, [1.0], np.ones(4), fixed_load=np.array([1.0, 0, 0, 0]))
    assert res.z == pytest.approx({1.0: 0.5, 2.0: 1.0}[z], rel=TOL["lp"])


def test_edge_lp_ring_and_dor():
    """On a 4-ring (fast injection) one pair at distance 2: the edge LP uses both directions (Z = 2 x cap/bytes)."""
    t = ev.torus([4], link_bandwidth=1.0, injection_bandwidth=100.0)
    tr = Traffic(4, np.array([0]), np.array([2]), np.array([1.0]))
    d = router_demand(t, tr, ev.placement.linear(t, 4))
    for method in ("edge", "garg_konemann"):
        assert lp.optimal_bound(t, d, method).z == pytest.approx(2.0, rel=TOL["lp"])
    ds = ev.evaluate(t, tr, ev.placement.linear(t, 4), "dor", bounds=True)
    assert float(ds.optimal_completion_time) == pytest.approx(0.5, rel=TOL["lp"])
    assert float(ds.routing_efficiency) == pytest.approx(0.5 / float(ds.completion_time), rel=TOL["lp"])
    assert ds.attrs["bound_method"] == "edge" and ds.attrs["bound_solver"] == "highs"


def _all_simple_paths_lp(t, d, cutoff):
    """Model 1 over every simple router path of length <= cutoff of every pair (NetworkX)."""
    E = t.n_router_links
    G = nx.DiGraph()
    link_of = {}
    for s, dd, l in t.router_edges():
        G.add_edge(s, dd)
        link_of[(s, dd)] = l
    rows, cols, pair = [], [], []
    for q, (s, dd) in enumerate(zip(d.src.tolist(), d.dst.tolist())):
        for path in nx.all_simple_paths(G, s, dd, cutoff=cutoff):
            k = len(pair)
            pair.append(q)
            for u, v in zip(path[:-1], path[1:]):
                rows.append(link_of[(u, v)])
                cols.append(k)
    inc = sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(t.n_links, len(pair)))
    return lp.solve_path_lp(inc, pair, d.nbytes, t.capacity, d.fixed_load)


def test_model1_all_paths_equals_edge_lp():
    """Two different LPs for one optimum: Model 1 over all simple paths and the arc-flow LP (3x3 torus, no
    parallel links)."""
    t = ev.torus([3, 3], link_bandwidth=1e9, injection_bandwidth=1e12)
    rng = np.random.default_rng(3)
    src = rng.choice(9, 4, replace=False)
    dst = (src + rng.integers(1, 9, 4)) % 9
    tr = Traffic(9, src, dst, rng.uniform(1e6, 4e6, 4))
    d = router_demand(t, tr, ev.placement.linear(t, 9))
    z_paths = _all_simple_paths_lp(t, d, cutoff=8).z
    assert lp.optimal_bound(t, d, "edge").z == pytest.approx(z_paths, rel=TOL["lp"])


def _random_point(topo, rng, n_flows):
    n = topo.n_nodes
    src = rng.integers(0, n, n_flows)
    dst = rng.integers(0, n, n_flows)
    return Traffic(n, src, dst, rng.uniform(1e5, 1e6, n_flows)), ev.placement.linear(topo, n)


@pytest.mark.parametrize("topo,routings", [
    (ev.torus([4, 4]), ["dor"]),
    (ev.torus([3, 4], wrap=[False, True], nodes_per_router=2), ["dor"]),
    (ev.dragonfly(1, 4, 1), ["minimal", "valiant"]),
    (ev.dragonfly(2, 3, 1), ["minimal", "valiant"]),
])
def test_optimal_never_worse_than_any_routing(topo, routings):
    rng = np.random.default_rng(7)
    for _ in range(3):  # one flow count: one compilation per routing
        tr, pl = _random_point(topo, rng, 2 * topo.n_nodes)
        for r in routings:
            ds = ev.evaluate(topo, tr, pl, r, bounds=True)
            assert float(ds.optimal_completion_time) <= float(ds.completion_time) * (1 + TOL["lp"])
            assert 0 < float(ds.routing_efficiency) <= 1 + TOL["lp"]


def _random_model1(rng, G, link_of, n_links):
    """A Model 1 instance on graph G: 6 random pairs, up to 4 shortest simple paths each (NetworkX)."""
    nodes = list(G.nodes)
    rows, cols, pair, demand = [], [], [], []
    for q in range(6):
        s, dd = rng.choice(nodes, 2, replace=False)
        paths = nx.shortest_simple_paths(G, int(s), int(dd))
        for path in [p for _, p in zip(range(int(rng.integers(1, 5))), paths)]:
            k = len(pair)
            pair.append(q)
            for u, v in zip(path[:-1], path[1:]):
                rows.append(link_of[(u, v)])
                cols.append(k)
        demand.append(rng.uniform(1e6, 8e6))
    inc = sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(n_links, len(pair)))
    cap = rng.choice([1e9, 2e9], n_links)
    return inc, np.array(pair), np.array(demand), cap


def test_batched_pdhg_within_one_percent_of_highs_and_warm_start():
    t = ev.torus([4, 4])
    G = nx.DiGraph()
    link_of = {}
    for s, dd, l in t.router_edges():
        G.add_edge(s, dd)
        link_of[(s, dd)] = l
    rng = np.random.default_rng(11)
    inst = [_random_model1(rng, G, link_of, t.n_router_links) for _ in range(50)]
    lps = [lp.path_lp(*x) for x in inst]
    exact = np.array([lp.z_from_objective(p, lp.solve_highs(p).objective) for p in lps])
    cold = lp.solve_pdhg(lps, eps=1e-4)
    z = np.array([lp.z_from_objective(p, o) for p, o in zip(lps, cold.objective)])
    np.testing.assert_allclose(z, exact, rtol=TOL["pdhg"])
    assert cold.solver == "pdhg" and (cold.gap < TOL["pdhg"]).all()
    warm = lp.solve_pdhg(lps, warm_start=cold, eps=1e-4)
    np.testing.assert_allclose([lp.z_from_objective(p, o) for p, o in zip(lps, warm.objective)], exact,
                               rtol=TOL["pdhg"])
    assert warm.iterations.sum() < cold.iterations.sum()  # started at the answer


def test_garg_konemann_within_its_gap_of_the_exact_lp():
    rng = np.random.default_rng(5)
    for topo in (ev.torus([4, 4]), ev.dragonfly(1, 4, 1)):
        tr, pl = _random_point(topo, rng, 3 * topo.n_nodes)
        d = router_demand(topo, tr, pl)
        exact = lp.optimal_bound(topo, d, "edge").z
        gk = lp.garg_konemann(topo, d, target_gap=0.02, max_steps=300)
        assert gk.method == "garg_konemann" and gk.gap == pytest.approx(gk.z_upper / gk.z - 1, rel=TOL["rel"])
        assert gk.z <= exact * (1 + TOL["lp"])  # feasible: a lower bound
        assert gk.z_upper >= exact * (1 - TOL["lp"])  # certified upper bound
        assert exact <= gk.z * (1 + gk.gap) * (1 + TOL["lp"])


@pytest.mark.parametrize("refine", [True, False])
def test_garg_konemann_certified_interval_contains_the_optimum(refine):
    """Property test: on random small instances (4x4x2 torus, 3x4 mesh-torus with 2 nodes per router), the
    interval [z, z_upper] contains HiGHS's optimum of the edge LP, and gap = z_upper / z - 1 (docs/bounds.md);
    with the column-generation tightening the gap is within target_gap, without it only the steps bound it."""
    rng = np.random.default_rng(11)
    steps, rounds = [], []
    for topo in (ev.torus([4, 4, 2]), ev.torus([3, 4], wrap=[False, True], nodes_per_router=2)):
        for _ in range(3):
            n = topo.n_nodes
            tr, pl = _random_point(topo, rng, int(rng.integers(n // 2, 2 * n)))
            d = router_demand(topo, tr, pl)
            exact = lp.optimal_bound(topo, d, "edge").z
            gk = lp.garg_konemann(topo, d, target_gap=0.01, max_steps=60, refine=refine)
            assert gk.z <= exact * (1 + TOL["lp"]) and gk.z_upper >= exact * (1 - TOL["lp"])
            assert gk.gap == pytest.approx(gk.z_upper / gk.z - 1, rel=TOL["rel"], abs=TOL["lp"])
            # the time is the certified lower bound (dual side); the feasible side is its own value
            assert gk.completion_time == pytest.approx(1 / gk.z_upper, rel=TOL["rel"])
            assert gk.completion_time_upper == pytest.approx(1 / gk.z, rel=TOL["rel"])
            assert gk.completion_time <= 1 / exact * (1 + TOL["lp"]) <= gk.completion_time_upper * (1 + 2 * TOL["lp"])
            if refine:
                assert gk.gap <= 0.01
            steps.append(gk.steps)
            rounds.append(gk.rounds)
    if refine:  # the tightening ran (not only the weights), after its 50 steps
        assert max(rounds) >= 1 and max(steps) == 50
    else:
        assert max(rounds) == 0 and max(steps) == 60


def _class_loads(topo, d, mix):
    inc, pair, gbytes, fixed, classes = lp.adaptive_classes(topo, d, router=True)
    x = np.array([mix(kind, I, topo.g) for (_, _, I, kind) in classes]) * gbytes[pair]
    return inc @ x + fixed


# each routing as a mix of the classes: (kind, intermediate group, g) -> share of the group pair's bytes
MIXES = {
    "minimal": lambda kind, I, g: float(kind == "minimal"),
    "valiant": lambda kind, I, g: float(kind == "group") / (g - 2),
    # uniform over the g a routers: minimal when in the source group (a / R), else that group's router class
    "valiant_router": lambda kind, I, g: float(kind in ("minimal", "router")) / g,
}


@pytest.mark.parametrize("dims", [(2, 4, 2), (1, 3, 2), (2, 2, 1)])
def test_dragonfly_classes_reproduce_the_routings_loads(dims):
    """minimal, valiant and valiant_router are mixes of the bound's classes (with the router-level ones), link
    for link (so the bound, the best mix, bounds all three)."""
    topo = ev.dragonfly(*dims)
    rng = np.random.default_rng(2)
    tr, pl = _random_point(topo, rng, 200)
    d = router_demand(topo, tr, pl)
    for r, mix in MIXES.items():
        ds = ev.evaluate(topo, tr, pl, r)
        np.testing.assert_allclose(_class_loads(topo, d, mix), ds.link_load.values, rtol=TOL["rel_sum"],
                                   atol=TOL["bytes_loose"], err_msg=r)


@pytest.mark.parametrize("dims", [(1, 4, 1), (2, 4, 2)])
def test_dragonfly_adaptive_bound_beats_minimal_and_valiant(dims):
    topo = ev.dragonfly(*dims)
    rng = np.random.default_rng(9)
    for _ in range(3):
        tr, pl = _random_point(topo, rng, 3 * topo.n_nodes)
        t_ad = optimal(topo, tr, pl, "dragonfly_adaptive").completion_time
        t_adr = optimal(topo, tr, pl, "dragonfly_adaptive_router").completion_time
        t_opt = optimal(topo, tr, pl, "edge").completion_time
        times = {r: float(ev.evaluate(topo, tr, pl, r).completion_time) for r in ("minimal", "valiant", "valiant_router")}
        assert t_ad <= min(times["minimal"], times["valiant"]) * (1 + TOL["lp"])
        assert t_adr <= min(times.values()) * (1 + TOL["lp"]) and t_adr <= t_ad * (1 + TOL["lp"])
        assert t_opt <= t_adr * (1 + TOL["lp"])  # the class mix is one routing among all


def _lp_bytes(x):
    """The adaptive_size formula applied to an LP as built (sizes counted on the matrices)."""
    from evaluator.lp._flow import BYTES_PER_NNZ

    return BYTES_PER_NNZ * x.nnz + 64 * (x.n_vars + x.A_eq.shape[0] + x.A_ub.shape[0])


@pytest.mark.parametrize("router", [False, True])
@pytest.mark.parametrize("dims", [(1, 4, 1), (2, 4, 2), (2, 3, 1)])
def test_dragonfly_adaptive_size_estimate_bounds_the_lp_it_builds(dims, router):
    """The estimate (counted from the builder's rules) against the matrices actually built: the incidence count
    is exact, variables/rows/nonzeros are >= the built LP's and within 2x; the sweep's estimate (every router
    sending to every group, no traffic known) is >= any traffic's and exact for all-to-all."""
    from evaluator.sweep import bounds as sb

    topo = ev.dragonfly(*dims)
    rng = np.random.default_rng(4)
    n = topo.n_nodes
    cap = np.asarray(topo.capacity, dtype=np.float64)
    every = np.nonzero(~np.eye(n, dtype=bool))
    points = [_random_point(topo, rng, k) for k in (5, n, 20 * n)]
    points.append((Traffic(n, every[0], every[1], np.ones(every[0].size)), ev.placement.linear(topo, n)))
    full, _ = sb.bound_bytes(topo, n, lp.METHOD[router])
    for tr, pl in points:
        d = router_demand(topo, tr, pl)
        inc, pair, gbytes, fixed, _ = lp.adaptive_classes(topo, d, router)
        built = lp.path_lp(inc, pair, gbytes, cap, fixed)
        est = lp.adaptive_size(topo, d, router)
        assert est["incidence_nnz"] == inc.nnz and est["classes"] == pair.size
        for k, actual in (("nnz", built.nnz), ("vars", built.n_vars),
                          ("rows", built.A_eq.shape[0] + built.A_ub.shape[0])):
            assert actual <= est[k] <= 2 * actual, k
        assert _lp_bytes(built) <= est["bytes"] <= 2 * _lp_bytes(built) and est["bytes"] <= full
    assert lp.adaptive_size(topo, router=router)["incidence_nnz"] == inc.nnz
    assert full == lp.adaptive_size(topo, router=router)["bytes"]


def test_dragonfly_adaptive_lp_over_memory_refused_before_it_is_built(monkeypatch):
    topo = ev.dragonfly(2, 4, 2)
    tr, pl = _random_point(topo, np.random.default_rng(6), 2 * topo.n_nodes)
    d = router_demand(topo, tr, pl)
    est = lp.adaptive_size(topo, d)
    real = lp._dragonfly.adaptive_classes
    monkeypatch.setenv("EVALUATOR_MEMORY_LIMIT", str(int(est["bytes"] / 0.8) - 1))
    monkeypatch.setattr(lp._dragonfly, "adaptive_classes", lambda *a: pytest.fail("built before the check"))
    with pytest.raises(ResourceError, match=rf"bounds = 'dragonfly_adaptive'.*Dragonfly adaptive LP.*"
                                            rf"{est['nnz']:,} nonzeros\) need about"):
        optimal(topo, tr, pl, "dragonfly_adaptive")
    monkeypatch.setenv("EVALUATOR_MEMORY_LIMIT", str(int(est["bytes"] / 0.8) + 2))  # the estimate fits: it runs
    monkeypatch.setattr(lp._dragonfly, "adaptive_classes", real)
    assert optimal(topo, tr, pl, "dragonfly_adaptive").method == "dragonfly_adaptive"


def test_bad_input(monkeypatch):
    t = ev.torus([4, 4])
    tr, pl = _random_point(t, np.random.default_rng(0), 64)
    d = router_demand(t, tr, pl)
    size = lp.edge_size(t, d)
    monkeypatch.setenv("EVALUATOR_MEMORY_LIMIT", str(size["bytes"]))  # 80% of it is allowed: refused
    with pytest.raises(ResourceError, match=f"{size['nnz']:,} nonzeros") as e:
        lp.optimal_bound(t, d, "edge")
    assert "garg_konemann" in str(e.value)
    assert lp.optimal_bound(t, d, "auto").method == "garg_konemann"  # auto falls back
    monkeypatch.delenv("EVALUATOR_MEMORY_LIMIT")
    with pytest.raises(ConfigError, match="solver = 'cplex'"):
        lp.optimal_bound(t, d, "edge", solver="cplex")
    with pytest.raises(ConfigError, match="method = 'simplex'"):
        lp.optimal_bound(t, d, "simplex")
    with pytest.raises(ConfigError, match="bounds = 'best'"):
        ev.evaluate(t, tr, pl, "dor", bounds="best")
    with pytest.raises(ConfigError, match="solver = 'glpk'"):
        ev.evaluate(t, tr, pl, "dor", bounds=True, bound_solver="glpk")
    with pytest.raises(ConfigError, match="a path for every pair"):
        lp.solve_path_lp(RING_ONE, [0], [1.0, 2.0], np.ones(4))
    with pytest.raises(ConfigError, match="capacity"):
        lp.solve_path_lp(RING_ONE, [0], [1.0], np.zeros(4))
    monkeypatch.setenv("EVALUATOR_MEMORY_LIMIT", "1e4")  # 16 x 16 router pairs: 12 kB
    with pytest.raises(ResourceError, match="router-pair demand of the bound"):
        router_demand(t, ev.structured.all_to_all(t.n_nodes), pl)
    monkeypatch.delenv("EVALUATOR_MEMORY_LIMIT")
    with pytest.raises(ConfigError, match="a Dragonfly"):
        optimal(t, tr, pl, "dragonfly_adaptive")


def test_bench_dimension_order_paths_are_minimal():
    """The bench's path sets (evaluator.bench.lp): every path walks src -> dst in as many hops as BFS says."""
    from evaluator.bench.lp import dimension_order_paths

    t = ev.bgq_partition([1, 1, 1, 1])
    G = nx.DiGraph([(s, d) for s, d, _ in t.router_edges()])
    rng = np.random.default_rng(1)
    src, dst = rng.integers(0, t.n_routers, 20), rng.integers(0, t.n_routers, 20)
    src, dst = src[src != dst], dst[src != dst]
    orders = [(0, 1, 2, 3, 4), (4, 3, 2, 1, 0), (2, 0, 4, 1, 3)]
    inc, pair = dimension_order_paths(t, src, dst, orders)
    inc = inc.tocsc()
    for k in range(inc.shape[1]):
        links = inc.indices[inc.indptr[k]:inc.indptr[k + 1]]
        s, d = int(src[pair[k]]), int(dst[pair[k]])
        assert len(links) == nx.shortest_path_length(G, s, d)
        # the links chain from s to d: out-degree minus in-degree is +1 at s, -1 at d, 0 elsewhere
        bal = np.bincount(t.link_src[links], minlength=t.n_routers) - np.bincount(t.link_dst[links],
                                                                                  minlength=t.n_routers)
        assert bal[s] == 1 and bal[d] == -1 and np.count_nonzero(bal) == 2
    assert set(pair.tolist()) == set(range(src.size))


def test_bench_instances_use_the_kshortest_routings_path_table():
    """The bench's Model 1 instances (evaluator.bench.lp) carry the kshortest routing's paths: per pair the
    table's paths (Yen, k = 4), each a chain from its source to its destination router, with the pair's bytes;
    they never do worse than the one DOR path per pair (HiGHS on both)."""
    from evaluator.bench.lp import K_PATHS, many_to_many_instance
    from evaluator.routing._paths import PairSet, path_table

    t = ev.torus([4, 4, 2])
    inc, pair, demand, cap, fixed = many_to_many_instance(t, np.random.default_rng(3))
    rng, p = np.random.default_rng(3), t.n_nodes  # the instance's draws: p/16 sources, 8 of the last p/2 each
    dst = np.concatenate([rng.choice(np.arange(p // 2, p), 8, replace=False) for _ in range(p // 16)])
    pairs = PairSet.of(np.repeat(np.arange(p // 16), 8), dst, t.n_routers)  # one node per router
    table = path_table(t, ev.routing.kshortest(K_PATHS).bind(pairs), pairs)
    assert inc.shape == (t.n_links, table.n_paths) and np.array_equal(pair, table.path_pair)
    np.testing.assert_array_equal(demand, np.full(len(pairs), 8e6))
    inc = inc.tocsc()
    for k in range(inc.shape[1]):
        links = inc.indices[inc.indptr[k]:inc.indptr[k + 1]]
        assert sorted(links.tolist()) == sorted(table.path_links[k, :table.path_hops[k]].tolist())
        s, d = int(pairs.src[pair[k]]), int(pairs.dst[pair[k]])
        bal = np.bincount(t.link_src[links], minlength=t.n_routers) - np.bincount(t.link_dst[links],
                                                                                  minlength=t.n_routers)
        assert bal[s] == 1 and bal[d] == -1 and np.count_nonzero(bal) == 2
    z_k = lp.solve_path_lp(inc, pair, demand, cap, fixed).z
    z_dor = lp.solve_path_lp(*many_to_many_instance(t, np.random.default_rng(3), (0, 1, 2))).z
    assert z_k >= z_dor * (1 - TOL["lp"])


def test_dense_demand_equals_its_flow_list():
    """Router demand of a dense rank-one traffic equals that of its explicit flow list (two nodes per router, two
    tasks per node)."""
    from evaluator.traffic import dense

    t = ev.torus([3, 4], nodes_per_router=2)
    tr = dense.many_to_many(30, 20, 1e6, mode="overlap", overlap=8, n_tasks=2 * t.n_nodes)
    pl = ev.placement.linear(t, 2 * t.n_nodes, tasks_per_node=2)  # two tasks per node: their bytes use no link
    a, b = router_demand(t, tr, pl), router_demand(t, tr.to_traffic(), pl)
    ka, kb = a.src * t.n_routers + a.dst, b.src * t.n_routers + b.dst
    np.testing.assert_array_equal(np.sort(ka), kb)
    np.testing.assert_allclose(a.nbytes[np.argsort(ka)], b.nbytes, rtol=TOL["rel"])
    np.testing.assert_allclose(a.fixed_load, b.fixed_load, rtol=TOL["rel"])
