"""The evaluator: link-level contention model of HPC interconnects, batched in JAX.

Public API (anything not listed in ``__all__`` may change):

* topologies: :func:`torus`, :func:`bgq_partition`, :func:`gemini`, :func:`dragonfly`;
* routings: :mod:`evaluator.routing` (``dor``, ``minimal``, ``valiant``, ``valiant_router``, ``kshortest``,
  ``optiq_heuristic``);
* traffic: :mod:`evaluator.traffic` (dense rank-one patterns in
  :mod:`evaluator.traffic.dense`, also ``evaluator.structured``);
  placement: :mod:`evaluator.placement`;
* :func:`evaluate` (one design point -> :class:`xarray.Dataset`),
  :func:`evaluate_batch` (many variants of one topology and routing) and
  :func:`evaluate_draws` (points under many draws of a random routing: hashed ECMP's hash seeds).

Byte counts must be exact, so importing the package turns on JAX 64-bit mode
(``jax_enable_x64``). Importing it also turns on JAX's persistent compilation
cache (``~/.cache/evaluator/jax``; ``EVALUATOR_COMPILATION_CACHE=0`` off, ``=DIR``
another directory; a cache directory you gave JAX yourself is kept): a second
process loads the kernels the first one compiled instead of compiling them
again. It only sets ``jax.config`` (see :func:`evaluator._jax_cache.library_default`).
Imported by the ``evaluator`` console command (``sys.argv[0]``), it first sets that
process's Ctrl-C handler (:func:`evaluator._signals.take_ctrl_c`), so that a Ctrl-C
during the command's start-up is not lost inside a garbage-collector callback.
"""

from __future__ import annotations

import os as _os
import sys as _sys

if _sys.argv and _os.path.basename(str(_sys.argv[0])) == "evaluator":  # the console command, before the imports
    from ._signals import take_ctrl_c as _take_ctrl_c

    _take_ctrl_c()

import jax as _jax  # noqa: E402

_jax.config.update("jax_enable_x64", True)

from ._jax_cache import library_default as _library_default  # noqa: E402

_library_default()

from ._version import __version__  # noqa: E402
from . import placement, routing, topology, traffic  # noqa: E402
from .traffic import dense as structured  # noqa: E402  (the dense constructors, under their historical name)
from .errors import ConfigError  # noqa: E402
from .evaluation import BatchResult, evaluate, evaluate_batch, evaluate_draws  # noqa: E402
from .routing import Routing, dor, kshortest, minimal, optiq_heuristic, valiant, valiant_router  # noqa: E402
from .topology import (  # noqa: E402
    DragonflyTopology,
    Topology,
    TorusTopology,
    bgq_partition,
    dragonfly,
    gemini,
    torus,
)
from .traffic import DenseTraffic, Traffic  # noqa: E402
from .placement import Placement  # noqa: E402
from .query import best, open_results  # noqa: E402
from . import machines, partitions  # noqa: E402
from .machines import list_machines, load_machine  # noqa: E402

__all__ = [
    "__version__",
    "ConfigError",
    "Topology",
    "TorusTopology",
    "DragonflyTopology",
    "torus",
    "bgq_partition",
    "gemini",
    "dragonfly",
    "Routing",
    "dor",
    "minimal",
    "valiant",
    "valiant_router",
    "kshortest",
    "optiq_heuristic",
    "Traffic",
    "DenseTraffic",
    "Placement",
    "evaluate",
    "evaluate_batch",
    "evaluate_draws",
    "BatchResult",
    "open_results",
    "best",
    "placement",
    "routing",
    "structured",
    "topology",
    "traffic",
    "partitions",
    "machines",
    "load_machine",
    "list_machines",
]
