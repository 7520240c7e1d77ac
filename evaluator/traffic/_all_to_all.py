"""Uniform all-to-all: every task sends the same bytes to every other task."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from ..errors import check_memory, positive_float, positive_int
from .base import DenseTraffic, Traffic, TrafficKind, dense, tasks_or_nodes

__all__ = ['all_to_all', 'all_to_all_dense', 'AllToAllConfig', 'ALL_TO_ALL']


def all_to_all(n_tasks: int, bytes_per_pair: float = 1.0) -> Traffic:
    """Uniform all-to-all: every task sends ``bytes_per_pair`` to every other task."""
    n = positive_int("traffic.n_tasks", n_tasks)
    b = positive_float("traffic.bytes", bytes_per_pair)
    check_memory("traffic.n_tasks", n, 56.0 * n * n, f"the {n * (n - 1)} flows of a sparse all-to-all",
                 "Use the dense all-to-all (traffic=all_to_all in a config, evaluator.structured.all_to_all).")
    s, d = np.divmod(np.arange(n * n, dtype=np.int64), n)
    keep = s != d
    return Traffic(n, s[keep], d[keep], np.full(int(keep.sum()), b), "all-to-all")


def all_to_all_dense(n_tasks: int, bytes_per_pair: float = 1.0) -> DenseTraffic:
    """Uniform all-to-all: every task sends ``bytes_per_pair`` to every other task.

    The same pattern as :func:`all_to_all`, without the
    ``n_tasks**2`` flow list.
    """
    return dense(n_tasks, 1.0, 1.0, positive_float("traffic.bytes", bytes_per_pair), name="all-to-all")



@dataclass
class AllToAllConfig:
    """Uniform all-to-all (dense: never materialises n^2 flows); ``n_tasks`` null: one per node; ``bytes`` per pair."""

    kind: str = "all_to_all"
    n_tasks: Optional[int] = None
    bytes: float = 1.0e6


ALL_TO_ALL = TrafficKind("all_to_all", AllToAllConfig,
                         lambda cfg, topology: all_to_all_dense(tasks_or_nodes(cfg.n_tasks, topology), cfg.bytes))
