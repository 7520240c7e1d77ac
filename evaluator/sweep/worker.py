"""The worker side of a sweep: evaluate the points of one chunk (in one network of the grid).

Nothing is built per point. The chunk's points are split into *groups*:
points that differ only in ``placement.seed`` (see
:attr:`~evaluator.sweep.plan.SweepPlan.seed_axis`). A group is built once per
worker process and kept: its config (the base with its axis values, sharing
the rest), topology, routing and traffic (each cached by the axes it depends
on), whether it is feasible (a ``reason`` if not), and its placement with
everything decided but the seed (a
:class:`~evaluator.placement.SeededPlacement`), or the placement
itself where it has no seed. Seeds are checked once per seed value. The
chunk's feasible points then go, as groups, to the batch engine's one
group-level entry point (:func:`evaluator.evaluation.evaluate_groups`), once
per chunk: flow lists through its banked runner (flows from a bank of the
network's traffics, placements drawn from their seeds inside the jitted
call: :mod:`evaluator._batch.banked`), dense and phased traffics, latency
models and path sets the ways :func:`evaluator.evaluate_batch` takes them.
``sweep.chunk_size`` sets the chunk (the points checkpointed together) and
the block size (points per device call, at most the chunk's);
:func:`evaluate_chunks` (a Ray task's batch) evaluates the chunks of one
network together, in blocks of their points together, each chunk's result
still its own and equal to :func:`evaluate_chunk`'s.

A *network* of the grid (the plan's ``network_axes``: the points that share
every axis of the topology and routing; each chunk lies in one) has its
traffics' flow lists planned together: the flow bucket (padded flow count) of
a traffic is shared by every traffic of the network with the same kind and
task bucket (the largest of their flow counts, when the network has at most
:data:`MAX_PLANNED_TRAFFICS` traffic configs): one compilation per routing and
shape class, whichever mix of traffics a chunk holds.
"""

from __future__ import annotations

import collections
import dataclasses
import itertools
import resource
import threading
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import config as C
from .._types import PointInts
from .._threads import is_one_core
from ..errors import ConfigError, keeps_ignored_keys, reason
from ..evaluation import BankedPoints, BankPlan, evaluate_groups
from ..placement import placement_kind
from ..placement import Placement, PlacementContext
from ..placement import SeededPlacement, check_seed
from ..routing import check_routing
from .bounds import chunk_bounds
from .jobs import evaluate_jobs_chunk
from .plan import SweepPlan

__all__ = ["evaluate_chunk", "evaluate_chunks", "peak_rss_bytes", "MAX_PLANNED_TRAFFICS"]

MAX_PLANNED_TRAFFICS = 256
"""A network of the grid with at most this many traffic configs has its flow banks planned (one flow bucket per
traffic kind and task bucket); larger ones get a flow bucket per call."""


class _LRU(collections.OrderedDict):
    """A bounded cache of builds shared by the threads of a process; the first value put under a key wins.

    Two threads that miss the same key at once both build it, and both go on with the first build put: a
    topology built twice would otherwise give the chunks two topology objects, hence two kernels and a
    second compilation of the same program (1-2 s on a cold ``optimize``).
    """

    def __init__(self, size: int):
        super().__init__()
        self.size = size
        self._lock = threading.Lock()

    def put(self, key, value):
        """``value`` under ``key``, or the value another thread put there first; returns the one kept."""
        with self._lock:
            if key in self:
                return self[key]
            self[key] = value
            if len(self) > self.size:
                self.popitem(last=False)
            return value


@dataclasses.dataclass
class _Group:
    """One group's build: infeasible (``reason``) or what its points need."""

    reason: str = ""
    after_seed: bool = False  # the error comes after the seed check: a bad seed is reported first
    topology: Any = None
    routing: Any = None
    traffic: Any = None
    traffic_key: tuple = ()
    spec: SeededPlacement | None = None  # device-drawn placement
    placement: Placement | None = None  # fixed placement (no seed)
    config: Any = None  # host-drawn placements (numpy generator): the group's config
    seed: Any = None  # the group's own seed where no axis sets it
    cost: Any = None  # the network's evaluator.cost.NetworkCost (None: its topology failed or has no cost model)


class _State:
    """Per-process builds of one run (a worker keeps them across the chunks it evaluates)."""

    def __init__(self, plan: SweepPlan):
        self.plan = plan
        self.seed_axis = plan.seed_axis
        self.topo_axes = plan.family_axes("topology")
        self.routing_axes = plan.family_axes("routing")
        self.traffic_axes = plan.family_axes("topology", "traffic")
        self.placement_axes = tuple(i for i in plan.family_axes("topology", "traffic", "placement")
                                    if i != self.seed_axis)
        self.network_axes = plan.network_axes  # (the axes of topology and routing)
        # what the bound depends on: every axis but the routing's (the seed axis included)
        self.bound_axes = plan.family_axes("topology", "traffic", "placement")
        self.bound_cache = _LRU(4096)  # bound key -> result (exact solvers only: see evaluator.sweep.bounds)
        self.group_cols = tuple(i for i in range(len(plan.axes)) if i != self.seed_axis)
        self.topologies = _LRU(16)
        self.costs = _LRU(64)
        self.routings = _LRU(64)
        self.operators = _LRU(64)
        self.traffics = _LRU(MAX_PLANNED_TRAFFICS * 2)
        self.groups = _LRU(8192)
        self.placements = _LRU(8192)
        self.banks: dict[tuple, BankPlan | None] = {}
        self.seed_values: np.ndarray | None = None
        self.seed_reasons: list[str] = []
        self.any_bad_seed = False
        if self.seed_axis is not None:
            vals = [v[0] for v in plan.axes[self.seed_axis].values]
            self.seed_reasons = [_seed_reason(v) for v in vals]
            self.seed_values = np.array([int(v) if not r else 0 for v, r in zip(vals, self.seed_reasons)],
                                        dtype=np.uint64)
            self.any_bad_seed = any(self.seed_reasons)

    # ---- cached builds ------------------------------------------------------------------------------
    def topology(self, idx, cfg):
        key = tuple(idx[i] for i in self.topo_axes)
        hit = self.topologies.get(key)
        if hit is None:
            hit = self.topologies.put(key, _attempt(lambda: C.build_topology(_get(cfg).topology)))
        return hit

    def network_cost(self, idx, cfg, topo):
        """The network's parts, cost and power (:mod:`evaluator.cost`) once per topology; None: no cost model."""
        key = tuple(idx[i] for i in self.topo_axes)
        hit = self.costs.get(key)
        if hit is None:
            hit = self.costs.put(key, _attempt(lambda: _network_cost(topo, getattr(_get(cfg), "cost", None))))
        return hit

    def routing(self, idx, cfg):
        key = tuple(idx[i] for i in self.routing_axes)
        hit = self.routings.get(key)
        if hit is None:
            hit = self.routings.put(key, _attempt(lambda: C.build_routing_spec(_get(cfg).routing)))
        return hit

    def operator_check(self, idx, topo, routing) -> None:
        """``build_routing`` once per (topology, routing): a mismatch makes the points infeasible."""
        key = (tuple(idx[i] for i in self.topo_axes), tuple(idx[i] for i in self.routing_axes))
        hit = self.operators.get(key)
        if hit is None:
            hit = self.operators.put(key, _attempt(lambda: check_routing(topo, routing)))
        _unwrap(hit)

    def traffic(self, idx, cfg, topo):
        key = tuple(idx[i] for i in self.traffic_axes)
        hit = self.traffics.get(key)
        if hit is None:
            hit = self.traffics.put(key, _attempt(lambda: C.build_traffic(_get(cfg).traffic, topo)))
        return key, hit

    def group(self, plan: SweepPlan, idx: tuple[int, ...]) -> _Group:
        hit = self.groups.get(idx)
        if hit is None:
            hit = self.groups.put(idx, self._build_group(plan, idx))
        return hit

    def _build_group(self, plan: SweepPlan, idx: tuple[int, ...]) -> _Group:
        cfg = _Lazy(lambda: plan.group_config(idx, self.group_cols))  # made only if a cached build misses
        # what the placement config says (kind, seed, the seeded build) depends on no routing axis: kept apart
        pkey = tuple(idx[i] for i in self.placement_axes)
        pl = self.placements.get(pkey)
        reached = False
        seed = None
        cost = None
        try:
            topo = _unwrap(self.topology(idx, cfg))
            cost = _unwrap(self.network_cost(idx, cfg, topo))
            routing = _unwrap(self.routing(idx, cfg))
            tkey, tr = self.traffic(idx, cfg, topo)
            tr = _unwrap(tr)
            if pl is None:
                pl = self.placements.put(pkey, self._placement(cfg.get(), topo, tr))
            kind, seed, spec, reached = pl
            spec = _unwrap(spec)
            g = _Group(topology=topo, routing=routing, traffic=tr, traffic_key=tkey)
            if spec is not None:
                g.spec = spec
                g.seed = seed
                n_tasks = spec.n_tasks
            elif self.seed_axis is not None:
                g.config = cfg.get()  # drawn per point on the host
                n_tasks = tr.n_tasks
            else:
                c = cfg.get()
                g.placement = C.build_placement(c.placement, topo, c.traffic, tr.n_tasks, c.topology)
                n_tasks = g.placement.n_tasks
            if tr.n_tasks != n_tasks:
                raise ConfigError("placement.n_tasks", n_tasks, f"the traffic's task count {tr.n_tasks}")
            self.operator_check(idx, topo, routing)
            g.cost = cost
            _check_budget(cost, getattr(cfg.get(), "cost", None))
            return g
        except ConfigError as exc:
            exc.__traceback__ = None  # (it may be a cached build's error: keep no frames alive)
            return _Group(reason=reason(exc), after_seed=reached, seed=seed, cost=cost)

    @staticmethod
    def _placement(cfg, topo, tr) -> tuple:
        """``(kind, seed, seeded build or None or _Failed, whether the seed check was reached)``."""
        seed = getattr(cfg.placement, "seed", None)
        kind = _attempt(lambda: placement_kind(cfg.placement.kind, topo))
        if isinstance(kind, _Failed):
            return None, seed, kind, False
        if kind.seeded is None:
            return kind, seed, None, False
        mark: list[bool] = []
        ctx = PlacementContext(topo, tr.n_tasks, cfg.traffic, cfg.topology)
        spec = _attempt(lambda: kind.seeded(cfg.placement, ctx, lambda: mark.append(True)))
        return kind, seed, spec, bool(mark)

    # ---- flow banks ---------------------------------------------------------------------------------
    def bank_plan(self, plan: SweepPlan, idx: tuple[int, ...]) -> BankPlan | None:
        """The flow banks of the network of ``idx`` (:class:`~evaluator.evaluation.BankPlan`), made once.

        Every traffic config of the network is enumerated (the network's
        axes fixed, every other axis the traffic depends on varied) and built;
        one flow bucket per traffic kind and task bucket. None when the
        network has more than :data:`MAX_PLANNED_TRAFFICS` traffic configs.
        """
        bkey = tuple(idx[i] for i in self.network_axes)
        if bkey in self.banks:
            return self.banks[bkey]
        free = [i for i in self.traffic_axes if i not in self.network_axes]
        count = int(np.prod([plan.axes[i].size for i in free], dtype=np.float64)) if free else 1
        if count > MAX_PLANNED_TRAFFICS:
            return self.banks.setdefault(bkey, None)
        members = []
        for combo in itertools.product(*(range(plan.axes[i].size) for i in free)):
            full = list(idx)
            for i, v in zip(free, combo):
                full[i] = v
            cfg = plan.group_config(tuple(full), self.traffic_axes)
            topo = self.topology(full, cfg)
            if isinstance(topo, _Failed):
                continue
            tkey, tr = self.traffic(full, cfg, topo)
            if not isinstance(tr, _Failed):
                members.append((tkey, getattr(cfg.traffic, "kind", ""), tr))
        return self.banks.setdefault(bkey, BankPlan(members))  # (another thread's plan, if it made one meanwhile)


class _Lazy:
    """A value made on first use."""

    def __init__(self, make):
        self.make, self.value = make, None

    def get(self):
        if self.value is None:
            self.value = self.make()
        return self.value


def _get(cfg):
    return cfg.get() if isinstance(cfg, _Lazy) else cfg


class _Failed:
    """A cached build that raised a :class:`ConfigError`."""

    def __init__(self, exc: ConfigError):
        # without its traceback: kept frames would hold every local of the failed build alive (and make the
        # caches slow to collect and to free at exit)
        exc.__traceback__ = None
        exc.__context__ = exc.__cause__ = None
        self.exc = exc


def _attempt(build):
    try:
        return build()
    except ConfigError as exc:
        return _Failed(exc)


def _unwrap(hit):
    if isinstance(hit, _Failed):
        raise hit.exc.with_traceback(None)  # (a re-raised exception would otherwise grow its traceback)
    return hit


def _network_cost(topo, cost_cfg):
    """:func:`evaluator.cost.network_cost` of ``topo`` with the point's price table; None for a topology kind
    without a cost model."""
    from ..cost import KINDS as COSTS
    from ..cost import network_cost

    return network_cost(topo, cost_cfg) if topo.kind in COSTS else None


def _check_budget(cost, cost_cfg) -> None:
    """A network over ``cost.budget`` makes the point infeasible (a topology without a cost model too)."""
    budget = getattr(cost_cfg, "budget", None)
    if budget is None:
        return
    from ..cost import check_budget

    if cost is None:
        raise ConfigError("cost.budget", budget, "a topology with a cost model (torus, dragonfly, rdn, fat_tree)")
    check_budget(cost, float(budget))


def _seed_reason(value) -> str:
    try:
        check_seed(value)
    except ConfigError as exc:
        return reason(exc)
    return ""


_STATE: dict[tuple[str, int], _State] = {}
_STATE_LOCK = threading.Lock()


def _state(plan: SweepPlan) -> _State:
    """The builds kept for ``plan`` (this very object: it is held, so its id is not reused meanwhile).

    Threads of one process share it; a build two of them make at once is made twice, and both use the first
    one kept (:class:`_LRU`).
    """
    key = (plan.run_id, id(plan))
    with _STATE_LOCK:
        st = _STATE.get(key)
        if st is None or st.plan is not plan:
            _STATE.clear()  # one plan at a time per process
            st = _STATE[key] = _State(plan)
        return st


class _Reasons:
    """Reason strings of a chunk as codes into a table (``""`` is code 0)."""

    def __init__(self, n: int):
        self.codes = np.zeros(n, np.int32)
        self.table = [""]
        self._index = {"": 0}

    def set(self, positions, text: str) -> None:
        code = self._index.get(text)
        if code is None:
            code = self._index[text] = len(self.table)
            self.table.append(text)
        self.codes[positions] = code


class _Costs:
    """Per point of a chunk: ``cost``, ``power`` and the part counts of its network (NaN: none)."""

    def __init__(self, n: int):
        self.n = n
        self.values: dict[str, np.ndarray] = {}

    def set(self, positions, cost) -> None:
        if cost is None:
            return
        for k, v in cost.values().items():
            if k not in self.values:
                self.values[k] = np.full(self.n, np.nan)
            self.values[k][positions] = v


@dataclasses.dataclass
class _Prepared:
    """A chunk built and checked, not yet evaluated (:func:`_prepare`): its points, their reasons and costs so far,
    and its feasible points as groups (``device``: seeded placements drawn in the call; ``host``: placements
    given)."""

    flat: np.ndarray
    idx: np.ndarray
    reasons: _Reasons
    costs: _Costs
    device: list  # (positions, group, seeds)
    host: list  # (positions, group, placements)
    topo: Any
    routing: Any
    build_s: float

    def groups(self, offset: int = 0) -> list[BankedPoints]:
        """The feasible points as :class:`~evaluator.evaluation.BankedPoints`, their positions shifted by
        ``offset`` (a chunk's place among others evaluated together)."""
        out = [BankedPoints(m + offset, g.traffic, seeded=g.spec, seeds=s, bank_key=g.traffic_key)
               for m, g, s in self.device]
        return out + [BankedPoints(m + offset, g.traffic, placements=p, bank_key=g.traffic_key)
                      for m, g, p in self.host]

    def first(self) -> tuple[int, ...]:
        """The indices of the chunk's first feasible point (a chunk lies in one network: its bank plan's key)."""
        return tuple(int(v) for v in self.idx[:, (self.device + self.host)[0][0][0]])


@keeps_ignored_keys
def evaluate_chunk(plan: SweepPlan, flat: PointInts) -> dict[str, Any]:
    """Build and evaluate the points ``flat`` of one chunk (in one network of the grid). Pure function of its inputs.

    Returns ``flat``, ``reason_code`` (per point, into ``reasons``; 0: feasible or
    not yet known), ``reasons``, and for the feasible points ``ok`` (their
    positions in ``flat``), ``metrics`` (:func:`~evaluator.kernel.unpack_metrics`),
    ``class_names`` and, with ``keep_link_load``, ``link_load``; timings
    ``build_s``, ``compile_s``, ``eval_s`` and the worker's ``peak_rss_bytes``.
    """
    st = _state(plan)
    p = _prepare(plan, st, flat)
    if isinstance(p, dict):  # (a chunk of a jobs sweep: already evaluated)
        return p
    return _finish(plan, st, p, _evaluate(plan, st, p) if (p.device or p.host) else None)


@keeps_ignored_keys
def evaluate_chunks(plan: SweepPlan, chunks: Sequence[PointInts]) -> list[dict[str, Any]]:
    """:func:`evaluate_chunk` of each of ``chunks`` (their points), the chunks of one network evaluated together.

    Every chunk is built and checked on its own (its reasons, costs and
    groups exactly as :func:`evaluate_chunk` makes them); then the feasible
    points of the chunks that lie in one network go to the batch engine in
    ONE :func:`~evaluator.evaluation.evaluate_groups` call (positions shifted
    by each chunk's offset in the concatenation), whose block size is the
    chunks' points together (``plan.chunk_size`` times their number; on CPU
    the block is capped as for any chunk, :func:`evaluator._batch.blocks.block_sizes`),
    and whose working set is checked by the same rule as a chunk's
    (:func:`evaluator._batch.memory.check_working_set`, inside the banked
    runner). Its per-point outputs are split back per chunk and each chunk's
    result finished as :func:`evaluate_chunk` finishes it (``ok`` sorted,
    ``paths_per_pair``, bounds per chunk): every key and array equal to
    :func:`evaluate_chunk`'s. The call's ``compile_s`` and ``eval_s`` are
    shared out in proportion to each chunk's evaluated points,
    ``n_compiles`` is given to the first chunk.

    Evaluated per chunk instead (:func:`evaluate_chunk`'s own call), where a
    batched call could differ from it or gains nothing:

    * a chunk of a jobs sweep (several jobs: :func:`~evaluator.sweep.jobs.evaluate_jobs_chunk`);
    * a chunk without feasible points (nothing to evaluate), or alone in its network among ``chunks``;
    * a path-set routing (``routing.needs_pairs``: the batch binds the router pairs of all its points, and an
      unroutable pair's error no point explains would make the other chunks' points infeasible too);
    * a latency model, ``sharing`` other than ``bound``, phased or dense traffic (the whole batch's path and the
      dense runner pad to the bucket of the call's points: other shapes, other programs);
    * a network without planned flow banks (more than :data:`MAX_PLANNED_TRAFFICS` traffic configs: a bank of
      the call's own traffics, whose shape depends on which traffics the call holds);
    * a batched call that raises (a working set that does not fit at the larger block included): its chunks are
      evaluated again one by one, so that each is refused (or not) exactly as on its own.
    """
    st = _state(plan)
    preps: list = [_prepare(plan, st, pts) for pts in chunks]
    out: list[dict[str, Any] | None] = [None] * len(preps)
    together: dict[tuple[int, int], list[int]] = {}
    for i, p in enumerate(preps):
        if isinstance(p, dict):
            out[i] = p
        elif not (p.device or p.host):
            out[i] = _finish(plan, st, p, None)
        elif _batchable(plan, st, p):
            together.setdefault((id(p.topo), id(p.routing)), []).append(i)
    for members in together.values():
        parts = _evaluate_together(plan, st, [preps[i] for i in members]) if len(members) > 1 else None
        for k, i in enumerate(members):
            out[i] = _finish(plan, st, preps[i], parts[k] if parts is not None else _evaluate(plan, st, preps[i]))
    for i, p in enumerate(preps):
        if out[i] is None:  # (not batchable)
            out[i] = _finish(plan, st, p, _evaluate(plan, st, p))
    return out  # type: ignore[return-value]


def _batchable(plan: SweepPlan, st: _State, p: _Prepared) -> bool:
    """Whether the chunk ``p`` may be evaluated together with others of its network (see :func:`evaluate_chunks`)."""
    if p.routing.needs_pairs or p.topo.latency is not None or plan.sharing != "bound":
        return False
    if any(g.traffic.kernel_input != "flows" for _, g, _ in p.device + p.host):
        return False
    return st.bank_plan(plan, p.first()) is not None


def _evaluate(plan: SweepPlan, st: _State, p: _Prepared, groups: list | None = None, block_size: int | None = None):
    """:func:`~evaluator.evaluation.evaluate_groups` of the chunk ``p`` (or of ``groups``, points of chunks of
    ``p``'s network, in blocks of ``block_size``)."""
    first = p.first()
    return evaluate_groups(p.topo, p.routing, p.groups() if groups is None else groups,
                           keep_link_load=plan.keep_link_load, chunk_size=block_size or plan.chunk_size,
                           sharing=plan.sharing, fairness=plan.fairness, progression=plan.progression,
                           banks=lambda: st.bank_plan(plan, first))


def _evaluate_together(plan: SweepPlan, st: _State, preps: list[_Prepared]) -> list | None:
    """One evaluation of the feasible points of ``preps`` (chunks of one network), split back per chunk as the
    :class:`~evaluator._batch.groups.GroupResults` each would have had; None where the call raised or gave back
    what cannot be split (the chunks are then evaluated one by one)."""
    offsets = np.cumsum([0] + [p.flat.size for p in preps])
    groups = [g for p, off in zip(preps, offsets) for g in p.groups(int(off))]
    try:
        res = _evaluate(plan, st, preps[0], groups, plan.chunk_size * len(preps))
    except Exception:  # noqa: BLE001 - evaluated again per chunk, which raises (or refuses) as on its own
        return None
    if res.phases is not None or res.infeasible:
        return None  # (not on this path: phases and path sets are evaluated per chunk)
    pos = np.asarray(res.positions, np.int64)
    chunk_of = np.searchsorted(offsets, pos, side="right") - 1
    share = np.bincount(chunk_of, minlength=len(preps)) / max(pos.size, 1)
    parts = []
    for k in range(len(preps)):
        sel = np.flatnonzero(chunk_of == k)
        parts.append(res._replace(
            positions=res.positions[sel] - offsets[k],
            metrics={key: v[sel] for key, v in res.metrics.items()},
            link_load=None if res.link_load is None else res.link_load[sel],
            compile_s=res.compile_s * float(share[k]), eval_s=res.eval_s * float(share[k]),
            n_compiles=res.n_compiles if k == 0 else 0))
    return parts


def _prepare(plan: SweepPlan, st: _State, flat: PointInts) -> _Prepared | dict[str, Any]:
    """Build the points ``flat`` of one chunk: their groups, reasons and costs (see :func:`evaluate_chunk`); a jobs
    sweep's chunk is evaluated at once (its result returned)."""
    t0 = time.perf_counter()
    flat = np.asarray(flat, dtype=np.int64)
    n = flat.size
    idx = np.stack(np.unravel_index(flat, plan.shape)) if plan.axes else np.zeros((0, n), np.int64)
    if C.has_jobs(plan.group_config(tuple(int(v) for v in idx[:, 0]))):  # several jobs: a sweep of one sort
        out = evaluate_jobs_chunk(plan, flat, plan.point_config)
        out["peak_rss_bytes"] = peak_rss_bytes()
        out["xla_one_core"] = is_one_core()
        return out
    reasons = _Reasons(n)
    costs = _Costs(n)
    cols = list(st.group_cols)
    if cols:
        # the groups: one integer per combination of the group axes (their row-major index, so the same order
        # as np.unique of the rows, axis=0: 32 against 515 us a 1,024-point chunk)
        sizes = tuple(plan.shape[c] for c in cols)
        group_keys, inverse = np.unique(np.ravel_multi_index(tuple(idx[c] for c in cols), sizes), return_inverse=True)
        keys, inverse = np.stack(np.unravel_index(group_keys, sizes), axis=1), inverse.reshape(-1)
    else:
        keys, inverse = np.zeros((1, 0), np.int64), np.zeros(n, np.int64)
    by_group = np.argsort(inverse, kind="stable")
    bounds = np.searchsorted(inverse[by_group], np.arange(keys.shape[0] + 1))
    seed_idx = idx[st.seed_axis] if st.seed_axis is not None else None
    device: list[tuple[np.ndarray, _Group, np.ndarray]] = []  # (positions, group, seeds)
    host: list[tuple[np.ndarray, _Group, list[Placement]]] = []  # (positions, group, placements)
    topo = routing = None
    for gi in range(keys.shape[0]):
        members = by_group[bounds[gi]:bounds[gi + 1]]
        gidx = [0] * len(plan.axes)
        for c, v in zip(cols, keys[gi]):
            gidx[c] = int(v)
        grp = st.group(plan, tuple(gidx))
        costs.set(members, grp.cost)
        if grp.spec is not None or (grp.reason and grp.after_seed):
            # the seed is checked here (device-drawn placements), or before the group's own error
            if seed_idx is not None and st.any_bad_seed:
                for code in np.unique(seed_idx[members]):
                    text = st.seed_reasons[int(code)]
                    if text:
                        sel = seed_idx[members] == code
                        reasons.set(members[sel], text)
                        members = members[~sel]
            elif seed_idx is None and grp.seed is not None and _seed_reason(grp.seed):
                reasons.set(members, _seed_reason(grp.seed))
                continue
        if grp.reason:
            reasons.set(members, grp.reason)
            continue
        if members.size == 0:
            continue
        topo, routing = grp.topology, grp.routing
        if grp.spec is not None:
            if seed_idx is not None:
                seeds = st.seed_values[seed_idx[members]]
            else:
                seeds = np.full(members.size, int(grp.seed), dtype=np.uint64)
            device.append((members, grp, seeds))
        elif grp.placement is not None:
            host.append((members, grp, [grp.placement] * members.size))
        else:
            ok, pls = [], []
            for m in members:
                pcfg = dataclasses.replace(grp.config.placement, seed=plan.axes[st.seed_axis].values[seed_idx[m]][0])
                try:
                    pls.append(C.build_placement(pcfg, grp.topology, grp.config.traffic, grp.traffic.n_tasks,
                                                 grp.config.topology))
                    ok.append(m)
                except ConfigError as exc:
                    reasons.set([m], reason(exc))
            if ok:
                host.append((np.asarray(ok, dtype=np.int64), grp, pls))
    t_build = time.perf_counter() - t0
    return _Prepared(flat, idx, reasons, costs, device, host, topo, routing, t_build)


def _finish(plan: SweepPlan, st: _State, p: _Prepared, res: Any) -> dict[str, Any]:
    """The result of the chunk ``p`` (see :func:`evaluate_chunk`) from ``res``, the
    :class:`~evaluator._batch.groups.GroupResults` of its feasible points (None: it has none)."""
    reasons, idx, device, host, topo, routing = p.reasons, p.idx, p.device, p.host, p.topo, p.routing
    out: dict[str, Any] = {"flat": p.flat, "reason_code": reasons.codes, "reasons": reasons.table,
                           "build_s": p.build_s, "compile_s": 0.0, "eval_s": 0.0}
    if p.costs.values:
        out["cost"] = p.costs.values
    if res is not None:
        for positions, exc in res.infeasible:
            reasons.set(positions, reason(exc))
        out.update(compile_s=res.compile_s, eval_s=res.eval_s)
        if res.n_compiles:
            out["n_compiles"] = res.n_compiles
    if res is not None and res.positions.size:
        res = res._asdict()
        order = np.argsort(res["positions"], kind="stable")
        out["ok"] = res["positions"][order]
        out["metrics"] = {k: v[order] for k, v in res["metrics"].items()}
        if "paths_per_pair" not in out["metrics"]:  # the kernels' sweep path: one value for the chunk's routing
            out["metrics"]["paths_per_pair"] = routing.paths_per_pair(out["ok"].size)
        out["class_names"] = list(topo.class_names)
        if res.get("phases") is not None:
            ph = res["phases"]
            out["phases"] = {"ok": out["ok"], "names": ph["names"],
                             **{k: ph[k][order] for k in ("phase_completion_time", "phase_total_bytes",
                                                          "phase_bottleneck", "phase_time_with_latency",
                                                          "phase_time_max_min") if k in ph}}
        if res["link_load"] is not None:
            out["link_load"] = res["link_load"][order]
            out["n_links"] = topo.n_links
        if plan.bounds is not None:
            tb = time.perf_counter()
            out["bounds"] = _bounds(plan, st, idx, device, host, out["ok"], out["metrics"]["completion_time"])
            out["bound_s"] = time.perf_counter() - tb
    out["peak_rss_bytes"] = peak_rss_bytes()
    out["xla_one_core"] = is_one_core()
    return out


def _bounds(plan: SweepPlan, st: _State, idx: np.ndarray, device: list, host: list, ok: np.ndarray,
            achieved: np.ndarray) -> dict:
    """The bounds of the feasible points ``ok`` (:func:`~evaluator.sweep.bounds.chunk_bounds`): one per distinct
    bound key (the point's indices on :attr:`_State.bound_axes`), placements drawn on the host when solved."""
    where: dict[int, tuple] = {}
    for members, grp, seeds in device:
        for m, s in zip(members.tolist(), seeds.tolist()):
            where[m] = (grp, ("seed", s))
    for members, grp, pls in host:
        for m, p in zip(members.tolist(), pls):
            where[m] = (grp, ("placement", p))
    items, made = [], {}
    for k, m in enumerate(ok.tolist()):
        grp, (kind, val) = where[m]
        key = tuple(int(idx[i, m]) for i in st.bound_axes)
        if key not in made:
            # drawn only if the key is solved here (not when the worker's cache already holds its bound)
            made[key] = (lambda spec=grp.spec, seed=int(val): spec.placement(seed)) if kind == "seed" else val
        items.append((key, grp.topology, grp.traffic, made[key]))
    return chunk_bounds(plan, items, achieved, st.bound_cache)


def peak_rss_bytes() -> int:
    """Peak resident memory of this process, bytes (Linux reports KiB). Records before 2026-12-07 held it in MiB
    under ``*_peak_rss_mb`` (:func:`evaluator.display.format_timing` reads both)."""
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024
