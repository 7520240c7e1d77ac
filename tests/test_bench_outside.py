"""The outside mappers' contract (evaluator/bench/outside.py): a bench record's fields, its verdicts when a mapper
is absent, does not apply or fails, and the texts the bench prints; with stand-in mappers (no outside program)."""

from __future__ import annotations

import numpy as np
import pytest

from evaluator import evaluate
from evaluator import placement as P
from evaluator import topology as T
from evaluator import traffic as TR
from evaluator.bench.mapping import OUTSIDE_MAPPERS
from evaluator.bench.outside import Mapper, OutsideMapping


class Failed(RuntimeError):
    pass


class Unsupported(Failed):
    pass


def _mapper(fn, available=True) -> Mapper:
    return Mapper("fake", "Fake", "fake_map", lambda: available, "Fake absent (not installed)", fn, Failed,
                  Unsupported)


def _raise(exc):
    def fn(*args, **kwargs):
        raise exc
    return fn


def test_registry_names_scotch_then_kahip():
    assert [(m.key, m.name) for m in OUTSIDE_MAPPERS] == [("scotch", "Scotch"), ("kahip", "KaHIP")]


def test_row_evaluates_the_mapping_with_the_model():
    topo, tr = T.torus((4, 4)), TR.stencil([8, 8], [4, 4])
    perm = np.random.default_rng(3).permutation(16)
    seen = {}

    def fn(topology, traffic, nodes=None, tasks_per_node=1):
        seen.update(nodes=nodes, tpn=tasks_per_node)
        return OutsideMapping(perm, "a 4x4 torus", 2, 0.5, 1.0, "fake_map")

    row = _mapper(fn).row(topo, "dor", tr, nodes=None, tasks_per_node=1)
    expected = float(evaluate(topo, tr, P.explicit(topo, perm, "x"), "dor")["completion_time"])
    assert row == {"fake": pytest.approx(expected, rel=1e-12), "fake_target": "a 4x4 torus", "fake_repaired": 2,
                   "fake_s": 0.5}
    assert seen == {"nodes": None, "tpn": 1}
    check, note = _mapper(fn).texts({"time": expected / 2, **row})
    assert check == ", -50.0% vs Fake"
    assert note == f"Fake (fake_map onto a 4x4 torus, 2 task(s) moved to fit) {expected * 1e6:.4g} us; "


@pytest.mark.parametrize("mapper,absent,check", [
    (_mapper(None, available=False), "Fake absent (not installed)", ", Fake absent"),
    (_mapper(_raise(Failed("exit 3"))), "Fake failed: exit 3", ", Fake failed"),
    (_mapper(_raise(Unsupported("not a hierarchy"))), "Fake skipped: not a hierarchy", ", Fake skipped"),
], ids=["absent", "failed", "skipped"])
def test_row_says_why_there_is_no_mapping(mapper, absent, check):
    row = mapper.row(T.torus((2, 2)), "dor", TR.stencil([4, 4], [2, 2]))
    assert row == {"fake_absent": absent}
    assert mapper.texts({"time": 1.0, **row}) == (check, absent + "; ")
    assert mapper.short(row, "older") == absent


def test_other_errors_are_not_a_verdict():
    with pytest.raises(ZeroDivisionError):
        _mapper(_raise(ZeroDivisionError("a bug"))).row(T.torus((2, 2)), "dor", TR.stencil([4, 4], [2, 2]))


def test_older_records_say_nothing_or_what_they_are_told():
    m = _mapper(None)
    assert m.texts({"time": 1.0}) == ("", "")
    assert m.texts({"time": 1.0}, "Fake not run (older record)") == (", Fake not run",
                                                                      "Fake not run (older record); ")
    assert m.short({}, "Fake not run") == "Fake not run"
