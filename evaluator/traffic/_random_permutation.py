"""Seeded random permutation: each task sends to one task."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from ..errors import check_memory, check_seed, positive_float, positive_int
from .base import Traffic, TrafficKind, tasks_or_nodes

__all__ = ['random_permutation', 'RandomPermutationConfig', 'RANDOM_PERMUTATION']


def random_permutation(n_tasks: int, bytes_per_task: float = 1.0, seed: int = 0) -> Traffic:
    """Each task sends ``bytes_per_task`` to ``perm[task]`` of a seeded random permutation.

    Fixed points (a task sending to itself) are kept; they carry no link load.
    """
    n = positive_int("traffic.n_tasks", n_tasks)
    b = positive_float("traffic.bytes", bytes_per_task)
    seed = check_seed("traffic.seed", seed)
    check_memory("traffic.n_tasks", n, 40.0 * n, f"the {n} flows of a random permutation")
    perm = np.random.default_rng(seed).permutation(n)
    return Traffic(n, np.arange(n, dtype=np.int64), perm.astype(np.int64), np.full(n, b), f"permutation(seed={seed})")


@dataclass
class RandomPermutationConfig:
    """Random permutation: ``n_tasks`` (null: one per node), ``bytes`` per task, ``seed``."""

    kind: str = "random_permutation"
    n_tasks: Optional[int] = None
    bytes: float = 1.0e6
    seed: int = 0


RANDOM_PERMUTATION = TrafficKind(
    "random_permutation", RandomPermutationConfig,
    lambda cfg, topology: random_permutation(tasks_or_nodes(cfg.n_tasks, topology), cfg.bytes, cfg.seed))
