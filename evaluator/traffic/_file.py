"""User traffic from a file (.npz dense or COO, .csv triples).

Every problem with the file is one :class:`~evaluator.errors.ConfigError`
naming ``traffic.path`` and the file: missing, a directory, unreadable, empty,
not an .npz/.csv at all, pickled (object) arrays (``np.load`` runs with
``allow_pickle=False``), missing keys, rows of the wrong width, non-numeric
fields, task ids that are not finite integers >= 0, bytes that are NaN or
negative. Array shapes are read from the .npy headers and checked against the
memory available (:func:`~evaluator.errors.check_memory`) before anything is
loaded, so a small compressed file that declares a huge array is refused
instead of exhausting memory.
"""

from __future__ import annotations

import dataclasses
import io
import math
import os
import zipfile
import zlib
from dataclasses import dataclass
from typing import Optional

import numpy as np

from ..errors import ConfigError, check_memory, positive_int, require
from .base import Traffic, TrafficKind, from_flows, from_matrix

__all__ = ['from_file', 'FileConfig', 'FILE']

FIELD = "traffic.path"
_BYTES_PER_TASK = 64
"""Estimate of the per-task arrays (placement, bytes sent per task, padding) a task count costs downstream."""
_NPZ_KEYS = "a dense 'matrix' array, or COO arrays 'row', 'col', 'data' (and optionally 'shape')"
_SAVE_HINT = "Save it with numpy.savez(path, matrix=M) or numpy.savez(path, row=r, col=c, data=b, shape=[n, n])."


def _error(p: str, allowed: str, hint: str | None = None) -> ConfigError:
    return ConfigError(FIELD, p, allowed, hint)


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return (text[:200] + "...") if len(text) > 200 else (text or type(exc).__name__)


def _check_readable(p: str, ext: str) -> int:
    """The file's size; a :class:`ConfigError` if it is missing, a directory, unreadable or empty."""
    kind = "an existing .npz or .csv file"
    if not os.path.lexists(p):
        hint = None if os.path.isabs(p) else f"No such file; relative paths start at {os.getcwd()}."
        raise _error(p, kind, hint or "No such file.")
    if os.path.isdir(p):
        raise _error(p, "a .npz or .csv file, not a directory")
    if ext not in (".npz", ".csv"):
        raise _error(p, "a file ending in .npz or .csv")
    try:
        with open(p, "rb") as fh:
            head = fh.read(1)
    except PermissionError:
        raise _error(p, "a readable .npz or .csv file",
                     "Permission denied: the file cannot be read by this user (check its permissions, "
                     "e.g. chmod u+r).") from None
    except OSError as exc:
        raise _error(p, "a readable .npz or .csv file",
                     f"Reading it failed: {exc.strerror or _one_line(exc)}.") from None
    if not head:
        raise _error(p, "a non-empty .npz or .csv file", "The file is empty (0 bytes).")
    return os.path.getsize(p)


# ----------------------------------------------------------------------------------------------
# .npz
# ----------------------------------------------------------------------------------------------


def _npz_headers(p: str) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
    """``{key: (shape, dtype)}`` of every array of an .npz, read from the .npy headers (nothing loaded)."""
    try:
        zf = zipfile.ZipFile(p)
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:
        raise _error(p, f"an .npz archive (a zip of NumPy arrays as numpy.savez writes) holding {_NPZ_KEYS}",
                     f"It is not a zip archive ({_one_line(exc)}): binary garbage, a truncated download or another "
                     f"format saved under an .npz name? {_SAVE_HINT}") from None
    out: dict[str, tuple[tuple[int, ...], np.dtype]] = {}
    with zf:
        for info in zf.infolist():
            if not info.filename.endswith(".npy"):
                continue
            key = info.filename[:-4]
            try:
                with zf.open(info) as fh:
                    version = np.lib.format.read_magic(fh)
                    if version == (1, 0):
                        shape, _, dtype = np.lib.format.read_array_header_1_0(fh)
                    elif version == (2, 0):
                        shape, _, dtype = np.lib.format.read_array_header_2_0(fh)
                    else:
                        shape, _, dtype = np.lib.format._read_array_header(fh, version)  # (3, 0): utf-8 header
            except (ValueError, OSError, EOFError, zipfile.BadZipFile, zlib.error, RuntimeError) as exc:
                raise _error(p, f"an .npz archive of NumPy arrays holding {_NPZ_KEYS}",
                             f"Its member {info.filename!r} is not a readable .npy array ({_one_line(exc)}); "
                             f"the file may be truncated or corrupt.") from None
            out[key] = (tuple(int(s) for s in shape), np.dtype(dtype))
    return out


def _check_npz_array(p: str, key: str, shape: tuple[int, ...], dtype: np.dtype, what: str,
                     factor: float = 1.0) -> None:
    """Refuse object (pickled) arrays and arrays that would not fit in memory, before loading them."""
    if dtype.hasobject:
        raise _error(p, f"an .npz of numeric arrays (it is read with numpy.load(allow_pickle=False))",
                     f"Array {key!r} holds Python objects (dtype {dtype}), which only unpickling could load; "
                     f"pickled data is refused because unpickling a file can run arbitrary code. "
                     f"Save numeric arrays, e.g. numpy.asarray(x, dtype=float).")
    if dtype.kind not in "biuf":
        raise _error(p, f"an .npz whose {what} array {key!r} holds real numbers",
                     f"Array {key!r} has dtype {dtype} ({_KIND_NAMES.get(dtype.kind, 'not numbers')}).")
    n = math.prod(shape)
    check_memory(FIELD, p, n * dtype.itemsize * factor,
                 f"array {key!r} of shape {shape} ({dtype}) and its working copies",
                 "Is the array's shape right? A sparse COO file (row, col, data) needs memory only per flow.")


_KIND_NAMES = {"c": "complex numbers", "U": "text", "S": "bytes", "O": "Python objects", "M": "dates",
               "m": "time spans", "V": "records"}


def _load(p: str, keys: list[str]) -> dict[str, np.ndarray]:
    try:
        with np.load(p, allow_pickle=False) as z:
            return {k: z[k] for k in keys}
    except (ValueError, OSError, EOFError, zipfile.BadZipFile, zlib.error, KeyError) as exc:
        raise _error(p, f"an .npz archive of NumPy arrays holding {_NPZ_KEYS}",
                     f"Loading it failed ({_one_line(exc)}); the file may be truncated or corrupt.") from None


def _read_npz(p: str, n_tasks: int | None):
    heads = _npz_headers(p)
    if "matrix" in heads:
        shape, dtype = heads["matrix"]
        _check_npz_array(p, "matrix", shape, dtype, "dense", factor=1.0 + (8 + 1) / dtype.itemsize)
        require(len(shape) == 2 and shape[0] == shape[1] and shape[0] > 0, FIELD, p,
                f"a square 'matrix' array; got shape {shape}")
        if n_tasks is not None:
            require(shape[0] == n_tasks, "traffic.n_tasks", n_tasks,
                    f"the file's task count {shape[0]} (matrix shape {shape})")
        M = _load(p, ["matrix"])["matrix"]
        n = shape[0]
        _check_bytes(p, M.reshape(-1), lambda i: f"entry [{i // n}, {i % n}] of 'matrix'")
        return from_matrix(M, name=os.path.basename(p), field="traffic")
    missing = [k for k in ("row", "col", "data") if k not in heads]
    if missing:
        found = sorted(heads) or "no arrays"
        raise _error(p, f"an .npz holding {_NPZ_KEYS}; found {found}, missing {missing}", _SAVE_HINT)
    keys = ["row", "col", "data"] + (["shape"] if "shape" in heads else [])
    for k in keys:
        shape, dtype = heads[k]
        _check_npz_array(p, k, shape, dtype, "COO", factor=3.0)
        if k == "shape":
            require(shape in ((2,), (1,)), FIELD, p, f"a COO 'shape' of two equal task counts [n, n]; got an array of "
                                                     f"shape {shape}")
        else:
            require(len(shape) == 1, FIELD, p, f"1-D COO arrays 'row', 'col', 'data'; {k!r} has shape {shape}")
    lens = {k: heads[k][0][0] for k in ("row", "col", "data")}
    require(len(set(lens.values())) == 1 or (lens["data"] == 1 and lens["row"] == lens["col"]), FIELD, p,
            f"COO arrays 'row', 'col', 'data' of equal length; got lengths {lens}")
    z = _load(p, keys)
    shape = None
    if "shape" in z:
        s = z["shape"].reshape(-1)
        ok = s.size == 2 and bool(np.all(np.isfinite(s))) and bool(np.all(s == np.round(s))) and s[0] == s[1] \
            and s[0] >= 1
        require(ok, FIELD, p, f"a COO 'shape' of two equal task counts [n, n] with n >= 1; got {s.tolist()}")
        shape = (int(s[0]), int(s[1]))

    def where(k):
        return lambda i: f"entry {i} of {k!r}"

    return z["row"], z["col"], z["data"], shape, where("row"), where("col"), where("data")


# ----------------------------------------------------------------------------------------------
# .csv
# ----------------------------------------------------------------------------------------------


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _read_csv(p: str, size: int):
    check_memory(FIELD, p, size * 8.0, "the CSV text and its parsed columns")
    with open(p, "rb") as fh:
        raw = fh.read()
    bad = raw.find(b"\x00")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        bad = exc.start if bad < 0 else min(bad, exc.start)
    if bad >= 0:
        raise _error(p, "a text CSV file of src,dst,bytes rows",
                     f"It holds binary data (byte 0x{raw[bad]:02x} at offset {bad} is not text); is it an .npz or "
                     f"another binary file saved under a .csv name?")
    all_lines = text.splitlines()

    def content(line: str) -> str:
        return line.split("#", 1)[0].strip()

    first = next((i for i, line in enumerate(all_lines) if content(line)), None)
    header = None
    if first is not None and not any(_is_number(f.strip()) for f in content(all_lines[first]).split(",")):
        header = first  # a header line: no field of it is a number
    start = 0 if first is None else first + (header is not None)
    body = all_lines[start:]

    def numbered() -> list[tuple[int, str]]:
        """``(line number, content)`` of the data rows (scanned only to locate an error)."""
        return [(start + k + 1, c) for k, line in enumerate(body) if (c := content(line))]

    if not any(content(line) for line in body):
        head = all_lines[header].strip() if header is not None else ""
        raise _error(p, "a CSV file with at least one src,dst,bytes row of numbers",
                     f"It has no data rows; its only line, line {header + 1} {head[:80]!r}, was read as a header (no "
                     f"field of it is a number). Columns are separated by commas." if header is not None else
                     "It has no data rows.")
    try:
        arr = np.loadtxt(body, delimiter=",", ndmin=2, dtype=np.float64, comments="#")
        if arr.shape[1] != 3:
            raise ValueError("width")
    except ValueError:
        for no, row in numbered():
            fields = row.split(",")
            if len(fields) != 3:
                raise _error(p, f"CSV rows of 3 columns src,dst,bytes; got {len(fields)} on line {no}: {row[:80]!r}",
                             "Separate the three columns with commas.") from None
            for name, f in zip(("src", "dst", "bytes"), fields):
                if not _is_number(f.strip()):
                    raise _error(p, f"numbers in every column src,dst,bytes; line {no} has {name} = "
                                    f"{f.strip()[:40]!r}: {row[:80]!r}",
                                 "Only the first line may be a header (with no number in it).") from None
        raise _error(p, "a CSV file of src,dst,bytes rows of numbers",
                     "numpy.loadtxt could not parse it.") from None  # pragma: no cover - every row checks out
    line_numbers: list[list[int]] = []

    def where(_col):
        def at(i: int) -> str:
            if not line_numbers:
                line_numbers.append([no for no, _ in numbered()])
            return f"line {line_numbers[0][i]}"
        return at

    return arr[:, 0], arr[:, 1], arr[:, 2], None, where(0), where(1), where(2)


# ----------------------------------------------------------------------------------------------
# shared checks
# ----------------------------------------------------------------------------------------------


_COLUMNS = {"src": "column 1 of src,dst,bytes: the sending task", "dst": "column 2 of src,dst,bytes: the receiving task",
            "row": "the COO 'row' array: the sending task", "col": "the COO 'col' array: the receiving task"}


def _check_ids(p: str, name: str, arr: np.ndarray, where) -> int:
    """Task ids: finite integers >= 0. Returns the largest (-1 if none). A refusal names the column (``src``,
    ``dst``; ``row``, ``col``), where (line, entry) and the value, and the likely fix."""
    if arr.size == 0:
        return -1
    a = arr
    column = f" ({_COLUMNS[name]})" if name in _COLUMNS else ""
    if a.dtype.kind == "f":
        bad = ~np.isfinite(a)
        if bad.any():
            i = int(np.argmax(bad))
            raise _error(p, f"task ids that are finite integers >= 0; {where(i)} has {name} = "
                            f"{float(a[i])!r}{column}", "A task id numbers a task from 0; is a value missing there?")
        bad = a != np.round(a)
        if bad.any():
            i = int(np.argmax(bad))
            raise _error(p, f"task ids that are integers >= 0; {where(i)} has {name} = {float(a[i])!r}{column}, "
                            f"a fraction",
                         "A task id numbers a task from 0 (MPI rank); a fraction is no task: are the columns in the "
                         "order src,dst,bytes (bytes last), or were the ids computed as floats and need rounding?")
    bad = a < 0
    if bad.any():
        i = int(np.argmax(bad))
        raise _error(p, f"task ids that are integers >= 0; {where(i)} has {name} = {a[i].item()!r}{column}, "
                        f"a negative id",
                     "Task ids count from 0 (MPI ranks) up to the task count - 1; a negative id is no task: is "
                     "it a placeholder (-1 for none) to drop, or are the ids shifted?")
    return int(a.max())


def _check_bytes(p: str, arr: np.ndarray, where) -> None:
    if arr.size == 0:
        return
    a = arr.astype(np.float64, copy=False)
    bad = ~np.isfinite(a)
    if bad.any():
        i = int(np.argmax(bad))
        raise _error(p, f"finite byte counts (no NaN or inf); {where(i)} has traffic.bytes = {float(a[i])!r}")
    bad = a < 0
    if bad.any():
        i = int(np.argmax(bad))
        raise _error(p, f"byte counts >= 0; {where(i)} has traffic.bytes = {float(a[i])!r}")


def from_file(path: str | os.PathLike, n_tasks: int | None = None) -> Traffic:
    """User traffic from a file.

    * ``.npz`` with a dense ``matrix`` array ``[src_task, dst_task]``, or sparse
      COO arrays ``row``, ``col``, ``data`` (and optionally ``shape``); read with
      ``allow_pickle=False``;
    * ``.csv`` with ``src,dst,bytes`` triples per line (a header line, with no
      number in it, is allowed; ``#`` starts a comment).

    ``n_tasks``, when given, must match the file's task count.

    Raises :class:`~evaluator.errors.ConfigError` (naming ``traffic.path``
    and the file) for any problem with the file; see the module docstring.
    """
    if not isinstance(path, (str, os.PathLike)):
        raise ConfigError(FIELD, path, "a path to a .npz or .csv traffic file")
    p = os.fspath(path)
    if isinstance(p, bytes):
        p = os.fsdecode(p)
    if n_tasks is not None:
        n_tasks = positive_int("traffic.n_tasks", n_tasks)
    ext = os.path.splitext(p)[1].lower()
    size = _check_readable(p, ext)
    if ext == ".npz":
        out = _read_npz(p, n_tasks)
        if isinstance(out, Traffic):
            return dataclasses.replace(out, name=os.path.basename(p))
        row, col, data, shape, w_row, w_col, w_data = out
    else:
        row, col, data, shape, w_row, w_col, w_data = _read_csv(p, size)
    hi = max(_check_ids(p, "src" if ext == ".csv" else "row", row, w_row),
             _check_ids(p, "dst" if ext == ".csv" else "col", col, w_col))
    _check_bytes(p, data, w_data)
    inferred = hi + 1
    if inferred == 0 and shape is None and n_tasks is None:
        raise _error(p, "a traffic file with at least one flow, or a COO 'shape' [n, n] (or traffic.n_tasks) "
                        "that gives the task count", "The file holds no flows.")
    if shape is not None:
        require(inferred <= shape[0], FIELD, p, f"task ids below the declared shape {shape}; found id {inferred - 1}")
        check_memory(FIELD, p, shape[0] * _BYTES_PER_TASK, f"the per-task arrays of the declared shape {shape}",
                     "Is the declared 'shape' right? It is the task count of the job, not a byte count.")
        inferred = shape[0]
    else:
        check_memory(FIELD, p, inferred * _BYTES_PER_TASK, f"the per-task arrays of {inferred} tasks "
                     f"(largest task id {hi})", "Are the task ids right? They number the tasks from 0.")
    if n_tasks is not None:
        require(inferred <= n_tasks if shape is None else inferred == n_tasks, "traffic.n_tasks", n_tasks,
                f"the file's task count {inferred}")
        inferred = n_tasks
    return from_flows(inferred, row, col, data, name=os.path.basename(p))


@dataclass
class FileConfig:
    """A traffic file: ``path`` (.npz or .csv), ``n_tasks`` (optional check)."""

    kind: str = "file"
    path: Optional[str] = None
    n_tasks: Optional[int] = None


def _from_config(cfg: FileConfig, topology) -> Traffic:
    require(cfg.path is not None, FIELD, None, "a path to a .npz or .csv traffic file")
    return from_file(str(cfg.path), cfg.n_tasks)


def _declared(cfg: FileConfig, topology) -> int | None:
    """The task count a dense .npz's matrix header or a COO .npz's ``shape`` declares (None: not declared, or
    a file :func:`from_file` will refuse anyway); read without loading the arrays."""
    if cfg.path is None or os.path.splitext(str(cfg.path))[1].lower() != ".npz":
        return None
    try:
        heads = _npz_headers(str(cfg.path))
        if "matrix" in heads:
            shape = heads["matrix"][0]
            return int(shape[0]) if len(shape) == 2 and shape[0] == shape[1] and shape[0] > 0 else None
        if "shape" in heads and heads["shape"][0] in ((2,), (1,)):
            s = _load(str(cfg.path), ["shape"])["shape"].reshape(-1)
            if s.size == 2 and np.all(np.isfinite(s)) and s[0] == s[1] and s[0] >= 1 and s[0] == np.round(s[0]):
                return int(s[0])
    except (ConfigError, OSError, ValueError):
        return None  # from_file names the problem
    return None


FILE = TrafficKind("file", FileConfig, _from_config, declared_tasks=_declared)
