"""Audit: a bound must bound at extreme physical scales (bytes 1e-3 .. 1e15, bandwidths 1e3 .. 1e13 B/s).

HiGHS's tolerances are absolute (about 1e-7) and it drops matrix entries below 1e-9, so an LP whose data span
many orders of magnitude can return an optimum far from the true one. Checked here through the public API
(``evaluate(..., bounds=...)``, ``evaluator.lp.optimal_bound``, ``mapping_bound``):

* scale covariance: bytes x s and bandwidths / s multiply every bound by s^2 (relative 1e-7), bytes and
  bandwidths both x s leave it unchanged;
* every certified lower side is <= the evaluated completion time of routings of the same exchange (an upper
  bound of the optimum) and <= the reference optimum; every feasible (upper) side is >= the reference optimum;
* mixed magnitudes: one pair of 1e12 bytes beside pairs of 1 byte .. 1e4 bytes, router links of 1e3 and 1e13
  B/s in one torus, injection bandwidth 1e3 beside links of 1e13 (and the reverse).

The reference optimum is written here: the maximum concurrent flow as ``min T`` with one *unit* flow per router
pair and every capacity row divided by its own capacity (well scaled whatever the bytes and bandwidths: each
pair's bytes enter only its own columns' coefficients ``bytes / (capacity T0)``), solved by ``linprog``; and a
closed-form cut bound (bytes that must cross a cut / the cut's capacity) where the instance allows one.

Found (fixed in ``evaluator/lp/_flow.py``): on a 4x4 torus with dimension-0 links of 1e13 B/s and dimension-1
links of 1e3 B/s, router 0 sending 1e12 bytes to router 4 and 1,000 bytes to router 1, the edge LP reported the
interval [0.05 s, 0.05 s] (gap 1.5e-11) while any routing needs 1,000 B / 8e3 B/s = 0.125 s (the 8 dimension-1
links out of the plane dim1 = 0): its feasible side was no feasible flow (the 1e-9 coefficient of the small pair
and the 5e-11 capacities were below HiGHS's tolerances). With 1e4 bytes it certified 1.202 s against the
optimum 1.25 s (the zero dual lengths raised to 1e-12 of the largest length on the 1e13 B/s links added 4%).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import linprog

import evaluator as ev
from evaluator import lp
from evaluator.lp.bounds import router_demand
from evaluator.mapping import mapping_bound
from evaluator.traffic import Traffic

REL = 1e-7  # scale covariance and agreement with the reference (HiGHS's tolerance on well-scaled LPs)


# ---- independent references ----

def ref_min_time(topo, src, dst, nbytes, fixed=None) -> float:
    """Optimum time (s) over every routing of router pairs ``src -> dst`` with ``nbytes`` (unit flow per pair,
    capacity rows divided by their capacity, times in units of ``T0``), and the fixed loads' own limit."""
    E, R, Q = int(topo.n_router_links), int(topo.n_routers), len(src)
    ls, ld = np.asarray(topo.link_src[:E]), np.asarray(topo.link_dst[:E])
    cap_all = np.asarray(topo.capacity, float)
    cap = cap_all[:E]
    nbytes = np.asarray(nbytes, float)
    out_cap = np.bincount(ls, weights=cap, minlength=R)
    T0 = float(max(nbytes / out_cap[src]))  # a lower bound of the optimum: its own source's links
    rows, cols, vals = [], [], []
    for q in range(Q):  # N g_q = e_src - e_dst
        rows += list(q * R + ls) + list(q * R + ld)
        cols += list(q * E + np.arange(E)) * 2
        vals += [1.0] * E + [-1.0] * E
    A_eq = sp.csr_matrix((vals, (rows, cols)), shape=(Q * R, Q * E + 1))
    b_eq = np.zeros(Q * R)
    b_eq[np.arange(Q) * R + src] += 1.0
    b_eq[np.arange(Q) * R + dst] -= 1.0
    coef = (nbytes[:, None] / (cap[None, :] * T0)).ravel()
    A_ub = sp.hstack([sp.csr_matrix((coef, (np.tile(np.arange(E), Q), np.arange(Q * E))), shape=(E, Q * E)),
                      sp.csr_matrix(-np.ones((E, 1)))], format="csr")
    c = np.zeros(Q * E + 1)
    c[-1] = 1.0
    res = linprog(c, A_ub=A_ub, b_ub=np.zeros(E), A_eq=A_eq, b_eq=b_eq, bounds=(0, None), method="highs")
    assert res.status == 0, res.message
    t = float(res.fun) * T0
    if fixed is not None and (np.asarray(fixed) > 0).any():
        m = np.asarray(fixed) > 0
        t = max(t, float((np.asarray(fixed)[m] / cap_all[m]).max()))
    return t


def cut_time(topo, inside, nbytes_crossing) -> float:
    """Closed form: bytes that must leave the router set ``inside`` over the capacity of the links leaving it."""
    E = int(topo.n_router_links)
    ls, ld = np.asarray(topo.link_src[:E]), np.asarray(topo.link_dst[:E])
    ins = np.isin(ls, inside) & ~np.isin(ld, inside)
    return nbytes_crossing / float(np.asarray(topo.capacity, float)[:E][ins].sum())


def _demand(topo, src, dst, nbytes):
    return lp.RouterDemand(np.asarray(src), np.asarray(dst), np.asarray(nbytes, float), np.zeros(topo.n_links))


def _check_interval(res, ref, rel=REL):
    """The certified lower side is below the reference optimum, the feasible side above it."""
    assert res.completion_time <= ref * (1 + rel), (res.completion_time, ref)
    assert res.completion_time_upper >= ref * (1 - rel), (res.completion_time_upper, ref)
    assert res.completion_time_upper == pytest.approx(res.completion_time * (1 + res.gap), rel=1e-9)


# ---- mixed magnitudes in one LP ----

@pytest.mark.parametrize("small", [1.0, 500.0, 1e3, 1e4])
def test_edge_bound_one_tb_pair_beside_a_small_one_on_mixed_links(small):
    """4x4 torus, dimension 0 at 1e13 B/s, dimension 1 at 1e3 B/s; router 0 sends 1e12 B to router 4 (one
    dimension-0 hop) and ``small`` B to router 1 (one dimension-1 hop): the optimum is the larger cut,
    max(1e12 B / 2e13 B/s, small / 8e3 B/s) (the small pair must cross the 8 slow links out of the plane
    dim1 = 0; the big pair's 2 fast links out of router 0's dimension-0 ring, 1e12 of bytes over them)."""
    topo = ev.torus([4, 4], link_bandwidth=[1e13, 1e3])
    src, dst, b = [0, 0], [4, 1], [1e12, small]
    plane = [r for r in range(16) if r % 4 == 0]  # dim1 coordinate 0
    closed = max(1e12 / 2e13, cut_time(topo, plane, small))
    assert cut_time(topo, plane, small) == pytest.approx(small / 8e3, rel=1e-12)
    ref = ref_min_time(topo, np.array(src), np.array(dst), b)
    assert ref == pytest.approx(closed, rel=REL)
    d = _demand(topo, src, dst, b)
    edge = lp.optimal_bound(topo, d, "edge")
    _check_interval(edge, ref)
    assert edge.completion_time == pytest.approx(ref, rel=1e-6)  # exact, not only valid
    assert edge.completion_time_upper == pytest.approx(ref, rel=1e-5)
    gk = lp.optimal_bound(topo, d, "garg_konemann")
    _check_interval(gk, ref)


def test_edge_bound_mixed_sources_each_its_own_magnitude():
    """Several sources of 1 B .. 1e12 B on a 4-ring with links of 1e3 and 1e13 B/s alternating by direction: the
    interval contains the reference optimum and is tight."""
    topo = ev.torus([6, 2], link_bandwidth=[1e13, 1e3])
    rng = np.random.default_rng(3)
    src = np.array([0, 1, 2, 3, 5, 7, 8, 11])
    dst = np.array([6, 9, 5, 10, 4, 2, 1, 0])
    b = 10.0 ** rng.integers(0, 13, src.size)
    ref = ref_min_time(topo, src, dst, b)
    res = lp.optimal_bound(topo, _demand(topo, src, dst, b), "edge")
    _check_interval(res, ref)
    assert res.gap < 1e-5


@pytest.mark.parametrize("inj, link", [(1e3, 1e13), (1e13, 1e3)])
def test_injection_far_from_link_bandwidth(inj, link):
    """Injection 1e3 B/s beside links of 1e13 (injection-bound) and the reverse: ``evaluate`` certifies a time
    below the reference (router LP and the fixed injection/ejection loads) and below DOR's and the
    k-shortest routing's evaluated times, and its feasible side is above the reference."""
    topo = ev.torus([4, 3], link_bandwidth=link, injection_bandwidth=inj)
    rng = np.random.default_rng(1)
    n = topo.n_nodes
    perm = rng.permutation(n)
    b = np.where(np.arange(n) == 0, 1e12, 1.0 + rng.integers(0, 1000, n).astype(float))
    tr = Traffic(n, np.arange(n), perm, b)
    pl = ev.placement.linear(topo, n)
    d = router_demand(topo, tr, pl)
    ref = ref_min_time(topo, d.src, d.dst, d.nbytes, d.fixed_load)
    for method in ("edge", "garg_konemann"):
        ds = ev.evaluate(topo, tr, pl, "dor", bounds=method)
        lo, up = float(ds.optimal_completion_time), float(ds.optimal_completion_time_upper)
        assert lo <= ref * (1 + REL) and up >= ref * (1 - REL), (method, lo, up, ref)
        assert lo <= float(ds.completion_time) * (1 + 1e-9)
        assert lo == pytest.approx(ref, rel=1e-6 if method == "edge" else 0.02)


# ---- scale covariance ----

def _point(kind):
    rng = np.random.default_rng({"torus": 0, "ring": 1, "dragonfly": 2}[kind])
    if kind == "dragonfly":
        def topo_of(bw):
            return ev.dragonfly(1, 4, 1, bandwidth_p=4 * bw, bandwidth_l=bw, bandwidth_r=0.5 * bw)
    elif kind == "ring":
        def topo_of(bw):
            return ev.torus([6], link_bandwidth=bw, injection_bandwidth=3 * bw)
    else:
        def topo_of(bw):
            return ev.torus([3, 4], link_bandwidth=[bw, 0.5 * bw], injection_bandwidth=2 * bw)
    n = topo_of(1.0).n_nodes
    src = np.arange(n)
    dst = (src + rng.integers(1, n, n)) % n
    b = rng.uniform(0.5, 2.0, n)
    return topo_of, n, src, dst, b


SCALES = [(1e-9, 1e-6), (1e-3, 1e-3), (1e3, 1e2), (1e12, 1e4)]
"""``(bytes factor, bandwidth factor)`` from the base point (bytes ~1e6, bandwidth 1e9): bytes 1e-3 .. 1e18,
bandwidths 1e3 .. 1e13 B/s."""


@pytest.mark.parametrize("kind, method", [("torus", "edge"), ("torus", "garg_konemann"), ("ring", "edge"),
                                          ("dragonfly", "edge"), ("dragonfly", "dragonfly_adaptive")])
def test_scale_covariance_and_routings_above(kind, method):
    """Bytes x s and bandwidths x t multiply the interval by s / t (relative 1e-7) over bytes 1e-3 .. 1e18 and
    bandwidths 1e3 .. 1e13 B/s; the certified side stays below the evaluated time of the routings it bounds and
    (at the base point) below the reference optimum, the feasible side above it."""
    topo_of, n, src, dst, b = _point(kind)
    routings = ("minimal", "valiant") if kind == "dragonfly" else ("dor",)
    pl = ev.placement.linear(topo_of(1.0), n)
    var = "adaptive" if method.startswith("dragonfly") else "optimal"

    def run(bytes_scale, bw, routings=routings[:1]):
        topo = topo_of(bw)
        tr = Traffic(n, src, dst, b * bytes_scale)
        out = []
        for r in routings:
            ds = ev.evaluate(topo, tr, pl, r, bounds=method)
            out.append((float(ds[f"{var}_completion_time"]), float(ds[f"{var}_completion_time_upper"]),
                        float(ds.completion_time)))
        lo, up = out[0][0], out[0][1]
        assert all(x[0] == lo for x in out)
        assert 0 < lo <= min(x[2] for x in out) * (1 + 1e-9), (lo, out)
        return lo, up, topo, tr

    lo1, up1, topo, tr = run(1e6, 1e9, routings)
    if method != "dragonfly_adaptive":
        d = router_demand(topo, tr, pl)
        ref = ref_min_time(topo, d.src, d.dst, d.nbytes, d.fixed_load)
        assert lo1 <= ref * (1 + REL) and up1 >= ref * (1 - REL), (lo1, up1, ref)
    for s, t in SCALES:
        lo, up, _, _ = run(1e6 * s, 1e9 * t)
        assert lo == pytest.approx(lo1 * s / t, rel=REL), (s, t)
        assert up == pytest.approx(up1 * s / t, rel=1e-6), (s, t)


# ---- the mapping search's bound ----

@pytest.mark.parametrize("s, t", [(1e-6, 1e-6), (1e6, 1e-2), (1e12, 1e4)])
def test_mapping_bound_scales_and_bounds(s, t):
    """``mapping_bound`` (bytes ~1e6 x s, bandwidths 1e9 x t, injection 4x the links) scales by s / t and stays
    below DOR's evaluated time of the linear mapping and of a random one."""
    rng = np.random.default_rng(4)
    n = 12
    src = np.r_[np.arange(n), np.arange(n)]
    dst = np.r_[(np.arange(n) + 1) % n, rng.permutation(n)]
    keep = src != dst
    b = rng.uniform(0.5, 2.0, src.size)[keep]
    src, dst = src[keep], dst[keep]

    def value(bs, bw):
        topo = ev.torus([3, 4], link_bandwidth=bw, injection_bandwidth=4 * bw)
        tr = Traffic(n, src, dst, b * bs)
        bound = mapping_bound(topo, tr, "dor").value
        for pl in (ev.placement.linear(topo, n), ev.placement.Placement(rng.permutation(n), n)):
            assert bound <= float(ev.evaluate(topo, tr, pl, "dor").completion_time) * (1 + 1e-9)
        return bound

    base = value(1e6, 1e9)
    assert value(1e6 * s, 1e9 * t) == pytest.approx(base * s / t, rel=REL)
