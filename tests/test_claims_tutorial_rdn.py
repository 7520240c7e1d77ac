"""docs/tutorial_rdn_queue.md: the queue's gain from both ends of the speedup table (issue 34: no headline from the
upper end alone). Reruns the tutorial's own commands on its 20-node machine (the two studies: about 5 s and
25 s here) and checks the stated mean waits, p95 waits, mean speedups and wait reductions of both ends."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from evaluator import cli
from tests.claims import ROOT, check_stated
from tests.helpers import once

DOC = "docs/tutorial_rdn_queue.md"
UPPER = "evaluator study rdn --machine 2,2,2,5 --bounds none --baseline oblivious --speedup-out"
CONSERVATIVE = "evaluator study rdn --machine 2,2,2,5 --speedup-out results/rdn/speedup-5x4-adaptive.nc"


def _swf(tmp: Path) -> Path:
    text = (ROOT / DOC).read_text()
    body = text.split("cat > ~/traces/centre.swf <<'EOF'\n", 1)[1].split("\nEOF\n", 1)[0]
    path = tmp / "centre.swf"
    path.write_text(body + "\n")
    return path


@pytest.fixture(scope="module")
@once
def ends(tmp_path_factory):
    """``{end: printed schedule output}`` for the tutorial's two speedup tables."""
    import contextlib
    import io
    import os

    tmp = tmp_path_factory.mktemp("tutorial_rdn")
    swf = _swf(tmp)
    here = os.getcwd()
    os.chdir(tmp)  # the study writes results/rdn/... under the working directory
    try:
        out = {}
        for end, extra in (("upper", ["--bounds", "none", "--baseline", "oblivious"]), ("conservative", [])):
            table = tmp / f"speedup-{end}.nc"
            with contextlib.redirect_stdout(io.StringIO()):
                assert cli.main(["study", "rdn", "--machine", "2,2,2,5", *extra, "--speedup-out", str(table)]) == 0
            buf = io.StringIO()
            with contextlib.redirect_stdout(buf):
                assert cli.main(["schedule", "--swf", str(swf), "--groups", "5", "--nodes-per-group", "4",
                                 "--enlarge", "1", "--mode-range", "2,20", "--baseline", "slurm_round_robin",
                                 "--policy", "grap", "--speedups", str(table)]) == 0
            out[end] = buf.getvalue()
        return out
    finally:
        os.chdir(here)


def _row(text: str, run: str) -> list[float]:
    line = next(x for x in text.splitlines() if x.startswith(run + " "))
    return [float(v) for v in line.split()[1:6]]  # jobs, mean_wait, p95_wait, mean_utilisation, mean_speedup


def test_both_ends_of_the_queue_gain(ends):
    up, cons = ends["upper"], ends["conservative"]
    base = _row(up, "slurm_round_robin")
    assert _row(cons, "slurm_round_robin") == base  # the baseline does not depend on the speedup table
    hi, lo = _row(up, "grap+speedup"), _row(cons, "grap+speedup")
    red = {e: float(re.search(r"vs slurm_round_robin: ([0-9.]+)% overall", t).group(1)) for e, t in ends.items()}
    check_stated(DOC, r"cuts the mean wait by \*\*([0-9.]+)% to [0-9.]+%\*\*", red["conservative"], CONSERVATIVE)
    check_stated(DOC, r"cuts the mean wait by \*\*[0-9.]+% to ([0-9.]+)%\*\*", red["upper"], UPPER)
    check_stated(DOC, r"from ([0-9.]+) h to [0-9.]+ h against the ideal", base[1], UPPER)
    check_stated(DOC, r"to ([0-9.]+) h against the ideal adaptive routing", lo[1], CONSERVATIVE)
    check_stated(DOC, r"adaptive routing, to ([0-9.]+) h against the fastest", hi[1], UPPER)
    check_stated(DOC, r"communicating ([0-9.]+)x to [0-9.]+x faster", lo[4], CONSERVATIVE)
    check_stated(DOC, r"communicating [0-9.]+x to ([0-9.]+)x faster", hi[4], UPPER)
    check_stated(DOC, r"drops from ([0-9.]+) h to [0-9.]+ h at the upper end", base[2], UPPER)
    check_stated(DOC, r"drops from [0-9.]+ h to ([0-9.]+) h at the upper end", hi[2], UPPER)
    check_stated(DOC, r"rises to ([0-9.]+) h at the conservative end", lo[2], CONSERVATIVE)
    check_stated(DOC, r"Utilisation is lower \(([0-9.]+) and", lo[3], CONSERVATIVE)
    check_stated(DOC, r"Utilisation is lower \([0-9.]+ and ([0-9.]+)", hi[3], UPPER)
    check_stated(DOC, r"\(([0-9.]+) and [0-9.]+ against", lo[3], CONSERVATIVE)
    assert lo[2] > base[2] > hi[2]  # the p95 wait rises at the conservative end, drops at the upper end
