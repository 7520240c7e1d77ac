"""``evaluator map``: the nodes available (a placement's, a node list file, ids inline), the launcher's files and the
dataset, and the refusals (issue 27). The search itself: tests/test_mapping_search.py."""

from __future__ import annotations

import re

import numpy as np
import pytest
import xarray as xr

from evaluator import cli, config
from evaluator.cli.mapping import parse_node_ids
from evaluator.errors import ConfigError

TORUS = ["topology=torus", "topology.dims=[4,4,4]", "routing=dor", "traffic=random_pairs", "traffic.n_tasks=32"]


def _run(argv, capsys):
    rc = cli.main(["map", *argv, "--no-progress", "--iterations", "2", "--candidates", "256"])
    out = capsys.readouterr()
    return rc, out.out, out.err


def _node_list(path) -> list[int]:
    ids = []
    for part in path.read_text().strip().split(","):
        lo, _, hi = part.partition("-")
        ids.extend(range(int(lo), int(hi or lo) + 1))
    return ids


def test_parse_node_ids():
    assert parse_node_ids("0-3,8, 10\n# a comment\n12-13  # more\n").tolist() == [0, 1, 2, 3, 8, 10, 12, 13]
    for bad in ("5-2", "a,b", "1-", "", "# only a comment"):
        with pytest.raises(ConfigError) as e:
            parse_node_ids(bad)
        assert e.value.field == "--nodes"


def test_nodes_of_a_fragmented_machine(tmp_path, capsys):
    """--nodes placement: the nodes placement=fragmented allocates (a free list of a busy machine); the mapping
    uses only them, and the launcher's files and the dataset say so."""
    over = [*TORUS, "placement=fragmented", "placement.job_nodes=[1,8]", "placement.occupancy=0.3",
            f"output_dir={tmp_path / 'res'}"]
    rc, out, err = _run([*over, "--nodes", "placement", "--write-rank-order", str(tmp_path / "launch")], capsys)
    assert rc == 0, err
    point = config.build(config.to_object(config.compose(over)))
    allowed = set(point.placement.task_node.tolist())
    assert "32 tasks of random pairs" in out and "(32 nodes available, 1 per node)" in out
    assert set(_node_list(tmp_path / "launch" / "node_list")) <= allowed
    (path,) = [line.split(": ", 1)[1] for line in out.splitlines() if line.startswith("dataset: ")]
    ds = xr.open_dataset(path)
    assert set(ds.task_node.values.tolist()) <= allowed
    assert float(ds.completion_time) <= float(ds.start_completion_time.min())
    assert set(ds.available_node.values.tolist()) == allowed
    ds.close()


def test_nodes_from_a_file_and_inline(tmp_path, capsys):
    f = tmp_path / "nodes"
    f.write_text("0-15\n32-47\n")
    for spec in (str(f), "0-15,32-47"):
        rc, out, err = _run([*TORUS, "save=false", "--nodes", spec, "--write-rank-order", str(tmp_path / spec[-3:])],
                            capsys)
        assert rc == 0, err
        assert "(32 nodes available, 1 per node)" in out
        assert set(_node_list(tmp_path / spec[-3:] / "node_list")) <= set(range(16)) | set(range(32, 48))


def test_refusals(tmp_path, capsys):
    # launcher files already there: refused before anything is computed
    d = tmp_path / "launch"
    d.mkdir()
    (d / "node_list").write_text("0\n")
    rc, _, err = _run([*TORUS, "save=false", "--write-rank-order", str(d)], capsys)
    assert rc == 2 and "--write-rank-order" in err and "--force" in err
    rc, _, err = _run([*TORUS, "save=false", "--nodes", "free_list"], capsys)
    assert rc == 2 and "--nodes" in err and "free_list" in err
    rc, _, err = _run([*TORUS, "save=false", "--nodes", "0-7"], capsys)  # 32 tasks on 8 nodes
    assert rc == 2 and "traffic.n_tasks" in err
    rc, _, err = _run([*TORUS, "save=false", "--nodes", "60-70"], capsys)  # the torus has 64 nodes
    assert rc == 2 and "mapping.nodes" in err and "70" in err
    rc, _, err = _run([*TORUS, "save=false", "routing=kshortest"], capsys)
    assert rc == 2 and "routing.kind" in err


def test_named_placements_as_configured_start_first(capsys):
    """The search starts from every named placement as `evaluator eval` would run it, the config's default first
    (issue 34: the default Cartesian placement beat every start the example listed), and never ends above it."""
    over = ["topology.p=2", "topology.a=4", "topology.h=2", "traffic.alpha=[16,16,16]", "traffic.beta=[4,4,2]",
            "placement=dragonfly_cartesian", "placement.gamma=[2,2,2]", "save=false"]
    rc, out, err = _run(over, capsys)
    assert rc == 0, err
    rows = [line for line in out.splitlines() if " us " in line and "%" in line and not line.startswith("mapping")]
    assert rows[0].startswith("dragonfly_cartesian (as configured)"), rows  # the user's placement, first
    assert any(r.startswith("random (as configured)") for r in rows)
    default_t = float(rows[0].split()[-4])
    found = float(next(line for line in out.splitlines() if line.startswith("mapping found")).split()[2])
    assert found <= default_t


def test_skipped_starts_one_summary_line_verbose_lists_why(capsys):
    """A successful run prints the starts that do not apply (or repeat another) as one line; --verbose prints each
    with its reason (issue 37: 10-12 error-like lines on a quiet run)."""
    over = [*TORUS, "save=false"]
    rc, out, err = _run(over, capsys)
    assert rc == 0, err
    (line,) = [ln for ln in out.splitlines() if ln.startswith("skipped")]
    m = re.fullmatch(r"skipped (\d+) starts: (\d+) that do not apply here \(([^)]*)\); (\d+) that repeat another "
                     r"start; --verbose lists why", line)
    assert m, line
    names = m.group(3).split(", ")
    assert "grid_order" in names and int(m.group(2)) == len(names)
    assert int(m.group(1)) == int(m.group(2)) + int(m.group(4))
    rc, out_v, err = _run([*over, "--verbose"], capsys)
    assert rc == 0, err
    detail = [ln for ln in out_v.splitlines() if ln.startswith("skipped ")]
    assert len(detail) == int(m.group(1))
    assert any(ln.startswith("skipped grid_order: the traffic has no task grid") for ln in detail)
    assert sum(ln.startswith("skipped ") and ": the same mapping as" in ln for ln in detail) == int(m.group(4))
    assert "--verbose" not in " ".join(detail)


@pytest.mark.parametrize("flag,want", [([], False), (["--anneal"], True)], ids=["default", "--anneal"])
def test_anneal_flag_reaches_the_search(flag, want, capsys, monkeypatch):
    import evaluator.mapping as M

    seen = []
    real = M.local_search

    def spy(*args, **kwargs):
        seen.append(kwargs["anneal"])
        return real(*args, **kwargs)

    monkeypatch.setattr(M, "local_search", spy)
    rc, out, err = _run([*TORUS, "save=false", *flag], capsys)
    assert rc == 0, err
    assert seen == [want]
