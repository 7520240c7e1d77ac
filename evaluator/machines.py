"""Machine catalogue: named machines loaded from one YAML file each.

A machine is either a Blue Gene/Q system described in midplanes
(``kind: bgq``) or a generic torus of routers (``kind: torus``, e.g. the Cray
Gemini torus of Blue Waters). The built-in catalogue lives in
``conf/machine/*.yaml`` at the repository root (the same files form the Hydra
config group ``machine``). A user adds a machine by dropping one YAML file
either there or in a directory listed in the environment variable
``EVALUATOR_MACHINE_PATH`` (several directories separated by ``os.pathsep``);
directories of that variable are searched first, so a user file overrides a
built-in machine of the same name.

Schema (flat, every key required to be one of these; ``null`` where unused)::

    name: Mira                 # str, matched case-insensitively
    kind: bgq                  # bgq | torus
    midplanes: [4, 4, 3, 2]    # bgq only: A, B, C, D midplanes
    allowed_partitions: null   # or list of shapes (midplanes for bgq, routers for torus)
    link_bandwidth: 2.0e+9     # bytes/s per direction; torus: one number or one per dim
    dims: null                 # torus only: router grid, e.g. [24, 24, 24]
    wrap: null                 # torus only: bool or one bool per dim (null: all true)
    nodes_per_router: 1
    injection_bandwidth: null  # bytes/s per direction per node; null: not modelled
    routing_order: longest_first   # longest_first | as_given (dimension order routing)
    slabs: null                # optional router shapes compared by ``--slabs``
    description: ""            # optional free text (source of the numbers)

Torus machines may also say what each router's nodes are (every key
optional; :meth:`Machine.router_classes` turns them into one class per
router, the same on every machine for the same file)::

    default_class: XE          # class of the compute nodes outside every region (default "compute")
    node_classes:              # compute node regions: name, first router, extent in routers (they wrap),
      - {name: XK, offset: [9, 18, 0], shape: [15, 6, 24], service_fraction: 0.0213}  # optional own fraction
    blade: [1, 2, 1]           # routers per blade along each dimension (drawn service nodes take whole blades)
    service_routers: null      # router coordinates of service nodes (never allocated), e.g. [[0, 0, 0], ...]
    service_fraction: 0.0282   # or: this fraction of blades drawn as service blades with layout_seed
    down_routers: null         # router coordinates of down nodes (never allocated)
    down_fraction: null        # or: this fraction of the remaining compute routers drawn down
    layout_seed: 0             # seed of the drawn service and down routers
    features:                  # predefined node sets (Moab "features"): name, first router, extent
      - {name: s1, offset: [0, 0, 0], shape: [24, 6, 24]}

Service and down routers still route traffic (their Gemini is part of the
torus); only their nodes are never given to a job.

Units: bandwidths are bytes/s per direction of one link.

The module also says what a machine allows: :func:`check_partition`
validates a partition shape (length, fit, allowed list) without importing the
partition analysis (:mod:`evaluator.partitions`), so the topology layer can
use it. Every error is of the package's one family (:mod:`evaluator.errors`):
:class:`MachineError`, :class:`UnknownMachineError` and
:class:`~evaluator.errors.PartitionError`.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .errors import MachineError, PartitionError, UnknownMachineError, int_list, invalid, is_int
from .io import conf_dir

__all__ = [
    "Machine",
    "MachineError",
    "UnknownMachineError",
    "PartitionError",
    "MACHINE_PATH_ENV",
    "MACHINE_KEYS",
    "BGQ_MIDPLANE_NODE_DIMS",
    "builtin_machine_dir",
    "machine_search_path",
    "machine_files",
    "list_machines",
    "load_machine",
    "machine_from_dict",
    "check_partition",
    "Region",
    "SERVICE",
    "DOWN",
    "NON_COMPUTE_CLASSES",
]

MACHINE_PATH_ENV = "EVALUATOR_MACHINE_PATH"
"""Environment variable with extra machine directories (``os.pathsep``-separated)."""

BGQ_MIDPLANE_NODE_DIMS: tuple[int, ...] = (4, 4, 4, 4, 2)
"""Nodes of one Blue Gene/Q midplane along A, B, C, D, E (512 nodes)."""

KINDS = ("bgq", "torus")
ROUTING_ORDERS = ("longest_first", "as_given")
MACHINE_KEYS = (
    "name",
    "kind",
    "midplanes",
    "allowed_partitions",
    "link_bandwidth",
    "dims",
    "wrap",
    "nodes_per_router",
    "injection_bandwidth",
    "routing_order",
    "slabs",
    "description",
    "default_class",
    "node_classes",
    "blade",
    "service_routers",
    "service_fraction",
    "down_routers",
    "down_fraction",
    "layout_seed",
    "features",
)
SERVICE, DOWN = "service", "down"
NON_COMPUTE_CLASSES = (SERVICE, DOWN)
"""Router classes whose nodes are never allocated."""
_LAYOUT_KEYS = ("default_class", "node_classes", "blade", "service_routers", "service_fraction", "down_routers",
                "down_fraction", "features")
_REQUIRED_KEYS = ("name", "kind", "link_bandwidth")


def _key(name: str) -> str:
    """Lookup key of a machine name: lower case, letters and digits only."""
    return re.sub(r"[^a-z0-9]", "", str(name).lower())


def _shape(shape: Sequence[int]) -> str:
    """A shape as text, e.g. ``"4x4x3x2"`` (the one formatter of machine and partition shapes)."""
    return "x".join(str(int(s)) for s in shape)


@dataclass(frozen=True)
class Region:
    """A named prism of routers: ``offset`` (first router) and ``shape`` (extent), wrapping around the torus."""

    name: str
    offset: tuple[int, ...]
    shape: tuple[int, ...]
    service_fraction: float | None = None  # node classes: own fraction of service blades (None: the machine's)

    def routers(self, dims: Sequence[int]) -> np.ndarray:
        """Router ids of the region (row-major in the region's own coordinates), shape [router]."""
        c = np.stack(np.unravel_index(np.arange(math.prod(self.shape)), self.shape), axis=1)
        return np.ravel_multi_index(tuple(((c + np.array(self.offset)) % np.array(dims)).T), tuple(dims))


@dataclass(frozen=True)
class Machine:
    """A machine of the catalogue.

    Attributes
    ----------
    name
        Display name, e.g. ``"Mira"``.
    kind
        ``"bgq"``: a Blue Gene/Q system allocated in whole midplanes; each
        partition is its own 5D torus (wrap links close inside it).
        ``"torus"``: a torus (or mesh) of routers whose jobs run on sub-prisms
        routed over the host torus (embedded mode, e.g. Cray Gemini).
    dims : tuple of int, shape [dim]
        Router grid of the whole machine. For ``bgq`` this is the node torus
        ``4A x 4B x 4C x 4D x 2``.
    wrap : tuple of bool, shape [dim]
        Wrap-around links of the whole machine in each dimension.
    link_bandwidth : tuple of float, shape [dim]
        Bandwidth of one link of each dimension, bytes/s per direction.
    nodes_per_router
        Compute nodes attached to each router (1 on BG/Q, 2 on Gemini).
    midplanes : tuple of int or None
        ``bgq`` only: the machine in midplanes ``(A, B, C, D)``.
    allowed_partitions : tuple of tuple of int, or None
        Shapes the scheduler allows (midplanes for ``bgq``, routers for
        ``torus``), compared up to rotation; ``None`` means any cuboid that
        fits is allowed.
    injection_bandwidth
        Node injection (and ejection) bandwidth, bytes/s per direction, or
        ``None`` when not modelled.
    routing_order
        ``"longest_first"`` (BG/Q: longest remaining dimension first) or
        ``"as_given"`` (dimension-order routing in the given order, Gemini XYZ).
    slabs : tuple of tuple of int, or None
        Router shapes compared by the slab analysis (``torus`` machines).
    description
        Free text: where the numbers come from.
    source
        Path of the YAML file, or ``"<dict>"``.
    """

    name: str
    kind: str
    dims: tuple[int, ...]
    wrap: tuple[bool, ...]
    link_bandwidth: tuple[float, ...]
    nodes_per_router: int = 1
    midplanes: tuple[int, ...] | None = None
    allowed_partitions: tuple[tuple[int, ...], ...] | None = None
    injection_bandwidth: float | None = None
    routing_order: str = "longest_first"
    slabs: tuple[tuple[int, ...], ...] | None = None
    description: str = ""
    source: str = "<dict>"
    default_class: str = "compute"
    node_classes: tuple[Region, ...] = ()
    blade: tuple[int, ...] | None = None
    service_routers: tuple[tuple[int, ...], ...] = ()
    service_fraction: float = 0.0
    down_routers: tuple[tuple[int, ...], ...] = ()
    down_fraction: float = 0.0
    layout_seed: int = 0
    features: tuple[Region, ...] = ()

    @property
    def has_layout(self) -> bool:
        """Whether some router is not a plain compute router (service, down or a named class)."""
        return bool(self.node_classes or self.service_routers or self.service_fraction or self.down_routers
                    or self.down_fraction)

    def router_classes(self) -> tuple[tuple[str, ...], np.ndarray]:
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
            if _key(f.name) == _key(name):
                return f
        raise _err(self.name, "features", name, "one of " + (", ".join(f.name for f in self.features) or
                                                              "(none: this machine defines no features)"))

    @property
    def key(self) -> str:
        """Case- and punctuation-insensitive lookup key of :attr:`name`."""
        return _key(self.name)

    @property
    def n_routers(self) -> int:
        """Routers of the whole machine."""
        return math.prod(self.dims)

    @property
    def n_nodes(self) -> int:
        """Compute nodes of the whole machine."""
        return self.n_routers * self.nodes_per_router

    @property
    def unit(self) -> str:
        """Allocation unit: ``"midplane"`` (bgq) or ``"router"`` (torus)."""
        return "midplane" if self.kind == "bgq" else "router"

    @property
    def unit_dims(self) -> tuple[int, ...]:
        """The machine counted in allocation units (midplanes or routers)."""
        assert self.midplanes is not None or self.kind != "bgq"
        return self.midplanes if self.kind == "bgq" else self.dims  # type: ignore[return-value]

    @property
    def nodes_per_unit(self) -> int:
        """Compute nodes in one allocation unit (512 per midplane on BG/Q)."""
        if self.kind == "bgq":
            return math.prod(BGQ_MIDPLANE_NODE_DIMS)
        return self.nodes_per_router

    @property
    def label(self) -> str:
        """One-line description, e.g. ``"Mira (bgq, 4x4x3x2 midplanes, 49152 nodes)"``."""
        if self.kind == "bgq":
            return f"{self.name} (bgq, {_shape(self.unit_dims)} midplanes, {self.n_nodes} nodes)"
        return (f"{self.name} (torus, {_shape(self.dims)} routers x {self.nodes_per_router} nodes, "
                f"{self.n_nodes} nodes)")


# --------------------------------------------------------------------------------------
# validation helpers
# --------------------------------------------------------------------------------------


def _err(machine: str, field: str, value: Any, allowed: str, hint: str = "") -> MachineError:
    """``"machine '<machine>': <field> = <value!r> is invalid; allowed: <allowed>[. hint]"``."""
    return invalid(MachineError, field, value, allowed, context=f"machine {machine!r}", hint=hint)


def _int_list(machine: str, field: str, value: Any, length: int | None = None) -> tuple[int, ...]:
    what = "a list of positive integers" if length is None else f"a list of {length} positive integers"
    # the message shows the value as given (a tuple stays a tuple), not int_list's list copy
    return int_list(field, value, length, error=lambda f, _v, a: _err(machine, f, value, a), allowed=what)


def _pos_float(machine: str, field: str, value: Any) -> float:
    """Accept a number or a numeric string (PyYAML reads ``2e9`` as a string)."""
    if isinstance(value, bool):
        raise _err(machine, field, value, "a finite number > 0 (bytes/s per direction)")
    try:
        f = float(value)
    except (TypeError, ValueError):
        raise _err(machine, field, value, "a finite number > 0 (bytes/s per direction)") from None
    if not (math.isfinite(f) and f > 0):
        raise _err(machine, field, value, "a finite number > 0 (bytes/s per direction)")
    return f


def _fits_some_rotation(shape: Sequence[int], box: Sequence[int]) -> bool:
    return len(shape) == len(box) and all(
        s <= b for s, b in zip(sorted(shape, reverse=True), sorted(box, reverse=True))
    )


def machine_from_dict(data: Mapping[str, Any], source: str = "<dict>") -> Machine:
    """Build and validate a :class:`Machine` from a plain mapping (one YAML file).

    Parameters
    ----------
    data
        Mapping with the keys of :data:`MACHINE_KEYS` (see module docstring);
        missing optional keys take their defaults. An OmegaConf node should be
        converted with ``OmegaConf.to_container(cfg, resolve=True)`` first.
    source
        Where the mapping came from, used in messages and kept on the result.

    Raises
    ------
    MachineError
        With the machine name, the field, the value and the allowed values.
    """
    if not isinstance(data, Mapping):
        raise MachineError(f"{source}: a machine description must be a mapping of "
                           f"{', '.join(MACHINE_KEYS)}; got {type(data).__name__}")
    name = data.get("name")
    label = str(name) if name is not None else source
    unknown = sorted(set(map(str, data)) - set(MACHINE_KEYS))
    if unknown:
        raise MachineError(f"machine {label!r} ({source}): unknown key(s) {unknown}; "
                           f"allowed keys: {', '.join(MACHINE_KEYS)}")
    for k in _REQUIRED_KEYS:
        if data.get(k) is None:
            raise MachineError(f"machine {label!r} ({source}): required key {k!r} is missing; "
                               f"required keys: {', '.join(_REQUIRED_KEYS)}")
    if not isinstance(name, str) or not _key(name):
        raise _err(label, "name", name, "a non-empty string with at least one letter or digit")
    kind = data.get("kind")
    if kind not in KINDS:
        raise _err(name, "kind", kind, " | ".join(KINDS))
    routing_order = data.get("routing_order") or ("longest_first" if kind == "bgq" else "as_given")
    if routing_order not in ROUTING_ORDERS:
        raise _err(name, "routing_order", routing_order, " | ".join(ROUTING_ORDERS))
    npr_raw = data.get("nodes_per_router", 1)
    npr_raw = 1 if npr_raw is None else npr_raw
    if not (is_int(npr_raw) and int(npr_raw) >= 1):
        raise _err(name, "nodes_per_router", npr_raw, "an integer >= 1")
    npr = int(npr_raw)
    inj = data.get("injection_bandwidth")
    inj_f = None if inj is None else _pos_float(name, "injection_bandwidth", inj)
    description = data.get("description") or ""
    if not isinstance(description, str):
        raise _err(name, "description", description, "a string")

    midplanes: tuple[int, ...] | None = None
    if kind == "bgq":
        midplanes = _int_list(name, "midplanes", data.get("midplanes"), 4)
        for k in ("dims", "wrap"):
            if data.get(k) is not None:
                raise _err(name, k, data.get(k), "null for kind 'bgq'",
                           "A BG/Q machine is given by 'midplanes'; its node torus is derived.")
        if npr != 1:
            raise _err(name, "nodes_per_router", npr, "1 for kind 'bgq'")
        dims = tuple(4 * m for m in midplanes) + (2,)
        wrap = (True,) * 5
        lb = data.get("link_bandwidth")
        if isinstance(lb, (list, tuple)):
            raise _err(name, "link_bandwidth", lb, "one number for kind 'bgq' (all dimensions alike)")
        bw = (_pos_float(name, "link_bandwidth", lb),) * 5
        unit_dims = midplanes
    else:
        if data.get("midplanes") is not None:
            raise _err(name, "midplanes", data.get("midplanes"), "null for kind 'torus'",
                       "Give the router grid in 'dims'.")
        dims = _int_list(name, "dims", data.get("dims"))
        w = data.get("wrap")
        if w is None:
            wrap = (True,) * len(dims)
        elif isinstance(w, bool):
            wrap = (w,) * len(dims)
        elif isinstance(w, (list, tuple)) and len(w) == len(dims) and all(isinstance(x, bool) for x in w):
            wrap = tuple(w)
        else:
            raise _err(name, "wrap", w, f"null, true, false or a list of {len(dims)} booleans")
        lb = data.get("link_bandwidth")
        if isinstance(lb, (list, tuple)):
            if len(lb) != len(dims):
                raise _err(name, "link_bandwidth", lb, f"one number or a list of {len(dims)} numbers "
                           "(bytes/s per direction, one per dimension)")
            bw = tuple(_pos_float(name, f"link_bandwidth[{k}]", v) for k, v in enumerate(lb))
        else:
            bw = (_pos_float(name, "link_bandwidth", lb),) * len(dims)
        unit_dims = dims

    def _shapes(field: str) -> tuple[tuple[int, ...], ...] | None:
        raw = data.get(field)
        if raw is None:
            return None
        if not isinstance(raw, (list, tuple)) or not raw:
            raise _err(name, field, raw, f"null or a non-empty list of shapes of {len(unit_dims)} integers")
        out = []
        for i, s in enumerate(raw):
            shp = _int_list(name, f"{field}[{i}]", s, len(unit_dims))
            if not _fits_some_rotation(shp, unit_dims):
                raise _err(name, f"{field}[{i}]", list(s), f"a shape that fits in {_shape(unit_dims)} "
                           f"{'midplanes' if kind == 'bgq' else 'routers'} (in some rotation)")
            out.append(shp)
        return tuple(out)

    allowed = _shapes("allowed_partitions")
    slabs = _shapes("slabs")
    layout = _layout(name, kind, dims, data)
    return Machine(name=name, kind=kind, dims=dims, wrap=wrap, link_bandwidth=bw, nodes_per_router=npr,
                   midplanes=midplanes, allowed_partitions=allowed, injection_bandwidth=inj_f,
                   routing_order=routing_order, slabs=slabs, description=description.strip(),
                   source=source, **layout)


def _coords(machine: str, field: str, raw: Any, dims: tuple[int, ...]) -> tuple[tuple[int, ...], ...]:
    """A list of router coordinates inside ``dims``."""
    if raw is None:
        return ()
    if not isinstance(raw, (list, tuple)):
        raise _err(machine, field, raw, f"null or a list of router coordinates (lists of {len(dims)} integers)")
    out = []
    for i, c in enumerate(raw):
        ok = isinstance(c, (list, tuple)) and len(c) == len(dims) and all(is_int(v) for v in c) \
            and all(0 <= int(v) < d for v, d in zip(c, dims))
        if not ok:
            raise _err(machine, f"{field}[{i}]", c, f"{len(dims)} integer router coordinates in "
                       f"[0, dims) = [0, {_shape(dims)})")
        out.append(tuple(int(v) for v in c))
    return tuple(out)


def _regions(machine: str, field: str, raw: Any, dims: tuple[int, ...]) -> tuple[Region, ...]:
    """A list of ``{name, offset, shape}`` prisms of routers that fit in ``dims``."""
    if raw is None:
        return ()
    what = f"null or a list of {{name, offset, shape}} (offset and shape: {len(dims)} integers each)"
    if not isinstance(raw, (list, tuple)):
        raise _err(machine, field, raw, what)
    out: list[Region] = []
    for i, r in enumerate(raw):
        keys = {"name", "offset", "shape"} | ({"service_fraction"} if field == "node_classes" else set())
        if not isinstance(r, Mapping) or not {"name", "offset", "shape"} <= set(r) <= keys \
                or not isinstance(r["name"], str) or not r["name"].strip():
            raise _err(machine, f"{field}[{i}]", r, what)
        if r["name"] in NON_COMPUTE_CLASSES or any(_key(o.name) == _key(r["name"]) for o in out):
            raise _err(machine, f"{field}[{i}].name", r["name"], f"a new name, not {list(NON_COMPUTE_CLASSES)} "
                       "nor one used before")
        shp = _int_list(machine, f"{field}[{i}].shape", r["shape"], len(dims))
        if not _fits(shp, dims):
            raise _err(machine, f"{field}[{i}].shape", list(shp), f"a prism within the machine, {_shape(dims)}")
        off = _coords(machine, f"{field}[{i}].offset", [r["offset"]], dims)[0]
        frac = _fraction(machine, f"{field}[{i}].service_fraction", r.get("service_fraction"))
        out.append(Region(r["name"].strip(), off, shp, frac if "service_fraction" in r else None))
    return tuple(out)


def _fraction(machine: str, field: str, raw: Any) -> float:
    if raw is None:
        return 0.0
    ok = not isinstance(raw, bool) and isinstance(raw, (int, float)) and 0 <= float(raw) < 1
    if not ok:
        raise _err(machine, field, raw, "null or a number in [0, 1)")
    return float(raw)


def _layout(name: str, kind: str, dims: tuple[int, ...], data: Mapping[str, Any]) -> dict[str, Any]:
    """The node-class keys of a machine description, checked (torus machines only)."""
    if kind != "torus":
        for k in _LAYOUT_KEYS:
            if data.get(k) is not None:
                raise _err(name, k, data.get(k), "null for kind 'bgq'",
                           "Service nodes and node classes are described for torus machines (Cray Gemini).")
        return {}
    dc = data.get("default_class")
    dc = "compute" if dc is None else dc
    if not isinstance(dc, str) or not dc.strip() or dc in NON_COMPUTE_CLASSES:
        raise _err(name, "default_class", dc, f"a class name other than {list(NON_COMPUTE_CLASSES)}")
    classes = _regions(name, "node_classes", data.get("node_classes"), dims)
    if any(_key(r.name) == _key(dc) for r in classes):
        raise _err(name, "node_classes", [r.name for r in classes], f"names other than default_class {dc!r}")
    blade = None if data.get("blade") is None else _int_list(name, "blade", data.get("blade"), len(dims))
    if blade is not None and any(d % b for d, b in zip(dims, blade)):
        raise _err(name, "blade", list(blade), f"routers per blade dividing dims {_shape(dims)}")
    seed = data.get("layout_seed", 0)
    seed = 0 if seed is None else seed
    if not (is_int(seed) and int(seed) >= 0):
        raise _err(name, "layout_seed", seed, "an integer >= 0")
    return dict(default_class=dc.strip(), node_classes=classes, blade=blade,
                service_routers=_coords(name, "service_routers", data.get("service_routers"), dims),
                service_fraction=_fraction(name, "service_fraction", data.get("service_fraction")),
                down_routers=_coords(name, "down_routers", data.get("down_routers"), dims),
                down_fraction=_fraction(name, "down_fraction", data.get("down_fraction")),
                layout_seed=int(seed),
                features=_regions(name, "features", data.get("features"), dims))


_CLASS_CACHE: dict[Machine, tuple[tuple[str, ...], np.ndarray]] = {}


def _router_classes(m: Machine) -> tuple[tuple[str, ...], np.ndarray]:
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


# --------------------------------------------------------------------------------------
# catalogue
# --------------------------------------------------------------------------------------


def builtin_machine_dir() -> Path:
    """Directory of the built-in catalogue, ``conf/machine`` (see :func:`evaluator.io.conf_dir`)."""
    return conf_dir() / "machine"


def machine_search_path() -> list[Path]:
    """Directories searched for machine YAML files, first match wins.

    The directories of ``$EVALUATOR_MACHINE_PATH`` (in order), then
    :func:`builtin_machine_dir`.
    """
    dirs = [Path(p).expanduser() for p in os.environ.get(MACHINE_PATH_ENV, "").split(os.pathsep) if p]
    dirs.append(builtin_machine_dir())
    return dirs


def machine_files() -> list[Path]:
    """Every ``*.yaml`` / ``*.yml`` file on the search path, in search order."""
    files: list[Path] = []
    for d in machine_search_path():
        if d.is_dir():
            files.extend(sorted(p for p in d.iterdir() if p.suffix in (".yaml", ".yml") and p.is_file()))
    return files


def _read_yaml(path: Path) -> Machine:
    import yaml

    try:
        with open(path, encoding="utf-8") as fh:
            data = yaml.safe_load(fh)
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        at = f" at line {where.line + 1}, column {where.column + 1}" if where is not None else ""
        what = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise MachineError(f"{path}: not valid YAML{at}: {what}", "machine file", str(path),
                           "a YAML mapping of machine keys") from None
    return machine_from_dict(data if data is not None else {}, source=str(path))


def _catalogue() -> dict[str, Machine]:
    """All machines by key; earlier directories override later ones."""
    found: dict[str, Machine] = {}
    for path in machine_files():
        m = _read_yaml(path)
        if m.key in found:
            if Path(found[m.key].source).parent == path.parent:
                raise MachineError(f"machine name {m.name!r} is defined twice in {path.parent}: "
                                   f"{Path(found[m.key].source).name} and {path.name}")
            continue  # overridden by an earlier directory of the search path
        found[m.key] = m
    return found


def list_machines() -> list[str]:
    """Names of every machine on the search path, sorted case-insensitively."""
    return sorted((m.name for m in _catalogue().values()), key=str.lower)


def load_machine(name: str | os.PathLike[str] | Machine) -> Machine:
    """Load a machine by name (case-insensitive) or from a YAML file path.

    Parameters
    ----------
    name
        A machine name such as ``"mira"`` or ``"JUQUEEN-54"`` (case, ``-``,
        ``_`` and spaces are ignored), a path to a YAML file, or a
        :class:`Machine` (returned unchanged).

    Raises
    ------
    UnknownMachineError
        No such machine; the message lists the known machines and where they
        were searched.
    MachineError
        The YAML file is invalid.
    """
    if isinstance(name, Machine):
        return name
    p = Path(os.fspath(name))
    if p.suffix in (".yaml", ".yml") and p.is_file():
        return _read_yaml(p)
    key = _key(str(name))
    # fast path: a file named after the machine
    for path in machine_files():
        if _key(path.stem) == key:
            m = _read_yaml(path)
            if m.key == key:
                return m
    cat = _catalogue()
    if key in cat:
        return cat[key]
    known = ", ".join(sorted((m.name for m in cat.values()), key=str.lower)) or "(none)"
    where = ", ".join(str(d) for d in machine_search_path())
    raise UnknownMachineError(
        f"unknown machine {str(name)!r}; known machines: {known} (searched {where}). "
        f"Add one by dropping a YAML file in one of those directories "
        f"(or a directory named in ${MACHINE_PATH_ENV}).")


# --------------------------------------------------------------------------------------
# what a machine allows: partition shapes
# --------------------------------------------------------------------------------------


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
    """The lexicographically largest permutation of ``shape`` that fits in ``box``, or None.

    Built one position at a time (the largest side that fits there and
    leaves a fit for the rest, checked by sorted matching): ``O(n^2 log n)``
    instead of trying all ``n!`` permutations.
    """
    if not _fits_some_rotation(shape, box):
        return None
    left = sorted(shape, reverse=True)
    out: list[int] = []
    for k in range(len(box)):
        rest_box = box[k + 1:]
        for i, v in enumerate(left):  # descending: the first feasible choice is the largest
            if v <= box[k] and (i == 0 or v != left[i - 1]):
                rest = left[:i] + left[i + 1:]
                if _fits_some_rotation(rest, rest_box):
                    out.append(v)
                    left = rest
                    break
    return tuple(out)


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
        allowed = f"{len(box)} integers >= 1 ({unit} per dimension, machine {_shape(box)})"
        raise PartitionError(f"machine {m.name!r}: partition {shape!r} is invalid; allowed: {allowed}",
                             "partition", shape, allowed)
    if not all(is_int(s) and int(s) >= 1 for s in shape):
        allowed = f"{len(box)} integers >= 1 ({unit} per dimension)"
        raise PartitionError(f"machine {m.name!r}: partition {list(shape)!r} is invalid; allowed: {allowed}",
                             "partition", list(shape), allowed)
    shp = tuple(int(s) for s in shape)
    for k, (s, b) in enumerate(zip(shp, box)):
        if s > b:
            rot = _fitting_rotation(shp, box)
            hint = f"; the rotation {_shape(rot)} fits" if rot is not None else ""
            raise PartitionError(f"machine {m.name!r}: partition {_shape(shp)} does not fit in {unit} "
                                 f"{_shape(box)} (dimension {k}: {s} > {b}){hint}",
                                 "partition", list(shp), f"a shape that fits in {unit} {_shape(box)}")
    if require_allowed:
        allowed_set = _allowed_set(m)
        if allowed_set is not None and _canonical(m, shp) not in allowed_set:
            n_units = math.prod(shp)
            same = sorted({_shape(a) for a in allowed_set if math.prod(a) == n_units})
            every = ", ".join(sorted((_shape(a) for a in allowed_set),
                                     key=lambda s: (math.prod(map(int, s.split('x'))), s)))
            allowed = (f"geometries of {n_units} {unit}: {', '.join(same)}" if same else
                       f"geometries (none of {n_units} {unit}): {every}")
            raise PartitionError(
                f"machine {m.name!r}: partition {_shape(shp)} ({n_units} {unit}, "
                f"{n_units * m.nodes_per_unit} nodes) is not in the scheduler's allowed list; allowed "
                + allowed, "partition", list(shp), allowed)
    return shp
