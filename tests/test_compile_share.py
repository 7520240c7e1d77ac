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
