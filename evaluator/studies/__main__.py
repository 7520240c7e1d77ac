"""``python -m evaluator.studies NAME [options]``: an alias of ``evaluator study NAME [options]``.

Runs through the command line's error handling (:func:`evaluator.cli.main`): bad input is one line with exit
status 2, ``--debug`` shows the traceback. :func:`main` is the dispatcher itself (errors raised).
"""

from __future__ import annotations

import sys

from . import STUDIES, run_study


def main(argv: list[str] | None = None) -> int:
    """Run the study named first in ``argv``; usage on stderr and 2 when no name is given; ConfigError for an
    unknown name or bad options (the CLI turns it into one line)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv:
        print(f"usage: evaluator study {{{','.join(STUDIES)}}} [options]", file=sys.stderr)
        return 2
    return run_study(argv[0], argv[1:])


if __name__ == "__main__":  # pragma: no cover
    from ..cli import main as cli_main

    raise SystemExit(cli_main(["study", *sys.argv[1:]]))
