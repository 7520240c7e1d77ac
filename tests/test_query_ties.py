"""`query`: ties are ties (DESIGN.md; issue 35, item 7). Values equal within 1e-9 relative share a rank and are
printed as a tie (``1=``); a grouped ranking keeps every row tied with the best and says by how much they win
(``ahead_by`` over ``runner_up``); several ``--where`` options all apply.

The dataset is made here with exact ties, near ties (1e-12 relative, a tie) and clear gaps (1e-6 relative and
more, not a tie); the expected ranks and ratios are written out by hand.
"""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

from evaluator import cli
from evaluator.query import best, rank_labels, tied

NETS = ["fat_tree", "dragonfly", "torus"]
LOADS = ["halo", "fft", "perm", "a2a"]
T = np.array([  # completion_time [s]: rows network, columns workload
    [1.0, 2.0, 3.0, 4.0],
    [1.0, 2.0 * (1 + 1e-12), 5.0, 4.0 * (1 + 1e-6)],   # halo exact tie, fft near tie; a2a 1e-6 behind: no tie
    [1.0, 6.0, 3.0, 8.0],                             # halo three-way tie; perm exact tie with fat_tree
])


def _ds() -> xr.Dataset:
    ds = xr.Dataset({"completion_time": (("network", "workload"), T, {"units": "s"}),
                     "feasible": (("network", "workload"), np.ones_like(T, dtype=bool))},
                    coords={"network": NETS, "workload": LOADS})
    return ds


def test_tied_is_relative_1e9():
    assert tied(1.0, 1.0 + 1e-12) and tied(0.0, 0.0) and tied(1e-6, 1e-6 * (1 + 5e-10))
    assert not tied(1.0, 1.0 + 1e-6) and not tied(0.0, 1e-30)


def test_over_keeps_every_tied_winner_and_says_by_how_much():
    table = best(_ds(), "completion_time", over=["network"])
    got = {(r.workload, r.network) for r in table.itertuples()}
    # the old query kept one row per workload (always fat_tree here); ties are kept whole, a 1e-6 gap is not a tie
    assert got == {("halo", n) for n in NETS} | {("fft", "fat_tree"), ("fft", "dragonfly"),
                                                   ("perm", "fat_tree"), ("perm", "torus"), ("a2a", "fat_tree")}
    by = {(r.workload, r.network): r for r in table.itertuples()}
    assert np.isnan(by["halo", "torus"].ahead_by) and not by["halo", "torus"].runner_up  # nobody left to beat
    assert by["fft", "dragonfly"].ahead_by == pytest.approx(3.0) and by["fft", "fat_tree"].runner_up == "network=torus"
    assert by["perm", "torus"].ahead_by == pytest.approx(5.0 / 3.0) and by["perm", "torus"].runner_up == \
        "network=dragonfly"
    assert by["a2a", "fat_tree"].ahead_by == pytest.approx(1 + 1e-6, rel=1e-12)
    assert by["a2a", "fat_tree"].runner_up == "network=dragonfly"
    # ranks: the three halo rows share 1, fft's two share 4, perm's two share 6, a2a alone is 8
    assert list(table.index) == [1, 1, 1, 4, 4, 6, 6, 8]
    assert rank_labels(table.index) == ["1=", "1=", "1=", "4=", "4=", "6=", "6=", "8"]


def test_plain_ranking_shares_ranks_and_gives_the_lead_over_the_next():
    table = best(_ds(), "completion_time", where={"workload": ["fft", "a2a"]})
    assert list(table["completion_time"]) == pytest.approx([2.0, 2.0, 4.0, 4.0 * (1 + 1e-6), 6.0, 8.0], rel=1e-11)
    assert list(table.index) == [1, 1, 3, 4, 5, 6]
    assert list(table["ahead_by"])[:5] == pytest.approx([2.0, 2.0, 1 + 1e-6, 6.0 / (4 * (1 + 1e-6)), 8.0 / 6.0])
    assert np.isnan(table["ahead_by"].iloc[-1])
    from evaluator.display import format_table

    last = format_table(table).splitlines()[-1].split()  # printed as "-", not "nan" (README: query)
    assert last[0] == "6" and "-" in last and "nan" not in last


def test_cli_prints_ties_and_several_where_all_apply(tmp_path, capsys):
    path = tmp_path / "ties.nc"
    _ds().to_netcdf(path, engine="h5netcdf")
    assert cli.main(["query", str(path), "--best", "completion_time", "--over", "network"]) == 0
    out = capsys.readouterr().out
    rows = [line.split() for line in out.splitlines()[2:]]
    assert [r[0] for r in rows] == ["1=", "1=", "1=", "4=", "4=", "6=", "6=", "8"]
    assert "ahead_by [x]" in out and "runner_up" in out
    a2a = next(r for r in rows if r[2] == "a2a")
    assert a2a[1] == "fat_tree" and a2a[4] == "1.000" and a2a[5] == "network=dragonfly"  # named, with its lead
    # --where A --where B: both hold (the rows of dragonfly on fft only)
    assert cli.main(["query", str(path), "--where", "network=dragonfly", "--where", "workload=fft", "--si"]) == 0
    out = capsys.readouterr().out
    rows = [line.split() for line in out.splitlines()[2:]]
    assert len(rows) == 1 and rows[0][1:3] == ["dragonfly", "fft"]
