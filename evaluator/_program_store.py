"""Compiled kernels kept across processes: a new process's first evaluation skips JAX's tracing and lowering.

JAX's persistent compilation cache (:mod:`evaluator._jax_cache`) saves the
XLA compilation, but its key is a hash of the lowered program, so every new
process still traces the kernel and lowers it to MLIR before it can look
the entry up: for an 8x8 torus under DOR 0.25-0.3 s of tracing and
0.3-0.4 s of lowering, against 0.05-0.1 s to load the executable. This
store keeps the executable itself (``jax.experimental.serialize_executable``)
together with the working-set estimate of its traced program
(:func:`evaluator._batch.memory.jaxpr_peak_bytes`), under a key computed
*without* tracing, from everything that determines the program:

* this module's :data:`FORMAT`; a hash of the evaluator's source files (every
  ``.py`` file of the package, so an edit, a checkout or an upgrade is a new
  key); the versions of Python, JAX, jaxlib and NumPy;
* the backend: platform, platform version, device kinds and count; on CPU
  the processor's model and feature flags (an executable compiled for one
  processor may use instructions another lacks); ``$XLA_FLAGS``; the JAX
  settings that change a traced program (64-bit mode, default precision,
  dtype promotion, ...); the kernels' XLA options;
* the kernel: the topology's and the routing's fields (arrays by their
  bytes), whether link loads are kept, the variant, the arguments' tree
  structure, shapes and dtypes, and the static chunk size.

A routing or topology with a field this module cannot fingerprint (a path
set bound to its router pairs) is not stored: it takes the usual path.

Entries live in ``<JAX compilation cache directory>/evaluator-programs``
(one file per program, written to a temporary name and renamed, so that two
processes never read a half-written entry), at most :data:`MAX_ENTRIES`
files and :data:`MAX_BYTES` bytes, least recently used removed first (and
a temporary file a killed writer left, after :data:`STALE_S`). The
store is on exactly when JAX's persistent cache is on with a local
directory and ``$EVALUATOR_COMPILATION_CACHE`` does not say off (``0``,
``off``, ...; the CLI's ``--no-compilation-cache`` sets it so). Any failure
(an unreadable, stale or corrupt entry, an executable that does not load or
run) falls back silently to the usual path, which gives the same results:
an entry holds the very executable that path compiled.

Like JAX's cache, the store holds executables that are loaded and run (and
pickles): do not point the cache at a directory others may write to.

**Off unless asked for** (``EVALUATOR_PROGRAM_STORE=1``). XLA:CPU's
deserialized executables are not reliable when several share a process: a
repeated RDN study (``evaluator study rdn --machine 1,3,1,4`` twice on one
cache) failed with ``NOT_FOUND: Function bitcast_gather_fusion.3 not found``
when a loaded program's result was fetched, and a round trip (serialize, load,
run) of a freshly compiled program in the process that compiled it often did
not reproduce it. A program that fails when it runs is caught (its first call
is waited for) and the usual path answers, but a collision that gave other
numbers instead of an error could not be excluded, so the default is the
usual path (tracing and lowering, then JAX's compilation cache).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import os
import pickle
import platform
import sys
import tempfile
from pathlib import Path
from typing import Any

OPT_IN = "EVALUATOR_PROGRAM_STORE"
"""Environment variable: ``1`` (or ``on``, ``true``) turns the store on (with the compilation cache)."""

__all__ = ["OPT_IN", "FORMAT", "SUBDIR", "MAX_ENTRIES", "MAX_BYTES", "STALE_S", "store_dir", "source_hash",
           "environment_key",
           "fingerprint", "entry_key", "load", "save", "pack_executable", "unpack_executable"]

FORMAT = 1
"""Version of the entries' layout (part of every key)."""

SUBDIR = "evaluator-programs"
"""The store's directory inside JAX's compilation cache directory."""

MAX_ENTRIES = 256
"""Most entries kept (least recently used removed first)."""

MAX_BYTES = 256 << 20
"""Most bytes kept (256 MiB; least recently used removed first)."""

STALE_S = 3600.0
"""A temporary file this old (seconds) is a killed writer's: removed when an entry is stored."""

_SUFFIX = ".program"
_OFF = ("0", "off", "false", "no", "none")
_JAX_SETTINGS = ("jax_enable_x64", "jax_default_matmul_precision", "jax_numpy_dtype_promotion",
                 "jax_numpy_rank_promotion", "jax_default_prng_impl", "jax_enable_checks", "jax_dynamic_shapes",
                 "jax_use_shardy_partitioner", "jax_platforms", "jax_default_device",
                 # more of the settings JAX's own jit cache keys on: 64-bit types asked for by name while
                 # jax_enable_x64 is off (kept as int64/float64 or narrowed), XLA's optimisation and memory-fitting
                 # levels, the counter-based generator's layout, f16 reductions, the error checks' behaviour
                 "jax_explicit_x64_dtypes", "jax_optimization_level", "jax_memory_fitting_level",
                 "jax_threefry_partitionable", "jax_allow_f16_reductions", "jax_error_checking_behavior_nan",
                 "jax_error_checking_behavior_divide", "jax_error_checking_behavior_oob")
_DEBUG_SETTINGS = ("jax_disable_jit", "jax_debug_nans", "jax_debug_infs")
"""Settings under which JAX dispatches differently (op by op, re-runs on NaN): no store."""


def store_dir() -> Path | None:
    """The store's directory, or ``None`` when it is off (see the module docstring)."""
    import jax

    from ._jax_cache import ENV

    if os.environ.get(OPT_IN, "").strip().lower() not in ("1", "on", "true", "yes"):
        return None  # off by default: see the module docstring
    if os.environ.get(ENV, "").strip().lower() in _OFF:
        return None
    if not jax.config.jax_enable_compilation_cache or any(getattr(jax.config, n, False) for n in _DEBUG_SETTINGS):
        return None
    base = jax.config.jax_compilation_cache_dir
    if not base or "://" in str(base):
        return None
    return Path(base) / SUBDIR


def source_hash() -> str:
    """SHA-256 of the evaluator package's ``.py`` files (relative paths and contents)."""
    root = Path(__file__).resolve().parent
    h = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        h.update(str(path.relative_to(root)).encode() + b"\0")
        h.update(path.read_bytes())
        h.update(b"\0")
    return h.hexdigest()


def _cpu_id() -> str:
    """The processor's model and feature flags (Linux), else what :mod:`platform` says."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
        keep = [x for x in lines if x.split(":")[0].strip() in ("model name", "flags", "Features", "CPU part")]
        if keep:
            return "\n".join(sorted(set(keep)))
    except OSError:
        pass
    return f"{platform.machine()} {platform.processor()}"


@functools.lru_cache(maxsize=1)
def _static_environment() -> str:
    import jax
    import jaxlib
    import numpy

    return repr((FORMAT, source_hash(), sys.version, jax.__version__, jaxlib.__version__, numpy.__version__,
                 _cpu_id()))


def environment_key() -> str | None:
    """What the process contributes to every key (source, versions, backend, settings); ``None``: no store."""
    import jax

    try:
        devices = jax.devices()
        client = devices[0].client
        backend = (jax.default_backend(), client.platform, client.platform_version, len(devices),
                   tuple(sorted({d.device_kind for d in devices})), jax.process_count())
        settings = tuple((n, repr(getattr(jax.config, n, None))) for n in _JAX_SETTINGS)
        return repr((_static_environment(), backend, settings, os.environ.get("XLA_FLAGS", ""),
                     os.environ.get("LIBTPU_INIT_ARGS", "")))
    except Exception:  # pragma: no cover - an exotic installation: no store
        return None


class _Unknown(Exception):
    """A value :func:`fingerprint` cannot reduce to bytes."""


def _feed(h, obj: Any, depth: int = 0) -> None:
    import numpy as np

    if depth > 20:
        raise _Unknown("too deep")
    if obj is None or isinstance(obj, (bool, int, float, complex, str, bytes)):
        h.update(f"{type(obj).__name__}:{obj!r};".encode())
    elif isinstance(obj, np.generic):
        h.update(f"np.{obj.dtype.str}:{obj.item()!r};".encode())
    elif isinstance(obj, np.ndarray):
        if obj.dtype.hasobject:
            raise _Unknown("object array")
        h.update(f"nd:{obj.dtype.str}:{obj.shape};".encode())
        h.update(np.ascontiguousarray(obj).tobytes())
    elif isinstance(obj, (tuple, list)):
        h.update(f"{type(obj).__name__}[{len(obj)}](".encode())
        for x in obj:
            _feed(h, x, depth + 1)
        h.update(b")")
    elif isinstance(obj, dict):
        h.update(f"dict[{len(obj)}](".encode())
        for k in sorted(obj, key=repr):
            _feed(h, k, depth + 1)
            _feed(h, obj[k], depth + 1)
        h.update(b")")
    elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        h.update(f"dc:{type(obj).__module__}.{type(obj).__qualname__}(".encode())
        for f in dataclasses.fields(obj):
            h.update(f.name.encode() + b"=")
            _feed(h, getattr(obj, f.name), depth + 1)
        h.update(b")")
    else:
        raise _Unknown(type(obj).__qualname__)


def fingerprint(*objs: Any) -> str | None:
    """SHA-256 of ``objs`` (numbers, strings, arrays, tuples, dicts and dataclasses of them, with their types);
    ``None`` when one of them holds anything else."""
    h = hashlib.sha256()
    try:
        for x in objs:
            _feed(h, x)
    except _Unknown:
        return None
    return h.hexdigest()


def entry_key(*parts: str) -> str:
    """The file name stem of one entry: a hash of the environment key and the kernel's parts."""
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


def load(key: str) -> dict | None:
    """The entry stored under ``key``, or ``None`` (absent, unreadable, from another format or key)."""
    base = store_dir()
    if base is None:
        return None
    path = base / (key + _SUFFIX)
    try:
        with open(path, "rb") as f:
            entry = pickle.load(f)
    except Exception:  # absent (the usual miss), or unreadable: the usual path
        return None
    if not isinstance(entry, dict) or entry.get("format") != FORMAT or entry.get("key") != key:
        return None
    try:
        os.utime(path)  # recently used
    except OSError:
        pass
    return entry


def save(key: str, entry: dict) -> bool:
    """Store ``entry`` under ``key`` (atomically: a temporary file renamed), then keep the store in its bounds;
    ``False`` when it could not be written (nothing else happens)."""
    base = store_dir()
    if base is None:
        return False
    try:
        base.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=base, prefix=".tmp-", suffix=_SUFFIX)
        try:
            with os.fdopen(fd, "wb") as f:
                pickle.dump({**entry, "format": FORMAT, "key": key}, f, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, base / (key + _SUFFIX))
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
        _evict(base)
    except Exception:
        return False
    return True


def _evict(base: Path) -> None:
    """Remove the least recently used entries beyond :data:`MAX_ENTRIES` or :data:`MAX_BYTES`, and temporary files
    older than :data:`STALE_S` (a killed writer's: they were never removed)."""
    import time

    entries = []
    for p in base.glob("*" + _SUFFIX):
        try:
            st = p.stat()
            if p.name.startswith(".tmp-"):
                if time.time() - st.st_mtime > STALE_S:
                    p.unlink()
                continue
        except OSError:
            continue
        entries.append((st.st_mtime, st.st_size, p))
    entries.sort(reverse=True)  # newest first
    total = 0
    for i, (_, size, p) in enumerate(entries):
        total += size
        if i >= MAX_ENTRIES or total > MAX_BYTES:
            try:
                p.unlink()
            except OSError:
                pass


def pack_executable(compiled) -> tuple | None:
    """``compiled`` (a :class:`jax.stages.Compiled`) as storable values, or ``None`` when it cannot be."""
    from jax.experimental import serialize_executable

    try:
        return serialize_executable.serialize(compiled)
    except Exception:
        return None


def unpack_executable(packed) -> Any:
    """The :class:`jax.stages.Compiled` of :func:`pack_executable`'s values, loaded on this backend; ``None`` on
    any failure."""
    from jax.experimental import serialize_executable

    try:
        blob, in_tree, out_tree = packed
        return serialize_executable.deserialize_and_load(blob, in_tree, out_tree)
    except Exception:
        return None
