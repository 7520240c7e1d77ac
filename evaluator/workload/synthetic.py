"""A seeded synthetic job trace with a capability-machine job-size mix.

For when no trace is at hand: Feng et al. simulate Mira's 2019 logs (51,946
jobs, 49,152 nodes); those logs are **not bundled** with this package (read
them with :func:`evaluator.workload.read_swf` once converted to SWF). The
generator draws a Mira-like mix, scaled to the machine:

* sizes: Mira's partition sizes (512 ... 49,152 nodes) times
  ``total_nodes / 49152`` (at least 1 node), with the job-count shares of
  :data:`MIRA_LIKE_SIZES`: most jobs are small, but, as on Mira (Patel et al.,
  SC'20: about 80% of core hours in jobs above 4k nodes), most node-hours are
  in the large ones;
* run times: log-normal, median ``median_run_s`` (default 1 h), clipped to
  ``[60 s, max_run_s]`` (default 24 h);
* requested times: run time times a factor uniform in ``[1, 3]``, rounded up
  to 30 minutes and capped at ``max_run_s`` (users over-estimate);
* arrivals: Poisson, at the rate that offers ``load`` (default 0.9) of the
  machine's node-seconds.

The numbers are a plausible capability mix, not a fit to any log; the same
``seed`` gives the same trace on every machine.
"""

from __future__ import annotations

import numpy as np

from ..errors import ConfigError, check_memory, check_seed, positive_float, positive_int
from .trace import Trace

__all__ = ["MIRA_NODES", "MIRA_LIKE_SIZES", "synthetic_trace"]

MIRA_NODES = 49152
"""Nodes of Mira (Blue Gene/Q at Argonne), the machine whose logs Feng et al. use."""

MIRA_LIKE_SIZES = {512: 0.40, 1024: 0.20, 2048: 0.13, 4096: 0.10, 8192: 0.07, 12288: 0.03, 16384: 0.03,
                   24576: 0.02, 32768: 0.015, 49152: 0.005}
"""Job size on Mira (nodes) -> share of jobs, the synthetic generator's default mix."""


def synthetic_trace(n_jobs: int, total_nodes: int, seed: int = 0, load: float = 0.9,
                    median_run_s: float = 3600.0, max_run_s: float = 86400.0,
                    sizes: dict[int, float] | None = None) -> Trace:
    """``n_jobs`` jobs for a machine of ``total_nodes`` nodes (see the module docstring).

    Parameters
    ----------
    sizes
        Job size on a 49,152-node machine -> share of jobs (default
        :data:`MIRA_LIKE_SIZES`); sizes are scaled by ``total_nodes / 49152``.
    """
    n_jobs = positive_int("synthetic.n_jobs", n_jobs)
    total_nodes = positive_int("synthetic.total_nodes", total_nodes)
    seed = check_seed("synthetic.seed", seed)
    load = positive_float("synthetic.load", load)
    median_run_s = positive_float("synthetic.median_run_s", median_run_s)
    max_run_s = positive_float("synthetic.max_run_s", max_run_s)
    check_memory("trace", f"synthetic: {n_jobs} jobs", 1000.0 * n_jobs,
                 "the trace and the simulation's per-job state (about 1000 B a job)", "Simulate fewer jobs.")
    mix = dict(MIRA_LIKE_SIZES if sizes is None else sizes)
    if not mix or any(not (isinstance(k, (int, np.integer)) and k >= 1) or not (v >= 0) for k, v in mix.items()) \
            or sum(mix.values()) <= 0:
        raise ConfigError("synthetic.sizes", mix, "a mapping of sizes (integers >= 1) to shares >= 0, not all 0")
    rng = np.random.default_rng(seed)
    scale = total_nodes / MIRA_NODES
    classes = np.array(sorted(mix), dtype=np.int64)
    p = np.array([mix[int(k)] for k in classes], dtype=np.float64)
    p /= p.sum()
    cls_nodes = np.clip(np.round(classes * scale).astype(np.int64), 1, total_nodes)
    nodes = cls_nodes[rng.choice(classes.size, size=n_jobs, p=p)]
    run = np.clip(np.round(rng.lognormal(np.log(median_run_s), 1.0, size=n_jobs)), 60.0, max_run_s)
    req = np.minimum(np.ceil(run * rng.uniform(1.0, 3.0, size=n_jobs) / 1800.0) * 1800.0, max_run_s)
    req = np.maximum(req, run)
    mean_work = float(np.mean(nodes * run))  # node-seconds per job
    gap = mean_work / (load * total_nodes)  # mean interarrival (s)
    submit = np.round(np.cumsum(rng.exponential(gap, size=n_jobs)))
    submit -= submit[0]
    return Trace(job_id=np.arange(1, n_jobs + 1, dtype=np.int64), submit=submit, run_time=run,
                 requested_time=req, nodes=nodes,
                 attrs={"source": f"synthetic(n_jobs={n_jobs}, total_nodes={total_nodes}, seed={seed}, load={load})",
                        "dropped": 0})
