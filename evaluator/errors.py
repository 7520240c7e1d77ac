"""Errors raised for bad input.

Every error names the field, the value given and what is allowed, so that a
user can fix the config without reading the source.
"""

from __future__ import annotations

from typing import Any


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
        msg = f"{field} = {value!r} is invalid: allowed is {allowed}."
        if hint:
            msg += f" {hint}"
        super().__init__(msg)


def require(cond: bool, field: str, value: Any, allowed: str, hint: str | None = None) -> None:
    """Raise :class:`ConfigError` unless ``cond`` holds."""
    if not cond:
        raise ConfigError(field, value, allowed, hint)


def positive_int(field: str, value: Any, minimum: int = 1) -> int:
    """Check that ``value`` is an integer >= ``minimum`` and return it as ``int``."""
    ok = isinstance(value, (int,)) and not isinstance(value, bool)
    if not ok:
        try:
            import numpy as np

            ok = isinstance(value, np.integer)
        except ImportError:  # pragma: no cover
            ok = False
    require(ok and int(value) >= minimum, field, value, f"an integer >= {minimum}")
    return int(value)


def positive_float(field: str, value: Any, allow_zero: bool = False) -> float:
    """Check that ``value`` is a finite number > 0 (or >= 0) and return it."""
    import math

    try:
        f = float(value)
    except (TypeError, ValueError):
        raise ConfigError(field, value, "a finite number" + (" >= 0" if allow_zero else " > 0")) from None
    ok = math.isfinite(f) and (f >= 0 if allow_zero else f > 0)
    require(ok, field, value, "a finite number" + (" >= 0" if allow_zero else " > 0"))
    return f
