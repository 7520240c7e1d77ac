"""``evaluator bench``: throughput of the batched kernels against two baselines.

Baselines (:mod:`evaluator.bench.baseline`): a per-flow Python walk, and a
SciPy sparse routing matrix ``R`` (links x router pairs on Dragonflies, built
once per topology and routing; on tori built with the points; fat trees:
applied per point), with the completion time (max load / capacity) per
point, applied two ways and timed on the same points, the faster kept per
routing class (the strongest reference, ``evaluator.bench.baseline.strongest``):
``batched`` (``loads = R @ D``, ``D`` the demand of a batch of points as one
sparse matrix [column, point]; a torus's ``R`` over the batch's router pairs)
and ``per point`` (a Dragonfly: ``R[:, used pairs] @ bytes``; a torus: ``R``
links x flows built for the point, ``R @ bytes``). Their loads are compared
with the evaluator's link for link; their times are reported as the ratios
``vs per-flow`` and ``vs SciPy`` (per-point cost: the faster way's apply on a
Dragonfly, its build plus apply on a torus; a Dragonfly's build is reported
apart; the row's note names the way kept).

Scenarios (issues 5 and 10):

1. ``small``: many small configurations. DF(4,8,4) (1,056 nodes), a 3D
   stencil with beta = (8,8,4) and (16,8,8), every feasible gamma
   (Prisacari's Cartesian placement), minimal and Valiant routing, placement
   seeds repeated until there are >= 100,000 points (5,376 with ``--quick``).
   Timed on one CPU core and on two (two worker processes, one core each,
   half of the points each, started together), against the per-flow walk on
   stratified samples of the same points (timed and extrapolated) and SciPy
   on every point, batched and per point in turn, the faster kept per class
   (the evaluator's repeats); sampled points' loads are compared link for link,
   and SciPy's completion times too. SciPy on two cores is
   measured as the evaluator is: both workers time it on their own points,
   started together (the sum of their rates; the note gives 2 x the
   one-core rate beside it: the two cores share caches and, on a VM,
   possibly a physical core).
2. ``mira``: Mira, 16x16x12x8x2 = 49,152 nodes, DOR in BG/Q order (longest
   dimension first): 5D and 4D stencils, bisection pairing, uniform
   all-to-all (never materialised). One evaluation each (warm; the one-off
   compilation is reported apart). Checked link for link against the
   per-flow walk on a BG/Q midplane, 4x4x4x4x2, with the same patterns, and
   against the SciPy matrix on Mira itself; the per-flow time on Mira is
   extrapolated from a random sample of its flows.
3. ``dragonfly``: DF(8,16,8) (16,512 nodes, 129 groups), minimal and
   Valiant, uniform all-to-all and a 3D stencil; checked on DF(2,4,2).
4. ``torus``: a 3-D one-hop stencil on a 256x256x4 torus (128x128x4 with
   ``--quick``) under DOR; checked on 8x8x4.
5. ``sweep``: the README's 10^6-point study, ``evaluator sweep
   sweeps=dragonfly_nne_placement +sweep.axes.placement.seed={range:[0,3125]}``
   (10 seeds, 3,200 points, with ``--quick``), end to end in a subprocess:
   grid and feasible points/s, the driver's peak RSS. ``vs SciPy``: feasible
   points/s against SciPy run as a sweep (each feasible point's placement
   from the NumPy generator, timed in scenario 1, then the apply; start-up
   left out); the note gives the ratio against the apply alone too.
6. ``optimize``: ``evaluator optimize --tasks 256 --alpha 512,512,512
   --routings minimal,valiant`` in a subprocess, cold (empty
   ``XDG_CACHE_HOME``) and run again: wall time with Python start-up,
   configurations/s.
7. ``scaling``: time against nodes (tori, sparse stencil and dense
   all-to-all), flows (random flows on Mira) and batch size (scenario 1's
   kernel); a PNG plot.
8. ``lp``: the batched JAX LP solver (MPAX PDHG) against HiGHS on the same
   Model 1 instances (:mod:`evaluator.bench.lp`): >= 100 many-to-many
   instances on a 512-node BG/Q partition, one on 8,192 nodes.
9. ``startup``: a library user's first ``ev.evaluate`` of an 8x8 torus in a
   new Python process, cold (empty compilation cache) and in later processes
   (warm cache: ``import evaluator`` turns it on), import excluded, the ratio
   and issue 24's 0.5 s target (:mod:`evaluator.bench.startup`).

Every kernel scenario runs in its own worker process, so that "peak memory" is
the scenario's own peak resident set size (taken before the baselines run)
and the one-core runs can be pinned to one CPU. Results: a table on stdout
and the same rows as JSON under ``results/bench/``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ._big import FAT_TREE_K, TORUS_DIMS, _big_table_rows, _w_dragonfly, _w_fat_tree, _w_mira, _w_torus
from ..io import check_writable
from ._common import _collect, _device, _device_label, _launch, _peak_mb, _timed, child_timeout
from ._small import CHUNK, _run_small, _w_small

__all__ = ["run", "SCENARIOS", "format_table", "parse_cli_output"]

SCENARIOS = ("small", "mira", "dragonfly", "torus", "fat_tree", "jobs", "paths", "sweep", "optimize", "scaling", "lp",
             "startup", "mapping", "moves", "time")
DEFAULT_SCENARIOS = tuple(s for s in SCENARIOS if s != "moves")
"""What a run without ``--only`` runs: every scenario but ``moves`` (its rows are the first rows of ``mapping``)."""
SWEEP_SEEDS = {False: 3125, True: 10}  # placement seeds of the end-to-end sweep: 10^6 points (full), 3,200 (quick)
OPTIMIZE_ARGS = ("--tasks", "256", "--alpha", "512,512,512", "--routings", "minimal,valiant")


# --------------------------------------------------------------------------------------
# Scenario 4: scaling
# --------------------------------------------------------------------------------------


def _w_scaling(args) -> dict:
    from .. import placement, routing, topology, traffic
    from ..traffic import dense as structured
    from ..evaluation import evaluate_batch

    rt = routing.dor()
    out: dict = {"nodes": [], "flows": [], "batch": []}
    sides = (4, 8, 12, 16, 24) if args.quick else (4, 8, 12, 16, 24, 32, 40)
    for k in sides:
        t = topology.torus((k, k, k))
        n = t.n_nodes
        st = traffic.stencil((k, k, k), (k, k, k), 8.0)
        rnd = placement.fully_random(t, n, seed=1)
        a2a = structured.all_to_all(n, 8.0)
        lin = placement.linear(t, n)
        for label, tr, pl in (("torus k^3 stencil (sparse)", st, rnd), ("torus k^3 all-to-all (dense)", a2a, lin)):
            evaluate_batch(t, rt, tr, pl)
            out["nodes"].append({"series": label, "nodes": n, "flows": tr.n_flows,
                                 "seconds": _timed(lambda: evaluate_batch(t, rt, tr, pl))})
    for h in (range(2, 7) if args.quick else range(2, 9)):
        d = topology.dragonfly(h, 2 * h, h)
        n = d.n_nodes
        a2a = structured.all_to_all(n, 8.0)
        lin = placement.linear(d, n)
        val = routing.valiant()
        evaluate_batch(d, val, a2a, lin)
        out["nodes"].append({"series": "DF(h,2h,h) all-to-all (dense), Valiant", "nodes": n, "flows": a2a.n_flows,
                             "seconds": _timed(lambda: evaluate_batch(d, val, a2a, lin))})
    mira = topology.bgq_partition((4, 4, 3, 2))
    n = mira.n_nodes
    lin = placement.linear(mira, n)
    rt_b = routing.dor("longest_first")
    rng = np.random.default_rng(3)
    top = 19 if args.quick else 22
    for e in range(10, top + 1, 3 if args.quick else 2):
        F = 1 << e
        src = rng.integers(0, n, F)
        far = rng.integers(0, n, F)  # random destinations: 13.5 hops on average
        c = np.stack(np.unravel_index(src, mira.dims), axis=1)
        c[:, 0] = (c[:, 0] + 1) % mira.dims[0]  # the +A neighbour: one hop
        near = np.ravel_multi_index(tuple(c.T), mira.dims)
        for label, dst in (("random flows on Mira", far), ("one-hop flows on Mira", near)):
            tr = traffic.from_flows(n, src, dst, 1.0)
            evaluate_batch(mira, rt_b, tr, lin)
            res = evaluate_batch(mira, rt_b, tr, lin)
            out["flows"].append({"series": label, "flows": F, "mean_hops": float(res.metrics["mean_hops"][0]),
                                 "seconds": _timed(lambda: evaluate_batch(mira, rt_b, tr, lin))})
    df = topology.dragonfly(4, 8, 4)
    beta, gamma = (8, 8, 4), (4, 4, 2)
    st = traffic.stencil(beta, beta, 8.0)
    batches = (1, 4, 16, 64, 256, 1024) if args.quick else (1, 4, 16, 64, 256, 1024, 4096, 16384)
    pls = [placement.dragonfly_cartesian(df, beta, gamma, seed=s) for s in range(max(batches))]
    for rt_df in (routing.minimal(), routing.valiant()):
        for B in batches:
            evaluate_batch(df, rt_df, st, pls[:B], chunk_size=CHUNK)
            sec = _timed(lambda: evaluate_batch(df, rt_df, st, pls[:B], chunk_size=CHUNK), repeat=3 if B < 4096 else 1)
            out["batch"].append({"series": f"DF(4,8,4) stencil {rt_df.label}", "batch": B, "seconds": sec,
                                 "per_point_s": sec / B})
    out["peak_mb"] = _peak_mb()
    out["device"] = _device()
    return out


def _w_jobs(args) -> dict:
    from .jobs import w_jobs

    return w_jobs(args, _device, _peak_mb, _timed)


def _w_mapping(args) -> dict:
    from .mapping import w_mapping

    return w_mapping(args, _device, _peak_mb, _timed)


def _w_moves(args) -> dict:
    from .mapping import w_moves

    return w_moves(args, _device, _peak_mb, _timed)


def _w_lp(args) -> dict:
    from .lp import w_lp

    return w_lp(args, _device, _peak_mb, _timed)


def _w_time(args) -> dict:
    from .time import w_time

    return w_time(args, _device, _peak_mb, _timed)


def _w_paths(args) -> dict:
    from .paths import w_paths

    return w_paths(args, _device, _peak_mb, _timed)


WORKERS = {"small": _w_small, "mira": _w_mira, "dragonfly": _w_dragonfly, "torus": _w_torus,
           "fat_tree": _w_fat_tree, "jobs": _w_jobs,
           "paths": _w_paths, "scaling": _w_scaling, "lp": _w_lp, "mapping": _w_mapping, "moves": _w_moves,
           "time": _w_time}


# --------------------------------------------------------------------------------------
# Parent: launch workers, assemble the table
# --------------------------------------------------------------------------------------


# --------------------------------------------------------------------------------------
# End to end: the sweep and optimize commands, as a user runs them
# --------------------------------------------------------------------------------------

_DRIVER = ("import atexit, sys\n"
           "from evaluator import cli\n"
           "def peak():\n"
           "    kib = [int(line.split()[1]) for line in open('/proc/self/status') if line.startswith('VmHWM:')]\n"
           "    print('bench-driver-peak-kib', kib[0] if kib else -1, flush=True)\n"
           "atexit.register(peak)\n"
           "cli.run()\n")
"""The ``evaluator`` console command (:func:`evaluator.cli.run`, quick exit included) in a process that reports
its own peak RSS at exit: ``VmHWM``, the high-water mark of this program's memory (``ru_maxrss`` would count the
benchmark's own memory: it survives the ``exec`` of a ``vfork``-ed child)."""


def _run_cli(args: list[str], env: dict, out_dir: Path) -> dict:
    """Run ``evaluator ARGS`` in a fresh Python process; wall time (start-up included), driver peak, dataset attrs."""
    from ._common import run_child

    t0 = time.perf_counter()
    proc = run_child([sys.executable, "-c", _DRIVER, *args], env,
                     f"`evaluator {args[0] if args else ''}` (a bench scenario)", ["evaluator", *args])
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        tail = " | ".join((proc.stderr or proc.stdout).strip().splitlines()[-5:])
        raise RuntimeError(f"`evaluator {' '.join(args)}` failed with exit status {proc.returncode}: {tail}")
    return {"wall_s": wall, **parse_cli_output(proc.stdout, out_dir), "command": "evaluator " + " ".join(args)}


def parse_cli_output(stdout: str, out_dir: Path) -> dict:
    """Driver peak RSS (decimal MB) from :data:`_DRIVER`'s last line, and the dataset's ``n_points``, ``n_feasible``
    and ``timing_json`` attributes (the dataset named on a ``dataset: PATH`` line, else the one under
    ``out_dir``)."""
    import re

    m = re.search(r"^bench-driver-peak-kib (\d+)\s*$", stdout, re.M)
    out = {"driver_peak_mb": int(m.group(1)) * 1024 / 1e6 if m else float("nan")}
    m = re.search(r"^dataset: (.+?)\s*$", stdout, re.M)
    path = Path(m.group(1)) if m else None
    if path is None or not path.exists():
        found = sorted(p for pat in ("*.nc", "*.zarr") for p in Path(out_dir).rglob(pat))
        path = found[-1] if found else None
    attrs = _dataset_attrs(path) if path is not None else {}
    out["n_points"] = int(attrs.get("n_points", -1))
    out["n_feasible"] = int(attrs.get("n_feasible", -1))
    try:
        out["timing"] = json.loads(attrs.get("timing_json", "{}"))
    except (TypeError, ValueError):
        out["timing"] = {}
    return out


def _dataset_attrs(path: Path) -> dict:
    """Attributes of a sweep dataset (netCDF or zarr), without loading its variables."""
    import xarray as xr

    path = Path(path)
    ds = xr.open_zarr(path) if path.is_dir() else xr.open_dataset(path, engine="h5netcdf")
    with ds:
        return dict(ds.attrs)


def _cpu_label() -> str:
    return f"cpu x{len(os.sched_getaffinity(0))}"


def _run_sweep(quick: bool, log, small: dict | None) -> tuple[list[dict], dict]:
    """The README's 10^6-point study (3,200 points with ``quick``) as ``evaluator sweep`` in a subprocess, twice:
    with an empty compilation cache (``cold``), then again on the cache it filled (``warm``: a user's second run,
    the issue-36 figure), each into a fresh output directory (nothing resumed)."""
    seeds = SWEEP_SEEDS[bool(quick)]
    rows, raw = [], {}
    with tempfile.TemporaryDirectory(prefix="bench-sweep-") as tmp:
        env = dict(os.environ, XDG_CACHE_HOME=str(Path(tmp, "cache")))  # empty at first: a cold start
        for label in ("cold", "warm"):
            out_dir = Path(tmp, f"results-{label}")
            args = ["sweep", "sweeps=dragonfly_nne_placement", f"+sweep.axes.placement.seed={{range:[0,{seeds}]}}",
                    f"sweep.output_dir={out_dir}", "--no-progress"]
            log(f"end to end: evaluator {' '.join(args[:3])} ({label} compilation cache)")
            r = raw[label] = _run_cli(args, env, out_dir)
            rows.append(_sweep_row(r, seeds, label, small))
    return rows, raw


def _timing_text(t: dict) -> str:
    """A dataset's ``timing_json`` record as ``key value`` pairs (numbers to 3 digits, flags as written)."""
    return ", ".join(f"{k} {v}" if isinstance(v, bool) else f"{k} {v:.3g}" for k, v in t.items())


def _sweep_row(r: dict, seeds: int, label: str, small: dict | None) -> dict:
    """The table row of one end-to-end sweep run ``r`` (:func:`_run_cli`'s record)."""
    n, feas, wall = r["n_points"], r["n_feasible"], r["wall_s"]
    rate, feas_rate = n / wall, feas / wall
    ratio = ratio_scipy = float("nan")
    against = ""
    cores = len(os.sched_getaffinity(0))
    if small:  # the same (beta, gamma, routing) mix as scenario 1: its baselines' rates apply
        ratio = feas_rate / small["per_flow_rate"]
        measured = small.get("scipy_rate_2_cores") if cores == 2 else None
        apply_rate = measured or cores * small["scipy_rate"]  # SciPy's apply alone, on these cores
        # SciPy as a sweep: each feasible point's placement built by the NumPy generator (scenario 1's build
        # time per point), then applied; feasibility decided once per configuration, start-up left out
        e2e_rate = cores / (small["place_s_per_point"] + cores / apply_rate)
        ratio_scipy = feas_rate / e2e_rate
        against = (f"vs SciPy: against SciPy as a sweep, NumPy placement + apply per feasible point "
                   f"({e2e_rate:,.0f} points/s on {cores} cores, start-up left out); against its apply alone "
                   f"({apply_rate:,.0f} points/s{', measured on 2 cores' if measured else ''}): "
                   f"{feas_rate / apply_rate:.2f}x; ")
    t = r["timing"]
    timing = _timing_text(t)
    return {"scenario": (f"end to end: evaluator sweep, {seeds:,} seeds, {label} ({feas:,} feasible: "
                         f"{feas_rate:,.0f}/s)"),
            "points": n, "seconds": wall, "points_per_s": rate, "ratio": ratio, "ratio_scipy": ratio_scipy,
            "check": "", "peak_mb": r["driver_peak_mb"], "device": f"{_cpu_label()} (Ray)",
            "note": (f"grid points/s {rate:,.0f}, feasible points/s {feas_rate:,.0f} (ratios: feasible points "
                     f"against the baselines' scenario-1 rates); {against}wall includes Python and "
                     f"Ray start-up; {'an empty' if label == 'cold' else 'the same'} XDG_CACHE_HOME; peak MB is "
                     f"the driver's; dataset timing: {timing}; command: {r['command']}")}


def _run_optimize(quick: bool, log) -> tuple[list[dict], dict]:
    """``evaluator optimize`` (the README's command) twice in subprocesses: cold compile cache, then again."""
    rows, raw = [], {}
    with tempfile.TemporaryDirectory(prefix="bench-optimize-") as tmp:
        env = dict(os.environ, XDG_CACHE_HOME=str(Path(tmp, "cache")))  # empty at first: a cold start
        for label in ("cold", "run again"):
            out_dir = Path(tmp, label.replace(" ", "-"))
            args = ["optimize", *OPTIMIZE_ARGS, "--no-progress", f"sweep.output_dir={out_dir}"]
            log(f"end to end: evaluator {' '.join(args[:7])} ({label})")
            r = raw[label] = _run_cli(args, env, out_dir)
            n, wall = r["n_points"], r["wall_s"]
            timing = _timing_text(r["timing"])
            rows.append({
                "scenario": f"end to end: evaluator optimize --tasks 256 ({label})", "points": n, "seconds": wall,
                "points_per_s": n / wall, "ratio": float("nan"), "ratio_scipy": float("nan"),
                "check": f"{r['n_feasible']:,} feasible", "peak_mb": r["driver_peak_mb"], "device": _cpu_label(),
                "note": (f"configurations/s {n / wall:,.0f}; wall includes Python start-up; "
                         f"{'fresh' if label == 'cold' else 'the same'} XDG_CACHE_HOME; dataset timing: {timing}; "
                         f"command: {r['command']}")})
    return rows, raw


def _fit(xs, ys) -> float:
    """Slope of log(y) against log(x) over the upper half of the points."""
    xs, ys = np.asarray(xs, float), np.asarray(ys, float)
    h = len(xs) // 2
    return float(np.polyfit(np.log(xs[h:]), np.log(ys[h:]), 1)[0]) if len(xs) >= 3 else float("nan")


def _scaling_rows(data: dict) -> list[dict]:
    rows = []
    dev = _device_label(data["device"])
    for series in sorted({r["series"] for r in data["nodes"]}):
        pts = [r for r in data["nodes"] if r["series"] == series]
        slope = _fit([p["nodes"] for p in pts], [p["seconds"] for p in pts])
        rows.append({"scenario": f"scaling, {series}: time ~ N^{slope:.2f}",
                     "points": len(pts), "seconds": sum(p["seconds"] for p in pts), "points_per_s": float("nan"),
                     "ratio": float("nan"), "check": "", "peak_mb": data["peak_mb"], "device": dev,
                     "note": "; ".join(f"N={p['nodes']}: {p['seconds'] * 1e3:.1f} ms" for p in pts)})
    for series in sorted({r["series"] for r in data["flows"]}):
        pts = [r for r in data["flows"] if r["series"] == series]
        hops = np.mean([p["mean_hops"] for p in pts])
        rows.append({"scenario": f"scaling, {series} ({hops:.1f} hops): time ~ F^"
                                 f"{_fit([p['flows'] for p in pts], [p['seconds'] for p in pts]):.2f}",
                     "points": len(pts), "seconds": sum(p["seconds"] for p in pts), "points_per_s": float("nan"),
                     "ratio": float("nan"), "check": "", "peak_mb": data["peak_mb"], "device": dev,
                     "note": "; ".join(f"F=2^{int(math.log2(p['flows']))}: {p['seconds'] * 1e3:.1f} ms" for p in pts)})
    for series in sorted({r["series"] for r in data["batch"]}):
        pts = [r for r in data["batch"] if r["series"] == series]
        best = min(pts, key=lambda p: p["per_point_s"])
        rows.append({"scenario": f"scaling, batch size, {series}", "points": sum(p["batch"] for p in pts),
                     "seconds": sum(p["seconds"] for p in pts), "points_per_s": 1.0 / best["per_point_s"],
                     "ratio": float("nan"), "check": "", "peak_mb": data["peak_mb"], "device": dev,
                     "note": "; ".join(f"B={p['batch']}: {p['per_point_s'] * 1e6:.0f} us/pt" for p in pts)})
    return rows


def _plot(data: dict, path: Path) -> None:
    from matplotlib.figure import Figure

    from ..io import save_figure

    fig = Figure(figsize=(15, 4.2))
    axes = fig.subplots(1, 3)
    ax = axes[0]
    for series in sorted({r["series"] for r in data["nodes"]}):
        pts = [r for r in data["nodes"] if r["series"] == series]
        ax.loglog([p["nodes"] for p in pts], [p["seconds"] for p in pts], "o-", label=series)
    xs = np.array(sorted({r["nodes"] for r in data["nodes"]}), float)
    ax.loglog(xs, xs / xs[-1] * max(r["seconds"] for r in data["nodes"]), "k:", label="~ N")
    ax.set(xlabel="nodes N", ylabel="seconds per evaluation", title="time vs machine size (one evaluation)")
    ax.legend()
    ax = axes[1]
    for series in sorted({r["series"] for r in data["flows"]}):
        pts = [r for r in data["flows"] if r["series"] == series]
        hops = np.mean([p["mean_hops"] for p in pts])
        ax.loglog([p["flows"] for p in pts], [p["seconds"] for p in pts], "o-", label=f"{series} ({hops:.1f} hops)")
    F = np.array(sorted({r["flows"] for r in data["flows"]}), float)
    top = max(r["seconds"] for r in data["flows"])
    ax.loglog(F, F / F[-1] * top, "k:", label="~ F")
    ax.set(xlabel="flows F (Mira, 49,152 nodes, 540,672 links)", ylabel="seconds per evaluation",
           title="time vs flows (sparse, DOR)")
    ax.legend()
    ax = axes[2]
    for series in sorted({r["series"] for r in data["batch"]}):
        p = [r for r in data["batch"] if r["series"] == series]
        ax.loglog([q["batch"] for q in p], [q["per_point_s"] * 1e6 for q in p], "o-", label=series)
    ax.set(xlabel="points per evaluate_batch call", ylabel="microseconds per point", title="time vs batch size")
    ax.legend()
    fig.suptitle(f"evaluator bench scaling ({_device_label(data['device'])})")
    fig.tight_layout()
    save_figure(fig, path, dpi=110)


def _fmt(v, spec: str) -> str:
    if isinstance(v, float) and not math.isfinite(v):
        return "-"
    return format(v, spec)


def _ratio_cell(v, na: str = "") -> str:
    if isinstance(v, (int, float)) and math.isfinite(v):
        return f"{v:,.4g}x" if v >= 0.1 else f"{v:.2g}x"
    return na or "-"


def format_table(rows: list[dict]) -> str:
    """The bench rows as a fixed-width text table.

    Columns: scenario, points, time s, points/s, ``vs per-flow`` and ``vs SciPy``
    (points/s against each baseline's on the same points; ``R too large`` where
    the SciPy matrix was refused; ``-`` where there is no comparison), check,
    peak MB, device.
    """
    head = ["scenario", "points", "time s", "points/s", "vs per-flow", "vs SciPy", "check", "peak MB", "device"]
    body = [[r["scenario"], _fmt(r["points"], ","), _fmt(r["seconds"], ".3g"), _fmt(r["points_per_s"], ",.4g"),
             _ratio_cell(r["ratio"]), _ratio_cell(r.get("ratio_scipy", float("nan")), r.get("scipy_na", "")),
             r["check"], _fmt(r["peak_mb"], ",.0f"), r["device"]] for r in rows]
    widths = [max(len(str(x)) for x in col) for col in zip(head, *body)]
    line = lambda cells: "  ".join(str(c).ljust(w) if i in (0, 6, 8) else str(c).rjust(w)  # noqa: E731
                                   for i, (c, w) in enumerate(zip(cells, widths)))
    return "\n".join([line(head), line(["-" * w for w in widths])] + [line(b) for b in body])


def _worker_scenario(name: str, rows_of: Callable[[dict], list[dict]]) -> Callable[..., list[dict]]:
    """A scenario run in worker processes (:func:`_launch`): its raw results under ``raw[name]``, then its rows."""
    def run_it(quick: bool, log, raw: dict, out: Path) -> list[dict]:
        raw[name] = _collect(*_launch(name, quick, None), name)
        return rows_of(raw[name])
    return run_it


def _big(name: str) -> Callable[..., list[dict]]:
    """A large network's scenario (evaluator against the per-flow walk and SciPy, one network)."""
    def run_it(quick: bool, log, raw: dict, out: Path) -> list[dict]:
        raw[name] = _collect(*_launch(name, quick, None), name)
        return _big_table_rows(raw[name], _BIG_LABELS[name](bool(quick)))
    return run_it


def _imported(module: str, rows: str) -> Callable[[dict], list[dict]]:
    """``rows`` of ``evaluator.bench.<module>`` (imported when the scenario runs), with the device label."""
    def rows_of(r: dict) -> list[dict]:
        import importlib

        return getattr(importlib.import_module(f"{__package__}.{module}"), rows)(r, _device_label)
    return rows_of


def _small(quick: bool, log, raw: dict, out: Path) -> list[dict]:
    return _run_small(quick, log, raw)


def _sweep(quick: bool, log, raw: dict, out: Path) -> list[dict]:
    rows, raw["sweep"] = _run_sweep(quick, log, raw.get("small"))
    return rows


def _optimize(quick: bool, log, raw: dict, out: Path) -> list[dict]:
    rows, raw["optimize"] = _run_optimize(quick, log)
    return rows


def _startup(quick: bool, log, raw: dict, out: Path) -> list[dict]:
    from .startup import run_startup, startup_rows

    raw["startup"] = run_startup(quick, log)
    return startup_rows(raw["startup"], _device_label)


def _scaling(quick: bool, log, raw: dict, out: Path) -> list[dict]:
    raw["scaling"] = _collect(*_launch("scaling", quick, None), "scaling")
    _plot(raw["scaling"], out / f"scaling{'-quick' if quick else ''}.png")
    return _scaling_rows(raw["scaling"])


_BIG_LABELS: dict[str, Callable[[bool], str]] = {
    "mira": lambda q: "Mira 49,152 nodes, DOR BG/Q order",
    "dragonfly": lambda q: "DF(8,16,8) 16,512 nodes",
    "fat_tree": lambda q: f"fat tree {FAT_TREE_K[q]}-ary 3-tree {FAT_TREE_K[q] ** 3:,} nodes",
    "torus": lambda q: f"torus {'x'.join(map(str, TORUS_DIMS[q]))}, DOR",
}


@dataclass(frozen=True)
class Scenario:
    """One scenario of the bench: ``name`` (what ``--only`` takes), ``label(quick)`` (the "scenario:" line; "" for
    none) and ``run(quick, log, raw, out)`` -> its table rows (its raw results put in ``raw``)."""

    name: str
    label: Callable[[bool], str]
    run: Callable[..., list[dict]]


SCENARIO_TABLE: tuple[Scenario, ...] = (
    Scenario("small", lambda q: "", _small),
    *(Scenario(n, _BIG_LABELS[n], _big(n)) for n in ("mira", "dragonfly", "fat_tree", "torus")),
    Scenario("jobs", lambda q: "several jobs (Blue Waters) and phases (DF(4,8,4))",
             _worker_scenario("jobs", _imported("jobs", "jobs_rows"))),
    Scenario("time", lambda q: "time beyond the bound (collectives against SMPI, max-min sharing, trace phases)",
             _worker_scenario("time", _imported("time", "time_rows"))),
    Scenario("paths", lambda q: "path-set construction (BG/Q partitions, Yen's k shortest paths, OPTIQ heuristic)",
             _worker_scenario("paths", _imported("paths", "paths_rows"))),
    Scenario("lp", lambda q: "LP solvers (batched PDHG vs HiGHS, BG/Q 512 and 8,192 nodes)",
             _worker_scenario("lp", _imported("lp", "lp_rows"))),
    Scenario("mapping", lambda q: "mapping search (candidate moves on DF(4,8,4); quality against the budget, "
             "irregular traffic)", _worker_scenario("mapping", _imported("mapping", "mapping_rows"))),
    Scenario("moves", lambda q: "mapping search's candidate moves alone (the move rows of mapping)",
             _worker_scenario("moves", _imported("mapping", "mapping_rows"))),
    Scenario("sweep", lambda q: "", _sweep),
    Scenario("optimize", lambda q: "", _optimize),
    Scenario("startup", lambda q: "", _startup),
    Scenario("scaling", lambda q: "scaling", _scaling),
)
"""The scenarios in the order they run (a new scenario: its function and one row here, its name in
:data:`SCENARIOS`)."""


def run(quick: bool = False, out_dir: str | os.PathLike = "results/bench", only: list[str] | None = None,
        log=print, settle: float = 0.0) -> dict:
    """Run the benchmark; print the table; write JSON (and the scaling plot) under ``out_dir``.

    ``settle``: seconds to wait before each scenario after the first. A
    burstable VM throttles after sustained load on all its cores, and a
    kernel on two threads suffers more than a single-threaded baseline
    (this 2-core VM, after 60 s of load on both cores: Mira's 5D stencil 16-17
    ms instead of 9 for about a minute; its pairing 10 ms instead of 3.5).
    """
    only = list(only or DEFAULT_SCENARIOS)
    bad = [s for s in only if s not in SCENARIOS]
    if bad:
        from ..errors import ConfigError

        raise ConfigError("--only", bad, f"scenarios among {list(SCENARIOS)}")
    from ..errors import positive_float

    settle = positive_float("--settle", settle, allow_zero=True)  # seconds
    child_timeout()  # $EVALUATOR_BENCH_TIMEOUT_S checked before any scenario runs
    if settle > 0 and len(only) < 2:
        from ..errors import ConfigError

        raise ConfigError("--settle", settle, "0 with one scenario (it pauses between scenarios, before each after "
                          "the first)", f"Drop --settle, or run more than {only[0]!r}.")
    out = check_writable("--out", out_dir)  # before the work, so that nothing computed is lost
    out.mkdir(parents=True, exist_ok=True)
    path = _output_path(out, bool(quick), only)
    t_start = time.perf_counter()
    rows: list[dict] = []
    raw: dict = {}
    started: list[str] = []

    def begin(name: str) -> None:
        if started and settle > 0:
            log(f"settling {settle:g} s before {name} (--settle)")
            time.sleep(settle)
        started.append(name)

    suffix = "-quick" if quick else ""
    finished: list[str] = []
    try:
        for sc in SCENARIO_TABLE:
            if sc.name in only:
                begin(sc.name)
                label = sc.label(bool(quick))
                if label:
                    log(f"scenario: {label}")
                rows += sc.run(quick, log, raw, out)
                finished.append(sc.name)
    except KeyboardInterrupt:  # the scenarios finished are kept, beside (not over) a complete run's file
        if finished:
            _write_interrupted(out / f"bench{suffix}-interrupted.json", _summary(quick, settle, t_start, rows, raw),
                               finished, [s.name for s in SCENARIO_TABLE if s.name in only])
        raise
    summary = _summary(quick, settle, t_start, rows, raw)
    from ..io import write_json

    write_json(path, summary, indent=1, default=float)
    print(format_table(rows))
    print(f"\n{summary['gpu']}.")
    print(f"wrote {path}" + (f" and {out / f'scaling{suffix}.png'}" if "scaling" in only else "")
          + f" ({summary['wall_s']:.0f} s)")
    return summary


def _output_path(out: Path, quick: bool, only: list[str]) -> Path:
    """Where a run writes its rows: ``bench.json`` for the default scenarios, ``bench-<scenarios>.json`` for
    another selection (``--only``: a run of some scenarios does not replace a whole run's rows); ``-quick`` with
    ``--quick``. A file there that this command did not write (no ``rows`` and ``gpu``) is refused before any work."""
    import json

    from ..errors import ConfigError

    suffix = "-quick" if quick else ""
    chosen = [s for s in SCENARIOS if s in only]
    name = "" if chosen == list(DEFAULT_SCENARIOS) else "-" + "-".join(chosen)
    path = out / f"bench{suffix}{name}.json"
    if path.exists():
        try:
            mine = set(json.loads(path.read_text())) >= {"rows", "gpu"}
        except (OSError, UnicodeDecodeError, ValueError, TypeError):
            mine = False
        if not mine:
            raise ConfigError("--out", str(out), f"a directory where {path.name} is absent or a bench run's own",
                              f"{path} is a file this command did not write; nothing was computed (move it, or "
                              f"give another --out).")
    return path


def _write_interrupted(path: Path, summary: dict, finished: list[str], asked: list[str]) -> None:
    """A run stopped by Ctrl-C: the rows of the scenarios ``finished`` to ``path`` (``interrupted`` says which of
    those ``asked`` for did not run), and their table."""
    from ..io import write_json

    left = [s for s in asked if s not in finished]
    summary["interrupted"] = f"Ctrl-C; finished: {', '.join(finished)}; not finished: {', '.join(left)}"
    write_json(path, summary, indent=1, default=float)
    print(format_table(summary["rows"]))
    print(f"\ninterrupted: the rows of {', '.join(finished)} are written to {path} ({summary['wall_s']:.0f} s; "
          f"not finished: {', '.join(left)}); {path.name.replace('-interrupted', '')} is left as it was", flush=True)


def _summary(quick: bool, settle: float, t_start: float, rows: list[dict], raw: dict) -> dict:
    """What ``bench.json`` holds: the run's machine and settings, its rows and the scenarios' raw records."""
    import jax

    return {
        "quick": quick, "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "host": platform.node(),
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs",
        "jax": jax.__version__, "default_backend": jax.default_backend(),
        "gpu": "no GPU present; the kernels run on JAX's default device, so a GPU is used automatically when present"
        if jax.default_backend() == "cpu" else f"ran on {jax.default_backend()}",
        "wall_s": time.perf_counter() - t_start, "settle_s": settle, "rows": rows, "raw": raw,
    }


def _worker_main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="python -m evaluator.bench")  # a worker process of run()
    p.add_argument("--worker", choices=list(WORKERS), required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--part", type=int, default=0)
    p.add_argument("--parts", type=int, default=1)
    p.add_argument("--barrier", default=None)
    p.add_argument("--baseline", type=int, default=0, help="per-flow baseline points per class (0: none)")
    p.add_argument("--scipy", action="store_true",
                   help="with --barrier: time the SciPy baseline too, started together with the other workers")
    args = p.parse_args(argv)
    data = WORKERS[args.worker](args)
    from ..io import write_json

    write_json(args.out, data, default=float)
    return 0


def worker_main(argv: list[str]) -> int:
    """Entry point of a bench worker process (``python -m evaluator.bench --worker NAME ...``)."""
    return _worker_main(argv)
