"""Numbers docs/cost.md states, rerun (issue 35 item 4): the budget sweep of three Dragonflies and its query, and
the table of four 512-node networks. Each stated number must equal the tool's to its printed precision
(:func:`tests.claims.check_stated`)."""

from __future__ import annotations

import re

import numpy as np
import pytest
import xarray as xr

from evaluator import cli
from evaluator.cost import network_cost
from evaluator.query import best
from evaluator.topology import dragonfly, fat_tree, rdn, torus
from tests.claims import check_stated

DOC = "docs/cost.md"
SWEEP = ("evaluator sweep topology=dragonfly topology.p=2 topology.a=4 topology.h=2 topology.g=3,5,9 "
         "routing=minimal,valiant traffic=all_to_all placement=linear cost.budget=500 sweep.name=cost_dragonfly")
QUERY = "evaluator query cost_dragonfly --best throughput_per_cost"
TABLE = "for t in (torus([8, 8, 8]), dragonfly(4, 8, 4, 16), rdn(4, 8, 4, 16, ports_per_switch=2), " \
        "fat_tree(k=8, levels=3)):"


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    import os

    d = tmp_path_factory.mktemp("claims_cost")
    old = os.getcwd()
    os.chdir(d)
    try:
        assert cli.main(SWEEP.split()[1:] + ["ray.enabled=false", "--no-progress"]) == 0
        path = sorted((d / "results" / "cost_dragonfly").glob("*.nc"))[0]
        with xr.open_dataset(path) as ds:
            return ds.load()
    finally:
        os.chdir(old)


def test_the_budget_sweep_costs_and_counts(swept):
    cost = swept["cost"].sel(routing="minimal").values
    check_stated(DOC, r"costs (\d+), \d+ and \d+ relative \(12", cost[0], SWEEP)
    check_stated(DOC, r"costs \d+, (\d+) and \d+ relative \(12", cost[1], SWEEP)
    check_stated(DOC, r"costs \d+, \d+ and (\d+) relative \(12", cost[2], SWEEP)
    n = swept["n_switches"].sel(routing="minimal").values
    g = swept["n_optical_cables_long"].sel(routing="minimal").values
    radix = swept["switch_radix"].sel(routing="minimal").values
    for i, (pat_r, pat_g) in enumerate(((r"\((\d+), \d+ and \d+ routers", r"routers of \d+ ports, (\d+), \d+ and"),
                                        (r"\(\d+, (\d+) and \d+ routers", r"routers of \d+ ports, \d+, (\d+) and"),
                                        (r"\(\d+, \d+ and (\d+) routers", r"ports, \d+, \d+ and (\d+) global"))):
        check_stated(DOC, pat_r, n[i], SWEEP)
        check_stated(DOC, pat_g, g[i], SWEEP)
    assert (radix == 7).all()
    check_stated(DOC, r"routers of (\d+) ports", radix[0], SWEEP)
    check_stated(DOC, r"costs at most 500 relative; got (\d+) relative`", float(cost[2]), SWEEP)
    assert not swept["feasible"].values[2].any() and swept["feasible"].values[:2].all()


def test_the_query_table(swept):
    table = best(swept, "throughput_per_cost")
    rows = [("1=", 3, "minimal"), ("1=", 5, "minimal"), ("3", 3, "valiant"), ("4", 5, "valiant")]
    for i, (rank, gval, routing) in enumerate(rows):
        row = table.iloc[i]
        assert (str(row["topology.g"]), row["routing"]) == (str(gval), routing)
        lead = re.escape(f"{rank} {gval} {routing}") + " "
        check_stated(DOC, lead + r"([0-9.]+)", row["throughput_per_cost"] / 1e6, QUERY)  # MB/s per unit
        if np.isfinite(row["ahead_by"]):
            check_stated(DOC, lead + r"[0-9.]+ +([0-9.]+) ", row["ahead_by"], QUERY)
        check_stated(DOC, lead + r"[0-9.]+ +[0-9.na-]+ +([0-9.]+) ", row["completion_time"] * 1e3, QUERY)
        check_stated(DOC, lead + r"[0-9.]+ +[0-9.na-]+ +[0-9.]+ +([0-9.]+) ", row["throughput"] / 1e9, QUERY)
        check_stated(DOC, lead + r".*? \.\.\. +([0-9.]+) ", row["cost"], QUERY)
        check_stated(DOC, lead + r".*? \.\.\. +[0-9.]+ +(\d+) ", row["power"], QUERY)
    check_stated(DOC, r"tie per cost, ([0-9.]+)x ahead", table.iloc[0]["ahead_by"], QUERY)


NETWORKS = {"torus 8x8x8": torus([8, 8, 8]), "DF(4,8,4,16)": dragonfly(4, 8, 4, 16),
            "RDN(4,8,4,16; k=2)": rdn(4, 8, 4, 16, ports_per_switch=2), "8-ary 3-tree": fat_tree(k=8, levels=3)}


@pytest.mark.parametrize("name", list(NETWORKS))
def test_the_512_node_table(name):
    t = NETWORKS[name]
    nc = network_cost(t)
    c = nc.parts
    assert t.n_nodes == 512
    cells = [(0, r"(\d+) \(\d+\)", c.n_switches), (0, r"\d+ \((\d+)\)", c.switch_radix),
             (1, r"(\d+) \+ \d+", c.n_electrical_cables_short), (1, r"\d+ \+ (\d+)", c.n_electrical_cables_long),
             (2, r"(\d+) \+ \d+", c.n_optical_cables_short), (2, r"\d+ \+ (\d+)", c.n_optical_cables_long),
             (3, r"(\d+)", c.n_transceivers), (4, r"([0-9.]+)", nc.cost), (5, r"([0-9.]+)", nc.power)]
    for k, cell, value in cells:
        parts = [r"[^|]*"] * 6
        parts[k] = cell
        pattern = r"\| " + re.escape(name) + r" \| " + r" \| ".join(parts) + r" \|"
        check_stated(DOC, pattern, float(value), TABLE)
    if name.startswith("RDN"):
        check_stated(DOC, r"cables\) and (\d+) optical switches", c.n_optical_switches, TABLE)
        check_stated(DOC, r"global port \((\d+), against", c.n_transceivers, TABLE)
        check_stated(DOC, r"against the Dragonfly's (\d+) cables", network_cost(NETWORKS["DF(4,8,4,16)"])
                     .parts.n_optical_cables_long, TABLE)
