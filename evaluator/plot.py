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
import textwrap
from pathlib import Path

import numpy as np
import xarray as xr

from .dataset import metric as metric_entry
from .dataset import check_draw_axes, draw_stats, rankable, smaller_is_better
from .display import axis_label, display_unit
from .errors import ConfigError, WordedError
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


def _nothing_on_x(dims, other, series, draws) -> WordedError:
    """No axis is left for x (``--x`` not given): the draws or the series are the dataset's only axes. (Both said
    "--x = None is invalid" until 2026-12-06, naming an option the user had not given.)"""
    if draws:
        return WordedError(f"nothing to put on x: --x is not given and the dataset has no axis other than "
                           f"{' and '.join(other)} (axes: {dims}); draws are summarised, not put on x, unless "
                           f"asked. Put a draw on x (--x {draws[-1]}: each draw its own point), or see each "
                           f"point's summary over its draws with evaluator query --draws {' '.join(draws)}.",
                           "x", None, "an axis of the dataset")
    return WordedError(f"nothing to put on x: --x is not given and the dataset's only axis is the series "
                       f"{series!r} (axes: {dims}). Put it on x (--x {series}), or pick another --series.",
                       "x", None, "an axis of the dataset")


def _plotted(ds: xr.Dataset, metric: str, x, series, relative_to, draws=None):
    """``(da, dims, x, series, facet, reduced, band)``: the values :func:`plot_sweep` draws (the metric where
    feasible, or its gain), the dataset's axes, ``x`` and ``series`` checked or defaulted, the draws summarised
    (their mean; ``band``: their ``min``, ``max`` and bad-side ``tail``, or None without draws), every axis but
    the first facet reduced to its best value (the band taken at the same point), that facet (or None), and what
    was reduced, in words (the figure says it: a point of a panel is then not one design point)."""
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
    if series is None:  # the jobs, else the routings, unless that axis is x or the only one x could be
        series = "job" if "job" in dims else ("routing" if "routing" in dims else None)
        if series is not None and (x == series or (x is None and not any(
                d != series and not d.endswith("seed") for d in dims))):
            series = None
    rel = None if relative_to is None else relative_to[0]
    draws = _draw_axes(draws, dims, x, series, rel)
    if x is None:
        rest = [d for d in dims if d != series and d not in draws]
        other = [] if series is None else [f"the series {series!r}"]
        other += [f"the draws {', '.join(map(repr, draws))}"] if draws else []
        if not dims:  # (named --x = None before, an option the user had not given)
            raise ConfigError("dataset", ds.attrs.get("title") or "a dataset without axes",
                              "a dataset with an axis to put on x (a sweep's)",
                              "A plot needs an axis: plot a sweep dataset (`evaluator sweep`), not a single design "
                              "point (evaluator eval prints its values).")
        if not rest:
            raise _nothing_on_x(dims, other, series, draws)
        x = "placement.gamma" if "placement.gamma" in rest else max(rest, key=lambda d: da.sizes[d])
    if x == series:
        raise ConfigError("series", series, f"an axis of the dataset other than x = {x!r}; axes: {dims}")
    if relative_to is not None:
        smaller = False  # gains: larger is better
    else:
        try:
            smaller = smaller_is_better(metric)
        except KeyError:
            smaller = None
    band, reduced = None, []
    if draws:
        stats = draw_stats(da.astype(float), draws, smaller)
        da = stats["mean"]
        band = {k: stats[k] for k in ("min", "max", "tail") if k != "tail" or smaller is not None}
        n = int(np.prod([ds.sizes[d] for d in draws]))
        tail = (f", dotted: their {round(100 * stats.attrs['quantile'])}th percentile" if smaller is not None
                else "")
        reduced.append(f"the mean over {', '.join(draws)} ({n} draws; band: the smallest to the largest{tail}; a "
                       f"point with an infeasible draw left out)")
    others = [d for d in dims if d not in (x, series) and d not in draws]
    if rel in others:  # the gain's axis is shown, as the panels: averaged or reduced to its best (the reference's
        others.remove(rel)  # own 1 at worst) it was a mean with the reference's 1 in it, or max(1, gain)
        others.insert(0, rel)
    facet = others[0] if others else None
    for d in others[1:]:
        if smaller is None:
            raise ConfigError("metric", metric, f"a variable the metric table ranks, to keep the best over the axis "
                                                f"{d!r}: {rankable(ds)}",
                              f"Or put {d!r} on the plot (--x, --series) or restrict the dataset first.")
        best = da.fillna(np.inf).argmin(d) if smaller else da.fillna(-np.inf).argmax(d)  # the best value, in the
        da = da.isel({d: best})  # metric table's direction (gains: larger); the band at the same point
        band = None if band is None else {k: v.isel({d: best}) for k, v in band.items()}
    reduced += [f"the best over {d}" for d in others[1:]]
    return da, dims, x, series, facet, reduced, band


def _draw_axes(draws, dims: list[str], x, series, rel=None) -> list[str]:
    """The axes summarised as random draws: ``draws`` checked (a non-empty list of axes of the dataset, neither
    ``x`` nor ``series`` nor the axis of ``relative_to``), or by default every axis whose name ends in ``seed``
    but those."""
    if draws is None:
        return [d for d in dims if d.endswith("seed") and d not in (x, series, rel)]
    return check_draw_axes(draws, dims, (("x", x), ("the series", series),
                                         ("the axis the gain is relative to", rel)))


def plot_sweep(ds: xr.Dataset, out: str | Path, metric: str = "completion_time", x: str | None = None,
               series: str | None = None, relative_to: tuple[str, object] | None = None,
               draws: list[str] | None = None) -> Path:
    """One panel per value of the first remaining axis; ``metric`` against ``x``, one series per ``series`` value.

    Defaults: ``series`` is the ``job`` dimension of several-jobs sweeps, else the ``routing`` axis if there is one; ``x`` is
    ``placement.gamma`` if present, else the largest other axis. ``x`` labels
    that are vectors are grouped by their product (ascending size), as in
    Prisacari Figs. 4-5; numeric ``x`` labels are a numeric axis (lines),
    any other a categorical one (points). The axes ``draws`` (by default
    every axis named ``*seed`` but ``x`` and ``series``) are random draws:
    each point is their mean, with a band from the smallest to the largest
    draw and a dotted line at the tail on the bad side (the 95th percentile
    of a time; :func:`evaluator.dataset.draw_stats`, as ``evaluator query
    --draws``); a point with an infeasible draw is left out. Any other
    remaining axis is reduced to its best value, in the direction
    of the metric table (:data:`evaluator.dataset.TABLE`; a variable without
    one is refused there). The y axis is in the display unit of the metric's
    SI unit (ms, GB/s, MB: :func:`evaluator.display.display_unit`), named in its label; ratios
    (:func:`is_ratio`, and every gain) get a reference line at 1. ``relative_to =
    (axis, label)`` plots the gain over that label instead
    (:func:`evaluator.query.gain`: e.g. ``("routing", "dor_bgq")``, the
    speedup of every routing over DOR; with draws, the gain of each draw over
    the reference's same draw, summarised); a dataset with ``paths_per_pair``
    (path-set routings) then gets a second column of panels with the mean
    paths per communicating router pair of every series (seeds and other
    axes averaged), next to the gain.
    """
    from matplotlib.figure import Figure

    da, dims, x, series, facet, reduced, band = _plotted(ds, metric, x, series, relative_to, draws)
    if not np.isfinite(np.asarray(da.values, dtype=float)).any():  # (an empty figure was written, exit status 0)
        raise ConfigError("metric", metric, "a metric with a value at some point to plot",
                          f"No point of the dataset has a finite {metric}{_why_none(ds, metric)}: nothing to plot. "
                          f"Nothing was written.")
    infinite = _infinite(da)  # (matplotlib leaves an infinite value out in silence: an undeliverable time vanished)
    if infinite:
        da = da.where(np.isfinite(da))
        band = None if band is None else {k: v.where(np.isfinite(da)) for k, v in band.items()}
    facets = list(da[facet].values) if facet else [None]
    drawn_labels: list[str] = []
    ppp = _paths_panel(ds, metric, relative_to, dims, x, series, facet)
    ncols = 1 if ppp is None else 2
    fig = Figure(figsize=(max(6, 0.25 * da.sizes[x] + 3) * (1 if ppp is None else 1.6), 3.2 * len(facets)))
    axs = fig.subplots(len(facets), ncols, squeeze=False)
    try:  # values in the display unit the metric table's SI unit gives (ms, GB/s, MB)
        si = metric_entry(metric).units
    except KeyError:
        si = ds[metric].attrs.get("units", "")
    if "currency" in si:  # the table's placeholder: the dataset's own currency, as query's tables name it
        si = str(ds[metric].attrs.get("units", si))
    units, factor = ("1", 1.0) if relative_to is not None else display_unit(si, da.values)
    if factor != 1.0:
        da = da / factor
        band = None if band is None else {k: v / factor for k, v in band.items()}
    for row, fv in enumerate(facets):
        at = (lambda a: a.sel({facet: fv})) if facet else (lambda a: a)
        labels = _draw(axs[row, 0], at(da), x, series, legend=ppp is None,
                       band=None if band is None else {k: at(v) for k, v in band.items()})
        drawn_labels += [s for s in labels if s not in drawn_labels]
        if not np.isfinite(np.asarray(at(da).values, dtype=float)).any():  # (an empty panel said nothing)
            axs[row, 0].text(0.5, 0.5, f"no point with a value of {metric} here\n(infeasible or no value)",
                             transform=axs[row, 0].transAxes, ha="center", va="center", fontsize=8, color="0.3")
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
    grouped = bool(drawn_labels) and not _numeric(drawn_labels) and all(_size(s) for s in drawn_labels)  # (of
    # every panel: an empty last panel, every point infeasible, made a numeric axis "grouped by size")
    for c in range(ncols):
        axs[-1, c].set_xlabel(x + (" (grouped by size, ascending)" if grouped else ""))
    title = ds.attrs.get("title", "")
    if ds.attrs.get("one_draw"):  # a sweep's random choices drawn once (evaluator.sweep.plan.one_draw_choices)
        reduced.append(f"one draw of {ds.attrs['one_draw']}")
    if reduced:  # a point is not one design point: say what it stands for (wrapped to the figure's width)
        title = (title + "\n" if title else "") + textwrap.fill(f"each point: {'; '.join(reduced)}",
                                                                 int(13 * fig.get_figwidth()))
    if infinite:  # (a line of its own: it is not what a point stands for)
        title = (title + "\n" if title else "") + textwrap.fill(infinite, int(13 * fig.get_figwidth()))
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return save_figure(fig, Path(out), dpi=120)


def _why_none(ds: xr.Dataset, metric: str) -> str:
    """Why no point of ``ds`` has a finite ``metric``, in words: how many points are infeasible and how many
    feasible ones have a NaN or infinite value (empty where the dataset says neither)."""
    if metric not in ds:
        return ""
    values = np.asarray(ds[metric].values, dtype=float)
    ok = np.ones(values.shape, bool)
    if "feasible" in ds.data_vars and set(ds["feasible"].dims) <= set(ds[metric].dims):
        ok = np.asarray(ds["feasible"].fillna(False).astype(bool).broadcast_like(ds[metric]).transpose(
            *ds[metric].dims).values, bool)
    infeasible, valueless = int((~ok).sum()), int((ok & ~np.isfinite(values)).sum())
    parts = ([f"{infeasible} {'is' if infeasible == 1 else 'are'} infeasible"
              + (" (the dataset's variable reason says why, point by point)" if "reason" in ds else "")]
             if infeasible else [])
    parts += [f"{valueless} feasible {'one has' if valueless == 1 else 'ones have'} a NaN or infinite {metric}"] \
        if valueless else []
    return f" (of its {values.size} point{'s' if values.size != 1 else ''}, {' and '.join(parts)})" if parts else ""


def _infinite(da: xr.DataArray) -> str:
    """The words for the figure's title where ``da`` has infinite values, which are not drawn (a time a routing
    cannot deliver, a throughput of a point without time): how many, of which sign, and up to three by their
    labels; empty where there are none."""
    values = np.asarray(da.values, dtype=float)
    where = np.argwhere(np.isinf(values).reshape(values.shape))
    if not len(where):
        return ""
    dims = [str(d) for d in da.dims]
    eg = ["the point" if not dims else ", ".join(f"{d}={da[d].values[i] if d in da.coords else i}"
                                                 for d, i in zip(dims, idx)) for idx in where[:3]]
    signs = sorted({"+inf" if values[tuple(idx)] > 0 else "-inf" for idx in where})
    return (f"not drawn: {len(where)} point{'s' if len(where) != 1 else ''} whose value is {' or '.join(signs)} ("
            f"{'; '.join(eg)}{'; ...' if len(where) > 3 else ''})")


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


def _band(ax, xs: np.ndarray, band: dict[str, np.ndarray], color, numeric: bool) -> None:
    """One series' draws: from ``band["min"]`` to ``band["max"]`` (shaded along a numeric axis, a bar at each
    category) and ``band["tail"]`` (dotted line, or a dash at each category) where there is one."""
    if numeric:
        ax.fill_between(xs, band["min"], band["max"], color=color, alpha=0.18, lw=0)
    else:
        ax.vlines(xs, band["min"], band["max"], color=color, lw=1.2, alpha=0.6)
    if "tail" in band:
        ax.plot(xs, band["tail"], color=color, **({"ls": ":", "lw": 1} if numeric else {"ls": "none", "marker": "_",
                                                                                       "ms": 8}))


def _draw(ax, sub: xr.DataArray, x: str, series: str | None, labels: list[str] | None = None,
          legend: bool | str = True, band: dict[str, xr.DataArray] | None = None) -> list[str]:
    """One panel: ``sub`` against ``x`` (labels with a value, or ``labels``), one series each value of ``series``.

    A numeric ``x`` (every label a number) is drawn at its values in ascending order, each series a line with
    markers (a log axis where the positive values span a factor of 50 or more); any other ``x`` is categorical:
    one tick per label (size vectors ascending by size, else axis order), each series as points with no line,
    side by side within a category. ``legend``: in the panel (True), right of it (``"outside"``, shared by a row
    of panels) or none. ``band`` (the draws' ``min``, ``max`` and ``tail``, shaped as ``sub``): a shaded band
    (numeric ``x``) or a vertical bar (categories) from the smallest to the largest in the series' colour, the
    tail dotted (or a dash).
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
    order = {x: [known.index(s) for s in labels]}
    sub = sub.isel(order)
    band = None if band is None else {k: v.isel(order) for k, v in band.items()}
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
        (line,) = ax.plot(xs + off, y, label=None if sv is None else f"{series}={sv}", **style)
        if band is not None:
            _band(ax, xs + off, {k: v.values if sv is None else v.sel({series: sv}).values for k, v in band.items()},
                  line.get_color(), numeric)
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
