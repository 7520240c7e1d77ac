"""A machine of the catalogue (``conf/machine/``) as a topology, whole or one partition."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Optional

import numpy as np

from ..errors import ConfigError, MachineError, PartitionError, UnknownMachineError, require
from ..machines import NON_COMPUTE_CLASSES, check_partition, load_machine
from ._torus import TorusTopology, bgq_partition, torus
from .base import TopologyKind

__all__ = ["machine_topology", "MACHINE_MODES", "MACHINE_LAYOUTS", "MachineTorusTopology", "MachineTopologyConfig",
           "MACHINE"]

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
        ``(default class, *named classes, "service", "down")`` (:meth:`evaluator.machines.Machine.router_classes`).
    features : tuple of Region
        The machine's predefined node sets.
    """

    machine: str = ""
    node_class: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0, np.int8))
    node_class_names: tuple[str, ...] = ()
    features: tuple = ()

    def compute_mask(self) -> np.ndarray:
        """Whether each node is a compute node (never a service or down node), shape [node]."""
        bad = [i for i, n in enumerate(self.node_class_names) if n in NON_COMPUTE_CLASSES]
        return ~np.isin(self.node_class, bad)


def machine_topology(name: str, partition: list[int] | None = None, mode: str = "auto",
                     layout: str = "real") -> TorusTopology:
    """Topology of a catalogue machine, or of one of its partitions.

    ``own``: the partition is a torus of its own (Blue Gene/Q: ``4A x 4B x 4C x
    4D x 2`` nodes, wrap links closing inside the partition). ``embedded``:
    the whole host torus; the job's sub-prism is chosen by the placement
    (``subprism``) and its traffic routes over the host.

    ``layout``: ``real`` (the host torus of a torus machine carries its node
    classes, service and down nodes, as a :class:`MachineTorusTopology`;
    placements never give a job a service or down node) or ``ideal`` (every
    node a compute node). A partition in ``own`` mode is a bare torus.
    """
    require(mode in MACHINE_MODES, "topology.mode", mode, f"one of {list(MACHINE_MODES)}")
    require(layout in MACHINE_LAYOUTS, "topology.layout", layout, f"one of {list(MACHINE_LAYOUTS)}")
    try:
        m = load_machine(name)
    except UnknownMachineError as exc:
        raise ConfigError("topology.name", name, str(exc)) from None
    try:
        shape = None if partition is None else check_partition(m, partition)
    except (MachineError, PartitionError) as exc:
        raise ConfigError("topology.partition", partition, str(exc)) from None
    if mode == "auto":
        mode = "own" if m.kind == "bgq" else "embedded"
    bw = list(m.link_bandwidth)
    if m.kind == "bgq":
        mp = shape if (mode == "own" and shape is not None) else m.midplanes
        return bgq_partition(list(mp), link_bandwidth=bw[0], injection_bandwidth=m.injection_bandwidth,
                             name=f"{m.name} " + ("x".join(map(str, mp)) + " midplanes"))
    dims = list(shape) if (mode == "own" and shape is not None) else list(m.dims)
    wrap = True if (mode == "own" and shape is not None) else list(m.wrap)
    topo = torus(dims, wrap=wrap, link_bandwidth=bw, nodes_per_router=m.nodes_per_router,
                 injection_bandwidth=m.injection_bandwidth, name=f"{m.name} " + "x".join(map(str, dims)))
    if layout == "ideal" or tuple(dims) != tuple(m.dims) or not (m.has_layout or m.features):
        return topo
    names, code = m.router_classes()
    fields = {f.name: getattr(topo, f.name) for f in dataclasses.fields(topo)}
    node_class = np.repeat(code, m.nodes_per_router)
    node_class.setflags(write=False)
    return MachineTorusTopology(**fields, machine=m.name, node_class=node_class, node_class_names=names,
                                features=m.features)


@dataclass
class MachineTopologyConfig:
    """A machine of the catalogue (``conf/machine/``), whole or one partition.

    ``partition``: midplanes (BG/Q) or routers (torus machines), null for the
    whole machine. ``mode``: ``own`` (the partition is its own torus, as on
    Blue Gene/Q), ``embedded`` (the host torus; place tasks with
    ``placement=subprism``, as on Cray Gemini) or ``auto`` (own for BG/Q,
    embedded for torus machines). ``layout``: ``real`` (service and down
    nodes and node classes from the machine file; never allocated) or
    ``ideal`` (every node a compute node).
    """

    kind: str = "machine"
    name: str = "Mira"
    partition: Optional[list[int]] = None
    mode: str = "auto"
    layout: str = "real"


def _from_config(cfg: MachineTopologyConfig) -> TorusTopology:
    return machine_topology(cfg.name, None if cfg.partition is None else list(cfg.partition), cfg.mode,
                            cfg.layout)


MACHINE = TopologyKind("machine", MachineTopologyConfig, _from_config)
