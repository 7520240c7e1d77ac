"""Merge the persisted chunks of a sweep into one dataset (independent of the order chunks ran in)."""

from __future__ import annotations

import datetime as _dt
import json
from collections.abc import Callable
from typing import Any

import numpy as np
import xarray as xr

from .. import io
from .._version import __version__
from ..dataset import METRIC_NAMES, results_dataset
from ..errors import require
from .jobs import jobs_dataset
from .plan import SweepPlan

__all__ = ["assemble"]


def _json_default(o):
    if isinstance(o, (np.integer,)):
        return int(o)
    if isinstance(o, (np.floating,)):
        return float(o)
    return str(o)


def assemble(plan: SweepPlan, chunk_ids: list[str], manifest: dict,
             read_chunk: Callable[[SweepPlan, str], dict]) -> xr.Dataset:
    """The sweep's dataset: one dimension per axis, metrics of the metric table, ``feasible`` and ``reason``.

    ``timing_json`` is left to the driver, which measures its peak memory after this assembly.
    """
    n = plan.n_points
    ids = sorted(chunk_ids)
    first = read_chunk(plan, ids[0]) if ids else {}
    if first.get("jobs"):  # a several-jobs sweep (every point of a sweep is of one sort)
        results = [first] + [read_chunk(plan, cid) for cid in ids[1:]]
        return jobs_dataset(plan, results, _coords(plan), _attrs(plan, manifest, results))
    results = (first if i == 0 else read_chunk(plan, cid) for i, cid in enumerate(ids))  # one chunk at a time
    vals = {k: np.full(n, np.nan) for k in METRIC_NAMES}
    feasible = np.zeros(n, dtype=bool)
    reason = np.full(n, "", dtype=object)
    bottleneck = np.full(n, "", dtype=object)
    class_max: dict[str, np.ndarray] = {}
    link_load = None
    phases = None
    for res in results:
        flat = res["flat"]
        reason[flat] = res["reason"]
        if "ok" not in res:
            continue
        ok = flat[res["ok"]]
        feasible[ok] = True
        for k in METRIC_NAMES:
            vals[k][ok] = res["metrics"][k]
        bottleneck[ok] = res["bottleneck"]
        if "phases" in res:
            ph = res["phases"]
            P = len(ph["names"])
            if phases is None:
                phases = {"names": list(ph["names"]), "phase_completion_time": np.full((n, P), np.nan),
                          "phase_total_bytes": np.full((n, P), np.nan),
                          "phase_bottleneck": np.full((n, P), "", dtype=object)}
            require(len(phases["names"]) == P, "traffic", "phased", "the same number of phases at every point")
            for k in ("phase_completion_time", "phase_total_bytes", "phase_bottleneck"):
                phases[k][ok] = np.asarray(ph[k])
        for c, cname in enumerate(res["class_names"]):
            arr = class_max.setdefault(cname, np.full(n, np.nan))
            arr[ok] = res["metrics"]["max_load_class"][:, c]
        if "link_load" in res:
            if link_load is None:
                nl = int(res["n_links"])
                require(n * nl <= 2e8, "sweep.keep_link_load", True, "sweeps of at most 2e8 point-links")
                link_load = np.full((n, nl), np.nan)
            require(link_load.shape[1] == res["link_load"].shape[1], "sweep.keep_link_load", True,
                    "a single topology across the sweep (link counts differ)")
            link_load[ok] = res["link_load"]
    coords = _coords(plan)
    attrs = _attrs(plan, manifest, [])
    attrs["n_feasible"] = int(feasible.sum())
    return results_dataset(
        tuple(ax.name for ax in plan.axes), plan.shape, vals, {c: class_max[c] for c in sorted(class_max)},
        bottleneck, feasible=feasible, reason=reason, coords=coords, link_load=link_load, attrs=attrs, phases=phases)


def _coords(plan: SweepPlan) -> dict[str, Any]:
    return {ax.name: (ax.name, np.asarray(ax.labels, dtype=str), {"long_name": ", ".join(ax.keys)})
            for ax in plan.axes}


def _attrs(plan: SweepPlan, manifest: dict, results: list[dict]) -> dict[str, Any]:
    n_feasible = sum(len(r["ok"]) for r in results if "ok" in r)
    return {
        "title": f"evaluator sweep {plan.name}",
        "sweep": plan.name,
        "run_id": plan.run_id,
        "config_yaml": plan.config_yaml,
        "axes_json": json.dumps([{"name": a.name, "keys": list(a.keys), "values": [list(v) for v in a.values]}
                                 for a in plan.axes], default=_json_default),
        "evaluator_version": __version__,
        "git_commit": io.git_commit(),
        "seeds": np.asarray(plan.seeds, dtype=np.int64),
        "n_points": int(plan.n_points),
        "n_feasible": int(n_feasible),
        "start_time": manifest["start_time"],
        "end_time": _dt.datetime.now(_dt.timezone.utc).isoformat(),
        "Conventions": "CF-1.8",
    }
