"""The counter-based generator of random placements: the same placement from a seed everywhere.

Generator ``threefry`` (the default of every seeded placement): each random
choice is a pure function of ``(seed, stream, i)``, computed with
Threefry-2x32 (20 rounds; Salmon et al., "Parallel random numbers: as easy
as 1, 2, 3", SC'11 -- the counter-based generator behind ``jax.random``),
keyed by the seed (``key = (seed mod 2^32, seed div 2^32)``, seeds in
``[0, 2^64)``) with the counter ``(stream, i)``. Item ``i`` of a
stream gets the 32-bit word ``w`` number ``i mod 2`` of the output for counter
``(stream, i div 2)`` and the sort key ``w * 2^32 + j`` (``j = i``, or ``i mod m``
where a stream is cut into rows of ``m`` items); the random permutation
``pi`` of ``m`` items maps item ``j`` to the rank of its key among the ``m``
keys (a uniformly random permutation; items whose words tie, with
probability below ``m^2 / 2^33``, keep their index order), and ``k`` items
chosen without replacement are ``pi(0), ..., pi(k-1)``. Only unsigned
32-bit additions, rotations and exclusive ors and a sort of distinct 64-bit
integers are involved, so NumPy on the host and JAX inside a jitted call, on
CPU or GPU, give bit-identical placements; the items of a stream do not
depend on how many are drawn, so padding a batch to a shape bucket changes
nothing. Each seeded kind documents its streams (``_dragonfly_cartesian``,
``_dragonfly_random``, ``_random``).

Generator ``numpy`` is the earlier reference: NumPy's ``default_rng(seed)``
(PCG64) drawing the same choices in a loop on the host. Both give the same
distribution (checked statistically by ``tests/test_device_placement.py``);
a seed gives different placements under the two.

A :class:`SeededPlacement` is a placement with everything decided but the
seed: :meth:`SeededPlacement.placement` draws one on the host, and a sweep
evaluates ``generate(xp, k0, k1, params, static, size)`` (``xp``: ``jax.numpy``)
inside its jitted call, so points that differ only in their seed share one
host-side build.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np

from .._threefry import threefry2x32  # noqa: F401  (re-exported: tests and callers read it here)
from .._types import Int, UInt
from ..errors import is_int, require
from .base import Placement

__all__ = ["GENERATORS", "DEFAULT_GENERATOR", "GENERATOR_ID", "SeededPlacement", "threefry2x32", "permutation",
           "sort_keys", "ranks", "rank_type", "MAX_ITEMS",
           "check_generator", "check_seed", "seed_words", "MAX_SEED"]

GENERATORS = ("threefry", "numpy")
"""Values of ``placement.generator`` for seeded kinds."""

DEFAULT_GENERATOR = "threefry"

GENERATOR_ID = "threefry2x32-20/rank-v1"
"""What a sweep dataset records (``attrs['placement_generator']``) for the ``threefry`` generator."""

MAX_SEED = 2**64 - 1

MAX_ITEMS = 2**32
"""The most items one threefry stream draws: the sort key ``w * 2^32 + j`` holds the item's index ``j`` in 32
bits and the counter ``i div 2`` is one 32-bit word (past it keys repeat and the permutation is wrong)."""


def _words(xp, k0, k1, stream: int, n: int):
    """The 32-bit random words of items ``0 .. n-1`` of ``stream``: item ``i`` is word ``i mod 2`` of the
    Threefry output for counter ``(stream, i div 2)``."""
    if n > MAX_ITEMS:  # the 32-bit counter i div 2 and index j would wrap: keys repeat, the ranks go wrong
        raise ValueError(f"threefry draws at most {MAX_ITEMS:,} items of a stream (2^32), not {n:,}")
    c = xp.arange((n + 1) // 2, dtype=xp.uint32)
    w0, w1 = threefry2x32(xp, k0, k1, xp.full(c.shape[0], stream, dtype=xp.uint32), c)
    return xp.stack([w0, w1], axis=-1).reshape(-1)[:n]


def sort_keys(xp, k0, k1, stream: int, m: int, rows: int | None = None):
    """``uint64`` keys ``w * 2^32 + j`` of the items of ``stream``, shape ``[m]`` (or ``[rows, m]``: item
    ``i = r * m + j`` of the stream is entry ``[r, j]``); ``w`` its random word (:func:`_words`)."""
    n = m if rows is None else rows * m
    w = _words(xp, k0, k1, stream, n)
    j = xp.arange(n, dtype=xp.uint32) % xp.uint32(m)
    key = (w.astype(xp.uint64) << xp.uint64(32)) | j.astype(xp.uint64)
    return key if rows is None else key.reshape(rows, m)


_PAIRWISE_MAX = 64
"""Up to this many items, JAX ranks by comparing every pair (faster than XLA's sort on CPU)."""


def rank_type(xp, m: int, rows: int = 1):
    """The integer type of the ranks of ``m`` items (``rows`` rows of them): ``int32`` while ranks and the flat
    row offsets stay below ``2^31`` (every draw of a machine with under ~130 GB: 64 bytes a slot), else ``int64``
    (the ranks of 2^31 slots or more wrapped negative in int32)."""
    return xp.int32 if m * max(rows, 1) < 2**31 else xp.int64


def ranks(xp, key):
    """``rank[..., j]``: how many entries of the last axis of ``key`` are smaller than entry ``j`` (distinct
    keys: a permutation of ``0 .. m-1``), ``int32`` (``int64`` past ``2^31`` items, :func:`rank_type`)."""
    m = key.shape[-1]
    it = rank_type(xp, m, key.size // max(m, 1))
    if xp is np:
        order = np.argsort(key, axis=-1, kind="stable")
        out = np.empty(key.shape, it)
        np.put_along_axis(out, order, np.broadcast_to(np.arange(m, dtype=it), key.shape), axis=-1)
        return out
    if m <= _PAIRWISE_MAX:
        return (key[..., None, :] < key[..., :, None]).sum(-1, dtype=it)
    order = xp.argsort(key, axis=-1, stable=True).astype(it)
    flat_order = order.reshape(-1, m)
    r = xp.arange(flat_order.shape[0], dtype=it)[:, None]
    out = xp.zeros(flat_order.shape, it).at[r, flat_order].set(
        xp.broadcast_to(xp.arange(m, dtype=it), flat_order.shape))
    return out.reshape(key.shape)


def permutation(xp, k0, k1, stream: int, m: int, rows: int | None = None):
    """The random permutation ``pi`` of ``m`` items of ``stream`` (``rows`` of them if given), ``int32``.

    ``pi[j]`` is the rank of item ``j``'s key (:func:`sort_keys`) among the
    ``m`` keys: a uniformly random permutation of ``0 .. m-1`` (items whose
    32-bit words tie keep their index order).
    """
    return ranks(xp, sort_keys(xp, k0, k1, stream, m, rows))


def check_generator(value: Any) -> str:
    require(isinstance(value, str) and value in GENERATORS, "placement.generator", value,
            f"one of {list(GENERATORS)}",
            "threefry: the counter-based generator (the same placement on the host and the device); "
            "numpy: NumPy's default_rng (PCG64), the earlier reference.")
    return value


def check_seed(value: Any, generator: str = DEFAULT_GENERATOR) -> int:
    """A seed for ``generator``: an integer >= 0 (below 2^64 for ``threefry``), returned as ``int``."""
    if generator == "numpy":
        ok, allowed = is_int(value) and int(value) >= 0, "an integer >= 0 (a NumPy default_rng seed)"
    else:
        ok, allowed = is_int(value) and 0 <= int(value) <= MAX_SEED, "an integer in [0, 2^64) (a threefry key)"
    require(ok, "placement.seed", value, allowed,
            "Seeds are 0, 1, 2, ...; use a different non-negative integer for another random draw.")
    return int(value)


def seed_words(seeds) -> tuple[UInt[np.ndarray, "*point"] | np.uint32, UInt[np.ndarray, "*point"] | np.uint32]:
    """``(k0, k1)``: the Threefry key words (``uint32``) of seeds in ``[0, 2^64)`` (scalar or array: NumPy scalars
    for a scalar seed)."""
    s = np.asarray(seeds, dtype=np.uint64)
    return (s & np.uint64(0xFFFFFFFF)).astype(np.uint32), (s >> np.uint64(32)).astype(np.uint32)


Generate = Callable[..., Any]


@dataclasses.dataclass(frozen=True, eq=False)
class SeededPlacement:
    """A seeded placement with everything decided but the seed.

    Attributes
    ----------
    generate
        ``generate(xp, k0, k1, params, static, size) -> task_node: Int[Array, "task"]``
        (``int32``, ``size`` entries: the task count padded to a bucket; the
        entries of padding tasks are some valid node), for NumPy or
        ``jax.numpy``; a module-level function of the kind, so that it can key
        a compilation.
    static
        Integers the generator's shapes depend on (a compilation key): e.g.
        the group count and nodes per group.
    task_params
        ``int32`` arrays over tasks (``[n_tasks]``; padded to a task bucket
        with zeros in a batch: padding tasks get some valid node).
    scalars
        Per-placement integers (``int32`` in a batch).
    n_tasks, n_nodes, name
        As :class:`~evaluator.placement.Placement`.
    """

    generate: Generate
    static: tuple[int, ...]
    task_params: dict[str, Int[np.ndarray, "task"]]
    scalars: dict[str, int]
    n_tasks: int
    n_nodes: int
    name: str

    @property
    def key(self) -> tuple:
        """What a compiled generator depends on: the function and its static shapes."""
        return (self.generate, self.static, tuple(sorted(self.task_params)), tuple(sorted(self.scalars)))

    def params(self, n_tasks: int | None = None) -> dict[str, Int[np.ndarray, "*task"]]:
        """The generator's parameters, task arrays padded to ``n_tasks`` (default: this placement's)."""
        T = self.n_tasks if n_tasks is None else int(n_tasks)
        out: dict[str, np.ndarray] = {}
        for k, v in self.task_params.items():
            a = np.zeros(T, np.int32)
            a[: self.n_tasks] = v
            out[k] = a
        for k, v in self.scalars.items():
            out[k] = np.int32(v)
        return out

    def placement(self, seed: int) -> Placement:
        """The placement of ``seed`` (checked: an integer in ``[0, 2^64)``), drawn on the host with NumPy."""
        seed = check_seed(seed)
        k0, k1 = seed_words(seed)
        with np.errstate(over="ignore"):
            tn = self.generate(np, k0, k1, self.params(), self.static, self.n_tasks)
        return Placement(np.asarray(tn, dtype=np.int64), self.n_nodes, f"{self.name} (seed={seed})")
