"""Differential audit of the workload scheduler (`evaluator schedule`) against references written from the docs.

docs/workload.md defines the scheduler: events at one time applied ends first, then one pass; FCFS by
(submission, job number); the head starts when placed; a blocked head's shadow time is the expected end
(start + requested time, the request raised to the run time) of the running job whose release lets it fit;
each later job among the first ``backfill_depth`` starts now if it fits now and ends (as requested) by the
shadow time or leaves the head room at it; run times on the RDN are ``run - f * run * saving(S)`` with S
looked up (interpolated, 1 below the table, clamped above) for the job's mode and groups. The references below
are plain Python from those definitions: a node-count EASY (for the count-only policies, whose starts depend
on counts alone), node choices of `unrestricted`/`contiguous` (lowest idle ids) and `slurm_round_robin` (the
deal), and a policy-as-oracle EASY for the topology policies (GRAP, and `contiguous` asked by placement).
The SWF reader is checked against the Standard Workload Format (18 numeric fields, -1 unknown, ';' comments).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from evaluator import workload as W
from evaluator.errors import ConfigError
from evaluator.policies import JobRequest
from evaluator.workload.analysis import summary, utilisation, wait_reduction
from evaluator.workload.swf import parse_swf, read_swf, write_swf

MODES = ("minimal_balance", "adaptive", "custom_balance", "custom")
DEPTHS = (None, 0, 1, 2, 500)


# ----------------------------------------------------------------------------------------------- references
def ref_easy(jobs, total, depth=None, place=None, dur=None):
    """FCFS + EASY by node counts, from docs/workload.md. ``jobs``: dicts id, sub, run, req, size.
    ``place(j, t)`` -> the job's node ids (called once per start, in start order; optional);
    ``dur(j, nodes)`` -> its actual run time (default: the trace's). Returns per job id
    ``{start, end, bf, res, nodes}``."""
    n = len(jobs)
    order = sorted(range(n), key=lambda i: (jobs[i]["sub"], jobs[i]["id"]))
    size = [jobs[i]["size"] for i in range(n)]
    req = [max(jobs[i]["req"], jobs[i]["run"]) for i in range(n)]
    queue, running, out, first_res = [], [], {}, {}
    free, k = total, 0

    def start(i, t, bf):
        nonlocal free
        nodes = place(i, t) if place else None
        a = jobs[i]["run"] if dur is None else dur(i, nodes)
        req[i] = max(req[i], a)
        free -= size[i]
        running.append((t + a, t + req[i], i, nodes))
        out[jobs[i]["id"]] = {"start": t, "end": t + a, "bf": bf, "nodes": nodes, "i": i}

    while k < n or running:
        t = min([jobs[order[k]]["sub"]] if k < n else [math.inf])
        t = min([t] + [r[0] for r in running])
        for r in [r for r in running if r[0] <= t]:
            running.remove(r)
            free += size[r[2]]
            if place:
                place.release(r[3])
        while k < n and jobs[order[k]]["sub"] <= t:
            queue.append(order[k])
            k += 1
        while queue and size[queue[0]] <= free:
            start(queue.pop(0), t, False)
        if not queue:
            continue
        h, f, shadow = queue[0], free, None
        for _, est, i, _ in sorted(running, key=lambda r: (r[1], r[2])):
            f += size[i]
            if f >= size[h]:
                shadow = est
                break
        first_res.setdefault(h, shadow)
        extra = free + sum(size[i] for _, est, i, _ in running if est <= shadow) - size[h]
        for j in list(queue[1:] if depth is None else queue[1:1 + depth]):
            if size[j] > free:
                continue
            if t + req[j] > shadow:
                if size[j] > extra:
                    continue
                extra -= size[j]
            queue.remove(j)
            start(j, t, True)
    for o in out.values():
        o["res"] = first_res.get(o["i"], math.nan)
    return out


class LowestIdle:
    """Reference node choice of `unrestricted` and `contiguous`: the lowest idle node ids."""

    def __init__(self, total, sizes):
        self.busy, self.sizes = np.zeros(total, bool), sizes

    def __call__(self, i, t):
        nodes = np.flatnonzero(~self.busy)[:self.sizes[i]]
        self.busy[nodes] = True
        return nodes

    def release(self, nodes):
        self.busy[nodes] = False


class RoundRobinDeal(LowestIdle):
    """Reference `slurm_round_robin` (docs): nodes dealt one at a time to the groups in turn from a cursor that
    moves on one group per job, groups with no idle node left skipped; per group the lowest idle ids."""

    def __init__(self, groups, G, sizes):
        super().__init__(groups * G, sizes)
        self.groups, self.G, self.cursor = groups, G, 0

    def __call__(self, i, t):
        idle = [list(np.flatnonzero(~self.busy[g * self.G:(g + 1) * self.G]) + g * self.G)
                for g in range(self.groups)]
        got, g = [], self.cursor
        while len(got) < self.sizes[i]:
            if idle[g]:
                got.append(idle[g].pop(0))
            g = (g + 1) % self.groups
        self.cursor = (self.cursor + 1) % self.groups
        nodes = np.sort(np.asarray(got, np.int64))
        self.busy[nodes] = True
        return nodes


def ref_easy_oracle(jobs, policy, depth=None):
    """FCFS + EASY asking a policy (black box: allocate on it or on copies, release) instead of counting,
    as docs/workload.md's reservation and backfill steps read. Returns id -> (start, end, bf, res, groups)."""
    order = sorted(range(len(jobs)), key=lambda i: (jobs[i]["sub"], jobs[i]["id"]))
    queue, running, out, first_res, k = [], [], {}, {}, 0

    def places(pol, i):
        return pol.copy().allocate(jobs[i]["rq"]) is not None

    def start(i, a, t, bf):
        req = max(jobs[i]["req"], jobs[i]["run"])
        running.append((t + jobs[i]["run"], t + req, i, a))
        out[jobs[i]["id"]] = [t, t + jobs[i]["run"], bf, i, len(a.groups)]

    while k < len(jobs) or running:
        t = min([jobs[order[k]]["sub"]] if k < len(jobs) else [math.inf])
        t = min([t] + [r[0] for r in running])
        for r in [r for r in running if r[0] <= t]:
            running.remove(r)
            policy.release(r[3])
        while k < len(jobs) and jobs[order[k]]["sub"] <= t:
            queue.append(order[k])
            k += 1
        while queue and (a := policy.allocate(jobs[queue[0]]["rq"])) is not None:
            start(queue.pop(0), a, t, False)
        if not queue:
            continue
        h, pc, shadow = queue[0], policy.copy(), None
        for _, est, _, al in sorted(running, key=lambda r: (r[1], r[2])):
            pc.release(al)
            if places(pc, h):
                shadow = est
                break
        first_res.setdefault(h, shadow)
        for j in list(queue[1:] if depth is None else queue[1:1 + depth]):
            a = policy.allocate(jobs[j]["rq"])
            if a is None:
                continue
            if t + max(jobs[j]["req"], jobs[j]["run"]) > shadow:
                pc = policy.copy()
                for _, est, _, al in running:
                    if est <= shadow:
                        pc.release(al)
                if not places(pc, h):
                    policy.release(a)
                    continue
            queue.remove(j)
            start(j, a, t, True)
    return {jid: (o[0], o[1], o[2], first_res.get(o[3], math.nan), o[4]) for jid, o in out.items()}


def ref_speedup(table: dict, mode: str, g: int) -> float:
    """docs: exact or linearly interpolated between the table's group counts; below the smallest 1; above the
    largest the largest's value."""
    pts = sorted(table[mode].items())
    if g < pts[0][0]:
        return 1.0
    if g >= pts[-1][0]:
        return pts[-1][1]
    for (g0, s0), (g1, s1) in zip(pts, pts[1:]):
        if g0 <= g <= g1:
            return s0 + (s1 - s0) * (g - g0) / (g1 - g0)
    raise AssertionError


def ref_run_time(run, f, s, rule):
    saving = 1 - 1 / s if rule == "time_ratio" else min(s - 1, 1.0)
    return run - f * run * saving


# ----------------------------------------------------------------------------------------------- traces
def random_jobs(seed, max_groups=3, max_G=4, max_jobs=40, topo=False):
    """A small random trace: ties in submit times, zero-length jobs, requests below and above the run time,
    job numbers out of order. ``topo``: GRAP modes and requirements too."""
    rng = np.random.default_rng(seed)
    groups, G = int(rng.integers(2 if topo else 1, max_groups + 1)), int(rng.integers(2 if topo else 1, max_G + 1))
    n = int(rng.integers(1, max_jobs))
    ids = rng.permutation(np.arange(1, 3 * n + 1))[:n]
    sub = np.sort(rng.integers(0, 30, n)).astype(float)
    run = rng.integers(0, 20, n).astype(float)
    req = np.maximum(run + rng.integers(-3, 10, n), 0).astype(float)
    size = rng.integers(1, groups * G + 1, n)
    jobs = [{"id": int(ids[i]), "sub": sub[i], "run": run[i], "req": req[i], "size": int(size[i]),
             "mode": "minimal_balance", "r": ()} for i in range(n)]
    if topo:
        for j in jobs:
            m, s, r = MODES[rng.integers(4)], j["size"], ()
            if s > G and m == "custom_balance":
                ks = [q for q in range(-(-s // G), groups + 1) if s % q == 0]
                m, r = ("custom_balance", (s // ks[0],) * ks[0]) if ks else ("minimal_balance", ())
            elif s > G and m == "custom":
                r = tuple([G] * (s // G) + ([s % G] if s % G else []))
            j["mode"], j["r"] = m, r
            j["rq"] = JobRequest(j["id"], s, m, r)
    return groups, G, jobs


def to_trace(jobs, mpi=None):
    topo = any(j["mode"] != "minimal_balance" or j["r"] for j in jobs)
    return W.Trace(job_id=[j["id"] for j in jobs], submit=[j["sub"] for j in jobs],
                   run_time=[j["run"] for j in jobs], requested_time=[j["req"] for j in jobs],
                   nodes=[j["size"] for j in jobs],
                   mode=np.array([j["mode"] for j in jobs], object) if topo else None,
                   requirements=tuple(j["r"] for j in jobs) if topo else None,
                   mpi_fraction=mpi)


class Recorder:
    """A policy seen by `simulate`: every allocation and release made on the real policy is recorded."""

    def __init__(self, inner):
        self.inner, self.log = inner, []

    def __getattr__(self, k):
        return getattr(self.inner, k)

    def allocate(self, req):
        a = self.inner.allocate(req)
        if a is not None:
            self.log.append(a)
        return a

    def release(self, a):
        self.inner.release(a)


def by_id(ds):
    return {int(j): k for k, j in enumerate(ds.job.values)}


def assert_no_node_twice(ds, allocs, total):
    """No node held by two jobs at one time; every allocation within the machine and of the job's size."""
    pos = by_id(ds)
    spans = []
    allocs = list({a.job_id: a for a in allocs}.values())  # a backfill candidate refused is placed, then freed
    for a in allocs:
        k = pos[a.job_id]
        nodes = np.asarray(a.nodes)
        assert nodes.size == ds.nodes.values[k] and len(set(nodes.tolist())) == nodes.size
        assert nodes.min() >= 0 and nodes.max() < total
        spans.append((ds.start.values[k], ds.end.values[k], set(nodes.tolist()), a.job_id))
    assert len(spans) == ds.sizes["job"]  # every job allocated once on the real policy
    for x in range(len(spans)):
        for y in range(x + 1, len(spans)):
            s0, e0, n0, j0 = spans[x]
            s1, e1, n1, j1 = spans[y]
            if s0 < e1 and s1 < e0:
                assert not (n0 & n1), f"jobs {j0} and {j1} share nodes {sorted(n0 & n1)} at once"


def compare(ds, ref, what="", groups=False):
    pos = by_id(ds)
    assert set(pos) == set(ref)
    for jid, r in ref.items():
        k = pos[jid]
        got = (ds.start.values[k], ds.end.values[k], bool(ds.backfilled.values[k]), ds.reservation.values[k])
        exp = (r["start"], r["end"], r["bf"], r["res"]) if isinstance(r, dict) else r[:4]
        ok = got[:3] == tuple(exp[:3]) and (got[3] == exp[3] or (math.isnan(got[3]) and math.isnan(exp[3])))
        assert ok, f"{what} job {jid}: tool (start, end, backfilled, reservation) {got}, reference {exp}"
        assert ds.wait.values[k] == got[0] - ds.submit.values[k]
        if groups:
            assert ds.groups.values[k] == r[4], f"{what} job {jid}: groups {ds.groups.values[k]} != {r[4]}"


# ----------------------------------------------------------------------------------------------- scheduler
@pytest.mark.parametrize("policy", ["unrestricted", "slurm_round_robin", "contiguous", "random"])
def test_count_only_policies_start_every_job_as_the_reference_easy(policy):
    """Starts, ends, waits, backfilled flags and first reservations of 52 random traces per policy, every
    backfill depth, equal the node-count EASY of the docs (these policies' only constraint is the count)."""
    for seed in list(range(50)) + [153, 197]:  # 153, 197: a backfill moved a job into the window (depth 2, 1)
        groups, G, jobs = random_jobs(seed)
        depth = DEPTHS[seed % len(DEPTHS)]
        ds = W.simulate(to_trace(jobs), W.make_policy(policy, groups, G, seed=seed), backfill_depth=depth)
        compare(ds, ref_easy(jobs, groups * G, depth), f"{policy} seed {seed} depth {depth}")


def test_backfill_window_refilled_by_a_backfill_is_tried_at_the_next_submission():
    """Depth 1, one group of 4 nodes. R (2 nodes, 0-10) runs; head H (4 nodes) waits for 10. At t=2, B and C
    (1 node, 5 s each) arrive: B backfills, C is outside the window of 1 until B leaves it. At t=3 D arrives:
    that pass's window is [C], C fits (1 idle node) and ends by 10, so it starts at 3 (docs: each pass tries
    the first backfill_depth jobs). The tool started it at 7, when B ended."""
    jobs = [{"id": 1, "sub": 0.0, "run": 10.0, "req": 10.0, "size": 2, "mode": "minimal_balance", "r": ()},
            {"id": 2, "sub": 1.0, "run": 5.0, "req": 5.0, "size": 4, "mode": "minimal_balance", "r": ()},
            {"id": 3, "sub": 2.0, "run": 5.0, "req": 5.0, "size": 1, "mode": "minimal_balance", "r": ()},
            {"id": 4, "sub": 2.0, "run": 5.0, "req": 5.0, "size": 1, "mode": "minimal_balance", "r": ()},
            {"id": 5, "sub": 3.0, "run": 5.0, "req": 5.0, "size": 4, "mode": "minimal_balance", "r": ()}]
    ref = ref_easy(jobs, 4, depth=1)
    assert ref[4]["start"] == 3.0
    for policy in ("unrestricted", "grap", "contiguous"):
        ds = W.simulate(to_trace(jobs), W.make_policy(policy, 1, 4), backfill_depth=1)
        compare(ds, ref, policy)


@pytest.mark.parametrize("policy", ["grap", "contiguous"])
def test_topology_policies_start_every_job_as_the_policy_oracle_easy(policy):
    """GRAP (random modes and requirements) and contiguous, asked as black boxes by the docs' reservation and
    backfill rules, on 150 random traces on 2-4 groups of 2-4 nodes: every start, end, flag, first reservation
    and groups count equals (seed 135 found a job the tool left waiting 4 s: tried before a backfill moved
    the other small jobs' placements, never retried at the later submission)."""
    for seed in range(150):
        groups, G, jobs = random_jobs(seed, 4, 4, 30, topo=True)
        depth = DEPTHS[seed % len(DEPTHS)]
        ds = W.simulate(to_trace(jobs), W.make_policy(policy, groups, G, seed=seed), backfill_depth=depth)
        ref = ref_easy_oracle(jobs, W.make_policy(policy, groups, G, seed=seed), depth)
        compare(ds, ref, f"{policy} seed {seed} depth {depth}", groups=True)


def test_grap_two_ports_and_unrestricted_through_copies_match_the_oracle():
    """GRAP with 2 ports per group, and `unrestricted` hidden behind a wrapper without ``count_only`` (the
    scheduler then asks it through copies), against the oracle EASY."""

    class NoCount(Recorder):
        count_only = False

    for seed in range(40):
        groups, G, jobs = random_jobs(1000 + seed, 4, 4, 25, topo=True)
        depth = DEPTHS[seed % len(DEPTHS)]
        for name, params, wrap in (("grap", {"ports_per_group": 2}, False), ("unrestricted", {}, True)):
            pol = W.make_policy(name, groups, G, seed=seed, **params)
            ds = W.simulate(to_trace(jobs), NoCount(pol) if wrap else pol, backfill_depth=depth,
                            nodes_per_group=G)
            ref = ref_easy_oracle(jobs, W.make_policy(name, groups, G, seed=seed, **params), depth)
            compare(ds, ref, f"{name} seed {seed}", groups=True)


@pytest.mark.parametrize("policy", ["unrestricted", "contiguous", "slurm_round_robin"])
def test_allocated_nodes_equal_the_reference_choice_and_never_overlap(policy):
    """Every job's nodes on the real policy equal the reference choice (lowest idle ids; the round-robin
    deal), none held twice at one time, none beyond the machine; ``groups`` is the groups they span."""
    for seed in range(40):
        groups, G, jobs = random_jobs(2000 + seed, 4, 4)
        sizes = [j["size"] for j in jobs]
        place = RoundRobinDeal(groups, G, sizes) if policy == "slurm_round_robin" else LowestIdle(groups * G, sizes)
        ref = ref_easy(jobs, groups * G, None, place)
        rec = Recorder(W.make_policy(policy, groups, G))
        ds = W.simulate(to_trace(jobs), rec, backfill_depth=None)
        compare(ds, ref, f"{policy} seed {seed}")
        assert_no_node_twice(ds, rec.log, groups * G)
        pos = by_id(ds)
        for a in rec.log:
            exp = ref[a.job_id]["nodes"]
            assert np.array_equal(np.asarray(a.nodes), exp), f"{policy} seed {seed} job {a.job_id}"
            assert ds.groups.values[pos[a.job_id]] == np.unique(exp // G).size


@pytest.mark.parametrize("policy", ["grap", "random"])
def test_grap_and_random_never_give_a_node_twice(policy):
    """The policies without a node reference: no node held twice at once, sizes kept, within the machine;
    GRAP's groups count equals the groups its nodes lie in."""
    for seed in range(30):
        groups, G, jobs = random_jobs(3000 + seed, 4, 4, 30, topo=policy == "grap")
        rec = Recorder(W.make_policy(policy, groups, G, seed=seed))
        ds = W.simulate(to_trace(jobs), rec, backfill_depth=DEPTHS[seed % len(DEPTHS)])
        assert_no_node_twice(ds, rec.log, groups * G)
        pos = by_id(ds)
        for a in rec.log:
            assert ds.groups.values[pos[a.job_id]] == np.unique(np.asarray(a.nodes) // G).size


# ----------------------------------------------------------------------------------------------- speedups, summary
TABLE = {"minimal_balance": {2: 1.5, 4: 1.1}, "adaptive": {3: 2.0, 5: 0.8}}


@pytest.mark.parametrize("rule", ["time_ratio", "excess"])
def test_run_times_follow_the_speedup_of_the_groups_each_job_spans(rule):
    """On the RDN each job's run time is ``run - f * run * saving(S)``, S looked up at its start for its mode
    and the groups its nodes span (NaN points skipped, 1 below the table, clamped above; 0.8 slows a job
    down and raises its request); starts follow from those run times (reference EASY with the lowest idle
    nodes, the `unrestricted` policy's choice)."""
    for seed in range(40):
        rng = np.random.default_rng(4000 + seed)
        groups, G, jobs = random_jobs(4000 + seed, 5, 3)
        for j in jobs:
            j["mode"] = ("minimal_balance", "adaptive")[rng.integers(2)]
        mpi = rng.uniform(0, 1, len(jobs)).round(2)
        sizes = [j["size"] for j in jobs]

        def dur(i, nodes, jobs=jobs, mpi=mpi):
            s = ref_speedup(TABLE, jobs[i]["mode"], np.unique(nodes // G).size)
            return ref_run_time(jobs[i]["run"], mpi[i], s, rule)

        ref = ref_easy(jobs, groups * G, 500, LowestIdle(groups * G, sizes), dur)
        tr = to_trace(jobs, mpi).replace(mode=np.array([j["mode"] for j in jobs], object))
        table = W.SpeedupTable(W.speedup_table(TABLE, machine=(groups, G)))
        ds = W.simulate(tr, W.make_policy("unrestricted", groups, G), speedups=table, speedup_rule=rule)
        pos = by_id(ds)
        for jid, r in ref.items():
            k = pos[jid]
            i = r["i"]
            s = ref_speedup(TABLE, jobs[i]["mode"], np.unique(r["nodes"] // G).size)
            assert ds.speedup.values[k] == pytest.approx(s, rel=1e-12), f"seed {seed} job {jid}"
            assert ds.run_time.values[k] == pytest.approx(r["end"] - r["start"], rel=1e-12, abs=1e-9)
            assert ds.start.values[k] == pytest.approx(r["start"], abs=1e-9), f"seed {seed} job {jid}"
            assert bool(ds.backfilled.values[k]) == r["bf"]


def ref_summary(sub, start, end, run, nodes, total, bf, spd, step=60.0):
    """docs: mean / median / p95 wait, mean bounded slowdown (10 s), utilisation = busy nodes / total every
    minute from the first submission to the last end, makespan, backfilled share, mean speedup."""
    wait = [s - b for s, b in zip(start, sub)]
    t0, t1 = min(sub), max(end)
    ts, t = [], t0
    while t < t1:
        ts.append(t)
        t = t0 + step * len(ts)
    util = [sum(n for s, e, n in zip(start, end, nodes) if s <= x < e) / total for x in ts or [t0]]
    srt = sorted(wait)
    pos95 = 0.95 * (len(srt) - 1)
    lo = int(math.floor(pos95))
    p95 = srt[lo] + (srt[min(lo + 1, len(srt) - 1)] - srt[lo]) * (pos95 - lo)
    mid = len(srt) // 2
    median = srt[mid] if len(srt) % 2 else (srt[mid - 1] + srt[mid]) / 2
    bsld = [max((w + r) / max(r, 10.0), 1.0) for w, r in zip(wait, run)]
    return {"mean_wait": sum(wait) / len(wait), "median_wait": median, "p95_wait": p95,
            "mean_bounded_slowdown": sum(bsld) / len(bsld), "mean_utilisation": sum(util) / len(util),
            "makespan": t1 - t0, "backfilled_share": sum(bf) / len(bf), "mean_speedup": sum(spd) / len(spd)}


def test_summary_means_equal_the_reference_of_the_reference_schedule():
    """`summary` of a simulation equals the docs' metrics computed from the reference schedule (times scaled
    by 37 s so that the minute samples fall inside jobs)."""
    for seed in range(25):
        groups, G, jobs = random_jobs(5000 + seed, 3, 4)
        for j in jobs:
            j["sub"], j["run"], j["req"] = 37.0 * j["sub"], 37.0 * j["run"], 37.0 * j["req"]
        ref = ref_easy(jobs, groups * G, 500)
        ds = W.simulate(to_trace(jobs), W.make_policy("unrestricted", groups, G))
        rs = [ref[j["id"]] for j in jobs]
        exp = ref_summary([j["sub"] for j in jobs], [r["start"] for r in rs], [r["end"] for r in rs],
                          [j["run"] for j in jobs], [j["size"] for j in jobs], groups * G, [r["bf"] for r in rs],
                          [1.0] * len(jobs))
        got = summary(ds)
        for key, v in exp.items():
            assert got[key] == pytest.approx(v, rel=1e-12, abs=1e-9), f"seed {seed} {key}: {got[key]} != {v}"
        u = utilisation(ds)
        assert float(u.values.max()) <= 1.0 and float(u.values.min()) >= 0.0


def test_wait_reduction_is_one_minus_the_ratio_of_mean_waits_per_30_day_month():
    """Fig. 5a's reduction, per 30-day month of submission and overall, from two schedules of one trace."""
    rng = np.random.default_rng(7)
    n = 60
    sub = np.sort(rng.uniform(0, 80 * 86400, n)).round()
    tr = W.Trace(job_id=np.arange(n), submit=sub, run_time=rng.uniform(1, 5e5, n).round(),
                 requested_time=np.full(n, 1e6), nodes=rng.integers(1, 9, n))
    base = W.simulate(tr, W.make_policy("unrestricted", 2, 4))
    new = W.simulate(tr.replace(nodes=np.maximum(tr.nodes // 2, 1)), W.make_policy("unrestricted", 2, 4))
    wr = wait_reduction(base, new.assign_coords(job=base.job))
    month = ((sub - sub.min()) // (30 * 86400)).astype(int)
    for m in np.unique(month):
        wb, wn = base.wait.values[month == m].mean(), new.wait.values[month == m].mean()
        got = float(wr.wait_reduction.sel(month=f"M{m + 1:02d}"))
        if wb > 0:
            assert got == pytest.approx(1 - wn / wb, rel=1e-12)
        else:
            assert math.isnan(got)
    assert wr.attrs["overall_wait_reduction"] == pytest.approx(1 - float(new.wait.mean()) / float(base.wait.mean()), rel=1e-12)


# ----------------------------------------------------------------------------------------------- SWF
def swf_line(*fields):
    f = [str(x) for x in fields] + ["-1"] * (18 - len(fields))
    return " ".join(f)


def ref_parse(lines, ppn=1):
    """The SWF definition as the docs keep it: job number (1), submit (2), run time (4), size (8, else 5) in
    processors / ppn rounded up, request (9; unknown: the run time); run time or size unknown or 0: dropped.
    Sorted by submit time, then job number."""
    kept, dropped = [], 0
    for s in lines:
        s = s.strip()
        if not s or s.startswith(";"):
            continue
        f = [float(x) for x in s.split()]
        procs = f[7] if f[7] > 0 else f[4]
        if f[3] <= 0 or procs <= 0:
            dropped += 1
            continue
        kept.append((f[1], int(f[0]), f[3], f[8] if f[8] > 0 else f[3], -(-int(procs) // ppn)))
    kept.sort()
    return kept, dropped


def test_swf_reader_equals_the_format_on_random_files(tmp_path):
    """Random files (comments, blank lines, -1 and 0 in every kept field, equal submit times in reverse
    job order, sizes only in field 5): what `read_swf` keeps, in order, and what it drops; then the
    schedule of what it kept equals the reference EASY (FCFS ties by job number)."""
    for seed in range(30):
        rng = np.random.default_rng(6000 + seed)
        n, ppn = int(rng.integers(2, 50)), int(rng.integers(1, 4))
        ids = rng.permutation(np.arange(1, 2 * n + 1))[:n]
        lines = ["; Version: 2.2", ";", "; UnixStartTime: 1546300800", ""]
        for i in range(n):
            run = int(rng.choice([-1, 0, rng.integers(1, 50)], p=[0.1, 0.1, 0.8]))
            p8 = int(rng.choice([-1, 0, rng.integers(1, 9)], p=[0.2, 0.1, 0.7]))
            p5 = int(rng.choice([-1, 0, rng.integers(1, 9)], p=[0.2, 0.1, 0.7]))
            req = int(rng.choice([-1, rng.integers(0, 60)], p=[0.3, 0.7]))
            lines.append(swf_line(ids[i], int(rng.integers(0, 8)) * 5, -1, run, p5, -1, -1, p8, req))
            if rng.random() < 0.2:
                lines.append("; a comment between jobs")
        exp, dropped = ref_parse(lines, ppn)
        if not exp:
            continue
        p = tmp_path / f"t{seed}.swf"
        p.write_text("\n".join(lines) + "\n")
        tr = read_swf(p, procs_per_node=ppn)
        got = list(zip(tr.submit.tolist(), tr.job_id.tolist(), tr.run_time.tolist(), tr.requested_time.tolist(),
                       tr.nodes.tolist()))
        assert got == [tuple(float(x) if k != 1 and k != 4 else x for k, x in enumerate(e)) for e in exp]
        assert tr.attrs["dropped"] == dropped and tr.attrs["unix_start_time"] == 1546300800
        total = max(e[4] for e in exp)
        jobs = [{"id": e[1], "sub": e[0], "run": e[2], "req": e[3], "size": e[4]} for e in exp]
        ds = W.simulate(tr, W.make_policy("unrestricted", 1, total))
        compare(ds, ref_easy(jobs, total, 500), f"swf seed {seed}")


def test_swf_round_trip_and_byte_order_mark(tmp_path):
    """`write_swf` then `read_swf` gives the same jobs; a file saved with a UTF-8 byte-order mark reads as
    the same file without it (the mark is not part of the first header line)."""
    tr = W.Trace(job_id=[5, 3, 9], submit=[0.0, 0.0, 7.5], run_time=[10.0, 0.5, 3.0], requested_time=[20, 1, 3],
                 nodes=[2, 1, 4], attrs={"unix_start_time": 1546300800})
    p = write_swf(tr, tmp_path / "a.swf")
    back = read_swf(p)
    assert back.job_id.tolist() == [3, 5, 9] and back.submit.tolist() == [0.0, 0.0, 7.5]
    assert back.run_time.tolist() == [0.5, 10.0, 3.0] and back.nodes.tolist() == [1, 2, 4]
    assert back.requested_time.tolist() == [1.0, 20.0, 3.0] and back.attrs["unix_start_time"] == 1546300800
    bom = tmp_path / "bom.swf"
    bom.write_bytes(b"\xef\xbb\xbf" + p.read_bytes())
    again = read_swf(bom)
    assert again.job_id.tolist() == [3, 5, 9] and again.attrs["unix_start_time"] == 1546300800


GOOD = swf_line(1, 0, -1, 10, 2, -1, -1, 2, 20)
BAD_SWF = [
    ("17 fields", GOOD + "\n" + " ".join(GOOD.split()[:17]), ["t.swf:2", "18", "17"]),
    ("19 fields", GOOD + "\n" + swf_line(2, 0, -1, 10, 2) + " 5", ["t.swf:2", "18", "19"]),
    ("not a number", swf_line(1, 0, -1, "ten", 2), ["t.swf:1", "field 4", "run_time", "ten"]),
    ("underscore", swf_line(1, 0, -1, "1_0", 2), ["t.swf:1", "field 4", "1_0", "number"]),
    ("nan", swf_line(1, "nan", -1, 10, 2), ["t.swf:1", "field 2", "nan"]),
    ("inf", swf_line(1, 0, -1, "inf", 2), ["t.swf:1", "field 4", "inf"]),
    ("fraction in an integer field", swf_line(1, 0, -1, 10, 2.5), ["t.swf:1", "field 5", "2.5", "integer"]),
    ("negative other than -1", swf_line(1, 0, -1, 10, 2, -1, -1, 2, -5), ["t.swf:1", "field 9", "-5"]),
    ("unknown job number", swf_line(-1, 0, -1, 10, 2), ["t.swf:1", "field 1", "job_number"]),
    ("job number twice", GOOD + "\n;\n" + GOOD, ["t.swf:3", "field 1", "line 1"]),
    ("unknown submit time", swf_line(1, -1, -1, 10, 2), ["t.swf:1", "field 2", "submit"]),
    ("empty", "", ["t.swf", "nothing to simulate"]),
    ("only comments", "; Version: 2.2\n; MaxNodes: 4\n", ["t.swf", "nothing to simulate"]),
    ("every job dropped", swf_line(1, 0, -1, -1, 2) + "\n" + swf_line(2, 0, -1, 0, 2),
     ["t.swf", "2 job lines", "nothing to simulate"]),
    ("larger than MaxNodes", "; MaxNodes: 4\n" + swf_line(1, 0, -1, 10, 5), ["t.swf:2", "field 5", "MaxNodes"]),
    ("bad UnixStartTime", "; UnixStartTime: 2019-01-01\n" + GOOD, ["t.swf:1", "UnixStartTime", "2019-01-01"]),
]


@pytest.mark.parametrize("text,needles", [(t, n) for _, t, n in BAD_SWF], ids=[c[0] for c in BAD_SWF])
def test_bad_swf_is_refused_naming_the_line_field_and_value(text, needles):
    """Every malformed input is one ConfigError naming the file:line, the field and the value (docs)."""
    with pytest.raises(ConfigError) as e:
        parse_swf(text, "t.swf")
    msg = str(e.value)
    assert "\n" not in msg and all(s in msg for s in needles), msg


def test_jobs_larger_than_the_machine_are_refused_by_reader_and_simulation():
    """`total_nodes` (with processors per node rounding up) refuses the first job larger than the machine,
    naming its line; a Trace with such a job is refused by `simulate` naming the job."""
    text = GOOD + "\n" + swf_line(7, 5, -1, 10, -1, -1, -1, 9, 20)
    with pytest.raises(ConfigError, match=r"t\.swf:2 field 8 .*= 9 .*at most 8 processors \(2 nodes"):
        parse_swf(text, "t.swf", total_nodes=2, procs_per_node=4)
    assert parse_swf(text, "t.swf", total_nodes=3, procs_per_node=4).nodes.tolist() == [1, 3]
    tr = W.Trace(job_id=[1, 2], submit=[0, 0], run_time=[1, 1], requested_time=[1, 1], nodes=[2, 9])
    with pytest.raises(ConfigError, match=r"job 2: nodes = 9 .*\[1, 8\]"):
        W.simulate(tr, W.make_policy("unrestricted", 2, 4))


def test_zero_length_and_equal_submit_jobs_in_a_trace():
    """A Trace may hold zero-length jobs (SWF drops them; a Trace keeps them): they start, end at once and
    free their nodes for the jobs behind them at the same time; equal submit times go by job number."""
    tr = W.Trace(job_id=[9, 4, 6, 2], submit=[0, 0, 0, 0], run_time=[0, 5, 0, 3], requested_time=[0, 5, 1, 3],
                 nodes=[4, 4, 4, 4])
    ds = W.simulate(tr, W.make_policy("unrestricted", 1, 4))
    got = {int(j): (float(s), float(e)) for j, s, e in zip(ds.job.values, ds.start.values, ds.end.values)}
    assert got == {2: (0.0, 3.0), 4: (3.0, 8.0), 6: (8.0, 8.0), 9: (8.0, 8.0)}
    assert ds.job.values.tolist() == [2, 4, 6, 9]


def test_nodes_per_group_other_than_the_policys_is_refused():
    """`simulate(..., nodes_per_group=G)` checks requirements and the speedup table's machine with G: a G that
    is not the policy's let a table of another machine through (1 group of 4 nodes applied on 2 groups of 2)."""
    tr = W.Trace(job_id=[1, 2], submit=[0, 1], run_time=[5, 5], requested_time=[5, 5], nodes=[2, 3],
                 mpi_fraction=[0.5, 0.5])
    foreign = W.speedup_table({"minimal_balance": {1: 2.0}}, machine=(1, 4))
    with pytest.raises(ConfigError, match=r"nodes_per_group = 4 .*policy's own, 2"):
        W.simulate(tr, W.make_policy("grap", 2, 2), speedups=foreign, nodes_per_group=4)
    with pytest.raises(ConfigError, match=r"speedups\.machine"):
        W.simulate(tr, W.make_policy("grap", 2, 2), speedups=foreign)
    with pytest.raises(ConfigError, match=r"nodes_per_group = 3 .*policy's own, 4"):
        W.simulate(tr, W.make_policy("unrestricted", 1, 4), nodes_per_group=3)
    ds = W.simulate(tr, W.make_policy("unrestricted", 1, 4), nodes_per_group=4)
    assert ds.start.values.tolist() == [0.0, 5.0]


def test_a_trace_with_a_negative_job_number_is_refused_before_it_runs():
    """A job numbered -1 marked its nodes idle in the policies (the idle mark), so the next job was given them too;
    the policies now refuse it when they place it, and the trace before any schedule runs."""
    with pytest.raises(ConfigError) as e:
        W.Trace(np.array([3, -1]), np.zeros(2), np.ones(2), np.ones(2), np.array([2, 2]))
    assert e.value.field == "trace.job_id" and e.value.value == -1, str(e.value)


def test_the_count_only_policy_refuses_a_running_id_and_a_foreign_release():
    """``unrestricted`` kept no record of its running jobs: a second job of a running id was placed beside the
    first, and fits said yes to it; a release of nodes it had given another job was accepted."""
    pol = W.UnrestrictedPolicy(2, 4)
    a = pol.allocate(JobRequest(5, 2))
    for call in (pol.allocate, pol.fits):
        with pytest.raises(ConfigError) as e:
            call(JobRequest(5, 2))
        assert e.value.field == "job.id", str(e.value)
    b = pol.allocate(JobRequest(6, 2))
    with pytest.raises(ConfigError):
        pol.release(dataclasses.replace(b, job_id=7))
    copy = pol.copy()
    pol.release(a)
    assert pol.idle_nodes == 6 and copy.idle_nodes == 4 and pol.fits(JobRequest(5, 2))  # the copy keeps its own
    with pytest.raises(ConfigError):
        copy.fits(JobRequest(5, 2))
    with pytest.raises(ConfigError):
        pol.release(a)
