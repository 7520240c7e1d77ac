"""Traffic from an OTF2 trace of an MPI program (kind ``trace``; see docs/traces.md).

The records are read by :mod:`._otf2_read` (ranks, point-to-point sends, collectives, errors: its
docstring). What is used:

* **Collectives** supported (:data:`OP_MAP`) are expanded into the steps of an algorithm of
  :mod:`evaluator.traffic._collectives` over the communicator's members (byte convention in
  :func:`collective_bytes`); the others, and a supported collective that some member never recorded, are
  counted in :attr:`TraceRecords.ignored` and named in a warning.

Phases (``mode: phased``):

* ``phase_rule: collectives``: the point-to-point sends a rank makes after
  its ``k``-th collective (in completion order over the whole trace) and
  before its next one form phase ``p2p{k+1}`` (sends before any collective:
  ``p2p0``); collective ``k`` becomes the phases of its algorithm,
  ``<op>{k}.step{s}`` (``<op>`` the collectives module's name of the
  operation: ``broadcast``, ``alltoall``, ...), one per step, between
  ``p2p{k}`` and ``p2p{k+1}``.
  Every collective is a boundary, also those with no traffic (a barrier).
* ``phase_rule: window``: phase ``window{k}`` holds the sends recorded in
  ``[k w, (k+1) w)`` seconds after the trace's start and every step of the
  collectives that complete in it.

Phases with no bytes are dropped. ``mode: aggregate`` sums every send and
every collective step into one exchange. Bytes are summed per (sender,
receiver) pair within an exchange.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from .._types import ConfigOf
from ..errors import ConfigError, nearest, positive_float, positive_int, require
from ._collectives import COLLECTIVES, collective_steps
from ._otf2_read import (FIELD, INCOMPLETE, OP_MAP, _KINDLESS, CollectiveRecord, TraceRecords, _anchor, _c_messages,
                         _error, _rank_map, read_otf2)
from .base import AbstractTraffic, Traffic, TrafficKind, phased

__all__ = ["from_trace", "read_otf2", "TraceRecords", "CollectiveRecord", "TraceConfig", "TRACE", "OP_MAP",
           "MODES", "PHASE_RULES", "collective_bytes"]

MODES = ("aggregate", "phased")
"""``aggregate``: one exchange; ``phased``: a :class:`~evaluator.traffic.PhasedTraffic`."""
PHASE_RULES = ("collectives", "window")
"""How a phased trace is cut (module docstring)."""

_NO_BYTES = ("BARRIER",)
"""Collectives that move no bytes by definition (never warned about)."""


# ----------------------------------------------------------------------------------------------
# collectives
# ----------------------------------------------------------------------------------------------


def collective_bytes(coll: CollectiveRecord) -> float:
    """``nbytes`` of :func:`~evaluator.traffic._collectives.collective_steps` for an OTF2 collective.

    The OTF2 sizes follow Score-P's byte accounting (``N`` the communicator's size, not in place):
    ALLREDUCE, ALLTOALL and ALLGATHER record ``sizeSent = N x`` (the vector, the bytes to each rank, the
    contribution): ``x = sizeSent / N`` (the largest over the records); their v/w variants are taken as the
    uniform operation with the mean ``sizeSent / N`` over the records (the same total); BCAST records the
    message as every rank's ``sizeReceived`` (the largest); REDUCE the vector as every rank's ``sizeSent``
    (the largest). An in-place operation records ``N - 1`` blocks where ``N`` are assumed.
    """
    rule = OP_MAP[coll.op][1]
    n = max(len(coll.members), 1)
    if coll.sent.size == 0:
        return 0.0
    if rule == "sent / N":
        return float(coll.sent.max()) / n
    if rule == "mean sent / N":
        return float(coll.sent.mean()) / n
    if rule == "received":
        return float(coll.received.max())
    return float(coll.sent.max())  # "sent"


def _algorithm_choices() -> dict[str, tuple[str, ...]]:
    """Algorithms per operation of :data:`OP_MAP` (``reduce``: those of ``broadcast``, run backwards)."""
    table = dict(COLLECTIVES)
    if "broadcast" in table:
        table.setdefault("reduce", table["broadcast"])
    return table


def _algorithms(chosen) -> dict[str, str]:
    """``{operation: algorithm}``: the defaults (first of each) replaced by ``chosen``, validated."""
    table = _algorithm_choices()
    out = {op: algs[0] for op, algs in table.items()}
    if chosen is None:
        return out
    require(isinstance(chosen, dict) or hasattr(chosen, "items"), "traffic.algorithms", chosen,
            f"a mapping of collective operation to algorithm, e.g. {{allreduce: {table['allreduce'][-1]}}}"
            if "allreduce" in table else "a mapping of collective operation to algorithm")
    for op, alg in chosen.items():
        if alg is None and op in table:  # null: the default
            continue
        if op not in table:
            raise ConfigError(f"traffic.algorithms.{op}", alg, f"a key among {sorted(table)}", nearest(op, table))
        if alg not in table[op] and alg != "auto":
            raise ConfigError(f"traffic.algorithms.{op}", alg,
                              f"one of {list(table[op])}, or 'auto' (the MPI library's choice by size: "
                              f"traffic.selection)", nearest(alg, list(table[op]) + ["auto"]))
        out[op] = str(alg)
    return out


def _expand(coll: CollectiveRecord, algorithms: dict[str, str], cache: dict | None = None,
            selection: str = "mpich"):
    """The steps ``[(src ranks, dst ranks, bytes)]`` of a collective (trace ranks), or None if ignored.

    ``cache``: schedules already built, by (operation, algorithm, ranks, bytes, root) (a trace repeats them). A
    collective that some member never recorded (``coll.missing``) is ignored (module docstring)."""
    if coll.op not in OP_MAP or coll.missing:
        return None
    op = OP_MAP[coll.op][0]
    n = len(coll.members)
    if n < 2:
        return []
    nbytes = collective_bytes(coll)
    base = "broadcast" if op == "reduce" else op
    key = (base, algorithms[op], n, nbytes, coll.root, selection)
    if cache is None or key not in cache:
        steps = collective_steps(base, algorithms[op], n, nbytes, root=coll.root, selection=selection)
        if cache is None:
            cache = {}
        cache[key] = steps
    steps = cache[key]
    members = np.asarray(coll.members, dtype=np.int64)
    out = []
    for s, d, b in steps:
        s = np.asarray(s, dtype=np.int64).reshape(-1)
        d = np.asarray(d, dtype=np.int64).reshape(-1)
        b = np.broadcast_to(np.asarray(b, dtype=np.float64).reshape(-1), s.shape)
        if op == "reduce":
            s, d = d, s
        out.append((members[s], members[d], b))
    if op == "reduce":
        out.reverse()
    return out


# ----------------------------------------------------------------------------------------------
# traffic
# ----------------------------------------------------------------------------------------------


def _exchange(n_tasks: int, parts, name: str) -> Traffic:
    """One exchange: the flows of ``parts`` (``(src, dst, bytes)`` arrays) summed per (src, dst) pair."""
    parts = list(parts)
    if parts:
        src = np.concatenate([q[0] for q in parts])
        dst = np.concatenate([q[1] for q in parts])
        b = np.concatenate([np.asarray(q[2], np.float64) for q in parts])
    else:
        src = dst = np.zeros(0, np.int64)
        b = np.zeros(0)
    live = b > 0
    src, dst, b = src[live], dst[live], b[live]
    key = src * n_tasks + dst
    uniq, inv = np.unique(key, return_inverse=True)
    total = np.bincount(inv.reshape(-1), weights=b, minlength=uniq.size)
    return Traffic(n_tasks, uniq // n_tasks, uniq % n_tasks, total.astype(np.float64), name)


def _window_index(t: np.ndarray, window: float, resolution: float = 0.0) -> np.ndarray:
    """``floor(t / window)`` (t >= 0). Where the window is a whole number ``W`` of the trace's timer ticks
    (``resolution`` ticks a second), in exact integers: ``tick // W``. Else with a relative 1e-12, so that a time on
    a boundary ``k window`` falls in window ``k`` whatever the rounding of ``t / window``; that tolerance alone put
    a send one tick before a boundary into the next window in a long trace (1999.999999999 s, ns ticks, 1 s
    windows: ``window2000``)."""
    t = np.maximum(np.asarray(t, np.float64), 0.0)
    ticks = window * resolution
    whole = round(ticks) if np.isfinite(ticks) else 0
    if whole >= 1 and abs(ticks - whole) <= 1e-9 * whole and float(np.max(t, initial=0.0)) * resolution < 2 ** 52:
        return np.rint(t * resolution).astype(np.int64) // int(whole)
    return np.floor(t / window * (1.0 + 1e-12)).astype(np.int64)


_MAX_WINDOWS = 2 ** 53
"""Window numbers float64 counts exactly: past it (and past int64 at 2**63) distinct windows merged into one phase
(a window of 1e-300 s put every send of a trace into ``window-9223372036854775808``)."""


def _window_ids(rec: TraceRecords, window: float) -> tuple[np.ndarray, np.ndarray]:
    """The window of every send and of every collective (:func:`_window_index`); a window so short that the trace's
    last record falls past window ``2**53`` is refused naming the shortest window allowed."""
    ct = np.array([c.time for c in rec.collectives], np.float64)
    last = float(max(np.max(rec.time, initial=0.0), np.max(ct, initial=0.0)))
    if last / window >= _MAX_WINDOWS:
        raise ConfigError("traffic.window", window, f"a window of at least {last / _MAX_WINDOWS:.3g} s for the trace "
                          f"{rec.path} (its last record is {last:.6g} s after its start; a shorter window numbers "
                          f"more than 2**53 windows, which float64 cannot count exactly)",
                          "Is the window in seconds (1e-3 is a millisecond)?")
    both = _window_index(np.concatenate([rec.time, ct]), window, float(getattr(rec, "resolution", 0.0)))
    return both[:rec.time.size], both[rec.time.size:]  # one rule for both (the exact one, or the tolerance)


def _check_scale(rec: TraceRecords, scale: float) -> None:
    """``bytes_scale`` times the trace's largest byte count (a send, a collective's sent or received) must be finite:
    an overflow was refused as ``traffic.nbytes = inf``, naming neither the key nor the trace."""
    big = max([float(np.max(rec.nbytes, initial=0.0))]
              + [float(np.max(np.concatenate([c.sent, c.received]), initial=0.0)) for c in rec.collectives])
    if not np.isfinite(big * scale):
        raise ConfigError("traffic.bytes_scale", scale, f"a factor at most {np.finfo(np.float64).max / big:.3g}, "
                          f"so that the byte counts of the trace {rec.path} stay finite (its largest is {big:.6g} B)")


def _check_tasks(rec: TraceRecords, n_tasks):
    if n_tasks is None:
        return rec.n_ranks
    n_tasks = positive_int("traffic.n_tasks", n_tasks)
    require(n_tasks >= rec.n_ranks, "traffic.n_tasks", n_tasks,
            f"at least the trace's {rec.n_ranks} ranks",
            f"The trace {rec.path} has {rec.n_ranks} ranks but the job has n_tasks = {n_tasks} tasks; set "
            f"traffic.n_tasks >= {rec.n_ranks} or null (the trace's ranks).")
    return n_tasks


def _warn_ignored(rec: TraceRecords) -> None:
    _warn_incomplete(rec)
    moving = {k: v for k, v in rec.ignored.items() if k not in _NO_BYTES and not k.endswith(INCOMPLETE)}
    for k in list(moving):
        if k.isupper():  # a collective: warn only where the records carry bytes
            carries = any(c.op == k and (c.sent.any() or c.received.any()) for c in rec.collectives)
            if not carries:
                del moving[k]
    if moving:
        what = ", ".join(f"{k} x{v}" for k, v in sorted(moving.items()))
        warnings.warn(f"{os.path.basename(rec.path)}: records with no traffic model were ignored ({what}); see "
                      f"docs/traces.md", stacklevel=3)


def _warn_incomplete(rec: TraceRecords, shown: int = 3) -> None:
    """One warning naming the collectives some member never recorded (not expanded: module docstring)."""
    bad = [(k, c) for k, c in enumerate(rec.collectives) if c.missing]
    if not bad:
        return
    what = "; ".join(f"{c.op} (collective {k}, t = {c.time:.6g} s) on communicator {c.comm!r}: member(s) "
                     f"{list(c.missing)} of its {len(c.members)} ({len(c.ranks)} recorded it)" for k, c in bad[:shown])
    if len(bad) > shown:
        what += f"; and {len(bad) - shown} more"
    warnings.warn(f"{os.path.basename(rec.path)}: {len(bad)} collective(s) not recorded by every member of their "
                  f"communicator were not expanded (no traffic; counted in ignored as '<OP> {INCOMPLETE}'): "
                  f"{what}. A rank's records were lost (a truncated or filtered trace?), or the ranks record "
                  f"different collectives (then the later ones are paired wrongly too); see docs/traces.md",
                  stacklevel=4)


def from_trace(path, mode: str = "aggregate", phase_rule: str = "collectives", window: float | None = None,
               algorithms: dict[str, str] | None = None, n_tasks: int | None = None,
               bytes_scale: float = 1.0, selection: str = "mpich") -> AbstractTraffic:
    """Traffic of an OTF2 trace (module docstring; docs/traces.md).

    Parameters
    ----------
    path
        The trace's anchor file (``traces.otf2``), or a directory holding exactly one.
    mode
        ``"aggregate"``: one :class:`Traffic`, bytes summed per (sender, receiver) over the whole trace;
        ``"phased"``: a :class:`~evaluator.traffic.PhasedTraffic` cut by ``phase_rule``.
    phase_rule
        ``"collectives"`` or ``"window"`` (with ``window`` seconds).
    algorithms
        Collective algorithm per operation (``{"allreduce": "ring"}``); default: the first of
        :data:`~evaluator.traffic._collectives.COLLECTIVES` for each (``reduce``: those of ``broadcast``).
        ``"auto"``: chosen per collective by its size and communicator, by the MPI library's rules ``selection``
        (:func:`~evaluator.traffic.select_algorithm`; a reduce by its broadcast's rule, run backwards).
    n_tasks
        Tasks of the job (None: the trace's ranks); must be at least the trace's ranks.
    bytes_scale
        Factor on every byte count (>= 0).
    """
    require(mode in MODES, "traffic.mode", mode, f"one of {list(MODES)}", nearest(mode, MODES))
    require(phase_rule in PHASE_RULES, "traffic.phase_rule", phase_rule, f"one of {list(PHASE_RULES)}",
            nearest(phase_rule, PHASE_RULES))
    if mode == "phased" and phase_rule == "window":
        require(window is not None, "traffic.window", window, "a window length in seconds (> 0) with "
                                                              "phase_rule=window")
        window = positive_float("traffic.window", window)
    else:
        require(window is None, "traffic.window", window,
                "null unless mode=phased and phase_rule=window (the window cuts phases only then)")
    scale = positive_float("traffic.bytes_scale", bytes_scale, allow_zero=True)
    if n_tasks is not None:
        positive_int("traffic.n_tasks", n_tasks)
    algs = _algorithms(algorithms)
    from ._collectives import SELECTIONS

    require(selection in SELECTIONS, "traffic.selection", selection, f"one of {list(SELECTIONS)}",
            nearest(selection, SELECTIONS))
    rec = read_otf2(path)
    n = _check_tasks(rec, n_tasks)
    name = os.path.basename(os.path.dirname(rec.path)) or os.path.basename(rec.path)
    _check_scale(rec, scale)
    p2p = (rec.src, rec.dst, rec.nbytes * scale)
    steps, cache = [], {}
    for c in rec.collectives:
        e = _expand(c, algs, cache, selection)
        steps.append(None if e is None else [(s, d, b * scale) for s, d, b in e])
    _warn_ignored(rec)
    if mode == "aggregate":
        parts = [p2p] + [st for e in steps if e for st in e]
        tr = _exchange(n, parts, f"trace {name}")
        if tr.n_flows == 0:
            raise _no_traffic(rec, scale)
        return tr
    phases, labels = [], []

    def add(parts, label):
        ex = _exchange(n, parts, label)
        if ex.n_flows:
            phases.append(ex)
            labels.append(label)

    if phase_rule == "collectives":
        seg = rec.after
        srt = np.argsort(seg, kind="stable")
        bounds = np.searchsorted(seg[srt], np.arange(-1, len(rec.collectives) + 1))
        for k in range(-1, len(rec.collectives)):
            if k >= 0 and steps[k]:
                op = OP_MAP[rec.collectives[k].op][0]  # the collectives module's name: broadcast, alltoall, ...
                for s, st in enumerate(steps[k]):
                    add([st], f"{op}{k}.step{s}")
            rows = srt[bounds[k + 1]:bounds[k + 2]]
            add([(p2p[0][rows], p2p[1][rows], p2p[2][rows])], f"p2p{k + 1}")
    else:
        wid, cw = _window_ids(rec, window)
        for k in np.unique(np.concatenate([wid, cw])):
            rows = wid == k
            parts = [(p2p[0][rows], p2p[1][rows], p2p[2][rows])]
            parts += [st for i in np.flatnonzero(cw == k) if steps[i] for st in steps[i]]
            add(parts, f"window{int(k)}")
    if not phases:
        raise _no_traffic(rec, scale)
    return phased(phases, names=labels, name=f"trace {name}")


def _no_traffic(rec: TraceRecords, scale: float = 1.0) -> ConfigError:
    """The trace makes no traffic: a ``bytes_scale`` of 0 on a trace with bytes is named as such (it was refused
    as a trace with no MPI traffic); else the trace's records are counted, those with bytes apart."""
    carry = int(np.count_nonzero(rec.nbytes > 0))
    if scale == 0 and (carry or any(c.sent.any() or c.received.any() for c in rec.collectives)):
        return ConfigError("traffic.bytes_scale", scale, "a factor > 0 (0 scales every byte of the trace away, and "
                           "a traffic of no bytes has no completion time)",
                           f"The trace {rec.path} has {carry} send record(s) with bytes.")
    ign = f"; ignored: {dict(sorted(rec.ignored.items()))}" if rec.ignored else ""
    return _error(rec.path, "an OTF2 trace with MPI traffic (MpiSend/MpiIsend records or collectives with bytes)",
                  f"It has {rec.n_send} MpiSend and {rec.n_isend} MpiIsend records ({carry} with bytes) and "
                  f"{len(rec.collectives)} collective operations{ign}.")


# ----------------------------------------------------------------------------------------------
# config kind
# ----------------------------------------------------------------------------------------------


@dataclass
class TraceConfig:
    """An OTF2 trace: ``path`` (anchor .otf2 file or its directory), ``mode`` (aggregate|phased),
    ``phase_rule`` (collectives|window), ``window`` (s), ``algorithms`` ({operation: algorithm}; null: the
    operation's default), ``n_tasks`` (null: the trace's ranks), ``bytes_scale``."""

    kind: str = "trace"
    path: Optional[str] = None
    mode: str = "aggregate"
    phase_rule: str = "collectives"
    window: Optional[float] = None
    algorithms: dict[str, Optional[str]] = field(default_factory=lambda: {op: None for op in _algorithm_choices()})
    n_tasks: Optional[int] = None
    bytes_scale: float = 1.0
    selection: str = "mpich"  # the MPI library's rules where an algorithm is auto


def _from_config(cfg: ConfigOf[TraceConfig], topology) -> AbstractTraffic:
    require(cfg.path is not None, FIELD, None, _KINDLESS)
    algs = dict(cfg.algorithms) if cfg.algorithms is not None else None
    return from_trace(str(cfg.path), cfg.mode, cfg.phase_rule, cfg.window, algs, cfg.n_tasks, cfg.bytes_scale,
                      cfg.selection)


def _declared(cfg: ConfigOf[TraceConfig], topology) -> int | None:
    """The task count: ``n_tasks``, or the trace's ranks read from its definitions (None where the trace cannot
    be read: :func:`from_trace` names the problem)."""
    if cfg.n_tasks is not None:
        return int(cfg.n_tasks) if isinstance(cfg.n_tasks, int) and cfg.n_tasks > 0 else None
    if cfg.path is None:
        return None
    try:
        import otf2

        p = _anchor(str(cfg.path))
        with _c_messages(), otf2.reader.open(p) as reader:
            return _rank_map(p, reader.definitions)[1]
    except Exception:  # noqa: BLE001 - any failure is named by from_trace
        return None


TRACE = TrafficKind("trace", TraceConfig, _from_config, declared_tasks=_declared)
