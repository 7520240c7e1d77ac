"""The placement contract: which node runs each task.

Every generator returns a :class:`Placement` (``task_node[task] -> node``).
Random choices take an explicit ``seed`` and a ``generator``: ``threefry``
(default), a counter-based generator that gives the same placement on the
host and inside a jitted call on any device, or ``numpy`` (``default_rng``,
the earlier reference); see :mod:`evaluator.placement._seeded`. The same
arguments give the same placement on every machine.

A member of the family is one private module with its generator, its config
schema and a :class:`PlacementKind` entry for the registry in
``evaluator/placement/__init__.py``; ``build(cfg, ctx)`` makes the placement
from the schema and a :class:`PlacementContext` (the topology, the task count
and the traffic and topology configs, which some placements read: a
Cartesian placement takes the stencil's ``beta``, a sub-prism the machine
topology's partition). A seeded kind also gives ``seeded(cfg, ctx,
seed_check)``: the placement with everything checked and decided but the
seed (a :class:`~evaluator.placement._seeded.SeededPlacement`, or ``None``
when its config asks for the ``numpy`` generator), which sweeps draw for
many seeds at once on the device.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np

from .._registry import Kind
from .._types import NodeInts, TaskInts
from ..errors import ConfigError, ConfigTypeError, check_memory, positive_int, require
from ..topology import DragonflyTopology, Topology, TorusTopology

__all__ = ["Placement", "PlacementKind", "PlacementContext", "Needs", "ANY_TOPOLOGY", "DRAGONFLY", "TORUS", "TORUS_3D",
           "FEATURED_MACHINE", "explicit", "check_capacity", "check_task_memory", "TASK_BYTES", "check_node_ids",
           "check_one_per_node", "fits_per_node", "fits_one_per_node", "vec", "config_list"]


@dataclasses.dataclass(frozen=True)
class Needs:
    """The topologies a placement kind serves: ``test(topology) -> bool`` and its words for messages."""

    text: str
    test: Callable[[Topology], bool]

    def require(self, topology: Topology, kind: str) -> None:
        """A :class:`~evaluator.errors.ConfigError` on ``placement.kind`` unless ``topology`` passes."""
        require(self.test(topology), "placement.kind", kind,
                f"a placement for a {topology.kind}; '{kind}' needs {self.text}")


ANY_TOPOLOGY = Needs("any topology", lambda topology: True)
DRAGONFLY = Needs("a Dragonfly (topology=dragonfly)", lambda topology: isinstance(topology, DragonflyTopology))
TORUS = Needs("a torus (topology=torus, bgq, gemini or a torus machine)",
              lambda topology: isinstance(topology, TorusTopology))
TORUS_3D = Needs("a 3-D torus (Cray Gemini: topology=gemini, a 3-D topology=torus or a 3-D machine)",
                 lambda topology: isinstance(topology, TorusTopology) and topology.ndim == 3)
FEATURED_MACHINE = Needs("a catalogue machine whose file defines features (topology=machine, layout=real)",
                         lambda topology: bool(getattr(topology, "features", ())))


@dataclasses.dataclass(frozen=True)
class PlacementKind(Kind):
    """A placement member: ``build(cfg, ctx: PlacementContext) -> Placement``.

    ``seeded(cfg, ctx, seed_check) -> SeededPlacement | None`` (seeded kinds
    only): everything but the seed, checked in ``build``'s order with
    ``seed_check()`` called where ``build`` would check the seed; ``None``
    when ``cfg`` asks for the host-only ``numpy`` generator.

    ``needs``: the topologies it serves (:class:`Needs`; every topology by
    default). A config's placement is checked against it before it is built
    (:func:`evaluator.placement.placement_kind`), so a placement for another
    family is refused with the kinds that serve the topology, not with
    whichever of its own fields it checks first.

    ``fits(cfg, topology, n_tasks, field)`` (where the kind knows how many
    tasks it can place whatever its other settings): refuses ``n_tasks`` that
    no setting of ``cfg`` but the task count makes fit, naming ``field``, so
    a search over those settings is refused before it runs.

    ``grid_dims(cfg, topology) -> (fewest, most) | None`` (where the kind lays out the stencil's task grid
    ``beta`` when ``cfg`` gives no grid of its own): the dimensions that grid may have, so a stencil of another
    dimension is refused before a search over its decompositions runs (:meth:`check_grid`).
    """

    seeded: Callable[..., Any] | None = None
    needs: Needs = ANY_TOPOLOGY
    fits: Callable[[Any, Topology, int, str], None] | None = None
    grid_dims: Callable[[Any, Topology], tuple[int, int] | None] | None = None

    def serves(self, topology: Topology) -> bool:
        """Whether this placement can place tasks on ``topology`` (:attr:`needs`)."""
        return self.needs.test(topology)

    def check_fits(self, cfg: Any, topology: Topology, n_tasks: int, field: str) -> None:
        """Refuse ``n_tasks`` more than this kind can place on ``topology`` with ``cfg`` (:attr:`fits`; a kind
        without it checks when it builds)."""
        if self.fits is not None:
            self.fits(cfg, topology, int(n_tasks), field)

    def check_grid(self, cfg: Any, topology: Topology, n_dims: int, field: str, value: Any) -> None:
        """Refuse a stencil task grid of ``n_dims`` dimensions that this kind cannot lay out on ``topology``
        with ``cfg`` (:attr:`grid_dims`), naming ``field`` = ``value``."""
        span = self.grid_dims(cfg, topology) if self.grid_dims is not None else None
        if span is not None and not span[0] <= int(n_dims) <= span[1]:
            dims = str(span[0]) if span[0] == span[1] else f"{span[0]} to {span[1]}"
            require(False, field, value, f"a stencil of {dims} dimensions: placement '{self.name}' lays the task "
                    f"grid out on the {topology.kind} ({n_dims} given)")


@dataclasses.dataclass(frozen=True)
class PlacementContext:
    """What a placement builder may read besides its own config."""

    topology: Topology
    n_tasks: int
    traffic_cfg: Any = None
    topology_cfg: Any = None

    @property
    def beta(self) -> list[int] | None:
        """The traffic's task grid: a stencil's ``beta``, else the grid the traffic carries of ``n_tasks`` tasks
        (a ``grid`` key, a traffic file's ``# grid:`` header: :func:`evaluator.traffic.grid.task_grid`), if any."""
        beta = config_list(getattr(self.traffic_cfg, "beta", None))
        if beta is not None:
            return beta
        from ..traffic.grid import task_grid

        return task_grid(self.traffic_cfg, self.n_tasks)


def config_list(v) -> list | None:
    """A config list value as a plain list (``None`` stays ``None``)."""
    return None if v is None else list(v)


@dataclasses.dataclass(frozen=True, eq=False)
class Placement:
    """Task-to-node map.

    Attributes
    ----------
    task_node : int ndarray, shape [task]
        Node id of every task.
    n_nodes
        Node count of the topology it was made for.
    name
        Short label.
    """

    task_node: TaskInts
    n_nodes: int
    name: str = "placement"

    def __post_init__(self):
        """Checked when made, whoever makes it (a node id -1 of a Placement built directly was read as the last
        node): a 1-D integer array of node ids in [0, n_nodes)."""
        n = positive_int("placement.n_nodes", self.n_nodes)
        tn = self.task_node
        if not isinstance(tn, np.ndarray) or tn.ndim != 1 or tn.dtype.kind not in "iu":
            raise ConfigError("placement.task_node", type(tn).__name__ if not isinstance(tn, np.ndarray)
                              else f"{tn.dtype} {tn.shape}", "a 1-D NumPy array of integer node ids",
                              "evaluator.placement.explicit(topology, task_node) builds one from a list.")
        if tn.size and (int(tn.min()) < 0 or int(tn.max()) >= n):
            bad = int(tn.min()) if int(tn.min()) < 0 else int(tn.max())
            raise ConfigError("placement.task_node", bad, f"node ids in [0, {n - 1}] (n_nodes = {n})")

    @property
    def n_tasks(self) -> int:
        return int(self.task_node.size)

    def tasks_per_node(self) -> NodeInts:
        """Number of tasks on every node, shape [node]."""
        return np.bincount(self.task_node, minlength=self.n_nodes)


def check_topology(topology: Any, field: str = "topology") -> Topology:
    """``topology`` itself when it is a :class:`~evaluator.topology.Topology`, else a
    :class:`~evaluator.errors.ConfigTypeError` (a TypeError) naming the argument and the value: every public
    placement builder calls this first (a string there raised AttributeError)."""
    if not isinstance(topology, Topology):
        raise ConfigTypeError(field, topology, "a Topology (e.g. evaluator.torus([4, 4, 4]), "
                              "evaluator.dragonfly(4, 8, 4), evaluator.bgq_partition([1, 1, 1, 1]))",
                              f"Got a {type(topology).__name__}.")
    return topology


def check_node_ids(topology: Topology, field: str, nodes, allow_empty: bool = False) -> np.ndarray:
    """``nodes`` as an int64 array of distinct node ids of ``topology``, else a :class:`ConfigError` on ``field``
    naming the ids at fault (at most 10; the array's shape and dtype where it is not a flat list of integers).
    Repeats are found by a mark per node, not a sort (a study checks 80,000 nodes hundreds of times)."""
    try:
        a = np.asarray(nodes)
    except (TypeError, ValueError):
        raise ConfigError(field, nodes, "a flat list of integer node ids") from None
    flat = a.ndim == 1 and (allow_empty or a.size > 0)
    what = "a flat list of integer node ids" if allow_empty else "a non-empty flat list of integer node ids"
    require(flat and (a.size == 0 or np.issubdtype(a.dtype, np.integer)), field, a.tolist()[:10] if a.ndim else nodes,
            what, f"Got an array of shape {a.shape}, dtype {a.dtype}.")
    a = a.astype(np.int64)
    bad = (a < 0) | (a >= topology.n_nodes)
    if bad.any():
        ids = np.unique(a[bad])
        raise ConfigError(field, ids[:10].tolist() + (["..."] if ids.size > 10 else []),
                          f"node ids of {topology.name}: integers in [0, {topology.n_nodes - 1}]",
                          f"{ids.size} node id(s) are not in the topology.")
    listed = np.zeros(topology.n_nodes, dtype=bool)
    listed[a] = True
    if np.count_nonzero(listed) < a.size:
        dup = np.flatnonzero(np.bincount(a, minlength=topology.n_nodes) > 1)
        raise ConfigError(field, dup[:10].tolist() + (["..."] if dup.size > 10 else []),
                          "node ids without repeats", f"{dup.size} node id(s) are listed more than once (repeated).")
    return a


def explicit(topology: Topology, task_node, name: str = "explicit") -> Placement:
    """A placement given as an array ``task_node[task]`` of node ids."""
    check_topology(topology)
    try:
        tn = np.asarray(task_node).reshape(-1)
    except (ValueError, TypeError):
        raise ConfigError("placement.task_node", task_node, "a flat list of integer node ids") from None
    require(tn.size > 0, "placement.task_node", tn.tolist(), "a non-empty list of node ids")
    require(np.issubdtype(tn.dtype, np.integer), "placement.task_node", tn[:5].tolist(), "integer node ids")
    bad = (tn < 0) | (tn >= topology.n_nodes)
    require(not bad.any(), "placement.task_node", int(tn[bad][0]) if bad.any() else None,
            f"node ids in [0, {topology.n_nodes - 1}] of {topology.name}")
    return Placement(tn.astype(np.int64), topology.n_nodes, name)


TASK_BYTES = 32
"""Peak host bytes per task of building a placement: the task index range, its node ids, the
:class:`Placement`'s copy and its check (4 int64 arrays of ``n_tasks``)."""


def check_task_memory(field: str, value: Any, n_tasks: int, per_task: float = TASK_BYTES) -> None:
    """Refuse (:class:`~evaluator.errors.ResourceError` naming ``field`` = ``value``) a placement of ``n_tasks``
    tasks whose arrays (``per_task`` bytes a task) would not fit in memory, before any is allocated: a task count
    of 10^11 at 10^10 tasks per node passes every capacity check and asked NumPy for 745 GiB."""
    check_memory(field, value, float(n_tasks) * per_task, f"the node ids of its {int(n_tasks):,} tasks",
                 "Use fewer tasks (the task count comes from the traffic).")


def check_capacity(topology: Topology, n_tasks: int, tasks_per_node: int,
                   field: str = "placement.n_tasks") -> tuple[int, int]:
    """``(n_tasks, tasks_per_node)`` checked: positive, and the tasks fit on the topology's nodes at that many
    per node; otherwise a :class:`ConfigError` on ``field`` whose text names the tasks per node that
    would fit (it is also the ``reason`` of a sweep point)."""
    n = positive_int(field, n_tasks)
    tpn = positive_int("placement.tasks_per_node", tasks_per_node)
    slots = topology.n_nodes * tpn
    if n > slots:
        need = -(-n // topology.n_nodes)
        per = "one task per node" if tpn == 1 else f"{tpn} tasks per node"
        raise ConfigError(field, n,
                          f"at most nodes x tasks_per_node = {topology.n_nodes} x {tpn} = {slots} on {topology.name}"
                          f" ({per}; placement.tasks_per_node={need} fits {n} tasks)",
                          f"Set placement.tasks_per_node={need} (or more), use fewer tasks or a larger network.")
    check_task_memory(field, n, n)
    return n, tpn


def fits_per_node(cfg: Any, topology: Topology, n_tasks: int, field: str) -> None:
    """A placement's :attr:`PlacementKind.fits` that puts ``cfg.tasks_per_node`` tasks on every node at most."""
    check_capacity(topology, n_tasks, cfg.tasks_per_node, field)


def fits_one_per_node(kind: str) -> Callable[[Any, Topology, int, str], None]:
    """A placement's :attr:`PlacementKind.fits` that puts one task per node (:func:`check_one_per_node`)."""
    return lambda cfg, topology, n_tasks, field: check_one_per_node(topology, n_tasks, kind, field)


def check_one_per_node(topology: Topology, n_tasks: int, kind: str, field: str, value=None) -> None:
    """A placement that puts one task per node (``kind``: the Dragonfly Cartesian and random placements): its
    ``n_tasks`` must not exceed the topology's nodes. The refusal says so first, since no other parameter of such
    a placement (``gamma``, ``tasks_per_group``) can make more tasks fit, and names placements that take
    ``tasks_per_node``."""
    n = int(n_tasks)
    if n > topology.n_nodes:
        need = -(-n // topology.n_nodes)
        raise ConfigError(field, n if value is None else value,
                          f"at most {topology.n_nodes} tasks: placement {kind} puts one task per node and "
                          f"{topology.name} has {topology.n_nodes} nodes (placement=linear or placement=random with "
                          f"placement.tasks_per_node={need} fits {n} tasks)",
                          f"{n} tasks need {need} tasks per node here: choose such a placement, a larger network or "
                          f"fewer tasks.")



def vec(field: str, v, nd: int | None = None) -> tuple[int, ...]:
    """``v`` as a tuple of positive integers (``nd`` of them if given); a :class:`ConfigError` naming ``field``
    (or the entry) otherwise."""
    if type(v) in (list, tuple) and v and (nd is None or len(v) == nd) and all(type(x) is int and x >= 1 for x in v):
        return tuple(v)  # the common case, checked without building messages
    require(isinstance(v, (list, tuple, np.ndarray)) and len(v) >= 1, field, v, "a non-empty list of positive integers")
    if nd is not None:
        require(len(v) == nd, field, list(v), f"a list of {nd} positive integers")
    return tuple(positive_int(f"{field}[{k}]", x) for k, x in enumerate(v))
