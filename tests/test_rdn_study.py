"""The allocation-mode study (evaluator.studies.rdn) on tiny machines: closed forms, the table's shape, and the
TDN baseline at both ends (the fastest oblivious routing; the ideal adaptive lower bound, recomputed here)."""

from __future__ import annotations

import numpy as np
import pytest

from evaluator import errors
from evaluator.studies import RdnMachine, allocation_mode_study, speedup_table
from evaluator.traffic import neighbouring
from tests.helpers import TOL, once

M = RdnMachine(p=2, a=4, h=2, g=2, bandwidth=1.0e9)      # two groups: the whole machine is the job


@pytest.fixture(scope="module")
@once
def study():
    return allocation_mode_study(M, groups=(2,), patterns=("stencil",), background=0.26,
                                 bounds=("adaptive", "optimal"), n_seeds=2)


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
    # the TDN can do no better than the injection bound; Valiant needs a third group (NaN), so the fastest
    # oblivious routing is minimal or valiant_router
    assert (study.tdn_minimal_time.sel(pattern="stencil") >= 6 * mu / M.bandwidth * (1 - TOL["rel"])).all()
    assert np.isnan(study.tdn_valiant_time).all()
    np.testing.assert_array_equal(study.tdn_oblivious_time, np.fmin(study.tdn_minimal_time,
                                                                    study.tdn_valiant_router_time))
    assert list(study.groups.values) == [2]


def test_two_groups_have_no_adaptive_bound_and_say_so(study):
    """The ideal adaptive bound needs 3 groups: NaN, the reason in bound_refused and 'n/a' in the printed table;
    the all-paths optimum is computed and no oblivious routing beats it."""
    from evaluator.studies.rdn import format_study
    assert np.isnan(study.tdn_adaptive_time).all() and np.isnan(study.gain_adaptive).all()
    assert "at least 3 groups" in str(study.bound_refused.sel(pattern="stencil", groups=2).values)
    assert np.isfinite(study.gain_optimal).all()
    assert (study.tdn_optimal_time <= study.tdn_oblivious_time * (1 + TOL["rel"])).all()
    text = format_study(study)
    assert "n/a" in text and "at least 3 groups" in text
    for v in ("gain_adaptive", "gain_oblivious", "gain_optimal", "tdn_adaptive_time_bg", "tdn_bg_slowdown_minimal"):
        assert study[v].attrs["units"] in ("s", "1") and study[v].attrs["long_name"], v


def test_speedup_table_dims_and_definition(study):
    tab = speedup_table(study=study, baseline="oblivious")
    assert tab.speedup.dims == ("mode", "groups") and tab.attrs["baseline"] == "oblivious"
    assert list(tab.mode.values) == ["minimal_balance", "custom_balance"]
    # the default baseline is the conservative one, the ideal adaptive bound: none on two groups (NaN)
    conservative = speedup_table(study=study)
    assert conservative.attrs["baseline"] == "adaptive" and np.isnan(conservative.speedup).all()
    best = np.fmin(study.tdn_minimal_time_bg, study.tdn_valiant_router_time_bg).sel(pattern="stencil")
    ratio = best / study.rdn_time_bg.sel(pattern="stencil")       # the ratio T_TDN / T_RDN (1: no change), per seed
    assert ratio.sizes["seed"] == 2
    np.testing.assert_allclose(tab.speedup.sel(mode="custom_balance"), ratio.mean("seed"), rtol=TOL["rel"])
    np.testing.assert_allclose(tab.speedup_min.sel(mode="custom_balance"), ratio.min("seed"), rtol=TOL["rel"])
    np.testing.assert_allclose(tab.speedup_max.sel(mode="custom_balance"), ratio.max("seed"), rtol=TOL["rel"])
    np.testing.assert_allclose(tab.speedup_std.sel(mode="custom_balance"), ratio.std("seed", ddof=1),
                               rtol=TOL["rel"])
    np.testing.assert_allclose(tab.time_saved.sel(mode="minimal_balance"), 1 - 1 / ratio.mean("seed"),
                               rtol=TOL["rel"])
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

    path = write_netcdf(speedup_table(study=study, baseline="oblivious"), tmp_path / "speedup.nc")
    table = load_speedups(str(path))
    t_rdn = float(study.rdn_minimal_time_bg.sel(pattern="stencil", groups=2))
    t_tdn = np.fmin(study.tdn_minimal_time_bg.sel(pattern="stencil", groups=2),   # Valiant: NaN on 2 groups
                    study.tdn_valiant_router_time_bg.sel(pattern="stencil", groups=2))
    ratio = float((t_tdn / t_rdn).mean("seed"))               # the table: the mean ratio over the seeds
    npg = M.nodes_per_group                                  # 8: jobs of 16 nodes span both groups
    tr = Trace(job_id=np.array([1, 2, 3]), submit=np.zeros(3), run_time=np.full(3, 100.0),
               requested_time=np.full(3, 200.0), nodes=np.array([2 * npg, 2 * npg, 3]),
               mode=np.array(["minimal_balance", "custom_balance", "minimal_balance"], dtype=object),
               requirements=((), (npg, npg), ()), mpi_fraction=np.array([0.4, 0.25, 0.5]))
    for rule, saved in (("time_ratio", 1 - 1 / ratio), ("excess", min(ratio - 1, 1.0))):
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
    with pytest.raises(errors.ConfigError, match="--baseline"):       # the table's baseline must be computed
        main(["rdn", "--machine", "2,4,2,4", "--bounds", "none", "--speedup-out", "x.nc"])
    with pytest.raises(errors.ConfigError, match="bounds"):
        allocation_mode_study(M, bounds=("ugal",))
    with pytest.raises(errors.ConfigError, match="--seeds"):
        main(["rdn", "--machine", "2,4,2,4", "--seeds", "0"])
    with pytest.raises(errors.ConfigError, match="n_seeds"):
        allocation_mode_study(M, n_seeds=0)


# --------------------------------------------------------------------------- the baseline: both ends (issue 23)
M4 = RdnMachine(p=2, a=4, h=2, g=4, bandwidth=1.0e9)     # four groups: the adaptive bound exists


@pytest.fixture(scope="module")
@once
def study4():
    return allocation_mode_study(M4, groups=(2,), patterns=("stencil",), background=0.26,
                                 bounds=("adaptive", "optimal"), n_seeds=2)


def _tdn_mapping(ds, pattern, q, s):
    """The TDN's random mapping of the study's point and draw ``s``, rebuilt from its documented seed."""
    from evaluator.placement import Placement
    from evaluator.studies._rdn_points import PATTERNS, _job
    tr, _, nodes = _job(M4, pattern, q)
    rng = np.random.default_rng([ds.attrs["seed"], list(PATTERNS).index(pattern), q, s])
    n = M4.g * M4.nodes_per_group
    chosen = np.sort(rng.choice(n, size=nodes.size, replace=False))
    return tr, Placement(chosen[rng.permutation(nodes.size)].astype(np.int64), n, "random"), chosen


def test_gain_against_the_ideal_adaptive_bound(study4):
    """The headline gain is RDN-GRAP's time over the ideal adaptive LOWER bound of the TDN, computed here with
    evaluator.lp.bounds.optimal on the same random mapping; the oblivious gain is the upper end."""
    import dataclasses

    from evaluator.jobs import Background, background_rates
    from evaluator.lp.bounds import optimal
    from evaluator.topology import dragonfly
    tdn = dragonfly(2, 4, 2, 4, bandwidth_p=1e9, bandwidth_l=1e9, bandwidth_r=1e9)
    assert list(study4.groups.values) == [2, 4] and (study4.bound_refused.values == "").all()
    for q, s in ((2, 0), (2, 1), (4, 0), (4, 1)):
        pt = dict(pattern="stencil", groups=q, seed=s)
        tr, pl, chosen = _tdn_mapping(study4, "stencil", q, s)
        lo = optimal(tdn, tr, pl, "dragonfly_adaptive").completion_time
        others = np.setdiff1d(np.arange(tdn.n_nodes), chosen)
        bg = background_rates(tdn, Background(0.26, "uniform"), others, "minimal")
        left = dataclasses.replace(tdn, capacity=np.maximum(np.asarray(tdn.capacity) - bg, 0.0))
        lo_bg = optimal(left, tr, pl, "dragonfly_adaptive").completion_time
        rdn_bg = float(study4.rdn_time_bg.sel(pattern="stencil", groups=q))
        rdn0 = float(study4.rdn_time.sel(pattern="stencil", groups=q))
        assert float(study4.tdn_adaptive_time.sel(**pt)) == pytest.approx(lo, rel=TOL["rel"])
        assert float(study4.gain_adaptive.sel(**pt)) == pytest.approx(lo_bg / rdn_bg, rel=TOL["rel"])
        assert float(study4.gain_adaptive_no_bg.sel(**pt)) == pytest.approx(lo / rdn0, rel=TOL["rel"])
        obl = min(float(study4[f"tdn_{rt}_time_bg"].sel(**pt)) for rt in ("minimal", "valiant", "valiant_router"))
        assert float(study4.gain_oblivious.sel(**pt)) == pytest.approx(obl / rdn_bg, rel=TOL["rel"])
        # both ends: the bound never exceeds a routing it bounds; the optimum never exceeds the adaptive bound
        assert float(study4.gain_adaptive.sel(**pt)) <= float(study4.gain_oblivious.sel(**pt)) * (1 + TOL["rel"])
        for rt in ("minimal", "valiant"):
            assert lo <= float(study4[f"tdn_{rt}_time"].sel(**pt)) * (1 + TOL["rel"])
        assert float(study4.tdn_optimal_time.sel(**pt)) <= lo * (1 + TOL["rel"])
    # the whole machine: the job leaves no node for background, so with and without are the same
    np.testing.assert_array_equal(study4.gain_adaptive.sel(pattern="stencil", groups=4),
                                  study4.gain_adaptive_no_bg.sel(pattern="stencil", groups=4))


def test_background_slowdown_per_routing(study4):
    for rt in ("minimal", "valiant", "valiant_router", "adaptive", "optimal"):
        v = study4[f"tdn_bg_slowdown_{rt}"]
        np.testing.assert_allclose(v, study4[f"tdn_{rt}_time_bg"] / study4[f"tdn_{rt}_time"] - 1, rtol=TOL["rel"])
        assert (v >= -TOL["rel"]).all(), rt                  # background only takes capacity away


def test_printed_table_names_both_ends(study4):
    from evaluator.studies.rdn import format_study
    text = format_study(study4)
    for needle in ("rdn_time_bg [us]", "tdn_adaptive_time_bg [us]", "gain vs adaptive", "gain vs oblivious",
                   "gain vs optimal", "valiant_router", "TDN slowdown from the background"):
        assert needle in text, needle
    pt = dict(pattern="stencil", groups=4)
    g, lo, hi = (float(study4[f"gain_adaptive_{s}"].sel(**pt)) for s in ("mean", "min", "max"))
    assert f"{g:.2f}x [{lo:.2f}x, {hi:.2f}x]" in text          # the mean over the seeds, then [min, max]
    assert "2 seeds" in text and "mean [min, max]" in text



def test_stencil_plane_tiles_routers():
    from evaluator.studies._rdn_points import _tiled_order
    o = _tiled_order(16, 18, 12, 24)                   # the paper's group: 24 routers of 12 nodes, tiles 4 x 3
    assert sorted(o.tolist()) == list(range(288))
    i, j = np.divmod(np.arange(288), 18)
    for r in range(24):
        ti, tj = i[o // 12 == r], j[o // 12 == r]
        assert (ti.max() - ti.min() + 1, tj.max() - tj.min() + 1) == (4, 3)
    assert (_tiled_order(5, 7, 3, 35 // 3) == np.arange(35)).all()   # no tiling: row-major


# ----------------------------------------------------------------- seeds: mean and spread, independent draws (issue 34)
M8 = RdnMachine(p=2, a=4, h=2, g=8, bandwidth=1.0e9)


def _per_seed(ds, pattern, q):
    """Every variable of the point that depends on the TDN's random mapping, per seed."""
    return {v: ds[v].sel(pattern=pattern, groups=q).values for v in ds.data_vars if "seed" in ds[v].dims}


def test_a_points_draws_do_not_depend_on_the_other_points_asked_for():
    """Asking for 4 groups alone gives exactly the numbers of 4 (and 8) groups that asking for 2, 4 and 8 gives,
    per seed; so do fewer seeds (their draws) and another pattern list. Before, a point's seed was its place in
    the sorted sizes: --groups changed the mapping of every other size."""
    kw = dict(background=0.26, bounds=())
    alone = allocation_mode_study(M8, groups=(4,), patterns=("stencil",), n_seeds=3, **kw)
    every = allocation_mode_study(M8, groups=(2, 4, 8), patterns=("all_to_all", "stencil"), n_seeds=3, **kw)
    fewer = allocation_mode_study(M8, groups=(4,), patterns=("stencil",), n_seeds=2, **kw)
    assert list(alone.groups.values) == [4, 8] and list(every.groups.values) == [2, 4, 8]
    for q in (4, 8):
        a, b, c = (_per_seed(ds, "stencil", q) for ds in (alone, every, fewer))
        assert a.keys() == b.keys() and "gain_oblivious" in a and "tdn_minimal_time_bg" in a
        for v in a:
            np.testing.assert_array_equal(a[v], b[v], err_msg=f"{v} at {q} groups")
            np.testing.assert_array_equal(a[v][:2], c[v], err_msg=f"{v} at {q} groups, 2 seeds")
    # the seeds are different draws (else the test above proves nothing)
    assert np.unique(alone.tdn_minimal_time_bg.sel(pattern="stencil", groups=4).values).size == 3


def test_summaries_over_the_seeds(study4):
    assert study4.sizes["seed"] == 2 and study4.attrs["n_seeds"] == 2
    for v in ("gain_adaptive", "gain_oblivious_no_bg", "tdn_oblivious_time_bg", "tdn_adaptive_time",
              "tdn_bg_slowdown_minimal", "hops_reduction"):
        a = study4[v]
        assert a.dims == ("pattern", "groups", "seed"), v
        np.testing.assert_allclose(study4[f"{v}_mean"], a.mean("seed"), rtol=TOL["rel"])
        np.testing.assert_allclose(study4[f"{v}_std"], a.std("seed", ddof=1), rtol=TOL["rel"], atol=1e-300)
        np.testing.assert_array_equal(study4[f"{v}_min"], a.min("seed"))
        np.testing.assert_array_equal(study4[f"{v}_max"], a.max("seed"))
        mean = study4[f"{v}_mean"]
        assert mean.dims == ("pattern", "groups") and mean.attrs["units"] in ("s", "1")
    assert study4.rdn_time_bg.dims == ("pattern", "groups")   # GRAP's allocation is not random
    one = allocation_mode_study(M4, groups=(2,), patterns=("stencil",), bounds=(), n_seeds=1)
    assert np.isnan(one.gain_oblivious_std).all() and (one.gain_oblivious_mean == one.gain_oblivious_min).all()


def test_adaptive_none_skips_ugal_and_changes_nothing_else(study4):
    """``adaptive=()`` (``--adaptive none``) leaves UGAL-G's fixed points out: its columns NaN, every other variable
    as in the full study (the same draws); a speedup table against UGAL-G from it is refused, not NaN."""
    lean = allocation_mode_study(M4, groups=(2,), patterns=("stencil",), background=0.26, n_seeds=2,
                                 bounds=("adaptive",), adaptive=())
    full = study4
    assert lean.attrs["tdn_adaptive"] == "" and full.attrs["tdn_adaptive"] == "ugal"
    assert np.isfinite(full.tdn_ugal_time_bg).all() and np.isnan(lean.tdn_ugal_time_bg).all()
    for name in ("tdn_minimal_time_bg", "tdn_valiant_time_bg", "tdn_adaptive_time_bg", "rdn_time_bg",
                 "gain_oblivious", "gain_adaptive"):
        np.testing.assert_array_equal(lean[name].values, full[name].isel(seed=slice(0, 2)).values
                                      if "seed" in full[name].dims else full[name].values)
    with pytest.raises(errors.ConfigError, match="adaptive="):
        speedup_table(study=lean, baseline="ugal")
    with pytest.raises(errors.ConfigError, match="adaptive"):
        allocation_mode_study(M4, adaptive=("ugal_l",))
    from evaluator.studies.rdn import format_study
    assert "tdn_ugal_time_bg" in format_study(full) and "tdn_ugal_time_bg" not in format_study(lean)
    assert "gain vs ugal" not in format_study(lean)
    assert "two TDN baselines side by side (UGAL-G not computed" in format_study(lean)
    assert "three TDN baselines side by side" in format_study(full)


def test_times_read_off_the_loaded_links_equal_the_whole_arrays():
    """``_times`` (the loaded links found once) gives the times of the whole-array formula bit for bit: the largest
    ``load / (cap - bg)`` over loaded links, inf where the background leaves a loaded link nothing, 0 without load,
    and the router links alone for the third."""
    import math

    from evaluator.studies._rdn_points import _times

    def direct(load, cap, bg):
        used = load > 0
        if not used.any():
            return 0.0
        left = cap - bg
        return math.inf if (left[used] <= 0).any() else float((load[used] / left[used]).max())

    rng = np.random.default_rng(3)
    for case in range(40):
        n, nr = 200, 150
        load = np.where(rng.random(n) < 0.2, rng.random(n) * 1e6, 0.0)
        if case == 0:
            load[:] = 0.0
        cap = rng.choice([2e9, 12e9], n)
        bg = rng.random(n) * 1e9
        if case % 5 == 1:  # the background takes a loaded link's whole capacity
            i = rng.choice(np.flatnonzero(load > 0))
            bg[i] = cap[i]
        want = (direct(load, cap, np.zeros_like(cap)), direct(load, cap, bg), direct(load[:nr], cap[:nr], bg[:nr]))
        assert _times(load, cap, bg, nr) == want
