"""Several exchanges done one after another (``phased``): e.g. PSDNS's two transposes in sequence.

A config lists the phases as traffic configs of their own::

    traffic:
      kind: phased
      phases:
        - {kind: many_to_many, ...}
        - {kind: all_to_all}

Each phase is built by its own kind (found in the traffic registry, which
:func:`kind` receives as a function, so that this module does not import
the package that registers it) and checked against that kind's schema;
every phase must involve the same tasks.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from collections.abc import Callable
from typing import Any, Optional

from .._types import ConfigOf
from ..errors import ConfigError, require, nearest
from .base import PhasedTraffic, TrafficKind, phased

__all__ = ["PhasedConfig", "kind", "phase_config"]


@dataclass
class PhasedConfig:
    """Phases done one after another: ``phases`` (a list of traffic configs, each with its ``kind``) and
    optional ``names`` (one label per phase)."""

    kind: str = "phased"
    phases: list[Any] = field(default_factory=list)
    names: Optional[list[str]] = None


def phase_config(i: int, raw: Any, KINDS):
    """The schema instance of phase ``i`` from a plain mapping (its ``kind`` picks the schema in ``KINDS``)."""
    where = f"traffic.phases[{i}]"
    if dataclasses.is_dataclass(raw):
        return raw
    require(isinstance(raw, dict) and "kind" in raw, where, raw,
            f"a traffic config with a kind, one of {[k for k in KINDS if k != 'phased']}")
    if raw["kind"] not in KINDS:
        raise ConfigError(f"{where}.kind", raw["kind"], f"one of {[k for k in KINDS if k != 'phased']}",
                          nearest(raw["kind"], KINDS))
    kind = KINDS[raw["kind"]] if raw["kind"] != "phased" else None
    if kind is None:
        raise ConfigError(f"{where}.kind", "phased", "a single exchange (phases do not nest)")
    fields = {f.name for f in dataclasses.fields(kind.schema)}
    for key in raw:
        if key not in fields:
            raise ConfigError(f"{where}.{key}", raw[key], f"a key of traffic kind {raw['kind']!r}: "
                                                          f"{sorted(fields)}")
    return kind.schema(**raw)


def _from_config(cfg: ConfigOf[PhasedConfig], topology, KINDS) -> PhasedTraffic:
    require(isinstance(cfg.phases, (list, tuple)) and len(cfg.phases) > 0, "traffic.phases", cfg.phases,
            "a non-empty list of traffic configs (one per phase)")
    built = []
    for i, raw in enumerate(cfg.phases):
        sub = phase_config(i, raw, KINDS)
        try:
            built.append(KINDS[sub.kind].build(sub, topology))
        except ConfigError as exc:
            if type(exc) is ConfigError and exc.field.startswith("traffic."):
                raise ConfigError(f"traffic.phases[{i}]." + exc.field[len("traffic."):], exc.value, exc.allowed,
                                  exc.hint) from None
            raise
    names = list(cfg.names) if cfg.names is not None else None
    return phased(built, names=names)


def kind(registry: Callable[[], Any]) -> TrafficKind:
    """The ``phased`` traffic kind; ``registry()`` returns the traffic registry its phases are built with."""
    return TrafficKind("phased", PhasedConfig, lambda cfg, topology: _from_config(cfg, topology, registry()))
