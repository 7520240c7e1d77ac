"""JAX kernels: link demand and metrics for ONE design point.

The kernels here are written for a single design point (one traffic, one
placement) and carry no batch axis: the network's arrays
(:class:`NetworkArrays`), a point's inputs (:class:`PointInputs`,
:class:`DensePointInputs`), its link loads and its metrics, packed as one
vector (:func:`packed_point`). They are batched outside, in one place: the
compiled batch layer :mod:`evaluator._batch.compiled`
(:func:`~evaluator._batch.compiled.batch_kernel` applies ``vmap``, ``step``
points at a time in a loop over the steps of a block, and ``jit`` once per
(topology, routing)).

Two kinds of traffic reach the kernels:

* sparse flows (:class:`PointInputs`): cost linear in the flows (see
  :mod:`evaluator.routing` for the per-topology operators);
* dense rank-one traffic (:class:`DensePointInputs`, built from
  :class:`evaluator.traffic.DenseTraffic`): every task pair, never
  materialised; cost near-linear in the machine size.

Shapes use the axis names of DESIGN.md: ``task``, ``flow``, ``node``,
``router``, ``link`` (all links: router links, then injection, then
ejection), ``class`` (link classes).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int, Shaped

from ._ops import first_argmax, segment_add, take
from ._types import LinkLoads, PointLinkLoads, PointMetrics  # noqa: F401  (shapes in signatures and docs)
from .dataset import METRIC_NAMES as _FLOAT_METRICS
from .dataset import metric_values
from .routing.base import NODE_ENDPOINT
from .topology import Topology

__all__ = [
    "PointInputs",
    "DensePointInputs",
    "NetworkArrays",
    "point_link_loads",
    "dense_point_link_loads",
    "point_metrics",
    "dense_point_metrics",
    "packed_point",
    "packed_dense_point",
    "link_blocks",
    "SCALAR_METRICS",
    "PACKED_METRICS",
    "unpack_metrics",
]


class NetworkArrays(NamedTuple):
    """Device-side description of one (topology, routing) pair.

    ``class_order`` lists the links sorted by class (stable); the static
    class boundaries live in the kernel's closure.
    """

    node_router: Int[Array, "node"]
    capacity: Float[Array, "link"]
    link_class: Int[Array, "link"]
    class_order: Int[Array, "link"]
    routing: dict


class PointInputs(NamedTuple):
    """One design point: a placement and a (padded) flow list.

    Padding flows carry 0 bytes; padding tasks send nothing. ``n_senders``
    (tasks that send a positive number of bytes, a property of the traffic)
    is computed on the host when given, else in the kernel.
    """

    task_node: Int[Array, "task"]
    src: Int[Array, "flow"]
    dst: Int[Array, "flow"]
    nbytes: Float[Array, "flow"]
    n_senders: Int[Array, ""] | None = None


class DensePointInputs(NamedTuple):
    """One design point of dense rank-one traffic (:class:`evaluator.traffic.DenseTraffic`).

    Task ``s`` sends ``bytes_per_pair * src_weight[s] * dst_weight[d]`` bytes
    to every task ``d != s``. Padding tasks carry weight 0.
    """

    task_node: Int[Array, "task"]
    src_weight: Float[Array, "task"]
    dst_weight: Float[Array, "task"]
    bytes_per_pair: Float[Array, ""]


SCALAR_METRICS = _FLOAT_METRICS + ("bottleneck_class", "bottleneck_link")
"""Per-point scalars the kernels return: the metric table's (:data:`evaluator.dataset.METRICS`; its
``off_node_bytes``, the bytes that leave their node, also weighs ``mean_hops`` when phases are combined), then the
bottleneck's class and link (-1 when nothing crosses a link)."""

PACKED_METRICS = SCALAR_METRICS + ("max_load_class",)
"""The kernels' packed output per point, in order (``max_load_class`` the last columns, one per link class); see
:func:`unpack_metrics`. (:data:`evaluator.dataset.METRIC_NAMES` is the dataset's scalar metrics alone.)"""


def point_link_loads(net: NetworkArrays, pt: PointInputs, *, apply_routing) -> LinkLoads:
    """Expected bytes on every link for one design point of sparse flows.

    Flows between tasks on one node use no link; flows between nodes load
    the source's injection and the destination's ejection link; flows
    between routers are routed by ``apply_routing(tables, src, dst, bytes)``
    where ``src``/``dst`` are the routers of the flow's nodes, or the
    routing's own endpoint ids of them where it routes by more than the
    router (:attr:`RoutingOperator.endpoints`, table ``"_node_endpoint"``:
    D-mod-k on a fat tree routes by destination node). The node links' entries go into the routing's own
    buffer (``extra``: added in place after its entries, never concatenated).
    """
    n_nodes = net.node_router.shape[0]
    sn = take(pt.task_node, pt.src)
    dn = take(pt.task_node, pt.dst)
    off_node = jnp.where(sn != dn, pt.nbytes, 0.0)
    sr = take(net.node_router, sn)
    dr = take(net.node_router, dn)
    off_router = jnp.where(sr != dr, pt.nbytes, 0.0)
    entries = ((sn, off_node), (dn + n_nodes, off_node))  # injection, then ejection
    sr, dr = node_endpoints(net, sn, dn, sr, dr)
    return apply_routing(net.routing, sr, dr, off_router, extra=(entries, 2 * n_nodes))


def node_endpoints(net: NetworkArrays, sn, dn, sr, dr):
    """The routing's endpoints of flows between nodes ``sn -> dn`` on routers ``sr -> dr``: the routers, or the
    routing's own endpoints where it routes by more than the router (:attr:`RoutingOperator.endpoints`: D-mod-k
    routes by node). ``apply``, ``flow_links`` and ``flow_compact`` take these."""
    endpoint = net.routing.get(NODE_ENDPOINT)
    return (sr, dr) if endpoint is None else (take(endpoint, sn), take(endpoint, dn))


def dense_point_link_loads(net: NetworkArrays, pt: DensePointInputs, *, n_endpoints: int,
                           apply_dense) -> LinkLoads:
    """Expected bytes on every link for one design point of dense rank-one traffic.

    With ``u[n]``/``v[n]`` the source/destination weights summed per node,
    node ``n`` injects ``b u[n] (V - v[n])`` and ejects ``b v[n] (U - u[n])``
    (pairs on one node use no link), and routers ``r != r'`` exchange
    ``b u[r] v[r']`` (``u``, ``v`` summed per router, or per the routing's
    endpoint, :attr:`RoutingOperator.endpoints`; ``n_endpoints`` of them).
    """
    n_nodes = net.node_router.shape[0]
    b = pt.bytes_per_pair
    uv = segment_add(jnp.concatenate([pt.src_weight, pt.dst_weight]),
                     jnp.concatenate([pt.task_node, pt.task_node + n_nodes]), 2 * n_nodes)
    u, v = uv[:n_nodes], uv[n_nodes:]
    inj = b * u * (v.sum() - v)
    ej = b * v * (u.sum() - u)
    endpoint = net.routing.get(NODE_ENDPOINT, net.node_router)
    ur = segment_add(u, endpoint, n_endpoints)
    vr = segment_add(v, endpoint, n_endpoints)
    router_loads = apply_dense(net.routing, ur * b, vr)
    return jnp.concatenate([router_loads, inj, ej])


MAX_BLOCKS, MAX_PERIOD = 16, 64
"""The metrics' fast path: link order cut into at most this many blocks, each a pattern of at most this many
links (one class and one capacity per position) repeated."""


def link_blocks(topology: Topology) -> tuple[tuple[int, int, tuple[int, ...]], ...] | None:
    """``(lo, hi, classes)`` of the blocks of link order that repeat a short pattern, or None.

    Links ``lo <= i < hi`` of a block have the class ``classes[(i - lo) %
    P]`` and one capacity per position (``P = len(classes)``): a Dragonfly's
    local, global, injection and ejection links are four blocks with ``P =
    1``; a torus's router links (router by router, the same directions each)
    one block with ``P`` its links per router, then the node links. Each
    block is the longest run of one pattern from its start (the shortest
    pattern among equals). None when that takes more than
    :data:`MAX_BLOCKS` blocks (the kernels then take the general path).
    """
    cls = np.asarray(topology.link_class, np.int64)
    cap = np.asarray(topology.capacity, np.float64)
    n = cls.size
    if n == 0 or np.any(~(cap > 0)):
        return None
    caps, cap_id = np.unique(cap, return_inverse=True)
    key = cls * caps.size + cap_id.reshape(-1)  # one integer per (class, capacity)
    blocks, lo = [], 0
    while lo < n:
        if len(blocks) == MAX_BLOCKS:
            return None
        best = (1, 1)  # (length, period)
        for P in range(1, min(MAX_PERIOD, n - lo) + 1):
            m = (n - lo) // P
            if m * P <= best[0] or (m > 1 and not np.array_equal(key[lo + P: lo + 2 * P], key[lo: lo + P])):
                continue  # cannot beat the best, or fails at its first repeat
            rows = key[lo: lo + m * P].reshape(m, P)
            same = np.all(rows == rows[0], axis=1)
            reps = m if same.all() else int(np.argmin(same))
            if reps * P > best[0]:
                best = (reps * P, P)
        length, P = best
        blocks.append((lo, lo + length, tuple(int(c) for c in cls[lo: lo + P])))
        lo += length
    return tuple(blocks)


def _own(divisor, like):
    """``divisor`` (the network's, shared by every point of a batch) as a value of this point (``like``: an array
    of the point of the same shape), so that ``x / _own(divisor, x)`` is the correctly rounded quotient under
    ``vmap`` too: there the shared divisor is a broadcast, and XLA turns a division by a broadcast into a product
    with its rounded reciprocal (``0.0 * like`` is not folded away: IEEE's ``0 * inf`` is NaN; ``like``'s
    non-finite entries, an unconnected pair's infinite load of TAGO, count 0; fused, nothing stored). Until 2026-12-07 a point's ``completion_time`` could differ in its last
    bit between :func:`evaluator.evaluate` (or blocks of one point) and a block of several points of
    :func:`evaluator.evaluate_batch` or a sweep's chunk: a 4x4 torus at 3 GB/s, a random permutation of 16 tasks of
    7,654,321 bytes, 0.0038271605 s in chunks of 1, 0.0038271604999999998 s in chunks of 5 or 64
    (tests/test_audit_execution_shapes.py)."""
    return divisor + 0.0 * jnp.where(jnp.isfinite(like), like, 0.0)


def _worst_link(net: NetworkArrays, loads, blocks):
    """``(bottleneck link, completion time, max load per pattern position)``.

    General path: the time of every link (``load / capacity``), its first
    maximum, and the loads gathered into class order for the per-class
    maxima. With ``blocks`` (:func:`link_blocks`) the maxima come from the
    blocks reshaped to ``[repeats, P]`` (a plain reduction: no gather, and
    no division per link before the maximum): a position's largest time is its largest load over
    its capacity (division by a positive constant is monotone and correctly
    rounded, so the time is the general path's); the bottleneck is then the
    first link whose time equals it, in one pass as on the general path (a
    smaller load may round to the same time).
    """
    n = loads.shape[0]
    cap = _own(net.capacity, loads)
    if blocks is None:
        worst, t = first_argmax(loads / cap)
        return worst, t, None
    col_max = jnp.concatenate([loads[lo:hi].reshape(-1, len(c)).max(axis=0) for lo, hi, c in blocks])
    # the capacities as the network's runtime values, and element by element: XLA may turn a division by a
    # constant or a broadcast scalar into a product with its rounded reciprocal, which rounds differently
    col_cap = take(net.capacity, np.array([lo + k for lo, _, c in blocks for k in range(len(c))], np.int32))
    t = (col_max / _own(col_cap, col_max)).max()
    pos = jnp.arange(n, dtype=jnp.int32)
    worst = jnp.min(jnp.where(loads / cap == t, pos, n))
    return jnp.minimum(worst, n - 1), t, col_max


def _metrics(net: NetworkArrays, loads, total, off_node_bytes, n_senders, *, class_bounds: tuple[int, ...],
             n_router_links: int, blocks=None):
    worst, t, col_max = _worst_link(net, loads, blocks)
    hop_bytes = loads[:n_router_links].sum()
    if col_max is None:
        by_class = take(loads, net.class_order)
        bounds = zip(class_bounds[:-1], class_bounds[1:])
        max_class = jnp.stack([by_class[lo:hi].max(initial=-jnp.inf) for lo, hi in bounds])
    else:  # the pattern positions of each class (a class without links: -inf)
        of = np.array([c for *_, classes in blocks for c in classes])
        max_class = jnp.stack([take(col_max, np.flatnonzero(of == c).astype(np.int32)).max() if np.any(of == c)
                               else jnp.array(-jnp.inf) for c in range(len(class_bounds) - 1)])
    # total / senders / time as written (left to right, as NumPy gives it): XLA rewrote the two divisions into
    # total / (senders * time) in evaluate_batch's programs, one unit in the last place away; the quotient made
    # opaque (as _own) keeps them apart (tests/test_audit_execution_shapes_all.py)
    out = metric_values(jnp, t, total, off_node_bytes, hop_bytes, n_senders, net.link_class[worst], worst,
                        hold=lambda v: _own(v, v))
    out["max_load_class"] = max_class
    return out


def point_metrics(net: NetworkArrays, pt: PointInputs, loads: Float[Array, "link"], *,
                  class_bounds: tuple[int, ...], n_router_links: int, blocks=None) -> dict:
    """Scalar metrics of one design point (DESIGN.md "Metrics").

    Returns ``completion_time`` (s), ``throughput`` (bytes/s),
    ``effective_injection_bandwidth`` (bytes/s per sending task),
    ``bottleneck_class`` / ``bottleneck_link`` (-1 when nothing crosses a
    link), ``mean_hops`` (router-to-router links per byte that leaves its
    node), ``total_bytes`` and ``max_load_class: Float[Array, "class"]``.
    """
    total = pt.nbytes.sum()
    if pt.n_senders is None:
        sent = segment_add(pt.nbytes, pt.src, pt.task_node.shape[0])
        n_senders = (sent > 0).sum()
    else:
        n_senders = pt.n_senders
    n_nodes = net.node_router.shape[0]
    off_node_bytes = loads[n_router_links:n_router_links + n_nodes].sum()
    return _metrics(net, loads, total, off_node_bytes, n_senders, class_bounds=class_bounds,
                    n_router_links=n_router_links, blocks=blocks)


def dense_point_metrics(net: NetworkArrays, pt: DensePointInputs, loads: Float[Array, "link"], *,
                        class_bounds: tuple[int, ...], n_router_links: int, blocks=None) -> dict:
    """:func:`point_metrics` for dense rank-one traffic."""
    b = pt.bytes_per_pair
    U, V = pt.src_weight.sum(), pt.dst_weight.sum()
    total = b * (U * V - (pt.src_weight * pt.dst_weight).sum())
    n_senders = ((pt.src_weight > 0) & (V - pt.dst_weight > 0)).sum()
    n_nodes = net.node_router.shape[0]
    off_node_bytes = loads[n_router_links:n_router_links + n_nodes].sum()
    return _metrics(net, loads, total, off_node_bytes, n_senders, class_bounds=class_bounds,
                    n_router_links=n_router_links, blocks=blocks)


def _pack(out: dict, loads, keep_loads: bool):
    """One point's metrics as one vector (``SCALAR_METRICS`` then ``max_load_class``), and its loads."""
    vec = jnp.concatenate([jnp.stack([out[k].astype(jnp.float64) for k in SCALAR_METRICS]), out["max_load_class"]])
    return vec, (loads if keep_loads else None)


def unpack_metrics(packed: Float[np.ndarray, "point metric"]) -> dict[str, Shaped[np.ndarray, "point ..."]]:
    """Per-point metric dict from the kernels' packed ``Float[Array, "point metric"]`` output."""
    n = len(SCALAR_METRICS)
    out = {k: packed[:, i] for i, k in enumerate(SCALAR_METRICS)}
    for k in ("bottleneck_class", "bottleneck_link"):
        out[k] = out[k].astype(np.int64)
    out["max_load_class"] = packed[:, n:]
    return out


def packed_point(net, pt, *, n_router_links, class_bounds, apply_routing, keep_loads, blocks=None):
    """One point of sparse flows: its packed metrics (:data:`PACKED_METRICS`) and, with ``keep_loads``, its link
    loads (else None). What the compiled batch layer (:mod:`evaluator._batch.compiled`) maps over points."""
    loads = point_link_loads(net, pt, apply_routing=apply_routing)
    out = point_metrics(net, pt, loads, class_bounds=class_bounds, n_router_links=n_router_links, blocks=blocks)
    return _pack(out, loads, keep_loads)


def packed_dense_point(net, pt, *, n_endpoints, n_router_links, class_bounds, apply_dense, keep_loads, blocks=None):
    """One point of dense rank-one traffic: as :func:`packed_point`."""
    loads = dense_point_link_loads(net, pt, n_endpoints=n_endpoints, apply_dense=apply_dense)
    out = dense_point_metrics(net, pt, loads, class_bounds=class_bounds, n_router_links=n_router_links,
                              blocks=blocks)
    return _pack(out, loads, keep_loads)
