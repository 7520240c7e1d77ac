"""Speedup tables know their machine: a schedule refuses a table from another machine unless asked, and records
which table it used (issue 23, item 6)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import xarray as xr
import yaml

from evaluator import cli
from evaluator.errors import ConfigError
from evaluator.io import write_netcdf
from evaluator.workload import (MODES, SpeedupTable, UnrestrictedPolicy, WorkloadModel, prepare_trace, simulate,
                                speedup_table, synthetic_trace)
from evaluator.workload.run import RunSpec, TraceSpec, load_speedups, run_schedule

ROOT = Path(__file__).resolve().parents[1]
RATIOS = {m: {2: 1.5, 4: 1.2} for m in MODES}


def _table(tmp_path, machine, name="speedup.nc", **kw):
    return write_netcdf(speedup_table(RATIOS, machine=machine, **kw), tmp_path / name)


def test_a_table_records_its_machine_and_baseline(tmp_path):
    path = _table(tmp_path, (4, 16), baseline="oblivious")
    with xr.open_dataset(path, engine="h5netcdf") as ds:
        assert (int(ds.attrs["machine_groups"]), int(ds.attrs["machine_nodes_per_group"])) == (4, 16)
        assert ds.attrs["baseline"] == "oblivious"
    t = load_speedups(str(path))
    assert t.machine_shape == (4, 16) and t.baseline == "oblivious" and t.source == str(path)
    # the RDN study's tables name the Dragonfly: DF(p, a, h, g) is g groups of a * p nodes
    ds = speedup_table(RATIOS)
    ds.attrs.update(machine="DF(2,4,2,8)", baseline="adaptive", baseline_text="the ideal adaptive bound")
    t = SpeedupTable(ds)
    assert t.machine_shape == (8, 8) and t.machine == "DF(2,4,2,8)"
    assert t.baseline == "adaptive (the ideal adaptive bound)"
    assert SpeedupTable(speedup_table(RATIOS)).machine_shape is None      # hand-made: nothing recorded


def test_schedule_refuses_a_table_from_another_machine(tmp_path, capsys):
    path = _table(tmp_path, (8, 8), machine_name="DF(2,4,2,8)")
    argv = ["schedule", "--synthetic", "60", "--groups", "4", "--nodes-per-group", "16", "--baseline",
            "unrestricted", "--policy", "unrestricted", "--speedups", str(path), "--out", str(tmp_path / "o"),
            "--no-progress", "--no-plot"]
    rc = cli.main(argv)
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1, err
    assert "--speedups machine = 'DF(2,4,2,8), 8 groups x 8 nodes'" in err   # the option, then the table's field
    assert "4 groups x 16 nodes" in err and "workload.allow_foreign_speedups=true" in err
    assert not (tmp_path / "o").exists()                                  # refused before anything ran
    # the same from the library, and for a table that records no machine
    with pytest.raises(ConfigError, match="speedups.machine"):
        run_schedule(TraceSpec(synthetic=30), [RunSpec("unrestricted", str(path))], 4, 16)
    with pytest.raises(ConfigError, match="'not recorded'"):
        run_schedule(TraceSpec(synthetic=30), [RunSpec("unrestricted", RATIOS)], 4, 16)
    tr = prepare_trace(synthetic_trace(30, 32), 64, 16, WorkloadModel())
    with pytest.raises(ConfigError, match="speedups.machine"):
        simulate(tr, UnrestrictedPolicy(4, 16), speedups=load_speedups(str(path)))


def test_foreign_table_allowed_explicitly_and_recorded(tmp_path, capsys):
    path = _table(tmp_path, (8, 8), machine_name="DF(2,4,2,8)", baseline="oblivious")
    argv = ["schedule", "--synthetic", "60", "--groups", "4", "--nodes-per-group", "16", "--baseline",
            "unrestricted", "--policy", "unrestricted", "--speedups", str(path), "--out", str(tmp_path / "o"),
            "--no-progress", "--no-plot", "--allow-foreign-speedups"]
    assert cli.main(argv) == 0
    out = capsys.readouterr().out
    assert f"speedup table {path} (machine DF(2,4,2,8); baseline oblivious)" in out
    (nc,) = (tmp_path / "o").glob("*.nc")
    with xr.open_dataset(nc, engine="h5netcdf") as ds:
        assert list(ds.speedup_table.values) == ["", str(path)]
        assert list(ds.speedup_table_machine.values) == ["", "DF(2,4,2,8)"]
        assert list(ds.speedup_table_baseline.values) == ["", "oblivious"]
        assert int(ds.attrs["allow_foreign_speedups"]) == 1


def test_same_machine_table_needs_no_option_and_is_recorded(tmp_path):
    path = _table(tmp_path, (4, 16), baseline="oblivious")
    ds = run_schedule(TraceSpec(synthetic=60), [RunSpec("unrestricted"), RunSpec("unrestricted", str(path))], 4, 16)
    assert list(ds.speedup_table.values) == ["", str(path)]
    assert list(ds.speedup_table_machine.values) == ["", "4 groups x 16 nodes"]
    assert int(ds.attrs["allow_foreign_speedups"]) == 0
    assert float(ds.mean_speedup[1]) >= 1.0


def test_bad_allow_value_is_named():
    with pytest.raises(ConfigError, match="workload.allow_foreign_speedups"):
        WorkloadModel(allow_foreign_speedups="yes")


def test_study_checks_each_machines_table_before_running(tmp_path):
    """A study's table path may name the machine ({groups}, {nodes_per_group}); every table is checked when the
    study is read; a hand-made table needs workload.allow_foreign_speedups; the dataset records the tables."""
    from evaluator.sweep.schedule import load_study, run_study

    study = {"name": "t", "trace": {"synthetic": 40, "load": 0.9},
             "machines": {"4x16": [4, 16], "2x32": [2, 32]},
             "runs": {"tdn": {"policy": "unrestricted"},
                      "rdn": {"policy": "unrestricted", "speedups": str(tmp_path / "sp-{groups}x{nodes_per_group}.nc")}},
             "workload": {"mode_lo": 17}}
    f = tmp_path / "s.yaml"
    f.write_text(yaml.safe_dump(study))
    _table(tmp_path, (4, 16), name="sp-4x16.nc")
    with pytest.raises(ConfigError, match="sp-2x32.nc.*Compute it on machine 2x32"):
        load_study(f)
    _table(tmp_path, (4, 16), name="sp-2x32.nc")                           # the wrong machine's table
    with pytest.raises(ConfigError, match=r"runs.rdn.speedups.machine \(machine 2x32\)"):
        load_study(f)
    _table(tmp_path, (2, 32), name="sp-2x32.nc")
    ds = xr.open_dataset(run_study(load_study(f), use_ray=False, progress=False, out_dir=tmp_path / "out"),
                         engine="h5netcdf")
    assert ds.speedup_table.dims == ("machine", "run")
    assert ds.speedup_table.sel(machine="2x32", run="rdn").item() == str(tmp_path / "sp-2x32.nc")
    assert ds.speedup_table_machine.sel(machine="4x16", run="rdn").item() == "4 groups x 16 nodes"
    assert ds.speedup_table.sel(machine="4x16", run="tdn").item() == ""
    # a hand-made table records no machine
    study["runs"]["rdn"]["speedups"] = RATIOS
    f.write_text(yaml.safe_dump(study))
    with pytest.raises(ConfigError, match="'not recorded'"):
        load_study(f)
    study["workload"]["allow_foreign_speedups"] = True
    f.write_text(yaml.safe_dump(study))
    assert load_study(f)["workload"]["allow_foreign_speedups"] is True


def test_shipped_studies_name_same_machine_tables():
    """grap_vs_slurm.yaml reads one table per machine; smoke.yaml's hand-made table is allowed explicitly."""
    g = yaml.safe_load((ROOT / "sweeps" / "workload" / "grap_vs_slurm.yaml").read_text())
    sp = g["runs"]["rdn_grap"]["speedups"]
    assert "{groups}" in sp and "{nodes_per_group}" in sp
    assert not g["workload"].get("allow_foreign_speedups", False)
    s = yaml.safe_load((ROOT / "sweeps" / "workload" / "smoke.yaml").read_text())
    assert s["workload"]["allow_foreign_speedups"] is True
    assert np.all([isinstance(r.get("speedups", {}), dict) for r in s["runs"].values()])
