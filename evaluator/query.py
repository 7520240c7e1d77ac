"""Read-only queries over sweep datasets: open, rank, choose."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from .dataset import METRICS, smaller_is_better
from .errors import ConfigError, require

__all__ = ["open_results", "best", "MINIMIZE", "MAXIMIZE"]

MAXIMIZE = tuple(m.name for m in METRICS if m.smaller_is_better is False)
MINIMIZE = tuple(m.name for m in METRICS if m.smaller_is_better)


def open_results(path: str | Path) -> xr.Dataset:
    """Open a sweep dataset (``.nc`` via h5netcdf, or a ``.zarr`` directory), fully loaded."""
    p = Path(path)
    require(p.exists(), "path", str(p), "an existing results file (.nc) or directory (.zarr)")
    if p.suffix == ".zarr" or p.is_dir():
        return xr.open_zarr(p).load()
    with xr.open_dataset(p, engine="h5netcdf") as ds:
        return ds.load()


def best(
    ds: xr.Dataset,
    metric: str = "completion_time",
    over: Sequence[str] | None = None,
    where: dict[str, Any] | Callable[[xr.Dataset], xr.DataArray] | None = None,
    n: int | None = None,
) -> pd.DataFrame:
    """Ranked table of the best feasible design points.

    Parameters
    ----------
    metric
        Variable to rank by, in the direction the metric table
        (:data:`evaluator.dataset.METRICS`) gives: smaller is better except for
        throughput and effective injection bandwidth.
    over
        Axes to choose over. For every combination of the *other* axes, the
        best point over these axes is kept. ``None``: all axes (a plain ranking).
    where
        Restrict first: a mapping ``{axis: label or [labels]}`` or a function
        of the dataset returning a boolean mask.
    n
        Keep the first ``n`` rows.
    """
    require(metric in ds.data_vars, "metric", metric, f"one of {sorted(v for v in ds.data_vars if ds[v].dtype.kind == 'f')}")
    dims = list(ds[metric].dims)
    over = list(dims if over is None else over)
    bad = [o for o in over if o not in dims]
    if bad:
        raise ConfigError("over", bad, f"axes of the dataset: {dims}")
    sub = ds
    if where is not None:
        if callable(where):
            mask = where(ds)
            sub = ds.where(mask)
        else:
            sel = {}
            for k, v in where.items():
                require(k in ds.dims, "where", k, f"axes of the dataset: {dims}")
                labels = [str(x) for x in (v if isinstance(v, (list, tuple)) else [v])]
                missing = [x for x in labels if x not in ds[k].values]
                require(not missing, f"where.{k}", missing, f"labels of {k}: {list(ds[k].values)}")
                sel[k] = labels
            sub = ds.sel(sel)
    df = sub.drop_vars([v for v in sub.data_vars if "link" in sub[v].dims]).to_dataframe().reset_index()
    if "feasible" in df:
        df = df[df["feasible"].astype(bool)]
    df = df[np.isfinite(df[metric].astype(float))]
    asc = smaller_is_better(metric)
    df = df.sort_values(metric, ascending=asc, kind="stable")
    keep = [d for d in dims if d not in over]
    if keep:
        df = df.groupby(keep, sort=False, as_index=False).head(1)
    shown = [m.name for m in METRICS if m.name != "total_bytes"]
    shown.insert(3, "bottleneck")
    cols = dims + [metric] + [c for c in shown if c != metric and c in df]
    df = df[cols].reset_index(drop=True)
    df.index = df.index + 1
    df.index.name = "rank"
    return df.head(n) if n else df
