"""Simulation speed of the workload scheduler (a measurement script, not a test; timings are never asserted).

Usage (from the repository root)::

    python -m tests.workload_speed GROUPS NODES_PER_GROUP JOBS
    python -m tests.workload_speed GROUPS NODES_PER_GROUP JOBS --policies [TABLE ...] [--allow-foreign-speedups]
                                   [--seeds K]

A synthetic trace of JOBS jobs generated for half the machine and enlarged 2x (the paper's mode mix). The first
form: a hand-made speedup table, simulated with the count-only ``unrestricted`` policy, the same policy through
copies (as a topology-constrained policy is handled), and the group first-fit test policy. ``--policies``: the
real policies, ``slurm_round_robin`` (traditional Dragonfly, no speedup), ``grap`` without speedups and ``grap``
with each speedup TABLE (a netCDF path, or ``paper``: Feng et al.'s Fig. 4 speedups typed in,
:data:`evaluator.workload.model.PAPER_FIG4_SPEEDUPS`; default ``results/rdn/speedup-GxP.nc``), with the wait-time
reduction against the first. A table must record this machine (``--allow-foreign-speedups``: apply it anyway;
``paper`` records none, so it needs the option). ``--seeds K``: the same runs on the traces of seeds ``0 .. K-1``
(one trace is one random draw of the workload), then each run's wait reduction over the seeds: mean, min, max.
"""

from __future__ import annotations

import sys
import time

from evaluator.workload import (MODES, UnrestrictedPolicy, WorkloadModel, make_policy, prepare_trace, simulate,
                                speedup_table, synthetic_trace)
from tests.workload_reference import CountOnlyOff, GroupFirstFit


def _line(name, n, dt, ds, base=None):
    red = "" if base is None else f"  wait reduction {reduction(ds, base):.1f}%"
    print(f"{name:40s} {n} jobs {dt:7.1f} s {n / dt:8.0f} jobs/s  mean wait {float(ds.wait.mean()) / 3600:.3f} h"
          f"  backfilled {float(ds.backfilled.mean()):.3f}  mean speedup {float(ds.speedup.mean()):.3f}{red}",
          flush=True)


def trace(groups: int, G: int, n: int, seed: int = 0):
    """The prepared synthetic trace of the measurements: ``n`` jobs for half the machine, enlarged 2x (trace seed
    ``seed``; the page's runs: 0)."""
    total = groups * G
    return prepare_trace(synthetic_trace(n, total // 2, seed=seed), total, G, WorkloadModel())


def reduction(ds, base) -> float:
    """The wait reduction of run ``ds`` against ``base`` (%): ``100 (1 - mean wait / base's mean wait)``."""
    return 100 * (1 - float(ds.wait.mean()) / float(base.wait.mean()))


def over_seeds(groups: int, G: int, n: int, tables: list[str], k: int, allow: bool = False,
               show: bool = True) -> dict:
    """:func:`policies` on the traces of seeds ``0 .. k-1``: run name (but the first, round-robin) -> its wait
    reductions against round-robin, one per seed (%)."""
    out: dict[str, list[float]] = {}
    for seed in range(k):
        if show:
            print(f"trace seed {seed}:", flush=True)
        runs = policies(groups, G, n, tables, allow, show, seed=seed)
        base = runs.pop("slurm_round_robin")
        for name, ds in runs.items():
            out.setdefault(name, []).append(reduction(ds, base))
    if show:
        for name, red in out.items():
            lo, hi = min(red), max(red)
            print(f"{name}: wait reduction over {k} trace seeds: mean {sum(red) / k:.1f}%, min {lo:.1f}% (seed "
                  f"{red.index(lo)}), max {hi:.1f}% (seed {red.index(hi)})", flush=True)
    return out


def policies(groups: int, G: int, n: int, tables: list[str], allow: bool = False, show: bool = True,
             seed: int = 0) -> dict:
    """``slurm_round_robin``, ``grap`` and ``grap`` with each table (a path or ``paper``): run name -> dataset
    (the trace of ``seed``)."""
    from evaluator.workload.model import PAPER_FIG4_SPEEDUPS
    from evaluator.workload.run import load_speedups

    tabs = [load_speedups(PAPER_FIG4_SPEEDUPS if a == "paper" else a) for a in tables]
    for t in tabs:                                     # refuse a foreign table before anything runs
        t.check_machine(groups, G, allow)
    tr = trace(groups, G, n, seed)
    out, base = {}, None
    runs = [("slurm_round_robin", "slurm_round_robin", None), ("grap", "grap", None)]
    runs += [(f"grap+{a}", "grap", t) for a, t in zip(tables, tabs)]
    for name, pol, spd in runs:
        t = time.perf_counter()
        ds = simulate(tr, make_policy(pol, groups, G), speedups=spd, allow_foreign_speedups=allow)
        if show:
            _line(name, n, time.perf_counter() - t, ds, base)
        base = ds if base is None else base
        out[name] = ds
    return out


def main(argv: list[str]) -> None:
    groups, G, n = (int(x) for x in argv[:3])
    if len(argv) > 3 and argv[3] == "--policies":
        rest = argv[4:]
        k = None
        if "--seeds" in rest:
            at = rest.index("--seeds")
            k = int(rest[at + 1])
            rest = rest[:at] + rest[at + 2:]
        allow = "--allow-foreign-speedups" in rest
        names = [a for a in rest if a != "--allow-foreign-speedups"] or [f"results/rdn/speedup-{groups}x{G}.nc"]
        if k is None:
            policies(groups, G, n, names, allow)
        else:
            over_seeds(groups, G, n, names, k, allow)
        return
    tr = trace(groups, G, n)
    tab = speedup_table({m: {2: 1.3, groups: 1.0} for m in MODES})
    for name, mk in [("unrestricted(count_only)", lambda: UnrestrictedPolicy(groups, G)),
                     ("unrestricted(copies)", lambda: CountOnlyOff(UnrestrictedPolicy(groups, G))),
                     ("group_first_fit(test)", lambda: GroupFirstFit(groups, G))]:
        t = time.perf_counter()
        ds = simulate(tr, mk(), speedups=tab, allow_foreign_speedups=True)   # hand-made: no machine recorded
        _line(name, n, time.perf_counter() - t, ds)


if __name__ == "__main__":
    main(sys.argv[1:])
