"""Figures of workload simulations in the style of Feng et al. Fig. 5 (matplotlib Figure objects, Agg, no pyplot).

* :func:`plot_wait_reduction`: (a) bars of the mean wait-time decrease (%) per month, the mean over months dashed;
* :func:`plot_utilisation`: (b) box plots of per-minute utilisation per month, one box per run side by side;
* :func:`plot_fig5`: both panels in one figure, written as PNG through :func:`evaluator.io.save_figure`;
  :func:`plot_fig5_from_study`: the same from a :func:`~evaluator.workload.run.run_schedule` dataset;
* :func:`plot_study`: a workload study's wait reductions and utilisations per machine, mix and run (bars).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import xarray as xr

from ..io import save_figure
from .analysis import _month_labels, _unix_start, utilisation, wait_reduction

__all__ = ["plot_wait_reduction", "plot_utilisation", "plot_fig5", "plot_fig5_from_study", "runs_of", "plot_study"]


def plot_wait_reduction(ax, red: xr.Dataset) -> None:
    """Panel (a): ``wait_reduction`` (from :func:`~evaluator.workload.analysis.wait_reduction`) in % per month."""
    labels = [str(m) for m in red.month.values]
    vals = 100.0 * red.wait_reduction.values
    x = np.arange(len(labels))
    ax.bar(x, np.nan_to_num(vals), color=["tab:blue" if v >= 0 else "tab:red" for v in np.nan_to_num(vals)])
    if np.isfinite(vals).any():
        ax.axhline(np.nanmean(vals), color="k", ls="--", lw=1, label=f"mean {np.nanmean(vals):.1f}%")
        ax.legend(loc="best", fontsize=8)
    ax.axhline(0.0, color="0.5", lw=0.5)
    ax.set_xticks(x, labels, rotation=45, ha="right", fontsize=8)
    ax.set_ylabel("wait time decrease (%)")
    ax.set_title(f"(a) mean wait: {red.attrs.get('new_policy', 'new')} vs {red.attrs.get('base_policy', 'base')}",
                 fontsize=9)


def plot_utilisation(ax, runs: dict[str, xr.Dataset], step_s: float = 60.0) -> None:
    """Panel (b): per-month box plots of utilisation sampled every ``step_s`` s, one box per run."""
    per_run = {}
    labels: set[str] = set()
    for name, ds in runs.items():
        u = utilisation(ds, step_s)
        m = _month_labels(u.time.values, _unix_start(ds), float(ds.submit.values.min()))
        per_run[name] = (u.values, m)
        labels.update(np.unique(m).tolist())
    months = sorted(labels)
    k = len(runs)
    width = 0.8 / max(k, 1)
    colours = ["tab:orange", "tab:blue", "tab:green", "tab:purple", "tab:brown"]
    for i, (name, (u, m)) in enumerate(per_run.items()):
        data = [100.0 * u[m == mo] if np.any(m == mo) else np.array([np.nan]) for mo in months]
        pos = np.arange(len(months)) + (i - (k - 1) / 2) * width
        bp = ax.boxplot(data, positions=pos, widths=width * 0.9, patch_artist=True, showfliers=False,
                        medianprops={"color": "k"}, manage_ticks=False)
        for box in bp["boxes"]:
            box.set_facecolor(colours[i % len(colours)])
            box.set_alpha(0.7)
        ax.plot([], [], color=colours[i % len(colours)], lw=6, alpha=0.7, label=name)
    ax.set_xticks(np.arange(len(months)), months, rotation=45, ha="right", fontsize=8)
    ax.set_ylabel("utilisation per minute (%)")
    ax.set_ylim(0, 105)
    ax.legend(loc="lower right", fontsize=8)
    ax.set_title("(b) system utilisation", fontsize=9)


def plot_fig5(base: xr.Dataset, new: xr.Dataset, out: str | Path, base_label: str | None = None,
              new_label: str | None = None, step_s: float = 60.0) -> Path:
    """Fig. 5 of Feng et al. for two runs of one trace (``base``: e.g. TDN + Slurm; ``new``: RDN + GRAP)."""
    from matplotlib.figure import Figure

    red = wait_reduction(base, new)
    bl = base_label or str(base.attrs.get("policy", "base"))
    nl = new_label or str(new.attrs.get("policy", "new"))
    red.attrs.update(base_policy=bl, new_policy=nl)
    fig = Figure(figsize=(11, 4), layout="constrained")
    ax1, ax2 = fig.subplots(1, 2)
    plot_wait_reduction(ax1, red)
    plot_utilisation(ax2, {bl: base, nl: new}, step_s)
    return save_figure(fig, out)


def runs_of(ds: xr.Dataset) -> dict[str, xr.Dataset]:
    """The per-job datasets of each ``run`` of a :func:`~evaluator.workload.run.run_schedule` dataset."""
    from .simulate import JOB_VARS

    out = {}
    keep = [v for v in list(JOB_VARS) + ["mode"] if v in ds]
    for i, r in enumerate(ds.run.values):
        sub = ds[keep].isel(run=i).drop_vars("run", errors="ignore")
        sub.attrs = {k: v for k, v in ds.attrs.items()}
        sub.attrs["policy"] = str(r)
        out[str(r)] = sub
    return out


def plot_fig5_from_study(ds: xr.Dataset, out: str | Path, step_s: float = 60.0) -> Path:
    """Fig. 5 of a :func:`~evaluator.workload.run.run_schedule` dataset: the last run against the first (a), and
    every run's utilisation (b); with one run, panel (b) only."""
    from matplotlib.figure import Figure

    runs = runs_of(ds)
    names = list(runs)
    if len(names) >= 2:
        fig = Figure(figsize=(11, 4), layout="constrained")
        ax1, ax2 = fig.subplots(1, 2)
        red = wait_reduction(runs[names[0]], runs[names[-1]])
        red.attrs.update(base_policy=names[0], new_policy=names[-1])
        plot_wait_reduction(ax1, red)
    else:
        fig = Figure(figsize=(6, 4), layout="constrained")
        ax2 = fig.subplots(1, 1)
    plot_utilisation(ax2, runs, step_s)
    return save_figure(fig, out)


def plot_study(ds: xr.Dataset, out: str | Path) -> Path:
    """A workload study (dims ``machine``, ``mix``, ``run``; :func:`evaluator.sweep.schedule.run_study`): (a) the
    mean wait-time reduction (%) of every run against the first run of its machine and mix, bars per machine, a
    reference line at 0; (b) the mean utilisation (%) of every run, bars per machine. Categories are bars, not
    lines; machines in the study's order. With a ``seed`` dimension each bar is the mean over the seeds, its error
    bar from the smallest to the largest."""
    from matplotlib.figure import Figure

    machines = [str(m) for m in ds.machine.values]
    runs = [str(r) for r in ds.run.values]
    mixes = [str(x) for x in ds.mix.values]
    x = np.arange(len(machines))
    fig = Figure(figsize=(11, 4), layout="constrained")
    ax1, ax2 = fig.subplots(1, 2)
    series_a = [(x_, r) for x_ in mixes for r in runs[1:]] or [(x_, runs[0]) for x_ in mixes]
    series_b = [(x_, r) for x_ in mixes for r in runs]
    for ax, series, var, scale in ((ax1, series_a, "wait_reduction", 100.0), (ax2, series_b, "mean_utilisation",
                                                                               100.0)):
        width = 0.8 / max(len(series), 1)
        for i, (mix, run) in enumerate(series):
            v = scale * ds[var].sel(mix=mix, run=run)
            vals = v.mean("seed").values if "seed" in v.dims else v.values  # seeds: their mean, their range
            err = np.nan_to_num([vals - v.min("seed").values, v.max("seed").values - vals]) if "seed" in v.dims \
                else None
            ax.bar(x + (i - (len(series) - 1) / 2) * width, np.nan_to_num(vals), width * 0.95, yerr=err, capsize=2,
                   label=f"{run}, {mix}")
        ax.set_xticks(x, machines, fontsize=8)
        ax.set_xlabel("machine (groups x nodes per group)")
        ax.legend(loc="best", fontsize=7)
    ax1.axhline(0.0, color="k", lw=0.8)
    ax1.set_ylabel("mean wait-time decrease [%]")
    ax1.set_title(f"(a) wait reduction against {runs[0]}", fontsize=9)
    ax2.set_ylabel("mean utilisation [%]")
    ax2.set_ylim(0, 105)
    ax2.set_title("(b) system utilisation", fontsize=9)
    fig.suptitle(str(ds.attrs.get("study", "")) + (f": mean over {ds.sizes['seed']} seeds, bars from the smallest to "
                                                   f"the largest" if "seed" in ds.dims else ""), fontsize=10)
    return save_figure(fig, out)
