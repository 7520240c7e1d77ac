"""Workload simulation: job traces, an FCFS + EASY backfilling scheduler, any allocation policy.

Feng et al.'s second step (Sec. 5.1.4, 5.3): a job trace (SWF file or
synthetic) runs on a traditional Dragonfly under Slurm-like policies and on
the reconfigurable Dragonfly under GRAP, where each job's MPI time is
shortened by the speedup the network evaluation computed for its mode and
size; wait times and utilisation are compared.

* :mod:`~evaluator.workload.trace`: :class:`Trace`, :data:`MODES`, request checks;
* :mod:`~evaluator.workload.swf`: :func:`read_swf`, :func:`write_swf` (Parallel Workloads Archive format);
* :mod:`~evaluator.workload.synthetic`: :func:`synthetic_trace` (capability-machine mix, seeded);
* :mod:`~evaluator.workload.model`: :class:`WorkloadModel`, :func:`prepare_trace`, :class:`SpeedupTable`;
* :mod:`~evaluator.workload.simulate`: :func:`simulate` (per-job dataset);
* :mod:`~evaluator.workload.analysis`: wait-time reduction per month, utilisation per minute;
* :mod:`~evaluator.workload.plots`: figures in the style of Feng et al. Fig. 5;
* :mod:`~evaluator.workload.study`: a grid of runs (policies x mode mixes x machines) on Ray.

Allocation policies come from :mod:`evaluator.policies` (``JobRequest`` and
``Allocation`` are re-exported from there);
:class:`UnrestrictedPolicy` (``"unrestricted"``) is the count-only reference.
"""

from __future__ import annotations

from ._check import check_keys, int_arg
from ._policy import check_machine_size
from ._policy import LOCAL_POLICIES, POLICY_NAMES, Allocation, JobRequest, UnrestrictedPolicy, make_policy
from .model import (PAPER_MODE_MIX, SPEEDUP_RULES, SpeedupTable, WorkloadModel, accelerated_run_time,
                    prepare_trace, speedup_table)
from .simulate import DEFAULT_BACKFILL_DEPTH, JOB_VARS, simulate
from .swf import SWF_FIELDS, parse_swf, read_swf, write_swf
from .synthetic import MIRA_LIKE_SIZES, MIRA_NODES, synthetic_trace
from .trace import MODES, Trace, validate_requests

__all__ = [
    "Trace", "MODES", "validate_requests",
    "SWF_FIELDS", "read_swf", "parse_swf", "write_swf",
    "synthetic_trace", "MIRA_LIKE_SIZES", "MIRA_NODES",
    "WorkloadModel", "prepare_trace", "SpeedupTable", "speedup_table", "accelerated_run_time", "PAPER_MODE_MIX",
    "SPEEDUP_RULES",
    "simulate", "JOB_VARS", "DEFAULT_BACKFILL_DEPTH",
    "UnrestrictedPolicy", "make_policy", "LOCAL_POLICIES", "POLICY_NAMES", "JobRequest", "Allocation",
    "check_keys", "int_arg", "check_machine_size",
]
