"""Pencil-decomposition transposes (PSDNS): flows against a brute-force construction, volumes, the on-node
form against the rank-level pattern, and bad input."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import evaluator as ev
from evaluator import placement as P
from evaluator import traffic as T
from evaluator.errors import ConfigError
from tests.helpers import TOL
from tests.reference import reference_link_loads


def _brute_force(grid, p_row, p_col, bpp):
    """Every ordered pair of each row, then of each column, with Python loops; bytes from the FFT volume."""
    nx, ny, nz = grid
    P_ = p_row * p_col
    D = bpp * nx * ny * nz / P_            # bytes each rank holds (x-pencil Nx x Ny/p_row x Nz/p_col)
    rank = {(r, j): r * p_row + j for r in range(p_col) for j in range(p_row)}   # row r, position j
    xy, yz = {}, {}
    for r in range(p_col):                  # rows: same z range, all y ranges -> whole xy planes
        for j, j2 in itertools.product(range(p_row), repeat=2):
            if j != j2:                     # block (Nx/p_row) x (Ny/p_row) x (Nz/p_col)
                xy[(rank[r, j], rank[r, j2])] = bpp * (nx // p_row) * (ny // p_row) * (nz // p_col)
    for j in range(p_row):                  # columns: same position in every row
        for r, r2 in itertools.product(range(p_col), repeat=2):
            if r != r2:                     # block (Nx/p_row) x (Ny/p_col) x (Nz/p_col)
                yz[(rank[r, j], rank[r2, j])] = bpp * (nx // p_row) * (ny // p_col) * (nz // p_col)
    return D, xy, yz


def _flows(t: T.Traffic) -> dict:
    out: dict = {}
    for s, d, b in zip(t.src.tolist(), t.dst.tolist(), t.nbytes.tolist()):
        assert (s, d) not in out
        out[(s, d)] = b
    return out


@pytest.mark.parametrize("grid,p_row,p_col", [((8, 8, 8), 2, 4), ((12, 6, 12), 3, 2), ((16, 8, 4), 4, 4),
                                              ((4, 4, 4), 1, 4), ((6, 6, 6), 6, 1)])
def test_flows_against_brute_force(grid, p_row, p_col):
    tr = T.pencil(list(grid), p_row, p_col, bytes_per_point=16.0)
    assert tr.phase_names == ("xy", "yz") and tr.n_tasks == p_row * p_col
    D, xy, yz = _brute_force(grid, p_row, p_col, 16.0)
    assert _flows(tr.phases[0]) == pytest.approx(xy, rel=TOL["rel"])
    assert _flows(tr.phases[1]) == pytest.approx(yz, rel=TOL["rel"])
    # each transpose moves (p - 1)/p of every rank's data; the rank keeps 1/p
    sent_xy, sent_yz = tr.phases[0].sent_per_task(), tr.phases[1].sent_per_task()
    np.testing.assert_allclose(sent_xy, D * (p_row - 1) / p_row, rtol=TOL["rel"])
    np.testing.assert_allclose(sent_yz, D * (p_col - 1) / p_col, rtol=TOL["rel"])
    v = T.pencil_volumes(list(grid), p_row, p_col, 16.0)
    assert v["per_rank"] * p_row * p_col == pytest.approx(16.0 * np.prod(grid), rel=TOL["rel"])
    assert (v["xy_sent"], v["yz_sent"]) == pytest.approx((sent_xy[0], sent_yz[0]), rel=TOL["rel"])


def test_scalar_grid_and_bytes_per_point_scale():
    a = T.pencil(8, 2, 4, bytes_per_point=16.0)
    b = T.pencil([8, 8, 8], 2, 4, bytes_per_point=8.0)
    for pa, pb in zip(a.phases, b.phases):
        np.testing.assert_array_equal(pa.src, pb.src)
        np.testing.assert_allclose(pa.nbytes, 2 * pb.nbytes, rtol=TOL["rel"])


def test_phases_against_per_flow_walk():
    topo = ev.torus([4, 2, 2], link_bandwidth=[2e9, 1e9, 2e9], nodes_per_router=2, injection_bandwidth=3e9)
    tr = T.pencil([8, 8, 8], 4, 8)
    pl = P.linear(topo, 32, tasks_per_node=2)
    ds = ev.evaluate(topo, tr, pl, "dor")
    cap = ds.link_capacity.values
    times = []
    total = np.zeros(cap.size)
    for ph in tr.phases:
        ref = reference_link_loads(topo, zip(ph.src, ph.dst, ph.nbytes), pl.task_node,
                                   {"kind": "dor", "order": "as_given", "tie": "split"})
        times.append((ref / cap).max())
        total += ref
    np.testing.assert_allclose(ds.link_load.values, total, rtol=TOL["rel"], atol=TOL["bytes"])
    np.testing.assert_allclose(ds.phase_completion_time.values, times, rtol=TOL["rel"])
    assert float(ds.completion_time) == pytest.approx(sum(times), rel=TOL["rel"])


@pytest.mark.parametrize("rows_per_node", [1, 2])
def test_xy_planes_on_node_equals_rank_level_pattern(rows_per_node):
    """One task per row (dense) = the rank-level flows with every row kept on one node, link for link."""
    p_row, p_col = 4, 8
    topo = ev.torus([2, 2, 2], link_bandwidth=[2e9, 1e9, 2e9], nodes_per_router=2, injection_bandwidth=3e9)
    ranks = T.pencil(16, p_row, p_col)
    rows = T.pencil(16, p_row, p_col, xy_planes_on_node=True)
    assert rows.n_tasks == p_col and rows.phase_names == ("xy", "yz")
    assert isinstance(rows.phases[1], T.DenseTraffic)
    a = ev.evaluate(topo, ranks, P.linear(topo, p_row * p_col, tasks_per_node=p_row * rows_per_node), "dor")
    b = ev.evaluate(topo, rows, P.linear(topo, p_col, tasks_per_node=rows_per_node), "dor")
    assert float(a.phase_completion_time[0]) == 0.0 and float(b.phase_completion_time[0]) == 0.0
    np.testing.assert_allclose(b.link_load.values, a.link_load.values, rtol=TOL["rel"], atol=TOL["bytes"])
    np.testing.assert_allclose(b.phase_completion_time.values, a.phase_completion_time.values, rtol=TOL["rel"])
    # the on-node form carries exactly the column transposes' bytes (the row transposes never leave a node)
    assert float(b.total_bytes) == pytest.approx(float(a.phase_total_bytes[1]), rel=TOL["rel"])


def test_config_builds_and_composes():
    from evaluator import config
    obj = config.to_object(config.compose(["traffic=pencil", "traffic.grid=[8,8,8]", "traffic.p_row=2",
                                           "traffic.p_col=4", "topology=torus", "topology.dims=[2,2,2]",
                                           "routing=dor", "placement=linear"]))
    pt = config.build(obj)
    assert pt.traffic.phase_names == ("xy", "yz") and pt.traffic.n_tasks == 8


@pytest.mark.parametrize("kwargs,field", [
    (dict(grid=[8, 8, 8], p_row=3, p_col=2), "traffic.p_row"),        # 3 does not divide 8
    (dict(grid=[8, 6, 8], p_row=2, p_col=4), "traffic.p_col"),        # 4 does not divide Ny = 6
    (dict(grid=[8, 8], p_row=2, p_col=2), "traffic.grid"),
    (dict(grid=0, p_row=2, p_col=2), "traffic.grid"),
    (dict(grid=8, p_row=0, p_col=2), "traffic.p_row"),
    (dict(grid=8, p_row=2, p_col=2, bytes_per_point=-1), "traffic.bytes_per_point"),
    (dict(grid=8, p_row=2, p_col=2, xy_planes_on_node="yes"), "traffic.xy_planes_on_node"),
])
def test_bad_input(kwargs, field):
    with pytest.raises(ConfigError) as e:
        T.pencil(**kwargs)
    assert e.value.field == field, str(e.value)


def test_best_lists_each_point_once_for_phased_datasets():
    """A phased sweep's dataset has per-phase variables; the ranking shows each design point once."""
    import xarray as xr

    from evaluator.query import best
    ds = xr.Dataset({"completion_time": ("placement.task_grid", [0.8, 0.4]),
                     "phase_completion_time": (("placement.task_grid", "phase"), [[0.0, 0.8], [0.0, 0.4]])},
                    coords={"placement.task_grid": ["6x24x24", "23x6x24"], "phase": ["xy", "yz"]})
    df = best(ds, "completion_time")
    assert df["placement.task_grid"].tolist() == ["23x6x24", "6x24x24"]
