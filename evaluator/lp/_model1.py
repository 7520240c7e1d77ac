"""Bui et al. Model 1: the split of each pair's demand over its paths that maximises the common rate Z.

Units and meaning. Pair ``q`` has ``demand[q]`` bytes to move; path ``p``
of pair ``pair[p]`` carries a rate ``f_p`` (bytes/s). ``Z`` (1/s) is the
common rate multiplier: every pair moves at ``Z * demand[q]`` bytes/s, so
every pair finishes at the same time and the exchange's completion time is
``1 / Z`` seconds (for the demand as given: "unit demand scaling"). The
LP::

    maximise Z  subject to
      sum_{p of q} f_p = Z * demand[q]                      (every pair q)
      sum_p incidence[l, p] * f_p + Z * fixed_load[l] <= capacity[l]   (every link l)
      f >= 0

``incidence[l, p]`` is the fraction of path (or path class) ``p``'s flow
that crosses link ``l``: 1 for a path on the link, a fraction for a class
of paths spread over parallel links. ``fixed_load[l]`` (bytes) is demand
whose route no choice changes (injection, ejection, intra-group hops); it
moves at the same rate ``Z``. A link with no path and only fixed load
caps ``Z`` at ``capacity / fixed_load`` (a bound on the variable, not a row).

Scaling (:func:`path_lp`): HiGHS's tolerances are absolute (about 1e-7) and it drops matrix entries below
1e-9, so every coefficient is made O(1) whatever the bytes and bandwidths: ``Z = Z0 * z`` with ``Z0`` an upper
estimate of the optimum (:func:`_rate_estimate`, so ``z <= 1``); pair ``q``'s path flows in units of ``Z0 *
D_q`` (``D_q``: its bytes rounded up to its magnitude class, a power of :data:`MAGNITUDE_SPAN` below the largest
pair's, so ``d_q / D_q`` lies in ``(1e-4, 1]``), a path that cannot carry ``1e-4`` of its pair's in a smaller
unit still (:func:`_bound_paths`); every capacity row divided by ``C_l`` (its capacity's class below the largest
capacity), and entries that weigh less than 1e-9 of their row at any feasible point dropped. Flows and duals go
back to bytes/s and link lengths through the LP's ``x_unit`` and ``ub_unit`` where they are certified (:func:`certify_path_solution`); :attr:`PathBound.z` is in 1/s.
(Until 2026-12-07 only the largest capacity and demand scaled it: a 500-byte pair on 1e3 B/s links beside a
1e12-byte one on 1e13 B/s links was below tolerance, and the certified intervals were valid but loose, e.g.
[2.5 s, 1000 s] for 250 s.)
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import scipy.sparse as sp

from .._types import Float, Int, LinkFloats
from ..errors import ConfigError, require
from ._solvers import LP, Solution, check_solved, solve

__all__ = ["PathBound", "bound_of", "certify_path", "certify_path_solution", "path_lp", "solve_path_lp",
           "z_from_objective", "MAGNITUDE_SPAN"]

MAGNITUDE_SPAN = 1e4
"""Model 1's magnitude classes (as the edge LP's ``COMMODITY_SPAN``): pairs whose bytes lie within this factor of
the largest pair's share one unit of flow, smaller ones get the next power of it below, and so on; capacity rows
likewise by capacity, and a path whose narrowest link carries less than ``1 / MAGNITUDE_SPAN`` of its pair at
``z = 1`` likewise by that share (:func:`_bound_paths`). Where all of them lie within this factor the LP is the
single-scale one of before 2026-12-07 up to one common unit of the flows and one of Z, so solutions stored for it
(``tests/data/lp_certificates``) still certify."""


@dataclasses.dataclass(frozen=True)
class PathBound:
    """The optimum of a rate LP as a certified interval ``[z, z_upper]`` of the rate Z.

    Attributes
    ----------
    z : float
        Common rate multiplier (1/s) of a flow that reaches it: the *feasible* side (``inf`` when nothing limits
        it). Rebuilt from the solver's path flows and scaled by its worst link for path LPs and Garg-Konemann
        (feasible whatever the solver's tolerances); the solver's primal value (feasible to its tolerance, and
        never above ``z_upper``) for the edge LP.
    completion_time : float
        ``1 / z_upper`` (s): a *certified lower bound* on the time of the demand over these paths (no routing
        that uses them finishes sooner). :attr:`completion_time_upper` is the feasible side.
    flow : ndarray [path]
        Rate of every path (bytes/s) at the optimum (empty for bounds without paths).
    method, solver : str
        Formulation (``model1``, ``edge``, ``garg_konemann``, ``dragonfly_adaptive``) and solver
        (``highs``, ``pdhg``, ``multiplicative_weights``).
    gap : float
        ``z_upper / z - 1``: the proven width of the interval.
    z_upper : float
        A *certified* upper bound of the optimum: weak LP duality with the solver's dual values used as link
        lengths (:func:`certify_path`, :func:`~evaluator.lp._flow.certify_edge`), valid for any lengths >= 0
        whatever the solver's accuracy.
    steps, rounds : int
        Garg-Konemann: multiplicative-weight steps, and rounds of the column-generation tightening run (0 for
        the LPs).
    status : str
        ``"optimal"``, or the solver's word for where it stopped short (PDHG: MPAX's status, e.g.
        ``"iteration_limit"``): the interval is certified either way, the flow is then not the optimum's.
    """

    z: float
    completion_time: float
    flow: Float[np.ndarray, "path"]
    method: str
    solver: str
    gap: float
    z_upper: float
    steps: int = 0
    rounds: int = 0
    status: str = "optimal"

    @property
    def completion_time_upper(self) -> float:
        """``1 / z`` (s): the time of a flow that reaches ``z`` (the feasible side)."""
        return 1.0 / self.z if self.z > 0 else math.inf


def bound_of(z: float, z_upper: float, flow: Float[np.ndarray, "path"], method: str, solver: str, steps: int = 0,
             rounds: int = 0) -> PathBound:
    """A :class:`PathBound` from a certified interval ``z <= Z* <= z_upper`` (``z`` is lowered to ``z_upper``
    if the solver's primal value overshoots its certified dual by rounding)."""
    z = min(z, z_upper)
    gap = z_upper / z - 1.0 if 0 < z < math.inf else (0.0 if z == z_upper else math.inf)
    return PathBound(z, 1.0 / z_upper if z_upper > 0 else math.inf, flow, method, solver, gap, z_upper, steps,
                     rounds)


def path_lp(incidence: sp.spmatrix, pair: Int[np.ndarray, "path"], demand: Float[np.ndarray, "pair"],
            capacity: LinkFloats, fixed_load: LinkFloats | None = None) -> LP:
    """Model 1 as an :class:`~evaluator.lp.LP` (scaled; see the module docstring).

    Parameters
    ----------
    incidence : scipy.sparse matrix [link, path]
        Fraction of each path's flow on each link (1 for a path through the link).
    pair : int ndarray [path]
        Pair index (``0 .. len(demand)-1``) of every path.
    demand : float ndarray [pair]
        Bytes each pair moves (>= 0).
    capacity : float ndarray [link]
        Bytes/s per direction (> 0).
    fixed_load : float ndarray [link], optional
        Bytes on each link that every choice of split puts there.

    Variables ``[g_0 .. g_{P-1}, z]`` (scaled; see the module docstring): path ``p``'s flow is ``g_p *
    lp.x_unit[p]`` bytes/s (:func:`path_flows`), ``Z = z * lp.scale`` 1/s; the objective minimises ``-z``; the
    capacity rows were divided by ``lp.ub_unit`` (:func:`dual_link_lengths` takes ``lp`` to undo it).
    """
    A = sp.csr_matrix(incidence, dtype=np.float64)
    L, P = A.shape
    pair = np.asarray(pair, dtype=np.int64).reshape(-1)
    demand = np.asarray(demand, dtype=np.float64).reshape(-1)
    capacity = np.asarray(capacity, dtype=np.float64).reshape(-1)
    fixed = np.zeros(L) if fixed_load is None else np.asarray(fixed_load, dtype=np.float64).reshape(-1)
    Q = demand.shape[0]
    require(pair.shape == (P,), "pair", f"<{pair.shape[0]} entries>", f"one pair index per path ({P})")
    require(capacity.shape == (L,), "capacity", f"<{capacity.shape[0]} entries>", f"one capacity per link ({L})")
    require(fixed.shape == (L,), "fixed_load", f"<{fixed.shape[0]} entries>", f"one load per link ({L})")
    if P and (pair.min() < 0 or pair.max() >= Q):
        raise ConfigError("pair", int(pair.min() if pair.min() < 0 else pair.max()), f"a pair index in 0..{Q - 1}")
    if (demand < 0).any() or not np.isfinite(demand).all():
        raise ConfigError("demand", float(demand[(demand < 0) | ~np.isfinite(demand)][0]), "finite bytes >= 0")
    if (capacity <= 0).any() or not np.isfinite(capacity).all():
        raise ConfigError("capacity", float(capacity[(capacity <= 0) | ~np.isfinite(capacity)][0]),
                          "finite bytes/s > 0")
    if (A.data < 0).any() or (fixed < 0).any():
        raise ConfigError("incidence", "<negative entries>", "fractions >= 0")
    missing = np.setdiff1d(np.nonzero(demand > 0)[0], pair)
    if missing.size:
        raise ConfigError("pair", int(missing[0]), "a path for every pair with demand",
                          f"Pair {int(missing[0])} has {demand[missing[0]]:g} bytes and no path.")
    c_top = float(capacity.max()) if L else 1.0
    keep = demand > 0
    d_top = float(demand.max()) if keep.any() else 1.0
    D = _magnitude(demand, d_top)
    C = _magnitude(capacity, c_top)
    z0 = _rate_estimate(A, pair, demand, capacity, fixed) if keep.any() else c_top / d_top
    used = np.diff(A.indptr) > 0
    # rows: links that some path uses; links with fixed load only bound Z
    z_ub = np.inf
    only_fixed = ~used & (fixed > 0)
    if only_fixed.any():
        z_ub = float((capacity[only_fixed] / (z0 * fixed[only_fixed])).min())
    rows = np.nonzero(used)[0]
    # capacity rows over C_l: sum_p A[l, p] (z0 D_q / C_l) g_p + (z0 F_l / C_l) z <= c_l / C_l
    A_rows = sp.diags(1.0 / C[rows]) @ A[rows] @ sp.diags(z0 * D[pair])
    A_rows, bound = _bound_paths(A_rows, capacity[rows] / C[rows])
    # a path whose narrowest link carries less than 1/SPAN of its pair at z = 1: in units of that share's class
    S = _magnitude(np.minimum(bound, 1.0), 1.0)
    A_rows = A_rows @ sp.diags(S)
    A_ub = sp.hstack([A_rows, sp.csr_matrix((z0 * fixed[rows] / C[rows])[:, None])], format="csr")
    A_ub.eliminate_zeros()
    # demand rows: sum_{p of q} g_p - (d_q / D_q) z = 0
    E = sp.csr_matrix((S, (pair, np.arange(P))), shape=(Q, P))
    A_eq = sp.hstack([E, sp.csr_matrix(-(demand / D)[:, None])], format="csr")
    A_eq = A_eq[np.nonzero(keep)[0]]
    # paths of pairs without demand carry nothing: bound them at 0
    ub = np.full(P + 1, np.inf)
    ub[:P][~keep[pair]] = 0.0
    ub[P] = z_ub
    if not keep.any():
        ub[P] = 0.0  # no demand: Z is unconstrained; solved as 0 and reported as inf
    c = np.zeros(P + 1)
    c[P] = -1.0
    return LP(c, A_eq, np.zeros(A_eq.shape[0]), A_ub, capacity[rows] / C[rows], ub, scale=z0,
              x_unit=np.r_[z0 * D[pair] * S, z0], ub_unit=C[rows])


NEGLIGIBLE = 1e-9
"""Model 1's dropped entries: a path's entries in a capacity row whose largest possible share of the row's
capacity (at the path's own bound, :func:`_bound_paths`) is below ``NEGLIGIBLE / (entries in the row)``, so that
what a row drops weighs at most this much of its capacity at any feasible point."""


def _bound_paths(A_rows: sp.spmatrix, b: np.ndarray) -> tuple[sp.csr_matrix, np.ndarray]:
    """``(capacity rows less their negligible entries, every path's bound)``: a path alone fits its narrowest
    link, ``g_p <= min_l b_l / a_lp`` (implied by the rows; :func:`path_lp` measures a path whose bound is below
    1 in its bound's magnitude class, so that its largest coefficient is O(1), not e.g. 4e7 for a 1e12-byte
    pair's path over a 1e3 B/s link), and an entry whose largest share ``a_lp * bound_p / b_l`` of its row is
    below :data:`NEGLIGIBLE` over the row's entries is dropped (HiGHS drops entries below 1e-9 anyway; MPAX's
    PDHG went to NaN on a 500-byte pair's 4e-9 entries on 1e13 B/s links beside such a path). The flows are
    certified on the full incidence (:func:`certify_path`), so a dropped entry costs at most its share of the
    lower side."""
    Ac = sp.csc_matrix(A_rows)
    Ac.sum_duplicates()
    Ac.eliminate_zeros()
    P = Ac.shape[1]
    n = np.diff(Ac.indptr)
    bound = np.full(P, np.inf)
    if Ac.nnz:
        nz = n > 0
        bound[nz] = np.minimum.reduceat(b[Ac.indices] / Ac.data, Ac.indptr[:-1][nz])
        share = Ac.data * bound[np.repeat(np.arange(P), n)] / b[Ac.indices]
        per_row = np.bincount(Ac.indices, minlength=b.size)
        Ac.data[share < NEGLIGIBLE / per_row[Ac.indices]] = 0.0
        Ac.eliminate_zeros()
    return Ac.tocsr(), bound


def _magnitude(values: np.ndarray, top: float) -> np.ndarray:
    """Every value's unit: ``top / MAGNITUDE_SPAN**k`` with ``k >= 0`` the least that leaves the value within a
    factor :data:`MAGNITUDE_SPAN` of it (``top`` for zeros)."""
    unit = np.full(values.shape, top)
    pos = values > 0
    k = np.maximum(np.floor(np.log10(top / values[pos]) / math.log10(MAGNITUDE_SPAN)), 0.0)
    unit[pos] = top * MAGNITUDE_SPAN ** -k
    return unit


def _rate_estimate(A: sp.csr_matrix, pair: np.ndarray, d: np.ndarray, c: np.ndarray, F: np.ndarray) -> float:
    """``Z0`` (1/s): an upper bound of Model 1's optimum, the least of: every pair's paths each at the capacity
    of its narrowest link; every link's capacity over the bytes that cross it on every path of their pair (and
    its fixed load); weak duality (:func:`certify_path`) with lengths ``1 / c`` and with lengths 1. Falls back to
    ``max c / max d`` when none is finite."""
    L, P = A.shape
    Q = d.size
    act = d > 0
    est = [math.inf]
    Ac = sp.csc_matrix(A)
    Ac.eliminate_zeros()
    n = np.diff(Ac.indptr)
    if Ac.nnz:
        cap_p = np.full(P, math.inf)
        nz = n > 0
        cap_p[nz] = np.minimum.reduceat(c[Ac.indices] / Ac.data, Ac.indptr[:-1][nz])
        with np.errstate(invalid="ignore"):
            per_pair = np.bincount(pair, weights=cap_p, minlength=Q)[act] / d[act]
        est.append(float(np.nanmin(per_pair)) if per_pair.size else math.inf)
        col = np.repeat(np.arange(P), n)
        key, inv, cnt = np.unique(Ac.indices * Q + pair[col], return_inverse=True, return_counts=True)
        least = np.full(key.size, math.inf)
        np.minimum.at(least, inv.reshape(-1), Ac.data)
        every = cnt == np.bincount(pair, minlength=Q)[key % Q]
        forced = np.bincount(key[every] // Q, weights=d[key[every] % Q] * least[every], minlength=L) + F
    else:
        forced = F.copy()
    m = forced > 0
    if m.any():
        est.append(float((c[m] / forced[m]).min()))
    for ln in (1.0 / c, np.ones(L)):
        best = np.full(Q, math.inf)
        np.minimum.at(best, pair, A.T @ ln)
        denom = float(d[act] @ best[act] + F @ ln)
        if denom > 0 and math.isfinite(denom):
            est.append(float(ln @ c) / denom)
    z0 = min(est)
    return z0 if 0 < z0 < math.inf else (float(c.max()) if L else 1.0) / float(d.max())


def z_from_objective(lp: LP, objective: float) -> float:
    """Z (1/s) of a scaled path LP from its optimal objective (``-Z`` scaled)."""
    return -float(objective) * lp.scale


def certify_path(incidence: sp.spmatrix, pair: Int[np.ndarray, "path"], demand: Float[np.ndarray, "pair"],
                 capacity: LinkFloats, fixed_load: LinkFloats | None, flow: Float[np.ndarray, "path"] | None,
                 lengths: LinkFloats | None) -> tuple[float, float]:
    """A certified interval ``(z_lower, z_upper)`` of Model 1's optimum Z (1/s) from any flows and lengths.

    *Lower* (a flow that is feasible): path flows ``f = max(flow, 0)`` (any
    unit), each pair's rate ``r_q = sum_{p of q} f_p / demand_q``, ``z0 =
    min_q r_q`` (pairs above it drop their excess, which only lowers loads),
    loads ``A f + z0 F``; dividing everything by the worst ``load / capacity``
    makes every link feasible: ``z_lower = z0 / max_l (load_l / c_l)``.

    *Upper* (weak duality, valid for every ``l >= 0`` on the links): summing
    the capacity rows weighted by ``l`` gives ``sum_p f_p (A^T l)_p + Z (F . l)
    <= l . c``, and ``sum_p f_p (A^T l)_p >= Z sum_q d_q min_{p of q} (A^T l)_p``,
    so ``Z <= l . c / (sum_q d_q min_p (A^T l)_p + F . l)``; links with fixed load
    and no path bound ``Z <= c / F`` on their own. ``lengths``: the solver's
    capacity duals (any sign is clipped at 0: another choice of lengths only
    loosens the bound, never breaks it). ``None``: no certificate (``inf``).
    """
    A = sp.csr_matrix(incidence, dtype=np.float64)
    pair = np.asarray(pair, dtype=np.int64).reshape(-1)
    d = np.asarray(demand, dtype=np.float64).reshape(-1)
    c = np.asarray(capacity, dtype=np.float64).reshape(-1)
    F = np.zeros(c.size) if fixed_load is None else np.asarray(fixed_load, dtype=np.float64).reshape(-1)
    act = d > 0
    used = np.diff(A.indptr) > 0
    only_fixed = ~used & (F > 0)
    z_cap = float((c[only_fixed] / F[only_fixed]).min()) if only_fixed.any() else math.inf
    if not act.any():
        m = F > 0
        z = float((c[m] / F[m]).min()) if m.any() else math.inf
        return z, z
    lower = 0.0
    if flow is not None:
        f = np.maximum(np.asarray(flow, dtype=np.float64).reshape(-1), 0.0)
        rate = np.bincount(pair, weights=f, minlength=d.size)[act] / d[act]
        z0 = float(rate.min())
        if 0 < z0 < math.inf:  # (NaN or infinite flows: no flow to scale, nothing certified)
            over = float(np.max((A @ f + z0 * F) / c))
            lower = z0 / over if over > 0 else (math.inf if over == 0 else 0.0)
    upper = z_cap
    if lengths is not None:
        ln = np.maximum(np.asarray(lengths, dtype=np.float64).reshape(-1), 0.0)
        cost = A.T @ ln
        best = np.full(d.size, math.inf)
        np.minimum.at(best, pair, cost)
        denom = float(d[act] @ best[act] + F @ ln)
        if denom > 0 and math.isfinite(denom):
            upper = min(upper, float(ln @ c) / denom)
    return min(lower, upper), upper


def dual_link_lengths(ub_dual: Float[np.ndarray, "row"] | None, n_links: int, incidence: sp.csr_matrix,
                      lp: LP | None = None) -> LinkFloats | None:
    """Link lengths from the duals of a path LP's capacity rows (rows = links some path uses, in order); with
    ``lp`` (:func:`path_lp`), each over the factor its row was divided by (``lp.ub_unit``)."""
    if ub_dual is None:
        return None
    rows = np.nonzero(np.diff(incidence.indptr) > 0)[0]
    ln = np.zeros(n_links)
    ln[rows] = np.abs(np.asarray(ub_dual, dtype=np.float64)[: rows.size])
    if lp is not None and lp.ub_unit is not None:
        ln[rows] /= lp.ub_unit
    return ln


def path_flows(lp: LP, x: Float[np.ndarray, "var"]) -> Float[np.ndarray, "path"]:
    """The path flows (bytes/s) of a solution ``x`` of :func:`path_lp` ``lp``."""
    n = lp.n_vars - 1
    unit = np.ones(n) if lp.x_unit is None else lp.x_unit[:n]
    return np.asarray(x, dtype=np.float64)[:n] * unit


def certify_path_solution(lp: LP, incidence: sp.spmatrix, pair: Int[np.ndarray, "path"],
                          demand: Float[np.ndarray, "pair"], capacity: LinkFloats, fixed_load: LinkFloats | None,
                          x: Float[np.ndarray, "var"] | None, ub_dual: Float[np.ndarray, "row"] | None
                          ) -> tuple[float, float]:
    """:func:`certify_path` of a solution of :func:`path_lp` ``lp``: its variables ``x`` back to path flows in
    bytes/s (:func:`path_flows`), its capacity rows' duals ``ub_dual`` back to link lengths
    (:func:`dual_link_lengths` with ``lp``)."""
    inc = sp.csr_matrix(incidence, dtype=np.float64)
    capacity = np.asarray(capacity, dtype=np.float64)
    flow = None if x is None else path_flows(lp, x)
    return certify_path(inc, pair, demand, capacity, fixed_load, flow,
                        dual_link_lengths(ub_dual, capacity.size, inc, lp))


def solve_path_lp(incidence: sp.spmatrix, pair: Int[np.ndarray, "path"], demand: Float[np.ndarray, "pair"],
                  capacity: LinkFloats, fixed_load: LinkFloats | None = None, solver: str = "highs",
                  method: str = "model1") -> PathBound:
    """Build (:func:`path_lp`) and solve Model 1; ``flow`` in bytes/s per path; ``[z, z_upper]`` certified
    (:func:`certify_path_solution`) from the solver's flows and capacity duals."""
    lp = path_lp(incidence, pair, demand, capacity, fixed_load)
    sol = check_solved(solve(lp, solver), "solver", f"Model 1 ({lp.n_vars - 1:,} paths, {lp.nnz:,} nonzeros)")
    n_paths = lp.n_vars - 1
    if not (np.asarray(demand) > 0).any():
        return PathBound(math.inf, 0.0, np.zeros(n_paths), method, sol.solver, 0.0, math.inf)
    flow = path_flows(lp, sol.x)
    lo, up = certify_path_solution(lp, incidence, pair, demand, capacity, fixed_load, sol.x, sol.ub_dual)
    return dataclasses.replace(bound_of(lo, up, flow, method, sol.solver), status=sol.status)
