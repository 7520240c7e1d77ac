"""Design-space sweeps: axes, plan, workers, chunk store, driver, assembly.

* :mod:`~evaluator.sweep.axes`: the axis grammar (values and generators over config keys);
* :mod:`~evaluator.sweep.plan`: :func:`plan_sweep` (grid, networks, chunks, run id);
* :mod:`~evaluator.sweep.worker`: build and evaluate one chunk;
* :mod:`~evaluator.sweep.store`: persisted chunks (resume after a crash or ``kill -9``);
* :mod:`~evaluator.sweep.driver`: :func:`run_sweep` on Ray or in this process;
* :mod:`~evaluator.sweep.assemble`: chunks -> one :class:`xarray.Dataset`.
"""

from __future__ import annotations

from .axes import Axis, divisor_vectors, expand_axes, label, optimize_axes, ordered_factorizations
from .driver import VOLATILE_ATTRS, run_sweep, write_results
from .plan import SweepPlan, plan_sweep
from .worker import evaluate_chunk

__all__ = ["Axis", "SweepPlan", "expand_axes", "plan_sweep", "run_sweep", "write_results", "evaluate_chunk", "label",
           "divisor_vectors", "ordered_factorizations", "optimize_axes", "VOLATILE_ATTRS"]
