"""Bounds in sweeps: ``optimal_completion_time`` and ``routing_efficiency`` per feasible point.

A sweep whose config sets ``bounds`` (``true`` or a method of
:data:`~evaluator.lp.bounds.BOUND_METHODS`) gets, at every feasible point,
the best completion time any routing reaches (:func:`evaluator.lp.bounds.optimal`,
the same computation as ``evaluate(..., bounds=True)``), the routing
efficiency (optimal / achieved completion time) and, per point, the
method and solver that ran and the bound's gap.

The optimum depends on the topology, the traffic and the placement, not on
the routing: it is computed once per distinct *bound key*, the point's value
indices on every axis that is not a routing axis
(:meth:`SweepPlan.family_axes` of topology, traffic and placement, the seed
axis included), within a chunk, and with ``bound_solver=highs`` across the
chunks a worker process evaluates (a chunk holds one routing: routing axes
split networks), so every routing of a placement after the first reuses it.

Solvers (``bound_solver``): ``highs`` solves each LP on its own (exact). With
``pdhg``, the chunk's LP instances are grouped by MPAX's padded shape bucket;
a bucket with at least :data:`PDHG_MIN_BATCH` instances is solved in batches
of at most :data:`PDHG_BATCH` (one ``vmap``-ed call each, the last padded by
repeating its last instance so that every batch shares one compilation), each
batch warm-started from the previous one of the same bucket *within the
chunk* (so a chunk stays a pure function of its points, and a resumed sweep
is identical to an uninterrupted one); smaller buckets go to HiGHS. Garg-Konemann
(no LP) runs per instance. The per-point ``bound_solver`` says which ran. An edge
LP that PDHG leaves unconverged (MPAX's status not optimal) keeps its certified
lower side (its duals as link lengths) and has no feasible side (``inf``, gap
``inf``). HiGHS without an optimum gives neither flows nor duals: that point's
bound variables are NaN (its exact evaluation is kept) and ``bound_status``
says why, per point (``highs: <HiGHS's status>``; ``pdhg: <MPAX's status>`` for
an unconverged PDHG LP, whose lower side is kept; :data:`OK` where every LP of
the point reached its optimum or none was solved), so one numerically awkward
point does not stop a sweep (until 2026-12-07 it stopped the chunk with a
:class:`ConfigError` naming ``bound_solver``).

:func:`check_sweep_bounds` refuses, before anything runs, a sweep whose LPs
would not fit in memory, from the LPs' own size estimates
(:func:`evaluator.lp.edge_size` and Garg-Konemann's distance tables) with at
most every router a source.
"""

from __future__ import annotations

import dataclasses
import itertools
import math

import numpy as np

from .. import config as C
from .._types import Float
from ..errors import ConfigError, available_memory, check_memory
from ..lp import (EDGE_AUTO_NNZ, LP, RouterDemand, adaptive_classes, adaptive_size, dragonfly_adaptive_bound, edge_lp,
                  edge_size, optimal_bound, path_lp, solve_highs, solve_pdhg, z_from_objective)
from ..lp import METHOD as ADAPTIVE_METHOD
from ..lp import BYTES_PER_NNZ, certify_edge_solution, certify_path_solution, check_adaptive_size, padded_size
from ..lp import PDHG_OPTIMAL, NotSolved, check_demand, check_solved, normalized, pdhg_status
from ..lp.bounds import BoundResult, bound_kind, check_bounds, combine, optimal, router_demand
from ..topology import DragonflyTopology

__all__ = ["sweep_bounds", "check_sweep_bounds", "chunk_bounds", "bound_variables", "PDHG_MIN_BATCH",
           "PDHG_BATCH", "OK"]

PDHG_MIN_BATCH = 4
"""``bound_solver=pdhg``: a padded shape bucket needs at least this many LP instances in a chunk to be solved
batched; fewer go to HiGHS (a batch pays one compilation per bucket, 20-50 s on CPU)."""

PDHG_BATCH = 32
"""``bound_solver=pdhg``: instances per batched call (the batch axis of the compiled solver)."""

OK = "ok"
"""``bound_status`` of a point whose every LP reached its optimum (or that solved none: Garg-Konemann, no demand)."""


def bound_variables(method: str) -> tuple[str, ...]:
    """Variables a sweep with ``bounds=method`` adds (none without): the :class:`~evaluator.lp.bounds.BoundKind`'s
    lower bound, feasible side and efficiency, then ``bound_gap``, ``bound_method``, ``bound_solver`` and
    ``bound_status``."""
    return bound_kind(method).variables + ("bound_gap", "bound_method", "bound_solver", "bound_status")


def _status_word(solver: str, message: str) -> str:
    """``"highs: Numerical difficulties encountered"``: the solver and the head of its status message (HiGHS's
    text before SciPy's ``(HiGHS Status N: ...)`` detail)."""
    head = message.split(" (HiGHS Status")[0].strip().rstrip(".")
    return f"{solver}: {head or message}"


def _highs_failure(exc: ConfigError) -> str | None:
    """The ``bound_status`` of a bound that raised ``exc``, where ``exc`` says HiGHS stopped without an optimum
    on the bound's LP (a :class:`~evaluator.lp.NotSolved` named ``bound_solver`` by
    :func:`~evaluator.lp.bounds.optimal`); None for any other error (raised on)."""
    if not isinstance(exc, NotSolved) or exc.field != "bound_solver":
        return None
    return _status_word("highs", exc.status)


def _failed(method: str) -> BoundResult:
    """The bound of a point whose LP failed: no number (NaN), the method and solver that ran."""
    return BoundResult(math.nan, "edge" if method == "auto" else method, "highs", math.nan, math.nan)


def _exact(topo, traffic, placement, method: str, solver: str) -> tuple[BoundResult, str]:
    """``(bound, bound_status)`` of one point by :func:`~evaluator.lp.bounds.optimal` (HiGHS or Garg-Konemann);
    HiGHS without an optimum: NaN, and its status."""
    try:
        return optimal(topo, traffic, placement, method, solver), OK
    except ConfigError as exc:
        status = _highs_failure(exc)
        if status is None:
            raise
        return _failed(method), status


def sweep_bounds(cfg) -> tuple[str | None, str]:
    """``(method or None, solver)`` that a sweep's config asks for (``bounds``, ``bound_solver``), checked."""
    bounds = getattr(cfg, "bounds", False)
    solver = getattr(cfg, "bound_solver", "highs")
    if bounds is False or bounds is None:
        return None, solver
    return check_bounds(bounds, solver), solver


def _gk_bytes(S: int, R: int, E: int) -> int:
    """Garg-Konemann's working memory (its distance and demand tables), as :func:`evaluator.lp.garg_konemann`."""
    return 8 * S * R * 4 + 8 * E * 8


def _edge(S: int, R: int, E: int) -> tuple[int, int]:
    """``(nonzeros, bytes)`` of the edge LP with ``S`` sources and every source sending to every router
    (:func:`evaluator.lp.edge_size` with at most ``S * R`` pairs)."""
    nnz = 3 * S * E + S * R + S
    return nnz, BYTES_PER_NNZ * nnz + 64 * ((S * E + 1) + (S * R + E))


def bound_bytes(topology, n_senders: int, method: str, batch: int = 1) -> tuple[int, str]:
    """Upper estimate (bytes) of one bound's working memory on ``topology`` with at most ``n_senders``
    sending tasks, and what it is; ``batch`` LPs at once (batched PDHG)."""
    R, E = int(topology.n_routers), int(topology.n_router_links)
    S = max(1, min(R, int(n_senders)))
    nnz, eb = _edge(S, R, E)
    gk = _gk_bytes(S, R, E)
    if method in ADAPTIVE_METHOD.values():  # counted from the builder, every router sending to every group: an
        size = adaptive_size(topology, router=method == ADAPTIVE_METHOD[True])  # upper bound for any traffic
        return batch * size["bytes"], (f"the Dragonfly adaptive LP ({size['classes']:,} path classes, "
                                       f"{size['nnz']:,} nonzeros)")
    what_edge = f"the edge LP ({S:,} sources x {E:,} router links: {nnz:,} nonzeros)"
    what_gk = f"Garg-Konemann's {S:,} x {R:,} distance tables"
    if method == "edge":
        return batch * eb, what_edge
    if method == "garg_konemann":
        return gk, what_gk
    # auto: the edge LP while it has at most EDGE_AUTO_NNZ nonzeros (fewer sources at run time: smaller), else
    # Garg-Konemann, or an edge LP of fewer sources up to EDGE_AUTO_NNZ nonzeros
    if nnz <= EDGE_AUTO_NNZ:
        return batch * eb, what_edge
    return max(gk, batch * (BYTES_PER_NNZ + 128) * EDGE_AUTO_NNZ), what_gk


MAX_CHECKED = 64
""":func:`check_sweep_bounds` builds at most this many distinct (topology, traffic) configs to bound the
number of sending tasks; beyond, each topology is checked with every router a source."""


def check_sweep_bounds(plan) -> None:
    """Refuse (:class:`~evaluator.errors.ResourceError`) a sweep with ``bounds`` whose LPs would not fit in 80%
    of the available memory, before anything runs; a :class:`ConfigError` for ``dragonfly_adaptive`` on a
    topology that is not a Dragonfly of at least 3 groups. Configs that do not build are left to the sweep
    (their points are infeasible)."""
    if plan.bounds is None:
        return
    topo_axes = plan.family_axes("topology")
    tr_axes = plan.family_axes("topology", "traffic")
    sizes = [range(plan.axes[i].size) for i in tr_axes]
    n_combos = math.prod(len(s) for s in sizes)
    use_axes, with_traffic = (tr_axes, True) if n_combos <= MAX_CHECKED else (topo_axes, False)
    batch = PDHG_BATCH if plan.bound_solver == "pdhg" else 1
    seen: set = set()
    for combo in itertools.product(*(range(plan.axes[i].size) for i in use_axes)):
        idx = [0] * len(plan.axes)
        for i, v in zip(use_axes, combo):
            idx[i] = v
        for gkey in plan.bases:  # config-group choices
            for i, v in zip(plan.group_axes, gkey):
                idx[i] = v
            cfg = plan.group_config(tuple(idx), tuple(sorted(set(use_axes) | set(plan.group_axes))))
            key = (repr(cfg.topology), repr(cfg.traffic) if with_traffic else "")
            if key in seen:
                continue
            seen.add(key)
            try:
                topo = C.build_topology(cfg.topology)
            except ConfigError:
                continue
            if plan.bounds in ADAPTIVE_METHOD.values() and not (isinstance(topo, DragonflyTopology) and topo.g >= 3):
                raise ConfigError("bounds", plan.bounds,
                                  "a sweep whose topologies are Dragonflies of at least 3 groups",
                                  f"Topology {topo.name} cannot take it; use bounds=true (the all-paths optimum).")
            senders = topo.n_routers
            if with_traffic:
                try:
                    senders = _n_senders(C.build_traffic(cfg.traffic, topo))
                except ConfigError:
                    continue
            need, what = bound_bytes(topo, senders, plan.bounds, batch)
            per = f" per batch of {batch}" if batch > 1 else ""
            check_memory("bounds", plan.bounds, need, f"on {topo.name}, {what}{per}",
                         "Use bounds=garg_konemann, bound_solver=highs, or a smaller network.")


def _n_senders(traffic) -> int:
    """Sending tasks of the largest phase of a traffic (an upper bound on the source routers of a phase's
    demand: each phase's bound is solved on its own)."""
    return max(x.n_senders for x in traffic.phases)


@dataclasses.dataclass
class _Instance:
    """One LP instance of a chunk: the bound key it belongs to, its LP, the method, and how to certify an answer:
    ``certify(x, ub_dual, z_primal) -> (z_lower, z_upper)`` (1/s)."""

    key: int
    lp: LP
    method: str
    certify: object
    exp: int = 0
    """The demand was scaled by ``2**exp`` (:func:`~evaluator.lp._flow.normalized`): times are over ``2**exp``."""


def chunk_bounds(plan, items: list, achieved: Float[np.ndarray, "point"], cache: dict | None = None) -> dict:
    """The bounds of a chunk's feasible points.

    ``items[i] = (bound key, topology, traffic, placement)`` for the ``i``-th
    feasible point (``placement`` may be a zero-argument callable drawing it:
    it is called only for a key that is solved here, not for a cached one;
    ``achieved[i]``: the point's completion time, s). Returns per-point
    arrays of the bound's three variables (:func:`bound_variables`: the
    certified lower bound and the feasible side in s, the efficiency),
    ``bound_gap``, and ``bound_method``/``bound_solver``/``bound_status`` as
    codes into ``methods``/``solvers``/``statuses`` (lists of strings). A point
    whose HiGHS LP stopped without an optimum has NaN in the four numbers and
    HiGHS's status in ``bound_status`` (see the module docstring).

    ``cache`` (the worker's, kept across the chunks it evaluates): bound key ->
    result, used with ``bound_solver=highs`` only. HiGHS and Garg-Konemann
    give the same answer for the same demand wherever they run, so a result
    reused from an earlier chunk (the same placement under another routing:
    routings are in different chunks, one network each) is the one this chunk
    would compute. Batched PDHG results depend on the batch they were solved
    in (padding, warm start), so they are shared within a chunk only.
    """
    method, solver = plan.bounds, plan.bound_solver
    first: dict = {}
    for i, (key, topo, traffic, placement) in enumerate(items):
        first.setdefault(key, (topo, traffic, placement))
    keys = list(first)

    def point(k):
        topo, traffic, placement = first[k]
        return topo, traffic, placement() if callable(placement) else placement

    kindex = {k: j for j, k in enumerate(keys)}
    res: list = [None] * len(keys)  # (BoundResult, bound_status) per key
    if solver == "pdhg":
        statuses: list[str] = [OK] * len(keys)
        res = list(zip(_batched([point(k) for k in keys], method, statuses), statuses))
    else:
        cache = {} if cache is None else cache
        for j, k in enumerate(keys):
            hit = cache.get(k)
            if hit is None:
                hit = _exact(*point(k), method, solver)  # (a failure too: HiGHS gives it again for this demand)
                if hasattr(cache, "put"):
                    cache.put(k, hit)
                else:
                    cache[k] = hit
            res[j] = hit
    methods, solvers, status_codes = _Codes(), _Codes(), _Codes()
    lower, upper, eff = bound_kind(method).variables
    n = len(items)
    out = {lower: np.empty(n), upper: np.empty(n), eff: np.empty(n), "bound_gap": np.empty(n),
           "bound_method": np.empty(n, np.int32), "bound_solver": np.empty(n, np.int32),
           "bound_status": np.empty(n, np.int32)}
    for i, (key, *_rest) in enumerate(items):
        r, status = res[kindex[key]]
        a = float(achieved[i])
        out[lower][i] = r.completion_time
        out[upper][i] = r.completion_time_upper
        # as evaluate(..., bounds=True); NaN where the LP failed (never the 1.0 of a point with no time)
        out[eff][i] = math.nan if math.isnan(r.completion_time) else r.completion_time / a if a > 0 else 1.0
        out["bound_gap"][i] = r.gap
        out["bound_method"][i] = methods.code(r.method)
        out["bound_solver"][i] = solvers.code(r.solver)
        out["bound_status"][i] = status_codes.code(status)
    out["methods"], out["solvers"], out["statuses"] = methods.table, solvers.table, status_codes.table
    return out


class _Codes:
    def __init__(self):
        self.table: list[str] = []
        self._index: dict[str, int] = {}

    def code(self, text: str) -> int:
        if text not in self._index:
            self._index[text] = len(self.table)
            self.table.append(text)
        return self._index[text]


def _batched(points: list, method: str, statuses: list[str] | None = None) -> list:
    """``bound_solver=pdhg``: the bound of every (topology, traffic, placement), summed over phases; LPs
    batched by padded shape bucket, every answer certified from its flows and duals.

    ``statuses`` (one per point, :data:`OK` on entry): each point's ``bound_status`` is written there; a point
    whose LP went to HiGHS (a small bucket) and stopped without an optimum then gets NaN (an unconverged PDHG
    LP keeps its certified lower side). Without ``statuses`` such a point is a :class:`ConfigError` naming
    ``bound_solver``."""
    parts: list[list] = [[] for _ in points]  # per key: (lower s, upper s, method, solver) per phase
    failed: set[int] = set()

    def note(j: int, status: str, fails: bool = False) -> None:
        if statuses is not None:
            statuses[j] = status if statuses[j] == OK else f"{statuses[j]}; {status}"
        if fails:
            failed.add(j)

    lps: list[_Instance] = []
    for j, (topo, traffic, placement) in enumerate(points):
        for x in traffic.phases:
            demand = router_demand(topo, x, placement)
            check_demand(topo, demand)
            demand, e = normalized(demand)  # by a power of two: capacity / bytes finite (1e-300 bytes)
            inst, done = _lp_of(topo, demand, method, j)
            if done is not None:
                parts[j].append((math.ldexp(done.completion_time, -e), math.ldexp(done.completion_time_upper, -e),
                                 done.method, done.solver))
            else:
                lps.append(dataclasses.replace(inst, exp=e))
    by_bucket: dict[tuple, list[_Instance]] = {}
    for inst in lps:
        lp = inst.lp
        b = (padded_size(lp.n_vars), padded_size(lp.A_eq.shape[0], 1), padded_size(lp.A_ub.shape[0], 1),
             padded_size(lp.A_eq.nnz, 1), padded_size(lp.A_ub.nnz, 1))
        by_bucket.setdefault(b, []).append(inst)

    def record(inst, x, ub_dual, objective, solver, converged=True):
        # an unconverged PDHG primal is no feasible flow: its Z is not a feasible side (path LPs rebuild theirs)
        lo, up = inst.certify(x, ub_dual, z_from_objective(inst.lp, objective) if converged else 0.0)
        parts[inst.key].append((math.ldexp(1.0 / up if up > 0 else math.inf, -inst.exp),
                                math.ldexp(1.0 / lo if lo > 0 else math.inf, -inst.exp), inst.method, solver))

    for b in sorted(by_bucket):
        insts = by_bucket[b]
        if len(insts) < PDHG_MIN_BATCH:
            for inst in insts:
                sol = solve_highs(inst.lp)
                if statuses is not None and not math.isfinite(sol.objective):  # no optimum: no flows, no duals
                    note(inst.key, _status_word("highs", sol.status), fails=True)
                    parts[inst.key].append((math.nan, math.nan, inst.method, "highs"))
                    continue
                sol = check_solved(sol, "bound_solver",
                                   f"the {inst.method} LP ({inst.lp.n_vars:,} variables, {inst.lp.nnz:,} nonzeros)",
                                   f"(A shape bucket of fewer than {PDHG_MIN_BATCH} LPs goes to HiGHS.) "
                                   "bounds=garg_konemann solves no LP.")
                record(inst, sol.x, sol.ub_dual, sol.objective, "highs")
            continue
        size = min(PDHG_BATCH, padded_size(len(insts), 1))
        prev = None
        for s in range(0, len(insts), size):
            batch = insts[s:s + size]
            padded = [x.lp for x in batch] + [batch[-1].lp] * (size - len(batch))
            prev = solve_pdhg(padded, warm_start=prev, eps=1e-6)
            for i, inst in enumerate(batch):
                converged = int(prev.status[i]) == PDHG_OPTIMAL
                record(inst, prev.x[i], prev.ub_dual[i], float(prev.objective[i]), "pdhg", converged)
                if not converged:  # its certified lower side kept, no feasible side
                    note(inst.key, f"pdhg: {pdhg_status(prev.status[i])}")
    out = [combine(p) for p in parts]
    for j in failed:  # the other phases' sum is no bound of the point
        out[j] = dataclasses.replace(out[j], completion_time=math.nan, completion_time_upper=math.nan,
                                     gap=math.nan)
    return out


def _lp_of(topo, demand: RouterDemand, method: str, key: int):
    """``(instance to batch, None)``, or ``(None, PathBound)`` when it is solved here (no demand,
    Garg-Konemann, an edge LP ``auto`` leaves to Garg-Konemann)."""
    cap = np.asarray(topo.capacity, dtype=np.float64)
    if method in ADAPTIVE_METHOD.values():
        router = method == ADAPTIVE_METHOD[True]
        check_adaptive_size(topo, demand, router=router)  # refused before it is built
        inc, pair, gbytes, fixed, _ = adaptive_classes(topo, demand, router)
        if not gbytes.size:
            return None, dragonfly_adaptive_bound(topo, demand, "highs", router)
        lp = path_lp(inc, pair, gbytes, cap, fixed)

        def certify(x, ub_dual, _z):  # flows and duals back from the LP's per-pair and per-row units
            return certify_path_solution(lp, inc, pair, gbytes, cap, fixed, x, ub_dual)

        return _Instance(key, lp, method, certify), None
    if demand.n_pairs == 0:
        return None, optimal_bound(topo, demand, method, "highs")
    if method == "auto":
        size = edge_size(topo, demand)
        method = "edge" if size["nnz"] <= EDGE_AUTO_NNZ and size["bytes"] <= 0.8 * available_memory() \
            else "garg_konemann"
    if method == "garg_konemann":
        return None, optimal_bound(topo, demand, "garg_konemann", "highs")
    size = edge_size(topo, demand)
    if size["bytes"] > 0.8 * available_memory():
        return None, optimal_bound(topo, demand, "edge", "highs")  # raises the edge LP's ResourceError
    elp = edge_lp(topo, demand)
    return _Instance(key, elp, "edge",
                     lambda x, ub_dual, z: certify_edge_solution(topo, demand, elp, x, ub_dual, z)), None
