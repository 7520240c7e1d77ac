"""Bench scenario ``lp``: the batched JAX LP solver (MPAX PDHG) against HiGHS on identical Model 1 instances.

Instances (Bui et al.'s constant-ratio many-to-many pattern): on a BG/Q
partition of ``p`` nodes, the first ``m = p/16`` nodes each send 8 MB to 8
nodes drawn from the last ``p/2`` (a new draw per instance). Every router
pair gets the paths the ``kshortest`` routing gives it (Yen's ``K = 4``
shortest loopless paths, :func:`evaluator.routing._paths.path_table`, the
table users' ``kshortest`` and ``optiq_lp`` evaluations are built from), so
the bench solves the instances users solve. Model 1
(:func:`evaluator.lp.path_lp`) chooses the split; injection and ejection
are fixed loads. The one-path baseline (the Z gain) is DOR in BG/Q's
longest-first dimension order.

Rows: 512 nodes (1 midplane), ``N`` instances solved in one batched PDHG
call (compilation reported apart), cold and warm-started from the previous
solution of perturbed demands (+-10%), against HiGHS one instance after the
other on the same instances: instances/s and the worst relative difference
of Z; then one 8,192-node instance (16 midplanes), both solvers.
"""

from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp

__all__ = ["w_lp", "lp_rows", "dimension_order_paths", "kshortest_paths", "many_to_many_instance"]

K_PATHS = 4
INSTANCES = {False: 128, True: 100}
PDHG_EPS = 1e-4


def dimension_order_paths(topo, src, dst, orders):
    """Incidence ``[link, path]`` and pair index of the dimension-order paths of router pairs ``(src, dst)``.

    One path per order in ``orders`` (tuples of dimensions), minimal in
    every dimension (ties at half a ring: the + direction); identical paths
    of one pair are kept once.
    """
    dims = np.asarray(topo.dims)
    coords = np.asarray(topo.router_coords)
    nl = np.asarray(topo.neighbor_link)
    rows, cols, pair = [], [], []
    for q, (s, d) in enumerate(zip(src.tolist(), dst.tolist())):
        delta = (coords[d] - coords[s]) % dims
        steps = np.where(delta <= dims // 2, delta, delta - dims)  # signed minimal steps
        seen = set()
        for order in orders:
            links, cur = [], coords[s].copy()
            for k in order:
                direc = 0 if steps[k] > 0 else 1
                for _ in range(abs(int(steps[k]))):
                    r = int(np.ravel_multi_index(tuple(cur), tuple(dims)))
                    links.append(int(nl[r, k, direc]))
                    cur[k] = (cur[k] + (1 if direc == 0 else -1)) % dims[k]
            key = tuple(links)
            if key in seen:
                continue
            seen.add(key)
            k_path = len(pair)
            pair.append(q)
            rows += links
            cols += [k_path] * len(links)
    inc = sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(topo.n_links, len(pair)))
    return inc, np.asarray(pair, np.int64)


def kshortest_paths(topo, src, dst, k=K_PATHS):
    """Incidence ``[link, path]`` (every link of ``topo``; paths use router links only), pair index and pair keys
    (``src * n_routers + dst``, sorted: the pairs' order) of the ``kshortest`` routing's path table for the
    router pairs ``(src, dst)``: Yen's ``k`` shortest loopless paths, parallel links as separate paths."""
    from ..routing import PairSet, kshortest, path_incidence, path_table

    pairs = PairSet.of(src, dst, topo.n_routers)
    table = path_table(topo, kshortest(k).bind(pairs), pairs)
    inc, pair = path_incidence(table)
    inc = sp.csr_matrix((inc.data, inc.indices, np.r_[inc.indptr, np.full(topo.n_links - inc.shape[0],
                                                                          inc.indptr[-1])]),
                        shape=(topo.n_links, inc.shape[1]))
    return inc, np.asarray(pair, np.int64), pairs.keys


def many_to_many_instance(topo, rng, dor_order=None, nbytes=8e6, per_source=8):
    """Model 1 data ``(incidence, pair, demand, capacity, fixed_load)`` of one constant-ratio instance.

    Paths: the ``kshortest`` routing's (:func:`kshortest_paths`, ``K_PATHS`` per pair), or, with
    ``dor_order`` (a tuple of dimensions), the one dimension-order path per pair (the DOR baseline).
    """
    p = topo.n_nodes
    m = p // 16
    dests = np.stack([rng.choice(np.arange(p // 2, p), per_source, replace=False) for _ in range(m)])
    src = np.repeat(np.arange(m), per_source)
    dst = dests.reshape(-1)
    fixed = np.zeros(topo.n_links)
    np.add.at(fixed, topo.injection_link(src), nbytes)
    np.add.at(fixed, topo.ejection_link(dst), nbytes)
    rs, rd = topo.node_router[src], topo.node_router[dst]
    cap = np.asarray(topo.capacity, dtype=np.float64)
    if dor_order is not None:
        inc, pair = dimension_order_paths(topo, rs, rd, [dor_order])
        return inc, pair, np.full(src.size, nbytes), cap, fixed
    inc, pair, keys = kshortest_paths(topo, rs, rd)
    demand = np.zeros(keys.size)
    np.add.at(demand, np.searchsorted(keys, rs * topo.n_routers + rd), nbytes)
    return inc, pair, demand, cap, fixed


def _dor_order(topo):
    """BG/Q's dimension order: longest dimension first."""
    return tuple(int(k) for k in np.argsort(-np.asarray(topo.dims), kind="stable"))


def w_lp(args, device, peak_mb, timed) -> dict:
    """The worker (``device``, ``peak_mb``, ``timed`` are the bench's probes, passed in by :mod:`.run`)."""
    from .. import lp
    from ..topology import bgq_partition

    quick = bool(args.quick)
    rng = np.random.default_rng(0)
    out = {}
    topo = bgq_partition([1, 1, 1, 1])
    N = INSTANCES[quick]
    t0 = time.perf_counter()
    data = [many_to_many_instance(topo, rng) for _ in range(N)]
    lps = [lp.path_lp(*x) for x in data]
    build_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    exact = [lp.solve_highs(x) for x in lps]
    highs_s = time.perf_counter() - t0
    z_h = np.array([lp.z_from_objective(x, s.objective) for x, s in zip(lps, exact)])
    t0 = time.perf_counter()
    first = lp.solve_pdhg(lps, eps=PDHG_EPS)
    first_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    cold = lp.solve_pdhg(lps, eps=PDHG_EPS)
    cold_s = time.perf_counter() - t0
    z_p = np.array([lp.z_from_objective(x, o) for x, o in zip(lps, cold.objective)])
    # warm start: the same path sets, demands perturbed by +-10%
    pert = [(inc, pair, dem * rng.uniform(0.9, 1.1, dem.size), cap, fix) for inc, pair, dem, cap, fix in data]
    lps2 = [lp.path_lp(*x) for x in pert]
    z_h2 = np.array([lp.z_from_objective(x, lp.solve_highs(x).objective) for x in lps2])
    t0 = time.perf_counter()
    warm = lp.solve_pdhg(lps2, warm_start=cold, eps=PDHG_EPS)
    warm_s = time.perf_counter() - t0
    cold2 = lp.solve_pdhg(lps2, eps=PDHG_EPS)
    z_w = np.array([lp.z_from_objective(x, o) for x, o in zip(lps2, warm.objective)])
    size = {"vars": int(np.mean([x.n_vars for x in lps])), "rows": int(np.mean([x.A_ub.shape[0] + x.A_eq.shape[0]
                                                                                 for x in lps])),
            "nnz": int(np.mean([x.nnz for x in lps]))}
    out["m512"] = {"instances": N, "nodes": topo.n_nodes, "build_s": build_s, "highs_s": highs_s,
                   "pdhg_first_s": first_s, "pdhg_s": cold_s, "pdhg_warm_s": warm_s,
                   "worst_rel_diff": float(np.max(np.abs(z_p / z_h - 1))),
                   "worst_rel_diff_warm": float(np.max(np.abs(z_w / z_h2 - 1))),
                   "worst_gap": float(np.max(first.gap)), "iterations_cold": int(cold2.iterations.sum()),
                   "not_converged": int(sum((x.status != lp.PDHG_OPTIMAL).sum() for x in (cold, warm))),
                   "highs_failed": int(sum(s.status != "optimal" for s in exact)),
                   "iterations_warm": int(warm.iterations.sum()), "size": size}
    # one path (DOR, longest first) against K: what the split buys
    one = [lp.path_lp(*many_to_many_instance(topo, np.random.default_rng(i), _dor_order(topo))) for i in range(8)]
    kk = [lp.path_lp(*many_to_many_instance(topo, np.random.default_rng(i))) for i in range(8)]
    gain = [lp.z_from_objective(b, lp.solve_highs(b).objective) / lp.z_from_objective(a, lp.solve_highs(a).objective)
            for a, b in zip(one, kk)]
    out["m512"]["z_gain_over_dor_median"] = float(np.median(gain))
    # one 8,192-node instance
    big = bgq_partition([2, 2, 2, 2])
    t0 = time.perf_counter()
    x = lp.path_lp(*many_to_many_instance(big, np.random.default_rng(1)))
    build_big = time.perf_counter() - t0
    t0 = time.perf_counter()
    sh = lp.solve_highs(x)
    hb = time.perf_counter() - t0
    t0 = time.perf_counter()
    sp1 = lp.solve_pdhg([x], eps=PDHG_EPS)
    pb_first = time.perf_counter() - t0
    t0 = time.perf_counter()
    sp1 = lp.solve_pdhg([x], eps=PDHG_EPS)
    pb = time.perf_counter() - t0
    zb_h, zb_p = lp.z_from_objective(x, sh.objective), lp.z_from_objective(x, sp1.objective[0])
    out["m8192"] = {"nodes": big.n_nodes, "build_s": build_big, "highs_s": hb, "pdhg_first_s": pb_first,
                    "pdhg_s": pb, "rel_diff": abs(zb_p / zb_h - 1), "gap": float(sp1.gap[0]),
                    "iterations": int(sp1.iterations[0]), "converged": bool(sp1.status[0] == lp.PDHG_OPTIMAL),
                    "size": {"vars": x.n_vars, "rows": x.A_ub.shape[0] + x.A_eq.shape[0], "nnz": x.nnz}}
    out["peak_mb"] = peak_mb()
    out["device"] = device()
    return out


def _unsolved(a: dict) -> str:
    """The note's warning when an instance missed its optimum (PDHG: its tolerance; HiGHS: no optimum, Z NaN)."""
    n, h = a.get("not_converged", 0), a.get("highs_failed", 0)
    return ((f"; {n} PDHG solves (cold and warm) not converged" if n else "")
            + (f"; {h} HiGHS solves without an optimum" if h else ""))


def lp_rows(data: dict, device_label) -> list[dict]:
    dev = device_label(data["device"])
    a, b = data["m512"], data["m8192"]
    N = a["instances"]
    sz = a["size"]
    nan = float("nan")
    rows = [
        {"scenario": f"LP: Model 1, 512-node BG/Q, {N} many-to-many instances, batched PDHG (MPAX)",
         "points": N, "seconds": a["pdhg_s"], "points_per_s": N / a["pdhg_s"], "ratio": nan,
         "ratio_scipy": nan, "check": f"Z vs HiGHS {a['worst_rel_diff']:.1e}", "peak_mb": data["peak_mb"],
         "device": dev,
         "note": (f"{a['highs_s'] / a['pdhg_s']:.3g}x HiGHS's instances/s ({N / a['highs_s']:.3g}/s, one "
                  f"by one); compile+first {a['pdhg_first_s']:.1f} s; worst duality gap "
                  f"{a['worst_gap']:.1e}; LP ~{sz['vars']:,} vars, {sz['rows']:,} rows, {sz['nnz']:,} nnz; "
                  f"kshortest paths (Yen, k={K_PATHS}) per pair; K paths vs DOR: median Z gain "
                  f"{a['z_gain_over_dor_median']:.2f}x" + _unsolved(a))},
        {"scenario": f"LP: same, warm-started PDHG (demands +-10%)", "points": N, "seconds": a["pdhg_warm_s"],
         "points_per_s": N / a["pdhg_warm_s"], "ratio": nan, "ratio_scipy": nan,
         "check": f"Z vs HiGHS {a['worst_rel_diff_warm']:.1e}", "peak_mb": data["peak_mb"], "device": dev,
         "note": f"iterations {a['iterations_warm']:,} warm vs {a['iterations_cold']:,} cold"},
        {"scenario": f"LP: same {N} instances, HiGHS one by one", "points": N, "seconds": a["highs_s"],
         "points_per_s": N / a["highs_s"], "ratio": nan, "ratio_scipy": nan, "check": "reference",
         "peak_mb": data["peak_mb"], "device": "cpu x1 (HiGHS)", "note": f"instances built in {a['build_s']:.1f} s"},
        {"scenario": "LP: Model 1, 8,192-node BG/Q, one instance, PDHG", "points": 1, "seconds": b["pdhg_s"],
         "points_per_s": 1 / b["pdhg_s"], "ratio": nan, "ratio_scipy": nan,
         "check": f"Z vs HiGHS {b['rel_diff']:.1e}", "peak_mb": data["peak_mb"], "device": dev,
         "note": (f"HiGHS {b['highs_s']:.2f} s; PDHG compile+first {b['pdhg_first_s']:.1f} s, gap {b['gap']:.1e}, "
                  f"{b['iterations']:,} iterations; {b['size']['vars']:,} vars, {b['size']['rows']:,} rows, "
                  f"{b['size']['nnz']:,} nnz; built in {b['build_s']:.1f} s"
                  + ("" if b.get("converged", True) else "; PDHG not converged"))},
    ]
    return rows
