"""``sharing="max_min"`` of :func:`evaluator.evaluate`: flow-level max-min fair sharing, every message starting
after its latency, against a reference built without the evaluator's routing or kernel.

The reference walks every flow's paths (tests/reference.py), makes each flow's ``{link: fraction}`` from them and
the node links, its latency from tests/test_latency.py's walk, and runs the plain-Python event loop of
tests/test_flowlevel.py. Also: equal flows at zero latency take exactly the bound; the message finish times; the
options' errors.
"""

from __future__ import annotations

import numpy as np
import pytest

import evaluator as ev
from evaluator import placement, traffic
from evaluator.errors import ConfigError
from evaluator.latency import Latency
from reference import reference_paths
from test_flowlevel import ref_finish
from test_latency import _walk_latency

TOL = 1e-9


def _walk_paths(topology, routing: dict, tn, src, dst):
    """Each flow's ``{link: fraction}``: its router links' expected fractions and its node links."""
    n_rl, n = topology.n_router_links, topology.n_nodes
    out = []
    for s, d in zip(src, dst):
        sn, dn = int(tn[s]), int(tn[d])
        links: dict[int, float] = {}
        if sn != dn:
            links[n_rl + sn] = 1.0
            links[n_rl + n + dn] = 1.0
            sr, dr = int(topology.node_router[sn]), int(topology.node_router[dn])
            for prob, path in reference_paths(topology, sr, dr, routing):
                for link in path:
                    links[link] = links.get(link, 0.0) + prob
        out.append(links)
    return out


CASES = [
    ("torus-dor", lambda: ev.torus([4, 3], link_bandwidth=[2e9, 1e9], nodes_per_router=2), "dor",
     {"kind": "dor", "order": "as_given", "tie": "split"}),
    ("df-minimal", lambda: ev.dragonfly(2, 4, 2), "minimal", {"kind": "minimal"}),
    ("df-valiant", lambda: ev.dragonfly(2, 4, 2), "valiant", {"kind": "valiant"}),
]
LAT = Latency(send_overhead=2e-7, recv_overhead=1e-7, router=5e-8, link=(("default", 2e-8), ("global", 3e-7)))


@pytest.mark.parametrize("latency", [None, LAT], ids=["no-latency", "latency"])
@pytest.mark.parametrize("name,make,routing,ref", CASES, ids=[c[0] for c in CASES])
def test_max_min_equals_reference_event_loop(name, make, routing, ref, latency):
    rng = np.random.default_rng(5)
    topo = make()
    if latency is not None:  # (the global class where the network has one)
        latency = Latency(**{**latency.__dict__, "link": tuple((c, v) for c, v in latency.link
                                                               if c == "default" or c in topo.class_names)})
        topo = topo.with_latency(latency)
    n = topo.n_nodes
    F = 30
    src, dst = rng.integers(0, n, F), rng.integers(0, n, F)
    nb = rng.integers(1, 10**6, F).astype(float)
    tr = traffic.from_flows(n, src, dst, nb)
    pl = placement.fully_random(topo, n, seed=4)
    ds = ev.evaluate(topo, tr, pl, routing, sharing="max_min")
    tn = np.asarray(pl.task_node)
    paths = _walk_paths(topo, ref, tn, src, dst)
    start = [0.0 if latency is None else _walk_latency(topo, latency, ref, int(tn[s]), int(tn[d]))
             for s, d in zip(src, dst)]
    want = np.array(ref_finish(paths, list(np.asarray(topo.capacity)), list(nb), start))
    got = ds["message_finish_time"].values
    np.testing.assert_allclose(got, want, rtol=TOL)
    assert float(ds.time_max_min) == pytest.approx(want.max(), rel=TOL)
    assert float(ds.time_max_min) >= float(ds.completion_time) * (1 - TOL)  # never below the bound
    assert ds.attrs["sharing"] == "max_min" and "max-min" in ds.attrs["sharing_model"]


@pytest.mark.parametrize("name,make,routing,ref", CASES, ids=[c[0] for c in CASES])
def test_equal_flows_take_the_bound(name, make, routing, ref):
    """Equal sizes, all starting together, no latency: max-min ends exactly at the bound (DESIGN.md)."""
    topo = make()
    n = topo.n_nodes
    for tr in (traffic.random_permutation(n, 1e6, seed=1), traffic.all_to_all(n, 1e3),
               traffic.collective("allreduce", "recursive_doubling", n_tasks=n, nbytes=1e5)):
        ds = ev.evaluate(topo, tr, placement.linear(topo, n), routing, sharing="max_min")
        assert float(ds.time_max_min) == pytest.approx(float(ds.completion_time), rel=1e-12)


def test_phased_sum_and_message_times():
    """A collective: each phase's max-min time its last message's finish, the point's the sum; equal ring steps
    with 1 us per link: every step (n/p)/B + 1 us, every message the same."""
    t = ev.torus([8], link_bandwidth=1e9, injection_bandwidth=1e12).with_latency(
        Latency(link=(("torus-dim0", 1e-6),)))
    tr = traffic.collective("allreduce", "ring", n_tasks=8, nbytes=8192.0)
    ds = ev.evaluate(t, tr, placement.linear(t, 8), "dor", sharing="max_min")
    step = 1024 / 1e9 + 1e-6  # (the flow crosses 1 TB/s node links and a 1 GB/s ring link: rate 1 GB/s)
    assert ds["message_finish_time"].dims == ("phase", "message")
    np.testing.assert_allclose(ds["message_finish_time"].values, step, rtol=1e-12)
    np.testing.assert_allclose(ds["phase_time_max_min"].values, step, rtol=1e-12)
    assert float(ds.time_max_min) == pytest.approx(14 * step, rel=1e-12)


def test_batch_and_errors():
    t = ev.torus([4])
    trs = [traffic.from_flows(4, [0, 1], [2, 3], [1.0, b]) for b in (1.0, 3.0)]
    res = ev.evaluate_batch(t, "dor", trs, placement.linear(t, 4), sharing="max_min")
    assert res.metrics["time_max_min"].shape == (2,) and res.flows is not None
    assert "time_max_min" not in ev.evaluate_batch(t, "dor", trs, placement.linear(t, 4)).metrics
    with pytest.raises(ConfigError, match=r"sharing = 'maxmin' is invalid.*Did you mean 'max_min'"):
        ev.evaluate(t, trs[0], placement.linear(t, 4), "dor", sharing="maxmin")
    with pytest.raises(ConfigError, match=r"fairness = 'flows' is invalid"):
        ev.evaluate(t, trs[0], placement.linear(t, 4), "dor", sharing="max_min", fairness="flows")
    with pytest.raises(ConfigError, match=r"fairness = 'rtt' is invalid: allowed is a latency model"):
        ev.evaluate(t, trs[0], placement.linear(t, 4), "dor", sharing="max_min", fairness="rtt")
