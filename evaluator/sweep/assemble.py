"""Merge the persisted chunks of a sweep into one dataset (independent of the order chunks ran in)."""

from __future__ import annotations

import datetime as _dt
import json
import sys
from collections.abc import Callable
from typing import Any

import numpy as np
import xarray as xr

from .. import io
from .._types import PointInts
from .._version import __version__
from ..dataset import METRIC_NAMES, PATH_METRIC_NAMES, TIME_METRIC_NAMES, metric, results_dataset
from ..errors import require
from ..placement import GENERATOR_ID
from .jobs import jobs_dataset
from .plan import SweepPlan

PLACEMENT_GENERATOR = f"{GENERATOR_ID} (placement.generator=threefry; see evaluator.placement._seeded)"
"""The ``placement_generator`` attribute of a sweep dataset: how seeded placements were drawn."""

__all__ = ["assemble", "check_link_load", "MAX_POINT_LINKS"]

MAX_POINT_LINKS = 2e8
"""The most point-links (points x links) ``sweep.keep_link_load`` keeps: 1.6 GB of float64 loads."""


def check_link_load(plan: SweepPlan) -> None:
    """Refuse, before anything runs, a ``sweep.keep_link_load`` sweep whose loads (one float64 per point and link,
    assembled into the dataset, then written) pass :data:`MAX_POINT_LINKS` or the memory. They were sized only
    when the dataset was assembled, after every point had run and its chunk files (hundreds of GB for 5 million
    points of a 32x32 torus) were written (until 2026-12-06). One topology's links: the sweep refuses link counts
    that differ."""
    if not plan.keep_link_load:
        return
    from .. import config as C
    from ..errors import ConfigError, check_memory

    try:
        nl = int(C.build_topology(plan.group_config(tuple([0] * len(plan.axes))).topology).n_links)
    except ConfigError:
        return  # (a topology that does not build: its points are infeasible, as the sweep reports)
    n = int(plan.n_points)
    require(n * nl <= MAX_POINT_LINKS, "sweep.keep_link_load", True,
            f"sweeps of at most {MAX_POINT_LINKS:.0e} point-links (points x links)",
            f"This one has {n:,} points x {nl:,} links = {n * nl:.3g}: sweep fewer points, or drop "
            f"sweep.keep_link_load and evaluate the points whose loads you need (evaluator eval).")
    check_memory("sweep.keep_link_load", True, 2 * 8.0 * n * nl,
                 f"the link loads of {n:,} points x {nl:,} links (float64, assembled, then written)",
                 "Sweep fewer points, or drop sweep.keep_link_load.")


def _json_default(o):
    if isinstance(o, (np.integer,)):
        return int(o)
    if isinstance(o, (np.floating,)):
        return float(o)
    return str(o)


def _seeds_attr(seeds: list[int]) -> np.ndarray | str:
    """The seeds a sweep uses, as int64 (as comma-separated text where one does not fit)."""
    try:
        return np.asarray(seeds, dtype=np.int64)
    except OverflowError:
        return ",".join(str(s) for s in seeds)


def reason_counts_json(codes: np.ndarray, table: list[str]) -> str:
    """The infeasible points' reasons counted (``[[text, count], ...]`` as JSON, in order of first appearance:
    :func:`evaluator.sweep.reasons.reason_counts` of the dataset, without reading its strings back)."""
    used, first, counts = np.unique(codes, return_index=True, return_counts=True)
    order = np.argsort(first, kind="stable")
    return json.dumps([[table[int(used[i])], int(counts[i])] for i in order])


def _code(index: dict[str, int], table: list[str], text: str) -> int:
    """The code of ``text`` in ``table`` (appended when new)."""
    code = index.get(text)
    if code is None:
        code = index[text] = len(table)
        table.append(text)
    return code


def assemble(plan: SweepPlan, chunk_ids: list[str], manifest: dict,
             read_chunk: Callable[[SweepPlan, str], dict]) -> xr.Dataset:
    """The sweep's dataset: one dimension per axis, metrics of the metric table, ``feasible`` and ``reason``.

    Chunks are read one at a time (a several-jobs sweep's all at once). ``timing_json`` is left to the
    driver, which measures its peak memory after this assembly.
    """
    n = plan.n_points
    ids = sorted(chunk_ids)
    first = read_chunk(plan, ids[0]) if ids else {}
    if first.get("jobs"):  # a several-jobs sweep (every point of a sweep is of one sort)
        results = [first] + [read_chunk(plan, cid) for cid in ids[1:]]
        return jobs_dataset(plan, results, _coords(plan), _attrs(plan, manifest, results))
    chunks = (first if i == 0 else read_chunk(plan, cid) for i, cid in enumerate(ids))
    vals = {k: np.full(n, np.nan) for k in METRIC_NAMES + PATH_METRIC_NAMES}  # paths_per_pair: NaN where infeasible
    feasible = np.zeros(n, dtype=bool)
    reason_code = np.zeros(n, dtype=np.int32)  # into reason_table
    reason_table: list[str] = [""]
    reason_index = {"": 0}
    bottleneck_code = np.full(n, -1, dtype=np.int32)  # into bottleneck_table; -1: infeasible ('')
    bottleneck_table: list[str] = []
    bottleneck_index: dict[str, int] = {}
    class_max: dict[str, np.ndarray] = {}
    link_load = None
    phases = None
    bounds = _BoundGrid(n, plan.bounds) if plan.bounds is not None else None
    costs: dict[str, np.ndarray] = {}  # cost, power and part counts: every point whose network was built
    for res in chunks:
        flat = res["flat"]
        remap = np.array([_code(reason_index, reason_table, r) for r in res["reasons"]], dtype=np.int32)
        reason_code[flat] = remap[res["reason_code"]]
        for k, v in res.get("cost", {}).items():
            if k not in costs:
                costs[k] = np.full(n, np.nan)
            costs[k][flat] = v
        if "ok" not in res:
            continue
        ok = flat[res["ok"]]
        feasible[ok] = True
        metrics = res["metrics"]
        for k in METRIC_NAMES + PATH_METRIC_NAMES:
            vals[k][ok] = metrics[k]
        for k in TIME_METRIC_NAMES:  # (where a point's network has a latency model)
            if k in metrics:
                vals.setdefault(k, np.full(n, np.nan))[ok] = metrics[k]
        names = list(res["class_names"]) + ["none"]
        bmap = np.array([_code(bottleneck_index, bottleneck_table, c) for c in names], dtype=np.int32)
        bottleneck_code[ok] = bmap[metrics["bottleneck_class"]]  # -1 (nothing crosses a link) -> "none"
        if "phases" in res:
            ph = res["phases"]
            P = len(ph["names"])
            if phases is None:
                phases = {"names": list(ph["names"]), "phase_completion_time": np.full((n, P), np.nan),
                          "phase_total_bytes": np.full((n, P), np.nan),
                          "phase_bottleneck": np.full((n, P), "", dtype=object)}
            require(len(phases["names"]) == P, "traffic", "phased", "the same number of phases at every point")
            pok = flat[ph["ok"]]
            for k in ("phase_completion_time", "phase_total_bytes", "phase_bottleneck", "phase_time_with_latency",
                      "phase_time_max_min"):
                if k in ph:
                    if k not in phases:
                        phases[k] = np.full((n, P), np.nan)
                    phases[k][pok] = np.asarray(ph[k])
        for c, cname in enumerate(res["class_names"]):
            if cname not in class_max:  # (not setdefault: that would allocate a grid per chunk)
                class_max[cname] = np.full(n, np.nan)
            class_max[cname][ok] = metrics["max_load_class"][:, c]
        if bounds is not None:
            bounds.add(ok, res["bounds"])
        if "link_load" in res:
            if link_load is None:
                nl = int(res["n_links"])
                require(n * nl <= MAX_POINT_LINKS, "sweep.keep_link_load", True,
                        f"sweeps of at most {MAX_POINT_LINKS:.0e} point-links")
                link_load = np.full((n, nl), np.nan)
            require(link_load.shape[1] == res["link_load"].shape[1], "sweep.keep_link_load", True,
                    "a single topology across the sweep (link counts differ)")
            link_load[ok] = res["link_load"]
    reason = np.asarray(reason_table, dtype=object)[reason_code]  # references to a few strings
    bottleneck = np.asarray(bottleneck_table + [""], dtype=object)[bottleneck_code]
    attrs = _attrs(plan, manifest, [])
    attrs["n_feasible"] = int(feasible.sum())
    attrs["reason_counts_json"] = reason_counts_json(reason_code[~feasible], reason_table)
    ds = results_dataset(
        tuple(ax.name for ax in plan.axes), plan.shape, vals, {c: class_max[c] for c in sorted(class_max)},
        bottleneck, feasible=feasible, reason=reason, coords=_coords(plan), link_load=link_load, attrs=attrs,
        phases=phases)
    if bounds is not None:
        bounds.into(ds, plan)
    if costs:
        from ..cost.dataset import add_cost

        add_cost(ds, tuple(ax.name for ax in plan.axes), plan.shape, costs,
                 getattr(next(iter(plan.bases.values())), "cost", None))
    return ds


class _BoundGrid:
    """The bound variables of a sweep with ``bounds`` (:mod:`evaluator.sweep.bounds`), filled chunk by chunk."""

    TEXT = {"bound_method": ("methods", "method of the bound (edge, garg_konemann, dragonfly_adaptive)"),
            "bound_solver": ("solvers", "solver of the bound (highs, pdhg, multiplicative_weights)"),
            "bound_status": ("statuses", "ok, or why the bound's LP did not reach its optimum: '<solver>: "
                                         "<its status>' (NaN bound where HiGHS stopped; PDHG unconverged: the "
                                         "lower side kept, no upper)")}

    def __init__(self, n: int, method: str):
        from .bounds import bound_variables

        names = bound_variables(method)
        self.values = {k: np.full(n, np.nan) for k in names[:4]}  # lower, upper, efficiency, gap
        self.codes = {k: np.full(n, -1, np.int32) for k in self.TEXT}
        self.tables: dict[str, list[str]] = {k: [] for k in self.TEXT}
        self.index: dict[str, dict[str, int]] = {k: {} for k in self.TEXT}

    def add(self, ok: PointInts, b: dict) -> None:
        from .bounds import OK

        if "bound_status" not in b:  # a chunk persisted before per-point statuses: its LPs all had an optimum
            b = {**b, "bound_status": np.zeros(len(ok), np.int32), "statuses": [OK]}
        for k, v in self.values.items():
            v[ok] = b[k]
        for k, (table, _) in self.TEXT.items():
            remap = np.array([_code(self.index[k], self.tables[k], t) for t in b[table]] + [-1], dtype=np.int32)
            self.codes[k][ok] = remap[b[k]]

    def failed(self, lower: str) -> tuple[int, str]:
        """``(points, text)``: how many feasible points have no bound (their LP failed: NaN lower side), and their
        ``bound_status`` texts summarised (:func:`~evaluator.sweep.reasons.summarize_reasons`)."""
        from .reasons import summarize_reasons

        bad = (self.codes["bound_status"] >= 0) & np.isnan(self.values[lower])
        if not bad.any():
            return 0, ""
        codes = self.codes["bound_status"][bad]
        used, counts = np.unique(codes, return_counts=True)
        return int(bad.sum()), summarize_reasons({self.tables["bound_status"][int(c)]: int(m)
                                                  for c, m in zip(used, counts)})

    def into(self, ds: xr.Dataset, plan: SweepPlan) -> None:
        from ..lp.bounds import bound_kind
        from .reasons import bound_failure_line

        dims = tuple(ax.name for ax in plan.axes)
        for k, v in self.values.items():
            ds[k] = (dims, v.reshape(plan.shape), metric(k).attrs)
        for k, (_, what) in self.TEXT.items():
            text = np.asarray(self.tables[k] + [""], dtype=object)[self.codes[k]]  # '' where infeasible
            ds[k] = (dims, text.reshape(plan.shape), {"units": "", "long_name": what})
        ds.attrs["bounds"] = plan.bounds
        ds.attrs["bounds_solver_requested"] = plan.bound_solver
        ds.attrs["bound_bounds"] = bound_kind(plan.bounds).bounds
        n_failed, why = self.failed(bound_kind(plan.bounds).lower)
        ds.attrs["n_bound_failed"] = n_failed
        line = bound_failure_line(n_failed, why)
        if line:  # printed once, at the end of the sweep (the dataset keeps it: attrs bound_failures)
            ds.attrs["bound_failures"] = line
            print(f"sweep {plan.name}: {line}", file=sys.stderr)


def _coords(plan: SweepPlan) -> dict[str, Any]:
    return {ax.name: (ax.name, np.asarray(ax.labels, dtype=str), {"long_name": ", ".join(ax.keys)})
            for ax in plan.axes}


def _commits(manifest: dict) -> dict[str, str]:
    """``git_commit``: the source's commit when the run first started; ``git_commits_resumed`` (only where a resume
    ran other code): the commits of the later starts, in order, whose chunks sit beside the first start's."""
    commits = list(manifest.get("git_commits") or [io.git_commit()])
    return {"git_commit": commits[0], **({"git_commits_resumed": " ".join(commits[1:])} if commits[1:] else {})}


def _attrs(plan: SweepPlan, manifest: dict, results: list[dict]) -> dict[str, Any]:
    n_feasible = sum(len(r["ok"]) for r in results if "ok" in r)
    return {
        "title": f"evaluator sweep {plan.name}",
        "sweep": plan.name,
        "run_id": plan.run_id,
        "content_hash": plan.content_hash,  # (what was computed: a sweep.run_id given again must name the same)
        "config_yaml": plan.config_yaml,
        "axes_json": json.dumps([{"name": a.name, "keys": list(a.keys), "values": [list(v) for v in a.values]}
                                 for a in plan.axes], default=_json_default),
        "evaluator_version": __version__,
        **_commits(manifest),
        "seeds": _seeds_attr(plan.seeds),
        "placement_generator": PLACEMENT_GENERATOR,
        "n_points": int(plan.n_points),
        "chunk_size": int(plan.chunk_size),  # as run (config_yaml keeps sweep.chunk_size as given: null, the default)
        "n_feasible": int(n_feasible),
        "one_draw": "; ".join(plan.one_draw_choices().values()),  # random choices drawn once: every point one draw
        "start_time": manifest["start_time"],
        "end_time": _dt.datetime.now(_dt.timezone.utc).isoformat(),
        "Conventions": "CF-1.8",
    }
