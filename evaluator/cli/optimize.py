"""``evaluator optimize --tasks N --alpha A,B,C [--routings ...] [overrides]``: exhaustive stencil search."""

from __future__ import annotations

import argparse

from .. import config
from ..query import best, open_results
from ..sweep import optimize_axes, plan_sweep, run_sweep

__all__ = ["main"]


def _int_list(text: str) -> list[int]:
    try:
        return [int(x) for x in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(
        prog="evaluator optimize",
        description="exhaustive search of decompositions, placements and routings for a stencil job",
        epilog="e.g. evaluator optimize --tasks 256 --alpha 512,512,512 --routings minimal,valiant "
               "topology.p=4 topology.a=8 topology.h=4")
    ap.add_argument("overrides", nargs="*", help="Hydra overrides for the network (topology=..., topology.p=...)")
    ap.add_argument("--tasks", type=int, required=True, help="number of tasks |beta|")
    ap.add_argument("--alpha", type=_int_list, required=True, help="elements per dimension, e.g. 512,512,512")
    ap.add_argument("--routings", type=lambda s: s.split(","), default=["minimal", "valiant"],
                    help="comma-separated routing group options, e.g. minimal,valiant")
    ap.add_argument("--placement", default="dragonfly_cartesian",
                    help="placement group (dragonfly_cartesian searches every gamma)")
    ap.add_argument("--top", type=int, default=10)
    ap.add_argument("--ray", action="store_true", help="run on Ray instead of in this process")
    ap.add_argument("--no-progress", action="store_true")
    args = ap.parse_intermixed_args(argv)
    base = ["traffic=stencil", f"placement={args.placement}", f"routing={args.routings[0]}",
            "sweep.name=optimize", f"traffic.alpha=[{','.join(map(str, args.alpha))}]"]
    axes = optimize_axes(args.tasks, len(args.alpha), args.routings, args.placement)
    request = config.compose_sweep(base + args.overrides, user_overrides=args.overrides, config_name="config",
                                   axes=axes)
    plan = plan_sweep(request)
    ray_cfg = request.config.ray if args.ray else config.RayConfig(enabled=False)
    path = run_sweep(plan, ray_cfg, progress=not args.no_progress)
    ds = open_results(path)
    print(f"searched {plan.n_points} configurations ({int(ds.attrs['n_feasible'])} feasible) on "
          f"{plan.bases[next(iter(plan.bases))].topology}")
    print(best(ds, "completion_time", n=args.top).to_string())
    print(f"dataset: {path}")
    return 0
