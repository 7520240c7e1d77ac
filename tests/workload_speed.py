"""Simulation speed of the workload scheduler (a measurement script, not a test; timings are never asserted).

Usage (from the repository root)::

    python -m tests.workload_speed GROUPS NODES_PER_GROUP JOBS

A synthetic trace of JOBS jobs generated for half the machine and enlarged 2x (the paper's mode mix, a
hand-made speedup table), simulated with the count-only ``unrestricted`` policy, the same policy through
copies (as a topology-constrained policy is handled), and the group first-fit test policy.
"""

from __future__ import annotations

import sys
import time

from evaluator.workload import (MODES, UnrestrictedPolicy, WorkloadModel, prepare_trace, simulate, speedup_table,
                                synthetic_trace)
from tests.workload_reference import CountOnlyOff, GroupFirstFit


def main(argv: list[str]) -> None:
    groups, G, n = (int(x) for x in argv)
    total = groups * G
    tr = prepare_trace(synthetic_trace(n, total // 2, seed=0), total, G, WorkloadModel())
    tab = speedup_table({m: {2: 1.3, groups: 1.0} for m in MODES})
    for name, mk in [("unrestricted(count_only)", lambda: UnrestrictedPolicy(groups, G)),
                     ("unrestricted(copies)", lambda: CountOnlyOff(UnrestrictedPolicy(groups, G))),
                     ("group_first_fit(test)", lambda: GroupFirstFit(groups, G))]:
        t = time.perf_counter()
        ds = simulate(tr, mk(), speedups=tab)
        dt = time.perf_counter() - t
        print(f"{name:26s} {n} jobs {dt:7.1f} s {n / dt:8.0f} jobs/s  mean wait {float(ds.wait.mean()) / 3600:.3f} h"
              f"  backfilled {float(ds.backfilled.mean()):.3f}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
