"""Reading an OTF2 trace of an MPI program into its records (:func:`read_otf2`, :class:`TraceRecords`);
:mod:`._trace` turns them into traffic (docs/traces.md).

The trace is read with the ``otf2`` package. What is read:

* **Ranks.** A task is an MPI rank. The rank of a location is its index in
  the trace's MPI ``COMM_LOCATIONS`` group (the locations of
  ``MPI_COMM_WORLD`` in rank order, as Score-P writes it); every location of
  the same location group (process) has that rank, so events of other
  threads of a rank count for it. The trace's rank count is that group's
  size.
* **Point-to-point sends**: ``MpiSend`` and ``MpiIsend`` records. Sender =
  the rank of the recording location; receiver = the member ``receiver`` of
  the record's communicator (``Comm -> Group -> members``), as a rank;
  bytes = ``msgLength``. Receives (``MpiRecv``, ``MpiIrecv``) describe the
  same messages and are not read.
* **Collectives**: ``MpiCollectiveEnd`` records (blocking collectives) and
  ``NonBlockingCollectiveComplete`` records (``MPI_Iallreduce`` and the other
  non-blocking collectives, read as their blocking counterpart at their
  completion). Every member of the communicator records one; the ``k``-th
  collective a rank starts on a communicator (blocking: its
  ``MpiCollectiveBegin``; non-blocking: the ``NonBlockingCollectiveRequest``
  of the same request id) is that communicator's ``k``-th collective (MPI
  orders a process's collectives on one communicator, blocking and
  non-blocking together, by when they start). Its time is the latest of its
  records' (its completion). Supported operations are expanded into the
  steps of an algorithm of :mod:`evaluator.traffic._collectives` over the
  communicator's members (:data:`OP_MAP`, byte convention in
  :func:`collective_bytes`); the others are counted in
  :attr:`TraceRecords.ignored` (and a warning names them when they carry
  bytes). A supported collective that some member never recorded is not
  expanded either: it is counted in ``ignored`` as ``"<OP> (not recorded by
  every member)"`` and a warning names it, its communicator and the members
  missing (its records contradict each other: expanding it over every member
  would invent the missing members' traffic, and one recorded by a single
  rank would add a whole collective).

Every problem with the trace is one :class:`~evaluator.errors.ConfigError`
naming ``traffic.path``, the file and what is wrong (missing, truncated or
corrupt files, by name: the event or definitions file of the location that
cannot be read; the OTF2 library's own message), never a raw OTF2 error.

A file the library read without complaint although it was cut short (its buffer, reused, held the
missing bytes) is caught by how OTF2 files end (:func:`_check_complete`).
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from array import array
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from .._types import Float, Int
from ..errors import ConfigError, require

__all__ = ["read_otf2", "TraceRecords", "CollectiveRecord", "OP_MAP", "FIELD", "INCOMPLETE"]

FIELD = "traffic.path"

OP_MAP: dict[str, tuple[str, str]] = {
    "ALLREDUCE": ("allreduce", "sent / N"),
    "ALLTOALL": ("alltoall", "sent / N"),
    "ALLTOALLV": ("alltoall", "mean sent / N"),
    "ALLTOALLW": ("alltoall", "mean sent / N"),
    "ALLGATHER": ("allgather", "sent / N"),
    "ALLGATHERV": ("allgather", "mean sent / N"),
    "BCAST": ("broadcast", "received"),
    "REDUCE": ("reduce", "sent"),
}
"""OTF2 collective operation -> (operation of the collectives module, ``nbytes`` rule of
:func:`collective_bytes`). ``reduce`` is a broadcast run backwards (every step reversed, steps in reverse
order). Operations not listed (BARRIER, GATHER(V), SCATTER(V), SCAN, EXSCAN, REDUCE_SCATTER(_BLOCK), the
one-sided ones) are ignored and counted."""

INCOMPLETE = "(not recorded by every member)"
"""Suffix of the ``ignored`` key of a supported collective that some member of its communicator never recorded."""
_WHAT = "OTF2 trace anchor file (.otf2), or a directory holding one"
_KINDLESS = f"an {_WHAT}"
_UNDEFINED_U32 = 2 ** 32 - 1


def _error(p: str, allowed: str, hint: str | None = None) -> ConfigError:
    return ConfigError(FIELD, p, allowed, hint)


def _one_line(text: str, limit: int = 240) -> str:
    text = " ".join(str(text).split())
    return (text[:limit] + "...") if len(text) > limit else text




# ----------------------------------------------------------------------------------------------
# records
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class CollectiveRecord:
    """One collective operation of the trace (every member's ``MpiCollectiveEnd`` record together).

    Attributes
    ----------
    op
        OTF2 operation name (``"ALLREDUCE"``, ``"BCAST"``, ...).
    comm
        Name of the communicator.
    members
        Ranks of the communicator's members, in communicator order (member ``j`` is communicator rank ``j``).
    root
        Communicator rank of the root (0 for operations without one).
    sent, received : float ndarray, shape [record]
        ``sizeSent``, ``sizeReceived`` of every record (bytes, as the tracer counted them).
    ranks : int ndarray, shape [record]
        Rank that wrote each record.
    time
        Completion (the latest record's time), seconds after the trace's start.
    missing
        Members (ranks) that recorded no record of it: a collective with missing members is not expanded
        (module docstring).
    nonblocking
        Recorded as a non-blocking collective (``NonBlockingCollectiveComplete``: ``MPI_Iallreduce``, ...).
    """

    op: str
    comm: str
    members: tuple[int, ...]
    root: int
    sent: Float[np.ndarray, "record"]
    received: Float[np.ndarray, "record"]
    ranks: Int[np.ndarray, "record"]
    time: float
    missing: tuple[int, ...] = ()
    nonblocking: bool = False


@dataclass(frozen=True, eq=False)
class TraceRecords:
    """What :func:`read_otf2` read from a trace, before any collective is expanded.

    Attributes
    ----------
    path
        The anchor file.
    n_ranks
        Ranks of the trace (size of its MPI ``COMM_LOCATIONS`` group).
    duration
        Seconds from the trace's start to its last event.
    src, dst : int ndarray, shape [send]
        Sender and receiver rank of every point-to-point send.
    nbytes : float ndarray, shape [send]
        ``msgLength`` of every send.
    time : float ndarray, shape [send]
        Seconds after the trace's start.
    after : int ndarray, shape [send]
        Index in :attr:`collectives` of the latest (in completion order) of the collectives its sender completed
        before it (-1: none).
    n_send, n_isend
        ``MpiSend`` and ``MpiIsend`` records read.
    n_nonblocking
        ``NonBlockingCollectiveComplete`` records read (the non-blocking collectives' records).
    resolution
        The trace's timer ticks per second (its times are whole ticks; 0: unknown).
    collectives
        The collective operations, in completion order.
    ignored
        Records not turned into traffic, by what they are (collective operation name, or a description).
    """

    path: str
    n_ranks: int
    duration: float
    src: Int[np.ndarray, "send"]
    dst: Int[np.ndarray, "send"]
    nbytes: Float[np.ndarray, "send"]
    time: Float[np.ndarray, "send"]
    after: Int[np.ndarray, "send"]
    n_send: int
    n_isend: int
    collectives: tuple[CollectiveRecord, ...]
    ignored: dict[str, int]
    n_nonblocking: int = 0
    resolution: float = 0.0


# ----------------------------------------------------------------------------------------------
# reading
# ----------------------------------------------------------------------------------------------


_CALLBACK_TRACEBACK = "An unhandled python exception has occurred in an OTF2_"


@contextlib.contextmanager
def _c_messages():
    """Collect what the OTF2 C library writes to stderr (``[OTF2] ...`` lines) into the yielded list instead
    of the terminal; anything else written to stderr meanwhile is written there afterwards, up to the first
    traceback the otf2 package prints from a callback of its own (that and what follows are dropped, but for the
    library's own lines)."""
    lines: list[str] = []
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError, AttributeError):  # no fd 2 to redirect: let the messages through
        yield lines
        return
    with tempfile.TemporaryFile() as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            yield lines
        finally:
            try:
                sys.stderr.flush()
            except (OSError, ValueError):
                pass
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            text = tmp.read().decode("utf-8", "replace").splitlines()
            # the otf2 package prints the traceback of an exception raised in its own definition callbacks (a
            # duplicate definition read from a corrupt file), then the read fails with an error that says so
            cut = next((i for i, ln in enumerate(text) if ln.startswith(_CALLBACK_TRACEBACK)), len(text))
            other = [ln for ln in text[:cut] if not ln.startswith("[OTF2]")]
            if other:
                sys.stderr.write("\n".join(other) + "\n")
            lines.extend(ln for ln in text if ln.startswith("[OTF2]"))


def _c_detail(lines: list[str]) -> str:
    """The OTF2 library's message that says most: one naming a file or a malformed file, else the first (the
    root cause; later ones repeat it up the call chain)."""
    msgs = [ln.partition("error: ")[2] for ln in lines if "error: " in ln]
    telling = [m for m in msgs if any(k in m for k in ("POSIX", "Malformed", "end of file", "does not exist"))]
    return _one_line((telling or msgs or [""])[0], 200)


def _library_error(p: str, stage: str, exc: BaseException, lines: list[str]) -> ConfigError:
    detail = _c_detail(lines)
    what = detail or _one_line(getattr(exc, "description", None) or str(exc) or type(exc).__name__, 200)
    return _error(p, "a complete, readable OTF2 trace (the anchor .otf2 file, its .def file and its directory "
                     "of per-location .def/.evt files)",
                  f"Reading {stage} failed: {what.rstrip('.!')}. The trace may be truncated or corrupt (an "
                  f"interrupted copy or run?).")


def _anchor(path) -> str:
    """The anchor file of ``path`` (an .otf2 file, or a directory holding exactly one), checked to exist with
    its global definitions file and its directory of local files."""
    if not isinstance(path, (str, os.PathLike)):
        raise ConfigError(FIELD, path, _KINDLESS)
    p = os.fspath(path)
    if isinstance(p, bytes):
        p = os.fsdecode(p)
    if not os.path.lexists(p):
        hint = None if os.path.isabs(p) else f"No such file; relative paths start at {os.getcwd()}."
        raise _error(p, f"an existing {_WHAT}", hint or "No such file.")
    if os.path.isdir(p):
        try:
            found = sorted(f for f in os.listdir(p) if f.endswith(".otf2") and os.path.isfile(os.path.join(p, f)))
        except OSError as exc:
            raise _error(p, f"a readable {_WHAT}", f"Listing it failed: {exc.strerror or exc}.") from None
        require(len(found) == 1, FIELD, p, "a directory holding exactly one OTF2 anchor file (.otf2)",
                f"It holds {found}; give the anchor file's path." if found else "It holds no .otf2 file.")
        p = os.path.join(p, found[0])
    require(p.endswith(".otf2"), FIELD, p, "an OTF2 trace anchor file, whose name ends in .otf2",
            "Give the anchor file (e.g. traces.otf2 of a Score-P experiment directory), not one of the .def/.evt "
            "files next to it.")
    try:
        with open(p, "rb") as fh:
            head = fh.read(1)
    except PermissionError:
        raise _error(p, "a readable OTF2 anchor file", "Permission denied: the file cannot be read by this user "
                                                     "(check its permissions, e.g. chmod u+r).") from None
    except OSError as exc:
        raise _error(p, "a readable OTF2 anchor file", f"Reading it failed: {exc.strerror or exc}.") from None
    if not head:
        raise _error(p, "a non-empty OTF2 anchor file", "The file is empty (0 bytes): an interrupted copy or run?")
    stem = p[: -len(".otf2")]
    if not os.path.isfile(stem + ".def"):
        raise _error(p, "an OTF2 trace with its global definitions file next to the anchor",
                     f"The global definitions file {stem + '.def'} is missing; copy the whole trace directory.")
    return p


def _check_local_files(p: str, locations) -> None:
    """Each location's event file ``<anchor stem>/<location id>.evt`` (POSIX layout: checked when the directory
    holds .evt files; another substrate is left to the library)."""
    d = p[: -len(".otf2")]
    try:
        names = set(os.listdir(d))
    except OSError:
        names = set()
    if not any(n.endswith(".evt") for n in names):
        if not os.path.isdir(d):
            raise _error(p, "an OTF2 trace with its directory of per-location event files",
                         f"The directory {d} is missing; copy the whole trace directory.")
        return
    for loc in locations:
        name = f"{loc._ref}.evt"
        if name not in names:
            raise _error(p, "an OTF2 trace with an event file for every location",
                         f"The event file {os.path.join(d, name)} of location {loc.name!r} is missing; copy the "
                         f"whole trace directory.")


def _op_names() -> dict[int, str]:
    import _otf2

    return {int(v.value) if hasattr(v, "value") else int(v): n[len("COLLECTIVE_OP_"):]
            for n, v in vars(_otf2).items() if n.startswith("COLLECTIVE_OP_")}


def _rank_map(p: str, defs) -> tuple[dict[int, int], int]:
    """``{location group ref: rank}`` and the rank count, from the MPI ``COMM_LOCATIONS`` group."""
    from otf2.enums import GroupType, Paradigm

    world = [g for g in defs.groups if g.group_type == GroupType.COMM_LOCATIONS and g.paradigm == Paradigm.MPI]
    if not world:
        raise _error(p, "an OTF2 trace of an MPI program (with an MPI COMM_LOCATIONS group listing the ranks' "
                        "locations, as Score-P writes)",
                     "The trace defines no MPI locations group: was MPI recorded?")
    members = world[-1].members
    ranks: dict[int, int] = {}
    for r, loc in enumerate(members):
        ranks.setdefault(loc.group._ref, r)
    return ranks, len(members)


def _comm_members(p: str, defs, rank_of_group: dict[int, int]) -> dict[int, object]:
    """``{comm ref: int array of member ranks}``; ``"self"`` for a COMM_SELF communicator, None for one that
    is not an intra-communicator of ranks (an inter-communicator)."""
    from otf2.enums import GroupType

    out: dict[int, object] = {}
    for c in defs.comms:
        g = getattr(c, "group", None)
        if g is None:
            out[c._ref] = None
            continue
        if g.group_type == GroupType.COMM_SELF:
            out[c._ref] = "self"
            continue
        try:
            out[c._ref] = np.array([rank_of_group[m.group._ref] for m in g.members], dtype=np.int64)
        except (KeyError, AttributeError):
            raise _error(p, "an OTF2 trace whose communicators' members are MPI ranks",
                         f"Communicator {c.name!r} has a member that is no rank's location.") from None
    return out


@dataclass
class _Raw:
    """The columns the event callbacks fill, and what the definitions give to interpret them."""

    n_ranks: int = 0
    resolution: float = 1.0
    offset: int = 0
    length: int = 0
    loc_rank: dict = field(default_factory=dict)
    members: dict = field(default_factory=dict)
    comm_names: dict = field(default_factory=dict)
    s_loc: array = field(default_factory=lambda: array("q"))
    s_time: array = field(default_factory=lambda: array("Q"))
    s_recv: array = field(default_factory=lambda: array("q"))
    s_comm: array = field(default_factory=lambda: array("q"))
    s_len: array = field(default_factory=lambda: array("d"))
    s_after: array = field(default_factory=lambda: array("q"))
    c_comm: array = field(default_factory=lambda: array("q"))
    c_rank: array = field(default_factory=lambda: array("q"))
    c_start: array = field(default_factory=lambda: array("Q"))
    c_time: array = field(default_factory=lambda: array("Q"))
    c_op: array = field(default_factory=lambda: array("q"))
    c_root: array = field(default_factory=lambda: array("q"))
    c_sent: array = field(default_factory=lambda: array("d"))
    c_recv: array = field(default_factory=lambda: array("d"))
    c_nb: array = field(default_factory=lambda: array("b"))
    locations: list = field(default_factory=list)
    unmatched_requests: int = 0
    counts: Counter = field(default_factory=Counter)


def _read_raw(p: str, stage: list) -> _Raw:
    """Read the definitions and the MPI records of the trace ``p`` (``stage``: what is being read, for an
    error raised by the library: its words, ``"def"``/``"evt"`` while the per-location files are read, and the
    locations ``[(ref, name)]``)."""
    import _otf2
    import otf2

    raw = _Raw()
    with contextlib.ExitStack() as stack:
        stem = p[: -len(".otf2")]
        stage[0] = f"the anchor file and the global definitions ({os.path.basename(stem)}.def)"
        reader = stack.enter_context(otf2.reader.open(p))
        defs = reader.definitions
        clock = defs.clock_properties
        raw.resolution = float(clock.timer_resolution) or 1.0
        raw.offset = int(clock.global_offset)
        raw.length = int(clock.trace_length)
        locations = list(defs.locations)
        rank_of_group, raw.n_ranks = _rank_map(p, defs)
        raw.members = _comm_members(p, defs, rank_of_group)
        raw.loc_rank = loc_rank = {loc._ref: rank_of_group.get(loc.group._ref, -1) for loc in locations}
        raw.comm_names = {c._ref: c.name for c in defs.comms}
        _check_local_files(p, locations)

        raw.locations = [(loc._ref, loc.name) for loc in locations]
        stage[2] = raw.locations
        # The callbacks only append (an exception in one would be printed by the library, not raised). Which
        # collective a record belongs to is worked out after reading (:func:`_instances`): by the order in which
        # its rank started its collectives on the communicator.
        started: dict[int, int] = {}  # location -> time of its open MpiCollectiveBegin
        requests: dict[tuple[int, int], int] = {}  # (location, request id) -> time of its NonBlockingCollectiveRequest
        last: dict[int, int] = {}  # rank -> row of the last collective record it completed

        def send(loc, time, receiver, comm, length, kind):
            raw.counts[kind] += 1
            raw.s_loc.append(loc)
            raw.s_time.append(time)
            raw.s_recv.append(receiver)
            raw.s_comm.append(comm)
            raw.s_len.append(length)
            raw.s_after.append(last.get(loc_rank.get(loc, -1), -1))

        def on_send(loc, time, _ud, _attrs, receiver, comm, _tag, length):
            send(loc, time, receiver, comm, length, "send")

        def on_isend(loc, time, _ud, _attrs, receiver, comm, _tag, length, _request):
            send(loc, time, receiver, comm, length, "isend")

        def coll(loc, start, time, op, comm, root, sent, received, nonblocking):
            r = loc_rank.get(loc, -1)
            last[r] = len(raw.c_rank)
            raw.c_comm.append(comm)
            raw.c_rank.append(r)
            raw.c_start.append(start)
            raw.c_time.append(time)
            raw.c_op.append(int(getattr(op, "value", op)))
            raw.c_root.append(root)
            raw.c_sent.append(sent)
            raw.c_recv.append(received)
            raw.c_nb.append(nonblocking)

        def on_coll_begin(loc, time, _ud, _attrs):
            started[loc] = time

        def on_coll(loc, time, _ud, _attrs, op, comm, root, sent, received):
            coll(loc, started.pop(loc, time), time, op, comm, root, sent, received, 0)

        def on_nb_request(loc, time, _ud, _attrs, request):
            requests[(loc, request)] = time

        def on_nb_complete(loc, time, _ud, _attrs, op, comm, root, sent, received, request):
            raw.counts["nonblocking"] += 1
            coll(loc, requests.pop((loc, request), time), time, op, comm, root, sent, received, 1)

        stage[0], stage[1] = f"the local definitions (the .def files in {stem})", "def"
        handle = reader.handle
        for loc in locations:
            _otf2.Reader_SelectLocation(handle, loc._ref)
        def_files = True
        try:
            _otf2.Reader_OpenDefFiles(handle)
        except _otf2.Error:  # no local definition files: allowed
            def_files = False
        _otf2.Reader_OpenEvtFiles(handle)
        stack.callback(_otf2.Reader_CloseEvtFiles, handle)
        for loc in locations:
            if def_files:
                dr = _otf2.Reader_GetDefReader(handle, loc._ref)
                if dr:
                    _otf2.Reader_ReadAllLocalDefinitions(handle, dr)
                    _otf2.Reader_CloseDefReader(handle, dr)
            _otf2.Reader_GetEvtReader(handle, loc._ref)
        if def_files:
            _otf2.Reader_CloseDefFiles(handle)
        stage[0], stage[1] = f"the events (the .evt files in {stem})", "evt"
        gr = _otf2.Reader_GetGlobalEvtReader(handle)
        if not gr:
            raise _otf2.Error(_otf2.ERROR_INVALID)
        stack.callback(_otf2.Reader_CloseGlobalEvtReader, handle, gr)
        cbs = _otf2.GlobalEvtReaderCallbacks_New()
        try:
            _otf2.GlobalEvtReaderCallbacks_SetMpiSendCallback(cbs, on_send)
            _otf2.GlobalEvtReaderCallbacks_SetMpiIsendCallback(cbs, on_isend)
            _otf2.GlobalEvtReaderCallbacks_SetMpiCollectiveBeginCallback(cbs, on_coll_begin)
            _otf2.GlobalEvtReaderCallbacks_SetMpiCollectiveEndCallback(cbs, on_coll)
            _otf2.GlobalEvtReaderCallbacks_SetNonBlockingCollectiveRequestCallback(cbs, on_nb_request)
            _otf2.GlobalEvtReaderCallbacks_SetNonBlockingCollectiveCompleteCallback(cbs, on_nb_complete)
            _otf2.GlobalEvtReader_SetCallbacks(gr, cbs, None)
        finally:
            _otf2.GlobalEvtReaderCallbacks_Delete(cbs)
        batch = 1 << 20
        while _otf2.GlobalEvtReader_ReadEvents(gr, batch) == batch:
            pass
        raw.unmatched_requests = len(requests)
    return raw


_PROBE = """
import sys, _otf2
p, kind, refs = sys.argv[1], sys.argv[2], [int(x) for x in sys.argv[3:]]
h = _otf2.Reader_Open(p)
if kind == "global":
    print("global", flush=True)
    _otf2.Reader_ReadAllGlobalDefinitions(h, _otf2.Reader_GetGlobalDefReader(h))
    print("ok", flush=True)
    sys.exit(0)
_otf2.Reader_SetSerialCollectiveCallbacks(h)
for ref in refs:
    _otf2.Reader_SelectLocation(h, ref)
(_otf2.Reader_OpenEvtFiles if kind == "evt" else _otf2.Reader_OpenDefFiles)(h)
for ref in refs:
    print(ref, flush=True)
    if kind == "evt":
        _otf2.Reader_ReadAllLocalEvents(h, _otf2.Reader_GetEvtReader(h, ref))
    else:
        dr = _otf2.Reader_GetDefReader(h, ref)
        if dr:
            _otf2.Reader_ReadAllLocalDefinitions(h, dr)
print("ok", flush=True)
"""


def _unreadable_file(p: str, kind: str, locations, timeout: float = 60.0) -> tuple[str, str, list[str]] | None:
    """``(file, location name, the library's messages)`` of the first location whose own event (``kind="evt"``)
    or local definitions (``"def"``) file the library cannot read, each read alone (after a failure, to name the
    file: the reader of the whole trace only says that some record was malformed), or of the global definitions
    (``"global"``, ``locations`` unused); None if each reads alone or the check fails.

    The check runs in a fresh Python process: after a read, this process's OTF2 library may read a truncated
    chunk's missing bytes from memory it freed, and find nothing wrong."""
    import subprocess

    refs = [int(ref) for ref, _ in locations] if kind != "global" else []
    try:
        run = subprocess.run([sys.executable, "-c", _PROBE, p, kind, *map(str, refs)], capture_output=True,
                             text=True, timeout=timeout, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    out, lines = run.stdout.split(), [ln for ln in run.stderr.splitlines() if ln.startswith("[OTF2]")]
    if not out or out[-1] == "ok":
        return None
    if kind == "global":
        return p[: -len(".otf2")] + ".def", "global definitions", lines
    try:
        ref = int(out[-1])
    except ValueError:
        return None
    name = dict((int(r), n) for r, n in locations).get(ref, str(ref))
    return os.path.join(p[: -len(".otf2")], f"{ref}.{kind}"), str(name), lines


# How every file the OTF2 library writes ends: its END_OF_FILE record, then the chunk's END_OF_CHUNK.
_FILE_END = b"\x02\x01"


def _ends_complete(path: str) -> bool:
    """Whether the file ``path`` ends as the OTF2 library ends a file it wrote (True if it cannot be read here:
    the library read it)."""
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            fh.seek(max(0, fh.tell() - len(_FILE_END)))
            return fh.read() == _FILE_END
    except OSError:
        return True


def _check_complete(p: str, locations) -> None:
    """Refuse a trace one of whose files was cut short although the library read it without complaint.

    The library reads a file chunk by chunk into buffers it reuses: when the file ends early, the rest of the
    chunk is whatever the buffer held, and after a complete copy of the same trace was read in this process
    (a test suite, a study reading a trace twice) that is the missing bytes themselves, so the read succeeds.
    A file that does not end as the library ends a file is therefore read again, alone, in a fresh process
    (:func:`_unreadable_file`); only a file that fails there is refused (a file that reads there is accepted:
    a writer may end files differently)."""
    stem = p[: -len(".otf2")]
    suspects = [] if _ends_complete(stem + ".def") else [("global", [])]
    for kind in ("def", "evt"):
        odd = [(ref, name) for ref, name in locations
               if os.path.exists(f := os.path.join(stem, f"{ref}.{kind}")) and not _ends_complete(f)]
        if odd:
            suspects.append((kind, odd))
    for kind, locs in suspects:
        bad = _unreadable_file(p, kind, locs)
        if bad is not None:
            stage = "the global definitions" if kind == "global" else \
                f"the {'events' if kind == 'evt' else 'local definitions'} of location {bad[1]!r}"
            raise _library_error(p, f"{stage} (the file {bad[0]})",
                                 ValueError("the file ends before the record that ends an OTF2 file"), bad[2])


def _arr(a: array, dtype) -> np.ndarray:
    return np.frombuffer(a, dtype=dtype) if len(a) else np.zeros(0, dtype)


def read_otf2(path) -> TraceRecords:
    """The point-to-point sends and collective operations of an OTF2 trace (module docstring).

    ``path``: the anchor file (``traces.otf2``) or a directory holding exactly one. Raises
    :class:`~evaluator.errors.ConfigError` naming ``traffic.path`` for any problem with the trace.
    """
    p = _anchor(path)
    raw = _read_checked(p)
    ignored: Counter = Counter()
    src, dst, keep = _send_ranks(p, raw, ignored)
    nbytes = _arr(raw.s_len, np.float64)
    times = (_arr(raw.s_time, np.uint64).astype(np.float64) - raw.offset) / raw.resolution
    colls, inst, order = _collectives(p, raw, ignored)
    after = _arr(raw.s_after, np.int64)
    if order.size and after.size:  # the sender's last completed collective record -> a position in completion order
        position = np.empty(order.size, np.int64)
        position[order] = np.arange(order.size)
        latest = _latest_position(position[inst], _arr(raw.c_rank, np.int64))
        after = np.where(after >= 0, latest[np.maximum(after, 0)], -1)
    if raw.unmatched_requests:
        ignored["NonBlockingCollectiveRequest never completed"] += raw.unmatched_requests
    duration = max(0.0, raw.length / raw.resolution)
    return TraceRecords(p, raw.n_ranks, duration, src[keep], dst[keep], nbytes[keep], times[keep], after[keep],
                        raw.counts["send"], raw.counts["isend"], tuple(colls), dict(ignored),
                        raw.counts["nonblocking"], float(raw.resolution))


def _latest_position(pos: np.ndarray, rank: np.ndarray) -> np.ndarray:
    """For every collective record (in reading order), the latest position in completion order among the records its
    rank has written up to it: a rank's send follows every collective it has taken part in (the last record it
    wrote may be a collective that completes earlier than one of its previous ones, on another communicator; the
    send then went into the phase before that earlier-recorded collective's steps)."""
    o = np.lexsort((np.arange(rank.size), rank))
    grp = np.concatenate([[0], np.cumsum(rank[o][1:] != rank[o][:-1])])
    span = int(pos.max(initial=0)) + 1
    out = np.empty_like(pos)
    out[o] = np.maximum.accumulate(pos[o] + grp * span) - grp * span
    return out


def _read_checked(p: str) -> _Raw:
    """:func:`_read_raw` of the trace ``p``; any failure of the library a :class:`ConfigError` naming the file it
    could not read (:func:`_unreadable_file`), and a file cut short refused even where the library read it
    (:func:`_check_complete`)."""
    import _otf2
    import otf2

    lib_errors = (_otf2.Error, otf2.error.Error, TypeError, KeyError, ValueError, AttributeError, IndexError)
    stage: list = ["the trace", None, []]
    failure = None
    with _c_messages() as lines:
        try:
            raw = _read_raw(p, stage)
        except ConfigError:
            raise
        except lib_errors as exc:
            failure = exc
    if failure is not None:
        if stage[1] is not None and stage[2]:
            bad = _unreadable_file(p, stage[1], stage[2])
            if bad is not None:
                stage[0] = f"the {'events' if stage[1] == 'evt' else 'local definitions'} of location {bad[1]!r} " \
                           f"(the file {bad[0]})"
        raise _library_error(p, stage[0], failure, lines)
    _check_complete(p, raw.locations)
    return raw


def _send_ranks(p: str, raw: _Raw, ignored: Counter) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(sender rank, receiver rank, kept)`` of every point-to-point send record (a send on a location of no rank
    or on an inter-communicator is not kept, and counted in ``ignored``)."""
    loc_rank, members, comm_names = raw.loc_rank, raw.members, raw.comm_names
    loc_a = _arr(raw.s_loc, np.int64)
    refs = np.array(sorted(loc_rank), dtype=np.int64)
    rank_of_ref = np.array([loc_rank[r] for r in refs.tolist()] + [-1], dtype=np.int64)
    at = np.searchsorted(refs, loc_a)
    src = rank_of_ref[np.where(refs[np.minimum(at, refs.size - 1)] == loc_a, at, refs.size)] if refs.size \
        else np.full(loc_a.size, -1, np.int64)
    recv = _arr(raw.s_recv, np.int64)
    comm_a = _arr(raw.s_comm, np.int64)
    dst = np.full(src.size, -1, dtype=np.int64)
    keep = src >= 0
    if (~keep).any():
        ignored["MpiSend/MpiIsend on a location of no MPI rank"] += int((~keep).sum())
    for c in np.unique(comm_a).tolist():
        sel = (comm_a == c) & keep
        if c not in members:
            raise _error(p, "an OTF2 trace whose send records name defined communicators",
                         f"A send record names communicator id {c}, which the definitions do not define.")
        m = members[c]
        if m is None:
            ignored["MpiSend/MpiIsend on an inter-communicator"] += int(sel.sum())
            keep &= comm_a != c
            continue
        size = 1 if isinstance(m, str) else m.size
        bad = sel & ((recv < 0) | (recv >= size))
        if bad.any():
            i = int(np.argmax(bad))
            raise _error(p, "an OTF2 trace whose send records name members of their communicator",
                         f"A send of rank {int(src[i])} names receiver {int(recv[i])} of communicator "
                         f"{comm_names.get(c, c)!r}, which has {size} member(s).")
        dst[sel] = src[sel] if isinstance(m, str) else m[recv[sel]]  # COMM_SELF: the sender itself
    return src, dst, keep


def _collectives(p: str, raw: _Raw, ignored: Counter) -> tuple[list[CollectiveRecord], np.ndarray, np.ndarray]:
    """``(the collective operations in completion order, the instance of every collective record, the instances in
    completion order)``; what is not modelled is counted in ``ignored``."""
    members, comm_names = raw.members, raw.comm_names
    names = _op_names()
    colls: list[CollectiveRecord] = []
    ranks_a = _arr(raw.c_rank, np.int64)
    comm_c = _arr(raw.c_comm, np.int64)
    inst, inst_comm = _instances(comm_c, ranks_a, _arr(raw.c_start, np.uint64))
    n_inst = len(inst_comm)
    nb_a = _arr(raw.c_nb, np.int8)
    t_a = (_arr(raw.c_time, np.uint64).astype(np.float64) - raw.offset) / raw.resolution
    op_a = _arr(raw.c_op, np.int64)
    root_a = _arr(raw.c_root, np.int64)
    sent_a = _arr(raw.c_sent, np.float64)
    recv_a = _arr(raw.c_recv, np.float64)
    srt = np.argsort(inst, kind="stable")
    bounds = np.searchsorted(inst[srt], np.arange(n_inst + 1))
    done = np.array([t_a[srt[bounds[i]:bounds[i + 1]]].max() for i in range(n_inst)])
    order = np.lexsort((np.arange(n_inst), done)) if n_inst else np.zeros(0, np.int64)
    for i in order.tolist():
        rows = srt[bounds[i]:bounds[i + 1]]
        comm = int(inst_comm[i])
        cname = comm_names.get(comm, str(comm))
        ops = sorted(set(op_a[rows].tolist()))
        if len(ops) != 1:
            raise _error(p, "an OTF2 trace whose ranks record the same collective operations on a communicator "
                            "in the same order",
                         f"The ranks of communicator {cname!r} disagree on one of its collective operations: "
                         f"{[names.get(o, str(o)) for o in ops]}.")
        op = names.get(ops[0], f"UNKNOWN({ops[0]})")
        m = members.get(comm)
        if isinstance(m, str):  # COMM_SELF: one rank, no traffic
            m = ranks_a[rows][:1]
        elif m is None:  # an inter-communicator: recorded, not modelled
            m = np.zeros(0, np.int64)
            ignored[f"{op} on an inter-communicator"] += 1
        elif op not in OP_MAP:
            ignored[op] += 1
        if not isinstance(m, str) and m.size and not np.isin(ranks_a[rows], m).all():  # sizes of a non-member
            out = sorted(set(ranks_a[rows][~np.isin(ranks_a[rows], m)].tolist()))
            raise _error(p, "an OTF2 trace whose collective records are written by members of their communicator",
                         f"A {op} on communicator {cname!r} (members: ranks {m.tolist()[:16]}"
                         f"{'...' if m.size > 16 else ''}) has records of rank(s) {out}{' (-1: no rank)' * (-1 in out)}"
                         f", which are no members of it; their sizes would be taken for the operation's.")
        missing: tuple[int, ...] = ()
        if op in OP_MAP and m.size >= 2:
            missing = tuple(np.setdiff1d(m, ranks_a[rows]).tolist())
            if missing:  # some member never recorded it: not expanded (module docstring)
                missing = tuple(x for x in m.tolist() if x in set(missing))  # in communicator order
                ignored[f"{op} {INCOMPLETE}"] += 1
        roots = sorted(set(root_a[rows].tolist()))
        root = 0
        if op in ("BCAST", "REDUCE") and m.size and not missing:
            if len(roots) != 1 or not 0 <= roots[0] < m.size:
                raise _error(p, "an OTF2 trace whose rooted collectives name one member of their communicator "
                                "as root", f"A {op} on communicator {cname!r} ({m.size} members) has root(s) "
                                           f"{roots}.")
            root = roots[0]
        colls.append(CollectiveRecord(op, cname, tuple(m.tolist()), int(root), sent_a[rows].copy(),
                                      recv_a[rows].copy(), ranks_a[rows].copy(), float(done[i]), missing,
                                      bool(nb_a[rows].any())))
    return colls, inst, order


def _instances(comm: np.ndarray, rank: np.ndarray, start: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(instance of every collective record, communicator of every instance)``: the ``k``-th collective a rank
    started on a communicator (by ``start``; records in reading order where they started at the same tick) is that
    communicator's ``k``-th; instances are numbered in the order their first record was read."""
    n = comm.size
    if n == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    idx = np.arange(n)
    o = np.lexsort((idx, start, rank, comm))
    new = np.ones(n, bool)
    new[1:] = (comm[o][1:] != comm[o][:-1]) | (rank[o][1:] != rank[o][:-1])
    starts = np.flatnonzero(new)
    seq = np.empty(n, np.int64)
    seq[o] = idx - starts[np.cumsum(new) - 1]
    _, cidx = np.unique(comm, return_inverse=True)
    key = cidx.reshape(-1).astype(np.int64) * (int(seq.max()) + 1) + seq
    _, inst0 = np.unique(key, return_inverse=True)
    inst0 = inst0.reshape(-1)
    first = np.full(int(inst0.max()) + 1, n, np.int64)
    np.minimum.at(first, inst0, idx)
    by_first = np.argsort(first, kind="stable")
    renumber = np.empty_like(by_first)
    renumber[by_first] = np.arange(by_first.size)
    return renumber[inst0], comm[first[by_first]]
