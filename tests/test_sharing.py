"""``sharing="max_min"`` of :func:`evaluator.evaluate`: flow-level max-min fair sharing, every message starting
after its latency, against a reference built without the evaluator's routing or kernel.

The reference walks every flow's paths (tests/reference.py), makes each flow's ``{link: fraction}`` from them and
the node links, its latency from tests/test_latency.py's walk, and runs the plain-Python event loop of
tests/test_flowlevel.py. Also: equal flows at zero latency take exactly the bound; the message finish times; the
options' errors.
"""

from __future__ import annotations

import numpy as np
import pytest

import evaluator as ev
from evaluator import placement, traffic
from evaluator.errors import ConfigError
from evaluator.latency import Latency
from reference import reference_paths
from test_flowlevel import ref_finish
from test_latency import _walk_latency

TOL = 1e-9


def _walk_paths(topology, routing: dict, tn, src, dst):
    """Each flow's ``{link: fraction}``: its router links' expected fractions and its node links."""
    n_rl, n = topology.n_router_links, topology.n_nodes
    out = []
    for s, d in zip(src, dst):
        sn, dn = int(tn[s]), int(tn[d])
        links: dict[int, float] = {}
        if sn != dn:
            links[n_rl + sn] = 1.0
            links[n_rl + n + dn] = 1.0
            sr, dr = int(topology.node_router[sn]), int(topology.node_router[dn])
            for prob, path in reference_paths(topology, sr, dr, routing):
                for link in path:
                    links[link] = links.get(link, 0.0) + prob
        out.append(links)
    return out


CASES = [
    ("torus-dor", lambda: ev.torus([4, 3], link_bandwidth=[2e9, 1e9], nodes_per_router=2), "dor",
     {"kind": "dor", "order": "as_given", "tie": "split"}),
    ("df-minimal", lambda: ev.dragonfly(2, 4, 2), "minimal", {"kind": "minimal"}),
    ("df-valiant", lambda: ev.dragonfly(2, 4, 2), "valiant", {"kind": "valiant"}),
]
LAT = Latency(send_overhead=2e-7, recv_overhead=1e-7, router=5e-8, link=(("default", 2e-8), ("global", 3e-7)))


@pytest.mark.parametrize("latency", [None, LAT], ids=["no-latency", "latency"])
@pytest.mark.parametrize("name,make,routing,ref", CASES, ids=[c[0] for c in CASES])
def test_max_min_equals_reference_event_loop(name, make, routing, ref, latency):
    rng = np.random.default_rng(5)
    topo = make()
    if latency is not None:  # (the global class where the network has one)
        latency = Latency(**{**latency.__dict__, "link": tuple((c, v) for c, v in latency.link
                                                               if c == "default" or c in topo.class_names)})
        topo = topo.with_latency(latency)
    n = topo.n_nodes
    F = 30
    src, dst = rng.integers(0, n, F), rng.integers(0, n, F)
    nb = rng.integers(1, 10**6, F).astype(float)
    tr = traffic.from_flows(n, src, dst, nb)
    pl = placement.fully_random(topo, n, seed=4)
    ds = ev.evaluate(topo, tr, pl, routing, sharing="max_min")
    tn = np.asarray(pl.task_node)
    paths = _walk_paths(topo, ref, tn, src, dst)
    start = [0.0 if latency is None else _walk_latency(topo, latency, ref, int(tn[s]), int(tn[d]))
             for s, d in zip(src, dst)]
    want = np.array(ref_finish(paths, list(np.asarray(topo.capacity)), list(nb), start))
    got = ds["message_finish_time"].values
    np.testing.assert_allclose(got, want, rtol=TOL)
    assert float(ds.time_max_min) == pytest.approx(want.max(), rel=TOL)
    assert float(ds.time_max_min) >= float(ds.completion_time) * (1 - TOL)  # never below the bound
    assert ds.attrs["sharing"] == "max_min" and "max-min" in ds.attrs["sharing_model"]


@pytest.mark.parametrize("name,make,routing,ref", CASES, ids=[c[0] for c in CASES])
def test_equal_flows_take_the_bound(name, make, routing, ref):
    """Equal sizes, all starting together, no latency: max-min ends exactly at the bound (DESIGN.md)."""
    topo = make()
    n = topo.n_nodes
    for tr in (traffic.random_permutation(n, 1e6, seed=1), traffic.all_to_all(n, 1e3),
               traffic.collective("allreduce", "recursive_doubling", n_tasks=n, nbytes=1e5)):
        ds = ev.evaluate(topo, tr, placement.linear(topo, n), routing, sharing="max_min")
        assert float(ds.time_max_min) == pytest.approx(float(ds.completion_time), rel=1e-12)


def test_phased_sum_and_message_times():
    """A collective: each phase's max-min time its last message's finish, the point's the sum; equal ring steps
    with 1 us per link: every step (n/p)/B + 1 us, every message the same."""
    t = ev.torus([8], link_bandwidth=1e9, injection_bandwidth=1e12).with_latency(
        Latency(link=(("torus-dim0", 1e-6),)))
    tr = traffic.collective("allreduce", "ring", n_tasks=8, nbytes=8192.0)
    ds = ev.evaluate(t, tr, placement.linear(t, 8), "dor", sharing="max_min")
    step = 1024 / 1e9 + 1e-6  # (the flow crosses 1 TB/s node links and a 1 GB/s ring link: rate 1 GB/s)
    assert ds["message_finish_time"].dims == ("phase", "message")
    np.testing.assert_allclose(ds["message_finish_time"].values, step, rtol=1e-12)
    np.testing.assert_allclose(ds["phase_time_max_min"].values, step, rtol=1e-12)
    assert float(ds.time_max_min) == pytest.approx(14 * step, rel=1e-12)


def test_batch_and_errors():
    t = ev.torus([4])
    trs = [traffic.from_flows(4, [0, 1], [2, 3], [1.0, b]) for b in (1.0, 3.0)]
    res = ev.evaluate_batch(t, "dor", trs, placement.linear(t, 4), sharing="max_min")
    assert res.metrics["time_max_min"].shape == (2,) and res.flows is not None
    assert "time_max_min" not in ev.evaluate_batch(t, "dor", trs, placement.linear(t, 4)).metrics
    with pytest.raises(ConfigError, match=r"sharing = 'maxmin' is invalid.*Did you mean 'max_min'"):
        ev.evaluate(t, trs[0], placement.linear(t, 4), "dor", sharing="maxmin")
    with pytest.raises(ConfigError, match=r"fairness = 'flows' is invalid"):
        ev.evaluate(t, trs[0], placement.linear(t, 4), "dor", sharing="max_min", fairness="flows")
    with pytest.raises(ConfigError, match=r"fairness = 'rtt' is invalid: allowed is a latency model"):
        ev.evaluate(t, trs[0], placement.linear(t, 4), "dor", sharing="max_min", fairness="rtt")
    big = ev.torus([16, 16, 4])  # 1,024 tasks all to all: 1,047,552 messages, refused before any work
    from evaluator.errors import ResourceError

    with pytest.raises(ResourceError, match=r"sharing = 'max_min' is invalid: allowed is at most 100,000 messages in "
                                            r"one phase.*1,047,552.*Use sharing=bound"):
        ev.evaluate(big, traffic.all_to_all(1024), placement.linear(big, 1024), "dor", sharing="max_min")


# -- progression="rank": a plain-Python event loop of MPI-like ranks (tests/test_flowlevel.py's filling) ------------

def ref_progress(paths, cap, nbytes, lat, sender, receiver, step, rendezvous, matched, weight, job=None):
    """``(post, finish)`` of every message: a rank is done with the steps before k when what it receives there
    has arrived and what it sends there as rendezvous has too; a message is posted when its sender is (and its
    receiver, if rendezvous or matched), then waits its latency, then shares by weighted max-min."""
    import math

    from test_flowlevel import ref_rates

    F = len(paths)
    real = [b > 0 for b in nbytes]
    finish = [0.0 if not real[f] else math.inf for f in range(F)]
    post = [None] * F
    left = {f: float(nbytes[f]) for f in range(F) if real[f]}

    def done_before(x, k):
        t = 0.0
        for g in range(F):
            if real[g] and step[g] < k and (receiver[g] == x or (sender[g] == x and rendezvous[g])):
                t = max(t, finish[g])
        return t

    def update_posts():
        for f in range(F):
            if real[f] and post[f] is None:
                t = done_before(sender[f], step[f])
                if rendezvous[f] or matched[f]:
                    t = max(t, done_before(receiver[f], step[f]))
                if math.isfinite(t):
                    post[f] = t

    update_posts()
    now = min(post[f] + lat[f] for f in left if post[f] is not None)
    while left:
        begun = [f for f in left if post[f] is not None and post[f] + lat[f] <= now]
        active = [f in begun for f in range(F)]
        w = list(weight)
        if job is not None:  # job-fair: a flow's weight 1 / its job's running flows
            for f in begun:
                w[f] = weight[f] / sum(1 for g in begun if job[g] == job[f])
        rate = ref_rates(paths, cap, active, w)
        to_finish = {f: (left[f] / rate[f] if rate[f] > 0 else math.inf) for f in begun}
        waiting = [post[f] + lat[f] for f in left if post[f] is not None and post[f] + lat[f] > now]
        dt = min(to_finish.values(), default=math.inf)
        if waiting and min(waiting) - now <= dt:
            dt, then = min(waiting) - now, min(waiting)
        else:
            then = now + dt
        for f, t in to_finish.items():
            if t <= dt * (1 + 1e-12):
                finish[f] = then
                del left[f]
            else:
                left[f] -= rate[f] * dt
        now = then
        update_posts()
    return post, finish


@pytest.mark.parametrize("buffered", [True, False], ids=["eager-buffered", "eager-matched"])
def test_rank_progression_equals_reference(buffered):
    """Random phased traffic (unequal messages, some rendezvous) on a torus with latency: every message's
    arrival (from the exchange's start) equals the reference's."""
    rng = np.random.default_rng(8)
    ref = {"kind": "dor", "order": "as_given", "tie": "split"}
    lat = Latency(send_overhead=1e-7, link=(("default", 3e-7),), eager_threshold=4000.0, rendezvous_round_trips=0,
                  eager_buffered=buffered)
    topo = ev.torus([4, 2]).with_latency(lat)
    n = topo.n_nodes
    phases, S, R, K, B = [], [], [], [], []
    for k in range(4):
        m = 6
        s, d = rng.integers(0, n, m), rng.integers(0, n, m)
        b = rng.choice([1000.0, 3000.0, 9000.0, 20000.0], m)
        phases.append(traffic.Traffic(n, s, d, b, f"p{k}"))
        S += list(s)
        R += list(d)
        K += [k] * m
        B += list(b)
    tr = traffic.phased(phases)
    pl = placement.linear(topo, n)
    ds = ev.evaluate(topo, tr, pl, "dor", sharing="max_min", progression="rank")
    tn = np.asarray(pl.task_node)
    S, R, B = np.asarray(S), np.asarray(R), np.asarray(B)
    paths = _walk_paths(topo, ref, tn, S, R)
    lam = [_walk_latency(topo, lat, ref, int(tn[s]), int(tn[d])) for s, d in zip(S, R)]
    rv = [b > 4000.0 for b in B]
    _, want = ref_progress(paths, list(np.asarray(topo.capacity)), list(B), lam, list(S), list(R), K, rv,
                           [not buffered] * len(B), [1.0] * len(B))
    got = ds["message_finish_time"].values.reshape(-1)
    np.testing.assert_allclose(got[~np.isnan(got)], np.asarray(want), rtol=TOL)
    assert float(ds.time_max_min) == pytest.approx(max(want), rel=TOL)
    assert ds.attrs["progression"] == "rank"



def _random_progress_case(seed: int, F: int = 48, L: int = 10, R: int = 6, S: int = 4):
    """A random rank-progressed exchange as arrays: ``F`` messages of 1-3 links of ``L``, ``R`` ranks, ``S``
    steps, some rendezvous, some of 0 bytes (padding)."""
    rng = np.random.default_rng(seed)
    links = np.where(rng.random((F, 3)) < 0.7, rng.integers(0, L, (F, 3)), -1)
    links[:, 0] = rng.integers(0, L, F)
    frac = np.where(links >= 0, 1.0, 0.0)
    nbytes = np.where(rng.random(F) < 0.1, 0.0, rng.choice([1e3, 4e3, 2e4, 7e4], F))
    return (links, frac, rng.uniform(1e9, 4e9, L), nbytes, rng.uniform(0, 2e-6, F), rng.integers(0, R, F),
            rng.integers(0, R, F), rng.integers(0, S, F), rng.random(F) < 0.3, R, S)


def _most_active(post, finish, latency) -> int:
    """The most messages active at one event of a run: a message is active from its posting plus latency until its
    last byte, and the events are those instants."""
    begin = post + latency
    return max(int(((begin <= t) & (finish > t)).sum()) for t in np.concatenate([begin, finish]))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_rank_progression_on_the_active_messages_rows_is_bit_for_bit(seed):
    """evaluator.flowlevel.progress_active, each event's rates on its active messages gathered into a few rows:
    where no event had more active messages than rows (counted from the full run's times), the times equal those
    computed on every message's row bit for bit; where one had, it says so (``over``); and the batched runner,
    starting from 2 rows and growing them, gives the full run's times."""
    from evaluator._batch import flowlevel as bf
    from evaluator.flowlevel import max_min_progress, progress_active

    case = _random_progress_case(seed)
    post, finish = (np.asarray(x) for x in max_min_progress(*case))
    assert np.isfinite(finish).all()
    most = _most_active(post, finish, case[4])
    assert 4 <= most < case[0].shape[0]  # the rows below cover both sides
    for rows in (1, 2, 4, 8, 16, 32, most):
        p2, f2, over = progress_active(*case, active_size=rows)
        assert bool(over) == (most > rows), (rows, most)
        if not over:
            assert np.array_equal(np.asarray(p2), post) and np.array_equal(np.asarray(f2), finish)
    before = bf.ACTIVE_ROWS
    try:
        bf.ACTIVE_ROWS = 2
        args = [np.asarray(x)[None] for x in case[:4]] + [np.asarray(x)[None] for x in case[4:9]]
        args[2] = case[2]
        bp, bfin = bf.progress_batch(*args, n_ranks=case[9], n_steps=case[10])
    finally:
        bf.ACTIVE_ROWS = before
    assert np.array_equal(bp[0], post) and np.array_equal(bfin[0], finish)

def test_jobs_flow_and_job_fair_closed_form():
    """Two jobs on a line of 8 nodes, 2 GB/s links: job a's one 4 MB flow and job b's two share one link.
    Job-fair: a has half of it, 2 ms alone -> 4 ms, b 4 -> 6 ms; flow-fair: a third each, both 6 ms."""
    from evaluator.jobs import Job, evaluate_jobs

    t = ev.torus([8], wrap=False)
    a = Job(traffic.from_flows(2, [0], [1], [4e6]), placement.explicit(t, np.array([0, 7])), name="a")
    b = Job(traffic.from_flows(4, [0, 1], [2, 3], [4e6, 4e6]), placement.explicit(t, np.array([1, 2, 5, 6])), name="b")
    for fairness, together in (("job", [4e-3, 6e-3]), ("flow", [6e-3, 6e-3])):
        ds = evaluate_jobs(t, [a, b], "dor", sharing="max_min", fairness=fairness)
        np.testing.assert_allclose(ds.time_max_min.values, together, rtol=1e-12)
        np.testing.assert_allclose(ds.time_max_min_alone.values, [2e-3, 4e-3], rtol=1e-12)
        np.testing.assert_allclose(ds.slowdown_max_min.values, np.asarray(together) / [2e-3, 4e-3], rtol=1e-12)
    assert "time_max_min" not in evaluate_jobs(t, [a, b], "dor")


@pytest.mark.parametrize("fairness", ["job", "flow"])
def test_jobs_max_min_equals_reference(fairness):
    """Three jobs with unequal phased flows and a latency model on a 4x4 torus: every job's last arrival equals
    the reference event loop (each job's phases one after another, job- or flow-fair)."""
    from evaluator.jobs import Job, evaluate_jobs

    rng = np.random.default_rng(12)
    lat = Latency(send_overhead=1e-7, link=(("default", 4e-7),))
    topo = ev.torus([4, 4]).with_latency(lat)
    ref = {"kind": "dor", "order": "as_given", "tie": "split"}
    nodes = rng.permutation(topo.n_nodes)
    jobs, flows = [], []  # flows: (job, phase, src node, dst node, bytes)
    for j, n in enumerate((4, 5, 7)):
        own = np.sort(nodes[:n])
        nodes = nodes[n:]
        phases = []
        for k in range(2):
            m = 4
            s, d = rng.integers(0, n, m), rng.integers(0, n, m)
            b = rng.integers(1, 8, m) * 1e5
            phases.append(traffic.Traffic(n, s, d, b, f"j{j}p{k}"))
            flows += [(j, k, int(own[x]), int(own[y]), float(z)) for x, y, z in zip(s, d, b)]
        jobs.append(Job(traffic.phased(phases), placement.explicit(topo, own), name=f"j{j}"))
    ds = evaluate_jobs(topo, jobs, "dor", sharing="max_min", fairness=fairness)
    paths = [_walk_paths(topo, ref, np.arange(topo.n_nodes), [sn], [dn])[0] for _, _, sn, dn, _ in flows]
    lam = [_walk_latency(topo, lat, ref, sn, dn) for _, _, sn, dn, _ in flows]
    job = [j for j, *_ in flows]
    _, fin = ref_progress(paths, list(np.asarray(topo.capacity)), [f[4] for f in flows], lam, job, job,
                          [f[1] for f in flows], [False] * len(flows), [False] * len(flows), [1.0] * len(flows),
                          job=job if fairness == "job" else None)
    want = [max(f for f, jj in zip(fin, job) if jj == j) for j in range(3)]
    np.testing.assert_allclose(ds.time_max_min.values, want, rtol=TOL)
