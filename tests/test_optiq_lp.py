"""``optiq_lp`` (Bui et al. Model 1 as a routing) against hand optima and independent checks.

* a 4-ring with one pair at distance 2: DOR (one path) gives ``bytes / c``,
  the LP over both directions ``bytes / (2 c)`` (Z = 2 in units of c / bytes);
* the loads the kernel puts on the router links equal the LP's own flows walked
  path by path (``incidence @ flow / Z``), and the largest router-link
  utilisation is ``1 / Z``;
* never worse than ``kshortest`` over the same k paths (the even split is a
  feasible split of the LP), on random traffic on a torus and a Dragonfly;
* every point of a batch with its own demand gets its own split (equal to one
  call per point);
* bad input: an unknown solver, an operator asked for without its demand.
"""

from __future__ import annotations

import numpy as np
import pytest

import evaluator as ev
from evaluator import placement as PL
from evaluator import routing as RT
from evaluator import topology as T
from evaluator import traffic as TR
from evaluator.traffic._all_to_all import all_to_all_dense
from evaluator.errors import ConfigError
from evaluator.routing._optiq_lp import lp_split
from evaluator.routing._paths import PairSet, path_incidence
from tests.helpers import TOL


def _router_utilisation(topo, ds) -> float:
    load = np.asarray(ds.link_load.values)[: topo.n_router_links]
    return float((load / topo.capacity[: topo.n_router_links]).max())


def test_four_ring_one_pair_at_distance_two():
    c = 1.0e9
    topo = T.torus((4,), link_bandwidth=c, injection_bandwidth=1.0e12)
    traffic = TR.from_flows(4, [0], [2], [8.0e6])
    place = PL.linear(topo, 4)
    dor = ev.evaluate(topo, traffic, place, RT.dor(tie="positive"))  # one path
    lp = ev.evaluate(topo, traffic, place, RT.optiq_lp(k=2))
    # hand optima: one direction carries all 8 MB; both directions carry 4 MB each, over 2 hops
    assert float(dor.completion_time) == pytest.approx(8.0e6 / c, rel=TOL["rel"])
    assert float(lp.completion_time) == pytest.approx(8.0e6 / (2 * c), rel=TOL["rel"])


@pytest.mark.parametrize("make", [lambda: T.torus((3, 3, 2)), lambda: T.dragonfly(p=1, a=4, h=1)],
                         ids=["torus3x3x2", "DF(1,4,1)"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_kernel_loads_are_the_lp_flows_and_never_worse_than_kshortest(make, seed):
    topo = make()
    rng = np.random.default_rng(seed)
    n = topo.n_nodes
    m = 3 * n
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    nbytes = rng.integers(1, 9, m).astype(np.float64) * 1.0e5
    traffic = TR.from_flows(n, src, dst, nbytes)
    place = PL.linear(topo, n)
    k = 4
    lp = ev.evaluate(topo, traffic, place, RT.optiq_lp(k=k))
    ks = ev.evaluate(topo, traffic, place, RT.kshortest(k=k))
    # never worse than the even split of the same paths (router links, and so the completion time)
    assert _router_utilisation(topo, lp) <= _router_utilisation(topo, ks) * (1 + TOL["rel"])
    assert float(lp.completion_time) <= float(ks.completion_time) * (1 + TOL["rel"])
    # the kernel's router-link loads are the LP's flows walked over the paths (bytes = flow / Z)
    tr = topo.node_router[place.task_node]
    s, d = tr[src], tr[dst]
    keep = s != d
    pairs = PairSet(s[keep] * topo.n_routers + d[keep], topo.n_routers, nbytes[keep])
    table, bound = lp_split(topo, RT.optiq_lp(k=k).bind(pairs))
    inc, _ = path_incidence(table)
    want = inc @ (np.asarray(bound.flow) / bound.z)
    got = np.asarray(lp.link_load.values)[: topo.n_router_links]
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6 * float(nbytes.max()))
    assert _router_utilisation(topo, lp) == pytest.approx(1.0 / bound.z, rel=1e-6)


def test_each_point_gets_its_own_split():
    topo = T.torus((4, 4))
    place = PL.linear(topo, 16)
    rng = np.random.default_rng(5)
    traffics = []
    for _ in range(3):
        src, dst = rng.integers(0, 16, 40), rng.integers(0, 16, 40)
        traffics.append(TR.from_flows(16, src, dst, rng.integers(1, 5, 40).astype(np.float64) * 1e6))
    batch = ev.evaluate_batch(topo, RT.optiq_lp(k=4), traffics, [place] * 3)
    for i, t in enumerate(traffics):
        one = ev.evaluate(topo, t, place, RT.optiq_lp(k=4))
        assert float(batch.metrics["completion_time"][i]) == pytest.approx(float(one.completion_time), rel=TOL["rel"])


def test_dense_traffic_demand_per_router_pair():
    topo = T.torus((3, 3))
    place = PL.linear(topo, 9)
    dense = all_to_all_dense(9, 1.0e6)
    lp = ev.evaluate(topo, dense, place, RT.optiq_lp(k=4))
    ks = ev.evaluate(topo, dense, place, RT.kshortest(k=4))
    assert float(lp.completion_time) <= float(ks.completion_time) * (1 + TOL["rel"])
    assert float(lp.total_bytes) == pytest.approx(float(ks.total_bytes), rel=TOL["rel"])


def test_bad_input():
    with pytest.raises(ConfigError) as e:
        RT.optiq_lp(solver="cplex")
    assert "routing.solver" in str(e.value) and "cplex" in str(e.value)
    with pytest.raises(ConfigError) as e:
        RT.optiq_lp(k=0)
    assert "routing.k" in str(e.value)
    topo = T.torus((4,))
    with pytest.raises(ConfigError) as e:
        lp_split(topo, RT.optiq_lp(k=2).bind(PairSet([2], 4)))
    assert "routing.pairs" in str(e.value)
