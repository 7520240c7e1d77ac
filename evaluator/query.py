"""Read-only queries over result datasets: open, rank, choose.

Rankings follow the one metric table (:data:`evaluator.dataset.TABLE`): its direction for every variable a
command writes; a variable without one is refused.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from .dataset import DRAW_QUANTILE, ROW_LABELS, TABLE, check_draw_axes, draw_stats, first_rankable, predicted_time, rankable, shown, \
    smaller_is_better
from .dataset import metric as metric_entry
from .display import rank_labels
from .errors import ConfigError, ConfigTypeError, StorageError, WordedError, cause_text, is_int, require
from .io import zarr_damage
from .runs import feasible_lost, refuse_unfinished, unreadable_chunk

__all__ = ["gain", "open_results", "best", "default_metric", "draw_summary", "draw_stats", "tied", "rank_labels", "TIE_RTOL",
           "MINIMIZE", "MAXIMIZE", "DRAW_QUANTILE"]

TIE_RTOL = 1e-9
"""Values equal within this relative difference are tied: they share a rank (shown ``1=``) and neither is named the
winner of the other (``DESIGN.md``, "Ties are ties")."""


def tied(a: float, b: float, rtol: float = TIE_RTOL) -> bool:
    """Whether ``a`` and ``b`` are equal within ``rtol`` of the larger magnitude (both zero: tied)."""
    for name, v in (("a", a), ("b", b), ("rtol", rtol)):
        require(isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_)),
                name, v, "a number")
    a, b = float(a), float(b)  # (an infinite value is tied with itself only: inf - x <= rtol * inf held for any x)
    return a == b or (math.isfinite(a) and math.isfinite(b) and abs(a - b) <= rtol * max(abs(a), abs(b)))


def _ratio(winner: float, other: float, smaller: bool) -> float:
    """How many times better ``winner`` is than ``other`` (>= 1); NaN unless both are positive."""
    return float(_ratios(np.float64(winner), np.float64(other), smaller))


def _tied_arrays(a: np.ndarray, b: np.ndarray, rtol: float = TIE_RTOL) -> np.ndarray:
    """:func:`tied` of two arrays, element by element."""
    with np.errstate(invalid="ignore"):
        return (a == b) | (np.isfinite(a) & np.isfinite(b) & (np.abs(a - b) <= rtol * np.maximum(np.abs(a), np.abs(b))))


def _ratios(winner: np.ndarray, other: np.ndarray, smaller: bool) -> np.ndarray:
    """How many times better each ``winner`` is than its ``other``, element by element: ``other / winner`` where
    smaller is better, ``winner / other`` where larger is; infinite where the winner's time is 0 (a job without
    traffic) or its throughput infinite against a finite one; NaN where either is negative or the ratio has no
    value (0 / 0, inf / inf)."""
    winner, other = np.asarray(winner, dtype=float), np.asarray(other, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = other / winner if smaller else winner / other
        ok = (winner >= 0) & (other >= 0) & ~np.isnan(r)
    return np.where(ok, r, np.nan)


def _ranks(values: np.ndarray) -> np.ndarray:
    """1-based ranks of ``values`` (sorted best first): a value tied (:func:`tied`) with the first of its block shares
    that value's rank. Only rows tied with the row before them are walked one by one (a row not tied with its
    predecessor starts a block: further from the block's first row, it is not tied with it either)."""
    n = len(values)
    if n < 2:
        return np.arange(1, n + 1)
    # runs of equal values first (a sweep's seeds often give one time many times): the walk is over the runs
    new_run = np.ones(n, bool)
    new_run[1:] = values[1:] != values[:-1]
    first = np.flatnonzero(new_run)  # each run's first row
    v = values[first]
    block = first.copy()  # the first row of each run's block
    adjacent = np.zeros(len(v), bool)
    adjacent[1:] = _tied_arrays(v[1:], v[:-1])
    start = 0
    for i in np.flatnonzero(adjacent):
        if not adjacent[i - 1]:
            start = i - 1  # the run before began a block
        if tied(v[i], v[start]):
            block[i] = first[start]
        else:
            start = i
    return block[np.cumsum(new_run) - 1] + 1


MAXIMIZE = tuple(m.name for m in TABLE.values() if m.smaller_is_better is False)
"""Variables of the metric table ranked larger first."""
MINIMIZE = tuple(m.name for m in TABLE.values() if m.smaller_is_better)
"""Variables of the metric table ranked smaller first."""


_WRITTEN_BY = "a results dataset written by `evaluator sweep` or `evaluator eval`: a netCDF file (.nc) or a zarr " \
              "directory (.zarr)"
_HDF5_MAGIC = b"\x89HDF\r\n\x1a\n"
_ZARR_MARKERS = ("zarr.json", ".zgroup", ".zmetadata", ".zattrs")


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


def open_results(path: str | Path, results_dir: str | Path = "results",
                 drop_variables: Sequence[str] = ()) -> xr.Dataset:
    """Open a sweep dataset (``.nc`` via h5netcdf, or a ``.zarr`` directory), fully loaded (less
    ``drop_variables``, which are not read: e.g. a 10^6-point sweep's ``reason`` strings, 1.7 of its 2.4 s).

    ``path`` may also name a study (``"dragonfly_nne_placement"``: its latest
    run under ``results_dir``), ``STUDY/latest``, or a glob that matches one
    dataset (:func:`evaluator.runs.resolve`).

    Raises :class:`~evaluator.errors.ConfigError` naming the path when it is
    missing, unreadable, not a netCDF-4 file or zarr store, or cannot be read
    (e.g. truncated).
    """
    if not isinstance(path, (str, Path)):
        raise ConfigError("path", path, _WRITTEN_BY)
    from .runs import resolve

    p = resolve(path, results_dir)
    if not p.exists():
        raise ConfigError("path", str(p), _WRITTEN_BY, "No such file or directory.")
    if p.is_dir():
        if not any((p / m).exists() for m in _ZARR_MARKERS):
            refuse_unfinished(p, _WRITTEN_BY)
            try:
                empty = not any(p.iterdir())
            except OSError:
                empty = False
            what = "an empty directory" if empty else "a directory that is not a zarr store (it has no zarr.json " \
                                                       "or .zgroup)"
            raise ConfigError("path", str(p), _WRITTEN_BY, f"It is {what}.")
        damage = zarr_damage(p)  # (zarr reads a lost chunk file as the fill value: "no feasible point")
        if damage is None:
            try:
                with xr.open_zarr(p, drop_variables=list(drop_variables)) as ds:
                    ds = ds.load()
                damage = feasible_lost(p, ds)
                if damage is None:
                    return ds
            except Exception as exc:  # zarr raises many types for a damaged store
                damage = unreadable_chunk(p)
                if damage is None:
                    raise ConfigError("path", str(p), _WRITTEN_BY,
                                      f"The zarr store could not be read ({type(exc).__name__}: {cause_text(exc)}); "
                                      f"it may be incomplete or damaged.") from None
        raise StorageError(f"dataset {p} is damaged: {damage}. Nothing was read from it. Move the store away (or "
                           f"delete it) and rerun the command that wrote it (the same `evaluator sweep` command "
                           f"computes the run again).", "path", str(p), _WRITTEN_BY)
    try:
        with open(p, "rb") as fh:
            head = fh.read(8)
            hdf5 = _has_hdf5_signature(fh, head)
    except PermissionError:
        raise ConfigError("path", str(p), _WRITTEN_BY, "Permission denied: the file cannot be read.") from None
    except OSError as exc:
        raise ConfigError("path", str(p), _WRITTEN_BY, f"Reading it failed: {exc.strerror or cause_text(exc)}.") from None
    if not head:
        raise ConfigError("path", str(p), _WRITTEN_BY, "The file is empty (0 bytes).")
    if not hdf5:
        what = ("a netCDF-3 file; results are netCDF-4 (HDF5)" if head[:3] == b"CDF" else
                "not a netCDF-4 (HDF5) file: it does not start with the HDF5 signature")
        raise ConfigError("path", str(p), _WRITTEN_BY, f"It is {what}.")
    try:
        with xr.open_dataset(p, engine="h5netcdf", drop_variables=list(drop_variables)) as ds:
            return ds.load()
    except Exception as exc:  # h5py/h5netcdf raise OSError, ValueError, KeyError... for a damaged file
        raise ConfigError("path", str(p), _WRITTEN_BY,
                          f"It could not be read ({cause_text(exc)}); it may be truncated or damaged. Write it again "
                          f"(`evaluator sweep` resumes from its chunk files).") from None


def _plain(values) -> list:
    """Labels as plain Python values (``'minimal'``, not ``np.str_('minimal')``)."""
    return [v.item() if hasattr(v, "item") else v for v in values]


def _check_rankable(ds: xr.Dataset, metric: Any) -> None:
    """Refuse a variable that cannot be ranked: the message lists the dataset's rankable variables."""
    ranked = rankable(ds)
    if isinstance(metric, str) and metric in ranked:
        return
    allowed = f"a variable of this dataset that the metric table ranks: {ranked}"
    hint = None
    if not ranked:
        hint = "The dataset has no rankable variables; is it a dataset written by `evaluator sweep`, `eval`, " \
               "`schedule`, `tiles` or `partitions`?"
    elif isinstance(metric, str) and metric in ds.variables:
        if "link" in ds[metric].dims:
            hint = f"{metric!r} is per link, not per design point."
        elif metric in ds.coords:
            hint = f"{metric!r} is a coordinate (a label of the rows), not a result."
        else:
            try:
                entry = metric_entry(metric)
            except KeyError:
                hint = (f"{metric!r} has no entry in the metric table (evaluator.dataset.TABLE), so no direction "
                        f"to rank it in.")
            else:
                if entry.smaller_is_better is None:
                    hint = f"{metric!r} is in the metric table without a direction: it is shown, not ranked."
    raise ConfigError("metric", metric, allowed, hint)


def gain(ds: xr.Dataset, metric: str, axis: str, reference: Any) -> xr.DataArray:
    """How many times better than ``reference`` on ``axis`` every design point is (> 1: better).

    ``metric(reference) / metric`` for metrics where smaller is better
    (completion time: the speedup over, e.g., ``routing = dor_bgq``), and
    ``metric / metric(reference)`` where larger is better (throughput), as
    the metric table (:data:`evaluator.dataset.TABLE`) says; a variable
    without a direction there is refused. Infeasible points are NaN. The
    result keeps every axis, ``axis`` included (the reference itself is 1
    where it is feasible).
    """
    _check_rankable(ds, metric)
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


SPREAD = 4
"""A variable with one dimension more than the ranked one, of at most this many labels (the jobs of a several-jobs
sweep), is shown as one column per label, ``slowdown(a)``; larger extra dimensions are left out. A variable with
fewer dimensions is shown (repeated) where at most this many rows share each of its values (a jobs sweep's
``makespan`` on its jobs' rows), not where more do (a schedule's per-run means on its jobs' rows)."""


def default_metric(ds: xr.Dataset) -> str:
    """What ``query`` ranks by when not told: the dataset's first rankable variable in the metric table's order
    (``completion_time`` for ``eval`` and ``sweep``, ``makespan`` for a sweep of several jobs, ``mean_wait`` for
    ``schedule``, ``time_all`` for ``tiles``);
    for ``completion_time``, the fuller time every row has where there is one
    (:func:`~evaluator.dataset.predicted_time`: ``time_with_latency`` on a network with a latency model)."""
    name = first_rankable(ds)
    if name == "completion_time" and "makespan" in ds and "job" in ds["completion_time"].dims:
        return "makespan"  # (several jobs: a point's time is their makespan, as the sweep's own table ranks it)
    if name == "completion_time":
        return predicted_time(ds)  # the time with the network's latency model or sharing, where every row has it
    if name is not None:
        return name
    _check_rankable(ds, None)
    raise AssertionError  # unreachable: _check_rankable raised


def _tail_name(base: str) -> str:
    return f"{base}_p95" if smaller_is_better(base) else f"{base}_p05"


def _draw_stats(base: str) -> tuple[str, ...]:
    """The summaries :func:`draw_summary` writes of the ranked variable ``base``, the mean first."""
    return (f"{base}_mean", _tail_name(base), f"{base}_max", f"{base}_min")


def draw_summary(ds: xr.Dataset, draws: Sequence[str], metric: str | None = None) -> xr.Dataset:
    """``ds`` with the axes ``draws`` summarised: axes whose values are random draws (``routing.seed`` of hashed
    ECMP, ``placement.seed`` of a random placement, ``traffic.seed`` of a random permutation), where one value
    is one sample of what the design point gives, not a choice a user makes.

    Every numeric variable with an entry in the metric table that runs along the draws becomes ``<name>_mean``;
    the ranked variable ``metric`` (default: :func:`default_metric`) also ``<name>_max``, ``<name>_min`` and
    its tail at :data:`DRAW_QUANTILE` on the bad side (``<name>_p95`` where smaller is better, ``<name>_p05``
    where larger; linear interpolation, ``numpy.quantile``'s default). A point is feasible where every one of
    its draws is (and has a finite ``metric``): a mean over the feasible draws only would be one-sided, so the
    others are NaN. Text variables along the draws (``bottleneck``, ``reason``) and per-link variables are left
    out; everything else is kept as it is. ``attrs["draws"]``: the axes and their numbers of values, as text.
    """
    if metric is None:
        metric = default_metric(ds)
    _check_rankable(ds, metric)
    dims = [str(d) for d in ds[metric].dims]
    draws = check_draw_axes(draws, dims)
    rest = [d for d in dims if d not in draws]
    feasible = ds["feasible"].fillna(False).astype(bool) if ("feasible" in ds.data_vars and set(ds["feasible"].dims)
                                                             <= set(dims)) else True
    with np.errstate(invalid="ignore"):  # (an infinite draw: numpy's quantile warned on stderr; the point is NaN)
        stats = draw_stats(ds[metric].astype(float).where(feasible), draws, smaller_is_better(metric))
    keep = stats["mean"].notnull()  # every draw of the point feasible
    out = ds.drop_vars([str(v) for v in ds.data_vars if set(draws) & set(ds[v].dims)]
                       + [str(c) for c in ds.coords if c not in ds.dims and set(draws) & set(ds[c].dims)])
    out = out.drop_dims([d for d in draws if d in out.dims])
    for name in ds.data_vars:
        da = ds[name]
        if not set(draws) & set(da.dims) or da.dtype.kind not in "fiu" or "link" in da.dims:
            continue
        try:
            entry = metric_entry(str(name))
        except KeyError:
            continue
        if str(name) == "feasible":
            continue
        mean = da.astype(float).where(keep).mean(draws, skipna=False)
        out[f"{name}_mean"] = mean.assign_attrs(units=da.attrs.get("units", entry.units),
                                                long_name=f"{entry.long_name} (mean over the draws of "
                                                          f"{', '.join(draws)})")
    units = ds[metric].attrs.get("units", metric_entry(metric).units)
    q = stats.attrs["quantile"]
    words = {"tail": f"{round(100 * q)}th percentile", "max": "maximum", "min": "minimum"}
    for name, stat in ((_tail_name(metric), "tail"), (f"{metric}_max", "max"), (f"{metric}_min", "min")):
        out[name] = stats[stat].transpose(*rest).assign_attrs(
            units=units, long_name=f"{metric_entry(metric).long_name} ({words[stat]} over the draws of "
                                   f"{', '.join(draws)})")
    out["feasible"] = keep.transpose(*rest)
    out.attrs = dict(ds.attrs)
    out.attrs["draws"] = ", ".join(f"{d} ({ds.sizes[d]} values)" for d in draws)
    return out


def _labels_of(ds: xr.Dataset, dim: str) -> list[str]:
    """Text variables of :data:`~evaluator.dataset.ROW_LABELS` that name the entries of ``dim`` (tiles' candidates)."""
    return [m.name for m in ROW_LABELS if m.name in ds.data_vars and ds[m.name].dims == (dim,)]


def _flat(da: xr.DataArray, like: xr.DataArray, dims: list[str]) -> np.ndarray:
    """``da`` broadcast to ``like``'s dimensions, in the order ``dims``, flattened (C order)."""
    return np.asarray(da.broadcast_like(like).transpose(*dims).values).reshape(-1)


def _where(ds, where, dims: list[str], label_names: list[str]):
    """``(sub, label_filter)``: the dataset narrowed by ``where`` (a mask function, or axis labels), and the
    labels asked of label coordinates (applied to the table's rows); a :class:`ConfigError` naming
    ``where.<key>`` for an unknown axis or label."""
    sub = ds
    label_filter: dict[str, list[str]] = {}
    if where is not None:
        if callable(where):
            mask = where(ds)
            # a mask that is not boolean over the axes (5, "routing") kept every row in silence
            if not (isinstance(mask, xr.DataArray) and mask.dtype == bool and set(mask.dims) <= set(dims)):
                got = f"a {mask.dtype} DataArray over {list(mask.dims)}" if isinstance(mask, xr.DataArray) \
                    else repr(mask)[:60]
                raise ConfigError("where", got, f"a function of the dataset returning a boolean DataArray over its "
                                                f"axes {dims}", "e.g. where=lambda ds: ds.completion_time < 1e-3")
            sub = ds.where(mask)
        elif isinstance(where, dict):
            sel = {}
            for k, v in where.items():
                labels = [str(x) for x in (v if isinstance(v, (list, tuple)) else [v])]
                if k in label_names:
                    known = sorted({str(x) for x in ds[k].values})
                    missing = [x for x in labels if x not in known]
                    require(not missing, f"where.{k}", missing, f"labels of {k}: {known}")
                    label_filter[k] = labels
                    continue
                if k not in dims:
                    raise ConfigError("where", k, f"axes of the dataset: {dims}" +
                                      (f" or their labels: {label_names}" if label_names else ""),
                                      None if dims else "This dataset has no axes (a single design point).")
                values = _plain(ds[k].values)
                known = [str(x) for x in values]
                missing = [x for x in labels if x not in known]
                require(not missing, f"where.{k}", missing, f"labels of {k}: {known}")
                sel[k] = [values[known.index(x)] for x in labels]
            sub = ds.sel(sel)
        else:
            raise ConfigError("where", where, "a mapping {axis: label or [labels]} or a function of the dataset "
                                              "returning a boolean mask")
    return sub, label_filter


def _best_of_groups(frame, metric: str, keep: list, over: list, values, smaller: bool):
    """Each combination of the kept axes: its best row and every row tied with it (``frame`` sorted best first);
    with ``over``, ``ahead_by``: how many times better they are than the group's best row not tied with them
    (``runner_up``: that row's labels on ``over``). Returns the rows and their metric values."""
    if keep:
        chosen, ahead, runner = [], [], []
        for _, pos in frame.reset_index(drop=True).groupby(keep, sort=False).indices.items():
            pos = sorted(pos)  # frame is sorted: the group's rows best first
            top = values[pos[0]]
            win = [p for p in pos if tied(values[p], top)]
            rest = [p for p in pos if not tied(values[p], top)]
            chosen += win
            ratio = _ratio(top, values[rest[0]], smaller) if rest else float("nan")
            name = ", ".join(f"{o}={frame.iloc[rest[0]][o]}" for o in over) if rest else ""
            ahead += [ratio] * len(win)
            runner += [name] * len(win)
        order = np.argsort(np.asarray(chosen), kind="stable")
        frame = frame.iloc[np.asarray(chosen)[order]].copy()
        values = frame[metric].to_numpy(dtype=float)
        if over:
            frame["runner_up"] = np.asarray(runner, dtype=object)[order]
            frame["ahead_by"] = np.asarray(ahead, dtype=float)[order]
    else:
        frame = frame.copy()
    return frame, values


def _next_ratios(values, ranks, smaller: bool):
    """A plain ranking's ``ahead_by``: each row against the next row not tied with it (NaN for the last)."""
    is_start = np.zeros(len(values), bool)
    is_start[ranks - 1] = True
    starts = np.flatnonzero(is_start)
    j = np.searchsorted(starts, ranks - 1)  # the row's block
    has_next = j + 1 < len(starts)
    other = values[starts[np.minimum(j + 1, len(starts) - 1)]] if len(starts) else values
    return np.where(has_next, _ratios(values, other, smaller), np.nan)


def best(
    ds: xr.Dataset,
    metric: str | None = None,
    over: Sequence[str] | None = None,
    where: dict[str, Any] | Callable[[xr.Dataset], xr.DataArray] | None = None,
    n: int | None = None,
    draws: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Ranked table of the best feasible rows of a dataset.

    A row is one entry of the ranked variable: one design point of a sweep
    (one per job for a several-jobs sweep's per-job variables), the single
    point of ``evaluator eval``, one run (or one run and month, or one job) of
    ``evaluator schedule``, one candidate of ``evaluator tiles``. Each row
    appears once, labelled by its parameters: the labels of the variable's
    dimensions (axes, ``job``, ``run``, ``month``), the coordinates along
    them (e.g. a study's ``policy``), and where a dimension only counts
    entries, the variables that name them instead (:data:`~evaluator.dataset.ROW_LABELS`:
    tiles' ``decomposition``, ``tile``, ``router_block``).

    Parameters
    ----------
    metric
        Variable to rank by, in the direction the metric table
        (:data:`evaluator.dataset.TABLE`) gives (smaller is better for times,
        larger for throughput, efficiency, utilisation, wait reduction,
        speedups). A variable that is not in the table or has no direction
        there is refused with the list of rankable ones
        (:func:`evaluator.dataset.rankable`). ``None``: :func:`default_metric`.
    over
        Dimensions to choose over. For every combination of the *other*
        dimensions, the best row over these is kept (naming every dimension:
        the one best row, and the rows tied with it). ``None``: a plain
        ranking of every row.
    where
        Restrict first: a mapping ``{dimension or label: label or [labels]}``
        or a function of the dataset returning a boolean mask.
    n
        Keep the first ``n`` rows.
    draws
        Axes whose values are random draws (``routing.seed`` of hashed ECMP,
        a random placement's or traffic's seed): each row summarises its
        draws (:func:`draw_summary`, after ``where``, which may pick some of
        them) instead of being one. ``metric`` is then a variable of the
        dataset, ranked by its mean over the draws (``<metric>_mean``), or one
        of its summaries (``completion_time_p95``, ``_max``, ``_min``,
        ``_mean``); the table shows the others beside it.

    The table shows, next to the ranked variable, the metric table's other
    variables of the dataset (in its order, less :data:`~evaluator.dataset.HIDDEN`)
    that have one value per row (a variable of coarser rows repeats where
    at most :data:`SPREAD` rows share a value, e.g. a jobs sweep's
    ``makespan`` on every job's row); a variable with one more
    dimension of at most :data:`SPREAD` labels as one column per label (the
    per-job ``completion_time(a)``, ``slowdown(a)``, ... of a jobs sweep
    ranked by ``makespan``, the point's time: the largest of its jobs'); a
    column without a value in any shown row is left out (``paths_per_pair``
    for routings that are not path sets).

    Ties are ties: values equal within :data:`TIE_RTOL` (1e-9 relative) share a rank (the index ``rank`` repeats:
    1, 1, 1, 4; :func:`rank_labels` and the printed table show ``1=``). Choosing ``over`` some axes keeps, for
    every combination of the others, the best row *and every row tied with it*, and says by how much they win:
    ``ahead_by``, how many times better than the best row of that combination not tied with them (the metric
    table's direction; NaN where either value is not positive or there is no such row), and ``runner_up``, that
    row's labels on ``over``. A plain ranking's ``ahead_by`` compares each row with the next row not tied with
    it. ``table.attrs["units"]`` maps
    every numeric column to its SI unit for :func:`evaluator.display.format_table`.
    """
    if not isinstance(ds, xr.Dataset):  # (None or a DataArray raised AttributeError)
        raise ConfigTypeError("ds", type(ds).__name__, "an xarray Dataset (evaluator.open_results(path), or what "
                              "evaluate/sweep return)", "A DataArray ranks as its dataset: da.to_dataset().")
    if draws is not None:
        return _best_of_draws(ds, metric, over, where, n, draws)
    return _best(ds, metric, over, where, n, ())


def _best_of_draws(ds: xr.Dataset, metric, over, where, n, draws) -> pd.DataFrame:
    """:func:`best` with ``draws``: ``where`` on the draws, :func:`draw_summary`, then the ranking of a summary."""
    base, stat = (default_metric(ds) if metric is None else metric), "mean"
    if isinstance(base, str) and base not in ds.data_vars:
        match = re.fullmatch(r"(?P<base>\w+)_(?P<stat>mean|p95|p05|max|min)", base)
        if match and match["base"] in ds.data_vars:
            base, stat = match["base"], match["stat"]
    _check_rankable(ds, base)
    if stat in ("p95", "p05") and f"{base}_{stat}" != _tail_name(base):
        raise ConfigError("metric", f"{base}_{stat}", f"{_tail_name(base)} (the tail on the bad side of {base}), "
                                                      f"{base}_mean, {base}_max or {base}_min")
    dims = [str(d) for d in ds[base].dims]
    if isinstance(over, (list, tuple)) and draws and not isinstance(draws, str):
        both = [o for o in over if o in draws]
        if both:
            raise ConfigError("over", both, f"axes that are not draws: {[d for d in dims if d not in draws]}",
                              "An axis is either chosen over (--over: its best value) or summarised as random "
                              "draws (--draws), not both.")
    label_filter: dict = {}
    full = ds
    if where is not None:
        coord_labels = [str(c) for c in ds.coords if c not in ds.dims and ds[c].ndim >= 1
                        and set(ds[c].dims) <= set(dims)]
        ds, label_filter = _where(ds, where, dims, coord_labels + [x for d in dims for x in _labels_of(ds, d)])
    draws = check_draw_axes(draws, dims)
    used = {}
    for d in draws:  # what --where left of each draw axis: the summary is over those draws, and says so
        n_all, n_left = int(full.sizes[d]), int(ds.sizes[d])
        if n_left == 1 and n_all > 1:
            label = _plain(ds[d].values)[0] if d in ds.coords else 0
            raise ConfigError("where", f"{d}={label}", f"labels of {d} that leave two draws or more to summarise "
                                                       f"(--draws {d}), or no label of it",
                              f"--where keeps one of the {n_all} draws of {d}, and a mean, tail and range of one "
                              f"draw are that draw: rank its rows without --draws {d}, or give two labels or more "
                              f"(--where {d}=A,B) or none (every draw).")
        used[d] = (n_left, n_all, [str(x) for x in _plain(ds[d].values)] if d in ds.coords else [])
    summary = draw_summary(ds, draws, base)
    ranked = f"{base}_{stat}"
    table = _best(summary, ranked, over, label_filter or None, n, [s for s in _draw_stats(base) if s != ranked])
    table.attrs["draws"] = used
    table.attrs["left_out"] = _partly_ranked(ds, base, draws, label_filter)
    if not len(table):
        kept = " that where keeps" if where is not None else ""
        table.attrs["empty"] = (f"no row to rank by {ranked}: no point{kept} has every draw of {', '.join(draws)} "
                                f"feasible with a finite {base} (a point with an infeasible or valueless draw is left "
                                f"out, not averaged over the rest)")
    return table


def _partly_ranked(ds: xr.Dataset, base: str, draws: list[str], label_filter: dict) -> tuple[int, list[str], str]:
    """``(count, examples, base)``: the points that a summary over ``draws`` leaves out although some of their draws
    have a value (feasible and finite): one infeasible or valueless draw leaves a point out, and the table would
    not say that it exists; up to three of them by their labels."""
    v = ds[base].astype(float)
    if "feasible" in ds.data_vars and set(ds["feasible"].dims) <= set(v.dims):
        v = v.where(ds["feasible"].fillna(False).astype(bool))
    good = xr.apply_ufunc(np.isfinite, v)
    partly = good.any(draws) & ~good.all(draws)
    for k, labels in label_filter.items():  # (label coordinates --where asked for: the rows the table keeps)
        if set(ds[k].dims) <= set(partly.dims):
            partly = partly & ds[k].astype(str).isin(labels)
    rest = [str(d) for d in partly.dims]
    where = np.argwhere(np.asarray(partly.values, bool).reshape(partly.shape))
    examples = [", ".join(f"{d}={_plain([partly[d].values[i]])[0] if d in partly.coords else i}"
                          for d, i in zip(rest, idx)) or "the point" for idx in where[:3]]
    return len(where), examples, base


def _best(ds: xr.Dataset, metric, over, where, n, beside: Sequence[str]) -> pd.DataFrame:
    """:func:`best`'s ranking; ``beside``: variables shown right after the ranked one (the other summaries of
    draws)."""
    if metric is None:
        metric = default_metric(ds)
    _check_rankable(ds, metric)
    dims = [str(d) for d in ds[metric].dims]
    every = over is not None and dims != [] and set(over) >= set(dims)  # named every axis: the best row (and ties)
    over = _check_over(over, n, dims)
    coord_labels = [str(c) for c in ds.coords if c not in ds.dims and ds[c].ndim >= 1
                    and set(ds[c].dims) <= set(dims)]
    row_labels = {d: _labels_of(ds, d) for d in dims}
    sub, label_filter = _where(ds, where, dims, coord_labels + [x for d in dims for x in row_labels[d]])
    excused = None  # rows a refusal explains (the buyer study's routings a network has not, ...): not counted
    for name in ("refused", "reason"):
        if name in sub.data_vars and sub[name].dtype.kind in "OUS" and set(sub[name].dims) <= set(dims):
            e = _flat(sub[name].astype(str) != "", sub[metric], dims)
            excused = e if excused is None else excused | e
    frame, unranked = _sorted_rows(_frame(sub, metric, dims, coord_labels, row_labels, beside), metric, label_filter,
                                   [d for d in dims if not row_labels[d]] + [x for d in dims for x in row_labels[d]],
                                   excused)
    keep = [d for d in dims if d not in over]
    units = dict(frame.attrs.get("units", {}))
    smaller = bool(smaller_is_better(metric))
    values = frame[metric].to_numpy(dtype=float)
    if every:  # one combination of the other axes (there are none): its best row, as for any --over
        frame = frame.assign(_one_group=0)
        frame, values = _best_of_groups(frame, metric, ["_one_group"], over, values, smaller)
        frame = frame.drop(columns="_one_group")
        keep = ["_one_group"]
    else:
        frame, values = _best_of_groups(frame, metric, keep, over, values, smaller)
    # ranks: a row tied (TIE_RTOL) with the first row of its block shares that row's rank
    ranks = _ranks(values)
    if not keep:  # a plain ranking: how many times better than the next row not tied with it
        frame["ahead_by"] = _next_ratios(values, ranks, smaller)
    if "ahead_by" in frame.columns:
        units["ahead_by"] = "x"
    table = _ranked_table(frame, metric, dims, row_labels, ranks, n, units)
    if unranked[0]:
        table.attrs["unranked"] = unranked
    if not len(table):  # (an empty DataFrame said nothing of why: every point infeasible, valueless or filtered out)
        table.attrs["empty"] = _why_empty(sub, metric, dims, where is not None, unranked)
    return table


def _why_empty(sub: xr.Dataset, metric: str, dims: list[str], filtered: bool, unranked) -> str:
    """Why a ranking has no row, in words: how many of the points (those ``where`` kept) are infeasible and how
    many feasible ones have no value of ``metric`` (NaN, or an infinite time), with up to three of the latter."""
    total = int(np.prod([sub.sizes[d] for d in dims])) if dims else 1
    if total == 0:
        return f"no point{' matches where' if filtered else ''}"
    infeasible = 0
    if "feasible" in sub.data_vars and set(sub["feasible"].dims) <= set(dims):
        infeasible = int((~_flat(sub["feasible"].fillna(False).astype(bool), sub[metric], dims)).sum())
    count, examples, what = unranked
    of = f"of the {total} point{'s' if total != 1 else ''}{' that where keeps' if filtered else ''}"
    parts = []
    if infeasible:
        parts.append(f"{infeasible} {'is' if infeasible == 1 else 'are'} infeasible (the dataset's 'reason' "
                     f"variable says why)" if "reason" in sub else f"{infeasible} {'is' if infeasible == 1 else 'are'} "
                                                                   f"infeasible")
    if count:
        eg = "; ".join(examples) + ("; ..." if count > len(examples) else "")
        parts.append(f"{count} feasible {'one has' if count == 1 else 'ones have'} a {metric} that is {what} (no "
                     f"value to rank: {eg})")
    return f"no row to rank by {metric}: {of}, " + (" and ".join(parts) or "none has a value")


def _sorted_rows(frame, metric: str, label_filter: dict, labels: Sequence[str] = (), excused=None):
    """``(rows, unranked)``: the rows whose labels ``label_filter`` asks for and whose metric has a value, best
    first (stable); ``unranked``: ``(count, examples, what)`` of the feasible rows left out for want of one (not
    those ``excused``, a flat mask by position, says are refused: their reason is in the dataset).

    A value is a finite number, or an infinite one on the good side (a throughput of +inf: the best; a time of 0,
    a job without traffic, is a finite value and the best time). NaN, an infinite time or a throughput of -inf is
    no value: its row is not ranked (as an infeasible point is not), and ``unranked`` counts it, with the labels
    (``labels``: columns) of up to three such rows, for the table's note."""
    for k, labels_k in label_filter.items():
        frame = frame[frame[k].astype(str).isin(labels_k)]
    smaller = smaller_is_better(metric)
    values = frame[metric].astype(float).to_numpy()
    has = np.isfinite(values) | ((values == np.inf) & (not smaller))
    lacking = ~has
    if excused is not None:
        lacking &= ~np.asarray(excused, bool)[frame.index.to_numpy()]
    examples = []
    for i in np.flatnonzero(lacking)[:3]:
        row = frame.iloc[int(i)]
        examples.append(", ".join(f"{c}={row[c]}" for c in labels if c in frame.columns) or "the point")
    unranked = (int(lacking.sum()), examples, "NaN or infinite" if smaller else "NaN")
    frame = frame[has]
    return frame.sort_values(metric, ascending=smaller, kind="stable"), unranked


def _check_over(over, n, dims: list[str]) -> list[str]:
    """``best``'s ``over`` (default: every axis) and ``n`` checked (a :class:`ConfigError` naming them)."""
    if over is not None and (isinstance(over, str) or not isinstance(over, (list, tuple, set, frozenset))):
        raise ConfigError("over", over, f"a list of axes of the dataset: {dims}")
    over = list(dict.fromkeys(dims if over is None else over))  # (an axis named twice: once, not twice in runner_up)
    bad = [o for o in over if o not in dims]
    if bad:
        raise ConfigError("over", bad, f"axes of the dataset: {dims}",
                          None if dims else "This dataset has no axes (a single design point).")
    if n is not None and not (is_int(n) and n >= 0):
        raise ConfigError("n", n, "an integer >= 0 (rows to keep; 0 or None: all)")
    return over


def _ranked_table(frame, metric: str, dims, row_labels, ranks, n, units: dict) -> pd.DataFrame:
    """The table ``best`` returns: the labels, the metric with ``ahead_by`` and ``runner_up`` beside it (the
    latter only where some row has one), indexed by rank, its first ``n`` rows, without columns of units that are
    empty; ``attrs["units"]``."""
    shown = [c for c in frame.columns if (c not in dims or not row_labels[c]) and c not in ("runner_up", "ahead_by")]
    at = shown.index(metric) + 1
    shown[at:at] = [c for c in ("ahead_by", "runner_up") if c in frame.columns]  # next to the ranked variable
    if "runner_up" in frame.columns and not frame["runner_up"].astype(bool).any():
        shown.remove("runner_up")
    df = frame[shown].reset_index(drop=True)
    df.index = pd.Index(ranks, name="rank")
    tied = [int(r) for r, c in pd.Series(np.asarray(ranks)).value_counts().items() if c > 1]
    rows = len(df)
    cut_tied = int((np.asarray(ranks)[n:] == ranks[n - 1]).sum()) if n and 0 < n < rows else 0
    df = df.head(n) if n else df
    empty = [c for c in df.columns if c != metric and c in units and df[c].isna().all()]
    df = df.drop(columns=empty)
    df.attrs["units"] = {c: u for c, u in units.items() if c in df.columns}
    df.attrs["tied_ranks"] = sorted(tied)  # of the whole ranking: a row shown alone can be tied with one cut off
    df.attrs["rows"] = rows  # of the whole ranking, before -n cut it (the note under a cut table says how many)
    df.attrs["cut_tied"] = cut_tied  # rows cut off that are tied with the last row shown
    if "ahead_by" in df.columns:  # NaN: no later row (or no other group's row) to be ahead of
        df.attrs["missing"] = {"ahead_by": "-"}
    return df


COST_RANKED = ("cost", "power", "throughput_per_cost")
"""Rankings by what a network costs (docs/cost.md): their tables show :data:`COST_SHOWN` beside the ranked column."""
COST_SHOWN = ("cost", "power", "throughput_per_cost", "n_switches", "n_optical_cables_long")


def _units(sub: xr.Dataset, name: str) -> str:
    """The SI unit of ``name`` from the metric table; the variable's own ``units`` where the table's names a
    placeholder (``cost``: the price table's currency)."""
    units = metric_entry(name).units
    return str(sub[name].attrs.get("units", units)) if "currency" in units else units


_SUMMARY = re.compile(r"(?P<base>\w+)_(?:mean|std|min|max|p95|p05)")


def _frame(sub: xr.Dataset, metric: str, dims: list[str], coord_labels: list[str],
           row_labels: dict[str, list[str]], beside: Sequence[str] = ()) -> pd.DataFrame:
    """Every entry of ``sub[metric]`` as one row (feasible ones only): label columns, the metric, ``beside`` (in
    that order), the shown columns."""
    da = sub[metric]
    size = int(np.prod(da.shape)) if da.ndim else 1
    pos = np.unravel_index(np.arange(size), da.shape) if da.ndim else ()
    cols: dict[str, Any] = {}
    units: dict[str, str] = {}
    for i, d in enumerate(dims):
        values = sub[d].values if d in sub.coords else np.arange(sub.sizes[d])
        cols[d] = np.asarray(values)[pos[i]]
        for name in row_labels[d]:
            cols[name] = _flat(sub[name], da, dims)
        for c in coord_labels:
            if sub[c].dims == (d,):
                cols[c] = _flat(sub[c], da, dims)
    for c in coord_labels:
        if c not in cols:
            cols[c] = _flat(sub[c], da, dims)
    cols[metric] = np.asarray(da.values).reshape(-1)
    units[metric] = _units(sub, metric)
    for name in beside:
        cols[name] = _flat(sub[name], da, dims)
        units[name] = _units(sub, name)
    for name in sub.data_vars:
        name = str(name)
        if name == metric or not (shown(name) or (metric in COST_RANKED and name in COST_SHOWN)) or name in cols \
                or "link" in sub[name].dims:
            continue
        try:
            entry = metric_entry(name)
        except KeyError:
            continue
        numeric = sub[name].dtype.kind in "fiub"
        vdims = [str(d) for d in sub[name].dims]
        extra = [d for d in vdims if d not in dims]
        if int(np.prod([sub.sizes[d] for d in dims if d not in vdims])) > SPREAD:
            continue  # of coarser rows that many ranked rows share (a schedule's runs on its jobs' rows)
        if not extra:
            cols[name] = _flat(sub[name], da, dims)
            if numeric:
                units[name] = _units(sub, name)
        elif len(extra) == 1 and sub.sizes[extra[0]] <= SPREAD and set(vdims) - set(extra) == set(dims):
            e = extra[0]
            labels = sub[e].values if e in sub.coords else np.arange(sub.sizes[e])
            for i, label in enumerate(labels):
                col = f"{name}({label})"
                cols[col] = _flat(sub[name].isel({e: i}, drop=True), da, dims)
                if numeric:
                    units[col] = entry.units
    order = {name: i for i, name in enumerate(TABLE)}
    lead = [c for c in cols if c in dims or c in coord_labels or c in {x for v in row_labels.values() for x in v}]
    def place(c: str) -> tuple:  # the metric table's order (a summary over draws or seeds: its base's), labels kept
        name = c.split("(")[0]
        stat = _SUMMARY.fullmatch(name)
        base = stat["base"] if stat and stat["base"] in order else name
        return (order.get(base, len(order)), base, name)

    rest = list(beside) + sorted((c for c in cols if c not in lead and c != metric and c not in beside), key=place)
    # the feasible rows picked before the frame is made (indexed by their flat positions, as a filtered frame's rows
    # are), not after: pandas makes a string column's objects row by row, so the README's 10^6-point sweep (262,500
    # feasible) made 10^6 of each label for its end table (1.06 s, 0.67 s of it strings) and now 262,500 (0.29 s)
    rows = None
    if "feasible" in sub.data_vars and set(sub["feasible"].dims) <= set(dims):
        rows = np.flatnonzero(_flat(sub["feasible"].fillna(False).astype(bool), da, dims))
    frame = pd.DataFrame({c: cols[c] if rows is None else np.asarray(cols[c])[rows] for c in lead + [metric] + rest},
                         index=rows)
    frame.attrs["units"] = units
    return frame
