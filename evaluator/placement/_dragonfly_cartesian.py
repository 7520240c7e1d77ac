"""Prisacari's Cartesian placement on a Dragonfly (gamma tasks per group).

Random choices (generator ``threefry``, see :mod:`evaluator.placement._seeded`,
whose permutations ``pi`` these are): block ``b`` goes to group ``pi_0(b)``
(stream 0, ``g`` items), and its task with local index ``r`` (row-major in
``gamma``) to node ``pi_1,b(r)`` of that group (stream 1: item ``b * a*p + j``
is entry ``j`` of row ``b``, ``a*p`` per row).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Optional

import numpy as np

from .._types import ConfigOf
from ..errors import require
from ..topology import DragonflyTopology, Topology
from ._seeded import (DEFAULT_GENERATOR, SeededPlacement, check_generator, check_seed, permutation)
from .base import (DRAGONFLY, Placement, PlacementContext, PlacementKind, check_one_per_node, check_topology,
                   config_list, fits_one_per_node, vec)

__all__ = ['dragonfly_cartesian', 'cartesian_spec', 'require_dragonfly', 'ORDERS', 'DragonflyCartesianConfig',
           'DRAGONFLY_CARTESIAN']


ORDERS = ("random", "linear")

def require_dragonfly(topology: Topology, what: str) -> DragonflyTopology:
    DRAGONFLY.require(topology, what)
    return topology  # type: ignore[return-value]


def _generate(xp, k0, k1, prm, static, size):
    """Threefry Cartesian placement: ``task_node[task]`` from the seed's key words (see the module docstring).

    ``prm["slot"][t] = block * a*p + local``: task ``t``'s entry of the
    ``[g, a*p]`` table of (group slot, local index) -> node.
    """
    g, per_group = static
    groups = xp.where(prm["group_random"] != 0, permutation(xp, k0, k1, 0, g), xp.arange(g, dtype=xp.int32))
    nodes = xp.where(prm["node_random"] != 0, permutation(xp, k0, k1, 1, per_group, rows=g),
                     xp.arange(per_group, dtype=xp.int32)[None, :])
    table = groups[:, None] * xp.int32(per_group) + nodes
    return table.reshape(-1)[prm["slot"]]


def cartesian_spec(topology: Topology, beta: Sequence[int], gamma: Sequence[int], group_order: str = "random",
                   node_order: str = "random", seed_check: Callable[[], None] | None = None) -> SeededPlacement:
    """A Cartesian placement with everything checked and decided but the seed (generator ``threefry``).

    ``seed_check`` runs where :func:`dragonfly_cartesian` checks its seed, so
    that errors are found in the same order.
    """
    df = require_dragonfly(topology, "dragonfly_cartesian")
    be, ga, lam = _check(df, beta, gamma, group_order, node_order, seed_check)
    n = math.prod(be)
    x = np.stack(np.unravel_index(np.arange(n), be), axis=1)
    block = np.ravel_multi_index(tuple((x // np.array(ga)).T), lam)
    local = np.ravel_multi_index(tuple((x % np.array(ga)).T), ga)
    slot = block * (df.a * df.p) + local
    return SeededPlacement(_generate, (df.g, df.a * df.p), {"slot": slot.astype(np.int32)},
                           {"group_random": int(group_order == "random"), "node_random": int(node_order == "random")},
                           n, df.n_nodes, "cartesian gamma=" + "x".join(map(str, ga)))


def _check(df, beta, gamma, group_order, node_order, seed_check):
    be = vec("placement.beta", beta)
    check_one_per_node(df, math.prod(be), "dragonfly_cartesian", "traffic.beta", list(be))
    ga = vec("placement.gamma", gamma, len(be))
    for k, (b, c) in enumerate(zip(be, ga)):
        require(b % c == 0, f"placement.gamma[{k}]", c, f"a divisor of beta[{k}] = {b}")
    if seed_check is not None:
        seed_check()
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
    return be, ga, lam


def dragonfly_cartesian(topology: Topology, beta: Sequence[int], gamma: Sequence[int], seed: int = 0,
                        group_order: str = "random", node_order: str = "random",
                        generator: str = DEFAULT_GENERATOR) -> Placement:
    """Prisacari's Cartesian placement: a ``gamma`` sub-domain of tasks per group.

    The ``beta`` task grid (row-major task ids) is cut into ``lambda = beta /
    gamma`` blocks of ``gamma`` tasks; every block goes to its own Dragonfly
    group, one task per node. ``group_order`` picks which groups host the
    blocks (``random``: a seeded random choice and order; ``linear``: block
    ``b`` on group ``b``); ``node_order`` picks the nodes inside a group
    (``random`` or ``linear``: the first ``|gamma|`` nodes in id order).
    ``generator`` draws the random choices from ``seed``: ``threefry`` (the
    counter-based generator that sweeps run on the device, see
    :mod:`evaluator.placement._seeded`) or ``numpy`` (``default_rng``, the
    earlier reference).
    """
    check_topology(topology)
    generator = check_generator(generator)
    df = require_dragonfly(topology, "dragonfly_cartesian")
    if generator == "threefry":
        return cartesian_spec(df, beta, gamma, group_order, node_order,
                              lambda: check_seed(seed, generator)).placement(seed)
    seed = check_seed(seed, generator)
    be, ga, lam = _check(df, beta, gamma, group_order, node_order, None)
    per_group = df.a * df.p
    ng, nl = math.prod(ga), math.prod(lam)
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
    unless given), ``seed``, ``group_order`` and ``node_order`` (random | linear), ``generator`` (threefry |
    numpy)."""

    kind: str = "dragonfly_cartesian"
    beta: Optional[list[int]] = None
    gamma: Optional[list[int]] = None
    seed: int = 0
    group_order: str = "random"
    node_order: str = "random"
    generator: str = DEFAULT_GENERATOR


def _args(cfg: ConfigOf[DragonflyCartesianConfig], ctx: PlacementContext):
    beta = config_list(cfg.beta) if cfg.beta is not None else ctx.beta
    kind = getattr(ctx.traffic_cfg, "kind", None)
    require(beta is not None, "placement.beta", None, "a task grid beta (or a stencil traffic with beta)",
            f"traffic={kind} has no task grid: give placement.beta (a grid of {ctx.n_tasks} tasks) or another "
            f"placement (placement=linear, placement=dragonfly_random).")
    require(cfg.gamma is not None, "placement.gamma", None, "a list of tasks per group along each dimension")
    return beta, list(cfg.gamma)


def _from_config(cfg: ConfigOf[DragonflyCartesianConfig], ctx: PlacementContext) -> Placement:
    beta, gamma = _args(cfg, ctx)
    return dragonfly_cartesian(ctx.topology, beta, gamma, cfg.seed, cfg.group_order, cfg.node_order,
                               cfg.generator)


def _seeded(cfg: ConfigOf[DragonflyCartesianConfig], ctx: PlacementContext,
            seed_check: Callable[[], None]) -> SeededPlacement | None:
    if check_generator(cfg.generator) != "threefry":
        return None
    beta, gamma = _args(cfg, ctx)
    return cartesian_spec(ctx.topology, beta, gamma, cfg.group_order, cfg.node_order, seed_check)


DRAGONFLY_CARTESIAN = PlacementKind("dragonfly_cartesian", DragonflyCartesianConfig, _from_config, seeded=_seeded,
                                   needs=DRAGONFLY, fits=fits_one_per_node("dragonfly_cartesian"),
                                   drawn=lambda cfg: "random" in (cfg.group_order, cfg.node_order))
"""(The seed draws the groups' or the nodes' order where either is ``random``; with both ``linear`` it does
nothing.)"""
