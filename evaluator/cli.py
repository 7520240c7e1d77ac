"""Command line: ``evaluator <command> [hydra overrides...]``.

A thin layer: it composes a Hydra config from ``conf/`` and the command
line, converts it to the typed schemas of :mod:`evaluator.config` and calls
the library. Errors in the config are printed as one line naming the field,
the value and what is allowed (exit status 2).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

__all__ = ["main", "compose", "conf_dir"]

COMMANDS = {
    "eval": "evaluate one design point from the config and write a dataset under results/",
    "sweep": "run (or resume) a named sweep from sweeps/ on Ray; writes results/<sweep>/<run-id>.nc",
    "query": "rank the design points of a sweep dataset (--best METRIC --over AXIS ...)",
    "optimize": "exhaustive search of decompositions, placements and routings for a stencil job",
    "plot": "write PNG figures of a sweep dataset",
    "partitions": "torus partition shapes of a machine, their bisection and best/worst (see --help)",
    "bench": "benchmark the JAX kernels against a per-flow Python evaluator (--quick for a short run)",
}


def conf_dir() -> Path:
    """The ``conf/`` directory: $EVALUATOR_CONF, else the one next to the package."""
    env = os.environ.get("EVALUATOR_CONF")
    if env:
        return Path(env).resolve()
    return (Path(__file__).resolve().parent.parent / "conf").resolve()


def _register_schemas() -> None:
    from hydra.core.config_store import ConfigStore

    from . import config as C

    cs = ConfigStore.instance()
    cs.store(name="eval_schema", node=C.EvalConfig)
    for name, schema in C.TOPOLOGY_SCHEMAS.items():
        cs.store(group="topology", name=f"{name}_schema", node=schema)
    cs.store(group="routing", name="routing_schema", node=C.RoutingConfig)
    cs.store(group="traffic", name="traffic_schema", node=C.TrafficConfig)
    cs.store(group="placement", name="placement_schema", node=C.PlacementConfig)


class ConfigCompositionError(ValueError):
    """The config could not be composed (unknown key, bad type, unknown group option)."""


def _clean_hydra_message(exc: BaseException) -> str:
    """One line from a Hydra/OmegaConf error: what failed, the cause, the full key, the options."""
    parts: list[str] = []
    e: BaseException | None = exc
    while e is not None:
        text = str(e).strip()
        if "Available options in" in text:
            head, _, rest = text.partition("Available options in")
            group, _, opts = rest.partition(":")
            names = [o.strip() for o in opts.split("Config search path")[0].split() if o.strip()]
            names = [o for o in names if not o.endswith("_schema")]
            parts.append(f"{head.strip()} Available options in{group}: {', '.join(names)}")
        else:
            lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
            lines = [ln for ln in lines if not ln.startswith(("object_type", "Set the environment"))]
            parts.append(" ".join(lines))
        e = e.__cause__
    return " | ".join(p for p in parts if p)


def repo_dir() -> Path:
    """Directory holding ``conf/`` and ``sweeps/``."""
    return conf_dir().parent


def compose(overrides: list[str], config_name: str = "config"):
    """Compose the config ``config_name`` with Hydra overrides; return the OmegaConf object."""
    from hydra import compose as hcompose
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from omegaconf import OmegaConf

    _register_schemas()
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(conf_dir()), version_base="1.3"):
            search = [f"hydra.searchpath=[file://{repo_dir()}]"]
            cfg = hcompose(config_name=config_name, overrides=search + list(overrides))
        OmegaConf.resolve(cfg)
        return cfg
    except Exception as exc:  # hydra/omegaconf raise many types; report one line
        if exc.__class__.__module__.startswith(("hydra", "omegaconf")):
            raise ConfigCompositionError(_clean_hydra_message(exc)) from None
        raise


def to_object(cfg):
    """OmegaConf config -> the typed dataclasses of :mod:`evaluator.config`."""
    from omegaconf import OmegaConf

    try:
        return OmegaConf.to_object(cfg)
    except Exception as exc:
        if exc.__class__.__module__.startswith(("hydra", "omegaconf")):
            raise ConfigCompositionError(_clean_hydra_message(exc)) from None
        raise


def _cmd_eval(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="evaluator eval", description=COMMANDS["eval"],
                                 epilog="Overrides are Hydra syntax, e.g. topology=torus topology.dims=[4,4,4] "
                                        "routing=dor traffic=all_to_all placement=linear")
    ap.add_argument("overrides", nargs="*", help="Hydra overrides key=value / group=option")
    ap.add_argument("--show-config", action="store_true", help="print the composed config and exit")
    args = ap.parse_args(argv)

    from omegaconf import OmegaConf

    from .config import build
    from .results import summary_lines, write_dataset

    cfg = compose(args.overrides)
    if args.show_config:
        print(OmegaConf.to_yaml(cfg))
        return 0
    obj = to_object(cfg)
    point = build(obj)
    from .evaluate import evaluate

    ds = evaluate(point.topology, point.traffic, point.placement, point.routing)
    ds.attrs["config_yaml"] = OmegaConf.to_yaml(cfg)
    for line in summary_lines(ds):
        print(line)
    if obj.save:
        path = write_dataset(ds, Path(obj.output_dir))
        print(f"dataset: {path}")
    return 0


def _cmd_sweep(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="evaluator sweep", description=COMMANDS["sweep"],
                                 epilog="e.g. evaluator sweep sweeps=dragonfly_nne_placement topology.p=8 "
                                        "ray.address=auto. Named sweeps: "
                                        + ", ".join(sorted(p.stem for p in (repo_dir() / 'sweeps').glob('*.yaml'))))
    ap.add_argument("overrides", nargs="*", help="Hydra overrides (sweeps=NAME picks the study)")
    ap.add_argument("--show-config", action="store_true", help="print the composed config and exit")
    ap.add_argument("--no-progress", action="store_true", help="no progress bar")
    args = ap.parse_args(argv)
    from omegaconf import OmegaConf

    from .sweep import plan_sweep, run_sweep

    cfg = compose(args.overrides, config_name="sweep")
    if args.show_config:
        print(OmegaConf.to_yaml(cfg))
        return 0
    user = [o for o in args.overrides if not o.startswith(("sweeps=", "ray.", "sweep."))]
    plan = plan_sweep(cfg, user, lambda extra: compose(args.overrides + extra, config_name="sweep"))
    print(f"sweep {plan.name}: {plan.n_points} points on axes "
          + ", ".join(f"{a.name}[{a.size}]" for a in plan.axes) + f"; run id {plan.run_id}")
    path = run_sweep(plan, cfg.ray, progress=not args.no_progress)
    from .query import best, open_results

    ds = open_results(path)
    print(f"{int(ds.attrs['n_feasible'])} feasible of {int(ds.attrs['n_points'])} points; "
          f"timing {ds.attrs['timing_json']}")
    print(best(ds, "completion_time", n=5).to_string())
    print(f"dataset: {path}")
    return 0


def _cmd_query(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="evaluator query", description=COMMANDS["query"])
    ap.add_argument("path", help="a sweep dataset (.nc or .zarr)")
    ap.add_argument("--best", default="completion_time", metavar="METRIC", help="metric to rank by")
    ap.add_argument("--over", nargs="*", default=None, metavar="AXIS",
                    help="axes to choose over; the best per combination of the other axes")
    ap.add_argument("--where", nargs="*", default=[], metavar="AXIS=LABEL", help="restrict, e.g. routing=valiant")
    ap.add_argument("-n", type=int, default=20, help="rows to print")
    args = ap.parse_args(argv)
    from .query import best, open_results

    where = {}
    for w in args.where:
        k, sep, v = w.partition("=")
        if not sep:
            from .errors import ConfigError

            raise ConfigError("--where", w, "AXIS=LABEL[,LABEL...]")
        where[k] = v.split(",")
    ds = open_results(args.path)
    table = best(ds, args.best, over=args.over, where=where or None, n=args.n)
    import pandas as pd

    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(table.to_string())
    return 0


def _cmd_plot(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="evaluator plot", description=COMMANDS["plot"])
    ap.add_argument("path")
    ap.add_argument("--metric", default="completion_time")
    ap.add_argument("--x", default=None, help="axis on the x axis (default: placement.gamma or the largest)")
    ap.add_argument("--series", default=None, help="one line per value of this axis (default: routing)")
    ap.add_argument("--out", default=None, help="PNG path (default: next to the dataset)")
    args = ap.parse_args(argv)
    from .plot import plot_sweep
    from .query import open_results

    ds = open_results(args.path)
    out = args.out or str(Path(args.path).with_suffix("")) + f"-{args.metric}.png"
    print(plot_sweep(ds, out, args.metric, args.x, args.series))
    return 0


def _cmd_optimize(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(
        prog="evaluator optimize", description=COMMANDS["optimize"],
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
    args = ap.parse_args(argv)
    from omegaconf import OmegaConf

    from .query import best, open_results
    from .sweep import optimize_axes, plan_sweep, run_sweep

    base = ["traffic=stencil", f"placement={args.placement}", f"routing={args.routings[0]}",
            "sweep.name=optimize", f"traffic.alpha=[{','.join(map(str, args.alpha))}]"]
    cfg = compose(base + args.overrides)
    axes = optimize_axes(args.tasks, len(args.alpha), args.routings, args.placement)
    OmegaConf.update(cfg, "sweep.axes", axes, merge=False)
    plan = plan_sweep(cfg, args.overrides, lambda extra: _with_axes(compose(base + args.overrides + extra), axes))
    path = run_sweep(plan, cfg.ray if args.ray else _no_ray(), progress=not args.no_progress)
    ds = open_results(path)
    print(f"searched {plan.n_points} configurations ({int(ds.attrs['n_feasible'])} feasible) on "
          f"{plan.bases[next(iter(plan.bases))].topology}")
    print(best(ds, "completion_time", n=args.top).to_string())
    print(f"dataset: {path}")
    return 0


def _int_list(text: str) -> list[int]:
    try:
        return [int(x) for x in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None


def _with_axes(cfg, axes):
    from omegaconf import OmegaConf

    OmegaConf.update(cfg, "sweep.axes", axes, merge=False)
    return cfg


def _no_ray():
    from .config import RayConfig

    return RayConfig(enabled=False)


def _cmd_bench(argv: list[str]) -> int:
    from . import _cli_bench

    return int(_cli_bench.main(argv) or 0)


def _cmd_partitions(argv: list[str]) -> int:
    from . import _cli_partitions

    return int(_cli_partitions.main(argv) or 0)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``evaluator`` console command."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        print("usage: evaluator <command> [options] [overrides...]\n\ncommands:")
        for k, v in COMMANDS.items():
            print(f"  {k:<11} {v}")
        return 0 if argv else 2
    cmd, rest = argv[0], argv[1:]
    handlers = {"eval": _cmd_eval, "sweep": _cmd_sweep, "query": _cmd_query, "optimize": _cmd_optimize,
                "plot": _cmd_plot, "partitions": _cmd_partitions, "bench": _cmd_bench}
    if cmd not in handlers:
        print(f"evaluator: unknown command {cmd!r}; known commands: {sorted(handlers)}", file=sys.stderr)
        return 2
    from .errors import ConfigError

    try:
        return handlers[cmd](rest)
    except (ConfigError, ConfigCompositionError) as exc:
        print(f"evaluator {cmd}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
