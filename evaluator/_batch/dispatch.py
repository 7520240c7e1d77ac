"""The runners: the points of each kernel input to the device in blocks, and a batch of single exchanges.

Each exchange says what the kernel reads for it
(:attr:`~evaluator.traffic.AbstractTraffic.kernel_input`): a flow list
(``"flows"``) or dense rank-one weights (``"dense"``). A runner has a
*layout* (the block and step sizes, the buckets, the kernel variant and the
shapes of one block call, the host bytes the blocks are cut from: what
:func:`~evaluator._batch.memory.working_set` estimates from) and a
*dispatcher* that queues every block call (results stay on the device until
:func:`~evaluator._batch.blocks.fetch`). A phased traffic is evaluated phase
by phase (:mod:`.phases`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Callable, NamedTuple

import jax
import numpy as np

from .._types import Float, Shaped
from ..kernel import DensePointInputs, PointInputs
from .compiled import BatchKernel
from ..placement import Placement
from ..traffic import AbstractTraffic, DenseTraffic, Traffic
from . import blocks
from .blocks import block_sizes, block_slices, bucket_size, dense_point_bytes, flow_point_bytes, take, task_nodes

__all__ = ["Layout", "flows_layout", "dense_layout", "run_flows", "run_dense", "RUNNERS", "Results",
           "evaluate_exchanges"]


class Layout(NamedTuple):
    """How the points of one kernel input go to the device.

    ``variant``: the kernels' entry point (``"shared"``: one flow list for
    every point, ``"per_point"``, ``"dense"``); ``block`` and ``step``
    (:func:`~evaluator._batch.blocks.block_sizes`); ``n_tasks`` and
    ``n_flows``: the task and flow buckets (``n_flows`` 0 for dense
    traffic); ``args``: the shapes of one block call's inputs after the
    network (:class:`jax.ShapeDtypeStruct`); ``input_bytes``: the host arrays
    the blocks are cut from.
    """

    variant: str
    block: int
    step: int
    n_tasks: int
    n_flows: int
    args: tuple
    input_bytes: int


def _struct(shape: tuple, dtype) -> jax.ShapeDtypeStruct:
    return jax.ShapeDtypeStruct(shape, np.dtype(dtype))


def flows_layout(kern: BatchKernel, traffics: Sequence[Traffic], block_size: int,
                 flow_bucket: int | None = None) -> Layout:
    """The layout of flow-list points; ``flow_bucket`` fixes the padded flow count (at least the largest
    traffic's), so that calls with different traffics share one compilation (the phases of phased traffic)."""
    n = len(traffics)
    F = max(flow_bucket or 0, bucket_size(max(t.n_flows for t in traffics)))
    T = bucket_size(max(t.n_tasks for t in traffics))
    block, step = block_sizes(block_size, flow_point_bytes(F, kern.n_links), n)
    tn = _struct((block, T), np.int32)
    if all(t is traffics[0] for t in traffics):
        args = (tn, _struct((F,), np.int32), _struct((F,), np.int32), _struct((F,), np.float64), _struct((), np.int32))
        return Layout("shared", block, step, T, F, args, n * T * 4 + F * 16)
    args = (PointInputs(tn, _struct((block, F), np.int32), _struct((block, F), np.int32),
                        _struct((block, F), np.float64), _struct((block,), np.int32)),)
    return Layout("per_point", block, step, T, F, args, n * (F * 16 + T * 4 + 4))


def dense_layout(kern: BatchKernel, traffics: Sequence[DenseTraffic], block_size: int,
                 flow_bucket: int | None = None) -> Layout:
    """The layout of dense rank-one points (``flow_bucket`` is not used: there are no flows)."""
    n = len(traffics)
    T = bucket_size(max(t.n_tasks for t in traffics))
    block, step = block_sizes(block_size, dense_point_bytes(T, kern.n_links), n)
    args = (DensePointInputs(_struct((block, T), np.int32), _struct((block, T), np.float64),
                             _struct((block, T), np.float64), _struct((block,), np.float64)),)
    return Layout("dense", block, step, T, 0, args, n * T * 20 + n * 8)


def run_flows(kern: BatchKernel, traffics: Sequence[Traffic], placements: Sequence[Placement], lay: Layout) -> list:
    """Queue every block call of flow-list points; returns ``((metrics, link loads), n_valid)`` per block (on the
    device, not yet fetched).

    When every point shares one flow list (a placement sweep) the flows are
    on the device once (:func:`~evaluator._batch.blocks.device_flows`) and a
    block transfers only its ``task_node`` rows.
    """
    n = len(traffics)
    tn = task_nodes(placements, lay.n_tasks)
    pending = []
    if lay.variant == "shared":
        flows = blocks.device_flows(traffics[0], lay.n_flows)
        for sl, n_valid in block_slices(n, lay.block):
            rows, valid = blocks.to_device((take(tn, sl, lay.block), np.int32(n_valid)))
            pending.append((kern.fn.shared(kern.net, rows, *flows, step=lay.step, n_valid=valid), n_valid))
        return pending
    src, dst, nb, senders = blocks.pad_flows(traffics, lay.n_flows)
    for sl, n_valid in block_slices(n, lay.block):
        *arrays, valid = blocks.to_device(tuple(take(a, sl, lay.block) for a in (tn, src, dst, nb, senders))
                                          + (np.int32(n_valid),))
        pending.append((kern.fn(kern.net, PointInputs(*arrays), step=lay.step, n_valid=valid), n_valid))
    return pending


def run_dense(kern: BatchKernel, traffics: Sequence[DenseTraffic], placements: Sequence[Placement],
              lay: Layout) -> list:
    """Queue every block call of dense rank-one points (as :func:`run_flows`)."""
    n = len(traffics)
    T = lay.n_tasks
    tn = task_nodes(placements, T)
    ws = np.zeros((n, T))
    wd = np.zeros((n, T))
    b = np.zeros(n)
    for i, t in enumerate(traffics):
        ws[i, : t.n_tasks] = t.src_weight
        wd[i, : t.n_tasks] = t.dst_weight
        b[i] = t.bytes_per_pair
    pending = []
    for sl, n_valid in block_slices(n, lay.block):
        *arrays, valid = blocks.to_device(tuple(take(a, sl, lay.block) for a in (tn, ws, wd, b))
                                          + (np.int32(n_valid),))
        pending.append((kern.fn.dense(kern.net, DensePointInputs(*arrays), step=lay.step, n_valid=valid), n_valid))
    return pending


RUNNERS: dict[str, tuple[Callable[..., Layout], Callable[..., list]]] = {
    "flows": (flows_layout, run_flows),
    "dense": (dense_layout, run_dense),
}
"""``(layout, dispatcher)`` of each exchange's :attr:`~evaluator.traffic.AbstractTraffic.kernel_input` (a phased
traffic is evaluated phase by phase: :mod:`.phases`)."""


class Results(NamedTuple):
    """What a batch gives back, in input order: per-point ``metrics`` (NumPy, leading axis ``point``; see
    :func:`~evaluator.kernel.unpack_metrics`), ``link_load`` (or None) and ``phases`` (phased traffic, or None;
    see :class:`evaluator.evaluation.BatchResult`)."""

    metrics: dict[str, Shaped[np.ndarray, "point ..."]]
    link_load: Float[np.ndarray, "point link"] | None
    phases: dict[str, Any] | None = None
    flows: list | None = None
    """With ``sharing="max_min"``: per point, its phases' arrays of message finish times (s); else None."""


def evaluate_exchanges(kern: BatchKernel, traffics: Sequence[AbstractTraffic], placements: Sequence[Placement],
                       block_size: int, flow_bucket: int | None = None,
                       meanwhile: Callable[[], None] | None = None) -> Results:
    """Metrics (and link loads if the kernel keeps them) of single exchanges, in input order: every kernel
    input's points dispatched, then ``meanwhile()`` (host work that overlaps the device's), then every result
    fetched."""
    n = len(traffics)
    inputs = np.array([t.kernel_input for t in traffics])
    parts = []
    for inp, (layout, run) in RUNNERS.items():
        idx = np.nonzero(inputs == inp)[0]
        if idx.size:
            ts = [traffics[i] for i in idx]
            pend = run(kern, ts, [placements[i] for i in idx], layout(kern, ts, block_size, flow_bucket))
            parts.append((idx, pend))
    if meanwhile is not None:
        meanwhile()
    fetched = [(idx, blocks.fetch(pend)) for idx, pend in parts]
    if len(fetched) == 1:
        return Results(*fetched[0][1])
    metrics = {}
    for k, first in fetched[0][1][0].items():
        out = np.empty((n,) + first.shape[1:], dtype=first.dtype)
        for idx, (m, _) in fetched:
            out[idx] = m[k]
        metrics[k] = out
    loads = None
    if fetched[0][1][1] is not None:
        first = fetched[0][1][1]
        loads = np.empty((n,) + first.shape[1:], dtype=first.dtype)
        for idx, (_, ll) in fetched:
            loads[idx] = ll
    return Results(metrics, loads)
