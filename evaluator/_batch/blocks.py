"""Blocks: shape buckets, block and step sizes, padding, the one host-to-device transfer, fetching.

A call of the kernels takes a *block* of points (a leading ``point`` axis of
a fixed size, the last block padded by repeating its last point; the kernel
skips the padding: ``n_valid``) and evaluates it a *step* of points at a
time (:func:`block_sizes`). Arrays over tasks and flows are padded to a
*bucket* (:func:`bucket_size`), so that points of one bucket share one
compilation.
"""

from __future__ import annotations

import collections
import functools
import math
from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple

import jax
import numpy as np

from .._types import Array, Float, Int, Shaped
from ..errors import ResourceError
from ..kernel import unpack_metrics
from ..placement import Placement
from ..traffic import Traffic

__all__ = ["bucket_size", "STEP_BYTES", "BLOCK_CPU", "block_sizes", "flow_point_bytes", "dense_point_bytes",
           "to_device", "to_device_kept", "block_slices", "take", "task_nodes", "pad_flows", "FlowBank", "make_bank",
           "device_flows", "fetch"]


def bucket_size(n: int, minimum: int = 16) -> int:
    """Shape bucket for ``n`` items (at least ``minimum``).

    The next power of two up to 64, above that the next of ``2**k`` times 1,
    1.25, 1.5 or 1.75: at most 25% padding, four buckets per doubling.
    """
    n = max(int(n), 1)
    p = 1 << max(0, math.ceil(math.log2(n)))
    if p > 64:
        quarter = p // 8  # p/2 is the previous power of two; steps of p/8
        p = -(-n // quarter) * quarter
    return max(minimum, p)


STEP_BYTES = 256 << 10
"""CPU: aim at about this many bytes of working set per step (caches, not memory bandwidth)."""

BLOCK_CPU = 32
"""CPU: the most points per device call when one block size serves calls of any size (a sweep's chunks: a partly
feasible chunk pads at most this many less one, and its placements are drawn for the padding too)."""


def flow_point_bytes(n_flows: int, n_links: int) -> int:
    """Working-set bytes of one point of a flow list padded to ``n_flows`` on ``n_links`` links
    (:func:`block_sizes`)."""
    return 40 * int(n_flows) + 24 * int(n_links)


def dense_point_bytes(n_tasks: int, n_links: int) -> int:
    """Working-set bytes of one point of dense rank-one traffic padded to ``n_tasks`` tasks
    (:func:`block_sizes`)."""
    return 24 * int(n_tasks) + 24 * int(n_links)


def block_sizes(block_size: int, per_point_bytes: int, n_points: int | None = None) -> tuple[int, int]:
    """``(block, step)``: points per device call and points per vmapped step inside it. The one rule.

    ``n_points``: the points of this call; the block is then ``block_size``
    at most and no more than their bucket (``bucket_size(n_points)``). None:
    one block serves calls of any size (a sweep's chunks, one compilation
    whatever their feasible points), ``block_size`` points, on CPU at most
    :data:`BLOCK_CPU`. On CPU the step is the largest power of two (at most
    the block) whose working set, ``per_point_bytes`` a point, stays near
    :data:`STEP_BYTES` (in cache: 2-5x faster than 64 points of 6,144 flows
    at once), and the block a multiple of it; an accelerator takes the whole
    block in one step.
    """
    cpu = jax.default_backend() == "cpu"
    if n_points is None:
        block = max(1, min(int(block_size), BLOCK_CPU) if cpu else int(block_size))
    else:
        block = min(int(block_size), bucket_size(n_points, minimum=1))
    if not cpu:
        return block, block
    fit = max(1, STEP_BYTES // max(int(per_point_bytes), 1))
    step = min(block, 1 << (fit.bit_length() - 1))
    return -(-block // step) * step, step


def to_device(arrays: Any) -> Any:
    """The one host-to-device transfer of a block (a pytree of NumPy arrays): every array of it at once.

    On a CPU the NumPy arrays are handed to the compiled call as they are: its C++ dispatch takes host arrays
    directly, where ``jax.device_put``'s Python path cost about 0.2 ms a block (a sweep of small calls: the bench's
    scenario 1 makes 84 a pass). Arrays kept for several calls (:func:`device_flows`, :func:`make_bank`) are put
    on the device once (:func:`to_device_kept`)."""
    return arrays if _on_cpu() else jax.device_put(arrays)


def to_device_kept(arrays: Any) -> Any:
    """Arrays that several calls read: on the device once, whatever the backend."""
    return jax.device_put(arrays)


@functools.cache
def _on_cpu() -> bool:
    return jax.default_backend() == "cpu"


def block_slices(n: int, block: int) -> Iterator[tuple[slice, int]]:
    """``(slice, n_valid)`` of every block of ``n`` points (the last one short: :func:`take` pads it)."""
    for start in range(0, n, block):
        stop = min(start + block, n)
        yield slice(start, stop), stop - start


def take(a: Shaped[np.ndarray, "point *rest"], sl: slice, block: int) -> Shaped[np.ndarray, "block *rest"]:
    """Rows ``sl`` of ``a``, padded to ``block`` rows by repeating the last one."""
    x = a[sl]
    pad = block - x.shape[0]
    return np.concatenate([x, np.repeat(x[-1:], pad, axis=0)]) if pad else x


INDEX_MAX = 2**31 - 1
"""The largest task or node id the batched kernels hold: they index tasks and nodes in int32 (the fast gathers)."""


def check_ids(field: str, value: int, what: str) -> None:
    """Refuse, before any row is made, a task or node count whose ids would not fit the kernels' int32 (NumPy's
    assignment into an int32 row wrapped task 2^31 to -2^31 without a word)."""
    if int(value) > INDEX_MAX + 1:
        raise ResourceError(field, f"{int(value):,} {what}", f"at most {INDEX_MAX + 1:,} {what} (2^31: the batched "
                            "kernels index them in int32)")


def task_nodes(placements: Sequence[Placement], n_tasks: int) -> Int[np.ndarray, "point task"]:
    """Every placement's ``task_node`` as one ``int32`` row padded to ``n_tasks`` (padding tasks on node 0, sending
    nothing)."""
    check_ids("traffic", n_tasks, "tasks")
    for p in placements:
        check_ids("topology", p.n_nodes, "nodes")
    rows = [p.task_node for p in placements]
    if len({r.size for r in rows}) == 1:  # one task count (a placement sweep): one copy (np.stack: 6x slower)
        tn = np.zeros((len(rows), n_tasks), np.int32)
        tn[:, : rows[0].size] = np.concatenate(rows).reshape(len(rows), rows[0].size)
        return tn
    tn = np.zeros((len(placements), n_tasks), np.int32)
    for i, r in enumerate(rows):
        tn[i, : r.size] = r
    return tn


def pad_flows(traffics: Sequence[Traffic], n_flows: int, n_rows: int | None = None
              ) -> tuple[Int[np.ndarray, "row flow"], Int[np.ndarray, "row flow"], Float[np.ndarray, "row flow"],
                         Int[np.ndarray, "row"]]:
    """``(src, dst, nbytes, n_senders)``: one row per traffic (``n_rows`` rows, the rest zero), flows padded to
    ``n_flows`` (padding flows carry 0 bytes). A traffic met again (the same object) is counted once."""
    K = len(traffics) if n_rows is None else int(n_rows)
    for t in traffics:
        check_ids("traffic", t.n_tasks, "tasks")
    src = np.zeros((K, n_flows), np.int32)
    dst = np.zeros((K, n_flows), np.int32)
    nb = np.zeros((K, n_flows), np.float64)
    senders = np.zeros(K, np.int32)
    counted: dict[int, int] = {}
    for i, t in enumerate(traffics):
        src[i, : t.n_flows] = t.src
        dst[i, : t.n_flows] = t.dst
        nb[i, : t.n_flows] = t.nbytes
        if id(t) not in counted:
            counted[id(t)] = t.n_senders
        senders[i] = counted[id(t)]
    return src, dst, nb, senders


class FlowBank(NamedTuple):
    """The flow lists of ``K`` traffics on the device, padded to ``F`` flows (padding flows carry 0 bytes)."""

    src: Int[Array, "row flow"]
    dst: Int[Array, "row flow"]
    nbytes: Float[Array, "row flow"]
    n_senders: Int[Array, "row"]


def make_bank(traffics: Sequence[Traffic], n_flows: int, n_rows: int | None = None) -> FlowBank:
    """Pad the flow lists of ``traffics`` to ``n_flows`` (and ``n_rows`` rows) and put them on the device."""
    return FlowBank(*to_device_kept(pad_flows(traffics, n_flows, n_rows)))


_FLOW_CACHE: "collections.OrderedDict[tuple[int, int], tuple]" = collections.OrderedDict()


def device_flows(t: Traffic, n_flows: int) -> tuple[Int[Array, "flow"], Int[Array, "flow"], Float[Array, "flow"],
                                                     Int[Array, ""]]:
    """One flow list shared by every point of a call (a placement sweep), padded to ``n_flows``, on the device:
    ``(src, dst, nbytes, n_senders)`` (cached for the last few traffics)."""
    key = (id(t), n_flows)
    hit = _FLOW_CACHE.get(key)
    if hit is not None and hit[0] is t:
        _FLOW_CACHE.move_to_end(key)
        return hit[1]
    src, dst, nb, senders = pad_flows([t], n_flows)
    arrays = to_device_kept((src[0], dst[0], nb[0], senders[0]))
    _FLOW_CACHE[key] = (t, arrays)  # holds t, so its id is not reused while cached
    while len(_FLOW_CACHE) > 8:
        _FLOW_CACHE.popitem(last=False)
    return arrays


def fetch(pending: list, order: Int[np.ndarray, "point"] | None = None
          ) -> tuple[dict[str, np.ndarray], Float[np.ndarray, "point link"] | None]:
    """Bring dispatched block calls to the host (after every block is queued): the metrics
    (:func:`~evaluator.kernel.unpack_metrics`) and the link loads (None unless the kernel keeps them).

    ``pending``: ``((packed metrics, link loads), n_valid)`` per block, in
    dispatch order. ``order`` (optional): the position in dispatch order of
    every point (a sweep dispatches its points grouped by flow-bank row); the
    results come back in the points' own order.
    """
    packed, loads = [], []
    for (p, ll), n_valid in pending:
        packed.append(np.asarray(p)[:n_valid])
        if ll is not None:
            loads.append(np.asarray(ll)[:n_valid])
    metrics = np.concatenate(packed)  # (host copies, writable: the device's own are read-only views)
    link_load = np.concatenate(loads) if loads else None
    if order is not None:
        inv = np.empty_like(order)
        inv[order] = np.arange(order.size)
        metrics = metrics[inv]
        link_load = None if link_load is None else link_load[inv]
    return unpack_metrics(metrics), link_load
