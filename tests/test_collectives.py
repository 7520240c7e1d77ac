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
  per-step completion times are compared with a per-flow walk of the ring written here.
"""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np
import pytest

import evaluator as ev
from evaluator import config
from evaluator.errors import ConfigError
from evaluator.traffic import COLLECTIVES, KINDS, collective, collective_steps

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
                          sim_allreduce_binomial), ("broadcast", "pipelined_ring", sim_bcast_pipelined_ring)]:
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
    (dict(op="alltoall", algorithm="rabenseifner"), "traffic.algorithm", ["['pairwise', 'bruck']", "allreduce"]),
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
