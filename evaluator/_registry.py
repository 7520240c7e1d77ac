"""Registries: a family's kinds by name, each with its config schema and builder.

Every swappable family (``topology``, ``routing``, ``traffic``,
``placement``) keeps one :class:`Registry` in its ``__init__.py``, one line per
member. A member is a :class:`Kind` (or a family subclass of it) holding the
kind's name, its config schema (a plain dataclass, registered with Hydra by
:mod:`evaluator.config`) and ``build``, which turns one schema instance into a
library object. No code dispatches on a kind's name with an if-chain: it
looks the kind up here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Generic, TypeVar

from .errors import ConfigError, nearest

__all__ = ["Kind", "Registry"]


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
