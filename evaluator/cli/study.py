"""``evaluator study NAME [options]``: run a named study (:mod:`evaluator.studies`), print its tables, write its
dataset and plot (``evaluator study --help`` lists the studies, ``evaluator study NAME --help`` their options).
A Ctrl-C or SIGTERM stops a study; the points it finished are written (exit status 130 or 143).

``python -m evaluator.studies NAME ...`` is the same command."""

from __future__ import annotations

import sys

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

    with stop_on_sigterm():  # SIGTERM stops a study as Ctrl-C does: its points finished are written (exit 143)
        return run_study(argv[0], argv[1:], prog="evaluator study")

