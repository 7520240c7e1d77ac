"""``kind: torus``: a torus (or mesh) of routers whose jobs run on sub-prisms routed over the host torus
(embedded mode, e.g. the Cray Gemini torus of Blue Waters).

Schema (:class:`TorusMachineConfig`)::

    name: BlueWaters
    kind: torus
    dims: [24, 24, 24]         # router grid
    link_bandwidth: 9.375e+9   # bytes/s per direction: one number or one per dimension
    wrap: null                 # bool or one bool per dimension (null: all true)
    nodes_per_router: 2
    injection_bandwidth: null  # bytes/s per direction per node; null: not modelled
    routing_order: as_given    # as_given | longest_first (dimension-order routing)
    allowed_partitions: null   # or a list of router shapes, in dimension order (equivalent dimensions rotate)
    slabs: null                # optional router shapes compared by ``--slabs``, in dimension order
    description: ""            # optional free text (source of the numbers)

and what each router's nodes are (every key optional; :meth:`RouterTorusMachine.router_classes` turns them
into one class per router, the same on every machine for the same file)::

    default_class: XE          # class of the compute nodes outside every region (default "compute")
    node_classes:              # compute node regions, no router in two: name, first router, extent (they wrap),
      - {name: XK, offset: [9, 18, 0], shape: [15, 6, 24], service_fraction: 0.0213}  # optional own fraction
    blade: [1, 2, 1]           # routers per blade along each dimension (drawn service nodes take whole blades)
    service_routers: null      # router coordinates of service nodes (never allocated), e.g. [[0, 0, 0], ...]
    service_fraction: 0.0282   # or: this fraction of blades drawn as service blades with layout_seed
    down_routers: null         # router coordinates of down nodes (never allocated)
    down_fraction: null        # or: this fraction of the remaining compute routers drawn down
    layout_seed: 0             # seed of the drawn service and down routers
    features:                  # predefined node sets (Moab "features"): name, first router, extent
      - {name: s1, offset: [0, 0, 0], shape: [24, 6, 24]}

Service and down routers still route traffic (their Gemini is part of the torus); only their nodes are never
given to a job.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, Optional, Union

import numpy as np

from .._types import ConfigOf, RouterInts
from .base import (DOWN, NON_COMPUTE_CLASSES, SERVICE, MachineKind, MachineNetwork, NodeLayout, PartitionTorus,
                   Region, TorusMachine, int_tuple, key_of, machine_error, positive, shape_text, shapes)

__all__ = ["RouterTorusMachine", "TorusMachineConfig", "NodeClassConfig", "FeatureConfig", "TORUS"]


@dataclass
class NodeClassConfig:
    """A region of compute nodes of their own class: name, first router, extent in routers, and optionally
    its own fraction of service blades."""

    name: str
    offset: list[int]
    shape: list[int]
    service_fraction: Optional[float] = None


@dataclass
class FeatureConfig:
    """A predefined node set (Moab "feature"): name, first router, extent in routers."""

    name: str
    offset: list[int]
    shape: list[int]


@dataclass
class TorusMachineConfig:
    """A torus of routers (see the module docstring)."""

    name: str
    dims: list[int] = field(metadata={"allowed": "a list of positive integers (routers per dimension)"})
    link_bandwidth: Union[float, list[float]] = field(metadata={
        "allowed": "a finite number > 0 or a list of one per dimension (bytes/s per direction)"})
    kind: str = "torus"
    wrap: Union[bool, list[bool], None] = field(default=None, metadata={
        "allowed": "null, true, false or a list of booleans (one per dimension)"})
    nodes_per_router: int = 1
    injection_bandwidth: Optional[float] = None
    routing_order: Literal["as_given", "longest_first"] = "as_given"
    allowed_partitions: Optional[list[list[int]]] = None
    slabs: Optional[list[list[int]]] = None
    description: str = ""
    latency: Optional[dict[str, Any]] = None  # the network's latency model (evaluator.latency; SI units)
    default_class: str = "compute"
    node_classes: Optional[list[NodeClassConfig]] = None
    blade: Optional[list[int]] = None
    service_routers: Optional[list[list[int]]] = None
    service_fraction: Optional[float] = None
    down_routers: Optional[list[list[int]]] = None
    down_fraction: Optional[float] = None
    layout_seed: int = 0
    features: Optional[list[FeatureConfig]] = None


@dataclass(frozen=True, kw_only=True)
class RouterTorusMachine(TorusMachine):
    """A torus (or mesh) of routers whose jobs run on sub-prisms routed over the host torus (Cray Gemini).

    Besides the torus (:class:`~evaluator.machines.base.TorusMachine`), what each router's nodes are:
    ``default_class``, ``node_classes`` (regions of their own class), ``blade``, ``service_routers`` /
    ``service_fraction``, ``down_routers`` / ``down_fraction``, ``layout_seed`` and ``features`` (named
    node sets); see :meth:`router_classes`.
    """

    default_class: str = "compute"
    node_classes: tuple[Region, ...] = ()
    blade: tuple[int, ...] | None = None
    service_routers: tuple[tuple[int, ...], ...] = ()
    service_fraction: float = 0.0
    down_routers: tuple[tuple[int, ...], ...] = ()
    down_fraction: float = 0.0
    layout_seed: int = 0
    features: tuple[Region, ...] = ()

    kind: ClassVar[str] = "torus"
    unit: ClassVar[str] = "router"
    unit_field: ClassVar[str] = "dims"
    default_mode: ClassVar[str] = "embedded"
    enumerates_sizes: ClassVar[bool] = False
    partition_noun: ClassVar[str] = "router prism"
    partition_text: ClassVar[str] = "prisms routed over the host torus"

    @property
    def unit_dims(self) -> tuple[int, ...]:
        return self.dims

    @property
    def nodes_per_unit(self) -> int:
        return self.nodes_per_router

    @property
    def label(self) -> str:
        return (f"{self.name} (torus, {shape_text(self.dims)} routers x {self.nodes_per_router} nodes, "
                f"{self.n_nodes} nodes)")

    def canonical(self, shape: Sequence[int]) -> tuple[int, ...]:
        """Sorted within equivalent dimensions (same host size, wrap and bandwidth: Gemini X and Z, not Y)."""
        groups: dict[tuple, list[int]] = {}
        for k in range(len(shape)):
            groups.setdefault((self.dims[k], self.wrap[k], self.link_bandwidth[k]), []).append(k)
        out = [int(s) for s in shape]
        for idx in groups.values():
            vals = sorted((int(shape[k]) for k in idx), reverse=True)
            for k, v in zip(idx, vals):
                out[k] = v
        return tuple(out)

    def partition_torus(self, shape: Sequence[int]) -> PartitionTorus:
        """A prism of routers embedded in the host torus (its wrap links only where it spans the host)."""
        return PartitionTorus(tuple(shape), self.wrap, self.link_bandwidth, self.dims, self.nodes_per_router)

    def _network(self, shape: tuple[int, ...] | None) -> MachineNetwork:
        dims = list(self.dims if shape is None else shape)
        config = {"kind": "torus", "dims": dims, "wrap": True if shape is not None else list(self.wrap),
                  "link_bandwidth": list(self.link_bandwidth), "nodes_per_router": self.nodes_per_router,
                  "injection_bandwidth": self.injection_bandwidth}
        return MachineNetwork(config, f"{self.name} {shape_text(dims)}", tuple(dims) == tuple(self.dims))

    @property
    def has_layout(self) -> bool:
        """Whether some router is not a plain compute router (service, down or a named class)."""
        return bool(self.node_classes or self.service_routers or self.service_fraction or self.down_routers
                    or self.down_fraction)

    def has_node_layout(self) -> bool:
        return bool(self.has_layout or self.features)

    def node_layout(self) -> NodeLayout | None:
        if not self.has_node_layout():
            return None
        names, code = self.router_classes()
        node_class = np.repeat(code, self.nodes_per_router)
        node_class.setflags(write=False)
        return NodeLayout(names, node_class, self.features)

    def router_classes(self) -> tuple[tuple[str, ...], RouterInts]:
        """``(names, code)``: the class of every router of the whole machine, ``names[code[router]]``.

        ``names`` is ``(default_class, *node class names, "service", "down")``; ``code`` has shape
        [router] (row-major router ids). Explicit service and down routers are taken as given; then
        ``round(service_fraction x blades)`` whole blades (``blade`` routers each) are drawn as service
        blades among the blades without an explicit service router, and ``round(down_fraction x compute
        routers)`` single routers among the remaining compute routers are drawn down, both with
        ``numpy.random.default_rng([layout_seed, stream])`` (the same layout on every machine).
        """
        return _router_classes(self)

    def feature(self, name: str) -> Region:
        """The predefined node set ``name`` (case-insensitive); :class:`MachineError` listing them otherwise."""
        for f in self.features:
            if key_of(f.name) == key_of(name):
                return f
        raise machine_error(self.name, self.source)(
            "features", name, "one of " + (", ".join(f.name for f in self.features)
                                           or "(none: this machine defines no features)"))


# --------------------------------------------------------------------------------------
# builder: the semantic checks (the schema has checked keys and types)
# --------------------------------------------------------------------------------------


def _build(cfg: ConfigOf[TorusMachineConfig], source: str) -> RouterTorusMachine:
    error = machine_error(cfg.name, source)
    dims = int_tuple(error, "dims", cfg.dims)
    w = cfg.wrap
    if w is None or isinstance(w, bool):
        wrap = (True if w is None else w,) * len(dims)
    elif len(w) == len(dims):
        wrap = tuple(w)
    else:
        raise error("wrap", w, f"null, true, false or a list of {len(dims)} booleans")
    lb = cfg.link_bandwidth
    if isinstance(lb, list):
        if len(lb) != len(dims):
            raise error("link_bandwidth", lb, f"one number or a list of {len(dims)} numbers "
                        "(bytes/s per direction, one per dimension)")
        bw = tuple(positive(error, f"link_bandwidth[{k}]", v) for k, v in enumerate(lb))
    else:
        bw = (positive(error, "link_bandwidth", lb),) * len(dims)
    if cfg.nodes_per_router < 1:
        raise error("nodes_per_router", cfg.nodes_per_router, "an integer >= 1")
    inj = None if cfg.injection_bandwidth is None else positive(error, "injection_bandwidth", cfg.injection_bandwidth)
    return RouterTorusMachine(
        name=cfg.name, description=cfg.description.strip(), source=source, latency=cfg.latency, dims=dims, wrap=wrap, link_bandwidth=bw,
        nodes_per_router=cfg.nodes_per_router, injection_bandwidth=inj, routing_order=cfg.routing_order,
        allowed_partitions=shapes(error, "allowed_partitions", cfg.allowed_partitions, dims, "routers", rotate=False),
        slabs=shapes(error, "slabs", cfg.slabs, dims, "routers", rotate=False), **_layout(error, cfg, dims))


def _coords(error, field: str, raw: list | None, dims: tuple[int, ...],
            one: bool = False) -> tuple[tuple[int, ...], ...]:
    """A list of router coordinates inside ``dims`` (``one``: ``raw`` holds the one coordinate ``field`` is)."""
    out = []
    for i, c in enumerate(raw or ()):
        if not (len(c) == len(dims) and all(0 <= v < d for v, d in zip(c, dims))):
            raise error(field if one else f"{field}[{i}]", c, f"{len(dims)} integer router coordinates in "
                                            f"[0, dims) = [0, {shape_text(dims)})")
        out.append(tuple(c))
    return tuple(out)


def _fraction(error, field: str, raw: float | None) -> float:
    if raw is None:
        return 0.0
    if not 0 <= raw < 1:
        raise error(field, raw, "null or a number in [0, 1)")
    return float(raw)


def _regions(error, field: str, raw: list | None, dims: tuple[int, ...]) -> tuple[Region, ...]:
    """``{name, offset, shape}`` prisms of routers that fit in ``dims``, each name new."""
    out: list[Region] = []
    for i, r in enumerate(raw or ()):
        if not r.name.strip():
            raise error(f"{field}[{i}].name", r.name, "a non-empty name")
        if key_of(r.name) in NON_COMPUTE_CLASSES or any(key_of(o.name) == key_of(r.name) for o in out):
            raise error(f"{field}[{i}].name", r.name, f"a new name, not {list(NON_COMPUTE_CLASSES)} nor one "
                                                      "used before")
        shp = int_tuple(error, f"{field}[{i}].shape", r.shape, len(dims))
        if not all(s <= d for s, d in zip(shp, dims)):
            raise error(f"{field}[{i}].shape", list(shp), f"a prism within the machine, {shape_text(dims)}")
        off = _coords(error, f"{field}[{i}].offset", [r.offset], dims, one=True)[0]
        frac = getattr(r, "service_fraction", None)
        out.append(Region(r.name.strip(), off, shp,
                          None if frac is None else _fraction(error, f"{field}[{i}].service_fraction", frac)))
    return tuple(out)


def _shared_router(a: Region, b: Region, dims: tuple[int, ...]) -> tuple[int, ...] | None:
    """A router both prisms hold (they wrap around the torus), or None: per dimension, one's first router
    lies in the other's extent."""
    out = []
    for oa, sa, ob, sb, d in zip(a.offset, a.shape, b.offset, b.shape, dims):
        if (ob - oa) % d < sa:
            out.append(ob)
        elif (oa - ob) % d < sb:
            out.append(oa)
        else:
            return None
    return tuple(out)


def _layout(error, cfg: ConfigOf[TorusMachineConfig], dims: tuple[int, ...]) -> dict[str, Any]:
    """The node-class keys, checked."""
    dc = cfg.default_class
    if not dc.strip() or key_of(dc) in NON_COMPUTE_CLASSES:
        raise error("default_class", dc, f"a class name other than {list(NON_COMPUTE_CLASSES)}")
    classes = _regions(error, "node_classes", cfg.node_classes, dims)
    for j, r in enumerate(classes):  # (a router's nodes are of one class: a later region would take them over)
        for i, o in enumerate(classes[:j]):
            both = _shared_router(o, r, dims)
            if both is not None:
                raise error(f"node_classes[{j}]", {"name": r.name, "offset": list(r.offset), "shape": list(r.shape)},
                            f"a region that shares no router with another node class; node_classes[{i}] "
                            f"({o.name!r}) holds router {list(both)} too")
    if any(key_of(r.name) == key_of(dc) for r in classes):
        raise error("node_classes", [r.name for r in classes], f"names other than default_class {dc!r}")
    blade = None if cfg.blade is None else int_tuple(error, "blade", cfg.blade, len(dims))
    if blade is not None and any(d % b for d, b in zip(dims, blade)):
        raise error("blade", list(blade), f"routers per blade dividing dims {shape_text(dims)}")
    if cfg.layout_seed < 0:
        raise error("layout_seed", cfg.layout_seed, "an integer >= 0")
    return dict(default_class=dc.strip(), node_classes=classes, blade=blade,
                service_routers=_coords(error, "service_routers", cfg.service_routers, dims),
                service_fraction=_fraction(error, "service_fraction", cfg.service_fraction),
                down_routers=_coords(error, "down_routers", cfg.down_routers, dims),
                down_fraction=_fraction(error, "down_fraction", cfg.down_fraction),
                layout_seed=cfg.layout_seed,
                features=_regions(error, "features", cfg.features, dims))


_CLASS_CACHE: dict[RouterTorusMachine, tuple[tuple[str, ...], np.ndarray]] = {}


def _router_classes(m: RouterTorusMachine) -> tuple[tuple[str, ...], np.ndarray]:
    if m in _CLASS_CACHE:
        return _CLASS_CACHE[m]
    names = (m.default_class, *(r.name for r in m.node_classes), SERVICE, DOWN)
    dims = m.dims
    code = np.zeros(m.n_routers, dtype=np.int8)
    for i, r in enumerate(m.node_classes):
        code[r.routers(dims)] = i + 1
    svc, down = len(names) - 2, len(names) - 1
    if m.service_routers:
        code[np.ravel_multi_index(tuple(np.array(m.service_routers).T), dims)] = svc
    fracs = [m.service_fraction] + [m.service_fraction if r.service_fraction is None else r.service_fraction
                                    for r in m.node_classes]
    if any(fracs):
        blade = m.blade or (1,) * len(dims)
        bgrid = tuple(d // b for d, b in zip(dims, blade))
        # router ids of every blade, shape [blade, router of blade]
        bc = np.stack(np.unravel_index(np.arange(math.prod(bgrid)), bgrid), axis=1) * np.array(blade)
        inner = np.stack(np.unravel_index(np.arange(math.prod(blade)), blade), axis=1)
        members = np.ravel_multi_index(tuple(np.moveaxis(bc[:, None, :] + inner[None, :, :], -1, 0)), dims)
        rng = np.random.default_rng([m.layout_seed, 0])
        bcls = code[members]
        for c, frac in enumerate(fracs):  # per class: its whole blades, its fraction of them
            mine = np.flatnonzero((bcls == c).all(axis=1))
            n = int(round(frac * mine.size))
            if n:
                code[members[rng.choice(mine, size=n, replace=False)].ravel()] = svc
    if m.down_routers:
        code[np.ravel_multi_index(tuple(np.array(m.down_routers).T), dims)] = down
    if m.down_fraction:
        comp = np.flatnonzero(code < svc)
        n = int(round(m.down_fraction * comp.size))
        code[np.random.default_rng([m.layout_seed, 1]).choice(comp, size=n, replace=False)] = down
    code.setflags(write=False)
    _CLASS_CACHE[m] = (names, code)
    return names, code


TORUS = MachineKind("torus", TorusMachineConfig, _build)
