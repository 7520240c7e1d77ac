"""Workload simulation: SWF reading, the workload model, and FCFS + EASY backfilling against brute force.

References: :mod:`tests.workload_reference` (a per-second stepped EASY by
node counts, and one with a policy object and copies), closed forms for run
times, and hand-worked traces.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from evaluator.errors import ConfigError
from evaluator.workload import (MODES, SpeedupTable, Trace, UnrestrictedPolicy, WorkloadModel, accelerated_run_time,
                                prepare_trace, read_swf, simulate, speedup_table, synthetic_trace, write_swf)
from tests.helpers import TOL
from tests.workload_reference import CountOnlyOff, GroupFirstFit, easy_counts, easy_stepped, random_jobs

DATA = Path(__file__).parent / "data"


def _trace(jobs, **kw) -> Trace:
    return Trace(job_id=np.array([j["id"] for j in jobs], np.int64),
                 submit=np.array([j["submit"] for j in jobs], np.float64),
                 run_time=np.array([j["run"] for j in jobs], np.float64),
                 requested_time=np.array([j["req"] for j in jobs], np.float64),
                 nodes=np.array([j["nodes"] for j in jobs], np.int64), **kw)


def _starts(ds) -> dict[int, float]:
    return {int(i): float(s) for i, s in zip(ds.job.values, ds.start.values)}


# ----------------------------------------------------------------------------------
# EASY backfilling against brute force
# ----------------------------------------------------------------------------------


def test_hand_worked_backfill_and_refusal():
    # 8 nodes. Job 1 (6 nodes, 0-10). Job 2 (8 nodes) is the blocked head: shadow 10, 0 extra nodes.
    # Job 3 (2 nodes, req 5) ends by the shadow: backfilled at 1. Job 4 (2 nodes, req 20) would delay job 2: waits.
    jobs = [{"id": 1, "submit": 0, "run": 10, "req": 10, "nodes": 6},
            {"id": 2, "submit": 1, "run": 5, "req": 5, "nodes": 8},
            {"id": 3, "submit": 1, "run": 5, "req": 5, "nodes": 2},
            {"id": 4, "submit": 1, "run": 20, "req": 20, "nodes": 2}]
    for pol in (UnrestrictedPolicy(2, 4), CountOnlyOff(UnrestrictedPolicy(2, 4)), GroupFirstFit(2, 4)):
        ds = simulate(_trace(jobs), pol, backfill_depth=None)
        assert _starts(ds) == {1: 0.0, 2: 10.0, 3: 1.0, 4: 15.0}, pol
        assert list(ds.backfilled.values) == [False, False, True, False]
        assert float(ds.reservation.sel(job=2)) == 10.0


@pytest.mark.parametrize("seed", range(40))
def test_unrestricted_equals_plain_easy(seed):
    """Speedup 1 and no placement rule: the simulation is plain FCFS + EASY (per-second brute force)."""
    rng = np.random.default_rng(seed)
    total = int(rng.integers(4, 13))
    jobs = random_jobs(rng, int(rng.integers(3, 13)), total)
    ref = easy_counts(jobs, total)
    table = speedup_table({m: {1: 1.0, 4: 1.0} for m in MODES})
    for pol in (UnrestrictedPolicy(1, total), CountOnlyOff(UnrestrictedPolicy(total, 1))):
        ds = simulate(_trace(jobs, mpi_fraction=np.full(len(jobs), 0.5)), pol, speedups=table, backfill_depth=None,
                      allow_foreign_speedups=True)
        assert _starts(ds) == {k: float(v) for k, v in ref.items()}
        np.testing.assert_array_equal(ds.speedup.values, 1.0)


@pytest.mark.parametrize("seed", range(40))
def test_topology_policy_against_stepped_reference(seed):
    """A group-constrained policy: starts and first reservations equal a per-second stepped reference."""
    rng = np.random.default_rng(100 + seed)
    groups, G = int(rng.integers(2, 5)), int(rng.integers(2, 5))
    jobs = random_jobs(rng, int(rng.integers(3, 13)), groups * G)
    ref, ref_shadow = easy_stepped(jobs, lambda: GroupFirstFit(groups, G))
    ds = simulate(_trace(jobs), GroupFirstFit(groups, G), backfill_depth=None)
    assert _starts(ds) == {k: float(v) for k, v in ref.items()}
    got = {int(i): float(r) for i, r in zip(ds.job.values, ds.reservation.values) if not math.isnan(r)}
    assert got == {k: float(v) for k, v in ref_shadow.items()}


@pytest.mark.parametrize("seed", range(30))
def test_no_backfilled_job_delays_the_head(seed):
    """Run times at most the requests: every blocked head starts by the first reservation it was given."""
    rng = np.random.default_rng(200 + seed)
    groups, G = 3, 4
    jobs = random_jobs(rng, 14, groups * G, max_t=10)
    for pol in (GroupFirstFit(groups, G), UnrestrictedPolicy(groups, G)):
        ds = simulate(_trace(jobs), pol, backfill_depth=None)
        r = ds.reservation.values
        has = ~np.isnan(r)
        assert np.all(ds.start.values[has] <= r[has])
        # and a backfilled job really jumped the queue: something submitted before it started after it
        for j in np.flatnonzero(ds.backfilled.values):
            earlier = (ds.submit.values < ds.submit.values[j]) | (
                (ds.submit.values == ds.submit.values[j]) & (ds.job.values < ds.job.values[j]))
            assert np.any(earlier & (ds.start.values > ds.start.values[j]))


def test_head_that_never_fits_is_named():
    class Never(UnrestrictedPolicy):
        count_only = False

        def allocate(self, job):
            return None if job.id == 2 else super().allocate(job)

    jobs = [{"id": 1, "submit": 0, "run": 3, "req": 3, "nodes": 1}, {"id": 2, "submit": 0, "run": 3, "req": 3,
                                                                     "nodes": 1}]
    with pytest.raises(ConfigError, match="job 2: request"):
        simulate(_trace(jobs), Never(1, 4))


# ----------------------------------------------------------------------------------
# run time on the RDN
# ----------------------------------------------------------------------------------


def test_run_time_follows_the_speedup_table():
    # one job at a time on a 2-group machine of 4 nodes per group: run times add up
    table = speedup_table({"minimal_balance": {2: 1.25}, "adaptive": {2: 2.0, 4: 3.0}})
    jobs = [{"id": 1, "submit": 0, "run": 100, "req": 200, "nodes": 8},
            {"id": 2, "submit": 0, "run": 100, "req": 200, "nodes": 8},
            {"id": 3, "submit": 0, "run": 100, "req": 200, "nodes": 3}]
    tr = _trace(jobs, mode=np.array(["minimal_balance", "adaptive", "adaptive"], dtype=object),
                mpi_fraction=np.array([0.4, 0.5, 0.5]))
    for rule, saving in (("time_ratio", lambda s: 1 - 1 / s), ("excess", lambda s: min(s - 1, 1.0))):
        ds = simulate(tr, GroupFirstFit(2, 4), speedups=table, speedup_rule=rule, allow_foreign_speedups=True)
        run1 = 100 - 40 * saving(1.25)
        run2 = 100 - 50 * saving(2.0)
        assert ds.run_time.values[0] == pytest.approx(run1, rel=TOL["rel"])
        assert ds.run_time.values[1] == pytest.approx(run2, rel=TOL["rel"])
        assert ds.run_time.values[2] == 100.0  # one group: below the table, not accelerated
        assert ds.start.values[1] == pytest.approx(run1, rel=TOL["rel"])
        assert list(ds.speedup.values) == [1.25, 2.0, 1.0]
        assert list(ds.groups.values) == [2, 2, 1]


def test_speedup_table_interpolates_and_clamps():
    t = SpeedupTable(speedup_table({"adaptive": {2: 1.3, 6: 1.1}}))
    assert t("adaptive", 1) == 1.0
    assert t("adaptive", 2) == 1.3 and t("adaptive", 6) == 1.1 and t("adaptive", 50) == 1.1
    assert t("adaptive", 4) == pytest.approx(1.2, rel=TOL["rel"])
    assert accelerated_run_time(10.0, 0.5, 1.0) == 10.0


def test_speedup_table_missing_mode_and_bad_values():
    table = speedup_table({"minimal_balance": {2: 1.2}})
    jobs = [{"id": 1, "submit": 0, "run": 5, "req": 5, "nodes": 2}]
    with pytest.raises(ConfigError, match="speedup_table.mode.*'adaptive'"):
        simulate(_trace(jobs, mode=np.array(["adaptive"], dtype=object)), UnrestrictedPolicy(1, 4), speedups=table,
                 allow_foreign_speedups=True)
    holes = SpeedupTable(speedup_table({"a": {2: 1.2}, "b": {3: 1.5, 5: 2.0}}))  # NaN where not computed
    assert holes("a", 4) == 1.2 and holes("b", 2) == 1.0 and holes("b", 4) == pytest.approx(1.75, rel=TOL["rel"])
    with pytest.raises(ConfigError, match=r"speedup_table\[mode='b'\]"):
        SpeedupTable(speedup_table({"a": {2: 1.2}, "b": {2: 1.0}}).where(lambda d: d.mode != "b", -1.0))
    with pytest.raises(ConfigError, match="dims"):
        SpeedupTable(table.speedup.rename(groups="size"))


# ----------------------------------------------------------------------------------
# bad requests
# ----------------------------------------------------------------------------------


@pytest.mark.parametrize("mode,reqs,needle", [
    ("fastest", (), "job 7: mode = 'fastest'.*minimal_balance"),
    ("custom", (4, 3), r"job 7: requirements = \[4, 3\].*summing to the job's size 8 \(they sum to 7\)"),
    ("custom", (), "job 7: requirements = \\[\\].*non-empty list summing to 8"),
    ("custom", (6, 2), "job 7: requirements = \\[6, 2\\].*in \\[1, 4\\]"),
    ("custom_balance", (4, 2, 2), "equal node counts"),
    ("adaptive", (4, 4), "none for a job of mode 'adaptive'"),
])
def test_bad_requests_are_named(mode, reqs, needle):
    jobs = [{"id": 7, "submit": 0, "run": 5, "req": 5, "nodes": 8}]
    tr = _trace(jobs, mode=np.array([mode], dtype=object), requirements=(reqs,))
    with pytest.raises(ConfigError, match=needle):
        simulate(tr, UnrestrictedPolicy(4, 4))


def test_job_larger_than_the_machine_in_simulation():
    jobs = [{"id": 3, "submit": 0, "run": 5, "req": 5, "nodes": 17}]
    with pytest.raises(ConfigError, match=r"job 3: nodes = 17.*\[1, 16\]"):
        simulate(_trace(jobs), UnrestrictedPolicy(4, 4))


# ----------------------------------------------------------------------------------
# SWF
# ----------------------------------------------------------------------------------


def test_swf_sample_reads():
    tr = read_swf(DATA / "sample.swf")
    # jobs 4 (run time -1) and 9 (size 0) are dropped; job 6 has no request: its run time
    assert tr.attrs["dropped"] == 2 and tr.attrs["unix_start_time"] == 1546300800
    assert list(tr.job_id) == [1, 2, 3, 5, 6, 7, 8, 10, 11, 12]
    assert list(tr.nodes) == [512, 1024, 512, 4096, 512, 2048, 8192, 512, 1024, 16384]
    i6 = list(tr.job_id).index(6)
    assert tr.requested_time[i6] == tr.run_time[i6] == 600
    assert np.all(np.diff(tr.submit) >= 0)
    tr2 = read_swf(DATA / "sample.swf", procs_per_node=16)
    np.testing.assert_array_equal(tr2.nodes, -(-tr.nodes // 16))


def test_swf_round_trip(tmp_path):
    tr = synthetic_trace(50, 4096, seed=3)
    write_swf(tr, tmp_path / "t.swf", comment="synthetic")
    back = read_swf(tmp_path / "t.swf")
    for f in ("job_id", "submit", "run_time", "requested_time", "nodes"):
        np.testing.assert_array_equal(getattr(back, f), getattr(tr, f))


GOOD = "1 0 5 100 512 -1 -1 512 3600 -1 1 3 1 -1 1 -1 -1 -1"


@pytest.mark.parametrize("line,needle", [
    ("1 0 5 100 512 -1 -1 512 3600 -1 1 3 1 -1 1 -1 -1", r"t.swf:3 = .*18 whitespace-separated fields \(it has 17\)"),
    ("1 0 5 100 512 -1 -1 512 3600 -1 1 3 1 -1 1 -1 -1 -1 9", r"it has 19"),
    ("1 0 5 100 512 -1 -1 -512 3600 -1 1 3 1 -1 1 -1 -1 -1",
     r"t.swf:3 field 8 \(requested_processors\) = '-512'.*>= 0, or -1"),
    ("1 0 5 -7 512 -1 -1 512 3600 -1 1 3 1 -1 1 -1 -1 -1", r"field 4 \(run_time\) = '-7'"),
    ("1 0 5 100 51x -1 -1 512 3600 -1 1 3 1 -1 1 -1 -1 -1", r"field 5 \(allocated_processors\) = '51x'.*a number"),
    ("1 0 5 100 512.5 -1 -1 512 3600 -1 1 3 1 -1 1 -1 -1 -1", r"field 5 .*an integer"),
    ("1 -1 5 100 512 -1 -1 512 3600 -1 1 3 1 -1 1 -1 -1 -1", r"field 2 \(submit_time\).*known submit time"),
    ("1 0 5 100 512 -1 -1 99999 3600 -1 1 3 1 -1 1 -1 -1 -1",
     r"t.swf:3 field 8 \(requested_processors\) = 99999.*at most 49152 processors"),
])
def test_swf_bad_lines_are_named(tmp_path, line, needle):
    p = tmp_path / "t.swf"
    p.write_text(f"; MaxNodes: 49152\n{GOOD}\n{line}\n")
    with pytest.raises(ConfigError, match=needle):
        read_swf(p)


def test_swf_job_larger_than_the_given_machine(tmp_path):
    p = tmp_path / "t.swf"
    p.write_text(GOOD + "\n")
    with pytest.raises(ConfigError, match=r"t.swf:1 field 8.*at most 256 processors \(256 nodes"):
        read_swf(p, total_nodes=256)


# ----------------------------------------------------------------------------------
# workload model and synthetic traces
# ----------------------------------------------------------------------------------


def test_prepare_trace_enlarges_and_assigns_modes():
    tr = synthetic_trace(400, 2048, seed=5)
    total, G = 4096, 64
    model = WorkloadModel(enlarge=2.0, mode_lo=129, mode_hi=2048, mpi_fraction={256: 0.1, math.inf: 0.4}, seed=2)
    p = prepare_trace(tr, total, G, model)
    np.testing.assert_array_equal(p.nodes, np.minimum(tr.nodes * 2, total))
    mid = (p.nodes >= 129) & (p.nodes <= 2048)
    assert set(p.mode[~mid]) == {"minimal_balance"}
    assert set(p.mode[mid]) == set(MODES)  # 400 draws: every mode of the paper's mix appears
    for n, m, r in zip(p.nodes, p.mode, p.requirements):
        if m in ("custom", "custom_balance"):
            assert sum(r) == n and max(r) <= G and min(r) >= 1
        if m == "custom_balance":
            assert len(set(r)) == 1
        if m not in ("custom", "custom_balance"):
            assert r == ()
    np.testing.assert_array_equal(p.mpi_fraction, np.where(p.nodes <= 256, 0.1, 0.4))
    again = prepare_trace(tr, total, G, model)
    assert list(again.mode) == list(p.mode) and again.requirements == p.requirements
    simulate(p, UnrestrictedPolicy(total // G, G))  # the prepared trace passes the simulator's checks


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_mode_draws_follow_the_mix_at_every_size_when_trace_and_model_share_a_seed(seed):
    """The modes the jobs that draw one get follow the model's mix, and independently of the job's size, when the
    trace and the model have the same seed (as `evaluator schedule --seed` and a study's `seed` give them). Until
    2026-12-06 both drew from default_rng(seed): on 36 x 288 at seed 0, 0 of 545 jobs got minimal balance (40%
    of the mix) and 412 the last two modes (20%). Checked by a chi-square goodness of fit to the mix, and a
    chi-square test of independence of mode and size class (SciPy), each at the 0.1% level."""
    from scipy.stats import chi2_contingency, chisquare

    G, groups = 288, 36
    model = WorkloadModel(seed=seed)
    p = prepare_trace(synthetic_trace(2000, groups * G // 2, seed=seed), groups * G, G, model)
    draws = (p.nodes >= model.mode_lo) & (p.nodes <= model.mode_hi) & (p.nodes > G)
    mode = np.asarray(p.mode, dtype=object)[draws]
    # custom balance becomes custom where no even split exists, so those two are counted together
    kinds = [("minimal_balance",), ("adaptive",), ("custom_balance", "custom")]
    counts = np.array([np.isin(mode, k).sum() for k in kinds])
    assert counts.sum() == draws.sum() > 400
    share = np.array([sum(model.mode_mix[m] for m in k) for k in kinds]) / sum(model.mode_mix.values())
    assert chisquare(counts, share * counts.sum()).pvalue > 1e-3, (seed, counts, share)
    sizes = np.asarray(p.nodes)[draws]
    table = np.array([[np.sum(np.isin(mode, k) & (sizes == s)) for k in kinds] for s in np.unique(sizes)])
    table = table[table.sum(axis=1) >= 20]  # size classes with enough jobs for the test
    assert table.shape[0] >= 2, table
    assert chi2_contingency(table).pvalue > 1e-3, (seed, table)


def test_workload_doc_states_the_mode_counts_before_and_after_the_mend(monkeypatch):
    """docs/workload.md's mode counts at seed 0 on 36 x 288: now (209 minimal balance, 229 adaptive, 57 custom
    balance, 50 custom of 545), and before the mend (0 minimal balance, 412 in the last two modes), the latter
    with the modes' stream put back to ``default_rng(seed)`` (what ``mode_seed`` replaced)."""
    import evaluator.workload.model as M
    from tests.claims import check_stated

    cmd = "prepare_trace(synthetic_trace(2000, 5184, seed=0), 10368, 288, WorkloadModel(seed=0))"

    def counts():
        p = prepare_trace(synthetic_trace(2000, 5184, seed=0), 10368, 288, WorkloadModel(seed=0))
        m = np.asarray(p.mode, dtype=object)[(p.nodes >= 576) & (p.nodes <= 65536) & (p.nodes > 288)]
        return {k: int((m == k).sum()) for k in MODES}, m.size

    now, n = counts()
    doc = "docs/workload.md"
    check_stated(doc, r"now [0-9]+ minimal balance, [0-9]+ adaptive, [0-9]+ custom balance and [0-9]+ custom of "
                      r"([0-9]+);", n, cmd)
    order = ("minimal_balance", "adaptive", "custom_balance", "custom")
    for i, k in enumerate(order):
        pattern = r"now ([0-9]+) minimal balance, ([0-9]+) adaptive, ([0-9]+) custom balance and ([0-9]+) custom of "
        groups = pattern.split("([0-9]+)")
        one = "".join(g + ("([0-9]+)" if j == i else "[0-9]+") for j, g in enumerate(groups[:-1])) + groups[-1]
        check_stated(doc, one, now[k], cmd)
    monkeypatch.setattr(M, "mode_seed", lambda seed: seed)  # the shared stream of before the mend
    before, n_before = counts()
    check_stated(doc, r"at seed 0 on 36 x 288, ([0-9]+) of the [0-9]+ jobs that draw a mode got minimal balance",
                 before["minimal_balance"], cmd)
    check_stated(doc, r"at seed 0 on 36 x 288, [0-9]+ of the ([0-9]+) jobs that draw a mode", n_before, cmd)
    check_stated(doc, r"got minimal balance and ([0-9]+) got the mix's last two modes",
                 before["custom_balance"] + before["custom"], cmd)


def test_synthetic_trace_is_seeded():
    a, b, c = synthetic_trace(300, 1000, seed=1), synthetic_trace(300, 1000, seed=1), synthetic_trace(300, 1000, 2)
    for f in ("submit", "run_time", "requested_time", "nodes"):
        np.testing.assert_array_equal(getattr(a, f), getattr(b, f))
    assert not np.array_equal(a.submit, c.submit)
    assert a.nodes.min() >= 1 and a.nodes.max() <= 1000 and np.all(a.requested_time >= a.run_time)


@pytest.mark.parametrize("kw,needle", [
    ({"enlarge": 0}, "workload.enlarge"),
    ({"mode_mix": {"turbo": 1.0}}, "workload.mode_mix = 'turbo'"),
    ({"mpi_fraction": 1.5}, "workload.mpi_fraction"),
    ({"speedup_rule": "double"}, "workload.speedup_rule"),
])
def test_workload_model_bad_parameters(kw, needle):
    with pytest.raises(ConfigError, match=needle):
        WorkloadModel(**kw)
