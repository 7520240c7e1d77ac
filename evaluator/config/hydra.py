"""Everything that touches Hydra or OmegaConf: composition, typed conversion, sweep requests.

The rest of the package sees only the typed dataclasses (:class:`EvalConfig`
and the per-kind schemas of the families' registries) and plain Python
containers. Composition errors (unknown key, a key of another kind, a bad
type, an unknown group option) become one-line
:class:`~evaluator.errors.ConfigCompositionError`.

Sweeps also take Hydra's own sweep grammar for their axes
(:func:`sweep_axes_from_overrides`, parsed by Hydra's override parser):

==========================================  ===========================================
``routing=minimal,valiant``                 ``+sweep.axes.routing=[minimal,valiant]``
``traffic.beta='choice([8,8,4],[16,8,8])'``   ``+sweep.axes.traffic.beta=[[8,8,4],[16,8,8]]``
``placement.seed='range(0,100)'``           ``+sweep.axes.placement.seed={range:[0,100]}``
``placement.seed='range(0,100,4)'``         ``+sweep.axes.placement.seed={range:[0,100,4]}``
``x='range(0,1,0.25)'`` (not integers)      ``+sweep.axes.x=[0.0,0.25,0.5,0.75]``
``routing='glob(*)'`` (config groups only)  ``+sweep.axes.routing=[dor,dor_bgq,minimal,valiant]``
==========================================  ===========================================

Each form on the left is the axis on the right, with the same labels, run id
and dataset; an axis the sweep already has is replaced where it stands, a new
one comes after the sweep's own axes, in command-line order. ``sort(...)``
works as in Hydra; ``interval(...)`` (continuous), ``shuffle(...)`` (an order
that changes between runs), ``~key=...`` and ``group@package=...`` are refused
naming the override, and so are sweeps of run settings (``sweeps``, ``sweep.*``,
``ray.*``, ``output_dir``, ``save``).

Which study a sweep composes (:func:`compose_sweep`, docs/sweeps.md): ``sweeps=NAME`` is
``sweeps/NAME.yaml``, or ``DIR/NAME.yaml`` with ``config_dir`` (Hydra's ``--config-dir``; DIR joins the
search path, so a study may define config groups next to it); ``sweeps=PATH.yaml`` is that file
(:func:`study_overrides`). Without ``sweeps=``, a sweep has exactly the axes its overrides give, on
``conf/config.yaml`` (the clean base); only overrides that are all run settings run
:data:`DEFAULT_STUDY` (:func:`with_default_study`). A key set on the command line under a group that an
axis sweeps is set in every kind the axis chooses; when the default kind cannot take it, the base is
composed with the first point's kinds (the error, if any, names the kind the user swept).
"""

from __future__ import annotations

import copy
import dataclasses
import math
import re
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from ..errors import ConfigCompositionError, ConfigError, is_int
from ..io import conf_dir, repo_dir
from .keys import check_keys
from .schemas import FAMILIES, GROUPS, EvalConfig, SweepConfig

__all__ = ["register_schemas", "compose", "to_object", "compose_object", "to_yaml", "check_assignment",
           "SweepRequest", "compose_sweep", "compose_sweep_config", "sweep_axes_from_overrides", "AXIS_GENERATORS",
           "IDENTITY_EXCLUDED", "DEFAULT_STUDY", "with_default_study", "is_run_setting", "study_overrides"]


def _registry_signature() -> tuple:
    """What :func:`register_schemas` stores: ``(group, kind name, schema)`` of every registered kind, in order (a
    kind registered at run time changes it)."""
    return tuple((group, name, kind.schema) for group, kinds in FAMILIES.items() for name, kind in kinds.items())


_REGISTERED: dict[str, Any] = {"key": None, "nodes": ()}
"""What :func:`register_schemas` stored last: its key and the ConfigStore nodes it made."""


def register_schemas() -> None:
    """Store :class:`EvalConfig` and every registered kind's schema in Hydra's ConfigStore.

    The primary config uses ``eval_schema``; a group option ``conf/<group>/<kind>.yaml``
    starts its defaults list with ``<kind>_schema``. A kind without such a file is
    an option of its group all the same (``<group>=<kind>``: its schema's defaults),
    so a new member needs no YAML file; one is written only to document or to
    change defaults.

    The work is done once per process: again only when what it stores changes (a kind registered at run time,
    another ``conf/`` directory or a YAML file of a kind added or removed there) or when an entry it stored is no
    longer in the ConfigStore.
    """
    import os

    from hydra.core.config_store import ConfigStore

    cs = ConfigStore.instance()
    conf = conf_dir()
    files = []
    for group in FAMILIES:
        try:
            files.append((group, frozenset(n for n in os.listdir(conf / group) if n.endswith(".yaml")
                                           and (conf / group / n).is_file())))
        except OSError:
            files.append((group, frozenset()))
    key = (str(conf), id(cs), _registry_signature(), tuple(files))
    if key == _REGISTERED["key"] and all(_stored(cs.repo, group, name) is node
                                         for group, name, node in _REGISTERED["nodes"]):
        return
    has_file = dict(files)
    stored = []
    cs.store(name="eval_schema", node=EvalConfig)
    stored.append((None, "eval_schema", _stored(cs.repo, None, "eval_schema")))
    for group, kinds in FAMILIES.items():
        for name, kind in kinds.items():
            cs.store(group=group, name=f"{name}_schema", node=kind.schema)
            stored.append((group, f"{name}_schema", _stored(cs.repo, group, f"{name}_schema")))
            if f"{name}.yaml" not in has_file[group]:
                cs.store(group=group, name=name, node=kind.schema)
                stored.append((group, name, _stored(cs.repo, group, name)))
    kept = {(group, name) for group, name, _ in stored}
    for group, name, node in _REGISTERED["nodes"]:  # a kind no longer registered (or now with a file): gone
        if (group, name) not in kept and node is not None and _stored(cs.repo, group, name) is node:
            _stored_group(cs.repo, group).pop(f"{name}.yaml", None)
    _REGISTERED.update(key=key, nodes=tuple(stored))


def _stored_group(repo: dict, group: str | None) -> dict:
    """The ConfigStore's mapping of config group ``group`` (``{}``: none)."""
    node: Any = repo
    for part in (group.split("/") if group else []):
        node = node.get(part) if isinstance(node, dict) else None
    return node if isinstance(node, dict) else {}


def _stored(repo: dict, group: str | None, name: str) -> Any:
    """The ConfigStore node of ``group/name`` (``None``: none)."""
    return _stored_group(repo, group).get(f"{name}.yaml")


def group_options(group: str, search_path: Sequence[str] = ()) -> list[str]:
    """The options of config group ``group``: ``conf/<group>/*.yaml``, ``DIR/<group>/*.yaml`` of every
    search-path directory and the registered kinds without a file, in name order."""
    from pathlib import Path

    names = {p.stem for d in (conf_dir(), *map(Path, search_path)) for p in (d / group).glob("*.yaml")}
    names |= set(FAMILIES.get(group, {}).keys())
    return sorted(names)


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
    given = next((o.lstrip("+~") for o in overrides
                  if o.lstrip("+~").split("=", 1)[0] == full_key
                  or o.lstrip("+~").split("=", 1)[0].startswith(full_key + ".")), full_key)
    fields = [f.name for f in dataclasses.fields(kind.schema)]
    having = [k.name for k in kinds.values() if key in {f.name for f in dataclasses.fields(k.schema)}]
    text = (f"{given}: '{key}' is not a key of {group} kind '{kind.name}' (its keys: {', '.join(fields)})")
    if having:
        text += f"; '{key}' belongs to {group}=" + " | ".join(having)
    return text + "."


def _is_hydra(exc: BaseException) -> bool:
    return exc.__class__.__module__.startswith(("hydra", "omegaconf"))


def one_line(overrides: Sequence[str]) -> list[str]:
    """The overrides with every line break (and the indentation around it) made one space: a long override
    such as a ``jobs=[...]`` list pasted over several lines inside quotes (Hydra's lexer refuses line breaks;
    in a YAML flow value they are plain whitespace)."""
    return [re.sub(r"[ \t]*[\r\n]+[ \t]*", " ", o) if isinstance(o, str) else o for o in overrides]


_COMPOSED: OrderedDict[tuple, Any] = OrderedDict()
"""Composed configs by what composing them read (:func:`_compose_key`), least recently used first."""
_COMPOSED_MAX = 256
_FINGERPRINT_MAX_ENTRIES = 5000
"""Directory entries :func:`_config_files_digest` looks at before it gives up (no memo for that compose)."""
_RESOLVER = re.compile(r"\$\{[^}]*:")
"""An interpolation that calls a resolver (``${oc.env:HOME}``, ``${now:...}``): its value may change between two
compositions of the same files, so such a composition is not memoized."""
_DEFAULTS_ITEM = re.compile(rb"^[ \t]*-[ \t]*(?:(?:override|optional)[ \t]+)*/?([A-Za-z_][\w-]*)", re.M)
"""The first name of a list item (``- override /topology: bgq``): a config group that a defaults list may name."""


def _clear_compose_cache() -> None:
    """Forget every memoized composition (tests)."""
    _COMPOSED.clear()


def _scan(directory: str, subdirs: Any, out: list[str], budget: list[int]) -> bool:
    """Add to ``out`` the directory, its YAML files and, recursively, those of its subdirectories named in
    ``subdirs`` (``None``: all but hidden ones); ``False`` when more than ``budget[0]`` entries were seen."""
    import os

    stack = [(directory, subdirs)]
    while stack:
        d, only = stack.pop()
        try:
            with os.scandir(d) as it:
                entries = list(it)
        except OSError:  # no such directory (yet): its absence is in the digest
            continue
        out.append(d + os.sep)
        budget[0] -= len(entries)
        if budget[0] < 0:
            return False
        for e in entries:
            if e.name.startswith("."):
                continue
            try:
                is_dir = e.is_dir()
            except OSError:
                continue
            if is_dir:
                if only is None or e.name in only:
                    stack.append((e.path, None))
            elif e.name.endswith((".yaml", ".yml")):
                out.append(e.path)
    return True


def _config_files_digest(search_path: Sequence[str], overrides: Sequence[str]) -> str | None:
    """A digest of every YAML file (path and contents) and directory that composing may read: all of ``conf/``
    and of the ``search_path`` directories, and of the checkout (the last search-path entry) the top level and the
    config groups that ``conf/``, the search path, the overrides or a defaults list name (``sweeps/`` and
    ``conf/``'s groups among them). Contents, not modification times: a file rewritten within the clock's
    granularity is seen. ``None`` (compose without the memo): too many files, or an interpolation that calls a
    resolver."""
    import hashlib
    import os

    budget = [_FINGERPRINT_MAX_ENTRIES]
    roots = [os.path.normpath(str(d)) for d in (conf_dir(), *search_path)]
    pending: list[str] = []
    if not all(_scan(d, None, pending, budget) for d in roots):
        return None
    groups = {os.path.basename(p[:-1]) for p in pending if p.endswith(os.sep) and os.path.dirname(p[:-1]) in roots}
    groups |= {*GROUPS, "sweeps"}
    for o in overrides:
        groups.add(re.split(r"[/.@=]", o.lstrip("+~").strip(), maxsplit=1)[0])
    repo = os.path.normpath(str(repo_dir()))
    contents: dict[str, bytes] = {}
    scanned: set[str] = set()
    while True:
        for p in pending:
            if p in contents:
                continue
            if p.endswith(os.sep):
                contents[p] = b""
                continue
            try:
                with open(p, "rb") as f:
                    data = f.read()
            except OSError:
                data = b"\0unreadable"
            if _RESOLVER.search(data.decode("utf-8", "replace")):
                return None
            contents[p] = data
            groups |= {m.decode() for m in _DEFAULTS_ITEM.findall(data)}
        todo = groups - scanned - {""}
        if not todo:
            break
        scanned |= todo
        pending = []
        if not _scan(repo, todo, pending, budget):
            return None
    digest = hashlib.blake2b(digest_size=20)
    for p in sorted(contents):
        digest.update(p.encode("utf-8", "surrogateescape") + b"\0" + contents[p] + b"\0")
    return digest.hexdigest()


def _store_signature() -> tuple:
    """Every node of Hydra's ConfigStore by path and identity (anything stored there changes it), but Hydra's own
    ``hydra/`` group (Hydra adds to it at its first composition; it makes only the ``hydra`` node, which
    :func:`compose` does not return)."""
    from hydra.core.config_store import ConfigStore

    out: list[tuple[str, int]] = []
    stack: list[tuple[str, dict]] = [("", ConfigStore.instance().repo)]
    while stack:
        prefix, node = stack.pop()
        for name, child in node.items():
            if not prefix and name == "hydra":
                continue
            if isinstance(child, dict):
                stack.append((prefix + name + "/", child))
            else:
                _KEEP[id(child)] = child  # alive while its id is in a key: the id is not reused
                out.append((prefix + name, id(child)))
    return tuple(sorted(out))


_KEEP: dict[int, Any] = {}


def _compose_key(overrides: list, config_name: str, search_path: Sequence[str]) -> tuple | None:
    """What :func:`compose` reads: the overrides, the config name, the search path, ``conf/``, the ConfigStore
    and the contents of the files it may read (:func:`_config_files_digest`); ``None``: compose afresh."""
    import os

    if not all(isinstance(o, str) for o in overrides) or any(
            _RESOLVER.search(o) or _override_key(o).startswith("hydra") for o in overrides):
        return None  # a resolver's value, or Hydra's own settings (its search path): compose afresh
    dirs = tuple(str(d) for d in search_path)
    if any("://" in d for d in dirs):
        return None
    cwd = os.getcwd() if not all(os.path.isabs(d) for d in dirs) else ""
    digest = _config_files_digest([os.path.abspath(d) for d in dirs], overrides)
    if digest is None:
        return None
    return (tuple(overrides), config_name, dirs, cwd, str(conf_dir()), _store_signature(), digest)


def compose(overrides: Sequence[str], config_name: str = "config", search_path: Sequence[str] = ()):
    """Compose ``conf/<config_name>.yaml`` with Hydra overrides; return the (resolved) OmegaConf config.

    ``search_path``: more directories where Hydra looks for config groups (``DIR/routing/NAME.yaml``) and
    studies (``DIR/sweeps/NAME.yaml``), searched after ``conf/`` and before the checkout's ``sweeps/``, as
    Hydra's ``--config-dir`` (see :func:`study_overrides`). An override spread over several lines is taken as
    one line (:func:`one_line`).

    The same composition again (same overrides, config name, search path, ConfigStore and contents of every
    file it may read) is a copy of the last one's result (at most :data:`_COMPOSED_MAX` kept): the caller may
    change what it gets. Errors are raised afresh every time."""
    overrides = one_line(overrides)
    from hydra.core.global_hydra import GlobalHydra

    register_schemas()
    key = _compose_key(overrides, config_name, search_path)
    if key is not None and key in _COMPOSED:
        _COMPOSED.move_to_end(key)
        GlobalHydra.instance().clear()  # as a composition leaves it
        return copy.deepcopy(_COMPOSED[key])
    cfg = _compose(overrides, config_name, search_path)
    if key is not None and key == _compose_key(overrides, config_name, search_path):  # nothing changed meanwhile
        _COMPOSED[key] = copy.deepcopy(cfg)
        while len(_COMPOSED) > _COMPOSED_MAX:
            _COMPOSED.popitem(last=False)
    return cfg


def _compose(overrides: list, config_name: str, search_path: Sequence[str]):
    """:func:`compose` without the memo."""
    from hydra import compose as hcompose
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from omegaconf import OmegaConf

    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(conf_dir()), version_base="1.3"):
            dirs = [*(str(d) for d in search_path), str(repo_dir())]
            search = ["hydra.searchpath=[" + ",".join(f"'file://{d}'" for d in dirs) + "]"]
            cfg = hcompose(config_name=config_name, overrides=search + list(overrides))
        OmegaConf.resolve(cfg)
        return cfg
    except Exception as exc:  # hydra/omegaconf raise many types; report one line
        if _is_hydra(exc):
            message = _explain_foreign_key(_clean_hydra_message(exc), overrides)
            message = message.replace("add --multirun to your command line",
                                      "run `evaluator sweep` with it (a sweep override becomes a sweep axis)")
            for staged, real in _STAGED.items():
                message = message.replace(str(staged), str(real))
            raise ConfigCompositionError(message) from None
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
    check_keys(OmegaConf.to_container(cfg, resolve=False), obj)  # every other key, at every depth
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


def compose_object(overrides: Sequence[str], config_name: str = "config", axes: dict | None = None,
                   search_path: Sequence[str] = ()) -> EvalConfig:
    """:func:`compose` then :func:`to_object`; ``axes`` replaces ``sweep.axes`` first."""
    return to_object(_set_axes(compose(overrides, config_name, search_path), axes))


def check_assignment(cfg: EvalConfig, key: str, values: Sequence[Any]) -> None:
    """Check that the dotted ``key`` exists in ``cfg`` and accepts every value in ``values``.

    Raises :class:`ConfigError` naming the key (unknown axis) or the value
    that the key's schema type rejects.
    """
    from omegaconf import OmegaConf

    section = _structured_section(cfg, key)
    if section is not None and _first_refused(*section, values) is None:
        return  # every value fits its section; the whole config is converted only for the messages of a refusal
    node = OmegaConf.structured(cfg)
    refused = _first_refused(node, key, values)
    if refused is _MISSING_KEY:
        parts = key.split(".")
        typed = getattr(cfg, parts[0], None)
        if parts[0] in FAMILIES and len(parts) > 1 and dataclasses.is_dataclass(typed) \
                and parts[1] not in {f.name for f in dataclasses.fields(typed)}:
            # a key of another kind: name the kind this combination composed (the one the user chose or swept)
            raise ConfigError("sweep.axes", key, f"a key of the {parts[0]} kind the sweep composes",
                              _explain_foreign_key(f"Key '{parts[1]}' not in '{type(typed).__name__}' "
                                                   f"full_key: {parts[0]}.{parts[1]}", [key]))
        raise ConfigError("sweep.axes", key, "a key of the composed config",
                          f"Unknown axis. Top-level keys: {sorted(k for k in node.keys() if k != 'sweep')}")
    if refused is not None:
        value, exc = refused
        raise ConfigError(f"sweep.axes.{key}", value, "a value of the key's type",
                          str(exc).splitlines()[0]) from None


_MISSING_KEY = object()


def _first_refused(node: Any, key: str, values: Sequence[Any]) -> Any:
    """``(value, exception)`` of the first of ``values`` that the dotted ``key`` of the OmegaConf ``node``
    refuses, :data:`_MISSING_KEY` when ``node`` has no such key, ``None`` when it takes them all. ``node`` is
    not changed: an assignment reads and changes only the node that holds the key's last part, so the values
    are tried on copies of that node (a copy keeps its parent, hence its flags), not of the whole config."""
    from omegaconf import OmegaConf

    if OmegaConf.select(node, key, default="__missing__") == "__missing__":
        return _MISSING_KEY
    holder, last = _holder(node, key)
    for value in values:
        try:
            if holder is None:
                OmegaConf.update(copy.deepcopy(node), key, value, merge=False)
            else:
                OmegaConf.update(copy.deepcopy(holder), last, value, merge=False)
        except Exception as exc:
            return value, exc
    return None


def _structured_section(cfg: Any, key: str) -> tuple[Any, str] | None:
    """``(OmegaConf node, key within it)``: the section of the typed config ``cfg`` that the dotted ``key`` lies
    in (``placement`` for ``placement.seed``), where it is a schema dataclass; ``None`` otherwise. Converting
    one section is a few times cheaper than converting the whole config (sweep axes and run settings included);
    a value it takes, the whole config takes (tests/test_config_memo.py compares the two)."""
    from omegaconf import OmegaConf

    head, dot, rest = key.partition(".")
    if not (dot and rest and dataclasses.is_dataclass(cfg) and not isinstance(cfg, type)
            and head in {f.name for f in dataclasses.fields(cfg)}):
        return None
    section = getattr(cfg, head)
    if not dataclasses.is_dataclass(section) or isinstance(section, type):
        return None
    return OmegaConf.structured(section), rest


def _holder(node, key: str) -> tuple[Any, str]:
    """``(container, last part)``: the node of ``node`` that holds the dotted ``key``'s last part, reached as
    :func:`omegaconf.OmegaConf.update` reaches it; ``(None, key)`` when the path passes through something that is
    not a config node (then the whole config is probed)."""
    from omegaconf import Container
    from omegaconf._utils import split_key
    from omegaconf.omegaconf import _select_one

    parts = split_key(key)
    holder = node
    for part in parts[:-1]:
        try:
            child, k = _select_one(holder, part, throw_on_missing=False)
        except Exception:
            return None, key
        if not isinstance(child, Container) or not isinstance(holder[k], Container):
            return None, key
        holder = holder[k]
    return holder, parts[-1]


# --------------------------------------------------------------------------------------
# Hydra's sweep grammar -> sweep axes
# --------------------------------------------------------------------------------------

AXIS_GENERATORS = ("divisors", "factorizations", "range", "zip", "product")
"""Keys that make a mapping in ``sweep.axes`` a generator (see :mod:`evaluator.sweep.axes`), not nested keys."""

_RUN_SETTINGS = ("sweeps", "sweep", "ray", "output_dir", "save", "hydra")
_DISCRETE = ("a discrete sweep: values a,b,c, choice(a,b,...), range(start, stop[, step]) or, for a config "
             "group, glob(pattern)")


def _refuse(text: str, key: str, allowed: str, why: str) -> ConfigError:
    rhs = text.split("=", 1)[1] if "=" in text else text
    return ConfigError(key, rhs, allowed, f"{why} (the sweep override {text!r})")


def _is_whole(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _range_spec(text: str, key: str, sweep: Any, max_points: int | None) -> Any:
    """A Hydra ``range(...)``: integers -> the ``range`` generator; other numbers -> their values, listed."""
    start, stop, step = sweep.start, sweep.stop, sweep.step
    allowed = "range(start, stop[, step]) with a non-zero step and at least one value (stop excluded)"
    if step == 0:
        raise _refuse(text, key, allowed, "The step is 0.")
    if all(_is_whole(x) for x in (start, stop, step)):
        if len(range(start, stop, step)) == 0:
            raise _refuse(text, key, allowed, f"range({start}, {stop}, {step}) is empty.")
        return {"range": [start, stop] if step == 1 else [start, stop, step]}
    count = max(0, math.ceil((stop - start) / step))
    if count == 0:
        raise _refuse(text, key, allowed, f"range({start}, {stop}, {step}) is empty.")
    limit = max_points if max_points is not None else 10**7
    if count > limit:
        raise _refuse(text, key, f"a range of at most {limit:,} values (sweep.max_points)",
                      f"It has {count:,} values.")
    return list(sweep.range())  # Hydra's own float stepping: start + i * step


def _glob_spec(text: str, key: str, glob: Any, search_path: Sequence[str] = ()) -> list[str]:
    """``glob(...)`` over the options of a config group (``conf/<group>/*.yaml`` and ``DIR/<group>/*.yaml`` of
    every search-path directory), in name order."""
    if key not in GROUPS:
        raise _refuse(text, key, f"glob() over the options of a config group: {', '.join(GROUPS)}",
                      f"'{key}' is not a config group; list its values with choice(...) or a,b,c.")
    names = group_options(key, search_path)
    chosen = glob.filter(names)
    if not chosen:
        raise _refuse(text, key, f"a glob matching options of {key}: {', '.join(names)}", "It matches none.")
    return chosen


def _axis_spec(text: str, ov: Any, max_points: int | None, search_path: Sequence[str] = ()) -> tuple[str, Any]:
    """``(key, sweep.axes spec)`` of one parsed Hydra sweep override."""
    from hydra.core.override_parser.types import ChoiceSweep, Glob, IntervalSweep, OverrideType, RangeSweep

    key = ov.key_or_group
    value = ov.value()
    if ov.type == OverrideType.DEL:
        raise _refuse(text, key, _DISCRETE, "'~' deletes a key; a deleted key cannot be swept.")
    if ov.package is not None:
        raise _refuse(text, key, _DISCRETE + " on a plain key or group",
                      f"'{key}@{ov.package}' moves a group to another package; sweep the group without '@'.")
    if key.split(".")[0] in _RUN_SETTINGS:
        raise _refuse(text, key, "a sweep over design keys (topology.*, routing, traffic.*, placement.*, ...)",
                      f"'{key}' is a run setting, not a design axis: run one study per command.")
    if isinstance(value, IntervalSweep):
        raise _refuse(text, key, _DISCRETE,
                      "interval() is a continuous range for optimizing sweepers (Optuna, Nevergrad); a grid needs "
                      "discrete values: use range(start, stop, step) or choice(...).")
    if getattr(value, "shuffle", False):
        raise _refuse(text, key, _DISCRETE + " in a fixed order",
                      "shuffle() gives another order on every run, so a rerun would not resume; drop shuffle().")
    if isinstance(value, Glob):
        return key, _glob_spec(text, key, value, search_path)
    if isinstance(value, RangeSweep):
        return key, _range_spec(text, key, value, max_points)
    if isinstance(value, ChoiceSweep):
        values = list(ov.sweep_iterator())
        if not values:
            raise _refuse(text, key, _DISCRETE, "The sweep has no values.")
        return key, values
    raise _refuse(text, key, _DISCRETE, f"{type(value).__name__} sweeps are not supported.")  # pragma: no cover


def _place_axis(axes: dict, parts: list[str], spec: Any) -> None:
    """Put one axis into a ``sweep.axes`` mapping as ``+sweep.axes.<key>=<spec>`` would: an axis already on the
    key is replaced where it stands (a dotted key or nested mappings); a new key nests under the mappings it
    names, after the axes already there."""
    joined = ".".join(parts)
    if joined in axes:
        axes[joined] = spec
        return
    for i in range(len(parts) - 1, 0, -1):
        head = ".".join(parts[:i])
        if head in axes:
            sub = axes[head]
            if isinstance(sub, dict) and not any(g in sub for g in AXIS_GENERATORS):
                _place_axis(sub, parts[i:], spec)
            else:  # an axis on the whole of `head`: keep both, the axis grammar names the overlap
                axes[joined] = spec
            return
    node = axes
    for part in parts[:-1]:
        node = node.setdefault(part, {})
    node[parts[-1]] = spec


def _split_sweeps(overrides: Sequence[str]) -> tuple[list[str], list[tuple[str, Any]]]:
    """``(plain overrides, [(text, parsed override)] of the sweeps)``; overrides that Hydra's parser does not read
    count as plain (composition names them)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parser = OverridesParser.create()
    plain: list[str] = []
    sweeps: list[tuple[str, Any]] = []
    for text in overrides:
        try:
            ov = parser.parse_override(text)
        except Exception:  # a syntax error: composition reports it
            plain.append(text)
            continue
        if ov.is_sweep_override():
            sweeps.append((text, ov))
        else:
            plain.append(text)
    return plain, sweeps


def _merge_sweeps(sweeps: list[tuple[str, Any]], axes: dict | None, max_points: int | None,
                  search_path: Sequence[str] = ()) -> dict | None:
    if not sweeps:
        return axes
    merged = copy.deepcopy(axes) if axes is not None else {}
    for text, ov in sweeps:
        key, spec = _axis_spec(text, ov, max_points, search_path)
        _place_axis(merged, key.split("."), spec)
    return merged


def sweep_axes_from_overrides(overrides: Sequence[str], axes: dict | None, max_points: int | None = None,
                              search_path: Sequence[str] = ()) -> tuple[list[str], dict | None, list[str]]:
    """Take Hydra's sweep overrides out of ``overrides`` and make each an axis (see the module docstring).

    Returns ``(plain overrides, axes, sweep overrides)``: the overrides that are not sweeps, in order; ``axes``
    (a ``sweep.axes`` mapping, not changed in place) with one axis per sweep override; and the sweep
    overrides themselves. Overrides that Hydra's parser does not read are left to composition, which names
    them. Unsupported sweeps raise :class:`~evaluator.errors.ConfigError` naming the override; a range of
    numbers that are not all integers is listed, and refused past ``max_points`` values.
    """
    plain, sweeps = _split_sweeps(overrides)
    return plain, _merge_sweeps(sweeps, axes, max_points, search_path), [text for text, _ in sweeps]


def _canonical_range(arg: Any) -> Any:
    """``range`` arguments of integers as ``[start, stop]`` (step 1) or ``[start, stop, step]``; others as given."""
    if isinstance(arg, dict) and "stop" in arg and set(arg) <= {"start", "stop", "step"}:
        bounds = [arg.get("start", 0), arg["stop"], arg.get("step", 1)]
    elif isinstance(arg, list) and 1 <= len(arg) <= 3:
        bounds = ([0] if len(arg) == 1 else []) + list(arg) + ([1] if len(arg) < 3 else [])
    else:
        return arg
    if not all(_is_whole(x) for x in bounds):
        return arg
    return bounds[:2] if bounds[2] == 1 else bounds


def _canonical_axes(spec: Any) -> Any:
    """``sweep.axes`` with every integer ``range`` written one way, so that ``{range: [0, 8]}``,
    ``{range: [0, 8, 1]}``, ``{range: {stop: 8}}`` and ``range(0,8)`` are one sweep (one run id)."""
    if isinstance(spec, dict):
        out = {k: _canonical_axes(v) for k, v in spec.items()}
        if "range" in out and len(out) == 1:
            out["range"] = _canonical_range(spec["range"])
        return out
    return spec


def _shipped_cost(cost: Any) -> bool:
    """Whether a sweep's ``cost`` group is the price table of ``conf/cost/default.yaml`` without a budget: then it is
    left out of the sweep's identity (it changes no metric and no point's feasibility, and runs keep the ids they
    had before the cost model; docs/cost.md says what that means for an edited default file)."""
    from ..cost import prices_from

    if not isinstance(cost, dict) or cost.get("budget") is not None:
        return False
    try:
        return prices_from(cost) == prices_from(None)
    except ConfigError:
        return False


IDENTITY_EXCLUDED = {"": ("ray", "output_dir", "save"), "sweep": ("output_dir", "run_id")}
"""Settings that say where and how a sweep runs, not what it computes: left out of its identity."""


# --------------------------------------------------------------------------------------
# Which study: sweeps=NAME, a study file anywhere (--config-dir, a path), the default study
# --------------------------------------------------------------------------------------

DEFAULT_STUDY = "dragonfly_nne_placement"
"""The study a bare ``evaluator sweep`` runs (no overrides, or run settings only): the README's main job."""

_RUN_SETTING_HEADS = ("ray", "output_dir", "save", "hydra")

_STAGED: dict[Any, Any] = {}
"""Staged copy of a study file (``<tmp>/sweeps/<name>.yaml``) -> the user's file (named in error messages)."""


def _override_key(text: str) -> str:
    return text.split("=", 1)[0].lstrip("+~")


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
    """Compose a sweep config with Hydra's sweep overrides among ``overrides`` made axes (see the module
    docstring); ``axes`` replaces ``sweep.axes`` first; ``config_dir`` is Hydra's ``--config-dir``
    (:func:`study_overrides`). With ``config_name`` ``"sweep"`` and no ``sweeps=``, the clean-base rule
    holds (:func:`with_default_study`).

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
