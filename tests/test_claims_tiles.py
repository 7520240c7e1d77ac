"""docs/tiles.md: the closed form, the Blue Waters example's explanations and the PSDNS paragraphs (issue 34: every
number the tool gives is claim-tested; the table's rows are in tests/test_claims_readme.py, the PSDNS table in
tests/test_claims_studies.py)."""

from __future__ import annotations

import pytest

from evaluator import tiles as TL
from evaluator.machines import load_machine
from evaluator.partitions import slab_bisections
from tests.claims import check_stated
from tests.test_tiles import _only

DOC = "docs/tiles.md"
BW = "evaluator tiles --grid 1000,1000,1000 --nodes 1000 --tasks-per-node 32 --limit links"
CUBE = "--decomposition 32,32,32 --tile 4,4,2"
HALF_Y = [2.0, 1.0, 2.0]


def test_closed_form():
    conc, seq = TL.ideal_ratios(HALF_Y)
    cmd = "evaluator.tiles.ideal_ratios"
    check_stated(DOC, r"\*\*2\^\(1/3\)/2 = ([0-9.]+)\*\*", conc, command=cmd)
    check_stated(DOC, r"\*\*3 x 2\^\(1/3\)/4 = ([0-9.]+)\*\*", seq, command=cmd)
    check_stated(DOC, r"The slides' ([0-9.]+) and [0-9.]+ compare", conc, command=cmd)
    check_stated(DOC, r"The slides' [0-9.]+ and ([0-9.]+) compare", seq, command=cmd)


def test_the_test_tiles_example():
    """The 4x4x4 torus example of tests/test_tiles.py (router tiles 8x8x8 against 6x12x6)."""
    cubic = _only((32, 32, 32), 128, 1, (4, 4, 8), (1, 1, 1), (1, 1, 2))
    elong = _only((24, 48, 24), 128, 1, (4, 8, 4), (1, 1, 1), (1, 2, 1))
    conc, seq = TL.ideal_ratios(HALF_Y)
    cmd = "tests/test_tiles.py"
    check_stated(DOC, r"36/64 = ([0-9.]+) =", float(elong.time_all / cubic.time_all), command=cmd)
    check_stated(DOC, r"36/64 = [0-9.]+ = ([0-9.]+) x", conc, command=cmd)
    check_stated(DOC, r"108/128 = ([0-9.]+) =", float(elong.time_seq / cubic.time_seq), command=cmd)
    check_stated(DOC, r"108/128 = [0-9.]+ = ([0-9.]+) x", seq, command=cmd)


@pytest.fixture(scope="module")
def blue_waters():
    best = TL.advise(TL.TileRequest((1000,) * 3, 1000, 32, "BlueWaters", limit="links"))
    cube = TL.advise(TL.TileRequest((1024,) * 3, 1024, 32, "BlueWaters", limit="links", decomposition=(32,) * 3,
                                    tile=(4, 4, 2)))
    return best, cube


def _row(ds, decomposition, tile, pair):
    c = (ds.decomposition == decomposition) & (ds.tile == tile) & (ds.router_block == pair)
    return ds.where(c, drop=True).isel(candidate=0)


def test_volume_pair_and_injection(blue_waters):
    best, cube = blue_waters
    y = _row(best, "40x20x40", "4x2x4", "1x2x1")
    c = _row(cube, "32x32x32", "4x4x2", "1x1x2")
    conc, seq = TL.ideal_ratios(HALF_Y)
    scale = (100 * 200 * 100 / 128 ** 3) ** (2 / 3)
    check_stated(DOC, r"\(2\.0e6/2\.097e6\)\^\(2/3\) = ([0-9.]+):", scale, command=BW)
    check_stated(DOC, r"= [0-9.]+: ([0-9.]+) x [0-9.]+ = [0-9.]+ \(", conc, command=BW)
    check_stated(DOC, r"= [0-9.]+: [0-9.]+ x ([0-9.]+) = [0-9.]+ \(", scale, command=BW)
    check_stated(DOC, r"= [0-9.]+: [0-9.]+ x [0-9.]+ = ([0-9.]+) \(", float(y.links_all / c.links_all), command=BW)
    check_stated(DOC, r"= [0-9.]+ \(([0-9.]+)x\) and [0-9.]+ x", float(c.links_all / y.links_all), command=BW)
    check_stated(DOC, r"\(1\.638x\) and ([0-9.]+) x [0-9.]+ = [0-9.]+", seq, command=BW)
    check_stated(DOC, r"\(1\.638x\) and [0-9.]+ x ([0-9.]+) = [0-9.]+", scale, command=BW)
    check_stated(DOC, r"\(1\.638x\) and [0-9.]+ x [0-9.]+ = ([0-9.]+) \(", float(y.links_seq / c.links_seq),
                 command=BW)
    check_stated(DOC, r"= 0\.916 \(([0-9.]+)x, [0-9]+% faster", float(c.links_seq / y.links_seq), command=BW)
    check_stated(DOC, r"\(1\.092x, ([0-9]+)% faster", 100 * (float(c.links_seq / y.links_seq) - 1), command=BW)
    # the pair along X: router tile 200x100x100
    x = _row(best, "40x20x40", "4x2x4", "2x1x1")
    assert x.router_tile.item() == "200x100x100"
    check_stated(DOC, r"router tile 200x100x100 and takes ([0-9.]+) us", float(x.links_all) * 1e6, command=BW)
    # injection
    inj = load_machine("BlueWaters").injection_bandwidth
    check_stated(DOC, r"with the NIC \(([0-9.]+) GB/s\)", inj / 1e9, command=BW)
    check_stated(DOC, r"On Blue Waters as catalogued \(([0-9.]+) GB/s", inj / 1e9, command=BW)
    check_stated(DOC, r"the busiest node sends ([0-9,]+) bytes \(cubic\)", float(c.injection_all) * inj, command=CUBE)
    check_stated(DOC, r"bytes \(cubic\) or ([0-9,]+) \(100x200x100\)", float(y.injection_all) * inj, command=BW)
    check_stated(DOC, r"through its NIC, ([0-9.]+)x and", float(c.injection_all / c.links_all), command=CUBE)
    check_stated(DOC, r"through its NIC, [0-9.]+x and ([0-9.]+)x longer", float(y.injection_all / y.links_all),
                 command=BW)
    check_stated(DOC, r"the ratio all at once is only ([0-9.]+)x", float(c.time_all / y.time_all), command=BW)
    check_stated(DOC, r"ratio; one dimension at a time ([0-9.]+)x, as the cube", float(c.time_seq / y.time_seq),
                 command=BW)


def test_1024_cubed_cannot_be_helped():
    ds = TL.advise(TL.TileRequest((1024,) * 3, 1024, 32, "BlueWaters", limit="links", max_evaluated=1))
    assert ds.attrs["n_evaluated"] <= 2  # the best by the closed form of each exchange
    check_stated(DOC, r"finds nothing below ([0-9.]+) us", float(ds.links_all.min()) * 1e6,
                 command="--tasks-per-node 32 --limit links --max-evaluated 1")


def test_psdns_paragraphs():
    from tests.test_claims_studies import PSDNS, _psdns_times

    slow, fast = _psdns_times()
    bare_slow, bare_fast = _psdns_times("topology.layout=ideal")
    res = {r.label: r.bisection for r in slab_bisections("BlueWaters")}
    bisection = res["23x6x24"].per_node / res["6x24x24"].per_node
    check_stated(DOC, r"\| ratio \| \*\*[0-9.]+x\*\* \| \| [0-9.]+x \| ([0-9.]+)x \|", bisection,
                 command="partitions --slabs")
    check_stated(DOC, r"the bisection per node \(([0-9.]+)x\)", bisection, command="partitions --slabs")
    check_stated(DOC, r"stated the bare torus's ([0-9.]+)x", bare_slow / bare_fast, command="topology.layout=ideal")
    check_stated(DOC, r"\(([0-9.]+)x with service nodes skipped", slow / fast, command=PSDNS)
    check_stated(DOC, r"skipped, ([0-9.]+)x on the bare torus\)", bare_slow / bare_fast, command="topology.layout=ideal")
    check_stated(DOC, r"the sweep has given ([0-9.]+)x since", slow / fast, command=PSDNS)
    check_stated(DOC, r"and speed up by ([0-9.]+)x, the step", slow / fast, command=PSDNS)
    check_stated(DOC, r"1/\(\(1-f\) \+ f/([0-9.]+)\)", slow / fast, command=PSDNS)


def test_the_slides_measurement_as_used():
    """The slides' measured step times (cited) and the ratio this page computes from them wherever it uses it."""
    check_stated(DOC, r"35\.3 s against 21\.5 s per step, \*\*([0-9.]+)x\*\*", 35.3 / 21.5, command="Measured on Blue Waters")
    check_stated(DOC, r"\+ f/2\.065\); ([0-9.]+)x needs f", 35.3 / 21.5, command="Measured on Blue Waters")
