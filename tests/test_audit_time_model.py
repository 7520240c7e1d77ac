"""Audit of the time model (docs/latency.md) against references written here in plain Python/NumPy.

* ``time_with_latency``, ``phase_time_with_latency``, ``latency_share``: every message's latency walked from its
  routing's own ``route(topology, src, dst)`` (README "Every routing answers route(topology, src, dst)") plus its
  node links, link classes and router crossings counted per docs/latency.md ("one router more than it has router
  links"), the rendezvous round trips above the eager threshold; per phase the bound (loads summed here) plus
  the slowest message's latency;
* ``time_max_min``, ``message_finish_time``: a plain-Python event loop of max-min fair sharing (progressive
  filling over each message's links, a split flow putting its fraction of its rate on each link, every message
  starting after its latency, rates recomputed at every start and finish), flow- and rtt-fair;
* closed forms: one message, two messages sharing one link (flow- and rtt-fair), the eager threshold exactly at a
  message's size, a dense exchange within one router (the router counted once), zero-byte messages.

Cases the other latency tests leave out: several tasks per node with intra-node pairs, per-class wire latencies
with rendezvous round trips in random traffic, a mesh, a fat tree's ECMP spray, rtt-fair sharing.
"""

from __future__ import annotations

import numpy as np
import pytest

import evaluator as ev
from evaluator import placement, traffic
from evaluator.latency import Latency
from evaluator.routing import build_routing

TOL = 1e-9


# -- references ---------------------------------------------------------------------------------------------------

def _links(topo, op, sn: int, dn: int) -> dict[int, float]:
    """``{link: fraction}`` of one node-to-node message: its injection and ejection links and its routing's router
    links (``route`` on the routing's endpoints: routers, or nodes where the routing has its own)."""
    if sn == dn:
        return {}
    n_rl, n = topo.n_router_links, topo.n_nodes
    out = {n_rl + sn: 1.0, n_rl + n + dn: 1.0}
    if op.endpoints is not None:
        es, ed = int(op.endpoints[sn]), int(op.endpoints[dn])
    else:
        es, ed = int(topo.node_router[sn]), int(topo.node_router[dn])
    links, share = op.route(topo, es, ed)
    for lk, f in zip(links, share):
        assert 0 <= lk < n_rl
        out[int(lk)] = out.get(int(lk), 0.0) + float(f)
    return out


def _latency(topo, lat: Latency, path: dict[int, float], b: float) -> float:
    """docs/latency.md: o_s + o_r + the expected wire of each link's class + router x (1 + router links), times
    1 + 2 R above the eager threshold; two tasks on one node: the overheads."""
    table = dict(lat.link)
    names, cls = topo.class_names, np.asarray(topo.link_class)
    one = lat.send_overhead + lat.recv_overhead
    if path:
        router_links = sum(f for lk, f in path.items() if lk < topo.n_router_links)
        one += sum(f * table.get(names[cls[lk]], table.get("default", 0.0)) for lk, f in path.items())
        one += lat.router * (1.0 + router_links)
    if lat.eager_threshold is not None and b > lat.eager_threshold:
        one *= 1 + 2 * lat.rendezvous_round_trips
    return one


def _bound(topo, paths, nbytes) -> float:
    load = np.zeros(topo.n_links)
    for p, b in zip(paths, nbytes):
        for lk, f in p.items():
            load[lk] += b * f
    return float(np.max(load / np.asarray(topo.capacity)))


def _max_min(paths, cap, nbytes, start, weight=None):
    """Finish time of every message (None: 0 bytes, no message): weighted progressive filling, recomputed at every
    start and finish; a message crossing no link arrives when it starts."""
    F = len(nbytes)
    w = [1.0] * F if weight is None else list(weight)
    rem = [float(b) for b in nbytes]
    fin: list = [None] * F
    pending = set()
    for f in range(F):
        if nbytes[f] > 0:
            if paths[f]:
                pending.add(f)
            else:
                fin[f] = start[f]
    now = min((start[f] for f in pending), default=0.0)
    while pending:
        act = [f for f in pending if start[f] <= now]
        rate, used, rising, level = {}, {}, set(act), 0.0
        while rising:  # progressive filling
            coef: dict[int, float] = {}
            for f in rising:
                for lk, fr in paths[f].items():
                    coef[lk] = coef.get(lk, 0.0) + w[f] * fr
            level = max(level, min((cap[lk] - used.get(lk, 0.0)) / c for lk, c in coef.items()))
            full = {lk for lk, c in coef.items() if (cap[lk] - used.get(lk, 0.0)) / c <= level * (1 + 1e-12)}
            for f in [f for f in rising if full & paths[f].keys()]:
                rate[f] = w[f] * level
                for lk, fr in paths[f].items():
                    used[lk] = used.get(lk, 0.0) + rate[f] * fr
                rising.discard(f)
        waiting = [start[f] for f in pending if start[f] > now]
        to_end = {f: rem[f] / rate[f] for f in act}
        dt = min(to_end.values(), default=np.inf)
        if waiting and min(waiting) - now <= dt:
            dt = min(waiting) - now
        for f in act:
            if to_end[f] <= dt * (1 + 1e-12):
                fin[f] = now + dt
                pending.discard(f)
            else:
                rem[f] -= rate[f] * dt
        now += dt
    return fin


# -- random differential cases --------------------------------------------------------------------------------------

LAT_TORUS = Latency(send_overhead=3e-7, recv_overhead=2e-7, router=5e-8,
                    link=(("torus-dim0", 1e-8), ("torus-dim1", 4e-8), ("injection", 3e-8), ("ejection", 6e-8)),
                    eager_threshold=500.0, rendezvous_round_trips=1)
LAT_DF = Latency(send_overhead=1e-7, recv_overhead=2e-7, router=7e-8,
                 link=(("local", 2e-8), ("global", 3e-7), ("default", 1e-8)), eager_threshold=500.0,
                 rendezvous_round_trips=2)
LAT_FT = Latency(send_overhead=1e-7, recv_overhead=1e-7, router=9e-8, link=(("default", 1e-8), ("injection", 5e-8)),
                 eager_threshold=500.0, rendezvous_round_trips=1)

CASES = [  # (name, topology, routing, latency, fairness)
    ("torus-tie-split", lambda: ev.torus([4, 3], link_bandwidth=[2e9, 1e9], nodes_per_router=2),
     ev.dor(tie="split"), LAT_TORUS, "flow"),
    ("mesh", lambda: ev.torus([3, 4], wrap=False), ev.dor(), LAT_TORUS, "rtt"),
    ("df-valiant", lambda: ev.dragonfly(2, 4, 2), ev.valiant(), LAT_DF, "flow"),
    ("ft-ecmp-spray", lambda: ev.topology.fat_tree(k=4, levels=2), ev.routing.ecmp_spray(), LAT_FT, "rtt"),
]


@pytest.mark.parametrize("name,make,routing,lat,fairness", CASES, ids=[c[0] for c in CASES])
def test_times_equal_the_walked_reference(name, make, routing, lat, fairness):
    """Three phases of random messages, two tasks per node (intra-node pairs forced in), sizes on both sides of
    the eager threshold and at it: the bound, the time with latency (per phase, total, share) and max-min sharing
    (every message's finish, each phase's last, the sum) equal the references."""
    topo = make().with_latency(lat)
    op = build_routing(topo, routing)
    rng = np.random.default_rng(17)
    n = topo.n_nodes
    T = 2 * n
    tn = rng.permutation(np.repeat(np.arange(n), 2))
    mates = {int(a): int(np.flatnonzero((tn == tn[a]) & (np.arange(T) != a))[0]) for a in range(T)}
    phases = []
    for k in range(3):
        src, dst = rng.integers(0, T, 16), rng.integers(0, T, 16)
        dst[:3] = [mates[int(s)] for s in src[:3]]  # two tasks of one node
        nb = rng.choice([100.0, 500.0, 501.0, 3000.0, 1e5], 16)
        phases.append(traffic.Traffic(T, src, dst, nb, f"p{k}"))
    ds = ev.evaluate(topo, traffic.phased(phases), placement.explicit(topo, tn), routing, sharing="max_min",
                     fairness=fairness)
    cap = list(np.asarray(topo.capacity))
    bw, lam_max, fin = [], [], []
    for x in phases:
        paths = [_links(topo, op, int(tn[s]), int(tn[d])) for s, d in zip(x.src, x.dst)]
        lam = [_latency(topo, lat, p, b) for p, b in zip(paths, x.nbytes)]
        bw.append(_bound(topo, paths, x.nbytes))
        lam_max.append(max(lam))
        fin.append(_max_min(paths, cap, list(x.nbytes), lam,
                            None if fairness == "flow" else [1.0 / v for v in lam]))
    bw, lam_max, fin = np.array(bw), np.array(lam_max), np.array(fin, float)
    np.testing.assert_allclose(ds["phase_completion_time"].values, bw, rtol=TOL)
    np.testing.assert_allclose(ds["phase_time_with_latency"].values, bw + lam_max, rtol=TOL)
    assert float(ds.time_with_latency) == pytest.approx(float((bw + lam_max).sum()), rel=TOL)
    assert float(ds.latency_share) == pytest.approx(float(lam_max.sum() / (bw + lam_max).sum()), rel=TOL)
    np.testing.assert_allclose(ds["message_finish_time"].values, fin, rtol=TOL)
    np.testing.assert_allclose(ds["phase_time_max_min"].values, fin.max(axis=1), rtol=TOL)
    assert float(ds.time_max_min) == pytest.approx(float(fin.max(axis=1).sum()), rel=TOL)


# -- closed forms and edge cases ------------------------------------------------------------------------------------

def _line():
    """A line of 4 nodes, 1 GB/s router links, 1 us per router link, free node links."""
    return ev.torus([4], wrap=False, link_bandwidth=1e9, injection_bandwidth=1e15).with_latency(
        Latency(link=(("torus-dim0", 1e-6),)))


@pytest.mark.parametrize("fairness,b_finish", [("flow", 9e-6), ("rtt", 7e-6)])
def test_two_messages_share_one_link(fairness, b_finish):
    """A: 0 -> 3 (10 kB, 3 us), B: 1 -> 2 (5 kB, 1 us) share link 1 -> 2. B alone until 3 us (2 kB sent); then
    flow-fair halves (B's 3 kB at 0.5 GB/s: 9 us), rtt-fair 3:1 for B (0.75 GB/s: 7 us); A ends at 16 us either
    way (10 kB, 15 kB in all through the shared link from 1 us on). The bound 15 us + the slowest latency 3 us."""
    t = _line()
    tr = traffic.from_flows(4, [0, 1], [3, 2], [1e4, 5e3])
    ds = ev.evaluate(t, tr, placement.linear(t, 4), "dor", sharing="max_min", fairness=fairness)
    np.testing.assert_allclose(ds["message_finish_time"].values, [16e-6, b_finish], rtol=1e-12)
    assert float(ds.time_max_min) == pytest.approx(16e-6, rel=1e-12)
    assert float(ds.completion_time) == pytest.approx(15e-6, rel=1e-12)
    assert float(ds.time_with_latency) == pytest.approx(18e-6, rel=1e-12)
    assert float(ds.latency_share) == pytest.approx(3 / 18, rel=1e-12)


def test_single_message_and_eager_threshold_at_its_size():
    """One message of b bytes over 2 router links: max-min = latency + b / B; the threshold equal to b: eager
    (docs/latency.md: rendezvous for b_m > eager_threshold); one byte below: 1 + 2 R one-way latencies."""
    base = dict(send_overhead=1e-6, recv_overhead=5e-7, router=1e-7, link=(("default", 1e-8),),
                rendezvous_round_trips=2)
    one_way = 1.5e-6 + 3 * 1e-7 + 4 * 1e-8  # 3 routers, inj + 2 + ej links
    tr = traffic.from_flows(4, [0], [2], [4096.0])
    for eager, factor in ((4096.0, 1.0), (4095.0, 5.0), (None, 1.0)):
        t = ev.torus([4], wrap=False, link_bandwidth=1e9, injection_bandwidth=1e15).with_latency(
            Latency(**base, eager_threshold=eager))
        ds = ev.evaluate(t, tr, placement.linear(t, 4), "dor", sharing="max_min")
        lam = one_way * factor
        assert float(ds.time_with_latency) == pytest.approx(4096e-9 + lam, rel=1e-12), eager
        assert float(ds.time_max_min) == pytest.approx(4096e-9 + lam, rel=1e-12), eager


def test_every_latency_zero_with_tasks_per_node():
    """Every latency 0 (two tasks per node, intra-node pairs): time_with_latency is the bound, max-min of equal
    messages starting together too (DESIGN.md "This is a bound, and a good one")."""
    t = ev.torus([4, 2], nodes_per_router=2).with_latency(Latency())
    rng = np.random.default_rng(2)
    tn = np.repeat(np.arange(t.n_nodes), 2)
    src = np.arange(2 * t.n_nodes)
    dst = rng.permutation(src)
    ds = ev.evaluate(t, traffic.from_flows(src.size, src, dst, np.full(src.size, 1e5)), placement.explicit(t, tn),
                     "dor", sharing="max_min")
    assert float(ds.time_with_latency) == float(ds.completion_time)
    assert float(ds.latency_share) == 0.0
    assert float(ds.time_max_min) == pytest.approx(float(ds.completion_time), rel=1e-12)


@pytest.mark.parametrize("n_tasks,tasks_per_node", [(4, 1), (4, 2)])
def test_dense_exchange_within_one_router_counts_its_router_once(n_tasks, tasks_per_node):
    """A dense all-to-all whose tasks all hang off one router (a Dragonfly router of 4 nodes): its slowest message
    crosses its injection link, the router and its ejection link (one router), as the same traffic listed as
    flows; the dense search counted the router twice."""
    lat = Latency(send_overhead=1e-7, router=1e-6, link=(("default", 1e-8),))
    t = ev.dragonfly(4, 4, 2).with_latency(lat)
    tn = np.repeat(np.arange(n_tasks // tasks_per_node), tasks_per_node)
    pl = placement.explicit(t, tn)
    dense = traffic.dense.dense(n_tasks, 1.0, 1.0, bytes_per_pair=100.0)
    assert dense.phases[0].kernel_input == "dense"
    a = ev.evaluate(t, dense, pl, "minimal")
    b = ev.evaluate(t, dense.to_flows(), pl, "minimal")
    want = 1e-7 + 1e-6 + 2e-8
    assert float(b.time_with_latency - b.completion_time) == pytest.approx(want, rel=1e-12)
    assert float(a.time_with_latency - a.completion_time) == pytest.approx(want, rel=1e-12)


def test_zero_byte_messages_are_no_messages():
    """The model's treatment of a message of 0 bytes in a user's traffic (pinned; docs/latency.md does not say):
    it is no message at all, in both times: it adds no latency to time_with_latency (even as a phase's farthest
    message, or its only one), max-min gives it no finish time (NaN) and ends without it."""
    t = ev.torus([8], wrap=False).with_latency(Latency(send_overhead=1e-6, router=1e-7, link=(("default", 1e-8),)))
    pl = placement.linear(t, 8)
    near = 1e-6 + 2 * 1e-7 + 3 * 1e-8  # 1 -> 2
    ds = ev.evaluate(t, traffic.from_flows(8, [0, 1], [7, 2], [0.0, 10.0]), pl, "dor", sharing="max_min")
    assert float(ds.time_with_latency) == pytest.approx(float(ds.completion_time) + near, rel=1e-12)
    assert float(ds.time_max_min) == pytest.approx(near + 10.0 / 2e9, rel=1e-12)
    fin = ds["message_finish_time"].values
    assert np.isnan(fin[0]) and fin[1] == pytest.approx(near + 10.0 / 2e9, rel=1e-12)
    only = ev.evaluate(t, traffic.from_flows(8, [0], [7], [0.0]), pl, "dor", sharing="max_min")
    assert float(only.time_with_latency) == 0.0 and float(only.time_max_min) == 0.0


def test_dense_rendezvous_is_counted_per_router_pair_as_its_listed_flows():
    """A dense exchange of unequal weights on a line of 8 routers: a large near pair (node 6 to 7, 2,000 B, above
    the 1,000 B threshold) and a small far one (node 0 to 7, 200 B, eager). The dense search gave every router
    pair the exchange's largest bytes, so the far pair paid round trips (3.27 us here, three times its 1.09 us);
    each router pair now takes its own largest bytes, as the same traffic listed as flows does: 1.29 us, the
    near pair's rendezvous."""
    lat = Latency(send_overhead=2e-7, router=1e-7, link=(("default", 1e-8),), eager_threshold=1000,
                  rendezvous_round_trips=1)
    t = ev.torus([8], wrap=False).with_latency(lat)
    ws = np.zeros(8)
    ws[[0, 6]] = [0.1, 1.0]
    wd = np.zeros(8)
    wd[7] = 1.0
    dense = traffic.dense.dense(8, ws, wd, bytes_per_pair=2000.0)
    assert dense.phases[0].kernel_input == "dense"
    pl = placement.linear(t, 8)
    a = ev.evaluate(t, dense, pl, "dor")
    b = ev.evaluate(t, dense.to_flows(), pl, "dor")
    far = 2e-7 + 8 * 1e-7 + 9 * 1e-8          # eager: overhead, 8 routers crossed, 9 links (its node links too)
    near = (2e-7 + 2 * 1e-7 + 3 * 1e-8) * 3   # rendezvous: 2 routers, 3 links, times 1 + 2 round trips
    assert near > far
    assert float(b.time_with_latency - b.completion_time) == pytest.approx(near, rel=1e-9)
    assert float(a.time_with_latency - a.completion_time) == pytest.approx(near, rel=1e-9)
