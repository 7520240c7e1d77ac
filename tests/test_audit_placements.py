"""Audit of the placement families against their documented definitions (docs/gemini.md, the modules' docstrings),
with independent reference code on small machines: a 6x4x6 Gemini-like torus with XE/XK node classes, service and
down routers and features; a Dragonfly; fat trees.

Every placement: each task placed once, on an allowed node (compute, of the class asked), at most
``tasks_per_node`` per node; offsets, node sets and orders as documented; seeds reproducible and different seeds
different; a request that cannot be met refused with a ConfigError naming the field (never an IndexError, never
fewer tasks or a reused node)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

import evaluator as ev
from evaluator import placement as P
from evaluator import traffic as TR
from evaluator.errors import ConfigError
from evaluator.jobs import Job, evaluate_jobs
from evaluator.machines import machine_from_dict
from evaluator.topology import fat_tree, machine_topology, torus

DIMS = (6, 4, 6)
FEATURES = [{"name": "a", "offset": [0, 0, 0], "shape": [2, 2, 2]},   # holds the down router [1, 1, 1]
            {"name": "s0", "offset": [0, 0, 3], "shape": [6, 2, 3]},
            {"name": "b", "offset": [2, 0, 0], "shape": [4, 4, 6]}]
SERVICE = [[0, 0, 0], [3, 1, 2], [5, 2, 4]]
DOWN = [[1, 1, 1]]


def gemini(**kw):
    d = dict(name="Mini", kind="torus", dims=list(DIMS), link_bandwidth=[2.0, 1.0, 2.0], nodes_per_router=2,
             injection_bandwidth=4.0, routing_order="as_given", default_class="XE",
             node_classes=[{"name": "XK", "offset": [4, 0, 0], "shape": [2, 4, 6]}],
             service_routers=SERVICE, down_routers=DOWN, features=FEATURES)
    d.update(kw)
    return machine_topology(machine_from_dict(d))


@pytest.fixture(scope="module")
def topo():
    return gemini()


def router_of(xyz):
    return int(np.ravel_multi_index(tuple(xyz), DIMS))


def allowed(topo, node_class=None):
    """Independent: nodes of compute routers (not service, not down) of the class asked."""
    ok = np.ones(topo.n_nodes, bool)
    for r in SERVICE + DOWN:
        ok[2 * router_of(r): 2 * router_of(r) + 2] = False
    if node_class is not None:
        x = np.arange(topo.n_nodes) // 2 // (DIMS[1] * DIMS[2])  # router x coordinate
        ok &= (x >= 4) if node_class == "XK" else (x < 4)
    return ok


def check_valid(pl, topo, n, tpn, ok=None):
    """Every task once, on an allowed node, at most tpn per node."""
    assert pl.n_tasks == n and pl.task_node.shape == (n,)
    assert (pl.task_node >= 0).all() and (pl.task_node < topo.n_nodes).all()
    assert np.bincount(pl.task_node, minlength=topo.n_nodes).max() <= tpn
    if ok is not None:
        assert ok[pl.task_node].all(), "a task on a service, down or other-class node"


def test_machine_classes_are_what_the_file_says(topo):
    assert np.array_equal(P.compute_mask(topo), allowed(topo))
    for c in ("XE", "XK"):
        assert np.array_equal(P.compute_mask(topo, c), allowed(topo, c))
    with pytest.raises(ConfigError) as e:
        P.compute_mask(topo, "service")
    assert e.value.field == "placement.node_class" and "XE" in str(e.value) and "XK" in str(e.value)


# ------------------------------------------------------------------------------------------------
# ALPS order and the allocation kinds
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dims", [(6, 4, 6), (5, 4, 6), (3, 5, 7)])
@pytest.mark.parametrize("slab", ["yz", "xz", "xy"])
@pytest.mark.parametrize("curve", ["hilbert", "serpentine"])
def test_alps_order_is_blocks_in_slabs(dims, slab, curve):
    t = torus(dims, nodes_per_router=2)
    o = P.alps_order(t, slab, curve)
    assert sorted(o.tolist()) == list(range(t.n_nodes))
    assert (o[1::2] == o[::2] + 1).all()  # a router's two nodes together
    c = np.array(np.unravel_index(o[::2] // 2, dims)).T
    bid = [tuple(x) for x in c // 2]
    runs = [k for k, _ in itertools.groupby(bid)]
    assert len(runs) == len(set(runs))  # every 2x2x2 block in one run
    bn = np.array(runs)
    normal = "xyz".index(next(ch for ch in "xyz" if ch not in slab))
    assert (np.diff(bn[:, normal]) >= 0).all()  # slab by slab across the normal
    assert (np.abs(np.diff(bn, axis=0)).sum(1) == 1).all()  # consecutive blocks are neighbours (slabs join)
    for k, g in itertools.groupby(range(len(bid)), key=lambda i: bid[i]):
        local = np.ravel_multi_index(tuple((c[list(g)] - 2 * np.array(k)).T), (2, 2, 2))
        assert (np.diff(local) > 0).all()  # row-major inside a block


def ref_first(order, ok, n, tpn, skip=0):
    cand = [v for v in order.tolist() if ok[v]][skip:]
    need = -(-n // tpn)
    assert len(cand) >= need
    return np.array(cand[:need])[np.arange(n) // tpn]


@pytest.mark.parametrize("node_class", [None, "XE", "XK"])
@pytest.mark.parametrize("tpn,n,skip", [(1, 7, 0), (2, 9, 3), (3, 40, 5)])
def test_alps_takes_first_free_compute_nodes(topo, node_class, tpn, n, skip):
    ok = allowed(topo, node_class)
    for slab, curve in (("yz", "hilbert"), ("xz", "serpentine")):
        pl = P.alps(topo, n, tpn, slab, curve, skip, node_class=node_class)
        check_valid(pl, topo, n, tpn, ok)
        assert np.array_equal(pl.task_node, ref_first(P.alps_order(topo, slab, curve), ok, n, tpn, skip))
        assert pl.name.startswith(f"alps {slab}") and pl.name.endswith(f"/{tpn}")


def test_alps_refuses_more_than_the_free_nodes(topo):
    for nc in (None, "XK"):
        cap = int(allowed(topo, nc).sum())
        check_valid(P.alps(topo, 2 * cap, 2, node_class=nc), topo, 2 * cap, 2, allowed(topo, nc))
        with pytest.raises(ConfigError) as e:
            P.alps(topo, 2 * cap + 1, 2, node_class=nc)
        assert e.value.field == "placement.n_tasks" and str(cap) in str(e.value)
        with pytest.raises(ConfigError) as e:
            P.alps(topo, 2 * cap - 1, 2, skip=1, node_class=nc)
        assert e.value.field == "placement.n_tasks"
    with pytest.raises(ConfigError) as e:
        P.alps(topo, 4, node_class="GPU")
    assert e.value.field == "placement.node_class"


def test_fragmented_history_and_job(topo):
    ok = allowed(topo)
    n_compute = int(ok.sum())
    for occ, seed in ((0.0, 0), (0.5, 1), (0.8, 2)):
        free = P.free_after_history(topo, occ, seed, job_nodes=[1, 12], events=40)
        assert not free[~ok].any()
        busy = n_compute - int(free.sum())
        assert occ * n_compute - 1 < busy <= occ * n_compute + 1e-9
        again = P.free_after_history(topo, occ, seed, job_nodes=[1, 12], events=40)
        assert np.array_equal(free, again)
        for nc in (None, "XE"):
            n = min(11, int((free & allowed(topo, nc)).sum()))
            pl = P.fragmented(topo, n, 1, occ, seed, [1, 12], 40, node_class=nc)
            check_valid(pl, topo, n, 1, free & allowed(topo, nc))
            assert np.array_equal(pl.task_node, ref_first(P.alps_order(topo), free & allowed(topo, nc), n, 1))
    a = P.free_after_history(topo, 0.5, 1, job_nodes=[1, 12], events=40)
    b = P.free_after_history(topo, 0.5, 2, job_nodes=[1, 12], events=40)
    assert not np.array_equal(a, b)
    with pytest.raises(ConfigError) as e:
        P.fragmented(topo, int(a.sum()) + 1, 1, 0.5, 1, [1, 12], 40)
    assert e.value.field == "placement.n_tasks"


def ref_prism_nodes(shape, offset):
    out = []
    for c in itertools.product(*[range(s) for s in shape]):
        r = router_of([(ci + oi) % d for ci, oi, d in zip(c, offset, DIMS)])
        out += [2 * r, 2 * r + 1]
    return np.array(out)


@pytest.mark.parametrize("node_class", [None, "XE", "XK"])
def test_subprism_matches_its_definition(topo, node_class):
    ok = allowed(topo, node_class)
    for shape, offset in (([2, 2, 3], [2, 0, 3]), ([3, 2, 2], [4, 3, 5]), ([6, 2, 2], [0, 2, 2])):
        nodes = ref_prism_nodes(shape, offset)
        nodes = nodes[ok[nodes]]
        if nodes.size == 0:
            with pytest.raises(ConfigError):
                P.subprism(topo, shape, offset, n_tasks=1, node_class=node_class)
            continue
        for tpn in (1, 2):
            n = nodes.size * tpn
            pl = P.subprism(topo, shape, offset, n_tasks=n, tasks_per_node=tpn, node_class=node_class)
            check_valid(pl, topo, n, tpn, ok)
            assert np.array_equal(pl.task_node, nodes[np.arange(n) // tpn])
            assert pl.name == "subprism " + "x".join(map(str, shape))
            with pytest.raises(ConfigError) as e:
                P.subprism(topo, shape, offset, n_tasks=n + 1, tasks_per_node=tpn, node_class=node_class)
            assert e.value.field == "placement.n_tasks"
    with pytest.raises(ConfigError) as e:  # holds the down router [1, 1, 1]
        P.subprism(topo, [2, 2, 2], [0, 0, 0], n_tasks=2)
    assert e.value.field == "placement.task_grid" and "down" in str(e.value)


def ref_features(topo, n, oneof, tpn, order, node_class):
    ok = allowed(topo, node_class)
    need = -(-n // tpn)
    down = {2 * router_of(r) for r in DOWN}
    pos = np.empty(topo.n_nodes, int)
    pos[P.alps_order(topo)] = np.arange(topo.n_nodes)
    for name in oneof:
        f = next(f for f in FEATURES if f["name"] == name)
        nodes = ref_prism_nodes(f["shape"], f["offset"])
        if down & set(nodes.tolist()):
            continue
        nodes = nodes[ok[nodes]]
        if nodes.size < need:
            continue
        if order == "alps":
            nodes = nodes[np.argsort(pos[nodes], kind="stable")]
        return name, nodes[:need][np.arange(n) // tpn]
    return None, None


@pytest.mark.parametrize("node_class", [None, "XE", "XK"])
@pytest.mark.parametrize("order", ["alps", "prism"])
def test_features_match_their_definition(topo, node_class, order):
    for oneof in (None, ["s0", "b"], ["b", "s0"], ["a"]):
        names = [f["name"] for f in FEATURES] if oneof is None else oneof
        for n, tpn in ((5, 1), (30, 2), (71, 1), (96, 1), (200, 3)):
            name, ref = ref_features(topo, n, names, tpn, order, node_class)
            if name is None:
                with pytest.raises(ConfigError) as e:
                    P.features(topo, n, oneof, tpn, order, node_class=node_class)
                assert e.value.field == "placement.n_tasks"
                continue
            pl = P.features(topo, n, oneof, tpn, order, node_class=node_class)
            check_valid(pl, topo, n, tpn, allowed(topo, node_class))
            assert pl.name == f"feature {name}/{tpn}"
            assert np.array_equal(pl.task_node, ref)


def test_topaware_uses_only_usable_routers(topo):
    for grid, tpn, nc in (([4, 4, 4], 2, None), ([2, 4, 8], 2, "XK"), ([8, 12], 2, "XE"), ([4, 2, 2, 4], 4, None)):
        n = math.prod(grid)
        ok = allowed(topo, nc)
        tiles = P.topaware(topo, grid, tpn, n_tasks=n, node_class=nc)
        check_valid(tiles, topo, n, tpn, ok)
        usable_router = ok.reshape(-1, 2).all(1)
        assert usable_router[tiles.task_node // 2].all()
        assert np.bincount(tiles.task_node, minlength=topo.n_nodes)[np.unique(tiles.task_node)].min() == tpn
        launch = P.topaware(topo, grid, tpn, n_tasks=n, node_class=nc, mapping="launcher")
        check_valid(launch, topo, n, tpn, ok)
        assert set(launch.task_node.tolist()) == set(tiles.task_node.tolist())  # the same nodes
        assert launch.name.startswith(tiles.name)
    with pytest.raises(ConfigError) as e:
        P.topaware(topo, [4, 4, 4], 2, n_tasks=63)
    assert e.value.field == "placement.grid"
    with pytest.raises(ConfigError) as e:
        P.topaware(topo, [6, 8, 12], 2, node_class="XK")
    assert e.value.field in ("placement.prism", "placement.n_tasks")


def test_rank_order_keeps_the_slots(topo):
    base = P.alps(topo, 64, 8)
    ro = {"method": "grid_order", "major": "C", "cell": [4, 2], "grid": [8, 8]}
    pl = P.alps(topo, 64, 8, rank_order=ro)
    order = P.grid_order([8, 8], [4, 2], "C")
    assert np.array_equal(pl.task_node[order], base.task_node)
    assert sorted(pl.task_node[[0, 1, 2, 3, 8, 9, 10, 11]].tolist()) == [base.task_node[0]] * 8  # the slides' -C
    assert "grid_order -C" in pl.name
    with pytest.raises(ConfigError) as e:
        P.alps(topo, 60, 8, rank_order=ro)
    assert e.value.field == "placement.rank_order.grid"


# ------------------------------------------------------------------------------------------------
# linear, random, torus_block, explicit
# ------------------------------------------------------------------------------------------------


def test_linear_and_random():
    df = ev.dragonfly(2, 4, 2, 5)
    N = df.n_nodes
    for tpn, first in ((1, 0), (2, 3), (3, 0)):
        n = (N - first) * tpn - 1
        pl = P.linear(df, n, tpn, first)
        assert np.array_equal(pl.task_node, first + np.arange(n) // tpn)
        with pytest.raises(ConfigError) as e:
            P.linear(df, n + 2, tpn, first)
        assert e.value.field in ("placement.first_node", "placement.n_tasks")
    for gen in ("threefry", "numpy"):
        draws = set()
        for seed in range(3):
            pl = P.fully_random(df, 2 * N, 2, seed, gen)
            check_valid(pl, df, 2 * N, 2)
            assert np.array_equal(pl.task_node, P.fully_random(df, 2 * N, 2, seed, gen).task_node)
            assert f"seed={seed}" in pl.name
            draws.add(tuple(P.fully_random(df, 7, 2, seed, gen).task_node))
        assert len(draws) == 3
        with pytest.raises(ConfigError) as e:
            P.fully_random(df, 2 * N + 1, 2, 0, gen)
        assert e.value.field == "placement.n_tasks"


def test_torus_block_matches_its_definition():
    t = torus((4, 2, 3), nodes_per_router=2)
    for grid in ((8, 2, 3), (2, 2, 3), (4, 4, 6), (8, 1, 3)):
        pl = P.torus_block(t, grid)
        blk = [g // d if g >= d else 1 for g, d in zip(grid, t.dims)]
        for task, x in enumerate(itertools.product(*[range(g) for g in grid])):
            r = np.ravel_multi_index(tuple(xi // b for xi, b in zip(x, blk)), t.dims)
            local = np.ravel_multi_index(tuple(xi % b for xi, b in zip(x, blk)), blk)
            assert pl.task_node[task] == 2 * r + local % 2
    with pytest.raises(ConfigError) as e:
        P.torus_block(t, (6, 2, 3))
    assert e.value.field == "placement.task_grid[0]"


def test_explicit_refuses_bad_ids():
    t = torus((2, 2), nodes_per_router=1)
    assert np.array_equal(P.explicit(t, [3, 3, 0]).task_node, [3, 3, 0])
    for bad in ([4], [-1], [0.5], []):
        with pytest.raises(ConfigError) as e:
            P.explicit(t, bad)
        assert e.value.field == "placement.task_node"


# ------------------------------------------------------------------------------------------------
# Dragonfly placements
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("gen", ["threefry", "numpy"])
def test_dragonfly_cartesian_and_random(gen):
    df = ev.dragonfly(2, 4, 2, 5)
    per = df.a * df.p
    x = np.array(np.unravel_index(np.arange(16), (4, 4))).T
    blk = x[:, 0] // 2
    local = np.ravel_multi_index(tuple((x % np.array((2, 4))).T), (2, 4))
    for go, no in itertools.product(("random", "linear"), repeat=2):
        draws = set()
        for seed in range(5):
            pl = P.dragonfly_cartesian(df, (4, 4), (2, 4), seed, go, no, gen)
            check_valid(pl, df, 16, 1)
            grp = pl.task_node // per
            assert all(np.unique(grp[blk == b]).size == 1 for b in range(2)) and np.unique(grp).size == 2
            if go == "linear":
                assert np.array_equal(grp, blk)
            if no == "linear":
                assert np.array_equal(pl.task_node % per, local)
            assert np.array_equal(pl.task_node, P.dragonfly_cartesian(df, (4, 4), (2, 4), seed, go, no, gen).task_node)
            draws.add(tuple(pl.task_node))
        assert (len(draws) == 1) if go == no == "linear" else (len(draws) >= 3)  # (20 group pairs: seeds may tie)
    draws = set()
    for seed in range(3):
        pl = P.dragonfly_random(df, 12, 4, seed, gen)
        check_valid(pl, df, 12, 1)
        counts = np.bincount(pl.task_node // per, minlength=df.g)
        assert sorted(counts.tolist()) == [0, 0, 4, 4, 4]
        draws.add(tuple(pl.task_node))
    assert len(draws) == 3
    with pytest.raises(ConfigError) as e:
        P.dragonfly_random(df, 24, 4, 0, gen)  # 6 groups of 4 on 5 groups
    assert e.value.field == "placement.tasks_per_group"


# ------------------------------------------------------------------------------------------------
# block (node hierarchy)
# ------------------------------------------------------------------------------------------------


def ref_block(topo, n, size, tpn, fill):
    """The module docstring, written out: blocks of ``size`` ranks into the smallest group with room."""
    groups = np.asarray(topo.node_groups())
    N = topo.n_nodes
    order = np.lexsort((np.arange(N),) + tuple(groups))
    rank = np.empty(N, int)
    rank[order] = np.arange(N)
    free = np.ones(N, bool)
    out = np.empty(n, int)
    L = groups.shape[0]
    for b0 in range(0, n, size):
        nb = min(size, n - b0)
        need = -(-nb // tpn)
        nodes = None
        for k in range(L):
            gids = sorted(set(groups[k].tolist()), key=lambda g: rank[groups[k] == g].min())
            cands = [g for g in gids if (free & (groups[k] == g)).sum() >= need]
            if not cands:
                continue
            if fill == "packed":
                g = cands[0]
            else:
                def key(g):
                    rep = np.flatnonzero(groups[k] == g)[0]
                    return tuple(-int((free & (groups[j] == groups[j][rep])).sum()) for j in range(L - 1, k - 1, -1)) \
                        + (rank[groups[k] == g].min(),)
                g = min(cands, key=key)
            nodes = order[(groups[k][order] == g) & free[order]][:need]
            break
        if nodes is None:
            nodes = order[free[order]][:need]
        if nodes.size < need:
            return None  # does not fit
        free[nodes] = False
        out[b0:b0 + nb] = nodes[np.arange(nb) // tpn]
    return out


@pytest.mark.parametrize("topology", [fat_tree(levels=3, k=4), fat_tree([2, 3, 2], [1, 2, 2]),
                                      ev.dragonfly(2, 4, 2, 5)], ids=lambda t: t.name)
def test_block_matches_its_definition(topology):
    N = topology.n_nodes
    for fill in ("packed", "spread"):
        for tpn, size in ((1, 3), (2, 4), (2, 5), (3, None), (1, 16)):
            for n in (1, 7, N // 2 + 1, N * tpn):
                ref = ref_block(topology, n, size or int(topology.router_nodes[1].max()) * tpn, tpn, fill)
                if ref is None:
                    with pytest.raises(ConfigError) as e:
                        P.block(topology, n, size, tpn, fill)
                    assert e.value.field == "placement.n_tasks"
                    continue
                pl = P.block(topology, n, size, tpn, fill)
                check_valid(pl, topology, n, tpn)
                assert np.array_equal(pl.task_node, ref)


def test_block_refuses_blocks_that_do_not_fit_the_nodes():
    """Slots suffice (16 nodes x 2 tasks) but a block of 3 tasks at 2 per node takes 2 nodes of its own: 8 blocks, 24
    tasks, is the most. 25 to 32 tasks raised IndexError from the first-free-node scan; now a ConfigError on
    placement.n_tasks naming the block size and the most that fit."""
    t = torus((2, 2, 2), nodes_per_router=2)
    for size, tpn, most in ((3, 2, 24), (1, 2, 16), (5, 3, 40), (4, 2, 32), (4, 3, 32), (7, 2, 28)):
        pl = P.block(t, most, size, tpn)
        check_valid(pl, t, most, tpn)
        assert np.array_equal(pl.task_node, ref_block(t, most, size, tpn, "packed"))
        for n in range(most + 1, tpn * t.n_nodes + 1):
            with pytest.raises(ConfigError) as e:
                P.block(t, n, size, tpn)
            assert e.value.field == "placement.n_tasks" and "placement.size" in str(e.value)
            assert f"at most {most} tasks" in str(e.value)


# ------------------------------------------------------------------------------------------------
# several jobs
# ------------------------------------------------------------------------------------------------


def test_exclusive_jobs_never_share_nodes(topo):
    tr = TR.random_permutation(8, 1e6, 1)
    a = P.subprism(topo, [2, 2, 1], [2, 0, 0], n_tasks=8)
    b = P.subprism(topo, [2, 2, 1], [3, 0, 0], n_tasks=8)  # shares routers x=3 with a
    with pytest.raises(ConfigError) as e:
        evaluate_jobs(topo, [Job(tr, a, name="a"), Job(tr, b, name="b")], "dor")
    assert e.value.field == "jobs[1].placement" and "jobs[0]" in str(e.value)


def test_block_refusal_through_the_config_names_where_the_tasks_come_from():
    from evaluator import config

    cfg = config.compose(["topology=torus", "topology.dims=[2,2,2]", "topology.nodes_per_router=2", "routing=dor",
                          "traffic=random_pairs", "traffic.n_tasks=25", "placement=block", "+placement.size=3",
                          "placement.tasks_per_node=2"])
    with pytest.raises(ConfigError) as e:
        config.build(config.to_object(cfg))
    assert e.value.field == "placement.n_tasks" and "at most 24 tasks" in str(e.value)
    assert "traffic.n_tasks = 25" in str(e.value)
