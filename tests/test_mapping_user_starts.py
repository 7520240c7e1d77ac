"""Starts a user brings to ``evaluator map`` (issue 37 item 1): ``--start FILE`` (a rank-order file or a node
list) and ``--start NAME`` (a placement of the ``placement`` group), their refusals, and the one summary line of
skipped starts on a quiet run (item 5).

Every time compared is the independent evaluation of the mapping (:func:`evaluator.evaluate`), and every mapping
read from a file is compared with the placement that wrote it.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
import xarray as xr

from evaluator import cli, config
from evaluator.errors import ConfigError
from evaluator.evaluation import evaluate
from evaluator.mapping import Start, read_start_file, search_mapping
from evaluator.placement import explicit, fully_random, write_launch_files
from evaluator.topology import torus
from evaluator.traffic import random_pairs
from helpers import TOL

REL = TOL["rel"]
SECONDS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}  # a printed time's unit in seconds
TORUS = ["topology=torus", "topology.dims=[4,4,4]", "routing=dor", "traffic=random_pairs", "traffic.n_tasks=32"]


def _run(argv, capsys):
    rc = cli.main(["map", *argv, "--no-progress", "--iterations", "2", "--candidates", "256"])
    out = capsys.readouterr()
    return rc, out.out, out.err


def _job():
    point = config.build(config.to_object(config.compose([*TORUS, "placement=linear"])))
    return point.topology, point.traffic, point.routing


def _time(topo, traffic, routing, task_node) -> float:
    return float(evaluate(topo, traffic, explicit(topo, np.asarray(task_node, np.int64), "check"),
                          routing).completion_time)


def test_a_rank_order_file_is_read_as_written_and_the_result_is_never_worse(tmp_path):
    """The launcher's files of a placement read back as that placement; the search puts the start first and ends at
    or below its independently evaluated time."""
    topo, tr, routing = _job()
    pl = fully_random(topo, tr.n_tasks, seed=5)
    write_launch_files(pl, tmp_path / "launch")
    start = read_start_file(tmp_path / "launch" / "MPICH_RANK_ORDER", topo, tr.n_tasks, np.arange(64), 1)
    assert np.array_equal(start.task_node, pl.task_node)
    # the same ranks as a plain node list (one node id per rank), and as a rank order without a node_list beside
    # it (its lines fill the available nodes in order)
    (tmp_path / "nodes.txt").write_text("\n".join(map(str, pl.task_node.tolist())) + "\n")
    assert np.array_equal(read_start_file(tmp_path / "nodes.txt", topo, tr.n_tasks, np.arange(64), 1).task_node,
                          pl.task_node)
    (tmp_path / "order").write_text("# ranks on the first 32 nodes\n" + "\n".join(
        f"{2 * i},{2 * i + 1}" for i in range(16)) + "\n")
    two = read_start_file(tmp_path / "order", topo, tr.n_tasks, np.arange(64)[::-1], 2)
    assert two.task_node.tolist() == [63 - t // 2 for t in range(32)]
    t_start = _time(topo, tr, routing, pl.task_node)
    res = search_mapping(topo, tr, routing, user_starts=[start], time_budget=60, max_iterations=2, candidates=256,
                         progress=False)
    assert list(res.starts)[0] == start.name
    assert res.starts[start.name] == pytest.approx(t_start, rel=REL)
    assert res.completion_time <= t_start * (1 + REL)
    assert res.completion_time == pytest.approx(_time(topo, tr, routing, res.task_node), rel=REL)
    # the search resumes from a mapping it found before: that start is the best one, and it is never lost
    again = Start("found before", res.task_node)
    res2 = search_mapping(topo, tr, routing, user_starts=[again], time_budget=60, max_iterations=2, candidates=256,
                          progress=False, seed=3)
    assert res2.best_start == "found before"
    assert res2.completion_time <= _time(topo, tr, routing, res.task_node) * (1 + REL)


def test_start_file_on_the_command_line(tmp_path, capsys):
    """``--start FILE``: the first row, at the file's mapping's time; the dataset's mapping no slower."""
    topo, tr, routing = _job()
    pl = fully_random(topo, tr.n_tasks, seed=7)
    write_launch_files(pl, tmp_path / "launch")
    f = str(tmp_path / "launch" / "MPICH_RANK_ORDER")
    rc, out, err = _run([*TORUS, f"output_dir={tmp_path / 'res'}", "--start", f], capsys)
    assert rc == 0, err
    rows = out.splitlines()
    assert rows[1].startswith("start") and rows[2].startswith(f + " ")
    t_start = _time(topo, tr, routing, pl.task_node)
    (path,) = [line.split(": ", 1)[1] for line in rows if line.startswith("dataset: ")]
    with xr.open_dataset(path) as ds:
        assert str(ds.start.values[0]) == f
        assert float(ds.start_completion_time[0]) == pytest.approx(t_start, rel=REL)
        assert float(ds.completion_time) <= t_start * (1 + REL)
        assert float(ds.completion_time) == pytest.approx(_time(topo, tr, routing, ds.task_node.values), rel=REL)
        assert ds.attrs["user_starts"] == f


def test_start_name_is_built_as_configured(capsys):
    """``--start alps``: the placement the config would build (its YAML values), first, at its evaluated time; the
    same placement among the named ones is then counted as a repeat, not listed twice."""
    rc, out, err = _run([*TORUS, "save=false", "--start", "alps", "--verbose"], capsys)
    assert rc == 0, err
    rows = out.splitlines()
    assert rows[2].startswith("alps (--start, as configured) ")
    point = config.build(config.to_object(config.compose([*TORUS, "placement=alps"])))
    t = _time(point.topology, point.traffic, point.routing, point.placement.task_node)
    shown = rows[2].split()[-4:-2]  # "750.0 us"
    scale = SECONDS[shown[1]]
    assert float(shown[0]) * scale == pytest.approx(t, rel=1e-3)
    assert not any(r.startswith("alps (as configured)") for r in rows)
    assert "skipped alps (as configured): the same mapping as 'alps (--start, as configured)'" in out


def _error(argv, capsys) -> str:
    rc, out, err = _run([*TORUS, "save=false", *argv], capsys)
    assert rc == 2, (out, err)
    return err.strip().splitlines()[-1]


def test_bad_starts_are_refused_naming_the_option_value_and_what_is_allowed(tmp_path, capsys):
    d = tmp_path
    (d / "three").write_text("0\n1\n2\n")
    (d / "far").write_text("\n".join(str(99 if i == 5 else i) for i in range(32)))
    (d / "twice").write_text("\n".join(str(i // 2) for i in range(32)))
    (d / "MPICH_RANK_ORDER").write_text("0,1\n2,3\n")  # 4 of 32 ranks
    (d / "dup").write_text("0,0\n" + "\n".join(f"{i}" for i in range(2, 32)))
    known = "alps, block, dragonfly_cartesian, dragonfly_random, features, fragmented, linear, random, subprism, " \
            "topaware, torus_block"
    cases = {
        "missing": ([str(d / "missing.txt")], "a rank-order file or node list that exists, or a placement of the "
                    f"placement group: one of {known}. No file {d / 'missing.txt'} exists."),
        "unknown name": (["torus_blok"], f"one of {known}. No file torus_blok exists and no placement is named so."),
        "ranks": ([str(d / "three")], "allowed is a node list of one node id per rank: 32 ids for the job's 32 "
                  "ranks. It lists 3."),
        "rank order ranks": ([str(d / "MPICH_RANK_ORDER")], "a rank order of the job's 32 ranks: each of 0..31 "
                             "once, one line per node. It holds 4 ranks."),
        "repeated rank": ([str(d / "dup")], "each of 0..31 once, one line per node. It holds 32 ranks, some of them "
                          "more than once."),
        "out of range": ([str(d / "far")], "allowed is node ids of torus 4x4x4: integers in [0, 63]. Node 99 is out "
                         "of range"),
        "not available": ([str(d / "far"), "--nodes", "0-31,99"], "mapping.nodes"),
        "not in --nodes": (["linear", "--nodes", "32-63"], "allowed is a mapping onto the 32 nodes available to the "
                           "job (--nodes). It uses 32 node(s) that are not available, e.g. [0, 1, 2, 3, 4]."),
        "per node": ([str(d / "twice")], "allowed is at most 1 rank(s) per node (--tasks-per-node). Node 0 holds 2."),
        "does not build": (["dragonfly_cartesian"], "allowed is a placement that builds for this job (32 tasks on "
                           "torus 4x4x4). It does not: placement.kind = 'dragonfly_cartesian' is invalid: allowed is one "
                               "of ['linear', 'random', 'torus_block', 'block', 'subprism', 'alps', 'fragmented', "
                               "'topaware'] on a torus. 'dragonfly_cartesian' needs a Dragonfly"),
        "format": ([f"rank_orders:{d / 'three'}"], "No file rank_orders:"),
    }
    for what, (argv, text) in cases.items():
        msg = _error(["--start", *argv], capsys)
        assert text in msg, (what, msg)
        if what != "not available":  # --nodes itself is refused first
            value = argv[0]
            assert msg.startswith(f"evaluator map: error: --start = {value!r} is invalid: allowed is "), (what, msg)


def test_file_format_prefix_and_library_refusals(tmp_path):
    """A plain one-id-per-line file is a node list unless prefixed ``rank_order:``; the library names its own
    field."""
    topo = torus([4, 4, 4])
    tr = random_pairs(8, seed=1)
    (tmp_path / "ids").write_text("7\n6\n5\n4\n3\n2\n1\n0\n")
    a = read_start_file(tmp_path / "ids", topo, 8, np.arange(64), 1)
    assert a.task_node.tolist() == [7, 6, 5, 4, 3, 2, 1, 0]
    b = read_start_file(tmp_path / "ids", topo, 8, np.arange(10, 20), 1, kind="rank_order")
    assert b.task_node.tolist() == [17, 16, 15, 14, 13, 12, 11, 10]  # rank 7 on the first available node
    # one line of more ids than a node takes ranks: no rank order can be that, so a node list written on one line
    # (it was read as a rank order: all 8 ranks on one node, refused)
    (tmp_path / "one_line").write_text("7 6 5 4 3 2 1 0\n")
    assert read_start_file(tmp_path / "one_line", topo, 8, np.arange(64), 1).task_node.tolist() == \
        [7, 6, 5, 4, 3, 2, 1, 0]
    four = read_start_file(tmp_path / "one_line", topo, 8, np.arange(10, 20), 8)  # 8 fit one node: a rank order
    assert four.task_node.tolist() == [10] * 8
    with pytest.raises(ConfigError) as e:
        read_start_file(tmp_path / "ids", topo, 8, np.arange(64), 1, kind="csv")
    assert e.value.field == "--start" and "rank_order, node_list" in str(e.value)
    with pytest.raises(ConfigError) as e:
        search_mapping(topo, tr, "dor", nodes=np.arange(8), user_starts=[Start("mine", np.arange(8) + 1)],
                       time_budget=0, progress=False)
    assert e.value.field == "mapping.user_starts" and e.value.value == "mine"


def test_skipped_starts_one_summary_line(tmp_path, capsys):
    """A successful run with user starts prints no line per skipped start, only one summary line."""
    f = tmp_path / "ids"
    f.write_text("\n".join(str(i) for i in range(32)))  # = linear: the generated 'linear' is then a repeat
    rc, out, err = _run([*TORUS, "save=false", "--start", str(f)], capsys)
    assert rc == 0, err
    skipped = [ln for ln in out.splitlines() if ln.startswith("skipped")]
    assert len(skipped) == 1, skipped
    m = re.fullmatch(r"skipped (\d+) starts: (\d+) that do not apply here \(([^)]*)\); (\d+) that repeat another "
                     r"start; --verbose lists why", skipped[0])
    assert m, skipped[0]
    assert "torus_block" in m.group(3).split(", ")
    assert not any(ln.startswith("linear ") for ln in out.splitlines())  # the user's file stands for it
    assert "error" not in out.lower() and "invalid" not in out


DOC = "docs/mapping.md"
PLACE_CMD = ("evaluator placement topology=torus topology.dims=[4,4,4] routing=dor traffic=stencil "
             "traffic.alpha=[16,16,16] traffic.beta=[4,4,2] placement=alps --write-rank-order launch/alps --fill id")
MAP_CMD = ("evaluator map topology=torus topology.dims=[4,4,4] routing=dor traffic=stencil traffic.alpha=[16,16,16] "
           "traffic.beta=[4,4,2] save=false --start launch/alps/MPICH_RANK_ORDER --start torus_block --iterations 5 "
           "--budget 600 --no-progress")


def test_docs_example_output(tmp_path, monkeypatch, capsys):
    """docs/mapping.md's --start example, run as written (in a fresh directory): every number of its output block
    but the search line's seconds and moves per second and the moves line's seconds (measurements of a machine)."""
    from tests.claims import check_output_block

    monkeypatch.chdir(tmp_path)
    assert cli.main(PLACE_CMD.split()[1:]) == 0
    capsys.readouterr()
    assert cli.main(MAP_CMD.split()[1:]) == 0
    out = capsys.readouterr().out
    # the moves line's seconds per kind are measurements of a machine; its counts are the search's (seeded)
    assert check_output_block(DOC, MAP_CMD, out, skip=("moves scored",), drop=(r" in [0-9.]+ m?s\b",)) >= 20


def test_a_configured_placement_that_repeats_a_start_counts_as_named(capsys):
    """The summary's "best named placement" is the best of the placements the user could have run: a configured
    placement left out as a repeat of a generated start (the configured ``linear`` is the start ``linear`` when
    every node is available) counts as that start, so the summary never claims a gain over a slower one only."""
    from types import SimpleNamespace

    from evaluator.cli.mapping import _named_times

    rc, out, err = _run([*TORUS, "save=false", "--verbose"], capsys)
    assert rc == 0, err
    assert "skipped linear (as configured): the same mapping as 'linear'" in out
    res = SimpleNamespace(starts={"random (as configured)": 3.0, "linear": 2.0, "partition": 1.0},
                          skipped={"linear (as configured)": "the same mapping as 'linear'",
                                   "alps (available nodes)": "the same mapping as 'linear'",
                                   "fragmented (as configured)": "does not apply"})
    assert _named_times(res) == {"random (as configured)": 3.0, "linear": 2.0}
    # the printed table: the summary's best named placement is the fastest configured placement or its repeat
    table = {m.group(1): float(m.group(2)) * SECONDS[m.group(3)] for m in
             (re.match(r"^(\S.*?)\s{2,}([\d.]+) (s|ms|us|ns)\s+[\d.]+ %$", r) for r in out.splitlines()) if m}
    named = {n: t for n, t in table.items() if "as configured" in n or n == "linear"}
    assert "linear" in named and len(named) >= 2
    summary = next(r for r in out.splitlines() if r.startswith("mapping found:"))
    start = re.search(r"below the best start, (.+?)(; |\)$)", summary).group(1)
    found = re.search(r"below the best named placement, (.+)\)$", summary)
    shown = found.group(1) if found else start  # no named placement shown: the best start is the best named one
    assert shown in named and named[shown] == min(named.values()), summary
