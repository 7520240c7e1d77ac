"""DOR's compact listing of a few flows' links (RoutingOperator.flow_count / flow_compact) and the mapping moves
that use it (evaluator.mapping._moves: MoveEvaluator._resolved).

The listing must hold exactly the entries of ``flow_links`` (the fixed-width listing the latency path and the
adaptive routing read), in its order, flow after flow, with the flow's bytes times its fraction; ``needed`` must be
the flows' total so that a listing cut short is known. A move's scores through it must equal the fixed-width path's
bit for bit (the same entries added in the same order) whatever the listing's size: moves that need more entries
than a call lists are scored again, and the size adapts between calls.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from evaluator._batch.compiled import batch_kernel
from evaluator.mapping._moves import COMPACT_MIN, MoveEvaluator, _size_above
from evaluator.routing import _dor_flows, dor
from evaluator.topology import torus
from evaluator.traffic import from_flows, phased

# (dims, wrap, tie, order): even and odd rings, a two-router ring, mesh dimensions, both tie rules, both orders
TOPOLOGIES = [
    ((8, 4, 4), None, "split", "as_given"),
    ((5, 4, 2), None, "split", "longest_first"),
    ((4, 6, 3), (True, False, True), "positive", "as_given"),
    ((3, 4, 6), (False, True, False), "split", "longest_first"),
    ((2, 2, 7), None, "split", "as_given"),
]


def _operator(dims, wrap, tie, order):
    t = torus(list(dims), **({} if wrap is None else {"wrap": list(wrap)}))
    op = batch_kernel(t, dor(order=order, tie=tie), False).operator
    return t, op, jax.device_put(op.flow_tables)


@pytest.mark.parametrize("tie_table", [True, False], ids=["tie-table", "tie-two-runs"])
@pytest.mark.parametrize("wide", [False, True], ids=["int32", "int64"])
@pytest.mark.parametrize("case", TOPOLOGIES, ids=lambda c: "x".join(map(str, c[0])) + f"-{c[2]}-{c[3]}")
def test_compact_listing_is_the_fixed_width_listing_back_to_back(case, wide, tie_table, monkeypatch):
    if wide:  # the runs coded in int64 (a listing of millions of entries), forced on a small one
        monkeypatch.setattr(_dor_flows, "_CODE_LIMIT", 1)
    if not tie_table:  # every tie as its two runs (a ring too large for the tie table)
        monkeypatch.setattr(_dor_flows, "_TIE_TABLE_MAX", 0)
    t, op, ft = _operator(*case)
    # the tie table is there exactly where a dimension has split ties: n^2 entries per ring (n positions each way
    # twice round without it)
    n_routers = int(np.prod(case[0]))
    ring_links = sum(n_routers * 2 * n * (1 if n == 2 else 2) // n for n in case[0] if n > 1)
    tie_links = sum(n_routers * n for k, n in enumerate(case[0])
                    if case[2] == "split" and (case[1] is None or case[1][k]) and n % 2 == 0 and n > 2)
    assert ft["run_links"].shape[0] == ring_links + (tie_links if tie_table else 0)
    rng = np.random.default_rng(sum(case[0]))
    F = 40
    s = jnp.asarray(rng.integers(0, t.n_routers, F), jnp.int32)
    d = jnp.asarray(np.where(np.arange(F) % 7 == 0, np.asarray(s), rng.integers(0, t.n_routers, F)), jnp.int32)
    # (fresh functions: jit's cache of the operator's own would keep the other test's int32 trace)
    listing, counting = jax.jit(lambda *a: op.flow_links(*a)), jax.jit(lambda *a: op.flow_count(*a))
    compacting = jax.jit(lambda *a: op.flow_compact(*a), static_argnums=(4,))
    if wide:  # the runs' codes are int64 now: more int64 operations than the int32 coding has
        def i64_ops(fn):
            z = jnp.zeros(3, jnp.int32)
            return fn.lower(ft, z, z, jnp.ones(3), 8).as_text().count("xi64>")

        wide_ops = i64_ops(compacting)
        monkeypatch.setattr(_dor_flows, "_CODE_LIMIT", 2 ** 31)
        assert wide_ops > i64_ops(jax.jit(lambda *a: op.flow_compact(*a), static_argnums=(4,))) + 10
        monkeypatch.setattr(_dor_flows, "_CODE_LIMIT", 1)
    links, frac = (np.asarray(x) for x in listing(ft, s, d))
    want = [(f, int(lk), float(x)) for f in range(F) for lk, x in zip(links[f], frac[f]) if lk >= 0]
    count = np.asarray(counting(ft, s, d))
    np.testing.assert_array_equal(count, (links >= 0).sum(axis=1))
    total = int(count.sum())
    assert total == len(want) > 0
    # bytes: flow f carries f + 1 (column 0) and 1 (column 1): each entry names its flow and its fraction
    w = jnp.stack([jnp.arange(1.0, F + 1), jnp.ones(F)], axis=1)
    for size in (total, total + 29):
        lk, val, needed = compacting(ft, s, d, w, size)
        lk, val = np.asarray(lk), np.asarray(val)
        assert lk.shape == (size,) and val.shape == (size, 2) and int(needed) == total
        got = [(int(round(v[0] / v[1])) - 1, int(x), float(v[1])) for x, v in zip(lk, val) if x >= 0]
        assert got == want
        assert (lk[total:] == -1).all() and (val[total:] == 0).all()
    lk, val, needed = compacting(ft, s, d, w[:, 0], total - 5)  # cut short: said by needed
    assert int(needed) == total and lk.shape == (total - 5,)


def test_size_grid():
    assert [_size_above(x, 10 ** 6) for x in (0, COMPACT_MIN, COMPACT_MIN + 1, 97, 193, 1000)] == [
        64, 64, 96, 128, 256, 1024]
    assert _size_above(5000, 700) == 700  # never above the full listing


def _flows(n, m, seed, lo=1e5, hi=1e6):
    rng = np.random.default_rng(seed)
    src = rng.integers(0, n, m)
    dst = (src + 1 + rng.integers(0, n - 1, m)) % n
    return from_flows(n, src, dst, rng.uniform(lo, hi, m))


@pytest.mark.parametrize("phases,k", [(1, 2), (2, 1)])
def test_compact_moves_score_as_the_fixed_width_moves(phases, k):
    t = torus([8, 4, 4])
    tr = _flows(60, 240, 1) if phases == 1 else phased([_flows(60, 200, 2), _flows(60, 150, 3, 1e4, 1e5)])
    rng = np.random.default_rng(5)
    slot_node = rng.permutation(t.n_nodes)[:64]
    state = rng.permutation(64)
    compact = MoveEvaluator(t, dor(), tr, slot_node)
    fixed = MoveEvaluator(t, dor(), tr, slot_node)
    fixed._compact_full = lambda k, L: None  # the fixed-width listing (route_few)
    for ev in (compact, fixed):
        ev.level_fractions = (0.5,)  # two levels (fewer compilations)
    assert compact._compact_size(1, None) is not None
    loads = fixed.loads(state)
    st, tn = fixed.device_state(state)
    s = np.array([rng.choice(64, 2 * k, replace=False) for _ in range(128)])
    a, b = s[:, :k], s[:, k:]
    want_t, want_q = (np.asarray(x) for x in fixed.scores(st, tn, loads, a, b, host_state=state))
    calls = []
    real = compact._scores_with

    def spy(*args):
        calls.append(args[-1] if len(args) == 8 else compact._compact_size(k, args[0]))
        return real(*args)

    compact._scores_with = spy
    try:
        for size in (None, COMPACT_MIN):  # the adapted size, then one most moves overflow
            if size is not None:
                compact._compact_sizes = {key: size for key in compact._compact_sizes}
            for _ in range(2):
                got_t, got_q = (np.asarray(x) for x in compact.scores(st, tn, loads, a, b, host_state=state))
                np.testing.assert_array_equal(got_t, want_t)
                np.testing.assert_array_equal(got_q, want_q)
    finally:
        del compact._scores_with
    assert min(calls) == COMPACT_MIN and max(calls) > COMPACT_MIN  # rescored with a larger listing
    # the size adapted below the full listing (most flows are far shorter than the longest path)
    assert all(v < compact._compact_full(k, L) for (k, L), v in compact._compact_sizes.items())


@pytest.mark.parametrize("phases,k,prefix", [(1, 1, 32), (2, 2, 32), (1, 1, 1), (2, 1, 1)])
def test_sparse_compact_moves_score_as_the_dense_compact_moves(phases, k, prefix, monkeypatch):
    """A short compact listing scored sparsely (its links' new times, the untouched maximum from the batch's top
    list, the norm by its links' terms; move after move on buffers each move leaves as it found them) gives the
    dense pass's times and norms up to rounding (the times to a few units in the last place), for every move,
    overflowing ones included (rescored with the full listing). ``prefix`` 1: the top list's head is the busiest
    link alone, which many moves touch, so the whole list is read (the fallback of ``first_untouched``)."""
    import evaluator.mapping._move_scores as move_scores
    import evaluator.mapping._moves as moves

    monkeypatch.setattr(move_scores, "TOP_PREFIX", prefix)

    t = torus([8, 4, 4])  # 768 router links
    tr = _flows(60, 240, 1) if phases == 1 else phased([_flows(60, 200, 2), _flows(60, 150, 3, 1e4, 1e5)])
    rng = np.random.default_rng(7)
    slot_node = rng.permutation(t.n_nodes)[:64]
    state = rng.permutation(64)
    dense, sparse = (MoveEvaluator(t, dor(), tr, slot_node) for _ in range(2))
    loads = dense.loads(state)
    st, tn = dense.device_state(state)
    s = np.array([rng.choice(64, 2 * k, replace=False) for _ in range(128)])
    a, b = s[:, :k], s[:, k:]
    monkeypatch.setattr(moves, "COMPACT_SPARSE", 10 ** 9)
    assert not dense._sparse(COMPACT_MIN)
    want_t, want_q = (np.asarray(x) for x in dense.scores(st, tn, loads, a, b, host_state=state))
    monkeypatch.setattr(moves, "COMPACT_SPARSE", 1)
    traced = []
    real = sparse._sparse
    sparse._sparse = lambda size: traced.append(real(size)) or traced[-1]
    for size in (None, COMPACT_MIN):  # the adapted size, then one most moves overflow
        if size is not None:
            sparse._compact_sizes = {key: size for key in sparse._compact_sizes}
        got_t, got_q = (np.asarray(x) for x in sparse.scores(st, tn, loads, a, b, host_state=state))
        # a link's entries are added in an order that can differ with the listing's size (here: bit for bit at
        # 384 entries, the last place of 6 to 10 of the 128 times at 256), as on the bench's mesh halo
        np.testing.assert_allclose(got_t, want_t, rtol=4 * np.finfo(float).eps, atol=0)
        np.testing.assert_allclose(got_q, want_q, rtol=1e-12)
    assert True in traced  # some calls compiled the sparse update


@pytest.mark.parametrize("prefix", [1, 2, 5])
def test_first_untouched_reads_past_a_touched_head(prefix, monkeypatch):
    """The largest untouched time of a sparsely scored move: the first top-list entry whose link the move leaves as
    it was, read from the list's head and, where the move touches the whole head, from the rest (random lists
    against a direct maximum)."""
    import evaluator.mapping._move_scores as move_scores

    monkeypatch.setattr(move_scores, "TOP_PREFIX", prefix)
    rng = np.random.default_rng(prefix)
    fallbacks = 0
    for _ in range(40):
        delta = np.where(rng.random(12) < 0.6, rng.normal(size=12), 0.0)
        top_i = rng.permutation(12)[:8]
        top_v = np.sort(rng.random(8))[::-1]
        want = max((v for v, i in zip(top_v, top_i) if delta[i] == 0.0), default=-np.inf)
        got = move_scores.first_untouched(lambda i: jnp.asarray(delta)[i], jnp.asarray(top_v), jnp.asarray(top_i))
        assert float(got) == want
        fallbacks += bool((delta[top_i[:prefix]] != 0.0).all())
    assert fallbacks >= 5  # the head touched whole: the rest of the list was read


@pytest.mark.parametrize("n", [0, 1, 5, 64, 100, 200, 6144, 6150])
def test_lane_sum_adds_every_element_in_one_order(n):
    """The compact moves' norm sum (:func:`lane_sum`) equals an exact sum up to rounding, for lengths below, at and
    off multiples of its lanes (an odd row count included), and gives the same bits for a vector alone and in any
    row of a vmapped batch of any size: the order of its additions depends on the length only."""
    from evaluator.mapping._move_scores import lane_sum

    rng = np.random.default_rng(n)
    x = rng.random((9, n)) ** 16
    alone = np.array([float(jax.jit(lane_sum)(jnp.asarray(r))) for r in x])
    np.testing.assert_allclose(alone, [float(np.sum(r, dtype=np.longdouble)) for r in x], rtol=1e-14)
    for rows, want in ((x, alone), (x[3:], alone[3:]), (x[::-1], alone[::-1])):
        np.testing.assert_array_equal(np.asarray(jax.jit(jax.vmap(lane_sum))(jnp.asarray(rows))), want)


def test_one_bucket_is_split_under_the_compact_listing():
    """Every task in one degree bucket, under DOR's compact listing: the full width's level is split at
    SINGLE_SPLITS (rounded up to a multiple of 8), not where a call passes ``fractions`` (``()``: none) nor where the
    evaluator's ``level_fractions`` is set; the moves scored at the split levels get the scores of the full width,
    bit for bit, and each call holds moves whose flows fit its level."""
    from evaluator.mapping._move_calls import SINGLE_SPLITS

    t = torus([8, 4, 4])
    tr = _flows(60, 240, 1)
    rng = np.random.default_rng(7)
    slot_node = rng.permutation(t.n_nodes)[:64]
    state = rng.permutation(64)
    ev = MoveEvaluator(t, dor(), tr, slot_node)
    assert len(ev.widths) == 1
    for k in (1, 2):
        top = 2 * k * ev.widths[0]
        split = {-(-int(top * f) // 8) * 8 for f in SINGLE_SPLITS} - {top}
        assert split and ev.levels(k) == tuple(sorted(split | {top}))
        assert ev.levels(k, ()) == (top,)
    ev.level_fractions = (0.25,)
    assert ev.levels(1) == tuple(sorted({-(-int(2 * ev.widths[0] * 0.25) // 8) * 8, 2 * ev.widths[0]}))
    ev.level_fractions = None
    loads = ev.loads(state)
    st, tn = ev.device_state(state)
    s = np.array([rng.choice(64, 2, replace=False) for _ in range(256)])
    a, b = s[:, :1], s[:, 1:]
    calls = ev._plan_calls(a, b, state, None)
    assert len({L for _, L, _ in calls}) > 1  # the moves spread over the split levels
    need = ev._degree[state[a[:, 0]]] + ev._degree[state[b[:, 0]]]
    assert all((need[p] <= L).all() for _, L, p in calls)
    split_t, split_q = (np.asarray(x) for x in ev.scores(st, tn, loads, a, b, host_state=state))
    full_t, full_q = (np.asarray(x) for x in ev.scores(st, tn, loads, a, b, host_state=state, fractions=()))
    np.testing.assert_array_equal(split_t, full_t)
    np.testing.assert_array_equal(split_q, full_q)


def _three_buckets(n, mid=12, k_mid=40, seed=0):
    """A hub exchanging with every task, ``mid`` tasks with ``k_mid`` partners each, the rest with one: degree buckets
    of three widths (the bench's power law has them at 1,024 ranks)."""
    rng = np.random.default_rng(seed)
    src, dst = [], []
    for t in range(n):
        k = n - 1 if t == 0 else (k_mid if t <= mid else 1)
        for d in rng.choice(np.delete(np.arange(n), t), k, replace=False):
            src += [t, int(d)]
            dst += [int(d), t]
    return from_flows(n, np.array(src), np.array(dst), rng.uniform(1e5, 1e6, len(src)))


def test_a_middle_bucket_is_split_under_the_compact_listing():
    """Three degree buckets under DOR's compact listing: the level of one middle task with narrow ones is split at
    MID_SPLIT (rounded up to a multiple of 8), not where a call passes ``fractions``; the wider levels' calls keep
    the sizes they have without the split (sized from the first level that is not one); the scores are those
    without the split, bit for bit."""
    from evaluator.mapping._move_calls import MID_SPLIT

    n = 512
    t, tr = torus([8, 8, 8]), _three_buckets(n)
    ev, plain = (MoveEvaluator(t, dor(), tr, np.arange(n)) for _ in range(2))
    plain._mid_splits = lambda k: set()
    assert len(ev.widths) == 3
    for k in (1, 2):
        x = -(-int((ev.widths[1] + (2 * k - 1) * ev.widths[0]) * MID_SPLIT) // 8) * 8
        assert ev._mid_splits(k) == {x} and x not in ev.levels(k, ())
        assert set(ev.levels(k)) == set(plain.levels(k)) | {x} and x not in plain.levels(k)
    rng = np.random.default_rng(1)
    state = rng.permutation(n)
    s = np.array([rng.choice(n, 2, replace=False) for _ in range(1024)])
    a, b = s[:, :1], s[:, 1:]
    calls, plain_calls = ev._plan_calls(a, b, state, None), plain._plan_calls(a, b, state, None)
    x = ev._mid_splits(1).pop()
    assert any(L == x for _, L, _ in calls)
    above = [L for L in plain.levels(1) if L > x]
    for L in above:
        assert {p.size for _, LL, p in calls if LL == L} <= {p.size for _, LL, p in plain_calls if LL == L} | {0}
    loads = ev.loads(state)
    st, tn = ev.device_state(state)
    got = [np.asarray(v) for v in ev.scores(st, tn, loads, a, b, host_state=state)]
    want = [np.asarray(v) for v in plain.scores(st, tn, loads, a, b, host_state=state)]
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])


@pytest.mark.parametrize("phases,k", [(1, 1), (2, 2)])
def test_a_levels_first_call_lists_what_its_moves_need(phases, k):
    """A level's first call is made at the listing size that a first call at the full listing would have set (from
    the entries its moves need, counted with a listing of one entry: MoveCalls._needs), not at the full listing:
    the counts are those a full listing reports, the sizes after a batch are those of an evaluator that made that
    full call, fewer scorers are compiled, and the scores are the fixed-width listing's bit for bit."""
    t = torus([8, 4, 4])
    tr = _flows(60, 240, 4) if phases == 1 else phased([_flows(60, 200, 5), _flows(60, 150, 6, 1e4, 1e5)])
    rng = np.random.default_rng(11)
    slot_node = rng.permutation(t.n_nodes)[:64]
    state = rng.permutation(64)
    primed, old, fixed = (MoveEvaluator(t, dor(), tr, slot_node) for _ in range(3))
    old._first_sizes = lambda *args: None  # a level's first call at the full listing, as before
    fixed._compact_full = lambda k, L: None  # the fixed-width listing (route_few)
    for ev in (primed, old, fixed):
        ev.level_fractions = (0.5,)  # two levels
    loads = old.loads(state)
    st, tn = old.device_state(state)
    s = np.array([rng.choice(64, 2 * k, replace=False) for _ in range(256)])
    a, b = s[:, :k], s[:, k:]
    calls = old._plan_calls(a, b, state, None)
    assert len({L for _, L, _ in calls}) == 2
    for _, L, p in calls:  # the counts, against the needs the full listing reports
        full = old._compact_full(k, L)
        want = np.asarray(old._scores_with(L, st, tn, loads, a[p], b[p], old.default_step, full)[2])
        np.testing.assert_array_equal(primed._needs(L, (st, tn, loads), a[p], b[p]), want)
    old._scores.clear()
    want_t, want_q = (np.asarray(x) for x in fixed.scores(st, tn, loads, a, b, host_state=state))
    for _ in range(2):  # a batch, and another at the sizes it set
        for ev in (primed, old):
            got_t, got_q = (np.asarray(x) for x in ev.scores(st, tn, loads, a, b, host_state=state))
            np.testing.assert_array_equal(got_t, want_t)
            np.testing.assert_array_equal(got_q, want_q)
        assert primed._compact_sizes == old._compact_sizes and primed._compact_sizes  # set below the full listing
    assert len(primed._scores) < len(old._scores)  # old: a scorer of each call at the full listing, used once
    assert len(primed._need_calls) == 2 and not old._need_calls


def test_a_count_call_holds_no_more_listings_than_a_step(monkeypatch):
    """MoveCalls._needs lists every move in full on the way to its count, so a call counts at most as many moves as
    fit COMPACT_STEP_BYTES at the full listing (moves_within; 512 block moves of 128 tasks a side on the 16x8x8 torus
    asked for 47.8 GB), with the same counts as calls of NEED_CHUNK moves."""
    from evaluator.mapping import _move_calls as mc

    assert mc.moves_within(344_064) == 1 and mc.moves_within(2048) == 256 and mc.moves_within(0) == 1 << 19
    t = torus([8, 4, 4])
    tr = _flows(60, 240, 4)
    rng = np.random.default_rng(5)
    slot_node = rng.permutation(t.n_nodes)[:64]
    state = rng.permutation(64)
    s = np.array([rng.choice(64, 8, replace=False) for _ in range(40)])
    a, b = s[:, :4], s[:, 4:]
    counts, rows = [], []
    real_jit = mc.move_jit
    monkeypatch.setattr(mc, "move_jit", lambda f: (lambda g: lambda *x: rows.append(x[3].shape[0]) or g(*x))(
        real_jit(f)))
    for limit in (None, 4):
        ev = MoveEvaluator(t, dor(), tr, slot_node)
        st, tn = ev.device_state(state)
        loads = ev.loads(state)
        L = max(L for _, L, _ in ev._plan_calls(a, b, state, None))
        full = ev._compact_full(4, L)
        if limit is not None:
            monkeypatch.setattr(mc, "COMPACT_STEP_BYTES", limit * full * mc.COMPACT_ENTRY_BYTES)
        assert mc.moves_within(full) == (limit or mc.moves_within(full))
        rows.clear()
        counts.append(ev._needs(L, (st, tn, loads), a, b))
        chunk = min(mc.NEED_CHUNK, mc.moves_within(full))
        assert rows == [chunk] * -(-40 // chunk)
    assert rows == [4] * 10
    np.testing.assert_array_equal(counts[0], counts[1])
