"""Three items earlier audits left alone, one section each.

1. ``evaluate_groups`` with a group of no positions: it is left out (the other groups' points are evaluated, each
   equal to a per-flow walk written here, in the positions given); groups holding no point at all are refused
   naming ``groups``. Until 2026-12-07 an empty seeded group crashed the banked runner ("need at least one array
   to concatenate") and an empty dense group was refused as ``traffics = 0``.
2. A sweep axis value that no point accepts (wrong type under a key typed ``Any``, out of range under a typed
   one) is refused by the plan, naming the key, the value and what is allowed; a value some point accepts (too
   many tasks for the machine) still plans, its point infeasible. Until 2026-12-07 every such point was stored
   as infeasible.
3. ``total_bytes`` and self-flows: DESIGN.md counts every byte of the exchange (``off_node_bytes``, the bytes that
   leave their node; the rest stays on a node) and docs/traffic_files.md says a task may send to itself, bytes that
   use no link; ``random_permutation`` keeps its fixed points. Pinned against a per-flow reference (the sum of
   every flow's bytes, the off-node sum by node, the senders): no runner counts them differently.
"""

from __future__ import annotations

import numpy as np
import pytest

import evaluator as ev
from evaluator import config
from evaluator import placement as P
from evaluator import traffic as T
from evaluator.errors import ConfigError
from evaluator.evaluation import BankedPoints, evaluate_groups
from evaluator.placement._random import fully_random_spec

DIMS = (5, 3)
TORUS = ev.torus(list(DIMS), link_bandwidth=[2e9, 1e9], nodes_per_router=2, injection_bandwidth=3e9)


# ------------------------------------------------------------------------------------------------ the reference

def _links(topo) -> dict[tuple[int, int], int]:
    return {(int(s), int(d)): i for i, (s, d) in enumerate(zip(topo.link_src, topo.link_dst)) if s >= 0 and d >= 0}


def _dor(links, a: int, b: int) -> list[int]:
    """Dimension-order route on odd rings (the shorter way unique), dimension 0 first."""
    ca, cb = list(np.unravel_index(a, DIMS)), np.unravel_index(b, DIMS)
    path = []
    for k, n in enumerate(DIMS):
        while ca[k] != cb[k]:
            nxt = list(ca)
            nxt[k] = (ca[k] + (1 if (cb[k] - ca[k]) % n <= n // 2 else -1)) % n
            path.append(links[(int(np.ravel_multi_index(ca, DIMS)), int(np.ravel_multi_index(nxt, DIMS)))])
            ca = nxt
    return path


def walk(topo, src, dst, nb, task_node) -> dict:
    """Per-flow walk: loads, completion time, total (every flow), off-node bytes, senders (tasks with bytes)."""
    links, cap = _links(topo), np.asarray(topo.capacity, float)
    n_rl, n_nodes = topo.n_router_links, topo.n_nodes
    loads = np.zeros(topo.n_links)
    total = off = 0.0
    senders = set()
    for s, d, b in zip(src, dst, nb):
        total += b
        if b > 0:
            senders.add(int(s))
        ns, nd = int(task_node[s]), int(task_node[d])
        if ns == nd:
            continue
        off += b
        loads[n_rl + ns] += b
        loads[n_rl + n_nodes + nd] += b
        for lid in _dor(links, ns // topo.nodes_per_router, nd // topo.nodes_per_router):
            loads[lid] += b
    t = float((loads / cap).max())
    out = {"completion_time": t, "total_bytes": total, "off_node_bytes": off}
    if t > 0:
        out |= {"throughput": total / t, "effective_injection_bandwidth": total / len(senders) / t}
    return out


def _flows(tr):
    return np.asarray(tr.src), np.asarray(tr.dst), np.asarray(tr.nbytes, float)


def _assert_point(metrics, j: int, want: dict, label: str) -> None:
    for k, v in want.items():
        np.testing.assert_allclose(float(metrics[k][j]), v, rtol=1e-9, err_msg=f"{label}: {k}")


# ---------------------------------------------------------------------------------- 1. groups of no positions

def _empty_groups_cases():
    a = T.from_flows(12, np.arange(12), (np.arange(12) + 5) % 12, np.arange(1, 13) * 1e5)
    b = T.from_flows(8, np.arange(8), (np.arange(8) + 3) % 8, np.full(8, 2e6))
    none = np.zeros(0, np.int64)
    given = BankedPoints(np.array([4, 1]), b, placements=[P.fully_random(TORUS, 8, seed=s) for s in (1, 2)])
    return {
        "seeded empty first": [BankedPoints(none, a, seeded=fully_random_spec(TORUS, 12), seeds=none), given],
        "given empty last": [given, BankedPoints(none, a, placements=[])],
        "dense empty": [BankedPoints(none, T.all_to_all_dense(7, 100.0), placements=[]), given],
        "seeded beside seeded empty": [BankedPoints(np.array([2, 0, 3]), a, seeded=fully_random_spec(TORUS, 12),
                                                    seeds=np.array([5, 6, 7])),
                                       BankedPoints(none, b, seeded=fully_random_spec(TORUS, 8), seeds=none)],
    }


@pytest.mark.parametrize("case", list(_empty_groups_cases()))
def test_1_a_group_of_no_positions_is_left_out_and_the_others_are_right(case):
    groups = _empty_groups_cases()[case]
    out = evaluate_groups(TORUS, ev.dor(), groups, keep_link_load=True, chunk_size=2)
    want_pos = sorted(int(p) for g in groups for p in g.positions)
    assert sorted(out.positions.tolist()) == want_pos, case
    n = len(want_pos)
    assert out.link_load.shape == (n, TORUS.n_links) and out.metrics["max_load_class"].shape[0] == n
    for g in groups:
        for pos, pl in zip(g.positions, g.host_placements()):
            j = int(np.flatnonzero(out.positions == pos)[0])
            _assert_point(out.metrics, j, walk(TORUS, *_flows(g.traffic), np.asarray(pl.task_node)),
                          f"{case} position {pos}")


def test_1_groups_holding_no_point_are_refused_naming_groups():
    a = T.from_flows(12, np.arange(12), (np.arange(12) + 5) % 12, np.full(12, 1e6))
    none = np.zeros(0, np.int64)
    for groups in ([BankedPoints(none, a, placements=[])],
                   [BankedPoints(none, a, seeded=fully_random_spec(TORUS, 12), seeds=none),
                    BankedPoints(none, T.all_to_all_dense(7, 1.0), placements=[])]):
        with pytest.raises(ConfigError, match=r"^groups = .*0 points.* is invalid: allowed is at least one point "
                                              r"over the groups"):
            evaluate_groups(TORUS, ev.dor(), groups, keep_link_load=False, chunk_size=4)


def test_1_an_empty_group_is_still_checked():
    """Left out only after the checks: an empty group of another network's family is refused as before."""
    a = T.from_flows(12, np.arange(12), (np.arange(12) + 5) % 12, np.full(12, 1e6))
    other = ev.torus([5, 5], nodes_per_router=2)
    none = np.zeros(0, np.int64)
    groups = [BankedPoints(np.array([0]), a, placements=[P.linear(TORUS, 12)]),
              BankedPoints(none, a, seeded=fully_random_spec(other, 12), seeds=none)]
    with pytest.raises(ConfigError, match=r"^groups\[1\]\.seeded = .* is invalid: allowed is a placement family "
                                          r"made for torus 5x3"):
        evaluate_groups(TORUS, ev.dor(), groups, keep_link_load=False, chunk_size=4)


# ------------------------------------------------------------------------- 2. axis values no point accepts

BASE = ["topology=torus", "topology.dims=[4,4]", "routing=dor", "placement=linear"]
PAIRS = ["traffic=random_pairs", "traffic.n_tasks=8"]
SHIFT = ["traffic=shift", "traffic.n_tasks=8"]


def _plan(overrides):
    from evaluator.sweep import plan_sweep

    return plan_sweep(config.compose_sweep([*BASE, *overrides]))


@pytest.mark.parametrize("overrides,key,value,allowed", [
    ([*PAIRS, "+sweep.axes.traffic.bytes=[1e6,-5]"], "traffic.bytes", "-5", "a finite number > 0"),
    (["traffic=random_pairs", "+sweep.axes.traffic.n_tasks=[8,-1]"], "traffic.n_tasks", "-1", "an integer >= 1"),
    ([*SHIFT, "+sweep.axes.traffic.offset=[1,abc]"], "traffic.offset", "'abc'", "an integer"),
    ([*SHIFT, "+sweep.axes.traffic.offset=[1,[1,2]]"], "traffic.offset", r"\[1, 2\]", "an integer"),
    ([*PAIRS, "+sweep.axes.topology.link_bandwidth=[2e9,abc]"], "topology.link_bandwidth", "'abc'",
     "a finite number > 0"),
    ([*PAIRS, "+sweep.axes.topology.wrap=[true,maybe]"], "topology.wrap", "'maybe'", "true or false"),
    ([*PAIRS, "+sweep.axes.routing.order=[as_given,bogus]"], "routing.order", "'bogus'", r"one of \['as_given'"),
])
def test_2_a_value_no_point_accepts_is_refused_by_the_plan(monkeypatch, overrides, key, value, allowed):
    from evaluator.sweep import worker

    def no_chunk(*a, **k):
        raise AssertionError("a chunk was evaluated")

    monkeypatch.setattr(worker, "evaluate_groups", no_chunk)
    with pytest.raises(ConfigError, match=rf"^sweep\.axes\.{key} = {value} is invalid: allowed is {allowed}.* "
                                          rf"No point of the sweep accepts it"):
        _plan(overrides)


def test_2_a_group_axis_value_no_point_accepts_is_refused_naming_its_key():
    with pytest.raises(ConfigError, match=r"^sweep\.axes\.traffic = .*'bytes': -5.* is invalid: allowed is a "
                                          r"finite number > 0\. .*refuses traffic\.bytes = -5"):
        _plan(["+sweep.axes.traffic=[{kind: random_pairs, n_tasks: 8, bytes: 1e6},"
               "{kind: random_pairs, n_tasks: 8, bytes: -5}]"])


@pytest.mark.parametrize("overrides", [
    ["traffic.bytes=1e6,2e6", "traffic=random_pairs,shift"],
    ["traffic=random_pairs,shift", "traffic.bytes=1e6,2e6"],
    ["traffic=random_pairs,shift", "+sweep.axes.traffic.bytes=[1e6,2e6]"],
])
def test_2_an_axis_on_a_key_is_not_dropped_by_one_on_its_group(overrides):
    """An axis on ``traffic.bytes`` and one on the ``traffic`` group overlap. In one order (the key's first, or
    the key's under ``+sweep.axes``) the group's axis replaced the key's without a word: 2 points planned for
    2 x 2 given. Every order is now refused, naming both axes."""
    with pytest.raises(ConfigError, match=r"sweep\.axes = \['traffic', 'traffic\.bytes'\] is invalid: allowed is "
                                          r"axes that do not overlap"):
        _plan(overrides)


def test_2_a_value_some_point_accepts_plans_and_its_other_points_are_infeasible():
    """100 tasks do not fit the 4x4 torus (placement.n_tasks: a relation of two sections, which the points
    report); the type and sign of 100 are right, so the value plans and its point is infeasible."""
    from evaluator.sweep.worker import evaluate_chunk

    plan = _plan(["traffic=random_pairs", "+sweep.axes.traffic.n_tasks=[8,100]"])
    out = evaluate_chunk(plan, np.arange(plan.n_points))
    assert out["reason_code"][0] == 0 and out["reason_code"][1] != 0
    assert "placement.n_tasks" in out["reasons"][out["reason_code"][1]]


def test_2_a_generated_value_is_left_to_the_points():
    """A generator's values (``range``) are the user's rule, not values given one by one: they plan."""
    plan = _plan(["traffic=random_pairs", "+sweep.axes.traffic.n_tasks={range:[0,3]}"])
    assert plan.n_points == 3


# --------------------------------------------------------------------------------- 3. self-flows and total_bytes

def _self_flow_traffics():
    rng = np.random.default_rng(5)
    s = rng.integers(0, 10, 30)
    d = np.where(np.arange(30) % 3 == 0, s, rng.integers(0, 10, 30))  # a third of the flows to the sender itself
    only_self = T.from_flows(4, np.array([0, 1, 2, 2]), np.array([0, 1, 3, 2]), np.array([5e6, 7e6, 1e6, 3e6]))
    return {"file-like with diagonal": T.from_flows(10, s, d, rng.integers(1, 9, 30) * 1e6),
            "only-self senders": only_self,
            "shift by 0": T.shift(10, offset=0, bytes_per_task=2e6),
            "permutation fixed points": T.random_permutation(10, 3e6, seed=0)}


@pytest.mark.parametrize("name", list(_self_flow_traffics()))
def test_3_self_flows_count_as_bytes_that_stay_on_their_node(name):
    tr = _self_flow_traffics()[name]
    src, dst, nb = _flows(tr)
    if name == "permutation fixed points":
        assert (src == dst).any(), "the seed was chosen for a permutation with a fixed point"
    pls = [P.linear(TORUS, tr.n_tasks), P.fully_random(TORUS, tr.n_tasks, seed=3)]
    res = ev.evaluate_batch(TORUS, ev.dor(), [tr] * 2, pls)
    mm = ev.evaluate_batch(TORUS, ev.dor(), [tr] * 2, pls, sharing="max_min")
    for j, pl in enumerate(pls):
        want = walk(TORUS, src, dst, nb, np.asarray(pl.task_node))
        if want["completion_time"] == 0:
            continue
        _assert_point(res.metrics, j, want, f"{name} placement {j}")
        _assert_point(mm.metrics, j, want, f"{name} placement {j} (max_min)")
    assert float(res.metrics["total_bytes"][0]) == pytest.approx(nb.sum(), rel=1e-12)
    assert float(res.metrics["total_bytes"][0] - res.metrics["off_node_bytes"][0]) >= nb[src == dst].sum() * (1 - 1e-12)
