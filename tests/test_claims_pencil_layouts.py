"""docs/mapping.md's structured layouts of issue 37's pencil rows, rerun in full (`python -m tests.pencil_layouts
16,8,8` and `8,8,8`: 4,680 and 1,818 layouts, about 20 s here): the counts of each family and the best times,
against the times the bench's search found (the table above them)."""

from __future__ import annotations

import pytest

from tests.claims import check_stated
from tests.helpers import once
from tests.pencil_layouts import FOUR_A_NODE, best_layouts, main

DOC = "docs/mapping.md"
CMD = "python -m tests.pencil_layouts {}"


@pytest.fixture(scope="module")
@once
def layouts():
    out = {dims: best_layouts(dims) for dims in ((16, 8, 8), (8, 8, 8))}
    for dims, box in FOUR_A_NODE:
        out[(dims, box)] = best_layouts(dims, box)["bits"]
    return out


def test_the_families_sizes(layouts):
    big, small = layouts[(16, 8, 8)], layouts[(8, 8, 8)]
    check_stated(DOC, r"which bits carry the row is all that matters: ([0-9,]+) layouts on 16x8x8",
                 big["bits"]["layouts"], CMD.format("16,8,8"))
    check_stated(DOC, r"layouts on 16x8x8, ([0-9,]+) on 8x8x8\)", small["bits"]["layouts"], CMD.format("8,8,8"))
    check_stated(DOC, r"brick column to brick column \(([0-9,]+) and", big["staggered bricks"]["layouts"],
                 CMD.format("16,8,8"))
    check_stated(DOC, r"brick column to brick column \([0-9,]+ and ([0-9,]+)\)", small["staggered bricks"]["layouts"],
                 CMD.format("8,8,8"))


def test_no_layout_beats_the_search(layouts):
    for dims, pattern in (((16, 8, 8), r"the best is ([0-9.]+) us on 16x8x8"),
                          ((8, 8, 8), r"us on 16x8x8 and ([0-9.]+) us on 8x8x8 in both families")):
        r = layouts[dims]
        assert r["bits"]["best"] == pytest.approx(r["staggered bricks"]["best"], rel=1e-12), r
        check_stated(DOC, pattern, r["bits"]["best"] * 1e6, CMD.format(",".join(map(str, dims))))
    # the search's own results (the table's "found" column) equal them: no layout of either family is faster
    check_stated(DOC, r"\| 32x32 ranks, 16x8x8 torus \| [0-9.]+ us \| [0-9.]+ us \| ([0-9.]+) us \|",
                 layouts[(16, 8, 8)]["bits"]["best"] * 1e6, CMD.format("16,8,8"), count=1)
    small = layouts[(8, 8, 8)]["bits"]
    check_stated(DOC, r"on 8x8x8 every bit layout takes ([0-9.]+) us", small["worst"] * 1e6, CMD.format("8,8,8"))
    assert small["worst"] == pytest.approx(small["best"], rel=1e-12)


def test_four_a_node(layouts):
    """The bit layouts of the rows with four tasks a node: their number, best and worst, and the table's times."""
    half, prism = layouts[((8, 8, 8), (4, 8, 8))], layouts[((16, 8, 8), (16, 4, 4))]
    cmd_half, cmd_prism = CMD.format("8,8,8 --box 4,8,8"), CMD.format("16,8,8 --box 16,4,4")
    assert half["layouts"] == prism["layouts"]
    check_stated(DOC, r"([0-9,]+) bit layouts each; the best takes", half["layouts"], cmd_half)
    check_stated(DOC, r"the best takes ([0-9.]+) us on the half", half["best"] * 1e6, cmd_half)
    check_stated(DOC, r"us on the half and ([0-9.,]+) us on the prism", prism["best"] * 1e6, cmd_prism)
    check_stated(DOC, r"and the worst ([0-9.,]+) us and [0-9.,]+ us\. No bit layout", half["worst"] * 1e6, cmd_half)
    check_stated(DOC, r"and the worst [0-9.,]+ us and ([0-9.,]+) us\. No bit layout", prism["worst"] * 1e6, cmd_prism)
    check_stated(DOC, r"\| 32x32 ranks, 4 a node, 4x8x8 half \| [0-9.]+ us \| [0-9.,]+ us \| ([0-9.,]+) us \|",
                 half["best"] * 1e6, cmd_half)
    check_stated(DOC, r"\| 32x32 ranks, 4 a node, 16x4x4 prism \| [0-9.]+ us \| [0-9.,]+ us \| ([0-9.,]+) us \|",
                 prism["best"] * 1e6, cmd_prism)


def test_bad_input_is_a_usage_error(capsys):
    for argv in ([], ["4,4,4"], ["eight"], ["8,8,8", "--box", "4,4,4"], ["8,8,8", "--box"], ["8,8,8", "4,8,8"]):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert "usage: python -m tests.pencil_layouts DIMS [--box BOX]" in err and "16,8,8 --box 16,4,4" in err
