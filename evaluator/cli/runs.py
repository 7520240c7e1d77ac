"""``evaluator runs [STUDY] [--results DIR] [-n N]``: the runs under ``results/``, newest first.

One row per dataset (:func:`evaluator.runs.list_runs`): its study (the directory under ``results/``), when it
started (UTC), its points and feasible points, its axes and its path. ``evaluator query STUDY`` and
``evaluator plot STUDY`` read a study's latest run.
"""

from __future__ import annotations

from pathlib import Path

from ..display import format_table
from ..errors import ConfigError
from ..runs import RESULTS_DIR, list_runs, runs_table, studies
from .._args import ArgumentParser

__all__ = ["main"]


def main(argv: list[str]) -> int:
    ap = ArgumentParser(prog="evaluator runs",
                                 description="list the runs under results/ (study, time, points, feasible, axes, "
                                             "path), newest first",
                                 epilog="e.g. evaluator runs; evaluator runs dragonfly_nne_placement; then "
                                        "evaluator query dragonfly_nne_placement --best completion_time (its "
                                        "latest run)")
    ap.add_argument("study", nargs="?", default=None,
                    help="only this study (a directory under the results directory, e.g. eval, partitions/mira)")
    ap.add_argument("--results", default=RESULTS_DIR, metavar="DIR",
                    help=f"the results directory (default: {RESULTS_DIR})")
    ap.add_argument("-n", "--top", type=int, default=0, metavar="N", help="rows to print (default 0: all)")
    args = ap.parse_args(argv)
    if args.top < 0:
        raise ConfigError("--top", args.top, "an integer >= 0 (rows to print; 0: all)")
    root = Path(args.results)
    if args.results != RESULTS_DIR and not root.is_dir():  # (the default may not exist yet: no runs)
        raise ConfigError("--results", args.results, "a results directory that exists",
                          "It is a file, not a directory." if root.exists() else "No such directory.")
    if args.study is not None and not (root / args.study).is_dir():
        known = studies(root)
        raise ConfigError("study", args.study, f"a study under {root}/: {', '.join(known) if known else 'none yet'}")
    runs = list_runs(root, args.study)
    if not runs:
        print(f"no runs under {root / args.study if args.study else root}/")
        return 0
    shown = runs[:args.top] if args.top else runs
    print(format_table(runs_table(shown)))
    if len(shown) < len(runs):
        print(f"({len(runs) - len(shown)} older runs not shown; -n 0 shows all)")
    return 0
