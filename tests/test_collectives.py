"""MPI collectives by algorithm (issue 27 item 2): ``evaluator.traffic.collective`` / ``collective_steps``.

Checked against references built here, not by the code under test:

* closed forms of every algorithm's bytes (ring allreduce ``2 (p-1)/p n`` per rank, recursive doubling
  ``log2 p`` steps of ``n``, Rabenseifner ``2 (p-1)/p n``, pairwise ``(p-1) n``, Bruck's per-step block
  count counted bit by bit, ring allgather ``(p-1) n``, binomial broadcast ``(p-1) n``, pipelined ring);
* a data simulator per algorithm: every rank's data as blocks (a reduction's partial sums as the set of
  ranks they contain), moved step by step as the algorithm's description says; it checks that every rank ends
  with the full reduction / every block (no partial sum counted twice, no block sent to a rank that holds it),
  and the messages it sends (blocks x block size) equal :func:`collective_steps`' bytes, step by step;
* the config kind through ``config.compose``/``config.build`` and ``evaluate`` on a ring (1-D torus), whose
  per-step completion times are compared with a per-flow walk of the ring written here;
* issue 33 item 4 (collectives by size): the MPICH / SMPI / Open MPI algorithms added (scatter broadcasts with
  MPICH's chunking and fix-up, scattered alltoall and its throttle, SMPI's rings, Bruck, neighbour exchange,
  Open MPI's Rabenseifner fold, linear) by simulators transcribing those libraries' loops rank by rank;
  ``algorithm: auto`` at every threshold of each selection (``mpich``, ``mpich4`` from MPICH's sources,
  ``smpi_mpich`` against the SMPI harness's ``mpich_choice``, ``ompi`` from hand-read decisions); the optimum
  segment count of a pipelined ring against a brute-force minimum and the evaluator's ``time_with_latency``.
"""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np
import pytest

import evaluator as ev
from evaluator import config
from evaluator.errors import ConfigError
from evaluator.latency import Latency
from evaluator.traffic import COLLECTIVES, KINDS, collective, collective_steps
from evaluator.traffic._collectives import (DEFAULT_SEGMENTS, MAX_SEGMENTS, OMPI_ALGORITHMS, SELECTIONS,
                                            _n_steps, _Opts, optimal_segments, pipeline_segments,
                                            select_algorithm)

from helpers import RTOL, TOL

PS = [2, 3, 4, 5, 6, 7, 8, 12, 16]
N = 1.2e6


def _as_dict(step) -> dict[tuple[int, int], float]:
    s, d, b = step
    assert s.dtype == np.int64 and d.dtype == np.int64 and b.dtype == np.float64
    out: dict[tuple[int, int], float] = defaultdict(float)
    for x, y, z in zip(s.tolist(), d.tolist(), b.tolist()):
        out[x, y] += z
    return dict(out)


def _sent(steps, p) -> np.ndarray:
    out = np.zeros(p)
    for s, _, b in steps:
        np.add.at(out, s, b)
    return out


# ---------------------------------------------------------------------------------------------------------------
# data simulators: one per algorithm, from its textbook / MPICH description
# ---------------------------------------------------------------------------------------------------------------

class Reduce:
    """Every rank's vector as ``n_blocks`` blocks, each a partial sum: the frozenset of ranks it contains."""

    def __init__(self, p, n_blocks, nbytes):
        self.p, self.B, self.bb = p, n_blocks, nbytes / n_blocks
        self.data = [{j: frozenset([r]) for j in range(n_blocks)} for r in range(p)]
        self.steps: list[dict] = []

    def step(self, msgs, combine=True):
        """``msgs``: ``(src, dst, blocks)``, all sent at once from the state before the step."""
        snap = [dict(d) for d in self.data]
        out: dict = defaultdict(float)
        for s, d, blocks in msgs:
            assert s != d
            for j in blocks:
                got = snap[s][j]
                if combine:  # reduce into the receiver's partial sum: a rank counted twice is a wrong schedule
                    assert not (got & self.data[d][j]), (s, d, j)
                    self.data[d][j] = self.data[d][j] | got
                else:  # copy a finished block over the receiver's
                    assert got >= self.data[d][j]
                    self.data[d][j] = got
            out[s, d] += len(blocks) * self.bb
        self.steps.append(dict(out))

    def complete(self) -> bool:
        everyone = frozenset(range(self.p))
        return all(v == everyone for d in self.data for v in d.values())


class Gather:
    """Every rank's set of blocks (block ids), with a block size."""

    def __init__(self, have, block_bytes):
        self.have = [set(h) for h in have]
        self.bb = block_bytes
        self.steps: list[dict] = []

    def step(self, msgs):
        snap = [set(h) for h in self.have]
        out: dict = defaultdict(float)
        for s, d, blocks in msgs:
            blocks = set(blocks)
            assert s != d and blocks <= snap[s], (s, d)  # only data the sender holds
            assert not blocks & self.have[d], (s, d)     # never data the receiver holds
            self.have[d] |= blocks
            out[s, d] += len(blocks) * self.bb
        self.steps.append(dict(out))


def _pof2(p):
    pof2 = 1 << (p.bit_length() - 1)
    rem = p - pof2
    return pof2, rem, (lambda nr: 2 * nr + 1 if nr < rem else nr + rem)


def sim_allreduce_ring(p, n):
    sim = Reduce(p, p, n)
    for k in range(p - 1):  # reduce-scatter: rank r sends block r - k; finally r owns block r + 1
        sim.step([(r, (r + 1) % p, [(r - k) % p]) for r in range(p)])
    for k in range(p - 1):  # allgather: pass the finished blocks on
        sim.step([(r, (r + 1) % p, [(r + 1 - k) % p]) for r in range(p)], combine=False)
    return sim


def _fold(sim, p):
    """MPICH's pre-step: even ranks < 2 rem send everything to rank + 1 (their data now counted there)."""
    pof2, rem, real = _pof2(p)
    if rem:
        sim.step([(r, r + 1, range(sim.B)) for r in range(0, 2 * rem, 2)])
    return pof2, rem, real


def _unfold(sim, rem):
    if rem:
        sim.step([(r + 1, r, range(sim.B)) for r in range(0, 2 * rem, 2)], combine=False)


def sim_allreduce_recursive_doubling(p, n):
    sim = Reduce(p, 1, n)
    pof2, rem, real = _fold(sim, p)
    m = 1
    while m < pof2:
        sim.step([(real(x), real(x ^ m), [0]) for x in range(pof2)])
        m *= 2
    _unfold(sim, rem)
    return sim


def sim_allreduce_rabenseifner(p, n):
    pof2, rem, real = _pof2(p)
    sim = Reduce(p, pof2, n)
    _fold(sim, p)
    rng = {x: (0, pof2) for x in range(pof2)}  # the blocks new rank x is responsible for
    masks = []
    m = 1
    while m < pof2:  # reduce-scatter, recursive halving of the data, partner distance 1, 2, 4, ...
        msgs, new = [], {}
        for x in range(pof2):
            q = x ^ m
            lo, hi = rng[x]
            assert rng[q] == rng[x]
            mid = (lo + hi) // 2
            keep, send = ((lo, mid), (mid, hi)) if x < q else ((mid, hi), (lo, mid))
            msgs.append((real(x), real(q), range(*send)))
            new[x] = keep
        sim.step(msgs)
        rng = new
        masks.append(m)
        m *= 2
    for x in range(pof2):  # each new rank holds its one block fully reduced
        lo, hi = rng[x]
        assert hi - lo == 1 and sim.data[real(x)][lo] == frozenset(range(p))
    for m in reversed(masks):  # allgather, recursive doubling of the data, distance pof2/2, ..., 1
        msgs, new = [], {}
        for x in range(pof2):
            q = x ^ m
            msgs.append((real(x), real(q), range(*rng[x])))
            (a, b), (c, d) = sorted([rng[x], rng[q]])
            assert b == c
            new[x] = (a, d)
        sim.step(msgs, combine=False)
        rng = new
    _unfold(sim, rem)
    return sim


def _binomial_reduce(sim, p, root):
    rel = lambda r: (r - root) % p  # noqa: E731
    real = lambda x: (x + root) % p  # noqa: E731
    m = 1
    while m < p:  # a relative rank whose lowest set bit is m has received from all its children: send up
        sim.step([(real(x), real(x - m), [0]) for x in range(p) if x & (2 * m - 1) == m])
        m *= 2
    assert sim.data[root][0] == frozenset(range(p)) and rel(root) == 0


def _binomial_bcast_msgs(p, root, has):
    """Binomial broadcast from the top bit down: every holder x sends to x + m while it exists."""
    L = math.ceil(math.log2(p)) if p > 1 else 0
    real = lambda x: (x + root) % p  # noqa: E731
    for k in range(L):
        m = 2 ** (L - 1 - k)
        yield [(real(x), real(x + m)) for x in range(p) if has(real(x)) and x + m < p and x % (2 * m) == 0]


def sim_allreduce_binomial(p, n, root=0):
    sim = Reduce(p, 1, n)
    _binomial_reduce(sim, p, root)
    full = frozenset(range(p))
    for pairs in _binomial_bcast_msgs(p, root, lambda r: sim.data[r][0] == full):
        sim.step([(s, d, [0]) for s, d in pairs], combine=False)
    return sim


def sim_bcast_binomial(p, n, root=0):
    sim = Gather([{0} if r == root else set() for r in range(p)], n)
    for pairs in _binomial_bcast_msgs(p, root, lambda r: 0 in sim.have[r]):
        sim.step([(s, d, [0]) for s, d in pairs])
    return sim


def sim_bcast_pipelined_ring(p, n, root=0, S=8):
    """Greedy pipeline down the chain root, root+1, ...: every rank forwards its oldest segment not yet sent on
    (only segments held before the step)."""
    chain = [(root + j) % p for j in range(p)]
    sim = Gather([set(range(S)) if r == root else set() for r in range(p)], n / S)
    sent = [0] * p  # segments chain[j] has forwarded
    while not all(len(sim.have[r]) == S for r in range(p)):
        msgs = []
        for j in range(p - 1):
            if sent[j] < S and sent[j] in sim.have[chain[j]]:
                msgs.append((chain[j], chain[j + 1], [sent[j]]))
        for j in range(p - 1):
            sent[j] += any(m[0] == chain[j] for m in msgs)
        sim.step(msgs)
    return sim


def sim_allgather_ring(p, n):
    sim = Gather([{r} for r in range(p)], n)
    for k in range(p - 1):  # forward what arrived in the previous step
        sim.step([(r, (r + 1) % p, [(r - k) % p]) for r in range(p)])
    return sim


def sim_allgather_recursive_doubling(p, n):
    sim = Gather([{r} for r in range(p)], n)
    if p & (p - 1) == 0:
        m = 1
        while m < p:
            sim.step([(r, r ^ m, set(sim.have[r])) for r in range(p)])
            m *= 2
    else:  # Bruck: rank r holds r, r+1, ..., r+c-1 and gives rank r - 2^k the first min(2^k, p - 2^k) of them
        m = 1
        while m < p:
            c = min(m, p - m)
            sim.step([(r, (r - m) % p, {(r + j) % p for j in range(c)}) for r in range(p)])
            m *= 2
    return sim


def sim_alltoall_pairwise(p, n):
    """Block (s, d) goes from s to d; in step i rank r sends (r, partner) to its partner."""
    sim = Gather([{(r, d) for d in range(p)} for r in range(p)], n)
    for i in range(1, p):
        partner = (lambda r: r ^ i) if p & (p - 1) == 0 else (lambda r: (r + i) % p)
        sim.step([(r, partner(r), [(r, partner(r))]) for r in range(p)])
    return sim


def sim_alltoall_bruck(p, n):
    """Bruck: after the local rotation rank r's slot j holds block (r, r + j); step k moves every slot whose bit k is
    set from rank r to rank r + 2^k (same slot). The simulator tracks slots (a received slot replaces the sent one)."""
    slots = [{j: (r, (r + j) % p) for j in range(p)} for r in range(p)]
    steps = []
    m = 1
    while m < p:
        new = [dict(s) for s in slots]
        out = {}
        for r in range(p):
            moved = [j for j in range(p) if j & m]
            for j in moved:
                new[(r + m) % p][j] = slots[r][j]
            out[r, (r + m) % p] = len(moved) * n
        slots = new
        steps.append(out)
        m *= 2
    for r in range(p):  # slot j of rank r holds the block from r - j to r
        assert all(slots[r][j] == ((r - j) % p, r) for j in range(p)), r
    return steps


def sim_allreduce_rabenseifner_ompi(p, n):
    """Open MPI's redscat_allgather (coll_base_allreduce.c): for p not a power of two the ranks < 2 rem exchange
    halves (even keeps the left half, odd the right), the odd ones send their reduced right half to the even ones
    and drop out; the even ranks < 2 rem and the ranks >= 2 rem run Rabenseifner; the even ones send the result to
    the odd ones at the end."""
    pof2, rem, _ = _pof2(p)
    sim = Reduce(p, pof2, n)
    if rem:
        half = pof2 // 2
        left, right = range(half), range(half, pof2)
        msgs = []
        for r in range(0, 2 * rem, 2):
            msgs += [(r, r + 1, right), (r + 1, r, left)]
        sim.step(msgs)
        sim.step([(r + 1, r, right) for r in range(0, 2 * rem, 2)], combine=False)  # reduced right half
    real = lambda v: 2 * v if v < rem else v + rem  # noqa: E731  (Open MPI keeps the even ranks)
    rng = {v: (0, pof2) for v in range(pof2)}
    masks, m = [], 1
    while m < pof2:
        msgs, new = [], {}
        for v in range(pof2):
            q = v ^ m
            lo, hi = rng[v]
            mid = (lo + hi) // 2
            keep, send = ((lo, mid), (mid, hi)) if real(v) < real(q) else ((mid, hi), (lo, mid))
            msgs.append((real(v), real(q), range(*send)))
            new[v] = keep
        sim.step(msgs)
        rng, masks, m = new, masks + [m], 2 * m
    for m in reversed(masks):
        msgs, new = [], {}
        for v in range(pof2):
            q = v ^ m
            msgs.append((real(v), real(q), range(*rng[v])))
            (a, b), (c, d) = sorted([rng[v], rng[q]])
            assert b == c
            new[v] = (a, d)
        sim.step(msgs, combine=False)
        rng = new
    if rem:
        sim.step([(r, r + 1, range(pof2)) for r in range(0, 2 * rem, 2)], combine=False)
    return sim


def sim_alltoall_scattered(p, n, throttle=32):
    """MPICH MPIR_Alltoall_intra_scattered: blocks of bblock destinations; in block ii rank r posts irecvs from
    (r + i + ii) and isends to (r - i - ii), i < ss, then waits for all of them."""
    sim = Gather([{(r, d) for d in range(p)} for r in range(p)], n)
    bblock = p if throttle == 0 else throttle
    ii = 0
    while ii < p:
        ss = p - ii if p - ii < bblock else bblock
        sends = [(r, (r - i - ii) % p) for r in range(p) for i in range(ss)]
        recvs = {((r + i + ii) % p, r) for r in range(p) for i in range(ss)}
        assert set(sends) == recvs  # every posted send meets a posted receive
        sim.step([(s, d, [(s, d)]) for s, d in sends if s != d])
        ii += bblock
    return sim


def sim_alltoall_ring(p, n):
    """SMPI alltoall-ring.cpp (and Open MPI's pairwise): step i, rank r sends block (r, r+i) to r + i."""
    sim = Gather([{(r, d) for d in range(p)} for r in range(p)], n)
    for i in range(1, p):
        sim.step([(r, (r + i) % p, [(r, (r + i) % p)]) for r in range(p)])
    return sim


def sim_alltoall_linear(p, n):
    sim = Gather([{(r, d) for d in range(p)} for r in range(p)], n)
    sim.step([(r, d, [(r, d)]) for r in range(p) for d in range(p) if d != r])
    return sim


def sim_allgather_bruck(p, n):
    """MPICH MPIR_Allgather_intra_brucks: while pof2 <= p/2 send curr_cnt blocks to rank - pof2 (doubling); then
    the remaining p - pof2 blocks to rank - pof2."""
    sim = Gather([{r} for r in range(p)], n)
    held = [[r] for r in range(p)]  # in Bruck's order: r, r+1, ...
    pof2 = 1
    while pof2 <= p // 2:
        msgs = [(r, (r - pof2) % p, list(held[r])) for r in range(p)]
        sim.step(msgs)
        held = [held[r] + held[(r + pof2) % p] for r in range(p)]
        pof2 *= 2
    rem = p - pof2
    if rem:
        sim.step([(r, (r - pof2) % p, held[r][:rem]) for r in range(p)])
    return sim


def sim_allgather_direct_ring(p, n):
    sim = Gather([{r} for r in range(p)], n)
    for i in range(1, p):
        sim.step([(r, (r + i) % p, [r]) for r in range(p)])
    return sim


def sim_allgather_neighbor_exchange(p, n):
    """Open MPI ompi_coll_base_allgather_intra_neighborexchange, transcribed (odd p: its fallback, the ring)."""
    if p % 2:
        return sim_allgather_ring(p, n)
    sim = Gather([{r} for r in range(p)], n)
    st = {}
    for r in range(p):
        if r % 2 == 0:
            st[r] = dict(nb=[(r + 1) % p, (r - 1) % p], frm=[r, r], off=[2, -2])
        else:
            st[r] = dict(nb=[(r - 1) % p, (r + 1) % p], frm=[(r - 1) % p] * 2, off=[-2, 2])
    sim.step([(r, st[r]["nb"][0], [r]) for r in range(p)])
    send_from = {r: r if r % 2 == 0 else st[r]["frm"][0] for r in range(p)}
    for i in range(1, p // 2):
        par = i % 2
        msgs = []
        for r in range(p):
            s = st[r]
            s["frm"][par] = (s["frm"][par] + s["off"][par]) % p
            msgs.append((r, s["nb"][par], [send_from[r], (send_from[r] + 1) % p]))
        sim.step(msgs)
        for r in range(p):
            send_from[r] = st[r]["frm"][par]
    return sim


def sim_bcast_linear(p, n, root=0):
    sim = Gather([{0} if r == root else set() for r in range(p)], n)
    sim.step([(root, r, [0]) for r in range(p) if r != root])
    return sim


class Chunks:
    """A broadcast's data as chunks of individual sizes: each rank's set of chunk ids. A message carries a set of
    chunks and MPICH's byte count for it (checked against the chunks' sizes); no chunk goes to a rank that holds it.
    :meth:`allgather` starts MPICH's allgather: each rank counts only its own chunk (MPICH's ``curr_size``), while
    its buffer still holds what it forwarded in the scatter (the root: everything); chunks sent again to such a
    buffer are recorded in ``again`` (``(receiver, chunk)``)."""

    def __init__(self, p, root, sizes):
        self.p, self.root, self.sizes = p, root, sizes
        self.have = [set(range(p)) if r == root else set() for r in range(p)]
        self.buffer = None
        self.again: list[tuple[int, int]] = []
        self.steps: list[dict] = []

    def allgather(self):
        self.buffer = [set(h) for h in self.have]
        self.have = [{(r - self.root) % self.p} for r in range(self.p)]

    def step(self, msgs):
        """``msgs``: ``(src, dst, chunk ids, bytes)``; an empty list is no step."""
        if not msgs:
            return
        snap = [set(h) for h in self.have]
        out: dict = defaultdict(float)
        for s, d, chunks, nbytes in msgs:
            chunks = set(chunks)
            assert s != d and chunks <= snap[s], (s, d)
            assert nbytes == pytest.approx(sum(self.sizes[j] for j in chunks), rel=RTOL, abs=TOL["bytes"])
            assert not chunks & self.have[d], (s, d, chunks & self.have[d])
            if self.buffer is not None:
                self.again += [(d, j) for j in sorted(chunks & self.buffer[d])]
            self.have[d] |= chunks
            out[s, d] += nbytes
        self.steps.append(dict(out))


def _mpich_scatter(p, n, root):
    """MPICH MPII_Scatter_for_bcast, run as each rank's program: receive from the parent (lowest set bit of the
    relative rank), then blocking sends to relative + mask, mask from high to low, of ``curr_size - c * mask``
    bytes when positive. Steps as the binomial broadcast's: the send to relative + mask is in step
    L - 1 - log2(mask) (a rank whose larger subtrees lie beyond p waits for that step)."""
    c = math.ceil(n / p)
    sizes = [min(c, max(0.0, n - j * c)) for j in range(p)]
    sim = Chunks(p, root, sizes)
    real = lambda x: (x + root) % p  # noqa: E731
    rounds: dict[int, list] = defaultdict(list)
    ready = {0: (-1, n)}  # relative rank -> (round it has its data, curr_size)
    order = [0]
    while order:
        x = order.pop(0)
        t, curr = ready[x]
        mask = 1
        while mask < p and not x & mask:
            mask <<= 1
        mask >>= 1
        while mask > 0:
            if x + mask < p:
                send = curr - c * mask
                if send > 0:
                    t = (p - 1).bit_length() - 1 - (mask.bit_length() - 1)
                    assert t > ready[x][0]  # after the rank received its data
                    rounds[t].append((real(x), real(x + mask), set(range(x + mask, min(x + 2 * mask, p))), send))
                    ready[x + mask] = (t, send)
                    order.append(x + mask)
                    curr -= send
            mask >>= 1
    for t in sorted(rounds):
        sim.step(rounds[t])
    for x in range(p):  # after the scatter every relative rank holds its own chunk (if it has bytes)
        assert sizes[x] == 0 or x in sim.have[real(x)]
    sim.allgather()
    return sim, sizes, c


def sim_bcast_scatter_recursive_doubling_allgather(p, n, root=0):
    """MPIR_Bcast_intra_scatter_recursive_doubling_allgather transcribed per rank: sendrecv with relative ^ mask
    (when < p) of curr_size bytes; then, where dst_tree_root + mask > p, the fix-up by recursive halving."""
    sim, sizes, c = _mpich_scatter(p, n, root)
    real = lambda x: (x + root) % p  # noqa: E731
    curr = [min(c, max(0.0, n - x * c)) for x in range(p)]
    recv_size = [0.0] * p
    mask, i = 1, 0
    while mask < p:
        msgs = []
        new_curr = list(curr)
        for x in range(p):
            dst = x ^ mask
            if dst < p:
                tree = set(range((x >> i) << i, min(((x >> i) << i) + mask, p)))
                msgs.append((real(x), real(dst), tree, curr[x]))
                recv_size[x] = curr[dst]
                new_curr[x] = curr[x] + curr[dst]
        sim.step(msgs)
        curr = new_curr
        # the fix-up, rank by rank (MPICH's variables: k, tmp_mask, tree_root, nprocs_completed)
        sub = defaultdict(list)  # tmp_mask -> messages
        for x in range(p):
            my_tree_root = (x >> i) << i
            dst_tree_root = ((x ^ mask) >> i) << i
            if dst_tree_root + mask > p:
                nprocs_completed = p - my_tree_root - mask
                k = mask.bit_length() - 1
                tmp_mask = mask >> 1
                while tmp_mask:
                    rel_dst = x ^ tmp_mask
                    tree_root = (x >> k) << k
                    if rel_dst > x and x < tree_root + nprocs_completed and rel_dst >= tree_root + nprocs_completed:
                        sub[tmp_mask].append((x, rel_dst))
                    elif (rel_dst < x and rel_dst < tree_root + nprocs_completed
                          and x >= tree_root + nprocs_completed):
                        sub[tmp_mask].append((rel_dst, x, "recv"))
                    tmp_mask >>= 1
                    k -= 1
        for t in sorted(sub, reverse=True):
            sends = {m for m in sub[t] if len(m) == 2}
            recvs = {m[:2] for m in sub[t] if len(m) == 3}
            assert sends == recvs, (p, mask, t)  # every send meets its receive
            msgs = []
            for x, d in sorted(sends):
                my_tree_root = (x >> i) << i
                chunks = set(range(my_tree_root + mask, min(my_tree_root + 2 * mask, p)))
                msgs.append((real(x), real(d), chunks, recv_size[x]))
            sim.step(msgs)
            for x, d in sends:
                recv_size[d] = recv_size[x]
                curr[d] += recv_size[x]
        mask <<= 1
        i += 1
    assert all(cu == pytest.approx(n, rel=RTOL) for cu in curr)  # MPICH's check: curr_size == nbytes
    return sim


def sim_bcast_scatter_ring_allgather(p, n, root=0):
    """MPIR_Bcast_intra_scatter_ring_allgather transcribed: j = rank, jnext = left; step i sends chunk rel(j)
    to the right, receives chunk rel(jnext) from the left."""
    sim, sizes, c = _mpich_scatter(p, n, root)
    j = list(range(p))
    jnext = [(r - 1) % p for r in range(p)]
    for _ in range(1, p):
        msgs = []
        for r in range(p):
            rel_j = (j[r] - root) % p
            msgs.append((r, (r + 1) % p, {rel_j}, sizes[rel_j]))
        sim.step(msgs)
        j = list(jnext)
        jnext = [(x - 1) % p for x in jnext]
    return sim


SIMS = {
    ("allreduce", "ring"): sim_allreduce_ring,
    ("allreduce", "recursive_doubling"): sim_allreduce_recursive_doubling,
    ("allreduce", "rabenseifner"): sim_allreduce_rabenseifner,
    ("allreduce", "binomial"): sim_allreduce_binomial,
    ("allgather", "ring"): sim_allgather_ring,
    ("allgather", "recursive_doubling"): sim_allgather_recursive_doubling,
    ("alltoall", "pairwise"): sim_alltoall_pairwise,
    ("alltoall", "bruck"): sim_alltoall_bruck,
    ("broadcast", "binomial"): sim_bcast_binomial,
    ("broadcast", "pipelined_ring"): sim_bcast_pipelined_ring,
    ("allreduce", "rabenseifner_ompi"): sim_allreduce_rabenseifner_ompi,
    ("alltoall", "scattered"): sim_alltoall_scattered,
    ("alltoall", "ring"): sim_alltoall_ring,
    ("alltoall", "linear"): sim_alltoall_linear,
    ("allgather", "bruck"): sim_allgather_bruck,
    ("allgather", "direct_ring"): sim_allgather_direct_ring,
    ("allgather", "neighbor_exchange"): sim_allgather_neighbor_exchange,
    ("broadcast", "scatter_recursive_doubling_allgather"): sim_bcast_scatter_recursive_doubling_allgather,
    ("broadcast", "scatter_ring_allgather"): sim_bcast_scatter_ring_allgather,
    ("broadcast", "linear"): sim_bcast_linear,
}


def _complete(op, sim, p):
    if op == "allreduce":
        return sim.complete()
    if op == "allgather":
        return all(h == set(range(p)) for h in sim.have)
    if op == "alltoall":
        return all(h >= {(s, d) for s in range(p)} for d, h in enumerate(sim.have))
    return all(len(h) == len(sim.have[0]) > 0 for h in sim.have)


def _assert_steps_equal(got, want):
    assert len(got) == len(want)
    for k, (g, w) in enumerate(zip(got, want)):
        g = _as_dict(g)
        assert set(g) == set(w), k
        for key in w:
            assert g[key] == pytest.approx(w[key], rel=RTOL), (k, key)


def test_every_algorithm_has_a_simulator():
    assert set(SIMS) == {(op, a) for op, algs in COLLECTIVES.items() for a in algs}
    assert [v[0] for v in COLLECTIVES.values()] == ["ring", "pairwise", "ring", "binomial"]


@pytest.mark.parametrize("op,alg", list(SIMS))
@pytest.mark.parametrize("p", PS)
def test_schedule_is_a_correct_collective_with_the_simulated_bytes(op, alg, p):
    sim = SIMS[op, alg](p, N)
    if op == "alltoall" and alg == "bruck":
        want = sim
    else:
        assert _complete(op, sim, p), (op, alg, p)
        want = sim.steps
    _assert_steps_equal(collective_steps(op, alg, p, N), want)


@pytest.mark.parametrize("p,root", [(5, 3), (6, 5), (7, 1), (8, 6), (12, 7)])
def test_rooted_algorithms_with_another_root(p, root):
    for op, alg, sim in [("broadcast", "binomial", sim_bcast_binomial), ("allreduce", "binomial",
                          sim_allreduce_binomial), ("broadcast", "pipelined_ring", sim_bcast_pipelined_ring),
                         ("broadcast", "linear", sim_bcast_linear),
                         ("broadcast", "scatter_recursive_doubling_allgather",
                          sim_bcast_scatter_recursive_doubling_allgather),
                         ("broadcast", "scatter_ring_allgather", sim_bcast_scatter_ring_allgather)]:
        s = sim(p, N, root)
        assert _complete(op, s, p)
        _assert_steps_equal(collective_steps(op, alg, p, N, root=root), s.steps)
    bc = collective_steps("broadcast", "binomial", p, N, root=root)
    assert root not in np.concatenate([d for _, d, _ in bc])  # nothing is sent to the root


def test_pipelined_ring_segments():
    for p, S in [(2, 1), (3, 5), (6, 3), (9, 16)]:
        sim = sim_bcast_pipelined_ring(p, N, 2 % p, S)
        assert _complete("broadcast", sim, p)
        steps = collective_steps("broadcast", "pipelined_ring", p, N, root=2 % p, n_segments=S)
        _assert_steps_equal(steps, sim.steps)
        assert len(steps) == p - 2 + S
        b = np.concatenate([x for _, _, x in steps])
        np.testing.assert_allclose(b, N / S, rtol=RTOL)
        assert b.sum() == pytest.approx((p - 1) * N, rel=RTOL)


def test_step_counts_match_the_schedules():
    """_n_steps (the memory estimate) is each schedule's length, fix-up steps of the scatter broadcast included."""
    for p in list(range(1, 70)) + [127, 129, 200, 255, 257]:
        for op, algs in COLLECTIVES.items():
            for alg in algs:
                for o in (_Opts(), _Opts(segments=3, throttle=5), _Opts(throttle=0)):
                    got = len(collective_steps(op, alg, p, N, n_segments=o.segments, throttle=o.throttle))
                    assert got == (_n_steps(op, alg, p, o) if p > 1 else 0), (op, alg, p, o)


SCATTER_BCASTS = [("scatter_recursive_doubling_allgather", sim_bcast_scatter_recursive_doubling_allgather),
                  ("scatter_ring_allgather", sim_bcast_scatter_ring_allgather)]


@pytest.mark.parametrize("p", list(range(2, 41)) + [64, 65, 100])
def test_scatter_broadcasts_every_p_root_and_short_chunks(p):
    """MPICH's scatter + allgather broadcasts for every p up to 40 (and a few beyond), several roots and message
    sizes whose ceil(n / p) chunks leave short and empty chunks (97 bytes over 16 ranks: 13 chunks of 7, one of 6,
    two of 0). Every rank ends with every chunk; in the allgather every rank receives every other chunk exactly
    once, so the only chunks it receives twice are those it forwarded in the scatter (the root: all)."""
    for n, root in [(N, 0), (N, p - 1), (97.0, p // 2), (1.0, 0), (10.0, (p + 1) % p), (4 * p - 1.0, 1 % p)]:
        for alg, sim_fn in SCATTER_BCASTS:
            sim = sim_fn(p, n, root)
            assert _complete("broadcast", sim, p) and len(sim.have[0]) == p, (alg, p, n, root)
            for r in range(p):
                own = (r - root) % p
                assert {j for d, j in sim.again if d == r} == sim.buffer[r] - {own}, (alg, p, n, root, r)
            _assert_steps_equal(collective_steps("broadcast", alg, p, n, root=root), sim.steps)


def test_scatter_broadcast_closed_forms():
    """p a power of two dividing n: the scatter sends n (p - 1) / p down the tree (root n / 2 + n / 4 + ...), then
    the recursive-doubling allgather log2 p steps of 2^k n / p per rank, the ring p - 1 steps of n / p per rank."""
    for p in (2, 4, 8, 16):
        n = 1024.0 * p
        st = collective_steps("broadcast", "scatter_recursive_doubling_allgather", p, n)
        L = p.bit_length() - 1
        assert len(st) == 2 * L
        assert sum(b.sum() for _, _, b in st[:L]) == pytest.approx(n * L / 2)  # each level moves n / 2
        for k, (s, d, b) in enumerate(st[L:]):
            np.testing.assert_array_equal(d, s ^ (1 << k))
            np.testing.assert_allclose(b, (1 << k) * n / p)
        st = collective_steps("broadcast", "scatter_ring_allgather", p, n)
        assert len(st) == L + p - 1
        for s, d, b in st[L:]:
            np.testing.assert_array_equal(d, (s + 1) % p)
            np.testing.assert_allclose(b, n / p)


@pytest.mark.parametrize("p", PS + [13, 33])
def test_scattered_alltoall_throttles(p):
    """MPICH's scattered alltoall for throttles 1, 3, 4 (SMPI's mvapich2_scatter_dest), 5, 32 (MPICH's default)
    and 0 (all at once): ceil(p / b) steps; in step j rank x sends to x - i - j b (checked against a transcription
    of MPICH's loops whose posted sends and receives must pair up)."""
    for b in (1, 3, 4, 5, 32, 0):
        sim = sim_alltoall_scattered(p, N, b)
        assert _complete("alltoall", sim, p)
        st = collective_steps("alltoall", "scattered", p, N, throttle=b)
        _assert_steps_equal(st, sim.steps)
        bb = p if b == 0 else min(b, p)
        assert len(st) == -(-p // bb)
        s, d, _ = st[0]
        assert ((s - d) % p < bb).all()  # step 0: the destinations x - 1 ... x - (b - 1)
    lin = collective_steps("alltoall", "linear", p, N)
    _assert_steps_equal(collective_steps("alltoall", "scattered", p, N, throttle=0), [_as_dict(x) for x in lin])


def test_new_algorithms_closed_forms():
    for p in PS:
        for alg in ("scattered", "ring", "linear"):  # every ordered pair exactly once
            M = np.zeros((p, p))
            for s, d, b in collective_steps("alltoall", alg, p, N):
                np.add.at(M, (s, d), b)
            np.testing.assert_allclose(M, N * (1 - np.eye(p)), rtol=RTOL)
        for alg in ("bruck", "direct_ring", "neighbor_exchange"):
            np.testing.assert_allclose(_sent(collective_steps("allgather", alg, p, N), p), (p - 1) * N, rtol=RTOL)
        st = collective_steps("allgather", "direct_ring", p, N)
        for i, (s, d, _) in enumerate(st, 1):
            np.testing.assert_array_equal(d, (s + i) % p)
        st = collective_steps("alltoall", "ring", p, N)
        for i, (s, d, _) in enumerate(st, 1):
            np.testing.assert_array_equal(d, (s + i) % p)
        if p & (p - 1):  # our pairwise is SMPI's ring when p is not a power of two, XOR otherwise
            _assert_steps_equal(collective_steps("alltoall", "pairwise", p, N), [_as_dict(x) for x in st])
        else:
            assert p == 2 or any((d != (s + i) % p).any()
                                 for i, (s, d, _) in enumerate(collective_steps("alltoall", "pairwise", p, N), 1))
        ag = collective_steps("allgather", "bruck", p, N)
        if p & (p - 1):  # recursive_doubling on a non-power of two is Bruck
            _assert_steps_equal(collective_steps("allgather", "recursive_doubling", p, N), [_as_dict(x) for x in ag])
        st = collective_steps("allreduce", "rabenseifner_ompi", p, N)
        pof2 = 1 << (p.bit_length() - 1)
        if pof2 == p:
            _assert_steps_equal(st, [_as_dict(x) for x in collective_steps("allreduce", "rabenseifner", p, N)])
        else:  # Open MPI's fold: halves exchanged (n/2 each way), n/2 back, n at the end
            assert len(st) == 2 * (pof2.bit_length() - 1) + 3
            r = p - pof2
            assert st[0][0].size == 2 * r and st[1][0].size == r and st[-1][0].size == r
            np.testing.assert_allclose(st[0][2], N / 2)
            np.testing.assert_array_equal(st[-1][1], st[-1][0] + 1)  # even ranks send to the odd ones
        st = collective_steps("broadcast", "linear", p, N, root=p - 1)
        assert len(st) == 1 and (st[0][0] == p - 1).all() and sorted(st[0][1]) == list(range(p - 1))


# ---------------------------------------------------------------------------------------------------------------
# algorithm: auto (select_algorithm)
# ---------------------------------------------------------------------------------------------------------------

# (op, p, bytes) -> algorithm, read off MPICH's sources at each threshold (module docstring / docs)
MPICH_CASES = [
    # allreduce: MPIR_CVAR_ALLREDUCE_SHORT_MSG_SIZE = 2048 (<=), count < pof2
    ("allreduce", 8, 2048, "recursive_doubling"), ("allreduce", 8, 2049, "rabenseifner"),
    ("allreduce", 6, 2049, "rabenseifner"), ("allreduce", 4096, 3000, "recursive_doubling"),
    ("allreduce", 4096, 4096, "rabenseifner"), ("allreduce", 2, 1e9, "rabenseifner"),
    # bcast: MPIR_CVAR_BCAST_SHORT_MSG_SIZE 12288 (<), MPIR_CVAR_BCAST_MIN_PROCS 8 (<), LONG 524288 (<)
    ("broadcast", 7, 1e9, "binomial"), ("broadcast", 8, 12287, "binomial"),
    ("broadcast", 8, 12288, "scatter_recursive_doubling_allgather"),
    ("broadcast", 8, 524287, "scatter_recursive_doubling_allgather"),
    ("broadcast", 8, 524288, "scatter_ring_allgather"), ("broadcast", 12, 12288, "scatter_ring_allgather"),
    ("broadcast", 16, 1e5, "scatter_recursive_doubling_allgather"),
    # alltoall: SHORT 256 (<=, p >= 8), MEDIUM 32768 (<=)
    ("alltoall", 8, 256, "bruck"), ("alltoall", 8, 257, "scattered"), ("alltoall", 7, 100, "scattered"),
    ("alltoall", 8, 32768, "scattered"), ("alltoall", 8, 32769, "pairwise"), ("alltoall", 5, 1e6, "pairwise"),
    # allgather: p x n < 524288 and p a power of two; < 81920
    ("allgather", 8, 65535, "recursive_doubling"), ("allgather", 8, 65536, "ring"),
    ("allgather", 8, 10240, "recursive_doubling"),
    ("allgather", 6, 13653, "bruck"), ("allgather", 6, 13654, "ring"), ("allgather", 5, 16383, "bruck"),
    ("allgather", 5, 16384, "ring"),
]
# the tuning file of MPICH 3.4 - 5.0 differs at: allreduce avg_msg_size <= 8, bcast <= 12288 and <= 524288
MPICH4_CHANGES = [
    ("allreduce", 8, 8, "recursive_doubling"), ("allreduce", 8, 9, "rabenseifner"),
    ("allreduce", 8, 2048, "rabenseifner"),
    ("allreduce", 4096, 9, "recursive_doubling"), ("broadcast", 8, 12288, "binomial"),
    ("broadcast", 8, 12289, "scatter_recursive_doubling_allgather"),
    ("broadcast", 8, 524288, "scatter_recursive_doubling_allgather"),
    ("broadcast", 8, 524289, "scatter_ring_allgather"),
    ("broadcast", 12, 12288, "binomial"), ("broadcast", 12, 12289, "scatter_ring_allgather"),
]


@pytest.mark.parametrize("op,p,n,want", MPICH_CASES)
def test_mpich_selection(op, p, n, want):
    alg, params = select_algorithm(op, p, n)
    assert alg == want
    assert params == ({"throttle": 32} if alg == "scattered" else {})
    changed = {(o, q, m): w for o, q, m, w in MPICH4_CHANGES}
    assert select_algorithm(op, p, n, "mpich4")[0] == changed.get((op, p, n), want)


@pytest.mark.parametrize("op,p,n,want", MPICH4_CHANGES)
def test_mpich4_selection(op, p, n, want):
    assert select_algorithm(op, p, n, "mpich4")[0] == want


def test_smpi_mpich_selection_is_the_harness_choice():
    """smpi_mpich against evaluator.bench.smpi.mpich_choice (the harness's transcription of SMPI 3.32's selector,
    checked there against SMPI runs), the SMPI algorithm mapped to ours; SMPI's 'pair' aborts for an odd p."""
    from evaluator.bench.smpi import mpich_choice

    ours = {("allreduce", "rdb"): ("recursive_doubling", {}), ("broadcast", "binomial_tree"): ("binomial", {}),
            ("alltoall", "bruck"): ("bruck", {}), ("alltoall", "mvapich2_scatter_dest"): ("scattered", {"throttle": 4}),
            ("alltoall", "ring"): ("ring", {}), ("allgather", "rdb"): ("recursive_doubling", {}),
            ("allgather", "bruck"): ("bruck", {}), ("allgather", "ring"): ("direct_ring", {})}
    sizes = [1, 8, 255, 256, 2048, 2049, 10240, 10241, 12287, 12288, 13653, 13654, 16384, 32767, 32768, 65535,
             65536, 524287, 524288, 1 << 22]
    for op in COLLECTIVES:
        for p in list(range(2, 19)) + [31, 32, 33, 64]:
            for n in sizes:
                smpi = mpich_choice(op, p, n, effective=True)
                if smpi == "pair":
                    assert p % 2 and p & (p - 1)
                    with pytest.raises(ConfigError, match="'pair'") as e:
                        select_algorithm(op, p, n, "smpi_mpich")
                    assert f"p = {p}" in str(e.value) and e.value.field == "traffic.selection"
                    continue
                assert select_algorithm(op, p, n, "smpi_mpich") == ours[op, smpi], (op, p, n, smpi)
    with pytest.raises(ConfigError, match="root 2"):
        select_algorithm("broadcast", 4, 100, "smpi_mpich", root=2)


# Open MPI's decisions read off coll_tuned_decision_fixed.c / smpi_openmpi_selector.cpp by hand:
# (op, p, bytes) -> (Open MPI algorithm number, ours or None: refused)
OMPI_CASES = [
    ("allreduce", 2, 4, 4, ("ring", {})), ("allreduce", 2, 1, 4, ("recursive_doubling", {})),  # ring: count < p
    ("allreduce", 3, 100000, 5, ("ring", {})), ("allreduce", 3, 300000, 6, ("rabenseifner_ompi", {})),
    ("allreduce", 6, 8191, 3, ("recursive_doubling", {})), ("allreduce", 6, 8192, 6, ("rabenseifner_ompi", {})),
    ("allreduce", 20, 32, 5, ("ring", {})), ("allreduce", 200, 1000, 2, None), ("allreduce", 5000, 100, 2, None),
    ("allreduce", 5000, 20000, 3, ("recursive_doubling", {})),
    ("alltoall", 2, 1, 2, ("ring", {})), ("alltoall", 2, 3, 5, ("linear", {})), ("alltoall", 6, 100, 4, ("linear", {})),
    ("alltoall", 6, 10000, 1, ("linear", {})), ("alltoall", 6, 600000, 2, ("ring", {})),
    ("alltoall", 20, 100, 3, ("bruck", {})), ("alltoall", 100, 300000, 2, ("ring", {})),
    ("broadcast", 2, 10, 3, ("pipelined_ring", {"n_segments": 1})), ("broadcast", 2, 100, 5, ("binomial", {})),
    ("broadcast", 3, 100, 5, None), ("broadcast", 6, 10000, 1, ("linear", {})),
    ("broadcast", 6, 2e6, 2, ("pipelined_ring", {"n_segments": 1})), ("broadcast", 6, 100, 6, None),
    ("broadcast", 12, 8, 5, None), ("broadcast", 12, 7, 7, None), ("broadcast", 20, 2e6, 8,
                                                                    ("scatter_recursive_doubling_allgather", {})),
    ("broadcast", 300, 20000, 4, None), ("broadcast", 5000, 1e6, 8, ("scatter_recursive_doubling_allgather", {})),
    ("allgather", 2, 1e6, 6, ("ring", {})), ("allgather", 6, 1e6, 3, ("recursive_doubling", {})),
    ("allgather", 40, 100, 3, ("recursive_doubling", {})), ("allgather", 40, 2000, 5, ("neighbor_exchange", {})),
    ("allgather", 41, 2000, 5, ("ring", {})), ("allgather", 40, 100000, 4, ("ring", {})),
    ("allgather", 300, 100, 2, ("bruck", {})),
]


@pytest.mark.parametrize("op,p,n,number,want", OMPI_CASES)
def test_ompi_selection(op, p, n, number, want):
    if want is not None:
        assert select_algorithm(op, p, n, "ompi") == want
        return
    with pytest.raises(ConfigError) as e:
        select_algorithm(op, p, n, "ompi")
    msg = str(e.value)
    assert e.value.field == "traffic.selection"
    for needle in (op, f"p = {p}", f"{n:g} bytes", f"algorithm {number}", repr(OMPI_ALGORITHMS[op][number])):
        assert needle in msg, (needle, msg)


def test_ompi_selection_maps_or_refuses_every_choice():
    """Every (op, p, size) either maps to one of our algorithms or is refused naming Open MPI's algorithm."""
    for op in COLLECTIVES:
        for p in (2, 3, 4, 5, 7, 8, 15, 16, 31, 32, 63, 64, 127, 128, 255, 256, 511, 512, 1023, 1024, 2047, 2048,
                  4095, 4096, 8192):
            for n in [1, 2, 3, 4, 7, 8, 16, 32, 63, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536,
                      131072, 262144, 524288, 1048576, 4e6]:
                try:
                    alg, params = select_algorithm(op, p, n, "ompi")
                except ConfigError as e:
                    assert "Open MPI" in str(e) and f"p = {p}" in str(e)
                    continue
                assert alg in COLLECTIVES[op] and set(params) <= {"n_segments"}


def test_auto_collective_names_what_ran():
    t = collective("allreduce", "auto", n_tasks=8, nbytes=1e6)
    assert t.name == "allreduce auto(mpich) -> rabenseifner"
    assert t.phase_names == tuple(f"rabenseifner step {k}" for k in range(6))
    _assert_steps_equal(collective_steps("allreduce", "auto", 8, 1e6),
                        [_as_dict(x) for x in collective_steps("allreduce", "rabenseifner", 8, 1e6)])
    t = collective("alltoall", "auto", n_tasks=8, nbytes=1000.0, selection="smpi_mpich")
    assert t.name == "alltoall auto(smpi_mpich) -> scattered(throttle=4)" and t.n_phases == 2
    t = collective("broadcast", "auto", n_tasks=6, nbytes=2e6, selection="ompi", n_segments=8)
    assert t.name == "broadcast auto(ompi) -> pipelined_ring(n_segments=1)" and t.n_phases == 5
    assert collective("allgather", "auto", n_tasks=6, nbytes=1e6, selection="mpich4").name == \
        "allgather auto(mpich4) -> ring"
    assert set(SELECTIONS) == {"mpich", "mpich4", "smpi_mpich", "ompi"}


# ---------------------------------------------------------------------------------------------------------------
# the optimum segment count of a pipelined ring
# ---------------------------------------------------------------------------------------------------------------

def _brute_force(p, n, B, lam, eager=None, rv=0.0):
    def T(S):
        return (p - 2 + S) * (n / (S * B) + lam + (rv if eager is not None and n / S > eager else 0.0))
    return min(range(1, MAX_SEGMENTS + 1), key=lambda S: (T(S), S))


def test_optimal_segments_is_the_brute_force_minimum():
    for p in (2, 3, 5, 8, 64, 1000):
        for n in (1e3, 1e5, 1e6, 1e9):
            for B in (1e9, 2.5e10):
                for lam in (1e-7, 1e-6, 5e-6):
                    assert optimal_segments(p, n, B, lam) == _brute_force(p, n, B, lam), (p, n, B, lam)
                    for eager in (0.0, 8192.0, 65536.0, 1e6):
                        got = optimal_segments(p, n, B, lam, eager_threshold=eager, rendezvous_latency=2 * lam)
                        assert got == _brute_force(p, n, B, lam, eager, 2 * lam), (p, n, B, lam, eager)
    assert optimal_segments(8, 1e6, 2e9, 0.0) == DEFAULT_SEGMENTS  # no latency: today's default
    assert optimal_segments(2, 1e6, 2e9, 1e-6) == 1  # two ranks: nothing to pipeline
    assert optimal_segments(1000, 1e12, 1e9, 1e-9) == MAX_SEGMENTS  # clamped
    s = math.sqrt(6 * 1e6 / (2e9 * 3e-6))  # the real optimum, 31.6: the better of 31 and 32
    assert optimal_segments(8, 1e6, 2e9, 3e-6) in (math.floor(s), math.ceil(s))


@pytest.mark.parametrize("lat", [Latency(link=(("default", 1e-6),)),
                                 Latency(send_overhead=5e-7, recv_overhead=5e-7, router=1e-7,
                                         link=(("default", 2e-7),), eager_threshold=20000.0)])
def test_pipeline_segments_is_the_evaluators_argmin(lat):
    """The segment count chosen for an 8-ring with a latency model is the argmin of the evaluator's own
    time_with_latency over S = 1 ... 64 (33 for the first model; the second has overheads, router latency and a
    rendezvous threshold: its optimum, 55, is the first S whose segments are eager, beside the rendezvous
    regime's own optimum, 25)."""
    from evaluator import placement

    t = ev.torus([8]).with_latency(lat)
    pl = placement.linear(t, 8)
    n = 1.1e6
    times = np.array([float(ev.evaluate(t, collective("broadcast", "pipelined_ring", n_tasks=8, nbytes=n,
                                                      n_segments=S), pl, ev.dor())["time_with_latency"])
                      for S in range(1, 65)])
    best = int(np.argmin(times)) + 1
    assert np.sort(times)[1] > times.min() * (1 + 1e-9)  # a unique argmin
    S = pipeline_segments(t, 8, n)
    assert S == best == (33 if lat.eager_threshold is None else 55)
    tr = collective("broadcast", "pipelined_ring", n_tasks=8, nbytes=n, topology=t)  # n_segments None: the optimum
    assert tr.n_phases == 8 - 2 + S and tr.name == f"broadcast pipelined_ring (n_segments={S}, the optimum)"
    assert pipeline_segments(ev.torus([8]), 8, n) == DEFAULT_SEGMENTS  # no latency model: today's default
    assert collective("broadcast", "pipelined_ring", n_tasks=8, nbytes=n, topology=ev.torus([8])).n_phases == 14


def test_config_segments_null_throttle_and_selection():
    base = ["topology=torus", "topology.dims=[8]", "routing=dor", "placement=linear", "traffic=collective"]
    cfg = config.to_object(config.compose(base + ["traffic.op=broadcast", "traffic.algorithm=pipelined_ring",
                                                  "traffic.n_segments=null", "topology.latency.wire=1e-6"]))
    point = config.build(cfg)
    S = pipeline_segments(point.topology, 8, 1e6)
    assert S != DEFAULT_SEGMENTS and point.traffic.n_phases == 6 + S
    cfg = config.to_object(config.compose(base + ["traffic.op=broadcast", "traffic.algorithm=pipelined_ring",
                                                  "traffic.n_segments=null"]))
    assert config.build(cfg).traffic.n_phases == 6 + DEFAULT_SEGMENTS  # no latency: 8 segments
    cfg = config.to_object(config.compose(base + ["traffic.op=alltoall", "traffic.algorithm=scattered",
                                                  "traffic.throttle=3"]))
    assert config.build(cfg).traffic.n_phases == 3
    cfg = config.to_object(config.compose(base + ["traffic.op=alltoall", "traffic.algorithm=auto",
                                                  "traffic.bytes=1000", "traffic.selection=smpi_mpich"]))
    tr = config.build(cfg).traffic
    assert tr.name == "alltoall auto(smpi_mpich) -> scattered(throttle=4)" and tr.n_phases == 2
    ds = ev.evaluate(*[getattr(config.build(cfg), k) for k in ("topology", "traffic", "placement", "routing")])
    assert list(ds["phase"].values) == ["scattered step 0", "scattered step 1"]
    cfg = config.to_object(config.compose(base + ["traffic.op=broadcast", "traffic.algorithm=auto",
                                                  "traffic.bytes=100", "traffic.selection=ompi"]))
    with pytest.raises(ConfigError, match="binomial"):
        config.build(cfg)


# ---------------------------------------------------------------------------------------------------------------
# closed forms
# ---------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("p", PS)
def test_closed_forms(p):
    n = N
    lg = math.log2(p)
    pow2 = lg == int(lg)
    L = math.ceil(lg)

    st = collective_steps("allreduce", "ring", p, n)
    assert len(st) == 2 * (p - 1)
    np.testing.assert_allclose(_sent(st, p), 2 * (p - 1) / p * n, rtol=RTOL)

    st = collective_steps("allreduce", "recursive_doubling", p, n)
    if pow2:
        assert len(st) == int(lg)
        for k, (s, d, b) in enumerate(st):
            np.testing.assert_array_equal(np.sort(s), np.arange(p))
            np.testing.assert_array_equal(d, s ^ (1 << k))
            np.testing.assert_allclose(b, n, rtol=RTOL)
    else:  # folded: log2 p' steps of n among p' ranks, plus the pre- and post-step of p - p' messages
        pof2 = 1 << int(lg)
        assert len(st) == int(lg) + 2
        assert [s.size for s, _, _ in st] == [p - pof2] + [pof2] * int(lg) + [p - pof2]
        np.testing.assert_allclose(np.concatenate([b for _, _, b in st]), n, rtol=RTOL)

    st = collective_steps("allreduce", "rabenseifner", p, n)
    if pow2:
        assert len(st) == 2 * int(lg)
        np.testing.assert_allclose(_sent(st, p), 2 * (p - 1) / p * n, rtol=RTOL)
    else:  # ranks of the power-of-two core: 2 (p'-1)/p' n; a folded pair sends n + 2 (p'-1)/p' n between them
        pof2 = 1 << int(lg)
        sent = _sent(st, p)
        rem = p - pof2
        core = 2 * (pof2 - 1) / pof2 * n
        np.testing.assert_allclose(sent[2 * rem:], core, rtol=RTOL)
        np.testing.assert_allclose(sent[:2 * rem].reshape(-1, 2).sum(1), n + core + n, rtol=RTOL)

    st = collective_steps("allreduce", "binomial", p, n)
    assert len(st) == 2 * L
    assert sum(b.sum() for _, _, b in st) == pytest.approx(2 * (p - 1) * n, rel=RTOL)

    st = collective_steps("alltoall", "pairwise", p, n)
    assert len(st) == p - 1
    np.testing.assert_allclose(_sent(st, p), (p - 1) * n, rtol=RTOL)
    M = np.zeros((p, p))
    for s, d, b in st:
        np.add.at(M, (s, d), b)
    np.testing.assert_allclose(M, n * (1 - np.eye(p)), rtol=RTOL)  # every ordered pair exactly once

    st = collective_steps("alltoall", "bruck", p, n)
    assert len(st) == L
    for k, (s, d, b) in enumerate(st):
        bits = sum(1 for j in range(p) if (j >> k) & 1)  # blocks whose index has bit k set, counted
        formula = (p // 2 ** (k + 1)) * 2 ** k + max(0, p % 2 ** (k + 1) - 2 ** k)
        assert bits == formula
        np.testing.assert_allclose(b, bits * n, rtol=RTOL)
        np.testing.assert_array_equal(d, (s + 2 ** k) % p)
    # a power of two: p/2 blocks in every step, (p/2) log2 p in all
    assert not pow2 or all(b[0] == p // 2 * n for _, _, b in st)

    st = collective_steps("allgather", "ring", p, n)
    assert len(st) == p - 1
    np.testing.assert_allclose(_sent(st, p), (p - 1) * n, rtol=RTOL)

    st = collective_steps("allgather", "recursive_doubling", p, n)
    assert len(st) == L
    np.testing.assert_allclose(_sent(st, p), (p - 1) * n, rtol=RTOL)

    st = collective_steps("broadcast", "binomial", p, n)
    assert len(st) == L
    assert sum(b.sum() for _, _, b in st) == pytest.approx((p - 1) * n, rel=RTOL)
    recv = np.concatenate([d for _, d, _ in st])
    np.testing.assert_array_equal(np.sort(recv), np.arange(1, p))  # every other rank receives exactly once


def test_one_rank_and_zero_bytes():
    for op, algs in COLLECTIVES.items():
        for a in algs:
            assert collective_steps(op, a, 1, N) == []
            assert all((b == 0).all() for _, _, b in collective_steps(op, a, 5, 0.0))
    with pytest.raises(ConfigError, match="traffic.n_tasks") as e:
        collective("allreduce", n_tasks=1)
    assert "at least 2 ranks" in str(e.value)
    with pytest.raises(ConfigError, match="traffic.ranks"):
        collective("allreduce", ranks=[3])


def test_phased_traffic_and_ranks():
    t = collective("allreduce", "rabenseifner", n_tasks=6, nbytes=N)
    assert t.n_tasks == 6 and t.name == "allreduce rabenseifner"
    assert t.phase_names == tuple(f"rabenseifner step {k}" for k in range(6))
    assert t.total_bytes == pytest.approx(sum(b.sum() for _, _, b in collective_steps("allreduce",
                                                                                      "rabenseifner", 6, N)))
    assert collective("broadcast", n_tasks=4).phase_names == ("binomial step 0", "binomial step 1")
    # ranks: communicator rank i is task ranks[i]; the job has max(ranks) + 1 tasks unless n_tasks says more
    t = collective("allgather", "ring", ranks=[5, 2, 7], nbytes=10.0)
    assert t.n_tasks == 8 and t.n_phases == 2
    for ph in t.phases:
        assert sorted(zip(ph.src.tolist(), ph.dst.tolist())) == [(2, 7), (5, 2), (7, 5)]
    np.testing.assert_allclose(t.sent_per_task(), [0, 0, 20, 0, 0, 20, 0, 20])
    assert collective("allgather", ranks=[5, 2, 7], n_tasks=12).n_tasks == 12
    bc = collective("broadcast", "binomial", ranks=[4, 0, 9], root=2)
    assert bc.phases[0].src.tolist() == [9]  # the root is rank 2 of the communicator, task 9


# ---------------------------------------------------------------------------------------------------------------
# bad input
# ---------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs,field,needles", [
    (dict(op="allreduc"), "traffic.op", ["'allreduc'", "allgather", "Did you mean 'allreduce'?"]),
    (dict(op=3), "traffic.op", ["3", "broadcast"]),
    (dict(op="allreduce", algorithm="rign"), "traffic.algorithm", ["'rign'", "rabenseifner", "Did you mean 'ring'?"]),
    (dict(op="broadcast", algorithm="ring"), "traffic.algorithm", ["'ring'", "pipelined_ring", "binomial"]),
    (dict(op="alltoall", algorithm="rabenseifner"), "traffic.algorithm",
     ["['pairwise', 'bruck', 'scattered', 'ring', 'linear']", "allreduce", "'auto'"]),
    (dict(op="alltoall", algorithm="scattered", throttle=-1), "traffic.throttle", ["-1", ">= 0"]),
    (dict(op="alltoall", algorithm="auto", selection="mpch"), "traffic.selection",
     ["'mpch'", "smpi_mpich", "Did you mean 'mpich'?"]),
    (dict(op="broadcast", root=4), "traffic.root", ["4", "[0, 3]"]),
    (dict(op="broadcast", root=-1), "traffic.root", ["-1"]),
    (dict(op="broadcast", root=1.5), "traffic.root", ["1.5"]),
    (dict(op="allreduce", n_tasks=0), "traffic.n_tasks", ["0"]),
    (dict(op="allreduce", n_tasks=2.5), "traffic.n_tasks", ["2.5"]),
    (dict(op="allreduce", nbytes=-1.0), "traffic.bytes", ["-1.0"]),
    (dict(op="allreduce", nbytes=0.0), "traffic.bytes", ["0.0"]),
    (dict(op="broadcast", algorithm="pipelined_ring", n_segments=0), "traffic.n_segments", ["0"]),
    (dict(op="allgather", ranks=[1, 1]), "traffic.ranks", ["[1, 1]", "distinct"]),
    (dict(op="allgather", ranks=[0, -2]), "traffic.ranks", ["-2"]),
    (dict(op="allgather", ranks=[0, 6], n_tasks=5), "traffic.n_tasks", ["5", "> 6"]),
])
def test_bad_input_names_field_value_and_allowed(kwargs, field, needles):
    kw = dict(n_tasks=4)
    kw.update(kwargs)
    if "ranks" in kw and "n_tasks" not in kwargs:
        kw.pop("n_tasks")
    with pytest.raises(ConfigError) as e:
        collective(**kw)
    assert e.value.field == field
    for needle in needles:
        assert needle in str(e.value), (needle, str(e.value))


# ---------------------------------------------------------------------------------------------------------------
# the config kind, evaluated on a ring against a per-flow walk
# ---------------------------------------------------------------------------------------------------------------

def _ring_walk_time(phase, p, link_bw, inj_bw):
    """Completion time of one phase on a 1-D torus of p routers, one node each, linear placement, shortest
    direction (a pair half a ring apart split evenly between the two directions)."""
    load = defaultdict(float)  # (router, +1/-1) -> bytes on the link leaving router in that direction
    inj = np.zeros(p)
    ej = np.zeros(p)
    for s, d, b in zip(phase.src.tolist(), phase.dst.tolist(), phase.nbytes.tolist()):
        if s == d:
            continue
        inj[s] += b
        ej[d] += b
        fwd = (d - s) % p
        for direction, hops, share in ((1, fwd, 1.0), (-1, p - fwd, 1.0)):
            if 2 * hops == p:
                share = 0.5
            elif 2 * hops > p:
                continue
            for h in range(hops):
                load[(s + direction * h) % p, direction] += share * b
    return max(max(load.values()) / link_bw, inj.max() / inj_bw, ej.max() / inj_bw)


@pytest.mark.parametrize("op,alg,extra", [
    ("allreduce", "recursive_doubling", []),
    ("allreduce", "rabenseifner", []),
    ("alltoall", "bruck", []),
    ("broadcast", "pipelined_ring", ["traffic.root=3", "traffic.n_segments=3"]),
])
def test_config_kind_evaluates_phase_times_per_step(op, alg, extra):
    p = 6
    cfg = config.to_object(config.compose([
        "topology=torus", f"topology.dims=[{p}]", "routing=dor", "placement=linear", "traffic=collective",
        f"traffic.op={op}", f"traffic.algorithm={alg}", "traffic.bytes=6e6", *extra]))
    assert type(cfg.traffic) is KINDS["collective"].schema
    point = config.build(cfg)
    tr = point.traffic
    want_steps = collective_steps(op, alg, p, 6e6, root=cfg.traffic.root, n_segments=cfg.traffic.n_segments)
    assert tr.n_tasks == p and tr.n_phases == len(want_steps)
    ds = ev.evaluate(point.topology, tr, point.placement, point.routing)
    assert list(ds["phase"].values) == [f"{alg} step {k}" for k in range(len(want_steps))]
    bw = float(cfg.topology.link_bandwidth)
    want = [_ring_walk_time(ph, p, bw, 2 * bw) for ph in tr.phases]
    np.testing.assert_allclose(ds["phase_completion_time"].values, want, rtol=TOL["rel_sum"])
    assert float(ds.completion_time) == pytest.approx(sum(want), rel=TOL["rel_sum"])
    assert float(ds.total_bytes) == pytest.approx(sum(b.sum() for _, _, b in want_steps), rel=RTOL)


def test_config_defaults_and_bad_values():
    cfg = config.to_object(config.compose(["topology=torus", "topology.dims=[4,2]", "routing=dor",
                                           "placement=linear", "traffic=collective"]))
    t = cfg.traffic
    assert (t.op, t.algorithm, t.n_tasks, t.root, t.n_segments) == ("allreduce", None, None, 0, 8)
    tr = config.build(cfg).traffic  # n_tasks null: one task per node; allreduce by ring
    assert tr.n_tasks == 8 and tr.phase_names[-1] == "ring step 13"
    for override, field, needle in [("traffic.op=alltoal", "traffic.op", "Did you mean 'alltoall'?"),
                                    ("traffic.algorithm=bruck", "traffic.algorithm", "alltoall"),
                                    ("traffic.root=8", "traffic.root", "[0, 7]"),
                                    ("traffic.n_tasks=1", "traffic.n_tasks", "at least 2 ranks")]:
        cfg = config.to_object(config.compose(["topology=torus", "topology.dims=[4,2]", "routing=dor",
                                               "placement=linear", "traffic=collective", override]))
        with pytest.raises(ConfigError) as e:
            config.build(cfg)
        assert e.value.field == field and needle in str(e.value), str(e.value)
