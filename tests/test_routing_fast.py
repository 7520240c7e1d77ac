"""The routing operators' fast paths against the per-flow walk (``tests/reference.py``), link for link.

* Torus DOR (int64 difference lines and a prefix sum per ring): random tori
  with odd and even rings, rings of two, meshes and mixed wraps, every order
  and both tie rules, lines short (a triangular product) and long (a scan),
  sparse flows and dense rank-one demand;
* exactness: integer and half-integer bytes give loads equal (``==``) to the
  walk's; at up to 2^61 bytes a load is the exact sum rounded once; other
  bytes stay within the bound of the module docstring against an exact
  (``Fraction``) walk, on a ring where a float64 prefix sum would not;
* a 700-router ring and a 300x3 torus against the walk on samples of flows,
  and the dense path against the sparse path over all router pairs;
* Dragonfly minimal and Valiant (the phase-two products) against the walk,
  sparse and dense, and the tables minimal builds.
"""

from __future__ import annotations

import math
from fractions import Fraction

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from evaluator import routing as RT
from evaluator import topology as T
from evaluator.routing import build_routing
from tests.helpers import TOL

try:
    from tests.reference import reference_link_loads, reference_link_loads_exact
except ImportError:  # pragma: no cover
    from reference import reference_link_loads, reference_link_loads_exact


def as_dict(r: RT.Routing) -> dict:
    if r.kind != "dor":
        return {"kind": r.kind}
    return {"kind": "dor", "order": r.order, "tie": r.tie}


def operator(topo, routing):
    """Jitted ``apply`` and ``apply_dense`` of the routing operator, router links only."""
    op = build_routing(topo, routing)
    tables = {k: jnp.asarray(v) for k, v in op.tables.items()}
    sparse = jax.jit(lambda s, d, w: op.apply(tables, s, d, w))
    dense = jax.jit(lambda u, v: op.apply_dense(tables, u, v))

    def run_sparse(src, dst, nbytes):
        w = np.where(src != dst, nbytes, 0.0)  # the contract: a same-router flow carries 0
        return np.asarray(sparse(jnp.asarray(src, jnp.int32), jnp.asarray(dst, jnp.int32), jnp.asarray(w)))

    def run_dense(u, v):
        return np.asarray(dense(jnp.asarray(u, jnp.float64), jnp.asarray(v, jnp.float64)))

    return run_sparse, run_dense


def walk(topo, routing, src, dst, nbytes):
    """Router-link loads of router-level flows by the per-flow walk (one node per router)."""
    assert topo.nodes_per_router == 1
    flows = zip(src.tolist(), dst.tolist(), np.asarray(nbytes, float).tolist())
    return reference_link_loads(topo, flows, np.arange(topo.n_nodes), as_dict(routing))[: topo.n_router_links]


def random_flows(topo, rng, n_flows, integer=True):
    src = rng.integers(0, topo.n_routers, n_flows)
    dst = rng.integers(0, topo.n_routers, n_flows)
    nbytes = rng.integers(1, 10**6, n_flows).astype(np.float64)
    if not integer:
        nbytes = nbytes * rng.choice([1.0, 0.25, 1e-3, 1.7e-7], n_flows)
    return src, dst, nbytes


def all_pairs(topo, u, v):
    s, d = np.nonzero(~np.eye(topo.n_routers, dtype=bool))
    return s, d, u[s] * v[d]


# --------------------------------------------------------------------------------------
# Torus DOR: random tori, every order and tie rule
# --------------------------------------------------------------------------------------

TORI = [
    ((7,), True), ((8,), True), ((2,), True), ((1, 5), True), ((5, 6), True), ((6, 4, 3), True),
    ((3, 4), False), ((5, 4), (True, False)), ((2, 3, 4), True), ((4, 2, 6), (True, False, True)),
    ((9, 2, 1, 3), (True, True, True, False)), ((40,), True), ((33, 3), True), ((40,), False),
    ((36, 4), (False, True)),
]


def _routings(dims, seed):
    """Three routings per torus: as_given, longest_first and a random permutation; tie rules alternate."""
    perm = tuple(int(k) for k in np.random.default_rng(seed).permutation(len(dims)))
    ties = ("split", "positive") if seed % 2 else ("positive", "split")
    return [RT.dor("as_given", ties[0]), RT.dor("longest_first", ties[1]), RT.dor(perm, ties[0])]


CASES = [(dims, wrap, rt) for i, (dims, wrap) in enumerate(TORI) for rt in _routings(dims, i)]


def _id(case):
    dims, wrap, rt = case
    w = "t" if wrap is True else "m" if wrap is False else "".join("t" if x else "m" for x in wrap)
    return f"{'x'.join(map(str, dims))}-{w}-{rt.label}"


@pytest.mark.parametrize("case", range(len(CASES)), ids=[_id(c) for c in CASES])
def test_dor_sparse_and_dense_match_the_walk(case):
    """Integer bytes: the loads equal the walk's exactly, link for link (ties give halves)."""
    dims, wrap, routing = CASES[case]
    topo = T.torus(dims, wrap=wrap)
    run_sparse, run_dense = operator(topo, routing)
    rng = np.random.default_rng(case)
    src, dst, nbytes = random_flows(topo, rng, 6 * topo.n_routers + 5)
    np.testing.assert_array_equal(run_sparse(src, dst, nbytes), walk(topo, routing, src, dst, nbytes))
    # dense rank-one demand: integer weights (some routers silent) are exact too
    u = rng.integers(0, 9, topo.n_routers) * (rng.random(topo.n_routers) < 0.8)
    v = rng.integers(0, 9, topo.n_routers).astype(np.float64)
    s, d, b = all_pairs(topo, u.astype(np.float64), v)
    ref = walk(topo, routing, s, d, b)
    np.testing.assert_array_equal(run_dense(u, v), ref)
    # and real-valued weights within the dense path's rounding
    uf, vf = rng.random(topo.n_routers) * 3.0, rng.random(topo.n_routers) * (rng.random(topo.n_routers) < 0.7)
    s, d, b = all_pairs(topo, uf, vf)
    ref = walk(topo, routing, s, d, b)
    np.testing.assert_allclose(run_dense(uf, vf), ref, rtol=TOL["rel"], atol=TOL["rel"] * ref.max())


@pytest.mark.parametrize("dims,wrap,routing", [CASES[i] for i in (4, 16, 40)], ids=[_id(CASES[i]) for i in (4, 16, 40)])
def test_dor_fractional_bytes_match_the_walk(dims, wrap, routing):
    topo = T.torus(dims, wrap=wrap)
    run_sparse, _ = operator(topo, routing)
    src, dst, nbytes = random_flows(topo, np.random.default_rng(5), 6 * topo.n_routers + 5, integer=False)
    ref = walk(topo, routing, src, dst, nbytes)
    np.testing.assert_allclose(run_sparse(src, dst, nbytes), ref, rtol=TOL["rel"], atol=TOL["bytes"])


@pytest.mark.parametrize("n", [2, 3, 4, 5, 6, 9, 12, 33, 34])
def test_dense_ring_equals_the_crossing_tensor(n):
    """One ring, every tie rule and wrap: ``load[x] = sum_{s,t} M[x, s, t] u[s] v[t]`` (``M`` by broadcasting)."""
    from evaluator.routing._dor import _crossing_tensor

    rng = np.random.default_rng(n)
    u, v = rng.integers(0, 50, n).astype(np.float64), rng.integers(0, 50, n).astype(np.float64)
    for wrap in (True, False):
        topo = T.torus((n,), wrap=wrap)
        nb = np.asarray(topo.neighbor_link)[:, 0, :]
        for tie in ("split", "positive"):
            _, run_dense = operator(topo, RT.dor(tie=tie))
            got = run_dense(u, v)
            for direction in (0, 1) if not (wrap and n == 2) else (0,):
                M = _crossing_tensor(n, wrap, direction, tie)
                M = M * (1 - np.eye(n))[None]  # pairs s != t
                expect = np.einsum("xst,s,t->x", M, u, v)
                has = nb[:, direction] >= 0
                np.testing.assert_array_equal(got[nb[has, direction]], expect[has])


# A mixed 5-D BG/Q-like shape: even rings with split ties (4, 6), an odd ring (3), a mesh (5), a ring of two (E).
BGQ_MIXED = ((4, 3, 6, 5, 2), (True, True, True, False, True))


@pytest.mark.parametrize("routing", [RT.dor("longest_first", "split"), RT.dor((4, 2, 0, 3, 1), "positive")],
                         ids=lambda r: r.label)
def test_dor_batched_apply_matches_the_walk_per_point(routing):
    """``vmap`` of ``apply`` (the in-place scatters' batching rule), with the kernel's extra entries: each point's
    loads equal its own walk, link for link, and the extra sums equal a bincount; bytes shared by every point too."""
    topo = T.torus(*BGQ_MIXED)
    op = build_routing(topo, routing)
    tables = {k: jnp.asarray(v) for k, v in op.tables.items()}
    rng = np.random.default_rng(11)
    B, F, bins = 3, 3 * topo.n_routers, 7
    src = rng.integers(0, topo.n_routers, (B, F))
    dst = rng.integers(0, topo.n_routers, (B, F))
    dst[:, :60] = (src[:, :60] + 2 * 3 * 6 * 5 * 2 // 2) % topo.n_routers  # ties in dimension 0
    nbytes = rng.integers(1, 10**6, F).astype(np.float64)
    idx = rng.integers(0, bins, (B, F))

    def one(s, d, w, i):
        out = op.apply(tables, s, d, jnp.where(s != d, w, 0.0), extra=(((i, w),), bins))
        return out[:-bins], out[-bins:]

    refs = [walk(topo, routing, src[b], dst[b], nbytes) for b in range(B)]
    for in_w in (0, None):  # bytes per point, or one byte list for every point (unbatched values)
        w = np.tile(nbytes, (B, 1)) if in_w == 0 else nbytes
        loads, sums = jax.jit(jax.vmap(one, in_axes=(0, 0, in_w, 0)))(
            jnp.asarray(src, jnp.int32), jnp.asarray(dst, jnp.int32), jnp.asarray(w), jnp.asarray(idx, jnp.int32))
        for b in range(B):
            np.testing.assert_array_equal(np.asarray(loads[b]), refs[b])
            np.testing.assert_array_equal(np.asarray(sums[b]), np.bincount(idx[b], nbytes, minlength=bins))


def test_dor_wide_packed_coordinates_match_the_walk(monkeypatch):
    """Coordinates packed in uint64 (forced by a small bit budget; a real torus needs more than 32 bits)."""
    from evaluator.routing import _dor

    monkeypatch.setattr(_dor, "_NARROW_BITS", 4)
    topo = T.torus(*BGQ_MIXED)
    routing = RT.dor("as_given", "split")
    op = build_routing(topo, routing)
    assert op.tables["coords"].dtype == np.uint64  # the torus has a size that is not a power of two
    run_sparse, _ = operator(topo, routing)
    src, dst, nbytes = random_flows(topo, np.random.default_rng(12), 3 * topo.n_routers)
    np.testing.assert_array_equal(run_sparse(src, dst, nbytes), walk(topo, routing, src, dst, nbytes))


# --------------------------------------------------------------------------------------
# Exactness
# --------------------------------------------------------------------------------------


def test_integer_and_half_bytes_are_exact_up_to_2_52():
    """Large odd byte counts (ties halve them) on an even ring: every load == the walk's, loads near 2^51."""
    topo = T.torus((64, 4))
    routing = RT.dor("as_given", "split")
    run_sparse, _ = operator(topo, routing)
    rng = np.random.default_rng(1)
    n = 600
    src = rng.integers(0, topo.n_routers, n)
    dst = (src + 32 * 4 * rng.integers(0, 2, n) + rng.integers(0, 4, n)) % topo.n_routers  # many ties
    nbytes = (2 * rng.integers(2**43, 2**44, n) + 1).astype(np.float64)  # odd: split ties give halves
    ref = walk(topo, routing, src, dst, nbytes)
    assert 2**49 < ref.max() < 2**52
    assert np.any(ref % 1 == 0.5)  # halves occur
    np.testing.assert_array_equal(run_sparse(src, dst, nbytes), ref)


def test_integer_bytes_up_to_2_61_are_the_exact_sum_rounded_once():
    topo = T.torus((20,))
    routing = RT.dor()
    run_sparse, _ = operator(topo, routing)
    rng = np.random.default_rng(2)
    n = 60
    src, dst = rng.integers(0, 20, n), rng.integers(0, 20, n)
    nbytes = rng.integers(2**54, 2**55, n).astype(np.float64)  # integers; S about 2^60.5 < 2^61
    assert 2**60 < math.fsum(nbytes) < 2**61
    exact, _ = reference_link_loads_exact(topo, zip(src, dst, nbytes), np.arange(20), as_dict(routing))
    got = run_sparse(src, dst, nbytes)
    np.testing.assert_array_equal(got, [float(x) for x in exact[: topo.n_router_links]])


@pytest.mark.parametrize("n", [40, 700])
def test_fractional_bytes_within_the_documented_bound(n):
    """|load - exact| <= ulp/2 + routes x 2^(e-62), S < 2^e: tiny loads next to huge ones stay within it.

    One flow of about 2^50 bytes crosses most of the ring; small fractional
    flows run beside and after it. A float64 difference line would leave
    errors of about 2^-53 x 2^50 = 0.125 bytes on the small loads.
    """
    topo = T.torus((n,))
    routing = RT.dor()
    run_sparse, _ = operator(topo, routing)
    rng = np.random.default_rng(n)
    src = np.concatenate([[0], rng.integers(0, n, 200)])
    dst = np.concatenate([[n // 2 - 1], (src[1:] + rng.integers(1, n // 2, 200)) % n])
    nbytes = np.concatenate([[2.0**50 / 3.0], rng.random(200) * 1e-3])
    exact, routes = reference_link_loads_exact(topo, zip(src, dst, nbytes), np.arange(n), as_dict(routing))
    got = run_sparse(src, dst, nbytes)
    e = math.frexp(math.fsum(nbytes[src != dst]))[1]
    unit = 2.0 ** (e - 62)
    for link in range(topo.n_router_links):
        bound = math.ulp(float(exact[link])) / 2 + routes[link] * unit
        assert abs(Fraction(float(got[link])) - exact[link]) <= bound, (link, got[link], float(exact[link]), bound)
    small = [float(exact[k]) for k in range(topo.n_router_links) if 0 < exact[k] < 1]
    assert small  # the case has loads far below the large flow's rounding in float64


def test_units_exponent_is_numpys_frexp():
    """DOR's unit of bytes (``_units``: its exponent read from the float64's bits) against NumPy's ``frexp`` and
    ``ldexp``: the same even integers and unit for sums from 2^-1000 to 2^1000 (each of those exponents),
    integer byte counts and sums of 0; a subnormal sum (which ``frexp`` gives an exponent below -1022) gets the
    unit of a sum of 0 (2^-62) and the same integers (0)."""
    from evaluator.routing._dor import _units

    def reference(w):
        e = max(int(np.frexp(np.sum(np.abs(w)))[1]), -900)
        return 2 * np.round(w * np.ldexp(1.0, 61 - e)).astype(np.int64), np.ldexp(1.0, e - 62)

    rng = np.random.default_rng(7)
    cases = [np.zeros(3), np.array([1.0]), np.array([0.5, 0.5]), np.array([2.0**53, 1.0]), np.array([1 - 2.0**-53])]
    cases += [rng.random(rng.integers(1, 40)) * 2.0**k for k in range(-1000, 1001, 7)]
    cases += [np.floor(rng.exponential(1e6, 20)) for _ in range(50)]
    units = jax.jit(_units)
    for w in cases:
        q, unit = units(jnp.asarray(w))
        q_ref, unit_ref = reference(w)
        assert np.array_equal(np.asarray(q), q_ref) and float(unit) == unit_ref, (w[:3], float(unit), unit_ref)
    q, unit = units(jnp.asarray([5e-324]))
    assert np.asarray(q).tolist() == [0] and float(unit) == 2.0**-62


# --------------------------------------------------------------------------------------
# Large rings
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("dims,routing", [((700,), RT.dor()), ((300, 3), RT.dor("longest_first", "positive")),
                                          ((700,), RT.dor(tie="positive"))])
def test_long_rings_against_the_walk_on_a_sample(dims, routing):
    topo = T.torus(dims)
    run_sparse, _ = operator(topo, routing)
    rng = np.random.default_rng(7)
    src, dst, nbytes = random_flows(topo, rng, 2000)
    dst[:200] = (src[:200] + topo.n_routers // 2) % topo.n_routers  # ties on the long ring
    np.testing.assert_array_equal(run_sparse(src, dst, nbytes), walk(topo, routing, src, dst, nbytes))


def test_long_ring_dense_equals_sparse_over_all_pairs():
    topo = T.torus((700,))
    routing = RT.dor()
    run_sparse, run_dense = operator(topo, routing)
    rng = np.random.default_rng(8)
    u = rng.integers(0, 6, 700).astype(np.float64)
    v = rng.integers(0, 6, 700).astype(np.float64)
    s, d, b = all_pairs(topo, u, v)
    got = run_dense(u, v)
    np.testing.assert_array_equal(got, run_sparse(s, d, b))
    sample = rng.choice(s.size, 3000, replace=False)  # and the sparse path against the walk on a sample
    np.testing.assert_array_equal(run_sparse(s[sample], d[sample], b[sample]),
                                  walk(topo, routing, s[sample], d[sample], b[sample]))


# --------------------------------------------------------------------------------------
# Dragonfly
# --------------------------------------------------------------------------------------

DRAGONFLIES = [(4, 8, 4, None, "consecutive"), (2, 4, 2, 5, "consecutive"), (1, 3, 3, 4, "relative"),
               (2, 6, 1, 4, "consecutive"), (1, 2, 1, 3, "relative")]


@pytest.mark.parametrize("p,a,h,g,arr", DRAGONFLIES)
@pytest.mark.parametrize("routing", [RT.minimal(), RT.valiant()], ids=["minimal", "valiant"])
def test_dragonfly_sparse_and_dense_match_the_walk(p, a, h, g, arr, routing):
    topo = T.dragonfly(p, a, h, g, arrangement=arr)
    op = build_routing(topo, routing)
    if routing.kind == "minimal":  # none of Valiant's tables
        assert not {"land", "own_count"} & set(op.tables)
    run_sparse, run_dense = operator(T.dragonfly(p, a, h, g, arrangement=arr), routing)
    rng = np.random.default_rng(a * 100 + h)
    R = topo.n_routers
    src = rng.integers(0, R, 8 * R)
    dst = rng.integers(0, R, 8 * R)
    nbytes = rng.integers(1, 10**6, 8 * R) * rng.choice([1.0, 0.25, 1e-3], 8 * R)
    flows = list(zip(src.tolist(), dst.tolist(), nbytes.tolist()))
    # one node per router of a DF with p nodes per router: router r's first node stands for it
    ref = reference_link_loads(topo, flows, np.arange(R) * topo.nodes_per_router, as_dict(routing))
    ref = ref[: topo.n_router_links]
    np.testing.assert_allclose(run_sparse(src, dst, nbytes), ref, rtol=TOL["rel"], atol=TOL["bytes"])
    u = rng.random(R) * (rng.random(R) < (0.2 if R > 100 else 0.8))  # fewer sources on DF(4,8,4): the walk is slow
    v = rng.random(R) * 3.0
    s, d = np.nonzero(~np.eye(R, dtype=bool) & (u[:, None] > 0))
    ref = reference_link_loads(topo, zip(s.tolist(), d.tolist(), (u[s] * v[d]).tolist()),
                               np.arange(R) * topo.nodes_per_router, as_dict(routing))[: topo.n_router_links]
    np.testing.assert_allclose(run_dense(u, v), ref, rtol=TOL["rel"], atol=TOL["rel"] * ref.max())


def test_valiant_land_table_is_the_walks_landing_fractions():
    """``land[G, x, S]``: the fraction of S's traffic to G landing on router x, from the walk's global links."""
    from tests.reference import dragonfly_global_table

    topo = T.dragonfly(2, 6, 1, 4)  # two parallel links per group pair
    land = build_routing(topo, RT.valiant()).tables["land"]
    owner, landing, _ = dragonfly_global_table(topo)
    a, g, m = topo.a, topo.g, topo.links_per_pair
    expect = np.zeros((g, a, g))
    for (S, G, c), x in landing.items():
        expect[G, x - G * a, S] += 1.0 / m
    np.testing.assert_array_equal(land, expect)
    own = np.zeros((g, g, a))  # and the fraction of G's traffic to S leaving through x
    for (G, S, c), o in owner.items():
        own[G, S, o - G * a] += 1.0 / m
    np.testing.assert_array_equal(land, own.transpose(0, 2, 1))
