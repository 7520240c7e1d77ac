"""The routing contract: router-to-router demand -> the expected bytes on every link.

A routing is described by a small :class:`Routing` spec (what the user
chooses; a frozen dataclass, one subclass per kind that has parameters) and
compiled on the host, once per topology, into a :class:`RoutingOperator`:
small NumPy tables plus two pure, jit-compatible functions for ONE design
point,

* ``apply(tables, src_router, dst_router, weight)``: router-level flows
  (sparse traffic) -> router-link loads;
* ``apply_dense(tables, u, v)``: the dense rank-one router demand
  ``u[s] * v[d]`` for every ordered pair ``s != d`` (all-to-all,
  many-to-many; see :class:`evaluator.traffic.DenseTraffic`) -> router-link loads.

Neither builds a router-pair matrix: the cost is linear in the flows and the
links (tori), or in flows plus routers x groups (Dragonflies), so the same
code serves a 16-node test torus and the 49,152-node Mira.

Randomised choices (tie splitting, Valiant intermediates, several parallel
global links) contribute their expectation, not a sample.

A member of the family is one private module with its spec constructor, its
operator builder, its config schema and a :class:`RoutingKind` entry (which
topology kinds it serves) for the registry in ``evaluator/routing/__init__.py``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

from .._registry import Kind
from .._types import FlowBytes, FlowVector, RouterLinkLoads, RouterVector  # noqa: F401  (shapes in docstrings)

__all__ = ["Routing", "RoutingOperator", "RoutingKind"]


@dataclasses.dataclass(frozen=True)
class Routing:
    """A routing choice: the kind's name; kinds with parameters subclass this.

    Attributes
    ----------
    kind
        Registered routing kind (``"dor"``, ``"minimal"``, ``"valiant"``, ...).
    """

    kind: str

    @property
    def label(self) -> str:
        """Short readable name, e.g. ``"valiant"`` or ``"dor-longest_first-split"``."""
        return self.kind

    def notes(self, topology, src_router, dst_router) -> tuple[str, ...]:
        """What a reader of one evaluation's result should know about this routing on these router pairs
        (``src_router``, ``dst_router``: int arrays of the communicating pairs); none by default."""
        return ()


@dataclasses.dataclass(frozen=True, eq=False)
class RoutingOperator:
    """A routing compiled for one topology.

    ``tables`` are NumPy arrays (moved to the device once by the caller).
    ``apply(tables, src_router, dst_router, weight)`` maps router-level flows
    (``FlowVector = Int[Array, "flow"]`` twice and ``FlowBytes = Float[Array, "flow"]``; a flow
    with ``src == dst`` must carry weight 0) to the router-link loads
    ``Float[Array, "router_link"]`` (bytes). With ``extra=(entries, size)``
    (``entries``: a sequence of ``(idx, w)`` pairs) it also sums every ``w``
    into ``size`` bins by its ``idx`` in the same buffer and returns the
    router-link loads followed by the sums, ``Float[Array, "router_link +
    size"]`` (the kernel's injection/ejection loads). ``apply_dense(tables, u, v)``
    maps the dense demand ``u[s] * v[d]`` (bytes, every ordered router pair
    ``s != d``; ``u, v: RouterVector = Float[Array, "router"]``) to the same. Both are pure
    and written for one design point; static sizes are bound in closures.
    ``nnz`` is the number of table entries (a size indicator).
    ``compile_key`` (optional): operators of one topology with equal keys
    have functions that differ only in their tables (same shapes, same
    static sizes), so the kernel compiled for one serves the others (path
    sets bound to different router pairs); None: one compilation per spec.
    ``pair_paths`` (path sets):
    ``(keys, counts)``, the sorted keys ``src * R + dst`` of the pairs the
    operator serves and the router paths carrying each pair's bytes
    (:func:`evaluator.routing._paths.pair_path_counts`); None otherwise.
    """

    routing: Routing
    topology_name: str
    tables: dict[str, np.ndarray]
    apply: Callable
    apply_dense: Callable
    nnz: int
    compile_key: tuple | None = None
    pair_paths: tuple[np.ndarray, np.ndarray] | None = None


@dataclasses.dataclass(frozen=True)
class RoutingKind(Kind):
    """A routing member.

    ``build(cfg) -> Routing`` makes the spec from its config schema;
    ``topologies`` are the topology kinds it serves; ``operator(topology,
    routing) -> RoutingOperator`` compiles the spec for one topology.

    Path-set routings (:mod:`evaluator.routing._paths`) depend on the router
    pairs that communicate: ``bind(routing, pairs) -> Routing`` returns the
    spec bound to a :class:`~evaluator.routing._paths.PairSet` (None for
    every other kind), and ``joint_pairs`` says whether the paths of a pair
    depend on the other pairs (then points with different pair sets get
    different operators; otherwise one operator serves the union).
    ``pair_demand`` (implies ``joint_pairs``) binds the bytes of every pair
    as well: the split depends on the demand (``optiq_lp``), so every point
    with its own demand gets its own operator.

    ``single_path``: every message of a router pair takes one router path
    (``paths_per_pair`` is 1; DOR, whose split tie is the expectation of a
    random choice per message). Other kinds that are not path sets are
    expectations over several paths (the Dragonfly routings): NaN.
    """

    topologies: tuple[str, ...] = ()
    operator: Callable[..., RoutingOperator] | None = None
    bind: Callable[..., Routing] | None = None
    joint_pairs: bool = False
    pair_demand: bool = False
    single_path: bool = False
