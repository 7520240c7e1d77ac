"""Several jobs on one machine, with phases and background traffic: :func:`evaluate_jobs`.

Every job's exchanges (one per phase) are evaluated by the batched kernel
(:func:`evaluator.evaluate_batch`, one call per routing, link loads kept);
the background is one more exchange whose loads are rates (bytes/s); the
jobs then share what capacity the background leaves by max-min fair
speeds (:mod:`evaluator.jobs.sharing`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np
import xarray as xr

from .._version import __version__
from ..dataset import JOB_METRICS, LINK_CAPACITY, with_units
from ..display import format_value
from ..errors import ConfigError, check_seed, refuse_ignored, require
from .._batch.checks import DEFAULT_BLOCK_SIZE, as_routing, check_pair, check_type
from .._batch.output import link_table
from .._batch.phases import phase_names
from .._types import LinkFloats, NodeInts
from ..evaluation import evaluate_batch
from ..placement import Placement
from ..placement.base import check_node_ids
from ..routing import Routing, require_linear
from ..topology import Topology
from ..traffic import AbstractTraffic, random_permutation
from ..traffic.base import dense
from .sharing import REL_TIE, share

__all__ = ["Job", "Background", "BACKGROUND_PATTERNS", "check_background", "evaluate_jobs", "background_rates"]

BACKGROUND_PATTERNS = ("uniform", "random_permutation")
"""``uniform``: every background node spreads its rate evenly over every other background node (the expectation
of uniformly random destinations); ``random_permutation``: every background node sends its whole rate to one
partner of a seeded random permutation of the background nodes."""

SEEDED_PATTERNS = ("random_permutation",)
"""The background patterns that draw from ``seed`` (``uniform`` draws nothing: another seed is refused there)."""


@dataclasses.dataclass(frozen=True, eq=False)
class Job:
    """One job: its communication step (a traffic, possibly phased), its placement and optionally its routing.

    ``routing`` None: the evaluation's routing. ``name`` None: ``job<i>``.
    """

    traffic: AbstractTraffic
    placement: Placement
    routing: Routing | str | None = None
    name: str | None = None


@dataclasses.dataclass(frozen=True)
class Background:
    """Background load: the nodes outside every job inject ``fraction`` of their injection bandwidth.

    The traffic is ``pattern`` (:data:`BACKGROUND_PATTERNS`; ``seed`` for the
    random ones), routed by ``routing`` (None: the evaluation's routing), and
    is a constant-rate flow that takes capacity from every link it crosses.
    """

    fraction: float
    pattern: str = "uniform"
    routing: Routing | str | None = None
    seed: int = 0


def check_background(bg: Any) -> Background:
    """``bg`` if it is a valid :class:`Background` (fraction in [0, 1), a known pattern, a seed), else a
    :class:`~evaluator.errors.ConfigError` naming the field; also at fraction 0, where it loads nothing."""
    require(isinstance(bg, Background), "background", bg, "an evaluator.jobs.Background(fraction, pattern=...) or None")
    f = bg.fraction
    ok = not isinstance(f, (bool, np.bool_)) and isinstance(f, (int, float, np.floating, np.integer)) \
        and np.isfinite(f) and 0 <= f < 1
    require(ok, "background.fraction", f, "a number in [0, 1): the share of each background node's injection "
                                          "bandwidth it sends")
    require(bg.pattern in BACKGROUND_PATTERNS, "background.pattern", bg.pattern, f"one of {list(BACKGROUND_PATTERNS)}")
    check_seed("background.seed", bg.seed)
    default = Background.__dataclass_fields__["seed"].default
    refuse_ignored(bg.pattern in SEEDED_PATTERNS or bg.seed == default, "background.seed", bg.seed,
                   f"{default} (the default) with background.pattern={bg.pattern!r}, which draws nothing: the seed "
                   f"is read by {' | '.join(SEEDED_PATTERNS)} only",
                   "Drop background.seed, or use background.pattern=random_permutation.")
    return bg


def background_rates(topology: Topology, background: Background, nodes: NodeInts, routing: Routing) -> LinkFloats:
    """Bytes/s the background puts on every link: ``nodes`` (node ids) inject ``fraction`` of their injection
    bandwidth (zeros when the fraction is 0 or fewer than two nodes inject)."""
    nodes = check_node_ids(topology, "nodes", nodes, allow_empty=True)
    nb = nodes.size
    if background.fraction == 0 or nb < 2:
        return np.zeros(topology.n_links)
    cap = np.asarray(topology.capacity)[topology.n_router_links + nodes]  # injection links
    rate = background.fraction * cap
    if background.pattern == "uniform":
        # Over every node of the machine, the others weighing 0 (they send and receive nothing): the same flows, and
        # one compiled program per (topology, routing) whatever the background's node count (a study of jobs of
        # many sizes compiled one per size class before).
        ws = np.zeros(topology.n_nodes)
        wd = np.zeros(topology.n_nodes)
        ws[nodes], wd[nodes] = rate, 1.0
        tr: AbstractTraffic = dense(topology.n_nodes, ws, wd, 1.0 / (nb - 1), name="background uniform")
        pl = Placement(np.arange(topology.n_nodes), topology.n_nodes, "every node (background nodes weighted)")
    else:
        perm = random_permutation(nb, 1.0, background.seed)
        tr = dataclasses.replace(perm, nbytes=rate[perm.src] * (perm.src != perm.dst), name="background permutation")
        pl = Placement(nodes, topology.n_nodes, "background nodes")
    res = evaluate_batch(topology, routing, [tr], [pl], keep_link_load=True, block_size=1)
    return np.asarray(res.link_load[0], dtype=np.float64)


def _link_text(topology: Topology, link: int) -> str:
    cls = topology.link_class_names()[link]
    s, d = int(topology.link_src[link]), int(topology.link_dst[link])
    if s < 0 or d < 0:
        return f"link {link} ({cls} of node {int(topology.link_node[link])})"
    return f"link {link} ({cls}, router {s} -> {d})"


def _checked_routing(topology: Topology, rt: Routing, where: str) -> Routing:
    """``rt`` if it serves ``topology``, else the :class:`ConfigError` of :func:`evaluator.routing.check_routing`
    with its field under ``where`` (``jobs[1].``, ``background.``): a job's own routing refused as ``routing.kind``
    named the top-level routing, which was right."""
    from ..routing import check_routing

    try:
        check_routing(topology, rt)
    except ConfigError as exc:
        if type(exc) is ConfigError and where and not exc.field.startswith(where):
            raise ConfigError(f"{where}{exc.field}", exc.value, exc.allowed, exc.hint) from None
        raise
    return rt


def _check_jobs(topology: Topology, jobs: Any, routing, exclusive_nodes: bool) -> tuple[list[Job], list[Routing]]:
    require(isinstance(jobs, Sequence) and not isinstance(jobs, (str, bytes)) and len(jobs) > 0, "jobs",
            jobs if not isinstance(jobs, Sequence) else list(jobs), "a non-empty list of evaluator.jobs.Job")
    jobs = list(jobs)
    routings = []
    for i, job in enumerate(jobs):
        require(isinstance(job, Job), f"jobs[{i}]", job, "an evaluator.jobs.Job(traffic, placement, routing=None)")
        check_type("traffic", f"jobs[{i}].traffic", job.traffic)
        check_type("placement", f"jobs[{i}].placement", job.placement)
        check_pair(topology, job.traffic, job.placement, names=(f"jobs[{i}].traffic", f"jobs[{i}].placement"))
        require(job.name is None or (isinstance(job.name, str) and job.name != ""), f"jobs[{i}].name", job.name,
                "a non-empty string, or None (job<i>)")  # (3 and '3' were one name; a list crashed in xarray)
        rt = job.routing if job.routing is not None else routing
        require(rt is not None, f"jobs[{i}].routing", None, "a routing (or the evaluation's routing argument)")
        routings.append(_checked_routing(topology, as_routing(rt, f"jobs[{i}].routing"),
                                         f"jobs[{i}]." if job.routing is not None else ""))
    names = [job.name if job.name is not None else f"job{i}" for i, job in enumerate(jobs)]
    dup = next((i for i, n in enumerate(names) if names.index(n) < i), None)
    if dup is not None:
        raise ConfigError(f"jobs[{dup}].name", names[dup], "distinct job names",
                          f"jobs[{names.index(names[dup])}] has it too.")
    if exclusive_nodes:
        owner = np.full(topology.n_nodes, -1, dtype=np.int64)
        for i, job in enumerate(jobs):
            nodes = np.unique(job.placement.task_node)
            clash = owner[nodes] >= 0
            if clash.any():
                node = int(nodes[np.argmax(clash)])
                raise ConfigError(f"jobs[{i}].placement", job.placement.name,
                                  f"nodes no other job uses (exclusive_nodes): node {node} is also used by "
                                  f"jobs[{int(owner[node])}] ({names[int(owner[node])]})",
                                  "Move one job (another offset or node set), or pass exclusive_nodes=False "
                                  "to let jobs share nodes.")
            owner[nodes] = i
    return jobs, routings


def evaluate_jobs(
    topology: Topology,
    jobs: Sequence[Job],
    routing: Routing | str | None = None,
    background: Background | None = None,
    *,
    exclusive_nodes: bool = True,
    interference: bool = True,
    keep_link_load: bool = False,
    block_size: int = DEFAULT_BLOCK_SIZE,
    chunk_size: int | None = None,
    sharing: str = "bound",
    fairness: str = "flow",
) -> xr.Dataset:
    """Jobs that run together on one machine: each job's time together and alone, and who slows whom.

    Every job starts its communication step at time 0 and does its phases
    one after another; jobs share link capacity by max-min fair speeds
    (:mod:`evaluator.jobs.sharing`), recomputed whenever a job finishes or
    moves to its next phase. ``background`` (optional) is a constant-rate load
    injected by the nodes outside every job; what it leaves of each link is
    what the jobs share, alone and together.

    Returns a dataset with dimension ``job`` (and ``phase``, ``other_job``,
    ``link`` where they apply): ``completion_time`` (together, s),
    ``completion_time_alone`` (s), ``slowdown`` (together / alone; 1 when a
    job sends nothing off its nodes, NaN when it never finishes),
    ``interference[job, other_job]`` (the slowdown of ``job`` when it runs with
    ``other_job`` alone; 1 on the diagonal), ``phase_completion_time_alone``,
    ``total_bytes``, ``bottleneck_alone`` (class of the busiest link alone),
    ``blocked_link`` (-1, or a link the background fills that the job needs:
    its time is then infinite and ``blocked_reason`` says why) and the scalar
    ``makespan``; with ``keep_link_load``, ``job_link_load[job, link]`` (bytes
    over all phases), ``background_link_rate[link]`` (bytes/s) and
    ``link_capacity``.

    ``block_size``: points (job phases) per device call of the batched kernel
    (:func:`evaluator.evaluate_batch`); ``chunk_size`` is its old name, still accepted.

    ``sharing="max_min"`` also simulates every message of every job as a flow (docs/latency.md): the flows share
    the links max-min fairly with ``fairness`` weights (``"flow"``, the default as in a config's ``fairness``
    (until 2026-12-07 ``"job"`` here while ``evaluator eval`` with jobs passed the config's ``"flow"``): every
    flow alike; ``"job"``: every job an equal share of a link; ``"rtt"``: 1 / latency), each message starting
    after its latency (the network's latency model,
    if any), every job doing its phases one after another (a phase starts when the job's previous phase has
    ended). It adds ``time_max_min`` and ``time_max_min_alone`` (s, per job: its last message's arrival with
    every job, and alone) and ``slowdown_max_min``.
    """
    check_type("topology", "topology", topology)
    for name, flag in (("exclusive_nodes", exclusive_nodes), ("interference", interference),
                       ("keep_link_load", keep_link_load)):  # (bool("no") is True)
        require(isinstance(flag, (bool, np.bool_)), name, flag, "True or False")
    from .._batch.flowlevel import FAIRNESS, SHARINGS  # (before any work; fairness checked at either sharing)

    require(isinstance(sharing, str) and sharing in SHARINGS, "sharing", sharing, f"one of {list(SHARINGS)}")
    require(isinstance(fairness, str) and fairness in FAIRNESS, "fairness", fairness, f"one of {list(FAIRNESS)}")
    # (job and flow are the defaults of this function and of the config's schema; rtt is read by max_min alone)
    refuse_ignored(sharing == "max_min" or fairness != "rtt", "fairness", fairness, "'flow' (the default) or 'job' "
                   "unless sharing='max_min': only flow-level max-min sharing reads fairness; sharing='bound' is "
                   "the job-level speeds model", "Pass sharing='max_min', or drop fairness='rtt'.")
    jobs, routings = _check_jobs(topology, jobs, routing, bool(exclusive_nodes))
    J = len(jobs)
    if J > 1 or background is not None:
        for i, rt in enumerate(routings):
            require_linear(rt, "Several jobs (or background traffic) sharing a machine: each job is routed alone and "
                           "the loads added", f"jobs[{i}].routing")
    names = [job.name if job.name is not None else f"job{i}" for i, job in enumerate(jobs)]
    bg_rate, bg_label = _background_rates(topology, jobs, background, routing, routings)  # (refusals first)
    loads, kernel_times = _phase_loads(topology, jobs, routings, block_size, chunk_size)
    cap = np.asarray(topology.capacity, dtype=np.float64)
    left = _left(cap, bg_rate)
    solo = _solo_times(topology, loads, kernel_times, bg_rate, left, names)
    return _jobs_dataset(topology, jobs, routings, names, loads, (bg_rate, bg_label, left), solo,
                         _together(loads, solo[0], left, bool(interference)),
                         dict(keep_link_load=keep_link_load, sharing=sharing, fairness=fairness,
                              exclusive_nodes=exclusive_nodes))


def _left(cap: np.ndarray, bg_rate: np.ndarray) -> np.ndarray:
    """The capacity the background leaves each link (bytes/s); a link it fills up to rounding (within
    :data:`~evaluator.jobs.sharing.REL_TIE` of its capacity) is full, left 0, and a job that needs it never finishes
    (``blocked_reason`` says why). Until 2026-12-07 six background flows of a sixth of a 1 GB/s link's capacity,
    whose float sum is 1.2e-7 B/s below it, left that and the job a finite, meaningless time."""
    left = cap - bg_rate
    return np.where(left <= REL_TIE * cap, np.minimum(left, 0.0), left)


def _jobs_dataset(topology, jobs, routings, names, loads, bg, solo, shared, opts: dict) -> xr.Dataset:
    """The dataset of :func:`evaluate_jobs`: ``bg`` the background's ``(rate, label, capacity left)``, ``solo``
    :func:`_solo_times`'s, ``shared`` :func:`_together`'s, ``opts`` its options."""
    bg_rate, bg_label, left = bg
    times, blocked, reasons, bott = solo
    alone, together, slowdown, pair = shared
    sharing, fairness = opts["sharing"], opts["fairness"]
    J = len(jobs)
    P = max(len(j.traffic.phases) for j in jobs)
    phase_t = np.full((J, P), np.nan)
    for j, t in enumerate(times):
        phase_t[j, :len(t)] = t
    total = np.array([sum(x.total_bytes for x in j.traffic.phases) for j in jobs])
    m = {x.name: x for x in JOB_METRICS}
    data: dict[str, Any] = {
        "completion_time": (("job",), together, m["completion_time"].attrs),
        "completion_time_alone": (("job",), alone, m["completion_time_alone"].attrs),
        "slowdown": (("job",), slowdown, m["slowdown"].attrs),
        "interference": (("job", "other_job"), pair, m["interference"].attrs),
        "phase_completion_time_alone": (("job", "phase"), phase_t, m["phase_completion_time_alone"].attrs),
        "total_bytes": (("job",), total, m["total_bytes"].attrs),
        "bottleneck_alone": (("job",), np.asarray(bott, dtype=str),
                             {"long_name": "class of the link that sets the job's time alone"}),
        "blocked_link": (("job",), blocked, {"long_name": "a link the background fills that the job needs (-1: none)"}),
        "blocked_reason": (("job",), np.asarray(reasons, dtype=str),
                           {"long_name": "why the job never finishes ('' if it does)"}),
        "makespan": ((), float(np.max(together)), m["makespan"].attrs),
    }
    coords = _job_coords(jobs, routings, names, P)
    if opts["keep_link_load"]:
        _add_link_loads(topology, data, coords, loads, bg_rate)
    if sharing != "bound":
        fin = _jobs_max_min(topology, jobs, routings, np.maximum(left, 0.0), fairness)
        with np.errstate(invalid="ignore", divide="ignore"):
            sd = np.where(fin[1] > 0, fin[0] / np.where(fin[1] > 0, fin[1], 1.0), 1.0)
        data["time_max_min"] = (("job",), fin[0], m["time_max_min"].attrs)
        data["time_max_min_alone"] = (("job",), fin[1], m["time_max_min_alone"].attrs)
        data["slowdown_max_min"] = (("job",), sd, m["slowdown_max_min"].attrs)
    ds = xr.Dataset(data, coords=coords)
    if sharing != "bound":
        ds.attrs.update({"flow_sharing": f"max-min, {fairness}-fair, message by message (time_max_min)",
                         "fairness": fairness})
    elif topology.latency is not None:
        ds.attrs["latency_note"] = ("the network's latency model is not part of the job-level speeds model "
                                    "(completion_time); sharing=max_min times every message with it")
    ds.attrs.update({"topology": topology.name, "n_nodes": topology.n_nodes, "n_routers": topology.n_routers,
                     "n_jobs": J, "background": bg_label, "sharing": "max-min fair speeds (progressive filling)",
                     "exclusive_nodes": int(bool(opts["exclusive_nodes"])), "evaluator_version": __version__})
    if blocked.max() >= 0:
        ds.attrs["blocked"] = "; ".join(f"{names[j]}: {reasons[j]}" for j in range(J) if reasons[j])
    return with_units(ds)


def _add_link_loads(topology, data: dict, coords: dict, loads, bg_rate) -> None:
    """``keep_link_load``'s variables (each job's bytes per link over its phases, the background's rate, the
    capacity) and the link coordinates, added to ``data`` and ``coords``."""
    m = {x.name: x for x in JOB_METRICS}
    links = link_table(topology)
    data["job_link_load"] = (("job", "link"), np.stack([L.sum(axis=0) for L in loads]), m["job_link_load"].attrs)
    data["background_link_rate"] = (("link",), bg_rate, m["background_link_rate"].attrs)
    data["link_capacity"] = (("link",), links.capacity, LINK_CAPACITY.attrs)
    coords.update({"link": links.index, "link_src": ("link", links.src), "link_dst": ("link", links.dst),
                   "link_class": ("link", links.class_names), "link_node": ("link", links.node)})


def _phase_loads(topology, jobs, routings, block_size, chunk_size) -> tuple[list, list]:
    """Every job's link loads per phase ``[phase, link]`` alone and the kernel's phase times: one batched call
    per routing over every phase of the jobs it routes."""
    J = len(jobs)
    phases = [j.traffic.phases for j in jobs]
    loads: list[np.ndarray] = [None] * J  # type: ignore[list-item]
    kernel_times: list[np.ndarray] = [None] * J  # type: ignore[list-item]
    for rt in dict.fromkeys(routings):  # one batched call per routing
        members = [j for j in range(J) if routings[j] == rt]
        flat = [(j, x) for j in members for x in phases[j]]
        res = evaluate_batch(topology, rt, [x for _, x in flat], [jobs[j].placement for j, _ in flat],
                             keep_link_load=True, block_size=block_size, chunk_size=chunk_size)
        k = 0
        for j in members:
            n = len(phases[j])
            loads[j] = np.asarray(res.link_load[k:k + n])
            kernel_times[j] = np.asarray(res.metrics["completion_time"][k:k + n])
            k += n
    return loads, kernel_times


def _background_rates(topology, jobs, background, routing, routings) -> tuple[np.ndarray, str]:
    """The background's rate on every link (bytes/s; injected by the nodes outside every job) and its label."""
    if background is None:
        return np.zeros(topology.n_links), "none"
    bg = check_background(background)
    used_nodes = np.zeros(topology.n_nodes, dtype=bool)
    for job in jobs:
        used_nodes[job.placement.task_node] = True
    bg_routing = as_routing(bg.routing if bg.routing is not None else
                            (routing if routing is not None else routings[0]), "background.routing")
    field = "background.routing" if bg.routing is not None else "routing"
    _checked_routing(topology, bg_routing, "background." if bg.routing is not None else "")
    require_linear(bg_routing, "Background traffic (routed alone, its loads added to the jobs')", field)
    bg_rate = background_rates(topology, bg, np.nonzero(~used_nodes)[0], bg_routing)
    return bg_rate, f"{bg.pattern} at {bg.fraction:g} of injection bandwidth ({bg_routing.label})"


def _solo_times(topology, loads, kernel_times, bg_rate, left, names):
    """Each job's phase times alone on what the background leaves (``left``; exactly the kernel's without
    background), the link the background blocks (-1: none) and why, and the class of its busiest link."""
    J = len(loads)
    cap = np.asarray(topology.capacity, dtype=np.float64)
    times, blocked, reasons, bott = [], np.full(J, -1, np.int64), [""] * J, []
    class_names = topology.link_class_names()
    for j in range(J):
        L = loads[j]
        if not bg_rate.any():
            t = kernel_times[j].astype(np.float64)
        else:
            with np.errstate(divide="ignore", invalid="ignore"):
                ratio = np.where(L > 0, L / np.where(left > 0, left, 1.0), 0.0)
                ratio = np.where((L > 0) & (left <= 0), np.inf, ratio)
            t = ratio.max(axis=1) if L.shape[1] else np.zeros(len(L))
            bad = np.nonzero(np.isinf(t))[0]
            if bad.size:
                p = int(bad[0])
                link = int(np.nonzero((L[p] > 0) & (left <= 0))[0][0])
                blocked[j] = link
                reasons[j] = (f"{_link_text(topology, link)}: the background puts {format_value(bg_rate[link], 'bytes/s')}"
                              f" on it, its capacity is {format_value(cap[link], 'bytes/s')}, and phase {p} of "
                              f"{names[j]} needs it")
        times.append(t)
        per_link = (L / np.where(left > 0, left, np.inf)).max(axis=0) if L.size else np.zeros(0)
        bott.append(str(class_names[int(np.argmax(per_link))]) if per_link.size and
                    per_link.max() > 0 else "none")
    return times, blocked, reasons, bott


def _together(loads, times, left, interference: bool):
    """``(alone, together, slowdown, pair)``: each job's time alone and with every job (max-min fair speeds on the
    links two or more share), their ratio (NaN where a job never finishes), and :func:`_pairwise` (NaN off the
    diagonal without ``interference``)."""
    J = len(loads)
    alone = np.array([float(np.sum(t)) for t in times])
    used = np.stack([(L > 0).any(axis=0) for L in loads])  # [job, link]
    shared = np.nonzero(used.sum(axis=0) >= 2)[0]
    together = share([L[:, shared] for L in loads], times, left[shared]).finish
    with np.errstate(invalid="ignore", divide="ignore"):
        slowdown = np.where(alone > 0, together / np.where(alone > 0, alone, 1.0), 1.0)
    slowdown = np.where(np.isinf(alone), np.nan, slowdown)
    pair = _pairwise(loads, times, used, alone, left) if interference and J > 1 else np.ones((J, J))
    if not interference:
        pair[:] = np.nan
        np.fill_diagonal(pair, 1.0)
    return alone, together, slowdown, pair


def _pairwise(loads, times, used, alone, left) -> np.ndarray:
    """``pair[a, b]``: the slowdown of job ``a`` running with job ``b`` alone (1 on the diagonal and where the
    two share no link; NaN off the diagonal in the row of a job that never finishes, whose slowdown is NaN: it
    was 1 until 2026-12-07, and a finishing job's row beside a blocked one was 1 without being computed)."""
    J = len(loads)
    pair = np.ones((J, J))
    pair[~np.isfinite(alone)] = np.nan
    np.fill_diagonal(pair, 1.0)
    both = used.astype(np.int64) @ used.T.astype(np.int64)
    for a in range(J):
        for b in range(a + 1, J):
            if both[a, b] == 0:
                continue
            links = np.nonzero(used[a] & used[b])[0]
            fin = share([loads[a][:, links], loads[b][:, links]], [times[a], times[b]], left[links]).finish
            for x, f in ((a, fin[0]), (b, fin[1])):
                if np.isfinite(alone[x]):
                    pair[x, b if x == a else a] = f / alone[x] if alone[x] > 0 else 1.0
    return pair


def _job_coords(jobs, routings, names, P: int) -> dict[str, Any]:
    """The coordinates of a jobs dataset: job and phase names, each job's traffic, placement, routing, tasks."""
    return {
        "job": ("job", np.asarray(names, dtype=str)),
        "other_job": ("other_job", np.asarray(names, dtype=str)),
        "phase": ("phase", np.asarray(phase_names([j.traffic for j in jobs], P), dtype=str)),
        "job_traffic": ("job", np.asarray([j.traffic.name for j in jobs], dtype=str)),
        "job_placement": ("job", np.asarray([j.placement.name for j in jobs], dtype=str)),
        "job_routing": ("job", np.asarray([r.label for r in routings], dtype=str)),
        "job_tasks": ("job", np.asarray([j.traffic.n_tasks for j in jobs], dtype=np.int64)),
    }


def job_summary_lines(ds: xr.Dataset) -> list[str]:
    """A short human table of a several-jobs result: its times (alone, together, makespan) in one decimal SI
    unit chosen from them (:func:`evaluator.display.shared_unit`), named in the headers."""
    from ..display import format_number, format_values, shared_unit

    require(isinstance(ds, xr.Dataset) and "makespan" in ds, "ds", type(ds).__name__,
            "the dataset of evaluator.jobs.evaluate_jobs (with its makespan)")
    a = ds.attrs
    alone, together = ds.completion_time_alone.values, ds.completion_time.values
    unit = shared_unit("s", [alone, together])
    u = unit[0]

    def t(x) -> str:
        return format_values([x], "s", unit)[0][0]

    lines = [f"topology    {a.get('topology')}   background: {a.get('background')}",
             f"{'job':<12}{'tasks':>7}{f'alone [{u}]':>12}{f'together [{u}]':>15}{'slowdown':>10}  bottleneck alone  "
             f"traffic"]
    for j in range(ds.sizes["job"]):
        lines.append(f"{str(ds.job.values[j]):<12}{int(ds.job_tasks.values[j]):>7}"
                     f"{t(alone[j]):>12}{t(together[j]):>15}"
                     f"{format_number(ds.slowdown.values[j]):>10}  {str(ds.bottleneck_alone.values[j]):<16}  "
                     f"{ds.job_traffic.values[j]}")
    lines.append(f"makespan    {t(float(ds.makespan))} {u}")
    if "time_max_min" in ds:
        mm_unit = shared_unit("s", [ds.time_max_min.values, ds.time_max_min_alone.values])
        lines.append(f"max-min     flow by flow, {a.get('fairness')}-fair [{mm_unit[0]}]: " + ", ".join(
            f"{ds.job.values[j]} {format_values([ds.time_max_min_alone.values[j]], 's', mm_unit)[0][0]} -> "
            f"{format_values([ds.time_max_min.values[j]], 's', mm_unit)[0][0]} "
            f"(x{format_number(ds.slowdown_max_min.values[j])})" for j in range(ds.sizes["job"])))
    inter = ds.interference.values
    if ds.sizes["job"] > 1 and np.nanmax(inter) > 1:  # (a NaN row: a job that never finishes)
        worst = np.unravel_index(np.nanargmax(inter), inter.shape)
        lines.append(f"worst pair  {ds.job.values[worst[0]]} slowed {format_number(ds.interference.values[worst])}x by "
                     f"{ds.other_job.values[worst[1]]} alone")
    if "blocked" in a:
        lines.append(f"blocked     {a['blocked']}")
    if "latency_note" in a:
        lines.append(f"note        {a['latency_note']}")
    return lines


def _jobs_max_min(topology: Topology, jobs: list[Job], routings: list[Routing], capacity: np.ndarray,
                  fairness: str) -> np.ndarray:
    """``[2, J]``: every job's last arrival under flow-level max-min sharing with every job (row 0) and each
    alone (row 1), the jobs' phases one after another within each job."""
    from .._batch.flowlevel import check_messages, exchange_flows, progress_batch
    from .._batch.compiled import batch_kernel

    check_messages(sum(x.n_flows if x.kernel_input == "flows" else int(x.n_tasks) ** 2 for job in jobs
                       for x in job.traffic.phases), "the jobs", "every job's phases together")
    rows = []  # (job, phase, links, frac, bytes, latency)
    for j, (job, rt) in enumerate(zip(jobs, routings)):
        kern = batch_kernel(topology, rt, False)
        tn = np.asarray(job.placement.task_node)
        for k, x in enumerate(job.traffic.phases):
            _, _, nb, links, frac, lam = exchange_flows(kern, topology, tn, x)
            rows.append((j, k, links, frac, nb, lam))
    J = len(jobs)
    F = sum(len(r[4]) for r in rows)
    K = max(r[2].shape[1] for r in rows)
    P = 1 + J
    LK = np.full((P, F, K), -1, np.int32)
    FR = np.zeros((P, F, K))
    NB, LAM, W = np.zeros((P, F)), np.zeros((P, F)), np.ones((P, F))
    JOB, STEP = np.zeros((P, F), np.int32), np.zeros((P, F), np.int32)
    owner = np.zeros(F, np.int64)
    o = 0
    for j, k, lk, fr, nb, lam in rows:
        m = len(nb)
        sl = slice(o, o + m)
        owner[sl] = j
        for p in range(P):
            if p == 0 or p == 1 + j:
                LK[p, sl, :lk.shape[1]], FR[p, sl, :lk.shape[1]] = lk, fr
                NB[p, sl], LAM[p, sl] = nb, lam
                JOB[p, sl], STEP[p, sl] = j, k
                if fairness == "rtt":
                    W[p, sl] = 1.0 / np.where(lam > 0, lam, np.inf) if np.all(lam[nb > 0] > 0) else np.nan
        o += m
    if fairness == "rtt" and np.isnan(W).any():
        raise ConfigError("fairness", "rtt", "a latency model that gives every message a latency > 0 "
                          "(topology.latency)", "Or use fairness=job or flow.")
    n_steps = max(len(job.traffic.phases) for job in jobs)
    _, fin = progress_batch(LK, FR, capacity, NB, LAM, JOB, JOB, STEP, np.zeros((P, F), bool), J, n_steps,
                            W if fairness == "rtt" else None, job=JOB if fairness == "job" else None)
    out = np.zeros((P, J))
    for p in range(P):
        for j in range(J):
            sel = (owner == j) & (NB[p] > 0)
            if p in (0, 1 + j):
                out[p, j] = float(fin[p, sel].max()) if sel.any() else 0.0
    return np.concatenate([out[:1], np.array([out[1 + j, j] for j in range(J)])[None, :]], axis=0)
