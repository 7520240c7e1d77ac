"""The evaluator against an independent per-flow path walk (``tests/reference.py``).

Two parts:

* the reference itself is checked against breadth-first search (hop counts on
  the router graph and on the group graph) and against route invariants;
* the evaluator's JAX link loads are compared link for link with the
  reference on small random cases, and property tests check non-negativity,
  linearity in traffic and ``sum(router-link load) == sum(bytes x hops)``.
"""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evaluator import topology as T
from tests.helpers import TOL

try:  # run as part of a package (tests/__init__.py) or as a rootdir test file
    from tests.reference import dragonfly_global_table, reference_hops, reference_link_loads, reference_paths
except ImportError:  # pragma: no cover
    from reference import dragonfly_global_table, reference_hops, reference_link_loads, reference_paths

# Tolerances, in one place.
RTOL = TOL["rel"]
ATOL = TOL["bytes"]
PROB_TOL = TOL["prob"]

MINIMAL = {"kind": "minimal"}
VALIANT = {"kind": "valiant"}


def dor(order="as_given", tie="split"):
    return {"kind": "dor", "order": order, "tie": tie}


# --------------------------------------------------------------------------------------
# Topologies used below (small, so that every router pair can be checked)
# --------------------------------------------------------------------------------------

TORI = {
    "torus4x4": lambda: T.torus((4, 4)),
    "torus5x3": lambda: T.torus((5, 3)),
    "torus4x3x2": lambda: T.torus((4, 3, 2)),
    "mesh3x4": lambda: T.torus((3, 4), wrap=False),
    "mixed4x3x5": lambda: T.torus((4, 3, 5), wrap=(True, False, True)),
    "gemini4x2x3": lambda: T.gemini((4, 2, 3)),
    "torus2x1x4": lambda: T.torus((2, 1, 4)),
    "torus1x6": lambda: T.torus((1, 6)),
    "torus2x2x2": lambda: T.torus((2, 2, 2), nodes_per_router=2),
    "mesh2x1x3": lambda: T.torus((2, 1, 3), wrap=False),
    "torus3x6x4": lambda: T.torus((3, 6, 4)),
}

DRAGONFLIES = {
    f"DF({p},{a},{h},{g})-{arr}": (lambda p=p, a=a, h=h, g=g, arr=arr: T.dragonfly(p, a, h, g, arrangement=arr))
    for (p, a, h, g) in [(2, 4, 2, 9), (1, 4, 2, 5), (2, 3, 3, 4), (1, 2, 3, 4)]
    for arr in ("consecutive", "relative")
}

_TOPO_CACHE: dict[str, object] = {}


def topo(name: str):
    if name not in _TOPO_CACHE:
        _TOPO_CACHE[name] = {**TORI, **DRAGONFLIES}[name]()
    return _TOPO_CACHE[name]


def router_graph(t) -> nx.DiGraph:
    g = nx.DiGraph()
    g.add_nodes_from(range(t.n_routers))
    g.add_edges_from((s, d) for s, d, _ in t.router_edges())
    return g


def link_ends(t) -> dict[int, tuple[int, int]]:
    return {lid: (s, d) for s, d, lid in t.router_edges()}


def check_walk(t, ends, src, dst, links):
    """``links`` is a connected walk of router links from ``src`` to ``dst``."""
    here = src
    for lid in links:
        s, d = ends[lid]
        assert s == here, (src, dst, links)
        here = d
    assert here == dst, (src, dst, links)


# --------------------------------------------------------------------------------------
# The reference against BFS and route invariants
# --------------------------------------------------------------------------------------

DOR_VARIANTS = [dor(), dor(tie="positive"), dor("longest_first"), dor("longest_first", "positive")]


@pytest.mark.parametrize("name", sorted(TORI))
def test_reference_dor_hops_equal_bfs(name):
    t = topo(name)
    ends = link_ends(t)
    dist = dict(nx.all_pairs_shortest_path_length(router_graph(t)))
    for routing in DOR_VARIANTS:
        for s in range(t.n_routers):
            for d in range(t.n_routers):
                paths = reference_paths(t, s, d, routing)
                assert abs(sum(p for p, _ in paths) - 1.0) < PROB_TOL
                for prob, links in paths:
                    assert prob > 0
                    check_walk(t, ends, s, d, links)
                    assert len(links) == dist[s][d], (name, routing, s, d, links)
                assert reference_hops(t, s, d, routing) == pytest.approx(dist[s][d], abs=TOL["prob"])


@pytest.mark.parametrize("name", sorted(TORI))
def test_reference_dor_travels_dimensions_in_order(name):
    t = topo(name)
    ends = link_ends(t)
    coords = np.asarray(t.router_coords)
    size_desc = sorted(range(len(t.dims)), key=lambda k: -t.dims[k])
    rng = np.random.default_rng(7)
    for order, expect in [("as_given", list(range(len(t.dims)))), ("longest_first", size_desc),
                          (tuple(reversed(range(len(t.dims)))), list(reversed(range(len(t.dims)))))]:
        for _ in range(40):
            s, d = (int(x) for x in rng.integers(0, t.n_routers, 2))
            for _, links in reference_paths(t, s, d, dor(order)):
                moved = []
                for lid in links:
                    a, b = ends[lid]
                    (k,) = np.nonzero(coords[a] != coords[b])[0]
                    if not moved or moved[-1] != k:
                        moved.append(int(k))
                assert moved == [k for k in expect if coords[s][k] != coords[d][k]]


def test_reference_dor_tie_split_and_positive():
    t = topo("torus4x4")
    # (0,0) -> (2,0): exactly half a ring in dimension 0.
    s, d = 0, 2 * 4
    split = reference_paths(t, s, d, dor(tie="split"))
    assert sorted(p for p, _ in split) == [0.5, 0.5]
    pos = reference_paths(t, s, d, dor(tie="positive"))
    assert len(pos) == 1 and pos[0][0] == 1.0
    ends = link_ends(t)
    assert [ends[lid] for lid in pos[0][1]] == [(0, 4), (4, 8)]
    # Size-2 wrapped dimension: one link, used with probability 1 either way.
    t2 = topo("torus2x2x2")
    loads = reference_link_loads(t2, [(0, 2 * 4, 10.0)], np.arange(t2.n_nodes), dor())
    (used,) = np.nonzero(loads[: t2.n_router_links])[0]
    assert t2.router_edges()[used][:2] == (0, 4) and loads[used] == 10.0


@pytest.mark.parametrize("name", sorted(DRAGONFLIES))
def test_reference_dragonfly_tables_match_topology(name):
    """The re-derived arrangement agrees with the topology's own tables."""
    t = topo(name)
    owner, landing, link = dragonfly_global_table(t)
    m = t.links_per_pair
    assert len(owner) == t.g * (t.g - 1) * m
    for (G, H, c), r in owner.items():
        assert r == t.owner_router(G, H, c)
        assert landing[(G, H, c)] == t.landing_router(G, H, c)
    # Parallel copies sharing both end routers are interchangeable; compare as sets.
    for G in range(t.g):
        for H in range(t.g):
            if G != H:
                assert sorted(link[(G, H, c)] for c in range(m)) == sorted(t.global_link[G, H].tolist())


@pytest.mark.parametrize("name", sorted(DRAGONFLIES))
def test_reference_dragonfly_minimal_hops(name):
    t = topo(name)
    ends = link_ends(t)
    group = {r: int(t.router_coords[r][0]) for r in range(t.n_routers)}
    dist = dict(nx.all_pairs_shortest_path_length(router_graph(t)))
    gg = nx.Graph()
    gg.add_edges_from((group[s], group[d]) for s, d, _ in t.router_edges() if group[s] != group[d])
    gdist = dict(nx.all_pairs_shortest_path_length(gg))
    for s in range(t.n_routers):
        for d in range(t.n_routers):
            paths = reference_paths(t, s, d, MINIMAL)
            assert abs(sum(p for p, _ in paths) - 1.0) < PROB_TOL
            for prob, links in paths:
                check_walk(t, ends, s, d, links)
                n_global = sum(group[ends[l][0]] != group[ends[l][1]] for l in links)
                n_local = len(links) - n_global
                assert len(links) >= dist[s][d]
                if s == d:
                    assert links == []
                elif group[s] == group[d]:
                    assert len(links) == 1 and n_global == 0
                else:
                    assert n_global == 1 == gdist[group[s]][group[d]]
                    assert n_local <= 2
                    assert prob == pytest.approx(1.0 / t.links_per_pair, abs=PROB_TOL)
            if group[s] != group[d]:
                # The copies of the S->D global links are all used, equally.
                used = sorted(l for _, links in paths for l in links if group[ends[l][0]] != group[ends[l][1]])
                assert used == sorted(t.global_link[group[s], group[d]].tolist())


@pytest.mark.parametrize("name", sorted(DRAGONFLIES))
def test_reference_dragonfly_valiant_hops(name):
    t = topo(name)
    ends = link_ends(t)
    group = {r: int(t.router_coords[r][0]) for r in range(t.n_routers)}
    gg = nx.Graph()
    gg.add_edges_from((group[s], group[d]) for s, d, _ in t.router_edges() if group[s] != group[d])
    gdist = dict(nx.all_pairs_shortest_path_length(gg))
    rng = np.random.default_rng(3)
    for _ in range(60):
        s, d = (int(x) for x in rng.integers(0, t.n_routers, 2))
        paths = reference_paths(t, s, d, VALIANT)
        assert abs(sum(p for p, _ in paths) - 1.0) < PROB_TOL
        if group[s] == group[d]:
            assert paths == reference_paths(t, s, d, MINIMAL)
            continue
        via = {}
        for prob, links in paths:
            check_walk(t, ends, s, d, links)
            hops = [(group[ends[l][0]], group[ends[l][1]]) for l in links if group[ends[l][0]] != group[ends[l][1]]]
            assert len(hops) == 2 and hops[0][0] == group[s] and hops[1][1] == group[d]
            mid = hops[0][1]
            assert hops[1][0] == mid and mid not in (group[s], group[d])
            assert gdist[group[s]][mid] + gdist[mid][group[d]] == 2
            assert len(links) - 2 <= 3
            via[mid] = via.get(mid, 0.0) + prob
        assert sorted(via) == sorted(set(range(t.g)) - {group[s], group[d]})
        for prob in via.values():
            assert prob == pytest.approx(1.0 / (t.g - 2), abs=PROB_TOL)


def test_reference_loads_small_hand_case():
    """A 1-D ring of 4 worked by hand: 0->2 (tie), 1->2, 3->0, same-node and same-router flows."""
    t = T.torus((4,), nodes_per_router=2)
    # tasks 0..7 on nodes 0..7 (router = node // 2); task 8 shares node 0.
    task_node = np.array([0, 1, 2, 3, 4, 5, 6, 7, 0])
    flows = [(0, 4, 8.0),   # router 0 -> 2: half via 1, half via 3
             (2, 5, 1.0),   # router 1 -> 2
             (6, 0, 2.0),   # router 3 -> 0
             (0, 8, 100.0),  # same node: nothing
             (0, 1, 5.0)]   # same router: injection + ejection only
    loads = reference_link_loads(t, flows, task_node, dor())
    ends = link_ends(t)
    by_pair = {ends[l]: loads[l] for l in range(t.n_router_links)}
    assert by_pair == {(0, 1): 4.0, (1, 2): 5.0, (0, 3): 4.0, (3, 2): 4.0, (3, 0): 2.0,
                       (1, 0): 0.0, (2, 1): 0.0, (2, 3): 0.0}
    inj = loads[t.n_router_links:t.n_router_links + t.n_nodes]
    ej = loads[t.n_router_links + t.n_nodes:]
    np.testing.assert_array_equal(inj, [13, 0, 1, 0, 0, 0, 2, 0])
    np.testing.assert_array_equal(ej, [2, 5, 0, 0, 8, 1, 0, 0])


# --------------------------------------------------------------------------------------
# The evaluator against the reference
# --------------------------------------------------------------------------------------


def random_case(t, seed: int, n_flows: int | None = None, tasks_per_node: float = 1.0, shared: bool = False):
    """Random flows and placement.

    ``n_tasks = n_nodes * tasks_per_node``. Tasks go on distinct random nodes
    unless ``shared`` (or there are more tasks than nodes): then every task
    picks a node uniformly, so some nodes hold several tasks and some none.
    """
    rng = np.random.default_rng(seed)
    n_tasks = max(2, int(round(t.n_nodes * tasks_per_node)))
    if shared or n_tasks > t.n_nodes:
        task_node = rng.integers(0, t.n_nodes, n_tasks)
    else:
        task_node = rng.permutation(t.n_nodes)[:n_tasks]
    if n_flows is None:
        n_flows = 4 * n_tasks
    src = rng.integers(0, n_tasks, n_flows)
    dst = rng.integers(0, n_tasks - 1, n_flows)
    dst = np.where(dst >= src, dst + 1, dst)  # no task sends to itself
    nbytes = rng.integers(1, 1_000_000, n_flows).astype(np.float64) * rng.choice([1.0, 0.25, 1e-3], n_flows)
    return n_tasks, src, dst, nbytes, task_node.astype(np.int64)


def run_evaluator(t, n_tasks, src, dst, nbytes, task_node, routing_dict):
    import evaluator
    from evaluator import placement, routing, traffic

    tr = traffic.from_flows(n_tasks, src, dst, nbytes)
    pl = placement.explicit(t, task_node)
    if routing_dict["kind"] == "dor":
        rt = routing.dor(order=routing_dict["order"], tie=routing_dict["tie"])
    elif routing_dict["kind"] == "minimal":
        rt = routing.minimal()
    else:
        rt = routing.valiant()
    return evaluator.evaluate(t, tr, pl, rt)


def flows_of(src, dst, nbytes):
    return list(zip(src.tolist(), dst.tolist(), nbytes.tolist()))


def compare(t, case, routing_dict, label=""):
    n_tasks, src, dst, nbytes, task_node = case
    ref = reference_link_loads(t, flows_of(src, dst, nbytes), task_node, routing_dict)
    ds = run_evaluator(t, n_tasks, src, dst, nbytes, task_node, routing_dict)
    got = np.asarray(ds["link_load"].values)
    assert got.shape == ref.shape
    assert got.dtype == np.float64
    bad = np.nonzero(~np.isclose(got, ref, rtol=RTOL, atol=ATOL))[0]
    ends = dict(enumerate(zip(np.asarray(t.link_src).tolist(), np.asarray(t.link_dst).tolist())))
    detail = "; ".join(f"link {l} {ends[l]}: ref {ref[l]!r} eval {got[l]!r}" for l in bad[:8])
    np.testing.assert_allclose(got, ref, rtol=RTOL, atol=ATOL, err_msg=f"{t.name} {routing_dict} {label}: {detail}")
    expected_time = float(np.max(ref / np.asarray(t.capacity)))
    assert float(ds["completion_time"]) == pytest.approx(expected_time, rel=RTOL, abs=TOL["time"])
    # mean_hops: router-to-router links per byte that leaves its node.
    leaving = nbytes[task_node[src] != task_node[dst]].sum()
    if leaving > 0:
        expected_hops = ref[: t.n_router_links].sum() / leaving
        assert float(ds["mean_hops"]) == pytest.approx(expected_hops, rel=TOL["rel_sum"])
    return ref, ds


TORUS_CASES = [
    ("torus4x4", dor(), 1.0),
    ("torus4x4", dor(tie="positive"), 1.0),
    ("torus5x3", dor(), 1.0),
    ("torus5x3", dor("longest_first"), 2.5),
    ("torus4x3x2", dor(), 1.0),
    ("torus4x3x2", dor("longest_first", "positive"), 1.0),
    ("mesh3x4", dor(), 1.0),
    ("mesh3x4", dor("longest_first"), 1.0),
    ("mixed4x3x5", dor(), 1.0),
    ("mixed4x3x5", dor("longest_first", "positive"), 1.0),
    ("mixed4x3x5", dor((2, 0, 1)), 1.0),
    ("gemini4x2x3", dor(), 1.0),
    ("gemini4x2x3", dor("longest_first"), 3.0),
    ("torus2x1x4", dor(), 1.0),
    ("torus1x6", dor(tie="positive"), 1.0),
    ("torus2x2x2", dor(), 1.0),
    ("mesh2x1x3", dor("longest_first"), 1.0),
    ("torus3x6x4", dor("longest_first"), 1.0),
    ("torus3x6x4", dor(tie="positive"), 1.0),
]


@pytest.mark.parametrize("name,routing_dict,tasks_per_node", TORUS_CASES)
def test_evaluator_matches_reference_torus(name, routing_dict, tasks_per_node):
    t = topo(name)
    for seed, shared in ((0, False), (1, True)):  # same shapes: one compilation
        compare(t, random_case(t, seed, tasks_per_node=tasks_per_node, shared=shared), routing_dict,
                f"seed={seed} shared={shared}")


DF_CASES = [(name, r, 2.5 if name == "DF(1,4,2,5)-relative" else 1.0)
            for name in sorted(DRAGONFLIES) for r in (MINIMAL, VALIANT)]


@pytest.mark.parametrize("name,routing_dict,tasks_per_node", DF_CASES)
def test_evaluator_matches_reference_dragonfly(name, routing_dict, tasks_per_node):
    t = topo(name)
    for seed, shared in ((0, False), (1, True)):  # same shapes: one compilation
        compare(t, random_case(t, seed, tasks_per_node=tasks_per_node, shared=shared), routing_dict,
                f"seed={seed} shared={shared}")


@pytest.mark.parametrize("name,routing_dict", [("torus5x3", dor()), ("gemini4x2x3", dor("longest_first")),
                                               ("DF(1,4,2,5)-relative", MINIMAL), ("DF(2,3,3,4)-consecutive", VALIANT)])
def test_evaluator_all_to_all_single_flow_per_pair(name, routing_dict):
    """Every router pair at once (identity placement, one flow per ordered node pair)."""
    t = topo(name)
    n = t.n_nodes
    src, dst = np.nonzero(~np.eye(n, dtype=bool))
    nbytes = 1.0 + (src * 7 + dst * 3) % 11
    compare(t, (n, src, dst, nbytes.astype(np.float64), np.arange(n)), routing_dict)


# --------------------------------------------------------------------------------------
# Properties
# --------------------------------------------------------------------------------------

PROPERTY_TOPOLOGIES = [("torus4x3x2", dor()), ("mixed4x3x5", dor(tie="positive")), ("gemini4x2x3", dor("longest_first")),
                       ("DF(1,4,2,5)-consecutive", MINIMAL), ("DF(2,3,3,4)-relative", VALIANT)]

# Flow counts stay within the evaluator's smallest shape buckets (16 and, for the
# concatenated traffic, 32 flows) so that the examples reuse compilations.
property_settings = settings(max_examples=25, deadline=None, derandomize=True,
                             suppress_health_check=[HealthCheck.too_slow])


@property_settings
@given(which=st.sampled_from(PROPERTY_TOPOLOGIES), seed=st.integers(0, 2**31 - 1),
       n_flows=st.integers(1, 16), tasks_per_node=st.sampled_from([0.5, 2.0]), shared=st.booleans())
def test_property_nonnegative_and_bytes_times_hops(which, seed, n_flows, tasks_per_node, shared):
    name, routing_dict = which
    t = topo(name)
    n_tasks, src, dst, nbytes, task_node = random_case(t, seed, n_flows, tasks_per_node, shared)
    ds = run_evaluator(t, n_tasks, src, dst, nbytes, task_node, routing_dict)
    load = np.asarray(ds["link_load"].values)
    assert (load >= 0).all()
    npr = t.nodes_per_router
    expect = sum(b * reference_hops(t, task_node[s] // npr, task_node[d] // npr, routing_dict)
                 for s, d, b in zip(src, dst, nbytes))
    assert load[: t.n_router_links].sum() == pytest.approx(expect, rel=TOL["rel_sum"], abs=ATOL)
    crossing = task_node[src] != task_node[dst]
    n_rl, n_nodes = t.n_router_links, t.n_nodes
    assert load[n_rl:n_rl + n_nodes].sum() == pytest.approx(nbytes[crossing].sum(), rel=TOL["rel"], abs=ATOL)
    assert load[n_rl + n_nodes:].sum() == pytest.approx(nbytes[crossing].sum(), rel=TOL["rel"], abs=ATOL)


@property_settings
@given(which=st.sampled_from(PROPERTY_TOPOLOGIES), seed=st.integers(0, 2**31 - 1),
       n_flows=st.integers(1, 16), tasks_per_node=st.just(2.0))
def test_property_linear_in_traffic(which, seed, n_flows, tasks_per_node):
    name, routing_dict = which
    t = topo(name)
    n_tasks, src, dst, nbytes, task_node = random_case(t, seed, n_flows, tasks_per_node)
    _, src2, dst2, nbytes2, _ = random_case(t, seed + 1, n_flows, tasks_per_node)
    # random_case draws n_tasks from the topology only, so both traffics share the tasks.
    base = np.asarray(run_evaluator(t, n_tasks, src, dst, nbytes, task_node, routing_dict)["link_load"].values)
    other = np.asarray(run_evaluator(t, n_tasks, src2, dst2, nbytes2, task_node, routing_dict)["link_load"].values)
    tripled = np.asarray(run_evaluator(t, n_tasks, src, dst, 3.0 * nbytes, task_node, routing_dict)["link_load"].values)
    both = np.asarray(run_evaluator(t, n_tasks, np.concatenate([src, src2]), np.concatenate([dst, dst2]),
                                    np.concatenate([nbytes, nbytes2]), task_node, routing_dict)["link_load"].values)
    np.testing.assert_allclose(tripled, 3.0 * base, rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(both, base + other, rtol=RTOL, atol=ATOL)
