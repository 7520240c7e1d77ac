"""LP solvers: HiGHS (the reference) and a batched first-order solver in JAX (MPAX's PDHG).

Every LP of this package is held as an :class:`LP`: minimise ``c @ x``
subject to ``A_eq x = b_eq``, ``A_ub x <= b_ub`` and ``0 <= x <= ub``
(SciPy sparse matrices; ``ub`` may be ``inf``). The formulations scale
their data to O(1) before they build one (see :mod:`._model1`), so one
tolerance serves every machine.

* :func:`solve_highs`: SciPy's ``linprog(method="highs")``; the reported
  gap is the relative difference between the primal objective and the dual
  objective rebuilt from HiGHS's marginals (about 1e-9 or less at an optimum).
* :func:`solve_pdhg`: many LPs at once with MPAX's ``raPDHG`` (PDLP:
  PDHG with adaptive restarts, adaptive step sizes, primal-weight updates,
  Ruiz and Pock-Chambolle diagonal preconditioning, written in JAX):
  every instance is padded to one shape bucket (variables, rows and
  nonzeros), the solver for ONE instance is ``vmap``-ed over the
  batch and ``jit``-ed once per bucket. A previous :class:`BatchSolution` of
  the same bucket warm-starts it. Each instance reports its relative
  duality gap ``|primal - dual| / max(|primal|, |dual|)`` (MPAX's own
  divides by ``1 + max(...)``, too small a gap for optima far below 1).

Why MPAX rather than our own PDHG: version 0.2.4 installs on JAX 0.10
(pure Python, needs ``chex``), solves sparse (BCOO) instances of
different sparsity patterns under one ``vmap`` (same number of stored
entries), takes initial primal and dual points, and implements the
PDLP refinements (adaptive restarts, preconditioning, feasibility
polishing) that a hand-written PDHG would have to re-derive; checked
against HiGHS in ``tests/test_lp.py``.
"""

from __future__ import annotations

import dataclasses
import functools
import math

import numpy as np
import scipy.sparse as sp

from .._types import Float, Int
from ..errors import ConfigError, is_int, require

__all__ = ["LP", "Solution", "BatchSolution", "solve_highs", "solve_pdhg", "solve", "SOLVERS", "PDHG_OPTIMAL",
           "pdhg_status", "check_solved", "reached", "NotSolved"]

SOLVERS = ("highs", "pdhg")
"""Solver names: ``highs`` (SciPy's HiGHS, exact) and ``pdhg`` (MPAX's batched JAX PDHG, gap reported)."""


@dataclasses.dataclass(frozen=True, eq=False)
class LP:
    """``min c @ x`` s.t. ``A_eq x = b_eq``, ``A_ub x <= b_ub``, ``0 <= x <= ub`` (one instance, host side).

    ``scale`` converts the optimal objective back to the formulation's
    units (the formulation's own meaning; e.g. ``Z = -objective * scale``).
    ``x_unit`` (per variable) and ``ub_unit`` (per ``A_ub`` row), where a formulation sets them: a variable's
    value in the formulation's units is ``x * x_unit``, and the row was divided by ``ub_unit`` (the dual of the
    unscaled row is the solver's over ``ub_unit``); ``None``: 1.
    """

    c: Float[np.ndarray, "var"]
    A_eq: sp.csr_matrix
    b_eq: Float[np.ndarray, "eq_row"]
    A_ub: sp.csr_matrix
    b_ub: Float[np.ndarray, "ub_row"]
    ub: Float[np.ndarray, "var"]
    scale: float = 1.0
    x_unit: Float[np.ndarray, "var"] | None = None
    ub_unit: Float[np.ndarray, "ub_row"] | None = None

    @property
    def n_vars(self) -> int:
        return int(self.c.shape[0])

    @property
    def nnz(self) -> int:
        return int(self.A_eq.nnz + self.A_ub.nnz)


@dataclasses.dataclass(frozen=True)
class Solution:
    """One solved LP: ``objective`` (of the scaled LP), ``x``, ``gap`` (relative duality gap), ``solver``.

    ``status``: ``"optimal"``, else HiGHS's message (then ``objective`` and ``x`` are NaN, ``gap`` inf, no
    ``ub_dual``) or MPAX's status word (then ``x`` and ``objective`` are an unconverged point, not a feasible one).
    """

    objective: float
    x: Float[np.ndarray, "var"]
    gap: float
    solver: str
    status: str
    iterations: int = 0
    ub_dual: Float[np.ndarray, "ub_row"] | None = None
    """The duals of the ``A_ub`` rows: HiGHS's marginals (<= 0; d objective / d ``b_ub``), MPAX's multipliers
    (>= 0); what the formulations use as link lengths to certify their bounds."""


@dataclasses.dataclass(frozen=True, eq=False)
class BatchSolution:
    """Solutions of a batch (``objective``, ``gap``, ``iterations`` ``[instance]``) and the padded points.

    ``status[instance]``: MPAX's termination code; only :data:`PDHG_OPTIMAL` means the instance met its tolerance
    (:func:`pdhg_status` names the others: an iteration limit leaves an unconverged, infeasible primal point).

    ``primal``/``dual`` are the padded final points (device arrays), kept to
    warm-start the next batch of the same bucket (``bucket``); ``warm_started``:
    whether this batch started from a previous one's points (else from zero).
    """

    objective: Float[np.ndarray, "instance"]
    dual_objective: Float[np.ndarray, "instance"]
    gap: Float[np.ndarray, "instance"]
    iterations: Int[np.ndarray, "instance"]
    status: Int[np.ndarray, "instance"]
    x: list[Float[np.ndarray, "var"]]
    primal: object
    dual: object
    bucket: tuple[int, ...]
    solver: str = "pdhg"
    warm_started: bool = False
    ub_dual: list[Float[np.ndarray, "ub_row"]] | None = None
    """Per instance, the duals of its ``A_ub`` rows (MPAX's multipliers of ``-A_ub x >= -b_ub``), unpadded."""


def _check_solver(solver: str) -> str:
    if solver not in SOLVERS:
        raise ConfigError("solver", solver, f"one of {list(SOLVERS)}",
                          "'highs' is exact (SciPy); 'pdhg' is the batched JAX solver (MPAX).")
    return solver


IPM_NNZ = 50_000
"""HiGHS: LPs with more nonzeros than this use its interior-point method (with crossover) instead of its
default (dual simplex), which takes one pivot per path here: measured on the 8,192-node Model 1 instance of
``evaluator bench`` (14,036 variables, 147,003 nonzeros), IPM 85 s, dual simplex not done after 10 minutes."""


def solve_highs(lp: LP) -> Solution:
    """Solve ``lp`` with HiGHS (SciPy ``linprog``); ``gap`` from the dual rebuilt out of the marginals.

    Dual simplex (HiGHS's choice) up to :data:`IPM_NNZ` nonzeros, interior point with crossover above.
    """
    from scipy.optimize import linprog

    bounds = np.stack([np.zeros(lp.n_vars), np.where(np.isfinite(lp.ub), lp.ub, np.inf)], axis=1)
    kw = {}
    if lp.A_eq.shape[0]:
        kw.update(A_eq=lp.A_eq, b_eq=lp.b_eq)
    if lp.A_ub.shape[0]:
        kw.update(A_ub=lp.A_ub, b_ub=lp.b_ub)
    res = linprog(lp.c, bounds=bounds, method="highs-ipm" if lp.nnz > IPM_NNZ else "highs", **kw)
    if res.status != 0:
        return Solution(math.nan, np.full(lp.n_vars, np.nan), math.inf, "highs", res.message, int(res.nit))
    dual = 0.0
    if lp.A_eq.shape[0]:
        dual += float(lp.b_eq @ res.eqlin.marginals)
    if lp.A_ub.shape[0]:
        dual += float(lp.b_ub @ res.ineqlin.marginals)
    fin = np.isfinite(lp.ub)
    dual += float(lp.ub[fin] @ res.upper.marginals[fin])
    gap = abs(res.fun - dual) / max(abs(res.fun), abs(dual), 1e-300)
    ub_dual = np.asarray(res.ineqlin.marginals) if lp.A_ub.shape[0] else np.zeros(0)
    return Solution(float(res.fun), np.asarray(res.x), float(gap), "highs", "optimal", int(res.nit), ub_dual)


def padded_size(n: int, minimum: int = 8) -> int:
    """Next power of two (at least ``minimum``): the padded size of a batch axis."""
    return max(minimum, 1 << max(0, math.ceil(math.log2(max(n, 1)))))


def _coo(A: sp.spmatrix, nse: int) -> tuple[np.ndarray, np.ndarray]:
    A = A.tocoo()
    idx = np.zeros((nse, 2), np.int32)
    val = np.zeros(nse)
    idx[: A.nnz, 0] = A.row
    idx[: A.nnz, 1] = A.col
    val[: A.nnz] = A.data
    return idx, val


@functools.lru_cache(maxsize=16)
def _batched_solver(n: int, m_eq: int, m_ub: int, eps: float, iteration_limit: int):
    """``jit(vmap(solve one padded instance))`` for one bucket (cached: one compilation per bucket).

    The solver is built with ``warm_start=True`` (without it MPAX ignores initial points); a cold start
    passes zero points (what MPAX starts from otherwise), so cold and warm starts share one compilation.
    """
    import jax
    import jax.numpy as jnp
    from jax.experimental.sparse import BCOO
    from mpax import create_lp, raPDHG

    solver = raPDHG(eps_abs=eps, eps_rel=eps, iteration_limit=iteration_limit, verbose=False, warm_start=True)

    def one(c, eq_idx, eq_val, b_eq, ub_idx, ub_val, b_ub, ub, x0, y0):
        A = BCOO((eq_val, eq_idx), shape=(m_eq, n))
        G = BCOO((-ub_val, ub_idx), shape=(m_ub, n))  # MPAX: G x >= h
        lp = create_lp(c, A, b_eq, G, -b_ub, jnp.zeros(n), ub)
        out = solver.optimize(lp, x0, y0)
        return (out.primal_solution, out.dual_solution, out.primal_objective, out.dual_objective,
                out.iteration_count, out.termination_status)

    return jax.jit(jax.vmap(one))


def _check_pdhg(eps, iteration_limit, warm_start) -> None:
    """Refuse a bad setting of :func:`solve_pdhg` (naming it, the value and what is allowed) before compiling."""
    ok = isinstance(eps, (int, float, np.integer, np.floating)) and not isinstance(eps, (bool, np.bool_))
    require(ok and 0 < eps < math.inf, "eps", eps, "a finite number > 0 (MPAX's tolerance on the scaled LP)")
    require(is_int(iteration_limit) and iteration_limit >= 1, "iteration_limit", iteration_limit, "an integer >= 1")
    require(warm_start is None or isinstance(warm_start, BatchSolution), "warm_start",
            type(warm_start).__name__, "None or a BatchSolution of an earlier solve_pdhg call")


def solve_pdhg(lps: list[LP], warm_start: BatchSolution | None = None, eps: float = 1e-6,
               iteration_limit: int = 100_000) -> BatchSolution:
    """Solve many LPs at once with MPAX's PDHG (``vmap`` over one padded bucket, ``jit`` once per bucket).

    ``warm_start``: a previous result of the same bucket (same padded
    sizes); its final primal and dual points start this solve (instance
    ``i`` from instance ``i``; a batch of another size or bucket starts
    cold). ``eps``: MPAX's absolute and relative tolerance on the scaled
    LP. Padding: extra variables have ``c = 0`` and ``ub = 0``, extra rows
    are zero with a zero right-hand side, extra stored entries are zeros.
    """
    import jax.numpy as jnp

    if not lps:
        raise ConfigError("lps", [], "at least one LP")
    _check_pdhg(eps, iteration_limit, warm_start)
    B = len(lps)
    n = padded_size(max(lp.n_vars for lp in lps))
    m_eq = padded_size(max(lp.A_eq.shape[0] for lp in lps), 1)
    m_ub = padded_size(max(lp.A_ub.shape[0] for lp in lps), 1)
    nse_eq = padded_size(max(lp.A_eq.nnz for lp in lps), 1)
    nse_ub = padded_size(max(lp.A_ub.nnz for lp in lps), 1)
    bucket = (B, n, m_eq, m_ub, nse_eq, nse_ub)
    c = np.zeros((B, n))
    ub = np.zeros((B, n))
    b_eq = np.zeros((B, m_eq))
    b_ub = np.zeros((B, m_ub))
    eq_idx = np.zeros((B, nse_eq, 2), np.int32)
    eq_val = np.zeros((B, nse_eq))
    ub_idx = np.zeros((B, nse_ub, 2), np.int32)
    ub_val = np.zeros((B, nse_ub))
    for i, lp in enumerate(lps):
        k = lp.n_vars
        c[i, :k] = lp.c
        ub[i, :k] = np.where(np.isfinite(lp.ub), lp.ub, np.inf)
        b_eq[i, : lp.A_eq.shape[0]] = lp.b_eq
        b_ub[i, : lp.A_ub.shape[0]] = lp.b_ub
        eq_idx[i], eq_val[i] = _coo(lp.A_eq, nse_eq)
        ub_idx[i], ub_val[i] = _coo(lp.A_ub, nse_ub)
    warm = warm_start is not None and warm_start.bucket == bucket
    fn = _batched_solver(n, m_eq, m_ub, float(eps), int(iteration_limit))
    x0 = warm_start.primal if warm else jnp.zeros((B, n))
    y0 = warm_start.dual if warm else jnp.zeros((B, m_eq + m_ub))
    import jax

    # MPAX relies on NumPy-style promotion; the package's strict settings (tests) must not reach into it.
    with jax.numpy_dtype_promotion("standard"), jax.numpy_rank_promotion("allow"):
        x, y, pobj, dobj, it, status = fn(*(jnp.asarray(a) for a in (c, eq_idx, eq_val, b_eq, ub_idx, ub_val,
                                                                         b_ub, ub)), x0, y0)
    xs = np.asarray(x)
    pobj, dobj = np.asarray(pobj), np.asarray(dobj)
    # relative to the objective itself (MPAX divides by 1 + |objective|, which understates it for small optima)
    gap = np.abs(pobj - dobj) / np.maximum(np.maximum(np.abs(pobj), np.abs(dobj)), 1e-300)
    ys = np.asarray(y)
    return BatchSolution(pobj, dobj, gap, np.asarray(it), np.asarray(status),
                         [xs[i, : lp.n_vars] for i, lp in enumerate(lps)], x, y, bucket, warm_started=warm,
                         ub_dual=[ys[i, m_eq: m_eq + lp.A_ub.shape[0]] for i, lp in enumerate(lps)])


PDHG_OPTIMAL = 2
"""MPAX's ``TerminationStatus.OPTIMAL``: the instance met its tolerance (``eps``); any other code (iteration limit,
numerical error, infeasibility detected) leaves its primal point unconverged: not a feasible flow to that tolerance."""


def pdhg_status(code: int) -> str:
    """The word for MPAX's termination code ``code``: ``"optimal"`` (:data:`PDHG_OPTIMAL`), else MPAX's own name in
    lower case (``"iteration_limit"``, ``"numerical_error"``, ...)."""
    from mpax.utils import TerminationStatus

    code = int(code)
    if code == PDHG_OPTIMAL:
        return "optimal"
    try:
        return TerminationStatus(code).name.lower()
    except ValueError:
        return f"status {code}"


def reached(sol: Solution) -> bool:
    """Whether ``sol`` is its LP's optimum (to the solver's tolerance): HiGHS gives a finite objective only at an
    optimum (NaN otherwise), PDHG's status is ``"optimal"`` only when it met its tolerance."""
    return math.isfinite(sol.objective) if sol.solver == "highs" else sol.status == "optimal"


class NotSolved(ConfigError):
    """HiGHS stopped without the LP's optimum (:func:`check_solved`): a :class:`ConfigError` naming the solver
    setting ``field``, with HiGHS's own ``status`` (its message, e.g. ``"Numerical difficulties encountered"``)
    kept for a caller that records it per point (a sweep's ``bound_status``) instead of stopping."""

    def __init__(self, field: str, status: str, iterations: int, what: str, hint: str):
        self.status, self.iterations, self.what, self.more = status, int(iterations), what, hint
        super().__init__(field, "highs", "a solver that reaches the LP's optimum",
                         f"HiGHS stopped without one on {what} ({status}; {self.iterations} iterations): it gives "
                         f"neither flows nor duals. {hint}")

    def renamed(self, field: str) -> "NotSolved":
        """The same failure, naming the setting ``field`` as the caller's user wrote it."""
        return NotSolved(field, self.status, self.iterations, self.what, self.more)


def check_solved(sol: Solution, field: str, what: str, hint: str = "'pdhg' is the other solver.") -> Solution:
    """``sol`` if HiGHS solved it to optimality; a :class:`NotSolved` (a :class:`ConfigError`) naming ``field``
    (the solver setting) and HiGHS's status otherwise: without an optimum HiGHS gives neither flows nor duals, so
    no bound is certified. A PDHG solution passes (its duals certify a bound whatever its convergence; the caller
    reads its status)."""
    if sol.solver == "highs" and not reached(sol):
        raise NotSolved(field, sol.status.rstrip("."), sol.iterations, what, hint)
    return sol


def solve(lp: LP, solver: str = "highs") -> Solution:
    """Solve one LP with ``solver`` (one of :data:`SOLVERS`); ``status`` is ``"optimal"`` when it reached its
    optimum (PDHG: its tolerance), else HiGHS's message or MPAX's status word (:func:`pdhg_status`)."""
    if _check_solver(solver) == "highs":
        return solve_highs(lp)
    out = solve_pdhg([lp])
    return Solution(float(out.objective[0]), out.x[0], float(out.gap[0]), "pdhg", pdhg_status(out.status[0]),
                    int(out.iterations[0]), out.ub_dual[0])
