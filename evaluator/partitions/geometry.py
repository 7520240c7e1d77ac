"""Partition geometries of a catalogue machine: feasible shapes, best and worst, machine comparison.

For a machine of the catalogue (:mod:`evaluator.machines`): which partition
shapes of N nodes can be allocated (:func:`partition_geometries`,
:func:`feasible_sizes`), the internal bisection of each
(:func:`partition_bisection`), the best, worst and best allowed shape of a
size and the predicted speedup of a contention-bound job
(:func:`analyse_size`, :func:`analyse_machine`, :func:`predicted_speedup`),
the best shape of each size on several machines (:func:`compare_machines`)
and Fiedler's slabs of a torus machine (:func:`slab_bisections`).
Bandwidths are bytes/s per direction; the counting conventions are those of
:mod:`evaluator.partitions.bisection`. Everything here asks the machine
(:class:`~evaluator.machines.TorusMachine`: its allocation unit, canonical
shapes, the torus a partition is); a machine without torus partitions (kind
``topology``) is refused by :meth:`~evaluator.machines.Machine.torus`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import PartitionError, invalid, is_int
from ..machines import Machine, TorusMachine, load_machine
from ..machines.base import member_kinds, shape_text as _shape
from .bisection import Bisection, effective_wrap, torus_bisection

__all__ = [
    "MAX_PARTITION_SHAPES",
    "count_partition_shapes",
    "PartitionGeometry",
    "SizeAnalysis",
    "SlabResult",
    "partition_bisection",
    "partition_geometries",
    "feasible_sizes",
    "analyse_size",
    "analyse_machine",
    "compare_machines",
    "slab_bisections",
    "predicted_speedup",
    "size_list",
]


MAX_PARTITION_SHAPES = 10**6
"""Most partition shapes one analysis enumerates (every size of a machine: the product of its sides in
allocation units; one size: the cuboids of that size that fit). About 30 s of work at the limit."""


_TOOL = "the partition analysis"


def _torus(machine: Machine | str) -> TorusMachine:
    """The machine as a torus allocated in cuboid partitions (MachineError for a machine without them)."""
    return load_machine(machine).torus(_TOOL)


def count_partition_shapes(machine: Machine | str) -> int:
    """Partition shapes (cuboids in the machine's orientation) of every size: the product of its sides."""
    return math.prod(_torus(machine).unit_dims)


def _check_enumeration(m: TorusMachine, what: str) -> None:
    """Refuse, before enumerating, an every-size analysis of more than :data:`MAX_PARTITION_SHAPES` shapes."""
    n = count_partition_shapes(m)
    if n > MAX_PARTITION_SHAPES:
        raise PartitionError(
            f"machine {m.name!r}: {m.unit_field} = {list(m.unit_dims)} has {n:,} partition shapes in "
            f"{m.units}; {what} would enumerate all of them (at most {MAX_PARTITION_SHAPES:,} are "
            f"enumerated). Pass the sizes to analyse (--size N ..., in nodes).",
            m.unit_field, list(m.unit_dims), f"at most {MAX_PARTITION_SHAPES:,} partition shapes")


def _bisection_of(m: TorusMachine, shape: tuple[int, ...]) -> Bisection:
    p = m.partition_torus(shape)
    return torus_bisection(p.dims, p.wrap, p.link_bandwidth, embedded_in=p.host, nodes_per_router=p.nodes_per_router)


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
    m = _torus(machine)
    return _bisection_of(m, m.check_partition(shape, require_allowed=require_allowed))


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
        return _shape(self.canonical)


def _check_size(m: TorusMachine, nodes: Any) -> int:
    unit = m.unit
    if not is_int(nodes) or int(nodes) < 1:
        raise invalid(PartitionError, "partition size", nodes,
                      f"a positive number of nodes, a multiple of {m.nodes_per_unit} (nodes per {unit}) up to "
                      f"{m.n_nodes}", context=f"machine {m.name!r}")
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


def size_list(sizes: Any) -> list[Any] | None:
    """``sizes`` (nodes) as a list, or None: a single number, a string or an empty list is refused (each size
    is checked by the analysis of that size)."""
    if sizes is None:
        return None
    if isinstance(sizes, (str, bytes, dict)) or not isinstance(sizes, Iterable):
        raise invalid(PartitionError, "sizes", sizes, "a list of one or more partition sizes (nodes), or None")
    out = list(sizes)
    if not out:
        raise invalid(PartitionError, "sizes", out, "a list of one or more partition sizes (nodes), or None "
                      "(every size)")
    return out


def _divisors(n: int) -> list[int]:
    small, large = [], []
    d = 1
    while d * d <= n:
        if n % d == 0:
            small.append(d)
            if d * d != n:
                large.append(n // d)
        d += 1
    return small + large[::-1]


def _shapes_of_units(box: tuple[int, ...], units: int, m: TorusMachine | None = None) -> list[tuple[int, ...]]:
    """Every shape (machine orientation) with ``prod == units`` fitting in ``box``, in lexicographic order.

    Only divisors of what is left are tried, and only while the remaining
    sides can still hold the rest; more than :data:`MAX_PARTITION_SHAPES`
    shapes are refused (:class:`PartitionError`, naming the machine ``m``).
    """
    out: list[tuple[int, ...]] = []
    room = [math.prod(box[k:]) for k in range(len(box) + 1)]  # units the sides k.. can hold
    divs = _divisors(units) if units <= 10**12 else None

    def rec(k: int, rest: int, acc: tuple[int, ...]) -> None:
        if k == len(box):
            if rest == 1:
                out.append(acc)
                if len(out) > MAX_PARTITION_SHAPES:
                    name = f"machine {m.name!r}: " if m is not None else ""
                    raise PartitionError(f"{name}partitions of {units:,} {m.units if m else 'units'} have more "
                                         f"than {MAX_PARTITION_SHAPES:,} shapes; pass a size with fewer shapes",
                                         "partition size", units, f"at most {MAX_PARTITION_SHAPES:,} shapes")
            return
        if rest > room[k]:
            return
        cand = divs if divs is not None else range(1, min(box[k], rest) + 1)
        for s in cand:
            if s > box[k] or s > rest:
                break
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
    m = _torus(machine)
    nodes = _check_size(m, nodes)
    units = nodes // m.nodes_per_unit
    allowed = m.allowed_set()
    seen: dict[tuple[int, ...], tuple[int, ...]] = {}
    for shp in _shapes_of_units(m.unit_dims, units, m):
        can = m.canonical(shp)
        if can not in seen or shp > seen[can]:
            seen[can] = shp  # representative: lexicographically largest fitting orientation
    if not seen:
        if count_partition_shapes(m) > MAX_PARTITION_SHAPES:
            where = (f"a number of {m.units} that is a product of one side per dimension, each at most "
                     f"the machine's ({_shape(m.unit_dims)})")
            raise PartitionError(
                f"machine {m.name!r}: no cuboid of {units} {m.units} ({nodes} nodes) fits in "
                f"{m.units} {_shape(m.unit_dims)}; allowed: {where}")
        sizes = feasible_sizes(m)
        raise PartitionError(
            f"machine {m.name!r}: no cuboid of {units} {m.units} ({nodes} nodes) fits in "
            f"{m.units} {_shape(m.unit_dims)}; feasible sizes (nodes): "
            f"{_short_list(sizes)}")
    geoms = []
    for can, shp in seen.items():
        b = _bisection_of(m, shp)
        geoms.append(PartitionGeometry(shape=shp, canonical=can, node_dims=m.partition_torus(shp).dims,
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

    Raises
    ------
    PartitionError
        The machine has more than :data:`MAX_PARTITION_SHAPES` partition
        shapes (the product of its sides), checked before enumerating.
    """
    m = _torus(machine)
    if allowed_only and m.allowed_partitions is not None:
        units = {math.prod(s) for s in m.allowed_partitions}
    else:
        _check_enumeration(m, "listing every partition size")
        units = {1}
        for b in m.unit_dims:  # distinct products, one side at a time
            units = {u * x for u in units for x in range(1, b + 1)}
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
    m = _torus(machine)
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
    7). Torus machines need explicit sizes (there are thousands). The analyses are in ascending size, each size
    once, whatever the order given.
    """
    m = _torus(machine)
    sizes = size_list(sizes)
    if sizes is None:
        if not m.enumerates_sizes:
            many = (f"up to {count_partition_shapes(m):,}" if count_partition_shapes(m) > MAX_PARTITION_SHAPES
                    else str(len(feasible_sizes(m))))
            raise PartitionError(f"machine {m.name!r} (kind {m.kind}) has {many} feasible sizes; "
                                 "give the sizes (nodes) to analyse explicitly")
        if m.allowed_partitions is None:
            _check_enumeration(m, "analysing every size")
        sizes = feasible_sizes(m, allowed_only=True)
    by_size = {}
    for n in sizes:
        a = analyse_size(m, n)
        by_size.setdefault(a.nodes, a)
    return [by_size[n] for n in sorted(by_size)]


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
        ``{nodes: {machine name: best PartitionGeometry or None}}`` in ascending size, ``None``
        where the machine has no cuboid of that size.
    """
    ms = [_torus(x) for x in machines]
    if not ms:
        raise invalid(PartitionError, "machines", [], "one or more machine names")
    if len({(m.unit, m.nodes_per_unit) for m in ms}) > 1:  # a row's size is counted in the first one's units
        units = "; ".join(f"{m.name}: {m.units} of {m.nodes_per_unit} nodes" for m in ms)
        raise invalid(PartitionError, "machines", [m.name for m in ms],
                      f"machines of one allocation unit ({units})",
                      hint="Their partitions are not counted alike; compare machines of one kind")
    sizes = size_list(sizes)
    if sizes is None:
        for m in ms:
            _check_enumeration(m, "comparing every size")
        sizes = sorted(set().union(*(feasible_sizes(m) for m in ms)))
    for n in sizes:
        if not is_int(n) or int(n) < 1:
            raise invalid(PartitionError, "partition size", n, "a positive number of nodes")
    out: dict[int, dict[str, PartitionGeometry | None]] = {}
    for n in sorted({int(x) for x in sizes}):  # ascending, each size once, whatever the order given
        row: dict[str, PartitionGeometry | None] = {}
        errors = []
        for m in ms:
            try:
                row[m.name] = partition_geometries(m, n)[0]
            except PartitionError as exc:  # size not available on this machine
                row[m.name] = None
                errors.append(exc)
        if len(errors) == len(ms):  # on none of them: a size to refuse (as one machine's analysis does), no row
            raise errors[0]
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
        return _shape(self.shape)


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
    m = _torus(machine)
    if m.default_mode != "embedded":  # a partition that is its own torus has no host to be a slab of
        embedded = member_kinds(TorusMachine, lambda cls: cls.default_mode == "embedded")
        raise PartitionError(f"machine {m.name!r}: kind = {m.kind!r} is invalid for the slab analysis; allowed: "
                             f"a torus machine whose jobs are prisms routed over the host torus (kind: "
                             f"{' | '.join(embedded)}), e.g. BlueWaters", "kind", m.kind,
                             f"kind {' | '.join(embedded)}")
    if shapes is None:
        if not m.slabs:
            raise PartitionError(f"machine {m.name!r} lists no slab shapes (its catalogue entry's slabs: is None); "
                                 f"add router shapes to compare to its YAML (slabs: [{_shape(m.dims)}, ...]), or "
                                 f"analyse partition sizes instead (--size N)")
        shapes = m.slabs
    out = []
    for s in shapes:
        shp = m.check_partition(s)
        out.append(SlabResult(shape=shp, bisection=_bisection_of(m, shp),
                              wrap=effective_wrap(shp, m.dims, m.wrap)))
    return out

