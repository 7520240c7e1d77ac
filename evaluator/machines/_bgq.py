"""``kind: bgq``: a Blue Gene/Q system described in midplanes; each partition is a torus of its own.

Schema (:class:`BgqMachineConfig`)::

    name: Mira                 # str, matched case-insensitively
    kind: bgq
    midplanes: [4, 4, 3, 2]    # A, B, C, D midplanes (each 4x4x4x4x2 = 512 nodes)
    link_bandwidth: 2.0e+9     # bytes/s per direction, one number (every dimension alike)
    allowed_partitions: null   # or a list of shapes in midplanes (compared up to rotation)
    injection_bandwidth: null  # bytes/s per direction per node; null: not modelled
    routing_order: longest_first   # longest_first | as_given (dimension-order routing)
    nodes_per_router: 1        # 1 (optional)
    description: ""            # optional free text (source of the numbers)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, Optional

from .._types import ConfigOf
from .base import MachineKind, MachineNetwork, PartitionTorus, TorusMachine, int_tuple, machine_error, positive, \
    shape_text, shapes

__all__ = ["BGQ_MIDPLANE_NODE_DIMS", "BgqMachine", "BgqMachineConfig", "BGQ"]

BGQ_MIDPLANE_NODE_DIMS: tuple[int, ...] = (4, 4, 4, 4, 2)
"""Nodes of one Blue Gene/Q midplane along A, B, C, D, E (512 nodes)."""

_BW = "a finite number > 0 (bytes/s per direction; one number for kind 'bgq', every dimension alike)"


@dataclass
class BgqMachineConfig:
    """A Blue Gene/Q machine in midplanes (see the module docstring)."""

    name: str
    midplanes: list[int] = field(metadata={"allowed": "a list of 4 positive integers (A, B, C, D midplanes)"})
    link_bandwidth: float = field(metadata={"allowed": _BW})
    kind: str = "bgq"
    allowed_partitions: Optional[list[list[int]]] = None
    injection_bandwidth: Optional[float] = None
    routing_order: Literal["longest_first", "as_given"] = "longest_first"
    nodes_per_router: int = 1
    description: str = ""
    latency: Optional[dict[str, Any]] = None  # the network's latency model (evaluator.latency; SI units)


@dataclass(frozen=True, kw_only=True)
class BgqMachine(TorusMachine):
    """A Blue Gene/Q system allocated in whole midplanes; each partition is its own 5D torus (wrap links close
    inside it). ``dims`` is the node torus ``4A x 4B x 4C x 4D x 2``; ``midplanes`` is ``(A, B, C, D)``."""

    midplanes: tuple[int, ...]

    kind: ClassVar[str] = "bgq"
    unit: ClassVar[str] = "midplane"
    unit_field: ClassVar[str] = "midplanes"
    default_mode: ClassVar[str] = "own"
    enumerates_sizes: ClassVar[bool] = True
    partition_noun: ClassVar[str] = "node torus"
    partition_text: ClassVar[str] = "each partition is its own torus"

    @property
    def unit_dims(self) -> tuple[int, ...]:
        return self.midplanes

    @property
    def nodes_per_unit(self) -> int:
        return math.prod(BGQ_MIDPLANE_NODE_DIMS)

    @property
    def label(self) -> str:
        return f"{self.name} (bgq, {shape_text(self.midplanes)} midplanes, {self.n_nodes} nodes)"

    def canonical(self, shape: Sequence[int]) -> tuple[int, ...]:
        """Sorted descending: every rotation of a midplane cuboid is the same partition."""
        return tuple(sorted((int(s) for s in shape), reverse=True))

    def partition_torus(self, shape: Sequence[int]) -> PartitionTorus:
        """The partition's own node torus ``4A x 4B x 4C x 4D x 2``, every dimension wrapped."""
        return PartitionTorus(_node_dims(shape), True, self.link_bandwidth[0], None, 1)

    def _network(self, shape: tuple[int, ...] | None) -> MachineNetwork:
        mp = list(self.midplanes if shape is None else shape)
        config = {"kind": "bgq", "midplanes": mp, "link_bandwidth": self.link_bandwidth[0],
                  "injection_bandwidth": self.injection_bandwidth}
        return MachineNetwork(config, f"{self.name} {shape_text(mp)} midplanes", shape is None)


def _node_dims(midplanes: Sequence[int]) -> tuple[int, ...]:
    return tuple(4 * int(m) for m in midplanes) + (2,)


def _build(cfg: ConfigOf[BgqMachineConfig], source: str) -> BgqMachine:
    error = machine_error(cfg.name, source)
    midplanes = int_tuple(error, "midplanes", cfg.midplanes, 4)
    if cfg.nodes_per_router != 1:
        raise error("nodes_per_router", cfg.nodes_per_router, "1 for kind 'bgq'")
    bw = positive(error, "link_bandwidth", cfg.link_bandwidth)
    inj = None if cfg.injection_bandwidth is None else positive(error, "injection_bandwidth", cfg.injection_bandwidth)
    dims = _node_dims(midplanes)
    return BgqMachine(name=cfg.name, description=cfg.description.strip(), source=source, latency=cfg.latency, dims=dims,
                      wrap=(True,) * len(dims), link_bandwidth=(bw,) * len(dims), nodes_per_router=1,
                      allowed_partitions=shapes(error, "allowed_partitions", cfg.allowed_partitions, midplanes,
                                                "midplanes"),
                      injection_bandwidth=inj, routing_order=cfg.routing_order, midplanes=midplanes)


BGQ = MachineKind("bgq", BgqMachineConfig, _build)
