"""Tests of torus partition analysis (evaluator.partitions, evaluator.machines).

References used, none of them the code under test:
* exhaustive minimum bisection over every balanced vertex subset of small
  tori/meshes (graph built independently here, cross-checked with networkx);
* brute force over every cuboid (and every subset on tiny tori) for the
  isoperimetric bound of Oltchik & Schwartz, Theorem 3.1;
* the printed Tables 1, 2, 5, 6 and 7 of Oltchik & Schwartz, transcribed below;
* the bisection arithmetic of Fiedler's Blue Waters slab slides.
"""

from __future__ import annotations

import itertools
import math
import random

import networkx as nx
import numpy as np
import pytest

from evaluator import machines as M
from evaluator import partitions as P
from evaluator.cli.partitions import main as cli_main
from tests.claims import check_stated
from tests.helpers import TOL

# ----------------------------------------------------------------------------------
# reference graph and brute force
# ----------------------------------------------------------------------------------


def grid_edges(dims, ring, bw=None, size2_double=False):
    """Undirected edges (u, v, dim, weight) of a torus/mesh in row-major node ids.

    A ring of size >= 3 closes with a wrap link; a ring of size 2 has one link
    (two if ``size2_double``: the 2D-regular convention of Theorem 3.1).
    """
    bw = bw or (1.0,) * len(dims)
    out = []
    for idx in itertools.product(*map(range, dims)):
        u = int(np.ravel_multi_index(idx, dims))
        for k, a in enumerate(dims):
            j = list(idx)
            if idx[k] + 1 < a:
                j[k] += 1
                v = int(np.ravel_multi_index(tuple(j), dims))
                out.append((u, v, k, bw[k]))
                if size2_double and ring[k] and a == 2:
                    out.append((u, v, k, bw[k]))
            elif ring[k] and a >= 3:
                j[k] = 0
                out.append((u, int(np.ravel_multi_index(tuple(j), dims)), k, bw[k]))
    return out


_MASKS: dict[tuple[int, int], np.ndarray] = {}


def subsets(n, t):
    """All n-bit masks with exactly t bits set."""
    if (n, t) not in _MASKS:
        m = np.arange(1 << n, dtype=np.int64)
        pc = np.zeros_like(m)
        x = m.copy()
        for _ in range(n):
            pc += x & 1
            x >>= 1
        _MASKS[(n, t)] = m[pc == t]
    return _MASKS[(n, t)]


def cut_of_masks(masks, edges):
    cap = np.zeros(len(masks))
    links = np.zeros(len(masks), dtype=np.int64)
    for u, v, _, w in edges:
        c = ((masks >> u) ^ (masks >> v)) & 1
        cap += c * w
        links += c
    return cap, links


def brute_bisection(dims, ring, bw=None):
    """(min capacity, min links among min-capacity cuts) over all floor(N/2) subsets."""
    n = math.prod(dims)
    cap, links = cut_of_masks(subsets(n, n // 2), grid_edges(dims, ring, bw))
    mn = cap.min()
    return mn, int(links[np.isclose(cap, mn, rtol=TOL["rel"], atol=0)].min())


def test_reference_graph_matches_networkx():
    for dims, periodic in [((3, 4), True), ((4, 2, 2), True), ((3, 3), False), ((2, 5), True), ((5,), True)]:
        g = nx.grid_graph(dim=list(reversed(dims)), periodic=periodic)  # networkx lists dims last-first
        g.remove_edges_from(nx.selfloop_edges(g))
        ours = grid_edges(dims, (periodic,) * len(dims))
        assert len(ours) == g.number_of_edges()
        assert len({(min(u, v), max(u, v)) for u, v, _, _ in ours}) == len(ours)


# ----------------------------------------------------------------------------------
# exact bisection vs exhaustive minimum bisection
# ----------------------------------------------------------------------------------

NAMED = [
    ((2, 3), (True, True)), ((2, 3), (False, False)), ((4, 2, 2), (True, True, True)),
    ((3, 3), (True, True)), ((3, 3), (False, False)), ((3, 3), (True, False)),
    ((1, 4), (True, True)), ((4, 1, 1), (True, True, True)), ((2,), (True,)), ((2, 2, 2, 2), (True,) * 4),
    ((3,), (True,)), ((5,), (False,)), ((3, 5), (True, True)), ((5, 3), (False, True)), ((4, 4), (True, True)),
    ((4, 4), (False, True)), ((3, 2, 3), (True, True, True)), ((3, 3, 2), (False, False, False)),
    ((6, 3), (True, True)), ((4, 5), (True, True)), ((2, 2, 5), (True, False, True)), ((7, 2), (True, True)),
    ((3, 6), (True, False)), ((2, 9), (True, True)),
]


@pytest.mark.parametrize("dims,ring", NAMED, ids=lambda x: "x".join(map(str, x)) if isinstance(x[0], int)
                         and not isinstance(x[0], bool) else "".join("R" if w else "M" for w in x))
def test_bisection_named_shapes(dims, ring):
    b = P.torus_bisection(dims, ring)
    assert (b.bandwidth, b.links) == brute_bisection(dims, ring)
    assert sum(b.links_per_dim) == b.links
    assert b.routers == math.prod(dims)


def test_bisection_every_small_shape_weighted_and_unweighted():
    rng = random.Random(7)
    shapes = {d for D in range(1, 5) for d in itertools.product(range(1, 7), repeat=D) if 2 <= math.prod(d) <= 12}
    n = 0
    for dims in sorted(shapes):
        for ring in itertools.product((False, True), repeat=len(dims)):
            bws = [(1.0,) * len(dims)] + [tuple(rng.choice([0.5, 1.0, 2.0, 3.0]) for _ in dims) for _ in range(2)]
            for bw in bws:
                b = P.torus_bisection(dims, ring, bw)
                cap, links = brute_bisection(dims, ring, bw)
                assert b.bandwidth == pytest.approx(cap, rel=TOL["rel"]), (dims, ring, bw)
                assert b.links == links, (dims, ring, bw)
                assert b.bandwidth == pytest.approx(sum(l * w for l, w in zip(b.links_per_dim, bw)))
                n += 1
    assert n > 1500


def test_bisection_conventions():
    # ring of size 2 is one link; size-1 dims give nothing; mesh cut gives one
    assert P.torus_bisection((2,)).links == 1
    assert P.torus_bisection((1, 1)).links == 0
    assert P.torus_bisection((4,), False).links == 1
    assert P.torus_bisection((4,), True).links == 2
    # Gemini Y at half bandwidth: a full 24^3 torus is cut across Y
    b = P.torus_bisection((24, 24, 24), True, (2.0, 1.0, 2.0))
    assert b.cut == (1,) and b.links == 2 * 24 * 24 and b.bandwidth == 2 * 24 * 24
    b = P.torus_bisection((4, 4), True, 3.0, nodes_per_router=2)
    assert (b.nodes, b.per_node) == (32, 8 * 3.0 / 32)


def test_bgq_bisection_formula_and_paper_example():
    # Oltchik Sec. 2: a BG/Q partition has bisection 2 N / L links (L longest dimension)
    for mp in [(1, 1, 1, 1), (3, 2, 1, 1), (4, 4, 3, 2), (7, 2, 2, 2), (5, 1, 1, 1), (3, 3, 3, 2)]:
        d = P.bgq_node_dims(mp)
        assert P.torus_bisection(d).links == 2 * math.prod(d) // max(d)
    # the 6-midplane example: 12x4x4x4x2 has 256 links, 8x6x4x4x2 384, 8x8x4x4x2 512
    assert P.torus_bisection((12, 4, 4, 4, 2)).links == 256
    assert P.torus_bisection((8, 6, 4, 4, 2)).links == 384
    assert P.torus_bisection((8, 8, 4, 4, 2)).links == 512
    assert P.bgq_node_dims((3, 2, 1, 1)) == (12, 8, 4, 4, 2)


# ----------------------------------------------------------------------------------
# Theorem 3.1
# ----------------------------------------------------------------------------------


def cuboid_cut(sub, dims, size2_double):
    """Links leaving the cuboid [sub_1] x ... x [sub_D] at the origin, counted on the graph."""
    ring = (True,) * len(dims)
    inside = np.zeros(dims, dtype=bool)
    inside[tuple(slice(0, s) for s in sub)] = True
    flat = inside.ravel()
    return sum(1 for u, v, _, _ in grid_edges(dims, ring, size2_double=size2_double) if flat[u] != flat[v])


def min_cuboid_cut(dims, t, size2_double):
    best = None
    for sub in itertools.product(*(range(1, a + 1) for a in dims)):
        if math.prod(sub) == t:
            c = cuboid_cut(sub, dims, size2_double)
            best = c if best is None else min(best, c)
    return best


TORI = [(3, 3), (4, 3), (4, 4), (5, 3), (6, 4), (2, 2, 2), (4, 2, 2), (3, 3, 2), (4, 4, 1), (5, 2),
        (3, 3, 3), (6, 3, 2), (4, 2, 2, 2), (7, 2, 2, 2), (4, 4, 3, 2), (8, 1, 3)]


@pytest.mark.parametrize("dims", TORI, ids=lambda d: "x".join(map(str, d)))
def test_isoperimetric_bound_vs_all_cuboids(dims):
    """Theorem 3.1 in its own (2D-regular) link count; tight where Lemma 3.2 says so."""
    n = math.prod(dims)
    a = sorted(dims, reverse=True)
    D = len(a)
    for t in range(1, n // 2 + 1):
        bound = P.isoperimetric_bound(dims, t)
        best = min_cuboid_cut(dims, t, size2_double=True)
        if best is None:
            continue  # no cuboid of size t
        assert bound <= best + TOL["count"], (dims, t)
        # Lemma 3.2: if the minimising r gives an integer side that fits, the bound is attained
        vals = [2 * (D - r) * math.prod(a[D - r:]) ** (1 / (D - r)) * t ** ((D - r - 1) / (D - r))
                for r in range(D)]
        r = int(np.argmin(vals))
        side = (t / math.prod(a[D - r:])) ** (1 / (D - r))
        if abs(side - round(side)) < TOL["count"] and round(side) <= a[D - r - 1]:
            assert best == pytest.approx(bound), (dims, t)
    if 2 not in dims:  # single-link convention agrees when no ring has size 2
        for t in range(1, n // 2 + 1):
            c = min_cuboid_cut(dims, t, size2_double=False)
            if c is not None:
                assert P.isoperimetric_bound(dims, t) <= c + TOL["count"]


@pytest.mark.parametrize("dims", [(3, 3), (3, 4), (4, 4), (3, 5), (2, 2, 2, 2), (2, 3, 3), (4, 2, 2), (3, 6)],
                         ids=lambda d: "x".join(map(str, d)))
def test_isoperimetric_bound_vs_all_subsets(dims):
    """The conjecture (all subsets, not only cuboids) on tiny tori."""
    n = math.prod(dims)
    edges = grid_edges(dims, (True,) * len(dims), size2_double=True)
    for t in range(1, n // 2 + 1):
        cap, _ = cut_of_masks(subsets(n, t), edges)
        assert P.isoperimetric_bound(dims, t) <= cap.min() + TOL["count"], (dims, t)


def test_isoperimetric_bound_bisection_and_single_link_caveat():
    # r = D-1 term at t = N/2 is the bisection 2 N / a_1 of tori with even longest side
    for d in [(4, 4), (6, 4, 4), (16, 16, 12, 8, 2)]:
        assert P.isoperimetric_bound(d, math.prod(d) // 2) <= P.torus_bisection(d).links + TOL["count"]
    assert P.isoperimetric_bound((8, 4, 4), 64) == pytest.approx(32)
    # with one link per size-2 ring the bound does not apply: the 2x2x2 cube bisects with 4 links
    assert P.torus_bisection((2, 2, 2)).links == 4 < P.isoperimetric_bound((2, 2, 2), 4)
    with pytest.raises(P.PartitionError, match=r"t = 5 .*\[1, 4\]"):
        P.isoperimetric_bound((2, 2, 2), 5)


# ----------------------------------------------------------------------------------
# Oltchik & Schwartz tables (transcribed from the paper)
# ----------------------------------------------------------------------------------

# Table 6 (Mira): P, midplanes, current geometry, BW, new geometry, new BW (None: blank)
TABLE6 = [
    (512, 1, "1x1x1x1", 256, None, None),
    (1024, 2, "2x1x1x1", 256, None, None),
    (2048, 4, "4x1x1x1", 256, "2x2x1x1", 512),
    (4096, 8, "4x2x1x1", 512, "2x2x2x1", 1024),
    (8192, 16, "4x4x1x1", 1024, "2x2x2x2", 2048),
    (12288, 24, "4x3x2x1", 1536, "3x2x2x2", 2048),
    (16384, 32, "4x4x2x1", 2048, None, None),
    (24576, 48, "4x4x3x1", 3072, None, None),
    (32768, 64, "4x4x2x2", 4096, None, None),
    (49152, 96, "4x4x3x2", 6144, None, None),
]
TABLE1 = [r for r in TABLE6 if r[4] is not None]  # rows where the bisection increases

# Table 7 (JUQUEEN): P, midplanes, worst geometry, worst BW, proposed geometry, proposed BW
TABLE7 = [
    (512, 1, "1x1x1x1", 256, None, None),
    (1024, 2, "2x1x1x1", 256, None, None),
    (1536, 3, "3x1x1x1", 256, None, None),
    (2048, 4, "4x1x1x1", 256, "2x2x1x1", 512),
    (2560, 5, "5x1x1x1", 256, None, None),
    (3072, 6, "6x1x1x1", 256, "3x2x1x1", 512),
    (3584, 7, "7x1x1x1", 256, None, None),
    (4096, 8, "4x2x1x1", 512, "2x2x2x1", 1024),
    (5120, 10, "5x2x1x1", 512, None, None),
    (6144, 12, "6x2x1x1", 512, "3x2x2x1", 1024),
    (7168, 14, "7x2x1x1", 512, None, None),
    (8192, 16, "4x2x2x1", 1024, "2x2x2x2", 2048),
    (10240, 20, "5x2x2x1", 1024, None, None),
    (12288, 24, "6x2x2x1", 1024, "3x2x2x2", 2048),
    (14336, 28, "7x2x2x1", 1024, None, None),
    (16384, 32, "4x2x2x2", 2048, None, None),
    (20480, 40, "5x2x2x2", 2048, None, None),
    (24576, 48, "6x2x2x2", 2048, None, None),
    (28672, 56, "7x2x2x2", 2048, None, None),
]
TABLE2 = [
    (2048, 4, "4x1x1x1", 256, "2x2x1x1", 512),
    (3072, 6, "6x1x1x1", 256, "3x2x1x1", 512),
    (4096, 8, "4x2x1x1", 512, "2x2x2x1", 1024),
    (6144, 12, "6x2x1x1", 512, "3x2x2x1", 1024),
    (8192, 16, "4x2x2x1", 1024, "2x2x2x2", 2048),
    (12288, 24, "6x2x2x1", 1024, "3x2x2x2", 2048),
]

# Table 5: P, midplanes, then (geometry, BW) for JUQUEEN, JUQUEEN-54, JUQUEEN-48 (None: blank)
_ = None
TABLE5 = [
    (512, 1, "1x1x1x1", 256, "1x1x1x1", 256, "1x1x1x1", 256),
    (1024, 2, "2x1x1x1", 256, "2x1x1x1", 256, "2x1x1x1", 256),
    (1536, 3, "3x1x1x1", 256, "3x1x1x1", 256, "3x1x1x1", 256),
    (2048, 4, "2x2x1x1", 512, "2x2x1x1", 512, "2x2x1x1", 512),
    (2560, 5, "5x1x1x1", 256, _, _, _, _),
    (3072, 6, "3x2x1x1", 512, "3x2x1x1", 512, "3x2x1x1", 512),
    (3584, 7, "7x1x1x1", 256, _, _, _, _),
    (4096, 8, "2x2x2x1", 1024, "2x2x2x1", 1024, "2x2x2x1", 1024),
    (4608, 9, _, _, "3x3x1x1", 768, "3x3x1x1", 768),
    (5120, 10, "5x2x1x1", 512, _, _, _, _),
    (6144, 12, "3x2x2x1", 1024, "3x2x2x1", 1024, "3x2x2x1", 1024),
    (7168, 14, "7x2x1x1", 512, _, _, _, _),
    (8192, 16, "2x2x2x2", 2048, "2x2x2x2", 2048, "2x2x2x2", 2048),
    (9216, 18, _, _, "3x3x2x1", 1536, "3x3x2x1", 1536),
    (10240, 20, "5x2x2x1", 1024, _, _, _, _),
    (12288, 24, "3x2x2x2", 2048, "3x2x2x2", 2048, "3x2x2x2", 2048),
    (13824, 27, _, _, "3x3x3x1", 2304, _, _),
    (14336, 28, "7x2x2x1", 1024, _, _, _, _),
    (16384, 32, "4x2x2x2", 2048, _, _, "4x2x2x2", 2048),
    (18432, 36, _, _, "3x3x2x2", 3072, "3x3x2x2", 3072),
    (20480, 40, "5x2x2x2", 2048, _, _, _, _),
    (24576, 48, "6x2x2x2", 2048, _, _, "4x3x2x2", 3072),
    (27648, 54, _, _, "3x3x3x2", 4608, _, _),
    (28672, 56, "7x2x2x2", 2048, _, _, _, _),
]


def _allowed_vs_new(machine):
    rows = []
    for a in P.analyse_machine(machine):
        cur = a.best_allowed
        better = a.best.bisection.bandwidth > cur.bisection.bandwidth
        rows.append((a.nodes, a.units, cur.label, cur.bisection.links,
                     a.best.label if better else None, a.best.bisection.links if better else None))
    return rows


def _worst_vs_best(machine):
    rows = []
    for a in P.analyse_machine(machine):
        better = a.best.bisection.bandwidth > a.worst.bisection.bandwidth
        rows.append((a.nodes, a.units, a.worst.label, a.worst.bisection.links,
                     a.best.label if better else None, a.best.bisection.links if better else None))
    return rows


def test_table6_and_table1_mira():
    rows = _allowed_vs_new("Mira")
    assert rows == TABLE6
    assert [r for r in rows if r[4] is not None] == TABLE1
    speed = {a.units: a.speedup_best_over_allowed for a in P.analyse_machine("Mira")}
    assert speed[4] == speed[8] == speed[16] == 2.0 and speed[24] == pytest.approx(4 / 3)


def test_table7_and_table2_juqueen():
    rows = _worst_vs_best("JUQUEEN")
    assert rows == TABLE7
    assert [r for r in rows if r[4] is not None] == TABLE2


def test_table5_machine_comparison():
    table = P.compare_machines(["JUQUEEN", "JUQUEEN-54", "JUQUEEN-48"])
    got = []
    for n, row in table.items():
        r = [n, n // 512]
        for name in ("JUQUEEN", "JUQUEEN-54", "JUQUEEN-48"):
            g = row[name]
            r += [g.label, g.bisection.links] if g else [None, None]
        got.append(tuple(r))
    assert got == TABLE5
    ds = P.comparison_dataset(["JUQUEEN", "JUQUEEN-54", "JUQUEEN-48"], table)
    assert float(ds["speedup_vs_first"].sel(size=24576, machine="JUQUEEN-48")) == pytest.approx(1.5)
    assert float(ds["best_bandwidth"].sel(size=512, machine="JUQUEEN")) == 256 * 2.0e9


def test_juqueen54_speedup_needs_a_size_juqueen_cannot_allocate():
    """Oltchik Sec. 5's "up to x2" for JUQUEEN-54 (docs/partitions.md): at every size both machines can
    allocate, their best partitions have equal bisections (1.00x); JUQUEEN-54's better partitions (9, 18, 27, 36,
    54 midplanes) are sizes JUQUEEN must round up, and against JUQUEEN's smallest partition that holds the job the
    bisection ratio reaches 2304/1024 = 4608/2048 = 2.25 (27 -> 28 and 54 -> 56 midplanes). JUQUEEN-48's 1.5x is the
    same either way."""
    names = ["JUQUEEN", "JUQUEEN-54", "JUQUEEN-48"]
    ds = P.comparison_dataset(names, P.compare_machines(names))
    eq = ds["speedup_vs_first"]
    held = ds["speedup_vs_first_holding"]
    assert float(eq.sel(machine="JUQUEEN-54").max()) == pytest.approx(1.0)
    assert float(held.sel(machine="JUQUEEN-54").max()) == pytest.approx(2.25)
    assert float(held.sel(machine="JUQUEEN-54").min()) == pytest.approx(1.0)  # never worse than JUQUEEN
    mid = ds["units"]
    best = held.sel(machine="JUQUEEN-54").values
    assert sorted(int(u) for u in mid.values[np.isclose(best, 2.25)]) == [27, 54]
    assert int(ds["first_holding_size"].sel(size=27 * 512)) == 28 * 512
    assert int(ds["first_holding_size"].sel(size=54 * 512)) == 56 * 512
    for m in ("JUQUEEN-48",):
        assert float(eq.sel(machine=m).max()) == pytest.approx(1.5)
        assert float(held.sel(machine=m).max()) == pytest.approx(1.5)
    # the first machine against itself: its own sizes hold themselves
    assert np.nanmax(np.abs(held.sel(machine="JUQUEEN").values - 1.0)) == 0.0


def test_geometries_count_rotations_once_and_carry_orientation():
    g = P.partition_geometries("Mira", 4 * 512)
    assert sorted(x.label for x in g) == ["2x2x1x1", "4x1x1x1"]
    assert [x.allowed for x in g] == [False, True]
    assert all(P.check_partition("Mira", x.shape) == x.shape for x in g)
    # a 4 of Mira must sit in dimension 0 or 1 (sizes 4, 4, 3, 2)
    assert [x.shape for x in P.partition_geometries("Mira", 4 * 512) if x.label == "4x1x1x1"] == [(4, 1, 1, 1)]
    assert len(P.partition_geometries("JUQUEEN", 8 * 512)) == 2
    assert P.feasible_sizes("JUQUEEN-54")[:10] == [512 * k for k in (1, 2, 3, 4, 6, 8, 9, 12, 16, 18)]


# ----------------------------------------------------------------------------------
# Blue Waters (Fiedler's slides)
# ----------------------------------------------------------------------------------


def test_blue_waters_slabs():
    res = {r.label: r.bisection for r in P.slab_bisections("BlueWaters")}
    z = 9.375e9  # X and Z link; Y is half
    assert res["24x24x24"].bandwidth == pytest.approx(24 * 24 * 2 * z / 2)    # normal to Y
    assert res["24x6x24"].bandwidth == pytest.approx(24 * 12 * z)            # equal in X, Y and Z
    assert res["12x6x12"].bandwidth == pytest.approx(12 * 6 * z)             # no wrap: 1/8 of full
    assert res["24x24x24"].bandwidth / res["12x6x12"].bandwidth == pytest.approx(8)
    assert res["24x24x24"].bandwidth / res["24x6x24"].bandwidth == pytest.approx(2)
    # slab normal to X (6x24x24) vs 23x6x24: 2x more bisection per node
    assert res["23x6x24"].per_node / res["6x24x24"].per_node == pytest.approx(2.0)
    assert res["24x6x24"].per_node / res["24x24x24"].per_node == pytest.approx(2.0)
    assert P.effective_wrap((23, 6, 24), (24, 24, 24)) == (True, False, True)
    assert P.effective_wrap((13, 12, 24), (24, 24, 24)) == (False, False, True)
    assert P.effective_wrap((14, 2, 2), (24, 2, 24)) == (True, True, False)


def dor_used_links(prism, host):
    """Host links used by minimal dimension-order routes between every pair of prism routers."""
    used = set()
    pts = list(itertools.product(*map(range, prism)))
    for src, dst in itertools.product(pts, pts):
        cur = list(src)
        for k, H in enumerate(host):
            delta = (dst[k] - cur[k]) % H
            if 2 * delta == H and H > 2:  # equidistant: split both ways, only inside a full ring
                assert prism[k] == H, "tie in a partial dimension: pick another host"
                steps = (1, -1)
            else:
                steps = (1 if 2 * delta <= H else -1,)
            for step in steps:
                walk = list(cur)
                while walk[k] != dst[k]:
                    nxt = list(walk)
                    nxt[k] = (walk[k] + step) % H
                    a, b = (int(np.ravel_multi_index(tuple(x), host)) for x in (walk, nxt))
                    used.add((min(a, b), max(a, b), k))
                    walk = nxt
            cur[k] = dst[k]
    return used


@pytest.mark.parametrize("prism,host", [((6, 2), (9, 2)), ((4, 3), (5, 3)), ((5, 2), (7, 2)), ((3, 3), (5, 3)),
                                        ((3, 4), (7, 4)), ((4, 2, 2), (5, 2, 2)), ((4, 3), (7, 3)), ((2, 3), (3, 3))])
def test_embedded_bisection_vs_routes_on_host(prism, host):
    """Min balanced cut of the prism over exactly the host links its XYZ routes use.

    Routers outside the prism may go to either side; the reference knows
    nothing of ``effective_wrap``: it walks every route.
    """
    w = (1.0, 0.5, 2.0)[:len(host)]
    used = dor_used_links(prism, host)
    routers = sorted({u for u, _, _ in used} | {v for _, v, _ in used})
    pos = {r: i for i, r in enumerate(routers)}
    edges = [(pos[u], pos[v], k, w[k]) for u, v, k in used]
    inside = np.zeros(host, dtype=bool)
    inside[tuple(slice(0, s) for s in prism)] = True
    ids = [pos[int(i)] for i in np.flatnonzero(inside.ravel())]
    masks = np.arange(1 << len(routers), dtype=np.int64)
    count = np.zeros_like(masks)
    for i in ids:
        count += (masks >> i) & 1
    cap, _ = cut_of_masks(masks[count == len(ids) // 2], edges)
    b = P.torus_bisection(prism, True, w, embedded_in=host)
    assert b.bandwidth == pytest.approx(cap.min())


def test_embedded_chain_dims():
    # a prism whose farthest routers route directly is a mesh in that dimension
    assert P.torus_bisection((3, 3), True, embedded_in=(6, 3)) == P.torus_bisection((3, 3), (False, True))
    assert P.torus_bisection((12, 6, 12), True, embedded_in=(24, 24, 24)).links == 72


def test_blue_waters_geometries_keep_y_orientation():
    g = P.partition_geometries("BlueWaters", 6912)
    labels = [x.label for x in g]
    assert labels[0] == "24x6x24"
    assert "6x24x24" not in labels and "24x24x6" in labels  # X and Z are interchangeable, Y is not
    assert P.analyse_size("BlueWaters", 6912).speedup_best_over_worst == pytest.approx(2.0)


# ----------------------------------------------------------------------------------
# errors
# ----------------------------------------------------------------------------------


def test_error_partition_larger_than_machine():
    with pytest.raises(P.PartitionError, match=r"machine 'Mira': partition 5x1x1x1 does not fit in midplanes "
                                               r"4x4x3x2 \(dimension 0: 5 > 4\)"):
        P.check_partition("Mira", (5, 1, 1, 1))
    with pytest.raises(ValueError, match=r"dimension 3: 4 > 2\); the rotation 4x1x1x1 fits"):
        P.partition_bisection("Mira", [1, 1, 1, 4])
    with pytest.raises(P.PartitionError, match="larger than the machine"):
        P.partition_geometries("Mira", 60000 * 512)


def test_error_geometry_forbidden_by_allowed_list():
    assert P.partition_bisection("Mira", (2, 2, 1, 1)).links == 512  # possible, not allowed
    with pytest.raises(P.PartitionError, match=r"2x2x1x1 .*not in the scheduler's allowed list; allowed "
                                               r"geometries of 4 midplanes: 4x1x1x1"):
        P.partition_bisection("Mira", (2, 2, 1, 1), require_allowed=True)
    P.check_partition("Mira", (1, 4, 1, 1), require_allowed=True)  # a rotation of 4x1x1x1
    P.check_partition("JUQUEEN", (2, 2, 1, 1), require_allowed=True)  # no list: anything that fits


@pytest.mark.parametrize("size,pattern", [
    (0, r"partition size = 0 is invalid; allowed: a positive number of nodes"),
    (-512, r"partition size = -512 is invalid"),
    (1000, r"1000 nodes is not a multiple of 512 nodes per midplane; nearest allowed: 512, 1024"),
    (9 * 512, r"no cuboid of 9 midplanes .* fits in midplanes 7x2x2x2; feasible sizes"),
    (2.5, r"partition size = 2.5 is invalid"),
])
def test_error_bad_size(size, pattern):
    with pytest.raises(P.PartitionError, match=pattern):
        P.partition_geometries("JUQUEEN", size)


def test_error_bad_shapes_and_args():
    with pytest.raises(P.PartitionError, match=r"4 integers >= 1"):
        P.check_partition("Mira", (1, 1, 1))
    with pytest.raises(P.PartitionError, match=r"4 integers >= 1"):
        P.check_partition("Mira", (0, 1, 1, 1))
    with pytest.raises(P.PartitionError, match=r"dims = .*integers >= 1"):
        P.torus_bisection((3, 0))
    with pytest.raises(P.PartitionError, match=r"bandwidth = .*finite numbers > 0"):
        P.torus_bisection((3, 3), True, (1.0, -1.0))
    with pytest.raises(P.PartitionError, match=r"wrap = .*2 values"):
        P.torus_bisection((3, 3), (True, True, True))
    with pytest.raises(P.PartitionError, match=r"does not fit in host 24x24x24 \(dimension 1: 25 > 24\)"):
        P.torus_bisection((2, 25, 2), True, embedded_in=(24, 24, 24))
    with pytest.raises(P.PartitionError, match="kind = 'bgq' is invalid for the slab analysis"):
        P.slab_bisections("Mira")


def test_error_unknown_machine_lists_known():
    with pytest.raises(M.UnknownMachineError, match=r"unknown machine 'Miraa'; known machines: .*BlueWaters.*"
                                                    r"JUQUEEN.*JUQUEEN-48.*JUQUEEN-54.*Mira.*Sequoia"):
        M.load_machine("Miraa")
    assert issubclass(M.UnknownMachineError, ValueError)


# ----------------------------------------------------------------------------------
# machine catalogue
# ----------------------------------------------------------------------------------


def test_catalogue():
    assert {"Mira", "JUQUEEN", "Sequoia", "JUQUEEN-54", "JUQUEEN-48", "BlueWaters"} <= set(M.list_machines())
    mira = M.load_machine("mira")
    assert mira.dims == (16, 16, 12, 8, 2) and mira.n_nodes == 49152 and mira.link_bandwidth[0] == 2.0e9
    assert M.load_machine("JUQUEEN").n_nodes == 28672 and M.load_machine("juqueen_54").midplanes == (3, 3, 3, 2)
    assert M.load_machine("Sequoia").n_nodes == 98304 and M.load_machine("JUQUEEN-48").n_nodes == 24576
    bw = M.load_machine("blue waters")
    assert bw.dims == (24, 24, 24) and bw.nodes_per_router == 2 and bw.n_nodes == 27648
    assert bw.link_bandwidth[1] == bw.link_bandwidth[0] / 2 and bw.routing_order == "as_given"
    assert mira.routing_order == "longest_first" and len(mira.allowed_partitions) == 10


def test_user_machine_directory(tmp_path, monkeypatch):
    (tmp_path / "tiny.yaml").write_text(
        "name: Tiny\nkind: bgq\nmidplanes: [2, 2, 1, 1]\nallowed_partitions: [[2, 1, 1, 1]]\n"
        "link_bandwidth: 2e9\n")
    monkeypatch.setenv(M.MACHINE_PATH_ENV, str(tmp_path))
    m = M.load_machine("TINY")
    assert m.link_bandwidth[0] == 2e9 and m.source.endswith("tiny.yaml")
    assert "Tiny" in M.list_machines()
    a = P.analyse_size(m, 1024)
    assert a.best_allowed.label == "2x1x1x1" and a.speedup_best_over_allowed == 1.0


@pytest.mark.parametrize("text,pattern", [
    ("name: X\nkind: bgq\nmidplanes: [2, 2, 1]\nlink_bandwidth: 2.0e+9\n", r"midplanes = \[2, 2, 1\].*4 positive"),
    ("name: X\nkind: cube\nlink_bandwidth: 1.0\n", r"kind = 'cube' is invalid; allowed: bgq \| torus"),
    ("name: X\nkind: torus\ndims: [4, 4]\nlink_bandwidth: 1.0\nlinkbw: 3\n", r"unknown key\(s\) \['linkbw'\]"),
    ("name: X\nkind: torus\ndims: [4, 4]\nlink_bandwidth: [1.0, 2.0, 3.0]\n", r"link_bandwidth = .*2 numbers"),
    ("name: X\nkind: bgq\nmidplanes: [2, 2, 1, 1]\nlink_bandwidth: 2.0e+9\nallowed_partitions: [[3, 1, 1, 1]]\n",
     r"allowed_partitions\[0\] = \[3, 1, 1, 1\].*fits in 2x2x1x1"),
    ("name: X\nkind: torus\ndims: [4, 4]\n", r"required key 'link_bandwidth' is missing"),
])
def test_bad_machine_yaml(tmp_path, text, pattern):
    p = tmp_path / "x.yaml"
    p.write_text(text)
    with pytest.raises(M.MachineError, match=pattern):
        M.load_machine(p)


# ----------------------------------------------------------------------------------
# datasets and CLI
# ----------------------------------------------------------------------------------


def test_dataset_roundtrip(tmp_path):
    xr = pytest.importorskip("xarray")
    ds = P.partitions_dataset("Mira", P.analyse_machine("Mira"))
    path = P.write_netcdf_atomic(ds, tmp_path / "sub" / "mira.nc")
    back = xr.open_dataset(path, engine="h5netcdf").load()
    assert list(back["best_geometry"].values[:4]) == ["1x1x1x1", "2x1x1x1", "2x2x1x1", "2x2x2x1"]
    assert back["allowed_links"].sel(size=12288) == 1536
    assert float(back["speedup_best_over_allowed"].sel(size=8192)) == 2.0
    assert back["bisection_bandwidth"].attrs["units"] == "bytes/s per direction"
    assert not [f for f in path.parent.iterdir() if f.name.endswith(".tmp")]


def test_cli_compare_and_machine(tmp_path, capsys):
    xr = pytest.importorskip("xarray")
    assert cli_main(["JUQUEEN", "--compare", "JUQUEEN-54", "JUQUEEN-48", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "3x3x3x2" in out and "4608" in out
    assert "JUQUEEN-54: max speedup over JUQUEEN at equal size 1.00x" in out
    assert ("JUQUEEN-54: max speedup over JUQUEEN's smallest partition that holds the job 2.25x "
            "(P = 13824 on 14336 of JUQUEEN; tied at P = 27648; bisection ratio)" in out)
    # a maximum reached at several sizes names them all (it named the first alone)
    assert ("JUQUEEN-48: max speedup over JUQUEEN's smallest partition that holds the job 1.50x (P = 4608 on 5120 "
            "of JUQUEEN; tied at P = 9216, 18432 and 24576; bisection ratio)") in out
    nc = (tmp_path / "compare_juqueen_juqueen-54_juqueen-48" / "latest").resolve()  # <name>/<time>-<hash>.nc
    assert nc.exists() and nc.with_suffix(".png").stat().st_size > 0
    ds = xr.open_dataset(nc, engine="h5netcdf").load()
    assert float(ds["best_links"].sel(size=27648, machine="JUQUEEN-54")) == 4608
    assert cli_main(["Mira", "--size", "2048", "12288", "--no-plot", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "predicted speedup 1.33x" in out and not list((tmp_path / "mira").glob("*.png"))
    assert cli_main(["BlueWaters", "--slabs", "--no-plot", "--out", str(tmp_path)]) == 0
    assert "23x6x24" in capsys.readouterr().out and list((tmp_path / "bluewaters_slabs").glob("*.nc"))


def test_cli_errors(tmp_path, capsys):
    assert cli_main(["Nope", "--out", str(tmp_path)]) == 2
    assert "known machines" in capsys.readouterr().err
    assert cli_main(["Mira", "--size", "0", "--out", str(tmp_path)]) == 2
    assert "partition size = 0 is invalid" in capsys.readouterr().err


def test_claims_docs_partitions_juqueen54():
    """docs/partitions.md: the JUQUEEN-54 vs JUQUEEN table (best partitions, their links, JUQUEEN's smallest
    holder and the bisection ratio) and the per-node 2.00x / 0.67x of the rejected reading."""
    names = ["JUQUEEN", "JUQUEEN-54", "JUQUEEN-48"]
    cmd = "evaluator partitions JUQUEEN --compare JUQUEEN-54 JUQUEEN-48"
    doc = "docs/partitions.md"
    table = P.compare_machines(names)
    ds = P.comparison_dataset(names, table)
    for mid in (9, 18, 27, 36, 54):
        n = mid * 512
        g = table[n]["JUQUEEN-54"]
        h = int(ds["first_holding_size"].sel(size=n))
        hg = table[h]["JUQUEEN"]
        ratio = float(ds["speedup_vs_first_holding"].sel(size=n, machine="JUQUEEN-54"))
        row = (rf"\| {mid} \| {g.label} \| {g.bisection.links} \| {h // 512}: {hg.label} \| "
               rf"{hg.bisection.links} \| \*\*([0-9.]+)x\*\* \|")
        check_stated(doc, row, ratio, command=cmd)
    eq = ds["speedup_vs_first"]
    held = ds["speedup_vs_first_holding"]
    check_stated(doc, r"JUQUEEN-54: max speedup over JUQUEEN at equal size ([0-9.]+)x",
                 float(eq.sel(machine="JUQUEEN-54").max()), command=cmd)
    check_stated(doc, r"JUQUEEN-54: max speedup over JUQUEEN's smallest partition that holds the job ([0-9.]+)x",
                 float(held.sel(machine="JUQUEEN-54").max()), command=cmd)
    check_stated(doc, r"JUQUEEN-48: max speedup over JUQUEEN at equal size ([0-9.]+)x",
                 float(eq.sel(machine="JUQUEEN-48").max()), command=cmd)
    check_stated(doc, r"JUQUEEN-48: max speedup over JUQUEEN's smallest partition that holds the job ([0-9.]+)x",
                 float(held.sel(machine="JUQUEEN-48").max()), command=cmd)
    check_stated(doc, r"it gives \*\*([0-9.]+)x\*\*, not 2", float(held.sel(machine="JUQUEEN-54").max()),
                 command=cmd)
    check_stated(doc, r"(?:every other JUQUEEN-54 size: ([0-9.]+)x)",
                 float(held.sel(machine="JUQUEEN-54").min()), command=cmd)
    pn = ds["best_per_node"]
    per54 = float(pn.sel(size=54 * 512, machine="JUQUEEN-54")) / float(pn.sel(size=48 * 512, machine="JUQUEEN"))
    check_stated(doc, r"size gives ([0-9.]+)x \(54 midplanes against JUQUEEN's 48", per54, command=cmd)
    eq54 = float(eq.sel(machine="JUQUEEN-54").max())
    check_stated(doc, r"Why \"at equal size\" gives ([0-9.]+)x for JUQUEEN-54", eq54, command=cmd)
    check_stated(doc, r"is therefore ([0-9.]+)x everywhere", eq54, command=cmd)
    check_stated(doc, r"everywhere; JUQUEEN-48's ([0-9.]+)x is its 48-midplane",
                 float(eq.sel(machine="JUQUEEN-48").max()), command=cmd)
    check_stated(doc, r"never worse \(the minimum is ([0-9.]+)x\)", float(held.sel(machine="JUQUEEN-54").min()),
                 command=cmd)
    per48 = float(pn.sel(size=48 * 512, machine="JUQUEEN-48")) / float(pn.sel(size=48 * 512, machine="JUQUEEN"))
    check_stated(doc, r"per node\) and ([0-9.]+)x, but also", per48, command=cmd)
    per9 = float(pn.sel(size=9 * 512, machine="JUQUEEN-54")) / float(pn.sel(size=8 * 512, machine="JUQUEEN"))
    check_stated(doc, r"but also ([0-9.]+)x at 9 and 18 midplanes", per9, command=cmd)


def test_compare_refuses_a_size_no_machine_has(capsys):
    """`--compare --size 4609` printed a row of 9 midplanes with no partition and wrote it; one machine's analysis
    refuses the size, and so does the comparison where no machine has it."""
    for size, says in (("4609", "is not a multiple of 512"), ("99999999999999", "is larger than the machine")):
        assert cli_main(["JUQUEEN", "--compare", "JUQUEEN-48", "--size", size, "--no-plot"]) == 2
        assert says in capsys.readouterr().err


def test_pairing_compares_bisection_bandwidth_and_says_where_nothing_differs(tmp_path, capsys):
    """Blue Waters' 16x16x2 and 16x2x16 cut as many links but of unequal bandwidth: the pairing skipped the size
    (equal link counts) and printed a bare header; a size with nothing to compare now says so."""
    assert cli_main(["BlueWaters", "--pairing", "--size", "1024", "--out", str(tmp_path)]) == 0
    row = next(x.split() for x in capsys.readouterr().out.splitlines() if x.strip().startswith("1024"))
    assert row[1:6] == ["worst", "vs", "best", "16x16x2", "16x2x16"]
    assert float(row[-2]) == pytest.approx(2.0, rel=1e-3) and float(row[-1]) == pytest.approx(float(row[-2]), rel=1e-3)
    assert cli_main(["mira", "--pairing", "--size", "1024", "--out", str(tmp_path)]) == 0
    assert "nothing to compare at 1024 nodes" in capsys.readouterr().out


def test_options_the_analysis_would_ignore_are_refused(capsys):
    for argv, says in ((["mira", "--tie", "positive", "--size", "1024"], "--tie with --pairing only"),
                       (["JUQUEEN", "--compare", "JUQUEEN-48", "--slabs"], "not with --compare"),
                       (["BlueWaters", "--slabs", "--pairing", "--size", "512"], "not with --pairing")):
        assert cli_main([*argv, "--no-plot"]) == 2
        assert says in capsys.readouterr().err


def test_uneven_links_show_the_bisection_bandwidth_that_ranks_and_no_speedup_prints_a_dash(tmp_path, capsys):
    """Titan's Y links have half the bandwidth of X and Z: its best 9,600-node geometry has fewer bisection links
    (400) than its worst (600), so a summary in links alone read upside down. Where the links differ the summary
    gives the bandwidth that ranks them, checked here against the geometries' own; Mira's 3 midplanes, a size its
    allowed list lacks, printed its speedup as 'nanx'."""
    assert cli_main(["Titan", "--size", "9600", "--no-plot", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    a = P.analyse_size(M.load_machine("Titan"), 9600)
    best, worst = a.best.bisection, a.worst.bisection
    assert best.bandwidth > worst.bandwidth and best.links < worst.links  # (why links alone mislead here)
    assert (f"best {a.best.label} ({best.links} links, {best.bandwidth / 1e9:.4g} GB/s), worst {a.worst.label} "
            f"({worst.links} links, {worst.bandwidth / 1e9:.4g} GB/s)") in out, out
    assert "BW = bisection bandwidth [TB/s]" in out and "BW = bisection links" not in out
    assert cli_main(["Mira", "--size", "1536", "--no-plot", "--out", str(tmp_path)]) == 0
    row = [ln for ln in capsys.readouterr().out.splitlines() if ln.strip().startswith("1536")][-1]
    assert row.split()[-1] == "-" and "nan" not in row, row
