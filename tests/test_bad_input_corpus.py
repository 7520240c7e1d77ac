"""A corpus of bad inputs: every one gets ONE clear error, never a traceback, never silent acceptance.

Python API cases expect a :class:`~evaluator.errors.ConfigError` (or subclass)
whose message has the ``"<field> = <value!r> is invalid: allowed is ..."``
form and names the field or file and the value given. Command-line cases run
``evaluator.cli.main`` and expect exit status 2 and exactly one line on
stderr, ``evaluator <cmd>: error: ...``, naming the field or file and the
value.
"""

from __future__ import annotations

import builtins
import io
import os
import zipfile
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

import evaluator as ev
from evaluator import cli
from evaluator import placement as P
from evaluator import traffic as T
from evaluator.errors import ConfigError, ResourceError
from evaluator.io import write_netcdf
from evaluator.plot import plot_sweep
from evaluator.query import best, open_results
from evaluator.traffic.base import dense
from evaluator.traffic.dense import all_to_all as dense_all_to_all

# ----------------------------------------------------------------------------------------------
# files the cases read
# ----------------------------------------------------------------------------------------------


def _csv(tmp: Path, name: str, text: str) -> Path:
    f = tmp / name
    f.write_text(text)
    return f


def _npz(tmp: Path, name: str, compressed: bool = False, **arrays) -> Path:
    f = tmp / name
    (np.savez_compressed if compressed else np.savez)(f, **arrays)
    return f


def _header_only_npz(tmp: Path, name: str, key: str, shape: tuple[int, ...]) -> Path:
    """An .npz whose member declares ``shape`` in its .npy header but holds no data (a few hundred bytes)."""
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": "<f8", "fortran_order": False, "shape": shape})
    f = tmp / name
    with zipfile.ZipFile(f, "w") as zf:
        zf.writestr(f"{key}.npy", buf.getvalue())
    return f


def _dir(tmp: Path, name: str, files: tuple[str, ...] = ()) -> Path:
    d = tmp / name
    d.mkdir()
    for fn in files:
        (d / fn).write_text("x")
    return d


def _bytes(tmp: Path, name: str, data: bytes) -> Path:
    f = tmp / name
    f.write_bytes(data)
    return f


def _sweep_dataset() -> xr.Dataset:
    """A small dataset shaped like a sweep's: axes routing x placement.seed, a metric and feasibility."""
    return xr.Dataset(
        {"completion_time": (("routing", "placement.seed"), np.array([[1.0, 2.0], [3.0, 4.0]]),
                             {"units": "s"}),
         "feasible": (("routing", "placement.seed"), np.ones((2, 2), dtype=bool))},
        coords={"routing": np.array(["minimal", "valiant"]), "placement.seed": np.array([0, 1])})


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    """A real results file (netCDF-4, written the way the sweep writes them)."""
    return write_netcdf(_sweep_dataset(), tmp_path_factory.mktemp("results") / "sweep.nc")


def _truncated(tmp: Path, real: Path) -> Path:
    return _bytes(tmp, "truncated.nc", real.read_bytes()[:100])


SMALL_DF = (2, 2, 1)  # DF(p=2, a=2, h=1): 3 groups, 12 nodes

# ----------------------------------------------------------------------------------------------
# Python API cases: (id, call(tmp_path, results), texts every message must contain)
# A text "{f}" stands for the repr of the file the case made (the call returns it).
# ----------------------------------------------------------------------------------------------

F = "{f}"
_MADE: dict[str, Path] = {}
"""The file the running case made (its repr is what ``{f}`` stands for)."""


def _file(make):
    """A case that makes a file and reads it with ``traffic.from_file``."""
    def call(tmp, _results):
        _MADE["f"] = make(tmp)
        T.from_file(_MADE["f"])
    return call


PY_CASES = [
    # ---- traffic files ------------------------------------------------------------------------
    ("file-empty-csv", _file(lambda t: _csv(t, "empty.csv", "")), ["traffic.path", F, "is empty (0 bytes)"]),
    ("file-empty-npz", _file(lambda t: _bytes(t, "empty.npz", b"")), ["traffic.path", F, "is empty (0 bytes)"]),
    ("file-directory-csv", _file(lambda t: _dir(t, "dir.csv")), ["traffic.path", F, "directory"]),
    ("file-directory-npz", _file(lambda t: _dir(t, "dir.npz")), ["traffic.path", F, "directory"]),
    ("file-missing", _file(lambda t: t / "nope.csv"), ["traffic.path", F, "existing"]),
    ("file-wrong-extension", _file(lambda t: _csv(t, "traffic.txt", "0,1,5\n")), ["traffic.path", F, ".npz or .csv"]),
    ("file-garbage-npz", _file(lambda t: _bytes(t, "garbage.npz", bytes(range(256)) * 3)),
     ["traffic.path", F, "not a zip archive"]),
    ("file-garbage-csv", _file(lambda t: _bytes(t, "garbage.csv", b"\x89\xfe\x00\x01binary" * 20)),
     ["traffic.path", F, "binary"]),
    ("file-truncated-npz", _file(lambda t: _bytes(t, "truncated.npz", _npz(t, "whole.npz", matrix=np.ones((4, 4)))
                                                  .read_bytes()[:100])),
     ["traffic.path", F, "zip"]),
    ("file-csv-non-numeric", _file(lambda t: _csv(t, "nonnum.csv", "0,1,abc\n1,0,5\n")),
     ["traffic.path", F, "line 1", "'abc'"]),
    ("file-csv-non-numeric-after-header", _file(lambda t: _csv(t, "nonnum2.csv", "src,dst,bytes\n0,x,5\n")),
     ["traffic.path", F, "line 2", "dst = 'x'"]),
    ("file-csv-4-columns", _file(lambda t: _csv(t, "four.csv", "0,1,5,6\n1,0,5,7\n")),
     ["traffic.path", F, "3 columns", "got 4 on line 1"]),
    ("file-csv-ragged-columns", _file(lambda t: _csv(t, "ragged.csv", "0,1,5\n1,0\n")),
     ["traffic.path", F, "got 2 on line 2", "'1,0'"]),
    ("file-csv-semicolons", _file(lambda t: _csv(t, "semi.csv", "0;1;5\n")),
     ["traffic.path", F, "line 1 '0;1;5'", "header"]),
    ("file-csv-header-only", _file(lambda t: _csv(t, "header.csv", "src,dst,bytes\n")),
     ["traffic.path", F, "line 1 'src,dst,bytes'", "no data rows"]),
    ("file-csv-nan-id", _file(lambda t: _csv(t, "nanid.csv", "0,1,5\nnan,0,5\n")),
     ["traffic.path", F, "line 2", "src = nan"]),
    ("file-csv-float-id", _file(lambda t: _csv(t, "floatid.csv", "0,1,5\n1.5,0,5\n")),
     ["traffic.path", F, "line 2", "src = 1.5"]),
    ("file-csv-negative-id", _file(lambda t: _csv(t, "negid.csv", "0,1,5\n0,-2,5\n")),
     ["traffic.path", F, "line 2", "dst = -2.0"]),
    ("file-csv-inf-bytes", _file(lambda t: _csv(t, "infbytes.csv", "0,1,inf\n")),
     ["traffic.path", F, "line 1", "traffic.bytes = inf"]),
    ("file-npz-object-matrix", _file(lambda t: _npz(t, "pickled.npz", matrix=np.array([[0, None], [1, 0]]))),
     ["traffic.path", F, "allow_pickle=False", "'matrix'"]),
    ("file-npz-object-row", _file(lambda t: _npz(t, "pickled_row.npz", row=np.array([0, "a"], dtype=object),
                                                 col=[1, 0], data=[1.0, 1.0])),
     ["traffic.path", F, "allow_pickle=False", "'row'"]),
    ("file-npz-nan-id", _file(lambda t: _npz(t, "nanid.npz", row=[0.0, np.nan], col=[1, 0], data=[1.0, 1.0])),
     ["traffic.path", F, "entry 1 of 'row'", "row = nan"]),
    ("file-npz-inf-id", _file(lambda t: _npz(t, "infid.npz", row=[0, 1], col=[np.inf, 0], data=[1.0, 1.0])),
     ["traffic.path", F, "entry 0 of 'col'", "col = inf"]),
    ("file-npz-negative-id", _file(lambda t: _npz(t, "negid.npz", row=[0, -1], col=[1, 0], data=[1.0, 1.0])),
     ["traffic.path", F, "entry 1 of 'row'", "row = -1"]),
    ("file-npz-float-id", _file(lambda t: _npz(t, "floatid.npz", row=[0, 1.5], col=[1, 0], data=[1.0, 1.0])),
     ["traffic.path", F, "entry 1 of 'row'", "row = 1.5"]),
    ("file-npz-missing-keys", _file(lambda t: _npz(t, "nokeys.npz", foo=[1])),
     ["traffic.path", F, "found ['foo']", "missing ['row', 'col', 'data']"]),
    ("file-npz-missing-data", _file(lambda t: _npz(t, "nodata.npz", row=[0], col=[1])),
     ["traffic.path", F, "missing ['data']"]),
    ("file-npz-text-matrix", _file(lambda t: _npz(t, "text.npz", matrix=np.array([["a", "b"], ["c", "d"]]))),
     ["traffic.path", F, "real numbers", "<U1"]),
    ("file-npz-complex-data", _file(lambda t: _npz(t, "complex.npz", row=[0], col=[1], data=[1 + 2j])),
     ["traffic.path", F, "'data'", "complex"]),
    ("file-npz-coo-lengths", _file(lambda t: _npz(t, "lengths.npz", row=[0, 1], col=[1], data=[1.0, 2.0])),
     ["traffic.path", F, "{'row': 2, 'col': 1, 'data': 2}"]),
    ("file-npz-coo-2d", _file(lambda t: _npz(t, "twod.npz", row=[[0, 1]], col=[[1, 0]], data=[[1.0, 1.0]])),
     ["traffic.path", F, "1-D", "(1, 2)"]),
    ("file-npz-3d-matrix", _file(lambda t: _npz(t, "cube.npz", matrix=np.zeros((2, 2, 2)))),
     ["traffic.path", F, "(2, 2, 2)"]),
    ("file-npz-negative-matrix-entry", _file(lambda t: _npz(t, "negm.npz", matrix=np.array([[0.0, -3.0], [1, 0]]))),
     ["traffic.path", F, "entry [0, 1]", "traffic.bytes = -3.0"]),
    ("file-npz-float-shape", _file(lambda t: _npz(t, "fshape.npz", row=[0], col=[1], data=[1.0], shape=[2.5, 2.5])),
     ["traffic.path", F, "shape", "[2.5, 2.5]"]),
    ("file-npz-scalar-shape", _file(lambda t: _npz(t, "sshape.npz", row=[0], col=[1], data=[1.0], shape=5)),
     ["traffic.path", F, "shape", "()"]),
    ("file-npz-no-flows", _file(lambda t: _npz(t, "noflows.npz", row=np.zeros(0, int), col=np.zeros(0, int),
                                               data=np.zeros(0))),
     ["traffic.path", F, "no flows"]),
    ("file-npz-huge-header", _file(lambda t: _header_only_npz(t, "huge.npz", "matrix", (10**6, 10**6))),
     ["traffic.path", F, "fits in memory", "(1000000, 1000000)"]),
    ("file-csv-huge-task-id", _file(lambda t: _csv(t, "hugeid.csv", "0,1,5\n1e15,0,5\n")),
     ["traffic.path", F, "fits in memory", "1000000000000001 tasks"]),
    ("file-n-tasks-zero", lambda t, r: T.from_file(_csv(t, "ok.csv", "0,1,5\n"), n_tasks=0),
     ["traffic.n_tasks = 0"]),
    # ---- traffic.base -------------------------------------------------------------------------
    ("matrix-ragged", lambda t, r: T.from_matrix([[1, 2], [3]]), ["traffic.matrix", "[[1, 2], [3]]", "rectangular"]),
    ("matrix-text", lambda t, r: T.from_matrix([["a", "b"], ["c", "d"]]), ["traffic.matrix", "'a'", "text"]),
    ("matrix-3d", lambda t, r: T.from_matrix(np.zeros((2, 2, 2))), ["traffic.matrix", "(2, 2, 2)"]),
    ("matrix-none", lambda t, r: T.from_matrix(None), ["traffic.matrix = None"]),
    ("matrix-nan", lambda t, r: T.from_matrix([[0, np.nan], [1, 0]]), ["traffic.matrix[0, 1] = nan"]),
    ("matrix-complex", lambda t, r: T.from_matrix(np.array([[0, 1j], [1, 0]])), ["traffic.matrix", "complex"]),
    ("flows-text-ids", lambda t, r: T.from_flows(4, ["a", "b"], [1, 2], [1, 1]), ["traffic.src", "['a', 'b']"]),
    ("flows-mismatched-lengths", lambda t, r: T.from_flows(4, [0, 1, 2], [1, 2], [1.0, 1.0]),
     ["traffic.flows", "{'src': 3, 'dst': 2, 'bytes': 2}"]),
    ("flows-float-ids", lambda t, r: T.from_flows(4, [0, 1.5], [1, 2], [1, 1]), ["traffic.src[1] = 1.5"]),
    ("flows-bool-ids", lambda t, r: T.from_flows(4, [True, False], [1, 2], [1, 1]),
     ["traffic.src", "[True, False]", "not booleans"]),
    ("flows-text-bytes", lambda t, r: T.from_flows(4, [0, 1], [1, 2], ["a", "b"]), ["traffic.bytes", "['a', 'b']"]),
    ("flows-id-out-of-range", lambda t, r: T.from_flows(4, [0, 9], [1, 2], [1, 1]), ["traffic.src[1] = 9"]),
    ("dense-wrong-length-weights", lambda t, r: dense(4, [1, 1, 1], 1.0),
     ["traffic.src_weight", "[1, 1, 1]", "n_tasks = 4"]),
    ("dense-2d-weights", lambda t, r: dense(4, 1.0, np.ones((4, 4))), ["traffic.dst_weight", "(4, 4)"]),
    ("dense-text-weights", lambda t, r: dense(4, "heavy", 1.0), ["traffic.src_weight = 'heavy'"]),
    ("dense-negative-weight", lambda t, r: dense(3, [1, -2, 1], 1.0), ["traffic.src_weight[1] = -2.0"]),
    ("dense-huge", lambda t, r: dense_all_to_all(10**13), ["traffic.n_tasks = 10000000000000", "fits in memory"]),
    # ---- DOR order ----------------------------------------------------------------------------
    ("dor-names", lambda t, r: ev.dor(order=["x", "y"]), ["routing.order = ['x', 'y']", "numbered from 0"]),
    ("dor-negative", lambda t, r: ev.dor(order=[-1, 0]), ["routing.order = [-1, 0]", "negative"]),
    ("dor-repeated", lambda t, r: ev.dor(order=[1, 1, 0]), ["routing.order = [1, 1, 0]", "more than once"]),
    ("dor-floats", lambda t, r: ev.dor(order=[0.5, 1]), ["routing.order = [0.5, 1]", "integer"]),
    ("dor-scalar", lambda t, r: ev.dor(order=3), ["routing.order = 3"]),
    ("dor-empty", lambda t, r: ev.dor(order=[]), ["routing.order = []", "empty"]),
    ("dor-unknown-name", lambda t, r: ev.dor(order="shortest"), ["routing.order = 'shortest'", "longest_first"]),
    ("dor-wrong-length-at-build", lambda t, r: ev.evaluate(ev.torus([2, 2]), T.all_to_all(4),
                                                           P.linear(ev.torus([2, 2]), 4), ev.dor(order=[0, 2, 1])),
     ["routing.order = [0, 2, 1]", "permutation of 0..1", "3 dimensions"]),
    # ---- seeds --------------------------------------------------------------------------------
    ("seed-random-negative", lambda t, r: P.fully_random(ev.torus([2, 2]), 4, seed=-1), ["placement.seed = -1"]),
    ("seed-random-float", lambda t, r: P.fully_random(ev.torus([2, 2]), 4, seed=1.5), ["placement.seed = 1.5"]),
    ("seed-random-none", lambda t, r: P.fully_random(ev.torus([2, 2]), 4, seed=None), ["placement.seed = None"]),
    ("seed-cartesian-negative", lambda t, r: P.dragonfly_cartesian(ev.dragonfly(*SMALL_DF), [2, 2], [1, 2], seed=-1),
     ["placement.seed = -1"]),
    ("seed-dragonfly-random-negative", lambda t, r: P.dragonfly_random(ev.dragonfly(*SMALL_DF), 4, 2, seed=-7),
     ["placement.seed = -7"]),
    ("seed-permutation-negative", lambda t, r: T.random_permutation(4, seed=-3), ["traffic.seed = -3"]),
    ("seed-permutation-text", lambda t, r: T.random_permutation(4, seed="abc"), ["traffic.seed = 'abc'"]),
    # ---- other generators ---------------------------------------------------------------------
    ("shift-offset-text", lambda t, r: T.shift(4, offset="a"), ["traffic.offset = 'a'"]),
    ("shift-offset-float", lambda t, r: T.shift(4, offset=1.5), ["traffic.offset = 1.5"]),
    ("shift-offset-nested", lambda t, r: T.shift(grid=[2, 2], offset=[[1], [2, 3]]),
     ["traffic.offset = [[1], [2, 3]]"]),
    ("shift-offset-wrong-length", lambda t, r: T.shift(grid=[2, 2], offset=[1, 2, 3]),
     ["traffic.offset = [1, 2, 3]", "2 integers"]),
    ("shift-grid-scalar", lambda t, r: T.shift(grid=4), ["traffic.grid = 4"]),
    ("shift-offset-list-without-grid", lambda t, r: T.shift(4, offset=[1, 2]),
     ["traffic.offset = [1, 2]", "traffic.grid"]),
    ("traffic-scaled-text", lambda t, r: T.all_to_all(3).scaled("x"), ["traffic.scale = 'x'"]),
    ("file-path-not-a-path", lambda t, r: T.from_file(123), ["traffic.path = 123"]),
    ("shift-huge", lambda t, r: T.shift(10**14), ["traffic.n_tasks = 100000000000000", "fits in memory"]),
    ("tornado-grid-scalar", lambda t, r: T.tornado(8), ["traffic.grid = 8"]),
    ("tornado-grid-empty", lambda t, r: T.tornado([]), ["traffic.grid = []"]),
    ("tornado-grid-none", lambda t, r: T.tornado(None), ["traffic.grid = None"]),
    ("many-to-many-negative-sources", lambda t, r: T.many_to_many(-2, 4), ["traffic.n_sources = -2"]),
    ("many-to-many-float-overlap", lambda t, r: T.many_to_many(2, 4, mode="overlap", overlap=1.5),
     ["traffic.overlap = 1.5"]),
    ("many-to-many-text-n-tasks", lambda t, r: T.many_to_many(2, 4, n_tasks="a"), ["traffic.n_tasks = 'a'"]),
    ("many-to-many-huge-sparse", lambda t, r: T.many_to_many(10**7, 10**7),
     ["traffic.n_sources = 10000000", "fits in memory", "dense many-to-many"]),
    ("all-to-all-huge-sparse", lambda t, r: T.all_to_all(10**7),
     ["traffic.n_tasks = 10000000", "fits in memory", "dense all-to-all"]),
    ("stencil-periodic-text", lambda t, r: T.stencil([8, 8], [4, 4], periodic="no"), ["traffic.periodic = 'no'"]),
    ("stencil-periodic-int", lambda t, r: T.stencil([8, 8], [4, 4], periodic=[1, 2]), ["traffic.periodic = [1, 2]"]),
    ("stencil-message-sizes-bytes", lambda t, r: T.stencil_message_sizes([8], [4], "a"),
     ["traffic.bytes_per_element = 'a'"]),
    ("stencil-huge", lambda t, r: T.stencil([10**6] * 3, [10**5] * 3),
     ["traffic.beta = [100000, 100000, 100000]", "fits in memory"]),
    ("to-dense-huge", lambda t, r: T.Traffic(10**9, np.zeros(1, np.int64), np.ones(1, np.int64), np.ones(1)).to_dense(),
     ["traffic.n_tasks = 1000000000", "fits in memory"]),
    # ---- placements ---------------------------------------------------------------------------
    ("linear-first-node-text", lambda t, r: P.linear(ev.torus([2, 2]), 2, first_node="a"),
     ["placement.first_node = 'a'"]),
    ("linear-first-node-float", lambda t, r: P.linear(ev.torus([2, 2]), 2, first_node=1.5),
     ["placement.first_node = 1.5"]),
    ("subprism-offset-scalar", lambda t, r: P.subprism(ev.torus([2, 2]), [1, 1], offset=3), ["placement.offset = 3"]),
    ("subprism-offset-text", lambda t, r: P.subprism(ev.torus([2, 2]), [1, 1], offset=["a", "b"]),
     ["placement.offset = ['a', 'b']"]),
    ("subprism-tasks-per-node-zero", lambda t, r: P.subprism(ev.torus([2, 2]), [1, 1], tasks_per_node=0),
     ["placement.tasks_per_node = 0"]),
    ("explicit-ragged", lambda t, r: P.explicit(ev.torus([2, 2]), [[1], [1, 2]]),
     ["placement.task_node", "[[1], [1, 2]]"]),
    ("cartesian-order-not-text", lambda t, r: P.dragonfly_cartesian(ev.dragonfly(*SMALL_DF), [2, 2], [1, 2],
                                                                    group_order=5),
     ["placement.group_order = 5"]),
    # ---- results: open_results, best, plot_sweep ---------------------------------------------
    ("results-text-file", lambda t, r: _open(_csv(t, "notes.nc", "hello")), ["path", F, "HDF5"]),
    ("results-truncated", lambda t, r: _open(_truncated(t, r)), ["path", F, "may be truncated or damaged"]),
    ("results-empty-zarr", lambda t, r: _open(_dir(t, "x.zarr")), ["path", F, "empty directory"]),
    ("results-plain-directory", lambda t, r: _open(_dir(t, "plain", ("a.txt",))), ["path", F, "not a zarr store"]),
    ("results-missing", lambda t, r: _open(t / "missing.nc"), ["path", F, "No such file"]),
    ("results-empty-file", lambda t, r: _open(_bytes(t, "zero.nc", b"")), ["path", F, "is empty (0 bytes)"]),
    ("best-unknown-label", lambda t, r: best(open_results(r), where={"routing": "ugal"}),
     ["where.routing = ['ugal']", "['minimal', 'valiant']"]),
    ("best-unknown-metric", lambda t, r: best(open_results(r), "latency"), ["metric = 'latency'", "completion_time"]),
    ("best-link-metric", lambda t, r: best(_sweep_dataset().assign(link_load=("link", [1.0])), "link_load"),
     ["metric = 'link_load'"]),
    ("best-unknown-axis", lambda t, r: best(open_results(r), over=["gamma"]), ["over = ['gamma']", "routing"]),
    ("best-unknown-where-axis", lambda t, r: best(open_results(r), where={"tie": "split"}), ["where = 'tie'"]),
    ("best-negative-n", lambda t, r: best(open_results(r), n=-2), ["n = -2"]),
    ("plot-unknown-x", lambda t, r: plot_sweep(open_results(r), t / "o.png", x="gamma"), ["x = 'gamma'", "routing"]),
    ("plot-unknown-metric", lambda t, r: plot_sweep(open_results(r), t / "o.png", metric="routing"),
     ["metric = 'routing'"]),
    ("plot-x-equals-series", lambda t, r: plot_sweep(open_results(r), t / "o.png", x="routing", series="routing"),
     ["series = 'routing'"]),
]


def _open(p: Path) -> None:
    _MADE["f"] = p
    open_results(p)


def _check_message(exc: ConfigError, texts: list[str], f) -> str:
    msg = str(exc)
    assert "\n" not in msg, msg
    assert " is invalid: allowed is " in msg, msg
    for t in texts:
        t = t.replace(F, repr(str(f))) if F in t else t
        assert t in msg, f"{t!r} not in {msg!r}"
    assert "np.str_" not in msg and "np.float64" not in msg and "np.int64" not in msg, msg
    return msg


@pytest.mark.parametrize("call,texts", [pytest.param(c, t, id=i) for i, c, t in PY_CASES])
def test_python_bad_input(call, texts, tmp_path, results):
    _MADE.clear()
    with pytest.raises(ConfigError) as e:
        call(tmp_path, results)
    assert _MADE or not any(F in t for t in texts), "a case that names its file must make one"
    _check_message(e.value, texts, _MADE.get("f"))


def test_file_unreadable(tmp_path, monkeypatch):
    """No read permission: chmod where it works; as root (who reads anything) the read is made to fail."""
    f = _csv(tmp_path, "secret.csv", "0,1,5\n")
    f.chmod(0)
    try:
        try:
            with open(f, "rb"):
                readable = True
        except PermissionError:
            readable = False
        if readable:  # running as root: simulate the refused read
            real_open = builtins.open

            def fake_open(file, *args, **kwargs):
                if os.fspath(file) == str(f):
                    raise PermissionError(13, "Permission denied", str(f))
                return real_open(file, *args, **kwargs)

            monkeypatch.setattr(builtins, "open", fake_open)
        with pytest.raises(ConfigError) as e:
            T.from_file(f)
        _check_message(e.value, ["traffic.path", repr(str(f)), "Permission denied"], f)
    finally:
        f.chmod(0o600)


def test_file_huge_coo_shape_refused_before_allocating(tmp_path, monkeypatch):
    """A COO file declaring 22000 x 22000 tasks is checked against the memory limit before anything is built."""
    f = _npz(tmp_path, "declared.npz", row=[0], col=[1], data=[1.0], shape=[22000, 22000])
    monkeypatch.setenv("EVALUATOR_MEMORY_LIMIT", "100000")
    with pytest.raises(ResourceError) as e:
        T.from_file(f)
    _check_message(e.value, ["traffic.path", repr(str(f)), "(22000, 22000)", "fits in memory"], f)
    monkeypatch.delenv("EVALUATOR_MEMORY_LIMIT")
    assert T.from_file(f).n_tasks == 22000  # with the machine's memory it is fine (sparse)


def test_file_huge_dense_matrix_refused_before_loading(tmp_path, monkeypatch):
    """A compressed .npz of a large dense matrix (tiny on disk) is refused from its header, not after np.load."""
    f = _npz(tmp_path, "zeros.npz", compressed=True, matrix=np.zeros((1000, 1000)))
    assert f.stat().st_size < 100_000
    monkeypatch.setenv("EVALUATOR_MEMORY_LIMIT", "1000000")
    loaded = []
    monkeypatch.setattr(np, "load", lambda *a, **k: loaded.append(a) or pytest.fail("np.load was called"))
    with pytest.raises(ResourceError) as e:
        T.from_file(f)
    _check_message(e.value, ["traffic.path", repr(str(f)), "'matrix'", "(1000, 1000)"], f)
    assert not loaded


# ----------------------------------------------------------------------------------------------
# command-line cases: (id, argv(tmp_path, results), texts the one stderr line must contain)
# ----------------------------------------------------------------------------------------------

TORUS = ["topology=torus", "topology.dims=[2,2]", "save=false"]
EVAL = ["eval", *TORUS, "routing=dor", "placement=linear"]
DF_SMALL = ["topology.p=2", "topology.a=4", "topology.h=2", "--no-progress"]


def _bad_machine_dir(tmp: Path, text: str) -> Path:
    d = tmp / "machines"
    d.mkdir()
    (d / "bad.yaml").write_text(text)
    return d


CLI_CASES = [
    ("eval-file-empty", lambda t, r: [*EVAL, "traffic=file", f"traffic.path={_csv(t, 'empty.csv', '')}"],
     ["traffic.path", "empty.csv'", "is empty (0 bytes)"]),
    ("eval-file-directory", lambda t, r: [*EVAL, "traffic=file", f"traffic.path={_dir(t, 'dir.csv')}"],
     ["traffic.path", "dir.csv'", "directory"]),
    ("eval-file-pickled", lambda t, r: [*EVAL, "traffic=file", "traffic.path="
                                        + str(_npz(t, "p.npz", matrix=np.array([[0, None], [None, 0]])))],
     ["traffic.path", "p.npz'", "allow_pickle=False"]),
    ("eval-file-non-numeric", lambda t, r: [*EVAL, "traffic=file",
                                            f"traffic.path={_csv(t, 'n.csv', 'src,dst,bytes' + chr(10) + '0,1,lots')}"],
     ["traffic.path", "n.csv'", "bytes = 'lots'"]),
    ("eval-file-huge-id", lambda t, r: [*EVAL, "traffic=file",
                                        f"traffic.path={_csv(t, 'h.csv', '0,1,5' + chr(10) + '4e15,0,1')}"],
     ["traffic.path", "h.csv'", "fits in memory"]),
    ("eval-file-missing", lambda t, r: [*EVAL, "traffic=file", f"traffic.path={t / 'gone.csv'}"],
     ["traffic.path", "gone.csv'", "existing"]),
    ("eval-dor-order-names", lambda t, r: [*EVAL, "traffic=all_to_all", "routing.order=[x,y]"],
     ["routing.order = ['x', 'y']"]),
    ("eval-dor-order-repeated", lambda t, r: [*EVAL, "traffic=all_to_all", "routing.order=[0,0]"],
     ["routing.order = [0, 0]"]),
    ("eval-dor-order-negative", lambda t, r: [*EVAL, "traffic=all_to_all", "routing.order=[-1,0]"],
     ["routing.order = [-1, 0]"]),
    ("eval-dor-order-wrong-length", lambda t, r: [*EVAL, "traffic=all_to_all", "routing.order=[0,1,2]"],
     ["routing.order = [0, 1, 2]", "permutation of 0..1"]),
    ("eval-dor-order-scalar", lambda t, r: [*EVAL, "traffic=all_to_all", "routing.order=3"], ["routing.order = 3"]),
    ("eval-placement-seed", lambda t, r: ["eval", *TORUS, "routing=dor", "traffic=all_to_all", "placement=random",
                                          "placement.seed=-1"], ["placement.seed = -1"]),
    ("eval-traffic-seed", lambda t, r: [*EVAL, "traffic=random_permutation", "traffic.seed=-3"],
     ["traffic.seed = -3"]),
    ("eval-shift-offset-text", lambda t, r: [*EVAL, "traffic=shift", "traffic.offset=abc"],
     ["traffic.offset = 'abc'"]),
    ("eval-shift-offset-float", lambda t, r: [*EVAL, "traffic=shift", "traffic.offset=1.5"],
     ["traffic.offset = 1.5"]),
    ("eval-stencil-periodic-text", lambda t, r: [*EVAL, "traffic=stencil", "traffic.alpha=[4,4]", "traffic.beta=[2,2]",
                                                 "traffic.periodic=maybe"], ["traffic.periodic = 'maybe'"]),
    ("eval-many-to-many-negative", lambda t, r: [*EVAL, "traffic=many_to_many", "traffic.n_sources=-2"],
     ["traffic.n_sources = -2"]),
    ("eval-machine-bad-yaml", lambda t, r: ["eval", "topology=machine", "topology.name=Bad", "topology.partition=null",
                                            "routing=dor", "traffic=all_to_all", "placement=linear", "save=false",
                                            _machine_env(t, "name: Bad\nkind: torus\ndims: [4, -4]\n"
                                                            "link_bandwidth: 1.0e9\n")],
     ["machine 'Bad'", "dims = [4, -4]"]),
    ("eval-machine-missing-key", lambda t, r: ["eval", "topology=machine", "topology.name=Bad",
                                               "topology.partition=null", "routing=dor", "traffic=all_to_all",
                                               "placement=linear", "save=false",
                                               _machine_env(t, "name: Bad\nkind: torus\ndims: [4, 4]\n")],
     ["machine 'Bad'", "link_bandwidth"]),
    ("query-text-file", lambda t, r: ["query", str(_csv(t, "notes.txt", "hello"))], ["path = '", "notes.txt'", "HDF5"]),
    ("query-truncated", lambda t, r: ["query", str(_truncated(t, r))],
     ["path = '", "truncated.nc'", "may be truncated or damaged"]),
    ("query-empty-zarr", lambda t, r: ["query", str(_dir(t, "x.zarr"))], ["path = '", "x.zarr'", "empty directory"]),
    ("query-plain-directory", lambda t, r: ["query", str(_dir(t, "d", ("f",)))], ["path = '", "/d'", "not a zarr"]),
    ("query-missing", lambda t, r: ["query", str(t / "none.nc")], ["path = '", "none.nc'", "No such file"]),
    ("query-unknown-label", lambda t, r: ["query", str(r), "--where", "routing=ugal"],
     ["--where routing = ['ugal']", "['minimal', 'valiant']"]),
    ("query-unknown-metric", lambda t, r: ["query", str(r), "--best", "latency"], ["--best = 'latency'"]),
    ("query-unknown-axis", lambda t, r: ["query", str(r), "--over", "gamma"], ["--over = ['gamma']"]),
    ("query-unknown-draws", lambda t, r: ["query", str(r), "--draws", "gamma"], ["--draws = ['gamma']", "routing"]),
    ("query-draws-and-over", lambda t, r: ["query", str(r), "--draws", "routing", "--over", "routing"],
     ["--over = ['routing']", "not both"]),
    ("query-negative-n", lambda t, r: ["query", str(r), "-n", "-3"], ["-n = -3"]),
    ("query-where-no-label", lambda t, r: ["query", str(r), "--where", "routing"], ["--where = 'routing'"]),
    ("plot-text-file", lambda t, r: ["plot", str(_csv(t, "notes.nc", "hello")), "--out", str(t / "o.png")],
     ["path = '", "notes.nc'", "HDF5"]),
    ("plot-cli-unknown-x", lambda t, r: ["plot", str(r), "--x", "gamma", "--out", str(t / "o.png")],
     ["--x = 'gamma'"]),
    ("plot-cli-unknown-metric", lambda t, r: ["plot", str(r), "--metric", "routing", "--out", str(t / "o.png")],
     ["--metric = 'routing'"]),
    ("plot-cli-unknown-reference", lambda t, r: ["plot", str(r), "--relative-to", "routing=ugal", "--out",
                                                 str(t / "o.png")], ["--relative-to routing = 'ugal'", "minimal"]),
    ("plot-out-directory", lambda t, r: ["plot", str(r), "--out", str(_dir(t, "figs"))], ["--out = '", "figs'"]),
    ("optimize-tasks-zero", lambda t, r: ["optimize", "--tasks", "0", "--alpha", "8,8,8", *DF_SMALL],
     ["--tasks = 0", "positive integer"]),
    ("optimize-tasks-negative", lambda t, r: ["optimize", "--tasks", "-64", "--alpha", "8,8,8", *DF_SMALL],
     ["--tasks = -64", "positive integer"]),
    ("optimize-tasks-text", lambda t, r: ["optimize", "--tasks", "many", "--alpha", "8,8,8", *DF_SMALL],
     ["--tasks = 'many'"]),
    ("optimize-no-factorization", lambda t, r: ["optimize", "--tasks", "7", "--alpha", "512,512,512", *DF_SMALL],
     ["--tasks = 7", "factorization", "512x512x512", "4 and 8"]),
    ("optimize-alpha-zero", lambda t, r: ["optimize", "--tasks", "8", "--alpha", "0,8,8", *DF_SMALL],
     ["--alpha = '0,8,8'"]),
    ("optimize-alpha-negative", lambda t, r: ["optimize", "--tasks", "8", "--alpha", "-8,8,8", *DF_SMALL],
     ["--alpha = '-8,8,8'"]),
    ("optimize-alpha-malformed", lambda t, r: ["optimize", "--tasks", "8", "--alpha", "8,,8", *DF_SMALL],
     ["--alpha = '8,,8'"]),
    ("optimize-top-negative", lambda t, r: ["optimize", "--tasks", "8", "--alpha", "8,8", "--top", "-1", *DF_SMALL],
     ["--top = '-1'"]),
    ("jobs-overlap", lambda t, r: ["eval", *JOBS_TORUS, "jobs=[{name: a}, {name: b}]", "save=false"],
     ["jobs[1].placement = 'subprism 4x4x4'", "node 0 is also used by jobs[0] (a)", "exclusive_nodes"]),
    ("jobs-empty", lambda t, r: ["eval", *JOBS_TORUS, "jobs=[]", "save=false"], ["jobs = []", "non-empty list"]),
    ("jobs-unknown-key", lambda t, r: ["eval", *JOBS_TORUS, "jobs=[{nmae: a}]", "save=false"],
     ["jobs[0].nmae = 'a'", "['name', 'traffic', 'placement', 'routing']"]),
    ("jobs-placement-key", lambda t, r: ["eval", *JOBS_TORUS, "jobs=[{placement: {ofset: [1,0,0]}}]", "save=false"],
     ["jobs[0].placement.ofset = [1, 0, 0]", "offset"]),
    ("background-fraction-one", lambda t, r: ["eval", *JOBS_TORUS, "background.fraction=1.0", "save=false"],
     ["background.fraction = 1.0", "[0, 1)"]),
    ("background-fraction-negative", lambda t, r: ["eval", *JOBS_TORUS, "background.fraction=-0.2", "save=false"],
     ["background.fraction = -0.2", "[0, 1)"]),
    ("background-pattern", lambda t, r: ["eval", *JOBS_TORUS, "background.fraction=0.1", "background.pattern=hot",
                                         "save=false"], ["background.pattern = 'hot'", "uniform"]),
    ("phased-nested", lambda t, r: ["eval", *JOBS_TORUS[:3], "traffic=phased", "placement=linear",
                                    "traffic.phases=[{kind: phased}]", "save=false"],
     ["traffic.phases[0].kind = 'phased'", "phases do not nest"]),
    ("stencil-exchange", lambda t, r: ["eval", "traffic.exchange=sometimes", "save=false"],
     ["traffic.exchange = 'sometimes'", "per_dimension"]),
    ("optimize-no-feasible-placement", lambda t, r: ["optimize", "--tasks", "128", "--alpha", "8,16", *DF_SMALL,
                                                     f"sweep.output_dir={t}"],
     ["--tasks = 128", "at most 72 tasks", "placement dragonfly_cartesian puts one task per node",
      "placement.tasks_per_node=2 fits 128 tasks"]),  # 128 tasks on 72 nodes: the cause, before the search
]


JOBS_TORUS = ["topology=torus", "topology.dims=[8,4,4]", "routing=dor", "traffic=random_pairs", "traffic.n_tasks=64",
              "placement=subprism", "placement.task_grid=[4,4,4]"]


def _machine_env(tmp: Path, text: str) -> str:
    """Write a bad machine file; the test sets ``EVALUATOR_MACHINE_PATH`` from this marker and drops it from argv."""
    return f"@machine-path={_bad_machine_dir(tmp, text)}"


@pytest.mark.parametrize("argv,texts", [pytest.param(a, t, id=i) for i, a, t in CLI_CASES])
def test_cli_bad_input(argv, texts, tmp_path, results, capsys, monkeypatch):
    args = argv(tmp_path, results)
    for a in [a for a in args if a.startswith("@machine-path=")]:
        monkeypatch.setenv("EVALUATOR_MACHINE_PATH", a.split("=", 1)[1])
        args.remove(a)
    monkeypatch.chdir(tmp_path)  # anything a command writes stays in tmp_path
    rc = cli.main(args)
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert rc == 2, (rc, err)
    assert len(lines) == 1, err
    assert lines[0].startswith(f"evaluator {args[0]}: error: "), err
    for t in texts:
        assert t in lines[0], f"{t!r} not in {lines[0]!r}"
    assert "np.str_" not in lines[0], err


def test_optimize_refusals_write_no_dataset(tmp_path, capsys, monkeypatch):
    """``--tasks 0`` and an undecomposable task count are refused before anything is searched or written."""
    monkeypatch.chdir(tmp_path)
    for tasks, alpha in (("0", "8,8,8"), ("-64", "8,8,8"), ("7", "512,512,512")):
        assert cli.main(["optimize", "--tasks", tasks, "--alpha", alpha, *DF_SMALL,
                         f"sweep.output_dir={tmp_path / 'out'}"]) == 2
    capsys.readouterr()
    assert not list(tmp_path.rglob("*.nc")) and not list(tmp_path.rglob("*.zarr"))


def test_cli_machine_yaml_syntax_error_is_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("EVALUATOR_MACHINE_PATH", str(_bad_machine_dir(tmp_path, "name: [unclosed\n")))
    rc = cli.main(["eval", "topology=machine", "topology.name=bad", "topology.partition=null", "routing=dor",
                   "traffic=all_to_all", "placement=linear", "save=false"])
    lines = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(lines) == 1 and "bad.yaml" in lines[0], lines


def test_corpus_size():
    """The corpus holds at least 70 distinct bad inputs."""
    ids = [c[0] for c in PY_CASES] + [c[0] for c in CLI_CASES]
    assert len(ids) == len(set(ids))
    assert len(ids) + 4 >= 70  # + the unreadable file, the two memory refusals and the YAML syntax error
