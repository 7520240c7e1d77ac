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

Scaling: the LP is solved in ``f / c_max`` and ``Z * d_max / c_max`` (``c_max``,
``d_max``: the largest capacity and demand), so its data are O(1) on any
machine; :attr:`PathBound.z` is back in 1/s.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import scipy.sparse as sp

from ..errors import ConfigError, require
from ._solvers import LP, Solution, solve

__all__ = ["PathBound", "path_lp", "solve_path_lp", "z_from_objective"]


@dataclasses.dataclass(frozen=True)
class PathBound:
    """The optimum of a rate LP.

    Attributes
    ----------
    z : float
        Common rate multiplier (1/s); ``inf`` when nothing limits it (no demand).
    completion_time : float
        ``1 / z`` (s): the best completion time of the demand.
    flow : ndarray [path]
        Rate of every path (bytes/s) at the optimum (empty for bounds without paths).
    method, solver : str
        Formulation (``model1``, ``edge``, ``garg_konemann``, ``dragonfly_adaptive``) and solver
        (``highs``, ``pdhg``, ``multiplicative_weights``).
    gap : float
        Relative gap of the answer: ``z`` is within a factor ``1 + gap`` of the LP's optimum
        (HiGHS: the primal-dual gap, about 1e-9; PDHG: MPAX's relative duality gap;
        Garg-Konemann: the certified ``upper / lower - 1``).
    z_upper : float
        A proven upper bound of the optimum (``z`` for exact solvers; the best dual bound for Garg-Konemann).
    steps, rounds : int
        Garg-Konemann: multiplicative-weight steps, and rounds of the column-generation tightening run (0 for
        the LPs).
    """

    z: float
    completion_time: float
    flow: np.ndarray
    method: str
    solver: str
    gap: float
    z_upper: float
    steps: int = 0
    rounds: int = 0


def path_lp(incidence: sp.spmatrix, pair: np.ndarray, demand: np.ndarray, capacity: np.ndarray,
            fixed_load: np.ndarray | None = None) -> LP:
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

    Variables ``[f_0 .. f_{P-1}, Z]``; the objective minimises ``-Z``
    (scaled); ``lp.scale`` turns the scaled Z into 1/s.
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
    c_max = float(capacity.max()) if L else 1.0
    d_max = float(demand.max()) if Q and demand.max() > 0 else 1.0
    cap = capacity / c_max
    fix = fixed / d_max
    used = np.diff(A.indptr) > 0
    # rows: links that some path uses; links with fixed load only bound Z
    z_ub = np.inf
    only_fixed = ~used & (fix > 0)
    if only_fixed.any():
        z_ub = float((cap[only_fixed] / fix[only_fixed]).min())
    rows = np.nonzero(used)[0]
    A_ub = sp.hstack([A[rows], sp.csr_matrix(fix[rows][:, None])], format="csr")
    A_ub.eliminate_zeros()
    # demand_con: sum_p f_p - d_q Z = 0
    E = sp.csr_matrix((np.ones(P), (pair, np.arange(P))), shape=(Q, P))
    A_eq = sp.hstack([E, sp.csr_matrix(-(demand / d_max)[:, None])], format="csr")
    keep = demand > 0
    A_eq = A_eq[np.nonzero(keep)[0]]
    # paths of pairs without demand carry nothing: bound them at 0
    ub = np.full(P + 1, np.inf)
    ub[:P][~keep[pair]] = 0.0
    ub[P] = z_ub
    if not keep.any():
        ub[P] = 0.0  # no demand: Z is unconstrained; solved as 0 and reported as inf
    c = np.zeros(P + 1)
    c[P] = -1.0
    return LP(c, A_eq, np.zeros(A_eq.shape[0]), A_ub, cap[rows], ub, scale=c_max / d_max)


def z_from_objective(lp: LP, objective: float) -> float:
    """Z (1/s) of a scaled path LP from its optimal objective (``-Z`` scaled)."""
    return -float(objective) * lp.scale


def solve_path_lp(incidence: sp.spmatrix, pair: np.ndarray, demand: np.ndarray, capacity: np.ndarray,
                  fixed_load: np.ndarray | None = None, solver: str = "highs", method: str = "model1") -> PathBound:
    """Build (:func:`path_lp`) and solve Model 1; ``flow`` in bytes/s per path."""
    lp = path_lp(incidence, pair, demand, capacity, fixed_load)
    sol = solve(lp, solver)
    capacity = np.asarray(capacity, dtype=np.float64)
    c_max = float(capacity.max()) if capacity.size else 1.0
    n_paths = lp.n_vars - 1
    if not (np.asarray(demand) > 0).any():
        return PathBound(math.inf, 0.0, np.zeros(n_paths), method, sol.solver, 0.0, math.inf)
    z = z_from_objective(lp, sol.objective)
    return PathBound(z, 1.0 / z if z > 0 else math.inf, np.asarray(sol.x[:n_paths]) * c_max, method, sol.solver,
                     float(sol.gap), z * (1.0 + float(sol.gap)))
