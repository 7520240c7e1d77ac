"""Audit of the oblivious routings (DOR on tori, Dragonfly minimal / Valiant / Valiant-router, fat-tree D-mod-K and
ECMP spray) against walks written here from the documented rules alone.

The walks read only the topology's link arrays (``link_src``, ``link_dst``, ``link_class``), its router coordinates
and node -> router map, and the documented rules (module docstrings of ``evaluator/routing/_dor.py``,
``_dragonfly.py``, ``_fat_tree.py``; docs/): never the routing's tables. Every ordered router (or node) pair's
per-link fractions are compared with the batched ``apply`` (vmapped over single flows), random sparse traffics and
the dense rank-one demand with the sum of the walks (rtol 1e-12), and ``route`` with the walk on sampled pairs.
"""

from __future__ import annotations

import itertools
from collections import defaultdict

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import evaluator as ev
from evaluator import placement, traffic
from evaluator import topology as T
from evaluator.errors import ConfigError
from evaluator.routing import build_routing
from evaluator.routing._dor import dor
from evaluator.routing._dragonfly import minimal, valiant, valiant_router
from evaluator.routing._fat_tree import dmodk, ecmp, ecmp_spray

RTOL = 1e-12


# ----------------------------------------------------------------------------------------------- shared helpers
def edge_table(topo) -> dict[tuple[int, int], list[int]]:
    """(src router, dst router) -> router link ids, ascending (from the link arrays only)."""
    n = int(topo.n_router_links)
    out: dict[tuple[int, int], list[int]] = defaultdict(list)
    for lid, (u, v) in enumerate(zip(np.asarray(topo.link_src)[:n].tolist(), np.asarray(topo.link_dst)[:n].tolist())):
        out[(u, v)].append(lid)
    return out


def one_link(edges, u, v) -> int:
    ls = edges[(u, v)]
    assert len(ls) == 1, (u, v, ls)
    return ls[0]


def dense_vec(walk: dict, n_links) -> np.ndarray:
    v = np.zeros(n_links)
    for k, f in walk.items():
        v[k] += f
    return v


def check_operator(topo, op, walk, n_end, rng, n_route=40, ends=None):
    """Every ordered pair of ``ends`` (default: every endpoint) as flows of the batched ``apply``, the dense
    rank-one demand on them, and ``route`` on a sample, against ``walk``."""
    n_links = int(topo.n_router_links)
    ends = np.arange(n_end) if ends is None else np.asarray(ends)
    pairs = np.asarray(list(itertools.product(ends.tolist(), repeat=2)))
    want = np.stack([dense_vec(walk(int(a), int(b)), n_links) for a, b in pairs])
    # every ordered pair as one flow, bytes of different magnitudes; src == dst flows carry weight 0 (the
    # contract); plus repeats of some pairs
    tables = jax.device_put({k: np.asarray(v) for k, v in op.tables.items()})
    idx = np.concatenate([np.arange(len(pairs)), rng.integers(0, len(pairs), 16)])
    s, d = pairs[idx, 0], pairs[idx, 1]
    w = rng.integers(1, 10**6, idx.size).astype(float) * rng.choice([1.0, 0.5, 1e-3], idx.size)
    w = np.where(s == d, 0.0, w)
    loads = np.asarray(jax.jit(op.apply)(tables, jnp.asarray(s, jnp.int32), jnp.asarray(d, jnp.int32), jnp.asarray(w)))
    np.testing.assert_allclose(loads[:n_links], w @ want[idx], rtol=RTOL, atol=1e-9)
    # dense rank-one demand u[s] v[d], s != d (zero weight off ``ends``)
    u, v = np.zeros(n_end), np.zeros(n_end)
    u[ends] = rng.integers(0, 50, ends.size)
    v[ends] = rng.integers(0, 50, ends.size)
    coef = np.where(pairs[:, 0] != pairs[:, 1], u[pairs[:, 0]] * v[pairs[:, 1]], 0.0)
    ref = coef @ want
    dense = np.asarray(jax.jit(op.apply_dense)(tables, jnp.asarray(u), jnp.asarray(v)))
    np.testing.assert_allclose(dense[:n_links], ref, rtol=1e-11, atol=1e-7 * max(ref.max(initial=0.0), 1.0))
    # route() on a sample of pairs: ascending links, the walk's fractions; nothing for src == dst
    for i in rng.choice(len(pairs), min(n_route, len(pairs)), replace=False):
        a, b = (int(x) for x in pairs[i])
        links, fr = op.route(topo, a, b)
        assert np.all(np.diff(links) > 0)
        wd = {k: f for k, f in walk(a, b).items() if f != 0}
        assert dict(zip(links.tolist(), fr.tolist())).keys() == wd.keys(), (a, b)
        np.testing.assert_allclose(fr, [wd[k] for k in links.tolist()], rtol=RTOL)
    for a in ends[:3].tolist():
        links, fr = op.route(topo, a, a)
        assert links.size == 0 and fr.size == 0
    return want


# --------------------------------------------------------------------------------------------------- DOR walk
def dor_walk_factory(topo, order, tie):
    edges = edge_table(topo)
    coords = np.asarray(topo.router_coords).astype(int)
    dims = list(topo.dims)
    wrap = list(topo.wrap)
    index = {tuple(c): r for r, c in enumerate(coords.tolist())}
    if order == "as_given":
        perm = list(range(len(dims)))
    elif order == "longest_first":  # stable: equal sizes keep their given order
        perm = sorted(range(len(dims)), key=lambda k: (-dims[k], k))
    else:
        perm = list(order)

    def walk(s, d):
        out: dict[int, float] = defaultdict(float)
        # (probability, current coordinates); a tie splits a path in two
        paths = [(1.0, list(coords[s]))]
        tgt = coords[d]
        for k in perm:
            n = dims[k]
            nxt = []
            for p, cur in paths:
                a, b = cur[k], tgt[k]
                if a == b:
                    nxt.append((p, cur))
                    continue
                if wrap[k]:
                    fwd, bwd = (b - a) % n, (a - b) % n
                    if fwd < bwd:
                        moves = [(p, +1, fwd)]
                    elif bwd < fwd:
                        moves = [(p, -1, bwd)]
                    elif tie == "split":
                        moves = [(p / 2, +1, fwd), (p / 2, -1, bwd)]
                    else:
                        moves = [(p, +1, fwd)]
                else:
                    moves = [(p, 1 if b > a else -1, abs(b - a))]
                for q, step, hops in moves:
                    c = list(cur)
                    for _ in range(hops):
                        u = index[tuple(c)]
                        c[k] = (c[k] + step) % n
                        out[one_link(edges, u, index[tuple(c)])] += q
                    assert c[k] == b
                    nxt.append((q, c))
            paths = nxt
        return dict(out)

    return walk


TORI = {
    "1": lambda: T.torus((1,)),
    "2": lambda: T.torus((2,)),
    "3": lambda: T.torus((3,)),
    "6": lambda: T.torus((6,)),
    "mesh2": lambda: T.torus((2,), wrap=False),
    "4x3x2_np2": lambda: T.torus((4, 3, 2), nodes_per_router=2),
    "2x1x4": lambda: T.torus((2, 1, 4)),
    "mixed4x5x2": lambda: T.torus((4, 5, 2), wrap=(False, True, True)),
    "mesh2x3x2": lambda: T.torus((2, 3, 2), wrap=False),
    "3x4x4": lambda: T.torus((3, 4, 4)),
    "8x1": lambda: T.torus((8, 1), wrap=(True, False)),
    "1x3x4": lambda: T.torus((1, 3, 4)),
}
DOR_CASES = [
    ("1", "as_given", "split"), ("2", "as_given", "split"), ("2", "as_given", "positive"), ("3", "as_given", "split"),
    ("6", "longest_first", "split"), ("6", "as_given", "positive"), ("mesh2", "as_given", "split"),
    ("4x3x2_np2", "longest_first", "split"), ("4x3x2_np2", (2, 0, 1), "positive"), ("2x1x4", (1, 2, 0), "split"),
    ("mixed4x5x2", "longest_first", "positive"), ("mixed4x5x2", (2, 1, 0), "split"),
    ("mesh2x3x2", (1, 2, 0), "split"), ("3x4x4", "longest_first", "split"), ("3x4x4", (2, 1, 0), "positive"),
    ("8x1", "as_given", "split"), ("1x3x4", "as_given", "split"), ("1x3x4", (2, 0, 1), "positive"),
]


@pytest.fixture(scope="module")
def tori():
    return {k: f() for k, f in TORI.items()}


@pytest.mark.parametrize("name, order, tie", DOR_CASES, ids=lambda x: str(x))
def test_dor_every_pair_traffic_dense_and_route_equal_the_walk(tori, name, order, tie):
    topo = tori[name]
    op = build_routing(topo, dor(order=order, tie=tie))
    walk = dor_walk_factory(topo, order, tie)
    check_operator(topo, op, walk, int(topo.n_routers), np.random.default_rng(sum(map(ord, name + tie))))


@pytest.mark.parametrize("name, order, tie", [("1x3x4", "as_given", "split"), ("2x1x4", (1, 2, 0), "split"),
                                             ("4x3x2_np2", (2, 0, 1), "split")], ids=str)
def test_dor_compact_listing_of_every_pair_equals_the_walk(tori, name, order, tie):
    """The per-flow listings the mapping search scores (``flow_count``, ``flow_compact``): every ordered pair's
    links and bytes back to back, against the walk (a size-1 dimension before others in the order included)."""
    topo = tori[name]
    op = build_routing(topo, dor(order=order, tie=tie))
    walk = dor_walk_factory(topo, order, tie)
    R = int(topo.n_routers)
    pairs = np.asarray(list(itertools.product(range(R), repeat=2)))
    ft = jax.device_put({k: np.asarray(v) for k, v in op.flow_tables.items()})
    s, d = jnp.asarray(pairs[:, 0], jnp.int32), jnp.asarray(pairs[:, 1], jnp.int32)
    w = jnp.asarray(np.arange(1, len(pairs) + 1, dtype=float))
    count = np.asarray(op.flow_count(ft, s, d))
    size = int(count.sum()) + 8
    links, byts, needed = (np.asarray(x) for x in jax.jit(op.flow_compact, static_argnums=4)(ft, s, d, w, size))
    assert int(needed) == count.sum()
    at = 0
    for i, (a, b) in enumerate(pairs.tolist()):
        want = walk(a, b)
        got = defaultdict(float)
        for lk, x in zip(links[at: at + count[i]].tolist(), byts[at: at + count[i]].tolist()):
            got[lk] += x
        at += count[i]
        assert got.keys() == want.keys(), (a, b)
        np.testing.assert_allclose([got[k] for k in want], [(i + 1) * f for f in want.values()], rtol=RTOL)
    assert (links[at:] == -1).all()


def test_dor_tie_half_ring_split_both_ways_and_positive_one_way(tori):
    topo = tori["6"]
    edges = edge_table(topo)
    split = build_routing(topo, dor(tie="split"))
    pos = build_routing(topo, dor(tie="positive"))
    links, fr = split.route(topo, 1, 4)  # 3 hops either way
    want = {one_link(edges, 1, 2): .5, one_link(edges, 2, 3): .5, one_link(edges, 3, 4): .5,
            one_link(edges, 1, 0): .5, one_link(edges, 0, 5): .5, one_link(edges, 5, 4): .5}
    assert dict(zip(links.tolist(), fr.tolist())) == want
    links, fr = pos.route(topo, 4, 1)
    assert dict(zip(links.tolist(), fr.tolist())) == {one_link(edges, 4, 5): 1.0, one_link(edges, 5, 0): 1.0,
                                                      one_link(edges, 0, 1): 1.0}


def test_dor_longest_first_is_stable_among_equal_sizes():
    # dims (3, 4, 4): longest-first travels 1, then 2 (the given order among equals), then 0
    topo = T.torus((3, 4, 4), wrap=False)
    edges = edge_table(topo)
    op = build_routing(topo, dor(order="longest_first"))
    c = np.asarray(topo.router_coords).tolist()
    r = {tuple(x): i for i, x in enumerate(c)}
    s, d = r[(0, 0, 0)], r[(1, 1, 1)]
    want = {one_link(edges, r[(0, 0, 0)], r[(0, 1, 0)]), one_link(edges, r[(0, 1, 0)], r[(0, 1, 1)]),
            one_link(edges, r[(0, 1, 1)], r[(1, 1, 1)])}
    links, fr = op.route(topo, s, d)
    assert set(links.tolist()) == want and np.all(fr == 1.0)


def test_dor_nodes_of_one_router_and_several_nodes_per_router_through_evaluate(tori):
    """Node-level flows through :func:`evaluator.evaluate`: flows between two nodes of one router load no router
    link; the router links carry the walk's loads of the nodes' routers."""
    topo = tori["4x3x2_np2"]
    walk = dor_walk_factory(topo, "as_given", "split")
    rng = np.random.default_rng(5)
    nn = int(topo.n_nodes)
    node_router = np.asarray(topo.node_router)
    src = rng.integers(0, nn, 30)
    dst = rng.integers(0, nn, 30)
    dst = np.where(dst == src, (dst + 1) % nn, dst)
    src[:4] = [0, 1, 6, 7]  # nodes 0/1 and 6/7 share a router (2 nodes per router)
    dst[:4] = [1, 0, 7, 6]
    assert (node_router[src[:4]] == node_router[dst[:4]]).all()
    w = rng.integers(1, 1000, 30).astype(float)
    ds = ev.evaluate(topo, traffic.from_flows(nn, src, dst, w), placement.explicit(topo, np.arange(nn)), dor())
    n = int(topo.n_router_links)
    ref = np.zeros(n)
    for a, b, x in zip(node_router[src], node_router[dst], w):
        if a != b:
            ref += x * dense_vec(walk(int(a), int(b)), n)
    np.testing.assert_allclose(ds["link_load"].values[:n], ref, rtol=RTOL)
    # the same-router flows only: no router link is loaded
    ds = ev.evaluate(topo, traffic.from_flows(nn, src[:4], dst[:4], w[:4]), placement.explicit(topo, np.arange(nn)),
                     dor())
    assert not ds["link_load"].values[:n].any()


@pytest.mark.parametrize("kw, field", [
    (dict(tie="random"), "routing.tie"), (dict(tie=None), "routing.tie"), (dict(tie=1), "routing.tie"),
    (dict(order="shortest_first"), "routing.order"), (dict(order=[0, 0]), "routing.order"),
    (dict(order=[-1, 0]), "routing.order"), (dict(order=["x", "y"]), "routing.order"),
    (dict(order=[0.5, 1]), "routing.order"), (dict(order=[]), "routing.order"), (dict(order=3), "routing.order"),
    (dict(order=[True, False]), "routing.order"), (dict(order=None), "routing.order"),
])
def test_dor_bad_parameters_are_refused_by_field(kw, field):
    with pytest.raises(ConfigError) as e:
        dor(**kw)
    assert e.value.field == field


def test_dor_order_of_wrong_length_is_refused_on_the_torus(tori):
    for order in ((0, 1), (0, 1, 3), (1, 0, 2, 3)):
        with pytest.raises(ConfigError) as e:
            build_routing(tori["4x3x2_np2"], dor(order=order))
        assert e.value.field == "routing.order"


# --------------------------------------------------------------------------------------------- Dragonfly walks
class DF:
    """Group and link structure of a Dragonfly from its link arrays and router coordinates (group, index)."""

    def __init__(self, topo):
        self.topo = topo
        self.edges = edge_table(topo)
        coords = np.asarray(topo.router_coords)
        self.group = coords[:, 0].astype(int)
        self.g = int(self.group.max()) + 1
        self.R = int(topo.n_routers)
        n = int(topo.n_router_links)
        cls = np.asarray(topo.link_class)[:n]
        gl = int(topo.class_names.index("global"))
        src, dst = np.asarray(topo.link_src)[:n], np.asarray(topo.link_dst)[:n]
        self.glob = defaultdict(list)  # (S, D) -> [(link, owner router, landing router)]
        for lid in np.flatnonzero(cls == gl).tolist():
            self.glob[(self.group[src[lid]], self.group[dst[lid]])].append((lid, int(src[lid]), int(dst[lid])))

    def local(self, u, v, p, out):
        if u != v:
            out[one_link(self.edges, u, v)] += p

    def minimal_ends(self, s, d, p, out):
        """Minimal routing of ``p`` bytes from ``s`` to ``d``; returns nothing, adds to ``out``."""
        S, D = self.group[s], self.group[d]
        if S == D:
            self.local(s, d, p, out)
            return
        gls = self.glob[(S, D)]
        for lid, own, land in gls:  # split evenly over the parallel global links
            q = p / len(gls)
            self.local(s, own, q, out)
            out[lid] += q
            self.local(land, d, q, out)

    def minimal(self, s, d):
        out = defaultdict(float)
        self.minimal_ends(s, d, 1.0, out)
        return dict(out)

    def valiant(self, s, d):
        out = defaultdict(float)
        S, D = self.group[s], self.group[d]
        if S == D:
            self.minimal_ends(s, d, 1.0, out)
            return dict(out)
        mids = [i for i in range(self.g) if i not in (S, D)]
        for I in mids:  # uniform over the g-2 other groups, to the router where the global link lands
            gls = self.glob[(S, I)]
            for lid, own, land in gls:
                q = 1.0 / len(mids) / len(gls)
                self.local(s, own, q, out)
                out[lid] += q
                self.minimal_ends(land, d, q, out)
        return dict(out)

    def valiant_router(self, s, d):
        out = defaultdict(float)
        S, D = self.group[s], self.group[d]
        if S == D:
            self.minimal_ends(s, d, 1.0, out)
            return dict(out)
        for x in range(self.R):  # uniform over every router of the machine
            if self.group[x] == S:
                self.minimal_ends(s, d, 1.0 / self.R, out)
            else:
                self.minimal_ends(s, x, 1.0 / self.R, out)
                self.minimal_ends(x, d, 1.0 / self.R, out)
        return dict(out)


DRAGONFLIES = {
    "DF(1,4,2,3)": lambda: T.dragonfly(1, 4, 2, 3),  # m = 4 parallel links per group pair
    "DF(2,3,2,4)rel": lambda: T.dragonfly(2, 3, 2, 4, arrangement="relative"),  # m = 2
    "DF(1,2,3,3)": lambda: T.dragonfly(1, 2, 3, 3),  # m = 3, two copies on one router pair
    "DF(1,3,1,4)": lambda: T.dragonfly(1, 3, 1, 4),  # g = a h + 1, m = 1
    "DF(1,2,2,4)": lambda: T.dragonfly(1, 2, 2, 4),  # m = 1, one port of each group unused
    "DF(1,2,1,2)": lambda: T.dragonfly(1, 2, 1, 2),  # two groups: no Valiant (refused), Valiant-router
}
DF_CASES = [(n, r) for n in DRAGONFLIES for r in ("minimal", "valiant", "valiant_router")
            if (n, r) != ("DF(1,2,1,2)", "valiant")]


@pytest.fixture(scope="module")
def dragonflies():
    return {k: f() for k, f in DRAGONFLIES.items()}


@pytest.mark.parametrize("name, kind", DF_CASES, ids=lambda x: str(x))
def test_dragonfly_every_pair_traffic_dense_and_route_equal_the_walk(dragonflies, name, kind):
    topo = dragonflies[name]
    df = DF(topo)
    assert df.g == int(topo.g)
    spec = {"minimal": minimal, "valiant": valiant, "valiant_router": valiant_router}[kind]()
    op = build_routing(topo, spec)
    check_operator(topo, op, getattr(df, kind), int(topo.n_routers), np.random.default_rng(len(name) + len(kind)))


def test_dragonfly_parallel_links_on_one_router_pair_are_split():
    """DF(1,2,3,3): ports 0-2 on router 0 and 3-5 on router 1, two slots: copies of one group pair can join the
    same two routers; each of the m links still gets 1/m."""
    topo = T.dragonfly(1, 2, 3, 3)
    df = DF(topo)
    m = int(topo.links_per_pair)
    assert m == 3 and all(len(v) == m for v in df.glob.values())
    op = build_routing(topo, minimal())
    links, fr = op.route(topo, 0, 2)
    glob = {lid for lid, _, _ in df.glob[(0, 1)]}
    got = dict(zip(links.tolist(), fr.tolist()))
    assert all(abs(got[lid] - 1 / 3) < 1e-15 for lid in glob)


def test_valiant_with_two_groups_is_refused_by_field(dragonflies):
    """g = 2 leaves Valiant no intermediate group (g - 2 = 0): refused, naming routing.kind."""
    with pytest.raises(ConfigError) as e:
        build_routing(dragonflies["DF(1,2,1,2)"], valiant())
    assert e.value.field == "routing.kind"


# ---------------------------------------------------------------------------------------------- fat-tree walks
class FatTree:
    """Up/down structure of an XGFT from its link arrays, router coordinates and node -> router map."""

    def __init__(self, topo):
        self.topo = topo
        n = int(topo.n_router_links)
        src, dst = np.asarray(topo.link_src)[:n], np.asarray(topo.link_dst)[:n]
        cls = np.asarray(topo.link_class)[:n]
        names = list(topo.class_names)
        coords = np.asarray(topo.router_coords)
        self.level = coords[:, 0].astype(int)
        self.coords = coords
        self.h = int(topo.levels)
        self.up = defaultdict(list)  # router -> up links (ascending)
        self.down = defaultdict(list)
        for lid in range(n):
            kind = names[cls[lid]]
            (self.up if kind.endswith("-up") else self.down)[int(src[lid])].append((lid, int(dst[lid])))
            assert self.level[dst[lid]] == self.level[src[lid]] + (1 if kind.endswith("-up") else -1)
        self.node_router = np.asarray(topo.node_router)
        self.below = {}  # router -> set of nodes under it (by descending down links)
        for r in np.argsort(self.level, kind="stable").tolist():
            if self.level[r] == 1:
                self.below[r] = set(np.flatnonzero(self.node_router == r).tolist())
            else:
                self.below[r] = set().union(*(self.below[c] for _, c in self.down[r]))

    def dmodk_up(self, leaf, d):
        """Switches and up links from ``leaf`` towards destination node ``d`` under D-mod-K, to the top."""
        w = list(self.topo.parents)
        pl = list(self.topo.parallel_links)
        sw, links = [leaf], []
        for t in range(1, self.h):
            U = w[t] * pl[t - 1]
            v = (d // int(np.prod(w[:t]))) % U
            digit, copy = v % w[t], v // w[t]
            col = self.h - t  # column of digit t+1 in router_coords (level first, then x_h .. y_1)
            cands = [(lid, p) for lid, p in self.up[sw[-1]] if self.coords[p, col] == digit]
            assert len(cands) == pl[t - 1]
            lid, p = cands[copy]
            links.append(lid)
            sw.append(p)
        return sw, links

    def dmodk(self, a, d):
        out = defaultdict(float)
        ls, ld = int(self.node_router[a]), int(self.node_router[d])
        if ls == ld:
            return {}
        s_sw, s_links = self.dmodk_up(ls, d)
        d_sw, d_links = self.dmodk_up(ld, d)
        top = next(i for i in range(self.h) if s_sw[i] == d_sw[i])
        for i in range(top):
            out[s_links[i]] += 1.0
            # down: the reverse of d's own up link (same parallel copy: its rank among the links parent -> child)
            up_lid, child, parent = d_links[i], d_sw[i], d_sw[i + 1]
            rank = [lid for lid, p in self.up[child] if p == parent].index(up_lid)
            out[[lid for lid, c in self.down[parent] if c == child][rank]] += 1.0
        return dict(out)

    def spray(self, leaf_s, d, src_node=None):
        out = defaultdict(float)
        if leaf_s == int(self.node_router[d]):
            return {}
        level = {leaf_s: 1.0}
        tops = {}
        while level:  # up: even split over every up port, until the switch holds d below it
            nxt = defaultdict(float)
            for r, p in level.items():
                if d in self.below[r]:
                    tops[r] = tops.get(r, 0.0) + p
                    continue
                for lid, par in self.up[r]:
                    out[lid] += p / len(self.up[r])
                    nxt[par] += p / len(self.up[r])
            level = nxt
        level = tops
        while level:  # down: the child holding d, even over its parallel links
            nxt = defaultdict(float)
            for r, p in level.items():
                if self.level[r] == 1:
                    continue
                kids = [(lid, c) for lid, c in self.down[r] if d in self.below[c]]
                assert len({c for _, c in kids}) == 1
                for lid, c in kids:
                    out[lid] += p / len(kids)
                    nxt[c] += p / len(kids)
            level = nxt
        return dict(out)


FAT_TREES = {
    "k2n3_pl": lambda: T.fat_tree([2, 2, 2], [1, 2, 2], parallel_links=[2, 1]),
    "tapered": lambda: T.fat_tree([3, 2, 2], [1, 2, 3], parallel_links=[1, 2]),
    "xgft2": lambda: T.fat_tree([4, 3], [1, 2], parallel_links=3),
}


@pytest.fixture(scope="module")
def fat_trees():
    return {k: f() for k, f in FAT_TREES.items()}


@pytest.mark.parametrize("name", list(FAT_TREES))
def test_dmodk_every_node_pair_equals_the_port_formula_walk(fat_trees, name):
    topo = fat_trees[name]
    ft = FatTree(topo)
    op = build_routing(topo, dmodk())
    assert op.n_endpoints == int(topo.n_nodes)
    check_operator(topo, op, ft.dmodk, int(topo.n_nodes), np.random.default_rng(11))


@pytest.mark.parametrize("name", list(FAT_TREES))
def test_ecmp_spray_every_router_pair_equals_the_even_split_walk(fat_trees, name):
    topo = fat_trees[name]
    ft = FatTree(topo)
    op = build_routing(topo, ecmp_spray())
    nn = int(topo.n_nodes)
    n = int(topo.n_router_links)
    # spray routes leaves (routers with nodes); flows through evaluate at node level
    leaves = sorted(set(ft.node_router.tolist()))
    rng = np.random.default_rng(3)
    src = rng.integers(0, nn, 40)
    dst = rng.integers(0, nn, 40)
    w = rng.integers(1, 1000, 40).astype(float)
    keep = src != dst
    src, dst, w = src[keep], dst[keep], w[keep]
    ds = ev.evaluate(topo, traffic.from_flows(nn, src, dst, w), placement.explicit(topo, np.arange(nn)), ecmp_spray())
    ref = np.zeros(n)
    for a, b, x in zip(src, dst, w):
        ref += x * dense_vec(ft.spray(int(ft.node_router[a]), int(b)), n)
    np.testing.assert_allclose(ds["link_load"].values[:n], ref, rtol=RTOL)
    # every leaf pair through apply, apply_dense and route (endpoints are routers; only leaves hold nodes)
    first_node = {r: int(np.flatnonzero(ft.node_router == r)[0]) for r in leaves}
    check_operator(topo, op, lambda a, b: ft.spray(a, first_node[b]), int(topo.n_routers), rng, ends=leaves)


@pytest.mark.parametrize("seed", [-1, 2**32, 1.5, "3", None, True, np.float64(2.0)])
def test_ecmp_bad_seed_is_refused_by_field(seed):
    with pytest.raises(ConfigError) as e:
        ecmp(seed)
    assert e.value.field == "routing.seed"


def test_ecmp_numpy_integer_seed_is_the_same_draw():
    assert ecmp(np.uint32(7)) == ecmp(7) and ecmp(np.int64(2**32 - 1)).seed == 2**32 - 1
