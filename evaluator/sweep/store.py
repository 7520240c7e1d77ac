"""The chunk store: finished chunks persisted atomically and verified, one driver per run.

Chunks live under ``<output_dir>/<sweep>/.<run_id>.chunks/<chunk_id>.pkl``.
Each file is written atomically and durably (:func:`evaluator.io.write_pickle`
of a small envelope) and carries its own check: the SHA-256 of the pickled
result, the run id, the chunk id and the chunk's point indices. On resume
every chunk file is verified; one that is truncated, corrupt, or holds
another chunk's or run's points is reported by name and recomputed, never
taken as done. ``manifest.json`` keeps what must survive a resume: the first
start time, which names the run's dataset (``<UTC time>-<hash>.nc``).

A run is locked while a driver works on it (:class:`RunLock`, an OS file lock
that dies with its process), so a second driver on the same run id stops at
once with the holder's process id instead of computing every chunk again.
"""

from __future__ import annotations

import datetime as _dt
import errno
import hashlib
import json
import os
import pickle
import shutil
import socket
import sys
from pathlib import Path

import numpy as np

from .. import io
from .._types import PointInts
from ..errors import RunBusyError, StorageError
from .plan import SweepPlan

__all__ = ["chunk_dir", "write_chunk", "read_chunk", "done_chunks", "manifest", "clear", "RunLock",
           "storage_error", "check_latest"]

_MAGIC = b"evaluator-chunk-v1\n"


def chunk_dir(plan: SweepPlan) -> Path:
    """Directory of the persisted chunks of ``plan``'s run."""
    return plan.out_dir / f".{plan.run_id}.chunks"


def storage_error(plan: SweepPlan, path: Path, exc: OSError, done: int | None = None) -> StorageError:
    """A one-line :class:`StorageError` for a failed write: the file, the cause, what is kept, how to resume."""
    cause = exc.strerror or str(exc)
    kept = ""
    d = chunk_dir(plan)
    if done is None and d.is_dir():
        done = len(list(d.glob("*.pkl")))
    if done:
        kept = f" The {done} chunk(s) finished so far are kept in {d};"
    elif done == 0:
        kept = " No chunk had finished;"
    hint = {errno.ENOSPC: "free some space", errno.EDQUOT: "free some space (disk quota)",
            errno.EACCES: "make the directory writable or choose another sweep.output_dir",
            errno.EROFS: "choose a writable sweep.output_dir",
            errno.ENOTDIR: "a file stands where a directory is needed; choose another sweep.output_dir",
            errno.EEXIST: "a file stands where a directory is needed; choose another sweep.output_dir",
            }.get(exc.errno or 0, "fix the cause")
    return StorageError(f"cannot write {path}: {cause}.{kept} {hint} and rerun the same command to resume.",
                        "sweep.output_dir", str(plan.out_dir), "a writable directory with free space")


def write_chunk(plan: SweepPlan, chunk_id: str, res: dict) -> None:
    """Persist one finished chunk atomically, with its checksum and identity. A failed write raises
    :func:`storage_error` (its ``write`` attribute: the file and the ``OSError``)."""
    payload = pickle.dumps(res, protocol=pickle.HIGHEST_PROTOCOL)
    flat = np.asarray(res["flat"], dtype=np.int64)
    header = {"run_id": plan.run_id, "chunk_id": chunk_id, "sha256": hashlib.sha256(payload).hexdigest(),
              "n_bytes": len(payload), "points_sha256": hashlib.sha256(flat.tobytes()).hexdigest()}
    path = chunk_dir(plan) / f"{chunk_id}.pkl"

    def write(tmp: str) -> None:
        with open(tmp, "wb") as fh:
            fh.write(_MAGIC)
            fh.write(json.dumps(header).encode() + b"\n")
            fh.write(payload)
            fh.flush()
            os.fsync(fh.fileno())

    try:
        io.atomic_write(path, write, suffix=".pkl")
    except OSError as exc:
        err = storage_error(plan, path, exc)
        err.write = (path, exc)  # (for a caller that writes chunks on several threads: it counts them again)
        raise err from None


class _Corrupt(Exception):
    pass


def _load(plan: SweepPlan, chunk_id: str, points: np.ndarray | None = None) -> dict:
    """Read and verify one chunk file; :class:`_Corrupt` with the reason if it does not check out."""
    path = chunk_dir(plan) / f"{chunk_id}.pkl"
    try:
        with open(path, "rb") as fh:
            if fh.read(len(_MAGIC)) != _MAGIC:
                raise _Corrupt("not a chunk file (bad header)")
            try:
                header = json.loads(fh.readline())
            except ValueError:
                raise _Corrupt("unreadable header") from None
            payload = fh.read()
    except OSError as exc:
        raise _Corrupt(exc.strerror or str(exc)) from None
    if header.get("run_id") != plan.run_id or header.get("chunk_id") != chunk_id:
        raise _Corrupt(f"it belongs to run {header.get('run_id')!r}, chunk {header.get('chunk_id')!r}")
    if len(payload) != header.get("n_bytes") or hashlib.sha256(payload).hexdigest() != header.get("sha256"):
        raise _Corrupt(f"checksum mismatch ({len(payload)} of {header.get('n_bytes')} bytes)")
    if points is not None:
        if hashlib.sha256(np.asarray(points, dtype=np.int64).tobytes()).hexdigest() != header.get("points_sha256"):
            raise _Corrupt("it holds other points than this chunk of the plan")
    try:
        return pickle.loads(payload)
    except Exception as exc:  # a checksum collision is not a concern; a pickle of another version may be
        raise _Corrupt(f"cannot be unpickled ({type(exc).__name__})") from None


def done_chunks(plan: SweepPlan, chunks: list[tuple[str, PointInts]] | None = None, warn=None) -> set[str]:
    """Ids of the chunks already persisted and verified.

    Stale temporary files are removed. A chunk file that fails verification
    (truncated, corrupt, garbage, another run's or chunk's points, or a name
    that is not a chunk of this plan) is reported through ``warn`` (default:
    a line on stderr) and deleted, so that it is recomputed.
    """
    d = chunk_dir(plan)
    if not d.exists():
        return set()
    io.remove_stale(d)
    warn = warn or (lambda msg: print(msg, file=sys.stderr))
    points = dict(chunks if chunks is not None else plan.chunks())
    done = set()
    for p in sorted(d.glob("*.pkl")):
        cid = p.stem
        try:
            if cid not in points:
                raise _Corrupt("no chunk of this plan has that name")
            _load(plan, cid, points[cid])
        except _Corrupt as why:
            warn(f"sweep {plan.name}: chunk file {p} is invalid ({why}); it will be recomputed")
            p.unlink(missing_ok=True)
            continue
        done.add(cid)
    return done


def read_chunk(plan: SweepPlan, chunk_id: str) -> dict:
    """One persisted chunk (verified); a :class:`StorageError` naming the file if it no longer checks out."""
    try:
        return _load(plan, chunk_id)
    except _Corrupt as why:
        path = chunk_dir(plan) / f"{chunk_id}.pkl"
        raise StorageError(f"chunk file {path} is invalid ({why}); rerun the same command: it is recomputed.",
                           "chunk", str(path), "a chunk file written by this run") from None


def manifest(plan: SweepPlan) -> dict:
    """Provenance that must survive a resume (the first start time, which names the dataset; ``git_commits``, the
    source's commit at every start, the first start's first: a run resumed under another commit keeps the chunks
    the earlier code computed); created on the first run."""
    path = chunk_dir(plan) / "manifest.json"
    commit = io.git_commit()
    m = None
    if path.exists():
        try:
            m = json.loads(path.read_text())
        except ValueError:
            pass  # a manifest that cannot be read is written again
    if isinstance(m, dict):
        commits = m.setdefault("git_commits", ["unknown"])  # (a manifest of before 2026-12-07: the start's unknown)
        if commit in commits:
            return m
        commits.append(commit)
    else:
        m = {"start_time": _dt.datetime.now(_dt.timezone.utc).isoformat(), "run_id": plan.run_id,
             "content_hash": plan.content_hash, "git_commits": [commit]}
    try:
        io.write_json(path, m)
    except OSError as exc:
        raise storage_error(plan, path, exc) from None
    return m


def note_resume(plan: SweepPlan, m: dict, n_done: int, warn=None) -> None:
    """Say through ``warn`` (default: a line on stderr) when a run with ``n_done`` finished chunks is resumed under
    other code than its first start's (its manifest ``m`` lists more than one commit)."""
    commits = m.get("git_commits", [])
    if n_done and len(set(commits)) > 1:
        (warn or (lambda msg: print(msg, file=sys.stderr)))(
            f"sweep {plan.name}: run {plan.run_id} started at commit {commits[0][:12]} and was resumed at "
            f"{', '.join(c[:12] for c in commits[1:])}: its {n_done} finished chunk(s) are kept as the code of "
            f"their start computed them (the dataset's git_commit names the first start, git_commits_resumed the "
            f"others); to compute every point with this code, remove {chunk_dir(plan)} or give a new sweep.run_id")


def clear(plan: SweepPlan) -> None:
    """Remove the run's chunks (after the final dataset is written)."""
    shutil.rmtree(chunk_dir(plan), ignore_errors=True)


class RunLock:
    """An exclusive lock on one sweep run (``<output_dir>/<sweep>/.<run_id>.lock``), held by a driver.

    It is an OS file lock (``flock``), released by the kernel when the process
    dies, so a killed driver never leaves a run locked. The file records the
    holder (host and process id) for the message a second driver prints; the
    holder removes the file when it releases the lock.

    Another kind of run (a workload study: ``evaluator schedule --study``) gives its own lock ``path``, ``busy``
    (the holder's words -> the :class:`RunBusyError`) and ``fail`` (a path and an ``OSError`` -> the
    :class:`StorageError`) instead of ``plan``.
    """

    def __init__(self, plan: SweepPlan | None = None, *, path: Path | None = None, busy=None, fail=None):
        self.plan = plan
        self.path = plan.out_dir / f".{plan.run_id}.lock" if plan is not None else Path(path)
        self._busy = busy or (lambda holder: RunBusyError(
            f"sweep run {plan.run_id} is busy: {holder} is running it "
            f"(lock {self.path}). Wait for it to finish, or stop it and rerun to resume.",
            "sweep.run_id", plan.run_id, "a run no other live process is working on"))
        self._fail = fail or (lambda where, exc: storage_error(plan, where, exc, done=0))
        self._fd: int | None = None

    def acquire(self) -> RunLock:
        import fcntl

        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise self._fail(self.path.parent, exc) from None
        while True:
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            except OSError as exc:
                raise self._fail(self.path, exc) from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                holder = ""
                try:
                    holder = os.read(fd, 200).decode(errors="replace").strip()
                except OSError:
                    pass
                os.close(fd)
                raise self._busy(holder or "another process") from None
            # The file may have been removed by a holder that just finished: lock the file at the path.
            try:
                same = os.path.samestat(os.fstat(fd), os.stat(self.path))
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)
        os.ftruncate(fd, 0)
        os.write(fd, f"process {os.getpid()} on {socket.gethostname()}\n".encode())
        self._fd = fd
        return self

    def release(self) -> None:
        if self._fd is None:
            return
        try:
            self.path.unlink(missing_ok=True)
        finally:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> RunLock:
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()


def check_latest(plan: SweepPlan) -> None:
    """Before any point: ``plan``'s directory (``<output_dir>/<sweep>``) must hold runs of this sweep (its name) or
    nothing: a sweep named after another command's directory, or with ``sweep.output_dir`` there, took its
    ``latest`` over (until 2026-12-06: ``evaluator query`` of an eval, a study or another sweep then read this
    sweep); a ``latest`` of the user's own is said on stderr (:func:`evaluator.runs.check_latest_owner`). A run of
    the same sweep (another config, a resumed one) is its own."""
    from ..runs import check_latest_owner

    check_latest_owner(plan.out_dir, "evaluator sweep", "sweep.name", plan.name,
                       own=(f"evaluator sweep (sweep {plan.name})", "evaluator sweep (sweep ?)"),
                       expected=f"a sweep whose directory ({plan.out_dir}) holds runs of sweep {plan.name} only, or "
                                f"none",
                       new="this sweep's dataset", taken_by="this sweep's run", instead="this sweep",
                       remedy="Give another sweep.name=NAME (or sweep.output_dir=DIR).")
