"""``evaluator plot PATH|STUDY [--metric M] [--x AXIS] [--series AXIS] [--relative-to AXIS=LABEL] [--draws AXIS ...]
[--out PNG]``.

``PATH|STUDY``: a dataset, or a study's name for its latest run (:func:`evaluator.runs.resolve`).
``--draws AXIS``: the axis's values are random draws (default: every axis named ``*seed`` but ``--x`` and
``--series``); each point is their mean, with a band from the smallest to the largest and the tail dotted, as
``evaluator query --draws`` summarises them (:func:`evaluator.dataset.draw_stats`).
"""

from __future__ import annotations

from pathlib import Path

from ..errors import ConfigError
from ..io import check_writable, is_our_figure
from ..plot import plot_sweep
from ..query import default_metric, open_results
from ..runs import RESULTS_DIR, resolve
from .._args import ArgumentParser, named_as_options

__all__ = ["main"]

_OPTIONS = {"metric": "--metric", "x": "--x", "series": "--series", "relative_to": "--relative-to",
            "draws": "--draws"}
"""The library's argument names (:func:`evaluator.plot.plot_sweep`) -> the options that give them."""


def main(argv: list[str]) -> int:
    ap = ArgumentParser(prog="evaluator plot", description="write PNG figures of a sweep dataset")
    ap.add_argument("path", nargs="+", metavar="PATH|STUDY",
                    help="one results dataset (.nc or .zarr), or a study's name (a directory under the results "
                         "directory: evaluator runs lists them) for its latest run; several (a shell's glob) are "
                         "refused, naming them")
    ap.add_argument("--results", default=RESULTS_DIR, metavar="DIR",
                    help=f"the results directory where study names are looked up (default: {RESULTS_DIR})")
    ap.add_argument("--metric", default=None,
                    help="variable on y (default: what evaluator query ranks by: completion_time for sweeps, the "
                         "time with latency where every point has it, time_all for tiles, ...)")
    ap.add_argument("--x", default=None, help="axis on the x axis (default: placement.gamma or the largest)")
    ap.add_argument("--series", default=None, help="one line per value of this axis (default: routing)")
    ap.add_argument("--out", default=None, help="PNG path (default: next to the dataset)")
    ap.add_argument("--relative-to", default=None, metavar="AXIS=LABEL",
                    help="plot the gain over one label of an axis, e.g. routing=dor_bgq (> 1: better)")
    ap.add_argument("--draws", nargs="*", action="extend", default=None, metavar="AXIS",
                    help="axes whose values are random draws (default: every axis named *seed but --x and --series): "
                         "each point is their mean, with a band from the smallest to the largest and the 95th "
                         "percentile of a time (5th of a throughput) dotted; a point with an infeasible draw is "
                         "left out")
    args = ap.parse_args(argv)
    rel = None
    if args.relative_to is not None:
        axis, sep, label = str(args.relative_to).partition("=")
        if not sep or not axis or not label:
            raise ConfigError("--relative-to", args.relative_to, "AXIS=LABEL, e.g. routing=dor_bgq")
        rel = (axis, label)
    path = resolve(args.path, args.results)
    ds = open_results(path)
    if args.metric is None:
        args.metric = default_metric(ds)
    out = args.out if args.out is not None else str(path.with_suffix("")) + f"-{args.metric}{'-gain' if rel else ''}.png"
    if Path(out).is_dir():
        raise ConfigError("--out", out, "a PNG file path, not a directory",
                          f"e.g. --out {Path(out) / (path.stem + '-' + args.metric + '.png')}")
    _check_png_out(out, path, explicit=args.out is not None)
    try:
        check_writable("--out", Path(out).parent)  # (the default: next to the dataset)
    except ConfigError as exc:
        raise ConfigError("--out", out, "a PNG path in a directory this user can create and write",
                          exc.hint) from None
    with named_as_options(_OPTIONS):  # the options the user wrote, not plot_sweep's argument names
        print(plot_sweep(ds, out, args.metric, args.x, args.series, rel, draws=args.draws))
    return 0


_PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _check_png_out(out: str, dataset: Path, explicit: bool = True) -> None:
    """Refuse an ``--out`` that would overwrite what is not a figure: a name without ``.png`` (the figure is a
    PNG whatever the name; a dataset's or a log's name would lose that file), the dataset itself, an existing
    file that is not a PNG, or a PNG this tool did not write, at ``--out`` or at the default path beside the dataset
    (a user's own figure was replaced in silence there until 2026-12-07; ``explicit``: ``--out`` given)."""
    o = Path(out)
    if o.suffix.lower() != ".png":
        raise ConfigError("--out", out, "a PNG file path ending in .png (the figure is written as PNG)",
                          f"e.g. --out {o.with_suffix('.png').name if o.name else dataset.stem + '.png'}")
    if not o.exists():
        return
    if dataset.exists() and o.resolve() == dataset.resolve():
        raise ConfigError("--out", out, "a PNG path other than the dataset plotted (it would be overwritten)")
    try:  # (only a regular file is opened: a FIFO there made open() wait for a writer for ever)
        if not o.is_file():
            raise OSError
        with open(o, "rb") as fh:
            head = fh.read(len(_PNG_MAGIC))
    except OSError:
        head = b""
    if head != _PNG_MAGIC:
        raise ConfigError("--out", out, "a new PNG path or an existing PNG figure: this file exists and is not a PNG, "
                          "so writing the figure would lose it")
    if not is_our_figure(o):
        raise ConfigError("--out", out, "a new PNG path or a figure evaluator wrote (which it replaces)",
                          f"{o} is a PNG that evaluator did not write; move it or "
                          f"{'choose another' if explicit else 'give'} --out. Nothing was written.")

