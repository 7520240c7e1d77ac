"""Flow-level max-min fair sharing: per-flow finish times beside the bandwidth bound (issue 33).

The model (DESIGN.md "Beyond the bound")
----------------------------------------
Every flow ``f`` carries ``nbytes[f]`` bytes and starts at ``start[f]``
seconds (before it, it uses no bandwidth: the lead passes each message's
latency there, as SimGrid's network model does). Its bytes may be split over
several paths: it puts ``frac[f, k] * rate_f`` bytes/s on link
``links[f, k]`` (``-1``: padding). Between two *events* (a flow starts, a
flow finishes) the rates are constant and max-min fair with weights
(progressive filling: the *levels* of all active flows rise together from 0,
``rate_f = weight_f * level``; when a link is full, every flow still rising
that crosses it freezes at the current level; repeat until every flow is
frozen). Remaining bytes decrease exactly by ``rate * dt``; the rates are
recomputed at every event. This is SimGrid's flow model with the CM02
network model (pure max-min, no TCP window bound, no cross traffic).

Weights: ``"flow"``-fair (every flow weight 1) or ``"job"``-fair (a flow's
weight is 1 / the number of its job's flows active at that moment, so that
every job gets an equal share of a link it shares; recomputed at every event).

With equal sizes, every flow starting at 0 and flow-fair weights, the makespan
is the bandwidth bound ``max_l load_l / capacity_l`` exactly, for single- and
multi-path flows alike: the first link to fill is the one of largest
``load / capacity``, its flows get ``capacity / load`` of their bytes per
second and never more while all of them run; every other flow's rate is at
least the smallest level, which only rises as flows finish.

Everything device-side is written for ONE design point with fixed-size
arrays and masks (``lax.while_loop``, no Python event loop);
:func:`evaluator._batch.flowlevel.max_min_batch` applies ``vmap`` and ``jit``.
:func:`flow_incidence` builds ``links``/``frac`` on the host from the kernel
itself (:func:`evaluator.kernel.point_link_loads`), for every routing.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jaxtyping import Array, Bool, Float, Int

from ._ops import segment_add
from ._types import AnyArray
from .errors import ConfigError, ResourceError, available_memory, check_memory, fmt_size, int_array

__all__ = ["REL_TIE", "WEIGHT_MODES", "max_min_rates", "max_min_finish", "max_min_progress", "progress_active",
           "flow_incidence", "incidence_loads"]

REL_TIE = 1e-12
"""Relative tolerance under which two saturation levels (or two finish times within one interval) are one."""

WEIGHT_MODES = ("flow", "job")
"""``weight_mode`` of :func:`max_min_finish`: every flow weight 1, or every job one equal share."""


def _entries(links, frac):
    """``(on, idx, fr)``: which entries carry bytes, their link (0 where not), their fraction (0 where not)."""
    on = (links >= 0) & (frac > 0)
    return on, jnp.where(on, links, 0).astype(jnp.int32), jnp.where(on, frac, 0.0)


def _rates(on, idx, fr, capacity, active, weight):
    """:func:`max_min_rates` on prepared entries (:func:`_entries`)."""
    F, K = on.shape
    L = capacity.shape[0]
    flat = idx.reshape(-1)
    crosses = on.any(axis=1)
    w = jnp.where(active, weight, 0.0)
    rising0 = active & crosses

    def coef(rising):  # per link: the summed weight x fraction of the flows still rising
        return segment_add((jnp.where(rising, w, 0.0)[:, None] * fr).reshape(-1), flat, L)

    def cond(s):
        rising, _, _, _, c = s
        return jnp.any(c > 0)

    def body(s):
        rising, rate, used, level, c = s
        has = c > 0
        lv = jnp.where(has, jnp.maximum(capacity - used, 0.0) / jnp.where(has, c, 1.0), jnp.inf)
        low = jnp.maximum(jnp.min(lv), level)
        full = has & (lv <= low * (1.0 + REL_TIE))
        hit = rising & jnp.any(on & full[idx], axis=1)
        rate = jnp.where(hit, w * low, rate)
        used = used + segment_add((jnp.where(hit, rate, 0.0)[:, None] * fr).reshape(-1), flat, L)
        rising = rising & ~hit
        return rising, rate, used, low, coef(rising)

    init = (rising0, jnp.zeros(F, capacity.dtype), jnp.zeros(L, capacity.dtype), jnp.zeros((), capacity.dtype),
            coef(rising0))
    rising, rate, *_ = lax.while_loop(cond, body, init)
    # active flows crossing no link (or left rising: none when every active weight is > 0): unbounded
    return jnp.where(active & (rising | ~crosses), jnp.inf, jnp.where(active, rate, 0.0))


def _rates_of(on, idx, fr, capacity, active, weight, size: int | None):
    """``(rates, over)``: :func:`_rates` of the active flows, computed on ``size`` rows that gather them in order
    (``None``, or at least every flow: on every row); ``over``: more flows are active than that (the rates are then
    not to be used)."""
    F = on.shape[0]
    if size is None or size >= F:
        return _rates(on, idx, fr, capacity, active, weight), jnp.zeros((), bool)
    at = jnp.nonzero(active, size=size, fill_value=F)[0]
    row = jnp.minimum(at, F - 1)
    r = _rates(on[row], idx[row], fr[row], capacity, at < F, weight[row])
    return jnp.zeros(F, r.dtype).at[at].set(r, mode="drop"), active.sum() > size


def max_min_rates(links: Int[AnyArray, "flow K"], frac: Float[AnyArray, "flow K"], capacity: Float[AnyArray, "link"],
                  active: Bool[AnyArray, "flow"], weight: Float[AnyArray, "flow"]) -> Float[Array, "flow"]:
    """Weighted max-min fair rates (bytes/s) of the active flows, by progressive filling.

    ``links[f, k]`` (``-1``: padding) carries ``frac[f, k]`` of flow ``f``'s
    rate; ``capacity`` in bytes/s (> 0); ``weight`` > 0 for the active flows.
    All active flows' levels rise together (``rate_f = weight_f * level``);
    when a link fills, every flow still rising that crosses it freezes; links
    whose saturation levels agree within :data:`REL_TIE` (relative) fill
    together. An active flow crossing no link gets ``inf``; an inactive flow 0.
    At most one round per distinct saturation level (``lax.while_loop``).
    """
    on, idx, fr = _entries(jnp.asarray(links), jnp.asarray(frac))
    return _rates(on, idx, fr, jnp.asarray(capacity), jnp.asarray(active, bool), jnp.asarray(weight))


def max_min_finish(links: Int[AnyArray, "flow K"], frac: Float[AnyArray, "flow K"], capacity: Float[AnyArray, "link"],
                   nbytes: Float[AnyArray, "flow"], start: Float[AnyArray, "flow"], weight_mode: str = "flow",
                   job: Int[AnyArray, "flow"] | None = None, flow_weight: Float[AnyArray, "flow"] | None = None
                   ) -> Float[Array, "flow"]:
    """Finish time (s) of every flow under max-min fair sharing (the module docstring's model).

    Event-driven: the events are flow starts and finishes; between them the
    rates (:func:`max_min_rates`) are constant and the remaining bytes
    decrease exactly. Flows whose finish times within one interval agree to
    :data:`REL_TIE` of the interval finish together. A flow with 0 bytes (a
    padding flow: 0 bytes, links -1) finishes at its start and changes nothing
    else; a flow crossing no link finishes at its start. ``weight_mode``
    (static): ``"flow"`` or ``"job"`` (``job``: any integer job id per flow).
    ``flow_weight`` (optional, > 0): a constant factor on every flow's weight
    (SimGrid's CM02 model weighs a flow by ``1 / its route's latency``: pass
    that to reproduce it; flow-fair is its special case of equal latencies).
    The makespan is ``finish.max()``. At most ``2 F + 1`` events.
    """
    if weight_mode not in WEIGHT_MODES:
        raise ConfigError("weight_mode", weight_mode, f"one of {', '.join(WEIGHT_MODES)}")
    links, frac = jnp.asarray(links), jnp.asarray(frac)
    nbytes = jnp.asarray(nbytes)
    start = jnp.asarray(start, nbytes.dtype)
    capacity = jnp.asarray(capacity, nbytes.dtype)
    F = nbytes.shape[0]
    on, idx, fr = _entries(links, frac)
    if weight_mode == "job":
        if job is None:
            raise ConfigError("job", None, "an integer job id per flow with weight_mode = 'job'")
        _, jid = jnp.unique(jnp.asarray(job), size=F, return_inverse=True, fill_value=0)
        jid = jid.reshape(F).astype(jnp.int32)

    if flow_weight is not None:
        fw = jnp.asarray(flow_weight, nbytes.dtype)
    done0 = ~(nbytes > 0)
    finish0 = jnp.where(done0, start, jnp.inf)
    now0 = jnp.min(jnp.where(done0, jnp.inf, start))

    def cond(s):
        _, _, done, _, it = s
        return jnp.any(~done) & (it <= 2 * F)

    def body(s):
        now, rem, done, finish, it = s
        started = start <= now
        active = started & ~done
        if weight_mode == "job":
            count = segment_add(active.astype(nbytes.dtype), jid, F)
            weight = jnp.where(active, 1.0 / jnp.maximum(count[jid], 1.0), 1.0)
        else:
            weight = jnp.ones(F, nbytes.dtype)
        if flow_weight is not None:
            weight = weight * fw
        rate = _rates(on, idx, fr, capacity, active, weight)
        dt_fin = jnp.where(active & (rate > 0), rem / jnp.where(rate > 0, rate, 1.0), jnp.inf)
        t_start = jnp.min(jnp.where(~started & ~done, start, jnp.inf))
        dt_first = jnp.min(dt_fin)
        by_start = t_start - now <= dt_first
        dt = jnp.where(by_start, t_start - now, dt_first)
        t_next = jnp.where(by_start, t_start, now + dt)
        ends = active & (dt_fin <= dt * (1.0 + REL_TIE))
        rem = jnp.where(ends, 0.0, jnp.where(active, rem - jnp.where(active, rate, 0.0) * dt, rem))
        finish = jnp.where(ends, t_next, finish)
        return t_next, rem, done | ends, finish, it + 1

    init = (now0, jnp.where(done0, 0.0, nbytes), done0, finish0, jnp.zeros((), jnp.int32))
    *_, finish, _ = lax.while_loop(cond, body, init)
    return finish


def max_min_progress(links: Int[AnyArray, "flow K"], frac: Float[AnyArray, "flow K"], capacity: Float[AnyArray, "link"],
                     nbytes: Float[AnyArray, "flow"], latency: Float[AnyArray, "flow"], sender: Int[AnyArray, "flow"],
                     receiver: Int[AnyArray, "flow"], step: Int[AnyArray, "flow"], rendezvous: Bool[AnyArray, "flow"],
                     n_ranks: int, n_steps: int, flow_weight: Float[AnyArray, "flow"] | None = None,
                     matched: Bool[AnyArray, "flow"] | None = None, job: Int[AnyArray, "flow"] | None = None
                     ) -> tuple[Float[Array, "flow"], Float[Array, "flow"]]:
    """``(start, finish)`` of every message of a phased exchange whose ranks progress on their own, as MPI ranks do
    (each rank enters its step ``k`` when its own messages of the earlier steps are done, not when every rank's
    are), under max-min sharing (:func:`max_min_finish`'s model, flow-fair, ``flow_weight`` as there).

    Message ``f`` goes from rank ``sender[f]`` to ``receiver[f]`` in step ``step[f]`` (``0 .. n_steps - 1``;
    padding: 0 bytes). A rank is *done with steps before k* when every message it receives in them has arrived
    and every ``rendezvous`` message it sends in them has arrived (an eager send is done once posted: its rank
    goes on). Message ``f`` is posted when its sender is done with the steps before ``step[f]`` (a rendezvous
    message also waits for its receiver to be done with them: the receive is posted), then it uses no bandwidth
    for ``latency[f]`` seconds, then it shares the links as every flow does. ``start`` is its posting time;
    ``finish`` the arrival of its last byte. Messages posted at one time by a rank share its links at once (an
    eager sender does not wait for its earlier sends). ``matched`` (optional): messages that, eager or not, leave
    only when their receive is posted too (SimGrid's SMPI sends a detached small message so: its sender goes on,
    the bytes wait for the receive). ``job`` (optional, any integer job id per flow): job-fair weights, a flow's
    weight 1 / its job's active flows (times ``flow_weight``), as :func:`max_min_finish`'s ``"job"`` mode; several
    jobs whose phases follow one another within each job are ranks of their own (``sender = receiver = job``: a
    job's phase k + 1 is posted when its last phase-k message has arrived). With ``n_steps`` 1 every message is
    posted at 0: :func:`max_min_finish` with ``start = latency``. At most ``3 F + 1`` events (``lax.while_loop``).
    """
    return progress_active(links, frac, capacity, nbytes, latency, sender, receiver, step, rendezvous, n_ranks,
                           n_steps, flow_weight, matched, job)[:2]


def progress_active(links, frac, capacity, nbytes, latency, sender, receiver, step, rendezvous, n_ranks: int,
                    n_steps: int, flow_weight=None, matched=None, job=None, active_size: int | None = None):
    """:func:`max_min_progress` with each event's rates computed on the messages active then, gathered into
    ``active_size`` rows (``None``: every message's row): ``(post, finish, over)``; ``over``: some event had more
    active messages than that, and the times are not to be used (run again with more rows). The gathered rows keep
    the messages' order, and a message that is not active adds nothing to a link's sums (its weight is 0), so the
    rates, and the times, are those of every row, bit for bit; an event costs its active messages, not all (a
    rank-progressed collective of 64 ranks has about 4,000 messages, a few hundred active at once)."""
    links, frac = jnp.asarray(links), jnp.asarray(frac)
    nbytes = jnp.asarray(nbytes)
    dt_ = nbytes.dtype
    latency = jnp.asarray(latency, dt_)
    capacity = jnp.asarray(capacity, dt_)
    sender, receiver = jnp.asarray(sender, jnp.int32), jnp.asarray(receiver, jnp.int32)
    step, rendezvous = jnp.asarray(step, jnp.int32), jnp.asarray(rendezvous, bool)
    waits = rendezvous if matched is None else rendezvous | jnp.asarray(matched, bool)
    F = nbytes.shape[0]
    R, S = int(n_ranks), int(n_steps)
    on, idx, fr = _entries(links, frac)
    fw = jnp.ones(F, dt_) if flow_weight is None else jnp.asarray(flow_weight, dt_)
    real = nbytes > 0
    if job is not None:  # any integer ids, numbered 0 .. (a clip to F - 1 merged the jobs of ids >= F)
        jid = jnp.unique(jnp.asarray(job), size=F, return_inverse=True, fill_value=0)[1]
        jid = jid.reshape(F).astype(jnp.int32)
    # what each message obliges: its receiver always, its sender if rendezvous; (rank, step) slots
    recv_slot = receiver * S + step
    send_slot = sender * S + step
    inf = jnp.array(jnp.inf, dt_)

    def done_before(finish):
        """``[rank, step]``: when the rank is done with every step before ``step`` (inf: not yet)."""
        f = jnp.where(real, finish, -inf)
        by = jnp.full(R * S, -inf, dt_).at[recv_slot].max(f)
        by = by.at[send_slot].max(jnp.where(rendezvous, f, -inf))
        by = by.reshape(R, S)
        upto = lax.cummax(by, axis=1)  # done with steps 0 .. k (inf while any is pending)
        return jnp.concatenate([jnp.full((R, 1), -inf, dt_), upto[:, :-1]], axis=1)  # steps before k

    def posted(finish):
        d = done_before(finish)
        t = jnp.maximum(d[sender, step], jnp.where(waits, d[receiver, step], -inf))
        return jnp.maximum(t, 0.0)

    finish0 = jnp.where(real, inf, 0.0)
    post0 = posted(finish0)

    def cond(s):
        _, _, done, _, _, it, over = s
        return jnp.any(~done) & (it <= 3 * F) & ~over

    def body(s):
        now, rem, done, finish, post, it, over = s
        begin = post + latency
        started = begin <= now
        active = started & ~done
        if job is None:
            weight = fw
        else:
            count = segment_add(active.astype(dt_), jid, F)
            weight = fw * jnp.where(active, 1.0 / jnp.maximum(count[jid], 1.0), 1.0)
        rate, more = _rates_of(on, idx, fr, capacity, active, weight, active_size)
        dt_fin = jnp.where(active & (rate > 0), rem / jnp.where(rate > 0, rate, 1.0), inf)
        t_begin = jnp.min(jnp.where(~started & ~done, begin, inf))
        dt_first = jnp.min(dt_fin)
        by_begin = t_begin - now <= dt_first
        dt = jnp.where(by_begin, t_begin - now, dt_first)
        t_next = jnp.where(by_begin, t_begin, now + dt)
        ends = active & (dt_fin <= dt * (1.0 + REL_TIE))
        # a message that crosses no link arrives as soon as its latency is paid
        ends = ends | (active & ~jnp.isfinite(dt_fin) & (rate == jnp.inf))
        rem = jnp.where(ends, 0.0, jnp.where(active, rem - jnp.where(active & jnp.isfinite(rate), rate, 0.0) * dt,
                                             rem))
        finish = jnp.where(ends, t_next, finish)
        done = done | ends
        return t_next, rem, done, finish, posted(finish), it + 1, over | more

    begin0 = post0 + latency
    now0 = jnp.min(jnp.where(real, begin0, inf))
    init = (jnp.where(jnp.isfinite(now0), now0, 0.0), jnp.where(real, nbytes, 0.0), ~real, finish0, post0,
            jnp.zeros((), jnp.int32), jnp.zeros((), bool))
    *_, finish, post, _, over = lax.while_loop(cond, body, init)
    return post, finish, over


# -- host side: the incidence of every flow, from the kernel itself --------------------------------------------------

INCIDENCE_CHUNK_BYTES = 64 << 20
"""Working set of one chunk of :func:`flow_incidence` (``8 x links x flows`` bytes a chunk, times its temporaries)."""

INCIDENCE_TEMPORARIES = 4
"""Link-sized float arrays one flow of a chunk holds at once (its loads and the routing's temporaries): the chunk's
size. XLA's buffers of a chunk hold about 5 (6^3 torus, 384 flows: 25.9 MB, 4.9 x 8 x links x flows), so the
memory checks count :data:`INCIDENCE_CHECKED` of them."""

INCIDENCE_CHECKED = INCIDENCE_TEMPORARIES + 2
"""Link-sized float arrays a flow of a chunk is checked for (its temporaries and XLA's, measured: 4.9)."""


@functools.lru_cache(maxsize=16)
def _column_fn(op):
    """The jitted Jacobian columns of one routing operator: ``fn(net, task_node, src, dst) -> Float[flow, link]``."""
    from .kernel import PointInputs, point_link_loads

    def one(net, task_node, s, d):
        # point_link_loads is linear in the bytes: its Jacobian column for one flow is its value for that flow
        # alone with 1 byte (jax.jacfwd itself does not go through the kernels' custom_vmap scatter)
        pt = PointInputs(task_node, s[None], d[None], jnp.ones(1, jnp.float64))
        return point_link_loads(net, pt, apply_routing=op.apply)

    return jax.jit(jax.vmap(one, in_axes=(None, None, 0, 0)))


def _operator(topology, routing, task_node, src, dst):
    """A :class:`~evaluator.routing.RoutingOperator` from an operator, a spec or a kind's name (a path set bound
    to the router pairs of these flows)."""
    from ._batch.checks import as_routing
    from .routing import RoutingOperator, build_routing, require_linear

    if isinstance(routing, RoutingOperator):
        require_linear(routing.routing, "The flow-level incidence (each flow routed alone)")
        return routing
    spec = as_routing(routing, "routing_operator")
    require_linear(spec, "The flow-level incidence (each flow routed alone)")
    if spec.needs_pairs:
        R = int(topology.n_routers)
        nr = np.asarray(topology.node_router)
        sr, dr = nr[task_node[src]], nr[task_node[dst]]
        keep = sr != dr
        keys = (sr[keep].astype(np.int64) * R + dr[keep])
        spec = spec.bind_pairs([(keys, np.ones(keys.size))], R)[0][0]
    return build_routing(topology, spec)


def _int_ids(field: str, a, n: int, what: str) -> np.ndarray:
    """``a`` as int64 ids, refused (naming ``field``, the first bad value and what is allowed) unless every one is
    an integer in ``[0, n)``: the device gathers clip an id past the end to the last one (a flow to task 20 of 15
    was routed to task 14) and drop a link past the end (a node 17 of 15 lost its ejection link)."""
    return int_array(field, a, f"integer {what} in [0, {n})", 0, n)


def _check_ids(n_nodes: int, task_node, src, dst):
    """``(task_node, src, dst)`` of :func:`flow_incidence`, checked: nodes of the network, tasks of ``task_node``,
    as many destinations as sources."""
    task_node = _int_ids("flow_incidence.task_node", np.reshape(task_node, -1), n_nodes, "node ids")
    src = _int_ids("flow_incidence.src", np.reshape(src, -1), task_node.size, "task ids")
    dst = _int_ids("flow_incidence.dst", np.reshape(dst, -1), task_node.size, "task ids")
    if src.shape != dst.shape:
        raise ConfigError("flow_incidence.dst", f"{dst.size} flows", f"as many flows as src ({src.size})")
    return task_node, src, dst


def flow_incidence(topology, routing_operator, task_node: Int[np.ndarray, "task"], src: Int[np.ndarray, "flow"],
                   dst: Int[np.ndarray, "flow"], *, max_entries: int | None = None,
                   chunk: int | None = None) -> tuple[Int[np.ndarray, "flow K"], Float[np.ndarray, "flow K"]]:
    """Every flow's links and the fraction of its bytes on each: ``(links, frac)`` (host arrays).

    Links index ``topology.capacity`` in full (router links, then the
    injection link of node ``n`` at ``n_router_links + n``, then its ejection
    link at ``n_router_links + n_nodes + n``, as
    :func:`evaluator.kernel.point_link_loads` orders them). Built from the
    kernel for every routing: ``point_link_loads`` is linear in the flows'
    bytes, so its Jacobian column of flow ``f`` (the loads of ``f`` alone
    with 1 byte, computed ``chunk`` flows at a time, vmapped) holds ``f``'s
    fractions; the entries above ``1e-12`` are kept, sorted by link.
    ``K`` is the largest count over the flows; shorter rows are padded with
    ``-1`` / ``0``. A flow between tasks on one node has no entry.

    ``routing_operator``: a :class:`~evaluator.routing.RoutingOperator`, a
    :class:`~evaluator.routing.Routing` or a kind's name (a path-set routing
    is bound to these flows' router pairs). ``max_entries``: the most
    entries ``F x K`` the result may hold (default: what fits in memory).
    Task ids outside ``task_node`` and node ids outside the network are
    refused (:class:`~evaluator.errors.ConfigError`).
    Refuses (:class:`~evaluator.errors.ResourceError`, naming the sizes)
    before allocating when one chunk (``links x chunk`` floats) or the result
    would not fit.
    """
    from .kernel import NetworkArrays

    task_node, src, dst = _check_ids(int(topology.n_nodes), task_node, src, dst)
    F, L = int(src.size), int(topology.n_links)
    per_flow = 8 * L * INCIDENCE_TEMPORARIES
    checked = 8 * L * INCIDENCE_CHECKED  # (XLA holds about 4.9 link-sized floats a flow: checked for 6)
    check_memory("flow_incidence", f"{L} links x 1 flow", checked,
                 f"the Jacobian of {L} links for one flow at a time ({L} links x {INCIDENCE_CHECKED} temporaries)")
    if chunk is None:
        budget = min(INCIDENCE_CHUNK_BYTES, int(0.25 * available_memory()))
        chunk = max(1, min(budget // per_flow, 1 << 12))
    from ._batch.blocks import bucket_size

    chunk = int(max(1, min(int(chunk), bucket_size(F))))  # one compilation per bucket of small flow lists
    check_memory("flow_incidence.chunk", chunk, checked * chunk,
                 f"one chunk of the Jacobian ({L} links x {chunk} flows x {INCIDENCE_CHECKED} temporaries)")
    op = _operator(topology, routing_operator, task_node, src, dst)
    net = jax.device_put(NetworkArrays(
        node_router=np.asarray(topology.node_router).astype(np.int32),
        capacity=np.asarray(topology.capacity, np.float64),
        link_class=np.asarray(topology.link_class).astype(np.int32),
        class_order=np.argsort(np.asarray(topology.link_class), kind="stable").astype(np.int32),
        routing=op.device_tables()))
    fn = _column_fn(op)
    tn = jax.device_put(task_node.astype(np.int32))
    rows, cols, vals = [], [], []
    for lo in range(0, F, chunk):
        hi = min(F, lo + chunk)
        s = np.zeros(chunk, np.int32)
        d = np.zeros(chunk, np.int32)
        s[: hi - lo], d[: hi - lo] = src[lo:hi], dst[lo:hi]
        jac = np.asarray(fn(net, tn, s, d))[: hi - lo]  # [flow, link]: one Jacobian column per flow
        r, c = np.nonzero(jac > 1e-12)
        rows.append(r + lo)
        cols.append(c)
        vals.append(jac[r, c])
    rows = np.concatenate(rows) if rows else np.zeros(0, np.int64)
    cols = np.concatenate(cols) if cols else np.zeros(0, np.int64)
    vals = np.concatenate(vals) if vals else np.zeros(0)
    count = np.bincount(rows, minlength=F)
    K = int(count.max()) if F else 0
    need = 12 * F * K
    if max_entries is not None and F * K > int(max_entries):
        raise ResourceError("flow_incidence.max_entries", int(max_entries),
                            f"at least {F} flows x {K} entries = {F * K} entries ({fmt_size(need)})")
    check_memory("flow_incidence", f"{F} flows x {K} entries", need, f"the incidence ({F} flows x {K} entries)")
    links = np.full((F, K), -1, np.int32)
    frac = np.zeros((F, K))
    # (np.nonzero lists a chunk's entries row by row, links ascending, and the chunks come in order)
    first = np.concatenate([[0], np.cumsum(count)[:-1]]).astype(np.int64)
    pos = np.arange(rows.size) - first[rows]
    links[rows, pos] = cols
    frac[rows, pos] = vals
    return links, frac


def incidence_loads(links: Int[np.ndarray, "flow K"], frac: Float[np.ndarray, "flow K"],
                    nbytes: Float[np.ndarray, "flow"], n_links: int) -> Float[np.ndarray, "link"]:
    """The link loads (bytes) the incidence implies for ``nbytes``: ``sum_f nbytes[f] * frac[f, k]`` on
    ``links[f, k]`` (host side; the bandwidth bound is ``(loads / capacity).max()``)."""
    links = np.asarray(links)
    on = links >= 0
    w = (np.asarray(nbytes, np.float64)[:, None] * np.asarray(frac))[on]
    return np.bincount(links[on], weights=w, minlength=int(n_links))
