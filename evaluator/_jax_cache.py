"""JAX's persistent compilation cache for the library, the command line and the sweep's Ray workers.

A repeated ``evaluator sweep`` or ``evaluator optimize`` compiles the same
kernels again; with the cache, the second run loads them from disk. It is on
by default, under the user's cache directory::

    $XDG_CACHE_HOME/evaluator/jax      (XDG_CACHE_HOME set and absolute)
    ~/.cache/evaluator/jax             (otherwise)

``$EVALUATOR_COMPILATION_CACHE`` chooses: unset, empty, ``1``/``on``/``true``/
``yes``: the default place (or JAX's own ``$JAX_COMPILATION_CACHE_DIR`` when
the user set one); ``0``/``off``/``false``/``no``: off; anything else: that
directory. ``evaluator --no-compilation-cache ...`` turns it off for one run.

Every kernel is cached (``jax_persistent_cache_min_compile_time_secs = 0``
and no minimum entry size: our kernels compile in 0.1-2 s, under JAX's 1 s
default). The cache is bounded (:data:`DEFAULT_MAX_BYTES`, least recently used
entries evicted first; JAX does this with a file lock, which also keeps two
Ray workers from reading an entry another one is still writing), unless
``filelock`` is missing. Settings the user gave JAX through its own
environment variables (``JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS``, ...)
are kept.

Library users (``import evaluator``) get it too: importing the package calls
:func:`library_default`, which reads the same ``$EVALUATOR_COMPILATION_CACHE``
and sets ``jax.config`` only: it writes nothing (JAX makes the directory at
the first compilation), exports nothing, and leaves JAX as it is when the
switch says off, when the directory cannot be made or written to (silently:
the CLI warns), or when the user gave JAX a cache directory of their own
(``jax.config.update("jax_compilation_cache_dir", ...)`` before the import
wins). A second Python process then skips the compilation of the kernels,
and, with the program store kept in the same directory
(:mod:`evaluator._program_store`: the compiled executables themselves; off
unless ``EVALUATOR_PROGRAM_STORE=1``, and off with the same switch), their
tracing and lowering too (an 8x8 torus's first
evaluation: 0.6-1.1 s with JAX's cache alone, 0.08-0.2 s with the store;
``evaluator bench --only startup``).

The CLI's :func:`enable_compilation_cache` goes further: the settings are
applied to this process (``jax.config``) and exported as ``JAX_*``
environment variables, so that processes started afterwards (a
local Ray's workers, which inherit this environment) use the same cache. A
directory that cannot be created or written to turns the cache off with one
warning on stderr; the run goes on.

Ray workers on other machines (``ray.address=...``) do not inherit this
environment: the driver forwards :func:`worker_env` in its ``runtime_env`` and
each task calls :func:`apply_in_worker`, so every machine uses its own cache
directory (or the directory the user named) as the CLI chose.

The cache holds executables that JAX loads and runs: like JAX, we trust it.
Do not point it at a directory others may write to.
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Callable, MutableMapping
from pathlib import Path

__all__ = ["ENV", "OFF_FLAG", "DEFAULT_MAX_BYTES", "cache_dir", "enable_compilation_cache", "library_default",
           "worker_env", "apply_in_worker"]

ENV = "EVALUATOR_COMPILATION_CACHE"
"""Environment variable: unset/``1``: the default directory; ``0``/``off``: no cache; else a directory."""

OFF_FLAG = "--no-compilation-cache"
"""Command-line flag (anywhere on the ``evaluator`` command line) that turns the cache off for one run."""

DEFAULT_MAX_BYTES = 2 << 30
"""Largest size of the cache directory (2 GiB; least recently used entries are evicted beyond it)."""

_OFF = ("0", "off", "false", "no", "none")
_ON = ("", "1", "on", "true", "yes", "default")

_JAX_DIR_ENV = "JAX_COMPILATION_CACHE_DIR"
_SETTINGS = (  # (jax option, its environment variable, our value)
    ("jax_persistent_cache_min_compile_time_secs", "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", 0.0),
    ("jax_persistent_cache_min_entry_size_bytes", "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES", -1),
)
_MAX_SIZE = ("jax_compilation_cache_max_size", "JAX_COMPILATION_CACHE_MAX_SIZE")

_warned: set[str] = set()
_choice: dict[str, str] = {}  # this process's choice, as a worker on another machine should read it
_applied = False  # apply_in_worker has run in this process


def _default_dir(environ: MutableMapping[str, str]) -> Path:
    xdg = environ.get("XDG_CACHE_HOME", "")
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path("~").expanduser() / ".cache"
    return base / "evaluator" / "jax"


def cache_dir(environ: MutableMapping[str, str] | None = None) -> Path | None:
    """The cache directory ``$EVALUATOR_COMPILATION_CACHE`` asks for (see the module docstring); ``None``: off."""
    environ = os.environ if environ is None else environ
    value = environ.get(ENV)
    setting = (value or "").strip()
    if setting.lower() in _OFF:
        return None
    if setting.lower() in _ON:
        own = environ.get(_JAX_DIR_ENV, "").strip()
        return Path(own).expanduser() if own else _default_dir(environ)
    return Path(setting).expanduser()


def _writable(path: Path) -> str | None:
    """``None`` if ``path`` can be created and written to, else why not (one line)."""
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path, prefix=".probe-"):
            pass
    except OSError as exc:
        return exc.strerror or type(exc).__name__
    return None


def _warn_stderr(message: str) -> None:
    print(message, file=sys.stderr)


def enable_compilation_cache(enabled: bool = True, environ: MutableMapping[str, str] | None = None,
                             warn: Callable[[str], None] = _warn_stderr) -> Path | None:
    """Turn JAX's persistent compilation cache on (or off) for this process and the processes it starts.

    Parameters
    ----------
    enabled
        ``False`` (``--no-compilation-cache``): off whatever the environment says.
    environ
        The environment to read and to export the ``JAX_*`` settings to (default: ``os.environ``).
    warn
        Called once per directory with a one-line message when the directory is not writable.

    Returns
    -------
    The cache directory in use, or ``None`` when the cache is off.
    """
    import jax

    environ = os.environ if environ is None else environ
    given = environ.get(ENV, "").strip()
    path = cache_dir(environ) if enabled else None
    # what a worker on another machine should do: that machine's own default, the user's directory, or off
    _choice[ENV] = "0" if path is None else "1" if given.lower() in _ON else given
    if path is not None:
        why = _writable(path)
        if why is not None:
            if str(path) not in _warned:
                _warned.add(str(path))
                warn(f"evaluator: warning: the compilation cache is off for this run: cannot write to {path} "
                     f"({why}). Set {ENV} to a writable directory, or to 0 to silence this.")
            path = None
    if path is None:
        environ[ENV] = "0"  # processes started from here (local Ray workers) do not try again
        if jax.config.jax_compilation_cache_dir is not None:  # the user's own JAX setting: off as asked
            jax.config.update("jax_enable_compilation_cache", False)
            environ["JAX_ENABLE_COMPILATION_CACHE"] = "false"
        return None
    settings = [(opt, var, value) for opt, var, value in _SETTINGS if var not in environ]
    if _MAX_SIZE[1] not in environ and _has_filelock():
        settings.append((*_MAX_SIZE, DEFAULT_MAX_BYTES))
    settings.append(("jax_compilation_cache_dir", _JAX_DIR_ENV, str(path)))
    for opt, var, value in settings:
        jax.config.update(opt, value)
        environ[var] = str(value)
    jax.config.update("jax_enable_compilation_cache", True)
    environ.pop("JAX_ENABLE_COMPILATION_CACHE", None)
    environ[ENV] = str(path)
    return path


_JAX_DEFAULTS = {"jax_persistent_cache_min_compile_time_secs": 1.0, "jax_persistent_cache_min_entry_size_bytes": 0,
                 "jax_compilation_cache_max_size": -1}
"""JAX's own defaults of the settings :func:`library_default` changes (a different value: the user's, kept)."""


def _creatable(path: Path) -> bool:
    """Whether ``path`` is, or could be made as, a directory this user writes to, judged without creating or
    writing anything (the nearest existing ancestor must be a writable directory)."""
    up = path
    while not up.exists():
        if up.parent == up:
            return False
        up = up.parent
    return up.is_dir() and os.access(up, os.W_OK | os.X_OK)


def library_default(environ: MutableMapping[str, str] | None = None) -> Path | None:
    """The cache for library users, called when :mod:`evaluator` is imported (see the module docstring).

    Sets ``jax.config`` to the directory ``$EVALUATOR_COMPILATION_CACHE`` asks for, with the CLI's settings
    (every kernel cached, the size bound), unless the switch says off, the directory cannot be made or written
    to, or JAX already has a cache directory (the user's own, kept with their settings). Touches no file and no
    environment variable; JAX makes the directory at the first compilation. Returns the directory in use
    (``None``: left as JAX has it).
    """
    import jax

    environ = os.environ if environ is None else environ
    path = cache_dir(environ)
    if path is None:
        return None  # off: JAX as it is
    path = Path(os.path.abspath(path))  # a relative directory: from where the program started, as the CLI has it
    given = environ.get(ENV, "").strip().lower()
    own = jax.config.jax_compilation_cache_dir
    if own is not None and given in _ON:
        return Path(own)  # the user's own JAX setting (or $JAX_COMPILATION_CACHE_DIR, which cache_dir reads too)
    if not _creatable(path):
        return None
    settings = [(opt, var, value) for opt, var, value in _SETTINGS
                if var not in environ and getattr(jax.config, opt) == _JAX_DEFAULTS[opt]]
    if (_MAX_SIZE[1] not in environ and getattr(jax.config, _MAX_SIZE[0]) == _JAX_DEFAULTS[_MAX_SIZE[0]]
            and _has_filelock()):
        settings.append((_MAX_SIZE[0], _MAX_SIZE[1], DEFAULT_MAX_BYTES))
    for opt, _, value in settings:
        jax.config.update(opt, value)
    jax.config.update("jax_compilation_cache_dir", str(path))
    return path


def worker_env() -> dict[str, str]:
    """Environment variables for Ray workers on other machines: the choice :func:`enable_compilation_cache`
    made here (``{}`` when it was not called: library use leaves workers as JAX has them)."""
    return dict(_choice)


def apply_in_worker() -> None:
    """In a Ray task: turn the cache on or off as the driver chose (``$EVALUATOR_COMPILATION_CACHE``, set by
    the CLI or forwarded through :func:`worker_env`); nothing when the driver made no choice. Once per
    process."""
    global _applied
    if _applied or ENV not in os.environ:
        return
    _applied = True
    enable_compilation_cache()


def _has_filelock() -> bool:
    try:
        import filelock  # noqa: F401  (JAX's LRU eviction needs it)
    except ImportError:  # pragma: no cover - installed with JAX's usual dependencies
        return False
    return True
