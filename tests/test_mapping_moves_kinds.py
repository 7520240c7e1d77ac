"""The structured move kinds of the mapping search (evaluator.mapping._kinds) and its annealing (issue 37, item 2).

* every structured move's incremental score equals the kernel's evaluation of the moved mapping
  (``evaluator.evaluate`` of the placement, independent of the move evaluator);
* the annealed search never returns worse than its start, and its trace counts the moves of each kind;
* on a 7-point stencil on a 4x4x4 torus started from a structured bad mapping (the task planes along x in the
  order 0, 2, 1, 3), single swaps stall at the start's time while the structured moves reach the optimum, at the
  same number of batches (seeded, deterministic).
"""

from __future__ import annotations

import numpy as np
import pytest

from evaluator import evaluate, placement, topology, traffic
from evaluator.mapping import move_evaluator, search_mapping, Start
from evaluator.mapping._kinds import GRID_KINDS, box_moves, box_shapes, slot_grid
from evaluator.mapping._search import MOVE_KINDS, local_search
from evaluator.routing import dor

DIMS = (4, 4, 4)


@pytest.fixture(scope="module")
def job():
    t = topology.torus(DIMS)
    tr = traffic.stencil([16, 16, 16], list(DIMS))
    me = move_evaluator(t, dor(), tr, np.arange(t.n_nodes))
    return t, tr, me


def strided_start(n=64):
    """Task (i, j, k) of the 4x4x4 grid on node (p[i], j, k), p = (0, 2, 1, 3): x-neighbours two hops apart."""
    perm = np.array([0, 2, 1, 3])
    c = np.stack(np.unravel_index(np.arange(n), DIMS), axis=1)
    return np.ravel_multi_index((perm[c[:, 0]], c[:, 1], c[:, 2]), DIMS).astype(np.int64)


def full_time(t, tr, task_node) -> float:
    """The completion time of a mapping by ``evaluator.evaluate`` (the kernel, not the move evaluator)."""
    ds = evaluate(t, tr, placement.explicit(t, np.asarray(task_node, np.int64), "mapping"), "dor")
    return float(np.asarray(ds["completion_time"]).ravel()[0])


def test_structured_moves_score_as_a_full_evaluation(job):
    t, tr, me = job
    G = slot_grid(t, me.slot_node)
    assert G.shape == DIMS + (1,)
    rng = np.random.default_rng(3)
    state = rng.permutation(me.n_slots)
    loads = me.loads(state)
    st, tn = me.device_state(state)
    checked = 0
    for kind in GRID_KINDS:
        for shape in box_shapes(DIMS):
            a, b = box_moves(kind, G, shape, 3, rng)
            if not a.shape[0]:
                continue
            got_t, _ = me.scores(st, tn, loads, a, b, host_state=state)
            for i in range(a.shape[0]):
                moved = state.copy()
                moved[a[i]], moved[b[i]] = state[b[i]], state[a[i]]
                assert np.array_equal(np.sort(moved), np.arange(me.n_slots))  # still a permutation
                want_t = full_time(t, tr, me.task_node(moved))
                assert float(np.asarray(got_t)[i]) == pytest.approx(want_t, rel=1e-9), (kind, shape)
                checked += 1
    assert checked >= 20


def test_annealed_search_never_worse_than_its_start(job):
    t, tr, me = job
    rng = np.random.default_rng(0)
    start = rng.permutation(t.n_nodes)[: tr.n_tasks]
    r = search_mapping(t, tr, "dor", starts=[Start("random", start)], time_budget=60, max_iterations=20,
                       candidates=64, progress=False, seed=2, anneal=True)
    t_start = r.starts["random"]
    assert r.completion_time <= t_start * (1 + 1e-12)
    assert r.completion_time == pytest.approx(r.search_time, rel=1e-9)
    kinds = r.trace.kinds
    assert set(kinds) <= set(MOVE_KINDS) and {"swap", "box swap", "reflect", "shift"} <= set(kinds)
    assert sum(c[0] for c in kinds.values()) == r.trace.evaluated[-1]
    assert all(c[0] >= c[1] >= c[2] >= 0 for c in kinds.values())
    assert "box swap" in r.info["move_kinds"] and r.to_dataset().attrs["move_kinds"] == r.info["move_kinds"]


def test_structured_moves_leave_where_single_swaps_stall(job):
    t, tr, me = job
    task_node = strided_start()
    slot_task = np.empty(me.n_slots, np.int64)
    slot_task[task_node] = np.arange(tr.n_tasks)
    t0 = me.score(me.loads(slot_task))[0]
    kw = dict(budget=600, seed=0, candidates=256, max_iterations=60, progress=False)
    s1, tr1 = local_search(me, slot_task, kinds=("swap",), **kw)
    s2, tr2 = local_search(me, slot_task, **kw)
    assert tr1.best_completion_time[-1] == pytest.approx(t0, rel=1e-12)  # single swaps: not below the start
    assert tr2.best_completion_time[-1] < 0.75 * t0  # the structured moves: a better basin
    # the linear mapping (the optimum here) is reached, and evaluate agrees
    lin = full_time(t, tr, np.arange(64))
    got = full_time(t, tr, me.task_node(s2))
    assert got == pytest.approx(tr2.best_completion_time[-1], rel=1e-9)
    assert got == pytest.approx(lin, rel=1e-9)
    paid = {k: c[2] for k, c in tr2.kinds.items() if k in GRID_KINDS}
    assert sum(paid.values()) > 0


def test_the_structured_sweep_keeps_to_its_share_of_the_budget(job):
    """The first sweep of every structured kind and box shape (here 4 kinds x 7 shapes) stops at SWEEP_SHARE of the
    batches: with 8 batches, 2 sweep batches, then draws by weight, single swaps among them (seeded). Before the
    cap the sweep took every batch of a budget shorter than it (a 60 s search of a 27-point stencil ran no swap)."""
    from evaluator.mapping import _search

    t, tr, me = job
    slot_task = np.random.default_rng(1).permutation(me.n_slots)
    shapes = box_shapes(DIMS)
    assert len(shapes) * 3 >= 20  # a sweep longer than the run
    _, trace = local_search(me, slot_task, budget=600, seed=3, candidates=64, max_iterations=8, progress=False)
    sweep_batches = int(_search.SWEEP_SHARE * 8)
    assert trace.kinds["swap"][0] > 0
    first_shape_kinds = [k for k in GRID_KINDS if k != "rotate" or sum(y > 1 for y in shapes[0]) >= 2]
    assert sweep_batches < len(shapes) * len(first_shape_kinds)
