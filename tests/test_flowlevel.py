"""Flow-level max-min fair sharing (issue 33, item 3): evaluator/flowlevel.py and evaluator/_batch/flowlevel.py.

The reference is a plain-Python event loop of weighted max-min progressive filling written here (its own code, the
same definition: DESIGN.md "Beyond the bound"); the rates are also checked against the bottleneck characterisation
of max-min fairness, which is not an algorithm at all. Closed forms by hand; the bandwidth bound of real networks
built with the evaluator.
"""

from __future__ import annotations

import math

import jax
import numpy as np
import pytest

import evaluator as ev
from evaluator import placement as P
from evaluator import traffic as T
from evaluator._batch.flowlevel import cache_size, max_min_batch
from evaluator.errors import ResourceError
from evaluator.topology import fat_tree
from evaluator.flowlevel import flow_incidence, incidence_loads, max_min_finish, max_min_rates
from tests.helpers import TOL

TIE = 1e-12  # the definition's tie rule: saturation levels (finish times in one interval) within it are one


# -- the reference: plain Python, flows as {link: fraction} dicts ----------------------------------------------------

def ref_rates(paths, cap, active, weight):
    """Weighted max-min rates by progressive filling, one link dictionary per flow."""
    rate = {f: (math.inf if not paths[f] else None) for f in range(len(paths)) if active[f]}
    rising = {f for f, r in rate.items() if r is None}
    spare = dict(enumerate(cap))
    level = 0.0
    while rising:
        demand = {}
        for f in rising:
            for link, x in paths[f].items():
                demand[link] = demand.get(link, 0.0) + weight[f] * x
        fill = {link: max(spare[link], 0.0) / d for link, d in demand.items() if d > 0}
        level = max(level, min(fill.values()))
        full = {link for link, v in fill.items() if v <= level * (1 + TIE)}
        for f in sorted(rising):
            if full & paths[f].keys():
                rate[f] = weight[f] * level
                rising.discard(f)
                for link, x in paths[f].items():
                    spare[link] -= rate[f] * x
    return [rate.get(f, 0.0) for f in range(len(paths))]


def ref_finish(paths, cap, nbytes, start, job=None, flow_weight=None):
    """Finish times: an event loop over flow starts and finishes, rates constant in between."""
    F = len(paths)
    finish = [start[f] if nbytes[f] <= 0 else math.inf for f in range(F)]
    left = {f: float(nbytes[f]) for f in range(F) if nbytes[f] > 0}
    now = min((start[f] for f in left), default=0.0)
    while left:
        running = [f for f in left if start[f] <= now]
        active = [f in running for f in range(F)]
        per_job = {}
        for f in running:
            key = f if job is None else job[f]
            per_job[key] = per_job.get(key, 0) + 1
        weight = [1.0] * F
        for f in running:
            weight[f] = (1.0 if job is None else 1.0 / per_job[job[f]]) * (1.0 if flow_weight is None
                                                                            else flow_weight[f])
        rate = ref_rates(paths, cap, active, weight)
        to_finish = {f: (left[f] / rate[f] if rate[f] > 0 else math.inf) for f in running}
        waiting = [start[f] for f in left if start[f] > now]
        step = min(to_finish.values(), default=math.inf)
        if waiting and min(waiting) - now <= step:
            step, then = min(waiting) - now, min(waiting)
        else:
            then = now + step
        for f, t in to_finish.items():
            if t <= step * (1 + TIE):
                finish[f] = then
                del left[f]
            else:
                left[f] -= rate[f] * step
        now = then
    return finish


def bottleneck_violations(paths, cap, active, weight, rate):
    """The flows for which max-min fairness fails: an active flow must have a full link on which no flow has a
    larger level ``rate / weight`` (the bottleneck characterisation); no link may carry more than its capacity."""
    used = np.zeros(len(cap))
    for f, p in enumerate(paths):
        if active[f] and p:
            for link, x in p.items():
                used[link] += rate[f] * x
    bad = [("over", link) for link in range(len(cap)) if used[link] > cap[link] * (1 + 1e-9)]
    for f, p in enumerate(paths):
        if not active[f] or not p:
            continue
        lv = rate[f] / weight[f]
        ok = any(used[link] >= cap[link] * (1 - 1e-9)
                 and all(rate[g] / weight[g] <= lv * (1 + 1e-9) for g, q in enumerate(paths) if active[g] and link in q)
                 for link in p)
        if not ok:
            bad.append(("flow", f))
    return bad


# -- random instances, padded to one shape ---------------------------------------------------------------------------

FMAX, KMAX, LMAX = 30, 6, 20


def instance(rng, equal=False, single=False, ties=False):
    """A random network: 3-30 flows over 2-20 links, multi-path fractions unless ``single``; unequal sizes and
    start offsets unless ``equal``; ``ties``: capacities and sizes from small sets (many exact ties)."""
    F, L = int(rng.integers(3, FMAX + 1)), int(rng.integers(2, LMAX + 1))
    paths = []
    for _ in range(F):
        k = int(rng.integers(1, min(KMAX, L) + 1))
        links = rng.choice(L, size=k, replace=False).tolist()
        if single or rng.random() < 0.4:
            frac = [1.0] * k
        else:  # a first and last link of the whole flow, the middle split over paths
            frac = [1.0] + rng.dirichlet(np.ones(k - 2)).tolist() + [1.0] if k > 2 else rng.uniform(0.2, 1, k).tolist()
        paths.append(dict(zip(links, frac)))
    cap = (rng.choice([1.0, 2.0, 4.0], L) if ties else rng.uniform(1e9, 1e10, L)).tolist()
    if equal:
        nbytes, start = [1e6] * F, [0.0] * F
    else:
        nbytes = (rng.choice([1.0, 2.0, 3.0], F) if ties else rng.uniform(1e5, 1e7, F)).tolist()
        late = rng.random(F) < 0.5
        start = np.where(late, rng.choice([0.5, 1.0], F) if ties else rng.uniform(0, 2e-3, F), 0.0).tolist()
        if F > 4:
            paths[1] = {}  # a flow that crosses no link: finishes at its start
            nbytes[2] = 0.0  # a flow of no bytes on real links: finishes at its start, changes nothing
    job = rng.integers(0, 4, F).tolist()
    return paths, cap, nbytes, start, job


def stack(instances):
    """``(links, frac, capacity, nbytes, start, job)`` stacked and padded to ``[point, FMAX, KMAX]``, ``LMAX``."""
    n = len(instances)
    links = -np.ones((n, FMAX, KMAX), np.int32)
    frac = np.zeros((n, FMAX, KMAX))
    cap = np.ones((n, LMAX))
    nb = np.zeros((n, FMAX))
    st = np.zeros((n, FMAX))
    job = np.zeros((n, FMAX), np.int64)
    for i, (paths, c, b, s, j) in enumerate(instances):
        for f, p in enumerate(paths):
            for k, (link, x) in enumerate(p.items()):
                links[i, f, k], frac[i, f, k] = link, x
        cap[i, : len(c)] = c
        nb[i, : len(b)], st[i, : len(s)], job[i, : len(j)] = b, s, j
    return links, frac, cap, nb, st, job


def rel_err(got, want):
    got, want = np.asarray(got, float), np.asarray(want, float)
    assert np.array_equal(np.isinf(got), np.isinf(want))
    fin = np.isfinite(want)
    return float(np.max(np.abs(got[fin] - want[fin]) / np.maximum(np.abs(want[fin]), 1e-300), initial=0.0))


def bound(paths, cap, nbytes):
    load = np.zeros(len(cap))
    for p, b in zip(paths, nbytes):
        for link, x in p.items():
            load[link] += b * x
    return float(np.max(load / np.asarray(cap)))


@pytest.fixture(scope="module")
def random_batch():
    rng = np.random.default_rng(33)
    insts = [instance(rng) for _ in range(24)] + [instance(rng, ties=True) for _ in range(8)]
    return insts, stack(insts)


# -- 1. the kernel against the reference ----------------------------------------------------------------------------

@pytest.mark.parametrize("mode", ["flow", "job"])
def test_finish_equals_reference(random_batch, mode):
    insts, (links, frac, cap, nb, st, job) = random_batch
    got = max_min_batch(links, frac, cap, nb, st, mode, job if mode == "job" else None)
    worst = 0.0
    for i, (paths, c, b, s, j) in enumerate(insts):
        want = ref_finish(paths, c, b, s, j if mode == "job" else None)
        F = len(paths)
        worst = max(worst, rel_err(got[i, :F], want))
        assert np.all(got[i, F:] == 0.0)  # padding flows finish at their start (0)
    assert worst <= TOL["rel"], worst


def test_rates_are_max_min_fair(random_batch):
    """Against the reference and against the bottleneck characterisation (random activity and weights)."""
    insts, (links, frac, cap, *_) = random_batch
    rng = np.random.default_rng(7)
    rates_fn = jax.jit(jax.vmap(max_min_rates))
    active = rng.random((len(insts), FMAX)) < 0.8
    for i, (paths, *_) in enumerate(insts):
        active[i, len(paths):] = False
    weight = rng.uniform(0.2, 3.0, (len(insts), FMAX))
    got = np.asarray(rates_fn(links, frac, cap, active, weight))
    for i, (paths, c, *_) in enumerate(insts):
        F = len(paths)
        act, w = active[i, :F].tolist(), weight[i, :F].tolist()
        assert rel_err(got[i, :F], ref_rates(paths, c, act, w)) <= TOL["rel"]
        assert bottleneck_violations(paths, c, act, w, got[i, :F].tolist()) == []
        assert np.all(got[i, F:] == 0.0) and np.all(got[i, :F][~active[i, :F]] == 0.0)


def test_flow_weight_against_reference(random_batch):
    """Constant per-flow weight factors (SimGrid CM02 weighs by 1 / route latency)."""
    insts, (links, frac, cap, nb, st, job) = random_batch
    w = np.random.default_rng(3).uniform(0.1, 10.0, nb.shape)
    got = max_min_batch(links, frac, cap, nb, st, "flow", flow_weight=w)
    for i, (paths, c, b, s, _) in enumerate(insts[:8]):
        assert rel_err(got[i, : len(paths)], ref_finish(paths, c, b, s, flow_weight=w[i].tolist())) <= TOL["rel"]


# -- 2. equal sizes: the makespan is the bandwidth bound ------------------------------------------------------------

@pytest.mark.parametrize("single", [True, False], ids=["single-path", "multi-path"])
def test_equal_sizes_makespan_is_the_bound(single):
    rng = np.random.default_rng(5 + single)
    insts = [instance(rng, equal=True, single=single) for _ in range(16)]
    links, frac, cap, nb, st, _ = stack(insts)
    got = max_min_batch(links, frac, cap, nb, st, "flow")
    for i, (paths, c, b, _, _) in enumerate(insts):
        assert got[i].max() == pytest.approx(bound(paths, c, b), rel=TOL["rel"])


NETWORKS = {  # name -> (topology, traffic of equal flows, placement, routing); Valiant and k-shortest split flows
    "torus4x4-a2a-dor": lambda: (ev.torus([4, 4]), T.all_to_all(16, 1e6), lambda t: P.linear(t, 16), ev.dor()),
    "torus4x4x2-perm-dor": lambda: (ev.torus([4, 4, 2]), T.random_permutation(32, 2e6, seed=1),
                                    lambda t: P.fully_random(t, 32, seed=3), ev.dor()),
    "df242-a2a-minimal": lambda: (ev.dragonfly(2, 4, 2), T.all_to_all(72, 2e5),
                                  lambda t: P.fully_random(t, 72, seed=1), ev.minimal()),
    "df242-perm-valiant": lambda: (ev.dragonfly(2, 4, 2), T.random_permutation(72, 3e6, seed=5),
                                   lambda t: P.fully_random(t, 72, seed=1), ev.valiant()),
    "torus4x4-perm-kshortest": lambda: (ev.torus([4, 4]), T.random_permutation(16, 1e6, seed=2),
                                        lambda t: P.linear(t, 16), ev.kshortest(k=4)),
    "fattree-k4-perm-ecmp_spray": lambda: (fat_tree(levels=2, k=4), T.random_permutation(16, 1e6, seed=3),
                                           lambda t: P.fully_random(t, 16, seed=1), ev.routing.ecmp_spray()),
}


@pytest.mark.parametrize("name", list(NETWORKS))
def test_real_networks_makespan_is_completion_time(name):
    topo, tr, place, routing = NETWORKS[name]()
    pl = place(topo)
    ds = ev.evaluate(topo, tr, pl, routing)
    links, frac = flow_incidence(topo, routing, pl.task_node, tr.src, tr.dst)
    assert links.shape[0] == tr.n_flows and links.max() < topo.n_links
    loads = incidence_loads(links, frac, tr.nbytes, topo.n_links)
    assert np.allclose(loads, ds.link_load.values, rtol=TOL["rel"], atol=TOL["bytes"])
    finish = max_min_batch(links[None], frac[None], topo.capacity, tr.nbytes[None], np.zeros((1, tr.n_flows)))
    assert finish.max() == pytest.approx(float(ds.completion_time), rel=TOL["rel"])
    if "valiant" in name or "kshortest" in name or "ecmp" in name:
        assert np.any((frac > 0) & (frac < 1))  # really split


def test_incidence_of_dor_is_the_path():
    """DOR on a 4x4 torus: one link per hop with fraction 1, plus the injection and ejection links."""
    topo = ev.torus([4, 4])
    src, dst = np.array([0, 0, 5, 3]), np.array([1, 5, 5, 3])  # last two: on one node, no link
    links, frac = flow_incidence(topo, ev.dor(), np.arange(16), src, dst)
    n_r, n = topo.n_router_links, topo.n_nodes
    rows = [set(row[row >= 0].tolist()) for row in links]
    assert rows[0] & {n_r + 0, n_r + n + 1} == {n_r + 0, n_r + n + 1} and len(rows[0]) == 3  # 1 hop
    assert len(rows[1]) == 2 + 2  # (0,0) -> (1,1): 2 hops
    assert rows[2] == set() and rows[3] == set()
    assert np.all(frac[links >= 0] == 1.0)
    fin = max_min_finish(links, frac, topo.capacity, np.array([1e6, 1e6, 1e6, 0.0]), np.array([0.0, 0.0, 2.0, 3.0]))
    assert float(fin[2]) == 2.0 and float(fin[3]) == 3.0  # no link, or no bytes: at the start


# -- 3. unequal sizes, closed forms ---------------------------------------------------------------------------------

def test_unequal_sizes_not_below_the_bound(random_batch):
    insts, (links, frac, cap, nb, _, _) = random_batch
    got = max_min_batch(links, frac, cap, nb, np.zeros_like(nb), "flow")
    ratios = [got[i].max() / bound(p, c, b) for i, (p, c, b, _, _) in enumerate(insts)]
    assert min(ratios) >= 1 - TOL["rel"]
    assert max(ratios) > 1.01  # unequal sizes do finish after the bound


def test_two_link_closed_form():
    """Links 0 (1 B/s) and 1 (2 B/s); a, b: link 1, 1 B each; x: links 0 and 1, 2 B. Link 1 fills first at 2/3 B/s
    a flow; a and b finish at 1.5 s; x has 1 B left, alone, held by link 0 at 1 B/s: 2.5 s. The bound: 2 s (4 B
    on link 1 at 2 B/s, 2 B on link 0 at 1 B/s)."""
    links = np.array([[1, -1], [1, -1], [0, 1]])
    frac = np.array([[1.0, 0.0], [1.0, 0.0], [1.0, 1.0]])
    cap, nb = np.array([1.0, 2.0]), np.array([1.0, 1.0, 2.0])
    rates = max_min_rates(links, frac, cap, np.ones(3, bool), np.ones(3))
    np.testing.assert_allclose(rates, [2 / 3, 2 / 3, 2 / 3], rtol=TOL["rel"])
    fin = max_min_finish(links, frac, cap, nb, np.zeros(3))
    np.testing.assert_allclose(fin, [1.5, 1.5, 2.5], rtol=TOL["rel"])
    assert float(fin.max()) > 2.0 == bound([{1: 1.0}, {1: 1.0}, {0: 1.0, 1: 1.0}], cap, nb)


def test_job_fair_and_late_start_closed_forms():
    """One link of 1 B/s. Job-fair, job A's two flows and job B's one flow of 1 B: A's get 1/4 B/s each, B's 1/2;
    B finishes at 2 s, A's 1/2 B left each at 1/2 B/s: 3 s. Flow-fair: all at 1/3 B/s, 3 s. Late start: a 2 B flow
    from 0 and a 1 B flow from 1 s: 1 B left at 1 s, then 1/2 B/s each: both at 3 s. A split flow (half on each of two
    1 B/s links, then a 1 B/s link) of 2 B: 2 s."""
    links, frac, cap = np.zeros((3, 1), np.int32), np.ones((3, 1)), np.ones(1)
    job_fin = max_min_finish(links, frac, cap, np.ones(3), np.zeros(3), "job", job=np.array([7, 7, 2]))
    np.testing.assert_allclose(job_fin, [3.0, 3.0, 2.0], rtol=TOL["rel"])
    np.testing.assert_allclose(max_min_finish(links, frac, cap, np.ones(3), np.zeros(3)), [3.0] * 3, rtol=TOL["rel"])
    late = max_min_finish(links[:2], frac[:2], cap, np.array([2.0, 1.0]), np.array([0.0, 1.0]))
    np.testing.assert_allclose(late, [3.0, 3.0], rtol=TOL["rel"])
    split = max_min_finish(np.array([[0, 1, 2]]), np.array([[0.5, 0.5, 1.0]]), np.ones(3), np.array([2.0]),
                           np.zeros(1))
    np.testing.assert_allclose(split, [2.0], rtol=TOL["rel"])


def test_padding_changes_nothing(random_batch):
    """Padding flows (0 bytes, links -1) and padding entries, in any position: the same finish times."""
    insts, _ = random_batch
    paths, c, b, s, j = insts[0]
    links, frac, cap, nb, st, job = stack([insts[0]])
    F = len(paths)
    one = jax.jit(max_min_finish, static_argnames="weight_mode")
    K = max(len(p) for p in paths)  # no padding entry in the widest row
    base = np.asarray(one(links[0, :F, :K], frac[0, :F, :K], cap[0, : len(c)], nb[0, :F], st[0, :F], "job",
                          job[0, :F]))
    perm = np.random.default_rng(0).permutation(FMAX)  # padding flows spread among the real ones
    got = np.asarray(one(links[0][perm], frac[0][perm], cap[0], nb[0][perm], st[0][perm], "job", job[0][perm]))
    inv = np.argsort(perm)
    assert rel_err(got[inv][:F], base) <= TOL["rel"]
    assert rel_err(base, ref_finish(paths, c, b, s, j)) <= TOL["rel"]


# -- 4. batched = one by one; one compilation per bucket ------------------------------------------------------------

def test_batched_equals_one_by_one_and_compiles_once(random_batch):
    insts, (links, frac, cap, nb, st, job) = random_batch
    got = max_min_batch(links, frac, cap, nb, st, "job", job)
    one = jax.jit(max_min_finish, static_argnames="weight_mode")
    for i in range(0, len(insts), 5):
        alone = np.asarray(one(links[i], frac[i], cap[i], nb[i], st[i], "job", job[i]))
        np.testing.assert_allclose(got[i], alone, rtol=TOL["rel"], atol=0)
    n = cache_size()
    again = max_min_batch(links[::-1], frac[::-1], cap[::-1], nb[::-1] * 2, st[::-1] * 2, "job", job[::-1])
    fewer = max_min_batch(links[:27], frac[:27], cap[:27], nb[:27], st[:27], "job", job[:27])  # the same buckets
    assert cache_size() == n  # compiled nothing
    np.testing.assert_allclose(again[::-1], 2 * got, rtol=TOL["rel"])  # twice the bytes and the starts: twice as late
    np.testing.assert_array_equal(fewer, got[:27])
    stepped = max_min_batch(links, frac, cap, nb, st, "job", job, step=8)  # 8 points vmapped at once (accelerators)
    np.testing.assert_allclose(stepped, got, rtol=TOL["rel"], atol=0)
    shared = max_min_batch(links[:4], frac[:4], cap[0], nb[:4], st[:4], "flow")  # one capacity for every point
    each = max_min_batch(links[:4], frac[:4], np.repeat(cap[:1], 4, 0), nb[:4], st[:4], "flow")
    np.testing.assert_array_equal(shared, each)


# -- limits ---------------------------------------------------------------------------------------------------------

def test_incidence_refused_before_allocating(monkeypatch):
    topo = ev.torus([4, 4])
    monkeypatch.setenv("EVALUATOR_MEMORY_LIMIT", "1000")
    with pytest.raises(ResourceError, match=r"96 links x 1 flow.*need about"):
        flow_incidence(topo, ev.dor(), np.arange(16), np.array([0]), np.array([5]))
    monkeypatch.delenv("EVALUATOR_MEMORY_LIMIT")
    with pytest.raises(ResourceError, match=r"2 flows x 4 entries"):
        flow_incidence(topo, ev.dor(), np.arange(16), np.array([0, 1]), np.array([5, 2]), max_entries=4)
