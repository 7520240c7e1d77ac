"""Scenario 1 of the bench (:mod:`evaluator.bench.run`): many small configurations on DF(4,8,4), the worker
(evaluator, per-flow walk and SciPy on the same points) and the parent (one core, two cores, the table rows)."""

from __future__ import annotations

import itertools
import json
import math
import os
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

from ._common import _collect, _device, _device_label, _launch, _peak_mb, _rel_dev, _stop, child_timeout, timed_out

CHUNK = 256  # points per device call in scenario 1 (evaluate_batch chunk_size)
SCIPY_CHECKED = 16  # scenario 1: points per (beta, routing) class whose SciPy loads are compared link for link
SCIPY_TIME_CHECKED = 512  # scenario 1: about this many per class whose SciPy completion time is compared


# --------------------------------------------------------------------------------------
# Scenario 1: many small configurations
# --------------------------------------------------------------------------------------


def _gammas(topology, beta) -> list[tuple[int, ...]]:
    """Every gamma (divisor per dimension) feasible for Prisacari's Cartesian placement."""
    per_group = topology.a * topology.p
    n = math.prod(beta)
    out = []
    for gamma in itertools.product(*[[d for d in range(1, b + 1) if b % d == 0] for b in beta]):
        size = math.prod(gamma)
        if size <= per_group and n // size <= topology.g:
            out.append(tuple(gamma))
    return out


def small_plan(quick: bool):
    """Topology, routings, (beta, gamma) configurations and seeds of scenario 1."""
    from .. import routing, topology

    df = topology.dragonfly(4, 8, 4)
    routings = (routing.minimal(), routing.valiant())
    configs = [(beta, gamma) for beta in ((8, 8, 4), (16, 8, 8)) for gamma in _gammas(df, beta)]
    target = 5_376 if quick else 100_000  # quick: 64 seeds per configuration, whole blocks of 64 and 32
    seeds = math.ceil(target / (len(configs) * len(routings)))
    return df, routings, configs, seeds


def _w_small(args) -> dict:
    from .. import placement, traffic
    from ..evaluation import evaluate_batch

    df, routings, configs, n_seeds = small_plan(args.quick)
    part, n_parts = args.part, args.parts
    seeds = list(range(n_seeds))[part::n_parts]
    stencils = {beta: traffic.stencil(beta, beta, 8.0) for beta in {b for b, _ in configs}}
    t0 = time.perf_counter()
    placements = {c: [placement.dragonfly_cartesian(df, c[0], c[1], seed=s) for s in seeds] for c in configs}
    build_s = time.perf_counter() - t0
    # compile every bucket (one per beta and routing) before timing, with the timed calls' point count
    t0 = time.perf_counter()
    for rt in routings:
        for beta, tr in stencils.items():
            c = next(c for c in configs if c[0] == beta)
            evaluate_batch(df, rt, tr, placements[c], chunk_size=CHUNK)
    compile_s = time.perf_counter() - t0
    if args.barrier:
        _wait_barrier(args.barrier, part, "")
    start = time.time()
    repeats = []  # the whole timed loop, repeated (--quick: 3 times, median); workers run them concurrently
    for _ in range(3 if args.quick else 1):
        t0 = time.perf_counter()
        n_points = 0
        checksum = 0.0
        for rt in routings:
            for c in configs:
                res = evaluate_batch(df, rt, stencils[c[0]], placements[c], chunk_size=CHUNK)
                n_points += len(placements[c])
                checksum += float(res.metrics["completion_time"].sum())
        repeats.append(time.perf_counter() - t0)
    eval_s = float(np.median(repeats))
    out = {"points": n_points, "eval_s": eval_s, "repeats_s": repeats, "start": start, "end": time.time(),
           "build_s": build_s,
           "compile_s": compile_s, "checksum": checksum}
    out["peak_mb"] = _peak_mb()  # the evaluator's peak, before the baselines run in this process
    if args.baseline:
        out["baseline"] = _small_baseline(df, routings, configs, stencils, placements, seeds, args.baseline)
        out["baseline"]["peak_mb"] = _peak_mb()  # this process's peak so far (the evaluator's included)
        out["scipy"] = _small_scipy(df, routings, configs, stencils, placements, seeds, 3 if args.quick else 1)
        out["scipy"]["peak_mb"] = _peak_mb()
    elif args.scipy and args.barrier:  # the SciPy baseline on n cores, measured: the workers start it together
        _wait_barrier(args.barrier, part, "scipy")
        out["scipy"] = _small_scipy(df, routings, configs, stencils, placements, seeds, 3 if args.quick else 1,
                                    n_checked=0)
    out["device"] = _device()
    return out


def _wait_barrier(barrier: str, part: int, stage: str) -> None:
    """Signal ``ready{stage}-{part}`` and wait for the parent's ``go{stage}`` (workers start a stage together); a
    worker whose parent died, or that waited past :func:`~._common.child_timeout`, stops (it polled for ever)."""
    Path(barrier, f"ready{stage}-{part}").touch()
    parent, deadline = os.getppid(), time.monotonic() + child_timeout()
    while not Path(barrier, f"go{stage}").exists():
        if os.getppid() != parent or time.monotonic() > deadline:
            raise SystemExit(f"bench worker 'small' part {part}: no go{stage} from its parent (it died, or "
                             f"{child_timeout():g} s passed)")
        time.sleep(0.001)


def _small_baseline(df, routings, configs, stencils, placements, seeds, per_class: int) -> dict:
    """Per-flow walk on ``per_class`` points of each (beta, routing) class; loads compared link for link."""
    from .baseline import PerFlowBaseline
    from ..evaluation import evaluate_batch

    rng = np.random.default_rng(2024)
    classes = {}
    worst = 0.0
    for rt in routings:
        base = PerFlowBaseline(df, rt)
        for beta, tr in stencils.items():
            cfgs = [c for c in configs if c[0] == beta]
            picks = [(cfgs[int(rng.integers(len(cfgs)))], int(rng.integers(len(seeds)))) for _ in range(per_class)]
            pls = [placements[c][s] for c, s in picks]
            times = []
            for pl in pls:
                t0 = time.perf_counter()
                ref = base.link_loads(tr, pl)
                times.append(time.perf_counter() - t0)
                fast = evaluate_batch(df, rt, tr, pl, keep_link_load=True).link_load[0]
                worst = max(worst, _rel_dev(fast, ref))
            n_cls = len(cfgs) * len(seeds)
            classes[f"{rt.label} beta={'x'.join(map(str, beta))}"] = {
                "sampled": len(times), "mean_s": float(np.mean(times)), "points": n_cls}
    total = sum(c["mean_s"] * c["points"] for c in classes.values())
    points = sum(c["points"] for c in classes.values())
    return {"classes": classes, "seconds": total, "points": points, "max_rel_dev": worst}


def _small_scipy(df, routings, configs, stencils, placements, seeds, repeats: int,
                 n_checked: int = SCIPY_CHECKED) -> dict:
    """SciPy routing matrix on every point the evaluator timed, each (beta, routing) class the faster of its two
    ways (the strongest reference).

    ``R`` is built once per routing (timed apart, with its CSR copy); the timed loop covers the evaluator's
    points, per routing and traffic (beta) the placements of every gamma, applied both ways by
    :meth:`~evaluator.bench.baseline.SparseMatrixBaseline.apply_batch`: ``batched`` (one sparse demand ``D``
    [router pair, point] and ``R @ D`` per batch of its own memory-bounded size) and ``per point`` (the
    point's column slice ``R[:, used pairs] @ bytes``), both with the completion time per point, the two
    timed in turn, ``repeats`` times, medians kept. Each class's time is the faster way's
    (:func:`~evaluator.bench.baseline.strongest`; the class's ``method``), the total their sum. Outside the
    timing, about ``SCIPY_TIME_CHECKED`` points' completion times per class are compared with the evaluator's
    for both ways, and ``n_checked`` of them link for link."""
    from .baseline import METHODS, SparseMatrixBaseline, strongest
    from ..evaluation import evaluate_batch

    builds, bases = {}, {}
    for rt in routings:
        base = bases[rt.label] = SparseMatrixBaseline(df, rt)
        base.check_size()
        t0 = time.perf_counter()
        base.build(check=False)
        builds[rt.label] = {"build_s": time.perf_counter() - t0, "nnz": base.nnz, "mb": base.nbytes / 2**20}
    by_beta = {beta: [pl for c in configs if c[0] == beta for pl in placements[c]] for beta in stencils}
    sizes = {(rt.label, beta): bases[rt.label].batch_size(tr, len(by_beta[beta]))
             for rt in routings for beta, tr in stencils.items()}  # checked (refused if too large) before timing

    def key(rt, beta):
        return f"{rt.label} beta={'x'.join(map(str, beta))}"

    times: dict[tuple[str, str], list[float]] = {}
    for _ in range(repeats):
        for rt in routings:
            base = bases[rt.label]
            for beta, tr in stencils.items():  # one traffic: its placements of every gamma together
                for method in METHODS:  # the two ways in turn, on the same points
                    t0 = time.perf_counter()
                    base.apply_batch(tr, by_beta[beta], batch_size=sizes[(rt.label, beta)], method=method)
                    times.setdefault((key(rt, beta), method), []).append(time.perf_counter() - t0)
    classes = {}
    for rt, beta in itertools.product(routings, stencils):
        k, n = key(rt, beta), len(by_beta[beta])
        by_method = {m: float(np.median(times[(k, m)])) for m in METHODS}
        method = strongest(by_method)
        classes[k] = {"points": n, "method": method, "seconds": by_method[method], "mean_s": by_method[method] / n,
                      "by_method_s": by_method, "batch_size": sizes[(rt.label, beta)]}
    worst, checked, worst_time = 0.0, 0, 0.0
    if n_checked:
        for rt in routings:
            base = bases[rt.label]
            for beta, tr in stencils.items():
                pls = by_beta[beta][:: max(1, len(by_beta[beta]) // SCIPY_TIME_CHECKED)]  # every configuration
                ours = evaluate_batch(df, rt, tr, pls, chunk_size=CHUNK).metrics["completion_time"]
                few = pls[:: max(1, len(pls) // n_checked)][:n_checked]  # spread over the configurations
                fast = np.asarray(evaluate_batch(df, rt, tr, few, keep_link_load=True).link_load)
                for method in METHODS:  # both ways against the evaluator
                    got = base.apply_batch(tr, pls, method=method)["completion_time"]
                    worst_time = max(worst_time, _rel_dev(got, ours))
                    mine = base.apply_batch(tr, few, keep_link_load=True, method=method)["link_load"]
                    worst = max(worst, max(_rel_dev(m, f) for m, f in zip(mine, fast)))
                checked += len(few)
    points = sum(c["points"] for c in classes.values())
    return {"classes": classes, "builds": builds, "seconds": sum(c["seconds"] for c in classes.values()),
            "points": points, "max_rel_dev": worst, "max_rel_dev_time": worst_time, "checked": checked,
            "batch_sizes": sorted(set(sizes.values()))}


# --------------------------------------------------------------------------------------
# Parent
# --------------------------------------------------------------------------------------


def _run_small(quick: bool, log, raw: dict) -> list[dict]:
    cpus = sorted(os.sched_getaffinity(0))
    per_class = 4 if quick else 12
    log("scenario 1: DF(4,8,4), one core (with the per-flow baseline on samples, SciPy on every point, the "
        "faster of batched and per point per class)")
    one = _collect(*_launch("small", quick, cpus[:1], ["--baseline", str(per_class)]), "small")
    runs = [("1 core", 1, one)]
    probe = one["device"]
    if probe["platform"] == "cpu" and len(cpus) >= 2:
        log("scenario 1: DF(4,8,4), two cores (two workers, one core each)")
        barrier = tempfile.mkdtemp(prefix="bench-barrier-")
        procs: list = []
        try:
            for i, c in enumerate(cpus[:2]):
                procs.append(_launch("small", quick, [c], ["--part", str(i), "--parts", "2", "--barrier", barrier,
                                                           "--scipy"]))
            deadline = time.monotonic() + child_timeout()
            for stage in ("", "scipy"):  # the evaluator's timed loop, then the SciPy baseline: each started together
                while not all(Path(barrier, f"ready{stage}-{i}").exists() for i in range(2)):
                    codes = [p.poll() for p, _ in procs]
                    failed = [rc for rc in codes if rc not in (None, 0)]
                    if failed or time.monotonic() > deadline:  # (both stopped on the way out: see finally)
                        if failed:
                            raise RuntimeError(f"bench worker 'small' failed with exit status {failed[0]}")
                        raise timed_out("bench worker 'small' (two cores)", procs[0][0].args, child_timeout())
                    time.sleep(0.01)
                Path(barrier, f"go{stage}").touch()
            parts = [_collect(p, o, "small") for p, o in procs]
        finally:  # every path (done, a worker failed, past the time, an interrupt): no worker, file or barrier left
            for p, o in procs:
                _stop(p)
                o.unlink(missing_ok=True)
            shutil.rmtree(barrier, ignore_errors=True)
        # both workers start together (barrier) and run their repeats concurrently: the slower one sets the time
        two = {"points": sum(p["points"] for p in parts),
               "eval_s": max(p["eval_s"] for p in parts),
               "peak_mb": max(p["peak_mb"] for p in parts), "build_s": max(p["build_s"] for p in parts),
               "compile_s": max(p["compile_s"] for p in parts),
               "device": dict(parts[0]["device"], cpus=2),
               # each worker's SciPy rate while the other runs its own: their sum is SciPy's measured 2-core rate
               "scipy_rate": sum(p["scipy"]["points"] / p["scipy"]["seconds"] for p in parts)}
        runs.append(("2 cores", 2, two))
    base = one["baseline"]
    base_rate = base["points"] / base["seconds"]
    sc = one["scipy"]
    sc_rate = sc["points"] / sc["seconds"]  # one core; n independent processes: n times this
    raw["small"] = {"one_core": one, "per_flow_rate": base_rate, "scipy_rate": sc_rate,
                    "place_s_per_point": one["build_s"] / one["points"],  # the NumPy Cartesian generator
                    "per_flow_checked": 4 * per_class}
    check = (f"walk {base['max_rel_dev']:.1e} ({4 * per_class} pts), SciPy {sc['max_rel_dev']:.1e} "
             f"({sc['checked']} pts; time {sc['max_rel_dev_time']:.1e})")
    rows = []
    for label, cores, r in runs:
        rate = r["points"] / r["eval_s"]
        if cores == 1:
            vs = "vs SciPy on 1 core"
            sc_cores = sc_rate
        else:  # measured on the same cores, concurrently; n x the one-core rate reported beside it
            sc_cores = r["scipy_rate"]
            vs = (f"vs SciPy on {cores} cores, measured the same way ({sc_cores:,.0f} points/s; "
                  f"{cores} x its one-core rate would give {rate / (cores * sc_rate):.2f}x)")
            raw["small"]["scipy_rate_2_cores"] = sc_cores
        rows.append({
            "scenario": f"DF(4,8,4) stencil, every gamma, min+val ({label})", "points": r["points"],
            "seconds": r["eval_s"], "points_per_s": rate, "ratio": rate / base_rate,
            "ratio_scipy": rate / sc_cores, "check": check,
            "peak_mb": r["peak_mb"], "device": _device_label(r["device"]),
            "note": f"compile {r['compile_s']:.1f} s, placements built in {r['build_s']:.1f} s (not timed); {vs}"})
    rows.append({
        "scenario": "per-flow Python walk (baseline), same points", "points": base["points"],
        "seconds": base["seconds"], "points_per_s": base_rate, "ratio": 1.0, "ratio_scipy": base_rate / sc_rate,
        "check": f"extrapolated from {4 * per_class} timed pts", "peak_mb": base["peak_mb"],
        "device": "cpu x1 (Python)",
        "note": "mean s/pt: " + json.dumps({k: round(v["mean_s"], 4) for k, v in base["classes"].items()})})
    builds = "; ".join(f"{k} {v['build_s']:.2f} s ({v['nnz']:,} nnz, {v['mb']:.0f} MB)"
                       for k, v in sc["builds"].items())
    rows.append({
        "scenario": "SciPy sparse routing matrix (baseline), same points", "points": sc["points"],
        "seconds": sc["seconds"], "points_per_s": sc_rate, "ratio": sc_rate / base_rate, "ratio_scipy": 1.0,
        "check": "all pts, per class the faster way: " + "; ".join(
            f"{k} {v['method']}" for k, v in sc["classes"].items()), "peak_mb": sc["peak_mb"],
        "device": "cpu x1 (SciPy)",
        "note": (f"every timed point of the evaluator, each (beta, routing) class timed two ways on the same points, "
                 f"the faster kept (the strongest reference): batched (one sparse demand D [router pair, point] "
                 f"and R @ D per batch of {'/'.join(map(str, sc['batch_sizes']))} points, every gamma of a beta "
                 f"together) and per point (the point's column slice R[:, used pairs] @ bytes), each with the "
                 f"completion time (max load/capacity) per point; the evaluator's repeats (median); R (links x "
                 f"router pairs) built once per routing, not in the time: {builds}; points/s per class "
                 f"(batched / per point -> kept): "
                 + "; ".join(f"{k}: {v['points'] / v['by_method_s']['batched']:,.0f} / "
                             f"{v['points'] / v['by_method_s']['per point']:,.0f} -> {v['method']}"
                             for k, v in sc["classes"].items()))})
    return rows
