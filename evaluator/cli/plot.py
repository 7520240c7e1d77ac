"""``evaluator plot PATH [--metric M] [--x AXIS] [--series AXIS] [--relative-to AXIS=LABEL] [--out PNG]``."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import ConfigError
from ..plot import plot_sweep
from ..query import open_results

__all__ = ["main"]


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="evaluator plot", description="write PNG figures of a sweep dataset")
    ap.add_argument("path")
    ap.add_argument("--metric", default="completion_time")
    ap.add_argument("--x", default=None, help="axis on the x axis (default: placement.gamma or the largest)")
    ap.add_argument("--series", default=None, help="one line per value of this axis (default: routing)")
    ap.add_argument("--out", default=None, help="PNG path (default: next to the dataset)")
    ap.add_argument("--relative-to", default=None, metavar="AXIS=LABEL",
                    help="plot the gain over one label of an axis, e.g. routing=dor_bgq (> 1: better)")
    args = ap.parse_args(argv)
    rel = None
    if args.relative_to is not None:
        axis, sep, label = str(args.relative_to).partition("=")
        if not sep or not axis or not label:
            raise ConfigError("--relative-to", args.relative_to, "AXIS=LABEL, e.g. routing=dor_bgq")
        rel = (axis, label)
    ds = open_results(args.path)
    out = args.out or str(Path(args.path).with_suffix("")) + f"-{args.metric}{'-gain' if rel else ''}.png"
    if Path(out).is_dir():
        raise ConfigError("--out", out, "a PNG file path, not a directory",
                          f"e.g. --out {Path(out) / (Path(args.path).stem + '-' + args.metric + '.png')}")
    print(plot_sweep(ds, out, args.metric, args.x, args.series, rel))
    return 0
