"""``evaluator study NAME [options]``: run a named study (:mod:`evaluator.studies`), print its tables, write its
dataset and plot (``evaluator study --help`` lists the studies, ``evaluator study NAME --help`` their options).
A Ctrl-C or SIGTERM stops a study; the points it finished are written (exit status 130 or 143).

``python -m evaluator.studies NAME ...`` is the same command."""

from __future__ import annotations

import sys
from pathlib import Path

__all__ = ["main"]

USAGE = "usage: evaluator study NAME [options]   (evaluator study NAME --help: the study's options)"


def _usage() -> str:
    from ..studies import STUDIES

    lines = [USAGE, "", "studies:"] + [f"  {k:<6} {v}" for k, v in STUDIES.items()]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    """Parse ``argv`` (without the command name), run the study, return the exit status."""
    argv = list(argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(_usage(), file=sys.stdout if argv else sys.stderr)
        return 0 if argv else 2
    from ..studies import run_study
    from .._signals import stop_on_sigterm

    _check_latest(argv[0], argv[1:])
    with stop_on_sigterm():  # SIGTERM stops a study as Ctrl-C does: its points finished are written (exit 143)
        return run_study(argv[0], argv[1:], prog="evaluator study")


_OWN = {"rdn": ("results/rdn", ("evaluator study rdn", "evaluator study rdn --speedup-out")),
        "buyer": ("results/buyer", ("evaluator study buyer",))}
"""Each study's default ``--out`` and the kinds of dataset its directory holds (:func:`evaluator.runs.dataset_kind`:
``rdn``'s runs of every machine and the speedup tables written beside them; ``buyer``'s runs, equal cost or
power)."""


def _check_latest(name: str, argv: list[str]) -> None:
    """Before the study computes: the directory its dataset goes to (``--out``; ``rdn``: the directory of a
    ``--out FILE.nc``) must hold this study's datasets or none: a study saved into a sweep's, an eval's or
    another study's directory took its ``latest`` over (until 2026-12-06); a ``latest`` of the user's own is
    said on stderr (:func:`evaluator.runs.check_latest_owner`). Options the study refuses are left to it."""
    if name not in _OWN or any(a in ("-h", "--help") for a in argv):
        return
    import argparse

    from ..runs import check_latest_owner

    default, own = _OWN[name]
    ap = argparse.ArgumentParser(add_help=False, allow_abbrev=False)  # (the studies take options whole too)
    ap.add_argument("--out", action="append", default=None)
    try:
        given, _ = ap.parse_known_args(argv)
    except SystemExit:  # an --out without its value: the study's own parser says so
        return
    if given.out is not None and len(given.out) != 1:
        return  # --out twice: refused by the study's parser
    out = given.out[0] if given.out else default
    d = Path(out).parent if name == "rdn" and Path(out).suffix == ".nc" else Path(out)
    if d.exists() and not d.is_dir():
        return  # refused by the study (not a directory)
    check_latest_owner(d, f"evaluator study {name}", "--out", out, own=own,
                       expected=f"a directory of evaluator study {name}'s own datasets ({default} by default), or "
                                f"one holding none",
                       new="this study's dataset", taken_by="the study saved there", instead="this study",
                       remedy=f"Give another --out DIR (e.g. {default}).")
