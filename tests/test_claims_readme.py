"""README.md's example outputs, rerun (tests/claims.py): the Python example, the several-jobs table, tiles."""

from __future__ import annotations

import re

import pytest

import evaluator as ev
from evaluator import cli
from evaluator import placement, traffic
from tests.claims import check_stated

DOC = "README.md"


def test_python_example_prisacari_eq16():
    df = ev.dragonfly(p=4, a=8, h=4)
    tr = traffic.stencil(alpha=(512, 512, 512), beta=(8, 8, 4), bytes_per_element=1024)
    pl = placement.dragonfly_cartesian(df, beta=(8, 8, 4), gamma=(4, 4, 2), seed=0)
    ds = ev.evaluate(df, tr, pl, ev.minimal())
    cmd = "ds = ev.evaluate(df, tr, pl, ev.minimal())"
    check_stated(DOC, r"# ([0-9.]+) [0-9.]+ global \(Prisacari Eq. 16\)", float(ds.max_load_global), command=cmd)
    check_stated(DOC, r"# [0-9.]+ ([0-9.]+) global \(Prisacari Eq. 16\)", float(ds.completion_time), command=cmd)
    assert ds.bottleneck.item() == "global"


def _run(argv, capsys) -> str:
    capsys.readouterr()
    assert cli.main(argv) == 0
    return capsys.readouterr().out


def test_several_jobs_table(capsys):
    jobs = ("jobs=[{name: tall, traffic: {n_tasks: 2048, seed: 1}, placement: {task_grid: [8,16,8], offset: "
            "[0,0,0]}}, {name: mover, traffic: {n_tasks: 1024, seed: 2}, placement: {task_grid: [8,8,8], offset: "
            "[4,16,0]}}]")
    out = _run(["eval", "topology=machine", "topology.name=BlueWaters", "topology.partition=null",
                "topology.layout=ideal", "routing=dor", "traffic=random_pairs", "placement=subprism", jobs,
                "save=false"], capsys)
    cmd = "routing=dor traffic=random_pairs"
    for name in ("tall", "mover"):
        row = re.search(rf"^{name}\s+\d+\s+([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)", out, re.M)
        assert row, out
        for k, what in enumerate(("alone", "together", "slowdown")):
            pat = rf"# {name} +[0-9]+ +" + r" +".join(["([0-9.]+)" if i == k else "[0-9.]+" for i in range(3)])
            check_stated(DOC, pat, float(row.group(k + 1)), command=cmd)


_TILES: dict[str, str] = {}


@pytest.fixture
def tiles_output(capsys, tmp_path) -> str:
    """The output of README's tiles command against the cubic baseline, run once for both of its numbers."""
    if "out" not in _TILES:
        _TILES["out"] = _run(["tiles", "--grid", "1000,1000,1000", "--nodes", "1000", "--tasks-per-node", "32",
                              "--limit", "links", "--baseline-grid", "1024,1024,1024", "--baseline-nodes", "1024",
                              "--baseline-decomposition", "32,32,32", "--baseline-tile", "4,4,2", "--out",
                              str(tmp_path)], capsys)
    return _TILES["out"]


@pytest.mark.parametrize("side,k", [("links all at once", 0), ("links one dimension at a time", 1),
                                    ("NIC all at once", 2), ("NIC one at a time", 3)])
def test_tiles_speedup_over_the_cubic_baseline(tiles_output, side, k):
    """Each speedup is named by what it compares (issue 34): links only on both sides, or the NIC counted on both."""
    out = tiles_output
    first = re.search(r"^\s+1=?\s+.*\s([0-9.]+)/([0-9.]+)\s+([0-9.]+)/([0-9.]+)\s*$", out, re.M)  # 1=: tied
    assert first, out
    pat = [r"([0-9.]+)x faster than 32\^3 all at once", r"([0-9.]+)x one dimension at a time; with the 6.4 GB/s",
           r"([0-9.]+)x all at once, [0-9.]+x one at a time", r"[0-9.]+x all at once, ([0-9.]+)x one at a time"][k]
    check_stated(DOC, pat, float(first.group(k + 1)), command="--baseline-decomposition 32,32,32 --baseline-tile 4,4,2")


_CUBE = "--decomposition 32,32,32 --tile 4,4,2"


def _rows(out: str) -> dict[str, list[str]]:
    """The ranked rows of a tiles table by pair (the first row of each pair), split into columns."""
    rows: dict[str, list[str]] = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) >= 12 and f[0].rstrip("=").isdigit() and "x" in f[1]:  # (a tied rank: 1=)
            rows.setdefault(f[3], f)
    return rows


def test_tiles_doc_table(tiles_output, capsys, tmp_path):
    """docs/tiles.md's Blue Waters table: the right-hand column from the README command, the cubic column from
    the cube's own run (pair 1x1x2), and each ratio from the two (issue 34: no number without a test)."""
    doc = "docs/tiles.md"
    best = _rows(tiles_output)["1x2x1"]
    cube_out = _run(["tiles", "--grid", "1024,1024,1024", "--nodes", "1024", "--tasks-per-node", "32", "--limit", "links",
                     *_CUBE.split(), "--out", str(tmp_path)], capsys)
    rows = _rows(cube_out)
    cube, ybest = rows["1x1x2"], rows["1x2x1"]
    cmd = "--baseline-decomposition 32,32,32 --baseline-tile 4,4,2"
    links = [float(x) for x in best[10].split("/")]
    cube_links = [float(x) for x in cube[10].split("/")]
    table = {"links only, all at once": (cube_links[0], links[0]),
             "links only, one dimension at a time": (cube_links[1], links[1]),
             r"with the NIC \(6.4 GB/s\), all at once": (float(cube[6]), float(best[6])),
             "with the NIC, one at a time": (float(cube[8]), float(best[8]))}
    for row, (c, b) in table.items():
        check_stated(doc, rf"\| {row} \| ([0-9.]+) us", c, command=_CUBE)
        check_stated(doc, rf"\| {row} \| [0-9.]+ us[^|]*\| ([0-9.]+) us", b, command=cmd)
        check_stated(doc, rf"\| {row} \| [0-9.]+ us[^|]*\| [0-9.]+ us[^|]*\| \**([0-9.]+)x", c / b, command=cmd)
    # the paragraph on the tool's own columns: the baseline's best is the pair along Y
    assert ybest[10].split("/")[0] == cube[10].split("/")[0]  # the links tie the pairs along Y and Z
    check_stated(doc, r"with the links tied \(([0-9.]+) us\)", cube_links[0], command=_CUBE)
    check_stated(doc, r"takes ([0-9.]+) us one dimension at a time with the NIC", float(ybest[8]), command=_CUBE)
    sp = _rows(tiles_output)["1x2x1"][12:14]
    check_stated(doc, r"`speedup w/ NIC` prints ([0-9.]+)/[0-9.]+", float(sp[1].split("/")[0]), command=cmd)
    check_stated(doc, r"`speedup w/ NIC` prints [0-9.]+/([0-9.]+)", float(sp[1].split("/")[1]), command=cmd)
    check_stated(doc, r"the table's cube row gives ([0-9.]+)x one at a time", float(cube[8]) / float(best[8]),
                 command=_CUBE)
    check_stated(doc, r"`speedup links` prints ([0-9.]+)/[0-9.]+", float(sp[0].split("/")[0]), command=cmd)
    check_stated(doc, r"`speedup links` prints [0-9.]+/([0-9.]+)", float(sp[0].split("/")[1]), command=cmd)


def test_map_example_starts(capsys, tmp_path, monkeypatch):
    """README's `evaluator map` example, as written: the times of its starts (the default placement, linear, METIS)
    and the mapping its 10 batches of search find (seeded; with ``--iterations`` the search follows the batches,
    not the clock; about 1 s more than one batch, where docs/mapping.md's 100 take about 8 s more)."""
    monkeypatch.chdir(tmp_path)
    out = _run(["map", "traffic=stencil", "traffic.alpha=[64,64,64]", "traffic.beta=[16,8,8]", "--iterations", "10",
                "--budget", "600", "--no-progress", "save=false"], capsys)
    cmd = "map traffic=stencil traffic.alpha=[64,64,64] traffic.beta=[16,8,8] --iterations 10 --budget 600"
    found = re.search(r"^mapping found: ([0-9.]+) us \(([0-9.]+) % below the best start, dragonfly_cartesian", out,
                      re.M)
    assert found, out
    check_stated(DOC, r"# mapping found: ([0-9.]+) us \(", float(found.group(1)), command=cmd)
    check_stated(DOC, r"# mapping found: [0-9.]+ us \(([0-9.]+) % below the best start", float(found.group(2)),
                 command=cmd)
    for name, label in (("dragonfly_cartesian (as configured, the default)", r"dragonfly_cartesian \(as configured, "
                                                                              r"the default\)"),
                        ("linear", "linear"), ("partition", r"partition \(METIS\)")):
        row = re.search(rf"^{re.escape(name)}\s+([0-9.]+) (us|ms)", out, re.M)
        assert row, out
        value = float(row.group(1)) * (1e-6 if row.group(2) == "us" else 1e-3)
        check_stated(DOC, rf"\b{label} ([0-9.]+) us, ", value * 1e6, command=cmd)
