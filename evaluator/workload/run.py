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
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from ..errors import ConfigError, positive_int
from ._policy import make_policy
from .analysis import mean_wait_by_month, summary, utilisation_by_month, wait_reduction
from .model import SpeedupTable, WorkloadModel, prepare_trace, speedup_table
from .simulate import DEFAULT_BACKFILL_DEPTH, simulate
from .swf import read_swf
from .synthetic import synthetic_trace
from .trace import Trace

__all__ = ["TraceSpec", "RunSpec", "load_trace", "load_speedups", "table_coords", "run_schedule", "SUMMARY_VARS"]

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


@dataclasses.dataclass(frozen=True)
class RunSpec:
    """One simulation: a policy (name and parameters) and the speedup table (path or dataset; None: none)."""

    policy: str
    speedups: Any = None
    params: dict = dataclasses.field(default_factory=dict)
    label: str | None = None


def load_trace(spec: TraceSpec, total_nodes: int, enlarge: float) -> Trace:
    """The raw trace (before the workload model): read from SWF, or generated for ``total_nodes / enlarge``."""
    if spec.swf:
        tr = read_swf(spec.swf, None, spec.procs_per_node)
    else:
        base = max(1, int(round(total_nodes / float(enlarge))))
        tr = synthetic_trace(spec.synthetic, base, seed=spec.seed, load=spec.load)
    if spec.limit is not None:
        tr = tr.head(positive_int("trace.limit", spec.limit))
    return tr


def load_speedups(value) -> SpeedupTable | None:
    """A :class:`SpeedupTable` from a path (netCDF written by the network evaluation), a dataset, a mapping
    ``{mode: {groups: ratio}}`` (hand-made: it records no machine), or None."""
    if value is None or isinstance(value, SpeedupTable):
        return value
    if isinstance(value, dict):  # {mode: {groups: ratio}}, hand-made
        return SpeedupTable(speedup_table({m: {int(g): float(v) for g, v in row.items()} for m, row in value.items()}),
                            source="hand-made")
    if isinstance(value, (str, os.PathLike)):
        p = Path(value)
        if not p.is_file():
            raise ConfigError("speedups", str(value), "a netCDF file of speedups with dims (mode, groups)")
        with xr.open_dataset(p, engine="h5netcdf") as ds:
            return SpeedupTable(ds.load(), source=str(value))
    return SpeedupTable(value)


def table_coords(tables: list[SpeedupTable | None]) -> dict[str, np.ndarray]:
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


def run_schedule(trace: Trace | TraceSpec, runs: list[RunSpec], groups: int, nodes_per_group: int,
                 model: WorkloadModel | None = None, backfill_depth: int | None = DEFAULT_BACKFILL_DEPTH,
                 seed: int = 0, progress: bool = False, step_s: float = 60.0) -> xr.Dataset:
    """Simulate ``trace`` under each of ``runs`` on a machine of ``groups`` x ``nodes_per_group`` nodes."""
    groups = positive_int("machine.groups", groups)
    G = positive_int("machine.nodes_per_group", nodes_per_group)
    model = model or WorkloadModel()
    if not runs:
        raise ConfigError("runs", runs, "at least one run (a policy)")
    total = groups * G
    raw = load_trace(trace, total, model.enlarge) if isinstance(trace, TraceSpec) else trace
    prepared = prepare_trace(raw, total, G, model)
    labels = _labels(runs)
    tables = [load_speedups(r.speedups) for r in runs]
    for t in tables:                                  # before any run: a foreign table is refused at once
        if t is not None:
            t.check_machine(groups, G, model.allow_foreign_speedups)
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
    return out
