"""Named studies of Fiedler's slides (sweeps/*.yaml, docs/gemini.md "Studies: predicted against measured"):
the SPECFEM3D on-node byte share against a brute-force count over the grid's neighbour pairs, and the WRF
study's transposed grid_order against the slides' -C command."""

import numpy as np
import pytest

import evaluator as ev
from evaluator import config
from evaluator.placement.rank_order import grid_order
from evaluator.sweep import plan_sweep
from tests.helpers import TOL


def _points(name):
    plan = plan_sweep(config.compose_sweep([f"sweeps={name}"]))
    return plan, [config.build(plan.point_config(i)) for i in range(plan.n_points)]


def _on_node_share_brute_force(grid, task_node):
    """Share of the bytes of a non-periodic 2-D nearest-neighbour exchange (the same bytes on every pair, both
    ways) between tasks on one node, counted pair by pair; task ``i * grid[1] + j`` is at ``(i, j)``."""
    idx = np.arange(grid[0] * grid[1]).reshape(grid)
    pairs = [(idx[:-1, :], idx[1:, :]), (idx[:, :-1], idx[:, 1:])]  # every neighbour pair once
    same = np.concatenate([(task_node[a] == task_node[b]).ravel() for a, b in pairs])
    return same.sum() / same.size


def test_specfem_on_node_share_matches_the_slides():
    plan, pts = _points("specfem_on_node_share")
    assert [str(v) for v in plan.axes[0].labels] == ["smp", "grid_order"]
    grid = (1020, 170)
    brute = [_on_node_share_brute_force(grid, p.placement.task_node) for p in pts]
    # the slides: "On-node 48% of total B/task w/SMP", "81% ... w/Custom" (grid_order -R -c 4,1 -g 1020,170)
    assert [round(100 * s) for s in brute] == [48, 81]
    # eight 4x1 cells per node: 52 of 64 pairs inside a node away from the grid's edges and the cells that wrap
    assert brute[1] == pytest.approx(52 / 64, abs=0.01) and brute[0] == pytest.approx(31 / 64, abs=0.01)
    # the model's share (1 - off_node_bytes / total_bytes), one batch
    p0 = pts[0]
    res = ev.evaluate_batch(p0.topology, p0.routing, [p.traffic for p in pts], [p.placement for p in pts])
    model = 1.0 - res.metrics["off_node_bytes"] / res.metrics["total_bytes"]
    np.testing.assert_allclose(model, brute, rtol=TOL["rel"])
    assert (res.metrics["total_bytes"] == 2 * 8 * (1019 * 170 + 1020 * 169)).all()


def test_wrf_transposed_grid_order_is_the_slides_minus_c():
    plan, _ = _points("wrf_grid_order")
    ro = plan.point_config(1).placement.rank_order
    assert ro.method == "grid_order"
    # -C -c 2,8 -g 190,384 on WRF's x-fastest numbering == -R -c 8,2 -g 384,190 on the stencil's row-major one
    mine = grid_order(list(ro.grid), list(ro.cell), ro.major)
    np.testing.assert_array_equal(mine, grid_order([190, 384], [2, 8], "C"))
    # and the same for the 4-D halo study's C-numbered points
    np.testing.assert_array_equal(grid_order([16, 16, 16, 12], [4, 2, 2, 2], "R"),
                                  grid_order([12, 16, 16, 16], [2, 2, 2, 4], "C"))


@pytest.mark.parametrize("exchange", ["all_at_once", "per_dimension"])
def test_off_node_bytes_counts_the_bytes_that_leave_a_node(exchange):
    from evaluator import placement as P
    from evaluator import topology as T
    from evaluator import traffic as TR

    topo = T.torus([4, 4], nodes_per_router=2)
    tr = TR.stencil([12, 8], [6, 4], bytes_per_element=8.0, periodic=[True, False], exchange=exchange)
    pl = P.linear(topo, 24, tasks_per_node=3)
    ds = ev.evaluate(topo, tr, pl, "dor")
    flows = tr.phases if exchange == "per_dimension" else (tr,)
    tn = pl.task_node
    leaving = sum(float(f.nbytes[tn[f.src] != tn[f.dst]].sum()) for f in flows)
    assert 0 < leaving < sum(float(f.nbytes.sum()) for f in flows)  # some pairs share a node, some do not
    assert float(ds.off_node_bytes) == pytest.approx(leaving, rel=TOL["rel"])
    assert ds.off_node_bytes.attrs["units"] == "bytes"
