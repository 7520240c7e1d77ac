"""Numbers docs/rdn.md states about the RDN study, rerun (issue 23, items 5 and 8).

The study on DF(4, 8, 4, 32) and on the paper's machine takes minutes to hours (LPs of a million nonzeros): its
numbers name their command and are not rerun. The shrunken variant docs/rdn.md states with its own command,
DF(2, 4, 2, 8) (stencil and all-to-all, 2, 4 and 8 groups, both bounds), takes about a minute and is rerun here;
the workload's speedup table on DF(2, 4, 2, 8) (every pattern) shares its stencil and all-to-all rows (the
random mapping of a point does not depend on which patterns run), so those rows are checked from the same run.
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


@pytest.fixture(scope="module")
@once
def small():
    return allocation_mode_study(RdnMachine(2, 4, 2, 8), groups=(2, 4, 8), patterns=("stencil", "all_to_all"),
                                 background=0.26, bounds=("adaptive", "optimal"))


def _cell(table: str, first: str, k: int, suffix: str = "") -> str:
    """Regex of the ``k``-th cell (0-based, after the row's leading cells ``first``) of a row of ``table``
    (a tag in the table's heading row: its first column's name), the number as group 1."""
    skip = r"(?:[^|\n]*\|)" + "{" + str(k) + "}"
    # the row's own tag is the next comment (tests.claims matches on the text with whitespace runs as one space)
    return rf"\| {first} \|{skip} *([+-]?[0-9][0-9.,]*){re.escape(suffix)} *\|(?=(?:(?!<!--).)*<!-- {table} -->)"


ROWS = [("stencil", q) for q in (2, 4, 8)] + [("all_to_all", q) for q in (2, 4, 8)]


@pytest.mark.parametrize("pattern,q", ROWS)
def test_shrunken_study_times_and_gains(small, pattern, q):
    pt = dict(pattern=pattern, groups=q)
    first = rf"{pattern} \| {q}"
    us = lambda v: float(small[v].sel(**pt)) * 1e6  # noqa: E731
    cells = [(us("rdn_time_bg"), ""), (us("tdn_oblivious_time_bg"), ""), (us("tdn_adaptive_time_bg"), ""),
             (us("tdn_optimal_time_bg"), "")]
    cells += [(float(small[f"gain_{b}"].sel(**pt)), "x") for b in ("adaptive", "oblivious", "optimal")]
    cells += [(float(small[f"gain_{b}_no_bg"].sel(**pt)), "x") for b in ("adaptive", "oblivious")]
    for k, (value, suffix) in enumerate(cells):
        check_stated(DOC, _cell("shrunken", first, k, suffix), value, command=SMALL)


@pytest.mark.parametrize("pattern,q", ROWS)
def test_shrunken_background_slowdown(small, pattern, q):
    pt = dict(pattern=pattern, groups=q)
    for k, rt in enumerate(("minimal", "valiant", "valiant_router", "adaptive", "optimal")):
        value = 100 * float(small[f"tdn_bg_slowdown_{rt}"].sel(**pt))
        check_stated(DOC, _cell("shrunken-bg", rf"{pattern} \| {q}", k, "%"), value, command=SMALL)


@pytest.mark.parametrize("mode,pattern", [("minimal_balance, custom_balance", "stencil"),
                                          ("adaptive", "all_to_all")])
def test_workload_speedup_table_rows(small, mode, pattern):
    """The speedup table's ratios (against the ideal adaptive bound, the default baseline, and against the fastest
    oblivious routing) on DF(2, 4, 2, 8)."""
    for k, q in enumerate((2, 4, 8)):
        g = small.gain_adaptive.sel(pattern=pattern, groups=q)
        check_stated(DOC, _cell("speedup-table", re.escape(mode) + r" \([a-z_-]+\)", k), float(g), command=TABLE)
        g = small.gain_oblivious.sel(pattern=pattern, groups=q)
        check_stated(DOC, _cell("speedup-table-oblivious", re.escape(mode) + r" \([a-z_-]+\)", k), float(g),
                     command=TABLE_OBLIVIOUS)


def test_shrunken_headline(small):
    """The sentence that states the shrunken whole-machine stencil gain at both ends."""
    pt = dict(pattern="stencil", groups=8)
    check_stated(DOC, r"DF\(2, 4, 2, 8\) the whole-machine stencil gains ([0-9.]+)x against the ideal adaptive",
                 float(small.gain_adaptive.sel(**pt)), command=SMALL)
    check_stated(DOC, r"DF\(2, 4, 2, 8\) the whole-machine stencil gains [0-9.]+x against the ideal adaptive "
                      r"bound and ([0-9.]+)x against", float(small.gain_oblivious.sel(**pt)), command=SMALL)
    assert np.isfinite(small.gain_optimal).all()
