"""Audit: the numbers do not depend on how the work was cut.

One small sweep (a 4x4 torus at 3 GB/s, DOR with both tie rules, random permutations of 7,654,321 bytes per task,
random placements drawn from seeds, a task count that does not fit the machine, link loads kept) is run in this
process three ways:

* ``alone``: chunks of one point (every block and every vmapped step one point);
* ``resumed``: chunks of 5 (blocks mixing feasible and infeasible points), stopped after 3 chunks and resumed;
* ``permuted``: one chunk per network, every axis's values in another order.

Each must give the same dataset, bit for bit (the permuted one after reordering its coordinates), and each feasible
point must equal a per-flow walk written here: every flow along its DOR path, link by link (integer byte counts
and halves: the loads are exact), with ``completion_time = max(load / capacity)`` correctly rounded (NumPy's
division). :func:`evaluator.evaluate_batch` at block sizes 1, 3 and 64 and :func:`evaluator.evaluate` point by
point must give those numbers too.

Documented tolerance: with byte counts that are not integers, ``total_bytes`` (and the throughputs made from it)
sums a point's flows padded to the flow bucket of its batch, and XLA's vectorised sum then groups them by the
padded length: the last bits may change with the batch's other traffics (within ``TOL["rel_sum"]``). Link loads
(a scatter in flow order), ``completion_time``, ``mean_hops`` and the bottleneck stay bit for bit.

Defect found (fixed in evaluator/kernel.py, _own): under ``vmap`` XLA turned ``max_load / capacity`` into a
product with the capacity's rounded reciprocal (the capacities are one row shared by every point), so
``completion_time`` was the correctly rounded quotient only when a step held one point: ``evaluate`` and
``evaluate_batch(block_size=1)`` gave one number, blocks of 2 or more (and a sweep's chunks of 2 or more) another,
one unit in the last place away, for 8 of 40 random points on this torus.
"""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest

import evaluator as ev
from evaluator import config
from evaluator import placement as P
from evaluator import traffic as T
from evaluator.config import RayConfig

from evaluator.errors import ConfigError
from evaluator.query import open_results
from evaluator.sweep import plan_sweep, run_sweep
from tests.helpers import TOL, run_free

NO_RAY = RayConfig(enabled=False)
DIMS = (4, 4)
BW = 3.0e9
NBYTES = 7654321.0
BASE = ["topology=torus", "topology.dims=[4,4]", f"topology.link_bandwidth={BW}", "routing=dor",
        "traffic=random_permutation", f"traffic.bytes={NBYTES}", "placement=random", "sweep.keep_link_load=true"]
AXES = {"traffic.n_tasks": [16, 20, 9], "placement.seed": [0, 1, 2, 3, 4, 5], "routing.tie": ["split", "positive"]}
PERMUTED = {"traffic.n_tasks": [9, 16, 20], "placement.seed": [5, 3, 1, 0, 2, 4], "routing.tie": ["positive", "split"]}
FLOATS = ("completion_time", "throughput", "effective_injection_bandwidth", "mean_hops", "total_bytes",
          "off_node_bytes", "max_load_torus_dim0", "max_load_torus_dim1", "max_load_injection", "max_load_ejection")


def _plan(out, axes, chunk):
    ov = [*BASE, f"sweep.chunk_size={chunk}", f"sweep.output_dir={out}"]
    return plan_sweep(config.compose_sweep(ov, axes=copy.deepcopy(axes)))


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    out = tmp_path_factory.mktemp("shapes")
    alone_plan = _plan(out / "alone", AXES, 1)
    alone = open_results(run_sweep(alone_plan, NO_RAY, progress=False))
    part = _plan(out / "resumed", AXES, 5)
    assert run_sweep(part, NO_RAY, progress=False, stop_after=3) is None  # interrupted after 3 chunks
    resumed = open_results(run_sweep(_plan(out / "resumed", AXES, 5), NO_RAY, progress=False))
    permuted = open_results(run_sweep(_plan(out / "permuted", PERMUTED, 64), NO_RAY, progress=False))
    return {"plan": alone_plan, "chunks5": part.chunks(), "alone": run_free(alone), "resumed": run_free(resumed),
            "permuted": run_free(permuted)}


# ------------------------------------------------------------------ the reference walk

def _ring(a: int, b: int, k: int, tie: str) -> list[tuple[float, int, int]]:
    """``(weight, step, hops)`` of one ring's part of a DOR path (half a ring: half each way or all positive)."""
    d = (b - a) % k
    if d == 0:
        return [(1.0, 0, 0)]
    if 2 * d == k:
        return [(0.5, 1, d), (0.5, -1, d)] if tie == "split" else [(1.0, 1, d)]
    return [(1.0, 1, d)] if 2 * d < k else [(1.0, -1, k - d)]


def _link_index(topo):
    """``(src router, dst router) -> link`` of the router links, and the node links' first indices."""
    src, dst = np.asarray(topo.link_src), np.asarray(topo.link_dst)
    names = np.asarray(topo.link_class_names())
    idx = {}
    for i in np.flatnonzero(np.char.startswith(names.astype(str), "torus-dim")):
        key = (int(src[i]), int(dst[i]))
        assert key not in idx  # (rings of 4: one link each way between neighbours)
        idx[key] = int(i)
    return idx


def walk(topo, task_node, src, dst, nbytes, tie):
    """Every flow along its DOR path (dimensions in the order given): the bytes on every link."""
    load = np.zeros(topo.n_links)
    idx = _link_index(topo)
    for s, d, b in zip(src, dst, nbytes):
        a, z = int(task_node[s]), int(task_node[d])  # one node per router: node id = router id
        if a == z or b == 0:
            continue
        load[topo.injection_link(a)] += b
        load[topo.ejection_link(z)] += b
        paths = [(1.0, list(np.unravel_index(a, DIMS)))]
        target = np.unravel_index(z, DIMS)
        for dim in range(len(DIMS)):
            nxt = []
            for w, pos in paths:
                for w2, step, hops in _ring(pos[dim], int(target[dim]), DIMS[dim], tie):
                    p = list(pos)
                    for _ in range(hops):
                        q = list(p)
                        q[dim] = (p[dim] + step) % DIMS[dim]
                        link = idx[(int(np.ravel_multi_index(p, DIMS)), int(np.ravel_multi_index(q, DIMS)))]
                        load[link] += w * w2 * b
                        p = q
                    nxt.append((w * w2, p))
            paths = nxt
    return load


def expect(topo, load, nbytes):
    """The metrics a walk's loads give (``completion_time`` correctly rounded: NumPy divides element by element)."""
    cap = np.asarray(topo.capacity, np.float64)
    ct = float((load / cap).max())
    n_rl = topo.n_router_links
    off = float(load[n_rl:n_rl + topo.n_nodes].sum())
    return {"completion_time": ct, "total_bytes": math.fsum(nbytes), "off_node_bytes": off,
            "mean_hops": float(load[:n_rl].sum()) / off, "bottleneck_link": int(np.argmax(load / cap))}


def _point(plan, flat):
    """The inputs of one sweep point built on the host: (topology, traffic, placement, tie), or None: infeasible."""
    cfg = plan.point_config(flat)
    topo = config.build_topology(cfg.topology)
    try:
        tr = config.build_traffic(cfg.traffic, topo)
        pl = config.build_placement(cfg.placement, topo, cfg.traffic, tr.n_tasks, cfg.topology)
    except ConfigError:
        return None
    return topo, tr, pl, cfg.routing.tie


# ------------------------------------------------------------------ the sweep, cut three ways

def test_chunks_of_five_mix_feasible_and_infeasible_points(runs):
    """(So that the equalities below compare points that had an infeasible neighbour in their chunk with the same
    points alone.)"""
    plan, ds = runs["plan"], runs["alone"]
    feas = ds.feasible.values.reshape(-1)
    mixed = [cid for cid, pts in runs["chunks5"] if feas[pts].any() and not feas[pts].all()]
    assert mixed and len(runs["chunks5"]) < plan.n_points
    assert int(feas.sum()) == 24 and plan.n_points == 36


@pytest.mark.parametrize("name", ["resumed", "permuted"])
def test_the_cut_and_the_order_of_the_values_change_nothing(runs, name):
    a, b = runs["alone"], runs[name]
    if name == "permuted":
        assert list(b["traffic.n_tasks"].values) == [str(v) for v in PERMUTED["traffic.n_tasks"]]
        b = b.sel({k: a[k].values for k in AXES})  # the same rows, in the first sweep's order
    assert sorted(a.data_vars) == sorted(b.data_vars)
    for v in a.data_vars:
        x, y = a[v].values, b[v].values
        assert x.shape == y.shape, v
        if x.dtype.kind == "f":
            assert np.array_equal(x, y, equal_nan=True), (v, np.nanmax(np.abs(x - y)))
        else:
            assert np.array_equal(x, y), v
    for k in AXES:
        assert list(a[k].values) == list(b[k].values)


@pytest.mark.parametrize("name", ["alone", "resumed", "permuted"])
def test_every_point_is_its_walk_bit_for_bit(runs, name):
    plan, ds = runs["plan"], runs[name]
    if name == "permuted":
        ds = ds.sel({k: runs["alone"][k].values for k in AXES})
    shape = ds.completion_time.shape
    for flat in range(plan.n_points):
        at = {k: np.asarray(ds[k].values[np.unravel_index(flat, shape)]) for k in
              ("completion_time", "total_bytes", "off_node_bytes", "mean_hops", "feasible", "reason", "link_load")}
        pt = _point(plan, flat)
        if pt is None:
            assert not at["feasible"] and "n_tasks" in str(at["reason"]), (flat, at["reason"])
            assert np.isnan(at["completion_time"])
            continue
        topo, tr, pl, tie = pt
        load = walk(topo, pl.task_node, tr.src, tr.dst, tr.nbytes, tie)
        ref = expect(topo, load, tr.nbytes)
        assert at["feasible"], flat
        assert np.array_equal(at["link_load"], load), (flat, np.abs(at["link_load"] - load).max())
        for k in ("completion_time", "total_bytes", "off_node_bytes"):
            assert float(at[k]) == ref[k], (name, flat, k, float(at[k]), ref[k])
        assert float(at["mean_hops"]) == pytest.approx(ref["mean_hops"], rel=TOL["rel_sum"])


# ------------------------------------------------------------------ the batch API, cut into blocks

@pytest.fixture(scope="module")
def batch_points(runs):
    """The sweep's feasible points of the ``split`` tie, built on the host."""
    plan = runs["plan"]
    pts = [(flat, _point(plan, flat)) for flat in range(plan.n_points)]
    pts = [(f, p) for f, p in pts if p is not None and p[3] == "split"]
    assert len(pts) == 12
    return pts


@pytest.mark.parametrize("block", [1, 3, 64])
def test_evaluate_batch_at_any_block_size_is_the_walk_and_the_sweep(runs, batch_points, block):
    topo = batch_points[0][1][0]
    trs = [p[1] for _, p in batch_points]
    pls = [p[2] for _, p in batch_points]
    res = ev.evaluate_batch(topo, ev.dor(tie="split"), trs, pls, keep_link_load=True, block_size=block)
    sweep_ct = runs["alone"].completion_time.values.reshape(-1)
    for i, (flat, (_, tr, pl, tie)) in enumerate(batch_points):
        load = walk(topo, pl.task_node, tr.src, tr.dst, tr.nbytes, tie)
        ref = expect(topo, load, tr.nbytes)
        assert np.array_equal(res.link_load[i], load), (block, flat)
        for k in ("completion_time", "total_bytes", "off_node_bytes", "bottleneck_link"):
            assert res.metrics[k][i] == ref[k], (block, flat, k, res.metrics[k][i], ref[k])
        assert res.metrics["completion_time"][i] == sweep_ct[flat], (block, flat)


def test_evaluate_point_by_point_is_the_walk(batch_points):
    for flat, (topo, tr, pl, tie) in batch_points[::3]:
        one = ev.evaluate(topo, tr, pl, ev.dor(tie=tie))
        load = walk(topo, pl.task_node, tr.src, tr.dst, tr.nbytes, tie)
        ref = expect(topo, load, tr.nbytes)
        assert np.array_equal(one.link_load.values, load), flat
        assert float(one.completion_time) == ref["completion_time"], flat


def _mixed_traffics(topo, integer: bool):
    """Forty traffics of 2-16 tasks (flow counts from 2 to 240: several flow buckets in one batch)."""
    rng = np.random.default_rng(2)
    trs, pls = [], []
    for i in range(40):
        n = int(rng.integers(2, 17))
        m = rng.integers(0, 9, (n, n)).astype(float) * NBYTES
        if not integer:
            m = m / 7.0
        np.fill_diagonal(m, 0)
        trs.append(T.from_matrix(m))
        pls.append(P.fully_random(topo, n, seed=i))
    return trs, pls


@pytest.mark.parametrize("integer", [True, False])
def test_blocks_of_mixed_traffics(integer):
    """The 40 points of :func:`_mixed_traffics` at block sizes 1, 2, 8 and 64: link loads, completion time, mean hops
    and bottleneck bit for bit (and completion time the walk's correctly rounded quotient); ``total_bytes`` exact
    with integer bytes, within ``TOL["rel_sum"]`` otherwise (see the module's documented tolerance)."""
    topo = ev.torus(list(DIMS), link_bandwidth=BW)
    trs, pls = _mixed_traffics(topo, integer)
    refs = []
    for tr, pl in zip(trs, pls):
        load = walk(topo, pl.task_node, tr.src, tr.dst, tr.nbytes, "split")
        refs.append((load, expect(topo, load, tr.nbytes)))
    first = None
    for block in (1, 2, 8, 64):
        res = ev.evaluate_batch(topo, "dor", trs, pls, keep_link_load=True, block_size=block)
        for i, (load, ref) in enumerate(refs):
            np.testing.assert_allclose(res.link_load[i], load, rtol=TOL["rel"], atol=0)
            assert res.metrics["total_bytes"][i] == pytest.approx(ref["total_bytes"], rel=TOL["rel_sum"])
            if integer:
                assert np.array_equal(res.link_load[i], load), (block, i)
                assert res.metrics["total_bytes"][i] == ref["total_bytes"], (block, i)
            ct = float((res.link_load[i] / np.asarray(topo.capacity)).max())
            assert res.metrics["completion_time"][i] == ct, (block, i, res.metrics["completion_time"][i], ct)
        if first is None:
            first = res
            continue
        assert np.array_equal(res.link_load, first.link_load), block
        for k in ("completion_time", "mean_hops", "off_node_bytes", "bottleneck_link", "bottleneck_class"):
            assert np.array_equal(res.metrics[k], first.metrics[k]), (block, k)


def test_one_point_alone_equals_the_same_point_in_a_batch_of_larger_traffics():
    """A 2-task point alone (flows padded to 16) and beside a 16-task all-to-all (padded to 256)."""
    topo = ev.torus(list(DIMS), link_bandwidth=BW)
    small = T.from_flows(2, [0, 1], [1, 0], [NBYTES, 3 * NBYTES])
    big = T.from_matrix(np.full((16, 16), NBYTES) - np.diag(np.full(16, NBYTES)))
    pl_s, pl_b = P.fully_random(topo, 2, seed=7), P.fully_random(topo, 16, seed=8)
    alone = ev.evaluate(topo, small, pl_s, "dor")
    batch = ev.evaluate_batch(topo, "dor", [big, small, big], [pl_b, pl_s, pl_b], keep_link_load=True, block_size=2)
    load = walk(topo, pl_s.task_node, small.src, small.dst, small.nbytes, "split")
    ref = expect(topo, load, small.nbytes)
    assert np.array_equal(alone.link_load.values, load) and np.array_equal(batch.link_load[1], load)
    for k in ("completion_time", "total_bytes", "off_node_bytes", "mean_hops"):
        assert float(alone[k]) == batch.metrics[k][1], k
    assert float(alone.completion_time) == ref["completion_time"] == batch.metrics["completion_time"][1]
    big_load = walk(topo, pl_b.task_node, big.src, big.dst, big.nbytes, "split")
    assert np.array_equal(batch.link_load[0], big_load) and np.array_equal(batch.link_load[2], big_load)
