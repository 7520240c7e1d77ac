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
* :func:`write_dataset`: a dataset of one evaluation under ``<dir>/<run_id>.nc``
  with ``git_commit`` and ``created`` attributes;
* :func:`conf_dir` / :func:`repo_dir`: the Hydra config directory
  (``$EVALUATOR_CONF`` or the ``conf/`` next to the package) and the
  directory holding it and ``sweeps/``.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import pickle
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
    "save_figure",
    "write_pickle",
    "read_pickle",
    "write_text",
    "write_json",
    "remove_stale",
    "write_dataset",
    "git_commit",
    "new_run_id",
]

CONF_ENV = "EVALUATOR_CONF"
"""Environment variable naming another ``conf/`` directory."""


def conf_dir() -> Path:
    """The ``conf/`` directory: ``$EVALUATOR_CONF``, else the one next to the package."""
    env = os.environ.get(CONF_ENV)
    if env:
        return Path(env).resolve()
    return (Path(__file__).resolve().parent.parent / "conf").resolve()


def repo_dir() -> Path:
    """Directory holding ``conf/`` and ``sweeps/``."""
    return conf_dir().parent


def _file_mode() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def atomic_write(path: str | os.PathLike[str], write: Callable[[str], None], suffix: str = "") -> Path:
    """Call ``write(tmp_path)`` on a temporary file next to ``path``, then move it into place.

    The parent directory is created if needed; on any failure the temporary
    file is removed and ``path`` is left as it was.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=suffix + ".tmp", dir=path.parent)
    os.close(fd)
    try:
        write(tmp)
        os.chmod(tmp, _file_mode())
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path


def write_netcdf(ds, path: str | os.PathLike[str]) -> Path:
    """Write an :class:`xarray.Dataset` to netCDF (h5netcdf) atomically."""
    return atomic_write(path, lambda tmp: ds.to_netcdf(tmp, engine="h5netcdf"), suffix=".nc")


def write_zarr(ds, path: str | os.PathLike[str]) -> Path:
    """Write an :class:`xarray.Dataset` to a zarr directory atomically (temporary directory, then rename)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=path.parent, prefix=f".{path.name}.", suffix=".zarr.tmp"))
    try:
        shutil.rmtree(tmp)
        ds.to_zarr(tmp, mode="w")
        if path.exists():
            shutil.rmtree(path)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return path


def save_figure(fig, path: str | os.PathLike[str], dpi: int = 120) -> Path:
    """Write a :class:`matplotlib.figure.Figure` as PNG atomically, through the Agg canvas."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    if not isinstance(fig.canvas, FigureCanvasAgg):
        FigureCanvasAgg(fig)
    return atomic_write(path, lambda tmp: fig.savefig(tmp, dpi=dpi, format="png"), suffix=".png")


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


def new_run_id() -> str:
    """A sortable unique id: UTC time plus a short random suffix."""
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ") + "-" + uuid.uuid4().hex[:6]


def write_dataset(ds, directory: str | os.PathLike[str], run_id: str | None = None) -> Path:
    """Write ``ds`` to ``directory/<run_id>.nc`` atomically, stamping ``git_commit`` and ``created``."""
    run_id = run_id or new_run_id()
    ds = ds.copy()
    ds.attrs.setdefault("git_commit", git_commit())
    ds.attrs.setdefault("created", _dt.datetime.now(_dt.timezone.utc).isoformat())
    return write_netcdf(ds, Path(directory) / f"{run_id}.nc")
