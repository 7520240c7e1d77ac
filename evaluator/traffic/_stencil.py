"""Nearest-neighbour stencil with a domain decomposition (Prisacari Sec. 3.2)."""

from __future__ import annotations

import itertools
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from .._types import ConfigOf, Float
from ..errors import check_memory, positive_float, positive_int, require
from .base import PhasedTraffic, Traffic, TrafficKind

__all__ = ['stencil', 'stencil_message_sizes', 'check_grid', 'StencilConfig', 'STENCIL', 'STENCIL_EXCHANGES',
           'STENCIL_NEIGHBOURS']

STENCIL_EXCHANGES = ("all_at_once", "per_dimension")
"""How a stencil exchanges its dimensions: every face at once (one exchange), or one dimension after another
(one phase per dimension, ``dim0``, ``dim1``, ...; a dimension with ``beta_k = 1`` is an empty phase)."""

STENCIL_NEIGHBOURS = ("faces", "full")
"""Which neighbours a task sends to: the ``2d`` face neighbours (a 7-point stencil in 3-D), or all ``3^d - 1``
(faces, edges and corners: a 27-point stencil in 3-D, a 9-point one in 2-D)."""


def check_grid(alpha, beta, field="traffic"):
    require(isinstance(alpha, (list, tuple, np.ndarray)) and len(alpha) >= 1, f"{field}.alpha", alpha,
            "a non-empty list of positive integers (elements per dimension)")
    require(isinstance(beta, (list, tuple, np.ndarray)) and len(beta) == len(alpha), f"{field}.beta", beta,
            f"a list of {len(alpha)} positive integers (tasks per dimension), as many as alpha")
    al = tuple(positive_int(f"{field}.alpha[{k}]", v) for k, v in enumerate(alpha))
    be = tuple(positive_int(f"{field}.beta[{k}]", v) for k, v in enumerate(beta))
    for k, (x, y) in enumerate(zip(al, be)):
        require(x % y == 0, f"{field}.beta[{k}]", y, f"a divisor of alpha[{k}] = {x}",
                "Each task must hold a whole number of elements.")
    return al, be


def stencil_message_sizes(alpha: Sequence[int], beta: Sequence[int], bytes_per_element: float
                          ) -> Float[np.ndarray, "dim"]:
    """Message size per dimension, Prisacari Eq. (8): the shared face in bytes.

    ``mu_k = bytes_per_element * prod_{i != k} alpha_i / beta_i``.
    """
    al, be = check_grid(alpha, beta)
    bytes_per_element = positive_float("traffic.bytes_per_element", bytes_per_element)
    sub = [x // y for x, y in zip(al, be)]
    return np.array([_shared_bytes(bytes_per_element, [s for i, s in enumerate(sub) if i != k], al)
                     for k in range(len(al))], dtype=np.float64)


def _shared_bytes(bpe: float, sides: Sequence[int], alpha: Sequence[int]) -> float:
    """``bpe * prod(sides)`` bytes, refused unless finite (sides past 1.8e308 elements crashed with an
    OverflowError; bytes past it gave infinite messages, refused later as ``traffic.nbytes``)."""
    try:
        v = bpe * float(math.prod(sides))
    except OverflowError:
        v = math.inf
    require(math.isfinite(v), "traffic.alpha", list(alpha), "sub-domains whose shared faces, bytes_per_element x "
            f"elements, are finite byte counts (at most {sys.float_info.max:.3g})")
    return v


def stencil(
    alpha: Sequence[int],
    beta: Sequence[int],
    bytes_per_element: float = 1024.0,
    periodic: bool | Sequence[bool] = True,
    exchange: str = "all_at_once",
    neighbours: str = "faces",
) -> Traffic | PhasedTraffic:
    """d-dimensional nearest-neighbour exchange (Prisacari Sec. 3.2).

    The domain of ``alpha`` elements is split over a ``beta`` task grid. Every
    task sends to each neighbour along every dimension ``k`` with
    ``beta_k > 1`` a message of the shared face, ``mu_k`` bytes (Eq. 8), once
    in the ``+k`` and once in the ``-k`` direction. ``beta_k = 1`` means no
    exchange in dimension ``k``; ``beta_k = 2`` (periodic) sends both faces
    to the same neighbour (``2 mu_k`` bytes). Non-periodic dimensions send
    nothing across the domain boundary.

    ``exchange="per_dimension"`` does the dimensions one after another: a
    :class:`~evaluator.traffic.PhasedTraffic` with one phase per dimension
    (``dim0``, ``dim1``, ...; empty where ``beta_k = 1``) whose flows together
    are the ``"all_at_once"`` exchange's.

    ``neighbours="full"`` sends to all ``3^d - 1`` neighbours (a 27-point stencil in 3-D: faces, edges and
    corners): to the task at offset ``o`` in ``{-1, 0, 1}^d`` (``o != 0``) a message of the sub-domains' shared
    part, ``bytes_per_element * prod_{i: o_i = 0} alpha_i / beta_i`` bytes (a face: the product of the other
    sides; an edge in 3-D: the one remaining side; a corner: one element). An offset that moves along a dimension
    with ``beta_k = 1``, or across a non-periodic boundary, sends nothing; offsets that reach the same task
    (``beta_k = 2``, periodic) are merged. Only with ``exchange="all_at_once"`` (an edge or corner message belongs
    to no single dimension).
    """
    require(exchange in STENCIL_EXCHANGES, "traffic.exchange", exchange, f"one of {list(STENCIL_EXCHANGES)}",
            "all_at_once: every dimension in one exchange; per_dimension: one phase per dimension.")
    require(isinstance(neighbours, str) and neighbours in STENCIL_NEIGHBOURS, "traffic.neighbours", neighbours,
            f"one of {list(STENCIL_NEIGHBOURS)}",
            "faces: the 2d face neighbours; full: all 3^d - 1 neighbours (faces, edges, corners).")
    require(neighbours == "faces" or exchange == "all_at_once", "traffic.exchange", exchange,
            "all_at_once with traffic.neighbours=full",
            "An edge or corner message belongs to no single dimension; use neighbours=faces for per_dimension.")
    al, be = check_grid(alpha, beta)
    bpe = positive_float("traffic.bytes_per_element", bytes_per_element)
    nd = len(be)

    def is_bool(p):
        return isinstance(p, (bool, np.bool_)) or (isinstance(p, (int, np.integer)) and p in (0, 1))

    allowed = f"true, false or a list of {nd} of them (one per dimension)"
    if isinstance(periodic, (list, tuple, np.ndarray)):
        per_l = list(periodic.tolist() if isinstance(periodic, np.ndarray) else periodic)
        require(len(per_l) == nd and all(is_bool(p) for p in per_l), "traffic.periodic", per_l, allowed)
        per = tuple(bool(p) for p in per_l)
    else:
        require(is_bool(periodic), "traffic.periodic", periodic, allowed)
        per = (bool(periodic),) * nd
    n = math.prod(be)
    n_offsets = 2 * nd if neighbours == "faces" else 3 ** nd - 1
    check_memory("traffic.beta", list(be), (48.0 * nd + 64.0) * n * max(n_offsets, 1),
                 f"the flows of a stencil over {n} tasks")
    label = "stencil " + "x".join(map(str, be))
    if neighbours == "full":
        sub = [x // y for x, y in zip(al, be)]
        offs = [o for o in itertools.product((-1, 0, 1), repeat=nd) if any(o)]
        sizes = [_shared_bytes(bpe, [s for s, x in zip(sub, o) if x == 0], al) for o in offs]
        return _flows(be, offs, sizes, per, f"{label} ({len(offs)} neighbours)", bpe)
    mu = stencil_message_sizes(al, be, bpe)

    def faces(dims):
        offs = [tuple(step if i == k else 0 for i in range(nd)) for k in dims for step in (+1, -1)]
        return offs, [float(mu[k]) for k in dims for _ in (+1, -1)]

    if exchange == "per_dimension":
        phases = tuple(_flows(be, *faces((k,)), per, f"{label} dim{k}", bpe) for k in range(nd))
        return PhasedTraffic(phases, tuple(f"dim{k}" for k in range(nd)), label + " per dimension")
    return _flows(be, *faces(range(nd)), per, label, bpe)


def _flows(be: tuple[int, ...], offsets: Sequence[tuple[int, ...]], sizes: Sequence[float], per: tuple[bool, ...],
           label: str, bpe: float) -> Traffic:
    """Every task's message of ``sizes[j]`` bytes to the task at ``offsets[j]`` on the task grid (duplicates merged;
    an offset that moves along a dimension with ``beta_k = 1``, or across a non-periodic boundary, sends nothing)."""
    n = math.prod(be)
    coords = np.stack(np.unravel_index(np.arange(n), be), axis=1)
    srcs, dsts, bys = [], [], []
    for off, size in zip(offsets, sizes):
        if any(x != 0 and b == 1 for x, b in zip(off, be)):
            continue
        c = coords + np.array(off, dtype=coords.dtype)
        ok = np.ones(n, dtype=bool)
        for k, x in enumerate(off):
            if x == 0:
                continue
            if per[k]:
                c[:, k] %= be[k]
            else:
                ok &= (c[:, k] >= 0) & (c[:, k] < be[k])
        tgt = np.ravel_multi_index(tuple(np.clip(c[ok], 0, np.array(be) - 1).T), be)
        srcs.append(np.arange(n)[ok])
        dsts.append(tgt)
        bys.append(np.full(int(ok.sum()), size))
    if not srcs:
        return Traffic(n, np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0), label)
    src, dst, b = np.concatenate(srcs), np.concatenate(dsts), np.concatenate(bys)
    # Merge duplicate flows (beta_k = 2: both faces to one neighbour).
    key = src * n + dst
    uniq, inv = np.unique(key, return_inverse=True)
    merged = np.zeros(uniq.size)
    with np.errstate(over="ignore"):
        np.add.at(merged, inv, b)
    require(bool(np.isfinite(merged).all()), "traffic.bytes_per_element", bpe,
            f"messages whose sum to one neighbour is a finite byte count (at most {sys.float_info.max:.3g})")
    return Traffic(n, (uniq // n).astype(np.int64), (uniq % n).astype(np.int64), merged, label)


@dataclass
class StencilConfig:
    """Stencil: ``alpha`` elements per dimension on a ``beta`` task grid, ``bytes_per_element``,
    ``periodic`` (one bool or one per dimension), ``exchange`` (``all_at_once`` or ``per_dimension``: one
    phase per dimension), ``neighbours`` (``faces``: the ``2d`` face neighbours; ``full``: all ``3^d - 1``,
    faces, edges and corners, as a 27-point stencil in 3-D)."""

    kind: str = "stencil"
    alpha: Optional[list[int]] = None
    beta: Optional[list[int]] = None
    bytes_per_element: float = 1024.0
    periodic: Any = True
    exchange: str = "all_at_once"
    neighbours: str = "faces"


def _from_config(cfg: ConfigOf[StencilConfig], topology) -> Traffic:
    require(cfg.alpha is not None and cfg.beta is not None, "traffic.alpha/beta", (cfg.alpha, cfg.beta),
            "both alpha and beta set for a stencil")
    per = cfg.periodic if cfg.periodic is None or isinstance(cfg.periodic, (str, int, float, bool)) \
        else list(cfg.periodic)
    return stencil(list(cfg.alpha), list(cfg.beta), cfg.bytes_per_element, per, cfg.exchange, cfg.neighbours)


STENCIL = TrafficKind("stencil", StencilConfig, _from_config)
