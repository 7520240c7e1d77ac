"""Audit of several jobs on one machine (evaluator.jobs) against plain references written from docs/jobs.md.

Loads: a per-flow walk of every job's flows with the routing contract's ``route(topology, src, dst)`` plus the
node links (injection ``n_router_links + node``, ejection ``n_router_links + n_nodes + node``). Times: each
phase's ``max_l L / (c - background)``, summed over phases alone; together, an event loop whose speeds are max-min
fair by a bottleneck search written here (dicts and loops, not the library's arrays). The background: every node
outside every job sends ``fraction`` of its injection bandwidth, spread evenly over the other background nodes
(uniform) or to its partner of a seeded permutation.
"""

from __future__ import annotations

import numpy as np
import pytest

import evaluator as ev
from evaluator import config
from evaluator import placement as P
from evaluator import traffic as TR
from evaluator.errors import ConfigError
from evaluator.jobs import Background, Job, evaluate_jobs
from evaluator.routing import build_routing, dmodk, ecmp, ecmp_spray
from evaluator.topology import fat_tree

REL = 1e-9


# --------------------------------------------------------------------------------------------
# references
# --------------------------------------------------------------------------------------------


def walk(topo, routing, flows, task_node) -> np.ndarray:
    """Bytes on every link of ``flows`` (src task, dst task, bytes), tasks on nodes ``task_node``."""
    op = build_routing(topo, routing)
    R, N = topo.n_router_links, topo.n_nodes
    router = np.asarray(topo.node_router)
    load = np.zeros(topo.n_links)
    for s, d, b in flows:
        ns, nd = int(task_node[int(s)]), int(task_node[int(d)])
        if ns == nd or b == 0:
            continue
        load[R + ns] += b
        load[R + N + nd] += b
        if router[ns] == router[nd]:
            continue
        if op.endpoints is None:
            es, ed = int(router[ns]), int(router[nd])
        else:
            es, ed = int(op.endpoints[ns]), int(op.endpoints[nd])
        links, frac = op.route(topo, es, ed)
        for link, f in zip(links, frac):
            load[int(link)] += b * float(f)
    return load


def phase_flows(traffic):
    """Every phase of ``traffic`` as a list of (src, dst, bytes)."""
    out = []
    for x in traffic.phases:
        f = x.to_flows()
        out.append(list(zip(np.asarray(f.src), np.asarray(f.dst), np.asarray(f.nbytes, dtype=float))))
    return out


def job_loads(topo, routing, job) -> list[np.ndarray]:
    return [walk(topo, job.routing or routing, fl, np.asarray(job.placement.task_node))
            for fl in phase_flows(job.traffic)]


def bg_rates(topo, routing, jobs, bg: Background) -> np.ndarray:
    """The background's bytes/s on every link (docs/jobs.md "Background traffic")."""
    used = set()
    for j in jobs:
        used |= {int(n) for n in np.asarray(j.placement.task_node)}
    nodes = [n for n in range(topo.n_nodes) if n not in used]
    cap = np.asarray(topo.capacity, dtype=float)
    rate = {n: bg.fraction * cap[topo.n_router_links + n] for n in nodes}
    if bg.fraction == 0 or len(nodes) < 2:
        return np.zeros(topo.n_links)
    if bg.pattern == "uniform":
        flows = [(a, b, rate[a] / (len(nodes) - 1)) for a in nodes for b in nodes if a != b]
    else:
        perm = TR.random_permutation(len(nodes), 1.0, bg.seed)
        flows = [(nodes[int(s)], nodes[int(d)], rate[nodes[int(s)]]) for s, d in zip(perm.src, perm.dst) if s != d]
    return walk(topo, bg.routing or routing, flows, np.arange(topo.n_nodes))


def solo_times(loads: list[np.ndarray], left: np.ndarray) -> list[float]:
    """Each phase's time alone: max over links of load / capacity left (inf if a loaded link has none)."""
    out = []
    for L in loads:
        t = 0.0
        for link in np.nonzero(L > 0)[0]:
            t = max(t, np.inf if left[link] <= 0 else L[link] / left[link])
        out.append(t)
    return out


def max_min(rates: dict[int, dict[int, float]], cap: np.ndarray) -> dict[int, float]:
    """Max-min fair speeds <= 1: repeatedly the most constrained link freezes its unfrozen users."""
    speed, free = {}, set(rates)
    while free:
        best, blink = 1.0, None
        for link in {l for j in free for l in rates[j]}:
            taken = sum(speed[j] * rates[j].get(link, 0.0) for j in speed)
            per = sum(rates[j].get(link, 0.0) for j in free)
            if per > 0 and (cap[link] - taken) / per < best:
                best, blink = max((cap[link] - taken) / per, 0.0), link
        if blink is None:
            speed.update({j: 1.0 for j in free})
            break
        hit = {j for j in free if rates[j].get(blink, 0.0) > 0}
        speed.update({j: best for j in hit})
        free -= hit
    return speed


def together(loads: list[list[np.ndarray]], left: np.ndarray) -> np.ndarray:
    """Finish time of every job, all starting at 0, phases in a row, speeds max-min fair between events."""
    J = len(loads)
    T = [solo_times(L, left) for L in loads]
    ph, rem, fin, now = [0] * J, [0.0] * J, np.full(J, np.inf), 0.0

    def settle(j):
        while ph[j] < len(T[j]) and rem[j] <= 0:
            rem[j] = T[j][ph[j]]
            if rem[j] > 0:
                return
            ph[j] += 1
        if ph[j] >= len(T[j]):
            fin[j] = now

    for j in range(J):
        rem[j] = 0.0
        settle(j)
    while True:
        run = [j for j in range(J) if ph[j] < len(T[j]) and np.isfinite(T[j][ph[j]])]
        if not run:
            return fin
        rates = {j: {int(l): loads[j][ph[j]][l] / T[j][ph[j]] for l in np.nonzero(loads[j][ph[j]] > 0)[0]}
                 for j in run}
        s = max_min(rates, left)
        dt = min(rem[j] / s[j] for j in run)
        now += dt
        for j in run:
            rem[j] -= s[j] * dt
            if rem[j] <= 1e-12 * T[j][ph[j]]:
                rem[j] = 0.0
                ph[j] += 1
                settle(j)


def reference(topo, routing, jobs, bg=None) -> dict:
    """The documented per-job metrics of ``jobs`` (with ``bg``) on ``topo``."""
    loads = [job_loads(topo, routing, j) for j in jobs]
    bgr = np.zeros(topo.n_links) if bg is None else bg_rates(topo, routing, jobs, bg)
    left = np.asarray(topo.capacity, dtype=float) - bgr
    alone = np.array([sum(solo_times(L, left)) for L in loads])
    tog = together(loads, left)
    J = len(jobs)
    pair = np.ones((J, J))
    for a in range(J):
        for b in range(J):
            if a != b and not np.isfinite(alone[a]):
                pair[a, b] = np.nan  # a job that never finishes: its slowdown is NaN, with any other job too
            elif a != b and alone[a] > 0:
                pair[a, b] = together([loads[a], loads[b]], left)[0] / alone[a]
    with np.errstate(invalid="ignore", divide="ignore"):
        slow = np.where(alone > 0, tog / np.where(alone > 0, alone, 1), 1.0)
    slow = np.where(np.isinf(alone), np.nan, slow)
    phase_t = np.full((J, max(len(L) for L in loads)), np.nan)
    for j, L in enumerate(loads):
        phase_t[j, :len(L)] = solo_times(L, left)
    return dict(phase_completion_time_alone=phase_t, completion_time_alone=alone, completion_time=tog, slowdown=slow, interference=pair,
                makespan=float(np.max(tog)), total_bytes=np.array([sum(b for fl in phase_flows(j.traffic)
                                                                         for _, _, b in fl) for j in jobs]),
                job_link_load=np.stack([sum(L) for L in loads]), background_link_rate=bgr)


def compare(topo, routing, jobs, bg=None, **kw):
    ds = evaluate_jobs(topo, jobs, routing, bg, keep_link_load=True, **kw)
    ref = reference(topo, routing, jobs, bg)
    for k, v in ref.items():
        got = np.asarray(ds[k].values, dtype=float)
        finite = np.abs(np.asarray(v, dtype=float)[np.isfinite(v)])  # (a blocked job's inf is no scale)
        np.testing.assert_allclose(got, v, rtol=REL, atol=1e-12 * max(1.0, float(finite.max(initial=0.0))),
                                   err_msg=k, equal_nan=True)
    return ds, ref


# --------------------------------------------------------------------------------------------
# random small cases
# --------------------------------------------------------------------------------------------


def machine(k: int):
    """A small network and one of its routings, by index."""
    return [
        (lambda: ev.torus((3, 3), nodes_per_router=2), lambda: ev.dor()),
        (lambda: ev.torus((4, 2)), lambda: ev.dor(tie="split")),
        (lambda: ev.torus((2, 3, 2), wrap=False), lambda: ev.dor()),
        (lambda: ev.dragonfly(2, 4, 2), lambda: ev.minimal()),
        (lambda: ev.dragonfly(2, 4, 2), lambda: ev.valiant()),
        (lambda: fat_tree(children=[4, 4]), lambda: dmodk()),
        (lambda: fat_tree(children=[2, 2, 2]), lambda: ecmp_spray()),
        (lambda: fat_tree(children=[4, 4]), lambda: ecmp(seed=3)),
    ][k % 8]


def random_jobs(topo, rng, shared_nodes: bool, zero_job: bool, most: int = 10**9):
    """2-4 jobs on disjoint (or, ``shared_nodes``, overlapping) nodes, 1-3 phases, several tasks per node."""
    J = int(rng.integers(2, 5))
    nodes = rng.permutation(topo.n_nodes)
    per = max(1, topo.n_nodes // (J + 1))
    jobs = []
    for j in range(J):
        mine = nodes[j * per:(j + 1) * per] if not shared_nodes else rng.choice(topo.n_nodes, per + 1, replace=False)
        tpn = int(rng.integers(1, 3))
        task_node = np.repeat(mine, tpn)
        k = task_node.size
        if k < 2:
            task_node, k = np.repeat(mine, 2), 2 * mine.size
        phases = []
        for _ in range(int(rng.integers(1, 4))):
            nf = int(rng.integers(1, min(3 * k, most)))
            nb = rng.integers(1, 10, nf) * 1e5 * (0 if zero_job and j == 0 else 1)
            phases.append(TR.from_flows(k, rng.integers(0, k, nf), rng.integers(0, k, nf), nb))
        tr = phases[0] if len(phases) == 1 else TR.phased(phases)
        jobs.append(Job(tr, P.explicit(topo, task_node, name=f"p{j}"), name=f"j{j}"))
    return jobs


@pytest.mark.parametrize("seed", range(10))
def test_jobs_against_the_walk_and_the_event_loop(seed):
    rng = np.random.default_rng(seed)
    mk_topo, mk_rt = machine(seed)
    topo = mk_topo()
    jobs = random_jobs(topo, rng, shared_nodes=seed % 5 == 4, zero_job=seed % 3 == 0)
    compare(topo, mk_rt(), jobs, exclusive_nodes=seed % 5 != 4)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("pattern", ["uniform", "random_permutation"])
def test_jobs_with_background_against_the_walk(seed, pattern):
    rng = np.random.default_rng(100 + seed)
    mk_topo, mk_rt = machine(seed)
    topo = mk_topo()
    jobs = random_jobs(topo, rng, shared_nodes=False, zero_job=False)
    bg = Background(float(rng.choice([0.1, 0.3, 0.6])), pattern, seed=seed if pattern != "uniform" else 0)
    compare(topo, mk_rt(), jobs, bg)


# --------------------------------------------------------------------------------------------
# sharing=max_min: every message a flow (no latency model), weighted max-min fair rates between events
# --------------------------------------------------------------------------------------------


def flow_paths(topo, routing, job) -> list[list[tuple[dict, float]]]:
    """Per phase, every message leaving its node: ({link: fraction}, bytes)."""
    out = []
    for fl in phase_flows(job.traffic):
        msgs = []
        for s, d, b in fl:
            one = walk(topo, job.routing or routing, [(s, d, 1.0)], np.asarray(job.placement.task_node))
            if b > 0 and one.any():
                msgs.append(({int(l): one[l] for l in np.nonzero(one)[0]}, float(b)))
        out.append(msgs)
    return out


def weighted_rates(paths: list[dict], weights: list[float], cap: np.ndarray) -> list[float]:
    """Weighted max-min fair rates of flows crossing links with fractions (progressive filling)."""
    rate, free, level = [0.0] * len(paths), set(range(len(paths))), 0.0
    while free:
        links = {l for f in free for l in paths[f]}
        best, blink = np.inf, None
        for l in links:
            taken = sum(rate[f] * paths[f].get(l, 0.0) for f in range(len(paths)) if f not in free)
            per = sum(weights[f] * paths[f].get(l, 0.0) for f in free)
            if per > 0 and (cap[l] - taken) / per < best:
                best, blink = (cap[l] - taken) / per, l
        level = best
        for f in [f for f in free if paths[f].get(blink, 0.0) > 0]:
            rate[f] = weights[f] * level
            free.discard(f)
    return rate


def flow_finish(per_job: list[list[list]], cap: np.ndarray, fairness: str) -> np.ndarray:
    """Last arrival of every job's messages, every job's phases in a row, all jobs starting at 0."""
    J = len(per_job)
    ph, left, fin, now = [0] * J, [None] * J, np.zeros(J), 0.0

    def advance(j):
        while ph[j] < len(per_job[j]) and not left[j]:
            left[j] = {k: m[1] for k, m in enumerate(per_job[j][ph[j]])}
            if not left[j]:
                ph[j] += 1
    for j in range(J):
        left[j] = {}
        advance(j)
    while any(left[j] for j in range(J)):
        act = [(j, k) for j in range(J) for k in left[j]]
        paths = [per_job[j][ph[j]][k][0] for j, k in act]
        w = [1.0 if fairness == "flow" else 1.0 / len(left[j]) for j, _ in act]
        r = weighted_rates(paths, w, cap)
        dt = min(left[j][k] / x for (j, k), x in zip(act, r))
        now += dt
        for (j, k), x in zip(act, r):
            left[j][k] -= x * dt
            if left[j][k] <= 1e-12 * per_job[j][ph[j]][k][1]:
                del left[j][k]
                fin[j] = now
                if not left[j]:
                    ph[j] += 1
                    advance(j)
    return fin


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("fairness", ["flow", "job"])
def test_max_min_sharing_against_a_flow_event_loop(seed, fairness):
    rng = np.random.default_rng(300 + seed)
    mk_topo, mk_rt = machine([0, 3, 5, 4][seed])
    topo, rt = mk_topo(), mk_rt()
    jobs = random_jobs(topo, rng, shared_nodes=True, zero_job=seed == 2, most=24)[:3]
    ds = evaluate_jobs(topo, jobs, rt, sharing="max_min", fairness=fairness, exclusive_nodes=False)
    per = [flow_paths(topo, rt, j) for j in jobs]
    cap = np.asarray(topo.capacity, dtype=float)
    np.testing.assert_allclose(ds.time_max_min.values, flow_finish(per, cap, fairness), rtol=1e-6)
    alone = [flow_finish([p], cap, fairness)[0] for p in per]
    np.testing.assert_allclose(ds.time_max_min_alone.values, alone, rtol=1e-6)
    ref = flow_finish(per, cap, fairness) / np.where(np.array(alone) > 0, alone, np.inf)
    np.testing.assert_allclose(ds.slowdown_max_min.values, np.where(np.array(alone) > 0, ref, 1.0), rtol=1e-6)


# --------------------------------------------------------------------------------------------
# refusals: the field, the value, what is allowed
# --------------------------------------------------------------------------------------------

CFG = ["topology=torus", "topology.dims=[4,4]", "routing=dor", "traffic=random_permutation", "traffic.n_tasks=8",
       "placement=linear"]


@pytest.mark.parametrize("override,message", [
    ("jobs=[{name: a}, {name: b, placement: {first_node: 4}}]",
     r"^jobs\[1\]\.placement = 'linear/1' is invalid: allowed is nodes no other job uses .*node 4 .*jobs\[0\] \(a\)"),
    ("jobs=[{name: a, traffic: {n_tasks: 17}}]", r"^jobs\[0\]\.placement\.n_tasks = 17 is invalid: allowed is at most"),
    ("jobs=[{name: a, colour: red}]", r"^jobs\[0\]\.colour = 'red' is invalid: allowed is a key of a job"),
    ("jobs=[{name: a}, {name: a, placement: {first_node: 8}}]",
     r"^jobs\[1\]\.name = 'a' is invalid: allowed is distinct job names\. jobs\[0\] has it too"),
    ("jobs=[{name: a}, {placement: {first_node: 8}, routing: {kind: minimal}}]",
     r"^jobs\[1\]\.routing\.kind = 'minimal' is invalid: allowed is one of \[.*'dor'"),
])
def test_bad_job_configs_are_refused_naming_the_job(override, message):
    jp = None
    with pytest.raises(ConfigError, match=message):
        jp = config.build_jobs(config.compose_object(CFG + [override]))
        evaluate_jobs(jp.topology, list(jp.jobs), jp.routing, jp.background, exclusive_nodes=jp.exclusive_nodes)


def _python_case(k: int):
    """Bad jobs from Python, by index: (jobs, keywords, the message's start)."""
    t, big = ev.torus((3, 3)), ev.torus((4, 4))
    a = Job(TR.all_to_all(4), P.linear(t, 4), name="a")
    return t, [
        ([Job(TR.all_to_all(12), P.linear(big, 12))], {}, r"^jobs\[0\]\.placement = .* made for torus 3x3"),
        ([Job(TR.all_to_all(2), P.linear(t, 2), name=3), Job(TR.all_to_all(2), P.linear(t, 2, 1, 4), name="3")],
         {}, r"^jobs\[0\]\.name = 3 is invalid: allowed is a non-empty string"),
        ([Job(TR.all_to_all(2), P.linear(t, 2), name=["x"])], {}, r"^jobs\[0\]\.name = \['x'\] is invalid"),
        ([a, Job(TR.all_to_all(2), P.linear(t, 2, 1, 5), ev.minimal())], {},
         r"^jobs\[1\]\.routing\.kind = 'minimal' is invalid: allowed is one of"),
        ([a], {"background": Background(0.2, routing=ev.minimal())},
         r"^background\.routing\.kind = 'minimal' is invalid: allowed is one of"),
        ([a, Job(TR.all_to_all(2), P.linear(t, 2, 1, 3))], {}, r"^jobs\[1\]\.placement = .*node 3 is also used"),
    ][k]


@pytest.mark.parametrize("k", range(6))
def test_bad_jobs_from_python_are_refused_naming_the_field(k):
    t, (jobs, kw, message) = _python_case(k)
    with pytest.raises(ConfigError, match=message):
        evaluate_jobs(t, jobs, ev.dor(), **kw)


def test_adaptive_background_routing_is_refused():
    """docs/adaptive_routing.md: background traffic (routed alone, its loads added) refuses adaptive routings."""
    from evaluator.routing import ugal

    t = ev.dragonfly(2, 4, 2)
    a = Job(TR.all_to_all(8), P.linear(t, 8))
    with pytest.raises(ConfigError, match=r"^background\.routing = 'ugal' is invalid: allowed is a routing whose "
                                          r"link loads are linear"):
        evaluate_jobs(t, [a], "minimal", Background(0.3, routing=ugal()))
    with pytest.raises(ConfigError, match=r"^routing = 'ugal' is invalid: allowed is a routing whose link loads"):
        evaluate_jobs(t, [Job(a.traffic, a.placement, "minimal")], ugal(), Background(0.3))


def test_jobs_with_their_own_routings_and_a_background_routing():
    """Each job routed by its own routing, the background by its own: loads and times against the walk."""
    rng = np.random.default_rng(7)
    topo = ev.dragonfly(2, 4, 2)
    jobs = random_jobs(topo, rng, shared_nodes=False, zero_job=False)
    kinds = [ev.valiant(), None, ev.valiant_router(), ev.minimal()]
    jobs = [Job(j.traffic, j.placement, kinds[i % 4], j.name) for i, j in enumerate(jobs)]
    for bg in (Background(0.4, routing=ev.valiant()), Background(0.4, "random_permutation", seed=5)):
        ds, _ = compare(topo, ev.minimal(), jobs, bg)
        assert ds.background_link_rate.values.max() > 0


def test_a_job_the_background_blocks_has_no_interference_of_1():
    """A job that never finishes (the background fills a link it needs) has slowdown NaN, and so its row of
    ``interference`` off the diagonal (it was 1: 'not slowed'); the two finishing jobs that share links slow each
    other 2x (the reference's event loop), and the summary still names the worst pair."""
    from evaluator.jobs import job_summary_lines

    topo = ev.torus((8,), nodes_per_router=4)
    jobs = [Job(TR.all_to_all(4, 1e6), P.explicit(topo, np.array([0, 4, 8, 12]), name="pa"), name="a"),
            Job(TR.all_to_all(4, 1e6), P.explicit(topo, np.array([1, 5, 9, 13]), name="pb"), name="b"),
            Job(TR.all_to_all(2, 1e6), P.explicit(topo, np.array([2, 30]), name="pc"), name="c")]
    ds, ref = compare(topo, ev.dor(), jobs, Background(0.9, "random_permutation", seed=0))
    assert np.isinf(ref["completion_time_alone"][2]) and np.isfinite(ref["completion_time_alone"][:2]).all()
    inter = ds.interference.values
    assert np.isnan(inter[2, :2]).all() and inter[2, 2] == 1.0 and np.isnan(ds.slowdown.values[2])
    assert inter[0, 1] == pytest.approx(2.0) and inter[1, 0] == pytest.approx(2.0)
    assert any(line.startswith("worst pair  a slowed 2") for line in job_summary_lines(ds))


def test_a_background_that_fills_a_link_up_to_rounding_blocks_it(monkeypatch):
    """Six background flows of a sixth of every link's capacity (1 GB/s links: the float sum 1.2e-7 B/s below
    it): the links are full, and a job that needs them never finishes, in the speeds model and under max-min
    (it had the finite time of the 1.2e-7 B/s left)."""
    import evaluator.jobs._evaluate as E

    topo = ev.torus((4,), link_bandwidth=1e9, injection_bandwidth=1e9)

    def full(topology, background, nodes, routing):
        rate = np.zeros(topology.n_links)
        for _ in range(6):
            rate += np.asarray(topology.capacity, dtype=np.float64) / 6
        return rate

    monkeypatch.setattr(E, "background_rates", full)
    cap = np.asarray(topo.capacity, dtype=np.float64)
    assert (full(topo, None, None, None) < cap).all() and (cap - full(topo, None, None, None) > 0).all()
    job = Job(TR.all_to_all(2, 1e6), P.explicit(topo, np.array([0, 2])), name="a")
    for sharing in ("bound", "max_min"):
        ds = evaluate_jobs(topo, [job], "dor", background=Background(0.1), sharing=sharing)
        assert np.isinf(float(ds.completion_time[0])) and str(ds.blocked_reason.values[0]), sharing
        if sharing == "max_min":
            assert np.isinf(float(ds.time_max_min[0]))
