"""``evaluator bench``: throughput of the batched kernels against a per-flow Python walk.

* :mod:`~evaluator.bench.run`: the scenarios, worker processes, table, JSON and plot;
* :mod:`~evaluator.bench.baseline`: the per-flow path walk the kernels are timed against.

Speed is measured here, never asserted in tests: ratios against the baseline
timed in the same run.
"""

from __future__ import annotations

from .baseline import PerFlowBaseline
from .run import SCENARIOS, format_table, run

__all__ = ["run", "format_table", "SCENARIOS", "PerFlowBaseline"]
