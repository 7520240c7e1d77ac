"""Runs you can find: names that say when a run started, ``latest``, ``evaluator runs``, study names for
``query`` and ``plot``, and no command writing over an earlier result (issue 24, item 4)."""

from __future__ import annotations

import datetime as dt
import os
import re
import time
import warnings
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from evaluator import cli, config, io
from evaluator.config import RayConfig
from evaluator.query import open_results
from evaluator.runs import list_runs, resolve
from evaluator.sweep import driver, plan_sweep, run_sweep
from tests.helpers import once

NO_RAY = RayConfig(enabled=False)
STUDY = "dragonfly_nne_placement"
# shrunk as in tests/test_sweep_fast.py (the same kernels): 16 x 16 x 8 tasks on a DF(2, 4, 2)
SMALL = ["topology.p=2", "topology.a=4", "topology.h=2", "traffic.alpha=[16,16,8]"]
NAME = re.compile(r"^(\d{8}T\d{6}Z)-([0-9a-f]{12})\.nc$")


def make_plan(out: Path, gammas: list[list[int]]):
    """The study on one decomposition (4x4x2), minimal routing, the given placements."""
    axes = {"traffic.beta": [[4, 4, 2]], "placement.gamma": gammas, "routing": ["minimal"]}
    return plan_sweep(config.compose_sweep([f"sweeps={STUDY}", *SMALL, f"sweep.output_dir={out}"],
                                           user_overrides=list(SMALL), axes=axes))


GAMMAS_A = [[4, 1, 2], [2, 2, 2], [1, 4, 2]]
GAMMAS_B = [[2, 2, 1], [2, 1, 2], [4, 4, 2], [1, 1, 1], [2, 2, 2]]


def _utc_second(t: float) -> dt.datetime:
    return dt.datetime.fromtimestamp(int(t), dt.timezone.utc)


def _name_time(path: Path) -> dt.datetime:
    m = NAME.match(path.name)
    assert m, path.name
    return dt.datetime.strptime(m.group(1), "%Y%m%dT%H%M%SZ").replace(tzinfo=dt.timezone.utc)


@pytest.fixture(scope="module")
@once
def two_runs(tmp_path_factory):
    """Run A (3 points; interrupted after one chunk, resumed a second later), then run B (5 points)."""
    out = tmp_path_factory.mktemp("results")
    plan_a = make_plan(out, GAMMAS_A)
    plan_a.chunk_size = 1
    t0 = time.time()
    assert run_sweep(plan_a, NO_RAY, progress=False, stop_after=1) is None  # as a killed run leaves it
    time.sleep(1.1)
    t_resume = time.time()
    a = run_sweep(plan_a, NO_RAY, progress=False)
    t_b = time.time()
    b = run_sweep(make_plan(out, GAMMAS_B), NO_RAY, progress=False)
    return {"out": out, "a": Path(a), "b": Path(b), "plan_a": plan_a, "t0": t0, "t_resume": t_resume, "t_b": t_b}


def test_name_is_start_time_then_hash_and_resume_keeps_it(two_runs):
    a, plan = two_runs["a"], two_runs["plan_a"]
    assert a.parent == two_runs["out"] / STUDY
    m = NAME.match(a.name)
    assert m and plan.run_id == f"{STUDY}-{m.group(2)}"  # the run id's hash, after the time
    # the time of the FIRST start (before the interruption), not of the resume a second later
    assert _utc_second(two_runs["t0"]) <= _name_time(a) < _utc_second(two_runs["t_resume"])
    assert _utc_second(two_runs["t_b"]) <= _name_time(two_runs["b"])
    assert open_results(a).sizes["placement.gamma"] == len(GAMMAS_A)


def test_latest_points_at_the_newest_run(two_runs):
    link = two_runs["out"] / STUDY / io.LATEST
    assert link.is_symlink() and os.readlink(link) == two_runs["b"].name  # relative: the tree can move
    assert resolve(STUDY, two_runs["out"]) == two_runs["b"]
    assert resolve(f"{STUDY}/latest", two_runs["out"]) == two_runs["b"]
    assert resolve(str(two_runs["a"]), two_runs["out"]) == two_runs["a"]  # a path is taken as given


def test_latest_as_a_text_file_where_there_are_no_symlinks(tmp_path, monkeypatch):
    for name in ("20260101T000000Z-aaaaaaaaaaaa.nc", "20260102T000000Z-bbbbbbbbbbbb.nc"):
        (tmp_path / name).write_bytes(b"x")

    def no_symlinks(*a, **k):
        raise OSError(1, "Operation not permitted")

    monkeypatch.setattr(os, "symlink", no_symlinks)
    link = io.point_latest(tmp_path)
    assert not link.is_symlink() and link.read_text().strip() == "20260102T000000Z-bbbbbbbbbbbb.nc"
    monkeypatch.undo()
    assert resolve(str(tmp_path)) == tmp_path / "20260102T000000Z-bbbbbbbbbbbb.nc"


def test_rerun_of_a_finished_run_computes_and_writes_nothing(two_runs, monkeypatch):
    a = two_runs["a"]
    before = a.stat()
    calls = []
    monkeypatch.setattr(driver, "evaluate_chunk", lambda *args: calls.append(args))
    again = run_sweep(make_plan(two_runs["out"], GAMMAS_A), NO_RAY, progress=False, warn=lambda m: None)
    assert again == a and not calls
    after = a.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert sorted(p.name for p in a.parent.glob("*.nc")) == sorted([a.name, two_runs["b"].name])
    assert os.readlink(a.parent / io.LATEST) == two_runs["b"].name  # still the newest start


def test_runs_lists_newest_first_with_points_and_feasible(two_runs, capsys):
    out = two_runs["out"]
    assert cli.main(["runs", "--results", str(out)]) == 0
    text = capsys.readouterr().out
    lines = [ln for ln in text.splitlines() if STUDY in ln]
    assert len(lines) == 2
    assert two_runs["b"].name in lines[0] and two_runs["a"].name in lines[1]  # newest first
    for line, path, n in ((lines[0], two_runs["b"], len(GAMMAS_B)), (lines[1], two_runs["a"], len(GAMMAS_A))):
        ds = xr.open_dataset(path, engine="h5netcdf")
        feasible = int(np.isfinite(ds.completion_time.values).sum())
        fields = line.split()  # row, study, date, time, points, feasible, axes..., path
        assert fields[1] == STUDY and fields[4:6] == [str(n), str(feasible)], line
        assert f"placement.gamma[{n}]" in line and "routing[1]" in line
        assert _name_time(path).strftime("%Y-%m-%d %H:%M:%S") in line
    runs = list_runs(out, STUDY)
    assert [r.path for r in runs] == [two_runs["b"], two_runs["a"]]
    assert cli.main(["runs", "no_such_study", "--results", str(out)]) == 2
    assert "no_such_study" in capsys.readouterr().err


def test_query_and_plot_take_a_study_name(two_runs, capsys, tmp_path):
    out, b = two_runs["out"], two_runs["b"]
    assert cli.main(["query", str(b), "--best", "completion_time", "-n", "0"]) == 0
    by_path = capsys.readouterr().out
    assert cli.main(["query", STUDY, "--results", str(out), "--best", "completion_time", "--top", "0"]) == 0
    by_name = capsys.readouterr().out
    assert by_name == by_path
    assert cli.main(["query", str(two_runs["a"]), "--best", "completion_time", "-n", "0"]) == 0
    assert capsys.readouterr().out != by_name  # (the two runs differ: the check above can fail)
    png = tmp_path / "p.png"
    assert cli.main(["plot", STUDY, "--results", str(out), "--metric", "completion_time", "--out", str(png)]) == 0
    assert png.stat().st_size > 0 and str(png) in capsys.readouterr().out


def test_a_glob_matching_several_runs_is_refused_with_the_list(two_runs, capsys):
    out = two_runs["out"]
    pattern = str(out / STUDY / "*.nc")
    for argv in (["query", pattern], ["query", str(two_runs["a"]), str(two_runs["b"])], ["plot", pattern]):
        assert cli.main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1, err
        assert two_runs["a"].name in err and two_runs["b"].name in err and "latest" in err and STUDY in err, err
    assert cli.main(["query", "no_such_study", "--results", str(out)]) == 2
    err = capsys.readouterr().err
    assert "no_such_study" in err and STUDY in err  # names the studies there are


def test_zarr_output_without_warnings(two_runs, tmp_path):
    ds = open_results(two_runs["a"])  # string coordinates and object-typed text variables
    path = tmp_path / "20260101T000000Z-aaaaaaaaaaaa.zarr"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        io.write_zarr(ds, path)
        back = open_results(path)
    xr.testing.assert_identical(back, ds)


def test_partitions_never_writes_over_an_earlier_result(tmp_path, capsys):
    args = ["partitions", "--machine", "JUQUEEN", "--size", "512", "1024", "--no-plot", "--out", str(tmp_path)]
    assert cli.main(args) == 0
    (first,) = (tmp_path / "juqueen").glob("*.nc")
    stat = first.stat()
    time.sleep(1.1)
    assert cli.main(args[:1] + ["JUQUEEN"] + args[3:]) == 0  # the positional machine, as before
    files = sorted((tmp_path / "juqueen").glob("*.nc"))
    assert len(files) == 2 and files[0] == first and first.stat().st_mtime_ns == stat.st_mtime_ns
    assert NAME.match(files[1].name) and NAME.match(first.name).group(2) == NAME.match(files[1].name).group(2)
    assert os.readlink(tmp_path / "juqueen" / io.LATEST) == files[1].name
    assert str(files[1]) in capsys.readouterr().out
    assert cli.main(["partitions", "Mira", "--machine", "JUQUEEN", "--out", str(tmp_path)]) == 2
    assert "--machine" in capsys.readouterr().err


def test_rank_order_files_are_not_replaced_without_force(tmp_path, capsys):
    (tmp_path / "MPICH_RANK_ORDER").write_text("mine\n")
    args = ["placement", "topology=torus", "topology.dims=[4,4]", "routing=dor", "traffic=all_to_all",
            "traffic.n_tasks=16", "placement=linear", "--write-rank-order", str(tmp_path)]
    assert cli.main(args) == 2
    err = capsys.readouterr().err
    assert "--force" in err and "MPICH_RANK_ORDER" in err and err.count("\n") == 1
    assert (tmp_path / "MPICH_RANK_ORDER").read_text() == "mine\n" and not (tmp_path / "node_list").exists()
    assert cli.main(args + ["--force"]) == 0
    ranks = (tmp_path / "MPICH_RANK_ORDER").read_text()
    assert ranks != "mine\n" and (tmp_path / "node_list").exists()


def test_ray_token_line_is_not_printed_and_a_users_mode_is_kept(monkeypatch):
    reread = []
    monkeypatch.setattr(driver, "_reread_ray_config", lambda: reread.append(""))  # this process's Ray left alone
    monkeypatch.delenv("RAY_AUTH_MODE", raising=False)
    driver._choose_token_auth()
    # Ray's default for a new local cluster, chosen explicitly (Ray warns only when it chooses), and read again
    assert os.environ["RAY_AUTH_MODE"] == "token" and reread == [""]
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    driver._choose_token_auth()
    assert os.environ["RAY_AUTH_MODE"] == "disabled" and reread == [""]


def test_an_unfinished_sweep_is_listed_with_its_kept_chunks(tmp_path, capsys):
    chunks = tmp_path / "mystudy" / ".mystudy-0123456789ab.chunks"
    chunks.mkdir(parents=True)
    (chunks / "manifest.json").write_text('{"start_time": "2026-01-02T03:04:05+00:00"}')
    for i in range(3):
        (chunks / f"b00000-c00000{i}.pkl").write_bytes(b"x")
    assert cli.main(["runs", "--results", str(tmp_path)]) == 0
    line = [ln for ln in capsys.readouterr().out.splitlines() if "mystudy" in ln][0]
    assert "2026-01-02 03:04:05" in line and "unfinished: 3 chunk(s)" in line and str(chunks) in line
