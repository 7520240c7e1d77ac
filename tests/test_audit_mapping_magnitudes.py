"""Audit: the mapping search (evaluator.mapping.search_mapping, mapping_bound) at extreme and mixed magnitudes.

Bytes per flow from 1e-3 to 1e15 in one traffic, link bandwidths from 1e3 to 1e13 B/s, tasks_per_node 1 and 3,
node subsets and two phases, on a small torus (DOR), a small Dragonfly (minimal) and a small fat tree (D-mod-k).
Every time is checked against a per-flow walk written here (the routes of docs and routing docstrings, each link's
contributions summed exactly with math.fsum), and the bound against an exhaustive enumeration of every mapping.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from evaluator.evaluation import evaluate
from evaluator.mapping import mapping_bound, search_mapping
from evaluator.placement import explicit
from evaluator.routing import dmodk, dor, minimal
from evaluator.topology import dragonfly, fat_tree, torus
from evaluator.traffic import from_flows, phased

REL = 1e-12


# --------------------------------------------------------------------------------------------------------
# independent per-flow routes: lists of (link, share) between two routers (or two nodes on a fat tree)
# --------------------------------------------------------------------------------------------------------

def _dor_routes(topo, ra, rz):
    """DOR in the given dimension order, shortest way round, a tie at half a ring split evenly."""
    dims = topo.dims
    cur = list(np.unravel_index(ra, dims))
    dst = list(np.unravel_index(rz, dims))
    paths = [(1.0, cur)]
    out = []
    for k, n in enumerate(dims):
        new = []
        for share, c in paths:
            fwd = (dst[k] - c[k]) % n
            if fwd == 0:
                new.append((share, c))
                continue
            if not topo.wrap[k]:
                dirs = [(+1 if dst[k] > c[k] else -1, abs(dst[k] - c[k]), share)]
            elif 2 * fwd == n:
                dirs = [(+1, fwd, share / 2), (-1, fwd, share / 2)]
            else:
                dirs = [(+1, fwd, share)] if 2 * fwd < n else [(-1, n - fwd, share)]
            for step, hops, s in dirs:
                p = list(c)
                for _ in range(hops):
                    r = int(np.ravel_multi_index(tuple(p), dims))
                    out.append((int(topo.neighbor_link[r, k, 0 if step > 0 else 1]), s))
                    p[k] = (p[k] + step) % n
                new.append((s, p))
        paths = new
    return out


def _df_routes(topo, ra, rz):
    """Minimal local-global-local; a group pair's bytes split evenly over its parallel global links."""
    a = topo.a
    G, H = ra // a, rz // a
    if G == H:
        return [] if ra == rz else [(int(topo.local_link[G, ra % a, rz % a]), 1.0)]
    m = topo.links_per_pair
    out = []
    for c in range(m):
        o, land = topo.owner_router(G, H, c), topo.landing_router(G, H, c)
        if o != ra:
            out.append((int(topo.local_link[G, ra % a, o % a]), 1.0 / m))
        out.append((int(topo.global_link[G, H, c]), 1.0 / m))
        if land != rz:
            out.append((int(topo.local_link[H, land % a, rz % a]), 1.0 / m))
    return out


def _ft_routes(topo, s, d):
    """D-mod-k between *nodes*: up port v_t(d) = floor(d / (w_1..w_t)) mod U_t, port number y*pl + v // w, up to the
    nearest common ancestor level, down over the reverses of the destination side's up links (same ports)."""
    m, w, pl = topo.children, topo.parents, topo.parallel_links
    h = topo.levels
    top = next(lv for lv in range(1, h + 1) if s // math.prod(m[:lv]) == d // math.prod(m[:lv]))
    out = []
    yy = 0  # index of (y_t .. y_1) of the switches the route passes at level t
    for t in range(1, top):
        U = w[t] * pl[t - 1]
        v = (d // math.prod(w[:t])) % U
        y, copy = v % w[t], v // w[t]
        port = y * pl[t - 1] + copy
        Y = math.prod(w[:t])
        for end, off in ((s, topo.up_offset[t - 1]), (d, topo.down_offset[t - 1])):
            local = (end // math.prod(m[:t])) * Y + yy
            out.append((int(off + local * U + port), 1.0))
        yy += y * Y
    return out


def node_routes(topo, na, nz, kind):
    """(link, share) of one unit flow from node ``na`` to node ``nz`` (no link on one node)."""
    if na == nz:
        return []
    ends = [(int(topo.injection_link(na)), 1.0), (int(topo.ejection_link(nz)), 1.0)]
    if kind == "ft":
        return ends + _ft_routes(topo, na, nz)
    ra, rz = int(topo.node_router[na]), int(topo.node_router[nz])
    return ends + ({"torus": _dor_routes, "df": _df_routes}[kind](topo, ra, rz) if ra != rz else [])


class Walker:
    """Per-flow walk of one traffic (flows per phase) on one topology: routes cached per node pair."""

    def __init__(self, topo, kind, phases):
        self.topo, self.kind, self.phases = topo, kind, phases
        self.cache = {}

    def route(self, a, b):
        if (a, b) not in self.cache:
            self.cache[a, b] = node_routes(self.topo, a, b, self.kind)
        return self.cache[a, b]

    def time(self, task_node) -> float:
        tn = [int(x) for x in task_node]
        cap = self.topo.capacity
        total = 0.0
        for src, dst, nb in self.phases:
            parts: dict[int, list] = {}
            for s, d, b in zip(src, dst, nb):
                for link, share in self.route(tn[s], tn[d]):
                    parts.setdefault(link, []).append(float(b) * share)
            total += max((math.fsum(v) / cap[k] for k, v in parts.items()), default=0.0)
        return total

    def dense(self, nodes):
        """M[a, b] = the link shares of a unit flow from node ``nodes[a]`` to ``nodes[b]`` (for the enumeration)."""
        M = np.zeros((len(nodes), len(nodes), self.topo.n_links))
        for i, a in enumerate(nodes):
            for j, b in enumerate(nodes):
                for link, share in self.route(int(a), int(b)):
                    M[i, j, link] += share
        return M


def exhaustive_optimum(walker, nodes, n_tasks, tpn) -> float:
    """The least walk time over every mapping of ``n_tasks`` tasks onto ``nodes`` with at most ``tpn`` per node."""
    M = walker.dense(nodes)
    idx = np.array([p for p in itertools.product(range(len(nodes)), repeat=n_tasks)
                    if max(np.bincount(p, minlength=len(nodes))) <= tpn])
    t = np.zeros(len(idx))
    for src, dst, nb in walker.phases:
        loads = np.zeros((len(idx), walker.topo.n_links))
        for s, d, b in zip(src, dst, nb):
            loads += b * M[idx[:, s], idx[:, d]]
        t += (loads / walker.topo.capacity).max(axis=1)
    return float(t.min())


# --------------------------------------------------------------------------------------------------------
# cases
# --------------------------------------------------------------------------------------------------------

def mixed_flows(n, seed, giant=1e15, tiny=(1.0, 1e-3), many=40):
    """One ``giant`` flow (tasks 0 -> 1) beside ``many`` flows of ``tiny`` bytes between random task pairs and a
    few of every decade in between."""
    rng = np.random.default_rng(seed)
    src = rng.integers(0, n, many)
    dst = (src + 1 + rng.integers(0, n - 1, many)) % n
    nb = rng.choice(np.asarray(tiny, float), many)
    mid_s = rng.integers(0, n, 6)
    mid_d = (mid_s + 1 + rng.integers(0, n - 1, 6)) % n
    mid = 10.0 ** rng.integers(1, 13, 6) * rng.uniform(1, 3, 6)
    return (np.concatenate([[0], src, mid_s]), np.concatenate([[1], dst, mid_d]), np.concatenate([[giant], nb, mid]))


def build_traffic(n, flows_per_phase):
    ph = [from_flows(n, s, d, b) for s, d, b in flows_per_phase]
    return ph[0] if len(ph) == 1 else phased(ph)


TOPOS = {
    "torus": lambda: torus((4, 3, 2), link_bandwidth=[1e3, 1e13, 1e8], injection_bandwidth=1e11),
    "torus-fast": lambda: torus((4, 3, 2), link_bandwidth=[1e13, 1e12, 1e13], injection_bandwidth=1e13,
                                nodes_per_router=2),
    "df": lambda: dragonfly(2, 2, 2, 3, bandwidth_p=1e13, bandwidth_l=1e3, bandwidth_r=1e9),
    "df-slow-global": lambda: dragonfly(2, 2, 2, 3, bandwidth_p=1e11, bandwidth_l=1e13, bandwidth_r=1e3),
    "ft": lambda: fat_tree([2, 2, 2], [1, 2, 2], parallel_links=[1, 2], link_bandwidth=[1e3, 1e12],
                           injection_bandwidth=1e13),
}
ROUTING = {"torus": dor, "df": minimal, "ft": dmodk}
_BUILT: dict = {}


def topo(name):
    if name not in _BUILT:
        _BUILT[name] = TOPOS[name]()
    return _BUILT[name]


def kind_of(name):
    return name.split("-")[0]


def check_result(res, walker, tp, tr, routing):
    """The claims of docs/mapping.md on one result, each against the walk: the reported time is the walk's; every
    start's time is its walk's; the result is no slower than any start (by the walk); the bound is at most the
    walk; the search's own last score is a fresh evaluation's (no drift)."""
    t_walk = walker.time(res.task_node)
    assert res.completion_time == pytest.approx(t_walk, rel=REL, abs=0)
    start_walk = {name: walker.time(tn) for name, tn in res.start_nodes.items()}
    for name, t in start_walk.items():
        assert res.starts[name] == pytest.approx(t, rel=REL, abs=0), name
    best = min(start_walk.values())
    assert t_walk <= best * (1 + REL)
    assert t_walk <= start_walk[res.best_start] * (1 + REL)
    assert res.lower_bound <= t_walk * (1 + REL)
    fresh = float(evaluate(tp, tr, explicit(tp, res.task_node, "x"), routing)["completion_time"])
    assert fresh == pytest.approx(t_walk, rel=REL, abs=0)
    if res.placement.name.startswith("search from"):  # the search's own score of the mapping it returns
        assert res.search_time == pytest.approx(fresh, rel=REL, abs=0)
    return t_walk, best


# (topology, tasks_per_node, nodes (None: all), phases' seeds, tasks): bytes 1e-3 .. 1e15 everywhere
SEARCH_CASES = {
    "torus-dor-1-subset-two-phases": ("torus", 1, [0, 1, 2, 3, 5, 7, 8, 9, 12, 13, 14, 17, 20, 21, 23], (1, 2), 11),
    "df-minimal-3-subset-two-phases": ("df-slow-global", 3, [0, 1, 2, 3, 6, 7, 9, 10], (6, 5), 13),
    "ft-dmodk-3": ("ft", 3, None, (7,), 16),
}


@pytest.mark.parametrize("case", list(SEARCH_CASES))
def test_search_answer_starts_bound_and_own_score_are_per_flow_walks(case):
    name, tpn, nodes, seeds, n = SEARCH_CASES[case]
    tp, kind = topo(name), kind_of(name)
    fl = [mixed_flows(n, s) for s in seeds]
    tr, walker = build_traffic(n, fl), Walker(tp, kind, fl)
    routing = ROUTING[kind]()
    res = search_mapping(tp, tr, routing, nodes=nodes, tasks_per_node=tpn, time_budget=1.0, max_iterations=25,
                         candidates=32, progress=False, seed=seeds[0])
    allowed = set(range(tp.n_nodes) if nodes is None else nodes)
    assert set(res.task_node.tolist()) <= allowed
    assert np.bincount(res.task_node).max() <= tpn
    check_result(res, walker, tp, tr, routing)


# (topology, tasks_per_node, nodes, tasks, seed): 5-6 tasks, every mapping enumerated
BOUND_CASES = {
    "torus-1": ("torus", 1, [0, 2, 5, 8, 13, 17, 23], 6, 11),
    "torus-3": ("torus-fast", 3, [0, 3, 9, 22], 6, 12),
    "df-1": ("df", 1, [0, 1, 3, 4, 6, 9, 10, 11], 6, 13),
    "df-3": ("df-slow-global", 3, [0, 5, 6, 11], 6, 14),
    "ft-1": ("ft", 1, list(range(8)), 5, 15),
    "ft-3": ("ft", 3, [0, 2, 5, 7], 6, 16),
}


@pytest.mark.parametrize("case", list(BOUND_CASES))
def test_bound_at_most_the_exhaustive_optimum_at_mixed_magnitudes(case):
    name, tpn, nodes, n, seed = BOUND_CASES[case]
    tp, kind = topo(name), kind_of(name)
    fl = [mixed_flows(n, seed, many=12), mixed_flows(n, seed + 1, giant=1e-3, tiny=(1e9, 1e12), many=6)]
    walker = Walker(tp, kind, fl)
    opt = exhaustive_optimum(walker, nodes, n, tpn)
    b = mapping_bound(tp, build_traffic(n, fl), ROUTING[kind](), nodes=np.asarray(nodes), tasks_per_node=tpn)
    assert 0 < b.value <= opt * (1 + REL), (b.parts, opt)
