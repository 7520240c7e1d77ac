"""The sweep plan: the grid, its networks and chunks, the typed config of every point, the run id.

:func:`plan_sweep` takes a :class:`~evaluator.config.SweepRequest` (the
composed sweep in typed form) and decides everything before any evaluation:
axes, one composed config per combination of config-group choices, networks
(same topology and routing: one set of kernels each), fixed-size chunks and the
run id (a hash of what is computed, not where or how: storage and Ray settings
are left out, so a local and a cluster run give identical datasets and a rerun
resumes; the chunk format and the placement generator are part of it, so a
rerun under another never mixes their chunks).

Points that differ only in ``placement.seed`` (an axis of that key alone)
share everything else: workers build such a *group* once
(:meth:`SweepPlan.group_config`, :attr:`SweepPlan.seed_axis`), never a config
object per point.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import itertools
import json
import math
import types
import typing
from pathlib import Path
from collections.abc import Mapping
from typing import Any

import numpy as np

from .._types import PointInts
from .._version import __version__
from ..config import GROUPS, SweepRequest, check_assignment, check_settings, has_jobs
from ..config.hydra import DEFAULT_STUDY
from ..cost import prices_from
from ..errors import (ConfigError, IgnoredKeyError, ignored_keys_collected, is_int, keeps_ignored_keys, nearest,
                      require)
from ._inputs import inputs_digest
from .axes import Axis, expand_axes
from .bounds import sweep_bounds
from ._values import SEED_KEY, check_axis_values, listed_keys

__all__ = ["SweepPlan", "plan_sweep", "check_run_settings", "SWEEP_FORMATS", "CHUNK_FORMAT", "SEED_KEY"]

SWEEP_FORMATS = ("netcdf", "zarr")

CHUNK_FORMAT = "chunk-v4 placement-threefry-v1"  # v3: chunks hold off_node_bytes; v4: paths_per_pair
"""What a persisted chunk holds and how seeded placements are drawn (part of the run id)."""

BOUNDS_FORMAT = " bounds-v2"
"""Added to the run id of a sweep with ``bounds`` (its chunks hold the bounds; chunks an earlier version wrote
for the same config, which ignored ``bounds``, are never mixed in)."""

def _child(cur, part: str):
    """``cur.part``, or ``cur[part]`` of a mapping, or ``cur[int(part)]`` of a list (``jobs.1.placement``)."""
    if isinstance(cur, dict):
        if part not in cur:
            raise AttributeError(part)
        return cur[part]
    if isinstance(cur, list):
        return cur[int(part)]
    if not hasattr(cur, part):
        raise AttributeError(part)
    return getattr(cur, part)


def _get_path(obj, key: str):
    cur = obj
    for part in key.split("."):
        cur = _child(cur, part)
    return cur


_TYPE_WORDS = {int: "an integer", float: "a number", str: "text", bool: "true or false"}


def _schema_type(obj, key: str) -> tuple[object, bool] | None:
    """``(type, optional)`` of the dotted ``key`` in the schema of the typed config ``obj`` (``Optional[X]`` read as
    ``X``, optional), None where it is not a key of the schema."""
    head, _, last = key.rpartition(".")
    try:
        holder = _get_path(obj, head) if head else obj
        hints = typing.get_type_hints(type(holder)) if dataclasses.is_dataclass(holder) else {}
    except Exception:  # noqa: BLE001 - not a key of the schema: the axis check names it
        return None
    tp, optional = hints.get(last), False
    args = [a for a in typing.get_args(tp) if a is not type(None)]
    if typing.get_origin(tp) in (typing.Union, types.UnionType) and len(args) == 1:
        tp, optional = args[0], True
    return tp, optional


def _leaf_type(obj, key: str) -> tuple[str, bool] | None:
    """``(words, is_list)`` of the dotted ``key`` of the typed config ``obj`` where its schema type holds no keys
    (a number, a text, a list: ``("an integer or null", False)``), None for any other key or none."""
    found = _schema_type(obj, key)
    if found is None:
        return None
    tp, optional = found
    is_list = tp is list or typing.get_origin(tp) is list
    words = "a list" if is_list else _TYPE_WORDS.get(tp)  # type: ignore[arg-type]
    return None if words is None else (words + (" or null" if optional else ""), is_list)


_NUMERIC = {int: ("an integer", "integers"), float: ("a number", "numbers"), bool: ("true or false", "booleans")}


def _numeric_type(obj, key: str) -> tuple[str, bool] | None:
    """``(words, is_list)`` where the schema type of the dotted ``key`` of the typed config ``obj`` is a number, an
    integer or a boolean (``is_list``: a list of them), None for any other type or key."""
    tp = (_schema_type(obj, key) or (None, False))[0]
    item = typing.get_args(tp)[0] if typing.get_origin(tp) is list and len(typing.get_args(tp)) == 1 else None
    if item in _NUMERIC:
        return f"a list of {_NUMERIC[item][1]}", True
    return (_NUMERIC[tp][0], False) if tp in _NUMERIC else None


def _check_not_text(obj, field: str, key: str, values) -> None:
    """Refuse text where the key's schema type is a number, an integer or a boolean (``'8'``, ``'1e6'``,
    ``'false'``). The schema check converts such text (OmegaConf reads ``'8'`` as 8), but a point is set the value
    as given: every point with it was infeasible with a reason that called the value out of range
    (``traffic.n_tasks: an integer >= 1`` for ``'8'``, ``traffic.bytes: a finite number > 0`` for ``'1e6'``) while
    the sweep ran (until 2026-12-07)."""
    numeric = _numeric_type(obj, key)
    if numeric is None:
        return
    words, is_list = numeric
    for v in values:
        entries = v if is_list and isinstance(v, (list, tuple)) else [v]
        text = next((x for x in entries if isinstance(x, str)), None)
        if text is not None:
            raise ConfigError(field, v, f"{words} (the key's type)",
                              f"{text!r} is text: a point would be set the text itself, not the number it reads as. "
                              f"Give it without quotes.")


def _set_path(obj, key: str, value) -> None:
    parts = key.split(".")
    cur = obj
    for part in parts[:-1]:
        cur = _child(cur, part)
    value = copy.deepcopy(value)
    if isinstance(cur, dict):
        cur[parts[-1]] = value
    elif isinstance(cur, list):
        cur[int(parts[-1])] = value
    else:
        setattr(cur, parts[-1], value)


def _shallow(obj) -> Any:
    """A shallow copy (fast for plain objects with a ``__dict__``, such as the config dataclasses)."""
    d = getattr(obj, "__dict__", None)
    if d is None or hasattr(type(obj), "__slots__"):
        return copy.copy(obj)
    new = object.__new__(type(obj))
    new.__dict__.update(d)
    return new


def _fresh(value) -> Any:
    """A value for a config field that shares nothing mutable with the axis (lists of scalars copied flat)."""
    if isinstance(value, list):
        return list(value) if all(isinstance(x, (int, float, str, bool)) for x in value) else copy.deepcopy(value)
    return copy.deepcopy(value) if isinstance(value, dict) else value


def _with_values(base, assignments) -> Any:
    """A copy of ``base`` with ``(dotted key, value)`` assignments: only the objects on the assigned paths are
    copied (shallowly), the rest is shared with ``base``; list values are copied."""
    obj = _shallow(base)
    copied: dict[tuple[str, ...], Any] = {(): obj}
    for key, value in assignments:
        parts = tuple(key.split("."))
        cur = obj
        for i in range(1, len(parts)):
            path = parts[:i]
            nxt = copied.get(path)
            if nxt is None:
                nxt = _shallow(_child(cur, parts[i - 1]))
                _set_child(cur, parts[i - 1], nxt)
                copied[path] = nxt
            cur = nxt
        _set_child(cur, parts[-1], _fresh(value))
    return obj


def _set_child(cur, part: str, value) -> None:
    """``cur.part = value``, or the mapping's or list's entry (as :func:`_child` reads it)."""
    if isinstance(cur, dict):
        cur[part] = value
    elif isinstance(cur, list):
        cur[int(part)] = value
    else:
        setattr(cur, part, value)


@dataclasses.dataclass
class SweepPlan:
    """Everything the driver and the workers need, decided before any evaluation.

    ``bases`` maps a tuple of group-axis value indices to the composed config
    object for that group choice (one Hydra composition per combination).
    """

    name: str
    run_id: str
    axes: list[Axis]
    bases: dict[tuple[int, ...], Any]
    group_axes: tuple[int, ...]
    config_yaml: str
    chunk_size: int
    keep_link_load: bool
    fmt: str
    out_dir: Path
    seeds: list[int]
    bounds: str | None = None  # the bound method of every feasible point (evaluator.sweep.bounds); None: no bounds
    bound_solver: str = "highs"
    sharing: str = "bound"  # "max_min": every point also under flow-level max-min sharing (time_max_min)
    fairness: str = "flow"
    progression: str = "phase"
    content_hash: str = ""  # the hash of what is computed (config, axes, the files named); the run id's by default

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(ax.size for ax in self.axes)

    @property
    def n_points(self) -> int:
        return math.prod(self.shape)

    @property
    def network_axes(self) -> tuple[int, ...]:
        """The axes that choose the network (topology and routing): the points of one network share one set of
        kernels."""
        return tuple(i for i, ax in enumerate(self.axes) if ax.affects_network)

    def chunks(self) -> list[tuple[str, PointInts]]:
        """Deterministic ``(chunk_id, flat point indices)``, each chunk inside one network (id ``b<network>-c<chunk>``;
        the ``b`` is kept so that runs written before the rename resume)."""
        flat = np.arange(self.n_points, dtype=np.int64)
        idx = np.unravel_index(flat, self.shape)
        nax = self.network_axes
        if nax:
            nshape = tuple(self.shape[i] for i in nax)
            network = np.ravel_multi_index(tuple(idx[i] for i in nax), nshape)
        else:
            network = np.zeros_like(flat)
        order = np.argsort(network, kind="stable")
        out = []
        for b in np.unique(network):
            pts = order[network[order] == b]
            for k in range(0, pts.size, self.chunk_size):
                out.append((f"b{int(b):05d}-c{k // self.chunk_size:06d}", pts[k:k + self.chunk_size]))
        return out

    def one_draw_choices(self) -> dict[str, str]:
        """The sweep's choices that are one random draw each (:func:`evaluator.config.drawn_choices`: hashed
        ECMP's hash, a random permutation, a random or randomly ordered placement) where no axis sets their seed
        (``<group>.seed``): every row is then that draw's time, not what the point gives on average.
        ``{group: "<group> <kind> (seed <seed>)"}`` (several kinds of one group joined; several jobs: each
        job's groups as ``jobs.<i>.<group>``)."""
        from ..config import drawn_choices

        seeded = {k for ax in self.axes for k in ax.keys if k.endswith(".seed")}
        out: dict[str, list[str]] = {}
        for base in self.bases.values():
            for group, what in drawn_choices(base).items():
                if f"{group}.seed" not in seeded and what not in out.setdefault(group, []):
                    out[group].append(what)
        return {g: ", ".join(v) for g, v in out.items()}

    @property
    def seed_axis(self) -> int | None:
        """Index of the axis that sets ``placement.seed`` alone (workers vectorise over it), or None."""
        for i, ax in enumerate(self.axes):
            if ax.keys == (SEED_KEY,):
                return i
        return None

    def family_axes(self, *families: str) -> tuple[int, ...]:
        """Indices of the axes a build of ``families`` depends on: their config-group axes, the axes of keys
        under them, and axes of keys outside every family (a config group's options set only its own keys)."""
        out = []
        for i, ax in enumerate(self.axes):
            heads = {k.split(".")[0] for k in ax.keys}
            if heads & set(families) or not heads <= set(GROUPS):
                out.append(i)
        return tuple(out)

    def group_config(self, idx: tuple[int, ...], axes: tuple[int, ...] | None = None):
        """The config object at axis value indices ``idx`` (one per axis; only ``axes``' values are set,
        default every axis), sharing unchanged parts with its group base: for reading, not for mutating."""
        gkey = tuple(int(idx[i]) for i in self.group_axes)
        use = range(len(self.axes)) if axes is None else axes
        assignments = [(k, v) for i in use if not self.axes[i].is_group
                       for k, v in zip(self.axes[i].keys, self.axes[i].values[int(idx[i])])]
        return _with_values(self.bases[gkey], assignments)

    def point_config(self, flat: int):
        """The config object of one grid point (a deep copy of its group base, axis values set)."""
        idx = np.unravel_index(int(flat), self.shape)
        gkey = tuple(int(idx[i]) for i in self.group_axes)
        obj = copy.deepcopy(self.bases[gkey])
        for ax, i in zip(self.axes, idx):
            if ax.is_group:
                continue
            for k, v in zip(ax.keys, ax.values[int(i)]):
                _set_path(obj, k, v)
        return obj


def _positive(field: str, value: Any, minimum: int = 1, optional: bool = False, what: str = "") -> None:
    if optional and value is None:
        return
    if not (is_int(value) and int(value) >= minimum):
        allowed = f"an integer >= {minimum}" + (" or null" if optional else "") + (f" ({what})" if what else "")
        raise ConfigError(field, value, allowed)


CHUNK_SIZE = 1024
"""Points of a chunk (a file of results, checkpointed together) when ``sweep.chunk_size`` is null: the README's
10^6-point sweep (`+sweep.axes.placement.seed={range:[0,3125]}`, Ray, 2 cores) ran in 19.2-19.5 s at 1,024 against
22.8 s at 256 (its 3,907 chunk files took 30.6 s of the writer threads' time, 977 files 3.4 s), and a 320-point
sweep the same (4.4-5.8 s at either)."""

CHUNK_SIZE_LINK_LOAD = 256
"""The same with ``sweep.keep_link_load`` (a chunk's results then hold every point's load on every link)."""


def default_chunk_size(keep_link_load: bool) -> int:
    """Points per chunk when ``sweep.chunk_size`` is null."""
    return CHUNK_SIZE_LINK_LOAD if keep_link_load else CHUNK_SIZE


def check_run_settings(sweep_cfg: Any, ray_cfg: Any) -> None:
    """Check the run settings of a sweep (``sweep.*`` and ``ray.*``) before anything runs.

    ``sweep.chunk_size`` is null or an integer >= 1, ``sweep.max_points`` an integer >= 1,
    ``sweep.format`` is one of :data:`SWEEP_FORMATS`; ``ray.num_cpus`` and
    ``ray.max_in_flight`` are null or integers >= 1, ``ray.max_retries`` an
    integer >= 0, ``ray.driver_chunks`` a bool, ``ray.address`` null or a string. Raises
    :class:`~evaluator.errors.ConfigError` naming the field.
    """
    _positive("sweep.chunk_size", sweep_cfg.chunk_size, optional=True,
              what=f"points per chunk, the results checkpointed together; null: {CHUNK_SIZE:,}, or "
                   f"{CHUNK_SIZE_LINK_LOAD:,} with keep_link_load")
    _positive("sweep.max_points", sweep_cfg.max_points, what="the largest grid a sweep may have")
    require(sweep_cfg.format in SWEEP_FORMATS, "sweep.format", sweep_cfg.format, "netcdf or zarr")
    if ray_cfg is None:
        return
    _positive("ray.num_cpus", ray_cfg.num_cpus, optional=True, what="CPUs of the local Ray; null: all")
    _positive("ray.max_retries", ray_cfg.max_retries, minimum=0, what="retries of a failed chunk")
    _positive("ray.max_in_flight", ray_cfg.max_in_flight, optional=True,
              what="chunks submitted at once; null: 2 x CPUs")
    own = getattr(ray_cfg, "driver_chunks", True)
    require(isinstance(own, bool), "ray.driver_chunks", own,
            "true (the driver evaluates chunks itself while the local Ray it starts comes up) or false")
    address = getattr(ray_cfg, "address", None)
    require(address is None or (isinstance(address, str) and address.strip() != ""), "ray.address", address,
            "null (start Ray here), 'auto' or a cluster address")


def _signature(value: Any) -> Any:
    """What a schema check of ``value`` depends on: its type, and the text of a string (OmegaConf converts
    strings to numbers and booleans by their content; every other type is accepted or refused as a whole)."""
    if isinstance(value, str):
        return (str, value)
    if isinstance(value, (list, tuple)):
        return (type(value), tuple(_signature(v) for v in value))
    if isinstance(value, dict):
        return (dict, tuple((k, _signature(v)) for k, v in value.items()))
    return type(value)


def _representatives(values) -> list:
    """The first value of each :func:`_signature`, in order: checking these checks every value."""
    seen: set = set()
    out = []
    for v in values:
        sig = _signature(v)
        if sig not in seen:
            seen.add(sig)
            out.append(v)
    return out


def _axes_json(axes: list[Axis]) -> str:
    """The axes as the run id hashes them (name, keys, values, :attr:`Axis.id_labels`), as JSON, without
    copying every value."""
    return json.dumps([{"name": a.name, "keys": a.keys, "values": a.values, "labels": a.id_labels} for a in axes],
                      default=str)


def _check_conflicts(overrides, axes: list[Axis]) -> None:
    """Refuse a command-line override that an axis would silently undo: the key an axis sets, or a key inside
    one (``placement.gamma.0`` under a ``placement.gamma`` axis). Not a conflict: a group option and an axis
    on its own keys (``traffic=m_to_n traffic.mode=disjoint,overlap``), a value and an axis inside it
    (``jobs=[...]`` with ``jobs.1.placement.offset``), and a key under a group axis (``placement=linear,alps
    placement.tasks_per_node=2``: the key is set in every kind the axis chooses)."""
    swept = {k for ax in axes for k in ax.keys}
    for ov in overrides:
        key = ov.split("=", 1)[0].lstrip("+~")
        hit = key if key in swept else next((s for s in sorted(swept)
                                             if s not in GROUPS and key.startswith(s + ".")), None)
        if hit is not None:
            raise ConfigError("sweep.axes", key, "keys that are not also overridden on the command line",
                              f"'{ov}' conflicts with the sweep axis on '{hit}'. Drop the override or the axis.")


def _check_routings(plan: "SweepPlan") -> None:
    """Refuse, before anything runs, a routing that cannot serve the topology of a group combination
    (``routing=dor`` on a Dragonfly): every one of its points would be infeasible. The routing kinds name the
    topology kinds they serve (:func:`evaluator.routing.routings_for`); a topology that cannot be built at the
    base values is left to the points (each records its reason)."""
    from .. import routing as routing_family
    from ..config import build_topology

    built: dict[str, Any] = {}
    for combo, base in plan.bases.items():
        kind = getattr(base.routing, "kind", None)
        text = repr(base.topology)
        if text not in built:
            try:
                built[text] = build_topology(base.topology)
            except Exception:  # noqa: BLE001 - bad values (or a bug) are the points' to report, with their reason
                built[text] = None
        topo = built[text]
        if topo is None or kind is None:
            continue
        allowed = routing_family.routings_for(topo.kind)
        if kind not in allowed:
            chosen = getattr(base.topology, "kind", topo.kind)
            raise ConfigError("routing", kind, f"a routing that serves the {topo.kind} topology "
                              f"(topology={chosen}, {topo.name}): {', '.join(allowed)}",
                              f"Routing '{kind}' serves {routing_family.KINDS[kind].served()} "
                              f"topologies only; every point with it would be infeasible. Drop it from the sweep "
                              f"or sweep another topology.")


def group_value(axis: str, group: str, value: Any) -> tuple[str, dict]:
    """``(option, keys)`` of one value of a config-group axis: an option name (``"dragonfly"``), or a mapping
    naming the option by ``kind`` with keys of it (``{kind: dragonfly, g: 16}``: the option, then those keys; a
    nested block, ``{latency: {router: 1.0e-7}}``, key by key)."""
    if isinstance(value, str):
        return value, {}
    if isinstance(value, Mapping) and isinstance(value.get("kind"), str):
        keys = {}
        for k, v in value.items():
            if k == "kind":
                continue
            if isinstance(v, Mapping):  # a block of keys (topology.latency: {router: ...}): key by key
                keys.update({f"{k}.{k2}": v2 for k2, v2 in v.items()})
            else:
                keys[k] = v
        return value["kind"], keys
    raise ConfigError(f"sweep.axes.{axis}", value, f"an option of {group} (a name), or a mapping with its kind "
                      f"and keys of that kind ({{kind: dragonfly, g: 16}})")


def _check_file_name(field: str, value) -> None:
    """``sweep.name`` and ``sweep.run_id`` name a directory under ``sweep.output_dir`` and the files in it: one
    non-empty name without a path separator (``../x`` wrote outside the results directory, an empty name into
    it)."""
    v = str(value) if value is not None else ""
    require(isinstance(value, str) and v.strip() != "" and v not in (".", "..") and not set("/\\\0") & set(v)
            and not v.startswith("."), field, value,
            "a non-empty name without '/', '\\' or a leading '.' (a directory or file name under sweep.output_dir)")


@keeps_ignored_keys
def plan_sweep(request: SweepRequest) -> SweepPlan:
    """Validate a composed sweep and decide the grid, networks and run id.

    The run settings are checked first (:func:`check_run_settings`), then the
    axes are expanded with the grid size checked against ``sweep.max_points``
    before any axis's values are made. A key both swept and overridden on the
    command line is a conflict; every axis key and value is checked against
    the typed schema of every combination of config-group choices before
    anything runs (one value per type, and every distinct string, stands for
    the rest: see :func:`_signature`).
    """
    sw = request.config.sweep
    check_run_settings(sw, getattr(request.config, "ray", None))
    if not request.axes:
        given = " ".join(request.overrides)
        raise ConfigError("sweep.axes", {}, "at least one axis: a sweep override (routing=minimal,valiant, "
                          "placement.seed='range(0,8)'), +sweep.axes.KEY=[...] or a study (sweeps=NAME)",
                          f"Without sweeps=NAME a sweep has exactly the axes its overrides give, and "
                          f"'{given}' gives none: add an axis, run a study with them (evaluator sweep "
                          f"sweeps={DEFAULT_STUDY} {given}) or evaluate the one point (evaluator eval {given}). "
                          f"See docs/sweeps.md.")
    axes = expand_axes(request.axes, max_points=int(sw.max_points),
                       leaf_type=lambda key: _leaf_type(request.config, key))  # (a mistyped generator)
    swept = {k for ax in axes for k in ax.keys}
    _check_conflicts(request.overrides, axes)
    for key in ("bounds", "bound_solver", "sharing", "fairness", "progression"):
        if key in swept:
            raise ConfigError("sweep.axes", key, "keys other than bounds, bound_solver, sharing, fairness and "
                              "progression (one setting per sweep)", f"Set {key}=... on the command line instead.")
    from .._batch.flowlevel import FAIRNESS, PROGRESSIONS, SHARINGS

    sharing, fairness = request.config.sharing, request.config.fairness
    require(sharing in SHARINGS, "sharing", sharing, f"one of {list(SHARINGS)}", nearest(sharing, SHARINGS))
    require(fairness in FAIRNESS, "fairness", fairness, f"one of {list(FAIRNESS)}", nearest(fairness, FAIRNESS))
    if request.config.jobs and sharing != "bound":
        raise ConfigError("sharing", sharing, "bound in a sweep of several jobs",
                          "Flow-level sharing of several jobs is evaluator eval's (with jobs) and evaluate_jobs'.")
    progression = request.config.progression
    require(progression in PROGRESSIONS, "progression", progression, f"one of {list(PROGRESSIONS)}",
            nearest(progression, PROGRESSIONS))
    bound_method, bound_solver = sweep_bounds(request.config)
    if bound_method is not None and request.config.jobs:
        raise ConfigError("bounds", request.config.bounds, "false in a sweep of several jobs",
                          "Bounds are computed for one job's traffic; drop jobs or bounds.")
    if request.config.jobs and request.config.cost.budget is not None:
        raise ConfigError("cost.budget", request.config.cost.budget, "null in a sweep of several jobs",
                          "A jobs sweep's datasets carry no cost yet (docs/cost.md); drop cost.budget.")
    group_axes = tuple(i for i, ax in enumerate(axes) if ax.is_group)
    for i in group_axes:
        others = [k for k in axes[i].keys if k not in GROUPS]
        require(not others, "sweep.axes", axes[i].name,
                f"a zip of config groups only ({', '.join(GROUPS)}), not with {others}",
                "Give a group's own keys in its values: {kind: dragonfly, g: 16} (docs/sweeps.md).")
    reps = {(ax.name, kk): _representatives(row[kk] for row in ax.values)
            for ax in axes if not ax.is_group for kk in range(len(ax.keys))}
    bases: dict[tuple[int, ...], Any] = {}
    combos = list(itertools.product(*(range(axes[i].size) for i in group_axes)))
    for combo in combos:
        if combo:
            choices, extra = {}, []
            for i, j in zip(group_axes, combo):
                for key, value in zip(axes[i].keys, axes[i].values[j]):
                    choices[key], keys = group_value(axes[i].name, key, value)
                    extra += [(f"{key}.{k}", v) for k, v in keys.items()]
            obj = request.with_groups(choices)
            for key, value in extra:
                check_assignment(obj, key, [value])
                _set_path(obj, key, value)
        else:
            obj = request.config
        # validate every non-group key and value against the typed schema
        for ax in axes:
            if ax.is_group:
                continue
            for kk, key in enumerate(ax.keys):
                check_assignment(obj, key, reps[(ax.name, kk)])
                _check_not_text(obj, f"sweep.axes.{key}", key, reps[(ax.name, kk)])
        prices_from(obj.cost)  # a bad price table is refused before anything runs
        bases[combo] = obj
    run_hash = hashlib.sha256(
        (request.identity_yaml + _axes_json(axes) + __version__ + CHUNK_FORMAT
         + (BOUNDS_FORMAT if bound_method is not None else "")
         + inputs_digest(bases.values(), axes)).encode()  # (the traffic and machine files named, by content)
    ).hexdigest()[:12]
    _check_file_name("sweep.name", sw.name)
    if sw.run_id is not None:
        _check_file_name("sweep.run_id", sw.run_id)
    run_id = sw.run_id or f"{sw.name}-{run_hash}"
    plan = SweepPlan(sw.name, run_id, axes, bases, group_axes, request.identity_yaml,
                     default_chunk_size(bool(sw.keep_link_load)) if sw.chunk_size is None else int(sw.chunk_size),
                     bool(sw.keep_link_load), sw.format, Path(sw.output_dir) / sw.name, [], bound_method,
                     bound_solver, str(sharing), str(fairness), str(progression), run_hash)
    require(plan.n_points <= int(sw.max_points), "sweep.max_points", plan.n_points,
            f"at most {sw.max_points} points (raise sweep.max_points)")
    seeds: set[int] = set()
    for ax in axes:
        for k, col in zip(ax.keys, zip(*ax.values)):
            if k.endswith("seed"):
                seeds.update(int(v) for v in col)
    for base in bases.values():
        for group in ("traffic", "placement"):
            seed = getattr(getattr(base, group), "seed", None)
            if seed is not None:
                seeds.add(int(seed))
    plan.seeds = sorted(seeds)
    _check_one_sort(plan)
    _check_background_axes(plan)
    _check_routings(plan)
    _check_ignored_keys(plan)  # (builds nothing: first)
    check_axis_values(plan, listed_keys(request.axes))
    return plan


def _check_ignored_keys(plan: SweepPlan) -> None:
    """Refuse a key that changes nothing at any point of the sweep (as ``eval`` refuses it for its one point:
    :class:`~evaluator.errors.IgnoredKeyError`), tried at the first point and at every value of each axis with the
    others at their first (``routing.power=8`` beside a ``routing=ugal,ugal_local`` axis acts at the ugal points and
    is kept; the points where it does not act ignore it). Every key that changes nothing at a trial point is
    collected there (:func:`~evaluator.errors.ignored_keys_collected`): the settings' and the routing's own checks,
    and the topology's and one job's traffic's by the predicates their builders use, building neither
    (:func:`evaluator.config.refuse_unread_keys`, once per distinct section). A point that another refusal stops
    keeps every key (its reason is the point's to report); a traffic key of a several-jobs config is left to the
    points."""
    from ..config import build_routing_spec, refuse_unread_keys

    sections: dict[tuple[str, str], list[IgnoredKeyError] | None] = {}

    def unread(group: str, cfg) -> list[IgnoredKeyError] | None:
        key = (group, repr(cfg))
        if key not in sections:
            try:
                with ignored_keys_collected() as found:
                    refuse_unread_keys(group, cfg)
                sections[key] = found
            except ConfigError:
                sections[key] = None
        return sections[key]

    def ignored(cfg) -> dict[str, IgnoredKeyError]:
        """The keys that change nothing at the point of ``cfg``, by field (none known where a refusal stops it)."""
        try:
            with ignored_keys_collected() as found:
                check_settings(cfg)
                build_routing_spec(cfg.routing)
        except ConfigError:
            return {}
        for group in ("topology",) if has_jobs(cfg) else ("topology", "traffic"):
            more = unread(group, getattr(cfg, group))
            if more is None:
                return {}
            found += more
        out: dict[str, IgnoredKeyError] = {}
        for exc in found:
            out.setdefault(exc.field, exc)
        return out

    left = ignored(plan.point_config(0))
    for i in range(len(plan.axes)):
        for cfg in _axis_configs(plan, i):
            if not left:
                return
            here = ignored(cfg)
            left = {f: exc for f, exc in left.items() if f in here}
    if left:
        first = next(iter(left.values()))
        raise IgnoredKeyError(first.field, first.value, first.allowed,
                              f"{first.hint or ''} It changes nothing at any point of this sweep.".strip())


def _axis_configs(plan: SweepPlan, i: int):
    """The config of each value of axis ``i``, every other axis at its first value."""
    at = [0] * len(plan.axes)
    for v in range(plan.axes[i].size):
        at[i] = v
        yield plan.point_config(int(np.ravel_multi_index(at, plan.shape)))


def _check_background_axes(plan: SweepPlan) -> None:
    """Every value of an axis of the background's keys checked (:func:`evaluator.config.check_settings`: a pattern
    or seed that would be refused once the background loads, refused now), and such an axis refused where the
    background loads nothing (``background.fraction`` 0 at every point, no axis setting another) and that has
    several values of other keys than the fraction: its points would all be the same."""
    keyed = [i for i, ax in enumerate(plan.axes) if any(k.startswith("background.") for k in ax.keys)]
    if not keyed:
        return
    for i in keyed:
        for cfg in _axis_configs(plan, i):
            check_settings(cfg)
    swept = [(ax, ax.keys.index("background.fraction")) for ax in plan.axes if "background.fraction" in ax.keys]
    fractions = ({float(row[k]) for ax, k in swept for row in ax.values} if swept
                 else {float(plan.point_config(0).background.fraction)})
    idle = [plan.axes[i] for i in keyed if plan.axes[i].size > 1 and "background.fraction" not in plan.axes[i].keys]
    if fractions == {0.0} and idle:
        ax = idle[0]
        raise ConfigError("sweep.axes", ax.name, "an axis of the background's keys where it loads something "
                          "(background.fraction > 0)", "background.fraction is 0 at every point, so the background "
                          "sends nothing and every value of this axis gives the same point: set "
                          "background.fraction=F (0 < F < 1), or drop the axis.")


def _check_one_sort(plan: SweepPlan) -> None:
    """Refuse an axis whose values switch between one job and several jobs (a ``background.fraction`` axis with
    0 beside values > 0, a ``jobs`` axis with and without a list): the two are evaluated and stored differently,
    and a chunk is evaluated one way (it was, silently, the way of its first point)."""
    if not plan.axes:
        return
    for i, ax in enumerate(plan.axes):
        if not any(k == "jobs" or k.startswith(("jobs.", "background")) for k in ax.keys):
            continue
        sorts = {}
        for v, cfg in enumerate(_axis_configs(plan, i)):
            sorts.setdefault(has_jobs(cfg), v)
        if len(sorts) > 1:
            raise ConfigError("sweep.axes", ax.name, "values that are all one job or all several jobs",
                              f"'{ax.labels[sorts[False]]}' is one job alone and '{ax.labels[sorts[True]]}' "
                              f"several jobs (or a background), which are evaluated and stored differently: sweep "
                              f"them separately (e.g. background.fraction=0 in a run of its own).")
