"""Degree buckets of the mapping search (evaluator.mapping._moves: FlowTable.widths, MoveEvaluator.levels,
MoveEvaluator.scores with the host state, the heat by bucket).

On power-law traffic (a few hub tasks with hundreds of neighbours) a move gathers as many flow entries as its tasks'
degrees need (a level), not 2k times the busiest task's degree; its scores must be those of the full-width table
(rtol 1e-12), the heat (each task through its bucket's table) too, and a search that uses the levels must return a
valid mapping whose time is the kernel's (:func:`evaluator.evaluate`).
"""

from __future__ import annotations

import numpy as np
import pytest

from evaluator.evaluation import evaluate
from evaluator.mapping._moves import MoveEvaluator
from evaluator.mapping._sparse_moves import SparseMoveEvaluator, pair_table
from evaluator.mapping._search import local_search
from evaluator.placement import explicit
from evaluator.routing import dor, minimal
from evaluator.topology import dragonfly, torus

RTOL = 1e-12


def power_law(n, m_per=4, alpha=1.1, seed=0):
    """Flows both ways between endpoints drawn with probability ~ rank^-alpha (a Chung-Lu graph): a few hub tasks
    with hundreds of neighbours, most with a handful (the bench's pattern, evaluator.bench.mapping.power_law)."""
    from evaluator.bench.mapping import power_law as bench_power_law

    return bench_power_law(n, m_per, alpha, seed)


# (topology, routing, tasks, tasks_per_node, nodes used, block size, sparse evaluator too)
CASES = {
    "torus-dor-1": (lambda: torus((8, 8, 5)), dor, 288, 1, 300, 2, False),
    "df-minimal-4": (lambda: dragonfly(2, 4, 2, 9), minimal, 256, 4, 68, 4, True),
}


_BUILT: dict = {}


def setup(case):
    """The case's network, traffic, slots and evaluators, built once for the module (the search test reuses the
    compiled moves: its batches have the shapes of the first test's)."""
    if case not in _BUILT:
        _BUILT[case] = _build(case)
    return _BUILT[case] + (np.random.default_rng(3),)


def _build(case):
    make_topo, make_routing, n, tpn, n_nodes, kb, sparse = CASES[case]
    t, routing, tr = make_topo(), make_routing(), power_law(n)
    nodes = np.random.default_rng(3).permutation(t.n_nodes)[:n_nodes]
    slot_node = np.repeat(nodes, tpn)
    evs = [MoveEvaluator(t, routing, tr, slot_node)]
    if sparse:
        evs.append(SparseMoveEvaluator(t, routing, tr, slot_node, pair_table(t, routing)))
    return t, routing, tr, nodes, slot_node, evs


def moves(rng, ev, state, k, n_moves):
    """``n_moves`` moves of two groups of ``k`` distinct slots; a third of them move a task of the widest bucket,
    a few the 2k busiest tasks."""
    S = state.size
    wide_slots = np.flatnonzero(ev.table.bucket(state) == len(ev.widths) - 1)
    busiest = np.argsort(ev.table.degree[state])[-2 * k:]
    s = np.array([rng.choice(S, 2 * k, replace=False) for _ in range(n_moves)])
    for i in range(0, n_moves, 3):
        hub = rng.choice(wide_slots)
        if hub not in s[i]:
            s[i, rng.integers(2 * k)] = hub
    for i in range(1, n_moves, 12):
        s[i] = rng.permutation(busiest)
    return s[:, :k], s[:, k:]


def move_levels(ev, state, a, b):
    """The level (index into ``ev.levels(k)``) of each move: the first that holds its tasks' degrees."""
    deg = ev.table.degree
    need = deg[state[a]].sum(axis=1) + deg[state[b]].sum(axis=1)
    return np.searchsorted(ev.levels(a.shape[1]), need)


@pytest.mark.parametrize("case", list(CASES))
def test_bucketed_scores_and_heat_equal_the_full_table(case):
    t, routing, tr, nodes, slot_node, evs, rng = setup(case)
    S = slot_node.size
    kb = CASES[case][5]
    state = rng.permutation(S)
    for ev in evs:
        w = ev.narrow_width
        assert w is not None and len(ev.widths) >= 2 and ev.widths[-1] >= 4 * w  # power law: a narrow bucket
        assert ev.widths[-1] >= 100  # hubs with hundreds of flows
        loads = ev.loads(state)
        st, tn = ev.device_state(state)
        for k in (1, kb):
            a, b = moves(rng, ev, state, k, 128 if k == 1 else 64)  # the search's shapes (candidates=256)
            mb = move_levels(ev, state, a, b)
            assert len(ev.levels(k)) >= 3 and ev.levels(k)[-1] == 2 * k * ev.widths[-1]
            assert set(mb.tolist()) == set(range(len(ev.levels(k))))  # every level of the split
            want_t, want_q = (np.asarray(x) for x in ev.scores(st, tn, loads, a, b))  # the full table
            got_t, got_q = ev.scores(st, tn, loads, a, b, host_state=state)
            np.testing.assert_allclose(got_t, want_t, rtol=RTOL, atol=0, err_msg=f"{type(ev).__name__} k={k}")
            np.testing.assert_allclose(got_q, want_q, rtol=RTOL, atol=0, err_msg=f"{type(ev).__name__} k={k}")
            # an independent check of a few: the moved mapping's loads from scratch
            for i in np.flatnonzero(mb == 0)[:2].tolist() + np.flatnonzero(mb > 0)[:2].tolist():
                s2 = state.copy()
                s2[a[i]], s2[b[i]] = state[b[i]], state[a[i]]
                ft, fq = ev.score(ev.loads(s2))
                assert got_t[i] == pytest.approx(ft, rel=RTOL) and got_q[i] == pytest.approx(fq, rel=1e-9)
            # bucketing off: the full table whatever the host state
            ev.bucketing = False
            off_t, _ = ev.scores(st, tn, loads, a, b, host_state=state)
            ev.bucketing = True
            np.testing.assert_array_equal(np.asarray(off_t), want_t)
        # the heat: each bucket's tasks through its table
        h_on = ev.heat(state, loads)
        ev.bucketing = False
        h_off = ev.heat(state, loads)
        ev.bucketing = True
        q0 = ev.score(loads)[1]
        assert h_on.shape == (S,) and h_off.max() > 0
        np.testing.assert_allclose(h_on, h_off, rtol=RTOL, atol=1e-13 * q0)


@pytest.mark.parametrize("case", list(CASES))
def test_bucketed_search_gives_the_kernels_time(case):
    t, routing, tr, nodes, slot_node, evs, rng = setup(case)
    tpn = CASES[case][3]
    ev = evs[-1]
    S = slot_node.size
    calls = []
    real = ev._scores_with

    def spy(level, *args):
        calls.append(level)
        return real(level, *args)

    ev._scores_with = spy
    start = rng.permutation(S)
    t_start = ev.score(ev.loads(start))[0]
    try:
        best, trace = local_search(ev, start, budget=60, seed=2, candidates=256, max_iterations=12, progress=False,
                                   fixed_counts=tpn > 1, step=ev.default_step)  # no step tuning: no compilations
    finally:
        del ev._scores_with
    levels = ev.levels(1)
    bulk = ev._bulk_levels(levels, 1)  # the narrow levels (a narrower one's rest is scored with the next one's)
    assert set(levels[:bulk]) & set(calls) and set(levels[bulk:]) & set(calls)  # a narrow level and a wider one
    assert None not in calls  # every batch split
    assert np.array_equal(np.sort(best), np.arange(S))  # a permutation of the slots
    task_node = ev.task_node(best)
    counts = np.bincount(task_node, minlength=t.n_nodes)
    assert counts.max() <= tpn and set(task_node.tolist()) <= set(nodes.tolist())
    fresh = float(evaluate(t, tr, explicit(t, task_node, "searched"), routing)["completion_time"])
    assert trace.best_completion_time[-1] == pytest.approx(fresh, rel=1e-9)
    assert fresh <= t_start * (1 + 1e-12)
    assert trace.best_completion_time[-1] < trace.best_completion_time[0]  # it moved


@pytest.mark.parametrize("case", list(CASES))
def test_threads_score_as_one_worker(case, monkeypatch):
    """A batch's calls run by several threads (MoveEvaluator.workers, on a CPU) give the scores of one worker bit
    for bit: bucketed (the calls by level) and not (one call halved per worker), every evaluator of the case (dense
    and sparse; DOR's compact listing on the torus), and the threads did run calls."""
    from evaluator.mapping import _move_calls

    t, routing, tr, nodes, slot_node, evs, rng = setup(case)
    state = rng.permutation(slot_node.size)
    threaded = [0]
    real_pool = _move_calls._pool

    def counting_pool(workers):
        pool = real_pool(workers)

        class Counted:
            def map(self, fn, items):
                items = list(items)
                threaded[0] += len(items)
                return pool.map(fn, items)
        return Counted()

    monkeypatch.setattr(_move_calls, "_pool", counting_pool)
    for ev in evs:
        loads = ev.loads(state)
        st, tn = ev.device_state(state)
        a, b = moves(rng, ev, state, 1, 1024)
        for host in (state, None):
            ev.workers = 1
            # the listing sizes grow to what these moves need at the first call (a longer listing sums a link's
            # entries in another order: the last place may differ); the scores compared are those of settled sizes
            ev.scores(st, tn, loads, a, b, host_state=host)
            want = [np.asarray(x) for x in ev.scores(st, tn, loads, a, b, host_state=host)]
            for w in (2, 3):
                ev.workers = w
                before = threaded[0]
                for _ in range(2):  # the first call of a new shape runs in this thread; the second, threaded
                    got = ev.scores(st, tn, loads, a, b, host_state=host)
                assert threaded[0] > before, (type(ev).__name__, w, host is None)
                for g, x in zip(got, want):
                    np.testing.assert_array_equal(np.asarray(g), x, err_msg=f"{type(ev).__name__} workers={w}")
        ev.workers = _move_calls.cpu_workers(ev._dev["cap"])


def test_narrow_levels_and_the_plan_of_calls():
    """Under DOR's compact listing the narrowest bucket's level is split (NARROW_SPLITS: a move's listing follows
    its flows), not where a call passes ``fractions`` (a short search) nor without a compact listing; a batch's
    calls hold every move once, each at a level that holds its tasks' degrees, the narrow levels in calls of
    one size (a narrower level's rest scored with the next one's), only the last narrow level's short rest in
    calls of BUCKET_CHUNK."""
    from evaluator.mapping._move_calls import BUCKET_CHUNK
    from evaluator.mapping._moves import NARROW_SPLITS

    t, routing, tr, nodes, slot_node, evs, rng = setup("torus-dor-1")
    ev = evs[0]
    w = ev.narrow_width
    for k in (1, 2):
        split = {int(2 * k * w * f) for f in NARROW_SPLITS}
        assert split <= set(ev.levels(k)) and not split & set(ev.levels(k, ()))
        assert ev._bulk_levels(ev.levels(k), k) == 1 + len(split)
    df = setup("df-minimal-4")[5][0]  # minimal routing on a Dragonfly: no compact listing, no split
    assert df._bulk_levels(df.levels(1), 1) == 1
    state = rng.permutation(slot_node.size)
    deg = ev.table.degree
    for n in (256, 4096):
        s = np.array([rng.choice(slot_node.size, 2, replace=False) for _ in range(n)])
        a, b = s[:, :1], s[:, 1:]
        levels = ev.levels(1)
        bulk = ev._bulk_levels(levels, 1)
        calls = ev._plan_calls(a, b, state, None)
        moved = np.concatenate([idx for idx, _, _ in calls])
        np.testing.assert_array_equal(np.sort(moved), np.arange(n))  # every move once
        need = deg[state[a[:, 0]]] + deg[state[b[:, 0]]]
        for idx, L, p in calls:
            assert (need[p] <= L).all() and np.array_equal(p[:idx.size], idx)  # padded with a move of the level
        narrow = [(idx, L, p) for idx, L, p in calls if L in levels[:bulk]]
        sizes = sorted({p.size for _, _, p in narrow})
        assert len(sizes) <= 2 and (len(sizes) == 1 or sizes[0] == BUCKET_CHUNK)
        padded = sum(p.size - idx.size for idx, _, p in narrow)
        assert padded < max(sizes)  # one call's padding at most (the last narrow level's)
        assert len(narrow) <= -(-n // max(sizes)) + max(sizes) // BUCKET_CHUNK
