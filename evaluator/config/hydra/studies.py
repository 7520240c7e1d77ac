"""Which study a sweep composes, and the composed sweep (:class:`SweepRequest`, :func:`compose_sweep`).

Which study a sweep composes (:func:`compose_sweep`, docs/sweeps.md): ``sweeps=NAME`` is
``sweeps/NAME.yaml``, or ``DIR/NAME.yaml`` with ``config_dir`` (Hydra's ``--config-dir``; DIR joins the
search path, so a study may define config groups next to it); ``sweeps=PATH.yaml`` is that file
(:func:`study_overrides`). Without ``sweeps=``, a sweep has exactly the axes its overrides give, on
``conf/config.yaml`` (the clean base); only overrides that are all run settings run
:data:`DEFAULT_STUDY` (:func:`with_default_study`). A key set on the command line under a group that an
axis sweeps is set in every kind the axis chooses; when the default kind cannot take it, the base is
composed with the first point's kinds (the error, if any, names the kind the user swept).

Hydra's sweep overrides among a sweep's overrides become axes (:mod:`evaluator.config.hydra.grammar`); the
sweep's identity (its run id) leaves out :data:`IDENTITY_EXCLUDED`.
"""

from __future__ import annotations

import copy
import dataclasses
import re
from collections.abc import Sequence
from typing import Any

from ...errors import ConfigCompositionError, ConfigError, ignored_keys_kept, is_int
from ...io import conf_dir, repo_dir
from ..schemas import GROUPS, EvalConfig, SweepConfig
from .composition import _STAGED, _override_key, _set_axes, compose, compose_object, one_line, to_object
from .grammar import _canonical_axes, _merge_sweeps, _split_sweeps

__all__ = ["SweepRequest", "compose_sweep", "compose_sweep_config", "IDENTITY_EXCLUDED", "DEFAULT_STUDY",
           "with_default_study", "is_run_setting", "study_overrides"]


def _shipped_cost(cost: Any) -> bool:
    """Whether a sweep's ``cost`` group is the price table of ``conf/cost/default.yaml`` without a budget: then it is
    left out of the sweep's identity (it changes no metric and no point's feasibility, and runs keep the ids they
    had before the cost model; docs/cost.md says what that means for an edited default file)."""
    from ...cost import prices_from

    if not isinstance(cost, dict) or cost.get("budget") is not None:
        return False
    try:
        return prices_from(cost) == prices_from(None)
    except ConfigError:
        return False


IDENTITY_EXCLUDED = {"": ("ray", "output_dir", "save"), "sweep": ("output_dir", "run_id")}
"""Settings that say where and how a sweep runs, not what it computes: left out of its identity."""

LATER_KEYS = {("traffic", "neighbours"): "faces"}
"""Keys added after sweeps had run ids, with the value that computes what the sweep computed before them: left out
of the identity at that value (the run id sweeps had before the key existed)."""


# --------------------------------------------------------------------------------------
# Which study: sweeps=NAME, a study file anywhere (--config-dir, a path), the default study
# --------------------------------------------------------------------------------------

DEFAULT_STUDY = "dragonfly_nne_placement"
"""The study a bare ``evaluator sweep`` runs (no overrides, or run settings only): the README's main job."""

_RUN_SETTING_HEADS = ("ray", "output_dir", "save", "hydra")


def is_run_setting(override: str) -> bool:
    """Whether an override says only where and how a sweep runs (``ray.*``, ``sweep.*`` but ``sweep.axes``,
    ``output_dir``, ``save``, ``hydra.*``), not what it sweeps."""
    key = _override_key(override)
    head = key.split(".")[0]
    if head == "sweep":
        return key != "sweep" and not key.startswith("sweep.axes")
    return head in _RUN_SETTING_HEADS


def with_default_study(overrides: Sequence[str]) -> list[str]:
    """The clean-base rule of ``evaluator sweep``: ``overrides`` with ``sweeps=`` :data:`DEFAULT_STUDY` first
    when they are only run settings (:func:`is_run_setting`: a bare ``evaluator sweep``, the README's main job);
    otherwise as given (without ``~sweeps``, the old way to a clean base): a sweep without ``sweeps=`` sweeps
    exactly the axes of its overrides, on ``conf/config.yaml`` and the overrides."""
    overrides = [o for o in overrides if o.strip() != "~sweeps"]
    if any(_override_key(o) == "sweeps" for o in overrides):
        return overrides
    if all(is_run_setting(o) for o in overrides):
        return [f"sweeps={DEFAULT_STUDY}", *overrides]
    return overrides


def _shipped_studies() -> list[str]:
    return sorted(p.stem for p in (repo_dir() / "sweeps").glob("*.yaml"))


def _stage(study: Any) -> tuple[str, Any]:
    """``(option name, directory)``: a directory whose ``sweeps/<name>.yaml`` is a copy of the study file
    ``study`` (Hydra finds a study as an option of the ``sweeps`` group; the file itself may live anywhere).
    The directory is removed when the process exits."""
    import atexit
    import shutil
    import tempfile
    from pathlib import Path

    header = []
    for line in study.read_text(errors="replace").splitlines():
        if line.strip() and not re.match(r"\s*#\s*@", line):
            break
        header.append(line)
    if not re.search(r"#\s*@package\s+_global_", "\n".join(header)):
        raise ConfigError("sweeps", str(study), "a study file that starts with the line '# @package _global_' (as "
                          "the files of sweeps/ do; Hydra reads it only before any other line)",
                          "Without it the study's keys would land under 'sweeps.' and its defaults would not "
                          "apply. See docs/sweeps.md.")
    name = re.sub(r"[^\w-]", "_", study.stem) or "study"
    staging = Path(tempfile.mkdtemp(prefix="evaluator-study-"))
    atexit.register(shutil.rmtree, staging, True)
    (staging / "sweeps").mkdir()
    staged = staging / "sweeps" / f"{name}.yaml"
    staged.write_bytes(study.read_bytes())
    _STAGED[staged] = study
    return name, staging


def _check_shadowing(directory: Any) -> None:
    """Refuse a group option in a user's directory that an option of ``conf/`` of the same name hides (Hydra
    searches ``conf/`` first, as with its own ``--config-dir``)."""
    for group in GROUPS:
        for option in sorted((directory / group).glob("*.yaml")):
            shipped = conf_dir() / group / option.name
            if shipped.exists():
                raise ConfigError(f"{group}={option.stem}", str(option), f"a {group} option whose name no option "
                                  f"of conf/{group}/ has", f"{shipped} is found first, so this file would never be "
                                  f"read: rename it (e.g. {group}/my_{option.name}).")


def study_overrides(overrides: Sequence[str], config_dir: str | None = None) -> tuple[list[str], list[str], str]:
    """Find the study that ``sweeps=`` names: ``(overrides, search path, name)``.

    * ``sweeps=NAME``: ``sweeps/NAME.yaml`` of the checkout; with ``config_dir`` (``--config-dir DIR``),
      ``DIR/NAME.yaml`` (or ``DIR/sweeps/NAME.yaml``) first;
    * ``sweeps=PATH`` (ends in ``.yaml``/``.yml`` or holds a ``/``): that file, relative to the current directory.

    A study file outside the checkout may define config groups next to it (``DIR/routing/NAME.yaml``,
    ``DIR/topology/NAME.yaml``: ``routing=NAME``); its directory (and ``config_dir``) joins Hydra's search path.
    ``overrides`` come back with ``sweeps=`` naming the study as Hydra finds it; ``name`` is the study file's
    stem (the sweep's default name), ``""`` for a study of the checkout or none. A study that is not where it
    was named raises :class:`~evaluator.errors.ConfigError` naming the value and where it looked.
    """
    from pathlib import Path

    search: list[str] = []
    out = list(overrides)
    directory = None
    if config_dir is not None:
        directory = Path(str(config_dir)).expanduser().resolve()
        if not directory.is_dir():
            raise ConfigError("--config-dir", str(config_dir), "a directory of study files (NAME.yaml) and, "
                              "optionally, config groups (routing/, topology/, traffic/, placement/)",
                              f"{directory} is not a directory.")
        _check_shadowing(directory)
        search.append(str(directory))
    name = ""
    for i, text in enumerate(out):
        key, sep, value = text.partition("=")
        if key.lstrip("+") != "sweeps" or not sep or "," in value or "(" in value:
            continue  # not a study choice (a sweep of sweeps= is refused as a run setting)
        value = value.strip().strip("'\"")
        study = None
        if value.endswith((".yaml", ".yml")) or "/" in value:
            study = Path(value).expanduser().resolve()
            if not study.is_file():
                raise ConfigError("sweeps", value, "a study of sweeps/ (sweeps=NAME), DIR/NAME.yaml with "
                                  "--config-dir DIR, or the path of a study file",
                                  f"No file {study}.")
        elif directory is not None:
            found = [p for p in (directory / f"{value}.yaml", directory / f"{value}.yml") if p.is_file()]
            if found:
                study = found[0]
            elif not ((directory / "sweeps" / f"{value}.yaml").is_file() or value in _shipped_studies()):
                theirs = sorted(p.stem for p in directory.glob("*.y*ml"))
                raise ConfigError("sweeps", value, f"a study file of {directory} ({', '.join(theirs) or 'none'}) "
                                  f"or of the checkout's sweeps/ ({', '.join(_shipped_studies())})",
                                  f"Looked for {directory / value}.yaml and {repo_dir() / 'sweeps' / value}.yaml.")
        if study is None:
            continue
        option, staging = _stage(study)
        search.insert(0, str(staging))
        if study.parent != directory:
            _check_shadowing(study.parent)
            search.append(str(study.parent))
        out[i] = f"{key}={option}"
        name = option
    return out, search, name


# --------------------------------------------------------------------------------------
# Composed sweeps
# --------------------------------------------------------------------------------------


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
    compose_overrides
        The overrides composed (composing them again gives :attr:`config`).
    search_path
        More directories of config groups and studies (:func:`study_overrides`).
    """

    config: EvalConfig
    axes: dict[str, Any]
    identity_yaml: str
    overrides: tuple[str, ...]
    compose_overrides: tuple[str, ...]
    config_name: str
    axes_override: dict | None = None
    search_path: tuple[str, ...] = ()

    def with_groups(self, choices: dict[str, str]) -> EvalConfig:
        """The config composed again with config-group choices, e.g. ``{"routing": "valiant"}`` (a copy of
        :attr:`config` where the overrides composed already chose the same options)."""
        given = {}
        for ov in self.compose_overrides:
            key, sep, value = ov.partition("=")
            if sep and not key.startswith(("+", "~")):
                given[key] = value
        if all(given.get(group) == str(option) for group, option in choices.items()):
            return copy.deepcopy(self.config)
        extra = [f"{group}={option}" for group, option in choices.items()]
        try:
            return compose_object(list(self.compose_overrides) + extra, self.config_name, self.axes_override,
                                  self.search_path)
        except ConfigCompositionError as exc:
            swept = ", ".join(f"{group}={option}" for group, option in choices.items())
            raise ConfigCompositionError(f"{exc} (composing the sweep's point {swept}: a key set on the command "
                                         f"line must be a key of every kind the sweep's axes choose)") from None


def _group_axes(axes: dict | None) -> dict[str, list]:
    """Config group -> the options its axis lists: a group axis is a list of option names or of mappings naming
    the option by ``kind`` (``{kind: dragonfly, g: 16}``), on its own or zipped with other groups."""
    def option(v):
        return v.get("kind") if isinstance(v, dict) else v

    out = {}
    for key, spec in (axes or {}).items():
        if key in GROUPS and isinstance(spec, list) and spec:
            out[key] = [option(v) for v in spec]
        elif isinstance(spec, dict) and isinstance(spec.get("zip"), dict):
            for k, values in spec["zip"].items():
                if k in GROUPS and isinstance(values, list) and values:
                    out[k] = [option(v) for v in values]
    return out


def _compose_first_point(plain: list[str], sweeps: list[tuple[str, Any]], config_name: str,
                         search_path: Sequence[str], axes: dict | None, max_points: int | None) -> list[str]:
    """The group choices of the sweep's first point (``["placement=linear", ...]``), for a base that the
    defaults cannot compose: ``placement=linear,alps placement.tasks_per_node=2`` sets a key of the swept
    kinds that the default kind may lack. The axes are read from a composition without the keys under the
    groups; the choices are those the overrides do not make already."""
    from omegaconf import OmegaConf

    if axes is None:
        structural = [o for o in plain if _override_key(o).split(".")[0] not in GROUPS or _override_key(o) in GROUPS]
        try:
            cfg = compose(structural, config_name, search_path)
        except ConfigCompositionError:
            return []
        axes = OmegaConf.to_container(cfg.sweep.axes, resolve=True) if "sweep" in cfg else {}
    axes = _merge_sweeps(sweeps, axes, max_points, search_path)
    chosen = {_override_key(o) for o in plain if "=" in o and not o.startswith(("+", "~"))}
    return [f"{group}={options[0]}" for group, options in _group_axes(axes).items() if group not in chosen]


def _compose_sweep_parts(overrides: Sequence[str], config_name: str, axes: dict | None, config_dir: str | None):
    """``(cfg, plain overrides composed, axes or None, sweep overrides, user's plain overrides, search path)``."""
    from omegaconf import OmegaConf

    overrides = one_line(overrides)
    if config_name == "sweep":
        overrides = with_default_study(overrides)
    overrides, search_path, study_name = study_overrides(overrides, config_dir)
    plain, sweeps = _split_sweeps(overrides)
    composed = list(plain)
    try:
        cfg = compose(plain, config_name, search_path)
    except ConfigCompositionError:
        first = _compose_first_point(plain, sweeps, config_name, search_path, axes, None)
        if not first:
            raise
        composed = plain + first
        try:
            cfg = compose(composed, config_name, search_path)  # errors name the kind of the first point
        except ConfigCompositionError as exc:
            raise ConfigCompositionError(f"{exc} (composing the sweep's first point {' '.join(first)}: a key set "
                                         f"on the command line must be a key of every kind the sweep's axes "
                                         f"choose)") from None
    cfg = _set_axes(cfg, axes)
    if study_name and "sweep" in cfg and cfg.sweep.name == SweepConfig.name \
            and not any(_override_key(o) == "sweep.name" for o in plain):
        composed.append(f"sweep.name={study_name}")  # a study file that does not name itself: its file name
        cfg.sweep.name = study_name
    if sweeps:
        max_points = OmegaConf.select(cfg, "sweep.max_points", default=None)
        current = axes if axes is not None else OmegaConf.to_container(cfg.sweep.axes, resolve=True)
        axes = _merge_sweeps(sweeps, current, int(max_points) if is_int(max_points) else None, search_path)
        _set_axes(cfg, axes)
    return cfg, composed, axes, [text for text, _ in sweeps], plain, tuple(search_path)


def compose_sweep_config(overrides: Sequence[str], config_name: str = "sweep", axes: dict | None = None,
                         config_dir: str | None = None):
    """Compose a sweep config with Hydra's sweep overrides among ``overrides`` made axes (see
    :mod:`evaluator.config.hydra.grammar`); ``axes`` replaces ``sweep.axes`` first; ``config_dir`` is Hydra's
    ``--config-dir`` (:func:`study_overrides`). With ``config_name`` ``"sweep"`` and no ``sweeps=``, the
    clean-base rule holds (:func:`with_default_study`).

    Returns ``(cfg, plain overrides, axes or None, sweep overrides)``: the composed OmegaConf config, the
    overrides composed, the ``sweep.axes`` set (``None``: the composed one, untouched) and the sweep overrides.
    """
    return _compose_sweep_parts(overrides, config_name, axes, config_dir)[:4]


def compose_sweep(overrides: Sequence[str], user_overrides: Sequence[str] | None = None,
                  config_name: str = "sweep", axes: dict | None = None, config_dir: str | None = None) -> SweepRequest:
    """Compose a sweep config (``sweeps=NAME`` picks the study) into a :class:`SweepRequest`.

    ``user_overrides`` are the overrides checked against the axes (default: all
    but ``sweeps=``, ``ray.*`` and ``sweep.*``); ``axes`` replaces ``sweep.axes``
    (the optimizer's generated axes). Hydra sweep overrides (``routing=minimal,valiant``,
    ``placement.seed=range(0,8)``) become axes (:func:`compose_sweep_config`). ``config_dir``: Hydra's
    ``--config-dir``, a directory of study files and config groups (:func:`study_overrides`). With
    ``config_name`` ``"sweep"``, overrides without ``sweeps=`` sweep exactly their own axes on
    ``conf/config.yaml`` (the default study only for run settings alone: :func:`with_default_study`).
    """
    from omegaconf import OmegaConf

    cfg, composed, axes, sweeps, plain, search_path = _compose_sweep_parts(overrides, config_name, axes, config_dir)
    with ignored_keys_kept():  # (a key that acts at no point of the sweep: refused by plan_sweep, over its axes)
        obj = to_object(cfg)
    ident = OmegaConf.to_container(cfg, resolve=True)
    for section, keys in IDENTITY_EXCLUDED.items():
        target = ident if not section else ident[section]
        for k in keys:
            target.pop(k, None)
    if ident.get("bounds", False) is False:  # no bounds: the run id sweeps had before bounds existed
        ident.pop("bounds", None)
        ident.pop("bound_solver", None)
    if (ident.get("sharing", "bound"), ident.get("fairness", "flow"), ident.get("progression", "phase")) == (
            "bound", "flow", "phase"):  # the run id sweeps had before sharing existed
        for k in ("sharing", "fairness", "progression"):
            ident.pop(k, None)
    topo = ident.get("topology")
    lat = topo.get("latency") if isinstance(topo, dict) else None
    if isinstance(lat, dict) and all(v is None or v == {} for v in lat.values()):  # nothing set: as before
        topo.pop("latency")
    for (section, key), before in LATER_KEYS.items():
        node = ident.get(section)
        if isinstance(node, dict) and node.get(key, before) == before:
            node.pop(key, None)
    if _shipped_cost(ident.get("cost")):  # conf/cost/default.yaml as it is, no budget: the run id of before cost
        ident.pop("cost")
    if isinstance(ident.get("sweep"), dict) and "axes" in ident["sweep"]:
        ident["sweep"]["axes"] = _canonical_axes(ident["sweep"]["axes"])
    if user_overrides is None:
        user_overrides = [o for o in plain if not o.lstrip("+").startswith(("sweeps=", "ray.", "sweep."))]
    else:
        user_overrides = [o for o in user_overrides if o not in sweeps]
    return SweepRequest(
        config=obj,
        axes=OmegaConf.to_container(cfg.sweep.axes, resolve=True),
        identity_yaml=OmegaConf.to_yaml(OmegaConf.create(ident)),
        overrides=tuple(user_overrides),
        compose_overrides=tuple(composed),
        config_name=config_name,
        axes_override=axes,
        search_path=search_path,
    )
