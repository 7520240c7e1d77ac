"""docs/routing_paths.md, the cheap rows rerun (tests/claims.py): the fixed experiment on 512 nodes (DOR, k = 16,
OPTIQ's heuristic and Model 1: times and paths per pair), Model 1 on spread aggregators (512 nodes), DOR on the
2,048-node fixed and distance points, the sweeps' bytes, BG/Q's bandwidths, the hand check of the constant-ratio
bound and the path table's memory estimate. The shipped sweeps' points, evaluated as a sweep chunk would."""

from __future__ import annotations

import numpy as np
import pytest

import evaluator as ev
from evaluator import config
from evaluator.routing._paths import table_bytes
from evaluator.sweep import plan_sweep
from tests.claims import check_stated

DOC = "docs/routing_paths.md"
FIXED = "sweeps=bgq_m2n_fixed"
OPTIQ = "evaluator sweep sweeps=bgq_m2n_constant_ratio ray.enabled=false routing=dor_bgq,optiq_heuristic,optiq_lp"


def _points(sweep: str, keep) -> list:
    plan = plan_sweep(config.compose_sweep([f"sweeps={sweep}"]))
    return [c for c in (plan.point_config(i) for i in range(plan.n_points)) if keep(c)]


def _evaluate(cfgs) -> dict:
    """``(sweep-less key) -> metrics`` of every point, one ``evaluate_batch`` per (partition, routing preset)."""
    groups: dict[tuple, list] = {}
    for c in cfgs:
        groups.setdefault((tuple(c.topology.midplanes), c.routing.kind, getattr(c.routing, "k", None)), []).append(c)
    out = {}
    for (mid, kind, k), group in groups.items():
        built = [config.build(c) for c in group]
        res = ev.evaluate_batch(built[0].topology, built[0].routing, [p.traffic for p in built],
                                [p.placement for p in built])
        m = {name: np.asarray(v, dtype=float) for name, v in res.metrics.items() if name != "bottleneck_class"}
        for j, c in enumerate(group):
            key = (int(np.prod(mid)) * 512, kind if kind != "kshortest" else f"k{k}", c.traffic.mode,
                   getattr(c.traffic, "dst_start", None))
            out[key] = {name: v[j] for name, v in m.items()}
    return out


@pytest.fixture(scope="module")
def fixed512():
    keep = {"dor", "optiq_heuristic", "optiq_lp"}
    return _evaluate(_points("bgq_m2n_fixed", lambda c: list(c.topology.midplanes) == [1, 1, 1, 1] and (
        c.routing.kind in keep or (c.routing.kind == "kshortest" and c.routing.k == 16))))


def test_fixed_512_nodes(fixed512):
    r = {k[1:3]: v for k, v in fixed512.items()}
    ms = {k: v["completion_time"] * 1e3 for k, v in r.items()}
    ppp = {k: v["paths_per_pair"] for k, v in r.items()}
    # Yen's ties (the 512-node fixed experiment, disjoint destinations)
    check_stated(DOC, r"against ([0-9.]+) ms now \(DOR", ms["k16", "disjoint"], command=FIXED)
    check_stated(DOC, r"ms now \(DOR: ([0-9]+) ms, injection-bound\)", ms["dor", "disjoint"], command=FIXED)
    # paths per pair, disjoint / overlap
    check_stated(DOC, r"`optiq_heuristic` \(k = 8\) ([0-9.]+) / [0-9.]+,", ppp["optiq_heuristic", "disjoint"],
                 command=FIXED)
    check_stated(DOC, r"`optiq_heuristic` \(k = 8\) [0-9.]+ / ([0-9.]+),", ppp["optiq_heuristic", "overlap"],
                 command=FIXED)
    lp_ppp = r"`optiq_lp` \(k = 8\) {} / {} \(the overlap values"
    check_stated(DOC, lp_ppp.format("([0-9.]+)", "[0-9.]+"), ppp["optiq_lp", "disjoint"], command=FIXED)
    check_stated(DOC, lp_ppp.format("[0-9.]+", "([0-9.]+)"), ppp["optiq_lp", "overlap"], command=FIXED)
    check_stated(DOC, r"it spreads ([0-9.]+) paths per pair", ppp["optiq_lp", "overlap"], command=FIXED)
    assert ms["optiq_lp", "disjoint"] == pytest.approx(ms["dor", "disjoint"], rel=1e-9)
    check_stated(DOC, r"reaches DOR's ([0-9]+) ms \(the", ms["optiq_lp", "disjoint"], command=FIXED)
    check_stated(DOC, r"halves DOR's time \(([0-9.]+) ms against", ms["optiq_lp", "overlap"], command=FIXED)
    check_stated(DOC, r"against ([0-9]+)\)\. ## One", ms["dor", "overlap"], command=FIXED)
    # `optiq_lp` on the fixed sweep: the 512-node cells
    check_stated(DOC, r"disjoint destinations ([0-9.]+) ms on every partition", ms["optiq_lp", "disjoint"],
                 command=FIXED)
    check_stated(DOC, r"overlapping destinations ([0-9.]+) / [0-9.]+ / [0-9.]+ / [0-9.]+ / [0-9.]+ ms on 512",
                 ms["optiq_lp", "overlap"], command=FIXED)
    # Model 1 equals DOR on the fixed experiment's disjoint points (512 nodes rerun; 1,024 nodes: the sweep)
    check_stated(DOC, r"512 and 1,024 nodes: ([0-9]+) ms, where the candidates", ms["optiq_lp", "disjoint"],
                 command=FIXED)
    # the DOR paragraph: 2 x 8 MB over one link of the source
    check_stated(DOC, r"2 x 8 MB = ([0-9]+) ms \(fixed;", ms["dor", "disjoint"], command=FIXED)
    check_stated(DOC, r"disjoint destinations on 512 nodes the LP's optimum over the 8 candidates is ([0-9]+) ms",
                 ms["optiq_lp", "disjoint"], command=FIXED)


def test_spread_aggregators_512_nodes():
    r = _evaluate(_points("bgq_m2n_subset", lambda c: list(c.topology.midplanes) == [1, 1, 1, 1]
                          and c.traffic.mode == "subset_spread" and c.routing.kind in ("dor", "optiq_lp")))
    dor, lp = (r[512, kind, "subset_spread", None]["completion_time"] * 1e3 for kind in ("dor", "optiq_lp"))
    cmd = "sweeps=bgq_m2n_subset"
    check_stated(DOC, r"512 nodes: ([0-9.]+) ms against 32\)", lp, command=cmd)
    check_stated(DOC, r"ms against ([0-9]+)\)\. \*\*Why", dor, command=cmd)
    check_stated(DOC, r"and up to ([0-9.]+)x on spread aggregators", dor / lp, command=cmd)


def test_dor_on_2048_nodes_fixed_and_distance():
    r = _evaluate(_points("bgq_m2n_distance", lambda c: c.routing.kind == "dor")
                  + _points("bgq_m2n_fixed", lambda c: list(c.topology.midplanes) == [2, 2, 1, 1]
                            and c.routing.kind == "dor" and c.traffic.mode == "disjoint"))
    dist = {k[3]: v for k, v in r.items() if k[3] is not None}
    assert sorted(dist) == [128, 256, 512, 1024, 1792]
    cmd = "sweeps=bgq_m2n_distance"
    for i, start in enumerate((128, 256, 512, 1024)):
        pat = r"DOR mean path " + r"[0-9.]+ / " * i + r"([0-9.]+)" + r" / [0-9.]+" * (3 - i) + r" hops"
        check_stated(DOC, pat, dist[start]["mean_hops"], command=cmd)
    assert len({v["completion_time"] for v in dist.values()}) == 1
    check_stated(DOC, r"DOR stays at ([0-9]+) ms", dist[128]["completion_time"] * 1e3, command=cmd)
    fixed = r[2048, "dor", "disjoint", None]["completion_time"] * 1e3
    check_stated(DOC, r"\(fixed; ([0-9]+) ms from 2,048 nodes on", fixed, command=FIXED)


def test_bytes_bandwidths_and_the_hand_check():
    """The sweeps' bytes and BG/Q's bandwidths as the configs set them; the constant-ratio bound's hand check on
    512 nodes from the point's traffic and the links that leave the source slab A = B = 0."""
    cr = _points("bgq_m2n_constant_ratio", lambda c: list(c.topology.midplanes) == [1, 1, 1, 1]
                 and c.traffic.mode == "disjoint" and c.routing.kind == "dor")[0]
    mb = {s: _points(s, lambda c: True)[0].traffic.bytes / 1e6 for s in
          ("bgq_m2n_constant_ratio", "bgq_m2n_fixed", "bgq_m2n_subset")}
    check_stated(DOC, r"\(m = p/16 -> 8 of the last p/2, ([0-9]+) MB\)", mb["bgq_m2n_constant_ratio"],
                 command="sweeps/bgq_m2n_constant_ratio.yaml")
    check_stated(DOC, r"nodes send ([0-9]+) MB to each of 8 destinations", mb["bgq_m2n_constant_ratio"], command=OPTIQ)
    check_stated(DOC, r"2 each, ([0-9]+) MB\), k = 16", mb["bgq_m2n_fixed"], command=FIXED)
    check_stated(DOC, r"p/8 sources each sending ([0-9]+) MB to one", mb["bgq_m2n_subset"],
                 command="sweeps=bgq_m2n_subset")
    check_stated(DOC, r"one link of the source: 8 x ([0-9]+) MB / 2 GB/s", mb["bgq_m2n_constant_ratio"], command=OPTIQ)
    check_stated(DOC, r"\(constant ratio\), 2 x ([0-9]+) MB = 8 ms", mb["bgq_m2n_fixed"], command=FIXED)
    p = config.build(cr)
    dor = float(ev.evaluate(p.topology, p.traffic, p.placement, p.routing).completion_time) * 1e3
    check_stated(DOC, r"8 x 8 MB / 2 GB/s = ([0-9]+) ms \(constant ratio\)", dor, command=OPTIQ)
    topo = p.topology
    cap = np.asarray(topo.capacity, dtype=float)
    router = cap[: topo.n_router_links]
    assert np.unique(router).size == 1
    check_stated(DOC, r"`topology=bgq` injects at ([0-9]+) GB/s", cap[topo.injection_link(np.array([0]))][0] / 1e9,
                 command="topology=bgq")
    check_stated(DOC, r"8 x 8 MB / ([0-9]+) GB/s = 32 ms", router[0] / 1e9, command=OPTIQ)
    check_stated(DOC, r"both ways, ([0-9]+) GB/s\) carry", router[0] / 1e9, command=OPTIQ)
    # the hand check: the 32 sources' bytes over the links out of their slab (A = B = 0)
    sent = np.asarray(p.traffic.sent_per_task(), dtype=float)
    sources = np.flatnonzero(sent)
    assert sources.size == 32 and np.unique(sent[sources]).size == 1
    slab = np.all(np.asarray(topo.router_coords)[:, :2] == 0, axis=1)
    links = slice(0, topo.n_router_links)
    out = slab[np.asarray(topo.link_src)[links]] & ~slab[np.asarray(topo.link_dst)[links]]
    assert slab[topo.node_router[np.asarray(p.placement.task_node)[sources]]].all()
    check_stated(DOC, r"carry all 32 x ([0-9]+) MB", sent[sources[0]] / 1e6, command=OPTIQ)
    check_stated(DOC, r"no routing beats ([0-9.]+) GB / 256", sent.sum() / 1e9, command=OPTIQ)
    check_stated(DOC, r"GB / ([0-9]+) GB/s = 8 ms", router[out].sum() / 1e9, command=OPTIQ)
    check_stated(DOC, r"GB/s = ([0-9]+) ms, the bound's", sent.sum() / router[out].sum() * 1e3, command=OPTIQ)


def test_path_table_memory_example():
    check_stated(DOC, r"k = 16, H = 20: ([0-9.]+) MB\.", table_bytes(4096, 65536, 20) / 1e6, command="table_bytes")
