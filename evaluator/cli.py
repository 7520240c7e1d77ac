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
    "partitions": "torus partition shapes of a machine, their bisection and best/worst (see --help)",
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
            cfg = hcompose(config_name=config_name, overrides=list(overrides))
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
    handlers = {"eval": _cmd_eval, "partitions": _cmd_partitions}
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
