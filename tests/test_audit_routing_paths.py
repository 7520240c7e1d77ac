"""Audit of the path-set routings (``kshortest``, ``optiq_heuristic``, ``optiq_lp``) and ``tago``, against
references written here.

* Yen's paths against EVERY simple path of small router graphs (NetworkX ``all_simple_paths`` on a graph built here
  from the topology's link arrays): with ``k`` at least their number the path set is all of them (exactly, fewer
  than ``k``), in nondecreasing hop count, with and without a hop limit; ties chosen deterministically (a fresh
  topology object gives the same paths) and the first ``k`` paths independent of ``k``;
* ``kshortest`` with every simple path in its set: ``route(s, d)`` and the batched loads equal a per-flow walk
  over those paths with the documented split (``1/n`` per router path, parallel links of one hop evenly);
* ``optiq_lp``: weights feasible (>= 0, 1 per pair) and its largest router-link utilisation equal to the optimum
  of the same max-load problem over the same path sets, solved here by SciPy's HiGHS (``linprog``), on a
  Dragonfly with unequal local and global bandwidths;
* ``optiq_heuristic``: Algorithm 2 written here from docs/routing_paths.md (rounds over the pairs, take / drop /
  raise ``maxload``), on the Yen candidates; the selected router paths and their even split;
* ``route(src, dst)``: equals the batched loads of that single flow (path sets and ``tago``); ``tago``'s against a
  walk over the global links read from the link arrays; ``src == dst`` routes nothing; a pair the operator is not
  bound to is refused, not answered with an empty route;
* unroutable pairs (an RDN whose jobs leave groups unconnected) and bad parameters refused by name.
"""

from __future__ import annotations

import collections
import itertools

import networkx as nx
import numpy as np
import pytest
from scipy.optimize import linprog

from evaluator import routing as RT
from evaluator import topology as T
from evaluator.errors import ConfigError, ResourceError
from evaluator.routing._paths import PairSet, path_table, router_graph, yen_paths
from tests.helpers import digraph, link_map


# --------------------------------------------------------------------------------------
# references built here from the link arrays
# --------------------------------------------------------------------------------------


def walk(topo, paths_weights, n_links) -> np.ndarray:
    """Loads of one byte sent over router paths ``[(nodes, share)]``, a hop's share split evenly over its copies."""
    lm = link_map(topo)
    out = np.zeros(n_links)
    for nodes, share in paths_weights:
        for x, y in zip(nodes[:-1], nodes[1:]):
            ids = lm[(x, y)]
            for lid in ids:
                out[lid] += share / len(ids)
    return out


def route_vector(op, topo, s, d) -> np.ndarray:
    links, frac = op.route(topo, s, d)
    out = np.zeros(int(topo.n_router_links))
    out[links] = frac
    return out


def apply_loads(op, src, dst, w) -> np.ndarray:
    got = op.apply(op.tables, np.asarray(src, np.int32), np.asarray(dst, np.int32), np.asarray(w, np.float64))
    return np.asarray(got)


SMALL = [
    ("ring5", lambda: T.torus((5,))),
    ("mesh2x3", lambda: T.torus((2, 3), wrap=False)),
    ("torus2x4", lambda: T.torus((2, 4))),
    ("fat tree 2-ary 2-tree", lambda: T.fat_tree(k=2, levels=2)),
    ("DF(1,2,2,2) parallel links", lambda: T.dragonfly(p=1, a=2, h=2, g=2)),
    ("DF(1,2,1)", lambda: T.dragonfly(p=1, a=2, h=1)),
]


# --------------------------------------------------------------------------------------
# Yen against every simple path
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("name,make", SMALL, ids=[s[0] for s in SMALL])
def test_yen_with_k_above_the_count_is_every_simple_path(name, make):
    topo = make()
    G = digraph(topo)
    graph = router_graph(topo)
    for s, d in itertools.permutations(range(topo.n_routers), 2):
        every = [tuple(p) for p in nx.all_simple_paths(G, s, d)]
        for hop_limit in (None, 2, 3):
            want = {p for p in every if hop_limit is None or len(p) - 1 <= hop_limit}
            got = yen_paths(graph, s, d, len(every) + 3, hop_limit)
            assert len(got) == len(want) and set(got) == want, (name, s, d, hop_limit)
            hops = [len(p) - 1 for p in got]
            assert hops == sorted(hops), (name, s, d, hop_limit)  # nondecreasing
            # exactly k when at least k exist: every prefix is the first k of the full answer
            for k in range(1, len(want) + 1):
                assert yen_paths(graph, s, d, k, hop_limit) == got[:k]


def test_ties_deterministic_and_lengths_equal_networkx():
    """On a 4x4 torus (many equal shortest paths): a new topology object (no cache) gives the same paths, the
    k-th lengths equal NetworkX's k shortest simple paths, and every path is a loopless path of the graph."""
    a, b = T.torus((4, 4)), T.torus((4, 4))
    G = digraph(a)
    for s, d in [(0, 5), (0, 10), (3, 12), (7, 9)]:
        pa = yen_paths(router_graph(a), s, d, 9)
        pb = yen_paths(router_graph(b), s, d, 9)
        assert pa == pb
        ref = list(itertools.islice(nx.shortest_simple_paths(G, s, d), 9))
        assert [len(p) for p in pa] == [len(p) for p in ref]
        for p in pa:
            assert p[0] == s and p[-1] == d and len(set(p)) == len(p)
            assert all(G.has_edge(x, y) for x, y in zip(p[:-1], p[1:]))
    # the path table of a fresh object (fresh Yen cache) equals that of the cached one
    ps = PairSet.of([0, 3, 7], [10, 12, 9], 16)
    ta, tb = path_table(a, RT.kshortest(5), ps), path_table(b, RT.kshortest(5), ps)
    assert np.array_equal(ta.path_links, tb.path_links) and np.array_equal(ta.path_weight, tb.path_weight)


# --------------------------------------------------------------------------------------
# kshortest loads against a per-flow walk over every simple path
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("name,make", [SMALL[1], SMALL[4]], ids=[SMALL[1][0], SMALL[4][0]])
def test_kshortest_routes_and_loads_equal_the_walk_over_every_simple_path(name, make):
    topo = make()
    G = digraph(topo)
    R, n_rl = int(topo.n_routers), int(topo.n_router_links)
    op = RT.build_routing(topo, RT.kshortest(40))  # unbound: every pair (small topology); 40 > every count here
    src, dst, w = [], [], []
    want_total = np.zeros(n_rl)
    rng = np.random.default_rng(0)
    for s, d in itertools.permutations(range(R), 2):
        every = [tuple(p) for p in nx.all_simple_paths(G, s, d)]
        assert len(every) < 40
        want = walk(topo, [(p, 1.0 / len(every)) for p in every], n_rl)
        np.testing.assert_allclose(route_vector(op, topo, s, d), want, rtol=1e-12, atol=1e-12)
        b = float(rng.integers(1, 9)) * 1e3
        src.append(s), dst.append(d), w.append(b)
        want_total += b * want
    # the batched loads of all those flows at once, plus flows inside one router carrying bytes (dropped)
    src += [0, 1]
    dst += [0, 1]
    w += [5.0e3, 7.0e3]
    np.testing.assert_allclose(apply_loads(op, src, dst, w), want_total, rtol=1e-12, atol=1e-6)
    assert route_vector(op, topo, 1, 1).sum() == 0.0


def test_kshortest_k2_on_a_ring_is_both_ways_evenly():
    topo = T.torus((5,))
    op = RT.build_routing(topo, RT.kshortest(2).bind(PairSet.of([0, 4], [2, 1], 5)))
    for s, d in [(0, 2), (4, 1)]:
        cw = tuple((s + i) % 5 for i in range((d - s) % 5 + 1))
        ccw = tuple((s - i) % 5 for i in range((s - d) % 5 + 1))
        want = walk(topo, [(cw, 0.5), (ccw, 0.5)], topo.n_router_links)
        np.testing.assert_allclose(route_vector(op, topo, s, d), want, atol=1e-12)


# --------------------------------------------------------------------------------------
# optiq_lp against HiGHS
# --------------------------------------------------------------------------------------


def _min_max_util(topo, table, demand) -> float:
    """min t s.t. per pair sum_p w_p = 1, w >= 0, every router link's load / capacity <= t (HiGHS here)."""
    n_rl = int(topo.n_router_links)
    cap = np.asarray(topo.capacity[:n_rl], np.float64)
    N = table.n_paths
    A = np.zeros((n_rl, N))
    for p in range(N):
        for lid in table.path_links[p, : table.path_hops[p]]:
            A[lid, p] += demand[table.path_pair[p]] / cap[lid]
    a_ub = np.hstack([A, -np.ones((n_rl, 1))])
    a_eq = np.zeros((table.n_pairs, N + 1))
    a_eq[table.path_pair, np.arange(N)] = 1.0
    c = np.zeros(N + 1)
    c[N] = 1.0
    res = linprog(c, A_ub=a_ub, b_ub=np.zeros(n_rl), A_eq=a_eq, b_eq=np.ones(table.n_pairs),
                  bounds=[(0, None)] * (N + 1), method="highs")
    assert res.status == 0
    return float(res.fun)


@pytest.mark.parametrize("seed", [0, 1])
def test_optiq_lp_is_feasible_and_reaches_the_highs_optimum(seed):
    topo = T.dragonfly(p=1, a=3, h=2, g=4, bandwidth_l=4.0e9, bandwidth_r=1.0e9)
    R, n_rl = int(topo.n_routers), int(topo.n_router_links)
    rng = np.random.default_rng(seed)
    s, d = rng.integers(0, R, 24), rng.integers(0, R, 24)
    keep = s != d
    s, d = s[keep], d[keep]
    b = rng.integers(1, 9, s.size) * 1.0e5
    ps = PairSet(s * R + d, R, b)
    op = RT.build_routing(topo, RT.optiq_lp(k=3).bind(ps))
    tb = op.tables
    n_pairs = len(ps)
    w = np.asarray(tb["path_weight"])
    pp = np.asarray(tb["path_pair"])
    assert (w >= -1e-12).all()
    per_pair = np.bincount(pp, weights=w, minlength=n_pairs)
    np.testing.assert_allclose(per_pair[:n_pairs], 1.0, atol=1e-9)
    assert np.abs(per_pair[n_pairs:]).max(initial=0.0) == 0.0  # padding carries nothing
    loads = apply_loads(op, s, d, b)
    util = float((loads / np.asarray(topo.capacity[:n_rl])).max())
    table = path_table(topo, RT.kshortest(3), ps)  # the same k Yen paths per pair
    best = _min_max_util(topo, table, np.asarray(ps.demand))
    assert util == pytest.approx(best, rel=1e-7)
    # and never above the even split of the same paths (kshortest)
    ks = RT.build_routing(topo, RT.kshortest(3).bind(PairSet(s * R + d, R)))
    assert util <= float((apply_loads(ks, s, d, b) / np.asarray(topo.capacity[:n_rl])).max()) * (1 + 1e-9)


# --------------------------------------------------------------------------------------
# optiq_heuristic: Algorithm 2 written here
# --------------------------------------------------------------------------------------


def _algorithm2(cands: list[list[set]], maxload: int, n_links: int) -> list[list[int]]:
    load = collections.Counter()
    nxt = [0] * len(cands)
    chosen = [[] for _ in cands]
    while any(nxt[i] < len(c) for i, c in enumerate(cands)):
        for i, c in enumerate(cands):
            if nxt[i] >= len(c):
                continue
            links = c[nxt[i]]
            top = max(load[lk] for lk in links)
            if top < maxload or not chosen[i]:
                while top >= maxload:  # "increase the maxload by 1 until we can add a path"
                    maxload += 1
                chosen[i].append(nxt[i])
                for lk in links:
                    load[lk] += 1
            nxt[i] += 1
    return chosen


@pytest.mark.parametrize("make,maxload", [(lambda: T.torus((3, 3)), 1), (lambda: T.dragonfly(p=1, a=2, h=2, g=2), 2)],
                         ids=["torus3x3", "DF(1,2,2,2)"])
def test_optiq_heuristic_is_algorithm_2(make, maxload):
    topo = make()
    R, n_rl = int(topo.n_routers), int(topo.n_router_links)
    lm = link_map(topo)
    rng = np.random.default_rng(5)
    s, d = rng.integers(0, R, 20), rng.integers(0, R, 20)
    ps = PairSet.of(s, d, R)
    op = RT.build_routing(topo, RT.optiq_heuristic(k=4, maxload=maxload).bind(ps))
    graph = router_graph(topo)
    pairs = sorted(zip(ps.src.tolist(), ps.dst.tolist()))
    cands = [yen_paths(graph, a, b, 4) for a, b in pairs]
    link_sets = [[{lid for x, y in zip(p[:-1], p[1:]) for lid in lm[(x, y)]} for p in c] for c in cands]
    chosen = _algorithm2(link_sets, maxload, n_rl)
    for i, (a, b) in enumerate(pairs):
        sel = [cands[i][j] for j in chosen[i]]
        want = walk(topo, [(p, 1.0 / len(sel)) for p in sel], n_rl)
        np.testing.assert_allclose(route_vector(op, topo, a, b), want, atol=1e-12, err_msg=str((a, b)))


# --------------------------------------------------------------------------------------
# route(src, dst) against single flows; TAGO against a walk from the link arrays
# --------------------------------------------------------------------------------------


def test_route_equals_the_batched_load_of_one_flow():
    topo = T.torus((3, 3))
    R = topo.n_routers
    ps = PairSet.of(*np.nonzero(~np.eye(R, dtype=bool)), R)
    for spec in (RT.kshortest(3).bind(ps), RT.optiq_heuristic(k=3).bind(ps)):
        op = RT.build_routing(topo, spec)
        for s, d in [(0, 4), (2, 6), (8, 1)]:
            np.testing.assert_allclose(route_vector(op, topo, s, d), apply_loads(op, [s], [d], [1.0]), atol=1e-12)


def _tago_walk(topo, s, d) -> np.ndarray:
    """TAGO's one byte from router ``s`` to ``d``: every global link from group S to group D (read from the link
    arrays) carries ``1/m``, reached and left by direct local hops."""
    a = int(topo.a)
    lm = link_map(topo)
    S, D = s // a, d // a
    out = np.zeros(int(topo.n_router_links))
    if S == D:
        (lid,) = lm[(s, d)]
        out[lid] += 1.0
        return out
    glob = [(x, y, lid) for (x, y), ids in lm.items() for lid in ids if x // a == S and y // a == D]
    for x, y, lid in glob:
        out[lid] += 1.0 / len(glob)
        for u, v in ((s, x), (y, d)):
            if u != v:
                (loc,) = lm[(u, v)]
                out[loc] += 1.0 / len(glob)
    return out


@pytest.mark.parametrize("make", [lambda: T.rdn(p=1, a=2, h=2, g=4), lambda: T.rdn(p=1, a=3, h=2, g=4)],
                         ids=["RDN(1,2,2,4)", "RDN(1,3,2,4)"])
def test_tago_route_equals_a_walk_over_the_link_arrays(make):
    topo = make()
    op = RT.build_routing(topo, RT.tago())
    for s, d in itertools.permutations(range(topo.n_routers), 2):
        got = route_vector(op, topo, s, d)
        np.testing.assert_allclose(got, _tago_walk(topo, s, d), atol=1e-12, err_msg=str((s, d)))
        np.testing.assert_allclose(got, apply_loads(op, [s], [d], [1.0]), atol=1e-12)
    assert op.route(topo, 2, 2)[0].size == 0


def test_route_of_a_pair_outside_the_bound_set_is_refused():
    """A bound path set serves its pairs only; a route asked for another pair must not come back empty (as if the
    flow crossed no link)."""
    topo = T.torus((4, 4))
    for spec in (RT.kshortest(2), RT.optiq_heuristic(k=2)):
        op = RT.build_routing(topo, spec.bind(PairSet.of([0], [5], 16)))
        assert op.route(topo, 0, 5)[0].size == 4  # its own pair: two 2-hop paths
        with pytest.raises(ConfigError) as e:
            op.route(topo, 0, 6)
        assert "(0, 6)" in str(e.value) and "bound" in str(e.value), str(e.value)
        assert op.route(topo, 3, 3)[0].size == 0  # src == dst: nothing, as for every routing


# --------------------------------------------------------------------------------------
# unroutable pairs and bad input
# --------------------------------------------------------------------------------------


def test_unroutable_pairs_are_refused_naming_the_pair():
    topo = T.rdn(p=1, a=2, h=2, g=4, configuration="jobs", jobs=[[0, 1], [2, 3]])  # groups 0,1 | 2,3 apart
    assert nx.has_path(digraph(topo), 0, 2) and not nx.has_path(digraph(topo), 0, 4)
    for spec in (RT.kshortest(2), RT.optiq_heuristic(k=2)):
        with pytest.raises(ConfigError) as e:
            RT.build_routing(topo, spec.bind(PairSet.of([0, 0], [2, 4], 8)))
        assert "(0, 4)" in str(e.value) and "no path" in str(e.value)
        assert str(RT.unroutable_pair(topo, spec, np.array([2, 4]))) == str(e.value)
    assert RT.unroutable_pair(topo, RT.kshortest(2), np.array([2, 3, 1 * 8 + 2])) is None
    with pytest.raises(ConfigError, match=r"routing\.hop_limit = 1 .*at least 2"):
        RT.build_routing(topo, RT.kshortest(2, hop_limit=1).bind(PairSet.of([0], [3], 8)))
    # the message docs/routing_paths.md quotes (router 21 = (3, 3) of a 6x6 torus: 3 + 3 hops from router 0)
    err = RT.unroutable_pair(T.torus((6, 6)), RT.kshortest(2, hop_limit=5), np.array([21, 1]))
    assert str(err).startswith("routing.hop_limit = 5 is invalid: allowed is at least 6 (router pair (0, 21) of "
                               "torus 6x6 is 6 hops apart)"), str(err)


@pytest.mark.parametrize("k", [0, -1, 1.5, 2.0, "2", None, True, [2]])
def test_bad_k_is_refused_by_name(k):
    for make in (RT.kshortest, lambda k: RT.optiq_heuristic(k=k), lambda k: RT.optiq_lp(k=k)):
        with pytest.raises(ConfigError) as e:
            make(k)
        assert "routing.k" in str(e.value) and repr(k) in str(e.value)


def test_other_parameters_and_huge_k():
    assert RT.kshortest(np.int64(3)).k == 3 and type(RT.kshortest(np.int64(3)).k) is int
    for bad in (0, -2, 2.5, "3", True):
        with pytest.raises(ConfigError, match=r"routing\.hop_limit"):
            RT.kshortest(2, hop_limit=bad)
    for bad in (0, "1", 1.0, None):
        with pytest.raises(ConfigError, match=r"routing\.maxload"):
            RT.optiq_heuristic(maxload=bad)
    for bad in ("cplex", None, ["highs"]):
        with pytest.raises(ConfigError, match=r"routing\.solver"):
            RT.optiq_lp(solver=bad)
    for bad in ("ugal", None):
        with pytest.raises(ConfigError, match=r"routing\.intra"):
            RT.tago(bad)
    # a k far beyond memory is refused before any search, naming the routing and how to fix it
    topo = T.torus((4, 4))
    with pytest.raises(ResourceError) as e:
        RT.build_routing(topo, RT.kshortest(10 ** 9).bind(PairSet.of([0], [5], 16)))
    assert "kshortest-k1000000000" in str(e.value) and "routing.k" in str(e.value)


def test_pair_sets_refuse_what_they_would_misread():
    with pytest.raises(ConfigError, match=r"pairs\.keys"):
        PairSet([1.7], 16)  # was truncated to key 1
    with pytest.raises(ConfigError, match=r"pairs\.src = 0\.5"):
        PairSet.of([0.5], [2], 16)  # was truncated to router 0
    with pytest.raises(ConfigError, match=r"pairs\.dst"):
        PairSet.of([0, 1], [2], 16)
    with pytest.raises(ConfigError, match=r"pairs\.demand"):
        PairSet([1, 2], 16, [1.0])  # one byte count for two keys: was broadcast to both
    for bad in (-5.0, np.nan, np.inf):
        with pytest.raises(ConfigError, match=r"pairs\.demand"):
            PairSet([1], 16, [bad])
    assert PairSet([1, 2.0], 16).keys.tolist() == [1, 2]  # integral floats are integers
    ps = PairSet([2, 1, 2], 16, [1.0, 2.0, 3.0])  # repeats summed
    assert ps.keys.tolist() == [1, 2] and ps.demand.tolist() == [2.0, 4.0]
    for bad in ([1, 2], "pairs", 3):
        with pytest.raises(ConfigError, match=r"routing\.pairs"):
            RT.kshortest(2).bind(bad)


def test_a_table_longer_than_the_estimate_is_checked_before_it_is_allocated(monkeypatch):
    """The size estimate before Yen's search is no bound (a 60-ring's second path of routers 0 and 1 has 59 hops,
    the estimate 34): the table found is checked again, with its own sizes, before its arrays are allocated."""
    import evaluator.routing._paths as PP

    topo = T.torus((60,))
    rt = RT.kshortest(2).bind(PairSet.of([0], [1], 60))
    assert PP.hop_bound(topo, rt) < 59
    seen = []
    real = PP.check_memory

    def spy(field, value, nbytes, what, hint=None):
        seen.append((nbytes, what))
        if "paths, padded to" in what:  # a machine that holds the estimate but not the table found
            raise ResourceError(field, value, what, hint)
        return real(field, value, nbytes, what, hint)

    monkeypatch.setattr(PP, "check_memory", spy)
    with pytest.raises(ResourceError):
        PP.path_table(topo, rt, rt.pairs)
    assert seen[-1][0] == PP.table_bytes(1, 2, PP.hop_bucket(59)) and "2 paths, padded to" in seen[-1][1]
