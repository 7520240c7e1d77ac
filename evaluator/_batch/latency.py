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
from ..errors import ResourceError
from ..kernel import PointInputs, node_endpoints, point_link_loads
from .compiled import BatchKernel
from ..latency import Latency, link_latency
from ..placement import Placement
from ..routing import require_linear
from ..topology import Topology
from ..traffic import AbstractTraffic
from .blocks import bucket_size

__all__ = ["message_latency", "flow_latencies", "latency_peak", "phase_max_latency", "with_latency", "LATENCY_BLOCK",
           "TIME_MODEL"]

TIME_MODEL = ("time_with_latency: per phase, the bandwidth bound (phase_completion_time) plus the largest message "
              "latency (overheads + expected path wire and router latency + rendezvous round trips above the eager "
              "threshold), summed over phases; completion_time is the bandwidth bound alone")
"""What ``time_with_latency`` is, stored in a dataset's ``time_model`` attribute."""

LATENCY_BLOCK = 64
"""Router-pair chunks per call of the latency pass over a dense exchange."""

LATENCY_ROWS = 1 << 18
"""Flow slots (exchanges x padded flows) per call of the latency pass over flow lists."""


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
        links, frac = operator.flow_links(flow_tables, *node_endpoints(net, sn, dn, sr, dr))
        hop = jnp.where(links >= 0, frac * take(link_delay, jnp.maximum(links, 0)), 0.0).sum(axis=1)
        ends = take(link_delay, n_router_links + sn) + take(link_delay, n_router_links + n_nodes + dn)
        path = jnp.where(sr != dr, hop, 0.0) + jnp.where(sn != dn, ends, 0.0)
    want, got = jnp.dot(link_delay, y), jnp.dot(pt.nbytes, path)
    consistent = jnp.abs(got - want) <= 1e-9 * jnp.maximum(jnp.abs(want), jnp.finfo(y.dtype).tiny)
    one_way = overhead + path
    if eager is None or round_trips == 0:
        return one_way, consistent
    return one_way + jnp.where(pt.nbytes > eager, 2.0 * round_trips * one_way, 0.0), consistent


def _one_point(operator, latency: Latency, n_router_links: int):
    """``f(net, link_delay, flow_tables, task_node[T], src[F], dst[F], nbytes[F]) -> ([F], ok)``: every message's
    latency of one exchange (:func:`message_latency` with the model's parameters bound)."""
    one = functools.partial(message_latency, operator=operator, n_router_links=n_router_links,
                            overhead=latency.overhead, eager=latency.eager_threshold,
                            round_trips=int(latency.rendezvous_round_trips))
    return lambda net, delay, ft, tn, s, d, b: one(net, PointInputs(tn, s, d, b), delay, ft)


@functools.lru_cache(maxsize=32)
def _batched(operator, latency: Latency, n_router_links: int):
    """``f(net, link_delay, flow_tables, task_node[p, T], src[p, F], dst[p, F], nbytes[p, F]) -> ([p], [p])``:
    the largest message latency of each point (0 where it sends nothing) and the consistency check, vmapped and
    jitted once per bucket."""
    one = _one_point(operator, latency, n_router_links)

    def point_max(net, delay, ft, tn, s, d, b):
        lam, ok = one(net, delay, ft, tn, s, d, b)
        return jnp.max(jnp.where(b > 0, lam, 0.0), initial=0.0), ok

    return jax.jit(jax.vmap(point_max, in_axes=(None, None, None, 0, 0, 0, 0)))


@functools.lru_cache(maxsize=32)
def _per_flow(operator, latency: Latency, n_router_links: int):
    """:func:`_one_point`, jitted once per bucket."""
    return jax.jit(_one_point(operator, latency, n_router_links))


def _check(ok, operator) -> None:
    """Refuse paths whose latencies disagree with the link loads (:func:`message_latency`'s check)."""
    if not bool(np.all(np.asarray(ok))):
        raise RuntimeError(f"routing {operator.routing.label!r}: the message latencies of its paths disagree with "
                           "its link loads (its apply is not differentiable by JAX and it lists no flow_links); a "
                           "routing needs one of the two for a latency model")


def flow_latencies(kern: BatchKernel, topology: Topology, task_node: np.ndarray, src: np.ndarray, dst: np.ndarray,
                   nbytes: np.ndarray) -> Float[np.ndarray, "flow"]:
    """Every message's latency (s) of one exchange of flows (:func:`message_latency`), with
    ``topology.latency`` (0 for every message without a latency model)."""
    if topology.latency is None:
        return np.zeros(len(src))
    op = kern.operator
    require_linear(op.routing, "The latency model (path latencies from the transpose of the link loads)")
    fn = _per_flow(op, topology.latency, topology.n_router_links)
    F, T = bucket_size(len(src)), bucket_size(len(task_node))
    pad = lambda a, n, dt: np.concatenate([np.asarray(a, dt), np.zeros(n - len(a), dt)])  # noqa: E731
    flow_tables = None if op.flow_links is None else jax.device_put(op.flow_tables)
    with differentiable():
        lam, ok = fn(kern.net, jnp.asarray(link_latency(topology, topology.latency)), flow_tables,
                     pad(task_node, T, np.int32), pad(src, F, np.int32), pad(dst, F, np.int32),
                     pad(nbytes, F, np.float64))
    _check(ok, op)
    return np.asarray(lam)[:len(src)]


def latency_peak(kern: BatchKernel, topology: Topology, exchanges: Sequence[AbstractTraffic], measure) -> int:
    """Bytes of the largest call of the latency pass (:func:`phase_max_latency`) over ``exchanges`` (every phase of
    every point), before any of it runs: ``measure`` (:func:`~evaluator._batch.memory.jaxpr_peak_bytes`) of its
    traced program (nothing compiled) at the shapes the pass gives its largest call, plus the host arrays that call
    is filled from (the traced program counted twice for a reverse pass: XLA keeps more of it than the trace
    shows). 0 without a latency model. A dense exchange's router pairs are bounded by the square of
    ``min(tasks, routers)`` (the pass counts the routers its nodes use)."""
    lat: Latency = topology.latency
    if lat is None:
        return 0
    fn = _batched(kern.operator, lat, topology.n_router_links)
    sds = lambda shape, dt: jax.ShapeDtypeStruct(shape, np.dtype(dt))  # noqa: E731
    shapes = []  # (B, T, F) of the largest calls: flow lists, dense exchanges
    flows = [x for x in exchanges if x.kernel_input == "flows"]
    if flows:
        F = bucket_size(max(x.n_flows for x in flows))
        block = max(1, min(LATENCY_ROWS // F, 1024))
        shapes.append((bucket_size(min(block, len(flows)), minimum=1),
                       bucket_size(max(x.n_tasks for x in flows)), F))
    for x in exchanges:
        if x.kernel_input == "dense":
            m = min(int(x.n_tasks), topology.n_routers)
            pairs = max(1, min(m * m, DENSE_PAIR_LIMIT))
            C = min(DENSE_CHUNK, bucket_size(pairs))
            shapes.append((bucket_size(min(LATENCY_BLOCK, -(-pairs // C)), minimum=1), bucket_size(2 * m), C))
    peak = 0
    delay = sds((topology.n_links,), np.float64)
    ft = None if kern.operator.flow_links is None else kern.operator.flow_tables
    for B, T, F in set(shapes):
        host = B * (T * 4 + F * 16)
        key = (fn, B, T, F)
        if key in _PEAKS:  # (traced once per bucket: a warm call's estimate traces nothing, 17 MB less RSS)
            peak = max(peak, _PEAKS[key] + host)
            continue
        with differentiable():
            traced = fn.trace(kern.net, delay, ft, sds((B, T), np.int32), sds((B, F), np.int32),
                              sds((B, F), np.int32), sds((B, F), np.float64))
        traced_peak = int(measure(traced.jaxpr))
        if ft is None:  # the reverse pass (jax.vjp): XLA's buffers were 1.27x the traced program's (DF(4,8,4)
            traced_peak *= 2  # Valiant, 64 points of 1,056 flows: 31.6 MB against 24.8 MB); counted twice
        _PEAKS[key] = traced_peak
        while len(_PEAKS) > 64:
            _PEAKS.pop(next(iter(_PEAKS)))
        peak = max(peak, traced_peak + host)
    return peak


_PEAKS: dict = {}
"""The traced peak of the latency pass per (jitted pass, B, T, F): the jitted pass holds its operator, so a key
is not reused while cached."""


def phase_max_latency(kern: BatchKernel, topology: Topology, traffics: Sequence[AbstractTraffic],
                      placements: Sequence[Placement]) -> Float[np.ndarray, "point phase"]:
    """The largest message latency of every phase of every point (s; NaN where a point has no such phase), with
    ``topology.latency``. Dense traffic is never listed by task pairs (:func:`_dense_max_latency`)."""
    lat: Latency = topology.latency
    op = kern.operator
    require_linear(op.routing, "The latency model (path latencies from the transpose of the link loads)")
    delay = jnp.asarray(link_latency(topology, lat))
    fn = _batched(op, lat, topology.n_router_links)
    flow_tables = None if op.flow_links is None else jax.device_put(op.flow_tables)
    n = len(traffics)
    P = max(t.n_phases for t in traffics)
    out = np.full((n, P), np.nan)
    flat = []  # (point, phase, exchange) of every flow-list phase: one batch along (point, phase)
    for i, t in enumerate(traffics):
        for k, x in enumerate(t.phases):
            if x.kernel_input != "flows":  # dense: one message per pair of routers it joins
                out[i, k] = _dense_max_latency(kern, topology, x, np.asarray(placements[i].task_node), fn, delay,
                                               flow_tables)
            else:
                flat.append((i, k, x))
    if not flat:
        return out
    F = bucket_size(max(x.n_flows for _, _, x in flat))
    T = bucket_size(max(x.n_tasks for _, _, x in flat))
    task_node = {i: np.asarray(placements[i].task_node, np.int32) for i in {i for i, _, _ in flat}}
    block = max(1, min(LATENCY_ROWS // F, 1024))
    for lo in range(0, len(flat), block):
        part = flat[lo:lo + block]
        B = bucket_size(len(part), minimum=1)
        tn = np.zeros((B, T), np.int32)
        src = np.zeros((B, F), np.int32)
        dst = np.zeros((B, F), np.int32)
        nb = np.zeros((B, F), np.float64)
        for r, (i, _, x) in enumerate(part):
            tn[r, :x.n_tasks] = task_node[i][:x.n_tasks]
            src[r, :x.n_flows] = x.src
            dst[r, :x.n_flows] = x.dst
            nb[r, :x.n_flows] = x.nbytes
        with differentiable():  # (traced, once per bucket, with scatters JAX can transpose)
            got, ok = fn(kern.net, delay, flow_tables, tn, src, dst, nb)
        _check(ok, op)
        got = np.asarray(got)[:len(part)]
        out[[i for i, _, _ in part], [k for _, k, _ in part]] = got
    return out


DENSE_PAIR_LIMIT = 1 << 24
"""Router pairs a dense exchange's slowest message is searched over, at most (4,096 routers all to all)."""

DENSE_CHUNK = 1 << 15
"""Router pairs per point of one call of the latency pass over a dense exchange."""


def _dense_max_latency(kern, topology, x, task_node, fn, delay, flow_tables) -> float:
    """The slowest message of a dense rank-one exchange (every task ``s`` with ``src_weight > 0`` sends to every
    task ``d != s`` with ``dst_weight > 0``), never listing its task pairs: one message per pair of the routers
    its nodes hang off (a message's latency depends on its routers, its node links and whether both tasks share a
    node: the routings here give pairs of nodes on the same two routers paths of one length and classes), each
    with the largest bytes of a pair there: ``bytes_per_pair`` times the largest sender weight on the one router
    and the largest receiver weight on the other (the rendezvous counted for that pair where those bytes exceed
    the threshold; until 2026-12-06 every pair was given the largest bytes of the whole exchange, so a far pair of
    small messages paid the round trips of a near large one). Pairs within one router or one node take that
    router's or node's largest weights, which may be one task's or one node's own (a pair that sends nothing): an
    over-count there only. More than :data:`DENSE_PAIR_LIMIT` router pairs are refused
    (:class:`~evaluator.errors.ResourceError`)."""
    lat: Latency = topology.latency
    n = int(x.n_tasks)
    tn = np.asarray(task_node, np.int64)[:n]
    ws, wd = np.asarray(x.src_weight, np.float64), np.asarray(x.dst_weight, np.float64)
    b_max = float(x.bytes_per_pair) * float(ws.max(initial=0.0)) * float(wd.max(initial=0.0))
    if b_max <= 0 or not (ws > 0).any() or not (wd > 0).any():
        return 0.0
    node_router = np.asarray(topology.node_router)
    s_nodes, d_nodes = np.unique(tn[ws > 0]), np.unique(tn[wd > 0])
    rs, s_rep = np.unique(node_router[s_nodes], return_index=True)
    rd, d_rep = np.unique(node_router[d_nodes], return_index=True)
    bpp = float(x.bytes_per_pair)

    def factor(nbytes):
        """The rendezvous round trips' multiplier of messages of ``nbytes`` (1 for eager ones)."""
        slow = lat.eager_threshold is not None and lat.rendezvous_round_trips > 0 and nbytes > lat.eager_threshold
        return 1.0 + (2.0 * lat.rendezvous_round_trips if slow else 0.0)

    def most(w, where, size):
        """The largest weight ``w`` of the tasks on each of ``size`` nodes or routers (``where``: each task's)."""
        out = np.zeros(size)
        np.maximum.at(out, where[w > 0], w[w > 0])
        return out

    ws_node, wd_node = most(ws, tn, topology.n_nodes), most(wd, tn, topology.n_nodes)
    best = 0.0
    # two tasks on one node (a pair that sends): the overheads only
    cs = np.bincount(tn[ws > 0], minlength=topology.n_nodes)
    cd = np.bincount(tn[wd > 0], minlength=topology.n_nodes)
    cb = np.bincount(tn[(ws > 0) & (wd > 0)], minlength=topology.n_nodes)
    pairs = cs * cd - cb > 0
    if np.any(pairs):
        best = lat.overhead * factor(bpp * float((ws_node * wd_node)[pairs].max()))
    d = np.asarray(delay)
    n_rl, n_nodes = topology.n_router_links, topology.n_nodes
    inj, ej = d[n_rl:n_rl + n_nodes], d[n_rl + n_nodes:]
    # nodes on one router: their node links and the router
    common = np.intersect1d(rs, rd)
    if common.size and (s_nodes.size > 1 or d_nodes.size > 1):
        for r in common:
            a, b = s_nodes[node_router[s_nodes] == r], d_nodes[node_router[d_nodes] == r]
            if a.size and b.size and not (a.size == 1 and b.size == 1 and a[0] == b[0]):
                # (the router's latency is the injection link's: link_latency puts it on a link ending at a router)
                f = factor(bpp * float(ws_node[a].max()) * float(wd_node[b].max()))
                best = max(best, (lat.overhead + float(inj[a].max()) + float(ej[b].max())) * f)
    n_pairs = rs.size * rd.size - common.size
    if n_pairs == 0:
        return best
    if n_pairs > DENSE_PAIR_LIMIT:
        raise ResourceError("topology.latency", "enabled",
                            f"at most {DENSE_PAIR_LIMIT:,} router pairs for the slowest message of a dense exchange; "
                            f"{x.name!r} joins {n_pairs:,}",
                            "Evaluate it without a latency model (topology.latency.enabled=false), or on fewer "
                            "routers.")
    reps = np.concatenate([s_nodes[s_rep], d_nodes[d_rep]]).astype(np.int32)
    i, j = np.meshgrid(np.arange(rs.size), np.arange(rd.size), indexing="ij")
    keep = (rs[i] != rd[j]).reshape(-1)
    src = i.reshape(-1)[keep].astype(np.int32)
    dst = (rs.size + j.reshape(-1)[keep]).astype(np.int32)
    # each router pair's largest message: the largest sender weight on the one, receiver weight on the other
    ws_r, wd_r = most(ws, node_router[tn], topology.n_routers), most(wd, node_router[tn], topology.n_routers)
    nb = bpp * ws_r[rs][i.reshape(-1)[keep]] * wd_r[rd][j.reshape(-1)[keep]]
    return max(best, _pairs_max_latency(kern, fn, delay, flow_tables, reps, src, dst, nb))


def _pairs_max_latency(kern, fn, delay, flow_tables, reps, src, dst, nb) -> float:
    """The slowest of the messages ``src[k] -> dst[k]`` of ``nb[k]`` bytes between the nodes ``reps`` (indices into
    it), in blocks of :data:`LATENCY_BLOCK` chunks of at most :data:`DENSE_CHUNK` messages (one compiled shape)."""
    T = bucket_size(reps.size)
    tn_pad = np.zeros(T, np.int32)
    tn_pad[:reps.size] = reps
    C = min(DENSE_CHUNK, bucket_size(src.size))
    n_chunks = -(-src.size // C)
    best = 0.0
    for lo in range(0, n_chunks, LATENCY_BLOCK):
        hi = min(lo + LATENCY_BLOCK, n_chunks)
        B = bucket_size(hi - lo, minimum=1)
        S = np.zeros((B, C), np.int32)
        D = np.zeros((B, C), np.int32)
        NB = np.zeros((B, C))
        for r, c in enumerate(range(lo, hi)):
            part = slice(c * C, min((c + 1) * C, src.size))
            m = part.stop - part.start
            S[r, :m], D[r, :m], NB[r, :m] = src[part], dst[part], nb[part]
        with differentiable():
            got, ok = fn(kern.net, delay, flow_tables, np.broadcast_to(tn_pad, (B, T)), S, D, NB)
        _check(ok, kern.operator)
        best = max(best, float(np.asarray(got)[:hi - lo].max(initial=0.0)))
    return best


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
