"""Audit of path-set routings at scale: the faster Yen search (Lawler's rule, detours searched only when their
length can be the least, memoised descents, closed-form torus distances, incremental tie-break counts) gives
exactly the paths of the documented algorithm, written here plainly.

The reference (:func:`ref_yen`) is Yen's algorithm as docs/routing_paths.md and the ``_yen`` docstrings state it,
on a NetworkX graph built from the topology's link arrays: BFS distances to the destination (NetworkX); every spur
path an A* search with that heuristic, among equal estimates the deeper node first, then the smaller hashed key
``((y ^ salt) * 2654435761) mod 2^32`` with ``salt = ((s * 1000003 + t) * 2654435761) mod 2^32``; every spur index
of every path spurred, banned next hops found by scanning every path taken; among the candidates of the least
length the one sharing the fewest router hops with the paths taken, then the smallest list of hashed keys.
"""

from __future__ import annotations

import heapq

import networkx as nx
import numpy as np
import pytest

from evaluator import routing as RT
from evaluator import topology as T
from evaluator.routing import _yen
from evaluator.routing._paths import PairSet, path_table, router_graph, yen_paths
from tests.helpers import digraph, link_map

HASH = 2654435761


# --------------------------------------------------------------------------------------
# the reference, from the link arrays
# --------------------------------------------------------------------------------------


def key(y, salt):
    return ((y ^ salt) * HASH) & 0xFFFFFFFF


def ref_spur(G, s, t, h, banned_nodes, banned_edges, max_hops, salt):
    """Plain A* (estimate, deeper first, hashed key), no shortcut."""
    if s not in h or h[s] > max_hops:
        return None
    heap, parent, best_g, closed = [(h[s], 0, 0, s)], {s: None}, {s: 0}, set()
    while heap:
        _, neg_g, _, x = heapq.heappop(heap)
        if x in closed:
            continue
        if x == t:
            path = [t]
            while parent[path[-1]] is not None:
                path.append(parent[path[-1]])
            return tuple(path[::-1])
        closed.add(x)
        g = -neg_g + 1
        for y in sorted(G.successors(x)):
            if y in closed or y in banned_nodes or (x, y) in banned_edges or y not in h or g + h[y] > max_hops:
                continue
            if g < best_g.get(y, 1 << 60):
                best_g[y], parent[y] = g, x
                heapq.heappush(heap, (g + h[y], -g, key(y, salt), y))
    return None


def ref_yen(G, s, t, k, hop_limit=None):
    limit = (1 << 30) if hop_limit is None else hop_limit
    h = nx.shortest_path_length(G, target=t)
    salt = ((s * 1_000_003 + t) * HASH) & 0xFFFFFFFF
    first = ref_spur(G, s, t, h, set(), set(), limit, salt)
    if first is None:
        return []
    A, B, seen = [first], set(), {first}
    while len(A) < k:
        prev = A[-1]
        for i in range(len(prev) - 1):
            root = prev[: i + 1]
            banned = {(p[i], p[i + 1]) for p in A if p[: i + 1] == root}
            sp = ref_spur(G, prev[i], t, h, set(root[:-1]), banned, limit - i, salt)
            if sp is not None and root[:-1] + sp not in seen:
                seen.add(root[:-1] + sp)
                B.add(root[:-1] + sp)
        if not B:
            break
        least = min(len(p) for p in B)
        used = {e for p in A for e in zip(p, p[1:])}
        best = min((p for p in B if len(p) == least),
                   key=lambda p: (len(used & set(zip(p, p[1:]))), [key(y, salt) for y in p]))
        B.remove(best)
        A.append(best)
    return A


# --------------------------------------------------------------------------------------
# the paths
# --------------------------------------------------------------------------------------

CASES = [
    ("torus 5x5x4", lambda: T.torus((5, 5, 4)), 14),
    ("torus/mesh 5x4x3", lambda: T.torus((5, 4, 3), wrap=(True, False, True)), 10),
    ("torus 2x4x3", lambda: T.torus((2, 4, 3)), 8),
    ("ring 9", lambda: T.torus((9,)), 6),
    ("DF(2,4,2)", lambda: T.dragonfly(p=2, a=4, h=2), 10),
    ("DF(1,2,2,2) parallel links", lambda: T.dragonfly(p=1, a=2, h=2, g=2), 6),
    ("fat tree 4-ary 3-tree", lambda: T.fat_tree(k=4, levels=3), 8),
]


@pytest.mark.parametrize("name,make,n_pairs", CASES, ids=[c[0] for c in CASES])
def test_yen_paths_equal_the_plain_algorithm(name, make, n_pairs):
    """k = 1, 6 and 16, with and without a hop limit: the same paths, in the same order, as the reference."""
    topo = make()
    G, graph = digraph(topo), router_graph(topo)
    rng = np.random.default_rng(3)
    R = int(topo.n_routers)
    pairs = [(int(a), int(b)) for a, b in rng.integers(0, R, (4 * n_pairs, 2)) if a != b][:n_pairs]
    for s, d in pairs:
        for limit in (None, 7):
            want = ref_yen(G, s, d, 16, limit)
            assert yen_paths(graph, s, d, 16, limit) == want, (name, s, d, limit)
            assert yen_paths(graph, s, d, 6, limit) == want[:6], (name, s, d, limit)
            assert yen_paths(graph, s, d, 1, limit) == want[:1], (name, s, d, limit)


def test_resumed_search_equals_the_plain_algorithm():
    """The per-pair state kept between calls (smaller, then larger k) continues to the reference's paths."""
    topo = T.torus((4, 4, 3))
    G, graph = digraph(topo), router_graph(topo)
    for s, d in [(0, 47), (5, 6), (13, 30)]:
        want = ref_yen(G, s, d, 30)
        state = _yen._Yen(graph, s, d, None)
        for k in (1, 4, 3, 17, 30, 2):
            assert state.extend(k) == want[:k], (s, d, k)


def test_path_table_of_a_torus_permutation_equals_the_reference():
    """path_table of a random permutation's pairs on a 4x4x4 torus, k = 8: link ids of the reference's paths."""
    topo = T.torus((4, 4, 4))
    R = int(topo.n_routers)
    perm = np.random.default_rng(5).permutation(R)
    pairs = PairSet.of(np.arange(R), perm, R)
    table = path_table(topo, RT.kshortest(8).bind(pairs), pairs)
    G, lm = digraph(topo), link_map(topo)
    row = 0
    for i, (s, d) in enumerate(zip(pairs.src.tolist(), pairs.dst.tolist())):
        for nodes in ref_yen(G, s, d, 8):
            ids = [lm[e][0] for e in zip(nodes, nodes[1:])]
            assert table.path_pair[row] == i and table.path_links[row, : len(ids)].tolist() == ids
            assert table.path_hops[row] == len(ids) and table.path_weight[row] == pytest.approx(1 / 8)
            row += 1
    assert row == table.n_paths


# --------------------------------------------------------------------------------------
# the distances
# --------------------------------------------------------------------------------------

GRIDS = [("torus 6x5x4", lambda: T.torus((6, 5, 4)), True), ("mesh 4x3", lambda: T.torus((4, 3), wrap=False), True),
         ("torus/mesh 2x3x5", lambda: T.torus((2, 3, 5), wrap=(True, False, True)), True),
         ("DF(2,4,2)", lambda: T.dragonfly(p=2, a=4, h=2), False),
         ("fat tree 2-ary 3-tree", lambda: T.fat_tree(k=2, levels=3), False)]


@pytest.mark.parametrize("name,make,grid", GRIDS, ids=[g[0] for g in GRIDS])
def test_distances_equal_networkx(name, make, grid):
    """Closed-form torus/mesh distances (and BFS elsewhere) equal NetworkX's BFS lengths, every destination."""
    topo = make()
    G, graph = digraph(topo), router_graph(topo)
    assert (graph.grid is not None) == grid
    R = int(topo.n_routers)
    for t in range(R):
        want = nx.shortest_path_length(G, target=t)
        assert graph.dist_to(t).tolist() == [want.get(r, -1) for r in range(R)], (name, t)


def test_a_torus_with_a_link_missing_is_not_a_grid():
    """The closed form is used only when the links are exactly the torus's: one link removed gets BFS."""
    topo = T.torus((4, 4))
    n = int(topo.n_router_links)
    keys = np.unique(np.asarray(topo.link_src[:n], np.int64) * 16 + np.asarray(topo.link_dst[:n], np.int64))
    assert _yen._grid_of(topo, keys) == ((4, 4), (True, True))
    assert _yen._grid_of(topo, keys[1:]) is None
    assert _yen._grid_of(topo, np.append(keys, 0 * 16 + 5)) is None


# --------------------------------------------------------------------------------------
# the work
# --------------------------------------------------------------------------------------


def test_detour_searches_are_skipped_when_shortest_paths_suffice(monkeypatch):
    """A 6x6x6 torus permutation with k = 16: every pair more than 3 hops apart has >= 16 shortest paths, so
    most A* detour searches are never run; the paths still equal the reference's on a sample."""
    topo = T.torus((6, 6, 6))
    R = int(topo.n_routers)
    perm = np.random.default_rng(2).permutation(R)
    calls = [0]
    astar = _yen._astar

    def counted(*a):
        calls[0] += 1
        return astar(*a)

    monkeypatch.setattr(_yen, "_astar", counted)
    graph = router_graph(topo)
    got = {s: yen_paths(graph, s, int(perm[s]), 16) for s in range(R) if perm[s] != s}
    far = [s for s in got if graph.dist_to(int(perm[s]))[s] > 3]
    assert len(far) > R // 2
    assert calls[0] < 20 * len(got), calls  # ~10 a pair here; the original ran ~48 a pair on an 8x8x8 torus
    G = digraph(topo)
    for s in far[:6]:
        assert got[s] == ref_yen(G, s, int(perm[s]), 16)
