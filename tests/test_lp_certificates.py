"""The stored-solution replay of tests/lp_certificates.py can only pass what it certifies: it reproduces the
solver's bounds on DF(2, 4, 2, 8) (the shrunken RDN study, 3 seeds, solved by HiGHS here), and fails when the stored
duals or flows no longer certify a tight interval, or the LPs are not the ones stored."""

from __future__ import annotations

import numpy as np
import pytest

from tests.lp_certificates import recorded, replayed


def _study(background=0.26):
    from evaluator.studies.rdn import RdnMachine, allocation_mode_study

    return allocation_mode_study(RdnMachine(2, 4, 2, 8), groups=(4, 8), patterns=("stencil",), background=background,
                                 bounds=("adaptive",), n_seeds=3, adaptive=())


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    where = tmp_path_factory.mktemp("certificates")
    with recorded("small", where) as rows:
        solved = _study()
    assert len(rows) >= 6
    return where, solved


def _tamper(where, name, key, change):
    data = dict(np.load(where / "small.npz"))
    for k in range(int(data["n"])):
        data[f"{key}_{k}"] = change(data[f"{key}_{k}"].copy())
    np.savez_compressed(where / f"{name}.npz", **data)


def _every_other(v):
    v[::2] = 0.0
    return v


def test_the_replay_gives_the_solvers_bounds(stored):
    where, solved = stored
    with replayed("small", where=where) as intervals:
        again = _study()
    assert len(intervals) == int(np.load(where / "small.npz")["n"])
    for v in ("tdn_adaptive_time", "tdn_adaptive_time_bg", "gain_adaptive"):
        np.testing.assert_allclose(again[v].values, solved[v].values, rtol=1e-9)
    assert all(up / lo - 1 <= 1e-6 for lo, up in intervals)


@pytest.mark.parametrize("key,change,why", [("dv", lambda v: 0 * v, "certify only"),   # no duals: no upper end
                                            ("dv", lambda v: v[::-1], "certify only"),   # duals on other links
                                            ("xv", _every_other, "certify only"),       # pairs lose their flow
                                            ("xv", lambda v: 3 * v, None)],  # flows scaled: the same routing
                         ids=["no-duals", "duals-reversed", "flows-dropped", "flows-scaled"])
def test_a_stored_solution_that_does_not_certify_fails(stored, key, change, why):
    where, _ = stored
    _tamper(where, "tampered", key, change)
    if why is None:
        with replayed("tampered", where=where):
            _study()
        return
    with pytest.raises(AssertionError, match=why):
        with replayed("tampered", where=where):
            _study()


def test_other_lps_than_the_stored_ones_fail(stored):
    where, _ = stored
    with pytest.raises(AssertionError, match="is not the one stored"):
        with replayed("small", where=where):
            _study(background=0.5)


@pytest.fixture(scope="module")
def gk_stored(tmp_path_factory):
    """Garg-Konemann's last rounds on three draws of docs/bounds.md's 512-node instance (the tightening's first
    round meets the optimum, 125 /s)."""
    from evaluator.lp import _flow
    from evaluator.topology import bgq_partition
    from tests.lp_certificates import gk_recorded
    from tests.test_claims_bounds_gk import _demand

    topo = bgq_partition([1, 1, 1, 1])
    demands = [_demand(topo, np.random.default_rng(s)) for s in range(3)]
    where = tmp_path_factory.mktemp("gk")
    with gk_recorded("gk", where):
        runs = [_flow.garg_konemann(topo, d) for d in demands]
    return where, topo, demands, runs


def test_a_gk_certificate_gives_the_methods_interval(gk_stored):
    from tests.lp_certificates import gk_certified

    where, topo, demands, runs = gk_stored
    for k, (d, run) in enumerate(zip(demands, runs)):
        assert run.rounds >= 1
        assert gk_certified("gk", k, topo, d, where) == pytest.approx((run.z, run.z_upper), rel=1e-12)


def test_a_gk_certificate_of_another_demand_or_altered_certifies_nothing(gk_stored):
    """Paths of another demand do not join this demand's pairs (lower end 0); lengths on other links give a
    looser upper end; the upper end stays an upper end whatever is stored (the optimum is 125 /s)."""
    from tests.lp_certificates import gk_certified

    where, topo, demands, _ = gk_stored
    z, z_upper = gk_certified("gk", 0, topo, demands[1], where)
    assert z == 0.0 and z_upper >= 125.0 * (1 - 1e-9)
    data = dict(np.load(where / "gk.npz"))
    data["li_0"] = (data["li_0"] + 1) % int(topo.n_router_links)   # the lengths on the next links
    data["links_0"] = np.roll(data["links_0"], 1)
    np.savez_compressed(where / "gk_altered.npz", **data)
    z, z_upper = gk_certified("gk_altered", 0, topo, demands[0], where)
    assert z == 0.0 and z_upper > 125.0 * (1 + 1e-6)
