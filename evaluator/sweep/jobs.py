"""Sweeps of several-jobs evaluations (a ``jobs`` list or a background load in the config).

Each point is one :func:`evaluator.jobs.evaluate_jobs` call (jobs of one
point share the kernel's compilations with every other point of the same
topology and routing). The dataset has the sweep's axes plus ``job`` (and
``other_job``): ``completion_time``, ``completion_time_alone``, ``slowdown``
and ``total_bytes`` per job, ``interference[job, other_job]``, and the
scalar ``makespan``, with ``feasible`` and ``reason`` per point.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import xarray as xr

from .. import config as C
from .._types import PointInts
from ..dataset import JOB_METRICS, with_units
from ..errors import ConfigError, reason
from ..jobs import evaluate_jobs

__all__ = ["JOB_VARS", "evaluate_jobs_chunk", "jobs_dataset"]

JOB_VARS = ("completion_time", "completion_time_alone", "slowdown", "total_bytes")
"""Per-job variables a jobs sweep keeps (besides ``interference`` and ``makespan``)."""


_TOPOLOGIES: dict[str, Any] = {}


def evaluate_jobs_chunk(plan, flat: PointInts, point_config) -> dict[str, Any]:
    """Build and evaluate the points ``flat`` of one chunk, one several-jobs evaluation each."""
    t0 = time.perf_counter()
    n = flat.size
    reasons = [""] * n
    ok, rows = [], []
    for j, f in enumerate(flat):
        obj = point_config(int(f))
        try:
            key = repr(obj.topology)
            if key not in _TOPOLOGIES:  # one object per topology: its compiled kernels are reused by every point
                _TOPOLOGIES.clear()
                _TOPOLOGIES[key] = C.build_topology(obj.topology)
            jp = C.build_jobs(obj, _TOPOLOGIES[key])
            ds = evaluate_jobs(jp.topology, list(jp.jobs), jp.routing, jp.background,
                               exclusive_nodes=jp.exclusive_nodes, interference=jp.interference)
        except ConfigError as exc:
            reasons[j] = reason(exc)
            continue
        ok.append(j)
        rows.append({**{k: ds[k].values for k in JOB_VARS}, "interference": ds.interference.values,
                     "makespan": float(ds.makespan), "names": [str(x) for x in ds.job.values]})
    out: dict[str, Any] = {"flat": flat, "reason": reasons, "build_s": 0.0, "compile_s": 0.0,
                           "eval_s": time.perf_counter() - t0, "jobs": True}
    if ok:
        out["ok"] = np.asarray(ok, dtype=np.int64)
        out["job_names"] = rows[0]["names"]
        J = max(len(r["names"]) for r in rows)
        for k in JOB_VARS:
            arr = np.full((len(ok), J), np.nan)
            for i, r in enumerate(rows):
                arr[i, :len(r[k])] = r[k]
            out[k] = arr
        inter = np.full((len(ok), J, J), np.nan)
        for i, r in enumerate(rows):
            m = r["interference"]
            inter[i, :m.shape[0], :m.shape[1]] = m
        out["interference"] = inter
        out["makespan"] = np.array([r["makespan"] for r in rows])
    return out


def jobs_dataset(plan, results: list[dict], coords: dict, attrs: dict) -> xr.Dataset:
    """The dataset of a jobs sweep from its chunk results (any order)."""
    n = plan.n_points
    names: list[str] | None = None
    J = 1
    for res in results:
        if "ok" in res:
            J = max(J, res["completion_time"].shape[1])
            names = names or list(res["job_names"])
    names = (names or [])[:J] + [f"job{j}" for j in range(len(names or []), J)]
    per_job = {k: np.full((n, J), np.nan) for k in JOB_VARS}
    inter = np.full((n, J, J), np.nan)
    makespan = np.full(n, np.nan)
    feasible = np.zeros(n, dtype=bool)
    reasons = np.full(n, "", dtype=object)
    for res in results:
        flat = res["flat"]
        reasons[flat] = res["reason"]
        if "ok" not in res:
            continue
        ok = flat[res["ok"]]
        feasible[ok] = True
        w = res["completion_time"].shape[1]
        for k in JOB_VARS:
            per_job[k][ok, :w] = res[k]
        inter[ok, :w, :w] = res["interference"]
        makespan[ok] = res["makespan"]
    dims = tuple(ax.name for ax in plan.axes)
    shape = plan.shape
    meta = {m.name: m.attrs for m in JOB_METRICS}
    data: dict[str, Any] = {k: (dims + ("job",), per_job[k].reshape(shape + (J,)), meta[k]) for k in JOB_VARS}
    data["interference"] = (dims + ("job", "other_job"), inter.reshape(shape + (J, J)), meta["interference"])
    data["makespan"] = (dims, makespan.reshape(shape), meta["makespan"])
    data["feasible"] = (dims, feasible.reshape(shape), {"long_name": "whether the point's config is valid"})
    data["reason"] = (dims, reasons.astype(str).reshape(shape),
                      {"long_name": "why the point is infeasible: 'field: what is allowed' ('' if feasible)"})
    all_coords = dict(coords)
    all_coords["job"] = ("job", np.asarray(names, dtype=str))
    all_coords["other_job"] = ("other_job", np.asarray(names, dtype=str))
    ds = xr.Dataset(data, coords=all_coords)
    ds.attrs.update(attrs)
    return with_units(ds)
