"""KaHIP's process mapping as a reference of the mapping bench (:mod:`evaluator.bench.kahip`, issue 37).

The METIS writer is checked against the traffic's own symmetrised bytes (a dense sum written here); the machine
hierarchy against the topology (every slot once, and the level distances against the topology's own router hop
distances); KaHIP's mappings (skipped only where ``.venv/kahip`` is absent: ``make setup`` installs it) against the
capacity and against :func:`evaluator.evaluate` of the same placement; the bench rows with and without KaHIP.
"""

from __future__ import annotations

import itertools
import math
import os

import numpy as np
import pytest

from evaluator import evaluate
from evaluator import placement as P
from evaluator import topology as T
from evaluator import traffic as TR
from evaluator.bench import kahip
from evaluator.bench import mapping as BM

try:
    from tests.reference import dense_symmetric
except ImportError:  # pragma: no cover
    from reference import dense_symmetric

needs_kahip = pytest.mark.skipif(not kahip.available(),
                                 reason="KaHIP's kaffpa is not installed (.venv/kahip absent: run `make setup`)")


def test_metis_round_trip(tmp_path):
    rng = np.random.default_rng(7)
    n = 30
    s, d = rng.integers(0, n, 200), rng.integers(0, n, 200)
    tr = TR.from_flows(n, s, d, rng.uniform(1e3, 3e6, 200))  # repeated pairs, self flows, one-way flows
    path = os.path.join(tmp_path, "g.graph")
    unit = kahip.write_metis(path, tr, n_vertices=n + 5)  # 5 isolated padding vertices
    nv, u, v, w = kahip.read_metis(path)
    S = dense_symmetric(tr)
    eu, ev = np.nonzero(S)
    assert nv == n + 5
    np.testing.assert_array_equal(u, eu)
    np.testing.assert_array_equal(v, ev)
    assert (w >= 1).all() and w.max() <= 65535
    np.testing.assert_allclose(w * unit, S[eu, ev], rtol=0, atol=unit / 2 + 1e-9 * S.max())
    with open(path) as f:
        rows = f.read().split("\n")
    assert rows[0] == f"{n + 5} {eu.size} 1" and all(r == "" for r in rows[1 + n:1 + n + 5])


def _lca_level(sizes, a, b) -> int:
    """Index (lowest first) of the level at which PEs ``a`` and ``b`` first share a group."""
    level = -1
    for j, s in enumerate(sizes):
        if a % s != b % s:
            level = j
        a, b = a // s, b // s
    return level


@pytest.mark.parametrize("topo,nodes,tpn", [
    (T.torus((4, 4, 2)), None, 2),
    (T.torus((8, 4, 4), nodes_per_router=2), np.arange(128), 1),  # the box 2x4x4 at the origin, 2 nodes each
    (T.dragonfly(2, 4, 2), np.arange(40), 2),  # the first 5 of 9 groups
    (T.fat_tree([4, 8], [1, 4]), None, 1),
], ids=["torus tpn 2", "torus box, 2 nodes per router", "dragonfly 5 groups", "fat tree"])
def test_hierarchy_against_topology(topo, nodes, tpn):
    """Every available slot is one PE; and every level's distance is what the topology says: on the tree machines
    the links of the route between any two PEs whose lowest common group is that level, on the torus 4 (2 + the
    mean router hops over those PE pairs), the hops taken from the topology's router distances."""
    avail = np.arange(topo.n_nodes) if nodes is None else nodes
    h = kahip.machine_hierarchy(topo, avail, tpn)
    assert h.k == avail.size * tpn == math.prod(h.sizes)
    np.testing.assert_array_equal(np.bincount(h.pe_node, minlength=topo.n_nodes)[avail], tpn)
    D = np.asarray(topo.router_distances())
    router = np.asarray(topo.node_router)[h.pe_node]
    hops = {j: [] for j in range(len(h.sizes))}
    for a, b in itertools.combinations(range(h.k), 2):
        lvl = _lca_level(h.sizes, a, b)
        same_node = h.pe_node[a] == h.pe_node[b]
        hops[lvl].append(-1.0 if same_node else float(D[router[a], router[b]]))
    for j, dist in enumerate(h.distances):
        x = np.array(hops[j])
        if (x < 0).all():
            assert dist == 1  # two slots of one node
            continue
        assert (x >= 0).all()  # a level above the node never holds two slots of one node
        if topo.kind == "torus":
            assert dist == round(kahip.SCALE * (2 + x.mean()))
        elif topo.kind == "dragonfly":
            # same router: 0 router hops; same group: 1; other groups: at most 3 (local, global, local)
            assert dist == kahip.SCALE * (2 + x.max()) and (x.max() == 3 or x.max() <= 1)
        else:  # fat tree: up to the lowest common switch and down
            np.testing.assert_array_equal(x, x[0])
            assert dist == kahip.SCALE * (2 + x[0])


def test_irregular_nodes_are_refused():
    with pytest.raises(kahip.KahipUnsupported, match="not a product"):
        kahip.machine_hierarchy(T.dragonfly(2, 4, 2), np.arange(37))
    with pytest.raises(kahip.KahipUnsupported, match="contiguous"):
        kahip.machine_hierarchy(T.torus((4, 4)), np.array([0, 1, 2, 3, 8, 9, 10, 11]))


def test_absent_binary_is_named(monkeypatch):
    monkeypatch.setattr(kahip, "_venv_kaffpa", lambda: "/nonexistent/kaffpa")
    monkeypatch.delenv("KAHIP_KAFFPA", raising=False)
    monkeypatch.setenv("PATH", "/nonexistent")
    assert not kahip.available()
    with pytest.raises(kahip.KahipError, match="kaffpa"):
        kahip.kahip_mapping(T.torus((2, 2)), TR.stencil([4, 4], [2, 2]))


@needs_kahip
@pytest.mark.parametrize("topo,routing,tpn,nodes", [
    (T.torus((4, 4, 4)), "dor", 1, None),  # 64 slots: a power of two, PEs of 8 slots
    (T.torus((4, 4, 4)), "dor", 2, np.arange(32)),  # the box 2x4x4
    (T.dragonfly(2, 4, 2), "minimal", 1, None),  # 72 slots for 64 tasks: 8 padding vertices
    (T.fat_tree([4, 8], [1, 4]), "dmodk", 2, None),
], ids=["torus", "torus box tpn 2", "dragonfly", "fat tree tpn 2"])
def test_kahip_mapping_fits_and_evaluates(topo, routing, tpn, nodes):
    tr = TR.stencil([16, 16, 16], [4, 4, 4])
    m = kahip.kahip_mapping(topo, tr, nodes=nodes, tasks_per_node=tpn)
    tn = m.task_node
    assert tn.shape == (64,)
    allowed = np.arange(topo.n_nodes) if nodes is None else nodes
    assert set(tn.tolist()) <= set(allowed.tolist())
    assert np.bincount(tn, minlength=topo.n_nodes).max() <= tpn
    assert m.padded == allowed.size * tpn - 64 and m.binary.endswith("kaffpa")
    again = kahip.kahip_mapping(topo, tr, nodes=nodes, tasks_per_node=tpn)
    np.testing.assert_array_equal(again.task_node, tn)  # deterministic (fixed seed)
    # the bench's figure is the project's evaluation of that placement
    row = kahip.MAPPER.row(topo, routing, tr, nodes=nodes, tasks_per_node=tpn)
    ds = evaluate(topo, tr, P.explicit(topo, tn, "kahip"), routing)
    np.testing.assert_allclose(row["kahip"], float(ds["completion_time"]), rtol=1e-12)
    assert row["kahip_target"] == m.target


@needs_kahip
def test_kahip_one_level():
    """One node of each of 33 groups: a hierarchy of one level (33, not a power of two), partitioned without
    --enable_mapping."""
    topo = T.dragonfly(2, 4, 8)
    nodes = np.arange(0, topo.n_nodes, 8)
    tr = TR.stencil([16, 16], [4, 8])
    assert kahip.machine_hierarchy(topo, nodes).sizes == [33]
    m = kahip.kahip_mapping(topo, tr, nodes=nodes)
    assert set(m.task_node.tolist()) <= set(nodes.tolist()) and np.unique(m.task_node).size == 32


def _quality_record(**extra):
    return {"ranks": 64, "pattern": "p", "network": "n", "budget": 5.0, "time": 1e-3, "partition": 2e-3,
            "best_named": 1.5e-3, "best_named_name": "linear", "at": {"5": 1e-3}, "moves": 10, "search_s": 5.0,
            "bound": 5e-4, "bound_kind": "b", "evaluator": "e", "starts_s": 0.1, "scotch": 1.2e-3,
            "scotch_target": "t", "scotch_repaired": 0, "scotch_s": 0.1, **extra}


def test_bench_rows_with_and_without_kahip():
    rate = {"pattern": "p", "network": "n", "moves": 8, "seconds": 1.0, "moves_per_s": 8.0, "ref_points": 2,
            "ref_seconds": 1.0, "ref_per_s": 2.0, "check": 0.0, "evaluator": "e"}
    data = {"rates": [rate], "peak_mb": 1.0, "device": "cpu",
            "quality": [_quality_record(), _quality_record(kahip=1.25e-3, kahip_target="k", kahip_repaired=2,
                                                           kahip_s=0.2),
                        _quality_record(kahip_absent="KaHIP absent (no .venv/kahip/bin/kaffpa)")]}
    _, old, with_k, absent = BM.mapping_rows(data, lambda d: d)
    assert "KaHIP" not in old["check"] and "KaHIP" not in old["note"]  # an older record
    assert old["check"] == "-50.0% vs METIS, -33.3% vs named, -16.7% vs Scotch"
    assert with_k["check"].endswith("-20.0% vs KaHIP") and "KaHIP (kaffpa --enable_mapping onto k, 2 task" in \
        with_k["note"]
    assert absent["check"].endswith(", KaHIP absent")
    held = {**_quality_record(), "tasks_per_node": 1, "job_nodes": 64, "job_box": "4x4x4", "metis_note": "",
            "best_start": "linear"}
    v_old = BM.heldout_verdict(held)
    assert v_old["ref"] == 1.2e-3 and v_old["not_worse"] is True
    v_k = BM.heldout_verdict({**held, "kahip": 1.1e-3})
    assert v_k["ref"] == 1.1e-3 and v_k["not_worse"] is True and abs(v_k["gain"] - (1 - 1e-3 / 1.1e-3)) < 1e-12
    assert BM.heldout_verdict({**held, "kahip": 0.9e-3})["not_worse"] is False
    row = BM._heldout_row({**held, "kahip": 1.1e-3}, 1.0, "cpu")
    assert "vs best of Scotch, KaHIP and named" in row["check"] and "KaHIP 1100 us" in row["note"]
    assert "vs best of Scotch and named" in BM._heldout_row(held, 1.0, "cpu")["check"]


def test_heldout_verdict_counts_a_rows_certificate():
    """A held-out row's certificate (HELDOUT_CERTIFICATES) raises the bound the verdict uses: time 1,100 us (8 %
    below the ref), ref (Scotch) 1,200 us, the search's bound 500 us leaves room for 15% (1,020 us), a certificate
    of 1,100 us does not; one below the search's bound or NaN changes nothing."""
    held = {**_quality_record(time=1.1e-3), "tasks_per_node": 4, "job_nodes": 256, "job_box": "16x4x4",
            "metis_note": "", "best_start": "linear"}
    plain = BM.heldout_verdict(held)
    assert plain["room"] is True and plain["holds"] is False and plain["bound"] == 5e-4
    cert = {**held, "certificate": 1.1e-3, "certificate_cmd": "python -m evaluator.bench.prism_pencil_bound"}
    v = BM.heldout_verdict(cert)
    assert v["bound"] == 1.1e-3 and v["room"] is False and v["holds"] is True
    assert BM.heldout_verdict({**held, "certificate": 4e-4})["bound"] == 5e-4
    assert BM.heldout_verdict({**held, "certificate": float("nan")})["room"] is True
    row = BM._heldout_row(cert, 1.0, "cpu")
    assert "done-when holds" in row["check"]
    assert "bound 500 us (b; certificate 1100 us, python -m evaluator.bench.prism_pencil_bound; no room for 15%)" \
        in row["note"]
    assert "certificate" not in BM._heldout_row(held, 1.0, "cpu")["note"]
