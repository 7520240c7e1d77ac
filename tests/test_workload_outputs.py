"""Workload outputs: utilisation, monthly wait reduction, ``evaluator schedule``, and studies (no Ray)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import xarray as xr
import yaml

from evaluator import cli
from evaluator.io import content_key
from evaluator.workload import UnrestrictedPolicy, prepare_trace, read_swf, simulate, synthetic_trace, WorkloadModel
from evaluator.workload.analysis import MONTH_S, months, utilisation, utilisation_by_month, wait_reduction
from evaluator.workload.run import RunSpec, TraceSpec, run_schedule
from tests.helpers import TOL

DATA = Path(__file__).parent / "data"


def _run(seed=0, n=300, total=256, G=32, speedups=None):
    tr = prepare_trace(synthetic_trace(n, total // 2, seed=seed), total, G, WorkloadModel(seed=seed))
    return simulate(tr, UnrestrictedPolicy(total // G, G), speedups=speedups, allow_foreign_speedups=True)


def test_utilisation_against_a_per_sample_loop():
    ds = _run()
    u = utilisation(ds, step_s=600.0)
    total = ds.attrs["total_nodes"]
    for t, v in zip(u.time.values[::7], u.values[::7]):
        busy = sum(int(n) for s, e, n in zip(ds.start.values, ds.end.values, ds.nodes.values) if s <= t < e)
        assert v == pytest.approx(busy / total, abs=TOL["prob"])
    assert u.time.values[0] == ds.submit.values.min() and u.time.values[-1] < ds.end.values.max()
    q = utilisation_by_month(ds, 600.0)
    assert np.all(np.diff(q.values, axis=1) >= 0) and q.values.min() >= 0 and q.values.max() <= 1


def test_wait_reduction_against_direct_means():
    from evaluator.workload import MODES, speedup_table

    base = _run()
    new = _run(speedups=speedup_table({m: {2: 1.5, 8: 1.2} for m in MODES}))
    red = wait_reduction(base, new)
    m = months(base)
    for k in red.month.values:
        sel = m == k
        wb, wn = base.wait.values[sel].mean(), new.wait.values[sel].mean()
        assert float(red.wait_reduction.sel(month=k)) == pytest.approx(1 - wn / wb, rel=TOL["rel"])
    assert red.attrs["overall_wait_reduction"] == pytest.approx(1 - new.wait.values.mean() / base.wait.values.mean(),
                                                                rel=TOL["rel"])
    # 30-day months without a calendar start
    assert all(str(x).startswith("M") for x in red.month.values)
    idx = np.floor((base.submit.values - base.submit.values.min()) / MONTH_S).astype(int) + 1
    assert list(m) == [f"M{i:02d}" for i in idx]


def test_calendar_months_from_the_swf_header():
    tr = read_swf(DATA / "sample.swf")
    ds = simulate(prepare_trace(tr, 98304, 1024, WorkloadModel(enlarge=1.0)), UnrestrictedPolicy(96, 1024))
    assert set(months(ds)) == {"2019-01"}  # UnixStartTime 2019-01-01T00:00Z, all submitted in the first hours


def test_run_schedule_dataset_and_cli(tmp_path, capsys):
    rc = cli.main(["schedule", "--synthetic", "300", "--groups", "8", "--nodes-per-group", "32", "--policy",
                   "unrestricted", "--baseline", "unrestricted", "--out", str(tmp_path), "--no-progress"])
    assert rc == 0
    out = capsys.readouterr().out
    nc = sorted(tmp_path.glob("*.nc"))
    png = sorted(tmp_path.glob("*-fig5.png"))
    assert len(nc) == 1 and len(png) == 1 and str(nc[0]) in out
    ds = xr.open_dataset(nc[0], engine="h5netcdf")
    assert dict(ds.sizes)["run"] == 2 and dict(ds.sizes)["job"] == 300
    # same policy twice, no speedup: identical runs, no reduction
    np.testing.assert_array_equal(ds.start.values[0], ds.start.values[1])
    np.testing.assert_array_equal(ds.wait_reduction.values[1], 0.0)
    direct = run_schedule(TraceSpec(synthetic=300), [RunSpec("unrestricted")], 8, 32)
    np.testing.assert_array_equal(direct.start.values[0], ds.start.values[0])


@pytest.mark.parametrize("argv,needle", [
    (["--swf", "nope.swf"], "nope.swf"),
    (["--policy", "nope"], "nope"),
    (["--mode-mix", "turbo=1"], "turbo"),
    (["--mpi-fraction", "a:b"], "--mpi-fraction"),
    (["--groups", "0"], "--groups = 0"),   # the option, not the library's machine.groups
    # every option is named as typed, not by the library's field (trace.synthetic, workload.seed, run.policy, ...)
    (["--synthetic", "0"], "--synthetic = 0 is invalid"),
    (["--load", "0"], "--load = 0.0 is invalid"),
    (["--seed", "-1"], "--seed = -1 is invalid"),
    (["--enlarge", "-1"], "--enlarge = -1.0 is invalid"),
    (["--mode-mix", "minimal_balance=-1"], "--mode-mix minimal_balance = -1.0 is invalid"),
    (["--mode-range", "5,2"], "--mode-range = 5 is invalid"),
    (["--policy", "nope"], "--policy = 'nope' is invalid"),
    (["--baseline", "nope"], "--baseline = 'nope' is invalid"),
])
def test_schedule_bad_input_is_one_line(argv, needle, tmp_path, capsys):
    src = [] if "--swf" in argv or "--synthetic" in argv else ["--synthetic", "20"]
    base = {"--groups": "4", "--nodes-per-group": "8", "--policy": "unrestricted"}  # the one tested: once
    rc = cli.main(["schedule", *src, *[x for k, v in base.items() if k not in argv for x in (k, v)], "--out",
                   str(tmp_path), "--no-progress", *argv])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and needle in err, err


def test_study_in_process(tmp_path):
    from evaluator.sweep.schedule import load_study, run_study

    study = yaml.safe_load((Path(__file__).parent.parent / "sweeps" / "workload" / "smoke.yaml").read_text())
    study["trace"] = {"synthetic": 120, "load": 0.9}
    study["machines"] = {"8x32": [8, 32], "4x64": [4, 64]}
    f = tmp_path / "s.yaml"
    f.write_text(yaml.safe_dump(study))
    path = run_study(load_study(f), use_ray=False, progress=False, out_dir=tmp_path / "out")
    ds = xr.open_dataset(path, engine="h5netcdf")
    assert dict(ds.sizes) == {"machine": 2, "mix": 2, "run": 2}
    np.testing.assert_array_equal(ds.wait_reduction.values[:, :, 0], 0.0)
    # one point against a direct run of the same trace, machine, mix and speedups
    wl = dict(study["workload"], mode_mix=study["mode_mixes"]["all_adaptive"], seed=0)
    direct = run_schedule(TraceSpec(synthetic=120, load=0.9), [RunSpec("unrestricted",
                          study["runs"]["rdn_speedup"]["speedups"])], 4, 64, WorkloadModel(**wl))
    got = ds.sel(machine="4x64", mix="all_adaptive", run="rdn_speedup")
    assert float(got.mean_wait) == pytest.approx(float(direct.mean_wait[0]), rel=TOL["rel"])


def test_study_bad_file(tmp_path):
    from evaluator.errors import ConfigError
    from evaluator.sweep.schedule import load_study

    f = tmp_path / "s.yaml"
    f.write_text("machines: {a: [4]}\nruns: {x: {policy: unrestricted}}\n")
    with pytest.raises(ConfigError, match=r"machines.a = \[4\]"):
        load_study(f)
    f.write_text("machines: {a: [4, 8]}\nruns: {x: {policy: unrestricted}}\ncolour: red\n")
    with pytest.raises(ConfigError, match="colour"):
        load_study(f)


def test_grap_vs_slurm_study_runs_with_real_policies(tmp_path):
    """sweeps/workload/grap_vs_slurm.yaml on a small machine and trace, with a speedup table file; a missing table is
    refused before any point runs, naming the command that computes it."""
    from evaluator.errors import ConfigError
    from evaluator.io import write_netcdf
    from evaluator.sweep.schedule import load_study, run_study
    from evaluator.workload import MODES, speedup_table

    study = yaml.safe_load((Path(__file__).parent.parent / "sweeps" / "workload" / "grap_vs_slurm.yaml").read_text())
    assert {r["policy"] for r in study["runs"].values()} == {"slurm_round_robin", "grap"}
    study["trace"] = {"synthetic": 150, "load": 0.9}
    study["machines"] = {"6x16": [6, 16]}
    study["workload"] = dict(study["workload"], mode_lo=17)
    f = tmp_path / "s.yaml"
    study["runs"]["rdn_grap"]["speedups"] = str(tmp_path / "speedup.nc")
    f.write_text(yaml.safe_dump(study, sort_keys=False))    # the first run is the baseline of wait_reduction
    with pytest.raises(ConfigError, match="--speedup-out"):
        load_study(f)
    write_netcdf(speedup_table({m: {2: 1.5, 6: 1.2} for m in MODES}, machine=(6, 16)), tmp_path / "speedup.nc")
    path = run_study(load_study(f), use_ray=False, progress=False, out_dir=tmp_path / "out")
    ds = xr.open_dataset(path, engine="h5netcdf")
    assert dict(ds.sizes) == {"machine": 1, "mix": 2, "run": 2}
    assert list(ds.policy.values) == ["slurm_round_robin", "grap"]
    sp = ds.mean_speedup.sel(machine="6x16")
    assert (sp.sel(run="tdn_slurm") == 1.0).all() and (sp.sel(run="rdn_grap") > 1.0).all()


def test_study_resumes_after_a_crash_without_losing_or_repeating_points(tmp_path, monkeypatch):
    from evaluator.sweep import schedule as S

    study = yaml.safe_load((Path(__file__).parent.parent / "sweeps" / "workload" / "smoke.yaml").read_text())
    study["trace"] = {"synthetic": 80, "load": 0.9}
    study["machines"] = {"8x32": [8, 32], "4x64": [4, 64]}
    f = tmp_path / "s.yaml"
    f.write_text(yaml.safe_dump(study))
    ref = xr.open_dataset(S.run_study(S.load_study(f), use_ray=False, progress=False, out_dir=tmp_path / "ref"),
                          engine="h5netcdf")
    real, calls = S._point, []

    def crashing(st, *p):
        calls.append(p)
        if len(calls) == 4:
            raise RuntimeError("killed")
        return real(st, *p)

    monkeypatch.setattr(S, "_point", crashing)
    with pytest.raises(RuntimeError):
        S.run_study(S.load_study(f), use_ray=False, progress=False, out_dir=tmp_path / "out")
    assert len(list((tmp_path / "out").glob(".*.points/*.json"))) == 3  # what finished is kept
    first = list(calls)
    calls.clear()
    monkeypatch.setattr(S, "_point", lambda st, *p: (calls.append(p), real(st, *p))[1])
    path = S.run_study(S.load_study(f), use_ray=False, progress=False, out_dir=tmp_path / "out")
    got = xr.open_dataset(path, engine="h5netcdf")
    # every point computed exactly once over the two runs (the crashed one is computed again), none twice
    assert sorted(first[:3] + calls) == sorted(S.study_points(S.load_study(f)))
    assert got.attrs["n_computed"] == 5 and got.attrs["study_id"] == ref.attrs["study_id"] \
        and path.stem.endswith(content_key(ref.attrs["study_id"]))  # <UTC time>-<hash of the study id>.nc
    for k in ref.data_vars:
        if k != "jobs_per_s":  # wall clock
            np.testing.assert_array_equal(got[k].values, ref[k].values)
