"""The one table of metrics and the one way to turn results into an :class:`xarray.Dataset`.

:data:`TABLE` is the one metric table: every variable a command writes
(``eval``, ``sweep`` with jobs, phases and bounds, ``schedule`` and its
studies, ``tiles``, ``partitions``, the RDN study) with its units, long name
and direction (smaller or larger is better; ``None``: not ranked), grouped
as :data:`METRICS` (the scalar metrics of an evaluation, DESIGN.md
"Metrics"; the kernel's output order), :data:`PATH_METRICS`,
:data:`BOUND_METRICS`, :data:`PHASE_METRICS`, :data:`JOB_METRICS`,
:data:`SCHEDULE_METRICS`, :data:`TILES_METRICS`, :data:`PARTITION_METRICS`,
:data:`RDN_METRICS`, :data:`TEXT_METRICS` and :data:`ROW_LABELS`; families
named by a pattern (per-class maxima ``max_load_<class>``, the RDN study's
per-routing times) are :data:`TEMPLATES`. :func:`metric` looks a name up;
:func:`smaller_is_better` gives its direction and :func:`rankable` the
variables of a dataset that can be ranked. The kernel's output, single
evaluations, sweep datasets, queries, tables and plots all read it.
:func:`results_dataset` builds every result dataset: one design point
(no dimension), a batch (``variant``) or a sweep grid (one dimension per axis,
with ``feasible`` and ``reason``).
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from ._types import Bool, Float, Int, Shaped
from .errors import ConfigError

__all__ = [
    "DRAW_QUANTILE",
    "draw_stats",
    "check_draw_axes",
    "first_rankable",
    "predicted_time",
    "Metric",
    "METRICS",
    "METRIC_NAMES",
    "metric_values",
    "PATH_METRICS",
    "PATH_METRIC_NAMES",
    "MAX_LOAD",
    "PHASE_METRICS",
    "TIME_METRICS",
    "TIME_METRIC_NAMES",
    "JOB_METRICS",
    "BOUND_METRICS",
    "TEXT_METRICS",
    "SCHEDULE_METRICS",
    "TILES_METRICS",
    "PARTITION_METRICS",
    "RDN_METRICS",
    "COST_METRICS",
    "BUYER_METRICS",
    "TEMPLATES",
    "ROW_LABELS",
    "HIDDEN",
    "TABLE",
    "LINK_LOAD",
    "LINK_CAPACITY",
    "metric",
    "max_load_name",
    "smaller_is_better",
    "rankable",
    "shown",
    "results_dataset",
    "with_units",
    "LinkTable",
]


@dataclasses.dataclass(frozen=True)
class Metric:
    """A result variable: name, CF units, long name, and whether smaller is better (``None``: not ranked)."""

    name: str
    units: str
    long_name: str
    smaller_is_better: bool | None = True

    @property
    def attrs(self) -> dict[str, str]:
        return {"units": self.units, "long_name": self.long_name}


METRICS: tuple[Metric, ...] = (
    Metric("completion_time", "s", "completion time of the exchange (contention lower bound)", True),
    Metric("throughput", "bytes/s", "total bytes over completion time", False),
    Metric("effective_injection_bandwidth", "bytes/s", "mean bytes sent per sending task over completion time",
           False),
    Metric("mean_hops", "1", "router-to-router links per byte that leaves its node", True),
    Metric("total_bytes", "bytes", "bytes sent in the exchange", True),
    Metric("off_node_bytes", "bytes", "bytes sent between tasks on different nodes (the rest stays on a node)",
           True),
)
"""Scalar metrics of one evaluation, in dataset order."""

METRIC_NAMES: tuple[str, ...] = tuple(m.name for m in METRICS)
"""The names of :data:`METRICS`, in dataset order (the kernel packs them first:
:data:`evaluator.kernel.PACKED_METRICS`)."""


def metric_values(xp, completion_time, total_bytes, off_node_bytes, hop_bytes, n_senders, bottleneck_class,
                  bottleneck_link, hold=None) -> dict[str, Any]:
    """The formulas of :data:`METRICS` and of the bottleneck (DESIGN.md "Metrics"), written once for an array
    namespace ``xp``: ``jax.numpy`` in the kernel (one point), NumPy where phases are combined (``[point]`` arrays).

    From a point's ``completion_time`` (s), ``total_bytes``,
    ``off_node_bytes`` (bytes that leave their node), ``hop_bytes`` (bytes
    times router-to-router links crossed, summed over links), ``n_senders``
    (tasks that send bytes) and its busiest link (``bottleneck_class``,
    ``bottleneck_link``): ``throughput`` = total / time and
    ``effective_injection_bandwidth`` = total / senders / time (bytes/s;
    inf when bytes go in no time, NaN when nothing is sent), ``mean_hops`` =
    hop bytes / off-node bytes (0 when nothing leaves a node), and the
    bottleneck -1 when no link is used (time 0). ``hold`` (the kernel's): applied to total / senders before it
    is divided by the time, so that a compiler cannot merge the two divisions into total / (senders * time).
    """
    busy = completion_time > 0
    safe = xp.where(busy, completion_time, 1.0)
    empty = xp.where(total_bytes > 0, xp.inf, xp.nan)
    senders = xp.maximum(n_senders, 1).astype(total_bytes.dtype)
    has_off = off_node_bytes > 0
    per_sender = total_bytes / senders
    per_sender = per_sender if hold is None else hold(per_sender)
    return {
        "completion_time": completion_time,
        "throughput": xp.where(busy, total_bytes / safe, empty),
        "effective_injection_bandwidth": xp.where(busy, per_sender / safe, empty),
        "mean_hops": xp.where(has_off, hop_bytes / xp.where(has_off, off_node_bytes, 1.0), 0.0),
        "total_bytes": total_bytes,
        "off_node_bytes": off_node_bytes,
        "bottleneck_class": xp.where(busy, bottleneck_class, -1),
        "bottleneck_link": xp.where(busy, bottleneck_link, -1),
    }


PATH_METRICS: tuple[Metric, ...] = (
    Metric("paths_per_pair", "1",
           "router paths per communicating router pair: the mean over the pairs (each pair counts once, not "
           "weighted by its bytes) of the distinct router paths carrying more than 1e-9 of the pair's bytes "
           "(dor: 1; kshortest: the Yen paths found; optiq_heuristic: those selected; optiq_lp: those with a "
           "positive LP share; NaN: not a path set (minimal, valiant, valiant_router, tago) or no pair)", None),
)
"""Metrics of the routing's path sets, computed on the host (not by the kernel): every evaluation and sweep
carries them (:func:`evaluator.routing._paths.paths_per_pair`)."""

PATH_METRIC_NAMES: tuple[str, ...] = tuple(m.name for m in PATH_METRICS)

TIME_METRICS: tuple[Metric, ...] = (
    Metric("time_with_latency", "s",
           "time of the exchange with per-message latency (topology.latency): each phase's bandwidth bound plus "
           "the latency of its slowest message, summed over the phases; completion_time is the bound alone", True),
    Metric("latency_share", "1", "share of time_with_latency that is latency: 1 - bandwidth bound / time",
           None),
    Metric("time_max_min", "s",
           "time of the exchange under flow-level max-min fair sharing (sharing=max_min): per phase, the last "
           "message's finish, every message starting after its latency; summed over the phases", True),
)
"""Times that add what the bandwidth bound leaves out (DESIGN.md "Beyond the bound"), present where the network
has a latency model; ``completion_time`` stays the bound."""

TIME_METRIC_NAMES: tuple[str, ...] = tuple(m.name for m in TIME_METRICS)

PHASE_METRICS: tuple[Metric, ...] = (
    Metric("phase_completion_time", "s", "completion time of the phase (contention lower bound; NaN: no such phase)",
           True),
    Metric("phase_total_bytes", "bytes", "bytes sent in the phase (NaN: no such phase)", True),
    Metric("phase_time_max_min", "s",
           "time of the phase under flow-level max-min fair sharing (its last message's finish; NaN: no such "
           "phase)", True),
    Metric("phase_time_with_latency", "s",
           "time of the phase with per-message latency: its bound plus its slowest message's latency (NaN: no such "
           "phase; present where the network has a latency model)", True),
)
"""Per-phase metrics of phased traffic (dimension ``phase``); a step's ``completion_time`` is their sum."""

JOB_METRICS: tuple[Metric, ...] = (
    Metric("completion_time", "s", "completion time of the job's step with every job running together", True),
    Metric("completion_time_alone", "s", "completion time of the job's step alone on the machine", True),
    Metric("slowdown", "1", "completion time together over completion time alone", True),
    Metric("interference", "1", "slowdown of the job when it runs with the other job alone", True),
    Metric("phase_completion_time_alone", "s", "completion time of the phase alone (NaN: no such phase)", True),
    Metric("total_bytes", "bytes", "bytes the job sends in its step", True),
    Metric("makespan", "s", "time until every job has finished", True),
    Metric("time_max_min", "s", "the job's last message's arrival with every job, under flow-level max-min sharing "
                                "(sharing=max_min)", True),
    Metric("time_max_min_alone", "s", "the job's time alone under flow-level max-min sharing (sharing=max_min)", True),
    Metric("slowdown_max_min", "1", "time_max_min together over time_max_min alone (flow-level max-min sharing)",
           True),
    Metric("job_link_load", "bytes", "bytes the job puts on the link over its step", None),
    Metric("background_link_rate", "bytes/s", "background traffic on the link", None),
)
"""Variables of multi-job results (:func:`evaluator.jobs.evaluate_jobs`, dimension ``job``)."""

BOUND_METRICS: tuple[Metric, ...] = (
    Metric("optimal_completion_time", "s",
           "certified lower bound on the completion time of any routing (maximum concurrent flow over all paths; "
           "bounds=true)", True),
    Metric("optimal_completion_time_upper", "s",
           "feasible side of the any-routing bound: the time of a flow over all paths that reaches it", True),
    Metric("routing_efficiency", "1",
           "optimal_completion_time over the routing's completion time (<= 1; 1: no routing is faster)", False),
    Metric("adaptive_completion_time", "s",
           "certified lower bound on the time of the Dragonfly routings the ideal-adaptive bound covers (minimal, "
           "valiant; valiant_router with bounds=dragonfly_adaptive_router; attrs bound_bounds)", True),
    Metric("adaptive_completion_time_upper", "s",
           "feasible side of the ideal-adaptive bound: the time of a mix of those paths that reaches it", True),
    Metric("adaptive_efficiency", "1",
           "adaptive_completion_time over the routing's completion time (<= 1 for the routings it covers)",
           False),
    Metric("bound_gap", "1", "proven relative width of the bound's interval: upper / lower - 1", True),
)
"""Bounds reported on request (:mod:`evaluator.lp.bounds`); the dataset's attrs name the method, solver and gap."""

BOUND_VARIABLES: dict[str, tuple[str, str, str]] = {
    "optimal": ("optimal_completion_time", "optimal_completion_time_upper", "routing_efficiency"),
    "adaptive": ("adaptive_completion_time", "adaptive_completion_time_upper", "adaptive_efficiency"),
}
"""The (certified lower bound, feasible side, efficiency) variables of each kind of bound
(:class:`evaluator.lp.bounds.BoundKind`)."""

MAX_LOAD = Metric("max_load_{cls}", "bytes", "largest load on a {cls} link", True)
"""Template of the per-class maxima; see :func:`max_load_name`."""

MESSAGE_FINISH = Metric("message_finish_time", "s",
                        "when the message's last byte arrives, from the start of its phase, under max-min sharing "
                        "(NaN: no such message, or no bytes)", None)

LINK_LOAD = Metric("link_load", "bytes", "expected bytes crossing the link in one exchange", None)
LINK_CAPACITY = Metric("link_capacity", "bytes/s", "link bandwidth per direction", None)

TEXT_METRICS: tuple[Metric, ...] = (
    Metric("bottleneck", "", "class of the link that sets the completion time", None),
    Metric("phase_bottleneck", "", "class of the link that sets the phase's time", None),
    Metric("bottleneck_alone", "", "class of the link that sets the job's time alone", None),
    Metric("blocked_link", "1", "a link the background fills that the job needs (-1: none)", None),
    Metric("blocked_reason", "", "why the job never finishes ('' if it does)", None),
    Metric("bound_method", "", "method of the bound", None),
    Metric("bound_solver", "", "solver of the bound", None),
    Metric("bound_status", "", "ok, or why the bound's LP did not reach its optimum ('<solver>: <its status>'; a "
                               "HiGHS failure leaves the bound NaN)", None),
)
"""Text variables of evaluations that a query table shows next to the ranked variable (never ranked)."""

SCHEDULE_METRICS: tuple[Metric, ...] = (
    Metric("mean_wait", "s", "mean wait time", True),
    Metric("median_wait", "s", "median wait time", True),
    Metric("p95_wait", "s", "95th percentile of wait time", True),
    Metric("mean_bounded_slowdown", "1", "mean bounded slowdown (10 s bound)", True),
    Metric("mean_utilisation", "1", "mean busy nodes / total nodes over the run", False),
    Metric("makespan", "s", "last end - first submission", True),
    Metric("backfilled_share", "1", "share of jobs started by backfilling", None),
    Metric("mean_speedup", "1", "mean communication speedup ratio applied", False),
    Metric("wait_reduction", "1", "1 - mean wait / mean wait of the first run (same machine and mode mix)", False),
    Metric("jobs_per_s", "jobs/s", "simulation speed (wall clock)", None),
    Metric("mean_wait_month", "s", "mean wait time of the jobs submitted in the month", True),
    Metric("utilisation_quantiles", "1", "quantiles of per-minute utilisation in the month", None),
    Metric("wait", "s", "wait time (start - submit)", True),
    Metric("run_time", "s", "run time in the simulation (after any speedup)", True),
    Metric("nodes", "nodes", "nodes (of a job's allocation; of a slab)", None),
    Metric("groups", "groups", "groups the allocation spans", None),
    Metric("speedup", "1", "communication speedup ratio T_TDN / T_RDN (1: none)", False),
    Metric("mode", "", "allocation mode", None),
    Metric("submit", "s", "submission time", None),
    Metric("start", "s", "start time", None),
    Metric("end", "s", "end time", None),
    Metric("requested_time", "s", "requested wall time (what reservations use)", None),
    Metric("mpi_fraction", "1", "fraction of the job's original run time spent in MPI", None),
    Metric("backfilled", "1", "whether the job started ahead of an earlier-submitted job", None),
    Metric("reservation", "s", "first shadow time computed while the job was a blocked queue head (NaN: never)",
           None),
)
"""Variables of ``evaluator schedule`` (per run; per job; per month) and of its studies (per machine, mix, run)."""

TILES_METRICS: tuple[Metric, ...] = (
    Metric("time_all", "s", "halo exchange, all dimensions at once (every link, the NIC included)", True),
    Metric("time_seq", "s", "halo exchange, one dimension at a time (sum of the exchanges)", True),
    Metric("links_all", "s", "all dimensions at once, router links only", True),
    Metric("links_seq", "s", "one dimension at a time, router links only", True),
    Metric("injection_all", "s", "all dimensions at once, node injection and ejection only", True),
    Metric("injection_seq", "s", "one dimension at a time, node injection and ejection only", True),
    Metric("closed_all", "s", "closed form, all dimensions at once", True),
    Metric("closed_seq", "s", "closed form, one dimension at a time", True),
    Metric("closed_links_all", "s", "closed form, all dimensions at once, router links only", True),
    Metric("closed_links_seq", "s", "closed form, one dimension at a time, router links only", True),
    Metric("speedup_links_all", "1", "the baseline's best time over the candidate's, router links only on both "
           "sides, all dimensions at once", False),
    Metric("speedup_links_seq", "1", "the baseline's best time over the candidate's, router links only on both "
           "sides, one dimension at a time", False),
    Metric("speedup_time_all", "1", "the baseline's best time over the candidate's, every link and the NIC on "
           "both sides, all dimensions at once", False),
    Metric("speedup_time_seq", "1", "the baseline's best time over the candidate's, every link and the NIC on "
           "both sides, one dimension at a time", False),
    Metric("limit_all", "", "what limits the exchange all at once (injection or links)", None),
    Metric("limit_seq", "", "what limits the exchanges one dimension at a time", None),
    Metric("router_tile", "", "grid points behind one router along each dimension", None),
    Metric("prism", "", "routers along each dimension", None),
    Metric("rank_tile", "", "grid points of one task along each dimension", None),
    Metric("bottleneck_all", "", "class of the busiest link, all dimensions at once", None),
    Metric("bottleneck_seq", "", "class of the busiest link of each one-dimension exchange", None),
)
"""Variables of ``evaluator tiles`` (dimension ``candidate``)."""

PARTITION_METRICS: tuple[Metric, ...] = (
    Metric("bisection_links", "links", "links crossing the partition's bisection", False),
    Metric("bisection_bandwidth", "bytes/s", "bisection bandwidth per direction", False),
    Metric("bisection_per_node", "bytes/s", "bisection bandwidth per direction per node", False),
    Metric("allowed", "1", "whether the geometry is in the machine's allowed list", None),
    Metric("speedup_of_best", "1", "predicted speedup of the best geometry of the size over this one (1: best)",
           True),
    Metric("n_geometries", "1", "geometries of the size", None),
    Metric("best_links", "links", "bisection links of the best geometry", False),
    Metric("best_bandwidth", "bytes/s", "bisection bandwidth per direction of the best geometry", False),
    Metric("best_per_node", "bytes/s", "bisection bandwidth per direction per node of the best geometry", False),
    Metric("worst_links", "links", "bisection links of the worst geometry", False),
    Metric("worst_bandwidth", "bytes/s", "bisection bandwidth per direction of the worst geometry", False),
    Metric("allowed_links", "links", "bisection links of the best allowed geometry", False),
    Metric("allowed_bandwidth", "bytes/s", "bisection bandwidth per direction of the best allowed geometry", False),
    Metric("speedup_best_over_worst", "1", "predicted speedup of the best geometry over the worst", None),
    Metric("speedup_best_over_allowed", "1", "predicted speedup of the best geometry over the best allowed", None),
    Metric("speedup_vs_first", "1", "best per-node bisection over the first machine's", False),
    Metric("speedup_vs_first_holding", "1", "best bisection over that of the first machine's smallest partition "
           "holding the size", False),
    Metric("first_holding_size", "nodes", "the first machine's smallest size that holds this one", None),
    Metric("per_node_vs_best", "1", "per-node bisection over the best slab's", False),
    Metric("routers", "1", "routers of the slab", None),
    Metric("shape", "1", "extent along each machine dimension (in the machine's units: midplanes, routers)", None),
    Metric("wrap", "1", "whether the slab wraps around along each dimension", None),
    Metric("links_per_dim", "links", "bisection links along each dimension", None),
    Metric("time_a", "s", "pairing time on geometry a (allowed or worst)", True),
    Metric("time_b", "s", "pairing time on geometry b (the best)", True),
    Metric("time_ratio", "1", "time on a over time on b", None),
    Metric("bisection_ratio", "1", "bisection of b over bisection of a", None),
    Metric("geometry", "", "partition geometry", None),
    Metric("best_geometry", "", "best geometry of the size", None),
    Metric("geometry_a", "", "geometry a (allowed or worst)", None),
    Metric("geometry_b", "", "geometry b (the best)", None),
)
"""Variables of ``evaluator partitions`` (partitions, --compare, --slabs, --pairing)."""

RDN_METRICS: tuple[Metric, ...] = tuple(
    Metric(f"{net}_{v}", u, f"{what} on the {net.upper()}, the faster routing at each point", True)
    for net in ("rdn", "tdn")
    for v, u, what in (("time", "s", "time of one exchange without background"),
                       ("time_bg", "s", "time of one exchange with background"),
                       ("net_time_bg", "s", "time of one exchange with background, router links only"),
                       ("hops", "1", "router-to-router links per byte that leaves its node"))) + (
    Metric("speedup_no_bg", "1", "speedup T_TDN / T_RDN without background", False),
    Metric("network_speedup", "1", "speedup T_TDN / T_RDN on router links only, with background", False),
    Metric("time_saved", "1", "1 - T_RDN / T_TDN: the fraction of communication time removed", False),
    Metric("hops_reduction", "1", "1 - RDN hops / TDN hops", False),
    Metric("hops_reduction_minimal", "1", "1 - RDN hops / TDN hops, both minimal", False),
    Metric("seconds", "s", "wall time of the point", None),
    Metric("refused", "", "why the evaluator refused the point ('' ran)", None),
    Metric("bound_refused", "", "why a bound of the point was not computed ('' computed)", None),
    Metric("tdn_oblivious_routing", "", "the TDN's fastest oblivious routing with background (its oblivious baseline)",
           None),
)
"""Variables of the RDN study (``evaluator study rdn``; dims ``pattern``, ``groups``) and of its speedup
table (``speedup``, ``time_saved``, ``speedup_no_bg``; dims ``mode``, ``groups``)."""

COST_METRICS: tuple[Metric, ...] = (
    Metric("cost", "currency", "price of the network's parts (evaluator.cost; the currency is the variable's units "
                               "and the dataset's cost_currency)", True),
    Metric("power", "W", "power the network's parts draw (evaluator.cost)", True),
    Metric("throughput_per_cost", "bytes/s/currency", "throughput over the network's cost", False),
    Metric("n_switches", "1", "packet switches (routers)", None),
    Metric("n_switch_ports", "1", "ports of the packet switches, the whole radix of each", None),
    Metric("n_ports_used", "1", "switch ports in use (to a node, a switch or an optical switch)", None),
    Metric("n_nics", "1", "network interfaces (one per node)", None),
    Metric("n_electrical_cables_short", "1", "copper cables within a rack (up to ~3 m)", None),
    Metric("n_electrical_cables_long", "1", "copper cables between neighbouring racks (up to ~7 m)", None),
    Metric("n_optical_cables_short", "1", "optical cables within a row of racks (up to ~30 m)", None),
    Metric("n_optical_cables_long", "1", "optical cables across the machine room (up to ~100 m)", None),
    Metric("n_transceivers", "1", "optical transceivers at switch or NIC ports", None),
    Metric("n_optical_switches", "1", "optical circuit switches", None),
    Metric("n_optical_switch_ports", "1", "ports of the optical circuit switches", None),
    Metric("switch_radix", "1", "ports of one packet switch (the largest)", None),
)
"""What a network costs (:mod:`evaluator.cost`, docs/cost.md): its price, power and counted parts, per point of
every sweep (and of ``eval``); ``cost`` is in the price table's currency (its ``units`` attribute)."""

BUYER_METRICS: tuple[Metric, ...] = (
    Metric("time", "s", "completion time of one exchange, per seed (the buyer study: the bandwidth bound; "
                        "allreduce_8B: with per-message latency)", True),
)
"""Variables of the buyer study (``evaluator study buyer``, docs/buyer.md) the tables above do not have: its
``time`` (and with it ``time_mean``, ``_min``, ``_max``, ``_p95`` over the seeds) is ranked smaller first; it was
refused as unrankable until 2026-12-06."""

TEMPLATES: tuple[tuple[str, Metric], ...] = (
    (r"max_load_(?P<cls>\w+)", MAX_LOAD),
    (r"(?P<net>rdn|tdn)_(?P<routing>\w+)_bound_s",
     Metric("{net}_{routing}_bound_s", "s", "wall time of the {routing} bound on the {net}", None)),
    (r"tdn_bg_slowdown_(?P<routing>\w+)",
     Metric("tdn_bg_slowdown_{routing}", "1", "the TDN's slowdown from the background with {routing}: time with "
                                             "background / time without - 1", True)),
    (r"gain_(?P<baseline>\w+?)(?P<no_bg>_no_bg)?",
     Metric("gain_{baseline}", "1", "RDN-GRAP's gain T_TDN / T_RDN against the TDN with {baseline} routing "
                                    "(ending _no_bg: without background)", False)),
    (r"network_gain_(?P<baseline>\w+)",
     Metric("network_gain_{baseline}", "1", "RDN-GRAP's gain against the TDN with {baseline} routing, router links "
                                            "only", False)),
    (r"(?P<net>rdn|tdn)_(?P<routing>\w+)_net_time_bg",
     Metric("{net}_{routing}_net_time_bg", "s", "time of one exchange on the {net} with {routing} routing and "
                                                  "background, router links only", True)),
    (r"(?P<net>rdn|tdn)_(?P<routing>\w+)_time_bg",
     Metric("{net}_{routing}_time_bg", "s", "time of one exchange on the {net} with {routing} routing and "
                                              "background", True)),
    (r"(?P<net>rdn|tdn)_(?P<routing>\w+)_time",
     Metric("{net}_{routing}_time", "s", "time of one exchange on the {net} with {routing} routing", True)),
    (r"(?P<net>rdn|tdn)_(?P<routing>\w+)_hops",
     Metric("{net}_{routing}_hops", "1", "router-to-router links per byte that leaves its node on the {net} with "
                                         "{routing} routing", True)),
)
"""Families of variables named by a pattern (regular expression over the whole name -> entry whose name and long
name are formatted with the pattern's groups): the per-class maxima, the RDN study's per-routing variables."""

ROW_LABELS: tuple[Metric, ...] = (
    Metric("decomposition", "", "task grid: tasks along each dimension", None),
    Metric("tile", "", "node tile: tasks per node along each dimension", None),
    Metric("router_block", "", "nodes of one router along each dimension", None),
)
"""Text variables that name what a row of a dataset is, where its dimension is only a counter (``evaluator tiles``:
a ``candidate`` is a decomposition, a node tile and a router block). A query table shows them instead of the
counter."""

HIDDEN: frozenset[str] = frozenset({
    "total_bytes", "phase_total_bytes", "optimal_completion_time_upper", "bound_status",
    "adaptive_completion_time_upper", "bound_gap", "bound_method", "bound_solver", "completion_time_alone",
    "interference", "phase_completion_time_alone", "jobs_per_s", "mean_wait_month", "submit", "start", "end",
    "requested_time", "mpi_fraction", "backfilled", "reservation", "injection_all", "injection_seq",
    "closed_links_all", "closed_links_seq", "n_geometries", "seconds", "refused", "utilisation_quantiles",
    "prism", "rank_tile", "bottleneck_all", "bottleneck_seq", "blocked_link", "blocked_reason", "shape", "wrap",
    "links_per_dim", "bound_refused",
    # what a network costs: shown when the ranking is by cost, power or throughput_per_cost (evaluator.query)
    "cost", "power", "throughput_per_cost", "n_switches", "n_switch_ports", "n_ports_used", "n_nics",
    "n_electrical_cables_short", "n_electrical_cables_long", "n_optical_cables_short", "n_optical_cables_long",
    "n_transceivers", "n_optical_switches", "n_optical_switch_ports", "switch_radix",
    # the RDN study's per-routing variables (its per-network bests and gains are shown)
    "{net}_{routing}_bound_s", "tdn_bg_slowdown_{routing}", "{net}_{routing}_net_time_bg", "{net}_{routing}_time_bg",
    "{net}_{routing}_time", "{net}_{routing}_hops",
})
"""Entries (or families of :data:`TEMPLATES`, by their templated name) a query table leaves out unless it ranks by
them: inputs, the feasible side of a bound, the simulation's bookkeeping, per-routing details; see :func:`shown`."""


def _table(*groups: tuple[Metric, ...]) -> dict[str, Metric]:
    """Entries by name, first occurrence first; a name in two groups must agree on its units and direction."""
    out: dict[str, Metric] = {}
    for m in (m for g in groups for m in g):
        first = out.setdefault(m.name, m)
        if (first.units, first.smaller_is_better) != (m.units, m.smaller_is_better):
            raise AssertionError(f"metric table: {m.name!r} has two entries that disagree: {first} and {m}")
    return out


TABLE: dict[str, Metric] = _table(METRICS, TIME_METRICS, TEXT_METRICS, PATH_METRICS, BOUND_METRICS, PHASE_METRICS,
                                  SCHEDULE_METRICS, JOB_METRICS, TILES_METRICS, PARTITION_METRICS, RDN_METRICS,
                                  COST_METRICS, BUYER_METRICS, ROW_LABELS, (LINK_LOAD, LINK_CAPACITY, MESSAGE_FINISH))
"""The one metric table: every variable a command writes, by name (units, long name, direction), in the order a
query table shows them; patterned families are in :data:`TEMPLATES`. Direction ``None``: not ranked."""


def max_load_name(link_class: str) -> str:
    """Variable name of the largest load on a link of ``link_class`` (``torus-dim0`` -> ``max_load_torus_dim0``)."""
    return "max_load_" + link_class.replace("-", "_")


_SEED_STAT = re.compile(r"(?P<base>\w+)_(?P<stat>mean|std|min|max|p95|p05)")
"""A summary over seeds of a variable with an entry (the RDN study's ``speedup_mean``, ``gain_adaptive_std``;
``evaluator query --draws``'s ``completion_time_p95``): its base's units; its base's direction for the mean, minimum,
maximum and percentiles, none for the standard deviation."""

_STAT_WORDS = {"mean": "mean", "std": "sample standard deviation", "min": "minimum", "max": "maximum",
               "p95": "95th percentile", "p05": "5th percentile"}


def _seed_stat(name: str) -> Metric | None:
    match = _SEED_STAT.fullmatch(str(name))
    if not match:
        return None
    try:
        base = metric(match["base"])
    except KeyError:
        return None
    stat = match["stat"]
    return Metric(name, base.units, f"{base.long_name} ({_STAT_WORDS[stat]} over seeds)",
                  None if stat == "std" else base.smaller_is_better)


def metric(name: str) -> Metric:
    """The table entry of ``name`` (:data:`TABLE`, then a summary over seeds of an entry, ``<name>_mean``,
    ``_std``, ``_min``, ``_max``, then the families of :data:`TEMPLATES`); ``KeyError`` if none."""
    if name in TABLE:
        return TABLE[name]
    stat = _seed_stat(name)
    if stat is not None:
        return stat
    for pattern, m in TEMPLATES:
        match = re.fullmatch(pattern, str(name))
        if match:
            return Metric(name, m.units, m.long_name.format(**match.groupdict()), m.smaller_is_better)
    raise KeyError(name)


def shown(name: str) -> bool:
    """Whether a query table shows ``name`` next to the variable it ranks by (not in :data:`HIDDEN`)."""
    if name in TABLE:
        return name not in HIDDEN
    match = _SEED_STAT.fullmatch(str(name))
    if match and _seed_stat(name) is not None:
        return match["stat"] == "mean" and shown(match["base"])
    for pattern, m in TEMPLATES:
        if re.fullmatch(pattern, str(name)):
            return m.name not in HIDDEN
    return False


def smaller_is_better(name: str) -> bool:
    """Ranking direction of a variable from the table: True (smaller first) or False (larger first).

    ``KeyError`` for a variable with no entry or an entry without a direction (not ranked); callers check
    :func:`rankable` first and refuse the others.
    """
    direction = metric(name).smaller_is_better
    if direction is None:
        raise KeyError(name)
    return direction


def rankable(ds: xr.Dataset) -> list[str]:
    """Variables of ``ds`` a query can rank by: numeric, not per link, with a direction in the metric table."""
    out = []
    for v in ds.data_vars:
        if ds[v].dtype.kind not in "fiu" or "link" in ds[v].dims:
            continue
        try:
            smaller_is_better(str(v))
        except KeyError:
            continue
        out.append(str(v))
    return sorted(out)


def first_rankable(ds: xr.Dataset) -> str | None:
    """The dataset's first rankable variable in the metric table's order (``completion_time`` for ``eval`` and
    ``sweep``, ``mean_wait`` for ``schedule``, ``time_all`` for ``tiles``); None when it has none."""
    ranked = rankable(ds)
    return next((name for name in TABLE if name in ranked), ranked[0] if ranked else None)


FULLER_TIMES = {"time_max_min": "the time under flow-level max-min sharing",
                "time_with_latency": "the time with the network's latency model"}
"""Times that add to the bandwidth bound what it leaves out (:data:`TIME_METRICS`), the fullest first (flow-level
sharing with latency, then per-message latency), each with its words for people."""


def predicted_time(ds: xr.Dataset) -> str:
    """The time a ranking of ``ds`` goes by when not told: the fullest of :data:`FULLER_TIMES` that the dataset
    holds for every row whose ``completion_time`` (the bandwidth bound) is finite, else ``completion_time``. A
    network with a latency model (``topology.latency``) or ``sharing=max_min`` gives its points those times; a
    64 B allreduce is then ranked by its latency, not by a bound 10,000 times smaller. A sweep that mixes points
    with and without the model keeps ``completion_time`` (its times are not comparable across the points)."""
    if "completion_time" not in ds:
        return "completion_time"
    bound = np.isfinite(np.asarray(ds["completion_time"].values, dtype=float))
    for name in FULLER_TIMES:
        if name in ds and ds[name].dims == ds["completion_time"].dims and bound.any():
            values = np.asarray(ds[name].values, dtype=float)
            if np.isfinite(values[bound]).all():
                return name
    return "completion_time"


def with_units(ds: xr.Dataset) -> xr.Dataset:
    """``ds`` with a ``units`` attribute on every data variable (in place; returned): a variable without one gets
    its metric table entry's (and its long name where it has none), a boolean ``"1"``, text ``""`` (no unit).

    Every command's dataset passes through it, so that a reader (and CF tools) finds the SI unit of every
    variable; a numeric variable without a table entry keeps no unit and fails the test that checks them.
    """
    for name in ds.data_vars:
        attrs = ds[name].attrs
        if "units" in attrs:
            continue
        try:
            entry = metric(str(name))
        except KeyError:
            entry = None
        kind = ds[name].dtype.kind
        if entry is not None and (kind in "fiu") == (entry.units not in ("",)):
            attrs["units"] = entry.units
            attrs.setdefault("long_name", entry.long_name)
        elif kind == "b":
            attrs["units"] = "1"
        elif kind in "USO":
            attrs["units"] = ""
    return ds


@dataclasses.dataclass(frozen=True)
class LinkTable:
    """Per-link coordinates of a topology (DESIGN.md link layout): ``capacity`` (bytes/s per direction), ``src``
    and ``dst`` (router ids, -1: node side), ``class_names``, ``node`` (node of an injection/ejection link)."""

    capacity: Float[np.ndarray, "link"]
    src: Int[np.ndarray, "link"]
    dst: Int[np.ndarray, "link"]
    class_names: Shaped[np.ndarray, "link"]
    node: Int[np.ndarray, "link"]

    @classmethod
    def of(cls, topology) -> LinkTable:
        return cls(np.asarray(topology.capacity), np.asarray(topology.link_src), np.asarray(topology.link_dst),
                   topology.link_class_names(), np.asarray(topology.link_node))

    @functools.cached_property
    def index(self) -> pd.Index:
        """The ``link`` coordinate, ``0 .. links - 1``, as the index a dataset keeps (made once per table: a
        dataset built with it shares it, no copy per dataset)."""
        return pd.Index(np.arange(self.capacity.shape[0]), name="link")


def labels(values: Any) -> Shaped[np.ndarray, "..."]:
    """``values`` (texts) as an array of Python strings of the same shape: unicode for a small array; an object array
    for a large one of references to a few texts (a sweep's 10^6 reasons), built by indexing its distinct values
    (pandas' hash factorisation) instead of converting every element to fixed-width unicode (10^6 reasons of 80
    characters: 320 MB and 1.1 s of the dataset's 3 s). netCDF stores both as the same variable-length strings."""
    arr = np.asarray(values)
    if arr.dtype != object or arr.size < 1024:
        return arr.astype(str)
    import pandas as pd

    codes, uniques = pd.factorize(arr.reshape(-1), use_na_sentinel=False)
    return np.asarray([str(u) for u in uniques], dtype=object)[codes].reshape(arr.shape)


def results_dataset(
    dims: Sequence[str],
    shape: Sequence[int],
    metrics: Mapping[str, Float[np.ndarray, "point"]],
    max_load: Mapping[str, Float[np.ndarray, "point"]],
    bottleneck: Shaped[np.ndarray, "point"],
    *,
    feasible: Bool[np.ndarray, "point"] | None = None,
    reason: Shaped[np.ndarray, "point"] | None = None,
    coords: Mapping[str, Any] | None = None,
    link_load: Float[np.ndarray, "point link"] | None = None,
    links: LinkTable | None = None,
    attrs: Mapping[str, Any] | None = None,
    phases: Mapping[str, Any] | None = None,
) -> xr.Dataset:
    """Results of ``prod(shape)`` design points as a dataset with dimensions ``dims``.

    Parameters
    ----------
    metrics
        Flat per-point arrays of every name in :data:`METRIC_NAMES`, and of the
        :data:`PATH_METRIC_NAMES` and :data:`TIME_METRIC_NAMES` present.
    max_load
        Flat per-point largest load per link class name, in the order given.
    bottleneck
        Flat per-point class of the busiest link (``"none"``; ``""`` where infeasible).
    feasible, reason
        Sweep grids: whether each point's config is valid and why not.
    link_load
        ``[point, link]`` bytes, kept on request; ``links`` adds the capacity
        and the ``link_src``/``link_dst``/``link_class``/``link_node`` coordinates.
    phases
        Phased traffic: ``names`` (one label per phase), flat ``[point, phase]``
        arrays of every :data:`PHASE_METRICS` name and ``phase_bottleneck``
        (class names, ``""`` where a point has no such phase).
    """
    dims = tuple(dims)
    shape = tuple(int(s) for s in shape)

    def grid(a) -> Shaped[np.ndarray, "*shape"]:
        return np.asarray(a).reshape(shape)

    data: dict[str, Any] = {}
    for m in METRICS:
        data[m.name] = (dims, grid(metrics[m.name]), m.attrs)
    for m in PATH_METRICS + TIME_METRICS:
        if m.name in metrics:
            data[m.name] = (dims, grid(metrics[m.name]), m.attrs)
    for cname, values in max_load.items():  # (-inf from the kernel: no link of the class; NaN says "no value")
        values = np.asarray(values, dtype=np.float64)
        data[max_load_name(cname)] = (dims, grid(np.where(np.isneginf(values), np.nan, values)),
                                      {"units": MAX_LOAD.units, "long_name": MAX_LOAD.long_name.format(cls=cname)
                                       + " (NaN: the network has no link of this class)"})
    long = "class of the link that sets the completion time"
    if feasible is not None:
        long += " ('' if infeasible)"
    data["bottleneck"] = (dims, grid(labels(bottleneck)), {"long_name": long})
    if feasible is not None:
        data["feasible"] = (dims, grid(feasible), {"long_name": "whether the point's config is valid"})
    if reason is not None:
        data["reason"] = (dims, grid(labels(reason)),
                          {"long_name": "why the point is infeasible: 'field: what is allowed' ('' if feasible)"})
    all_coords: dict[str, Any] = dict(coords or {})
    if phases is not None:
        names = [str(x) for x in phases["names"]]
        pshape = shape + (len(names),)
        for m in PHASE_METRICS:
            if m.name in phases:
                data[m.name] = (dims + ("phase",), np.asarray(phases[m.name], dtype=np.float64).reshape(pshape),
                                m.attrs)
        data["phase_bottleneck"] = (dims + ("phase",), labels(phases["phase_bottleneck"]).reshape(pshape), {"long_name": "class of the link that sets the phase's time"})
        all_coords["phase"] = ("phase", np.asarray(names, dtype=str), {"long_name": "exchange, in the order done"})
    if link_load is not None:
        ll = np.asarray(link_load)
        data["link_load"] = (dims + ("link",), ll.reshape(shape + (ll.shape[-1],)), LINK_LOAD.attrs)
        if links is not None:
            data["link_capacity"] = (("link",), links.capacity, LINK_CAPACITY.attrs)
            all_coords.update({
                "link": links.index,
                "link_src": ("link", links.src, {"long_name": "source router id (-1: node side)"}),
                "link_dst": ("link", links.dst, {"long_name": "destination router id (-1: node side)"}),
                "link_class": ("link", links.class_names),
                "link_node": ("link", links.node, {"long_name": "node id of injection/ejection links"}),
            })
    ds = xr.Dataset(data, coords=all_coords)
    if attrs:
        ds.attrs.update(attrs)
    return with_units(ds)


DRAW_QUANTILE = 0.95
"""The tail :func:`draw_stats` (and :func:`evaluator.query.draw_summary`) reports: the value that this share of the
draws do at least as well as (the 95th percentile of a time, ``<name>_p95``; the 5th of a throughput,
``<name>_p05``)."""


def check_draw_axes(draws: Any, dims: Sequence[str], taken: Sequence[tuple[str, str | None]] = ()) -> list[str]:
    """``draws`` checked as the axes of a summary over draws (:func:`draw_stats`): a non-empty list of axes of
    ``dims``, none of them ``taken`` (``(what, axis)`` pairs the caller uses otherwise: a plot's x and series);
    repeats dropped. A :class:`~evaluator.errors.ConfigError` naming ``draws`` otherwise."""
    dims = [str(d) for d in dims]
    if isinstance(draws, str) or not isinstance(draws, (list, tuple)) or not draws:
        raise ConfigError("draws", draws, f"a non-empty list of axes of the dataset: {dims}")
    draws = list(dict.fromkeys(str(d) for d in draws))
    used = [(what, axis) for what, axis in taken if axis is not None]
    bad = [d for d in draws if d not in dims or d in {axis for _, axis in used}]
    if bad:
        other = " and ".join(f"{what} ({axis!r})" for what, axis in used)
        raise ConfigError("draws", bad, f"axes of the dataset{' other than ' + other if other else ''}: "
                                        f"{[d for d in dims if d not in {axis for _, axis in used}]}",
                          None if dims else "This dataset has no axes (a single design point).")
    chosen = [d for d in draws if not is_draw_axis(d)]
    if chosen:  # averaging over job sizes or routings is no summary of random draws
        seeds = [d for d in dims if is_draw_axis(d) and d not in {axis for _, axis in used}]
        raise ConfigError("draws", chosen, f"axes of random draws, a seed's (routing.seed, placement.seed, "
                                           f"traffic.seed, seed, ...): {seeds or 'this dataset has none'}",
                          "An axis of choices (a size, a routing) is ranked (--over) or kept, not averaged.")
    return draws


def is_draw_axis(name: str) -> bool:
    """Whether an axis named ``name`` holds random draws: a seed (``seed``, ``routing.seed``, ``jobs.0.traffic.seed``,
    ``tdn_seed``), whose values sample what a design point gives rather than choose it."""
    return name == "seed" or name.endswith((".seed", "_seed"))


def draw_stats(values: xr.DataArray, draws: Sequence[str], smaller: bool | None) -> xr.Dataset:
    """``values`` summarised over the axes ``draws``: ``mean``, ``max``, ``min`` and ``tail`` (the
    :data:`DRAW_QUANTILE` quantile on the bad side: the 95th percentile where smaller is better, the 5th where
    larger; linear interpolation, ``numpy.quantile``'s default; NaN everywhere where ``smaller`` is None, a
    variable without a direction). A point with a NaN or infinite draw (infeasible) is NaN in every summary: a
    summary of the feasible draws only would be one-sided. ``attrs["quantile"]``: the tail's quantile.

    The one definition of a summary over draws: :func:`evaluator.query.draw_summary` (``evaluator query
    --draws``), :func:`evaluator.plot.plot_sweep` (``evaluator plot --draws``) and
    :func:`evaluator.evaluation.evaluate_draws` (``evaluator eval`` and ``map`` under a random routing) use it."""
    draws = list(draws)
    every = np.isfinite(values).all(draws)
    q = DRAW_QUANTILE if smaller in (True, None) else 1.0 - DRAW_QUANTILE
    with np.errstate(invalid="ignore"):  # (an infinite draw: numpy's quantile warned "invalid value encountered in
        # subtract" on stderr under `evaluator plot`; the point is NaN below)
        stats = {"mean": values.mean(draws, skipna=False), "max": values.max(draws, skipna=False),
                 "min": values.min(draws, skipna=False)}
        tail = values.quantile(q, dim=draws, skipna=False).drop_vars("quantile")
    stats["tail"] = tail if smaller is not None else xr.full_like(tail, np.nan)
    out = xr.Dataset({k: v.where(every) for k, v in stats.items()})
    out.attrs["quantile"] = q
    return out
