"""Hashed ECMP (``routing=ecmp``) and the ideal per-packet spraying (``routing=ecmp_spray``) on fat trees (issue 35).

* ``ecmp_spray`` keeps the numbers ``ecmp`` had before hashed ECMP (the fluid split), on the buyer's study's
  tree and on a tree with parallel links;
* hashed ECMP, link for link and seed by seed, against a per-flow walk on the XGFT labels written here from
  the definition (one Threefry word per flow, tier and direction picks the port: the hash is the project's
  counter-based generator, the walk and the link ids are this file's), sparse and dense;
* the issue's case: a random permutation of 32 MB flows on the 8-ary 3-tree with 12.5 GB/s links. The
  expected maximum over hash seeds lands within 2% of an independent walk that draws a uniform port per
  flow and level with NumPy's generator (4 to 8 flows on the busiest link, about 5.3 in the mean: 13.6 ms
  where the spray says 2.56 ms);
* the hash is Threefry-2x32-20 (Random123's known answers); the seed summary, the config
  (``routing.seed``) and one compilation for every seed.
"""

from __future__ import annotations

import numpy as np
import pytest

import evaluator as ev
from evaluator import config, placement, routing, traffic
from evaluator.config import build
from evaluator.errors import ConfigError
from evaluator.placement._seeded import threefry2x32
from evaluator.routing import build_routing, ecmp_hash_paths
from evaluator.topology import fat_tree
from evaluator.traffic.dense import all_to_all as dense_all_to_all
from tests.helpers import TOL
from tests.test_fat_tree import TREES, host_label, nca_level, parallel, random_case, router_of, tree

RTOL, ATOL = TOL["rel"], TOL["bytes"]
FLOW = 32e6  # bytes per flow of the permutation
LINK = 12.5e9  # the buyer's study's links (100 Gb/s)


def buyer_tree():
    return fat_tree(k=8, levels=3, link_bandwidth=LINK, injection_bandwidth=LINK)


# --------------------------------------------------------------------------------------
# the spray keeps the old numbers
# --------------------------------------------------------------------------------------


def test_spray_keeps_the_numbers_ecmp_had():
    """``ecmp_spray`` is the fluid split ``ecmp`` was: the values below were computed with ``routing.ecmp()``
    before hashed ECMP (the buyer's study's fat tree: all-to-all of 64 kB, the 3-D halo, the 32 MB permutation;
    a 4-ary 3-tree with 2 links per switch pair)."""
    t = buyer_tree()
    pl = placement.linear(t, 512)
    cases = [(traffic.all_to_all(512, 6.4e4), 0.00261632, 95879168000.0),
             (traffic.stencil([256, 256, 256], [8, 8, 8], 1024.0), 0.00050331648, 12884901888.0),
             (traffic.random_permutation(512, FLOW, seed=0), 0.00256, 93056000000.0)]
    for tr, time, total in cases:
        ds = ev.evaluate(t, tr, pl, routing.ecmp_spray())
        assert float(ds.completion_time) == pytest.approx(time, rel=1e-12)
        assert float(np.asarray(ds.link_load.values).sum()) == pytest.approx(total, rel=1e-12)
    t2 = fat_tree(k=4, levels=3, parallel_links=2)
    ds = ev.evaluate(t2, traffic.random_permutation(64, 1e6, seed=1), placement.linear(t2, 64), "ecmp_spray")
    assert float(ds.completion_time) == pytest.approx(8e-05, rel=1e-12)
    assert np.asarray(ds.link_load.values)[: t2.n_router_links].max() == pytest.approx(5e5, rel=1e-12)


# --------------------------------------------------------------------------------------
# hashed ECMP against a label walk
# --------------------------------------------------------------------------------------


def H(seed, stream, a, d):
    """The hash of the definition: the first word of Threefry-2x32-20 with key (seed, stream), counter (a, d)."""
    one = lambda x: np.asarray([x], np.uint32)  # noqa: E731  (arrays: uint32 arithmetic wraps without a warning)
    return int(threefry2x32(np, one(seed), one(stream), one(a), one(d))[0][0])


def hash_walk(t, a, d, seed):
    """Hashed ECMP's one path of node ``a`` -> node ``d`` on the labels (router links only). Up from level i:
    port ``u = H(seed, 2 (i - 1), a, d) mod (w_{i+1} pl_i)``, i.e. parent digit ``y_{i+1} = u div pl_i`` over
    parallel copy ``u mod pl_i``; down from level i + 1 to level i: replace ``y_i``... by ``d``'s ``x_i`` over
    copy ``H(seed, 2 (i - 1) + 1, a, d) mod pl_i``."""
    if a == d:
        return []
    h, w, pl = t.levels, t.parents, t.parallel_links
    rid, links = router_of(t), parallel(t)
    xa, xd = host_label(t, a), host_label(t, d)
    top = nca_level(t, a, d)
    lab = (1,) + xa[: h - 1] + (0,)
    up = []
    for i in range(1, top):
        u = H(seed, 2 * (i - 1), a, d) % (w[i] * pl[i - 1])
        digits = list(lab[1:])
        digits[h - (i + 1)] = u // pl[i - 1]
        nxt = (i + 1,) + tuple(digits)
        up.append(links[(rid[lab], rid[nxt])][u % pl[i - 1]])
        lab = nxt
    down = []
    for i in range(top, 1, -1):
        digits = list(lab[1:])
        digits[h - i] = xd[h - i]
        child = (i - 1,) + tuple(digits)
        down.append(links[(rid[lab], rid[child])][H(seed, 2 * (i - 2) + 1, a, d) % pl[i - 2]])
        lab = child
    assert lab == (1,) + xd[: h - 1] + (0,)
    return up + down


def hash_walk_loads(t, flows, task_node, seed):
    out = np.zeros(t.n_links)
    n_rl, N = t.n_router_links, t.n_nodes
    for s, d, b in flows:
        a, z = int(task_node[s]), int(task_node[d])
        if a == z:
            continue
        out[n_rl + a] += b
        out[n_rl + N + z] += b
        for lk in hash_walk(t, a, z, seed):
            out[lk] += b
    return out


@pytest.mark.parametrize("name", sorted(TREES))
def test_hashed_ecmp_is_the_label_walk(name):
    """Random flows and placements (shared nodes, same-leaf and same-node pairs), two seeds: the kernel's loads
    are the walk's link for link; every flow takes one path (``ecmp_hash_paths``, the module's host walk, is the
    walk's too); the dense all-to-all equals its materialised flows; two seeds route differently."""
    t = tree(name)
    loads = []
    for seed in (0, 7):
        n_tasks, src, dst, nbytes, tn = random_case(t, seed)
        ds = ev.evaluate(t, traffic.from_flows(n_tasks, src, dst, nbytes), placement.explicit(t, tn),
                         routing.ecmp(seed))
        ref = hash_walk_loads(t, zip(src.tolist(), dst.tolist(), nbytes.tolist()), tn, seed)
        got = np.asarray(ds["link_load"].values)
        np.testing.assert_allclose(got, ref, rtol=RTOL, atol=ATOL, err_msg=f"{t.name} seed {seed}")
        for a, d in zip(tn[src][:20].tolist(), tn[dst][:20].tolist()):
            want = hash_walk(t, a, d, seed)
            assert ecmp_hash_paths(t, a, d, seed) == ([] if a == d else [(1.0, want)])
        n = t.n_nodes
        pl = placement.linear(t, n)
        dense = dense_all_to_all(n, 3.0e3)
        got = np.asarray(ev.evaluate(t, dense, pl, routing.ecmp(seed))["link_load"].values)
        flows = dense.to_traffic()
        ref = hash_walk_loads(t, zip(flows.src.tolist(), flows.dst.tolist(), flows.nbytes.tolist()), pl.task_node,
                              seed)
        np.testing.assert_allclose(got, ref, rtol=RTOL, atol=TOL["bytes_loose"])
        loads.append(got)
    assert not np.allclose(loads[0], loads[1])


# --------------------------------------------------------------------------------------
# the permutation: expectation over seeds against a uniform-hash walk
# --------------------------------------------------------------------------------------


def uniform_walk_max_flows(t, src, dst, draws, rng):
    """Per draw, the flows on the busiest link of node flows ``src -> dst`` (one flow per node) when every flow
    picks a uniformly random up port (parent and copy) at every level it climbs and a uniform parallel copy on
    every hop down (NumPy's generator; links identified by their end labels and copy, not by link ids)."""
    h, w, pl = t.levels, t.parents, t.parallel_links
    xa = np.asarray([host_label(t, int(a)) for a in src])  # [flow, h]: x_h .. x_1
    xd = np.asarray([host_label(t, int(d)) for d in dst])
    moving = src != dst
    # tiers crossed: level-i subtrees differ <=> digits x_h .. x_{i+1} differ
    cross = np.stack([(xa[:, : h - i] != xd[:, : h - i]).any(1) for i in range(1, h)], 1)  # [flow, tier]
    out = np.zeros(draws, dtype=np.int64)
    for k in range(draws):
        rows = []
        lab_up = np.concatenate([xa[:, : h - 1], np.zeros((len(src), 1), np.int64)], 1)  # level-1 switch digits
        lab_dn = np.concatenate([xd[:, : h - 1], np.zeros((len(src), 1), np.int64)], 1)
        for i in range(1, h):
            y = rng.integers(0, w[i], len(src))
            c_up = rng.integers(0, pl[i - 1], len(src))
            c_dn = rng.integers(0, pl[i - 1], len(src))
            sel = cross[:, i - 1]
            base = np.full((len(src), 2), [i, 0])
            rows.append(np.concatenate([base, lab_up, y[:, None], c_up[:, None]], 1)[sel])
            base[:, 1] = 1
            rows.append(np.concatenate([base, lab_dn, y[:, None], c_dn[:, None]], 1)[sel])
            lab_up = lab_up.copy()
            lab_dn = lab_dn.copy()
            lab_up[:, h - (i + 1)] = y  # x_{i+1} -> y_{i+1}
            lab_dn[:, h - (i + 1)] = y
        rows = np.concatenate(rows)
        _, counts = np.unique(rows, axis=0, return_counts=True)
        node = max(np.bincount(src[moving]).max(initial=0), np.bincount(dst[moving]).max(initial=0))
        out[k] = max(counts.max(initial=0), node)
    return out


def test_hashed_ecmp_permutation_expectation_matches_a_uniform_hash_walk():
    """The buyer's fat tree (8-ary 3-tree, 12.5 GB/s), a random permutation of 32 MB per node: the spray says
    2.56 ms (one flow per link); hashed ECMP's expected completion over 200 seeds lands within 2% of 2000
    uniform draws of the walk above (4 to 8 flows on the busiest link, mean about 5.3: about 13.5 ms), and its
    95th percentile is the draws' within one flow."""
    t = buyer_tree()
    tr = traffic.random_permutation(512, FLOW, seed=0)
    pl = placement.linear(t, 512)
    assert float(ev.evaluate(t, tr, pl, routing.ecmp_spray()).completion_time) == pytest.approx(FLOW / LINK)
    specs = routing.ecmp_seeds(200)
    summary = routing.ecmp_seed_summary([ev.evaluate_batch(t, r, tr, pl).metrics["completion_time"][0]
                                         for r in specs], [r.seed for r in specs])
    times = summary.completion_time.values
    flows_on_max = times / (FLOW / LINK)
    np.testing.assert_allclose(flows_on_max, np.round(flows_on_max), rtol=1e-9)  # whole flows
    draws = uniform_walk_max_flows(t, np.asarray(pl.task_node)[tr.src], np.asarray(pl.task_node)[tr.dst], 2000,
                                   np.random.default_rng(2026))
    assert 4 <= draws.min() and draws.max() <= 9 and 5.0 <= draws.mean() <= 5.6
    want = draws.mean() * FLOW / LINK
    assert float(summary.completion_time_expected) == pytest.approx(want, rel=0.02)
    assert float(summary.completion_time_expected) == pytest.approx(times.mean(), rel=1e-12)
    assert abs(float(summary.completion_time_p95) - np.quantile(draws, 0.95) * FLOW / LINK) <= FLOW / LINK
    assert float(summary.completion_time_p95) >= float(summary.completion_time_expected) > 4 * FLOW / LINK
    # README.md "Fat trees": 13.4 ms expected, 15.4 ms at the 95th percentile, 4 to 7 flows on the busiest link
    assert float(summary.completion_time_expected) == pytest.approx(13.376e-3, rel=1e-9)
    assert float(summary.completion_time_p95) == pytest.approx(15.36e-3, rel=1e-9)
    assert (flows_on_max.min(), flows_on_max.max()) == pytest.approx((4, 7))


# --------------------------------------------------------------------------------------
# summary, config, compilation
# --------------------------------------------------------------------------------------


def test_hash_is_threefry_known_answers():
    """The hash is Threefry-2x32-20: Random123's known-answer vectors (kat_vectors, threefry2x32_20), through
    the seeded placements' implementation that the walk above uses, and the route of a flow depends on it."""
    kat = [((0, 0), (0, 0), (0x6B200159, 0x99BA4EFE)),
           ((0xFFFFFFFF, 0xFFFFFFFF), (0xFFFFFFFF, 0xFFFFFFFF), (0x1CB996FC, 0xBB002BE7)),
           ((0x13198A2E, 0x03707344), (0x243F6A88, 0x85A308D3), (0xC4923A9C, 0x483DF7A0))]
    for key, ctr, want in kat:
        got = threefry2x32(np, *(np.asarray([x], np.uint32) for x in key + ctr))
        assert (int(got[0][0]), int(got[1][0])) == want
    t = fat_tree(k=4, levels=2)
    u = H(3, 0, 0, 5) % t.up_ports(1)
    assert ecmp_hash_paths(t, 0, 5, 3)[0][1][0] == int(t.up_offset[0]) + 0 * t.up_ports(1) + u


def test_seed_summary_config_and_one_compilation():
    t = fat_tree(k=4, levels=2)
    tr = traffic.random_permutation(16, 1e6, seed=3)
    pl = placement.linear(t, 16)
    specs = routing.ecmp_seeds(5, seed=10)
    assert [r.seed for r in specs] == [10, 11, 12, 13, 14]
    times = np.stack([ev.evaluate_batch(t, r, [tr, tr], [pl, pl]).metrics["completion_time"] for r in specs])
    s = routing.ecmp_seed_summary(times, [r.seed for r in specs])
    assert s.seed.values.tolist() == [10, 11, 12, 13, 14] and s.completion_time.shape == (5, 2)
    for i, r in enumerate(specs):
        assert times[i, 0] == pytest.approx(float(ev.evaluate(t, tr, pl, r).completion_time), rel=1e-12)
    np.testing.assert_allclose(s.completion_time_p95.values, np.quantile(times, 0.95, axis=0), rtol=1e-12)
    np.testing.assert_allclose(s.completion_time_expected.values, times.mean(0), rtol=1e-12)
    assert (s.completion_time_max.values == times.max(0)).all()
    assert s.completion_time.attrs["units"] == "s" and s.attrs["seeds"] == 5
    # a sweep's DataArray with a seed dimension
    da = s.completion_time.rename({"point_0": "variant"}).transpose("variant", "seed")
    s2 = routing.ecmp_seed_summary(da)
    np.testing.assert_allclose(s2.completion_time_expected.values, times.mean(0), rtol=1e-12)
    with pytest.raises(ConfigError):
        routing.ecmp_seed_summary(times, [1, 2])
    ops = [build_routing(t, routing.ecmp(seed)) for seed in (0, 1)]
    assert ops[0].compile_key == ops[1].compile_key is not None  # the seed is a table: one kernel for all seeds
    assert routing.ecmp(3).label == "ecmp-s3" and routing.ecmp_spray().label == "ecmp_spray"
    ds = ev.evaluate(t, tr, pl, routing.ecmp(3))
    assert any("hash seed 3" in n for n in np.atleast_1d(ds.attrs["notes"]))
    p = build(config.to_object(config.compose(["topology=fat_tree", "topology.k=4", "topology.levels=2",
                                               "routing=ecmp", "routing.seed=5", "traffic=all_to_all",
                                               "traffic.n_tasks=16", "placement=linear"])))
    assert p.routing == routing.ecmp(5)
    p = build(config.to_object(config.compose(["topology=fat_tree", "topology.k=4", "topology.levels=2",
                                               "routing=ecmp_spray", "traffic=all_to_all", "traffic.n_tasks=16",
                                               "placement=linear"])))
    assert p.routing == routing.ecmp_spray()
    for bad in (-1, 2**32, 1.5):
        with pytest.raises(ConfigError) as exc:
            routing.ecmp(bad)
        assert exc.value.field == "routing.seed"
