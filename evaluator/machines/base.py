"""The machine contract: what a machine of the catalogue is and what generic code may ask of it.

A machine is one YAML file of ``conf/machine/`` (or of ``$EVALUATOR_MACHINE_PATH``) whose ``kind`` picks a
member of the family: its schema (a typed dataclass, checked by :func:`evaluator._registry.from_mapping`) and
its builder (the semantic checks, and the :class:`Machine` object). Members: ``bgq`` (a Blue Gene/Q system in
midplanes, :mod:`._bgq`), ``torus`` (a torus of routers, e.g. Cray Gemini, :mod:`._torus`) and ``topology``
(any registered topology kind's config, e.g. a Dragonfly or, later, a fat tree, :mod:`._topology`).

Generic code never asks which member it holds; it calls the contract:

* :class:`Machine` (every member): ``name``, ``key``, ``label`` (the describe line), :meth:`Machine.network`
  (the topology config of the whole machine or one partition, built by the topology registry,
  :func:`evaluator.topology.machine_topology`), :meth:`Machine.node_layout` (what each node is: classes,
  service and down nodes, features) and :meth:`Machine.torus` (the machine as a torus allocated in cuboid
  partitions, for the tools that need that geometry: tiles, the partition analysis; a machine without one
  refuses, naming the machine kinds that have it).
* :class:`TorusMachine` (``bgq`` and ``torus``): the torus geometry (``dims``, ``wrap``, ``link_bandwidth``,
  ``nodes_per_router``, ``n_nodes``), the allocation unit (midplane or router: ``unit``, ``unit_dims``,
  ``nodes_per_unit``), partitions (:meth:`TorusMachine.check_partition`, :meth:`TorusMachine.canonical`,
  :meth:`TorusMachine.partition_torus`) and how a partition runs (``default_mode``: ``own`` torus or
  ``embedded`` in the host torus).

Units: bandwidths are bytes/s per direction of one link (injection: of one node). Every error is a
:class:`~evaluator.errors.MachineError` (or :class:`~evaluator.errors.PartitionError`) naming the machine, its
file, the field, the value and what is allowed.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from .._registry import Kind, from_mapping
from .._types import Int, RouterInts
from ..errors import ConfigError, MachineError, PartitionError, int_list, invalid, is_int, nearest

__all__ = ["Machine", "TorusMachine", "MachineKind", "MachineNetwork", "NodeLayout", "PartitionTorus", "Region",
           "SERVICE", "DOWN", "NON_COMPUTE_CLASSES", "machine_config", "machine_error", "MachineUnitWarning",
           "warn_magnitudes", "BANDWIDTH_FLOOR", "LATENCY_CEILING", "member_kinds", "key_of", "shape_text"]

SERVICE, DOWN = "service", "down"
NON_COMPUTE_CLASSES = (SERVICE, DOWN)
"""Router classes whose nodes are never allocated."""


@dataclasses.dataclass(frozen=True)
class MachineKind(Kind):
    """A machine member: ``build(cfg, source) -> Machine`` from its schema instance and the file it came from."""


def key_of(name: str) -> str:
    """Lookup key of a machine name: lower case, letters and digits only."""
    return re.sub(r"[^a-z0-9]", "", str(name).lower())


def shape_text(shape: Sequence[int]) -> str:
    """A shape as text, e.g. ``"4x4x3x2"`` (the one formatter of machine and partition shapes)."""
    return "x".join(str(int(s)) for s in shape)


def _where(name: Any, source: str) -> str:
    return f"machine {str(name)!r}" + ("" if source in ("", "<dict>") else f" ({source})")


def machine_error(name: Any, source: str = "<dict>") -> Callable[..., MachineError]:
    """``error(field, value, allowed, hint=None)``: a :class:`MachineError` ``"machine '<name>' (<file>): <field>
    = <value!r> is invalid; allowed: <allowed>[. hint]"`` (the factory the schema checks and builders use)."""
    where = _where(name, source)

    def error(field: str, value: Any, allowed: str, hint: str | None = None) -> MachineError:
        return invalid(MachineError, field, value, allowed, context=where, hint=hint or "")

    return error


# --------------------------------------------------------------------------------------
# what a member's builder returns, and what generic code asks of it
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Region:
    """A named prism of routers: ``offset`` (first router) and ``shape`` (extent), wrapping around the torus."""

    name: str
    offset: tuple[int, ...]
    shape: tuple[int, ...]
    service_fraction: float | None = None  # node classes: own fraction of service blades (None: the machine's)

    def routers(self, dims: Sequence[int]) -> RouterInts:
        """Router ids of the region (row-major in the region's own coordinates), shape [router]."""
        c = np.stack(np.unravel_index(np.arange(math.prod(self.shape)), self.shape), axis=1)
        return np.ravel_multi_index(tuple(((c + np.array(self.offset)) % np.array(dims)).T), tuple(dims))


@dataclass(frozen=True)
class MachineNetwork:
    """The network of a machine, or of one of its partitions, as a topology config.

    ``config``: a topology config ``{"kind": <topology kind>, <its keys>}`` (what
    ``conf/topology/<kind>.yaml`` holds), built by the topology registry; ``name``: the built topology's name
    (None: the machine's name and the topology's own); ``whole``: whether it is the whole machine (its
    :meth:`Machine.node_layout` applies).
    """

    config: dict[str, Any]
    name: str | None
    whole: bool


@dataclass(frozen=True)
class NodeLayout:
    """What every node of the whole machine is: ``names[node_class[node]]`` (``node_class`` int8, shape
    [node]; ``names`` ends with ``"service"`` and ``"down"``), and the machine's predefined node sets."""

    names: tuple[str, ...]
    node_class: Int[np.ndarray, "node"]
    features: tuple[Region, ...]


@dataclass(frozen=True)
class PartitionTorus:
    """The torus one partition is (what its bisection is computed on).

    ``dims``, ``wrap``, ``link_bandwidth`` (bytes/s per direction): the partition's routers; ``host``: the
    torus it is embedded in (None: it is its own torus); ``nodes_per_router``.
    """

    dims: tuple[int, ...]
    wrap: bool | tuple[bool, ...]
    link_bandwidth: float | tuple[float, ...]
    host: tuple[int, ...] | None
    nodes_per_router: int


def member_kinds(cls: type, where: Callable[[type], bool] | None = None) -> list[str]:
    """The kinds of the member classes under ``cls`` (``cls`` and its subclasses that name a ``kind``, those
    for which ``where(member class)`` holds), in the order they were defined: what a refusal lists as the
    machine kinds a tool accepts."""
    out: list[str] = []
    todo = [cls]
    while todo:
        c = todo.pop(0)
        k = c.__dict__.get("kind")
        if isinstance(k, str) and k and k not in out and (where is None or where(c)):
            out.append(k)
        todo.extend(c.__subclasses__())
    return out


@dataclass(frozen=True, kw_only=True)
class Machine:
    """A machine of the catalogue (the contract every member implements).

    Attributes
    ----------
    name
        Display name, e.g. ``"Mira"`` (looked up case- and punctuation-insensitively, :attr:`key`).
    description
        Free text: where the numbers come from.
    source
        Path of the YAML file, or ``"<dict>"``.
    latency
        The network's latency block (:class:`evaluator.latency.LatencyConfig` keys, SI units; its sources cited
        in the file), or None: no latency model.
    kind
        The member's name in the registry (``"bgq"``, ``"torus"``, ``"topology"``), a class attribute.
    """

    name: str
    description: str = ""
    source: str = "<dict>"
    latency: dict[str, Any] | None = field(default=None, hash=False, compare=False)
    kind: ClassVar[str] = ""

    @property
    def key(self) -> str:
        """Case- and punctuation-insensitive lookup key of :attr:`name`."""
        return key_of(self.name)

    @property
    def label(self) -> str:  # pragma: no cover - every member overrides it
        """One-line description, e.g. ``"Mira (bgq, 4x4x3x2 midplanes, 49152 nodes)"``."""
        raise NotImplementedError

    def network(self, partition: Sequence[int] | None = None, mode: str = "auto") -> MachineNetwork:
        """The topology config of the whole machine (``partition`` None) or of one partition.

        ``mode``: ``own`` (the partition is a torus of its own), ``embedded`` (the whole host; the placement
        picks the job's routers) or ``auto`` (the member's way). Raises :class:`PartitionError` or
        :class:`MachineError` for a partition the machine does not have.
        """
        raise NotImplementedError  # pragma: no cover

    def modes(self, partition: Sequence[int] | None = None) -> tuple[tuple[str, ...], str]:
        """``(modes, why)``: the values of :meth:`network`'s ``mode`` that say something for ``partition``
        (``"auto"`` always among them) and why any other changes nothing (for its refusal). A machine without
        partitions is one network, whole: ``embedded`` (a job's nodes are chosen by the placement)."""
        return ("auto", "embedded"), (f"machine {self.label} has no partitions, so none is a torus "
                                      f"of its own: the whole network is evaluated and the placement picks the "
                                      f"job's nodes (mode own is for torus machines' partitions)")

    def node_layout(self) -> NodeLayout | None:
        """What each node of the whole machine is, or None when every node is a plain compute node."""
        return None

    def has_node_layout(self) -> bool:
        """Whether :meth:`node_layout` is not None, known without making it (what ``topology.layout`` acts on)."""
        return False

    def torus(self, tool: str) -> TorusMachine:
        """This machine as a torus allocated in cuboid partitions, for ``tool`` (e.g. ``"tiles"``), which needs
        that geometry; a machine without one refuses (:class:`MachineError` naming the machine, its kind and
        the machine kinds ``tool`` accepts)."""
        kinds = member_kinds(TorusMachine)
        allowed = f"a torus machine, kind {' | '.join(kinds)}"
        raise MachineError(
            f"{_where(self.name, self.source)}: {tool} needs {allowed}; this machine is kind {self.kind!r} "
            f"({self.label}), which has no torus geometry or cuboid partitions", "kind", self.kind, allowed)


@dataclass(frozen=True, kw_only=True)
class TorusMachine(Machine):
    """A machine whose network is a torus of routers, allocated in cuboid partitions (``bgq`` and ``torus``).

    Attributes
    ----------
    dims : tuple of int, shape [dim]
        Router grid of the whole machine (Blue Gene/Q: the node torus ``4A x 4B x 4C x 4D x 2``).
    wrap : tuple of bool, shape [dim]
        Wrap-around links of the whole machine in each dimension.
    link_bandwidth : tuple of float, shape [dim]
        Bandwidth of one link of each dimension, bytes/s per direction.
    nodes_per_router
        Compute nodes attached to each router (1 on BG/Q, 2 on Gemini).
    allowed_partitions : tuple of tuple of int, or None
        Shapes the scheduler allows, in allocation units (:attr:`unit`), compared up to rotation; ``None``
        means any cuboid that fits is allowed.
    injection_bandwidth
        Node injection (and ejection) bandwidth, bytes/s per direction, or ``None`` when not modelled.
    routing_order
        ``"longest_first"`` (BG/Q: longest remaining dimension first) or ``"as_given"`` (dimension-order
        routing in the given order, Gemini XYZ).
    slabs : tuple of tuple of int, or None
        Router shapes compared by the slab analysis (machines whose partitions are embedded).

    Class attributes of each member: ``unit`` (``"midplane"``, ``"router"``), ``unit_field`` (the YAML key
    holding :attr:`unit_dims`), ``default_mode`` (``"own"``: a partition is a torus of its own;
    ``"embedded"``: a prism routed over the host torus), ``enumerates_sizes`` (whether an analysis without
    sizes lists every feasible size: few for midplanes, thousands for routers), ``partition_noun`` and
    ``partition_text`` (how the CLI names a partition's torus and how it runs).
    """

    dims: tuple[int, ...]
    wrap: tuple[bool, ...]
    link_bandwidth: tuple[float, ...]
    nodes_per_router: int = 1
    allowed_partitions: tuple[tuple[int, ...], ...] | None = None
    injection_bandwidth: float | None = None
    routing_order: str = "longest_first"
    slabs: tuple[tuple[int, ...], ...] | None = None

    unit: ClassVar[str] = ""
    unit_field: ClassVar[str] = ""
    default_mode: ClassVar[str] = ""
    enumerates_sizes: ClassVar[bool] = False
    partition_noun: ClassVar[str] = ""
    partition_text: ClassVar[str] = ""

    def torus(self, tool: str) -> TorusMachine:
        """This machine (it is a torus allocated in cuboid partitions)."""
        return self

    @property
    def n_routers(self) -> int:
        """Routers of the whole machine."""
        return math.prod(self.dims)

    @property
    def n_nodes(self) -> int:
        """Compute nodes of the whole machine."""
        return self.n_routers * self.nodes_per_router

    @property
    def units(self) -> str:
        """The allocation unit, plural (``"midplanes"``, ``"routers"``)."""
        return self.unit + "s"

    @property
    def unit_dims(self) -> tuple[int, ...]:  # pragma: no cover - every member overrides it
        """The machine counted in allocation units (midplanes or routers)."""
        raise NotImplementedError

    @property
    def nodes_per_unit(self) -> int:  # pragma: no cover - every member overrides it
        """Compute nodes in one allocation unit (512 per midplane on BG/Q)."""
        raise NotImplementedError

    def canonical(self, shape: Sequence[int]) -> tuple[int, ...]:  # pragma: no cover - every member overrides it
        """Rotation-free form of a partition shape (two shapes that are rotations of each other share it)."""
        raise NotImplementedError

    def partition_torus(self, shape: Sequence[int]) -> PartitionTorus:  # pragma: no cover
        """The torus a (checked) partition shape is."""
        raise NotImplementedError

    def _network(self, shape: tuple[int, ...] | None) -> MachineNetwork:  # pragma: no cover
        """The network of the whole machine (None) or of a partition that is its own torus."""
        raise NotImplementedError

    def network(self, partition: Sequence[int] | None = None, mode: str = "auto") -> MachineNetwork:
        """As :meth:`Machine.network`; a partition of its own outside the machine's ``allowed_partitions`` (a
        what-if: the scheduler would not grant it) is evaluated, its name saying so."""
        shape = None if partition is None else self.check_partition(partition)
        mode = self.default_mode if mode == "auto" else mode
        net = self._network(shape if mode == "own" else None)
        allowed = self.allowed_set()
        if mode == "own" and shape is not None and allowed is not None and self.canonical(shape) not in allowed:
            net = dataclasses.replace(net, name=f"{net.name}, not in {self.name}'s allowed partitions")
        return net

    def modes(self, partition: Sequence[int] | None = None) -> tuple[tuple[str, ...], str]:
        """As :meth:`Machine.modes`: every mode for a partition; without one (the whole machine) ``auto`` and the
        machine's own way (:attr:`default_mode`), the only network there is."""
        if partition is not None:
            return ("auto", "own", "embedded"), ""
        return ("auto", self.default_mode), (f"topology.partition is null: the whole of {self.name} is evaluated "
                                             f"whatever the mode (own and embedded differ for a partition only: "
                                             f"topology.partition=[...])")

    def allowed_set(self) -> set[tuple[int, ...]] | None:
        """Rotation-free forms of the allowed partitions, or None (any cuboid that fits)."""
        if self.allowed_partitions is None:
            return None
        return {self.canonical(s) for s in self.allowed_partitions}

    def check_partition(self, shape: Sequence[int], *, require_allowed: bool = False) -> tuple[int, ...]:
        """Validate a partition shape and return it as a tuple.

        ``shape``: allocation units per dimension (midplanes ``(A, B, C, D)`` for Blue Gene/Q, routers for a
        torus machine) in the machine's dimension order (not sorted for you). ``require_allowed``: also
        require the shape (up to rotation) to be in :attr:`allowed_partitions`, when there is one.

        Raises :class:`PartitionError` for a wrong length, sizes < 1, a dimension larger than the machine's
        (naming a rotation that fits) or a shape the allowed list forbids.
        """
        box = self.unit_dims
        unit = self.units
        if not isinstance(shape, (list, tuple, np.ndarray)) or len(shape) != len(box):
            allowed = f"{len(box)} integers >= 1 ({unit} per dimension, machine {shape_text(box)})"
            raise PartitionError(f"machine {self.name!r}: partition {shape!r} is invalid; allowed: {allowed}",
                                 "partition", shape, allowed)
        if not all(is_int(s) and int(s) >= 1 for s in shape):
            allowed = f"{len(box)} integers >= 1 ({unit} per dimension)"
            raise PartitionError(f"machine {self.name!r}: partition {list(shape)!r} is invalid; allowed: {allowed}",
                                 "partition", list(shape), allowed)
        shp = tuple(int(s) for s in shape)
        for k, (s, b) in enumerate(zip(shp, box)):
            if s > b:
                rot = fitting_rotation(shp, box)
                hint = f"; the rotation {shape_text(rot)} fits" if rot is not None else ""
                raise PartitionError(f"machine {self.name!r}: partition {shape_text(shp)} does not fit in {unit} "
                                     f"{shape_text(box)} (dimension {k}: {s} > {b}){hint}",
                                     "partition", list(shp), f"a shape that fits in {unit} {shape_text(box)}")
        if require_allowed:
            allowed_set = self.allowed_set()
            if allowed_set is not None and self.canonical(shp) not in allowed_set:
                n_units = math.prod(shp)
                same = sorted({shape_text(a) for a in allowed_set if math.prod(a) == n_units})
                every = ", ".join(sorted((shape_text(a) for a in allowed_set),
                                         key=lambda s: (math.prod(map(int, s.split('x'))), s)))
                allowed = (f"geometries of {n_units} {unit}: {', '.join(same)}" if same else
                           f"geometries (none of {n_units} {unit}): {every}")
                raise PartitionError(
                    f"machine {self.name!r}: partition {shape_text(shp)} ({n_units} {unit}, "
                    f"{n_units * self.nodes_per_unit} nodes) is not in the scheduler's allowed list; allowed "
                    + allowed, "partition", list(shp), allowed)
        return shp


# --------------------------------------------------------------------------------------
# shapes
# --------------------------------------------------------------------------------------


def fits_some_rotation(shape: Sequence[int], box: Sequence[int]) -> bool:
    """Whether some permutation of ``shape`` fits in ``box`` (sorted matching)."""
    return len(shape) == len(box) and all(
        s <= b for s, b in zip(sorted(shape, reverse=True), sorted(box, reverse=True))
    )


def fitting_rotation(shape: tuple[int, ...], box: tuple[int, ...]) -> tuple[int, ...] | None:
    """The lexicographically largest permutation of ``shape`` that fits in ``box``, or None.

    Built one position at a time (the largest side that fits there and
    leaves a fit for the rest, checked by sorted matching): ``O(n^2 log n)``
    instead of trying all ``n!`` permutations.
    """
    if not fits_some_rotation(shape, box):
        return None
    left = sorted(shape, reverse=True)
    out: list[int] = []
    for k in range(len(box)):
        rest_box = box[k + 1:]
        for i, v in enumerate(left):  # descending: the first feasible choice is the largest
            if v <= box[k] and (i == 0 or v != left[i - 1]):
                rest = left[:i] + left[i + 1:]
                if fits_some_rotation(rest, rest_box):
                    out.append(v)
                    left = rest
                    break
    return tuple(out)


# --------------------------------------------------------------------------------------
# semantic checks the members' builders share (the schema has checked the types)
# --------------------------------------------------------------------------------------


def positive(error, field: str, value: float) -> float:
    """A finite number > 0 (bytes/s per direction)."""
    if not (math.isfinite(value) and value > 0):
        raise error(field, value, "a finite number > 0 (bytes/s per direction)")
    return float(value)


def int_tuple(error, field: str, value: Any, length: int | None = None) -> tuple[int, ...]:
    """A list of positive integers (of ``length`` entries if given) as a tuple."""
    what = "a list of positive integers" if length is None else f"a list of {length} positive integers"
    return int_list(field, value, length, error=lambda f, v, a: error(f, v, a), allowed=what)


def shapes(error, field: str, raw: Any, box: tuple[int, ...], units: str,
           rotate: bool = True) -> tuple[tuple[int, ...], ...] | None:
    """A list of shapes of ``len(box)`` integers, each fitting in ``box`` in some rotation (None: none);
    ``rotate`` False: in the machine's dimension order (a torus machine's partitions are not rotated for you)."""
    if raw is None:
        return None
    if not raw:
        raise error(field, raw, f"null or a non-empty list of shapes of {len(box)} integers")
    out = []
    for i, s in enumerate(raw):
        shp = int_tuple(error, f"{field}[{i}]", s, len(box))
        if rotate and not fits_some_rotation(shp, box):
            raise error(f"{field}[{i}]", list(s), f"a shape that fits in {shape_text(box)} {units} (in some "
                                                  "rotation)")
        if not rotate and not all(v <= b for v, b in zip(shp, box)):
            rot = fitting_rotation(shp, box)
            raise error(f"{field}[{i}]", list(s), f"a shape that fits in {shape_text(box)} {units} in the "
                        "machine's dimension order", f"The rotation {shape_text(rot)} fits" if rot else None)
        out.append(shp)
    return tuple(out)


# --------------------------------------------------------------------------------------
# a mapping (one YAML file) -> the schema instance of its kind
# --------------------------------------------------------------------------------------


def _required(schema: type) -> list[str]:
    return [f.name for f in dataclasses.fields(schema)
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]


def machine_config(data: Any, source: str, kinds: Mapping[str, MachineKind]):
    """The schema instance of one machine description (a YAML file's mapping), checked key by key.

    ``kind`` picks the member's schema in ``kinds`` (the registry). A key of another member's schema is
    accepted only as ``null`` (files written for the flat catalogue list every key, ``null`` where unused); a
    key of no member is refused with the kind's keys; a required key must be given; every value is then
    checked against the schema's typed fields (:func:`evaluator._registry.from_mapping`). Every error is a
    :class:`MachineError` naming the machine, the file, the field, the value and what is allowed.
    """
    if not isinstance(data, Mapping):
        raise MachineError(f"{source}: a machine description must be a mapping of name, kind and the kind's keys "
                           f"(kind: {' | '.join(kinds)}); got {type(data).__name__}")
    name = data.get("name")
    label = str(name) if name is not None else source
    where = _where(label, source)
    error = machine_error(label, source)
    kind = data.get("kind")
    if kind is None:
        raise MachineError(f"{where}: required key 'kind' is missing; allowed kinds: {' | '.join(kinds)}",
                           "kind", None, " | ".join(kinds))
    if not isinstance(kind, str) or kind not in kinds:
        raise error("kind", kind, " | ".join(kinds), nearest(kind, kinds))
    schema = kinds[kind].schema
    own = [f.name for f in dataclasses.fields(schema)]
    owners: dict[str, list[str]] = {}
    for other, k in kinds.items():
        for f in dataclasses.fields(k.schema):
            owners.setdefault(f.name, []).append(other)
    unknown = sorted(str(k) for k in data if k not in owners)
    if unknown:
        hint = nearest(unknown[0], own)
        raise MachineError(f"{where}: unknown key(s) {unknown}; allowed keys of kind {kind!r}: {', '.join(own)}"
                           + (f". {hint}" if hint else ""), unknown[0], data[unknown[0]], ", ".join(own))
    for k, v in data.items():
        if k not in own and v is not None:
            raise error(k, v, f"null for kind {kind!r}",
                        f"'{k}' is a key of machine kind {' | '.join(owners[k])}; drop it for kind {kind!r}")
    body = {k: v for k, v in data.items() if k in own}
    required = _required(schema)
    for k in required:
        if body.get(k) is None:
            raise MachineError(f"{where}: required key {k!r} is missing; required keys of kind {kind!r}: "
                               f"{', '.join(required)}", k, None, f"a value for {k!r}")
    if not isinstance(name, str) or not key_of(name):
        raise error("name", name, "a non-empty string with at least one letter or digit")
    cfg = from_mapping(schema, body, "", error=error, type_error=error)
    _check_latency(error, getattr(cfg, "latency", None))
    return cfg


BANDWIDTH_FLOOR = 1e6
"""Bytes/s below which a machine file's bandwidth is most likely written in GB/s (9.375 for 9.375e9): warned of."""
LATENCY_CEILING = 1e-3
"""Seconds above which a machine file's latency figure is most likely written in ns or us (40 for 4e-8): warned
of (the slowest router or MPI overhead of any catalogue machine is about a microsecond)."""


def warn_magnitudes(where: str, body: Mapping[str, Any], path: str = "") -> None:
    """Warn (a :class:`MachineUnitWarning`) of a bandwidth below :data:`BANDWIDTH_FLOOR` or a latency figure above
    :data:`LATENCY_CEILING`: a machine file describes a real machine in SI base units (bytes/s, s), and a figure in
    GB/s or ns would be read a billion times off in silence. The value is used as given: a what-if may mean it.
    Called for the machine a command loads (:func:`evaluator.machines.load_machine`), not for every file a search
    of the catalogue reads."""
    import warnings

    for k, v in body.items():
        key = f"{path}{k}"
        if isinstance(v, Mapping):
            warn_magnitudes(where, v, key + ".")
            continue
        values = v if isinstance(v, (list, tuple)) else [v]
        nums = [x for x in values if isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)]
        if "bandwidth" in str(k) and any(0 < x < BANDWIDTH_FLOOR for x in nums):
            warnings.warn(f"{where}: {key} = {v} is below {BANDWIDTH_FLOOR:.0e} bytes/s per direction: machine files "
                          f"give bytes/s (9.375 GB/s is 9.375e+9); the value is used as given", MachineUnitWarning,
                          stacklevel=2)
        elif key.startswith("latency.") and not key.endswith(("eager_threshold", "rendezvous_round_trips")) \
                and any(x > LATENCY_CEILING for x in nums):
            warnings.warn(f"{where}: {key} = {v} is above {LATENCY_CEILING:.0e} s: machine files give seconds "
                          f"(100 ns is 1.0e-7); the value is used as given", MachineUnitWarning, stacklevel=2)


class MachineUnitWarning(UserWarning):
    """A machine file's figure far outside what real machines have, most likely in another unit (GB/s, ns)."""


def _check_latency(error, block: Mapping[str, Any] | None) -> None:
    """The machine's ``latency`` block checked key by key when the file is read (a misspelt key or a wrong
    value is refused then, not when a latency model is first asked for); its link classes are checked against
    the network when it is built."""
    if block is None:
        return
    from ..latency import latency_from_config

    if block.get("enabled") is not None:  # (the switch of a run, not data of the network: it would be ignored)
        raise error("latency.enabled", block["enabled"], "null (a machine file gives the network's figures; a run "
                    "switches the model on or off: topology.latency.enabled=true or false)")

    try:
        latency_from_config(None, base=block)
    except ConfigError as exc:
        field = "latency" + str(exc.field).removeprefix("topology.latency")
        raise error(field, exc.value, str(exc.allowed), exc.hint) from None
