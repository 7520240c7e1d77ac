"""Audit of the collective traffic kind (evaluator/traffic/_collectives.py, _collective_algorithms.py).

Every algorithm's message schedule is rebuilt here from the published definitions (Thakur, Rabenseifner &
Gropp 2005; the loops of MPICH's ``src/mpi/coll``; Bruck et al. 1997; Open MPI's ``coll/base`` for its fold
and neighbour exchange; SimGrid SMPI's rings), in plain Python, by moving data: each message carries a set
of blocks / chunks / partial sums, its bytes are derived from what it carries, and the reference asserts
that the data semantics are complete (every rank ends with every block or the full reduction, no partial
sum counted twice, no block received twice). The tool's schedule must equal the reference step by step (as
a multiset of ``(src, dst, bytes)``), for p = 1, 2, 3, 5, 6, 7, 8, 12, 16, tiny and non-divisible sizes and
several roots. Tree algorithms are in lock-step by mask, as docs/collectives.md states (a rank whose
larger subtrees lie beyond p sends in the step of its mask).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from evaluator.errors import ConfigError
from evaluator.traffic import COLLECTIVES, collective, collective_steps
from evaluator.traffic._collectives import _n_messages, _n_steps, _Opts

PS = [2, 3, 5, 6, 7, 8, 12, 16]
NS = [1.0e6, 5.0, 97.0, 7.5]


def _pof2(p):
    return 1 << (p.bit_length() - 1)


def _ceil_log2(p):
    return (p - 1).bit_length()


def _key(b):
    return float(f"{b:.9g}")


def _norm(steps):
    return [sorted((int(s), int(d), _key(b)) for s, d, b in st) for st in steps]


def _tool(op, alg, p, n, root=0, **kw):
    out = []
    for s, d, b in collective_steps(op, alg, p, n, root, **kw):
        assert s.shape == d.shape == b.shape
        out.append(list(zip(s.tolist(), d.tolist(), b.tolist())))
    return out


# --- reductions: state[r][c] = the ranks summed in rank r's copy of chunk c ------------------------------------

def _rstate(p, k):
    return [{c: {r} for c in range(k)} for r in range(p)]


def _rstep(state, msgs, unit):
    """msgs: (src, dst, chunks, add); add: the receiver sums (contributors must be disjoint), else overwrites."""
    snap = [{c: set(v) for c, v in st.items()} for st in state]
    for s, d, chunks, add in msgs:
        for c in chunks:
            if add:
                assert not (snap[s][c] & state[d][c]), f"partial sum counted twice: {s}->{d} chunk {c}"
                state[d][c] |= snap[s][c]
            else:
                state[d][c] = set(snap[s][c])
    return [(s, d, unit * len(chunks)) for s, d, chunks, _ in msgs]


def _rcheck(state, p):
    full = set(range(p))
    for r, st in enumerate(state):
        assert all(v == full for v in st.values()), f"rank {r} lacks part of the reduction"


def ref_allreduce_ring(p, n, root=0):
    st, steps = _rstate(p, p), []
    for i in range(p - 1):  # reduce-scatter: rank r passes its partial of chunk r - i on
        steps.append(_rstep(st, [(r, (r + 1) % p, [(r - i) % p], True) for r in range(p)], n / p))
    for r in range(p):
        assert st[r][(r + 1) % p] == set(range(p))
    for i in range(p - 1):  # allgather: the complete chunk r + 1 - i
        steps.append(_rstep(st, [(r, (r + 1) % p, [(r + 1 - i) % p], False) for r in range(p)], n / p))
    _rcheck(st, p)
    return steps


def _fold_real(p, odd_kept):
    rem = p - _pof2(p)
    return lambda x: (2 * x + (1 if odd_kept else 0)) if x < rem else x + rem


def _mpich_fold(p, k, unit, inner):
    """MPICH's fold: even ranks < 2 rem send all to rank + 1, inner on new ranks, odd send the result back."""
    pof2, rem = _pof2(p), p - _pof2(p)
    st, steps = _rstate(p, k), []
    if rem:
        steps.append(_rstep(st, [(e, e + 1, range(k), True) for e in range(0, 2 * rem, 2)], unit))
    steps += inner(st, pof2, _fold_real(p, True))
    if rem:
        steps.append(_rstep(st, [(e + 1, e, range(k), False) for e in range(0, 2 * rem, 2)], unit))
    _rcheck(st, p)
    return steps


def ref_allreduce_rd(p, n, root=0):
    def inner(st, pof2, real):
        return [_rstep(st, [(real(x), real(x ^ m), [0], True) for x in range(pof2)], n)
                for m in (1 << j for j in range(pof2.bit_length() - 1))]

    return _mpich_fold(p, 1, n, inner)


def _halve_double(st, pof2, real, k, unit):
    """Rabenseifner on pof2 new ranks over k chunks: recursive halving (the lower rank keeps the lower half),
    then recursive doubling back (MPICH MPIR_Allreduce_intra_reduce_scatter_allgather's index walk)."""
    lo, hi = {x: 0 for x in range(pof2)}, {x: k for x in range(pof2)}
    steps, mask = [], 1
    while mask < pof2:
        msgs, new = [], {}
        for x in range(pof2):
            y, mid = x ^ mask, (lo[x] + hi[x]) // 2
            keep, give = ((lo[x], mid), (mid, hi[x])) if x < y else ((mid, hi[x]), (lo[x], mid))
            msgs.append((real(x), real(y), range(*give), True))
            new[x] = keep
        steps.append(_rstep(st, msgs, unit))
        for x in range(pof2):
            lo[x], hi[x] = new[x]
        mask <<= 1
    for x in range(pof2):  # after the halving each rank holds its 1/pof2 of the vector fully reduced
        assert all(st[real(x)][c] == set(range(len(st))) for c in range(lo[x], hi[x]))
    mask = pof2 >> 1
    while mask:
        msgs = [(real(x), real(x ^ mask), range(lo[x], hi[x]), False) for x in range(pof2)]
        steps.append(_rstep(st, msgs, unit))
        for x in range(pof2):
            y = x ^ mask
            lo[x], hi[x] = min(lo[x], lo[y]), max(hi[x], hi[y])
        mask >>= 1
    return steps


def ref_allreduce_rab(p, n, root=0):
    k = 2 * _pof2(p)
    return _mpich_fold(p, k, n / k, lambda st, pof2, real: _halve_double(st, pof2, real, k, n / k))


def ref_allreduce_rab_ompi(p, n, root=0):
    """Open MPI's redscat_allgather: halves exchanged in the pairs < 2 rem, the odd rank's right half to the even
    one, which keeps new rank x = 2x; at the end even ranks send the result to rank + 1."""
    pof2, rem = _pof2(p), p - _pof2(p)
    k = 2 * pof2
    unit = n / k
    left, right = range(0, k // 2), range(k // 2, k)
    st, steps = _rstate(p, k), []
    if rem:
        ev = range(0, 2 * rem, 2)
        steps.append(_rstep(st, [m for e in ev for m in ((e, e + 1, right, True), (e + 1, e, left, True))], unit))
        steps.append(_rstep(st, [(e + 1, e, right, False) for e in ev], unit))
    steps += _halve_double(st, pof2, _fold_real(p, False), k, unit)
    if rem:
        steps.append(_rstep(st, [(e, e + 1, range(k), False) for e in range(0, 2 * rem, 2)], unit))
    _rcheck(st, p)
    return steps


def _tree_reduce(st, p, n, root):
    steps, m = [], 1
    while m < p:  # relative ranks = m mod 2m send to rank - m (MPIR_Reduce_intra_binomial)
        steps.append(_rstep(st, [((x + root) % p, (x - m + root) % p, [0], True)
                                 for x in range(p) if x % (2 * m) == m], n))
        m <<= 1
    assert st[root][0] == set(range(p))
    return steps


def ref_allreduce_binomial(p, n, root=0):
    st = _rstate(p, 1)
    steps = _tree_reduce(st, p, n, root)
    for bst in _bcast_binomial_msgs(p, root):
        steps.append(_rstep(st, [(s, d, [0], False) for s, d in bst], n))
    _rcheck(st, p)
    return steps


def _bcast_binomial_msgs(p, root):
    """MPIR_Bcast_intra_binomial in lock-step: mask m = 2^(L-1) ... 1, x (x mod 2m = 0) sends to x + m < p."""
    L, out = _ceil_log2(p), []
    for k in range(L):
        m = 1 << (L - 1 - k)
        out.append([((x + root) % p, (x + m + root) % p) for x in range(0, p, 2 * m) if x + m < p])
    return out


# --- block movers: state[r] = set of blocks; a receiver must not hold a block it receives ----------------------

def _bstep(state, msgs, size, once=True):
    """msgs: (src, dst, blocks); bytes = sum(size(b)); the sender must hold them."""
    snap = [set(s) for s in state]
    out = []
    for s, d, blocks in msgs:
        blocks = list(blocks)
        assert set(blocks) <= snap[s], f"{s} sends blocks it does not hold"
        if once:
            assert not (set(blocks) & state[d]), f"{d} receives again {set(blocks) & state[d]}"
        state[d] |= set(blocks)
        out.append((s, d, sum(size(b) for b in blocks)))
    return out


def ref_alltoall(alg, p, n, throttle=32):
    st = [{(r, d) for d in range(p)} for r in range(p)]
    pow2 = p & (p - 1) == 0
    if alg == "pairwise":
        rounds = [[(r, r ^ i if pow2 else (r + i) % p) for r in range(p)] for i in range(1, p)]
    elif alg == "ring":
        rounds = [[(r, (r + i) % p) for r in range(p)] for i in range(1, p)]
    elif alg == "linear":
        rounds = [[(r, d) for r in range(p) for d in range(p) if d != r]]
    else:  # scattered: bblock = throttle (0: p); in block ii each rank posts ss sends and receives
        b = p if throttle == 0 else min(throttle, p)
        rounds = []
        for ii in range(0, p, b):
            ss = min(b, p - ii)
            sends = [(r, (r - i - ii) % p) for r in range(p) for i in range(ss)]
            recvs = [((r + i + ii) % p, r) for r in range(p) for i in range(ss)]
            assert sorted(sends) == sorted(recvs)  # every posted receive has its send
            rounds.append([(s, d) for s, d in sends if s != d])
    steps = [_bstep(st, [(s, d, [(s, d)]) for s, d in rnd], lambda _: n) for rnd in rounds]
    for r in range(p):
        assert {(o, r) for o in range(p)} <= st[r]
    return steps


def ref_alltoall_bruck(p, n):
    """MPIR_Alltoall_intra_brucks: rotate (slot j of rank r: the block for r + j), step k sends the slots with
    bit k set to r + 2^k, the receiver stores them in the same slots; at the end slot j holds (r - j) -> r."""
    slots = [[(r, (r + j) % p) for j in range(p)] for r in range(p)]
    steps, k = [], 0
    while (1 << k) < p:
        snap = [list(s) for s in slots]
        msgs = []
        for r in range(p):
            sel = [j for j in range(p) if j & (1 << k)]
            d = (r + (1 << k)) % p
            for j in sel:
                slots[d][j] = snap[r][j]
            msgs.append((r, d, n * len(sel)))
        steps.append(msgs)
        k += 1
    for r in range(p):
        assert sorted(slots[r]) == sorted(((r - j) % p, r) for j in range(p))
    return steps


def ref_allgather(alg, p, n):
    st = [{r} for r in range(p)]
    size = lambda _: n  # noqa: E731
    steps = []
    if alg == "ring" or (alg == "neighbor_exchange" and p % 2):
        last = list(range(p))
        for _ in range(p - 1):
            msgs = [(r, (r + 1) % p, [last[r]]) for r in range(p)]
            steps.append(_bstep(st, msgs, size))
            last = [last[(r - 1) % p] for r in range(p)]
    elif alg == "direct_ring":
        for i in range(1, p):
            steps.append(_bstep(st, [(r, (r + i) % p, [r]) for r in range(p)], size))
    elif alg == "recursive_doubling" and p & (p - 1) == 0:
        m = 1
        while m < p:
            steps.append(_bstep(st, [(r, r ^ m, sorted(st[r])) for r in range(p)], size))
            m <<= 1
    elif alg in ("bruck", "recursive_doubling"):  # MPIR_Allgather_intra_brucks
        buf = [[r] for r in range(p)]
        pof2 = 1
        while pof2 <= p // 2 or pof2 < p:
            cnt = pof2 if pof2 <= p // 2 else p - pof2
            msgs = [(r, (r - pof2) % p, buf[r][:cnt]) for r in range(p)]
            steps.append(_bstep(st, msgs, size))
            buf = [buf[r] + buf[(r + pof2) % p][:cnt] for r in range(p)]
            pof2 *= 2
    else:  # Open MPI neighbor exchange, even p
        nb = [[r + 1 if r % 2 == 0 else r - 1, (r - 1) % p if r % 2 == 0 else (r + 1) % p] for r in range(p)]
        steps.append(_bstep(st, [(r, nb[r][0], [r]) for r in range(p)], size))
        last = [[r, nb[r][0]] for r in range(p)]
        for i in range(1, p // 2):
            msgs = [(r, nb[r][i % 2], last[r]) for r in range(p)]
            steps.append(_bstep(st, msgs, size))
            last = [next(list(b) for s, d, b in msgs if d == r) for r in range(p)]
    for r in range(p):
        assert st[r] == set(range(p)), f"rank {r} misses blocks {set(range(p)) - st[r]}"
    return steps


# --- broadcasts: state[x] = the chunks rank x holds --------------------------------------------------------------

def _rel(msgs, p, root):
    return [((s + root) % p, (d + root) % p, b) for s, d, b in msgs]


def ref_bcast_binomial(p, n, root=0):
    st = [{0} if x == root else set() for x in range(p)]
    steps = [_bstep(st, [(s, d, [0]) for s, d in msgs], lambda _: n) for msgs in _bcast_binomial_msgs(p, root)]
    assert all(s == {0} for s in st)
    return steps


def ref_bcast_linear(p, n, root=0):
    st = [{0} if x == root else set() for x in range(p)]
    steps = [_bstep(st, [(root, d, [0]) for d in range(p) if d != root], lambda _: n)]
    assert all(s == {0} for s in st)
    return steps


def ref_bcast_pipelined(p, n, root=0, segments=8):
    chain = [(root + j) % p for j in range(p)]
    st = [set(range(segments)) if x == root else set() for x in range(p)]
    steps = []
    for t in range(p - 2 + segments):
        msgs = [(chain[j], chain[j + 1], [t - j]) for j in range(p - 1) if 0 <= t - j < segments]
        steps.append(_bstep(st, msgs, lambda _: n / segments))
    assert all(s == set(range(segments)) for s in st)
    return steps


def _chunks(p, n):
    c = math.ceil(n / p)
    return c, [min(c, max(0.0, n - j * c)) for j in range(p)]


def _mpich_scatter(p, n):
    """MPII_Scatter_for_bcast on relative ranks, by its curr_size arithmetic; returns steps and curr_size."""
    c, size = _chunks(p, n)
    L = _ceil_log2(p)
    curr = [float(n)] + [0.0] * (p - 1)
    held = [set(range(p))] + [set() for _ in range(p - 1)]
    steps = []
    for k in range(L):
        m = 1 << (L - 1 - k)
        msgs = []
        for x in range(0, p, 2 * m):
            if x + m >= p:
                continue
            send = curr[x] - c * m  # MPICH: send_size = curr_size - scatter_size * mask, sent if > 0
            assert (send > 0) == (n - (x + m) * c > 0), "the receiver posts its receive iff the sender sends"
            if send > 0:
                chunks = set(range(x + m, min(x + 2 * m, p)))
                assert chunks <= held[x] and abs(sum(size[j] for j in chunks) - send) < 1e-9
                held[x + m] |= chunks
                curr[x] -= send
                curr[x + m] = send
                msgs.append((x, x + m, send))
        if msgs:
            steps.append(msgs)
    for x in range(p):
        assert abs(curr[x] - size[x]) < 1e-9 and (size[x] == 0 or x in held[x])
    return steps, curr


def _rd_allgather(p, n, curr):
    """The allgather of MPIR_Bcast_intra_scatter_recursive_doubling_allgather with its non-power-of-two fix-up
    (curr_size, recv_size as MPICH keeps them); have[x]: the chunks counted in x's curr_size."""
    _, size = _chunks(p, n)
    have, recv, steps = [{x} for x in range(p)], [0.0] * p, []
    mask, i = 1, 0
    while mask < p:
        msgs = [(x, x ^ mask, curr[x], set(have[x])) for x in range(p) if x ^ mask < p]
        for x, y, b, h in msgs:
            assert abs(b - sum(size[j] for j in h)) < 1e-9 and not (h & have[y])
        for x, y, b, h in msgs:
            have[y] |= h
            curr[y] += b
            recv[y] = b
        steps.append([(x, y, b) for x, y, b, _ in msgs])
        tmp, k = mask >> 1, i
        while tmp:
            fix = []
            for x in range(p):
                my_root, dst_root = (x >> i) << i, ((x ^ mask) >> i) << i
                nc = p - my_root - mask
                y, tree_root = x ^ tmp, (x >> k) << k
                if dst_root + mask > p and y > x and x < tree_root + nc and y >= tree_root + nc:
                    part = set(range(my_root + mask, min(my_root + 2 * mask, p)))
                    assert part <= have[x] and not (part & have[y]) and y < p
                    assert abs(recv[x] - sum(size[j] for j in part)) < 1e-9
                    fix.append((x, y, recv[x], part))
            for x, y, b, part in fix:
                have[y] |= part
                curr[y] += b
                recv[y] = b
            if fix:
                steps.append([(x, y, b) for x, y, b, _ in fix])
            tmp >>= 1
            k -= 1
        mask <<= 1
        i += 1
    assert all(h == set(range(p)) for h in have), "a rank misses a chunk"
    return steps


def _ring_allgather(p, n):
    _, size = _chunks(p, n)
    have, steps = [{x} for x in range(p)], []
    for i in range(1, p):
        msgs = [(x, (x + 1) % p, (x - i + 1) % p) for x in range(p)]
        for x, y, j in msgs:
            assert j in have[x] and j not in have[y]
        for x, y, j in msgs:
            have[y].add(j)
        steps.append([(x, y, size[j]) for x, y, j in msgs])
    assert all(h == set(range(p)) for h in have)
    return steps


def ref_bcast_scatter_rd(p, n, root=0):
    sc, curr = _mpich_scatter(p, n)
    return [_rel(s, p, root) for s in sc + _rd_allgather(p, n, curr)]


def ref_bcast_scatter_ring(p, n, root=0):
    sc, _ = _mpich_scatter(p, n)
    return [_rel(s, p, root) for s in sc + _ring_allgather(p, n)]


REFS = {
    ("allreduce", "ring"): ref_allreduce_ring,
    ("allreduce", "recursive_doubling"): ref_allreduce_rd,
    ("allreduce", "rabenseifner"): ref_allreduce_rab,
    ("allreduce", "binomial"): ref_allreduce_binomial,
    ("allreduce", "rabenseifner_ompi"): ref_allreduce_rab_ompi,
    ("alltoall", "pairwise"): lambda p, n, root=0: ref_alltoall("pairwise", p, n),
    ("alltoall", "bruck"): lambda p, n, root=0: ref_alltoall_bruck(p, n),
    ("alltoall", "scattered"): lambda p, n, root=0: ref_alltoall("scattered", p, n),
    ("alltoall", "ring"): lambda p, n, root=0: ref_alltoall("ring", p, n),
    ("alltoall", "linear"): lambda p, n, root=0: ref_alltoall("linear", p, n),
    ("allgather", "ring"): lambda p, n, root=0: ref_allgather("ring", p, n),
    ("allgather", "recursive_doubling"): lambda p, n, root=0: ref_allgather("recursive_doubling", p, n),
    ("allgather", "bruck"): lambda p, n, root=0: ref_allgather("bruck", p, n),
    ("allgather", "direct_ring"): lambda p, n, root=0: ref_allgather("direct_ring", p, n),
    ("allgather", "neighbor_exchange"): lambda p, n, root=0: ref_allgather("neighbor_exchange", p, n),
    ("broadcast", "binomial"): ref_bcast_binomial,
    ("broadcast", "pipelined_ring"): ref_bcast_pipelined,
    ("broadcast", "scatter_recursive_doubling_allgather"): ref_bcast_scatter_rd,
    ("broadcast", "scatter_ring_allgather"): ref_bcast_scatter_ring,
    ("broadcast", "linear"): ref_bcast_linear,
}
ROOTED = {("allreduce", "binomial")} | {("broadcast", a) for a in COLLECTIVES["broadcast"]}


def test_every_algorithm_has_a_reference():
    assert set(REFS) == {(op, a) for op, algs in COLLECTIVES.items() for a in algs}


def _compare(op, alg, p, n, root):
    want = _norm(REFS[op, alg](p, n, root))
    got = _norm(_tool(op, alg, p, n, root))
    assert len(got) == len(want), f"{op} {alg} p={p} n={n} root={root}: {len(got)} steps, reference {len(want)}"
    for k, (g, w) in enumerate(zip(got, want)):
        assert g == w, f"{op} {alg} p={p} n={n} root={root} step {k}:\n tool {g}\n ref  {w}"


@pytest.mark.parametrize("op,alg", sorted(REFS))
def test_schedule_equals_reference(op, alg):
    for p in PS:
        roots = sorted({0, p - 1, p // 2}) if (op, alg) in ROOTED else [0]
        for n in NS:
            for root in roots:
                _compare(op, alg, p, n, root)
    if (op, alg) not in ROOTED:  # the root is checked, else unused
        assert _norm(_tool(op, alg, 6, 100.0, 5)) == _norm(_tool(op, alg, 6, 100.0, 0))


@pytest.mark.parametrize("alg", ["scatter_recursive_doubling_allgather", "scatter_ring_allgather"])
def test_scatter_broadcasts_many_p(alg):
    """MPICH's chunking: short and empty chunks (n < p, n not a multiple of p) for every p up to 20."""
    for p in range(2, 21):
        for n in (1.0, 3.0, float(p - 1), float(2 * p + 1), 1000.0):
            _compare("broadcast", alg, p, n, p // 3)


def test_one_rank_has_no_step():
    for op, algs in COLLECTIVES.items():
        for alg in algs:
            assert collective_steps(op, alg, 1, 1.0e6) == []


@pytest.mark.parametrize("throttle", [0, 1, 2, 3, 4, 5, 7, 32, 100])
def test_scattered_throttle(throttle):
    for p in PS:
        want = _norm(ref_alltoall("scattered", p, 10.0, throttle))
        assert _norm(_tool("alltoall", "scattered", p, 10.0, throttle=throttle)) == want, (p, throttle)


@pytest.mark.parametrize("segments", [1, 2, 3, 5, 8])
def test_pipelined_segments(segments):
    for p in PS:
        for root in (0, p - 1):
            want = _norm(ref_bcast_pipelined(p, 1.0e6, root, segments))
            assert _norm(_tool("broadcast", "pipelined_ring", p, 1.0e6, root, n_segments=segments)) == want


# --- step counts and the costs docs/collectives.md states -----------------------------------------------------

def _doc_steps(op, alg, p, n, o):
    """The "steps" column of docs/collectives.md; the scatter of a scatter_* broadcast drops its steps whose
    root message would carry no byte (m ceil(n/p) >= n: p does not divide n)."""
    lg, L, fold = p.bit_length() - 1, _ceil_log2(p), 0 if p & (p - 1) == 0 else 2
    table = {
        ("allreduce", "ring"): 2 * (p - 1), ("allreduce", "recursive_doubling"): lg + fold,
        ("allreduce", "rabenseifner"): 2 * lg + fold, ("allreduce", "binomial"): 2 * L,
        ("allreduce", "rabenseifner_ompi"): 2 * lg + (3 if fold else 0),
        ("alltoall", "pairwise"): p - 1, ("alltoall", "bruck"): L, ("alltoall", "ring"): p - 1,
        ("alltoall", "scattered"): -(-p // (p if o.throttle == 0 else min(o.throttle, p))),
        ("alltoall", "linear"): 1, ("allgather", "ring"): p - 1, ("allgather", "recursive_doubling"): L,
        ("allgather", "bruck"): L, ("allgather", "direct_ring"): p - 1,
        ("allgather", "neighbor_exchange"): p - 1 if p % 2 else p // 2, ("broadcast", "binomial"): L,
        ("broadcast", "pipelined_ring"): p - 2 + o.segments, ("broadcast", "linear"): 1,
        ("broadcast", "scatter_ring_allgather"): L + p - 1,
    }
    empty = sum(1 for j in range(L) if (1 << j) * math.ceil(n / p) >= n)
    if alg == "scatter_recursive_doubling_allgather":
        fix = len(ref_bcast_scatter_rd(p, n)) - len(_mpich_scatter(p, n)[0]) - L
        assert fix == 0 or p & (p - 1)  # a power of two has no fix-up
        return 2 * L + fix - empty
    return table[op, alg] - (empty if alg == "scatter_ring_allgather" else 0)


@pytest.mark.parametrize("op,alg", sorted(REFS))
def test_step_counts(op, alg):
    o = _Opts()
    for p in PS + [4, 9, 31, 33]:
        for n in (float(p * 64), 5.0, 6.0, 1000.0):
            steps = collective_steps(op, alg, p, n)
            assert len(steps) == _doc_steps(op, alg, p, n, o), (op, alg, p, n)
            assert len(steps) <= _n_steps(op, alg, p, o)
            assert sum(s.size for s, _, _ in steps) <= _n_messages(op, alg, p, o)
            if n == p * 64:  # p divides n: the memory estimate's count is exact
                assert len(steps) == _n_steps(op, alg, p, o), (op, alg, p)


def _per_rank(steps, p):
    sent, recv = np.zeros(p), np.zeros(p)
    for s, d, b in steps:
        np.add.at(sent, s, b)
        np.add.at(recv, d, b)
    return sent, recv


def test_documented_bytes_per_rank():
    """The "bytes sent per rank" column of docs/collectives.md, and the matching receives."""
    n = 4.8e6
    for p in PS:
        pow2 = p & (p - 1) == 0
        for op, alg, each in [("allreduce", "ring", 2 * (p - 1) / p * n), ("alltoall", "pairwise", (p - 1) * n),
                              ("alltoall", "scattered", (p - 1) * n), ("alltoall", "ring", (p - 1) * n),
                              ("alltoall", "linear", (p - 1) * n), ("allgather", "ring", (p - 1) * n),
                              ("allgather", "recursive_doubling", (p - 1) * n), ("allgather", "bruck", (p - 1) * n),
                              ("allgather", "direct_ring", (p - 1) * n),
                              ("allgather", "neighbor_exchange", (p - 1) * n),
                              ("alltoall", "bruck", n * sum(bin(j).count("1") for j in range(p)))]:
            sent, recv = _per_rank(collective_steps(op, alg, p, n), p)
            assert np.allclose(sent, each, rtol=1e-12) and np.allclose(recv, each, rtol=1e-12), (op, alg, p)
        for alg, total in [("binomial", 2 * (p - 1) * n)]:
            assert math.isclose(_per_rank(collective_steps("allreduce", alg, p, n), p)[0].sum(), total)
        for alg in ("binomial", "pipelined_ring"):
            assert math.isclose(_per_rank(collective_steps("broadcast", alg, p, n, p - 1), p)[0].sum(), (p - 1) * n)
        sent, _ = _per_rank(collective_steps("broadcast", "linear", p, n, 1), p)
        assert sent[1] == (p - 1) * n and sent.sum() == sent[1]
        if pow2:
            for alg, each in [("recursive_doubling", math.log2(p) * n), ("rabenseifner", 2 * (p - 1) / p * n),
                              ("rabenseifner_ompi", 2 * (p - 1) / p * n)]:
                sent, recv = _per_rank(collective_steps("allreduce", alg, p, n), p)
                assert np.allclose(sent, each) and np.allclose(recv, each), (alg, p)
            L = _ceil_log2(p)
            steps = collective_steps("broadcast", "scatter_recursive_doubling_allgather", p, n)
            assert math.isclose(_per_rank(steps[:L], p)[0].sum(), L * n / 2)
            assert np.allclose(_per_rank(steps[L:], p)[0], (p - 1) / p * n)
        steps = collective_steps("broadcast", "scatter_ring_allgather", p, n)  # p divides 4.8e6 for these p
        assert np.allclose(_per_rank(steps[_ceil_log2(p):], p)[0], (p - 1) / p * n)


def test_docs_python_example():
    """docs/collectives.md, Python: 6-rank recursive-doubling allgather is Bruck, step 2 sends 2 blocks to rank - 4."""
    steps = collective_steps("allgather", "recursive_doubling", 6, 1.0e6)
    assert len(steps) == 3
    s, d, b = steps[2]
    assert (d == (s - 4) % 6).all() and (b == 2.0e6).all()


def test_collective_maps_ranks_to_tasks():
    ranks = [5, 2, 9, 0, 7]
    for op, algs in COLLECTIVES.items():
        for alg in algs:
            tr = collective(op, alg, None, 97.0, root=3, ranks=ranks)
            want = _norm(REFS[op, alg](5, 97.0, 3))
            assert len(tr.phases) == len(want) and tr.phase_names == tuple(f"{alg} step {k}" for k in range(len(want)))
            for ph, w in zip(tr.phases, want):
                got = sorted((int(s), int(d), _key(b)) for s, d, b in zip(ph.src, ph.dst, ph.nbytes))
                assert got == sorted((ranks[s], ranks[d], b) for s, d, b in w), (op, alg)
                assert ph.n_tasks == 10


def test_zero_bytes_and_scatter_rd_fixup_counts():
    for op, alg in sorted(REFS):
        _compare(op, alg, 5, 0.0, 0)
        _compare(op, alg, 12, 0.0, 0)
    o = _Opts()
    for p in range(2, 41):
        steps = collective_steps("broadcast", "scatter_recursive_doubling_allgather", p, float(64 * p))
        assert len(steps) == _doc_steps("broadcast", "scatter_recursive_doubling_allgather", p, 64.0 * p, o)
        assert len(steps) == _n_steps("broadcast", "scatter_recursive_doubling_allgather", p, o), p


# --- bad input: a ConfigError naming the field, the value and what is allowed ---------------------------------

BAD = [
    (lambda: collective_steps("allreduce", "ring", 0, 8.0), "traffic.n_tasks", "0", "integer"),
    (lambda: collective_steps("allreduce", "ring", -3, 8.0), "traffic.n_tasks", "-3", "integer"),
    (lambda: collective_steps("allreduce", "ring", 4.0, 8.0), "traffic.n_tasks", "4.0", "integer"),
    (lambda: collective_steps("allreduce", "ring", True, 8.0), "traffic.n_tasks", "True", "integer"),
    (lambda: collective_steps("allreduce", "ring", 4, -1.0), "traffic.bytes", "-1.0", "finite number >= 0"),
    (lambda: collective_steps("allreduce", "ring", 4, float("nan")), "traffic.bytes", "nan", "finite"),
    (lambda: collective_steps("allreduce", "ring", 4, float("inf")), "traffic.bytes", "inf", "finite"),
    (lambda: collective_steps("allreduce", "ring", 4, "8"), "traffic.bytes", "'8'", "finite number"),
    (lambda: collective_steps("allreduce", "ring", 4, None), "traffic.bytes", "None", "finite number"),
    (lambda: collective_steps("allreduce", "bogus", 4, 8.0), "traffic.algorithm", "'bogus'", "'rabenseifner'"),
    (lambda: collective_steps("broadcast", "ring", 4, 8.0), "traffic.algorithm", "'ring'", "'binomial'"),
    (lambda: collective_steps("allreduce", ["ring"], 4, 8.0), "traffic.algorithm", "['ring']", "'ring'"),
    (lambda: collective_steps("barrier", None, 4, 8.0), "traffic.op", "'barrier'", "'allgather'"),
    (lambda: collective_steps("reduce_scatter", "ring", 4, 8.0), "traffic.op", "'reduce_scatter'", "'allreduce'"),
    (lambda: collective_steps(None, "ring", 4, 8.0), "traffic.op", "None", "'broadcast'"),
    (lambda: collective_steps("broadcast", "binomial", 4, 8.0, 4), "traffic.root", "4", "[0, 3]"),
    (lambda: collective_steps("broadcast", "binomial", 4, 8.0, -1), "traffic.root", "-1", "[0, 3]"),
    (lambda: collective_steps("broadcast", "binomial", 4, 8.0, 1.0), "traffic.root", "1.0", "integer"),
    (lambda: collective_steps("broadcast", "pipelined_ring", 4, 8.0, n_segments=0), "traffic.n_segments", "0",
     "integer >= 1"),
    (lambda: collective_steps("alltoall", "scattered", 4, 8.0, throttle=-1), "traffic.throttle", "-1",
     "integer >= 0"),
    (lambda: collective_steps("alltoall", "scattered", 4, 8.0, throttle=2.5), "traffic.throttle", "2.5",
     "integer >= 0"),
    (lambda: collective_steps("alltoall", "auto", 4, 8.0, selection="mvapich"), "traffic.selection", "'mvapich'",
     "'mpich'"),
    (lambda: collective_steps("alltoall", "ring", 4, 8.0, selection="mvapich"), "traffic.selection", "'mvapich'",
     "'mpich'"),
    (lambda: collective("allreduce", "ring", 1, 8.0), "traffic.n_tasks", "1", "at least 2 ranks"),
    (lambda: collective("allreduce", "ring", 0, 8.0), "traffic.n_tasks", "0", "integer"),
    (lambda: collective("allreduce", "ring", 4, 0.0), "traffic.bytes", "0.0", "finite number > 0"),
    (lambda: collective("allreduce", "ring", 4, -math.inf), "traffic.bytes", "-inf", "finite number > 0"),
    (lambda: collective("allreduce", "ring", 4, 8.0, selection="x"), "traffic.selection", "'x'", "'ompi'"),
    (lambda: collective("allreduce", "ring", None, 8.0, ranks=[3, 3]), "traffic.ranks", "[3, 3]", "distinct"),
    (lambda: collective("allreduce", "ring", None, 8.0, ranks=[2]), "traffic.ranks", "[2]", "at least 2 ranks"),
    (lambda: collective("allreduce", "ring", 3, 8.0, ranks=[0, 4]), "traffic.n_tasks", "3", "> 4"),
    (lambda: collective("broadcast", "auto", 4, 8.0, root=7), "traffic.root", "7", "[0, 3]"),
]


@pytest.mark.parametrize("case", range(len(BAD)))
def test_bad_input_is_a_config_error(case):
    call, field, value, allowed = BAD[case]
    with pytest.raises(ConfigError) as e:
        call()
    msg = str(e.value)
    assert msg.startswith(f"{field} = {value} is invalid"), msg
    assert allowed in msg, msg


def test_optimal_segments_is_the_brute_force_minimum():
    """T(S) = (p - 2 + S) (n / (S B) + lam(S)), lam(S) = latency (+ rendezvous when n / S > eager), S in [1, top]."""
    from evaluator.traffic._collectives import optimal_segments

    rng = np.random.default_rng(7)
    for _ in range(300):
        p, n = int(rng.integers(1, 70)), float(rng.choice([1.0, 1e3, 7.7e4, 1e6, 8e6, 3e8]))
        B, lam = float(rng.choice([1e8, 2e9, 5e10])), float(rng.choice([1e-7, 1e-6, 3e-6, 2e-5]))
        eager = [None, 0.0, 1e3, 6.5e4, 1e9][int(rng.integers(0, 5))]
        rv, top = float(rng.choice([0.0, 2e-6, 1e-5])), int(rng.choice([1, 7, 64, 1024]))
        S = np.arange(1, top + 1, dtype=np.float64)
        big = np.zeros_like(S, dtype=bool) if eager is None else n / S > eager
        T = (p - 2 + S) * (n / (S * B) + lam + np.where(big, rv, 0.0))
        best = int(S[np.flatnonzero(T <= T.min() * (1 + 1e-12))[0]])
        got = optimal_segments(p, n, B, lam, eager_threshold=eager, rendezvous_latency=rv, max_segments=top)
        Tg = T[got - 1]
        assert Tg <= T.min() * (1 + 1e-12) and (got == best or math.isclose(Tg, T[best - 1], rel_tol=1e-12)), \
            (p, n, B, lam, eager, rv, top, got, best)


def test_memory_refusal_names_the_segments(monkeypatch):
    """A pipelined ring of very many segments is refused naming traffic.n_segments (not the 4 ranks), and its
    estimate counts the steps themselves: 3000 one-message steps in 2 MB of memory are refused, not built."""
    with pytest.raises(ConfigError, match=r"^traffic\.n_segments = 1000000000000 is invalid: allowed is a size"):
        collective("broadcast", "pipelined_ring", 4, 8.0, n_segments=10**12)
    with pytest.raises(ConfigError, match=r"^traffic\.n_tasks = 1000000 is invalid: allowed is a size"):
        collective_steps("alltoall", "linear", 10**6, 8.0)
    monkeypatch.setenv("EVALUATOR_MEMORY_LIMIT", "2e6")
    with pytest.raises(ConfigError, match=r"^traffic\.n_segments = 3000 is invalid: allowed is a size that fits"):
        collective_steps("broadcast", "pipelined_ring", 2, 8.0, n_segments=3000)
    assert len(collective_steps("broadcast", "pipelined_ring", 2, 8.0, n_segments=100)) == 100


def test_optimal_segments_without_any_latency_is_the_default():
    """No segment count pays a latency (latency 0, and the rendezvous latency never charged: no eager threshold,
    or none a segment exceeds): no optimum, the documented default 8, as with no rendezvous latency at all (it
    returned max_segments); where a segment count does pay it, the brute-force minimum over [1, max_segments]."""
    from evaluator.traffic._collectives import optimal_segments

    for eager in (None, 1e9, 2e6):
        assert optimal_segments(16, 1e6, 1e9, 0.0, eager_threshold=eager, rendezvous_latency=5e-6) == 8, eager
    assert optimal_segments(16, 1e6, 1e9, 0.0) == 8
    S = np.arange(1, 1025, dtype=np.float64)
    T = (16 - 2 + S) * (1e6 / (S * 1e9) + np.where(1e6 / S > 1e4, 5e-6, 0.0))
    assert optimal_segments(16, 1e6, 1e9, 0.0, eager_threshold=1e4, rendezvous_latency=5e-6) == int(S[T.argmin()])
