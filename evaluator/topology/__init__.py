"""Network topologies (one module per member, one registry line each).

* :func:`torus` (any number of dimensions, per-dimension wrap and bandwidth),
  with the presets :func:`bgq_partition` and :func:`gemini`;
* :func:`dragonfly` (p, a, h, g; consecutive or relative global arrangement);
* :func:`fat_tree`: an extended generalized fat tree (XGFT; k-ary n-trees, tapered trees);
* :func:`machine_topology`: a machine of the catalogue, whole or one partition;
* :func:`rdn`: a reconfigurable Dragonfly (global ports on optical circuit switches) in one switch configuration.

The link layout and id conventions shared by every member are in
:mod:`evaluator.topology.base`. :data:`KINDS` maps a config kind to its schema
and builder; a new topology is a new module here, its YAML file in
``conf/topology/`` and one line in :data:`KINDS`.
"""

from __future__ import annotations

from .._registry import Registry
from . import _dragonfly, _fat_tree, _machine, _rdn, _torus
from ._dragonfly import GLOBAL_ARRANGEMENTS, DragonflyTopology, dragonfly
from ._fat_tree import FatTreeTopology, fat_tree
from ._machine import MACHINE_MODES, machine_topology
from ._rdn import CONFIGURATIONS, RdnTopology, rdn
from ._torus import GEMINI_XZ_BANDWIDTH, TorusTopology, bgq_partition, gemini, torus
from .base import Topology, TopologyKind

__all__ = [
    "Topology",
    "TorusTopology",
    "DragonflyTopology",
    "torus",
    "bgq_partition",
    "gemini",
    "dragonfly",
    "FatTreeTopology",
    "fat_tree",
    "machine_topology",
    "RdnTopology",
    "rdn",
    "CONFIGURATIONS",
    "GLOBAL_ARRANGEMENTS",
    "GEMINI_XZ_BANDWIDTH",
    "MACHINE_MODES",
    "TopologyKind",
    "KINDS",
]

KINDS: Registry[TopologyKind] = Registry("topology", [
    _torus.TORUS,
    _torus.BGQ,
    _torus.GEMINI,
    _dragonfly.DRAGONFLY,
    _fat_tree.FAT_TREE,
    _machine.kind(lambda: KINDS),
    _rdn.RDN,
])
"""Topology kinds by config name."""
