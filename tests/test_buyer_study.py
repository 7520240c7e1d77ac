"""The buyer's study (evaluator/studies/buyer.py, docs/buyer.md; issue 35 item 5): equal cost really is equal,
a point is a direct evaluate, refusals are NaN with a reason, the CLI runs and refuses bad options."""

from __future__ import annotations

import numpy as np
import pytest

import evaluator as ev
from evaluator.cost import load_prices, network_cost, parts_of
from evaluator.errors import ConfigError
from evaluator.placement import linear
from evaluator.routing import ecmp
from evaluator.studies import STUDIES, run_study
from evaluator.studies.buyer import (NETWORKS, best_table, buyer_study, equal_networks, format_study,
                                     main)
from evaluator.traffic import random_permutation
from tests.helpers import once

TINY = 32


@pytest.fixture(scope="module")
@once
def tiny():
    return buyer_study([TINY], n_seeds=2, workloads=("permutation", "allreduce_8B"))


@pytest.mark.parametrize("n", [TINY, 512, 4096])
@pytest.mark.parametrize("measure", ["cost", "power"])
def test_equal_networks_within_tolerance(n, measure):
    nets = equal_networks(n, measure, tolerance=0.1)
    budget = nets["budget"]
    for fam in NETWORKS:
        topo, value, ok = nets[fam]
        assert topo.n_nodes >= n
        nc = network_cost(topo)
        assert value == pytest.approx(nc.cost if measure == "cost" else nc.power, rel=1e-12)
        assert ok == (abs(value / budget - 1) <= 0.1)
        if measure == "cost" or fam != "torus" or n != 4096:   # the torus's power at 4,096 is flagged (14.6 %)
            assert ok, (n, measure, fam, value, budget)


def test_recount_independent_of_network_cost():
    """The default table applied to the counts by hand gives network_cost's figure (so 'equal' is the model's)."""
    table = load_prices()["parts"]
    names = {"n_switches": "switch", "n_switch_ports": "switch_port", "n_nics": "nic",
             "n_electrical_cables_short": "electrical_cable_short", "n_electrical_cables_long": "electrical_cable_long",
             "n_optical_cables_short": "optical_cable_short", "n_optical_cables_long": "optical_cable_long",
             "n_transceivers": "transceiver", "n_optical_switches": "optical_switch",
             "n_optical_switch_ports": "optical_switch_port"}
    nets = equal_networks(512)
    for fam in NETWORKS:
        parts = parts_of(nets[fam][0]).as_dict()
        cost = sum(parts[k] * float(table[v]["price"]) for k, v in names.items())
        assert cost == pytest.approx(nets[fam][1], rel=1e-12)
        assert abs(cost / nets["budget"] - 1) <= 0.1


def test_equal_cost_512_networks():
    nets = equal_networks(512)
    assert nets["dragonfly"][0].name == "DF(4,8,4,16)"
    assert nets["fat_tree"][0].name == "XGFT(3;8,8,8;1,4,4)"
    assert nets["torus"][0].nodes_per_router == 2


def test_point_is_a_direct_evaluate(tiny):
    nets = equal_networks(TINY)
    for fam, routing, seed in (("dragonfly", "minimal", 1), ("fat_tree", "ecmp", 1), ("torus", "dor", 0)):
        topo = nets[fam][0]
        spec = ecmp(seed) if routing == "ecmp" else routing
        want = float(ev.evaluate(topo, random_permutation(TINY, 32e6, seed=seed), linear(topo, TINY), spec)
                     ["completion_time"])
        got = float(tiny["time"].sel(size=TINY, network=fam, routing=routing, workload="permutation", seed=seed))
        assert got == pytest.approx(want, rel=1e-12)
    assert float(tiny["cost"].sel(size=TINY, network="torus")) == pytest.approx(network_cost(nets["torus"][0]).cost)


def test_refusals_are_nan_with_reason(tiny):
    for fam, r in (("dragonfly", "ugal"), ("torus", "torus_adaptive"), ("fat_tree", "ft_adaptive")):
        sel = tiny.sel(size=TINY, network=fam, routing=r, workload="allreduce_8B")
        assert np.isnan(sel["time"].values).all()
        assert "linear" in str(sel["refused"].values)
    other = tiny.sel(size=TINY, network="torus", routing="minimal", workload="permutation")
    assert np.isnan(other["time"].values).all() and "not a routing" in str(other["refused"].values)
    ok = tiny.sel(size=TINY, network="dragonfly", routing="minimal", workload="allreduce_8B")
    assert np.isfinite(ok["time"].values).all() and str(ok["refused"].values) == ""


def test_best_table_ties(tiny):
    ds = tiny.copy(deep=True)
    sel = dict(size=TINY, network="dragonfly", workload="permutation")
    t = float(ds["time_mean"].sel(routing="minimal", **sel))
    ds["time_mean"].loc[dict(routing="valiant", **sel)] = t * (1 + 1e-12)
    ds["time_mean"].loc[dict(routing="ugal", **sel)] = t * 2
    row = next(r for r in best_table(ds) if r["network"] == "dragonfly" and r["workload"] == "permutation")
    assert row["best"] == ("minimal", "valiant")
    assert "minimal=valiant" in format_study(ds)


def test_cli_tiny(tmp_path, capsys):
    assert "buyer" in STUDIES
    assert run_study("buyer", ["--nodes", str(TINY), "--seeds", "2", "--workloads", "permutation",
                               "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert f"== {TINY} nodes" in out and "dragonfly" in out
    assert len(list(tmp_path.glob("buyer-cost-*.nc"))) == 1 and len(list(tmp_path.glob("buyer-cost-*.png"))) == 1


@pytest.mark.parametrize("argv, field", [
    (["--nodes", "8"], "--nodes"), (["--nodes", "5x"], "--nodes"), (["--seeds", "0"], "--seeds"),
    (["--equal", "money"], "--equal"), (["--tolerance", "2"], "--tolerance"), (["--link", "10e9"], "--link"),
    (["--workloads", "alltoall"], "--workloads"), (["--bogus"], "--bogus")])
def test_bad_options(argv, field, tmp_path):
    with pytest.raises(ConfigError, match=field):
        main([*argv, "--out", str(tmp_path / "o")])
    assert not (tmp_path / "o").exists()


def test_out_not_a_directory(tmp_path):
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(ConfigError, match="--out"):
        main(["--nodes", str(TINY), "--out", str(f)])


@pytest.mark.parametrize("fam, routing", [("dragonfly", "minimal"), ("fat_tree", "dmodk"), ("torus", "dor")])
def test_mix_is_the_jobs_side_by_side(fam, routing):
    """The mix's link loads are the sum of its jobs' loads, each job evaluated alone on its own nodes (an explicit
    node list), and its time is the busiest of those summed links over its capacity."""
    from evaluator.placement import explicit
    from evaluator.studies.buyer import MIX, build_workload, evaluate_point, mix_of_jobs

    n, seed = 64, 3
    topo = equal_networks(n)[fam][0]
    total, off = 0.0, 0
    for name, d in MIX:
        job = build_workload(name, n // d, seed)
        place = explicit(topo, np.arange(off, off + n // d))
        load = ev.evaluate(topo, job, place, routing)["link_load"]
        total = total + (load.sum("phase") if "phase" in load.dims else load).values  # a phased job: phases summed
        off += n // d
    mix = mix_of_jobs(n, seed)
    assert mix.n_tasks == n and mix.total_bytes == pytest.approx(
        sum(build_workload(w, n // d, seed).total_bytes for w, d in MIX), rel=1e-12)
    cap = np.asarray(topo.capacity)
    want = float(np.max(np.where(cap > 0, total / np.where(cap > 0, cap, 1.0), 0.0)))
    got = evaluate_point(topo, "mix", routing, n, seed)[0]
    assert got == pytest.approx(want, rel=1e-9)


def test_mix_needs_a_multiple_of_four(tmp_path):
    with pytest.raises(ConfigError, match="--nodes"):
        main(["--nodes", "18", "--workloads", "mix", "--out", str(tmp_path / "o")])
    assert not (tmp_path / "o").exists()


def test_equal_cost_and_power_in_one_run_evaluates_each_network_once(tmp_path, capsys, monkeypatch):
    """``--equal cost,power`` writes both datasets; a network both build is evaluated once (the memo), and every
    point equals the one a separate ``--equal power`` run gives."""
    import evaluator.studies.buyer as B

    calls = []
    real = B.evaluate_point
    monkeypatch.setattr(B, "evaluate_point", lambda *a: calls.append(a[1:]) or real(*a))
    assert main(["--nodes", str(TINY), "--seeds", "2", "--workloads", "permutation", "--equal", "cost,power",
                 "--out", str(tmp_path)]) == 0
    both = len(calls)
    cost = xr_open(next(tmp_path.glob("buyer-cost-*.nc")))
    power = xr_open(next(tmp_path.glob("buyer-power-*.nc")))
    calls.clear()
    alone = buyer_study([TINY], n_seeds=2, equal="power", workloads=("permutation",))
    np.testing.assert_array_equal(power["time"].values, alone["time"].values)
    same = [f for f in NETWORKS if str(cost["topology"].sel(size=TINY, network=f).values)
            == str(power["topology"].sel(size=TINY, network=f).values)]
    assert same                                   # some network is shared: it was evaluated once
    shared_points = sum(len(B.ROUTINGS[f]) * 2 for f in same)  # per routing: 2 seeds of the permutation
    assert both == 2 * len(calls) - shared_points


def xr_open(path):
    import xarray as xr

    with xr.open_dataset(path) as ds:
        return ds.load()
