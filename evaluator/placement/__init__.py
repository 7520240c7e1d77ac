"""Task placements (one module per member, one registry line each).

:data:`KINDS` maps a config kind to its schema and builder; a new placement is
a new module here, its YAML file in ``conf/placement/`` and one line in
:data:`KINDS`.
"""

from __future__ import annotations

from .._registry import Registry
from . import _dragonfly_cartesian, _dragonfly_random, _linear, _random, _subprism, _torus_block
from ._dragonfly_cartesian import ORDERS, dragonfly_cartesian
from ._dragonfly_random import dragonfly_random
from ._linear import linear
from ._random import fully_random
from ._subprism import subprism
from ._torus_block import torus_block
from .base import Placement, PlacementContext, PlacementKind, explicit

__all__ = [
    "Placement",
    "PlacementKind",
    "PlacementContext",
    "explicit",
    "linear",
    "fully_random",
    "dragonfly_cartesian",
    "dragonfly_random",
    "torus_block",
    "subprism",
    "ORDERS",
    "KINDS",
]

KINDS: Registry[PlacementKind] = Registry("placement", [
    _linear.LINEAR,
    _random.RANDOM,
    _dragonfly_cartesian.DRAGONFLY_CARTESIAN,
    _dragonfly_random.DRAGONFLY_RANDOM,
    _torus_block.TORUS_BLOCK,
    _subprism.SUBPRISM,
])
"""Placement kinds by config name."""
