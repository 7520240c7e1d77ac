"""Groups of points of one (topology, routing), whatever their traffic: the one entry point of a sweep's chunk.

:func:`evaluate_groups` takes groups of points (:class:`~evaluator._batch.banked.BankedPoints`: a traffic and
its points' placements, given or drawn from seeds) and sends each the way its traffic and the routing need:

* flow lists, bandwidth model only: the banked runner (:mod:`.banked`: flows from banks on the device,
  placements drawn inside the call);
* dense traffic: the dense runner (:mod:`.dispatch`);
* phased traffic, a latency model, flow-level sharing: the whole batch's path (:func:`.run.run_batch`, what
  :func:`evaluator.evaluate_batch` runs), placements drawn on the host;
* a path-set routing (:attr:`~evaluator.routing.Routing.needs_pairs`): bound to the points' router pairs
  (:mod:`.pathsets`); a point with a pair it cannot route (a hop limit too small) is infeasible, with its own
  first such pair named, and the other points are evaluated again without it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

from .._types import Int, Shaped
from ..errors import ConfigError, positive_int, require
from ..placement import Placement, SeededPlacement
from ..routing import Routing, unroutable_pair
from ..topology import Topology
from . import output
from .banked import BankedPoints, BankPlan, run_banked
from .checks import DEFAULT_BLOCK_SIZE, as_routing, check_pair, check_type, short
from .compiled import batch_kernel
from .pathsets import router_pairs
from .run import run_batch

__all__ = ["GroupResults", "evaluate_groups"]


class GroupResults(NamedTuple):
    """What :func:`evaluate_groups` gives back: the evaluated points' ``positions`` (as given), their
    ``metrics`` and ``link_load`` (or None), ``phases`` (phased traffic: ``names``, ``[point, phase]`` arrays and
    ``phase_bottleneck`` names; else None), ``infeasible`` (``(positions, error)`` of points refused one by
    one: a path set's unroutable pairs), and ``compile_s``, ``eval_s``, ``n_compiles`` (the banked runner's
    compilations; 0 elsewhere)."""

    positions: Int[np.ndarray, "point"]
    metrics: dict[str, Shaped[np.ndarray, "point ..."]]
    link_load: Any
    phases: dict[str, Any] | None
    infeasible: list[tuple[Int[np.ndarray, "point"], ConfigError]]
    compile_s: float
    eval_s: float
    n_compiles: int


def _empty(infeasible: list) -> GroupResults:
    return GroupResults(np.zeros(0, np.int64), {}, None, None, infeasible, 0.0, 0.0, 0)


def evaluate_groups(topology: Topology, routing: Routing, groups: Sequence[BankedPoints], *, keep_link_load: bool,
                    chunk_size: int, sharing: str = "bound", fairness: str = "flow", progression: str = "phase",
                    banks: BankPlan | Callable[[], BankPlan | None] | None = None) -> GroupResults:
    """Evaluate every point of ``groups`` (see the module): blocks of at most ``chunk_size`` points (a refusal
    names ``chunk_size``); ``banks`` (optional) holds the flow banks planned for the traffics of the network, or
    makes them when called (only where the banked runner is used). The arguments are checked first
    (:func:`_check_groups`): a wrong one is a :class:`~evaluator.errors.ConfigError` naming it."""
    routing = as_routing(routing)
    chunk_size = positive_int("chunk_size", chunk_size)
    require(isinstance(keep_link_load, (bool, np.bool_)), "keep_link_load", keep_link_load, "True or False")
    keep_link_load = bool(keep_link_load)
    _check_groups(topology, groups)
    groups = [g for g in groups if len(g.positions)]  # a group without points adds nothing (checked above)
    if routing.needs_pairs:
        return _path_sets(topology, routing, groups, keep_link_load, chunk_size, sharing, fairness, progression)
    if (topology.latency is not None or sharing != "bound"
            or any(g.traffic.kernel_input == "phases" for g in groups)):
        return _whole_batch(topology, routing, groups, keep_link_load, chunk_size, sharing, fairness, progression)
    t0 = time.perf_counter()
    kern = batch_kernel(topology, routing, keep_link_load)
    flows = [g for g in groups if g.traffic.kernel_input == "flows"]
    parts = []
    compile_s = 0.0
    n_compiles = 0
    if flows:
        plan = banks() if callable(banks) else banks
        res = run_banked(kern, flows, chunk_size, len(topology.class_names), keep_link_load, plan, "chunk_size")
        parts.append((res.positions, res.metrics, res.link_load))
        compile_s, n_compiles = res.compile_s, res.n_compiles
    for g in groups:
        if g.traffic.kernel_input != "flows":  # dense: its own runner, through the whole batch's checks
            pls = g.host_placements()
            _, res = run_batch(topology, routing, [g.traffic] * len(pls), pls, keep_link_load, DEFAULT_BLOCK_SIZE,
                               chunk_size)
            parts.append((np.asarray(g.positions, np.int64), res.metrics, res.link_load))
    metrics = {k: np.concatenate([m[k] for _, m, _ in parts]) for k in parts[0][1]}
    loads = None if parts[0][2] is None else np.concatenate([ll for _, _, ll in parts])
    return GroupResults(np.concatenate([p for p, _, _ in parts]), metrics, loads, None, [], compile_s,
                        time.perf_counter() - t0 - compile_s, n_compiles)


def _check_groups(topology: Topology, groups: Any) -> None:
    """Refuse, before any work, groups that would give another point's or no point's numbers (until 2026-12-07 the
    banked runner took them as they came: a placement made for a larger network gave loads of nodes clamped to
    this one's, three positions with two placements a third point of 0 s, a seeded family of 14 tasks for a
    traffic of 12 the family's first 12 tasks): a non-empty list of :class:`BankedPoints`, each with either one
    placement or one seed per position, made for ``topology`` and for its traffic's tasks, and every position
    once over the groups. A group of no positions is checked as any other and then left out (until 2026-12-07
    one crashed the banked runner, ``need at least one array to concatenate``, or a dense one was refused as
    ``traffics = 0``); groups that hold no point at all are refused, as :func:`evaluator.evaluate_batch` refuses
    no points."""
    check_type("topology", "topology", topology)
    if isinstance(groups, (BankedPoints, str, bytes, dict)) or not isinstance(groups, Sequence):
        raise ConfigError("groups", short(groups), "a list of BankedPoints (points of one traffic each)",
                          f"Got {type(groups).__name__}.")
    require(len(groups) > 0, "groups", 0, "at least one group of points")
    positions = []
    for j, g in enumerate(groups):
        f = f"groups[{j}]"
        if not isinstance(g, BankedPoints):
            raise ConfigError(f, short(g), "a BankedPoints (positions, traffic, placements or seeded and seeds)",
                              f"Got {type(g).__name__}.")
        check_type("traffic", f"{f}.traffic", g.traffic)
        pos = np.asarray(g.positions)
        require(pos.ndim == 1 and (pos.size == 0 or pos.dtype.kind in "iu"), f"{f}.positions", short(g.positions),
                "a 1-D array of integer point indices")
        if (g.placements is None) == (g.seeded is None):
            raise ConfigError(f, "placements and seeded both " + ("given" if g.seeded is not None else "None"),
                              "either placements (one per position) or a seeded family with seeds, not both")
        if g.seeded is None:
            pls = g.placements
            if isinstance(pls, Placement) or not hasattr(pls, "__len__"):
                raise ConfigError(f"{f}.placements", short(pls), "a list of Placements, one per position")
            require(len(pls) == pos.size, f"{f}.placements", f"{len(pls)} placements",
                    f"one placement per position ({pos.size})")
            for i, p in enumerate(pls):
                check_type("placement", f"{f}.placements[{i}]", p)
                check_pair(topology, g.traffic, p, i, ("traffic", f"{f}.placements"))
        else:
            s = g.seeded
            if not isinstance(s, SeededPlacement):
                raise ConfigError(f"{f}.seeded", short(s), "a SeededPlacement (a seeded placement family)")
            seeds = np.asarray(g.seeds) if g.seeds is not None else np.zeros((0, 0))
            require(seeds.ndim == 1 and seeds.size == pos.size and (seeds.size == 0 or seeds.dtype.kind in "iu"),
                    f"{f}.seeds", short(g.seeds), f"one integer seed per position ({pos.size})")
            require(s.n_nodes == topology.n_nodes, f"{f}.seeded", s.name,
                    f"a placement family made for {topology.name} ({topology.n_nodes} nodes); it was made for "
                    f"{s.n_nodes} nodes")
            require(s.n_tasks == g.traffic.n_tasks, f"{f}.seeded.n_tasks", s.n_tasks,
                    f"the traffic's task count {g.traffic.n_tasks} ({g.traffic.name})")
        positions.append(pos.astype(np.int64, copy=False))
    every = np.concatenate(positions)
    require(every.size > 0, "groups", f"{len(groups)} group(s) holding 0 points",
            "at least one point over the groups (a group without points is left out; without any there is nothing "
            "to evaluate)")
    if every.size:
        keys = np.sort(every)
        dup = keys[1:][keys[1:] == keys[:-1]]
        require(dup.size == 0, "groups", f"position {int(dup[0])} in more than one point" if dup.size else None,
                "every position once over the groups (a point's results go back to its position)")


def _whole_batch(topology: Topology, routing: Routing, groups: Sequence[BankedPoints], keep: bool, chunk_size: int,
                 sharing: str, fairness: str, progression: str) -> GroupResults:
    """Every point in one :func:`~evaluator._batch.run.run_batch` call (placements drawn on the host); phased
    traffic's per-phase results come with it."""
    t0 = time.perf_counter()
    positions = np.concatenate([np.asarray(g.positions, np.int64) for g in groups])
    traffics = [g.traffic for g in groups for _ in range(len(g.positions))]
    placements = [p for g in groups for p in g.host_placements()]
    _, res = run_batch(topology, routing, traffics, placements, keep, DEFAULT_BLOCK_SIZE, chunk_size, sharing=sharing,
                       fairness=fairness, progression=progression)
    phases = None
    if res.phases is not None:
        phases = {"names": list(res.phases["names"]), "phase_completion_time": res.phases["phase_completion_time"],
                  "phase_total_bytes": res.phases["phase_total_bytes"],
                  "phase_bottleneck": output.phase_bottleneck_names(topology, res.phases["phase_bottleneck_class"]),
                  **{k: res.phases[k] for k in ("phase_time_with_latency", "phase_time_max_min") if k in res.phases}}
    return GroupResults(positions, res.metrics, res.link_load, phases, [], 0.0, time.perf_counter() - t0, 0)


def _path_sets(topology: Topology, routing: Routing, groups: Sequence[BankedPoints], keep: bool, chunk_size: int,
               sharing: str, fairness: str, progression: str) -> GroupResults:
    """A path-set routing's points (the whole batch's path, which binds the router pairs).

    A :class:`ConfigError` of the batch (a router pair with no path within the hop limit) is traced to its
    points: each point whose pairs hold an unroutable pair is infeasible with the error naming its own first
    such pair (:func:`evaluator.routing.unroutable_pair`), and the other points are evaluated again without
    them. An error no point explains (or one the others raise again) makes them all infeasible.
    """
    args = (keep, chunk_size, sharing, fairness, progression)
    try:
        return _whole_batch(topology, routing, groups, *args)
    except ConfigError as exc:
        exc.__traceback__ = None
        first = exc
    kept, refused = [], []
    for g in groups:
        pls = g.host_placements()
        pos = np.asarray(g.positions, np.int64)
        ok = np.ones(pos.size, bool)
        for j, p in enumerate(pls):
            try:
                err = unroutable_pair(topology, routing, router_pairs(topology, g.traffic, p, routing.label))
            except ConfigError as exc:  # (e.g. too many pairs of a dense traffic)
                err = exc
            if err is not None:
                refused.append((pos[j:j + 1], err))
                ok[j] = False
        if ok.any():  # placements already drawn: evaluated as given placements
            kept.append(BankedPoints(pos[ok], g.traffic, [p for p, k in zip(pls, ok) if k]))
    if refused and kept:
        try:
            res = _whole_batch(topology, routing, kept, *args)
            return res._replace(infeasible=refused)
        except ConfigError as exc:
            first = exc
    if refused and not kept:
        return _empty(refused)
    return _empty(refused + [(g.positions, first) for g in kept])
