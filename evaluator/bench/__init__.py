"""``evaluator bench``: throughput of the batched kernels against a per-flow Python walk and SciPy.

* :mod:`~evaluator.bench.run`: the scenarios, worker processes, end-to-end commands, table, JSON and plot;
  scenario 1 (many small configurations) in :mod:`~evaluator.bench._small`, the large networks in
  :mod:`~evaluator.bench._big`, what they share (timing, workers) in :mod:`~evaluator.bench._common`;
* :mod:`~evaluator.bench.baseline`: the two baselines the kernels are timed against, a per-flow path walk
  and a SciPy sparse routing matrix.

Speed is measured here, never asserted in tests: ratios against the baselines
timed in the same run.
"""

from __future__ import annotations

from .baseline import PerFlowBaseline, SparseMatrixBaseline
from .run import SCENARIOS, format_table, run

__all__ = ["run", "format_table", "SCENARIOS", "PerFlowBaseline", "SparseMatrixBaseline"]
