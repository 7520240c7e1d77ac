"""Named studies built on the evaluator (one module each), run with ``evaluator study NAME [options]``.

* :mod:`evaluator.studies.rdn`: GRAP's allocation modes on a reconfigurable
  Dragonfly against a traditional one (Feng et al. Sec. 5.2):
  :func:`~evaluator.studies.rdn.allocation_mode_study` and
  :func:`~evaluator.studies.rdn.speedup_table`.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence

from ..errors import ConfigError
from .rdn import PAPER_MACHINE, PATTERNS, RdnMachine, allocation_mode_study, speedup_table

__all__ = ["RdnMachine", "PAPER_MACHINE", "PATTERNS", "allocation_mode_study", "speedup_table", "STUDIES",
           "run_study"]

STUDIES = {"rdn": "GRAP's allocation modes on a reconfigurable Dragonfly vs a traditional one (Feng et al. "
                  "Sec. 5.2): times, gains at both ends, the workload's speedup table (mode x groups), plot",
           "buyer": "for the same money (or power), which network runs my workloads fastest: fat tree, Dragonfly, torus"}
"""Study name -> one-line description; study ``X`` is ``evaluator.studies.X.main(argv, prog=...)``."""


def run_study(name: str, argv: Sequence[str], prog: str = "evaluator study") -> int:
    """Run study ``name`` with its options ``argv``; ConfigError naming ``study`` for an unknown name."""
    if name not in STUDIES:
        raise ConfigError("study", name, f"one of {', '.join(STUDIES)}",
                          f"`{prog} --help` lists them; `{prog} NAME --help` gives a study's options.")
    module = importlib.import_module(f"{__name__}.{name}")
    return int(module.main(list(argv), prog=f"{prog} {name}") or 0)
