"""Audit of the batch engine's runners (:mod:`evaluator._batch`) through ``evaluate_batch`` and ``evaluate_groups``.

Every number is checked against an independent reference written here: a per-flow walk (DOR on a torus with odd
rings, so that no pair ties; minimal routing on a Dragonfly with one global link per pair of groups) that sums the
bytes of every flow on its links, then ``completion_time = sum over phases of max(load / capacity)``,
``total_bytes``, ``off_node_bytes``, ``mean_hops`` (hop bytes / off-node bytes), ``throughput`` and
``effective_injection_bandwidth`` (DESIGN.md "Metrics"); an LP (HiGHS via SciPy) for the LP-optimal path-set
routing; the closed form of docs/latency.md on two nodes.

* mixed batches (sparse flows of many sizes, dense all-to-all, phased traffic with a dense phase, a collective,
  zero-byte flows, a point that sends nothing) in one call: every point equals its reference, in input order;
* block boundaries: many points in blocks of 1, 3 and 64 (per-point and shared flow lists), phases split over
  host chunks: none dropped, repeated or shifted;
* padding never counts: a padded flow or task neither loads a link nor counts as a sender;
* path-set routings bound per group of points (``optiq_lp``): results go back in input order;
* ``evaluate_groups`` (the sweep's entry): seeded and given placements, dense groups, planned flow banks,
  positions in any order;
* bad input refused before any work, naming the argument (``placements[i]``, ``groups[j].placements[i]``, ...);
  a working set too large refused before anything is sent to the device.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import linprog

import evaluator as ev
from evaluator import placement as P
from evaluator import traffic as T
from evaluator._batch import blocks as B
from evaluator._batch import phases as PH
from evaluator.errors import MEMORY_ENV, ConfigError, ResourceError
from evaluator.evaluation import BankedPoints, BankPlan, evaluate_groups
from evaluator.latency import Latency
from evaluator.placement._random import fully_random_spec

DIMS = (5, 3)
TORUS = ev.torus(list(DIMS), link_bandwidth=[2e9, 1e9], nodes_per_router=2, injection_bandwidth=3e9)
DF_A = 3
DRAGONFLY = ev.dragonfly(2, DF_A, 1, bandwidth_p=5e9, bandwidth_l=2e9, bandwidth_r=1e9)
SCALARS = ("completion_time", "total_bytes", "off_node_bytes", "mean_hops", "throughput",
           "effective_injection_bandwidth")


# ----------------------------------------------------------------------------------------------- the reference

_LINKS: dict[int, tuple] = {}


def _router_links(topo) -> dict[tuple[int, int], int]:
    """``(src router, dst router) -> link id`` of the router links (made once per network)."""
    hit = _LINKS.get(id(topo))
    if hit is not None and hit[0] is topo:
        return hit[1]
    out = {}
    for lid, (s, d) in enumerate(zip(topo.link_src, topo.link_dst)):
        if s >= 0 and d >= 0:
            assert (int(s), int(d)) not in out  # one link per ordered router pair on these networks
            out[(int(s), int(d))] = lid
    _LINKS[id(topo)] = (topo, out)
    return out


def _node_router(topo, node: int) -> int:
    """The router a node hangs off, by DESIGN.md's convention (node = router * nodes_per_router + port)."""
    return int(node) // int(topo.nodes_per_router)


def _dor_path(topo, a: int, b: int) -> list[int]:
    """Dimension-order route on a torus of odd rings (the shorter way round is unique), dimension 0 first."""
    links = _router_links(topo)
    ca, cb = list(np.unravel_index(a, DIMS)), np.unravel_index(b, DIMS)
    path = []
    for k, n in enumerate(DIMS):
        while ca[k] != cb[k]:
            step = 1 if (cb[k] - ca[k]) % n <= n // 2 else -1
            nxt = list(ca)
            nxt[k] = (ca[k] + step) % n
            path.append(links[(int(np.ravel_multi_index(ca, DIMS)), int(np.ravel_multi_index(nxt, DIMS)))])
            ca = nxt
    return path


def _minimal_path(topo, a: int, b: int) -> list[int]:
    """Minimal Dragonfly route: local hop to the group's router with the global link to b's group, the global
    link, local hop to b (one global link per pair of groups here)."""
    links = _router_links(topo)
    ga, gb = a // DF_A, b // DF_A
    if a == b:
        return []
    if ga == gb:
        return [links[(a, b)]]
    glob = topo.class_names.index("global")
    (u, v), = [(s, d) for (s, d), lid in links.items()
               if topo.link_class[lid] == glob and s // DF_A == ga and d // DF_A == gb]
    return ([links[(a, u)]] if a != u else []) + [links[(u, v)]] + ([links[(v, b)]] if v != b else [])


def _flows(x) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """An exchange's flows: a flow list as it is, a dense rank-one one expanded pair by pair here."""
    if x.kernel_input == "flows":
        return np.asarray(x.src), np.asarray(x.dst), np.asarray(x.nbytes, float)
    n = x.n_tasks
    s, d = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    s, d = s.ravel(), d.ravel()
    keep = s != d
    s, d = s[keep], d[keep]
    return s, d, x.bytes_per_pair * np.asarray(x.src_weight)[s] * np.asarray(x.dst_weight)[d]


def reference(topo, traffic, placement, path=_dor_path) -> dict:
    """Per-flow walk of every phase: the metrics of DESIGN.md and the link loads summed over the phases."""
    cap = np.asarray(topo.capacity, float)
    n_rl, n_nodes = topo.n_router_links, topo.n_nodes
    out = {"total_bytes": 0.0, "off_node_bytes": 0.0, "completion_time": 0.0, "phase_time": [], "phase_bytes": [],
           "phase_loads": [], "loads": np.zeros(topo.n_links)}
    hop_bytes, senders = 0.0, set()
    tn = np.asarray(placement.task_node)
    for x in traffic.phases:
        loads = np.zeros(topo.n_links)
        src, dst, nb = _flows(x)
        for s, d, b in zip(src, dst, nb):
            out["total_bytes"] += b
            if b > 0:
                senders.add(int(s))
            ns, nd = int(tn[s]), int(tn[d])
            if ns == nd:
                continue
            out["off_node_bytes"] += b
            loads[n_rl + ns] += b            # injection links: n_router_links + node
            loads[n_rl + n_nodes + nd] += b  # ejection links after them
            p = path(topo, _node_router(topo, ns), _node_router(topo, nd))
            hop_bytes += b * len(p)
            for lid in p:
                loads[lid] += b
        t = float((loads / cap).max())
        out["completion_time"] += t
        out["phase_time"].append(t)
        out["phase_bytes"].append(float(nb.sum()))
        out["phase_loads"].append(loads)
        out["loads"] += loads
    t, tot = out["completion_time"], out["total_bytes"]
    out["mean_hops"] = hop_bytes / out["off_node_bytes"] if out["off_node_bytes"] else 0.0
    out["throughput"] = tot / t if t > 0 else (np.inf if tot > 0 else np.nan)
    out["effective_injection_bandwidth"] = tot / max(len(senders), 1) / t if t > 0 else out["throughput"]
    return out


def check_point(topo, res, i: int, want: dict, label: str = "") -> None:
    """Point ``i`` of a :class:`~evaluator.evaluation.BatchResult` (or group results) against the reference."""
    m = res.metrics
    for key in SCALARS:
        np.testing.assert_allclose(m[key][i], want[key], rtol=1e-12, atol=0, err_msg=f"{label} point {i} {key}")
    if want["completion_time"] == 0:
        assert m["bottleneck_class"][i] == -1 and m["bottleneck_link"][i] == -1
    else:  # the bottleneck link is a busiest link of the longest phase
        worst = int(np.argmax(want["phase_time"]))
        lid = int(m["bottleneck_link"][i])
        util = want["phase_loads"][worst] / np.asarray(topo.capacity)
        np.testing.assert_allclose(util[lid], want["phase_time"][worst], rtol=1e-12, err_msg=f"{label} point {i}")
        assert m["bottleneck_class"][i] == topo.link_class[lid]
    per_class = [max((ld[topo.link_class == c].max() for ld in want["phase_loads"]), default=0.0)
                 for c in range(len(topo.class_names))]
    np.testing.assert_allclose(m["max_load_class"][i], per_class, rtol=1e-12, err_msg=f"{label} point {i}")
    if getattr(res, "link_load", None) is not None:
        np.testing.assert_allclose(res.link_load[i], want["loads"], rtol=1e-12, atol=1e-9,
                                   err_msg=f"{label} point {i} link loads")


def rand_flows(rng, n_tasks: int, n_flows: int, zeros: bool = False) -> T.Traffic:
    nb = rng.integers(1, 10**6, n_flows).astype(float)
    if zeros:
        nb[::2] = 0.0
    return T.from_flows(n_tasks, rng.integers(0, n_tasks, n_flows), rng.integers(0, n_tasks, n_flows), nb)


# ------------------------------------------------------------------------------------------------ mixed batches

def _mixed_traffics(rng) -> list:
    return [
        rand_flows(rng, 12, 5),
        T.all_to_all_dense(8, 1000.0),
        rand_flows(rng, 20, 70),
        T.phased([rand_flows(rng, 10, 3), T.all_to_all_dense(10, 500.0), rand_flows(rng, 10, 40, zeros=True)]),
        T.from_flows(6, [1, 2], [3, 3], [0.0, 0.0]),  # sends nothing: time 0, throughput NaN, no bottleneck
        T.collective("allreduce", "ring", n_tasks=6, nbytes=6000.0),
        rand_flows(rng, 9, 1),
        T.phased([rand_flows(rng, 16, 17), rand_flows(rng, 16, 2)]),
        rand_flows(rng, 30, 33, zeros=True),
    ]


def test_mixed_batch_equals_the_per_flow_walk_in_input_order():
    rng = np.random.default_rng(1)
    trs = _mixed_traffics(rng)
    pls = [P.fully_random(TORUS, t.n_tasks, tasks_per_node=1 + i % 2, seed=i) for i, t in enumerate(trs)]
    res = ev.evaluate_batch(TORUS, ev.dor(), trs, pls, keep_link_load=True, block_size=2)
    P_max = max(t.n_phases for t in trs)
    assert res.phases["phase_completion_time"].shape == (len(trs), P_max)
    for i, (t, pl) in enumerate(zip(trs, pls)):
        want = reference(TORUS, t, pl)
        check_point(TORUS, res, i, want, "mixed")
        k = t.n_phases
        np.testing.assert_allclose(res.phases["phase_completion_time"][i, :k], want["phase_time"], rtol=1e-12)
        np.testing.assert_allclose(res.phases["phase_total_bytes"][i, :k], want["phase_bytes"], rtol=1e-12)
        assert np.isnan(res.phases["phase_completion_time"][i, k:]).all()
        assert (res.phases["phase_bottleneck_class"][i, k:] == -2).all()
    assert np.isnan(res.metrics["throughput"][4]) and res.metrics["bottleneck_class"][4] == -1


def test_mixed_batch_on_a_dragonfly_with_minimal_routing():
    rng = np.random.default_rng(0)
    trs = [rand_flows(rng, 10, 30), T.all_to_all_dense(14, 3e3),
           T.phased([T.from_flows(6, [0, 1, 2], [5, 4, 3], [1e5, 2e5, 3e5]), T.all_to_all_dense(6, 1e4)]),
           rand_flows(rng, 24, 3)]
    pls = [P.fully_random(DRAGONFLY, t.n_tasks, seed=7 + i) for i, t in enumerate(trs)]
    res = ev.evaluate_batch(DRAGONFLY, ev.minimal(), trs, pls, keep_link_load=True)
    for i, (t, pl) in enumerate(zip(trs, pls)):
        check_point(DRAGONFLY, res, i, reference(DRAGONFLY, t, pl, _minimal_path), "dragonfly")


def test_padding_neither_loads_a_link_nor_counts_as_a_sender():
    """A 2-flow point (one of them 0 bytes) batched with a 40-flow one: its padded flows (task 0 to task 0, 0
    bytes) and padded tasks (node 0) must not show. Task 0 sends and receives nothing; the node holding it and
    node 0 carry nothing; one sender."""
    rng = np.random.default_rng(4)
    small = T.from_flows(3, [1, 2], [2, 1], [1e6, 0.0])
    big = rand_flows(rng, 25, 40)
    tn = np.array([7, 3, 22])  # task 0 on node 7; no task on node 0
    pl_small = P.explicit(TORUS, tn)
    res = ev.evaluate_batch(TORUS, ev.dor(), [big, small], [P.fully_random(TORUS, 25, seed=2), pl_small],
                            keep_link_load=True)
    n_rl, n_nodes = TORUS.n_router_links, TORUS.n_nodes
    loads = res.link_load[1]
    for node in (0, 7):
        assert loads[n_rl + node] == 0 and loads[n_rl + n_nodes + node] == 0
    assert loads[n_rl + 3] == 1e6 and loads[n_rl + n_nodes + 22] == 1e6
    t = res.metrics["completion_time"][1]
    assert res.metrics["effective_injection_bandwidth"][1] == pytest.approx(1e6 / t, rel=1e-12)  # one sender
    check_point(TORUS, res, 1, reference(TORUS, small, pl_small), "padding")


# --------------------------------------------------------------------------------------------- block boundaries

@pytest.mark.parametrize("block_size", [1, 3])
def test_many_points_in_blocks_none_dropped_repeated_or_shifted(block_size):
    rng = np.random.default_rng(block_size)
    n = 17
    trs = [rand_flows(rng, int(k), int(f), bool(z)) for k, f, z in
           zip(rng.integers(2, 25, n), rng.integers(1, 60, n), rng.random(n) < 0.4)]
    trs[5] = T.all_to_all_dense(9, 77.0)  # a dense point among them: its own runner, merged back in order
    pls = [P.fully_random(TORUS, t.n_tasks, seed=s) for s, t in enumerate(trs)]
    res = ev.evaluate_batch(TORUS, ev.dor(), trs, pls, block_size=block_size)
    assert res.metrics["completion_time"].shape == (n,)
    for i, (t, pl) in enumerate(zip(trs, pls)):
        check_point(TORUS, res, i, reference(TORUS, t, pl), f"block {block_size}")


def test_one_flow_list_for_every_point_in_many_blocks():
    """A placement sweep (one traffic object: flows sent once, blocks carry placements only), 37 points in
    blocks of 5: the last block padded by repeating its last point, which must not come back."""
    rng = np.random.default_rng(9)
    t = rand_flows(rng, 12, 40)
    pls = [P.fully_random(TORUS, 12, tasks_per_node=2, seed=s) for s in range(37)]
    res = ev.evaluate_batch(TORUS, ev.dor(), t, pls, block_size=5)
    assert res.metrics["completion_time"].shape == (37,)
    for i, pl in enumerate(pls):
        check_point(TORUS, res, i, reference(TORUS, t, pl), "shared")


def test_phases_split_over_host_chunks(monkeypatch):
    """Phases go to the device in host chunks (PHASE_CHUNK_BYTES); with one phase a chunk, a point's phases lie
    in several chunks: the sums, maxima and per-phase arrays must be those of the walk."""
    monkeypatch.setattr(PH, "PHASE_CHUNK_BYTES", 1)
    rng = np.random.default_rng(5)
    trs = [T.phased([rand_flows(rng, 8, 3), rand_flows(rng, 8, 9, True), T.all_to_all_dense(8, 10.0)]),
           rand_flows(rng, 11, 4),
           T.phased([rand_flows(rng, 5, 2)] * 3, names=["a", "b", "c"]),
           T.collective("allgather", "ring", n_tasks=5, nbytes=5000.0)]
    pls = [P.fully_random(TORUS, t.n_tasks, seed=i) for i, t in enumerate(trs)]
    res = ev.evaluate_batch(TORUS, ev.dor(), trs, pls, keep_link_load=True)
    for i, (t, pl) in enumerate(zip(trs, pls)):
        want = reference(TORUS, t, pl)
        check_point(TORUS, res, i, want, "phase chunks")
        np.testing.assert_allclose(res.phases["phase_completion_time"][i, :t.n_phases], want["phase_time"],
                                   rtol=1e-12)



def test_phased_blocks_are_the_blocks_whose_working_set_was_checked(monkeypatch):
    """Phases go to the device PHASE_BLOCK (1,024) a call where that block's working set fits: the memory check
    must have weighed the block that runs (it weighed ``block_size``'s 64 while 1,024 phases went in one call, 16x
    on an accelerator, where a call is one step). Where 1,024 do not fit, the phases go 64 at a time, with the
    walk's numbers; where neither fits, the refusal names ``block_size``."""
    from evaluator._batch import run as R

    rng = np.random.default_rng(13)
    trs = [T.phased([rand_flows(rng, 6, 3) for _ in range(40)]) for _ in range(30)]  # 1,200 phases
    pls = [P.fully_random(TORUS, 6, seed=s) for s in range(30)]
    checked, ran = [], []
    real_check, real_run = R.check_working_set, PH.evaluate_exchanges

    def check(need, n, block, *a):
        real_check(need, n, block, *a)
        checked.append(block)  # (allowed: no refusal)

    monkeypatch.setattr(R, "check_working_set", check)
    monkeypatch.setattr(PH, "evaluate_exchanges", lambda kern, ts, ps, block, **k: (ran.append(block),
                                                                                     real_run(kern, ts, ps, block,
                                                                                              **k))[1])
    res = ev.evaluate_batch(TORUS, ev.dor(), trs, pls)
    assert ran and set(ran) <= set(checked) and PH.PHASE_BLOCK in ran, (ran, checked)
    kern = R.batch_kernel(TORUS, ev.dor(), False)
    exchanges = [x for t in trs for x in t.phases]
    total = {b: sum(v for k, v in R.working_set(kern, TORUS, exchanges, b, False).items()
                    if k in ("inputs", "block", "results")) for b in (64, PH.PHASE_BLOCK)}
    assert total[PH.PHASE_BLOCK] > total[64], total
    monkeypatch.setenv(MEMORY_ENV, str(int((total[64] + total[PH.PHASE_BLOCK]) / 2 / 0.8)))
    checked.clear(), ran.clear()
    small = ev.evaluate_batch(TORUS, ev.dor(), trs, pls)
    assert ran and set(ran) == {64} and checked == [64], (ran, checked)
    for i in (0, 17, 29):
        want = reference(TORUS, trs[i], pls[i])
        check_point(TORUS, small, i, want, "64 phases a call")
        np.testing.assert_allclose(small.phases["phase_completion_time"][i], want["phase_time"], rtol=1e-12)
    np.testing.assert_array_equal(small.metrics["completion_time"], res.metrics["completion_time"])
    monkeypatch.setenv(MEMORY_ENV, str(int(total[64] / 2)))
    with pytest.raises(ResourceError, match=r"^(block_size|traffics) = .* is invalid: allowed is a size that fits"):
        ev.evaluate_batch(TORUS, ev.dor(), trs, pls)


# ------------------------------------------------------------------------------------------------------ latency

def test_time_with_latency_is_the_closed_form_on_two_nodes():
    """docs/latency.md: lambda = o_s + o_r + wire(injection) + wire(dim0) + wire(ejection) + 2 routers (the
    injection link and the router link end at a router), times 1 + 2R above the eager threshold; a phase's time
    is its bound plus its slowest message's lambda, summed over phases."""
    lat = Latency(send_overhead=1e-6, recv_overhead=2e-6, router=1e-7,
                  link={"torus-dim0": 3e-7, "injection": 5e-8, "ejection": 7e-8}, eager_threshold=1000,
                  rendezvous_round_trips=1)
    topo = ev.torus([2], wrap=False, link_bandwidth=1e9, injection_bandwidth=4e9).with_latency(lat)
    small = T.from_flows(2, [0], [1], [500.0])
    big = T.from_flows(2, [0, 1], [1, 0], [4000.0, 100.0])
    res = ev.evaluate_batch(topo, "dor", [small, big, T.phased([small, big])], P.linear(topo, 2))
    lam = 1e-6 + 2e-6 + 5e-8 + 3e-7 + 7e-8 + 2 * 1e-7
    t_small, t_big = 500 / 1e9 + lam, 4000 / 1e9 + 3 * lam
    want = np.array([t_small, t_big, t_small + t_big])
    np.testing.assert_allclose(res.metrics["time_with_latency"], want, rtol=1e-12)
    np.testing.assert_allclose(res.metrics["latency_share"], np.array([lam, 3 * lam, 4 * lam]) / want, rtol=1e-12)
    np.testing.assert_allclose(res.metrics["completion_time"], [5e-7, 4e-6, 4.5e-6], rtol=1e-12)
    np.testing.assert_allclose(res.phases["phase_time_with_latency"][2], [t_small, t_big], rtol=1e-12)


# -------------------------------------------------------------------------------------------------- path sets

def _ring_lp(ring, tr, pl) -> float:
    """Min over the split of each router pair's bytes between its two ways round a ring (optiq_lp with k = 2) of
    the largest router-link utilisation, by HiGHS; the node links' utilisation does not depend on it."""
    n = ring.n_routers
    links = _router_links(ring)
    node = np.zeros(ring.n_links)
    dem: dict[tuple[int, int], float] = {}
    for s, d, b in zip(tr.src, tr.dst, tr.nbytes):
        ns, nd = int(pl.task_node[s]), int(pl.task_node[d])
        if ns != nd and b > 0:
            node[ring.n_router_links + ns] += b
            node[ring.n_router_links + ring.n_nodes + nd] += b
            dem[(ns, nd)] = dem.get((ns, nd), 0.0) + b

    def way(a, b, step):
        out = set()
        while a != b:
            out.add(links[(a, (a + step) % n)])
            a = (a + step) % n
        return out

    pairs = list(dem)
    rows, rhs = [], []
    for lid in range(ring.n_router_links):  # load = D (x cw + (1 - x) ccw) <= z cap
        row = np.zeros(len(pairs) + 1)
        const = 0.0
        for j, (a, b) in enumerate(pairs):
            cw, ccw = lid in way(a, b, 1), lid in way(a, b, -1)
            row[j] = dem[(a, b)] * (cw - ccw) / ring.capacity[lid]
            const += dem[(a, b)] * ccw / ring.capacity[lid]
        row[-1] = -1.0
        rows.append(row)
        rhs.append(-const)
    c = np.zeros(len(pairs) + 1)
    c[-1] = 1.0
    lp = linprog(c, A_ub=np.array(rows), b_ub=np.array(rhs), bounds=[(0, 1)] * len(pairs) + [(0, None)],
                 method="highs")
    assert lp.status == 0
    return max(lp.fun, float((node / ring.capacity).max()))


def test_path_set_groups_go_back_in_input_order():
    """optiq_lp binds one spec per distinct demand: the points are evaluated group by group and must come back
    in input order (two points share a demand, the others each have their own)."""
    ring = ev.torus([5], link_bandwidth=1e9, injection_bandwidth=1e10)
    rng = np.random.default_rng(2)
    base = T.from_flows(5, [0, 1, 2, 3], [2, 3, 4, 0], [4e6, 1e6, 2e6, 3e6])
    trs, pls = [], []
    for i in range(7):
        if i in (2, 5):
            trs.append(base)
            pls.append(P.linear(ring, 5))
        else:
            f = int(rng.integers(2, 8))
            trs.append(T.from_flows(5, rng.integers(0, 5, f), rng.integers(0, 5, f), rng.integers(1, 9, f) * 1e6))
            pls.append(P.fully_random(ring, 5, seed=i))
    res = ev.evaluate_batch(ring, ev.routing.optiq_lp(k=2), trs, pls, block_size=2)
    want = [_ring_lp(ring, t, pl) for t, pl in zip(trs, pls)]
    np.testing.assert_allclose(res.metrics["completion_time"], want, rtol=1e-9)


# ---------------------------------------------------------------------------------------------- evaluate_groups

def _check_groups(groups, out, label):
    for g in groups:
        for pos, pl in zip(g.positions, g.host_placements()):
            j = np.flatnonzero(out.positions == pos)
            assert j.size == 1, f"{label}: position {pos} came back {j.size} times"
            check_point(TORUS, out, int(j[0]), reference(TORUS, g.traffic, pl), f"{label} position {pos}")
    assert out.positions.size == sum(len(g.positions) for g in groups)


def test_groups_of_seeded_given_and_dense_points_match_the_walk():
    rng = np.random.default_rng(3)
    a, b, c = rand_flows(rng, 12, 5), rand_flows(rng, 20, 40), rand_flows(rng, 9, 13, zeros=True)
    perm = rng.permutation(17)
    groups = [BankedPoints(perm[0:5], a, seeded=fully_random_spec(TORUS, 12), seeds=np.arange(5) + 100),
              BankedPoints(perm[5:9], b, placements=[P.fully_random(TORUS, 20, seed=s) for s in range(4)]),
              BankedPoints(perm[9:12], T.all_to_all_dense(7, 100.0),
                           placements=[P.fully_random(TORUS, 7, seed=s) for s in range(3)]),
              BankedPoints(perm[12:17], c, seeded=fully_random_spec(TORUS, 9, 2), seeds=np.arange(5) * 7 + 1)]
    out = evaluate_groups(TORUS, ev.dor(), groups, keep_link_load=True, chunk_size=3)
    _check_groups(groups, out, "groups")


def test_groups_with_planned_flow_banks():
    """Two traffics of one bank class (one flow bucket: the larger's) and one of another task bucket; points of
    the first two interleaved in positions."""
    rng = np.random.default_rng(6)
    a, b, c = rand_flows(rng, 10, 4), rand_flows(rng, 11, 60), rand_flows(rng, 25, 7)
    plan = BankPlan([("a", "k", a), ("b", "k", b), ("c", "k", c)])
    groups = [BankedPoints(np.array([0, 2, 4, 6]), a, seeded=fully_random_spec(TORUS, 10), seeds=np.arange(4),
                           bank_key="a"),
              BankedPoints(np.array([1, 3, 5]), b, placements=[P.fully_random(TORUS, 11, seed=s) for s in (4, 5, 6)],
                           bank_key="b"),
              BankedPoints(np.array([7, 8]), c, seeded=fully_random_spec(TORUS, 25), seeds=np.array([9, 10]),
                           bank_key="c")]
    out = evaluate_groups(TORUS, ev.dor(), groups, keep_link_load=False, chunk_size=2, banks=plan)
    _check_groups(groups, out, "planned")


# --------------------------------------------------------------------------------------------------- bad input

def test_batch_lists_of_other_lengths_or_empty_are_refused():
    rng = np.random.default_rng(7)
    a = rand_flows(rng, 12, 5)
    with pytest.raises(ConfigError, match=r"^placements = 2 is invalid: allowed is one placement, or as many as "
                                          r"traffics \(3\)"):
        ev.evaluate_batch(TORUS, ev.dor(), [a, a, a], [P.linear(TORUS, 12)] * 2)
    with pytest.raises(ConfigError, match=r"^traffics = 0 is invalid: allowed is at least one design point"):
        ev.evaluate_batch(TORUS, ev.dor(), [], [])
    with pytest.raises(ConfigError, match=r"^placements = 1 is invalid"):
        ev.evaluate_batch(TORUS, ev.dor(), [], P.linear(TORUS, 12))


def test_batch_placement_of_another_network_or_task_count_names_placements_i():
    rng = np.random.default_rng(8)
    a, b = rand_flows(rng, 12, 5), rand_flows(rng, 13, 5)
    other = ev.torus([5, 5], nodes_per_router=2)
    with pytest.raises(ConfigError, match=r"^placements\[1\] = 'linear/1' is invalid: allowed is a placement made "
                                          r"for torus 5x3 .*\(30 nodes\); it was made for 50 nodes"):
        ev.evaluate_batch(TORUS, ev.dor(), [a, a], [P.linear(TORUS, 12), P.linear(other, 12)])
    with pytest.raises(ConfigError, match=r"^placements\[1\]\.n_tasks = 12 is invalid: allowed is the traffic's "
                                          r"task count 13"):
        ev.evaluate_batch(TORUS, ev.dor(), [a, b], [P.linear(TORUS, 12)] * 2)
    with pytest.raises(ConfigError, match=r"^placement\.n_tasks = 12 is invalid"):  # evaluate: the singular
        ev.evaluate(TORUS, b, P.linear(TORUS, 12), "dor")


def _bad_groups():
    rng = np.random.default_rng(11)
    a = rand_flows(rng, 12, 5)
    other = ev.torus([5, 5], nodes_per_router=2)
    lin = P.linear(TORUS, 12)
    return [
        ([], r"^groups = 0 is invalid: allowed is at least one group"),
        ([BankedPoints(np.arange(2), a, placements=[P.linear(other, 12), P.linear(other, 12, first_node=30)])],
         r"^groups\[0\]\.placements\[0\] = 'linear/1' is invalid: allowed is a placement made for torus 5x3"),
        ([BankedPoints(np.arange(2), a, placements=[P.linear(TORUS, 13)] * 2)],
         r"^groups\[0\]\.placements\[0\]\.n_tasks = 13 is invalid: allowed is the traffic's task count 12"),
        ([BankedPoints(np.arange(3), a, placements=[lin] * 2)],
         r"^groups\[0\]\.placements = '2 placements' is invalid: allowed is one placement per position \(3\)"),
        ([BankedPoints(np.arange(3), a, seeded=fully_random_spec(TORUS, 12), seeds=[1, 2])],
         r"^groups\[0\]\.seeds = \[1, 2\] is invalid: allowed is one integer seed per position \(3\)"),
        ([BankedPoints(np.arange(2), a, seeded=fully_random_spec(other, 12), seeds=[1, 2])],
         r"^groups\[0\]\.seeded = 'random/1' is invalid: allowed is a placement family made for torus 5x3"),
        ([BankedPoints(np.arange(2), a, seeded=fully_random_spec(TORUS, 14), seeds=[1, 2])],
         r"^groups\[0\]\.seeded\.n_tasks = 14 is invalid: allowed is the traffic's task count 12"),
        ([BankedPoints(np.arange(1), a, placements=[lin], seeded=fully_random_spec(TORUS, 12), seeds=[1])],
         r"^groups\[0\] = 'placements and seeded both given' is invalid"),
        ([BankedPoints(np.array([0, 1]), a, placements=[lin] * 2), BankedPoints(np.array([1]), a, placements=[lin])],
         r"^groups = 'position 1 in more than one point' is invalid"),
        ([BankedPoints(np.arange(1), T.all_to_all_dense(12), placements=[P.linear(other, 12)])],
         r"^groups\[0\]\.placements\[0\] = 'linear/1' is invalid"),
    ]


@pytest.mark.parametrize("case", range(10))
def test_groups_that_would_give_wrong_points_are_refused_naming_them(monkeypatch, case):
    """Until 2026-12-07 most of these ran: nodes of a larger network clamped to this one's, a third position given
    0 s, a 14-task family's first 12 tasks, a repeated position given twice. Refused before any block is sent."""
    def no_transfer(*a, **k):
        raise AssertionError("a block was sent to the device before the arguments were checked")

    monkeypatch.setattr(B, "to_device", no_transfer)
    groups, pattern = _bad_groups()[case]
    with pytest.raises(ConfigError, match=pattern):
        evaluate_groups(TORUS, ev.dor(), groups, keep_link_load=False, chunk_size=4)


def test_groups_chunk_size_and_keep_link_load_are_checked():
    good = [BankedPoints(np.arange(1), _bad_groups()[3][0][0].traffic, placements=[P.linear(TORUS, 12)])]
    with pytest.raises(ConfigError, match=r"^chunk_size = 0 is invalid: allowed is an integer >= 1"):
        evaluate_groups(TORUS, ev.dor(), good, keep_link_load=False, chunk_size=0)
    with pytest.raises(ConfigError, match=r"^keep_link_load = 'no' is invalid"):
        evaluate_groups(TORUS, ev.dor(), good, keep_link_load="no", chunk_size=4)


def test_too_large_a_working_set_is_refused_before_any_transfer(monkeypatch):
    rng = np.random.default_rng(12)
    t = rand_flows(rng, 30, 400)

    def no_transfer(*a, **k):
        raise AssertionError("a block was sent to the device before the memory check")

    pls = [P.fully_random(TORUS, 30, seed=s) for s in range(3)]  # (before the limit: placements weigh theirs too)
    ev.evaluate(TORUS, t, pls[0], ev.dor())  # the routing's buffers built (and kept) before the limit, as here
    monkeypatch.setattr(B, "to_device", no_transfer)
    monkeypatch.setattr(B, "to_device_kept", no_transfer)
    monkeypatch.setenv(MEMORY_ENV, "1000")
    with pytest.raises(ResourceError, match=r"^(traffics|block_size) = .* is invalid: allowed is a size that fits"):
        ev.evaluate_batch(TORUS, ev.dor(), [t, rand_flows(rng, 30, 9), t], pls)
    with pytest.raises(ResourceError, match=r"^keep_link_load = True is invalid: allowed is a size that fits"):
        ev.evaluate_batch(TORUS, ev.dor(), t, pls * 40, keep_link_load=True)
    with pytest.raises(ResourceError, match=r"^(traffics|chunk_size) = .* is invalid: allowed is a size that fits"):
        evaluate_groups(TORUS, ev.dor(), [BankedPoints(np.arange(3), t, placements=pls)], keep_link_load=False,
                        chunk_size=4)
