"""Prisacari's Cartesian placement on a Dragonfly (gamma tasks per group)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Optional

import numpy as np

from ..errors import check_seed, require
from ..topology import DragonflyTopology, Topology
from .base import Placement, PlacementContext, PlacementKind, config_list, vec

__all__ = ['dragonfly_cartesian', 'require_dragonfly', 'ORDERS', 'DragonflyCartesianConfig', 'DRAGONFLY_CARTESIAN']


ORDERS = ("random", "linear")

def require_dragonfly(topology: Topology, what: str) -> DragonflyTopology:
    require(isinstance(topology, DragonflyTopology), "placement.kind", what,
            f"a placement for a {topology.kind}; '{what}' needs a Dragonfly topology")
    return topology  # type: ignore[return-value]


def dragonfly_cartesian(topology: Topology, beta: Sequence[int], gamma: Sequence[int], seed: int = 0,
                        group_order: str = "random", node_order: str = "random") -> Placement:
    """Prisacari's Cartesian placement: a ``gamma`` sub-domain of tasks per group.

    The ``beta`` task grid (row-major task ids) is cut into ``lambda = beta /
    gamma`` blocks of ``gamma`` tasks; every block goes to its own Dragonfly
    group, one task per node. ``group_order`` picks which groups host the
    blocks (``random``: a seeded random choice and order; ``linear``: block
    ``b`` on group ``b``); ``node_order`` picks the nodes inside a group
    (``random`` or ``linear``: the first ``|gamma|`` nodes in id order).
    """
    df = require_dragonfly(topology, "dragonfly_cartesian")
    be = vec("placement.beta", beta)
    ga = vec("placement.gamma", gamma, len(be))
    for k, (b, c) in enumerate(zip(be, ga)):
        require(b % c == 0, f"placement.gamma[{k}]", c, f"a divisor of beta[{k}] = {b}")
    seed = check_seed("placement.seed", seed)
    for field, v in (("placement.group_order", group_order), ("placement.node_order", node_order)):
        require(isinstance(v, str) and v in ORDERS, field, v, f"one of {list(ORDERS)}")
    per_group = df.a * df.p
    ng = math.prod(ga)
    require(ng <= per_group, "placement.gamma", list(ga),
            f"|gamma| <= nodes per group a*p = {per_group}; got |gamma| = {ng}", "Pick a smaller gamma.")
    lam = tuple(b // c for b, c in zip(be, ga))
    nl = math.prod(lam)
    require(nl <= df.g, "placement.gamma", list(ga),
            f"|lambda| = |beta/gamma| <= g = {df.g} groups; got lambda = {list(lam)} ({nl} groups)",
            "Pick a larger gamma.")
    rng = np.random.default_rng(seed)
    n = math.prod(be)
    x = np.stack(np.unravel_index(np.arange(n), be), axis=1)
    block = np.ravel_multi_index(tuple((x // np.array(ga)).T), lam)
    local = np.ravel_multi_index(tuple((x % np.array(ga)).T), ga)
    groups = rng.permutation(df.g)[:nl] if group_order == "random" else np.arange(nl)
    if node_order == "random":
        slots = np.stack([rng.permutation(per_group)[:ng] for _ in range(nl)])
    else:
        slots = np.tile(np.arange(ng), (nl, 1))
    task_node = groups[block] * per_group + slots[block, local]
    label = "cartesian gamma=" + "x".join(map(str, ga))
    return Placement(task_node.astype(np.int64), df.n_nodes, label)


@dataclass
class DragonflyCartesianConfig:
    """Cartesian placement: ``gamma`` tasks per group along each dimension (``beta`` from the stencil traffic
    unless given), ``seed``, ``group_order`` and ``node_order`` (random | linear)."""

    kind: str = "dragonfly_cartesian"
    beta: Optional[list[int]] = None
    gamma: Optional[list[int]] = None
    seed: int = 0
    group_order: str = "random"
    node_order: str = "random"


def _from_config(cfg: DragonflyCartesianConfig, ctx: PlacementContext) -> Placement:
    beta = config_list(cfg.beta) if cfg.beta is not None else ctx.beta
    require(beta is not None, "placement.beta", None, "a task grid beta (or a stencil traffic with beta)")
    require(cfg.gamma is not None, "placement.gamma", None, "a list of tasks per group along each dimension")
    return dragonfly_cartesian(ctx.topology, beta, list(cfg.gamma), cfg.seed, cfg.group_order, cfg.node_order)


DRAGONFLY_CARTESIAN = PlacementKind("dragonfly_cartesian", DragonflyCartesianConfig, _from_config)
