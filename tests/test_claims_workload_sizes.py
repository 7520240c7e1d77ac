"""Numbers docs/workload.md states about what `evaluator schedule` refuses before any work (its size estimates)
and the Fig. 4 speedups it types in, rerun through the command (tests/claims.py): each number is read from the
page and compared with what the command prints now. Cheap: no simulation runs."""

from __future__ import annotations

import contextlib
import io
import re

from evaluator import cli
from tests.claims import check_stated, stated

DOC = "docs/workload.md"


def _refusal(argv: list[str]) -> str:
    """What ``evaluator schedule ARGV`` prints when it refuses (exit status 2)."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            rc = cli.main(argv)
        except SystemExit as exc:  # argparse-style exits
            rc = exc.code
    assert rc == 2, f"evaluator {' '.join(argv)}: exit status {rc}, expected a refusal (2)"
    return err.getvalue()


def test_per_node_state_of_the_policies():
    """'the policies' per-node state (about 48 B a node)', refused for the machine the page names."""
    argv = "--groups 100000000 --nodes-per-group 100000000"
    msg = _refusal(["schedule", "--synthetic", "10", *argv.split(), "--policy", "unrestricted"])
    got = re.search(r"about ([0-9.]+) B a node", msg)
    assert got, msg
    check_stated(DOC, r"per-node state \(about ([0-9.]+) B a node\)", float(got.group(1)), command=argv)


def test_utilisation_samples_of_an_absurd_run_time(tmp_path):
    """'a run time of 10^12 s would need 1.7 x 10^10 samples; the message names the job that ends last': one job
    of that run time (read from the page) in an SWF trace, refused by `evaluator schedule`."""
    exponent = int(stated(DOC, r"a run time of 10\^([0-9]+) s would need")[0])
    swf = tmp_path / "absurd.swf"
    fields = [7, 0, -1, 10 ** exponent, 1, -1, -1, 1, 10 ** exponent] + [-1] * 9
    swf.write_text(" ".join(str(f) for f in fields) + "\n")
    msg = _refusal(["schedule", "--swf", str(swf), "--groups", "2", "--nodes-per-group", "2",
                    "--policy", "unrestricted", "--no-plot", "--out", str(tmp_path / "out")])
    got = re.search(r"\(([0-9.e+]+) per run", msg)
    assert got and "Job 7 " in msg, msg
    check_stated(DOC, r"would need ([0-9.]+) x 10\^10 samples", float(got.group(1)) / 1e10,
                 command="evaluator schedule")


def test_paper_fig4_speedups_typed_in():
    """The page's `PAPER_FIG4_SPEEDUPS` (Feng et al. Sec. 5.2, cited) are the table `--policies paper` applies."""
    from evaluator.workload.model import PAPER_FIG4_SPEEDUPS as P

    head = r"\(`PAPER_FIG4_SPEEDUPS`: "
    cmd = "python -m tests.workload_speed 288 288 50000 --policies paper --allow-foreign-speedups"
    check_stated(DOC, head + r"([0-9.]+) for the (?:<!-- cited --> )?balance modes", P["minimal_balance"][2], cmd)
    assert P["custom_balance"] == P["minimal_balance"] == {2: P["minimal_balance"][2], 288: P["minimal_balance"][2]}
    check_stated(DOC, head + r"[^)]*?balance modes, ([0-9.]+) custom,", P["custom"][288], cmd)
    check_stated(DOC, head + r"[^)]*? custom, ([0-9.]+) -> [0-9.]+ adaptive from 2 to 288 groups",
                 P["adaptive"][2], cmd)
    check_stated(DOC, head + r"[^)]*? custom, [0-9.]+ -> ([0-9.]+) adaptive from 2 to 288 groups",
                 P["adaptive"][288], cmd)
