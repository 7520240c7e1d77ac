"""Many-to-many (Bui et al.): every source sends the same bytes to every destination."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Optional

import numpy as np

from ..errors import check_memory, is_int, positive_float, positive_int, refuse_ignored, require
from .base import DenseTraffic, Traffic, TrafficKind, dense

__all__ = ['MANY_TO_MANY_MODES', 'many_to_many_layout', 'many_to_many', 'many_to_many_dense', 'ManyToManyConfig', 'MANY_TO_MANY']


MANY_TO_MANY_MODES = ("disjoint", "overlap", "subset", "superset")


def _check_mode(mode: str, overlap: int | None) -> None:
    """``mode`` is a mode, and ``overlap`` is null unless the mode reads it (the layout's check, and a sweep's
    over its points without building: :attr:`~evaluator._registry.Kind.unread`)."""
    require(isinstance(mode, str) and mode in MANY_TO_MANY_MODES, "traffic.mode", mode,
            f"one of {list(MANY_TO_MANY_MODES)}")
    refuse_ignored(overlap is None or mode == "overlap", "traffic.overlap", overlap,
                   f"null (the default) with traffic.mode={mode!r}: only mode 'overlap' reads it",
                   "Drop traffic.overlap, or use traffic.mode=overlap.")


def many_to_many_layout(n_sources: int, n_destinations: int, mode: str = "disjoint", overlap: int | None = None,
                        n_tasks: int | None = None) -> tuple[int, int, int, int]:
    """Validated ``(m, n, first_destination, n_tasks)`` of a many-to-many pattern (see :func:`many_to_many`)."""
    m = positive_int("traffic.n_sources", n_sources)
    n = positive_int("traffic.n_destinations", n_destinations)
    _check_mode(mode, overlap)
    if mode == "disjoint":
        start = m
    elif mode == "overlap":
        require(overlap is None or is_int(overlap), "traffic.overlap", overlap, f"an integer in [0, {min(m, n)}]")
        ov = min(m, n) // 2 if overlap is None else int(overlap)
        require(0 <= ov <= min(m, n), "traffic.overlap", overlap, f"an integer in [0, {min(m, n)}]")
        start = m - ov
    elif mode == "subset":
        require(n <= m, "traffic.n_destinations", n, f"<= n_sources = {m} for mode 'subset'")
        start = 0
    else:
        require(m <= n, "traffic.n_sources", m, f"<= n_destinations = {n} for mode 'superset'")
        start = 0
    needed = max(m, start + n)
    require(n_tasks is None or is_int(n_tasks), "traffic.n_tasks", n_tasks,
            f"an integer >= {needed} (sources and destinations), or null")
    nt = needed if n_tasks is None else int(n_tasks)
    require(nt >= needed, "traffic.n_tasks", n_tasks, f"an integer >= {needed} (sources and destinations)")
    return m, n, start, nt


def many_to_many(n_sources: int, n_destinations: int, bytes_per_pair: float = 1.0, mode: str = "disjoint",
                 overlap: int | None = None, n_tasks: int | None = None) -> Traffic:
    """Many-to-many (Bui et al.): every source sends ``bytes_per_pair`` to every destination.

    Sources are tasks ``0 .. m-1``. Destinations are ``n`` tasks that are

    * ``disjoint``: ``m .. m+n-1``;
    * ``overlap``: share ``overlap`` tasks with the sources (default ``min(m, n) // 2``):
      ``m-overlap .. m-overlap+n-1``;
    * ``subset``: the destinations are a subset of the sources (``n <= m``): ``0 .. n-1``;
    * ``superset``: the sources are a subset of the destinations (``m <= n``): ``0 .. n-1``.

    A task never sends to itself.
    """
    b = positive_float("traffic.bytes", bytes_per_pair)
    m, n, start, nt = many_to_many_layout(n_sources, n_destinations, mode, overlap, n_tasks)
    check_memory("traffic.n_sources", m, 56.0 * m * n, f"the {m} x {n} flows of a sparse many-to-many",
                 "Use the dense many-to-many (traffic=many_to_many in a config, evaluator.structured.many_to_many).")
    srcs = np.arange(m)
    dsts = np.arange(start, start + n)
    s, d = np.meshgrid(srcs, dsts, indexing="ij")
    s, d = s.ravel(), d.ravel()
    keep = s != d
    return Traffic(nt, s[keep].astype(np.int64), d[keep].astype(np.int64), np.full(int(keep.sum()), b),
                   f"many-to-many {m}->{n} ({mode})")


def many_to_many_dense(n_sources: int, n_destinations: int, bytes_per_pair: float = 1.0, mode: str = "disjoint",
                 overlap: int | None = None, n_tasks: int | None = None) -> DenseTraffic:
    """Many-to-many (Bui et al.) as dense traffic; same arguments and task layout as
    :func:`many_to_many`."""
    b = positive_float("traffic.bytes", bytes_per_pair)  # (refused as traffic.bytes_per_pair, a key no config has)
    m, n, start, nt = many_to_many_layout(n_sources, n_destinations, mode, overlap, n_tasks)
    check_memory("traffic.n_tasks", nt, 32.0 * nt, f"the weight vectors of {nt} tasks")
    ws = np.zeros(nt)
    wd = np.zeros(nt)
    ws[:m] = 1.0
    wd[start:start + n] = 1.0
    t = dense(nt, ws, wd, b)
    return dataclasses.replace(t, name=f"many-to-many {m}->{n} ({mode})")


@dataclass
class ManyToManyConfig:
    """Many-to-many (dense): ``n_sources``, ``n_destinations``, ``mode`` disjoint | overlap | subset | superset,
    ``overlap``, ``bytes`` per pair, ``n_tasks`` (null: just the sources and destinations)."""

    kind: str = "many_to_many"
    n_sources: int = 16
    n_destinations: int = 16
    mode: str = "disjoint"
    overlap: Optional[int] = None
    bytes: float = 1.0e6
    n_tasks: Optional[int] = None


MANY_TO_MANY = TrafficKind(
    "many_to_many", ManyToManyConfig,
    lambda cfg, topology: many_to_many_dense(cfg.n_sources, cfg.n_destinations, cfg.bytes, cfg.mode, cfg.overlap,
                                             cfg.n_tasks),
    unread=lambda cfg: _check_mode(cfg.mode, cfg.overlap))
