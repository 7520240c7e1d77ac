"""Linear programs of the contention model: Model 1, the all-paths optimum, the Dragonfly adaptive bound.

* :func:`path_lp` / :func:`solve_path_lp`: Bui et al. Model 1 (the best split of each pair's demand over its
  paths; ``Z`` = common rate multiplier in 1/s, completion time ``1 / Z``);
* :func:`optimal_bound`: the maximum concurrent flow over all paths (``edge`` LP, or ``garg_konemann`` with a
  certified gap when the LP is too large), the best completion time any routing reaches;
* :func:`dragonfly_adaptive_bound`: the best per-group-pair mix of minimal and Valiant paths (ideal UGAL;
  ``router=True`` adds router-level Valiant, :data:`METHOD` names the two);
* solvers: :func:`solve_highs` (HiGHS, the reference) and :func:`solve_pdhg` (MPAX's PDHG, batched with
  ``vmap``, warm-started, duality gap reported).

:mod:`evaluator.lp.bounds` (above the traffic and placement families) turns a design point into demand
and answers ``evaluate(..., bounds=True)``. See ``docs/bounds.md``.
"""

from ._dragonfly import CLASS_KINDS as CLASS_KINDS
from ._dragonfly import METHOD as METHOD
from ._dragonfly import adaptive_classes as adaptive_classes
from ._dragonfly import adaptive_size as adaptive_size
from ._dragonfly import check_adaptive_size as check_adaptive_size
from ._dragonfly import dragonfly_adaptive_bound as dragonfly_adaptive_bound
from ._flow import BYTES_PER_NNZ as BYTES_PER_NNZ
from ._flow import EDGE_AUTO_NNZ as EDGE_AUTO_NNZ
from ._flow import certify_edge as certify_edge
from ._flow import certify_edge_solution as certify_edge_solution
from ._flow import METHODS as METHODS
from ._flow import RouterDemand as RouterDemand
from ._flow import edge_bound as edge_bound
from ._flow import edge_lp as edge_lp
from ._flow import edge_size as edge_size
from ._flow import garg_konemann as garg_konemann
from ._flow import optimal_bound as optimal_bound
from ._flow import check_demand as check_demand
from ._flow import normalized as normalized
from ._model1 import PathBound as PathBound
from ._model1 import certify_path as certify_path
from ._model1 import certify_path_solution as certify_path_solution
from ._model1 import dual_link_lengths as dual_link_lengths
from ._model1 import path_flows as path_flows
from ._model1 import path_lp as path_lp
from ._model1 import solve_path_lp as solve_path_lp
from ._model1 import z_from_objective as z_from_objective
from ._solvers import LP as LP
from ._solvers import PDHG_OPTIMAL as PDHG_OPTIMAL
from ._solvers import SOLVERS as SOLVERS
from ._solvers import BatchSolution as BatchSolution
from ._solvers import Solution as Solution
from ._solvers import check_solved as check_solved
from ._solvers import NotSolved as NotSolved
from ._solvers import pdhg_status as pdhg_status
from ._solvers import padded_size as padded_size
from ._solvers import solve as solve
from ._solvers import solve_highs as solve_highs
from ._solvers import solve_pdhg as solve_pdhg

__all__ = ["LP", "SOLVERS", "PDHG_OPTIMAL", "check_solved", "NotSolved", "pdhg_status",
           "METHODS", "METHOD", "CLASS_KINDS", "EDGE_AUTO_NNZ", "BYTES_PER_NNZ", "certify_edge",
           "certify_edge_solution", "certify_path_solution", "path_flows",
           "certify_path", "check_adaptive_size", "dual_link_lengths", "padded_size", "Solution", "BatchSolution", "PathBound", "RouterDemand",
           "solve", "solve_highs", "solve_pdhg", "path_lp", "solve_path_lp", "z_from_objective", "edge_size",
           "edge_lp", "edge_bound", "garg_konemann", "optimal_bound", "adaptive_classes", "adaptive_size",
           "dragonfly_adaptive_bound", "check_demand", "normalized"]
