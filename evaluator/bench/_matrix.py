"""What the bench's SciPy routing-matrix baselines share (:class:`RoutingMatrix`) and their size limits.

:class:`~evaluator.bench.baseline.SparseMatrixBaseline` (tori, Dragonflies) and
:class:`~evaluator.bench._fat_tree_matrix.FatTreeMatrixBaseline` (fat trees) derive from it;
:func:`evaluator.bench.baseline.routing_matrix` picks one.
"""

from __future__ import annotations

from ..errors import ResourceError, check_memory, fmt_size
from ..placement import Placement
from ..routing import Routing
from ..topology import Topology
from ..traffic import AbstractTraffic

__all__ = ["BUILD_FIXED_BYTES", "BYTES_PER_ENTRY", "MAX_BYTES", "RoutingMatrix"]

BYTES_PER_ENTRY = 64
"""Peak bytes per generated ``(link, column, fraction)`` entry while a torus's or Dragonfly's ``R`` is built: int64
row and column and float64 value in COO form (24), plus the CSC copy and SciPy's sort buffers. Measured peaks
(``tracemalloc`` around :meth:`RoutingMatrix.build`, 2026-12-07): DF(4,8,4) minimal 54.2 and Valiant 48.0 bytes an
entry, an 8x8x8 torus's stencil 49.1 and its all-to-all 51.4; until then 48, which those peaks passed by up to
13 % (up to 25 % on small cases: tests/test_audit_bench.py), so the guard was no bound."""

BUILD_FIXED_BYTES = 2**16
"""Bytes a build allocates whatever its size (the per-tier lists, SciPy's index pointers): a 32-entry fat tree's
build peaked at 6.2 kB, 194 bytes an entry; added once to the size check."""

MAX_BYTES = 4 * 2**30
"""Largest build the bench allows (bytes, estimated); larger matrices are refused (the machine is shared)."""


class RoutingMatrix:
    """What the SciPy routing-matrix baselines share: ``R`` (a ``scipy.sparse`` array once built), its size, and
    the refusal of a matrix too large before it is built (members define :meth:`estimate`, :meth:`build`,
    :meth:`link_loads` and ``per_pair``: True where one ``R`` serves every point)."""

    R = None
    max_bytes: float = MAX_BYTES
    bytes_per_entry: int = BYTES_PER_ENTRY
    """Peak bytes per entry of :meth:`build` (the size check's factor; a member may hold its own)."""
    topology: Topology
    routing: Routing

    def estimate(self, traffic: AbstractTraffic | None = None, placement: Placement | None = None) -> int:
        raise NotImplementedError

    def check_size(self, traffic=None, placement=None) -> int:
        """Estimated bytes of :meth:`build`; a :class:`~evaluator.errors.ResourceError` when too large."""
        entries = self.estimate(traffic, placement)
        need = self.bytes_per_entry * entries + BUILD_FIXED_BYTES
        what = (f"a SciPy routing matrix of about {entries:.3g} entries ({self.routing.kind} on "
                f"{self.topology.name})")
        if need > self.max_bytes:
            raise ResourceError("bench.scipy_baseline", self.topology.name,
                                f"a routing matrix within {fmt_size(self.max_bytes)}: {what} needs about "
                                f"{fmt_size(need)}")
        check_memory("bench.scipy_baseline", self.topology.name, need, what, fraction=0.5)
        return need

    @property
    def nnz(self) -> int:
        """Stored entries of ``R`` (0 before :meth:`build`)."""
        return 0 if self.R is None else int(self.R.nnz)

    @property
    def nbytes(self) -> int:
        """Bytes held by ``R`` (values, indices, column pointers)."""
        R = self.R
        return 0 if R is None else int(R.data.nbytes + R.indices.nbytes + R.indptr.nbytes)
