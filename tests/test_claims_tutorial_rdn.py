"""docs/tutorial_rdn_queue.md: the speedup table and the queue's gain against the three TDN baselines side by side
(issue 34: no headline from one end alone; issue 35 item 6: the deployed routing, UGAL, beside the two ends).
Reruns the tutorial's own commands on its 20-node machine (three studies, about 5, 25 and 10 s here, and the two
schedules) and checks every number the page states."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest
import xarray as xr

from evaluator import cli
from tests.claims import ROOT, check_stated
from tests.helpers import once

DOC = "docs/tutorial_rdn_queue.md"
UPPER = "evaluator study rdn --machine 2,2,2,5 --bounds none --baseline oblivious --speedup-out"
UGAL = "evaluator study rdn --machine 2,2,2,5 --bounds none --baseline ugal --speedup-out"
IDEAL = "evaluator study rdn --machine 2,2,2,5 --speedup-out results/rdn/speedup-5x4-adaptive.nc"
THREE = "--speedups results/rdn/speedup-5x4-adaptive.nc results/rdn/speedup-5x4-ugal.nc results/rdn/speedup-5x4.nc"
STUDIES = {"oblivious": ["--bounds", "none", "--baseline", "oblivious"],
           "ugal": ["--bounds", "none", "--baseline", "ugal"], "adaptive": []}


def _swf(tmp: Path) -> Path:
    text = (ROOT / DOC).read_text()
    body = text.split("cat > ~/traces/centre.swf <<'EOF'\n", 1)[1].split("\nEOF\n", 1)[0]
    path = tmp / "centre.swf"
    path.write_text(body + "\n")
    return path


def _quiet(argv: list[str]) -> str:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert cli.main(argv) == 0
    return buf.getvalue()


@pytest.fixture(scope="module")
@once
def runs(tmp_path_factory):
    """The three speedup tables and the printed output of the two schedules (the upper end alone; all three)."""
    import os

    tmp = tmp_path_factory.mktemp("tutorial_rdn")
    swf = _swf(tmp)
    here = os.getcwd()
    os.chdir(tmp)  # the study writes results/rdn/... under the working directory
    try:
        tables = {}
        for base, extra in STUDIES.items():
            tables[base] = tmp / f"speedup-{base}.nc"
            _quiet(["study", "rdn", "--machine", "2,2,2,5", *extra, "--speedup-out", str(tables[base])])
        sched = ["schedule", "--swf", str(swf), "--groups", "5", "--nodes-per-group", "4", "--enlarge", "1",
                 "--mode-range", "2,20", "--baseline", "slurm_round_robin", "--policy", "grap", "--no-plot",
                 "--speedups"]
        one = _quiet(sched + [str(tables["oblivious"])])
        three = _quiet(sched + [str(tables[b]) for b in ("adaptive", "ugal", "oblivious")])
        return {"tables": {b: xr.open_dataset(p).load() for b, p in tables.items()}, "one": one, "three": three}
    finally:
        os.chdir(here)


def _row(text: str, run: str) -> list[float]:
    line = next(x for x in text.splitlines() if x.startswith(run + " "))
    return [float(v) for v in line.split()[1:6]]  # jobs, mean_wait, p95_wait, mean_utilisation, mean_speedup


def test_the_upper_end_speedup_table(runs):
    t = runs["tables"]["oblivious"]
    rows = {"minimal_balance (stencil)": "minimal_balance", "custom_balance (stencil)": "custom_balance",
            "custom (neighbouring)": "custom", "adaptive (all_to_all)": "adaptive"}
    for label, mode in rows.items():
        for col, q in enumerate((2, 4)):
            cell = t.sel(mode=mode, groups=q)
            for k, var in enumerate(("speedup", "speedup_min", "speedup_max")):
                pat = (re.escape(label) + r" +" + r"".join(r"[0-9.]+x \[[0-9.]+x, [0-9.]+x\] +" for _ in range(col))
                       + [r"([0-9.]+)x \[", r"[0-9.]+x \[([0-9.]+)x,", r"[0-9.]+x \[[0-9.]+x, ([0-9.]+)x\]"][k])
                check_stated(DOC, pat, float(cell[var]), UPPER)
    check_stated(DOC, r"A 4-group stencil job communicates ([0-9.]+)x faster",
                 float(t.speedup.sel(mode="minimal_balance", groups=4)), UPPER)
    five = t.sel(mode="minimal_balance", groups=5)
    check_stated(DOC, r"minimal_balance \(stencil\) +[0-9.x \[\],]+ +[0-9.x \[\],]+ +([0-9.]+)x \[",
                 float(five.speedup), UPPER, count=None)


def test_the_queue_against_three_baselines(runs):
    one, three = runs["one"], runs["three"]
    base = _row(three, "slurm_round_robin")
    assert _row(one, "slurm_round_robin") == base  # the baseline does not depend on the speedup tables
    assert _row(one, "grap+speedup") == _row(three, "grap+speedup(oblivious)")
    red = {b: float(re.search(rf"grap\+speedup\({b}\) vs slurm_round_robin: (-?[0-9.]+)% overall", three).group(1))
           for b in ("adaptive", "ugal", "oblivious")}
    row = {b: _row(three, f"grap+speedup({b})") for b in red}
    for b in ("adaptive", "ugal", "oblivious"):
        for k, col in ((1, "mean_wait"), (2, "p95_wait"), (3, "mean_utilisation"), (4, "mean_speedup")):
            check_stated(DOC, rf"grap\+speedup\({b}\) +12 +" + r" +".join(
                "([0-9.]+)" if i == k else "[0-9.]+" for i in range(1, k + 1)), row[b][k], THREE)
        check_stated(DOC, rf"wait-time reduction of grap\+speedup\({b}\) vs slurm_round_robin: (-?[0-9.]+)%",
                     red[b], THREE)
    for k in (1, 2, 3):
        check_stated(DOC, r"slurm_round_robin +12 +" + r" +".join("([0-9.]+)" if i == k else "[0-9.]+"
                                                               for i in range(1, k + 1)), base[k], THREE, count=2)
    hi = _row(one, "grap+speedup")
    for k in (1, 2, 3, 4):
        check_stated(DOC, r"grap\+speedup +12 +" + r" +".join("([0-9.]+)" if i == k else "[0-9.]+"
                                                           for i in range(1, k + 1)), hi[k], UPPER)
    check_stated(DOC, r"vs slurm_round_robin: ([0-9.]+)% overall; per month [0-9.]+% \(1 months\) ``` That",
                 red["oblivious"], UPPER)
    # the answer's prose
    check_stated(DOC, r"the mean wait goes from ([0-9.]+) h to", base[1], THREE)
    check_stated(DOC, r"goes from [0-9.]+ h to ([0-9.]+) h \(", row["ugal"][1], THREE)
    check_stated(DOC, r"h \((-[0-9.]+)%\), as jobs", red["ugal"], THREE)
    check_stated(DOC, r"communicate ([0-9.]+)x as fast", row["ugal"][4], THREE)
    check_stated(DOC, r"drops to ([0-9.]+) h \([0-9.]+%\), against the fastest", row["adaptive"][1], THREE)
    check_stated(DOC, r"drops to [0-9.]+ h \(([0-9.]+)%\), against the fastest", red["adaptive"], THREE)
    check_stated(DOC, r"oblivious routing to ([0-9.]+) h \(", row["oblivious"][1], THREE)
    check_stated(DOC, r"oblivious routing to [0-9.]+ h \(([0-9.]+)%\)", red["oblivious"], THREE)
    check_stated(DOC, r"with jobs ([0-9.]+)x and", row["adaptive"][4], THREE)
    check_stated(DOC, r"with jobs [0-9.]+x and\s?([0-9.]+)x faster", row["oblivious"][4], THREE)
    check_stated(DOC, r"drops at the upper end \(to ([0-9.]+) h\)", row["oblivious"][2], THREE)
    check_stated(DOC, r"and against the ideal adaptive bound \(([0-9.]+) h\), and rises", row["adaptive"][2], THREE)
    check_stated(DOC, r"rises against UGAL \(to ([0-9.]+) h, from", row["ugal"][2], THREE)
    check_stated(DOC, r"rises against UGAL \(to [0-9.]+ h, from ([0-9.]+) h\)", base[2], THREE)
    assert row["oblivious"][2] < base[2] and row["adaptive"][2] < base[2] < row["ugal"][2]  # drops, drops, rises
    check_stated(DOC, r"in every GRAP run \(([0-9.]+) to", min(row[b][3] for b in row), THREE)
    check_stated(DOC, r"in every GRAP run \([0-9.]+ to ([0-9.]+) against", max(row[b][3] for b in row), THREE)
    check_stated(DOC, r"to [0-9.]+ against ([0-9.]+)\)", base[3], THREE)
    # the backfilled share of each GRAP row, and the per-month reductions (one month of trace)
    share = lambda text, run: float(next(x for x in text.splitlines() if x.startswith(run + " ")).split()[6])  # noqa
    check_stated(DOC, r"grap\+speedup +12 +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +([0-9.]+) \.\.\.",
                 share(one, "grap+speedup"), UPPER)
    month = {b: float(re.search(rf"grap\+speedup\({b}\) vs slurm_round_robin: -?[0-9.]+% overall; per month "
                                r"(-?[0-9.]+)%", three).group(1)) for b in red}
    for b in red:
        check_stated(DOC, rf"grap\+speedup\({b}\) +12 +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +([0-9.]+) \.\.\.",
                     share(three, f"grap+speedup({b})"), THREE)
        check_stated(DOC, rf"grap\+speedup\({b}\) vs slurm_round_robin: -?[0-9.]+% overall; per month (-?[0-9.]+)%",
                     month[b], THREE)
    month_one = float(re.search(r"grap\+speedup vs slurm_round_robin: [0-9.]+% overall; per month ([0-9.]+)%",
                                one).group(1))
    check_stated(DOC, r"grap\+speedup vs slurm_round_robin: [0-9.]+% overall; per month ([0-9.]+)%", month_one, UPPER)
    assert red["ugal"] < red["adaptive"] < red["oblivious"]
    ug = runs["tables"]["ugal"].speedup.sel(mode="minimal_balance", groups=2)
    assert float(ug) < 1  # "below 1 at 2 groups"


def test_workload_doc_states_the_tutorial_reductions(runs):
    """docs/workload.md ('Where the baselines can be computed they differ'): the tutorial's wait reductions
    against the three TDN baselines, from the same schedule, and the p95 wait rising against UGAL alone."""
    three = runs["three"]
    red = {b: float(re.search(rf"grap\+speedup\({b}\) vs slurm_round_robin: (-?[0-9.]+)% overall", three).group(1))
           for b in ("adaptive", "ugal", "oblivious")}
    doc = "docs/workload.md"
    check_stated(doc, r"the reduction is (-?[0-9.]+)% against UGAL-G", red["ugal"], THREE)
    check_stated(doc, r"the queue waits longer\), (-?[0-9.]+)% against the ideal adaptive b", red["adaptive"], THREE)
    check_stated(doc, r"ideal adaptive bound and (-?[0-9.]+)% against the fastest oblivious", red["oblivious"], THREE)
    p95 = {b: _row(three, f"grap+speedup({b})")[2] for b in red}
    base = _row(three, "slurm_round_robin")[2]
    assert p95["ugal"] > base > max(p95["adaptive"], p95["oblivious"])  # "rises against UGAL; drops against both others"
