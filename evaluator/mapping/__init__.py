"""Mapping search: the task-to-node assignment of one job that minimises its predicted completion time.

:func:`search_mapping` takes a topology, a traffic of any kind (flows,
dense, phased: collectives, traces), a routing and the nodes available to
the job (all compute nodes, a partition's, an ALPS free list, a node set),
and:

1. builds every applicable starting point (:mod:`._starts`: the named
   placements, Cray ``grid_order`` rank orders, a METIS graph-partitioning
   mapping, one seeded random mapping), puts the user's own starts first
   (``user_starts``: a rank-order file or node list read by
   :func:`read_start_file`, a named placement) and evaluates them all in one
   batch (:func:`evaluator.evaluate_batch`);
2. improves the best of them by batched local search (:mod:`._search`):
   thousands of candidate moves (task swaps, moves to free slots, swaps of
   whole nodes' or routers' tasks; on a torus, swaps of sub-boxes and
   reflections, shifts and rotations of one: :mod:`._kinds`) scored per
   device call by incremental evaluation (:mod:`._moves`: the kernel's own
   link-load function on the moved flows only), each kind given a share of
   the time by what it yields per second, with random kicks where no move
   improves (and, with ``anneal``, Metropolis acceptance on the q-norm),
   under a time budget; ``info["move_kinds"]`` (and the dataset's attrs)
   say which move kinds paid and what they cost;
3. evaluates the result afresh (the reported time is that evaluation's),
   never worse than the best start (which is a candidate).

:class:`MappingResult` holds the mapping, its time, every start's time and
the gain over each, the search's progress, and writes the launcher's files
(``MPICH_RANK_ORDER``, ``node_list``) and a dataset.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import xarray as xr

from .._types import Int, JobNodes, NodeInts, TaskInts
from ..errors import ConfigError, check_seed, positive_float, positive_int, require
from ..evaluation import DRAWS, as_routing, evaluate_batch, evaluate_draws
from ..placement import Placement, compute_mask, explicit, launch_fill_order, write_launch_files
from ..topology import Topology
from ._moves import MoveEvaluator
from ._sparse_moves import move_evaluator
from ._partition import check_job, check_slots, partition_mapping
from ._search import SearchTrace, local_search
from ._embeddings import is_embedding
from ._tiles import is_tile_layout
from ._starts import Start, starting_points
from ._user_starts import FILE_KINDS, check_start, parse_node_ids, read_start_file
from .bound import MappingBound, endpoint_bound, mapping_bound

__all__ = ["MAX_CANDIDATES", "search_mapping", "is_embedding", "is_tile_layout", "MappingResult", "Start", "starting_points",
           "partition_mapping", "move_evaluator", "MoveEvaluator", "available_nodes", "endpoint_bound", "mapping_bound", "MappingBound", "launchable",
           "check_start", "read_start_file", "parse_node_ids", "check_job", "FILE_KINDS", "over_draws", "DRAWS",
           "best_over_draws", "FOUND"]


def available_nodes(topology: Topology, nodes: Sequence | np.ndarray | None = None) -> JobNodes | Sequence | np.ndarray:
    """The node ids a job may use: ``nodes`` as given (checked later: :func:`check_job`), or every compute node of the
    topology (a partition topology's nodes; service and down nodes of a catalogue machine excluded)."""
    if nodes is None:
        return np.flatnonzero(compute_mask(topology)).astype(np.int64)
    return nodes


@dataclass
class MappingResult:
    """What :func:`search_mapping` found.

    ``placement``: the mapping (``task_node``); ``completion_time`` (s): its
    fresh evaluation; ``starts``: every start's name and time (s), in the
    order built; ``skipped``: named placements that do not apply, and why;
    ``best_start``: the start the search began from (the fastest, or with
    several tasks per node the fastest a launcher can run, :func:`launchable`;
    a faster start that is not is returned instead of a slower search
    result); ``launchable``: whether ``write_launch_files`` can write it;
    ``trace``: the search's
    progress; ``search_time`` (s): the search's own last score of the
    result (equal to ``completion_time`` up to rounding); ``lower_bound``
    (s): no mapping of the job onto the available nodes, with at most
    ``tasks_per_node`` tasks per node, is faster (:func:`mapping_bound`:
    the node links and the network's hop-bytes; ``bound`` holds every part
    and the binding one); ``start_nodes``: every start's mapping (``task_node``), by name.
    """

    placement: Placement
    completion_time: float
    starts: dict[str, float]
    skipped: dict[str, str]
    best_start: str
    trace: SearchTrace
    search_time: float
    nodes: Int[np.ndarray, "job_node"]
    tasks_per_node: int
    lower_bound: float = float("nan")
    info: dict = field(default_factory=dict)
    bound: MappingBound | None = None
    start_nodes: dict[str, TaskInts] = field(default_factory=dict)
    fill: str = "id"
    fill_order: NodeInts | None = None

    @property
    def task_node(self) -> TaskInts:
        return self.placement.task_node

    @property
    def launchable(self) -> bool:
        return launchable(self.task_node, self.tasks_per_node, self.fill_order)

    def gain(self, start: str) -> float:
        """``1 - completion_time / starts[start]``: the fraction of the start's time the search saved (>= 0; 0 for a
        start that takes no time, every byte inside nodes)."""
        t0 = self.starts[start]
        return 1.0 - self.completion_time / t0 if t0 > 0 else 0.0

    def write_launch_files(self, directory: str | Path, force: bool = False, fill_order: NodeInts | None = None,
                           fill: str | None = None) -> tuple[Path, Path]:
        """``directory/MPICH_RANK_ORDER`` (``MPICH_RANK_REORDER_METHOD=3``) and ``directory/node_list`` of the
        mapping: one line per node in the order the launcher fills the listed nodes (``fill_order``, each node's
        position, and ``fill`` its ``# fill:`` name, as :func:`~evaluator.placement.rank_order.rank_order_text`;
        default the order the search kept the partly filled node last in: ``self.fill_order``, ``self.fill``);
        refuses to replace them unless ``force``."""
        d = Path(directory)
        if fill_order is None and fill is None:
            fill_order, fill = self.fill_order, self.fill
        key = self.task_node if fill_order is None else np.asarray(fill_order)[self.task_node]
        if not launchable(key, self.tasks_per_node):
            raise ConfigError("--write-rank-order", str(directory),
                              f"a mapping with {self.tasks_per_node} tasks on every used node but the last in the "
                              f"launcher's fill order ({fill or 'id'})", f"This mapping ({self.placement.name}) leaves "
                              f"nodes partly filled elsewhere; aprun -N fills every listed node. Search with "
                              f"--tasks-per-node 1, or with a task count that fills whole nodes from a start that "
                              f"does (linear); or launch it with Slurm (--write-hostfile), which places every rank "
                              f"by its own line.")
        there = [str(d / n) for n in ("MPICH_RANK_ORDER", "node_list") if (d / n).exists()]
        if there and not force:
            raise ConfigError("--write-rank-order", str(directory), "a directory without MPICH_RANK_ORDER or node_list",
                              f"It holds {' and '.join(there)} already; choose another directory, or force=True "
                              f"(--force) to replace them.")
        return write_launch_files(self.placement, d, self.tasks_per_node, fill_order=fill_order, fill=fill)

    def to_dataset(self) -> xr.Dataset:
        """The mapping (``task_node[task]``), its time, each start's time and the gain over it (dimension
        ``start``), and the search's progress (dimension ``iteration``); SI units."""
        names = list(self.starts)
        t = self.trace
        ds = xr.Dataset(
            {
                "task_node": ("task", np.asarray(self.task_node, np.int64)),
                "completion_time": ((), float(self.completion_time)),
                "lower_bound": ((), float(self.lower_bound)),
                "start_completion_time": ("start", np.array([self.starts[n] for n in names])),
                "gain": ("start", np.array([self.gain(n) for n in names])),
                "elapsed": ("iteration", np.asarray(t.elapsed, float)),
                "moves_evaluated": ("iteration", np.asarray(t.evaluated, np.int64)),
                "moves_accepted": ("iteration", np.asarray(t.accepted, np.int64)),
                "search_completion_time": ("iteration", np.asarray(t.completion_time, float)),
                "best_completion_time": ("iteration", np.asarray(t.best_completion_time, float)),
                "available_node": ("slot_node", np.asarray(self.nodes, np.int64)),
            },
            coords={"task": np.arange(self.placement.n_tasks), "start": names,
                    "iteration": np.arange(len(t.elapsed))},
        )
        units = {"lower_bound": "s", "completion_time": "s", "start_completion_time": "s", "gain": "1", "elapsed": "s",
                 "moves_evaluated": "1", "moves_accepted": "1", "search_completion_time": "s",
                 "best_completion_time": "s", "task_node": "1", "available_node": "1"}
        for k, u in units.items():
            ds[k].attrs["units"] = u
        ds["task_node"].attrs["long_name"] = ("node of each task in the mapping found" if "chosen_over_draws" not in
                                              self.info else "node of each task in the start chosen over the draws "
                                                             "of the routing (attribute chosen_over_draws)")
        ds["gain"].attrs["long_name"] = "1 - completion_time / start_completion_time"
        ds["lower_bound"].attrs["long_name"] = ("no mapping onto the available nodes with at most tasks_per_node "
                                                "tasks per node is faster (the largest of the node-link and the "
                                                "network's hop-bytes bounds)")
        if self.bound is not None:
            ds["lower_bound"].attrs["binding"] = self.bound.describe()
            ds["lower_bound"].attrs["parts"] = "; ".join(f"{k}: {float(v):.6g} s" for k, v in self.bound.parts.items())
        ds["elapsed"].attrs["long_name"] = "wall-clock seconds since the search began, at the iteration's end"
        ds.attrs.update({"kind": "mapping", "best_start": self.best_start, "tasks_per_node": self.tasks_per_node,
                         "search_completion_time": float(self.search_time),
                         "search_stopped_by": t.stopped,
                         "skipped": "; ".join(f"{k}: {v}" for k, v in self.skipped.items())})
        ds.attrs.update({k: v for k, v in self.info.items() if isinstance(v, (str, int, float))})
        return ds


def launchable(task_node: TaskInts, tasks_per_node: int, fill_order: NodeInts | None = None) -> bool:
    """Whether ``aprun -N tasks_per_node -L <node_list>`` with an ``MPICH_RANK_ORDER`` can run the mapping: every
    used node holds ``tasks_per_node`` tasks but the used node the launcher fills last, which may hold fewer
    (``fill_order``: each node's position in the launcher's fill order, as
    :func:`~evaluator.placement.launch_fill_order` gives it; default ascending id)."""
    key = np.asarray(task_node) if fill_order is None else np.asarray(fill_order)[np.asarray(task_node)]
    nodes, counts = np.unique(key, return_counts=True)
    return bool((counts[:-1] == tasks_per_node).all() and counts[-1] <= tasks_per_node)


def _slots(task_node: np.ndarray, nodes: np.ndarray, tpn: int) -> tuple[np.ndarray, np.ndarray]:
    """``(slot_node, slot_task)`` of a mapping: ``tpn`` slots per available node; each node's tasks take its first
    slots, the empty slots hold the tasks ``n_tasks ..``."""
    slot_node = np.repeat(np.asarray(nodes, np.int64), tpn)
    n = task_node.size
    slot_task = np.full(slot_node.size, -1, np.int64)
    pos = {int(v): i for i, v in enumerate(nodes)}
    fill = np.zeros(len(nodes), np.int64)
    for t, v in enumerate(task_node.tolist()):
        i = pos[v]
        slot_task[i * tpn + fill[i]] = t
        fill[i] += 1
    empty = np.flatnonzero(slot_task < 0)
    slot_task[empty] = n + np.arange(empty.size)
    return slot_node, slot_task


def _check_given_starts(topology, traffic, starts, nodes, tpn: int) -> None:
    """``search_mapping(starts=...)``: each a mapping of every task onto the available nodes with at most ``tpn``
    tasks per node (a :class:`ConfigError` naming ``mapping.starts`` otherwise)."""
    allowed = set(nodes.tolist())
    for s in starts:
        tn = np.asarray(s.task_node)
        counts = np.bincount(tn, minlength=topology.n_nodes) if tn.size else np.zeros(0)
        if tn.shape != (traffic.n_tasks,) or not set(tn.tolist()) <= allowed or counts.max(initial=0) > tpn:
            raise ConfigError("mapping.starts", s.name, f"a mapping of {traffic.n_tasks} tasks onto the "
                              f"available nodes with at most {tpn} tasks per node")


def _user_starts(topology, traffic, user_starts, nodes, tpn: int) -> list[Start]:
    """The user's starts, checked (:func:`check_start`; distinct names; a :class:`ConfigError` naming
    ``mapping.user_starts`` otherwise)."""
    mine: list[Start] = []
    for s in user_starts or []:
        if not isinstance(s, Start):
            raise ConfigError("mapping.user_starts", s, "a list of Start(name, task_node)")
        if s.name in {u.name for u in mine}:
            raise ConfigError("mapping.user_starts", s.name, "starts of distinct names")
        mine.append(Start(s.name, check_start(topology, traffic.n_tasks, nodes, tpn, s.task_node,
                                              "mapping.user_starts", s.name)))
    return mine


def _without_repeats(mine: list[Start], starts, skipped: dict) -> list[Start]:
    """``starts`` less those a user's start repeats or names (the user's name stands for it; each noted in
    ``skipped``)."""
    if not mine:
        return list(starts)
    keys = {tuple(s.task_node.tolist()): s.name for s in mine}
    kept = []
    for s in starts:
        k = tuple(np.asarray(s.task_node).tolist())
        if k in keys:
            skipped[s.name] = f"the same mapping as {keys[k]!r}"
        elif s.name in {u.name for u in mine}:
            skipped[s.name] = "a user's start has its name"
        else:
            kept.append(s)
    return kept


def _extra_first(topology, traffic, extra_starts, others, nodes, tpn: int, skipped: dict) -> list[Start]:
    """The extra starts (the named placements as a user would run them) that fit the available nodes and slots
    and repeat none of ``others`` nor each other; the rest noted in ``skipped`` with the reason."""
    allowed = np.zeros(topology.n_nodes, dtype=bool)
    allowed[nodes] = True
    first = []
    seen: dict = {}
    for s in others:  # each mapping's first name
        seen.setdefault(tuple(np.asarray(s.task_node).tolist()), s.name)
    for s in extra_starts:
        tn = np.asarray(s.task_node, np.int64)
        counts = np.bincount(tn, minlength=topology.n_nodes) if tn.size else np.zeros(0)
        if tn.shape != (traffic.n_tasks,) or not allowed[tn].all() or counts.max(initial=0) > tpn:
            skipped[s.name] = f"not on the available nodes with at most {tpn} task(s) per node"
            continue
        key = tuple(tn.tolist())
        if key in seen:  # named, so that a summary can count that start as this placement
            skipped[s.name] = f"the same mapping as {seen[key]!r}"
            continue
        seen[key] = s.name
        first.append(s)
    return first


def _movable(task_node, slot_node, tpn: int, fill_order=None):
    """With several tasks per node, the slots block moves may take (those the launcher fills before the start's
    partly filled nodes, which stay as they are, with the nodes it fills after them; None: every slot)."""
    if tpn == 1:
        return None
    pos = np.arange(int(np.max(slot_node)) + 1) if fill_order is None else np.asarray(fill_order)
    used, counts = np.unique(np.asarray(task_node), return_counts=True)
    partial = used[counts < tpn]
    return pos[slot_node] < pos[partial].min() if partial.size else None


def _filled_last(start: Start, tpn: int, fill_order) -> Start | None:
    """``start`` with its one partly filled node's tasks and those of the used node the launcher fills last
    exchanged (a mapping a launcher can run, :func:`launchable`), or None where it has several partly filled
    nodes (or is launchable already)."""
    tn = np.asarray(start.task_node, np.int64)
    used, counts = np.unique(tn, return_counts=True)
    partial = used[counts < tpn]
    if partial.size != 1 or launchable(tn, tpn, fill_order):
        return None
    pos = np.arange(int(used.max()) + 1) if fill_order is None else np.asarray(fill_order)
    last = int(used[np.argmax(pos[used])])
    out = tn.copy()
    out[tn == partial[0]], out[tn == last] = last, int(partial[0])
    return Start(f"{start.name}, partly filled node last", out)


def _start_times(topology, routing, traffic, starts, tpn: int, fill_order=None) -> tuple[list, np.ndarray, int]:
    """``(starts, times, i0)``: every start's time (one batch) and the one the search begins from: the fastest, or
    with several tasks per node the fastest a launcher can run (every used node full but the one it fills last,
    ``fill_order``; the search keeps every node's task count, fixed_counts, and block moves leave the partly filled
    node and the nodes filled after it alone). Where a faster start leaves its one partly filled node elsewhere,
    that start with the node's tasks exchanged for those of the node filled last (:func:`_filled_last`) is
    evaluated too, added to ``starts``, and begun from when it is the faster."""
    placements = [explicit(topology, np.asarray(s.task_node, np.int64), s.name) for s in starts]
    res = evaluate_batch(topology, routing, [traffic] * len(placements), placements)
    times = np.asarray(res.metrics["completion_time"], float)
    ok = np.array([tpn == 1 or launchable(s.task_node, tpn, fill_order) for s in starts])
    best = int(np.argmin(times))
    if not ok[best] and (fixed := _filled_last(starts[best], tpn, fill_order)) is not None \
            and fixed.name not in {s.name for s in starts}:
        t = evaluate_batch(topology, routing, traffic, explicit(topology, fixed.task_node, fixed.name))
        starts, times = [*starts, fixed], np.append(times, float(t.metrics["completion_time"][0]))
        ok = np.append(ok, True)
    return starts, times, int(np.argmin(np.where(ok, times, np.inf))) if ok.any() else best


def _answer(topology, routing, traffic, task_node, starts, times, i0: int):
    """``(task_node, time, name)`` of the result: the search's mapping evaluated afresh, or a start the search
    did not begin from (not launchable) where that is faster."""
    final = evaluate_batch(topology, routing, traffic, explicit(topology, task_node, "mapping search"))
    t_final = float(final.metrics["completion_time"][0])
    j = int(np.argmin(times))
    if t_final > times[j]:
        return np.asarray(starts[j].task_node, np.int64), float(times[j]), starts[j].name
    return task_node, t_final, f"search from {starts[i0].name}"


def _all_starts(topology, traffic, nodes, tpn: int, seed: int, starts, user_starts, extra_starts, cfgs: dict):
    """``(starts, skipped, mine)``: the user's starts first, then the extra ones, then ``starts`` (default:
    :func:`starting_points`), repeats left out; ``skipped``: each start left out and why (not one that ran under
    a label of its own, ``NAME (...)``: ``evaluator map``'s ``random (as configured)``); ``mine``: the user's."""
    if starts is None:
        starts, skipped = starting_points(topology, traffic, nodes, tpn, seed=seed, **cfgs)
    else:
        skipped = {}
        _check_given_starts(topology, traffic, starts, nodes, tpn)
    mine = _user_starts(topology, traffic, user_starts, nodes, tpn)
    starts = _without_repeats(mine, starts, skipped)
    if extra_starts:
        starts = _extra_first(topology, traffic, extra_starts, [*mine, *starts], nodes, tpn, skipped) + list(starts)
    ran = [s.name for s in (*mine, *starts)]
    skipped = {k: v for k, v in skipped.items() if not any(n.startswith(f"{k} (") for n in ran)}
    return mine + list(starts), skipped, mine


MAX_CANDIDATES = 2**20
"""The most candidate moves a search scores per device call (``candidates``; ``evaluator map --candidates``)."""


def _check_search_args(time_budget, max_iterations, seed, candidates, fill) -> tuple[float, int | None, int, int]:
    """``search_mapping``'s scalar arguments checked (a :class:`ConfigError` naming ``mapping.<field>``)."""
    require(fill in (None, "alps", "id"), "mapping.fill", fill,
            "alps, id or None (evaluator map --fill: the order the launcher fills the listed nodes in)")
    budget = positive_float("mapping.time_budget", time_budget, allow_zero=True)
    if max_iterations is not None:
        max_iterations = positive_int("mapping.max_iterations", max_iterations, minimum=0)
    n_cand = positive_int("mapping.candidates", candidates)
    require(n_cand <= MAX_CANDIDATES, "mapping.candidates", n_cand,
            f"at most {MAX_CANDIDATES:,} candidate moves per device call (the default 4,096)",
            "Each candidate holds its moved flows in memory (10^12 of them asked for 8 TB).")
    return budget, max_iterations, check_seed("mapping.seed", seed), n_cand


def search_mapping(topology: Topology, traffic, routing, *, nodes=None, tasks_per_node: int = 1,
                   time_budget: float = 60.0, seed: int = 0, candidates: int = 4096, starts: list[Start] | None = None,
                   traffic_cfg=None, topology_cfg=None, max_iterations: int | None = None,
                   progress: bool = True, extra_starts: list[Start] | None = None,
                   user_starts: list[Start] | None = None, anneal: bool = False,
                   fill: str | None = None) -> MappingResult:
    """Search task-to-node assignments of ``traffic``'s tasks that minimise the predicted completion time.

    Parameters
    ----------
    topology, traffic, routing
        The network, the job's traffic (any kind) and its routing (a :class:`~evaluator.routing.Routing` or a
        kind's name; a path-set routing must be searched with its base routing: it is bound to one mapping's
        router pairs).
    nodes : int array, optional
        Node ids available to the job, in the launcher's fill order (default: every compute node).
    tasks_per_node
        Slots per node.
    time_budget
        Seconds of search (wall clock, after the starts are built and evaluated).
    seed
        Seed of the partitioning, the random start and the search's draws.
    candidates
        Candidate moves scored per device call.
    starts
        Starting points to use instead of :func:`starting_points` (each a :class:`Start`).
    traffic_cfg, topology_cfg
        The configs, where known (a stencil's ``beta`` gives ``grid_order`` starts).
    max_iterations
        Stop after this many batches even within the budget (default: the budget only): with the same seed the
        same result on every run, whatever the machine's speed.
    extra_starts
        Starting points put before the others (the named placements as a user would have run them, the default
        first: ``evaluator map`` passes them); one that does not fit the available nodes and slots is skipped,
        with the reason.
    user_starts
        The user's own starting points, put first (``evaluator map --start``: a rank-order file or node list,
        :func:`read_start_file`, or a named placement): each must map every task onto the available nodes with
        at most ``tasks_per_node`` per node (a :class:`ConfigError` naming ``mapping.user_starts`` otherwise),
        and is kept even where it repeats another start (that one is skipped instead); the result is never
        slower than any of them.
    anneal
        Metropolis acceptance on the q-norm in batches without an improving move (simulated annealing; off: the
        random kicks after a plateau alone). Off by default: on the bench's three 16x8x8 torus cases, 60 s runs
        of 2-3 seeds each, it was better in 4 of 8 paired runs and worse in 4 (-5.9 % to +25 %), while the seed
        alone moved a result by up to 23 % (docs/mapping.md, "Moves and acceptance").
    fill
        The launcher's fill order (``alps``, ``id``; default :func:`~evaluator.placement.launch_fill_order`'s).
    """
    routing = as_routing(routing)
    budget, max_iterations, seed, candidates = _check_search_args(time_budget, max_iterations, seed, candidates, fill)
    fill, fill_order = launch_fill_order(topology, fill)
    nodes, tpn = check_job(topology, traffic, available_nodes(topology, nodes), tasks_per_node)
    check_slots(nodes, int(traffic.n_tasks), tpn)
    t_start = time.perf_counter()
    starts, skipped, mine = _all_starts(topology, traffic, nodes, tpn, seed, starts, user_starts, extra_starts,
                                        {"traffic_cfg": traffic_cfg, "topology_cfg": topology_cfg})
    if not starts:
        raise ConfigError("mapping.starts", [], "at least one starting point")
    evaluator = move_evaluator(topology, routing, traffic, np.repeat(nodes, tpn))
    t_bound = time.perf_counter()
    bound = mapping_bound(topology, traffic, routing, nodes=nodes, tasks_per_node=tpn)
    t_bound = time.perf_counter() - t_bound
    starts, times, i0 = _start_times(topology, routing, traffic, starts, tpn, fill_order)
    t_built = time.perf_counter() - t_start - t_bound
    slot_node, slot_task = _slots(np.asarray(starts[i0].task_node, np.int64), nodes, tpn)
    assert np.array_equal(slot_node, evaluator.slot_node)
    best, trace = local_search(evaluator, slot_task, budget=budget, seed=seed, candidates=candidates,
                               max_iterations=max_iterations, fixed_counts=tpn > 1,
                               movable=_movable(starts[i0].task_node, slot_node, tpn, fill_order),
                               progress=progress, anneal=bool(anneal), target=bound.value)
    task_node, t_final, name = _answer(topology, routing, traffic, evaluator.task_node(best), starts, times, i0)
    info = {"starts_seconds": t_built, "search_seconds": float(trace.elapsed[-1]) if trace.elapsed else 0.0,
            "evaluator": type(evaluator).__name__, "routing": routing.kind, "topology": topology.name,
            "traffic": getattr(traffic, "name", "traffic"), "seed": seed, "candidates": candidates,
            "time_budget": budget, "bound_seconds": t_bound, "move_kinds": trace.summary()} \
        | ({"user_starts": "; ".join(s.name for s in mine)} if mine else {})
    return MappingResult(explicit(topology, task_node, name), t_final,
                         {s.name: float(x) for s, x in zip(starts, times)}, dict(skipped), starts[i0].name, trace,
                         float(trace.best_completion_time[-1]), nodes, tpn, bound.value, info, bound,
                         {s.name: np.asarray(s.task_node, np.int64) for s in starts}, fill, fill_order)


def over_draws(topology: Topology, routing, traffic, mappings: dict[str, TaskInts], k: int = DRAWS
               ) -> xr.Dataset | None:
    """Completion times of ``mappings`` (name -> ``task_node``) under ``k`` draws of ``routing``, where one spec of
    it is one random draw (:meth:`~evaluator.routing.Routing.draws`: hashed ECMP's hash seeds, its own first);
    None for a routing whose spec determines its paths.

    The search scores one draw, so its gain over a start may be that draw's luck; this says whether it holds
    over others. :func:`evaluator.evaluation.evaluate_draws` of the mappings: ``completion_time[mapping, draw]``
    (s) with ``completion_time_mean``, ``completion_time_p95``, ``_max`` and ``_min`` over the draws.
    """
    names = list(mappings)
    if not names:
        raise ConfigError("mappings", mappings, "at least one mapping (name -> task_node)")
    pls = [explicit(topology, np.asarray(mappings[n], np.int64), n) for n in names]
    ds = evaluate_draws(topology, routing, [traffic] * len(names), pls, k)
    return None if ds is None else ds.rename(point="mapping").assign_coords(mapping=names)


FOUND = "mapping found"
"""The name of the search's own mapping in :func:`over_draws`'s ``mappings`` that :func:`best_over_draws` reads."""


def best_over_draws(res: MappingResult, draws: xr.Dataset) -> tuple[MappingResult, str]:
    """``(result, chosen)``: where the routing is a random draw (hashed ECMP), the search scored one draw, so a
    start may be faster on average than the mapping found. ``draws`` is :func:`over_draws` of ``{FOUND:
    res.task_node}`` and starts of ``res`` (by their names in ``res.start_nodes``); ``chosen`` is the mapping of
    the lowest mean completion time over the draws (:data:`FOUND` on a tie; a start a launcher cannot run is
    passed over where the mapping found can be run). ``result`` is ``res`` when it is :data:`FOUND`, else
    ``res`` holding that start's mapping (its completion time the start's on the searched draw, so that every
    gain over a start is its own) with ``info["chosen_over_draws"]`` naming it."""
    names = [str(n) for n in draws["mapping"].values]
    if FOUND not in names or any(n != FOUND and n not in res.start_nodes for n in names):
        raise ConfigError("draws", names, f"mappings named {FOUND!r} and starts of the result "
                                          f"(evaluator.mapping.over_draws of them)")
    mean = {n: float(draws["completion_time_mean"].sel(mapping=n)) for n in names}
    ok = [n for n in names if n == FOUND or not res.launchable
          or launchable(res.start_nodes[n], res.tasks_per_node, res.fill_order)]
    chosen = min(ok, key=lambda n: (mean[n], n != FOUND))
    if chosen == FOUND or not mean[chosen] < mean[FOUND]:
        return res, FOUND
    placement = dataclasses.replace(res.placement, task_node=np.asarray(res.start_nodes[chosen], np.int64),
                                    name=chosen)
    info = dict(res.info, chosen_over_draws=f"{chosen}: {mean[chosen]:.6g} s on average over "
                                            f"{draws.sizes['draw']} draws against {mean[FOUND]:.6g} s for the "
                                            f"mapping the search found on its one draw")
    return dataclasses.replace(res, placement=placement, completion_time=res.starts[chosen], info=info), chosen
