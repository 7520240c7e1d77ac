"""Prisacari's random (sparse) placement on a Dragonfly."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

import numpy as np

from ..errors import check_seed, positive_int, require
from ..topology import Topology
from ._dragonfly_cartesian import require_dragonfly
from .base import Placement, PlacementContext, PlacementKind

__all__ = ['dragonfly_random', 'DragonflyRandomConfig', 'DRAGONFLY_RANDOM']


def dragonfly_random(topology: Topology, n_tasks: int, tasks_per_group: int, seed: int = 0) -> Placement:
    """Prisacari's random (sparse) placement: ``tasks_per_group`` tasks on each of
    ``n_tasks / tasks_per_group`` randomly chosen groups, on random nodes, with
    tasks assigned to those slots in random order (seeded)."""
    df = require_dragonfly(topology, "dragonfly_random")
    n = positive_int("placement.n_tasks", n_tasks)
    k = positive_int("placement.tasks_per_group", tasks_per_group)
    seed = check_seed("placement.seed", seed)
    per_group = df.a * df.p
    require(k <= per_group, "placement.tasks_per_group", k, f"at most nodes per group a*p = {per_group}")
    require(n % k == 0, "placement.tasks_per_group", k, f"a divisor of n_tasks = {n}")
    ng = n // k
    require(ng <= df.g, "placement.tasks_per_group", k,
            f"at least n_tasks / g = {math.ceil(n / df.g)} so that {n} tasks fit in {df.g} groups")
    rng = np.random.default_rng(seed)
    groups = rng.permutation(df.g)[:ng]
    slots = np.concatenate([grp * per_group + rng.permutation(per_group)[:k] for grp in groups])
    task_node = slots[rng.permutation(n)]
    return Placement(task_node.astype(np.int64), df.n_nodes, f"random {k}/group (seed={seed})")


@dataclass
class DragonflyRandomConfig:
    """Random (sparse) placement: ``tasks_per_group`` tasks on random groups and nodes, ``seed``."""

    kind: str = "dragonfly_random"
    tasks_per_group: Optional[int] = None
    seed: int = 0


def _from_config(cfg: DragonflyRandomConfig, ctx: PlacementContext) -> Placement:
    require(cfg.tasks_per_group is not None, "placement.tasks_per_group", None, "a positive integer")
    return dragonfly_random(ctx.topology, ctx.n_tasks, cfg.tasks_per_group, cfg.seed)


DRAGONFLY_RANDOM = PlacementKind("dragonfly_random", DragonflyRandomConfig, _from_config)
