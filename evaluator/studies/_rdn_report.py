"""The allocation-mode study for people (:mod:`evaluator.studies.rdn`): its summaries over the seeds, its table
(:func:`format_study`), the speedup table (:func:`format_speedup_table`) and its plot (:func:`plot_study`)."""

from __future__ import annotations

import numpy as np
import xarray as xr

from ..errors import NOT_COMPUTED
from ._rdn_points import BOUNDS, TDN_ADAPTIVE, TDN_ROUTINGS



SUMMARIES = ("mean", "std", "min", "max")
"""Summaries over the ``seed`` dimension, one variable each (``gain_adaptive_mean``, ...): ``std`` is the sample
standard deviation (``ddof=1``; NaN with one seed); a NaN draw makes every summary of the point NaN (a mean over
fewer draws would be another statistic), an infinite one its mean and max."""


def _summaries(a: np.ndarray) -> dict[str, np.ndarray]:
    """``{summary: array}`` of ``a`` (last axis: the seeds), :data:`SUMMARIES`."""
    with np.errstate(invalid="ignore", over="ignore"):
        return {"mean": a.mean(axis=-1), "min": a.min(axis=-1), "max": a.max(axis=-1),
                "std": a.std(axis=-1, ddof=1) if a.shape[-1] > 1 else np.full(a.shape[:-1], np.nan)}


_SUMMARY_TEXT = {"mean": "mean over the seeds (the TDN's random mappings)",
                 "std": "sample standard deviation (ddof=1) over the seeds",
                 "min": "smallest over the seeds", "max": "largest over the seeds"}


def _over_seeds(ds: xr.Dataset, name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool]:
    """``(mean, min, max, per_seed)`` of ``name`` over the seeds, each of dims ``(pattern, groups)``
    (``per_seed``: whether it has a ``seed`` dimension; else the three are the values)."""
    a = ds[name]
    if "seed" not in a.dims:
        v = a.transpose("pattern", "groups").values
        return v, v, v, False
    st = _summaries(a.transpose("pattern", "groups", "seed").values)
    return st["mean"], st["min"], st["max"], a.sizes["seed"] > 1


def _cells(ds: xr.Dataset, name: str, fmt, scale: float = 1.0) -> list[str]:
    """One text per point (pattern-major): ``fmt(mean)``, then ``[fmt(min), fmt(max)]`` over the seeds where
    ``name`` has more than one; ``n/a`` where NaN (not computed), ``inf`` where infinite (the background leaves a
    link the job uses no capacity: the job never finishes; a gain against such a time is ``inf`` too)."""
    mean, lo, hi, spread = _over_seeds(ds, name)

    def f(v):
        return "n/a" if np.isnan(v) else ("inf" if v > 0 else "-inf") if np.isinf(v) else fmt(v / scale)

    return [f(m) + (f" [{f(a)}, {f(b)}]" if spread and not np.isnan(m) else "")
            for m, a, b in zip(mean.reshape(-1), lo.reshape(-1), hi.reshape(-1))]


def _time_cells(ds: xr.Dataset, name: str) -> tuple[str, list[str]]:
    """A time column in one decimal SI unit chosen for it (DESIGN.md): its header and its cells."""
    from ..display import display_unit, format_number

    unit, factor = display_unit("s", _over_seeds(ds, name)[0].reshape(-1))
    return f"{name} [{unit}]", _cells(ds, name, format_number, factor)


def _routing_cells(ds: xr.Dataset) -> list[str]:
    """The TDN's fastest oblivious routing per point: its name, or each name with its count of seeds."""
    r = ds["tdn_oblivious_routing"]
    r = r.expand_dims("seed", axis=-1) if "seed" not in r.dims else r.transpose("pattern", "groups", "seed")
    out = []
    for row in r.values.reshape(-1, r.shape[-1]):
        names, counts = np.unique([x for x in row if x], return_counts=True)
        order = np.argsort(-counts, kind="stable")
        out.append(str(names[0]) if len(names) == 1 else
                   ", ".join(f"{names[k]} {counts[k]}" for k in order) if len(names) else "n/a")
    return out


def format_study(ds: xr.Dataset) -> str:
    """The study as three tables for people: times and gains (``x``: the ratio ``T_TDN / T_RDN``), the TDN's
    slowdown from the background per routing, hops; times in decimal SI units, one per column. A figure that
    depends on the TDN's random mapping is the mean over the seeds, then ``[min, max]`` over them."""
    import pandas as pd

    index = pd.MultiIndex.from_product([list(ds.pattern.values), [int(q) for q in ds.groups.values]],
                                       names=["pattern", "groups"])
    shown = tuple(b for b in BOUNDS if b in ds.attrs.get("tdn_bounds", ",".join(BOUNDS)).split(","))
    asked = ds.attrs.get("tdn_adaptive", ",".join(TDN_ADAPTIVE)).split(",")
    adaptive = tuple(a for a in TDN_ADAPTIVE if f"tdn_{a}_time_bg" in ds and a in asked)
    tcols = ["rdn_time_bg", "tdn_oblivious_time_bg"] + [f"tdn_{a}_time_bg" for a in adaptive] + \
        [f"tdn_{b}_time_bg" for b in shown]
    t = pd.DataFrame(dict(_time_cells(ds, c) for c in tcols), index=index)
    t.insert(2, "oblivious routing", _routing_cells(ds))
    x = lambda v: f"{v:.2f}x"  # noqa: E731
    for b in ("adaptive",) + adaptive + ("oblivious", "optimal"):
        if b in ("oblivious",) + adaptive or b in shown:
            t[f"gain vs {b}"] = _cells(ds, f"gain_{b}", x)
    for b in ("adaptive",) + adaptive + ("oblivious",):
        if b != "adaptive" or b in shown:              # (the adaptive bound: only where it was asked for)
            t[f"no bg vs {b}"] = _cells(ds, f"gain_{b}_no_bg", x)
    pct = lambda v: f"{100 * v:+.1f}%"  # noqa: E731
    s = pd.DataFrame({rt: _cells(ds, f"tdn_bg_slowdown_{rt}", pct) for rt in TDN_ROUTINGS + adaptive + shown},
                     index=index)
    h = pd.DataFrame({"RDN hops": _cells(ds, "rdn_hops", lambda v: f"{v:.2f}"),
                      "TDN hops": _cells(ds, "tdn_oblivious_hops", lambda v: f"{v:.2f}"),
                      "fewer hops": _cells(ds, "hops_reduction", pct),
                      "fewer hops, both minimal": _cells(ds, "hops_reduction_minimal", pct)}, index=index)
    notes = sorted({w for v in ds.bound_refused.values.reshape(-1) for w in str(v).split("; ") if w})
    n = int(ds.sizes.get("seed", 1))
    seeds = (f"{n} seeds (random mappings of the TDN, base seed {ds.attrs['seed']}): mean [min, max] over them"
             if n > 1 else f"seed {ds.attrs['seed']}, one random mapping of the TDN")
    lines = [f"{ds.attrs['machine']}, {100 * ds.attrs['background']:g}% background, {seeds}; "
             "times with background; gain = T_TDN / T_RDN, against "
             + ("three TDN baselines side by side: adaptive (the ideal adaptive bound, best per-group-pair mix of "
                "minimal and Valiant: the headline), ugal (UGAL-G, the adaptive routing Dragonflies deploy, a "
                "flow-level model that adapts per router pair and can beat that bound) and oblivious"
                if "ugal" in adaptive else
                "two TDN baselines side by side (UGAL-G not computed: --adaptive none): adaptive (the ideal adaptive "
                "bound, best per-group-pair mix of minimal and Valiant: the headline) and oblivious")
             + " (the fastest of minimal/valiant/valiant_router: the upper end; oblivious routing: "
             "the fastest, with its count of seeds where they differ); the lowest gain is the conservative end "
             "(against any routing: --bounds optimal); n/a: not computed (below); inf: the background leaves a link "
             "the job needs no capacity",
             t.to_string(), "", "TDN slowdown from the background (time_bg / time - 1), per routing and bound:",
             s.to_string(), "", h.to_string()]
    if notes:
        lines += ["", "bounds and UGAL not computed (n/a):"] + [f"  {w}" for w in notes]
    why = {(pat, int(q)): str(ds.refused.sel(pattern=pat, groups=q).item()) for pat in ds.pattern.values
           for q in ds.groups.values}
    points = [f"  {pat} {q} groups: {w}" for (pat, q), w in why.items() if w and w != NOT_COMPUTED]
    left = sum(w == NOT_COMPUTED for w in why.values())
    if left:  # an interrupted run: one line for the points it did not reach
        points.append(f"  {left} of the {len(why)} points, the last in the order pattern then groups: {NOT_COMPUTED}")
    if points:
        lines += ["", "points not computed (n/a):"] + points
    return "\n".join(lines)


def format_speedup_table(table: xr.Dataset) -> str:
    """The workload's speedup table (:func:`speedup_table`) for people: one row per GRAP mode, one column per job
    size in groups, the ratio ``T_TDN / T_RDN`` with background (``1.30x``: the paper's "30% speedup"), the mean
    over the study's seeds, then ``[min, max]`` over them where there are several."""
    import pandas as pd

    x = lambda v: "n/a" if not np.isfinite(v) else f"{v:.2f}x"  # noqa: E731
    n = int(table.attrs.get("n_seeds", 1))
    spread = n > 1 and "speedup_min" in table

    def cell(mo, q):
        v = float(table.speedup.sel(mode=mo, groups=q))
        if not spread or not np.isfinite(v):
            return x(v)
        return f"{x(v)} [{x(float(table.speedup_min.sel(mode=mo, groups=q)))}, " \
               f"{x(float(table.speedup_max.sel(mode=mo, groups=q)))}]"

    df = pd.DataFrame({f"{int(q)} groups": [cell(mo, q) for mo in table["mode"].values] for q in table.groups.values},
                      index=pd.Index([f"{mo} ({pat})" for mo, pat in zip(table["mode"].values,
                                                                          table["pattern"].values)], name="mode"))
    seeds = f"; mean [min, max] over {n} seeds" if spread else ""
    return (f"speedup table, {table.attrs.get('machine', '')}: T_TDN / T_RDN with background, against "
            f"{table.attrs.get('baseline', '')} ({table.attrs.get('baseline_text', '')}){seeds}\n" + df.to_string())


def plot_study(ds: xr.Dataset, path) -> None:
    """One PNG of the study: RDN-GRAP's gain ``T_TDN / T_RDN`` (with background) against job size, both ends
    (the ideal adaptive bound, solid; the fastest oblivious routing, dashed), a reference line at 1; and the
    completion times with background (RDN-GRAP solid, the TDN's fastest oblivious routing dashed) in one
    decimal SI unit. One colour per pattern, job sizes ascending on a log axis, points marked; what depends on
    the TDN's random mapping is the mean over the seeds with a band from their min to their max."""
    from matplotlib.figure import Figure

    from ..display import axis_label, shared_unit
    from ..io import save_figure

    fig = Figure(figsize=(11, 4.2))
    ax_g, ax_t = fig.subplots(1, 2)
    q = np.asarray(ds.groups.values, dtype=float)
    stats = {v: _over_seeds(ds, v) for v in ("rdn_time_bg", "tdn_oblivious_time_bg", "gain_adaptive",
                                              "gain_oblivious") if v in ds}
    unit, factor = shared_unit("s", [stats[v][0] for v in ("rdn_time_bg", "tdn_oblivious_time_bg")])
    for k, pat in enumerate(ds.pattern.values):
        colour = f"C{k}"
        for b, style in (("adaptive", "-"), ("oblivious", "--")):
            if f"gain_{b}" in stats and np.isfinite(stats[f"gain_{b}"][0][k]).any():
                mean, lo, hi, spread = stats[f"gain_{b}"]
                ax_g.plot(q, mean[k], style, marker="o", color=colour, label=f"{pat}, vs {b}")
                if spread:                             # min-max over the seeds
                    ax_g.fill_between(q, lo[k], hi[k], color=colour, alpha=0.15, linewidth=0)
        ax_t.plot(q, stats["rdn_time_bg"][0][k] / factor, "-", marker="o", color=colour, label=f"{pat}, RDN-GRAP")
        mean, lo, hi, spread = stats["tdn_oblivious_time_bg"]
        ax_t.plot(q, mean[k] / factor, "--", marker="s", color=colour, label=f"{pat}, TDN oblivious")
        if spread:
            ax_t.fill_between(q, lo[k] / factor, hi[k] / factor, color=colour, alpha=0.15, linewidth=0)
    ax_g.axhline(1.0, color="0.3", linewidth=0.8)
    ax_g.set_ylabel(axis_label("gain T_TDN / T_RDN", "1"))
    ax_t.set_ylabel(axis_label("completion time with background", unit))
    ax_t.set_yscale("log")
    for ax in (ax_g, ax_t):
        ax.set_xscale("log", base=2)
        ax.set_xticks(q, [str(int(v)) for v in q])
        ax.set_xlabel(axis_label("job size", "groups"))
        ax.legend(fontsize=7)
        ax.grid(True, alpha=0.3)
    n = int(ds.sizes.get("seed", 1))
    fig.suptitle(f"RDN-GRAP vs TDN on {ds.attrs.get('machine', '')}, "
                 f"{100 * float(ds.attrs.get('background', 0)):g}% background"
                 + (f"; mean over {n} random mappings of the TDN, band: min-max" if n > 1 else "")
                 + ("\ninterrupted: " + ds.attrs["interrupted"].split(";")[0] if "interrupted" in ds.attrs else ""))
    fig.tight_layout()
    save_figure(fig, path)
