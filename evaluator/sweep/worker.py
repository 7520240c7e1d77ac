"""The worker side of a sweep: build and evaluate the points of one chunk (one bucket)."""

from __future__ import annotations

import resource
import time
from typing import Any

import numpy as np

from .. import config as C
from ..errors import ConfigError, reason
from ..evaluate import evaluate_batch
from ..kernel import batch_kernel
from ..routing import build_routing
from .jobs import evaluate_jobs_chunk
from .plan import SweepPlan

__all__ = ["evaluate_chunk", "peak_rss_mb"]


_CACHE: dict[str, Any] = {}


def _cached(kind: str, cfg_obj, builder):
    key = kind + repr(cfg_obj)
    if key not in _CACHE:
        if len(_CACHE) > 256:
            _CACHE.clear()
        _CACHE[key] = builder()
    return _CACHE[key]


def evaluate_chunk(plan: SweepPlan, flat: np.ndarray) -> dict[str, Any]:
    """Build and evaluate the points ``flat`` of one chunk (one bucket). Pure function of its inputs."""
    if C.has_jobs(plan.point_config(int(flat[0]))):
        out = evaluate_jobs_chunk(plan, flat, plan.point_config)
        out["peak_rss_mb"] = peak_rss_mb()
        return out
    t0 = time.perf_counter()
    n = flat.size
    reasons = [""] * n
    ok_idx, traffics, placements = [], [], []
    topo = routing = None
    for j, f in enumerate(flat):
        obj = plan.point_config(int(f))
        try:
            topo = _cached("topology", obj.topology, lambda: C.build_topology(obj.topology))
            routing = C.build_routing_spec(obj.routing)
            tr = _cached("traffic" + repr(obj.topology), obj.traffic, lambda: C.build_traffic(obj.traffic, topo))
            pl = C.build_placement(obj.placement, topo, obj.traffic, tr.n_tasks, obj.topology)
            if tr.n_tasks != pl.n_tasks:
                raise ConfigError("placement.n_tasks", pl.n_tasks, f"the traffic's task count {tr.n_tasks}")
            build_routing(topo, routing)  # routing/topology mismatch -> infeasible, not a crash
        except ConfigError as exc:
            reasons[j] = reason(exc)
            continue
        ok_idx.append(j)
        traffics.append(tr)
        placements.append(pl)
    t_build = time.perf_counter() - t0
    out: dict[str, Any] = {"flat": flat, "reason": reasons, "build_s": t_build, "compile_s": 0.0, "eval_s": 0.0}
    if ok_idx:
        kern = batch_kernel(topo, routing, plan.keep_link_load)
        before = kern.fn._cache_size()
        t1 = time.perf_counter()
        # Pad every call to the full chunk (repeating the last feasible point) so that chunks with
        # fewer feasible points, and a bucket's last chunk, reuse the bucket's compilation.
        pad = plan.chunk_size - len(traffics)
        res = evaluate_batch(topo, routing, traffics + traffics[-1:] * pad, placements + placements[-1:] * pad,
                             keep_link_load=plan.keep_link_load, chunk_size=plan.chunk_size)
        res.metrics = {k: v[: len(ok_idx)] for k, v in res.metrics.items()}
        if res.link_load is not None:
            res.link_load = res.link_load[: len(ok_idx)]
        dt = time.perf_counter() - t1
        if kern.fn._cache_size() > before:
            out["compile_s"] = dt
        else:
            out["eval_s"] = dt
        out["ok"] = np.asarray(ok_idx, dtype=np.int64)
        out["class_names"] = list(topo.class_names)
        out["metrics"] = {k: np.asarray(v) for k, v in res.metrics.items()}
        out["bottleneck"] = res.bottleneck_names().tolist()
        if res.phases is not None:
            out["phases"] = {"names": list(res.phases["names"]),
                             "phase_completion_time": res.phases["phase_completion_time"][: len(ok_idx)],
                             "phase_total_bytes": res.phases["phase_total_bytes"][: len(ok_idx)],
                             "phase_bottleneck": res.phase_bottleneck_names()[: len(ok_idx)].tolist()}
        if res.link_load is not None:
            out["link_load"] = res.link_load
            out["n_links"] = topo.n_links
    out["peak_rss_mb"] = peak_rss_mb()
    return out


def peak_rss_mb() -> float:
    """Peak resident memory of this process, MB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
