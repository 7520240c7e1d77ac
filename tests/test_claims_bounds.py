"""docs/bounds.md's numbers, rerun (tests/claims.py): the certified eval example, the tornado, the LP sizes."""

from __future__ import annotations

import numpy as np

import evaluator as ev
from evaluator import lp
from evaluator.lp.bounds import optimal
from evaluator.traffic import Traffic
from tests.claims import check_stated

DOC = "docs/bounds.md"


def test_eval_example_certified_lower_and_feasible_sides():
    """`evaluator eval traffic=all_to_all placement=linear routing=minimal bounds=true` (DF(4,8,4), 1 MB per
    pair: the config defaults)."""
    from evaluator import config as C

    point = C.build(C.to_object(C.compose(["traffic=all_to_all", "placement=linear", "routing=minimal"])))
    ds = ev.evaluate(point.topology, point.traffic, point.placement, point.routing, bounds=True)
    lower, upper = float(ds.optimal_completion_time), float(ds.optimal_completion_time_upper)
    check_stated(DOC, r"now prints `optimal >= ([0-9.]+) s", lower, command="evaluator eval traffic=all_to_all")
    check_stated(DOC, r"feasible ([0-9.]+) s;", upper, command="evaluator eval traffic=all_to_all")
    check_stated(DOC, r"printed `optimal ([0-9.]+) s", upper, command="evaluator eval traffic=all_to_all")
    assert float(ds.routing_efficiency) <= 1 + 1e-12
    check_stated(DOC, r"routing_efficiency ([0-9.]+)` \(the exchange", float(ds.routing_efficiency),
                 command="evaluator eval traffic=all_to_all")
    # before 2026-11-25 the efficiency was the feasible side over the achieved time (and so could exceed 1)
    check_stated(DOC, r"routing efficiency ([0-9.]+)`; it now prints", upper / float(ds.completion_time),
                 command="evaluator eval traffic=all_to_all")


def test_tornado_numbers():
    topo = ev.dragonfly(2, 4, 2)
    N, per = topo.n_nodes, topo.a * topo.p
    src = np.arange(N)
    tr = Traffic(N, src, (src + 7 * per) % N, np.full(N, 1e6))
    pl = ev.placement.linear(topo, N)
    cmd = "test_tornado_valiant_router_within_the_adaptive_bound"
    for r, pat in (("minimal", r"minimal takes ([0-9.]+) us"), ("valiant", r"valiant ([0-9.]+) us"),
                   ("valiant_router", r"valiant_router ([0-9.]+) us")):
        check_stated(DOC, pat, float(ev.evaluate(topo, tr, pl, r).completion_time) * 1e6, command=cmd)
    adaptive = optimal(topo, tr, pl, "dragonfly_adaptive").completion_time
    check_stated(DOC, r"says ([0-9.]+) us \(beaten", adaptive * 1e6, command=cmd)
    vr = float(ev.evaluate(topo, tr, pl, "valiant_router").completion_time)
    check_stated(DOC, r"\(beaten, ([0-9.]+)x\)", vr / adaptive, command=cmd)
    check_stated(DOC, r"`dragonfly_adaptive_router` ([0-9.]+) us",
                 optimal(topo, tr, pl, "dragonfly_adaptive_router").completion_time * 1e6, command=cmd)


def test_adaptive_lp_sizes():
    cmd = "print(lp.adaptive_size(ev.dragonfly(4, 8, 4), router=True))"
    df = ev.dragonfly(4, 8, 4)
    with_router, without = lp.adaptive_size(df, router=True), lp.adaptive_size(df)
    check_stated(DOC, r"the LP has ([0-9,]+) classes", with_router["classes"], command=cmd)
    check_stated(DOC, r"classes and ([0-9,]+) nonzeros", with_router["nnz"], command=cmd)
    check_stated(DOC, r"against ([0-9,]+) and [0-9,]+ \(", without["classes"], command=cmd)
    check_stated(DOC, r"against [0-9,]+ and ([0-9,]+) \(", without["nnz"], command=cmd)


def test_the_claim_check_fails_on_drift_and_on_a_missing_command(tmp_path):
    """tests/claims.py itself: a number off by more than half its last digit fails, within it passes."""
    import pytest

    from tests.claims import precision

    doc = tmp_path / "doc.md"
    doc.write_text("The ratio is\n**2.065x** (`evaluator sweep\nsweeps=x`).\n")
    assert precision("2.065") == pytest.approx(5e-4) and precision("958") == 0.5 and precision("1,234.5") == 0.05
    check_stated(str(doc), r"\*\*([0-9.]+)x\*\*", 2.0654, command="evaluator sweep sweeps=x")
    with pytest.raises(AssertionError, match="regenerate"):
        check_stated(str(doc), r"\*\*([0-9.]+)x\*\*", 2.0656, command="evaluator sweep sweeps=x")
    with pytest.raises(AssertionError, match="without naming its command"):
        check_stated(str(doc), r"\*\*([0-9.]+)x\*\*", 2.065, command="evaluator sweep sweeps=y")
    with pytest.raises(AssertionError, match="no text matches"):
        check_stated(str(doc), r"ratio was ([0-9.]+)", 2.065, command="evaluator sweep sweeps=x")
