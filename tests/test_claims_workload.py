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
    typed in (the machine's own table takes minutes to compute, so it is not rerun here)."""
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
