"""Audit of the topology builders against references written here from the documented definitions.

* Dragonfly(p, a, h, g): every directed link (local, global, node) against a port-by-port construction from the
  ``dragonfly`` docstring (port ``j`` -> router ``j // h``, slot ``j mod (g-1)``, copy ``j // (g-1)``, the
  consecutive / relative target group, copy ``c`` joined to copy ``c``), closed-form counts, capacities per
  class, ``global_link`` / ``global_owner`` tables, degrees, diameter and connectivity by networkx;
* tori and meshes: every link against a neighbour walk over the coordinates (one link per direction in a
  wrapped dimension of two, none in a dimension of one), ``neighbor_link``, capacities, the default injection
  bandwidth, distances and diameter by networkx, the furthest-router permutation's total distance against
  SciPy's assignment over networkx distances;
* XGFT fat trees: router ids from the documented row-major label order, every up and down link from the label
  rule (``x_{i+1}`` replaced by ``y_{i+1}``, ``pl`` copies), the documented link-id layout, capacities per tier,
  diameter against networkx;
* reconfigurable Dragonflies: the link arrays against the port tables; the furthest-router pairing of one whose
  groups are not all connected (it raised ValueError from SciPy);
* catalogue machines: Mira's torus and a partition against its file's midplanes;
* bad parameters refused with a ConfigError naming the field and the value (a list as the Dragonfly's
  arrangement, and a non-number among Gemini's dims, crashed with a TypeError / ValueError).
"""

from __future__ import annotations

import itertools
import math
from collections import Counter

import networkx as nx
import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment

from evaluator.errors import ConfigError
from evaluator.topology import bgq_partition, dragonfly, fat_tree, gemini, machine_topology, rdn, torus


def _router_multiset(t, with_cap=False):
    n = t.n_router_links
    names = t.link_class_names()
    rows = zip(t.link_src[:n].tolist(), t.link_dst[:n].tolist(), names[:n].tolist(), t.capacity[:n].tolist())
    return Counter((s, d, c, cap) if with_cap else (s, d, c) for s, d, c, cap in rows)


def _nx_distances(routers, links):
    G = nx.DiGraph()
    G.add_nodes_from(range(routers))
    G.add_edges_from((s, d) for s, d, *_ in links)
    D = np.full((routers, routers), np.inf)
    for s, row in nx.all_pairs_shortest_path_length(G):
        for d, v in row.items():
            D[s, d] = v
    return G, D


def _check_common(t, nodes_per_router_of):
    """Node links, reverse links, no self-loops, class/capacity consistency: shared by every member."""
    n, N = t.n_router_links, t.n_nodes
    src, dst = np.asarray(t.link_src), np.asarray(t.link_dst)
    assert t.n_links == n + 2 * N
    assert (src[:n] >= 0).all() and (dst[:n] >= 0).all() and (src[:n] != dst[:n]).all()  # no self-loop
    assert (np.asarray(t.link_node[:n]) == -1).all()
    # every directed router link has its reverse with the same capacity, as many times
    fwd = Counter(zip(src[:n].tolist(), dst[:n].tolist(), t.capacity[:n].tolist()))
    rev = Counter(zip(dst[:n].tolist(), src[:n].tolist(), t.capacity[:n].tolist()))
    assert fwd == rev
    node = np.arange(N)
    expect_router = np.array([nodes_per_router_of(i) for i in range(N)], dtype=np.int64)
    np.testing.assert_array_equal(t.node_router, expect_router)
    inj, ej = t.injection_link(node), t.ejection_link(node)
    np.testing.assert_array_equal(inj, n + node)
    np.testing.assert_array_equal(ej, n + N + node)
    np.testing.assert_array_equal(src[inj], -1)
    np.testing.assert_array_equal(dst[inj], expect_router)
    np.testing.assert_array_equal(src[ej], expect_router)
    np.testing.assert_array_equal(dst[ej], -1)
    np.testing.assert_array_equal(t.link_node[inj], node)
    np.testing.assert_array_equal(t.link_node[ej], node)
    names = t.link_class_names()
    assert set(names[inj].tolist()) <= {"injection"} and set(names[ej].tolist()) <= {"ejection"}


# --------------------------------------------------------------------------------------------- Dragonfly


def _df_reference(p, a, h, g, arr):
    """Directed router links ``(src, dst, class)`` and ``{(G, H, c): (src, dst)}`` from the docstring's rules."""
    m = (a * h) // (g - 1)
    rel = arr == "relative"
    port_of = {}
    for G in range(g):
        for j in range(m * (g - 1)):
            t, c = j % (g - 1), j // (g - 1)
            H = (G + t + 1) % g if rel else (t if t < G else t + 1)
            assert (G, H, c) not in port_of
            port_of[(G, H, c)] = j
    links = Counter()
    for G in range(g):
        for i in range(a):
            for j in range(a):
                if i != j:
                    links[(G * a + i, G * a + j, "local")] += 1
    glob = {}
    for (G, H, c), j in port_of.items():
        s, d = G * a + j // h, H * a + port_of[(H, G, c)] // h
        glob[(G, H, c)] = (s, d)
        links[(s, d, "global")] += 1
    return m, links, glob, port_of


DF_CASES = [
    (2, 4, 2, 9, "consecutive"),
    (2, 4, 2, 9, "relative"),
    (1, 4, 2, 4, "absolute"),       # m = 2, two ports per group left over
    (1, 3, 2, 5, "relative"),       # m = 1, two ports per group left over
    (1, 2, 2, 2, "consecutive"),    # two groups, m = a*h = 4 parallel links
    (3, 1, 1, 2, "relative"),       # one router per group
    (2, 2, 3, 5, "consecutive"),    # a global port on another router than its copy
]


@pytest.mark.parametrize("p,a,h,g,arr", DF_CASES)
def test_dragonfly_links_tables_and_distances_against_the_definition(p, a, h, g, arr):
    bp, bl, br = 1.0e9, 2.0e9, 3.0e9
    t = dragonfly(p, a, h, g, bandwidth_p=bp, bandwidth_l=bl, bandwidth_r=br, arrangement=arr)
    m, ref, glob, port_of = _df_reference(p, a, h, g, arr)
    R = g * a
    assert (t.n_routers, t.n_nodes, t.links_per_pair) == (R, R * p, m)
    assert t.arrangement == ("consecutive" if arr == "absolute" else arr)
    # closed-form counts per class
    names = t.link_class_names()
    cnt = Counter(names.tolist())
    assert cnt == Counter({"local": g * a * (a - 1), "global": g * (g - 1) * m, "injection": R * p, "ejection": R * p})
    if g == a * h + 1:
        assert cnt["global"] == g * a * h
    # every router link against the port rules, and capacities per class
    assert _router_multiset(t) == ref
    cap_of = {"local": bl, "global": br, "injection": bp, "ejection": bp}
    np.testing.assert_array_equal(t.capacity, [cap_of[c] for c in names.tolist()])
    _check_common(t, lambda n: n // p)
    np.testing.assert_array_equal(t.router_coords, [(r // a, r % a) for r in range(R)])
    # the tables: global_link[G, H, c] is the link of copy c from G to H, owned / landing as the rules say
    for (G, H, c), (s, d) in glob.items():
        lid = int(t.global_link[G, H, c])
        assert (int(t.link_src[lid]), int(t.link_dst[lid]), names[lid]) == (s, d, "global")
        assert t.owner_router(G, H, c) == s and t.landing_router(G, H, c) == d
        assert int(t.global_owner[G, H, c]) == port_of[(G, H, c)] // h
    assert (np.asarray(t.global_link)[np.arange(g), np.arange(g)] == -1).all()
    for G in range(g):
        for i in range(a):
            for j in range(a):
                lid = int(t.local_link[G, i, j])
                assert (lid == -1) if i == j else (int(t.link_src[lid]), int(t.link_dst[lid])) == (G * a + i,
                                                                                                  G * a + j)
    # the docstring: the m copies to one group sit on different routers where g - 1 >= h (not where g - 1 < h)
    owners = Counter((G, H, t.owner_router(G, H, c)) for (G, H, c) in glob)
    assert (max(owners.values()) == 1) == (g - 1 >= h or m == 1)
    # each group pair joined m times each way
    pair = Counter((s // a, d // a) for s, d, c in ref.elements() if c == "global")
    assert pair == {(G, H): m for G in range(g) for H in range(g) if G != H}
    # degrees: a-1 local each way; global ports used on a router = ports j < m (g-1) with j // h == router index
    out_g = Counter(s for s, d, c in ref.elements() if c == "global")
    in_g = Counter(d for s, d, c in ref.elements() if c == "global")
    for r in range(R):
        used = sum(1 for j in range(m * (g - 1)) if j // h == r % a)
        assert out_g[r] == in_g[r] == used <= h
    # distances by networkx: connected, diameter within the documented bound of 3
    Gx, D = _nx_distances(R, ref.elements())
    assert nx.is_strongly_connected(Gx)
    np.testing.assert_array_equal(t.router_distances(), D)
    assert D.max() <= t.diameter_bound() == 3
    r = np.repeat(np.arange(R), p)
    np.testing.assert_array_equal(t.node_groups(), np.stack([r, r // a]))


def test_dragonfly_absolute_is_the_consecutive_arrangement():
    x, y = dragonfly(1, 4, 2, 6, arrangement="absolute"), dragonfly(1, 4, 2, 6, arrangement="consecutive")
    np.testing.assert_array_equal(x.link_src, y.link_src)
    np.testing.assert_array_equal(x.link_dst, y.link_dst)
    # and relative differs from it (the arrangement is read)
    z = dragonfly(1, 4, 2, 6, arrangement="relative")
    assert _router_multiset(z) != _router_multiset(x)


# --------------------------------------------------------------------------------------------- tori


def _torus_reference(dims, wrap):
    """``(src, dst, class)`` of every router link by a neighbour walk over the row-major coordinates, and the
    ``+1`` / ``-1`` neighbour of every router and dimension (-1: none)."""
    coords = list(itertools.product(*[range(n) for n in dims]))
    rid = {c: i for i, c in enumerate(coords)}
    links = Counter()
    nb = -np.ones((len(coords), len(dims), 2), dtype=np.int64)
    for r, c in enumerate(coords):
        for k, n in enumerate(dims):
            seen = set()
            for di, step in enumerate((1, -1)):
                x = c[k] + step
                if wrap[k]:
                    x %= n
                elif not 0 <= x < n:
                    continue
                if x == c[k]:
                    continue
                nb[r, k, di] = rid[c[:k] + (x,) + c[k + 1:]]
                seen.add(x)
            for x in seen:  # one link per neighbour: a wrapped dimension of two has one each way
                links[(r, rid[c[:k] + (x,) + c[k + 1:]], f"torus-dim{k}")] += 1
    return coords, links, nb


TORUS_CASES = [
    ((5,), True, 1), ((2,), True, 1), ((1,), True, 3), ((3, 4), True, 1), ((2, 3, 1), (True, False, True), 2),
    ((2, 2), False, 1), ((5, 2), (False, True), 1), ((4, 2, 3), True, 2), ((3, 3), (True, False), 1),
]


@pytest.mark.parametrize("dims,wrap,npr", TORUS_CASES)
def test_torus_links_neighbours_and_distances_against_a_walk(dims, wrap, npr):
    wrap_t = (wrap,) * len(dims) if isinstance(wrap, bool) else wrap
    bw = tuple(1.0e9 * (k + 1) for k in range(len(dims)))
    t = torus(list(dims), wrap=list(wrap_t), link_bandwidth=list(bw), nodes_per_router=npr)
    coords, ref, nb = _torus_reference(dims, wrap_t)
    R = math.prod(dims)
    assert (t.n_routers, t.n_nodes) == (R, R * npr)
    np.testing.assert_array_equal(t.router_coords, np.array(coords).reshape(R, len(dims)))
    assert _router_multiset(t) == ref
    # closed form per dimension: 2 per router (n >= 3 wrapped), 1 (n == 2 wrapped), 0 (n == 1), 2(n-1)R/n (open)
    per = Counter(c for *_, c in ref.elements())
    for k, n in enumerate(dims):
        want = (2 * R if n >= 3 else (R if n == 2 else 0)) if wrap_t[k] else 2 * (n - 1) * (R // n)
        assert per[f"torus-dim{k}"] == want
    # no duplicate router pair anywhere (a simple graph, the size-2 ring included)
    assert max(Counter((s, d) for s, d, _ in ref.elements()).values(), default=1) == 1
    names = t.link_class_names()
    n = t.n_router_links
    np.testing.assert_array_equal(t.capacity[:n], [bw[int(c[len("torus-dim"):])] for c in names[:n].tolist()])
    _check_common(t, lambda x: x // npr)
    # neighbor_link: the link leaving r in the +1 / -1 direction of k leads to the walk's neighbour
    nl = np.asarray(t.neighbor_link)
    assert ((nl >= 0) == (nb >= 0)).all()
    got = np.where(nl >= 0, np.asarray(t.link_dst)[np.maximum(nl, 0)], -1)
    np.testing.assert_array_equal(got, nb)
    # default injection: the router's outgoing bandwidth over its nodes (the most any router has)
    out = Counter()
    for s, d, c in ref.elements():
        out[s] += bw[int(c[len("torus-dim"):])]
    want_inj = max(out.values()) / npr if out else max(bw)
    assert t.injection_bandwidth == pytest.approx(want_inj)
    assert (t.capacity[n:] == t.injection_bandwidth).all()
    # distances, diameter and the furthest-router permutation against networkx + SciPy's assignment
    Gx, D = _nx_distances(R, ref.elements())
    np.testing.assert_array_equal(t.router_distances(), D)
    assert t.diameter_bound() == D.max()
    fr = np.asarray(t.furthest_routers())
    assert sorted(fr.tolist()) == list(range(R))  # a permutation
    Dm = D.copy()
    if R > 1:
        np.fill_diagonal(Dm, -1.0)
    rows, cols = linear_sum_assignment(Dm, maximize=True)
    assert D[np.arange(R), fr].sum() == Dm[rows, cols].sum() or R == 1
    if all(wrap_t):  # every router reaches one at its eccentricity
        np.testing.assert_array_equal(D[np.arange(R), fr], D.max(axis=1))


def test_bgq_and_gemini_presets():
    b = bgq_partition([1, 2, 1, 1], link_bandwidth=1.5e9)
    assert b.dims == (4, 8, 4, 4, 2) and all(b.wrap) and b.n_nodes == 512 * 2
    # 4 dims of >= 3 routers: 2 links each, the dimension of 2: 1 link; capacity 1.5e9 everywhere
    assert b.n_router_links == b.n_routers * 9 and (b.capacity[:b.n_router_links] == 1.5e9).all()
    gm = gemini([3, 2, 4], xz_bandwidth=8.0e9, injection_bandwidth=5.0e9)
    assert gm.nodes_per_router == 2 and gm.n_nodes == 48
    per = Counter(zip(gm.link_class_names()[:gm.n_router_links].tolist(), gm.capacity[:gm.n_router_links].tolist()))
    assert per == {("torus-dim0", 8.0e9): 48, ("torus-dim1", 4.0e9): 24, ("torus-dim2", 8.0e9): 48}
    assert (gm.capacity[gm.n_router_links:] == 5.0e9).all()


def test_mira_whole_and_a_partition_against_its_file():
    # conf/machine/mira.yaml: 4x4x3x2 midplanes = 16x16x12x8x2 nodes, 49152 nodes, 2 GB/s per link
    t = machine_topology("Mira")
    assert tuple(t.dims) == (16, 16, 12, 8, 2) and t.n_nodes == 49152 and all(t.wrap)
    assert t.n_router_links == 49152 * 9 and (t.capacity[:t.n_router_links] == 2.0e9).all()
    part = machine_topology("Mira", [2, 1, 1, 1], mode="own")
    assert tuple(part.dims) == (8, 4, 4, 4, 2) and all(part.wrap) and part.n_nodes == 2 * 512


def test_theta_and_frontera_against_their_files():
    # conf/machine/theta.yaml: DF(4, 96, 10, 12), m = floor(960 / 11) = 87 links per group pair, 3 ports unused
    t = machine_topology("Theta")
    assert (t.p, t.a, t.h, t.g, t.links_per_pair, t.n_nodes) == (4, 96, 10, 12, 87, 4608)
    per = Counter(t.link_class_names()[:t.n_router_links].tolist())
    assert per == Counter({"local": 12 * 96 * 95, "global": 12 * 11 * 87})
    used = Counter((np.asarray(t.link_src[:t.n_router_links])[np.asarray(t.link_class[:t.n_router_links]) == 1]
                    // 96).tolist())
    assert set(used.values()) == {960 - 3}
    # conf/machine/frontera.yaml: 8,008 nodes, 182 leaves of 44, 6 cores, 3 HDR links from each leaf to each core
    f = machine_topology("Frontera")
    assert (f.n_nodes, f.switches(1), f.switches(2)) == (8008, 182, 6)
    up = Counter(zip(f.link_src[:f.n_router_links].tolist(), f.link_dst[:f.n_router_links].tolist()))
    assert len(up) == 2 * 182 * 6 and set(up.values()) == {3}
    assert f.up_ports(1) == 18 and (f.capacity[:f.n_router_links] == 25.0e9).all()


# --------------------------------------------------------------------------------------------- fat trees


def _xgft_reference(m, w, pl):
    """Router ids from the documented label order, and every ``(child, parent, tier)`` link ``pl`` times."""
    h = len(m)
    ids, off, labels = {}, 0, {}
    for i in range(1, h + 1):
        radices = tuple(m[i:][::-1]) + tuple(w[:i][::-1])
        labels[i] = list(itertools.product(*[range(r) for r in radices]))
        for idx, lab in enumerate(labels[i]):
            ids[(i, lab)] = off + idx
        off += len(labels[i])
    up = Counter()
    for i in range(1, h):
        for lab in labels[i]:
            for y in range(w[i]):
                par = list(lab)
                par[h - i - 1] = y  # x_{i+1} replaced by y_{i+1}
                up[(ids[(i, lab)], ids[(i + 1, tuple(par))], i)] += pl[i - 1]
    return ids, up


FT_CASES = [
    dict(k=2, levels=3),
    dict(children=[4, 3, 2], parents=[1, 2, 3]),                      # tapered and over-provisioned tiers
    dict(children=[2, 2], parents=[1, 3]),                            # more parents than children
    dict(children=[2, 2, 2], parents=[1, 2, 1], parallel_links=[2, 3], link_bandwidth=[1.0e9, 4.0e9]),
    dict(children=[3]),                                               # one switch
    dict(children=[1, 3, 2]),                                         # one host per leaf
]


@pytest.mark.parametrize("kw", FT_CASES, ids=[str(i) for i in range(len(FT_CASES))])
def test_fat_tree_ids_links_and_layout_against_the_labels(kw):
    t = fat_tree(injection_bandwidth=7.0e9, **kw)
    m = kw.get("children") or [kw["k"]] * kw["levels"]
    w = kw.get("parents") or ([1] + list(m[:-1]))
    h = len(m)
    pl = kw.get("parallel_links", 1)
    pl = list(pl) if isinstance(pl, list) else [pl] * (h - 1)
    bw = kw.get("link_bandwidth", 12.5e9)
    bw = list(bw) if isinstance(bw, list) else [bw] * (h - 1)
    ids, up = _xgft_reference(m, w, pl)
    assert t.n_routers == len(ids) and t.n_nodes == math.prod(m)
    for i in range(1, h + 1):
        assert t.switches(i) == math.prod(m[i:]) * math.prod(w[:i]) and t.subtree_nodes(i) == math.prod(m[:i])
    for tier in range(1, h):
        assert t.up_ports(tier) == w[tier] * pl[tier - 1]
    for (i, lab), r in ids.items():
        assert tuple(t.router_coords[r]) == (i,) + lab
    ref = Counter()
    for (c, p_, i), n in up.items():
        ref[(c, p_, f"level{i}-up", bw[i - 1])] += n
        ref[(p_, c, f"level{i}-down", bw[i - 1])] += n
    assert _router_multiset(t, with_cap=True) == ref
    _check_common(t, lambda n: n // m[0])
    assert (t.capacity[t.n_router_links:] == 7.0e9).all()
    # the documented link-id layout: up link of port u of the level-t switch c, its reverse at down_offset
    lo = np.asarray(t.level_offset)
    for tier in range(1, h):
        Y, U = math.prod(w[:tier]), w[tier] * pl[tier - 1]
        for c in range(int(lo[tier] - lo[tier - 1])):
            for u in range(U):
                lid = int(t.up_offset[tier - 1]) + c * U + u
                down = int(t.down_offset[tier - 1]) + c * U + u
                s, d = int(t.link_src[lid]), int(t.link_dst[lid])
                assert s == lo[tier - 1] + c and int(t.router_coords[d, 0]) == tier + 1
                assert int(t.router_coords[d, 1 + h - tier - 1]) == u // pl[tier - 1]
                assert (int(t.link_src[down]), int(t.link_dst[down])) == (d, s)
    # distances: every router pair within diameter_bound (networkx), leaves as far apart as it says
    Gx, D = _nx_distances(t.n_routers, ((s, d) for s, d, *_ in ref.elements()))
    assert nx.is_strongly_connected(Gx)
    np.testing.assert_array_equal(t.router_distances(), D)
    assert D.max() <= t.diameter_bound() == 2 * (h - 1)
    leaves = np.arange(int(lo[1]))
    top = max([i for i in range(2, h + 1) if m[i - 1] >= 2], default=1)
    assert D[np.ix_(leaves, leaves)].max() == 2 * (top - 1)


# --------------------------------------------------------------------------------------------- RDN


RDN_CASES = [
    dict(p=1, a=2, h=2, g=5, ports_per_switch=2, configuration="jobs", jobs=[[0, 1, 2]]),
    dict(p=2, a=3, h=2, g=4, configuration="standard"),
    dict(p=1, a=3, h=2, g=6, configuration="traffic", jobs=[[0, 2, 4], [1, 5]],
         demand=[[[0, 3, 0], [1, 0, 2], [0, 0, 0]], [[0, 1], [0, 0]]]),
]


@pytest.mark.parametrize("kw", RDN_CASES, ids=["jobs", "standard", "traffic"])
def test_rdn_links_against_its_port_tables_and_furthest_routers(kw):
    t = rdn(bandwidth_p=1.0e9, bandwidth_l=2.0e9, bandwidth_r=3.0e9, **kw)
    a, h, g, p, k = t.a, t.h, t.g, t.p, t.ports_per_switch
    P = a * h
    pg, pp = np.asarray(t.port_peer_group), np.asarray(t.port_peer_port)
    ref = Counter()
    for G in range(g):
        for i in range(a):
            for j in range(a):
                if i != j:
                    ref[(G * a + i, G * a + j, "local", 2.0e9)] += 1
    pairs = np.zeros((g, g), dtype=np.int64)
    for G in range(g):
        for j in range(P):
            H, jj = int(pg[G, j]), int(pp[G, j])
            if H < 0:
                assert jj < 0 and int(t.port_link[G, j]) == -1
                continue
            assert H != G and (int(pg[H, jj]), int(pp[H, jj])) == (G, j) and jj // k == j // k  # one switch
            ref[(G * a + j // h, H * a + jj // h, "global", 3.0e9)] += 1
            lid = int(t.port_link[G, j])
            assert (int(t.link_src[lid]), int(t.link_dst[lid])) == (G * a + j // h, H * a + jj // h)
            pairs[G, H] += 1
    assert _router_multiset(t, with_cap=True) == ref
    np.testing.assert_array_equal(t.pair_links, pairs)
    _check_common(t, lambda n: n // p)
    if kw["configuration"] == "standard":
        m = P // (g - 1)
        assert (pairs[~np.eye(g, dtype=bool)] == m).all()
    # furthest routers: a permutation of the routers, none to itself, of the largest total distance with an
    # unreachable router counted further than any reachable one (networkx distances, SciPy's assignment)
    R = t.n_routers
    _, D = _nx_distances(R, ((s, d) for s, d, *_ in ref.elements()))
    fr = np.asarray(t.furthest_routers())
    assert sorted(fr.tolist()) == list(range(R)) and (fr != np.arange(R)).all()
    Df = np.where(np.isinf(D), 10.0 * R, D)
    np.fill_diagonal(Df, -1.0)
    rows, cols = linear_sum_assignment(Df, maximize=True)
    assert Df[np.arange(R), fr].sum() == Df[rows, cols].sum()
    if np.isinf(D).any():  # a router of an unconnected group is paired with one it cannot reach
        assert np.isinf(D[np.arange(R), fr]).any()


def test_bisection_pairing_on_an_rdn_with_a_group_in_no_job():
    """It raised 'ValueError: matrix contains invalid numeric entries' from SciPy's assignment."""
    from evaluator.traffic import bisection_pairing

    t = rdn(1, 2, 2, 5, ports_per_switch=2, configuration="jobs", jobs=[[0, 1, 2]])
    tr = bisection_pairing(t, 1.0)
    partner = dict(zip(np.asarray(tr.src).tolist(), np.asarray(tr.dst).tolist()))
    assert sorted(partner) == list(range(t.n_nodes)) and sorted(partner.values()) == list(range(t.n_nodes))


# --------------------------------------------------------------------------------------------- bad input


BAD = [
    (lambda: dragonfly(1, 2, 1, arrangement=["relative"]), "topology.arrangement", "['relative']"),
    (lambda: dragonfly(1, 2, 1, arrangement={"a": 1}), "topology.arrangement", "{'a': 1}"),
    (lambda: dragonfly(1, 2, 1, arrangement="circulant"), "topology.arrangement", "'circulant'"),
    (lambda: dragonfly(0, 2, 1), "topology.p", "0"),
    (lambda: dragonfly(1, -2, 1), "topology.a", "-2"),
    (lambda: dragonfly(1, 2, 1.5), "topology.h", "1.5"),
    (lambda: dragonfly(1, 2, 1, g="3"), "topology.g", "'3'"),
    (lambda: dragonfly(1, 2, 1, g=4), "topology.g", "4"),
    (lambda: dragonfly(1, 2, 1, g=1), "topology.g", "1"),
    (lambda: dragonfly(1, 2, 1, bandwidth_r=0), "topology.bandwidth_r", "0"),
    (lambda: gemini(["a", 2, 2]), "topology.dims[0]", "'a'"),
    (lambda: gemini([2, None, 2]), "topology.dims[1]", "None"),
    (lambda: gemini([2, 2, 2.5]), "topology.dims[2]", "2.5"),
    (lambda: gemini([2, 2]), "topology.dims", "[2, 2]"),
    (lambda: torus([3, 0]), "topology.dims[1]", "0"),
    (lambda: torus("44"), "topology.dims", "'44'"),
    (lambda: torus([3, 3], wrap="false"), "topology.wrap", "'false'"),       # one value: the key set
    (lambda: torus([3, 3], wrap=[True, "no"]), "topology.wrap[1]", "'no'"),  # a list: its entry
    (lambda: torus([3, 3], link_bandwidth="2e9"), "topology.link_bandwidth", "'2e9'"),
    (lambda: bgq_partition([1, 1, 1, 1], link_bandwidth=0), "topology.link_bandwidth", "0"),
    (lambda: gemini([2, 2, 2], wrap=1), "topology.wrap", "1"),
    (lambda: torus([3, 3], wrap=[True]), "topology.wrap", "[True]"),
    (lambda: torus([3, 3], link_bandwidth=[1.0e9, -1.0]), "topology.link_bandwidth[1]", "-1.0"),
    (lambda: torus([3], nodes_per_router=True), "topology.nodes_per_router", "True"),
    (lambda: bgq_partition([1, 1, 1]), "topology.midplanes", "[1, 1, 1]"),
    (lambda: fat_tree(k=1), "topology.k", "1"),
    (lambda: fat_tree([2, 2], [2, 2]), "topology.parents", "[2, 2]"),
    (lambda: fat_tree([2, 2], [1]), "topology.parents", "[1]"),
    (lambda: fat_tree([2, 2], levels=3), "topology.children", "[2, 2]"),
    (lambda: fat_tree([2, 1]), "topology.children", "[2, 1]"),
    (lambda: fat_tree([2, 2], parallel_links=[1, 1]), "topology.parallel_links", "[1, 1]"),
    (lambda: fat_tree([2, 2], radix=3), "topology.radix", "3"),
    (lambda: fat_tree(k=2, children=[2, 2]), "topology.k", "2"),
    (lambda: rdn(1, 2, 1, 3, configuration=["standard"]), "topology.configuration", "['standard']"),
    (lambda: rdn(1, 2, 2, 5, ports_per_switch=3), "topology.ports_per_switch", "3"),
]


@pytest.mark.parametrize("build,field,value", BAD, ids=[f"{i}-{f}" for i, (_, f, _) in enumerate(BAD)])
def test_bad_parameters_are_refused_naming_field_and_value(build, field, value):
    with pytest.raises(ConfigError) as info:
        build()
    assert info.value.field == field
    msg = str(info.value)
    assert msg.startswith(f"{field} = {value} is invalid: allowed is ")


@pytest.mark.parametrize("build, value", [
    (lambda: dragonfly(2, 4, 2, name=5), "5"), (lambda: torus((4, 4), name=""), "''"),
    (lambda: gemini((2, 2, 2), name=3), "3"), (lambda: bgq_partition((1, 1, 1, 1), name=[1]), "[1]"),
    (lambda: fat_tree(k=4, levels=2, name=7), "7"), (lambda: rdn(2, 4, 2, 5, name=1.0), "1.0")])
def test_a_name_that_is_no_text_is_refused(build, value):
    """``dragonfly(..., name=5)`` kept the number as the network's name (shown and written to datasets as it);
    every builder now refuses a name that is not a non-empty string, before building."""
    with pytest.raises(ConfigError) as e:
        build()
    assert e.value.field == "topology.name" and f"= {value} is invalid" in str(e.value)


def test_gemini_without_an_injection_bandwidth_is_refused_not_the_torus_default():
    """``gemini(injection_bandwidth=None)`` fell back to the plain torus's default, the router's outgoing bandwidth
    over its 2 nodes (6.0 GB/s here with 8 GB/s X/Z links), which is no Gemini NIC; it is refused. The default
    stays Gemini's 6.4 GB/s."""
    with pytest.raises(ConfigError) as e:
        gemini((2, 2, 2), xz_bandwidth=8.0e9, injection_bandwidth=None)
    assert e.value.field == "topology.injection_bandwidth"
    g = gemini((2, 2, 2))
    assert float(g.capacity[g.n_router_links]) == 6.4e9
    assert dragonfly(2, 4, 2).name == "DF(2,4,2,9)" and torus((4, 4), name="mine").name == "mine"
