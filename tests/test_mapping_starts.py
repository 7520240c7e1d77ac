"""Starting points of a mapping search (evaluator.mapping._starts) and the partitioning mapping (._partition).

Every start is checked against the job's contract (available nodes, tasks_per_node) directly; the
partitioning against planted structure (dense cliques joined weakly: each clique must land on one router or
group, read from the topology's own node hierarchy) and against linear's cut, counted flow by flow here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pytest

from evaluator.errors import ConfigError
from evaluator.mapping._partition import partition_mapping
from evaluator.mapping._starts import Start, starting_points
from evaluator.topology import dragonfly, fat_tree, torus
from evaluator.traffic import from_flows, phased, stencil


@dataclass
class StencilCfg:
    kind: str = "stencil"
    alpha: list = None
    beta: list = None


def stencil_job(beta, per=4):
    alpha = [per * b for b in beta]
    return stencil(alpha, beta, 8.0), StencilCfg(alpha=alpha, beta=list(beta))


def check_starts(starts, skipped, n_tasks, nodes, tpn):
    """The contract, checked element by element."""
    allowed = set(np.asarray(nodes).tolist())
    names = [s.name for s in starts]
    assert len(set(names)) == len(names)
    assert not set(names) & set(skipped)
    assert names[0] == "linear"
    for s in starts:
        assert isinstance(s, Start)
        assert s.task_node.dtype == np.int64 and s.task_node.shape == (n_tasks,), s.name
        count: dict[int, int] = {}
        for node in s.task_node.tolist():
            assert node in allowed, (s.name, node)
            count[node] = count.get(node, 0) + 1
        assert max(count.values()) <= tpn, s.name
    assert sum(name.startswith("random") for name in names) <= 1
    for a in range(len(starts)):  # no start repeats another
        for b in range(a):
            assert not np.array_equal(starts[a].task_node, starts[b].task_node)
    # linear: the available nodes in fill order, tpn tasks each
    lin = starts[0].task_node
    assert all(lin[t] == nodes[t // tpn] for t in range(n_tasks))
    for reason in skipped.values():
        assert isinstance(reason, str) and reason


JOBS = {
    "torus": (lambda: torus([4, 4, 4], nodes_per_router=2), [4, 4, 8], 2, None),
    "dragonfly": (lambda: dragonfly(2, 4, 2, 9), [4, 4, 4], 1, None),
    "fat_tree": (lambda: fat_tree(k=4, levels=3), [4, 4, 4], 1, None),
    "fragmented_torus": (lambda: torus([4, 4, 4], nodes_per_router=2), [4, 4, 4], 2, 0.6),
    "fragmented_dragonfly": (lambda: dragonfly(2, 4, 2, 9), [4, 4, 2], 1, 0.6),
}


@pytest.mark.parametrize("job", list(JOBS))
def test_every_start_respects_the_job(job):
    make, beta, tpn, frac = JOBS[job]
    topo = make()
    tr, cfg = stencil_job(beta)
    nodes = np.arange(topo.n_nodes)
    if frac is not None:  # a fragmented free list, in a scrambled fill order
        rng = np.random.default_rng(3)
        nodes = rng.permutation(rng.choice(topo.n_nodes, int(frac * topo.n_nodes), replace=False))
    starts, skipped = starting_points(topo, tr, nodes, tpn, traffic_cfg=cfg)
    check_starts(starts, skipped, tr.n_tasks, nodes, tpn)
    names = {s.name for s in starts}
    assert "partition" in names or skipped.get("partition", "").startswith("the same mapping")
    # random placement kinds are never starts; the kinds that need another topology say why
    for kind in ("random", "dragonfly_random"):
        assert kind in skipped
    if frac is not None and topo.n_nodes > tr.n_tasks // tpn:
        assert any("not available" in r for r in skipped.values())


def test_named_placements_on_a_whole_torus():
    topo = torus([4, 4, 4], nodes_per_router=2)
    tr, cfg = stencil_job([8, 4, 4])
    starts, skipped = starting_points(topo, tr, np.arange(topo.n_nodes), 2, traffic_cfg=cfg)
    got = {s.name for s in starts} | set(skipped)
    for kind in ("torus_block", "alps", "topaware", "block", "subprism", "dragonfly_cartesian", "features"):
        assert kind in got
    assert "torus_block" in {s.name for s in starts}  # a 2x1x1 block of tasks per router, one task per node
    assert "dragonfly" in skipped["dragonfly_cartesian"].lower()


def test_grid_order_cells_hold_whole_blocks():
    """A grid_order start with a cell of tasks_per_node tasks puts one whole cell of the grid on each node."""
    topo = torus([4, 4, 4])
    beta = [4, 4, 4]
    tr, cfg = stencil_job(beta)
    starts, _ = starting_points(topo, tr, np.arange(topo.n_nodes), 4, traffic_cfg=cfg)
    cells = [s for s in starts if s.name.startswith("grid_order")]
    assert cells
    for s in cells:
        cell = [int(x) for x in s.name.split("-c ")[1].split(",")]
        size = math.prod(cell)
        coords = np.array(np.unravel_index(np.arange(tr.n_tasks), beta)).T  # row-major task ids
        for node in np.unique(s.task_node):
            c = coords[s.task_node == node]
            if size == 4:  # exactly one cell on the node
                assert len(c) == 4
                assert list(c.max(axis=0) - c.min(axis=0) + 1) == cell
                assert all(c.min(axis=0) % np.array(cell) == 0)


def test_no_task_grid_skips_grid_order():
    topo = dragonfly(2, 4, 2, 9)
    src = np.arange(20)
    tr = from_flows(20, src, (src + 1) % 20, np.ones(20))
    starts, skipped = starting_points(topo, tr, np.arange(topo.n_nodes), 1)
    assert "grid_order" in skipped
    check_starts(starts, skipped, 20, np.arange(topo.n_nodes), 1)


# --------------------------------------------------------------------------------------------------------
# partitioning
# --------------------------------------------------------------------------------------------------------

def clique_traffic(k: int, size: int, seed: int, heavy: float = 1e6, light: float = 1.0, permute=True):
    """``k`` dense cliques of ``size`` tasks (``heavy`` bytes per ordered pair), clique c joined to c + 1 by one
    ``light`` flow; task ids permuted at random. Returns (traffic, clique of every task)."""
    rng = np.random.default_rng(seed)
    n = k * size
    perm = rng.permutation(n) if permute else np.arange(n)  # perm[i]: task id of the i-th clique member
    src, dst, nb = [], [], []
    for c in range(k):
        m = perm[c * size:(c + 1) * size]
        for i in m:
            for j in m:
                if i != j:
                    src.append(i), dst.append(j), nb.append(heavy)
        src.append(m[0]), dst.append(perm[((c + 1) % k) * size]), nb.append(light)
    clique = np.empty(n, dtype=np.int64)
    clique[perm] = np.arange(n) // size
    return from_flows(n, np.array(src), np.array(dst), np.array(nb)), clique


def cut_between(traffic, task_node, node_group):
    """Bytes of flows whose tasks are in different groups (``node_group[node]``), flow by flow."""
    total = 0.0
    for s, d, b in zip(traffic.src.tolist(), traffic.dst.tolist(), traffic.nbytes.tolist()):
        if node_group[task_node[s]] != node_group[task_node[d]]:
            total += b
    return total


def assert_cliques_together(task_node, clique, node_group):
    for c in np.unique(clique):
        where = np.unique(node_group[task_node[clique == c]])
        assert where.size == 1, (c, where)


@pytest.mark.parametrize("tpn", [1, 2])
def test_partition_recovers_cliques_per_dragonfly_group(tpn):
    topo = dragonfly(2, 4, 2, 9)  # 8 nodes per group
    group = topo.node_groups()[-1]
    size = 8 * tpn
    tr, clique = clique_traffic(5, size, seed=tpn)  # 5 of the 9 groups' worth
    tn = partition_mapping(topo, tr, np.arange(topo.n_nodes), tpn, seed=0)
    assert_cliques_together(tn, clique, group)
    assert np.bincount(tn).max() <= tpn
    assert np.unique(group[tn]).size == 5  # packed: as few groups as the tasks need


def test_partition_recovers_cliques_per_router_and_group():
    """Cliques of a router's slots, pairs of them joined more strongly than the rest: each clique on a router,
    each pair in one group."""
    topo = dragonfly(2, 4, 2, 9)
    router, group = topo.node_groups()
    tr0, clique = clique_traffic(8, 2, seed=5, permute=False)  # 8 cliques of 2 tasks (one router, tpn 1)
    src, dst, nb = list(tr0.src), list(tr0.dst), list(tr0.nbytes)
    for c in range(0, 8, 2):  # cliques 2c, 2c+1 heavily joined: one group's (4 routers) worth per 4 cliques
        for c2 in (c + 1,):
            src.append(2 * c), dst.append(2 * c2), nb.append(1e4)
    rng = np.random.default_rng(0)
    perm = rng.permutation(16)
    tr = from_flows(16, perm[np.array(src)], perm[np.array(dst)], np.array(nb))
    cl = np.empty(16, dtype=np.int64)
    cl[perm] = clique
    tn = partition_mapping(topo, tr, np.arange(topo.n_nodes), 1)
    assert_cliques_together(tn, cl, router)
    assert_cliques_together(tn, cl // 2, group)  # the heavily joined pairs of cliques


def test_partition_recovers_cliques_on_a_fat_tree_and_a_fragmented_torus():
    ft = fat_tree(k=4, levels=3)
    leaf, pod = ft.node_groups()
    tr, clique = clique_traffic(4, 16, seed=1)  # a pod: 16 nodes
    tn = partition_mapping(ft, tr, np.random.default_rng(0).permutation(ft.n_nodes), 1)
    assert_cliques_together(tn, clique, pod)

    topo = torus([4, 4, 4], nodes_per_router=2)
    rng = np.random.default_rng(2)
    routers = rng.choice(64, 20, replace=False)
    nodes = rng.permutation(topo.nodes_of(routers))  # whole routers, scrambled
    tr, clique = clique_traffic(20, 4, seed=2)  # a router: 2 nodes x 2 tasks
    tn = partition_mapping(topo, tr, nodes, 2)
    assert set(tn.tolist()) <= set(nodes.tolist())
    assert_cliques_together(tn, clique, np.asarray(topo.node_router))


@pytest.mark.parametrize("which", ["torus", "dragonfly", "fat_tree"])
def test_partition_cut_is_at_most_linear(which):
    topo = {"torus": lambda: torus([4, 4, 4], nodes_per_router=2), "dragonfly": lambda: dragonfly(2, 4, 2, 9),
            "fat_tree": lambda: fat_tree(k=4, levels=3)}[which]()
    tpn = 2
    per_router = int(np.bincount(np.asarray(topo.node_router)).max()) * tpn
    tr, _ = clique_traffic(8, per_router, seed=7)
    nodes = np.arange(topo.n_nodes)
    part = partition_mapping(topo, tr, nodes, tpn)
    lin = nodes[np.arange(tr.n_tasks) // tpn]
    for row in topo.node_groups():  # every level of the hierarchy
        assert cut_between(tr, part, row) <= cut_between(tr, lin, row)
    assert cut_between(tr, part, np.asarray(topo.node_router)) == 8.0  # only the light ring is cut


def test_partition_sums_phases_and_is_deterministic():
    topo = dragonfly(2, 4, 2, 9)
    tr, clique = clique_traffic(4, 8, seed=4)
    half = tr.src.size // 2
    ph = phased([from_flows(tr.n_tasks, tr.src[:half], tr.dst[:half], tr.nbytes[:half]),
                 from_flows(tr.n_tasks, tr.src[half:], tr.dst[half:], tr.nbytes[half:])])
    a = partition_mapping(topo, ph, np.arange(topo.n_nodes), 1, seed=3)
    assert_cliques_together(a, clique, topo.node_groups()[-1])
    assert np.array_equal(a, partition_mapping(topo, ph, np.arange(topo.n_nodes), 1, seed=3))
    s1, _ = starting_points(topo, ph, np.arange(topo.n_nodes), 1, seed=3)
    s2, _ = starting_points(topo, ph, np.arange(topo.n_nodes), 1, seed=3)
    assert [s.name for s in s1] == [s.name for s in s2]
    assert all(np.array_equal(x.task_node, y.task_node) for x, y in zip(s1, s2))


def test_partition_exact_sizes_with_spare_and_uneven_slots():
    """Task counts that do not split evenly: every node within its slots, every task placed."""
    topo = torus([3, 5, 2], nodes_per_router=2)
    rng = np.random.default_rng(0)
    for n, tpn in ((37, 1), (59, 2), (60, 1), (7, 3)):
        src = rng.integers(0, n, 4 * n)
        dst = rng.integers(0, n, 4 * n)
        tr = from_flows(n, src, dst, rng.uniform(1, 10, 4 * n))
        nodes = rng.permutation(topo.n_nodes)[:max(-(-n // tpn) + 3, 1)]
        if n > nodes.size * tpn:
            continue
        tn = partition_mapping(topo, tr, nodes, tpn, seed=1)
        assert tn.shape == (n,) and set(tn.tolist()) <= set(nodes.tolist())
        assert np.bincount(tn).max() <= tpn


def test_partition_of_4096_tasks_fills_the_slots():
    """At bench scale (speed is the bench's: timings are not asserted here), every task gets a node of the ones
    given, none holds more than ``tpn``."""
    tr, _ = stencil_job([16, 16, 16])  # 4,096 tasks, 24,576 flows
    assert tr.n_tasks == 4096 and tr.n_flows == 24576
    for topo, tpn in ((dragonfly(4, 8, 4, 33), 4), (torus([16, 16, 16]), 1)):
        tn = partition_mapping(topo, tr, np.arange(topo.n_nodes), tpn)
        assert tn.shape == (4096,) and tn.min() >= 0 and tn.max() < topo.n_nodes, topo.name
        assert np.bincount(tn).max() <= tpn


# --------------------------------------------------------------------------------------------------------
# bad input
# --------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("fn", [starting_points, partition_mapping])
def test_bad_input(fn):
    topo = dragonfly(2, 4, 2, 9)  # 72 nodes
    tr, _ = clique_traffic(2, 8, seed=0)  # 16 tasks
    with pytest.raises(ConfigError, match="at most available nodes x tasks_per_node = 5 x 2 = 10"):
        fn(topo, tr, np.arange(5), 2)
    with pytest.raises(ConfigError, match=r"mapping.nodes = \[72, 100\]") as e:
        fn(topo, tr, [0, 1, 72, 100, 72], 4)
    assert "[0, 71]" in str(e.value)
    with pytest.raises(ConfigError, match=r"mapping.nodes = \[3\].*without repeats"):
        fn(topo, tr, [3, 4, 3, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18], 1)
    with pytest.raises(ConfigError, match="mapping.tasks_per_node"):
        fn(topo, tr, np.arange(20), 0)
    with pytest.raises(ConfigError, match="mapping.nodes"):
        fn(topo, tr, np.arange(20) + 0.5, 1)
    with pytest.raises(ConfigError, match="mapping.nodes"):
        fn(topo, tr, [], 1)
    with pytest.raises(ConfigError, match="mapping.seed"):
        fn(topo, tr, np.arange(20), 1, seed=-1)
    with pytest.raises(ConfigError, match="topology"):
        fn("DF", tr, np.arange(20), 1)
