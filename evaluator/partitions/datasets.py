"""Labelled datasets of the partition analysis, and writing them.

:func:`partitions_dataset` (:func:`~evaluator.partitions.analyse_machine`),
:func:`comparison_dataset` (:func:`~evaluator.partitions.compare_machines`)
and :func:`slabs_dataset` (:func:`~evaluator.partitions.slab_bisections`)
return :class:`xarray.Dataset` objects with units (bandwidths in bytes/s per
direction, bisections in links, sizes in nodes) and provenance attributes.
:func:`write_netcdf_atomic` is :func:`evaluator.io.write_netcdf` (h5netcdf,
temporary file then :func:`os.replace`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..dataset import with_units
from ..errors import PartitionError
from ..io import write_netcdf
from ..machines import Machine, TorusMachine, load_machine
from .geometry import (PartitionGeometry, SizeAnalysis, SlabResult, analyse_size, feasible_sizes,
                       predicted_speedup)

if TYPE_CHECKING:  # pragma: no cover
    import xarray as xr

__all__ = [
    "partitions_dataset",
    "comparison_dataset",
    "slabs_dataset",
    "write_netcdf_atomic",
]

write_netcdf_atomic = write_netcdf
"""Write a dataset to netCDF (h5netcdf) atomically: the name this package's callers use for
:func:`evaluator.io.write_netcdf` (``write_netcdf_atomic(ds, path) -> Path``; parent directories are created)."""


_NORMALISATION = ("bisection_links counts undirected links crossing the minimum bisection; it is the "
                  "'normalised bisection bandwidth' of Oltchik & Schwartz (each link one unit of capacity). "
                  "Bandwidths are bytes/s per direction. Predicted speedup of a contention-bound job = ratio "
                  "of bisection bandwidth per node (= ratio of bisections at equal size).")


def _machine_attrs(m: TorusMachine) -> dict[str, Any]:
    return {
        "machine": m.name,
        "machine_kind": m.kind,
        "machine_dims": list(m.dims),
        "machine_unit_dims": list(m.unit_dims),
        "allocation_unit": m.unit,
        "nodes_per_unit": m.nodes_per_unit,
        "link_bandwidth": list(m.link_bandwidth),
        "has_allowed_list": int(m.allowed_partitions is not None),
        "machine_source": m.source,
    }


def _provenance() -> dict[str, Any]:
    import datetime

    return {"created_by": "evaluator.partitions", "normalisation": _NORMALISATION,
            "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}


def partitions_dataset(machine: Machine | str, analyses: Sequence[SizeAnalysis]) -> xr.Dataset:
    """Labelled dataset of :func:`analyse_machine` results.

    Dimensions: ``partition`` (every geometry of every size), ``size``
    (partition sizes in nodes) and ``unit_dim`` (machine dimensions).
    Per partition: ``geometry`` (canonical label), ``shape`` (machine
    orientation), ``partition_nodes``, ``bisection_links``,
    ``bisection_bandwidth`` (bytes/s per direction), ``bisection_per_node``,
    ``allowed`` and ``speedup_of_best`` (best of its size over it). Per size:
    ``best_*``, ``worst_*``, ``allowed_*`` (NaN / "" when absent) and
    ``speedup_best_over_worst``, ``speedup_best_over_allowed``.
    """
    import xarray as xr

    m = load_machine(machine).torus("a partition dataset")
    rows = [(a, g) for a in analyses for g in a.geometries]
    nd = len(m.unit_dims)

    def opt(g: PartitionGeometry | None, f: str) -> Any:
        if g is None:
            return "" if f == "label" else math.nan
        return g.label if f == "label" else float(getattr(g.bisection, f))

    ds = xr.Dataset(
        data_vars={
            "shape": (("partition", "unit_dim"), np.array([g.shape for _, g in rows], dtype=np.int64).reshape(-1, nd)),
            "bisection_links": ("partition", np.array([g.bisection.links for _, g in rows], dtype=np.int64)),
            "bisection_bandwidth": ("partition", np.array([g.bisection.bandwidth for _, g in rows], dtype=float)),
            "bisection_per_node": ("partition", np.array([g.bisection.per_node for _, g in rows], dtype=float)),
            "allowed": ("partition", np.array([g.allowed for _, g in rows], dtype=np.int8)),
            "speedup_of_best": ("partition", np.array(
                [predicted_speedup(a.best.bisection, g.bisection) for a, g in rows], dtype=float)),
            "n_geometries": ("size", np.array([len(a.geometries) for a in analyses], dtype=np.int64)),
            "best_geometry": ("size", np.array([a.best.label for a in analyses], dtype=object)),
            "best_links": ("size", np.array([a.best.bisection.links for a in analyses], dtype=np.int64)),
            "best_bandwidth": ("size", np.array([a.best.bisection.bandwidth for a in analyses], dtype=float)),
            "worst_geometry": ("size", np.array([a.worst.label for a in analyses], dtype=object)),
            "worst_links": ("size", np.array([a.worst.bisection.links for a in analyses], dtype=np.int64)),
            "worst_bandwidth": ("size", np.array([a.worst.bisection.bandwidth for a in analyses], dtype=float)),
            "allowed_geometry": ("size", np.array([opt(a.best_allowed, "label") for a in analyses], dtype=object)),
            "allowed_links": ("size", np.array([opt(a.best_allowed, "links") for a in analyses], dtype=float)),
            "allowed_bandwidth": ("size", np.array([opt(a.best_allowed, "bandwidth") for a in analyses],
                                                   dtype=float)),
            "speedup_best_over_worst": ("size", np.array([a.speedup_best_over_worst for a in analyses],
                                                         dtype=float)),
            "speedup_best_over_allowed": ("size", np.array([a.speedup_best_over_allowed for a in analyses],
                                                           dtype=float)),
        },
        coords={
            "partition": np.arange(len(rows)),
            "size": np.array([a.nodes for a in analyses], dtype=np.int64),
            "units": ("size", np.array([a.units for a in analyses], dtype=np.int64)),
            "unit_dim": np.arange(nd),
            "partition_nodes": ("partition", np.array([g.nodes for _, g in rows], dtype=np.int64)),
            "geometry": ("partition", np.array([g.label for _, g in rows], dtype=object)),
        },
        attrs={**_machine_attrs(m), **_provenance()},
    )
    units = {"bisection_bandwidth": "bytes/s per direction", "bisection_per_node": "bytes/s per direction per node",
             "best_bandwidth": "bytes/s per direction", "worst_bandwidth": "bytes/s per direction",
             "allowed_bandwidth": "bytes/s per direction", "bisection_links": "links", "best_links": "links",
             "worst_links": "links", "allowed_links": "links", "size": "nodes", "partition_nodes": "nodes",
             "units": m.unit + "s", "shape": m.unit + "s"}
    for k, u in units.items():
        ds[k].attrs["units"] = u
    return with_units(ds)


def comparison_dataset(machines: Sequence[Machine | str],
                       table: dict[int, dict[str, PartitionGeometry | None]]) -> xr.Dataset:
    """Dataset of :func:`compare_machines`: dims ``size`` (nodes) x ``machine``.

    Variables: ``best_geometry`` ("" where infeasible), ``best_links``,
    ``best_bandwidth``, ``best_per_node`` (NaN where infeasible) and
    ``speedup_vs_first`` (best of each machine over the first machine's best,
    per node; NaN where either is infeasible), ``first_holding_size`` (the
    first machine's smallest feasible size, in nodes, that holds a job of this
    size; NaN where none does or its sizes cannot be listed) and
    ``speedup_vs_first_holding`` (bisection of each machine's best partition of
    this size over that of the first machine's best partition of
    ``first_holding_size``: the same job's bytes over each cut, so the ratio of
    bisections, not per node; Oltchik's Fig. 7 comparison of JUQUEEN-54 with
    JUQUEEN, whose 27- and 54-midplane partitions JUQUEEN cannot allocate;
    docs/partitions.md).
    """
    import xarray as xr

    ms = [load_machine(x).torus("a partition dataset") for x in machines]
    sizes = sorted(table)
    names = [m.name for m in ms]
    geo = np.full((len(sizes), len(ms)), "", dtype=object)
    links = np.full((len(sizes), len(ms)), np.nan)
    bw = np.full((len(sizes), len(ms)), np.nan)
    pn = np.full((len(sizes), len(ms)), np.nan)
    for i, n in enumerate(sizes):
        for j, name in enumerate(names):
            g = table[n].get(name)
            if g is not None:
                geo[i, j], links[i, j] = g.label, g.bisection.links
                bw[i, j], pn[i, j] = g.bisection.bandwidth, g.bisection.per_node
    hold, hold_bw = _first_holding(ms[0], sizes)
    ds = xr.Dataset(
        {"best_geometry": (("size", "machine"), geo), "best_links": (("size", "machine"), links),
         "best_bandwidth": (("size", "machine"), bw), "best_per_node": (("size", "machine"), pn),
         "speedup_vs_first": (("size", "machine"), pn / pn[:, :1]),
         "first_holding_size": ("size", hold),
         "speedup_vs_first_holding": (("size", "machine"), bw / hold_bw[:, None])},
        coords={"size": np.array(sizes, dtype=np.int64), "machine": np.array(names, dtype=object),
                "units": ("size", np.array([n // ms[0].nodes_per_unit for n in sizes], dtype=np.int64))},
        attrs={"machines": names, **_provenance()})
    ds["best_bandwidth"].attrs["units"] = "bytes/s per direction"
    ds["best_per_node"].attrs["units"] = "bytes/s per direction per node"
    ds["best_links"].attrs["units"] = "links"
    ds["size"].attrs["units"] = "nodes"
    ds["first_holding_size"].attrs.update(units="nodes", long_name="the first machine's smallest feasible size "
                                          "that holds this size")
    ds["speedup_vs_first_holding"].attrs.update(units="1", long_name="best bisection over that of the first "
                                                "machine's best partition of first_holding_size")
    return with_units(ds)


def _first_holding(first: TorusMachine, sizes: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """Per size: the smallest feasible size of ``first`` that holds it (nodes) and the bisection bandwidth
    (bytes/s per direction) of its best partition; NaN where none holds it or ``first``'s sizes are too many
    to list."""
    hold = np.full(len(sizes), np.nan)
    hold_bw = np.full(len(sizes), np.nan)
    try:
        feasible = feasible_sizes(first)
    except PartitionError:
        return hold, hold_bw
    best: dict[int, float] = {}
    for i, n in enumerate(sizes):
        bigger = [f for f in feasible if f >= n]
        if bigger:
            h = bigger[0]
            if h not in best:
                best[h] = analyse_size(first, h).best.bisection.bandwidth
            hold[i], hold_bw[i] = h, best[h]
    return hold, hold_bw


def slabs_dataset(machine: Machine | str, results: Sequence[SlabResult]) -> xr.Dataset:
    """Dataset of :func:`slab_bisections`: dims ``slab`` x ``dim``."""
    import xarray as xr

    m = load_machine(machine).torus("a partition dataset")
    nd = len(m.dims)
    pn = np.array([r.bisection.per_node for r in results], dtype=float)
    ds = xr.Dataset(
        {"shape": (("slab", "dim"), np.array([r.shape for r in results], dtype=np.int64).reshape(-1, nd)),
         "wrap": (("slab", "dim"), np.array([r.wrap for r in results], dtype=np.int8).reshape(-1, nd)),
         "links_per_dim": (("slab", "dim"), np.array([r.bisection.links_per_dim for r in results],
                                                     dtype=np.int64).reshape(-1, nd)),
         "routers": ("slab", np.array([r.bisection.routers for r in results], dtype=np.int64)),
         "nodes": ("slab", np.array([r.bisection.nodes for r in results], dtype=np.int64)),
         "bisection_links": ("slab", np.array([r.bisection.links for r in results], dtype=np.int64)),
         "bisection_bandwidth": ("slab", np.array([r.bisection.bandwidth for r in results], dtype=float)),
         "bisection_per_node": ("slab", pn),
         "per_node_vs_best": ("slab", pn / pn.max() if len(pn) else pn)},
        coords={"slab": np.array([r.label for r in results], dtype=object), "dim": np.arange(nd)},
        attrs={**_machine_attrs(m), **_provenance()})
    ds["bisection_bandwidth"].attrs["units"] = "bytes/s per direction"
    ds["bisection_per_node"].attrs["units"] = "bytes/s per direction per node"
    return with_units(ds)
