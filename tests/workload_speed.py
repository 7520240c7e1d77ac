"""Simulation speed of the workload scheduler (a measurement script, not a test; timings are never asserted).

Usage (from the repository root)::

    python -m tests.workload_speed GROUPS NODES_PER_GROUP JOBS
    python -m tests.workload_speed GROUPS NODES_PER_GROUP JOBS --policies [SPEEDUP.nc]

A synthetic trace of JOBS jobs generated for half the machine and enlarged 2x (the paper's mode mix). The first
form: a hand-made speedup table, simulated with the count-only ``unrestricted`` policy, the same policy through
copies (as a topology-constrained policy is handled), and the group first-fit test policy. ``--policies``: the
real policies, ``slurm_round_robin`` (traditional Dragonfly, no speedup), ``grap`` without speedups and ``grap``
with the speedup table (default ``results/rdn/speedup.nc``), with the wait-time reduction against the first.
"""

from __future__ import annotations

import sys
import time

from evaluator.workload import (MODES, UnrestrictedPolicy, WorkloadModel, make_policy, prepare_trace, simulate,
                                speedup_table, synthetic_trace)
from tests.workload_reference import CountOnlyOff, GroupFirstFit


def _line(name, n, dt, ds, base=None):
    red = "" if base is None else f"  wait reduction {100 * (1 - float(ds.wait.mean()) / float(base.wait.mean())):.1f}%"
    print(f"{name:26s} {n} jobs {dt:7.1f} s {n / dt:8.0f} jobs/s  mean wait {float(ds.wait.mean()) / 3600:.3f} h"
          f"  backfilled {float(ds.backfilled.mean()):.3f}  mean speedup {float(ds.speedup.mean()):.3f}{red}",
          flush=True)


def main(argv: list[str]) -> None:
    groups, G, n = (int(x) for x in argv[:3])
    total = groups * G
    tr = prepare_trace(synthetic_trace(n, total // 2, seed=0), total, G, WorkloadModel())
    if len(argv) > 3 and argv[3] == "--policies":
        from evaluator.workload.run import load_speedups

        tab = load_speedups(argv[4] if len(argv) > 4 else "results/rdn/speedup.nc")
        base = None
        for name, pol, spd in [("slurm_round_robin", "slurm_round_robin", None), ("grap", "grap", None),
                               ("grap+speedups", "grap", tab)]:
            t = time.perf_counter()
            ds = simulate(tr, make_policy(pol, groups, G), speedups=spd)
            _line(name, n, time.perf_counter() - t, ds, base)
            base = ds if base is None else base
        return
    tab = speedup_table({m: {2: 1.3, groups: 1.0} for m in MODES})
    for name, mk in [("unrestricted(count_only)", lambda: UnrestrictedPolicy(groups, G)),
                     ("unrestricted(copies)", lambda: CountOnlyOff(UnrestrictedPolicy(groups, G))),
                     ("group_first_fit(test)", lambda: GroupFirstFit(groups, G))]:
        t = time.perf_counter()
        ds = simulate(tr, mk(), speedups=tab)
        _line(name, n, time.perf_counter() - t, ds)


if __name__ == "__main__":
    main(sys.argv[1:])
