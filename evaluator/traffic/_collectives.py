"""MPI collectives by algorithm (``collective``): one phase per algorithm step, exact bytes per step.

A collective over ``p`` ranks is a sequence of point-to-point exchanges, each
step starting when the previous one has finished; here every step is one
phase of a :class:`~evaluator.traffic.PhasedTraffic` (its time the contention
bound of that step's flows), with the bytes the named algorithm sends in that
step. ``docs/collectives.md`` has the tables (algorithms, selection rules,
sources); this docstring is the reference for the schedules.

Byte convention
---------------

``nbytes`` is the *per-rank vector size* in bytes:

* ``allreduce``: the size of each rank's vector (input = output size);
* ``allgather``: each rank's contribution (the result is ``p * nbytes``);
* ``alltoall``: the bytes each rank sends to EACH other rank;
* ``broadcast``: the root's message.

Byte counts are real numbers: a vector cut into ``k`` blocks gives blocks of
``nbytes / k`` bytes (no rounding to whole elements; MPICH gives the first
``count % k`` blocks one element more). The exception is the scatter of the
two ``scatter_*`` broadcasts, whose chunking decides which ranks send how
much: as MPICH, chunk ``j`` (relative rank ``j``) is ``min(c, max(0, n - j c))``
bytes with ``c = ceil(n / p)``, so the last chunks are short or empty when
``p`` does not divide ``n``.

Algorithms (:data:`COLLECTIVES`; the first of each op is its default)
--------------------------------------------------------------------

``p'`` is the largest power of two ``<= p``, ``r = p - p'``, ``L = ceil(log2 p)``.

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
    ``rabenseifner_ompi``: Open MPI's ``ompi_coll_base_allreduce_intra_redscat_allgather``:
    ``rabenseifner`` for a power of two; otherwise Open MPI's own fold (below).
alltoall
    ``pairwise``: ``p - 1`` steps; in step ``i`` (1 ... ``p - 1``) rank ``x``
    sends ``nbytes`` to ``x XOR i`` when ``p`` is a power of two, else to
    ``(x + i) mod p`` (receiving from ``(x - i) mod p``), as MPICH
    ``MPIR_Alltoall_intra_pairwise``. ``bruck``: ``ceil(log2 p)`` steps; in
    step ``k`` rank ``x`` sends to ``(x + 2^k) mod p`` the packed blocks whose
    index ``j`` (0 ... ``p - 1``, after the local rotation) has bit ``k`` set:
    ``nbytes * (floor(p / 2^(k+1)) 2^k + max(0, p mod 2^(k+1) - 2^k))`` bytes
    (MPICH ``MPIR_Alltoall_intra_brucks``). ``scattered``: MPICH
    ``MPIR_Alltoall_intra_scattered`` with ``b = throttle`` (MPICH's
    ``MPIR_CVAR_ALLTOALL_THROTTLE``, default 32; 0: ``p``): ``ceil(p / b)``
    steps; in step ``j`` rank ``x`` posts, for ``i = 0 ... min(b, p - j b) - 1``,
    a send of ``nbytes`` to ``(x - i - j b) mod p`` (and a receive from
    ``(x + i + j b) mod p``), all at once (the self copy ``i = j = 0`` moves no
    byte). SMPI's ``mvapich2_scatter_dest`` posts the same partners with
    ``b = min(4, p)``: ``throttle = 4``. ``ring``: SMPI's ``alltoall-ring``:
    ``p - 1`` steps, in step ``i`` rank ``x`` sends ``nbytes`` to ``(x + i) mod p``
    for every ``p`` (= ``pairwise`` when ``p`` is not a power of two; Open
    MPI's ``pairwise``). ``linear``: one step, every rank sends ``nbytes`` to
    every other (Open MPI's ``basic_linear``; its ``linear_sync`` with no request
    limit and ``two_proc`` are the same).
allgather
    ``ring``: ``p - 1`` steps, every rank sends one block (``nbytes``) to
    ``rank + 1`` (the block it received in the step before). ``recursive_doubling``:
    for a power-of-two ``p``, ``log2 p`` steps, rank ``x`` sends its ``2^k``
    blocks to ``x XOR 2^k``; otherwise Bruck (below). ``bruck``: MPICH
    ``MPIR_Allgather_intra_brucks`` for every ``p``: ``ceil(log2 p)`` steps, in
    step ``k`` rank ``x`` sends ``min(2^k, p - 2^k)`` blocks to ``(x - 2^k) mod p``.
    ``direct_ring``: SMPI's ``allgather-ring``: ``p - 1`` steps, in step ``i``
    rank ``x`` sends its OWN block to ``(x + i) mod p``. ``neighbor_exchange``:
    Open MPI's ``ompi_coll_base_allgather_intra_neighborexchange``: even ``p``:
    ``p / 2`` steps; step 0: even ``x`` and ``x + 1`` exchange their blocks;
    step ``i >= 1``: every rank exchanges the two blocks it received last with
    ``x + 1`` (even ``x``, even ``i``; odd ``x``, odd ``i``) or ``x - 1`` (the
    others); odd ``p``: the ``ring``, as Open MPI falls back.
broadcast
    ``binomial``: ``ceil(log2 p)`` steps from ``root`` (MPICH
    ``MPIR_Bcast_intra_binomial``): in step ``k`` with ``m = 2^(L-1-k)``,
    ``L = ceil(log2 p)``, every relative rank ``x`` with ``x mod 2m = 0`` and
    ``x + m < p`` sends the message to ``x + m``. ``pipelined_ring``: the
    message is cut into ``n_segments`` equal segments (the segment parameter is
    a *count*, not a size: the number of phases, ``p - 2 + n_segments``, stays
    bounded whatever the message size) sent down the chain ``root, root + 1,
    ..., root + p - 1`` (mod ``p``); in step ``t`` the rank at chain position
    ``j`` forwards segment ``t - j`` to position ``j + 1``. ``n_segments = None``
    with a network: :func:`pipeline_segments`. ``scatter_recursive_doubling_allgather``
    (MPICH ``MPIR_Bcast_intra_scatter_recursive_doubling_allgather``): the
    binomial scatter of MPICH's ``MPII_Scatter_for_bcast`` (``L`` steps, the
    binomial partners; relative rank ``x`` sends to ``x + m`` the chunks of
    ``[x + m, min(x + 2m, p))``, ``min(n, min(x + 2m, p) c) - (x + m) c`` bytes,
    no message when that is not positive), then a recursive-doubling allgather
    on relative ranks: step ``k`` (``m = 2^k``), ``x`` sends all it holds (the
    chunks of its aligned ``2^k`` subtree, clipped at ``p``) to ``x XOR m`` when
    that is ``< p``; for ``p`` not a power of two MPICH's fix-up follows a step
    where a subtree had no partner (below). ``scatter_ring_allgather`` (MPICH
    ``MPIR_Bcast_intra_scatter_ring_allgather``): the same scatter, then
    ``p - 1`` ring steps, in step ``i`` every rank sends to ``rank + 1`` the chunk
    of relative rank ``x - i + 1`` (its own first). In both allgathers the root
    receives the chunks it already holds, and chunks of 0 bytes are sent as
    0-byte messages, as MPICH does. ``linear``: one step, the root sends the
    message to every other rank at once (Open MPI's ``basic_linear``).

Non-power-of-two process counts
-------------------------------

* ``recursive_doubling`` and ``rabenseifner`` allreduce fold the extra ranks
  as MPICH does: a pre-step in which the even ranks ``< 2r`` send their whole
  vector to ``rank + 1`` (and drop out), the algorithm on the ``p'``
  remaining ranks (new rank ``x`` is rank ``2x + 1`` for ``x < r``, else
  ``x + r``), and a post-step in which the odd ranks ``< 2r`` send the whole
  result to ``rank - 1``: ``log2 p' + 2`` steps (``2 log2 p' + 2``).
* ``rabenseifner_ompi`` folds as Open MPI: the ranks ``< 2r`` exchange halves
  (even ``x`` sends the right half, ``n/2``, to ``x + 1``, which sends the left
  half to ``x``), then the odd ones send their reduced right half (``n/2``) to
  ``x - 1`` and drop out; the ``p'`` remaining ranks are new rank ``x`` = rank
  ``2x`` for ``x < r``, else ``x + r``; after the allgather the even ranks
  ``< 2r`` send the whole result to ``x + 1``: ``2 log2 p' + 3`` steps.
* ``recursive_doubling`` allgather on a non-power-of-two ``p`` is the Bruck
  allgather, as MPICH selects (its ``MPIR_Allgather_intra_recursive_doubling``
  is restricted to power-of-two communicators; for the others MPICH uses
  ``MPIR_Allgather_intra_brucks``) and as Open MPI falls back.
* ``scatter_recursive_doubling_allgather`` on a non-power-of-two ``p``: MPICH's
  fix-up. After the exchange of step ``k`` (``m = 2^k``), in the aligned block of
  ``2m`` relative ranks ``[T, T + 2m)`` with ``T + m < p < T + 2m``, the
  ``nc = p - T - m`` ranks that had a partner pass the partner subtree's bytes on
  by recursive halving, one step per ``t = m/2, ..., 1`` that has messages:
  with ``u = x XOR t`` and ``R = x`` rounded down to a multiple of ``2t``, ``x``
  sends to ``u`` when ``u > x``, ``x < R + nc`` and ``u >= R + nc`` (the bytes it
  received last).
* ``ring``, ``pairwise``, ``bruck``, ``binomial``, ``scattered``, ``linear``,
  ``direct_ring``, ``scatter_ring_allgather`` and ``pipelined_ring`` need no power of two.

Selection (``algorithm="auto"``)
--------------------------------

:func:`select_algorithm` picks the algorithm by op, ``p`` and ``nbytes`` (a
count of 1-byte elements, ``MPI_BYTE`` / ``MPI_CHAR``, where a rule uses the
count; allreduce with a commutative built-in op): ``mpich`` (MPICH's CVAR
rules), ``mpich4`` (the default tuning file of MPICH 3.4 - 5.0), ``smpi_mpich``
(SimGrid 3.32 SMPI's ``mpich`` selector on ``MPI_COMM_WORLD``, one rank per
host) or ``ompi`` (Open MPI's ``coll_tuned_decision_fixed.c`` as SMPI 3.32
transcribes it); an Open MPI choice that is not modelled is a
:class:`~evaluator.errors.ConfigError`, never a substitute.

One rank
--------

:func:`collective_steps` of ``p = 1`` is an empty list (no step moves a
byte); :func:`collective` refuses it (:class:`~evaluator.errors.ConfigError`
naming ``traffic.n_tasks``): an exchange without bytes has no completion time.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Optional, no_type_check

import numpy as np

from .._types import FlowFloats, FlowInts
from ..errors import (ConfigError, WordedError, check_memory, is_int, nearest, positive_float, positive_int,
                      require)
from ._collective_algorithms import (ALGORITHMS, DEFAULT_SEGMENTS, DEFAULT_THROTTLE, _is_pof2, _n_messages, _n_steps,
                                     _Opts, algorithms_by_op)
from .base import PhasedTraffic, Traffic, TrafficKind, tasks_or_nodes

__all__ = ["COLLECTIVES", "SELECTIONS", "collective_steps", "collective", "select_algorithm", "optimal_segments",
           "pipeline_segments", "CollectiveConfig", "COLLECTIVE"]

COLLECTIVES: dict[str, tuple[str, ...]] = algorithms_by_op()
"""Collective op -> its algorithms; the first is the op's default (the records of
:data:`~evaluator.traffic._collective_algorithms.ALGORITHMS`, in their order)."""

SELECTIONS: tuple[str, ...] = ("mpich", "mpich4", "smpi_mpich", "ompi")
"""Rule sets of ``algorithm="auto"`` (:func:`select_algorithm`); the first is the default."""

MAX_SEGMENTS = 1024
"""The largest segment count :func:`optimal_segments` returns (``p - 2 + 1024`` phases at most)."""

STEP_BYTES = 1536.0
"""Memory of one step besides its messages' 24 bytes each: its three arrays (about 650 B) and its phase in
:func:`collective` (about 600 B more); a schedule of many small steps (a ``pipelined_ring`` of many segments)
is refused by it before it is built."""


# --- checks ----------------------------------------------------------------------------------------------------

def _check_op(op, algorithm, allow_auto: bool = False) -> tuple[str, str]:
    if not isinstance(op, str) or op not in COLLECTIVES:
        raise ConfigError("traffic.op", op, f"one of {list(COLLECTIVES)}", nearest(op, COLLECTIVES))
    algs = COLLECTIVES[op]
    if algorithm is None:
        return op, algs[0]
    if allow_auto and algorithm == "auto":
        return op, algorithm
    if not isinstance(algorithm, str) or algorithm not in algs:
        other = [o for o, a in COLLECTIVES.items() if algorithm in a]
        hint = nearest(algorithm, algs) or (f"{algorithm!r} is an algorithm of {other}." if other else None)
        raise ConfigError("traffic.algorithm", algorithm,
                          f"one of {list(algs)} for traffic.op = {op!r}, 'auto' (chosen by traffic.selection), "
                          f"or null (its default, {algs[0]!r})", hint)
    return op, algorithm


def _check_root(root, p: int) -> int:
    require(is_int(root) and 0 <= int(root) < p, "traffic.root", root,
            f"a rank of the communicator, an integer in [0, {p - 1}]")
    return int(root)


def _check_selection(selection) -> str:
    if not isinstance(selection, str) or selection not in SELECTIONS:
        raise ConfigError("traffic.selection", selection, f"one of {list(SELECTIONS)}", nearest(selection, SELECTIONS))
    return selection


def _check_throttle(throttle) -> int:
    t = DEFAULT_THROTTLE if throttle is None else throttle
    require(is_int(t) and int(t) >= 0, "traffic.throttle", throttle,
            "an integer >= 0 (destinations a scattered alltoall posts at once; 0: all)")
    return int(t)


def _check_segments(n_segments) -> int:
    return positive_int("traffic.n_segments", DEFAULT_SEGMENTS if n_segments is None else n_segments)


# --- selection (algorithm="auto") ------------------------------------------------------------------------------

def _select_mpich(op: str, p: int, n: float, json: bool) -> tuple[str, dict]:
    """MPICH's size rules. ``json=False``: the CVAR rules (MPICH 3.3 ``MPIR_<Op>_intra_auto``, MPICH 4.x
    ``MPIR_I<op>_intra_sched_auto``); ``json=True``: the default tuning file of MPICH 3.4 - 5.0
    (``maint/tuning/coll/mpir/generic.json``)."""
    pow2 = _is_pof2(p)
    if op == "allreduce":  # MPIR_CVAR_ALLREDUCE_SHORT_MSG_SIZE = 2048 (the tuning file: avg_msg_size <= 8)
        pof2 = 1 << (p.bit_length() - 1)
        short = n <= (8 if json else 2048)
        return ("recursive_doubling" if short or n < pof2 else "rabenseifner"), {}
    if op == "broadcast":  # MPIR_CVAR_BCAST_SHORT_MSG_SIZE 12288, _LONG_MSG_SIZE 524288, _MIN_PROCS 8
        short = n <= 12288 if json else n < 12288
        medium = n <= 524288 if json else n < 524288
        if short or p < 8:
            return "binomial", {}
        if medium and pow2:
            return "scatter_recursive_doubling_allgather", {}
        return "scatter_ring_allgather", {}
    if op == "alltoall":  # MPIR_CVAR_ALLTOALL_SHORT_MSG_SIZE 256, _MEDIUM_MSG_SIZE 32768, _THROTTLE 32
        if n <= 256 and p >= 8:
            return "bruck", {}
        if n <= 32768:
            return "scattered", {"throttle": DEFAULT_THROTTLE}
        return "pairwise", {}
    total = p * n  # allgather: MPIR_CVAR_ALLGATHER_LONG_MSG_SIZE 524288, _SHORT_MSG_SIZE 81920
    if total < 524288 and pow2:
        return "recursive_doubling", {}
    if total < 81920:
        return "bruck", {}
    return "ring", {}


def _smpi_error(op: str, p: int, n: float, what: str, why: str) -> WordedError:
    return WordedError(
        f"traffic.selection = 'smpi_mpich': SimGrid 3.32 SMPI's mpich selector (smpi_mpich_selector.cpp) runs "
        f"{what} for {op} over p = {p} ranks and {n:g} bytes, {why}; no schedule of this module is that run. "
        f"Choose traffic.algorithm explicitly (one of {list(COLLECTIVES[op])}) or another traffic.selection.",
        "traffic.selection", "smpi_mpich", f"one of {list(SELECTIONS)} whose choice is modelled")


def _select_smpi_mpich(op: str, p: int, n: float, root: int) -> tuple[str, dict]:
    """SMPI 3.32's ``mpich`` selector on ``MPI_COMM_WORLD`` with one rank per host (``smpi_mpich_selector.cpp``)."""
    if op == "allreduce":  # mvapich2_two_level: rdb among the host leaders = rdb with one rank per host
        return "recursive_doubling", {}
    if op == "broadcast":  # SMP_binomial: binomial among the hosts (binomial_tree with one rank per host)
        if root != 0:
            raise _smpi_error(op, p, n, f"'SMP_binomial' with root {root}",
                              "which sends the message to rank 0 first and then broadcasts from rank 0")
        return "binomial", {}
    if op == "alltoall":
        if n < 256 and p >= 8:
            return "bruck", {}
        if n < 32768:
            return "scattered", {"throttle": 4}  # mvapich2_scatter_dest: MV2_ALLTOALL_THROTTLE_FACTOR 4
        if p % 2 and not _is_pof2(p):
            raise _smpi_error(op, p, n, "'pair'", "which aborts for a p that is not a power of two (an SMPI bug)")
        return "ring", {}
    total = p * n
    if _is_pof2(p) and total < 524288:
        return "recursive_doubling", {}
    if total <= 81920:
        return "bruck", {}
    return "direct_ring", {}


# Open MPI's fixed decisions (coll_tuned_decision_fixed.c), as SimGrid 3.32 transcribes them in
# src/smpi/colls/smpi_openmpi_selector.cpp (identical thresholds to Open MPI's file of 2026): per op, rows
# (communicator-size test, [(size bound, algorithm), ...]); the first row whose test holds, then the first
# (bound, algorithm) with size < bound (None: no bound). Sizes: allreduce, bcast the message; alltoall the bytes
# per destination; allgather the bytes per rank (Open MPI's total_dsize of these ops).
_OMPI_TABLES: dict[str, list] = {
    "allreduce": [  # the commutative branch (our reductions are sums)
        (("<", 4), [(8, 4), (4096, 3), (8192, 4), (16384, 3), (65536, 4), (262144, 5), (None, 6)]),
        (("<", 8), [(16, 4), (8192, 3), (None, 6)]),
        (("<", 16), [(8192, 3), (None, 6)]),
        (("<", 32), [(64, 5), (4096, 3), (None, 6)]),
        (("<", 64), [(128, 5), (None, 6)]),
        (("<", 128), [(262144, 3), (None, 6)]),
        (("<", 256), [(131072, 2), (262144, 3), (None, 6)]),
        (("<", 512), [(4096, 2), (None, 6)]),
        (("<", 2048), [(2048, 2), (16384, 3), (None, 6)]),
        (("<", 4096), [(2048, 2), (4096, 5), (16384, 3), (None, 6)]),
        (None, [(2048, 2), (16384, 5), (32768, 3), (None, 6)]),
    ],
    "alltoall": [
        (("==", 2), [(2, 2), (4, 5), (16, 2), (64, 5), (256, 2), (4096, 5), (32768, 2), (262144, 4), (1048576, 5),
                     (None, 2)]),
        (("<", 8), [(8192, 4), (16384, 1), (65536, 4), (524288, 1), (1048576, 2), (None, 1)]),
        (("<", 16), [(262144, 4), (None, 1)]),
        (("<", 32), [(4, 4), (512, 3), (8192, 4), (32768, 1), (262144, 4), (524288, 1), (None, 4)]),
        (("<", 64), [(512, 3), (524288, 1), (None, 4)]),
        (("<", 128), [(1024, 3), (2048, 1), (4096, 4), (262144, 1), (None, 2)]),
        (("<", 256), [(1024, 3), (2048, 4), (262144, 1), (None, 2)]),
        (("<", 512), [(1024, 3), (8192, 4), (32768, 1), (None, 2)]),
        (("<", 1024), [(512, 3), (8192, 4), (16384, 1), (131072, 4), (262144, 1), (None, 2)]),
        (("<", 2048), [(512, 3), (1024, 4), (2048, 1), (16384, 4), (262144, 1), (None, 4)]),
        (("<", 4096), [(1024, 3), (4096, 4), (8192, 1), (131072, 4), (None, 1)]),
        (None, [(2048, 3), (8192, 4), (16384, 1), (32768, 4), (65536, 1), (None, 4)]),
    ],
    "broadcast": [
        (("<", 4), [(32, 3), (256, 5), (512, 3), (1024, 7), (32768, 1), (131072, 5), (262144, 2), (524288, 1),
                    (1048576, 6), (None, 5)]),
        (("<", 8), [(64, 5), (128, 6), (2048, 5), (8192, 6), (1048576, 1), (None, 2)]),
        (("<", 16), [(8, 7), (64, 5), (4096, 7), (16384, 5), (32768, 6), (None, 1)]),
        (("<", 32), [(4096, 7), (1048576, 6), (None, 8)]),
        (("<", 64), [(2048, 6), (None, 7)]),
        (("<", 128), [(None, 7)]),
        (("<", 256), [(2, 6), (16384, 5), (32768, 1), (65536, 5), (None, 7)]),
        (("<", 1024), [(16384, 7), (32768, 4), (None, 7)]),
        (("<", 2048), [(524288, 7), (None, 8)]),
        (("<", 4096), [(262144, 7), (None, 8)]),
        (None, [(8192, 7), (16384, 5), (262144, 7), (None, 8)]),
    ],
    "allgather": [
        (("==", 2), [(None, 6)]),
        (("<", 32), [(None, 3)]),
        (("<", 64), [(1024, 3), (65536, 5), (None, 4)]),
        (("<", 128), [(512, 3), (65536, 5), (None, 4)]),
        (("<", 256), [(512, 3), (131072, 5), (524288, 4), (1048576, 5), (None, 4)]),
        (("<", 512), [(32, 3), (128, 2), (1024, 3), (131072, 5), (524288, 4), (1048576, 5), (None, 4)]),
        (("<", 1024), [(64, 3), (256, 2), (2048, 3), (None, 5)]),
        (("<", 2048), [(4, 3), (8, 2), (16, 3), (32, 2), (256, 3), (512, 2), (4096, 3), (None, 5)]),
        (("<", 4096), [(32, 2), (128, 3), (512, 2), (4096, 3), (None, 5)]),
        (None, [(2, 3), (8, 2), (16, 3), (512, 2), (4096, 3), (None, 5)]),
    ],
}

OMPI_ALGORITHMS: dict[str, dict[int, str]] = {
    "allreduce": {1: "basic_linear", 2: "nonoverlapping", 3: "recursive_doubling", 4: "ring", 5: "segmented_ring",
                  6: "rabenseifner"},
    "alltoall": {1: "linear", 2: "pairwise", 3: "modified_bruck", 4: "linear_sync", 5: "two_proc"},
    "broadcast": {1: "basic_linear", 2: "chain", 3: "pipeline", 4: "split_binary_tree", 5: "binary_tree",
                  6: "binomial", 7: "knomial", 8: "scatter_allgather", 9: "scatter_allgather_ring"},
    "allgather": {1: "linear", 2: "bruck", 3: "recursive_doubling", 4: "ring", 5: "neighbor", 6: "two_proc"},
}
"""Open MPI's algorithm numbers (``coll_tuned_*_decision.c``) per op."""

_OMPI_UNMODELLED = {
    ("allreduce", 1): "a reduce to rank 0 then a broadcast, both linear",
    ("allreduce", 2): "MPI_Reduce to rank 0 then MPI_Bcast, each by Open MPI's own decision",
    ("broadcast", 4): "two binary trees, each sending half the message",
    ("broadcast", 5): "a binary tree whose ranks send to both children at once",
    ("broadcast", 6): "Open MPI's binomial tree: a rank sends to all its children at once, not one child per "
                      "step as MPICH's",
    ("broadcast", 7): "a k-nomial tree (radix 4) whose ranks send to all their children at once",
    ("broadcast", 9): "Open MPI's scatter + ring allgather (unverified against ours)",
    ("allgather", 1): "a gather to rank 0 then a broadcast",
}


def _ompi_choice(op: str, p: int, n: float) -> int:
    """Open MPI's algorithm number for ``op`` over ``p`` ranks and ``n`` bytes (:data:`_OMPI_TABLES`)."""
    for test, rows in _OMPI_TABLES[op]:
        if test is None or (test[0] == "==" and p == test[1]) or (test[0] == "<" and p < test[1]):
            for bound, alg in rows:
                if bound is None or n < bound:
                    return alg
    raise AssertionError("unreachable: every table ends with an unbounded row")


def _select_ompi(op: str, p: int, n: float) -> tuple[str, dict]:
    alg = _ompi_choice(op, p, n)
    name = OMPI_ALGORITHMS[op][alg]
    count = n  # elements of 1 byte
    if op == "allreduce":
        if alg == 3:
            return "recursive_doubling", {}
        if alg in (4, 5):  # segmented ring with segsize 0 is the ring; the ring falls back for count < p
            return ("ring" if count >= p else "recursive_doubling"), {}
        if alg == 6:
            return "rabenseifner_ompi", {}
    elif op == "alltoall":
        if alg in (1, 4, 5):  # linear_sync without a request limit (the default) and two_proc (p = 2): linear
            return "linear", {}
        if alg == 2:
            return "ring", {}
        if alg == 3:
            return "bruck", {}
    elif op == "allgather":
        if alg == 2:
            return "bruck", {}
        if alg == 3:
            return "recursive_doubling", {}
        if alg in (4, 6):
            return "ring", {}
        if alg == 5:
            return ("neighbor_exchange" if p % 2 == 0 else "ring"), {}
    else:  # broadcast; the fixed decisions pass segsize 0 (one segment) and fan-out 0 (a chain of fan-out 1)
        if alg == 1:
            return "linear", {}
        if alg in (2, 3):
            return "pipelined_ring", {"n_segments": 1}
        if alg == 8:
            return ("scatter_recursive_doubling_allgather" if count >= p else "linear"), {}
        if alg in (4, 5, 6, 7) and p == 2:  # one message root -> the other rank, whatever the tree
            return "binomial", {}
    raise WordedError(
        f"traffic.selection = 'ompi': Open MPI's fixed decision (coll_tuned_decision_fixed.c, as SimGrid 3.32 "
        f"transcribes it) picks {op} algorithm {alg} ({name!r}) for p = {p} ranks and {n:g} bytes, which this "
        f"module does not model ({_OMPI_UNMODELLED.get((op, alg), 'no schedule here is the same')}). Choose "
        f"traffic.algorithm explicitly (one of {list(COLLECTIVES[op])}) or another traffic.selection.",
        "traffic.selection", "ompi", f"one of {list(SELECTIONS)} whose choice is modelled")


def select_algorithm(op: str, n_ranks: int, nbytes: float, selection: str = "mpich", *, root: int = 0
                     ) -> tuple[str, dict[str, Any]]:
    """The algorithm a library's rules pick for collective ``op`` over ``n_ranks`` ranks and ``nbytes`` bytes.

    Parameters
    ----------
    op
        ``"allreduce"``, ``"alltoall"``, ``"allgather"`` or ``"broadcast"``.
    n_ranks
        Ranks of the communicator (>= 1).
    nbytes
        The per-rank vector size in bytes (:func:`collective_steps`' convention; where a rule uses the element
        count, elements of 1 byte).
    selection
        ``"mpich"`` (MPICH's CVAR rules: MPICH 3.3 ``MPIR_<Op>_intra_auto``, the same comparisons as MPICH 4.x
        ``MPIR_I<op>_intra_sched_auto``), ``"mpich4"`` (the default tuning file of MPICH 3.4 - 5.0's blocking
        collectives), ``"smpi_mpich"`` (SimGrid 3.32 SMPI's ``mpich`` selector on ``MPI_COMM_WORLD``, one rank
        per host) or ``"ompi"`` (Open MPI's fixed decisions as SMPI 3.32 transcribes them). docs/collectives.md
        has the tables and their sources.
    root
        The broadcast's root (``smpi_mpich`` models only root 0).

    Returns
    -------
    (algorithm, params)
        An algorithm of ``COLLECTIVES[op]`` and the parameters the library fixes (``{"throttle": b}`` for a
        scattered alltoall, ``{"n_segments": 1}`` for Open MPI's unsegmented chain), ``{}`` when none.

    Raises
    ------
    ConfigError
        A bad argument, or a choice no schedule of this module reproduces (named: op, ``p``, bytes and the
        library's algorithm): SMPI's ``pair`` alltoall for an odd ``p`` (it aborts), SMPI's broadcast from a root
        other than 0, Open MPI's unmodelled algorithms (never silently substituted).
    """
    op, _ = _check_op(op, None)
    p = positive_int("traffic.n_tasks", n_ranks)
    n = positive_float("traffic.bytes", nbytes, allow_zero=True)
    selection = _check_selection(selection)
    root = _check_root(root, p)
    if selection in ("mpich", "mpich4"):
        return _select_mpich(op, p, n, json=selection == "mpich4")
    if selection == "smpi_mpich":
        return _select_smpi_mpich(op, p, n, root)
    return _select_ompi(op, p, n)


# --- pipeline segments -----------------------------------------------------------------------------------------

def optimal_segments(n_ranks: int, nbytes: float, bandwidth: float, latency: float, *,
                     eager_threshold: float | None = None, rendezvous_latency: float = 0.0,
                     max_segments: int = MAX_SEGMENTS) -> int:
    """The segment count ``S`` in ``[1, max_segments]`` minimising a pipelined ring broadcast's time.

    ``T(S) = (p - 2 + S) (n / (S B) + lam(S))``: ``p - 2 + S`` steps, each one segment of ``n / S`` bytes over a
    link of ``bandwidth`` ``B`` plus one message latency, ``lam(S) = latency + rendezvous_latency`` when the
    segment exceeds ``eager_threshold`` (bytes; None: never), else ``latency``. Within a latency regime
    ``T`` is convex with its real minimum at ``sqrt((p - 2) n / (B lam))``; the answer is the better of its two
    integer neighbours (clamped to the regime's range), over both regimes; ties go to the smaller ``S``. With
    no latency at all (``latency = 0``) more segments always help and there is no optimum:
    :data:`DEFAULT_SEGMENTS` (today's default); so too where only ``rendezvous_latency`` is given and no segment
    can exceed ``eager_threshold`` (None, or ``nbytes`` within it): it returned ``max_segments`` until 2026-12-07.
    """
    p = positive_int("n_ranks", n_ranks)
    n = positive_float("nbytes", nbytes)
    B = positive_float("bandwidth", bandwidth)
    lam = positive_float("latency", latency, allow_zero=True)
    rv = positive_float("rendezvous_latency", rendezvous_latency, allow_zero=True)
    top = positive_int("max_segments", max_segments)
    rendezvous = eager_threshold is not None and rv > 0 and n > positive_float(
        "eager_threshold", eager_threshold, allow_zero=True)  # some segment count (S = 1 at least) pays rv
    if lam == 0.0 and not rendezvous:  # no segment pays a latency (rv without a threshold a message exceeds: none)
        return DEFAULT_SEGMENTS

    def cost(S: int) -> float:
        big = eager_threshold is not None and n / S > eager_threshold
        return (p - 2 + S) * (n / (S * B) + lam + (rv if big else 0.0))

    if eager_threshold is None:
        regimes = [(1, top, lam)]
    else:
        e = positive_float("eager_threshold", eager_threshold, allow_zero=True)
        first_eager = math.inf if e == 0 else max(1, math.ceil(n / e))  # smallest S with n / S <= e
        if first_eager != math.inf:
            while n / first_eager > e:
                first_eager += 1
            while first_eager > 1 and n / (first_eager - 1) <= e:
                first_eager -= 1
        regimes = [(1, int(min(first_eager - 1, top)), lam + rv), (int(min(first_eager, top + 1)), top, lam)]
    candidates = set()
    for lo, hi, lr in regimes:
        if lo > hi:
            continue
        candidates.update((lo, hi))
        if lr > 0:
            s = math.sqrt(max(p - 2, 0) * n / (B * lr))
            candidates.update(min(max(v, lo), hi) for v in (math.floor(s), math.ceil(s)))
    return min(candidates, key=lambda S: (cost(S), S))


def pipeline_segments(topology, n_ranks: int, nbytes: float) -> int:
    """:func:`optimal_segments` on the network ``topology`` (a :class:`~evaluator.topology.Topology`).

    ``B`` is the smallest link capacity of the network (router links, injection and ejection: a segment crosses
    one of each at least); ``lam`` the latency of a one-hop message from the topology's latency model
    (``topology.latency``): ``overhead + wire(injection) + wire(ejection) + 2 router`` plus the smallest wire
    latency of a router-link class, and ``2 R lam`` more for a segment above the eager threshold (``R`` the
    rendezvous round trips), as :mod:`evaluator.latency` charges a message. No latency model, or ``lam = 0``:
    :data:`DEFAULT_SEGMENTS`.
    """
    lat = getattr(topology, "latency", None)
    if lat is None:
        return DEFAULT_SEGMENTS
    cap = np.asarray(topology.capacity, dtype=np.float64)
    cap = cap[cap > 0]
    nr = int(topology.n_router_links)
    classes = tuple(topology.class_names)
    router_classes = {classes[c] for c in np.unique(np.asarray(topology.link_class)[:nr])}
    wire = min((lat.wire(c) for c in router_classes), default=0.0)
    lam = lat.overhead + lat.wire("injection") + lat.wire("ejection") + (2 if nr else 1) * lat.router + wire
    rv = 2 * lat.rendezvous_round_trips * lam if lat.eager_threshold is not None else 0.0
    return optimal_segments(n_ranks, nbytes, float(cap.min()), lam, eager_threshold=lat.eager_threshold,
                            rendezvous_latency=rv)


# --- public builders -------------------------------------------------------------------------------------------

@no_type_check  # takes raw configuration and refuses bad values itself (ConfigError naming the field)
def collective_steps(op: str, algorithm: str, n_ranks: int, nbytes: float, root: int = 0, *,
                     n_segments: int | None = None, throttle: int | None = None, selection: str = "mpich"
                     ) -> list[tuple[FlowInts, FlowInts, FlowFloats]]:
    """The steps of collective ``op`` by ``algorithm`` over ranks ``0 ... n_ranks - 1``: one ``(src, dst, bytes)``.

    Parameters
    ----------
    op
        ``"allreduce"``, ``"alltoall"``, ``"allgather"`` or ``"broadcast"`` (:data:`COLLECTIVES`).
    algorithm
        One of ``COLLECTIVES[op]`` (None: the first, the op's default), or ``"auto"``: the one
        :func:`select_algorithm` picks by ``selection`` (with the parameters it fixes).
    n_ranks
        Ranks of the communicator (>= 1; 1 gives no step).
    nbytes
        The per-rank vector size in bytes (>= 0): allreduce each rank's vector, allgather each rank's
        contribution, alltoall the bytes each rank sends to EACH other rank, broadcast the root's message.
    root
        The root rank of ``broadcast`` and of the ``binomial`` allreduce's trees; checked, else unused.
    n_segments
        Segments of a ``pipelined_ring`` broadcast (default :data:`DEFAULT_SEGMENTS`; the optimum for a network:
        :func:`pipeline_segments`); else unused.
    throttle
        Destinations a ``scattered`` alltoall posts at once (default :data:`DEFAULT_THROTTLE`, MPICH's; 0: all);
        else unused.
    selection
        The rules of ``algorithm="auto"`` (:data:`SELECTIONS`); checked, else unused.

    Returns
    -------
    list of (src, dst, bytes)
        One triple per algorithm step, in order: ``src``, ``dst`` (int64 ranks) and ``bytes`` (float64, bytes
        from ``src[i]`` to ``dst[i]`` in that step), one entry per message (a message may carry 0 bytes where
        MPICH sends an empty chunk). The module docstring gives every algorithm's steps and its
        non-power-of-two rule.
    """
    op, algorithm = _check_op(op, algorithm, allow_auto=True)
    selection = _check_selection(selection)  # checked even when unused, as collective() and the options
    p = positive_int("traffic.n_tasks", n_ranks)
    n = positive_float("traffic.bytes", nbytes, allow_zero=True)
    root = _check_root(root, p)
    if algorithm == "auto":
        algorithm, params = select_algorithm(op, p, n, selection, root=root)
        n_segments = params.get("n_segments", n_segments)
        throttle = params.get("throttle", throttle)
    o = _Opts(_check_segments(n_segments), _check_throttle(throttle))
    if p == 1:
        return []
    steps = _n_steps(op, algorithm, p, o)
    # a pipelined_ring's steps grow with its segments: name them when they outnumber the ranks
    by_segments = "segments" in ALGORITHMS[op, algorithm].options and o.segments > p
    check_memory("traffic.n_segments" if by_segments else "traffic.n_tasks", o.segments if by_segments else p,
                 24.0 * _n_messages(op, algorithm, p, o) + STEP_BYTES * steps,
                 f"the messages of {op} by {algorithm} over {p} ranks ({steps} steps)")
    return ALGORITHMS[op, algorithm].build(p, n, root, o)


def _describe(algorithm: str, params: dict) -> str:
    return algorithm + (f"({', '.join(f'{k}={v}' for k, v in params.items())})" if params else "")


@no_type_check  # takes raw configuration and refuses bad values itself (ConfigError naming the field)
def collective(op: str, algorithm: str | None = None, n_tasks: int | None = None, nbytes: float = 1.0e6,
               root: int = 0, ranks: Sequence[int] | None = None, *, n_segments: int | None = None,
               throttle: int | None = None, selection: str = "mpich", topology=None) -> PhasedTraffic:
    """Collective ``op`` by ``algorithm`` as a :class:`PhasedTraffic`: one phase per step, ``"<algorithm> step k"``.

    Parameters
    ----------
    op, nbytes, root, throttle
        As :func:`collective_steps` (``nbytes`` > 0: the per-rank vector size in bytes; ``root`` a rank of the
        communicator, not a task id).
    algorithm
        One of ``COLLECTIVES[op]``, None (the op's default) or ``"auto"``: :func:`select_algorithm` by
        ``selection`` picks it (and the parameters it fixes, which then replace ``n_segments`` / ``throttle``);
        the traffic's name says what ran, e.g. ``"allreduce auto(mpich) -> rabenseifner"``.
    n_tasks
        Tasks of the job. Without ``ranks`` the communicator is every task, rank ``i`` = task ``i``.
    ranks
        The communicator's members in rank order: rank ``i`` is task ``ranks[i]`` (distinct task ids >= 0);
        the job has ``n_tasks`` tasks (default ``max(ranks) + 1``; must exceed every id) and the tasks outside
        the communicator send nothing.
    n_segments
        Segments of a ``pipelined_ring`` broadcast; None: :func:`pipeline_segments` on ``topology`` when one is
        given (the traffic's name then says the count), else :data:`DEFAULT_SEGMENTS`.
    selection
        The rules of ``algorithm="auto"``: one of :data:`SELECTIONS` (default ``"mpich"``).
    topology
        The network the traffic is built for (optional): only the optimum segment count uses it.

    Phases are numbered from 0 in the order of :func:`collective_steps`; a communicator of one rank is
    refused (:class:`~evaluator.errors.ConfigError`): it moves no bytes.
    """
    op, algorithm = _check_op(op, algorithm, allow_auto=True)
    selection = _check_selection(selection)
    if ranks is None:
        require(n_tasks is not None, "traffic.n_tasks", n_tasks, "an integer >= 2 (or the communicator's ranks)")
        n_job = positive_int("traffic.n_tasks", n_tasks)
        # before the ids are listed (10^9 ranks held 7.8 GB before the messages' own check refused them)
        check_memory("traffic.n_tasks", n_job, 48.0 * n_job, f"the ids and messages of {n_job:,} ranks (at least "
                     "one message of 24 bytes each)", "Use fewer ranks.")
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
    label = f"{op} {algorithm}"
    if algorithm == "auto":
        algorithm, params = select_algorithm(op, p, n, selection, root=root)
        n_segments = params.get("n_segments", n_segments)
        throttle = params.get("throttle", throttle)
        label = f"{op} auto({selection}) -> {_describe(algorithm, params)}"
    if algorithm == "pipelined_ring" and n_segments is None and topology is not None:
        n_segments = pipeline_segments(topology, p, n)
        label += f" (n_segments={n_segments}, the optimum)"
    steps = collective_steps(op, algorithm, p, n, root, n_segments=n_segments, throttle=throttle)
    phases = tuple(Traffic(n_job, members[s], members[d], b, f"{algorithm} step {k}")
                   for k, (s, d, b) in enumerate(steps))
    return PhasedTraffic(phases, tuple(ph.name for ph in phases), label)


@dataclass
class CollectiveConfig:
    """An MPI collective by algorithm: ``op``, ``algorithm`` (null: the op's default; ``auto``: chosen by
    ``selection``), ``n_tasks`` (null: one per node), ``bytes`` (the per-rank vector size), ``root``,
    ``n_segments`` (pipelined_ring broadcast; null: the optimum for the network's latency), ``throttle``
    (scattered alltoall) and ``selection`` (``mpich``, ``mpich4``, ``smpi_mpich`` or ``ompi``)."""

    kind: str = "collective"
    op: str = "allreduce"
    algorithm: Optional[str] = None
    n_tasks: Optional[int] = None
    bytes: float = 1.0e6
    root: int = 0
    n_segments: Optional[int] = DEFAULT_SEGMENTS
    throttle: int = DEFAULT_THROTTLE
    selection: str = "mpich"


COLLECTIVE = TrafficKind(
    "collective", CollectiveConfig,
    lambda cfg, topology: collective(cfg.op, cfg.algorithm, tasks_or_nodes(cfg.n_tasks, topology), cfg.bytes,
                                     cfg.root, n_segments=cfg.n_segments, throttle=cfg.throttle,
                                     selection=cfg.selection, topology=topology))
