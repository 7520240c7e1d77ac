"""docs/routing_paths.md, the constant-ratio table's heuristic and Model 1 cells of the 4,096- and 8,192-node rows.

Their cells, their ratios to DOR and (4,096 nodes) Model 1 over the optimum the table states, rerun from the shipped
sweep's points as tests/test_claims_routing_paths.py reruns the 1,024- and 2,048-node rows. About 25 s and 70 s of
CPU on this project's 2-core machine (2026-11-29), most of it HiGHS solving Model 1 (13 s and 43 s) and Yen's path
search; a module of its own, so that the test scheduler starts it early (tests/conftest.py ``_GROUP_SECONDS``).
The optimal column is read, not rerun (minutes to tens of minutes of HiGHS; not counted as covered).
"""

from __future__ import annotations

import pytest

from tests.claims import check_stated, stated
from tests.test_claims_routing_paths import DOC, METHODS, NODES, OPTIQ, SIZES, Partitions


@pytest.mark.parametrize("nodes", [4096, 8192])
def test_optiq_constant_ratio_4096_and_8192_nodes(nodes):
    r = Partitions().evaluate("bgq_m2n_constant_ratio", METHODS,
                              lambda c: NODES[tuple(c.topology.midplanes)] == nodes)
    rows: dict[str, dict[str, float]] = {}
    for (_, name, mode, _, _), m in r.items():
        rows.setdefault(mode, {})[name] = m["completion_time"] * 1e3
    assert sorted(rows) == ["disjoint", "overlap"] and all(len(v) == 3 for v in rows.values())
    num = r" [0-9.]+x? \|"
    for mode, ms in rows.items():
        head = r"\| " + SIZES[nodes] + r" \| " + mode + r" \|"
        dor, h, lp = ms["dor"], ms["optiq_heuristic"], ms["optiq_lp"]
        check_stated(DOC, head + num + r" ([0-9.]+) \|", h, command=OPTIQ)
        check_stated(DOC, head + num * 2 + r" ([0-9.]+) \|", lp, command=OPTIQ)
        upto_optimal = head + num * 3 + (num if nodes == 4096 else r" n/c \|")  # 8,192: not computed
        check_stated(DOC, upto_optimal + r" ([0-9.]+)x \|", dor / h, command=OPTIQ)
        check_stated(DOC, upto_optimal + num + r" ([0-9.]+)x \|", dor / lp, command=OPTIQ)
        if nodes == 4096:
            optimal = float(stated(DOC, head + num * 3 + r" ([0-9.]+) \|", record=False)[0])
            check_stated(DOC, head + num * 6 + r" ([0-9.]+)x \|", lp / optimal, command=OPTIQ)
