"""Gemini machines as they are (service/down nodes, node classes), allocation orders, rank orders, Topaware.

Every check is against something independent: the slides' worked examples,
public node counts, brute-force loops, torus distances computed coordinate
by coordinate, and files parsed back.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from evaluator import cli, config
from evaluator import placement as P
from evaluator.errors import ConfigError, MachineError
from evaluator.machines import load_machine, machine_from_dict
from evaluator.placement.rank_order import node_ranks, rank_order_text
from evaluator.topology import machine_topology, torus


def small_machine(**kw):
    """A 6x4x6 Gemini-like torus, 2 nodes per router, with the layout keys given."""
    d = dict(name="Tiny", kind="torus", dims=[6, 4, 6], link_bandwidth=[2.0, 1.0, 2.0], nodes_per_router=2,
             injection_bandwidth=4.0, routing_order="as_given")
    d.update(kw)
    return machine_from_dict(d)


def torus_hops(topo, r1, r2):
    """Hops between routers on the torus, coordinate by coordinate (min of both ways per wrapped dim)."""
    a, b = topo.router_coords[r1], topo.router_coords[r2]
    d = np.abs(a - b)
    return int(np.minimum(d, np.array(topo.dims) - d).sum())


# ------------------------------------------------------------------------------------------------
# 1. the machine as it is
# ------------------------------------------------------------------------------------------------


def test_bluewaters_node_classes_match_public_counts():
    m = load_machine("BlueWaters")
    names, code = m.router_classes()
    counts = dict(zip(names, np.bincount(code, minlength=len(names)) * m.nodes_per_router))
    # 22,640 XE and 4,228 XK compute nodes of 24^3 x 2 = 27,648 node slots; XK region 15x6x24 Geminis
    assert counts == {"XE": 22640, "XK": 4228, "service": 780, "down": 0}
    xk = names.index("XK")
    c = np.stack(np.unravel_index(np.flatnonzero(np.isin(code, [xk])), m.dims), axis=1)
    assert ((c >= [9, 18, 0]) & (c < [24, 24, 24])).all()
    # service nodes come in whole blades: a Gemini's blade partner (y xor 1) is service too
    svc = np.zeros(m.dims, dtype=bool)
    svc.reshape(-1)[code == names.index("service")] = True
    assert (svc == svc[:, np.arange(24) ^ 1, :]).all()


def test_titan_counts_and_layout_seed():
    names, code = load_machine("Titan").router_classes()
    assert np.bincount(code, minlength=3).tolist() == [9344, 256, 0]  # 18,688 compute nodes of 19,200
    m0 = small_machine(service_fraction=0.2, blade=[1, 2, 1], layout_seed=0)
    m1 = small_machine(service_fraction=0.2, blade=[1, 2, 1], layout_seed=1)
    a, b = m0.router_classes()[1], m1.router_classes()[1]
    assert np.array_equal(a, small_machine(service_fraction=0.2, blade=[1, 2, 1], layout_seed=0).router_classes()[1])
    assert not np.array_equal(a, b) and (a == 1).sum() == (b == 1).sum() == 2 * round(0.2 * 72)


def test_explicit_service_and_down_routers_never_allocated():
    m = small_machine(service_routers=[[0, 0, 0], [3, 1, 2]], down_routers=[[5, 3, 5]])
    topo = machine_topology(m)
    mask = P.compute_mask(topo)
    assert mask.sum() == topo.n_nodes - 6
    for c in ([0, 0, 0], [3, 1, 2], [5, 3, 5]):
        r = np.ravel_multi_index(c, (6, 4, 6))
        assert not mask[2 * r] and not mask[2 * r + 1]
    ideal = machine_topology(m, layout="ideal")
    assert P.compute_mask(ideal).all()
    full = P.alps(topo, (topo.n_nodes - 6) * 3, tasks_per_node=3)  # every compute node, none other
    assert mask[full.task_node].all() and np.unique(full.task_node).size == topo.n_nodes - 6
    with pytest.raises(ConfigError, match="placement.n_tasks"):
        P.alps(topo, topo.n_nodes - 5)


@pytest.mark.parametrize("key,value,needle", [
    ("service_routers", [[6, 0, 0]], "service_routers[0]"),
    ("service_fraction", 1.5, "service_fraction"),
    ("node_classes", [{"name": "XK", "offset": [0, 0, 0], "shape": [7, 1, 1]}], "node_classes[0].shape"),
    ("node_classes", [{"name": "service", "offset": [0, 0, 0], "shape": [1, 1, 1]}], "node_classes[0].name"),
    ("blade", [1, 3, 1], "blade"),
    ("features", [{"name": "a", "shape": [1, 1, 1]}], "features[0]"),
])
def test_bad_machine_layout_names_the_field(key, value, needle):
    with pytest.raises(MachineError) as e:
        small_machine(**{key: value})
    assert needle in str(e.value) and "Tiny" in str(e.value)


# ------------------------------------------------------------------------------------------------
# 3. rank orders
# ------------------------------------------------------------------------------------------------


def test_grid_order_slides_examples():
    c = P.grid_order([8, 8], [4, 2], "C")
    assert c[:8].tolist() == [0, 1, 2, 3, 8, 9, 10, 11] and c[8:16].tolist() == [4, 5, 6, 7, 12, 13, 14, 15]
    r = P.grid_order([8, 8], [4, 2], "R")
    assert r[:8].tolist() == [0, 1, 8, 9, 16, 17, 24, 25] and r[8:16].tolist() == [2, 3, 10, 11, 18, 19, 26, 27]
    # the node pairs: 8x2 (C) and 4x4 (R) blocks of the grid
    ij = lambda ranks, major: {divmod(int(k), 8)[::-1] if major == "C" else divmod(int(k), 8) for k in ranks}
    assert ij(c[:16], "C") == {(i, j) for i in range(8) for j in range(2)}
    assert ij(r[:16], "R") == {(i, j) for i in range(4) for j in range(4)}


def brute_grid_order(grid, cell, major):
    """grid_order by explicit loops: cells in major order, ranks of a cell in major order."""
    def ordered(shape):  # index tuples, first fastest (C) or last fastest (R)
        tuples = list(itertools.product(*[range(s) for s in shape]))
        return sorted(tuples, key=lambda t: t[::-1]) if major == "C" else tuples

    def rank(x):
        return (sum(x[k] * math.prod(grid[:k]) for k in range(len(grid))) if major == "C" else
                sum(x[k] * math.prod(grid[k + 1:]) for k in range(len(grid))))

    cells = [g // c for g, c in zip(grid, cell)]
    return [rank(tuple(cc * c + o for cc, c, o in zip(ci, cell, off)))
            for ci in ordered(cells) for off in ordered(cell)]


@pytest.mark.parametrize("grid,cell,major", [([6, 4], [3, 2], "C"), ([6, 4], [2, 4], "R"), ([4, 6, 2], [2, 3, 1], "C"),
                                             ([4, 6, 2], [1, 2, 2], "R"), ([2, 2, 2, 4], [1, 2, 2, 2], "R")])
def test_grid_order_is_the_brute_force_permutation(grid, cell, major):
    got = P.grid_order(grid, cell, major)
    assert got.tolist() == brute_grid_order(grid, cell, major)
    assert sorted(got.tolist()) == list(range(math.prod(grid)))


def test_grid_order_specfem_cells_and_extra_ranks():
    # -R -c 4,1 at 32 tasks per node: eight 4x1 cells per node; 8 ranks beyond the grid come last
    o = P.grid_order([1020, 170], [4, 1], "R", n_tasks=1020 * 170 + 8)
    first = o[:32]
    assert sorted({int(k) % 170 for k in first}) == list(range(8))  # 8 columns
    assert sorted({int(k) // 170 for k in first}) == [0, 1, 2, 3]   # 4 rows
    assert o[-8:].tolist() == list(range(173400, 173408)) and np.unique(o).size == o.size


def test_rank_order_composes_with_any_placement():
    topo = machine_topology(small_machine(service_routers=[[1, 1, 1]]))
    base = P.alps(topo, 64, tasks_per_node=4)
    ro = {"method": "grid_order", "major": "R", "cell": [2, 2], "grid": [8, 8]}
    got = P.alps(topo, 64, tasks_per_node=4, rank_order=ro)
    order = P.grid_order([8, 8], [2, 2], "R")
    assert np.array_equal(got.task_node[order], base.task_node)  # rank order[s] on slot s's node
    assert np.array_equal(np.bincount(got.task_node, minlength=topo.n_nodes), base.tasks_per_node())
    sp = P.subprism(topo, [2, 2, 2], [2, 0, 0], n_tasks=64, tasks_per_node=4, rank_order=ro)
    assert np.array_equal(sp.task_node[order], P.subprism(topo, [2, 2, 2], [2, 0, 0], 64, 4).task_node)


@pytest.mark.parametrize("ro,field", [
    ({"method": "hilbert"}, "placement.rank_order.method"),
    ({"method": "grid_order", "grid": [8, 8], "cell": [3, 2]}, "placement.rank_order.cell[0]"),
    ({"method": "grid_order", "grid": [16, 8]}, "placement.rank_order.grid"),
    ({"method": "grid_order", "grid": [8, 8], "major": "X"}, "placement.rank_order.major"),
    ({"method": "grid_order"}, "placement.rank_order.grid"),
])
def test_bad_rank_order(ro, field):
    topo = machine_topology(small_machine())
    with pytest.raises(ConfigError) as e:
        P.alps(topo, 64, tasks_per_node=4, rank_order=ro)
    assert e.value.field == field


def parse_ranges(text):
    out = []
    for part in text.strip().split(","):
        a, _, b = part.partition("-")
        out.extend(range(int(a), int(b or a) + 1))
    return out


def test_launch_files_round_trip(tmp_path):
    topo = machine_topology(small_machine(service_routers=[[0, 0, 1]]))
    pl = P.alps(topo, 60, tasks_per_node=8, rank_order={"method": "grid_order", "grid": [6, 10], "cell": [2, 2],
                                                        "major": "C"})
    seq = P.alps_order(topo)
    fill = np.empty(topo.n_nodes, dtype=np.int64)
    fill[seq] = np.arange(seq.size)
    ro, nl = P.write_launch_files(pl, tmp_path, fill_order=fill)
    lines = [ln for ln in ro.read_text().splitlines() if not ln.startswith("#")]
    nodes = parse_ranges(nl.read_text())
    assert nodes == sorted(set(pl.task_node.tolist()))
    # the launcher: listed nodes in its fill order, 8 slots each, the file's ranks in those slots
    launched = sorted(nodes, key=lambda n: fill[n])
    rebuilt = np.empty(pl.n_tasks, dtype=np.int64)
    for node, line in zip(launched, lines):
        rebuilt[[int(r) for r in line.split(",")]] = node
    assert np.array_equal(rebuilt, pl.task_node) and len(lines) == len(launched)
    uneven = P.explicit(topo, [4, 4, 4, 6, 8, 8, 8])
    with pytest.raises(ConfigError, match="every used node but the last"):
        rank_order_text(uneven)
    assert [r.tolist() for r in node_ranks(P.explicit(topo, [4, 4, 6, 6, 8]))[1]] == [[0, 1], [2, 3], [4]]


# ------------------------------------------------------------------------------------------------
# 2. allocation orders
# ------------------------------------------------------------------------------------------------


def test_alps_order_blocks_slabs_and_curve():
    topo = machine_topology(small_machine())  # (no service or down nodes: layout=ideal would change nothing)
    o = P.alps_order(topo)
    assert sorted(o.tolist()) == list(range(topo.n_nodes))
    routers = o[::2] // 2
    assert np.array_equal(o[1::2], o[::2] + 1)  # a router's two nodes together
    c = topo.router_coords[routers].reshape(-1, 8, 3)  # 2x2x2 blocks
    assert all(len({tuple(x) for x in blk // 2}) == 1 and len({tuple(x) for x in blk}) == 8 for blk in c)
    blocks = c[:, 0, :] // 2
    per_slab = 2 * 3  # YZ slabs: X is the slow axis, 2x3 blocks in each
    assert (blocks[:, 0] == np.repeat(np.arange(3), per_slab)).all()
    assert (np.abs(np.diff(blocks, axis=0)).sum(axis=1) == 1).all()  # consecutive blocks are neighbours
    xz = P.alps_order(topo, slab="xz")
    assert (topo.router_coords[xz[::2] // 2][:16 * 4 // 2, 1] < 2).all()  # the first slab spans X and Z


def test_alps_and_fragmented_honour_allocation():
    topo = machine_topology(small_machine(service_fraction=0.1, blade=[1, 2, 1], down_routers=[[2, 2, 2]]))
    mask = P.compute_mask(topo)
    free = P.free_after_history(topo, 0.6, seed=3, job_nodes=[1, 16], events=50)
    n_compute = int(mask.sum())
    busy = n_compute - int(free.sum())
    assert not free[~mask].any()
    assert 0.6 * n_compute - 1 < busy <= 0.6 * n_compute  # never over the occupancy; short by < the smallest job
    pl = P.fragmented(topo, 40, tasks_per_node=2, occupancy=0.6, seed=3, job_nodes=[1, 16], events=50)
    nodes = np.unique(pl.task_node)
    assert free[nodes].all() and mask[nodes].all() and nodes.size == 20 and pl.tasks_per_node().max() == 2
    # the job takes the FIRST free nodes of the ALPS order
    seq = P.alps_order(topo)
    assert set(seq[free[seq]][:20].tolist()) == set(nodes.tolist())
    other = P.free_after_history(topo, 0.6, seed=4, job_nodes=[1, 16], events=50)
    assert not np.array_equal(free, other)
    with pytest.raises(ConfigError, match="placement.n_tasks"):
        P.fragmented(topo, 2 * int(free.sum()) + 1, tasks_per_node=2, occupancy=0.6, seed=3, job_nodes=[1, 16],
                     events=50)
    with pytest.raises(ConfigError, match="placement.occupancy"):
        P.fragmented(topo, 4, occupancy=1.0)


def test_fragmented_never_overruns_its_occupancy():
    """Jobs as large as the machine: the busy share is the occupancy asked (the last job used to overrun it by up to
    its size: 0.5 asked, 0.92 busy here)."""
    topo = torus((8, 8, 8), nodes_per_router=2)
    for occ in (0.3, 0.5, 0.9):
        for seed in range(3):
            busy = topo.n_nodes - int(P.free_after_history(topo, occ, seed=seed, job_nodes=[1, 1024]).sum())
            assert occ * topo.n_nodes - 1 < busy <= occ * topo.n_nodes, (occ, seed, busy)
    busy = topo.n_nodes - int(P.free_after_history(topo, 0.5, seed=0, job_nodes=[16, 1024]).sum())
    assert 512 - 16 < busy <= 512


def test_subprism_skips_service_refuses_down_and_too_big():
    m = small_machine(service_routers=[[1, 0, 0]], down_routers=[[4, 3, 4]])
    topo = machine_topology(m)
    pl = P.subprism(topo, [2, 2, 2], n_tasks=14)
    assert P.compute_mask(topo)[pl.task_node].all() and np.unique(pl.task_node).size == 14
    assert (topo.router_coords[pl.task_node // 2] < 2).all()  # inside the prism
    wrapped = P.subprism(topo, [2, 2, 2], [5, 3, 5], n_tasks=16)
    assert {tuple(c) for c in topo.router_coords[wrapped.task_node // 2]} == set(
        itertools.product([5, 0], [3, 0], [5, 0]))
    with pytest.raises(ConfigError, match="at most prism compute nodes"):
        P.subprism(topo, [2, 2, 2], n_tasks=16)
    with pytest.raises(ConfigError, match="down") as e:
        P.subprism(topo, [2, 2, 2], [3, 2, 3], n_tasks=8)
    assert e.value.field == "placement.task_grid"
    with pytest.raises(ConfigError) as e:
        P.subprism(topo, [7, 1, 1], n_tasks=2)
    assert e.value.field == "placement.task_grid[0]"


def test_features_pick_the_first_that_fits():
    feats = [{"name": "a", "offset": [0, 0, 0], "shape": [2, 2, 2]}, {"name": "b", "offset": [2, 0, 0],
                                                                       "shape": [4, 4, 6]}]
    topo = machine_topology(small_machine(features=feats, service_routers=[[0, 0, 0]]))
    small = P.features(topo, 14)
    assert small.name.startswith("feature a") and P.compute_mask(topo)[small.task_node].all()
    big = P.features(topo, 16)
    assert big.name.startswith("feature b")
    assert (topo.router_coords[big.task_node // 2][:, 0] >= 2).all()
    with pytest.raises(ConfigError, match="placement.oneof"):
        P.features(topo, 4, oneof=["c"])
    with pytest.raises(ConfigError, match="a: 14, b: 192"):
        P.features(topo, 193)
    with pytest.raises(ConfigError, match="features"):
        P.features(machine_topology(small_machine()), 4)


# ------------------------------------------------------------------------------------------------
# 4. Topaware
# ------------------------------------------------------------------------------------------------


def neighbour_pairs(grid, coords_of_rank, periodic=False):
    """(rank_a, rank_b) for grid neighbours along every dimension (non-periodic)."""
    idx = np.arange(math.prod(grid)).reshape(grid)
    for k in range(len(grid)):
        a = np.take(idx, range(grid[k] - 1), axis=k).ravel()
        b = np.take(idx, range(1, grid[k]), axis=k).ravel()
        yield k, a, b


def test_topaware_skips_service_and_keeps_neighbours_within_two_hops():
    # at most one service router per row, every row and plane keeps NX of 6 usable routers -> the slides'
    # "second hop" for some neighbours, never more
    svc = [[2, 0, 1], [4, 1, 3], [0, 2, 0], [5, 3, 5], [3, 0, 4]]
    topo = machine_topology(small_machine(service_routers=svc))
    grid = [10, 8, 12]  # node tile 1x2x2 -> router tile 2x2x2 -> layout 5x4x6 in the 6x4x6 prism
    pl = P.topaware(topo, grid, tasks_per_node=4, node_tile=[1, 2, 2], pair_dim=0)
    mask = P.compute_mask(topo)
    assert mask[pl.task_node].all()
    assert (pl.tasks_per_node()[np.unique(pl.task_node)] == 4).all() and np.unique(pl.task_node).size == 240
    router = pl.task_node // 2
    hops = [torus_hops(topo, router[a], router[b]) for _, ai, bi in neighbour_pairs(grid, None)
            for a, b in zip(ai, bi)]
    assert max(hops) == 2 and np.mean(np.array(hops) == 0) > 0.5
    # without service routers every neighbouring tile is on the same or a neighbouring router
    ideal = machine_topology(small_machine(service_routers=svc), layout="ideal")
    r0 = P.topaware(ideal, grid, 4, prism=[5, 4, 6], node_tile=[1, 2, 2], pair_dim=0).task_node // 2
    assert max(torus_hops(ideal, r0[a], r0[b]) for _, ai, bi in neighbour_pairs(grid, None)
               for a, b in zip(ai, bi)) == 1


def test_topaware_select_routers_rows_and_planes():
    # plane y=1 has a row with two service routers -> that row is skipped there; plane y=2 has too few rows
    svc = [[0, 1, 2], [3, 1, 2]] + [[1, 2, z] for z in range(3)] + [[4, 2, z] for z in range(3)]
    topo = machine_topology(small_machine(service_routers=svc))
    sel = P.select_routers(topo, [5, 3, 4])
    c = topo.router_coords[sel]  # [5, 3, 4, 3]
    assert (c[..., 1] == np.array([0, 1, 3])[None, :, None]).all()  # planes 0, 1, 3 (2 lacks 4 good rows)
    assert (c[:, 1, :, 2] == np.array([0, 1, 3, 4])).all()          # plane 1 skips row z=2
    assert (c[:, 0, :, 2] == np.arange(4)).all()
    mask = P.compute_mask(topo).reshape(-1, 2).all(axis=1)
    assert mask[sel].all() and np.unique(sel).size == sel.size
    with pytest.raises(ConfigError) as e:
        P.select_routers(topo, [5, 4, 4])
    assert e.value.field == "placement.prism" and "3 such planes" in str(e.value)


def test_topaware_4d_whole_dimension_on_a_node_pair():
    # the slides' 4-D halo exchange, scaled down: 32 tasks per node, 1x2x2x8 per node, 1x2x2x16 per Gemini
    topo = machine_topology(small_machine())  # (no service or down nodes: layout=ideal would change nothing)
    grid = [4, 4, 4, 16]
    pl = P.topaware(topo, grid, tasks_per_node=32)
    assert pl.name.endswith("tile 1x2x2x8")
    coords = np.stack(np.unravel_index(np.arange(pl.n_tasks), grid), axis=1)
    router = pl.task_node // 2
    for r in np.unique(router):
        mine = coords[router == r]
        assert sorted(set(mine[:, 3].tolist())) == list(range(16))
    with pytest.raises(ConfigError, match="whole 4th dimension"):
        P.topaware(topo, [4, 4, 4, 32], tasks_per_node=8, node_tile=[1, 1, 1, 8])


def test_topaware_milc_layout_on_bluewaters():
    topo = machine_topology("BlueWaters")
    pl = P.topaware(topo, [14, 14, 21, 16], tasks_per_node=16, prism=[16, 9, 24])
    assert pl.name.endswith("tile 1x2x1x8")  # 1x2x1x16 per node pair -> 14x7x21 Geminis
    assert np.unique(pl.task_node // 2).size == 14 * 7 * 21 and P.compute_mask(topo)[pl.task_node].all()


def test_topaware_2d_fold_supertiles_share_no_links():
    topo = machine_topology(small_machine())  # (no service or down nodes: layout=ideal would change nothing)
    grid = [12, 48]  # node tile 2x1, router tile 2x2 -> tiles 6x24, folded into 4 supertiles of 6x6
    pl = P.topaware(topo, grid, tasks_per_node=2, node_tile=[2, 1], pair_dim=1, supertiles=4)
    router = pl.task_node // 2
    hops = [torus_hops(topo, router[a], router[b]) for _, ai, bi in neighbour_pairs(grid, None)
            for a, b in zip(ai, bi)]
    assert max(hops) == 1
    idx = np.arange(pl.n_tasks).reshape(grid)
    edges = []  # Y links used by each fold edge (between supertile s and s+1)
    for s in range(3):
        b = (s + 1) * 12  # first grid column of supertile s+1 (12 = 6 tiles x 2)
        pairs = {(int(router[i]), int(router[j])) for i, j in zip(idx[:, b - 1], idx[:, b])}
        assert all(torus_hops(topo, *p) == 1 and topo.router_coords[p[0]][1] != topo.router_coords[p[1]][1]
                   for p in pairs)
        edges.append({frozenset(p) for p in pairs})
    assert not (edges[0] & edges[1]) and not (edges[1] & edges[2]) and not (edges[0] & edges[2])


def test_topaware_bad_input():
    topo = machine_topology(small_machine(service_routers=[[0, 0, 0]]))
    with pytest.raises(ConfigError, match="placement.n_tasks"):  # more tasks than usable nodes
        P.topaware(topo, [12, 8, 12], tasks_per_node=1)
    with pytest.raises(ConfigError) as e:  # the layout does not fit the prism
        P.topaware(topo, [6, 4, 6], tasks_per_node=1, prism=[3, 4, 6], node_tile=[1, 1, 1], pair_dim=0)
    assert e.value.field == "placement.prism"
    with pytest.raises(ConfigError) as e:  # the prism's one plane has a row with 5 usable routers, not 6
        P.topaware(topo, [12, 1, 6], tasks_per_node=1, prism=[6, 1, 6], node_tile=[1, 1, 1], pair_dim=0)
    assert e.value.field == "placement.prism" and "0 such planes (best plane: 5 rows)" in str(e.value)
    ok = P.topaware(topo, [12, 1, 6], tasks_per_node=1, prism=[6, 2, 6], node_tile=[1, 1, 1], pair_dim=0)
    assert (topo.router_coords[ok.task_node // 2][:, 1] == 1).all()  # Y scanned on to the usable plane
    with pytest.raises(ConfigError, match="placement.grid"):
        P.topaware(topo, [4, 4, 4], tasks_per_node=1, n_tasks=63)
    with pytest.raises(ConfigError, match="placement.node_tile"):
        P.topaware(topo, [4, 4, 4], tasks_per_node=4, node_tile=[3, 1, 1])


# ------------------------------------------------------------------------------------------------
# configs, sweeps, CLI
# ------------------------------------------------------------------------------------------------

TORUS = ["topology=torus", "topology.dims=[4,4,4]", "routing=dor", "traffic=all_to_all", "traffic.n_tasks=64"]


def test_rank_order_from_config_and_unknown_method():
    obj = config.to_object(config.compose(TORUS + ["placement=alps", "placement.tasks_per_node=4",
                                                   "placement.rank_order.method=grid_order",
                                                   "placement.rank_order.grid=[8,8]",
                                                   "placement.rank_order.cell=[4,1]"]))
    pl = config.build(obj).placement
    assert sorted(pl.task_node[P.grid_order([8, 8], [4, 1], "R")][:4].tolist()) == [0, 0, 0, 0]
    bad = config.to_object(config.compose(TORUS + ["placement=subprism", "placement.task_grid=[4,4,4]",
                                                   "placement.rank_order.method=foo"]))
    with pytest.raises(ConfigError) as e:
        config.build(bad)
    assert e.value.field == "placement.rank_order.method" and "smp | grid_order" in str(e.value)


def test_cli_placement_writes_launch_files(tmp_path, capsys):
    args = ["placement", "topology=machine", "topology.name=BlueWaters", "topology.partition=null", "routing=dor",
            "traffic=stencil", "traffic.alpha=[48,48,48]", "traffic.beta=[8,4,4]", "placement=topaware",
            "placement.tasks_per_node=4", "placement.prism=[8,6,8]"]
    assert cli.main(args + ["--write-rank-order", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "service or down nodes used 0" in out and (tmp_path / "MPICH_RANK_ORDER").is_file()
    assert len(parse_ranges((tmp_path / "node_list").read_text())) == 32
    assert cli.main(args[:-3] + ["placement=alps", "placement.rank_order.method=snake"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "placement.rank_order.method" in err


def test_node_class_restricts_every_allocating_kind():
    m = small_machine(node_classes=[{"name": "XK", "offset": [4, 0, 0], "shape": [2, 4, 6]}], default_class="XE",
                      service_routers=[[4, 0, 0]])
    topo = machine_topology(m)
    in_xk = lambda pl: set((topo.router_coords[pl.task_node // 2][:, 0]).tolist()) <= {4, 5}
    assert in_xk(P.alps(topo, 40, node_class="XK"))
    assert in_xk(P.subprism(topo, [6, 4, 6], n_tasks=40, node_class="XK"))
    assert in_xk(P.topaware(topo, [2, 4, 5], 1, node_class="XK"))
    assert not in_xk(P.alps(topo, 40)) and not (set(topo.router_coords[P.alps(
        topo, 40, node_class="XE").task_node // 2][:, 0].tolist()) & {4, 5})
    with pytest.raises(ConfigError, match="placement.n_tasks"):
        P.alps(topo, 95, node_class="XK")  # 2x4x6 routers x 2 nodes less one service router = 94 nodes
    assert np.unique(P.alps(topo, 94, node_class="XK").task_node).size == 94
    with pytest.raises(ConfigError, match="null or one of XE, XK"):
        P.alps(topo, 4, node_class="GPU")
    with pytest.raises(ConfigError, match="no node classes"):
        P.alps(machine_topology(m, layout="ideal"), 4, node_class="XE")


def test_topaware_launcher_mapping_uses_the_same_nodes():
    topo = machine_topology(small_machine(service_routers=[[1, 1, 1]]))
    tiles = P.topaware(topo, [4, 4, 4], 4, node_tile=[1, 2, 2], pair_dim=0)
    smp = P.topaware(topo, [4, 4, 4], 4, node_tile=[1, 2, 2], pair_dim=0, mapping="launcher")
    ro = {"method": "grid_order", "grid": [4, 4, 4], "cell": [1, 2, 2]}
    go = P.topaware(topo, [4, 4, 4], 4, node_tile=[1, 2, 2], pair_dim=0, mapping="launcher", rank_order=ro)
    assert set(tiles.task_node.tolist()) == set(smp.task_node.tolist()) == set(go.task_node.tolist())
    seq = P.alps_order(topo)
    used = [n for n in seq if n in set(tiles.task_node.tolist())]
    assert smp.task_node.tolist() == [used[t // 4] for t in range(64)]  # SMP in the launcher's (ALPS) order
    assert np.array_equal(go.task_node[P.grid_order([4, 4, 4], [1, 2, 2])], smp.task_node)
    with pytest.raises(ConfigError, match="mapping=launcher"):
        P.topaware(topo, [4, 4, 4], 4, rank_order=ro)
    with pytest.raises(ConfigError, match="placement.mapping"):
        P.topaware(topo, [4, 4, 4], 4, mapping="smp")
