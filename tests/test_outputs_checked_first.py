"""Every command that writes checks that it can, before it computes anything.

``evaluator eval output_dir=...`` evaluated the point and then said "the evaluation above is not saved";
``evaluator partitions --out``, ``evaluator placement --write-rank-order`` and ``evaluator bench --out`` failed
after the work with a bare ``No such file or directory``. Each now refuses the directory first, naming the
option, with :func:`evaluator.io.check_writable` (the check ``tiles``, ``map`` and ``schedule`` already made).
"""

from __future__ import annotations

import importlib

import pytest

from evaluator import cli


def _boom(*a, **k):
    raise AssertionError("work started before the output directory was refused")


def _unwritable(tmp_path):
    f = tmp_path / "file.txt"
    f.write_text("x")
    return str(f / "sub")  # a directory under a regular file: no user can make it


CASES = {
    "eval": (lambda d: ["eval", f"output_dir={d}", "save=true"], "output_dir",
             [("evaluator.cli.evaluate", "evaluate"), ("evaluator.config", "build")]),
    "eval-jobs": (lambda d: ["eval", "jobs=[{name: a}, {name: b}]", f"output_dir={d}"], "output_dir",
                  [("evaluator.cli.evaluate", "evaluate_jobs"), ("evaluator.config", "build_jobs")]),
    "partitions": (lambda d: ["partitions", "Mira", "--out", d], "--out",
                   [("evaluator.cli.partitions", "load_machine")]),
    "placement": (lambda d: ["placement", "placement=linear", "--write-rank-order", d], "--write-rank-order",
                  [("evaluator.config", "build")]),
    "bench": (lambda d: ["bench", "--quick", "--only", "small", "--out", d], "--out",
              [("evaluator.bench.run", "_collect")]),
}


@pytest.mark.parametrize("case", list(CASES))
def test_an_unwritable_output_is_refused_before_any_work(case, tmp_path, capsys, monkeypatch):
    argv, field, work = CASES[case]
    for module, name in work:
        monkeypatch.setattr(importlib.import_module(module), name, _boom)
    d = _unwritable(tmp_path)
    rc = cli.main(argv(d))
    err = capsys.readouterr().err
    assert rc == 2, err
    assert f"{field} = '{d}' is invalid: allowed is a directory this user can create and write" in err, err
    assert "nothing was computed" in err and err.startswith(f"evaluator {argv(d)[0]}: error: "), err


def test_a_writable_output_is_left_as_it_was_until_the_work_writes(tmp_path, capsys):
    """The probe makes no directory it does not keep: a refused run elsewhere leaves nothing behind, and a run
    that saves nothing (save=false) makes nothing."""
    d = tmp_path / "new" / "deeper"
    assert cli.main(["eval", "traffic=all_to_all", "placement=linear", f"output_dir={d}", "save=false"]) == 0
    capsys.readouterr()
    assert not (tmp_path / "new").exists()
    assert cli.main(["eval", "traffic=all_to_all", "placement=linear", f"output_dir={d}", "save=true"]) == 0
    assert len(list(d.glob("*.nc"))) == 1


def test_plot_names_the_png_path_given(tmp_path, capsys, monkeypatch):
    import evaluator.cli.plot as plot_cli

    d = tmp_path / "sw"
    assert cli.main(["sweep", "topology=torus", "topology.dims=[4,4]", "routing=dor", "traffic=all_to_all",
                     "placement=linear", "traffic.n_tasks=16", "+sweep.axes.traffic.bytes=[1.0e+6,2.0e+6]",
                     f"sweep.output_dir={d}", "--no-progress"]) == 0
    capsys.readouterr()
    monkeypatch.setattr(plot_cli, "plot_sweep", _boom)
    out = _unwritable(tmp_path) + "/x.png"
    assert cli.main(["plot", str(next(d.glob("*/latest"))), "--out", out]) == 2
    err = capsys.readouterr().err
    assert f"--out = '{out}' is invalid: allowed is a PNG path in a directory this user can create" in err, err


@pytest.mark.parametrize("flag,value,allowed", [("--budget", "-1", "a finite number >= 0"),
                                                ("--iterations", "-1", "an integer >= 0"),
                                                ("--candidates", "0", "an integer >= 1"),
                                                ("--seed", "-1", "an integer in [0, 2^62)")])
def test_map_names_its_own_options(flag, value, allowed, capsys, monkeypatch):
    import evaluator.cli.mapping as map_cli

    monkeypatch.setattr(map_cli, "_build", _boom)  # refused before the job is built
    assert cli.main(["map", "traffic=all_to_all", "save=false", flag, value]) == 2
    err = capsys.readouterr().err
    assert f"evaluator map: error: {flag} = {value}" in err and allowed in err, err
