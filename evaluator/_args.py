"""Argument parsing shared by the commands: no option given twice is silently reduced to its last value.

argparse keeps the last of several occurrences of an option (``--where a=1 --where b=2`` was ``--where b=2``).
Every command builds its parser with :class:`ArgumentParser`:

* an option that takes one value (argparse's ``store``, the default action) refuses a second occurrence with
  another value, aliases included (``-n 3 --top 5``), with a :class:`~evaluator.errors.ConfigError` naming the
  option and both values (exit status 2 through the command line's error handling);
* an option where several values make sense is declared ``action="extend"`` (``--where``, ``--over``,
  ``--size``): its occurrences accumulate, ``--where a=1 --where b=2`` is ``--where a=1 b=2``;
* flags (``store_true``) may be repeated, and so may an option with the same value: a repeat means the same.

Hydra overrides (the positional ``key=value`` arguments) keep Hydra's rule, the last of a key wins: scripts and
the documents build command lines as a base plus changes (``$E eval $B routing=kshortest``).
"""

from __future__ import annotations

import argparse

from .errors import ConfigError, ConfigTypeError, ResourceError

__all__ = ["ArgumentParser", "StoreOnce", "given_options", "override_key", "named_as_options"]


class StoreOnce(argparse._StoreAction):
    """argparse's ``store`` that refuses a second occurrence of an option in one parse."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._given: list[tuple[argparse.Namespace, str, object]] = []

    def __call__(self, parser, namespace, values, option_string=None):
        if option_string is not None:  # an option, not a positional argument
            for ns, first_option, first in self._given:
                if ns is namespace and first != values:  # the same value again means the same: kept
                    names = "/".join(self.option_strings)
                    raise ConfigError(
                        option_string, [first, values], f"one value: {names} may be given once",
                        f"It was given twice ({first_option} {_shown(first)}, then {option_string} "
                        f"{_shown(values)}); keep the one you mean.")
            self._given.append((namespace, option_string, values))
        super().__call__(parser, namespace, values, option_string)


def given_options(parser: argparse.ArgumentParser, namespace: argparse.Namespace) -> dict[str, str]:
    """The single-valued options (:class:`StoreOnce`) given in the parse that made ``namespace``: destination ->
    the option as written (``{"load": "--load"}``), whatever their values (a default given explicitly counts)."""
    out = {}
    for action in parser._actions:
        if isinstance(action, StoreOnce):
            for ns, option, _ in action._given:
                if ns is namespace:
                    out[action.dest] = option
    return out


def _shown(value) -> str:
    return " ".join(map(str, value)) if isinstance(value, list) else str(value)


class ArgumentParser(argparse.ArgumentParser):
    """:class:`argparse.ArgumentParser` whose single-valued options refuse a repeat (:class:`StoreOnce`), and
    whose options are taken whole: argparse's abbreviations are off (``study buyer --seed 3`` was read as its
    ``--seeds 3``, where ``study rdn`` has a ``--seed`` of another meaning).

    The registry is shared by argument groups, mutually exclusive groups and sub-parsers (made with this class),
    so every ``add_argument`` without an ``action`` (or with ``action="store"``) gets :class:`StoreOnce`."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)
        self.register("action", None, StoreOnce)
        self.register("action", "store", StoreOnce)


def override_key(override: str) -> str | None:
    """The config key a Hydra override sets (``+a.b=1`` -> ``a.b``, ``~a`` -> ``a``, ``group@pkg=x`` ->
    ``group@pkg``); None for an argument that is not an override (no ``=`` and no ``~``)."""
    text = str(override).strip()
    if text.startswith("~"):
        return text[1:].split("=", 1)[0].strip() or None
    key, sep, _ = text.partition("=")
    if not sep:
        return None
    return key.lstrip("+").strip() or None


class named_as_options:  # noqa: N801  (a context manager used as a statement: `with named_as_options({...}):`)
    """Re-raise a library's :class:`~evaluator.errors.ConfigError` naming one of its arguments with the option
    that gave it: ``{"metric": "--best"}`` turns ``metric = 'x' is invalid`` into ``--best = 'x' is invalid``, and
    a dotted field's rest follows the option (``where.routing`` -> ``--where routing``); a dotted key names those
    fields alone (``{"trace.load": "--load"}``), the longest that matches winning. The type and size refusals
    (:class:`~evaluator.errors.ConfigTypeError`, :class:`~evaluator.errors.ResourceError`) are renamed the same
    way; other errors, and the worded ones (whose message is the raiser's), pass unchanged."""

    def __init__(self, options: dict[str, str]):
        self.options = options

    def __enter__(self):
        return self

    def __exit__(self, kind, exc, tb):
        if kind not in (ConfigError, ConfigTypeError, ResourceError):  # (the worded ones word their own messages)
            return False
        parts = str(exc.field).split(".")
        for k in range(len(parts), 0, -1):  # the longest dotted key given, then the rest after the option
            option = self.options.get(".".join(parts[:k]))
            if option is not None:
                rest = ".".join(parts[k:])
                raise kind(option + (" " + rest if rest else ""), exc.value, exc.allowed, exc.hint) from None
        return False
