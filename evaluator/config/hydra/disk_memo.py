"""Compositions kept across processes: a new process's first :func:`~evaluator.config.hydra.composition.compose` of
a configuration composed before is read from disk (a few ms) instead of made by Hydra (0.8-1 s each; an
``evaluator sweep`` composes three times before its first point).

An entry is a pickle of the composed (resolved) OmegaConf config, under a key that holds everything the in-process
memo's key holds (the overrides, the config name, the search path, the working directory where a search-path
entry is relative, ``conf/`` and a digest of the contents of every file composing may read:
:func:`~evaluator.config.hydra.composition._compose_key`), with Hydra's ConfigStore replaced by what fills it:

* this module's :data:`FORMAT`, a hash of the evaluator's source files (the schemas the ConfigStore holds are its
  dataclasses: an edit, a checkout or an upgrade is a new key) and the versions of Python, Hydra and OmegaConf;
* and it is used only while the ConfigStore holds nothing but what
  :func:`~evaluator.config.hydra.composition.register_schemas` stored, every schema a class of the evaluator package
  (a kind a caller registers from its own module, or a node it stores itself, composes afresh every time).

Entries live in ``<compilation cache directory>/evaluator-compose`` (``$EVALUATOR_COMPILATION_CACHE``, as JAX's
cache: off when it is off; the test suite's is one temporary directory per run), one file per composition,
written to a temporary name and renamed, at most :data:`MAX_ENTRIES` (the oldest removed first; a temporary file
a killed writer left is removed after :data:`STALE_S`). An entry holds its key: one that cannot be read, or that
holds another key or no composition (a damaged or copied file), is ignored and the composition made afresh: the
memo changes how fast, never what comes back.
Errors are never stored. Like the compilation cache, an entry is a pickle that is loaded: do not point the cache
at a directory others may write to.
"""

from __future__ import annotations

import functools
import hashlib
import os
import pickle
import tempfile
from pathlib import Path
from typing import Any

__all__ = ["FORMAT", "MAX_ENTRIES", "STALE_S", "SUBDIR", "memo_dir", "disk_key", "load", "save"]

FORMAT = 2
"""The entries' format (part of every key): 2, ``{"format", "key", "cfg"}`` (1 was the composition alone)."""

STALE_S = 3600.0
"""A temporary file this old (seconds) is a killed writer's: removed when an entry is stored."""

MAX_ENTRIES = 512
"""At most this many entries (about 13 kB each) are kept; the oldest go first."""

SUBDIR = "evaluator-compose"


def memo_dir() -> Path | None:
    """The entries' directory, or None where the compilation cache is off (``$EVALUATOR_COMPILATION_CACHE``)."""
    from ..._jax_cache import cache_dir

    base = cache_dir()
    return None if base is None else base / SUBDIR


@functools.cache
def _static() -> str:
    import sys

    import hydra
    import omegaconf

    from ..._program_store import source_hash

    return f"{FORMAT}|{source_hash()}|{sys.version}|{hydra.__version__}|{omegaconf.__version__}"


def disk_key(memo_key: tuple) -> str:
    """The entry's name for an in-process memo key whose ConfigStore part (its sixth item) is left out."""
    parts = memo_key[:5] + memo_key[6:]
    return hashlib.sha256(f"{_static()}|{parts!r}".encode()).hexdigest()


def load(key: str) -> Any | None:
    """The composition stored under ``key``, or None (absent, off, or not readable)."""
    d = memo_dir()
    if d is None:
        return None
    try:
        with open(d / f"{key}.pkl", "rb") as fh:
            entry = pickle.load(fh)
    except Exception:  # absent, truncated, or from a version that no longer unpickles: compose afresh
        return None
    if not isinstance(entry, dict) or entry.get("format") != FORMAT or entry.get("key") != key or "cfg" not in entry:
        return None  # damaged, or another key's entry under this name: compose afresh
    return entry["cfg"]


def save(key: str, cfg: Any) -> bool:
    """Store ``cfg`` under ``key`` (atomically); False where the memo is off or the directory is not writable."""
    d = memo_dir()
    if d is None:
        return False
    try:
        d.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{key}.", suffix=".tmp", dir=d)
        try:
            with os.fdopen(fd, "wb") as fh:
                pickle.dump({"format": FORMAT, "key": key, "cfg": cfg}, fh, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, d / f"{key}.pkl")
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        _evict(d)
        return True
    except Exception:
        return False


def _evict(d: Path) -> None:
    """Remove the oldest entries beyond :data:`MAX_ENTRIES`, and temporary files older than :data:`STALE_S`."""
    import time

    entries = []
    try:
        for e in os.scandir(d):
            try:
                if e.name.endswith(".pkl"):
                    entries.append((e.stat().st_mtime, e.path))
                elif e.name.startswith(".") and e.name.endswith(".tmp") and time.time() - e.stat().st_mtime > STALE_S:
                    os.unlink(e.path)
            except OSError:  # removed meanwhile by another process
                continue
    except OSError:
        return
    if len(entries) <= MAX_ENTRIES:
        return
    for _, path in sorted(entries)[: len(entries) - MAX_ENTRIES]:
        try:
            os.unlink(path)
        except OSError:
            pass
