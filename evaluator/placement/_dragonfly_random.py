"""Prisacari's random (sparse) placement on a Dragonfly.

Random choices (generator ``threefry``, see :mod:`evaluator.placement._seeded`,
whose permutations ``pi`` these are): group slot ``b`` is group
``pi_0(b)`` (stream 0, ``g`` items); slot ``s`` is node ``pi_1,b(s mod k)`` of
that group (``b = s div k``, ``k = tasks_per_group``; stream 1, item ``b * a*p
+ j`` is entry ``j`` of row ``b``); task ``t`` takes slot ``pi_2(t)`` (stream
2, ``n_tasks`` items).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Optional

import numpy as np

from .._types import ConfigOf
from ..errors import positive_int, require
from ..topology import Topology
from ._dragonfly_cartesian import require_dragonfly
from ._seeded import (DEFAULT_GENERATOR, SeededPlacement, check_generator, check_seed, permutation, ranks,
                      sort_keys)
from .base import (DRAGONFLY, Placement, PlacementContext, PlacementKind, check_one_per_node, check_topology,
                   fits_one_per_node)

__all__ = ['dragonfly_random', 'random_spec', 'DragonflyRandomConfig', 'DRAGONFLY_RANDOM']


def task_order(xp, k0, k1, stream: int, n, size: int):
    """The random permutation of tasks ``0 .. n-1`` of ``stream``, padded to ``size`` entries (``n`` may be
    traced): entry ``t < n`` is the rank of task ``t``'s key among the first ``n`` (entries ``>= n`` are 0)."""
    inside = xp.arange(size, dtype=xp.int32) < n
    key = xp.where(inside, sort_keys(xp, k0, k1, stream, size), xp.uint64(2**64 - 1))
    return xp.where(inside, ranks(xp, key), xp.int32(0))


def _generate(xp, k0, k1, prm, static, size):
    """Threefry random placement: ``task_node[task]`` from the seed's key words (see the module docstring)."""
    g, per_group = static
    groups = permutation(xp, k0, k1, 0, g)
    nodes = permutation(xp, k0, k1, 1, per_group, rows=g)
    k = prm["tasks_per_group"]
    slot = task_order(xp, k0, k1, 2, prm["n_tasks"], size)
    b = slot // k
    return groups[b] * xp.int32(per_group) + nodes[b, slot % k]


def random_spec(topology: Topology, n_tasks: int, tasks_per_group: int,
                seed_check: Callable[[], None] | None = None) -> SeededPlacement:
    """A random (sparse) placement with everything checked and decided but the seed (generator ``threefry``)."""
    df = require_dragonfly(topology, "dragonfly_random")
    n, k = _check(df, n_tasks, tasks_per_group, seed_check)
    return SeededPlacement(_generate, (df.g, df.a * df.p), {},
                           {"n_tasks": n, "tasks_per_group": k}, n, df.n_nodes, f"random {k}/group")


def _check(df, n_tasks, tasks_per_group, seed_check):
    n = positive_int("placement.n_tasks", n_tasks)
    k = positive_int("placement.tasks_per_group", tasks_per_group)
    check_one_per_node(df, n, "dragonfly_random", "placement.n_tasks")
    if seed_check is not None:
        seed_check()
    per_group = df.a * df.p
    require(k <= per_group, "placement.tasks_per_group", k, f"at most nodes per group a*p = {per_group}")
    require(n % k == 0, "placement.tasks_per_group", k, f"a divisor of n_tasks = {n}")
    ng = n // k
    require(ng <= df.g, "placement.tasks_per_group", k,
            f"at least n_tasks / g = {math.ceil(n / df.g)} so that {n} tasks fit in {df.g} groups")
    return n, k


def dragonfly_random(topology: Topology, n_tasks: int, tasks_per_group: int, seed: int = 0,
                     generator: str = DEFAULT_GENERATOR) -> Placement:
    """Prisacari's random (sparse) placement: ``tasks_per_group`` tasks on each of
    ``n_tasks / tasks_per_group`` randomly chosen groups, on random nodes, with
    tasks assigned to those slots in random order (seeded; ``generator``
    ``threefry`` or ``numpy`` as in :func:`~evaluator.placement.dragonfly_cartesian`)."""
    check_topology(topology)
    generator = check_generator(generator)
    df = require_dragonfly(topology, "dragonfly_random")
    if generator == "threefry":
        return random_spec(df, n_tasks, tasks_per_group, lambda: check_seed(seed, generator)).placement(seed)
    n, k = _check(df, n_tasks, tasks_per_group, lambda: check_seed(seed, generator))
    per_group = df.a * df.p
    rng = np.random.default_rng(seed)
    groups = rng.permutation(df.g)[: n // k]
    slots = np.concatenate([grp * per_group + rng.permutation(per_group)[:k] for grp in groups])
    task_node = slots[rng.permutation(n)]
    return Placement(task_node.astype(np.int64), df.n_nodes, f"random {k}/group (seed={seed})")


@dataclass
class DragonflyRandomConfig:
    """Random (sparse) placement: ``tasks_per_group`` tasks on random groups and nodes, ``seed``, ``generator``
    (threefry | numpy)."""

    kind: str = "dragonfly_random"
    tasks_per_group: Optional[int] = None
    seed: int = 0
    generator: str = DEFAULT_GENERATOR


def _from_config(cfg: ConfigOf[DragonflyRandomConfig], ctx: PlacementContext) -> Placement:
    require(cfg.tasks_per_group is not None, "placement.tasks_per_group", None, "a positive integer")
    return dragonfly_random(ctx.topology, ctx.n_tasks, cfg.tasks_per_group, cfg.seed, cfg.generator)


def _seeded(cfg: ConfigOf[DragonflyRandomConfig], ctx: PlacementContext,
            seed_check: Callable[[], None]) -> SeededPlacement | None:
    if check_generator(cfg.generator) != "threefry":
        return None
    require(cfg.tasks_per_group is not None, "placement.tasks_per_group", None, "a positive integer")
    return random_spec(ctx.topology, ctx.n_tasks, cfg.tasks_per_group, seed_check)


DRAGONFLY_RANDOM = PlacementKind("dragonfly_random", DragonflyRandomConfig, _from_config, seeded=_seeded,
                                needs=DRAGONFLY, fits=fits_one_per_node("dragonfly_random"))
