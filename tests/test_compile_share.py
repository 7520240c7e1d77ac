"""tests/compile_share.py, the measure of the suite's compilation share the README quotes: its summary of the
per-worker files against sums done here."""

from __future__ import annotations

import json

from tests import compile_share as cs


def test_summary_adds_the_workers_files_and_gives_both_ends(tmp_path):
    back, trace, lower = cs.EVENTS[0], cs.EVENTS[1], cs.EVENTS[2]
    rows = {"gw0": {"tests/test_a.py::t1": {back: 2.0, back + "#n": 1, trace: 1.0, trace + "#n": 2},
                    "tests/test_b.py::t": {lower: 0.5, lower + "#n": 1}},
            "gw1": {"tests/test_a.py::t2": {back: 3.0, back + "#n": 2, lower: 0.25, lower + "#n": 1}}}
    for w, data in rows.items():
        (tmp_path / f"evaluator-compile-share-{w}.json").write_text(json.dumps(data))
    junit = tmp_path / "suite.xml"
    junit.write_text('<testsuites><testsuite><testcase classname="tests.test_a" name="t1" time="10"/>'
                     '<testcase classname="tests.test_b" name="t" time="15"/></testsuite></testsuites>')
    out = cs.summary(str(junit), str(tmp_path)).splitlines()
    assert out[0].split()[:5] == ["5.0", "s", "in", "3", "events"] and out[0].endswith(back)
    assert out[4].split()[:3] == ["5.8", "to", "6.8"]            # 5 + 0.75 backend and lowering; + 1 tracing
    assert "25.0 s of test time" in out[5] and "(23% to 27% compiling)" in out[5]
    assert out[6].split() == ["6.2", "s", "tests/test_a.py"] and out[7].split() == ["0.5", "s", "tests/test_b.py"]


def test_summary_ranks_the_compiled_functions(tmp_path):
    """The by-function files (JAX's ``fun_name`` of each event, ``jit(NAME)`` read as ``NAME``) added over the
    workers, ranked by their seconds of tracing, lowering and backend compilation; a run without them prints no
    function table."""
    back, trace, lower = cs.EVENTS[0], cs.EVENTS[1], cs.EVENTS[2]
    funcs = {"gw0": {"shared": {back: 2.0, back + "#n": 1, trace: 1.0, trace + "#n": 1, lower: 0.5, lower + "#n": 1},
                     "f": {back: 0.5, back + "#n": 2}},
             "gw1": {"shared": {back: 3.0, back + "#n": 2}, "dense": {back: 4.0, back + "#n": 1}}}
    assert "functions:" not in cs.summary(None, str(tmp_path))
    for w, data in funcs.items():
        (tmp_path / f"evaluator-compile-functions-{w}.json").write_text(json.dumps(data))
    out = cs.summary(None, str(tmp_path)).splitlines()
    head = out.index("functions: traced (n, s), lowered (n, s), compiled by XLA (n, s)")
    assert [r.split() for r in out[head + 1:]] == [["1", "1.0", "1", "0.5", "3", "5.0", "shared"],
                                                   ["0", "0.0", "0", "0.0", "1", "4.0", "dense"],
                                                   ["0", "0.0", "0", "0.0", "2", "0.5", "f"]]
    assert not any("functions" in r for r in out[:head])  # the modules' rows read only the per-test files


def test_the_listener_files_an_event_under_its_test_and_its_function(monkeypatch):
    monkeypatch.setattr(cs, "_seconds", cs.collections.defaultdict(lambda: cs.collections.defaultdict(float)))
    monkeypatch.setattr(cs, "_by_function", cs.collections.defaultdict(lambda: cs.collections.defaultdict(float)))
    monkeypatch.setattr(cs, "_current", ["tests/test_x.py::t"])
    cs._listener(cs.EVENTS[0], 0.25, fun_name="jit(shared)")
    cs._listener(cs.EVENTS[1], 0.125, fun_name="shared")  # tracing names the function itself
    cs._listener(cs.EVENTS[3], 0.5)  # a cache retrieval: no function named
    cs._listener("/jax/other", 9.0, fun_name="jit(shared)")  # not counted
    assert dict(cs._seconds["tests/test_x.py::t"]) == {cs.EVENTS[0]: 0.25, cs.EVENTS[0] + "#n": 1,
                                                       cs.EVENTS[1]: 0.125, cs.EVENTS[1] + "#n": 1,
                                                       cs.EVENTS[3]: 0.5, cs.EVENTS[3] + "#n": 1}
    assert dict(cs._by_function) == {"shared": {cs.EVENTS[0]: 0.25, cs.EVENTS[0] + "#n": 1,
                                                cs.EVENTS[1]: 0.125, cs.EVENTS[1] + "#n": 1}}
