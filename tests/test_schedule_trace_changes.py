"""``evaluator schedule --swf`` says which jobs of the trace it does not simulate as written.

The reader drops jobs whose run time or size is unknown (-1) or zero, and the workload model clamps an
enlarged size to the machine (``--enlarge``, Feng et al.'s factor 2). Both used to pass in silence: a
three-job trace printed ``jobs 2``, and the only trace of the dropped job was ``attrs["dropped"]``.
"""

from __future__ import annotations

from pathlib import Path

import xarray as xr

from evaluator import cli

SWF = """; a three-job trace: one simulated as written, one dropped (run time -1), one clamped
1 0 10 100 64 -1 -1 64 200 -1 1 1 1 -1 1 -1 -1 -1
2 5 10 50 99999 -1 -1 99999 60 -1 1 1 1 -1 1 -1 -1 -1
3 6 10 -1 32 -1 -1 32 60 -1 1 1 1 -1 1 -1 -1 -1
"""


def test_dropped_and_clamped_jobs_are_named(tmp_path, capsys):
    f = tmp_path / "t.swf"
    f.write_text(SWF)
    out_dir = tmp_path / "out"
    assert cli.main(["schedule", "--swf", str(f), "--no-progress", "--no-plot", "--out", str(out_dir)]) == 0
    out = capsys.readouterr().out
    line = next(ln for ln in out.splitlines() if ln.startswith("trace "))
    assert "2 jobs simulated; 1 dropped (an unknown (-1) or zero run time or size" in line, line
    assert "1 larger than the machine's 82,944 nodes once enlarged x2, clamped to it" in line, line
    ds = xr.open_dataset(next(Path(out_dir).glob("*.nc")))
    assert list(ds["job"].values) == [1, 2]  # job 3 (run time -1) is the one dropped
    assert int(ds.attrs["dropped"]) == 1 and int(ds.attrs["clamped"]) == 1
    assert ds["nodes"].values.tolist() == [[128, 82944]]  # 64 x 2; 99,999 x 2 clamped to the machine


def test_a_trace_simulated_as_written_says_nothing_more(tmp_path, capsys):
    assert cli.main(["schedule", "--synthetic", "40", "--no-progress", "--no-plot", "--out", str(tmp_path)]) == 0
    assert "trace " not in capsys.readouterr().out
