"""Read-only queries over sweep datasets: open, rank, choose."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from .dataset import METRICS, PATH_METRIC_NAMES, PATH_METRICS, smaller_is_better
from .errors import ConfigError, is_int, require

__all__ = ["gain", "open_results", "best", "MINIMIZE", "MAXIMIZE"]

MAXIMIZE = tuple(m.name for m in METRICS if m.smaller_is_better is False)
MINIMIZE = tuple(m.name for m in METRICS if m.smaller_is_better)


_WRITTEN_BY = "a results dataset written by `evaluator sweep` or `evaluator eval`: a netCDF file (.nc) or a zarr " \
              "directory (.zarr)"
_HDF5_MAGIC = b"\x89HDF\r\n\x1a\n"
_ZARR_MARKERS = ("zarr.json", ".zgroup", ".zmetadata", ".zattrs")


def _cause(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return (text[:200] + "...") if len(text) > 200 else (text or type(exc).__name__)


def _has_hdf5_signature(fh, head: bytes) -> bool:
    """Whether the HDF5 signature is at offset 0, or after a user block (offsets 512, 1024, 2048, ...)."""
    if head == _HDF5_MAGIC:
        return True
    offset = 512
    while offset <= (1 << 24):
        fh.seek(offset)
        sig = fh.read(8)
        if len(sig) < 8:
            return False
        if sig == _HDF5_MAGIC:
            return True
        offset *= 2
    return False


def open_results(path: str | Path) -> xr.Dataset:
    """Open a sweep dataset (``.nc`` via h5netcdf, or a ``.zarr`` directory), fully loaded.

    Raises :class:`~evaluator.errors.ConfigError` naming the path when it is
    missing, unreadable, not a netCDF-4 file or zarr store, or cannot be read
    (e.g. truncated).
    """
    if not isinstance(path, (str, Path)):
        raise ConfigError("path", path, _WRITTEN_BY)
    p = Path(path)
    if not p.exists():
        raise ConfigError("path", str(p), _WRITTEN_BY, "No such file or directory.")
    if p.is_dir():
        if not any((p / m).exists() for m in _ZARR_MARKERS):
            try:
                empty = not any(p.iterdir())
            except OSError:
                empty = False
            what = "an empty directory" if empty else "a directory that is not a zarr store (it has no zarr.json " \
                                                       "or .zgroup)"
            raise ConfigError("path", str(p), _WRITTEN_BY, f"It is {what}.")
        try:
            with xr.open_zarr(p) as ds:
                return ds.load()
        except Exception as exc:  # zarr raises many types for a damaged store
            raise ConfigError("path", str(p), _WRITTEN_BY,
                              f"The zarr store could not be read ({type(exc).__name__}: {_cause(exc)}); "
                              f"it may be incomplete or damaged.") from None
    try:
        with open(p, "rb") as fh:
            head = fh.read(8)
            hdf5 = _has_hdf5_signature(fh, head)
    except PermissionError:
        raise ConfigError("path", str(p), _WRITTEN_BY, "Permission denied: the file cannot be read.") from None
    except OSError as exc:
        raise ConfigError("path", str(p), _WRITTEN_BY, f"Reading it failed: {exc.strerror or _cause(exc)}.") from None
    if not head:
        raise ConfigError("path", str(p), _WRITTEN_BY, "The file is empty (0 bytes).")
    if not hdf5:
        what = ("a netCDF-3 file; results are netCDF-4 (HDF5)" if head[:3] == b"CDF" else
                "not a netCDF-4 (HDF5) file: it does not start with the HDF5 signature")
        raise ConfigError("path", str(p), _WRITTEN_BY, f"It is {what}.")
    try:
        with xr.open_dataset(p, engine="h5netcdf") as ds:
            return ds.load()
    except Exception as exc:  # h5py/h5netcdf raise OSError, ValueError, KeyError... for a damaged file
        raise ConfigError("path", str(p), _WRITTEN_BY,
                          f"It could not be read ({_cause(exc)}); it may be truncated or damaged. Write it again "
                          f"(`evaluator sweep` resumes from its chunk files).") from None


def _metrics(ds: xr.Dataset) -> list[str]:
    """Variables a table can rank by: numeric, one value per design point (no ``link`` dimension)."""
    return sorted(str(v) for v in ds.data_vars if ds[v].dtype.kind in "fiu" and "link" not in ds[v].dims
                  and v != "feasible")


def _plain(values) -> list:
    """Labels as plain Python values (``'minimal'``, not ``np.str_('minimal')``)."""
    return [v.item() if hasattr(v, "item") else v for v in values]


def gain(ds: xr.Dataset, metric: str, axis: str, reference: Any) -> xr.DataArray:
    """How many times better than ``reference`` on ``axis`` every design point is (> 1: better).

    ``metric(reference) / metric`` for metrics where smaller is better
    (completion time: the speedup over, e.g., ``routing = dor_bgq``), and
    ``metric / metric(reference)`` otherwise (throughput). Infeasible points
    are NaN. The result keeps every axis, ``axis`` included (the reference
    itself is 1 where it is feasible).
    """
    metrics = _metrics(ds)
    if not isinstance(metric, str) or metric not in metrics:
        raise ConfigError("metric", metric, f"one of {metrics}")
    dims = [str(d) for d in ds[metric].dims]
    if axis not in dims:
        raise ConfigError("relative_to", axis, f"an axis of the dataset: {dims}")
    values = _plain(ds[axis].values)
    known = [str(v) for v in values]
    require(str(reference) in known, f"relative_to.{axis}", reference, f"a label of {axis}: {known}")
    da = ds[metric].where(ds["feasible"]) if "feasible" in ds else ds[metric]
    ref = da.sel({axis: values[known.index(str(reference))]}, drop=True)
    out = ref / da if smaller_is_better(metric) else da / ref
    out.name = f"gain_{metric}"
    out.attrs = {"long_name": f"{metric} relative to {axis} = {reference} (> 1: better)", "units": "1"}
    return out


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

    The table shows the metrics next to the ranking one; ``paths_per_pair``
    only where a ranked point has it (it is NaN for routings that are not
    path sets).
    """
    metrics = _metrics(ds)
    if not isinstance(metric, str) or metric not in metrics:
        hint = None if metrics else "The dataset has no metrics; is it a results dataset written by `evaluator " \
                                    "sweep` or `evaluator eval`?"
        raise ConfigError("metric", metric, f"one of {metrics}", hint)
    dims = [str(d) for d in ds[metric].dims]
    if isinstance(over, str):
        over = [over]
    elif over is not None and not isinstance(over, (list, tuple, set, frozenset)):
        raise ConfigError("over", over, f"a list of axes of the dataset: {dims}")
    over = list(dims if over is None else over)
    bad = [o for o in over if o not in dims]
    if bad:
        raise ConfigError("over", bad, f"axes of the dataset: {dims}",
                          None if dims else "This dataset has no axes (a single design point).")
    if n is not None and not (is_int(n) and n >= 0):
        raise ConfigError("n", n, "an integer >= 0 (rows to keep; 0 or None: all)")
    sub = ds
    if where is not None:
        if callable(where):
            mask = where(ds)
            sub = ds.where(mask)
        elif isinstance(where, dict):
            sel = {}
            for k, v in where.items():
                if k not in dims:
                    raise ConfigError("where", k, f"axes of the dataset: {dims}",
                                      None if dims else "This dataset has no axes (a single design point).")
                values = _plain(ds[k].values)
                known = [str(x) for x in values]
                labels = [str(x) for x in (v if isinstance(v, (list, tuple)) else [v])]
                missing = [x for x in labels if x not in known]
                require(not missing, f"where.{k}", missing, f"labels of {k}: {known}")
                sel[k] = [values[known.index(x)] for x in labels]
            sub = ds.sel(sel)
        else:
            raise ConfigError("where", where, "a mapping {axis: label or [labels]} or a function of the dataset "
                                              "returning a boolean mask")
    # per-link and per-phase variables would repeat every point once per link / phase
    df = sub.drop_vars([v for v in sub.data_vars if {"link", "phase"} & set(sub[v].dims)])
    df = df.drop_dims([d for d in ("link", "phase") if d in df.dims]).to_dataframe().reset_index()
    if "feasible" in df:
        df = df[df["feasible"].astype(bool)]
    df = df[np.isfinite(df[metric].astype(float))]
    asc = smaller_is_better(metric)
    df = df.sort_values(metric, ascending=asc, kind="stable")
    keep = [d for d in dims if d not in over]
    if keep:
        df = df.groupby(keep, sort=False, as_index=False).head(1)
    shown = [m.name for m in METRICS if m.name != "total_bytes"] + [m.name for m in PATH_METRICS]
    shown.insert(3, "bottleneck")
    cols = dims + [metric] + [c for c in shown if c != metric and c in df]
    df = df[cols].reset_index(drop=True)
    df.index = df.index + 1
    df.index.name = "rank"
    df = df.head(n) if n else df
    # a path-set metric no ranked point has (routings that are not path sets: NaN) is left out
    return df.drop(columns=[c for c in PATH_METRIC_NAMES if c in df and c != metric and df[c].isna().all()])
