"""The batched entry of the flow-level max-min simulation (:mod:`evaluator.flowlevel`).

:func:`max_min_batch` pads the points, the flows, the entries per flow and
the links to shape buckets (:func:`evaluator._batch.blocks.bucket_size`),
applies ``vmap`` over the points to the one-point kernel
(:func:`evaluator.flowlevel.max_min_finish`) ``step`` points at a time in a
loop over the steps (``lax.map``), and ``jit`` once: a second batch of the
same buckets compiles nothing (:func:`cache_size` counts the programs).

The step: the kernel's loops (events, then filling rounds) run in lockstep
over the points of a step, each as long as its slowest point, so on CPU
one point a step is fastest (a 4x4x4 torus, 256 flows of random sizes and
starts, 32 points: 0.26 s a point with steps of 1 or 2, 0.38 s with 4,
0.66-0.8 s with 8-32); an accelerator takes the whole batch in one step.
"""

from __future__ import annotations

import jax
import numpy as np

from .._types import Float, Int
from ..errors import ConfigError, available_memory, int_array
from ..flowlevel import WEIGHT_MODES, max_min_finish, progress_active
from .blocks import bucket_size

__all__ = ["MAX_MIN_MESSAGES", "check_messages", "check_sharing_size", "exchange_flows", "max_min_batch", "progress_batch",
           "cache_size", "phase_max_min", "SHARINGS", "FAIRNESS", "PROGRESSIONS", "flowlevel_need",
           "flowlevel_working_set", "check_flowlevel_memory"]

PROGRESSIONS = ("phase", "rank")
"""How the phases of a phased exchange follow one another under ``max_min`` sharing: ``phase`` (every phase starts
when the last message of the one before has arrived: a global step) or ``rank`` (every rank goes on with its own
messages as MPI ranks do: :func:`evaluator.flowlevel.max_min_progress`)."""

MAX_MIN_MESSAGES = 100_000
"""The most messages one flow-level simulation takes (a phase; a point's phases with ``progression="rank"``; every
job's together): its events (up to 2-3 per message) each refill every message, so its time grows as the square of
the messages (4,032 messages: 26 ms a point; 100,000: minutes)."""


def check_messages(m: int, name: str, what: str) -> None:
    """Refuse a flow-level simulation of ``m`` messages above :data:`MAX_MIN_MESSAGES`, naming ``sharing``."""
    if m > MAX_MIN_MESSAGES:
        from ..errors import ResourceError

        raise ResourceError("sharing", "max_min", f"at most {MAX_MIN_MESSAGES:,} messages in {what} of a flow-level "
                            f"simulation (its time grows as the square of the messages); {name!r} has {m:,}",
                            "Use sharing=bound: completion_time and, with a latency model, time_with_latency.")


def check_sharing_size(traffics, progression: str) -> None:
    """Refuse, before any work, points whose flow-level simulation would exceed :data:`MAX_MIN_MESSAGES`."""
    for t in traffics:
        sizes = [x.n_flows if x.kernel_input == "flows" else int(x.n_tasks) ** 2 for x in t.phases]
        m = sum(sizes) if progression == "rank" else max(sizes)
        check_messages(m, t.name, "a point's phases (progression=rank)" if progression == "rank" else "one phase")


SHARINGS = ("bound", "max_min")
"""How the flows of an exchange share the links: ``bound`` (the contention bound: every flow done at
``max_l load_l / capacity_l``) or ``max_min`` (flow-level max-min fair sharing, progressive filling recomputed at
every start and finish: :mod:`evaluator.flowlevel`)."""

SHARING_MODEL = {
    "phase": "time_max_min: per phase, flow-level max-min fair sharing (progressive filling, recomputed at every "
             "message start and finish), each message starting after its latency (time_with_latency's model; none "
             "without a latency model); the phase ends when its last message ends; phases summed",
    "rank": "time_max_min: flow-level max-min fair sharing (progressive filling, recomputed at every message start "
            "and finish) of every message of every phase, each rank posting its phase k messages when its own "
            "messages of the phases before are done (received; sent, for a rendezvous message above the eager "
            "threshold), each message then waiting its latency; the last arrival",
}
"""What ``time_max_min`` is, by progression, stored in a dataset's ``sharing_model`` attribute."""

FAIRNESS = ("flow", "job", "rtt")
"""The weights of ``max_min`` sharing: every flow alike (``flow``), every job alike on a link (``job``: a flow's
weight is 1 / its job's flows active then), or a flow weighed by 1 / its latency (``rtt``: TCP's bias against
long round trips, as SimGrid's CM02 model shares)."""


def _points(weight_mode: str, shared_capacity: bool, step: int, links, frac, capacity, nbytes, start, job,
            flow_weight):
    """``step`` points at a time (``vmap`` of the one-point kernel), in a loop over the steps (``lax.map``)."""
    def one(xs):
        lk, fr, c, n, s, j, w = xs
        return max_min_finish(lk, fr, capacity if shared_capacity else c, n, s, weight_mode, job=j, flow_weight=w)

    return jax.lax.map(one, (links, frac, None if shared_capacity else capacity, nbytes, start, job, flow_weight),
                       batch_size=step)


STEP_CPU = 1
"""CPU: points per vmapped step (measured in the module docstring)."""

_batched = jax.jit(_points, static_argnums=(0, 1, 2))


def _progress_points(n_ranks: int, n_steps: int, step: int, size: int | None, links, frac, capacity, nbytes,
                     latency, sender, receiver, phase, rendezvous, flow_weight, matched, job):
    def one(xs):
        lk, fr, n, lam, s, r, k, rv, w, mt, jb = xs
        return progress_active(lk, fr, capacity, n, lam, s, r, k, rv, n_ranks, n_steps, flow_weight=w, matched=mt,
                               job=jb, active_size=size)

    return jax.lax.map(one, (links, frac, nbytes, latency, sender, receiver, phase, rendezvous, flow_weight,
                             matched, job), batch_size=step)


_progress = jax.jit(_progress_points, static_argnums=(0, 1, 2, 3))

ACTIVE_ROWS = 64
"""Rows a rank-progressed point's events first compute their rates on (:func:`evaluator.flowlevel.progress_active`:
the messages active at the event, gathered); a batch where some event had more active messages is run again with
four times as many, up to every message (a run stops at its first event over, so a short start costs little).
The broadcast by scatter and ring allgather of 8 kB on 64 ranks of a ring (``sharing=max_min progression=rank``,
tests/test_claims_latency.py), an ``evaluate`` run again in one process: 10.7 s on every message's row, 1.07 s on
64 rows, 1.37 s on 128, 1.77 s on 256, 2.62 s on 512, the same times bit for bit (2026-12-01)."""


def cache_size() -> int:
    """Programs compiled by :func:`max_min_batch` and :func:`progress_batch` in this process (one per shape
    bucket and variant)."""
    return _batched._cache_size() + _progress._cache_size()


def progress_batch(links, frac, capacity, nbytes, latency, sender, receiver, phase, rendezvous, n_ranks: int,
                   n_steps: int, flow_weight=None, step: int | None = None, matched=None, job=None):
    """``(post, finish)`` ``[point, flow]`` of :func:`evaluator.flowlevel.max_min_progress`, vmapped over points
    (``[point, ...]`` arrays, one shared ``capacity [link]``), padded to buckets (ranks and steps too) and jitted
    once per bucket. Refused (:class:`~evaluator.errors.ConfigError`, naming the argument, the value and what is
    allowed) where an input would be misread: a NaN or negative size, latency or capacity, a link id below -1 or
    past the capacity's links, a sender or receiver outside ``[0, n_ranks)``, a phase outside ``[0, n_steps)``
    (they indexed another rank's or step's slot), ids that are not integers. ``job``: any integer ids."""
    shape = np.shape(links)
    if len(shape) != 3 or any(np.shape(a) != shape[:2] for a in (nbytes, latency, sender, receiver, phase,
                                                                     rendezvous)) or np.shape(frac) != shape \
            or (matched is not None and np.shape(matched) != shape[:2]):
        raise ConfigError("links", f"shape {shape}", "links and frac [point, flow, K], the other per-message "
                          "arrays [point, flow] (nbytes, latency, sender, receiver, phase, rendezvous, matched)")
    for name, v in (("n_ranks", n_ranks), ("n_steps", n_steps)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise ConfigError(name, v, "an integer >= 1")
    step = _check_step(step)
    capacity = np.asarray(capacity, np.float64)
    if capacity.ndim != 1:
        raise ConfigError("capacity", f"shape {capacity.shape}", "[link], shared by every point")
    _refuse_where("capacity", capacity, ~(capacity >= 0), "bytes/s >= 0 on every link")
    L = capacity.shape[0]
    links, frac, nbytes, latency, w, job = _check_flows(links, frac, L, nbytes, "latency", latency, flow_weight,
                                                        job)
    ids = []
    for name, a, n in (("sender", sender, n_ranks), ("receiver", receiver, n_ranks), ("phase", phase, n_steps)):
        a = int_array(name, a, f"integers in [0, {n})", 0, n)
        ids.append(a.astype(np.int32))
    P, F, K = shape
    Pb, Fb, Kb = bucket_size(P, 1), bucket_size(F), bucket_size(K, 1)
    Rb, Sb = bucket_size(n_ranks, 1), bucket_size(n_steps, 1)
    Lb = bucket_size(L)
    w = np.ones((P, F)) if w is None else w
    args = [_pad(links.astype(np.int32), (Pb, Fb, Kb), -1), _pad(frac, (Pb, Fb, Kb), 0.0),
            _pad(capacity, (Lb,), 1.0), _pad(nbytes, (Pb, Fb), 0.0), _pad(latency, (Pb, Fb), 0.0),
            *(_pad(a, (Pb, Fb), 0) for a in ids), _pad(np.asarray(rendezvous, bool), (Pb, Fb), False),
            _pad(w, (Pb, Fb), 1.0),
            _pad(np.zeros((P, F), bool) if matched is None else np.asarray(matched, bool), (Pb, Fb), False),
            None if job is None else _pad(job, (Pb, Fb), 0)]
    size = ACTIVE_ROWS
    while True:  # the active messages' rows, grown where an event had more (every row: never over)
        rows = None if size >= Fb else size
        post, fin, over = _progress(Rb, Sb, _step(Pb) if step is None else step, rows, *args)
        if rows is None or not np.asarray(over).any():
            return np.asarray(post)[:P, :F], np.asarray(fin)[:P, :F]
        size *= 4


def _step(n_points: int) -> int:
    """Points evaluated at once (vmapped) in the loop over a batch: every point on an accelerator; on CPU
    :data:`STEP_CPU`."""
    return n_points if jax.default_backend() != "cpu" else min(n_points, STEP_CPU)


def _pad(a: np.ndarray, shape: tuple[int, ...], fill) -> np.ndarray:
    out = np.full(shape, fill, dtype=a.dtype)
    out[tuple(slice(0, n) for n in a.shape)] = a
    return out


def _refuse_where(field: str, a: np.ndarray, bad: np.ndarray, allowed: str) -> None:
    """Refuse ``a`` where ``bad`` holds: the first such entry's value and index, and what is allowed."""
    if np.any(bad):
        at = tuple(int(i) for i in np.argwhere(bad)[0])
        raise ConfigError(field, a[at].item(), f"{allowed} (entry {list(at)} is not)")


def _check_flows(links, frac, n_links: int, nbytes, when: str, t, flow_weight, job):
    """The per-flow inputs of :func:`max_min_batch` and :func:`progress_batch`, refused where they would be
    misread (a NaN or negative size read as 0 bytes, a link below -1 or a NaN fraction read as padding, a link
    id 0.7 read as link 0, a job id 1.5 read as 1): ``(links, frac, nbytes, t, flow_weight, job)`` as arrays.
    ``when``: ``"start"`` (any finite time) or ``"latency"`` (finite, >= 0)."""
    links = int_array("links", links, f"integer link ids in [-1, {n_links}) (-1: padding)", -1, n_links)
    frac = np.asarray(frac, np.float64)
    _refuse_where("frac", frac, ~(np.isfinite(frac) & (frac >= 0)), "finite fractions >= 0")
    nbytes = np.asarray(nbytes, np.float64)
    _refuse_where("nbytes", nbytes, ~(np.isfinite(nbytes) & (nbytes >= 0)), "finite bytes >= 0 (0: padding)")
    t = np.asarray(t, np.float64)
    ok = np.isfinite(t) & (t >= 0) if when == "latency" else np.isfinite(t)
    _refuse_where(when, t, ~ok, "finite seconds >= 0" if when == "latency" else "finite seconds")
    if flow_weight is not None:
        flow_weight = np.asarray(flow_weight, np.float64)
        if flow_weight.shape != nbytes.shape:
            raise ConfigError("flow_weight", f"shape {flow_weight.shape}", f"[point, flow] = {nbytes.shape}")
        bad = ~np.isfinite(flow_weight) | ((nbytes > 0) & ~(flow_weight > 0))
        _refuse_where("flow_weight", flow_weight, bad, "finite weights, > 0 for every flow with bytes")
    if job is not None:
        if np.shape(job) != nbytes.shape:
            raise ConfigError("job", f"shape {np.shape(job)}", f"[point, flow] = {nbytes.shape}")
        job = int_array("job", job, "an integer job id per flow")
    return links, frac, nbytes, t, flow_weight, job


def _check_step(step) -> int | None:
    """``step`` (points vmapped at once) as an int, refused unless an integer >= 1 (or ``None``)."""
    if step is not None and (isinstance(step, bool) or not isinstance(step, (int, np.integer)) or step < 1):
        raise ConfigError("step", step, "points vmapped at once: an integer >= 1 (None: the default)")
    return None if step is None else int(step)


def max_min_batch(links: Int[np.ndarray, "point flow K"], frac: Float[np.ndarray, "point flow K"],
                  capacity: Float[np.ndarray, "link"] | Float[np.ndarray, "point link"],
                  nbytes: Float[np.ndarray, "point flow"], start: Float[np.ndarray, "point flow"],
                  weight_mode: str = "flow", job: Int[np.ndarray, "point flow"] | None = None,
                  flow_weight: Float[np.ndarray, "point flow"] | None = None, step: int | None = None
                  ) -> Float[np.ndarray, "point flow"]:
    """Finish time (s) of every flow of every point (:func:`evaluator.flowlevel.max_min_finish`, vmapped).

    Arrays are stacked over a leading ``point`` axis; ``capacity`` is shared
    (``[link]``) or per point (``[point, link]``). Points, flows, entries per
    flow and links are padded to their buckets (padding flows: 0 bytes, no
    link; padding links: capacity 1, crossed by nothing; padding points: no
    bytes), so batches of one bucket share one compiled program. ``step``:
    points vmapped at once (default: all on an accelerator, :data:`STEP_CPU`
    on CPU). ``job``
    (``"job"``-fair) and ``flow_weight`` (optional constant weight factors,
    e.g. SimGrid CM02's ``1 / route latency``) are ``[point, flow]``.
    Returns a host array ``[point, flow]``. Refused
    (:class:`~evaluator.errors.ConfigError`, naming the argument, the value
    and what is allowed) where an input would be misread: a NaN, infinite or
    negative size (it was read as 0 bytes), a NaN or infinite start, a link
    id below -1 (read as padding) or not an integer, a NaN, infinite or
    negative fraction, an infinite weight, a job id that is not an integer.
    """
    if weight_mode not in WEIGHT_MODES:
        raise ConfigError("weight_mode", weight_mode, f"one of {', '.join(WEIGHT_MODES)}")
    shapes = [np.shape(a) for a in (links, frac, nbytes, start)]
    if len(shapes[0]) != 3 or shapes[1] != shapes[0] or shapes[2] != shapes[0][:2] or shapes[3] != shapes[2]:
        raise ConfigError("links", "shapes " + ", ".join(map(str, shapes)),
                          "links and frac [point, flow, K], nbytes and start [point, flow]")
    step = _check_step(step)
    capacity = np.asarray(capacity, np.float64)
    P, F, K = shapes[0]
    shared = capacity.ndim == 1
    if capacity.ndim not in (1, 2) or (not shared and capacity.shape[0] != P):
        raise ConfigError("capacity", f"shape {capacity.shape}", f"[link] or [{P}, link]")
    _refuse_where("capacity", capacity, ~(capacity > 0), "bytes/s > 0 on every link")
    L = capacity.shape[-1]
    links, frac, nbytes, start, flow_weight, job = _check_flows(
        links, frac, L, nbytes, "start", start, flow_weight, job if weight_mode == "job" else None)
    links = links.astype(np.int32)
    Pb, Fb, Kb, Lb = bucket_size(P, 1), bucket_size(F), bucket_size(K, 1), bucket_size(L)
    args = [_pad(links, (Pb, Fb, Kb), -1), _pad(frac, (Pb, Fb, Kb), 0.0),
            _pad(capacity, (Lb,) if shared else (Pb, Lb), 1.0),
            _pad(nbytes, (Pb, Fb), 0.0), _pad(start, (Pb, Fb), 0.0)]
    if weight_mode == "job":
        if job is None:
            raise ConfigError("job", None, "an integer job id per flow, [point, flow], with weight_mode = 'job'")
        args.append(_pad(job, (Pb, Fb), 0))
    else:
        args.append(None)
    if flow_weight is not None:
        args.append(_pad(flow_weight, (Pb, Fb), 1.0))
    else:
        args.append(None)
    out = _batched(weight_mode, shared, _step(Pb) if step is None else step, *jax.device_put(args))
    return np.asarray(out)[:P, :F]


def exchange_flows(kern, topology, task_node, x):
    """``(src, dst, bytes, links, frac, latency)`` of one exchange's messages for a flow-level simulation: its
    flows (a dense exchange listed: the message count is checked before, :func:`check_sharing_size`), each one's
    links and fractions from the kernel (:func:`evaluator.flowlevel.flow_incidence`) and its latency
    (:func:`evaluator._batch.latency.flow_latencies`: 0 without a latency model)."""
    from ..flowlevel import flow_incidence
    from .latency import flow_latencies

    x = x if x.kernel_input == "flows" else x.to_flows()
    src, dst, nb = np.asarray(x.src), np.asarray(x.dst), np.asarray(x.nbytes, np.float64)
    links, frac = flow_incidence(topology, kern.operator, task_node, src, dst)
    return src, dst, nb, links, frac, flow_latencies(kern, topology, task_node, src, dst, nb)


def phase_max_min(kern, topology, traffics, placements, fairness: str = "flow", job_of=None,
                  progression: str = "phase") -> dict:
    """Flow-level max-min time of every phase of every point (:mod:`evaluator.flowlevel`): each exchange's flows
    (dense traffic listed as flows, refused where that would not fit), their links and fractions from the kernel
    (:func:`evaluator.flowlevel.flow_incidence`), each flow starting after its message latency
    (:func:`evaluator._batch.latency.flow_latencies`: 0 without a latency model) and sharing by ``fairness``.

    Returns ``phase_time_max_min`` ``[point, phase]`` (s; NaN where a point has no such phase; a phase's time is
    its last flow's finish), ``time_max_min`` ``[point]`` (the sum) and ``message_finish_time``: per point, a
    list of per-phase arrays of its flows' finish times (s from the phase's start, in the exchange's flow order).

    ``progression="rank"``: the phases of a point are one simulation in which every rank goes on as soon as its
    own messages allow (:func:`evaluator.flowlevel.max_min_progress`; a message above the latency model's eager
    threshold is a rendezvous); ``time_max_min`` is then the last arrival, a phase's time the span from its
    first posting to its last arrival (phases overlap), and the finish times count from the exchange's start.

    Memory (:func:`flowlevel_need`): refused before any work (naming ``sharing``) where one point does not fit;
    otherwise the points run in blocks that fit (each point's simulation is its own: the times are those of one
    call, bit for bit), each block's size checked again once its incidence (entries per flow) is known.
    """
    if fairness not in FAIRNESS:
        raise ConfigError("fairness", fairness, f"one of {list(FAIRNESS)}")
    if progression == "rank" and fairness == "job":
        raise ConfigError("fairness", fairness, "flow or rtt with progression=rank",
                          "Job-fair weights are for several jobs' exchanges; use progression=phase.")
    n = len(traffics)
    P = max(t.n_phases for t in traffics)
    check_sharing_size(traffics, progression)
    check_flowlevel_memory(kern, topology, traffics, progression, fairness)
    budget = FLOW_MEMORY_FRACTION * available_memory()
    F = _flows_per_row(traffics, progression)
    out = {"phase_time_max_min": np.full((n, P), np.nan), "time_max_min": np.full(n, np.nan),
           "message_finish_time": [[] for _ in range(n)]}
    block: list = []  # (point, its items)
    for i, (t, pl) in enumerate(zip(traffics, placements)):
        its = _point_items(kern, topology, i, t, pl, fairness, job_of)
        if block:  # the block with this point, while this point's incidence is held besides: else run it first
            K = max(it[2].shape[1] for _, b in block + [(i, its)] for it in b)
            need = flowlevel_need(topology, traffics, progression, fairness, len(block) + 1, K, F)
            if need["total"] > budget:
                _run_block(topology, traffics, block, P, fairness, progression, F, out)
                block = []
        block.append((i, its))
    if block:
        _run_block(topology, traffics, block, P, fairness, progression, F, out)
    if progression == "phase":
        out["time_max_min"] = np.nansum(out["phase_time_max_min"], axis=1)
    return out


def _point_items(kern, topology, i: int, t, pl, fairness: str, job_of) -> list:
    """Point ``i``'s exchanges: ``(point, phase, links, frac, nbytes, latency, weight, job, src, dst)`` each."""
    tn = np.asarray(pl.task_node)
    items = []
    for k, x in enumerate(t.phases):
        src, dst, nb, links, frac, lam = exchange_flows(kern, topology, tn, x)
        weight = None
        if fairness == "rtt":
            if not np.all(lam[nb > 0] > 0):
                raise ConfigError("fairness", "rtt", "a latency model that gives every message a latency > 0 "
                                  "(topology.latency)", "Or use fairness=flow.")
            weight = 1.0 / np.where(lam > 0, lam, 1.0)
        job = None if job_of is None else np.asarray(job_of[i])[src]
        items.append((i, k, links, frac, nb, lam, weight, job, src, dst))
    return items


def _run_block(topology, traffics, block, P: int, fairness: str, progression: str, F: int, out: dict) -> None:
    """Simulate the points of ``block`` (``(point, items)``) with ``F`` flow rows each, checked again now that
    their entries per flow are known, and write their times into ``out``."""
    items = [it for _, b in block for it in b]
    K = max(it[2].shape[1] for it in items)
    need = flowlevel_need(topology, traffics, progression, fairness, len(block), K, F)
    _refuse(need, f"{len(block)} point{'s' if len(block) != 1 else ''}")
    if progression == "rank":
        res = _progress_max_min(topology, traffics, items, len(traffics), P, fairness, F)
        for i, _ in block:
            out["phase_time_max_min"][i] = res["phase_time_max_min"][i]
            out["time_max_min"][i] = res["time_max_min"][i]
            out["message_finish_time"][i] = res["message_finish_time"][i]
        return
    N = len(items)
    L_ = np.full((N, F, K), -1, np.int32)
    R_ = np.zeros((N, F, K))
    B_ = np.zeros((N, F))
    S_ = np.zeros((N, F))
    W_ = np.ones((N, F)) if fairness == "rtt" else None
    J_ = np.zeros((N, F), np.int64) if fairness == "job" else None
    for r, (_, _, lk, fr, nb, lam, w, job, _, _) in enumerate(items):
        f, kk = lk.shape
        L_[r, :f, :kk], R_[r, :f, :kk], B_[r, :f], S_[r, :f] = lk, fr, nb, lam
        if W_ is not None:
            W_[r, :f] = w
        if J_ is not None:
            J_[r, :f] = 0 if job is None else job
    mode = "job" if fairness == "job" else "flow"
    finish = max_min_batch(L_, R_, np.asarray(topology.capacity), B_, S_, mode, job=J_, flow_weight=W_)
    for r, (i, k, _, _, nb, *_) in enumerate(items):
        fin = finish[r, :len(nb)]
        out["phase_time_max_min"][i, k] = float(np.max(np.where(nb > 0, fin, 0.0), initial=0.0))
        out["message_finish_time"][i].append(np.where(nb > 0, fin, np.nan))


# -- memory: what the flow-level pass holds at once, before any of it is allocated -----------------------------------

FLOW_MEMORY_FRACTION = 0.8
"""Share of the available memory (:func:`~evaluator.errors.available_memory`) one block of points may take."""


def _flows_per_row(traffics, progression: str) -> int:
    """Flow rows of one simulated row (a phase; a point's phases with ``progression="rank"``)."""
    sizes = [[x.n_flows if x.kernel_input == "flows" else int(x.n_tasks) ** 2 for x in t.phases] for t in traffics]
    return max(max((sum(z) if progression == "rank" else max(z, default=0)) for z in sizes), 1)


def _entries_bound(op, n_links: int) -> int:
    """Entries per flow of the incidence at least as many as any flow has, known before any flow is routed:
    the routing's longest flow list (``flow_width``) plus its injection and ejection link, where the routing
    lists flows; else 1 (the incidence is counted again with its true width before the flows are stacked)."""
    w = int(getattr(op, "flow_width", 0) or 0)
    return min(n_links, w + 2) if w > 0 else 1


def _sim_trace_bytes(progression: str, fairness: str, rows: int, F: int, K: int, L: int, n_ranks: int,
                     n_steps: int) -> int:
    """Peak bytes of the traced simulation program of ``rows`` rows (:func:`~.memory.jaxpr_peak_bytes`: inputs and
    outputs included), plus its inputs once more (XLA copies a loop's operands: :func:`~.memory.block_peak`)."""
    from .memory import jaxpr_peak_bytes

    key = (progression, fairness, rows, F, K, L, n_ranks, n_steps, jax.default_backend())
    hit = _TRACE_CACHE.get(key)
    if hit is not None:
        return hit
    sd = lambda shape, dt: jax.ShapeDtypeStruct(shape, np.dtype(dt))  # noqa: E731
    pf, pfk = (rows, F), (rows, F, K)
    step = _step(rows)
    if progression == "rank":
        args = (sd(pfk, np.int32), sd(pfk, float), sd((L,), float), sd(pf, float), sd(pf, float),
                *(sd(pf, np.int32) for _ in range(3)), sd(pf, bool), sd(pf, float), sd(pf, bool), None)
        fn = lambda *a: _progress_points(n_ranks, n_steps, step, None, *a)  # noqa: E731
    else:
        w = sd(pf, float) if fairness == "rtt" else None
        j = sd(pf, np.int64) if fairness == "job" else None
        args = (sd(pfk, np.int32), sd(pfk, float), sd((L,), float), sd(pf, float), sd(pf, float), j, w)
        fn = lambda *a: _points("job" if fairness == "job" else "flow", True, step, *a)  # noqa: E731
    # XLA keeps a little more than the trace shows (the loop's carried state copied once): 6^3 torus, 8 rows of 384
    # flows x 16 entries, 3.03 MB of XLA buffers against 3.00 MB traced with the inputs counted twice
    peak = int(1.25 * jaxpr_peak_bytes(jax.make_jaxpr(fn)(*args)))
    peak += sum(int(np.prod(a.shape)) * a.dtype.itemsize for a in args if a is not None)
    _TRACE_CACHE[key] = peak
    if len(_TRACE_CACHE) > 64:
        _TRACE_CACHE.pop(next(iter(_TRACE_CACHE)))
    return peak


_TRACE_CACHE: dict = {}


def flowlevel_need(topology, traffics, progression: str, fairness: str, points: int, K: int,
                   F: int | None = None) -> dict[str, int]:
    """Bytes the flow-level pass (:func:`phase_max_min`) holds at once for a block of ``points`` points whose
    flows have at most ``K`` incidence entries each, by what they hold:

    * ``incidence``: one chunk of :func:`evaluator.flowlevel.flow_incidence` (its Jacobian, ``links x chunk``
      floats times its temporaries, and the mask of its entries), and one exchange's latency pass
      (``flows x links`` floats twice: the transpose of the loads);
    * ``host``: per simulated row (a phase; a point with ``progression="rank"``) of ``flows`` rows of ``K``
      entries: every exchange's incidence and per-flow arrays as built, the stacked rows, their padded copy;
      counted for one point more than the block (the next point's incidence is built while the block is held);
    * ``simulation``: the traced program of the block's call (its inputs, outputs and loop state) plus its inputs
      once more (XLA's copy into the loop).

    ``total`` is their sum; ``rows``, ``flows``, ``entries``: the block's shapes."""
    from ..flowlevel import INCIDENCE_CHUNK_BYTES, INCIDENCE_TEMPORARIES

    F = _flows_per_row(traffics, progression) if F is None else F
    L = int(topology.n_links)
    phases = max(t.n_phases for t in traffics)
    rows = points * (1 if progression == "rank" else phases)
    extra = 1 if progression == "rank" else phases  # the next point's rows, built while the block is held
    Pb, Fb, Kb, Lb = bucket_size(rows, 1), bucket_size(F), bucket_size(K, 1), bucket_size(L)
    per_flow = 8 * L * INCIDENCE_TEMPORARIES
    chunk = max(1, min(min(INCIDENCE_CHUNK_BYTES, int(0.25 * available_memory())) // per_flow, 1 << 12,
                       bucket_size(F)))
    # XLA's buffers of one chunk are about 5 link-sized floats a flow, not the 4 its chunk is sized by (6^3 torus,
    # 384 flows: 25.9 MB, 4.9 x 8 x links x flows): 2 more counted, and the mask of its entries
    incidence = chunk * (per_flow + 2 * 8 * L + L)
    if topology.latency is not None:
        incidence += 2 * 8 * bucket_size(F) * L
    flat = 12 * F * K + 8 * 8 * F  # links and fractions, per-flow arrays (bytes, latency, weight, job, ids)
    host = (rows + extra) * 2 * flat + Pb * (12 * Fb * Kb + 40 * Fb)
    n_ranks = max(int(t.n_tasks) for t in traffics)
    sim = _sim_trace_bytes(progression, fairness, Pb, Fb, Kb, Lb, bucket_size(n_ranks, 1), bucket_size(phases, 1))
    return {"incidence": incidence, "host": host, "simulation": sim, "total": incidence + host + sim,
            "rows": rows, "flows": F, "entries": K}


def _refuse(need: dict, what: str) -> None:
    """Refuse (naming ``sharing``) a flow-level block whose need exceeds :data:`FLOW_MEMORY_FRACTION` of memory."""
    from ..errors import check_memory, fmt_size

    check_memory("sharing", "max_min", need["total"],
                 f"the flow-level simulation of {what} ({need['rows']} rows of {need['flows']:,} flows x "
                 f"{need['entries']} links: the incidence {fmt_size(need['incidence'])}, host arrays "
                 f"{fmt_size(need['host'])}, the simulation {fmt_size(need['simulation'])})",
                 "Use sharing=bound, or traffic with fewer flows per phase (a point's phases run as one simulation "
                 "with progression=rank: progression=phase simulates one phase at a time) or a smaller network.",
                 fraction=FLOW_MEMORY_FRACTION)


def flowlevel_working_set(kern, topology, traffics, progression: str = "phase", fairness: str = "flow",
                          points: int | None = None) -> dict[str, int]:
    """:func:`flowlevel_need` of ``points`` points (default: all of ``traffics``) at the entries per flow known
    before any flow is routed (the routing's longest flow list plus injection and ejection; 1 where the routing
    does not list flows)."""
    K = _entries_bound(kern.operator, int(topology.n_links))
    return flowlevel_need(topology, traffics, progression, fairness, len(traffics) if points is None else points, K)


def check_flowlevel_memory(kern, topology, traffics, progression: str = "phase", fairness: str = "flow") -> None:
    """Refuse, before any flow is routed, a flow-level pass of which one point does not fit (naming ``sharing``);
    more points run in blocks (:func:`phase_max_min`)."""
    _refuse(flowlevel_working_set(kern, topology, traffics, progression, fairness, points=1), "one point")


def _progress_max_min(topology, traffics, items, n: int, P: int, fairness: str, F: int | None = None) -> dict:
    """:func:`phase_max_min` with ``progression="rank"``: each point's phases as one simulation (``F``: flow rows
    a point, at least its messages; default: the most of these points)."""
    lat = topology.latency
    eager = None if lat is None else lat.eager_threshold
    by_point: dict[int, list] = {}
    for it in items:
        by_point.setdefault(it[0], []).append(it)
    pts = sorted(by_point)
    F = max(sum(len(it[4]) for it in by_point[i]) for i in pts) if F is None else F
    K = max(it[2].shape[1] for it in items)
    N = len(pts)
    A = {k: np.zeros((N, F), t) for k, t in (("nb", float), ("lam", float), ("s", np.int32), ("r", np.int32),
                                            ("k", np.int32), ("rv", bool), ("w", float))}
    A["w"][:] = 1.0
    LK = np.full((N, F, K), -1, np.int32)
    FR = np.zeros((N, F, K))
    n_ranks = max(t.n_tasks for t in traffics)
    for row, i in enumerate(pts):
        o = 0
        for _, k, lk, fr, nb, lam, w, _, src, dst in by_point[i]:
            m = len(nb)
            LK[row, o:o + m, :lk.shape[1]], FR[row, o:o + m, :lk.shape[1]] = lk, fr
            A["nb"][row, o:o + m], A["lam"][row, o:o + m] = nb, lam
            A["s"][row, o:o + m], A["r"][row, o:o + m], A["k"][row, o:o + m] = src, dst, k
            A["rv"][row, o:o + m] = False if eager is None else nb > eager
            if w is not None:
                A["w"][row, o:o + m] = w
            o += m
    matched = np.ones_like(A["rv"]) if (lat is not None and not lat.eager_buffered) else None
    post, fin = progress_batch(LK, FR, np.asarray(topology.capacity), A["nb"], A["lam"], A["s"], A["r"], A["k"],
                               A["rv"], n_ranks, P, A["w"] if fairness == "rtt" else None, matched=matched)
    t_ph = np.full((n, P), np.nan)
    total = np.full(n, np.nan)
    per_point: list[list[np.ndarray]] = [[] for _ in range(n)]
    for row, i in enumerate(pts):
        o = 0
        ends = []
        for _, k, _, _, nb, *_ in by_point[i]:
            m = len(nb)
            f, p_ = fin[row, o:o + m], post[row, o:o + m]
            real = nb > 0
            t_ph[i, k] = float(f[real].max() - p_[real].min()) if real.any() else 0.0
            per_point[i].append(np.where(real, f, np.nan))
            ends.append(float(f[real].max()) if real.any() else 0.0)
            o += m
        total[i] = max(ends, default=0.0)
    return {"phase_time_max_min": t_ph, "time_max_min": total, "message_finish_time": per_point}
