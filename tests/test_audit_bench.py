"""Audit of ``evaluator bench``: its baselines against per-flow walks written here, its ratios, its sizes, its CLI.

The references of this module read only the topologies' public link tables (``link_src``, ``link_dst``,
``router_coords``, ``capacity``) and the routing rules as the docstrings state them (DOR:
``evaluator/routing/_dor.py``; minimal and Valiant: ``evaluator/routing/_dragonfly.py``; D-mod-k and ECMP
spraying: ``evaluator/routing/_fat_tree.py``); nothing of ``evaluator.bench``, the routing operators or
``tests/reference.py``. Small networks only: a 4x4 torus, DF(2,4,2) (and DF(2,4,2) with 5 groups, 2 global
links per group pair), 4-ary 2- and 3-level fat trees (and a 2-level one with 2 parallel links).
"""

from __future__ import annotations

import math
import subprocess
import sys
from collections import defaultdict
from functools import lru_cache

import numpy as np
import pytest

from evaluator import placement as P
from evaluator import routing as RT
from evaluator import topology as T
from evaluator import traffic as TR
from evaluator.bench.baseline import (BYTES_PER_ENTRY, METHODS, PerFlowBaseline, SparseMatrixBaseline,
                                      routing_matrix)
from evaluator.errors import ConfigError
from evaluator.traffic import dense as structured
from tests.helpers import TOL

# ======================================================================================
# Independent per-flow references
# ======================================================================================


def _router_links(topo):
    n = int(topo.n_router_links)
    return np.asarray(topo.link_src[:n]).tolist(), np.asarray(topo.link_dst[:n]).tolist()


class TorusWalk:
    """DOR as ``_dor.py`` states it: dimensions in ``order``; a wrapped one the shorter way round, a tie at half a
    ring split in halves (``tie="split"``, rings longer than 2) or taken in + (``"positive"``); a mesh straight."""

    def __init__(self, topo, order="as_given", tie="split"):
        self.dims = [int(n) for n in topo.dims]
        self.wrap = [bool(w) for w in topo.wrap]
        d = len(self.dims)
        if order == "as_given":
            self.order = list(range(d))
        elif order == "longest_first":
            self.order = sorted(range(d), key=lambda k: -self.dims[k])
        else:
            self.order = list(order)
        self.split = tie == "split"
        coords = [tuple(int(x) for x in c) for c in np.asarray(topo.router_coords)]
        self.rid = {c: r for r, c in enumerate(coords)}
        self.coords = coords
        self.link = {}
        for lid, (s, t) in enumerate(zip(*_router_links(topo))):
            self.link.setdefault((s, t), lid)

    def paths(self, sr, dr):
        partial = [(1.0, list(self.coords[sr]), [])]
        target = self.coords[dr]
        for k in self.order:
            n, out = self.dims[k], []
            for prob, cur, links in partial:
                s, t = cur[k], target[k]
                if s == t:
                    out.append((prob, cur, links))
                    continue
                if not self.wrap[k]:
                    moves = [(1 if t > s else -1, abs(t - s), 1.0)]
                else:
                    fwd, bwd = (t - s) % n, (s - t) % n
                    if fwd < bwd:
                        moves = [(1, fwd, 1.0)]
                    elif bwd < fwd:
                        moves = [(-1, bwd, 1.0)]
                    elif self.split and n > 2:
                        moves = [(1, fwd, 0.5), (-1, bwd, 0.5)]
                    else:
                        moves = [(1, fwd, 1.0)]
                for step, count, frac in moves:
                    c, walk = list(cur), list(links)
                    for _ in range(count):
                        here = self.rid[tuple(c)]
                        c[k] = (c[k] + step) % n
                        walk.append(self.link[(here, self.rid[tuple(c)])])
                    out.append((prob * frac, c, walk))
            partial = out
        return [(p, links) for p, _, links in partial]


class DragonflyWalk:
    """Minimal (local, global, local; even over a group pair's parallel global links) and Valiant (an
    intermediate group uniform over the g - 2 others, minimal to where the global link lands, then minimal on;
    intra-group traffic minimal), found from the link tables: group = router // a."""

    def __init__(self, topo, kind):
        self.a, self.g, self.kind = int(topo.a), int(topo.g), kind
        self.local, self.globals = {}, defaultdict(list)
        for lid, (s, t) in enumerate(zip(*_router_links(topo))):
            if s // self.a == t // self.a:
                assert (s, t) not in self.local
                self.local[(s, t)] = lid
            else:
                self.globals[(s // self.a, t // self.a)].append((lid, s, t))

    def _minimal(self, sr, dr):
        if sr == dr:
            return [(1.0, [])]
        S, D = sr // self.a, dr // self.a
        if S == D:
            return [(1.0, [self.local[(sr, dr)]])]
        out = []
        links = self.globals[(S, D)]
        for lid, o, x in links:
            walk = ([self.local[(sr, o)]] if o != sr else []) + [lid] + ([self.local[(x, dr)]] if x != dr else [])
            out.append((1.0 / len(links), walk))
        return out

    def paths(self, sr, dr):
        S, D = sr // self.a, dr // self.a
        if self.kind == "minimal" or S == D:
            return self._minimal(sr, dr)
        out = []
        for inter in range(self.g):
            if inter in (S, D):
                continue
            links = self.globals[(S, inter)]
            for lid, o, x in links:
                first = ([self.local[(sr, o)]] if o != sr else []) + [lid]
                for p, second in self._minimal(x, dr):
                    out.append((p / ((self.g - 2) * len(links)), first + second))
        return out


class FatTreeWalk:
    """Up*/down* on the link tables and the switch labels (``router_coords``: level, then ``x_h .. x_{i+1}, y_i ..
    y_1``). Up to tier ``T`` (the lowest level whose subtree holds both nodes, less one), then down to the child in
    the destination's subtree. ECMP spraying: even over every up link and over the parallel links down. D-mod-k:
    at level ``t`` up port ``v = floor(d / (w_1 .. w_t)) mod (w_{t+1} pl_t)``, parent digit ``v mod w_{t+1}``,
    parallel copy ``v div w_{t+1}`` (copies in link-id order); down the same copy."""

    def __init__(self, topo, kind):
        self.kind, self.h = kind, int(topo.levels)
        self.m, self.w = [int(x) for x in topo.children], [int(x) for x in topo.parents]
        self.pl = [int(x) for x in topo.parallel_links]
        coords = np.asarray(topo.router_coords).tolist()
        self.level = [c[0] for c in coords]
        self.subtree = []  # subtree index of every switch (x digits, mixed radix m_h .. m_{i+1})
        self.y = []  # the switch's y digits, y_i first
        for c in coords:
            i = c[0]
            xs, x = c[1:1 + self.h - i], 0
            for j, digit in enumerate(xs):  # x_h .. x_{i+1}
                x = x * self.m[self.h - 1 - j] + digit
            self.subtree.append(x)
            self.y.append(c[1 + self.h - i:])
        self.out = defaultdict(list)  # router -> [(link, neighbour)] in link-id order
        for lid, (s, t) in enumerate(zip(*_router_links(topo))):
            self.out[s].append((lid, t))
        self.leaf = np.asarray(topo.node_router).tolist()

    def _span(self, level):
        return math.prod(self.m[:level])

    def paths(self, sn, dn):
        T = next(lv for lv in range(1, self.h + 1) if sn // self._span(lv) == dn // self._span(lv)) - 1
        states = [(1.0, self.leaf[sn], [])]
        copies = []
        for t in range(1, T + 1):
            grown = []
            for prob, r, links in states:
                ups = [(lid, q) for lid, q in self.out[r] if self.level[q] == t + 1]
                if self.kind == "dmodk":
                    U = self.w[t] * self.pl[t - 1]
                    v = (dn // math.prod(self.w[:t])) % U
                    digit, copy = v % self.w[t], v // self.w[t]
                    to_parent = [(lid, q) for lid, q in ups if self.y[q][0] == digit]
                    assert len(to_parent) == self.pl[t - 1]
                    copies.append(copy)
                    lid, q = to_parent[copy]
                    grown.append((prob, q, links + [lid]))
                else:
                    assert len(ups) == self.w[t] * self.pl[t - 1]
                    grown += [(prob / len(ups), q, links + [lid]) for lid, q in ups]
            states = grown
        for t in range(T, 0, -1):  # from level t + 1 down to level t
            grown = []
            for prob, r, links in states:
                downs = [(lid, q) for lid, q in self.out[r]
                         if self.level[q] == t and self.subtree[q] == dn // self._span(t)]
                assert len(downs) == self.pl[t - 1] and len({q for _, q in downs}) == 1
                if self.kind == "dmodk":
                    lid, q = downs[copies[t - 1]]
                    grown.append((prob, q, links + [lid]))
                else:
                    grown += [(prob / len(downs), q, links + [lid]) for lid, q in downs]
            states = grown
        assert all(r == self.leaf[dn] for _, r, _ in states)
        return [(p, links) for p, _, links in states]


def walker(topo, routing):
    """The walk of ``routing`` and what its paths depend on: ``"router"`` (a router pair), ``"node"`` (D-mod-k: the
    destination node), ``"leaf"`` (ECMP spraying: the leaves; walked from their first nodes)."""
    if routing.kind == "dor":
        return TorusWalk(topo, routing.order, routing.tie), "router"
    if routing.kind in ("minimal", "valiant"):
        return DragonflyWalk(topo, routing.kind), "router"
    if routing.kind == "dmodk":
        return FatTreeWalk(topo, "dmodk"), "node"
    return FatTreeWalk(topo, "ecmp"), "leaf"


def walk_loads(topo, routing, flows, task_node) -> np.ndarray:
    """Expected bytes on every link of ``(src task, dst task, bytes)`` flows: router links, then injection of
    every node, then ejection of every node."""
    w, by = walker(topo, routing)
    m1 = int(topo.children[0]) if by == "leaf" else 0
    n_rl, n = int(topo.n_router_links), int(topo.n_nodes)
    nr = np.asarray(topo.node_router).tolist()
    tn = [int(x) for x in task_node]
    out = np.zeros(n_rl + 2 * n)
    cache = {}
    for s, d, b in flows:
        sn, dn = tn[s], tn[d]
        if sn == dn:
            continue
        out[n_rl + sn] += b
        out[n_rl + n + dn] += b
        if nr[sn] == nr[dn]:
            continue
        key = {"router": (nr[sn], nr[dn]), "node": (sn, dn), "leaf": (nr[sn] * m1, nr[dn] * m1)}[by]
        if key not in cache:
            cache[key] = w.paths(*key)
            assert abs(sum(p for p, _ in cache[key]) - 1.0) < TOL["prob"]
        for p, links in cache[key]:
            for lid in links:
                out[lid] += b * p
    return out


def dense_flows(n_tasks, sw, dw, bpp):
    """The flows of dense rank-one traffic: ``bpp * sw[a] * dw[d]`` for every task pair ``a != d``."""
    return [(a, d, bpp * sw[a] * dw[d]) for a in range(n_tasks) for d in range(n_tasks) if a != d and sw[a] * dw[d]]


def metrics(topo, loads):
    """Completion time, bottleneck link and mean hops of link loads (the engine's definitions)."""
    n_rl, n = int(topo.n_router_links), int(topo.n_nodes)
    times = loads / np.asarray(topo.capacity, np.float64)
    off = loads[n_rl:n_rl + n].sum()
    return float(times.max()), float(loads[:n_rl].sum() / off) if off else 0.0


def close(got, ref, label=""):
    got = np.asarray(got, np.float64)
    assert got.shape == ref.shape, label
    assert ref[: ref.size].max() > 0, "a case that loads nothing checks nothing"
    np.testing.assert_allclose(got, ref, rtol=TOL["rel"], atol=TOL["bytes"] * max(1.0, float(ref.max())) / 1e6,
                               err_msg=label)


# ======================================================================================
# Cases
# ======================================================================================


@lru_cache(maxsize=None)
def network(name):
    return {"torus": lambda: T.torus((4, 4)),
            "torus2": lambda: T.torus((4, 4), nodes_per_router=2),
            "df": lambda: T.dragonfly(2, 4, 2),
            "df5": lambda: T.dragonfly(2, 4, 2, 5),  # 5 groups: 2 global links per group pair
            "ft2": lambda: T.fat_tree(k=4, levels=2),
            "ft3": lambda: T.fat_tree(k=4, levels=3),
            "ft2pl": lambda: T.fat_tree([4, 4], [1, 2], parallel_links=2)}[name]()


CASES = [("torus", RT.dor()), ("torus2", RT.dor((1, 0), "positive")), ("torus", RT.dor("longest_first", "positive")),
         ("df", RT.minimal()), ("df", RT.valiant()), ("df5", RT.minimal()), ("df5", RT.valiant()),
         ("ft2", RT.dmodk()), ("ft3", RT.dmodk()), ("ft3", RT.ecmp_spray()), ("ft2pl", RT.dmodk()),
         ("ft2pl", RT.ecmp_spray())]
IDS = [f"{n}-{r.label}" for n, r in CASES]


def sparse_point(topo, seed, n_flows=400, per_node=3):
    """Random flows among ``per_node`` x nodes tasks on a random placement (same-node and same-router flows
    included)."""
    rng = np.random.default_rng(seed)
    n = int(topo.n_nodes)
    k = per_node * n
    src, dst = rng.integers(0, k, n_flows), rng.integers(0, k, n_flows)
    b = rng.random(n_flows) * 1e6
    return TR.from_flows(k, src, dst, b), P.explicit(topo, rng.integers(0, n, k)), list(zip(src, dst, b))


# ======================================================================================
# Link loads: the per-flow baseline and the SciPy matrices against the walks above
# ======================================================================================


@pytest.mark.parametrize("name,routing", CASES, ids=IDS)
def test_sparse_loads_of_both_baselines(name, routing):
    topo = network(name)
    tr, pl, flows = sparse_point(topo, seed=len(name))
    ref = walk_loads(topo, routing, flows, pl.task_node)
    close(PerFlowBaseline(topo, routing).link_loads(tr, pl), ref, f"per-flow {name}")
    close(routing_matrix(topo, routing).link_loads(tr, pl), ref, f"SciPy {name}")


@pytest.mark.parametrize("name,routing", CASES, ids=IDS)
def test_dense_loads_of_the_matrix(name, routing):
    """All-to-all and a weighted rank-one traffic, one and two tasks per node; never a flow list in the matrix."""
    topo = network(name)
    n = int(topo.n_nodes)
    rng = np.random.default_rng(7)
    base = routing_matrix(topo, routing)
    for k in (n, 2 * n):
        pl = P.explicit(topo, rng.permutation(np.resize(np.arange(n), k)))
        sw, dw = rng.random(k) * (rng.random(k) < 0.7), rng.random(k)
        for tr, s, d, bpp in ((structured.all_to_all(k, 3.0), np.ones(k), np.ones(k), 3.0),
                              (structured.dense(k, sw, dw, 1e3, name="w"), sw, dw, 1e3)):
            ref = walk_loads(topo, routing, dense_flows(k, s.tolist(), d.tolist(), bpp), pl.task_node)
            close(base.link_loads(tr, pl), ref, f"{name} {tr.name} {k} tasks")
    if routing.kind in ("dor",):  # the walk on the listed all-to-all (sparse) too
        tr = TR.all_to_all(n, 2.0)
        pl = P.explicit(topo, rng.permutation(n))
        ref = walk_loads(topo, routing, dense_flows(n, [1.0] * n, [1.0] * n, 2.0), pl.task_node)
        close(PerFlowBaseline(topo, routing).link_loads(tr, pl), ref, "per-flow all-to-all")


MATRIX_CASES = [(n, r) for n, r in CASES if r.kind in ("dor", "minimal", "valiant")]


@pytest.mark.parametrize("name,routing", MATRIX_CASES, ids=[f"{n}-{r.label}" for n, r in MATRIX_CASES])
@pytest.mark.parametrize("method", METHODS)
def test_apply_batch_points_in_order(name, routing, method):
    """apply_batch over 5 placements (batches of 2: the last one short): each point's loads and metrics, in the
    order the placements were given."""
    topo = network(name)
    rng = np.random.default_rng(3)
    n = int(topo.n_nodes)
    tr, _, flows = sparse_point(topo, seed=11, n_flows=150, per_node=2)
    pls = [P.explicit(topo, rng.integers(0, n, 2 * n)) for _ in range(5)]
    got = SparseMatrixBaseline(topo, routing).apply_batch(tr, pls, batch_size=2, keep_link_load=True, method=method)
    for i, pl in enumerate(pls):
        ref = walk_loads(topo, routing, flows, pl.task_node)
        close(got["link_load"][i], ref, f"point {i}")
        ct, hops = metrics(topo, ref)
        assert got["completion_time"][i] == pytest.approx(ct, rel=TOL["rel"])
        assert got["mean_hops"][i] == pytest.approx(hops, rel=TOL["rel_sum"])
        times = ref / np.asarray(topo.capacity)
        assert times[got["bottleneck_link"][i]] == pytest.approx(ct, rel=TOL["rel"])
    # dense traffic, two points
    dense = structured.all_to_all(n, 5.0)
    pls = [P.explicit(topo, rng.permutation(n)) for _ in range(2)]
    got = SparseMatrixBaseline(topo, routing).apply_batch(dense, pls, keep_link_load=True, method=method)
    for i, pl in enumerate(pls):
        ref = walk_loads(topo, routing, dense_flows(n, [1.0] * n, [1.0] * n, 5.0), pl.task_node)
        close(got["link_load"][i], ref, f"dense point {i}")
        assert got["completion_time"][i] == pytest.approx(metrics(topo, ref)[0], rel=TOL["rel"])


# ======================================================================================
# Sizes: the estimate bounds what build makes
# ======================================================================================


@pytest.mark.parametrize("name,routing", CASES, ids=IDS)
def test_estimate_bounds_the_built_matrix(name, routing):
    """``estimate`` >= the built R's non-zeros and ``check_size`` >= its bytes, for a sparse point and for the
    dense all-to-all with one and two tasks per node (a torus's R follows the point)."""
    topo = network(name)
    n = int(topo.n_nodes)
    rng = np.random.default_rng(5)
    points = [sparse_point(topo, seed=1)[:2]]
    for k in (n, 2 * n):
        points.append((structured.all_to_all(k, 1.0), P.explicit(topo, rng.permutation(np.resize(np.arange(n), k)))))
    points.append((TR.all_to_all(n, 1.0), P.explicit(topo, rng.permutation(n))))
    for tr, pl in points:
        base = routing_matrix(topo, routing)
        entries, need = base.estimate(tr, pl), base.check_size(tr, pl)
        assert need == base.bytes_per_entry * entries + 2**16  # (the build's fixed 64 kB)
        base.build(tr, pl)
        label = f"{name} {tr.name} {tr.kernel_input} {tr.n_tasks} tasks"
        assert 0 < base.nnz <= entries, label
        assert 0 < base.nbytes <= need, label


def test_dense_torus_estimate_counts_every_pair():
    """The 4x4 torus's all-to-all, one task per node: 240 flows, 2 entries each plus their DOR hops (a split
    tie's two halves), the distinct links of each pair's paths counted here: 480 + 16 x 48 = 1,248 = the matrix's
    non-zeros (the estimate gave 1,200: the mean ring distance over all pairs, same-node ones included)."""
    topo = network("torus")
    walk = TorusWalk(topo)
    hops = sum(len({x for _, links in walk.paths(s, d) for x in links}) for s in range(16) for d in range(16) if s != d)
    assert hops == 768
    base = SparseMatrixBaseline(topo, RT.dor())
    pl = P.explicit(topo, np.arange(16))
    assert base.estimate(structured.all_to_all(16, 1.0), pl) == 2 * 240 + hops


# ======================================================================================
# Ratios: reference seconds / evaluator seconds (how many times faster the evaluator is)
# ======================================================================================


def test_big_rows_ratios_and_units():
    from evaluator.bench._big import _big_table_rows

    row = {"pattern": "p", "routing": "dor", "flows": 10, "eval_s": 0.25, "first_call_s": 1.0, "baseline_s": 5.0,
           "baseline_flows_sampled": 10, "check_rel_dev": 0.0, "check_topology": "t", "scipy_s": 0.75,
           "scipy_build_s": 0.5, "scipy_apply_s": 0.25, "scipy_nnz": 3, "scipy_mb": 1.0, "scipy_per_point_build": True,
           "scipy_rel_dev": 0.0}
    (got,) = _big_table_rows({"rows": [row], "peak_mb": 1.0, "device": {"platform": "cpu", "cpus": 1}}, "x")
    assert (got["seconds"], got["points_per_s"], got["ratio"], got["ratio_scipy"]) == (0.25, 4.0, 20.0, 3.0)


def test_small_scenario_ratios(monkeypatch):
    """Scenario 1 (one core): 600 points in 2 s; the walk 3 s a point over 600 points; SciPy 1.5 s for them."""
    from evaluator.bench import _small

    classes = {"min": {"points": 600, "method": "batched", "seconds": 1.5, "mean_s": 0.0025,
                       "by_method_s": {"batched": 1.5, "per point": 2.0}, "batch_size": 8}}
    one = {"points": 600, "eval_s": 2.0, "peak_mb": 1.0, "build_s": 0.6, "compile_s": 1.0,
           "device": {"platform": "cpu", "kind": "cpu", "cpus": 1},
           "baseline": {"classes": {"min": {"mean_s": 3.0, "points": 600, "sampled": 4}}, "seconds": 1800.0,
                        "points": 600, "max_rel_dev": 0.0, "peak_mb": 1.0},
           "scipy": {"classes": classes, "builds": {}, "seconds": 1.5, "points": 600, "max_rel_dev": 0.0,
                     "max_rel_dev_time": 0.0, "checked": 1, "batch_sizes": [8], "peak_mb": 1.0}}
    monkeypatch.setattr(_small, "_launch", lambda *a, **k: (None, None))
    monkeypatch.setattr(_small, "_collect", lambda *a: one)
    monkeypatch.setattr(_small.os, "sched_getaffinity", lambda pid: {0})
    raw = {}
    rows = _small._run_small(True, lambda m: None, raw)
    ours, walk, scipy = rows
    assert ours["points_per_s"] == 300.0 and ours["ratio"] == pytest.approx(900.0, rel=TOL["rel"])  # 3 s vs 1/300 s
    assert ours["ratio_scipy"] == pytest.approx(0.75, rel=TOL["rel"])  # SciPy: 400 points/s
    assert walk["ratio"] == 1.0 and walk["ratio_scipy"] == pytest.approx(1 / 1200, rel=TOL["rel"])
    assert scipy["ratio"] == pytest.approx(1200.0, rel=TOL["rel"]) and scipy["points_per_s"] == 400.0
    assert raw["small"]["place_s_per_point"] == pytest.approx(0.001, rel=TOL["rel"])
    # the end-to-end sweep against them: 1,000 feasible points in 4 s; SciPy as a sweep on one core is the
    # NumPy placement (1 ms) plus its apply (2.5 ms) per point
    import importlib

    bench_run = importlib.import_module("evaluator.bench.run")  # (one core: sched_getaffinity patched above)
    r = {"n_points": 2000, "n_feasible": 1000, "wall_s": 4.0, "timing": {}, "driver_peak_mb": 1.0, "command": "c"}
    sweep = bench_run._sweep_row(r, 10, "cold", raw["small"])
    assert sweep["points_per_s"] == 500.0
    assert sweep["ratio"] == pytest.approx(250 * 3.0, rel=TOL["rel"])
    assert sweep["ratio_scipy"] == pytest.approx(250 * 0.0035, rel=TOL["rel"])


def test_startup_and_time_rows_ratios():
    from evaluator.bench.startup import startup_rows
    from evaluator.bench.time import time_rows

    probe = {"first_s": 0.0, "import_s": 1.0, "second_s": 0.01, "first_cpu_s": 0.1, "completion_time": 1.0,
             "backend": "cpu", "rebuilt_shared_s": [], "rebuilt_fresh_s": []}
    cold = dict(probe, first_s=4.0, rebuilt_shared_s=[0.001, 0.002, 0.009], rebuilt_fresh_s=[0.1, 0.05, 0.3])
    warm = [dict(probe, first_s=s, rebuilt_shared_s=[0.002], rebuilt_fresh_s=[0.1]) for s in (0.5, 0.25, 2.0)]
    rows = startup_rows({"cold": cold, "warm": warm, "cache_entries": 1, "target_s": 0.5}, lambda d: "cpu")
    assert rows[1]["seconds"] == 0.5 and "8.0x faster than cold" in rows[1]["scenario"]  # 4 s / median 0.5 s
    assert "NOT met" in rows[1]["scenario"]  # 0.5 s is not below 0.5 s
    assert rows[2]["seconds"] == 0.002 and "50.0x faster" in rows[2]["scenario"]  # 0.1 / 0.002
    data = {"device": {}, "peak_mb": 1.0,
            "collectives": [{"p": 4, "cases": 6, "warm_s": 0.5, "smpi_s": 3.0, "max_dev": 0.0, "first_s": 1.0}],
            "sharing": {"flows": 10, "points": 4, "max_min_s": 2.0, "bound_s": 0.5, "check": 0.0},
            "phases": {"phases": 10, "warm_s": 1.0, "first_s": 1.0}}
    coll, sharing, _ = time_rows(data, lambda d: "cpu")
    assert coll["ratio"] == 6.0 and coll["points_per_s"] == 12.0  # SMPI 3 s / ours 0.5 s
    assert sharing["ratio"] == 0.25  # the bound's time over max-min's: max-min is 4x slower than the bound


def test_fat_tree_row_reports_its_build_once(monkeypatch):
    """A fat tree's R is built once (1 s here) and applied per point (0.25 s): the row's build is that second and
    its per-point time the apply; the evaluator (0.125 s) is 2x faster. A fake clock counts the calls' time."""
    import time

    from evaluator.bench._big import _scipy_big
    from evaluator.bench._fat_tree_matrix import FatTreeMatrixBaseline

    clock = [0.0]
    monkeypatch.setattr(time, "perf_counter", lambda: clock[0])
    real_build, real_loads = FatTreeMatrixBaseline.build, FatTreeMatrixBaseline.link_loads

    def build(self, *a, **k):
        clock[0] += 1.0 if self.R is None else 2.0**-10  # a call that builds nothing: about 1 ms
        return real_build(self, *a, **k)

    def loads(self, *a, **k):
        clock[0] += 0.25
        return real_loads(self, *a, **k)

    monkeypatch.setattr(FatTreeMatrixBaseline, "build", build)
    monkeypatch.setattr(FatTreeMatrixBaseline, "link_loads", loads)
    topo, routing = network("ft3"), RT.dmodk()
    tr, pl, flows = sparse_point(topo, seed=4)
    ref = walk_loads(topo, routing, flows, pl.task_node)
    row = {"eval_s": 0.125}
    _scipy_big(topo, routing, tr, pl, ref, row, None, lambda: clock.__setitem__(0, clock[0] + 0.125))
    assert row["scipy_build_s"] == 1.0 and row["scipy_s"] == 0.25 and row["scipy_apply_s"] == 0.25
    assert row["eval_s"] == 0.125 and row["scipy_rel_dev"] <= TOL["rel"]


# ======================================================================================
# The command line: bad input refused before any work, naming the option, the value and what is allowed
# ======================================================================================


@pytest.fixture
def no_work(monkeypatch):
    """Every scenario replaced by one that records that it ran (and returns no rows)."""
    import importlib

    run_mod = importlib.import_module("evaluator.bench.run")
    ran = []
    table = tuple(run_mod.Scenario(s.name, s.label, lambda q, log, raw, out, name=s.name: ran.append(name) or [])
                  for s in run_mod.SCENARIO_TABLE)
    monkeypatch.setattr(run_mod, "SCENARIO_TABLE", table)
    return ran


@pytest.mark.parametrize("argv,field,value,allowed", [
    (["--only", "nonsense"], "--only", ["nonsense"], "scenarios among"),
    (["--only", "small", "nonsense", "mira"], "--only", ["nonsense"], "scenarios among"),
    (["--settle", "-1", "--only", "small", "mira"], "--settle", -1.0, ">= 0"),
    (["--settle", "nan", "--only", "small", "mira"], "--settle", None, "finite"),
    (["--settle", "inf", "--only", "small", "mira"], "--settle", math.inf, "finite"),
    (["--settle", "1e400", "--only", "small", "mira"], "--settle", math.inf, "finite"),
    (["--settle", "abc"], "--settle", "abc", "seconds >= 0"),
    (["--settle", "5", "--only", "startup"], "--settle", 5.0, "0 with one scenario"),
])
def test_bad_options_refused_before_work(no_work, tmp_path, argv, field, value, allowed):
    from evaluator.cli.bench import main

    out = tmp_path / "out"
    with pytest.raises(ConfigError) as e:
        main([*argv, "--out", str(out)])
    assert e.value.field == field and allowed in str(e.value.allowed)
    if value is None:
        assert math.isnan(e.value.value)
    else:
        assert e.value.value == value
    if field == "--only":  # what is allowed names every scenario
        assert all(s in str(e.value) for s in ("small", "mira", "fat_tree", "startup", "moves"))
    assert no_work == [] and not out.exists()


def test_unwritable_out_refused_before_work(no_work, tmp_path):
    from evaluator.cli.bench import main

    blocker = tmp_path / "file"
    blocker.write_text("x")
    for out in (blocker, blocker / "sub", ""):
        with pytest.raises(ConfigError) as e:
            main(["--only", "startup", "--out", str(out)])
        assert e.value.field == "--out" and e.value.value == str(out) and "directory" in e.value.allowed
    assert no_work == [] and blocker.read_text() == "x"
    main(["--only", "startup", "jobs", "--out", str(tmp_path / "ok"), "--settle", "0"])  # good input: it runs
    assert no_work == ["jobs", "startup"] and (tmp_path / "ok" / "bench-jobs-startup.json").exists()


def test_command_line_exit_status_and_message(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "evaluator", "bench", "--only", "nonsense", "--out",
                           str(tmp_path / "o")], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "--only = ['nonsense'] is invalid" in proc.stderr
    assert "'fat_tree'" in proc.stderr and not (tmp_path / "o").exists()


@pytest.mark.parametrize("name, build, routing, dense", [
    ("ft 8-ary 3-tree dmodk", lambda: T.fat_tree(k=8, levels=3), RT.dmodk(), False),
    ("ft 8-ary 3-tree spray", lambda: T.fat_tree(k=8, levels=3), RT.ecmp_spray(), False),
    ("ft 4-ary 2-tree x2 links", lambda: T.fat_tree([4, 4], [1, 2], parallel_links=2), RT.dmodk(), False),
    ("DF(2,4,2) valiant", lambda: T.dragonfly(2, 4, 2), RT.valiant(), False),
    ("DF(4,8,4) minimal", lambda: T.dragonfly(4, 8, 4), RT.minimal(), False),
    ("torus 8x8x4 stencil", lambda: T.torus((8, 8, 4)), RT.dor(), False),
    ("torus 8x8x4 all-to-all", lambda: T.torus((8, 8, 4)), RT.dor(), True)])
def test_the_size_check_bounds_what_building_allocates(name, build, routing, dense):
    """The size check (``check_size``: entries times ``bytes_per_entry``) is the guard before a matrix is built; at
    48 bytes an entry for every matrix a fat tree's build peaked at 66-95 bytes an entry and a torus's or
    Dragonfly's up to 25 % over. The peak that ``tracemalloc`` sees during ``build`` is now within it."""
    import tracemalloc

    topo = build()
    n = int(topo.n_nodes)
    pl = P.explicit(topo, np.random.default_rng(2).permutation(n))
    tr = structured.all_to_all(n, 8.0) if dense else TR.from_flows(
        n, np.arange(n), (np.arange(n) * 7 + 3) % n, np.full(n, 8.0))
    base = routing_matrix(topo, routing)
    need = base.check_size(tr, pl)
    tracemalloc.start()
    try:
        base.build(tr, pl, check=False)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert base.nnz > 0 and peak <= need, (name, peak, need, base.estimate(tr, pl))
