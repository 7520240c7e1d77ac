"""A machine of the catalogue (``conf/machine/``) as a topology, whole or one partition.

The machine says what its network is (:meth:`evaluator.machines.Machine.network`: a topology config of a
registered kind, e.g. ``{"kind": "bgq", "midplanes": [2, 1, 1, 1], ...}`` or a machine file's own
``topology:`` block) and this module builds it through the topology registry, which :func:`kind` receives
as a function (so that this module does not import the package that registers it).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np

from ..latency import LatencyConfig, latency_from_config, latency_wanted
from .._registry import from_mapping
from .._types import ConfigOf, Int, NodeBools
from ..errors import (ConfigError, ConfigTypeError, MachineError, PartitionError, ResourceError, UnknownMachineError, nearest,
                      refuse_ignored, require)
from ..machines import NON_COMPUTE_CLASSES, Machine, load_machine
from ._torus import TorusTopology
from .base import Topology, TopologyKind

__all__ = ["machine_topology", "MACHINE_MODES", "MACHINE_LAYOUTS", "MachineTorusTopology", "MachineTopologyConfig",
           "kind"]

MACHINE_MODES = ("auto", "own", "embedded")
MACHINE_LAYOUTS = ("real", "ideal")


@dataclasses.dataclass(frozen=True, eq=False)
class MachineTorusTopology(TorusTopology):
    """The whole torus of a catalogue machine with what each node is (its ``kind`` stays ``"torus"``).

    Extra attributes
    ----------------
    machine : str
        The catalogue name.
    node_class : int8 ndarray, shape [node]
        Class of every node, an index into ``node_class_names``.
    node_class_names : tuple of str
        ``(default class, *named classes, "service", "down")`` (:meth:`evaluator.machines.Machine.node_layout`).
    features : tuple of Region
        The machine's predefined node sets.
    """

    machine: str = ""
    node_class: Int[np.ndarray, "node"] = dataclasses.field(default_factory=lambda: np.zeros(0, np.int8))
    node_class_names: tuple[str, ...] = ()
    features: tuple = ()

    def compute_mask(self) -> NodeBools:
        """Whether each node is a compute node (never a service or down node), shape [node]."""
        bad = [i for i, n in enumerate(self.node_class_names) if n in NON_COMPUTE_CLASSES]
        return ~np.isin(self.node_class, bad)


_REGISTRY: list[Callable[[], Any]] = []  # the topology registry's getter, set by kind()


def _topologies():
    if not _REGISTRY:  # pragma: no cover - evaluator.topology registers this kind on import
        raise RuntimeError("machine_topology needs the topology registry: import evaluator.topology")
    return _REGISTRY[0]()


def _build_network(m: Machine, config: dict[str, Any]) -> Topology:
    """The topology of a machine's network config, through the topology registry; an error in a machine
    file's own topology block names the machine and its file."""
    kinds = _topologies()
    others = [k for k in kinds if kinds[k].schema is not MachineTopologyConfig]
    try:
        name = config.get("kind")
        if name not in kinds or kinds[name].schema is MachineTopologyConfig:
            raise ConfigError("topology.kind", name, f"a network topology kind, one of {others}",
                              nearest(name, others) if name not in kinds else
                              "A machine's topology is a network, not another machine.")
        kind = kinds[name]
        return kind.build(from_mapping(kind.schema, config, "topology"))
    except ResourceError as exc:  # a memory refusal of the machine's own size: named by its file's key, not by
        #  topology.dims, a key the user never set
        field = str(exc.field).removeprefix("topology.")
        raise ResourceError(f"machine {m.name!r} ({m.source}): {field}", exc.value, exc.allowed, exc.hint) from None
    except ConfigError as exc:
        if type(exc) not in (ConfigError, ConfigTypeError):  # a machine's: as it is
            raise
        raise MachineError(f"machine {m.name!r} ({m.source}): {exc}", exc.field, exc.value, exc.allowed,
                           exc.hint) from None


def _machine_network(name: str | Machine, partition: list[int] | None, mode: str, layout: str):
    """``(machine, network)`` of a machine config, its mode, layout, name and partition checked."""
    require(mode in MACHINE_MODES, "topology.mode", mode, f"one of {list(MACHINE_MODES)}")
    require(layout in MACHINE_LAYOUTS, "topology.layout", layout, f"one of {list(MACHINE_LAYOUTS)}")
    try:
        m = load_machine(name)
    except UnknownMachineError as exc:
        raise ConfigError("topology.name", name, str(exc)) from None
    try:
        return m, m.network(partition, mode)
    except (MachineError, PartitionError) as exc:
        whole = "" if partition is None else " topology.partition=null takes the whole machine."
        if partition is not None and list(partition) == [1, 1, 1, 1]:  # (conf/topology/machine.yaml's default)
            whole += " [1, 1, 1, 1] is topology=machine's default partition (one Blue Gene/Q midplane)."
        raise ConfigError("topology.partition", partition, str(exc), whole.strip() or None) from None


def _check_keys_read(m: Machine, net, partition: list[int] | None, mode: str, layout: str) -> None:
    """Refuse a mode or a layout that changes nothing here (:func:`~evaluator.errors.refuse_ignored`): the
    builder's check, and a sweep's over its points without building (:func:`_unread`)."""
    modes, why = m.modes(partition)
    refuse_ignored(mode in modes, "topology.mode", mode, f"{' or '.join(map(repr, modes))} here: {why}",
                   "Drop topology.mode (auto: the machine's own way).")
    refuse_ignored(net.whole or layout == "real", "topology.layout", layout, "'real' (the default) here: the "
                   f"partition {partition} is a torus of its own (mode {mode}), a bare torus whatever the layout",
                   "Drop topology.layout, or use topology.mode=embedded (the host torus, where the layout acts).")
    refuse_ignored(not net.whole or layout == "real" or m.has_node_layout(), "topology.layout", layout,
                   f"'real' (the default) on {m.name}: its file gives no node classes, service or down nodes "
                   f"and no features, so its torus is bare whatever the layout (the layout is read on a machine "
                   f"whose file sets node_classes, service or down routers or fractions, or features, such as "
                   f"BlueWaters)", "Drop topology.layout.")


def _unread(cfg: ConfigOf["MachineTopologyConfig"]) -> None:
    """The refusals of :func:`_check_keys_read` for a config, building no topology."""
    partition = None if cfg.partition is None else list(cfg.partition)
    m, net = _machine_network(cfg.name, partition, cfg.mode, cfg.layout)
    _check_keys_read(m, net, partition, cfg.mode, cfg.layout)


def machine_topology(name: str | Machine, partition: list[int] | None = None, mode: str = "auto",
                     layout: str = "real", latency: bool = False) -> Topology:
    """Topology of a catalogue machine, or of one of its partitions.

    ``own``: the partition is a torus of its own (Blue Gene/Q: ``4A x 4B x 4C x
    4D x 2`` nodes, wrap links closing inside the partition). ``embedded``:
    the whole host torus; the job's sub-prism is chosen by the placement
    (``subprism``) and its traffic routes over the host. ``auto``: the
    machine's own way (own for Blue Gene/Q, embedded for torus machines). A
    machine given by a topology config (``kind: topology``) is always whole.

    ``layout``: ``real`` (the host torus of a torus machine carries its node
    classes, service and down nodes, as a :class:`MachineTorusTopology`;
    placements never give a job a service or down node) or ``ideal`` (every
    node a compute node). A partition in ``own`` mode is a bare torus.

    ``latency``: give the network the machine's published latency model (its file's ``latency`` block;
    :mod:`evaluator.latency`); False (the default): none, the bandwidth model alone.
    """
    m, net = _machine_network(name, partition, mode, layout)
    _check_keys_read(m, net, partition, mode, layout)
    topo = _build_network(m, net.config)
    topo = dataclasses.replace(topo, name=net.name or f"{m.name} {topo.name}")
    if latency and m.latency is not None:
        try:
            topo = topo.with_latency(latency_from_config(None, base=m.latency))
        except ConfigError as exc:
            raise MachineError(f"machine {m.name!r} ({m.source}): {exc}", exc.field, exc.value, exc.allowed,
                               exc.hint) from None
    nodes = m.node_layout() if (layout == "real" and net.whole) else None
    if nodes is None:
        return topo
    fields = {f.name: getattr(topo, f.name) for f in dataclasses.fields(topo)}
    return MachineTorusTopology(**fields, machine=m.name, node_class=nodes.node_class, node_class_names=nodes.names,
                                features=nodes.features)


@dataclass
class MachineTopologyConfig:
    """A machine of the catalogue (``conf/machine/``), whole or one partition.

    ``partition``: midplanes (BG/Q) or routers (torus machines), null for the
    whole machine. ``mode``: ``own`` (the partition is its own torus, as on
    Blue Gene/Q), ``embedded`` (the host torus; place tasks with
    ``placement=subprism``, as on Cray Gemini) or ``auto`` (own for BG/Q,
    embedded for torus machines). ``layout``: ``real`` (service and down
    nodes and node classes from the machine file; never allocated) or
    ``ideal`` (every node a compute node). A machine of kind ``topology``
    (its file holds a topology config) is always whole: ``partition`` null.
    """

    kind: str = "machine"
    name: str = "Mira"
    partition: Optional[list[int]] = None
    mode: str = "auto"
    layout: str = "real"
    latency: LatencyConfig = field(default_factory=LatencyConfig)  # evaluator.latency (SI units)

def _from_config(cfg: ConfigOf[MachineTopologyConfig]) -> Topology:
    return machine_topology(cfg.name, None if cfg.partition is None else list(cfg.partition), cfg.mode,
                            cfg.layout, latency=latency_wanted(cfg.latency))


def kind(registry: Callable[[], Any]) -> TopologyKind:
    """The ``machine`` topology kind; ``registry()`` returns the topology registry a machine's network is built
    with."""
    _REGISTRY[:] = [registry]
    return TopologyKind("machine", MachineTopologyConfig, _from_config, unread=_unread)
