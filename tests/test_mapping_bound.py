"""The mapping search's lower bound (evaluator.mapping.bound: mapping_bound).

Certified: on small networks of every family (torus with DOR, Dragonfly minimal and Valiant, fat tree D-mod-k),
one and two tasks per node, every mapping of the job onto the nodes is evaluated by the batched kernel
(:func:`evaluator.evaluate_batch`) and the bound is at most the fastest; where the network binds (node links
faster than router links), the bound is above the node-link bound of before and is what binds. The routing's
route lengths are checked against the torus distance (a DOR route is a shortest one) and the bench's cases
against the mapping the search finds.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from evaluator.evaluation import evaluate_batch
from evaluator.mapping import search_mapping
from evaluator.mapping.bound import _router_distances, endpoint_bound, mapping_bound, task_node_bound
from evaluator.placement import explicit
from evaluator.routing import dor
from evaluator.topology import dragonfly, fat_tree, torus
from evaluator.traffic import from_flows, phased
from helpers import TOL

REL = TOL["rel"]


def random_flows(n, m, seed, lo=1e5, hi=1e6):
    rng = np.random.default_rng(seed)
    src = rng.integers(0, n, m)
    dst = (src + 1 + rng.integers(0, n - 1, m)) % n
    return from_flows(n, src, dst, rng.uniform(lo, hi, m))


def every_mapping(nodes, n_tasks, tpn):
    """Every map of ``n_tasks`` tasks onto ``nodes`` with at most ``tpn`` tasks per node, ``[map, task]``."""
    nodes = np.asarray(nodes)
    if tpn == 1:
        return nodes[np.array(list(itertools.permutations(range(nodes.size), n_tasks)))]
    idx = np.array(list(itertools.product(range(nodes.size), repeat=n_tasks)))
    counts = np.stack([(idx == k).sum(axis=1) for k in range(nodes.size)], axis=1)
    return nodes[idx[(counts <= tpn).all(axis=1)]]


def exhaustive_min(topo, routing, traffic, maps):
    ct = evaluate_batch(topo, routing, traffic, [explicit(topo, m, "m") for m in maps])
    return float(np.min(ct.metrics["completion_time"]))


# the small cases: (name, topology, routing, nodes); "fast" node links: the network binds
CASES = {
    "torus 3x3, dor": (lambda fast: torus((3, 3), injection_bandwidth=1e12 if fast else None), "dor", range(9)),
    "torus 2x2x2, dor": (lambda fast: torus((2, 2, 2), injection_bandwidth=1e12 if fast else None), "dor",
                         range(8)),
    "DF(2,4,2,9), minimal": (lambda fast: dragonfly(2, 4, 2, 9, bandwidth_p=1e12 if fast else 1e10), "minimal",
                             [0, 1, 8, 9, 16, 17, 24]),
    "DF(2,4,2,9), valiant": (lambda fast: dragonfly(2, 4, 2, 9, bandwidth_p=1e12 if fast else 1e10), "valiant",
                             [0, 1, 8, 9, 16, 17, 24]),
    "fat tree k=4 2 levels, dmodk": (lambda fast: fat_tree(k=4, levels=2, injection_bandwidth=1e12 if fast
                                                           else 12.5e9), "dmodk", [0, 1, 4, 5, 8, 12, 13]),
}


@pytest.mark.parametrize("fast", [False, True], ids=["default links", "fast node links"])
@pytest.mark.parametrize("tpn", [1, 2])
@pytest.mark.parametrize("case", list(CASES))
def test_bound_below_every_mapping(case, tpn, fast):
    make, routing, nodes = CASES[case]
    topo = make(fast)
    nodes = np.asarray(list(nodes))[: 7 if tpn == 1 else 5]
    tr = random_flows(6, 14, 1)
    maps = every_mapping(nodes, 6, tpn)
    best = exhaustive_min(topo, routing, tr, maps)
    bd = mapping_bound(topo, tr, routing, nodes=nodes, tasks_per_node=tpn)
    assert 0 < bd.value <= best * (1 + REL)
    assert bd.value == max(bd.parts.values()) and bd.parts[bd.binding] == bd.value
    assert all(v <= best * (1 + REL) for v in bd.parts.values())
    assert bd.parts["endpoint"] == pytest.approx(task_node_bound(topo, tr, nodes, tpn), rel=REL)
    if tpn == 1:
        assert bd.parts["endpoint"] == pytest.approx(endpoint_bound(topo, tr), rel=REL)  # the bound of before
    if fast:  # node links 100x faster: the network binds, well above the node-link bound
        assert bd.binding != "endpoint" and bd.network() is not None
        assert bd.value > 2 * bd.parts["endpoint"]
        assert bd.value >= best / 8  # not trivial: within 8x of the optimum on these cases (3.8x to 7.4x)


def test_bound_below_every_mapping_phased_and_asymmetric():
    """Two phases (the mapping shared: bytes summed over phases) on a 2x3 mesh-like torus with unequal link
    bandwidths per dimension (the 1/capacity weighting), two tasks per node."""
    topo = torus((2, 3), link_bandwidth=[2e9, 5e8], injection_bandwidth=1e12)
    tr = phased([random_flows(6, 10, 3), random_flows(6, 10, 4, 1e4, 1e7)])
    nodes = np.arange(6)
    for tpn in (1, 2):
        maps = every_mapping(nodes, 6, tpn)
        best = exhaustive_min(topo, "dor", tr, maps)
        bd = mapping_bound(topo, tr, "dor", nodes=nodes, tasks_per_node=tpn)
        assert 0 < bd.value <= best * (1 + REL)
        assert "network/cap" in bd.parts
        assert bd.binding != "endpoint"


def test_cut_bound_binds_on_a_tapered_fat_tree():
    """8 tasks in two cliques-with-a-bridge on a fat tree whose leaves have little up-link capacity: the
    Donath-Hoffman cut bound over the leaves (every leaf holds at most 4 tasks: some bytes leave it) binds."""
    topo = fat_tree([4, 4], [1, 1], injection_bandwidth=1e12, link_bandwidth=1e9)
    rng = np.random.default_rng(0)
    src, dst = np.array([(i, j) for i in range(8) for j in range(8) if i != j]).T
    tr = from_flows(8, src, dst, rng.uniform(1e5, 1e6, src.size))
    nodes = np.arange(topo.n_nodes)[:8]  # two leaves of four
    maps = every_mapping(nodes, 8, 1)
    best = exhaustive_min(topo, "dmodk", tr, maps)
    bd = mapping_bound(topo, tr, "dmodk", nodes=nodes)
    assert 0 < bd.value <= best * (1 + REL)
    assert bd.binding != "endpoint"


def test_the_ports_part_binds_where_one_flow_dominates():
    """A flow far above the others (5 MB against 0.1-0.3 MB) on a 3x3 torus with fast node links: no ring of 3
    has a tie, so DOR carries every route whole over its first link and no mapping is below the 5 MB flow over
    one link; the port part says so, and it is the optimum (every mapping evaluated)."""
    topo = torus((3, 3), injection_bandwidth=1e12)
    b = np.array([5e6, 1e5, 2e5, 1e5, 3e5, 1e5, 1e5])
    tr = from_flows(6, np.array([0, 1, 2, 3, 4, 5, 0]), np.array([1, 2, 3, 4, 5, 0, 3]), b)
    nodes = np.arange(7)
    best = exhaustive_min(topo, "dor", tr, every_mapping(nodes, 6, 1))
    bd = mapping_bound(topo, tr, "dor", nodes=nodes)
    assert bd.binding.endswith(" ports") and "first and last links" in bd.describe()
    assert bd.value == pytest.approx(5e6 / 2e9, rel=REL) and bd.value <= best * (1 + REL)
    assert best == pytest.approx(bd.value, rel=REL)
    assert bd.value > 10 * bd.parts["network"]  # the hop-bytes alone average the flow over every link


def test_the_ports_part_with_the_profiles_merged(monkeypatch):
    """Above its work budget the port part gives every node the smallest profile (7 of 9 nodes: the profiles
    differ): still below every mapping, and here still the dominating flow over one link."""
    import evaluator.mapping.bound as bound

    topo = torus((3, 3), injection_bandwidth=1e12)
    b = np.array([5e6, 1e5, 2e5, 1e5, 3e5, 1e5, 1e5])
    tr = from_flows(6, np.array([0, 1, 2, 3, 4, 5, 0]), np.array([1, 2, 3, 4, 5, 0, 3]), b)
    nodes = np.arange(7)
    calls = []
    real = bound.port_bound
    monkeypatch.setattr(bound, "_WORK", 1.0)
    monkeypatch.setattr(bound, "port_bound", lambda *a: calls.append(a[-1]) or real(*a))
    bd = mapping_bound(topo, tr, "dor", nodes=nodes)
    assert calls and all(w == 1.0 for w in calls)
    assert bd.parts["network ports"] == pytest.approx(5e6 / 2e9, rel=REL)


@pytest.mark.parametrize("tie", ["split", "positive"])
def test_the_ports_part_lets_a_split_tie_pay(tie):
    """One 1 MB flow on a ring of 4: half a ring apart DOR splits it (0.5 MB each way, 250 us), which beats
    neighbours (500 us); the port part must allow that (125 us: the split route's two hops averaged over the
    ring's 8 links) and stays below the optimum. With ties taken the positive way nothing splits, and the part
    is the optimum, 500 us."""
    topo = torus((4,), injection_bandwidth=1e12)
    tr = from_flows(2, np.array([0]), np.array([1]), np.array([1e6]))
    r = dor(tie=tie)
    best = exhaustive_min(topo, r, tr, every_mapping(np.arange(4), 2, 1))
    bd = mapping_bound(topo, tr, r)
    assert best == pytest.approx(2.5e-4 if tie == "split" else 5e-4, rel=REL)
    assert bd.binding.endswith(" ports") and bd.value <= best * (1 + REL)
    assert bd.value == pytest.approx(1.25e-4 if tie == "split" else 5e-4, rel=REL)


@pytest.mark.parametrize("tpn", [1, 4])
def test_the_ports_part_on_a_uneven_stencil_below_every_sampled_mapping(tpn):
    """The held-out 27-point stencil's pattern (faces 48x40x32 elements of 8 bytes, so 15,360 B the heaviest
    flow) at 4x4x4 tasks on a 4x4x4 torus (a tie at 2 hops on every ring): with one task per node the port part
    binds, between the plain hop-bytes and that flow over one 2 GB/s link (7.68 us; splitting it costs 2 hops
    here); one and four tasks per node, it is below the identity and 2,000 random mappings."""
    from evaluator.traffic import stencil

    topo = torus((4, 4, 4))
    tr = stencil([48 * 4, 40 * 4, 32 * 4], [4, 4, 4], 8.0, False, neighbours="full")
    nodes = np.arange(64 // tpn)
    bd = mapping_bound(topo, tr, "dor", nodes=nodes, tasks_per_node=tpn)
    rng = np.random.default_rng(0)
    maps = [np.repeat(nodes, tpn)] + [rng.permutation(np.repeat(nodes, tpn)) for _ in range(2000)]
    best = exhaustive_min(topo, "dor", tr, maps)
    assert bd.value <= best * (1 + REL)
    if tpn == 1:  # a split here is 2 hops (rings of 4): the part is below the flow's 7.68 us, above hop-bytes
        assert bd.binding == "network ports" and bd.parts["network"] < bd.value < 15360 / 2e9


def test_route_lengths_are_torus_distances():
    """The hop counts read off DOR's tables (w = 1 on every router link) are the torus distance (a DOR route
    is a shortest path; a tie on an even ring is split between two shortest ways)."""
    topo = torus((4, 3))
    R = topo.n_routers
    W = np.ones((1, topo.n_router_links))
    r = _router_distances(topo, dor(), np.arange(R), W)
    c = np.asarray(topo.router_coords)
    diff = np.abs(c[:, None, :] - c[None, :, :])
    dist = np.minimum(diff, np.array([4, 3]) - diff).sum(axis=2)
    np.testing.assert_allclose(r.D[0], dist, rtol=0, atol=TOL["prob"])
    assert r.oblivious and r.support.all()
    # the first link out of the source router carries a route whole unless its first dimension (0, as given)
    # meets a tie (2 on the ring of 4: half each way); the last one into the destination, unless dimension 1
    # is not crossed (the ring of 3 has no tie) and dimension 0 ties
    dx, dy = diff[..., 0], diff[..., 1]
    first = np.where(dx == 2, 0.5, np.where((dx > 0) | (dy > 0), 1.0, 0.0))
    last = np.where((dy == 0) & (dx == 2), 0.5, np.where((dx > 0) | (dy > 0), 1.0, 0.0))
    np.testing.assert_allclose(r.first, first, rtol=0, atol=TOL["prob"])
    np.testing.assert_allclose(r.last, last, rtol=0, atol=TOL["prob"])
    q = _router_distances(topo, dor(tie="positive"), np.arange(R), W)
    np.testing.assert_allclose(q.first, (dist > 0).astype(float), rtol=0, atol=TOL["prob"])


def test_valiant_routes_are_longer_and_the_bound_counts_them():
    """Valiant's expected routes are longer than minimal ones: its network bound is above minimal's on the same
    job (and both below their exhaustive optima, above)."""
    topo = dragonfly(2, 4, 2, 9, bandwidth_p=1e12)
    tr = random_flows(6, 14, 1)
    nodes = np.arange(0, 72, 8)[:7]  # one node in each of 7 groups
    a = mapping_bound(topo, tr, "minimal", nodes=nodes)
    b = mapping_bound(topo, tr, "valiant", nodes=nodes)
    assert b.parts["class:global"] > a.parts["class:global"]


def test_memory_refusal_is_a_note(monkeypatch):
    """Work that would not fit is refused before it is allocated: the node-link bound stands, and a note says why."""
    import evaluator.errors as errors

    topo, tr = torus((3, 3)), random_flows(6, 14, 1)
    monkeypatch.setattr(errors, "available_memory", lambda: 1.0)
    bd = mapping_bound(topo, tr, "dor")
    assert bd.binding == "endpoint" and set(bd.parts) == {"endpoint"}
    assert bd.notes and "not computed" in bd.notes[0] and "memory" in bd.notes[0]


@pytest.mark.parametrize("net,pattern", [(0, "mesh halo"), (1, "mesh halo"), (2, "mesh halo"), (0, "random graph")],
                         ids=["torus 16x8x8", "DF(4,8,4)", "fat tree XGFT(2;32,32;1,16)", "torus 16x8x8 random graph"])
def test_bench_cases_bound_below_the_mapping_found(net, pattern):
    """The bench's 1,024-rank mesh halo on its three networks, and its random graph on the torus (where the
    boundary part binds): the bound is below every start and the mapping the search finds (a short search), and
    at least the node-link bound of before."""
    from evaluator.bench.mapping import _networks, _pattern

    tr = _pattern(pattern, 1024)
    label, topo, routing = _networks(1024)[net]
    res = search_mapping(topo, tr, routing, time_budget=60, max_iterations=3, seed=0, progress=False)
    assert res.bound is not None and res.lower_bound == res.bound.value
    assert res.lower_bound <= res.completion_time * (1 + REL)
    assert all(res.lower_bound <= t * (1 + REL) for t in res.starts.values())
    assert res.lower_bound >= endpoint_bound(topo, tr) * (1 - REL)
    assert res.bound.network() is not None and res.bound.network()[1] > 0


def test_a_routing_that_is_not_linear_is_counted_by_shortest_paths():
    """A routing that shares bytes by load (``Routing.linear`` False: the adaptive ones) is not read off its
    tables: every route is at least a shortest path (the torus distance here), and the bound stays below the
    optimum of an oblivious routing on the same job."""
    import dataclasses

    from evaluator.mapping.bound import _shortest_distances
    from evaluator.routing import DorRouting

    class NotLinear(DorRouting):
        @property
        def linear(self):
            return False

    base = dor()
    r = NotLinear(*[getattr(base, f.name) for f in dataclasses.fields(base)])
    topo = torus((3, 3), injection_bandwidth=1e12)
    c = np.asarray(topo.router_coords)
    diff = np.abs(c[:, None, :] - c[None, :, :])
    D = _shortest_distances(topo, np.arange(9), np.ones((1, topo.n_router_links)))
    np.testing.assert_allclose(D[0], np.minimum(diff, 3 - diff).sum(axis=2), rtol=0, atol=TOL["prob"])
    tr = random_flows(6, 14, 1)
    nodes = np.arange(7)
    best = exhaustive_min(topo, "dor", tr, every_mapping(nodes, 6, 1))
    bd = mapping_bound(topo, tr, r, nodes=nodes)
    assert any("shortest" in note for note in bd.notes)
    assert 0 < bd.value <= best * (1 + REL) and bd.binding != "endpoint"


def _boundary(bd):
    return {k: v for k, v in bd.parts.items() if k.startswith("boundary:")}


def test_the_boundary_part_is_the_optimum_of_an_all_to_all_on_a_ring():
    """An all-to-all of 8 tasks on a ring of 8 (fast node links, DOR): every mapping is the same, and its busiest
    link carries 1 + 2 + 3 pair-flows plus half of the 4 at the tie, 8 MB at 2 GB/s (closed form); the boundary
    part (the ring's half: 2 links each way, 16 pairs each way across it) is exactly that."""
    from evaluator.traffic import all_to_all

    topo = torus((8,), injection_bandwidth=1e12)
    tr = all_to_all(8, 1e6)
    best = exhaustive_min(topo, "dor", tr, every_mapping(np.arange(8), 8, 1)[:24])
    assert best == pytest.approx((1 + 2 + 3 + 4 / 2) * 1e6 / 2e9, rel=REL)
    (name, value), = _boundary(mapping_bound(topo, tr, "dor")).items()
    assert best * (1 - 1e-8) <= value <= best and name == "boundary:coordinate 0 in 0..3"  # less the rounding margin


@pytest.mark.parametrize("case", ["ring 8, pencil 2x4", "torus 2x4, pencil 4x2", "DF(2,4,2,9), all-to-all",
                                  "fat tree, pencil 2x4"])
def test_the_boundary_part_below_every_mapping(case):
    """The boundary part on 8 tasks of a pencil FFT (two phases: a product of cliques) and an all-to-all, every
    family, every mapping onto 8 nodes evaluated: at most the fastest (and equal to it on the Dragonfly's
    all-to-all, whose groups' global links are the bottleneck)."""
    from evaluator.traffic import all_to_all, pencil

    topo, routing, tr = {
        "ring 8, pencil 2x4": (torus((8,), injection_bandwidth=1e12), "dor", pencil(8, 2, 4, 16.0)),
        "torus 2x4, pencil 4x2": (torus((2, 4), injection_bandwidth=1e12), "dor", pencil(8, 4, 2, 16.0)),
        "DF(2,4,2,9), all-to-all": (dragonfly(2, 4, 2, 9, bandwidth_p=1e12), "minimal", all_to_all(8, 1e6)),
        "fat tree, pencil 2x4": (fat_tree([4, 4], [1, 1], injection_bandwidth=1e12, link_bandwidth=1e9), "dmodk",
                                 pencil(8, 2, 4, 16.0)),
    }[case]
    nodes = np.arange(8)
    best = exhaustive_min(topo, routing, tr, every_mapping(nodes, 8, 1))
    part = _boundary(mapping_bound(topo, tr, routing, nodes=nodes))
    assert len(part) == 1 and 0 < next(iter(part.values())) <= best * (1 + REL)
    if case.startswith("DF"):
        assert best * (1 - 1e-8) <= next(iter(part.values())) <= best


def test_the_boundary_windows_and_the_tasks_they_can_hold():
    """The windows of a coordinate (every offset and width up to half, a half once per complement; fewer widths
    on a long coordinate) and the range of tasks a window's available nodes allow: a window that must hold
    every task (the nodes outside take none) or none gives no bound."""
    from evaluator.mapping._boundary import _MAX_SETS, _windows, boundary_bound

    vals, m, starts, widths = _windows(np.array([0, 1, 2, 3, 4, 5]))
    assert m == 6 and sorted(zip(starts.tolist(), widths.tolist())) == sorted(
        [(s, 1) for s in range(6)] + [(s, 2) for s in range(6)] + [(s, 3) for s in range(3)])
    _, m, starts, widths = _windows(np.arange(200) % 100)
    assert m == 100 and starts.size <= _MAX_SETS and set(widths.tolist()) == {1, 2, 4, 8, 16, 32, 50}
    topo = torus((8,), injection_bandwidth=1e12)
    support = np.ones(topo.n_router_links, bool)
    cap = np.asarray(topo.capacity)[:topo.n_router_links]
    assert boundary_bound(topo, np.arange(4), 1, 4, 1.0, support, cap)[1] > 0  # 4 tasks on 4 routers of 8
    assert boundary_bound(topo, np.arange(8), 1, 1, 1.0, support, cap) is None  # one task
    assert boundary_bound(topo, np.arange(8), 1, 8, 0.0, support, cap) is None  # a graph that falls apart
    # tasks per node enough for every task on one node: any window may hold all or none of them
    assert boundary_bound(topo, np.arange(8), 8, 8, 1.0, support, cap) is None
