"""The allocation-mode study (evaluator.studies.rdn) on a tiny machine: closed forms and the table's shape."""

from __future__ import annotations

import numpy as np
import pytest

from evaluator import errors
from evaluator.studies import RdnMachine, allocation_mode_study, speedup_table
from evaluator.traffic import neighbouring
from tests.helpers import TOL

M = RdnMachine(p=2, a=4, h=2, g=2, bandwidth=1.0e9)      # two groups: the whole machine is the job


@pytest.fixture(scope="module")
def study():
    return allocation_mode_study(M, groups=(2,), patterns=("stencil",), background=0.26)


def test_stencil_is_injection_bound_on_the_rdn(study):
    # DF(2,4,2): 8 nodes a group; task grid (q, 2, 4), subdomain 4^3 elements of 256 bytes: faces of 4096 bytes.
    # Every task sends 6 faces (q = 2: both z faces to the other group). Between the two groups: 8 tasks x 2 faces
    # over 8 links each way = 2 faces a link < 6 faces on an injection link; local links carry at most 4 faces.
    mu = 256 * 4 * 4
    t = study.rdn_minimal_time.sel(pattern="stencil")
    assert t.sel(groups=2) == pytest.approx(6 * mu / M.bandwidth, rel=TOL["rel"])
    # whole groups: no free node, so no background inside them
    assert float(study.rdn_minimal_time_bg.sel(pattern="stencil", groups=2)) == float(t.sel(groups=2))
    assert float(study.rdn_time.sel(pattern="stencil", groups=2)) == pytest.approx(6 * mu / M.bandwidth,
                                                                                    rel=TOL["rel"])
    # the TDN can do no better than the injection bound; Valiant needs a third group (NaN), so the best is minimal
    assert (study.tdn_minimal_time.sel(pattern="stencil") >= 6 * mu / M.bandwidth * (1 - TOL["rel"])).all()
    assert np.isnan(study.tdn_valiant_time).all() and (study.tdn_time == study.tdn_minimal_time).all()
    assert list(study.groups.values) == [2]


def test_speedup_table_dims_and_definition(study):
    tab = speedup_table(study=study)
    assert tab.speedup.dims == ("mode", "groups")
    assert list(tab.mode.values) == ["minimal_balance", "custom_balance"]
    best = np.fmin(study.tdn_minimal_time_bg, study.tdn_valiant_time_bg).sel(pattern="stencil")
    expect = best / study.rdn_time_bg.sel(pattern="stencil")      # the ratio T_TDN / T_RDN (1: no change)
    np.testing.assert_allclose(tab.speedup.sel(mode="custom_balance"), expect, rtol=TOL["rel"])
    np.testing.assert_allclose(tab.time_saved.sel(mode="minimal_balance"),
                               1 - study.rdn_time_bg.sel(pattern="stencil") / best, rtol=TOL["rel"])
    np.testing.assert_allclose(tab.time_saved, 1 - 1 / tab.speedup, rtol=TOL["rel"])
    # random mapping over both groups sends half the faces across the 8 global links: the RDN is faster here,
    # so the next test sees a ratio other than 1
    assert float(tab.speedup.sel(mode="minimal_balance", groups=2)) > 1 + 1e-6


def test_study_table_drives_the_scheduler(study, tmp_path):
    """The study's table, written and read back as `evaluator schedule --speedups` does, gives each job the run
    time of Job_Time - MPI_Time x saving(T_TDN / T_RDN), with the times taken from the study's raw variables."""
    from evaluator.io import write_netcdf
    from evaluator.policies import Grap
    from evaluator.workload import Trace, simulate
    from evaluator.workload.run import load_speedups

    path = write_netcdf(speedup_table(study=study), tmp_path / "speedup.nc")
    table = load_speedups(str(path))
    t_rdn = float(study.rdn_minimal_time_bg.sel(pattern="stencil", groups=2))
    t_tdn = float(study.tdn_minimal_time_bg.sel(pattern="stencil", groups=2))   # Valiant is NaN on two groups
    ratio = t_tdn / t_rdn
    npg = M.nodes_per_group                                  # 8: jobs of 16 nodes span both groups
    tr = Trace(job_id=np.array([1, 2, 3]), submit=np.zeros(3), run_time=np.full(3, 100.0),
               requested_time=np.full(3, 200.0), nodes=np.array([2 * npg, 2 * npg, 3]),
               mode=np.array(["minimal_balance", "custom_balance", "minimal_balance"], dtype=object),
               requirements=((), (npg, npg), ()), mpi_fraction=np.array([0.4, 0.25, 0.5]))
    for rule, saved in (("time_ratio", 1 - t_rdn / t_tdn), ("excess", min(t_tdn / t_rdn - 1, 1.0))):
        ds = simulate(tr, Grap(M.g, npg), speedups=table, speedup_rule=rule)
        run = [100 - 0.4 * 100 * saved, 100 - 0.25 * 100 * saved, 100.0]   # job 3: one group, not accelerated
        np.testing.assert_allclose(ds.run_time.values, run, rtol=TOL["rel"])
        np.testing.assert_allclose(ds.speedup.values, [ratio, ratio, 1.0], rtol=TOL["rel"])
        assert list(ds.groups.values) == [2, 2, 1]
        # one large job at a time (each holds both groups' ports); job 3 fits beside job 1 in no group: last
        np.testing.assert_allclose(ds.start.values, [0.0, run[0], run[0] + run[1]], rtol=TOL["rel"])


def test_refusals_are_recorded_not_raised(monkeypatch):
    monkeypatch.setattr(errors, "available_memory", lambda: 1000)
    ds = allocation_mode_study(RdnMachine(2, 4, 2, 4), groups=(2,), patterns=("neighbouring",), background=0.0)
    assert (ds.refused.values != "").all() and np.isnan(ds.rdn_minimal_time.values).all()


def test_bad_study_input():
    with pytest.raises(errors.ConfigError, match="patterns"):
        allocation_mode_study(M, patterns=("ring",))
    with pytest.raises(errors.ConfigError, match="background"):
        allocation_mode_study(M, background=1.5)


def test_neighbouring_partners():
    t = neighbouring([6, 4, 6, 4], 4, 4, 2.0)
    src, dst = t.src, t.dst
    # 4 blocks: b+2 = b-2, so 3 neighbouring blocks; blocks of 4: l+2 = l-2, so 3 partners inside
    assert t.n_tasks == 20 and t.n_flows == 12 * (4 + 3) + 8 * (3 + 3)
    # task 1 of block 0 (size 6): l+-1, l+-2 in its block, task 1 of blocks 1, 3 and 2 (b+2 = b-2)
    assert sorted(dst[src == 1].tolist()) == [0, 2, 3, 5, 7, 11, 17]
    # blocks of 2: b+1 and b-1 are the same block, b+-2 is b itself: one inter partner
    t2 = neighbouring([5, 5], 4, 4)
    assert sorted(t2.dst[t2.src == 0].tolist()) == [1, 2, 3, 4, 5]
    with pytest.raises(errors.ConfigError, match="traffic.block_sizes"):
        neighbouring([])
    assert (t.nbytes == 2.0).all()


def test_study_command_line_errors(capsys):
    from evaluator.studies.__main__ import main
    assert main([]) == 2 and "usage" in capsys.readouterr().err
    with pytest.raises(errors.ConfigError, match="--machine"):
        main(["rdn", "--machine", "12,24,x,288"])


def test_stencil_plane_tiles_routers():
    from evaluator.studies.rdn import _tiled_order
    o = _tiled_order(16, 18, 12, 24)                   # the paper's group: 24 routers of 12 nodes, tiles 4 x 3
    assert sorted(o.tolist()) == list(range(288))
    i, j = np.divmod(np.arange(288), 18)
    for r in range(24):
        ti, tj = i[o // 12 == r], j[o // 12 == r]
        assert (ti.max() - ti.min() + 1, tj.max() - tj.min() + 1) == (4, 3)
    assert (_tiled_order(5, 7, 3, 35 // 3) == np.arange(35)).all()   # no tiling: row-major
