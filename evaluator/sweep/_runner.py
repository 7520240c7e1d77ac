"""Device calls of a sweep: placements drawn from their seeds inside the jitted call, flows from a bank.

The feasible points of a sweep chunk are evaluated in blocks of one size
(:func:`evaluator._batch.blocks.block_sizes`, the rule every caller of the
kernels uses: one block for calls of any size), one device call per block,
every call of a shape class (task bucket ``T``, flow bucket ``F``, bank rows
``K``) reusing one compilation:

* the flows of the traffics a class can meet are held on the device once, in
  a :class:`~evaluator._batch.blocks.FlowBank` (``[K, F]`` rows); the points
  of a call share one row, picked on the device (a point carries no flows);
* a seeded placement (:class:`~evaluator.placement.SeededPlacement`) is
  drawn inside the call from the point's seed (its two Threefry key words)
  and the placement's parameters (a few ``int32`` arrays over tasks); any
  other placement is passed as its ``task_node`` row.

Per block, one jitted call draws the block's placements at once (``vmap``)
and picks its row's flows (:func:`_prepare`); it depends on no kernel, so
the routings of a sweep share its compilation. Then the shared-flows kernel
of :func:`evaluator.kernel.batch_kernel` (the same compilation
:func:`evaluator.evaluate_batch` uses for a placement sweep) walks the block
a step of points at a time (cache-sized on CPU, the whole block on an
accelerator). Results stay on the device until every block is queued
(:func:`evaluator._batch.blocks.fetch` brings them back). Block sizing,
padding, the transfer, the memory check and fetching are the batch engine's
(:mod:`evaluator._batch`); the seeded draw and its dispatch are this
module's own.
"""

from __future__ import annotations

import threading
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .._batch import blocks
from .._batch.blocks import FlowBank, block_slices, take
from .._batch.memory import check_block
from .._types import Int
from ..kernel import COMPILER_OPTIONS, BatchKernel
from ..placement import SeededPlacement

__all__ = ["dispatch"]

_LOCK = threading.Lock()
_FIRST_CALLS: dict[tuple, threading.Lock] = {}


def _first_call_lock(key: tuple) -> threading.Lock:
    """One lock per compiled shape: threads that need the same compilation wait for the first to make it."""
    with _LOCK:
        lock = _FIRST_CALLS.get(key)
        if lock is None:
            lock = _FIRST_CALLS[key] = threading.Lock()
        return lock


_PREPARE: dict[Any, Any] = {}


def _prepare(gen: SeededPlacement | None):
    """The jitted first half of a block call: the block's ``task_node`` rows (drawn from the seeds, or given)
    and its bank row's flows. It depends on no kernel, so every routing of a sweep shares its compilation."""
    key = None if gen is None else gen.key
    with _LOCK:
        fn = _PREPARE.get(key)
        if fn is not None:
            return fn
        generate = None if gen is None else gen.generate
        static = None if gen is None else gen.static

        def prepare(bank, row, k0, k1, params, size):
            if generate is None:
                task_node = params["task_node"]
            else:  # the whole block at once: short vectors, vectorised across points
                task_node = jax.vmap(lambda a, b, prm: generate(jnp, a, b, prm, static, size))(k0, k1, params)
            return task_node, bank.src[row], bank.dst[row], bank.nbytes[row], bank.n_senders[row]

        fn = _PREPARE[key] = jax.jit(prepare, static_argnames="size",
                                     compiler_options=dict(COMPILER_OPTIONS) or None)
        return fn


def dispatch(kern: BatchKernel, bank: FlowBank, rows: Int[np.ndarray, "point"],
             params: dict[str, Int[np.ndarray, "point ..."]],
             gen: SeededPlacement | None, seeds: Int[np.ndarray, "point"] | None, size: int, block: int,
             step: int) -> tuple[list, Int[np.ndarray, "point"]]:
    """Queue the device calls of ``rows.size`` points (bank rows, per-point parameters, seeds); not yet fetched.

    ``params`` holds per-point arrays with a leading ``point`` axis: the
    generator's parameters (task arrays padded to ``size``), or ``task_node``
    when ``gen`` is None. The points of one bank row go in blocks of
    ``block`` (the last one padded by repeating its last point, which the
    kernel skips): per block, one transfer (its seeds, parameters, row), one
    call that draws the placements and picks the row's flows
    (:func:`_prepare`), one that runs the kernel's shared-flows variant on
    them ``step`` points at a time (results stay on the device). The first
    block of a shape is checked against memory
    (:func:`evaluator._batch.memory.check_block`). Returns the queued calls,
    ``((metrics, link loads), n_valid)`` each, and the order of the points in
    them (:func:`evaluator._batch.blocks.fetch` puts them back).
    """
    prep = _prepare(gen)
    n = rows.size
    if seeds is None:
        k0 = k1 = np.zeros(n, np.uint32)
    else:
        s = np.asarray(seeds, dtype=np.uint64)
        k0 = (s & np.uint64(0xFFFFFFFF)).astype(np.uint32)
        k1 = (s >> np.uint64(32)).astype(np.uint32)
    order = np.argsort(rows, kind="stable")
    cols = jax.tree_util.tree_map(lambda a: a[order], {"k0": k0, "k1": k1, "params": params})
    srows = rows[order]
    cuts = np.flatnonzero(np.diff(srows)) + 1
    pending = []
    for lo, hi in zip(np.concatenate([[0], cuts]), np.concatenate([cuts, [n]])):
        lo, hi = int(lo), int(hi)
        for sl, n_valid in block_slices(hi - lo, block):
            sl = slice(lo + sl.start, lo + sl.stop)
            args = blocks.to_device(jax.tree_util.tree_map(lambda a: take(a, sl, block), cols)
                                    | {"row": np.int32(srows[sl.start]), "n_valid": np.int32(n_valid)})
            call = (bank, args["row"], args["k0"], args["k1"], args["params"])
            if pending:
                inputs = prep(*call, size=size)
                pending.append((kern.fn.shared(kern.net, *inputs, step=step, n_valid=args["n_valid"]), n_valid))
                continue
            key = (id(kern.fn), None if gen is None else gen.key, step, size) + tuple(
                (tuple(a.shape), str(a.dtype)) for a in jax.tree_util.tree_leaves(call))
            with _first_call_lock(key):  # compiles (once) under the lock; later calls pass at once
                inputs = prep(*call, size=size)
                check_block(kern, inputs, step, block, "sweep.chunk_size",
                            "Lower sweep.chunk_size, or sweep a smaller network or traffic.")
                pending.append((kern.fn.shared(kern.net, *inputs, step=step, n_valid=args["n_valid"]), n_valid))
    return pending, order
