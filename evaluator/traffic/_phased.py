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
from ..errors import ConfigError, ConfigTypeError, ResourceError, require, nearest
from .base import PhasedTraffic, TrafficKind, phased

__all__ = ["PhasedConfig", "kind", "phase_config"]

_RENAMED = (ConfigError, ResourceError, ConfigTypeError)
"""Errors of a phase's build whose ``traffic.<key>`` is renamed ``traffic.phases[i].<key>`` (same constructor)."""


@dataclass
class PhasedConfig:
    """Phases done one after another: ``phases`` (a list of traffic configs, each with its ``kind``) and
    optional ``names`` (one label per entry of ``phases``, an entry of several phases labelling them
    ``<name>.<its phase's name>``; or one per phase after those are expanded: :func:`_labels`)."""

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
            # a memory refusal (ResourceError) or a wrong type is the phase's key too (it named traffic.n_tasks)
            if type(exc) in _RENAMED and exc.field.startswith("traffic."):
                raise type(exc)(f"traffic.phases[{i}]." + exc.field[len("traffic."):], exc.value, exc.allowed,
                                exc.hint) from None
            raise
        # checked here, by the config's index: phased() numbers the flattened phases (a collective's steps)
        require(built[i].n_tasks == built[0].n_tasks, f"traffic.phases[{i}].n_tasks", built[i].n_tasks,
                f"the task count of traffic.phases[0] ({built[0].n_tasks}): every phase involves the same tasks")
    return phased(built, names=_labels(cfg.names, built))


def _labels(names, built) -> list[str] | None:
    """One label per phase from ``names``: one name per entry of ``phases`` (an entry of several phases, a
    collective's steps, labels them ``<name>.<its phase's name>``), or one per phase after that expansion."""
    if names is None:
        return None
    names = [str(x) for x in names]
    subs = [b.phase_names if b.kernel_input == "phases" else None for b in built]
    flat = sum(len(s) if s is not None else 1 for s in subs)
    given, counts = names, sorted({len(built), flat})
    if len(names) == len(built) and len(set(names)) == len(names):
        names = [n if s is None else f"{n}.{x}" for n, s in zip(names, subs) for x in (s or [None])]
    require(len(names) == flat and len(set(names)) == flat, "traffic.names", given,
            f"{' or '.join(map(str, counts))} distinct labels: one per entry of traffic.phases"
            + (f" ({len(built)}), or one per phase after the entries of several phases are expanded ({flat})"
               if flat != len(built) else ""))
    return names


def kind(registry: Callable[[], Any]) -> TrafficKind:
    """The ``phased`` traffic kind; ``registry()`` returns the traffic registry its phases are built with."""
    return TrafficKind("phased", PhasedConfig, lambda cfg, topology: _from_config(cfg, topology, registry()))
