"""Torus partition analysis: internal bisection, isoperimetric bound, partition geometries.

Answers, for a machine of the catalogue (:mod:`evaluator.machines`): which
partition shapes of N nodes can be allocated, what internal bisection each
has, which is best and worst, how much faster a contention-bound job would run
on the best shape, and which machine shape gives better partitions
(Oltchik & Schwartz, "Network partitioning and avoidable contention"; Fiedler,
Blue Waters topology slides).

Conventions
-----------
* Units: bandwidths are bytes/s per direction; a bisection bandwidth is the
  sum, over the links cut, of one link's bandwidth in one direction, i.e. the
  capacity from one half to the other.
* Links are undirected and counted as in Oltchik & Schwartz: a ring of size
  >= 3 cut across contributes two links per cut line (the direct one and the
  wrap-around one), a ring of size 2 is a single link (its two neighbours
  coincide), a mesh (chain) contributes one, a dimension of size 1 nothing.
* Bisection: the minimum, over every split of the routers into halves of
  ``floor(R/2)`` and ``ceil(R/2)``, of the bandwidth of the links between
  them. Nodes go with their router (with ``nodes_per_router > 1`` and an odd
  router count the node halves differ by ``nodes_per_router``). Ties in
  bandwidth are broken by the smaller link count.
* Dimension order and sizes are as given; the sorted (canonical) form of the
  Oltchik tables is used for presentation and for counting rotations once.

How the exact bisection is computed
-----------------------------------
For a cuboid torus/mesh the minimum is attained by a *staircase* of
axis-aligned cuts: cut across some dimension ``k`` of size ``a`` (slab size
``M = R/a``); if ``a`` is even this is a straight cut costing ``c*M`` links
(``c = 2`` for a ring of size >= 3, else 1); if ``a`` is odd the half holds
``(a-1)/2`` full slabs plus half of the middle slab, which costs the same
``c*M`` links of dimension ``k`` plus the bisection of the middle slab
(recursively). :func:`torus_bisection` takes the minimum over every such
staircase. For even sides and equal bandwidths this is the straight cut across
the longest dimension, ``2R/L`` links (the Blue Gene/Q formula ``2 N/L``);
with unequal bandwidths (Gemini Y) the cheapest dimension may be a shorter
one. This is not a theorem we prove here: the test suite checks it against an
exhaustive minimum bisection over all balanced subsets on every small torus,
mesh and mixed shape (sizes 1, 2, odd and even, weighted and unweighted).

Blue Gene/Q versus embedded partitions
--------------------------------------
* ``kind: bgq``: a partition of ``A x B x C x D`` midplanes is the node torus
  ``4A x 4B x 4C x 4D x 2``; wrap links close inside the partition (each
  partition is its own torus), so its bisection does not depend on where it
  sits or on the machine size.
* ``kind: torus`` (Cray Gemini): a job's router prism is routed over the host
  torus (``embedded_in=host_dims``). A dimension that spans the whole host
  ring keeps its wrap links. A dimension of extent ``s < H`` is a chain unless
  minimal routing between its farthest routers leaves the prism through the
  host's wrap-around (``2 (s - 1) > H``); then it counts as a ring whose
  second cut line lies on the host links outside the prism (Fiedler's 23 of 24
  case). Those outside links may be shared with other jobs and are only used
  by the far pairs, so for such dimensions the figure is an upper estimate.
"""

from __future__ import annotations

import itertools
import math
import os
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .machines import Machine, load_machine

if TYPE_CHECKING:  # pragma: no cover
    import xarray as xr

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
]

_REL_TOL = 1e-12


class PartitionError(ValueError):
    """A partition request is invalid (size, shape, fit or allowed list).

    The message names the machine, the field, the value and what is allowed.
    """


def _fmt(shape: Sequence[int]) -> str:
    return "x".join(str(int(s)) for s in shape)


def _is_int(v: Any) -> bool:
    return (isinstance(v, (int, np.integer))) and not isinstance(v, (bool, np.bool_))


def _per_dim(field: str, value: Any, ndim: int, kind: type) -> tuple:
    if isinstance(value, (list, tuple, np.ndarray)):
        if len(value) != ndim:
            raise PartitionError(f"{field} = {list(value)!r} is invalid; allowed: one value or a list of "
                                 f"{ndim} values (one per dimension)")
        return tuple(kind(v) for v in value)
    return (kind(value),) * ndim


def _dims(field: str, dims: Any) -> tuple[int, ...]:
    if not isinstance(dims, (list, tuple, np.ndarray)) or len(dims) == 0 or not all(
            _is_int(d) and int(d) >= 1 for d in dims):
        raise PartitionError(f"{field} = {dims!r} is invalid; allowed: a non-empty list of integers >= 1")
    return tuple(int(d) for d in dims)


# --------------------------------------------------------------------------------------
# exact bisection of a cuboid torus / mesh
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Bisection:
    """Internal bisection of a cuboid partition.

    Attributes
    ----------
    links
        Undirected links crossing the minimum cut (counted as in Oltchik &
        Schwartz: the "normalised bisection bandwidth" of their tables).
    bandwidth
        Capacity of the cut, bytes/s per direction.
    links_per_dim : tuple of int, shape [dim]
        Links of each dimension crossing the cut.
    cut : tuple of int
        Dimensions of the staircase, outermost first; ``(k,)`` is a straight
        cut across dimension ``k``.
    routers, nodes
        Size of the partition.
    """

    links: int
    bandwidth: float
    links_per_dim: tuple[int, ...]
    cut: tuple[int, ...]
    routers: int
    nodes: int

    @property
    def per_node(self) -> float:
        """Bisection bandwidth per node, bytes/s per direction per node."""
        return self.bandwidth / self.nodes

    @property
    def links_per_node(self) -> float:
        """Links in the bisection per node."""
        return self.links / self.nodes


def effective_wrap(dims: Sequence[int], host_dims: Sequence[int],
                   host_wrap: bool | Sequence[bool] = True) -> tuple[bool, ...]:
    """Wrap flags of a prism routed over a host torus (embedded mode).

    Parameters
    ----------
    dims : sequence of int, shape [dim]
        Extent of the prism in routers.
    host_dims : sequence of int, shape [dim]
        Router grid of the host machine.
    host_wrap : bool or sequence of bool, shape [dim]
        Wrap-around links of the host.

    Returns
    -------
    tuple of bool, shape [dim]
        True where the prism's dimension behaves as a ring: it spans the
        whole host ring, or minimal routing between its farthest routers uses
        the host's wrap-around (``2 (s - 1) > H``).
    """
    d = _dims("dims", dims)
    h = _dims("embedded_in", host_dims)
    if len(h) != len(d):
        raise PartitionError(f"embedded_in = {list(h)!r} is invalid; allowed: a host of {len(d)} dimensions "
                             f"like the partition {_fmt(d)}")
    hw = _per_dim("wrap", host_wrap, len(d), bool)
    for k, (s, H) in enumerate(zip(d, h)):
        if s > H:
            raise PartitionError(f"partition {_fmt(d)} does not fit in host {_fmt(h)} "
                                 f"(dimension {k}: {s} > {H})")
    return tuple(bool(w and (s == H or 2 * (s - 1) > H)) for s, H, w in zip(d, h, hw))


@lru_cache(maxsize=4096)
def _staircase(dims: tuple[int, ...], ring: tuple[bool, ...],
               bw: tuple[float, ...]) -> tuple[float, int, tuple[int, ...], tuple[int, ...]]:
    """Minimum staircase cut: (bandwidth, links, links_per_dim, cut dims)."""
    n = math.prod(dims)
    if n <= 1:
        return 0.0, 0, (0,) * len(dims), ()
    best: tuple[float, int, tuple[int, ...], tuple[int, ...]] | None = None
    for k, a in enumerate(dims):
        if a < 2:
            continue
        m = n // a
        c = 2 if (ring[k] and a >= 3) else 1
        lpd = [0] * len(dims)
        lpd[k] = c * m
        cap = c * m * bw[k]
        cut: tuple[int, ...] = (k,)
        if a % 2 == 1:
            sub = dims[:k] + (1,) + dims[k + 1:]
            scap, _, slpd, scut = _staircase(sub, ring, bw)
            cap += scap
            lpd = [x + y for x, y in zip(lpd, slpd)]
            cut = cut + scut
        links = sum(lpd)
        if best is None or cap < best[0] * (1 - _REL_TOL) or (
                cap <= best[0] * (1 + _REL_TOL) and links < best[1]):
            best = (cap, links, tuple(lpd), cut)
    assert best is not None
    return best


def torus_bisection(dims: Sequence[int], wrap: bool | Sequence[bool] = True,
                    bandwidth: float | Sequence[float] = 1.0, *,
                    embedded_in: Sequence[int] | None = None,
                    nodes_per_router: int = 1) -> Bisection:
    """Exact internal bisection of a cuboid torus, mesh or mixed partition.

    Parameters
    ----------
    dims : sequence of int, shape [dim]
        Routers along each dimension (any number of dimensions, sizes >= 1).
    wrap : bool or sequence of bool, shape [dim]
        Own-torus mode (``embedded_in=None``): whether each dimension of the
        partition closes on itself (Blue Gene/Q partitions: all True).
        Embedded mode: the wrap flags of the host torus.
    bandwidth : float or sequence of float, shape [dim]
        Bandwidth of one link of each dimension, bytes/s per direction
        (Gemini: Y half of X and Z). The default 1.0 makes ``bandwidth``
        equal to the link count.
    embedded_in : sequence of int, shape [dim], optional
        Router grid of the host torus the partition is routed over (Cray
        Gemini jobs). Dimensions get the ring/chain behaviour of
        :func:`effective_wrap`; the cut may then use host links outside the
        partition.
    nodes_per_router
        Nodes on each router; only changes :attr:`Bisection.nodes` (nodes go
        with their router).

    Returns
    -------
    Bisection
        Minimum-bandwidth bisection (ties: fewest links). See the module
        docstring for the counting rules and why a staircase of axis-aligned
        cuts is exact.
    """
    d = _dims("dims", dims)
    if not (_is_int(nodes_per_router) and int(nodes_per_router) >= 1):
        raise PartitionError(f"nodes_per_router = {nodes_per_router!r} is invalid; allowed: an integer >= 1")
    bw = _per_dim("bandwidth", bandwidth, len(d), float)
    if not all(math.isfinite(b) and b > 0 for b in bw):
        raise PartitionError(f"bandwidth = {bandwidth!r} is invalid; allowed: finite numbers > 0 "
                             "(bytes/s per direction)")
    if embedded_in is None:
        ring = _per_dim("wrap", wrap, len(d), bool)
    else:
        ring = effective_wrap(d, embedded_in, wrap)
    cap, links, lpd, cut = _staircase(d, ring, bw)
    r = math.prod(d)
    return Bisection(links=links, bandwidth=cap, links_per_dim=lpd, cut=cut, routers=r,
                     nodes=r * int(nodes_per_router))


# --------------------------------------------------------------------------------------
# Theorem 3.1 (edge-isoperimetric inequality for arbitrary tori)
# --------------------------------------------------------------------------------------


def isoperimetric_bound(dims: Sequence[int], t: int) -> float:
    """Lower bound on the links leaving a set of ``t`` vertices of a torus.

    Oltchik & Schwartz, Theorem 3.1: with ``a_1 >= ... >= a_D`` the sorted
    sides and ``t <= |V|/2``,
    ``|E(S, S')| >= min_r 2 (D-r) (a_D ... a_{D-r+1})^(1/(D-r)) t^((D-r-1)/(D-r))``
    (the product runs over the ``r`` smallest sides).

    Parameters
    ----------
    dims : sequence of int, shape [dim]
        Sides of the torus (any order; sorted internally).
    t
        Size of the vertex set, ``1 <= t <= prod(dims) // 2``.

    Returns
    -------
    float
        The bound, in links.

    Notes
    -----
    The bound counts links as in a ``2D``-regular torus, where every ring
    crossing is two links; that is the convention of the theorem (for sides of
    2 it is Harper's hypercube bound doubled). With the single-link convention
    of :func:`torus_bisection` for rings of size 2 it can exceed the true cut
    (a hypercube ``2x2x2`` has bisection 4 < 8). It is proved for cuboid
    sets and conjectured for all sets; the tests check both against brute
    force on small tori.
    """
    a = sorted(_dims("dims", dims), reverse=True)
    n = math.prod(a)
    if not _is_int(t) or not 1 <= int(t) <= n // 2:
        raise PartitionError(f"t = {t!r} is invalid; allowed: an integer in [1, {n // 2}] "
                             f"(at most half of the {n} vertices of {_fmt(a)})")
    t = int(t)
    D = len(a)
    vals = []
    for r in range(D):
        k = math.prod(a[D - r:]) if r else 1
        e = D - r
        vals.append(2 * e * k ** (1.0 / e) * t ** ((e - 1) / e))
    return float(min(vals))


# --------------------------------------------------------------------------------------
# machine partitions
# --------------------------------------------------------------------------------------


def bgq_node_dims(midplanes: Sequence[int]) -> tuple[int, ...]:
    """Node torus ``4A x 4B x 4C x 4D x 2`` of a Blue Gene/Q partition of midplanes."""
    mp = _dims("midplanes", midplanes)
    if len(mp) != 4:
        raise PartitionError(f"midplanes = {list(mp)!r} is invalid; allowed: 4 integers >= 1 (A, B, C, D)")
    return tuple(4 * m for m in mp) + (2,)


def _canonical(machine: Machine, shape: tuple[int, ...]) -> tuple[int, ...]:
    """Rotation-free form: sorted descending (bgq); sorted within equivalent dims (torus)."""
    if machine.kind == "bgq":
        return tuple(sorted(shape, reverse=True))
    groups: dict[tuple, list[int]] = {}
    for k in range(len(shape)):
        groups.setdefault((machine.dims[k], machine.wrap[k], machine.link_bandwidth[k]), []).append(k)
    out = list(shape)
    for idx in groups.values():
        vals = sorted((shape[k] for k in idx), reverse=True)
        for k, v in zip(idx, vals):
            out[k] = v
    return tuple(out)


def _fits(shape: Sequence[int], box: Sequence[int]) -> bool:
    return all(s <= b for s, b in zip(shape, box))


def _fitting_rotation(shape: tuple[int, ...], box: tuple[int, ...]) -> tuple[int, ...] | None:
    for p in sorted(set(itertools.permutations(shape)), reverse=True):
        if _fits(p, box):
            return p
    return None


def _allowed_set(machine: Machine) -> set[tuple[int, ...]] | None:
    if machine.allowed_partitions is None:
        return None
    return {_canonical(machine, tuple(s)) for s in machine.allowed_partitions}


def _unit_name(machine: Machine) -> str:
    return "midplanes" if machine.kind == "bgq" else "routers"


def check_partition(machine: Machine | str, shape: Sequence[int], *,
                    require_allowed: bool = False) -> tuple[int, ...]:
    """Validate a partition shape for a machine and return it as a tuple.

    Parameters
    ----------
    machine
        A :class:`~evaluator.machines.Machine` or a machine name.
    shape : sequence of int, shape [unit_dim]
        Midplanes ``(A, B, C, D)`` for Blue Gene/Q, routers for a torus
        machine, in the machine's dimension order (not sorted for you).
    require_allowed
        Also require the shape (up to rotation) to be in the machine's
        ``allowed_partitions`` list, when it has one.

    Raises
    ------
    PartitionError
        Wrong length, sizes < 1, a dimension larger than the machine's, or a
        shape the allowed list forbids; the message says which and what is
        allowed.
    """
    m = load_machine(machine)
    box = m.unit_dims
    unit = _unit_name(m)
    if not isinstance(shape, (list, tuple, np.ndarray)) or len(shape) != len(box):
        raise PartitionError(f"machine {m.name!r}: partition {shape!r} is invalid; allowed: "
                             f"{len(box)} integers >= 1 ({unit} per dimension, machine {_fmt(box)})")
    if not all(_is_int(s) and int(s) >= 1 for s in shape):
        raise PartitionError(f"machine {m.name!r}: partition {list(shape)!r} is invalid; allowed: "
                             f"{len(box)} integers >= 1 ({unit} per dimension)")
    shp = tuple(int(s) for s in shape)
    for k, (s, b) in enumerate(zip(shp, box)):
        if s > b:
            rot = _fitting_rotation(shp, box)
            hint = f"; the rotation {_fmt(rot)} fits" if rot is not None else ""
            raise PartitionError(f"machine {m.name!r}: partition {_fmt(shp)} does not fit in {unit} "
                                 f"{_fmt(box)} (dimension {k}: {s} > {b}){hint}")
    if require_allowed:
        allowed = _allowed_set(m)
        if allowed is not None and _canonical(m, shp) not in allowed:
            n_units = math.prod(shp)
            same = sorted({_fmt(a) for a in allowed if math.prod(a) == n_units})
            every = ", ".join(sorted((_fmt(a) for a in allowed), key=lambda s: (math.prod(map(int, s.split('x'))), s)))
            raise PartitionError(
                f"machine {m.name!r}: partition {_fmt(shp)} ({n_units} {unit}, "
                f"{n_units * m.nodes_per_unit} nodes) is not in the scheduler's allowed list; allowed "
                + (f"geometries of {n_units} {unit}: {', '.join(same)}" if same else
                   f"geometries (none of {n_units} {unit}): {every}"))
    return shp


def _partition_dims(m: Machine, shape: tuple[int, ...]) -> tuple[int, ...]:
    return bgq_node_dims(shape) if m.kind == "bgq" else shape


def _bisection_of(m: Machine, shape: tuple[int, ...]) -> Bisection:
    if m.kind == "bgq":
        return torus_bisection(bgq_node_dims(shape), True, m.link_bandwidth[0])
    return torus_bisection(shape, m.wrap, m.link_bandwidth, embedded_in=m.dims,
                           nodes_per_router=m.nodes_per_router)


def partition_bisection(machine: Machine | str, shape: Sequence[int], *,
                        require_allowed: bool = False) -> Bisection:
    """Internal bisection of one partition of a machine.

    Parameters
    ----------
    machine
        Machine or machine name.
    shape : sequence of int, shape [unit_dim]
        Midplanes (bgq: the partition is its own torus ``4A x 4B x 4C x 4D
        x 2``) or routers (torus: a prism routed over the host torus).
    require_allowed
        Reject shapes the machine's allowed list forbids.

    Returns
    -------
    Bisection
        Links and bytes/s per direction of the minimum bisection.
    """
    m = load_machine(machine)
    return _bisection_of(m, check_partition(m, shape, require_allowed=require_allowed))


@dataclass(frozen=True)
class PartitionGeometry:
    """One feasible partition geometry of a machine.

    Attributes
    ----------
    shape : tuple of int, shape [unit_dim]
        A fitting orientation in the machine's dimension order (midplanes or
        routers).
    canonical : tuple of int, shape [unit_dim]
        Rotation-free form (sorted, as in the Oltchik tables).
    node_dims : tuple of int
        Router/node torus of the partition (bgq: ``4A x 4B x 4C x 4D x 2``).
    nodes
        Compute nodes.
    bisection
        Its internal bisection.
    allowed
        Whether the scheduler allows it (True when there is no allowed list).
    """

    shape: tuple[int, ...]
    canonical: tuple[int, ...]
    node_dims: tuple[int, ...]
    nodes: int
    bisection: Bisection
    allowed: bool

    @property
    def label(self) -> str:
        """Canonical geometry as text, e.g. ``"2x2x1x1"``."""
        return _fmt(self.canonical)


def _check_size(m: Machine, nodes: Any) -> int:
    unit = m.unit
    if not _is_int(nodes) or int(nodes) < 1:
        raise PartitionError(f"machine {m.name!r}: partition size = {nodes!r} is invalid; allowed: a positive "
                             f"number of nodes, a multiple of {m.nodes_per_unit} (nodes per {unit}) up to "
                             f"{m.n_nodes}")
    nodes = int(nodes)
    if nodes > m.n_nodes:
        raise PartitionError(f"machine {m.name!r}: partition size {nodes} nodes is larger than the machine "
                             f"({m.n_nodes} nodes); allowed: a multiple of {m.nodes_per_unit} up to {m.n_nodes}")
    if nodes % m.nodes_per_unit:
        lo = nodes // m.nodes_per_unit * m.nodes_per_unit
        near = [x for x in (lo, lo + m.nodes_per_unit) if 0 < x <= m.n_nodes]
        raise PartitionError(f"machine {m.name!r}: partition size {nodes} nodes is not a multiple of "
                             f"{m.nodes_per_unit} nodes per {unit}; nearest allowed: "
                             f"{', '.join(map(str, near))}")
    return nodes


def _shapes_of_units(box: tuple[int, ...], units: int) -> list[tuple[int, ...]]:
    """Every shape (machine orientation) with ``prod == units`` fitting in ``box``."""
    out: list[tuple[int, ...]] = []

    def rec(k: int, rest: int, acc: tuple[int, ...]) -> None:
        if k == len(box):
            if rest == 1:
                out.append(acc)
            return
        for s in range(1, min(box[k], rest) + 1):
            if rest % s == 0:
                rec(k + 1, rest // s, acc + (s,))

    rec(0, units, ())
    return out


def partition_geometries(machine: Machine | str, nodes: int) -> list[PartitionGeometry]:
    """Every feasible partition geometry of ``nodes`` nodes, rotations counted once.

    Parameters
    ----------
    machine
        Machine or machine name.
    nodes
        Partition size in compute nodes (a multiple of 512 on Blue Gene/Q,
        of ``nodes_per_router`` on a torus machine).

    Returns
    -------
    list of PartitionGeometry
        Sorted from highest to lowest bisection bandwidth (ties: more
        balanced shapes first). Blue Gene/Q: cuboids of midplanes that fit in
        some rotation, one per sorted form. Torus machines: router prisms;
        rotations are merged only between dimensions with equal host size,
        wrap and bandwidth (Gemini X and Z, not Y).

    Raises
    ------
    PartitionError
        Bad size, or no cuboid of that size fits (the message lists the
        feasible sizes).
    """
    m = load_machine(machine)
    nodes = _check_size(m, nodes)
    units = nodes // m.nodes_per_unit
    allowed = _allowed_set(m)
    seen: dict[tuple[int, ...], tuple[int, ...]] = {}
    for shp in _shapes_of_units(m.unit_dims, units):
        can = _canonical(m, shp)
        if can not in seen or shp > seen[can]:
            seen[can] = shp  # representative: lexicographically largest fitting orientation
    if not seen:
        sizes = feasible_sizes(m)
        raise PartitionError(
            f"machine {m.name!r}: no cuboid of {units} {_unit_name(m)} ({nodes} nodes) fits in "
            f"{_unit_name(m)} {_fmt(m.unit_dims)}; feasible sizes (nodes): "
            f"{_short_list(sizes)}")
    geoms = []
    for can, shp in seen.items():
        b = _bisection_of(m, shp)
        geoms.append(PartitionGeometry(shape=shp, canonical=can, node_dims=_partition_dims(m, shp),
                                       nodes=nodes, bisection=b,
                                       allowed=True if allowed is None else can in allowed))
    geoms.sort(key=_best_key)
    return geoms


def _best_key(g: PartitionGeometry) -> tuple:
    # highest bandwidth first; ties: fewer links, smaller longest side, lexicographically smaller
    return (-round(g.bisection.bandwidth, 3), g.bisection.links, max(g.canonical), g.canonical)


def _short_list(xs: Sequence[int], n: int = 40) -> str:
    s = ", ".join(map(str, xs[:n]))
    return s + (f", ... ({len(xs)} sizes)" if len(xs) > n else "")


def feasible_sizes(machine: Machine | str, *, allowed_only: bool = False) -> list[int]:
    """Partition sizes (nodes) for which at least one cuboid fits.

    Parameters
    ----------
    machine
        Machine or machine name.
    allowed_only
        Only sizes with a geometry in the machine's allowed list (no effect
        without a list).
    """
    m = load_machine(machine)
    if allowed_only and m.allowed_partitions is not None:
        units = {math.prod(s) for s in m.allowed_partitions}
    else:
        units = {math.prod(s) for s in itertools.product(*(range(1, b + 1) for b in m.unit_dims))}
    return sorted(u * m.nodes_per_unit for u in units)


@dataclass(frozen=True)
class SizeAnalysis:
    """Partitions of one size on one machine.

    Attributes
    ----------
    machine
        Machine name.
    nodes, units
        Size in nodes and in allocation units (midplanes or routers).
    geometries
        Every feasible geometry, best first.
    best, worst
        Highest and lowest bisection (ties: best prefers balanced shapes,
        worst elongated ones).
    best_allowed, worst_allowed
        The same among geometries of the allowed list; None when the machine
        has no list or the list has no geometry of this size.
    """

    machine: str
    nodes: int
    units: int
    geometries: tuple[PartitionGeometry, ...]
    best: PartitionGeometry
    worst: PartitionGeometry
    best_allowed: PartitionGeometry | None
    worst_allowed: PartitionGeometry | None
    has_allowed_list: bool

    @property
    def speedup_best_over_worst(self) -> float:
        """Predicted speedup of a contention-bound job on the best vs the worst geometry."""
        return predicted_speedup(self.best.bisection, self.worst.bisection)

    @property
    def speedup_best_over_allowed(self) -> float:
        """Predicted speedup of the best possible vs the best allowed geometry (NaN if none)."""
        if self.best_allowed is None:
            return math.nan
        return predicted_speedup(self.best.bisection, self.best_allowed.bisection)


def predicted_speedup(faster: Bisection, slower: Bisection) -> float:
    """Predicted speedup of a contention-bound workload, ``faster`` over ``slower``.

    A contention-bound exchange takes (bytes crossing the bisection) /
    (bisection bandwidth). For a weak-scaled job the bytes grow with the node
    count, so the speedup is the ratio of bisection bandwidth *per node*
    (Fiedler); for two partitions of the same size this is simply the ratio
    of bisections, as in the Oltchik tables.
    """
    return faster.per_node / slower.per_node


def analyse_size(machine: Machine | str, nodes: int) -> SizeAnalysis:
    """Best, worst and allowed geometries of one partition size (see :class:`SizeAnalysis`)."""
    m = load_machine(machine)
    geoms = partition_geometries(m, nodes)
    best, worst = geoms[0], _worst(geoms)
    allowed = [g for g in geoms if g.allowed] if m.allowed_partitions is not None else []
    return SizeAnalysis(machine=m.name, nodes=geoms[0].nodes, units=geoms[0].nodes // m.nodes_per_unit,
                        geometries=tuple(geoms), best=best, worst=worst,
                        best_allowed=allowed[0] if allowed else None,
                        worst_allowed=_worst(allowed) if allowed else None,
                        has_allowed_list=m.allowed_partitions is not None)


def _worst(geoms: Sequence[PartitionGeometry]) -> PartitionGeometry:
    return min(geoms, key=lambda g: (round(g.bisection.bandwidth, 3), -g.bisection.links,
                                     -max(g.canonical), tuple(-x for x in g.canonical)))


def analyse_machine(machine: Machine | str, sizes: Iterable[int] | None = None) -> list[SizeAnalysis]:
    """:func:`analyse_size` for several sizes (nodes).

    Without ``sizes``: Blue Gene/Q machines with an allowed list use the
    sizes of that list (Oltchik Table 6), others every feasible size (Table
    7). Torus machines need explicit sizes (there are thousands).
    """
    m = load_machine(machine)
    if sizes is None:
        if m.kind != "bgq":
            raise PartitionError(f"machine {m.name!r} (kind torus) has {len(feasible_sizes(m))} feasible sizes; "
                                 "give the sizes (nodes) to analyse explicitly")
        sizes = feasible_sizes(m, allowed_only=True)
    return [analyse_size(m, n) for n in sizes]


def compare_machines(machines: Sequence[Machine | str],
                     sizes: Iterable[int] | None = None) -> dict[int, dict[str, PartitionGeometry | None]]:
    """Best geometry of each size on several machines (Oltchik Table 5, Fig. 7).

    Parameters
    ----------
    machines
        Machines or names; all should share the allocation unit.
    sizes
        Sizes in nodes; default: the union of every machine's feasible sizes.

    Returns
    -------
    dict
        ``{nodes: {machine name: best PartitionGeometry or None}}``, ``None``
        where the machine has no cuboid of that size.
    """
    ms = [load_machine(x) for x in machines]
    if not ms:
        raise PartitionError("machines = [] is invalid; allowed: one or more machine names")
    if sizes is None:
        sizes = sorted(set().union(*(feasible_sizes(m) for m in ms)))
    out: dict[int, dict[str, PartitionGeometry | None]] = {}
    for n in sizes:
        if not _is_int(n) or int(n) < 1:
            raise PartitionError(f"partition size = {n!r} is invalid; allowed: a positive number of nodes")
        row: dict[str, PartitionGeometry | None] = {}
        for m in ms:
            try:
                row[m.name] = partition_geometries(m, n)[0]
            except PartitionError:  # size not available on this machine
                row[m.name] = None
        out[int(n)] = row
    return out


@dataclass(frozen=True)
class SlabResult:
    """Bisection of one router prism of a torus machine (Fiedler's slabs)."""

    shape: tuple[int, ...]
    bisection: Bisection
    wrap: tuple[bool, ...]

    @property
    def label(self) -> str:
        return _fmt(self.shape)


def slab_bisections(machine: Machine | str,
                    shapes: Sequence[Sequence[int]] | None = None) -> list[SlabResult]:
    """Bisection (and per node) of router prisms of a torus machine in embedded mode.

    Parameters
    ----------
    machine
        A torus machine (e.g. ``"BlueWaters"``).
    shapes
        Router prisms in the machine's dimension order; default: the
        machine's ``slabs`` list (Blue Waters: 24x24x24, 24x6x24, 6x24x24,
        23x6x24, 24x4x24, 12x6x12).
    """
    m = load_machine(machine)
    if m.kind != "torus":
        raise PartitionError(f"machine {m.name!r}: kind = 'bgq' is invalid for the slab analysis; allowed: "
                             "a torus machine (kind: torus), e.g. BlueWaters")
    if shapes is None:
        if not m.slabs:
            raise PartitionError(f"machine {m.name!r}: slabs = None; give router shapes to compare "
                                 f"(e.g. {_fmt(m.dims)})")
        shapes = m.slabs
    out = []
    for s in shapes:
        shp = check_partition(m, s)
        out.append(SlabResult(shape=shp, bisection=_bisection_of(m, shp),
                              wrap=effective_wrap(shp, m.dims, m.wrap)))
    return out


# --------------------------------------------------------------------------------------
# datasets, files and plots
# --------------------------------------------------------------------------------------

_NORMALISATION = ("bisection_links counts undirected links crossing the minimum bisection; it is the "
                  "'normalised bisection bandwidth' of Oltchik & Schwartz (each link one unit of capacity). "
                  "Bandwidths are bytes/s per direction. Predicted speedup of a contention-bound job = ratio "
                  "of bisection bandwidth per node (= ratio of bisections at equal size).")


def _machine_attrs(m: Machine) -> dict[str, Any]:
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

    m = load_machine(machine)
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
    return ds


def comparison_dataset(machines: Sequence[Machine | str],
                       table: dict[int, dict[str, PartitionGeometry | None]]) -> xr.Dataset:
    """Dataset of :func:`compare_machines`: dims ``size`` (nodes) x ``machine``.

    Variables: ``best_geometry`` ("" where infeasible), ``best_links``,
    ``best_bandwidth``, ``best_per_node`` (NaN where infeasible) and
    ``speedup_vs_first`` (best of each machine over the first machine's best,
    per node; NaN where either is infeasible).
    """
    import xarray as xr

    ms = [load_machine(x) for x in machines]
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
    ds = xr.Dataset(
        {"best_geometry": (("size", "machine"), geo), "best_links": (("size", "machine"), links),
         "best_bandwidth": (("size", "machine"), bw), "best_per_node": (("size", "machine"), pn),
         "speedup_vs_first": (("size", "machine"), pn / pn[:, :1])},
        coords={"size": np.array(sizes, dtype=np.int64), "machine": np.array(names, dtype=object),
                "units": ("size", np.array([n // ms[0].nodes_per_unit for n in sizes], dtype=np.int64))},
        attrs={"machines": names, **_provenance()})
    ds["best_bandwidth"].attrs["units"] = "bytes/s per direction"
    ds["best_per_node"].attrs["units"] = "bytes/s per direction per node"
    ds["best_links"].attrs["units"] = "links"
    ds["size"].attrs["units"] = "nodes"
    return ds


def slabs_dataset(machine: Machine | str, results: Sequence[SlabResult]) -> xr.Dataset:
    """Dataset of :func:`slab_bisections`: dims ``slab`` x ``dim``."""
    import xarray as xr

    m = load_machine(machine)
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
    return ds


def _umask_mode() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def write_netcdf_atomic(ds: xr.Dataset, path: str | os.PathLike[str]) -> Path:
    """Write a dataset to netCDF (h5netcdf) atomically: temp file, then ``os.replace``."""
    from .results import atomic_to_netcdf

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    return atomic_to_netcdf(ds, path)


def _save_figure(fig: Any, path: str | os.PathLike[str]) -> Path:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    FigureCanvasAgg(fig)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".png", dir=path.parent)
    os.close(fd)
    try:
        fig.savefig(tmp, dpi=120, format="png")
        os.chmod(tmp, _umask_mode())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def plot_partitions(ds: xr.Dataset, path: str | os.PathLike[str]) -> Path:
    """Bar chart of best, worst and allowed bisection links per size (Oltchik Figs. 1, 2).

    Uses the Agg canvas directly (no global backend change).
    """
    from matplotlib.figure import Figure

    sizes = ds["size"].values
    x = np.arange(len(sizes))
    fig = Figure(figsize=(max(6.0, 0.55 * len(sizes) + 2), 4.2))
    ax = fig.add_subplot(1, 1, 1)
    series = [("worst", ds["worst_links"].values, "tab:red")]
    if int(ds.attrs.get("has_allowed_list", 0)):
        series = [("allowed (current)", ds["allowed_links"].values, "tab:gray")]
    series.append(("best possible", ds["best_links"].values, "tab:blue"))
    w = 0.8 / len(series)
    for i, (lab, y, c) in enumerate(series):
        ax.bar(x + (i - (len(series) - 1) / 2) * w, y, w, label=lab, color=c)
    ax.set_xticks(x)
    ax.set_xticklabels([str(s) for s in sizes], rotation=60, fontsize=8)
    ax.set_xlabel("partition size P (nodes)")
    ax.set_ylabel("normalised bisection bandwidth (links)")
    ax.set_title(f"{ds.attrs.get('machine', '')}: internal bisection of partitions")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return _save_figure(fig, path)


def plot_comparison(ds: xr.Dataset, path: str | os.PathLike[str]) -> Path:
    """Best-case bisection links per size for several machines (Oltchik Fig. 7)."""
    from matplotlib.figure import Figure

    sizes = ds["size"].values
    x = np.arange(len(sizes))
    fig = Figure(figsize=(max(6.0, 0.5 * len(sizes) + 2), 4.2))
    ax = fig.add_subplot(1, 1, 1)
    names = [str(n) for n in ds["machine"].values]
    w = 0.8 / max(1, len(names))
    for j, name in enumerate(names):
        ax.bar(x + (j - (len(names) - 1) / 2) * w, ds["best_links"].values[:, j], w, label=name)
    ax.set_xticks(x)
    ax.set_xticklabels([str(s) for s in sizes], rotation=60, fontsize=8)
    ax.set_xlabel("partition size P (nodes)")
    ax.set_ylabel("normalised bisection bandwidth (links)")
    ax.set_title("best-case partitions: " + " vs ".join(names))
    ax.legend(fontsize=8)
    fig.tight_layout()
    return _save_figure(fig, path)


def plot_slabs(ds: xr.Dataset, path: str | os.PathLike[str]) -> Path:
    """Bisection bandwidth per node of each slab (Fiedler's slab slides)."""
    from matplotlib.figure import Figure

    labels = [str(s) for s in ds["slab"].values]
    fig = Figure(figsize=(max(5.0, 0.9 * len(labels) + 2), 4.0))
    ax = fig.add_subplot(1, 1, 1)
    ax.bar(np.arange(len(labels)), ds["bisection_per_node"].values / 1e6, color="tab:blue")
    ax.set_xticks(np.arange(len(labels)))
    ax.set_xticklabels(labels)
    ax.set_xlabel("router prism (X x Y x Z)")
    ax.set_ylabel("bisection per node (MB/s per direction)")
    ax.set_title(f"{ds.attrs.get('machine', '')}: bisection bandwidth per node")
    fig.tight_layout()
    return _save_figure(fig, path)
