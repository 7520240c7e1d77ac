"""Argument checks shared by the entry points (:func:`evaluator.evaluate`, :func:`evaluator.evaluate_batch`,
:func:`evaluator.jobs.evaluate_jobs`): a wrong type is a :class:`~evaluator.errors.ConfigError` naming the
argument, the value (shortened), the type given and the type expected."""

from __future__ import annotations

import inspect
from collections.abc import Iterable
from typing import Any

import numpy as np

from .. import traffic as _traffic_pkg
from ..errors import ConfigError, is_int, positive_int, require
from ..placement import Placement
from ..routing import KINDS as ROUTING_KINDS
from ..routing import Routing
from ..topology import Topology
from ..traffic import AbstractTraffic

__all__ = ["Shown", "short", "check_type", "as_routing", "check_pair", "as_list", "broadcast", "block_size_arg",
           "DEFAULT_BLOCK_SIZE"]


class Shown:
    """A value shown in an error message by a short description (its ``repr``)."""

    def __init__(self, text: str):
        self.text = text

    def __repr__(self) -> str:
        return self.text


def short(value: Any, limit: int = 80) -> Any:
    """``value`` itself when its repr is one short line, else a short description of it."""
    r = repr(value)
    if len(r) <= limit and "\n" not in r:
        return value
    if isinstance(value, np.ndarray):
        return Shown(f"<array of shape {value.shape}, dtype {value.dtype}>")
    return Shown(r[: limit - 3] + "...")


def _a(type_name: str) -> str:
    if type_name == "NoneType":
        return "None"
    return ("an " if type_name[:1].lower() in "aeiou" else "a ") + type_name


def _builder_hint(name: str) -> str | None:
    """``evaluator.traffic.<name>(<required args>)`` when ``name`` is a traffic constructor."""
    fn = getattr(_traffic_pkg, name, None) if name.isidentifier() and not name.startswith("_") else None
    if not callable(fn) or isinstance(fn, type):
        return None
    try:
        params = [p.name for p in inspect.signature(fn).parameters.values()
                  if p.default is inspect.Parameter.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):  # pragma: no cover - builtins
        params = ["..."]
    return f"evaluator.traffic.{name}({', '.join(params)})"


_EXPECTED = {
    "topology": (Topology, "a Topology (build one with evaluator.dragonfly(p, a, h) or evaluator.torus(dims))"),
    "traffic": (AbstractTraffic,
                "a Traffic, DenseTraffic or PhasedTraffic (build one with evaluator.traffic.all_to_all(n_tasks))"),
    "placement": (Placement, "a Placement (build one with evaluator.placement.linear(topology, n_tasks))"),
}


def check_type(what: str, field: str, value: Any) -> None:
    """A :class:`ConfigError` naming ``field``, the value, its type and the expected type (``what``: topology,
    traffic or placement), unless it matches."""
    types, allowed = _EXPECTED[what]
    if isinstance(value, types):
        return
    hint = f"Got {_a(type(value).__name__)}."
    if what == "traffic" and isinstance(value, str) and _builder_hint(value):
        allowed = f"a Traffic or DenseTraffic (build one with {_builder_hint(value)})"
    raise ConfigError(field, short(value), allowed, hint)


def as_routing(routing: Any, field: str = "routing") -> Routing:
    """A :class:`Routing`; a registered routing kind's name gives that kind with its default parameters."""
    if isinstance(routing, Routing):
        return routing
    names = ", ".join(ROUTING_KINDS)
    if isinstance(routing, str) and routing in ROUTING_KINDS:
        kind = ROUTING_KINDS[routing]
        return kind.build(kind.schema())
    raise ConfigError(field, short(routing), f"a Routing (e.g. evaluator.minimal(), evaluator.dor()) or the name "
                                             f"of a routing kind: {names}", f"Got {_a(type(routing).__name__)}.")


def check_pair(topology: Topology, traffic: AbstractTraffic, placement: Placement, i: int | None = None,
               names: tuple[str, str] = ("traffic", "placement")) -> None:
    """A placement made for ``topology`` and for the traffic's tasks (``i``: the point's index, in the message)."""
    where = "" if i is None else f"[{i}]"
    if placement.n_nodes != topology.n_nodes:  # the message is built only when it is raised (once per point)
        raise ConfigError(f"{names[1]}{where}", placement.name,
                          f"a placement made for {topology.name} ({topology.n_nodes} nodes); it was made for "
                          f"{placement.n_nodes} nodes")
    if traffic.n_tasks != placement.n_tasks:
        raise ConfigError(f"{names[1]}{where}.n_tasks", placement.n_tasks,
                          f"the traffic's task count {traffic.n_tasks} ({traffic.name})",
                          "Traffic and placement must describe the same tasks.")


def as_list(what: str, name: str, items: Any) -> list:
    """One item (``what``: traffic or placement) or a sequence of them, each checked."""
    types, _ = _EXPECTED[what]
    if isinstance(items, types):
        return [items]
    if isinstance(items, (str, bytes, dict)) or not isinstance(items, Iterable):
        check_type(what, name, items)
    out = list(items)
    for i, x in enumerate(out):
        check_type(what, f"{name}[{i}]", x)
    return out


def broadcast(traffics: Any, placements: Any, names: tuple[str, str] = ("traffics", "placements")
              ) -> tuple[list[AbstractTraffic], list[Placement]]:
    """Traffics and placements as two lists of one length (a single item broadcast against the other)."""
    traffics = as_list("traffic", names[0], traffics)
    placements = as_list("placement", names[1], placements)
    n = max(len(traffics), len(placements))
    if len(traffics) == 1:
        traffics = traffics * n
    if len(placements) == 1:
        placements = placements * n
    require(len(traffics) == len(placements), names[1], len(placements),
            f"one placement, or as many as traffics ({len(traffics)})")
    require(n > 0, names[0], 0, "at least one design point")
    return traffics, placements


DEFAULT_BLOCK_SIZE = 64
"""Points per device call of :func:`evaluator.evaluate_batch` and :func:`evaluator.jobs.evaluate_jobs`."""


def block_size_arg(block_size: Any, chunk_size: Any = None) -> tuple[int, str]:
    """``(points per device call, the name the caller gave it)``: ``block_size``, or ``chunk_size`` (its old name,
    still accepted) when only that one is given; checked (an integer >= 1)."""
    if chunk_size is None:
        return positive_int("block_size", block_size), "block_size"
    default = is_int(block_size) and int(block_size) == DEFAULT_BLOCK_SIZE  # (block_size not given)
    if not (default or (is_int(block_size) and is_int(chunk_size) and int(block_size) == int(chunk_size))):
        raise ConfigError("chunk_size", short(chunk_size), f"the same value as block_size ({block_size!r}) or no "
                                                           f"chunk_size", "chunk_size is the old name of block_size "
                                                                          "(points per device call): give one.")
    return positive_int("chunk_size", chunk_size), "chunk_size"
