"""Read-only summaries of simulation datasets (Feng et al. Fig. 5).

* :func:`months`: each job's month of submission: the calendar month
  (``"2019-01"``) when the trace knows its start (``unix_start_time``, from
  the SWF header ``UnixStartTime``), else 30-day periods from the trace's
  start (``"M01"``, ``"M02"``, ...);
* :func:`mean_wait_by_month`: mean wait time (s) per month;
* :func:`wait_reduction`: per month, ``1 - mean wait(new) / mean wait(base)``
  between two runs of the same trace (Fig. 5a; 0.26 = 26% shorter waits);
* :func:`utilisation`: busy nodes / total nodes sampled every ``step_s``
  seconds (one minute, as in the paper) from the first submission to the
  last end; :func:`utilisation_by_month`: its quantiles per month (the box
  plots of Fig. 5b).
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from .._types import Shaped
from ..errors import ConfigError, check_memory

__all__ = ["months", "mean_wait_by_month", "wait_reduction", "utilisation", "utilisation_by_month", "summary",
           "MONTH_S"]

MONTH_S = 30 * 86400
"""Length of a "month" (s) when a trace has no calendar start."""


def _month_labels(t: np.ndarray, unix_start: int | None, t0: float) -> np.ndarray:
    if unix_start is not None:
        import pandas as pd

        stamps = pd.to_datetime(np.asarray(t, dtype=np.float64) + float(unix_start), unit="s", utc=True)
        return np.asarray(stamps.strftime("%Y-%m"), dtype=str)
    idx = np.floor((np.asarray(t, dtype=np.float64) - t0) / MONTH_S).astype(np.int64) + 1
    return np.asarray([f"M{i:02d}" for i in idx], dtype=str)


def _unix_start(ds) -> int | None:
    v = ds.attrs.get("unix_start_time")
    return None if v is None else int(v)


def months(ds: xr.Dataset) -> Shaped[np.ndarray, "job"]:
    """Each job's month of submission (labels sort in time order)."""
    return _month_labels(ds.submit.values, _unix_start(ds), float(ds.submit.values.min()))


def mean_wait_by_month(ds: xr.Dataset) -> xr.DataArray:
    """Mean wait time (s) of the jobs submitted in each month."""
    m = months(ds)
    labels = np.unique(m)
    w = ds.wait.values
    vals = np.array([w[m == k].mean() for k in labels])
    return xr.DataArray(vals, dims="month", coords={"month": labels}, name="mean_wait",
                        attrs={"units": "s", "long_name": "mean wait time of the jobs submitted in the month"})


def _same_trace(base: xr.Dataset, new: xr.Dataset) -> None:
    if base.sizes["job"] != new.sizes["job"] or not np.array_equal(base.job.values, new.job.values) \
            or not np.array_equal(base.submit.values, new.submit.values):
        raise ConfigError("runs", (base.attrs.get("policy"), new.attrs.get("policy")),
                          "two simulations of the same trace (same jobs and submit times)")


def wait_reduction(base: xr.Dataset, new: xr.Dataset) -> xr.Dataset:
    """Per month: mean waits of both runs and the reduction ``1 - new / base`` (NaN where base waits 0)."""
    _same_trace(base, new)
    wb, wn = mean_wait_by_month(base), mean_wait_by_month(new)
    with np.errstate(divide="ignore", invalid="ignore"):
        red = np.where(wb.values > 0, 1.0 - wn.values / wb.values, np.nan)
    total_b, total_n = float(base.wait.mean()), float(new.wait.mean())
    ds = xr.Dataset({
        "mean_wait_base": wb, "mean_wait_new": wn,
        "wait_reduction": ("month", red, {"units": "1", "long_name": "1 - mean wait(new) / mean wait(base)"}),
    })
    ds.attrs.update({"base_policy": str(base.attrs.get("policy", "")), "new_policy": str(new.attrs.get("policy", "")),
                     "overall_wait_reduction": (1.0 - total_n / total_b) if total_b > 0 else float("nan")})
    return ds


def utilisation(ds: xr.Dataset, step_s: float = 60.0) -> xr.DataArray:
    """Busy nodes / total nodes every ``step_s`` seconds over ``[first submit, last end)``."""
    if isinstance(step_s, bool) or not isinstance(step_s, (int, float, np.integer, np.floating)) \
            or not np.isfinite(step_s) or not step_s > 0:
        raise ConfigError("utilisation.step_s", step_s, "a finite number of seconds > 0")
    total = int(ds.attrs["total_nodes"])
    start, end, nodes = ds.start.values, ds.end.values, ds.nodes.values.astype(np.int64)
    if start.size == 0:
        raise ConfigError("utilisation", "a dataset of 0 jobs", "a simulation of at least one job")
    t0, t1 = float(ds.submit.values.min()), float(end.max())
    n = (t1 - t0) / float(step_s)
    check_memory("utilisation.step_s", float(step_s), 100.0 * n,
                 f"{n:.3g} samples from {t0:.4g} s to {t1:.4g} s (about 100 B each)")
    t = t0 + step_s * np.arange(max(1, int(np.ceil((t1 - t0) / step_s))))
    os_ = np.argsort(start, kind="stable")
    oe = np.argsort(end, kind="stable")
    cs = np.concatenate([[0], np.cumsum(nodes[os_])])
    ce = np.concatenate([[0], np.cumsum(nodes[oe])])
    busy = cs[np.searchsorted(start[os_], t, side="right")] - ce[np.searchsorted(end[oe], t, side="right")]
    return xr.DataArray(busy / total, dims="time", coords={"time": ("time", t, {"units": "s"})},
                        name="utilisation", attrs={"units": "1", "long_name": "busy nodes / total nodes",
                                                   "step_s": float(step_s)})


QUANTILES = (0.0, 0.25, 0.5, 0.75, 1.0)


def utilisation_by_month(ds: xr.Dataset, step_s: float = 60.0, quantiles=QUANTILES) -> xr.DataArray:
    """Quantiles of the per-``step_s`` utilisation samples in each month (dims ``month``, ``quantile``)."""
    u = utilisation(ds, step_s)
    m = _month_labels(u.time.values, _unix_start(ds), float(ds.submit.values.min()))
    labels = np.unique(m)
    q = np.array([np.quantile(u.values[m == k], quantiles) for k in labels])
    return xr.DataArray(q, dims=("month", "quantile"), coords={"month": labels, "quantile": list(quantiles)},
                        name="utilisation_quantiles",
                        attrs={"units": "1", "long_name": "quantiles of per-minute utilisation in the month"})


def summary(ds: xr.Dataset) -> dict[str, float]:
    """Scalar metrics of one run: mean / median / 95th-percentile wait (s), mean bounded slowdown (10 s bound),
    mean utilisation over the run, makespan (s), backfilled share, mean speedup."""
    w = ds.wait.values
    run = ds.run_time.values
    bsld = np.maximum((w + run) / np.maximum(run, 10.0), 1.0)
    u = utilisation(ds)
    return {"mean_wait": float(w.mean()), "median_wait": float(np.median(w)), "p95_wait": float(np.quantile(w, 0.95)),
            "mean_bounded_slowdown": float(bsld.mean()), "mean_utilisation": float(u.mean()),
            "makespan": float(ds.end.values.max() - ds.submit.values.min()),
            "backfilled_share": float(ds.backfilled.values.mean()), "mean_speedup": float(ds.speedup.values.mean())}
