"""One workload study: a trace, a machine, one or more policies (each with or without speedups), one dataset.

:func:`run_schedule` is what ``evaluator schedule`` calls: it loads or
generates the trace (:func:`load_trace`), applies the workload model once
(so every run sees the same sizes, modes and MPI fractions), simulates each
:class:`RunSpec` and returns one :class:`xarray.Dataset`:

* per job, dims ``(run, job)``: the variables of
  :func:`evaluator.workload.simulate` (``mode`` too);
* per month: ``mean_wait_month(run, month)`` (s), ``utilisation_quantiles(run,
  month, quantile)``, and with two runs or more ``wait_reduction(run,
  month)`` of every run against the first (Fig. 5a);
* per run: the scalars of :func:`evaluator.workload.analysis.summary` and
  ``jobs_per_s`` (simulation speed);
* which speedup table each run used, as coordinates along ``run``:
  ``speedup_table`` (its file, ``"in memory"`` or ``""`` for none),
  ``speedup_table_machine`` and ``speedup_table_baseline`` (as the table
  records them, ``"not recorded"`` otherwise); ``attrs["allow_foreign_speedups"]``.

A table computed on another machine than ``groups`` x ``nodes_per_group`` (or
recording none) is refused with a :class:`~evaluator.errors.ConfigError`
before anything runs, unless ``model.allow_foreign_speedups``
(:meth:`~evaluator.workload.SpeedupTable.check_machine`).

A synthetic trace is generated for ``total_nodes / enlarge`` nodes (Mira-like
for the paper's 82,944-node RDN and enlargement 2) and then enlarged, as an
archive trace would be.

Sizes are estimated before anything is allocated (:func:`check_sizes`): the
policies' per-node state from ``groups x nodes_per_group`` alone, the
per-minute utilisation samples from the trace's time span (its first
submission to the latest end any run can reach at the earliest); a request
beyond the memory available is refused with
:class:`~evaluator.errors.ResourceError` naming the machine or the job that
ends last.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from .._types import Shaped
from ..dataset import with_units
from ..errors import ConfigError, ConfigTypeError, check_memory
from ._check import bool_arg, float_arg, instance_arg, int_arg, mapping_arg, nearest, path_arg
from ._policy import POLICY_NAMES, check_machine_size, make_policy
from .analysis import mean_wait_by_month, summary, utilisation_by_month, wait_reduction
from .model import SpeedupTable, WorkloadModel, prepare_trace, speedup_table
from .simulate import DEFAULT_BACKFILL_DEPTH, simulate
from .swf import read_swf
from .synthetic import synthetic_trace
from .trace import Trace

__all__ = ["TraceSpec", "RunSpec", "load_trace", "load_speedups", "table_coords", "run_schedule", "SUMMARY_VARS",
           "check_sizes", "TRACE_KEYS"]

SUMMARY_VARS = {
    "mean_wait": ("s", "mean wait time"),
    "median_wait": ("s", "median wait time"),
    "p95_wait": ("s", "95th percentile of wait time"),
    "mean_bounded_slowdown": ("1", "mean bounded slowdown (10 s bound)"),
    "mean_utilisation": ("1", "mean busy nodes / total nodes over the run"),
    "makespan": ("s", "last end - first submission"),
    "backfilled_share": ("1", "share of jobs started by backfilling"),
    "mean_speedup": ("1", "mean communication speedup ratio applied"),
    "jobs_per_s": ("jobs/s", "simulation speed (wall clock)"),
}
"""Scalar metrics of one run: name -> (units, long name)."""


@dataclasses.dataclass(frozen=True)
class TraceSpec:
    """Where the jobs come from: an SWF file (``swf``), else a synthetic trace of ``synthetic`` jobs."""

    swf: str | None = None
    procs_per_node: int = 1
    synthetic: int = 10000
    load: float = 0.9
    seed: int = 0
    limit: int | None = None  # keep the first ``limit`` jobs

    def __post_init__(self):
        if self.swf is not None:
            path_arg("trace.swf", self.swf)
        int_arg("trace.procs_per_node", self.procs_per_node, 1, what="processors per node")
        int_arg("trace.synthetic", self.synthetic, 1, what="jobs of the synthetic trace")
        float_arg("trace.load", self.load, 0.0, open_min=True, what="offered load of the synthetic trace")
        int_arg("trace.seed", self.seed, 0, what="a NumPy default_rng seed")
        int_arg("trace.limit", self.limit, 1, none=True, what="the first jobs simulated")


TRACE_KEYS = tuple(f.name for f in dataclasses.fields(TraceSpec))
"""Keys of a trace specification (a study's ``trace:``)."""


@dataclasses.dataclass(frozen=True)
class RunSpec:
    """One simulation: a policy (name and parameters) and the speedup table (path or dataset; None: none)."""

    policy: str
    speedups: Any = None
    params: dict = dataclasses.field(default_factory=dict)
    label: str | None = None

    def __post_init__(self):
        if not isinstance(self.policy, str):
            raise ConfigTypeError("run.policy", self.policy, " | ".join(POLICY_NAMES))
        if self.policy not in POLICY_NAMES:
            near = nearest(self.policy, POLICY_NAMES)
            raise ConfigError("run.policy", self.policy, " | ".join(POLICY_NAMES),
                              f"Did you mean {near!r}?" if near else None)
        mapping_arg("run.params", self.params, "a mapping of the policy's parameters")
        if self.label is not None and not isinstance(self.label, str):
            raise ConfigTypeError("run.label", self.label, "a string, or None")


def load_trace(spec: TraceSpec, total_nodes: int, enlarge: float) -> Trace:
    """The raw trace (before the workload model): read from SWF, or generated for ``total_nodes / enlarge``."""
    instance_arg("trace", spec, TraceSpec, "an evaluator.workload.run.TraceSpec")
    total_nodes = int_arg("total_nodes", total_nodes, 1)
    enlarge = float_arg("enlarge", enlarge, 0.0, open_min=True)
    if spec.swf:
        tr = read_swf(spec.swf, None, spec.procs_per_node)
    else:
        base = max(1, int(round(total_nodes / enlarge)))
        tr = synthetic_trace(spec.synthetic, base, seed=spec.seed, load=spec.load)
    if spec.limit is not None:
        tr = tr.head(spec.limit)
    return tr


def load_speedups(value) -> SpeedupTable | None:
    """A :class:`SpeedupTable` from a path (netCDF written by the network evaluation), a dataset, a mapping
    ``{mode: {groups: ratio}}`` (hand-made: it records no machine), or None."""
    if value is None or isinstance(value, SpeedupTable):
        return value
    if isinstance(value, dict):  # {mode: {groups: ratio}}, hand-made
        return SpeedupTable(speedup_table(value), source="hand-made")
    if isinstance(value, (str, os.PathLike)):
        p = Path(value)
        allowed = "a netCDF file of speedups with dims (mode, groups)"
        if not p.is_file():
            raise ConfigError("speedups", str(value), allowed,
                              "It is a directory." if p.is_dir() else "No such file.")
        if p.stat().st_size == 0:
            raise ConfigError("speedups", str(value), allowed, "The file is empty (0 bytes).")
        try:
            with xr.open_dataset(p, engine="h5netcdf") as ds:
                data = ds.load()
        except Exception as exc:  # h5py/h5netcdf word a text or truncated file in several ways
            why = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise ConfigError("speedups", str(value), allowed,
                              f"It could not be read as netCDF-4/HDF5 (text, truncated or damaged?): {why}") from None
        if "speedup" not in data.data_vars and set(data.dims) != {"mode", "groups"}:  # another command's dataset
            raise ConfigError("speedups", str(value), _TABLE, _not_a_table(p, data))
        return SpeedupTable(data, source=str(value))
    return SpeedupTable(value)


_TABLE = ("a speedup table: a netCDF file with a variable 'speedup' of dims (mode, groups), as evaluator study rdn "
          "--speedup-out FILE.nc writes it")


def _not_a_table(path: Path, data: xr.Dataset) -> str:
    """What the dataset at ``path`` is instead of a speedup table (a study's or a schedule's results, ...), and
    which file or command gives the table: the speedup tables beside it, if any, else the command."""
    from ..runs import dataset_kind

    given = f"{path} (-> {os.readlink(path)})" if path.is_symlink() else str(path)
    machine, kind = str(data.attrs.get("machine", "")), dataset_kind(data)
    if kind.startswith("evaluator study rdn"):
        what = (f"the dataset of {kind[:-1]}: times and gains per pattern and job size, {len(data.data_vars)} "
                f"variables), not its speedup table")  # (kind ends with its machine's closing parenthesis)
    elif kind:
        what = f"the dataset of {kind}, not a speedup table"
    else:
        what = (f"a dataset of {len(data.data_vars)} variables, none named 'speedup', with dims "
                f"({', '.join(map(str, data.dims))}), not a speedup table")
    beside = _tables_beside(path)
    if beside:
        where = f"The speedup table{'s' if len(beside) > 1 else ''} beside it: {'; '.join(beside)}."
    else:
        m = machine[machine.find("(") + 1:machine.rfind(")")] if "(" in machine else "P,A,H,G"
        where = (f"The table is the file that evaluator study rdn --machine {m} --speedup-out FILE.nc writes (for the "
                 f"machine scheduled); give that FILE.nc to --speedups.")
    return f"{given} is {what}. {where}"


def _tables_beside(path: Path, most: int = 3) -> list[str]:
    """The speedup tables (a ``speedup`` variable of dims (mode, groups)) among the small ``.nc`` files in
    ``path``'s directory (at most 50 looked at), each with its machine and baseline."""
    found = []
    try:
        names = sorted(n for n in os.listdir(path.parent) if n.endswith(".nc") and not n.startswith("."))[:50]
    except OSError:
        return []
    for name in names:
        f = path.parent / name
        try:
            if f.resolve() == path.resolve() or f.stat().st_size > 10_000_000:
                continue
            with xr.open_dataset(f, engine="h5netcdf") as ds:
                if "speedup" in ds and set(ds["speedup"].dims) == {"mode", "groups"}:
                    found.append(f"{f} (machine {ds.attrs.get('machine', 'not recorded')}, against "
                                 f"{ds.attrs.get('baseline', 'not recorded')})")
        except Exception:  # noqa: BLE001 (not netCDF, unreadable: not a table)
            continue
        if len(found) == most:
            break
    return found


def table_coords(tables: list[SpeedupTable | None]) -> dict[str, Shaped[np.ndarray, "run"]]:
    """Which table each run used: ``speedup_table``, ``speedup_table_machine``, ``speedup_table_baseline``."""
    def col(f):
        return np.asarray(["" if t is None else f(t) for t in tables], dtype=str)

    return {"speedup_table": col(lambda t: t.source),
            "speedup_table_machine": col(lambda t: t.machine if t.machine_shape is not None else "not recorded"),
            "speedup_table_baseline": col(lambda t: t.baseline or "not recorded")}


def _labels(runs: list[RunSpec]) -> list[str]:
    out = []
    for r in runs:
        lab = r.label or (r.policy + ("+speedup" if r.speedups is not None else ""))
        while lab in out:
            lab += "'"
        out.append(lab)
    return out


_SAMPLE_BYTES = 100
"""Bytes per utilisation sample (times, busy counts, search indices, month labels, the plots' copies)."""

_JOB_BYTES = 1000
"""Bytes per job of a simulation (per-job arrays of every run, requests, heaps, the dataset)."""


def check_sizes(trace: Trace, tables: list[SpeedupTable | None] = (None,), speedup_rule: str = "time_ratio",
                step_s: float = 60.0) -> None:
    """Refuse, before anything is simulated, a trace whose per-job state or utilisation samples would not fit.

    The samples span the first submission to the last end; a run's last end is at least
    ``max(submit + run_time x (1 - mpi_fraction x largest saving of its table))`` (the saving of the largest ratio
    of the table, by ``speedup_rule``), every job starting at once, so the estimate is a lower bound: a refusal
    is certain to be needed. The summaries sample every minute, so ``min(step_s, 60)`` s is the step.
    """
    n = trace.n_jobs
    src = str(trace.attrs.get("source", "in memory"))
    check_memory("trace", f"{src}: {n} jobs", n * _JOB_BYTES * max(1, len(tables)),
                 f"the simulation's per-job state (about {_JOB_BYTES} B a job and run)",
                 "Simulate fewer jobs (--limit, trace.limit).")
    if n == 0:
        return
    sub = np.asarray(trace.submit, np.float64)
    run = np.asarray(trace.run_time, np.float64)
    mpi = np.zeros(n) if trace.mpi_fraction is None else np.asarray(trace.mpi_fraction, np.float64)
    worst, who = -np.inf, 0
    for t in tables:
        saving = 0.0
        if t is not None:
            s_max = max(float(np.max(row)) for _, row in t._rows.values())
            saving = max(0.0, 1.0 - 1.0 / s_max) if speedup_rule == "time_ratio" else min(max(s_max - 1.0, 0.0), 1.0)
        ends = sub + run * (1.0 - mpi * saving)
        i = int(np.argmax(ends))
        if ends[i] > worst:
            worst, who = float(ends[i]), i
    span = worst - float(sub.min())
    step = min(float(step_s), 60.0)
    samples = span / step
    check_memory("trace", f"{src}: time span {span:.4g} s", samples * _SAMPLE_BYTES * max(1, len(tables)),
                 f"the utilisation samples every {step:g} s ({samples:.3g} per run, about {_SAMPLE_BYTES} B each)",
                 f"Job {int(trace.job_id[who])} (submitted at {sub[who]:.4g} s, run time {run[who]:.4g} s) ends "
                 "last; drop absurd run times or simulate fewer jobs.")


def run_schedule(trace: Trace | TraceSpec, runs: list[RunSpec], groups: int, nodes_per_group: int,
                 model: WorkloadModel | None = None, backfill_depth: int | None = DEFAULT_BACKFILL_DEPTH,
                 seed: int = 0, progress: bool = False, step_s: float = 60.0) -> xr.Dataset:
    """Simulate ``trace`` under each of ``runs`` on a machine of ``groups`` x ``nodes_per_group`` nodes.

    Every argument is checked before any work (TypeError/ValueError naming it); sizes are estimated
    (:func:`check_sizes`) before the trace is prepared or simulated."""
    instance_arg("trace", trace, (Trace, TraceSpec), "an evaluator.workload.Trace or evaluator.workload.run.TraceSpec")
    if not isinstance(runs, (list, tuple)):
        raise ConfigTypeError("runs", type(runs).__name__, "a list of evaluator.workload.run.RunSpec")
    if not runs:
        raise ConfigError("runs", list(runs), "at least one run (a RunSpec with a policy)")
    for i, r in enumerate(runs):
        instance_arg(f"runs[{i}]", r, RunSpec, "an evaluator.workload.run.RunSpec(policy, speedups, params, label)")
    groups = int_arg("machine.groups", groups, 1)
    G = int_arg("machine.nodes_per_group", nodes_per_group, 1)
    model = WorkloadModel() if model is None else instance_arg("model", model, WorkloadModel,
                                                                "an evaluator.workload.WorkloadModel, or None")
    if backfill_depth is not None:
        int_arg("backfill_depth", backfill_depth, 0, none=True, what="queued jobs tried per pass; None: all")
    int_arg("seed", seed, 0, what="a NumPy default_rng seed")
    bool_arg("progress", progress)
    step_s = float_arg("step_s", step_s, 0.0, open_min=True, what="seconds between utilisation samples")
    check_machine_size(groups, G)
    total = groups * G
    tables = [load_speedups(r.speedups) for r in runs]
    for t in tables:                                  # before any run: a foreign table is refused at once
        if t is not None:
            t.check_machine(groups, G, model.allow_foreign_speedups)
    raw = load_trace(trace, total, model.enlarge) if isinstance(trace, TraceSpec) else trace
    if raw.n_jobs == 0:
        raise ConfigError("trace", str(raw.attrs.get("source", "in memory")), "a trace with at least one job: "
                          "nothing to simulate")
    prepared = prepare_trace(raw, total, G, model)
    for t in tables:  # before any run: a table without a mode the jobs run in is refused at once
        if t is not None:
            t.check_modes(prepared.modes(), model)
    check_sizes(prepared, tables, model.speedup_rule, step_s)
    labels = _labels(runs)
    results = []
    for lab, r, tab in zip(labels, runs, tables):
        pol = make_policy(r.policy, groups, G, seed=seed, **dict(r.params))
        ds = simulate(prepared, pol, speedups=tab, speedup_rule=model.speedup_rule,
                      nodes_per_group=G, backfill_depth=backfill_depth, progress=progress,
                      allow_foreign_speedups=model.allow_foreign_speedups)
        results.append(ds)
    per_job = xr.concat([d.drop_attrs() if hasattr(d, "drop_attrs") else d for d in results], dim="run",
                        coords="minimal", compat="override", combine_attrs="drop")
    per_job = per_job.assign_coords(run=("run", np.asarray(labels, dtype=str)))
    per_job = per_job.assign_coords({k: ("run", v) for k, v in table_coords(tables).items()})
    out = per_job
    mw = xr.concat([mean_wait_by_month(d) for d in results], dim="run", join="outer")
    out["mean_wait_month"] = mw.assign_coords(run=per_job.run)
    uq = xr.concat([utilisation_by_month(d, step_s) for d in results], dim="run", join="outer")
    out["utilisation_quantiles"] = uq.assign_coords(run=per_job.run)
    if len(results) > 1:
        red = xr.concat([wait_reduction(results[0], d).wait_reduction for d in results], dim="run", join="outer")
        out["wait_reduction"] = red.assign_coords(run=per_job.run)
        out["wait_reduction"].attrs.update(units="1", long_name=f"1 - mean wait(run) / mean wait({labels[0]})")
    sums = [summary(d) | {"jobs_per_s": d.attrs["n_jobs"] / max(d.attrs["simulation_s"], 1e-9)} for d in results]
    for k, (units, long) in SUMMARY_VARS.items():
        out[k] = ("run", np.array([s[k] for s in sums]), {"units": units, "long_name": long})
    first = results[0].attrs
    out.attrs.update({k: v for k, v in first.items() if k not in ("policy", "speedups", "simulation_s")})
    out.attrs.update({"policies": ", ".join(r.policy for r in runs), "groups": groups,
                      "trace": str(raw.attrs.get("source", "")),
                      "allow_foreign_speedups": int(bool(model.allow_foreign_speedups))})
    return with_units(out)
