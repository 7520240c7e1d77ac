"""Phased traffic: every phase an exchange of its own, evaluated phase by phase, then combined per point."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from ..dataset import metric_values
from .compiled import BatchKernel
from ..placement import Placement
from ..topology import Topology
from ..traffic import AbstractTraffic
from .blocks import bucket_size
from .dispatch import Results, evaluate_exchanges

__all__ = ["phase_names", "evaluate_phased", "PHASE_ARRAYS", "PHASE_OF_POINT", "PHASE_BLOCK", "PHASE_CHUNK_BYTES"]

PHASE_BLOCK = 1024
"""Phases per device call where that block's working set fits (a single evaluation's block is one point; its phases
are many), else the caller's ``block_size`` (:func:`evaluator._batch.run.evaluate_points`)."""

PHASE_CHUNK_BYTES = 256 << 20
"""Phases go to the device in chunks whose host arrays (padded flows, tasks, kept link loads) take at most this many
bytes."""

PHASE_ARRAYS = ("phase_completion_time", "phase_total_bytes", "phase_bottleneck_class")
"""The ``[point, phase]`` arrays of a phased result (the bottleneck class -1: no link used, -2: no such phase)."""

PHASE_OF_POINT = {"phase_time_with_latency": "time_with_latency", "phase_time_max_min": "time_max_min"}
"""The optional ``[point, phase]`` times (a latency model's, max-min sharing's) and the point time each sums to."""


def phase_names(traffics: Sequence[AbstractTraffic], n_phases: int) -> list[str]:
    """Labels of the phase axis: the phased traffics' own when they agree, else ``phase0``, ``phase1``, ..."""
    labels = {t.phase_names for t in traffics if t.kernel_input == "phases" and t.n_phases == n_phases}
    return list(labels.pop()) if len(labels) == 1 else [f"phase{k}" for k in range(n_phases)]


def evaluate_phased(kern: BatchKernel, topology: Topology, traffics: Sequence[AbstractTraffic],
                    placements: Sequence[Placement], block: int,
                    meanwhile: Callable[[], None] | None = None) -> Results:
    """Points of any traffic, phased ones phase by phase in one flow bucket, then combined.

    A point's ``completion_time`` is the sum of its phases' times, ``total_bytes``
    and link loads the sums, ``mean_hops`` the off-node-byte-weighted mean,
    ``max_load_<class>`` the largest over the phases, and the bottleneck that
    of the longest phase (the first one on a tie); the rates come from these
    by the metric formulas (:func:`evaluator.dataset.metric_values`). A plain
    exchange is one phase and keeps its numbers exactly. ``block``: phases
    per device call, as the caller's memory check allowed (:data:`PHASE_BLOCK`
    where it fits). ``meanwhile()`` runs while the first phase is on the device.
    """
    n = len(traffics)
    phases = [t.phases for t in traffics]
    P = max(len(ph) for ph in phases)
    sparse = [x for ph in phases for x in ph if x.kernel_input == "flows"]
    F = bucket_size(max(x.n_flows for x in sparse)) if sparse else None
    # every (point, phase) is a point of one batch: the phases share the network, so they go to the device
    # together, in blocks (as a sweep's points do), not one call per phase
    point_of = np.array([i for i in range(n) for _ in phases[i]], dtype=np.int64)
    phase_of = np.array([k for i in range(n) for k in range(len(phases[i]))], dtype=np.int64)
    flat = [x for ph in phases for x in ph]
    # host arrays of one chunk: the padded flows (16 bytes each) and, where kept, the loads (8 bytes a link)
    per_phase = 16 * (F or 0) + 8 * max((x.n_tasks for x in flat), default=0) + 8 * kern.n_links
    per_chunk = max(1, PHASE_CHUNK_BYTES // per_phase)
    parts = []
    for lo in range(0, len(flat), per_chunk):
        hi = min(lo + per_chunk, len(flat))
        out = evaluate_exchanges(kern, flat[lo:hi], [placements[i] for i in point_of[lo:hi]], block, flow_bucket=F,
                                 meanwhile=meanwhile if lo == 0 else None)
        parts.append((lo, hi, out))
    n_cls = len(topology.class_names)
    t_ph = np.full((n, P), np.nan)
    b_ph = np.full((n, P), np.nan)
    cls_ph = np.full((n, P), -2, np.int64)
    link_ph = np.full((n, P), -1, np.int64)
    off = np.zeros((n, P))
    hops = np.zeros((n, P))
    maxc = np.full((n, n_cls), -np.inf)
    loads = None
    for lo, hi, (out, link_load, *_) in parts:
        i, k = point_of[lo:hi], phase_of[lo:hi]
        t_ph[i, k] = out["completion_time"]
        b_ph[i, k] = out["total_bytes"]
        cls_ph[i, k] = out["bottleneck_class"]
        link_ph[i, k] = out["bottleneck_link"]
        off[i, k] = out["off_node_bytes"]
        hops[i, k] = out["mean_hops"] * out["off_node_bytes"]
        # rows are point-major: each point's phases are one run (in phase order) of a chunk
        starts = np.flatnonzero(np.r_[True, i[1:] != i[:-1]])
        pts = i[starts]
        maxc[pts] = np.maximum(maxc[pts], np.maximum.reduceat(out["max_load_class"], starts, axis=0))
        if link_load is not None:
            if loads is None:
                loads = np.zeros((n, link_load.shape[1]))
            for a, b, q in zip(starts, np.r_[starts[1:], len(i)], pts):  # a sequential sum, as phase by phase
                acc = loads[q]
                for row in link_load[a:b]:
                    acc += row
    worst = np.argmax(np.where(np.isnan(t_ph), -np.inf, t_ph), axis=1)
    rows = np.arange(n)
    metrics = metric_values(np, np.nansum(t_ph, axis=1), np.nansum(b_ph, axis=1), off.sum(1), hops.sum(1),
                            np.array([t.n_senders for t in traffics], dtype=np.float64), cls_ph[rows, worst],
                            link_ph[rows, worst])
    metrics["max_load_class"] = maxc
    # A plain exchange (one phase) keeps its own numbers exactly.
    plain = np.array([t.kernel_input != "phases" for t in traffics])
    if plain.any():
        first = np.full(n, -1, dtype=np.int64)  # the flat row of each point's first phase
        first[point_of[::-1]] = np.arange(len(flat))[::-1]
        for lo, hi, (out, *_) in parts:
            rows = first[plain]
            sel = (rows >= lo) & (rows < hi)
            for key in metrics:
                metrics[key][np.flatnonzero(plain)[sel]] = out[key][rows[sel] - lo]
    info = {"names": phase_names(traffics, P), "phase_completion_time": t_ph, "phase_total_bytes": b_ph,
            "phase_bottleneck_class": cls_ph}
    return Results(metrics, loads, info)


def put_back(traffics: Sequence[AbstractTraffic], results: list[tuple[list[int], Results]]) -> Results:
    """The results of groups of the points of ``traffics`` (``(their indices, their results)``, every point in one
    group) in input order (phases padded to the most any group has; a group of plain exchanges: one phase each):
    path sets bound per group of pairs (:func:`evaluator._batch.pathsets.evaluate_bound`), an adaptive routing's
    merged and unmerged points (:func:`evaluator._batch.run.evaluate_points`)."""
    if len(results) == 1:
        return results[0][1]
    n = len(traffics)
    metrics = {k: np.empty((n,) + v.shape[1:], v.dtype) for k, v in results[0][1].metrics.items()}
    first = results[0][1].link_load
    loads = None if first is None else np.empty((n,) + first.shape[1:], first.dtype)
    for idx, res in results:
        for k, v in res.metrics.items():
            metrics[k][idx] = v
        if loads is not None:
            loads[idx] = res.link_load
    phases = None
    if any(res.phases is not None for _, res in results):
        P = max(res.phases["phase_completion_time"].shape[1] for _, res in results if res.phases is not None)
        floats = sorted({k for _, res in results if res.phases is not None for k in res.phases
                         if k in PHASE_OF_POINT and k not in PHASE_ARRAYS})
        phases = {"names": phase_names(list(traffics), P),
                  "phase_completion_time": np.full((n, P), np.nan), "phase_total_bytes": np.full((n, P), np.nan),
                  "phase_bottleneck_class": np.full((n, P), -2, np.int64),
                  **{k: np.full((n, P), np.nan) for k in floats}}
        for idx, res in results:
            if res.phases is None:  # plain exchanges: one phase
                of_point = {**{k: k.removeprefix("phase_") for k in PHASE_ARRAYS}, **PHASE_OF_POINT}
                for k in (*PHASE_ARRAYS, *floats):
                    phases[k][idx, 0] = res.metrics[of_point[k]]
                continue
            k = res.phases["phase_completion_time"].shape[1]
            for name in PHASE_ARRAYS + tuple(floats):
                phases[name][idx, :k] = res.phases[name]
    flows = None
    if any(res.flows is not None for _, res in results):
        flows = [None] * n
        for idx, res in results:
            for j, i in enumerate(idx):
                flows[i] = None if res.flows is None else res.flows[j]
    return Results(metrics, loads, phases, flows)
