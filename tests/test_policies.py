"""Allocation policies (evaluator.policies): GRAP's rules on hand-worked states, invariants over random job
streams, the baselines, and bad requests.

Hand-worked states are written out node by node; the invariants are checked from the policy's own state
(owner per node, large owner per group, port owner per group and port) after every step of a seeded stream.
"""

from __future__ import annotations

import numpy as np
import pytest

from evaluator.errors import ConfigError
from evaluator.policies import KINDS, JobRequest, build_policy


def J(i, n, mode="minimal_balance", req=()):
    return JobRequest(i, n, mode, tuple(req))


def busy(policy, groups):
    """Occupy nodes with dummy small jobs so that group g has ``groups[g]`` idle nodes."""
    jid = 10_000
    for g, idle in enumerate(groups):
        take = policy.nodes_per_group - idle
        if take:
            nodes = policy.idle_in_group(g)[:take]
            policy.owner[nodes] = jid
            policy.idle_per_group[g] -= take
            policy.idle -= take
            jid += 1


# ------------------------------------------------------------------ GRAP, one rule per test
def test_small_job_needs_a_group_with_enough_idle_nodes():
    p = build_policy("grap", 3, 8)
    busy(p, [3, 4, 2])                   # 9 idle nodes but no group with 5
    assert p.allocate(J(1, 5)) is None
    a = p.allocate(J(2, 4))              # only group 1 has 4
    assert a.groups == (1,) and list(a.nodes) == [12, 13, 14, 15] and not a.large


def test_small_job_prefers_fewest_idle_nodes():
    p = build_policy("grap", 4, 8)
    busy(p, [8, 5, 3, 6])
    a = p.allocate(J(1, 3))
    assert a.groups == (2,) and list(a.nodes) == [21, 22, 23]
    b = p.allocate(J(2, 4))              # group 2 now full; fewest idle with >= 4 is group 1 (5)
    assert b.groups == (1,)


def test_small_job_prefers_groups_holding_a_large_job():
    p = build_policy("grap", 4, 8)
    busy(p, [2, 8, 8, 8])
    big = p.allocate(J(1, 12, "custom", (6, 6)))   # groups with no large job, ascending idle: 0 (2) too small -> 1, 2
    assert big.groups == (1, 2) and big.large
    a = p.allocate(J(2, 2))              # group 0 has fewer idle (2) but groups 1, 2 hold a large job
    assert a.groups == (1,)


def test_large_job_avoids_groups_with_another_large_job():
    p = build_policy("grap", 3, 8)
    a = p.allocate(J(1, 9, "adaptive"))           # 2 groups, 4 + 5 nodes
    assert a.large and len(a.groups) == 2
    assert a.groups == (1, 2)                     # window furthest back; g2 gets 9 // 2 = 4, g1 5 -> idle 8, 3, 4
    assert p.allocate(J(2, 9, "adaptive")) is None   # only g0 (8 idle) holds no large job
    assert p.allocate(J(3, 3)).groups == (1,)        # a small job goes to the large job's groups first (fewest idle)


def test_large_job_holds_every_port_of_its_groups():
    p = build_policy("grap", 4, 4, ports_per_group=3)
    a = p.allocate(J(1, 6))
    assert a.groups == (0, 1)
    assert (p.port_owner[[0, 1]] == 1).all() and (p.port_owner[[2, 3]] == -1).all()
    p.release(a)
    assert (p.port_owner == -1).all() and (p.large_owner == -1).all() and p.idle_nodes == 16


def test_minimal_balance_splits_evenly_over_fewest_groups():
    p = build_policy("grap", 4, 8)
    a = p.allocate(J(1, 16))
    assert a.groups == (0, 1) and a.nodes.size == 16   # whole groups
    b = p.allocate(J(2, 11))             # ceil(11/8) = 2 groups: 6 + 5
    counts = np.bincount(b.nodes // 8, minlength=4)
    assert sorted(counts[[2, 3]]) == [5, 6] and counts[:2].sum() == 0


def test_balance_modes_give_each_requirement_its_own_group():
    # idle ascending: g1 (4), g3 (5), g0 (6), g2 (8); requirements (4, 4): first fit ascending, each its own group
    p = build_policy("grap", 4, 8)
    busy(p, [6, 4, 8, 5])
    a = p.allocate(J(1, 10, "custom_balance", (5, 5)))
    assert a.groups == (0, 3)            # 5 -> g3 (5 idle), next 5 -> g0 (6 idle); never both in g3
    p2 = build_policy("grap", 4, 8)
    busy(p2, [6, 4, 8, 5])
    b = p2.allocate(J(1, 13, "custom", (2, 3, 8)))   # 2 -> g1, 3 -> g3, 8 -> g2
    assert b.groups == (1, 2, 3)
    assert list(np.bincount(b.nodes // 8, minlength=4)) == [0, 2, 8, 3]


def test_balance_mode_waits_when_requirements_do_not_fit():
    p = build_policy("grap", 3, 8)
    busy(p, [8, 3, 3])
    assert p.allocate(J(1, 12, "custom", (4, 8))) is None      # 4 fits no group but g0, which 8 needs
    assert p.allocate(J(2, 11, "custom", (3, 8))).groups == (0, 1)


def test_adaptive_picks_window_furthest_back_and_fills_every_group():
    # idle: g0 8, g1 7, g2 6, g3 3 -> descending g0 g1 g2 g3; job 10 needs ceil(10/8) = 2 groups
    # windows: (g0,g1) 15, (g1,g2) 13, (g2,g3) 9 < 10 -> (g1, g2); from fewest idle: g2 gets 10 // 2 = 5, g1 gets 5
    p = build_policy("grap", 4, 8)
    busy(p, [8, 7, 6, 3])
    a = p.allocate(J(1, 10, "adaptive"))
    assert a.groups == (1, 2)
    assert list(np.bincount(a.nodes // 8, minlength=4)) == [0, 5, 5, 0]
    # capped share: idle g0 8, g1 8, g2 2; job 10 -> windows (g0,g1) 16, (g1,g2) 10 -> (g1,g2): g2 gets 2, g1 gets 8
    q = build_policy("grap", 3, 8)
    busy(q, [8, 8, 2])
    b = q.allocate(J(1, 10, "adaptive"))
    assert list(np.bincount(b.nodes // 8, minlength=3)) == [0, 8, 2]


def test_adaptive_shares_divide_and_round_down_as_algorithm_3():
    """Feng et al. Algorithm 3, lines 13-21 by hand: ``for i = en to st: Nnodes_req = Nnodes_remain / (i - st + 1)``
    (integer division), capped by the group's idle nodes; the group with the most idle nodes takes the rest."""
    # empty machine, 4 groups of 8, job of 17: Ngrps = ceil(17 / 8) = 3; candidates g0..g3 (all 8 idle, stable);
    # windows of 3 all hold 24 >= 17, the furthest back is st = g1, en = g3.
    # i = g3: 17 // 3 = 5; i = g2: (17 - 5) // 2 = 6; i = g1: 6 // 1 = 6.  (Rounding up would give 6, 6, 5.)
    p = build_policy("grap", 4, 8)
    a = p.allocate(J(1, 17, "adaptive"))
    assert a.groups == (1, 2, 3)
    assert list(np.bincount(a.nodes // 8, minlength=4)) == [0, 6, 6, 5]
    # idle g0 7, g1 0, g2 5, g3 8 (small jobs placed by GRAP itself, one released): descending g3 g0 g2 g1;
    # job of 9: Ngrps = 2, windows (g3,g0) 15, (g0,g2) 12, (g2,g1) 5 -> st = g0, en = g2;
    # i = g2: 9 // 2 = 4 (<= 5 idle); i = g0: 5. Nodes: the lowest idle ones of each group.
    q = build_policy("grap", 4, 8)
    first = q.allocate(J(1, 7))                      # g0: nodes 0-6
    assert q.allocate(J(2, 8)).groups == (1,)        # g1 full
    assert q.allocate(J(3, 3)).groups == (2,)        # g2: nodes 16-18
    assert q.allocate(J(4, 1)).groups == (0,)        # fewest idle with >= 1: g0, node 7
    q.release(first)
    assert list(q.idle_per_group) == [7, 0, 5, 8]
    b = q.allocate(J(5, 9, "adaptive"))
    assert b.groups == (0, 2) and b.large
    assert list(b.nodes) == [0, 1, 2, 3, 4, 19, 20, 21, 22]


def test_adaptive_waits_without_enough_idle_nodes_in_free_groups():
    p = build_policy("grap", 3, 8)
    busy(p, [4, 4, 8])
    assert p.allocate(J(1, 17, "adaptive")) is None            # 3 groups, 16 idle
    assert p.allocate(J(2, 12, "adaptive")).groups == (0, 2)   # windows (g2,g0) 12 -> last that holds


# ------------------------------------------------------------------ baselines
def test_slurm_round_robin_deals_over_groups_from_a_moving_cursor():
    p = build_policy("slurm_round_robin", 4, 4)
    a = p.allocate(J(1, 6))              # one each to g0..g3, then g0, g1
    assert list(a.nodes) == [0, 1, 4, 5, 8, 12]
    b = p.allocate(J(2, 3))              # cursor at g1; idle 2, 2, 3, 3: level 1 would take 4 > 3, so level 0
    assert list(np.bincount(b.nodes // 4, minlength=4)) == [0, 1, 1, 1]   # and one each from g1 on
    busy2 = build_policy("slurm_round_robin", 3, 4)
    busy(busy2, [1, 4, 4])
    c = busy2.allocate(J(1, 7))          # level 3: g0 gives 1, g1 3, g2 3
    assert list(np.bincount(c.nodes // 4, minlength=3)) == [1, 3, 3]


def test_contiguous_takes_lowest_idle_nodes():
    p = build_policy("contiguous", 2, 4)
    a = p.allocate(J(1, 3))
    b = p.allocate(J(2, 2))
    p.release(a)
    c = p.allocate(J(3, 4))
    assert list(b.nodes) == [3, 4] and list(c.nodes) == [0, 1, 2, 5]


def test_random_is_seeded_and_copy_is_independent():
    p = build_policy("random", 4, 8, seed=3)
    q = p.copy()
    a = p.allocate(J(1, 10))
    b = q.allocate(J(1, 10))
    assert np.array_equal(a.nodes, b.nodes)          # same generator state
    assert q.idle_nodes == 22 and p.idle_nodes == 22
    p.release(a)
    assert p.idle_nodes == 32 and q.idle_nodes == 22  # q untouched


# ------------------------------------------------------------------ invariants over random streams
@pytest.mark.parametrize("name", sorted(KINDS))
@pytest.mark.parametrize("seed", [0, 1])
def test_invariants_over_random_job_streams(name, seed):
    G, N = 6, 8
    rng = np.random.default_rng(seed)
    p = build_policy(name, G, N, seed=seed, **({"ports_per_group": 2} if name == "grap" else {}))
    live = {}
    started = 0
    for step in range(400):
        if live and rng.random() < 0.45:
            jid = list(live)[rng.integers(len(live))]
            p.release(live.pop(jid))
        else:
            n = int(rng.choice([1, 2, 5, 8, 9, 13, 16, 20, 30]))
            mode = str(rng.choice(["minimal_balance", "adaptive", "custom", "custom_balance"]))
            req = ()
            if mode == "custom":
                k = min(n, -(-n // N) + int(rng.integers(0, 2)))
                cuts = np.sort(rng.choice(np.arange(1, n), size=k - 1, replace=False)) if k > 1 else []
                req = tuple(int(x) for x in np.diff(np.concatenate([[0], cuts, [n]])))
                if max(req) > N:
                    mode, req = "adaptive", ()
            elif mode == "custom_balance":
                k = -(-n // N)
                req = tuple([n // k + 1] * (n % k) + [n // k] * (k - n % k))
            a = p.allocate(J(step, n, mode, req))
            if a is not None:
                started += 1
                live[step] = a
                assert a.nodes.size == n and np.unique(a.nodes).size == n
                if name == "grap":
                    assert a.large == (n > N)
                    if not a.large:
                        assert len(a.groups) == 1
                    if mode == "custom" and a.large:
                        assert sorted(np.bincount(a.nodes // N)[list(a.groups)]) == sorted(req)
        # state against the live allocations, recomputed independently
        owner = np.full(G * N, -1)
        for jid, a in live.items():
            assert (owner[a.nodes] == -1).all(), "node allocated twice"
            owner[a.nodes] = jid
        assert np.array_equal(owner, p.owner)
        assert p.idle_nodes == (owner < 0).sum()
        if name == "grap":
            large_of = np.full(G, -1)
            for jid, a in live.items():
                if a.large:
                    assert (large_of[list(a.groups)] == -1).all(), "two large jobs in a group"
                    large_of[list(a.groups)] = jid
                    assert (p.port_owner[list(a.groups)] == jid).all(), "large job lacks a port of its groups"
            assert np.array_equal(large_of, p.large_owner)
            assert np.array_equal(np.where(large_of >= 0, large_of, -1)[:, None].repeat(2, 1), p.port_owner)
    assert started > 50


# ------------------------------------------------------------------ bad requests
@pytest.mark.parametrize("job,field", [
    (J(1, 5, "balanced"), "job.mode"),
    (J(1, 12, "custom", (5, 5)), "job.requirements"),
    (J(1, 12, "custom"), "job.requirements"),
    (J(1, 12, "custom_balance", (9, 3)), "job.requirements"),
    (J(1, 12, "custom", (10, 2)), "job.requirements"),
    (J(1, 33), "job.nodes"),
    (J(1, 0), "job.nodes"),
])
def test_bad_requests_are_config_errors(job, field):
    for name in KINDS:
        p = build_policy(name, 4, 8)
        with pytest.raises(ConfigError) as e:
            p.allocate(job)
        assert e.value.field == field and f"{field} = " in str(e.value)


def test_a_request_checked_on_one_machine_is_checked_again_on_another():
    """check_request remembers a request it passed, per machine size (a schedule asks about the same requests
    again and again): on a machine of another size the request is checked again, and refused where it never fits."""
    job = J(1, 12)
    assert build_policy("grap", 4, 8).fits(job)         # 32 nodes: it fits (and is marked)
    for name in KINDS:
        with pytest.raises(ConfigError, match="job.nodes = 12"):
            build_policy(name, 1, 8).allocate(job)       # 8 nodes: never
    listed = JobRequest(2, 12, "custom", [6, 6])        # mutable requirements: checked every time, never marked
    build_policy("grap", 4, 8).fits(listed)
    listed.requirements[0] = 9
    with pytest.raises(ConfigError, match="job.requirements"):
        build_policy("grap", 4, 8).fits(listed)


def test_unknown_policy_and_parameter():
    with pytest.raises(ConfigError, match="policy = 'fcfs'"):
        build_policy("fcfs", 4, 8)
    with pytest.raises(ConfigError, match="policy.ports"):
        build_policy("random", 4, 8, ports=2)


def test_release_of_an_unknown_allocation():
    p = build_policy("grap", 2, 4)
    a = p.allocate(J(1, 2))
    p.release(a)
    with pytest.raises(ConfigError, match="alloc.job_id"):
        p.release(a)


# ------------------------------------------------------------------ the scheduler's fast paths, against plain code
def _random_state(name, rng, groups=6, G=8, steps=40):
    """A policy after random placements and releases (every mode), and its running allocations."""
    p = build_policy(name, groups, G, seed=int(rng.integers(100)))
    live = []
    for i in range(steps):
        if live and rng.random() < 0.4:
            p.release(live.pop(int(rng.integers(len(live)))))
            continue
        n = int(rng.integers(1, 2 * G + 1))
        mode = ("minimal_balance", "adaptive")[int(rng.integers(2))] if n > G else "minimal_balance"
        a = p.allocate(J(i, n, mode))
        if a is not None:
            live.append(a)
    return p, live


@pytest.mark.parametrize("seed", range(4))
def test_grap_lookahead_releases_and_fits_as_a_full_copy(seed):
    """GRAP's look-ahead copy (no node array: its fits reads group counts only) answers every request as a full
    copy does after the same releases, leaves the live policy untouched and refuses to place a job."""
    rng = np.random.default_rng(seed)
    p, live = _random_state("grap", rng)
    owner, idle = p.owner.copy(), p.idle_per_group.copy()
    look, full = p.lookahead(), p.copy()
    assert look.owner is None and full.owner is not None
    jobs = [J(900 + i, int(n), m) for i, (n, m) in enumerate(
        [(n, "minimal_balance") for n in range(1, 25)] + [(n, "adaptive") for n in range(9, 25)])]
    for a in rng.permutation(len(live)):
        look.release(live[a])
        full.release(live[a])
        assert (look.idle_per_group == full.idle_per_group).all()
        assert look.idle_nodes == full.idle_nodes == int(full.idle_per_group.sum())
        assert [look.fits(j) for j in jobs] == [full.fits(j) for j in jobs]
    assert (p.owner == owner).all() and (p.idle_per_group == idle).all() and len(p.running) == len(live)
    with pytest.raises(RuntimeError, match="look-ahead"):
        look.allocate(J(999, 1))


@pytest.mark.parametrize("seed", range(20))
def test_grap_balanced_plan_is_the_pointer_walk(seed):
    """The vectorised requirement matching equals the written walk: requirements ascending, candidates by idle
    nodes ascending (ties: lower group), each requirement the first candidate left with enough idle nodes."""
    rng = np.random.default_rng(seed)
    groups, G = int(rng.integers(2, 12)), 8
    p = build_policy("grap", groups, G)
    p.idle_per_group = rng.integers(0, G + 1, groups)
    p.large_owner = np.where(rng.random(groups) < 0.3, 5, -1)
    reqs = [int(x) for x in rng.integers(1, G + 1, int(rng.integers(1, groups + 2)))]
    free = np.flatnonzero(p.large_owner < 0)
    cand = free[np.argsort(p.idle_per_group[free], kind="stable")]
    want, j = [], 0
    for need in sorted(reqs):
        while j < cand.size and p.idle_per_group[cand[j]] < need:
            j += 1
        if j >= cand.size:
            want = None
            break
        want.append((int(cand[j]), need))
        j += 1
    assert p._balanced(reqs) == want


@pytest.mark.parametrize("seed", range(20))
def test_grap_adaptive_plan_is_algorithm_3_written_out(seed):
    """The adaptive plan (window sums by a cumulative sum, the division over plain integers) equals Algorithm 3
    written out: free groups by idle nodes descending (ties: lower group), the last window of ``k`` of them whose
    idle nodes hold the job, then from its fewest idle up each group ``remain // groups left``, capped by its idle
    nodes; and the fit test without the plan answers as the plan does."""
    rng = np.random.default_rng(seed)
    groups, G = int(rng.integers(2, 12)), 8
    p = build_policy("grap", groups, G)
    p.idle_per_group = rng.integers(0, G + 1, groups)
    p.large_owner = np.where(rng.random(groups) < 0.3, 5, -1)
    for n in range(G + 1, groups * G + 1):
        free = [g for g in range(groups) if p.large_owner[g] < 0]
        cand = sorted(free, key=lambda g: -int(p.idle_per_group[g]))  # sorted() is stable
        k = -(-n // G)
        want = None
        if len(cand) >= k:
            holds = [st for st in range(len(cand) - k + 1)
                     if sum(int(p.idle_per_group[g]) for g in cand[st:st + k]) >= n]
            if holds:
                st, want, remain = holds[-1], [], n
                for left, g in enumerate(reversed(cand[st:st + k])):
                    share = min(remain // (k - left), int(p.idle_per_group[g]))
                    want.append((g, share))
                    remain -= share
        assert p._adaptive(n) == want, n
        assert p._fits(J(1, n, "adaptive")) == (want is not None), n


@pytest.mark.parametrize("mode", ["adaptive", "minimal_balance"])
def test_grap_release_of_a_job_over_many_groups(mode):
    """A large job over more than a few groups is released by its cached group and count arrays (one indexed
    update, not a loop): on the policy and on a look-ahead copy, every group, port and node it held is free
    again, and the others are as they were."""
    p = build_policy("grap", 10, 8, ports_per_group=2)
    small = p.allocate(J(1, 3))
    big = p.allocate(J(2, 47, mode))
    assert big.large and len(big.groups) >= 6
    np.testing.assert_array_equal(big.group_index, big.groups)
    np.testing.assert_array_equal(big.count_array, np.bincount(big.nodes // 8, minlength=10)[list(big.groups)])
    look = p.lookahead()
    for q in (look, p):
        q.release(big)
        assert (q.large_owner == -1).all()
        if q is p:
            assert (p.port_owner == -1).all() and (p.owner[big.nodes] == -1).all()
        want = np.full(10, 8)
        want[small.groups[0]] -= 3
        np.testing.assert_array_equal(q.idle_per_group, want)
        assert q.idle_nodes == 77


@pytest.mark.parametrize("name", sorted(KINDS))
def test_first_idle_and_release_by_counts(name):
    """``first_idle`` reads only the groups that take nodes: the same nodes as the lowest idle ones of every
    group; an allocation records its nodes per group, and a release by those counts (or, for an allocation
    made without them, by its nodes) restores the idle counts."""
    import dataclasses

    rng = np.random.default_rng(3)
    p, live = _random_state(name, rng)
    for _ in range(10):
        take = np.minimum(p.idle_per_group, rng.integers(0, 9, p.groups) * (rng.random(p.groups) < 0.5))
        idle = (p.owner < 0).reshape(p.groups, p.nodes_per_group)
        want = np.flatnonzero((idle & (np.cumsum(idle, axis=1) <= take[:, None])).ravel())
        np.testing.assert_array_equal(p.first_idle(take), want)
    for a in live:
        assert a.counts == tuple(int((a.nodes // p.nodes_per_group == g).sum()) for g in a.groups)
    q = p.copy()
    for a in live:
        p.release(a)
        q.release(dataclasses.replace(a, counts=()))
    assert (p.idle_per_group == p.nodes_per_group).all() and (q.idle_per_group == p.idle_per_group).all()
    assert p.idle_nodes == q.idle_nodes == p.total_nodes
    assert (p.owner == -1).all() and (q.owner == -1).all()


def test_first_idle_of_wholly_idle_groups_among_others():
    """``first_idle_of`` takes a wholly idle group's first nodes by arithmetic (no read of the node array) and reads
    the others: the same nodes as the lowest idle ones of each group, whether every taking group is idle, none is,
    or some are."""
    rng = np.random.default_rng(5)
    seen = set()
    for _ in range(400):
        G, P = int(rng.integers(1, 9)), int(rng.integers(1, 9))
        p = build_policy("contiguous", G, P)
        busy = rng.random(G * P) < rng.choice([0.2, 0.7])
        busy.reshape(G, P)[rng.random(G) < 0.5] = False  # some groups wholly idle
        p.owner[:] = np.where(busy, 99, -1)
        p.idle_per_group[:] = (~busy).reshape(G, P).sum(axis=1)
        take = np.where(rng.random(G) < 0.7, rng.integers(0, P + 1, G), 0)
        take = np.minimum(take, p.idle_per_group)
        gs = np.flatnonzero(take)
        idle = ~busy.reshape(G, P)
        want = np.flatnonzero((idle & (np.cumsum(idle, axis=1) <= take[:, None])).ravel())
        np.testing.assert_array_equal(p.first_idle_of(gs, take[gs]), want)
        free = p.idle_per_group[gs] == P
        seen.add("none" if not gs.size else "all" if free.all() else "some" if free.any() else "no free")
    assert seen == {"none", "all", "some", "no free"}


@pytest.mark.parametrize("seed", [0, 3, 12345])
def test_random_policy_draws_apart_from_the_trace(seed):
    """The synthetic trace draws its jobs from ``default_rng(seed)``; a study gives the random policy the same
    seed, and until 2026-12-06 it drew from ``default_rng(seed)`` too: the same numbers sized jobs and chose their
    nodes. Its stream is now a child of the seed (spawn key POLICY_STREAM), still the same for the same seed."""
    from evaluator.policies._baselines import policy_seed

    p = build_policy("random", 4, 8, seed=seed)
    assert not np.array_equal(p.rng.random(16), np.random.default_rng(seed).random(16))
    assert np.array_equal(build_policy("random", 4, 8, seed=seed).rng.random(16),
                          np.random.default_rng(policy_seed(seed)).random(16))
    expected = np.sort(np.random.default_rng(policy_seed(seed)).choice(np.arange(32), size=10, replace=False))
    assert np.array_equal(build_policy("random", 4, 8, seed=seed).allocate(J(1, 10)).nodes, expected)
