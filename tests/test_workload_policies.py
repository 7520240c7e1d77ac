"""The scheduler with the real allocation policies (evaluator.policies): GRAP in every mode and the baselines.

Every simulation is watched by :class:`Watch`, a wrapper that checks each
allocation of the live policy against its own bookkeeping (not the
policy's): no node given twice, at most one large job per group, a large
job holds every switch port of its groups, a small job sits in one group.
After the run, the per-job dataset's times are checked against the
allocations: no node runs two jobs at once, no group holds two large jobs at
once. EASY: every blocked head starts by the first reservation it was given
(run times at most the requests), and for the deterministic, history-free
policies (``grap``, ``contiguous``) starts and reservations equal the
per-second stepped reference of :mod:`tests.workload_reference`.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from evaluator.errors import ConfigError
from evaluator.policies import MODES, Allocation, Grap, build_policy
from evaluator.workload import POLICY_NAMES, Trace, UnrestrictedPolicy, make_policy, prepare_trace, simulate
from evaluator.workload import WorkloadModel, synthetic_trace
from tests.workload_reference import easy_stepped, random_jobs

BASELINES = ("slurm_round_robin", "contiguous", "random")


class Watch:
    """Wraps a live policy; checks every allocation against its own record (copies are not watched)."""

    def __init__(self, inner):
        self.inner = inner
        self.name = inner.name
        self.nodes_per_group = inner.nodes_per_group
        self.busy: dict[int, int] = {}           # node -> job
        self.large_in: dict[int, int] = {}       # group -> large job
        self.started: dict[int, Allocation] = {}  # job -> its last allocation (the one it ran on)

    @property
    def total_nodes(self):
        return self.inner.total_nodes

    @property
    def idle_nodes(self):
        return self.inner.idle_nodes

    def copy(self):
        return self.inner.copy()

    def allocate(self, job):
        a = self.inner.allocate(job)
        if a is None:
            return None
        G = self.nodes_per_group
        nodes = np.asarray(a.nodes)
        assert nodes.size == job.nodes == np.unique(nodes).size
        assert not any(int(v) in self.busy for v in nodes), "a node allocated twice"
        groups = tuple(int(g) for g in np.unique(nodes // G))
        assert tuple(a.groups) == groups
        if isinstance(self.inner, Grap):
            assert a.large == (job.nodes > G)
            if a.large:
                assert not any(g in self.large_in for g in groups), "two large jobs in a group"
                assert (self.inner.port_owner[list(groups), :] == job.id).all(), "a port of its groups not held"
                for g in groups:
                    self.large_in[g] = job.id
                if job.mode in ("custom", "custom_balance"):   # each requirement its own group
                    got = sorted(int((nodes // G == g).sum()) for g in groups)
                    assert got == sorted(job.requirements)
            else:
                assert len(groups) == 1, "a small job over several groups"
        for v in nodes:
            self.busy[int(v)] = job.id
        self.started[job.id] = a
        return a

    def release(self, a):
        self.inner.release(a)
        for v in np.asarray(a.nodes):
            assert self.busy.pop(int(v)) == a.job_id
        for g in a.groups:
            if self.large_in.get(g) == a.job_id:
                del self.large_in[g]


def _requirements(rng, n, G, groups, mode):
    """Per-group node counts for a custom-mode job of ``n`` nodes (``()`` for a small job or a non-custom mode)."""
    if n <= G or mode not in ("custom", "custom_balance"):
        return ()
    k0 = -(-n // G)
    if mode == "custom_balance":
        for k in range(k0, groups + 1):
            if n % k == 0:
                return (n // k,) * k
        return None                               # no even split: the caller makes it custom
    k = min(k0 + int(rng.integers(0, 2)), groups, n)
    r = np.full(k, n // k)
    r[: n % k] += 1
    for _ in range(3):                            # uneven: move nodes between groups, each within [1, G]
        i, j = rng.integers(0, k, size=2)
        d = int(rng.integers(0, n))
        d = min(d, int(r[i]) - 1, G - int(r[j]))
        if i != j and d > 0:
            r[i] -= d
            r[j] += d
    return tuple(int(x) for x in r)


def _jobs(seed, groups, G, n_jobs=12):
    rng = np.random.default_rng(seed)
    jobs = random_jobs(rng, n_jobs, groups * G, max_t=10)
    for j in jobs:
        mode = str(rng.choice(MODES))
        req = _requirements(rng, j["nodes"], G, groups, mode)
        if req is None:
            mode = "custom"
            req = _requirements(rng, j["nodes"], G, groups, mode)
        j["mode"], j["requirements"] = mode, req
    return jobs


def _trace(jobs) -> Trace:
    return Trace(job_id=np.array([j["id"] for j in jobs], np.int64),
                 submit=np.array([j["submit"] for j in jobs], np.float64),
                 run_time=np.array([j["run"] for j in jobs], np.float64),
                 requested_time=np.array([j["req"] for j in jobs], np.float64),
                 nodes=np.array([j["nodes"] for j in jobs], np.int64),
                 mode=np.array([j["mode"] for j in jobs], dtype=object),
                 requirements=tuple(tuple(j["requirements"]) for j in jobs))


def _check_over_time(ds, watch: Watch) -> None:
    """No node and no group's ports held by two jobs at overlapping times; allocations match the dataset."""
    start = dict(zip(ds.job.values.tolist(), ds.start.values.tolist()))
    end = dict(zip(ds.job.values.tolist(), ds.end.values.tolist()))
    assert set(watch.started) == set(start)
    by_node: dict[int, list] = {}
    by_group: dict[int, list] = {}
    for j, a in watch.started.items():
        assert len(a.nodes) == int(ds.nodes.sel(job=j)) and len(a.groups) == int(ds.groups.sel(job=j))
        for v in np.asarray(a.nodes):
            by_node.setdefault(int(v), []).append((start[j], end[j]))
        if a.large:
            for g in a.groups:
                by_group.setdefault(g, []).append((start[j], end[j]))
    for spans in list(by_node.values()) + list(by_group.values()):
        spans.sort()
        for (s0, e0), (s1, e1) in zip(spans, spans[1:]):
            assert e0 <= s1, "two jobs hold a node (or a group's ports) at once"


def _check_easy(ds) -> None:
    r = ds.reservation.values
    has = ~np.isnan(r)
    assert np.all(ds.start.values[has] <= r[has]), "a backfilled job delayed the head's reservation"


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("name", ("grap",) + BASELINES)
def test_real_policies_through_the_scheduler(name, seed):
    groups, G = 3 + seed % 2, 3 + seed % 3
    jobs = _jobs(1000 + seed, groups, G)
    params = {"ports_per_group": 1 + seed % 2} if name == "grap" else {}
    w = Watch(build_policy(name, groups, G, seed=seed, **params))
    ds = simulate(_trace(jobs), w, backfill_depth=None)
    assert not w.busy and not w.large_in            # everything released at the end
    assert w.inner.idle_nodes == groups * G
    _check_over_time(ds, w)
    _check_easy(ds)
    if name in ("grap", "contiguous"):            # history-free: the stepped reference makes the same calls' choices
        ref, ref_shadow = easy_stepped(jobs, lambda: build_policy(name, groups, G, seed=seed, **params))
        assert {int(i): float(s) for i, s in zip(ds.job.values, ds.start.values)} == {k: float(v)
                                                                                   for k, v in ref.items()}
        got = {int(i): float(r) for i, r in zip(ds.job.values, ds.reservation.values) if not math.isnan(r)}
        assert got == {k: float(v) for k, v in ref_shadow.items()}


@pytest.mark.parametrize("mode", MODES)
def test_grap_each_mode_on_a_prepared_synthetic_trace(mode):
    """A synthetic trace through the workload model, every large job in one mode, on 6 groups of 16 nodes."""
    groups, G = 6, 16
    tr = synthetic_trace(150, groups * G // 2, seed=3, load=0.9)
    tr = prepare_trace(tr, groups * G, G, WorkloadModel(mode_lo=G + 1, mode_mix={mode: 1.0}, seed=1))
    large = tr.nodes > G
    got = set(tr.modes()[large])                  # custom balance without an even split becomes custom
    assert large.any() and mode in got and got <= {mode, "custom"}
    w = Watch(Grap(groups, G))
    ds = simulate(tr, w)
    _check_over_time(ds, w)
    _check_easy(ds)
    assert (ds.groups.values[~large] == 1).all()
    assert (ds.groups.values[large] >= np.ceil(tr.nodes[large] / G)).all()


def test_minimal_balance_sizes_that_are_not_whole_groups():
    """Mira's 1,024 nodes on 288-node groups: 4 groups of 256 (even split), whose ports the job holds; the 32 nodes
    left in each only take small jobs, first among groups that hold a large job."""
    G = 288
    jobs = [{"id": 1, "submit": 0, "run": 100, "req": 100, "nodes": 1024, "mode": "minimal_balance"},
            {"id": 2, "submit": 0, "run": 50, "req": 50, "nodes": 32, "mode": "minimal_balance"},
            {"id": 3, "submit": 0, "run": 100, "req": 100, "nodes": 4 * G, "mode": "minimal_balance"},
            {"id": 4, "submit": 0, "run": 10, "req": 10, "nodes": 2 * G - 64, "mode": "minimal_balance"},
            {"id": 5, "submit": 0, "run": 10, "req": 10, "nodes": 32, "mode": "adaptive"}]
    for j in jobs:
        j["requirements"] = ()
    w = Watch(Grap(8, G))
    ds = simulate(_trace(jobs), w, backfill_depth=None)
    a1 = w.started[1]
    assert a1.large and len(a1.groups) == 4
    assert sorted(np.bincount(np.asarray(a1.nodes) // G, minlength=8)[list(a1.groups)]) == [256] * 4
    assert w.started[2].groups == (a1.groups[0],)     # small: in a group of the large job, lowest id
    assert set(w.started[3].groups).isdisjoint(a1.groups)
    # job 4 (2 groups' worth less 64) needs groups free of large jobs: none until jobs 1 and 3 end at 100,
    # though 4 x 32 - 32 = 96 nodes idle meanwhile; job 5 (small) backfills into job 1's groups at once
    # (group 0 is full: job 2 took its 32)
    assert float(ds.start.sel(job=4)) == 100.0 and float(ds.start.sel(job=5)) == 0.0
    assert w.started[5].groups[0] in a1.groups
    _check_over_time(ds, w)


def test_unknown_policy_names_are_config_errors():
    with pytest.raises(ConfigError, match="policy") as e:
        build_policy("slurm", 4, 4)
    assert "grap" in str(e.value)
    with pytest.raises(ConfigError, match="policy") as e:
        make_policy("slurm", 4, 4)
    assert "unrestricted" in str(e.value) and "grap" in str(e.value)
    with pytest.raises(ConfigError, match="ports_per_group"):
        make_policy("slurm_round_robin", 4, 4, ports_per_group=2)
    assert set(POLICY_NAMES) == {"unrestricted", "grap", "slurm_round_robin", "contiguous", "random"}
    assert isinstance(make_policy("unrestricted", 2, 2), UnrestrictedPolicy)


class NoFits:
    """Hides a policy's ``fits``: the scheduler then places on copies to test reservations (the older path)."""

    def __init__(self, inner):
        self.inner, self.name, self.nodes_per_group = inner, inner.name, inner.nodes_per_group

    total_nodes = property(lambda self: self.inner.total_nodes)
    idle_nodes = property(lambda self: self.inner.idle_nodes)

    def allocate(self, job):
        return self.inner.allocate(job)

    def release(self, a):
        self.inner.release(a)

    def copy(self):
        return NoFits(self.inner.copy())


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("name", ("grap",) + BASELINES)
def test_fits_gives_the_schedule_of_placing_on_copies(name, seed):
    groups, G = 4, 4 + seed % 2
    jobs = _jobs(2000 + seed, groups, G, n_jobs=16)
    a = simulate(_trace(jobs), build_policy(name, groups, G, seed=seed), backfill_depth=None)
    b = simulate(_trace(jobs), NoFits(build_policy(name, groups, G, seed=seed)), backfill_depth=None)
    for v in ("start", "end", "groups", "reservation", "backfilled"):
        np.testing.assert_array_equal(a[v].values, b[v].values)


@pytest.mark.parametrize("name", ("grap",) + BASELINES)
def test_fits_equals_placing(name):
    """On random states: fits(job) == (a copy places it), and fits changes nothing."""
    from evaluator.policies import JobRequest

    rng = np.random.default_rng(7)
    groups, G = 5, 6
    pol = build_policy(name, groups, G, seed=1)
    live, seen = [], set()
    for step in range(300):
        if live and rng.random() < 0.45:
            pol.release(live.pop(int(rng.integers(len(live)))))
            continue
        n = int(rng.integers(1, groups * G + 1))
        mode = str(rng.choice(MODES))
        req = _requirements(rng, n, G, groups, mode)
        if req is None:
            mode, req = "custom", _requirements(rng, n, G, groups, "custom")
        job = JobRequest(10_000 + step, n, mode, req)
        before = (pol.owner.copy(), pol.idle_per_group.copy(), dict(pol.running))
        f = pol.fits(job)
        assert (pol.owner == before[0]).all() and (pol.idle_per_group == before[1]).all()
        assert pol.running == before[2]
        assert f == (pol.copy().allocate(job) is not None)
        seen.add(f)
        if f:
            live.append(pol.allocate(job))
    assert seen == {True, False}
