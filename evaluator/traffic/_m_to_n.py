"""``m_to_n``: Bui et al.'s many-to-many families where each source sends to a few of the destinations.

``m`` sources (tasks ``0 .. m-1``) and ``n`` destinations; source ``i`` sends
``bytes`` to the ``d = dests_per_source`` destinations ``(i d + t) mod n``,
``t = 0 .. d-1`` (with ``m d = n`` every destination receives from exactly
one source). The destinations (``mode``):

* ``disjoint``: the last ``n`` tasks (``n_tasks - n .. n_tasks - 1``), or from
  ``dst_start`` (tasks not among the sources);
* ``overlap``: ``n`` tasks starting ``overlap`` tasks before the last source
  (``m - overlap ..``; ``overlap`` null: ``min(m, n) // 2``);
* ``subset_concentrated`` (Bui Type 1): the first ``n`` sources;
* ``subset_spread`` (Bui Type 2, I/O aggregation): every ``(m // n)``-th source.

A pair of a task with itself (subset and overlap modes) is left out. The
paper's experiments (Sec. VI-D) on a partition of ``p`` nodes, one task per
node: constant ratio ``m = p/16``, ``n = p/2``, ``d = 8``, 8 MB; fixed
``m = 128``, ``n = 256``, ``d = 2``, 8 MB for ``p`` from 512 to 8,192.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from ..errors import ConfigError, check_memory, is_int, positive_float, positive_int, refuse_ignored, require
from .base import Traffic, TrafficKind, tasks_or_nodes

__all__ = ["M_TO_N_MODES", "m_to_n", "MToNConfig", "M_TO_N"]

M_TO_N_MODES = ("disjoint", "overlap", "subset_concentrated", "subset_spread")
_MAX_TASKS = int(np.iinfo(np.int64).max)  # (n_tasks = 10**20 crashed with an OverflowError)


def _check_mode(mode: str, overlap, dst_start) -> None:
    """``mode`` is a mode, and ``overlap`` and ``dst_start`` are null unless the mode reads them (the builder's
    check, and a sweep's over its points without building: :attr:`~evaluator._registry.Kind.unread`)."""
    require(isinstance(mode, str) and mode in M_TO_N_MODES, "traffic.mode", mode, f"one of {list(M_TO_N_MODES)}")
    for field, value, reader in (("traffic.overlap", overlap, "overlap"), ("traffic.dst_start", dst_start, "disjoint")):
        refuse_ignored(value is None or mode == reader, field, value, f"null (the default) with traffic.mode={mode!r}: "
                       f"only mode {reader!r} reads {field.split('.')[1]}",
                       f"Drop {field}, or use traffic.mode={reader}.")


def _destinations(m: int, n: int, nt: int, mode: str, overlap, dst_start) -> np.ndarray:
    _check_mode(mode, overlap, dst_start)
    if mode in ("subset_concentrated", "subset_spread"):
        require(n <= m, "traffic.n_destinations", n, f"<= n_sources = {m} for mode {mode!r}")
        return np.arange(n) if mode == "subset_concentrated" else np.arange(n) * (m // n)
    if mode == "overlap":
        ok = overlap is None or (is_int(overlap) and 0 <= int(overlap) <= min(m, n))
        require(ok, "traffic.overlap", overlap, f"null or an integer in [0, {min(m, n)}]")
        start = m - (min(m, n) // 2 if overlap is None else int(overlap))
    else:  # (a task count below m + n was refused as "traffic.dst_start = None ... in [m, nt - n]", an empty range)
        require(nt >= m + n, "traffic.n_tasks", nt, f"an integer >= {m + n} (the {m} sources, then {n} destinations "
                f"apart from them, for mode 'disjoint')",
                "Set traffic.n_tasks (null: one per node) to at least n_sources + n_destinations, use fewer sources "
                "or destinations, or a mode whose destinations share tasks with the sources (traffic.dst_start "
                "only moves the destinations within the tasks).")
        start = nt - n if dst_start is None else dst_start
        ok = is_int(start) and m <= int(start) <= nt - n
        require(ok, "traffic.dst_start", dst_start, f"null (the last {n} tasks) or an integer in [{m}, {nt - n}] "
                                                    f"(after the {m} sources, {n} destinations within {nt} tasks)")
    start = int(start)
    require(start + n <= nt, "traffic.n_tasks", nt, f">= {start + n} (the destinations end at task {start + n - 1})")
    return start + np.arange(n)


def m_to_n(n_sources: int, n_destinations: int, dests_per_source: int = 1, bytes_per_pair: float = 1.0,
           mode: str = "disjoint", n_tasks: int | None = None, overlap: int | None = None,
           dst_start: int | None = None) -> Traffic:
    """Bui et al. many-to-many: source ``i`` sends ``bytes_per_pair`` to ``dests_per_source`` destinations."""
    m = positive_int("traffic.n_sources", n_sources)
    n = positive_int("traffic.n_destinations", n_destinations)
    d = positive_int("traffic.dests_per_source", dests_per_source)
    require(d <= n, "traffic.dests_per_source", d, f"an integer in [1, n_destinations = {n}]")
    b = positive_float("traffic.bytes", bytes_per_pair)
    if n_tasks is None:
        n_tasks = max(m, n) if str(mode).startswith("subset") else m + n
    nt = positive_int("traffic.n_tasks", n_tasks)
    require(m <= nt, "traffic.n_sources", m, f"<= n_tasks = {nt}")
    require(nt <= _MAX_TASKS, "traffic.n_tasks", nt, f"an integer <= {_MAX_TASKS} (int64 task ids)")
    check_memory("traffic.n_sources", m, 48.0 * m * d, f"the {m} x {d} flows of m_to_n")
    check_memory("traffic.n_destinations", n, 8.0 * n, f"the {n} destination ids of m_to_n")
    dests = _destinations(m, n, nt, mode, overlap, dst_start)
    src = np.repeat(np.arange(m), d)
    dst = dests[(src * d + np.tile(np.arange(d), m)) % n]
    keep = src != dst
    if not keep.any():
        raise ConfigError("traffic.mode", mode, "a layout where some source sends to another task",
                          "Every source is its own only destination.")
    return Traffic(nt, src[keep].astype(np.int64), dst[keep].astype(np.int64), np.full(int(keep.sum()), b),
                   f"m_to_n {m}->{n} x{d} ({mode})")


@dataclass
class MToNConfig:
    """Bui et al. many-to-many with ``dests_per_source`` destinations per source: ``n_sources``, ``n_destinations``,
    ``mode`` disjoint | overlap | subset_concentrated | subset_spread, ``bytes`` per pair, ``n_tasks`` (null: one per
    node), ``overlap``, ``dst_start`` (disjoint: first destination task; null: the last n tasks)."""

    kind: str = "m_to_n"
    n_sources: int = 32
    n_destinations: int = 256
    dests_per_source: int = 8
    mode: str = "disjoint"
    bytes: float = 8.0e6
    n_tasks: Optional[int] = None
    overlap: Optional[int] = None
    dst_start: Optional[int] = None


M_TO_N = TrafficKind(
    "m_to_n", MToNConfig,
    lambda cfg, topology: m_to_n(cfg.n_sources, cfg.n_destinations, cfg.dests_per_source, cfg.bytes, cfg.mode,
                                 tasks_or_nodes(cfg.n_tasks, topology), cfg.overlap, cfg.dst_start),
    unread=lambda cfg: _check_mode(cfg.mode, cfg.overlap, cfg.dst_start))
