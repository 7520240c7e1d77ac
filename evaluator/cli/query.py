"""``evaluator query PATH --best METRIC [--over AXIS ...] [--where AXIS=LABEL ...] [--si]``.

The table shows each metric in a readable unit named in its header (``completion_time [ms]``,
``throughput [GB/s]``; see :mod:`evaluator.display`); ``--si`` prints the dataset's SI values as stored.
"""

from __future__ import annotations

import argparse

import pandas as pd

from ..display import format_table
from ..errors import ConfigError
from ..query import best, open_results

__all__ = ["main"]


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="evaluator query",
                                 description="rank the design points of a sweep dataset (--best METRIC --over AXIS ...)")
    ap.add_argument("path", help="a sweep dataset (.nc or .zarr)")
    ap.add_argument("--best", default="completion_time", metavar="METRIC", help="metric to rank by")
    ap.add_argument("--over", nargs="*", default=None, metavar="AXIS",
                    help="axes to choose over; the best per combination of the other axes")
    ap.add_argument("--where", nargs="*", default=[], metavar="AXIS=LABEL", help="restrict, e.g. routing=valiant")
    ap.add_argument("-n", type=int, default=20, help="rows to print")
    ap.add_argument("--si", action="store_true",
                    help="print the values as stored (seconds, bytes, bytes/s; every digit) instead of in ms, GB/s, "
                         "MB, ...")
    args = ap.parse_args(argv)
    if args.n < 0:
        raise ConfigError("-n", args.n, "an integer >= 0 (rows to print; 0: all)")
    where = {}
    for w in args.where:
        k, sep, v = w.partition("=")
        if not sep or not k or not v:
            raise ConfigError("--where", w, "AXIS=LABEL[,LABEL...]", "e.g. --where routing=valiant")
        where[k] = v.split(",")
    table = best(open_results(args.path), args.best, over=args.over, where=where or None, n=args.n)
    if args.si:
        with pd.option_context("display.width", 200, "display.max_columns", 20):
            print(table.to_string(float_format=lambda x: repr(float(x))))  # every digit, as stored
    else:
        print(format_table(table))
    return 0
