"""tests/data/slow_tests.txt (what ``make test-quick`` leaves out besides the slow groups) names tests that exist."""

from __future__ import annotations

import re
from pathlib import Path

from tests.slow_tests import listed, node_id

ROOT = Path(__file__).resolve().parents[1]


def test_node_ids_from_junit_names():
    assert node_id("tests.test_x", "test_y[a-b]") == "tests/test_x.py::test_y[a-b]"
    assert node_id("tests.test_x.TestC", "test_y") == "tests/test_x.py::TestC::test_y"


def test_every_listed_test_is_defined_where_its_id_says():
    ids = listed()
    assert len(ids) > 100
    stale = []
    for nid in sorted(ids):
        path, *names = nid.split("::")
        func = re.sub(r"\[.*$", "", names[-1])
        f = ROOT / path
        if not f.exists() or not re.search(rf"^\s*def {re.escape(func)}\(", f.read_text(), re.M):
            stale.append(nid)
    assert not stale, f"renamed or removed (regenerate the list: tests/slow_tests.py): {stale[:10]}"


def test_regenerating_keeps_one_header_the_listed_tests_and_the_hand_lines(tmp_path, monkeypatch):
    """A second regeneration wrote a second header (the header's own text held '# by hand'), and a test listed
    from an earlier run dropped out when it ran under SLOW_S in the next one."""
    import tests.slow_tests as st

    monkeypatch.setattr(st, "LIST", tmp_path / "slow.txt")
    st.LIST.write_text(st.HEADER + "\ntests/test_a.py::test_old  # 0.9 s\ntests/test_a.py::test_mine  # by hand\n")
    junit = tmp_path / "suite.xml"
    junit.write_text('<testsuites><testsuite><testcase classname="tests.test_a" name="test_new" time="0.7"/>'
                     '<testcase classname="tests.test_a" name="test_quick" time="0.1"/>'
                     '<testcase classname="tests.test_a" name="test_old" time="0.2"/></testsuite></testsuites>')
    for _ in range(2):
        assert st.write(junit) == 3
    text = st.LIST.read_text()
    assert text.count("# generated") == 1
    assert st.listed() == {"tests/test_a.py::test_new", "tests/test_a.py::test_old", "tests/test_a.py::test_mine"}
    assert st.write(junit, keep=False) == 2
    assert st.listed() == {"tests/test_a.py::test_new", "tests/test_a.py::test_mine"}
