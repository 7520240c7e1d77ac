"""Composing configs with Hydra: the one concern of this module is turning overrides into a config.

* schema registration in Hydra's ConfigStore (:func:`register_schemas`) and a config group's options
  (:func:`group_options`);
* composition (:func:`compose`), with its memo: a composition keyed by what it reads (:func:`_compose_key`:
  the overrides, the ConfigStore, a digest of every config file it may read), at most :data:`_COMPOSED_MAX`
  kept, and across processes on disk (:mod:`.disk_memo`);
* typed conversion and text (:func:`to_object`, :func:`compose_object`, :func:`to_yaml`);
* Hydra/OmegaConf errors made one line (:class:`~evaluator.errors.ConfigCompositionError`) and overrides made
  one line (:func:`one_line`).

The sweep grammar is :mod:`evaluator.config.hydra.grammar`; which study a sweep composes, and composed sweeps,
:mod:`evaluator.config.hydra.studies`.
"""

from __future__ import annotations

import copy
import dataclasses
import re
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from ...errors import ConfigCompositionError, ConfigError
from ...io import conf_dir, repo_dir
from ..keys import check_keys
from ..schemas import FAMILIES, GROUPS, EvalConfig
from . import disk_memo

__all__ = ["register_schemas", "group_options", "compose", "one_line", "to_object", "compose_object", "to_yaml"]


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


_NOT_CONVERTED = re.compile(r"Value '(.*?)' of type '\w+' could not be converted to (\w+)\s+full_key: ([\w.\[\]]+)")
_TYPE_WORDS = {"Integer": "an integer", "Float": "a number", "Boolean": "true or false", "String": "text"}
_UNRESOLVED = re.compile(r"while resolving interpolation: \"?(.*?)\"?(?: full_key: [\w.\[\]]+)?$")


_MAPPING_HINT = (" A mapping is a sweep generator only under sweep.axes (evaluator sweep '+sweep.axes.{key}={{range:"
                 "[0,8]}}'; generators: divisors, factorizations, range, and zip and product as axes of their own); "
                 "in an override, Hydra's grammar: {key}='range(0,8)' or {key}=1,2,4 (docs/sweeps.md).")
"""Added to the refusal of a mapping given to a key that takes a value (``traffic.n_tasks={range:[0,8]}``)."""


def _explain_value(message: str, overrides: Sequence[str]) -> str:
    """OmegaConf's refusal of a value in the project's words: ``topology.p = 'abc' is invalid: allowed is an
    integer`` (it said "Error merging override ... could not be converted to Integer full_key: ..."), and an
    interpolation it could not resolve (``${oc.env:NOPE}``) with the override that holds it."""
    m = _NOT_CONVERTED.search(message)
    if m:
        value, kind, key = m.groups()
        text = f"{key} = {value!r} is invalid: allowed is {_TYPE_WORDS.get(kind, kind)} (the key's type)."
        return text + (_MAPPING_HINT.format(key=key) if value.startswith("{") else "")
    m = _UNRESOLVED.search(message)
    if m:
        holders = [o for o in overrides if "${" in str(o)]
        where = f" in {holders[0]!r}" if holders else ""
        return (f"an interpolation{where} could not be resolved: {m.group(1)}. Set what it reads (an environment "
                f"variable for oc.env) or give the value itself.")
    return message


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


_PARSERS = ("hydra", "omegaconf", "yaml")


def _raised_in_parser(exc: BaseException) -> bool:
    """Whether ``exc`` is YAML's, or Python's own error raised inside Hydra, OmegaConf or YAML: ``topology=5``
    (a group's value that is no name), ``topology.dims.a=2`` (a key into a list), ``jobs.0=5`` or a study file
    that is not valid YAML raised ValueError, AssertionError, TypeError or YAML's ParserError, which the command
    line reported as internal errors."""
    if exc.__class__.__module__.startswith("yaml"):
        return True
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return tb is not None and str(tb.tb_frame.f_globals.get("__name__", "")).startswith(_PARSERS)


_GROUP_VALUE = "Config group override must be a string"


def _foreign_message(exc: BaseException, overrides: Sequence[str], config_name: str, search_path) -> str:
    """One line for :func:`_raised_in_parser`'s errors: the file of a YAML error, else the override that causes
    it (the one whose removal lets the rest compose, tried one by one: this path only)."""
    text = " ".join(ln.strip() for ln in str(exc).splitlines() if ln.strip())
    if exc.__class__.__module__.startswith("yaml"):
        mark = getattr(exc, "problem_mark", None)
        staged = {str(k): str(v) for k, v in _STAGED.items()}
        where = (f"{staged.get(str(mark.name), mark.name)} is not valid YAML at line {mark.line + 1}, column "
                 f"{mark.column + 1}") if mark is not None else "a config file is not valid YAML"
        return f"{where}: {getattr(exc, 'problem', None) or text}"
    given = [o for o in overrides if isinstance(o, str)]
    culprit = None
    if len(given) <= 16:
        for o in given:
            try:
                _compose([x for x in overrides if x is not o], config_name, search_path, explain=False)
            except Exception:  # noqa: BLE001 (another error or the same: not this one alone)
                continue
            culprit = o
            break
    if culprit is None:
        return f"the overrides could not be applied: {text} (check the keys and values of: {' '.join(given)})"
    key, _, value = culprit.partition("=")
    key = key.lstrip("+~")
    if _GROUP_VALUE in text:
        options = sorted(p.stem for p in (conf_dir() / key).glob("*.yaml") if not p.stem.endswith("_schema"))
        return (f"{key} = {value!r} is invalid: allowed is the name of one of the group's options"
                + (f": {', '.join(options)}" if options else ""))
    return (f"{culprit!r} could not be applied: {text} (a list's items are named by index, "
            f"0, 1, ..., not by name or key; a list, or a mapping that is not there yet, is given whole: "
            f"{key.rsplit('.', 1)[0]}=[...] or {{...}})")


def one_line(overrides: Sequence[str]) -> list[str]:
    """The overrides with every line break (and the indentation around it) made one space: a long override
    such as a ``jobs=[...]`` list pasted over several lines inside quotes (Hydra's lexer refuses line breaks;
    in a YAML flow value they are plain whitespace)."""
    return [re.sub(r"[ \t]*[\r\n]+[ \t]*", " ", o) if isinstance(o, str) else o for o in overrides]



def _override_key(text: str) -> str:
    return text.split("=", 1)[0].lstrip("+~")


_STAGED: dict[Any, Any] = {}
"""Staged copy of a study file (``<tmp>/sweeps/<name>.yaml``) -> the user's file (named in error messages; filled
by :func:`evaluator.config.hydra.studies._stage`)."""


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
    Hydra's ``--config-dir`` (see :func:`~evaluator.config.hydra.studies.study_overrides`). An override spread
    over several lines is taken as one line (:func:`one_line`).

    The same composition again (same overrides, config name, search path, ConfigStore and contents of every
    file it may read) is a copy of the last one's result (at most :data:`_COMPOSED_MAX` kept): the caller may
    change what it gets; a new process reads it from disk where an earlier one stored it (:mod:`.disk_memo`).
    Errors are raised afresh every time."""
    overrides = one_line(overrides)
    _refuse_hydra_settings(overrides)
    _refuse_shuffle(overrides)
    from hydra.core.global_hydra import GlobalHydra

    register_schemas()
    key = _compose_key(overrides, config_name, search_path)
    if key is not None and key in _COMPOSED:
        _COMPOSED.move_to_end(key)
        GlobalHydra.instance().clear()  # as a composition leaves it
        return copy.deepcopy(_COMPOSED[key])
    disk = disk_memo.disk_key(key) if key is not None and _store_is_ours(key[5]) else None
    cfg = None if disk is None else disk_memo.load(disk)
    fresh = cfg is None
    if fresh:
        cfg = _compose(overrides, config_name, search_path)
    else:
        GlobalHydra.instance().clear()  # as a composition leaves it
    if key is not None and key == _compose_key(overrides, config_name, search_path):  # nothing changed meanwhile
        _COMPOSED[key] = copy.deepcopy(cfg)
        while len(_COMPOSED) > _COMPOSED_MAX:
            _COMPOSED.popitem(last=False)
        if disk is not None and fresh:
            disk_memo.save(disk, cfg)
    return cfg


def _refuse_hydra_settings(overrides: Sequence[str]) -> None:
    """Refuse an override of Hydra's own settings (``hydra.run.dir=x``, ``hydra.job.chdir=true``,
    ``hydra/launcher=...``): the config is composed with Hydra's compose API, which runs no Hydra job, so none of
    them is read (they were accepted and changed nothing; ``hydra.searchpath`` is the composition's own)."""
    for o in overrides:
        key = _override_key(o) if isinstance(o, str) else ""
        if re.split(r"[./@]", key, maxsplit=1)[0] == "hydra":
            raise ConfigError(key, o.partition("=")[2] if "=" in o else None,
                              "a key of the evaluator's config (topology.*, routing.*, traffic.*, placement.*, "
                              "output_dir, ...): Hydra's own settings (hydra.*) are not read, since the evaluator "
                              "composes its config without running a Hydra job",
                              f"Drop {o!r}; where a result goes is output_dir=DIR (eval) or sweep.output_dir=DIR "
                              f"(sweep), and more config directories are evaluator sweep --config-dir DIR.")


def _refuse_shuffle(overrides: Sequence[str]) -> None:
    """Refuse a value written with Hydra's ``shuffle(...)``: of a list (``topology.dims='shuffle([4,2,3])'``) it
    is that list in another random order on every composition, so another network and run id on every run (and
    the first order drawn frozen in the composition memo); of one value the list of it. Until 2026-12-07 both
    were composed (sweeps refused only ``shuffle(a,b)``)."""
    for o in overrides:
        if isinstance(o, str) and "=" in o and re.match(r"\s*shuffle\s*\(", o.split("=", 1)[1]):
            raise ConfigError(_override_key(o), o.split("=", 1)[1], "a value in a fixed order",
                              f"shuffle() gives another order on every run, so the same command would not compute "
                              f"the same thing twice; drop shuffle() from {o!r}.")


_HYDRA_OWN = frozenset({"_dummy_empty_config_.yaml"})
"""ConfigStore entries Hydra stores itself (outside its ``hydra/`` group)."""


def _store_is_ours(signature: tuple) -> bool:
    """Whether Hydra's ConfigStore (its :func:`_store_signature`, as the memo key holds it) holds only what
    :func:`register_schemas` stored, every schema a class of this package (so that the package's source hash
    covers it: :mod:`.disk_memo`)."""
    ours = {id(node) for _, _, node in _REGISTERED["nodes"] if node is not None}
    return (all(i in ours or path in _HYDRA_OWN for path, i in signature)
            and all(str(getattr(k.schema, "__module__", "")).split(".")[0] == "evaluator"
                    for kinds in FAMILIES.values() for k in kinds.values()))


def _unparsable(overrides: Sequence) -> tuple[str, str] | None:
    """``(override, Hydra's reason)`` of the first override that Hydra's override grammar cannot read, or None.

    Hydra's parse error names neither the override nor its key (``routing=dor,``, a one-value axis written with a
    trailing comma, gave only "mismatched input '<EOF>' expecting {...}")."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parser = OverridesParser.create()
    for text in overrides:
        if not isinstance(text, str):
            continue
        try:
            parser.parse_override(text)
        except Exception as exc:  # noqa: BLE001 - Hydra's grammar errors have several types
            return text, " ".join(str(exc).split())
    return None


def _unparsable_message(text: str, reason: str) -> str:
    """One line naming the override Hydra's grammar cannot read, its value and what is allowed."""
    key, eq, value = text.partition("=")
    key = key.lstrip("+~") if eq else text
    reason = reason.split(" See https://hydra.cc")[0]
    hint = ""
    if value.rstrip().endswith(",") or value.lstrip().startswith(","):
        hint = (f" A list of sweep values has no empty item: {key}=a,b sweeps two or more values; an axis of one value "
                f"is '+sweep.axes.{key}=[a]' (evaluator sweep), one value alone is {key}=a.")
    elif not eq:
        return (f"override {text!r} is invalid: allowed is KEY=VALUE (or group=option), +KEY=VALUE to add a key, "
                f"~KEY to delete one; Hydra's override grammar does not read it: {reason}.")
    return (f"{key} = {value!r} is invalid: allowed is a value Hydra's override grammar reads (a number, text, "
            f"[a,b] for a list, a,b for sweep values; docs/sweeps.md); the override {text!r} is not read: "
            f"{reason}.{hint}")


def _compose(overrides: list, config_name: str, search_path: Sequence[str], explain: bool = True):
    """:func:`compose` without the memo (``explain`` False: errors as Hydra raises them, for
    :func:`_foreign_message`'s trials)."""
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
        if not explain:
            raise
        if not _is_hydra(exc) and _raised_in_parser(exc):  # (Python's own errors raised inside Hydra or YAML)
            raise ConfigCompositionError(_foreign_message(exc, overrides, config_name, search_path)) from None
        if _is_hydra(exc) and (unreadable := _unparsable(overrides)) is not None:
            raise ConfigCompositionError(_unparsable_message(*unreadable)) from None
        if _is_hydra(exc):
            message = _explain_value(_explain_foreign_key(_clean_hydra_message(exc), overrides), overrides)
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
        _check_kind(group, typed)
    check_keys(OmegaConf.to_container(cfg, resolve=False), obj)  # every other key, at every depth
    from ..build import check_settings

    check_settings(obj)  # values that act only beside others (a background at fraction 0)
    return obj


def kind_key_hint(group: str, axis: bool = False) -> str:
    """How a kind is chosen, for the refusals of ``GROUP.kind`` set as a key (``axis``: as a sweep axis)."""
    why = ("A kind is chosen with its config group, not its 'kind' key (which would keep one kind's keys under "
           "another's name)")
    if axis:
        return why + "."
    return (f"{why}: write {group}=NAME, then {group}.KEY=VALUE for its keys; to sweep kinds, {group}=a,b or "
            f"+sweep.axes.{group}=[a,b].")


def _check_kind(group: str, typed: Any) -> None:
    """Refuse a section whose ``kind`` was set to another kind than its schema's (``placement.kind=random`` on
    the command line kept the default placement's schema: its builder then failed on a missing key)."""
    kind = getattr(typed, "kind", None)
    own = next((name for name, k in FAMILIES[group].items() if k.schema is type(typed)), None)
    if own is not None and kind != own:
        raise ConfigError(f"{group}.kind", kind, f"'{own}', the kind of the {group} group chosen ({group}={own})",
                          kind_key_hint(group))


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

