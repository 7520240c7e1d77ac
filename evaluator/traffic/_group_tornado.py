"""Group tornado (``group_tornado``): every node sends to its counterpart in the group ``offset`` groups on.

The adversarial pattern of Dragonfly studies ("tornado" to a routing researcher, Kim et al. 2008; BookSim2's
``bad_dragon`` with one group on): the machine's nodes fall into the coarsest groups of its hierarchy
(:meth:`~evaluator.topology.Topology.node_groups`: a Dragonfly's groups, a fat tree's top-level subtrees), and the
node at position ``j`` of group ``i`` sends ``bytes`` to the node at position ``j`` of group ``(i + offset) mod
G``, ``offset`` ``floor(G / 2)`` by default (group ``i`` to group ``i + G/2``). Every group's traffic then leaves
it over the few global links to one other group: minimal routing funnels it, Valiant spreads it. Task ``t`` is
node ``t`` (one task per node; place it with ``placement=linear``).

Not to be confused with ``traffic=tornado``, the torus-grid tornado of Dally and Towles (a shift by
``ceil(k/2) - 1`` along every dimension of a task grid).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from ..errors import ConfigError, is_int, positive_float, require
from .base import Traffic, TrafficKind

__all__ = ["group_tornado", "GroupTornadoConfig", "GROUP_TORNADO"]


def group_tornado(topology, nbytes: float = 1.0e6, offset: int | None = None) -> Traffic:
    """Every node of group ``i`` sends ``nbytes`` to its counterpart in group ``(i + offset) mod G`` (module
    docstring); ``offset`` None: ``G // 2``. Refused on a network without groups (a torus), with groups of unequal
    sizes, or with an offset that maps a group onto itself."""
    b = positive_float("traffic.bytes", nbytes)
    levels = np.asarray(topology.node_groups())
    group = levels[-1]
    G = int(group.max()) + 1 if group.size else 0
    if levels.shape[0] < 2 or G < 2:
        raise ConfigError("traffic.kind", "group_tornado",
                          f"a network whose nodes form groups (a Dragonfly's groups, a fat tree's subtrees); "
                          f"{topology.name} has {'no groups above its routers' if levels.shape[0] < 2 else 'one group'}",
                          "On a torus use traffic=tornado (the grid tornado) or traffic=shift.")
    sizes = np.bincount(group, minlength=G)
    require(bool(np.all(sizes == sizes[0])), "traffic.kind", "group_tornado",
            f"groups of one size (the network's are {sorted(set(sizes.tolist()))} nodes)")
    off = G // 2 if offset is None else offset
    require(is_int(off) and int(off) % G != 0, "traffic.offset", offset,
            f"an integer that is not a multiple of the {G} groups (null: {G // 2})")
    off = int(off)
    order = np.argsort(group, kind="stable")  # the nodes group by group, in id order within a group
    pos = np.empty(group.size, dtype=np.int64)
    pos[order] = np.arange(group.size) % sizes[0]
    members = order.reshape(G, sizes[0])  # members[g, j]: node at position j of group g
    dst = members[(group + off % G) % G, pos]  # (off % G in Python: an offset past int64 crashed NumPy)
    n = int(group.size)
    return Traffic(n, np.arange(n, dtype=np.int64), dst.astype(np.int64), np.full(n, b),
                   f"group_tornado +{off} of {G} groups")


@dataclass
class GroupTornadoConfig:
    """Group tornado: every node to its counterpart ``offset`` groups on (null: half the groups); ``bytes`` per
    node."""

    kind: str = "group_tornado"
    offset: Optional[int] = None
    bytes: float = 1.0e6


GROUP_TORNADO = TrafficKind("group_tornado", GroupTornadoConfig,
                            lambda cfg, topology: group_tornado(topology, cfg.bytes, cfg.offset))
