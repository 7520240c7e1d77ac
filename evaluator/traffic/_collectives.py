"""MPI collectives by algorithm (``collective``): one phase per algorithm step, exact bytes per step.

A collective over ``p`` ranks is a sequence of point-to-point exchanges, each
step starting when the previous one has finished; here every step is one
phase of a :class:`~evaluator.traffic.PhasedTraffic` (its time the contention
bound of that step's flows), with the bytes the named algorithm sends in that
step.

Byte convention
---------------

``nbytes`` is the *per-rank vector size* in bytes:

* ``allreduce``: the size of each rank's vector (input = output size);
* ``allgather``: each rank's contribution (the result is ``p * nbytes``);
* ``alltoall``: the bytes each rank sends to EACH other rank;
* ``broadcast``: the root's message.

Byte counts are real numbers: a vector cut into ``k`` blocks gives blocks of
``nbytes / k`` bytes (no rounding to whole elements; MPICH gives the first
``count % k`` blocks one element more).

Algorithms (:data:`COLLECTIVES`; the first of each op is its default)
--------------------------------------------------------------------

``p'`` is the largest power of two ``<= p`` and ``r = p - p'``.

allreduce
    ``ring``: reduce-scatter then allgather around the ring, ``2 (p - 1)``
    steps, every rank sends ``nbytes / p`` to ``rank + 1`` in each (MPICH
    ``MPIR_Allreduce_intra_ring``). ``recursive_doubling``: ``log2 p'`` steps
    in which rank pairs at distance 1, 2, 4, ... exchange the whole vector
    (MPICH ``MPIR_Allreduce_intra_recursive_doubling``). ``rabenseifner``:
    reduce-scatter by recursive halving (the data halves while the partner
    distance doubles, 1, 2, ..., ``p'/2``: ``nbytes / 2^(k+1)`` in step ``k``)
    then allgather by recursive doubling (distance ``p'/2``, ..., 1, the data
    doubling from ``nbytes / p'`` to ``nbytes / 2``), as MPICH
    ``MPIR_Allreduce_intra_reduce_scatter_allgather`` orders them.
    ``binomial``: binomial-tree reduce to ``root`` (MPICH
    ``MPIR_Reduce_intra_binomial``: in step ``k`` the relative ranks
    ``= 2^k mod 2^(k+1)`` send the whole vector to ``rank - 2^k``) then a
    binomial broadcast from ``root`` (below); ``2 ceil(log2 p)`` steps.
alltoall
    ``pairwise``: ``p - 1`` steps; in step ``i`` (1 ... ``p - 1``) rank ``x``
    sends ``nbytes`` to ``x XOR i`` when ``p`` is a power of two, else to
    ``(x + i) mod p`` (receiving from ``(x - i) mod p``), as MPICH
    ``MPIR_Alltoall_intra_pairwise``. ``bruck``: ``ceil(log2 p)`` steps; in
    step ``k`` rank ``x`` sends to ``(x + 2^k) mod p`` the packed blocks whose
    index ``j`` (0 ... ``p - 1``, after the local rotation) has bit ``k`` set:
    ``nbytes * (floor(p / 2^(k+1)) 2^k + max(0, p mod 2^(k+1) - 2^k))`` bytes
    (MPICH ``MPIR_Alltoall_intra_brucks``).
allgather
    ``ring``: ``p - 1`` steps, every rank sends one block (``nbytes``) to
    ``rank + 1``. ``recursive_doubling``: for a power-of-two ``p``,
    ``log2 p`` steps, rank ``x`` sends its ``2^k`` blocks to ``x XOR 2^k``.
broadcast
    ``binomial``: ``ceil(log2 p)`` steps from ``root`` (MPICH
    ``MPIR_Bcast_intra_binomial``): in step ``k`` with ``m = 2^(L-1-k)``,
    ``L = ceil(log2 p)``, every relative rank ``x`` with ``x mod 2m = 0`` and
    ``x + m < p`` sends the message to ``x + m``. ``pipelined_ring``: the
    message is cut into ``n_segments`` equal segments (the segment parameter is
    a *count*, not a size: the number of phases, ``p - 2 + n_segments``, stays
    bounded whatever the message size) sent down the chain ``root, root + 1,
    ..., root + p - 1`` (mod ``p``); in step ``t`` the rank at chain position
    ``j`` forwards segment ``t - j`` to position ``j + 1``.

Non-power-of-two process counts
-------------------------------

* ``recursive_doubling`` and ``rabenseifner`` allreduce fold the extra ranks
  as MPICH does: a pre-step in which the even ranks ``< 2r`` send their whole
  vector to ``rank + 1`` (and drop out), the algorithm on the ``p'``
  remaining ranks (new rank ``x`` is rank ``2x + 1`` for ``x < r``, else
  ``x + r``), and a post-step in which the odd ranks ``< 2r`` send the whole
  result to ``rank - 1``: ``log2 p' + 2`` steps (``2 log2 p' + 2``).
* ``recursive_doubling`` allgather on a non-power-of-two ``p`` is the Bruck
  allgather, as MPICH selects (its ``MPIR_Allgather_intra_recursive_doubling``
  is restricted to power-of-two communicators; for the others MPICH uses
  ``MPIR_Allgather_intra_brucks``): ``ceil(log2 p)`` steps, in step ``k`` rank
  ``x`` sends ``min(2^k, p - 2^k)`` blocks to ``(x - 2^k) mod p``.
* ``ring``, ``pairwise``, ``bruck``, ``binomial`` and ``pipelined_ring`` need
  no power of two.

One rank
--------

:func:`collective_steps` of ``p = 1`` is an empty list (no step moves a
byte); :func:`collective` refuses it (:class:`~evaluator.errors.ConfigError`
naming ``traffic.n_tasks``): an exchange without bytes has no completion time.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Optional

import numpy as np

from .._types import FlowFloats, FlowInts
from ..errors import ConfigError, check_memory, is_int, nearest, positive_float, positive_int, require
from .base import PhasedTraffic, Traffic, TrafficKind, tasks_or_nodes

__all__ = ["COLLECTIVES", "collective_steps", "collective", "CollectiveConfig", "COLLECTIVE"]

COLLECTIVES: dict[str, tuple[str, ...]] = {
    "allreduce": ("ring", "recursive_doubling", "rabenseifner", "binomial"),
    "alltoall": ("pairwise", "bruck"),
    "allgather": ("ring", "recursive_doubling"),
    "broadcast": ("binomial", "pipelined_ring"),
}
"""Collective op -> its algorithms; the first is the op's default."""

DEFAULT_SEGMENTS = 8
"""Segments of a ``pipelined_ring`` broadcast when none are given."""

Step = tuple[np.ndarray, np.ndarray, np.ndarray]


def _step(src, dst, nbytes) -> Step:
    src = np.asarray(src, dtype=np.int64).reshape(-1)
    dst = np.asarray(dst, dtype=np.int64).reshape(-1)
    return src, dst, np.broadcast_to(np.asarray(nbytes, dtype=np.float64), src.shape).copy()


def _log2_ceil(p: int) -> int:
    return (p - 1).bit_length()


def _fold(p: int):
    """``(pof2, rem, real)``: MPICH's fold of a non-power-of-two ``p``; ``real(newrank)`` the rank of a new rank."""
    pof2 = 1 << (p.bit_length() - 1)
    rem = p - pof2

    def real(nr):
        nr = np.asarray(nr, dtype=np.int64)
        return np.where(nr < rem, 2 * nr + 1, nr + rem)

    return pof2, rem, real


def _folded(p: int, n: float, inner: Callable[[int, Callable], list[Step]]) -> list[Step]:
    """The pre-step (even ranks < 2 rem send to rank + 1), ``inner(pof2, real)`` and the post-step."""
    pof2, rem, real = _fold(p)
    even = np.arange(0, 2 * rem, 2)
    pre = [_step(even, even + 1, n)] if rem else []
    post = [_step(even + 1, even, n)] if rem else []
    return pre + inner(pof2, real) + post


# --- allreduce -------------------------------------------------------------------------------------------------

def _allreduce_ring(p, n, root, segs):
    r = np.arange(p)
    return [_step(r, (r + 1) % p, n / p) for _ in range(2 * (p - 1))]


def _allreduce_recursive_doubling(p, n, root, segs):
    def inner(pof2, real):
        nr = np.arange(pof2)
        return [_step(real(nr), real(nr ^ (1 << k)), n) for k in range(pof2.bit_length() - 1)]

    return _folded(p, n, inner)


def _allreduce_rabenseifner(p, n, root, segs):
    def inner(pof2, real):
        nr = np.arange(pof2)
        masks = [1 << k for k in range(pof2.bit_length() - 1)]
        rs = [_step(real(nr), real(nr ^ m), n / (2 * m)) for m in masks]
        ag = [_step(real(nr), real(nr ^ m), n / (2 * m)) for m in reversed(masks)]
        return rs + ag

    return _folded(p, n, inner)


def _reduce_binomial(p, n, root):
    rel = np.arange(p)
    out = []
    for k in range(_log2_ceil(p)):
        m = 1 << k
        s = rel[rel % (2 * m) == m]
        out.append(_step((s + root) % p, (s - m + root) % p, n))
    return out


def _bcast_binomial(p, n, root, segs=None):
    rel = np.arange(p)
    L = _log2_ceil(p)
    out = []
    for k in range(L):
        m = 1 << (L - 1 - k)
        s = rel[(rel % (2 * m) == 0) & (rel + m < p)]
        out.append(_step((s + root) % p, (s + m + root) % p, n))
    return out


def _allreduce_binomial(p, n, root, segs):
    return _reduce_binomial(p, n, root) + _bcast_binomial(p, n, root)


# --- alltoall --------------------------------------------------------------------------------------------------

def _alltoall_pairwise(p, n, root, segs):
    r = np.arange(p)
    pow2 = p & (p - 1) == 0
    return [_step(r, (r ^ i) if pow2 else (r + i) % p, n) for i in range(1, p)]


def _bruck_blocks(p: int, k: int) -> int:
    """Blocks ``j`` in ``[0, p)`` whose bit ``k`` is set: those a Bruck alltoall step ``k`` packs."""
    m = 1 << k
    return (p // (2 * m)) * m + max(0, p % (2 * m) - m)


def _alltoall_bruck(p, n, root, segs):
    r = np.arange(p)
    return [_step(r, (r + (1 << k)) % p, n * _bruck_blocks(p, k)) for k in range(_log2_ceil(p))]


# --- allgather -------------------------------------------------------------------------------------------------

def _allgather_ring(p, n, root, segs):
    r = np.arange(p)
    return [_step(r, (r + 1) % p, n) for _ in range(p - 1)]


def _allgather_recursive_doubling(p, n, root, segs):
    r = np.arange(p)
    if p & (p - 1) == 0:
        return [_step(r, r ^ (1 << k), n * (1 << k)) for k in range(p.bit_length() - 1)]
    return [_step(r, (r - (1 << k)) % p, n * min(1 << k, p - (1 << k))) for k in range(_log2_ceil(p))]


# --- broadcast -------------------------------------------------------------------------------------------------

def _bcast_pipelined_ring(p, n, root, segs):
    chain = (np.arange(p) + root) % p
    out = []
    for t in range(p - 2 + segs):
        j = np.arange(max(0, t - segs + 1), min(p - 2, t) + 1)
        out.append(_step(chain[j], chain[j + 1], n / segs))
    return out


_BUILD = {
    ("allreduce", "ring"): _allreduce_ring,
    ("allreduce", "recursive_doubling"): _allreduce_recursive_doubling,
    ("allreduce", "rabenseifner"): _allreduce_rabenseifner,
    ("allreduce", "binomial"): _allreduce_binomial,
    ("alltoall", "pairwise"): _alltoall_pairwise,
    ("alltoall", "bruck"): _alltoall_bruck,
    ("allgather", "ring"): _allgather_ring,
    ("allgather", "recursive_doubling"): _allgather_recursive_doubling,
    ("broadcast", "binomial"): _bcast_binomial,
    ("broadcast", "pipelined_ring"): _bcast_pipelined_ring,
}


def _n_steps(op: str, algorithm: str, p: int, segs: int) -> int:
    """Steps of the schedule (for the memory estimate before it is built)."""
    L, lg = _log2_ceil(p), p.bit_length() - 1
    fold = 2 if p & (p - 1) else 0
    return {"ring": 2 * (p - 1) if op == "allreduce" else p - 1, "recursive_doubling": lg + fold if
            op == "allreduce" else L, "rabenseifner": 2 * lg + fold, "binomial": 2 * L if op == "allreduce" else L,
            "pairwise": p - 1, "bruck": L, "pipelined_ring": p - 2 + segs}[algorithm]


def _check_op(op, algorithm) -> tuple[str, str]:
    if not isinstance(op, str) or op not in COLLECTIVES:
        raise ConfigError("traffic.op", op, f"one of {list(COLLECTIVES)}", nearest(op, COLLECTIVES))
    algs = COLLECTIVES[op]
    if algorithm is None:
        return op, algs[0]
    if not isinstance(algorithm, str) or algorithm not in algs:
        other = [o for o, a in COLLECTIVES.items() if algorithm in a]
        hint = nearest(algorithm, algs) or (f"{algorithm!r} is an algorithm of {other}." if other else None)
        raise ConfigError("traffic.algorithm", algorithm,
                          f"one of {list(algs)} for traffic.op = {op!r}, or null (its default, {algs[0]!r})", hint)
    return op, algorithm


def _check_root(root, p: int) -> int:
    require(is_int(root) and 0 <= int(root) < p, "traffic.root", root,
            f"a rank of the communicator, an integer in [0, {p - 1}]")
    return int(root)


def collective_steps(op: str, algorithm: str, n_ranks: int, nbytes: float, root: int = 0, *,
                     n_segments: int | None = None) -> list[tuple[FlowInts, FlowInts, FlowFloats]]:
    """The steps of collective ``op`` by ``algorithm`` over ranks ``0 ... n_ranks - 1``: one ``(src, dst, bytes)``.

    Parameters
    ----------
    op
        ``"allreduce"``, ``"alltoall"``, ``"allgather"`` or ``"broadcast"`` (:data:`COLLECTIVES`).
    algorithm
        One of ``COLLECTIVES[op]`` (None: the first, the op's default).
    n_ranks
        Ranks of the communicator (>= 1; 1 gives no step).
    nbytes
        The per-rank vector size in bytes (>= 0): allreduce each rank's vector, allgather each rank's
        contribution, alltoall the bytes each rank sends to EACH other rank, broadcast the root's message.
    root
        The root rank of ``broadcast`` and of the ``binomial`` allreduce's trees; checked, else unused.
    n_segments
        Segments of a ``pipelined_ring`` broadcast (default :data:`DEFAULT_SEGMENTS`); else unused.

    Returns
    -------
    list of (src, dst, bytes)
        One triple per algorithm step, in order: ``src``, ``dst`` (int64 ranks) and ``bytes`` (float64, bytes
        from ``src[i]`` to ``dst[i]`` in that step), one entry per message; a step may be empty for a tiny
        ``n_ranks``. The module docstring gives every algorithm's steps and its non-power-of-two rule.
    """
    op, algorithm = _check_op(op, algorithm)
    p = positive_int("traffic.n_tasks", n_ranks)
    n = positive_float("traffic.bytes", nbytes, allow_zero=True)
    root = _check_root(root, p)
    segs = positive_int("traffic.n_segments", DEFAULT_SEGMENTS if n_segments is None else n_segments)
    if p == 1:
        return []
    check_memory("traffic.n_tasks", p, 24.0 * p * _n_steps(op, algorithm, p, segs),
                 f"the messages of {op} by {algorithm} over {p} ranks ({_n_steps(op, algorithm, p, segs)} steps)")
    return _BUILD[op, algorithm](p, n, root, segs)


def collective(op: str, algorithm: str | None = None, n_tasks: int | None = None, nbytes: float = 1.0e6,
               root: int = 0, ranks: Sequence[int] | None = None, *, n_segments: int | None = None
               ) -> PhasedTraffic:
    """Collective ``op`` by ``algorithm`` as a :class:`PhasedTraffic`: one phase per step, ``"<algorithm> step k"``.

    Parameters
    ----------
    op, algorithm, nbytes, root, n_segments
        As :func:`collective_steps` (``nbytes`` > 0: the per-rank vector size in bytes; ``root`` a rank of the
        communicator, not a task id).
    n_tasks
        Tasks of the job. Without ``ranks`` the communicator is every task, rank ``i`` = task ``i``.
    ranks
        The communicator's members in rank order: rank ``i`` is task ``ranks[i]`` (distinct task ids >= 0);
        the job has ``n_tasks`` tasks (default ``max(ranks) + 1``; must exceed every id) and the tasks outside
        the communicator send nothing.

    Phases are numbered from 0 in the order of :func:`collective_steps`; a communicator of one rank is
    refused (:class:`~evaluator.errors.ConfigError`): it moves no bytes.
    """
    op, algorithm = _check_op(op, algorithm)
    if ranks is None:
        require(n_tasks is not None, "traffic.n_tasks", n_tasks, "an integer >= 2 (or the communicator's ranks)")
        n_job = positive_int("traffic.n_tasks", n_tasks)
        members = np.arange(n_job, dtype=np.int64)
        where = "traffic.n_tasks"
    else:
        allowed = "a non-empty list of distinct task ids (integers >= 0), the communicator in rank order"
        require(isinstance(ranks, (list, tuple, np.ndarray)) and len(ranks) > 0, "traffic.ranks", ranks, allowed)
        require(all(is_int(r) and int(r) >= 0 for r in ranks), "traffic.ranks", list(ranks), allowed)
        members = np.asarray([int(r) for r in ranks], dtype=np.int64)
        require(np.unique(members).size == members.size, "traffic.ranks", list(ranks), allowed,
                "A task appears twice.")
        top = int(members.max())
        n_job = top + 1 if n_tasks is None else positive_int("traffic.n_tasks", n_tasks)
        require(n_job > top, "traffic.n_tasks", n_tasks, f"an integer > {top}, the largest task id of traffic.ranks")
        where = "traffic.ranks"
    p = members.size
    require(p >= 2, where, int(p) if ranks is None else list(ranks),
            "a communicator of at least 2 ranks", "A collective over one rank moves no bytes.")
    n = positive_float("traffic.bytes", nbytes)
    steps = collective_steps(op, algorithm, p, n, root, n_segments=n_segments)
    phases = tuple(Traffic(n_job, members[s], members[d], b, f"{algorithm} step {k}")
                   for k, (s, d, b) in enumerate(steps))
    return PhasedTraffic(phases, tuple(ph.name for ph in phases), f"{op} {algorithm}")


@dataclass
class CollectiveConfig:
    """An MPI collective by algorithm: ``op``, ``algorithm`` (null: the op's default), ``n_tasks`` (null: one per
    node), ``bytes`` (the per-rank vector size), ``root`` and ``n_segments`` (pipelined_ring broadcast)."""

    kind: str = "collective"
    op: str = "allreduce"
    algorithm: Optional[str] = None
    n_tasks: Optional[int] = None
    bytes: float = 1.0e6
    root: int = 0
    n_segments: int = DEFAULT_SEGMENTS


COLLECTIVE = TrafficKind(
    "collective", CollectiveConfig,
    lambda cfg, topology: collective(cfg.op, cfg.algorithm, tasks_or_nodes(cfg.n_tasks, topology), cfg.bytes,
                                     cfg.root, n_segments=cfg.n_segments))
