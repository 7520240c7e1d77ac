"""Grid-embedding starts of the mapping search (evaluator.mapping._embeddings).

Every embedding is checked against the job's contract slot by slot; the quality claims against references
computed here: the torus hop count of every flow from the routers' coordinates, and the completion time of a
mapping whose every flow is one hop from a per-link sum of its flows (injection, the one router link,
ejection), which :func:`evaluator.evaluate` must match and :func:`evaluator.mapping.bound.mapping_bound` must
not exceed.
"""

from __future__ import annotations


import numpy as np
import pytest

from evaluator.evaluation import evaluate_batch
from evaluator.mapping._embeddings import MAX_EMBEDDINGS, grid_embeddings
from evaluator.mapping._starts import starting_points
from evaluator.mapping.bound import mapping_bound
from evaluator.placement import explicit
from evaluator.routing import dor
from evaluator.topology import dragonfly, torus

from helpers import RTOL
from test_mapping_starts import stencil_job  # the starts' tests' stencil job (its traffic and config)


def check_valid(embs, topo, nodes, tpn, n):
    """Each embedding a mapping of n tasks onto available nodes, at most tpn each; distinct names and maps."""
    allowed = np.zeros(topo.n_nodes, dtype=bool)
    allowed[nodes] = True
    names = [name for name, _ in embs]
    assert len(set(names)) == len(names)
    for name, tn in embs:
        assert tn.dtype == np.int64 and tn.shape == (n,), name
        assert allowed[tn].all(), name
        assert np.bincount(tn, minlength=topo.n_nodes).max() <= tpn, name
        assert "grid embedding" in name
    for a in range(len(embs)):
        for b in range(a):
            assert not np.array_equal(embs[a][1], embs[b][1])


def flow_hops(topo, traffic, task_node):
    """Torus hops of every flow (src != dst), from the routers' coordinates."""
    ph = traffic.to_flows().phases[0]
    s, d = np.asarray(ph.src), np.asarray(ph.dst)
    c = np.asarray(topo.router_coords)[np.asarray(topo.node_router)[task_node]]
    diff = np.abs(c[s] - c[d])
    dims = np.asarray(topo.dims)
    return np.minimum(diff, dims - diff).sum(axis=1)


def one_hop_time(topo, traffic, task_node):
    """Completion time of a mapping whose flows are all at most one hop: the busiest link's bytes over its
    capacity, each flow on its source's injection link, the one router link and its destination's ejection."""
    ph = traffic.to_flows().phases[0]
    links = {(int(a), int(b)): i for i, (a, b) in
             enumerate(zip(topo.link_src[:topo.n_router_links], topo.link_dst[:topo.n_router_links]))}
    load = np.zeros(topo.n_links)
    router = np.asarray(topo.node_router)
    for s, d, b in zip(np.asarray(ph.src), np.asarray(ph.dst), np.asarray(ph.nbytes)):
        ns, nd = int(task_node[s]), int(task_node[d])
        if ns == nd:
            continue
        load[topo.injection_link(ns)] += b
        load[topo.ejection_link(nd)] += b
        if router[ns] != router[nd]:
            load[links[(int(router[ns]), int(router[nd]))]] += b
    return float((load / np.asarray(topo.capacity)).max())


@pytest.mark.parametrize("beta", [[4, 4, 4], [2, 8, 4], [8, 8], [8, 4, 2], [64]])
def test_some_embedding_is_nearest_neighbour(beta):
    """A 64-task stencil of any grid shape on a 4x4x4 torus: some embedding puts every flow one hop apart
    (a 1-D ring of 64 needs the 3-digit fold); its time is the one-hop reference and the bound's below it."""
    topo = torus([4, 4, 4])
    traffic, cfg = stencil_job(beta)
    nodes = np.arange(topo.n_nodes)
    embs, why = grid_embeddings(topo, traffic, beta, nodes, 1)
    assert why is None and 0 < len(embs) <= MAX_EMBEDDINGS
    check_valid(embs, topo, nodes, 1, 64)
    best = [(name, tn) for name, tn in embs if flow_hops(topo, traffic, tn).max() == 1]
    assert best, [name for name, _ in embs]
    assert embs[0][0] == best[0][0]  # the hop-bytes estimate ranks a one-hop embedding first
    name, tn = best[0]
    res = evaluate_batch(topo, dor(), traffic, explicit(topo, tn, name))
    t = float(res.metrics["completion_time"][0])
    assert t == pytest.approx(one_hop_time(topo, traffic, tn), rel=RTOL)
    assert mapping_bound(topo, traffic, dor()).value <= t * (1 + RTOL)
    if len(beta) > 1 and beta != [4, 4, 4]:
        assert name.startswith("folded grid embedding")


def test_ring_folds_into_a_2d_torus():
    """A ring of 16 tasks on a 4x4 torus: the folded embedding keeps every ring neighbour one hop away;
    the block (unfolded) one jumps at every row end."""
    topo = torus([4, 4])
    traffic, _ = stencil_job([16])
    embs, why = grid_embeddings(topo, traffic, [16], np.arange(16), 1)
    assert why is None
    check_valid(embs, topo, np.arange(16), 1, 16)
    by_name = dict(embs)
    folded = by_name["folded grid embedding 16 -> torus dims (0(4)+1(4))"]
    assert (flow_hops(topo, traffic, folded) == 1).all()
    # the snake by hand: task x in row x // 4 of torus dim 1, along torus dim 0, reversed on odd rows
    want = [4 * (x % 4 if (x // 4) % 2 == 0 else 3 - x % 4) + x // 4 for x in range(16)]
    assert folded.tolist() == want
    block = by_name["grid embedding 16 -> torus dims (0(4)+1(4))"]
    assert flow_hops(topo, traffic, block).max() == 2


def test_several_tasks_and_nodes_per_router():
    """2 nodes per router, 2 tasks per node: every router holds a 2x2 (or 4x1) sub-box; each embedding fills
    every slot of the available nodes exactly once."""
    topo = torus([4, 4, 2], nodes_per_router=2)
    traffic, _ = stencil_job([8, 8, 2])
    nodes = np.arange(topo.n_nodes)
    embs, why = grid_embeddings(topo, traffic, [8, 8, 2], nodes, 2)
    assert why is None and embs
    check_valid(embs, topo, nodes, 2, 128)
    for name, tn in embs:
        assert (np.bincount(tn, minlength=topo.n_nodes) == 2).all(), name
    assert any("per router" in name for name, _ in embs)


def test_part_of_the_machine():
    """32 tasks on the lower half (z < 2) of a 4x4x4 torus: embeddings on a 4x4x2 box of those routers."""
    topo = torus([4, 4, 4])
    nodes = np.flatnonzero(np.asarray(topo.router_coords)[:, 2] < 2)
    traffic, cfg = stencil_job([4, 4, 2])
    embs, why = grid_embeddings(topo, traffic, [4, 4, 2], nodes, 1)
    assert why is None and embs
    check_valid(embs, topo, nodes, 1, 32)
    assert all("on a 4x4x2 box" in name for name, _ in embs)


@pytest.mark.parametrize("case", ["grid product", "too few slots", "scattered nodes", "no grid", "not a torus"])
def test_no_embedding_and_no_error(case):
    topo = torus([4, 4])
    traffic, _ = stencil_job([4, 4])
    grid, nodes, tpn = [4, 4], np.arange(16), 1
    if case == "grid product":
        grid = [4, 2]
    elif case == "too few slots":
        nodes = np.arange(8)
    elif case == "scattered nodes":
        nodes = np.arange(0, 32, 2)
        topo = torus([4, 8])
    elif case == "no grid":
        grid = None
    else:
        topo = dragonfly(2, 4, 2, 9)
    embs, why = grid_embeddings(topo, traffic, grid, nodes, tpn)
    assert embs == [] and isinstance(why, str) and why


def test_starts_include_embeddings_and_stay_valid():
    """Through starting_points: the embeddings follow the named placements, deduplicated, valid; a grid
    already covered (the identity on a cube) is not repeated."""
    topo = torus([4, 4, 4])
    traffic, cfg = stencil_job([2, 8, 4])
    nodes = np.arange(topo.n_nodes)
    starts, skipped = starting_points(topo, traffic, nodes, 1, traffic_cfg=cfg)
    emb = [(s.name, s.task_node) for s in starts if "grid embedding" in s.name]
    assert 0 < len(emb) <= MAX_EMBEDDINGS
    check_valid(emb, topo, nodes, 1, 64)
    keys = [s.task_node.tobytes() for s in starts]
    assert len(set(keys)) == len(keys)
    assert "grid embeddings" not in skipped
    # the identity embedding of a 4x4x4 grid is 'linear': not repeated
    traffic, cfg = stencil_job([4, 4, 4])
    starts, skipped = starting_points(topo, traffic, nodes, 1, traffic_cfg=cfg)
    assert not any(s.name == "grid embedding 4x4x4 -> torus dims (0,1,2)" for s in starts)
    # no grid: one reason, no error
    starts, skipped = starting_points(topo, traffic, nodes, 1)
    assert "grid embeddings" in skipped and not any("grid embedding" in s.name for s in starts)
