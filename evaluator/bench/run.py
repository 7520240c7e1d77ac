"""``evaluator bench``: throughput of the batched kernels against two baselines.

Baselines (:mod:`evaluator.bench.baseline`): a per-flow Python walk, and a
SciPy sparse routing matrix ``R`` (links x router pairs on Dragonflies, built
once per topology and routing; on tori built with the points; fat trees:
applied per point), with the completion time (max load / capacity) per
point, applied two ways and timed on the same points, the faster kept per
routing class (the strongest reference, ``evaluator.bench.baseline.strongest``):
``batched`` (``loads = R @ D``, ``D`` the demand of a batch of points as one
sparse matrix [column, point]; a torus's ``R`` over the batch's router pairs)
and ``per point`` (a Dragonfly: ``R[:, used pairs] @ bytes``; a torus: ``R``
links x flows built for the point, ``R @ bytes``). Their loads are compared
with the evaluator's link for link; their times are reported as the ratios
``vs per-flow`` and ``vs SciPy`` (per-point cost: the faster way's apply on a
Dragonfly, its build plus apply on a torus; a Dragonfly's build is reported
apart; the row's note names the way kept).

Scenarios (issues 5 and 10):

1. ``small``: many small configurations. DF(4,8,4) (1,056 nodes), a 3D
   stencil with beta = (8,8,4) and (16,8,8), every feasible gamma
   (Prisacari's Cartesian placement), minimal and Valiant routing, placement
   seeds repeated until there are >= 100,000 points (5,376 with ``--quick``).
   Timed on one CPU core and on two (two worker processes, one core each,
   half of the points each, started together), against the per-flow walk on
   stratified samples of the same points (timed and extrapolated) and SciPy
   on every point, batched and per point in turn, the faster kept per class
   (the evaluator's repeats); sampled points' loads are compared link for link,
   and SciPy's completion times too. SciPy on two cores is
   measured as the evaluator is: both workers time it on their own points,
   started together (the sum of their rates; the note gives 2 x the
   one-core rate beside it: the two cores share caches and, on a VM,
   possibly a physical core).
2. ``mira``: Mira, 16x16x12x8x2 = 49,152 nodes, DOR in BG/Q order (longest
   dimension first): 5D and 4D stencils, bisection pairing, uniform
   all-to-all (never materialised). One evaluation each (warm; the one-off
   compilation is reported apart). Checked link for link against the
   per-flow walk on a BG/Q midplane, 4x4x4x4x2, with the same patterns, and
   against the SciPy matrix on Mira itself; the per-flow time on Mira is
   extrapolated from a random sample of its flows.
3. ``dragonfly``: DF(8,16,8) (16,512 nodes, 129 groups), minimal and
   Valiant, uniform all-to-all and a 3D stencil; checked on DF(2,4,2).
4. ``torus``: a 3-D one-hop stencil on a 256x256x4 torus (128x128x4 with
   ``--quick``) under DOR; checked on 8x8x4.
5. ``sweep``: the README's 10^6-point study, ``evaluator sweep
   sweeps=dragonfly_nne_placement +sweep.axes.placement.seed={range:[0,3125]}``
   (10 seeds, 3,200 points, with ``--quick``), end to end in a subprocess:
   grid and feasible points/s, the driver's peak RSS. ``vs SciPy``: feasible
   points/s against SciPy run as a sweep (each feasible point's placement
   from the NumPy generator, timed in scenario 1, then the apply; start-up
   left out); the note gives the ratio against the apply alone too.
6. ``optimize``: ``evaluator optimize --tasks 256 --alpha 512,512,512
   --routings minimal,valiant`` in a subprocess, cold (empty
   ``XDG_CACHE_HOME``) and run again: wall time with Python start-up,
   configurations/s.
7. ``scaling``: time against nodes (tori, sparse stencil and dense
   all-to-all), flows (random flows on Mira) and batch size (scenario 1's
   kernel); a PNG plot.
8. ``lp``: the batched JAX LP solver (MPAX PDHG) against HiGHS on the same
   Model 1 instances (:mod:`evaluator.bench.lp`): >= 100 many-to-many
   instances on a 512-node BG/Q partition, one on 8,192 nodes.
9. ``startup``: a library user's first ``ev.evaluate`` of an 8x8 torus in a
   new Python process, cold (empty compilation cache) and in later processes
   (warm cache: ``import evaluator`` turns it on), import excluded, the ratio
   and issue 24's 0.5 s target (:mod:`evaluator.bench.startup`).

Every kernel scenario runs in its own worker process, so that "peak memory" is
the scenario's own peak resident set size (taken before the baselines run)
and the one-core runs can be pinned to one CPU. Results: a table on stdout
and the same rows as JSON under ``results/bench/``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = ["run", "SCENARIOS", "format_table", "parse_cli_output"]

SCENARIOS = ("small", "mira", "dragonfly", "torus", "fat_tree", "jobs", "paths", "sweep", "optimize", "scaling", "lp",
             "startup", "mapping", "time")
CHUNK = 256  # points per device call in scenario 1 (evaluate_batch chunk_size)
SCIPY_CHECKED = 16  # scenario 1: points per (beta, routing) class whose SciPy loads are compared link for link
SCIPY_TIME_CHECKED = 512  # scenario 1: about this many per class whose SciPy completion time is compared
SWEEP_SEEDS = {False: 3125, True: 10}  # placement seeds of the end-to-end sweep: 10^6 points (full), 3,200 (quick)
OPTIMIZE_ARGS = ("--tasks", "256", "--alpha", "512,512,512", "--routings", "minimal,valiant")
TORUS_DIMS = {False: (256, 256, 4), True: (128, 128, 4)}  # the large-torus scenario (full, quick)
BIG_REPEAT, BIG_MIN_S = 7, 1.0  # big scenarios: the evaluator's warm call, SciPy's build and apply: median of at least
# this many calls (rounds, when interleaved), more until they took this many seconds (twice that, interleaved): calls
# of a few ms vary 2x on a VM
BLOCK_S = 0.1  # interleaved timing: each side is called for this long (at least once) before the other's turn


# --------------------------------------------------------------------------------------
# Helpers (worker side)
# --------------------------------------------------------------------------------------


def _peak_mb() -> float:
    """Peak resident set size of this process in MiB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _device() -> dict:
    import jax

    d = jax.devices()[0]
    out = {"platform": d.platform, "kind": d.device_kind, "cpus": len(os.sched_getaffinity(0))}
    try:
        stats = d.memory_stats() or {}
        if "peak_bytes_in_use" in stats:
            out["device_peak_mb"] = stats["peak_bytes_in_use"] / 2**20
    except Exception:  # pragma: no cover - backend without memory stats
        pass
    return out


def _device_label(dev: dict) -> str:
    if dev["platform"] == "cpu":
        return f"cpu x{dev['cpus']}"
    return f"{dev['platform']} {dev['kind']}"


def _timed(fn, repeat: int = 3, min_total: float = 0.0, max_repeat: int = 500) -> float:
    """Median wall time of ``fn()`` (seconds) over at least ``repeat`` calls, more until they took ``min_total``
    seconds in all (at most ``max_repeat``): calls of a few ms on a VM vary by 2x from one to the next."""
    return _interleaved([fn], repeat, min_total, block=0.0, max_rounds=max_repeat)[0]


def _interleaved(fns, repeat: int, min_total: float, block: float = BLOCK_S, max_rounds: int = 500) -> list[float]:
    """Median wall time of each of ``fns`` (seconds), over rounds in which each is called in turn for a block of
    ``block`` seconds (at least once): at least ``repeat`` rounds, more until they took ``min_total`` seconds in
    all (at most ``max_rounds``).

    Both sides of a ratio are timed over the same stretch of time, so a slow spell of the machine (a VM's
    neighbours) slows both: timed one after the other, Mira's 5D stencil read 4.9x to 11x SciPy from run to run.
    Blocks rather than single calls in turn: each side then runs with its own data in the caches, as it would
    on its own (single calls in turn slowed the evaluator's DF(8,16,8) stencil from 2.5 to 3.7 ms).
    """
    times: list[list[float]] = [[] for _ in fns]
    start = time.perf_counter()
    rounds = 0
    while rounds < repeat or (time.perf_counter() - start < min_total and rounds < max_rounds):
        for fn, t in zip(fns, times):
            calls, spent = 0, 0.0
            while not calls or spent < block:
                t0 = time.perf_counter()
                fn()
                t.append(time.perf_counter() - t0)
                calls, spent = calls + 1, spent + t[-1]
        rounds += 1
    return [float(np.median(t)) for t in times]


def _rel_dev(fast: np.ndarray, ref: np.ndarray) -> float:
    """Largest |fast - ref| over links, relative to the largest load."""
    scale = max(float(np.abs(ref).max(initial=0.0)), 1e-300)
    return float(np.abs(np.asarray(fast) - ref).max(initial=0.0) / scale)


def _sample_flows(traffic, k: int, rng) -> list[tuple[int, int, float]]:
    """``k`` random flows of a traffic (:meth:`~evaluator.traffic.AbstractTraffic.sample_flows`; for timing the
    per-flow walk)."""
    f = traffic.sample_flows(k, rng)
    return list(zip(f.src.tolist(), f.dst.tolist(), f.nbytes.tolist()))


def _baseline_seconds(topology, routing, traffic, placement, k: int, seed: int = 0) -> tuple[float, int]:
    """Per-flow walk time for the whole traffic, extrapolated from ``k`` sampled flows."""
    from .baseline import PerFlowBaseline

    base = PerFlowBaseline(topology, routing)
    flows = _sample_flows(traffic, k, np.random.default_rng(seed))
    tn = placement.task_node.tolist()
    t0 = time.perf_counter()
    base.flow_loads(flows, tn)
    dt = time.perf_counter() - t0
    return dt / len(flows) * traffic.n_flows, len(flows)


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
    """Signal ``ready{stage}-{part}`` and wait for the parent's ``go{stage}`` (workers start a stage together)."""
    Path(barrier, f"ready{stage}-{part}").touch()
    while not Path(barrier, f"go{stage}").exists():
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
# Scenario 2: Mira
# --------------------------------------------------------------------------------------


def _mira_patterns(topo, quick: bool):
    """(name, traffic, placement) of the Mira patterns on ``topo`` (a 5D BG/Q torus)."""
    from .. import placement, traffic
    from ..traffic import dense as structured

    dims = topo.dims
    n = topo.n_nodes
    four = (2 * dims[0],) + tuple(dims[1:4])  # the 2-wide E dimension folded into A
    lin = placement.linear(topo, n)
    return [
        ("5D stencil", traffic.stencil([8 * d for d in dims], dims, 8.0), lin),
        ("4D stencil", traffic.stencil([8 * d for d in four], four, 8.0), lin),
        ("bisection pairing", traffic.bisection_pairing(topo, 2.0**20), lin),
        ("uniform all-to-all", structured.all_to_all(n, 1024.0), lin),
    ]


def _check_against_walk(topo, rt, tr, pl) -> float:
    from .baseline import PerFlowBaseline
    from ..evaluation import evaluate_batch

    flows = tr.to_flows()
    ref = PerFlowBaseline(topo, rt).link_loads(flows, pl)
    fast = evaluate_batch(topo, rt, tr, pl, keep_link_load=True).link_load[0]
    return _rel_dev(fast, ref)


def _big_rows(topo, routings, patterns, small_topo, small_patterns, k_flows: int) -> tuple[list[dict], float]:
    """One row per (routing, pattern): the evaluator (warm, first call apart), then the per-flow walk
    (extrapolated from ``k_flows`` flows, checked on ``small_topo``), then the SciPy routing matrix (checked
    link for link against the evaluator here). Returns the rows and the evaluator's peak RSS (MiB), taken
    before the baselines run."""
    from ..evaluation import evaluate_batch

    rows, loads = [], []
    for rt in routings:
        for (name, tr, pl), (_, str_, spl) in zip(patterns, small_patterns):
            t0 = time.perf_counter()
            evaluate_batch(topo, rt, tr, pl)
            first = time.perf_counter() - t0
            warm = _timed(lambda: evaluate_batch(topo, rt, tr, pl), repeat=BIG_REPEAT, min_total=BIG_MIN_S)
            res = evaluate_batch(topo, rt, tr, pl, keep_link_load=True)
            loads.append(np.asarray(res.link_load[0]))
            rows.append({
                "pattern": name, "routing": rt.label, "flows": tr.n_flows, "eval_s": warm,
                "first_call_s": first,
                "completion_time": float(res.metrics["completion_time"][0]),
                "mean_hops": float(res.metrics["mean_hops"][0]), "bottleneck": str(res.bottleneck_names()[0]),
                "check_topology": small_topo.name,
            })
            del res
    peak = _peak_mb()
    i = 0
    for rt in routings:
        for (name, tr, pl), (_, str_, spl) in zip(patterns, small_patterns):
            base_s, k = _baseline_seconds(topo, rt, tr, pl, k_flows)
            rows[i].update(baseline_s=base_s, baseline_flows_sampled=k,
                           check_rel_dev=_check_against_walk(small_topo, rt, str_, spl))
            i += 1
    i = 0
    for rt in routings:
        matrix = None  # a Dragonfly's R serves every pattern of the routing
        for name, tr, pl in patterns:
            matrix = _scipy_big(topo, rt, tr, pl, loads[i], rows[i], matrix,
                                lambda: evaluate_batch(topo, rt, tr, pl))
            loads[i] = None
            i += 1
    return rows, peak


def _scipy_big(topo, rt, tr, pl, ref: np.ndarray, row: dict, matrix, evaluate):
    """Time the SciPy routing matrix on one big point into ``row``; return ``(matrix, build seconds)`` to pass
    back as ``matrix`` for the routing's next pattern (a Dragonfly's or fat tree's R is built once).

    Per-point cost: the faster (:func:`~evaluator.bench.baseline.strongest`, ``row["scipy_method"]``) of
    :meth:`~evaluator.bench.baseline.SparseMatrixBaseline.apply_batch`'s two ways on this one point, both with
    its completion time: ``batched`` (a batch of this one point: ``R @ D``, ``D`` one sparse column) and
    ``per point`` (a Dragonfly: the point's column slice ``R[:, used pairs] @ bytes``; a torus: ``R`` links x
    flows built for the point, then ``R @ bytes``). A Dragonfly's R is built once per topology and routing, not
    in the time; a torus's is built in the call (either way), its share reported as the build. A fat tree's
    matrix has the per-point apply only (build + apply). A matrix estimated too large is reported, never built.
    The evaluator (``evaluate()``, its warm call) is timed again in the same rounds (:func:`_interleaved`, the
    evaluator and each way in turn): ``row["eval_s"]`` becomes that time, the ratio's numerator, and the
    earlier time alone is kept as ``eval_alone_s``.
    """
    from ..errors import ResourceError, fmt_size
    from .baseline import BYTES_PER_ENTRY, METHODS, routing_matrix, scipy_serves, strongest

    if matrix is None and not scipy_serves(topo, rt):
        row.update(scipy_na="no SciPy R", scipy_reason=f"no SciPy routing matrix for {rt.label} on a {topo.kind} (the "
                   "per-flow walk is this row's reference)")
        return None
    base, build = matrix if matrix is not None else (routing_matrix(topo, rt), 0.0)
    try:
        need = base.check_size(tr, pl)
    except ResourceError as exc:
        entries = base.estimate(tr, pl)
        row.update(scipy_na=f"R too big ({fmt_size(BYTES_PER_ENTRY * entries)})", scipy_entries=entries,
                   scipy_reason=str(exc))
        return base, build
    batched = hasattr(base, "apply_batch")  # the fat trees' matrix has the per-point apply only
    if batched:
        if base.per_pair and base.R is None:
            t0 = time.perf_counter()
            base.build(check=False)
            build = time.perf_counter() - t0
        builds: dict[str, list[float]] = {m: [] for m in METHODS}

        def way(m):
            def fn():
                base.apply_batch(tr, [pl], method=m)
                builds[m].append(base.last_build_s)
            return fn

        methods = []
        for m in METHODS:  # a way whose one-point batch does not fit memory is left out, with its reason
            try:
                if m == "batched" or base.per_pair:
                    base.batch_size(tr, 1)
                methods.append(m)
            except ResourceError as exc:
                row.setdefault("scipy_methods_na", {})[m] = str(exc)
        if not methods:
            row.update(scipy_na="no SciPy way fits", scipy_reason="; ".join(row["scipy_methods_na"].values()))
            return base, build
        ours, *ways = _interleaved([evaluate] + [way(m) for m in methods], BIG_REPEAT, 2 * BIG_MIN_S)
        by_method = dict(zip(methods, ways))
        method = strongest(by_method)
        point = by_method[method]
        if not base.per_pair:  # R built inside the call: its share (each call's build <= its total)
            build = float(np.median(builds[method]))
        apply = point - build if not base.per_pair else point
    else:
        ours, build, apply = _interleaved([evaluate, lambda: base.build(tr, pl, check=False),
                                           lambda: base.link_loads(tr, pl)], BIG_REPEAT, 2 * BIG_MIN_S)
        point = build + apply
        method, by_method = "per point", {"per point": point}
    loads = (base.apply_batch(tr, [pl], keep_link_load=True, method=method)["link_load"][0] if batched
             else base.link_loads(tr, pl))
    row.update(eval_alone_s=row["eval_s"], eval_s=ours, scipy_s=point, scipy_build_s=build, scipy_apply_s=apply,
               scipy_nnz=base.nnz, scipy_mb=base.nbytes / 2**20, scipy_est_mb=need / 2**20, scipy_per_point_build=not base.per_pair,
               scipy_batched=batched, scipy_method=method, scipy_by_method_s=by_method,
               scipy_rel_dev=_rel_dev(loads, ref))
    if not base.per_pair:
        base.release()  # free it before the next pattern
    return base, build


def _w_mira(args) -> dict:
    from .. import routing, topology

    mira = topology.bgq_partition((4, 4, 3, 2), name="Mira 16x16x12x8x2")
    small = topology.bgq_partition((1, 1, 1, 1), name="BG/Q midplane 4x4x4x4x2") if not args.quick else \
        topology.torus((4, 4, 2, 2, 2), name="torus 4x4x2x2x2")
    rt = routing.dor("longest_first")
    rows, peak = _big_rows(mira, [rt], _mira_patterns(mira, args.quick), small, _mira_patterns(small, args.quick),
                           2_000 if args.quick else 20_000)
    return {"rows": rows, "topology": mira.name, "nodes": mira.n_nodes, "peak_mb": peak, "device": _device()}


# --------------------------------------------------------------------------------------
# Scenario 3: large Dragonfly
# --------------------------------------------------------------------------------------


def _df_patterns(topo):
    from .. import placement, traffic
    from ..traffic import dense as structured

    n = topo.n_nodes
    side = 1 << (int(math.log2(n)) // 3)
    beta = (side, side, 1 << (int(math.log2(n)) - 2 * int(math.log2(side))))
    tasks = math.prod(beta)
    return [
        ("uniform all-to-all", structured.all_to_all(n, 1024.0), placement.linear(topo, n)),
        (f"3D stencil {'x'.join(map(str, beta))}", traffic.stencil([4 * b for b in beta], beta, 8.0),
         placement.fully_random(topo, tasks, seed=7)),
    ]


def _w_dragonfly(args) -> dict:
    from .. import routing, topology

    df = topology.dragonfly(8, 16, 8)
    small = topology.dragonfly(2, 4, 2)
    rows, peak = _big_rows(df, [routing.minimal(), routing.valiant()], _df_patterns(df), small, _df_patterns(small),
                           500 if args.quick else 5_000)
    return {"rows": rows, "topology": df.name, "nodes": df.n_nodes, "peak_mb": peak, "device": _device()}


# --------------------------------------------------------------------------------------
# Scenario: a large fat tree
# --------------------------------------------------------------------------------------

FAT_TREE_K = {False: 24, True: 8}
"""The k-ary 3-tree of the fat-tree scenario: 13,824 nodes (1,728 switches of 48 ports), 512 with --quick."""


def _w_fat_tree(args) -> dict:
    from .. import routing, topology

    k = FAT_TREE_K[bool(args.quick)]
    big = topology.fat_tree(k=k, levels=3)
    small = topology.fat_tree(k=4, levels=3)
    rows, peak = _big_rows(big, [routing.dmodk(), routing.ecmp_spray()], _df_patterns(big), small, _df_patterns(small),
                           500 if args.quick else 5_000)
    return {"rows": rows, "topology": big.name, "nodes": big.n_nodes, "peak_mb": peak, "device": _device()}


# --------------------------------------------------------------------------------------
# Scenario: a large torus
# --------------------------------------------------------------------------------------


def _torus_patterns(topo):
    """(name, traffic, placement) of the large-torus scenario on ``topo`` (a 3-D torus): a one-hop 3-D stencil."""
    from .. import placement, traffic

    dims = topo.dims
    return [(f"3D stencil {'x'.join(map(str, dims))}", traffic.stencil([8 * d for d in dims], dims, 8.0),
             placement.linear(topo, topo.n_nodes))]


def _w_torus(args) -> dict:
    from .. import routing, topology

    big = topology.torus(TORUS_DIMS[bool(args.quick)])
    small = topology.torus((8, 8, 4))
    rows, peak = _big_rows(big, [routing.dor()], _torus_patterns(big), small, _torus_patterns(small),
                           20_000)
    return {"rows": rows, "topology": big.name, "nodes": big.n_nodes, "peak_mb": peak, "device": _device()}


# --------------------------------------------------------------------------------------
# Scenario 4: scaling
# --------------------------------------------------------------------------------------


def _w_scaling(args) -> dict:
    from .. import placement, routing, topology, traffic
    from ..traffic import dense as structured
    from ..evaluation import evaluate_batch

    rt = routing.dor()
    out: dict = {"nodes": [], "flows": [], "batch": []}
    sides = (4, 8, 12, 16, 24) if args.quick else (4, 8, 12, 16, 24, 32, 40)
    for k in sides:
        t = topology.torus((k, k, k))
        n = t.n_nodes
        st = traffic.stencil((k, k, k), (k, k, k), 8.0)
        rnd = placement.fully_random(t, n, seed=1)
        a2a = structured.all_to_all(n, 8.0)
        lin = placement.linear(t, n)
        for label, tr, pl in (("torus k^3 stencil (sparse)", st, rnd), ("torus k^3 all-to-all (dense)", a2a, lin)):
            evaluate_batch(t, rt, tr, pl)
            out["nodes"].append({"series": label, "nodes": n, "flows": tr.n_flows,
                                 "seconds": _timed(lambda: evaluate_batch(t, rt, tr, pl))})
    for h in (range(2, 7) if args.quick else range(2, 9)):
        d = topology.dragonfly(h, 2 * h, h)
        n = d.n_nodes
        a2a = structured.all_to_all(n, 8.0)
        lin = placement.linear(d, n)
        val = routing.valiant()
        evaluate_batch(d, val, a2a, lin)
        out["nodes"].append({"series": "DF(h,2h,h) all-to-all (dense), Valiant", "nodes": n, "flows": a2a.n_flows,
                             "seconds": _timed(lambda: evaluate_batch(d, val, a2a, lin))})
    mira = topology.bgq_partition((4, 4, 3, 2))
    n = mira.n_nodes
    lin = placement.linear(mira, n)
    rt_b = routing.dor("longest_first")
    rng = np.random.default_rng(3)
    top = 19 if args.quick else 22
    for e in range(10, top + 1, 3 if args.quick else 2):
        F = 1 << e
        src = rng.integers(0, n, F)
        far = rng.integers(0, n, F)  # random destinations: 13.5 hops on average
        c = np.stack(np.unravel_index(src, mira.dims), axis=1)
        c[:, 0] = (c[:, 0] + 1) % mira.dims[0]  # the +A neighbour: one hop
        near = np.ravel_multi_index(tuple(c.T), mira.dims)
        for label, dst in (("random flows on Mira", far), ("one-hop flows on Mira", near)):
            tr = traffic.from_flows(n, src, dst, 1.0)
            evaluate_batch(mira, rt_b, tr, lin)
            res = evaluate_batch(mira, rt_b, tr, lin)
            out["flows"].append({"series": label, "flows": F, "mean_hops": float(res.metrics["mean_hops"][0]),
                                 "seconds": _timed(lambda: evaluate_batch(mira, rt_b, tr, lin))})
    df = topology.dragonfly(4, 8, 4)
    beta, gamma = (8, 8, 4), (4, 4, 2)
    st = traffic.stencil(beta, beta, 8.0)
    batches = (1, 4, 16, 64, 256, 1024) if args.quick else (1, 4, 16, 64, 256, 1024, 4096, 16384)
    pls = [placement.dragonfly_cartesian(df, beta, gamma, seed=s) for s in range(max(batches))]
    for rt_df in (routing.minimal(), routing.valiant()):
        for B in batches:
            evaluate_batch(df, rt_df, st, pls[:B], chunk_size=CHUNK)
            sec = _timed(lambda: evaluate_batch(df, rt_df, st, pls[:B], chunk_size=CHUNK), repeat=3 if B < 4096 else 1)
            out["batch"].append({"series": f"DF(4,8,4) stencil {rt_df.label}", "batch": B, "seconds": sec,
                                 "per_point_s": sec / B})
    out["peak_mb"] = _peak_mb()
    out["device"] = _device()
    return out


def _w_jobs(args) -> dict:
    from .jobs import w_jobs

    return w_jobs(args, _device, _peak_mb, _timed)


def _w_mapping(args) -> dict:
    from .mapping import w_mapping

    return w_mapping(args, _device, _peak_mb, _timed)


def _w_lp(args) -> dict:
    from .lp import w_lp

    return w_lp(args, _device, _peak_mb, _timed)


def _w_time(args) -> dict:
    from .time import w_time

    return w_time(args, _device, _peak_mb, _timed)


def _w_paths(args) -> dict:
    from .paths import w_paths

    return w_paths(args, _device, _peak_mb, _timed)


WORKERS = {"small": _w_small, "mira": _w_mira, "dragonfly": _w_dragonfly, "torus": _w_torus,
           "fat_tree": _w_fat_tree, "jobs": _w_jobs,
           "paths": _w_paths, "scaling": _w_scaling, "lp": _w_lp, "mapping": _w_mapping, "time": _w_time}


# --------------------------------------------------------------------------------------
# Parent: launch workers, assemble the table
# --------------------------------------------------------------------------------------


def _launch(name: str, quick: bool, cpus: list[int] | None, extra: list[str] = ()) -> tuple[subprocess.Popen, Path]:
    fd, out = tempfile.mkstemp(prefix=f"bench-{name}-", suffix=".json")
    os.close(fd)
    cmd = [sys.executable, "-m", "evaluator.bench", "--worker", name, "--out", out, *extra]
    if quick:
        cmd.append("--quick")
    pin = (lambda: os.sched_setaffinity(0, set(cpus))) if cpus else None
    # the workers time compilation: no persistent compilation cache of ours (`import evaluator` turns it on;
    # a cache the user gave JAX through its own variables is left as it is, as before)
    env = dict(os.environ, EVALUATOR_COMPILATION_CACHE="0")
    return subprocess.Popen(cmd, preexec_fn=pin, env=env), Path(out)


def _collect(proc: subprocess.Popen, out: Path, name: str) -> dict:
    rc = proc.wait()
    if rc != 0:
        raise RuntimeError(f"bench worker {name!r} failed with exit status {rc}")
    data = json.loads(out.read_text())
    out.unlink()
    return data


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
        procs = [_launch("small", quick, [c], ["--part", str(i), "--parts", "2", "--barrier", barrier, "--scipy"])
                 for i, c in enumerate(cpus[:2])]
        for stage in ("", "scipy"):  # the evaluator's timed loop, then the SciPy baseline: each started together
            while not all(Path(barrier, f"ready{stage}-{i}").exists() for i in range(2)):
                if any(p.poll() not in (None, 0) for p, _ in procs):
                    raise RuntimeError("bench worker 'small' failed")
                time.sleep(0.01)
            Path(barrier, f"go{stage}").touch()
        parts = [_collect(p, o, "small") for p, o in procs]
        for f in Path(barrier).iterdir():
            f.unlink()
        os.rmdir(barrier)
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


def _scipy_cells(r: dict) -> tuple[float, str, str]:
    """(ratio against SciPy, its check, its note) of a big-scenario row."""
    if "scipy_s" in r:
        when = "per point" if r["scipy_per_point_build"] else "once per routing"
        method = r.get("scipy_method", "per point")
        ways = r.get("scipy_by_method_s", {})
        how = (f"{method} (the faster: " + ", ".join(f"{m} {t:.3g} s" for m, t in ways.items())
               + "; with its completion time)") if len(ways) > 1 else method
        for m, why in r.get("scipy_methods_na", {}).items():  # a way left out: it does not fit memory
            how += f" ({m}: does not fit, {why.split(': ', 1)[-1]})"
        note = (f"SciPy {how}: R built in {r['scipy_build_s']:.3g} s ({when}), applied in {r['scipy_apply_s']:.3g} s, "
                f"{r['scipy_nnz']:,} nnz, {r['scipy_mb']:.0f} MB")
        return r["scipy_s"] / r["eval_s"], f"SciPy {r['scipy_rel_dev']:.1e}", note
    if "scipy_na" in r:
        return float("nan"), "SciPy -", f"SciPy: {r['scipy_reason']}"
    return float("nan"), "", ""


def _big_table_rows(data: dict, label: str) -> list[dict]:
    rows = []
    for r in data["rows"]:
        ratio_scipy, check_scipy, note_scipy = _scipy_cells(r)
        rows.append({
            "scenario": f"{label}: {r['pattern']}, {r['routing']}", "points": 1, "seconds": r["eval_s"],
            "points_per_s": 1.0 / r["eval_s"], "ratio": r["baseline_s"] / r["eval_s"],
            "ratio_scipy": ratio_scipy, "scipy_na": r.get("scipy_na", ""),
            "check": f"walk {r['check_rel_dev']:.1e} on {r['check_topology']}; {check_scipy}",
            "peak_mb": data["peak_mb"], "device": _device_label(data["device"]),
            "note": (f"{r['flows']:.3g} flows; first call (compile) {r['first_call_s']:.2f} s; per-flow walk "
                     f"{r['baseline_s']:.3g} s extrapolated from {r['baseline_flows_sampled']} flows; {note_scipy}")})
    return rows


# --------------------------------------------------------------------------------------
# End to end: the sweep and optimize commands, as a user runs them
# --------------------------------------------------------------------------------------

_DRIVER = ("import atexit, sys\n"
           "from evaluator import cli\n"
           "def peak():\n"
           "    kib = [int(line.split()[1]) for line in open('/proc/self/status') if line.startswith('VmHWM:')]\n"
           "    print('bench-driver-peak-kib', kib[0] if kib else -1, flush=True)\n"
           "atexit.register(peak)\n"
           "cli.run()\n")
"""The ``evaluator`` console command (:func:`evaluator.cli.run`, quick exit included) in a process that reports
its own peak RSS at exit: ``VmHWM``, the high-water mark of this program's memory (``ru_maxrss`` would count the
benchmark's own memory: it survives the ``exec`` of a ``vfork``-ed child)."""


def _run_cli(args: list[str], env: dict, out_dir: Path) -> dict:
    """Run ``evaluator ARGS`` in a fresh Python process; wall time (start-up included), driver peak, dataset attrs."""
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", _DRIVER, *args], env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        tail = " | ".join((proc.stderr or proc.stdout).strip().splitlines()[-5:])
        raise RuntimeError(f"`evaluator {' '.join(args)}` failed with exit status {proc.returncode}: {tail}")
    return {"wall_s": wall, **parse_cli_output(proc.stdout, out_dir), "command": "evaluator " + " ".join(args)}


def parse_cli_output(stdout: str, out_dir: Path) -> dict:
    """Driver peak RSS (MiB) from :data:`_DRIVER`'s last line, and the dataset's ``n_points``, ``n_feasible``
    and ``timing_json`` attributes (the dataset named on a ``dataset: PATH`` line, else the one under
    ``out_dir``)."""
    import re

    m = re.search(r"^bench-driver-peak-kib (\d+)\s*$", stdout, re.M)
    out = {"driver_peak_mb": int(m.group(1)) / 1024 if m else float("nan")}
    m = re.search(r"^dataset: (.+?)\s*$", stdout, re.M)
    path = Path(m.group(1)) if m else None
    if path is None or not path.exists():
        found = sorted(p for pat in ("*.nc", "*.zarr") for p in Path(out_dir).rglob(pat))
        path = found[-1] if found else None
    attrs = _dataset_attrs(path) if path is not None else {}
    out["n_points"] = int(attrs.get("n_points", -1))
    out["n_feasible"] = int(attrs.get("n_feasible", -1))
    try:
        out["timing"] = json.loads(attrs.get("timing_json", "{}"))
    except (TypeError, ValueError):
        out["timing"] = {}
    return out


def _dataset_attrs(path: Path) -> dict:
    """Attributes of a sweep dataset (netCDF or zarr), without loading its variables."""
    import xarray as xr

    path = Path(path)
    ds = xr.open_zarr(path) if path.is_dir() else xr.open_dataset(path, engine="h5netcdf")
    with ds:
        return dict(ds.attrs)


def _cpu_label() -> str:
    return f"cpu x{len(os.sched_getaffinity(0))}"


def _run_sweep(quick: bool, log, small: dict | None) -> tuple[list[dict], dict]:
    """The README's 10^6-point study (3,200 points with ``quick``) as ``evaluator sweep`` in a subprocess."""
    seeds = SWEEP_SEEDS[bool(quick)]
    with tempfile.TemporaryDirectory(prefix="bench-sweep-") as tmp:
        out_dir = Path(tmp, "results")
        args = ["sweep", "sweeps=dragonfly_nne_placement", f"+sweep.axes.placement.seed={{range:[0,{seeds}]}}",
                f"sweep.output_dir={out_dir}", "--no-progress"]
        log(f"end to end: evaluator {' '.join(args[:3])}")
        r = _run_cli(args, dict(os.environ, XDG_CACHE_HOME=str(Path(tmp, "cache"))), out_dir)
    n, feas, wall = r["n_points"], r["n_feasible"], r["wall_s"]
    rate, feas_rate = n / wall, feas / wall
    ratio = ratio_scipy = float("nan")
    against = ""
    cores = len(os.sched_getaffinity(0))
    if small:  # the same (beta, gamma, routing) mix as scenario 1: its baselines' rates apply
        ratio = feas_rate / small["per_flow_rate"]
        measured = small.get("scipy_rate_2_cores") if cores == 2 else None
        apply_rate = measured or cores * small["scipy_rate"]  # SciPy's apply alone, on these cores
        # SciPy as a sweep: each feasible point's placement built by the NumPy generator (scenario 1's build
        # time per point), then applied; feasibility decided once per configuration, start-up left out
        e2e_rate = cores / (small["place_s_per_point"] + cores / apply_rate)
        ratio_scipy = feas_rate / e2e_rate
        against = (f"vs SciPy: against SciPy as a sweep, NumPy placement + apply per feasible point "
                   f"({e2e_rate:,.0f} points/s on {cores} cores, start-up left out); against its apply alone "
                   f"({apply_rate:,.0f} points/s{', measured on 2 cores' if measured else ''}): "
                   f"{feas_rate / apply_rate:.2f}x; ")
    t = r["timing"]
    timing = ", ".join(f"{k} {v:.3g}" for k, v in t.items())
    row = {"scenario": (f"end to end: evaluator sweep, {seeds:,} seeds ({feas:,} feasible: {feas_rate:,.0f}/s)"),
           "points": n, "seconds": wall, "points_per_s": rate, "ratio": ratio, "ratio_scipy": ratio_scipy,
           "check": "", "peak_mb": r["driver_peak_mb"], "device": f"{_cpu_label()} (Ray)",
           "note": (f"grid points/s {rate:,.0f}, feasible points/s {feas_rate:,.0f} (ratios: feasible points "
                    f"against the baselines' scenario-1 rates); {against}wall includes Python and "
                    f"Ray start-up; peak MB is the driver's; dataset timing: {timing}; command: {r['command']}")}
    return [row], r


def _run_optimize(quick: bool, log) -> tuple[list[dict], dict]:
    """``evaluator optimize`` (the README's command) twice in subprocesses: cold compile cache, then again."""
    rows, raw = [], {}
    with tempfile.TemporaryDirectory(prefix="bench-optimize-") as tmp:
        env = dict(os.environ, XDG_CACHE_HOME=str(Path(tmp, "cache")))  # empty at first: a cold start
        for label in ("cold", "run again"):
            out_dir = Path(tmp, label.replace(" ", "-"))
            args = ["optimize", *OPTIMIZE_ARGS, "--no-progress", f"sweep.output_dir={out_dir}"]
            log(f"end to end: evaluator {' '.join(args[:7])} ({label})")
            r = raw[label] = _run_cli(args, env, out_dir)
            n, wall = r["n_points"], r["wall_s"]
            timing = ", ".join(f"{k} {v:.3g}" for k, v in r["timing"].items())
            rows.append({
                "scenario": f"end to end: evaluator optimize --tasks 256 ({label})", "points": n, "seconds": wall,
                "points_per_s": n / wall, "ratio": float("nan"), "ratio_scipy": float("nan"),
                "check": f"{r['n_feasible']:,} feasible", "peak_mb": r["driver_peak_mb"], "device": _cpu_label(),
                "note": (f"configurations/s {n / wall:,.0f}; wall includes Python start-up; "
                         f"{'fresh' if label == 'cold' else 'the same'} XDG_CACHE_HOME; dataset timing: {timing}; "
                         f"command: {r['command']}")})
    return rows, raw


def _fit(xs, ys) -> float:
    """Slope of log(y) against log(x) over the upper half of the points."""
    xs, ys = np.asarray(xs, float), np.asarray(ys, float)
    h = len(xs) // 2
    return float(np.polyfit(np.log(xs[h:]), np.log(ys[h:]), 1)[0]) if len(xs) >= 3 else float("nan")


def _scaling_rows(data: dict) -> list[dict]:
    rows = []
    dev = _device_label(data["device"])
    for series in sorted({r["series"] for r in data["nodes"]}):
        pts = [r for r in data["nodes"] if r["series"] == series]
        slope = _fit([p["nodes"] for p in pts], [p["seconds"] for p in pts])
        rows.append({"scenario": f"scaling, {series}: time ~ N^{slope:.2f}",
                     "points": len(pts), "seconds": sum(p["seconds"] for p in pts), "points_per_s": float("nan"),
                     "ratio": float("nan"), "check": "", "peak_mb": data["peak_mb"], "device": dev,
                     "note": "; ".join(f"N={p['nodes']}: {p['seconds'] * 1e3:.1f} ms" for p in pts)})
    for series in sorted({r["series"] for r in data["flows"]}):
        pts = [r for r in data["flows"] if r["series"] == series]
        hops = np.mean([p["mean_hops"] for p in pts])
        rows.append({"scenario": f"scaling, {series} ({hops:.1f} hops): time ~ F^"
                                 f"{_fit([p['flows'] for p in pts], [p['seconds'] for p in pts]):.2f}",
                     "points": len(pts), "seconds": sum(p["seconds"] for p in pts), "points_per_s": float("nan"),
                     "ratio": float("nan"), "check": "", "peak_mb": data["peak_mb"], "device": dev,
                     "note": "; ".join(f"F=2^{int(math.log2(p['flows']))}: {p['seconds'] * 1e3:.1f} ms" for p in pts)})
    for series in sorted({r["series"] for r in data["batch"]}):
        pts = [r for r in data["batch"] if r["series"] == series]
        best = min(pts, key=lambda p: p["per_point_s"])
        rows.append({"scenario": f"scaling, batch size, {series}", "points": sum(p["batch"] for p in pts),
                     "seconds": sum(p["seconds"] for p in pts), "points_per_s": 1.0 / best["per_point_s"],
                     "ratio": float("nan"), "check": "", "peak_mb": data["peak_mb"], "device": dev,
                     "note": "; ".join(f"B={p['batch']}: {p['per_point_s'] * 1e6:.0f} us/pt" for p in pts)})
    return rows


def _plot(data: dict, path: Path) -> None:
    from matplotlib.figure import Figure

    from ..io import save_figure

    fig = Figure(figsize=(15, 4.2))
    axes = fig.subplots(1, 3)
    ax = axes[0]
    for series in sorted({r["series"] for r in data["nodes"]}):
        pts = [r for r in data["nodes"] if r["series"] == series]
        ax.loglog([p["nodes"] for p in pts], [p["seconds"] for p in pts], "o-", label=series)
    xs = np.array(sorted({r["nodes"] for r in data["nodes"]}), float)
    ax.loglog(xs, xs / xs[-1] * max(r["seconds"] for r in data["nodes"]), "k:", label="~ N")
    ax.set(xlabel="nodes N", ylabel="seconds per evaluation", title="time vs machine size (one evaluation)")
    ax.legend()
    ax = axes[1]
    for series in sorted({r["series"] for r in data["flows"]}):
        pts = [r for r in data["flows"] if r["series"] == series]
        hops = np.mean([p["mean_hops"] for p in pts])
        ax.loglog([p["flows"] for p in pts], [p["seconds"] for p in pts], "o-", label=f"{series} ({hops:.1f} hops)")
    F = np.array(sorted({r["flows"] for r in data["flows"]}), float)
    top = max(r["seconds"] for r in data["flows"])
    ax.loglog(F, F / F[-1] * top, "k:", label="~ F")
    ax.set(xlabel="flows F (Mira, 49,152 nodes, 540,672 links)", ylabel="seconds per evaluation",
           title="time vs flows (sparse, DOR)")
    ax.legend()
    ax = axes[2]
    for series in sorted({r["series"] for r in data["batch"]}):
        p = [r for r in data["batch"] if r["series"] == series]
        ax.loglog([q["batch"] for q in p], [q["per_point_s"] * 1e6 for q in p], "o-", label=series)
    ax.set(xlabel="points per evaluate_batch call", ylabel="microseconds per point", title="time vs batch size")
    ax.legend()
    fig.suptitle(f"evaluator bench scaling ({_device_label(data['device'])})")
    fig.tight_layout()
    save_figure(fig, path, dpi=110)


def _fmt(v, spec: str) -> str:
    if isinstance(v, float) and not math.isfinite(v):
        return "-"
    return format(v, spec)


def _ratio_cell(v, na: str = "") -> str:
    if isinstance(v, (int, float)) and math.isfinite(v):
        return f"{v:,.4g}x" if v >= 0.1 else f"{v:.2g}x"
    return na or "-"


def format_table(rows: list[dict]) -> str:
    """The bench rows as a fixed-width text table.

    Columns: scenario, points, time s, points/s, ``vs per-flow`` and ``vs SciPy``
    (points/s against each baseline's on the same points; ``R too large`` where
    the SciPy matrix was refused; ``-`` where there is no comparison), check,
    peak MB, device.
    """
    head = ["scenario", "points", "time s", "points/s", "vs per-flow", "vs SciPy", "check", "peak MB", "device"]
    body = [[r["scenario"], _fmt(r["points"], ","), _fmt(r["seconds"], ".3g"), _fmt(r["points_per_s"], ",.4g"),
             _ratio_cell(r["ratio"]), _ratio_cell(r.get("ratio_scipy", float("nan")), r.get("scipy_na", "")),
             r["check"], _fmt(r["peak_mb"], ",.0f"), r["device"]] for r in rows]
    widths = [max(len(str(x)) for x in col) for col in zip(head, *body)]
    line = lambda cells: "  ".join(str(c).ljust(w) if i in (0, 6, 8) else str(c).rjust(w)  # noqa: E731
                                   for i, (c, w) in enumerate(zip(cells, widths)))
    return "\n".join([line(head), line(["-" * w for w in widths])] + [line(b) for b in body])


def _worker_scenario(name: str, rows_of: Callable[[dict], list[dict]]) -> Callable[..., list[dict]]:
    """A scenario run in worker processes (:func:`_launch`): its raw results under ``raw[name]``, then its rows."""
    def run_it(quick: bool, log, raw: dict, out: Path) -> list[dict]:
        raw[name] = _collect(*_launch(name, quick, None), name)
        return rows_of(raw[name])
    return run_it


def _big(name: str) -> Callable[..., list[dict]]:
    """A large network's scenario (evaluator against the per-flow walk and SciPy, one network)."""
    def run_it(quick: bool, log, raw: dict, out: Path) -> list[dict]:
        raw[name] = _collect(*_launch(name, quick, None), name)
        return _big_table_rows(raw[name], _BIG_LABELS[name](bool(quick)))
    return run_it


def _imported(module: str, rows: str) -> Callable[[dict], list[dict]]:
    """``rows`` of ``evaluator.bench.<module>`` (imported when the scenario runs), with the device label."""
    def rows_of(r: dict) -> list[dict]:
        import importlib

        return getattr(importlib.import_module(f"{__package__}.{module}"), rows)(r, _device_label)
    return rows_of


def _small(quick: bool, log, raw: dict, out: Path) -> list[dict]:
    return _run_small(quick, log, raw)


def _sweep(quick: bool, log, raw: dict, out: Path) -> list[dict]:
    rows, raw["sweep"] = _run_sweep(quick, log, raw.get("small"))
    return rows


def _optimize(quick: bool, log, raw: dict, out: Path) -> list[dict]:
    rows, raw["optimize"] = _run_optimize(quick, log)
    return rows


def _startup(quick: bool, log, raw: dict, out: Path) -> list[dict]:
    from .startup import run_startup, startup_rows

    raw["startup"] = run_startup(quick, log)
    return startup_rows(raw["startup"], _device_label)


def _scaling(quick: bool, log, raw: dict, out: Path) -> list[dict]:
    raw["scaling"] = _collect(*_launch("scaling", quick, None), "scaling")
    _plot(raw["scaling"], out / f"scaling{'-quick' if quick else ''}.png")
    return _scaling_rows(raw["scaling"])


_BIG_LABELS: dict[str, Callable[[bool], str]] = {
    "mira": lambda q: "Mira 49,152 nodes, DOR BG/Q order",
    "dragonfly": lambda q: "DF(8,16,8) 16,512 nodes",
    "fat_tree": lambda q: f"fat tree {FAT_TREE_K[q]}-ary 3-tree {FAT_TREE_K[q] ** 3:,} nodes",
    "torus": lambda q: f"torus {'x'.join(map(str, TORUS_DIMS[q]))}, DOR",
}


@dataclass(frozen=True)
class Scenario:
    """One scenario of the bench: ``name`` (what ``--only`` takes), ``label(quick)`` (the "scenario:" line; "" for
    none) and ``run(quick, log, raw, out)`` -> its table rows (its raw results put in ``raw``)."""

    name: str
    label: Callable[[bool], str]
    run: Callable[..., list[dict]]


SCENARIO_TABLE: tuple[Scenario, ...] = (
    Scenario("small", lambda q: "", _small),
    *(Scenario(n, _BIG_LABELS[n], _big(n)) for n in ("mira", "dragonfly", "fat_tree", "torus")),
    Scenario("jobs", lambda q: "several jobs (Blue Waters) and phases (DF(4,8,4))",
             _worker_scenario("jobs", _imported("jobs", "jobs_rows"))),
    Scenario("time", lambda q: "time beyond the bound (collectives against SMPI, max-min sharing, trace phases)",
             _worker_scenario("time", _imported("time", "time_rows"))),
    Scenario("paths", lambda q: "path-set construction (BG/Q partitions, Yen's k shortest paths, OPTIQ heuristic)",
             _worker_scenario("paths", _imported("paths", "paths_rows"))),
    Scenario("lp", lambda q: "LP solvers (batched PDHG vs HiGHS, BG/Q 512 and 8,192 nodes)",
             _worker_scenario("lp", _imported("lp", "lp_rows"))),
    Scenario("mapping", lambda q: "mapping search (candidate moves on DF(4,8,4); quality against the budget, "
             "irregular traffic)", _worker_scenario("mapping", _imported("mapping", "mapping_rows"))),
    Scenario("sweep", lambda q: "", _sweep),
    Scenario("optimize", lambda q: "", _optimize),
    Scenario("startup", lambda q: "", _startup),
    Scenario("scaling", lambda q: "scaling", _scaling),
)
"""The scenarios in the order they run (a new scenario: its function and one row here, its name in
:data:`SCENARIOS`)."""


def run(quick: bool = False, out_dir: str | os.PathLike = "results/bench", only: list[str] | None = None,
        log=print, settle: float = 0.0) -> dict:
    """Run the benchmark; print the table; write JSON (and the scaling plot) under ``out_dir``.

    ``settle``: seconds to wait before each scenario after the first. A
    burstable VM throttles after sustained load on all its cores, and a
    kernel on two threads suffers more than a single-threaded baseline
    (this 2-core VM, after 60 s of load on both cores: Mira's 5D stencil 16-17
    ms instead of 9 for about a minute; its pairing 10 ms instead of 3.5).
    """
    only = list(only or SCENARIOS)
    bad = [s for s in only if s not in SCENARIOS]
    if bad:
        from ..errors import ConfigError

        raise ConfigError("bench.only", bad, f"scenarios among {list(SCENARIOS)}")
    from ..errors import positive_float

    settle = positive_float("--settle", settle, allow_zero=True)  # seconds
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    t_start = time.perf_counter()
    rows: list[dict] = []
    raw: dict = {}
    started: list[str] = []

    def begin(name: str) -> None:
        if started and settle > 0:
            log(f"settling {settle:g} s before {name} (--settle)")
            time.sleep(settle)
        started.append(name)

    for sc in SCENARIO_TABLE:
        if sc.name in only:
            begin(sc.name)
            label = sc.label(bool(quick))
            if label:
                log(f"scenario: {label}")
            rows += sc.run(quick, log, raw, out)
    suffix = "-quick" if quick else ""
    import jax

    summary = {
        "quick": quick, "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "host": platform.node(),
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs",
        "jax": jax.__version__, "default_backend": jax.default_backend(),
        "gpu": "no GPU present; the kernels run on JAX's default device, so a GPU is used automatically when present"
        if jax.default_backend() == "cpu" else f"ran on {jax.default_backend()}",
        "wall_s": time.perf_counter() - t_start, "settle_s": settle, "rows": rows, "raw": raw,
    }
    path = out / f"bench{suffix}.json"
    from ..io import write_json

    write_json(path, summary, indent=1, default=float)
    print(format_table(rows))
    print(f"\n{summary['gpu']}.")
    print(f"wrote {path}" + (f" and {out / f'scaling{suffix}.png'}" if "scaling" in only else "")
          + f" ({summary['wall_s']:.0f} s)")
    return summary


def _worker_main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="python -m evaluator.bench")  # a worker process of run()
    p.add_argument("--worker", choices=list(WORKERS), required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--part", type=int, default=0)
    p.add_argument("--parts", type=int, default=1)
    p.add_argument("--barrier", default=None)
    p.add_argument("--baseline", type=int, default=0, help="per-flow baseline points per class (0: none)")
    p.add_argument("--scipy", action="store_true",
                   help="with --barrier: time the SciPy baseline too, started together with the other workers")
    args = p.parse_args(argv)
    data = WORKERS[args.worker](args)
    from ..io import write_json

    write_json(args.out, data, default=float)
    return 0


def worker_main(argv: list[str]) -> int:
    """Entry point of a bench worker process (``python -m evaluator.bench --worker NAME ...``)."""
    return _worker_main(argv)
