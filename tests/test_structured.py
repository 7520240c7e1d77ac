"""The fast paths against the per-flow reference (``tests/reference.py``), link for link.

* dense rank-one traffic (:mod:`evaluator.structured`: uniform all-to-all,
  many-to-many, weighted), never materialised by the evaluator, against the
  reference walking the materialised flow list — tori (per-dimension
  factorisation) and Dragonflies (group aggregation, minimal and Valiant);
* the torus difference lines (prefix sums per ring) on long rings and meshes, and the group-aggregated
  Valiant with parallel global links, against the reference;
* batching: shared flow lists, per-point flow lists of different sizes,
  dense and sparse points mixed, blocks that do not divide the point count —
  every point equal to the reference;
* the benchmark's own per-flow baseline (``evaluator.bench.baseline``) against the
  reference;
* the Mira patterns of the benchmark on a small 5D torus of the same class.
"""

from __future__ import annotations

import numpy as np
import pytest

from evaluator import placement as P
from evaluator import routing as RT
from evaluator import structured as S
from evaluator import topology as T
from evaluator import traffic as TR
from evaluator.evaluation import bucket_size, evaluate, evaluate_batch
from tests.helpers import TOL

try:
    from tests.reference import reference_link_loads
except ImportError:  # pragma: no cover
    from reference import reference_link_loads

RTOL = TOL["rel"]
ATOL = TOL["bytes"]


def as_dict(r: RT.Routing) -> dict:
    return {"kind": r.kind, "order": getattr(r, "order", "as_given"), "tie": getattr(r, "tie", "split")}


def ref_loads(topo, traffic, placement, routing):
    if isinstance(traffic, S.DenseTraffic):
        traffic = traffic.to_traffic()
    flows = zip(traffic.src.tolist(), traffic.dst.tolist(), traffic.nbytes.tolist())
    return reference_link_loads(topo, flows, placement.task_node, as_dict(routing))


def assert_loads(got, ref, label=""):
    got = np.asarray(got)
    assert got.shape == ref.shape
    scale = max(1.0, float(np.abs(ref).max()))
    np.testing.assert_allclose(got, ref, rtol=RTOL, atol=ATOL * scale / 1e6 + ATOL, err_msg=label)


def check(topo, traffic, placement, routing):
    ds = evaluate(topo, traffic, placement, routing)
    ref = ref_loads(topo, traffic, placement, routing)
    assert_loads(ds["link_load"].values, ref, f"{topo.name} {routing.label} {traffic.name}")
    assert float(ds["completion_time"]) == pytest.approx(float(np.max(ref / topo.capacity)), rel=TOL["rel"])
    flows = traffic.to_traffic() if isinstance(traffic, S.DenseTraffic) else traffic
    assert float(ds["total_bytes"]) == pytest.approx(flows.total_bytes, rel=TOL["rel"])
    tn = placement.task_node
    leaving = flows.nbytes[tn[flows.src] != tn[flows.dst]].sum()
    assert float(ds["off_node_bytes"]) == pytest.approx(leaving, rel=TOL["rel"], abs=TOL["bytes"])
    if leaving > 0:
        assert float(ds["mean_hops"]) == pytest.approx(ref[: topo.n_router_links].sum() / leaving, rel=TOL["rel_sum"])
    sent = flows.sent_per_task()
    busy = float(ds["completion_time"]) > 0
    if busy:
        expect = flows.total_bytes / max(int((sent > 0).sum()), 1) / float(ds["completion_time"])
        assert float(ds["effective_injection_bandwidth"]) == pytest.approx(expect, rel=TOL["rel"])
    return ds


# --------------------------------------------------------------------------------------
# Dense rank-one traffic
# --------------------------------------------------------------------------------------

DENSE_TORI = [
    (lambda: T.torus((4, 3, 2)), RT.dor()),
    (lambda: T.torus((4, 2, 6), wrap=(True, False, True), nodes_per_router=2), RT.dor("longest_first", "positive")),
    (lambda: T.torus((6, 5)), RT.dor((1, 0), "split")),
    (lambda: T.torus((3, 4), wrap=False), RT.dor()),
    (lambda: T.torus((2, 1, 4, 2)), RT.dor("longest_first")),
    (lambda: T.torus((4, 2, 2, 2, 2)), RT.dor("longest_first")),
]

DENSE_DRAGONFLIES = [
    (lambda: T.dragonfly(2, 4, 2, 9), RT.minimal()),
    (lambda: T.dragonfly(2, 4, 2, 9), RT.valiant()),
    (lambda: T.dragonfly(2, 4, 2, 5), RT.valiant()),  # two parallel global links per group pair
    (lambda: T.dragonfly(1, 3, 3, 4, arrangement="relative"), RT.valiant()),  # three parallel links
    (lambda: T.dragonfly(2, 3, 3, 4), RT.minimal()),
    (lambda: T.dragonfly(1, 2, 1, 3), RT.valiant()),  # the smallest Valiant: one intermediate group
]


def dense_cases(topo, seed):
    """All-to-all on every node, and weighted / sparse / crowded variants."""
    rng = np.random.default_rng(seed)
    n = topo.n_nodes
    yield S.all_to_all(n, 3.0), P.linear(topo, n)
    m = max(2, n // 2)
    yield S.all_to_all(m, 2.5), P.fully_random(topo, m, seed=seed)  # half of the nodes
    k = n // 2 + 5
    yield S.all_to_all(k, 1.0), P.explicit(topo, rng.integers(0, n // 2 + 1, k))  # several tasks per node
    w = S.dense(n, rng.random(n) * (rng.random(n) < 0.7), rng.random(n) * 4.0, 1e3, name="weighted")
    yield w, P.explicit(topo, rng.permutation(n))
    for mode in ("disjoint", "overlap", "subset", "superset"):
        mm = S.many_to_many(max(1, n // 3), max(1, n // 4) if mode == "subset" else max(1, n // 2), 7.0,
                            mode=mode)
        yield mm, P.fully_random(topo, mm.n_tasks, seed=seed + 1)


@pytest.mark.parametrize("make,routing", DENSE_TORI + DENSE_DRAGONFLIES)
def test_dense_traffic_matches_reference(make, routing):
    topo = make()
    for traffic, placement in dense_cases(topo, seed=3):
        check(topo, traffic, placement, routing)


def test_dense_all_to_all_is_the_flow_list_all_to_all():
    a = S.all_to_all(7, 2.0).to_traffic()
    b = TR.all_to_all(7, 2.0)
    assert sorted(zip(a.src, a.dst, a.nbytes)) == sorted(zip(b.src, b.dst, b.nbytes))
    for mode in ("disjoint", "overlap", "subset", "superset"):
        n_dst = 3 if mode == "subset" else 6
        a = S.many_to_many(4, n_dst, 1.5, mode=mode).to_traffic()
        b = TR.many_to_many(4, n_dst, 1.5, mode=mode)
        assert a.n_tasks == b.n_tasks
        assert sorted(zip(a.src, a.dst, a.nbytes)) == sorted(zip(b.src, b.dst, b.nbytes))
    d = S.dense(5, [1, 0, 2, 1, 1], [0, 1, 1, 3, 1], 2.0)
    assert d.n_flows == d.to_traffic().n_flows
    assert d.total_bytes == pytest.approx(d.to_traffic().total_bytes)
    np.testing.assert_allclose(d.sent_per_task(), d.to_traffic().sent_per_task())


def test_uniform_all_to_all_on_a_torus_loads_every_link_of_a_class_equally():
    """Translation invariance: on a full torus every +k link carries (R/n_k) * sum_delta hops_k(delta)."""
    topo = T.torus((6, 4, 5))
    ds = evaluate(topo, S.all_to_all(topo.n_nodes, 1.0), P.linear(topo, topo.n_nodes), RT.dor())
    load = ds["link_load"].values[: topo.n_router_links]
    cls = np.asarray(topo.link_class[: topo.n_router_links])
    for k, n in enumerate(topo.dims):
        # R pairs per displacement; R/n displacements per ring offset d; 2R links; ties split evenly
        expect = topo.n_routers / n * sum(min(d, n - d) for d in range(1, n)) / 2.0
        np.testing.assert_allclose(load[cls == k], expect, rtol=TOL["rel"])


# --------------------------------------------------------------------------------------
# Sparse fast paths: long runs, meshes, parallel global links
# --------------------------------------------------------------------------------------

SPARSE = [
    (lambda: T.torus((12,)), RT.dor()),
    (lambda: T.torus((11, 3)), RT.dor(tie="positive")),
    (lambda: T.torus((9,), wrap=False), RT.dor()),
    (lambda: T.torus((8, 2, 5), wrap=(True, True, False), nodes_per_router=3), RT.dor("longest_first")),
    (lambda: T.dragonfly(3, 4, 2, 5), RT.valiant()),
    (lambda: T.dragonfly(2, 6, 1, 4), RT.valiant()),  # two parallel links, ports unused
    (lambda: T.dragonfly(1, 2, 1, 3, arrangement="relative"), RT.minimal()),
]


@pytest.mark.parametrize("make,routing", SPARSE)
def test_sparse_fast_paths_match_reference(make, routing):
    topo = make()
    rng = np.random.default_rng(11)
    n = topo.n_nodes
    k = 3 * n
    src = rng.integers(0, k, 6 * k)
    dst = rng.integers(0, k, 6 * k)
    nbytes = rng.integers(1, 10**6, 6 * k) * rng.choice([1.0, 0.25, 1e-3], 6 * k)
    traffic = TR.from_flows(k, src, dst, nbytes)
    placement = P.explicit(topo, rng.integers(0, n, k))
    check(topo, traffic, placement, routing)


# --------------------------------------------------------------------------------------
# Batching
# --------------------------------------------------------------------------------------


def test_batch_shared_flows_every_point_matches_reference():
    topo = T.dragonfly(2, 4, 2, 9)
    traffic = TR.stencil((4, 4, 2), (4, 4, 2), 8.0)
    pls = [P.dragonfly_cartesian(topo, (4, 4, 2), (2, 2, 2), seed=s) for s in range(11)]
    for routing in (RT.minimal(), RT.valiant()):
        res = evaluate_batch(topo, routing, traffic, pls, keep_link_load=True, chunk_size=4)
        assert res.link_load.shape == (11, topo.n_links)
        for i, pl in enumerate(pls):
            ref = ref_loads(topo, traffic, pl, routing)
            assert_loads(res.link_load[i], ref, f"point {i}")
            assert res.metrics["completion_time"][i] == pytest.approx(float(np.max(ref / topo.capacity)), rel=TOL["rel"])
        lean = evaluate_batch(topo, routing, traffic, pls, chunk_size=4)
        assert lean.link_load is None
        for k, v in lean.metrics.items():
            np.testing.assert_array_equal(v, res.metrics[k], err_msg=k)


def test_batch_mixed_traffics_sizes_and_dense_points():
    topo = T.torus((4, 3, 2), nodes_per_router=2)
    routing = RT.dor("longest_first")
    rng = np.random.default_rng(5)
    traffics, placements = [], []
    for i in range(9):
        n_tasks = int(rng.integers(2, 30))
        if i % 3 == 2:
            traffics.append(S.all_to_all(n_tasks, 2.0))
        else:
            f = int(rng.integers(1, 60))
            traffics.append(TR.from_flows(n_tasks, rng.integers(0, n_tasks, f), rng.integers(0, n_tasks, f),
                                          rng.random(f) * 100))
        placements.append(P.explicit(topo, rng.integers(0, topo.n_nodes, n_tasks)))
    res = evaluate_batch(topo, routing, traffics, placements, keep_link_load=True, chunk_size=2)
    lean = evaluate_batch(topo, routing, traffics, placements, chunk_size=4)
    for i, (tr, pl) in enumerate(zip(traffics, placements)):
        ref = ref_loads(topo, tr, pl, routing)
        assert_loads(res.link_load[i], ref, f"point {i} {tr.name}")
        t = float(np.max(ref / topo.capacity))
        assert res.metrics["completion_time"][i] == pytest.approx(t, rel=TOL["rel"])
        assert lean.metrics["completion_time"][i] == pytest.approx(t, rel=TOL["rel"])
        assert res.metrics["total_bytes"][i] == pytest.approx(tr.total_bytes, rel=TOL["rel"])
        worst = int(res.metrics["bottleneck_link"][i])
        assert worst == (int(np.argmax(ref / topo.capacity)) if t > 0 else -1)


def test_bucket_size():
    for n in list(range(1, 300)) + [1000, 1536, 6144, 6145, 100_000]:
        b = bucket_size(n)
        assert b >= max(n, 16)
        assert b <= max(16, 2 * n) and (n <= 64 or b <= 1.25 * n + 1)
    assert bucket_size(6144) == 6144 and bucket_size(1536) == 1536
    assert len({bucket_size(n) for n in range(1025, 2049)}) == 4


# --------------------------------------------------------------------------------------
# The benchmark's baseline and patterns
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("make,routing", [
    (lambda: T.torus((4, 3, 2)), RT.dor()),
    (lambda: T.torus((4, 4, 6), wrap=(True, False, True), nodes_per_router=2), RT.dor("longest_first", "positive")),
    (lambda: T.torus((2, 1, 4, 2)), RT.dor((3, 2, 1, 0))),
    (lambda: T.dragonfly(2, 4, 2, 5), RT.minimal()),
    (lambda: T.dragonfly(2, 4, 2, 5), RT.valiant()),
    (lambda: T.dragonfly(1, 3, 3, 4, arrangement="relative"), RT.valiant()),
])
def test_per_flow_baseline_matches_reference(make, routing):
    from evaluator.bench.baseline import PerFlowBaseline

    topo = make()
    rng = np.random.default_rng(2)
    n = topo.n_nodes
    k = 2 * n
    traffic = TR.from_flows(k, rng.integers(0, k, 200), rng.integers(0, k, 200), rng.random(200) * 1e6)
    placement = P.explicit(topo, rng.integers(0, n, k))
    got = PerFlowBaseline(topo, routing).link_loads(traffic, placement)
    assert_loads(got, ref_loads(topo, traffic, placement, routing))


def test_mira_patterns_on_a_small_bgq_torus():
    from evaluator.bench._big import _mira_patterns

    topo = T.torus((4, 2, 2, 2, 2))
    routing = RT.dor("longest_first")
    for name, traffic, placement in _mira_patterns(topo, quick=True):
        check(topo, traffic, placement, routing)


def test_dragonfly_patterns_on_a_small_dragonfly():
    from evaluator.bench._big import _df_patterns

    topo = T.dragonfly(1, 2, 1, 3)
    for routing in (RT.minimal(), RT.valiant()):
        for name, traffic, placement in _df_patterns(topo):
            check(topo, traffic, placement, routing)
