"""Numbers docs/buyer.md states about the buyer's study (issue 35 item 5), rerun.

The study's default run (`evaluator study buyer --nodes 512,4096 --seeds 4`) takes minutes; each claim here reruns
the points behind one cell of the document's tables: the networks' costs and powers (from the equal-cost
construction alone), and each (size, network, workload) cell of the results table, the best routing(s) of that
network and its mean time over the seeds, from the same points the study evaluates
(:func:`evaluator.studies.buyer.evaluate_point`). A cell whose routing differs, or whose time differs by more
than its printed precision, fails (:func:`tests.claims.check_stated`).
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from evaluator.cost import network_cost
from evaluator.studies.buyer import (DEFAULT_SEEDS, NETWORKS, ROUTINGS, SEEDED, TIE_RTOL, WORKLOADS, equal_networks,
                                     evaluate_point)
from tests.claims import check_stated, stated

DOC = "docs/buyer.md"
COST = "evaluator study buyer --nodes 512,4096 --seeds 4"
POWER = "evaluator study buyer --nodes 512,4096 --seeds 4 --equal power"
CELL_SIZES = (512, 4096)
FULL_SIZES = (512,)
SLOW_CELLS = {
    (4096, "fat_tree", "fft_pencil"): ("ft_adaptive", "a", "dmodk", "is the fastest here, a little ahead of D-mod-k"),
    (4096, "dragonfly", "fft_pencil"): ("ugal", "b", "minimal", "on the Dragonfly, a little ahead of minimal routing"),
}
"""Cells whose best routing takes minutes to rerun: the document names it with a note (a) and states the next
routing's time, which is rerun."""


@pytest.mark.parametrize("equal, command", [("cost", COST), ("power", POWER)])
@pytest.mark.parametrize("n", CELL_SIZES)
def test_networks_cost_and_power(n, equal, command):
    nets = equal_networks(n, equal)
    for fam in NETWORKS:
        topo, value, ok = nets[fam]
        nc = network_cost(topo)
        assert ok or (equal, n, fam) == ("power", 4096, "torus")   # flagged in the document
        head = rf"\| {equal} \| {n:,} \| {fam} \| `{re.escape(topo.name)}` \| {topo.n_nodes:,} \| "
        check_stated(DOC, head + r"([0-9.]+) \|", nc.cost, command=command)
        check_stated(DOC, head + r"[0-9.]+ \| ([0-9.]+) \|", nc.power / 1e3, command=command)


def _best(n: int, fam: str, workload: str) -> tuple[tuple[str, ...], float]:
    topo = equal_networks(n)[fam][0]
    means = {}
    for r in ROUTINGS[fam]:
        draws = DEFAULT_SEEDS if (workload in SEEDED or r == "ecmp") else 1
        times = [evaluate_point(topo, workload, r, n, s)[0] for s in range(draws)]
        means[r] = float(np.mean(times))
    ok = {r: v for r, v in means.items() if math.isfinite(v)}
    lo = min(ok.values())
    return tuple(r for r, v in ok.items() if v <= lo * (1 + TIE_RTOL)), lo


def _cell(n: int, fam: str, workload: str) -> str:
    """The routing(s) the document's results table names in the cell (``"minimal=ugal"``)."""
    k = WORKLOADS.index(workload)
    found = stated(DOC, rf"\| {n:,} \| {fam} \| " + r"[^|]* \| " * k + r"([a-z_=]+) [0-9.]+ (?:ms|us) \|")
    return found[0]


@pytest.mark.parametrize("workload", WORKLOADS)
@pytest.mark.parametrize("fam", NETWORKS)
@pytest.mark.parametrize("n", CELL_SIZES)
def test_results_cell(n, fam, workload):
    """At 512 nodes every routing of the network is rerun (the best is recomputed, ties and all); at 4,096 (whose
    adaptive points take minutes) the first routing the cell names is rerun and its time checked."""
    if (n, fam, workload) in SLOW_CELLS:
        best, note, r, text = SLOW_CELLS[(n, fam, workload)]
        k = WORKLOADS.index(workload)
        stated(DOC, rf"\| {n:,} \| {fam} \| " + r"[^|]* \| " * k + rf"{best} (\({note}\)) \|")
        t = evaluate_point(equal_networks(n)[fam][0], workload, r, n, 0)[0]
        check_stated(DOC, rf"\({note}\) [^(]*`{best}` {text} \({r} next: ([0-9.]+) us\)", t * 1e6, command=COST)
        return
    if n in FULL_SIZES:
        best, t = _best(n, fam, workload)
        names = "=".join(best)
    else:
        names = _cell(n, fam, workload)
        topo = equal_networks(n)[fam][0]
        r = names.split("=")[0]
        draws = DEFAULT_SEEDS if (workload in SEEDED or r == "ecmp") else 1
        t = float(np.mean([evaluate_point(topo, workload, r, n, s)[0] for s in range(draws)]))
    k = WORKLOADS.index(workload)
    unit, scale = ("ms", 1e3) if t >= 1e-3 else ("us", 1e6)
    pattern = (rf"\| {n:,} \| {fam} \| " + r"[^|]* \| " * k + re.escape(names) + rf" ([0-9.]+) {unit} \|")
    check_stated(DOC, pattern, t * scale, command=COST)
