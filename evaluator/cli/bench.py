"""``evaluator bench [--quick] [--only SCENARIO ...]``: the throughput benchmark (see :mod:`evaluator.bench`)."""

from __future__ import annotations

import sys

from ..bench import SCENARIOS, run
from .._args import ArgumentParser
from ..errors import ConfigError

__all__ = ["main"]


def main(argv: list[str]) -> int:
    """Parse ``argv`` (without the command name), run the benchmark, return the exit status."""
    p = ArgumentParser(
        prog="evaluator bench",
        description="Throughput of the batched kernels against a per-flow Python walk and a SciPy sparse "
                    "routing matrix: many small Dragonfly configurations, Mira (49,152 nodes), DF(8,16,8), a "
                    "large torus, the sweep and optimize commands end to end, and scaling. Prints a table and "
                    "writes it as JSON (and a scaling plot) under results/bench/.")
    p.add_argument("--quick", action="store_true", help="fewer points, smaller checks, a 3,200-point sweep and a "
                                                        "128x128x4 torus (a few minutes)")
    p.add_argument("--out", default="results/bench", metavar="DIR",
                   help="where to write the JSON and the plot (default results/bench)")
    p.add_argument("--only", nargs="+", action="extend", metavar="SCENARIO",
                   help="run only these scenarios: " + ", ".join(SCENARIOS))
    p.add_argument("--settle", default="0", metavar="SECONDS",
                   help="pause before each scenario after the first, so that a burstable VM throttled by the "
                        "previous scenario's load recovers (default 0; 60 s is enough here)")
    args = p.parse_args(argv)
    try:
        settle = float(args.settle)
    except ValueError:
        raise ConfigError("--settle", args.settle, "a number of seconds >= 0") from None
    run(quick=args.quick, out_dir=args.out, only=args.only, log=lambda m: print(m, file=sys.stderr),
        settle=settle)
    return 0
