"""The bad-input corpus of the workload surfaces (issue 25): SWF traces, speedup tables, workload study files, the
Python API of ``evaluator.workload`` and ``evaluator.policies``, sizes and outputs of ``evaluator schedule``.

As in ``tests/test_bad_input_corpus.py``: a command-line case runs ``evaluator.cli.main`` and expects exit status
2 and exactly one line on stderr, ``evaluator schedule: error: ...``, naming the field or file and the value; a
Python API case expects a :class:`TypeError` (wrong type) or :class:`ValueError` (wrong value) whose one-line
message has the ``"<field> = <value!r> is invalid: allowed is ..."`` form and names the argument and the value.
The texts every message must contain are written here from the input, not copied from the code's output.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from evaluator import cli
from evaluator.errors import ConfigError, ResourceError
from evaluator.io import write_netcdf
from evaluator.policies import JobRequest
from evaluator.studies import allocation_mode_study
from evaluator.workload import (POLICY_NAMES, Trace, WorkloadModel, make_policy, parse_swf, prepare_trace, read_swf,
                                simulate, speedup_table)
from evaluator.workload.run import RunSpec, TraceSpec, load_speedups, run_schedule

GOOD = "1 0 5 100 4 -1 -1 4 3600 -1 1 3 1 -1 1 -1 -1 -1"
"""One SWF job line: job 1, submitted at 0 s, 100 s run time, 4 processors, 3600 s requested."""


def _swf(tmp: Path, name: str, text: str) -> Path:
    f = tmp / name
    f.write_text(text)
    return f


def _line(job="1", submit="0", run="100", procs="4") -> str:
    f = GOOD.split()
    f[0], f[1], f[3], f[4], f[7] = job, submit, run, procs, procs
    return " ".join(f)


def _table(tmp: Path, name: str, change=None) -> Path:
    """A speedup table recording the 4 x 8 machine the CLI cases schedule, changed by ``change(ds)``."""
    ds = speedup_table({"minimal_balance": {2: 1.3, 4: 1.2}, "adaptive": {2: 1.1, 4: 1.0}}, machine=(4, 8))
    f = tmp / name
    write_netcdf(ds if change is None else change(ds), f)
    return f


def _study(tmp: Path, name: str, extra: str = "", runs: str = "{x: {policy: unrestricted}}",
           machines: str = "{a: [4, 8]}") -> Path:
    f = tmp / name
    trace = "" if "trace:" in extra else "trace: {synthetic: 20}\n"
    f.write_text(f"name: bad\n{trace}machines: {machines}\nruns: {runs}\n{extra}")
    return f


SCHEDULE = ["schedule", "--groups", "4", "--nodes-per-group", "8", "--policy", "unrestricted", "--no-progress",
            "--no-plot", "--out", "out"]

# ----------------------------------------------------------------------------------------------
# command-line cases: (id, class, argv(tmp_path), texts the one stderr line must contain)
# ----------------------------------------------------------------------------------------------

CLI_CASES = [
    # ---- SWF traces -------------------------------------------------------------------------
    ("swf-empty", "swf", lambda t: [*SCHEDULE, "--swf", str(_swf(t, "empty.swf", ""))],
     ["empty.swf", "no job lines", "nothing to simulate"]),
    ("swf-only-comments", "swf", lambda t: [*SCHEDULE, "--swf", str(_swf(t, "comments.swf", "; a\n;b: c\n\n"))],
     ["comments.swf", "no job lines", "nothing to simulate"]),
    ("swf-every-job-dropped", "swf",
     lambda t: [*SCHEDULE, "--swf", str(_swf(t, "dropped.swf", _line(run="-1") + "\n" + _line("2", procs="0")))],
     ["dropped.swf", "2 job lines, every one dropped", "nothing to simulate"]),
    ("swf-duplicate-job", "swf",
     lambda t: [*SCHEDULE, "--swf", str(_swf(t, "dup.swf", f"{_line('7')}\n{_line('8')}\n{_line('7', '50')}\n"))],
     ["dup.swf:3", "field 1 (job_number)", "'7'", "line 1"]),
    ("swf-job-beyond-int64", "swf",
     lambda t: [*SCHEDULE, "--swf", str(_swf(t, "big.swf", _line("99999999999999999999")))],
     ["big.swf:1", "field 1 (job_number)", "'99999999999999999999'", "9223372036854775807"]),
    ("swf-processors-beyond-int64", "swf",
     lambda t: [*SCHEDULE, "--swf", str(_swf(t, "bigp.swf", _line(procs="1e20")))],
     ["bigp.swf:1", "field 5 (allocated_processors)", "'1e20'", "9223372036854775807"]),
    ("swf-negative-job-number", "swf", lambda t: [*SCHEDULE, "--swf", str(_swf(t, "neg.swf", _line("-1")))],
     ["neg.swf:1", "field 1 (job_number)", "'-1'", "known job number"]),
    ("swf-run-time-1e12", "swf",
     lambda t: [*SCHEDULE, "--swf", str(_swf(t, "long.swf", f"{_line()}\n{_line('2', run='1000000000000')}"))],
     ["long.swf", "time span 1e+12 s", "fits in memory", "Job 2"]),
    ("swf-directory", "swf", lambda t: [*SCHEDULE, "--swf", str(t)], ["swf", "directory"]),
    # ---- speedup tables ----------------------------------------------------------------------
    ("speedups-text-file", "speedups", lambda t: [*SCHEDULE, "--speedups", str(_swf(t, "text.nc", "mode,ratio\n"))],
     ["speedups", "text.nc", "could not be read"]),
    ("speedups-truncated", "speedups",
     lambda t: [*SCHEDULE, "--speedups", str(_trunc(t))],
     ["speedups", "trunc.nc", "truncated"]),
    ("speedups-empty-file", "speedups", lambda t: [*SCHEDULE, "--speedups", str(_swf(t, "zero.nc", ""))],
     ["speedups", "zero.nc", "empty"]),
    ("speedups-string-ratios", "speedups",
     lambda t: [*SCHEDULE, "--speedups", str(_table(t, "str.nc", lambda d: d.assign(speedup=d.speedup.astype(str))))],
     ["str.nc", "speedup", "dtype <U"]),
    ("speedups-negative-groups", "speedups",
     lambda t: [*SCHEDULE, "--speedups", str(_table(t, "neg.nc", lambda d: d.assign_coords(groups=[-2, 4])))],
     ["neg.nc", "groups = [-2, 4]", "positive integer"]),
    ("speedups-zero-groups", "speedups",
     lambda t: [*SCHEDULE, "--speedups", str(_table(t, "zero.nc", lambda d: d.assign_coords(groups=[0, 4])))],
     ["zero.nc", "groups = [0, 4]", "positive integer"]),
    ("speedups-descending-groups", "speedups",
     lambda t: [*SCHEDULE, "--speedups", str(_table(t, "desc.nc", lambda d: d.assign_coords(groups=[4, 2])))],
     ["desc.nc", "groups = [4, 2]", "ascending"]),
    ("speedups-fractional-groups", "speedups",
     lambda t: [*SCHEDULE, "--speedups", str(_table(t, "frac.nc", lambda d: d.assign_coords(groups=[1.5, 4.0])))],
     ["frac.nc", "groups = [1.5, 4.0]", "integer"]),
    ("speedups-infinite-ratio", "speedups",
     lambda t: [*SCHEDULE, "--speedups", str(_table(t, "inf.nc", lambda d: d.where(d.groups != 4, np.inf)))],
     ["inf.nc", "inf", "finite ratios > 0"]),
    ("speedups-zero-ratio", "speedups",
     lambda t: [*SCHEDULE, "--speedups", str(_table(t, "z.nc", lambda d: d.assign(speedup=d.speedup * 0)))],
     ["z.nc", "[0.0, 0.0]", "finite ratios > 0"]),
    ("speedups-negative-ratio", "speedups",
     lambda t: [*SCHEDULE, "--speedups", str(_table(t, "n.nc", lambda d: d.assign(speedup=-d.speedup)))],
     ["n.nc", "-1.3", "finite ratios > 0"]),
    ("speedups-wrong-dims", "speedups",
     lambda t: [*SCHEDULE, "--speedups", str(_table(t, "dims.nc", lambda d: d.rename(groups="size")))],
     ["dims.nc", "dims", "'size'"]),
    # ---- workload study files ----------------------------------------------------------------
    ("study-trace-key-misspelt", "study",
     lambda t: ["schedule", "--study", _w(t, "s1.yaml", "trace: {synthtic: 20}\n")],
     ["s1.yaml: trace.synthtic = 20", "synthetic", "Did you mean trace.synthetic?"]),
    ("study-workload-key-misspelt", "study", lambda t: ["schedule", "--study", _w(t, "s2.yaml",
                                                                                 "workload: {mpi_fracton: 0.3}\n")],
     ["s2.yaml: workload.mpi_fracton = 0.3", "enlarge", "Did you mean workload.mpi_fraction?"]),
    ("study-backfill-depth-text", "study", lambda t: ["schedule", "--study", _w(t, "s3.yaml", "backfill_depth: abc\n")],
     ["s3.yaml: backfill_depth = 'abc'", "an integer >= -1"]),
    ("study-backfill-depth-float", "study",
     lambda t: ["schedule", "--study", _w(t, "s4.yaml", "backfill_depth: 2.5\n")],
     ["s4.yaml: backfill_depth = 2.5", "an integer"]),
    ("study-run-key-misspelt", "study",
     lambda t: ["schedule", "--study", _w(t, "s5.yaml", "", runs="{x: {polcy: unrestricted}}")],
     ["s5.yaml: runs.x.polcy = 'unrestricted'", "policy, speedups, params", "Did you mean runs.x.policy?"]),
    ("study-policy-misspelt", "study",
     lambda t: ["schedule", "--study", _w(t, "s6.yaml", "", runs="{x: {policy: grapp}}")],
     ["s6.yaml: runs.x: policy = 'grapp'", "slurm_round_robin", "Did you mean 'grap'?"]),
    ("study-policy-param-misspelt", "study",
     lambda t: ["schedule", "--study", _w(t, "s7.yaml", "", runs="{x: {policy: grap, params: {port_per_group: 2}}}")],
     ["s7.yaml: runs.x: policy.port_per_group = 2", "ports_per_group"]),
    ("study-ray-key-misspelt", "study", lambda t: ["schedule", "--study", _w(t, "s8.yaml", "ray: {num_cpu: 2}\n")],
     ["s8.yaml: ray.num_cpu = 2", "address, num_cpus", "Did you mean ray.num_cpus?"]),
    ("study-top-key-misspelt", "study", lambda t: ["schedule", "--study", _w(t, "s9.yaml", "mode_mix: {}\n")],
     ["s9.yaml: mode_mix = {}", "mode_mixes", "Did you mean mode_mixes?"]),
    ("study-mix-mode-misspelt", "study",
     lambda t: ["schedule", "--study", _w(t, "s10.yaml", "mode_mixes: {m: {adaptve: 1}}\n")],
     ["s10.yaml: mode_mixes.m = 'adaptve'", "minimal_balance", "Did you mean 'adaptive'?"]),
    ("study-mix-share-text", "study",
     lambda t: ["schedule", "--study", _w(t, "s11.yaml", "mode_mixes: {m: {adaptive: lots}}\n")],
     ["s11.yaml: mode_mixes.m.adaptive = 'lots'", "a finite number >= 0"]),
    ("study-mix-share-infinite", "study",
     lambda t: ["schedule", "--study", _w(t, "s12.yaml", "mode_mixes: {m: {adaptive: .inf}}\n")],
     ["s12.yaml: mode_mixes.m.adaptive = inf", "a finite number >= 0"]),
    ("study-trace-load-text", "study", lambda t: ["schedule", "--study", _w(t, "s13.yaml", "trace: {load: high}\n")],
     ["s13.yaml: trace.load = 'high'", "a finite number > 0"]),
    ("study-trace-swf-missing", "study",
     lambda t: ["schedule", "--study", _w(t, "s14.yaml", "trace: {swf: nope.swf}\n")],
     ["s14.yaml: trace.swf: swf = 'nope.swf'", "existing SWF file"]),
    ("study-seed-negative", "study", lambda t: ["schedule", "--study", _w(t, "s15.yaml", "seed: -1\n")],
     ["s15.yaml: seed = -1", "an integer >= 0"]),
    ("study-workload-enlarge-text", "study", lambda t: ["schedule", "--study", _w(t, "s16.yaml",
                                                                                 "workload: {enlarge: big}\n")],
     ["s16.yaml: workload.enlarge = 'big'", "a finite number > 0"]),
    ("study-machine-huge", "study",
     lambda t: ["schedule", "--study", _w(t, "s17.yaml", "", machines="{a: [100000000, 100000000]}")],
     ["s17.yaml: machines.a = [100000000, 100000000]", "fits in memory"]),
    ("study-speedups-wrong-type", "study",
     lambda t: ["schedule", "--study", _w(t, "s18.yaml", "", runs="{x: {policy: unrestricted, speedups: 3}}")],
     ["s18.yaml: runs.x.speedups = 3", "netCDF path"]),
    # ---- sizes and options ---------------------------------------------------------------------
    ("schedule-huge-machine", "sizes",
     lambda t: ["schedule", "--groups", "100000000", "--nodes-per-group", "100000000", "--no-progress", "--out", "o"],
     ["machine = '100000000 groups x 100000000 nodes'", "fits in memory"]),
    ("schedule-huge-synthetic", "sizes", lambda t: [*SCHEDULE, "--synthetic", "100000000000000"],
     ["trace", "100000000000000 jobs", "fits in memory"]),
    ("schedule-limit-zero", "sizes", lambda t: [*SCHEDULE, "--synthetic", "20", "--limit", "0"],
     ["--limit = 0", "an integer >= 1"]),
    # ---- outputs ---------------------------------------------------------------------------------
    ("schedule-out-unwritable", "outputs",
     lambda t: [*SCHEDULE[:-1], str(_swf(t, "file.txt", "x") / "sub"), "--synthetic", "20"],
     ["--out", "file.txt/sub'", "a directory this user can create and write", "nothing was computed"]),
    ("study-out-unwritable", "outputs",
     lambda t: ["schedule", "--study", _w(t, "ok.yaml", ""), "--no-ray", "--no-progress",
                "--out", str(_swf(t, "f2.txt", "x") / "o")],
     ["--out", "f2.txt/o'", "a directory this user can create and write"]),
]


def _w(tmp: Path, name: str, extra: str, runs: str = "{x: {policy: unrestricted}}",
       machines: str = "{a: [4, 8]}") -> str:
    return str(_study(tmp, name, extra, runs, machines))


def _trunc(tmp: Path) -> Path:
    whole = _table(tmp, "whole.nc")
    f = tmp / "trunc.nc"
    f.write_bytes(whole.read_bytes()[:300])
    return f


@pytest.fixture
def no_work(monkeypatch):
    """Fails a case that starts a simulation, a study point or Ray: every refusal here comes before any work."""
    import evaluator.sweep.schedule as study_mod
    import evaluator.workload.run as run_mod

    def boom(*a, **k):
        raise AssertionError("work started before the input was refused")

    monkeypatch.setattr(run_mod, "simulate", boom)
    monkeypatch.setattr(study_mod, "_point", boom)
    import evaluator.sweep.driver as driver

    monkeypatch.setattr(driver, "_ray_init", boom)


@pytest.mark.parametrize("argv,texts", [pytest.param(a, t, id=i) for i, _, a, t in CLI_CASES])
def test_cli_bad_input(argv, texts, tmp_path, capsys, monkeypatch, no_work):
    monkeypatch.chdir(tmp_path)  # anything a command writes stays in tmp_path
    args = argv(tmp_path)
    before = {p for p in tmp_path.rglob("*")}
    t0 = time.perf_counter()
    rc = cli.main(args)
    dt = time.perf_counter() - t0
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert rc == 2, (rc, err)
    assert len(lines) == 1, err
    assert lines[0].startswith("evaluator schedule: error: "), err
    assert " is invalid: allowed is " in lines[0], err
    for t in texts:
        assert t in lines[0], f"{t!r} not in {lines[0]!r}"
    assert "np.str_" not in lines[0] and "np.float64" not in lines[0] and "np.int64" not in lines[0], err
    assert {p for p in tmp_path.rglob("*")} == before, "a refused command wrote something"
    assert dt < 5.0, f"refused after {dt:.1f} s"


# ----------------------------------------------------------------------------------------------
# Python API cases: (id, class, call(tmp_path), exception type, texts every message must contain)
# ----------------------------------------------------------------------------------------------


def _trace(**kw) -> Trace:
    base = {"job_id": np.array([1, 2]), "submit": np.array([0.0, 5.0]), "run_time": np.array([10.0, 20.0]),
            "requested_time": np.array([10.0, 20.0]), "nodes": np.array([2, 4])}
    base.update(kw)
    return Trace(**base)


def _policy_case(name: str, job) -> tuple:
    return lambda t: make_policy(name, 4, 8).allocate(job)


API_CASES = [
    # ---- read_swf / parse_swf -----------------------------------------------------------------
    ("read-swf-path-int", "api", lambda t: read_swf(123), TypeError, ["path = 123", "file path"]),
    ("read-swf-total-nodes-text", "api", lambda t: read_swf(_swf(t, "a.swf", GOOD), total_nodes="8"), TypeError,
     ["total_nodes = '8'", "an integer >= 1"]),
    ("read-swf-procs-per-node-zero", "api", lambda t: read_swf(_swf(t, "a.swf", GOOD), procs_per_node=0), ValueError,
     ["procs_per_node = 0", "an integer >= 1"]),
    ("read-swf-missing", "api", lambda t: read_swf(t / "nope.swf"), ValueError, ["swf", "nope.swf", "existing"]),
    ("parse-swf-bytes", "api", lambda t: parse_swf(GOOD.encode()), TypeError, ["lines = 'bytes'", "str"]),
    ("parse-swf-empty-text", "swf", lambda t: parse_swf("", "mem.swf"), ValueError,
     ["swf mem.swf = 'no job lines'", "nothing to simulate"]),
    # ---- Trace ---------------------------------------------------------------------------------
    ("trace-mpi-fraction-above-1", "api", lambda t: _trace(mpi_fraction=np.array([0.5, 1.5])), ValueError,
     ["job 2: trace.mpi_fraction = 1.5", "[0, 1]"]),
    ("trace-mpi-fraction-negative", "api", lambda t: _trace(mpi_fraction=np.array([-0.1, 0.5])), ValueError,
     ["job 1: trace.mpi_fraction = -0.1", "[0, 1]"]),
    ("trace-mpi-fraction-nan", "api", lambda t: _trace(mpi_fraction=np.array([0.2, np.nan])), ValueError,
     ["job 2: trace.mpi_fraction = nan", "[0, 1]"]),
    ("trace-mpi-fraction-text", "api", lambda t: _trace(mpi_fraction=["a", "b"]), TypeError,
     ["trace.mpi_fraction = 'a'", "real numbers"]),
    ("trace-job-id-text", "api", lambda t: _trace(job_id=["a", "b"]), TypeError, ["trace.job_id = 'a'", "integers"]),
    ("trace-job-id-duplicate", "api", lambda t: _trace(job_id=np.array([3, 3])), ValueError,
     ["trace.job_id = 3", "unique"]),
    ("trace-run-time-negative", "api", lambda t: _trace(run_time=np.array([10.0, -1.0])), ValueError,
     ["job 2: trace.run_time = -1.0", ">= 0"]),
    ("trace-nodes-zero", "api", lambda t: _trace(nodes=np.array([0, 4])), ValueError,
     ["job 1: trace.nodes = 0", "an integer >= 1"]),
    ("trace-nodes-fractional", "api", lambda t: _trace(nodes=np.array([1.5, 4.0])), ValueError,
     ["trace.nodes = 1.5", "integers"]),
    ("trace-lengths", "api", lambda t: _trace(submit=np.array([0.0])), ValueError,
     ["trace.submit = '1 entries'", "one entry per job (2)"]),
    ("trace-scalar", "api", lambda t: _trace(submit=5.0), TypeError, ["trace.submit = 5.0", "1-D array"]),
    # ---- WorkloadModel -------------------------------------------------------------------------
    ("model-share-inf", "api", lambda t: WorkloadModel(mode_mix={"adaptive": float("inf")}), ValueError,
     ["workload.mode_mix.adaptive = inf", "a finite number >= 0"]),
    ("model-share-nan", "api", lambda t: WorkloadModel(mode_mix={"adaptive": float("nan")}), ValueError,
     ["workload.mode_mix.adaptive = nan", "a finite number >= 0"]),
    ("model-share-text", "api", lambda t: WorkloadModel(mode_mix={"adaptive": "a lot"}), TypeError,
     ["workload.mode_mix.adaptive = 'a lot'"]),
    ("model-share-bool", "api", lambda t: WorkloadModel(mode_mix={"adaptive": True}), TypeError,
     ["workload.mode_mix.adaptive = True"]),
    ("model-mix-list", "api", lambda t: WorkloadModel(mode_mix=["adaptive"]), TypeError,
     ["workload.mode_mix = ['adaptive']", "mapping"]),
    ("model-mix-mode-misspelt", "api", lambda t: WorkloadModel(mode_mix={"adaptve": 1.0}), ValueError,
     ["workload.mode_mix = 'adaptve'", "Did you mean 'adaptive'?"]),
    ("model-enlarge-text", "api", lambda t: WorkloadModel(enlarge="2"), TypeError, ["workload.enlarge = '2'"]),
    ("model-mode-lo-float", "api", lambda t: WorkloadModel(mode_lo=1.5), TypeError, ["workload.mode_lo = 1.5"]),
    ("model-seed-text", "api", lambda t: WorkloadModel(seed="0"), TypeError, ["workload.seed = '0'"]),
    ("model-mpi-fraction-text", "api", lambda t: WorkloadModel(mpi_fraction="0.3"), TypeError,
     ["workload.mpi_fraction = '0.3'"]),
    # ---- prepare_trace -------------------------------------------------------------------------
    ("prepare-trace-not-a-trace", "api", lambda t: prepare_trace("jobs.swf", 64, 8), TypeError,
     ["trace = 'jobs.swf'", "Trace"]),
    ("prepare-total-nodes-zero", "api", lambda t: prepare_trace(_trace(), 0, 8), ValueError,
     ["total_nodes = 0", "an integer >= 1"]),
    ("prepare-group-larger-than-machine", "api", lambda t: prepare_trace(_trace(), 64, 128), ValueError,
     ["nodes_per_group = 128", "[1, 64]"]),
    ("prepare-model-dict", "api", lambda t: prepare_trace(_trace(), 64, 8, {"enlarge": 2}), TypeError,
     ["model = {'enlarge': 2}", "WorkloadModel"]),
    # ---- speedup_table / load_speedups ------------------------------------------------------
    ("speedup-table-not-mapping", "api", lambda t: speedup_table([1.2, 1.3]), TypeError, ["values = [1.2, 1.3]"]),
    ("speedup-table-row-number", "api", lambda t: speedup_table({"adaptive": 1.2}), TypeError,
     ["values['adaptive'] = 1.2", "{groups: ratio}"]),
    ("speedup-table-groups-text", "api", lambda t: speedup_table({"adaptive": {"two": 1.2}}), TypeError,
     ["values['adaptive'] groups = 'two'", "an integer >= 1"]),
    ("speedup-table-groups-negative", "api", lambda t: speedup_table({"adaptive": {-3: 1.2}}), ValueError,
     ["values['adaptive'] groups = -3", "an integer >= 1"]),
    ("speedup-table-ratio-text", "api", lambda t: speedup_table({"adaptive": {2: "fast"}}), TypeError,
     ["values['adaptive'][2] = 'fast'", "> 0"]),
    ("speedup-table-ratio-zero", "api", lambda t: speedup_table({"adaptive": {2: 0}}), ValueError,
     ["values['adaptive'][2] = 0", "> 0"]),
    ("speedup-table-machine-short", "api", lambda t: speedup_table({"adaptive": {2: 1.1}}, machine=(4,)), TypeError,
     ["machine = (4,)", "(groups, nodes_per_group)"]),
    ("load-speedups-number", "api", lambda t: load_speedups(3.5), TypeError, ["speedups = 3.5", "netCDF path"]),
    # ---- simulate --------------------------------------------------------------------------------
    ("simulate-trace-text", "api", lambda t: simulate("t.swf", make_policy("grap", 4, 8)), TypeError,
     ["trace = 't.swf'", "Trace"]),
    ("simulate-policy-name", "api", lambda t: simulate(_trace(), "grap"), TypeError,
     ["policy = 'grap'", "make_policy"]),
    ("simulate-backfill-bool", "api", lambda t: simulate(_trace(), make_policy("grap", 4, 8), backfill_depth=True),
     TypeError, ["schedule.backfill_depth = True", "an integer >= 0"]),
    ("simulate-backfill-negative", "api", lambda t: simulate(_trace(), make_policy("grap", 4, 8), backfill_depth=-2),
     ValueError, ["schedule.backfill_depth = -2", "an integer >= 0"]),
    ("simulate-rule-misspelt", "api", lambda t: simulate(_trace(), make_policy("grap", 4, 8), speedup_rule="ratio"),
     ValueError, ["workload.speedup_rule = 'ratio'", "time_ratio"]),
    ("simulate-empty-trace", "api", lambda t: simulate(_trace().head(0), make_policy("grap", 4, 8)), ValueError,
     ["trace = 'in memory'", "nothing to simulate"]),
    # ---- run_schedule, RunSpec, TraceSpec ---------------------------------------------------
    ("run-schedule-trace-text", "api", lambda t: run_schedule("t.swf", [RunSpec("grap")], 4, 8), TypeError,
     ["trace = 't.swf'", "TraceSpec"]),
    ("run-schedule-runs-not-list", "api", lambda t: run_schedule(TraceSpec(synthetic=5), RunSpec("grap"), 4, 8),
     TypeError, ["runs = 'RunSpec'", "a list"]),
    ("run-schedule-runs-names", "api", lambda t: run_schedule(TraceSpec(synthetic=5), ["grap"], 4, 8), TypeError,
     ["runs[0] = 'grap'", "RunSpec"]),
    ("run-schedule-runs-empty", "api", lambda t: run_schedule(TraceSpec(synthetic=5), [], 4, 8), ValueError,
     ["runs = []", "at least one run"]),
    ("run-schedule-groups-text", "api", lambda t: run_schedule(TraceSpec(synthetic=5), [RunSpec("grap")], "4", 8),
     TypeError, ["machine.groups = '4'", "an integer >= 1"]),
    ("run-schedule-step-zero", "api",
     lambda t: run_schedule(TraceSpec(synthetic=5), [RunSpec("grap")], 4, 8, step_s=0), ValueError,
     ["step_s = 0", "> 0"]),
    ("runspec-policy-misspelt", "api", lambda t: RunSpec("slurm_round_robbin"), ValueError,
     ["run.policy = 'slurm_round_robbin'", "Did you mean 'slurm_round_robin'?"]),
    ("runspec-params-list", "api", lambda t: RunSpec("grap", params=[1]), TypeError, ["run.params = [1]"]),
    ("tracespec-load-text", "api", lambda t: TraceSpec(load="high"), TypeError, ["trace.load = 'high'"]),
    ("tracespec-limit-zero", "api", lambda t: TraceSpec(limit=0), ValueError, ["trace.limit = 0"]),
    ("tracespec-synthetic-float", "api", lambda t: TraceSpec(synthetic=1e3), TypeError,
     ["trace.synthetic = 1000.0", "an integer >= 1"]),
    # ---- allocation_mode_study ------------------------------------------------------------------
    ("mode-study-machine-text", "api", lambda t: allocation_mode_study("DF(2,4,2,8)"), ValueError,
     ["machine = 'DF(2,4,2,8)'", "RdnMachine"]),
    ("mode-study-pattern-unknown", "api", lambda t: allocation_mode_study(patterns=("stencl",)), ValueError,
     ["patterns = 'stencl'", "stencil"]),
    ("mode-study-bound-unknown", "api", lambda t: allocation_mode_study(bounds=("best",)), ValueError,
     ["bounds = 'best'", "adaptive"]),
    ("mode-study-background-one", "api", lambda t: allocation_mode_study(background=1.0), ValueError,
     ["background = 1.0", "[0, 1)"]),
    # ---- policies: make_policy, allocate, release -----------------------------------------------
    ("make-policy-name-int", "api", lambda t: make_policy(3, 4, 8), TypeError, ["policy = 3"]),
    ("make-policy-groups-text", "api", lambda t: make_policy("grap", "4", 8), TypeError,
     ["policy.groups = '4'", "an integer >= 1"]),
    ("make-policy-ports-zero", "api", lambda t: make_policy("grap", 4, 8, ports_per_group=0), ValueError,
     ["policy.ports_per_group = 0"]),
    ("make-policy-param-misspelt", "api", lambda t: make_policy("grap", 4, 8, port_per_group=2), ValueError,
     ["policy.port_per_group = 2", "Did you mean 'ports_per_group'?"]),
    ("make-policy-huge", "sizes", lambda t: make_policy("grap", 10 ** 8, 10 ** 8), ValueError,
     ["machine = '100000000 groups x 100000000 nodes'", "fits in memory"]),
    ("release-not-an-allocation", "api", lambda t: make_policy("unrestricted", 4, 8).release("job 1"), TypeError,
     ["alloc = 'str'", "Allocation"]),
]
for _name in POLICY_NAMES:  # every policy validates its request (in the base class, once)
    API_CASES += [
        (f"{_name}-nodes-negative", "api", _policy_case(_name, JobRequest(1, -3)), ValueError,
         ["job.nodes = -3", "a positive integer"]),
        (f"{_name}-nodes-text", "api", _policy_case(_name, JobRequest(1, "4")), TypeError,
         ["job.nodes = '4'", "a positive integer"]),
        (f"{_name}-nodes-float", "api", _policy_case(_name, JobRequest(1, 2.0)), TypeError,
         ["job.nodes = 2.0", "a positive integer"]),
        (f"{_name}-nodes-too-many", "api", _policy_case(_name, JobRequest(1, 33)), ValueError,
         ["job.nodes = 33", "32 nodes"]),
        (f"{_name}-mode-misspelt", "api", _policy_case(_name, JobRequest(1, 2, "adaptve")), ValueError,
         ["job.mode = 'adaptve'", "adaptive"]),
        (f"{_name}-request-tuple", "api", _policy_case(_name, (1, 2)), TypeError, ["job = 'tuple'", "JobRequest"]),
        (f"{_name}-id-text", "api", _policy_case(_name, JobRequest("one", 2)), TypeError, ["job.id = 'one'"]),
        (f"{_name}-requirements-text", "api", _policy_case(_name, JobRequest(1, 12, "custom", "66")), TypeError,
         ["job.requirements = '66'"]),
    ]


@pytest.mark.parametrize("call,exc,texts", [pytest.param(c, e, t, id=i) for i, _, c, e, t in API_CASES])
def test_python_bad_input(call, exc, texts, tmp_path):
    with pytest.raises(exc) as e:
        call(tmp_path)
    assert isinstance(e.value, ConfigError), type(e.value)  # the CLI's one-line error, exit status 2
    msg = str(e.value)
    assert "\n" not in msg, msg
    assert " is invalid: allowed is " in msg, msg
    for t in texts:
        assert t in msg, f"{t!r} not in {msg!r}"
    assert "np.str_" not in msg and "np.float64" not in msg and "np.int64" not in msg, msg


def test_unrestricted_refuses_a_negative_request_and_keeps_its_nodes():
    """The issue's case: ``unrestricted`` gave node 0 to a request for -3 nodes; now refused, nothing taken."""
    p = make_policy("unrestricted", 2, 4)
    with pytest.raises(ValueError, match=r"job.nodes = -3"):
        p.allocate(JobRequest(1, -3))
    assert p.idle_nodes == 8
    a = p.allocate(JobRequest(2, 3))
    assert list(a.nodes) == [0, 1, 2]  # lowest ids first: node 0 was still free


def test_huge_machine_refused_from_parameters_in_well_under_a_second():
    t0 = time.perf_counter()
    with pytest.raises(ResourceError, match="100000000 groups x 100000000 nodes"):
        run_schedule(TraceSpec(synthetic=10), [RunSpec("grap")], 10 ** 8, 10 ** 8)
    assert time.perf_counter() - t0 < 0.5


def test_long_run_time_refused_before_simulating(tmp_path, monkeypatch):
    """A 10^12 s run time: the per-minute samples (1.7e10) are estimated from the trace and refused before any
    simulation; with a tight memory limit a short trace is refused the same way, and a roomy one runs."""
    import evaluator.workload.run as run_mod

    f = _swf(tmp_path, "long.swf", f"{_line()}\n{_line('2', run='1000000000000')}\n")
    calls = []
    real = run_mod.simulate
    monkeypatch.setattr(run_mod, "simulate", lambda *a, **k: calls.append(1) or real(*a, **k))
    t0 = time.perf_counter()
    with pytest.raises(ResourceError) as e:
        run_schedule(TraceSpec(swf=str(f)), [RunSpec("unrestricted")], 4, 8)
    assert time.perf_counter() - t0 < 0.5 and not calls
    assert "time span 1e+12 s" in str(e.value) and "Job 2" in str(e.value)
    # the estimate is the trace's span / 60 s x 100 B: 2 days of trace = 2880 samples = 288 kB
    g = _swf(tmp_path, "two_days.swf", f"{_line()}\n{_line('2', run=str(2 * 86400))}\n")
    monkeypatch.setenv("EVALUATOR_MEMORY_LIMIT", str(int(288_000 / 0.8 * 0.9)))
    with pytest.raises(ResourceError, match="utilisation samples"):
        run_schedule(TraceSpec(swf=str(g)), [RunSpec("unrestricted")], 4, 8, model=WorkloadModel(enlarge=1))
    monkeypatch.setenv("EVALUATOR_MEMORY_LIMIT", str(10 ** 9))
    ds = run_schedule(TraceSpec(swf=str(g)), [RunSpec("unrestricted")], 4, 8, model=WorkloadModel(enlarge=1))
    assert float(ds.makespan[0]) == 2 * 86400 and calls


def test_study_with_integer_floats_is_accepted(tmp_path):
    """Integers where a number is expected (enlarge 2, load 1, a share 1, mpi_fraction 0) are valid."""
    from evaluator.sweep.schedule import load_study

    f = _study(tmp_path, "ints.yaml", "workload: {enlarge: 2, mpi_fraction: 0, mode_lo: 9}\n"
                                      "mode_mixes: {m: {adaptive: 1, custom: 0}}\nbackfill_depth: -1\n")
    f.write_text(f.read_text() + "trace: {synthetic: 20, load: 1}\n")
    study = load_study(f)
    assert study["workload"]["enlarge"] == 2 and study["trace"]["load"] == 1


def test_study_misspelt_key_refused_before_ray(tmp_path, monkeypatch):
    """A misspelt key under trace: fails at once, before Ray starts (it was a RayTaskError after 10 s)."""
    import evaluator.sweep.driver as driver
    from evaluator.sweep.schedule import run_study

    monkeypatch.setattr(driver, "_ray_init", lambda *a, **k: pytest.fail("Ray was started"))
    study = {"name": "s", "trace": {"synthetic": 20, "lod": 0.5}, "machines": {"a": [4, 8]},
             "runs": {"x": {"policy": "unrestricted"}}}
    t0 = time.perf_counter()
    with pytest.raises(ConfigError, match=r"study: trace.lod = 0.5 .*Did you mean trace.load\?"):
        run_study(study, use_ray=True, progress=False, out_dir=tmp_path / "o")
    assert time.perf_counter() - t0 < 1.0 and not (tmp_path / "o").exists()


def test_schedule_study_prints_its_table_and_plot(tmp_path, capsys, monkeypatch):
    """``schedule --study`` prints a row per machine, mix and run with its wait reduction and utilisation (read
    here from the dataset it wrote, against a direct run of one point), writes its plot and prints the paths."""
    monkeypatch.chdir(tmp_path)
    f = _study(tmp_path, "st.yaml",
               "workload: {enlarge: 1}\nmode_mixes: {paper: null}\ntrace: {synthetic: 40, load: 3}\n",
               runs="{base: {policy: unrestricted}, rr: {policy: slurm_round_robin}}",
               machines="{4x8: [4, 8], 2x16: [2, 16]}")
    assert cli.main(["schedule", "--study", str(f), "--no-ray", "--no-progress", "--out", "o"]) == 0
    out = capsys.readouterr().out.splitlines()
    nc, png = sorted((tmp_path / "o").glob("*.nc")), sorted((tmp_path / "o").glob("*-study.png"))
    assert len(nc) == 1 and len(png) == 1
    assert str(Path("o") / nc[0].name) in out and str(Path("o") / png[0].name) in out
    header = next(line for line in out if "wait reduction" in line and "policy" in line)
    assert "utilisation" in header and "mean_wait [" in header
    rows = [line for line in out if "unrestricted" in line.split() or "slurm_round_robin" in line.split()]
    assert len(rows) == 4  # 2 machines x 1 mix x 2 runs, machines in the study's order: 4x8, 2x16
    ds = xr.open_dataset(nc[0], engine="h5netcdf")
    direct = run_schedule(TraceSpec(synthetic=40, load=3), [RunSpec("unrestricted"), RunSpec("slurm_round_robin")],
                          2, 16, WorkloadModel(enlarge=1))
    assert float(direct.mean_wait[0]) > 0  # a loaded machine: the reduction is a number
    red = 1 - float(direct.mean_wait[1]) / float(direct.mean_wait[0])
    got = float(ds.wait_reduction.sel(machine="2x16", mix="paper", run="rr"))
    assert got == pytest.approx(red)
    assert f"{100 * float(direct.mean_utilisation[1]):.1f}%" in rows[3].split(), rows
    assert f"{100 * red:+.1f}%" in rows[3].split(), rows


def test_corpus_counts():
    """At least two cases in every class; ids unique."""
    ids = [c[0] for c in CLI_CASES] + [c[0] for c in API_CASES]
    assert len(ids) == len(set(ids))
    classes = {}
    for c in CLI_CASES + [(c[0], c[1]) for c in API_CASES]:
        classes[c[1]] = classes.get(c[1], 0) + 1
    assert all(classes[k] >= 2 for k in ("swf", "speedups", "study", "api", "sizes", "outputs")), classes
