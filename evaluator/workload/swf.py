"""Read and write the Standard Workload Format (SWF) of the Parallel Workloads Archive.

An SWF file has one job per line, 18 whitespace-separated numeric fields,
``-1`` where a value is unknown; lines starting with ``;`` are header
comments (``; UnixStartTime: 1546300800``, ``; MaxNodes: 49152``, ...). The
fields (1-based, as the archive numbers them):

 1 job number, 2 submit time (s), 3 wait time (s), 4 run time (s),
 5 allocated processors, 6 average CPU time used (s), 7 used memory (kB),
 8 requested processors, 9 requested time (s), 10 requested memory (kB),
 11 status, 12 user id, 13 group id, 14 executable number, 15 queue number,
 16 partition number, 17 preceding job number, 18 think time (s).

:func:`read_swf` keeps what the scheduler simulation needs: job number,
submit time, run time (field 4), size (field 8, else field 5, in
processors, divided by ``procs_per_node`` rounding up) and requested time
(field 9; unknown: the run time, a perfect estimate). Jobs whose run time or
size is unknown (``-1``) or zero cannot be simulated and are dropped; their
count is in ``attrs["dropped"]``. Anything else malformed stops the read with
a :class:`~evaluator.errors.ConfigError` naming the file, the line number,
the field and the value: a line without 18 fields, a value that is not a
number, an integer field with a fraction, a negative value other than ``-1``
(a negative size or time), an integer beyond int64 (``9223372036854775807``:
it would wrap to a negative id), a job number that is unknown or used twice
(the line of its first use is named), an unknown submit time, a job
larger than the machine (``total_nodes``), and a ``UnixStartTime`` header
that is not an integer. A trace with no job left to
simulate (an empty file, only comments, every job dropped) is refused naming
the file: "nothing to simulate".

Why a reader of our own: the archive's format is 18 numbers per line and the
package index's SWF readers (``evalys``' ``Workload.from_csv``, ``SWFUtils``)
are thin ``pandas.read_csv`` calls that validate nothing (a malformed line
becomes NaN or a shifted column, with no line number) and bring extra
dependencies (seaborn, procset); this reader is a loop over lines with NumPy.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from ..errors import ConfigError, ConfigTypeError
from ..io import write_text
from ._check import int_arg, path_arg
from .trace import Trace

__all__ = ["SWF_FIELDS", "read_swf", "write_swf", "parse_swf"]

SWF_FIELDS = ("job_number", "submit_time", "wait_time", "run_time", "allocated_processors", "average_cpu_time",
              "used_memory", "requested_processors", "requested_time", "requested_memory", "status", "user_id",
              "group_id", "executable", "queue", "partition", "preceding_job", "think_time")
"""The 18 SWF fields in file order (field k is ``SWF_FIELDS[k-1]``)."""

_INT_FIELDS = frozenset({0, 4, 7, 10, 11, 12, 13, 14, 15, 16})
"""0-based indices of fields that must be integers."""

_INT_MAX = 2 ** 63 - 1
"""The largest integer an int64 holds: an integer field beyond it would wrap silently."""


def _err(where: str, k: int, value, allowed: str, hint: str | None = None) -> ConfigError:
    return ConfigError(f"{where} field {k + 1} ({SWF_FIELDS[k]})", value, allowed, hint)


def _job_fields(parts: list[str], where: str) -> list[float]:
    """The 18 fields of one job line as numbers: finite, integers where SWF has integers (within int64), and
    >= 0 or -1 (unknown); a :class:`ConfigError` naming the line and the field otherwise."""
    row = []
    for k, p in enumerate(parts):
        try:
            if "_" in p:  # Python's float() reads '1_0' as 10; SWF has plain numbers
                raise ValueError(p)
            v = float(p)
        except ValueError:
            raise _err(where, k, p, "a number (-1 for unknown)") from None
        if not np.isfinite(v):
            raise _err(where, k, p, "a finite number (-1 for unknown)")
        if k in _INT_FIELDS and v != int(v):
            raise _err(where, k, p, "an integer (-1 for unknown)")
        if k in _INT_FIELDS and v > _INT_MAX:
            raise _err(where, k, p, f"an integer of at most {_INT_MAX} (int64)",
                       "A larger number would wrap to a negative value.")
        if v < 0 and v != -1:
            raise _err(where, k, p, "a value >= 0, or -1 for unknown",
                       "Negative sizes and times other than -1 are not SWF.")
        row.append(v)
    return row


def _check_sizes(a, nodes, keep, lines_no, header: dict, total_nodes, procs_per_node: int, source: str) -> None:
    """No kept job larger than the machine (``total_nodes``, else the ``MaxNodes`` header): a
    :class:`ConfigError` naming the first such line's size field."""
    limit = total_nodes
    if limit is None and "MaxNodes" in header:
        try:
            limit = int(header["MaxNodes"])
        except ValueError:
            limit = None
        if limit is not None and limit <= 0:
            limit = None
    if limit is not None:
        big = np.flatnonzero(keep & (nodes > limit))
        if big.size:
            i = int(big[0])
            k = 7 if a[i, 7] > 0 else 4
            raise _err(f"{source}:{int(lines_no[i])}", k, int(a[i, k]),
                       f"at most {limit * procs_per_node} processors ({limit} nodes, the machine's size"
                       f"{'' if total_nodes is not None else ' from the MaxNodes header'})",
                       "Simulate a larger machine, or clamp the trace to this one.")


def _unix_start(value: str, where: str) -> int:
    """The ``UnixStartTime`` header as an int; a :class:`ConfigError` naming its line otherwise (until 2026-12-06 a
    malformed one was ignored without a word, and the jobs' calendar months became 30-day periods)."""
    try:
        return int(value)
    except ValueError:
        raise ConfigError(f"{where} header UnixStartTime", value,
                          "an integer (the trace's start, s since 1970-01-01 UTC)",
                          "It gives the jobs' calendar months; delete the line for 30-day periods.") from None


def parse_swf(lines, source: str = "<swf>", total_nodes: int | None = None, procs_per_node: int = 1) -> Trace:
    """Parse SWF text (an iterable of lines, or one string); see :func:`read_swf`."""
    procs_per_node = int_arg("procs_per_node", procs_per_node, 1, what="processors per node")
    total_nodes = int_arg("total_nodes", total_nodes, 1, none=True, what="the machine's nodes")
    if isinstance(lines, str):
        lines = lines.splitlines()
    elif isinstance(lines, (bytes, bytearray)) or not hasattr(lines, "__iter__"):
        raise ConfigTypeError("lines", type(lines).__name__, "an iterable of text lines (str), or one str")
    header: dict[str, str] = {}
    header_line: dict[str, int] = {}
    rows: list[list[float]] = []
    where_of: list[int] = []
    first_line: dict[int, int] = {}  # job number -> line of its first use
    duplicate: ConfigError | None = None
    for lineno, line in enumerate(lines, start=1):
        if not isinstance(line, str):
            raise ConfigTypeError(f"{source}:{lineno}", type(line).__name__, "a line of text (str)")
        s = line.strip()
        if not s:
            continue
        if s.startswith(";"):
            body = s.lstrip(";").strip()
            if ":" in body:
                key, _, val = body.partition(":")
                if key.strip() and " " not in key.strip():
                    header.setdefault(key.strip(), val.strip())
                    header_line.setdefault(key.strip(), lineno)
            continue
        parts = s.split()
        where = f"{source}:{lineno}"
        if len(parts) != 18:
            raise ConfigError(f"{where}", s if len(s) <= 80 else s[:77] + "...",
                              f"a job line of 18 whitespace-separated fields (it has {len(parts)})",
                              "Header lines start with ';'.")
        row = _job_fields(parts, where)
        job = int(row[0])
        if job < 0:
            raise _err(where, 0, parts[0], "a known job number >= 0 (unique in the trace)")
        if job in first_line:
            if duplicate is None:  # raised after the whole-trace checks, which name earlier problems first
                duplicate = _err(where, 0, parts[0], f"a job number used once (job {job} is on line "
                                                     f"{first_line[job]} already)",
                                 "Job numbers identify jobs in the results.")
        else:
            first_line[job] = lineno
        rows.append(row)
        where_of.append(lineno)
    a = np.asarray(rows, dtype=np.float64).reshape(-1, 18)
    lines_no = np.asarray(where_of, dtype=np.int64)
    bad = np.flatnonzero(a[:, 1] < 0)
    if bad.size:
        raise _err(f"{source}:{int(lines_no[bad[0]])}", 1, -1, "a known submit time (s) >= 0",
                   "A job without a submit time cannot be simulated.")
    procs = np.where(a[:, 7] > 0, a[:, 7], a[:, 4])
    nodes = np.where(procs > 0, np.ceil(procs / procs_per_node), -1).astype(np.int64)
    run = a[:, 3]
    keep = (nodes > 0) & (run > 0)
    _check_sizes(a, nodes, keep, lines_no, header, total_nodes, procs_per_node, source)
    if duplicate is not None:
        raise duplicate
    if not keep.any():
        n_lines = len(rows)
        got = "no job lines" if not n_lines else f"{n_lines} job lines, every one dropped"
        raise ConfigError(f"swf {source}", got,
                          "a trace with at least one job whose run time (field 4) and size (field 8, else 5) are "
                          "known and > 0: nothing to simulate",
                          "Jobs with an unknown (-1) or zero run time or size are dropped.")
    a, nodes, run = a[keep], nodes[keep], run[keep]
    req = np.where(a[:, 8] > 0, a[:, 8], run)
    attrs: dict = {"source": str(source), "dropped": int((~keep).sum()), "procs_per_node": int(procs_per_node),
                   "swf_header": "; ".join(f"{k}: {v}" for k, v in header.items())}
    if "UnixStartTime" in header:
        attrs["unix_start_time"] = _unix_start(header["UnixStartTime"], f"{source}:{header_line['UnixStartTime']}")
    ids = a[:, 0].astype(np.int64)
    order = np.lexsort((ids, a[:, 1]))
    return Trace(job_id=ids[order], submit=a[order, 1], run_time=run[order], requested_time=req[order],
                 nodes=nodes[order], attrs=attrs)


def read_swf(path: str | os.PathLike[str], total_nodes: int | None = None, procs_per_node: int = 1) -> Trace:
    """Read an SWF file into a :class:`~evaluator.workload.trace.Trace` (jobs sorted by submit time, then number).

    Parameters
    ----------
    path
        The ``.swf`` file (plain text).
    total_nodes
        The machine's nodes: a larger job is an error naming its line. None: the
        header's ``MaxNodes`` if it has one, else no check.
    procs_per_node
        Processors per node: SWF sizes are in processors; a job's nodes are
        ``ceil(processors / procs_per_node)``.
    """
    p = Path(path_arg("path", path))
    if not p.is_file():
        raise ConfigError("swf", str(p), "an existing SWF file (plain text, one job per line)",
                          "It is a directory." if p.is_dir() else None)
    try:
        with p.open("r", encoding="utf-8-sig", errors="replace") as fh:  # -sig: a byte-order mark is no field
            return parse_swf(fh, str(p), total_nodes, procs_per_node)
    except (OSError, UnicodeError) as exc:
        raise ConfigError("swf", str(p), "a readable SWF file", str(exc).splitlines()[0] if str(exc) else None) \
            from None


def write_swf(trace: Trace, path: str | os.PathLike[str], comment: str = "") -> Path:
    """Write a trace as SWF (atomically): the fields the trace knows, ``-1`` elsewhere; status 1 (completed)."""
    out = [f"; {line}" for line in comment.splitlines()] if comment else []
    out.append("; Version: 2.2")
    if "unix_start_time" in trace.attrs:
        out.append(f"; UnixStartTime: {int(trace.attrs['unix_start_time'])}")
    out.append(f"; MaxJobs: {trace.n_jobs}")
    for i in range(trace.n_jobs):
        f = [int(trace.job_id[i]), _num(trace.submit[i]), -1, _num(trace.run_time[i]), int(trace.nodes[i]), -1, -1,
             int(trace.nodes[i]), _num(trace.requested_time[i]), -1, 1, -1, -1, -1, -1, -1, -1, -1]
        out.append(" ".join(str(x) for x in f))
    return write_text(path, "\n".join(out) + "\n")


def _num(x: float):
    x = float(x)
    return int(x) if x == int(x) else x
