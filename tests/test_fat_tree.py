"""Fat trees (XGFT) and their routings against independent references.

* the topology against the XGFT definition (labels, parents, link counts) and NetworkX (distances);
* ``dmodk`` and ``ecmp_spray`` (the fluid split; hashed ``ecmp``: tests/test_ecmp_hash.py) link for link
  against (a) a per-flow walk written here from the labels (the router coordinates) and the router graph,
  and (b) a NetworkX enumeration of every shortest path between
  two leaves with ECMP's split computed hop by hop (D-mod-k: its one path is an up*/down* shortest path);
* closed forms: full bisection bandwidth of an untapered tree, per-level loads of all-to-all and shifts,
  D-mod-k contention-free on shifts of a k-ary n-tree (Zahavi) but not on a tapered tree; D-mod-k with
  parallel links (issue 35): all-to-all at the spray's time, shifts by leaves contention-free;
* the dense all-to-all against its materialised flows through the kernel; the routing module's own walks
  (the bench's reference) against the walk here.
"""

from __future__ import annotations

import math

import jax
import networkx as nx
import numpy as np
import pytest

import evaluator as ev
from evaluator import placement, routing, traffic
from evaluator.errors import ConfigError, ResourceError
from evaluator.routing import build_routing, dmodk_paths, ecmp_paths
from evaluator.topology import fat_tree
from evaluator.traffic.dense import all_to_all as dense_all_to_all
from tests.helpers import TOL

RTOL, ATOL = TOL["rel"], TOL["bytes"]

TREES = {
    "2-ary 3-tree": lambda: fat_tree(k=2, levels=3),
    "3-ary 2-tree": lambda: fat_tree(k=3, levels=2),
    "tapered": lambda: fat_tree([4, 4], [1, 2]),
    "xgft-parallel": lambda: fat_tree([3, 2, 3], [1, 2, 1], parallel_links=[2, 3], link_bandwidth=[5e9, 7e9]),
    "xgft-mixed": lambda: fat_tree([2, 3, 2], [1, 2, 3], parallel_links=[1, 2]),
}
_BUILT: dict = {}


def tree(name):
    if name not in _BUILT:
        _BUILT[name] = TREES[name]()
    return _BUILT[name]


# --------------------------------------------------------------------------------------
# references written here: labels, the router graph, the walks
# --------------------------------------------------------------------------------------


def host_label(t, node):
    """``(x_h, ..., x_1)`` of a host: the row-major digits of its id (radices ``m_h .. m_1``)."""
    return tuple(int(x) for x in np.unravel_index(node, tuple(t.children[::-1])))


def router_of(t):
    """label ``(level, a_h, ..., a_1)`` -> router id."""
    return {tuple(int(x) for x in c): r for r, c in enumerate(np.asarray(t.router_coords))}


def parallel(t):
    """``(src router, dst router)`` -> its link ids, ascending (the parallel copies in order)."""
    out: dict = {}
    for s, d, lid in t.router_edges():
        out.setdefault((s, d), []).append(lid)
    return out


def nca_level(t, a, d):
    """Lowest level whose subtree holds both hosts (their labels agree on x_h .. x_{l+1})."""
    la, ld = host_label(t, a), host_label(t, d)
    h = t.levels
    for lvl in range(1, h + 1):
        if la[: h - lvl] == ld[: h - lvl]:
            return lvl
    raise AssertionError


def walk(t, a, d, kind):
    """Per-flow walk on the labels: ``[(prob, [link ids])]`` of node ``a`` -> node ``d`` (router links only).

    Up: at level i the switch ``(x_h..x_{i+1}, y_i..y_1)`` goes to ``(x_h..x_{i+2}, y_{i+1}, y_i..y_1)``
    over parallel copy c. D-mod-k as Zahavi (2010) and SimGrid's FAT_TREE define it: one digit of the
    destination per level, ``v = floor(d / (w_1 ... w_i)) mod (w_{i+1} pl_i)``, numbering the ``w_{i+1} pl_i``
    up ports parent fastest (SimGrid's port ``parent + copy * w``): ``y_{i+1} = v mod w_{i+1}``, ``c = v div
    w_{i+1}``. ``ecmp_spray`` (any other ``kind``): every (parent, copy) with ``1 / (w_{i+1} pl_i)``. Down:
    replace ``y_i`` by the destination's ``x_i``, over the same copy (D-mod-k) or every copy (the spray, ``1 /
    pl`` each).
    """
    if a == d:
        return []
    h, w, pl = t.levels, t.parents, t.parallel_links
    rid, links = router_of(t), parallel(t)
    xa, xd = host_label(t, a), host_label(t, d)
    top = nca_level(t, a, d)
    leaf = (1,) + xa[: h - 1] + (0,)
    partial = [(1.0, leaf, [], [])]  # prob, current label, up links, copies used per tier
    for i in range(1, top):
        if kind == "dmodk":
            v = (d // math.prod(w[:i])) % (w[i] * pl[i - 1])
            ports = [(v % w[i], v // w[i])]
        else:
            ports = [(y, c) for y in range(w[i]) for c in range(pl[i - 1])]
        grown = []
        for prob, lab, up, copies in partial:
            for y, c in ports:
                digits = list(lab[1:])
                digits[h - (i + 1)] = y  # x_{i+1} -> y_{i+1}
                nxt = (i + 1,) + tuple(digits)
                lk = links[(rid[lab], rid[nxt])][c]
                grown.append((prob / len(ports), nxt, up + [lk], copies + [c]))
        partial = grown
    out = []
    for prob, lab, up, copies in partial:
        branches = [(prob, lab, up)]
        for i in range(top, 1, -1):  # level i -> level i-1, towards d
            grown = []
            for p, cur, path in branches:
                digits = list(cur[1:])
                digits[h - i] = xd[h - i]  # y_i -> d's x_i
                child = (i - 1,) + tuple(digits)
                par = links[(rid[cur], rid[child])]
                choices = [par[copies[i - 2]]] if kind == "dmodk" else par
                grown += [(p / len(choices), child, path + [lk]) for lk in choices]
            branches = grown
        for p, cur, path in branches:
            assert cur == (1,) + xd[: h - 1] + (0,), "the walk did not reach d's leaf"
            out.append((p, path))
    return out


def walk_loads(t, flows, task_node, kind):
    """Expected bytes on every link of ``flows`` ``(src task, dst task, bytes)`` by :func:`walk`."""
    n_rl, N = t.n_router_links, t.n_nodes
    out = np.zeros(t.n_links)
    cache: dict = {}
    for s, d, b in flows:
        a, z = int(task_node[s]), int(task_node[d])
        if a == z:
            continue
        out[n_rl + a] += b
        out[n_rl + N + z] += b
        if kind == "ecmp_spray":  # the spray depends on the leaves only: the first node of each leaf gives it
            key = (a // t.children[0], z // t.children[0])
            if key not in cache:
                cache[key] = walk(t, key[0] * t.children[0], key[1] * t.children[0], kind)
            paths = cache[key]
        else:
            paths = walk(t, a, z, kind)
        for p, path in paths:
            for lk in path:
                out[lk] += p * b
    return out


def router_graph(t):
    G = nx.DiGraph()
    G.add_nodes_from(range(t.n_routers))
    G.add_edges_from((s, d) for s, d, _ in t.router_edges())
    return G


def nx_ecmp_loads(t, s_leaf, d_leaf):
    """ECMP's expected router-link loads of one byte from leaf ``s_leaf`` to leaf ``d_leaf``: every shortest
    router path (NetworkX), its probability the product over hops of the share of the hop's parallel links
    among all links to next hops that are on a shortest path; each hop's share split over its parallel links."""
    G = router_graph(t)
    links = parallel(t)
    dist = nx.single_target_shortest_path_length(G, d_leaf)
    dist = dict(dist)
    out = np.zeros(t.n_router_links)
    for path in nx.all_shortest_paths(G, s_leaf, d_leaf):
        prob = 1.0
        for r, n in zip(path, path[1:]):
            nxt = [x for x in G.successors(r) if dist.get(x, math.inf) == dist[r] - 1]
            prob *= len(links[(r, n)]) / sum(len(links[(r, x)]) for x in nxt)
        for r, n in zip(path, path[1:]):
            for lk in links[(r, n)]:
                out[lk] += prob / len(links[(r, n)])
    return out


def per_pair_loads(t, kind, src, dst):
    """The operator's router-link loads of one byte of every pair (``src``/``dst``: its endpoints), [pair, link]."""
    op = build_routing(t, routing.dmodk() if kind == "dmodk" else routing.ecmp_spray())
    tables = {k: jax.numpy.asarray(v) for k, v in op.tables.items()}
    one = jax.jit(jax.vmap(lambda s, d: op.apply(tables, s[None], d[None], jax.numpy.ones(1))))
    return np.asarray(one(jax.numpy.asarray(src), jax.numpy.asarray(dst)))


# --------------------------------------------------------------------------------------
# the topology
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(TREES))
def test_topology_is_the_xgft(name):
    """Counts, labels and every link against the XGFT definition; leaf distances against BFS."""
    t = tree(name)
    h, m, w, pl = t.levels, t.children, t.parents, t.parallel_links
    assert t.n_nodes == math.prod(m) and t.nodes_per_router == 0 and t.kind == "fat_tree"
    coords = np.asarray(t.router_coords)
    for i in range(1, h + 1):
        assert (coords[:, 0] == i).sum() == math.prod(m[i:]) * math.prod(w[:i])
    assert (np.diff(coords[:, 0]) >= 0).all()  # level by level, leaves first
    # node ids leaf-major: node = leaf * m_1 + port; leaf l is router l and its label is the host's x_h .. x_2
    for node in range(t.n_nodes):
        leaf = int(t.node_router[node])
        assert leaf == node // m[0]
        assert tuple(coords[leaf]) == (1,) + host_label(t, node)[: h - 1] + (0,)
    # every switch-to-switch link: a child and the parent whose label replaces x_{i+1} by y_{i+1}, pl copies
    expected = {}
    for lab, r in router_of(t).items():
        i = lab[0]
        if i == h:
            continue
        for y in range(w[i]):
            digits = list(lab[1:])
            digits[h - (i + 1)] = y
            par = router_of(t)[(i + 1,) + tuple(digits)]
            expected[(r, par)] = expected[(par, r)] = pl[i - 1]
    got = {k: len(v) for k, v in parallel(t).items()}
    assert got == expected
    names = t.link_class_names()
    for lid, (s, d) in enumerate(zip(t.link_src[: t.n_router_links], t.link_dst[: t.n_router_links])):
        lo = min(coords[s, 0], coords[d, 0])
        assert names[lid] == f"level{lo}-{'up' if coords[d, 0] > coords[s, 0] else 'down'}"
        assert t.capacity[lid] == t.link_bandwidth[lo - 1]
    assert set(names[t.n_router_links:]) == {"injection", "ejection"}
    # distances: two leaves are 2 (l - 1) hops apart, l their nearest common ancestor level
    D = t.router_distances()
    for a in range(0, t.n_nodes, m[0]):
        for d in range(0, t.n_nodes, m[0]):
            la, ld = int(t.node_router[a]), int(t.node_router[d])
            assert D[la, ld] == 2 * (nca_level(t, a, d) - 1)
    leaves = t.host_routers
    assert D[np.ix_(leaves, leaves)].max() == t.diameter_bound() == 2 * (h - 1)


@pytest.mark.parametrize("name", sorted(TREES))
def test_furthest_routers_and_node_groups(name):
    """The closed-form partner is a permutation of the leaves at the largest distance, as the generic
    assignment (the base class's linear_sum_assignment) finds; node groups are the subtrees."""
    t = tree(name)
    D = t.router_distances()
    pr = t.furthest_routers()
    leaves = t.host_routers
    assert sorted(pr[leaves].tolist()) == leaves.tolist() and (pr[t.n_nodes // t.children[0]:] == -1).all()
    generic = ev.topology.Topology.furthest_routers(t)
    assert D[leaves, pr[leaves]].sum() == D[leaves, generic[leaves]].sum()
    assert (D[leaves, pr[leaves]] == D[np.ix_(leaves, leaves)].max()).all()
    groups = t.node_groups()
    assert groups.shape == (max(t.levels - 1, 1), t.n_nodes)
    assert (groups[0] == t.node_router).all()
    for i, row in enumerate(groups, start=1):
        for a in range(t.n_nodes):
            for d in range(0, t.n_nodes, 3):
                assert (row[a] == row[d]) == (nca_level(t, a, d) <= i)
    # bisection pairing: every node paired with a node at the largest distance
    tr = traffic.bisection_pairing(t, 1.0)
    sr, dr = t.node_router[tr.src], t.node_router[tr.dst]
    assert (D[sr, dr] == D[np.ix_(leaves, leaves)].max()).all()
    assert sorted(tr.dst.tolist()) == list(range(t.n_nodes))


@pytest.mark.parametrize("kwargs,field", [
    (dict(levels=0), "topology.levels"),
    (dict(k=1), "topology.k"),
    (dict(children=[4, 4], levels=3), "topology.children"),
    (dict(children=[4, 4], parents=[1, 2, 2]), "topology.parents"),
    (dict(children=[4, 4], parents=[2, 4]), "topology.parents"),
    (dict(children=[4, 1, 4]), "topology.children"),
    (dict(children=[4, 0]), "topology.children[1]"),
    (dict(children=[4, 4], parents=[1, 0]), "topology.parents[1]"),
    (dict(children=[4, 4], k=4), "topology.k"),
    (dict(parents=[1, 4]), "topology.parents"),
    (dict(k=4, levels=3, radix=7), "topology.radix"),  # a k-ary tree needs 2k ports per switch
    (dict(children=[8, 8], parents=[1, 4], parallel_links=2, radix=15), "topology.radix"),  # 8 + 4x2 = 16 ports
    (dict(k=4, levels=3, parallel_links=[1, 2, 3]), "topology.parallel_links"),
    (dict(k=4, levels=3, parallel_links=0), "topology.parallel_links"),
    (dict(k=4, levels=3, link_bandwidth=[1e9, -1.0]), "topology.link_bandwidth[1]"),
    (dict(k=4, levels=3, link_bandwidth=0.0), "topology.link_bandwidth"),
    (dict(k=4, injection_bandwidth=float("nan")), "topology.injection_bandwidth"),
    (dict(children="4,4"), "topology.children"),
])
def test_bad_input_names_the_field(kwargs, field):
    with pytest.raises(ConfigError) as exc:
        fat_tree(**kwargs)
    assert exc.value.field == field, str(exc.value)
    assert "allowed is" in str(exc.value)


def test_radix_that_fits_and_too_large_a_tree():
    assert fat_tree(k=4, levels=3, radix=8).n_routers == 48  # 4 down + 4 up ports: exactly 8
    with pytest.raises(ResourceError) as exc:
        fat_tree(k=4096, levels=3)  # 6.9e10 nodes
    assert exc.value.field == "topology" and "fits in memory" in str(exc.value)


# --------------------------------------------------------------------------------------
# the routings against the two references
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(TREES))
def test_operators_against_walk_and_networkx_per_pair(name):
    """Every pair alone through the operator: D-mod-k's one path is the walk's and an up*/down* shortest
    path with one byte on each hop; ECMP's loads are the walk's and NetworkX's per-hop split."""
    t = tree(name)
    N, m1 = t.n_nodes, t.children[0]
    level = np.asarray(t.router_coords)[:, 0]
    D = t.router_distances()
    src, dst = (x.reshape(-1) for x in np.meshgrid(np.arange(N), np.arange(N), indexing="ij"))
    off = src // m1 != dst // m1
    src, dst = src[off], dst[off]
    loads = per_pair_loads(t, "dmodk", src, dst)
    for a, d, row in zip(src.tolist(), dst.tolist(), loads):
        ref = np.zeros(t.n_router_links)
        ((p, path),) = walk(t, a, d, "dmodk")
        ref[path] = 1.0
        np.testing.assert_array_equal(row, ref, err_msg=f"{t.name} dmodk {a}->{d}")
        assert dmodk_paths(t, a, d) == [(1.0, path)]
        # an up*/down* shortest path: consecutive, levels up then down, as long as the leaf distance
        hops = [(int(t.link_src[lk]), int(t.link_dst[lk])) for lk in path]
        assert hops[0][0] == t.node_router[a] and hops[-1][1] == t.node_router[d]
        assert all(x[1] == y[0] for x, y in zip(hops, hops[1:]))
        lv = [level[s] for s, _ in hops] + [level[hops[-1][1]]]
        k = int(np.argmax(lv))
        assert all(np.diff(lv[: k + 1]) == 1) and all(np.diff(lv[k:]) == -1)
        assert len(path) == D[t.node_router[a], t.node_router[d]]
    leaves = np.arange(N // m1)
    s_leaf, d_leaf = (x.reshape(-1) for x in np.meshgrid(leaves, leaves, indexing="ij"))
    keep = s_leaf != d_leaf
    s_leaf, d_leaf = s_leaf[keep], d_leaf[keep]
    loads = per_pair_loads(t, "ecmp_spray", s_leaf, d_leaf)
    for s, d, row in zip(s_leaf.tolist(), d_leaf.tolist(), loads):
        ref_walk = np.zeros(t.n_router_links)
        for p, path in walk(t, s * m1, d * m1, "ecmp_spray"):
            np.add.at(ref_walk, path, p)
        np.testing.assert_allclose(row, ref_walk, rtol=RTOL, atol=TOL["prob"], err_msg=f"{t.name} spray {s}->{d}")
        np.testing.assert_allclose(row, nx_ecmp_loads(t, s, d), rtol=RTOL, atol=TOL["prob"])
        mod = np.zeros(t.n_router_links)
        for p, path in ecmp_paths(t, s * m1 + m1 - 1, d * m1):
            np.add.at(mod, path, p)
        np.testing.assert_allclose(mod, ref_walk, rtol=RTOL, atol=TOL["prob"])


def random_case(t, seed, n_flows=96, tasks_per_node=1.5):
    rng = np.random.default_rng(seed)
    n_tasks = int(t.n_nodes * tasks_per_node)
    task_node = rng.integers(0, t.n_nodes, n_tasks)
    src = rng.integers(0, n_tasks, n_flows)
    dst = rng.integers(0, n_tasks, n_flows)
    nbytes = rng.integers(1, 10**6, n_flows) * rng.choice([1.0, 0.25, 1e-3], n_flows)
    return n_tasks, src, dst, nbytes, task_node


@pytest.mark.parametrize("kind", ["dmodk", "ecmp_spray"])
@pytest.mark.parametrize("name", sorted(TREES))
def test_kernel_against_walk_sparse_and_dense(name, kind):
    """Random flows and placements (shared nodes, same-leaf and same-node pairs) through evaluate, link for
    link; the dense all-to-all (with uneven weights) against its materialised flows and the walk."""
    t = tree(name)
    rt = routing.dmodk() if kind == "dmodk" else routing.ecmp_spray()
    for seed in (0, 1):
        n_tasks, src, dst, nbytes, tn = random_case(t, seed)
        ds = ev.evaluate(t, traffic.from_flows(n_tasks, src, dst, nbytes), placement.explicit(t, tn), rt)
        ref = walk_loads(t, zip(src.tolist(), dst.tolist(), nbytes.tolist()), tn, kind)
        got = np.asarray(ds["link_load"].values)
        np.testing.assert_allclose(got, ref, rtol=RTOL, atol=ATOL, err_msg=f"{t.name} {kind} seed {seed}")
        assert float(ds.completion_time) == pytest.approx(float(np.max(ref / t.capacity)), rel=RTOL)
        crossing = tn[src] != tn[dst]
        assert float(ds.mean_hops) == pytest.approx(ref[: t.n_router_links].sum() / nbytes[crossing].sum(),
                                                    rel=TOL["rel_sum"])
    # dense: all-to-all of 1.5 tasks per node (random placement: some nodes share, some hold none)
    n_tasks = int(t.n_nodes * 1.5)
    dense = dense_all_to_all(n_tasks, 3.0e3)
    pl = placement.fully_random(t, n_tasks, tasks_per_node=2, seed=3)
    got = np.asarray(ev.evaluate(t, dense, pl, rt)["link_load"].values)
    flows = dense.to_traffic()
    mat = np.asarray(ev.evaluate(t, flows, pl, rt)["link_load"].values)
    np.testing.assert_allclose(got, mat, rtol=RTOL, atol=TOL["bytes_loose"])
    ref = walk_loads(t, zip(flows.src.tolist(), flows.dst.tolist(), flows.nbytes.tolist()), pl.task_node, kind)
    np.testing.assert_allclose(got, ref, rtol=RTOL, atol=TOL["bytes_loose"])


# --------------------------------------------------------------------------------------
# closed forms
# --------------------------------------------------------------------------------------

B = 10.0e9
b = 4.0e6


def evaluate_flows(t, src, dst, rt, n=None):
    n = t.n_nodes if n is None else n
    tr = traffic.from_flows(n, np.asarray(src), np.asarray(dst), np.full(len(src), b))
    return ev.evaluate(t, tr, placement.linear(t, n), rt)


@pytest.mark.parametrize("kwargs", [dict(k=2, levels=3), dict(k=4, levels=2), dict(children=[2, 3, 2])])
def test_untapered_tree_has_full_bisection_bandwidth(kwargs):
    """No taper (w_{i+1} = m_i, equal bandwidths): ECMP moves every permutation, bisection pairing included,
    at the injection rate, b / B; the bisection (half the nodes to the other half) carries N/2 x B."""
    t = fat_tree(**kwargs, link_bandwidth=B, injection_bandwidth=B)
    N = t.n_nodes
    pair = traffic.bisection_pairing(t, b)
    for tr in [pair] + [traffic.random_permutation(N, b, seed=s) for s in range(3)]:
        ds = ev.evaluate(t, tr, placement.linear(t, N), routing.ecmp_spray())
        assert float(ds.completion_time) == pytest.approx(b / B, rel=RTOL)
    ds = ev.evaluate(t, pair, placement.linear(t, N), routing.ecmp_spray())
    assert float(ds.throughput) == pytest.approx(N * B, rel=RTOL)  # every byte crosses the top: N/2 x B each way


def test_tapered_tree_slows_by_its_taper():
    """XGFT(2; 4, 4; 1, 2): 4 hosts per leaf, 2 uplinks (taper 2). A shift by 4 sends every flow out of its
    leaf: 4 b over 2 links, 2 b / B for both routings (and the MCF bound: the cut around a leaf)."""
    t = fat_tree([4, 4], [1, 2], link_bandwidth=B, injection_bandwidth=B)
    src = np.arange(16)
    for rt in (routing.ecmp_spray(), routing.dmodk()):
        ds = evaluate_flows(t, src, (src + 4) % 16, rt)
        assert float(ds.completion_time) == pytest.approx(2 * b / B, rel=RTOL)
        assert str(ds.bottleneck.values) == "level1-up"
    untapered = fat_tree([4, 4], link_bandwidth=B, injection_bandwidth=B)
    assert float(evaluate_flows(untapered, src, (src + 4) % 16, routing.dmodk()).completion_time) == \
        pytest.approx(b / B, rel=RTOL)


@pytest.mark.parametrize("k,n", [(2, 3), (3, 2), (2, 4)])
def test_all_to_all_per_level_loads(k, n):
    """k-ary n-tree, all-to-all of b per pair, one task per node: a tier-t link carries (N - k^t) b (the
    k^t nodes of a level-t subtree send to the N - k^t others over its k^t up links; D-mod-k spreads the
    destinations of every subtree over its ports one each), a node link (N - 1) b."""
    t = fat_tree(k=k, levels=n, link_bandwidth=B, injection_bandwidth=B)
    N = t.n_nodes
    names = t.link_class_names()
    for rt in (routing.ecmp_spray(), routing.dmodk()):
        ds = ev.evaluate(t, traffic.all_to_all(N, b), placement.linear(t, N), rt)
        load = np.asarray(ds["link_load"].values)
        for i in range(1, n):
            for d in ("up", "down"):
                np.testing.assert_allclose(load[names == f"level{i}-{d}"], (N - k ** i) * b, rtol=RTOL)
        np.testing.assert_allclose(load[t.n_router_links:], (N - 1) * b, rtol=RTOL)


def test_shift_by_one_per_link():
    """3-ary 2-tree, shift by 1: one flow leaves every leaf (its last node to the next leaf's first). ECMP: b/3
    on each of the leaf's 3 uplinks and on the 3 downlinks into the next leaf; D-mod-k (d = 3 L, port d mod 3
    = 0): b on uplink 0 of every leaf and on the downlink from top switch 0, nothing elsewhere."""
    t = fat_tree(k=3, levels=2)
    src = np.arange(9)
    dst = (src + 1) % 9
    load = np.asarray(evaluate_flows(t, src, dst, routing.ecmp_spray())["link_load"].values)[: t.n_router_links]
    np.testing.assert_allclose(load, b / 3, rtol=RTOL)
    load = np.asarray(evaluate_flows(t, src, dst, routing.dmodk())["link_load"].values)[: t.n_router_links]
    top = np.asarray(t.router_coords)[:, 0] == 2
    first_top = int(np.flatnonzero(top & (np.asarray(t.router_coords)[:, 2] == 0))[0])  # label (2, y_2 = 0, 0)
    used = (t.link_src[: t.n_router_links] == first_top) | (t.link_dst[: t.n_router_links] == first_top)
    np.testing.assert_array_equal(load, np.where(used, b, 0.0))


def test_dmodk_contention_free_on_shifts_of_a_k_ary_tree():
    """Zahavi et al.: D-mod-k routes every shift permutation of a k-ary n-tree with at most one flow per link;
    a tapered tree does not (some shift puts m_1 / w_2 flows on an uplink)."""
    for t in (fat_tree(k=2, levels=4), fat_tree(k=3, levels=3)):
        N = t.n_nodes
        src = np.arange(N)
        for s in range(1, N):
            load = np.asarray(evaluate_flows(t, src, (src + s) % N, routing.dmodk())["link_load"].values)
            assert load[: t.n_router_links].max() == b, (t.name, s)
    tapered = fat_tree([4, 4, 2], [1, 2, 4])
    src = np.arange(tapered.n_nodes)
    worst = max(np.asarray(evaluate_flows(tapered, src, (src + s) % 32, routing.dmodk())["link_load"].values)
                [: tapered.n_router_links].max() for s in range(1, 32))
    assert worst == 2 * b


def test_single_level_tree():
    """h = 1: one switch, no router links: only injection and ejection carry bytes."""
    t = fat_tree([6], levels=1)
    assert t.n_router_links == 0 and t.diameter_bound() == 0 and t.class_names == ("injection", "ejection")
    for rt in (routing.ecmp_spray(), routing.dmodk()):
        ds = ev.evaluate(t, traffic.all_to_all(6, b), placement.linear(t, 6), rt)
        assert float(ds.completion_time) == pytest.approx(5 * b / t.injection_bandwidth, rel=RTOL)


# --------------------------------------------------------------------------------------
# D-mod-k with parallel links (issue 35, item 3)
# --------------------------------------------------------------------------------------

UNTAPERED = [dict(k=2, levels=2, parallel_links=3), dict(k=3, levels=2, parallel_links=2),
             dict(k=4, levels=2, parallel_links=1), dict(k=2, levels=3, parallel_links=[3, 2]),
             dict(k=3, levels=3, parallel_links=[1, 3]), dict(k=4, levels=3, parallel_links=1),
             dict(k=4, levels=3, parallel_links=2), dict(k=2, levels=4, parallel_links=2),
             dict(children=[2, 3, 2], parallel_links=[2, 2]), dict(children=[3, 2, 3], parallel_links=[3, 2]),
             dict(children=[4, 2, 3], parallel_links=1)]


@pytest.mark.parametrize("kwargs", UNTAPERED, ids=lambda kw: "-".join(f"{k}{v}" for k, v in kw.items()))
def test_dmodk_untapered_all_to_all_equals_ecmp_and_shifts_by_leaves_are_contention_free(kwargs):
    """Every untapered tree (``parents`` default, equal bandwidths), with and without parallel links: D-mod-k's
    all-to-all time equals ECMP's (each destination's one down link per tier, every tier's links loaded at most
    as much as a node's ejection link), and every shift by a multiple of a leaf's node count loads each router
    link with at most one flow (the destinations of a leaf's flows differ in every digit D-mod-k reads)."""
    t = fat_tree(**kwargs, link_bandwidth=B, injection_bandwidth=B)
    N, m1 = t.n_nodes, t.children[0]
    a2a = traffic.all_to_all(N, b)
    times = [float(ev.evaluate(t, a2a, placement.linear(t, N), rt).completion_time)
             for rt in (routing.dmodk(), routing.ecmp_spray())]
    assert times[0] == pytest.approx(times[1], rel=1e-9), (t.name, times)
    src = np.arange(N)
    for s in range(m1, N, m1):
        load = np.asarray(evaluate_flows(t, src, (src + s) % N, routing.dmodk())["link_load"].values)
        assert load[: t.n_router_links].max() == b, (t.name, s)


def test_dmodk_parallel_links_4_ary_3_tree_uses_every_top_switch():
    """The issue's case: the 4-ary 3-tree with 2 links per switch pair. The old rule (divisor U_1 .. U_{t-1},
    copy the low digit) reached 4 of the 16 top switches per pod and left 96 of the 128 top-to-pod links idle:
    all-to-all 1.52x ECMP's time. Now every pod's 16 destinations come down from 16 distinct top switches (one
    copy each: 64 idle links, each used one carrying 48 flows < 63 on an ejection link) at ECMP's time."""
    t = fat_tree(k=4, levels=3, parallel_links=2, link_bandwidth=B, injection_bandwidth=B)
    N = t.n_nodes
    ds = ev.evaluate(t, traffic.all_to_all(N, b), placement.linear(t, N), routing.dmodk())
    load = np.asarray(ds["link_load"].values)
    top_down = load[t.link_class_names() == "level2-down"]
    assert (top_down == 0).sum() == 64 and top_down.max() == pytest.approx(48 * b, rel=RTOL)
    assert float(ds.completion_time) == pytest.approx(63 * b / B, rel=RTOL)
    assert str(ds.bottleneck.values) in ("injection", "ejection")  # a node link (both carry 63 b)
    coords = np.asarray(t.router_coords)
    for pod in range(4):
        dests = range(16 * pod, 16 * pod + 16)
        paths = [walk(t, (d + 16) % N, d, "dmodk")[0][1] for d in dests]  # from another pod
        tops = {int(t.link_src[lk]) for path in paths for lk in path if coords[int(t.link_src[lk]), 0] == 3}
        assert len(tops) == 16
