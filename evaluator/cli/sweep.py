"""``evaluator sweep [sweeps=NAME] [overrides]``: run (or resume) a named study.

Axes come from the study's ``sweep.axes`` and from Hydra sweep overrides on the command line
(``routing=minimal,valiant``, ``placement.seed='range(0,8)'``; see :mod:`evaluator.config.hydra`).
"""

from __future__ import annotations

import argparse
import json

from .. import config
from ..config.hydra import compose_sweep_config
from ..display import format_table, format_timing
from ..io import repo_dir
from ..query import best, open_results
from ..sweep import plan_sweep, run_sweep

__all__ = ["main"]


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="evaluator sweep",
                                 description="run (or resume) a named sweep from sweeps/ on Ray; writes "
                                             "results/<sweep>/<run-id>.nc",
                                 epilog="e.g. evaluator sweep sweeps=dragonfly_nne_placement topology.p=8 "
                                        "ray.address=auto. Hydra sweep overrides add axes: routing=minimal,valiant "
                                        "placement.seed='range(0,8)' traffic.beta='choice([8,8,4],[16,8,8])'. "
                                        "Tables show ms, GB/s, MB; the dataset keeps SI units. Named sweeps: "
                                        + ", ".join(sorted(p.stem for p in (repo_dir() / 'sweeps').glob('*.yaml'))))
    ap.add_argument("overrides", nargs="*",
                    help="Hydra overrides (sweeps=NAME picks the study; key=a,b / range(..) / choice(..) add axes)")
    ap.add_argument("--show-config", action="store_true", help="print the composed config and exit")
    ap.add_argument("--no-progress", action="store_true", help="no progress bar")
    args = ap.parse_intermixed_args(argv)
    if args.show_config:
        print(config.to_yaml(compose_sweep_config(args.overrides, config_name="sweep")[0]))
        return 0
    request = config.compose_sweep(args.overrides)
    plan = plan_sweep(request)
    print(f"sweep {plan.name}: {plan.n_points} points on axes "
          + ", ".join(f"{a.name}[{a.size}]" for a in plan.axes) + f"; run id {plan.run_id}")
    path = run_sweep(plan, request.config.ray, progress=not args.no_progress)
    ds = open_results(path)
    print(f"{int(ds.attrs['n_feasible'])} feasible of {int(ds.attrs['n_points'])} points; "
          f"timing: {format_timing(json.loads(ds.attrs['timing_json']))}")
    print(format_table(best(ds, "makespan" if "makespan" in ds else "completion_time", n=5)))
    print(f"dataset: {path}")
    return 0
