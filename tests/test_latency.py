"""The latency model (evaluator/latency.py, evaluator/_batch/latency.py) against a per-flow walk and closed forms.

* every message's latency is the overheads plus its path's wire and router latency, the expectation over the
  routing's paths (tests/reference.py walks them), plus the rendezvous round trips above the eager threshold;
* a phase's ``phase_time_with_latency`` is its bound plus its slowest message's latency, summed into
  ``time_with_latency``; with every latency zero every number is the bound's, bit for bit;
* config: ``topology.latency.*`` keys, a machine file's block, the errors.
"""

from __future__ import annotations

import numpy as np
import pytest

import evaluator as ev
from evaluator import placement, traffic
from evaluator.errors import ConfigError, ResourceError
from evaluator.latency import Latency, latency_from_config, link_latency
from reference import reference_paths

LAT = Latency(send_overhead=3e-7, recv_overhead=2e-7, router=5e-8,
              link=(("default", 1e-8), ("global", 2e-7), ("injection", 3e-8)))
TORUS_LAT = Latency(send_overhead=3e-7, recv_overhead=2e-7, router=5e-8,
                    link=(("default", 1e-8), ("torus-dim1", 4e-8), ("ejection", 6e-8)))


def _walk_latency(topology, lat: Latency, routing: dict, sn: int, dn: int) -> float:
    """One message's latency from node ``sn`` to node ``dn``, walked: its paths' links and routers, weighted by
    the paths' probabilities (tests/reference.py); written from evaluator/latency.py's docstring."""
    if sn == dn:
        return lat.overhead
    wire = dict(lat.link)

    def w(cls):
        return wire.get(cls, wire.get("default", 0.0))

    names = topology.class_names
    cls = np.asarray(topology.link_class)
    sr, dr = int(topology.node_router[sn]), int(topology.node_router[dn])
    ends = w("injection") + w("ejection") + lat.router  # injection ends at the first router
    hops = 0.0
    for prob, links in reference_paths(topology, sr, dr, routing):
        hops += prob * sum(w(names[cls[link]]) + lat.router for link in links)
    return lat.overhead + ends + hops


def _rand_flows(rng, n_tasks, n_flows):
    src = rng.integers(0, n_tasks, n_flows)
    dst = rng.integers(0, n_tasks, n_flows)
    nb = rng.integers(1, 1000, n_flows).astype(float)
    return src, dst, nb


CASES = [
    ("torus", lambda: ev.torus([4, 3, 2], link_bandwidth=[2e9, 1e9, 3e9], nodes_per_router=2), "dor",
     {"kind": "dor", "order": "as_given", "tie": "split"}, TORUS_LAT),
    ("mesh", lambda: ev.torus([5, 4], wrap=[False, True]), "dor",
     {"kind": "dor", "order": "as_given", "tie": "split"}, TORUS_LAT),
    ("df-minimal", lambda: ev.dragonfly(2, 4, 2), "minimal", {"kind": "minimal"}, LAT),
    ("df-valiant", lambda: ev.dragonfly(2, 4, 2), "valiant", {"kind": "valiant"}, LAT),
    ("df-valiant_router", lambda: ev.dragonfly(2, 4, 2), "valiant_router", {"kind": "valiant_router"}, LAT),
]


@pytest.mark.parametrize("name,make,routing,ref,lat", CASES, ids=[c[0] for c in CASES])
def test_message_latency_equals_walk(name, make, routing, ref, lat):
    """Each phase's slowest message, over random flows, equals the walk's (one flow per phase: the max is that
    flow's own latency, so every flow's latency is checked)."""
    rng = np.random.default_rng(7)
    topo = make().with_latency(lat)
    n = topo.n_nodes
    src, dst, nb = _rand_flows(rng, n, 24)
    phases = [traffic.Traffic(n, src[i:i + 1], dst[i:i + 1], nb[i:i + 1], f"m{i}") for i in range(src.size)]
    tr = traffic.phased(phases)
    pl = placement.fully_random(topo, n, seed=3)
    ds = ev.evaluate(topo, tr, pl, routing)
    got = ds["phase_time_with_latency"].values - ds["phase_completion_time"].values
    tn = np.asarray(pl.task_node)
    want = np.array([_walk_latency(topo, lat, ref, int(tn[s]), int(tn[d])) for s, d in zip(src, dst)])
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-20)
    np.testing.assert_allclose(float(ds.time_with_latency), float(ds.completion_time) + want.sum(), rtol=1e-12)


@pytest.mark.parametrize("name,make,routing,ref,lat", CASES, ids=[c[0] for c in CASES])
def test_phase_is_bound_plus_slowest_message(name, make, routing, ref, lat):
    """Many flows in one exchange: time = bound + the largest walked latency over its messages (bytes > 0)."""
    rng = np.random.default_rng(11)
    topo = make().with_latency(lat)
    n = topo.n_nodes
    src, dst, nb = _rand_flows(rng, n, 40)
    nb[::5] = 0.0  # zero-byte flows send nothing: no message
    tr = traffic.from_flows(n, src, dst, nb)
    pl = placement.linear(topo, n)
    ds = ev.evaluate(topo, tr, pl, routing)
    tn = np.asarray(pl.task_node)
    want = max(_walk_latency(topo, lat, ref, int(tn[s]), int(tn[d])) for s, d, b in zip(src, dst, nb) if b > 0)
    assert float(ds.time_with_latency) == pytest.approx(float(ds.completion_time) + want, rel=1e-12)
    share = want / (float(ds.completion_time) + want)
    assert float(ds.latency_share) == pytest.approx(share, rel=1e-12)


def test_fat_tree_latency_counts_tiers():
    """A k-ary 3-tree: a message within a leaf crosses 1 switch and 2 node links, within a pod 3 switches and 2
    tier-1 links, across pods 5 switches and 4 tier links (D-mod-k, hashed ECMP and the spray alike)."""
    ft = ev.topology.fat_tree(k=4, levels=3)
    lat = Latency(send_overhead=1e-6, router=1e-7, link=(("default", 1e-8),))
    ft = ft.with_latency(lat)
    n = ft.n_nodes
    for routing in ("dmodk", "ecmp", "ecmp_spray"):
        for dst, switches in ((1, 1), (4, 3), (16, 5)):  # same leaf, same pod, another pod
            tr = traffic.from_flows(n, [0], [dst], [1000.0])
            ds = ev.evaluate(ft, tr, placement.linear(ft, n), routing)
            links = 2 + (switches - 1)  # node links + switch links
            want = 1e-6 + switches * 1e-7 + links * 1e-8
            assert float(ds.time_with_latency) - float(ds.completion_time) == pytest.approx(want, rel=1e-12)


def test_ring_allreduce_closed_form():
    """Ring allreduce on an 8-node ring, 1 us per link, injection free: 14 steps of (n/8)/B + 1 us, as SMPI's
    steady state (docs/collectives.md)."""
    t = ev.torus([8], link_bandwidth=1e9, injection_bandwidth=1e12).with_latency(
        Latency(link=(("torus-dim0", 1e-6),)))
    for nbytes in (8.0, 8192.0, 8388608.0):
        tr = traffic.collective("allreduce", "ring", n_tasks=8, nbytes=nbytes)
        ds = ev.evaluate(t, tr, placement.linear(t, 8), "dor")
        step_bw = max(nbytes / 8 / 1e9, nbytes / 8 / 1e12)
        assert float(ds.time_with_latency) == pytest.approx(14 * (step_bw + 1e-6), rel=1e-12)
        np.testing.assert_allclose(ds["phase_time_with_latency"].values, step_bw + 1e-6, rtol=1e-12)


def test_rendezvous_round_trips():
    """Above the eager threshold a message pays its one-way latency once more per control message: 2 R x."""
    base = dict(send_overhead=1e-6, recv_overhead=1e-6, link=(("default", 1e-7),))
    t = ev.torus([4])
    tr_small = traffic.from_flows(4, [0], [2], [100.0])
    tr_big = traffic.from_flows(4, [0], [2], [1e6])
    one_way = 2e-6 + 4 * 1e-7  # inj + 2 torus links + ej
    for R in (0, 1, 2):
        tl = t.with_latency(Latency(**base, eager_threshold=1000.0, rendezvous_round_trips=R))
        small = ev.evaluate(tl, tr_small, placement.linear(tl, 4), "dor")
        big = ev.evaluate(tl, tr_big, placement.linear(tl, 4), "dor")
        assert float(small.time_with_latency - small.completion_time) == pytest.approx(one_way, rel=1e-12)
        assert float(big.time_with_latency - big.completion_time) == pytest.approx(one_way * (1 + 2 * R), rel=1e-12)


def test_zero_latency_changes_nothing():
    """Every latency zero: every number the bandwidth model's, bit for bit, and time_with_latency the bound."""
    rng = np.random.default_rng(1)
    for topo, routing in ((ev.torus([4, 4]), "dor"), (ev.dragonfly(2, 4, 2), "valiant"),
                          (ev.topology.fat_tree(k=4, levels=2), "dmodk")):
        n = topo.n_nodes
        trs = [traffic.from_flows(n, *_rand_flows(rng, n, 30)), traffic.all_to_all(n),
               traffic.collective("allreduce", "rabenseifner", n_tasks=n, nbytes=1e5)]
        for tr in trs:
            pl = placement.fully_random(topo, n, seed=2)
            plain = ev.evaluate(topo, tr, pl, routing)
            zero = ev.evaluate(topo.with_latency(Latency()), tr, pl, routing)
            for v in plain.data_vars:
                np.testing.assert_array_equal(zero[v].values, plain[v].values, err_msg=str(v))
            assert float(zero.time_with_latency) == float(plain.completion_time)
            assert float(zero.latency_share) == 0.0
            assert "time_with_latency" not in plain


def test_dense_traffic_latency_is_the_farthest_pair():
    """All-to-all (dense, never listed by the kernel) on a 6-ring with DOR: the farthest pair is 3 hops."""
    t = ev.torus([6]).with_latency(Latency(router=1e-7, link=(("default", 1e-8),)))
    ds = ev.evaluate(t, traffic.all_to_all(6), placement.linear(t, 6), "dor")
    want = 4 * 1e-7 + 5 * 1e-8  # 3 hops: 4 routers, inj + 3 + ej links
    assert float(ds.time_with_latency - ds.completion_time) == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize("make,routing", [(lambda: ev.torus([4, 3], nodes_per_router=2), "dor"),
                                          (lambda: ev.dragonfly(2, 4, 2), "valiant"),
                                          (lambda: ev.topology.fat_tree(k=4, levels=2), "dmodk")],
                         ids=["torus", "df-valiant", "fat-tree"])
def test_dense_equals_its_listed_flows(make, routing, monkeypatch):
    """A dense exchange's slowest message (searched over router pairs) equals the same traffic listed as flows;
    more router pairs than the search allows are refused, naming the option."""
    from evaluator._batch import latency as L

    lat = Latency(send_overhead=1e-7, router=3e-8, link=(("default", 1e-8),), eager_threshold=50.0)
    topo = make().with_latency(lat)
    n = topo.n_nodes
    rng = np.random.default_rng(3)
    w_s, w_d = rng.random(n) * (rng.random(n) > 0.3), rng.random(n) * (rng.random(n) > 0.3)
    dense = traffic.dense.dense(n, w_s, w_d, bytes_per_pair=100.0)
    pl = placement.fully_random(topo, n, seed=1, tasks_per_node=2) if n > 8 else placement.linear(topo, n)
    a = ev.evaluate(topo, dense, pl, routing)
    b = ev.evaluate(topo, dense.to_flows(), pl, routing)
    assert float(a.time_with_latency) == pytest.approx(float(b.time_with_latency), rel=1e-12)
    monkeypatch.setattr(L, "DENSE_PAIR_LIMIT", 1)
    with pytest.raises(ResourceError, match=r"topology\.latency = 'enabled' is invalid.*topology\.latency\.enabled=false"):
        ev.evaluate(topo, dense, pl, routing)


def test_config_keys_and_errors():
    from evaluator import config as C

    cfg = C.compose(["topology=torus", "topology.dims=[4]", "routing=dor", "traffic=collective",
                     "placement=linear", "topology.latency.router=1e-7", "topology.latency.wire=1e-8",
                     "+topology.latency.link.torus-dim0=2e-8", "topology.latency.eager_threshold=4096"])
    topo = C.build_topology(cfg.topology)
    assert topo.latency == Latency(router=1e-7, link=(("default", 1e-8), ("torus-dim0", 2e-8)),
                                   eager_threshold=4096.0)
    d = link_latency(topo, topo.latency)
    assert d[0] == pytest.approx(1.2e-7) and d[-1] == pytest.approx(1e-8)  # a torus link; an ejection link
    # nothing set: no latency model at all
    assert C.build_topology(C.compose(["topology=torus"]).topology).latency is None
    with pytest.raises(ConfigError, match=r"topology\.latency\.link\.globl .*one of \['torus-dim0'"):
        C.build_topology(C.compose(["topology=torus", "topology.dims=[4]", "+topology.latency.link.globl=1e-6"])
                         .topology)
    with pytest.raises(ConfigError, match=r"topology\.latency\.router = -1"):
        latency_from_config({"router": -1.0})
    with pytest.raises(ConfigError, match=r"topology\.latency\.rout .*Did you mean 'router'"):
        latency_from_config({"rout": 1e-7})
    with pytest.raises(ConfigError, match=r"rendezvous_round_trips"):
        latency_from_config({"rendezvous_round_trips": 1.5})


def test_machine_block_and_override(tmp_path):
    """A machine file's latency block is the machine's default; topology.latency keys override it one by one; a
    bad block names the machine and its file."""
    from evaluator import config as C
    from evaluator.topology import machine_topology

    f = tmp_path / "ring.yaml"
    f.write_text("name: Ring8\nkind: topology\ntopology: {kind: torus, dims: [8]}\n"
                 "latency: {send_overhead: 1.0e-6, router: 5.0e-8, link: {torus-dim0: 2.0e-8}, eager_threshold: 8192}\n")
    assert machine_topology(str(f)).latency is None  # the machine's figures only where a latency model is asked for
    topo = machine_topology(str(f), latency=True)
    assert topo.latency == Latency(send_overhead=1e-6, router=5e-8, link=(("torus-dim0", 2e-8),),
                                   eager_threshold=8192.0)
    over = C.build_topology(C.compose(["topology=machine", f"topology.name={f}", "topology.partition=null",
                                       "topology.latency.router=1e-6", "topology.latency.wire=3e-9"]).topology)
    assert over.latency == Latency(send_overhead=1e-6, router=1e-6, link=(("default", 3e-9), ("torus-dim0", 2e-8)),
                                   eager_threshold=8192.0)
    f.write_text("name: Ring8\nkind: topology\ntopology: {kind: torus, dims: [8]}\nlatency: {link: {global: 1.0e-6}}\n")
    with pytest.raises(ConfigError, match=r"machine 'Ring8' \(.*ring.yaml\): topology\.latency\.link\.global"):
        machine_topology(str(f), latency=True)
    f.write_text("name: Ring8\nkind: topology\ntopology: {kind: torus, dims: [8]}\nlatency: {router: 1.0e-7}\n")
    on = C.compose(["topology=machine", f"topology.name={f}", "topology.partition=null",
                    "topology.latency.enabled=true"])
    assert C.build_topology(on.topology).latency == Latency(router=1e-7)
    off = C.compose(["topology=machine", f"topology.name={f}", "topology.partition=null",
                     "topology.latency.enabled=false", "topology.latency.wire=1e-6"])
    assert C.build_topology(off.topology).latency is None
    plain = C.compose(["topology=torus", "topology.latency.enabled=true"])
    assert C.build_topology(plain.topology).latency == Latency()  # on, every latency 0
