"""Audit of the cost model (evaluator.cost.network_cost) by a differential check.

Every count here is derived independently of ``evaluator/cost/``: the networks are rebuilt from their
definitions (XGFT labels, Dragonfly groups, torus rings) or read from the topology's own link arrays with a
*placement* (which rack, row or group each end sits in, docs/cost.md "Packaging assumptions") deciding a cable's
length class, not the link class names; the prices and powers are read from ``conf/cost/default.yaml`` with a
plain YAML reader. ``tests/test_cost.py`` already checks the closed forms of small cases (k-ary n-trees with
k in {2, 3, 4, 8}, DF(2,4,2,g), a tapered XGFT with parallel links, tori up to 3-D with one or two nodes per
router); this file covers what it leaves out: XGFTs built label by label (4 levels, a different taper and
different parallel links per tier, 1 and 2 levels), unbalanced Dragonflies and g = 2, 5-D tori with several
nodes per router and size-2 and size-1 dimensions, more nodes per router than torus ports, the catalogue
machines, units, budgets and the buyer study's equal-cost sizing.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import yaml

from evaluator.cost import check_budget, network_cost, parts_of, prices_from
from evaluator.errors import ConfigError
from evaluator.topology import dragonfly, fat_tree, machine_topology, torus

TABLE = yaml.safe_load((Path(__file__).resolve().parents[1] / "conf" / "cost" / "default.yaml").read_text())["parts"]
"""The default price table, read without evaluator.cost."""

ALL_COUNTS = ("n_switches", "n_switch_ports", "n_ports_used", "n_nics", "n_electrical_cables_short",
              "n_electrical_cables_long", "n_optical_cables_short", "n_optical_cables_long", "n_transceivers",
              "n_optical_switches", "n_optical_switch_ports", "switch_radix")


def _priced(counts: dict) -> tuple[float, float]:
    """Cost (relative) and power (W) of ``counts`` with the default table, by hand (docs/cost.md "inputs" table:
    which count each part prices)."""
    which = {"switch": "n_switches", "switch_port": "n_switch_ports", "nic": "n_nics",
             "electrical_cable_short": "n_electrical_cables_short",
             "electrical_cable_long": "n_electrical_cables_long", "optical_cable_short": "n_optical_cables_short",
             "optical_cable_long": "n_optical_cables_long", "transceiver": "n_transceivers",
             "optical_switch": "n_optical_switches", "optical_switch_port": "n_optical_switch_ports"}
    cost = sum(counts.get(c, 0) * float(TABLE[p]["price"]) for p, c in which.items())
    power = sum(counts.get(c, 0) * float(TABLE[p]["power"]) for p, c in which.items())
    return cost, power


def _compare(topo, want: dict) -> None:
    """Every count of ``network_cost(topo)`` equals the independent one; cost and power equal the hand-priced
    ones (relative units, W: no factor 1000 anywhere)."""
    full = {c: 0 for c in ALL_COUNTS} | want
    nc = network_cost(topo)
    got = nc.parts.as_dict()
    diff = {k: (full[k], got[k]) for k in ALL_COUNTS if full[k] != got[k]}
    assert not diff, f"{topo.name}: (independent, network_cost) differ: {diff}"
    cost, power = _priced(full)
    assert nc.cost == pytest.approx(cost, rel=1e-12) and nc.power == pytest.approx(power, rel=1e-12)
    assert nc.currency == "relative"


# ------------------------------------------------------------------------------------------ fat trees (XGFT)
def _xgft(m, w, pl):
    """An XGFT(h; m; w) with ``pl[t-1]`` parallel links on tier ``t``, built from its labels (Ohring et al.):
    a level-``i`` switch is ``(x_h..x_{i+1}, y_i..y_1)`` with ``x_j < m_j``, ``y_j < w_j``; its parents replace
    ``x_{i+1}`` by ``y_{i+1} < w_{i+1}``; host ``(x_h..x_1)`` hangs off leaf ``(x_h..x_2, 0)``. Packaging
    (docs/cost.md): hosts share a rack with their leaf (copper short), a pod (level-2 subtree, the switches
    whose labels share ``x_h..x_3``) is a row: a cable whose two ends are both in one pod is short optical, one
    that reaches a switch above the pods (level >= 3) is long optical. Returns the counts."""
    h = len(m)
    ports = Counter()
    switches = []
    for i in range(1, h + 1):
        for xs in itertools.product(*[range(m[j - 1]) for j in range(h, i, -1)]):     # x_h .. x_{i+1}
            for ys in itertools.product(*[range(w[j - 1]) for j in range(i, 0, -1)]):  # y_i .. y_1
                switches.append((i, xs, ys))
    hosts = math.prod(m)
    for xs in itertools.product(*[range(m[j - 1]) for j in range(h, 0, -1)]):
        ports[(1, xs[:-1], (0,))] += 1                                                # host -> its leaf
    short_opt = long_opt = 0
    for (i, xs, ys) in switches:
        if i == h:
            continue
        for y_up in range(w[i]):                                                      # w_{i+1} parents
            parent = (i + 1, xs[:-1], (y_up,) + ys)
            k = pl[i - 1]
            ports[(i, xs, ys)] += k
            ports[parent] += k
            # the pod of a switch of level <= 2 is its x_h..x_3; a level-3+ switch is in no pod
            pod_child = xs[:h - 2] if i <= 2 else None
            pod_parent = parent[1][:h - 2] if i + 1 <= 2 else None
            if pod_child is not None and pod_child == pod_parent:
                short_opt += k
            else:
                long_opt += k
    assert set(ports) <= set(switches)
    radix = max(ports[s] for s in switches)
    return {"n_switches": len(switches), "switch_radix": radix, "n_switch_ports": len(switches) * radix,
            "n_ports_used": sum(ports.values()), "n_nics": hosts, "n_electrical_cables_short": hosts,
            "n_optical_cables_short": short_opt, "n_optical_cables_long": long_opt,
            "n_transceivers": 2 * (short_opt + long_opt)}


@pytest.mark.parametrize("m,w,pl", [
    ((3, 3, 3, 3), (1, 3, 3, 3), (1, 1, 1)),       # 3-ary 4-tree, built label by label
    ((4, 3, 2, 2), (1, 2, 3, 2), (2, 1, 3)),       # 4 levels, uneven children, taper and parallel links
    ((4, 4, 4), (1, 2, 3), (3, 2)),                # tapered differently per tier, parallel links per tier
    ((5, 2, 3), (1, 1, 1), (1, 1)),                # a plain tree: one parent per switch
    ((6, 4), (1, 2), (3,)),                        # 2 levels (Frontera's shape, small): tier 1 is the only one
    ((7,), (1,), ()),                              # 1 level: one switch, hosts only
    ((2, 5, 2), (1, 2, 5), (1, 1)),                # w_3 = m_2: no taper at the top
])
def test_xgft_counts_equal_a_label_by_label_build(m, w, pl):
    t = fat_tree(list(m), list(w), parallel_links=list(pl) if pl else 1)
    _compare(t, _xgft(m, w, pl))


def test_xgft_radix_is_the_largest_level_and_every_switch_is_bought_with_it():
    # level 1: 2 down + 2*3 up = 8; level 2: 4*3 down + 1*1 up = 13; level 3: 3*1 = 3 -> every switch has 13
    t = fat_tree([2, 4, 3], [1, 2, 1], parallel_links=[3, 1])
    c = parts_of(t)
    assert c.switch_radix == 13
    assert c.n_switches == 4 * 3 + 3 * 2 + 2 and c.n_switch_ports == 13 * 20
    assert c.n_ports_used == 12 * 8 + 6 * 13 + 2 * 3


def test_a_fat_tree_radix_cap_is_a_check_not_a_split():
    """``topology.radix`` refuses switches that need more ports than the product has (never splits them)."""
    with pytest.raises(ConfigError, match="topology.radix"):
        fat_tree(k=8, levels=3, radix=15)
    assert parts_of(fat_tree(k=8, levels=3, radix=16)).switch_radix == 16


# ------------------------------------------------------------------------------------------ Dragonflies
def _dragonfly_from_links(t) -> dict:
    """Counts of a Dragonfly from its link arrays and its packaging: a group (``router // a``) is a rack. A cable
    is two directed router links; it is copper short when both ends are in one rack, long optical otherwise.
    Every router is bought with ``p + (a - 1) + h`` ports (docs/cost.md); the ports used are counted per router
    from the links and checked against that."""
    p, a, h, g = int(t.p), int(t.a), int(t.h), int(t.g)
    n = int(t.n_router_links)
    src, dst = np.asarray(t.link_src[:n]), np.asarray(t.link_dst[:n])
    fwd = Counter(zip(src.tolist(), dst.tolist()))
    assert all(fwd[(v, u)] == k for (u, v), k in fwd.items()), "every cable is one directed link each way"
    # cables between a router pair: its directed links one way (parallel global cables join one pair at g = 2)
    same_rack = sum(k for (u, v), k in fwd.items() if u < v and u // a == v // a)
    cross = sum(k for (u, v), k in fwd.items() if u < v and u // a != v // a)
    assert 2 * (same_rack + cross) == n
    nodes_per = np.bincount(np.asarray(t.node_router), minlength=g * a)
    used = np.bincount(src, minlength=g * a) + nodes_per
    radix = p + (a - 1) + h
    assert used.max() <= radix
    return {"n_switches": g * a, "switch_radix": radix, "n_switch_ports": g * a * radix,
            "n_ports_used": int(used.sum()), "n_nics": int(nodes_per.sum()),
            "n_electrical_cables_short": int(nodes_per.sum()) + same_rack, "n_optical_cables_long": cross,
            "n_transceivers": 2 * cross}


@pytest.mark.parametrize("p,a,h,g,arr", [
    (1, 2, 1, 2, "consecutive"),    # the smallest: two groups of two routers
    (3, 2, 1, 3, "consecutive"),    # unbalanced: more nodes than local ports
    (1, 6, 1, 4, "relative"),       # unbalanced: a >> 2h, a h / (g - 1) = 2 links per group pair
    (2, 3, 4, 5, "consecutive"),    # h > a; a h / (g - 1) = 3
    (2, 3, 4, 8, "relative"),       # a h = 12 ports over 7 other groups: m = 1, 5 ports of each group free
    (2, 4, 3, 2, "consecutive"),    # g = 2: all a h = 12 global ports to the one other group
    (4, 8, 4, 33, "relative"),      # balanced, the largest g
    (2, 1, 3, 4, "consecutive"),    # one router per group: no local cable
])
def test_dragonfly_counts_equal_the_link_arrays_by_rack(p, a, h, g, arr):
    t = dragonfly(p, a, h, g, arrangement=arr)
    want = _dragonfly_from_links(t)
    m = (a * h) // (g - 1)   # the definition: m global cables between every pair of groups
    assert want["n_optical_cables_long"] == g * (g - 1) * m // 2
    _compare(t, want)


def test_a_dragonfly_needs_two_groups():
    with pytest.raises(ConfigError, match="topology.g"):
        dragonfly(2, 4, 2, 1)


def test_theta_as_catalogued():
    """Theta: DF(4, 96, 10, 12), m = floor(960 / 11) = 87 global cables per group pair (a full mesh of 96
    routers per group, as its file approximates it)."""
    t = machine_topology("Theta")
    _compare(t, _dragonfly_from_links(t))
    c = parts_of(t)
    assert c.n_optical_cables_long == 12 * 11 * 87 // 2 == 5742
    assert c.switch_radix == 4 + 95 + 10 and c.n_switch_ports - c.n_ports_used == 12 * (960 - 87 * 11)


@pytest.mark.parametrize("p,a,h,g,k", [(1, 3, 2, 5, 3), (3, 2, 2, 4, 2), (1, 3, 2, 7, 6)])
def test_rdn_counts_every_global_port_once(p, a, h, g, k):
    """RDN(p, a, h, g; k): the Dragonfly's routers, node and local cables (counted from the link arrays by
    rack), and every one of the g a h global ports cabled to an optical circuit switch (one fibre, one
    transceiver at the router), a h / k circuit switches of g k ports, configured or not."""
    from evaluator.topology import rdn

    t = rdn(p, a, h, g, ports_per_switch=k)
    n = int(t.n_router_links)
    src, dst = np.asarray(t.link_src[:n]), np.asarray(t.link_dst[:n])
    local = int((src // a == dst // a).sum()) // 2
    radix = p + (a - 1) + h
    _compare(t, {"n_switches": g * a, "switch_radix": radix, "n_switch_ports": g * a * radix, "n_nics": g * a * p,
                 "n_ports_used": g * a * p + 2 * local + g * a * h,
                 "n_electrical_cables_short": g * a * p + local, "n_optical_cables_long": g * a * h,
                 "n_transceivers": g * a * h, "n_optical_switches": a * h // k,
                 "n_optical_switch_ports": (a * h // k) * g * k})
    assert local == g * a * (a - 1) // 2


# ------------------------------------------------------------------------------------------ tori
def _torus_by_rings(dims, wrap, npr) -> dict:
    """A torus rebuilt ring by ring: per dimension, every router's +1 neighbour (wrapping when the dimension
    wraps) is a cable; the set of router pairs is the cables (a wrapped ring of 2 routers has one pair: the
    topology is a simple graph). Laid out straight: a cable whose ends differ by ``n - 1 >= 2`` spans the ring
    (copper long), every other one is copper short. No node cable (the router is on the node board); a router
    is bought with 2 ports per dimension plus its nodes."""
    R = math.prod(dims)
    short, long = set(), set()
    for idx in itertools.product(*[range(n) for n in dims]):
        for k, (n, wr) in enumerate(zip(dims, wrap)):
            if n == 1 or (not wr and idx[k] == n - 1):
                continue
            nb = list(idx)
            nb[k] = (idx[k] + 1) % n
            pair = frozenset((idx, tuple(nb)))
            (long if n >= 3 and abs(idx[k] - nb[k]) == n - 1 else short).add(pair)
    radix = 2 * len(dims) + npr
    return {"n_switches": R, "switch_radix": radix, "n_switch_ports": R * radix, "n_nics": R * npr,
            "n_ports_used": 2 * (len(short) + len(long)) + R * npr, "n_electrical_cables_short": len(short),
            "n_electrical_cables_long": len(long)}


@pytest.mark.parametrize("dims,wrap,npr", [
    ((4, 4, 3, 2, 2), True, 1),                       # 5-D, two size-2 dimensions (one cable per pair)
    ((3, 3, 3, 3, 2), True, 4),                       # 5-D, 4 nodes per router
    ((2, 3, 4), (True, False, True), 3),              # mixed wrap, 3 nodes per router
    ((5, 1, 3, 2), (True, True, False, True), 2),     # a size-1 dimension (no link, ports still bought)
    ((2, 2, 2), True, 16),                            # more nodes per router (16) than torus ports (6)
    ((3,), True, 1),                                  # one ring of 3: 2 short + 1 wrap-around
    ((2,), False, 1),                                 # a mesh of 2: one cable
])
def test_torus_counts_equal_a_ring_by_ring_build(dims, wrap, npr):
    wraps = (wrap,) * len(dims) if isinstance(wrap, bool) else wrap
    t = torus(list(dims), wrap=list(wraps), nodes_per_router=npr)
    want = _torus_by_rings(dims, wraps, npr)
    assert want["n_electrical_cables_short"] + want["n_electrical_cables_long"] == t.n_router_links // 2
    _compare(t, want)


@pytest.mark.parametrize("name,dims,npr", [
    ("Mira", (16, 16, 12, 8, 2), 1),
    ("JUQUEEN-54", (12, 12, 12, 8, 2), 1),
    ("Titan", (25, 16, 24), 2),
])
def test_catalogued_tori(name, dims, npr):
    t = machine_topology(name)
    assert tuple(t.dims) == dims and t.nodes_per_router == npr
    R = math.prod(dims)
    # closed form per dimension (docs/cost.md), computed here: R (n - 1) / n short, R / n long for n >= 3
    short = sum(R // n * (n - 1) for n in dims)
    long = sum(R // n for n in dims if n >= 3)
    radix = 2 * len(dims) + npr
    _compare(t, {"n_switches": R, "switch_radix": radix, "n_switch_ports": R * radix, "n_nics": R * npr,
                 "n_ports_used": 2 * (short + long) + R * npr, "n_electrical_cables_short": short,
                 "n_electrical_cables_long": long})


def test_frontera_as_catalogued():
    """Frontera: XGFT(2; 44, 182; 1, 6) with 3 parallel links: 182 leaves (44 + 18 ports), 6 core switches of
    182 x 3 = 546 ports. The model buys every switch with the largest radix (docs/cost.md: "one radix for
    all"), so each leaf is priced with 546 ports."""
    t = machine_topology("Frontera")
    _compare(t, _xgft((44, 182), (1, 6), (3,)))
    c = parts_of(t)
    assert (c.n_switches, c.switch_radix, c.n_optical_cables_short, c.n_optical_cables_long) == (188, 546, 3276, 0)


# ------------------------------------------------------------------------------------------ units and budgets
def test_a_table_in_dollars_gives_dollars_and_watts_unscaled():
    t = torus([3, 3], nodes_per_router=2)
    table = {p: {"price": 1000.0 * float(TABLE[p]["price"]), "power": float(TABLE[p]["power"])} for p in TABLE}
    base, usd = network_cost(t), network_cost(t, {"currency": "USD", "parts": table})
    assert usd.currency == "USD" and usd.cost == pytest.approx(1000.0 * base.cost) and usd.power == base.power
    # 9 routers of 6 ports (5 + 6 x 1), 18 NICs (2), 2 x 6 short and 2 x 3 long copper cables: by hand
    assert base.cost == pytest.approx(9 * 5 + 54 * 1 + 18 * 2 + 12 * 0.3 + 6 * 0.8) == 143.4
    assert base.power == pytest.approx(9 * 50 + 54 * 5 + 18 * 20 + 6 * 2)


def test_an_eval_dataset_says_its_units():
    import xarray as xr

    from evaluator.cost.dataset import with_cost

    t = dragonfly(2, 4, 2, 3)
    ds = xr.Dataset({"throughput": ((), 243.0e9, {"units": "bytes/s"})})
    with_cost(ds, t, {"currency": "EUR"})
    assert ds["cost"].attrs["units"] == "EUR" and float(ds["cost"]) == pytest.approx(243.0)
    assert ds["power"].attrs["units"] == "W" and float(ds["power"]) == pytest.approx(1788.0)
    assert ds["n_switches"].dtype.kind == "i" and int(ds["n_optical_cables_long"]) == 3 * 2 * 4 // 2
    assert ds["throughput_per_cost"].attrs["units"] == "bytes/s/EUR"
    assert float(ds["throughput_per_cost"]) == pytest.approx(1.0e9)


def test_a_budget_is_an_upper_bound_in_the_tables_currency():
    nc = network_cost(dragonfly(2, 4, 2, 3))
    check_budget(nc, nc.cost)                      # exactly the budget: allowed
    with pytest.raises(ConfigError, match="cost.budget"):
        check_budget(nc, nc.cost * (1 - 1e-9))
    assert prices_from({"budget": "250"}).budget == 250.0


# ------------------------------------------------------------------------------------------ buyer study sizing
@pytest.mark.parametrize("n,equal", [(64, "cost"), (128, "cost"), (512, "power"), (1000, "cost")])
def test_equal_networks_are_within_the_tolerance_of_the_dragonflys_budget(n, equal):
    from evaluator.studies.buyer import equal_networks, fat_tree_candidates, torus_candidates

    tol = 0.1
    nets = equal_networks(n, equal, tol)
    ref = nets["dragonfly"][0]
    p = int(ref.p)
    assert (ref.a, ref.h) == (2 * p, p) and ref.n_nodes >= n        # balanced, at least n nodes
    want = _priced(_dragonfly_from_links(ref))[0 if equal == "cost" else 1]
    assert nets["budget"] == pytest.approx(want, rel=1e-12)
    for fam, cands in (("fat_tree", fat_tree_candidates(n)), ("torus", torus_candidates(n))):
        topo, value, ok = nets[fam]
        assert topo.n_nodes == n
        if fam == "fat_tree":
            counts = _xgft(tuple(topo.children), tuple(topo.parents), tuple(topo.parallel_links))
        else:
            counts = _torus_by_rings(tuple(topo.dims), tuple(topo.wrap), int(topo.nodes_per_router))
        mine = _priced(counts)[0 if equal == "cost" else 1]
        assert value == pytest.approx(mine, rel=1e-12)
        assert ok == (abs(mine / nets["budget"] - 1) <= tol)
        # nearest the budget among the candidates
        devs = [abs(_priced(parts_of(c).as_dict())[0 if equal == "cost" else 1] / nets["budget"] - 1) for c in cands]
        assert abs(mine / nets["budget"] - 1) == pytest.approx(min(devs), abs=1e-12)


def test_a_fat_trees_radix_is_the_switch_product_bought():
    """``fat_tree(..., radix=48)`` was checked (every switch fits in 48 ports), then forgotten: the cost bought
    16-port switches for the 8-ary 3-tree. The radix given is the product bought: 192 switches of 48 ports."""
    from evaluator.cost import network_cost
    from evaluator.topology import fat_tree

    given, plain = network_cost(fat_tree(k=8, levels=3, radix=48)).parts, network_cost(fat_tree(k=8, levels=3)).parts
    assert (given.n_switches, given.switch_radix, given.n_switch_ports) == (192, 48, 192 * 48)
    assert (plain.n_switches, plain.switch_radix, plain.n_switch_ports) == (192, 16, 192 * 16)
    assert given.n_ports_used == plain.n_ports_used == 128 * 16 + 64 * 8  # 2k ports below the top, k at the top
