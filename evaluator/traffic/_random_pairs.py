"""Random pairs: pairwise exchanges between randomly matched tasks (Fiedler's "random pairs", one stage of an
all-to-all)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from ..errors import check_memory, check_seed, positive_float, positive_int
from .base import Traffic, TrafficKind, tasks_or_nodes

__all__ = ["random_pairs", "RandomPairsConfig", "RANDOM_PAIRS"]


def random_pairs(n_tasks: int, bytes_per_task: float = 1.0, seed: int = 0) -> Traffic:
    """A seeded random perfect matching of the tasks; each pair exchanges ``bytes_per_task`` both ways.

    The matching pairs consecutive entries of a random permutation (``numpy.random.default_rng(seed)``); with an
    odd number of tasks the last task of the permutation sits the stage out.
    """
    n = positive_int("traffic.n_tasks", n_tasks)
    b = positive_float("traffic.bytes", bytes_per_task)
    seed = check_seed("traffic.seed", seed)
    check_memory("traffic.n_tasks", n, 48.0 * n, f"the {n} flows of random pairs")
    perm = np.random.default_rng(seed).permutation(n)
    m = n // 2 * 2
    a, c = perm[0:m:2], perm[1:m:2]
    src = np.concatenate([a, c]).astype(np.int64)
    dst = np.concatenate([c, a]).astype(np.int64)
    return Traffic(n, src, dst, np.full(src.size, b), f"random pairs(seed={seed})")


@dataclass
class RandomPairsConfig:
    """Random pairs: ``n_tasks`` (null: one per node), ``bytes`` each task sends to its partner, ``seed``."""

    kind: str = "random_pairs"
    n_tasks: Optional[int] = None
    bytes: float = 1.0e6
    seed: int = 0


RANDOM_PAIRS = TrafficKind(
    "random_pairs", RandomPairsConfig,
    lambda cfg, topology: random_pairs(tasks_or_nodes(cfg.n_tasks, topology), cfg.bytes, cfg.seed))
