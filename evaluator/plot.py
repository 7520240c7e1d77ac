"""Figures of sweep datasets in the style of the papers (matplotlib, PNG written atomically, no global backend).

What a reader can trust: an axis whose labels are all numbers (``background.fraction``, ``traffic.n_tasks``)
is a numeric axis, values in ascending order at their positions, each series a line through them; any other
axis (routings, size vectors such as ``8x8x4``, geometries) is a set of categories, each series drawn as
points with no line between them (a line would claim an order and values in between). Size vectors run in
ascending size. A ratio (a gain over a reference, an efficiency, a speedup, a slowdown) gets a dashed
reference line at 1. Every value axis names its unit in brackets (:func:`evaluator.display.axis_label`; ``[1]``
for ratios), in the display unit that tables use for the same values (:func:`evaluator.display.display_unit`).
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import xarray as xr

from .dataset import metric as metric_entry
from .dataset import rankable, smaller_is_better
from .display import axis_label, display_unit
from .errors import ConfigError, require
from .io import save_figure

__all__ = ["plot_sweep", "is_ratio"]

_RATIO = re.compile(r"(^|_)(efficiency|speedup|gain|ratio|slowdown|interference)(_|$|\()|_vs_|_over_")
"""Names of ratio metrics (units ``1``, 1: no difference): they get a reference line at 1."""


def is_ratio(name: str) -> bool:
    """Whether ``name`` is a ratio of two like quantities, where 1 means no difference (``routing_efficiency``,
    ``speedup_links_all``, ``slowdown``, ``gain_adaptive``, ``time_ratio``); its plots get a reference line at 1."""
    try:
        if metric_entry(name).units != "1":
            return False
    except KeyError:
        pass
    return bool(_RATIO.search(str(name)))


def _size(label: str) -> int:
    try:
        return math.prod(int(x) for x in str(label).split("x"))
    except ValueError:
        return 0


def _number(label: str) -> float | None:
    try:
        x = float(str(label))
    except ValueError:
        return None
    return x if math.isfinite(x) else None


def _numeric(labels: list[str]) -> bool:
    """Whether an axis with these labels is numeric (every label a finite number): ordered, drawn as lines."""
    return bool(labels) and all(_number(s) is not None for s in labels)


def _plotted(ds: xr.Dataset, metric: str, x, series, relative_to):
    """``(da, dims, x, series, facet, reduced)``: the values :func:`plot_sweep` draws (the metric where feasible, or
    its gain), the dataset's axes, ``x`` and ``series`` checked or defaulted, seeds averaged, every axis but the
    first facet reduced to its best value, that facet (or None), and what was reduced, in words (the figure says
    it: a point of a panel is then not one design point)."""
    metrics = sorted(str(v) for v in ds.data_vars
                     if ds[v].dtype.kind in "fiu" and "link" not in ds[v].dims and v != "feasible")
    if not isinstance(metric, str) or metric not in metrics:
        raise ConfigError("metric", metric, f"one of {metrics}",
                          None if metrics else "The dataset has no metrics; is it a results dataset written by "
                                               "`evaluator sweep` or `evaluator eval`?")
    if relative_to is not None:
        from .query import gain

        da = gain(ds, metric, relative_to[0], relative_to[1])
    else:
        da = ds[metric].where(ds["feasible"]) if "feasible" in ds else ds[metric]
    dims = [str(d) for d in da.dims]
    for field, name in (("x", x), ("series", series)):
        if name is not None and name not in dims:
            raise ConfigError(field, name, f"an axis of the dataset: {dims}",
                              None if dims else "This dataset has no axes (a single design point from `evaluator "
                                                "eval`); plot a sweep dataset.")
    if series is None:
        series = "job" if "job" in dims else ("routing" if "routing" in dims else None)
    if x is None:
        rest = [d for d in dims if d != series]
        other = "" if series is None else f" other than the series {series!r}"
        require(bool(rest), "x", None, f"an axis of the dataset{other}; axes: {dims}",
                "A plot needs an axis to put on x: plot a sweep dataset (`evaluator sweep`), not a single design "
                "point." if not dims else f"Pick another --series than {series!r}.")
        x = "placement.gamma" if "placement.gamma" in rest else max(rest, key=lambda d: da.sizes[d])
    if x == series:
        raise ConfigError("series", series, f"an axis of the dataset other than x = {x!r}; axes: {dims}")
    others = [d for d in dims if d not in (x, series)]
    reduced = []
    for d in list(others):
        if d.endswith("seed"):
            da = da.mean(d, skipna=True)
            others.remove(d)
            reduced.append(f"the mean over {d}")
    facet = others[0] if others else None
    for d in others[1:]:
        if relative_to is not None:
            da = da.max(d)  # gains: larger is better
            continue
        try:
            smaller = smaller_is_better(metric)  # the best value, in the metric table's direction
        except KeyError:
            raise ConfigError("metric", metric, f"a variable the metric table ranks, to keep the best over the axis "
                                                f"{d!r}: {rankable(ds)}",
                              f"Or put {d!r} on the plot (--x, --series) or restrict the dataset first.") from None
        da = da.min(d, skipna=True) if smaller else da.max(d, skipna=True)
    reduced += [f"the best over {d}" for d in others[1:]]
    return da, dims, x, series, facet, reduced


def plot_sweep(ds: xr.Dataset, out: str | Path, metric: str = "completion_time", x: str | None = None,
               series: str | None = None, relative_to: tuple[str, object] | None = None) -> Path:
    """One panel per value of the first remaining axis; ``metric`` against ``x``, one series per ``series`` value.

    Defaults: ``series`` is the ``job`` dimension of several-jobs sweeps, else the ``routing`` axis if there is one; ``x`` is
    ``placement.gamma`` if present, else the largest other axis. ``x`` labels
    that are vectors are grouped by their product (ascending size), as in
    Prisacari Figs. 4-5; numeric ``x`` labels are a numeric axis (lines),
    any other a categorical one (points). Axes named ``*seed`` are averaged;
    any other remaining axis is reduced to its best value, in the direction
    of the metric table (:data:`evaluator.dataset.TABLE`; a variable without
    one is refused there). The y axis is in the display unit of the metric's
    SI unit (ms, GB/s, MB: :func:`evaluator.display.display_unit`), named in its label; ratios
    (:func:`is_ratio`, and every gain) get a reference line at 1. ``relative_to =
    (axis, label)`` plots the gain over that label instead
    (:func:`evaluator.query.gain`: e.g. ``("routing", "dor_bgq")``, the
    speedup of every routing over DOR); a dataset with ``paths_per_pair``
    (path-set routings) then gets a second column of panels with the mean
    paths per communicating router pair of every series (seeds and other
    axes averaged), next to the gain.
    """
    from matplotlib.figure import Figure

    da, dims, x, series, facet, reduced = _plotted(ds, metric, x, series, relative_to)
    facets = list(da[facet].values) if facet else [None]
    ppp = _paths_panel(ds, metric, relative_to, dims, x, series, facet)
    ncols = 1 if ppp is None else 2
    fig = Figure(figsize=(max(6, 0.25 * da.sizes[x] + 3) * (1 if ppp is None else 1.6), 3.2 * len(facets)))
    axs = fig.subplots(len(facets), ncols, squeeze=False)
    try:  # values in the display unit the metric table's SI unit gives (ms, GB/s, MB)
        si = metric_entry(metric).units
    except KeyError:
        si = ds[metric].attrs.get("units", "")
    units, factor = ("1", 1.0) if relative_to is not None else display_unit(si, da.values)
    da = da / factor if factor != 1.0 else da
    for row, fv in enumerate(facets):
        labels = _draw(axs[row, 0], da.sel({facet: fv}) if facet else da, x, series, legend=ppp is None)
        if relative_to is not None:
            axs[row, 0].set_ylabel(axis_label(f"gain over {relative_to[0]}={relative_to[1]}", "1")
                                   + f"\n({metric}; > 1: better)")
        else:
            axs[row, 0].set_ylabel(axis_label(metric, units))
        if relative_to is not None or is_ratio(metric):
            axs[row, 0].axhline(1.0, color="0.6", lw=0.8, ls="--", zorder=0)
        if ppp is not None:
            _draw(axs[row, 1], ppp.sel({facet: fv}) if facet else ppp, x, series, labels, legend="outside")
            axs[row, 1].set_ylabel(axis_label("paths per router pair", "1") + "\n(mean over communicating pairs)")
            axs[row, 1].set_ylim(bottom=0)
        for c in range(ncols):
            if facet:
                axs[row, c].set_title(f"{facet} = {fv}", fontsize=9)
    grouped = not _numeric(labels) and all(_size(s) for s in labels)
    for c in range(ncols):
        axs[-1, c].set_xlabel(x + (" (grouped by size, ascending)" if grouped else ""))
    title = ds.attrs.get("title", "")
    if reduced:  # a point is not one design point: say what it stands for
        title = (title + "\n" if title else "") + f"each point: {'; '.join(reduced)}"
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return save_figure(fig, Path(out), dpi=120)


def _paths_panel(ds: xr.Dataset, metric: str, relative_to, dims: list[str], x: str, series: str | None,
                 facet: str | None) -> xr.DataArray | None:
    """``paths_per_pair`` reduced to the gain plot's axes (seeds and any other axis averaged), or None.

    Shown next to a gain (``relative_to``) when the dataset has it with a
    finite value somewhere (path-set routings: the BG/Q many-to-many sweeps).
    """
    if relative_to is None or metric == "paths_per_pair" or "paths_per_pair" not in ds:
        return None
    da = ds["paths_per_pair"].where(ds["feasible"]) if "feasible" in ds else ds["paths_per_pair"]
    if not np.isfinite(da.values).any() or set(da.dims) != set(dims):
        return None
    for d in dims:
        if d not in (x, series, facet):
            da = da.mean(d, skipna=True)
    return da


def _draw(ax, sub: xr.DataArray, x: str, series: str | None, labels: list[str] | None = None,
          legend: bool | str = True) -> list[str]:
    """One panel: ``sub`` against ``x`` (labels with a value, or ``labels``), one series each value of ``series``.

    A numeric ``x`` (every label a number) is drawn at its values in ascending order, each series a line with
    markers (a log axis where the positive values span a factor of 50 or more); any other ``x`` is categorical:
    one tick per label (size vectors ascending by size, else axis order), each series as points with no line,
    side by side within a category. ``legend``: in the panel (True), right of it (``"outside"``, shared by a row
    of panels) or none.
    """
    if labels is None:
        keep = ~np.isnan(sub.values).all(axis=tuple(i for i, d in enumerate(sub.dims) if d != x)) if sub.ndim > 1 \
            else ~np.isnan(sub.values)
        labels = [str(v) for v, k in zip(sub[x].values, keep) if k]
        if _numeric(labels):
            labels.sort(key=lambda s: _number(s))
        elif all(_size(s) > 0 for s in labels):  # size vectors: grouped by size, ascending; else axis order
            labels.sort(key=lambda s: (_size(s), s))
    known = [str(v) for v in sub[x].values]
    sub = sub.isel({x: [known.index(s) for s in labels]})
    numeric = _numeric(labels)
    groups = [sv for sv in sub[series].values] if series else [None]
    if numeric:
        xs = np.array([_number(s) for s in labels], dtype=float)
        offsets = [0.0] * len(groups)
        style = {"marker": "o", "ms": 3, "lw": 1, "ls": "-"}
    else:
        xs = np.arange(len(labels), dtype=float)
        width = min(0.6, 0.15 * len(groups))  # points of a category side by side, never into the next one
        offsets = [0.0] if len(groups) == 1 else list(np.linspace(-width / 2, width / 2, len(groups)))
        style = {"marker": "o", "ms": 4, "ls": "none"}
    for sv, off in zip(groups, offsets):
        y = sub.values if sv is None else sub.sel({series: sv}).values
        ax.plot(xs + off, y, label=None if sv is None else f"{series}={sv}", **style)
    if series:
        if legend == "outside":
            ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0)
        elif legend:
            ax.legend(fontsize=7)
    if numeric:
        pos = xs[xs > 0]
        if pos.size == xs.size and pos.size > 1 and pos.max() / pos.min() >= 50:
            ax.set_xscale("log")
        ax.set_xticks(xs)
        ax.set_xticklabels(labels, rotation=90 if len(labels) > 8 else 0, fontsize=7)
        ax.minorticks_off()
        return labels
    sizes = [_size(s) for s in labels]
    for i in range(1, len(sizes)):
        if sizes[i] != sizes[i - 1]:
            ax.axvline(i - 0.5, color="0.8", lw=0.8)
    ax.set_xticks(xs)
    ax.set_xticklabels(labels, rotation=90, fontsize=7)
    return labels
