"""Batched local search over slot assignments (iterated local search with multi-move acceptance).

Every iteration draws a batch of candidate moves (:mod:`._moves`: swaps of
two slots, or of two nodes' or routers' slots), scores them all in one
device call, and applies the best improving ones:

* *improving* is lexicographic: a lower predicted completion time, or the
  same time and a lower ``q``-norm of the link times (the plateaus of a
  maximum are wide; the norm says which way is downhill);
* up to ``m`` improving moves on disjoint slots are applied together and the
  state is re-evaluated from scratch (exact); when the combination is not
  better than the best single move (the moves interact through shared
  links), only the best single move is kept and ``m`` halves, else ``m``
  doubles;
* the first slot of a candidate is drawn by *heat* (how much the task's
  flows load the hot links: the gradient of the norm with respect to the
  flows' bytes, through the routing) half of the time, uniformly otherwise;
  the second uniformly;
* with ``anneal`` (off by default), from the
  ``patience // 2``-th batch in a row without an improving move, such a
  batch is a batch of Metropolis proposals
  (simulated annealing on the ``q``-norm ``Q`` the search already uses):
  in the batch's (random) order, a candidate is accepted with probability
  ``exp(-max(dQ / Q, 0) / T)`` (``dQ / Q``: the relative rise of the norm),
  the first accepted is applied (one move; the others were proposed from
  the same state and rejected). The temperature falls geometrically with
  the fraction ``f`` of the budget spent (``iteration / max_iterations``
  where ``max_iterations`` is given, so that a seeded run is the same on
  every machine, else ``elapsed / budget``): ``T = T0 (T1 / T0) ** f``,
  :data:`ANNEAL_T0` (a norm 0.3 % higher accepted with probability 1/e) to
  :data:`ANNEAL_T1`;
* after ``patience`` batches where nothing was applied the search kicks:
  it applies a few random candidates (on disjoint slots) and goes
  on from there; the best state seen is kept, so the result is never worse
  than the start.

The move kinds (one per batch, chosen by :class:`KindScheduler` so that each
kind's share of the time follows :data:`KIND_WEIGHTS` scaled by what it
yielded per second, after a first sweep of one batch of each structured kind
and box shape, so that the coarse moves are tried before single swaps refine
the start):
``swap`` (two slots), ``node block`` and ``router block`` (two nodes' or
routers' slots), and on a torus whose slots fill every router equally the
structured moves of :mod:`._kinds` (``box swap``: two sub-boxes, one
reflected or turned; ``reflect``, ``shift``, ``rotate``: one sub-box's
contents mirrored, shifted cyclically or turned). The trace counts, per
kind, the moves scored, applied, and applied as improving ones
(:attr:`SearchTrace.kinds`).

The loop stops at the time budget (wall clock, compilation included) or at
``max_iterations``; a progress bar shows the best time.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from .._batch.compiled import compile_seconds
from .._types import Bool, Int
from ..display import format_value, progress_bar
from ._kinds import GRID_KINDS, box_moves, box_shapes, slot_grid

__all__ = ["SearchTrace", "local_search", "BOUND_RTOL", "KindScheduler", "ANNEAL_T0", "ANNEAL_T1", "KIND_WEIGHTS", "MIN_SHARE",
           "PRIOR_COST", "MOVE_KINDS", "TUNE_FROM", "TUNE_MIN_BATCHES", "compile_seconds"]

_REL = 1e-12

ANNEAL_T0 = 3e-3
"""Starting temperature of the annealing (relative rise of the q-norm accepted with probability 1/e)."""

ANNEAL_T1 = 1e-5
"""Final temperature (at the end of the budget)."""

STRUCTURED_FROM = 30.0
"""Budget (s) from which the default search uses the structured moves (their compilations cost seconds)."""

TUNE_FROM = 120.0
"""Budget (s) from which the search tunes its step (each of the evaluator's ``step_choices`` tried on two batches,
the fastest kept), unless fewer than :data:`TUNE_MIN_BATCHES` batches (``max_iterations``) end it first. Each step
tried compiles every scorer of the batch's levels again, 1.3-3.2 s each on 2 cores from a cold compilation cache (a
30-batch search of the halo trace on the 16x8x8 torus: 18 scorers with tuning, 10 without), while the default step
scored within 13 % of the best of the three on the bench's move rows (2026-12-02, 4,096 moves, 9 interleaved
rounds: torus power law, mesh halo and stencil, DF(4,8,4) power law and mesh halo). It was 30 s until then."""

TUNE_MIN_BATCHES = 100
"""Fewest batches (``max_iterations``) of a search that tunes its step (:data:`TUNE_FROM`)."""

MOVE_KINDS = ("swap", "node block", "router block") + GRID_KINDS
"""Every move kind, in the order the trace reports them."""

SWEEP_SHARE = 0.25
"""Share of the budget (seconds, or batches of ``--iterations``) within which the first sweep of the structured
kinds and box shapes runs (largest boxes first); the rest of the sweep is dropped, its kinds still chosen by
:class:`KindScheduler`. On a 27-point stencil under DOR a batch costs 1.5-3.7 s (2 loaded cores) and the sweep has
up to 28 entries: without the cap it took the whole of a 60 s budget, no single swap ran."""

KIND_WEIGHTS = {"swap": 3.0, "node block": 1.0, "router block": 1.0, "box swap": 1.0, "reflect": 0.5, "shift": 0.5,
                "rotate": 0.5}
"""Relative share of the search's cost given to each kind (among the kinds that apply) while the kinds yield
alike; :class:`KindScheduler` scales it by what each kind yielded."""

MIN_SHARE = 0.03
"""Least share of the search's cost every kind that applies keeps, whatever it yields (so that a kind that starts
paying late is still tried)."""

PRIOR_COST = 1.0
"""Cost (seconds, or batches under ``max_iterations``) of prior evidence a kind's yield rate starts from: the
rate of every kind together, until the kind has spent about this much itself."""


class KindScheduler:
    """Which move kind the next batch is (after the structured sweep): the kind furthest below its share of the
    cost spent so far (deficit round robin: the shares are met in cost, not in batches, so a kind whose batches
    cost seconds does not take the budget from one whose batches cost milliseconds).

    A kind's share is ``KIND_WEIGHTS[kind] x rate`` normalised, at least :data:`MIN_SHARE`, ``rate`` its
    yield per unit of cost: the relative decreases of the completion time and of the q-norm its improving
    batches made, with :data:`PRIOR_COST` of the overall rate as a prior. The cost is wall seconds, or batches
    where the search runs a fixed number of iterations (so that a seeded run is the same on every machine)."""

    def __init__(self, kinds: list[str]):
        self.kinds = list(kinds)
        self.cost = dict.fromkeys(self.kinds, 0.0)
        self.gain = dict.fromkeys(self.kinds, 0.0)

    def shares(self) -> dict[str, float]:
        total, gained = sum(self.cost.values()), sum(self.gain.values())
        overall = gained / total if total > 0 else 1.0
        raw = {k: KIND_WEIGHTS[k] * (self.gain[k] + overall * PRIOR_COST) / (self.cost[k] + PRIOR_COST)
               for k in self.kinds}
        norm = sum(raw.values())
        sh = {k: max(v / norm if norm > 0 else 1.0 / len(raw), MIN_SHARE) for k, v in raw.items()}
        norm = sum(sh.values())
        return {k: v / norm for k, v in sh.items()}

    def next(self) -> str:
        total = sum(self.cost.values())
        sh = self.shares()
        return max(self.kinds, key=lambda k: sh[k] * total - self.cost[k])  # ties: the order of the kinds

    def record(self, kind: str, cost: float, gain: float) -> None:
        self.cost[kind] += cost
        self.gain[kind] += max(gain, 0.0)


def _better(t1, q1, t0, q0):
    """Lexicographic (time, norm) improvement with a relative tolerance (arrays or scalars)."""
    return (t1 < t0 * (1 - _REL)) | ((t1 <= t0 * (1 + _REL)) & (q1 < q0 * (1 - _REL)))


@dataclass
class SearchTrace:
    """What the search did, one row per iteration (for the progress dataset)."""

    elapsed: list = field(default_factory=list)
    evaluated: list = field(default_factory=list)
    accepted: list = field(default_factory=list)
    completion_time: list = field(default_factory=list)
    best_completion_time: list = field(default_factory=list)
    kinds: dict = field(default_factory=dict)
    """Per move kind: ``[scored, applied, improving]`` (applied: by improvement, the Metropolis rule or a kick)."""
    seconds: dict = field(default_factory=dict)
    """Per move kind: wall seconds of its batches (drawing, scoring and applying; compilations included)."""
    compile_seconds: float = 0.0
    """Seconds this process spent lowering and compiling device calls during the search (:func:`compile_seconds`):
    a first run's new shapes; a run that finds them in the compilation cache spends far less."""
    stopped: str = "budget"
    """What ended the search: ``"budget"`` (its seconds or iterations ran out), ``"bound"`` (the best mapping met
    the lower bound ``target``: no mapping is faster, more search cannot gain) or ``"ctrl-c"`` (the user stopped it:
    the result is the best mapping seen until then)."""

    def count(self, kind: str, scored: int = 0, applied: int = 0, improving: int = 0, seconds: float = 0.0) -> None:
        c = self.kinds.setdefault(kind, [0, 0, 0])
        c[0] += scored
        c[1] += applied
        c[2] += improving
        self.seconds[kind] = self.seconds.get(kind, 0.0) + seconds

    def summary(self) -> str:
        """One line: each kind's moves applied and improving, of those scored, and its seconds (the kinds that
        paid, and what they cost)."""
        return "; ".join(f"{k}: {c[1]:,} applied, {c[2]:,} improving of {c[0]:,} in {self.seconds.get(k, 0.0):.1f} s"
                         for k, c in self.kinds.items())

    @classmethod
    def started(cls, t: float, kinds) -> "SearchTrace":
        """A trace with its first row (the start's time ``t``) and a count of zero for each move kind."""
        trace = cls()
        trace.add(0.0, 0, 0, t, t)
        for k in kinds:
            trace.count(k)
        return trace

    def add(self, elapsed, evaluated, accepted, t, best):
        self.elapsed.append(elapsed)
        self.evaluated.append(evaluated)
        self.accepted.append(accepted)
        self.completion_time.append(t)
        self.best_completion_time.append(best)


def _groups(slot_node: np.ndarray, node_router: np.ndarray, movable: np.ndarray | None = None,
            named: bool = False) -> list:
    """Slot groups for block moves: ``[n_groups, k]`` arrays of slots (the slots of one node, of one router) where
    every group of that level has the same size and there are at least two; with ``movable`` (per slot), only
    groups whose slots are all movable."""
    out, names = [], []
    for name, key in (("node block", slot_node), ("router block", node_router[slot_node])):
        _, inv, counts = np.unique(key, return_inverse=True, return_counts=True)
        if counts.size >= 2 and counts.min() == counts.max() and counts[0] > 1:
            order = np.argsort(inv, kind="stable")
            g = order.reshape(counts.size, counts[0])
            if movable is not None:
                g = g[movable[g].all(axis=1)]
            if g.shape[0] >= 2 and not any(x.shape == g.shape and np.array_equal(x, g) for x in out):
                out.append(g)
                names.append(name)
    return list(zip(names, out)) if named else out


def _tunes(budget: float, max_iterations: int | None) -> bool:
    """Whether a search of ``budget`` seconds and at most ``max_iterations`` batches tunes its step."""
    return budget >= TUNE_FROM and (max_iterations is None or max_iterations >= TUNE_MIN_BATCHES)


class _StepTuner:
    """Tries each of ``choices`` on two batches (the first compiles), keeps the fastest second call."""

    def __init__(self, choices):
        self.plan = [c for c in choices for _ in range(2)]
        self.seconds: dict[int, float] = {}
        self.best = None

    def pending(self) -> bool:
        return bool(self.plan)

    def next_step(self) -> int:
        return self.plan[0]

    def record(self, step: int, seconds: float) -> None:
        self.plan.pop(0)
        self.seconds[step] = seconds  # the second call's time stays (the first one's compiled)
        if not self.plan:
            self.best = min(self.seconds, key=self.seconds.get)


def _disjoint(cands: np.ndarray, a: np.ndarray, b: np.ndarray, limit: int) -> list[int]:
    """The first ``limit`` of the candidates ``cands`` (indices, in order) whose slots are disjoint."""
    used: set[int] = set()
    keep = []
    for i in cands:
        s = set(a[i].tolist()) | set(b[i].tolist())
        if s & used:
            continue
        used |= s
        keep.append(int(i))
        if len(keep) >= limit:
            break
    return keep


def _apply(slot_task: np.ndarray, a: np.ndarray, b: np.ndarray, picks) -> np.ndarray:
    out = slot_task.copy()
    for i in picks:
        out[a[i]], out[b[i]] = slot_task[b[i]], slot_task[a[i]]
    return out


def _plan_kinds(evaluator, kinds: tuple, budget: float, movable):
    """What a search may draw: ``(groups, grid, shapes, movable, use_kinds, sweep, fractions)`` (module
    docstring: the kinds that apply here, the structured moves' boxes and their first sweep, largest first)."""
    S = evaluator.n_slots
    node_router = np.asarray(evaluator.topology.node_router)
    bad = set(kinds) - set(MOVE_KINDS)
    if bad:
        raise ValueError(f"unknown move kinds {sorted(bad)}; known: {MOVE_KINDS}")
    groups = dict(g for g in _groups(evaluator.slot_node, node_router, movable, named=True) if g[0] in kinds)
    # the structured moves compile one scorer per kind and box shape: only with a budget that pays for that
    # (``STRUCTURED_FROM`` seconds) or where they are asked for by name
    want_grid = set(kinds) & set(GRID_KINDS) and (budget >= STRUCTURED_FROM or kinds != MOVE_KINDS)
    # the flow-list levels below the full width compile one scorer each, too: only with a budget that pays (a 10 s
    # search of a 1,024-rank mesh halo on a 16x8x8 torus scored 237,568 moves with them, 315,392 without: four
    # compilations in the budget); the evaluator's own setting otherwise
    fractions = () if budget < STRUCTURED_FROM and evaluator.level_fractions is None else None
    grid = slot_grid(evaluator.topology, evaluator.slot_node) if want_grid else None
    shapes = box_shapes(tuple(grid.shape[:-1])) if grid is not None else []
    mov = np.ones(S, bool) if movable is None else np.asarray(movable, bool)
    use_kinds = [k for k in kinds if k == "swap" or k in groups or (k in GRID_KINDS and shapes)]
    if "rotate" in use_kinds and not any(sum(x > 1 for x in sh) >= 2 for sh in shapes):
        use_kinds.remove("rotate")
    sweep = [(k, sh) for sh in sorted(shapes, key=lambda x: -int(np.prod(x))) for k in GRID_KINDS  # largest first
             if k in use_kinds and (k != "rotate" or sum(y > 1 for y in sh) >= 2)]
    return groups, grid, shapes, mov, use_kinds, sweep, fractions


def _swap_moves(pool: np.ndarray, heat: np.ndarray, candidates: int, rng) -> tuple[np.ndarray, np.ndarray]:
    """``candidates`` single swaps of two slots of ``pool``: one end drawn by heat half the time, the other
    uniformly, never the same slot."""
    n_pool = pool.size
    h = heat[pool]
    p = h + (h.sum() / n_pool if h.sum() > 0 else 1.0)
    hot = rng.choice(n_pool, size=candidates, p=p / p.sum())
    ia = np.where(rng.random(candidates) < 0.5, hot, rng.integers(n_pool, size=candidates))
    ib = (ia + 1 + rng.integers(n_pool - 1, size=candidates)) % n_pool  # != ia
    return pool[ia][:, None], pool[ib][:, None]


def _group_moves(g: np.ndarray, heat: np.ndarray, candidates: int, rng) -> tuple[np.ndarray, np.ndarray]:
    """Swaps of two groups of ``g`` (rows: a node's or a router's slots), drawn by the groups' heat."""
    n_g = g.shape[0]
    n_c = max(64, candidates // g.shape[1])  # a block move costs about k single ones
    gh = heat[g].sum(axis=1)
    p = gh + (gh.sum() / n_g if gh.sum() > 0 else 1.0)
    ga = rng.choice(n_g, size=n_c, p=p / p.sum())
    gb = (ga + 1 + rng.integers(n_g - 1, size=n_c)) % n_g
    return g[ga], g[gb]


def _structured_moves(kind: str, shape, shapes, grid, mov, candidates: int, rng) -> tuple[np.ndarray, np.ndarray]:
    """A structured move on the torus: boxes of one shape (``shape``, or one drawn from ``shapes``), of movable
    slots only, padded to the batch size by repeating the first (one compilation each); empty when none was
    drawn."""
    if shape is None:
        sh = [x for x in shapes if kind != "rotate" or sum(y > 1 for y in x) >= 2]
        shape = sh[int(rng.integers(len(sh)))]
    k = int(np.prod(shape)) * grid.shape[-1]
    n_c = max(64, candidates // k)
    a, b = box_moves(kind, grid, shape, 2 * n_c, rng)
    ok = mov[a].all(axis=1) & mov[b].all(axis=1)
    a, b = a[ok][:n_c], b[ok][:n_c]
    if 0 < a.shape[0] < n_c:
        rep = np.resize(np.arange(a.shape[0]), n_c)
        a, b = a[rep], b[rep]
    return a, b


@dataclass
class _Walk:
    """Where the search stands: the slot assignment, its link loads and scores, and the acceptance state (moves
    taken together at most, batches in a row without an improving move)."""

    state: np.ndarray
    loads: object
    t: float
    q: float
    m_accept: int = 8
    stale: int = 0

    def rescore(self, evaluator) -> None:
        """The state's loads and scores, evaluated afresh."""
        self.loads = evaluator.loads(self.state)
        self.t, self.q = evaluator.score(self.loads)

    def take(self, evaluator, a, b, picks) -> None:
        """Apply the moves ``picks`` of ``(a, b)`` and score the result afresh."""
        self.state = _apply(self.state, a, b, picks)
        self.rescore(evaluator)

    def improve(self, evaluator, a, b, tn, qn, good) -> tuple[int, float]:
        """Take the best improving moves that touch disjoint slots (up to ``m_accept``; only the best one when
        together they score worse than it alone, and ``m_accept`` halves; doubles when all were taken). Returns
        the moves taken and the relative gain."""
        t0, q0, before = self.t, self.q, self.state
        picks = _disjoint(good[np.lexsort((qn[good], tn[good]))], a, b, self.m_accept)
        self.take(evaluator, a, b, picks)
        i0 = picks[0]
        if len(picks) > 1 and not _better(self.t, self.q, tn[i0], qn[i0]) \
                and not (self.t == tn[i0] and self.q == qn[i0]):
            self.m_accept = max(1, self.m_accept // 2)
            picks = picks[:1]
            self.state = before
            self.take(evaluator, a, b, picks)
        elif len(picks) == self.m_accept:
            self.m_accept = min(256, self.m_accept * 2)
        self.stale = 0
        return len(picks), ((t0 - self.t) / t0 + (q0 - self.q) / q0 if t0 > 0 and q0 > 0 else 0.0)

    def escape(self, evaluator, a, b, qn, patience: int, anneal: bool, frac: float, rng) -> int:
        """A batch without an improving move: with ``anneal``, the first move the Metropolis rule accepts on the
        q-norm (after half the patience); else, after ``patience`` such batches, a kick of 1-4 random disjoint
        moves. Returns the moves taken."""
        self.stale += 1
        took = None
        if anneal and self.stale >= max(patience // 2, 1):  # Metropolis on the q-norm, candidates in batch order
            temp = ANNEAL_T0 * (ANNEAL_T1 / ANNEAL_T0) ** min(max(frac, 0.0), 1.0)
            rise = np.maximum((qn - self.q) / (self.q if self.q > 0 else 1.0), 0.0)
            ok = np.flatnonzero(rng.random(qn.size) < np.exp(-rise / temp))
            if ok.size:
                took = [int(ok[0])]
        if took is None and self.stale >= patience:  # kick: a few random moves
            took = _disjoint(rng.permutation(qn.size), a, b, int(rng.integers(1, 5)))
        if took is None:
            return 0
        self.stale = 0
        self.take(evaluator, a, b, took)
        return len(took)


def _score_moves(evaluator, state, loads, a, b, step, tune, fractions) -> tuple[np.ndarray, np.ndarray]:
    """The moves' ``(t, q)`` scores (host arrays); while ``tune`` (a :class:`_StepTuner`) still tries steps, a
    batch of single swaps is scored at its next step and timed."""
    st_dev, tn_dev = evaluator.device_state(state)
    if tune is not None and tune.pending() and a.shape[1] == 1:  # tuned on single swaps
        use_step = tune.next_step()
        t_call = time.perf_counter()
        tn, qn = evaluator.scores(st_dev, tn_dev, loads, a, b, step=use_step, host_state=state, fractions=fractions)
        tn = np.asarray(tn)
        tune.record(use_step, time.perf_counter() - t_call)
    else:
        tn, qn = evaluator.scores(st_dev, tn_dev, loads, a, b, host_state=state, fractions=fractions,
                                  step=step if step is not None else (tune.best if tune else None))
    return np.asarray(tn), np.asarray(qn)


def _ends(trace: SearchTrace, best: float, target: float | None, spent: bool) -> bool:
    """Whether the search ends before its next batch: its best time meets the lower bound ``target`` (no mapping
    is faster; ``trace.stopped`` becomes ``"bound"``), or its budget or iterations are ``spent``."""
    if target is not None and best <= target * (1.0 + BOUND_RTOL):
        trace.stopped = "bound"
        return True
    return spent


BOUND_RTOL = 1e-9
"""A mapping whose time is within this share above the lower bound meets it (the two are computed by different
arithmetic: the kernel's sums against the bound's)."""


def local_search(evaluator, slot_task: Int[np.ndarray, "slot"], *, budget: float, seed: int = 0, candidates: int = 4096,
                 step: int | None = None, max_iterations: int | None = None, patience: int = 4,
                 fixed_counts: bool = False, movable: Bool[np.ndarray, "slot"] | None = None,
                 progress: bool = True, kinds: tuple | None = None, anneal: bool = False, target: float | None = None
                 ) -> tuple[Int[np.ndarray, "slot"], SearchTrace]:
    """Improve ``slot_task`` (a permutation of the slots) with ``evaluator`` (a
    :class:`~._moves.MoveEvaluator`) for ``budget`` seconds; returns the best slot assignment seen and the
    trace. ``fixed_counts``: single swaps only between slots holding tasks, so that every node keeps its task
    count (whole nodes still swap): a launcher that fills every node with the same count can run the result.
    ``movable`` (bool per slot): block moves only between groups of movable slots. ``kinds``: the move kinds
    to use (default: every kind that applies, :data:`MOVE_KINDS`); ``anneal``: the Metropolis rule in batches
    without an improving move (default off: only the kicks). It stops early where its best meets ``target`` (a
    certified lower bound, s) or at a Ctrl-C, returning the best seen: ``trace.stopped`` (:func:`_ends`)."""
    rng = np.random.default_rng(seed)
    S = evaluator.n_slots
    groups, grid, shapes, mov, use_kinds, sweep, fractions = _plan_kinds(
        evaluator, MOVE_KINDS if kinds is None else tuple(kinds), budget, movable)
    scheduler = KindScheduler(use_kinds)
    w = _Walk(np.asarray(slot_task, np.int64).copy(), None, 0.0, 0.0)
    w.rescore(evaluator)
    best = (w.t, w.q, w.state.copy())
    trace = SearchTrace.started(w.t, use_kinds)
    t0 = time.perf_counter()
    # the step (moves per vmapped step) that runs fastest here: each of a few tried on two batches (the first
    # compiles), then the fastest kept; only with a budget that pays for the compilations
    tune = _StepTuner(evaluator.step_choices) if (step is None and evaluator.step_choices
                                                  and _tunes(budget, max_iterations)) else None
    evaluated, it, heat, compiled0 = 0, 0, None, compile_seconds()
    bar = progress_bar(total=round(budget, 1), enabled=progress, unit="s", leave=False,
                       desc="mapping search (Ctrl-C: stop, keep the best)",
                       bar_format="{desc}: {percentage:3.0f}%|{bar}| {n:.0f}/{total:.0f} s {postfix}")
    frac_of = lambda: (it / max_iterations if max_iterations is not None  # noqa: E731
                       else (time.perf_counter() - t0) / budget if budget > 0 else 1.0)
    try:
        while use_kinds and S >= 2:
            if _ends(trace, best[0], target, time.perf_counter() - t0 >= budget or it == max_iterations):
                break
            it += 1
            if heat is None or it % 4 == 1:  # the hot tasks drift slowly: every few batches
                heat = evaluator.heat(w.state, w.loads)
            # the move kind: single swaps mostly, block and structured moves where they apply
            t_batch = time.perf_counter()
            if sweep and frac_of() > SWEEP_SHARE:  # the sweep's share of the budget spent: the rest is dropped
                sweep = []
            # the first batches: each structured kind and shape once (coarse moves before fine ones)
            kind, shape = sweep.pop(0) if sweep else (scheduler.next(), None)
            if kind == "swap":
                pool = np.flatnonzero(w.state < evaluator.n_tasks) if fixed_counts else np.arange(S)
                if pool.size < 2:
                    break
            a, b = (_swap_moves(pool, heat, candidates, rng) if kind == "swap" else _group_moves(
                groups[kind], heat, candidates, rng) if kind in groups else _structured_moves(
                kind, shape, shapes, grid, mov, candidates, rng))
            if a.shape[0] == 0:  # no movable box drawn: its cost still counts, or the scheduler keeps it
                scheduler.record(kind, 1.0 if max_iterations is not None else time.perf_counter() - t_batch, 0.0)
                continue
            tn, qn = _score_moves(evaluator, w.state, w.loads, a, b, step, tune, fractions)
            evaluated += a.shape[0]
            good = np.flatnonzero(_better(tn, qn, w.t, w.q))
            if good.size:
                accepted, gain = w.improve(evaluator, a, b, tn, qn, good)
                improving = accepted
            else:
                accepted, improving, gain = w.escape(evaluator, a, b, qn, patience, anneal, frac_of(), rng), 0, 0.0
            took_s = time.perf_counter() - t_batch
            trace.count(kind, a.shape[0], accepted, improving, took_s)
            scheduler.record(kind, 1.0 if max_iterations is not None else took_s, gain)
            if _better(w.t, w.q, best[0], best[1]):
                best = (w.t, w.q, w.state.copy())
            elapsed = time.perf_counter() - t0
            trace.add(elapsed, evaluated, accepted, w.t, best[0])
            bar.n = min(round(elapsed, 1), bar.total)
            bar.set_postfix_str(f"best {format_value(best[0], 's')}, {evaluated / max(elapsed, 1e-9):,.0f} moves/s")
    except KeyboardInterrupt:  # the user's early stop: the best mapping seen so far (the trace's last row) is it
        trace.stopped = "ctrl-c"
    finally:
        bar.close()
        trace.compile_seconds = compile_seconds() - compiled0
    return best[2], trace
