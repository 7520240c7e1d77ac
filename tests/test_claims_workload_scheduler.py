"""Numbers docs/workload.md states about the scheduler alone (its "Speed" section: the schedules of
`python -m tests.workload_speed GROUPS NODES_PER_GROUP JOBS`), rerun: the count-only ``unrestricted`` policy on the
page's 50,000-job traces, 288 x 288 and 36 x 256 (a few seconds each), and the group first-fit test policy's mean
wait on 36 x 256 (about 50 s here); the timings are measurements, marked on the page."""

from __future__ import annotations

import pytest

from tests.claims import check_stated
from tests.helpers import once

DOC = "docs/workload.md"


def _count_only(groups: int, nodes_per_group: int, jobs: int):
    """What `python -m tests.workload_speed GROUPS NODES_PER_GROUP JOBS` simulates first: the count-only
    ``unrestricted`` policy with its hand-made speedup table."""
    from evaluator.workload import MODES, UnrestrictedPolicy, simulate, speedup_table
    from tests.workload_speed import trace

    tab = speedup_table({m: {2: 1.3, groups: 1.0} for m in MODES})
    return simulate(trace(groups, nodes_per_group, jobs), UnrestrictedPolicy(groups, nodes_per_group),
                    speedups=tab, allow_foreign_speedups=True)


@pytest.fixture(scope="module")
@once
def paper_machine():
    return _count_only(288, 288, 50000)


@pytest.fixture(scope="module")
@once
def small_groups():
    return _count_only(36, 256, 50000)


def test_whole_group_sizes_on_the_paper_machine(paper_machine):
    cmd = "python -m tests.workload_speed 288 288 50000"
    check_stated(DOC, r"288 288 50000`\): mean wait ([0-9.]+) h", float(paper_machine.wait.mean()) / 3600, cmd)
    check_stated(DOC, r"288 288 50000`\): mean wait [0-9.]+ h, ([0-9]+)% of jobs backfilled",
                 100 * float(paper_machine.backfilled.mean()), cmd)


def test_unrestricted_wait_on_36_groups(small_groups):
    cmd = "python -m tests.workload_speed 36 256 50000"
    check_stated(DOC, r"the group rule raises the mean wait from ([0-9.]+) h to", float(small_groups.wait.mean()) / 3600,
                 cmd)


def test_group_first_fit_wait_on_36_groups():
    """'the group rule raises the mean wait from 2.40 h to 3.87 h': the group first-fit test policy of
    `python -m tests.workload_speed 36 256 50000` (the count-only policy's 2.40 h: the test above)."""
    from evaluator.workload import MODES, simulate, speedup_table
    from tests.workload_reference import GroupFirstFit
    from tests.workload_speed import trace

    tab = speedup_table({m: {2: 1.3, 36: 1.0} for m in MODES})
    ds = simulate(trace(36, 256, 50000), GroupFirstFit(36, 256), speedups=tab, allow_foreign_speedups=True)
    check_stated(DOC, r"the group rule raises the mean wait from [0-9.]+ h to ([0-9.]+) h", float(ds.wait.mean()) / 3600,
                 "python -m tests.workload_speed 36 256 50000")
