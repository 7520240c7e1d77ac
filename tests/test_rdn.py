"""Reconfigurable Dragonfly (topology ``rdn``) and TAGO routing.

* every switch configuration is a union of matchings (each switch joins ports of its own, in pairs, never two of
  one group), checked from the port tables and from the link list;
* the per-job Dragonfly reaches every pair of the job's groups, spreads links as evenly as matchings allow;
  two groups get every port;
* the standard configuration joins every group pair ``m`` times (as :func:`dragonfly`);
* TAGO loads against a per-flow walk written here (every direct link between the two groups, 1/n each);
  dense traffic against the same walk over every pair.
"""

from __future__ import annotations

from collections import defaultdict
from itertools import combinations

import numpy as np
import pytest

import evaluator as ev
from evaluator.errors import ConfigError
from evaluator.placement import Placement
from evaluator.routing import build_routing, tago
from evaluator.routing._tago import unconnected_bytes
from evaluator.topology import dragonfly, rdn
from evaluator.topology._rdn import circle_matchings, walecki_cycles
from evaluator.traffic import dense, from_flows
from tests.helpers import TOL

CASES = [
    dict(p=2, a=4, h=2, g=8),
    dict(p=2, a=4, h=2, g=9, ports_per_switch=2),
    dict(p=1, a=3, h=2, g=5, ports_per_switch=1),       # odd g, odd k: near-perfect matchings (5 <= 6 ports)
    dict(p=1, a=4, h=1, g=5, ports_per_switch=2),       # Walecki: a link leaves one router and lands on another
    dict(p=2, a=4, h=2, g=9, configuration="jobs", jobs=[[0, 3], [1, 2, 5], [4, 6, 7, 8]]),
    dict(p=2, a=4, h=2, g=9, ports_per_switch=2, configuration="jobs", jobs=[[1, 2, 5], [0, 8]]),
    dict(p=2, a=4, h=2, g=9, ports_per_switch=4, configuration="jobs", jobs=[[0, 1, 2, 3, 4, 5, 6, 7, 8]]),
    dict(p=2, a=4, h=2, g=9, configuration="traffic", jobs=[[1, 2, 5, 7], [0, 3]],
         demand=[[[0, 5, 1, 0], [5, 0, 0, 0], [1, 0, 0, 9], [0, 0, 9, 0]], [[0, 1], [2, 0]]]),
]


def build(c):
    return rdn(**c)


def check_matchings(t):
    """Every switch: ports paired symmetrically, same switch, different groups; links agree with the ports."""
    k, P, g, a, h = t.ports_per_switch, t.a * t.h, t.g, t.a, t.h
    pg, pp = np.asarray(t.port_peer_group), np.asarray(t.port_peer_port)
    n_local = g * a * (a - 1)
    seen_links = set()
    for G in range(g):
        for j in range(P):
            H, jj = pg[G, j], pp[G, j]
            if H < 0:
                assert jj < 0 and t.port_link[G, j] < 0
                continue
            assert H != G, "a switch joins a group to itself"
            assert j // k == jj // k, "ports of different switches joined"
            assert pg[H, jj] == G and pp[H, jj] == j, "port pairing not symmetric"
            link = int(t.port_link[G, j])
            assert link >= n_local and link not in seen_links
            seen_links.add(link)
            assert t.link_src[link] == G * a + j // h and t.link_dst[link] == H * a + jj // h
    assert len(seen_links) == t.n_router_links - n_local
    # per switch: within each of its k port layers... the switch's port pairs form a k-matching: degree <= k
    for s in range(t.n_switches):
        ports = range(s * k, (s + 1) * k)
        deg = np.zeros(g, int)
        for G in range(g):
            for j in ports:
                if pg[G, j] >= 0:
                    deg[G] += 1
        assert deg.max() <= k
    return pg


@pytest.mark.parametrize("c", CASES, ids=lambda c: f"{c.get('configuration', 'standard')}-g{c['g']}-k"
                                                  f"{c.get('ports_per_switch', 1)}")
def test_every_configuration_is_a_union_of_matchings(c):
    t = build(c)
    check_matchings(t)
    pl = np.asarray(t.pair_links)
    assert (pl == pl.T).all() and (np.diag(pl) == 0).all()
    assert (pl.sum(1) <= t.a * t.h).all()


def test_decompositions_cover_every_pair_once():
    for q in range(2, 12):
        pairs = [e for m in circle_matchings(q) for e in m]
        assert sorted(pairs) == sorted(combinations(range(q), 2))
        for m in circle_matchings(q):
            flat = [v for e in m for v in e]
            assert len(flat) == len(set(flat))
    for q in (3, 5, 7, 9, 13):
        edges = []
        for cyc in walecki_cycles(q):
            assert sorted(cyc) == list(range(q))
            edges += [tuple(sorted(e)) for e in zip(cyc, cyc[1:] + cyc[:1])]
        assert sorted(edges) == sorted(combinations(range(q), 2))


def test_standard_configuration_matches_the_dragonfly_group_pairs():
    for c in CASES[:4]:
        t = build(c)
        m = dragonfly(c["p"], c["a"], c["h"], c["g"]).links_per_pair
        pl = np.asarray(t.pair_links)
        assert (pl[~np.eye(t.g, dtype=bool)] == m).all()


def test_per_job_dragonfly_reaches_every_pair_and_spreads_evenly():
    t = rdn(2, 4, 2, 9, configuration="jobs", jobs=[[0, 3], [1, 2, 5, 6], [4, 7, 8]])
    pl = np.asarray(t.pair_links)
    P = 8
    assert pl[0, 3] == P                               # two groups: every port joins them
    four = pl[np.ix_([1, 2, 5, 6], [1, 2, 5, 6])][~np.eye(4, dtype=bool)]
    assert four.min() >= 1 and four.max() - four.min() <= 1 and four.sum() == 4 * P   # 3 rounds: 8 = 3+3+2
    three = pl[np.ix_([4, 7, 8], [4, 7, 8])][~np.eye(3, dtype=bool)]
    assert three.min() >= 1 and three.max() - three.min() <= 1
    outside = np.ones(9, bool)
    for grp in t.jobs:
        blk = np.ix_(list(grp), [x for x in range(9) if x not in grp])
        assert pl[blk].sum() == 0                      # only among themselves
    # odd q with k = 2: Walecki cycles use every port
    t2 = rdn(2, 4, 2, 9, ports_per_switch=2, configuration="jobs", jobs=[[4, 7, 8]])
    assert np.asarray(t2.pair_links)[[4, 7, 8]].sum(1).tolist() == [P, P, P]


def test_traffic_matched_is_min_max():
    # demand 5 (g1-g2), 1 (g1-g5), 9 (g5-g7): g1 and g5 have 8 ports each; optimum x = (7, 1, 7): max 9/7
    t = rdn(2, 4, 2, 9, configuration="traffic", jobs=[[1, 2, 5, 7]],
            demand=[[[0, 5, 1, 0], [5, 0, 0, 0], [1, 0, 0, 9], [0, 0, 9, 0]]])
    pl = np.asarray(t.pair_links)
    assert (pl[1, 2], pl[1, 5], pl[5, 7]) == (7, 1, 7)
    # brute force over integer allocations with per-group port budgets
    best = min(max(5 / x, 1 / y, 9 / z) for x in range(1, 9) for y in range(1, 9) for z in range(1, 9)
               if x + y <= 8 and y + z <= 8)
    assert max(5 / 7, 1 / 1, 9 / 7) == pytest.approx(best, rel=TOL["rel"])


# ----------------------------------------------------------------------------- TAGO against a per-flow walk
def walk(t, src, dst, w, intra="minimal"):
    """Per-flow loads: local hop, each direct global link with 1/n, local hop (router ids); ``intra="valiant"``:
    every local hop u -> v through each other router r of the group with 1/(a-2)."""
    a, h = t.a, t.h
    edge = defaultdict(list)
    for s, d, link in t.router_edges():
        edge[(s, d)].append(link)
    loads = np.zeros(t.n_router_links)

    def direct(u, v, x):
        (link,) = [lk for lk in edge[(u, v)] if lk < t.g * a * (a - 1)]   # the local link
        loads[link] += x

    def hop(u, v, x):
        if u == v:
            return
        if intra == "minimal":
            direct(u, v, x)
            return
        G = u // a
        mids = [G * a + r for r in range(a) if G * a + r not in (u, v)]
        for r in mids:
            direct(u, r, x / len(mids))
            direct(r, v, x / len(mids))

    for s, d, x in zip(src, dst, w):
        S, D = s // a, d // a
        if s == d:
            continue
        if S == D:
            hop(s, d, x)
            continue
        ports = [j for j in range(a * h) if t.port_peer_group[S, j] == D]
        for j in ports:
            share = x / len(ports)
            o = S * a + j // h
            land = D * a + t.port_peer_port[S, j] // h
            hop(s, o, share)
            loads[t.port_link[S, j]] += share
            hop(land, d, share)
    return loads


@pytest.mark.parametrize("c,intra", [(CASES[0], "minimal"), (CASES[1], "minimal"), (CASES[3], "minimal"),
                                     (CASES[5], "minimal"), (CASES[7], "minimal"), (CASES[0], "valiant"),
                                     (CASES[7], "valiant")],
                         ids=["standard", "standard-k2", "standard-h1-walecki", "jobs-k2", "traffic",
                              "standard-intra-valiant", "traffic-intra-valiant"])
def test_tago_sparse_and_dense_match_the_walk(c, intra):
    t = build(c)
    op = build_routing(t, tago(intra))
    R = t.n_routers
    rng = np.random.default_rng(0)
    pl = np.asarray(t.pair_links)
    src = rng.integers(0, R, 300)
    dst = rng.integers(0, R, 300)
    keep = (src // t.a == dst // t.a) | (pl[src // t.a, dst // t.a] > 0)
    src, dst = src[keep], dst[keep]
    w = rng.random(src.size) * (src != dst)
    got = np.asarray(op.apply(op.tables, src, dst, w))
    ref = walk(t, src, dst, w, intra)
    np.testing.assert_allclose(got, ref, rtol=TOL["rel"], atol=TOL["bytes"])
    # dense rank-one demand u[s] v[d] over connected pairs only (a job's groups in the jobs/traffic configs)
    groups = sorted({x for grp in t.jobs for x in grp}) if t.jobs else list(range(t.g))
    if t.jobs:
        groups = list(t.jobs[0])
    if t.configuration == "traffic":
        groups = [1, 2]                   # pairs without demand have no link: only a connected pair
    u = np.zeros(R)
    v = np.zeros(R)
    for G in groups:
        u[G * t.a:(G + 1) * t.a] = rng.random(t.a)
        v[G * t.a:(G + 1) * t.a] = rng.random(t.a)
    got_d = np.asarray(op.apply_dense(op.tables, u, v))
    S, D = np.nonzero(np.ones((R, R), bool) & ~np.eye(R, dtype=bool))
    ref_d = walk(t, S, D, u[S] * v[D], intra)
    np.testing.assert_allclose(got_d, ref_d, rtol=TOL["rel"], atol=TOL["bytes"])


def test_tago_through_evaluate_and_unconnected_bytes():
    t = rdn(1, 2, 2, 5, configuration="jobs", jobs=[[0, 1]])
    # 4 tasks on the 4 nodes of groups 0 and 1 (routers 0..3), all-to-all
    tr = ev.traffic.all_to_all(4, 1.0)
    pl = Placement(np.arange(4), t.n_nodes, "first")
    res = ev.evaluate(t, tr, pl, "tago")
    # 8 inter-group flows of 1 byte over 4 links each way: 1 byte per global link, 2 bytes per direction
    hops_walk = walk(t, *np.nonzero(~np.eye(4, dtype=bool)), np.ones(12))
    assert float(res["mean_hops"]) == pytest.approx(hops_walk.sum() / 12, rel=TOL["rel_sum"])
    assert unconnected_bytes(t, np.array([0, 0]), np.array([2, 9]), np.array([1.0, 2.0])) == 2.0
    # a traffic between unconnected groups (group 0 -> group 2) never finishes
    bad = ev.evaluate(t, from_flows(2, [0], [1], [1.0]), Placement(np.array([0, 4]), t.n_nodes, "x"), "tago")
    assert np.isinf(float(bad["completion_time"]))


def test_tago_only_on_rdn():
    with pytest.raises(ConfigError, match="routing.kind"):
        build_routing(dragonfly(2, 4, 2), tago())
    with pytest.raises(ConfigError, match="routing.intra"):
        tago("ugal")
    with pytest.raises(ConfigError, match="routing.intra"):
        build_routing(rdn(1, 2, 2, 4), tago("valiant"))


@pytest.mark.parametrize("kw,field", [
    (dict(configuration="ring"), "topology.configuration"),
    (dict(ports_per_switch=3), "topology.ports_per_switch"),
    (dict(configuration="jobs"), "topology.jobs"),
    (dict(configuration="jobs", jobs=[[0, 1], [1, 2]]), "topology.jobs[1]"),
    (dict(configuration="jobs", jobs=[[0, 0]]), "topology.jobs[0]"),
    (dict(configuration="jobs", jobs=[[0, 9]]), "topology.jobs[0]"),
    (dict(configuration="traffic", jobs=[[0, 1]]), "topology.demand"),
    (dict(configuration="traffic", jobs=[[0, 1]], demand=[[[0, -1], [1, 0]]]), "topology.demand[0]"),
    (dict(jobs=[[0, 1]]), "topology.jobs"),
])
def test_bad_rdn_input(kw, field):
    with pytest.raises(ConfigError) as e:
        rdn(2, 4, 2, 8, **kw)
    assert e.value.field == field


def test_odd_groups_with_one_port_per_switch_is_refused():
    with pytest.raises(ConfigError, match="even ports_per_switch"):
        rdn(2, 4, 2, 9)
