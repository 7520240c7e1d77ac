"""What a network costs (evaluator.cost, docs/cost.md; issue 35 item 4).

Counts are checked against independent closed forms and against counting the topology's own link arrays
(``link_src``/``link_dst``/``link_class``); the price table is checked part by part; a budget makes sweep points
infeasible with a readable reason; a per-cost ranking ranks in the right direction; datasets carry units.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import xarray as xr

from evaluator import cli, config
from evaluator.cost import (COUNTS, KINDS, PART_NAMES, PRICED, CostConfig, link_product, link_products, network_cost,
                            parts_of, price, prices_from)
from evaluator.cost.dataset import add_cost
from evaluator.errors import ConfigError
from evaluator.query import best
from evaluator.sweep.reasons import infeasible_reasons, summarize_reasons
from evaluator.topology import bgq_partition, dragonfly, fat_tree, gemini, rdn, torus

NO_RAY = ["ray.enabled=false", "--no-progress"]


# ------------------------------------------------------------------------------------------ link-array counting
def _count(t, name: str) -> int:
    """Directed links of class ``name``."""
    return int((np.asarray(t.link_class) == t.class_id(name)).sum())


def _ports_from_links(t) -> int:
    """Switch ports with a cable: one per directed router link (a cable is two of them, one port at each end)
    plus one per node."""
    return int(t.n_router_links) + int(t.n_nodes)


def _max_degree(t) -> int:
    """The most ports any router uses, from the link arrays: its outgoing router links plus its nodes."""
    n = t.n_router_links
    out = np.bincount(np.asarray(t.link_src[:n]), minlength=t.n_routers)
    return int((out + np.bincount(np.asarray(t.node_router), minlength=t.n_routers)).max())


# ------------------------------------------------------------------------------------------ Dragonfly
@pytest.mark.parametrize("p,a,h,g", [(2, 4, 2, 9), (2, 4, 2, 5), (2, 4, 2, 3), (1, 3, 1, 4), (4, 8, 4, 33),
                                     (3, 5, 2, 7)])
def test_dragonfly_counts_match_closed_forms_and_link_arrays(p, a, h, g):
    t = dragonfly(p, a, h, g)
    c = parts_of(t)
    m = (a * h) // (g - 1)
    # closed forms (issue 35: radix p+a-1+h, a(a-1)/2 local cables per group, g(g-1)m/2 global = g a h / 2 at max g)
    assert c.n_switches == g * a and c.switch_radix == p + a - 1 + h and c.n_switch_ports == g * a * (p + a - 1 + h)
    assert c.n_nics == g * a * p
    assert c.n_electrical_cables_short == g * a * p + g * a * (a - 1) // 2
    assert c.n_optical_cables_long == g * (g - 1) * m // 2 and c.n_transceivers == g * (g - 1) * m
    if g == a * h + 1:
        assert c.n_optical_cables_long == g * a * h // 2
    assert c.n_electrical_cables_long == c.n_optical_cables_short == c.n_optical_switches == 0
    # the topology's own links: a cable is two directed links
    assert c.n_switches == t.n_routers and c.n_nics == t.n_nodes == _count(t, "injection")
    assert c.n_electrical_cables_short == _count(t, "injection") + _count(t, "local") // 2
    assert c.n_optical_cables_long == _count(t, "global") // 2
    assert c.n_ports_used == _ports_from_links(t) <= c.n_switch_ports
    assert _max_degree(t) <= c.switch_radix


@pytest.mark.parametrize("k,configuration,jobs", [(1, "standard", ()), (2, "standard", ()),
                                                  (2, "jobs", ((0, 1, 2), (3, 4, 5, 6, 7)))])
def test_rdn_cables_every_global_port_to_an_optical_switch_whatever_the_configuration(k, configuration, jobs):
    p, a, h, g = 2, 4, 2, 8
    t = rdn(p, a, h, g, ports_per_switch=k, configuration=configuration, jobs=[list(j) for j in jobs])
    c = parts_of(t)
    ports = g * a * h
    assert c.n_switches == t.n_routers == g * a and c.switch_radix == p + a - 1 + h
    assert c.n_nics == t.n_nodes == _count(t, "injection")
    assert c.n_electrical_cables_short == _count(t, "injection") + _count(t, "local") // 2
    # every port of the port table is cabled (one fibre and one transceiver each), configured or not
    assert c.n_optical_cables_long == c.n_transceivers == int(np.asarray(t.port_peer_group).size) == ports
    assert _count(t, "global") <= ports  # the configured circuits: a subset of the cabled ports
    assert c.n_optical_switches == t.n_switches == a * h // k and c.n_optical_switch_ports == ports
    assert c.n_ports_used == g * a * p + _count(t, "local") + ports
    # the same machine in another configuration costs the same: it is the same hardware
    assert network_cost(t).cost == network_cost(rdn(p, a, h, g, ports_per_switch=k)).cost


# ------------------------------------------------------------------------------------------ torus
def _wrap_links(t) -> int:
    """Directed links whose ends differ by n - 1 along a dimension of size n >= 3 (the wrap-arounds)."""
    n = t.n_router_links
    c = np.asarray(t.router_coords)
    d = np.abs(c[np.asarray(t.link_src[:n])] - c[np.asarray(t.link_dst[:n])])
    dims = np.asarray(t.dims)
    return int(((d == dims - 1) & (dims >= 3)).any(axis=1).sum())


@pytest.mark.parametrize("topo", [torus([4, 4, 4]), torus([2, 3]), torus([4, 3], wrap=False),
                                  torus([5, 1, 2], wrap=[True, True, False]), torus([3, 4], nodes_per_router=2),
                                  bgq_partition([1, 1, 1, 1]), gemini([4, 2, 4])],
                         ids=lambda t: t.name)
def test_torus_counts_match_closed_forms_and_link_arrays(topo):
    c = parts_of(topo)
    R, dims, wrap = topo.n_routers, list(topo.dims), list(topo.wrap)
    npr = topo.nodes_per_router
    short = sum(R // n * (n - 1) for n in dims if n >= 2)
    long = sum(R // n for n, w in zip(dims, wrap) if w and n >= 3)
    assert (c.n_electrical_cables_short, c.n_electrical_cables_long) == (short, long)
    assert c.n_switches == R and c.switch_radix == 2 * len(dims) + npr and c.n_nics == topo.n_nodes == R * npr
    # link arrays: every cable is two directed links; the wrap-arounds are those spanning a ring
    assert c.n_electrical_cables_short + c.n_electrical_cables_long == topo.n_router_links // 2
    assert c.n_electrical_cables_long == _wrap_links(topo) // 2
    assert c.n_ports_used == _ports_from_links(topo) and _max_degree(topo) <= c.switch_radix
    assert c.n_optical_cables_short == c.n_optical_cables_long == c.n_transceivers == 0


def test_a_4x4x4_torus_by_hand():
    c = parts_of(torus([4, 4, 4]))
    assert (c.n_switches, c.n_electrical_cables_short, c.n_electrical_cables_long) == (64, 144, 48)


# ------------------------------------------------------------------------------------------ fat tree
@pytest.mark.parametrize("k,n", [(2, 2), (4, 3), (8, 3), (3, 4)])
def test_k_ary_n_tree_counts_match_closed_forms_and_link_arrays(k, n):
    t = fat_tree(k=k, levels=n)
    c = parts_of(t)
    # Petrini and Vanneschi: k^n hosts, n k^(n-1) switches of 2k ports, k^n links per tier
    assert c.n_nics == c.n_electrical_cables_short == k ** n == t.n_nodes
    assert c.n_switches == n * k ** (n - 1) == t.n_routers and c.switch_radix == 2 * k
    assert c.n_optical_cables_short == k ** n and c.n_optical_cables_long == (n - 2) * k ** n
    assert c.n_transceivers == 2 * (n - 1) * k ** n
    # the top level uses k of its 2k ports
    assert c.n_switch_ports - c.n_ports_used == k ** (n - 1) * k
    # link arrays
    tiers = [_count(t, f"level{i}-up") for i in range(1, n)]
    assert c.n_optical_cables_short == tiers[0] and c.n_optical_cables_long == sum(tiers[1:])
    assert all(_count(t, f"level{i}-up") == _count(t, f"level{i}-down") for i in range(1, n))
    assert c.n_ports_used == _ports_from_links(t) and _max_degree(t) <= c.switch_radix


def test_a_tapered_xgft_with_parallel_links():
    t = fat_tree([4, 4, 2], [1, 2, 2], parallel_links=[2, 1])
    c = parts_of(t)
    assert c.n_optical_cables_short == _count(t, "level1-up") == 8 * 2 * 2
    assert c.n_optical_cables_long == _count(t, "level2-up")
    assert c.n_ports_used == _ports_from_links(t) and _max_degree(t) == c.switch_radix
    assert c.n_switch_ports == c.switch_radix * t.n_routers


def test_a_one_level_fat_tree_is_one_switch():
    c = parts_of(fat_tree([6], levels=1))
    assert (c.n_switches, c.switch_radix, c.n_nics, c.n_transceivers) == (1, 6, 6, 0)


def test_every_family_is_registered_and_others_are_refused():
    assert set(KINDS) == {"torus", "dragonfly", "rdn", "fat_tree"}

    class Other:
        kind = "hypercube"

    with pytest.raises(ConfigError, match="topology.kind.*cost model"):
        parts_of(Other())


# ------------------------------------------------------------------------------------------ prices
def test_the_default_table_prices_every_part_with_a_source():
    pr = prices_from()
    assert pr.currency == "relative" and pr.budget is None
    assert set(pr.price) == set(PART_NAMES) == set(PRICED.values())
    assert all(pr.source[p] for p in PART_NAMES), "every default figure says where it comes from"


def test_cost_and_power_are_the_sums_of_counts_times_prices():
    t = dragonfly(2, 4, 2, 3)
    nc = network_cost(t)
    pr = prices_from()
    counts = nc.parts.as_dict()
    assert nc.cost == pytest.approx(sum(counts[c] * pr.price[p] for c, p in PRICED.items()))
    assert nc.power == pytest.approx(sum(counts[c] * pr.power[p] for c, p in PRICED.items()))
    # by hand: 12 routers (5 + 7 ports x 1), 24 NICs x 2, 42 copper x 0.3, 12 fibres x 0.2, 24 transceivers x 1.5
    assert nc.cost == pytest.approx(12 * 5 + 84 * 1 + 24 * 2 + 42 * 0.3 + 12 * 0.2 + 24 * 1.5) == 243.0
    doubled = network_cost(t, {"parts": {p: {"price": 2 * pr.price[p]} for p in PART_NAMES}})
    assert doubled.cost == pytest.approx(2 * nc.cost) and doubled.power == nc.power


@pytest.mark.parametrize("cfg,field,value,allowed", [
    ({"parts": {"nic": {"price": -1}}}, "cost.parts.nic.price", "-1", "finite number >= 0"),
    ({"parts": {"switch_port": {"power": "lots"}}}, "cost.parts.switch_port.power", "'lots'", "finite number >= 0"),
    ({"parts": {"transceiver": {"price": float("nan")}}}, "cost.parts.transceiver.price", "nan", "finite"),
    ({"parts": {"switch": {"price": True}}}, "cost.parts.switch.price", "True", "finite number >= 0"),
    ({"parts": {"nics": {"price": 1}}}, "cost.parts.nics", "{'price': 1}", "a part of the price table"),
    ({"parts": {"nic": {"cost": 1}}}, "cost.parts.nic.cost", "1", "a key of a part"),
    ({"budget": -5}, "cost.budget", "-5", "finite number >= 0"),
    ({"currency": ""}, "cost.currency", "''", "non-empty string"),
    ({"prices": {}}, "cost.prices", "{}", "a key of cost"),
])
def test_a_bad_price_table_is_refused_naming_field_value_and_what_is_allowed(cfg, field, value, allowed):
    with pytest.raises(ConfigError) as err:
        prices_from(cfg)
    assert err.value.field == field
    text = str(err.value)
    assert text.startswith(f"{field} = {value} is invalid") and allowed in text, text


def test_a_bad_price_on_the_command_line_stops_a_sweep_before_it_runs(tmp_path, monkeypatch):
    from evaluator.sweep import plan_sweep

    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match=r"cost.parts.nic.price = -2 is invalid: allowed is a finite number >= 0"):
        plan_sweep(config.compose_sweep(["topology=torus", "topology.dims=[4,4]", "routing=dor", "traffic=all_to_all",
                                         "placement=linear", "traffic.n_tasks=4,8", "cost.parts.nic.price=-2"]))


def test_the_cost_group_composes_and_overrides():
    obj = config.to_object(config.compose(["cost.parts.nic.price=3", "cost.budget=1000", "cost.currency=EUR"]))
    assert isinstance(obj.cost, CostConfig)
    pr = prices_from(obj.cost)
    assert (pr.price["nic"], pr.power["nic"], pr.budget, pr.currency) == (3.0, 20.0, 1000.0, "EUR")


# ------------------------------------------------------------------------------------------ products
def test_link_products_name_the_product_or_warn():
    assert "100 Gb/s" in link_product(12.5e9) and "EDR" in link_product(12.5e9)
    assert "200 Gb/s" in link_product(25e9) and "400 Gb/s" in link_product(50e9)
    assert "Blue Gene/Q" in link_product(2e9) and "Gemini X/Z" in link_product(9.375e9)
    with pytest.warns(UserWarning, match=r"10 GB/s|1e\+10 bytes/s .*80 Gb/s.*matches no product"):
        assert link_product(10e9, warn=True) is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert link_product(10e9) is None  # no warning unless asked
    names = link_products(fat_tree(k=4, levels=2))
    assert names["level1-up"].startswith("100 Gb/s") and names["injection"].startswith("100 Gb/s")
    assert link_products(dragonfly(2, 4, 2))["global"] == "none (10 GB/s)"


# ------------------------------------------------------------------------------------------ sweeps and query
@pytest.fixture(scope="module")
def budget_sweep(tmp_path_factory):
    """DF(2,4,2,g) for g = 3, 5, 9 (cost 243, 405, 729 relative) with minimal and Valiant routing, budget 500."""
    import os

    d = tmp_path_factory.mktemp("cost_sweep")
    old = os.getcwd()
    os.chdir(d)
    try:
        argv = ["sweep", "topology=dragonfly", "topology.p=2", "topology.a=4", "topology.h=2", "topology.g=3,5,9",
                "routing=minimal,valiant", "traffic=all_to_all", "placement=linear", "cost.budget=500",
                "sweep.name=cost_budget", *NO_RAY]
        assert cli.main(argv) == 0
        path = sorted((d / "results" / "cost_budget").glob("*.nc"))[0]
        with xr.open_dataset(path) as ds:
            return ds.load()
    finally:
        os.chdir(old)


def test_a_budget_marks_points_over_it_infeasible_with_a_readable_reason(budget_sweep):
    ds = budget_sweep
    cost = ds["cost"].sel(routing="minimal").values
    assert cost.tolist() == [243.0, 405.0, 729.0]
    feasible = ds["feasible"].values
    assert feasible[:2].all() and not feasible[2].any()
    reasons = infeasible_reasons(ds)
    assert reasons == ["cost.budget: a network that costs at most 500 relative; got 729 relative"] * 2
    assert summarize_reasons(reasons) == "2 x cost.budget: a network that costs at most 500 relative; got 729 relative"
    # an infeasible point still says what its network costs; its metrics are NaN
    assert np.isfinite(ds["cost"].values).all() and np.isnan(ds["completion_time"].values[2]).all()


def test_sweep_datasets_carry_cost_power_counts_with_units(budget_sweep):
    ds = budget_sweep
    assert ds.attrs["cost_currency"] == "relative" and ds.attrs["cost_budget"] == 500.0
    assert ds["cost"].attrs["units"] == "relative" and ds["power"].attrs["units"] == "W"
    assert ds["throughput_per_cost"].attrs["units"] == "bytes/s/relative"
    for name in COUNTS:
        assert ds[name].attrs["units"] == "1" and ds[name].dtype.kind == "i", name
        assert ds[name].dims == ds["completion_time"].dims
    for name in ds.data_vars:
        assert "units" in ds[name].attrs, name
    t = dragonfly(2, 4, 2, 5)
    assert int(ds["n_optical_cables_long"].sel({"topology.g": "5", "routing": "minimal"})) == \
        parts_of(t).n_optical_cables_long == _count(t, "global") // 2
    ratio = ds["throughput"] / ds["cost"]
    np.testing.assert_allclose(ds["throughput_per_cost"].values, ratio.values, rtol=1e-12)


def test_query_ranks_per_cost_larger_first_and_cost_smaller_first(budget_sweep):
    table = best(budget_sweep, "throughput_per_cost")
    v = table["throughput_per_cost"].to_numpy()
    assert (np.diff(v) <= 0).all() and len(v) == 4  # the two infeasible points are left out
    assert "cost" in table.columns and "power" in table.columns
    assert table.attrs["units"]["cost"] == "relative"
    by_cost = best(budget_sweep, "cost")
    assert (np.diff(by_cost["cost"].to_numpy()) >= 0).all() and by_cost["cost"].iloc[0] == 243.0
    by_power = best(budget_sweep, "power")
    assert (np.diff(by_power["power"].to_numpy()) >= 0).all()
    # a plain ranking by time does not show the cost columns
    assert "cost" not in best(budget_sweep, "completion_time").columns


def test_per_cost_prefers_the_cheaper_network_of_equal_throughput():
    ds = xr.Dataset({"throughput": (("net",), np.array([1e9, 1e9, 3e9]), {"units": "bytes/s"}),
                     "completion_time": (("net",), np.array([1.0, 1.0, 0.5]), {"units": "s"})},
                    coords={"net": ["cheap", "dear", "fast"]})
    add_cost(ds, ("net",), (3,), {"cost": np.array([10.0, 20.0, 60.0]), "power": np.array([1.0, 2.0, 3.0])})
    table = best(ds, "throughput_per_cost")
    assert list(table["net"]) == ["cheap", "dear", "fast"]
    assert table["throughput_per_cost"].tolist() == [1e8, 5e7, 5e7]
    assert list(table.index) == [1, 2, 2]  # a tie is a tie
    assert list(best(ds, "throughput")["net"])[0] == "fast"


def test_eval_refuses_a_network_over_budget_and_its_dataset_has_the_cost(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    base = ["eval", "topology.p=2", "topology.a=4", "topology.h=2", "topology.g=3", "traffic=all_to_all",
            "placement=linear"]
    assert cli.main(base + ["cost.budget=100", "save=false"]) != 0
    assert "cost.budget = 100.0 is invalid: allowed is a network that costs at most 100 relative; got 243 relative" \
        in capsys.readouterr().err
    assert cli.main(base + ["output_dir=out"]) == 0
    path = sorted((tmp_path / "out").glob("*.nc"))[0]
    with xr.open_dataset(path) as ds:
        assert float(ds["cost"]) == 243.0 and ds["cost"].attrs["units"] == "relative"
        assert int(ds["n_switches"]) == 12 and ds["power"].attrs["units"] == "W"
        assert '"global": "none (10 GB/s)"' in ds.attrs["link_products_json"]


def test_price_is_linear_in_the_table():
    c = parts_of(fat_tree(k=4, levels=3))
    pr = prices_from()
    a = price(c, pr).cost
    half = prices_from({"parts": {p: {"price": pr.price[p] / 2} for p in PART_NAMES}})
    assert math.isclose(price(c, half).cost, a / 2)
