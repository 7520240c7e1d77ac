"""``optimal``: the maximum concurrent flow over all paths of a topology's router graph.

The best completion time any routing can reach for a demand (no path set).
Demand is router-level (:class:`RouterDemand`): bytes from router ``s`` to
router ``d != s``, plus the bytes every routing puts on injection and
ejection links (``fixed_load``; a node's own injection is no choice).
``Z`` (1/s) is the common rate multiplier of Model 1 (every pair moves at
``Z * bytes``, completion time ``1 / Z``).

Two methods:

* ``edge`` (exact LP, arc-flow, one commodity per *source router*): flow
  ``f[s, e] >= 0`` (bytes/s) of source ``s``'s traffic on router link ``e``;
  at every router ``v``: ``out - in = Z * (total_s if v == s else -D[s, v])``;
  on every router link: ``sum_s f[s, e] <= capacity[e]``; and ``Z <=
  capacity[l] / fixed_load[l]`` on injection/ejection links. Aggregating
  by source (not by pair) keeps ``S * E`` variables for ``S`` sources and
  ``E`` router links: a source's flows to its destinations share one
  conservation system, which loses nothing (any multi-destination flow
  from one source decomposes into per-destination paths).
  :func:`edge_size` estimates its size; :func:`edge_bound` refuses, with a
  :class:`~evaluator.errors.ResourceError` naming the estimate, an LP that
  would not fit in memory, before building it.
* ``garg_konemann``: multiplicative weights over shortest paths (Garg and
  Konemann 1998, Fleischer 2000; :func:`garg_konemann`) when the edge LP is
  too large. Each step routes every source's whole demand on its
  shortest-path tree under the current lengths ``l_e`` (SciPy Dijkstra), a
  fraction of it small enough that no link receives more than its capacity,
  and multiplies each length by ``1 + eps * flow_e / capacity_e``. Its
  answer is certified on both sides: the accumulated flow scaled by its
  worst link is feasible (a lower bound on Z), and for any lengths
  ``Z* <= sum_e l_e c_e / sum_{s,d} D[s, d] dist_l(s, d)`` (LP duality; an
  upper bound, the minimum over every length function tried). That dual
  bound converges far more slowly than the flow (58% after 300 steps on the
  512-node bench instance, whose flow was within 3%), so after a few steps
  the paths the weights used become the columns of a restricted path LP
  (column generation): its optimum is a feasible flow, its capacity duals
  are lengths for the same upper bound, and the shortest paths under them
  are the next columns, until the bounds meet or nothing new is found.
  It stops when ``upper / lower - 1 <= target_gap`` and reports that gap.
"""

from __future__ import annotations

import dataclasses
import math
import sys

import numpy as np
import scipy.sparse as sp

from .._types import Float, Int, LinkFloats
from ..errors import ConfigError, ResourceError, available_memory, fmt_size, is_int, require
from ..topology import Topology
from ._model1 import PathBound, bound_of, certify_path, z_from_objective
from ._solvers import LP, check_solved, reached, solve, _check_solver

__all__ = ["RouterDemand", "check_demand", "normalized", "edge_size", "edge_lp", "edge_bound", "certify_edge",
           "certify_edge_solution", "garg_konemann",
           "optimal_bound",
           "METHODS", "EDGE_AUTO_NNZ"]

METHODS = ("auto", "edge", "garg_konemann")
"""Methods of :func:`optimal_bound`: ``auto`` picks ``edge`` up to :data:`EDGE_AUTO_NNZ` nonzeros."""

EDGE_AUTO_NNZ = 500_000
"""``auto``: the largest edge LP (constraint nonzeros) solved exactly; larger ones use Garg-Konemann. Measured:
the 512-node BG/Q constant-ratio pattern (32 sources, 442,656 nonzeros) takes HiGHS (IPM) about 300 s on a
shared 2-core CPU; Garg-Konemann reaches 3% of its optimum from below in 300 steps (4 s)."""

BYTES_PER_NNZ = 640
"""Memory estimate of the edge LP per constraint nonzero: SciPy's COO/CSR copies while it is built and HiGHS's
row- and column-wise copies and factor work. Measured (peak RSS growth of :func:`edge_bound` in a child, after a
first solve loaded HiGHS): building alone 24 bytes per nonzero; building and solving 490 (10 sources on a 5^3
torus, 22,590 nonzeros, dual simplex: 11.0 MB), 400 (DF(3,6,3), 54,900, IPM: 21.8 MB), 410 (a 3-level fat tree,
93,636, IPM: 38.4 MB), 482 (40 sources on a 6^3 torus, 155,880, IPM: 75.1 MB), growing with the size (the
interior-point factor fills in); 160, the value before 2026-12-07, was a third to a half of it. The sweep's
batched PDHG (:mod:`evaluator.sweep.bounds`, per instance) takes it too: XLA's buffers of a bucket of 4 (argument,
output and temporary bytes of the compiled solve, nonzeros padded to a power of two) are 243 and 276 bytes per
nonzero and instance on the 5^3 and 6^3 instances above."""


@dataclasses.dataclass(frozen=True, eq=False)
class RouterDemand:
    """Router-level demand of one exchange.

    Attributes
    ----------
    src, dst : int ndarray [pair]
        Router ids, ``src != dst``, each ordered pair once.
    nbytes : float ndarray [pair]
        Bytes from ``src`` to ``dst`` (> 0).
    fixed_load : float ndarray [link]
        Bytes that every routing puts on each link of the topology (injection and ejection; 0 elsewhere).
    """

    src: Int[np.ndarray, "pair"]
    dst: Int[np.ndarray, "pair"]
    nbytes: Float[np.ndarray, "pair"]
    fixed_load: Float[np.ndarray, "link"]

    @property
    def n_pairs(self) -> int:
        return int(self.src.shape[0])

    def z_fixed(self, capacity: LinkFloats) -> float:
        """The largest Z the fixed loads allow (1/s): ``min_l capacity / fixed_load``; inf if none."""
        m = self.fixed_load > 0
        return float((capacity[m] / self.fixed_load[m]).min()) if m.any() else math.inf


def check_demand(topology: Topology, demand: RouterDemand) -> None:
    """Refuse (:class:`ConfigError` naming the field, the value and what is allowed) a demand whose LP would be
    meaningless (negative bytes make it unbounded, zero or non-finite ones unsolvable, router ids out of range
    unbuildable), before anything is built."""
    R, L = int(topology.n_routers), int(topology.n_links)
    for name in ("src", "dst"):
        ids = np.asarray(getattr(demand, name))
        require(ids.size == 0 or np.issubdtype(ids.dtype, np.integer), f"demand.{name}", f"<{ids.dtype} array>",
                f"integer router ids in 0..{R - 1}")
        bad = ids[(ids < 0) | (ids >= R)]
        if bad.size:
            raise ConfigError(f"demand.{name}", int(bad[0]), f"a router id in 0..{R - 1}")
    b = np.asarray(demand.nbytes, dtype=np.float64)
    require(b.shape == np.shape(demand.src) == np.shape(demand.dst), "demand.nbytes", f"<{b.size} entries>",
            f"one per pair ({np.size(demand.src)})")
    if b.size and (not np.isfinite(b).all() or (b <= 0).any()):
        raise ConfigError("demand.nbytes", float(b[~np.isfinite(b) | (b <= 0)][0]), "finite bytes > 0",
                          "A pair without bytes is left out of the demand.")
    f = np.asarray(demand.fixed_load, dtype=np.float64)
    require(f.shape == (L,), "demand.fixed_load", f"<{f.size} entries>", f"one per link ({L})")
    if not np.isfinite(f).all() or (f < 0).any():
        raise ConfigError("demand.fixed_load", float(f[~np.isfinite(f) | (f < 0)][0]), "finite bytes >= 0")


NORMAL_BYTES = (2.0 ** -256, 2.0 ** 256)
"""Largest byte counts (of a pair or a fixed load) that :func:`normalized` leaves as they are (1e-77 to 1e77 bytes):
only a demand outside is scaled, so every realistic one builds the LPs it always built."""


def normalized(demand: RouterDemand) -> tuple[RouterDemand, int]:
    """``(demand with every byte count times 2**e, e)``: where its largest bytes (pairs or fixed loads) lie outside
    :data:`NORMAL_BYTES`, brought into ``[0.5, 1)`` by an exact power of two (else ``e = 0``), so that ``capacity /
    bytes`` stays finite whatever the bytes (1e-300 bytes on 1e9 B/s links: Z = 1e309 1/s overflowed, and the LPs
    were built with inf entries). Every bound of the scaled demand is the demand's exactly: Z times ``2**e``, times
    over ``2**e`` (:func:`math.ldexp`)."""
    b = np.asarray(demand.nbytes, np.float64)
    f = np.asarray(demand.fixed_load, np.float64)
    top = max(float(b.max()) if b.size else 0.0, float(f.max()) if f.size else 0.0)
    if not 0 < top < math.inf or NORMAL_BYTES[0] <= top <= NORMAL_BYTES[1]:  # (every realistic demand: as it is)
        return demand, 0
    e = -math.frexp(top)[1]
    return RouterDemand(demand.src, demand.dst, np.ldexp(b, e), np.ldexp(f, e)), e


def rescaled(res: PathBound, e: int) -> PathBound:
    """A :class:`PathBound` of a demand scaled by ``2**e`` (:func:`normalized`) as the bound of the demand itself
    (Z times ``2**e``; an overflow is inf, whose time is 0: the times of :func:`bound_times` stay exact)."""
    if e == 0:
        return res
    zu = _ldexp(res.z_upper, e)  # (overflowed: inf, still an upper bound of the rate)
    z = _ldexp(res.z, e)
    gap = res.gap
    if z == math.inf and res.z < math.inf:  # overflowed: the largest float, a lower rate than the flow's, so still
        z, gap = sys.float_info.max, math.inf  # feasible: 1 / z above the true time (never 0 s), the gap unknown
    elif zu == math.inf and res.z_upper < math.inf:
        gap = math.inf
    return dataclasses.replace(res, z=z, z_upper=zu, gap=gap, completion_time=1.0 / zu if zu > 0 else math.inf)


def _ldexp(x: float, e: int) -> float:
    """``x * 2**e``, inf where it overflows (:func:`math.ldexp` raises)."""
    try:
        return math.ldexp(x, e)
    except OverflowError:
        return math.inf


def _sources(demand: RouterDemand) -> tuple[np.ndarray, np.ndarray]:
    src, inv = np.unique(demand.src, return_inverse=True)
    return src, inv


COMMODITY_SPAN = 1e4
"""The edge LP's commodities: a source router's pairs whose bytes lie within this factor of its largest pair share
one commodity; pairs smaller still get their own (one more per further factor). Each commodity is normalised by
its own total, so no pair's bytes enter the LP below ``1 / COMMODITY_SPAN`` of its commodity's (HiGHS drops matrix
entries below 1e-9 and its tolerances are absolute: a 1-byte pair beside a 1 TB one was otherwise not routed)."""


def _commodities(demand: RouterDemand) -> tuple[np.ndarray, np.ndarray]:
    """``(source router of every commodity [C], commodity of every pair [pair])`` of the edge LP: one commodity
    per source router and magnitude class (:data:`COMMODITY_SPAN`), sorted by source router."""
    src = np.asarray(demand.src, np.int64).reshape(-1)
    b = np.asarray(demand.nbytes, np.float64).reshape(-1)
    if not src.size:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    _, sinv = np.unique(src, return_inverse=True)
    top = np.zeros(int(sinv.max()) + 1)
    np.maximum.at(top, sinv.reshape(-1), b)
    k = np.floor(np.log10(top[sinv.reshape(-1)] / b) / math.log10(COMMODITY_SPAN)).astype(np.int64)
    key, inv = np.unique(np.stack([src, np.maximum(k, 0)], axis=1), axis=0, return_inverse=True)
    return key[:, 0], inv.reshape(-1)


def _rate_scale(topology: Topology, demand: RouterDemand) -> float:
    """``Z0`` (1/s), the edge LP's unit of Z: the smallest of every source router's out-capacity over its bytes,
    every destination's in-capacity over its bytes and the fixed loads' limit (each an upper bound of the
    optimum, so ``Z / Z0 <= 1``; no router link is loaded by more than its capacity at ``Z0`` by one commodity
    alone unless it is the commodity's only way out)."""
    E, R = int(topology.n_router_links), int(topology.n_routers)
    cap_all = np.asarray(topology.capacity, dtype=np.float64)
    cap = cap_all[:E]
    out_cap = np.bincount(topology.link_src[:E], weights=cap, minlength=R)
    in_cap = np.bincount(topology.link_dst[:E], weights=cap, minlength=R)
    sent = np.bincount(demand.src, weights=demand.nbytes, minlength=R)
    recv = np.bincount(demand.dst, weights=demand.nbytes, minlength=R)
    z0 = min(float((out_cap[sent > 0] / sent[sent > 0]).min()), float((in_cap[recv > 0] / recv[recv > 0]).min()),
             demand.z_fixed(cap_all))
    return z0 if 0 < z0 < math.inf else float(cap.max()) / float(demand.nbytes.max())


def edge_size(topology: Topology, demand: RouterDemand) -> dict[str, int]:
    """Size of the edge LP of ``demand`` on ``topology`` before it is built.

    ``vars = S*E + 1``, ``rows = S*R + E``, ``nnz = 2*S*E`` (conservation)
    ``+ S*E`` (capacity) ``+ pairs + S`` (the Z column); ``bytes`` =
    :data:`BYTES_PER_NNZ` per nonzero plus 64 per variable and row. ``S``:
    commodities (one per source router, more for a source whose pairs' bytes span more than
    :data:`COMMODITY_SPAN`), ``E``: router links, ``R``: routers.
    """
    S = int(_commodities(demand)[0].size)
    E, R = int(topology.n_router_links), int(topology.n_routers)
    nnz = 3 * S * E + demand.n_pairs + S
    n_vars, rows = S * E + 1, S * R + E
    return {"sources": S, "vars": n_vars, "rows": rows, "nnz": nnz,
            "bytes": BYTES_PER_NNZ * nnz + 64 * (n_vars + rows)}


def _describe(size: dict[str, int]) -> str:
    return (f"the edge LP ({size['sources']:,} commodities x router links: {size['vars']:,} variables, "
            f"{size['rows']:,} rows, {size['nnz']:,} nonzeros)")


def edge_lp(topology: Topology, demand: RouterDemand) -> LP:
    """The edge (arc-flow) formulation as a scaled :class:`LP`; variables ``[g[k, e] (commodity-major), z]``.

    Scaled so that every coefficient is O(1) whatever the bytes and bandwidths (one commodity per source router
    and magnitude class, :func:`_commodities`): ``f[k, e] = Z0 * total_k * g[k, e]`` bytes/s (``total_k``: the
    commodity's bytes, ``Z0``: :func:`_rate_scale`), ``Z = Z0 * z`` (``lp.scale = Z0``); conservation ``N g_k =
    z * (1 at the source, -bytes / total_k at each destination)``; every capacity row divided by its capacity,
    ``sum_k (Z0 total_k / c_e) g[k, e] <= 1``, so its dual over ``c_e`` is the link's length
    (:func:`certify_edge_solution`)."""
    E, R = int(topology.n_router_links), int(topology.n_routers)
    cap_all = np.asarray(topology.capacity, dtype=np.float64)
    cap = cap_all[:E]
    src_r, inv = _commodities(demand)
    S = src_r.size
    z0 = _rate_scale(topology, demand)
    totals = np.bincount(inv, weights=demand.nbytes, minlength=S)
    # node-arc incidence N[v, e] = +1 if e leaves v, -1 if it enters v
    ls, ld = topology.link_src[:E], topology.link_dst[:E]
    N = sp.csr_matrix((np.r_[np.ones(E), -np.ones(E)], (np.r_[ls, ld], np.r_[np.arange(E), np.arange(E)])),
                      shape=(R, E))
    # z column: -(1 at s, -bytes / total at v)
    rows = np.r_[inv * R + demand.dst, np.arange(S) * R + src_r]
    vals = np.r_[demand.nbytes / totals[inv], -np.ones(S)]
    zcol = sp.csr_matrix((vals, (rows, np.zeros(rows.size, np.int64))), shape=(S * R, 1))
    A_eq = sp.hstack([sp.kron(sp.identity(S, format="csr"), N, format="csr"), zcol], format="csr")
    A_ub = sp.hstack([sp.csr_matrix(((z0 * totals[:, None] / cap[None, :]).ravel(),
                                     (np.tile(np.arange(E), S), np.arange(S * E))), shape=(E, S * E)),
                      sp.csr_matrix((E, 1))], format="csr")
    ub = np.full(S * E + 1, np.inf)
    ub[-1] = demand.z_fixed(cap_all) / z0
    c = np.zeros(S * E + 1)
    c[-1] = -1.0
    return LP(c, A_eq, np.zeros(S * R), A_ub, np.ones(E), ub, scale=z0)


def _fixed_only(topology: Topology, demand: RouterDemand, method: str, solver: str) -> PathBound:
    """No router pair to route: Z is the fixed loads' own limit, exactly."""
    z = demand.z_fixed(np.asarray(topology.capacity, dtype=np.float64))
    return bound_of(z, z, np.zeros(0), method, solver)


def _demand_table(topology: Topology, demand: RouterDemand) -> tuple[np.ndarray, np.ndarray]:
    """``(source routers [S], D [S, R])``: bytes from each source router to every router."""
    src_r, inv = _sources(demand)
    D = np.zeros((src_r.size, int(topology.n_routers)))
    np.add.at(D, (inv, demand.dst), demand.nbytes)
    return src_r, D


def certify_edge(topology: Topology, demand: RouterDemand, z_primal: float,
                 lengths: Float[np.ndarray, "router_link"] | None,
                 flows: Float[np.ndarray, "commodity router_link"] | None = None) -> tuple[float, float]:
    """A certified interval ``(z_lower, z_upper)`` of the all-paths optimum from an edge LP's answer.

    ``z_upper``: the dual bound of :func:`_dual_bound` (weak duality, valid
    for any link lengths >= 0) with the solver's capacity duals as lengths
    (their absolute values: HiGHS's marginals are <= 0, MPAX's multipliers
    >= 0), and the fixed loads' own limit ``min_l c_l / fixed_l``; ``inf``
    when the duals carry no length. ``z_lower``: with ``flows`` (bytes/s of every commodity of
    :func:`_commodities` on every router link), the rate of a flow rebuilt from them that is feasible whatever
    the solver's tolerances (:func:`_feasible_rate`: ``z_primal`` is its target); without, the solver's primal
    value ``z_primal`` as given. Pass ``z_primal = 0`` for a solve that did not reach its optimum (no feasible
    side). Never above ``z_upper``.
    """
    cap_all = np.asarray(topology.capacity, dtype=np.float64)
    upper = demand.z_fixed(cap_all)
    if lengths is not None:
        ln = np.abs(np.asarray(lengths, dtype=np.float64))
        if ln.size and ln.max() > 0:
            src_r, D = _demand_table(topology, demand)
            upper = min(upper, _dual_bound(topology, ln, cap_all[: int(topology.n_router_links)], src_r, D)[0])
    lower = z_primal
    if flows is not None and z_primal > 0:
        lower = min(_feasible_rate(topology, demand, flows, z_primal), demand.z_fixed(cap_all))
    return min(lower, upper), upper


def _feasible_rate(topology: Topology, demand: RouterDemand, flows: np.ndarray, z_target: float) -> float:
    """The rate Z (1/s) of a feasible flow rebuilt from an edge LP's commodity flows ``flows [C, E]`` (bytes/s).

    Negative flows are dropped. At every router but its source a commodity's inflow minus outflow is what it
    delivers there (a flow whose other routers all receive at least what they send decomposes into paths from
    the source and cycles); a router that sends more than it receives (a leak the solver's tolerance allowed) is
    sent the difference from the source, and every pair that received less than ``z_target * bytes`` is sent
    the rest, both on the source's shortest path (lengths ``1 / capacity``). Every pair then moves at least
    ``z_target * bytes``; scaled by the worst ``load / capacity`` of the router links, the flow is feasible:
    ``Z = z_target / max_e load_e / c_e`` (0 when the flows are not finite).
    """
    E, R = int(topology.n_router_links), int(topology.n_routers)
    cap = np.asarray(topology.capacity, dtype=np.float64)[:E]
    src_r, inv = _commodities(demand)
    S = src_r.size
    f = np.asarray(flows, dtype=np.float64).reshape(S, E)
    if not np.isfinite(f).all():
        return 0.0
    f = np.maximum(f, 0.0)
    ls, ld = topology.link_src[:E], topology.link_dst[:E]
    into = sp.csr_matrix((np.ones(E), (np.arange(E), ld)), shape=(E, R))
    out = sp.csr_matrix((np.ones(E), (np.arange(E), ls)), shape=(E, R))
    excess = np.asarray((into.T @ f.T).T - (out.T @ f.T).T)
    excess[np.arange(S), src_r] = 0.0
    want = np.zeros((S, R))
    np.add.at(want, (inv, demand.dst), z_target * demand.nbytes)
    extra = np.maximum(-excess, 0.0) + np.maximum(want - np.maximum(excess, 0.0), 0.0)
    extra[np.arange(S), src_r] = 0.0
    load = f.sum(axis=0)
    if extra.any():  # one tree per source router (its commodities' extras summed: the tree flows are linear)
        srcs, back = np.unique(src_r, return_inverse=True)
        by_src = np.zeros((srcs.size, R))
        np.add.at(by_src, back.reshape(-1), extra)
        load = load + _tree_flows(topology, _trees(topology, 1.0 / cap, srcs), srcs, by_src)[0]
    worst = float(np.max(load / cap))
    return z_target / worst if worst > 0 else math.inf


def certify_edge_solution(topology: Topology, demand: RouterDemand, lp: LP, x: Float[np.ndarray, "var"] | None,
                          ub_dual: Float[np.ndarray, "router_link"] | None, z_primal: float) -> tuple[float, float]:
    """:func:`certify_edge` of a solution of :func:`edge_lp` ``lp``: its variables ``x`` back in bytes/s per
    commodity and link, its capacity rows' duals ``ub_dual`` back to link lengths (each row was divided by its
    capacity: the length is the dual over the capacity)."""
    E = int(topology.n_router_links)
    cap = np.asarray(topology.capacity, dtype=np.float64)[:E]
    src_r, inv = _commodities(demand)
    totals = np.bincount(inv, weights=demand.nbytes, minlength=src_r.size)
    flows = None
    if x is not None:
        flows = np.asarray(x, dtype=np.float64)[: src_r.size * E].reshape(src_r.size, E) * (lp.scale * totals[:, None])
    lengths = None if ub_dual is None else np.abs(np.asarray(ub_dual, dtype=np.float64)[:E]) / cap
    return certify_edge(topology, demand, z_primal, lengths, flows)


def edge_bound(topology: Topology, demand: RouterDemand, solver: str = "highs") -> PathBound:
    """Maximum concurrent flow by the edge LP; refused before it is built when it would not fit in memory.

    The answer is certified on both sides by :func:`certify_edge_solution` (``z_upper`` from the LP's capacity
    duals, ``z`` from a flow rebuilt from its flows)."""
    _check_solver(solver)
    check_demand(topology, demand)
    if demand.n_pairs == 0:
        return _fixed_only(topology, demand, "edge", solver)
    size = edge_size(topology, demand)
    have = available_memory()
    if size["bytes"] > 0.8 * have:
        raise ResourceError("method", "edge", f"a size that fits in memory: {_describe(size)} need about "
                                              f"{fmt_size(size['bytes'])}, {fmt_size(have)} is available",
                            "Use method='garg_konemann' (or 'auto'), which needs no LP.")
    lp = edge_lp(topology, demand)
    sol = check_solved(solve(lp, solver), "solver", _describe(size),
                       "'pdhg' is the other solver; bounds=garg_konemann solves no LP.")
    # an unconverged PDHG primal is no feasible flow (its Z may exceed the optimum): no feasible side, its duals
    # still certify the upper side
    z = z_from_objective(lp, sol.objective) if reached(sol) else 0.0
    lo, up = certify_edge_solution(topology, demand, lp, sol.x, sol.ub_dual, z)
    return bound_of(lo, up, np.zeros(0), "edge", sol.solver)


def _trees(topology: Topology, length: np.ndarray, src_r: np.ndarray):
    """Shortest-path trees from every source under ``length`` (SciPy Dijkstra): ``(dist, pred, best, bkey)``.

    Parallel links keep the shortest: ``best`` are the link ids kept (one per
    router pair ``(u, v)``), ``bkey`` their sorted keys ``u * R + v``.
    """
    from scipy.sparse.csgraph import dijkstra

    E, R = int(topology.n_router_links), int(topology.n_routers)
    ls, ld = topology.link_src[:E], topology.link_dst[:E]
    key = ls.astype(np.int64) * R + ld
    order = np.lexsort((length, key))  # by (u, v), shortest first
    first = np.r_[True, key[order][1:] != key[order][:-1]]
    best = order[first]  # one link per (u, v): the shortest
    bkey = key[best]
    G = sp.csr_matrix((length[best], (ls[best], ld[best])), shape=(R, R))
    dist, pred = dijkstra(G, directed=True, indices=src_r, return_predecessors=True)
    return dist, pred, best, bkey


def _tree_flows(topology: Topology, trees, src_r: np.ndarray, D: np.ndarray):
    """Link flows of routing every source's demand on its tree: ``(link flow [E], alpha)``.

    ``D[i, v]``: bytes from source ``src_r[i]`` to router ``v``; ``alpha = sum D[i, v] dist(i, v)``.
    """
    dist, pred, best, bkey = trees
    E, R = int(topology.n_router_links), int(topology.n_routers)
    alpha = float((D * np.where(D > 0, dist, 0.0)).sum())
    # push subtree demand towards the source, deepest routers (in tree hops) first
    rows = np.arange(src_r.size)
    depth = np.zeros(pred.shape, np.int64)
    has = pred >= 0
    for _ in range(R):
        nxt = np.where(has, depth[rows[:, None], np.where(has, pred, 0)] + 1, 0)
        if (nxt == depth).all():
            break
        depth = nxt
    # one level of tree depth at a time, deepest first: a router's subtree total is complete when its depth
    # comes (its children are one level deeper), and a parent receives its children in router order
    sub = D.copy()
    ri, vi = np.nonzero(has)  # every (source, router) with a parent, by source then router
    di = depth[ri, vi]
    for d in range(int(di.max()) if di.size else 0, 0, -1):
        at = di == d
        r, v = ri[at], vi[at]
        np.add.at(sub, (r, pred[r, v]), sub[r, v])
    link = best[np.searchsorted(bkey, pred[ri, vi].astype(np.int64) * R + vi)]
    return np.bincount(link, weights=sub[ri, vi], minlength=E), alpha


def _tree_paths(trees, R: int, src_r: np.ndarray, qi: np.ndarray, qv: np.ndarray) -> np.ndarray:
    """The tree path of every pair ``(src_r[qi], qv)`` as link ids, walked from the destination back:
    ``[pair, hop]``, padded with -1."""
    _, pred, best, bkey = trees
    cur = qv.astype(np.int64)
    s = src_r[qi]
    hops = []
    for _ in range(R):
        act = cur != s
        if not act.any():
            break
        p = np.where(act, pred[qi, cur], s).astype(np.int64)
        hop = np.full(cur.size, -1, np.int64)
        hop[act] = best[np.searchsorted(bkey, p[act] * R + cur[act])]
        hops.append(hop)
        cur = p
    return np.stack(hops, axis=1) if hops else np.full((qi.size, 0), -1, np.int64)


REFINE_MAX_NNZ = 2_000_000
"""Garg-Konemann's tightening: the largest restricted path LP (path-link entries) it builds, and at most 40% of
the available memory at :data:`BYTES_PER_NNZ` per entry; beyond, no new paths are added (its bounds stay valid,
the gap stops shrinking)."""

REFINE_MAX_PAIRS = 50_000
"""Garg-Konemann's tightening runs only for demands of at most this many router pairs (it walks every pair's
path at every step; beyond, the plain multiplicative weights run)."""


class _Columns:
    """Distinct paths per pair collected for the restricted path LP (pair index, link ids), up to ``max_nnz``."""

    def __init__(self, max_nnz: int):
        self.seen: set = set()
        self.pair: list[int] = []
        self.links: list[np.ndarray] = []
        self.nnz = 0
        self.max_nnz = max_nnz

    @property
    def full(self) -> bool:
        return self.nnz >= self.max_nnz

    def add(self, paths: Int[np.ndarray, "pair hop"]) -> int:
        """Add the paths (``[pair, hop]`` of :func:`_tree_paths`) not seen yet; returns how many were new."""
        n = 0
        if self.full:
            return 0
        for q, row in enumerate(paths):
            key = (q, row.tobytes())
            if key in self.seen:
                continue
            self.seen.add(key)
            ls = row[row >= 0]
            self.pair.append(q)
            self.links.append(ls)
            self.nnz += ls.size
            n += 1
        return n

    def incidence(self, E: int) -> sp.csr_matrix:
        cols = np.repeat(np.arange(len(self.links)), [x.size for x in self.links])
        return sp.csr_matrix((np.ones(cols.size), (np.concatenate(self.links), cols)), shape=(E, len(self.links)))


def _dual_bound(topology: Topology, length: np.ndarray, cap: np.ndarray, src_r, D):
    """``(upper bound of Z, trees)`` from lengths ``length >= 0``: ``sum_e l_e c_e / sum D[s, d] dist_l(s, d)``.

    Weak LP duality of the concurrent flow LP, valid for every ``l >= 0``
    (with ``pi_q = dist_l(q)`` the dual constraints hold; scaling ``l`` to
    ``sum D dist_l = 1`` gives a dual feasible point of objective ``sum l c``).
    Zero lengths are raised to ``1e-12 * sum(l c) / (E c_e)`` (Dijkstra needs ``l > 0``; relative to each
    link's capacity, so that the raised lengths add at most ``1e-12`` of ``sum l c`` whatever the spread of the
    capacities: ``1e-12 * max(l)`` on a 1e13 B/s link beside 1e3 B/s ones added 4% to the bound), and the bound
    is computed with the raised lengths (still ``>= 0``).
    """
    lc = float(length @ cap)
    floor = 1e-12 * lc / (cap.size * cap) if lc > 0 else np.full(cap.size, 1e-12 * float(length.max()))
    length = np.maximum(length, np.maximum(floor, 1e-300))
    trees = _trees(topology, length, src_r)
    alpha = float((D * np.where(D > 0, trees[0], 0.0)).sum())
    return (float(length @ cap) / alpha if alpha > 0 else math.inf), trees


def _restricted(cols: _Columns, dq: np.ndarray, cap: np.ndarray):
    """Solve the path LP over the collected paths (HiGHS): ``(certified lower bound of Z, dual lengths)``.

    The LP is :func:`~evaluator.lp._model1.path_lp`'s, scaled per pair's magnitude and per capacity (HiGHS's
    tolerances are absolute: with one scale for all, a 500-byte pair on 1e3 B/s links beside a 1e12-byte one on
    1e13 B/s links was below them, and the rounds stopped at [0.05 s, 0.12 s] for the optimum 0.0625 s). The
    lower bound is rebuilt from HiGHS's flows (back in bytes/s), not taken from its
    objective: negative flows are dropped, every pair gets ``Z_q = sum f / d_q``
    and the flow is scaled by its worst link, so the value is that of a
    feasible flow whatever the solver's tolerances. The lengths are the
    marginals of the capacity rows over the factor each row was divided by (>= 0; 0 on links no path uses).
    """
    from ._model1 import dual_link_lengths, path_flows, path_lp
    from ._solvers import solve_highs

    E = cap.size
    inc = cols.incidence(E)
    pair = np.asarray(cols.pair, np.int64)
    lp = path_lp(inc, pair, dq, cap)
    sol = solve_highs(lp)
    if not np.isfinite(sol.objective):
        return 0.0, None
    lower, _ = certify_path(inc, pair, dq, cap, None, path_flows(lp, sol.x), None)
    length = dual_link_lengths(np.minimum(sol.ub_dual, 0.0), E, inc.tocsr(), lp)
    return lower, (length if length.any() else None)


def _check_gk(eps, target_gap, max_steps, refine, refine_after, max_rounds) -> None:
    """Refuse (:class:`ConfigError` naming the argument, the value and what is allowed) a bad setting of
    :func:`garg_konemann` before anything runs."""
    def number(x) -> bool:
        return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, (bool, np.bool_))

    require(number(eps) and 0 < eps < 1, "eps", eps, "a number in (0, 1)")
    require(number(target_gap) and 0 < target_gap < math.inf, "target_gap", target_gap, "a finite number > 0")
    require(is_int(max_steps) and max_steps >= 1, "max_steps", max_steps, "an integer >= 1")
    require(isinstance(refine, (bool, np.bool_)), "refine", refine, "True or False")
    require(is_int(refine_after) and refine_after >= 0, "refine_after", refine_after, "an integer >= 0")
    require(is_int(max_rounds) and max_rounds >= 0, "max_rounds", max_rounds, "an integer >= 0")


def garg_konemann(topology: Topology, demand: RouterDemand, eps: float = 0.1, target_gap: float = 0.01,
                  max_steps: int = 2_000, refine: bool = True, refine_after: int = 50,
                  max_rounds: int = 30) -> PathBound:
    """Maximum concurrent flow by multiplicative weights over shortest paths, with a certified gap.

    Returns ``z`` = the best feasible (lower) value found and ``z_upper`` =
    the best dual bound over every length function tried (the minimum, not
    the last); ``gap = z_upper / z - 1`` (<= ``target_gap`` unless the steps
    or rounds ran out first; the gap is reported either way). ``eps`` is the
    length-update rate (smaller: slower, closer).

    ``refine`` (column generation, after ``refine_after`` steps when the gap is
    still above ``target_gap``): the multiplicative weights' dual bound
    converges far more slowly than its flow, so the paths they used become
    the columns of the restricted path LP (Model 1 over those paths, HiGHS);
    its optimum is a feasible flow (lower bound, rebuilt from the flows), its
    capacity duals are lengths whose dual bound (:func:`_dual_bound`, valid
    for any lengths) is an upper bound, and the shortest paths under them are
    added as new columns, up to ``max_rounds`` rounds or until no path is
    new (the two bounds then meet: LP duality). ``steps`` and ``rounds`` of
    the result say how many ran.
    """
    _check_gk(eps, target_gap, max_steps, refine, refine_after, max_rounds)
    check_demand(topology, demand)
    cap_all = np.asarray(topology.capacity, dtype=np.float64)
    z_fix = demand.z_fixed(cap_all)
    if demand.n_pairs == 0:
        return _fixed_only(topology, demand, "garg_konemann", "multiplicative_weights")
    E, R = int(topology.n_router_links), int(topology.n_routers)
    cap = cap_all[:E]
    src_r, inv = _sources(demand)
    S = src_r.size
    need = 8 * S * R * 4 + 8 * E * 8
    have = available_memory()
    if need > 0.8 * have:
        raise ResourceError("method", "garg_konemann", f"a size that fits in memory: its {S:,} x {R:,} "
                                                       f"distance tables need about {fmt_size(need)}, "
                                                       f"{fmt_size(have)} is available")
    D = np.zeros((S, R))
    np.add.at(D, (inv, demand.dst), demand.nbytes)
    qi, qv = np.nonzero(D)  # the pairs of the restricted path LP
    dq = D[qi, qv]
    refine = refine and qi.size <= REFINE_MAX_PAIRS
    cols = _Columns(min(REFINE_MAX_NNZ, int(0.4 * have / BYTES_PER_NNZ))) if refine else None

    def done(lo, up):
        return min(up, z_fix) / min(lo, z_fix) - 1.0 <= target_gap if lo > 0 else False

    length = 1.0 / cap
    total = np.zeros(E)
    routed = 0.0
    lower, upper = 0.0, math.inf
    steps = rounds = 0
    while steps < max_steps and not (refine and steps >= refine_after):
        steps += 1
        trees = _trees(topology, length, src_r)
        g, alpha = _tree_flows(topology, trees, src_r, D)
        if cols is not None and not cols.full:
            cols.add(_tree_paths(trees, R, src_r, qi, qv))
        upper = min(upper, float(length @ cap) / alpha)
        sigma = float(np.min(cap[g > 0] / g[g > 0]))  # fraction of the demand this step routes
        total += sigma * g
        routed += sigma
        length = length * (1.0 + eps * sigma * g / cap)
        length = np.maximum(length / length.max(), 1e-30)  # scale-free; kept in range and > 0 (Dijkstra)
        lower = routed / float(np.max(total / cap))
        if done(lower, upper):
            break
    if cols is not None and not done(lower, upper):
        cols.add(_tree_paths(_trees(topology, length, src_r), R, src_r, qi, qv))
        while rounds < max_rounds:
            rounds += 1
            lo, lr = _restricted(cols, dq, cap)
            lower = max(lower, lo)
            if lr is None or lower >= z_fix or done(lower, upper):
                break
            up, trees = _dual_bound(topology, lr, cap, src_r, D)
            upper = min(upper, up)
            if done(lower, upper) or not cols.add(_tree_paths(trees, R, src_r, qi, qv)):
                break
    return bound_of(min(lower, z_fix), min(upper, z_fix), np.zeros(0), "garg_konemann", "multiplicative_weights",
                    steps, rounds)


def optimal_bound(topology: Topology, demand: RouterDemand, method: str = "auto", solver: str = "highs",
                  target_gap: float = 0.01) -> PathBound:
    """The best completion time any routing reaches for ``demand``: ``edge`` LP or ``garg_konemann``.

    ``method="auto"`` solves the edge LP when it has at most
    :data:`EDGE_AUTO_NNZ` nonzeros and fits in memory, Garg-Konemann
    otherwise; the result's ``method`` says which ran and ``gap`` its gap.
    """
    if not isinstance(method, str) or method not in METHODS:
        raise ConfigError("method", method, f"one of {list(METHODS)}")
    _check_solver(solver)
    _check_gk(0.1, target_gap, 1, True, 0, 0)  # read by garg_konemann only, but refused for every method
    check_demand(topology, demand)
    demand, e = normalized(demand)
    return rescaled(_optimal_bound(topology, demand, method, solver, target_gap), e)


def _optimal_bound(topology: Topology, demand: RouterDemand, method: str, solver: str,
                   target_gap: float) -> PathBound:
    if method == "auto":
        size = edge_size(topology, demand)
        fits = size["bytes"] <= 0.8 * available_memory()
        method = "edge" if size["nnz"] <= EDGE_AUTO_NNZ and fits else "garg_konemann"
    if method == "edge":
        return edge_bound(topology, demand, solver)
    return garg_konemann(topology, demand, target_gap=target_gap)
