"""The move evaluators' jitted functions shared by content (evaluator/mapping/_move_store.py, issue 36): an evaluator
of a job built again reuses the first one's compilations and scores bit for bit as functions traced afresh; a
changed constant, a method replaced on the instance, or an operator that stands for others (hashed ECMP's
``compile_key``) is not shared."""

from __future__ import annotations

import numpy as np
import pytest

from evaluator.evaluation import evaluate_batch
from evaluator.mapping import _move_store
from evaluator.mapping._moves import MoveEvaluator
from evaluator.mapping._sparse_moves import SparseMoveEvaluator, pair_table
from evaluator.placement import explicit
from evaluator.routing import dor, ecmp, minimal
from evaluator.topology import dragonfly, fat_tree, torus
from evaluator.traffic import from_flows
from tests.helpers import COMPILE_EVENT, TRACE_EVENT, jax_events


def _flows(n, m, seed):
    rng = np.random.default_rng(seed)
    src = rng.integers(0, n, m)
    dst = (src + 1 + rng.integers(0, n - 1, m)) % n
    return from_flows(n, src, dst, rng.uniform(1e5, 1e6, m))


def _job(kind):
    """(topology, routing, traffic, slot_node), each built anew at every call (other objects, the same content)."""
    if kind == "torus":
        return torus((4, 4, 4)), dor(), _flows(48, 160, 21), np.random.default_rng(21).permutation(64)[:56]
    return dragonfly(2, 4, 2, 9), minimal(), _flows(40, 120, 22), np.random.default_rng(22).permutation(72)[:48]


def _use(ev, seed):
    """Loads, score, heat and a batch of single swaps of ``ev`` from a random state: every jitted function it calls
    in a search (host arrays)."""
    rng = np.random.default_rng(seed)
    S = ev.n_slots
    state = rng.permutation(S)
    loads = ev.loads(state)
    st, tn = ev.device_state(state)
    s = np.array([rng.choice(S, 2, replace=False) for _ in range(64)])
    t, q = ev.scores(st, tn, loads, s[:, :1], s[:, 1:], host_state=state)
    return {"loads": np.asarray(loads), "score": np.asarray(ev.score(loads)), "heat": ev.heat(state, loads),
            "t": np.asarray(t), "q": np.asarray(q)}


@pytest.mark.parametrize("kind,cls", [("torus", MoveEvaluator), ("df", MoveEvaluator), ("df", SparseMoveEvaluator)])
def test_an_evaluator_built_again_shares_the_functions_compiled_for_it(kind, cls):
    """A second evaluator of the same job (topology, routing and traffic built again) traces and compiles nothing
    and holds the first one's functions; functions traced afresh (``forget_moves``: a later process) give the same
    loads, scores and heat bit for bit."""
    def build():
        topo, routing, traffic, slots = _job(kind)
        extra = (pair_table(topo, routing),) if cls is SparseMoveEvaluator else ()
        return cls(topo, routing, traffic, slots, *extra)

    _move_store.forget_moves()
    first = build()
    want = _use(first, 1)
    again = build()
    assert again.topology is not first.topology
    with jax_events(TRACE_EVENT, COMPILE_EVENT, this_thread=True) as seen:
        got = _use(again, 1)
    assert seen == []
    assert again._compiled is first._compiled and again.n_compiled == first.n_compiled > 0
    _move_store.forget_moves()
    fresh = build()
    with jax_events(TRACE_EVENT, this_thread=True) as seen:
        got_fresh = _use(fresh, 1)
    assert TRACE_EVENT in seen and fresh._compiled is not first._compiled
    for res in (got, got_fresh):
        for k in want:
            np.testing.assert_array_equal(res[k], want[k], err_msg=k, strict=True)


def test_another_job_a_changed_constant_or_a_replaced_method_is_not_shared(monkeypatch):
    """Other slots are another content; a move module's constant changed after the evaluator was built (as
    tests/test_dor_compact.py does to compare its dense and sparse passes) gives functions traced with the new value;
    an evaluator with a method replaced on the instance (a test's stub) keeps functions of its own."""
    from evaluator.mapping import _moves

    topo, routing, traffic, slots = _job("torus")
    first = MoveEvaluator(topo, routing, traffic, slots)
    other = MoveEvaluator(*_job("torus")[:3], slots[::-1].copy())
    assert other._compiled is not first._compiled
    held = first._compiled
    monkeypatch.setattr(_moves, "COMPACT_SPARSE", 10 ** 9)
    assert first._compiled is not held and MoveEvaluator(*_job("torus"))._compiled is first._compiled
    monkeypatch.undo()
    assert first._compiled is held
    stubbed = MoveEvaluator(*_job("torus"))
    assert stubbed._compiled is held
    stubbed._compact_full = lambda k, L: None  # the fixed-width listing, as tests/test_dor_compact.py compares
    assert stubbed._compiled is not held and stubbed._compiled is stubbed._compiled
    np.testing.assert_allclose(_use(stubbed, 2)["t"], _use(first, 2)["t"], rtol=1e-12)


def test_hashed_ecmp_seeds_are_not_shared():
    """Hashed ECMP's operators share one ``compile_key`` across seeds (the seed is their only table); the move
    functions capture the tables, so each evaluator keeps its own: every seed's loads are the kernel's for that
    seed (evaluate_batch, independent of the move evaluator)."""
    topo = fat_tree(k=4, levels=2)
    traffic = _flows(8, 40, 23)
    slots = np.arange(8)
    state = np.random.default_rng(3).permutation(8)
    evs = [MoveEvaluator(topo, ecmp(seed), traffic, slots) for seed in (0, 1)]
    assert evs[0]._compiled is not evs[1]._compiled
    loads = [np.asarray(ev.loads(state))[0] for ev in evs]
    assert not np.array_equal(loads[0], loads[1])  # the seeds hash the flows onto other links
    for seed, ev, ld in zip((0, 1), evs, loads):
        res = evaluate_batch(topo, ecmp(seed), traffic, explicit(topo, ev.task_node(state)), keep_link_load=True)
        np.testing.assert_allclose(ld, np.asarray(res.link_load)[0], rtol=1e-12, atol=0)
