"""``ugal``: UGAL on a Dragonfly as a flow-level fixed point (minimal against a non-minimal candidate; the model
and its decision rules: :mod:`evaluator.routing._adaptive`)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import no_type_check

import jax
import jax.numpy as jnp
import numpy as np

from .._ops import take
from ..errors import check_memory, require
from ..topology import DragonflyTopology
from . import _dragonfly
from ._adaptive import (DEFAULT_ITERATIONS, DEFAULT_POWER, AdaptiveOperator, AdaptiveRouting, Family, check_common,
                        kind_check, make_operator, sub_tables)
from .base import Routing, RoutingKind

__all__ = ["UgalRouting", "ugal", "UgalConfig", "UGAL", "NONMINIMAL"]

NONMINIMAL = ("valiant", "valiant_router")
"""UGAL's non-minimal candidates (``routing.nonminimal``)."""


@dataclasses.dataclass(frozen=True)
class UgalRouting(AdaptiveRouting):
    """UGAL on a Dragonfly: ``variant`` global (UGAL-G) or local (UGAL-L), ``threshold`` >= 0 (a bias towards
    minimal in units of the busiest link's time), ``nonminimal`` valiant | valiant_router."""

    kind: str = "ugal"
    threshold: float = 0.0
    nonminimal: str = "valiant"

    @property
    def label(self) -> str:
        lab = f"ugal-{'g' if self.variant == 'global' else 'l'}"
        if self.nonminimal != "valiant":
            lab += "-vrouter"
        return lab + (f"-t{self.threshold:g}" if self.threshold else "") + self._power_label()


@no_type_check  # takes raw configuration and refuses bad values itself (ConfigError naming the field)
def ugal(variant: str = "global", threshold: float = 0.0, nonminimal: str = "valiant",
         iterations: int = DEFAULT_ITERATIONS, power: float = DEFAULT_POWER) -> UgalRouting:
    """UGAL on a Dragonfly as a flow-level fixed point (module docstring)."""
    variant, iterations, power = check_common(variant, iterations, power)
    ok = isinstance(threshold, (int, float)) and not isinstance(threshold, bool) and np.isfinite(threshold) \
        and threshold >= 0
    require(ok, "routing.threshold", threshold, "a finite number >= 0 (bias towards minimal, in units of the "
            "busiest link's busy time)")
    require(isinstance(nonminimal, str) and nonminimal in NONMINIMAL, "routing.nonminimal", nonminimal,
            f"one of {list(NONMINIMAL)}")
    return UgalRouting(variant=variant, iterations=iterations, threshold=float(threshold), nonminimal=nonminimal,
                       power=power)


def _df_first_links(topo: DragonflyTopology) -> np.ndarray:
    """``first[s * g + D, c]``: the first router link from router ``s`` towards group ``D != G(s)`` over copy
    ``c`` of the global link ``G(s) -> D`` (the local link to its owner, or the global link itself when ``s``
    owns it); 0 where ``D == G(s)`` (unused). Built a group at a time (a loop over every router, group and copy
    took hours on a Dragonfly of 262,144 routers and 4,097 groups)."""
    a, g, m = int(topo.a), int(topo.g), int(topo.links_per_pair)
    go = np.asarray(topo.global_owner)  # [S, D, c] index of the owner in S
    gl = np.asarray(topo.global_link)  # [S, D, c] link id
    ll = np.asarray(topo.local_link)  # [G, i, j]
    R = g * a
    first = np.zeros((g, a, g, m), np.int32)
    i = np.arange(a)[:, None, None]
    for S in range(g):
        own = go[S][None]  # [1, D, c]
        via = ll[S][i, np.where(own >= 0, own, 0)]  # [i, D, c]: the local link i -> owner
        row = np.where(own == i, gl[S][None], via)
        row[:, S] = 0
        first[S] = row
    return first.reshape(R * g, m)


def first_bytes(topo: DragonflyTopology) -> int:
    """Host bytes of UGAL-local's first-hop table (:func:`_df_first_links`): ``[g*a*g, m]`` int32 entries, its
    device copy and one group's int64 temporaries."""
    a, g, m = int(topo.a), int(topo.g), int(topo.links_per_pair)
    return 2 * 4 * g * a * g * m + 4 * 8 * a * g * m


def _ugal_operator(topo: DragonflyTopology, routing: UgalRouting) -> AdaptiveOperator:
    a, g, m = int(topo.a), int(topo.g), int(topo.links_per_pair)
    R = g * a
    require(g >= 3, "routing.kind", "ugal", "'minimal' on a Dragonfly with fewer than 3 groups",
            f"UGAL's non-minimal candidate needs an intermediate group other than source and destination; g = {g}.")
    if routing.variant == "local":  # before the candidates' tables are built
        check_memory("routing", routing.label, first_bytes(topo) + sum(
            _dragonfly.operator_bytes(topo, kind != "minimal") for kind in ("minimal", routing.nonminimal)),
            f"its tables on {topo.name} (UGAL-local's first hop of every router towards every group, [g*a*g, m] = "
            f"[{g * a * g:,}, {m}], and the minimal and {routing.nonminimal} candidates')",
            "Use variant=global (no per-router first-hop table) or a Dragonfly with fewer groups or routers.")
    ops = [_dragonfly.build_operator(topo, _dragonfly.minimal()),
           _dragonfly.build_operator(topo, Routing(routing.nonminimal))]
    tables = {f"m/{k}": v for k, v in ops[0].tables.items()}
    tables.update({f"v/{k}": v for k, v in ops[1].tables.items()})
    local = routing.variant == "local"
    if local:
        tables["first"] = _df_first_links(topo)
    vrouter = routing.nonminimal == "valiant_router"

    def prepare(tables, src, dst, weight):
        tm, tv = sub_tables(tables, "m/"), sub_tables(tables, "v/")
        fm = lambda w: ops[0].apply(tm, src, dst, w)  # noqa: E731
        fv = lambda w: ops[1].apply(tv, src, dst, w)  # noqa: E731
        _, pull_m = jax.vjp(fm, weight)
        _, pull_v = jax.vjp(fv, weight)
        Gs, Gd = src // a, dst // a
        inter = Gs != Gd
        if local:
            ones = jnp.ones(int(topo.n_router_links), weight.dtype)
            H = jnp.stack([pull_m(ones)[0], pull_v(ones)[0]], axis=1)

        def loads(W):
            return fm(W[:, 0]) + fv(W[:, 1])

        def costs(gl):
            c = jnp.stack([pull_m(gl)[0], pull_v(gl)[0]], axis=1)
            if not local:
                return c, c
            F = take(gl, tables["first"]).mean(axis=1).reshape(R, g)  # [s, D] first-hop busy time towards D
            Fs = take(F, src)  # [flow, g]
            own = jnp.arange(g, dtype=Gs.dtype)[None, :] == Gs[:, None]
            f_min = jnp.take_along_axis(Fs, Gd[:, None], axis=1)[:, 0]
            others = jnp.where(own, 0.0, Fs).sum(axis=1)  # sum over I != S
            if vrouter:
                f_val = (a / R) * (f_min + others)
            else:
                f_val = (others - f_min) / (g - 2)
            f_val = jnp.where(inter, f_val, f_min)
            d = jnp.stack([f_min, f_val], axis=1) * H
            return c, d

        return loads, costs

    fam = Family(2, tables, prepare, (0.0, 1.0))
    return make_operator(topo, routing, fam, ("minimal", routing.nonminimal), R)


def build_operator(topo, routing: UgalRouting) -> AdaptiveOperator:
    """Compile ``ugal`` for one Dragonfly (host side)."""
    kind_check(topo, "ugal", DragonflyTopology)
    return _ugal_operator(topo, routing)


@dataclass
class UgalConfig:
    """UGAL on a Dragonfly (flow-level fixed point): ``variant`` global | local, ``threshold`` >= 0 (bias towards
    minimal, in units of the busiest link's time), ``nonminimal`` valiant | valiant_router, ``iterations``."""

    kind: str = "ugal"
    variant: str = "global"
    threshold: float = 0.0
    nonminimal: str = "valiant"
    iterations: int = DEFAULT_ITERATIONS
    power: float = DEFAULT_POWER


UGAL = RoutingKind("ugal", UgalConfig,
                   lambda cfg: ugal(cfg.variant, cfg.threshold, cfg.nonminimal, cfg.iterations, cfg.power),
                   topologies=("dragonfly",), operator=build_operator)
