"""Scotch's mapping as the mapping bench's reference (:mod:`evaluator.bench.scotch`, issue 37).

The graph writer is checked against the traffic's own symmetrised bytes (a dense sum written here); the repair
against its contract; Scotch's mappings (skipped where ``scotch_gmap`` is absent) against the capacity, the
certified mapping bound and an independent per-flow walk of the same placement (``tests/reference.py``).
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from evaluator import placement as P
from evaluator import routing as RT
from evaluator import topology as T
from evaluator import traffic as TR
from evaluator.bench import scotch
from evaluator.evaluation import evaluate_batch
from evaluator.mapping.bound import mapping_bound

try:
    from tests.reference import dense_symmetric, reference_link_loads
except ImportError:  # pragma: no cover
    from reference import dense_symmetric, reference_link_loads

needs_scotch = pytest.mark.skipif(not scotch.available(),
                                  reason="Scotch's scotch_gmap (or gmap) is not on PATH (apt-get install scotch)")


def _asymmetric_traffic():
    rng = np.random.default_rng(5)
    n = 40
    s = rng.integers(0, n, 300)
    d = rng.integers(0, n, 300)
    b = rng.uniform(1e3, 3e6, 300)  # repeated pairs, self flows and one-way flows included
    return TR.from_flows(n, s, d, b)


@pytest.mark.parametrize("make", [_asymmetric_traffic,
                                  lambda: TR.stencil([16, 16, 16], [4, 2, 4], exchange="per_dimension")],
                         ids=["random flows", "phased stencil"])
def test_grf_round_trip(tmp_path, make):
    tr = make()
    path = os.path.join(tmp_path, "g.grf")
    unit = scotch.write_grf(path, tr)
    n, u, v, w, velo = scotch.read_grf(path)
    S = dense_symmetric(tr)
    eu, ev = np.nonzero(S)
    assert n == tr.n_tasks and velo is None
    np.testing.assert_array_equal(u, eu)
    np.testing.assert_array_equal(v, ev)
    assert (w >= 1).all() and w.max() <= 65535
    np.testing.assert_allclose(w * unit, S[eu, ev], rtol=0, atol=unit / 2 + 1e-9 * S.max())
    # the graph function itself gives the exact (unscaled) bytes
    n2, u2, v2, b2 = scotch.traffic_graph(tr)
    np.testing.assert_array_equal(u2, eu)
    np.testing.assert_allclose(b2, S[eu, ev], rtol=1e-12)


def test_read_map_and_repair(tmp_path):
    path = os.path.join(tmp_path, "m.map")
    with open(path, "w") as f:
        f.write("4\n2 7\n0 5\n3 5\n1 9\n")
    np.testing.assert_array_equal(scotch.read_map(path, 4), [5, 9, 7, 5])
    with open(path, "w") as f:
        f.write("3\n0 1\n0 2\n1 1\n")
    with pytest.raises(scotch.ScotchError, match="not every task"):
        scotch.read_map(path, 3)
    topo = T.torus((4, 4))
    nodes = np.arange(0, 16, 2)  # half the nodes available
    tn = np.array([0, 0, 0, 2, 2, 3, 4, 4])  # node 0 over capacity 2, node 3 not available
    out, moved = scotch.repair(topo, tn, nodes, 2)
    counts = np.bincount(out, minlength=16)
    assert counts.max() <= 2 and set(out.tolist()) <= set(nodes.tolist())
    assert moved == 2  # task 2 (node 0's excess) and task 5 (node 3)
    np.testing.assert_array_equal(out[[0, 1, 3, 4, 6, 7]], tn[[0, 1, 3, 4, 6, 7]])
    again, _ = scotch.repair(topo, tn, nodes, 2)
    np.testing.assert_array_equal(out, again)  # deterministic


def test_absent_binary_is_named(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    assert not scotch.available()
    with pytest.raises(scotch.ScotchError, match="scotch_gmap"):
        scotch.scotch_mapping(T.torus((2, 2)), TR.stencil([4, 4], [2, 2]))


@needs_scotch
@pytest.mark.parametrize("topo,tpn,nodes", [
    (T.torus((4, 4, 2)), 2, None),
    (T.torus((4, 4, 4), nodes_per_router=2), 1, np.arange(0, 128, 2)),  # one node of every router's two
    (T.torus((4, 4, 8), wrap=(True, False, True)), 1, None),  # mixed wrap: the amk_grf graph target
    (T.dragonfly(2, 4, 2), 2, np.arange(40)),
    (T.fat_tree([4, 8], [1, 4]), 2, None),
    (T.fat_tree([8, 8], [1, 4]), 1, np.arange(64)[::-1]),
], ids=["torus tpn 2", "torus 2 nodes/router, subset", "torus mixed wrap", "dragonfly tpn 2 subset",
        "fat tree tpn 2", "fat tree all nodes"])
def test_scotch_mapping_fits(topo, tpn, nodes):
    tr = TR.stencil([16, 16, 16], [4, 4, 4])
    m = scotch.scotch_mapping(topo, tr, nodes=nodes, tasks_per_node=tpn)
    tn = m.task_node
    assert tn.shape == (64,)
    allowed = np.arange(topo.n_nodes) if nodes is None else np.asarray(nodes)
    assert set(tn.tolist()) <= set(allowed.tolist())
    assert np.bincount(tn, minlength=topo.n_nodes).max() <= tpn
    assert m.repaired >= 0 and m.binary.endswith(scotch.GMAP_BINARIES)


@needs_scotch
def test_scotch_on_torus_bounded_and_exact():
    """64-rank 3-D stencil on a 4x4x4 torus, DOR: Scotch's mapping evaluated by the project's model is no faster
    than the certified mapping bound and equals a per-flow walk of the same placement."""
    topo = T.torus((4, 4, 4))
    tr = TR.stencil([32, 32, 32], [4, 4, 4])
    rt = RT.dor()
    m = scotch.scotch_mapping(topo, tr)
    assert "torusXD" in m.target
    t = float(evaluate_batch(topo, rt, tr, P.explicit(topo, m.task_node, "scotch")).metrics["completion_time"][0])
    bound = mapping_bound(topo, tr, rt)
    assert t >= bound.value * (1 - 1e-12)
    loads = reference_link_loads(topo, zip(tr.src, tr.dst, tr.nbytes), m.task_node,
                                 {"kind": "dor", "order": "as_given", "tie": "split"})
    np.testing.assert_allclose(t, float(np.max(loads / np.asarray(topo.capacity))), rtol=1e-12)
