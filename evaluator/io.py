"""Every file the package writes, written atomically; and where ``conf/`` lives.

A file appears under its final name complete or not at all: it is written to
a temporary name in the same directory and moved into place with
:func:`os.replace` (atomic on POSIX). A crash or ``kill -9`` mid-write leaves
at most a ``*.tmp`` file, which readers ignore and :func:`remove_stale` clears.
Files get the usual permissions (``0666 & ~umask``), not ``mkstemp``'s 0600.

* :func:`write_netcdf` (h5netcdf), :func:`write_zarr` (a directory),
  :func:`save_figure` (PNG through the Agg canvas: never switches the global
  matplotlib backend), :func:`write_pickle` (fsynced; sweep chunks),
  :func:`write_text`, :func:`write_json`;
* :func:`write_dataset`: a dataset of one command under ``<dir>/<UTC time>-<hash>.nc``
  with ``git_commit`` and ``created`` attributes, never over an earlier one;
* :func:`run_name` / :func:`point_latest`: result names that say when they ran
  (``20261126T004512Z-<hash>``) and the ``<dir>/latest`` link to the newest;
* :func:`conf_dir` / :func:`repo_dir`: the Hydra config directory
  (``$EVALUATOR_CONF`` or the ``conf/`` next to the package) and the
  directory holding it and ``sweeps/``.
"""

from __future__ import annotations

import datetime as _dt
import errno
import functools
import hashlib
import json
import os
import pickle
import re
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = [
    "CONF_ENV",
    "conf_dir",
    "repo_dir",
    "atomic_write",
    "write_netcdf",
    "write_zarr",
    "zarr_damage",
    "ZARR_FILES",
    "save_figure",
    "write_pickle",
    "read_pickle",
    "write_text",
    "write_json",
    "remove_stale",
    "write_dataset",
    "git_commit",
    "new_run_id",
    "run_name",
    "content_key",
    "run_time",
    "point_latest",
    "LATEST",
    "TIME_FORMAT",
    "check_writable",
    "read_yaml",
    "point_latest_at",
    "foreign_latest",
    "is_our_figure",
]

CONF_ENV = "EVALUATOR_CONF"
"""Environment variable naming another ``conf/`` directory."""


def conf_dir() -> Path:
    """The ``conf/`` directory: ``$EVALUATOR_CONF``, else the one next to the package."""
    env = os.environ.get(CONF_ENV)
    if env:
        return Path(env).resolve()
    return (Path(__file__).resolve().parent.parent / "conf").resolve()


_YAML_FLOAT = re.compile(r"""^(?:[-+]?[0-9][0-9_]*(?:\.[0-9_]*)?[eE][-+]?[0-9]+
                          |[-+]?\.[0-9_]+[eE][-+]?[0-9]+)$""", re.X)
"""The floats YAML 1.2 writes that PyYAML's YAML 1.1 reads as text: ``2e9``, ``2.0e9``, ``.5e-3``."""


def read_yaml(stream: Any) -> Any:
    """``yaml.safe_load`` of ``stream`` (text or a file), ``2e9`` read as the number it is (as OmegaConf and
    Hydra read the ``conf/`` files), not as the text PyYAML's YAML 1.1 makes of it: a machine, price or study
    file's ``link_bandwidth: 2e9`` is a bandwidth, and text is refused where a number goes."""
    import yaml

    return yaml.load(stream, Loader=_yaml_loader())  # noqa: S506 (a SafeLoader)


@functools.lru_cache(maxsize=1)
def _yaml_loader():
    import yaml

    class Loader(yaml.SafeLoader):
        pass

    Loader.add_implicit_resolver("tag:yaml.org,2002:float", _YAML_FLOAT, list("-+0123456789."))
    return Loader


def repo_dir() -> Path:
    """Directory holding ``conf/`` and ``sweeps/``."""
    return conf_dir().parent


def _file_mode() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def atomic_write(path: str | os.PathLike[str], write: Callable[[str], None], suffix: str = "",
                 exclusive: bool = False) -> Path:
    """Call ``write(tmp_path)`` on a temporary file next to ``path``, then move it into place.

    The parent directory is created if needed; on any failure the temporary
    file is removed and ``path`` is left as it was. ``exclusive``: never
    replace an existing ``path`` (:class:`FileExistsError`; the file is linked
    into place, which fails if the name is taken).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=suffix + ".tmp", dir=path.parent)
    os.close(fd)
    try:
        write(tmp)
        os.chmod(tmp, _file_mode())
        if not exclusive:
            os.replace(tmp, path)
        else:
            try:
                os.link(tmp, path)
            except FileExistsError:
                raise
            except OSError:  # a filesystem without hard links: check, then move
                if os.path.lexists(path):
                    raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), str(path)) from None
                os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path


def write_netcdf(ds, path: str | os.PathLike[str], exclusive: bool = False) -> Path:
    """Write an :class:`xarray.Dataset` to netCDF (h5netcdf) atomically (``exclusive``: see :func:`atomic_write`)."""
    return atomic_write(path, lambda tmp: ds.to_netcdf(tmp, engine="h5netcdf"), suffix=".nc", exclusive=exclusive)


ZARR_FORMAT = 2
"""Zarr stores are written in format 2: it specifies what the datasets hold (fixed-length unicode labels, the
consolidated metadata that opens a store in one read), which format 3 leaves to unstable extensions (zarr warns
on every such array); every zarr reader reads format 2."""


ZARR_FILES = ".evaluator-files.json"
"""The list of every file :func:`write_zarr` wrote into a store, with its size and SHA-256 (:func:`zarr_damage`
checks them when the store is read): zarr itself reads a missing chunk file as the array's fill value (NaN, or
False for ``feasible``), so a lost chunk read as "no feasible point" until 2026-12-06."""


def _store_files(root: Path) -> dict[str, list]:
    out = {}
    for f in sorted(root.rglob("*")):
        if f.is_file() and f.name != ZARR_FILES:
            out[f.relative_to(root).as_posix()] = [f.stat().st_size, hashlib.sha256(f.read_bytes()).hexdigest()]
    return out


def write_zarr(ds, path: str | os.PathLike[str]) -> Path:
    """Write an :class:`xarray.Dataset` to a zarr directory (format 2, consolidated metadata) atomically
    (temporary directory, then rename). Every chunk is written, an empty one (all fill value) included, and
    :data:`ZARR_FILES` lists the files, so that a file lost or damaged later is found (:func:`zarr_damage`)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=path.parent, prefix=f".{path.name}.", suffix=".zarr.tmp"))
    try:
        shutil.rmtree(tmp)
        ds.to_zarr(tmp, mode="w", zarr_format=ZARR_FORMAT, consolidated=True, write_empty_chunks=True)
        write_json(tmp / ZARR_FILES, {"files": _store_files(tmp)})
        _replace_dir(tmp, path)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return path


def _replace_dir(tmp: Path, path: Path) -> None:
    """Move the directory ``tmp`` to ``path``, replacing a store there: the old store is first renamed aside (to a
    ``*.tmp`` name, then removed), so that a reader finds a whole store, old or new, or for an instant none, and
    writers racing for the same ``path`` each end with a complete store there. It was removed in place, then the
    new one renamed over it: two ``evaluator`` processes writing the same store failed (``FileNotFoundError`` from
    the removal of a store the other had just moved, ``Directory not empty`` from the rename)."""
    for _ in range(1000):
        try:
            os.replace(tmp, path)  # atomic where nothing (or an empty directory) is there
            return
        except OSError as exc:
            if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST):
                raise
            last = exc
        old = path.parent / f".{path.name}.{uuid.uuid4().hex[:8]}.old.tmp"
        try:
            os.replace(path, old)
        except FileNotFoundError:  # another writer moved it aside first: try again
            continue
        shutil.rmtree(old, ignore_errors=True)
    raise last


def zarr_damage(path: str | os.PathLike[str]) -> str | None:
    """What is wrong with the files of the zarr store at ``path`` (format 2), in words naming the file, or None.

    A store :func:`write_zarr` wrote is checked against its :data:`ZARR_FILES` (every file there, of the size
    and SHA-256 written). An older store or another writer's has no such list (zarr leaves out a chunk that holds
    only the fill value, so a missing chunk file is not damage by itself): None."""
    root = Path(path)
    listed = root / ZARR_FILES
    if listed.is_file():
        try:
            files = json.loads(listed.read_text())["files"]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            return f"{listed} (the list of the store's files) cannot be read ({type(exc).__name__})"
        for rel, (size, digest) in files.items():
            f = root / rel
            try:
                got = f.stat().st_size
            except OSError:
                return f"{f} is missing"
            if got != size:
                return f"{f} has {got} bytes, not the {size} written (truncated or changed)"
            try:
                data = f.read_bytes()
            except OSError as exc:
                return f"{f} cannot be read ({exc.strerror or exc})"
            if hashlib.sha256(data).hexdigest() != digest:
                return f"{f} is not what was written (its SHA-256 differs)"
        return None
    return None


FIGURE_SOFTWARE = "evaluator"
"""The start of the PNG ``Software`` text of every figure :func:`save_figure` writes (:func:`is_our_figure`)."""


def save_figure(fig, path: str | os.PathLike[str], dpi: int = 120) -> Path:
    """Write a :class:`matplotlib.figure.Figure` as PNG atomically, through the Agg canvas, its ``Software`` text
    naming this tool (so that a command can tell its own figure from a user's: :func:`is_our_figure`)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from ._version import __version__

    if os.path.lexists(path) and not is_our_figure(path):  # every figure's last guard (the commands check first)
        from .errors import ConfigError

        raise ConfigError("figure path", str(path), "a new path or a figure evaluator wrote (which it replaces)",
                          f"{path} exists and is not a figure of this tool; move it or choose another path. "
                          f"The figure was not written.")
    if not isinstance(fig.canvas, FigureCanvasAgg):
        FigureCanvasAgg(fig)
    meta = {"Software": f"{FIGURE_SOFTWARE} {__version__} (matplotlib)"}
    return atomic_write(path, lambda tmp: fig.savefig(tmp, dpi=dpi, format="png", metadata=meta), suffix=".png")


def is_our_figure(path: str | os.PathLike[str]) -> bool:
    """Whether the PNG at ``path`` is a figure :func:`save_figure` wrote (its ``Software`` text chunk, read before
    the image data; no image library needed). Only a regular file is opened: a FIFO (named pipe) there made
    ``open`` wait for a writer for ever."""
    import stat

    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return False
        with open(path, "rb") as fh:
            if fh.read(8) != b"\x89PNG\r\n\x1a\n":
                return False
            while True:
                head = fh.read(8)
                if len(head) < 8:
                    return False
                n, kind = int.from_bytes(head[:4], "big"), head[4:]
                if kind in (b"IDAT", b"IEND"):
                    return False
                data = fh.read(n)
                fh.read(4)  # (the chunk's CRC)
                if kind == b"tEXt" and data.split(b"\0", 1)[0] == b"Software":
                    return data.split(b"\0", 1)[-1].decode("latin-1").startswith(FIGURE_SOFTWARE)
    except OSError:
        return False


def write_pickle(obj: Any, path: str | os.PathLike[str]) -> Path:
    """Pickle ``obj`` to ``path`` atomically and durably (fsync before the rename)."""

    def write(tmp: str) -> None:
        with open(tmp, "wb") as fh:
            pickle.dump(obj, fh, protocol=pickle.HIGHEST_PROTOCOL)
            fh.flush()
            os.fsync(fh.fileno())

    return atomic_write(path, write, suffix=".pkl")


def read_pickle(path: str | os.PathLike[str]) -> Any:
    """Read a file written by :func:`write_pickle`."""
    with open(path, "rb") as fh:
        return pickle.load(fh)


def write_text(path: str | os.PathLike[str], text: str) -> Path:
    """Write a text file atomically."""

    def write(tmp: str) -> None:
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text)

    return atomic_write(path, write)


def write_json(path: str | os.PathLike[str], obj: Any, **kwargs) -> Path:
    """Write ``obj`` as JSON atomically."""
    return write_text(path, json.dumps(obj, **kwargs))


def remove_stale(directory: str | os.PathLike[str], prefix: str = "") -> None:
    """Delete temporary files a killed writer left in ``directory`` (only those whose name starts with ``prefix``)."""
    d = Path(directory)
    if d.is_dir():
        for stale in d.glob(f"{glob_escape(prefix)}*.tmp"):
            if stale.is_dir():
                shutil.rmtree(stale, ignore_errors=True)
            else:
                stale.unlink(missing_ok=True)


def glob_escape(text: str) -> str:
    """``text`` with glob metacharacters escaped."""
    import glob

    return glob.escape(text)


def git_commit() -> str:
    """Commit of the source tree the package runs from, or ``"unknown"``."""
    try:
        here = Path(__file__).resolve().parent
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True, timeout=5)
        return out.stdout.strip() or "unknown"
    except Exception:  # pragma: no cover - git missing
        return "unknown"


TIME_FORMAT = "%Y%m%dT%H%M%SZ"
"""UTC time at the head of a result's name (``20261126T004512Z``): names sort by it."""

LATEST = "latest"
"""``<dir>/latest``: a relative symbolic link to the newest result in ``<dir>`` (a text file holding its name
where the filesystem has no symbolic links)."""

_NAME_RE = re.compile(r"^(\d{8}T\d{6}Z)-(.+?)(\.nc|\.zarr)?$")


def run_name(when: str | _dt.datetime | None, key: str) -> str:
    """``<UTC time>-<key>``: the name of a result that started at ``when`` (an ISO time or a datetime; default
    now)."""
    if when is None:
        t = _dt.datetime.now(_dt.timezone.utc)
    elif isinstance(when, str):
        t = _dt.datetime.fromisoformat(when)
    else:
        t = when
    if t.tzinfo is None:
        t = t.replace(tzinfo=_dt.timezone.utc)
    return t.astimezone(_dt.timezone.utc).strftime(TIME_FORMAT) + "-" + key


def run_time(name: str) -> _dt.datetime | None:
    """The UTC time a result's name starts with (:func:`run_name`), or None."""
    m = _NAME_RE.match(name)
    if m is None:
        return None
    return _dt.datetime.strptime(m.group(1), TIME_FORMAT).replace(tzinfo=_dt.timezone.utc)


def content_key(text: str) -> str:
    """The 12 hex digits of the SHA-256 of ``text``: the hash in a result's name."""
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def new_run_id() -> str:
    """A sortable unique id: UTC time plus a short random suffix."""
    return run_name(None, uuid.uuid4().hex[:6])


def _our_latest_text(path: Path) -> bool:
    """Whether ``path`` is the text file :func:`point_latest` writes where there are no symbolic links (one line,
    a result's name), not a file of the user's own."""
    try:
        if not path.is_file() or path.stat().st_size > 256:
            return False
        text = path.read_text().strip()
    except (OSError, UnicodeDecodeError):
        return False
    return "/" not in text and text.endswith((".nc", ".zarr")) and run_time(text) is not None


def foreign_latest(directory: str | os.PathLike[str]) -> Path | None:
    """``<directory>/latest`` where it is a directory or a file of the user's own (not the link or text file
    :func:`point_latest` writes), which :func:`point_latest` leaves as it is; else None. A command that writes
    there says so before it computes (``evaluator eval``: a warning)."""
    link = Path(directory) / LATEST
    if link.exists() and not link.is_symlink() and not _our_latest_text(link):
        return link
    return None


def point_latest(directory: str | os.PathLike[str]) -> Path | None:
    """Point ``<directory>/latest`` at the newest result there (the latest ``<UTC time>-...`` name of a ``.nc``
    file or ``.zarr`` store), atomically; return the link, or None when there is no such result.

    A relative symbolic link, replaced with :func:`os.replace`; where the
    filesystem has none, a text file holding the result's name. A directory
    or a file of the user's own named ``latest`` is left as it is (None).
    """
    d = Path(directory)
    target = _newest(d)
    if target is None:
        return None
    for _ in range(100):
        link = point_latest_at(d, target)
        # another process that wrote a newer result after our scan may have pointed the link at it before our
        # replace took it back (the link then named an older result, and `evaluator query STUDY` read that): scan
        # again after the replace; the last process to replace always sees every result written before it did
        now = _newest(d)
        if link is None or now is None or now == target:
            return link
        target = now
    return link


def _newest(d: Path) -> str | None:
    """The name of the latest ``<UTC time>-...`` result in ``d`` (of those started in the same second, the one
    written last), or None."""
    try:
        found = [(e.name[:16], e.stat(follow_symlinks=False).st_mtime_ns, e.name) for e in os.scandir(d)
                 if not e.name.startswith(".") and e.name.endswith((".nc", ".zarr")) and run_time(e.name) is not None]
    except OSError:
        return None
    return max(found)[2] if found else None


def point_latest_at(directory: str | os.PathLike[str], target: str) -> Path | None:
    """Point ``<directory>/latest`` at ``target`` (a name in ``directory``), atomically, as :func:`point_latest`
    does: for results not named by their time (``evaluator study rdn``'s ``rdn-<machine>-<time>.nc``), whose
    directory may hold other datasets (its ``--speedup-out`` table), so that ``evaluator query rdn`` reads the
    study and not the file written last. A directory or file of the user's own named ``latest`` is left as it
    is (None)."""
    d = Path(directory)
    link = d / LATEST
    if foreign_latest(d) is not None:
        return None  # a directory or file of the user's own stands there: left alone
    tmp = d / f".{LATEST}.{uuid.uuid4().hex[:8]}.tmp"
    try:
        os.symlink(target, tmp)
    except OSError:  # no symbolic links here: the name in a text file
        return write_text(link, target + "\n")
    try:
        os.replace(tmp, link)
    except OSError:
        tmp.unlink(missing_ok=True)
        raise
    return link


def write_dataset(ds, directory: str | os.PathLike[str], run_id: str | None = None,
                  identity: str | None = None) -> Path:
    """Write ``ds`` to ``directory/<run_id>.nc`` atomically, stamping ``git_commit`` and ``created``, and point
    ``directory/latest`` at the newest result.

    Without ``run_id`` the name is ``<UTC time>-<hash>`` (:func:`run_name`;
    the hash of ``identity``, the text that defines the result, else random)
    and an existing file is never replaced: the same ``identity`` in the same
    second with the same contents is the same result, whose path is returned;
    other contents (an ``identity`` that leaves out an option that changes the
    result, such as ``evaluator eval --draws``) go to ``<UTC time>-<hash>-2.nc``
    (``-3``, ...): the path returned always holds ``ds``.
    """
    ds = ds.copy()
    ds.attrs.setdefault("git_commit", git_commit())
    ds.attrs.setdefault("created", _dt.datetime.now(_dt.timezone.utc).isoformat())
    if run_id is not None:
        path = write_netcdf(ds, Path(directory) / f"{run_id}.nc")
    else:
        key = content_key(identity) if identity is not None else uuid.uuid4().hex[:12]
        name = run_name(None, key)
        for n in range(1, 1000):
            path = Path(directory) / (f"{name}.nc" if n == 1 else f"{name}-{n}.nc")
            try:
                write_netcdf(ds, path, exclusive=True)
                break
            except FileExistsError:
                if not path.is_file():  # not the same result written in the same second: a file where a directory goes
                    raise
                if _same_dataset(path, ds):
                    break
        else:  # pragma: no cover - a thousand different results of one identity in one second
            raise FileExistsError(errno.EEXIST, "every name of this result in this second is taken", str(path))
    point_latest(path.parent)
    return path


def _same_dataset(path: Path, ds) -> bool:
    """Whether the netCDF file at ``path`` holds ``ds`` (as written: both read back the same way), its ``created``
    time aside; False where it cannot be read."""
    import io as _io

    import xarray as xr

    try:
        with xr.open_dataset(path, engine="h5netcdf", decode_times=False, cache=False) as there:
            there = there.load()
        mine = xr.open_dataset(_io.BytesIO(bytes(ds.to_netcdf(engine="h5netcdf"))), engine="h5netcdf",
                               decode_times=False).load()
    except Exception:  # unreadable: not known to be the same
        return False
    there.attrs.pop("created", None)
    mine.attrs.pop("created", None)
    return bool(there.identical(mine))


def check_writable(field: str, directory: str | os.PathLike[str]) -> Path:
    """Make ``directory`` (and its parents), probe-write a temporary file in it, then remove the file and the
    directories it made (the output is written later; a refused command leaves nothing behind): a command checks
    this for every output before it computes. ConfigError naming the field, the directory and the cause."""
    from .errors import ConfigError

    if not str(directory).strip():  # Path("") is the working directory: say so rather than write there unasked
        raise ConfigError(field, str(directory), "a directory this user can create and write",
                          "An empty path is no directory; give . for the working directory. Nothing was computed.")
    d = Path(directory)
    made = []
    try:
        up = d
        while not up.exists() and up != up.parent:
            made.append(up)
            up = up.parent
        d.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".write-probe-", dir=d)
        os.close(fd)
        os.unlink(tmp)
        for m in made:                                 # deepest first
            try:
                m.rmdir()
            except OSError:
                break
    except OSError as exc:
        why = exc.strerror or str(exc)
        where = f" ({exc.filename})" if exc.filename and str(exc.filename) != str(d) else ""
        raise ConfigError(field, str(directory), "a directory this user can create and write",
                          f"{why}{where}; nothing was computed.") from None
    return d
