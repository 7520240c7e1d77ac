"""Machine catalogue: named machines, one YAML file each, of a registered family of kinds.

A machine file's ``kind`` picks its member (one private module each, one registry line in :data:`KINDS`):

* ``bgq`` (:mod:`._bgq`): a Blue Gene/Q system described in midplanes; each partition is its own torus;
* ``torus`` (:mod:`._torus`): a torus of routers whose jobs are sub-prisms routed over the host torus (the Cray
  Gemini torus of Blue Waters and Titan), with what each router's nodes are (service, down, node classes);
* ``topology`` (:mod:`._topology`): any registered topology kind's config (a Dragonfly, later a fat tree):
  a new network is one YAML file.

Each member's schema is a typed dataclass (see its module for the keys), checked key by key
(:func:`~evaluator.machines.base.machine_config`); the contract generic code uses is in
:mod:`evaluator.machines.base`. The built-in catalogue lives in ``conf/machine/*.yaml`` at the repository root.
A user adds a machine by dropping one YAML file either there or in a directory listed in the environment
variable ``EVALUATOR_MACHINE_PATH`` (several directories separated by ``os.pathsep``); directories of that
variable are searched first, so a user file overrides a built-in machine of the same name.

The package also says what a machine allows: :func:`check_partition` validates a partition shape (length,
fit, allowed list) without importing the partition analysis (:mod:`evaluator.partitions`), so the topology
layer can use it. Every error is of the package's one family (:mod:`evaluator.errors`): :class:`MachineError`,
:class:`UnknownMachineError` and :class:`~evaluator.errors.PartitionError`.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .._registry import Registry
from ..errors import ConfigTypeError, MachineError, PartitionError, UnknownMachineError
from ..io import conf_dir, read_yaml
from . import _bgq, _topology, _torus
from ._bgq import BGQ_MIDPLANE_NODE_DIMS, BgqMachine, BgqMachineConfig
from ._topology import TopologyMachine, TopologyMachineConfig
from ._torus import FeatureConfig, NodeClassConfig, RouterTorusMachine, TorusMachineConfig
from .base import (DOWN, NON_COMPUTE_CLASSES, SERVICE, Machine, MachineKind, MachineNetwork, NodeLayout,
                   PartitionTorus, Region, TorusMachine, machine_config, member_kinds)
from .base import key_of as _key
from .base import warn_magnitudes

__all__ = [
    "Machine",
    "TorusMachine",
    "BgqMachine",
    "RouterTorusMachine",
    "TopologyMachine",
    "BgqMachineConfig",
    "TorusMachineConfig",
    "TopologyMachineConfig",
    "NodeClassConfig",
    "FeatureConfig",
    "MachineKind",
    "MachineNetwork",
    "NodeLayout",
    "PartitionTorus",
    "KINDS",
    "MachineError",
    "UnknownMachineError",
    "PartitionError",
    "MACHINE_PATH_ENV",
    "MACHINE_KEYS",
    "BGQ_MIDPLANE_NODE_DIMS",
    "builtin_machine_dir",
    "machine_search_path",
    "machine_files",
    "list_machines",
    "load_machine",
    "MachineOverrideWarning",
    "machine_from_dict",
    "check_partition",
    "torus_kinds",
    "Region",
    "SERVICE",
    "DOWN",
    "NON_COMPUTE_CLASSES",
]

KINDS: Registry[MachineKind] = Registry("machine", [
    _bgq.BGQ,
    _torus.TORUS,
    _topology.TOPOLOGY,
])
"""Machine kinds by the ``kind`` of a machine file."""

MACHINE_PATH_ENV = "EVALUATOR_MACHINE_PATH"
"""Environment variable with extra machine directories (``os.pathsep``-separated)."""

MACHINE_KEYS = tuple(dict.fromkeys(f.name for k in KINDS.values() for f in dataclasses.fields(k.schema)))
"""Every key of a machine file, of any kind (each kind's own keys: its schema's fields)."""

ROUTING_ORDERS = ("longest_first", "as_given")
"""Dimension orders of a torus machine's routing (``routing_order``)."""


def torus_kinds() -> list[str]:
    """Machine kinds whose machines are tori allocated in cuboid partitions (what tiles and partitions accept)."""
    return member_kinds(TorusMachine)


def machine_from_dict(data: Mapping[str, Any], source: str = "<dict>") -> Machine:
    """Build and validate a :class:`Machine` from a plain mapping (one YAML file).

    Parameters
    ----------
    data
        Mapping with ``name``, ``kind`` and the keys of that kind's schema (see the member modules); missing
        optional keys take their defaults, ``null`` too. An OmegaConf node should be converted with
        ``OmegaConf.to_container(cfg, resolve=True)`` first.
    source
        Where the mapping came from, used in messages and kept on the result.

    Raises
    ------
    MachineError
        With the machine name, the file, the field, the value and the allowed values.
    """
    cfg = machine_config(data, source, KINDS)
    return KINDS[cfg.kind].build(cfg, source)


# --------------------------------------------------------------------------------------
# catalogue
# --------------------------------------------------------------------------------------


def builtin_machine_dir() -> Path:
    """Directory of the built-in catalogue, ``conf/machine`` (see :func:`evaluator.io.conf_dir`)."""
    return conf_dir() / "machine"


def machine_search_path() -> list[Path]:
    """Directories searched for machine YAML files, first match wins.

    The directories of ``$EVALUATOR_MACHINE_PATH`` (in order), then
    :func:`builtin_machine_dir`.
    """
    dirs = [Path(p).expanduser() for p in os.environ.get(MACHINE_PATH_ENV, "").split(os.pathsep) if p]
    dirs.append(builtin_machine_dir())
    return dirs


def machine_files() -> list[Path]:
    """Every ``*.yaml`` / ``*.yml`` file on the search path, in search order."""
    files: list[Path] = []
    for d in machine_search_path():
        if d.is_dir():
            files.extend(sorted(p for p in d.iterdir() if p.suffix in (".yaml", ".yml") and p.is_file()))
    return files


def _read_yaml(path: Path) -> Machine:
    import yaml

    try:
        with open(path, encoding="utf-8") as fh:
            data = read_yaml(fh)
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        at = f" at line {where.line + 1}, column {where.column + 1}" if where is not None else ""
        what = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise MachineError(f"{path}: not valid YAML{at}: {what}", "machine file", str(path),
                           "a YAML mapping of machine keys") from None
    return machine_from_dict(data if data is not None else {}, source=str(path))


def _defined_before(files: list[Path], path: Path, key: str) -> bool:
    """Whether a loadable file of a directory searched before ``path``'s own defines the machine ``key``."""
    dirs = [p.parent for p in files]
    for other in files[:dirs.index(path.parent)]:
        try:
            if _read_yaml(other).key == key:
                return True
        except MachineError:  # (a broken file of another machine does not hide the one asked for)
            continue
    return False


def _catalogue(problems: dict[str, str] | None = None) -> dict[str, Machine]:
    """All machines by key; earlier directories override later ones. ``problems`` (a dict): a file that does not
    load (by its path), or a name defined twice in one directory (by the machine's key), is noted there and left
    out instead of raised (a broken file of another machine no longer hides the one asked for)."""
    found: dict[str, Machine] = {}
    for path in machine_files():
        try:
            m = _read_yaml(path)
        except MachineError as exc:
            if problems is None:
                raise
            problems[str(path)] = f"{path}: {exc}"
            continue
        if m.key in found:
            if Path(found[m.key].source).parent == path.parent:
                msg = (f"machine name {m.name!r} is defined twice in {path.parent}: "
                       f"{Path(found[m.key].source).name} and {path.name}")
                if problems is None:
                    raise MachineError(msg)
                problems[m.key] = msg
            continue  # overridden by an earlier directory of the search path
        found[m.key] = m
    return found


def list_machines() -> list[str]:
    """Names of every machine on the search path, sorted case-insensitively."""
    return sorted((m.name for m in _catalogue().values()), key=str.lower)


def load_machine(name: str | os.PathLike[str] | Machine) -> Machine:
    """Load a machine by name (case-insensitive) or from a YAML file path (:func:`_find_machine`); a figure of its
    file in another unit than bytes/s or seconds is warned of (:func:`~evaluator.machines.base.warn_magnitudes`)."""
    m = _find_machine(name)
    if not isinstance(name, Machine) and os.path.isfile(m.source):
        data = read_yaml(Path(m.source).read_text(encoding="utf-8"))
        if isinstance(data, dict):
            warn_magnitudes(f"machine {m.name!r} ({m.source})", data)
        if Path(m.source) != Path(os.fspath(name)):  # (a file given by its path is the one meant)
            _warn_override(m)
    return m


class MachineOverrideWarning(UserWarning):
    """A catalogue machine's name loaded from a user's file ($EVALUATOR_MACHINE_PATH) instead of the catalogue's."""


def _warn_override(m: Machine) -> None:
    """Warn where ``m``, loaded by name, comes from a file outside the built-in catalogue that defines a machine of
    the catalogue too: its figures are the user's, not those the documents state for that name."""
    import warnings

    builtin = builtin_machine_dir()
    if Path(m.source).parent.resolve() == builtin.resolve() or not builtin.is_dir():
        return
    for path in sorted(p for p in builtin.iterdir() if p.suffix in (".yaml", ".yml") and p.is_file()):
        data = read_yaml(path.read_text(encoding="utf-8"))
        if not (isinstance(data, dict) and _key(str(data.get("name", path.stem))) == m.key):
            continue
        warnings.warn(f"machine {m.name!r} is read from {m.source} (${MACHINE_PATH_ENV}), which overrides the "
                      f"catalogue's {path}: its figures are that file's, not the catalogue's", MachineOverrideWarning,
                      stacklevel=3)
        return


def _find_machine(name: str | os.PathLike[str] | Machine) -> Machine:
    """Load a machine by name (case-insensitive) or from a YAML file path.

    Parameters
    ----------
    name
        A machine name such as ``"mira"`` or ``"JUQUEEN-54"`` (case, ``-``,
        ``_`` and spaces are ignored), a path to a YAML file, or a
        :class:`Machine` (returned unchanged).

    Raises
    ------
    UnknownMachineError
        No such machine; the message lists the known machines and where they
        were searched.
    MachineError
        The YAML file is invalid.
    """
    if isinstance(name, Machine):
        return name
    if not isinstance(name, (str, os.PathLike)):  # (None or a number raised TypeError from os.fspath)
        raise ConfigTypeError("machine", name, "a machine name (e.g. 'Mira', 'BlueWaters'), a YAML file path or a "
                              "Machine")
    p = Path(os.fspath(name))
    if p.suffix in (".yaml", ".yml") and p.is_file():
        return _read_yaml(p)
    key = _key(str(name))
    # fast path: a file named after the machine, unless a directory searched before its own defines the name
    # in a file named otherwise (a user's file overrides the built-in one whatever its file name)
    files = machine_files()
    for path in files:
        if _key(path.stem) == key:
            m = _read_yaml(path)
            if m.key == key and not _defined_before(files, path, key):
                return m
    problems: dict[str, str] = {}
    cat = _catalogue(problems)
    if key in problems:  # (the machine asked for is defined twice in one directory)
        raise MachineError(problems[key])
    if key in cat:
        return cat[key]
    known = ", ".join(sorted((m.name for m in cat.values()), key=str.lower)) or "(none)"
    where = ", ".join(str(d) for d in machine_search_path())
    unread = f" Left out, not loaded: {'; '.join(problems.values())}." if problems else ""
    raise UnknownMachineError(
        f"unknown machine {str(name)!r}; known machines: {known} (searched {where}). "
        f"Add one by dropping a YAML file in one of those directories "
        f"(or a directory named in ${MACHINE_PATH_ENV}).{unread}")


def check_partition(machine: Machine | str, shape: Sequence[int], *,
                    require_allowed: bool = False) -> tuple[int, ...]:
    """Validate a partition shape for a machine and return it as a tuple
    (:meth:`TorusMachine.check_partition <evaluator.machines.base.TorusMachine.check_partition>`).

    Parameters
    ----------
    machine
        A :class:`Machine` or a machine name; a machine without torus partitions is refused
        (:class:`MachineError` naming the kinds that have them).
    shape : sequence of int, shape [unit_dim]
        Midplanes ``(A, B, C, D)`` for Blue Gene/Q, routers for a torus
        machine, in the machine's dimension order (not sorted for you).
    require_allowed
        Also require the shape (up to rotation) to be in the machine's
        ``allowed_partitions`` list, when it has one.

    Raises
    ------
    PartitionError
        Wrong length, sizes < 1, a dimension larger than the machine's, or a
        shape the allowed list forbids; the message says which and what is
        allowed.
    """
    return load_machine(machine).torus("a partition shape").check_partition(shape, require_allowed=require_allowed)
