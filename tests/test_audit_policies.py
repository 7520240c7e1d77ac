"""Differential audit of the allocation policies (evaluator.policies): every node each policy picks, over seeded
random streams of allocate / release calls on small machines, against a plain-Python model of its documented rule
written here (docs/rdn.md, docs/workload.md, the module docstrings, Feng et al. Algorithms 1-3), never the code under
test; the state invariants, copies and look-aheads, ``fits`` against ``allocate``; and the refusals (field, value,
what is allowed).

Models (one list of owners per node, one large owner per group, the round-robin cursor):

* GRAP small job: groups with enough idle nodes; those holding a large job first; fewest idle, then lowest id; the
  lowest idle node ids in it.
* GRAP large job, balance / custom modes (Algorithm 2 with one group per requirement): requirements ascending,
  groups holding no large job by idle nodes ascending (ties: lower id), each requirement the first group left with
  enough idle nodes; ``minimal_balance``: ``ceil(n / P)`` requirements split as evenly as possible.
* GRAP adaptive (Algorithm 3 literally, its while loop bounded by the candidates): candidates by idle nodes
  descending (ties: lower id), the first window of ``ceil(n / P)`` moved back while the next window holds the job,
  then from ``en`` down to ``st`` each group ``remain // (i - st + 1)`` capped by its idle nodes.
* slurm_round_robin: the nodes dealt one at a time to the groups in turn from the cursor (groups with no idle node
  left skipped), the cursor one group on per placed job.
* contiguous: the lowest idle node ids. random: any idle nodes (the count, idleness, and a chi-square of uniformity).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from evaluator.errors import ConfigError, ConfigTypeError
from evaluator.policies import KINDS, Allocation, Grap, JobRequest, build_policy

NAMES = ("grap", "slurm_round_robin", "contiguous", "random")
MODES = ("minimal_balance", "custom_balance", "custom", "adaptive")


# ------------------------------------------------------------------ the model
class Model:
    """The machine as plain lists, and each policy's documented rule."""

    def __init__(self, name: str, G: int, P: int):
        self.name, self.G, self.P = name, G, P
        self.owner = [-1] * (G * P)
        self.large = [-1] * G
        self.cursor = 0

    def idle_in(self, g: int) -> list[int]:
        return [v for v in range(g * self.P, (g + 1) * self.P) if self.owner[v] < 0]

    def n_idle(self, g: int) -> int:
        return len(self.idle_in(g))

    # GRAP -------------------------------------------------------------
    def grap_plan(self, job: JobRequest):
        n, P = job.nodes, self.P
        if n <= P:
            ok = [g for g in range(self.G) if self.n_idle(g) >= n]
            if not ok:
                return None
            pool = [g for g in ok if self.large[g] >= 0] or ok
            g = min(pool, key=lambda g: (self.n_idle(g), g))
            return [(g, n)], False
        free = [g for g in range(self.G) if self.large[g] < 0]
        if job.mode == "adaptive":
            return self.adaptive(n, free), True
        if job.mode == "minimal_balance":
            k = -(-n // P)
            reqs = [n // k + (1 if i < n % k else 0) for i in range(k)]
        else:
            reqs = list(job.requirements)
        cand = sorted(free, key=lambda g: (self.n_idle(g), g))
        plan, j = [], 0
        for need in sorted(reqs):
            while j < len(cand) and self.n_idle(cand[j]) < need:
                j += 1
            if j >= len(cand):
                return None
            plan.append((cand[j], need))
            j += 1
        return plan, True

    def adaptive(self, n: int, free: list[int]):
        cand = sorted(free, key=lambda g: (-self.n_idle(g), g))
        k = -(-n // self.P)
        if len(cand) < k:
            return None
        idle = [self.n_idle(g) for g in cand]
        st, en = 0, k - 1
        if sum(idle[st:en + 1]) < n:
            return None
        while en + 1 < len(cand) and sum(idle[st + 1:en + 2]) >= n:
            st, en = st + 1, en + 1
        plan, remain = [], n
        for i in range(en, st - 1, -1):
            req = remain // (i - st + 1)
            if req > idle[i]:
                req = idle[i]
            plan.append((cand[i], req))
            remain -= req
        assert remain == 0
        return plan

    # the baselines ----------------------------------------------------
    def round_robin(self, n: int) -> list[tuple[int, int]]:
        avail = [self.n_idle(g) for g in range(self.G)]
        take, g, left = [0] * self.G, self.cursor, n
        while left:
            if take[g] < avail[g]:
                take[g] += 1
                left -= 1
            g = (g + 1) % self.G
        return [(g, t) for g, t in enumerate(take) if t]

    # -----------------------------------------------------------------
    def expect(self, job: JobRequest):
        """``(nodes, large)`` the rule gives (nodes None for ``random``: any idle ones), or None: it waits."""
        if job.nodes > self.owner.count(-1):
            return None
        if self.name == "contiguous":
            return [v for v, o in enumerate(self.owner) if o < 0][:job.nodes], False
        if self.name == "random":
            return None if job.nodes > self.owner.count(-1) else (None, False)
        if self.name == "slurm_round_robin":
            plan, large = self.round_robin(job.nodes), False
        else:
            got = self.grap_plan(job)
            if got is None or got[0] is None:
                return None
            plan, large = got
        return sorted(v for g, c in plan for v in self.idle_in(g)[:c]), large

    def place(self, job_id: int, nodes, large: bool) -> None:
        for v in nodes:
            assert self.owner[v] == -1
            self.owner[v] = job_id
        if large:
            for g in {v // self.P for v in nodes}:
                self.large[g] = job_id
        if self.name == "slurm_round_robin":
            self.cursor = (self.cursor + 1) % self.G

    def free(self, job_id: int) -> None:
        self.owner = [-1 if o == job_id else o for o in self.owner]
        self.large = [-1 if o == job_id else o for o in self.large]


def random_request(rng, jid: int, G: int, P: int) -> JobRequest:
    """A valid request: any size up to the machine, any mode, requirements that fit where a custom mode needs
    them."""
    n = int(rng.choice([int(rng.integers(1, P + 1)), int(rng.integers(min(P + 1, G * P), G * P + 1)),
                        int(rng.integers(1, 3 * P + 1))]))
    n = min(n, G * P)
    mode = str(rng.choice(MODES))
    req: tuple[int, ...] = ()
    if mode in ("custom", "custom_balance") and n > P:
        lo = -(-n // P)
        k = int(rng.integers(lo, min(G, n) + 1))
        if mode == "custom_balance":
            req = tuple(n // k + (1 if i < n % k else 0) for i in range(k))
        else:
            for _ in range(50):  # a random composition of n in k parts, each at most P
                cuts = np.sort(rng.choice(np.arange(1, n), size=k - 1, replace=False))
                parts = np.diff(np.concatenate([[0], cuts, [n]]))
                if parts.max() <= P:
                    req = tuple(int(x) for x in rng.permutation(parts))
                    break
            else:
                req = tuple(n // k + (1 if i < n % k else 0) for i in range(k))
    return JobRequest(jid, n, mode, req)


def check_state(p, m: Model, live: dict) -> None:
    """The policy's state arrays against the model, and each live allocation's record against its nodes."""
    G, P = m.G, m.P
    assert p.owner.tolist() == m.owner
    assert p.idle_per_group.tolist() == [m.n_idle(g) for g in range(G)]
    assert p.idle_nodes == m.owner.count(-1) == int(p.idle_per_group.sum())
    assert sorted(p.running) == sorted(live)
    if p.name == "grap":
        assert p.large_owner.tolist() == m.large
        assert p.port_owner.tolist() == [[o] * p.ports_per_group for o in m.large]
    for a in live.values():
        nodes = a.nodes.tolist()
        groups = sorted({v // P for v in nodes})
        assert a.nodes.dtype == np.int64 and nodes == sorted(set(nodes))
        assert list(a.groups) == groups
        assert list(a.counts) == [sum(1 for v in nodes if v // P == g) for g in groups]


# ------------------------------------------------------------------ the nodes picked, against the model
@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("seed", range(6))
def test_nodes_picked_follow_the_documented_rule(name, seed):
    """Every allocate over a random stream: the nodes (and GRAP's large flag, groups, ports) the model gives, or
    None where the model waits; ``fits`` (on the policy, a copy and a look-ahead) answers as allocate then does;
    the copies are untouched by the placement; every state array equals the model after every step."""
    rng = np.random.default_rng(1000 + seed)
    G, P = int(rng.integers(4, 10)), int(rng.choice([4, 5, 8, 12, 16]))
    params = {"ports_per_group": int(rng.integers(1, 4))} if name == "grap" else {}
    p = build_policy(name, G, P, seed=seed, **params)
    m = Model(name, G, P)
    live: dict[int, Allocation] = {}
    placed = waited = 0
    for step in range(160):
        if live and rng.random() < 0.4:
            jid = list(live)[int(rng.integers(len(live)))]
            p.release(live.pop(jid))
            m.free(jid)
            check_state(p, m, live)
            continue
        job = random_request(rng, step, G, P)
        want = m.expect(job)
        look, full = p.lookahead(), p.copy()
        before = p.owner.copy()
        fit = p.fits(job)
        assert fit == (want is not None) == look.fits(job) == full.fits(job), (step, job)
        a = p.allocate(job)
        if want is None:
            assert a is None, (step, job)
            waited += 1
        else:
            nodes, large = want
            assert a is not None, (step, job)
            if nodes is not None:
                assert a.nodes.tolist() == nodes, (step, job)
            assert a.nodes.size == job.nodes and all(m.owner[v] == -1 for v in a.nodes.tolist())
            assert a.large == large and a.job_id == job.id and a.mode == job.mode
            if name == "grap" and job.mode == "custom" and large:
                assert sorted(a.counts) == sorted(job.requirements)
            m.place(job.id, a.nodes.tolist(), a.large)
            live[job.id] = a
            placed += 1
            assert (full.owner == before).all() and job.id not in full.running  # the copy is independent
        check_state(p, m, live)
    assert placed > 20 and (waited > 5 or name != "grap")


def test_round_robin_cursor_and_remainder_by_hand():
    """A hand-worked deal on 3 groups of 4: the cursor starts at group 0 and moves one group per placed job; with
    group 1 down to one idle node (7) and the cursor at group 2, 7 nodes are dealt g2, g0, g1, g2, g0, (g1 has none
    left) g2, g0: nodes 0-2 of group 0, node 7, nodes 8-10 of group 2."""
    p = build_policy("slurm_round_robin", 3, 4)
    first = p.allocate(JobRequest(1, 3, "minimal_balance"))     # cursor 0: one node each of groups 0, 1, 2
    assert first.nodes.tolist() == [0, 4, 8]
    p.release(first)
    blocker = p.allocate(JobRequest(2, 3))  # cursor 1: g1, g2, g0 -> nodes 4, 8, 0
    assert blocker.nodes.tolist() == [0, 4, 8]
    p.release(blocker)
    p.owner[4:7] = 99                        # group 1 keeps one idle node (7)
    p.idle_per_group[1] = 1
    p.idle -= 3
    a = p.allocate(JobRequest(3, 7))         # cursor 2: g2, g0, g1, g2, g0, g2, g0
    assert a.nodes.tolist() == [0, 1, 2, 7, 8, 9, 10]


def test_random_nodes_are_uniform_over_idle_nodes():
    """``random`` takes uniformly random idle nodes: on 2 groups of 4 with nodes 0-2 busy, 3,000 one-node jobs
    (each released) land on each of the 5 idle nodes about equally (chi-square, 4 degrees of freedom, 0.1% level
    18.5), never on a busy one; a copy draws what the original then draws."""
    p = build_policy("random", 2, 4, seed=7)
    hold = p.allocate(JobRequest(1, 3))
    busy = set(hold.nodes.tolist())
    counts = np.zeros(8, dtype=int)
    for i in range(3000):
        q = p.copy()
        a = p.allocate(JobRequest(10 + i, 1))
        assert q.allocate(JobRequest(10 + i, 1)).nodes.tolist() == a.nodes.tolist()
        counts[a.nodes] += 1
        p.release(a)
    assert all(counts[v] == 0 for v in busy)
    idle = [v for v in range(8) if v not in busy]
    expect = 3000 / len(idle)
    chi2 = float(((counts[idle] - expect) ** 2 / expect).sum())
    assert chi2 < 18.5, counts


@pytest.mark.parametrize("name", NAMES)
def test_released_nodes_are_reusable_and_the_machine_refills(name):
    """Fill the machine with one-group jobs, release every other, and the freed nodes take the same jobs again;
    then release all, and a job of the whole machine fits and is placed."""
    G, P = 5, 6
    p = build_policy(name, G, P)
    live = [p.allocate(JobRequest(i, P)) for i in range(G)]
    assert all(a is not None for a in live) and p.idle_nodes == 0
    assert not p.fits(JobRequest(99, 1)) and p.allocate(JobRequest(99, 1)) is None
    for a in live[::2]:
        p.release(a)
    again = [p.allocate(JobRequest(100 + i, P)) for i in range(len(live[::2]))]
    assert sorted(v for a in again for v in a.nodes.tolist()) == sorted(v for a in live[::2] for v in a.nodes.tolist())
    for a in again + live[1::2]:
        p.release(a)
    assert p.idle_nodes == G * P and (p.owner == -1).all()
    whole = JobRequest(500, G * P, "adaptive")
    assert p.fits(whole)
    assert p.allocate(whole).nodes.tolist() == list(range(G * P))


# ------------------------------------------------------------------ refusals
def _refused(exc_type, fn, field, value, allowed):
    with pytest.raises(exc_type) as e:
        fn()
    err = e.value
    assert err.field == field and f"{field} = {value!r}" in str(err) and allowed in str(err), str(err)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("bad", [-1, -7])
def test_negative_job_ids_are_refused(name, bad):
    """The node array marks an idle node -1 (any negative owner reads as idle): a job numbered -1 was placed and its
    nodes stayed idle, so the next job got the same nodes (contiguous: job -1 and job 7 both on nodes 0-2 of a
    2 x 4 machine, the idle count 2 with 5 nodes marked idle). A negative id is now a ConfigError naming it."""
    p = build_policy(name, 2, 4)
    for call in (p.allocate, p.fits):
        _refused(ConfigError, lambda: call(JobRequest(bad, 3)), "job.id", bad, "an integer in [0, 2^63)")
    assert p.idle_nodes == 8 and not p.running


@pytest.mark.parametrize("name", NAMES)
def test_job_ids_beyond_the_node_array_are_refused(name):
    """A job id is stored in an int64 node array: 2**70 crashed the placement with an OverflowError (a traceback,
    no field named) after the checks had passed; now a ConfigError naming the id. 2**63 - 1 still works."""
    p = build_policy(name, 2, 4)
    _refused(ConfigError, lambda: p.allocate(JobRequest(2 ** 70, 3)), "job.id", 2 ** 70, "an integer in [0, 2^63)")
    assert p.idle_nodes == 8
    a = p.allocate(JobRequest(2 ** 63 - 1, 3))
    assert a is not None and p.idle_nodes == 5
    p.release(a)
    assert p.idle_nodes == 8


@pytest.mark.parametrize("name", NAMES)
def test_running_job_id_is_refused_by_allocate_and_fits_alike(name):
    """A running job's id again: allocate refuses it (ConfigError on job.id); ``fits`` is documented as exactly
    ``allocate(job) is not None`` and so refuses it too (it answered True)."""
    p = build_policy(name, 3, 4)
    p.allocate(JobRequest(5, 2))
    for call in (p.allocate, p.fits):
        _refused(ConfigError, lambda: call(JobRequest(5, 2)), "job.id", 5, "the id of no running job")
    assert p.idle_nodes == 10


@pytest.mark.parametrize("name", NAMES)
def test_release_twice_or_from_another_policy_is_refused(name):
    """Releasing an allocation twice, one another policy made (same id, other nodes), or something that is not an
    Allocation: errors naming the field, nothing freed."""
    p = build_policy(name, 3, 4)
    other = build_policy("contiguous", 3, 4)
    other.allocate(JobRequest(9, 2))
    mine = p.allocate(JobRequest(1, 3))
    elsewhere = other.allocate(JobRequest(1, 3))
    if elsewhere.nodes.tolist() != mine.nodes.tolist():
        _refused(ConfigError, lambda: p.release(elsewhere), "alloc.job_id", 1, "a job running on this policy")
    _refused(ConfigTypeError, lambda: p.release((1, [0, 1, 2])), "alloc", "tuple", "an evaluator.policies.Allocation")
    assert p.idle_nodes == 9
    forged = dataclasses.replace(mine, nodes=mine.nodes[:2])
    _refused(ConfigError, lambda: p.release(forged), "alloc.job_id", 1, "a job running on this policy")
    p.release(mine)
    _refused(ConfigError, lambda: p.release(mine), "alloc.job_id", 1, "a job running on this policy")
    assert p.idle_nodes == 12 and (p.owner == -1).all()


@pytest.mark.parametrize("name", NAMES)
def test_requests_no_state_serves_are_refused(name):
    """A job larger than the machine, an unknown or non-text mode, requirements of the wrong sum, too large for a
    group, more than the groups, or unequal in custom_balance: ConfigErrors naming field, value and what is
    allowed, whatever the machine's state."""
    p = build_policy(name, 3, 4)
    cases = [
        (ConfigError, JobRequest(1, 13), "job.nodes", 13, "at most the machine's 12 nodes"),
        (ConfigError, JobRequest(1, 0), "job.nodes", 0, "a positive integer"),
        (ConfigTypeError, JobRequest(1, 2.0), "job.nodes", 2.0, "a positive integer"),
        (ConfigError, JobRequest(1, 3, "balance"), "job.mode", "balance", "minimal_balance | custom_balance"),
        (ConfigTypeError, JobRequest(1, 3, 2), "job.mode", 2, "minimal_balance | custom_balance"),
        (ConfigError, JobRequest(1, 6, "custom", (3, 2)), "job.requirements", (3, 2), "summing to job.nodes = 6"),
        (ConfigError, JobRequest(1, 6, "custom", (5, 1)), "job.requirements", (5, 1), "at most the 4 nodes"),
        (ConfigError, JobRequest(1, 6, "custom"), "job.requirements", (), "summing to job.nodes"),
        (ConfigError, JobRequest(1, 8, "custom", (2, 2, 2, 2)), "job.requirements", (2, 2, 2, 2), "at most 3"),
        (ConfigError, JobRequest(1, 7, "custom_balance", (4, 2, 1)), "job.requirements", (4, 2, 1), "equal"),
        (ConfigTypeError, JobRequest(1.5, 3), "job.id", 1.5, "an integer"),
    ]
    for exc, job, field, value, allowed in cases:
        for call in (p.allocate, p.fits):
            _refused(exc, lambda: call(job), field, value, allowed)
    _refused(ConfigTypeError, lambda: p.allocate((1, 3)), "job", "tuple", "JobRequest")
    assert p.idle_nodes == 12 and not p.running


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("field,value,exc", [
    ("groups", 0, ConfigError), ("groups", -2, ConfigError), ("groups", 2.5, ConfigTypeError),
    ("groups", "4", ConfigTypeError), ("groups", True, ConfigTypeError), ("groups", None, ConfigTypeError),
    ("nodes_per_group", 0, ConfigError), ("nodes_per_group", -1, ConfigError),
    ("nodes_per_group", 4.0, ConfigTypeError), ("seed", -1, ConfigError), ("seed", 0.5, ConfigTypeError),
])
def test_bad_machines_are_refused(name, field, value, exc):
    """0, negative or non-integer groups / nodes per group / seed: the error names ``policy.<field>``, the value
    and what is allowed, through build_policy and the class alike."""
    args = {"groups": 3, "nodes_per_group": 4, "seed": 0}
    args[field] = value
    allowed = "an integer in [0, 2^62)" if (field == "seed" and exc is ConfigError) else "an integer"
    _refused(exc, lambda: build_policy(name, **args), f"policy.{field}", value, allowed)
    cls = type(build_policy(name, 2, 2))
    _refused(exc, lambda: cls(**args), f"policy.{field}", value, allowed)


@pytest.mark.parametrize("value,exc", [(0, ConfigError), (-1, ConfigError), (1.5, ConfigTypeError),
                                       (True, ConfigTypeError), ("2", ConfigTypeError)])
def test_bad_ports_per_group_is_refused(value, exc):
    """GRAP's ``ports_per_group``: an integer >= 1; a wrong type is a ConfigTypeError (a TypeError), as the base
    module's contract says, through build_policy and the class alike (the class said ConfigError for 1.5)."""
    _refused(exc, lambda: build_policy("grap", 3, 4, ports_per_group=value), "policy.ports_per_group", value,
             "an integer")
    _refused(exc, lambda: Grap(3, 4, ports_per_group=value), "policy.ports_per_group", value, "an integer")
    with pytest.raises(ConfigError, match="policy.ports"):
        build_policy("grap", 3, 4, ports=2)
    assert sorted(KINDS) == sorted(NAMES)


def test_release_frees_the_policys_own_record():
    """A release is accepted for an allocation equal in nodes to the running one (a look-ahead copy shares them);
    it must free what the policy recorded, not what the argument claims: on GRAP (3 groups of 4) a small job's
    allocation re-labelled ``large`` with counts (3,) cleared the large job's ownership of group 0 (large_owner
    [-1, 1, -1], its ports free) and set group 0's idle count to 3 with 1 node idle there."""
    p = build_policy("grap", 3, 4)
    big = p.allocate(JobRequest(1, 6))
    small = p.allocate(JobRequest(2, 1))
    assert big.groups == (0, 1) and small.groups == (0,)
    p.release(dataclasses.replace(small, large=True, counts=(3,)))
    assert p.large_owner.tolist() == [1, 1, -1] and p.port_owner[:, 0].tolist() == [1, 1, -1]
    idle = (p.owner < 0).reshape(3, 4).sum(axis=1)
    assert p.idle_per_group.tolist() == idle.tolist() == [1, 1, 4] and p.idle_nodes == 6
    assert sorted(p.running) == [1]
