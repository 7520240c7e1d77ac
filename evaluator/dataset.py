"""The one table of metrics and the one way to turn results into an :class:`xarray.Dataset`.

:data:`METRICS` lists the scalar metrics of an evaluation (DESIGN.md
"Metrics") with their units, long names and whether smaller is better. The
kernel's output, single evaluations, sweep datasets, queries and plots all
read it; per-class maxima (``max_load_<class>``) follow :data:`MAX_LOAD`.
:func:`results_dataset` builds every result dataset: one design point
(no dimension), a batch (``variant``) or a sweep grid (one dimension per axis,
with ``feasible`` and ``reason``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import xarray as xr

__all__ = [
    "Metric",
    "METRICS",
    "METRIC_NAMES",
    "PATH_METRICS",
    "PATH_METRIC_NAMES",
    "MAX_LOAD",
    "PHASE_METRICS",
    "JOB_METRICS",
    "BOUND_METRICS",
    "LINK_LOAD",
    "LINK_CAPACITY",
    "metric",
    "max_load_name",
    "smaller_is_better",
    "results_dataset",
    "LinkTable",
    "summary_lines",
]


@dataclasses.dataclass(frozen=True)
class Metric:
    """A result variable: name, CF units, long name, and whether smaller is better (``None``: not ranked)."""

    name: str
    units: str
    long_name: str
    smaller_is_better: bool | None = True

    @property
    def attrs(self) -> dict[str, str]:
        return {"units": self.units, "long_name": self.long_name}


METRICS: tuple[Metric, ...] = (
    Metric("completion_time", "s", "completion time of the exchange (contention lower bound)", True),
    Metric("throughput", "bytes/s", "total bytes over completion time", False),
    Metric("effective_injection_bandwidth", "bytes/s", "mean bytes sent per sending task over completion time",
           False),
    Metric("mean_hops", "1", "router-to-router links per byte that leaves its node", True),
    Metric("total_bytes", "bytes", "bytes sent in the exchange", True),
    Metric("off_node_bytes", "bytes", "bytes sent between tasks on different nodes (the rest stays on a node)",
           True),
)
"""Scalar metrics of one evaluation, in dataset order."""

METRIC_NAMES: tuple[str, ...] = tuple(m.name for m in METRICS)

PATH_METRICS: tuple[Metric, ...] = (
    Metric("paths_per_pair", "1",
           "router paths per communicating router pair: the mean over the pairs (each pair counts once, not "
           "weighted by its bytes) of the distinct router paths carrying more than 1e-9 of the pair's bytes "
           "(dor: 1; kshortest: the Yen paths found; optiq_heuristic: those selected; optiq_lp: those with a "
           "positive LP share; NaN: not a path set (minimal, valiant, valiant_router, tago) or no pair)", None),
)
"""Metrics of the routing's path sets, computed on the host (not by the kernel): every evaluation and sweep
carries them (:func:`evaluator.routing._paths.paths_per_pair`)."""

PATH_METRIC_NAMES: tuple[str, ...] = tuple(m.name for m in PATH_METRICS)

PHASE_METRICS: tuple[Metric, ...] = (
    Metric("phase_completion_time", "s", "completion time of the phase (contention lower bound; NaN: no such phase)",
           True),
    Metric("phase_total_bytes", "bytes", "bytes sent in the phase (NaN: no such phase)", True),
)
"""Per-phase metrics of phased traffic (dimension ``phase``); a step's ``completion_time`` is their sum."""

JOB_METRICS: tuple[Metric, ...] = (
    Metric("completion_time", "s", "completion time of the job's step with every job running together", True),
    Metric("completion_time_alone", "s", "completion time of the job's step alone on the machine", True),
    Metric("slowdown", "1", "completion time together over completion time alone", True),
    Metric("interference", "1", "slowdown of the job when it runs with the other job alone", True),
    Metric("phase_completion_time_alone", "s", "completion time of the phase alone (NaN: no such phase)", True),
    Metric("total_bytes", "bytes", "bytes the job sends in its step", True),
    Metric("makespan", "s", "time until every job has finished", True),
    Metric("job_link_load", "bytes", "bytes the job puts on the link over its step", None),
    Metric("background_link_rate", "bytes/s", "background traffic on the link", None),
)
"""Variables of multi-job results (:func:`evaluator.jobs.evaluate_jobs`, dimension ``job``)."""

BOUND_METRICS: tuple[Metric, ...] = (
    Metric("optimal_completion_time", "s",
           "best completion time any routing reaches (maximum concurrent flow; evaluate(..., bounds=True))", True),
    Metric("routing_efficiency", "1", "optimal completion time over the routing's completion time (1: optimal)",
           False),
)
"""Bounds reported on request (:mod:`evaluator.lp.bounds`); the dataset's attrs name the method, solver and gap."""

MAX_LOAD = Metric("max_load_{cls}", "bytes", "largest load on a {cls} link", True)
"""Template of the per-class maxima; see :func:`max_load_name`."""

LINK_LOAD = Metric("link_load", "bytes", "expected bytes crossing the link in one exchange", None)
LINK_CAPACITY = Metric("link_capacity", "bytes/s", "link bandwidth per direction", None)

_BY_NAME = {m.name: m for m in METRICS + PATH_METRICS + PHASE_METRICS + BOUND_METRICS + (LINK_LOAD, LINK_CAPACITY)}


def max_load_name(link_class: str) -> str:
    """Variable name of the largest load on a link of ``link_class`` (``torus-dim0`` -> ``max_load_torus_dim0``)."""
    return "max_load_" + link_class.replace("-", "_")


def metric(name: str) -> Metric:
    """The table entry of ``name`` (``max_load_*`` included); ``KeyError`` if unknown."""
    if name in _BY_NAME:
        return _BY_NAME[name]
    if name.startswith("max_load_"):
        cls = name[len("max_load_"):]
        return Metric(name, MAX_LOAD.units, MAX_LOAD.long_name.format(cls=cls), True)
    raise KeyError(name)


def smaller_is_better(name: str) -> bool:
    """Ranking direction of a variable: from the table; any other variable ranks smaller first."""
    try:
        return metric(name).smaller_is_better is not False
    except KeyError:
        return True


@dataclasses.dataclass(frozen=True)
class LinkTable:
    """Per-link coordinates of a topology (DESIGN.md link layout)."""

    capacity: np.ndarray
    src: np.ndarray
    dst: np.ndarray
    class_names: np.ndarray
    node: np.ndarray

    @classmethod
    def of(cls, topology) -> LinkTable:
        return cls(np.asarray(topology.capacity), np.asarray(topology.link_src), np.asarray(topology.link_dst),
                   topology.link_class_names(), np.asarray(topology.link_node))


def results_dataset(
    dims: Sequence[str],
    shape: Sequence[int],
    metrics: Mapping[str, np.ndarray],
    max_load: Mapping[str, np.ndarray],
    bottleneck: np.ndarray,
    *,
    feasible: np.ndarray | None = None,
    reason: np.ndarray | None = None,
    coords: Mapping[str, Any] | None = None,
    link_load: np.ndarray | None = None,
    links: LinkTable | None = None,
    attrs: Mapping[str, Any] | None = None,
    phases: Mapping[str, Any] | None = None,
) -> xr.Dataset:
    """Results of ``prod(shape)`` design points as a dataset with dimensions ``dims``.

    Parameters
    ----------
    metrics
        Flat per-point arrays of every name in :data:`METRIC_NAMES`, and of the
        :data:`PATH_METRIC_NAMES` present.
    max_load
        Flat per-point largest load per link class name, in the order given.
    bottleneck
        Flat per-point class of the busiest link (``"none"``; ``""`` where infeasible).
    feasible, reason
        Sweep grids: whether each point's config is valid and why not.
    link_load
        ``[point, link]`` bytes, kept on request; ``links`` adds the capacity
        and the ``link_src``/``link_dst``/``link_class``/``link_node`` coordinates.
    phases
        Phased traffic: ``names`` (one label per phase), flat ``[point, phase]``
        arrays of every :data:`PHASE_METRICS` name and ``phase_bottleneck``
        (class names, ``""`` where a point has no such phase).
    """
    dims = tuple(dims)
    shape = tuple(int(s) for s in shape)

    def grid(a) -> np.ndarray:
        return np.asarray(a).reshape(shape)

    data: dict[str, Any] = {}
    for m in METRICS:
        data[m.name] = (dims, grid(metrics[m.name]), m.attrs)
    for m in PATH_METRICS:
        if m.name in metrics:
            data[m.name] = (dims, grid(metrics[m.name]), m.attrs)
    for cname, values in max_load.items():
        data[max_load_name(cname)] = (dims, grid(values), {"units": MAX_LOAD.units,
                                                           "long_name": MAX_LOAD.long_name.format(cls=cname)})
    long = "class of the link that sets the completion time"
    if feasible is not None:
        long += " ('' if infeasible)"
    data["bottleneck"] = (dims, grid(np.asarray(bottleneck).astype(str)), {"long_name": long})
    if feasible is not None:
        data["feasible"] = (dims, grid(feasible), {"long_name": "whether the point's config is valid"})
    if reason is not None:
        data["reason"] = (dims, grid(np.asarray(reason).astype(str)),
                          {"long_name": "why the point is infeasible: 'field: what is allowed' ('' if feasible)"})
    all_coords: dict[str, Any] = dict(coords or {})
    if phases is not None:
        names = [str(x) for x in phases["names"]]
        pshape = shape + (len(names),)
        for m in PHASE_METRICS:
            data[m.name] = (dims + ("phase",), np.asarray(phases[m.name], dtype=np.float64).reshape(pshape), m.attrs)
        data["phase_bottleneck"] = (dims + ("phase",), np.asarray(phases["phase_bottleneck"]).astype(str)
                                    .reshape(pshape), {"long_name": "class of the link that sets the phase's time"})
        all_coords["phase"] = ("phase", np.asarray(names, dtype=str), {"long_name": "exchange, in the order done"})
    if link_load is not None:
        ll = np.asarray(link_load)
        data["link_load"] = (dims + ("link",), ll.reshape(shape + (ll.shape[-1],)), LINK_LOAD.attrs)
        if links is not None:
            data["link_capacity"] = (("link",), links.capacity, LINK_CAPACITY.attrs)
            all_coords.update({
                "link": np.arange(links.capacity.shape[0]),
                "link_src": ("link", links.src, {"long_name": "source router id (-1: node side)"}),
                "link_dst": ("link", links.dst, {"long_name": "destination router id (-1: node side)"}),
                "link_class": ("link", links.class_names),
                "link_node": ("link", links.node, {"long_name": "node id of injection/ejection links"}),
            })
    ds = xr.Dataset(data, coords=all_coords)
    if attrs:
        ds.attrs.update(attrs)
    return ds


def _fmt_bytes(x: float) -> str:
    for unit, f in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(x) >= f:
            return f"{x / f:.3f} {unit} ({x:,.0f} B)"
    return f"{x:,.1f} B"


def summary_lines(ds: xr.Dataset) -> list[str]:
    """A short human summary of one evaluation."""
    a = ds.attrs
    lines = [
        f"topology    {a.get('topology')}  routing {a.get('routing')}",
        f"traffic     {a.get('traffic', '?')}  placement {a.get('placement', '?')}",
        f"bytes       {_fmt_bytes(float(ds.total_bytes))}",
        f"completion  {float(ds.completion_time):.6g} s   bottleneck: {ds.bottleneck.item()}",
        f"throughput  {float(ds.throughput) / 1e9:.4g} GB/s aggregate, "
        f"{float(ds.effective_injection_bandwidth) / 1e9:.4g} GB/s per task",
        f"mean hops   {float(ds.mean_hops):.4f}",
    ]
    if "paths_per_pair" in ds and np.isfinite(float(ds.paths_per_pair)):
        lines.append(f"paths/pair  {float(ds.paths_per_pair):.4f} (router paths per communicating router pair)")
    for v in sorted(k for k in ds.data_vars if k.startswith("max_load_")):
        lines.append(f"{v:<22}{_fmt_bytes(float(ds[v]))}")
    if "phase" in ds.dims and ds["phase_completion_time"].ndim == 1:
        for name, t, b in zip(ds["phase"].values, ds["phase_completion_time"].values, ds["phase_bottleneck"].values):
            lines.append(f"phase {str(name):<16}{float(t):.6g} s   bottleneck: {b}")
    if "optimal_completion_time" in ds:
        lines.append(f"optimal     {float(ds.optimal_completion_time):.6g} s (any routing; {a.get('bound_method')}, "
                     f"{a.get('bound_solver')}, gap {float(a.get('bound_gap', 0.0)):.1e})   routing efficiency "
                     f"{float(ds.routing_efficiency):.4f}")
    return lines
