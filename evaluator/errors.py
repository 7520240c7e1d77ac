"""The one error family for bad input, and the one set of validators.

Every error names the field, the value given and what is allowed, so that a
user can fix the config without reading the source. All of them derive from
:class:`ConfigError` (itself a :class:`ValueError`), so one ``except
ConfigError`` catches any bad input, from a Hydra override, a machine YAML file,
a partition request or the Python API:

* :class:`ConfigError` ``(field, value, allowed, hint)``: the message is
  ``"<field> = <value!r> is invalid: allowed is <allowed>. <hint>"``;
* :class:`WordedError` subclasses take a message composed by the raiser
  (their wording is pinned by users' scripts and tests) and keep ``field``,
  ``value`` and ``allowed`` when known:
  :class:`ConfigCompositionError` (Hydra could not compose the config: unknown
  key, wrong type, unknown group option), :class:`MachineError` and
  :class:`UnknownMachineError` (the machine catalogue),
  :class:`PartitionError` (torus partition requests). Their validators
  (:func:`invalid`) word a bad value as ``"<context>: <field> = <value!r> is
  invalid; allowed: <allowed>"``.

Validators (:func:`require`, :func:`positive_int`, :func:`positive_float`,
:func:`is_int`, :func:`int_list`, :func:`per_dim`) are shared by every family;
those that may fail take ``error``, the exception factory of the caller's
dialect (default :class:`ConfigError`).
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import math
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

__all__ = [
    "ConfigError",
    "WordedError",
    "ConfigCompositionError",
    "MachineError",
    "UnknownMachineError",
    "PartitionError",
    "ResourceError",
    "ConfigTypeError",
    "closest",
    "nearest",
    "StorageError",
    "RunBusyError",
    "ClusterError",
    "check_seed",
    "available_memory",
    "check_memory",
    "fmt_size",
    "require",
    "IgnoredKeyError",
    "refuse_ignored",
    "ignored_keys_kept",
    "ignored_keys_collected",
    "keeps_ignored_keys",
    "cause_text",
    "invalid",
    "is_int",
    "positive_int",
    "positive_float",
    "int_list",
    "int_array",
    "per_dim",
    "reason",
    "NOT_COMPUTED",
    "with_partial",
]


def _one_line(text: str) -> str:
    """``text`` on one line: a NumPy array's repr spans several (``array([[1, 2],\n       [3, 4]])``)."""
    return " ".join(text.split()) if "\n" in text else text


class ConfigError(ValueError):
    """A configuration value is invalid.

    Parameters
    ----------
    field
        Dotted name of the offending field, e.g. ``"topology.g"``.
    value
        The value that was given.
    allowed
        A short description of what is allowed, e.g. ``"an integer in [2, 33]"``.
    hint
        Optional likely fix.
    """

    def __init__(self, field: str, value: Any, allowed: str, hint: str | None = None):
        self.field = field
        self.value = value
        self.allowed = allowed
        self.hint = hint
        msg = f"{field} = {_one_line(repr(value))} is invalid: allowed is {_one_line(str(allowed))}."
        if hint:
            msg += f" {_one_line(str(hint))}"
        super().__init__(msg)


class WordedError(ConfigError):
    """A :class:`ConfigError` whose whole message is composed by the raiser."""

    def __init__(self, message: str, field: str = "", value: Any = None, allowed: str = "",
                 hint: str | None = None):
        self.field = field
        self.value = value
        self.allowed = allowed or message
        self.hint = hint
        ValueError.__init__(self, message)


class ConfigCompositionError(WordedError):
    """Hydra could not compose the config (unknown key, bad type, unknown group option)."""


class MachineError(WordedError):
    """A machine description (YAML file or dict) is invalid; the message names the machine."""


class UnknownMachineError(MachineError):
    """No machine of the requested name is in the catalogue."""


class PartitionError(WordedError):
    """A partition request is invalid (size, shape, fit or allowed list)."""


class ResourceError(ConfigError):
    """A request that would exhaust memory (or another limit) before any of it is allocated."""


class ConfigTypeError(ConfigError, TypeError):
    """A value of the wrong type (a string where a number is expected, a list where a mapping is): a
    :class:`ConfigError` that is also a :class:`TypeError`, so Python callers may catch either."""


MEMORY_ENV = "EVALUATOR_MEMORY_LIMIT"
"""Environment variable: the memory (bytes) the size checks allow, instead of what the machine has free."""


def available_memory() -> int:
    """Bytes this process may allocate: ``$EVALUATOR_MEMORY_LIMIT``, else ``MemAvailable`` (Linux), else RAM."""
    import os

    env = os.environ.get(MEMORY_ENV)
    if env:
        return int(float(env))
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:  # pragma: no cover - not Linux
        pass
    try:
        return int(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):  # pragma: no cover
        return 1 << 62


def fmt_size(n: float) -> str:
    """Bytes as a short decimal size, e.g. ``"24.8 GB"``."""
    for unit, f in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= f:
            return f"{n / f:.3g} {unit}"
    return f"{n:.0f} B"


def check_memory(field: str, value: Any, need_bytes: float, what: str, hint: str | None = None,
                 fraction: float = 0.8) -> None:
    """Refuse, before allocating, a request whose estimated memory exceeds ``fraction`` of what is available.

    The message names the field, the value, the estimate (``what``: what the
    bytes hold) and the memory available, e.g. ``topology = 'DF(1000,...)' is
    invalid: allowed is a size that fits in memory: the links and tables need
    about 3.2 TB, 18 GB is available``.
    """
    have = available_memory()
    if need_bytes > fraction * have:
        raise ResourceError(field, value, f"a size that fits in memory: {what} need about {fmt_size(need_bytes)}, "
                                          f"{fmt_size(have)} is available", hint)



ErrorFactory = Callable[[str, Any, str], ConfigError]
"""``error(field, value, allowed) -> exception``: how a validator words a failure."""


def invalid(cls: type[WordedError], field: str, value: Any, allowed: str, context: str = "",
            hint: str = "") -> WordedError:
    """A :class:`WordedError` ``"<context>: <field> = <value!r> is invalid; allowed: <allowed>[. hint]"``."""
    msg = (f"{context}: " if context else "") + f"{field} = {value!r} is invalid; allowed: {allowed}"
    if hint:
        msg += f". {hint}"
    return cls(msg, field, value, allowed, hint or None)


def closest(value: Any, options) -> str | None:
    """The option closest to a misspelt ``value`` (difflib, cutoff 0.6), None when none is close."""
    import difflib

    match = difflib.get_close_matches(str(value), [str(o) for o in options], n=1, cutoff=0.6)
    return match[0] if match else None


def nearest(value: Any, options) -> str | None:
    """``"Did you mean 'x'?"`` for the option :func:`closest` to a misspelt ``value``; None when none is close."""
    if not isinstance(value, str) or value in options:  # (a valid value: no difflib on the happy path)
        return None
    match = closest(value, options)
    return f"Did you mean {match!r}?" if match else None


def require(cond: bool | np.bool_, field: str, value: Any, allowed: str, hint: str | None = None) -> None:
    """Raise :class:`ConfigError` unless ``cond`` holds."""
    if not cond:
        raise ConfigError(field, value, allowed, hint)


class IgnoredKeyError(ConfigError):
    """A key set away from its default where it changes nothing (``fairness`` without ``sharing=max_min``): the
    answer would be the one without it. Refused for one design point (``eval``, ``map``, the Python API); a sweep
    keeps it at the points where it acts nowhere as long as one point uses it (:func:`ignored_keys_kept`)."""


_REFUSE_IGNORED: contextvars.ContextVar[bool | list[IgnoredKeyError]] = contextvars.ContextVar(
    "evaluator_refuse_ignored", default=True)
"""True: refuse; False: keep (:func:`ignored_keys_kept`); a list: keep and record (:func:`ignored_keys_collected`)."""


def refuse_ignored(acts: bool, field: str, value: Any, allowed: str, hint: str | None = None) -> None:
    """Raise :class:`IgnoredKeyError` unless ``acts`` (the key changes the answer here) or inside
    :func:`ignored_keys_kept` (inside :func:`ignored_keys_collected`: record it instead)."""
    if acts:
        return
    how = _REFUSE_IGNORED.get()
    if how is True:
        raise IgnoredKeyError(field, value, allowed, hint)
    if isinstance(how, list):
        how.append(IgnoredKeyError(field, value, allowed, hint))


@contextlib.contextmanager
def _refusing_ignored(refuse: bool | list[IgnoredKeyError]) -> Iterator[None]:
    token = _REFUSE_IGNORED.set(refuse)
    try:
        yield
    finally:
        _REFUSE_IGNORED.reset(token)


def ignored_keys_kept() -> contextlib.AbstractContextManager[None]:
    """Inside, :func:`refuse_ignored` refuses nothing: a sweep's points, where a key set for all of them
    (``routing.power=8`` beside a ``routing=ugal,ugal_local`` axis) acts at some and not at others; the sweep itself
    refuses one that acts at none."""
    return _refusing_ignored(False)


@contextlib.contextmanager
def ignored_keys_collected() -> Iterator[list[IgnoredKeyError]]:
    """Inside, :func:`refuse_ignored` raises nothing and appends each refusal to the list it yields: every key
    that changes nothing at one point, not only the first (a sweep's check that a key acts at one of its
    points)."""
    found: list[IgnoredKeyError] = []
    with _refusing_ignored(found):
        yield found


def keeps_ignored_keys(fn: Callable) -> Callable:
    """``fn`` run inside :func:`ignored_keys_kept` (a sweep's entry points: in its own process or a Ray worker's)."""
    @functools.wraps(fn)
    def kept(*args, **kwargs):
        with ignored_keys_kept():
            return fn(*args, **kwargs)
    return kept


def cause_text(exc: BaseException) -> str:
    """An exception's text on one line, at most 200 characters (its type's name where it has none): the cause a
    refusal quotes from a library."""
    text = " ".join(str(exc).split())
    return (text[:200] + "...") if len(text) > 200 else (text or type(exc).__name__)


def is_int(value: Any) -> bool:
    """Whether ``value`` is an integer (Python or NumPy), not a bool."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def int_array(field: str, values: Any, allowed: str, low: int | None = None, high: int | None = None) -> np.ndarray:
    """``values`` as an int64 array of its shape, refused (:class:`ConfigError` naming ``field``, the first bad entry
    and its index, and ``allowed``) unless every entry is an integer (a float of integral value is one; 0.7, NaN,
    a bool or text are not: a cast read 0.7 as 0) in ``[low, high)`` where those are given."""
    a = np.asarray(values)
    if a.dtype == bool or not (np.issubdtype(a.dtype, np.integer) or np.issubdtype(a.dtype, np.floating)):
        if a.size == 0:
            return np.zeros(a.shape, np.int64)
        raise ConfigError(field, f"an array of {a.dtype}", allowed)
    bad = np.zeros(a.shape, bool) if a.dtype.kind in "iu" else ~np.isfinite(a) | (a != np.round(a))
    if low is not None:
        bad |= a < low
    if high is not None:
        bad |= a >= high
    if bad.any():
        at = tuple(int(i) for i in np.argwhere(bad)[0])
        raise ConfigError(field, a[at].item(), f"{allowed} (entry {list(at)} is not)")
    return a.astype(np.int64)


def positive_int(field: str, value: Any, minimum: int = 1) -> int:
    """Check that ``value`` is an integer >= ``minimum`` and return it as ``int``."""
    require(is_int(value) and int(value) >= minimum, field, value, f"an integer >= {minimum}")
    return int(value)


def positive_float(field: str, value: Any, allow_zero: bool = False) -> float:
    """Check that ``value`` is a finite number > 0 (or >= 0) and return it."""
    allowed = "a finite number" + (" >= 0" if allow_zero else " > 0")
    if isinstance(value, (bool, np.bool_, str, bytes)):  # ("1e9" as text: a number, not a string that float() reads)
        raise ConfigError(field, value, allowed)
    try:
        f = float(value)
    except (TypeError, ValueError):
        raise ConfigError(field, value, allowed) from None
    require(math.isfinite(f) and (f >= 0 if allow_zero else f > 0), field, value, allowed)
    return f


def int_list(field: str, value: Any, length: int | None = None, minimum: int = 1,
             error: ErrorFactory = ConfigError, allowed: str | None = None) -> tuple[int, ...]:
    """A non-empty list of integers >= ``minimum`` (of ``length`` entries if given), as a tuple."""
    what = allowed or ((f"a list of {length} " if length is not None else "a non-empty list of ")
                       + (f"integers >= {minimum}" if minimum != 1 else "positive integers"))
    ok = isinstance(value, (list, tuple, np.ndarray)) and len(value) > 0 and (length is None or len(value) == length)
    if not ok or not all(is_int(v) and int(v) >= minimum for v in value):
        raise error(field, list(value) if isinstance(value, (tuple, np.ndarray)) else value, what)
    return tuple(int(v) for v in value)


def per_dim(field: str, value: Any, ndim: int, cast: Callable[[Any], Any],
            error: ErrorFactory = ConfigError) -> tuple:
    """One value per dimension: a scalar broadcast to ``ndim`` entries, or a list of exactly ``ndim``."""
    if isinstance(value, (list, tuple, np.ndarray)):
        if len(value) != ndim:
            raise error(field, list(value), f"one value or a list of {ndim} values (one per dimension)")
        return tuple(cast(v) for v in value)
    return tuple(cast(value) for _ in range(ndim))


def reason(exc: ConfigError) -> str:
    """Short ``"field: what is allowed"`` of an error (the ``reason`` of an infeasible sweep point).

    A memory refusal records only ``"a size that fits in memory"``, not this machine's numbers, so that
    datasets do not differ between machines in their text.
    """
    field = exc.field.split("[")[0]
    allowed = "a size that fits in memory" if isinstance(exc, ResourceError) else exc.allowed
    return f"{field}: {allowed}"


class StorageError(WordedError):
    """A file could not be written or read back (full disk, unwritable directory, corrupt file).

    The message names the file, the cause, what was kept and how to resume.
    """


class RunBusyError(WordedError):
    """Another live process holds the lock of the same sweep run."""


class ClusterError(WordedError):
    """The Ray cluster named by ``ray.address`` could not be reached in time."""


MAX_SEED = 2 ** 62 - 1
"""The largest seed :func:`check_seed` takes: NumPy's ``default_rng`` takes any integer >= 0, but a seed is
written to datasets as a 64-bit integer, and studies add their draws to it (a seed of 2^64 ran a whole ``study
rdn`` and then failed to write it; METIS, behind ``map``, takes a C long)."""


def check_seed(field: str, value: Any) -> int:
    """A random seed: an integer in [0, 2^62) (:data:`MAX_SEED`; NumPy's ``default_rng`` takes it), returned as
    ``int``."""
    require(is_int(value) and 0 <= int(value) <= MAX_SEED, field, value,
            "an integer in [0, 2^62) (a NumPy default_rng seed)",
            "Seeds are 0, 1, 2, ...; use a different non-negative integer for another random draw.")
    return int(value)


NOT_COMPUTED = "not computed: the run was interrupted (Ctrl-C or SIGTERM) before it"
"""The reason a long run records for the points its interruption left out (:func:`with_partial`)."""


def with_partial(exc: KeyboardInterrupt, partial: Any) -> KeyboardInterrupt:
    """``exc`` (a Ctrl-C, or a SIGTERM that the command line turned into one) carrying ``partial``: what the
    interrupted run had finished, marked as partial (a study's dataset: the points not reached NaN, their reason
    :data:`NOT_COMPUTED`, the attribute ``interrupted`` saying how far it got). The run raises it again: a caller
    that does not look stops as before (the same exception, the same exit status), one that does reads
    ``exc.partial`` (the studies' commands write it)."""
    exc.partial = partial
    return exc
