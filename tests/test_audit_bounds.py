"""Audit of the printed lower bounds (``evaluate(..., bounds=...)``, ``evaluator.lp``) against independent LPs.

The references are written here from the definitions in ``docs/bounds.md``, on the topology's own link
arrays (``link_src``, ``link_dst``, ``link_node``, ``capacity``; the Dragonfly's ``global_link``), not from
``evaluator.lp``:

* all paths: minimise ``T`` such that every node pair's bytes are routed on any paths of the router graph
  (one commodity per node pair; its injection link at the source node, its ejection link at the destination
  node, no other node as a transit) with every link's load ``<= T * capacity``;
* ideal adaptive (Dragonfly): minimise ``T`` over a per-group-pair mix of the minimal paths and the
  group-level Valiant paths through every other group (``1 / m`` per parallel global link), the intra-group
  bytes on their direct local link, injection and ejection fixed.

Both are solved with ``scipy.optimize.linprog`` (HiGHS). A bound must bound (its certified side below the
reference optimum and below every oblivious routing's kernel time), equal the optimum where it is exact, and
contain it in its reported interval where it is approximate.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import linprog

import evaluator as ev
from evaluator.errors import ConfigError
from evaluator.topology import fat_tree

REL = 1e-6  # HiGHS's tolerance on these scaled LPs is ~1e-7: an exact bound agrees with the reference to this


def _flows(topo, traffic, placement):
    """Node-level flows ``(src node, dst node, bytes)``, bytes > 0, src != dst (within one node: no link)."""
    tn = np.asarray(placement.task_node)
    s, d, b = tn[np.asarray(traffic.src)], tn[np.asarray(traffic.dst)], np.asarray(traffic.nbytes, float)
    keep = (s != d) & (b > 0)
    return s[keep], d[keep], b[keep]


def _node_links(topo):
    """``(injection link of node [N], ejection link of node [N])`` read from ``link_node`` and ``link_src``."""
    N = topo.n_nodes
    inj, ej = np.full(N, -1), np.full(N, -1)
    for e in range(topo.n_links):
        n = int(topo.link_node[e])
        if n >= 0:
            (inj if topo.link_src[e] < 0 else ej)[n] = e
    assert (inj >= 0).all() and (ej >= 0).all()
    return inj, ej


def ref_all_paths(topo, traffic, placement) -> float:
    """Minimum time (s) over every routing: one commodity per node pair on the router graph, min T."""
    s, d, b = _flows(topo, traffic, placement)
    if not b.size:
        return 0.0
    key, inv = np.unique(s * topo.n_nodes + d, return_inverse=True)
    b = np.bincount(inv.reshape(-1), weights=b)
    s, d = key // topo.n_nodes, key % topo.n_nodes
    Q, L, R = b.size, topo.n_links, topo.n_routers
    E = int(topo.n_router_links)
    inj, ej = _node_links(topo)
    cap = np.asarray(topo.capacity, float)
    scale_c, scale_b = cap.max(), b.max()
    # vertices: routers 0..R-1; the pair's own source node R, its destination node R + 1
    rows, cols, vals = [], [], []
    beq = np.zeros(Q * (R + 2))
    for q in range(Q):
        off = q * (R + 2)
        for e in range(E):
            rows += [off + topo.link_src[e], off + topo.link_dst[e]]
            cols += [q * L + e] * 2
            vals += [1.0, -1.0]
        e1, e2 = inj[s[q]], ej[d[q]]
        rows += [off + R, off + topo.link_dst[e1], off + topo.link_src[e2], off + R + 1]
        cols += [q * L + e1, q * L + e1, q * L + e2, q * L + e2]
        vals += [1.0, -1.0, 1.0, -1.0]
        beq[off + R], beq[off + R + 1] = b[q] / scale_b, -b[q] / scale_b
    A_eq = sp.csr_matrix((vals, (rows, cols)), shape=(Q * (R + 2), Q * L + 1))
    A_ub = sp.hstack([sp.hstack([sp.identity(L)] * Q), sp.csr_matrix(-cap[:, None] / scale_c)], format="csr")
    ub = np.zeros(Q * L + 1)
    ub[-1] = np.inf
    for q in range(Q):  # router links free; only this pair's injection and ejection links
        ub[q * L: q * L + E] = np.inf
        ub[q * L + inj[s[q]]] = ub[q * L + ej[d[q]]] = np.inf
    c = np.zeros(Q * L + 1)
    c[-1] = 1.0
    res = linprog(c, A_ub=A_ub, b_ub=np.zeros(L), A_eq=A_eq, b_eq=beq, bounds=np.c_[np.zeros_like(ub), ub],
                  method="highs")
    assert res.status == 0, res.message
    return float(res.fun) * scale_b / scale_c


def _path_loads(topo, u, v, local):
    """Link fractions ``{class key: {link: fraction}}`` of one inter-group router pair ``u -> v``: ``-1`` the
    minimal class, ``I`` the group-level Valiant class through group ``I`` (``1 / m`` per global link)."""
    a, g = topo.a, topo.g
    gl = np.asarray(topo.global_link)
    m = gl.shape[2]
    S, D = u // a, v // a
    out = {}

    def hop(x, y, w, acc):
        if x != y:
            acc[local[x, y]] = acc.get(local[x, y], 0.0) + w

    def via(G, H, start, w, acc):  # from router ``start`` of G over each G -> H global link: landing routers
        lands = []
        for c in range(m):
            e = int(gl[G, H, c])
            hop(start, int(topo.link_src[e]), w / m, acc)
            acc[e] = acc.get(e, 0.0) + w / m
            lands.append(int(topo.link_dst[e]))
        return lands

    acc = {}
    for x in via(S, D, u, 1.0, acc):
        hop(x, v, 1.0 / m, acc)
    out[-1] = acc
    for I in range(g):
        if I in (S, D):
            continue
        acc = {}
        for x in via(S, I, u, 1.0, acc):
            for y in via(I, D, x, 1.0 / m, acc):
                hop(y, v, 1.0 / m / m, acc)
        out[I] = acc
    return out


def ref_adaptive(topo, traffic, placement) -> float:
    """Minimum time (s) over per-group-pair mixes of minimal and group-level Valiant paths (docs/bounds.md)."""
    s, d, b = _flows(topo, traffic, placement)
    nr = np.asarray(topo.node_router)
    inj, ej = _node_links(topo)
    cap = np.asarray(topo.capacity, float)
    L, a = topo.n_links, topo.a
    E = int(topo.n_router_links)
    local = {(int(topo.link_src[e]), int(topo.link_dst[e])): e for e in range(E)
             if topo.link_src[e] // a == topo.link_dst[e] // a}
    fixed = np.zeros(L)
    np.add.at(fixed, inj[s], b)
    np.add.at(fixed, ej[d], b)
    cols = {}  # (S, D, class) -> load vector
    for u, v, x in zip(nr[s], nr[d], b):
        if u == v:
            continue
        if u // a == v // a:
            fixed[local[u, v]] += x
            continue
        for k, loads in _path_loads(topo, u, v, local).items():
            col = cols.setdefault((u // a, v // a, k), np.zeros(L))
            for e, w in loads.items():
                col[e] += w * x
    keys = sorted(cols)
    gp = sorted({(S, D) for S, D, _ in keys})
    K = len(keys)
    scale_c, scale_b = cap.max(), max(b.max() if b.size else 1.0, 1.0)
    if not K:
        return float((fixed / cap).max()) if L else 0.0
    A_ub = np.zeros((L, K + 1))
    for j, k in enumerate(keys):
        A_ub[:, j] = cols[k] / scale_b
    A_ub[:, -1] = -cap / scale_c
    A_eq = np.zeros((len(gp), K + 1))
    for j, (S, D, _) in enumerate(keys):
        A_eq[gp.index((S, D)), j] = 1.0
    c = np.zeros(K + 1)
    c[-1] = 1.0
    res = linprog(c, A_ub=A_ub, b_ub=-fixed / scale_b, A_eq=A_eq, b_eq=np.ones(len(gp)), method="highs")
    assert res.status == 0, res.message
    return float(res.fun) * scale_b / scale_c


# ------------------------------------------------------------------------------------------------------------
# cases
# ------------------------------------------------------------------------------------------------------------

TOPOS = {
    "torus2x2": lambda: ev.torus([2, 2]), "torus3x3": lambda: ev.torus([3, 3]), "torus4x4": lambda: ev.torus([4, 4]),
    "torus3x3x2": lambda: ev.torus([3, 3, 2]), "mesh3x4": lambda: ev.torus([3, 4], wrap=False),
    "mesh2x3x2": lambda: ev.torus([2, 3, 2], wrap=False), "df131": lambda: ev.dragonfly(1, 3, 1),
    "df142": lambda: ev.dragonfly(1, 4, 2), "df221": lambda: ev.dragonfly(2, 2, 1),
    "df132g4rel": lambda: ev.dragonfly(1, 3, 2, g=4, arrangement="relative"),  # 2 global links per group pair
    "df141slow": lambda: ev.dragonfly(1, 4, 1, bandwidth_l=3e9, bandwidth_r=7e9),  # global-link bound
    "ft4x2": lambda: fat_tree(k=4, levels=2), "ft4x3": lambda: fat_tree(k=4, levels=3),
    "ft_taper": lambda: fat_tree(children=[4, 4], parents=[1, 2]),
    "ft_parallel": lambda: fat_tree(k=4, levels=2, parallel_links=2, link_bandwidth=5e9),
    "torus_bw": lambda: ev.torus([3, 4], link_bandwidth=[1e9, 3e9], nodes_per_router=2, injection_bandwidth=4e9),
}
ROUTINGS = {"torus": ["dor", "kshortest"], "dragonfly": ["minimal", "valiant", "valiant_router"],
            "fat_tree": ["dmodk", "ecmp", "ecmp_spray"]}


def _traffic(n_tasks, src, dst, nbytes):
    return ev.Traffic(n_tasks, np.asarray(src, np.int64), np.asarray(dst, np.int64), np.asarray(nbytes, float))


def _cases(topo, seed):
    """Random exchanges with several tasks per node (some flows of zero bytes, some within a node), a shift of
    every node (router-link bound) and, on a Dragonfly, every node of a group to the next group."""
    rng = np.random.default_rng(seed)
    N = topo.n_nodes
    out = []
    for per in (1, 2, 3):
        n = N * per
        F = 3 * n
        src, dst = rng.integers(0, n, F), rng.integers(0, n, F)
        nbytes = rng.choice([0.0, 1e6, 4e6], F) * rng.uniform(0.5, 1.5, F)
        out.append((_traffic(n, src, dst, nbytes), ev.Placement(np.repeat(rng.permutation(N), per), N)))
    step = topo.a * topo.p if isinstance(topo, ev.DragonflyTopology) else max(1, N // 2)
    src = np.arange(N)
    out.append((_traffic(N, src, (src + step) % N, rng.uniform(1e6, 3e6, N)), ev.Placement(src, N)))
    return out


def _close(x, ref, rel=REL):
    return abs(x - ref) <= rel * max(abs(ref), 1e-300)


def _below(x, ref, rel=1e-9):
    return x <= ref * (1 + rel) + 1e-300


@pytest.mark.parametrize("name", sorted(TOPOS))
def test_all_paths_bound_is_the_multicommodity_optimum(name):
    """``edge`` (and ``auto``) are exact: both sides equal the reference optimum; Garg-Konemann's interval holds
    it, its gap is ``upper / lower - 1`` and within the default ``target_gap`` (1%) on these small cases."""
    from evaluator.lp.bounds import optimal

    topo = TOPOS[name]()
    for i, (tr, pl) in enumerate(_cases(topo, 11)):
        T = ref_all_paths(topo, tr, pl)
        for method in ("edge", "auto"):
            r = optimal(topo, tr, pl, method)
            assert _below(r.completion_time, T), (name, i, method, r.completion_time, T)
            assert _close(r.completion_time, T) and _close(r.completion_time_upper, T), (name, i, method, r, T)
        r = optimal(topo, tr, pl, "garg_konemann")
        assert _below(r.completion_time, T) and _below(T, r.completion_time_upper), (name, i, r, T)
        assert r.gap <= 0.01 + 1e-12, (name, i, r)
        if T > 0:
            assert r.gap == pytest.approx(r.completion_time_upper / r.completion_time - 1, abs=1e-12)


@pytest.mark.parametrize("name", ["df131", "df142", "df221", "df132g4rel", "df141slow"])
def test_adaptive_bound_is_the_best_per_group_pair_mix(name):
    """``dragonfly_adaptive`` equals the per-group-pair mix LP of docs/bounds.md (certified side below it);
    ``optimal <= dragonfly_adaptive_router <= dragonfly_adaptive``."""
    from evaluator.lp.bounds import optimal

    topo = TOPOS[name]()
    for i, (tr, pl) in enumerate(_cases(topo, 12)):
        Ta, T = ref_adaptive(topo, tr, pl), ref_all_paths(topo, tr, pl)
        r = optimal(topo, tr, pl, "dragonfly_adaptive")
        assert _below(r.completion_time, Ta) and _below(Ta, r.completion_time_upper), (name, i, r, Ta)
        assert _close(r.completion_time, Ta), (name, i, r, Ta)
        rr = optimal(topo, tr, pl, "dragonfly_adaptive_router")
        assert _below(T, rr.completion_time_upper) and _below(rr.completion_time, Ta), (name, i, rr, T, Ta)
        assert _below(T * (1 - REL), rr.completion_time), (name, i, rr, T)


def _eval(topo, tr, pl, routing, bounds):
    ds = ev.evaluate(topo, tr, pl, routing, bounds=bounds)
    return {k: float(ds[k]) for k in ds.data_vars if k.endswith(("completion_time", "_upper", "efficiency"))}


@pytest.mark.parametrize("name", ["torus4x4", "mesh3x4", "df221", "df141slow", "ft4x2"])
def test_printed_bounds_are_below_every_oblivious_routing(name):
    """``evaluate(..., bounds=...)``: the printed certified bound is below the reference optimum and below the
    kernel's time of every routing it covers (the adaptive one: minimal and valiant; with the router classes
    valiant_router too); the efficiency is ``bound / achieved <= 1``."""
    topo = TOPOS[name]()
    kind = topo.kind
    for tr, pl in _cases(topo, 13)[1::2]:
        T = ref_all_paths(topo, tr, pl)
        for routing in ROUTINGS[kind]:
            out = _eval(topo, tr, pl, routing, True)
            t, lo = out["completion_time"], out["optimal_completion_time"]
            assert _below(lo, T) and _below(T, t), (name, routing, lo, T, t)
            assert _below(out["routing_efficiency"], 1.0) and _close(out["routing_efficiency"], lo / t, 1e-9)
            if kind != "dragonfly":
                continue
            Ta = ref_adaptive(topo, tr, pl)
            covered = {"dragonfly_adaptive": ("minimal", "valiant"),
                       "dragonfly_adaptive_router": ("minimal", "valiant", "valiant_router")}
            for b, routings in covered.items():
                out = _eval(topo, tr, pl, routing, b)
                assert _below(out["adaptive_completion_time"], Ta), (name, routing, b, out, Ta)
                if routing in routings:
                    assert _below(out["adaptive_completion_time"], t), (name, routing, b, out, t)
                    assert _below(out["adaptive_efficiency"], 1.0), (name, routing, b, out)


@pytest.mark.parametrize("name", ["torus4x4", "df131", "ft4x2"])
def test_small_exchanges_have_their_closed_form_bounds(name):
    """Zero bytes and no flows: 0 s; flows within one node: 0 s; one flow of ``b`` bytes: ``b / injection
    capacity`` (these networks have more router paths than one node injects); several tasks of one node to
    one other node: their sum over the injection link; a phased exchange: the sum of its phases' optima."""
    from evaluator.lp.bounds import optimal

    topo = TOPOS[name]()
    N = topo.n_nodes
    inj = float(topo.capacity[topo.injection_link(0)])
    zero = _traffic(4, [0, 1], [2, 3], [0.0, 0.0])
    none = _traffic(4, [], [], [])
    within = _traffic(3, [0, 1, 2], [1, 2, 0], [1e6, 2e6, 3e6])  # all three tasks on one node
    single = _traffic(2, [0], [1], [5e6])
    several = _traffic(4, [0, 1, 2], [3, 3, 3], [1e6, 2e6, 3e6])  # three tasks of one node to one node
    place = {"zero": [0, 1, N - 2, N - 1], "none": [0, 1, 2, 3], "within": [N - 1] * 3, "single": [0, N - 1],
             "several": [0, 0, 0, N - 1]}
    expect = {"zero": 0.0, "none": 0.0, "within": 0.0, "single": 5e6 / inj, "several": 6e6 / inj}
    for key, tr in (("zero", zero), ("none", none), ("within", within), ("single", single), ("several", several)):
        pl = ev.Placement(np.asarray(place[key]), N)
        assert _close(ref_all_paths(topo, tr, pl), expect[key], 1e-9)
        methods = ["edge", "garg_konemann"] + (["dragonfly_adaptive", "dragonfly_adaptive_router"]
                                               if topo.kind == "dragonfly" else [])
        for m in methods:
            r = optimal(topo, tr, pl, m)
            assert _close(r.completion_time, expect[key], REL) and _below(r.completion_time, expect[key]), (key, m, r)
            assert _close(r.completion_time_upper, expect[key], REL), (key, m, r)
    a, b = _cases(topo, 14)[1:3]
    pl = ev.Placement(np.repeat(np.arange(N), 2), N)
    phased = ev.traffic.phased([a[0], b[0].__class__(2 * N, b[0].src % (2 * N), b[0].dst % (2 * N), b[0].nbytes)])
    want = sum(ref_all_paths(topo, x, pl) for x in phased.phases)
    r = optimal(topo, phased, pl, "edge")
    assert _below(r.completion_time, want) and _close(r.completion_time, want), (r, want)


def _demand():
    from evaluator.lp.bounds import router_demand

    topo = ev.torus([3, 3])
    tr = _traffic(4, [0, 1, 2], [3, 2, 0], [1e6, 2e6, 3e6])
    return topo, router_demand(topo, tr, ev.Placement(np.asarray([0, 4, 8, 2]), 9))


GK_BAD = [("eps", 0), ("eps", 1), ("eps", math.nan), ("eps", "0.1"), ("eps", True), ("target_gap", 0),
          ("target_gap", -0.5), ("target_gap", math.inf), ("target_gap", math.nan), ("target_gap", "1%"),
          ("max_steps", 0), ("max_steps", -5), ("max_steps", 2.5), ("max_steps", "10"),
          ("refine_after", -1), ("refine_after", 1.5), ("max_rounds", -1), ("max_rounds", 2.5), ("refine", "yes")]


def _refused(call, field, value):
    with pytest.raises(ConfigError) as e:
        call()
    text = str(e.value)
    assert text.startswith(f"{field} = {value!r} is invalid") and "allowed is" in text, text
    return text


@pytest.mark.parametrize("field,value", GK_BAD, ids=[f"{f}={v!r}" for f, v in GK_BAD])
def test_garg_konemann_refuses_bad_settings(field, value):
    """Each setting of Garg-Konemann is refused naming it, the value and what is allowed (no TypeError, no
    silent run with a negative step or round count, no never-met or always-met target gap)."""
    import evaluator.lp as lp

    topo, dm = _demand()
    _refused(lambda: lp.garg_konemann(topo, dm, **{field: value}), field, value)
    if field == "target_gap":  # also where optimal_bound passes it on, and for the edge LP (which ignores it)
        for method in ("garg_konemann", "edge", "auto"):
            _refused(lambda: lp.optimal_bound(topo, dm, method, target_gap=value), field, value)


@pytest.mark.parametrize("field,value", [("eps", 0), ("eps", -1e-6), ("eps", math.nan), ("eps", math.inf),
                                         ("eps", "1e-6"), ("iteration_limit", 0), ("iteration_limit", -3),
                                         ("iteration_limit", 2.5), ("warm_start", "x")])
def test_pdhg_refuses_bad_settings(field, value):
    """``solve_pdhg``'s tolerance and iteration limit (and its warm start) are refused before compiling: eps 0
    divided by zero, a negative eps or a limit of 0 returned an objective of 0 without a word."""
    import evaluator.lp as lp

    topo, dm = _demand()
    shown = "str" if field == "warm_start" else value
    _refused(lambda: lp.solve_pdhg([lp.edge_lp(topo, dm)], **{field: value}), field, shown)


def test_bound_names_and_solvers_refused():
    """Unknown methods and solvers, at every entry point, name the field, the value and the choices."""
    import evaluator.lp as lp
    from evaluator.lp.bounds import optimal

    topo, dm = _demand()
    tr = _traffic(2, [0], [1], [1e6])
    pl = ev.Placement(np.asarray([0, 4]), 9)
    for value in ("bogus", 1, None, "True"):
        text = _refused(lambda: ev.evaluate(topo, tr, pl, "dor", bounds=value), "bounds", value)
        assert "'edge'" in text and "'garg_konemann'" in text and "'dragonfly_adaptive'" in text
    for value in ("gurobi", None, 3):
        assert "'highs'" in _refused(lambda: ev.evaluate(topo, tr, pl, "dor", bounds=True, bound_solver=value),
                                     "bound_solver", value)
    assert "'edge'" in _refused(lambda: lp.optimal_bound(topo, dm, "simplex"), "method", "simplex")
    for call in (lambda: lp.optimal_bound(topo, dm, "edge", "cplex"), lambda: lp.edge_bound(topo, dm, "cplex"),
                 lambda: lp.solve(lp.edge_lp(topo, dm), "cplex")):
        assert "'pdhg'" in _refused(call, "solver", "cplex")
    _refused(lambda: optimal(topo, tr, pl, "dragonfly_adaptive"), "topology", topo.name)
    df = ev.dragonfly(2, 1, 1)  # 2 groups: no intermediate group
    _refused(lambda: optimal(df, tr, ev.Placement(np.asarray([0, 2]), df.n_nodes), "dragonfly_adaptive"),
             "topology", df.name)


def test_pdhg_reports_the_certified_side():
    """With ``bound_solver=pdhg`` the printed bound is the certified side: below the reference optimum (PDHG's
    own primal value may be above it: it is feasible only to PDHG's tolerance) and within 1% of it."""
    from evaluator.lp.bounds import optimal

    topo = ev.torus([3, 3])
    N = topo.n_nodes
    src = np.arange(N)
    tr, pl = _traffic(N, src, (src + 4) % N, np.linspace(1e6, 3e6, N)), ev.Placement(src, N)
    T = ref_all_paths(topo, tr, pl)
    r = optimal(topo, tr, pl, "edge", "pdhg")
    assert r.solver == "pdhg" and r.completion_time <= T and _close(r.completion_time, T, 0.01), (r, T)
