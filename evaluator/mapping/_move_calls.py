"""How a batch of candidate moves becomes device calls (:meth:`evaluator.mapping._moves.MoveEvaluator.scores`):
:meth:`MoveCalls.levels` sets the flow-list levels, :meth:`MoveCalls._plan_calls` splits the moves by level and
gives every worker a call;
:meth:`MoveCalls._run_calls` runs them,
on several threads on a CPU (XLA runs a call on the calling thread, so one call at a time leaves the other cores
idle), and returns their raw results in order, so that the scores are those of one worker, bit for bit."""

from __future__ import annotations

import functools
import os
from concurrent.futures import ThreadPoolExecutor

import jax
import jax.numpy as jnp
import numpy as np

from ._move_scores import move_jit

__all__ = ["BUCKET_CHUNK", "COMPACT_MIN", "COMPACT_QUANTILE", "COMPACT_SHRINK", "MAX_WORKERS", "MID_SPLIT",
           "NARROW_SPLITS", "NEED_CHUNK", "SINGLE_SPLITS", "SPLIT_MIN", "MoveCalls", "cpu_workers", "wanted_size",
           "COMPACT_STEP_BYTES", "COMPACT_ENTRY_BYTES", "moves_within"]

BUCKET_CHUNK = 128
"""Moves per device call of a batch's part scored at the second level (``MoveEvaluator.levels``; the shortest:
a quarter of the batch per call; a wider level: as many flow entries a call, a power of two of at least 16 moves):
fixed shapes, so one compilation per level and move size, and little padding (power law on the 16x8x8 torus, 4,096
moves, 26 at the one-hub level: padded to 128 they cost 45 ms, a third of the batch)."""

NARROW_SPLITS = (0.25, 0.5)
"""Flow-list levels below the narrowest bucket's (``2k`` times its width), as fractions of it, where the routing
lists a move's links compactly (``flow_compact``, DOR) and there is a narrow bucket (power law): the compact
listing's entries, and with them a move's cost, follow its flows, and most moves of such a traffic have far fewer
flows than the bucket's width (power law on the 16x8x8 torus: tasks' degrees summed over a move, median 8, the
narrowest bucket's level 32; a call of 4,096 moves at level 8, a listing of 128 entries, 8.5 us a move against
17.7-21.9 at level 32's 768, one core). Left out, as the levels of ``MoveEvaluator.level_fractions`` are, where
a call passes ``fractions`` (a short search: fewer compilations)."""

SINGLE_SPLITS = (0.5, 0.75)
"""Flow-list levels below the full width, as fractions of it (rounded up to a multiple of 8), where every task is in
one degree bucket and the routing lists a move's links compactly (DOR), unless ``MoveEvaluator.level_fractions``
says otherwise or a call passes ``fractions``: a mesh halo's tasks have 12 to 28 flows (1,024 ranks), so a move
needs 24 to 50 of the 56 a level of the full width holds, and its listing follows what it needs. On the 16x8x8
torus (DOR, 16,384 single swaps, two threads, evaluators with and without them in one process, 11 interleaved
rounds, medians): 137,047 -> 154,311 and 106,479 -> 131,884 moves/s, the same scores; (0.625,) gave 150,086 and
four levels (0.375, 0.5, 0.75, 0.875) 84,171 (more calls, each shorter)."""

MID_SPLIT = 0.5
"""Where a middle degree bucket's level (one task of it with the rest of the narrower bucket) is split under a
compact listing, as a fraction of it (rounded up to a multiple of 8): the power law on the 16x8x8 torus (widths
16, 128 and 722) has level 144 for a move of one middle task, whose moves need 33 to 144 flows (median 54), so half
of them fit 72. Its calls keep the sizes of the levels above (:meth:`MoveCalls._plan_calls` sizes the wider levels'
calls from the first level that is not a split). In-process A/B, 16,384 moves, two threads, 21 rounds, medians:
100,230 -> 109,982, 96,994 -> 103,449 moves/s, and 114,085 -> 122,422 at 0.4 (level 64); the same scores."""

MAX_WORKERS = 4
"""Most threads scoring one batch on a CPU (:attr:`MoveEvaluator.workers`)."""

COMPACT_MIN = 64
"""Fewest entries of a compact listing (``MoveEvaluator._resolved``)."""

COMPACT_QUANTILE = 0.99
"""The share of a call's moves whose links the next calls' compact listing holds (the rest are scored again)."""

COMPACT_SHRINK = 0.75
"""A compact listing's size is lowered to what its moves need only below this share of its current size (the full
listing's, for a level's first call), so that it does not change (and recompile) for a few entries."""

NEED_CHUNK = 512
"""Most moves per call counting the entries their compact listings need (:meth:`MoveCalls._needs`; fewer where the
full listings are long, :func:`moves_within`)."""

COMPACT_STEP_BYTES = 512 << 20
"""Most bytes of one vmapped step's compact listings (the step shrinks for long listings), and of one call counting
what the listings need."""

COMPACT_ENTRY_BYTES = 1024
"""Bytes a compact listing's entry takes in a step, at most (XLA's cumulative sums over the entries keep their
intermediate levels: a step of 128 moves of 370,000 entries each asked for 34 GB, about 730 bytes an entry)."""

SPLIT_MIN = 256
"""Fewest moves of a call halved to give a worker a call of its own (:meth:`MoveCalls._plan_calls`)."""


def moves_within(size: int) -> int:
    """The most moves, a power of two (at least 1), whose compact listings of ``size`` entries each fit
    :data:`COMPACT_STEP_BYTES` together."""
    return 1 << max(int(COMPACT_STEP_BYTES // (COMPACT_ENTRY_BYTES * max(int(size), 1))).bit_length() - 1, 0)


def _up8(x: float) -> int:
    """``int(x)`` rounded up to a multiple of 8 (a level's length)."""
    return -(-int(x) // 8) * 8


def cpu_workers(x) -> int:
    """:data:`MAX_WORKERS` or the cores this process may use, if fewer, where ``x`` lives on a CPU; else 1."""
    if next(iter(x.devices())).platform != "cpu":
        return 1
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover (not Linux)
        cores = os.cpu_count() or 1
    return max(1, min(MAX_WORKERS, cores))


@functools.cache
def _pool(workers: int) -> ThreadPoolExecutor:
    """One thread pool per size, shared by every evaluator (threads that wait cost nothing)."""
    return ThreadPoolExecutor(workers, thread_name_prefix="evaluator-moves")


def _calls(idx: np.ndarray, level, sizes: list) -> list:
    """Calls of the moves ``idx`` at ``level``, of ``sizes`` moves each (their sum at least ``idx.size``; the last
    padded with the first move): ``(moves, level, moves padded)``."""
    out, lo = [], 0
    for c in sizes:
        part = idx[lo:lo + c]
        out.append((part, level, np.concatenate([part, np.full(c - part.size, idx[0])])))
        lo += c
    return out


class MoveCalls:
    """The part of :class:`~evaluator.mapping._moves.MoveEvaluator` that turns a batch of moves into device calls and
    runs them (its ``widths``, ``level_fractions``, ``kernel``, ``narrow_width``, ``bucketing``, ``workers``,
    ``_degree``, ``_call_key``, ``_compact_size`` and ``_scores_with`` are the evaluator's)."""

    def levels(self, k: int, fractions: tuple | None = None) -> tuple:
        """The flow-list lengths of a move of ``k`` slots a side when bucketed (ascending; the last ``2k`` times
        the full width): ``2k`` times each narrower bucket's width, one task of any degree with ``2k - 1`` of
        the widest narrow bucket (the common wide move: one hub), and one task of each middle bucket with ``2k - 1``
        of the bucket below (power law on the 16x8x8 torus, widths 16, 128 and 722: level 144 takes 1,293 of the
        1,417 moves of level 256 in a batch of 16,384; 68,500 -> 71,000 moves/s, interleaved A/B); under a compact
        listing the narrowest bucket's level split (:data:`NARROW_SPLITS`) and each middle bucket's
        (:data:`MID_SPLIT`), or with one bucket the full width's (:data:`SINGLE_SPLITS`); ``fractions`` (default
        the evaluator's ``level_fractions``): levels at those fractions of the full width instead of the splits,
        ``()`` for none."""
        W = self.widths[-1]
        ws = self.widths[:-1]
        lv = {2 * k * w for w in ws} | {2 * k * W}
        if ws:
            lv.add(W + (2 * k - 1) * ws[-1])
        lv.update(self._middle_levels(k))  # one task of a middle bucket, the rest narrower
        op = self.kernel.operator
        if fractions is None:
            fractions = self.level_fractions
            if fractions is None and not ws and op.flow_compact is not None:
                fractions = SINGLE_SPLITS  # one bucket under a compact listing: its level split (a move's cost ~ its
                # listing's entries, which follow its flows)
        if fractions is None and ws and op.flow_compact is not None:
            for f in NARROW_SPLITS:  # a compact listing's cost follows its entries: narrow moves listed shorter
                x = int(2 * k * ws[0] * f)
                if x >= 2 * k:
                    lv.add(x)
            lv |= self._mid_splits(k)
        top = 2 * k * W
        for f in fractions or ():  # levels below the full width, where set (a move's cost ~ its list's length)
            x = _up8(top * f)
            if 0 < x < top:
                lv.add(x)
        return tuple(sorted(lv))

    def _mid_splits(self, k: int) -> set[int]:
        """The levels that split the middle buckets' levels (:data:`MID_SPLIT`; a move of ``k`` slots a side):
        added by :meth:`levels` under a compact listing with its default splits, and left out of the reference
        from which :meth:`_plan_calls` sizes the wider levels' calls."""
        return {x for x in (_up8(m * MID_SPLIT) for m in self._middle_levels(k)) if x > 2 * k * self.widths[0]}

    def _middle_levels(self, k: int) -> list[int]:
        """The level of a move of one task of each middle bucket with ``2k - 1`` of the bucket below."""
        return [wide + (2 * k - 1) * narrow for wide, narrow in zip(self.widths[1:-1], self.widths[:-2])]

    def _plan_calls(self, a, b, host_state, fractions) -> list[tuple[np.ndarray, int | None, np.ndarray]]:
        """The device calls of ``scores``: ``(moves, level, moves padded to the call's size)``, the padding the
        part's first move again. With ``host_state``, the moves split by level: the narrow ones (:meth:`_bulk_levels`)
        in calls of a quarter of the batch between them (at least :data:`BUCKET_CHUNK`), each level's rest scored
        with the next narrow level's moves and the last one's in calls of :data:`BUCKET_CHUNK` where it is short;
        the others in calls of :data:`BUCKET_CHUNK` or fewer; then, while there are fewer calls than
        ``workers``, the largest halved (equal halves, padded), so that every worker has one."""
        n = int(a.shape[0])
        every = np.arange(n)
        levels = self.levels(int(a.shape[1]), fractions) if host_state is not None and self.bucketing else ()
        if len(levels) <= 1:
            calls = [(every, None, every)]
        else:
            hs = np.asarray(host_state)
            need = self._degree[hs[a]].sum(axis=1) + self._degree[hs[b]].sum(axis=1)
            mb = np.searchsorted(levels, need, side="left")
            if (mb == mb[0]).all():  # one level (e.g. every task of one degree): one call, no split
                calls = [(every, levels[int(mb[0])], every)]
            else:
                calls = []
                chunk = min(n, BUCKET_CHUNK)
                bulk = self._bulk_levels(levels, int(a.shape[1]))
                mid = self._mid_splits(int(a.shape[1]))
                c = max(chunk, -(-n // (4 * bulk)))  # the narrow levels' calls: a quarter of the batch between them
                rest = np.empty(0, np.int64)
                for i in range(len(levels)):
                    idx = np.flatnonzero(mb == i)
                    if i < bulk:  # the narrow levels: most moves, in calls of ``c``
                        idx = np.concatenate([rest, idx])  # the narrower level's rest (its flows fit this level)
                        full, r = divmod(idx.size, c)
                        if i < bulk - 1:  # the rest goes up a level, into its calls, rather than padded
                            sizes, rest = [c] * full, idx[full * c:]
                        else:  # a short rest in calls of ``chunk`` rather than padded to a whole call
                            sizes = [c] * full + ([c] if 2 * r > c else [chunk] * -(-r // chunk))
                        idx = idx[:sum(sizes)]
                    elif not idx.size:
                        continue
                    else:  # the wider levels in calls of fewer moves, as many entries a call as the first wider
                        # level's (at least 16 moves): a hub's rare moves padded to 128 cost more than every other move
                        ref = next((L for L in levels[bulk:] if L not in mid), levels[-1])  # not a split
                        cw = min(chunk, max(16, 1 << int(BUCKET_CHUNK * ref // levels[i]).bit_length() - 1))
                        sizes = [cw] * -(-idx.size // cw)
                    if idx.size:
                        calls += _calls(idx, levels[i], sizes)
        while len(calls) < self.workers:
            # a call whose real moves fill more than half of it (else its second half would be padding only)
            split = [c for c, (idx, _, p) in enumerate(calls) if p.size >= 2 * SPLIT_MIN and idx.size > -(-p.size // 2)]
            if not split:
                break
            big = max(split, key=lambda c: calls[c][2].size)
            idx, L, p = calls[big]
            h = -(-p.size // 2)
            p = np.concatenate([p, np.full(2 * h - p.size, p[0])])
            calls[big:big + 1] = [(idx[:h], L, p[:h]), (idx[h:], L, p[h:])]
        return calls

    def _bulk_levels(self, levels: tuple, k: int) -> int:
        """How many of ``levels`` (ascending) are narrow, scored in large calls: those up to the narrowest degree
        bucket's (``2k`` times its width; the levels below it split it, ``NARROW_SPLITS``), else the first."""
        narrow = self.narrow_width
        return 1 if narrow is None else max(1, int(np.searchsorted(levels, 2 * k * narrow, side="right")))

    def _first_sizes(self, calls, state, a, b) -> None:
        """The compact listing's size of each level of ``calls`` that has none yet, set as a first call at the full
        listing would set it (``_resolved``: from the entries the level's moves need, where well below the full
        size), from those counts alone (a listing of one entry: :meth:`_needs`). The first call of a level at the full
        listing compiled a scorer of each call size at that listing, used once: a cold 30-batch search of the halo
        trace on the 16x8x8 torus under DOR compiled 4 such of its 15 scorers, 2.3-2.9 s each."""
        k = int(a.shape[1])
        for L in dict.fromkeys(L for _, L, _ in calls):
            full = self._compact_full(k, L)
            if full is None or (k, L) in self._compact_sizes or (k, L) in self._compact_needs:
                continue  # no listing, or the level has been called (its size is kept or set by its calls)
            idx = np.concatenate([i for i, L2, _ in calls if L2 == L])
            want = wanted_size(self._needs(L, state, a[idx], b[idx]), full)
            if want < COMPACT_SHRINK * full:
                self._compact_sizes[(k, L)] = want

    def _needs(self, L, state, a, b) -> np.ndarray:
        """The entries of the compact listing each move ``a[i] <-> b[i]`` at level ``L`` needs, in calls of
        :data:`NEED_CHUNK` moves or, where the full listings are long, of as many as :func:`moves_within` allows (the
        count lists them in full on the way: 512 block moves of 128 tasks a side on the 16x8x8 torus, 344,064 entries
        each, asked for 47.8 GB), the last call padded; one compiled function per move size and level."""
        k = int(a.shape[1])
        chunk = min(NEED_CHUNK, moves_within(self._compact_full(k, L)))
        if (k, L) not in self._need_calls:
            def one(dev, slot_task, task_node, x, y):
                f, w, (s0, d0), (s1, d1) = self._moved_flows(dev, slot_task, task_node, x, y, L)
                return self._compact_entries(jnp.concatenate([s0, s1]), jnp.concatenate([d0, d1]),
                                             jnp.concatenate([w, w]), 1)[2]  # the count; one entry listed

            self._need_calls[(k, L)] = move_jit(
                lambda dev, st, tn, x, y: jax.vmap(lambda u, v: one(dev, st, tn, u, v))(x, y))
        n = int(a.shape[0])
        p = np.pad(np.arange(n), (0, -n % chunk))  # padded with move 0
        out = [self._need_calls[(k, L)](self._dev, *state[:2], jnp.asarray(a[p[i:i + chunk]], jnp.int32),
                                        jnp.asarray(b[p[i:i + chunk]], jnp.int32))
               for i in range(0, p.size, chunk)]
        return np.concatenate([np.asarray(x) for x in out])[:n]

    def _run_calls(self, calls, state, a, b, step) -> list:
        """The calls' raw results (``_scores_with``), each call's moves ``a[p], b[p]``: dispatched one after the
        other (JAX runs them asynchronously) with one worker, else run by ``workers`` threads at once (XLA on CPU
        runs a call's moves on the calling thread: on 2 cores one call at a time left the second core idle; the
        threads release the GIL while XLA runs). Every call is made with the sizes of the listings as they were
        before the batch, and the results are read in the calls' order (``_resolved``), so the scores are those
        of one worker, bit for bit."""
        sizes = [self._compact_size(int(a.shape[1]), L) for _, L, _ in calls]

        def run(call, size):
            _, L, p = call
            return self._scores_with(L, *state, a[p], b[p], step, size)

        if self.workers == 1 or len(calls) == 1:
            return [run(c, sz) for c, sz in zip(calls, sizes)]
        out: list = [None] * len(calls)
        rest = []
        for i, (c, sz) in enumerate(zip(calls, sizes)):
            if self._call_key(int(a.shape[1]), int(c[2].size), step, c[1], sz) not in self._scores:
                out[i] = run(c, sz)  # a new shape: compiled here, once (two threads would both compile it)
            else:
                rest.append(i)
        done = _pool(self.workers).map(lambda i: jax.block_until_ready(run(calls[i], sizes[i])), rest)
        for i, res in zip(rest, done):
            out[i] = res
        return out


def wanted_size(needs: np.ndarray, full: int) -> int:
    """The compact listing's size for moves that need ``needs`` entries (their :data:`COMPACT_QUANTILE` quantile,
    their largest while fewer than 100, on the grid of :func:`_size_above`), at most ``full``."""
    return _size_above(float(np.quantile(needs, COMPACT_QUANTILE) if needs.size >= 100 else needs.max()), full)


def _size_above(n: float, full: int) -> int:
    """The least compact-listing size of the grid (:data:`COMPACT_MIN` times powers of two and one and a half
    times those) that holds ``n`` entries, at most ``full``."""
    size = COMPACT_MIN
    while size < n:
        size = size * 3 // 2 if size & (size - 1) == 0 else size * 4 // 3
    return int(min(size, full))
