"""Command line: ``evaluator <command> [options] [hydra overrides...]``.

A thin layer: each command (one module here) parses its arguments, composes
a config through :mod:`evaluator.config` and calls the library. Bad input of
any kind (:class:`~evaluator.errors.ConfigError` and its subclasses) is
printed as one line naming the field, the value and what is allowed (exit
status 2).
"""

from __future__ import annotations

import importlib
import sys

from ..errors import ConfigError

__all__ = ["main", "COMMANDS"]

COMMANDS = {
    "eval": "evaluate one design point from the config and write a dataset under results/",
    "sweep": "run (or resume) a named sweep from sweeps/ on Ray; writes results/<sweep>/<run-id>.nc",
    "query": "rank the design points of a sweep dataset (--best METRIC --over AXIS ...)",
    "optimize": "exhaustive search of decompositions, placements and routings for a stencil job",
    "plot": "write PNG figures of a sweep dataset",
    "partitions": "torus partition shapes of a machine, their bisection and best/worst (see --help)",
    "bench": "benchmark the JAX kernels against a per-flow Python evaluator (--quick for a short run)",
}
"""Command -> one-line description; command ``X`` is ``evaluator.cli.X.main(argv)`` (``eval`` is ``evaluate``)."""

_MODULES = {"eval": "evaluate"}


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``evaluator`` console command."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        print("usage: evaluator <command> [options] [overrides...]\n\ncommands:")
        for k, v in COMMANDS.items():
            print(f"  {k:<11} {v}")
        return 0 if argv else 2
    cmd, rest = argv[0], argv[1:]
    if cmd not in COMMANDS:
        print(f"evaluator: unknown command {cmd!r}; known commands: {sorted(COMMANDS)}", file=sys.stderr)
        return 2
    module = importlib.import_module(f"{__name__}.{_MODULES.get(cmd, cmd)}")
    try:
        return int(module.main(rest) or 0)
    except ConfigError as exc:
        print(f"evaluator {cmd}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
