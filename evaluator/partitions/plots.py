"""Figures of the partition analysis (PNG), drawn on a :class:`matplotlib.figure.Figure`.

Each figure is written atomically through :func:`evaluator.io.save_figure`
(the Agg canvas): the global matplotlib backend is never changed, and
matplotlib is imported only when a figure is drawn. Sizes run in ascending order; categories
(sizes, machines, prisms) are bars; every value axis names its unit in brackets, in the display unit of
:mod:`evaluator.display`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..display import axis_label, display_unit
from ..io import save_figure

if TYPE_CHECKING:  # pragma: no cover
    import xarray as xr

__all__ = ["plot_partitions", "plot_comparison", "plot_slabs"]


def plot_partitions(ds: xr.Dataset, path: str | os.PathLike[str]) -> Path:
    """Bar chart of best, worst and allowed bisection links per size (Oltchik Figs. 1, 2).

    Uses the Agg canvas directly (no global backend change).
    """
    from matplotlib.figure import Figure

    ds = ds.sortby("size")
    sizes = ds["size"].values
    x = np.arange(len(sizes))
    fig = Figure(figsize=(max(6.0, 0.55 * len(sizes) + 2), 4.2))
    ax = fig.add_subplot(1, 1, 1)
    # links where every link has one bandwidth (the papers' figures); else the bandwidth, which ranks the
    # geometries (Titan's best 9,600-node geometry cuts fewer, faster links than its worst)
    uneven = len(set(np.atleast_1d(np.asarray(ds.attrs.get("link_bandwidth", 1.0), float)).tolist())) > 1
    what = "bandwidth" if uneven else "links"
    unit, factor = "links", 1.0
    if uneven:
        bws = np.concatenate([ds[f"{k}_bandwidth"].values for k in ("best", "worst", "allowed")])
        unit, factor = display_unit("bytes/s", bws[np.isfinite(bws)])
    series = [("worst", ds[f"worst_{what}"].values / factor, "tab:red")]
    if int(ds.attrs.get("has_allowed_list", 0)):
        series = [("allowed (current)", ds[f"allowed_{what}"].values / factor, "tab:gray")]
    series.append(("best possible", ds[f"best_{what}"].values / factor, "tab:blue"))
    w = 0.8 / len(series)
    for i, (lab, y, c) in enumerate(series):
        ax.bar(x + (i - (len(series) - 1) / 2) * w, y, w, label=lab, color=c)
    ax.set_xticks(x)
    ax.set_xticklabels([str(s) for s in sizes], rotation=60, fontsize=8)
    ax.set_xlabel(axis_label("partition size P", "nodes"))
    ax.set_ylabel(axis_label("bisection bandwidth, per direction", unit) if uneven
                  else axis_label("normalised bisection bandwidth", "links"))
    ax.set_title(f"{ds.attrs.get('machine', '')}: internal bisection of partitions")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return save_figure(fig, path)


def plot_comparison(ds: xr.Dataset, path: str | os.PathLike[str]) -> Path:
    """Best-case bisection links per size for several machines (Oltchik Fig. 7)."""
    from matplotlib.figure import Figure

    ds = ds.sortby("size")
    sizes = ds["size"].values
    x = np.arange(len(sizes))
    fig = Figure(figsize=(max(6.0, 0.5 * len(sizes) + 2), 4.2))
    ax = fig.add_subplot(1, 1, 1)
    names = [str(n) for n in ds["machine"].values]
    w = 0.8 / max(1, len(names))
    # links where every link cut has one bandwidth; else the bandwidth, which ranks the partitions
    links = ds["best_links"].values
    bws = ds["best_bandwidth"].values if "best_bandwidth" in ds else links
    ok = np.isfinite(bws) & (links > 0)
    uneven = bool(ok.any()) and not np.allclose(bws[ok] / links[ok], (bws[ok] / links[ok])[0], rtol=1e-12)
    unit, factor = display_unit("bytes/s", bws[np.isfinite(bws)]) if uneven else ("links", 1.0)
    heights = bws / factor if uneven else links
    for j, name in enumerate(names):
        ax.bar(x + (j - (len(names) - 1) / 2) * w, heights[:, j], w, label=name)
    ax.set_xticks(x)
    ax.set_xticklabels([str(s) for s in sizes], rotation=60, fontsize=8)
    ax.set_xlabel(axis_label("partition size P", "nodes"))
    ax.set_ylabel(axis_label("bisection bandwidth, per direction", unit) if uneven
                  else axis_label("normalised bisection bandwidth", "links"))
    ax.set_title("best-case partitions: " + " vs ".join(names))
    ax.legend(fontsize=8)
    fig.tight_layout()
    return save_figure(fig, path)


def plot_slabs(ds: xr.Dataset, path: str | os.PathLike[str]) -> Path:
    """Bisection bandwidth per node of each slab (Fiedler's slab slides)."""
    from matplotlib.figure import Figure

    labels = [str(s) for s in ds["slab"].values]
    fig = Figure(figsize=(max(5.0, 0.9 * len(labels) + 2), 4.0))
    ax = fig.add_subplot(1, 1, 1)
    per_node = ds["bisection_per_node"].values
    unit, factor = display_unit("bytes/s", per_node)
    ax.bar(np.arange(len(labels)), per_node / factor, color="tab:blue")
    ax.set_xticks(np.arange(len(labels)))
    ax.set_xticklabels(labels)
    ax.set_xlabel(axis_label("router prism X x Y x Z", "routers"))
    ax.set_ylabel(axis_label("bisection per node, per direction", unit))
    ax.set_title(f"{ds.attrs.get('machine', '')}: bisection bandwidth per node")
    fig.tight_layout()
    return save_figure(fig, path)
