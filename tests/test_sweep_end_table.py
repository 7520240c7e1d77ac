"""The table ``evaluator sweep`` prints at its end: the best rows, and the best row of every value of each
categorical axis, so that no routing (placement, decomposition) of a sweep is hidden below the fifth row."""

from __future__ import annotations

import re

import numpy as np
import xarray as xr



def _sweep(times, routings, seeds):
    """A sweep dataset of ``completion_time[routing, placement.seed]`` (labels stored as text, as a sweep does)."""
    return xr.Dataset({"completion_time": (("routing", "placement.seed"), np.asarray(times, float),
                                           {"units": "s"})},
                      coords={"routing": np.asarray(routings, str), "placement.seed": np.asarray(seeds, str)})


def test_every_routing_has_its_best_row():
    from evaluator.cli.sweep import end_table

    # 4 routings x 2 seeds: the top 5 rows hold only three routings; the fourth's best row is rank 7
    t = [[3.0, 3.0], [4.0, 4.5], [2.5, 3.0], [2.875, 3.5]]
    ds = _sweep(t, ["dor", "kshortest_k1", "kshortest_k4", "kshortest_k16"], ["0", "1"])
    table, note = end_table(ds, "completion_time")
    # rank: the place in the whole ranking; three rows tie at 3.0 (ties are ties: they share rank 3)
    assert list(table.index) == [1, 2, 3, 3, 3, 7]
    assert set(table["routing"]) == {"dor", "kshortest_k1", "kshortest_k4", "kshortest_k16"}
    assert table.loc[7, "routing"] == "kshortest_k1" and table.loc[7, "completion_time"] == 4.0
    assert "best of each value of routing (1 more)" in note
    assert table.attrs["units"]["completion_time"] == "s"
    # numeric axes (seeds) are not expanded; a sweep whose top rows cover every value adds nothing
    table, note = end_table(_sweep([[1.0, 2.0], [3.0, 4.0]], ["dor", "ecmp"], ["0", "1"]), "completion_time")
    assert list(table.index) == [1, 2, 3, 4] and note == ""


def test_values_without_a_feasible_row_are_named():
    from evaluator.cli.sweep import end_table

    t = [[1.0, 2.0], [np.nan, np.nan], [3.0, 3.5], [4.0, 4.5]]
    table, note = end_table(_sweep(t, ["a", "b", "c", "d"], ["0", "1"]), "completion_time", top=2)
    assert list(table["routing"]) == ["a", "a", "c", "d"]
    assert "no feasible row for routing=b" in note


def test_sweep_command_shows_every_routing(tmp_path, capsys):
    # the 8-point sweep of the report: kshortest_k1 is never in the top 5 and was not shown
    from evaluator import cli

    rc = cli.main(["sweep", "topology=torus", "topology.dims=[4,4]", "traffic=random_permutation",
                   "placement=random", "traffic.n_tasks=16", "routing=dor,kshortest_k1,kshortest_k4,kshortest_k16",
                   "placement.seed=range(0,2)", "sweep.name=end_table", f"sweep.output_dir={tmp_path}",
                   "ray.enabled=false", "--no-progress"])
    out = capsys.readouterr().out
    assert rc == 0
    rows = [line.split() for line in out.splitlines() if re.match(r"\d+=? +(dor|kshortest_k\d+) +[01] ", line)]
    assert {r[1] for r in rows} == {"dor", "kshortest_k1", "kshortest_k4", "kshortest_k16"}, out
    # four rows tie at 750 us (rank 3=): all are shown, with kshortest_k1's best row (rank 7)
    assert [r[0] for r in rows] == ["1", "2", "3=", "3=", "3=", "3=", "7"]
    assert "shown: the best 5 of 8 rows (1 more tied with the last) and the best of each value of routing (1 more)" \
        in out


def test_a_tied_rank_shown_once_is_still_marked_tied():
    """A row whose rank it shares with rows the table leaves out (the best of an axis value below the top rows, or a
    ranking cut by n) is marked ``=``: before, only ranks repeated in the shown rows were."""
    from evaluator.cli.sweep import end_table
    from evaluator.display import format_table
    from evaluator.query import best

    # kshortest_k1's best row (4.0) ties with kshortest_k16's 4.0 at rank 6; only kshortest_k1's is shown
    t = [[1.0, 1.5], [4.0, 4.5], [2.0, 2.5], [3.0, 4.0]]
    table, _ = end_table(_sweep(t, ["dor", "kshortest_k1", "kshortest_k4", "kshortest_k16"], ["0", "1"]),
                         "completion_time", top=2)
    shown = [line.split()[0] for line in format_table(table).splitlines()[2:]]
    assert list(table.index) == [1, 2, 3, 5, 6] and shown == ["1", "2", "3", "5", "6="], shown
    cut = best(_sweep(t, ["a", "b", "c", "d"], ["0", "1"]), "completion_time", n=6)
    assert [line.split()[0] for line in format_table(cut).splitlines()[2:]] == ["1", "2", "3", "4", "5", "6="]
