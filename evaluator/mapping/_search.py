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
* after ``patience`` batches without an improving move the search kicks:
  it applies a few random candidates (on disjoint slots) and goes
  on from there; the best state seen is kept, so the result is never worse
  than the start.

The loop stops at the time budget (wall clock, compilation included) or at
``max_iterations``; a progress bar shows the best time.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from .._types import Bool, Int
from ..display import format_value

__all__ = ["SearchTrace", "local_search"]

_REL = 1e-12


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

    def add(self, elapsed, evaluated, accepted, t, best):
        self.elapsed.append(elapsed)
        self.evaluated.append(evaluated)
        self.accepted.append(accepted)
        self.completion_time.append(t)
        self.best_completion_time.append(best)


def _groups(slot_node: np.ndarray, node_router: np.ndarray, movable: np.ndarray | None = None) -> list[np.ndarray]:
    """Slot groups for block moves: ``[n_groups, k]`` arrays of slots (the slots of one node, of one router) where
    every group of that level has the same size and there are at least two; with ``movable`` (per slot), only
    groups whose slots are all movable."""
    out = []
    for key in (slot_node, node_router[slot_node]):
        _, inv, counts = np.unique(key, return_inverse=True, return_counts=True)
        if counts.size >= 2 and counts.min() == counts.max() and counts[0] > 1:
            order = np.argsort(inv, kind="stable")
            g = order.reshape(counts.size, counts[0])
            if movable is not None:
                g = g[movable[g].all(axis=1)]
            if g.shape[0] >= 2 and not any(x.shape == g.shape and np.array_equal(x, g) for x in out):
                out.append(g)
    return out


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


def local_search(evaluator, slot_task: Int[np.ndarray, "slot"], *, budget: float, seed: int = 0, candidates: int = 4096,
                 step: int | None = None, max_iterations: int | None = None, patience: int = 4,
                 fixed_counts: bool = False, movable: Bool[np.ndarray, "slot"] | None = None,
                 progress: bool = True) -> tuple[Int[np.ndarray, "slot"], SearchTrace]:
    """Improve ``slot_task`` (a permutation of the slots) with ``evaluator`` (a
    :class:`~._moves.MoveEvaluator`) for ``budget`` seconds; returns the best slot assignment seen and the
    trace. ``fixed_counts``: single swaps only between slots holding tasks, so that every node keeps its task
    count (whole nodes still swap): a launcher that fills every node with the same count can run the result.
    ``movable`` (bool per slot): block moves only between groups of movable slots."""
    from tqdm.auto import tqdm

    rng = np.random.default_rng(seed)
    S = evaluator.n_slots
    node_router = np.asarray(evaluator.topology.node_router)
    groups = _groups(evaluator.slot_node, node_router, movable)
    state = np.asarray(slot_task, np.int64).copy()
    loads = evaluator.loads(state)
    t, q = evaluator.score(loads)
    best = (t, q, state.copy())
    trace = SearchTrace()
    t0 = time.perf_counter()
    trace.add(0.0, 0, 0, t, t)
    # the step (moves per vmapped step) that runs fastest here: each of a few tried on two batches (the first
    # compiles), then the fastest kept; only with a budget that pays for the compilations
    tune = _StepTuner(evaluator.step_choices) if step is None and budget >= 30 and evaluator.step_choices else None
    m_accept, stale, evaluated, it = 8, 0, 0, 0
    heat, heat_every = None, 4
    bar = tqdm(total=round(budget, 1), unit="s", desc="mapping search", disable=not progress, leave=False,
               bar_format="{desc}: {percentage:3.0f}%|{bar}| {n:.0f}/{total:.0f} s {postfix}")
    try:
        while True:
            elapsed = time.perf_counter() - t0
            if elapsed >= budget or (max_iterations is not None and it >= max_iterations) or S < 2:
                break
            it += 1
            if heat is None or it % heat_every == 1:  # the hot tasks drift slowly: every few batches
                heat = evaluator.heat(state, loads)
            # the move family: single swaps mostly, block swaps where the slots form equal groups
            use = rng.integers(len(groups) + 3) if groups else 0
            if use < 3:
                pool = np.flatnonzero(state < evaluator.n_tasks) if fixed_counts else np.arange(S)
                n_pool = pool.size
                if n_pool < 2:
                    break
                h = heat[pool]
                p = h + (h.sum() / n_pool if h.sum() > 0 else 1.0)
                hot = rng.choice(n_pool, size=candidates, p=p / p.sum())
                ia = np.where(rng.random(candidates) < 0.5, hot, rng.integers(n_pool, size=candidates))
                ib = (ia + 1 + rng.integers(n_pool - 1, size=candidates)) % n_pool  # != ia
                a, b = pool[ia][:, None], pool[ib][:, None]
            else:
                g = groups[use - 3]
                n_g = g.shape[0]
                n_c = max(64, candidates // g.shape[1])  # a block move costs about k single ones
                gh = heat[g].sum(axis=1)
                p = gh + (gh.sum() / n_g if gh.sum() > 0 else 1.0)
                ga = rng.choice(n_g, size=n_c, p=p / p.sum())
                gb = (ga + 1 + rng.integers(n_g - 1, size=n_c)) % n_g
                a, b = g[ga], g[gb]
            st_dev, tn_dev = evaluator.device_state(state)
            if tune is not None and tune.pending() and a.shape[1] == 1:  # tuned on single swaps
                use_step = tune.next_step()
                t_call = time.perf_counter()
                tn, qn = evaluator.scores(st_dev, tn_dev, loads, a, b, step=use_step, host_state=state)
                tn = np.asarray(tn)
                tune.record(use_step, time.perf_counter() - t_call)
            else:
                tn, qn = evaluator.scores(st_dev, tn_dev, loads, a, b, host_state=state,
                                          step=step if step is not None else (tune.best if tune else None))
            tn, qn = np.asarray(tn), np.asarray(qn)
            evaluated += a.shape[0]
            good = np.flatnonzero(_better(tn, qn, t, q))
            accepted = 0
            if good.size:
                stale = 0
                order = good[np.lexsort((qn[good], tn[good]))]
                picks = _disjoint(order, a, b, m_accept)
                new = _apply(state, a, b, picks)
                new_loads = evaluator.loads(new)
                t1, q1 = evaluator.score(new_loads)
                i0 = picks[0]
                if len(picks) > 1 and not _better(t1, q1, tn[i0], qn[i0]) and not (t1 == tn[i0] and q1 == qn[i0]):
                    m_accept = max(1, m_accept // 2)
                    picks = picks[:1]
                    new = _apply(state, a, b, picks)
                    new_loads = evaluator.loads(new)
                    t1, q1 = evaluator.score(new_loads)
                elif len(picks) == m_accept:
                    m_accept = min(256, m_accept * 2)
                state, loads, t, q = new, new_loads, t1, q1
                accepted = len(picks)
            else:
                stale += 1
                if stale >= patience:  # kick: a few random moves (the least bad one is undone at once: a cycle)
                    stale = 0
                    order = rng.permutation(tn.size)
                    picks = _disjoint(order, a, b, int(rng.integers(1, 5)))
                    state = _apply(state, a, b, picks)
                    loads = evaluator.loads(state)
                    t, q = evaluator.score(loads)
                    accepted = len(picks)
            if _better(t, q, best[0], best[1]):
                best = (t, q, state.copy())
            elapsed = time.perf_counter() - t0
            trace.add(elapsed, evaluated, accepted, t, best[0])
            bar.n = min(round(elapsed, 1), bar.total)
            bar.set_postfix_str(f"best {format_value(best[0], 's')}, {evaluated / max(elapsed, 1e-9):,.0f} moves/s")
    finally:
        bar.close()
    return best[2], trace
