"""A machine of the catalogue (``conf/machine/``) as a topology, whole or one partition."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from ..errors import ConfigError, MachineError, PartitionError, UnknownMachineError, require
from ..machines import check_partition, load_machine
from ._torus import TorusTopology, bgq_partition, torus
from .base import TopologyKind

__all__ = ["machine_topology", "MACHINE_MODES", "MachineTopologyConfig", "MACHINE"]

MACHINE_MODES = ("auto", "own", "embedded")


def machine_topology(name: str, partition: list[int] | None = None, mode: str = "auto") -> TorusTopology:
    """Topology of a catalogue machine, or of one of its partitions.

    ``own``: the partition is a torus of its own (Blue Gene/Q: ``4A x 4B x 4C x
    4D x 2`` nodes, wrap links closing inside the partition). ``embedded``:
    the whole host torus; the job's sub-prism is chosen by the placement
    (``subprism``) and its traffic routes over the host.
    """
    require(mode in MACHINE_MODES, "topology.mode", mode, f"one of {list(MACHINE_MODES)}")
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
    return torus(dims, wrap=wrap, link_bandwidth=bw, nodes_per_router=m.nodes_per_router,
                 injection_bandwidth=m.injection_bandwidth, name=f"{m.name} " + "x".join(map(str, dims)))


@dataclass
class MachineTopologyConfig:
    """A machine of the catalogue (``conf/machine/``), whole or one partition.

    ``partition``: midplanes (BG/Q) or routers (torus machines), null for the
    whole machine. ``mode``: ``own`` (the partition is its own torus, as on
    Blue Gene/Q), ``embedded`` (the host torus; place tasks with
    ``placement=subprism``, as on Cray Gemini) or ``auto`` (own for BG/Q,
    embedded for torus machines).
    """

    kind: str = "machine"
    name: str = "Mira"
    partition: Optional[list[int]] = None
    mode: str = "auto"


def _from_config(cfg: MachineTopologyConfig) -> TorusTopology:
    return machine_topology(cfg.name, None if cfg.partition is None else list(cfg.partition), cfg.mode)


MACHINE = TopologyKind("machine", MachineTopologyConfig, _from_config)
