"""Audit of the adaptive routings (``ugal``, ``torus_adaptive``, ``ft_adaptive``: evaluator/routing/_adaptive.py and
its members; docs/adaptive_routing.md) against references written here from the documented definitions.

The references do not use the routing modules: every candidate's paths are walked from the topology's own link
tables (a Dragonfly's ``local_link``/``global_link``/``global_owner``, a torus's ``link_src``/``link_dst`` and
coordinates, a fat tree's router graph and levels), as docs/adaptive_routing.md and Kim, Dally, Scott, Abts 2008
define them: minimal (local, global, local over the group pair's parallel links, evenly), Valiant through a uniform
intermediate group (or router, ``valiant_router``), DOR in each dimension order (a half-way tie split evenly), every
up path of a fat tree (one up port per tier, tier 1 fastest) with its one way down. From them, per the docs:

* the link loads of a split ``x`` (``sum_k R_k (w x_k)``), the bytes x hops they must sum to;
* the path cost ``c``, the decision cost ``d`` of each rule (UGAL-G, UGAL-L's first hop x hops, the fat tree's
  regret) and the relative gap the tool reports;
* the potential whose minimiser a global rule's fixed point is (a Wardrop equilibrium, unique link loads), solved
  with SciPy; the per-flow min-max split of the candidates (an LP, SciPy's HiGHS), below which no split can go.

Checked: the loads returned are the loads of the split returned, non-negative, summing to bytes x hops; the gap is the
documented one; a global rule's fixed point approaches the potential's minimiser; symmetric inputs give symmetric
loads; the documented bounds; determinism; ``route(topology, src, dst)``; bad parameters refused naming the field.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools

import jax
import numpy as np
import pytest

import evaluator as ev
from evaluator import placement, routing, traffic
from evaluator.errors import ConfigError

# ---------------------------------------------------------------------------------------------------------------
# independent references: candidate paths as lists of (probability, [router links in order])
# ---------------------------------------------------------------------------------------------------------------


def df_minimal_paths(df, s, d):
    """Dragonfly minimal: within a group the one local link; between groups, each of the ``m`` parallel global
    links with probability 1/m: local hop to its owner (none if ``s`` owns it), the link, local hop from where it
    lands to ``d`` (none if it lands on ``d``)."""
    a = int(df.a)
    S, i = divmod(int(s), a)
    D, j = divmod(int(d), a)
    if s == d:
        return [(1.0, [])]
    if S == D:
        return [(1.0, [int(df.local_link[S, i, j])])]
    m = int(df.links_per_pair)
    out = []
    for c in range(m):
        own = int(df.global_owner[S, D, c])
        land = int(df.global_owner[D, S, c])  # copy c of S->D lands on the owner of copy c of D->S
        links = ([] if own == i else [int(df.local_link[S, i, own])]) + [int(df.global_link[S, D, c])]
        links += [] if land == j else [int(df.local_link[D, land, j])]
        out.append((1.0 / m, links))
    return out


def _concat(first, second):
    return [(p * q, a + b) for p, a in first for q, b in second]


def df_valiant_paths(df, s, d):
    """Valiant through a uniform intermediate group ``I`` (not the source's or destination's): minimal to the router
    where the global link towards ``I`` lands, then minimal on; intra-group flows stay minimal."""
    a, g, m = int(df.a), int(df.g), int(df.links_per_pair)
    S, D = int(s) // a, int(d) // a
    if S == D:
        return df_minimal_paths(df, s, d)
    out = []
    for I in range(g):
        if I in (S, D):
            continue
        for c in range(m):
            own = int(df.global_owner[S, I, c])
            x = I * a + int(df.global_owner[I, S, c])
            leg1 = ([] if S * a + own == s else [int(df.local_link[S, int(s) % a, own])]) + \
                [int(df.global_link[S, I, c])]
            out += [(p / ((g - 2) * m), leg1 + links) for p, links in df_minimal_paths(df, x, d)]
    return out


def df_valiant_router_paths(df, s, d):
    """Valiant through a uniform intermediate router ``x`` of all ``R``: minimal when ``x`` is in the source
    group, else minimal to ``x`` then minimal to ``d``; intra-group flows stay minimal."""
    a, R = int(df.a), int(df.n_routers)
    S, D = int(s) // a, int(d) // a
    if S == D:
        return df_minimal_paths(df, s, d)
    out = [(a / R * p, links) for p, links in df_minimal_paths(df, s, d)]
    for x in range(R):
        if x // a == S:
            continue
        out += [(p / R, links) for p, links in _concat(df_minimal_paths(df, s, x), df_minimal_paths(df, x, d))]
    return out


@functools.lru_cache(maxsize=None)
def _link_index(topo):
    """``(src router, dst router) -> [link ids]`` of the router links."""
    n = int(topo.n_router_links)
    idx = {}
    for lk, (u, v) in enumerate(zip(np.asarray(topo.link_src)[:n], np.asarray(topo.link_dst)[:n])):
        idx.setdefault((int(u), int(v)), []).append(lk)
    return idx


def torus_dor_paths(t, s, d, order, tie="split"):
    """DOR on a torus: the dimensions in ``order``, each by the shorter way round (equally short: both ways with
    probability 1/2, ``tie=split``, or the positive way, ``tie=positive``); a mesh dimension the only way."""
    dims = list(t.dims)
    idx = _link_index(t)
    cs, cd = np.unravel_index(int(s), dims), np.unravel_index(int(d), dims)
    paths = [(1.0, [], [int(v) for v in cs])]
    for k in order:
        n, delta = dims[k], (cd[k] - cs[k]) % dims[k]
        if delta == 0:
            continue
        if not t.wrap[k]:
            ways = [(+1, delta)] if cd[k] > cs[k] else [(-1, n - delta)]
        elif delta != n - delta:
            ways = [(+1, delta)] if delta < n - delta else [(-1, n - delta)]
        else:
            ways = [(+1, delta), (-1, n - delta)] if tie == "split" else [(+1, delta)]
        new = []
        for p, links, pos in paths:
            for sign, steps in ways:
                lk, cur = list(links), list(pos)
                for _ in range(steps):
                    nxt = list(cur)
                    nxt[k] = (cur[k] + sign) % n
                    u, v = int(np.ravel_multi_index(cur, dims)), int(np.ravel_multi_index(nxt, dims))
                    lk.append(idx[(u, v)][0])
                    cur = nxt
                new.append((p / len(ways), lk, cur))
        paths = new
    return [(p, links) for p, links, _ in paths]


@functools.lru_cache(maxsize=None)
def _ft_graph(ft):
    level = np.asarray(ft.router_level())
    n = int(ft.n_router_links)
    ups, downs = {}, {}
    for lk, (u, v) in enumerate(zip(np.asarray(ft.link_src)[:n], np.asarray(ft.link_dst)[:n])):
        (ups if level[v] > level[u] else downs).setdefault(int(u), []).append((lk, int(v)))
    for table in (ups, downs):
        for u in table:
            table[u].sort()
    return level, ups, downs


@functools.lru_cache(maxsize=None)
def _ft_leaves_below(ft, r):
    """The leaf switches below switch ``r`` (itself, for a leaf)."""
    level, _, downs = _ft_graph(ft)
    return frozenset({r}) if level[r] == 1 else frozenset().union(*(_ft_leaves_below(ft, v) for _, v in downs[r]))


def ft_candidates(ft, s, d):
    """``ft_adaptive``'s candidates from leaf ``s`` to leaf ``d`` as documented: one up port per tier (candidate
    ``p`` in the mixed radix of the tiers' up-port counts, tier 1 fastest; a port is the rank of the link among the
    switch's up links), up until the switch reached sees ``d`` below it, then the one way down, over the parallel
    copy of the same rank as the up port's at that tier. ``(paths, up links of each path)``; candidates that differ
    only above the turn are the same path."""
    level, ups, downs = _ft_graph(ft)
    h = int(ft.levels)
    U = [len(ups[next(r for r in range(ft.n_routers) if level[r] == t)]) for t in range(1, h)]
    out = []
    for p in range(int(np.prod(U))):
        digits, rest = [], p
        for u in U:
            digits.append(rest % u)
            rest //= u
        r, up = int(s), []
        while d not in _ft_leaves_below(ft, r):
            lk, r = ups[r][digits[int(level[r]) - 1]]
            up.append(lk)
        down = []
        while r != d:
            child = next(v for _, v in downs[r] if d in _ft_leaves_below(ft, v))
            copies = [lk for lk, v in downs[r] if v == child]  # parallel links, ascending ids
            tier = int(level[child])
            down.append(copies[digits[tier - 1] % len(copies)])
            r = child
        out.append((up + down, up))
    return out


def candidate_paths(topo, spec, s, d):
    """Every candidate's paths of one router-level flow, in the tool's candidate order (documented)."""
    if spec.kind == "ugal":
        nonmin = df_valiant_paths if spec.nonminimal == "valiant" else df_valiant_router_paths
        return [df_minimal_paths(topo, s, d), nonmin(topo, s, d)]
    if spec.kind == "torus_adaptive":
        nd = len(topo.dims)
        if spec.orders == "all" or (spec.orders == "auto" and nd <= 3):
            orders = list(itertools.permutations(range(nd)))
        else:
            orders = [tuple(list(range(nd))[i:] + list(range(nd))[:i]) for i in range(nd)]
        return [torus_dor_paths(topo, s, d, o, spec.tie) for o in orders]
    return [[(1.0, links)] for links, _ in ft_candidates(topo, s, d)] if s != d else \
        [[(1.0, [])]] * len(ft_candidates(topo, 0, 1))


class Reference:
    """The documented model on one topology, spec and list of router-level flows (``src``, ``dst``, ``w``)."""

    def __init__(self, topo, spec, src, dst, w):
        self.topo, self.spec = topo, spec
        self.src, self.dst, self.w = np.asarray(src), np.asarray(dst), np.asarray(w, float)
        self.n = int(topo.n_router_links)
        self.cap = np.asarray(topo.capacity, float)[:self.n]
        self.paths = [candidate_paths(topo, spec, int(s), int(t)) for s, t in zip(self.src, self.dst)]
        self.K = len(self.paths[0])
        F = len(self.paths)
        # incidence: A[k][f, l] = expected fraction of flow f's bytes on link l under candidate k
        self.A = np.zeros((self.K, F, self.n))
        self.H = np.zeros((F, self.K))
        for f, cands in enumerate(self.paths):
            for k, paths in enumerate(cands):
                for p, links in paths:
                    for lk in links:
                        self.A[k, f, lk] += p
                    self.H[f, k] += p * len(links)

    def loads(self, x):
        return sum(self.A[k].T @ (self.w * x[:, k]) for k in range(self.K))

    def candidate_time(self, k):
        """Completion time (router links) with every flow on candidate ``k``."""
        return float((self.A[k].T @ self.w / self.cap).max())

    def costs(self, load):
        """``(c, d)`` of the documented decision rule at link loads ``load``."""
        spec = self.spec
        gl = load / self.cap
        glob = spec.variant == "global"
        gp = (gl / gl.max()) ** spec.power if glob and spec.power != 1.0 and gl.max() > 0 else gl
        c = np.stack([self.A[k] @ gp for k in range(self.K)], axis=1)
        if glob:
            d = c.copy()
        elif spec.kind == "ft_adaptive":  # the regret of every switch's up-port choice on the path
            level, ups, _ = _ft_graph(self.topo)
            src_of = np.asarray(self.topo.link_src)
            least = {u: min(gl[lk] for lk, _ in v) for u, v in ups.items()}
            d = np.zeros_like(c)
            for f, (s, t) in enumerate(zip(self.src, self.dst)):
                if s == t:
                    continue
                for k, (_, up) in enumerate(ft_candidates(self.topo, int(s), int(t))):
                    d[f, k] = sum(gl[lk] - least[int(src_of[lk])] for lk in up)
        else:  # the first link's busy time (expected over the candidate's paths) times the expected hops
            q1 = np.zeros_like(c)
            for f, cands in enumerate(self.paths):
                for k, paths in enumerate(cands):
                    q1[f, k] = sum(p * gl[links[0]] for p, links in paths if links)
            d = q1 * self.H
        threshold = getattr(spec, "threshold", 0.0)
        if threshold and spec.kind == "ugal":
            d[:, 1] += threshold * gp.max()
        return c, d

    def gap(self, load, x):
        c, d = self.costs(load)
        excess = (x * d).sum(axis=1) - d.min(axis=1)
        return float((self.w * excess).sum() / (self.w * (x * c).sum(axis=1)).sum())

    def potential(self, load, p):
        """``sum_l cap_l (load_l / cap_l)^(p + 1) / (p + 1)``, whose gradient in a flow's split is its path cost."""
        return float(np.sum(self.cap * (load / self.cap) ** (p + 1)) / (p + 1))

    def min_max_time(self):
        """The least completion time (router links) of any per-flow split over the candidates: an LP."""
        from scipy.optimize import linprog

        F, K = len(self.w), self.K
        nv = F * K + 1
        cost = np.zeros(nv)
        cost[-1] = 1.0
        rows = np.zeros((self.n, nv))
        for k in range(K):
            rows[:, k:F * K:K] = (self.A[k] * self.w[:, None]).T
        rows[:, -1] = -self.cap
        eq = np.zeros((F, nv))
        for f in range(F):
            eq[f, f * K:(f + 1) * K] = 1.0
        res = linprog(cost, A_ub=rows, b_ub=np.zeros(self.n), A_eq=eq, b_eq=np.ones(F),
                      bounds=[(0, None)] * nv, method="highs")
        assert res.status == 0
        return float(res.fun)


# ---------------------------------------------------------------------------------------------------------------
# running the tool
# ---------------------------------------------------------------------------------------------------------------


def solve(topo, spec, src, dst, w):
    """The tool's fixed point of router-level flows: ``(loads, x, gap)`` as NumPy."""
    op = ev.routing.build_routing(topo, spec)
    out = jax.jit(op.solve)(jax.device_put(op.tables), np.asarray(src, np.int32), np.asarray(dst, np.int32),
                            np.asarray(w, np.float64))
    return tuple(np.asarray(o) for o in out)


def random_flows(n_end, n, seed, lo=1, hi=50):
    rng = np.random.default_rng(seed)
    s, d = rng.integers(0, n_end, n), rng.integers(0, n_end, n)
    keep = s != d
    return s[keep], d[keep], rng.integers(lo, hi, int(keep.sum())).astype(float) * 1e3


def mixed_flows(topo, spec, seed, n=None):
    """Router-level flows of one case: random pairs (``n``, default twice the endpoints), with a group tornado on
    a Dragonfly so that UGAL has something to adapt to."""
    n_end = topo.switches(1) if spec.kind == "ft_adaptive" else topo.n_routers
    s, d, w = random_flows(n_end, 2 * n_end if n is None else n, seed)
    if spec.kind == "ugal":
        R, a = topo.n_routers, topo.a
        src = np.arange(R)
        s, d, w = np.concatenate([s, src]), np.concatenate([d, (src + (topo.g // 2) * a) % R]), \
            np.concatenate([w, np.full(R, 2e5)])
    return s, d, w


def torus_distance(t, s, d):
    cs, cd = np.unravel_index(int(s), t.dims), np.unravel_index(int(d), t.dims)
    return sum(min((b - a) % n, (a - b) % n) if w else abs(b - a) for a, b, n, w in zip(cs, cd, t.dims, t.wrap))


def ft_distance(ft, s, d):
    """Router hops of a shortest up*/down* path between leaves: twice the levels climbed to a common ancestor."""
    level, ups, _ = _ft_graph(ft)
    r, up = int(s), 0
    while d not in _ft_leaves_below(ft, r):
        r = ups[r][0][1]
        up += 1
    return 2 * up


# ---------------------------------------------------------------------------------------------------------------
# the loads are those of the split returned, and the gap is the documented one
# ---------------------------------------------------------------------------------------------------------------

CASES = {
    "ugal-g": (lambda: ev.dragonfly(1, 4, 2), routing.ugal(iterations=24)),
    "ugal-g-p1": (lambda: ev.dragonfly(1, 3, 2, g=4), routing.ugal(iterations=24, power=1.0)),
    "ugal-g-vrouter-threshold": (lambda: ev.dragonfly(1, 4, 2, arrangement="relative"),
                                 routing.ugal(iterations=24, threshold=0.3, nonminimal="valiant_router", power=4.0)),
    "ugal-l": (lambda: ev.dragonfly(2, 4, 2, g=5), routing.ugal("local", iterations=24)),  # 2 links per group pair
    "ugal-l-vrouter": (lambda: ev.dragonfly(1, 4, 2),
                       routing.ugal("local", iterations=24, nonminimal="valiant_router")),
    "torus-g": (lambda: ev.torus([3, 4, 2]), routing.torus_adaptive(iterations=24)),
    "torus-l-positive-mesh": (lambda: ev.torus([4, 6], wrap=[True, False]),
                              routing.torus_adaptive("local", tie="positive", iterations=24)),
    "torus-g-rotations": (lambda: ev.torus([4, 3, 4, 2]), routing.torus_adaptive(orders="rotations", iterations=24)),
    "ft-l": (lambda: ev.topology.fat_tree(k=4, levels=3), routing.ft_adaptive(iterations=24)),
    "ft-g-parallel-tapered": (lambda: ev.topology.fat_tree([2, 2, 3], parallel_links=[2, 1]),
                              routing.ft_adaptive("global", iterations=24, power=8.0)),
}


@functools.lru_cache(maxsize=None)
def case(name, seed=1):
    make, spec = CASES[name]
    topo = make()
    s, d, w = mixed_flows(topo, spec, seed)
    loads, x, gap = solve(topo, spec, s, d, w)
    return topo, spec, Reference(topo, spec, s, d, w), loads, x, gap


@pytest.mark.parametrize("name", list(CASES))
def test_loads_are_the_split_routed_non_negative_and_sum_to_bytes_times_hops(name):
    """``load = sum_k R_k (w x_k)`` with the split returned, every candidate walked by the references; every load
    >= 0; the split a distribution per flow; the loads' sum the bytes times the expected hops of the split, and on a
    torus and a fat tree (minimal candidates only) the bytes times the flows' shortest distances."""
    topo, spec, ref, loads, x, gap = case(name)
    assert loads.shape == (topo.n_router_links,) and np.isfinite(loads).all()
    assert loads.min() >= 0.0
    assert x.shape == (len(ref.w), ref.K) and x.min() >= -1e-12
    np.testing.assert_allclose(x.sum(axis=1), 1.0, rtol=0, atol=1e-12)
    np.testing.assert_allclose(loads, ref.loads(x), rtol=1e-9, atol=1e-9 * loads.max())
    total = float((ref.w * (x * ref.H).sum(axis=1)).sum())
    assert loads.sum() == pytest.approx(total, rel=1e-12)
    if spec.kind == "torus_adaptive":
        dist = np.array([torus_distance(topo, s, d) for s, d in zip(ref.src, ref.dst)])
        np.testing.assert_allclose(ref.H, np.repeat(dist[:, None], ref.K, axis=1))
        assert loads.sum() == pytest.approx(float((ref.w * dist).sum()), rel=1e-12)
    if spec.kind == "ft_adaptive":
        dist = np.array([ft_distance(topo, s, d) for s, d in zip(ref.src, ref.dst)])
        np.testing.assert_allclose(ref.H, np.repeat(dist[:, None], ref.K, axis=1))
        assert loads.sum() == pytest.approx(float((ref.w * dist).sum()), rel=1e-12)
    if spec.kind == "ugal":  # Valiant is the longer way between groups, the same way within one
        inter = ref.src // topo.a != ref.dst // topo.a
        assert (ref.H[inter, 1] > ref.H[inter, 0]).all()
        np.testing.assert_allclose(ref.H[~inter, 1], ref.H[~inter, 0])


@pytest.mark.parametrize("name", list(CASES))
def test_gap_is_the_documented_relative_gap_of_the_documented_decision_costs(name):
    """``gap = sum_f w_f (sum_k x d - min_k d) / sum_f w_f sum_k x c`` with ``c`` the path costs (global: ``(gl /
    max gl)^p`` summed along the path) and ``d`` each rule's decision cost (UGAL-G ``c`` plus ``threshold * max gp``
    on Valiant; UGAL-L and the torus's local rule the first link's busy time times the hops; the fat tree's local
    rule the regret of each switch's up port), computed by the reference from the loads returned."""
    _, spec, ref, loads, x, gap = case(name)
    assert np.isfinite(gap) and gap >= 0.0
    assert gap == pytest.approx(ref.gap(loads, x), rel=1e-7, abs=1e-12)


@pytest.mark.parametrize("name", [n for n in CASES if CASES[n][1].variant == "local" or
                                  getattr(CASES[n][1], "threshold", 0.0)])
def test_successive_averages_split_is_an_average_of_one_hot_responses(name):
    """Local rules and a threshold step by ``1 / (t + 2)`` from every flow on candidate 0: after ``T`` iterations
    every share is a multiple of ``1 / (T + 1)`` (the average of ``e_0`` and ``T`` best responses)."""
    _, spec, _, _, x, _ = case(name)
    y = x * (spec.iterations + 1)
    np.testing.assert_allclose(y, np.round(y), atol=1e-9)


@pytest.mark.parametrize("name", list(CASES))
def test_no_split_is_faster_than_the_per_flow_min_max_of_its_candidates(name):
    """The LP of the best per-flow split of the candidates (the least busiest-link time any split reaches) is a floor
    of the adaptive time, and the global rules, whose fixed point tends to it as the exponent grows, stay within
    their worse candidate on these flows."""
    _, spec, ref, loads, _, _ = case(name)
    t = float((loads / ref.cap).max())
    assert ref.min_max_time() <= t * (1 + 1e-9)
    if spec.variant == "global":
        assert t <= max(ref.candidate_time(k) for k in range(ref.K)) * (1 + 1e-9)


def test_candidate_counts_are_the_documented_ones():
    """UGAL: minimal and its non-minimal kind; torus: ``d!`` orders for ``d <= 3``, the ``d`` rotations above (or as
    asked); fat tree: ``U_1 ... U_{h-1}`` up paths."""
    b = ev.routing.build_routing
    df = ev.dragonfly(1, 4, 2)
    assert b(df, routing.ugal(iterations=2)).candidates == ("minimal", "valiant")
    assert b(df, routing.ugal(iterations=2, nonminimal="valiant_router")).candidates == ("minimal", "valiant_router")
    for dims, orders, n in [([3, 4], "auto", 2), ([3, 4, 2], "auto", 6), ([3, 3, 3, 3], "auto", 4),
                            ([3, 3, 3, 3], "all", 24), ([3, 4, 2], "rotations", 3)]:
        op = b(ev.torus(dims), routing.torus_adaptive(orders=orders, iterations=2))
        assert len(op.candidates) == n and op.candidates[0] == "dor-" + "".join(map(str, range(len(dims))))
    for ft, n in [(ev.topology.fat_tree(k=4, levels=3), 16), (ev.topology.fat_tree([2, 2, 3], parallel_links=2), 16),
                  (ev.topology.fat_tree([4, 4, 2], [1, 2, 2]), 4), (ev.topology.fat_tree([3, 2, 2, 2]), 12)]:
        assert len(b(ft, routing.ft_adaptive(iterations=2)).candidates) == n


# ---------------------------------------------------------------------------------------------------------------
# a global rule's fixed point: Frank-Wolfe on the documented potential, towards its minimiser
# ---------------------------------------------------------------------------------------------------------------


def potential_minimiser(ref, p):
    """The link loads that minimise ``sum_l cap_l (load_l / cap_l)^(p+1) / (p+1)`` over every per-flow split of
    the candidates (SciPy's SLSQP; the potential is strictly convex in the loads, so these loads are the unique
    Wardrop equilibrium's)."""
    from scipy.optimize import minimize

    F, K = len(ref.w), ref.K
    M = np.concatenate([ref.A[k] * ref.w[:, None] for k in range(K)], axis=0)  # row k F + f: flow f on candidate k
    t0 = ref.candidate_time(0)
    Mn = M / (ref.cap * t0)[None, :]
    cap = ref.cap / ref.cap.max()
    z0 = np.zeros(K * F)
    z0[:F] = 1.0
    f0 = float(np.sum(cap * (Mn.T @ z0) ** (p + 1)))

    def fun(z):
        u = Mn.T @ z
        return float(np.sum(cap * u ** (p + 1))) / f0, (p + 1) * (Mn @ (cap * u ** p)) / f0

    cons = {"type": "eq", "fun": lambda z: z.reshape(K, F).sum(axis=0) - 1.0,
            "jac": lambda z: np.tile(np.eye(F), (1, K))}
    res = minimize(fun, z0, jac=True, method="SLSQP", bounds=[(0.0, 1.0)] * (K * F), constraints=[cons],
                   options={"ftol": 1e-14, "maxiter": 5000})
    assert res.success, res.message
    return M.T @ res.x


EQUILIBRIUM = {
    "ugal": (lambda: ev.dragonfly(1, 3, 1), lambda p, it: routing.ugal(power=p, iterations=it)),
    "torus_adaptive": (lambda: ev.torus([3, 4]), lambda p, it: routing.torus_adaptive(power=p, iterations=it)),
    "ft_adaptive": (lambda: ev.topology.fat_tree(k=2, levels=3),
                    lambda p, it: routing.ft_adaptive("global", power=p, iterations=it)),
}


@pytest.mark.parametrize("kind", list(EQUILIBRIUM))
@pytest.mark.parametrize("p", [4.0])  # (1.0 too when run by hand: within 0.2 % of the minimiser)
def test_global_fixed_point_tends_to_the_potential_minimiser(kind, p):
    """Documented: without a threshold a global rule's path cost is the gradient of ``sum_l cap_l (load_l /
    cap_l)^(p+1) / (p+1)`` and the step Frank-Wolfe's exact line search, so the fixed point is the Wardrop
    equilibrium. Against SciPy's minimiser: the potential never rises with the iterations, is within 0.2% of the
    least after 1,024, and the loads (unique at the equilibrium) within 1.5% of the busiest."""
    make, spec_of = EQUILIBRIUM[kind]
    topo = make()
    n_end = topo.switches(1) if kind == "ft_adaptive" else topo.n_routers
    rng = np.random.default_rng(3)
    s = rng.integers(0, n_end, 2 * n_end)
    d = (s + rng.integers(1, n_end, 2 * n_end)) % n_end
    w = rng.integers(1, 50, 2 * n_end) * 1e3
    ref = Reference(topo, spec_of(p, 1), s, d, w)
    best = potential_minimiser(ref, p)
    phi_best = ref.potential(best, p)
    phis = []
    for it in (1, 4, 16, 64, 1024):
        loads, _, gap = solve(topo, spec_of(p, it), s, d, w)
        phis.append(ref.potential(loads, p))
    assert all(b <= a * (1 + 1e-12) for a, b in zip(phis, phis[1:])), phis
    assert phi_best * (1 - 1e-9) <= phis[-1] <= phi_best * 1.002
    np.testing.assert_allclose(loads, best, rtol=0, atol=0.015 * best.max())


@pytest.mark.parametrize("kind", list(EQUILIBRIUM))
def test_global_potential_never_rises_at_the_default_exponent(kind):
    """The same descent at the default ``power`` 32 (the line search by bisection): the potential at 1, 2, 8, 32 and
    128 iterations is non-increasing."""
    make, spec_of = EQUILIBRIUM[kind]
    topo = make()
    n_end = topo.switches(1) if kind == "ft_adaptive" else topo.n_routers
    s, d, w = random_flows(n_end, 2 * n_end, 8)
    ref = Reference(topo, spec_of(32.0, 1), s, d, w)
    phis = [ref.potential(solve(topo, spec_of(32.0, it), s, d, w)[0], 32.0) for it in (1, 2, 8, 32, 128)]
    assert all(b <= a * (1 + 1e-9) for a, b in zip(phis, phis[1:])), phis


# ---------------------------------------------------------------------------------------------------------------
# symmetric inputs, symmetric loads
# ---------------------------------------------------------------------------------------------------------------


def link_image(topo, router_map):
    """The router links' images under a router permutation that maps links onto links."""
    idx = _link_index(topo)
    n = int(topo.n_router_links)
    ls, ld = np.asarray(topo.link_src)[:n], np.asarray(topo.link_dst)[:n]
    out = np.array([idx[(int(router_map[u]), int(router_map[v]))] for u, v in zip(ls, ld)])
    assert out.shape == (n, 1), "the map is not one link to one link"
    return out[:, 0]


@pytest.mark.parametrize("spec", [routing.ugal(iterations=48), routing.ugal("local", iterations=48),
                                  routing.ugal(iterations=48, power=1.0, nonminimal="valiant_router"),
                                  routing.ugal("local", iterations=48, threshold=0.2)], ids=lambda s: s.label)
def test_dragonfly_group_rotation_gives_rotated_loads(spec):
    """With the ``relative`` arrangement, shifting every group by one is an automorphism of the Dragonfly that keeps
    the group tornado (every router to its counterpart 3 groups on) and each candidate: the loads are invariant."""
    df = ev.dragonfly(1, 4, 2, arrangement="relative")
    R, a = df.n_routers, df.a
    rot = (np.arange(R) + a) % R
    image = link_image(df, rot)
    src = np.arange(R)
    loads, x, _ = solve(df, spec, src, (src + 3 * a) % R, np.full(R, 1e6))
    assert 0.0 < x[:, 1].mean() < 1.0  # the split is not trivial
    np.testing.assert_allclose(loads[image], loads, rtol=1e-12, atol=1e-9 * loads.max())
    np.testing.assert_allclose(x[rot], x, atol=1e-12)


@pytest.mark.parametrize("variant", ["local", "global"])
def test_fat_tree_pod_rotation_gives_rotated_loads(variant):
    """Moving every pod of the 4-ary 3-tree one on (the label's top digit, top switches fixed) keeps the two
    patterns below (pod tornado, and 2 pods on with the leaf one on) and every up port: invariant loads."""
    ft = ev.topology.fat_tree(k=4, levels=3)
    rc = np.asarray(ft.router_coords)
    key = {tuple(r): i for i, r in enumerate(rc)}
    moved = rc.copy()
    low = rc[:, 0] < 3
    moved[low, 1] = (moved[low, 1] + 1) % 4
    rot = np.array([key[tuple(r)] for r in moved])
    image = link_image(ft, rot)
    L = ft.switches(1)
    leaves = np.arange(L)
    other = np.array([key[(1, (c[1] + 2) % 4, (c[2] + 1) % 4, 0)] for c in rc[:L]])
    src, dst = np.concatenate([leaves, leaves]), np.concatenate([rot[leaves], other])
    w = np.concatenate([np.full(L, 1e6), np.full(L, 5e5)])
    loads, x, _ = solve(ft, routing.ft_adaptive(variant, iterations=48), src, dst, w)
    np.testing.assert_allclose(loads[image], loads, rtol=1e-12, atol=1e-9 * loads.max())


@pytest.mark.parametrize("spec", [routing.torus_adaptive(power=1.0, iterations=1024),
                                  routing.torus_adaptive(iterations=1024),
                                  routing.torus_adaptive("local", iterations=1024)], ids=lambda s: s.label)
def test_torus_transpose_gives_transposed_loads_at_the_fixed_point(spec):
    """Swapping the two coordinates of a 4x4 torus maps the traffic (random flows plus their transposes) onto itself
    and DOR x-then-y onto y-then-x: the start (every flow on candidate 0) is not symmetric, the fixed point is, so
    the loads converge to transposed ones (within 1% of the busiest after 1,024 iterations)."""
    t = ev.torus([4, 4])
    co = np.array(np.unravel_index(np.arange(16), (4, 4))).T
    tr = np.ravel_multi_index((co[:, 1], co[:, 0]), (4, 4))
    image = link_image(t, tr)
    s, d, w = random_flows(16, 20, 5)
    loads, _, _ = solve(t, spec, np.concatenate([s, tr[s]]), np.concatenate([d, tr[d]]), np.concatenate([w, w]))
    np.testing.assert_allclose(loads[image], loads, rtol=0, atol=0.01 * loads.max())


# ---------------------------------------------------------------------------------------------------------------
# the documented bounds
# ---------------------------------------------------------------------------------------------------------------


def _time(topo, tr, pl, r, **kw):
    return float(ev.evaluate(topo, tr, pl, r, **kw).completion_time)


@pytest.mark.parametrize("spec", [routing.ugal(), routing.ugal("local", nonminimal="valiant_router")],
                         ids=lambda s: s.label)
def test_uniform_all_to_all_never_slower_than_minimal_and_equal_where_documented(spec):
    """docs/adaptive_routing.md: on uniform traffic UGAL stays minimal (DF(2,4,2): 7100.0 us either way; BookSim's
    table: both variants at minimal's throughput). Equal to minimal on DF(1,4,2) and DF(1,3,1), and never slower
    than minimal on DF(2,2,1,3), whose one local link per router pair makes Valiant worth a share."""
    for topo, equal in [(ev.dragonfly(1, 3, 1), True), (ev.dragonfly(2, 2, 1), False)]:
        n = topo.n_nodes
        pl, tr = placement.linear(topo, n), traffic.all_to_all(n, 1e3)
        t_min, t = _time(topo, tr, pl, "minimal"), _time(topo, tr, pl, spec)
        assert t <= t_min * (1 + 1e-9)
        if equal:
            assert t == pytest.approx(t_min, rel=1e-9)


@pytest.mark.parametrize("variant,nonminimal", [("global", "valiant"), ("local", "valiant_router")])
def test_threshold_of_three_busiest_link_times_is_minimal_routing(variant, nonminimal):
    """``threshold`` biases towards minimal in units of the busiest link's busy time (global: of ``max gp``): a
    minimal path's cost is at most 3 of those (3 hops, each at most the busiest), so with ``threshold = 3`` no
    flow ever prefers Valiant and the loads are minimal routing's, exactly."""
    df = ev.dragonfly(1, 4, 2)
    spec = routing.ugal(variant, threshold=3.0, nonminimal=nonminimal, iterations=16)
    s, d, w = mixed_flows(df, spec, 4)
    loads, x, gap = solve(df, spec, s, d, w)
    ref = Reference(df, spec, s, d, w)
    assert (x[:, 1] == 0.0).all() and gap == 0.0
    np.testing.assert_allclose(loads, ref.A[0].T @ ref.w, rtol=1e-12, atol=1e-6)
    loose = routing.ugal(variant, threshold=0.0, nonminimal=nonminimal, iterations=16)
    assert solve(df, loose, s, d, w)[1][:, 1].max() > 0.0  # (without it, some flows take Valiant)


@pytest.mark.parametrize("topo,tr_of,specs", [
    (ev.dragonfly(2, 4, 2), lambda t: traffic.group_tornado(t, 1e6), [routing.ugal("local")]),
    (ev.torus([4, 4]), lambda t: traffic.random_permutation(16, 1e6, seed=3), [routing.torus_adaptive()]),
    (ev.topology.fat_tree(k=4, levels=3), lambda t: traffic.group_tornado(t, 1e6, offset=1),
     [routing.ft_adaptive(), routing.ft_adaptive("global")]),
], ids=["dragonfly", "torus", "fat_tree"])
def test_never_faster_than_the_all_paths_bound(topo, tr_of, specs):
    """The all-paths bound (``bounds=true``: a certified lower bound of every routing) is at or below every adaptive
    time, on the documented networks and patterns."""
    tr, pl = tr_of(topo), placement.linear(topo, topo.n_nodes)
    for spec in specs:
        ds = ev.evaluate(topo, tr, pl, spec, bounds=True)
        assert float(ds.optimal_completion_time) <= float(ds.completion_time) * (1 + 1e-9)


def node_traffic(topo, src_routers, dst_routers, nbytes):
    """Router-level flows as node flows, each flow of a router from (to) a node of its own."""
    p = topo.n_nodes // topo.n_routers
    used_s, used_d, ns, nd = {}, {}, [], []
    for a, b in zip(src_routers, dst_routers):
        i, j = used_s.get(a, 0), used_d.get(b, 0)
        used_s[a], used_d[b] = i + 1, j + 1
        assert i < p and j < p
        ns.append(a * p + i)
        nd.append(b * p + j)
    return traffic.from_flows(topo.n_nodes, ns, nd, np.asarray(nbytes, float))


LOCAL_WORSE_THAN_BOTH = {
    # DF(2,2,1,3): 4 flows (router -> router, bytes): minimal 800 us, valiant 800 us, ugal_local 920.2 us
    # (924.8 us at 4,096 iterations: the fixed point, not the iterations)
    "ugal_local": (lambda: ev.dragonfly(2, 2, 1), [0, 2, 2, 3], [4, 5, 3, 1], [4e6, 3e6, 4e6, 4e6],
                   ["minimal", "valiant"], routing.ugal("local")),
    # 3x4 torus, 2 nodes per router: 6 flows: DOR 2000 us in either order, torus_adaptive_local 2242.2 us
    "torus_adaptive_local": (lambda: ev.torus([3, 4], nodes_per_router=2), [6, 3, 7, 4, 2, 6], [11, 7, 9, 2, 5, 1],
                             [3e6, 3e6, 3e6, 1e6, 4e6, 2e6], [routing.dor(order=[0, 1]), routing.dor(order=[1, 0])],
                             routing.torus_adaptive("local")),
}


@pytest.mark.parametrize("name", list(LOCAL_WORSE_THAN_BOTH))
def test_global_variant_between_the_all_paths_bound_and_its_worse_candidate(name):
    """The documented range (docs/adaptive_routing.md: 'Every adaptive time lies between the all-paths bound and its
    worse candidate whatever the exponent'; _adaptive.py: 'What always holds') holds for the global variant on
    the flows that break it for the local one (next test)."""
    make, s, d, w, candidates, local = LOCAL_WORSE_THAN_BOTH[name]
    topo = make()
    tr, pl = node_traffic(topo, s, d, w), placement.linear(topo, topo.n_nodes)
    worse = max(_time(topo, tr, pl, c) for c in candidates)
    for p in (1.0, 32.0):
        ds = ev.evaluate(topo, tr, pl, routing.ugal(power=p) if local.kind == "ugal" else
                         routing.torus_adaptive(power=p), bounds=True)
        assert float(ds.optimal_completion_time) <= float(ds.completion_time) * (1 + 1e-9)
        assert float(ds.completion_time) <= worse * (1 + 1e-9)


@pytest.mark.parametrize("name", list(LOCAL_WORSE_THAN_BOTH))
def test_a_local_variant_can_be_slower_than_both_its_candidates(name):
    """docs/adaptive_routing.md and _adaptive.py said every adaptive time lies at or below its worse candidate's;
    on these few flows UGAL-L and torus_adaptive_local (each router by its first-hop busy time) settle 15% and
    12% slower than the worse of their candidates, at the fixed point (the gap below 5e-3 at the default
    iterations; as slow at 4,096). They now say so: the rule holds for the global variants (test above)."""
    make, s, d, w, candidates, local = LOCAL_WORSE_THAN_BOTH[name]
    topo = make()
    tr, pl = node_traffic(topo, s, d, w), placement.linear(topo, topo.n_nodes)
    worse = max(_time(topo, tr, pl, c) for c in candidates)
    _, _, gap = solve(topo, local, s, d, w)
    assert gap < 5e-3
    for spec in (local, dataclasses.replace(local, iterations=4096)):
        t = _time(topo, tr, pl, spec)
        assert t > 1.1 * worse, (spec.iterations, t, worse)


@pytest.mark.parametrize("seed", [0, 1])
def test_ugal_g_is_bounded_by_the_all_paths_bound_and_its_worse_candidate_only(seed):
    """README.md said 'UGAL-G lies between the ideal adaptive bound and the better of minimal and Valiant', true of
    docs/adaptive_routing.md's DF(2,4,2) patterns only. On random permutations of DF(2,2,1,3), 1 MB per task, it
    beats that bound (seed 0: 205.5 us against 222.2 us: it splits per router pair, the bound per group pair) and
    trails minimal (seed 1: 202.2 us against 200.0 us). What holds, and what README.md now says: between the
    all-paths bound and its worse candidate."""
    df = ev.dragonfly(2, 2, 1)
    n = df.n_nodes
    pl, tr = placement.linear(df, n), traffic.random_permutation(n, 1e6, seed=seed)
    t_min, t_val = _time(df, tr, pl, "minimal"), _time(df, tr, pl, "valiant")
    ds = ev.evaluate(df, tr, pl, routing.ugal(), bounds=True)
    t = float(ds.completion_time)
    ideal = float(ev.evaluate(df, tr, pl, routing.ugal(), bounds="dragonfly_adaptive").adaptive_completion_time)
    assert float(ds.optimal_completion_time) * (1 - 1e-9) <= t <= max(t_min, t_val) * (1 + 1e-9)
    if seed == 0:
        assert t < 0.95 * ideal, (t, ideal)
    else:
        assert t > 1.005 * min(t_min, t_val), (t, t_min, t_val)


# ---------------------------------------------------------------------------------------------------------------
# determinism: no draws, the same numbers every time, whatever the flows' order or grouping
# ---------------------------------------------------------------------------------------------------------------

FAMILIES = {
    "ugal-l-threshold": (lambda: ev.dragonfly(1, 4, 2), routing.ugal("local", threshold=0.1, iterations=20)),
    "ugal-g": (lambda: ev.dragonfly(1, 4, 2), routing.ugal(iterations=20)),
    "torus": (lambda: ev.torus([3, 4]), routing.torus_adaptive(iterations=20)),
    "ft": (lambda: ev.topology.fat_tree(k=4, levels=2), routing.ft_adaptive(iterations=20)),
}


@pytest.mark.parametrize("name", list(FAMILIES))
def test_same_numbers_whatever_the_order_grouping_or_scale_of_the_flows(name):
    """Deterministic (a second run is bit-identical); the flows' order changes nothing (the split follows each
    flow); a flow cut in two flows of its router pair (1/4 and 3/4) gives the same loads and each piece the flow's
    split (flows of one pair decide alike); every byte times 7 gives 7 times the loads and the same split (loads
    homogeneous of degree 1, the threshold in units of the busiest link)."""
    make, spec = FAMILIES[name]
    topo = make()
    s, d, w = mixed_flows(topo, spec, 2)
    loads, x, gap = solve(topo, spec, s, d, w)
    again = solve(topo, spec, s, d, w)
    assert np.array_equal(again[0], loads) and np.array_equal(again[1], x) and again[2] == gap
    perm = np.random.default_rng(0).permutation(len(s))
    lp, xp, _ = solve(topo, spec, s[perm], d[perm], w[perm])
    np.testing.assert_allclose(lp, loads, rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(xp, x[perm], atol=1e-12)
    lc, xc, _ = solve(topo, spec, np.concatenate([s, s]), np.concatenate([d, d]), np.concatenate([w / 4, 3 * w / 4]))
    np.testing.assert_allclose(lc, loads, rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(xc, np.concatenate([x, x]), atol=1e-12)
    l7, x7, g7 = solve(topo, spec, s, d, 7 * w)
    np.testing.assert_allclose(l7, 7 * loads, rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(x7, x, atol=1e-12)
    assert g7 == pytest.approx(gap, rel=1e-9, abs=1e-15)


def test_no_draws_and_seeded_traffic_reproducible():
    """An adaptive routing is an expectation, not one random draw (``draws(k)`` is empty for every spec); a seeded
    random permutation evaluates to the same loads every time, another seed to other loads; a batch equals its
    points evaluated one by one."""
    specs = [routing.ugal(), routing.ugal("local", nonminimal="valiant_router"), routing.torus_adaptive(),
             routing.torus_adaptive("local"), routing.ft_adaptive(), routing.ft_adaptive("global")]
    assert all(sp.draws(4) == () for sp in specs)
    for topo, spec in [(ev.torus([4, 4]), routing.torus_adaptive(iterations=32)),
                       (ev.topology.fat_tree(k=4, levels=2), routing.ft_adaptive(iterations=32))]:
        n = topo.n_nodes
        pl = placement.linear(topo, n)
        trs = [traffic.random_permutation(n, 1e6, seed=k) for k in (5, 5, 6)]
        loads = [np.asarray(ev.evaluate(topo, tr, pl, spec).link_load) for tr in trs]
        assert np.array_equal(loads[0], loads[1]) and not np.array_equal(loads[0], loads[2])
        batch = ev.evaluate_batch(topo, spec, trs, [pl] * 3).metrics["completion_time"]
        for i, tr in enumerate(trs):
            assert batch[i] == pytest.approx(_time(topo, tr, pl, spec), rel=1e-12)


# ---------------------------------------------------------------------------------------------------------------
# route(topology, src, dst): the route a flow takes alone
# ---------------------------------------------------------------------------------------------------------------

ROUTE_CASES = {
    "ugal-g": (lambda: ev.dragonfly(1, 4, 2), routing.ugal(iterations=32), [(0, 5), (0, 1), (7, 30)]),
    "ugal-l-vrouter": (lambda: ev.dragonfly(2, 4, 2, g=5), routing.ugal("local", nonminimal="valiant_router",
                                                                         iterations=32), [(0, 5), (3, 17)]),
    "torus": (lambda: ev.torus([4, 4]), routing.torus_adaptive(iterations=32), [(0, 5), (0, 10), (3, 4)]),
    "torus-local-mesh": (lambda: ev.torus([4, 3], wrap=False), routing.torus_adaptive("local", iterations=32),
                         [(0, 11), (2, 9)]),
    "ft": (lambda: ev.topology.fat_tree(k=4, levels=3), routing.ft_adaptive(iterations=32), [(0, 7), (0, 1), (5, 4)]),
    "ft-global": (lambda: ev.topology.fat_tree(k=4, levels=3), routing.ft_adaptive("global", iterations=32),
                  [(0, 15), (2, 3)]),
}


@pytest.mark.parametrize("name", list(ROUTE_CASES))
def test_route_is_the_lone_flows_fixed_point(name):
    """The per-flow contract: ``route(topology, src, dst)`` lists the router links, ascending, and the fraction of
    the flow's bytes on each: for an adaptive routing the route it takes alone, i.e. the fixed point of one flow of
    one byte; the fractions sum to the expected hops of its split; ``src == dst`` has none."""
    make, spec, pairs = ROUTE_CASES[name]
    topo = make()
    op = ev.routing.build_routing(topo, spec)
    for s, d in pairs:
        links, frac = op.route(topo, s, d)
        assert (np.diff(links) > 0).all() and (frac > 0).all() and (frac <= 1 + 1e-12).all()
        loads, x, _ = solve(topo, spec, [s], [d], [1.0])
        want = np.flatnonzero(loads)
        assert np.array_equal(links, want)
        np.testing.assert_allclose(frac, loads[want], rtol=1e-12)
        ref = Reference(topo, spec, [s], [d], [1.0])
        assert frac.sum() == pytest.approx(float((x[0] * ref.H[0]).sum()), rel=1e-12)
        np.testing.assert_allclose(ref.loads(x), loads, rtol=1e-9, atol=1e-12)
    links, frac = op.route(topo, pairs[0][0], pairs[0][0])
    assert links.size == 0 and frac.size == 0


@pytest.mark.parametrize("name", ["ugal-g", "torus", "ft"])
def test_route_refuses_ids_of_no_endpoint_and_another_network(name):
    make, spec, _ = ROUTE_CASES[name]
    topo = make()
    op = ev.routing.build_routing(topo, spec)
    n = op.endpoint_count(topo)
    for s, d, field in [(-1, 0, "src"), (0, n, "dst"), (1.5, 0, "src"), ("0", 1, "src")]:
        with pytest.raises(ConfigError) as e:
            op.route(topo, s, d)
        assert e.value.field == field
    with pytest.raises(ConfigError) as e:
        op.route(ev.torus([5, 5]), 0, 1)
    assert e.value.field == "topology"


@pytest.mark.parametrize("spec", [routing.ft_adaptive(iterations=32), routing.ecmp_spray()], ids=lambda s: s.kind)
def test_ft_route_refuses_a_switch_that_is_not_a_leaf(spec):
    """A fat tree's flows start and end at leaf switches (``ft_adaptive`` and ``ecmp_spray`` route leaf to leaf);
    a level-2 or top switch holds no node and was routed as if it were a leaf past the last one (``route(ft, 20,
    3)`` on the 4-ary 3-tree: 40 down links, none leaving switch 20). It is refused naming ``src`` / ``dst``, as
    D-mod-k refuses a node id past its nodes."""
    ft = ev.topology.fat_tree(k=4, levels=3)
    op = ev.routing.build_routing(ft, spec)
    L = ft.switches(1)
    for s in (L + 4, ft.n_routers - 1):  # a level-2 switch, a top switch
        for args, field in (((s, 3), "src"), ((3, s), "dst")):
            with pytest.raises(ConfigError) as e:
                op.route(ft, *args)
            assert e.value.field == field and f"[0, {L})" in str(e.value), str(e.value)
    assert op.route(ft, 0, L - 1)[0].size > 0  # (the leaves still route)


# ---------------------------------------------------------------------------------------------------------------
# bad parameters: refused, naming the field
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("make,field", [
    (lambda: routing.ugal(iterations=100_001), "routing.iterations"),
    (lambda: routing.ugal(iterations=True), "routing.iterations"),
    (lambda: routing.ugal(iterations="8"), "routing.iterations"),
    (lambda: routing.torus_adaptive(iterations=-3), "routing.iterations"),
    (lambda: routing.ft_adaptive(iterations=None), "routing.iterations"),
    (lambda: routing.ugal(power=64.5), "routing.power"),
    (lambda: routing.ugal(power=0.99), "routing.power"),
    (lambda: routing.ugal(power=float("nan")), "routing.power"),
    (lambda: routing.torus_adaptive(power="32"), "routing.power"),
    (lambda: routing.ugal(threshold=float("inf")), "routing.threshold"),
    (lambda: routing.ugal(threshold="0.1"), "routing.threshold"),
    (lambda: routing.ugal(threshold=True), "routing.threshold"),
    (lambda: routing.ugal(nonminimal="minimal"), "routing.nonminimal"),
    (lambda: routing.ugal(nonminimal=None), "routing.nonminimal"),
    (lambda: routing.ugal(variant="LOCAL"), "routing.variant"),
    (lambda: routing.ft_adaptive(variant=None), "routing.variant"),
    (lambda: routing.torus_adaptive(orders=None), "routing.orders"),
    (lambda: routing.torus_adaptive(tie=None), "routing.tie"),
    # an exponent set away from its default where nothing reads it (a local rule compares busy times)
    (lambda: routing.ugal("local", power=1.0), "routing.power"),
    (lambda: routing.torus_adaptive("local", power=8.0), "routing.power"),
    (lambda: routing.ft_adaptive("local", power=2.0), "routing.power"),
])
def test_bad_parameters_refused_naming_the_field(make, field):
    with pytest.raises(ConfigError) as e:
        make()
    assert e.value.field == field and "is invalid: allowed is" in str(e.value)


@pytest.mark.parametrize("overrides,field,words", [
    (["routing=ugal_local", "routing.power=8"], "routing.power", "only the global variant"),
    (["routing=ugal", "routing.threshold=-0.1"], "routing.threshold", ">= 0"),
    (["routing=ugal", "routing.power=100"], "routing.power", "[1, 64]"),
    (["routing=ugal", "routing.iterations=0"], "routing.iterations", "[1, 100000]"),
    (["routing=torus_adaptive", "topology=torus", "topology.dims=[4,4]", "routing.threshold=0.5"], None,
     "'threshold' is not a key of routing kind 'torus_adaptive'"),
    (["routing=ft_adaptive", "topology=fat_tree", "topology.k=2", "routing.orders=all"], None,
     "'orders' is not a key of routing kind 'ft_adaptive'"),
])
def test_bad_configuration_refused(overrides, field, words):
    from evaluator import config

    with pytest.raises(ConfigError) as e:
        config.build(config.to_object(config.compose(overrides + ["traffic=all_to_all", "placement=linear"])))
    assert words in str(e.value)
    if field is not None:
        assert e.value.field == field


@pytest.mark.parametrize("topo,spec,words", [
    (ev.topology.fat_tree(k=2, levels=2), routing.ugal(), "on a fat_tree"),
    (ev.torus([4, 4]), routing.ft_adaptive(), "on a torus"),
    (ev.dragonfly(1, 4, 2), routing.torus_adaptive(), "on a dragonfly"),
    (ev.dragonfly(2, 2, 1, g=2), routing.ugal("local"), "fewer than 3 groups"),
], ids=["ugal-fat_tree", "ft_adaptive-torus", "torus_adaptive-dragonfly", "ugal-two-groups"])
def test_refused_on_a_network_it_does_not_serve(topo, spec, words):
    with pytest.raises(ConfigError) as e:
        ev.routing.build_routing(topo, spec)
    assert e.value.field == "routing.kind" and words in str(e.value)
