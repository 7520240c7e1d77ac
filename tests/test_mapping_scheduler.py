"""How the mapping search shares its time between move kinds (evaluator/mapping/_search.py, KindScheduler).

Before: kinds were drawn per batch by fixed weights, so a kind whose batches cost seconds (a structured move on a
torus: 1.5-3.7 s, compilations included) took most of the budget from single swaps (milliseconds a batch) whatever
it yielded; on the bench's 1,024-rank mesh halo on a 16x8x8 torus a 60 s search spent 43 of its 60 s on them and
found 6,010 us, where swaps alone found 3,869 us."""

from __future__ import annotations

import numpy as np
import pytest

from evaluator import topology as T
from evaluator import traffic as TR
from evaluator.mapping import search_mapping
from evaluator.mapping._search import KIND_WEIGHTS, MIN_SHARE, KindScheduler


def _run(costs: dict, gains: dict, n: int = 4000) -> dict:
    """Drive a scheduler: every batch of a kind costs ``costs[kind]`` and yields ``gains[kind]``; the cost each
    kind spent, as shares of the whole."""
    s = KindScheduler(list(costs))
    for _ in range(n):
        k = s.next()
        s.record(k, costs[k], gains[k])
    total = sum(s.cost.values())
    return {k: v / total for k, v in s.cost.items()}


def test_equal_yield_per_cost_shares_the_cost_by_weight_whatever_a_batch_costs():
    costs = {"swap": 0.01, "box swap": 2.0, "reflect": 0.5}
    gains = {k: 0.1 * c for k, c in costs.items()}  # the same yield per second
    share = _run(costs, gains)
    w = {k: KIND_WEIGHTS[k] for k in costs}
    for k in costs:
        assert share[k] == pytest.approx(w[k] / sum(w.values()), abs=0.03), share


def test_a_kind_that_yields_nothing_keeps_its_least_share_only():
    costs = {"swap": 0.02, "box swap": 2.0, "shift": 1.0}
    gains = {"swap": 1e-3, "box swap": 0.0, "shift": 0.0}
    share = _run(costs, gains, 20000)
    assert share["swap"] > 0.9
    for k in ("box swap", "shift"):  # tried still, at about MIN_SHARE of the cost (one batch over, at most)
        assert MIN_SHARE * 0.5 < share[k] < MIN_SHARE * 1.6, share


def test_a_kind_that_pays_gains_time():
    costs = {"swap": 0.02, "box swap": 1.0}
    share_dry = _run(costs, {"swap": 1e-4, "box swap": 0.0}, 20000)["box swap"]
    share_paying = _run(costs, {"swap": 1e-4, "box swap": 0.05}, 20000)["box swap"]  # 10x swap's rate per second
    assert share_paying > 0.5 > 0.1 > share_dry


def test_first_pick_is_the_first_kind_and_every_kind_is_tried_early():
    s = KindScheduler(["swap", "node block", "box swap"])
    seen = []
    for _ in range(3):
        k = s.next()
        seen.append(k)
        s.record(k, 1.0, 0.0)
    assert seen[0] == "swap" and set(seen) == {"swap", "node block", "box swap"}


def test_a_fixed_number_of_iterations_gives_the_same_search_every_run():
    """Under max_iterations the scheduler counts batches, not seconds: the same seed, the same mapping and kinds."""
    topo, tr = T.torus((4, 4, 4)), TR.stencil([8, 8, 8], [4, 4, 4])
    runs = [search_mapping(topo, tr, "dor", time_budget=600, max_iterations=12, candidates=64, seed=5,
                           progress=False) for _ in range(2)]
    assert np.array_equal(runs[0].task_node, runs[1].task_node)
    assert runs[0].trace.kinds == runs[1].trace.kinds
