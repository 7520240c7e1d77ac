"""docs/workload.md's results on the paper's machine, DF(12, 24, 12, 288), rerun in full (issue 34): the machine's
own speedup table against the TDN's fastest oblivious routing (`evaluator study rdn --machine 12,24,12,288
--bounds none --baseline oblivious --adaptive none`: 24 points, about a minute here) and its ratios as the page
states them, then the page's 50,000-job schedules (round-robin, GRAP without speedups, GRAP with that table and
GRAP with the paper's Fig. 4 table typed in: `python -m tests.workload_speed 288 288 50000 --policies ...`).
About 5 minutes of CPU here (2026-11-30: the study 140 s, the four schedules 163 s): a module of its own, weighted
in tests/conftest.py so that the scheduler starts it first."""

from __future__ import annotations

import pytest

from tests.claims import check_stated
from tests.helpers import once

DOC = "docs/workload.md"
STUDY = ("evaluator study rdn --machine 12,24,12,288 --bounds none --baseline oblivious --adaptive none "
         "--speedup-out results/rdn/speedup-288x288.nc")
OWN = "python -m tests.workload_speed 288 288 50000 --policies results/rdn/speedup-288x288.nc"
PAPER = "python -m tests.workload_speed 288 288 50000 --policies paper --allow-foreign-speedups"


@pytest.fixture(scope="module")
@once
def own_table():
    """The speedup table the page's study command writes (the study without bounds and UGAL-G; its 10 seeds)."""
    from evaluator.studies.rdn import PAPER_MACHINE, allocation_mode_study, speedup_table

    ds = allocation_mode_study(PAPER_MACHINE, bounds=(), adaptive=())
    return speedup_table(study=ds, baseline="oblivious")


@pytest.fixture(scope="module")
@once
def schedules(own_table, tmp_path_factory):
    """The four 50,000-job runs of the two commands (they share round-robin and GRAP without speedups)."""
    from evaluator.io import write_netcdf
    from tests.workload_speed import policies

    path = tmp_path_factory.mktemp("rdn") / "speedup-288x288.nc"
    write_netcdf(own_table, path)
    runs = policies(288, 288, 50000, [str(path), "paper"], allow=True, show=False)
    return {"round-robin": runs["slurm_round_robin"], "grap": runs["grap"], "own": runs[f"grap+{path}"],
            "paper": runs["grap+paper"]}


def _ratio(table, mode: str, groups: int) -> float:
    return float(table.speedup.sel(mode=mode, groups=groups))


def test_the_own_tables_ratios(own_table):
    """'The own table's ratios ... are 1.00 up to 32 groups (all-to-all 0.98 at 32 and 0.88 at 64 ...), stencil
    1.05 at 64, ... stencil 1.40 at 128 groups, 2.01 at 288; neighbouring 1.54 at 288' and the stencil's 1.00 on
    8 groups of the paper's machine. Modes: the stencil's ``minimal_balance``, the neighbouring pattern's
    ``custom``, the all-to-all's ``adaptive``."""
    t = own_table
    for mode in ("minimal_balance", "custom", "adaptive"):
        for q in (2, 4, 8, 16, 32):
            if (mode, q) != ("adaptive", 32):
                assert round(_ratio(t, mode, q), 2) == 1.00, (mode, q, _ratio(t, mode, q))
    check_stated(DOC, r"ratios \(means over 10 random mappings of the TDN\) are ([0-9.]+) up to 32 groups",
                 _ratio(t, "minimal_balance", 32), STUDY)
    check_stated(DOC, r"\(all-to-all ([0-9.]+) at 32", _ratio(t, "adaptive", 32), STUDY)
    check_stated(DOC, r"and ([0-9.]+) at 64: slower on the RDN\)", _ratio(t, "adaptive", 64), STUDY)
    check_stated(DOC, r"stencil ([0-9.]+) at 64,", _ratio(t, "minimal_balance", 64), STUDY)
    check_stated(DOC, r"\(stencil ([0-9.]+) at 128 groups", _ratio(t, "minimal_balance", 128), STUDY)
    check_stated(DOC, r"at 128 groups, ([0-9.]+) at 288;", _ratio(t, "minimal_balance", 288), STUDY)
    check_stated(DOC, r"neighbouring ([0-9.]+) at 288;", _ratio(t, "custom", 288), STUDY)
    check_stated(DOC, r"and ([0-9.]+) against the oblivious routing on the paper's 82,944 nodes",
                 _ratio(t, "minimal_balance", 8), STUDY)


def _hours(ds) -> float:
    return float(ds.wait.mean()) / 3600


def _reduction(ds, base) -> float:
    return 100 * (1 - float(ds.wait.mean()) / float(base.wait.mean()))


def test_the_fig5_table_on_the_paper_machine(schedules):
    """The table of mean waits, wait reductions against round-robin and mean speedup ratios, and the sentences
    that repeat them (the 18.5 % upper end, the 40.9 % with the paper's speedups, the 1.291 mean ratio as 6.8 %
    of run time on 30 % MPI time, the 1.012 mean ratio applied)."""
    rr, grap, own, paper = (schedules[k] for k in ("round-robin", "grap", "own", "paper"))
    row = r"\| `{run}`{what} \| {table} \| "
    rows = {"rr": row.format(run="slurm_round_robin", what=r" \(TDN\)", table="none"),
            "grap": row.format(run="grap", what=", allocation only", table="none"),
            "own": row.format(run="grap", what=r" \(RDN\)", table=r"the machine's own, `speedup-288x288.nc`"),
            "paper": row.format(run="grap", what=r" \(RDN\)", table=r"`paper` \(Fig. 4 typed in\)")}
    check_stated(DOC, rows["rr"] + r"([0-9.]+) h \|", _hours(rr), OWN)
    check_stated(DOC, rows["rr"] + r"[0-9.]+ h \| \| ([0-9.]+) \|", float(rr.speedup.mean()), OWN)
    for key, ds, cmd in (("grap", grap, OWN), ("own", own, OWN), ("paper", paper, PAPER)):
        check_stated(DOC, rows[key] + r"([0-9.]+) h \|", _hours(ds), cmd)
        check_stated(DOC, rows[key] + r"[0-9.]+ h \| (-?[0-9.]+)%", _reduction(ds, rr), cmd)
        check_stated(DOC, rows[key] + r"[0-9.]+ h \| -?[0-9.]+%[^|]* \| ([0-9.]+) \|", float(ds.speedup.mean()), cmd)
    check_stated(DOC, r"The ([0-9.]+)% is the \*upper\* end of GRAP's gain only", _reduction(own, rr), OWN)
    check_stated(DOC, r"that is why our upper-end ([0-9.]+)% is below", _reduction(own, rr), OWN)
    check_stated(DOC, r"our trace and scheduler give ([0-9.]+)%, above", _reduction(paper, rr), PAPER)
    mean = float(paper.speedup.mean())
    check_stated(DOC, r"about what our ([0-9.]+) mean ratio on", mean, PAPER)
    check_stated(DOC, r"gives, ([0-9.]+)% of run time", 100 * 0.3 * (1 - 1 / mean), PAPER)
    check_stated(DOC, r"\(mean ratio applied ([0-9.]+)\)", float(own.speedup.mean()), OWN)

