"""Bench scenario ``jobs``: several jobs at once (Blue Waters) and phase-split stencils (DF(4,8,4)).

Measured against today's single-exchange path in the same run: a multi-job
evaluation of J jobs against one ``evaluate_batch`` call of the same J
exchanges (what the jobs cost alone, without sharing), and a phase-split
stencil point against the same stencil done all at once.
"""

from __future__ import annotations

import time

import numpy as np

__all__ = ["w_jobs", "jobs_rows", "JOB_COUNTS"]

JOB_COUNTS = {False: (2, 8, 32), True: (2, 8)}
TASKS_PER_JOB = 512


def w_jobs(args, device, peak_mb, timed) -> dict:
    """The worker: ``device()``, ``peak_mb()`` and ``timed(fn, repeat)`` (median seconds) are the bench's own
    probes, passed in by :mod:`.run`."""
    from .. import placement, traffic
    from ..evaluation import evaluate, evaluate_batch
    from ..jobs import Job, evaluate_jobs
    from ..topology import dragonfly, machine_topology

    quick = bool(args.quick)
    bw = machine_topology("BlueWaters", mode="embedded")
    rng = np.random.default_rng(0)
    nodes = rng.permutation(bw.n_nodes)
    rows = []
    for J in JOB_COUNTS[quick]:
        jobs = [Job(traffic.random_pairs(TASKS_PER_JOB, 1e6, j),
                    placement.explicit(bw, np.sort(nodes[j * TASKS_PER_JOB:(j + 1) * TASKS_PER_JOB])))
                for j in range(J)]
        t0 = time.perf_counter()
        ds = evaluate_jobs(bw, jobs, "dor")
        first = time.perf_counter() - t0
        multi = timed(lambda: evaluate_jobs(bw, jobs, "dor"), 3)
        solo = timed(lambda: evaluate_batch(bw, "dor", [j.traffic for j in jobs], [j.placement for j in jobs],
                                              keep_link_load=True), 3)
        rows.append({"jobs": J, "first_s": first, "seconds": multi, "solo_batch_s": solo,
                     "max_slowdown": float(ds.slowdown.max()), "max_interference": float(ds.interference.max())})
    # check: one job through the jobs API is exactly evaluate
    one = evaluate(bw, jobs[0].traffic, jobs[0].placement, "dor")
    one_j = evaluate_jobs(bw, jobs[:1], "dor")
    check = abs(float(one_j.completion_time[0]) - float(one.completion_time)) / float(one.completion_time)
    # phase-split stencil on DF(4,8,4), against the same stencil all at once
    df = dragonfly(4, 8, 4)
    n_pts = 512 if quick else 4096
    pls = [placement.fully_random(df, 256, seed=s) for s in range(n_pts)]
    whole = traffic.stencil([512, 512, 512], [8, 8, 4])
    split = traffic.stencil([512, 512, 512], [8, 8, 4], exchange="per_dimension")
    phases = []
    for rt in ("minimal", "valiant"):
        for tr in (whole, split):
            evaluate_batch(df, rt, tr, pls, chunk_size=256)  # compile
        t_whole = timed(lambda: evaluate_batch(df, rt, whole, pls, chunk_size=256), 3)
        t_split = timed(lambda: evaluate_batch(df, rt, split, pls, chunk_size=256), 3)
        res = evaluate_batch(df, rt, split, pls[:8], chunk_size=8)
        sep = sum(evaluate_batch(df, rt, ph, pls[:8], chunk_size=8).metrics["completion_time"] for ph in split.phases)
        dev = float(np.max(np.abs(res.metrics["completion_time"] - sep) / sep))
        phases.append({"routing": rt, "points": n_pts, "whole_s": t_whole, "split_s": t_split, "check": dev})
    return {"bluewaters": rows, "one_job_check": check, "phases": phases, "nodes": bw.n_nodes, "links": bw.n_links,
            "peak_mb": peak_mb(), "device": device()}


def jobs_rows(data: dict, device_label) -> list[dict]:
    dev = device_label(data["device"])
    out = []
    for r in data["bluewaters"]:
        out.append({
            "scenario": f"jobs: Blue Waters 24x24x24, {r['jobs']} jobs x {TASKS_PER_JOB} tasks, random pairs, "
                        f"scattered nodes", "points": 1, "seconds": r["seconds"], "points_per_s": 1 / r["seconds"],
            "ratio": float("nan"), "ratio_scipy": float("nan"),
            "check": f"1 job = evaluate: {data['one_job_check']:.1g}", "peak_mb": data["peak_mb"], "device": dev,
            "note": (f"one multi-job evaluation (loads, max-min sharing, {r['jobs']}x{r['jobs']} interference "
                     f"matrix) {r['seconds'] * 1e3:.0f} ms warm ({r['first_s']:.2f} s first, compile included) "
                     f"against {r['solo_batch_s'] * 1e3:.0f} ms for the same {r['jobs']} exchanges alone in one "
                     f"evaluate_batch call ({r['seconds'] / r['solo_batch_s']:.2f}x); largest slowdown "
                     f"{r['max_slowdown']:.3f}, largest pairwise {r['max_interference']:.3f}")})
    for p in data["phases"]:
        out.append({
            "scenario": f"phases: DF(4,8,4) stencil 8x8x4 per dimension (3 phases), {p['routing']}",
            "points": p["points"], "seconds": p["split_s"], "points_per_s": p["points"] / p["split_s"],
            "ratio": float("nan"), "ratio_scipy": float("nan"), "check": f"sum of phases: {p['check']:.1g}",
            "peak_mb": data["peak_mb"], "device": dev,
            "note": (f"{p['split_s'] / p['points'] * 1e6:.0f} us per phase-split point against "
                     f"{p['whole_s'] / p['points'] * 1e6:.0f} us all at once "
                     f"({p['split_s'] / p['whole_s']:.2f}x, three exchanges per point)")})
    return out
