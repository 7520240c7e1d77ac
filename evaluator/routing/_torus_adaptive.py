"""``torus_adaptive``: minimal adaptive routing on a torus, DOR in several dimension orders split by load, as a
flow-level fixed point (the model and its decision rules: :mod:`evaluator.routing._adaptive`)."""

from __future__ import annotations

import dataclasses
import itertools
from dataclasses import dataclass
from typing import no_type_check

import jax.numpy as jnp
import numpy as np

from ..errors import require
from ..topology import TorusTopology
from . import _dor
from ._adaptive import (DEFAULT_ITERATIONS, DEFAULT_POWER, AdaptiveOperator, AdaptiveRouting, Family, check_common,
                        kind_check, list_functions, make_operator, sub_tables)
from .base import RoutingKind

__all__ = ["TorusAdaptiveRouting", "torus_adaptive", "torus_orders", "TorusAdaptiveConfig", "TORUS_ADAPTIVE",
           "TORUS_ORDER_SETS"]

TORUS_ORDER_SETS = ("auto", "all", "rotations")
"""The candidate sets of ``routing.orders``."""


@dataclasses.dataclass(frozen=True)
class TorusAdaptiveRouting(AdaptiveRouting):
    """Minimal adaptive routing on a torus: DOR in several dimension orders (``orders``: auto | all | rotations),
    the split by load; ``tie`` as DOR's."""

    kind: str = "torus_adaptive"
    orders: str = "auto"
    tie: str = "split"

    @property
    def label(self) -> str:
        return f"torus_adaptive-{self.variant}-{self.orders}" + self._power_label()


@no_type_check  # takes raw configuration and refuses bad values itself (ConfigError naming the field)
def torus_adaptive(variant: str = "global", orders: str = "auto", tie: str = "split",
                   iterations: int = DEFAULT_ITERATIONS, power: float = DEFAULT_POWER) -> TorusAdaptiveRouting:
    """Minimal adaptive routing on a torus over DOR orders, as a flow-level fixed point (module docstring)."""
    variant, iterations, power = check_common(variant, iterations, power)
    require(isinstance(orders, str) and orders in TORUS_ORDER_SETS, "routing.orders", orders,
            f"one of {list(TORUS_ORDER_SETS)}", "auto: every order for up to 3 dimensions, the cyclic rotations "
            "above.")
    require(isinstance(tie, str) and tie in _dor.TIE_RULES, "routing.tie", tie, f"one of {list(_dor.TIE_RULES)}")
    return TorusAdaptiveRouting(variant=variant, iterations=iterations, orders=orders, tie=tie, power=power)


def torus_orders(ndim: int, orders: str) -> list[tuple[int, ...]]:
    """The dimension orders of ``torus_adaptive``'s candidates: ``all`` permutations, the ``rotations`` of
    ``0 .. ndim-1``, or ``auto`` (all for ``ndim <= 3``, rotations above). The first is ``0 .. ndim-1``."""
    if orders == "all" or (orders == "auto" and ndim <= 3):
        return list(itertools.permutations(range(ndim)))
    base = list(range(ndim))
    return [tuple(base[i:] + base[:i]) for i in range(ndim)]


def _torus_operator(topo: TorusTopology, routing: TorusAdaptiveRouting) -> AdaptiveOperator:
    perms = torus_orders(int(topo.ndim), routing.orders)
    ops = [_dor.build_operator(topo, _dor.dor(order=list(p), tie=routing.tie)) for p in perms]
    n_rl = int(topo.n_router_links)
    tables = {f"f/{k}": v for k, v in ops[0].flow_tables.items()}  # the same for every order
    tables["_link_src"] = np.asarray(topo.link_src, np.int64)[:n_rl].astype(np.int32)
    local = routing.variant == "local"
    K = len(ops)

    def prepare(tables, src, dst, weight):
        ft = sub_tables(tables, "f/")
        lists = [op.flow_links(ft, src, dst) for op in ops]
        W = max(lk.shape[1] for lk, _ in lists)
        pad = lambda x, v: jnp.pad(x, ((0, 0), (0, W - x.shape[1])), constant_values=v)  # noqa: E731
        links = jnp.stack([pad(lk, -1) for lk, _ in lists], axis=1)  # [F, K, W]
        frac = jnp.stack([pad(fr, 0.0) for _, fr in lists], axis=1)
        return list_functions(tables, links, frac, src, n_rl, local)

    fam = Family(K, tables, prepare, (0.0,) * K)
    names = tuple("dor-" + "".join(map(str, p)) for p in perms)
    return make_operator(topo, routing, fam, names, int(topo.n_routers))


def build_operator(topo, routing: TorusAdaptiveRouting) -> AdaptiveOperator:
    """Compile ``torus_adaptive`` for one torus (host side)."""
    kind_check(topo, "torus_adaptive", TorusTopology)
    return _torus_operator(topo, routing)


@dataclass
class TorusAdaptiveConfig:
    """Minimal adaptive routing on a torus over DOR orders: ``variant`` global | local, ``orders`` auto | all |
    rotations, ``tie`` split | positive, ``iterations``."""

    kind: str = "torus_adaptive"
    variant: str = "global"
    orders: str = "auto"
    tie: str = "split"
    iterations: int = DEFAULT_ITERATIONS
    power: float = DEFAULT_POWER


TORUS_ADAPTIVE = RoutingKind("torus_adaptive", TorusAdaptiveConfig,
                             lambda cfg: torus_adaptive(cfg.variant, cfg.orders, cfg.tie, cfg.iterations,
                                                        cfg.power),
                             topologies=("torus",), operator=build_operator)
