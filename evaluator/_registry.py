"""Registries: a family's kinds by name, each with its config schema and builder.

Every swappable family (``topology``, ``routing``, ``traffic``,
``placement``) keeps one :class:`Registry` in its ``__init__.py``, one line per
member. A member is a :class:`Kind` (or a family subclass of it) holding the
kind's name, its config schema (a plain dataclass, registered with Hydra by
:mod:`evaluator.config`) and ``build``, which turns one schema instance into a
library object. No code dispatches on a kind's name with an if-chain: it
looks the kind up here.

:func:`from_mapping` turns a plain mapping (a YAML file read outside Hydra:
a machine of the catalogue, a machine's topology block, a policy's
parameters) into a schema instance, checking every key and value against the
schema's typed fields, with the errors of :mod:`evaluator.errors`.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Generic, TypeVar

import numpy as np

from .errors import ConfigError, ConfigTypeError, is_int, nearest

__all__ = ["Kind", "Registry", "from_mapping", "describe_type"]


@dataclasses.dataclass(frozen=True)
class Kind:
    """One member of a family.

    Attributes
    ----------
    name
        The kind's name: the value of ``<family>.kind`` in configs and the
        stem of its YAML file ``conf/<family>/<name>.yaml``.
    schema
        Config dataclass of this kind (every field typed; one schema per kind,
        so a key of another kind fails at composition).
    build
        ``build(cfg, ...)``: the library object from one schema instance (the
        extra arguments are fixed per family).
    """

    name: str
    schema: type
    build: Callable[..., Any]
    drawn: Callable[[Any], bool] | None = None
    """``drawn(cfg)``: whether a config of this kind is one random draw (its ``seed`` picks the result: a random
    placement, a random permutation, hashed ECMP's hash), where that is not the default
    (:meth:`is_drawn`)."""

    unread: Callable[[Any], None] | None = dataclasses.field(default=None, kw_only=True)
    """``unread(cfg)``: refuse (:func:`~evaluator.errors.refuse_ignored`) the keys of ``cfg`` that change nothing,
    by the predicates ``build`` refuses them with, building nothing (:meth:`refuse_unread`)."""

    def refuse_unread(self, cfg: Any) -> None:
        """The refusals of :attr:`unread` (none where the kind has no such key): a sweep's check, at its trial
        points, that a key acts at one of them, without building a traffic or topology."""
        if self.unread is not None:
            self.unread(cfg)

    def is_drawn(self, cfg: Any) -> bool:
        """Whether ``cfg`` (a schema instance) is one random draw: :attr:`drawn`, or by default whether the
        schema has a ``seed`` field (a kind has one only to draw with it)."""
        if self.drawn is not None:
            return bool(self.drawn(cfg))
        return dataclasses.is_dataclass(self.schema) and any(f.name == "seed" for f in dataclasses.fields(self.schema))


K = TypeVar("K", bound=Kind)


class Registry(Mapping[str, K], Generic[K]):
    """Kinds of one family by name; looking up an unknown name raises :class:`ConfigError`."""

    def __init__(self, family: str, kinds: Iterable[K]):
        self.family = family
        self._kinds: dict[str, K] = {}
        for k in kinds:
            if k.name in self._kinds:
                raise ValueError(f"{family} kind {k.name!r} registered twice")
            self._kinds[k.name] = k

    def __getitem__(self, name: str) -> K:
        try:
            return self._kinds[name]
        except (KeyError, TypeError):
            raise ConfigError(f"{self.family}.kind", name, f"one of {list(self._kinds)}",
                              nearest(name, self._kinds)) from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._kinds)

    def __len__(self) -> int:
        return len(self._kinds)

    def __contains__(self, name: object) -> bool:
        return name in self._kinds

    def __repr__(self) -> str:
        return f"Registry({self.family!r}, {list(self._kinds)})"


# --------------------------------------------------------------------------------------
# a plain mapping -> a schema instance, every key and value checked against the typed fields
# --------------------------------------------------------------------------------------

_NO_VALUE = object()


def _args(tp) -> tuple:
    return typing.get_args(tp)


def _is_union(tp) -> bool:
    return typing.get_origin(tp) in (typing.Union, types.UnionType)


def describe_type(tp) -> str:
    """What a value of the annotation ``tp`` is, in words (``"a list of integers, or null"``)."""
    if tp is Any:
        return "any value"
    if _is_union(tp):
        parts = [describe_type(a) for a in _args(tp) if a is not type(None)]
        return " or ".join(parts) + (", or null" if type(None) in _args(tp) else "")
    origin = typing.get_origin(tp)
    if origin is typing.Literal:
        return "one of " + " | ".join(map(str, _args(tp)))
    if origin in (list, tuple):
        inner = [a for a in _args(tp) if a is not Ellipsis]
        return "a list" + (f" (each {describe_type(inner[0])})" if inner else "")
    if origin is dict or tp is dict:
        return "a mapping"
    if dataclasses.is_dataclass(tp):
        return "a mapping of " + ", ".join(f.name for f in dataclasses.fields(tp))
    return {str: "a string", int: "an integer", float: "a number", bool: "true or false"}.get(tp, getattr(
        tp, "__name__", str(tp)))


def _check_value(tp, value, field: str, allowed: str | None, error, type_error):
    """``value`` as a value of the annotation ``tp`` (lists become lists, numbers floats), or raise naming
    ``field``."""
    what = allowed or describe_type(tp)
    if tp is Any:
        return value
    if _is_union(tp):
        if value is None:
            if type(None) in _args(tp):
                return None
            raise type_error(field, value, what)
        options = [a for a in _args(tp) if a is not type(None)]
        if len(options) == 1:  # Optional[X]: X's own message (its inner fields named)
            return _check_value(options[0], value, field, allowed, error, type_error)
        for a in options:
            try:
                return _check_value(a, value, field, None, error, type_error)
            except ConfigError:
                continue
        raise type_error(field, _shown(value), what)
    origin = typing.get_origin(tp)
    if origin is typing.Literal:
        if value not in _args(tp):
            raise error(field, value, what, nearest(value, _args(tp)))
        return value
    if origin in (list, tuple):
        if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, (list, tuple, np.ndarray)):
            raise type_error(field, _shown(value), what)
        inner = [a for a in _args(tp) if a is not Ellipsis]
        item = inner[0] if inner else Any
        return [_check_value(item, v, f"{field}[{i}]", None, error, type_error) for i, v in enumerate(value)]
    if origin is dict or tp is dict:
        if not isinstance(value, Mapping):
            raise type_error(field, _shown(value), what)
        return dict(value)
    if dataclasses.is_dataclass(tp):
        return from_mapping(tp, value, field, error, type_error)
    if tp is bool:
        if not isinstance(value, (bool, np.bool_)):
            raise type_error(field, _shown(value), what)
        return bool(value)
    if tp is int:
        if not is_int(value):
            raise type_error(field, _shown(value), what)
        return int(value)
    if tp is float:
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating, str)):
            raise type_error(field, _shown(value), what)
        try:  # PyYAML reads 2e9 (no dot) as a string; Hydra's float fields take it too
            f = float(value)
        except ValueError:
            raise type_error(field, value, what) from None
        if isinstance(value, str) and not math.isfinite(f):
            raise type_error(field, value, what)
        return f
    if tp is str:
        if not isinstance(value, str):
            raise type_error(field, _shown(value), what)
        return value
    return value  # pragma: no cover - an annotation the schemas do not use


def _shown(value):
    return list(value) if isinstance(value, (tuple, np.ndarray)) else value


def from_mapping(schema: type, data: Any, where: str = "", error: Callable[..., ConfigError] = ConfigError,
                 type_error: Callable[..., ConfigError] = ConfigTypeError):
    """An instance of the dataclass ``schema`` from a plain mapping, every key and value checked.

    Every key must be a field of ``schema`` (else the error names the key, the
    schema's fields and the nearest one); every field without a default must
    be given; every value must be of its field's annotation (``str``, ``int``,
    ``float`` (a numeric string is a number, as PyYAML reads ``2e9``),
    ``bool``, ``Optional``/unions, ``Literal``, ``list[...]``, ``dict``, a
    nested schema dataclass or ``Any``), with the field's
    ``metadata["allowed"]`` as the allowed values in the message when it has
    one. ``null`` is the field's default where the field has one and does not
    allow ``None`` (a file may list every key, ``null`` where unused).

    ``where``: the dotted prefix of the fields in messages (``"topology"``
    gives ``topology.dims``). ``error(field, value, allowed, hint)`` makes the
    exception of a bad value and ``type_error`` that of a value of the wrong
    type (default :class:`ConfigError` and :class:`ConfigTypeError`).
    Semantic checks (sizes that fit, positive bandwidths) are the builder's.
    """
    if dataclasses.is_dataclass(data) and isinstance(data, schema):
        return data
    fields = {f.name: f for f in dataclasses.fields(schema)}
    if not isinstance(data, Mapping):
        raise type_error(where or schema.__name__, _shown(data), f"a mapping of {', '.join(fields)}")
    hints = typing.get_type_hints(schema)
    prefix = f"{where}." if where else ""
    for key in data:
        if key not in fields:
            raise error(f"{prefix}{key}", data[key], f"a key of {where or schema.__name__}: one of {list(fields)}",
                        nearest(str(key), fields))
    out = {}
    for name, f in fields.items():
        has_default = f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
        value = data.get(name, _NO_VALUE)
        tp = hints[name]
        nullable = tp is Any or (_is_union(tp) and type(None) in _args(tp))
        if value is _NO_VALUE or (value is None and not nullable):
            if not has_default:
                raise error(f"{prefix}{name}", None, f"{f.metadata.get('allowed') or describe_type(tp)} "
                            f"(a required key)")
            continue
        out[name] = _check_value(tp, value, f"{prefix}{name}", f.metadata.get("allowed"), error, type_error)
    return schema(**out)
