"""Argument checks of the workload API: one line naming the argument, the value and what is allowed.

A value of the wrong type raises :class:`~evaluator.errors.ConfigTypeError`
(a :class:`TypeError` and a :class:`~evaluator.errors.ConfigError`), a value
of the right type but out of range a :class:`~evaluator.errors.ConfigError`
(a :class:`ValueError`). :func:`check_keys` refuses a key that is not in a
schema, with the allowed keys and the nearest match (:mod:`difflib`).
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from ..errors import ConfigError, ConfigTypeError, is_int
from ..errors import closest as nearest  # the one difflib match (re-exported for the workload modules)
from ..io import check_writable  # noqa: F401  (re-exported: the one probe lives in evaluator.io)

__all__ = ["int_arg", "float_arg", "bool_arg", "path_arg", "mapping_arg", "instance_arg", "check_keys", "nearest",
           "check_writable"]


def _short(value: Any) -> Any:
    """A value as a message shows it: NumPy scalars as Python ones, long sequences cut."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return f"array of shape {value.shape} and dtype {value.dtype}"
    return value


def int_arg(name: str, value: Any, minimum: int | None = None, maximum: int | None = None,
            none: bool = False, what: str = "") -> int | None:
    """An integer (Python or NumPy, not bool) in ``[minimum, maximum]``; None when ``none``."""
    if minimum is not None and maximum is not None:
        rng = f" in [{minimum}, {maximum}]"
    elif minimum is not None:
        rng = f" >= {minimum}"
    elif maximum is not None:
        rng = f" <= {maximum}"
    else:
        rng = ""
    allowed = f"an integer{rng}" + (what and f" ({what})") + (", or None" if none else "")
    if value is None and none:
        return None
    if not is_int(value):
        raise ConfigTypeError(name, _short(value), allowed)
    v = int(value)
    if (minimum is not None and v < minimum) or (maximum is not None and v > maximum):
        raise ConfigError(name, v, allowed)
    return v


def float_arg(name: str, value: Any, minimum: float | None = None, maximum: float | None = None,
              open_min: bool = False, what: str = "") -> float:
    """A finite real number (an integer is accepted), in ``[minimum, maximum]`` (``(minimum, ...`` if ``open_min``)."""
    lo = "" if minimum is None else f"{'>' if open_min else '>='} {minimum:g}"
    hi = "" if maximum is None else f"<= {maximum:g}"
    allowed = "a finite number" + (f" {lo}" if lo else "") + (" and" if lo and hi else "") + (f" {hi}" if hi else "")
    allowed += f" ({what})" if what else ""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ConfigTypeError(name, _short(value), allowed)
    v = float(value)
    if not math.isfinite(v) or (minimum is not None and (v <= minimum if open_min else v < minimum)) \
            or (maximum is not None and v > maximum):
        raise ConfigError(name, _short(value), allowed)
    return v


def bool_arg(name: str, value: Any) -> bool:
    """True or False (not 0/1, not a string)."""
    if not isinstance(value, (bool, np.bool_)):
        raise ConfigTypeError(name, _short(value), "true or false")
    return bool(value)


def path_arg(name: str, value: Any) -> str:
    """A file path (str or os.PathLike) as str."""
    if not isinstance(value, (str, os.PathLike)) or (isinstance(value, str) and not value):
        raise (ConfigError if isinstance(value, str) else ConfigTypeError)(
            name, _short(value), "a file path (str or os.PathLike)")
    return os.fspath(value)


def mapping_arg(name: str, value: Any, what: str) -> Mapping:
    """A mapping (dict)."""
    if not isinstance(value, Mapping):
        raise ConfigTypeError(name, _short(value), what)
    return value


def instance_arg(name: str, value: Any, cls: type | tuple[type, ...], what: str) -> Any:
    """``value`` if it is an instance of ``cls``; else a TypeError naming ``what`` is allowed."""
    if not isinstance(value, cls):
        shown = _short(value)
        if not isinstance(shown, (str, int, float, bool, type(None), list, tuple, dict)):
            shown = f"a {type(value).__name__}"
        raise ConfigTypeError(name, shown, what)
    return value


def check_keys(where: str, path: str, given: Mapping, allowed: Iterable[str]) -> None:
    """Refuse the first key of ``given`` (the mapping at dotted ``path`` of file ``where``; ``""``: its top level)
    not in ``allowed``: ConfigError naming ``where: path.key``, its value, the allowed keys and the nearest match."""
    allowed = [a for a in allowed if not str(a).startswith("_")]
    for key in given:
        if str(key).startswith("_") or key in allowed:
            continue
        near = nearest(str(key), allowed)
        name = f"{path}.{key}" if path else str(key)
        raise ConfigError(f"{where}: {name}" if where else name, _short(given[key]),
                          f"a key of {path or 'the top level'}: {', '.join(allowed)}",
                          f"Did you mean {path + '.' if path else ''}{near}?" if near else None)
