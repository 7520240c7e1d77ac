"""The schedules of :mod:`evaluator.traffic._collectives`: one :class:`Algorithm` record per (op, algorithm).

Each record holds all this module knows about one algorithm: its schedule builder, its exact step count and a
bound on its messages (the memory estimate made before a schedule is built), the options it reads and the library
routine it reproduces. :data:`ALGORITHMS` is the registry, built from :data:`_RECORDS`, whose order is the order
of :data:`~evaluator.traffic._collectives.COLLECTIVES` (the first algorithm of an op is its default; the order is
that of error messages and listings). The schedules are described in :mod:`evaluator.traffic._collectives`'s
docstring (the byte convention, every algorithm's steps, the non-power-of-two rules).

Adding an algorithm: write its builder ``build(p, n, root, o) -> list[Step]`` here, add one :class:`Algorithm`
to :data:`_RECORDS` (with its ``n_steps``; ``n_messages`` when some step has more than ``p`` messages) and
describe it in the docstring of :mod:`evaluator.traffic._collectives` and in docs/collectives.md.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Optional

import numpy as np

DEFAULT_SEGMENTS = 8
"""Segments of a ``pipelined_ring`` broadcast when none are given and no latency says otherwise."""

DEFAULT_THROTTLE = 32
"""Destinations a ``scattered`` alltoall posts at once: MPICH's ``MPIR_CVAR_ALLTOALL_THROTTLE`` default."""

Step = tuple[np.ndarray, np.ndarray, np.ndarray]


@dataclass(frozen=True)
class _Opts:
    """The parameters some schedules take: ``segments`` (pipelined_ring), ``throttle`` (scattered)."""

    segments: int = DEFAULT_SEGMENTS
    throttle: int = DEFAULT_THROTTLE


def _step(src, dst, nbytes) -> Step:
    src = np.asarray(src, dtype=np.int64).reshape(-1)
    dst = np.asarray(dst, dtype=np.int64).reshape(-1)
    return src, dst, np.broadcast_to(np.asarray(nbytes, dtype=np.float64), src.shape).copy()


def _log2_ceil(p: int) -> int:
    return (p - 1).bit_length()


def _is_pof2(p: int) -> bool:
    return p >= 1 and p & (p - 1) == 0


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

def _allreduce_ring(p, n, root, o):
    r = np.arange(p)
    return [_step(r, (r + 1) % p, n / p) for _ in range(2 * (p - 1))]


def _allreduce_recursive_doubling(p, n, root, o):
    def inner(pof2, real):
        nr = np.arange(pof2)
        return [_step(real(nr), real(nr ^ (1 << k)), n) for k in range(pof2.bit_length() - 1)]

    return _folded(p, n, inner)


def _halving_doubling(pof2: int, n: float, real: Callable) -> list[Step]:
    """Reduce-scatter by recursive halving (distance 1, 2, ...), then allgather by recursive doubling back."""
    nr = np.arange(pof2)
    masks = [1 << k for k in range(pof2.bit_length() - 1)]
    rs = [_step(real(nr), real(nr ^ m), n / (2 * m)) for m in masks]
    ag = [_step(real(nr), real(nr ^ m), n / (2 * m)) for m in reversed(masks)]
    return rs + ag


def _allreduce_rabenseifner(p, n, root, o):
    return _folded(p, n, lambda pof2, real: _halving_doubling(pof2, n, real))


def _allreduce_rabenseifner_ompi(p, n, root, o):
    pof2 = 1 << (p.bit_length() - 1)
    rem = p - pof2
    if rem == 0:
        return _halving_doubling(pof2, n, lambda nr: np.asarray(nr, dtype=np.int64))
    even = np.arange(0, 2 * rem, 2)

    def real(nr):  # Open MPI keeps the even ranks < 2 rem: new rank x is rank 2x (x < rem), else x + rem
        nr = np.asarray(nr, dtype=np.int64)
        return np.where(nr < rem, 2 * nr, nr + rem)

    pre = [_step(np.concatenate([even, even + 1]), np.concatenate([even + 1, even]), n / 2),
           _step(even + 1, even, n / 2)]
    return pre + _halving_doubling(pof2, n, real) + [_step(even, even + 1, n)]


def _reduce_binomial(p, n, root):
    rel = np.arange(p)
    out = []
    for k in range(_log2_ceil(p)):
        m = 1 << k
        s = rel[rel % (2 * m) == m]
        out.append(_step((s + root) % p, (s - m + root) % p, n))
    return out


def _bcast_binomial(p, n, root, o=None):
    rel = np.arange(p)
    L = _log2_ceil(p)
    out = []
    for k in range(L):
        m = 1 << (L - 1 - k)
        s = rel[(rel % (2 * m) == 0) & (rel + m < p)]
        out.append(_step((s + root) % p, (s + m + root) % p, n))
    return out


def _allreduce_binomial(p, n, root, o):
    return _reduce_binomial(p, n, root) + _bcast_binomial(p, n, root)


# --- alltoall --------------------------------------------------------------------------------------------------

def _alltoall_pairwise(p, n, root, o):
    r = np.arange(p)
    pow2 = p & (p - 1) == 0
    return [_step(r, (r ^ i) if pow2 else (r + i) % p, n) for i in range(1, p)]


def _bruck_blocks(p: int, k: int) -> int:
    """Blocks ``j`` in ``[0, p)`` whose bit ``k`` is set: those a Bruck alltoall step ``k`` packs."""
    m = 1 << k
    return (p // (2 * m)) * m + max(0, p % (2 * m) - m)


def _alltoall_bruck(p, n, root, o):
    r = np.arange(p)
    return [_step(r, (r + (1 << k)) % p, n * _bruck_blocks(p, k)) for k in range(_log2_ceil(p))]


def _throttle_block(p: int, throttle: int) -> int:
    """MPICH's ``bblock``: ``throttle`` destinations per step (0: all ``p``), at most ``p``."""
    return p if throttle == 0 else min(throttle, p)


def _alltoall_scattered(p, n, root, o):
    b = _throttle_block(p, o.throttle)
    out = []
    for ii in range(0, p, b):
        ss = min(b, p - ii)
        src = np.repeat(np.arange(p), ss)
        dst = (src - np.tile(np.arange(ss), p) - ii) % p
        keep = src != dst  # the self copy (i = ii = 0) crosses no link
        out.append(_step(src[keep], dst[keep], n))
    return out


def _alltoall_ring(p, n, root, o):
    r = np.arange(p)
    return [_step(r, (r + i) % p, n) for i in range(1, p)]


def _alltoall_linear(p, n, root, o):
    src = np.repeat(np.arange(p), p - 1)
    return [_step(src, (src + np.tile(np.arange(1, p), p)) % p, n)]


# --- allgather -------------------------------------------------------------------------------------------------

def _allgather_ring(p, n, root, o):
    r = np.arange(p)
    return [_step(r, (r + 1) % p, n) for _ in range(p - 1)]


def _allgather_bruck(p, n, root, o):
    r = np.arange(p)
    return [_step(r, (r - (1 << k)) % p, n * min(1 << k, p - (1 << k))) for k in range(_log2_ceil(p))]


def _allgather_recursive_doubling(p, n, root, o):
    r = np.arange(p)
    if p & (p - 1) == 0:
        return [_step(r, r ^ (1 << k), n * (1 << k)) for k in range(p.bit_length() - 1)]
    return _allgather_bruck(p, n, root, o)


def _allgather_direct_ring(p, n, root, o):
    r = np.arange(p)
    return [_step(r, (r + i) % p, n) for i in range(1, p)]


def _allgather_neighbor_exchange(p, n, root, o):
    if p % 2:
        return _allgather_ring(p, n, root, o)  # Open MPI's fallback for an odd p
    r = np.arange(p)
    even = r % 2 == 0
    out = [_step(r, np.where(even, r + 1, r - 1) % p, n)]
    for i in range(1, p // 2):
        right = even if i % 2 == 0 else ~even
        out.append(_step(r, np.where(right, r + 1, r - 1) % p, 2 * n))
    return out


# --- broadcast -------------------------------------------------------------------------------------------------

def _bcast_pipelined_ring(p, n, root, o):
    segs = o.segments
    chain = (np.arange(p) + root) % p
    out = []
    for t in range(p - 2 + segs):
        j = np.arange(max(0, t - segs + 1), min(p - 2, t) + 1)
        out.append(_step(chain[j], chain[j + 1], n / segs))
    return out


def _bcast_linear(p, n, root, o):
    return [_step(np.full(p - 1, root), (root + np.arange(1, p)) % p, n)]


def _chunks(p: int, n: float) -> tuple[float, np.ndarray]:
    """MPICH's scatter of a broadcast: chunk size ``c = ceil(n / p)`` and the bytes of chunk ``j`` (relative rank
    ``j``): ``min(c, max(0, n - j c))``."""
    c = float(math.ceil(n / p))
    return c, np.clip(n - np.arange(p) * c, 0.0, c)


def _scatter_for_bcast(p: int, n: float, root: int) -> list[Step]:
    """MPICH ``MPII_Scatter_for_bcast``: the binomial partners, relative rank ``x`` sends the chunks of
    ``[x + m, min(x + 2m, p))`` to ``x + m`` when they hold a byte."""
    c, _ = _chunks(p, n)
    rel = np.arange(p)
    L = _log2_ceil(p)
    out = []
    for k in range(L):
        m = 1 << (L - 1 - k)
        x = rel[(rel % (2 * m) == 0) & (rel + m < p) & ((rel + m) * c < n)]
        if x.size:
            b = np.minimum(n, np.minimum(x + 2 * m, p) * c) - (x + m) * c
            out.append(_step((x + root) % p, (x + m + root) % p, b))
    return out


def _rd_allgather_for_bcast(p: int, n: float, root: int) -> list[Step]:
    """The allgather of MPICH ``MPIR_Bcast_intra_scatter_recursive_doubling_allgather`` on relative ranks, with its
    non-power-of-two fix-up (module docstring); ``curr``: the bytes each rank holds (MPICH's ``curr_size``), ``last``:
    the bytes it received last (``recv_size``, what the fix-up passes on)."""
    _, chunk = _chunks(p, n)
    x = np.arange(p)
    curr = chunk.copy()
    last = np.zeros(p)
    out = []
    mask, i = 1, 0
    while mask < p:
        dst = x ^ mask
        ok = dst < p
        out.append(_step((x[ok] + root) % p, (dst[ok] + root) % p, curr[ok]))
        last = np.where(ok, curr[np.minimum(dst, p - 1)], last)
        curr = curr + np.where(ok, last, 0.0)
        my_root = (x >> i) << i
        fix = ((dst >> i) << i) + mask > p
        nc = p - my_root - mask  # ranks of this subtree that had a partner (and so hold the partner subtree)
        k, t = i, mask >> 1
        while t and (fix & (nc > 0)).any():
            u = x ^ t
            tree_root = (x >> k) << k
            send = fix & (u > x) & (x < tree_root + nc) & (u >= tree_root + nc)
            if send.any():
                s, d = x[send], u[send]
                out.append(_step((s + root) % p, (d + root) % p, last[s]))
                curr[d] += last[s]
                last[d] = last[s]
            t >>= 1
            k -= 1
        mask <<= 1
        i += 1
    return out


def _ring_allgather_for_bcast(p: int, n: float, root: int) -> list[Step]:
    """The allgather of MPICH ``MPIR_Bcast_intra_scatter_ring_allgather``: in step ``i`` relative rank ``x`` sends
    the chunk of ``x - i + 1`` to ``x + 1``."""
    _, chunk = _chunks(p, n)
    x = np.arange(p)
    return [_step((x + root) % p, (x + 1 + root) % p, chunk[(x - i + 1) % p]) for i in range(1, p)]


def _bcast_scatter_recursive_doubling_allgather(p, n, root, o):
    return _scatter_for_bcast(p, n, root) + _rd_allgather_for_bcast(p, n, root)


def _bcast_scatter_ring_allgather(p, n, root, o):
    return _scatter_for_bcast(p, n, root) + _ring_allgather_for_bcast(p, n, root)


def _rd_fixup_steps(p: int) -> int:
    """Steps of MPICH's non-power-of-two fix-up in the recursive-doubling allgather of a broadcast: at level ``m``
    the boundary block has ``nc = p mod 2m - m`` ranks with a partner; sub-step ``t`` has messages iff
    ``0 < nc < 2t``."""
    total, m = 0, 1
    while m < p:
        nc = p % (2 * m) - m
        if nc > 0:
            t = m >> 1
            while t:
                total += nc < 2 * t
                t >>= 1
        m <<= 1
    return total


def _lg(p: int) -> int:
    """``log2 p'``, ``p'`` the largest power of two ``<= p``."""
    return p.bit_length() - 1


def _fold_steps(p: int) -> int:
    """The pre- and post-step of MPICH's fold of a non-power-of-two ``p`` (0 for a power of two)."""
    return 0 if _is_pof2(p) else 2


# --- the records -----------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Algorithm:
    """One algorithm of one collective op.

    Attributes
    ----------
    op, name
        The collective (``traffic.op``) and the algorithm's name (``traffic.algorithm``).
    build
        ``build(p, n, root, o)``: the schedule over ``p >= 2`` ranks of ``n`` bytes (the module's byte convention)
        from ``root`` with the options ``o`` (:class:`_Opts`), one ``(src, dst, bytes)`` per step.
    n_steps
        ``n_steps(p, o)``: the steps of the schedule (for the memory estimate before it is built): exact, except
        that the scatter of a ``scatter_*`` broadcast drops its steps without a message, those whose mask ``m``
        has ``m ceil(n / p) >= n`` (possible whenever ``p`` does not divide ``n``: 6 bytes over 5 ranks).
    n_messages
        ``n_messages(p, o)``: an upper bound on the messages of the schedule; None (the default): every step at
        most ``p``, ``p * n_steps(p, o)``.
    options
        The fields of :class:`_Opts` the schedule reads (it ignores the others).
    doc
        The library routine the schedule reproduces.
    """

    op: str
    name: str
    build: Callable[[int, float, int, _Opts], list[Step]]
    n_steps: Callable[[int, _Opts], int]
    n_messages: Optional[Callable[[int, _Opts], int]] = None
    options: tuple[str, ...] = ()
    doc: str = ""

    def __post_init__(self):
        unknown = set(self.options) - {f.name for f in fields(_Opts)}
        if unknown:
            raise ValueError(f"{self.op} {self.name}: options {sorted(unknown)} are not fields of _Opts")
        if self.n_messages is None:
            n_steps = self.n_steps
            object.__setattr__(self, "n_messages", lambda p, o: p * n_steps(p, o))


_RECORDS: tuple[Algorithm, ...] = (
    # allreduce
    Algorithm("allreduce", "ring", _allreduce_ring, lambda p, o: 2 * (p - 1),
              doc="MPICH MPIR_Allreduce_intra_ring"),
    Algorithm("allreduce", "recursive_doubling", _allreduce_recursive_doubling,
              lambda p, o: _lg(p) + _fold_steps(p), doc="MPICH MPIR_Allreduce_intra_recursive_doubling"),
    Algorithm("allreduce", "rabenseifner", _allreduce_rabenseifner, lambda p, o: 2 * _lg(p) + _fold_steps(p),
              doc="MPICH MPIR_Allreduce_intra_reduce_scatter_allgather"),
    Algorithm("allreduce", "binomial", _allreduce_binomial, lambda p, o: 2 * _log2_ceil(p),
              doc="MPICH MPIR_Reduce_intra_binomial then MPIR_Bcast_intra_binomial"),
    Algorithm("allreduce", "rabenseifner_ompi", _allreduce_rabenseifner_ompi,
              lambda p, o: 2 * _lg(p) + (0 if _is_pof2(p) else 3),
              doc="Open MPI ompi_coll_base_allreduce_intra_redscat_allgather"),
    # alltoall
    Algorithm("alltoall", "pairwise", _alltoall_pairwise, lambda p, o: p - 1,
              doc="MPICH MPIR_Alltoall_intra_pairwise"),
    Algorithm("alltoall", "bruck", _alltoall_bruck, lambda p, o: _log2_ceil(p), doc="MPICH MPIR_Alltoall_intra_brucks"),
    Algorithm("alltoall", "scattered", _alltoall_scattered, lambda p, o: -(-p // _throttle_block(p, o.throttle)),
              n_messages=lambda p, o: p * (p - 1), options=("throttle",),
              doc="MPICH MPIR_Alltoall_intra_scattered (SMPI mvapich2_scatter_dest: throttle 4)"),
    Algorithm("alltoall", "ring", _alltoall_ring, lambda p, o: p - 1,
              doc="SMPI alltoall-ring (Open MPI pairwise)"),
    Algorithm("alltoall", "linear", _alltoall_linear, lambda p, o: 1, n_messages=lambda p, o: p * (p - 1),
              doc="Open MPI basic_linear (linear_sync without a request limit, two_proc)"),
    # allgather
    Algorithm("allgather", "ring", _allgather_ring, lambda p, o: p - 1, doc="MPICH MPIR_Allgather_intra_ring"),
    Algorithm("allgather", "recursive_doubling", _allgather_recursive_doubling, lambda p, o: _log2_ceil(p),
              doc="MPICH MPIR_Allgather_intra_recursive_doubling (a power of two), else MPIR_Allgather_intra_brucks"),
    Algorithm("allgather", "bruck", _allgather_bruck, lambda p, o: _log2_ceil(p),
              doc="MPICH MPIR_Allgather_intra_brucks"),
    Algorithm("allgather", "direct_ring", _allgather_direct_ring, lambda p, o: p - 1, doc="SMPI allgather-ring"),
    Algorithm("allgather", "neighbor_exchange", _allgather_neighbor_exchange,
              lambda p, o: p - 1 if p % 2 else p // 2,
              doc="Open MPI ompi_coll_base_allgather_intra_neighborexchange (odd p: its ring fallback)"),
    # broadcast
    Algorithm("broadcast", "binomial", _bcast_binomial, lambda p, o: _log2_ceil(p),
              doc="MPICH MPIR_Bcast_intra_binomial"),
    Algorithm("broadcast", "pipelined_ring", _bcast_pipelined_ring, lambda p, o: p - 2 + o.segments,
              options=("segments",), doc="a chain from the root in n_segments segments (Open MPI chain / pipeline)"),
    Algorithm("broadcast", "scatter_recursive_doubling_allgather", _bcast_scatter_recursive_doubling_allgather,
              lambda p, o: 2 * _log2_ceil(p) + _rd_fixup_steps(p),
              doc="MPICH MPIR_Bcast_intra_scatter_recursive_doubling_allgather"),
    Algorithm("broadcast", "scatter_ring_allgather", _bcast_scatter_ring_allgather,
              lambda p, o: _log2_ceil(p) + p - 1, doc="MPICH MPIR_Bcast_intra_scatter_ring_allgather"),
    Algorithm("broadcast", "linear", _bcast_linear, lambda p, o: 1, doc="Open MPI basic_linear"),
)
"""Every algorithm, per op in the order of :data:`~evaluator.traffic._collectives.COLLECTIVES` (the first of an
op its default)."""


def _registry(records: tuple[Algorithm, ...]) -> dict[tuple[str, str], Algorithm]:
    out: dict[tuple[str, str], Algorithm] = {}
    for a in records:
        if (a.op, a.name) in out:
            raise ValueError(f"two records for {a.op} {a.name}")
        out[a.op, a.name] = a
    return out


ALGORITHMS: dict[tuple[str, str], Algorithm] = _registry(_RECORDS)
"""(op, algorithm) -> its :class:`Algorithm`, in the order of :data:`_RECORDS`."""


def algorithms_by_op() -> dict[str, tuple[str, ...]]:
    """Op -> the names of its algorithms in record order (:data:`~evaluator.traffic._collectives.COLLECTIVES`)."""
    out: dict[str, tuple[str, ...]] = {}
    for op, name in ALGORITHMS:
        out[op] = out.get(op, ()) + (name,)
    return out


def _n_steps(op: str, algorithm: str, p: int, o: _Opts) -> int:
    """:attr:`Algorithm.n_steps` of ``(op, algorithm)``."""
    return ALGORITHMS[op, algorithm].n_steps(p, o)


def _n_messages(op: str, algorithm: str, p: int, o: _Opts) -> int:
    """:attr:`Algorithm.n_messages` of ``(op, algorithm)``."""
    return ALGORITHMS[op, algorithm].n_messages(p, o)
