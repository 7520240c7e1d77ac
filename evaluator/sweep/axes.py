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
* ``name: {zip: {key1: [...], key2: [...]}}`` several keys along one dimension, labelled
  ``key1=v1 key2=v2`` (each key by its last dotted part, longer where two would read alike);
* ``name: {product: {key1: ..., key2: ...}}`` the same as listing them;
* ``label``, next to ``zip``: a list (one label per value) or a template (``"{key1} on {key2}"``: each
  ``{key}`` is that key's value); next to ``product``: a mapping from its keys to such a list or template.
  An axis's values (a zip's rows) are distinct; user-given labels must tell them apart. docs/sweeps.md has
  the whole grammar with examples.

Nested mappings are dotted keys: ``placement: {seed: {range: [0, 8]}}`` is
``placement.seed``, so an axis can be added from the command line with
``+sweep.axes.placement.seed={range:[0,8]}``, or in Hydra's own sweep grammar
with ``placement.seed='range(0,8)'`` (also ``routing=minimal,valiant``,
``traffic.beta='choice([8,8,4],[16,8,8])'``, ``routing='glob(*)'``): the same
axis, labels and run id (:func:`evaluator.config.hydra.grammar.sweep_axes_from_overrides`).

Sizes are known before values are made: a ``range`` has
``len(range(start, stop, step))`` values, ``divisors`` of ``n`` as many as
``n`` has divisors and ``factorizations`` of ``n = prod p^e`` into ``d``
factors ``prod C(e + d - 1, d - 1)`` (both from the prime factorisation of
``n``, at most ``10^12``). With ``max_points`` (``sweep.max_points``) an axis
that would take the grid past it is refused before its values exist, naming
``sweep.axes.<key>``, the value and the sizes; so is a bad generator (a zero
step, non-integer bounds, ``n`` or ``d`` < 1, divisors of a number < 1, an
empty result).

Execution: points are grouped by network (same topology and
routing: one set of kernels each); see :mod:`evaluator.sweep.plan`.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import itertools
import math
import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..config import GROUPS
from ..config.hydra import AXIS_GENERATORS
from ..errors import ConfigError, check_memory, is_int, nearest, require

__all__ = ["Axis", "expand_axes", "optimize_axes", "label", "short_keys", "divisors", "divisor_vectors",
           "ordered_factorizations", "count_divisors", "count_factorizations", "MAX_FACTORED", "GENERATORS", "NETWORK_PREFIXES"]

NETWORK_PREFIXES = ("topology", "routing")
GENERATORS = AXIS_GENERATORS

# --------------------------------------------------------------------------------------
# Generators
# --------------------------------------------------------------------------------------


MAX_FACTORED = 10**12
"""Largest number whose divisors or factorizations a generator enumerates (trial division up to 10^6)."""


@functools.lru_cache(maxsize=1024)
def _prime_factors(n: int) -> tuple[tuple[int, int], ...]:
    """``((p, e), ...)`` with ``n = prod p^e`` (trial division; ``n <= MAX_FACTORED``)."""
    out = []
    p = 2
    while p * p <= n:
        if n % p == 0:
            e = 0
            while n % p == 0:
                n //= p
                e += 1
            out.append((p, e))
        p += 1 if p == 2 else 2
    if n > 1:
        out.append((n, 1))
    return tuple(out)


@functools.lru_cache(maxsize=1024)
def divisors(n: int) -> tuple[int, ...]:
    """The divisors of ``n >= 1`` in increasing order (from its prime factorisation)."""
    divs = [1]
    for p, e in _prime_factors(int(n)):
        divs = [d * p**k for d in divs for k in range(e + 1)]
    return tuple(sorted(divs))


def count_divisors(n: int) -> int:
    """How many divisors ``n >= 1`` has, without listing them."""
    return math.prod(e + 1 for _, e in _prime_factors(int(n)))


def count_factorizations(n: int, d: int) -> int:
    """How many ordered ``d``-tuples of positive integers have product ``n`` (``prod C(e + d - 1, d - 1)``)."""
    return math.prod(math.comb(e + d - 1, d - 1) for _, e in _prime_factors(int(n)))


def divisor_vectors(vec: Sequence[int]) -> list[tuple[int, ...]]:
    """Every vector ``d`` with ``d[k]`` dividing ``vec[k]``, in lexicographic order."""
    return list(itertools.product(*(divisors(int(v)) for v in vec)))


def ordered_factorizations(n: int, d: int) -> list[tuple[int, ...]]:
    """Every ordered ``d``-tuple of positive integers whose product is ``n``, in lexicographic order.

    Iterative (no recursion limit on ``d``); ``n`` and ``d`` must be integers >= 1.
    """
    require(is_int(n) and int(n) >= 1, "factorizations.n", n, "an integer >= 1")
    require(is_int(d) and int(d) >= 1, "factorizations.d", d, "an integer >= 1")
    n, d = int(n), int(d)
    if d == 1:
        return [(n,)]
    out: list[tuple[int, ...]] = []
    prefix: list[int] = []
    rests = [n]
    its = [iter(divisors(n))]
    while its:
        f = next(its[-1], None)
        if f is None:
            its.pop()
            rests.pop()
            if prefix:
                prefix.pop()
            continue
        rest = rests[-1] // f
        if len(its) == d - 1:
            out.append((*prefix, f, rest))
        else:
            prefix.append(f)
            rests.append(rest)
            its.append(iter(divisors(rest)))
    return out


def label(value: Any) -> str:
    """Readable coordinate label: ``(8, 8, 4)`` -> ``"8x8x4"``."""
    if isinstance(value, (list, tuple)):
        return "x".join(label(v) for v in value)
    if isinstance(value, float) and value.is_integer() and abs(value) >= 1e3:
        # six significant digits where they give the value back ("2e+09"), else as many as it takes: 1234567.0 and
        # 1234568.0 were both "1.23457e+06", one coordinate label naming two rows (until 2026-12-07)
        return next(t for t in (f"{value:.{p}g}" for p in range(6, 18)) if float(t) == value)
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
    labels_given: bool = False  # labels from the axis's ``label`` option, not made from the values

    @property
    def size(self) -> int:
        return len(self.values)

    @property
    def id_labels(self) -> tuple[str, ...]:
        """The labels a run id hashes: the given ones, else those made from the values as they were first
        written (a zip's labels joined by commas), so that how a label is shown never changes a run id."""
        if self.labels_given or len(self.keys) == 1:
            return self.labels
        return tuple(",".join(label(x) for x in row) for row in self.values)

    @property
    def is_group(self) -> bool:
        return any(k in GROUPS for k in self.keys)

    @property
    def affects_network(self) -> bool:
        """Whether the axis chooses the network (a topology or routing key)."""
        return any(k.split(".")[0] in NETWORK_PREFIXES for k in self.keys)


class _Budget:
    """The grid size so far against ``max_points``; refuses an axis before its values are made."""

    def __init__(self, max_points: int | None):
        self.max_points = max_points
        self.grid = 1

    def check(self, field: str, spec: Any, size: int, what: str = "values") -> None:
        """Refuse an axis of ``size`` values (or at least that many) that takes the grid past ``max_points``."""
        if self.max_points is not None and self.grid * size > self.max_points:
            before = f" times {self.grid:,} from the axes before it" if self.grid > 1 else ""
            raise ConfigError(field, spec, f"an axis that keeps the grid within sweep.max_points = "
                                           f"{self.max_points:,} points",
                              f"It has {size:,} {what}{before}: a grid of {self.grid * size:,} points. Shrink the "
                              f"axis or raise sweep.max_points.")

    def take(self, size: int) -> None:
        self.grid *= size


def _check_values_memory(field: str, spec: Any, count: int, width: int = 1) -> None:
    """Refuse an axis whose values and labels (about ``160 + 40 * width`` bytes each) would not fit in memory."""
    check_memory(field, spec, count * (160 + 40 * width), f"its {count:,} values and labels",
                 "Shrink the axis.")


def _resolve_ref(ref, earlier: dict[str, list], field: str):
    """A generator argument: a literal, or the name of an earlier axis (-> its values)."""
    if isinstance(ref, str):
        require(ref in earlier, field, ref, f"a literal or the key of an earlier axis: {sorted(earlier)}")
        return earlier[ref]
    return [ref]


def _whole(x: Any) -> int | None:
    """``x`` as an int when it is an integer (or an integral float), else None."""
    if is_int(x):
        return int(x)
    if isinstance(x, float) and x.is_integer():
        return int(x)
    return None


def _factorable(field: str, shown: Any, x: Any, allowed: str, hint: str | None = None) -> int:
    """An integer in ``[1, MAX_FACTORED]`` (divisors and factorizations enumerate its factors)."""
    n = _whole(x)
    if n is None or not 1 <= n <= MAX_FACTORED:
        why = (f"{x!r} is not an integer." if n is None else f"{x!r} has no divisors to enumerate." if n < 1 else
               f"{x!r} is larger than 10^12.")
        raise ConfigError(field, shown, allowed, why + (f" {hint}" if hint else ""))
    return n


_DIV_ALLOWED = "an integer in [1, 10^12] or a list of them (divisors of each entry), or the key of an earlier axis"


_RANGE_ALLOWED = ("a range {range: [start, stop, step]} or {range: {start: 0, stop: N, step: 1}} of integers "
                  "(stop excluded) with a non-zero step")


def _range(field: str, spec: Any, arg: Any) -> range:
    """The ``range`` generator's argument, checked; its length is known without listing it."""
    if isinstance(arg, dict):
        unknown = sorted(set(map(str, arg)) - {"start", "stop", "step"})
        if unknown or "stop" not in arg:
            raise ConfigError(field, spec, _RANGE_ALLOWED,
                              f"Unknown key(s) {unknown}." if unknown else "'stop' is missing.")
        bounds = [arg.get("start", 0), arg["stop"], arg.get("step", 1)]
    elif isinstance(arg, list) and 1 <= len(arg) <= 3:
        bounds = arg
    else:
        raise ConfigError(field, spec, _RANGE_ALLOWED, "Give one to three integers.")
    ints = []
    for x in bounds:
        v = _whole(x)
        if v is None:
            raise ConfigError(field, spec, _RANGE_ALLOWED, f"{x!r} is not an integer.")
        ints.append(v)
    if len(ints) == 3 and ints[2] == 0:
        raise ConfigError(field, spec, _RANGE_ALLOWED, "The step is 0.")
    return range(*ints)


def _divisors_axis(field: str, spec: dict, earlier: dict[str, list], budget: _Budget) -> list[Any]:
    arg = spec["divisors"]
    total = spec.get("total", False)
    require(isinstance(total, bool), field + ".total", total, "true or false (divisors of the product, or of each "
                                                               "entry)")
    ref = isinstance(arg, str)
    sources = _resolve_ref(arg, earlier, field + ".divisors")
    vec_field = field + ".divisors" if ref else field
    seen: set = set()
    out: list[Any] = []
    kinds = set()
    for v in sources:
        shown = v if ref else spec
        where = f"A value of axis {arg!r}." if ref else None
        if total or not isinstance(v, (list, tuple)):
            if isinstance(v, (list, tuple)):
                require(len(v) > 0, vec_field, shown, _DIV_ALLOWED, where)
                n = math.prod(_factorable(vec_field, shown, x, _DIV_ALLOWED, where) for x in v)
                n = _factorable(vec_field, shown, n, "entries whose product is at most 10^12 (total: true)", where)
            else:
                n = _factorable(vec_field, shown, v, _DIV_ALLOWED, where)
            budget.check(field, spec, count_divisors(n), "divisors")
            cand = list(divisors(n))
            kinds.add("scalar")
        else:
            require(len(v) > 0, vec_field, shown, _DIV_ALLOWED, where)
            vec = [_factorable(vec_field, shown, x, _DIV_ALLOWED, where) for x in v]
            count = math.prod(count_divisors(x) for x in vec)
            budget.check(field, spec, count, "divisor vectors")
            _check_values_memory(field, spec, count, len(vec))
            cand = [list(d) for d in divisor_vectors(vec)]
            kinds.add("vector")
        require(len(kinds) == 1, vec_field, arg, "values that are all numbers or all lists (vectors)")
        for c in cand:
            key = tuple(c) if isinstance(c, list) else c
            if key not in seen:
                seen.add(key)
                out.append(c)
        budget.check(field, spec, len(out), "distinct divisors")
    if total or (out and not isinstance(out[0], list)):
        out = sorted(out)
    else:
        out.sort(key=lambda d: (-math.prod(d), [-x for x in d]))  # denser first, as Prisacari's figures
    return out


def _factorizations_axis(field: str, spec: dict, earlier: dict[str, list], budget: _Budget) -> list[Any]:
    arg = spec["factorizations"]
    ffield = field + ".factorizations"
    require(isinstance(arg, dict) and "n" in arg and "d" in arg, ffield, arg, "a mapping {n: tasks, d: dimensions}")
    d = _whole(arg["d"])
    if d is None or d < 1:
        raise ConfigError(ffield + ".d", arg["d"], "an integer >= 1 (the number of factors)")
    ref = isinstance(arg["n"], str)
    if not ref:
        _factorable(ffield + ".n", arg["n"], arg["n"], "an integer in [1, 10^12] or the key of an earlier axis")
    ns: list[int] = []
    for v in _resolve_ref(arg["n"], earlier, ffield + ".n"):
        n = _factorable(ffield + ".n", v, v, "an integer in [1, 10^12] or the key of an earlier axis",
                        f"A value of axis {arg['n']!r}." if ref else None)
        if n not in ns:
            ns.append(n)
    count = sum(count_factorizations(n, d) for n in ns)  # distinct n: distinct products, no duplicates
    budget.check(field, spec, count, "factorizations")
    _check_values_memory(field, spec, count, d)
    out: list[Any] = []
    for n in ns:
        out.extend(list(f) for f in ordered_factorizations(n, d))
    return out


_GENERATOR_OPTIONS = {"divisors": ("total",)}
"""The keys a generator's mapping may hold beside the generator (``{divisors: other.key, total: true}``)."""


def _generate(key: str, spec: Any, earlier: dict[str, list], budget: _Budget, column: bool = False) -> list[Any]:
    """The values of one axis (or zip ``column``, whose values may repeat: its rows may not); its size is checked
    against ``budget`` before they exist."""
    field = f"sweep.axes.{key}"
    if isinstance(spec, list):
        require(len(spec) > 0, field, spec, "a non-empty list of values or a generator",
                "An empty axis would make the sweep empty.")
        budget.check(field, spec, len(spec))
        if not column:
            _check_distinct(field, spec, [label(v) for v in spec])
        return spec
    if not isinstance(spec, dict):
        return [spec]
    gens = [g for g in spec if g in GENERATORS]
    require(len(gens) == 1, field, spec, f"a list, or a mapping with exactly one generator of {list(GENERATORS)}")
    g = gens[0]
    extra = sorted(set(map(str, spec)) - {g, *_GENERATOR_OPTIONS.get(g, ())})
    require(not extra, field, spec, f"the generator {g} with its options {sorted(_GENERATOR_OPTIONS.get(g, ()))}"
            if _GENERATOR_OPTIONS.get(g) else f"the generator {g} alone (it takes no options beside it)",
            f"Unknown key(s) {extra}.")
    if g == "factorizations" and isinstance(spec[g], dict):
        extra = sorted(set(map(str, spec[g])) - {"n", "d"})
        require(not extra, field + ".factorizations", spec[g], "a mapping {n: tasks, d: dimensions}",
                f"Unknown key(s) {extra}.")
    if g == "divisors":
        out = _divisors_axis(field, spec, earlier, budget)
    elif g == "factorizations":
        out = _factorizations_axis(field, spec, earlier, budget)
    elif g == "range":
        r = _range(field, spec, spec[g])
        require(len(r) > 0, field, spec, "a range with at least one value")
        budget.check(field, spec, len(r))
        _check_values_memory(field, spec, len(r))
        return list(r)
    else:
        raise ConfigError(field, spec, "a list or one of the generators divisors, factorizations, range",
                          f"'{g}' is an axis of its own: {{{g}: {{key: ...}}}} under sweep.axes, not inside one key.")
    require(len(out) > 0, field, spec, "a generator with at least one value", "An empty axis would make the sweep "
                                                                              "empty.")
    return out


def _canonical(value: Any) -> Any:
    """A hashable form of an axis value in which equal values meet: ``1e6`` and ``1000000``, ``[8, 8, 4]`` and
    ``(8, 8, 4)``, mappings whatever their key order."""
    if isinstance(value, (bool, np.bool_)):
        return ("bool", bool(value))  # (True == 1 to Python, not to a config key)
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, (int, float, np.integer, np.floating)):
        x = float(value)
        return int(value) if x.is_integer() and abs(x) < 2**53 else x
    if isinstance(value, (list, tuple)):
        return tuple(_canonical(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((str(k), _canonical(v)) for k, v in value.items()))
    return repr(value)


def _check_distinct(field: str, values: Sequence[Any], labels: Sequence[str], check_labels: bool = True) -> None:
    """Refuse an axis (or a zip's rows) that gives one value twice: it would evaluate the same points twice and
    give the dataset a coordinate label that names two rows (``--where``, ``sel`` and the tables then mix them); and,
    with ``check_labels`` (labels made from the values), distinct values labelled alike (``8`` and ``'8'``)."""
    seen: dict[Any, int] = {}
    for i, v in enumerate(values):
        j = seen.setdefault(_canonical(v), i)
        if j != i:
            same = f"'{labels[j]}' and '{labels[i]}' are the same value" if labels[j] != labels[i] else \
                f"'{labels[i]}' is given twice"
            raise ConfigError(field, list(values) if len(values) <= 20 else labels[i], "distinct values (each once)",
                              f"Entries {j} and {i}: {same}; a repeated value evaluates the same points twice and "
                              f"gives the dataset a coordinate that names two rows.")
    shown: dict[str, int] = {}
    # distinct values that read alike (8 and '8'): one label, two rows
    for i, text in enumerate(labels if check_labels else ()):
        j = shown.setdefault(text, i)
        if j != i:
            raise ConfigError(field, list(values) if len(values) <= 20 else text,
                              "values whose labels differ (each label names one row of the dataset)",
                              f"Entries {j} and {i} ({values[j]!r} and {values[i]!r}) are both labelled '{text}'; "
                              f"give one of them in another form, or give the axis labels of its own.")


def short_keys(keys: Sequence[str]) -> list[str]:
    """Each dotted key by its last part, or by as many last parts as tell it from the others:
    ``[traffic.beta, placement.rank_order.method]`` -> ``[beta, method]``; ``[traffic.seed, placement.seed]``
    -> ``[traffic.seed, placement.seed]``."""
    parts = [k.split(".") for k in keys]
    depth = [1] * len(keys)
    while True:
        short = [".".join(p[-d:]) for p, d in zip(parts, depth)]
        same = collections.Counter(short)
        clash = [i for i, s in enumerate(short) if same[s] > 1 and depth[i] < len(parts[i])]
        if not clash:
            return short
        for i in clash:
            depth[i] += 1


_TEMPLATE_KEY = re.compile(r"\{([^{}]+)\}")


def _labelled(field: str, ax: Axis, given: Any) -> Axis:
    """``ax`` with the user's labels: a list (one per value) or a template whose ``{key}`` are the values'
    labels (``"{traffic.beta} on {topology.midplanes}"``)."""
    allowed = (f"a list of {ax.size} distinct labels (one per value) or a template naming keys of the axis "
               f"({', '.join('{' + k + '}' for k in ax.keys)})")
    if isinstance(given, str):
        unknown = [k for k in _TEMPLATE_KEY.findall(given) if k not in ax.keys]
        require(not unknown and _TEMPLATE_KEY.search(given) is not None, field, given, allowed,
                f"Unknown key(s) {unknown}." if unknown else "Name at least one key in braces.")
        labels = tuple(_TEMPLATE_KEY.sub(lambda m: label(row[ax.keys.index(m.group(1))]), given)
                       for row in ax.values)
    elif isinstance(given, list):
        require(len(given) == ax.size and all(isinstance(x, (str, int, float)) and not isinstance(x, bool)
                                              for x in given), field, given, allowed,
                f"The axis has {ax.size} values." if len(given) != ax.size else None)
        labels = tuple(str(x) for x in given)
    else:
        raise ConfigError(field, given, allowed)
    dup = sorted(k for k, c in collections.Counter(labels).items() if c > 1)
    require(not dup, field, given, allowed, f"{dup} label(s) more than one value: a label must name one value.")
    comma = [x for x in labels if "," in x]
    require(not comma, field, given, allowed + ", without commas",
            f"{comma}: a label with a comma could never be selected (--where splits its values on commas).")
    return dataclasses.replace(ax, labels=labels, labels_given=True)


def _only(name: str, spec: dict, generator: str) -> None:
    extra = sorted(set(map(str, spec)) - {generator, "label"})
    require(not extra, f"sweep.axes.{name}", spec, f"{{{generator}: {{...}}}} with an optional label",
            f"Unknown key(s) {extra}.")


GENERATOR_FORMS = ("{range: [start, stop, step]}, {divisors: [8, 8, 4]} (or a number, or an earlier axis's key), "
                   "{factorizations: {n: 64, d: 3}}; zip and product name an axis of their own "
                   "(NAME: {zip: {key1: [...], key2: [...]}})")
"""The generators of ``sweep.axes``, as the refusal of a mistyped one lists them (docs/sweeps.md has them all)."""


def _check_nested(key: str, spec: dict, holds: tuple[str, bool] | None) -> None:
    """Refuse a mapping without a generator (``{foo: 1}``, ``{rnge: [0, 8]}``) given to a key that holds no keys
    (``holds``: the words for its type, and whether it is a list, whose items ``key.0`` are keys): a mistyped
    generator, not nested keys (the axis ``key.foo``, unknown)."""
    if holds is None or (holds[1] and all(re.fullmatch(r"\d+", str(k)) for k in spec)):
        return
    typed = [k for k in map(str, spec) if k not in GENERATORS]
    guess = next((m for m in (nearest(k, GENERATORS) for k in typed) if m), None)
    raise ConfigError(f"sweep.axes.{key}", spec, f"a list of values, or a mapping with one generator: "
                      f"{GENERATOR_FORMS}",
                      f"{', '.join(map(repr, typed))} "
                      f"{'is not a generator' if len(typed) == 1 else 'are not generators'}"
                      f", and {key} holds no keys ({holds[0]}). {guess + ' ' if guess else ''}See docs/sweeps.md.")


def _flatten_axes(axes_cfg: dict[str, Any], prefix: str = "", leaf_type=None) -> dict[str, Any]:
    """Nested mappings become dotted keys, so ``+sweep.axes.placement.seed={range:[0,8]}`` works
    from the command line; a mapping holding a generator is a leaf. ``leaf_type(key)``: ``(words, is_list)`` for
    a dotted key of the config that holds no keys (its type in words, and whether it is a list), None for any
    other, to refuse a mapping without a generator under such a key (:func:`_check_nested`)."""
    out: dict[str, Any] = {}
    for k, v in axes_cfg.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict) and v and not any(g in v for g in GENERATORS):
            if leaf_type is not None:
                _check_nested(key, v, leaf_type(key))
            out.update(_flatten_axes(v, key + ".", leaf_type))
        else:
            out[key] = v
    return out


def expand_axes(axes_cfg: dict[str, Any], max_points: int | None = None, leaf_type=None) -> list[Axis]:
    """Expand the ``sweep.axes`` mapping into :class:`Axis` objects (see module docstring).

    With ``max_points``, each axis's size is computed (arithmetically where it
    can be) and the grid checked against it before the axis's values are made. With ``leaf_type(key)`` (the type
    of a dotted key that holds no keys: :func:`_flatten_axes`), a mistyped generator under a key is refused as
    such (:func:`_check_nested`).
    """
    require(isinstance(axes_cfg, dict) and len(axes_cfg) > 0, "sweep.axes", axes_cfg,
            "a non-empty mapping of config keys to values or generators")
    return _expand(axes_cfg, _Budget(max_points), leaf_type)


def _expand(axes_cfg: dict[str, Any], budget: _Budget, leaf_type=None) -> list[Axis]:
    require(isinstance(axes_cfg, dict) and len(axes_cfg) > 0, "sweep.axes", axes_cfg,
            "a non-empty mapping of config keys to values or generators")
    axes_cfg = _flatten_axes(_plain(axes_cfg), leaf_type=leaf_type)
    earlier: dict[str, list] = {}
    axes: list[Axis] = []
    for name, spec in axes_cfg.items():
        spec = _plain(spec)
        if isinstance(spec, dict) and "product" in spec:
            _only(name, spec, "product")
            sub = _expand(spec["product"], budget, leaf_type)
            given = spec.get("label")
            if given is not None:
                keys = [ax.name for ax in sub]
                require(isinstance(given, dict) and set(given) <= set(keys), f"sweep.axes.{name}.label", given,
                        f"a mapping from axes of the product ({', '.join(keys)}) to a list of labels or a template")
                sub = [_labelled(f"sweep.axes.{name}.label.{ax.name}", ax, given[ax.name]) if ax.name in given
                       else ax for ax in sub]
            for ax in sub:
                for k, vals in zip(ax.keys, zip(*ax.values)):
                    earlier[k] = list(vals)
            axes.extend(sub)
            continue
        if isinstance(spec, dict) and "zip" in spec:
            _only(name, spec, "zip")
            z = spec["zip"]
            require(isinstance(z, dict) and len(z) > 0, f"sweep.axes.{name}.zip", z, "a mapping of keys to lists")
            cols = {k: _generate(k, _plain(v), earlier, budget, column=True) for k, v in z.items()}
            lens = {k: len(v) for k, v in cols.items()}
            require(len(set(lens.values())) == 1, f"sweep.axes.{name}.zip", lens, "lists of equal length")
            keys = tuple(cols)
            values = tuple(zip(*cols.values()))
            short = short_keys(keys)
            labels = tuple(" ".join(f"{s}={label(x)}" for s, x in zip(short, row)) for row in values)
            _check_distinct(f"sweep.axes.{name}.zip", values, labels, check_labels=spec.get("label") is None)
            for k in keys:
                earlier[k] = cols[k]
            ax = Axis(name, keys, values, labels)
            if spec.get("label") is not None:
                ax = _labelled(f"sweep.axes.{name}.label", ax, spec["label"])
            axes.append(ax)
            budget.take(len(values))
            continue
        vals = _generate(name, spec, earlier, budget)
        earlier[name] = vals
        axes.append(Axis(name, (name,), tuple((v,) for v in vals), tuple(label(v) for v in vals)))
        budget.take(len(vals))
    keys = [k for ax in axes for k in ax.keys]
    counts = collections.Counter(keys)
    dup = sorted(k for k, c in counts.items() if c > 1)
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
