"""Routings on points where no byte crosses a router link (audit of degenerate routes).

Path-set routings (``kshortest``, ``optiq_heuristic``, ``optiq_lp``) built an
empty path table when no byte goes between two different routers (zero-byte
flows, self traffic, a one-router torus, a one-leaf fat tree, two tasks on
one router) and crashed in ``_link_rows``; the adaptive routings gathered
from an empty link-cost vector on a network without router links
(``ft_adaptive`` on a one-level fat tree, ``torus_adaptive`` on a one-router
torus). The reference here is a closed form: every byte that leaves its node
loads the node's injection link and the destination node's ejection link,
nothing else; the completion time is the largest ``load / capacity``.
"""

from __future__ import annotations

import numpy as np
import pytest

import evaluator as ev
import evaluator.routing as R
from evaluator import placement as P
from evaluator import traffic as T
from evaluator.topology import fat_tree

PATH_SETS = ("kshortest", "optiq_heuristic", "optiq_lp")


def _node_loads(topo, task_node, src, dst, nbytes):
    """Closed form: the link loads when every router is each flow's own (no router link used).

    A flow between two tasks on one node loads nothing; otherwise its bytes are on the source node's
    injection link (``link_src == -1`` and ``link_node`` the node) and the destination node's ejection link
    (``link_dst == -1``)."""
    ls, ld, ln = (np.asarray(a) for a in (topo.link_src, topo.link_dst, topo.link_node))
    load = np.zeros(ls.size)
    for s, d, b in zip(src, dst, nbytes):
        a, z = int(task_node[s]), int(task_node[d])
        if a == z:
            continue
        load[np.nonzero((ls == -1) & (ln == a))[0]] += b
        load[np.nonzero((ld == -1) & (ln == z))[0]] += b
    return load


def _time(topo, load):
    cap = np.asarray(topo.capacity, np.float64)
    return float(np.max(load / cap)) if load.size else 0.0


def _cases():
    t4 = ev.torus([4])
    t1 = ev.torus([1], nodes_per_router=2)
    ft = fat_tree(children=[4], parents=[1])
    t2 = ev.torus([2], nodes_per_router=2)
    return {
        "zero_bytes": (t4, (2, [0], [1], [0.0]), P.linear(t4, 2), "dor"),
        "self_only": (t4, (2, [0, 1], [0, 1], [1.0, 1.0]), P.linear(t4, 2), "dor"),
        "one_router_torus": (t1, (2, [0], [1], [1e9]), P.linear(t1, 2), "dor"),
        "one_leaf_fat_tree": (ft, (4, [0, 1, 2, 3], [1, 2, 3, 0], [1e9, 2e9, 3e9, 5e8]), P.block(ft, 4), "dmodk"),
        "two_tasks_one_router": (t2, (2, [0], [1], [1e9]), P.linear(t2, 2), "dor"),
    }


CASES = _cases()


def _check(res, topo, flows, pl):
    n, s, d, b = flows
    ref = _node_loads(topo, np.asarray(pl.task_node), s, d, b)
    np.testing.assert_allclose(np.asarray(res.link_load), ref, rtol=1e-12, atol=0)
    assert float(res.completion_time) == pytest.approx(_time(topo, ref), rel=1e-12, abs=0)
    return ref


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("kind", PATH_SETS)
def test_path_sets_without_router_pairs(case, kind):
    topo, flows, pl, base = CASES[case]
    tr = T.from_flows(*flows)
    res = ev.evaluate(topo, tr, pl, kind)
    ref = _check(res, topo, flows, pl)
    # the same loads as the oblivious routing (a second check, not the reference)
    np.testing.assert_allclose(np.asarray(res.link_load), np.asarray(ev.evaluate(topo, tr, pl, base).link_load))
    assert np.all(ref[: topo.n_router_links] == 0)


def test_closed_form_values():
    """The closed form's numbers on the reproducers (so the reference itself is checked)."""
    topo, flows, pl, _ = CASES["one_router_torus"]
    ref = _node_loads(topo, np.asarray(pl.task_node), *flows[1:])
    assert ref.sum() == 2e9 and _time(topo, ref) == pytest.approx(1e9 / topo.injection_bandwidth)
    topo, flows, pl, _ = CASES["zero_bytes"]
    assert _time(topo, _node_loads(topo, np.asarray(pl.task_node), *flows[1:])) == 0.0


@pytest.mark.parametrize("kind", PATH_SETS)
def test_batch_mixes_routerless_and_routed_points(kind):
    """evaluate_batch on a 4-ring with points without router pairs beside one whose flow crosses one ring link."""
    t = ev.torus([4], nodes_per_router=2)
    flows = [(4, [0], [1], [0.0]), (4, [0, 1], [0, 1], [3e9, 1e9]), (4, [0], [1], [1e9]),
             (4, [0, 2], [2, 0], [4e9, 2e9])]
    pl = P.linear(t, 4)                           # tasks 0, 1 on router 0; tasks 2, 3 on router 1
    res = ev.evaluate_batch(t, kind, [T.from_flows(*f) for f in flows], pl, keep_link_load=True)
    loads = np.asarray(res.link_load)
    tn = np.asarray(pl.task_node)
    for i, f in enumerate(flows[:3]):
        ref = _node_loads(t, tn, *f[1:])
        np.testing.assert_allclose(loads[i], ref, rtol=1e-12, atol=0)
        assert float(res.metrics["completion_time"][i]) == pytest.approx(_time(t, ref), rel=1e-12, abs=0)
    # the routed point: node links as above, and every byte of router pair (0, 1) / (1, 0) on ring links (each
    # byte crosses at least one; the direct links carry at most the pair's bytes)
    ref = _node_loads(t, tn, *flows[3][1:])
    nrl = t.n_router_links
    np.testing.assert_allclose(loads[3][nrl:], ref[nrl:], rtol=1e-12)
    ls, ld = np.asarray(t.link_src)[:nrl], np.asarray(t.link_dst)[:nrl]
    out0 = loads[3][:nrl][ls == 0].sum()
    into0 = loads[3][:nrl][ld == 0].sum()
    assert out0 == pytest.approx(4e9, rel=1e-9) and into0 == pytest.approx(2e9, rel=1e-9)
    assert float(res.metrics["completion_time"][3]) >= _time(t, ref) * (1 - 1e-12)


FT1 = fat_tree(children=[2], parents=[1])
TORUS1 = ev.torus([1], nodes_per_router=2)


@pytest.mark.parametrize("routing", [R.FtAdaptiveRouting(variant="local"), R.FtAdaptiveRouting(variant="global")],
                         ids=lambda r: r.label)
def test_ft_adaptive_one_level_fat_tree(routing):
    flows = (2, [0], [1], [1e9])
    pl = P.linear(FT1, 2)
    res = ev.evaluate(FT1, T.from_flows(*flows), pl, routing)
    _check(res, FT1, flows, pl)
    assert float(res.completion_time) == pytest.approx(0.08, rel=1e-12)   # 1 GB at 12.5 GB/s
    dm = ev.evaluate(FT1, T.from_flows(*flows), pl, "dmodk")
    assert float(res.completion_time) == pytest.approx(float(dm.completion_time), rel=1e-12)


@pytest.mark.parametrize("routing", [R.TorusAdaptiveRouting(variant="global"), R.TorusAdaptiveRouting(variant="local"),
                                     R.TorusAdaptiveRouting(variant="local", tie="positive")],
                         ids=lambda r: f"{r.label}-{r.tie}")
def test_torus_adaptive_one_router_torus(routing):
    flows = (2, [0, 1], [1, 0], [1e9, 3e9])
    pl = P.linear(TORUS1, 2)
    res = ev.evaluate(TORUS1, T.from_flows(*flows), pl, routing)
    ref = _check(res, TORUS1, flows, pl)
    assert ref.max() == 3e9


def test_adaptive_batch_one_router_torus():
    """evaluate_batch of torus_adaptive on a one-router torus: a zero-byte point beside a loaded one."""
    flows = [(2, [0], [1], [0.0]), (2, [0], [1], [2e9])]
    pl = P.linear(TORUS1, 2)
    res = ev.evaluate_batch(TORUS1, "torus_adaptive", [T.from_flows(*f) for f in flows], pl, keep_link_load=True)
    for i, f in enumerate(flows):
        ref = _node_loads(TORUS1, np.asarray(pl.task_node), *f[1:])
        np.testing.assert_allclose(np.asarray(res.link_load)[i], ref, rtol=1e-12, atol=0)
        assert float(res.metrics["completion_time"][i]) == pytest.approx(_time(TORUS1, ref), rel=1e-12, abs=0)


@pytest.mark.parametrize("kind", ["kshortest", "optiq_heuristic"])
def test_sweep_groups_retry_keeps_routerless_points(kind):
    """The sweep's path-set retry (evaluate_groups): a point with a pair beyond the hop limit is refused alone;
    the points left have no router pair at all and are evaluated (0 s, no load), not a crash."""
    from evaluator._batch.banked import BankedPoints
    from evaluator._batch.groups import evaluate_groups

    t = ev.torus([4])
    routing = R.PathSetRouting(kind=kind, hop_limit=1)
    far = BankedPoints(np.array([0]), T.from_flows(3, [0], [2], [1e9]), [P.linear(t, 3)])
    idle = BankedPoints(np.array([1, 2]), T.from_flows(2, [0, 1], [0, 1], [1e9, 2e9]),
                        [P.linear(t, 2), P.linear(t, 2)])
    res = evaluate_groups(t, routing, [far, idle], keep_link_load=True, chunk_size=4)
    assert [p.tolist() for p, _ in res.infeasible] == [[0]]
    assert "hop_limit" in str(res.infeasible[0][1])
    assert sorted(np.asarray(res.positions).tolist()) == [1, 2]
    np.testing.assert_array_equal(np.asarray(res.metrics["completion_time"]), [0.0, 0.0])
    assert not np.asarray(res.link_load).any()
