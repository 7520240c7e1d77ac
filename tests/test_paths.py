"""Path-set routings (``kshortest``, ``optiq_heuristic``) and router-level Valiant, against independent references.

* Yen's k shortest loopless paths against NetworkX ``shortest_simple_paths``
  (first k: the same hop counts, the same set below the k-th length) on
  small tori, meshes and Dragonflies, with and without a hop limit;
* Bui et al. Algorithm 2 on a hand-worked case, step by step;
* DOR written as a path set (the per-flow walk's routes) gives the DOR
  operator's loads exactly (``==``, integer bytes);
* every shortest path of a torus, demand split evenly, is never worse than
  DOR on uniform traffic (max link load);
* path-set loads against a per-flow walk over the table's paths (sparse and
  dense), and evaluate_batch's grouping by pair set against one call per point;
* ``valiant_router`` against the per-flow walk of ``tests/reference.py``
  (every intermediate router enumerated), sparse and dense;
* bad input: k < 1, a hop limit that leaves a pair without a path (the error
  names the pair), a routing the topology cannot take, a table too large.
"""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
import networkx as nx
import numpy as np
import pytest

import evaluator as ev
from evaluator import placement as PL
from evaluator import routing as RT
from evaluator import topology as T
from evaluator import traffic as TR
from evaluator.errors import ConfigError, ResourceError
from evaluator.routing import _optiq, _paths, _yen
from evaluator.routing._paths import PairSet, path_operator, path_table, router_graph, yen_paths
from tests.helpers import TOL

try:
    from tests.reference import reference_link_loads, reference_paths
except ImportError:  # pragma: no cover
    from reference import reference_link_loads, reference_paths


def nx_graph(topo) -> nx.DiGraph:
    g = nx.DiGraph()
    g.add_nodes_from(range(topo.n_routers))
    g.add_edges_from((s, d) for s, d, _ in topo.router_edges())
    return g


SMALL = [
    ("torus 4x4", lambda: T.torus((4, 4))),
    ("torus 3x3x2", lambda: T.torus((3, 3, 2))),
    ("mesh 3x4", lambda: T.torus((3, 4), wrap=False)),
    ("torus/mesh 4x3", lambda: T.torus((4, 3), wrap=(True, False))),
    ("DF(1,4,1)", lambda: T.dragonfly(p=1, a=4, h=1)),
    ("DF(1,3,2)", lambda: T.dragonfly(p=1, a=3, h=2, g=4)),
    # path sets serve every topology through the base contract (the router graph of link_src/link_dst)
    ("RDN(1,4,2,6)", lambda: T.rdn(p=1, a=4, h=2, g=6)),
    ("fat tree 2-ary 3-tree", lambda: T.fat_tree(k=2, levels=3)),
]


@pytest.mark.parametrize("name,make", SMALL, ids=[s[0] for s in SMALL])
@pytest.mark.parametrize("k,hop_limit", [(1, None), (5, None), (12, None), (8, 5)])
def test_yen_equals_networkx(name, make, k, hop_limit):
    topo = make()
    G = nx_graph(topo)
    graph = router_graph(topo)
    rng = np.random.default_rng(1)
    R = topo.n_routers
    pairs = [(int(s), int(d)) for s, d in rng.integers(0, R, size=(12, 2)) if s != d][:8]
    for s, d in pairs:
        ours = yen_paths(graph, s, d, k, hop_limit)
        ref = []
        for p in nx.shortest_simple_paths(G, s, d):
            if hop_limit is not None and len(p) - 1 > hop_limit:
                break
            ref.append(tuple(p))
            if len(ref) == k:
                break
        assert [len(p) for p in ours] == [len(p) for p in ref], (name, s, d)
        assert len(set(ours)) == len(ours)
        for p in ours:  # loopless paths of the graph from s to d
            assert p[0] == s and p[-1] == d and len(set(p)) == len(p)
            assert all(G.has_edge(x, y) for x, y in zip(p[:-1], p[1:]))
        if ref:  # below the k-th length the sets are forced
            top = len(ref[-1])
            assert {p for p in ours if len(p) < top} == {p for p in ref if len(p) < top}


def test_yen_returns_every_path_when_fewer_than_k():
    topo = T.torus((3,), wrap=False)  # a path graph: one loopless path per pair
    assert yen_paths(router_graph(topo), 0, 2, 5) == [(0, 1, 2)]
    ring = T.torus((5,))
    assert yen_paths(router_graph(ring), 0, 2, 5) == [(0, 1, 2), (0, 4, 3, 2)]


# --------------------------------------------------------------------------------------
# Algorithm 2, by hand
# --------------------------------------------------------------------------------------


def test_heuristic_hand_worked():
    """Three pairs on links 0..4 (candidates in Yen order), maxload 1.

    Round 0: pair 0 takes [0, 1] (loads l0 = l1 = 1); pair 1's [1, 2] would
    put 2 on l1 and it has no path: maxload is raised to 2 and it takes it
    (l1 = 2, l2 = 1); pair 2 takes [3] (l3 = 1).
    Round 1: pair 0's [2, 4] fits (l2 = 2, l4 = 1); pair 1's [0, 3] fits
    (l0 = 2, l3 = 2); pair 2's [1] would put 3 on l1: dropped.
    Round 2: pair 0's [1] dropped (l1 = 2); pair 1 has none left; pair 2's
    [4] fits (l4 = 2). Final maxload 2.
    """
    cands = [[[0, 1], [2, 4], [1]],
             [[1, 2], [0, 3]],
             [[3], [1], [4]]]
    trace: list = []
    chosen, maxload = _optiq.select_paths(cands, 1, 5, trace)
    assert trace == [
        (0, 0, 0, "take", 1), (0, 1, 0, "raise", 2), (0, 2, 0, "take", 2),
        (1, 0, 1, "take", 2), (1, 1, 1, "take", 2), (1, 2, 1, "drop", 2),
        (2, 0, 2, "drop", 2), (2, 2, 2, "take", 2),
    ]
    assert chosen == [[0, 1], [0, 1], [0, 2]] and maxload == 2
    load = np.zeros(5, int)
    for c, js in zip(cands, chosen):
        for j in js:
            load[c[j]] += 1
    assert load.max() == maxload


def test_heuristic_table_on_a_ring():
    """Two opposite pairs on a 4-ring: each gets both directions (maxload 1 then raised to 2)."""
    ring = T.torus((4,))
    r = RT.optiq_heuristic(k=2).bind(PairSet.of([0, 2], [2, 0], 4))
    table = _optiq.heuristic_table(ring, r)
    assert table.n_paths == 4
    np.testing.assert_array_equal(np.bincount(table.path_pair), [2, 2])
    assert np.all(table.path_weight == 0.5)


# --------------------------------------------------------------------------------------
# the operator
# --------------------------------------------------------------------------------------


def run_op(op, src, dst, nbytes):
    tables = {k: jnp.asarray(v) for k, v in op.tables.items()}
    w = np.where(np.asarray(src) != np.asarray(dst), nbytes, 0.0)
    f = jax.jit(lambda s, d, x: op.apply(tables, s, d, x))
    return np.asarray(f(jnp.asarray(src, jnp.int32), jnp.asarray(dst, jnp.int32), jnp.asarray(w, jnp.float64)))


def run_dense(op, u, v):
    tables = {k: jnp.asarray(v) for k, v in op.tables.items()}
    return np.asarray(jax.jit(lambda a, b: op.apply_dense(tables, a, b))(jnp.asarray(u), jnp.asarray(v)))


def table_from_paths(topo, pairs, paths_of):
    """A PathTable built by hand from ``paths_of(s, d) -> [(weight, [link ids])]``."""
    rows_pair, rows_links, rows_w = [], [], []
    for i, (s, d) in enumerate(pairs):
        for w, links in paths_of(s, d):
            rows_pair.append(i)
            rows_links.append(links)
            rows_w.append(w)
    H = _paths.hop_bucket(max(len(x) for x in rows_links))
    L = np.full((len(rows_links), H), topo.n_router_links, np.int32)
    for r, x in enumerate(rows_links):
        L[r, : len(x)] = x
    return _paths.PathTable(topo.n_routers, topo.n_router_links, np.asarray([p[0] for p in pairs]),
                            np.asarray([p[1] for p in pairs]), np.asarray(rows_pair, np.int32), L,
                            np.asarray([len(x) for x in rows_links], np.int32), np.asarray(rows_w))


@pytest.mark.parametrize("dims,wrap,tie", [((4, 3, 2), True, "split"), ((5, 4), True, "positive"),
                                           ((3, 4), False, "split")])
def test_dor_as_a_path_set_reproduces_dor_exactly(dims, wrap, tie):
    topo = T.torus(dims, wrap=wrap)
    R = topo.n_routers
    rng = np.random.default_rng(3)
    src = rng.integers(0, R, 300)
    dst = rng.integers(0, R, 300)
    nb = rng.integers(1, 1000, 300).astype(np.float64)
    ref_rt = {"kind": "dor", "order": "as_given", "tie": tie}
    pairs = sorted({(int(s), int(d)) for s, d in zip(src, dst) if s != d}, key=lambda p: p[0] * R + p[1])
    table = table_from_paths(topo, pairs, lambda s, d: reference_paths(topo, s, d, ref_rt))
    routing = RT.dor(tie=tie)
    got = run_op(path_operator(topo, routing, table), src, dst, nb)
    want = run_op(RT.build_routing(topo, routing), src, dst, nb)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dims,k", [((4, 4), 25), ((5, 3), 4), ((3, 3, 2), 8), ((6, 2), 9)])
def test_every_shortest_path_never_worse_than_dor_on_uniform_traffic(dims, k):
    """``k`` exceeds the most shortest paths of a pair (4x4: C(4,2) orders x 2 x 2 tie directions = 24)."""
    topo = T.torus(dims)
    R = topo.n_routers
    ps = PairSet.of(*np.nonzero(~np.eye(R, dtype=bool)), R)
    full = path_table(topo, RT.kshortest(k), ps)
    shortest = np.zeros(full.n_paths, bool)
    for i in range(full.n_pairs):
        rows = np.nonzero(full.path_pair == i)[0]
        shortest[rows] = full.path_hops[rows] == full.path_hops[rows].min()
        # Yen returns paths by length: fewer than k shortest ones means every shortest path is there
        assert shortest[rows].sum() < k
    table = full.select(shortest)
    u = np.ones(R)
    got = run_dense(path_operator(topo, RT.kshortest(k), table), u, u)
    dor = run_dense(RT.build_routing(topo, RT.dor()), u, u)
    assert got.max() <= dor.max() * (1 + TOL["rel"])
    np.testing.assert_allclose(got.sum(), dor.sum(), rtol=TOL["rel_sum"])  # bytes x hops: both minimal


def walk_table(topo, table, src, dst, nbytes):
    """Per-flow walk over a table's paths (Python loops, dictionary of pairs)."""
    R = topo.n_routers
    index = {(int(s), int(d)): i for i, (s, d) in enumerate(zip(table.pair_src, table.pair_dst))}
    out = np.zeros(topo.n_router_links)
    for s, d, b in zip(src, dst, nbytes):
        if s == d:
            continue
        i = index[(int(s), int(d))]
        for r in np.nonzero(table.path_pair == i)[0]:
            for lid in table.path_links[r, : table.path_hops[r]]:
                out[lid] += b * table.path_weight[r]
    assert R == table.n_routers
    return out


@pytest.mark.parametrize("make", [lambda: T.torus((4, 3)), lambda: T.dragonfly(p=1, a=4, h=2, g=3),
                                  lambda: T.rdn(p=1, a=4, h=2, g=4)])
@pytest.mark.parametrize("kind", ["kshortest", "optiq_heuristic"])
def test_path_operator_against_a_walk(make, kind):
    topo = make()
    R = topo.n_routers
    rng = np.random.default_rng(7)
    src = rng.integers(0, R, 80)
    dst = rng.integers(0, R, 80)
    nb = rng.random(80) * 1e6
    ps = PairSet.of(src, dst, R)
    spec = RT.kshortest(3) if kind == "kshortest" else RT.optiq_heuristic(k=4)
    op = RT.build_routing(topo, spec.bind(ps))
    table = path_table(topo, spec, ps) if kind == "kshortest" else _optiq.heuristic_table(topo, spec.bind(ps))
    got = run_op(op, src, dst, nb)
    want = walk_table(topo, table, src, dst, np.where(src != dst, nb, 0.0))
    np.testing.assert_allclose(got, want, rtol=TOL["rel"], atol=TOL["bytes"])
    # the sums per pair add to 1 and dense demand agrees with its flows
    np.testing.assert_allclose(np.bincount(table.path_pair, table.path_weight), 1.0, atol=TOL["prob"])
    sub = np.unique(src)
    u = np.zeros(R)
    v = np.zeros(R)
    u[sub] = rng.random(sub.size)
    v[np.unique(dst)] = rng.random(np.unique(dst).size)
    pd = PairSet.of(*np.nonzero((u[:, None] > 0) & (v[None, :] > 0)), R)
    opd = RT.build_routing(topo, spec.bind(pd))
    s2, d2 = pd.src, pd.dst
    np.testing.assert_allclose(run_dense(opd, u, v), run_op(opd, s2, d2, u[s2] * v[d2]), rtol=TOL["rel"],
                               atol=TOL["bytes"])


def test_evaluate_binds_pairs_and_groups_heuristic_points():
    topo = T.torus((4, 4))
    trs = [TR.random_pairs(16, 1e6, seed=1), TR.dense.all_to_all(16, 10.0)]
    pl = PL.linear(topo, 16)
    for spec in (RT.kshortest(3), RT.optiq_heuristic(k=4)):
        batch = ev.evaluate_batch(topo, spec, trs, pl, keep_link_load=True)
        for i, t in enumerate(trs):
            one = ev.evaluate(topo, t, pl, spec)
            np.testing.assert_allclose(batch.link_load[i], one.link_load.values, rtol=TOL["rel"], atol=TOL["bytes"])
            assert batch.metrics["completion_time"][i] == pytest.approx(float(one.completion_time), rel=TOL["rel"])
    # the grouping matters: the heuristic bound to the union of both points' pairs routes the sparse point otherwise
    union = PairSet(np.concatenate([np.asarray(trs[0].src) * 16 + trs[0].dst,
                                    [s * 16 + d for s in range(16) for d in range(16) if s != d]]), 16)
    joint = ev.evaluate(topo, trs[0], pl, RT.optiq_heuristic(k=4).bind(union))
    alone = ev.evaluate(topo, trs[0], pl, RT.optiq_heuristic(k=4))
    assert np.abs(joint.link_load.values - alone.link_load.values).max() > 1.0


def test_path_routings_compose_from_config():
    from evaluator import config

    obj = config.to_object(config.compose(["topology=torus", "topology.dims=[4,4]", "routing=kshortest",
                                           "routing.k=2", "routing.hop_limit=4", "traffic=all_to_all",
                                           "placement=linear"]))
    point = config.build(obj)
    assert point.routing == RT.kshortest(2, 4)
    ds = ev.evaluate(point.topology, point.traffic, point.placement, point.routing)
    assert float(ds.completion_time) > 0


# --------------------------------------------------------------------------------------
# router-level Valiant
# --------------------------------------------------------------------------------------


DRAGONFLIES = [
    ("DF(2,3,2,g=5)", lambda: T.dragonfly(p=2, a=3, h=2, g=5)),
    ("DF(1,4,2,g=5) relative", lambda: T.dragonfly(p=1, a=4, h=2, g=5, arrangement="relative")),
    ("DF(1,2,2,g=3) two copies", lambda: T.dragonfly(p=1, a=2, h=2, g=3)),
]


@pytest.mark.parametrize("name,make", DRAGONFLIES, ids=[d[0] for d in DRAGONFLIES])
def test_valiant_router_against_the_walk(name, make):
    """The operator's router-link loads against the walk over every intermediate router (router-level flows)."""
    topo = make()
    R, n_rl = topo.n_routers, topo.n_router_links
    op = RT.build_routing(topo, RT.valiant_router())
    node_of_router = np.arange(R) * topo.nodes_per_router
    rng = np.random.default_rng(11)
    F = 120
    src = rng.integers(0, R, F)
    dst = rng.integers(0, R, F)
    nb = rng.integers(1, 10_000, F).astype(np.float64)
    want = reference_link_loads(topo, zip(src, dst, nb), node_of_router, {"kind": "valiant_router"})[:n_rl]
    np.testing.assert_allclose(run_op(op, src, dst, nb), want, rtol=TOL["rel"], atol=TOL["bytes"])
    # dense rank-one demand u[s] v[d] against its flows walked
    u = rng.random(R) * (rng.random(R) < 0.5)
    v = rng.random(R) * (rng.random(R) < 0.5)
    flows = [(s, d, u[s] * v[d]) for s, d in itertools.product(range(R), range(R)) if s != d and u[s] * v[d] > 0]
    want = reference_link_loads(topo, flows, node_of_router, {"kind": "valiant_router"})[:n_rl]
    np.testing.assert_allclose(run_dense(op, u, v), want, rtol=TOL["rel"], atol=TOL["bytes"])


def test_valiant_router_differs_from_group_valiant_and_needs_no_third_group():
    topo = T.dragonfly(p=1, a=2, h=1, g=3)
    one = np.asarray([0]), np.asarray([2]), np.asarray([1e6])
    vr = run_op(RT.build_routing(topo, RT.valiant_router()), *one)
    vg = run_op(RT.build_routing(topo, RT.valiant()), *one)
    # By hand (routers 0-1 | 2-3 | 4-5; global links 0-2, 1-4, 3-5): the intermediate group (2) costs 3 + 2 hops;
    # x in group 0 (2 of 6): 1 hop; x = 2: 1; x = 3: 2 + 1; x = 4: 2 + 3; x = 5: 3 + 2 -> 16/6 hops per byte.
    np.testing.assert_allclose(vg.sum() / 1e6, 5.0, rtol=TOL["rel"])
    np.testing.assert_allclose(vr.sum() / 1e6, 16 / 6, rtol=TOL["rel"])
    two = T.dragonfly(p=1, a=2, h=1, g=2)
    got = run_op(RT.build_routing(two, RT.valiant_router()), np.asarray([0]), np.asarray([3]), np.asarray([1e6]))
    want = reference_link_loads(two, [(0, 3, 1e6)], np.arange(two.n_nodes), {"kind": "valiant_router"})
    np.testing.assert_allclose(got, want[: two.n_router_links], rtol=TOL["rel"], atol=TOL["bytes"])


# --------------------------------------------------------------------------------------
# bad input
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("k", [0, -3, 1.5, "two", True])
def test_k_below_one_is_refused(k):
    with pytest.raises(ConfigError, match=r"routing\.k"):
        RT.kshortest(k)
    with pytest.raises(ConfigError, match=r"routing\.k"):
        RT.optiq_heuristic(k=k)


def test_bad_hop_limit_and_maxload():
    with pytest.raises(ConfigError, match=r"routing\.hop_limit"):
        RT.kshortest(2, hop_limit=0)
    with pytest.raises(ConfigError, match=r"routing\.maxload"):
        RT.optiq_heuristic(maxload=0)


def test_hop_limit_leaving_a_pair_without_path_names_the_pair():
    topo = T.torus((6, 6))
    tr = TR.from_flows(36, [0, 0], [1, 21], [1.0, 1.0])  # router 21 = (3, 3): 6 hops from 0
    with pytest.raises(ConfigError) as e:
        ev.evaluate(topo, tr, PL.linear(topo, 36), RT.kshortest(2, hop_limit=5))
    msg = str(e.value)
    assert "routing.hop_limit" in msg and "(0, 21)" in msg and "6 hops" in msg, msg


def test_path_sets_serve_a_topology_without_a_listing():
    """kshortest with k = 1 on a reconfigurable Dragonfly: every pair on one shortest path, so the mean
    router hops of an all-to-all equal NetworkX's BFS distances averaged over the pairs."""
    topo = T.rdn(p=1, a=4, h=2, g=6)
    assert "kshortest" in RT.routings_for("rdn") and "optiq_lp" in RT.routings_for("rdn")
    dist = dict(nx.all_pairs_shortest_path_length(nx_graph(topo)))
    R = topo.n_routers
    want = np.mean([dist[s][d] for s in range(R) for d in range(R) if s != d])
    ds = ev.evaluate(topo, TR.all_to_all(topo.n_nodes), PL.linear(topo, topo.n_nodes), RT.kshortest(1))
    assert topo.nodes_per_router == 1
    np.testing.assert_allclose(float(ds.mean_hops), want, rtol=TOL["rel"])


def test_routing_the_topology_cannot_take():
    topo = T.torus((4, 4))
    pl = PL.linear(topo, 16)
    with pytest.raises(ConfigError, match="valiant_router"):
        ev.evaluate(topo, TR.all_to_all(16), pl, "valiant_router")


def test_unbound_on_a_large_topology_and_too_large_table(monkeypatch):
    big = T.torus((16, 16))
    with pytest.raises(ConfigError, match="communicating pairs"):
        RT.build_routing(big, RT.kshortest(2))
    small = T.torus((4, 4))
    monkeypatch.setenv("EVALUATOR_MEMORY_LIMIT", "1000")
    with pytest.raises(ResourceError, match="path table"):
        path_table(small, RT.kshortest(16), PairSet.of([0, 1, 2], [5, 6, 7], 16))


def test_another_pair_set_in_the_same_bucket_compiles_nothing():
    from evaluator._batch.compiled import batch_kernel

    topo = T.torus((4, 4))
    pl = PL.linear(topo, 16)
    spec = RT.optiq_heuristic(k=3)
    a, b = TR.from_flows(16, [0, 1, 2], [5, 9, 14], [1.0, 2.0, 3.0]), TR.from_flows(16, [3, 7, 2], [4, 8, 0], [1.0] * 3)
    ev.evaluate_batch(topo, spec, [a], pl)
    bound = [spec.bind(PairSet.of(t.src, t.dst, 16)) for t in (a, b)]
    ka, kb = (batch_kernel(topo, r, False) for r in bound)
    assert ka.fn is kb.fn and ka.operator.compile_key == kb.operator.compile_key
    before = ka.fn._cache_size()
    res = ev.evaluate_batch(topo, spec, [b], pl)
    assert ka.fn._cache_size() == before and res.metrics["completion_time"][0] > 0


def test_yen_resumed_equals_a_fresh_search():
    topo = T.torus((4, 3, 2))
    graph = router_graph(topo)
    state = _yen._Yen(graph, 0, 17, None)
    assert state.extend(3) == yen_paths(graph, 0, 17, 3)
    assert state.extend(9) == yen_paths(graph, 0, 17, 9)
    assert state.extend(2) == yen_paths(graph, 0, 17, 2)


@pytest.mark.parametrize("name,make", SMALL + [("torus 6x4x4", lambda: T.torus((6, 4, 4))),
                                              ("DF(2,4,2)", lambda: T.dragonfly(p=2, a=4, h=2))],
                         ids=[s[0] for s in SMALL] + ["torus 6x4x4", "DF(2,4,2)"])
def test_router_distances_equal_networkx(name, make):
    """``dist_to`` (SciPy's BFS order and predecessors, hop counts by pointer jumping) against NetworkX's BFS
    lengths, every destination."""
    topo = make()
    G, graph = nx_graph(topo), router_graph(topo)
    for t in range(topo.n_routers):
        want = nx.shortest_path_length(G, target=t)
        assert graph.dist_to(t).tolist() == [want.get(r, -1) for r in range(topo.n_routers)], (name, t)


def test_router_distances_of_a_one_way_graph():
    """Routers that cannot reach the destination get -1; a long chain needs several jumps."""
    nbr = ((1,), (2,), (3,), (4,), (5,), (6,), (7,), (8,), (9,), (), ())  # 0 -> 1 -> ... -> 9; 10 alone
    rev = tuple(tuple(x for x in range(11) if y in nbr[x]) for y in range(11))
    graph = _yen.RouterGraph(11, 9, nbr, rev, {(x, x + 1): (x,) for x in range(9)})
    assert graph.dist_to(9).tolist() == [9, 8, 7, 6, 5, 4, 3, 2, 1, 0, -1]
    assert graph.dist_to(4).tolist() == [4, 3, 2, 1, 0, -1, -1, -1, -1, -1, -1]
    assert graph.dist_to(10).tolist() == [-1] * 10 + [0]


@pytest.mark.parametrize("name,make", [("torus 6x4x4", lambda: T.torus((6, 4, 4))),
                                       ("torus/mesh 5x4x3", lambda: T.torus((5, 4, 3), wrap=(True, False, True))),
                                       ("DF(2,4,2)", lambda: T.dragonfly(p=2, a=4, h=2)),
                                       ("fat tree 2-ary 3-tree", lambda: T.fat_tree(k=2, levels=3))])
def test_yen_shortcuts_equal_the_plain_search(name, make, monkeypatch):
    """Yen's paths with the spur search's heap-free descent and the tie-break that computes keys only among the
    fewest shared hops equal those of the plain A* search and the tie-break written in one line, path for path
    (k = 16, with and without a hop limit); the descent answers 7-42% of the spur searches here (75% on the
    4,096-node BG/Q partition of docs/routing_paths.md): it is exercised."""
    topo = make()
    rng = np.random.default_rng(7)
    R = topo.n_routers
    pairs = [(int(s), int(d)) for s, d in rng.integers(0, R, size=(40, 2)) if s != d][:24]
    calls = [0, 0]
    descent = _yen._descent

    def counted(*a):
        out = descent(*a)
        calls[0] += 1
        calls[1] += out is not None
        return out

    monkeypatch.setattr(_yen, "_descent", counted)
    fast = {(s, d, h): yen_paths(router_graph(topo), s, d, 16, h) for s, d in pairs for h in (None, 6)}
    assert calls[1] > calls[0] / 20, calls

    def plain_tie_break(self, tied):
        used, salt = self.used, self.salt
        return min(tied, key=lambda p: (len(set(zip(p[:-1], p[1:])) & used),
                                        [((y ^ salt) * _yen._HASH) & 0xFFFFFFFF for y in p]))

    monkeypatch.setattr(_yen, "_descent", lambda *a: None)
    monkeypatch.setattr(_yen._Yen, "_most_diverse", plain_tie_break)
    for (s, d, h), paths in fast.items():
        assert yen_paths(router_graph(topo), s, d, 16, h) == paths, (name, s, d, h)


def test_dense_traffic_with_too_many_router_pairs_is_refused(monkeypatch):
    topo = T.torus((8, 8))
    pl = PL.linear(topo, 64)
    monkeypatch.setenv("EVALUATOR_MEMORY_LIMIT", "100000")  # 64 x 64 pairs x 48 bytes = 197 kB > 80% of 100 kB
    with pytest.raises(ResourceError, match="router pairs"):
        ev.evaluate(topo, TR.dense.all_to_all(64, 1.0), pl, RT.kshortest(2))
