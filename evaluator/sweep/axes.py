"""The sweep axis grammar: config keys mapped to values or generators.

A sweep names *axes*: config keys mapped to a list of values or to a
generator. The grid is the Cartesian product of the axes (a ``zip`` axis moves
several keys together along one dimension). Every point of the grid is built
(config -> build) and evaluated; points whose config is invalid (a gamma that
does not divide beta, a placement that does not fit...) are kept with
``feasible = False`` and a ``reason`` instead of stopping the sweep.

Axis syntax (in ``sweep.axes``; order matters, later generators may refer to
earlier axes):

* ``key: [v1, v2, ...]`` literal values; ``key`` is a dotted config key
  (``placement.gamma``) or a config group (``routing``: option names);
* ``key: {divisors: [8, 8, 4]}`` every vector dividing the given one, or
  ``{divisors: other.key}``: every divisor of every value of an earlier axis;
  ``{divisors: other.key, total: true}``: divisors of the product (a scalar);
* ``key: {factorizations: {n: 64, d: 3}}`` ordered factorizations of ``n``
  into ``d`` factors (``n`` may name an earlier axis);
* ``key: {range: [start, stop, step]}`` (``stop`` excluded);
* ``name: {zip: {key1: [...], key2: [...]}}`` several keys along one dimension;
* ``name: {product: {key1: ..., key2: ...}}`` the same as listing them.

Nested mappings are dotted keys: ``placement: {seed: {range: [0, 8]}}`` is
``placement.seed``, so an axis can be added from the command line with
``+sweep.axes.placement.seed={range:[0,8]}``.

Execution: points are grouped into shape buckets (same topology and
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..config import GROUPS
from ..errors import ConfigError, require

__all__ = ["Axis", "expand_axes", "optimize_axes", "label", "divisor_vectors", "ordered_factorizations",
           "GENERATORS", "BUCKET_PREFIXES"]

BUCKET_PREFIXES = ("topology", "routing")
GENERATORS = ("divisors", "factorizations", "range", "zip", "product")

# --------------------------------------------------------------------------------------
# Generators
# --------------------------------------------------------------------------------------


def divisor_vectors(vec: Sequence[int]) -> list[tuple[int, ...]]:
    """Every vector ``d`` with ``d[k]`` dividing ``vec[k]``, in lexicographic order."""
    return list(itertools.product(*([d for d in range(1, int(v) + 1) if int(v) % d == 0] for v in vec)))


def ordered_factorizations(n: int, d: int) -> list[tuple[int, ...]]:
    """Every ordered ``d``-tuple of positive integers whose product is ``n``."""
    if d == 1:
        return [(n,)]
    out = []
    for f in range(1, n + 1):
        if n % f == 0:
            out.extend((f,) + rest for rest in ordered_factorizations(n // f, d - 1))
    return out


def label(value: Any) -> str:
    """Readable coordinate label: ``(8, 8, 4)`` -> ``"8x8x4"``."""
    if isinstance(value, (list, tuple)):
        return "x".join(label(v) for v in value)
    if isinstance(value, float) and value.is_integer() and abs(value) >= 1e3:
        return f"{value:.6g}"
    return str(value)


def _plain(v):
    """Tuples, lists and NumPy scalars -> plain lists / scalars."""
    if isinstance(v, (tuple, list)):
        return [_plain(x) for x in v]
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, np.generic):
        return v.item()
    return v

@dataclasses.dataclass(frozen=True)
class Axis:
    """One dimension of the sweep grid.

    ``keys`` are the config keys it sets (several for a ``zip``), ``values[i]``
    the tuple of values (one per key) at coordinate ``i``, ``labels[i]`` its
    readable label.
    """

    name: str
    keys: tuple[str, ...]
    values: tuple[tuple[Any, ...], ...]
    labels: tuple[str, ...]

    @property
    def size(self) -> int:
        return len(self.values)

    @property
    def is_group(self) -> bool:
        return any(k in GROUPS for k in self.keys)

    @property
    def affects_bucket(self) -> bool:
        return any(k.split(".")[0] in BUCKET_PREFIXES for k in self.keys)


def _resolve_ref(ref, earlier: dict[str, list], field: str):
    """A generator argument: a literal, or the name of an earlier axis (-> its values)."""
    if isinstance(ref, str):
        require(ref in earlier, field, ref, f"a literal or the key of an earlier axis: {sorted(earlier)}")
        return earlier[ref]
    return [ref]


def _generate(key: str, spec: Any, earlier: dict[str, list]) -> list[Any]:
    field = f"sweep.axes.{key}"
    if isinstance(spec, list):
        require(len(spec) > 0, field, spec, "a non-empty list of values or a generator",
                "An empty axis would make the sweep empty.")
        return spec
    if not isinstance(spec, dict):
        return [spec]
    gens = [g for g in spec if g in GENERATORS]
    require(len(gens) == 1, field, spec, f"a list, or a mapping with exactly one generator of {list(GENERATORS)}")
    g = gens[0]
    arg = spec[g]
    if g == "divisors":
        total = bool(spec.get("total", False))
        out: list[Any] = []
        for v in _resolve_ref(arg, earlier, field + ".divisors"):
            if total or not isinstance(v, (list, tuple)):
                n = math.prod(v) if isinstance(v, (list, tuple)) else int(v)
                cand = [d for d in range(1, n + 1) if n % d == 0]
            else:
                cand = [list(d) for d in divisor_vectors(v)]
            out.extend(c for c in cand if c not in out)
        if total or (out and not isinstance(out[0], list)):
            out = sorted(out)
        else:
            out.sort(key=lambda d: (-math.prod(d), [-x for x in d]))  # denser first, as Prisacari's figures
        return out
    if g == "factorizations":
        require(isinstance(arg, dict) and "n" in arg and "d" in arg, field + ".factorizations", arg,
                "a mapping {n: tasks, d: dimensions}")
        out = []
        for n in _resolve_ref(arg["n"], earlier, field + ".factorizations.n"):
            for f in ordered_factorizations(int(n), int(arg["d"])):
                if list(f) not in out:
                    out.append(list(f))
        return out
    if g == "range":
        a = arg if isinstance(arg, list) else [arg.get("start", 0), arg["stop"], arg.get("step", 1)]
        vals = list(range(*[int(x) for x in a]))
        require(len(vals) > 0, field, spec, "a range with at least one value")
        return vals
    raise AssertionError(g)  # zip/product handled by the caller


def _flatten_axes(axes_cfg: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested mappings become dotted keys, so ``+sweep.axes.placement.seed={range:[0,8]}`` works
    from the command line; a mapping holding a generator is a leaf."""
    out: dict[str, Any] = {}
    for k, v in axes_cfg.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict) and v and not any(g in v for g in GENERATORS):
            out.update(_flatten_axes(v, key + "."))
        else:
            out[key] = v
    return out


def expand_axes(axes_cfg: dict[str, Any]) -> list[Axis]:
    """Expand the ``sweep.axes`` mapping into :class:`Axis` objects (see module docstring)."""
    require(isinstance(axes_cfg, dict) and len(axes_cfg) > 0, "sweep.axes", axes_cfg,
            "a non-empty mapping of config keys to values or generators")
    axes_cfg = _flatten_axes(_plain(axes_cfg))
    earlier: dict[str, list] = {}
    axes: list[Axis] = []
    for name, spec in axes_cfg.items():
        spec = _plain(spec)
        if isinstance(spec, dict) and "product" in spec:
            sub = expand_axes(spec["product"])
            for ax in sub:
                for k, vals in zip(ax.keys, zip(*ax.values)):
                    earlier[k] = list(vals)
            axes.extend(sub)
            continue
        if isinstance(spec, dict) and "zip" in spec:
            z = spec["zip"]
            require(isinstance(z, dict) and len(z) > 0, f"sweep.axes.{name}.zip", z, "a mapping of keys to lists")
            cols = {k: _generate(k, _plain(v), earlier) for k, v in z.items()}
            lens = {k: len(v) for k, v in cols.items()}
            require(len(set(lens.values())) == 1, f"sweep.axes.{name}.zip", lens, "lists of equal length")
            keys = tuple(cols)
            values = tuple(zip(*cols.values()))
            labels = tuple(",".join(label(x) for x in row) for row in values)
            for k in keys:
                earlier[k] = cols[k]
            axes.append(Axis(name, keys, values, labels))
            continue
        vals = _generate(name, spec, earlier)
        earlier[name] = vals
        axes.append(Axis(name, (name,), tuple((v,) for v in vals), tuple(label(v) for v in vals)))
    keys = [k for ax in axes for k in ax.keys]
    dup = sorted({k for k in keys if keys.count(k) > 1})
    require(not dup, "sweep.axes", dup, "each config key swept once", "Two axes set the same key.")
    for k in keys:
        for other in keys:
            if other != k and other.startswith(k + "."):
                raise ConfigError("sweep.axes", [k, other], "axes that do not overlap",
                                  f"'{k}' replaces the whole of '{other}'; sweep one or the other.")
    names = [ax.name for ax in axes]
    require(len(set(names)) == len(names), "sweep.axes", names, "distinct axis names")
    return axes


def optimize_axes(n_tasks: int, n_dims: int, routings: Sequence[str],
                  placement: str = "dragonfly_cartesian") -> dict[str, Any]:
    """Axes of Prisacari's selection procedure (Sec. 4.4), exhaustive: every decomposition
    beta of ``n_tasks`` into ``n_dims`` factors, every gamma dividing it (Cartesian
    placement), every routing."""
    axes: dict[str, Any] = {"traffic.beta": {"factorizations": {"n": int(n_tasks), "d": int(n_dims)}}}
    if placement == "dragonfly_cartesian":
        axes["placement.gamma"] = {"divisors": "traffic.beta"}
    axes["routing"] = list(routings)
    return axes
