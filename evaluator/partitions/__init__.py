"""Torus partition analysis: internal bisection, isoperimetric bound, partition geometries.

Answers, for a machine of the catalogue (:mod:`evaluator.machines`): which
partition shapes of N nodes can be allocated, what internal bisection each
has, which is best and worst, how much faster a contention-bound job would run
on the best shape, and which machine shape gives better partitions
(Oltchik & Schwartz, "Network partitioning and avoidable contention"; Fiedler,
Blue Waters topology slides).

Units: bandwidths are bytes/s per direction; a bisection bandwidth is the sum,
over the links cut, of one link's bandwidth in one direction. Bisections in
links are counted as in Oltchik & Schwartz. The full conventions (link
counting, ties, why the staircase cut is exact, Blue Gene/Q versus embedded
partitions) are in :mod:`evaluator.partitions.bisection`.

Modules
-------
* :mod:`~evaluator.partitions.bisection`: :class:`Bisection`,
  :func:`torus_bisection`, :func:`effective_wrap`,
  :func:`isoperimetric_bound`, :func:`bgq_node_dims`;
* :mod:`~evaluator.partitions.geometry`: :class:`PartitionGeometry`,
  :func:`partition_bisection`, :func:`partition_geometries`,
  :func:`feasible_sizes`, :class:`SizeAnalysis`, :func:`analyse_size`,
  :func:`analyse_machine`, :func:`compare_machines`, :class:`SlabResult`,
  :func:`slab_bisections`, :func:`predicted_speedup`;
* :mod:`~evaluator.partitions.datasets`: :func:`partitions_dataset`,
  :func:`comparison_dataset`, :func:`slabs_dataset`,
  :func:`write_netcdf_atomic` (:func:`evaluator.io.write_netcdf`);
* :mod:`~evaluator.partitions.plots`: :func:`plot_partitions`,
  :func:`plot_comparison`, :func:`plot_slabs`;
* :mod:`~evaluator.partitions.pairing`: link-level confirmation with the core
  evaluator (:class:`PairingResult`, :func:`pairing_time`,
  :func:`confirm_machine`, :func:`pairing_dataset`).

:func:`check_partition` (what shapes a machine allows) lives in
:mod:`evaluator.machines` and :class:`PartitionError` in
:mod:`evaluator.errors`; both are re-exported here.
"""

from __future__ import annotations

from ..errors import PartitionError
from ..machines import check_partition
from .bisection import Bisection, bgq_node_dims, effective_wrap, isoperimetric_bound, torus_bisection
from .datasets import comparison_dataset, partitions_dataset, slabs_dataset, write_netcdf_atomic
from .geometry import (
    PartitionGeometry,
    SizeAnalysis,
    SlabResult,
    analyse_machine,
    analyse_size,
    compare_machines,
    feasible_sizes,
    partition_bisection,
    partition_geometries,
    predicted_speedup,
    slab_bisections,
)
from .pairing import PairingResult, confirm_machine, pairing_dataset, pairing_time
from .plots import plot_comparison, plot_partitions, plot_slabs

__all__ = [
    "PartitionError",
    "Bisection",
    "PartitionGeometry",
    "SizeAnalysis",
    "SlabResult",
    "torus_bisection",
    "effective_wrap",
    "isoperimetric_bound",
    "bgq_node_dims",
    "check_partition",
    "partition_bisection",
    "partition_geometries",
    "feasible_sizes",
    "analyse_size",
    "analyse_machine",
    "compare_machines",
    "slab_bisections",
    "predicted_speedup",
    "partitions_dataset",
    "comparison_dataset",
    "slabs_dataset",
    "write_netcdf_atomic",
    "plot_partitions",
    "plot_comparison",
    "plot_slabs",
    "PairingResult",
    "pairing_time",
    "confirm_machine",
    "pairing_dataset",
]
