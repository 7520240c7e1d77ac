"""Small array primitives tuned for the kernels (private).

Kernels are written for one design point and batched with ``jax.vmap``.
Primitives that are slow under that recipe on XLA:CPU are replaced here:

* ``segment_add``: scatter-add. ``jax.ops.segment_sum`` (bounds-checked,
  and under ``vmap`` a scatter with batching dimensions) costs 25-35 ns per
  float64 element on CPU; a flat 1-D scatter with in-bounds indices costs
  about 2.5 ns. :func:`segment_add` is a ``custom_vmap`` primitive: for one
  point it is the flat scatter, and its batching rule offsets the indices of
  point ``b`` by ``b * num_segments`` and scatters the whole batch flat.
  The sums are plain float64 additions in input order (no cancellation).
* ``add_at`` / ``sub_at``: a scatter into an existing buffer, in place,
  with the same flat batching rule, so that several entry lists add into
  one buffer without being concatenated first (an XLA:CPU concatenation is
  not vectorised: it evaluates each entry's expression per element).
* ``first_argmax``: ``jnp.argmax`` is a variadic reduction (about 7 ns per
  element on CPU); max, compare and min give the same first index at half
  the cost.

Callers guarantee indices in range (they are built from validated task,
node and router ids): out-of-range indices are undefined behaviour with
``promise_in_bounds``.
"""

from __future__ import annotations

import contextlib
import functools
import threading

import jax.numpy as jnp
from jax import lax
from jax.custom_batching import custom_vmap
from jaxtyping import Array, Float, Int, Integer, Shaped

from evaluator._types import AnyArray

__all__ = ["segment_add", "add_at", "sub_at", "take", "first_argmax", "differentiable", "fused_size", "add_extra",
           "with_extra"]

class _Plain(threading.local):
    on = False


_PLAIN = _Plain()
"""Whether :func:`differentiable` is open in this thread. Per thread: the sweep's local chunk threads trace at
the same time, and one thread's exit from the context turned the flag off under another one's trace (a UGAL
sweep then failed now and then: "Linearization failed to produce known values for all output primals")."""


@contextlib.contextmanager
def differentiable():
    """While open, :func:`segment_add`, :func:`add_at` and :func:`sub_at` trace as plain scatters (``jax.vmap``
    batches them its own way) instead of ``custom_vmap`` primitives, which JAX cannot differentiate: a program
    traced inside (a ``jax.vjp`` of the link loads, :mod:`evaluator._batch.latency`) can be transposed."""
    _PLAIN.on, before = True, _PLAIN.on
    try:
        yield
    finally:
        _PLAIN.on = before


def batch_index(idx: Integer[Array, "point ..."], axis_size: int, n: int) -> Integer[Array, "entry"]:
    """The flat indices ``idx[b] + b * n`` of a batch of ``axis_size`` rows of ``n`` entries (flattened): in
    ``idx``'s type while the flat buffer has under ``2^31`` entries (every batch but the largest: the int32
    scatters stay), else ``int64`` (in int32, a batch of 2 x (2^30 + 8) entries wrapped point 1's last index
    negative and its bytes were lost)."""
    if axis_size * n >= 2**31 and jnp.dtype(idx.dtype).itemsize < 8:
        idx = idx.astype(jnp.int64)
    offset = (jnp.arange(axis_size, dtype=idx.dtype) * n).reshape((axis_size,) + (1,) * (idx.ndim - 1))
    return (idx + offset).reshape(-1)


@functools.lru_cache(maxsize=None)
def _segment_add(num_segments: int):
    @custom_vmap
    def add(data, idx):
        return jnp.zeros(num_segments, data.dtype).at[idx].add(data, mode="promise_in_bounds")

    @add.def_vmap
    def add_batched(axis_size, in_batched, data, idx):
        data_b, idx_b = in_batched
        if not data_b:
            data = jnp.broadcast_to(data, (axis_size,) + data.shape)
        if not idx_b:
            idx = jnp.broadcast_to(idx, (axis_size,) + idx.shape)
        flat = jnp.zeros(axis_size * num_segments, data.dtype).at[batch_index(idx, axis_size, num_segments)].add(
            data.reshape(-1), mode="promise_in_bounds")
        return flat.reshape(axis_size, num_segments), True

    return add


def segment_add(data: Float[Array, "entry"], idx: Integer[Array, "entry"], num_segments: int
                ) -> Float[Array, "segment"]:
    """``out[s] = sum(data[idx == s])`` for ``s < num_segments``; indices must be in range."""
    if _PLAIN.on:
        return jnp.zeros(int(num_segments), data.dtype).at[idx].add(data, mode="promise_in_bounds")
    return _segment_add(int(num_segments))(data, idx)


def take(x: Shaped[Array, "..."], idx: Integer[AnyArray, "..."], axis: int = 0) -> Shaped[Array, "..."]:
    """``x[idx]`` along ``axis`` (0 or 1) with in-range, non-negative indices (no bounds handling).

    One ``lax.gather``, as ``x.at[idx].get(mode="promise_in_bounds")`` builds it,
    without NumPy indexing's wrapping of negative indices (a compare and a select
    per index, traced and compiled into every kernel: about a seventh of a
    kernel's trace time went to indexing).
    """
    if axis not in (0, 1):
        raise ValueError(f"take: axis must be 0 or 1, got {axis}")
    idx = jnp.asarray(idx)
    k = idx.ndim
    rest = tuple(d for i, d in enumerate(x.shape) if i != axis)  # the dimensions kept whole, in order
    if axis == 0:  # out[*i, *rest]
        offset = tuple(range(k, k + len(rest)))
    else:  # out[r0, *i, *rest[1:]]
        offset = (0,) + tuple(range(1 + k, k + len(rest)))
    dnums = lax.GatherDimensionNumbers(offset_dims=offset, collapsed_slice_dims=(axis,), start_index_map=(axis,))
    sizes = tuple(1 if i == axis else d for i, d in enumerate(x.shape))
    return lax.gather(x, idx[..., None], dnums, sizes, mode=lax.GatherScatterMode.PROMISE_IN_BOUNDS)


def first_argmax(x: Float[Array, "n"]) -> tuple[Int[Array, ""], Float[Array, ""]]:
    """Index of the first maximum of ``x`` and the maximum (as ``jnp.argmax`` and ``jnp.max``)."""
    m = x.max()
    n = x.shape[0]
    i = jnp.min(jnp.where(x == m, jnp.arange(n, dtype=jnp.int32), n))
    return jnp.minimum(i, n - 1), m


_SCATTER = lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
                                      scatter_dims_to_operand_dims=(0,))


def _scatter_into(scatter):
    """``buf`` with ``val`` added (``lax.scatter_add``) or subtracted (``lax.scatter_sub``) at ``idx``, in place.

    Indices must be in range (the caller's layout guarantees it) and
    non-negative: they go to the scatter as they are (no pass that converts
    or maps negative indices). Chained calls add into one buffer without
    concatenating their entries (an XLA:CPU concatenation fusion is not
    vectorised, and it computes the expression of every entry per element).
    A batch of points is one flat scatter, point ``b``'s indices offset by
    ``b * len(buf)`` (as :func:`segment_add`).
    """

    def flat(buf, idx, val):
        return scatter(buf, idx[:, None], val, _SCATTER, mode=lax.GatherScatterMode.PROMISE_IN_BOUNDS)

    @custom_vmap
    def into(buf: Shaped[Array, "entry"], idx: Integer[Array, "k"], val: Shaped[Array, "k"]) -> Shaped[Array, "entry"]:
        return flat(buf, idx, val)

    @into.def_vmap
    def into_batched(axis_size, in_batched, buf, idx, val):
        n = buf.shape[-1]
        buf, idx, val = (x if b else jnp.broadcast_to(x, (axis_size,) + x.shape)
                         for x, b in zip((buf, idx, val), in_batched))
        return flat(buf.reshape(-1), batch_index(idx, axis_size, n), val.reshape(-1)).reshape(axis_size, n), True

    return into


_add_at = _scatter_into(lax.scatter_add)
_sub_at = _scatter_into(lax.scatter_sub)


def add_at(buf: Shaped[Array, "entry"], idx: Integer[Array, "k"], val: Shaped[Array, "k"]) -> Shaped[Array, "entry"]:
    """``buf`` with ``val`` added at ``idx``, in place (:func:`_scatter_into`)."""
    if _PLAIN.on:
        return buf.at[idx].add(val, mode="promise_in_bounds")
    return _add_at(buf, idx, val)


def sub_at(buf: Shaped[Array, "entry"], idx: Integer[Array, "k"], val: Shaped[Array, "k"]) -> Shaped[Array, "entry"]:
    """``buf`` with ``val`` subtracted at ``idx``, in place (:func:`_scatter_into`)."""
    if _PLAIN.on:
        return buf.at[idx].add(-val, mode="promise_in_bounds")
    return _sub_at(buf, idx, val)


# --- the fused buffer of a routing's apply (evaluator.routing.RoutingOperator: ``extra=(entries, size)``) ---------

def fused_size(extra) -> int:
    """Entries a routing's buffer holds past its own for ``extra`` (the kernel's node-link loads): its size, 0
    without."""
    return 0 if extra is None else int(extra[1])


def add_extra(buf: Shaped[Array, "entry"], extra, offset: int, add=None, index=None) -> Shaped[Array, "entry"]:
    """``buf`` with every ``(idx, w)`` of ``extra`` added at ``offset + idx`` (in place: the node-link loads summed
    in the routing's own buffer past its ``offset`` entries); ``buf`` itself without ``extra``. ``add(buf, idx,
    w)``: the scatter (default :func:`add_at`); ``index(idx)``: applied to an entry's indices first (a wider
    integer type on a large machine)."""
    if extra is None:
        return buf
    add = add_at if add is None else add
    for idx, w in extra[0]:
        if index is not None:
            idx = index(idx)
        buf = add(buf, idx + offset if offset else idx, w)
    return buf


def with_extra(loads: Float[Array, "link"], extra) -> Float[Array, "entry"]:
    """``loads`` followed by the sums of ``extra`` (for a routing whose buffer cannot hold them); ``loads`` itself
    without."""
    if extra is None:
        return loads
    return jnp.concatenate([loads, add_extra(jnp.zeros(extra[1], loads.dtype), extra, 0)])
