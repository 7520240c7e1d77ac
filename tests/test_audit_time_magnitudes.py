"""Audit of the time models beyond the bandwidth bound at extreme magnitudes (docs/latency.md).

``time_with_latency`` (the latency model) and ``time_max_min`` (flow-level max-min sharing, flow- and rtt-fair,
``progression`` phase and rank) hold tolerances that must stay *relative*: the saturation-level and finish-time ties
of :mod:`evaluator.flowlevel` (``REL_TIE``, relative to the level and to the event's interval), the consistency check
of the latency pass (relative to its sum). An absolute epsilon (in seconds, bytes or bytes/s) or an equality that
decides which flows finish would be right at one physical scale and silently wrong at another. Pinned here:

* power-of-two rescaling (bytes x 2^a, bandwidth x 2^b, starts and latencies x 2^(a-b), weights x 2^c) changes
  every finish time by exactly 2^(a-b), bit for bit: no operation in the simulation may depend on the absolute
  scale (every result is also checked against the exact reference below);
* random instances whose capacities span 1e3..1e13 B/s, bytes 1..1e12, starts and latencies 1e-10..1 s, weights
  1..1e10, rescaled by decimal factors 1e-9..1e12, against an exact reference: an event-driven weighted max-min
  simulation in ``fractions.Fraction`` written here (bottleneck form: each round the link of least residual
  capacity per unfrozen weight freezes its flows), run on the very floats handed to the code; the rank progression
  (eager and rendezvous messages) the same way, a message posted when the messages it waits for have arrived;
* events 2e-16 s to 2e9 s apart (never merged), finishes 1 ulp apart and many simultaneous ones, 20,000 equal tiny
  flows beside one of 1e12 bytes on one link, 1,500 distinct sizes on one link (closed forms);
* ``evaluate``: ``time_with_latency`` (the bound plus the closed-form latency sum of docs/latency.md) and
  ``time_max_min`` (phase and rank progression, flow- and rtt-fair) on a line whose link bandwidths, latencies and
  message sizes differ by up to 12 orders of magnitude, and rescaled; ``evaluate_jobs`` with 1-byte and 1e12-byte
  jobs. Every comparison is relative (1e-9), with no absolute tolerance.
"""

from __future__ import annotations

from fractions import Fraction as Q

import numpy as np
import pytest

import evaluator as ev
from evaluator import placement, traffic
from evaluator._batch.flowlevel import max_min_batch, progress_batch
from evaluator.jobs import Job, evaluate_jobs
from evaluator.latency import Latency

RTOL = 1e-9


# -- the exact reference ---------------------------------------------------------------------------------------------

def exact_rates(paths, cap, act, w):
    """Weighted max-min rates (exact) of the flows ``act``: each round, the links' residual capacity per unfrozen
    weight (``w x fraction``); the least of them is the round's level; every unfrozen flow crossing a link at that
    level freezes at ``w x level``. A flow crossing no link: None (no bound)."""
    rate = {f: None for f in act if not paths[f]}
    todo = [f for f in act if paths[f]]
    left = {lk: Q(c) for lk, c in enumerate(cap)}
    while todo:
        share = {}
        for lk in left:
            d = sum((w[f] * paths[f][lk] for f in todo if lk in paths[f]), Q(0))
            if d > 0:
                share[lk] = left[lk] / d
        x = min(share.values())
        tight = {lk for lk, v in share.items() if v == x}
        hit = [f for f in todo if tight & paths[f].keys()]
        for f in hit:
            rate[f] = w[f] * x
            for lk, fr in paths[f].items():
                left[lk] -= rate[f] * fr
        todo = [f for f in todo if f not in hit]
    return rate


def exact_finish(paths, cap, nbytes, delay, w=None, deps=None):
    """Exact finish time of every message with bytes (None: 0 bytes, no message). Message ``f`` begins ``delay[f]``
    after the last of the messages ``deps[f]`` has arrived (after 0 without any), then shares the links max-min
    fairly with weight ``w[f]``; rates are recomputed at every begin and arrival."""
    F = len(paths)
    cap = [Q(c) for c in cap]
    w = [Q(1)] * F if w is None else [Q(x) for x in w]
    deps = [()] * F if deps is None else deps
    rem = {f: Q(nbytes[f]) for f in range(F) if nbytes[f] > 0}
    fin: dict = {}
    now = Q(0)
    while rem:
        ready = {f: max((fin[g] for g in deps[f] if g in fin), default=Q(0)) + Q(delay[f]) for f in rem
                 if all(g in fin or nbytes[g] == 0 for g in deps[f])}
        act = [f for f in rem if f in ready and ready[f] <= now]
        if not act:
            now = min(ready.values())
            continue
        r = exact_rates(paths, cap, act, w)
        if any(r[f] is None for f in act):
            for f in [f for f in act if r[f] is None]:
                fin[f] = now
                del rem[f]
            continue
        dt = min(rem[f] / r[f] for f in act)
        later = [t for t in ready.values() if t > now]
        dt = min([dt] + [t - now for t in later])
        for f in act:
            rem[f] -= r[f] * dt
            if rem[f] == 0:
                fin[f] = now + dt
                del rem[f]
        now += dt
    return [fin.get(f) for f in range(F)]


def close(got, want, what: str) -> None:
    """Relative agreement (no absolute tolerance) of finish times; None in ``want``: no message (skipped)."""
    got = np.asarray(got, float).ravel()
    keep = [i for i, x in enumerate(want) if x is not None]
    w = np.array([float(want[i]) for i in keep])
    np.testing.assert_allclose(got[keep], w, rtol=RTOL, atol=0, err_msg=what)


# -- random instances, stacked for the batched kernels ---------------------------------------------------------------

def instance(rng, F: int, L: int):
    """``(paths, cap, nbytes, start, weight)`` over 12 orders of magnitude; fractions 1, 1/2, 1/4 (exact floats)."""
    paths = []
    for _ in range(F):
        links = rng.choice(L, int(rng.integers(1, 4)), replace=False)
        paths.append({int(lk): Q(1, int(rng.choice([1, 2, 4]))) for lk in links})
    cap = [float(10 ** rng.uniform(3, 13)) for _ in range(L)]
    nb = [float(np.round(10 ** rng.uniform(0, 12))) for _ in range(F)]
    start = [0.0 if rng.random() < 0.4 else float(10 ** rng.uniform(-10, 0)) for _ in range(F)]
    weight = [float(10 ** rng.uniform(0, 10)) for _ in range(F)]
    nb[0] = 1.0
    nb[1] = 1e12
    paths[2] = dict(paths[1])  # two flows on one path: a 1-byte one beside the 1e12-byte one
    nb[2] = 1.0
    return paths, cap, nb, start, weight


def stack(insts, F: int, K: int, L: int, a=1.0, b=1.0, c=1.0):
    """Arrays ``[point, ...]`` of the instances, bytes x ``a``, capacity x ``b``, starts x ``a / b``, weights x
    ``c``: ``(links, frac, cap, nbytes, start, weight)``."""
    n = len(insts)
    links, frac = -np.ones((n, F, K), np.int32), np.zeros((n, F, K))
    cap, nb, st, w = np.ones((n, L)), np.zeros((n, F)), np.zeros((n, F)), np.ones((n, F))
    for i, (paths, cp, by, s, wt) in enumerate(insts):
        for f, p in enumerate(paths):
            for k, (lk, x) in enumerate(p.items()):
                links[i, f, k], frac[i, f, k] = lk, float(x)
        cap[i, :len(cp)] = np.array(cp) * b
        nb[i, :len(by)] = np.array(by) * a
        st[i, :len(s)] = np.array(s) * (a / b)
        w[i, :len(wt)] = np.array(wt) * c
    return links, frac, cap, nb, st, w


F_, K_, L_ = 10, 4, 6


@pytest.fixture(scope="module")
def insts():
    rng = np.random.default_rng(2027)
    return [instance(rng, F_, L_) for _ in range(4)]


# -- 1. power-of-two rescaling: bit for bit ---------------------------------------------------------------------------

POW2 = [(-30, 10, 0), (40, -10, 20), (-20, 33, -33), (10, 10, 5)]  # (bytes, bandwidth, weight) exponents of 2


@pytest.mark.parametrize("weighted", [False, True], ids=["flow", "weighted"])
def test_power_of_two_rescaling_is_exact(insts, weighted):
    """Bytes x 2^a, capacities x 2^b, starts x 2^(a-b), weights x 2^c: every finish time is the base one times
    2^(a-b) exactly (float multiplications by powers of two are exact, so any absolute epsilon, in seconds, bytes or
    bytes/s, shows as a difference), and every run agrees with the exact reference on its own inputs."""
    base = None
    for a, b, c in [(0, 0, 0)] + POW2:
        links, frac, cap, nb, st, w = stack(insts, F_, K_, L_, 2.0 ** a, 2.0 ** b, 2.0 ** c)
        got = max_min_batch(links, frac, cap, nb, st, "flow", flow_weight=w if weighted else None)
        if base is None:
            base = got
        else:
            assert np.array_equal(got, base * 2.0 ** (a - b)), (a, b, c)
        if (a, b, c) in [(0, 0, 0), POW2[1]]:
            for i, (paths, *_) in enumerate(insts):
                want = exact_finish(paths, cap[i], nb[i], st[i], w[i] if weighted else None)
                close(got[i], want, f"instance {i}, scale 2^{a} B, 2^{b} B/s")


# -- 2. decimal rescaling over the whole range, against the exact reference ------------------------------------------

DECIMAL = [(1e-9, 1e3), (1e12, 1e-3), (1e6, 1e6), (1e-3, 1e-9)]  # (bytes factor, bandwidth factor)


@pytest.mark.parametrize("a,b", DECIMAL, ids=[f"{a:g}B-{b:g}Bps" for a, b in DECIMAL])
def test_decimal_rescaling_against_exact_reference(insts, a, b):
    """Capacities 1e3..1e13 B/s times ``b``, bytes 1..1e12 times ``a``, starts 1e-10..1 s times ``a / b``, flow-
    fair and weighted (1..1e10): every flow's finish time equals the exact simulation of the same floats, and the
    base instance's times times ``a / b`` (relative 1e-9)."""
    links, frac, cap, nb, st, w = stack(insts, F_, K_, L_, a, b)
    flow = max_min_batch(links, frac, cap, nb, st, "flow")
    weighted = max_min_batch(links, frac, cap, nb, st, "flow", flow_weight=w)
    for i, (paths, *_rest) in enumerate(insts):
        close(flow[i], exact_finish(paths, cap[i], nb[i], st[i]), f"flow-fair {i}")
        want = exact_finish(paths, cap[i], nb[i], st[i], w[i])
        close(weighted[i], want, f"weighted {i}")
        base = exact_finish(paths, insts[i][1], insts[i][2], insts[i][3], insts[i][4])
        close(weighted[i] / (a / b), base, f"weighted {i}, unscaled")


# -- 3. rank progression at extreme magnitudes -----------------------------------------------------------------------

def progress_case(rng, R: int, S: int, M: int, L: int):
    """Messages among ``R`` ranks in ``S`` steps, eager and rendezvous, over 12 orders of magnitude."""
    paths, snd, rcv, stp, nb, lat, rdv = [], [], [], [], [], [], []
    for _ in range(M):
        paths.append({int(lk): Q(1, int(rng.choice([1, 2]))) for lk in rng.choice(L, int(rng.integers(1, 3)),
                                                                             replace=False)})
        s, r = rng.choice(R, 2, replace=False)
        snd.append(int(s)), rcv.append(int(r)), stp.append(int(rng.integers(0, S)))
        nb.append(float(np.round(10 ** rng.uniform(0, 12))))
        lat.append(float(10 ** rng.uniform(-10, 0)))
        rdv.append(bool(rng.random() < 0.4))
    cap = [float(10 ** rng.uniform(3, 13)) for _ in range(L)]
    return paths, cap, nb, lat, snd, rcv, stp, rdv


def progress_deps(snd, rcv, stp, rdv):
    """What each message waits for (max_min_progress's definition): its sender done with the steps before its own
    (every message received there, every rendezvous message sent there), and for a rendezvous message its
    receiver too."""
    M = len(snd)

    def done(rank, k):
        return {g for g in range(M) if stp[g] < k and (rcv[g] == rank or (snd[g] == rank and rdv[g]))}

    return [tuple(done(snd[f], stp[f]) | (done(rcv[f], stp[f]) if rdv[f] else set())) for f in range(M)]


@pytest.mark.parametrize("a,b", [(1.0, 1.0), (1e-9, 1e4), (1e6, 1e-2)], ids=["base", "small", "large"])
def test_rank_progression_against_exact_reference(a, b):
    """``progression=rank`` (:func:`progress_batch`): every message's arrival equals the exact simulation in which
    a message begins its latency when the messages it waits for have arrived; bytes x ``a``, bandwidth x ``b``,
    latencies x ``a / b`` (1e-19..1e4 s, 1e-9..1e18 bytes)."""
    rng = np.random.default_rng(31)
    R, S, M, L, n = 4, 3, 10, 5, 4
    cases = [progress_case(rng, R, S, M, L) for _ in range(n)]
    links, frac = -np.ones((n, M, 2), np.int32), np.zeros((n, M, 2))
    for i, c in enumerate(cases):
        for f, p in enumerate(c[0]):
            for k, (lk, x) in enumerate(p.items()):
                links[i, f, k], frac[i, f, k] = lk, float(x)
    cap = np.array(cases[0][1]) * b
    nb = np.array([c[2] for c in cases]) * a
    lat = np.array([c[3] for c in cases]) * (a / b)
    snd, rcv, stp, rdv = (np.array([c[j] for c in cases]) for j in (4, 5, 6, 7))
    _, fin = progress_batch(links, frac, cap, nb, lat, snd, rcv, stp, rdv, R, S)
    for i, c in enumerate(cases):
        deps = progress_deps(c[4], c[5], c[6], c[7])
        close(fin[i], exact_finish(c[0], cap, nb[i], lat[i], deps=deps), f"case {i}")


# -- 4. events far apart or together, at tiny and huge time scales ---------------------------------------------------

def one_link_case(cap: float, nbytes, start=None):
    """Flows all on link 0 (of capacity ``cap``): arrays ``[1, F, 1]`` for :func:`max_min_batch`."""
    F = len(nbytes)
    start = np.zeros(F) if start is None else np.asarray(start, float)
    return (np.zeros((1, F, 1), np.int32), np.ones((1, F, 1)), np.array([cap]), np.asarray(nbytes, float)[None],
            start[None])


@pytest.mark.parametrize("cap,unit", [(1e15, 1.0), (1e3, 1e12), (1e13, 1e-3)], ids=["fs", "Gs", "mixed"])
def test_distinct_events_are_never_merged(cap, unit):
    """Three flows of 1, 2 and 4 units on one link: the finishes are 3, 5 and 7 units / cap (3e-15..7e-15 s at
    1e15 B/s with 1-byte units; 3e9..7e9 s at 1e3 B/s with 1e12-byte units); a fourth of 1 unit starting at 4
    units / cap moves them to 3, 5.5, 8 and 6.5 units / cap. An absolute time epsilon (or one in bytes) would merge
    or shift them at one of these scales."""
    nb = [unit, 2 * unit, 4 * unit]
    got = max_min_batch(*one_link_case(cap, nb), "flow")[0]
    np.testing.assert_allclose(got, np.array([3, 5, 7]) * unit / cap, rtol=RTOL, atol=0)
    t4 = 4 * unit / cap  # a fourth flow of 1 unit starts after flow 0 ended (3 units / cap), before flow 1 (5)
    got = max_min_batch(*one_link_case(cap, nb + [unit], [0, 0, 0, t4]), "flow")[0]
    want = exact_finish([{0: Q(1)}] * 4, [cap], nb + [unit], [0, 0, 0, t4])
    close(got, want, "late start")
    np.testing.assert_allclose(got, np.array([3, 5.5, 8, 6.5]) * unit / cap, rtol=RTOL, atol=0)
    assert got[0] < t4 < got[1] < got[3] < got[2]


@pytest.mark.parametrize("cap", [1e3, 1e13])
def test_finishes_one_ulp_apart_and_many_together(cap):
    """64 flows of one size and one 1 ulp larger share a link, with a second link of 64 flows of another size: the
    tied flows finish together at the exact time, the larger one within 1e-12 of it; 64 identical flows on 64
    separate links of equal capacity all finish at once; a flow started at the tie instant then has the link
    alone."""
    b = 0.1 * cap  # 0.1 s of the link alone
    big = np.nextafter(b, np.inf)
    F = 64 + 1 + 64 + 1
    links = np.zeros((1, F, 1), np.int32)
    links[0, 65:129, 0] = np.arange(1, 65)
    links[0, 129, 0] = 0
    nb = np.array([b] * 64 + [big] + [3 * b] * 64 + [b])[None]
    tie = 65 * b / cap
    start = np.zeros((1, F))
    start[0, 129] = tie
    cap_ = np.full(65, cap)
    got = max_min_batch(links, np.ones((1, F, 1)), cap_, nb, start, "flow")[0]
    paths = [{int(lk): Q(1)} for lk in links[0, :, 0]]
    want = exact_finish(paths, cap_, nb[0], start[0])
    close(got, want, "ties")
    assert want[64] > want[0]  # (the reference separates the ulp)
    np.testing.assert_allclose(got[:64], float(want[0]), rtol=RTOL, atol=0)
    np.testing.assert_allclose(got[65:129], 0.3, rtol=RTOL, atol=0)


# -- 5. many flows: accumulation on one link -------------------------------------------------------------------------

def water_fill(cap, sizes):
    """Exact finish times of flows all starting at 0 on one link (flow-fair): sorted, each finish adds the size
    step times the flows still running, over the capacity."""
    order = np.argsort(sizes, kind="stable")
    out = [None] * len(sizes)
    t, prev = Q(0), Q(0)
    n = len(sizes)
    for j, f in enumerate(order):
        s = Q(float(sizes[f]))
        t += (s - prev) * (n - j) / Q(cap)
        prev = s
        out[f] = t
    return out


def test_many_tiny_flows_beside_one_huge():
    """20,000 flows of 1 byte and one of 1e12 bytes on a link of 1e13 B/s: the tiny ones all finish at 20,001 /
    1e13 s (one event, their rates summed 20,000 times on the link), the huge one at (1e12 + 20,000) / 1e13 s;
    and 1,500 distinct sizes (1 byte to 1e12, geometric) on a link of 1e3 B/s: every finish the water-filling
    closed form."""
    n = 20_000
    nb = [1.0] * n + [1e12]
    got = max_min_batch(*one_link_case(1e13, nb), "flow")[0]
    np.testing.assert_allclose(got[:n], 20_001 / 1e13, rtol=RTOL, atol=0)
    assert got[n] == pytest.approx((1e12 + n) / 1e13, rel=RTOL, abs=0)
    sizes = np.round(np.geomspace(1.0, 1e12, 1500))
    got = max_min_batch(*one_link_case(1e3, sizes[::-1]), "flow")[0]
    close(got, water_fill(1e3, sizes[::-1]), "1,500 sizes")


def test_many_small_rates_leave_the_rest_to_one_flow():
    """A link of 1e13 B/s carries 3,000 flows each held to 0.1 B/s by its own slow link and one flow alone elsewhere:
    that flow gets 1e13 - 300 B/s (the residual after 3,000 small rates), every small flow 0.1 B/s."""
    m = 3000
    F = m + 1
    links = np.full((1, F, 2), -1, np.int32)
    links[0, :m, 0], links[0, :m, 1] = 0, np.arange(1, m + 1)
    links[0, m, 0] = 0
    cap = np.concatenate([[1e13], np.full(m, 0.1)])
    nb = np.concatenate([np.full(m, 1.0), [1e13]])[None]
    got = max_min_batch(links, (links >= 0).astype(float), cap, nb, np.zeros((1, F)), "flow")[0]
    np.testing.assert_allclose(got[:m], 10.0, rtol=RTOL, atol=0)
    # the big flow: 10 s at 1e13 - 300 B/s, then its rest alone at 1e13
    want = Q(10) + (Q(10 ** 13) - 10 * (Q(10 ** 13) - Q(float(np.sum(np.full(m, 0.1)))))) / Q(10 ** 13)
    assert got[m] == pytest.approx(float(want), rel=RTOL, abs=0)


# -- 6. evaluate: the latency sum and max-min sharing on a line of mixed magnitudes ----------------------------------

def line(bw: float, inj: float, t: float):
    """A line of 4 routers (one node each), router links of ``bw`` B/s, node links of ``inj``; latencies times
    ``t``: overheads 1e-10 + 2e-10 s, router 3e-10 s, wires 1 s (router links), 4e-10 s (injection), 5e-10 s
    (ejection); rendezvous (one round trip) above 1e9 bytes."""
    lat = Latency(send_overhead=1e-10 * t, recv_overhead=2e-10 * t, router=3e-10 * t,
                  link=(("torus-dim0", 1.0 * t), ("injection", 4e-10 * t), ("ejection", 5e-10 * t)),
                  eager_threshold=1e9, rendezvous_round_trips=1)
    return ev.torus([4], wrap=False, link_bandwidth=bw, injection_bandwidth=inj).with_latency(lat)


def line_path(topo, s: int, d: int) -> dict:
    """``{link: 1}`` of a message from node ``s`` to node ``d`` (routers s..d), from the link endpoints."""
    ls, ld = np.asarray(topo.link_src), np.asarray(topo.link_dst)
    index = {(int(a), int(b)): k for k, (a, b) in enumerate(zip(ls, ld)) if a >= 0 and b >= 0}
    n_rl, n = topo.n_router_links, topo.n_nodes
    p = {n_rl + s: Q(1), n_rl + n + d: Q(1)}
    step = 1 if d > s else -1
    for r in range(s, d, step):
        p[index[(r, r + step)]] = Q(1)
    return p


def line_latency(lat: Latency, path: dict, hops: int, b: float) -> Q:
    """docs/latency.md's sum, exact: overheads, each link's wire, a router per router link plus one, times
    1 + 2 R above the eager threshold."""
    one = Q(lat.send_overhead) + Q(lat.recv_overhead) + Q(lat.wire("injection")) + Q(lat.wire("ejection"))
    one += hops * Q(lat.wire("torus-dim0")) + (hops + 1) * Q(lat.router)
    return one * (1 + 2 * lat.rendezvous_round_trips) if b > lat.eager_threshold else one


PHASES = [([0, 1, 3], [3, 2, 2], [1.0, 1e12, 1e6]), ([3, 2], [0, 1], [1e12, 1.0])]  # (src, dst, bytes) per phase


def line_reference(topo, scale_bytes: float, fairness: str):
    """Per phase ``(bound, max latency, finishes)`` and the rank progression's finishes, exact."""
    lat, cap = topo.latency, [Q(c) for c in np.asarray(topo.capacity)]
    out, allp, alll, allb, snd, rcv, stp = [], [], [], [], [], [], []
    for k, (src, dst, nb) in enumerate(PHASES):
        nb = [b * scale_bytes for b in nb]
        paths = [line_path(topo, s, d) for s, d in zip(src, dst)]
        lam = [line_latency(lat, p, abs(d - s), b) for p, s, d, b in zip(paths, src, dst, nb)]
        load: dict = {}
        for p, b in zip(paths, nb):
            for lk in p:
                load[lk] = load.get(lk, Q(0)) + Q(b)
        bound = max(v / cap[lk] for lk, v in load.items())
        w = [1 / x for x in lam] if fairness == "rtt" else None
        out.append((bound, max(lam), exact_finish(paths, cap, nb, lam, w)))
        allp += paths
        alll += lam
        allb += nb
        snd, rcv, stp = snd + src, rcv + dst, stp + [k] * len(src)
    rdv = [b > lat.eager_threshold for b in allb]
    deps = progress_deps(snd, rcv, stp, rdv)
    w = [1 / x for x in alll] if fairness == "rtt" else None
    return out, exact_finish(allp, cap, allb, alll, w, deps)


LINES = [(1e3, 1e13, 1.0, 1.0), (1e13, 1e3, 1e-9, 1.0), (1e9, 1e9, 1.0, 1e-9), (1e12, 1e12, 1e3, 1e12)]


@pytest.mark.parametrize("bw,inj,t,s", LINES, ids=["slow-links", "slow-nodes", "small-bytes", "huge"])
def test_evaluate_times_on_a_line_of_mixed_magnitudes(bw, inj, t, s):
    """Two phases on a line: 1-byte, 1e6-byte and 1e12-byte messages (times ``s``), router links and node links 10
    orders of magnitude apart, latencies 1e-10 s beside 1 s (times ``t``), rendezvous above 1e9 bytes:
    ``completion_time`` and ``time_with_latency`` (per phase and in all) are the exact bound and latency sum,
    ``time_max_min`` and every ``message_finish_time`` the exact simulation, flow- and rtt-fair, phase- and
    rank-progressed."""
    topo = line(bw, inj, t)
    tr = traffic.phased([traffic.from_flows(4, src, dst, np.array(nb) * s) for src, dst, nb in PHASES])
    pl = placement.linear(topo, 4)
    for fairness in ("flow", "rtt"):
        phases, ranked = line_reference(topo, s, fairness)
        ds = ev.evaluate(topo, tr, pl, "dor", sharing="max_min", fairness=fairness)
        bound = np.array([float(b) for b, _, _ in phases])
        lam = np.array([float(x) for _, x, _ in phases])
        np.testing.assert_allclose(ds.phase_completion_time.values, bound, rtol=RTOL, atol=0)
        np.testing.assert_allclose(ds.phase_time_with_latency.values, [float(b + x) for b, x, _ in phases],
                                   rtol=RTOL, atol=0)
        assert float(ds.time_with_latency) == pytest.approx(float(sum(b + x for b, x, _ in phases)), rel=RTOL,
                                                            abs=0)
        for k, (_, _, fin) in enumerate(phases):
            close(ds.message_finish_time.values[k][:len(fin)], fin, f"{fairness}, phase {k}")
        assert float(ds.time_max_min) == pytest.approx(float(sum(max(f) for _, _, f in phases)), rel=RTOL, abs=0)
        rk = ev.evaluate(topo, tr, pl, "dor", sharing="max_min", fairness=fairness, progression="rank")
        got = np.concatenate([rk.message_finish_time.values[k][:len(p[0])] for k, p in enumerate(PHASES)])
        close(got, ranked, f"{fairness}, rank progression")
        assert float(rk.time_max_min) == pytest.approx(float(max(ranked)), rel=RTOL, abs=0)


# -- 7. jobs ---------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("bw,s", [(1e13, 1.0), (1e3, 1e-9)])
def test_jobs_of_one_byte_and_a_terabyte(bw, s):
    """``evaluate_jobs(sharing="max_min")`` on a line of 8 nodes: job ``a`` sends 1 byte (times ``s``) from node 0
    to 7, job ``b`` 1e12 bytes from node 1 to 5 and from 2 to 6, all three crossing router link 2 -> 3 (flow-fair):
    every job's
    time with the others and alone is the exact simulation's."""
    topo = ev.torus([8], wrap=False, link_bandwidth=bw, injection_bandwidth=1e3 * bw)
    a = Job(traffic.from_flows(2, [0], [1], [1.0 * s]), placement.explicit(topo, np.array([0, 7])), name="a")
    b = Job(traffic.from_flows(4, [0, 1], [2, 3], [1e12 * s, 1e12 * s]),
            placement.explicit(topo, np.array([1, 2, 5, 6])), name="b")
    ds = evaluate_jobs(topo, [a, b], "dor", sharing="max_min", fairness="flow")
    cap = [Q(c) for c in np.asarray(topo.capacity)]
    paths = [line_path(topo, 0, 7), line_path(topo, 1, 5), line_path(topo, 2, 6)]
    nb = [1.0 * s, 1e12 * s, 1e12 * s]
    together = exact_finish(paths, cap, nb, [0, 0, 0])
    alone_a = exact_finish(paths[:1], cap, nb[:1], [0])
    alone_b = exact_finish(paths[1:], cap, nb[1:], [0, 0])
    close(ds.time_max_min.values, [together[0], max(together[1:])], "together")
    close(ds.time_max_min_alone.values, [alone_a[0], max(alone_b)], "alone")
