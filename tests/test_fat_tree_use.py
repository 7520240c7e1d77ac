"""Fat trees with the rest of the evaluator: configs, placements (``block`` on any topology, linear, random),
every traffic kind, the path-set routings and the MCF bound."""

from __future__ import annotations

import math

import numpy as np
import pytest

import evaluator as ev
from evaluator import config, placement, routing, traffic
from evaluator.config import build
from evaluator.errors import ConfigError
from evaluator.topology import dragonfly, fat_tree, torus
from tests.helpers import TOL

RTOL = TOL["rel"]
B = 10.0e9
b = 2.0e6


# --------------------------------------------------------------------------------------
# configs
# --------------------------------------------------------------------------------------


def test_config_defaults_and_routings_for_fat_trees():
    """``topology=fat_tree`` without a YAML file: the schema's defaults, the 8-ary 3-tree; the routings that
    serve it include the path sets; a routing of another topology is refused naming the ones that serve."""
    cfg = config.to_object(config.compose(["topology=fat_tree", "routing=ecmp", "traffic=all_to_all",
                                           "placement=block", "traffic.n_tasks=64"]))
    p = build(cfg)
    assert p.topology.name == "FT(8-ary 3-tree)" and p.topology.n_nodes == 512 and p.topology.n_routers == 192
    assert p.placement.task_node.tolist() == list(range(64))  # blocks of one leaf, packed
    assert set(routing.routings_for("fat_tree")) >= {"dmodk", "ecmp", "ecmp_spray", "kshortest", "optiq_heuristic",
                                                     "optiq_lp"}
    with pytest.raises(ConfigError, match="dmodk"):
        routing.build_routing(p.topology, routing.minimal())
    cfg = config.to_object(config.compose(["topology=fat_tree", "topology.children=[4,4]", "topology.parents=[1,2]",
                                           "topology.link_bandwidth=[5e9]", "routing=dmodk", "traffic=shift",
                                           "placement=block", "placement.size=8", "placement.fill=spread"]))
    p = build(cfg)
    assert p.topology.name == "XGFT(2;4,4;1,2)" and p.topology.link_bandwidth == (5e9,)
    with pytest.raises(ConfigError, match="topology.children"):
        build(config.to_object(config.compose(["topology=fat_tree", "topology.children=[4,4]",
                                               "topology.levels=3"])))


# --------------------------------------------------------------------------------------
# placements
# --------------------------------------------------------------------------------------


def pods(t, nodes):
    return set((np.asarray(nodes) // t.subtree_nodes(2)).tolist())


def test_block_placement_on_a_fat_tree():
    """4-ary 3-tree (64 nodes, leaves of 4, pods of 16). Blocks of 8 (two leaves) packed: block j on nodes
    8j .. 8j+7, whole leaves of one pod; spread: consecutive blocks in different pods. Blocks of 6 never
    straddle a pod while one has room; blocks of 3 never straddle a leaf; a full machine is a permutation."""
    t = fat_tree(k=4, levels=3)
    p = placement.block(t, 32, size=8)
    assert p.task_node.tolist() == list(range(32))
    p = placement.block(t, 32, size=8, fill="spread")
    blocks = p.task_node.reshape(4, 8)
    assert [len(pods(t, blk)) for blk in blocks] == [1, 1, 1, 1] and len(set().union(*map(lambda x: pods(t, x),
                                                                                          blocks))) == 4
    for blk in blocks:  # two whole leaves
        leaves = np.unique(blk // 4)
        assert leaves.size == 2 and sorted(blk.tolist()) == [n for lf in leaves for n in range(4 * lf, 4 * lf + 4)]
    p = placement.block(t, 36, size=6)
    for j in range(6):  # 6 blocks: two per pod fit (12 of 16 nodes), so none straddles
        assert len(pods(t, p.task_node[6 * j: 6 * j + 6])) == 1
    p = placement.block(t, 15, size=3)
    for j in range(5):
        assert np.unique(p.task_node[3 * j: 3 * j + 3] // 4).size == 1
    full = placement.block(t, 64, size=6)
    assert sorted(full.task_node.tolist()) == list(range(64))
    two = placement.block(t, 20, size=4, tasks_per_node=2)
    assert two.task_node.tolist() == np.repeat(np.arange(10), 2).tolist()
    with pytest.raises(ConfigError, match="placement.fill"):
        placement.block(t, 8, fill="sideways")
    with pytest.raises(ConfigError, match="placement.size"):
        placement.block(t, 8, size=0)
    with pytest.raises(ConfigError, match="placement.n_tasks"):
        placement.block(t, 65)


def test_block_placement_is_generic():
    """The same code on a torus (groups: its routers) and a Dragonfly (groups: routers): every block of one
    router's nodes sits on one router, and a node holds at most tasks_per_node tasks."""
    tor = torus([4, 4], nodes_per_router=2)
    assert tor.node_groups().tolist() == [tor.node_router.tolist()]
    p = placement.block(tor, 12, size=2, fill="spread")
    assert all(np.unique(tor.node_router[p.task_node[j: j + 2]]).size == 1 for j in range(0, 12, 2))
    df = dragonfly(2, 4, 2)
    p = placement.block(df, 30, size=4, tasks_per_node=2)
    assert np.bincount(p.task_node).max() <= 2
    assert all(np.unique(df.node_router[p.task_node[j: j + 4]]).size == 1 for j in range(0, 28, 4))


@pytest.mark.parametrize("kind", ["linear", "random", "block"])
def test_placements_evaluate_on_a_fat_tree(kind):
    """linear, random and block on a tapered XGFT: every byte leaves through injection (sum of injection loads =
    off-node bytes) and router-link bytes equal bytes x hops of the leaf distance under D-mod-k."""
    t = fat_tree([4, 4, 2], [1, 2, 2], link_bandwidth=B, injection_bandwidth=B)
    n = 24
    pl = {"linear": lambda: placement.linear(t, n),
          "random": lambda: placement.fully_random(t, n, seed=5),
          "block": lambda: placement.block(t, n, size=6, fill="spread")}[kind]()
    tr = traffic.random_permutation(n, b, seed=2)
    ds = ev.evaluate(t, tr, pl, routing.dmodk())
    load = np.asarray(ds["link_load"].values)
    sn, dn = pl.task_node[tr.src], pl.task_node[tr.dst]
    off = sn != dn
    assert load[t.n_router_links: t.n_router_links + t.n_nodes].sum() == pytest.approx(tr.nbytes[off].sum(), rel=RTOL)
    D = t.router_distances()
    hops = D[t.node_router[sn], t.node_router[dn]]
    assert load[: t.n_router_links].sum() == pytest.approx((tr.nbytes * hops).sum(), rel=TOL["rel_sum"])


# --------------------------------------------------------------------------------------
# traffic kinds
# --------------------------------------------------------------------------------------

TRAFFIC_OVERRIDES = {
    "stencil": ["traffic.alpha=[8,8,8]", "traffic.beta=[4,4,4]"],
    "all_to_all": [],
    "bisection_pairing": [],
    "random_permutation": [],
    "random_pairs": [],
    "shift": [],
    "tornado": ["traffic.grid=[4,4,4]"],
    "many_to_many": [],
    "m_to_n": ["traffic.n_sources=16", "traffic.n_destinations=32"],
    "pencil": ["traffic.grid=[16,16,16]", "traffic.p_row=8", "traffic.p_col=8"],
    "neighbouring": [],
    "collective": ["traffic.algorithm=rabenseifner"],
    "group_tornado": [],
}


def test_every_traffic_kind_covered():
    assert set(traffic.KINDS) - set(TRAFFIC_OVERRIDES) <= {"file", "trace", "phased"}  # a file path (2), phases


@pytest.mark.parametrize("kind", sorted(TRAFFIC_OVERRIDES))
def test_every_traffic_builds_and_evaluates_on_a_fat_tree(kind):
    """Every traffic kind on the 4-ary 3-tree (64 nodes) with the block placement and ECMP."""
    cfg = config.to_object(config.compose(["topology=fat_tree", "topology.k=4", "routing=ecmp", f"traffic={kind}",
                                           "placement=block", *TRAFFIC_OVERRIDES[kind]]))
    p = build(cfg)
    assert p.traffic.n_tasks == p.placement.n_tasks <= 64
    ds = ev.evaluate(p.topology, p.traffic, p.placement, p.routing)
    assert float(ds.completion_time) > 0 and np.isfinite(float(ds.completion_time))


# --------------------------------------------------------------------------------------
# path-set routings and the MCF bound, unchanged
# --------------------------------------------------------------------------------------


def test_path_set_routings_and_the_bound_on_a_fat_tree():
    """kshortest (k=1: one shortest path per leaf pair, so bytes x hops is the BFS distance's),
    optiq_heuristic and optiq_lp run on a fat tree, and no routing beats the MCF bound. On an untapered tree
    a permutation's bound is the injection time b / B, which ECMP reaches (efficiency 1); on the tapered
    XGFT(2; 4, 4; 1, 2) a shift by 4 must push 4 b out of every leaf over 2 links: bound 2 b / B, reached by
    both fat-tree routings."""
    t = fat_tree([2, 3, 2], link_bandwidth=B, injection_bandwidth=B)
    N = t.n_nodes
    tr = traffic.random_permutation(N, b, seed=4)
    pl = placement.linear(t, N)
    D = t.router_distances()
    hops = D[t.node_router[tr.src], t.node_router[tr.dst]]
    ds = ev.evaluate(t, tr, pl, routing.ecmp_spray(), bounds=True)
    assert float(ds.optimal_completion_time) == pytest.approx(b / B, rel=TOL["lp"])
    assert float(ds.routing_efficiency) == pytest.approx(1.0, rel=TOL["lp"])
    lower = float(ds.optimal_completion_time)
    for rt in (routing.kshortest(k=1), routing.kshortest(k=4), routing.optiq_heuristic(k=4), routing.optiq_lp(k=4),
               routing.dmodk()):
        got = ev.evaluate(t, tr, pl, rt)
        load = np.asarray(got["link_load"].values)
        assert (load >= 0).all()
        assert float(got.completion_time) >= lower * (1 - TOL["lp"])
        if rt.label == "kshortest-k1" or rt.kind == "dmodk":
            assert load[: t.n_router_links].sum() == pytest.approx((tr.nbytes * hops).sum(), rel=TOL["rel_sum"])
    tapered = fat_tree([4, 4], [1, 2], link_bandwidth=B, injection_bandwidth=B)
    src = np.arange(16)
    shift = traffic.from_flows(16, src, (src + 4) % 16, np.full(16, b))
    for rt in (routing.ecmp_spray(), routing.dmodk()):
        ds = ev.evaluate(tapered, shift, placement.linear(tapered, 16), rt, bounds=True)
        assert float(ds.optimal_completion_time) == pytest.approx(2 * b / B, rel=TOL["lp"])
        assert float(ds.completion_time) == pytest.approx(2 * b / B, rel=RTOL)


def test_bad_fat_tree_config_values_are_named():
    for override, field in [("topology.levels=0", "topology.levels"), ("topology.k=1", "topology.k"),
                            ("topology.radix=4", "topology.radix"),
                            ("topology.parallel_links=[1,2,3]", "topology.parallel_links")]:
        with pytest.raises(ConfigError) as exc:
            build(config.to_object(config.compose(["topology=fat_tree", override, "routing=dmodk"])))
        assert exc.value.field == field and math.isfinite(len(str(exc.value)))


def test_frontera_machine_matches_its_published_figures():
    """conf/machine/frontera.yaml as a topology (``topology=machine``): 8,008 nodes, 182 leaf switches of 44 nodes,
    6 core switches, 18 uplinks per leaf (3 to each core), HDR 25 GB/s switch links and HDR100 node links, the
    22/18 taper of the TACC user guide."""
    cfg = config.to_object(config.compose(["topology=machine", "topology.name=Frontera", "topology.partition=null",
                                           "routing=dmodk", "traffic=all_to_all", "traffic.n_tasks=88",
                                           "placement=block"]))
    p = build(cfg)
    t = p.topology
    assert t.kind == "fat_tree" and t.n_nodes == 8008 and t.switches(1) == 182 and t.switches(2) == 6
    up = t.link_class_names() == "level1-up"
    assert np.bincount(t.link_src[up], minlength=182).tolist() == [18] * 182
    assert set(np.bincount(t.link_dst[up]).tolist()[182:]) == {3 * 182}
    down_bw = t.children[0] * t.injection_bandwidth
    up_bw = t.up_ports(1) * t.link_bandwidth[0]
    assert (t.injection_bandwidth, t.link_bandwidth[0]) == (12.5e9, 25e9)
    assert down_bw / up_bw == pytest.approx(22 / 18, rel=RTOL)
    assert np.unique(p.placement.task_node // 44).tolist() == [0, 1]  # 88 tasks in blocks of one leaf: two leaves


def test_block_on_a_dragonfly_fills_whole_groups():
    """A block of one group's nodes lands in one Dragonfly group (group of node n: n // (p a), the DESIGN.md
    numbering), blocks in distinct groups."""
    import evaluator as ev

    t = ev.topology.dragonfly(2, 4, 2)  # 8 nodes per group, 9 groups
    per_group = 2 * 4
    pl = ev.placement.block(t, 3 * per_group, size=per_group)
    groups = np.asarray(pl.task_node).reshape(3, per_group) // per_group
    assert all(len(set(row)) == 1 for row in groups.tolist())
    assert len({row[0] for row in groups.tolist()}) == 3
