"""docs/routing_paths.md, the cheap rows rerun (tests/claims.py): the fixed experiment on 512 nodes (DOR, k = 16,
OPTIQ's heuristic and Model 1: times and paths per pair), spread aggregators on 512 nodes (DOR, k = 16, the
heuristic, Model 1), the constant-ratio cells of the k-shortest paragraph on 512 nodes, the sweeps' bytes, BG/Q's
bandwidths, the hand check of the constant-ratio bound and the path table's memory estimate. The shipped sweeps'
points, evaluated as a sweep would: every routing on one 512-node topology object (tests/test_claims_routing_paths.py
``Partitions``). The 2,048-node DOR points: tests/test_claims_routing_paths.py."""

from __future__ import annotations

import numpy as np
import pytest

import evaluator as ev
from evaluator import config
from evaluator.config.build import build_job
from evaluator.routing import _yen
from evaluator.routing._paths import table_bytes
from tests.claims import check_stated, precision, stated
from tests.test_claims_routing_paths import Partitions, points

DOC = "docs/routing_paths.md"
FIXED = "sweeps=bgq_m2n_fixed"
ALL4 = "dor_bgq,kshortest_k16,optiq_heuristic,optiq_lp"  # DOR, k = 16, the heuristic, Model 1
OPTIQ = "evaluator sweep sweeps=bgq_m2n_constant_ratio ray.enabled=false routing=dor_bgq,optiq_heuristic,optiq_lp"


@pytest.fixture(scope="module")
def p512():
    """One 512-node topology for every sweep and routing of this module (as a sweep reuses one)."""
    return Partitions()


def _at512(c) -> bool:
    return list(c.topology.midplanes) == [1, 1, 1, 1]


@pytest.fixture(scope="module")
def fixed512(p512):
    return p512.evaluate("bgq_m2n_fixed", ALL4, _at512)


def test_fixed_512_nodes(fixed512):
    r = {k[1:3]: v for k, v in fixed512.items()}
    assert len(r) == len(fixed512) == 8
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


def test_the_smallest_id_rule_yen_replaced(monkeypatch):
    """The tie rule tried first, the smallest router id on every tie (in the spur search, and the smallest id list
    among equal-length candidates, without the diversity rule), rerun on the fixed experiment (512 nodes, disjoint
    destinations, k = 16): the paragraph's 28 ms. On fresh topology objects, so that the paths cached for the
    other tests are neither read nor written."""
    monkeypatch.setattr(_yen, "_salt", lambda s, t: 0)
    monkeypatch.setattr(_yen, "_HASH", 1)  # the key of router y is y
    monkeypatch.setattr(_yen._Yen, "_most_diverse", lambda self, tied: min(tied))
    r = Partitions().evaluate("bgq_m2n_fixed", "dor_bgq,kshortest_k16", _at512)
    ms = {k[1:3]: v["completion_time"] * 1e3 for k, v in r.items()}
    check_stated(DOC, r"k = 16 then took ([0-9.]+) ms against", ms["k16", "disjoint"], command=FIXED)


def test_mean_path_growth_512_nodes(p512, fixed512):
    """'Mean path length grows by 0.03 to 0.4 hops per byte from k = 1 to k = 16 (fixed experiment)': the range's
    ends are checked on 1,024-8,192 nodes (tests/test_claims_routing_paths.py); the 512-node points lie inside it."""
    k1 = p512.evaluate("bgq_m2n_fixed", "dor_bgq,kshortest_k1", lambda c: _at512(c) and c.routing.kind != "dor")
    pat = r"Mean path length grows by {} to {} hops per byte from k = 1 to k = 16"
    lo, hi = (stated(DOC, pat.format(*g))[0] for g in (("([0-9.]+)", "[0-9.]+"), ("[0-9.]+", "([0-9.]+)")))
    for mode in ("disjoint", "overlap"):
        grow = fixed512[512, "k16", mode, None, 256]["mean_hops"] - k1[512, "k1", mode, None, 256]["mean_hops"]
        assert float(lo) - precision(lo) <= grow <= float(hi) + precision(hi), (mode, grow, lo, hi)


def test_spread_aggregators_512_nodes(p512):
    r = p512.evaluate("bgq_m2n_subset", ALL4, lambda c: _at512(c) and c.traffic.mode == "subset_spread")
    dor, lp, h, k16 = (r[512, name, "subset_spread", None, 8]["completion_time"] * 1e3
                       for name in ("dor", "optiq_lp", "optiq_heuristic", "k16"))
    cmd = "sweeps=bgq_m2n_subset"
    check_stated(DOC, r"512 nodes: ([0-9.]+) ms against 32\)", lp, command=cmd)
    check_stated(DOC, r"ms against ([0-9]+)\)\. \*\*Why", dor, command=cmd)
    check_stated(DOC, r"and up to ([0-9.]+)x on spread aggregators", dor / lp, command=cmd)
    # the subset paragraph's 512-node cells: DOR, OPTIQ's heuristic and k = 16 on spread aggregators
    check_stated(DOC, r"DOR takes ([0-9]+) ms on every partition", dor, command=cmd)
    check_stated(DOC, r"every partition and OPTIQ ([0-9.]+) / [0-9.]+ / [0-9.]+ / [0-9.]+ / [0-9.]+ ms on 512", h,
                 command=cmd)
    check_stated(DOC, r"\(k = 16: ([0-9.]+) \.\.\. [0-9.]+ ms\); with concentrated", k16, command=cmd)
    # the heuristic's fastest point against DOR over the five sweeps' 39 points (this one)
    check_stated(DOC, r"between [0-9.]+x and ([0-9.]+)x of DOR's speed", dor / h, command=cmd)


def test_constant_ratio_512_nodes(p512):
    """The k-shortest paragraph's constant-ratio cells on 512 nodes (k = 16 and OPTIQ's heuristic) and Model 1's
    largest gain over DOR outside spread aggregators (overlap destinations; the table's row:
    tests/test_claims_studies.py)."""
    r = p512.evaluate("bgq_m2n_constant_ratio", ALL4, _at512)
    ms = {k[1:3]: v["completion_time"] * 1e3 for k, v in r.items()}
    check_stated(DOC, r"constant ratio on 512 nodes \(k = 16: ([0-9]+) ms,", ms["k16", "disjoint"], command=OPTIQ)
    check_stated(DOC, r"OPTIQ's heuristic ([0-9.]+) ms; overlap:", ms["optiq_heuristic", "disjoint"], command=OPTIQ)
    check_stated(DOC, r"; overlap: ([0-9.]+) ms against 32, the table", ms["optiq_heuristic", "overlap"],
                 command=OPTIQ)
    check_stated(DOC, r"overlap: [0-9.]+ ms against ([0-9]+), the table", ms["dor", "overlap"], command=OPTIQ)
    check_stated(DOC, r"the limit\), [0-9.]+x to ([0-9.]+)x faster at the others",
                 ms["dor", "overlap"] / ms["optiq_lp", "overlap"], command=OPTIQ)


def test_bytes_bandwidths_and_the_hand_check(p512):
    """The sweeps' bytes and BG/Q's bandwidths as the configs set them; the constant-ratio bound's hand check on
    512 nodes from the point's traffic and the links that leave the source slab A = B = 0."""
    cr = next(c for c in points("bgq_m2n_constant_ratio", ALL4) if _at512(c) and c.traffic.mode == "disjoint"
              and c.routing.kind == "dor")
    mb = {s: points(s, ALL4)[0].traffic.bytes / 1e6 for s in ("bgq_m2n_constant_ratio", "bgq_m2n_fixed",
                                                               "bgq_m2n_subset")}
    check_stated(DOC, r"\(m = p/16 -> 8 of the last p/2, ([0-9]+) MB\)", mb["bgq_m2n_constant_ratio"],
                 command="sweeps/bgq_m2n_constant_ratio.yaml")
    check_stated(DOC, r"nodes send ([0-9]+) MB to each of 8 destinations", mb["bgq_m2n_constant_ratio"], command=OPTIQ)
    check_stated(DOC, r"2 each, ([0-9]+) MB\), k = 16", mb["bgq_m2n_fixed"], command=FIXED)
    check_stated(DOC, r"p/8 sources each sending ([0-9]+) MB to one", mb["bgq_m2n_subset"],
                 command="sweeps=bgq_m2n_subset")
    check_stated(DOC, r"one link of the source: 8 x ([0-9]+) MB / 2 GB/s", mb["bgq_m2n_constant_ratio"], command=OPTIQ)
    check_stated(DOC, r"\(constant ratio\), 2 x ([0-9]+) MB = 8 ms", mb["bgq_m2n_fixed"], command=FIXED)
    topo = p512.topology(cr)
    traffic, placement = build_job(cr.traffic, cr.placement, topo, cr.topology)
    dor = float(ev.evaluate(topo, traffic, placement, config.build_routing_spec(cr.routing)).completion_time) * 1e3
    check_stated(DOC, r"8 x 8 MB / 2 GB/s = ([0-9]+) ms \(constant ratio\)", dor, command=OPTIQ)
    cap = np.asarray(topo.capacity, dtype=float)
    router = cap[: topo.n_router_links]
    assert np.unique(router).size == 1
    check_stated(DOC, r"`topology=bgq` injects at ([0-9]+) GB/s", cap[topo.injection_link(np.array([0]))][0] / 1e9,
                 command="topology=bgq")
    check_stated(DOC, r"8 x 8 MB / ([0-9]+) GB/s = 32 ms", router[0] / 1e9, command=OPTIQ)
    check_stated(DOC, r"both ways, ([0-9]+) GB/s\) carry", router[0] / 1e9, command=OPTIQ)
    # the hand check: the 32 sources' bytes over the links out of their slab (A = B = 0)
    sent = np.asarray(traffic.sent_per_task(), dtype=float)
    sources = np.flatnonzero(sent)
    assert sources.size == 32 and np.unique(sent[sources]).size == 1
    slab = np.all(np.asarray(topo.router_coords)[:, :2] == 0, axis=1)
    links = slice(0, topo.n_router_links)
    out = slab[np.asarray(topo.link_src)[links]] & ~slab[np.asarray(topo.link_dst)[links]]
    assert slab[topo.node_router[np.asarray(placement.task_node)[sources]]].all()
    check_stated(DOC, r"carry all 32 x ([0-9]+) MB", sent[sources[0]] / 1e6, command=OPTIQ)
    check_stated(DOC, r"no routing beats ([0-9.]+) GB / 256", sent.sum() / 1e9, command=OPTIQ)
    check_stated(DOC, r"GB / ([0-9]+) GB/s = 8 ms", router[out].sum() / 1e9, command=OPTIQ)
    check_stated(DOC, r"GB/s = ([0-9]+) ms, the bound's", sent.sum() / router[out].sum() * 1e3, command=OPTIQ)


def test_path_table_memory_example():
    check_stated(DOC, r"k = 16, H = 20: ([0-9.]+) MB\.", table_bytes(4096, 65536, 20) / 1e6, command="table_bytes")
