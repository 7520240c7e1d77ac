"""Axis values no point of a sweep accepts, refused when the sweep is planned (:func:`check_axis_values`).

A value of a ``topology``, ``routing`` or ``traffic`` key that every point refuses (``traffic.bytes: -5``,
``topology.wrap: maybe``) was planned until 2026-12-07, and every point with it stored as infeasible; it is now
refused before any work, naming the axis, the key and the value.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ..config import has_jobs
from ..errors import ConfigError

__all__ = ["check_axis_values", "listed_keys"]

SEED_KEY = "placement.seed"
"""The key whose axis workers vectorise over (points differing only in it share one build); seeds are every
point's own check here."""


def listed_keys(axes_cfg) -> set[str]:
    """The axes whose values the user listed one by one (``[1e6, -5]``), not made by a generator (``divisors``,
    ``factorizations``, ``range``, ``product``, ``zip``): a generator's values may hold ones no point accepts by
    design (the divisors of a task grid that no Dragonfly group holds), which the points report."""
    from .axes import _flatten_axes

    try:
        flat = _flatten_axes(dict(axes_cfg))
    except ConfigError:  # (refused by the axes' own checks already)
        return set()
    return {k for k, v in flat.items() if isinstance(v, (list, tuple))}


_SECTIONS = ("topology", "routing", "traffic")
"""The sections whose axis values :func:`check_axis_values` builds. A placement's refusals weigh it against the
network and the traffic (``|gamma| <= a*p``, tasks per node): the points' to report, as too many tasks for one
machine is."""


def check_axis_values(plan, listed: set[str]) -> None:
    """Refuse, before any work, an axis value of a ``topology``, ``routing`` or ``traffic`` key (:data:`_SECTIONS`)
    that no point of the sweep accepts: a value of the wrong type under a key typed ``Any`` (``traffic.offset: abc``,
    ``topology.wrap: maybe``), or of the right type but out of range at any point (``traffic.bytes: -5``,
    ``topology.link_bandwidth: -1``), and such a value inside a group axis's values (``{kind: shift, bytes: -5}``).
    Until 2026-12-07 such a value was planned and every point with it stored as infeasible.

    Each distinct value of each such key is built once, with the builders the workers use (the key's section only:
    the routing; the topology; the traffic on its topology), at the point whose
    other axes are at their first values. Where that build refuses the key itself, the value is tried again with
    each value of every other axis in turn, and refused only where every trial refuses the key: a value that some
    point accepts (too many tasks for one machine of the sweep, not for another) stays, its other points
    infeasible. Values a generator made (``listed``: the axes whose values were listed), several-jobs points,
    seeds and refusals of an item of a key are left to the points."""
    builds: dict = {}
    for i, ax in enumerate(plan.axes):
        if ax.name not in listed:
            continue
        for kk, key in enumerate(ax.keys):
            section = key.split(".")[0]
            if section not in _SECTIONS or key == SEED_KEY or key.endswith(".seed"):
                continue  # (seeds: every point's own check, evaluator.sweep.worker; their axes are long)
            seen: set[str] = set()
            for j, row in enumerate(ax.values):
                value = row[kk]
                sig = repr(value)
                if sig in seen:
                    continue
                seen.add(sig)
                exc = _value_refusal(plan, builds, i, j, key, value, section)
                if exc is None:
                    continue
                where = f" (axis {ax.name!r})" if ax.name != key else ""
                raise ConfigError(f"sweep.axes.{key}", value, exc.allowed,
                                  f"No point of the sweep accepts it{where}: building the {section} refuses "
                                  f"{exc.field} = {exc.value!r} at every point tried, so its points would all be "
                                  f"infeasible. {exc.hint or ''} Drop it from the axis or correct it.".replace("  ", " "))


def _trial(plan, at: dict[int, int]):
    """The point config with the axes of ``at`` (axis -> value index) there and every other axis at its first value."""
    idx = [at.get(a, 0) for a in range(len(plan.axes))]
    return plan.point_config(int(np.ravel_multi_index(idx, plan.shape)))


def _value_refusal(plan, builds: dict, i: int, j: int, key: str, value, section: str) -> ConfigError | None:
    """The refusal of the value ``value`` (index ``j`` of axis ``i``) of ``key`` that every trial point gives
    (:func:`check_axis_values`), None where some trial accepts it or refuses something else."""
    first = None
    trials = [{i: j}] + [{i: j, a: v} for a in range(len(plan.axes)) if a != i for v in range(1, plan.axes[a].size)]
    for at in trials:
        cfg = _trial(plan, at)
        if has_jobs(cfg):
            return None
        exc = _section_refusal(cfg, section, builds)
        if exc is None or not _about(exc, key, value):
            return None
        first = first or exc
    return first


def _about(exc: ConfigError, key: str, value) -> bool:
    """Whether the refusal ``exc`` names ``key`` itself (not an item of it: ``placement.gamma[0]``, a divisor of
    another key's item, is a relation the points decide), or, for a group axis's value (a mapping), one of the
    keys the value gives."""
    if type(exc) is not ConfigError:  # (an ignored key, a working set too large: the points' own)
        return False
    if isinstance(value, Mapping) and key in _SECTIONS:
        return exc.field in {f"{key}.{k}" for k in value if k != "kind"}
    return exc.field == key


def _section_refusal(cfg, section: str, builds: dict) -> ConfigError | None:
    """The :class:`ConfigError` building ``section`` of the point config ``cfg`` raises (None: it builds), by the
    builders the workers use; topologies and traffics are built once per distinct config (``builds``)."""
    from ..config import build_routing_spec, build_topology, build_traffic

    def once(k, make):
        if k not in builds:
            try:
                builds[k] = make()
            except ConfigError as exc:
                exc.__traceback__ = None
                builds[k] = exc
        if isinstance(builds[k], ConfigError):
            raise builds[k]
        return builds[k]

    try:
        if section == "routing":
            once(("routing", repr(cfg.routing)), lambda: build_routing_spec(cfg.routing))
            return None
        tkey = repr(cfg.topology)
        topo = once(("topology", tkey), lambda: build_topology(cfg.topology))
        if section == "topology":
            return None
        once(("traffic", tkey, repr(cfg.traffic)), lambda: build_traffic(cfg.traffic, topo) is not None)  # (not kept)
        return None
    except ConfigError as exc:
        return exc
