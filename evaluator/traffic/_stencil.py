"""Nearest-neighbour stencil with a domain decomposition (Prisacari Sec. 3.2)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from .._types import Float
from ..errors import check_memory, positive_float, positive_int, require
from .base import PhasedTraffic, Traffic, TrafficKind

__all__ = ['stencil', 'stencil_message_sizes', 'check_grid', 'StencilConfig', 'STENCIL', 'STENCIL_EXCHANGES']

STENCIL_EXCHANGES = ("all_at_once", "per_dimension")
"""How a stencil exchanges its dimensions: every face at once (one exchange), or one dimension after another
(one phase per dimension, ``dim0``, ``dim1``, ...; a dimension with ``beta_k = 1`` is an empty phase)."""


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
    sub = np.array(al) // np.array(be)
    return np.array([bytes_per_element * math.prod(int(s) for i, s in enumerate(sub) if i != k)
                     for k in range(len(al))], dtype=np.float64)


def stencil(
    alpha: Sequence[int],
    beta: Sequence[int],
    bytes_per_element: float = 1024.0,
    periodic: bool | Sequence[bool] = True,
    exchange: str = "all_at_once",
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
    """
    require(exchange in STENCIL_EXCHANGES, "traffic.exchange", exchange, f"one of {list(STENCIL_EXCHANGES)}",
            "all_at_once: every dimension in one exchange; per_dimension: one phase per dimension.")
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
    check_memory("traffic.beta", list(be), (48.0 * nd + 64.0) * n * max(nd, 1),
                 f"the flows of a stencil over {n} tasks")
    mu = stencil_message_sizes(al, be, bpe)
    label = "stencil " + "x".join(map(str, be))
    if exchange == "per_dimension":
        phases = tuple(_flows(be, mu, per, (k,), f"{label} dim{k}") for k in range(nd))
        return PhasedTraffic(phases, tuple(f"dim{k}" for k in range(nd)), label + " per dimension")
    return _flows(be, mu, per, tuple(range(nd)), label)


def _flows(be: tuple[int, ...], mu: np.ndarray, per: tuple[bool, ...], dims: tuple[int, ...], label: str) -> Traffic:
    """The stencil's flows along the dimensions ``dims`` (duplicates merged)."""
    n = math.prod(be)
    coords = np.stack(np.unravel_index(np.arange(n), be), axis=1)
    srcs, dsts, bys = [], [], []
    for k in dims:
        if be[k] == 1:
            continue
        for step in (+1, -1):
            c = coords.copy()
            c[:, k] += step
            if per[k]:
                c[:, k] %= be[k]
                ok = np.ones(n, dtype=bool)
            else:
                ok = (c[:, k] >= 0) & (c[:, k] < be[k])
            tgt = np.ravel_multi_index(tuple(np.clip(c[ok], 0, np.array(be) - 1).T), be)
            srcs.append(np.arange(n)[ok])
            dsts.append(tgt)
            bys.append(np.full(int(ok.sum()), mu[k]))
    if not srcs:
        return Traffic(n, np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0), label)
    src, dst, b = np.concatenate(srcs), np.concatenate(dsts), np.concatenate(bys)
    # Merge duplicate flows (beta_k = 2: both faces to one neighbour).
    key = src * n + dst
    uniq, inv = np.unique(key, return_inverse=True)
    merged = np.zeros(uniq.size)
    np.add.at(merged, inv, b)
    return Traffic(n, (uniq // n).astype(np.int64), (uniq % n).astype(np.int64), merged, label)


@dataclass
class StencilConfig:
    """Stencil: ``alpha`` elements per dimension on a ``beta`` task grid, ``bytes_per_element``,
    ``periodic`` (one bool or one per dimension), ``exchange`` (``all_at_once`` or ``per_dimension``: one
    phase per dimension)."""

    kind: str = "stencil"
    alpha: Optional[list[int]] = None
    beta: Optional[list[int]] = None
    bytes_per_element: float = 1024.0
    periodic: Any = True
    exchange: str = "all_at_once"


def _from_config(cfg: StencilConfig, topology) -> Traffic:
    require(cfg.alpha is not None and cfg.beta is not None, "traffic.alpha/beta", (cfg.alpha, cfg.beta),
            "both alpha and beta set for a stencil")
    per = cfg.periodic if cfg.periodic is None or isinstance(cfg.periodic, (str, int, float, bool)) \
        else list(cfg.periodic)
    return stencil(list(cfg.alpha), list(cfg.beta), cfg.bytes_per_element, per, cfg.exchange)


STENCIL = TrafficKind("stencil", StencilConfig, _from_config)
