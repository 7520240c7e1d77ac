"""The sweep driver: run the chunks of a plan on Ray (or in this process), persist, assemble, write.

Points are grouped into shape buckets and cut into fixed-size chunks (see
:class:`~evaluator.sweep.plan.SweepPlan`), sent to Ray tasks (an embedded Ray
by default, ``ray.address=auto`` or a URL for a cluster) and persisted as they
finish (:mod:`~evaluator.sweep.store`); a rerun of the same config computes
only the missing chunks, so a sweep killed at any moment (even ``kill -9``)
resumes without losing or repeating points.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import xarray as xr

from .. import io
from ..config import RayConfig
from . import store
from .assemble import assemble
from .plan import SweepPlan
from .worker import evaluate_chunk, peak_rss_mb

__all__ = ["run_sweep", "write_results", "VOLATILE_ATTRS"]

_PACKAGE_DIR = Path(__file__).resolve().parent.parent

def _ray_init(ray_cfg):
    import ray

    if ray.is_initialized():
        return ray
    kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False, "configure_logging": False}
    if ray_cfg.address:
        kwargs["address"] = ray_cfg.address
        # ship this source tree to the cluster's workers (its dependencies must be installed there)
        kwargs["runtime_env"] = {"py_modules": [str(_PACKAGE_DIR)],
                                 "env_vars": {"JAX_ENABLE_X64": "1"}}
    else:
        if ray_cfg.num_cpus:
            kwargs["num_cpus"] = int(ray_cfg.num_cpus)
        # workers import the package from this source tree
        kwargs["runtime_env"] = {"env_vars": {"JAX_PLATFORMS": os.environ.get("JAX_PLATFORMS", ""),
                                              "PYTHONPATH": str(_PACKAGE_DIR.parent)}}
    ray.init(**kwargs)
    return ray


def run_sweep(plan: SweepPlan, ray_cfg=None, progress: bool = True, stop_after: int | None = None) -> Path | None:
    """Run (or resume) a sweep and write its dataset; return the dataset path.

    ``stop_after`` (tests) returns ``None`` after that many chunks were
    persisted in this call, as an interrupted run would.
    """
    from tqdm.auto import tqdm

    t_start = time.perf_counter()
    timings = {"expand_s": 0.0, "build_s": 0.0, "compile_s": 0.0, "eval_s": 0.0, "write_s": 0.0}
    manifest = store.manifest(plan)
    chunks = plan.chunks()
    done = store.done_chunks(plan)
    todo = [(cid, pts) for cid, pts in chunks if cid not in done]
    timings["expand_s"] = time.perf_counter() - t_start
    n_done_pts = sum(pts.size for cid, pts in chunks if cid in done)
    bar = tqdm(total=plan.n_points, initial=n_done_pts, unit="pt", desc=plan.name, disable=not progress,
               smoothing=0.1, dynamic_ncols=True)
    finished = 0
    use_ray = ray_cfg is None or bool(ray_cfg.enabled)
    try:
        if use_ray and todo:
            ray = _ray_init(ray_cfg or _default_ray_cfg())
            remote = ray.remote(max_retries=int(getattr(ray_cfg, "max_retries", 3)), retry_exceptions=False)(
                _remote_chunk)
            plan_ref = ray.put(plan)
            ncpu = int(ray.cluster_resources().get("CPU", 1))
            limit = int(getattr(ray_cfg, "max_in_flight", None) or 2 * max(ncpu, 1))
            pending: dict[Any, str] = {}
            queue = list(todo)
            while queue or pending:
                while queue and len(pending) < limit:
                    cid, pts = queue.pop(0)
                    pending[remote.remote(plan_ref, pts)] = cid
                ready, _ = ray.wait(list(pending), num_returns=1)
                for ref in ready:
                    cid = pending.pop(ref)
                    res = ray.get(ref)
                    _persist(plan, cid, res, timings, bar)
                    finished += 1
                    if stop_after is not None and finished >= stop_after:
                        for r in pending:
                            ray.cancel(r, force=True)
                        return None
        else:
            for cid, pts in todo:
                res = evaluate_chunk(plan, pts)
                _persist(plan, cid, res, timings, bar)
                finished += 1
                if stop_after is not None and finished >= stop_after:
                    return None
    finally:
        bar.close()
    t_w = time.perf_counter()
    timings["wall_s"] = time.perf_counter() - t_start
    timings["driver_peak_rss_mb"] = peak_rss_mb()
    ds = assemble(plan, [cid for cid, _ in chunks], manifest, timings, store.read_chunk)
    path = write_results(ds, plan)
    timings["write_s"] += time.perf_counter() - t_w
    store.clear(plan)
    return path


def _default_ray_cfg() -> RayConfig:
    return RayConfig()


def _remote_chunk(plan, pts):
    import jax

    jax.config.update("jax_enable_x64", True)
    if os.environ.get("EVALUATOR_TEST_CRASH_ONCE"):
        marker = Path(os.environ["EVALUATOR_TEST_CRASH_ONCE"])
        if not marker.exists():
            marker.write_text("crashed")
            os._exit(1)  # simulate a killed worker: Ray must retry the task
    return evaluate_chunk(plan, pts)


def _persist(plan, cid, res, timings, bar):
    t = time.perf_counter()
    store.write_chunk(plan, cid, res)
    timings["write_s"] += time.perf_counter() - t
    for k in ("build_s", "compile_s", "eval_s"):
        timings[k] += float(res.get(k, 0.0))
    timings["worker_peak_rss_mb"] = max(timings.get("worker_peak_rss_mb", 0.0), float(res.get("peak_rss_mb", 0.0)))
    bar.update(int(res["flat"].size))


VOLATILE_ATTRS = ("start_time", "end_time", "timing_json")
"""Attrs that record when and how fast a run went; they differ between runs of one sweep."""


def write_results(ds: xr.Dataset, plan: SweepPlan) -> Path:
    """Write atomically to ``<output_dir>/<sweep>/<run_id>.nc`` (or ``.zarr``)."""
    if plan.fmt == "zarr":
        return io.write_zarr(ds, plan.out_dir / f"{plan.run_id}.zarr")
    return io.write_netcdf(ds, plan.out_dir / f"{plan.run_id}.nc")
