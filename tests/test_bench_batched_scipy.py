"""The bench's batched SciPy baseline (:meth:`SparseMatrixBaseline.apply_batch`) against its per-point apply and
the engine (no timings asserted).

* many placements of one traffic, in batches that split the points unevenly: link loads equal the per-point
  apply's and ``evaluate_batch``'s, and completion time, bottleneck link and mean hops equal the engine's, on a
  Dragonfly (minimal, Valiant; 2 parallel global links) and on tori with DOR (split ties, a mesh dimension, two
  nodes per router); same-node and same-router flows included; dense rank-one traffic on a Dragonfly;
* the batch size is chosen within the memory bound and a batch that would not fit is refused before anything
  is allocated;
* the bench keeps per routing class the faster of ``apply_batch``'s two ways (``batched``, ``per point``): both
  ways' metrics equal the engine's (sparse and dense traffic, Dragonflies and tori), and the selection
  (:func:`strongest`) picks the method with the fewest seconds given injected timings (no timing measured).
"""

from __future__ import annotations

import numpy as np
import pytest

from evaluator import placement as P
from evaluator import routing as RT
from evaluator import topology as T
from evaluator import traffic as TR
from evaluator.bench.baseline import BYTES_PER_ENTRY, METHODS, SparseMatrixBaseline, strongest
from evaluator.errors import ConfigError, ResourceError
from evaluator.evaluation import evaluate_batch
from evaluator.traffic import dense as structured
from tests.helpers import TOL

CASES = [
    (lambda: T.dragonfly(2, 4, 2), RT.minimal()),
    (lambda: T.dragonfly(2, 4, 2), RT.valiant()),
    (lambda: T.dragonfly(2, 4, 2, 5), RT.valiant()),  # 2 global links per group pair
    (lambda: T.torus((4, 4, 2)), RT.dor()),  # split ties on the 4-rings, a 2-ring
    (lambda: T.torus((4, 3, 6), wrap=(True, False, True), nodes_per_router=2), RT.dor("longest_first", "positive")),
]


def points(topo, n_points: int, seed: int):
    """Random flows between 2 x nodes tasks and ``n_points`` random placements of them."""
    rng = np.random.default_rng(seed)
    n, k, f = topo.n_nodes, 2 * topo.n_nodes, 300
    traffic = TR.from_flows(k, rng.integers(0, k, f), rng.integers(0, k, f), rng.random(f) * 1e6)
    return traffic, [P.explicit(topo, rng.integers(0, n, k)) for _ in range(n_points)]


def close(got, ref, label=""):
    ref = np.asarray(ref)
    assert np.asarray(got).shape == ref.shape
    scale = max(float(np.abs(ref).max(initial=0.0)), 1.0)
    np.testing.assert_allclose(got, ref, rtol=TOL["rel"], atol=TOL["rel"] * scale, err_msg=label)


@pytest.mark.parametrize("make,routing", CASES)
def test_batched_equals_per_point_and_engine(make, routing):
    topo = make()
    traffic, pls = points(topo, 7, seed=3)
    base = SparseMatrixBaseline(topo, routing)
    got = base.apply_batch(traffic, pls, batch_size=3, keep_link_load=True)  # batches of 3, 3 and 1
    label = f"{topo.name} {routing.label}"
    per_point = np.stack([SparseMatrixBaseline(topo, routing).link_loads(traffic, pl) for pl in pls])
    assert per_point.max() > 0
    close(got["link_load"], per_point, label)
    ours = evaluate_batch(topo, routing, traffic, pls, keep_link_load=True)
    close(got["link_load"], ours.link_load, label)
    close(got["completion_time"], ours.metrics["completion_time"], label)
    close(got["mean_hops"], ours.metrics["mean_hops"], label)
    np.testing.assert_array_equal(got["bottleneck_link"], ours.metrics["bottleneck_link"])
    again = base.apply_batch(traffic, pls)  # one batch of all points, the same metrics
    close(again["completion_time"], got["completion_time"], label)
    assert "link_load" not in again


def test_batched_dense_traffic_on_a_dragonfly():
    topo = T.dragonfly(2, 4, 2)
    n = topo.n_nodes
    rng = np.random.default_rng(5)
    pls = [P.explicit(topo, rng.permutation(n)) for _ in range(4)]
    for routing in (RT.minimal(), RT.valiant()):
        for traffic in (structured.all_to_all(n, 3.0),
                        structured.dense(n, rng.random(n) * (rng.random(n) < 0.7), rng.random(n), 1e3, name="w")):
            got = SparseMatrixBaseline(topo, routing).apply_batch(traffic, pls, batch_size=3, keep_link_load=True)
            base = SparseMatrixBaseline(topo, routing)
            close(got["link_load"], np.stack([base.link_loads(traffic, pl) for pl in pls]), traffic.name)
            ours = evaluate_batch(topo, routing, traffic, pls)
            close(got["completion_time"], ours.metrics["completion_time"], traffic.name)


def test_batch_size_bounded_and_refused(monkeypatch):
    topo = T.dragonfly(2, 4, 2)
    traffic, pls = points(topo, 6, seed=7)
    base = SparseMatrixBaseline(topo, RT.minimal())
    base.build()  # R (built once) is checked on its own; the batch bound is for the demand and the product
    one = base.batch_bytes(traffic, 1)
    assert base.batch_bytes(traffic, 4) == 4 * one  # linear in the points
    assert base.batch_size(traffic, 6) == 6  # all fit
    base.max_bytes = 2.5 * one  # two points fit: the chosen size, and the batches still cover every point
    assert base.batch_size(traffic, 6) == 2
    assert base.apply_batch(traffic, pls)["completion_time"].shape == (6,)
    with pytest.raises(ResourceError) as e:  # asked for more than fits: refused, naming the size and the bound
        base.apply_batch(traffic, pls, batch_size=4)
    assert e.value.field == "bench.scipy_batch_size" and "fewer points" in str(e.value)
    base.max_bytes = 0.5 * one  # not even one point
    with pytest.raises(ResourceError):
        base.batch_size(traffic, 6)
    with pytest.raises(ConfigError):
        SparseMatrixBaseline(topo, RT.minimal()).batch_size(traffic, 6, batch_size=0)
    monkeypatch.setenv("EVALUATOR_MEMORY_LIMIT", "1000")  # the machine's memory: nothing fits
    with pytest.raises(ResourceError) as e:
        SparseMatrixBaseline(topo, RT.minimal()).apply_batch(traffic, pls)
    assert "available" in str(e.value)


def test_torus_batch_matrix_within_its_estimate():
    """A torus's per-batch R (over the batch's router pairs) is within the batch's estimate, and refused with
    the routing-matrix error when it would exceed ``max_bytes``."""
    topo = T.torus((4, 4, 2))
    traffic, pls = points(topo, 3, seed=9)
    base = SparseMatrixBaseline(topo, RT.dor())
    assert base.apply_batch(traffic, pls)["completion_time"].shape == (3,)
    assert base.R.shape[0] == topo.n_router_links and 0 < base.R.nnz
    assert BYTES_PER_ENTRY * base.R.nnz <= base.batch_bytes(traffic, 3)
    base.max_bytes = BYTES_PER_ENTRY * base.R.nnz - 1  # R alone no longer fits
    nr = np.asarray(topo.node_router)
    sr = np.concatenate([nr[pl.task_node[traffic.src]] for pl in pls])
    dr = np.concatenate([nr[pl.task_node[traffic.dst]] for pl in pls])
    with pytest.raises(ResourceError) as e:
        base._pair_matrix(sr, dr)
    assert e.value.field == "bench.scipy_baseline"


def test_torus_one_column_per_flow(monkeypatch):
    """A torus too large for the router-pair lookup table (Mira) gives R one column per (point, flow): the same
    loads."""
    import evaluator.bench.baseline as baseline

    topo = T.torus((4, 4, 2))
    traffic, pls = points(topo, 3, seed=4)
    want = SparseMatrixBaseline(topo, RT.dor()).apply_batch(traffic, pls, keep_link_load=True)
    monkeypatch.setattr(baseline, "PAIR_TABLE_MAX", 0)
    base = SparseMatrixBaseline(topo, RT.dor())
    got = base.apply_batch(traffic, pls, keep_link_load=True)
    assert base.R.shape[1] == 3 * traffic.n_flows
    close(got["link_load"], want["link_load"])
    close(got["completion_time"], want["completion_time"])


@pytest.mark.parametrize("make,routing", CASES)
def test_both_methods_equal_the_engine(make, routing):
    """Whichever way the bench keeps for a class, its metrics are the engine's: both ways on the same points (in
    uneven batches) give the engine's completion time, bottleneck link, mean hops and link loads."""
    topo = make()
    traffic, pls = points(topo, 5, seed=11)
    ours = evaluate_batch(topo, routing, traffic, pls, keep_link_load=True)
    label = f"{topo.name} {routing.label}"
    got = {}
    for method in METHODS:
        base = SparseMatrixBaseline(topo, routing)
        got[method] = base.apply_batch(traffic, pls, batch_size=2, keep_link_load=True, method=method)
        close(got[method]["link_load"], ours.link_load, f"{label} {method}")
        close(got[method]["completion_time"], ours.metrics["completion_time"], f"{label} {method}")
        close(got[method]["mean_hops"], ours.metrics["mean_hops"], f"{label} {method}")
        np.testing.assert_array_equal(got[method]["bottleneck_link"], ours.metrics["bottleneck_link"])
        if not base.per_pair:  # a torus builds R in the call, either way: its share is recorded
            assert base.last_build_s > 0
    # the selection's choice (here per point, from injected times) gives the same metrics as the other way
    chosen = strongest({"batched": 2.0, "per point": 1.0})
    assert chosen == "per point"
    close(got[chosen]["completion_time"], got["batched"]["completion_time"], label)


def test_per_point_dense_traffic():
    """Dense rank-one traffic: the per-point way (a Dragonfly: ``R @ outer(U, V)`` per point; a torus: listed,
    ``R`` per point) equals the engine's."""
    rng = np.random.default_rng(8)
    for topo, routing in ((T.dragonfly(2, 4, 2), RT.valiant()), (T.dragonfly(2, 4, 2), RT.minimal()),
                          (T.torus((4, 4, 2)), RT.dor())):
        n = topo.n_nodes
        pls = [P.explicit(topo, rng.permutation(n)) for _ in range(3)]
        traffic = structured.dense(n, rng.random(n) * (rng.random(n) < 0.7), rng.random(n), 1e3, name="w")
        got = SparseMatrixBaseline(topo, routing).apply_batch(traffic, pls, batch_size=2, method="per point")
        ours = evaluate_batch(topo, routing, traffic, pls)
        close(got["completion_time"], ours.metrics["completion_time"], f"{topo.name} {routing.label}")


def test_strongest_picks_the_faster_method():
    """The selection, given injected timings: the fewest seconds wins, whichever way it is; ties keep the first
    method; an untimed (nan) way never wins over a timed one; an unknown method is refused by apply_batch."""
    assert strongest({"batched": 0.5, "per point": 0.9}) == "batched"
    assert strongest({"batched": 1.3, "per point": 0.7}) == "per point"
    assert strongest({"batched": 1.0, "per point": 1.0}) == "batched"
    assert strongest({"per point": 1.0, "batched": 1.0}) == "per point"
    assert strongest({"batched": float("nan"), "per point": 3.0}) == "per point"
    assert strongest({"per point": 0.2}) == "per point"
    with pytest.raises(ValueError):
        strongest({})
    topo = T.dragonfly(2, 4, 2)
    traffic, pls = points(topo, 2, seed=1)
    with pytest.raises(ConfigError):
        SparseMatrixBaseline(topo, RT.minimal()).apply_batch(traffic, pls, method="dense")


def test_bench_keeps_the_faster_method_per_class(monkeypatch):
    """``_small_scipy`` keeps, per (beta, routing) class, the way with the smaller median time (injected through a
    fake clock: batched is made slow for Valiant and fast for minimal), reports both, sums the kept ones, and
    checks both ways against the engine."""
    import importlib
    import itertools
    import types

    from evaluator.bench import baseline

    bench_run = importlib.import_module("evaluator.bench._small")  # scenario 1's module

    topo = T.dragonfly(2, 4, 2)
    routings = (RT.minimal(), RT.valiant())
    traffic, pls = points(topo, 4, seed=2)
    beta = (2, 2, 2)
    configs = [(beta, (1, 1, 1))]
    placements = {configs[0]: pls}
    cost = {("minimal", "batched"): 1.0, ("minimal", "per point"): 3.0,
            ("valiant", "batched"): 5.0, ("valiant", "per point"): 2.0}
    clock = itertools.count()
    now = [0.0]
    real = baseline.SparseMatrixBaseline.apply_batch

    def fake_apply(self, *a, method="batched", **k):
        now[0] += cost[(self.routing.kind, method)]
        return real(self, *a, method=method, **k)

    monkeypatch.setattr(baseline.SparseMatrixBaseline, "apply_batch", fake_apply)
    fake_time = types.SimpleNamespace(perf_counter=lambda: now[0] + 1e-9 * next(clock))
    monkeypatch.setattr(bench_run, "time", fake_time)  # the bench module's clock only
    out = bench_run._small_scipy(topo, routings, configs, {beta: traffic}, placements, [0, 1, 2, 3], repeats=3,
                                 n_checked=2)
    cls = out["classes"]
    assert cls["minimal beta=2x2x2"]["method"] == "batched" and cls["valiant beta=2x2x2"]["method"] == "per point"
    assert cls["valiant beta=2x2x2"]["by_method_s"]["batched"] == pytest.approx(5.0)
    assert out["seconds"] == pytest.approx(1.0 + 2.0)
    assert out["max_rel_dev"] <= TOL["rel"] and out["max_rel_dev_time"] <= TOL["rel"]
