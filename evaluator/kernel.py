"""JAX kernels: link demand and metrics for ONE design point.

The kernels here are written for a single design point (one traffic, one
placement) and carry no batch axis. :func:`batch_kernel` applies ``vmap``
and ``jit`` once, at the batch entry point, for one (topology, routing)
pair; a second chunk of the same shape bucket compiles nothing.

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

from .routing import RoutingOperator, build_routing
from .routing import Routing
from .topology import Topology

__all__ = ["PointInputs", "NetworkArrays", "point_link_loads", "point_metrics", "batch_kernel", "METRIC_NAMES"]


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


def point_link_loads(net: NetworkArrays, pt: PointInputs, *, n_routers: int, n_router_links: int,
                     apply_routing) -> Float[Array, "link"]:
    """Expected bytes on every link for one design point.

    Flows between tasks on one node use no link; flows between nodes load
    the source's injection and the destination's ejection link; flows
    between routers are routed by ``apply_routing`` on the router-pair
    demand matrix.
    """
    n_nodes = net.node_router.shape[0]
    sn = pt.task_node[pt.src]
    dn = pt.task_node[pt.dst]
    off_node = jnp.where(sn != dn, pt.nbytes, 0.0)
    inj = jax.ops.segment_sum(off_node, sn, num_segments=n_nodes)
    ej = jax.ops.segment_sum(off_node, dn, num_segments=n_nodes)
    sr = net.node_router[sn]
    dr = net.node_router[dn]
    off_router = jnp.where(sr != dr, pt.nbytes, 0.0)
    demand = jax.ops.segment_sum(off_router, sr * n_routers + dr, num_segments=n_routers * n_routers)
    router_loads = apply_routing(net.routing, demand.reshape(n_routers, n_routers))
    return jnp.concatenate([router_loads, inj, ej])


def point_metrics(net: NetworkArrays, pt: PointInputs, loads: Float[Array, "link"], *, n_classes: int,
                  n_router_links: int) -> dict:
    """Scalar metrics of one design point (DESIGN.md "Metrics").

    Returns ``completion_time`` (s), ``throughput`` (bytes/s),
    ``effective_injection_bandwidth`` (bytes/s per sending task),
    ``bottleneck_class`` / ``bottleneck_link`` (-1 when nothing crosses a
    link), ``mean_hops`` (router-to-router links per byte that leaves its
    node), ``total_bytes`` and ``max_load_class: Float[Array, "class"]``.
    """
    time_per_link = loads / net.capacity
    worst = jnp.argmax(time_per_link)
    t = time_per_link[worst]
    total = pt.nbytes.sum()
    sent = jax.ops.segment_sum(pt.nbytes, pt.src, num_segments=pt.task_node.shape[0])
    n_senders = jnp.maximum((sent > 0).sum(), 1)
    busy = t > 0
    safe_t = jnp.where(busy, t, 1.0)
    inf_or_nan = jnp.where(total > 0, jnp.inf, jnp.nan)
    throughput = jnp.where(busy, total / safe_t, inf_or_nan)
    eff = jnp.where(busy, total / n_senders / safe_t, inf_or_nan)
    sn = pt.task_node[pt.src]
    dn = pt.task_node[pt.dst]
    off_node_bytes = jnp.where(sn != dn, pt.nbytes, 0.0).sum()
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


def _point(net, pt, *, n_routers, n_router_links, n_classes, apply_routing, keep_loads):
    loads = point_link_loads(net, pt, n_routers=n_routers, n_router_links=n_router_links, apply_routing=apply_routing)
    out = point_metrics(net, pt, loads, n_classes=n_classes, n_router_links=n_router_links)
    if keep_loads:
        out["link_load"] = loads
    return out


class BatchKernel(NamedTuple):
    """A jitted, vmapped kernel and the device arrays of its network."""

    fn: object
    net: NetworkArrays
    operator: RoutingOperator


@functools.lru_cache(maxsize=32)
def batch_kernel(topology: Topology, routing: Routing, keep_loads: bool) -> BatchKernel:
    """The batched kernel for one (topology, routing): ``vmap`` over points, ``jit`` once.

    Calling ``kernel.fn(kernel.net, points)`` with ``points`` a
    :class:`PointInputs` whose arrays have a leading ``point`` axis returns a
    dict of per-point metrics (and ``link_load: Float[Array, "point link"]``
    when ``keep_loads``). Arrays of the network are transferred to the
    device once, here.
    """
    op = build_routing(topology, routing)
    net = NetworkArrays(
        node_router=jnp.asarray(topology.node_router.astype(np.int32)),
        capacity=jnp.asarray(topology.capacity),
        link_class=jnp.asarray(topology.link_class.astype(np.int32)),
        routing={k: jnp.asarray(v) for k, v in op.tables.items()},
    )
    point = functools.partial(
        _point,
        n_routers=topology.n_routers,
        n_router_links=topology.n_router_links,
        n_classes=len(topology.class_names),
        apply_routing=op.apply,
        keep_loads=keep_loads,
    )
    fn = jax.jit(jax.vmap(point, in_axes=(None, 0)))
    return BatchKernel(fn, net, op)
