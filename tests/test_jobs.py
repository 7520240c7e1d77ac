"""Several jobs, phases and background traffic (issue 11) against independent references.

The reference for sharing is a plain event-driven fluid simulation written
here: link loads from the per-flow walk (tests/reference.py), solo phase
times as max load / capacity, and at every event the max-min fair speeds
found by linear programming (HiGHS): the largest common level of the jobs
not yet fixed, then, job by job, whether it could go faster with the others
kept at that level (lexicographic max-min fairness, the definition rather
than progressive filling).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import linprog

import evaluator as ev
from evaluator import placement as P
from evaluator import traffic as TR
from evaluator.errors import ConfigError
from evaluator.jobs import Background, Job, evaluate_jobs
from tests.helpers import TOL
from tests.reference import reference_link_loads

SIM_REL = 1e-9  # the bound for the sharing model against the fluid simulation


# --------------------------------------------------------------------------------------------
# the independent fluid simulation
# --------------------------------------------------------------------------------------------


def _lp_level(A: np.ndarray, fixed: dict[int, float], free: list[int]) -> float:
    """Largest t with s_j >= t (free), s_j = fixed, s <= 1 and A s <= 1 (A: rates over capacity, [link, job])."""
    J = A.shape[1]
    c = np.zeros(J + 1)
    c[-1] = -1.0
    A_ub = [np.concatenate([A, np.zeros((A.shape[0], 1))], axis=1)]
    b_ub = [np.ones(A.shape[0])]
    for j in free:
        row = np.zeros(J + 1)
        row[j], row[-1] = -1.0, 1.0
        A_ub.append(row[None])
        b_ub.append(np.zeros(1))
    bounds = [(fixed[j], fixed[j]) if j in fixed else (0.0, 1.0) for j in range(J)] + [(0.0, 1.0)]
    res = linprog(c, A_ub=np.concatenate(A_ub), b_ub=np.concatenate(b_ub), bounds=bounds, method="highs")
    assert res.status == 0
    return float(res.x[-1])


def _lp_can_exceed(A: np.ndarray, fixed: dict[int, float], free: list[int], level: float, j: int) -> bool:
    """Whether job j can run faster than ``level`` while every other free job keeps at least ``level``."""
    J = A.shape[1]
    c = np.zeros(J)
    c[j] = -1.0
    bounds = [(fixed[k], fixed[k]) if k in fixed else (level * (1 - 1e-12), 1.0) for k in range(J)]
    res = linprog(c, A_ub=A, b_ub=np.ones(A.shape[0]), bounds=bounds, method="highs")
    assert res.status == 0
    return -res.fun > level * (1 + 1e-7)


def lp_max_min(rates: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    """Max-min fair speeds (<= 1) of jobs with ``rates[job, link]`` at speed 1, by repeated LPs."""
    J = rates.shape[0]
    A = (rates / capacity[None, :]).T
    A = A[(A > 0).any(axis=1)]
    fixed: dict[int, float] = {}
    while len(fixed) < J:
        free = [j for j in range(J) if j not in fixed]
        _lp_level(A, fixed, free)  # the LP's value, polished below to its closed form on the same constraints
        used = A[:, list(fixed)] @ np.array(list(fixed.values())) if fixed else np.zeros(A.shape[0])
        per = A[:, free].sum(axis=1)
        ok = per > 0
        level = min(1.0, float(((1 - used[ok]) / per[ok]).min()) if ok.any() else 1.0)
        stuck = [j for j in free if level >= 1.0 or not _lp_can_exceed(A, fixed, free, level, j)]
        assert stuck, "some job must be limited at the max-min level"
        for j in stuck:
            fixed[j] = level
    return np.array([fixed[j] for j in range(J)])


def fluid_simulation(loads: list[np.ndarray], capacity: np.ndarray) -> np.ndarray:
    """Finish times of jobs running their phases (``loads[j][phase, link]`` bytes) together, event by event."""
    J = len(loads)
    T = [np.array([(L / capacity).max() for L in Lj]) for Lj in loads]
    phase = [0] * J
    remaining = [T[j][0] if len(T[j]) else 0.0 for j in range(J)]  # solo seconds left in the current phase
    finish = np.full(J, np.nan)
    now = 0.0

    def settle(j):
        while phase[j] < len(T[j]) and remaining[j] <= 0.0:
            phase[j] += 1
            remaining[j] = T[j][phase[j]] if phase[j] < len(T[j]) else 0.0
        if phase[j] >= len(T[j]) and np.isnan(finish[j]):
            finish[j] = now

    for j in range(J):
        settle(j)
    while np.isnan(finish).any():
        run = [j for j in range(J) if np.isnan(finish[j])]
        rates = np.stack([loads[j][phase[j]] / T[j][phase[j]] for j in run])
        s = lp_max_min(rates, capacity)
        step = min(remaining[j] / s[k] for k, j in enumerate(run))
        now += step
        for k, j in enumerate(run):
            remaining[j] -= s[k] * step
            if remaining[j] <= 1e-12 * T[j][phase[j]]:
                remaining[j] = 0.0
            settle(j)
    return finish


# --------------------------------------------------------------------------------------------
# random small cases
# --------------------------------------------------------------------------------------------


def _routing_dict(rt) -> dict:
    return {"kind": rt.kind, "order": getattr(rt, "order", "as_given"), "tie": getattr(rt, "tie", "split")}


def _random_case(seed: int):
    rng = np.random.default_rng(seed)
    if seed % 2:
        topo = ev.torus(tuple(int(x) for x in rng.choice([2, 3, 4, 5], size=int(rng.integers(1, 4)))),
                        nodes_per_router=int(rng.integers(1, 3)))
        rt = ev.dor()
    else:
        topo = ev.dragonfly(2, 4, 2)
        rt = ev.minimal() if rng.random() < 0.5 else ev.valiant()
    J = int(rng.integers(2, 6))
    nodes = rng.permutation(topo.n_nodes)
    sizes = np.maximum(2, (topo.n_nodes // J) * np.ones(J, int))
    jobs, start = [], 0
    for j in range(J):
        k = int(min(sizes[j], topo.n_nodes - start))
        if k < 2:
            break
        pl = P.explicit(topo, nodes[start:start + k], name=f"p{j}")
        start += k
        phases = []
        for _ in range(int(rng.integers(1, 4))):
            nf = int(rng.integers(1, 3 * k))
            src = rng.integers(0, k, nf)
            dst = rng.integers(0, k, nf)
            phases.append(TR.from_flows(k, src, dst, rng.integers(1, 10, nf) * 1e5))
        tr = phases[0] if len(phases) == 1 else TR.phased(phases)
        jobs.append(Job(tr, pl, name=f"j{j}"))
    return topo, rt, jobs


def _walk_loads(topo, rt, job) -> np.ndarray:
    phases = job.traffic.phases if isinstance(job.traffic, TR.PhasedTraffic) else (job.traffic,)
    return np.stack([reference_link_loads(topo, zip(t.src, t.dst, t.nbytes), job.placement.task_node,
                                          _routing_dict(rt)) for t in phases])


@pytest.mark.parametrize("seed", range(24))
def test_sharing_against_fluid_simulation(seed):
    topo, rt, jobs = _random_case(seed)
    assert 2 <= len(jobs) <= 5
    ds = evaluate_jobs(topo, jobs, rt, keep_link_load=True)
    loads = [_walk_loads(topo, rt, j) for j in jobs]
    cap = np.asarray(topo.capacity)
    for j, L in enumerate(loads):
        np.testing.assert_allclose(ds.job_link_load.values[j], L.sum(0), rtol=TOL["rel"], atol=TOL["bytes"])
    alone = np.array([(L / cap).max(axis=1).sum() for L in loads])
    np.testing.assert_allclose(ds.completion_time_alone.values, alone, rtol=TOL["rel"])
    ref = fluid_simulation(loads, cap)
    np.testing.assert_allclose(ds.completion_time.values, ref, rtol=SIM_REL)
    with np.errstate(invalid="ignore"):
        expected = np.where(alone > 0, ref / np.where(alone > 0, alone, 1.0), 1.0)  # nothing to do: slowdown 1
    np.testing.assert_allclose(ds.slowdown.values, expected, rtol=SIM_REL)
    assert (ds.slowdown.values >= 1 - SIM_REL).all()
    # the interference matrix: every pair alone together
    for a in range(len(jobs)):
        for b in range(len(jobs)):
            if a != b:
                fin = fluid_simulation([loads[a], loads[b]], cap)
                want = fin[0] / alone[a] if alone[a] > 0 else 1.0
                assert ds.interference.values[a, b] == pytest.approx(want, rel=SIM_REL)
    assert np.array_equal(np.diag(ds.interference.values), np.ones(len(jobs)))


def test_fluid_simulation_has_phases_and_speedups():
    """The random cases exercise what the model promises: slowdowns > 1, several phases, several events."""
    seen_slow = seen_phases = 0
    for seed in range(12):
        topo, rt, jobs = _random_case(seed)
        ds = evaluate_jobs(topo, jobs, rt)
        seen_slow += int((ds.slowdown.values > 1 + 1e-6).any())
        seen_phases += int(ds.sizes["phase"] > 1)
    assert seen_slow >= 6 and seen_phases >= 6


# --------------------------------------------------------------------------------------------
# exact cases
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("topo,rt,tr", [
    (ev.dragonfly(2, 4, 2), "minimal", TR.stencil([8, 8, 4], [4, 2, 2])),
    (ev.dragonfly(2, 4, 2), "valiant", TR.stencil([8, 8, 4], [4, 2, 2], exchange="per_dimension")),
    (ev.torus((4, 4, 2)), "dor", TR.all_to_all(32)),
])
def test_one_job_gives_exactly_evaluate(topo, rt, tr):
    pl = P.fully_random(topo, tr.n_tasks, seed=3)
    one = ev.evaluate(topo, tr, pl, rt)
    ds = evaluate_jobs(topo, [Job(tr, pl)], rt, keep_link_load=True)
    assert ds.completion_time.values[0] == float(one.completion_time)
    assert ds.completion_time_alone.values[0] == float(one.completion_time)
    assert ds.slowdown.values[0] == 1.0
    assert np.array_equal(ds.job_link_load.values[0], one.link_load.values)
    assert ds.total_bytes.values[0] == float(one.total_bytes)
    if "phase" in one.dims:
        assert np.array_equal(ds.phase_completion_time_alone.values[0], one.phase_completion_time.values)


def test_jobs_on_disjoint_links_do_not_slow_each_other():
    topo = ev.torus((8, 8, 4))
    a, b = P.subprism(topo, [4, 8, 4]), P.subprism(topo, [4, 8, 4], [4, 0, 0])
    jobs = [Job(TR.random_permutation(128, 1e6, 1), a), Job(TR.random_permutation(128, 1e6, 2), b)]
    ds = evaluate_jobs(topo, jobs, "dor", keep_link_load=True)
    assert not ((ds.job_link_load.values[0] > 0) & (ds.job_link_load.values[1] > 0)).any()  # the premise
    assert np.array_equal(ds.completion_time.values, ds.completion_time_alone.values)
    assert np.array_equal(ds.interference.values, np.ones((2, 2)))


def test_one_shared_link_is_shared_equally():
    """Two jobs whose only traffic crosses one link: equal bandwidth, then the longer one alone (closed form)."""
    topo = ev.torus((2,), wrap=False, link_bandwidth=1e9, injection_bandwidth=1e12)
    j1 = Job(TR.from_flows(1 + 1, [0], [1], [3e6]), P.explicit(topo, [0, 1]))
    # node 0 -> node 1 crosses the one router link 0 -> 1; a second job on the same nodes (not exclusive)
    j2 = Job(TR.from_flows(2, [0], [1], [5e6]), P.explicit(topo, [0, 1]), name="big")
    ds = evaluate_jobs(topo, [j1, j2], "dor", exclusive_nodes=False)
    c = 1e9
    assert ds.completion_time_alone.values == pytest.approx([3e6 / c, 5e6 / c], rel=TOL["rel"])
    # both at c/2 until the small one is done (2 * 3e6 / c), then the big one alone: (3e6 + 5e6) / c
    assert ds.completion_time.values == pytest.approx([6e6 / c, 8e6 / c], rel=TOL["rel"])
    assert float(ds.makespan) == pytest.approx(8e6 / c, rel=TOL["rel"])


def test_phases_sum_to_separate_evaluations():
    topo = ev.dragonfly(4, 8, 4)
    tr = TR.stencil([64, 64, 64], [8, 8, 4], exchange="per_dimension")
    for pl in (P.linear(topo, 256), P.fully_random(topo, 256, seed=5)):
        for rt in ("minimal", "valiant"):
            ds = ev.evaluate(topo, tr, pl, rt)
            sep = [ev.evaluate(topo, ph, pl, rt) for ph in tr.phases]
            times = np.array([float(d.completion_time) for d in sep])
            np.testing.assert_allclose(ds.phase_completion_time.values, times, rtol=TOL["rel"])
            assert float(ds.completion_time) == pytest.approx(times.sum(), rel=TOL["rel"])
            np.testing.assert_allclose(ds.link_load.values, sum(d.link_load.values for d in sep), rtol=TOL["rel"],
                                       atol=TOL["bytes"])
            hops = sum(float(d.mean_hops) * float(d.total_bytes) for d in sep) / sum(float(d.total_bytes) for d in sep)
            assert float(ds.mean_hops) == pytest.approx(hops, rel=TOL["rel_sum"])  # every byte leaves its node here
            longest = int(np.argmax(times))
            assert ds.bottleneck.item() == sep[longest].bottleneck.item()
            assert list(ds.phase.values) == ["dim0", "dim1", "dim2"]


def test_stencil_per_dimension_splits_the_same_flows():
    whole = TR.stencil([16, 8, 4], [4, 2, 1])
    ph = TR.stencil([16, 8, 4], [4, 2, 1], exchange="per_dimension")
    assert ph.n_phases == 3 and ph.phases[2].n_flows == 0  # beta_2 = 1: an empty phase
    flows = {}
    for t in ph.phases:
        for s, d, b in zip(t.src, t.dst, t.nbytes):
            flows[(s, d)] = flows.get((s, d), 0.0) + b
    assert flows == {(s, d): b for s, d, b in zip(whole.src, whole.dst, whole.nbytes)}


def test_phased_traffic_batches_in_one_compilation():
    from tests.test_compile_count import count_compiles

    topo = ev.dragonfly(2, 4, 2)
    tr = TR.stencil([8, 8, 4], [4, 2, 2], exchange="per_dimension")
    pls = [P.fully_random(topo, tr.n_tasks, seed=s) for s in range(10)]
    ev.evaluate_batch(topo, "minimal", tr, pls[5:], chunk_size=4)  # warm: compiles the bucket
    with count_compiles() as seen:
        res = ev.evaluate_batch(topo, "minimal", tr, pls[:5], chunk_size=4)
    assert seen == []
    assert res.phases["phase_completion_time"].shape == (5, 3)


# --------------------------------------------------------------------------------------------
# background
# --------------------------------------------------------------------------------------------


def test_background_fraction_zero_changes_nothing():
    topo = ev.dragonfly(2, 4, 2)
    jobs = [Job(TR.all_to_all(8), P.linear(topo, 8)), Job(TR.random_permutation(8, 1e6, 4), P.linear(topo, 8, 1, 8))]
    a = evaluate_jobs(topo, jobs, "minimal")
    b = evaluate_jobs(topo, jobs, "minimal", background=Background(0.0))
    for v in ("completion_time", "completion_time_alone", "slowdown", "interference"):
        assert np.array_equal(a[v].values, b[v].values)


def test_background_uniform_rates_against_the_walk():
    topo = ev.dragonfly(2, 4, 2)
    job = Job(TR.all_to_all(8), P.linear(topo, 8))
    f = 0.26
    ds = evaluate_jobs(topo, [job], "valiant", background=Background(f), keep_link_load=True)
    outside = np.arange(8, topo.n_nodes)
    inj = np.asarray(topo.capacity)[topo.n_router_links + outside]
    flows = [(i, k, f * inj[i] / (outside.size - 1)) for i in range(outside.size) for k in range(outside.size) if i != k]
    ref = reference_link_loads(topo, flows, outside, {"kind": "valiant"})
    np.testing.assert_allclose(ds.background_link_rate.values, ref, rtol=TOL["rel"], atol=TOL["bytes"])
    # what the job gets: its loads over what the background leaves
    L = ds.job_link_load.values[0]
    left = np.asarray(topo.capacity) - ref
    assert float(ds.completion_time_alone[0]) == pytest.approx((L / left).max(), rel=TOL["rel"])


def test_background_rates_of_scattered_nodes_against_the_walk_one_program_for_every_count():
    """The uniform background of node sets of different sizes, scattered over a torus (DOR): the per-flow walk's
    loads, and one compiled program for them all (it is evaluated over every node of the machine, the others
    weighing 0, so its shapes do not depend on how many nodes inject)."""
    from evaluator.jobs import background_rates
    from tests.helpers import COMPILE_EVENT, jax_events

    topo = ev.torus((4, 4, 2))
    rng = np.random.default_rng(3)
    inj = np.asarray(topo.capacity)[topo.n_router_links:topo.n_router_links + topo.n_nodes]
    background_rates(topo, Background(0.3), np.arange(2), "dor")  # compiled here, whatever the cache held
    with jax_events(COMPILE_EVENT, this_thread=True) as compiles:
        for k in (2, 5, 17, topo.n_nodes - 3, topo.n_nodes):
            nodes = np.sort(rng.choice(topo.n_nodes, size=k, replace=False))
            got = background_rates(topo, Background(0.3), nodes, "dor")
            flows = [(i, j, 0.3 * inj[nodes[i]] / (k - 1)) for i in range(k) for j in range(k) if i != j]
            ref = reference_link_loads(topo, flows, nodes, {"kind": "dor"})
            np.testing.assert_allclose(got, ref, rtol=TOL["rel"], atol=TOL["bytes"])
    assert compiles == [], compiles


@pytest.mark.parametrize("nodes, field_value", [([0, 3, 40], "40"), ([1, 2, 2], "repeated"), ([-1, 2], "-1"),
                                                ([0.5, 2.0], "float64"), ([[0, 1], [2, 3]], "shape")])
@pytest.mark.parametrize("fraction", [0.3, 0.0])
def test_background_rates_refuses_nodes_outside_the_machine_or_repeated(nodes, field_value, fraction):
    """Whatever the fraction (0 too: the nodes are checked before anything is skipped)."""
    from evaluator.jobs import background_rates

    with pytest.raises(ConfigError, match=rf"nodes = .*{field_value}"):
        background_rates(ev.torus((4, 4, 2)), Background(fraction), nodes, "dor")


def test_background_that_fills_a_link_gives_infinite_time_naming_it():
    # a ring whose links are much slower than the nodes' injection: uniform background fills them
    topo = ev.torus((8,), link_bandwidth=1e9, injection_bandwidth=1e10)
    job = Job(TR.from_flows(2, [0], [1], [1e6]), P.explicit(topo, [0, 4]))
    ds = evaluate_jobs(topo, [job], "dor", background=Background(0.5), keep_link_load=True)
    assert np.isinf(ds.completion_time.values[0]) and np.isinf(ds.completion_time_alone.values[0])
    link = int(ds.blocked_link.values[0])
    assert link >= 0 and ds.job_link_load.values[0, link] > 0
    assert ds.background_link_rate.values[link] >= ds.link_capacity.values[link]
    assert f"link {link}" in str(ds.blocked_reason.values[0]) and "background" in ds.attrs["blocked"]
    assert np.isnan(ds.slowdown.values[0])


# --------------------------------------------------------------------------------------------
# bad input
# --------------------------------------------------------------------------------------------


def test_bad_jobs_input():
    topo = ev.dragonfly(2, 4, 2)
    a = Job(TR.all_to_all(8), P.linear(topo, 8))
    b = Job(TR.all_to_all(8), P.linear(topo, 8, 1, 4))
    with pytest.raises(ConfigError, match=r"jobs\[1\]\.placement .*node 4 is also used by jobs\[0\]"):
        evaluate_jobs(topo, [a, b], "minimal")
    evaluate_jobs(topo, [a, b], "minimal", exclusive_nodes=False)  # allowed when nodes may be shared
    for f in (1.0, -0.1, 1.5, float("nan"), True):
        with pytest.raises(ConfigError, match=r"background\.fraction .* allowed is a number in \[0, 1\)"):
            evaluate_jobs(topo, [a], "minimal", background=Background(f))
    with pytest.raises(ConfigError, match=r"^jobs = \[\] is invalid: allowed is a non-empty list"):
        evaluate_jobs(topo, [], "minimal")
    with pytest.raises(ConfigError, match=r"background\.pattern"):
        evaluate_jobs(topo, [a], "minimal", background=Background(0.1, pattern="hotspot"))
    with pytest.raises(ConfigError, match=r"jobs\[0\]\.routing"):
        evaluate_jobs(topo, [a])
    with pytest.raises(ConfigError, match=r"jobs\[0\]\.placement\.n_tasks"):
        evaluate_jobs(topo, [Job(TR.all_to_all(9), P.linear(topo, 8))], "minimal")


@pytest.mark.parametrize("n", [2, 7, 64])
def test_random_pairs_is_a_matching_exchanging_both_ways(n):
    t = TR.random_pairs(n, 5.0, seed=3)
    partner = dict(zip(t.src.tolist(), t.dst.tolist()))
    assert len(partner) == t.n_flows == n // 2 * 2  # every task sends once (one idles when n is odd)
    assert all(partner[d] == s and s != d for s, d in partner.items())  # pairs, both ways
    assert (t.nbytes == 5.0).all()
    assert not np.array_equal(t.dst, TR.random_pairs(n, 5.0, seed=4).dst) or n == 2
