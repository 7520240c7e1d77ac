"""Audit of the flow-level max-min model (evaluator/flowlevel.py, evaluator/_batch/flowlevel.py).

The reference here is written from the definition alone, in EXACT rational arithmetic (``fractions.Fraction``):
progressive filling (all unfrozen flows' levels rise together until a link is full; its flows freeze; repeat),
an event loop over flow starts and finishes with the rates constant in between. No tolerance enters the reference:
ties are exact. Integer bytes and capacities, fractions 1, 1/2, 1/3, 1/4. The torus paths are built here by hand
(dimension order on odd rings, no ties) from the topology's link endpoints, not from the kernel.
"""

from __future__ import annotations

from fractions import Fraction as Q

import numpy as np
import pytest

import evaluator as ev
from evaluator import placement as P
from evaluator import traffic as T
from evaluator._batch.flowlevel import max_min_batch, progress_batch
from evaluator.errors import ConfigError
from evaluator.flowlevel import flow_incidence
from evaluator.topology import fat_tree

RTOL = 1e-9


# -- the exact reference ---------------------------------------------------------------------------------------------

def ref_rates(paths, cap, active, weight):
    """Weighted max-min rates (exact): ``paths[f]`` a {link: Fraction} dict; an active flow on no link: None (inf)."""
    rate = {}
    rising = set()
    for f, on in enumerate(active):
        if on:
            if paths[f]:
                rising.add(f)
            else:
                rate[f] = None
    spare = {link: Q(c) for link, c in enumerate(cap)}
    while rising:
        demand = {}
        for f in rising:
            for link, x in paths[f].items():
                demand[link] = demand.get(link, Q(0)) + weight[f] * x
        fill = {link: spare[link] / d for link, d in demand.items() if d > 0}
        low = min(fill.values())
        full = {link for link, v in fill.items() if v == low}
        hit = [f for f in rising if full & paths[f].keys()]
        for f in hit:
            rate[f] = weight[f] * low
            rising.discard(f)
            for link, x in paths[f].items():
                spare[link] -= rate[f] * x
    return rate


def ref_finish(paths, cap, nbytes, start, job=None):
    """Exact finish time of every flow (a flow of 0 bytes or on no link: at its start)."""
    F = len(paths)
    start = [Q(s) for s in start]
    finish = [start[f] if (nbytes[f] == 0 or not paths[f]) else None for f in range(F)]
    left = {f: Q(nbytes[f]) for f in range(F) if finish[f] is None}
    now = min((start[f] for f in left), default=Q(0))
    while left:
        running = [f for f in left if start[f] <= now]
        count = {}
        for f in running:
            count[job[f] if job else f] = count.get(job[f] if job else f, 0) + 1
        weight = {f: (Q(1, count[job[f]]) if job else Q(1)) for f in running}
        rate = ref_rates(paths, cap, [f in weight for f in range(F)], [weight.get(f, Q(0)) for f in range(F)])
        step = min((left[f] / rate[f] for f in running), default=None)
        waiting = [start[f] for f in left if start[f] > now]
        nxt = min(waiting, default=None)
        if step is None or (nxt is not None and nxt - now <= step):
            step = nxt - now
        for f in running:
            left[f] -= rate[f] * step
            if left[f] == 0:
                finish[f] = now + step
                del left[f]
        now += step
    return finish


def alone(path, cap):
    """Seconds per byte of a flow alone on the network (its slowest link, fractions counted)."""
    return max((x / Q(cap[link]) for link, x in path.items()), default=Q(0))


# -- random instances ------------------------------------------------------------------------------------------------

FRACS = [Q(1), Q(1, 2), Q(1, 3), Q(1, 4)]


def instance(rng, F, L, kind="mixed"):
    """(paths, cap, nbytes, start, job). kinds: mixed (every special flow), single, identical, disjoint, shared."""
    cap = [int(c) for c in rng.choice([1000, 3000, 8000, 20000], L)]
    paths = []
    for _ in range(F):
        k = int(rng.integers(1, min(4, L) + 1))
        links = rng.choice(L, k, replace=False).tolist()
        paths.append({int(lk): FRACS[int(rng.integers(0, 4))] if rng.random() < 0.4 else Q(1) for lk in links})
    nbytes = [int(b) for b in rng.integers(1, 10**6, F)]
    start = [Q(int(s), 1000) if rng.random() < 0.4 else Q(0) for s in rng.integers(0, 500, F)]
    if kind == "mixed":
        nbytes[0] = 7                                       # very unequal sizes
        nbytes[1] = 10**12
        nbytes[2] = 0                                       # zero bytes on real links
        paths[3] = {}                                       # from a node to itself: no link
        paths[4] = {0: Q(1), 1: Q(1, 2)}                    # every link shared with flow 5 ...
        paths[5] = {0: Q(1), 1: Q(1), 2: Q(1)}              # ... whose links include flow 4's
        nbytes[6] = nbytes[7] = 5000                        # equal sizes
    elif kind == "single":
        paths, nbytes, start = paths[:1], nbytes[:1], [Q(0)]
    elif kind == "identical":
        paths = [dict(paths[0]) for _ in range(F)]
        nbytes, start = [nbytes[0]] * F, [Q(0)] * F
    elif kind == "disjoint":  # no link shared: each flow alone
        paths = [{2 * f: Q(1), 2 * f + 1: Q(1, 2)} for f in range(F)]
        cap = [int(c) for c in rng.choice([1000, 3000, 8000, 20000], 2 * F)]
    job = [int(j) for j in rng.integers(0, 3, len(paths))]
    return paths, cap, nbytes, start, job


def stack(insts, F, K, L):
    n = len(insts)
    links, frac = -np.ones((n, F, K), np.int32), np.zeros((n, F, K))
    cap, nb, st, job = np.ones((n, L)), np.zeros((n, F)), np.zeros((n, F)), np.zeros((n, F), np.int64)
    for i, (paths, c, b, s, j) in enumerate(insts):
        for f, p in enumerate(paths):
            for k, (lk, x) in enumerate(p.items()):
                links[i, f, k], frac[i, f, k] = lk, float(x)
        cap[i, :len(c)] = c
        nb[i, :len(b)], st[i, :len(s)], job[i, :len(j)] = b, [float(x) for x in s], j
    return links, frac, cap, nb, st, job


def assert_times(got, want, what):
    want = np.array([float(w) for w in want])
    got = np.asarray(got, float)
    assert got.shape == want.shape, what
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=0, err_msg=what)
    assert got.max(initial=0) == pytest.approx(want.max(initial=0), rel=RTOL, abs=0), what


F_, K_, L_ = 16, 4, 32


@pytest.fixture(scope="module")
def cases():
    rng = np.random.default_rng(2026)
    insts = [instance(rng, F_, int(rng.integers(6, 12))) for _ in range(10)]
    insts += [instance(rng, 8, 9, kind) for kind in ("single", "identical", "identical", "disjoint")]
    insts += [instance(rng, F_, 4) for _ in range(2)]  # few links: heavy sharing
    return insts, stack(insts, F_, K_, L_)


# -- 1. every flow's finish time against the exact reference --------------------------------------------------------

@pytest.mark.parametrize("mode", ["flow", "job"])
def test_finish_times_against_exact_reference(cases, mode):
    insts, (links, frac, cap, nb, st, job) = cases
    got = max_min_batch(links, frac, cap, nb, st, mode, job if mode == "job" else None)
    for i, (paths, c, b, s, j) in enumerate(insts):
        want = ref_finish(paths, c, b, s, j if mode == "job" else None)
        assert_times(got[i, :len(paths)], want, f"case {i} ({mode})")
        assert np.all(got[i, len(paths):] == 0.0)


def test_bounds_relations(cases):
    """Every flow finishes no earlier than its start plus its time alone; with every start 0 the makespan lies
    between the bandwidth bound (and the longest flow alone) and the serial sum of the flows' times alone; flows
    that share no link finish exactly at their time alone; identical flows all finish together at the bound."""
    insts, (links, frac, cap, nb, st, _) = cases
    at0 = max_min_batch(links, frac, cap, nb, np.zeros_like(st), "flow")
    late = max_min_batch(links, frac, cap, nb, st, "flow")
    for i, (paths, c, b, s, _) in enumerate(insts):
        F = len(paths)
        solo = [float(b[f] * alone(paths[f], c)) for f in range(F)]
        assert np.all(late[i, :F] >= (np.array([float(x) for x in s]) + solo) * (1 - RTOL))
        load = np.zeros(len(c))
        for p, x in zip(paths, b):
            for lk, fr in p.items():
                load[lk] += x * float(fr)
        bound = float(np.max(load / np.asarray(c, float)))
        mk = at0[i, :F].max()
        assert mk >= max(bound, max(solo)) * (1 - RTOL), i
        assert mk <= sum(solo) * (1 + RTOL), i
        if len({tuple(sorted(p.items())) for p in paths}) == 1 and len(set(b)) == 1:  # identical flows
            np.testing.assert_allclose(at0[i, :F], bound, rtol=RTOL)
        if all(not (set(p) & set(q)) for f, p in enumerate(paths) for q in paths[f + 1:]):  # disjoint
            np.testing.assert_allclose(at0[i, :F], solo, rtol=RTOL)


# -- 2. real networks: a torus with paths built by hand; Dragonfly and fat tree end to end --------------------------

def torus_dor_paths(topo, dims, src, dst):
    """Dimension-order paths on a torus of odd rings (no tie), one node per router, from the link endpoints."""
    ls, ld = np.asarray(topo.link_src), np.asarray(topo.link_dst)
    index = {(int(a), int(b)): k for k, (a, b) in enumerate(zip(ls, ld)) if a >= 0 and b >= 0}
    nr, R, N = topo.n_router_links, topo.n_routers, topo.n_nodes
    assert R == N == int(np.prod(dims))
    paths = []
    for s, d in zip(src, dst):
        if s == d:
            paths.append({})
            continue
        cur = list(np.unravel_index(int(s), dims))
        goal = list(np.unravel_index(int(d), dims))
        p = {nr + int(s): Q(1), nr + N + int(d): Q(1)}
        for dim, k in enumerate(dims):
            while cur[dim] != goal[dim]:
                step = 1 if (goal[dim] - cur[dim]) % k <= k // 2 else -1
                a = int(np.ravel_multi_index(cur, dims))
                cur[dim] = (cur[dim] + step) % k
                p[index[(a, int(np.ravel_multi_index(cur, dims)))]] = Q(1)
        paths.append(p)
    return paths


def test_torus_hand_paths_incidence_and_times():
    dims = (3, 5)
    topo = ev.torus(list(dims))
    rng = np.random.default_rng(5)
    F = 24
    src, dst = rng.integers(0, 15, F), rng.integers(0, 15, F)
    src[:2], dst[:2] = 4, 4  # from a node to itself
    paths = torus_dor_paths(topo, dims, src, dst)
    links, frac = flow_incidence(topo, ev.dor(), np.arange(15), src, dst)
    assert [dict(zip(r[r >= 0].tolist(), q[r >= 0].tolist())) for r, q in zip(links, frac)] == \
        [{k: float(v) for k, v in p.items()} for p in paths]
    cap = [int(c) for c in np.asarray(topo.capacity)]
    assert np.array_equal(cap, np.asarray(topo.capacity))
    nb = [int(x) for x in rng.integers(1, 10**7, F)]
    nb[2] = 10**10
    start = [Q(int(x), 10**4) if rng.random() < 0.5 else Q(0) for x in rng.integers(0, 100, F)]
    got = max_min_batch(links[None], frac[None], topo.capacity, np.array(nb, float)[None],
                        np.array([float(x) for x in start])[None])
    assert_times(got[0], ref_finish(paths, cap, nb, start), "torus, starts")
    # the whole path: evaluate(sharing=max_min), no latency model (every message starts at 0)
    tr = T.from_flows(15, src, dst, np.array(nb, float))
    ds = ev.evaluate(topo, tr, P.linear(topo, 15), "dor", sharing="max_min")
    want = ref_finish(paths, cap, nb, [0] * F)
    fin = ds.message_finish_time.values
    assert_times(fin[2:], want[2:], "evaluate: message_finish_time")
    assert float(ds.time_max_min) == pytest.approx(float(max(want)), rel=RTOL)
    assert float(ds.time_max_min) >= float(ds.completion_time) * (1 - RTOL)


def test_batch_of_points_of_different_sizes():
    """evaluate_batch(sharing=max_min) over points of 5, 30 and 5 + 30 (two phases) flows, random placements: every
    point's messages (padded together into one batch) against the reference on hand-built paths."""
    dims = (3, 5)
    topo = ev.torus(list(dims))
    cap = [int(c) for c in np.asarray(topo.capacity)]
    rng = np.random.default_rng(8)
    ex = [(rng.integers(0, 15, n), rng.integers(0, 15, n), [int(b) for b in rng.integers(1, 10**6, n)])
          for n in (5, 30)]
    trs = [T.from_flows(15, s, d, np.array(b, float)) for s, d, b in ex]
    trs.append(T.phased(trs[:2]))
    pls = [P.fully_random(topo, 15, seed=k) for k in range(3)]
    res = ev.evaluate_batch(topo, "dor", trs, pls, sharing="max_min")
    for i, pl in enumerate(pls):
        tn = np.asarray(pl.task_node)
        total = Q(0)
        for k, (s, d, b) in enumerate(ex if i == 2 else [ex[i]]):
            want = ref_finish(torus_dor_paths(topo, dims, tn[s], tn[d]), cap, b, [0] * len(b))
            got = np.asarray(res.flows[i][k])
            assert_times(got, want, f"point {i} phase {k}")
            total += max(want)
        assert float(res.metrics["time_max_min"][i]) == pytest.approx(float(total), rel=RTOL)


def test_rank_progression_end_to_end():
    """evaluate(sharing=max_min, progression=rank), three phases, no latency model (eager, latency 0): every
    message's arrival against the exact rank-progress reference on hand-built paths; time_max_min the last one."""
    dims = (3, 5)
    topo = ev.torus(list(dims))
    cap = [int(c) for c in np.asarray(topo.capacity)]
    rng = np.random.default_rng(21)
    ex = [(rng.integers(0, 15, n), rng.integers(0, 15, n), [int(b) for b in rng.integers(1, 10**6, n)])
          for n in (12, 9, 14)]
    pl = P.fully_random(topo, 15, seed=4)
    tn = np.asarray(pl.task_node)
    ds = ev.evaluate(topo, T.phased([T.from_flows(15, s, d, np.array(b, float)) for s, d, b in ex]), pl, "dor",
                     sharing="max_min", progression="rank")
    paths, nb, snd, rcv, stp = [], [], [], [], []
    for k, (s, d, b) in enumerate(ex):
        paths += torus_dor_paths(topo, dims, tn[s], tn[d])
        nb += b
        snd += s.tolist()
        rcv += d.tolist()
        stp += [k] * len(b)
    M = len(nb)
    _, wf = ref_progress(paths, cap, nb, [0] * M, snd, rcv, stp, [False] * M, [False] * M)
    got = np.concatenate([ds.message_finish_time.values[k][:len(b)] for k, (_, _, b) in enumerate(ex)])
    assert_times(got, [wf[f] for f in range(M)], "rank progression")
    assert float(ds.time_max_min) == pytest.approx(float(max(wf.values())), rel=RTOL)


NETS = {
    "dragonfly-minimal": lambda: (ev.dragonfly(2, 4, 2), ev.minimal()),
    "dragonfly-valiant": lambda: (ev.dragonfly(2, 4, 2), ev.valiant()),
    "fattree-ecmp": lambda: (fat_tree(levels=2, k=4), ev.routing.ecmp_spray()),
}


@pytest.mark.parametrize("name", list(NETS))
def test_networks_end_to_end_against_reference(name):
    """evaluate(sharing=max_min) on random flows of random sizes; the reference runs on the kernel's incidence, whose
    loads must be the evaluated link loads; phases are summed."""
    topo, routing = NETS[name]()
    n = topo.n_nodes
    rng = np.random.default_rng(len(name))
    F = 20
    src, dst = rng.integers(0, n, F), rng.integers(0, n, F)
    nb = [int(x) for x in rng.integers(1, 10**7, F)]
    nb[0] = 3
    tr = T.from_flows(n, src, dst, np.array(nb, float))
    two = T.phased([tr, T.from_flows(n, dst[:5], src[:5], np.array(nb[:5], float))])
    pl = P.linear(topo, n)
    ds = ev.evaluate(topo, two, pl, routing, sharing="max_min")
    cap = np.asarray(topo.capacity)
    want_total = Q(0)
    for k, (s, d, b) in enumerate([(src, dst, nb), (dst[:5], src[:5], nb[:5])]):
        links, frac = flow_incidence(topo, routing, pl.task_node, s, d)
        load = np.zeros(topo.n_links)
        np.add.at(load, links[links >= 0], (np.array(b, float)[:, None] * frac)[links >= 0])
        assert np.all(frac[links >= 0] <= 1 + 1e-12)
        paths = [{int(lk): Q(float(x)) for lk, x in zip(r, q) if lk >= 0} for r, q in zip(links, frac)]
        want = ref_finish(paths, cap.tolist(), b, [0] * len(b))
        got = ds.message_finish_time.values[k][:len(b)]
        assert_times(got, want, f"{name} phase {k}")
        assert float(ds.phase_time_max_min.values[k]) >= float(np.max(load / cap)) * (1 - RTOL)
        want_total += max(want)
    assert float(ds.time_max_min) == pytest.approx(float(want_total), rel=RTOL)
    assert float(ds.time_max_min) >= float(ds.completion_time) * (1 - RTOL)


# -- 3. rank progression, one step: max_min_finish with start = latency ---------------------------------------------

def test_progress_one_step_is_finish_with_latency_starts(cases):
    insts, (links, frac, cap, nb, st, _) = cases
    i = 0
    paths, c, b, s, _ = insts[i]
    F = len(paths)
    zeros = np.zeros((1, F), np.int32)
    post, fin = progress_batch(links[i:i + 1, :F], frac[i:i + 1, :F], cap[i], nb[i:i + 1, :F], st[i:i + 1, :F],
                               zeros, zeros, zeros, np.zeros((1, F), bool), 1, 1)
    assert np.all(post[0][np.array(b) > 0] == 0.0)
    real = np.array(b) > 0
    want = ref_finish(paths, c, b, s)
    np.testing.assert_allclose(fin[0][real], np.array([float(w) for w in want])[real], rtol=RTOL)


def ref_progress(paths, cap, nbytes, lat, snd, rcv, step, rdv, matched, job=None, fw=None):
    """Exact ``(post, finish)`` of ranks that progress on their own (the definition in max_min_progress's
    docstring): a rank is done with the steps before k when every message it receives in them, and every
    rendezvous message it sends in them, has arrived; a message is posted when its sender is (and its receiver,
    for a rendezvous or matched message), begins its latency later, then shares the links."""
    F = len(paths)
    real = [nbytes[f] > 0 for f in range(F)]
    finish = {f: None for f in range(F) if real[f]}
    left = {f: Q(nbytes[f]) for f in finish}

    def done_before(rank, k):
        t = Q(0)
        for g in finish:
            if step[g] < k and (rcv[g] == rank or (snd[g] == rank and rdv[g])):
                if finish[g] is None:
                    return None
                t = max(t, finish[g])
        return t

    def post(f):
        a = done_before(snd[f], step[f])
        b = done_before(rcv[f], step[f]) if (rdv[f] or matched[f]) else Q(0)
        return None if a is None or b is None else max(a, b)

    now = Q(0)
    while left:
        begin = {f: post(f) + Q(lat[f]) for f in left if post(f) is not None}
        running = [f for f in left if f in begin and begin[f] <= now]
        if not running:
            now = min(begin.values())
            continue
        noway = [f for f in running if not paths[f]]
        if noway:  # no link: arrives as soon as its latency is paid
            for f in noway:
                finish[f] = now
                del left[f]
            continue
        count = {}
        for f in running:
            key = job[f] if job is not None else f
            count[key] = count.get(key, 0) + 1
        weight = {f: Q(fw[f] if fw is not None else 1) / (count[job[f]] if job is not None else 1) for f in running}
        rate = ref_rates(paths, cap, [f in weight for f in range(F)], [weight.get(f, Q(0)) for f in range(F)])
        dt = min(left[f] / rate[f] for f in running)
        nxt = min((begin[f] for f in begin if begin[f] > now), default=None)
        if nxt is not None and nxt - now < dt:
            dt = nxt - now
        for f in running:
            left[f] -= rate[f] * dt
            if left[f] == 0:
                finish[f] = now + dt
                del left[f]
        now += dt
    posts = {}
    for f in finish:
        posts[f] = post(f)
    return posts, finish


def progress_instance(rng, R, S, M, L):
    cap = [int(c) for c in rng.choice([1000, 3000, 8000], L)]
    paths, snd, rcv, stp, nb, lat, rdv, mt = [], [], [], [], [], [], [], []
    for _ in range(M):
        k = int(rng.integers(1, 4))
        paths.append({int(lk): Q(1) if rng.random() < 0.7 else Q(1, 2) for lk in rng.choice(L, k, replace=False)})
        a, b = rng.choice(R, 2, replace=False)
        snd.append(int(a)), rcv.append(int(b)), stp.append(int(rng.integers(0, S)))
        nb.append(int(rng.integers(1, 10**5)) if rng.random() < 0.9 else 0)
        lat.append(Q(int(rng.integers(0, 20)), 1000))
        rdv.append(bool(rng.random() < 0.4)), mt.append(bool(rng.random() < 0.3))
    paths[0] = {}  # a message on no link
    return paths, cap, nb, lat, snd, rcv, stp, rdv, mt


@pytest.mark.parametrize("variant", ["flow", "rtt-weights", "job"])
def test_rank_progression_against_exact_reference(variant):
    rng = np.random.default_rng(11)
    R, S, M, L, n = 5, 3, 14, 8, 6
    insts = [progress_instance(rng, R, S, M, L) for _ in range(n)]
    links, frac = -np.ones((n, M, 3), np.int32), np.zeros((n, M, 3))
    for i, inst in enumerate(insts):
        for f, p in enumerate(inst[0]):
            for k, (lk, x) in enumerate(p.items()):
                links[i, f, k], frac[i, f, k] = lk, float(x)
    arr = [np.array([inst[j] for inst in insts]) for j in range(2, 9)]
    nb, lat, snd, rcv, stp, rdv, mt = arr
    cap = insts[0][1]
    fw = rng.choice([1, 2, 5], (n, M)) if variant == "rtt-weights" else None
    job = rng.integers(0, 3, (n, M)) if variant == "job" else None
    post, fin = progress_batch(links, frac, np.array(cap, float), nb.astype(float),
                               np.array([[float(x) for x in r] for r in lat]), snd, rcv, stp, rdv, R, S,
                               None if fw is None else fw.astype(float), matched=mt, job=job)
    for i, inst in enumerate(insts):
        p_, c_, b_, l_, s_, r_, k_, v_, m_ = inst
        wp, wf = ref_progress(p_, cap, b_, l_, s_, r_, k_, v_, m_, None if job is None else job[i].tolist(),
                              None if fw is None else fw[i].tolist())
        real = sorted(wf)
        assert_times(fin[i, real], [wf[f] for f in real], f"finish {i}")
        assert_times(post[i, real], [wp[f] for f in real], f"post {i}")


# -- 4. bad input: refused, naming the field and the value ----------------------------------------------------------

def _one(**kw):
    a = dict(links=np.zeros((1, 2, 1), np.int32), frac=np.ones((1, 2, 1)), capacity=np.ones(1),
             nbytes=np.ones((1, 2)), start=np.zeros((1, 2)))
    a.update(kw)
    return max_min_batch(**a)


def test_good_input_of_the_refusal_cases():
    np.testing.assert_allclose(_one(), [[2.0, 2.0]])
    np.testing.assert_allclose(_one(start=np.array([[-1.0, 0.0]])), [[0.0, 1.0]])  # a start before 0 is a time


BAD = {
    "nbytes-nan": ("nbytes", dict(nbytes=np.array([[np.nan, 1.0]]))),
    "nbytes-negative": ("nbytes", dict(nbytes=np.array([[-1.0, 1.0]]))),
    "nbytes-inf": ("nbytes", dict(nbytes=np.array([[np.inf, 1.0]]))),
    "start-nan": ("start", dict(start=np.array([[np.nan, 0.0]]))),
    "start-inf": ("start", dict(start=np.array([[np.inf, 0.0]]))),
    "links-below-padding": ("links", dict(links=np.array([[[-2], [0]]], np.int32))),
    "links-not-integers": ("links", dict(links=np.array([[[0.7], [0.0]]]))),
    "frac-nan": ("frac", dict(frac=np.array([[[np.nan], [1.0]]]))),
    "frac-negative": ("frac", dict(frac=np.array([[[-1.0], [1.0]]]))),
    "frac-inf": ("frac", dict(frac=np.array([[[np.inf], [1.0]]]))),
    "flow_weight-inf": ("flow_weight", dict(flow_weight=np.array([[np.inf, 1.0]]))),
    "flow_weight-zero": ("flow_weight", dict(flow_weight=np.array([[0.0, 1.0]]))),
    "job-not-integers": ("job", dict(weight_mode="job", job=np.array([[0.5, 1.2]]))),
    "step-zero": ("step", dict(step=0)),
}


@pytest.mark.parametrize("name", list(BAD))
def test_bad_input_refused(name):
    field, kw = BAD[name]
    with pytest.raises(ConfigError) as e:
        _one(**kw)
    msg = str(e.value)
    assert msg.startswith(field + " "), msg
    assert "shape" not in msg.split("allowed")[0] or "shape" in name, msg  # the bad value, not the shape


def _prog(**kw):
    """Three messages of 1 B on one link of 1 B/s: 0 -> 1 in step 0, 1 -> 0 in step 1, 0 -> 1 in step 0."""
    a = dict(links=np.zeros((1, 3, 1), np.int32), frac=np.ones((1, 3, 1)), capacity=np.ones(1),
             nbytes=np.ones((1, 3)), latency=np.zeros((1, 3)), sender=np.array([[0, 1, 0]]),
             receiver=np.array([[1, 0, 1]]), phase=np.array([[0, 1, 0]]), rendezvous=np.zeros((1, 3), bool),
             n_ranks=2, n_steps=2)
    a.update(kw)
    return progress_batch(**a)


def test_progress_closed_form_of_the_refusal_cases():
    """Step 0: two messages share the link, both at 2 s; rank 0 has received nothing, rank 1 both: rank 1 posts its
    step-1 message at 2 s (alone: 3 s). Job ids 1000 and 2000 are two jobs (not one, as a clip to the flow count
    made them): job-fair, each job half the link."""
    post, fin = _prog()
    np.testing.assert_allclose(post, [[0.0, 2.0, 0.0]])
    np.testing.assert_allclose(fin, [[2.0, 3.0, 2.0]])
    one = np.zeros((1, 3), np.int32)
    _, fin = _prog(sender=one, receiver=one, phase=one, n_ranks=1, n_steps=1, job=np.array([[0, 1000, 2000]]))
    np.testing.assert_allclose(fin, [[3.0, 3.0, 3.0]])  # three jobs: a third each
    _, fin = _prog(sender=one, receiver=one, phase=one, n_ranks=1, n_steps=1, job=np.array([[7, 1000, 1000]]))
    np.testing.assert_allclose(fin, [[2.0, 3.0, 3.0]])  # job 7 half the link: 2 s; then the other job's 1/2 B left


PROG_BAD = {
    "nbytes": dict(nbytes=np.array([[np.nan, 1.0, 1.0]])),
    "latency": dict(latency=np.array([[-1e-6, 0.0, 0.0]])),
    "phase": dict(n_steps=1),                                    # phase 1 of 1 step: another rank's slot
    "sender": dict(sender=np.array([[0, 2, 0]])),                # rank 2 of 2
    "receiver": dict(receiver=np.array([[1, -1, 1]])),
    "links": dict(links=np.array([[[0], [1], [0]]], np.int32)),  # link 1 of 1
    "job": dict(job=np.array([[0, 1.5, 1]])),
    "step": dict(step=0),
    "n_ranks": dict(n_ranks=0),
}


@pytest.mark.parametrize("field", list(PROG_BAD))
def test_progress_bad_input_refused(field):
    with pytest.raises(ConfigError) as e:
        _prog(**PROG_BAD[field])
    assert str(e.value).startswith(field + " "), str(e.value)


def test_rank_progression_gathered_rows(monkeypatch):
    """The rates computed on the active messages gathered into few rows (grown when an event has more): the
    same times as the exact reference."""
    import evaluator._batch.flowlevel as B

    monkeypatch.setattr(B, "ACTIVE_ROWS", 2)
    rng = np.random.default_rng(12)
    R, S, M, L = 4, 2, 12, 5
    paths, cap, nb, lat, snd, rcv, stp, rdv, mt = progress_instance(rng, R, S, M, L)
    links, frac = -np.ones((1, M, 3), np.int32), np.zeros((1, M, 3))
    for f, p in enumerate(paths):
        for k, (lk, x) in enumerate(p.items()):
            links[0, f, k], frac[0, f, k] = lk, float(x)
    post, fin = progress_batch(links, frac, np.array(cap, float), np.array([nb], float),
                               np.array([[float(x) for x in lat]]), np.array([snd]), np.array([rcv]),
                               np.array([stp]), np.array([rdv]), R, S, matched=np.array([mt]))
    wp, wf = ref_progress(paths, cap, nb, lat, snd, rcv, stp, rdv, mt)
    real = sorted(wf)
    assert_times(fin[0, real], [wf[f] for f in real], "finish")
    assert_times(post[0, real], [wp[f] for f in real], "post")


INCIDENCE_BAD = {  # (task_node, src, dst) on a 3 x 5 torus of 15 nodes -> the field named
    "dst past the tasks": ((np.arange(15), [0], [20]), "flow_incidence.dst"),      # was routed to task 14
    "dst negative": ((np.arange(15), [0], [-1]), "flow_incidence.dst"),            # was a flow on no link
    "node past the network": ((np.arange(15) + 3, [0], [14]), "flow_incidence.task_node"),  # lost its ejection
    "src not an integer": ((np.arange(15), [0.5], [14]), "flow_incidence.src"),    # was read as task 0
}


@pytest.mark.parametrize("case", list(INCIDENCE_BAD))
def test_incidence_ids_refused(case):
    (tn, s, d), field = INCIDENCE_BAD[case]
    topo = ev.torus([3, 5])
    with pytest.raises(ConfigError) as e:
        flow_incidence(topo, ev.dor(), tn, np.array(s), np.array(d))
    assert str(e.value).startswith(field + " = "), str(e.value)
    # the good neighbour: float ids of integral value are read as those ids
    links, frac = flow_incidence(topo, ev.dor(), np.arange(15.0), np.array([0.0]), np.array([14.0]))
    assert sorted(links[0].tolist()) == sorted(torus_dor_paths(topo, (3, 5), [0], [14])[0])
