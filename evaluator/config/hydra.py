"""Everything that touches Hydra or OmegaConf: composition, typed conversion, sweep requests.

The rest of the package sees only the typed dataclasses (:class:`EvalConfig`
and the per-kind schemas of the families' registries) and plain Python
containers. Composition errors (unknown key, a key of another kind, a bad
type, an unknown group option) become one-line
:class:`~evaluator.errors.ConfigCompositionError`.
"""

from __future__ import annotations

import copy
import dataclasses
import re
from collections.abc import Sequence
from typing import Any

from ..errors import ConfigCompositionError, ConfigError
from ..io import conf_dir, repo_dir
from .schemas import FAMILIES, EvalConfig

__all__ = ["register_schemas", "compose", "to_object", "compose_object", "to_yaml", "check_assignment",
           "SweepRequest", "compose_sweep", "IDENTITY_EXCLUDED"]


def register_schemas() -> None:
    """Store :class:`EvalConfig` and every registered kind's schema in Hydra's ConfigStore.

    The primary config uses ``eval_schema``; a group option ``conf/<group>/<kind>.yaml``
    starts its defaults list with ``<kind>_schema``.
    """
    from hydra.core.config_store import ConfigStore

    cs = ConfigStore.instance()
    cs.store(name="eval_schema", node=EvalConfig)
    for group, kinds in FAMILIES.items():
        for name, kind in kinds.items():
            cs.store(group=group, name=f"{name}_schema", node=kind.schema)


def _clean_hydra_message(exc: BaseException) -> str:
    """One line from a Hydra/OmegaConf error: what failed, the cause, the full key, the options."""
    parts: list[str] = []
    e: BaseException | None = exc
    while e is not None:
        text = str(e).strip()
        if "Available options in" in text:
            head, _, rest = text.partition("Available options in")
            group, _, opts = rest.partition(":")
            names = [o.strip() for o in opts.split("Config search path")[0].split() if o.strip()]
            names = [o for o in names if not o.endswith("_schema")]
            parts.append(f"{head.strip()} Available options in{group}: {', '.join(names)}")
        else:
            lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
            lines = [ln for ln in lines if not ln.startswith(("object_type", "Set the environment"))]
            parts.append(" ".join(lines))
        e = e.__cause__
    return " | ".join(p for p in parts if p)


_NOT_IN = re.compile(r"Key '([^']+)' not in '([^']+)'.*?full_key: ([\w.]+)")


def _explain_foreign_key(message: str, overrides: Sequence[str]) -> str:
    """A key of another kind (``traffic=stencil traffic.n_sources=4``): name the kind, its keys, the kinds
    that have the key."""
    m = _NOT_IN.search(message)
    if not m:
        return message
    key, schema_name, full_key = m.groups()
    group = full_key.split(".")[0]
    kinds = FAMILIES.get(group, {})
    kind = next((k for k in kinds.values() if k.schema.__name__ == schema_name), None)
    if kind is None:
        return message
    given = next((o.lstrip("+~") for o in overrides if o.lstrip("+~").split("=", 1)[0] == full_key), full_key)
    fields = [f.name for f in dataclasses.fields(kind.schema)]
    having = [k.name for k in kinds.values() if key in {f.name for f in dataclasses.fields(k.schema)}]
    text = (f"{given}: '{key}' is not a key of {group} kind '{kind.name}' (its keys: {', '.join(fields)})")
    if having:
        text += f"; '{key}' belongs to {group}=" + " | ".join(having)
    return text + "."


def _is_hydra(exc: BaseException) -> bool:
    return exc.__class__.__module__.startswith(("hydra", "omegaconf"))


def compose(overrides: Sequence[str], config_name: str = "config"):
    """Compose ``conf/<config_name>.yaml`` with Hydra overrides; return the (resolved) OmegaConf config."""
    from hydra import compose as hcompose
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from omegaconf import OmegaConf

    register_schemas()
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(conf_dir()), version_base="1.3"):
            search = [f"hydra.searchpath=[file://{repo_dir()}]"]
            cfg = hcompose(config_name=config_name, overrides=search + list(overrides))
        OmegaConf.resolve(cfg)
        return cfg
    except Exception as exc:  # hydra/omegaconf raise many types; report one line
        if _is_hydra(exc):
            raise ConfigCompositionError(_explain_foreign_key(_clean_hydra_message(exc), overrides)) from None
        raise


def to_object(cfg) -> EvalConfig:
    """A composed OmegaConf config -> the typed :class:`EvalConfig` (per-kind schemas inside)."""
    from omegaconf import OmegaConf

    try:
        obj = OmegaConf.to_object(cfg)
    except Exception as exc:
        if _is_hydra(exc):
            raise ConfigCompositionError(_clean_hydra_message(exc)) from None
        raise
    # A key added with '+' to a group holding another kind's schema would be dropped silently here.
    for group in FAMILIES:
        node, typed = cfg.get(group), getattr(obj, group, None)
        if node is None or not dataclasses.is_dataclass(typed):
            continue
        fields = {f.name for f in dataclasses.fields(typed)}
        extra = [k for k in node.keys() if k not in fields]
        if extra:
            raise ConfigCompositionError(_explain_foreign_key(
                f"Key '{extra[0]}' not in '{type(typed).__name__}' full_key: {group}.{extra[0]}", []))
    return obj


def to_yaml(cfg) -> str:
    """YAML text of a composed config or a typed config object."""
    from omegaconf import OmegaConf

    return OmegaConf.to_yaml(cfg if not dataclasses.is_dataclass(cfg) else OmegaConf.structured(cfg))


def _set_axes(cfg, axes: dict | None):
    if axes is not None:
        from omegaconf import OmegaConf

        OmegaConf.update(cfg, "sweep.axes", axes, merge=False)
    return cfg


def compose_object(overrides: Sequence[str], config_name: str = "config", axes: dict | None = None) -> EvalConfig:
    """:func:`compose` then :func:`to_object`; ``axes`` replaces ``sweep.axes`` first."""
    return to_object(_set_axes(compose(overrides, config_name), axes))


def check_assignment(cfg: EvalConfig, key: str, values: Sequence[Any]) -> None:
    """Check that the dotted ``key`` exists in ``cfg`` and accepts every value in ``values``.

    Raises :class:`ConfigError` naming the key (unknown axis) or the value
    that the key's schema type rejects.
    """
    from omegaconf import OmegaConf

    node = OmegaConf.structured(cfg)
    if OmegaConf.select(node, key, default="__missing__") == "__missing__":
        raise ConfigError("sweep.axes", key, "a key of the composed config",
                          f"Unknown axis. Top-level keys: {sorted(k for k in node.keys() if k != 'sweep')}")
    for value in values:
        probe = copy.deepcopy(node)
        try:
            OmegaConf.update(probe, key, value, merge=False)
        except Exception as exc:
            raise ConfigError(f"sweep.axes.{key}", value, "a value of the key's type",
                              str(exc).splitlines()[0]) from None


IDENTITY_EXCLUDED = {"": ("ray", "output_dir", "save"), "sweep": ("output_dir", "run_id")}
"""Settings that say where and how a sweep runs, not what it computes: left out of its identity."""


@dataclasses.dataclass
class SweepRequest:
    """A composed sweep, in plain typed form, for :func:`evaluator.sweep.plan_sweep`.

    Attributes
    ----------
    config
        The composed config as typed objects.
    axes
        ``sweep.axes`` as plain containers.
    identity_yaml
        The resolved config without storage and Ray settings (its hash is the run id).
    overrides
        The user's command-line overrides (a key both swept and overridden is a conflict).
    """

    config: EvalConfig
    axes: dict[str, Any]
    identity_yaml: str
    overrides: tuple[str, ...]
    compose_overrides: tuple[str, ...]
    config_name: str
    axes_override: dict | None = None

    def with_groups(self, choices: dict[str, str]) -> EvalConfig:
        """The config composed again with config-group choices, e.g. ``{"routing": "valiant"}``."""
        extra = [f"{group}={option}" for group, option in choices.items()]
        return compose_object(list(self.compose_overrides) + extra, self.config_name, self.axes_override)


def compose_sweep(overrides: Sequence[str], user_overrides: Sequence[str] | None = None,
                  config_name: str = "sweep", axes: dict | None = None) -> SweepRequest:
    """Compose a sweep config (``sweeps=NAME`` picks the study) into a :class:`SweepRequest`.

    ``user_overrides`` are the overrides checked against the axes (default: all
    but ``sweeps=``, ``ray.*`` and ``sweep.*``); ``axes`` replaces ``sweep.axes``
    (the optimizer's generated axes).
    """
    from omegaconf import OmegaConf

    cfg = _set_axes(compose(overrides, config_name), axes)
    obj = to_object(cfg)
    ident = OmegaConf.to_container(cfg, resolve=True)
    for section, keys in IDENTITY_EXCLUDED.items():
        target = ident if not section else ident[section]
        for k in keys:
            target.pop(k, None)
    if user_overrides is None:
        user_overrides = [o for o in overrides if not o.startswith(("sweeps=", "ray.", "sweep."))]
    return SweepRequest(
        config=obj,
        axes=OmegaConf.to_container(cfg.sweep.axes, resolve=True),
        identity_yaml=OmegaConf.to_yaml(OmegaConf.create(ident)),
        overrides=tuple(user_overrides),
        compose_overrides=tuple(overrides),
        config_name=config_name,
        axes_override=axes,
    )
