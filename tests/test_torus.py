"""Torus closed forms: Dally & Towles uniform-traffic channel load, hop counts."""

import itertools

import networkx as nx
import numpy as np
import pytest

import evaluator as ev
from evaluator import placement as P
from evaluator import traffic as T
from tests.helpers import TOL


@pytest.mark.parametrize("k,n", [(4, 2), (6, 2), (8, 2), (4, 3), (2, 3)])
def test_uniform_max_channel_load_is_k_over_8(k, n):
    """Even k-ary n-cube, DOR with split ties: max channel load k/8 per unit injected per node."""
    topo = ev.torus([k] * n)
    N = topo.n_nodes
    b = 3.0  # bytes per (src, dst) pair, self included -> N*b injected per node
    ds = ev.evaluate(topo, T.all_to_all(N, b), P.linear(topo, N), ev.dor())
    router = ds.link_load.values[: topo.n_router_links]
    if k == 2:
        # A size-2 ring is one link per direction: every pair at distance 1 uses it fully.
        expected = (N * b) / 2
    else:
        expected = k / 8 * (N * b)
    assert router.max() == pytest.approx(expected, rel=TOL["rel"])
    # Uniform traffic on a torus loads every channel equally.
    assert router.min() == pytest.approx(expected, rel=TOL["rel"])


def test_mean_hops_equals_bfs_average():
    topo = ev.torus([5, 4, 3], wrap=[True, True, False])
    N = topo.n_nodes
    ds = ev.evaluate(topo, T.all_to_all(N, 1.0), P.linear(topo, N), ev.dor("longest_first"))
    G = nx.DiGraph()
    G.add_edges_from((s, d) for s, d, _ in topo.router_edges())
    dist = dict(nx.all_pairs_shortest_path_length(G))
    mean = np.mean([dist[s][d] for s, d in itertools.permutations(range(N), 2)])
    assert float(ds.mean_hops) == pytest.approx(mean, rel=TOL["rel"])


def test_tie_positive_loads_positive_direction_only():
    topo = ev.torus([4])
    tr = T.from_flows(4, [0], [2], [8.0])
    split = ev.evaluate(topo, tr, P.linear(topo, 4), ev.dor(tie="split")).link_load.values
    pos = ev.evaluate(topo, tr, P.linear(topo, 4), ev.dor(tie="positive")).link_load.values
    n = topo.n_router_links
    assert split[:n].max() == 4.0 and np.count_nonzero(split[:n]) == 4
    assert pos[:n].max() == 8.0 and np.count_nonzero(pos[:n]) == 2
    plus = topo.neighbor_link[:, 0, 0]
    assert set(np.nonzero(pos[:n])[0]) == {plus[0], plus[1]}


def test_bgq_midplane_shape_and_bisection_pairing():
    topo = ev.bgq_partition([1, 1, 1, 1])
    assert topo.dims == (4, 4, 4, 4, 2) and topo.n_nodes == 512
    tr = T.bisection_pairing(topo, 2e9)
    # furthest node is the antipode: hop distance 2+2+2+2+1 = 9, a perfect pairing
    partner = np.empty(512, int)
    partner[tr.src] = tr.dst
    assert (partner[partner] == np.arange(512)).all()
    ds = ev.evaluate(topo, tr, P.linear(topo, 512), ev.dor("longest_first"))
    assert float(ds.mean_hops) == pytest.approx(9.0)
    # conservation: router-link bytes = bytes x hops
    assert ds.link_load.values[: topo.n_router_links].sum() == pytest.approx(512 * 2e9 * 9)


def test_gemini_y_links_half_bandwidth():
    topo = ev.gemini([4, 4, 4])
    caps = {c: set(topo.capacity[topo.link_class == topo.class_id(c)]) for c in ("torus-dim0", "torus-dim1", "torus-dim2")}
    assert caps["torus-dim1"] == {ev.topology.GEMINI_XZ_BANDWIDTH / 2}
    assert caps["torus-dim0"] == caps["torus-dim2"] == {ev.topology.GEMINI_XZ_BANDWIDTH}
    assert topo.nodes_per_router == 2 and topo.n_nodes == 128


def test_router_and_node_id_conventions():
    topo = ev.torus([3, 4, 5], nodes_per_router=2)
    coords = np.stack(np.unravel_index(np.arange(60), (3, 4, 5)), axis=1)
    np.testing.assert_array_equal(topo.router_coords, coords)
    np.testing.assert_array_equal(topo.node_router, np.arange(120) // 2)
    df = ev.dragonfly(2, 4, 2)
    np.testing.assert_array_equal(df.router_coords[:, 0] * 4 + df.router_coords[:, 1], np.arange(df.n_routers))


def _crossing_by_walk(n, wrap, direction, tie):
    """Brute force: walk every 1-D route hop by hop (independent of the vectorised tensor)."""
    M = np.zeros((n, n, n))
    for s in range(n):
        for t in range(n):
            if s == t:
                continue
            if wrap:
                fwd, bwd = (t - s) % n, n - (t - s) % n
                runs = ([(+1, 1, 1.0)] if n == 2 else [(+1, fwd, 1.0)] if fwd < bwd else [(-1, bwd, 1.0)]
                        if bwd < fwd else [(+1, fwd, 0.5), (-1, bwd, 0.5)] if tie == "split" else [(+1, fwd, 1.0)])
            else:
                runs = [(+1 if t > s else -1, abs(t - s), 1.0)]
            for step, hops, prob in runs:
                if (step == +1) == (direction == 0):
                    for j in range(hops):
                        M[(s + step * j) % n, s, t] += prob
    return M


@pytest.mark.parametrize("n", list(range(1, 13)))
def test_ring_crossing_tensor_matches_a_hop_by_hop_walk(n):
    from evaluator.routing._dor import _crossing_tensor

    for wrap in (True, False):
        for direction in (0, 1):
            for tie in ("split", "positive"):
                np.testing.assert_array_equal(_crossing_tensor(n, wrap, direction, tie),
                                              _crossing_by_walk(n, wrap, direction, tie))
