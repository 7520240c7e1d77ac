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
