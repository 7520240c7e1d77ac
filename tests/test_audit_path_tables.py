"""Audit of the path tables after Yen's search, the memory of saved searches, and the per-item work of OPTIQ's
heuristic and hashed ECMP's path listing.

* :func:`path_table` (NumPy fill from a router-pair -> link-id lookup) gives exactly the table written here from
  the Yen paths and the topology's link arrays (:func:`ref_table`: every parallel-link choice, last hop fastest,
  weights divided hop by hop then by the pair's path count), on tori, meshes, Dragonflies with parallel links and
  fat trees with parallel links; :func:`pair_path_counts` equals a dictionary count of router sequences;
* the saved searches (``_PATH_CACHE``) keep their Yen states under a byte budget, dropping the oldest to their
  found paths, and the found paths under another: a pair searched again from scratch gets the same first paths;
  the byte estimate of a state is within a factor 2 of a recursive ``sys.getsizeof``;
* ``optiq_heuristic``'s table equals Bui et al. Algorithm 2 written plainly (:func:`ref_select`), and
  :func:`ecmp_hash_paths` (Python-int Threefry) equals the NumPy Threefry and the array walk of the operator.
"""

from __future__ import annotations

import collections
import functools
import itertools
import sys

import numpy as np
import pytest

from evaluator import routing as RT
from evaluator import topology as T
from evaluator._threefry import threefry2x32
from evaluator.errors import ResourceError
from evaluator.routing import _fat_tree as FT
from evaluator.routing import _paths as PP
from evaluator.routing import _yen
from evaluator.routing._optiq import heuristic_table, select_paths
from evaluator.routing._paths import PairSet, pair_path_counts, path_table, router_graph, yen_paths
from tests.helpers import link_map


# --------------------------------------------------------------------------------------
# references
# --------------------------------------------------------------------------------------


def ref_table(topo, pairs: PairSet, k: int, hop_limit=None) -> dict:
    """The table from the Yen paths: rows per pair, per path, every choice of parallel link (last hop fastest)."""
    graph, lm = router_graph(topo), link_map(topo)
    rows, links, weight = [], [], []
    for i, (s, d) in enumerate(zip(pairs.src.tolist(), pairs.dst.tolist())):
        paths = yen_paths(graph, s, d, k, hop_limit)
        for nodes in paths:
            choices = [lm[e] for e in zip(nodes, nodes[1:])]
            w = functools.reduce(lambda acc, c: acc / len(c), choices, 1.0) / len(paths)
            for ids in itertools.product(*choices):
                rows.append(i)
                links.append(list(ids))
                weight.append(w)
    H = PP.hop_bucket(max(len(x) for x in links))
    grid = np.full((len(links), H), int(topo.n_router_links), np.int32)
    for r, ids in enumerate(links):
        grid[r, : len(ids)] = ids
    return dict(path_pair=np.asarray(rows, np.int32), path_links=grid,
                path_hops=np.asarray([len(x) for x in links], np.int32), path_weight=np.asarray(weight))


def ref_counts(topo, table, tol=PP.SHARE_TOL) -> list[int]:
    """Distinct router sequences per pair carrying more than ``tol`` (shares summed in row order)."""
    dst = np.asarray(topo.link_dst).tolist()
    share = collections.defaultdict(float)
    for r in range(table.n_paths):
        h = int(table.path_hops[r])
        share[(int(table.path_pair[r]), tuple(dst[x] for x in table.path_links[r, :h].tolist()))] += \
            float(table.path_weight[r])
    out = [0] * table.n_pairs
    for (i, _), s in share.items():
        out[i] += s > tol
    return out


def assert_same_table(table, want: dict) -> None:
    for name, arr in want.items():
        got = getattr(table, name)
        assert got.dtype == arr.dtype and got.shape == arr.shape, (name, got.dtype, got.shape, arr.shape)
        assert np.array_equal(got, arr), name  # weights too: bit for bit


def permutation_pairs(R: int, seed: int, n: int | None = None) -> PairSet:
    perm = np.random.default_rng(seed).permutation(R)
    src = np.arange(R) if n is None else np.random.default_rng(seed + 1).choice(R, min(n, R), replace=False)
    return PairSet.of(src, perm[src], R)


# --------------------------------------------------------------------------------------
# the table
# --------------------------------------------------------------------------------------

CASES = [
    ("torus 4x4x4 k8", lambda: T.torus((4, 4, 4)), 8, None, None),
    ("torus/mesh 5x4x3 k6 h6", lambda: T.torus((5, 4, 3), wrap=(True, False, True)), 6, 6, None),
    ("ring 12 k3", lambda: T.torus((12,)), 3, None, None),
    ("DF(2,4,2) k6", lambda: T.dragonfly(p=2, a=4, h=2), 6, None, 40),
    ("DF(1,2,2,2) parallel k6", lambda: T.dragonfly(p=1, a=2, h=2, g=2), 6, None, None),
    ("DF(1,4,3,3) parallel k5 h5", lambda: T.dragonfly(p=1, a=4, h=3, g=3), 5, 5, None),
    ("fat tree 2-level pl2 k3", lambda: T.fat_tree([4, 4], [1, 4], parallel_links=2), 3, None, None),
    ("fat tree 4-ary 3-tree pl(2,3) k5", lambda: T.fat_tree(k=4, levels=3, parallel_links=[2, 3]), 5, None, 12),
]


@pytest.mark.parametrize("name,make,k,limit,n", CASES, ids=[c[0] for c in CASES])
def test_path_table_equals_the_reference(name, make, k, limit, n):
    """Same rows, same order, same link ids, hops and weights (bit for bit), same dtypes and padding."""
    topo = make()
    R = int(topo.n_routers)
    pairs = permutation_pairs(R, 7, n)
    table = path_table(topo, RT.kshortest(k, hop_limit=limit).bind(pairs), pairs)
    want = ref_table(topo, pairs, k, limit)
    assert_same_table(table, want)
    assert np.array_equal(table.pair_src, pairs.src) and np.array_equal(table.pair_dst, pairs.dst)
    assert table.pair_src.dtype == np.int64 and table.n_router_links == topo.n_router_links
    assert pair_path_counts(topo, table).tolist() == ref_counts(topo, table)


def test_parallel_links_multiply_the_rows_in_order():
    """A fat tree with 2 and 3 parallel links a tier: a 4-hop router path has 2*3*3*2 = 36 rows, the last hop's
    link varying fastest, each 1/36 of the path's share."""
    topo = T.fat_tree(k=4, levels=3, parallel_links=[2, 3])
    lm = link_map(topo)
    graph = router_graph(topo)
    s, d = 0, int(topo.switches(1)) - 1                   # leaves in different pods: up to the top and down
    pairs = PairSet.of([s], [d], topo.n_routers)
    table = path_table(topo, RT.kshortest(1).bind(pairs), pairs)
    (nodes,) = yen_paths(graph, s, d, 1)
    choices = [lm[e] for e in zip(nodes, nodes[1:])]
    assert [len(c) for c in choices] == [2, 3, 3, 2] and table.n_paths == 36
    assert table.path_links[:, :4].tolist() == [list(x) for x in itertools.product(*choices)]
    assert table.path_weight.tolist() == [1 / 2 / 3 / 3 / 2] * 36


def test_the_row_count_is_checked_before_the_rows_are_made(monkeypatch):
    """The refusal of a table too large comes from the counts (the product of parallel links per router path),
    before any row array: the count it is given equals the reference's rows."""
    topo = T.fat_tree(k=4, levels=3, parallel_links=[2, 3])
    pairs = permutation_pairs(int(topo.switches(1)), 3)
    pairs = PairSet(pairs.keys // topo.switches(1) * topo.n_routers + pairs.keys % topo.switches(1),
                    topo.n_routers)
    seen = []

    def spy(field, value, nbytes, what, hint=None):
        seen.append(what)
        if "link-id paths" in what:
            raise ResourceError(field, value, what, hint)

    monkeypatch.setattr(PP, "check_memory", spy)
    monkeypatch.setattr(PP, "_link_rows", functools.partial(_rows_until_check, PP._link_rows))
    with pytest.raises(ResourceError):
        path_table(topo, RT.kshortest(4).bind(pairs), pairs)
    n_ref = ref_table(topo, pairs, 4)["path_pair"].size
    assert f"its {n_ref:,} link-id paths" in seen[-1], seen[-1]


def _rows_until_check(real, graph, found, check):
    """``_link_rows`` whose check must run before it returns (a refusal raised from the check stops it)."""
    called = []
    out = real(graph, found, lambda n, h: (called.append(n), check(n, h)))
    assert called  # the check ran
    return out


def test_the_table_found_is_checked_again_with_its_own_sizes(monkeypatch):
    """A 60-ring's second path of (0, 1) has 59 hops (more than the estimate): the table check gets its sizes."""
    topo = T.torus((60,))
    rt = RT.kshortest(2).bind(PairSet.of([0], [1], 60))
    seen = []
    monkeypatch.setattr(PP, "check_memory", lambda f, v, nbytes, what, hint=None: seen.append((nbytes, what)))
    table = path_table(topo, rt, rt.pairs)
    assert table.path_hops.tolist() == [1, 59]
    assert (PP.table_bytes(1, 2, PP.hop_bucket(59)), ) == tuple(b for b, w in seen if "2 paths, padded to 60" in w)


# --------------------------------------------------------------------------------------
# pair_path_counts on other weights
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("make", [lambda: T.dragonfly(p=1, a=2, h=2, g=2),
                                  lambda: T.fat_tree(k=4, levels=3, parallel_links=[2, 3]),
                                  lambda: T.torus((5, 5))], ids=["DF parallel", "fat tree parallel", "torus"])
def test_pair_path_counts_of_other_weights_equal_the_reference(make):
    """Random weights with zeros and tiny shares (an LP split), and a selection: the same counts as a dict."""
    topo = make()
    R = int(topo.n_routers)
    pairs = permutation_pairs(R, 11, min(R, 30))
    table = path_table(topo, RT.kshortest(5).bind(pairs), pairs)
    rng = np.random.default_rng(0)
    w = rng.uniform(0, 1, table.n_paths) * (rng.uniform(size=table.n_paths) < 0.6)
    w[rng.uniform(size=table.n_paths) < 0.1] = 1e-12
    for tab in (table.with_weights(w), table.select(rng.uniform(size=table.n_paths) < 0.5)):
        for tol in (PP.SHARE_TOL, 0.3):
            assert pair_path_counts(topo, tab, tol).tolist() == ref_counts(topo, tab, tol)


def test_pair_path_counts_tell_rows_apart_beyond_one_word():
    """Rows that differ only in their last hop beyond the first 64-bit word (a 40-hop ring path) are distinct."""
    topo = T.torus((80,))
    pairs = PairSet.of([0, 0], [40, 41], 80)
    table = path_table(topo, RT.kshortest(2).bind(pairs), pairs)
    assert table.path_hops.max() >= 39
    assert pair_path_counts(topo, table).tolist() == ref_counts(topo, table) == [2, 2]


# --------------------------------------------------------------------------------------
# the saved searches: a byte budget
# --------------------------------------------------------------------------------------


def deep_size(obj, seen: set) -> int:
    """``sys.getsizeof`` of ``obj`` and every container and tuple it holds, each once (ints shared: not counted)."""
    if id(obj) in seen or isinstance(obj, (int, float, bool, str, type(None))):
        return 0
    seen.add(id(obj))
    n = sys.getsizeof(obj)
    if isinstance(obj, dict):
        n += sum(deep_size(k, seen) + deep_size(v, seen) for k, v in obj.items())
    elif isinstance(obj, (list, tuple, set, frozenset)):
        n += sum(deep_size(x, seen) for x in obj)
    return n


STATE_PARTS = ("A", "dev", "B", "lengths", "lazy", "kids", "used", "seen", "shared", "by_edge")


@pytest.mark.parametrize("make,k", [(lambda: T.torus((8, 8, 8)), 16), (lambda: T.torus((6, 6)), 40),
                                    (lambda: T.dragonfly(p=2, a=4, h=2), 12),
                                    (lambda: T.fat_tree(k=4, levels=3, parallel_links=2), 30)],
                         ids=["torus 8^3 k16", "torus 6x6 k40", "DF k12", "fat tree k30"])
def test_state_estimate_is_within_a_factor_two_of_its_size(make, k):
    topo = make()
    graph = router_graph(topo)
    R = int(topo.n_routers)
    for s, d in np.random.default_rng(4).integers(0, R, (8, 2)).tolist():
        if s == d:
            continue
        state = _yen._Yen(graph, s, d, None)
        state.extend(k)
        real = deep_size({a: getattr(state, a) for a in STATE_PARTS}, {id(graph)})
        assert 0.5 <= state.nbytes() / real <= 2.0, (s, d, state.nbytes(), real)


def cache_of(topo):
    return PP._PATH_CACHE[topo]


def test_old_states_drop_to_their_paths_under_the_budget(monkeypatch):
    """A 6x6x6 torus permutation, k = 6, with a 1 MB state budget: the states kept stay within it (by the
    estimate, and within 2 MB by their measured size), the others keep their paths only; a larger k then
    searches those pairs again and gets the first paths again, and the paths of an unbudgeted search."""
    monkeypatch.setattr(PP, "PATH_STATE_BYTES", 1 << 20)
    topo = T.torus((6, 6, 6))
    R = int(topo.n_routers)
    pairs = permutation_pairs(R, 5)
    small = path_table(topo, RT.kshortest(6).bind(pairs), pairs)
    cache = cache_of(topo)
    live = [e for e in cache.entries.values() if e[0] is not None]
    assert 0 < len(live) == len(cache.live) < len(pairs) // 2, (len(live), len(pairs))
    assert cache.state_bytes == sum(e[3] for e in cache.entries.values()) <= 1 << 20
    graph = router_graph(topo)
    assert sum(deep_size({a: getattr(e[0], a) for a in STATE_PARTS}, {id(graph)}) for e in live) <= 2 << 20
    dropped = [(key, e) for key, e in cache.entries.items() if e[0] is None]
    assert all(len(e[1]) == 6 and e[3] == 0 for _, e in dropped)
    first = {key: list(e[1]) for key, e in dropped}
    big = path_table(topo, RT.kshortest(10).bind(pairs), pairs)
    for (s, d, lim), paths in first.items():
        again = cache.entries[(s, d, lim)][1]
        assert again[:6] == paths and again[:10] == yen_paths(graph, s, d, 10), (s, d)
    assert_same_table(big, ref_table(topo, pairs, 10))
    assert_same_table(small, ref_table(topo, pairs, 6))
    assert cache.state_bytes <= 1 << 20


def test_found_paths_are_forgotten_beyond_their_budget(monkeypatch):
    """The found paths have a budget too (least recently used pairs forgotten, searched again when asked)."""
    monkeypatch.setattr(PP, "PATH_STATE_BYTES", 64 << 10)
    monkeypatch.setattr(PP, "PATH_FOUND_BYTES", 16 << 10)
    topo = T.torus((5, 5, 4))
    R = int(topo.n_routers)
    pairs = permutation_pairs(R, 9)
    table = path_table(topo, RT.kshortest(4).bind(pairs), pairs)
    cache = cache_of(topo)
    assert len(cache.entries) < len(pairs) and cache.path_bytes <= 16 << 10
    assert cache.path_bytes == sum(e[4] for e in cache.entries.values())
    assert cache.state_bytes == sum(e[3] for e in cache.entries.values()) <= 64 << 10
    assert set(cache.live) <= set(cache.entries)
    again = path_table(topo, RT.kshortest(4).bind(pairs), pairs)
    assert_same_table(again, ref_table(topo, pairs, 4))
    assert_same_table(table, ref_table(topo, pairs, 4))


def test_a_finished_search_keeps_its_paths_only():
    """A pair with fewer paths than k (a 6-ring has 2): its search is done, nothing but the paths is kept."""
    topo = T.torus((6,))
    pairs = PairSet.of([0, 1], [3, 2], 6)
    path_table(topo, RT.kshortest(5).bind(pairs), pairs)
    cache = cache_of(topo)
    for key in ((0, 3, None), (1, 2, None)):
        state, paths, done, nb, _ = cache.entries[key]
        assert state is None and done and nb == 0 and len(paths) == 2
    assert cache.state_bytes == 0 and not cache.live


# --------------------------------------------------------------------------------------
# optiq_heuristic: Algorithm 2 written plainly
# --------------------------------------------------------------------------------------


def ref_select(candidates, maxload, n_links):
    """Bui et al. Algorithm 2 (``_optiq`` docstring): rounds over the pairs in order, one candidate each."""
    load = collections.Counter()
    nxt, chosen, trace, rnd = [0] * len(candidates), [[] for _ in candidates], [], 0
    while any(n < len(c) for n, c in zip(nxt, candidates)):
        for i, cand in enumerate(candidates):
            if nxt[i] == len(cand):
                continue
            links = cand[nxt[i]]
            top = max((load[x] for x in links), default=0)
            action = "take" if top < maxload else ("drop" if chosen[i] else "raise")
            if action == "raise":
                maxload = top + 1
            if action != "drop":
                chosen[i].append(nxt[i])
                load.update(links)
            trace.append((rnd, i, nxt[i], action, maxload))
            nxt[i] += 1
        rnd += 1
    return chosen, maxload, trace


def test_select_paths_equals_algorithm_2():
    """Random candidates (repeated links, empty candidates, pairs without any): same choices, trace, maxload."""
    rng = np.random.default_rng(1)
    for trial in range(40):
        n_links = int(rng.integers(3, 30))
        cands = [[rng.integers(0, n_links, int(rng.integers(0, 6))).tolist() for _ in range(int(rng.integers(0, 6)))]
                 for _ in range(int(rng.integers(0, 12)))]
        start = int(rng.integers(1, 4))
        trace = []
        chosen, ml = select_paths(cands, start, n_links, trace)
        assert (chosen, ml, trace) == ref_select(cands, start, n_links), trial


def ref_heuristic(topo, table, maxload):
    """Group each pair's consecutive rows with equal routers (one Yen path), select, split evenly."""
    src, dst = np.asarray(topo.link_src).tolist(), np.asarray(topo.link_dst).tolist()
    groups = []                                           # (pair, rows)
    for r in range(table.n_paths):
        ls = table.path_links[r, : table.path_hops[r]].tolist()
        sig = (int(table.path_pair[r]), tuple((src[x], dst[x]) for x in ls))
        if groups and groups[-1][0] == sig:
            groups[-1][1].append(r)
        else:
            groups.append((sig, [r]))
    cands = [[] for _ in range(table.n_pairs)]
    for (i, _), rows in groups:
        cands[i].append(sorted({x for r in rows for x in table.path_links[r, : table.path_hops[r]].tolist()}))
    chosen, _, _ = ref_select(cands, maxload, table.n_router_links)
    keep, weight, seen = np.zeros(table.n_paths, bool), [], collections.Counter()
    for (i, _), rows in groups:
        j, seen[i] = seen[i], seen[i] + 1
        if j in chosen[i]:
            keep[rows] = True
            tot = table.path_weight[rows[0]: rows[-1] + 1].sum()
            weight += [table.path_weight[r] / tot / len(chosen[i]) for r in rows]
    return keep, np.asarray(weight)


@pytest.mark.parametrize("make,k,maxload", [(lambda: T.torus((4, 4, 4)), 6, 1),
                                            (lambda: T.dragonfly(p=1, a=4, h=3, g=3), 5, 2),
                                            (lambda: T.fat_tree(k=4, levels=3, parallel_links=[2, 3]), 4, 1)],
                         ids=["torus", "DF parallel", "fat tree parallel"])
def test_heuristic_table_equals_the_reference(make, k, maxload):
    topo = make()
    R = int(topo.n_routers)
    pairs = permutation_pairs(R, 2, 24)
    spec = RT.optiq_heuristic(k, maxload).bind(pairs)
    full = path_table(topo, spec, pairs)
    keep, weight = ref_heuristic(topo, full, maxload)
    got = heuristic_table(topo, spec)
    assert keep.sum() < full.n_paths                     # the selection drops some
    assert_same_table(got, dict(path_pair=full.path_pair[keep], path_links=full.path_links[keep],
                                path_hops=full.path_hops[keep], path_weight=weight))


# --------------------------------------------------------------------------------------
# hashed ECMP's path listing
# --------------------------------------------------------------------------------------


def test_int_threefry_equals_numpy_threefry():
    rng = np.random.default_rng(8)
    x = rng.integers(0, 2**32, (4, 300), dtype=np.uint64)
    x[:, :4] = [[0, 2**32 - 1, 0, 2**32 - 1]] * 4
    want = threefry2x32(np, *(x[i].astype(np.uint32) for i in range(4)))[0].tolist()
    assert [FT._threefry_word_int(*map(int, x[:, j])) for j in range(x.shape[1])] == want


@pytest.mark.parametrize("kw", [dict(k=4, levels=3), dict(k=4, levels=3, parallel_links=[2, 3]),
                                dict(children=[2, 3, 2, 2], parents=[1, 2, 2, 3], parallel_links=[3, 1, 2])],
                         ids=["4-ary 3-tree", "parallel links", "4 levels"])
def test_ecmp_hash_paths_equal_the_array_walk(kw):
    """Every flow of a permutation and seeds 0, 7, 2^32 - 1: the path equals the operator's array walk
    (NumPy Threefry over all flows), is connected, leaves the source's leaf and ends at the destination's."""
    topo = T.fat_tree(**kw)
    N, m1 = int(topo.n_nodes), int(topo.children[0])
    src, dst = np.arange(N), np.random.default_rng(3).permutation(N)
    ls, ld = np.asarray(topo.link_src), np.asarray(topo.link_dst)
    for seed in (0, 7, 2**32 - 1):
        hops = FT._hash_hops(np, topo, FT._tiers(topo), np.uint32(seed), src, dst)
        for a, d in zip(src.tolist(), dst.tolist()):
            got = FT.ecmp_hash_paths(topo, a, d, seed)
            if a == d:
                assert got == []
                continue
            on = [h for h in hops if h[0][a]]
            want = [int(h[1][a]) for h in on] + [int(h[2][a]) for h in on][::-1]
            assert got == [(1.0, want)], (seed, a, d)
            if want:
                assert ls[want[0]] == a // m1 and ld[want[-1]] == d // m1
                assert all(ld[x] == ls[y] for x, y in zip(want, want[1:]))


def test_the_stated_budgets_and_delay_are_the_code_s():
    """docs/routing_paths.md's budgets of the saved searches and the progress bar's delay, read from the code."""
    from tests.claims import check_stated

    doc = "docs/routing_paths.md"
    check_stated(doc, r"past\s+([0-9]+) MB of search states", PP.PATH_STATE_BYTES / 1e6, "PATH_STATE_BYTES")
    check_stated(doc, r"past ([0-9]+) MB of paths", PP.PATH_FOUND_BYTES / 1e6, "PATH_FOUND_BYTES")
    check_stated(doc, r"A search that runs\s+more than ([0-9.]+) s \(`PROGRESS_DELAY_S`\)", PP.PROGRESS_DELAY_S,
                 "PROGRESS_DELAY_S")
