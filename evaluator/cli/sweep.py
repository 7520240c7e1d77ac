"""``evaluator sweep [sweeps=NAME] [overrides]``: run (or resume) a named study."""

from __future__ import annotations

import argparse

from .. import config
from ..io import repo_dir
from ..query import best, open_results
from ..sweep import plan_sweep, run_sweep

__all__ = ["main"]


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="evaluator sweep",
                                 description="run (or resume) a named sweep from sweeps/ on Ray; writes "
                                             "results/<sweep>/<run-id>.nc",
                                 epilog="e.g. evaluator sweep sweeps=dragonfly_nne_placement topology.p=8 "
                                        "ray.address=auto. Named sweeps: "
                                        + ", ".join(sorted(p.stem for p in (repo_dir() / 'sweeps').glob('*.yaml'))))
    ap.add_argument("overrides", nargs="*", help="Hydra overrides (sweeps=NAME picks the study)")
    ap.add_argument("--show-config", action="store_true", help="print the composed config and exit")
    ap.add_argument("--no-progress", action="store_true", help="no progress bar")
    args = ap.parse_intermixed_args(argv)
    if args.show_config:
        print(config.to_yaml(config.compose(args.overrides, config_name="sweep")))
        return 0
    request = config.compose_sweep(args.overrides)
    plan = plan_sweep(request)
    print(f"sweep {plan.name}: {plan.n_points} points on axes "
          + ", ".join(f"{a.name}[{a.size}]" for a in plan.axes) + f"; run id {plan.run_id}")
    path = run_sweep(plan, request.config.ray, progress=not args.no_progress)
    ds = open_results(path)
    print(f"{int(ds.attrs['n_feasible'])} feasible of {int(ds.attrs['n_points'])} points; "
          f"timing {ds.attrs['timing_json']}")
    print(best(ds, "completion_time", n=5).to_string())
    print(f"dataset: {path}")
    return 0
