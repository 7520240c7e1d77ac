"""Several jobs on one machine: phases, max-min fair sharing, interference, background traffic.

:func:`evaluate_jobs` answers which jobs slow which and by how much
(DESIGN.md "Jobs and phases"); :mod:`evaluator.jobs.sharing` is the sharing
model itself (pure NumPy, exact event by event).
"""

from __future__ import annotations

from ._evaluate import (BACKGROUND_PATTERNS, Background, Job, background_rates, check_background, evaluate_jobs,
                        job_summary_lines)
from .sharing import SharingResult, max_min_speeds, share

__all__ = ["Job", "Background", "BACKGROUND_PATTERNS", "check_background", "evaluate_jobs", "job_summary_lines", "background_rates", "max_min_speeds", "share",
           "SharingResult"]
