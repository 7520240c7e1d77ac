"""docs/bounds.md, Garg-Konemann and the LP bench: the 512-node instance's plain and tightened intervals, its DOR
value, the Yen-over-DOR and 4-dimension-orders-over-DOR gains of the bench, the 8,192-node edge LP's memory estimate,
the method's defaults, the memory shares above which LPs are refused or columns stop, and the small instances
(tests/claims.py). About 40 s: the plain 2,000 steps (about 30 s) and 300 steps are the slow part, then the small
instances (2 s). The 8,192-node instance's tightened bounds (397 s, most of it HiGHS): certified from the run's
stored last round (tests/lp_certificates.py)."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

from evaluator import lp
from evaluator.bench.lp import _dor_order, dimension_order_paths, many_to_many_instance
from evaluator.lp._flow import RouterDemand
from evaluator.topology import bgq_partition
from tests.claims import check_stated, stated

DOC = "docs/bounds.md"
GK = "garg_konemann(topo, demand, max_steps=300)"
BENCH = "evaluator bench --only lp"


def _rng():
    """`default_rng(0)` after the old bench's three dimension-order draws (the doc's instance)."""
    rng = np.random.default_rng(0)
    for _ in range(3):
        rng.permutation(5)
    return rng


def _demand(topo, rng, nbytes=8e6, per_source=8) -> RouterDemand:
    """The bench's constant-ratio instance (evaluator/bench/lp.py, many_to_many_instance) as a router demand."""
    p = topo.n_nodes
    dests = np.stack([rng.choice(np.arange(p // 2, p), per_source, replace=False) for _ in range(p // 16)])
    src, dst = np.repeat(np.arange(p // 16), per_source), dests.reshape(-1)
    fixed = np.zeros(topo.n_links)
    np.add.at(fixed, topo.injection_link(src), nbytes)
    np.add.at(fixed, topo.ejection_link(dst), nbytes)
    keys, inv = np.unique(topo.node_router[src] * topo.n_routers + topo.node_router[dst], return_inverse=True)
    return RouterDemand(keys // topo.n_routers, keys % topo.n_routers,
                        np.bincount(inv, minlength=keys.size) * nbytes, fixed)


@pytest.fixture(scope="module")
def gk512():
    topo = bgq_partition([1, 1, 1, 1])
    d = _demand(topo, _rng())
    plain = lp.garg_konemann(topo, d, max_steps=300, refine=False)
    tight = lp.garg_konemann(topo, d)
    dor = lp.path_lp(*many_to_many_instance(topo, _rng(), _dor_order(topo)))
    return topo, plain, tight, lp.z_from_objective(dor, lp.solve_highs(dor).objective)


def test_plain_300_steps_and_the_tightening(gk512):
    topo, plain, tight, _ = gk512
    assert plain.steps == 300 and tight.rounds == 1 and tight.steps == 50
    exact = tight.z  # certified: the tightened interval is [125.000, 125.000] (gap 3e-11)
    assert tight.gap < 1e-9
    row = r"\| plain, 300 steps \(before\) \| 300 \| \|"
    check_stated(DOC, row + r" ([0-9.]+) \|", plain.z, command=GK)
    check_stated(DOC, row + r" [0-9.]+ \| ([0-9.]+) \|", plain.z_upper, command=GK)
    check_stated(DOC, row + r" [0-9.]+ \| [0-9.]+ \| ([0-9.]+)% \|", plain.gap * 100, command=GK)
    check_stated(DOC, row + r" [0-9.]+ \| [0-9.]+ \| [0-9.]+% \| (-[0-9.]+)% \|", (plain.z / exact - 1) * 100,
                 command=GK)
    check_stated(DOC, r"lower bound ([0-9.]+) \(3\.3% below", plain.z, command=GK)
    check_stated(DOC, r"lower bound 120\.9 \(([0-9.]+)% below the optimum", (1 - plain.z / exact) * 100, command=GK)
    check_stated(DOC, r"300 plain steps left the flow ([0-9.]+)% under", (1 - plain.z / exact) * 100, command=GK)
    check_stated(DOC, r"certified upper bound ([0-9.]+), a reported gap", plain.z_upper, command=GK)
    check_stated(DOC, r"a reported gap of ([0-9.]+)%;", plain.gap * 100, command=GK)
    check_stated(DOC, r"and a certified gap of ([0-9.]+)% \(2,000", plain.gap * 100, command=GK)
    tight_row = r"\| with the tightening \(default\) \| 50 \| 1 \|"
    check_stated(DOC, tight_row + r" ([0-9.]+) \|", tight.z, command=GK)
    check_stated(DOC, tight_row + r" [0-9.]+ \| ([0-9.]+) \|", tight.z_upper, command=GK)
    check_stated(DOC, r"both bounds ([0-9.]+) \(gap 3e-11\)", tight.z, command=GK)
    check_stated(DOC, r"\| exact edge LP, HiGHS IPM \| \| \| ([0-9.]+) \|", exact, command=GK)
    check_stated(DOC, r"\(Z = ([0-9.]+) /s, gap 1e-11\)", exact, command=GK)


def test_dor_z_of_the_instance(gk512):
    check_stated(DOC, r"against Z = ([0-9.]+) for DOR", gk512[3], command=GK)


def test_yen_gain_over_dor_median():
    topo = bgq_partition([1, 1, 1, 1])

    def z(x):
        return lp.z_from_objective(x, lp.solve_highs(x).objective)

    # the 4 dimension-order paths of the first run: BG/Q's longest-first order and the old bench's 3 random
    # orders (the draws that :func:`_rng` skips)
    first = np.random.default_rng(0)
    orders = [_dor_order(topo)] + [tuple(int(k) for k in first.permutation(5)) for _ in range(3)]
    gain, gain4 = [], []
    p = topo.n_nodes
    src = np.repeat(np.arange(p // 16), 8)
    for i in range(8):
        _, _, nbytes, cap, fixed = one = many_to_many_instance(topo, np.random.default_rng(i), _dor_order(topo))
        dor = z(lp.path_lp(*one))
        gain.append(z(lp.path_lp(*many_to_many_instance(topo, np.random.default_rng(i)))) / dor)
        rng = np.random.default_rng(i)  # the instance's destinations, drawn again (as many_to_many_instance)
        dst = np.stack([rng.choice(np.arange(p // 2, p), 8, replace=False) for _ in range(p // 16)]).reshape(-1)
        inc, pair = dimension_order_paths(topo, topo.node_router[src], topo.node_router[dst], orders)
        gain4.append(z(lp.path_lp(inc, pair, nbytes, cap, fixed)) / dor)
    check_stated(DOC, r"instead of one DOR path raise Z ([0-9.]+)x", float(np.median(gain)), command=BENCH)
    check_stated(DOC, r"random orders below\) raise it ([0-9.]+)x on the same 8 instances", float(np.median(gain4)),
                 command="dimension_order_paths")


def test_edge_lp_memory_estimate_8192_nodes():
    big = bgq_partition([2, 2, 2, 2])
    size = lp.edge_size(big, _demand(big, np.random.default_rng(1)))
    assert size["sources"] == 512
    check_stated(DOC, r"would need about ([0-9]+) GB\)", size["bytes"] / 1e9, command=BENCH)
    assert round(size["nnz"] / 1e6) == int(stated(DOC, r"its edge LP, ([0-9]+) million nonzeros")[0])


def test_tightened_bounds_8192_nodes():
    """'50 steps and 2 rounds, both bounds 78.125 /s (certified gap 3e-10)': the run's last round, stored
    (:func:`tests.lp_certificates.gk_certified`), gives both bounds again here: its flow over the stored paths
    (each checked to join its pair) made feasible, and the dual bound of its lengths on the full graph."""
    from tests.lp_certificates import bounds_gk_8192_instance, gk_certified

    z, z_upper = gk_certified("bounds-gk-8192", 0, *bounds_gk_8192_instance())
    assert 0 < z and z_upper / z - 1 < 1e-9, (z, z_upper)
    head = r"50 steps and 2\s+rounds, both bounds "
    for value in (z, z_upper):
        check_stated(DOC, head + r"([0-9.]+) /s", value, command="python -m tests.lp_certificates bounds-gk-8192")


def test_defaults_and_the_bytes_per_nonzero():
    par = inspect.signature(lp.garg_konemann).parameters
    check_stated(DOC, r"Fleischer's update; `eps` ([0-9.]+)\)", par["eps"].default, command="garg_konemann")
    check_stated(DOC, r"`target_gap` \(([0-9.]+)% by default\)", par["target_gap"].default * 100,
                 command="garg_konemann")
    check_stated(DOC, r"nonzeros, ([0-9]+) bytes per nonzero", lp.BYTES_PER_NNZ, command="edge_size")


def test_warm_start_iteration_cut():
    """The bench's warm-start gain, from the iteration counts its table states (a consistency check of the
    stated ratio: the counts are the bench's measurements, not rerun, PDHG's compilation alone takes minutes)."""
    cold = int(stated(DOC, r"\| ([0-9,]+) iterations in all;")[0].replace(",", ""))
    warm = int(stated(DOC, r"\| ([0-9,]+) iterations \|")[0].replace(",", ""))
    check_stated(DOC, r"Warm starts cut iterations by ([0-9]+)%", (1 - warm / cold) * 100, command=BENCH)


def _refusal_fraction(need: int, refused, monkeypatch) -> float:
    """The fraction of the available memory (``EVALUATOR_MEMORY_LIMIT``) above which an LP of ``need`` bytes is
    refused, found by bisection on the limit (``refused(): bool`` runs the library's check)."""
    lo, hi = 0.05, 1.0  # need / limit: accepted at lo, refused at hi
    for _ in range(30):
        mid = (lo + hi) / 2
        monkeypatch.setenv("EVALUATOR_MEMORY_LIMIT", str(int(need / mid)))
        lo, hi = (lo, mid) if refused() else (mid, hi)
    return (lo + hi) / 2


def test_lps_refused_above_80_percent_of_memory(monkeypatch):
    import evaluator as ev
    from evaluator.errors import ResourceError
    from evaluator.lp._dragonfly import check_adaptive_size

    topo = ev.torus((4, 4))
    d = RouterDemand(np.array([0, 5]), np.array([10, 15]), np.array([1e6, 1e6]), np.zeros(topo.n_links))

    def edge_refused():
        try:
            lp.edge_bound(topo, d)
        except ResourceError:
            return True
        return False

    frac = _refusal_fraction(lp.edge_size(topo, d)["bytes"], edge_refused, monkeypatch)
    check_stated(DOC, r"an LP whose estimate exceeds ([0-9]+)% of available memory is refused", frac * 100,
                 command="edge_size")
    df = ev.dragonfly(2, 4, 2)

    def adaptive_refused():
        try:
            check_adaptive_size(df)
        except ResourceError:
            return True
        return False

    frac = _refusal_fraction(lp.adaptive_size(df)["bytes"], adaptive_refused, monkeypatch)
    check_stated(DOC, r"An LP whose estimate exceeds ([0-9]+)% of the available memory is refused with a "
                 r"`ResourceError` naming it", frac * 100, command="adaptive_size")


def test_plain_2000_steps():
    """The table's second row and the prose's "2,000 steps: 4.2%": the same instance, plain, 2,000 steps (about
    30 s: the one run of this length; the 300-step row is :func:`gk512`'s)."""
    topo = bgq_partition([1, 1, 1, 1])
    d = _demand(topo, _rng())
    plain = lp.garg_konemann(topo, d, max_steps=2000, refine=False)
    exact = lp.garg_konemann(topo, d).z  # the tightened interval, certified to 3e-11
    assert plain.steps == 2000
    cmd = "garg_konemann(topo, demand, max_steps=300)"  # the page's call, max_steps=2,000 for this row
    row = r"\| plain, 2,000 steps \(before\) \| 2,000 \| \|"
    check_stated(DOC, row + r" ([0-9.]+) \|", plain.z, command=cmd)
    check_stated(DOC, row + r" [0-9.]+ \| ([0-9.]+) \|", plain.z_upper, command=cmd)
    check_stated(DOC, row + r" [0-9.]+ \| [0-9.]+ \| ([0-9.]+)% \|", plain.gap * 100, command=cmd)
    check_stated(DOC, row + r" [0-9.]+ \| [0-9.]+ \| [0-9.]+% \| (-[0-9.]+)% \|", (plain.z / exact - 1) * 100,
                 command=cmd)
    check_stated(DOC, r"\(2,000 steps: ([0-9.]+)%, in", plain.gap * 100, command=cmd)


def test_adaptive_size_at_most_twice_the_lp():
    """The Dragonfly adaptive LP's size estimate against the LP built, on the three Dragonflies and the traffics of
    tests/test_lp.py's test_dragonfly_adaptive_size_estimate_bounds_the_lp_it_builds: at most 2x (the largest
    ratio, rounded)."""
    import evaluator as ev
    from evaluator.lp.bounds import router_demand
    from evaluator.traffic import Traffic
    from tests.test_lp import _random_point

    worst = 0.0
    for dims in ((1, 4, 1), (2, 4, 2), (2, 3, 1)):
        for router in (False, True):
            topo = ev.dragonfly(*dims)
            rng = np.random.default_rng(4)
            n = topo.n_nodes
            cap = np.asarray(topo.capacity, dtype=np.float64)
            every = np.nonzero(~np.eye(n, dtype=bool))
            points = [_random_point(topo, rng, k) for k in (5, n, 20 * n)]
            points.append((Traffic(n, every[0], every[1], np.ones(every[0].size)), ev.placement.linear(topo, n)))
            for tr, pl in points:
                d = router_demand(topo, tr, pl)
                inc, pair, gbytes, fixed, _ = lp.adaptive_classes(topo, d, router)
                built = lp.path_lp(inc, pair, gbytes, cap, fixed)
                est = lp.adaptive_size(topo, d, router)
                for k, actual in (("nnz", built.nnz), ("vars", built.n_vars),
                                  ("rows", built.A_eq.shape[0] + built.A_ub.shape[0])):
                    assert actual <= est[k], k
                    worst = max(worst, est[k] / actual)
    print("largest estimate / LP:", worst)
    assert worst <= 2
    check_stated(DOC, r"nonzeros are at least the LP's and at most ([0-9]+)x them", worst,
                 command="adaptive_size")


def test_sweep_refused_above_80_percent_of_memory(tmp_path, monkeypatch):
    """*Refused before running*: the sweep driver's check (evaluator.sweep.bounds.check_sweep_bounds, on
    tests/test_sweep_bounds.py's 4x4 torus sweep with ``bounds=edge``) refuses above this fraction of the memory."""
    from evaluator.errors import ResourceError
    from evaluator.sweep import bounds as sb
    from tests.test_sweep_bounds import TORUS, TORUS_AXES, make_plan

    plan = make_plan("torus_bounds", TORUS + ["bounds=edge"], tmp_path, TORUS_AXES)
    needs = []
    real = sb.check_memory

    def spy(field, value, need_bytes, *args, **kw):
        needs.append(need_bytes)
        return real(field, value, need_bytes, *args, **kw)

    monkeypatch.setattr(sb, "check_memory", spy)
    sb.check_sweep_bounds(plan)
    assert len(set(needs)) == 1  # one topology: one estimate

    def refused():
        try:
            sb.check_sweep_bounds(plan)
        except ResourceError:
            return True
        return False

    frac = _refusal_fraction(needs[0], refused, monkeypatch)
    check_stated(DOC, r"naming the estimate when it exceeds ([0-9]+)% of the available memory", frac * 100,
                 command="EVALUATOR_MEMORY_LIMIT")


def test_restricted_lp_capped_in_entries_and_memory(monkeypatch):
    """The tightening's restricted LP: its cap on path-link entries (the columns collected stop there), fixed, and
    as a fraction of the available memory (``EVALUATOR_MEMORY_LIMIT``), read from the cap a run takes."""
    import evaluator as ev
    from evaluator.lp import _flow

    caps = []

    class Columns(_flow._Columns):
        def __init__(self, max_nnz):
            caps.append(max_nnz)
            super().__init__(max_nnz)

    monkeypatch.setattr(_flow, "_Columns", Columns)
    topo = ev.torus((4, 4))
    d = RouterDemand(np.array([0, 5]), np.array([10, 15]), np.array([1e6, 1e6]), np.zeros(topo.n_links))
    cmd = "garg_konemann"
    for limit in (1e15, 1e8):  # plenty (the fixed cap binds), 100 MB (the memory's share binds)
        monkeypatch.setenv("EVALUATOR_MEMORY_LIMIT", str(int(limit)))
        lp.garg_konemann(topo, d)
    assert len(caps) == 2 and caps[1] < caps[0]
    check_stated(DOC, r"the restricted LP is capped at ([0-9,]+) path-link entries", caps[0], command=cmd)
    share = caps[1] * lp.BYTES_PER_NNZ / 1e8
    check_stated(DOC, r"path-link entries and ([0-9]+)% of the available memory", share * 100, command=cmd)


SMALL = "garg_konemann(topo, demand, max_steps=300, refine=False)"


def test_small_instances_tightened_and_plain():
    """The page's 16 small instances: 4 random traffics each (``default_rng(0)``, tests/test_lp.py's
    ``_random_point``, n/2 to 2n flows on n nodes) on a 4x4x2 and a 4x4 torus, a 3x4 mesh-torus with 2 nodes per
    router and DF(2,4,2): the tightened interval (the defaults) and plain 300 steps against HiGHS's edge LP."""
    import evaluator as ev
    from evaluator.lp.bounds import router_demand
    from tests.test_lp import _random_point

    rng = np.random.default_rng(0)
    rows = []  # (rounds, tightened gap, plain gap, plain error)
    for topo in (ev.torus([4, 4, 2]), ev.torus([4, 4]), ev.torus([3, 4], wrap=[False, True], nodes_per_router=2),
                 ev.dragonfly(2, 4, 2)):
        for _ in range(4):
            n = topo.n_nodes
            tr, pl = _random_point(topo, rng, int(rng.integers(n // 2, 2 * n)))
            d = router_demand(topo, tr, pl)
            exact = lp.optimal_bound(topo, d, "edge").z
            tight = lp.garg_konemann(topo, d)
            plain = lp.garg_konemann(topo, d, max_steps=300, refine=False)
            for b in (tight, plain):  # the certified interval holds the optimum
                assert b.z <= exact * (1 + 1e-7) and b.z_upper >= exact * (1 - 1e-7)
            rows.append((tight.rounds, tight.gap, plain.gap, 1 - plain.z / exact))
    print(rows)
    rounds, gaps = [r[0] for r in rows], np.array([r[1] for r in rows])
    stopped = gaps[gaps > 1e-10]  # the others met the optimum (gaps of 1e-11 and below)
    target = inspect.signature(lp.garg_konemann).parameters["target_gap"].default
    assert (stopped <= target).all() and gaps.max() > 0
    assert all(g <= target for r, g in zip(rounds, gaps) if r == 0)  # no round: the plain steps met it
    assert int(stated(DOC, r"in 0-([0-9]+) rounds \(0 where")[0]) == max(rounds) and min(rounds) == 0
    assert int(stated(DOC, r"but on ([0-9]+), which stopped at certified gaps")[0]) == stopped.size
    check_stated(DOC, r"certified gaps of at most ([0-9.]+)% \(within", stopped.max() * 100, command=SMALL)
    check_stated(DOC, r"plain 300 steps left certified gaps of up to ([0-9.]+)%", max(r[2] for r in rows) * 100,
                 command=SMALL)
    check_stated(DOC, r"and errors of up to ([0-9.]+)%", max(r[3] for r in rows) * 100, command=SMALL)
