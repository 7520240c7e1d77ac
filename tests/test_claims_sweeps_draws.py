"""docs/sweeps.md's random draws: the default study's rows are one draw of its random Cartesian placement (the line
it prints), and over 8 draws its best gamma for the 16x8x8 stencil under Valiant has the mean, smallest and
largest time the page states, rerun here in full (672 points, a few seconds) and checked against NumPy over the
dataset's own values."""

from __future__ import annotations

import contextlib
import io

import numpy as np

from evaluator import cli
from evaluator.query import best, open_results
from tests.claims import check_stated, stated

DOC = "docs/sweeps.md"
SWEEP = "evaluator sweep sweeps=dragonfly_nne_placement placement.seed='range(0,8)'"


def test_the_default_study_says_its_rows_are_one_draw_and_the_draws_spread(tmp_path):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli.main(["sweep", "sweeps=dragonfly_nne_placement", f"sweep.output_dir={tmp_path / 'one'}",
                         "ray.enabled=false", "--no-progress"]) == 0
    (line,) = stated(DOC, r"(placement dragonfly_cartesian \(seed 0\) is one random draw, so every row above is "
                          r"that draw's, not what the point gives on average: add the axis "
                          r"placement.seed='range\(0,16\)' and rank with evaluator query RUN --draws placement.seed)",
                     record=False)
    assert line in out.getvalue()
    with contextlib.redirect_stdout(io.StringIO()):
        assert cli.main(["sweep", "sweeps=dragonfly_nne_placement", "placement.seed=range(0,8)",
                         f"sweep.output_dir={tmp_path / 'draws'}", "ray.enabled=false", "--no-progress"]) == 0
    (path,) = sorted((tmp_path / "draws").rglob("*.nc"))
    ds = open_results(path)
    table = best(ds, "completion_time", draws=["placement.seed"],
                 where={"traffic.beta": ["16x8x8"], "routing": ["valiant"]}, n=1)
    row = table.iloc[0]
    assert row["placement.gamma"] == "4x4x2"
    t = ds["completion_time"].where(ds["feasible"]).sel(
        {"traffic.beta": "16x8x8", "routing": "valiant", "placement.gamma": "4x4x2"}).values
    assert t.shape == (8,) and np.isfinite(t).all()
    assert row["completion_time_mean"] == np.mean(t)
    for pattern, value in ((r"\(4x4x2\) takes ([0-9.]+) ms on average", t.mean()),
                           (r"([0-9.]+) ms in the luckiest", t.min()), (r"([0-9.]+) ms in the unluckiest", t.max())):
        check_stated(DOC, pattern, 1e3 * float(value), SWEEP)
