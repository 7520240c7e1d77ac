"""One flow's route (:meth:`evaluator.routing.RoutingOperator.route`), for every routing: the router links it
crosses and the fraction of its bytes on each.

Checked against walks that share no code with it: the independent reference (tests/reference.py: tori under DOR,
Dragonflies under minimal, Valiant and Valiant-router) on every router pair of small networks, and the fat trees'
host walks (D-mod-k, the ECMP spray and hashed ECMP, hop by hop in NumPy); for every routing whose loads are
linear, the sum of its flows' routes times their bytes equals the kernel's link loads of the point.
"""

from __future__ import annotations

import itertools
from collections import defaultdict

import numpy as np
import pytest

import evaluator as ev
from evaluator import topology as T
from evaluator.errors import ConfigError
from evaluator.routing import build_routing
from evaluator.routing import _fat_tree as FT
from evaluator.routing._fat_tree import dmodk, ecmp, ecmp_spray
from tests.reference import reference_paths


def _as_dict(paths) -> dict[int, float]:
    out: dict[int, float] = defaultdict(float)
    for prob, links in paths:
        for link in links:
            out[int(link)] += float(prob)
    return {k: v for k, v in out.items() if v != 0}


def _route_dict(op, topo, s, d) -> dict[int, float]:
    links, w = op.route(topo, s, d)
    assert np.all(np.diff(links) > 0)  # ascending, each link once
    return dict(zip(links.tolist(), w.tolist()))


CASES = [
    (lambda: T.torus((4, 3, 2)), ev.dor(), {"kind": "dor", "order": "as_given", "tie": "split"}),
    (lambda: T.torus((4, 4)), ev.dor(order="longest_first", tie="positive"),
     {"kind": "dor", "order": "longest_first", "tie": "positive"}),
    (lambda: T.dragonfly(2, 4, 2), ev.minimal(), {"kind": "minimal"}),
    (lambda: T.dragonfly(2, 4, 2), ev.valiant(), {"kind": "valiant"}),
    (lambda: T.dragonfly(1, 2, 1), ev.valiant_router(), {"kind": "valiant_router"}),
]


@pytest.mark.parametrize("make, routing, ref", CASES, ids=lambda x: getattr(x, "label", None) or str(x)[:20])
def test_every_router_pair_equals_the_reference_walk(make, routing, ref):
    topo = make()
    op = build_routing(topo, routing)
    for s, d in itertools.product(range(topo.n_routers), repeat=2):
        got = _route_dict(op, topo, s, d)
        want = _as_dict(reference_paths(topo, s, d, ref))
        assert got.keys() == want.keys(), (s, d)
        assert all(abs(got[k] - want[k]) <= 1e-12 for k in got), (s, d, got, want)


@pytest.mark.parametrize("routing, walk", [(dmodk(), FT.dmodk_paths), (ecmp_spray(), FT.ecmp_paths),
                                           (ecmp(seed=3), lambda t, a, d: FT.ecmp_hash_paths(t, a, d, 3))],
                         ids=["dmodk", "ecmp_spray", "ecmp"])
def test_fat_tree_routes_equal_the_host_walks(routing, walk):
    topo = T.fat_tree(k=4, levels=3)
    op = build_routing(topo, routing)
    by_node = op.endpoints is not None
    for a, d in itertools.product(range(topo.n_nodes), repeat=2):
        if topo.node_router[a] == topo.node_router[d]:
            continue
        s, t = (a, d) if by_node else (int(topo.node_router[a]), int(topo.node_router[d]))
        assert _route_dict(op, topo, s, t) == pytest.approx(_as_dict(walk(topo, a, d)), abs=1e-12), (a, d)


@pytest.mark.parametrize("make, routing", [
    (lambda: T.torus((4, 4, 2)), ev.dor()),
    (lambda: T.dragonfly(2, 4, 2), ev.valiant()),
    (lambda: T.fat_tree(k=4, levels=3), dmodk()),
    (lambda: T.fat_tree(k=4, levels=3), ecmp(seed=1)),
], ids=["torus-dor", "df-valiant", "ft-dmodk", "ft-ecmp"])
def test_routes_times_bytes_are_the_points_loads(make, routing):
    topo = make()
    tr = ev.traffic.random_permutation(topo.n_nodes, bytes_per_task=1e6, seed=2)
    pl = ev.placement.linear(topo, tr.n_tasks)
    op = build_routing(topo, routing)
    want = ev.evaluate(topo, tr, pl, routing)["link_load"].values[: topo.n_router_links]
    got = np.zeros(topo.n_router_links)
    ends = np.asarray(topo.node_router if op.endpoints is None else op.endpoints)
    for s, d, b in zip(tr.src, tr.dst, tr.nbytes):
        links, w = op.route(topo, int(ends[pl.task_node[s]]), int(ends[pl.task_node[d]]))
        got[links] += b * w
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-6)


def test_bad_endpoints_are_refused_by_name():
    topo = T.torus((4, 4))
    op = build_routing(topo, ev.dor())
    with pytest.raises(ConfigError, match=r"dst = 16 is invalid: allowed is an endpoint id in \[0, 16\)"):
        op.route(topo, 0, 16)
    with pytest.raises(ConfigError, match="src = -1"):
        op.route(topo, -1, 3)
    assert op.route(topo, 5, 5)[0].size == 0


@pytest.mark.parametrize("make", [lambda: T.fat_tree(k=4, levels=3), lambda: T.fat_tree([4, 4], [1, 2]),
                                  lambda: T.fat_tree(k=8, levels=2)], ids=["k=4 3 levels", "parallel links", "k=8"])
def test_dmodk_listed_links_equal_the_host_walk(make):
    """D-mod-k lists every flow's links (two a tier it crosses, all its bytes): on every node pair they are the
    links of the per-flow walk (:func:`dmodk_paths`), and the listed flows of random bytes add up to ``apply``'s
    loads."""
    import jax.numpy as jnp

    topo = make()
    op = build_routing(topo, dmodk())
    n = topo.n_nodes
    s, d = np.divmod(np.arange(n * n), n)
    ft = {k: jnp.asarray(v) for k, v in op.flow_tables.items()}
    links, frac = (np.asarray(x) for x in op.flow_links(ft, jnp.asarray(s), jnp.asarray(d)))
    assert links.shape == (n * n, op.flow_width)
    for i in range(n * n):
        walk = FT.dmodk_paths(topo, int(s[i]), int(d[i]))
        want = sorted(walk[0][1]) if walk else []
        assert sorted(links[i][links[i] >= 0].tolist()) == want, (s[i], d[i])
        assert np.all(frac[i][links[i] >= 0] == 1.0) and np.all(frac[i][links[i] < 0] == 0.0)
    w = np.random.default_rng(0).uniform(1e3, 1e6, n * n)
    tables = {k: jnp.asarray(v) for k, v in op.tables.items()}
    n_rl = int(topo.n_router_links)
    want = np.asarray(op.apply(tables, jnp.asarray(s), jnp.asarray(d), jnp.asarray(w)))[:n_rl]
    got = np.asarray(op.route_few(tables, ft, jnp.asarray(s), jnp.asarray(d), jnp.asarray(w), n_rl))
    np.testing.assert_allclose(got, want, rtol=1e-12)
