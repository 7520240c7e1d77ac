"""``traffic=file`` beyond .csv and .npz (issue 37 item 5): Matrix Market ``.mtx`` and NumPy ``.npy`` files read as
the same flows as the equivalent CSV, their refusals (each naming the file, the field, the value and what is
allowed; a file too large refused before anything is allocated), and the task grid a file carries (``# grid:``,
``% grid:``, an .npz ``grid`` array, ``traffic.grid``), which gives a mapping search the grid-aware starts of the
stencil the file was written from.
"""

from __future__ import annotations

import dataclasses
import re
import shlex
import time

import numpy as np
import pytest

from evaluator import cli
from evaluator.errors import ConfigError, ResourceError
from evaluator.mapping._starts import starting_points, task_grid
from evaluator.topology import torus
from evaluator.traffic import from_file, stencil
from evaluator.traffic._file import FileConfig, declared_grid
from tests.claims import ROOT, check_stated


def flows(t) -> list[tuple[int, int, float]]:
    """The traffic's flows, sorted, with bytes per (src, dst) pair summed."""
    out: dict[tuple[int, int], float] = {}
    for s, d, b in zip(t.src.tolist(), t.dst.tolist(), t.nbytes.tolist()):
        out[(s, d)] = out.get((s, d), 0.0) + b
    return sorted((s, d, b) for (s, d), b in out.items())


def write(path, text: str):
    path.write_text(text)
    return path


MTX_RING = """%%MatrixMarket matrix coordinate {field} general
% a ring of 4 tasks, 1-based
4 4 4
1 2{v}
2 3{v}
3 4{v}
4 1{v}
"""
RING = [(0, 1, 1e6), (1, 2, 1e6), (2, 3, 1e6), (3, 0, 1e6)]


@pytest.mark.parametrize("field", ["real", "integer"])
def test_mtx_entries_are_bytes_from_row_task_to_column_task_counted_from_1(tmp_path, field):
    t = from_file(write(tmp_path / "ring.mtx", MTX_RING.format(field=field, v=" 1000000")))
    assert t.n_tasks == 4 and flows(t) == RING and t.name == "ring.mtx"


def test_mtx_pattern_takes_traffic_bytes(tmp_path):
    p = write(tmp_path / "ring.mtx", MTX_RING.format(field="pattern", v=""))
    with pytest.raises(ConfigError) as e:
        from_file(p)
    assert e.value.field == "traffic.bytes" and "ring.mtx" in str(e.value) and "traffic.bytes=" in str(e.value)
    assert flows(from_file(p, bytes_per_flow=1e6)) == RING
    bad = write(tmp_path / "p.mtx", "%%MatrixMarket matrix coordinate pattern general\n3 3 2\n1 2\n2 3 9\n")
    with pytest.raises(ConfigError, match=r"Line 4 has 3 fields \('2 3 9'\); an entry of a pattern matrix has 2: i j"):
        from_file(bad, bytes_per_flow=1e6)  # (SciPy read it as the pair (2, 3))


def test_mtx_symmetric_expands_both_ways_diagonal_once(tmp_path):
    p = write(tmp_path / "sym.mtx", "%%MatrixMarket matrix coordinate real symmetric\n3 3 3\n2 1 5\n3 3 7\n3 2 9\n")
    assert flows(from_file(p)) == [(0, 1, 5.0), (1, 0, 5.0), (1, 2, 9.0), (2, 1, 9.0), (2, 2, 7.0)]


def test_mtx_array_format_and_declared_size(tmp_path):
    # array format: column-major values of a 2 x 2 matrix
    p = write(tmp_path / "d.mtx", "%%MatrixMarket matrix array real general\n2 2\n0\n3\n4\n0\n")
    assert flows(from_file(p)) == [(0, 1, 4.0), (1, 0, 3.0)]
    # the size line gives the task count (idle tasks included); traffic.n_tasks must equal it
    p = write(tmp_path / "s.mtx", "%%MatrixMarket matrix coordinate real general\n6 6 1\n1 2 5\n")
    assert from_file(p).n_tasks == 6
    with pytest.raises(ConfigError) as e:
        from_file(p, n_tasks=8)
    assert e.value.field == "traffic.n_tasks"


def test_npy_dense_and_edge_list_give_the_csv_flows(tmp_path):
    M = np.zeros((4, 4))
    for s, d, b in RING:
        M[s, d] = b
    np.save(tmp_path / "m.npy", M)
    np.save(tmp_path / "e.npy", np.asarray(RING))
    np.save(tmp_path / "i.npy", np.asarray(RING, dtype=np.int64))
    write(tmp_path / "r.csv", "".join(f"{s},{d},{b:g}\n" for s, d, b in RING))
    want = flows(from_file(tmp_path / "r.csv"))
    for name in ("m.npy", "e.npy", "i.npy"):
        t = from_file(tmp_path / name)
        assert t.n_tasks == 4 and flows(t) == want, name
    # an (E, 3) array of 3 flows is square: read as a dense 3 x 3 matrix (documented)
    np.save(tmp_path / "three.npy", np.asarray([[0, 1, 5], [1, 2, 5], [2, 0, 5]], float))
    assert from_file(tmp_path / "three.npy").n_tasks == 3  # 3 tasks, not the ids 0-2 of 3 flows


def test_a_csv_header_names_its_columns_in_any_order(tmp_path):
    """An incast written with the header in another order (dst,src,bytes; bytes,src,dst) is the same flows: the
    header was skipped and the columns read as src,dst,bytes, which turned the incast into a broadcast. A header
    naming other columns is refused (its columns cannot be told apart)."""
    rows = [(1, 0, 1e6), (2, 0, 1e6), (3, 0, 1e6)]
    want = flows(from_file(write(tmp_path / "a.csv", "src,dst,bytes\n" + "".join(f"{s},{d},{b:g}\n" for s, d, b in rows))))
    assert sorted(want) == sorted(rows)
    for head, cols in (("dst,src,bytes", (1, 0, 2)), ("Bytes, SRC, dst", (2, 0, 1))):
        text = head + "\n" + "".join(",".join(f"{r[c]:g}" for c in cols) + "\n" for r in rows)
        assert flows(from_file(write(tmp_path / "b.csv", text))) == want, head
    for head in ("from,to,size", "src,dst,bytes,extra", "src,src,bytes"):
        with pytest.raises(ConfigError, match="a header line naming the columns src, dst and bytes"):
            from_file(write(tmp_path / "c.csv", head + "\n1,0,5\n"))


BAD = {
    "mtx non-square": ("r.mtx", "%%MatrixMarket matrix coordinate real general\n3 4 1\n1 2 3\n",
                       ["traffic.path", "'r.mtx'", "a square Matrix Market matrix", "got 3 x 4"]),
    "mtx negative": ("n.mtx", "%%MatrixMarket matrix coordinate integer general\n3 3 2\n1 2 3\n2 3 -4\n",
                     ["'n.mtx'", "byte counts >= 0", "entry (2, 3)", "counted from 1", "traffic.bytes = -4.0"]),
    "mtx complex": ("c.mtx", "%%MatrixMarket matrix coordinate complex general\n3 3 1\n1 2 3 0\n",
                    ["'c.mtx'", "real, integer or pattern", "got 'complex'"]),
    "mtx skew": ("k.mtx", "%%MatrixMarket matrix coordinate real skew-symmetric\n3 3 1\n2 1 3\n",
                 ["'k.mtx'", "general or symmetric", "got 'skew-symmetric'"]),
    "mtx no banner": ("b.mtx", "1 2 3\n", ["'b.mtx'", "%%MatrixMarket matrix coordinate", "Missing banner"]),
    "mtx fractional id": ("f.mtx", "%%MatrixMarket matrix coordinate real general\n3 3 1\n1.5 2 3\n",
                          ["'f.mtx'", "Line 3"]),
    # SciPy's reader kept the first three fields of a longer entry line (this one read as 100 bytes)
    "mtx extra field": ("e.mtx", "%%MatrixMarket matrix coordinate real general\n% c\n3 3 2\n1 2 3\n1 2 100 7\n",
                        ["'e.mtx'", "Line 5 has 4 fields ('1 2 100 7')", "an entry of a real matrix has 3"]),
}


@pytest.mark.parametrize("case", list(BAD))
def test_mtx_refusals_name_file_field_value_and_what_is_allowed(tmp_path, monkeypatch, case):
    name, body, words = BAD[case]
    monkeypatch.chdir(tmp_path)
    write(tmp_path / name, body)
    with pytest.raises(ConfigError) as e:
        from_file(name)
    msg = str(e.value)
    assert "\n" not in msg and " is invalid: allowed is " in msg
    for w in words:
        assert w in msg, msg


NPY_BAD = {
    "non-square": (np.ones((4, 5)), ["'x.npy'", "a square [n, n] array", "(E, 3) array", "shape (4, 5)"]),
    "negative": (np.asarray([[0, 1, 5], [1, 2, -6], [3, 0, 1], [2, 2, 2]], float),
                 ["byte counts >= 0", "row 1 of the (E, 3) array", "traffic.bytes = -6.0"]),
    "nan": (np.asarray([[0.0, 1.0], [np.nan, 0.0]]), ["finite byte counts", "entry [1, 0]", "nan"]),
    "inf": (np.asarray([[0, 1, np.inf], [1, 2, 6], [3, 0, 1], [2, 2, 2]]), ["finite byte counts", "inf"]),
    "fractional id": (np.asarray([[0, 1, 5], [1.5, 2, 6], [3, 0, 1], [2, 2, 2]]),
                      ["row 1 of the (E, 3) array has src = 1.5", "a fraction", "bytes last"]),
    "negative id": (np.asarray([[0, 1, 5], [1, -2, 6], [3, 0, 1], [2, 2, 2]]),
                    ["row 1 of the (E, 3) array has dst = -2", "a negative id"]),
    "text": (np.asarray([["a", "b"], ["c", "d"]]), ["'x.npy'", "real numbers", "text"]),
}


@pytest.mark.parametrize("case", list(NPY_BAD))
def test_npy_refusals_name_file_field_value_and_what_is_allowed(tmp_path, monkeypatch, case):
    arr, words = NPY_BAD[case]
    monkeypatch.chdir(tmp_path)
    np.save("x.npy", arr)
    with pytest.raises(ConfigError) as e:
        from_file("x.npy")
    msg = str(e.value)
    assert e.value.field == "traffic.path" and "'x.npy'" in msg and "\n" not in msg
    for w in words:
        assert w in msg, msg


def test_npy_pickled_and_not_npy_refused(tmp_path):
    np.save(tmp_path / "o.npy", np.asarray([{"a": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(ConfigError, match="Python objects"):
        from_file(tmp_path / "o.npy")
    write(tmp_path / "t.npy", "0,1,5\n")
    with pytest.raises(ConfigError, match="not a readable .npy file"):
        from_file(tmp_path / "t.npy")


def test_too_large_refused_before_allocating(tmp_path):
    """Headers declaring a huge matrix: refused from the header alone (a ResourceError naming the file), fast."""
    with open(tmp_path / "big.npy", "wb") as fh:
        np.lib.format.write_array_header_1_0(fh, {"descr": "<f8", "fortran_order": False,
                                                  "shape": (10 ** 6, 10 ** 6)})
        fh.write(b"\0" * 64)
    write(tmp_path / "big.mtx", "%%MatrixMarket matrix coordinate real general\n"
                                "1000000000 1000000000 100000000000\n1 2 3\n")
    write(tmp_path / "wide.mtx", "%%MatrixMarket matrix array real general\n2000000 2000000\n1\n")
    for name in ("big.npy", "big.mtx", "wide.mtx"):
        t0 = time.perf_counter()
        with pytest.raises(ResourceError) as e:
            from_file(tmp_path / name)
        assert e.value.field == "traffic.path" and name in str(e.value) and "fits in memory" in str(e.value)
        assert time.perf_counter() - t0 < 5.0


# ----------------------------------------------------------------------------------------------
# the task grid a file carries
# ----------------------------------------------------------------------------------------------


def test_grid_from_each_format_and_traffic_grid(tmp_path):
    csv = write(tmp_path / "g.csv", "# halo of a 2x2 grid\n# grid: 2x2\nsrc,dst,bytes\n0,1,5\n3,2,5\n")
    mtx = write(tmp_path / "g.mtx", "%%MatrixMarket matrix coordinate real general\n%  grid: [2, 2]\n4 4 1\n1 2 5\n")
    np.savez(tmp_path / "g.npz", matrix=np.ones((4, 4)), grid=[2, 2])
    np.save(tmp_path / "g.npy", np.ones((4, 4)))
    for p in (csv, mtx, tmp_path / "g.npz"):
        from_file(p)  # the grid checks out
        assert declared_grid(FileConfig(path=str(p))) == [2, 2]
        assert task_grid(FileConfig(path=str(p)), 4) == [2, 2]
    assert declared_grid(FileConfig(path=str(tmp_path / "g.npy"))) is None
    assert task_grid(FileConfig(path=str(tmp_path / "g.npy"), grid=[4, 1]), 4) == [4, 1]
    from_file(tmp_path / "g.npy", grid=[1, 4])
    assert task_grid(FileConfig(path=str(tmp_path / "missing.csv")), 4) is None


def test_grid_refusals(tmp_path):
    csv = write(tmp_path / "g.csv", "# grid: 2x2\n0,1,5\n")  # 2 tasks, a grid of 4
    with pytest.raises(ConfigError) as e:
        from_file(csv)
    assert e.value.field == "traffic.path" and "line 1 '# grid: 2x2' declares 2x2 = 4 tasks" in str(e.value)
    assert "traffic.n_tasks" in str(e.value)
    assert from_file(csv, n_tasks=4).n_tasks == 4
    with pytest.raises(ConfigError) as e:
        from_file(csv, n_tasks=4, grid=[4, 1])
    assert e.value.field == "traffic.grid" and "[2, 2]" in str(e.value)
    with pytest.raises(ConfigError) as e:
        from_file(csv, n_tasks=4, grid=[3])
    assert e.value.field == "traffic.grid" and "a task grid of 4 tasks" in str(e.value)
    with pytest.raises(ConfigError, match="like '# grid: 8x8x8'"):
        from_file(write(tmp_path / "b.csv", "# grid: eight\n0,1,5\n"))
    np.savez(tmp_path / "b.npz", matrix=np.ones((4, 4)), grid=[2.5, 2])
    with pytest.raises(ConfigError, match="'grid' array of task counts >= 1"):
        from_file(tmp_path / "b.npz")


BETA = [8, 8, 4]


@dataclasses.dataclass
class StencilCfg:
    kind: str = "stencil"
    alpha: list = None
    beta: list = None


def _stencil_files(tmp_path):
    """The stencil of docs/traffic_files.md ("The task grid"), written as there: halo.csv with its grid line,
    halo_nogrid.csv without."""
    t = stencil([64, 64, 64], BETA, 1024)
    rows = "".join(f"{s},{d},{b:g}\n" for s, d, b in zip(t.src, t.dst, t.nbytes))
    write(tmp_path / "halo.csv", "# grid: 8x8x4\nsrc,dst,bytes\n" + rows)
    write(tmp_path / "halo_nogrid.csv", "src,dst,bytes\n" + rows)
    return t


def test_a_stencil_file_with_its_grid_gets_the_stencils_starts(tmp_path):
    t = _stencil_files(tmp_path)
    topo = torus([4, 4, 4])
    nodes = np.arange(topo.n_nodes)

    ref, _ = starting_points(topo, t, nodes, 4, traffic_cfg=StencilCfg(alpha=[64, 64, 64], beta=list(BETA)))
    for cfg in (FileConfig(path=str(tmp_path / "halo.csv")), FileConfig(path=str(tmp_path / "halo_nogrid.csv"),
                                                                             grid=list(BETA))):
        got, _ = starting_points(topo, from_file(cfg.path), nodes, 4, traffic_cfg=cfg)
        assert [s.name for s in got] == [s.name for s in ref]
        for a, b in zip(got, ref):
            assert np.array_equal(a.task_node, b.task_node), a.name
    assert any(s.name.startswith("grid_order") for s in ref)
    bare, skipped = starting_points(topo, from_file(tmp_path / "halo_nogrid.csv"), nodes, 4,
                                    traffic_cfg=FileConfig(path=str(tmp_path / "halo_nogrid.csv")))
    assert not any(s.name.startswith(("grid_order", "torus_block", "topaware")) for s in bare)
    assert "no task grid" in skipped["grid_order"]


DOC = "docs/traffic_files.md"


def _doc_command() -> list[str]:
    """The `evaluator map` command of the document's grid section, as arguments."""
    text = (ROOT / DOC).read_text()
    block = text[text.index("```sh\nevaluator map traffic=file traffic.path=halo.csv"):]
    cmd = block[len("```sh\n"):block.index("\n```")].replace("\\\n", " ")
    return shlex.split(cmd)[2:]  # after "evaluator map"


def _rows(out: str) -> list[str]:
    """The start table's rows: ``name  time unit  gain %``."""
    lines = out.splitlines()
    i = next(k for k, ln in enumerate(lines) if ln.startswith("start "))
    return [ln for ln in lines[i + 1:] if re.search(r"\d (us|ms)\s+[\d.]+ %$", ln)]


def _best(rows: list[str]) -> tuple[str, float]:
    def seconds(row):
        value, unit = row.split()[-4:-2]
        return float(value) * {"us": 1e-6, "ms": 1e-3}[unit]

    row = min(rows, key=seconds)
    return row.split("  ")[0], seconds(row)


def test_evaluator_map_from_a_stencil_file_with_and_without_grid(tmp_path, capsys, monkeypatch):
    """The document's `evaluator map` of a stencil file: with its grid line, the starts (names and times, so the
    best start) of the stencil config; without, the grid starts skipped, a worse best start, one summary line
    naming them. The times the document states are these."""
    _stencil_files(tmp_path)
    monkeypatch.chdir(tmp_path)
    argv = _doc_command()
    stencil_argv = [a for a in argv if not a.startswith("traffic")] + [
        "traffic=stencil", "traffic.alpha=[64,64,64]", "traffic.beta=[8,8,4]", "traffic.bytes_per_element=1024"]
    outs = {}
    for name, args in (("stencil", stencil_argv), ("grid", argv),
                       ("no_grid", [a.replace("halo.csv", "halo_nogrid.csv") for a in argv])):
        assert cli.main(["map", *args]) == 0
        outs[name] = capsys.readouterr().out
    ref = _rows(outs["stencil"])
    assert _rows(outs["grid"]) == ref
    assert any(r.startswith("grid_order -R -c 1,2,2") for r in ref) and any(r.startswith("torus_block") for r in ref)
    bare = _rows(outs["no_grid"])
    assert not any(r.startswith(("grid_order", "torus_block", "topaware")) for r in bare)
    (best, t_grid), (best_bare, t_bare) = _best(ref), _best(bare)
    assert best == "torus_block" and best_bare == "partition" and t_bare > t_grid
    cmd = "evaluator map traffic=file traffic.path=halo.csv topology=torus 'topology.dims=[4,4,4]' routing=dor"
    check_stated(DOC, r"and `torus_block`, the best start at ([0-9.]+) us", t_grid * 1e6, cmd)
    check_stated(DOC, r"the partitioning mapping at ([0-9.]+) us", t_bare * 1e6, cmd)
    (summary,) = [ln for ln in outs["no_grid"].splitlines() if ln.startswith("skipped")]
    assert "grid_order" in summary and summary.endswith("; --verbose lists why")
    assert f"```text\n{summary}\n```" in (ROOT / DOC).read_text()
    for out in outs.values():  # a quiet run: one line for every skipped start
        assert sum(ln.startswith("skipped") for ln in out.splitlines()) == 1, out


@pytest.mark.parametrize("kind", ["torus_block", "topaware"])
def test_a_placement_reads_the_files_grid(tmp_path, kind):
    """``eval placement=torus_block`` (or topaware) with a traffic file: the file's grid (its ``# grid:`` line, or
    ``traffic.grid``) is the task grid, as a stencil's ``beta`` is (it used to be refused: no task grid)."""
    from evaluator.config.build import build_placement
    from evaluator.placement import KINDS as PLACEMENTS

    _stencil_files(tmp_path)
    topo = torus([4, 4, 4])
    cfg = PLACEMENTS[kind].schema()
    if kind == "topaware":
        cfg = dataclasses.replace(cfg, tasks_per_node=4)  # 256 tasks on 64 nodes
    ref = build_placement(cfg, topo, StencilCfg(alpha=[64, 64, 64], beta=list(BETA)), 256)
    for tcfg in (FileConfig(path=str(tmp_path / "halo.csv")),
                 FileConfig(path=str(tmp_path / "halo_nogrid.csv"), grid=list(BETA))):
        got = build_placement(cfg, topo, tcfg, 256)
        assert np.array_equal(got.task_node, ref.task_node), tcfg
    with pytest.raises(ConfigError, match="task grid|task_grid|grid"):
        build_placement(cfg, topo, FileConfig(path=str(tmp_path / "halo_nogrid.csv")), 256)


def test_a_csv_number_with_digit_separators_is_named_by_its_line(tmp_path):
    """``1_000`` passed the per-field check (Python's float takes it) but not NumPy's reader, so the error named
    no line; it is now refused as the field it is."""
    path = write(tmp_path / "u.csv", "src,dst,bytes\n0,1,5\n0,1,1_000\n")
    with pytest.raises(ConfigError, match=r"line 3 has bytes = '1_000'.*not 1_000\)"):
        from_file(str(path))
