"""Numbers docs/workload.md states, rerun (issue 23, item 8): a shrunken variant of the Fig. 5 study where the
stated one takes minutes. Fails when a number drifts beyond its printed precision (tests/claims.py)."""

from __future__ import annotations

import pytest

from tests.claims import check_stated
from tests.helpers import once

DOC = "docs/workload.md"
SHRUNK = "python -m tests.workload_speed 288 288 2000 --policies paper --allow-foreign-speedups"


@pytest.fixture(scope="module")
@once
def shrunk():
    """The shrunken study: 2,000 jobs on 288 x 288, round-robin against GRAP with the paper's Fig. 4 speedups
    typed in (the machine's own table and the 50,000-job schedules that apply a table are rerun in full by
    tests/test_claims_workload_paper.py)."""
    from evaluator.workload import make_policy, simulate
    from evaluator.workload.model import PAPER_FIG4_SPEEDUPS
    from evaluator.workload.run import load_speedups
    from tests.workload_speed import trace

    tr = trace(288, 288, 2000)
    base = simulate(tr, make_policy("slurm_round_robin", 288, 288))
    rdn = simulate(tr, make_policy("grap", 288, 288), speedups=load_speedups(PAPER_FIG4_SPEEDUPS),
                   allow_foreign_speedups=True)
    return base, rdn


def test_shrunken_fig5_study(shrunk):
    base, rdn = shrunk
    bw, rw = float(base.wait.mean()), float(rdn.wait.mean())
    row = r"\| `grap` \+ `paper`, 2,000 jobs \| "
    check_stated(DOC, r"\| `slurm_round_robin`, 2,000 jobs \| ([0-9.]+) h", bw / 3600, SHRUNK)
    check_stated(DOC, row + r"([0-9.]+) h", rw / 3600, SHRUNK)
    check_stated(DOC, row + r"[0-9.]+ h \| \*\*([0-9.]+)%\*\*", 100 * (1 - rw / bw), SHRUNK)
    check_stated(DOC, row + r"[0-9.]+ h \| [^|]+ \| ([0-9.]+) \|", float(rdn.speedup.mean()), SHRUNK)


def test_no_speedup_table_applies_ratio_one(shrunk):
    """The Fig. 5 table's runs without a speedup table (`slurm_round_robin` on the TDN, `grap` allocation only) state
    a mean speedup ratio of 1.000: without a table every job's ratio is 1 whatever its allocation, so the mean over
    any trace is the mean over the 50,000 jobs. Round-robin: the shrunken study's baseline; `grap` without a table:
    a 100-job trace from the same generator (the shrunken command prints that run on its 2,000 jobs)."""
    from evaluator.workload import make_policy, simulate
    from tests.workload_speed import trace

    cmd = "python -m tests.workload_speed 288 288 50000 --policies paper --allow-foreign-speedups"
    base, _ = shrunk
    check_stated(DOC, r"\| `slurm_round_robin` \(TDN\) \| none \| [0-9.]+ h \| \| ([0-9.]+) \|",
                 float(base.speedup.mean()), cmd)
    grap = simulate(trace(288, 288, 100), make_policy("grap", 288, 288))
    check_stated(DOC, r"\| `grap`, allocation only \| none \| [0-9.]+ h \| [^|]+ \| ([0-9.]+) \|",
                 float(grap.speedup.mean()), cmd)


def test_mean_ratio_as_share_of_run_time():
    """'our 1.291 mean ratio on 30% MPI time gives, 6.8% of run time': the run-time rule the scheduler applies
    (`accelerated_run_time`, `time_ratio`) to the ratio and MPI fraction the sentence names. Both are read from
    the page without recording them (the 1.291 itself, from the 50,000-job run: tests/test_claims_workload_paper.py)."""
    import re

    from evaluator.workload.model import accelerated_run_time
    from tests.claims import ROOT

    m = re.search(r"our ([0-9.]+) mean ratio on ([0-9.]+)% MPI time", " ".join((ROOT / DOC).read_text().split()))
    assert m, "docs/workload.md: the sentence on the mean ratio's share of run time changed"
    ratio, mpi = float(m.group(1)), float(m.group(2)) / 100
    saved = 1.0 - accelerated_run_time(1.0, mpi, ratio, "time_ratio")
    cmd = "python -m tests.workload_speed 288 288 50000 --policies paper --allow-foreign-speedups"
    check_stated(DOC, r"our [0-9.]+ mean ratio on [0-9.]+% MPI time (?:<!-- input --> )?gives, ([0-9.]+)% of run time",
                 100 * saved, cmd)


def test_the_shrunken_study_over_trace_seeds():
    """'Over the traces of seeds 0 to 7 ... the reduction of grap + paper runs from 22.7% (seed 1) to 50.0% (seed
    7), mean 33.2% ...; grap without speedups runs from -11.1% (seed 5) to 15.2% (seed 6), mean -0.1%': each seed's
    reduction computed here from its two schedules' mean waits (tests/workload_speed.py's over_seeds runs them)."""
    import numpy as np

    from tests.workload_speed import over_seeds

    cmd = SHRUNK + " --seeds 8"
    red = {k: np.array(v) for k, v in over_seeds(288, 288, 2000, ["paper"], 8, allow=True, show=False).items()}
    for run, what in (("grap+paper", r"the reduction of `grap` \+ `paper` runs from"),
                      ("grap", r"`grap` without speedups runs from")):
        r = red[run]
        lo, hi = int(np.argmin(r)), int(np.argmax(r))
        check_stated(DOC, what + r" (-?[0-9.]+)% \(seed [0-9]+\)", r[lo], cmd)
        check_stated(DOC, what + r" -?[0-9.]+% \(seed ([0-9]+)\)", lo, cmd)
        check_stated(DOC, what + r" -?[0-9.]+% \(seed [0-9]+\) to (-?[0-9.]+)%", r[hi], cmd)
        check_stated(DOC, what + r" -?[0-9.]+% \(seed [0-9]+\) to -?[0-9.]+% \(seed ([0-9]+)\)", hi, cmd)
        check_stated(DOC, what + r" -?[0-9.]+% \(seed [0-9]+\) to -?[0-9.]+% \(seed [0-9]+\), mean (-?[0-9.]+)%",
                     r.mean(), cmd)
    r = red["grap+paper"]  # seed 0, the table's run, 'near the low end': the second smallest of the 8
    check_stated(DOC, r"so seed 0's ([0-9.]+)% is near the low end", r[0], cmd)
    assert int((r < r[0]).sum()) <= 1
