"""``kind: topology``: a machine whose network is any registered topology kind's config.

Schema (:class:`TopologyMachineConfig`)::

    name: SmallFly
    kind: topology
    description: "where the numbers come from"     # optional free text
    topology:                  # a topology config, as conf/topology/<kind>.yaml holds it, with its kind
      kind: dragonfly
      p: 2
      a: 4
      h: 2

A new network (a fat tree, ...) is then one YAML file in ``conf/machine/``: the topology block is checked
against its kind's schema and built by the topology registry when the machine's topology is asked for
(:func:`evaluator.topology.machine_topology`, ``topology=machine topology.name=SmallFly``). Such a machine has
no torus geometry and no cuboid partitions: tools that need them (tiles, the partition analysis) refuse it
(:meth:`~evaluator.machines.base.Machine.torus`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Optional

from .._types import ConfigOf
from ..errors import PartitionError
from .base import Machine, MachineKind, MachineNetwork, member_kinds, TorusMachine, machine_error

__all__ = ["TopologyMachine", "TopologyMachineConfig", "TOPOLOGY"]


@dataclass
class TopologyMachineConfig:
    """A machine given by a topology config (see the module docstring)."""

    name: str
    topology: dict[str, Any] = field(metadata={
        "allowed": "a topology config: a mapping with the topology's kind and its keys, as conf/topology/<kind>.yaml"})
    kind: str = "topology"
    description: str = ""
    latency: Optional[dict[str, Any]] = None  # the network's latency model (evaluator.latency; SI units)


@dataclass(frozen=True, kw_only=True)
class TopologyMachine(Machine):
    """A machine whose network is ``topology``, a topology config ``{"kind": ..., <its keys>}``."""

    topology: dict[str, Any] = field(hash=False)

    kind: ClassVar[str] = "topology"

    @property
    def label(self) -> str:
        return f"{self.name} (topology {self.topology['kind']})"

    def network(self, partition: Sequence[int] | None = None, mode: str = "auto") -> MachineNetwork:
        """The whole machine (any mode: a job's nodes are chosen by the placement); no partitions."""
        if partition is not None:
            kinds = " | ".join(member_kinds(TorusMachine))
            raise PartitionError(f"machine {self.name!r} (kind topology, a {self.topology['kind']} network): "
                                 f"partition {partition!r} is invalid; "
                                 f"allowed: null (the whole machine). Partitions are cuboids of torus machines "
                                 f"(kind {kinds})", "partition", partition, "null (the whole machine)")
        return MachineNetwork(dict(self.topology), None, True)


def _build(cfg: ConfigOf[TopologyMachineConfig], source: str) -> TopologyMachine:
    error = machine_error(cfg.name, source)
    kind = cfg.topology.get("kind")
    if not isinstance(kind, str) or not kind:
        raise error("topology.kind", kind, "the name of a topology kind (torus, dragonfly, ... : the stem of a "
                                           "file of conf/topology/)",
                    "The topology block is a topology config with its kind, e.g. {kind: dragonfly, p: 2, a: 4, h: 2}.")
    lat = cfg.topology.get("latency")  # (the network is built without it: it would be silently ignored)
    if lat is not None and not (isinstance(lat, dict) and all(v in (None, {}) for v in lat.values())):
        raise error("topology.latency", lat, "null (a machine's latency model is the file's "
                    "top-level latency block)", "Move the block to the top level of the file: latency: {...}.")
    return TopologyMachine(name=cfg.name, description=cfg.description.strip(), source=source, latency=cfg.latency,
                           topology=dict(cfg.topology))


TOPOLOGY = MachineKind("topology", TopologyMachineConfig, _build)
