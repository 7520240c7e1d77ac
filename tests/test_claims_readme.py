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


@pytest.mark.parametrize("side,k", [("all at once", 0), ("one dimension at a time", 1)])
def test_tiles_speedup_over_the_cubic_baseline(tiles_output, side, k):
    out = tiles_output
    first = re.search(r"^\s+1\s+.*\s([0-9.]+)/([0-9.]+)\s*$", out, re.M)
    assert first, out
    pat = r"([0-9.]+)x faster than 32\^3 all at once" if k == 0 else r"([0-9.]+)x one dimension at a time, links only"
    check_stated(DOC, pat, float(first.group(k + 1)), command="--baseline-decomposition 32,32,32 --baseline-tile 4,4,2")
