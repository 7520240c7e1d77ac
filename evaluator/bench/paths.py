"""Bench scenario ``paths``: path-set construction (Yen's k shortest paths, OPTIQ's heuristic) on BG/Q partitions.

For Bui et al.'s constant-ratio pattern (the first ``p/16`` nodes each send
to 8 of the last ``p/2``, one task per node) on Blue Gene/Q partitions of
512 and 8,192 nodes: the host time to build the path table of the pattern's
router pairs (cold: a fresh topology, no cached paths), to select OPTIQ's
heuristic paths from it, and to evaluate the point (compile included, then
warm) under ``kshortest``, ``optiq_heuristic`` and BG/Q DOR.
"""

from __future__ import annotations

import time

__all__ = ["w_paths", "paths_rows", "PARTITIONS"]

PARTITIONS = {False: (((1, 1, 1, 1), 16), ((2, 2, 2, 2), 16)), True: (((1, 1, 1, 1), 16), ((2, 2, 1, 1), 4))}
"""(midplanes, k) per run: full 512 and 8,192 nodes with k = 16; quick 512 (k = 16) and 2,048 (k = 4)."""


def w_paths(args, device, peak_mb, timed) -> dict:
    """The worker (probes passed in by :mod:`.run`)."""
    from .. import placement, routing, traffic
    from ..evaluation import evaluate
    from ..routing import PairSet, heuristic_table, path_table
    from ..topology import bgq_partition

    rows = []
    for mp, k in PARTITIONS[bool(args.quick)]:
        topo = bgq_partition(mp)
        p = topo.n_nodes
        tr = traffic.m_to_n(p // 16, p // 2, 8, 8e6, "disjoint", n_tasks=p)
        pl = placement.linear(topo, p)
        ps = PairSet.of(tr.src, tr.dst, topo.n_routers)
        t0 = time.perf_counter()
        table = path_table(topo, routing.kshortest(k), ps)
        t_yen = time.perf_counter() - t0
        t0 = time.perf_counter()
        sel = heuristic_table(topo, routing.optiq_heuristic(k=k).bind(ps))
        t_sel = time.perf_counter() - t0  # paths cached: the selection alone
        out = {"nodes": p, "midplanes": list(mp), "k": k, "pairs": len(ps), "paths": table.n_paths,
               "hops_padded": int(table.path_links.shape[1]), "yen_s": t_yen, "select_s": t_sel,
               "selected": sel.n_paths}
        for name, rt in (("dor", routing.dor("longest_first")), ("kshortest", routing.kshortest(k)),
                         ("optiq_heuristic", routing.optiq_heuristic(k=k))):
            t0 = time.perf_counter()
            ds = evaluate(topo, tr, pl, rt)
            first = time.perf_counter() - t0
            warm = timed(lambda: evaluate(topo, tr, pl, rt), 3)
            out[name] = {"first_s": first, "warm_s": warm, "completion_time": float(ds.completion_time),
                         "mean_hops": float(ds.mean_hops)}
        rows.append(out)
    return {"rows": rows, "peak_mb": peak_mb(), "device": device()}


def paths_rows(data: dict, device_label) -> list[dict]:
    dev = device_label(data["device"])
    out = []
    for r in data["rows"]:
        ev = "; ".join(f"{n}: T = {r[n]['completion_time'] * 1e3:.2f} ms, {r[n]['mean_hops']:.2f} hops, "
                       f"{r[n]['first_s']:.2f} s first, {r[n]['warm_s'] * 1e3:.0f} ms warm"
                       for n in ("dor", "kshortest", "optiq_heuristic"))
        out.append({
            "scenario": f"paths: BG/Q {r['nodes']:,} nodes, constant ratio ({r['pairs']:,} router pairs), Yen k="
                        f"{r['k']}", "points": r["pairs"], "seconds": r["yen_s"],
            "points_per_s": r["pairs"] / r["yen_s"], "ratio": float("nan"), "ratio_scipy": float("nan"),
            "check": f"{r['paths']:,} paths", "peak_mb": data["peak_mb"], "device": dev,
            "note": (f"path table {r['yen_s']:.2f} s cold ({r['pairs'] / r['yen_s']:,.0f} pairs/s, padded to "
                     f"{r['hops_padded']} hops); OPTIQ heuristic selection {r['select_s']:.2f} s "
                     f"({r['selected']:,} paths kept); {ev}")})
    return out
