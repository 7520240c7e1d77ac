"""Evaluate design points: :func:`evaluate` (one point, an :class:`xarray.Dataset`) and :func:`evaluate_batch`
(many traffic/placement variants of one topology and routing, per-point NumPy arrays).

Traffic is sparse (:class:`~evaluator.traffic.Traffic`), dense rank-one
(:class:`~evaluator.traffic.DenseTraffic`, e.g. all-to-all on 49,152 nodes
without its 2.4e9 flows) or phased (:class:`~evaluator.traffic.PhasedTraffic`).
The work is the batch engine's (:mod:`evaluator._batch`): blocks of points
to the device, one compilation per shape bucket, results back to the host.
(The package re-exports the functions: ``evaluator.evaluate`` is the function,
this module ``evaluator.evaluation``.) :func:`evaluate_groups` is the engine's group-level entry point for callers
that hold many groups of points of one network (a sweep's chunk: flow banks planned per network, placements drawn
from seeds on the device; see :mod:`evaluator._batch.groups`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np
import xarray as xr

from ._batch import output
from ._batch.banked import BankedPoints, BankPlan
from ._batch.blocks import bucket_size
from ._batch.checks import DEFAULT_BLOCK_SIZE, as_routing, broadcast, check_pair, check_type
from ._batch.dispatch import Results
from ._batch.groups import GroupResults, evaluate_groups
from ._batch.run import run_batch
from ._types import Float, Int, Shaped
from .dataset import draw_stats
from .display import progress_bar
from .errors import positive_int, refuse_ignored, require
from .placement import Placement
from .routing import Routing
from .topology import Topology
from .traffic import AbstractTraffic

__all__ = ["evaluate", "evaluate_batch", "evaluate_draws", "DRAWS", "BatchResult", "bucket_size", "evaluate_groups",
           "GroupResults", "BankedPoints", "BankPlan", "BEYOND_BOUND", "MAX_DRAWS", "check_draws",
           "check_max_min_keys"]

DRAWS = 16
"""How many draws of a random routing (hashed ECMP's hash seeds, the configured one first) ``evaluator eval`` and
``evaluator map`` evaluate by default (:func:`evaluate_draws`)."""


@dataclasses.dataclass
class BatchResult:
    """Per-point results of :func:`evaluate_batch` (NumPy, leading axis ``point``)."""

    topology: Topology
    routing: Routing
    metrics: dict[str, Float[np.ndarray, "point *class"] | Int[np.ndarray, "point"]]
    link_load: Float[np.ndarray, "point link"] | None
    phases: dict[str, Any] | None = None
    """Phased traffic: ``names`` and ``[point, phase]`` arrays ``phase_completion_time``, ``phase_total_bytes``,
    ``phase_bottleneck_class`` (-1: no link used, -2: no such phase); None when no point is phased."""
    flows: list | None = None
    """``sharing="max_min"``: per point, a list (one per phase) of its messages' finish times (s from the phase's
    start, NaN for a flow of no bytes); None otherwise."""

    def bottleneck_names(self) -> Shaped[np.ndarray, "point"]:
        """The class of every point's busiest link (``"none"``: no link used)."""
        return output.bottleneck_names(self.topology, self.metrics["bottleneck_class"])

    def phase_bottleneck_names(self) -> Shaped[np.ndarray, "point phase"]:
        """``[point, phase]`` class of each phase's busiest link ("none"; "" where a point has no such phase)."""
        return output.phase_bottleneck_names(self.topology, self.phases["phase_bottleneck_class"])

    def to_dataset(self, dim: str = "variant") -> xr.Dataset:
        """Results as a dataset with dimension ``dim`` (and ``link`` if loads were kept)."""
        return output.to_dataset(self.topology, self.routing, Results(self.metrics, self.link_load, self.phases,
                                                                      self.flows), dim)


def check_max_min_keys(sharing: Any, fairness: Any, progression: Any) -> None:
    """Refuse ``fairness`` or ``progression`` away from their defaults where nothing reads them (an
    :class:`~evaluator.errors.IgnoredKeyError` naming the key; kept inside
    :func:`~evaluator.errors.ignored_keys_kept`, as a sweep's points are): without ``sharing="max_min"`` (the bound
    has no weights and no message order), and ``fairness="job"`` for the points of :func:`evaluate`,
    :func:`evaluate_batch` and :func:`evaluate_draws`, each of them one job (job-fair weights of one job are the
    flow-fair ones: several jobs share by job in :func:`evaluator.jobs.evaluate_jobs`). A value that is no option
    at all is left to :func:`~evaluator._batch.run.run_batch`, which names the options."""
    from ._batch.flowlevel import FAIRNESS, PROGRESSIONS, SHARINGS

    if not all(isinstance(v, str) for v in (sharing, fairness, progression)):
        return
    if sharing not in SHARINGS or fairness not in FAIRNESS or progression not in PROGRESSIONS:
        return
    for key, value, default in (("fairness", fairness, "flow"), ("progression", progression, "phase")):
        if value != default:
            refuse_ignored(sharing == "max_min", key, value, f"{default!r} (the default) unless "
                           f"sharing='max_min': only flow-level max-min sharing reads {key}; sharing={sharing!r} is "
                           "the contention bound", f"Pass sharing='max_min', or drop {key}={value!r}.")
    if sharing == "max_min":
        refuse_ignored(fairness != "job", "fairness", fairness, "'flow' or 'rtt' for one job's points (job-fair "
                       "weights of a single job are the flow-fair ones)",
                       "Several jobs share by job in evaluator.jobs.evaluate_jobs(..., fairness='job').")


def evaluate_batch(
    topology: Topology,
    routing: Routing | str,
    traffics: AbstractTraffic | Sequence[AbstractTraffic],
    placements: Placement | Sequence[Placement],
    keep_link_load: bool = False,
    block_size: int = DEFAULT_BLOCK_SIZE,
    *,
    chunk_size: int | None = None,
    sharing: str = "bound",
    fairness: str = "flow",
    progression: str = "phase",
) -> BatchResult:
    """Evaluate many traffic/placement variants of one (topology, routing).

    ``traffics`` and ``placements`` are sequences of equal length, or a single
    item broadcast against the other. A traffic is a sparse
    :class:`~evaluator.traffic.Traffic`, a dense
    :class:`~evaluator.traffic.DenseTraffic` (never materialised) or a
    :class:`~evaluator.traffic.PhasedTraffic` (phases one after another).

    Flow and task arrays are padded to a shape bucket (:func:`bucket_size`)
    and the points go to the device in blocks of ``block_size`` points (at
    most the bucket of their count; one transfer and one call per block), so
    the kernel compiles once per bucket and a second block compiles nothing.
    ``chunk_size`` is the old name of ``block_size``, still accepted. Inside
    a call the block is evaluated a step of points at a time (on CPU as many
    as stay in cache, often one; on an accelerator the whole block). When
    every point shares one flow list (a placement sweep) the flows are
    transferred once and each block carries only its placements. All blocks
    are queued before any result is fetched; link loads are reduced to the
    metrics on the device and returned only with ``keep_link_load`` (memory:
    points x links x 8 bytes). ``metrics`` holds per-point NumPy arrays:
    ``completion_time`` (s), ``throughput`` and
    ``effective_injection_bandwidth`` (bytes/s), ``bottleneck_class`` and
    ``bottleneck_link`` (-1: no link used), ``mean_hops``, ``total_bytes``,
    ``off_node_bytes`` (bytes between tasks on different nodes; the on-node
    share is ``1 - off_node_bytes / total_bytes``), ``max_load_class[point,
    class]`` (bytes) and ``paths_per_pair`` (the mean number of router paths
    a communicating router pair's bytes are spread over: 1 for DOR, NaN for
    the Dragonfly routings; see :data:`evaluator.dataset.PATH_METRICS`).

    ``routing`` may be a registered routing kind's name (``"minimal"``: that
    kind with its default parameters). An argument of the wrong type is a
    :class:`~evaluator.errors.ConfigError` naming it, the type given and the
    type expected. A call whose arrays would not fit in memory (estimated
    before anything is allocated: flow and task arrays, one block on the
    device from its traced program, the results; see
    :func:`evaluator._batch.memory.working_set`) is refused with a
    :class:`~evaluator.errors.ResourceError` naming the argument that weighs
    most (``traffics``, ``block_size`` (or ``chunk_size``, as given) or
    ``keep_link_load``).

    With a latency model on the topology (:meth:`~evaluator.topology.Topology.with_latency`) ``metrics`` also
    holds ``time_with_latency`` and ``latency_share`` (and ``phases`` ``phase_time_with_latency``).
    ``sharing="max_min"`` adds ``time_max_min`` (flow-level max-min fair sharing, every flow starting after its
    latency; ``fairness``: ``"flow"``, ``"job"`` or ``"rtt"``, :data:`evaluator._batch.flowlevel.FAIRNESS`;
    ``progression``: ``"phase"`` (global steps) or ``"rank"`` (each rank goes on by itself, as MPI ranks do:
    :data:`evaluator._batch.flowlevel.PROGRESSIONS`)),
    ``phase_time_max_min`` and, per point, the messages' finish times (:attr:`BatchResult.flows`).
    """
    check_max_min_keys(sharing, fairness, progression)
    routing, res = run_batch(topology, routing, traffics, placements, keep_link_load, block_size, chunk_size,
                             sharing=sharing, fairness=fairness, progression=progression)
    return BatchResult(topology, routing, *res)


def evaluate(topology: Topology, traffic: AbstractTraffic, placement: Placement,
             routing: Routing | str, bounds: bool | str = False, bound_solver: str = "highs", *,
             sharing: str = "bound", fairness: str = "flow", progression: str = "phase") -> xr.Dataset:
    """Link demand and predicted performance of one design point.

    Returns a dataset with ``link_load[link]`` (bytes), ``link_capacity``
    (bytes/s per direction), coordinates ``link_src``, ``link_dst``,
    ``link_class``, ``link_node``, and scalar ``completion_time`` (s),
    ``throughput`` (bytes/s), ``effective_injection_bandwidth`` (bytes/s),
    ``bottleneck`` (link class), ``max_load_<class>`` (bytes), ``mean_hops``,
    ``total_bytes``, ``off_node_bytes`` and ``paths_per_pair`` (router paths
    per communicating router pair). Arguments are checked as in
    :func:`evaluate_batch` (``routing`` may be a routing kind's name); a point
    too large for memory is refused naming ``traffic``. ``attrs["notes"]``
    (where the routing has some): what a reader should know about this
    routing on these router pairs (:meth:`~evaluator.routing.Routing.notes`).

    ``bounds`` (opt-in; off costs nothing): ``True`` adds
    ``optimal_completion_time`` (s), a certified lower bound on the time of
    any routing (:func:`evaluator.lp.bounds.optimal`: the edge LP, or
    Garg-Konemann when it is too large; the dual side of the interval),
    ``optimal_completion_time_upper`` (s, the feasible side: flows that
    reach it) and ``routing_efficiency`` = optimal / achieved completion
    time (<= 1; 1: no routing is faster); a method name (``"edge"``,
    ``"garg_konemann"``) picks the method. ``"dragonfly_adaptive"`` is the
    ideal-adaptive bound of the Dragonfly routings (minimal, valiant,
    valiant_router), stored as ``adaptive_completion_time``,
    ``adaptive_completion_time_upper`` and ``adaptive_efficiency``. The
    attrs ``bound_method``, ``bound_solver``, ``bound_gap`` (``upper / lower
    - 1``) and ``bound_bounds`` (which routings it bounds) say how it was
    computed; ``bound_solver`` is ``"highs"`` or ``"pdhg"``.

    Time beyond the bound (docs/latency.md): with a latency model on the topology the dataset adds
    ``time_with_latency`` (each phase's bound plus its slowest message's latency, summed) and ``latency_share``;
    ``sharing="max_min"`` adds ``time_max_min`` (flow-level max-min fair sharing with ``fairness`` weights, each
    message starting after its latency; ``progression="rank"``: every rank goes on as soon as its own messages
    allow, as MPI ranks do) and ``message_finish_time`` (s from its phase's start, or from the exchange's with
    ``progression="rank"``; dims ``message``, and ``phase`` for phased traffic). ``completion_time`` stays the
    bandwidth bound.
    """
    check_type("topology", "topology", topology)
    check_type("traffic", "traffic", traffic)
    check_type("placement", "placement", placement)
    output.check_bounds(bounds, bound_solver)
    check_max_min_keys(sharing, fairness, progression)
    routing = as_routing(routing)
    notes: list[tuple[str, ...]] = []  # (host work done while the point is on the device)
    routing, res = run_batch(topology, routing, [traffic], [placement], True, 1, single=True,
                             meanwhile=lambda: notes.append(output.point_notes(topology, traffic, placement, routing)),
                             sharing=sharing, fairness=fairness, progression=progression)
    ds = output.to_dataset(topology, routing, res, None)
    ds.attrs.update({"traffic": traffic.name, "placement": placement.name})
    output.add_message_times(ds, res, sharing, fairness, progression)
    output.add_notes(ds, notes[0] if notes else output.point_notes(topology, traffic, placement, routing))
    if bounds is not False:
        output.add_bounds(ds, topology, traffic, placement, "auto" if bounds is True else bounds, bound_solver)
    return ds


MAX_DRAWS = 10_000
"""The most draws :func:`evaluate_draws` takes (each one evaluation of every point; its routing specs are listed
first): more are refused before anything is made."""


def check_draws(field: str, k, what: str = "draws of the routing, each one evaluation of every point") -> int:
    """A count of draws: an integer in ``[1, MAX_DRAWS]`` (a :class:`ConfigError` naming ``field`` and ``what``
    they are otherwise)."""
    k = positive_int(field, k)
    require(k <= MAX_DRAWS, field, k, f"an integer in [1, {MAX_DRAWS:,}] ({what})")
    return k


BEYOND_BOUND = ("time_with_latency", "time_max_min")
"""The times :func:`evaluate` gives beyond the bandwidth bound (a latency model, max-min sharing): with either,
:func:`evaluate_draws` summarises them over the draws too."""


def evaluate_draws(topology: Topology, routing: Routing | str, traffics: AbstractTraffic | Sequence[AbstractTraffic],
                   placements: Placement | Sequence[Placement], k: int = DRAWS, *, progress: bool = False,
                   sharing: str = "bound", fairness: str = "flow", progression: str = "phase") -> xr.Dataset | None:
    """Completion times of the points ``(traffics, placements)`` (as :func:`evaluate_batch` pairs them) under
    ``k`` draws of ``routing``, where one spec of it is one random draw (:meth:`~evaluator.routing.Routing.draws`:
    hashed ECMP's hash seeds, its own first); None for a routing whose spec determines its paths.

    One evaluation of a random routing is one draw, and its best point may be that draw's luck; this is what the
    point gives over ``k`` of them. Returns ``completion_time[point, draw]`` (s; the draws labelled as the
    routing labels them, ``ecmp-s0``), one :func:`evaluate_batch` call per draw (hashed ECMP's draws share one
    compilation), and over the draws ``completion_time_mean``, ``completion_time_p95``, ``completion_time_max``
    and ``completion_time_min`` (:func:`evaluator.dataset.draw_stats`: a point with an infeasible draw is NaN in
    each, never a summary of its feasible draws only). ``progress``: a progress bar over the draws (stderr).

    Where the topology has a latency model, or ``sharing="max_min"``, every draw of every point is evaluated by
    :func:`evaluate` with ``sharing``, ``fairness`` and ``progression`` instead, and the times beyond the bound
    that it gives (:data:`BEYOND_BOUND`) are summarised the same way (``time_with_latency[point, draw]``,
    ``time_with_latency_mean``, ...): the bandwidth bound alone is not the time such a point is read by.
    """
    k = check_draws("draws", k)
    check_type("topology", "topology", topology)
    check_max_min_keys(sharing, fairness, progression)
    trs, pls = broadcast(traffics, placements)  # (checked even where the routing has no draws: None is an answer)
    for i, (tr, pl) in enumerate(zip(trs, pls)):
        check_pair(topology, tr, pl, None if len(trs) == 1 else i, ("traffics", "placements"))
    specs = as_routing(routing).draws(k)
    if not specs:
        return None
    bar = progress_bar(specs, enabled=progress, desc=f"draws of {specs[0].kind}", unit="draw", leave=False)
    if getattr(topology, "latency", None) is None and sharing == "bound":
        times = {"completion_time": np.stack([evaluate_batch(topology, spec, traffics, placements)
                                              .metrics["completion_time"] for spec in bar], axis=1)}
    else:
        one = [[evaluate(topology, tr, pl, spec, sharing=sharing, fairness=fairness, progression=progression)
                for tr, pl in zip(trs, pls)] for spec in bar]
        names = ["completion_time"] + [v for v in BEYOND_BOUND if v in one[0][0]]
        times = {v: np.array([[float(d[v]) for d in row] for row in one]).T for v in names}
    ds = xr.Dataset({v: (("point", "draw"), t, {"units": "s"}) for v, t in times.items()},
                    coords={"point": np.arange(len(times["completion_time"])), "draw": [s.label for s in specs]})
    for v in times:
        stats = draw_stats(ds[v], ["draw"], True)
        for stat, name in (("mean", "mean"), ("tail", "p95"), ("max", "max"), ("min", "min")):
            ds[f"{v}_{name}"] = stats[stat].assign_attrs(units="s")
        ds.attrs["quantile"] = stats.attrs["quantile"]
    return ds
