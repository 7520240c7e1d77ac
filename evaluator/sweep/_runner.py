"""Device calls of a sweep: placements drawn from their seeds inside the jitted call, flows from a bank.

A sweep chunk's feasible points are evaluated in blocks of a fixed size
(:func:`block_sizes`), one device call per block, every call of a shape
class (task bucket ``T``, flow bucket ``F``, bank rows ``K``) reusing one
compilation:

* the flows of the traffics a class can meet are held on the device once, in
  a :class:`FlowBank` (``[K, F]`` rows); the points of a call share one row,
  picked on the device (a point carries no flows);
* a seeded placement (:class:`~evaluator.placement._seeded.SeededPlacement`)
  is drawn inside the call from the point's seed (its two Threefry key
  words) and the placement's parameters (a few ``int32`` arrays over tasks);
  any other placement is passed as its ``task_node`` row.

Per block, one jitted call draws the block's placements at once (``vmap``)
and picks its row's flows; it depends on no kernel, so the routings of a
sweep share its compilation. Then the shared-flows kernel of
:func:`evaluator.kernel.batch_kernel` (the same compilation
:func:`~evaluator.evaluate.evaluate_batch` uses for a placement sweep) walks
the block ``chunk`` points at a time (cache-sized on CPU, the whole block on
an accelerator). Results stay on the device until every block is queued.
"""

from __future__ import annotations

import collections
import threading
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ..errors import check_memory
from ..evaluate import CHUNK_BYTES, jaxpr_peak_bytes
from ..kernel import COMPILER_OPTIONS, unpack_metrics
from ..placement._seeded import SeededPlacement

__all__ = ["FlowBank", "make_bank", "block_sizes", "dispatch", "fetch", "BLOCK_CPU"]

BLOCK_CPU = 32
"""Points per device call on CPU (a partly feasible chunk pads at most this many less one)."""


class FlowBank(NamedTuple):
    """The flow lists of ``K`` traffics on the device, padded to ``F`` flows (padding flows carry 0 bytes)."""

    src: Any  # Int[Array, "row flow"]
    dst: Any  # Int[Array, "row flow"]
    nbytes: Any  # Float[Array, "row flow"]
    n_senders: Any  # Int[Array, "row"]


def make_bank(traffics: list, n_flows: int, n_rows: int | None = None) -> FlowBank:
    """Pad the flow lists of ``traffics`` to ``n_flows`` (and ``n_rows`` rows) and put them on the device."""
    K = len(traffics) if n_rows is None else int(n_rows)
    src = np.zeros((K, n_flows), np.int32)
    dst = np.zeros((K, n_flows), np.int32)
    nb = np.zeros((K, n_flows), np.float64)
    ns = np.zeros(K, np.int32)
    for i, t in enumerate(traffics):
        src[i, : t.n_flows] = t.src
        dst[i, : t.n_flows] = t.dst
        nb[i, : t.n_flows] = t.nbytes
        sent = np.bincount(t.src, weights=t.nbytes, minlength=t.n_tasks)
        ns[i] = int(np.count_nonzero(sent > 0))
    return FlowBank(*jax.device_put((src, dst, nb, ns)))


def block_sizes(chunk_size: int, per_point_bytes: int) -> tuple[int, int]:
    """``(block, chunk)``: points per device call, and per vmapped step inside it.

    On CPU a block is at most :data:`BLOCK_CPU` points, evaluated as many at a
    time as keep a step's working set near :data:`evaluator.evaluate.CHUNK_BYTES`;
    an accelerator takes ``chunk_size`` points in one step.
    """
    if jax.default_backend() != "cpu":
        return chunk_size, chunk_size
    block = max(1, min(int(chunk_size), BLOCK_CPU))
    fit = max(1, CHUNK_BYTES // max(int(per_point_bytes), 1))
    chunk = min(block, 1 << (fit.bit_length() - 1))
    block = -(-block // chunk) * chunk
    return block, chunk


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


_PEAKS: "collections.OrderedDict[tuple, int]" = collections.OrderedDict()


def _check_memory(kern, inputs, chunk: int, block: int) -> None:
    """Refuse a block call whose traced working set would not fit in memory (once per kernel and shape)."""
    shapes = tuple((tuple(a.shape), str(a.dtype)) for a in inputs)
    key = (id(kern.fn), shapes, chunk)
    peak = _PEAKS.get(key)
    if peak is None:
        structs = [jax.ShapeDtypeStruct(a.shape, a.dtype) for a in inputs]
        # from the program store when an earlier process stored this program (no tracing), else traced
        peak = _PEAKS[key] = kern.fn.peak_bytes("shared", kern.net, *structs, chunk=chunk, measure=jaxpr_peak_bytes)
        while len(_PEAKS) > 64:
            _PEAKS.popitem(last=False)
    check_memory("sweep.chunk_size", block, peak, f"one block of {block} points on the device",
                 "Lower sweep.chunk_size, or sweep a smaller network or traffic.")


def dispatch(kern, bank: FlowBank, rows: np.ndarray, params: dict[str, np.ndarray], gen: SeededPlacement | None,
             seeds: np.ndarray | None, size: int, block: int, chunk: int) -> tuple[list, np.ndarray]:
    """Queue the device calls of ``rows.size`` points (bank rows, per-point parameters, seeds); not yet fetched.

    ``params`` holds per-point arrays with a leading ``point`` axis: the
    generator's parameters (task arrays padded to ``size``), or ``task_node``
    when ``gen`` is None. The points of one bank row go in blocks of
    ``block`` (the last one padded by repeating its last point, which the kernel skips): per block,
    one call draws the placements and picks the row's flows
    (:func:`_prepare`), one runs the kernel's shared-flows variant on them
    (results stay on the device). Returns the queued calls and the order of
    the points in them (:func:`fetch` puts them back).
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
        for start in range(int(lo), int(hi), block):
            stop = min(start + block, int(hi))
            pad = block - (stop - start)

            def take(a):
                x = a[start:stop]
                return np.concatenate([x, np.repeat(x[-1:], pad, axis=0)]) if pad else x

            args = jax.tree_util.tree_map(take, cols)  # host arrays: the jit call transfers them at once
            call = (bank, np.int32(srows[start]), args["k0"], args["k1"], args["params"])
            if pending:
                inputs = prep(*call, size=size)
                pending.append((kern.fn.shared(kern.net, *inputs, chunk=chunk, n_valid=stop - start), stop - start))
                continue
            key = (id(kern.fn), None if gen is None else gen.key, chunk, size) + tuple(
                (tuple(a.shape), str(a.dtype)) for a in jax.tree_util.tree_leaves(call))
            with _first_call_lock(key):  # compiles (once) under the lock; later calls pass at once
                inputs = prep(*call, size=size)
                _check_memory(kern, inputs, chunk, block)
                pending.append((kern.fn.shared(kern.net, *inputs, chunk=chunk, n_valid=stop - start), stop - start))
    return pending, order


def fetch(pending: list, order: np.ndarray) -> tuple[dict[str, np.ndarray], np.ndarray | None]:
    """Bring queued results to the host, in the points' order: metrics (:func:`~evaluator.kernel.unpack_metrics`)
    and link loads (or None)."""
    packed, loads = [], []
    for (p, ll), keep in pending:
        packed.append(np.asarray(p)[:keep])
        if ll is not None:
            loads.append(np.asarray(ll)[:keep])
    inv = np.empty_like(order)
    inv[order] = np.arange(order.size)
    metrics = unpack_metrics(np.concatenate(packed)[inv])
    return metrics, (np.concatenate(loads)[inv] if loads else None)
