"""Hydra's sweep grammar made sweep axes, and the check that an axis's values fit the config.

Sweeps take Hydra's own sweep grammar for their axes (:func:`sweep_axes_from_overrides`, parsed by Hydra's
override parser):

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

Also here: the canonical form of ``sweep.axes`` (one run id for one sweep, :func:`_canonical_axes`) and
:func:`check_assignment` (a key of the composed config takes every value of an axis).
"""

from __future__ import annotations

import copy
import dataclasses
import math
import re
from collections.abc import Sequence
from typing import Any

from ..._types import ConfigOf
from ...errors import ConfigError, closest
from ..schemas import FAMILIES, GROUPS, EvalConfig
from .composition import _explain_foreign_key, group_options, kind_key_hint

__all__ = ["check_assignment", "sweep_axes_from_overrides", "AXIS_GENERATORS"]


def check_assignment(cfg: ConfigOf[EvalConfig], key: str, values: Sequence[Any]) -> None:
    """Check that the dotted ``key`` exists in ``cfg`` and accepts every value in ``values``.

    Raises :class:`ConfigError` naming the key (unknown axis) or the value
    that the key's schema type rejects.
    """
    from omegaconf import OmegaConf

    head, _, rest = key.partition(".")
    if head in FAMILIES and rest == "kind":
        raise ConfigError("sweep.axes", key, f"an axis over the {head} group (+sweep.axes.{head}=[a,b] or "
                          f"{head}=a,b)", kind_key_hint(head, axis=True))
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
                          f"Unknown axis. Top-level keys: {sorted(k for k in node.keys() if k != 'sweep')}"
                          + _generator_hint(key))
    if refused is not None:
        value, exc = refused
        raise ConfigError(f"sweep.axes.{key}", value, "a value of the key's type",
                          str(exc).splitlines()[0]) from None


_MISSING_KEY = object()


def _generator_hint(key: str) -> str:
    """Where a part of an unknown axis ``key`` reads like a generator (``s.zpi.traffic.seed``: a mapping's keys
    are dotted keys unless one is a generator), which generator it may be."""
    for part in key.split("."):
        match = closest(part, AXIS_GENERATORS) if part not in AXIS_GENERATORS else None
        if match:
            return (f". If '{part}' is a generator, it is {match!r} (the generators: "
                    f"{', '.join(AXIS_GENERATORS)}; a mapping without one is nested keys): see docs/sweeps.md.")
    return ""


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
        old = axes[joined]
        if isinstance(old, dict) and not any(g in old for g in AXIS_GENERATORS) and not isinstance(spec, dict):
            # axes on keys inside `joined` (traffic.bytes) and now one on the whole of it (traffic=a,b): keep both
            # (until 2026-12-07 the keys' axes were dropped without a word), the keys' where they stood
            kept = {k: v for k, v in axes.items()}
            axes.clear()
            for k, v in kept.items():
                if k == joined:
                    axes.update(_dotted(joined, v))
                else:
                    axes[k] = v
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


def _dotted(prefix: str, node: dict) -> dict:
    """The axes of a nested ``sweep.axes`` mapping under ``prefix`` as dotted keys (a generator stays whole)."""
    out = {}
    for k, v in node.items():
        if isinstance(v, dict) and not any(g in v for g in AXIS_GENERATORS):
            out.update(_dotted(f"{prefix}.{k}", v))
        else:
            out[f"{prefix}.{k}"] = v
    return out


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
            continue
        call = _SORT_OR_SHUFFLE.match(text.split("=", 1)[1]) if "=" in text else None
        if call is not None and call.group(1) == "shuffle":  # shuffle(4), shuffle([8,4]): Hydra gives no sweep
            raise _refuse(text, ov.key_or_group, _DISCRETE + " in a fixed order",
                          "shuffle() gives another order on every run, so a rerun would not resume (a shuffled list "
                          "is another value on every run); drop shuffle().")
        if call is not None and not isinstance(ov.value(), (list, dict)):
            # sort(4): Hydra reads one value as that value, no sweep; an axis of one value, as choice(4) is
            lhs = text.split("=", 1)[0]
            sweeps.append((text, parser.parse_override(f"{lhs}=choice({_hydra_literal(ov.value())})")))
            continue
        plain.append(text)
    return plain, sweeps


_SORT_OR_SHUFFLE = re.compile(r"\s*(sort|shuffle)\s*\(")
"""A value written as a call of Hydra's ``sort`` or ``shuffle``: a sweep function, whatever Hydra makes of one
value (until 2026-12-07 ``traffic.n_tasks=sort(4)`` was the plain value 4, and ``shuffle(4)`` the list [4] refused
as "not an integer"; ``shuffle([8,4])`` a list in another order on every run)."""


def _hydra_literal(value: Any) -> str:
    """``value`` (a scalar Hydra parsed) written back in Hydra's grammar."""
    if isinstance(value, str):
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value)


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

