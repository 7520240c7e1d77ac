"""Adaptive routings as flow-level fixed points: ``ugal`` (Dragonfly), ``torus_adaptive`` (torus), ``ft_adaptive``
(fat tree).

An adaptive routing chooses, for every flow (router pair), among a few
candidate routes by the load it sees. Each candidate ``k`` here is a *linear*
routing the evaluator already has (an operator ``R_k``: bytes of every flow ->
bytes on every router link), so a flow-level model of the decision rule is a
split ``x[f, k] >= 0``, ``sum_k x[f, k] = 1``, of every flow's bytes ``w_f``
over its candidates, with link loads

    ``load = sum_k R_k (w * x[:, k])``  (bytes),  ``gl = load / capacity``  (seconds: each link's busy time).

The split is the fixed point of the decision rule, reached by a damped best
response for a fixed number of iterations (``routing.iterations``, default
:data:`DEFAULT_ITERATIONS`) inside the jitted one-point function
(``lax.fori_loop``; the engine batches points outside):

    ``x_0 = e_0`` (every flow on candidate 0: the choice at zero load);
    ``x_{t+1} = x_t + s_t (BR(x_t) - x_t)``,

``BR(x)[f]`` the one-hot vector of the candidate with the smallest
*decision cost* ``d[f, k]`` under the loads of ``x`` (ties, within
:data:`TIE_RTOL` = 1e-9 of the flow's largest cost: the lowest index, i.e.
minimal first). Where the decision cost is the path cost (``global``
variants without threshold) it is, up to a positive factor (the busiest link's
busy time), the gradient of the potential ``sum_l capacity_l b_l^(p+1) / (p+1)``
(``b_l = load_l / capacity_l``, ``p = routing.power``; ``sum_l load_l^2 /
(2 capacity_l)`` at ``p = 1``): the fixed point is a Wardrop (user) equilibrium
and ``s_t`` is Frank-Wolfe's exact line search on that potential. Otherwise
(``local`` rules, a threshold: no potential) ``s_t = 1 / (t + 2)``, the
method of successive averages (``x_T`` the average of ``e_0`` and the ``T``
best responses). Convergence is measured by the relative gap

    ``gap = sum_f w_f (sum_k x[f, k] d[f, k] - min_k d[f, k]) / sum_f w_f sum_k x[f, k] c[f, k]``

(``c``: the path cost below; 0 at a fixed point, where every flow uses only
candidates of least decision cost); :meth:`AdaptiveOperator.solve` returns it
with the loads and the split (``docs/adaptive_routing.md`` reports it per routing: on DF(2,4,2)'s group
tornado after 128 iterations about 1e-3 for UGAL-L and about 0.07 for UGAL-G at the default power).

Path costs. A flow's cost on candidate ``k`` is the sum of the busy times of
the links it crosses, weighted by the fraction of its bytes on each (an
expectation over Valiant intermediates, split ties and parallel links):
``c[f, k] = (R_k^T gl)[f]``. On a Dragonfly this is the vector-Jacobian
product of the candidate's ``apply`` with the cotangent ``gl`` (``jax.vjp``,
taken once per point at the flows' bytes); on tori and fat trees it is the
sum over the listed links of every flow (DOR's ``flow_links``; the fat
tree's candidate paths). ``c`` equals ``H * q``: the hop count times the mean
busy time of the links along the path, UGAL's ``q H`` with ``q`` the path's
mean queue (a sum, not a max: every link of the path delays the flow).
Expected hop counts ``H[f, k] = (R_k^T 1)[f]``.

The global variants raise each link's busy time, relative to the busiest
link's, to ``p = routing.power`` (default :data:`DEFAULT_POWER`) before summing
along the path: ``c[f, k] = (R_k^T (gl / max gl)^p)[f]``. A queue stays short
while its link has spare capacity and grows steeply as the link saturates;
with ``p = 1`` (linear costs) a user equilibrium is not the best split: flows
stay on a short path until it costs as much as the long one, so the short
path's busiest link can end up slower than every link of the all-long routing
(on DF(2,4,2)'s group tornado UGAL-G with ``power=1`` takes 382.1 us,
all-Valiant 342.9 us; at the default 230.3 us, the ideal adaptive bound
209.9 us). As ``p`` grows the equilibrium tends to the min-max split of the
candidates. What always holds: the adaptive completion time is at least the
all-paths bound, and a global variant's is at most its worse candidate's
(tests/test_adaptive_routing.py). A local variant's can exceed both candidates':
its routers see their own queues only (a Dragonfly and a torus case in
tests/test_audit_adaptive_routing.py).

* ``ugal`` (Dragonfly; Kim et al. 2008, Jiang et al. 2009), candidates
  ``0 = minimal`` and ``1 = valiant`` (``routing.nonminimal=valiant``: a uniform
  intermediate group, the default) or ``valiant_router`` (a uniform
  intermediate router, as BookSim2's UGAL); intra-group flows have one route.

  - ``variant=global`` (UGAL-G, global queue information): ``d_min = c_min``,
    ``d_val = c_val + threshold * max_l gp_l`` (``gp`` the links' costs above;
    minimal when ``c_min <= c_val + threshold * max gp``; ``routing.threshold`` >= 0 biases towards minimal
    in units of the busiest link's time, so that the model is scale-free:
    loads are homogeneous of degree 1 in the demand).
  - ``variant=local`` (UGAL-L): the source router sees only its own output
    queue, i.e. the first hop's busy time ``q1[f, k]`` (the expected busy time
    of the first link of candidate ``k``: the local link towards the owner of
    the global link, or that global link when the source owns it; for
    Valiant averaged over the intermediate groups, resp. routers), times the
    expected hop count: ``d_min = q1_min H_min``, ``d_val = q1_val H_val +
    threshold * max gl``. Congestion beyond the first hop (the one global link
    of an adversarial group pair, seen only by the router that owns it) is
    invisible to the other routers of the group: the reason UGAL-L trails
    UGAL-G on adversarial traffic.

* ``torus_adaptive`` (torus/mesh, minimal adaptive): candidates = DOR in
  several dimension orders (``routing.orders``: ``all``, the ``d!``
  permutations; ``rotations``, the ``d`` cyclic rotations of ``0 .. d-1``;
  ``auto``, the default: all for ``d <= 3``, rotations above), with the given
  ``tie`` rule. All candidates are minimal (equal hop counts). ``global``:
  ``d = c``; ``local``: the source router's own output queue, the busy time of
  the first link (``d = q1 H``).

* ``ft_adaptive`` (fat tree, adaptive up-port choice): candidates = every
  up path, one up port per tier (``P = U_1 U_2 ... U_{h-1}`` candidates; a
  flow that turns at a lower tier ignores the higher digits), the down path
  determined by it (the unique way down from the top switch reached, over the
  parallel copy of the same index as the up port's). ``variant=local`` (the
  default: what switches do, each choosing an up port by its own queues):
  ``d[f, p] = sum_t (gl[up_t(p)] - min_u gl[up_t(switch_t(p), u)])``, the
  sum over the tiers of the regret of each switch's choice on the path, whose
  minimum (0) is the greedy walk that takes the least busy up port at every
  switch; ``global``: ``d = c``, the whole path's busy time (a source-routed
  or centrally computed choice).

Dense traffic (``apply_dense``: all-to-all, many-to-many) is routed per
router pair: the rank-one demand ``u[s] v[d]`` becomes the ``E^2`` flows of
its ``E`` endpoints (routers; leaves on a fat tree), refused with a
:class:`~evaluator.errors.ResourceError` above :data:`MAX_DENSE_PAIRS` pairs.

Not linear. An adaptive routing's loads are not linear in the demand (they
are homogeneous of degree 1: scaling every flow scales every load), so
:attr:`Routing.linear` is False, and the consumers that route demands
separately and add the loads (several jobs, background traffic, the mapping
search's incremental moves, the latency model's path latencies, the
flow-level incidence) refuse it. The ideal adaptive mix is a bound
(``bounds=dragonfly_adaptive``, :mod:`evaluator.lp`), never a routing.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from .._ops import differentiable, take, with_extra
from ..errors import ConfigError, ResourceError, is_int, refuse_ignored, require
from .base import Routing, RoutingOperator

__all__ = ["AdaptiveRouting", "AdaptiveOperator", "Family", "check_common", "make_operator", "list_functions",
           "sub_tables", "kind_check", "DEFAULT_ITERATIONS", "DEFAULT_POWER", "MAX_DENSE_PAIRS", "VARIANTS"]

DEFAULT_ITERATIONS = 128
"""Fixed-point iterations (damped best-response steps) unless ``routing.iterations`` says otherwise."""

DEFAULT_POWER = 32.0
"""The congestion exponent of the global variants' path costs unless ``routing.power`` says otherwise (module
docstring, "Path costs"): a link's cost is its busy time relative to the busiest link's, to this power."""

MAX_POWER = 64.0

MAX_ITERATIONS = 100_000

MAX_DENSE_PAIRS = 1 << 20
"""Most endpoint pairs a dense (rank-one) demand is expanded into (router pairs; leaf pairs on a fat tree)."""

VARIANTS = ("global", "local")
"""``routing.variant`` of every adaptive routing: path costs (``global``) or the deciding router's own queues."""


# ---------------------------------------------------------------------------------------------------------------
# the spec every member extends (members: _ugal.py, _torus_adaptive.py, _ft_adaptive.py)
# ---------------------------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class AdaptiveRouting(Routing):
    """An adaptive routing: a fixed point of a decision rule over linear candidates (module docstring).

    Attributes
    ----------
    variant
        ``"global"`` (path costs) or ``"local"`` (what the deciding router sees of its own queues).
    iterations
        Fixed-point iterations (Frank-Wolfe or successive-averages steps).
    power
        The congestion exponent ``p`` of the global variants' path costs (``(busy time / busiest)^p`` summed along
        the path; 1: busy times, a Wardrop equilibrium with linear costs; large: the path's bottleneck).
    """

    kind: str = ""
    variant: str = "global"
    iterations: int = DEFAULT_ITERATIONS
    power: float = DEFAULT_POWER
    pair_slots: int = 0
    """0: the fixed point runs over the flows as given; ``n > 0``: the flows are first merged by router pair into
    ``n`` slots (:func:`_merge_pairs`; set by :meth:`merge_pairs`, not a configuration key)."""

    @property
    def linear(self) -> bool:
        """False: the loads depend on the demand through the decision rule."""
        return False

    def merge_pairs(self, count: Callable[[], tuple[int, int]]) -> Routing:
        """This spec with its flows merged by router pair (:attr:`pair_slots`) where that shortens them: the
        fixed point's every iteration routes each flow through every candidate, and flows of one router pair
        take the same decisions (their costs are the pair's), so one flow per pair with their bytes summed gives
        the same loads up to rounding in far fewer flows (a mix of jobs on DF(8,16,8,128): 569,344 flows,
        46,568 router pairs: 6.0-6.4 s a point flow by flow, 2.2-2.4 s merged, the same loads). See
        :meth:`evaluator.routing.base.Routing.merge_pairs`; merged where the pairs' bucket is at most half the
        flows'."""
        if self.pair_slots:
            return self
        slots, n_flows = count()
        return self if 2 * int(slots) > int(n_flows) else dataclasses.replace(self, pair_slots=int(slots))

    @property
    def label(self) -> str:
        return f"{self.kind}-{self.variant}" + self._power_label()

    def _power_label(self) -> str:
        return f"-p{self.power:g}" if self.variant == "global" and self.power != DEFAULT_POWER else ""


def check_common(variant, iterations, power=DEFAULT_POWER) -> tuple[str, int, float]:
    require(isinstance(variant, str) and variant in VARIANTS, "routing.variant", variant, f"one of {list(VARIANTS)}")
    require(is_int(iterations) and 1 <= int(iterations) <= MAX_ITERATIONS, "routing.iterations", iterations,
            f"an integer in [1, {MAX_ITERATIONS}] (fixed-point iterations)",
            f"{DEFAULT_ITERATIONS} is the default; the gap falls about as 1 / iterations.")
    ok = isinstance(power, (int, float)) and not isinstance(power, bool) and np.isfinite(power) \
        and 1.0 <= power <= MAX_POWER
    require(ok, "routing.power", power, f"a number in [1, {MAX_POWER:g}] (the congestion exponent of the global "
            "variants' path costs)", f"{DEFAULT_POWER:g} is the default; 1 sums the busy times along the path "
            "(docs/adaptive_routing.md).")
    refuse_ignored(variant == "global" or power == DEFAULT_POWER, "routing.power", power,
                   f"{DEFAULT_POWER:g} (the default) with routing.variant={variant!r}: only the global variant's path "
                   "costs read the exponent; a local decision compares its own queues' busy times",
                   "Drop routing.power, or use routing.variant=global (docs/adaptive_routing.md).")
    return variant, int(iterations), float(power)


# ---------------------------------------------------------------------------------------------------------------
# the fixed point (one design point)
# ---------------------------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Family:
    """Candidates of one adaptive routing on one topology.

    ``prepare(tables, src, dst, weight) -> (loads, costs)``: ``loads(W[F, K]) -> [router_link]`` (bytes of
    the split demand), ``costs(gl[router_link]) -> (c[F, K], d[F, K])`` (path costs and decision costs,
    before the threshold). ``bias[k]``: multiples of ``threshold * max gl`` added to ``d[:, k]``.
    """

    K: int
    tables: dict
    prepare: Callable
    bias: tuple[float, ...]


TIE_RTOL = 1e-9
"""Decision costs within this relative distance of a flow's least are ties (DESIGN.md "Ties are ties"): the lowest
candidate index among them wins."""


def _first_least(d, c):
    """Index of the first candidate whose decision cost is within :data:`TIE_RTOL` of the least, per flow, relative
    to the flow's largest decision or path cost (``c``: a regret's differences are ties relative to the busy
    times they are differences of)."""
    lo = jnp.min(d, axis=1, keepdims=True)
    scale = jnp.maximum(jnp.max(jnp.abs(d), axis=1, keepdims=True), jnp.max(jnp.abs(c), axis=1, keepdims=True))
    tol = TIE_RTOL * scale + 1e-300
    return jnp.argmax(d <= lo + tol, axis=1)


def _power(x, p: float):
    """``x ** p`` for ``x >= 0``: repeated squaring where ``p`` is a whole number (the default 32: 5 products, not
    an exponential and a logarithm per element; the line search takes it 60 times per link and iteration)."""
    return lax.integer_pow(x, int(p)) if float(p).is_integer() and 0 < p <= 64 else x ** p


def _solve(fam: Family, threshold: float, iterations: int, line_search: bool, tables, src, dst, weight,
           power: float = 1.0):
    """``(loads, x[F, K], gap)`` of one point (module docstring); ``line_search``: Frank-Wolfe's exact step on the
    potential ``sum_l capacity_l (load_l / capacity_l)^(p+1) / (p+1)`` (``p = power``: closed form for ``p = 1``,
    bisection on its derivative otherwise) instead of MSA's ``1 / (t + 2)``. ``power`` raises every link's busy
    time to ``p`` in the path costs (normalised by the busiest link's, so only ratios matter)."""
    K = fam.K
    with differentiable():
        loads_fn, costs_fn = fam.prepare(tables, src, dst, weight)
        inv = tables["_inv_cap"]
        bias = jnp.asarray(fam.bias, weight.dtype)

        def congestion(gl):
            if power == 1.0:
                return gl
            top = jnp.max(gl, initial=0.0)
            return _power(gl / jnp.where(top > 0, top, 1.0), power)

        def costs(load):
            gc = congestion(load * inv)
            c, d = costs_fn(gc)
            if threshold:
                d = d + bias[None, :] * (threshold * jnp.max(gc, initial=0.0))
            return c, d

        def decide(x):
            load = loads_fn(weight[:, None] * x)
            return (load, *costs(load))

        x0 = jnp.zeros((weight.shape[0], K), weight.dtype).at[:, 0].set(1.0)

        def step_size(load, delta):
            if power == 1.0:
                num = -jnp.sum(load * inv * delta)
                den = jnp.sum(delta * delta * inv)
                return jnp.clip(jnp.where(den > 0, num / jnp.where(den > 0, den, 1.0), 0.0), 0.0, 1.0)
            top = jnp.maximum(jnp.max(load * inv, initial=0.0), jnp.max((load + delta) * inv, initial=0.0))
            scale = jnp.where(top > 0, inv / top, 0.0)

            def slope(s):  # the potential's derivative along delta (increasing in s: the potential is convex)
                return jnp.sum(_power(jnp.maximum((load + s * delta) * scale, 0.0), power) * delta)

            def bisect(_, lohi):
                lo, hi = lohi
                mid = 0.5 * (lo + hi)
                up = slope(mid) > 0
                return jnp.where(up, lo, mid), jnp.where(up, mid, hi)

            lo, hi = lax.fori_loop(0, 60, bisect, (jnp.zeros((), load.dtype), jnp.ones((), load.dtype)))
            return jnp.where(slope(0.0) >= 0, 0.0, jnp.where(slope(1.0) <= 0, 1.0, 0.5 * (lo + hi)))

        def body(t, carry):
            # the loads are linear in the split: those of x + s (b - x) are load + s (loads(b) - load), so they are
            # carried (one loads_fn per step, the best response's) instead of recomputed from x
            x, load = carry
            c, d = costs(load)
            b = jax.nn.one_hot(_first_least(d, c), K, dtype=x.dtype)
            delta = loads_fn(weight[:, None] * b) - load
            step = step_size(load, delta) if line_search else 1.0 / (t + 2).astype(x.dtype)
            return x + step * (b - x), load + step * delta

        if K > 1:
            x, _ = lax.fori_loop(0, iterations, body, (x0, loads_fn(weight[:, None] * x0)))
        else:
            x = x0
        load, c, d = decide(x)  # (the loads of the split returned, computed from it)
    excess = jnp.sum(x * d, axis=1) - jnp.min(d, axis=1)
    scale = jnp.sum(weight * jnp.sum(x * c, axis=1))
    gap = jnp.sum(weight * excess) / jnp.maximum(scale, jnp.finfo(weight.dtype).tiny)
    return load, x, gap


@dataclasses.dataclass(frozen=True, eq=False)
class AdaptiveOperator(RoutingOperator):
    """A :class:`RoutingOperator` of an adaptive routing, with the fixed point's state.

    ``solve(tables, src, dst, weight) -> (loads, x, gap)``: the router-link loads, the split ``x[flow,
    candidate]`` and the relative gap (module docstring) of one point of flows; ``solve_dense(tables, u, v)``:
    the same for dense demand (its flows are the endpoint pairs ``s * E + d``, ``s != d`` included with weight 0).
    ``candidates``: the candidates' names, in index order.
    """

    solve: Callable | None = None
    solve_dense: Callable | None = None
    candidates: tuple[str, ...] = ()


def _merge_pairs(src, dst, weight, n_end: int, slots: int):
    """Flows ``src -> dst`` (endpoints) of bytes ``weight`` merged by endpoint pair into ``slots`` flows: ``(src,
    dst, bytes)`` of the pairs (ascending keys ``src * n_end + dst``; unused slots: ``0 -> 0``, 0 bytes), each
    flow's ``slot`` (``slots`` for a flow of no bytes or within one endpoint) and whether the pairs overflowed the
    slots (then the merged flows are incomplete)."""
    key = src.astype(jnp.int64) * n_end + dst.astype(jnp.int64)
    none = jnp.iinfo(jnp.int64).max
    key = jnp.where((weight != 0) & (src != dst), key, none)
    order = jnp.argsort(key)
    ks = key[order]
    first = jnp.concatenate([ks[:1] != none, (ks[1:] != ks[:-1]) & (ks[1:] != none)])
    n_pairs = first.sum()
    slot_sorted = jnp.where(ks == none, slots, jnp.cumsum(first) - 1)
    slot = jnp.zeros_like(slot_sorted).at[order].set(slot_sorted)
    w = jnp.zeros(slots, weight.dtype).at[slot].add(weight, mode="drop")
    k = jnp.zeros(slots, jnp.int64).at[slot].max(jnp.where(key == none, 0, key), mode="drop")
    return (k // n_end).astype(src.dtype), (k % n_end).astype(dst.dtype), w, slot, n_pairs > slots


def make_operator(topo, routing: AdaptiveRouting, fam: Family, names, n_end: int, dense_pad: int = 0
                   ) -> AdaptiveOperator:
    threshold = float(getattr(routing, "threshold", 0.0))
    iterations = int(routing.iterations)
    line_search = routing.variant == "global" and threshold == 0.0
    n_rl = int(topo.n_router_links)
    cap = np.asarray(topo.capacity, np.float64)[:n_rl]
    tables = dict(fam.tables)
    tables["_inv_cap"] = np.where(cap > 0, 1.0 / np.where(cap > 0, cap, 1.0), 0.0)

    power = float(routing.power) if routing.variant == "global" else 1.0

    def solve_flows(tables, src, dst, weight):
        return _solve(fam, threshold, iterations, line_search, tables, src.astype(jnp.int32), dst.astype(jnp.int32),
                      weight, power)

    slots = int(routing.pair_slots)

    def solve(tables, src, dst, weight):
        if not slots:
            return solve_flows(tables, src, dst, weight)
        ms, md, mw, slot, over = _merge_pairs(src.astype(jnp.int32), dst.astype(jnp.int32), weight, n_end, slots)
        load, x, gap = solve_flows(tables, ms, md, mw)
        nan = jnp.asarray(jnp.nan, load.dtype)  # more pairs than slots (a caller's count was wrong): NaN, not less
        return jnp.where(over, nan, load), x[jnp.minimum(slot, slots - 1)], jnp.where(over, nan, gap)

    def apply(tables, src, dst, weight, extra=None):
        return with_extra(solve(tables, src, dst, weight)[0], extra)

    E = n_end
    pairs = E * E

    def solve_dense(tables, u, v):
        if pairs > MAX_DENSE_PAIRS:
            raise ResourceError("routing.kind", routing.kind,
                                f"dense traffic over at most {MAX_DENSE_PAIRS:,} endpoint pairs",
                                f"{topo.name} has {E:,} endpoints, {pairs:,} pairs: an adaptive routing routes "
                                "dense demand per pair. Use an oblivious routing (minimal, valiant, dor, "
                                "ecmp_spray) for this size, or bounds=true for the ideal adaptive mix.")
        s = jnp.repeat(jnp.arange(E, dtype=jnp.int32), E)
        d = jnp.tile(jnp.arange(E, dtype=jnp.int32), E)
        w = jnp.where(s != d, (u[:E, None] * v[None, :E]).reshape(-1), 0.0)
        return solve_flows(tables, s, d, w)  # (one flow per pair already)

    def apply_dense(tables, u, v):
        return solve_dense(tables, u, v)[0]

    nnz = int(sum(np.asarray(t).size for t in tables.values()))
    return AdaptiveOperator(routing, topo.name, tables, apply, apply_dense, nnz, solve=solve,
                            solve_dense=solve_dense, candidates=tuple(names))


def sub_tables(tables: dict, prefix: str) -> dict:
    """The tables of ``tables`` whose names start with ``prefix``, without it (one candidate's tables)."""
    return {k[len(prefix):]: v for k, v in tables.items() if k.startswith(prefix)}


def list_functions(tables, links, frac, src, n_rl: int, local: bool, regret=None):
    """``(loads, costs)`` of candidates given as link lists ``links[F, K, W]`` with byte fractions ``frac``."""
    on = links >= 0
    safe = jnp.where(on, links, 0)
    frac = jnp.where(on, frac, 0.0)
    idx = jnp.where(on, links, n_rl).reshape(-1)
    if local and regret is None:
        # no router link (a one-router torus): nothing to read, and a gather from an empty table is refused
        first = on & (take(tables["_link_src"], safe) == src[:, None, None]) if n_rl else on
        H = frac.sum(axis=2)

    def loads(Wx):
        vals = (Wx[:, :, None] * frac).reshape(-1)
        return jnp.zeros(n_rl + 1, Wx.dtype).at[idx].add(vals)[:n_rl]

    def costs(gl):
        gv = take(gl, safe) if n_rl else jnp.zeros(frac.shape, gl.dtype)  # no router link: every path costs 0
        c = (frac * gv).sum(axis=2)
        if not local:
            return c, c
        if regret is not None:
            return c, regret(gl)
        q1 = jnp.where(first, frac * gv, 0.0).sum(axis=2)
        return c, q1 * H

    return loads, costs


def kind_check(topo, kind: str, cls) -> None:
    """A :class:`ConfigError` naming ``routing.kind`` unless ``topo`` is a ``cls``."""
    if not isinstance(topo, cls):
        raise ConfigError("routing.kind", kind, f"a routing for a {cls.__name__}", "Pick a routing group that "
                          "matches the topology.")
