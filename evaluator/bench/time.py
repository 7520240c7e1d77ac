"""Bench scenario ``time``: time beyond the bound (latency, flow-level sharing, phases), measured in one run.

* **collectives against SMPI**: the same collective cases (every algorithm both tools implement, p ranks on a
  ring of p nodes at 1 us and 1 GB/s per link, sizes 8 B to 1 MiB) through SimGrid's SMPI 3.32
  (:mod:`evaluator.bench.smpi`: one ``smpirun`` per algorithm and p, every size in it) and through
  :func:`evaluator.evaluate` with the SMPI-like model (``sharing="max_min"``, ``fairness="rtt"``,
  ``progression="rank"``); configurations per second on both sides, and the largest deviation of the times.
  Skipped (said so in the table) where ``smpirun`` is absent.
* **flow-level sharing against the bound**: one ``evaluate_batch`` of a torus all-to-all under 32 random
  placements with ``sharing="max_min"`` against the same call without (the bound); equal messages, so both give
  the same times (checked).
* **trace phases**: a phased exchange of 12,600 phases (100 ring allreduces over 64 ranks on a 4x4x4 torus)
  through :func:`evaluator.evaluate`: phases per second, warm.
"""

from __future__ import annotations

import time

import numpy as np

__all__ = ["w_time", "time_rows"]

ALGORITHMS = [("allreduce", "ring"), ("allreduce", "recursive_doubling"), ("allreduce", "rabenseifner"),
              ("alltoall", "pairwise"), ("alltoall", "bruck"), ("allgather", "ring"),
              ("allgather", "recursive_doubling"), ("broadcast", "binomial")]
RANKS = {False: (8, 16, 64), True: (8,)}


def _sizes(op: str, alg: str, p: int) -> list[int]:
    out = [8 * p if (op, alg) == ("allreduce", "ring") else 8, 8192, 65536, 1 << 20]
    return [s for s in out if not (op == "alltoall" and s * p > 1 << 24)]


def w_time(args, device, peak_mb, timed) -> dict:
    from .. import placement, traffic
    from ..evaluation import evaluate, evaluate_batch
    from ..latency import Latency
    from ..routing import dor
    from ..topology import torus
    from . import smpi

    quick = bool(args.quick)
    out: dict = {"device": device()}
    # collectives against SMPI
    lat = Latency(link=(("torus-dim0", 1e-6),), eager_threshold=65535.0, rendezvous_round_trips=0,
                  eager_buffered=False)
    coll = []
    for p in RANKS[quick]:
        topo = torus([p], link_bandwidth=1e9, injection_bandwidth=1e15).with_latency(lat)
        plat = smpi.torus_platform([p], 1e9, 1e-6) if smpi.available() else None
        for op, alg in ALGORITHMS:
            sizes = _sizes(op, alg, p)
            ref, t_smpi = None, float("nan")
            if plat is not None:
                t0 = time.perf_counter()
                ref = smpi.run_collectives(plat, [(op, smpi.smpi_algorithm(op, alg, p), p, s) for s in sizes], p)
                t_smpi = time.perf_counter() - t0
            trs = [traffic.collective(op, alg, n_tasks=p, nbytes=float(s)) for s in sizes]
            pl = placement.linear(topo, p)
            run = lambda: [float(evaluate(topo, tr, pl, dor(tie="positive"), sharing="max_min",  # noqa: E731
                                          fairness="rtt", progression="rank").time_max_min) for tr in trs]
            t0 = time.perf_counter()
            got = run()
            first = time.perf_counter() - t0
            warm = timed(run, 1)
            dev = float("nan") if ref is None else float(np.max(np.abs(np.asarray(got) / np.asarray(ref) - 1)))
            coll.append({"p": p, "op": op, "algorithm": alg, "cases": len(sizes), "smpi_s": t_smpi,
                         "first_s": first, "warm_s": warm, "max_dev": dev})
    out["collectives"] = coll
    # flow-level sharing against the bound
    t4 = torus([4, 4, 4])
    pls = [placement.fully_random(t4, 64, seed=s) for s in range(8 if quick else 32)]
    a2a = traffic.all_to_all(64, 1e6)
    bound = lambda: evaluate_batch(t4, "dor", a2a, pls)  # noqa: E731
    mm = lambda: evaluate_batch(t4, "dor", a2a, pls, sharing="max_min")  # noqa: E731
    b, m = bound(), mm()
    check = float(np.max(np.abs(m.metrics["time_max_min"] / b.metrics["completion_time"] - 1)))
    out["sharing"] = {"points": len(pls), "flows": int(a2a.n_flows), "bound_s": timed(bound, 3),
                      "max_min_s": timed(mm, 1), "check": check}
    # trace phases
    one = traffic.collective("allreduce", "ring", n_tasks=64, nbytes=1e6)
    tr = traffic.phased(list(one.phases) * (10 if quick else 100))
    pl = placement.linear(t4, 64)
    t0 = time.perf_counter()
    evaluate(t4, tr, pl, "dor")
    first = time.perf_counter() - t0
    out["phases"] = {"phases": tr.n_phases, "first_s": first, "warm_s": timed(lambda: evaluate(t4, tr, pl, "dor"), 3)}
    out["peak_mb"] = peak_mb()
    return out


def time_rows(data: dict, device_label) -> list[dict]:
    dev = device_label(data["device"])
    rows = []
    by_p: dict[int, list[dict]] = {}
    for r in data["collectives"]:
        by_p.setdefault(r["p"], []).append(r)
    for p, rs in by_p.items():
        cases = sum(r["cases"] for r in rs)
        warm = sum(r["warm_s"] for r in rs)
        smpi_s = sum(r["smpi_s"] for r in rs)
        dev_max = max((r["max_dev"] for r in rs), default=float("nan"))
        rows.append({
            "scenario": f"time: collectives on a {p}-node ring against SMPI 3.32 ({len(rs)} algorithms, 8 B-1 MiB)",
            "points": cases, "seconds": warm, "points_per_s": cases / warm,
            "ratio": smpi_s / warm if np.isfinite(smpi_s) else float("nan"), "ratio_scipy": float("nan"),
            "check": ("SMPI absent" if not np.isfinite(dev_max) else f"|t/SMPI - 1| <= {dev_max:.3f}"),
            "peak_mb": data["peak_mb"], "device": dev,
            "note": (f"max-min, rtt weights, ranks on their own: {cases / warm:.1f} configurations/s warm "
                     f"({sum(r['first_s'] for r in rs):.1f} s first); SMPI {cases / smpi_s:.1f} configurations/s "
                     f"(one smpirun per algorithm, every size in it)" if np.isfinite(smpi_s) else
                     f"{cases / warm:.1f} configurations/s warm; SMPI not installed")})
    s = data["sharing"]
    rows.append({
        "scenario": f"time: max-min sharing, torus 4x4x4 all-to-all ({s['flows']:,} flows), random placements",
        "points": s["points"], "seconds": s["max_min_s"], "points_per_s": s["points"] / s["max_min_s"],
        "ratio": s["bound_s"] / s["max_min_s"], "ratio_scipy": float("nan"),
        "check": f"equal flows = bound: {s['check']:.1g}", "peak_mb": data["peak_mb"], "device": dev,
        "note": (f"{s['max_min_s'] / s['points'] * 1e3:.1f} ms a point under max-min against "
                 f"{s['bound_s'] / s['points'] * 1e3:.2f} ms for the bound (ratio: bound time / max-min time)")})
    ph = data["phases"]
    rows.append({
        "scenario": f"time: phased trace, {ph['phases']:,} phases (ring allreduces, 64 ranks, torus 4x4x4)",
        "points": ph["phases"], "seconds": ph["warm_s"], "points_per_s": ph["phases"] / ph["warm_s"],
        "ratio": float("nan"), "ratio_scipy": float("nan"), "check": "", "peak_mb": data["peak_mb"], "device": dev,
        "note": f"{ph['phases'] / ph['warm_s']:,.0f} phases/s warm ({ph['first_s']:.2f} s first, compile included)"})
    return rows
