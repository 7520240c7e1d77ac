"""The bench's large-network scenarios (:mod:`evaluator.bench.run`): Mira, a large Dragonfly, a large fat tree
and a large torus, each one evaluation against the per-flow walk and SciPy; the worker and the table rows."""

from __future__ import annotations

import math
import time

import numpy as np

from ._common import _baseline_seconds, _device, _device_label, _interleaved, _peak_mb, _rel_dev, _timed

TORUS_DIMS = {False: (256, 256, 4), True: (128, 128, 4)}  # the large-torus scenario (full, quick)
BIG_REPEAT, BIG_MIN_S = 7, 1.0  # big scenarios: the evaluator's warm call, SciPy's build and apply: median of at least
# this many calls (rounds, when interleaved), more until they took this many seconds (twice that, interleaved): calls
# of a few ms vary 2x on a VM


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
    matrix has the per-point apply only (:meth:`link_loads`); its R, like a Dragonfly's, is built once per
    topology and routing, timed apart (the build reported), not in the per-point time. A matrix estimated too
    large is reported, never built.
    The evaluator (``evaluate()``, its warm call) is timed again in the same rounds (:func:`_interleaved`, the
    evaluator and each way in turn): ``row["eval_s"]`` becomes that time, the ratio's numerator, and the
    earlier time alone is kept as ``eval_alone_s``.
    """
    from ..errors import ResourceError, fmt_size
    from .baseline import METHODS, routing_matrix, scipy_serves, strongest

    if matrix is None and not scipy_serves(topo, rt):
        row.update(scipy_na="no SciPy R", scipy_reason=f"no SciPy routing matrix for {rt.label} on a {topo.kind} (the "
                   "per-flow walk is this row's reference)")
        return None
    base, build = matrix if matrix is not None else (routing_matrix(topo, rt), 0.0)
    try:
        need = base.check_size(tr, pl)
    except ResourceError as exc:
        entries = base.estimate(tr, pl)
        row.update(scipy_na=f"R too big ({fmt_size(base.bytes_per_entry * entries)})", scipy_entries=entries,
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
    else:  # a fat tree: R built once per topology and routing (timed once, apart), then applied per point
        if base.R is None:  # (timed in the rounds before, the calls after the first built nothing: ~1 us read)
            t0 = time.perf_counter()
            base.build(tr, pl, check=False)
            build = time.perf_counter() - t0
        ours, apply = _interleaved([evaluate, lambda: base.link_loads(tr, pl)], BIG_REPEAT, 2 * BIG_MIN_S)
        point, method, by_method = apply, "per point", {"per point": apply}
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
# Parent
# --------------------------------------------------------------------------------------


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
