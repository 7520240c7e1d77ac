"""Adaptive routings as flow-level fixed points (evaluator/routing/_adaptive.py and its members _ugal.py,
_torus_adaptive.py, _ft_adaptive.py; docs/adaptive_routing.md).

The references are plain NumPy: every flow's candidate paths walked by tests/reference.py (Dragonfly minimal and
Valiant, torus DOR) or found by a depth-first search of the fat tree's router graph, and the method of successive
averages written as loops over flows and paths.
"""

from __future__ import annotations

import functools
import itertools

import jax
import numpy as np
import pytest

import evaluator as ev
from evaluator import placement, routing, traffic
from evaluator.errors import ConfigError, ResourceError
from evaluator.routing import _adaptive, _ft_adaptive, _torus_adaptive

from reference import reference_paths

ITERS = 12
UG = routing.ugal(iterations=32)  # one spec per kind across tests: one compilation each
UL = routing.ugal("local", iterations=32)


# ---------------------------------------------------------------------------------------------------------------
# the NumPy reference fixed point
# ---------------------------------------------------------------------------------------------------------------


def ref_fixed_point(paths, w, cap, iters, decision, bias=None, threshold=0.0, up_siblings=None, power=1.0):
    """The damped best response over per-flow candidate paths (``paths[f][k]`` = list of ``(prob, [links])``):
    Frank-Wolfe with exact line search for global costs without threshold, else successive averages.

    ``decision``: "global" (path busy time), "local" (first-hop busy time x hops) or "regret" (sum over the up
    links of the busy time above the least busy sibling up link; ``up_siblings[link]``: the up links of the
    switch the link leaves, None for a down link). Ties within 1e-9 of the flow's largest cost: the lowest index.
    ``power`` (global decisions): a link's cost is ``(busy time / busiest)^power``; the exact step then minimises
    ``sum_l cap_l (load_l / cap_l)^(power + 1)`` along the step: the root of its derivative by SciPy's brentq."""
    F, K = len(paths), len(paths[0])
    bias = np.zeros(K) if bias is None else np.asarray(bias, float)
    x = np.zeros((F, K))
    x[:, 0] = 1.0

    def loads_of(x):
        load = np.zeros(len(cap))
        for f in range(F):
            for k in range(K):
                for prob, links in paths[f][k]:
                    for lk in links:
                        load[lk] += w[f] * x[f, k] * prob
        return load

    def decide(x):
        gl = loads_of(x) / cap
        if decision == "global" and power != 1.0:
            gl = (gl / gl.max()) ** power if gl.max() > 0 else gl
        c = np.zeros((F, K))
        d = np.zeros((F, K))
        for f in range(F):
            for k in range(K):
                for prob, links in paths[f][k]:
                    c[f, k] += prob * sum(gl[lk] for lk in links)
                    if decision == "local" and links:
                        d[f, k] += prob * gl[links[0]]
                    if decision == "regret":
                        d[f, k] += prob * sum(gl[lk] - min(gl[s] for s in up_siblings[lk])
                                              for lk in links if up_siblings[lk] is not None)
                if decision == "local":
                    d[f, k] *= sum(prob * len(links) for prob, links in paths[f][k])
        if decision == "global":
            d = c.copy()
        d = d + bias[None, :] * threshold * gl.max()
        return gl, c, d

    for t in range(iters):
        gl, c, d = decide(x)
        load = loads_of(x)
        br = np.zeros_like(x)
        for f in range(F):
            lo = d[f].min()
            tol = 1e-9 * max(np.abs(d[f]).max(), np.abs(c[f]).max()) + 1e-300
            br[f, int(np.nonzero(d[f] <= lo + tol)[0][0])] = 1.0
        if decision == "global" and threshold == 0 and power != 1.0:  # Frank-Wolfe, the exact step by Brent's root
            from scipy.optimize import brentq

            delta = loads_of(br) - load
            top = max((load / cap).max(), ((load + delta) / cap).max())
            # the derivative along the step of sum_l cap_l (load_l / cap_l)^(power+1) / (power+1) (over top^power)
            slope = lambda s: np.sum((np.maximum(load + s * delta, 0) / cap / top) ** power * delta)  # noqa: E731
            step = 0.0 if slope(0.0) >= 0 else 1.0 if slope(1.0) <= 0 else brentq(slope, 0.0, 1.0, xtol=1e-15)
        elif decision == "global" and threshold == 0:  # Frank-Wolfe: exact step on sum load^2 / (2 cap)
            delta = loads_of(br) - gl * cap
            den = np.sum(delta * delta / cap)
            step = min(max(-np.sum(gl * delta) / den, 0.0), 1.0) if den > 0 else 0.0
        else:  # successive averages
            step = 1.0 / (t + 2)
        x = x + step * (br - x)
    return loads_of(x), x


def solve(op, src, dst, w):
    """The operator's fixed point for router-level flows: ``(loads, x, gap)`` (NumPy)."""
    tables = jax.device_put(op.tables)
    fn = jax.jit(op.solve)
    out = fn(tables, np.asarray(src, np.int32), np.asarray(dst, np.int32), np.asarray(w, np.float64))
    return tuple(np.asarray(o) for o in out)


def router_flows(R, n, seed):
    rng = np.random.default_rng(seed)
    src = rng.integers(0, R, n)
    dst = rng.integers(0, R, n)
    keep = src != dst
    return src[keep], dst[keep], rng.integers(1, 50, keep.sum()).astype(float) * 1e3


@functools.lru_cache(maxsize=None)
def small_df():
    return ev.dragonfly(1, 4, 2)  # g = 9 groups of 4 routers, one link per group pair


def df_tornado_flows(df):
    R, a, g = df.n_routers, df.a, df.g
    src = np.arange(R)
    return src, (src + (g // 2) * a) % R, np.full(R, 1e6)


# ---------------------------------------------------------------------------------------------------------------
# operators against the reference
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("variant,nonminimal,threshold,power", [("global", "valiant", 0.0, 8.0),
                                                                ("global", "valiant", 0.0, 1.0),
                                                                ("local", "valiant", 0.0, 32.0),
                                                                ("global", "valiant_router", 0.5, 3.0),
                                                                ("local", "valiant_router", 0.0, 32.0)])
def test_ugal_equals_numpy_fixed_point(variant, nonminimal, threshold, power):
    df = small_df()
    spec = routing.ugal(variant, threshold, nonminimal, iterations=ITERS, power=power)
    op = ev.routing.build_routing(df, spec)
    rs, rd, rw = router_flows(df.n_routers, 40, 1)
    ts, td, tw = df_tornado_flows(df)
    src, dst, w = np.concatenate([rs, ts]), np.concatenate([rd, td]), np.concatenate([rw, tw])
    loads, x, gap = solve(op, src, dst, w)
    cands = ({"kind": "minimal"}, {"kind": nonminimal})
    paths = [[reference_paths(df, int(s), int(d), c) for c in cands] for s, d in zip(src, dst)]
    cap = np.asarray(df.capacity)[:df.n_router_links]
    ref_loads, ref_x = ref_fixed_point(paths, w, cap, ITERS, variant, bias=(0, 1), threshold=threshold,
                                       power=power if variant == "global" else 1.0)
    np.testing.assert_allclose(loads, ref_loads, rtol=1e-9, atol=1e-6)
    inter = src // df.a != dst // df.a
    np.testing.assert_allclose(x[inter], ref_x[inter], atol=1e-12)
    assert 0.0 < x[inter, 1].mean() < 1.0  # the split is not trivial: both candidates carry bytes
    assert np.isfinite(gap) and gap >= 0.0


@pytest.mark.parametrize("dims,orders,variant", [((3, 4), "auto", "global"), ((2, 3, 4), "all", "local"),
                                                 ((3, 4, 2), "rotations", "global")])
def test_torus_adaptive_equals_numpy_fixed_point(dims, orders, variant):
    t = ev.torus(list(dims))
    spec = routing.torus_adaptive(variant, orders, iterations=ITERS)
    op = ev.routing.build_routing(t, spec)
    perms = _torus_adaptive.torus_orders(len(dims), orders)
    assert len(perms) == (len(list(itertools.permutations(dims))) if orders != "rotations" else len(dims))
    src, dst, w = router_flows(t.n_routers, 50, 2)
    loads, x, _ = solve(op, src, dst, w)
    cands = [{"kind": "dor", "order": p, "tie": "split"} for p in perms]
    paths = [[reference_paths(t, int(s), int(d), c) for c in cands] for s, d in zip(src, dst)]
    ref_loads, ref_x = ref_fixed_point(paths, w, np.asarray(t.capacity)[:t.n_router_links], ITERS, variant,
                                       power=spec.power if variant == "global" else 1.0)
    np.testing.assert_allclose(loads, ref_loads, rtol=1e-9, atol=1e-6)
    np.testing.assert_allclose(x, ref_x, atol=1e-12)


def _fat_tree_paths(ft, s, d):
    """Every shortest up*/down* path from leaf ``s`` to leaf ``d`` by depth-first search of the router graph,
    each with its up ports (the link's rank among the up links of the switch it leaves, in link order)."""
    level = np.asarray(ft.router_level())
    out_links = {}
    for a, b, lk in ft.router_edges():
        out_links.setdefault(a, []).append((lk, b))
    ups = {a: sorted(lk for lk, b in v if level[b] > level[a]) for a, v in out_links.items()}
    found = []

    def walk(r, links, going_up):
        if r == d and links:
            found.append(links)
            return
        for lk, b in out_links.get(r, []):
            if going_up and level[b] > level[r]:
                walk(b, links + [lk], True)
            if level[b] < level[r]:
                walk(b, links + [lk], False)

    if s != d:
        walk(s, [], True)
    short = min((len(p) for p in found), default=0)
    return [p for p in found if len(p) == short], ups


def test_ft_candidates_are_every_shortest_up_down_path():
    ft = ev.topology.fat_tree(k=4, levels=3)
    L = ft.switches(1)
    for s, d in [(0, 1), (0, 2), (0, L - 1), (3, 5)]:
        cands = _ft_adaptive.ft_candidate_paths(ft, s, d)
        want, _ = _fat_tree_paths(ft, s, d)
        assert {tuple(p) for p in cands} == {tuple(p) for p in want}


@pytest.mark.parametrize("variant", ["local", "global"])
def test_ft_adaptive_equals_numpy_fixed_point(variant):
    ft = ev.topology.fat_tree(k=4, levels=3)
    L = ft.switches(1)
    op = ev.routing.build_routing(ft, routing.ft_adaptive(variant, iterations=ITERS))
    src, dst, w = router_flows(L, 40, 3)
    loads, x, _ = solve(op, src, dst, w)
    _, ups = _fat_tree_paths(ft, 0, 1)
    siblings = {}
    for a, lks in ups.items():
        for lk in lks:
            siblings[lk] = lks
    n_rl = ft.n_router_links
    sib = [siblings.get(lk) for lk in range(n_rl)]
    paths = [[[(1.0, p)] for p in _ft_adaptive.ft_candidate_paths(ft, int(s), int(d))] for s, d in zip(src, dst)]
    ref_loads, ref_x = ref_fixed_point(paths, w, np.asarray(ft.capacity)[:n_rl], ITERS,
                                       "regret" if variant == "local" else "global", up_siblings=sib,
                                       power=routing.ft_adaptive(variant).power if variant == "global" else 1.0)
    np.testing.assert_allclose(loads, ref_loads, rtol=1e-9, atol=1e-6)
    # candidates that are one path for a flow (digits above its turn) may split differently: compare per path
    for f in range(len(src)):
        got, want = {}, {}
        for k, p in enumerate(_ft_adaptive.ft_candidate_paths(ft, int(src[f]), int(dst[f]))):
            got[tuple(p)] = got.get(tuple(p), 0.0) + x[f, k]
            want[tuple(p)] = want.get(tuple(p), 0.0) + ref_x[f, k]
        assert got == pytest.approx(want, abs=1e-12)


def _repeated_pairs(R, seed):
    """Router-level flows whose pairs repeat (1-4 flows of different bytes per pair, in shuffled order), with
    flows of no bytes and flows within one router (0 bytes, as the kernel passes them) among them."""
    rng = np.random.default_rng(seed)
    s, d, _ = router_flows(R, 20, seed)
    reps = rng.integers(1, 5, s.size)
    src, dst = np.repeat(s, reps), np.repeat(d, reps)
    w = rng.integers(1, 50, src.size).astype(float) * 1e3
    w[rng.choice(src.size, 3, replace=False)] = 0.0
    src, dst, w = np.concatenate([src, [2, 5]]), np.concatenate([dst, [2, 5]]), np.concatenate([w, [0.0, 0.0]])
    order = rng.permutation(src.size)
    return src[order], dst[order], w[order]


@pytest.mark.parametrize("kind", ["ugal", "ugal-local", "torus_adaptive", "ft_adaptive"])
def test_flows_merged_by_router_pair_equal_the_numpy_fixed_point_per_flow(kind):
    """``pair_slots`` (set by :meth:`merge_pairs` for a batch whose flows share router pairs: the fixed point runs
    over one flow per pair) against the NumPy reference run over every flow as given: the same loads and each
    flow's split; more pairs than slots gives NaN, never a smaller load."""
    import dataclasses

    if kind.startswith("ugal"):
        topo, spec = small_df(), routing.ugal("local" if kind == "ugal-local" else "global", iterations=ITERS,
                                              power=32.0 if kind == "ugal-local" else 8.0)  # (local: the default)
        cands, R, decision = ({"kind": "minimal"}, {"kind": "valiant"}), topo.n_routers, spec.variant
    elif kind == "torus_adaptive":
        topo, spec = ev.torus([3, 4]), routing.torus_adaptive(iterations=ITERS)
        R, decision = topo.n_routers, "global"
        cands = [{"kind": "dor", "order": p, "tie": "split"} for p in _torus_adaptive.torus_orders(2, "auto")]
    else:
        topo, spec = ev.topology.fat_tree(k=4, levels=3), routing.ft_adaptive("global", iterations=ITERS)
        R, decision = topo.switches(1), "global"
    src, dst, w = _repeated_pairs(R, 7)
    n_pairs = len({(a, b) for a, b, c in zip(src, dst, w) if a != b and c > 0})
    assert n_pairs < (w > 0).sum()  # pairs repeat
    loads, x, _ = solve(ev.routing.build_routing(topo, dataclasses.replace(spec, pair_slots=64)), src, dst, w)
    if kind == "ft_adaptive":
        paths = [[[(1.0, p)] for p in _ft_adaptive.ft_candidate_paths(topo, int(a), int(b))] if a != b else
                 [[(1.0, [])]] * len(_ft_adaptive.ft_candidate_paths(topo, 0, 1)) for a, b in zip(src, dst)]
    else:
        paths = [[reference_paths(topo, int(a), int(b), c) for c in cands] for a, b in zip(src, dst)]
    cap = np.asarray(topo.capacity)[:topo.n_router_links]
    ref_loads, ref_x = ref_fixed_point(paths, w, cap, ITERS, decision, bias=(0, 1) if kind.startswith("ugal") else
                                       None, power=spec.power if decision == "global" else 1.0)
    np.testing.assert_allclose(loads, ref_loads, rtol=1e-9, atol=1e-6)
    on = (w > 0) & (src != dst)
    if kind != "ft_adaptive":  # (a fat tree's candidates that are one path may split differently, as above)
        np.testing.assert_allclose(x[on], ref_x[on], atol=1e-12)
    few, _, gap = solve(ev.routing.build_routing(topo, dataclasses.replace(spec, pair_slots=n_pairs - 1)),
                        src, dst, w)
    assert np.isnan(few).all() and np.isnan(gap)


def test_evaluate_merges_the_flows_of_a_router_pair_and_gives_the_per_flow_numbers(monkeypatch):
    """evaluate_batch of flow lists whose flows share router pairs (a stencil on 2 nodes per router) runs the fixed
    point over the pairs (the kernel's spec has ``pair_slots``) and gives the numbers it gives over every flow."""
    import evaluator._batch.run as run

    df = ev.dragonfly(2, 4, 2)  # 2 nodes per router, 9 groups
    n = df.n_nodes
    trs = [traffic.stencil([24, 24, 8], [6, 6, 2]), traffic.random_permutation(n, 1e6, seed=3)]
    pls = [placement.linear(df, n)] * 2
    seen = []
    kernel = run.batch_kernel
    monkeypatch.setattr(run, "batch_kernel", lambda t, r, keep: (seen.append(r), kernel(t, r, keep))[1])
    merged = ev.evaluate_batch(df, UG, trs, pls).metrics["completion_time"]
    assert seen[-1].pair_slots > 0
    monkeypatch.setattr(type(UG), "merge_pairs", lambda self, count: self)
    flows = ev.evaluate_batch(df, UG, trs, pls).metrics["completion_time"]
    assert seen[-1].pair_slots == 0
    np.testing.assert_allclose(merged, flows, rtol=1e-12)


# ---------------------------------------------------------------------------------------------------------------
# properties of the evaluations
# ---------------------------------------------------------------------------------------------------------------


def _time(topo, tr, pl, r, **kw):
    return float(ev.evaluate(topo, tr, pl, r, **kw).completion_time)


def test_ugal_on_adversarial_and_uniform_traffic():
    """Group tornado: minimal saturates the one global link per group pair; UGAL-G lies between the certified
    all-paths bound and the worse candidate, and UGAL-L (first-hop information only) is slower than UGAL-G. Uniform
    all-to-all: UGAL stays (within 1%) at minimal."""
    df = small_df()
    n = df.n_nodes
    pl = placement.linear(df, n)
    tr = traffic.group_tornado(df, 1e6)
    t_min, t_val = _time(df, tr, pl, "minimal"), _time(df, tr, pl, "valiant")
    ds = ev.evaluate(df, tr, pl, UG, bounds=True)
    t_g, bound = float(ds.completion_time), float(ds.optimal_completion_time)
    t_l = _time(df, tr, pl, UL)
    assert bound <= t_g * (1 + 1e-9) and t_g <= max(t_min, t_val) * (1 + 1e-9)
    assert bound <= t_l <= max(t_min, t_val) * (1 + 1e-9)
    assert t_g < 0.6 * t_min  # far from minimal's saturated global link
    assert t_l > 1.05 * t_g
    a2a = traffic.all_to_all(n, 1e3)
    t_min_u = _time(df, a2a, pl, "minimal")
    t_g_u = _time(df, a2a, pl, UG)
    assert t_g_u <= 1.01 * t_min_u


@pytest.mark.parametrize("pattern", ["group_tornado", "random_permutation"])
def test_ugal_g_lies_between_the_ideal_bound_and_the_better_oblivious_routing(pattern):
    """Issue 35's criterion: with its default congestion exponent UGAL-G is no slower than the better of minimal
    and Valiant, and no faster than the ideal adaptive bound (the best mix of minimal and Valiant paths per group
    pair, an LP: evaluator.lp) nor the all-paths bound. With power 1 (busy times summed: a Wardrop equilibrium of
    linear costs) it can be slower than all-Valiant on the tornado: the price of anarchy (docs/adaptive_routing.md)."""
    df = ev.dragonfly(2, 4, 2)
    n = df.n_nodes
    pl = placement.linear(df, n)
    tr = traffic.group_tornado(df, 1e6) if pattern == "group_tornado" else traffic.random_permutation(n, 1e6, seed=0)
    better = min(_time(df, tr, pl, "minimal"), _time(df, tr, pl, "valiant"))
    ds = ev.evaluate(df, tr, pl, routing.ugal(), bounds="dragonfly_adaptive")
    t_g, ideal = float(ds.completion_time), float(ds.adaptive_completion_time)
    assert ideal <= t_g <= better, (ideal, t_g, better)
    assert float(ev.evaluate(df, tr, pl, "minimal", bounds=True).optimal_completion_time) <= ideal * (1 + 1e-9)
    t_1 = _time(df, tr, pl, routing.ugal(power=1.0))
    assert t_g < t_1  # the steeper congestion cost moves the equilibrium towards the min-max split
    if pattern == "group_tornado":
        assert t_1 > better


def test_torus_and_fat_tree_between_bound_and_worse_candidate():
    t = ev.torus([4, 4])
    pl = placement.linear(t, 16)
    tr = traffic.random_permutation(16, 1e6, seed=3)
    cand = [_time(t, tr, pl, routing.dor(order=list(p))) for p in ((0, 1), (1, 0))]
    ds = ev.evaluate(t, tr, pl, routing.torus_adaptive(iterations=32), bounds=True)
    assert float(ds.optimal_completion_time) <= float(ds.completion_time) * (1 + 1e-9)
    assert float(ds.completion_time) <= max(cand) * (1 + 1e-9)
    ft = ev.topology.fat_tree(k=4, levels=3)
    pl = placement.linear(ft, ft.n_nodes)
    tr = traffic.group_tornado(ft, 1e6, offset=1)
    t_spray, t_dmodk = _time(ft, tr, pl, "ecmp_spray"), _time(ft, tr, pl, "dmodk")
    ds = ev.evaluate(ft, tr, pl, routing.ft_adaptive("global", iterations=64), bounds=True)
    t_g, bound = float(ds.completion_time), float(ds.optimal_completion_time)
    t_l = _time(ft, tr, pl, routing.ft_adaptive("local", iterations=64))
    # the worse candidate: every flow on up path 0
    load = np.zeros(ft.n_router_links)
    nr = np.asarray(ft.node_router)
    for s, d, b in zip(tr.src, tr.dst, tr.nbytes):
        load[_ft_adaptive.ft_candidate_paths(ft, int(nr[s]), int(nr[d]))[0]] += b
    t_worst = (load / np.asarray(ft.capacity)[:ft.n_router_links]).max()
    assert bound <= t_g * (1 + 1e-9) and bound <= t_l * (1 + 1e-9)
    assert max(t_g, t_l) <= t_worst and t_g <= 1.02 * t_spray and t_l <= 1.3 * t_spray


def test_dense_equals_flows_and_homogeneous():
    df = small_df()
    n = df.n_nodes
    pl = placement.linear(df, n)
    spec = UG
    a = ev.evaluate(df, traffic.all_to_all(n, 1e3), pl, spec)
    b = ev.evaluate(df, traffic.all_to_all_dense(n, 1e3), pl, spec)
    np.testing.assert_allclose(a.link_load, b.link_load, rtol=1e-9, atol=1e-6)
    op = ev.routing.build_routing(df, spec)
    src, dst, w = router_flows(df.n_routers, 30, 4)
    l1, _, _ = solve(op, src, dst, w)
    l2, _, _ = solve(op, src, dst, 3.0 * w)
    np.testing.assert_allclose(l2, 3.0 * l1, rtol=1e-9)


def test_sweep_equals_pointwise():
    df = small_df()
    n = df.n_nodes
    spec = UL
    trs = [traffic.group_tornado(df, 1e6), traffic.random_permutation(n, 1e6, seed=1),
           traffic.random_permutation(n, 2e5, seed=2)]
    pls = [placement.linear(df, n)] * 3
    res = ev.evaluate_batch(df, spec, trs, pls)
    for i in range(3):
        assert res.metrics["completion_time"][i] == pytest.approx(_time(df, trs[i], pls[i], spec), rel=1e-12)


@pytest.mark.parametrize("power,bound", [(1.0, 0.005), (32.0, 0.05)])
def test_gap_shrinks_with_iterations(power, bound):
    """The relative gap falls with the iterations: fast with linear costs (about 1 / iterations), more slowly with
    the default steep costs (their potential is flat far from the bottleneck)."""
    df = small_df()
    src, dst, w = df_tornado_flows(df)
    gaps = [solve(ev.routing.build_routing(df, routing.ugal(iterations=k, power=power)), src, dst, w)[2]
            for k in (4, 64, 256)]
    assert gaps[2] < gaps[1] < gaps[0] and gaps[2] < bound


# ---------------------------------------------------------------------------------------------------------------
# bad inputs and the consumers that need a linear routing
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("make,field", [
    (lambda: routing.ugal("medium"), "routing.variant"),
    (lambda: routing.ugal(threshold=-1.0), "routing.threshold"),
    (lambda: routing.ugal(threshold=float("nan")), "routing.threshold"),
    (lambda: routing.ugal(nonminimal="random"), "routing.nonminimal"),
    (lambda: routing.ugal(iterations=0), "routing.iterations"),
    (lambda: routing.torus_adaptive(orders="some"), "routing.orders"),
    (lambda: routing.torus_adaptive(tie="left"), "routing.tie"),
    (lambda: routing.ft_adaptive(iterations=2.5), "routing.iterations"),
    (lambda: routing.ugal(power=0.5), "routing.power"),
    (lambda: routing.torus_adaptive(power=float("inf")), "routing.power"),
    (lambda: routing.ft_adaptive(power=True), "routing.power"),
])
def test_bad_parameters(make, field):
    with pytest.raises(ConfigError, match=rf"{field} = .* is invalid: allowed is"):
        make()


def test_refused_where_it_does_not_serve(monkeypatch):
    with pytest.raises(ConfigError, match=r"routing.kind = 'ugal' is invalid"):
        ev.routing.build_routing(ev.torus([4, 4]), routing.ugal())
    with pytest.raises(ConfigError, match=r"routing.kind = 'ugal' is invalid.*fewer than 3 groups"):
        ev.routing.build_routing(ev.dragonfly(1, 1, 1), routing.ugal())
    monkeypatch.setattr(_ft_adaptive, "MAX_FT_CANDIDATES", 10)
    with pytest.raises(ResourceError, match=r"routing.kind = 'ft_adaptive' is invalid.*has 16.*ecmp_spray"):
        ev.routing.build_routing(ev.topology.fat_tree(k=4, levels=3), routing.ft_adaptive(iterations=3))


def test_consumers_that_need_linearity_refuse_it():
    from evaluator.jobs import Job, evaluate_jobs
    from evaluator.latency import Latency
    from evaluator.mapping import search_mapping

    df = small_df()
    n = df.n_nodes
    spec = UG
    assert not spec.linear and routing.minimal().linear
    tr = traffic.random_permutation(16, 1e6)
    with pytest.raises(ConfigError, match=r"routing.kind = 'ugal' is invalid.*linear.*mapping search"):
        search_mapping(df, tr, spec, time_budget=1.0, progress=False)
    jobs = [Job(tr, placement.linear(df, 16)), Job(tr, placement.Placement(np.arange(16, 32), n))]
    with pytest.raises(ConfigError, match=r"jobs\[0\].routing = 'ugal' is invalid.*Several jobs"):
        evaluate_jobs(df, jobs, spec)
    lat = df.with_latency(Latency(router=1e-7))
    with pytest.raises(ConfigError, match=r"routing.kind = 'ugal' is invalid.*latency model"):
        ev.evaluate(lat, tr, placement.linear(lat, 16), spec)
    with pytest.raises(ConfigError, match=r"routing.kind = 'ugal' is invalid.*sharing=max_min"):
        ev.evaluate(df, tr, placement.linear(df, 16), spec, sharing="max_min")
    from evaluator.flowlevel import flow_incidence
    with pytest.raises(ConfigError, match=r"routing.kind = 'ugal' is invalid.*flow-level incidence"):
        flow_incidence(df, spec, np.arange(16), np.arange(16), (np.arange(16) + 8) % 16)
    # one job alone is one evaluation: allowed
    evaluate_jobs(df, jobs[:1], spec)
    assert n > 32


def test_dense_size_limit(monkeypatch):
    monkeypatch.setattr(_adaptive, "MAX_DENSE_PAIRS", 100)
    from evaluator._batch.compiled import forget_kernels

    forget_kernels()  # the limit is read when the dense kernel is traced: not one an earlier test traced
    df = ev.dragonfly(1, 2, 1)  # g = 3, 6 routers: 36 pairs
    df2 = small_df()  # 36 routers: 1296 pairs
    ev.evaluate(df, traffic.all_to_all_dense(df.n_nodes, 1.0), placement.linear(df, df.n_nodes),
                routing.ugal(iterations=2))
    with pytest.raises(ResourceError, match=r"routing.kind = 'ugal' is invalid.*1,296 pairs.*bounds=true"):
        ev.evaluate(df2, traffic.all_to_all_dense(df2.n_nodes, 1.0), placement.linear(df2, df2.n_nodes),
                    routing.ugal(iterations=3))


def test_composes_from_config():
    from evaluator import config

    for option, kind, extra in [("ugal", "ugal", ["topology.p=1", "topology.a=4", "topology.h=2"]),
                                ("ugal_local", "ugal", ["topology.p=1", "topology.a=4", "topology.h=2"]),
                                ("torus_adaptive", "torus_adaptive", ["topology=torus", "topology.dims=[4,4]"]),
                                ("ft_adaptive", "ft_adaptive", ["topology=fat_tree", "topology.k=2"])]:
        obj = config.to_object(config.compose([f"routing={option}", "traffic=all_to_all", "placement=linear",
                                               *extra]))
        point = config.build(obj)
        assert point.routing.kind == kind and not point.routing.linear
    obj = config.to_object(config.compose(["routing=ugal", "routing.variant=local", "routing.threshold=0.25"]))
    r = config.build(obj).routing
    assert (r.variant, r.threshold, r.label) == ("local", 0.25, "ugal-l-t0.25")
    with pytest.raises(ConfigError, match=r"routing.variant = 'both' is invalid"):
        config.build(config.to_object(config.compose(["routing=ugal", "routing.variant=both"])))
