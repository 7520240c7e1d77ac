"""docs/routing_paths.md, constant-ratio table above 512 nodes (issue 34: stale cells at 2,048-8,192 nodes slipped
through): the heuristic and Model 1 cells, and their ratios to DOR, of the 1,024- and 2,048-node rows, rerun from the
shipped sweep's points on those partitions (about 20 s); the Model 1 / optimal ratio against the optimal value the
table states (the bound itself takes minutes there and is not rerun). 512 nodes: tests/test_claims_studies.py."""

from __future__ import annotations

import numpy as np

import evaluator as ev
from evaluator import config
from evaluator.sweep import plan_sweep
from tests.claims import check_stated, stated

DOC = "docs/routing_paths.md"
OPTIQ = "evaluator sweep sweeps=bgq_m2n_constant_ratio ray.enabled=false routing=dor_bgq,optiq_heuristic,optiq_lp"
SIZES = {(2, 1, 1, 1): "1,024", (2, 2, 1, 1): "2,048"}


def test_optiq_constant_ratio_1024_and_2048_nodes():
    plan = plan_sweep(config.compose_sweep(["sweeps=bgq_m2n_constant_ratio", "routing=optiq_heuristic,optiq_lp"]))
    groups: dict[tuple, list] = {}
    for i in range(plan.n_points):
        c = plan.point_config(i)
        if tuple(c.topology.midplanes) in SIZES:
            groups.setdefault((tuple(c.topology.midplanes), c.routing.kind), []).append(c)
    rows: dict[tuple, dict[str, float]] = {}
    for (mid, kind), cfgs in groups.items():
        built = [config.build(c) for c in cfgs]
        res = ev.evaluate_batch(built[0].topology, built[0].routing, [p.traffic for p in built],
                                [p.placement for p in built])
        for c, t in zip(cfgs, np.asarray(res.metrics["completion_time"], dtype=float)):
            rows.setdefault((SIZES[mid], c.traffic.mode), {})[kind] = t * 1e3
    assert len(rows) == 4
    num = r" [0-9.]+x? \|"
    for (size, mode), r in rows.items():
        head = r"\| " + size + r" \| " + mode + r" \|"
        dor = float(stated(DOC, head + r" ([0-9.]+) \|")[0])
        assert dor == 32.0  # DOR: 8 x 8 MB over one 2 GB/s link of the source, every partition
        optimal = float(stated(DOC, head + num * 3 + r" ([0-9.]+) \|")[0])
        h, lp = r["optiq_heuristic"], r["optiq_lp"]
        check_stated(DOC, head + num + r" ([0-9.]+) \|", h, command=OPTIQ)
        check_stated(DOC, head + num * 2 + r" ([0-9.]+) \|", lp, command=OPTIQ)
        check_stated(DOC, head + num * 4 + r" ([0-9.]+)x \|", dor / h, command=OPTIQ)
        check_stated(DOC, head + num * 5 + r" ([0-9.]+)x \|", dor / lp, command=OPTIQ)
        check_stated(DOC, head + num * 6 + r" ([0-9.]+)x \|", lp / optimal, command=OPTIQ)
    # the sentence on the cells regenerated 2026-11-28 (the 2,048-node disjoint row)
    check_stated(DOC, r"2,048 disjoint heuristic [0-9.]+, now ([0-9.]+);", rows["2,048", "disjoint"]["optiq_heuristic"],
                 command=OPTIQ)
    check_stated(DOC, r"Model 1 [0-9.]+, now ([0-9.]+)\)", rows["2,048", "disjoint"]["optiq_lp"], command=OPTIQ)
