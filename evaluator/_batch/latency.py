"""Latency: every message's cost besides its bytes, and the time of each phase with it (DESIGN.md "Beyond the
bound"; the model is :mod:`evaluator.latency`).

The expected latency of a message along its routing's paths is linear in
the link latencies: ``sum_l d_l a[l, m]`` with ``a[l, m]`` the share of
message ``m``'s bytes on link ``l``, i.e. the transpose of the link loads'
map applied to the per-link latencies ``d``. The kernel's own
:func:`~evaluator.kernel.point_link_loads` is that map, so one reverse pass
(``jax.vjp``) gives every message's path latency for every routing, on any
topology, with no path listed. A point is written for one design point and
batched (``vmap``, ``jit``) here, once per flow and task bucket.

A phase's time with latency is ``T_bw + max_m lambda_m``: its messages all
start together, each pays its latency, and the bytes take the phase's
bandwidth bound (``completion_time`` of the phase); the phase ends when its
slowest message has paid its latency and the bytes have moved. It is the
bound when every latency is 0, and never below ``max(T_bw, max_m
lambda_m)``. Collectives and traces sum their phases.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from .._ops import differentiable, take
from .._types import Float
from ..errors import check_memory
from ..kernel import BatchKernel, PointInputs, point_link_loads
from ..latency import Latency, link_latency
from ..placement import Placement
from ..topology import Topology
from ..traffic import AbstractTraffic
from .blocks import bucket_size

__all__ = ["message_latency", "phase_max_latency", "with_latency", "LATENCY_BLOCK", "TIME_MODEL"]

TIME_MODEL = ("time_with_latency: per phase, the bandwidth bound (phase_completion_time) plus the largest message "
              "latency (overheads + expected path wire and router latency + rendezvous round trips above the eager "
              "threshold), summed over phases; completion_time is the bandwidth bound alone")
"""What ``time_with_latency`` is, stored in a dataset's ``time_model`` attribute."""

LATENCY_BLOCK = 64
"""Points per call of the latency pass."""


def message_latency(net, pt: PointInputs, link_delay: Float[jax.Array, "link"], flow_tables, *, operator,
                    n_router_links: int, overhead: float, eager: float | None, round_trips: int):
    """``(lambda, consistent)`` of ONE point: the seconds each message costs before its bytes move
    (:mod:`evaluator.latency`: the overheads, its expected path's link and router latency, the rendezvous round
    trips above ``eager``), and whether the paths' latencies, weighted by the bytes, sum to the link loads'
    (``sum_m b_m path_m = sum_l d_l load_l``: the check that the paths are the loads' own).

    The paths come from the routing's own list of each flow's links where it has one
    (:attr:`~evaluator.routing.RoutingOperator.flow_links`: DOR, whose loads are integer quanta that JAX
    cannot differentiate), else from a reverse pass of the link loads (``jax.vjp``).
    """
    def loads(w):
        return point_link_loads(net, pt._replace(nbytes=w), apply_routing=operator.apply)

    if operator.flow_links is None:
        y, pull = jax.vjp(loads, pt.nbytes)
        (path,) = pull(link_delay)
    else:
        y = loads(pt.nbytes)
        n_nodes = net.node_router.shape[0]
        sn, dn = take(pt.task_node, pt.src), take(pt.task_node, pt.dst)
        sr, dr = take(net.node_router, sn), take(net.node_router, dn)
        links, frac = operator.flow_links(flow_tables, sr, dr)
        hop = jnp.where(links >= 0, frac * take(link_delay, jnp.maximum(links, 0)), 0.0).sum(axis=1)
        ends = take(link_delay, n_router_links + sn) + take(link_delay, n_router_links + n_nodes + dn)
        path = jnp.where(sr != dr, hop, 0.0) + jnp.where(sn != dn, ends, 0.0)
    want, got = jnp.dot(link_delay, y), jnp.dot(pt.nbytes, path)
    consistent = jnp.abs(got - want) <= 1e-9 * jnp.maximum(jnp.abs(want), jnp.finfo(y.dtype).tiny)
    one_way = overhead + path
    if eager is None or round_trips == 0:
        return one_way, consistent
    return one_way + jnp.where(pt.nbytes > eager, 2.0 * round_trips * one_way, 0.0), consistent


@functools.lru_cache(maxsize=32)
def _batched(operator, latency: Latency, n_router_links: int):
    """``f(net, link_delay, flow_tables, task_node[p, T], src[p, F], dst[p, F], nbytes[p, F]) -> ([p], [p])``:
    the largest message latency of each point (0 where it sends nothing) and the consistency check, vmapped and
    jitted once per bucket."""
    one = functools.partial(message_latency, operator=operator, n_router_links=n_router_links,
                            overhead=latency.overhead, eager=latency.eager_threshold,
                            round_trips=int(latency.rendezvous_round_trips))

    def point_max(net, delay, ft, tn, s, d, b):
        lam, ok = one(net, PointInputs(tn, s, d, b), delay, ft)
        return jnp.max(jnp.where(b > 0, lam, 0.0), initial=0.0), ok

    return jax.jit(jax.vmap(point_max, in_axes=(None, None, None, 0, 0, 0, 0)))


def phase_max_latency(kern: BatchKernel, topology: Topology, traffics: Sequence[AbstractTraffic],
                      placements: Sequence[Placement]) -> Float[np.ndarray, "point phase"]:
    """The largest message latency of every phase of every point (s; NaN where a point has no such phase), with
    ``topology.latency``. Dense traffic is listed as flows first (refused, naming ``topology.latency``, when
    that would not fit in memory)."""
    lat: Latency = topology.latency
    delay = jnp.asarray(link_latency(topology, lat))
    op = kern.operator
    fn = _batched(op, lat, topology.n_router_links)
    flow_tables = None if op.flow_links is None else jax.device_put(op.flow_tables)
    n = len(traffics)
    P = max(t.n_phases for t in traffics)
    out = np.full((n, P), np.nan)
    for k in range(P):
        idx = [i for i in range(n) if traffics[i].n_phases > k]
        exch = []
        for i in idx:
            x = traffics[i].phases[k]
            if x.kernel_input != "flows":
                m = int(x.n_tasks) ** 2
                check_memory("topology.latency", "set", 24.0 * m * 4,
                             f"the {m:,} task pairs of {x.name!r} listed as messages for their latency",
                             "Evaluate this traffic without a latency model (drop topology.latency), or on fewer "
                             "tasks.")
                x = x.to_flows()
            exch.append(x)
        F = bucket_size(max(x.n_flows for x in exch))
        T = bucket_size(max(x.n_tasks for x in exch))
        for lo in range(0, len(idx), LATENCY_BLOCK):
            part = list(range(lo, min(lo + LATENCY_BLOCK, len(idx))))
            B = bucket_size(len(part), minimum=1)
            tn = np.zeros((B, T), np.int32)
            src = np.zeros((B, F), np.int32)
            dst = np.zeros((B, F), np.int32)
            nb = np.zeros((B, F), np.float64)
            for r, j in enumerate(part):
                x, pl = exch[j], placements[idx[j]]
                tn[r, :x.n_tasks] = np.asarray(pl.task_node)[:x.n_tasks]
                src[r, :x.n_flows] = x.src
                dst[r, :x.n_flows] = x.dst
                nb[r, :x.n_flows] = x.nbytes
            with differentiable():  # (traced, once per bucket, with scatters JAX can transpose)
                got, ok = fn(kern.net, delay, flow_tables, tn, src, dst, nb)
            if not bool(np.all(np.asarray(ok))):
                raise RuntimeError(f"routing {op.routing.label!r}: the message latencies of its paths disagree with "
                                   "its link loads (its apply is not differentiable by JAX and it lists no "
                                   "flow_links); a routing needs one of the two for a latency model")
            got = np.asarray(got)
            out[[idx[j] for j in part], k] = got[:len(part)]
    return out


def with_latency(metrics: dict, phases: dict | None, max_latency: Float[np.ndarray, "point phase"]) -> None:
    """Add ``time_with_latency``, ``latency_share`` (and ``phase_time_with_latency`` where there are phases) to
    a batch's results, in place: each phase's bound plus its slowest message's latency, summed."""
    if phases is not None:
        t_ph = phases["phase_completion_time"]
        phases["phase_time_with_latency"] = t_ph + max_latency
        bw = np.nansum(t_ph, axis=1)
    else:
        bw = metrics["completion_time"]
    lat = np.nansum(max_latency, axis=1)
    total = bw + lat
    metrics["time_with_latency"] = total
    with np.errstate(invalid="ignore", divide="ignore"):
        metrics["latency_share"] = np.where(total > 0, lat / np.where(total > 0, total, 1.0), 0.0)
