"""JAX kernels: link demand and metrics for ONE design point.

The kernels here are written for a single design point (one traffic, one
placement) and carry no batch axis. :func:`batch_kernel` applies ``vmap``
and ``jit`` once, at the batch entry point, for one (topology, routing)
pair; a second chunk of the same shape bucket compiles nothing.

Two kinds of traffic reach the kernels:

* sparse flows (:class:`PointInputs`): cost linear in the flows (see
  :mod:`evaluator.routing` for the per-topology operators);
* dense rank-one traffic (:class:`DensePointInputs`, built from
  :class:`evaluator.structured.DenseTraffic`): every task pair, never
  materialised; cost near-linear in the machine size.

Shapes use the axis names of DESIGN.md: ``task``, ``flow``, ``node``,
``router``, ``link`` (all links: router links, then injection, then
ejection), ``class`` (link classes).
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int

from .routing import Routing, RoutingOperator, build_routing
from .topology import Topology

__all__ = [
    "PointInputs",
    "DensePointInputs",
    "NetworkArrays",
    "point_link_loads",
    "dense_point_link_loads",
    "point_metrics",
    "batch_kernel",
    "BatchKernel",
    "METRIC_NAMES",
]


class NetworkArrays(NamedTuple):
    """Device-side description of one (topology, routing) pair."""

    node_router: Int[Array, "node"]
    capacity: Float[Array, "link"]
    link_class: Int[Array, "link"]
    routing: dict


class PointInputs(NamedTuple):
    """One design point: a placement and a (padded) flow list.

    Padding flows carry 0 bytes; padding tasks send nothing.
    """

    task_node: Int[Array, "task"]
    src: Int[Array, "flow"]
    dst: Int[Array, "flow"]
    nbytes: Float[Array, "flow"]


class DensePointInputs(NamedTuple):
    """One design point of dense rank-one traffic (:class:`evaluator.structured.DenseTraffic`).

    Task ``s`` sends ``bytes_per_pair * src_weight[s] * dst_weight[d]`` bytes
    to every task ``d != s``. Padding tasks carry weight 0.
    """

    task_node: Int[Array, "task"]
    src_weight: Float[Array, "task"]
    dst_weight: Float[Array, "task"]
    bytes_per_pair: Float[Array, ""]


METRIC_NAMES = (
    "completion_time",
    "throughput",
    "effective_injection_bandwidth",
    "bottleneck_class",
    "bottleneck_link",
    "mean_hops",
    "total_bytes",
    "max_load_class",
)


def point_link_loads(net: NetworkArrays, pt: PointInputs, *, apply_routing) -> Float[Array, "link"]:
    """Expected bytes on every link for one design point of sparse flows.

    Flows between tasks on one node use no link; flows between nodes load
    the source's injection and the destination's ejection link; flows
    between routers are routed by ``apply_routing(tables, src_router,
    dst_router, bytes)``.
    """
    n_nodes = net.node_router.shape[0]
    sn = pt.task_node[pt.src]
    dn = pt.task_node[pt.dst]
    off_node = jnp.where(sn != dn, pt.nbytes, 0.0)
    nodes = jax.ops.segment_sum(jnp.concatenate([off_node, off_node]), jnp.concatenate([sn, dn + n_nodes]),
                                num_segments=2 * n_nodes)
    sr = net.node_router[sn]
    dr = net.node_router[dn]
    off_router = jnp.where(sr != dr, pt.nbytes, 0.0)
    router_loads = apply_routing(net.routing, sr, dr, off_router)
    return jnp.concatenate([router_loads, nodes])


def dense_point_link_loads(net: NetworkArrays, pt: DensePointInputs, *, n_routers: int,
                           apply_dense) -> Float[Array, "link"]:
    """Expected bytes on every link for one design point of dense rank-one traffic.

    With ``u[n]``/``v[n]`` the source/destination weights summed per node,
    node ``n`` injects ``b u[n] (V - v[n])`` and ejects ``b v[n] (U - u[n])``
    (pairs on one node use no link), and routers ``r != r'`` exchange
    ``b u[r] v[r']``.
    """
    n_nodes = net.node_router.shape[0]
    b = pt.bytes_per_pair
    u = jax.ops.segment_sum(pt.src_weight, pt.task_node, num_segments=n_nodes)
    v = jax.ops.segment_sum(pt.dst_weight, pt.task_node, num_segments=n_nodes)
    inj = b * u * (v.sum() - v)
    ej = b * v * (u.sum() - u)
    ur = jax.ops.segment_sum(u, net.node_router, num_segments=n_routers)
    vr = jax.ops.segment_sum(v, net.node_router, num_segments=n_routers)
    router_loads = apply_dense(net.routing, ur * b, vr)
    return jnp.concatenate([router_loads, inj, ej])


def _metrics(net: NetworkArrays, loads, total, off_node_bytes, n_senders, *, n_classes: int, n_router_links: int):
    time_per_link = loads / net.capacity
    worst = jnp.argmax(time_per_link)
    t = time_per_link[worst]
    n_senders = jnp.maximum(n_senders, 1)
    busy = t > 0
    safe_t = jnp.where(busy, t, 1.0)
    inf_or_nan = jnp.where(total > 0, jnp.inf, jnp.nan)
    throughput = jnp.where(busy, total / safe_t, inf_or_nan)
    eff = jnp.where(busy, total / n_senders / safe_t, inf_or_nan)
    hop_bytes = loads[:n_router_links].sum()
    mean_hops = jnp.where(off_node_bytes > 0, hop_bytes / jnp.where(off_node_bytes > 0, off_node_bytes, 1.0), 0.0)
    max_class = jax.ops.segment_max(loads, net.link_class, num_segments=n_classes)
    return {
        "completion_time": t,
        "throughput": throughput,
        "effective_injection_bandwidth": eff,
        "bottleneck_class": jnp.where(busy, net.link_class[worst], -1),
        "bottleneck_link": jnp.where(busy, worst, -1),
        "mean_hops": mean_hops,
        "total_bytes": total,
        "max_load_class": max_class,
    }


def point_metrics(net: NetworkArrays, pt: PointInputs, loads: Float[Array, "link"], *, n_classes: int,
                  n_router_links: int) -> dict:
    """Scalar metrics of one design point (DESIGN.md "Metrics").

    Returns ``completion_time`` (s), ``throughput`` (bytes/s),
    ``effective_injection_bandwidth`` (bytes/s per sending task),
    ``bottleneck_class`` / ``bottleneck_link`` (-1 when nothing crosses a
    link), ``mean_hops`` (router-to-router links per byte that leaves its
    node), ``total_bytes`` and ``max_load_class: Float[Array, "class"]``.
    """
    total = pt.nbytes.sum()
    sent = jax.ops.segment_sum(pt.nbytes, pt.src, num_segments=pt.task_node.shape[0])
    n_senders = (sent > 0).sum()
    sn = pt.task_node[pt.src]
    dn = pt.task_node[pt.dst]
    off_node_bytes = jnp.where(sn != dn, pt.nbytes, 0.0).sum()
    return _metrics(net, loads, total, off_node_bytes, n_senders, n_classes=n_classes, n_router_links=n_router_links)


def dense_point_metrics(net: NetworkArrays, pt: DensePointInputs, loads: Float[Array, "link"], *, n_classes: int,
                        n_router_links: int) -> dict:
    """:func:`point_metrics` for dense rank-one traffic."""
    b = pt.bytes_per_pair
    U, V = pt.src_weight.sum(), pt.dst_weight.sum()
    total = b * (U * V - (pt.src_weight * pt.dst_weight).sum())
    n_senders = ((pt.src_weight > 0) & (V - pt.dst_weight > 0)).sum()
    n_nodes = net.node_router.shape[0]
    off_node_bytes = loads[n_router_links:n_router_links + n_nodes].sum()
    return _metrics(net, loads, total, off_node_bytes, n_senders, n_classes=n_classes, n_router_links=n_router_links)


def _point(net, pt, *, n_router_links, n_classes, apply_routing, keep_loads):
    loads = point_link_loads(net, pt, apply_routing=apply_routing)
    out = point_metrics(net, pt, loads, n_classes=n_classes, n_router_links=n_router_links)
    if keep_loads:
        out["link_load"] = loads
    return out


def _dense_point(net, pt, *, n_routers, n_router_links, n_classes, apply_dense, keep_loads):
    loads = dense_point_link_loads(net, pt, n_routers=n_routers, apply_dense=apply_dense)
    out = dense_point_metrics(net, pt, loads, n_classes=n_classes, n_router_links=n_router_links)
    if keep_loads:
        out["link_load"] = loads
    return out


class _Kernels:
    """The jitted, vmapped entry points of one (topology, routing, keep_loads).

    * ``self(net, points)``: :class:`PointInputs` with a leading ``point`` axis
      on every array (one flow list per point);
    * ``self.shared(net, task_node, flows)``: one flow list shared by all
      points (``flows`` is a :class:`PointInputs` with ``task_node=None``
      and unbatched flow arrays); only ``task_node: Int[Array, "point task"]``
      varies — the common case of a placement sweep;
    * ``self.dense(net, points)``: :class:`DensePointInputs`, leading ``point`` axis.

    ``_cache_size()`` counts the compilations of all three.
    """

    def __init__(self, point, dense_point):
        self._per_point = jax.jit(jax.vmap(point, in_axes=(None, 0)))

        def shared(net, task_node, src, dst, nbytes):
            return jax.vmap(lambda tn: point(net, PointInputs(tn, src, dst, nbytes)))(task_node)

        self._shared = jax.jit(shared)
        self._dense = jax.jit(jax.vmap(dense_point, in_axes=(None, 0)))

    def __call__(self, net, points: PointInputs):
        return self._per_point(net, points)

    def shared(self, net, task_node, src, dst, nbytes):
        return self._shared(net, task_node, src, dst, nbytes)

    def dense(self, net, points: DensePointInputs):
        return self._dense(net, points)

    def _cache_size(self) -> int:
        return self._per_point._cache_size() + self._shared._cache_size() + self._dense._cache_size()


class BatchKernel(NamedTuple):
    """The jitted, vmapped kernels and the device arrays of one network (see :class:`_Kernels`)."""

    fn: _Kernels
    net: NetworkArrays
    operator: RoutingOperator


@functools.lru_cache(maxsize=32)
def batch_kernel(topology: Topology, routing: Routing, keep_loads: bool) -> BatchKernel:
    """The batched kernels for one (topology, routing): ``vmap`` over points, ``jit`` once.

    Calling ``kernel.fn(kernel.net, points)`` with ``points`` a
    :class:`PointInputs` whose arrays have a leading ``point`` axis returns a
    dict of per-point metrics (and ``link_load: Float[Array, "point link"]``
    when ``keep_loads``); ``kernel.fn.shared`` and ``kernel.fn.dense`` are
    the shared-flows and dense-traffic variants. Arrays of the network are
    transferred to the device once, here.
    """
    op = build_routing(topology, routing)
    net = NetworkArrays(
        node_router=jnp.asarray(topology.node_router.astype(np.int32)),
        capacity=jnp.asarray(topology.capacity),
        link_class=jnp.asarray(topology.link_class.astype(np.int32)),
        routing={k: jnp.asarray(v) for k, v in op.tables.items()},
    )
    common = dict(n_router_links=topology.n_router_links, n_classes=len(topology.class_names),
                  keep_loads=keep_loads)
    point = functools.partial(_point, apply_routing=op.apply, **common)
    dense_point = functools.partial(_dense_point, n_routers=topology.n_routers, apply_dense=op.apply_dense, **common)
    return BatchKernel(_Kernels(point, dense_point), net, op)
