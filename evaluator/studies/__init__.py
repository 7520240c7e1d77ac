"""Named studies built on the evaluator (one module each).

* :mod:`evaluator.studies.rdn`: GRAP's allocation modes on a reconfigurable
  Dragonfly against a traditional one (Feng et al. Sec. 5.2):
  :func:`~evaluator.studies.rdn.allocation_mode_study` and
  :func:`~evaluator.studies.rdn.speedup_table`.
"""

from __future__ import annotations

from .rdn import PAPER_MACHINE, PATTERNS, RdnMachine, allocation_mode_study, speedup_table

__all__ = ["RdnMachine", "PAPER_MACHINE", "PATTERNS", "allocation_mode_study", "speedup_table"]
