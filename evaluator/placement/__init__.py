"""Task placements (one module per member, one registry line each).

:data:`KINDS` maps a config kind to its schema and builder; a new placement is
a new module here, its YAML file in ``conf/placement/`` and one line in
:data:`KINDS`.
"""

from __future__ import annotations

from .._registry import Registry
from . import _block, _dragonfly_cartesian, _dragonfly_random, _linear, _random, _subprism, _torus_block
from . import _alps, _features, _fragmented, _topaware
from ._alps import alps
from ._block import BLOCK_FILLS, block
from ._seeded import GENERATOR_ID, SeededPlacement, check_seed
from ._features import features
from ._fragmented import fragmented, free_after_history
from ._topaware import select_routers, topaware
from .nodes import alps_order, compute_mask, launch_fill_order
from .rank_order import RankOrderConfig, apply_rank_order, grid_order, with_rank_order, write_launch_files
from .hostfile import hostfile_text, hostnames, write_hostfile
from ._dragonfly_cartesian import ORDERS, dragonfly_cartesian
from ._dragonfly_random import dragonfly_random
from ._linear import linear
from ._random import fully_random
from ._subprism import subprism
from ._torus_block import torus_block
from .base import Placement, PlacementContext, PlacementKind, explicit
from ..errors import ConfigError
from ..topology import Topology

__all__ = [
    "GENERATOR_ID",
    "SeededPlacement",
    "check_seed",
    "Placement",
    "PlacementKind",
    "PlacementContext",
    "explicit",
    "linear",
    "fully_random",
    "dragonfly_cartesian",
    "dragonfly_random",
    "torus_block",
    "block",
    "BLOCK_FILLS",
    "subprism",
    "ORDERS",
    "KINDS",
    "alps",
    "fragmented",
    "free_after_history",
    "features",
    "topaware",
    "select_routers",
    "alps_order",
    "launch_fill_order",
    "compute_mask",
    "grid_order",
    "apply_rank_order",
    "with_rank_order",
    "hostnames",
    "hostfile_text",
    "write_hostfile",
    "write_launch_files",
    "RankOrderConfig",
    "placements_for",
    "placement_kind",
]

KINDS: Registry[PlacementKind] = Registry("placement", [
    _linear.LINEAR,
    _random.RANDOM,
    _dragonfly_cartesian.DRAGONFLY_CARTESIAN,
    _dragonfly_random.DRAGONFLY_RANDOM,
    _torus_block.TORUS_BLOCK,
    _block.BLOCK,
    _subprism.SUBPRISM,
    _alps.ALPS,
    _fragmented.FRAGMENTED,
    _features.FEATURES,
    _topaware.TOPAWARE,
])
"""Placement kinds by config name."""


def placements_for(topology: Topology) -> list[str]:
    """Names of the placement kinds that serve ``topology`` (:meth:`PlacementKind.serves`)."""
    return [name for name, kind in KINDS.items() if kind.serves(topology)]


def placement_kind(name: str, topology: Topology) -> PlacementKind:
    """The kind ``name`` (an unknown name is refused with the registered ones), refused with the kinds that
    serve ``topology`` when it is not one of them: checked before any of the kind's own fields."""
    kind = KINDS[name]
    if not kind.serves(topology):
        raise ConfigError("placement.kind", name, f"one of {placements_for(topology)} on a {topology.kind}",
                          f"'{name}' needs {kind.needs.text}.")
    return kind
