"""Defects an audit of how commands write their results directories found (2026-12-06), each test failing on the
code before it: ``evaluator schedule --study`` run twice wrote two identical datasets and left its points
directory behind (and, the study's id not seeing its input files, reused points computed with an edited speedup
table); ``--speedups`` given a study's dataset listed its variables instead of saying what the file is and which
file is the table; ``evaluator eval`` saved into a sweep's or study's directory took over its ``latest`` link (the
next ``evaluator query STUDY`` read the one point), and said nothing where ``latest`` was a file of the user's
own."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
import yaml

from evaluator import cli, io
from evaluator.runs import resolve
from evaluator.workload import MODES, speedup_table

SMOKE = yaml.safe_load((Path(__file__).parent.parent / "sweeps" / "workload" / "smoke.yaml").read_text())
T = ["topology=torus", "topology.dims=[4,4]", "placement=linear", "ray.enabled=false", "--no-progress"]
EVAL = ["eval", "topology=torus", "topology.dims=[4,4]", "placement=linear", "routing=dor", "traffic=all_to_all",
        "traffic.n_tasks=8"]


def _study_file(tmp_path: Path, **keys) -> Path:
    """A one-machine, one-mix study of a 200-job trace (about a second)."""
    study = dict(SMOKE, name="tiny", trace={"synthetic": 200, "load": 0.9}, machines={"16x64": [16, 64]},
                 mode_mixes={"paper": SMOKE["mode_mixes"]["paper"]}, **keys)
    f = tmp_path / "tiny.yaml"
    f.write_text(yaml.safe_dump(study, sort_keys=False))
    return f


def _schedule_study(f: Path, out: Path) -> int:
    return cli.main(["schedule", "--study", str(f), "--no-ray", "--no-progress", "--no-plot", "--out", str(out)])


def test_1_a_study_run_again_returns_its_dataset_and_leaves_no_points(tmp_path, capsys):
    """Before: the second run wrote a second, identical dataset, and ``.<study-id>.points/`` stayed."""
    f, out = _study_file(tmp_path), tmp_path / "out"
    assert _schedule_study(f, out) == 0
    first = capsys.readouterr()
    (path,) = out.glob("*.nc")
    assert first.out.splitlines()[-1] == str(path) and "already finished" not in first.err
    assert not list(out.glob(".*.points"))  # every point is in the dataset: nothing to resume
    assert _schedule_study(f, out) == 0
    again = capsys.readouterr()
    assert sorted(out.glob("*.nc")) == [path] and not list(out.glob(".*.points"))
    assert again.out.splitlines()[-1] == str(path)
    assert f"has already finished; nothing to compute: {path}" in again.err
    assert (out / "latest").resolve() == path.resolve()


def test_1_a_study_whose_speedup_table_changed_is_computed_again(tmp_path, capsys):
    """The study's id hashed the path of its speedup table, not the table: a rerun after the table was recomputed
    reused the points computed with the old one (and, with the finished study recognised, would return them)."""
    table = tmp_path / "speedup.nc"
    f, out = _study_file(tmp_path, runs={"rdn": {"policy": "unrestricted", "speedups": str(table)}}), tmp_path / "o"
    paths = []
    for ratio in (1.5, 1.0):
        table.unlink(missing_ok=True)
        io.write_netcdf(speedup_table({m: {2: ratio, 8: ratio} for m in MODES}, machine=(16, 64)), table)
        assert _schedule_study(f, out) == 0
        said = capsys.readouterr()
        assert "already finished" not in said.err
        paths.append(Path(said.out.splitlines()[-1]))
    speedups = []
    for p in paths:
        with xr.open_dataset(p) as ds:
            speedups.append(float(ds["mean_speedup"].max()))
    assert paths[0] != paths[1] and speedups[0] > 1.0 and speedups[1] == 1.0, speedups


def _rdn_like(path: Path, n_vars: int = 60) -> Path:
    """A dataset shaped as ``evaluator study rdn`` writes it (dims pattern x groups, ``rdn_routing``), many
    variables."""
    data = {f"var_{i}": (("pattern", "groups"), np.ones((2, 3))) for i in range(n_vars)}
    ds = xr.Dataset(data, coords={"pattern": ["stencil", "all_to_all"], "groups": [2, 4, 8]},
                    attrs={"rdn_routing": "minimal", "machine": "DF(2,4,2,8)"})
    return io.write_netcdf(ds, path)


def _schedule_with(table: Path, out: Path) -> int:
    return cli.main(["schedule", "--synthetic", "50", "--machine", "2,4,2,8", "--speedups", str(table), "--no-plot",
                     "--no-progress", "--out", str(out)])


def test_2_speedups_given_a_study_dataset_say_what_it_is_and_which_file_is_the_table(tmp_path, capsys):
    """Before: ``speedup table PATH = ['var_0', 'var_1', ...] is invalid`` (the study's ~180 variables)."""
    study = _rdn_like(tmp_path / "rdn" / "rdn-2-4-2-8-20261206T000000Z.nc")
    assert _schedule_with(study, tmp_path / "o") == 2
    err = capsys.readouterr().err
    assert f"--speedups = '{study}' is invalid" in err and "var_1" not in err, err
    assert "is the dataset of evaluator study rdn (machine DF(2,4,2,8)" in err and "not its speedup table" in err
    assert "evaluator study rdn --machine 2,4,2,8 --speedup-out FILE.nc" in err, err
    beside = io.write_netcdf(speedup_table({m: {2: 1.2} for m in MODES}, machine=(8, 8)), tmp_path / "rdn" / "s.nc")
    os.symlink(study.name, tmp_path / "rdn" / "latest")
    assert _schedule_with(tmp_path / "rdn" / "latest", tmp_path / "o") == 2
    err = capsys.readouterr().err
    assert f"(-> {study.name}) is the dataset of evaluator study rdn" in err
    assert f"The speedup table beside it: {beside} (machine" in err, err
    assert not (tmp_path / "o").exists()  # refused before anything was computed or written


def test_2_speedups_given_a_schedule_study_dataset_names_the_command_of_the_table(tmp_path, capsys):
    ds = xr.Dataset({f"v{i}": (("machine", "mix", "run"), np.ones((1, 1, 1))) for i in range(12)},
                    attrs={"study": "tiny", "study_id": "tiny-0123456789ab"})
    path = io.write_netcdf(ds, tmp_path / "study.nc")
    assert _schedule_with(path, tmp_path / "o") == 2
    err = capsys.readouterr().err
    assert "is the dataset of evaluator schedule --study (workload study tiny), not a speedup table" in err, err
    assert "evaluator study rdn --machine P,A,H,G --speedup-out FILE.nc" in err and "'v1'" not in err


@pytest.fixture
def no_compute(monkeypatch):
    """evaluator eval's evaluation, made to fail: a refusal must come before it."""
    import evaluator.cli.evaluate as E

    monkeypatch.setattr(E, "evaluate", lambda *a, **k: pytest.fail("evaluated before the refusal"))


def test_3_eval_into_a_sweeps_directory_is_refused_before_computing(tmp_path, capsys, no_compute):
    """Before: the eval's one-point dataset took ``results/sw/latest`` over; ``evaluator query sw`` read it."""
    assert cli.main(["sweep", *T, "routing=dor", "traffic=all_to_all", "traffic.n_tasks=8,16", "sweep.name=sw",
                     f"sweep.output_dir={tmp_path}"]) == 0, capsys.readouterr().err[-2000:]  # (not through eval's)
    (sweep,) = (tmp_path / "sw").glob("*.nc")
    capsys.readouterr()
    assert cli.main([*EVAL, f"output_dir={tmp_path / 'sw'}"]) == 2
    err = capsys.readouterr().err
    assert f"output_dir = '{tmp_path / 'sw'}' is invalid" in err and "the dataset of evaluator sweep (sweep sw)" in err
    assert f"take {tmp_path / 'sw' / 'latest'} over" in err and "Nothing was computed." in err, err
    assert sorted((tmp_path / "sw").glob("*.nc")) == [sweep] and resolve("sw", tmp_path) == sweep


def test_3_eval_into_a_schedule_studys_directory_is_refused(tmp_path, capsys, no_compute):
    ds = xr.Dataset({"mean_wait": (("machine", "mix", "run"), np.ones((1, 1, 1)))},
                    attrs={"study": "tiny", "study_id": "tiny-0123456789ab"})
    study = io.write_dataset(ds, tmp_path / "tiny", identity="tiny-0123456789ab")
    assert cli.main([*EVAL, f"output_dir={tmp_path / 'tiny'}"]) == 2
    err = capsys.readouterr().err
    assert "the dataset of evaluator schedule --study (workload study tiny)" in err, err
    assert (tmp_path / "tiny" / "latest").resolve() == study.resolve()


def test_3_eval_keeps_its_own_latest_and_says_when_latest_is_a_users_file(tmp_path, capsys):
    """Before: a file of the user's own named ``latest`` was left as it is without a word."""
    own = tmp_path / "mine"
    assert cli.main([*EVAL, f"output_dir={own}"]) == 0  # eval's own directory: its latest moves on
    capsys.readouterr()
    assert cli.main([*EVAL, "traffic.n_tasks=16", f"output_dir={own}"]) == 0
    second = capsys.readouterr()
    assert "warning" not in second.err and len(list(own.glob("*.nc"))) == 2
    assert (own / "latest").resolve() == Path(second.out.split("dataset: ")[-1].strip()).resolve()
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "latest").write_text("my notes\n")
    assert cli.main([*EVAL, f"output_dir={notes}"]) == 0
    err = capsys.readouterr().err
    assert (f"warning: output_dir = '{notes}': {notes / 'latest'} is a file of your own, not the link evaluator "
            "writes: it is left as it is and will not point at this evaluation's dataset") in err, err
    assert (notes / "latest").read_text() == "my notes\n" and len(list(notes.glob("*.nc"))) == 1
