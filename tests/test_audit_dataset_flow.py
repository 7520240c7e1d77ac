"""Defects an audit of how datasets flow from command to command (sweep/eval/study -> dataset on disk ->
query/plot) found (2026-12-06), one test each: a zero time or an infinite throughput ranked oddly (an infinite
throughput was dropped, and tied with every value); a lost zarr chunk read as "no feasible point"; an unfinished
sweep's directory called "not a zarr store"; a directory here shadowed the study of the same name; the buyer
study's ``time`` was not rankable; ``--where`` picking one draw of ``--draws`` was summarised as if several; a
table cut by ``-n`` said nothing of the rows left out; a plot of draws alone said ``--x = None``; a glob of
``latest`` links "matched nothing"."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
import xarray as xr

from evaluator import cli, io
from evaluator.errors import ConfigError, StorageError
from evaluator.plot import plot_sweep
from evaluator.query import best, open_results, tied
from evaluator.runs import resolve


def _sweep(n: int = 4, seeds: int | None = None) -> xr.Dataset:
    """A small sweep-like dataset: ``traffic.n_tasks`` (and ``placement.seed``) axes, every point feasible."""
    labels = [str(2 ** i) for i in range(n)]
    if seeds is None:
        dims, shape, coords = ("traffic.n_tasks",), (n,), {"traffic.n_tasks": labels}
    else:
        dims, shape = ("traffic.n_tasks", "placement.seed"), (n, seeds)
        coords = {"traffic.n_tasks": labels, "placement.seed": [str(s) for s in range(seeds)]}
    t = np.arange(1, np.prod(shape) + 1, dtype=float).reshape(shape) * 1e-3
    ok = np.ones(shape, bool)
    return xr.Dataset({"completion_time": (dims, t, {"units": "s"}), "throughput": (dims, 1.0 / t, {"units": "bytes/s"}),
                       "feasible": (dims, ok), "reason": (dims, np.full(shape, "", dtype=object).astype(str))},
                      coords=coords, attrs={"n_feasible": int(ok.sum()), "n_points": int(ok.size)})


def test_1_zero_time_is_the_best_infinite_throughput_too_nan_and_inf_times_unranked():
    ds = _sweep(5)
    ds["completion_time"][:] = [2e-3, 0.0, np.nan, np.inf, 1e-3]   # 0: a job without traffic; inf, NaN: no value
    ds["throughput"][:] = [5.0, np.inf, np.nan, 0.0, 10.0]
    by_time = best(ds, "completion_time")
    assert by_time["traffic.n_tasks"].tolist() == ["2", "16", "1"]  # 0 first, consistently ranked
    assert list(by_time.index) == [1, 2, 3]
    assert by_time["ahead_by"].iloc[0] == np.inf and by_time["ahead_by"].iloc[1] == pytest.approx(2.0)
    assert by_time.attrs["unranked"][0] == 2 and "traffic.n_tasks=4" in by_time.attrs["unranked"][1][0]
    by_thr = best(ds, "throughput")
    assert by_thr["traffic.n_tasks"].tolist() == ["2", "16", "1", "8"]  # inf the best (it was left out)
    assert list(by_thr.index) == [1, 2, 3, 4]  # inf is tied with itself only (it was tied with every value)
    assert by_thr["ahead_by"].iloc[0] == np.inf
    assert by_thr.attrs["unranked"][0] == 1
    assert not tied(float("inf"), 5.0) and tied(float("inf"), float("inf"))


def test_2_a_damaged_zarr_chunk_is_an_error_naming_the_file(tmp_path):
    path = io.write_zarr(_sweep(), tmp_path / "run.zarr")
    assert open_results(path)["feasible"].all()
    chunk = next(p for p in (path / "completion_time").iterdir() if not p.name.startswith("."))
    chunk.unlink()  # zarr reads a lost chunk as its fill value (NaN): "no feasible point" before
    with pytest.raises(StorageError) as e:
        open_results(path)
    assert str(chunk) in str(e.value) and "missing" in str(e.value) and "rerun" in str(e.value)
    # a store of an older writer (no list of its files): a lost chunk of feasible is found by n_feasible
    old = io.write_zarr(_sweep(), tmp_path / "old.zarr")
    (old / io.ZARR_FILES).unlink()
    for p in (old / "feasible").iterdir():
        if not p.name.startswith("."):
            p.unlink()
    with pytest.raises(StorageError, match=r"feasible.*reads 0 feasible points where the run recorded 4"):
        open_results(old)


def test_3_an_unfinished_sweep_says_so_and_how_to_resume(tmp_path):
    study = tmp_path / "results" / "mysweep"
    chunks = study / ".mysweep-0123456789ab.chunks"
    chunks.mkdir(parents=True)
    (chunks / "manifest.json").write_text(json.dumps({"run_id": "mysweep-0123456789ab", "start_time": ""}))
    (chunks / "c0.pkl").write_bytes(b"x")
    for given in (study, chunks):
        with pytest.raises(ConfigError) as e:
            open_results(given)
        msg = str(e.value)
        assert "unfinished" in msg and "mysweep-0123456789ab" in msg and "1 chunk file" in msg, msg
        assert "Rerun the same `evaluator sweep` command" in msg and "not a zarr store" not in msg
    with pytest.raises(ConfigError, match="unfinished"):
        open_results("mysweep", results_dir=tmp_path / "results")


def test_4_a_directory_here_named_as_a_study_is_refused_naming_both(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    io.write_netcdf(_sweep(), tmp_path / "results" / "rdn" / "20261206T000000Z-abc.nc")
    (tmp_path / "rdn").mkdir()  # the user's own directory (a checkout of something called rdn)
    (tmp_path / "rdn" / "notes.txt").write_text("mine")
    with pytest.raises(ConfigError) as e:
        resolve("rdn")
    assert "./rdn" in str(e.value) and os.path.join("results", "rdn") in str(e.value)
    assert resolve(os.path.join("results", "rdn")).name == "20261206T000000Z-abc.nc"  # explicit: no question
    assert resolve("./rdn") == tmp_path / "rdn" or resolve("./rdn").resolve() == (tmp_path / "rdn").resolve()
    (tmp_path / "rdn" / "notes.txt").unlink()
    (tmp_path / "rdn").rmdir()
    assert resolve("rdn").name == "20261206T000000Z-abc.nc"  # the study, when nothing here has its name


def test_5_the_buyer_studys_time_is_ranked_smaller_first():
    t = np.array([[3e-3, 5e-3], [1e-3, 2e-3]])  # network x seed
    ds = xr.Dataset({"time": (("network", "seed"), t, {"units": "s"}),
                     "throughput": (("network", "seed"), 1 / t, {"units": "bytes/s"})},
                    coords={"network": ["fat_tree", "torus"], "seed": [0, 1]})
    ds["time_mean"] = ds["time"].mean("seed")
    table = best(ds, "time")
    assert table["time"].tolist() == sorted(t.ravel().tolist())
    assert best(ds, "time_mean")["network"].tolist() == ["torus", "fat_tree"]
    assert best(ds, "time", draws=["seed"])["network"].tolist() == ["torus", "fat_tree"]


def test_6_where_keeping_one_draw_of_the_summarised_axis_is_refused(capsys):
    ds = _sweep(3, seeds=4)
    with pytest.raises(ConfigError) as e:
        best(ds, draws=["placement.seed"], where={"placement.seed": "0"})
    assert e.value.field == "where" and "without --draws placement.seed" in str(e.value)
    two = best(ds, draws=["placement.seed"], where={"placement.seed": ["0", "1"]})
    assert two.attrs["draws"]["placement.seed"] == (2, 4, ["0", "1"])
    assert two["completion_time_mean"].tolist() == pytest.approx([1.5e-3, 5.5e-3, 9.5e-3])


def test_7_a_table_cut_by_n_says_how_many_rows_are_not_shown(tmp_path, capsys):
    path = io.write_netcdf(_sweep(6), tmp_path / "run.nc")
    assert cli.main(["query", str(path), "-n", "2"]) == 0
    out = capsys.readouterr().out
    assert f"shown: the first 2 of 6 rows; every row: evaluator query {path} -n 0" in out
    assert cli.main(["query", str(path), "-n", "0"]) == 0
    assert "shown:" not in capsys.readouterr().out


def test_8_a_plot_of_draws_alone_says_what_to_put_on_x(tmp_path):
    ds = _sweep(1, seeds=4).isel({"traffic.n_tasks": 0}, drop=True)
    with pytest.raises(ConfigError) as e:
        plot_sweep(ds, tmp_path / "x.png")
    msg = str(e.value)
    assert "= None" not in msg and "--x is not given" in msg and "--x placement.seed" in msg, msg
    plot_sweep(ds, tmp_path / "x.png", x="placement.seed")


def test_9_a_glob_of_latest_links_resolves_to_the_one_it_matches(tmp_path):
    results = tmp_path / "results"
    for study in ("alpha", "beta"):
        io.write_netcdf(_sweep(), results / study / "20261206T000000Z-abc.nc")
        io.point_latest(results / study)
    one = resolve(str(results / "al*" / "latest"), results)
    assert one == results / "alpha" / "20261206T000000Z-abc.nc"
    assert resolve("al*/latest", results) == one  # under the results directory too
    with pytest.raises(ConfigError, match=r"It matches 2 datasets"):
        resolve(str(results / "*" / "latest"), results)
    assert resolve(str(results / "alpha" / "*"), results) == one  # latest beside a dataset is still left out
