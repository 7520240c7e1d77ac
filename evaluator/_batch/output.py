"""Output: a batch's results as a dataset, and what one evaluation adds to it (notes, bounds)."""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np
import xarray as xr

from .._types import Int, Shaped
from .._version import __version__
from ..dataset import METRIC_NAMES, PATH_METRIC_NAMES, TIME_METRIC_NAMES, LinkTable, metric, results_dataset
from ..placement import Placement
from ..routing import Routing
from ..topology import Topology
from ..traffic import AbstractTraffic
from .dispatch import Results
from .pathsets import note_pairs

__all__ = ["latency_attrs", "add_message_times", "bottleneck_names", "phase_bottleneck_names", "to_dataset", "link_table", "point_notes", "add_notes",
           "add_bounds", "check_bounds"]


def bottleneck_names(topology: Topology, bottleneck_class: Int[np.ndarray, "point"]) -> Shaped[np.ndarray, "point"]:
    """The class name of every point's busiest link (``"none"``: no link used)."""
    names = np.asarray(list(topology.class_names) + ["none"], dtype=object)
    return names[bottleneck_class].astype(str)


def phase_bottleneck_names(topology: Topology, phase_class: Int[np.ndarray, "point phase"]
                           ) -> Shaped[np.ndarray, "point phase"]:
    """``[point, phase]`` class of each phase's busiest link (``"none"``; ``""`` where a point has no such phase)."""
    names = np.asarray(list(topology.class_names) + ["", "none"], dtype=object)
    n_cls = len(topology.class_names)
    c = phase_class
    return names[np.where(c == -1, n_cls + 1, np.where(c == -2, n_cls, c))].astype(str)


_LINK_TABLES: "weakref.WeakKeyDictionary[Topology, LinkTable]" = weakref.WeakKeyDictionary()


def link_table(topology: Topology) -> LinkTable:
    """The per-link coordinates of ``topology`` (:class:`~evaluator.dataset.LinkTable`), built once per topology."""
    hit = _LINK_TABLES.get(topology)
    if hit is None:
        hit = _LINK_TABLES[topology] = LinkTable.of(topology)
    return hit


def to_dataset(topology: Topology, routing: Routing, res: Results, dim: str | None) -> xr.Dataset:
    """Results as a dataset: with dimension ``dim`` (a batch), or none (``dim`` None: one point)."""
    m = res.metrics
    n = m["completion_time"].shape[0]
    dims, shape = ((dim,), (n,)) if dim else ((), ())
    maxc = m["max_load_class"]
    return results_dataset(
        dims, shape,
        metrics={k: m[k] for k in METRIC_NAMES + PATH_METRIC_NAMES + TIME_METRIC_NAMES if k in m},
        max_load={c: maxc[:, i] for i, c in enumerate(topology.class_names)},
        bottleneck=bottleneck_names(topology, m["bottleneck_class"]),
        link_load=res.link_load,
        links=link_table(topology) if res.link_load is not None else None,
        phases=None if res.phases is None else {
            "names": res.phases["names"], "phase_completion_time": res.phases["phase_completion_time"],
            "phase_total_bytes": res.phases["phase_total_bytes"],
            "phase_bottleneck": phase_bottleneck_names(topology, res.phases["phase_bottleneck_class"]),
            **{k: res.phases[k] for k in ("phase_time_with_latency", "phase_time_max_min") if k in res.phases}},
        attrs={"topology": topology.name, "routing": routing.label, "n_nodes": topology.n_nodes,
               "n_routers": topology.n_routers, "evaluator_version": __version__, **latency_attrs(topology)},
    )


def latency_attrs(topology: Topology) -> dict[str, Any]:
    """The network's latency model as dataset attributes (none without one)."""
    if topology.latency is None:
        return {}
    from .latency import TIME_MODEL

    return {"time_model": TIME_MODEL, **topology.latency.attrs()}


def point_notes(topology: Topology, traffic: AbstractTraffic, placement: Placement,
                routing: Routing) -> tuple[str, ...]:
    """The routing's notes on one point (:meth:`~evaluator.routing.Routing.notes` of its router pairs); a routing
    that keeps the contract's default (no notes) lists no pairs (a dense point's: 12 ms on a 24-ary 3-tree)."""
    if type(routing).notes is Routing.notes:
        return ()
    return tuple(routing.notes(topology, note_pairs(topology, traffic, placement)))


def add_notes(ds: xr.Dataset, notes: tuple[str, ...]) -> None:
    """``notes`` in ``ds.attrs["notes"]``, one per line (none: no attribute)."""
    if notes:
        ds.attrs["notes"] = "\n".join(notes)


def add_bounds(ds: xr.Dataset, topology: Topology, traffic: AbstractTraffic, placement: Placement, method: str,
               solver: str) -> None:
    """The bound's certified lower side, its feasible side, the efficiency and the bound's attrs, added to ``ds``
    in place under the names of its :class:`~evaluator.lp.bounds.BoundKind`."""
    from ..lp.bounds import bound_kind, optimal

    res = optimal(topology, traffic, placement, method, solver)
    kind = bound_kind(method)
    achieved = float(ds["completion_time"])
    eff = res.completion_time / achieved if achieved > 0 else 1.0
    for name, value in zip(kind.variables, (res.completion_time, res.completion_time_upper, eff)):
        ds[name] = xr.DataArray(value, attrs=metric(name).attrs)
    ds.attrs.update({"bound_method": res.method, "bound_solver": res.solver, "bound_gap": res.gap,
                     "bound_bounds": kind.bounds})


def check_bounds(bounds: Any, solver: str) -> None:
    """A ``bounds`` argument of :func:`evaluator.evaluate` (False: none) that names a bound and solver."""
    if bounds is not False:
        from ..lp.bounds import check_bounds as check

        check(bounds, solver)


def add_message_times(ds: xr.Dataset, res: Results, sharing: str, fairness: str, progression: str = "phase") -> None:
    """One evaluation's max-min message finish times, in place: ``message_finish_time`` over ``message`` (and
    ``phase`` for phased traffic; NaN past a phase's messages), and the sharing model in the attrs."""
    if res.flows is None:
        return
    from .flowlevel import SHARING_MODEL

    per_phase = res.flows[0]
    M = max((len(a) for a in per_phase), default=0)
    grid = np.full((len(per_phase), M), np.nan)
    for k, a in enumerate(per_phase):
        grid[k, :len(a)] = a
    entry = metric("message_finish_time")
    if "phase" in ds.dims:
        ds["message_finish_time"] = xr.DataArray(grid, dims=("phase", "message"), attrs=entry.attrs)
    else:
        ds["message_finish_time"] = xr.DataArray(grid[0], dims=("message",), attrs=entry.attrs)
    ds.attrs.update({"sharing": sharing, "fairness": fairness, "progression": progression,
                     "sharing_model": SHARING_MODEL[progression]})
