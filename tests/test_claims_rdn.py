"""Numbers docs/rdn.md states about the RDN study, rerun (issue 23, items 5 and 8; issue 34: seeds).

Every figure that depends on the TDN's random mapping is stated as the mean over the study's seeds, then
``[min, max]`` over them; each of the three is checked. The study on DF(4, 8, 4, 32) takes about 20 minutes of CPU,
almost all of it 30 adaptive-bound LPs: it is rerun here whole except for the solver, whose stored solutions
(:mod:`tests.lp_certificates`) the library certifies on the LPs it builds now (a feasible routing and weak duality:
each bound pinned to 1e-6, or the test fails and names the command that regenerates them).
The shrunken variant docs/rdn.md states with its own command, DF(2, 4, 2, 8) (stencil and all-to-all, 2, 4 and 8
groups, both bounds, 10 seeds), is rerun whole; the workload's speedup table on DF(2, 4, 2, 8) (every pattern)
shares its stencil and all-to-all rows (a point's draws do not depend on which other points run), so those rows
are checked from the same run, and its neighbouring row from a run of that pattern alone.
Each stated number must equal the tool's to its printed precision (:func:`tests.claims.check_stated`).
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from evaluator.studies.rdn import RdnMachine, allocation_mode_study
from tests.claims import check_stated
from tests.helpers import once

DOC = "docs/rdn.md"
SMALL = "evaluator study rdn --machine 2,4,2,8 --groups 2,4,8 --patterns stencil,all_to_all " \
        "--bounds adaptive,optimal"
TABLE = "evaluator study rdn --machine 2,4,2,8 --groups 2,4,8 --speedup-out results/rdn/speedup.nc"
TABLE_OBLIVIOUS = TABLE + " --baseline oblivious"
DF4 = "evaluator study rdn --machine 4,8,4,32 --groups 16 --patterns stencil"


def _study(*args, **kwargs):
    """``allocation_mode_study`` without its UGAL-G columns (``adaptive=()``): no number these tests check depends on
    them (the oblivious routings, the bounds, RDN-GRAP and the gains against those are computed apart from UGAL-G,
    whose columns the page states none of), and UGAL-G's fixed point is about half of the shrunken study's CPU and
    three quarters of DF(4, 8, 4, 32)'s oblivious columns."""
    ds = allocation_mode_study(*args, adaptive=(), **kwargs)
    assert "tdn_ugal_time_bg" not in ds or bool(np.isnan(ds.tdn_ugal_time_bg).all())
    return ds


@pytest.fixture(scope="module")
@once
def small():
    return _study(RdnMachine(2, 4, 2, 8), groups=(2, 4, 8), patterns=("stencil", "all_to_all"),
                  background=0.26, bounds=("adaptive", "optimal"), n_seeds=10)


@pytest.fixture(scope="module")
@once
def neighbouring():
    """The speedup table's neighbouring row: the command's study has the adaptive bound only (the default)."""
    return _study(RdnMachine(2, 4, 2, 8), groups=(2, 4, 8), patterns=("neighbouring",),
                  background=0.26, bounds=("adaptive",), n_seeds=10)


@pytest.fixture(scope="module")
@once
def df4():
    """DF(4, 8, 4, 32)'s stencil at 16 and 32 groups, the stated command's draws and bounds, its 30 LPs replayed
    from their stored solutions and certified (:func:`tests.lp_certificates.replayed`)."""
    from tests.lp_certificates import rdn_df4_study, replayed

    with replayed("rdn-df4") as intervals:
        ds = rdn_df4_study()
    assert len(intervals) == 30 and bool(np.isfinite(ds.tdn_adaptive_time_bg).all())
    return ds


NUM = r"[+-]?[0-9][0-9.,]*"


def _cell(table: str, first: str, k: int, suffix: str = "", part: str = "mean", spread: bool = True) -> str:
    """Regex of the ``k``-th cell (0-based, after the row's leading cells ``first``) of a row of ``table`` (the
    row's tag, a comment at its end), the ``part`` (``mean``, ``min`` or ``max``) of a cell ``M [A, B]`` as
    group 1 (``spread=False``: a cell of one number)."""
    skip = r"(?:[^|\n]*\|)" + "{" + str(k) + "}"
    sfx = re.escape(suffix)
    grab = {p: (f"({NUM})" if p == part else NUM) + sfx for p in ("mean", "min", "max")}
    body = rf"{grab['mean']} \[{grab['min']}, {grab['max']}\]" if spread else grab["mean"]
    # the row's own tag is the next comment (tests.claims matches on the text with whitespace runs as one space)
    return rf"\| {first} \|{skip} *{body} *\|(?=(?:(?!<!--).)*<!-- {table} -->)"


def _check_spread(ds, name: str, table: str, first: str, k: int, suffix: str, scale: float, command: str) -> None:
    """The mean, min and max over the seeds of ``name`` at the cell."""
    pt = dict(pattern=first.split(r" \|")[0], groups=int(first.rsplit(" ", 1)[1]))
    for part in ("mean", "min", "max"):
        value = scale * float(ds[f"{name}_{part}"].sel(**pt))
        check_stated(DOC, _cell(table, first, k, suffix, part), value, command=command)


ROWS = [("stencil", q) for q in (2, 4, 8)] + [("all_to_all", q) for q in (2, 4, 8)]


@pytest.mark.parametrize("pattern,q", ROWS)
def test_shrunken_study_times_and_gains(small, pattern, q):
    first = rf"{pattern} \| {q}"
    rdn = float(small.rdn_time_bg.sel(pattern=pattern, groups=q)) * 1e6      # no seed: GRAP is not random
    check_stated(DOC, _cell("shrunken", first, 0, spread=False), rdn, command=SMALL)
    cells = [(v, "", 1e6) for v in ("tdn_oblivious_time_bg", "tdn_adaptive_time_bg", "tdn_optimal_time_bg")]
    cells += [(f"gain_{b}", "x", 1.0) for b in ("adaptive", "oblivious", "optimal")]
    cells += [(f"gain_{b}_no_bg", "x", 1.0) for b in ("adaptive", "oblivious")]
    for k, (name, suffix, scale) in enumerate(cells, start=1):
        _check_spread(small, name, "shrunken", first, k, suffix, scale, SMALL)


@pytest.mark.parametrize("pattern,q", ROWS)
def test_shrunken_background_slowdown(small, pattern, q):
    for k, rt in enumerate(("minimal", "valiant", "valiant_router", "adaptive", "optimal")):
        _check_spread(small, f"tdn_bg_slowdown_{rt}", "shrunken-bg", rf"{pattern} \| {q}", k, "%", 100.0, SMALL)


@pytest.mark.parametrize("mode,pattern", [("minimal_balance, custom_balance", "stencil"),
                                          ("custom", "neighbouring"), ("adaptive", "all_to_all")])
def test_workload_speedup_table_rows(small, neighbouring, mode, pattern):
    """The speedup table's ratios (against the ideal adaptive bound, the default baseline, and against the fastest
    oblivious routing) on DF(2, 4, 2, 8): mean over the seeds [min, max]."""
    ds = neighbouring if pattern == "neighbouring" else small
    first = re.escape(mode) + r" \([a-z_-]+\)"
    for k, q in enumerate((2, 4, 8)):
        for part in ("mean", "min", "max"):
            for table, b, command in (("speedup-table", "adaptive", TABLE),
                                      ("speedup-table-oblivious", "oblivious", TABLE_OBLIVIOUS)):
                value = float(ds[f"gain_{b}_{part}"].sel(pattern=pattern, groups=q))
                check_stated(DOC, _cell(table, first, k, "x", part), value, command=command)


def test_shrunken_headline(small):
    """The sentence that states the shrunken whole-machine stencil gain at both ends."""
    pt = dict(pattern="stencil", groups=8)
    head = r"DF\(2, 4, 2, 8\) the whole-machine stencil gains "
    for part, k in (("mean", 0), ("min", 1), ("max", 2)):
        grab = [NUM] * 3
        grab[k] = f"({NUM})"
        adaptive = rf"{head}{grab[0]}x \[{grab[1]}x, {grab[2]}x\] against the ideal adaptive"
        check_stated(DOC, adaptive, float(small[f"gain_adaptive_{part}"].sel(**pt)), command=SMALL)
        oblivious = rf"{head}{NUM}x \[{NUM}x, {NUM}x\] against the ideal adaptive bound and " \
                    rf"{grab[0]}x \[{grab[1]}x, {grab[2]}x\] against"
        check_stated(DOC, oblivious, float(small[f"gain_oblivious_{part}"].sel(**pt)), command=SMALL)
        optimum = rf"{head}[^(]*\(against the optimum {grab[0]}x \[{grab[1]}x, {grab[2]}x\]\)"
        check_stated(DOC, optimum, float(small[f"gain_optimal_{part}"].sel(**pt)), command=SMALL)
    assert np.isfinite(small.gain_optimal).all()


@pytest.mark.parametrize("q", (16, 32))
def test_df4_table(df4, q):
    """DF(4, 8, 4, 32): RDN-GRAP's time, the TDN's fastest oblivious routing, its adaptive bound, the gains against
    both, and what the background costs each."""
    first = rf"stencil \| {q}"
    rdn = float(df4.rdn_time_bg.sel(pattern="stencil", groups=q)) * 1e6
    check_stated(DOC, _cell("df4", first, 0, spread=False), rdn, command=DF4)
    for k, (name, suffix, scale) in enumerate((("tdn_oblivious_time_bg", "", 1e6), ("tdn_adaptive_time_bg", "", 1e6),
                                               ("gain_adaptive", "x", 1.0), ("gain_oblivious", "x", 1.0),
                                               ("gain_adaptive_no_bg", "x", 1.0), ("gain_oblivious_no_bg", "x", 1.0)),
                                              start=1):
        _check_spread(df4, name, "df4", first, k, suffix, scale, DF4)
    for k, rt in enumerate(("minimal", "valiant", "valiant_router", "adaptive")):
        _check_spread(df4, f"tdn_bg_slowdown_{rt}", "df4-bg", first, k, "%", 100.0, DF4)


def test_df4_against_the_paper(df4):
    """The 'against the paper's statements' row repeats the table's gains at 16 and 32 groups, against the adaptive
    bound and against the oblivious routings."""
    row = r"\| 3-D stencil: about 30% at every size \| DF\(4, 8, 4, 32\) at 16 and 32 groups[^|]*?the next row \| " \
          r"<!-- cited --> \| \| "
    pair = rf"{NUM}x \[{NUM}x, {NUM}x\] and {NUM}x \[{NUM}x, {NUM}x\]"
    for part in ("mean", "min", "max"):
        for k, q in enumerate((16, 32)):
            grab = [NUM] * 6
            grab[3 * k + ("mean", "min", "max").index(part)] = f"({NUM})"
            ends = rf"{grab[0]}x \[{grab[1]}x, {grab[2]}x\] and {grab[3]}x \[{grab[4]}x, {grab[5]}x\]"
            for b, pattern in (("adaptive", row + ends + " against ideal adaptive routing; "),
                               ("oblivious", row + pair + " against ideal adaptive routing; " + ends +
                                " against the oblivious routings")):
                value = float(df4[f"gain_{b}_{part}"].sel(pattern="stencil", groups=q))
                check_stated(DOC, pattern, value, command=DF4)


WORKLOAD_DOC = "docs/workload.md"
WORKLOAD_OBLIVIOUS = "evaluator study rdn --machine 2,4,2,8 --groups 2,4,8 --baseline oblivious"


def test_workload_doc_stencil_gain_on_the_shrunken_machine(small):
    """docs/workload.md ('A table belongs to the machine it was computed on'): the 3-D stencil on 8 groups of
    DF(2, 4, 2, 8) against the fastest oblivious routing (the upper end) and the ideal adaptive bound (the
    conservative end), the means over the seeds (the same draws as above)."""
    value = float(small.gain_oblivious_mean.sel(pattern="stencil", groups=8))
    check_stated(WORKLOAD_DOC, r"the 3-D stencil on 8 groups gains ([0-9.]+) against the TDN's fastest oblivious "
                 r"routing on the 64-node DF\(2, 4, 2, 8\)", value, command=WORKLOAD_OBLIVIOUS)
    conservative = float(small.gain_adaptive_mean.sel(pattern="stencil", groups=8))
    check_stated(WORKLOAD_DOC, r"DF\(2, 4, 2, 8\) \(the upper end; ([0-9.]+) against the ideal adaptive bound, the "
                 r"conservative end;", conservative, command="evaluator study rdn --machine 2,4,2,8 --groups 2,4,8")
