"""``evaluator query PATH|STUDY [--best METRIC] [--over AXIS ...] [--where AXIS=LABEL ...] [--draws AXIS ...] [-n/--top N]
[--si]``.

``PATH|STUDY``: a dataset, or a study's name for its latest run (:func:`evaluator.runs.resolve`; ``--results
DIR`` for another results directory).

Ranks the rows of any results dataset (:func:`evaluator.query.best`: one row per entry of the ranked variable,
labelled by its parameters) in the direction the metric table gives; a variable without a direction there is
refused with the list of rankable ones.

The table shows each metric in a readable unit named in its header (``completion_time [ms]``,
``throughput [GB/s]``; see :mod:`evaluator.display`); ``--si`` prints the dataset's SI values as stored.

``--draws AXIS``: the axis's values are random draws (``routing.seed`` of hashed ECMP, a random placement's or
traffic's seed); each row is then a point's summary over its draws (:func:`evaluator.query.draw_summary`): ranked by
the mean, with the tail (95th percentile of a time), the largest and the smallest beside it.

Ties are ties: values equal within 1e-9 relative share a rank, printed ``1=``; ``--over`` keeps every row tied
with the best and says by how much they win (``ahead_by [x]`` over ``runner_up``, the best row not tied).
"""

from __future__ import annotations

import shlex

import pandas as pd

from ..dataset import rankable
from ..display import format_table
from ..errors import ConfigError, WordedError
from ..query import best, default_metric, open_results, rank_labels
from ..runs import RESULTS_DIR, resolve
from .._args import ArgumentParser, named_as_options
from .sweep import draws_line

__all__ = ["main"]

_OPTIONS = {"metric": "--best", "over": "--over", "where": "--where", "draws": "--draws", "n": "-n"}
"""The library's argument names (:func:`evaluator.query.best`) -> the options that give them."""


def main(argv: list[str]) -> int:
    ap = ArgumentParser(prog="evaluator query",
                                 description="rank the rows of a results dataset (sweep, eval, schedule, tiles, "
                                             "partitions) by a variable of the metric table (--best METRIC --over "
                                             "AXIS ...)")
    ap.add_argument("path", nargs="+", metavar="PATH|STUDY",
                    help="one results dataset (.nc or .zarr), or a study's name (a directory under the results "
                         "directory: evaluator runs lists them) for its latest run; several (a shell's glob) are "
                         "refused, naming them")
    ap.add_argument("--results", default=RESULTS_DIR, metavar="DIR",
                    help=f"the results directory where study names are looked up (default: {RESULTS_DIR})")
    ap.add_argument("--best", default=None, metavar="METRIC",
                    help="variable to rank by, in the metric table's direction (default: the dataset's first rankable "
                         "one: completion_time for sweeps and eval, mean_wait for schedule, time_all for tiles)")
    ap.add_argument("--over", nargs="*", action="extend", default=None, metavar="AXIS",
                    help="axes to choose over; the best per combination of the other axes (repeats add axes)")
    ap.add_argument("--where", nargs="*", action="extend", default=None, metavar="AXIS=LABEL",
                    help="restrict, e.g. routing=valiant, job=a, decomposition=2x2x8; repeats add conditions, "
                         "all of which hold (the labels of one axis given twice: any of them)")
    ap.add_argument("--draws", nargs="*", action="extend", default=None, metavar="AXIS",
                    help="axes whose values are random draws (routing.seed of hashed ECMP, placement.seed, "
                         "traffic.seed): each row summarises a point's draws, ranked by their mean (--best "
                         "METRIC_p95, _max or _min: by that), with the 95th percentile (of a time; the 5th of a "
                         "throughput), the largest and the smallest beside it; a point with an infeasible draw is "
                         "left out")
    ap.add_argument("-n", "--top", dest="n", type=int, default=20, metavar="N", help="rows to print (0: all)")
    ap.add_argument("--si", action="store_true",
                    help="print the values as stored (seconds, bytes, bytes/s; every digit) instead of in ms, GB/s, "
                         "MB, ...")
    args = ap.parse_args(argv)
    for option, given, what in (("--over", args.over, "AXIS"), ("--where", args.where, "AXIS=LABEL"),
                                ("--draws", args.draws, "AXIS")):  # (given with nothing after it: read as absent)
        if given == []:
            raise ConfigError(option, "", f"one {what} or more after it", "evaluator query --help lists the options.")
    args.where = args.where or []
    if args.n < 0:
        raise ConfigError("-n", args.n, "an integer >= 0 (rows to print; 0: all)")
    where = {}
    for w in args.where:
        k, sep, v = w.partition("=")
        if not sep or not k or not v:
            raise ConfigError("--where", w, "AXIS=LABEL[,LABEL...]", "e.g. --where routing=valiant")
        labels = where.setdefault(k, [])  # the same axis again: any of its labels (as k=a,b)
        labels.extend(x for x in v.split(",") if x not in labels)
    ds = open_results(resolve(args.path, args.results))
    if args.best is None and not rankable(ds):  # (the library's words were "--best = None is invalid")
        _refuse_unrankable(ds, args.path)
    with named_as_options(_OPTIONS):  # the options the user wrote, not the library's argument names
        table = best(ds, args.best, over=args.over, where=where or None, n=args.n, draws=args.draws)
    if len(table) == 0:  # (an empty table printed as pandas' "Empty DataFrame" with exit 0)
        metric = args.best if args.best is not None else default_metric(ds)
        head = f"no row to rank: no point{' matching --where' if where else ''} is feasible with a value of {metric}"
        note = str(table.attrs.get("empty", "")).partition(": ")[2].replace("that where keeps", "that --where keeps")
        if note:  # (how many points are infeasible and which feasible ones have no value: NaN, an infinite time)
            raise WordedError(f"{head} ({note})")
        raise WordedError(head + (" in every draw (--draws leaves out a point with an infeasible draw)"
                                  if args.draws else "") + "; the dataset's "
                          + ("'reason' variable says" if "reason" in ds else "'refused' and 'feasible' variables say")
                          + " why each point has none")
    if args.draws:
        print(_draws_header(table, args.draws))
    if args.si:
        print(_as_stored(table))
    else:
        print(format_table(table))
    metric = args.best if args.best is not None else default_metric(ds)
    for note in _notes(table, metric, argv):
        print(note)
    values, path, options = _draws_query(ds[metric], args, where) if metric in ds else (None, "", "")
    line = "" if args.draws or values is None else draws_line(values, path, args.over, args.best)
    if line:
        line += options  # the rows are single draws of the seeds on axes: the first is the luckiest
        print(line)
    if ds.attrs.get("one_draw"):  # (a sweep's random choices drawn once: every row is one draw of them)
        print(f"every row is one draw of {ds.attrs['one_draw']}: no axis draws their seeds, so a row is not what its "
              f"point gives on average (sweep their seeds and rank with --draws)")
    return 0


def _refuse_unrankable(ds, path: list[str]) -> None:
    """A dataset without a variable to rank, named as the path the user gave (not as ``--best = None``)."""
    names = [str(v) for v in ds.data_vars]
    raise ConfigError("PATH", " ".join(path), "a results dataset with a variable the metric table ranks (written by "
                      "`evaluator sweep`, `eval`, `schedule`, `tiles` or `partitions`)",
                      f"It has none to rank: its variables are {names[:12]}{' ...' if len(names) > 12 else ''} (none "
                      f"has a direction in evaluator.dataset.TABLE).")


def _as_stored(table) -> str:
    """``--si``: the table with every digit of the values as stored, the SI unit in each header; ranks marked
    as without it (``3=`` where ``-n`` cut a row tied with it) and ``-`` where ``ahead_by`` has no row to compare."""
    tied = table.attrs.get("tied_ranks", ())
    if table.index.has_duplicates or tied:
        table.index = pd.Index(rank_labels(table.index, tied), name="rank")  # a shared rank is a tie: 1=, 1=, 3
    for col, text in table.attrs.get("missing", {}).items():
        if col in table.columns:
            table[col] = [text if v != v else repr(float(v)) for v in table[col]]
    units = table.attrs.get("units", {})  # (the SI unit in each header, as the display units are: [s], [bytes/s])
    table = table.rename(columns={c: f"{c} [{units[c]}]" for c in table.columns if units.get(c) not in (None, "")})
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        return table.to_string(float_format=lambda x: repr(float(x)))  # every digit, as stored


def _draws_query(values, args, where: dict) -> tuple:
    """What the line that offers ``--draws`` is given: the ranked variable's values that ``--where`` left (a seed
    it keeps one label of is not a draw of the rows shown), and the query's path with the options it needs to rank
    the same rows: ``--where`` and ``--results`` (a study name is looked up there), quoted for a shell: ``(values,
    path, options)``, the options to append to the line."""
    for k, labels in where.items():
        if k in values.dims:
            values = values.isel({k: [i for i, x in enumerate(values[k].values) if str(x) in labels]})
    words = []
    for k, labels in where.items():
        words += ["--where", f"{k}={','.join(labels)}"]
    words += ["--results", str(args.results)] if str(args.results) != str(RESULTS_DIR) else []
    return values, shlex.join(args.path), (" " + shlex.join(words)) if words else ""


def _draws_header(table, draws: list[str]) -> str:
    """What each row of a ``--draws`` table summarises: the draws of each axis, or those ``--where`` left."""
    used = table.attrs.get("draws", {})
    which = []
    for d in dict.fromkeys(draws):
        n_left, n_all, labels = used.get(d, (None, None, []))
        which.append(d if n_left is None or n_left == n_all else
                     f"{d} ({n_left} of its {n_all} values, as --where asks: {', '.join(labels)})")
    return (f"each row: the mean over the draws of {', '.join(which)} (and their tail, largest and smallest), the "
            f"draws of every row feasible")


def _notes(table, metric: str, argv: list[str]) -> list[str]:
    """The lines under a table that say what it leaves out: rows cut by ``-n`` (how many, and the command that
    prints them all), and feasible rows not ranked for want of a value of the metric (NaN or infinite)."""
    notes = []
    total = int(table.attrs.get("rows", len(table)))
    if len(table) < total:
        rest = []
        skip = False
        for a in argv:  # the command again, without its -n (then -n 0: every row)
            if skip:
                skip = False
                continue
            if a in ("-n", "--top"):
                skip = True
                continue
            if a.startswith("--top=") or (a.startswith("-n") and not a.startswith("--")):
                continue
            rest.append(a)
        tied = int(table.attrs.get("cut_tied", 0))
        more = f" ({tied} more tied with the last)" if tied else ""
        notes.append(f"shown: the first {len(table)} of {total} rows{more}; every row: evaluator query "
                     f"{shlex.join(rest)} -n 0")
    count, examples, base = table.attrs.get("left_out", (0, [], metric))
    if count:  # (--draws: a point with an infeasible or valueless draw is left out, not averaged over the rest)
        eg = "; ".join(examples) + ("; ..." if count > len(examples) else "")
        notes.append(f"left out: {count} point{'s' if count != 1 else ''} with an infeasible draw or one without a "
                     f"value of {base}, beside draws that have one (a mean of the rest would be one-sided): {eg}")
    count, examples, what = table.attrs.get("unranked", (0, [], ""))
    if count:
        eg = "; ".join(examples) + ("; ..." if count > len(examples) else "")
        notes.append(f"not ranked: {count} feasible row{'s' if count != 1 else ''} whose {metric} is {what} (no "
                     f"value to rank): {eg}")
    return notes
