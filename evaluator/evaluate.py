"""Evaluate design points: host-side batching around the JAX kernel, xarray output.

:func:`evaluate` answers one design point as an :class:`xarray.Dataset`;
:func:`evaluate_batch` answers many traffic/placement variants of one
(topology, routing) pair with one compilation per shape bucket. Traffic is
sparse (:class:`~evaluator.traffic.Traffic`) or dense rank-one
(:class:`~evaluator.traffic.DenseTraffic`, e.g. all-to-all on 49,152
nodes without its 2.4e9 flows).
"""

from __future__ import annotations

import collections
import dataclasses
import math
from collections.abc import Sequence

import jax
from jaxtyping import Float
import numpy as np
import xarray as xr

from ._version import __version__
from .dataset import METRIC_NAMES, LinkTable, results_dataset
from .errors import ConfigError, positive_int, require
from .kernel import DensePointInputs, PointInputs, batch_kernel, unpack_metrics
from .placement import Placement
from .routing import Routing
from .topology import Topology
from .traffic import DenseTraffic, Traffic

__all__ = ["evaluate", "evaluate_batch", "BatchResult", "bucket_size"]

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


@dataclasses.dataclass
class BatchResult:
    """Per-point results of :func:`evaluate_batch` (NumPy, leading axis ``point``)."""

    topology: Topology
    routing: Routing
    metrics: dict[str, np.ndarray]
    link_load: Float[np.ndarray, "point link"] | None

    def bottleneck_names(self) -> np.ndarray:
        names = np.asarray(list(self.topology.class_names) + ["none"], dtype=object)
        return names[self.metrics["bottleneck_class"]].astype(str)

    def to_dataset(self, dim: str = "variant") -> xr.Dataset:
        """Results as a dataset with dimension ``dim`` (and ``link`` if loads were kept)."""
        return _dataset(self, dim)


def _check_pair(topology: Topology, traffic: Traffic, placement: Placement, i: int | None = None) -> None:
    where = "" if i is None else f"[{i}]"
    require(placement.n_nodes == topology.n_nodes, f"placement{where}", placement.name,
            f"a placement made for {topology.name} ({topology.n_nodes} nodes); it was made for "
            f"{placement.n_nodes} nodes")
    if traffic.n_tasks != placement.n_tasks:
        raise ConfigError(f"placement{where}.n_tasks", placement.n_tasks,
                          f"the traffic's task count {traffic.n_tasks} ({traffic.name})",
                          "Traffic and placement must describe the same tasks.")


def _broadcast(traffics, placements):
    if isinstance(traffics, (Traffic, DenseTraffic)):
        traffics = [traffics]
    if isinstance(placements, Placement):
        placements = [placements]
    traffics, placements = list(traffics), list(placements)
    n = max(len(traffics), len(placements))
    if len(traffics) == 1:
        traffics = traffics * n
    if len(placements) == 1:
        placements = placements * n
    require(len(traffics) == len(placements), "placements", len(placements),
            f"one placement, or as many as traffics ({len(traffics)})")
    require(n > 0, "traffics", 0, "at least one design point")
    return traffics, placements


CHUNK_BYTES = 256 << 10
"""CPU: aim at about this many bytes of working set per vmapped chunk (caches, not memory bandwidth)."""


def _sizes(chunk_size: int, n: int, per_point_bytes: int) -> tuple[int, int]:
    """``(block, chunk)``: points per device call and points per vmapped step inside it.

    ``block`` is ``chunk_size`` (at most ``n``, to its bucket), as before. On
    CPU the block is evaluated ``chunk`` points at a time, ``chunk`` small
    enough that a step's intermediates stay in cache (measured: 2-5x faster
    than 64 points of 6,144 flows at once); accelerators take the whole
    block in one step.
    """
    block = min(chunk_size, bucket_size(n, minimum=1))
    chunk = block
    if jax.default_backend() == "cpu":
        fit = max(1, CHUNK_BYTES // max(per_point_bytes, 1))
        chunk = min(block, 1 << (fit.bit_length() - 1))
    block = -(-block // chunk) * chunk
    return block, chunk


def _to_device(arrays):
    """The one host-to-device transfer of a block (a pytree of NumPy arrays)."""
    return jax.device_put(arrays)


_FLOW_CACHE: "collections.OrderedDict[tuple[int, int], tuple]" = collections.OrderedDict()


def _device_flows(t: Traffic, F: int) -> tuple:
    """A shared flow list padded to ``F`` on the device (cached for the last few traffics)."""
    key = (id(t), F)
    hit = _FLOW_CACHE.get(key)
    if hit is not None and hit[0] is t:
        _FLOW_CACHE.move_to_end(key)
        return hit[1]
    src = np.zeros(F, np.int32)
    dst = np.zeros(F, np.int32)
    nb = np.zeros(F, np.float64)
    src[: t.n_flows] = t.src
    dst[: t.n_flows] = t.dst
    nb[: t.n_flows] = t.nbytes
    arrays = _to_device((src, dst, nb, np.int32(_n_senders(t))))
    _FLOW_CACHE[key] = (t, arrays)  # holds t, so its id is not reused while cached
    while len(_FLOW_CACHE) > 8:
        _FLOW_CACHE.popitem(last=False)
    return arrays


def _blocks(n: int, block: int):
    """``(slice, pad)`` of every block; the last one is padded by repeating its last point."""
    for start in range(0, n, block):
        stop = min(start + block, n)
        yield slice(start, stop), block - (stop - start)


def _take(a: np.ndarray, sl: slice, pad: int) -> np.ndarray:
    x = a[sl]
    return np.concatenate([x, np.repeat(x[-1:], pad, axis=0)]) if pad else x


def _task_nodes(placements: Sequence[Placement], T: int) -> np.ndarray:
    tn = np.zeros((len(placements), T), np.int32)
    for i, p in enumerate(placements):
        tn[i, : p.n_tasks] = p.task_node
    return tn


def _n_senders(t: Traffic) -> int:
    """Tasks that send a positive number of bytes."""
    return int(np.count_nonzero(np.bincount(t.src, weights=t.nbytes, minlength=t.n_tasks) > 0))


def _run_flows(kern, traffics: list[Traffic], placements: list[Placement], chunk_size: int) -> list:
    """Dispatch every block of sparse-flow points; returns device results (not yet fetched)."""
    n = len(traffics)
    F = bucket_size(max(t.n_flows for t in traffics))
    T = bucket_size(max(t.n_tasks for t in traffics))
    block, chunk = _sizes(chunk_size, n, 40 * F + 24 * kern.n_links)
    tn = _task_nodes(placements, T)
    pending = []
    first = traffics[0]
    if all(t is first for t in traffics):
        # One flow list for every point (a placement sweep): the flows are on the device
        # already; each block transfers only its task_node rows.
        flows = _device_flows(first, F)
        for sl, pad in _blocks(n, block):
            pending.append((kern.fn.shared(kern.net, _to_device(_take(tn, sl, pad)), *flows, chunk=chunk), pad))
        return pending
    src = np.zeros((n, F), np.int32)
    dst = np.zeros((n, F), np.int32)
    nb = np.zeros((n, F), np.float64)
    senders = np.zeros(n, np.int32)
    counted: dict[int, int] = {}
    for i, t in enumerate(traffics):
        src[i, : t.n_flows] = t.src
        dst[i, : t.n_flows] = t.dst
        nb[i, : t.n_flows] = t.nbytes
        if id(t) not in counted:
            counted[id(t)] = _n_senders(t)
        senders[i] = counted[id(t)]
    for sl, pad in _blocks(n, block):
        pts = PointInputs(*_to_device(tuple(_take(a, sl, pad) for a in (tn, src, dst, nb, senders))))
        pending.append((kern.fn(kern.net, pts, chunk=chunk), pad))
    return pending


def _run_dense(kern, traffics: list[DenseTraffic], placements: list[Placement], chunk_size: int) -> list:
    """Dispatch every block of dense-traffic points; returns device results (not yet fetched)."""
    n = len(traffics)
    T = bucket_size(max(t.n_tasks for t in traffics))
    block, chunk = _sizes(chunk_size, n, 24 * T + 24 * kern.n_links)
    tn = _task_nodes(placements, T)
    ws = np.zeros((n, T))
    wd = np.zeros((n, T))
    b = np.zeros(n)
    for i, t in enumerate(traffics):
        ws[i, : t.n_tasks] = t.src_weight
        wd[i, : t.n_tasks] = t.dst_weight
        b[i] = t.bytes_per_pair
    pending = []
    for sl, pad in _blocks(n, block):
        pts = DensePointInputs(*_to_device(tuple(_take(a, sl, pad) for a in (tn, ws, wd, b))))
        pending.append((kern.fn.dense(kern.net, pts, chunk=chunk), pad))
    return pending


def _fetch(pending: list) -> dict[str, np.ndarray]:
    """Bring dispatched results to the host (after every block is queued) and concatenate."""
    metrics, loads = [], []
    for (packed, link_load), pad in pending:
        keep = packed.shape[0] - pad
        metrics.append(np.asarray(packed)[:keep])
        if link_load is not None:
            loads.append(np.asarray(link_load)[:keep])
    out = unpack_metrics(np.concatenate(metrics))
    if loads:
        out["link_load"] = np.concatenate(loads)
    return out


def evaluate_batch(
    topology: Topology,
    routing: Routing,
    traffics: Traffic | DenseTraffic | Sequence[Traffic | DenseTraffic],
    placements: Placement | Sequence[Placement],
    keep_link_load: bool = False,
    chunk_size: int = 64,
) -> BatchResult:
    """Evaluate many traffic/placement variants of one (topology, routing).

    ``traffics`` and ``placements`` are sequences of equal length, or a single
    item broadcast against the other. A traffic is a sparse
    :class:`~evaluator.traffic.Traffic` or a dense
    :class:`~evaluator.traffic.DenseTraffic` (never materialised).

    Flow and task arrays are padded to a shape bucket (:func:`bucket_size`)
    and the points go to the device in blocks of ``chunk_size`` (one
    transfer and one call per block), so the kernel compiles once per
    bucket and a second block compiles nothing. Inside a call the block is
    evaluated a few points at a time (on CPU as many as stay in cache, often
    one; on an accelerator the whole block). When every point shares one
    flow list (a placement sweep) the flows are transferred once and each
    block carries only its placements. All blocks are queued before any
    result is fetched; link loads are reduced to the metrics on the device
    and returned only with ``keep_link_load`` (memory: points x links x 8
    bytes). ``metrics`` holds per-point NumPy arrays: ``completion_time``
    (s), ``throughput`` and ``effective_injection_bandwidth`` (bytes/s),
    ``bottleneck_class`` and ``bottleneck_link`` (-1: no link used),
    ``mean_hops``, ``total_bytes`` and ``max_load_class[point, class]``
    (bytes).
    """
    traffics, placements = _broadcast(traffics, placements)
    n = len(traffics)
    for i, (t, p) in enumerate(zip(traffics, placements)):
        _check_pair(topology, t, p, None if n == 1 else i)
    chunk_size = positive_int("chunk_size", chunk_size)
    kern = batch_kernel(topology, routing, bool(keep_link_load))
    is_dense = np.array([isinstance(t, DenseTraffic) for t in traffics])
    parts = []
    for mask, run in ((~is_dense, _run_flows), (is_dense, _run_dense)):
        idx = np.nonzero(mask)[0]
        if idx.size:
            pend = run(kern, [traffics[i] for i in idx], [placements[i] for i in idx], chunk_size)
            parts.append((idx, pend))
    fetched = [(idx, _fetch(pend)) for idx, pend in parts]
    if len(fetched) == 1:
        merged = fetched[0][1]
    else:
        merged = {}
        for k in fetched[0][1]:
            first = fetched[0][1][k]
            out = np.empty((n,) + first.shape[1:], dtype=first.dtype)
            for idx, res in fetched:
                out[idx] = res[k]
            merged[k] = out
    loads = merged.pop("link_load", None)
    return BatchResult(topology, routing, merged, loads)


def _dataset(res: BatchResult, dim: str | None) -> xr.Dataset:
    topo = res.topology
    m = res.metrics
    n = m["completion_time"].shape[0]
    dims, shape = ((dim,), (n,)) if dim else ((), ())
    return results_dataset(
        dims, shape,
        metrics={k: m[k] for k in METRIC_NAMES},
        max_load={c: m["max_load_class"][:, i] for i, c in enumerate(topo.class_names)},
        bottleneck=res.bottleneck_names(),
        link_load=res.link_load,
        links=LinkTable.of(topo) if res.link_load is not None else None,
        attrs={"topology": topo.name, "routing": res.routing.label, "n_nodes": topo.n_nodes,
               "n_routers": topo.n_routers, "evaluator_version": __version__},
    )


def evaluate(topology: Topology, traffic: Traffic | DenseTraffic, placement: Placement, routing: Routing) -> xr.Dataset:
    """Link demand and predicted performance of one design point.

    Returns a dataset with ``link_load[link]`` (bytes), ``link_capacity``
    (bytes/s per direction), coordinates ``link_src``, ``link_dst``,
    ``link_class``, ``link_node``, and scalar ``completion_time`` (s),
    ``throughput`` (bytes/s), ``effective_injection_bandwidth`` (bytes/s),
    ``bottleneck`` (link class), ``max_load_<class>`` (bytes), ``mean_hops``
    and ``total_bytes``.
    """
    res = evaluate_batch(topology, routing, [traffic], [placement], keep_link_load=True, chunk_size=1)
    ds = _dataset(res, None)
    ds.attrs.update({"traffic": traffic.name, "placement": placement.name})
    return ds
