"""``python -m evaluator.studies rdn [options]``: run a named study (``--help`` after its name for its options)."""

from __future__ import annotations

import sys

from . import rdn

STUDIES = {"rdn": rdn.main}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in STUDIES:
        print(f"usage: python -m evaluator.studies {{{','.join(STUDIES)}}} [options]", file=sys.stderr)
        return 2
    return STUDIES[argv[0]](argv[1:])


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
