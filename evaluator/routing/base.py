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

The spec holds the behaviour that generic code asks of a routing (as
Diffrax's solvers carry ``step``): whether it must be bound to the router
pairs that communicate before it can be compiled (:attr:`Routing.needs_pairs`),
how a batch of points binds it (:meth:`Routing.bind_pairs`: which points
share an operator), what a bound pair set may hold (:meth:`Routing.check_size`)
and how many router paths carry a pair's bytes (:meth:`Routing.paths_per_pair`).
:func:`evaluator.evaluation.evaluate_batch` and the sweep call these and never
ask which kind they have.
"""

from __future__ import annotations

import dataclasses
import weakref
from collections.abc import Callable, Sequence

import numpy as np
from jaxtyping import Array, Float, Int, Shaped

from .._registry import Kind
from ..errors import ConfigError
from .._types import FlowBytes, FlowVector, RouterLinkLoads, RouterVector  # noqa: F401  (shapes in docstrings)

__all__ = ["Routing", "RoutingOperator", "RoutingKind", "NODE_ENDPOINT", "require_linear"]

NODE_ENDPOINT = "_node_endpoint"
"""Key of a routing's node -> endpoint map among its device tables (:meth:`RoutingOperator.device_tables`)."""


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

    def notes(self, topology, pairs) -> tuple[str, ...]:
        """What a reader of one evaluation's result should know about this routing on the router pairs that
        communicate (``pairs``: blocks ``(src, dst, product)`` of router ids, as
        :meth:`~evaluator.traffic.AbstractTraffic.pair_sets` gives them: the pairs ``(src[i], dst[i])``, or every
        pair of ``src x dst`` on different routers where ``product``); none by default (and then no pairs are
        listed)."""
        return ()

    def draws(self, k: int) -> tuple["Routing", ...]:
        """``k`` draws of this routing where one spec is one random draw of it (hashed ECMP: one hash seed), this
        spec's own first; ``()`` for a routing whose spec determines its paths (every one here). What one draw
        gives is then a sample: :func:`evaluator.query.draw_summary`, ``evaluator map``'s line over draws."""
        return ()

    @property
    def linear(self) -> bool:
        """Whether the link loads are linear in the demand (True here: oblivious routings). An adaptive routing
        (:mod:`evaluator.routing._adaptive`) is not; consumers that route demands separately and add the loads
        (several jobs, the mapping search's moves, the latency model's path latencies) refuse it."""
        return True

    @property
    def needs_pairs(self) -> bool:
        """Whether the operator depends on the router pairs that communicate and the spec is not bound to them
        yet (an unbound path set): then :meth:`bind_pairs` first. False here: compiled once per topology."""
        return False

    def bind_pairs(self, point_pairs: Sequence[tuple[Int[np.ndarray, "entry"], Float[np.ndarray, "entry"]]],
                   n_routers: int) -> list[tuple[Routing, list[int]]]:
        """This spec bound to the router pairs of a batch of points: ``(bound spec, indices of the points it
        serves)`` per operator, every point in exactly one.

        ``point_pairs[i] = (keys, bytes)``: point ``i``'s communicating router
        pairs as keys ``src * n_routers + dst`` (``src != dst``, any order,
        repeats allowed) and the bytes of each entry (summed over repeats and
        phases where a routing needs the demand). Here: the spec itself for
        every point (its operator does not depend on the pairs).
        """
        return [(self, list(range(len(point_pairs))))]

    def merge_pairs(self, count: Callable[[], tuple[int, int]]) -> Routing:
        """This spec for a batch of flow lists, where a routing whose cost grows with its flows and whose flows of
        one router pair are routed alike may merge them (the adaptive routings' fixed points). ``count()``: ``(the
        most router pairs any point of the batch loads, and its flows, each padded to its shape bucket)``, called
        only by a routing that merges (it sorts every point's flows). Here: the spec itself (an oblivious
        routing's one pass costs about what the merge would)."""
        return self

    def check_size(self, topology, n_pairs: int) -> None:
        """Refuse (:class:`~evaluator.errors.ResourceError`) an operator bound to ``n_pairs`` router pairs of
        ``topology`` that would not fit in memory, before the pairs are listed. Nothing here (no pairs kept)."""

    def paths_per_pair(self, n_points: int, op: RoutingOperator | None = None,
                       point_keys: Callable[[], Sequence[Int[np.ndarray, "pair"]]] | None = None
                       ) -> Float[np.ndarray, "point"]:
        """``paths_per_pair`` of ``n_points`` points (:data:`evaluator.dataset.PATH_METRICS`): the mean over a
        point's communicating router pairs of the router paths carrying each pair's bytes.

        ``op``: the operator the points were evaluated with; ``point_keys()``:
        every point's pair keys (``src * R + dst``), called only by a routing
        that counts paths per pair. NaN here: the routing is an expectation
        over paths it does not list (the Dragonfly routings ``minimal``,
        ``valiant``, ``valiant_router``, ``tago``: parallel global links,
        intermediate groups or routers).
        """
        return np.full(n_points, np.nan)


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
    size"]`` (the kernel's injection/ejection loads; :func:`evaluator._ops.fused_size`,
    :func:`~evaluator._ops.add_extra` and :func:`~evaluator._ops.with_extra` are the protocol's one helper). ``apply_dense(tables, u, v)``
    maps the dense demand ``u[s] * v[d]`` (bytes, every ordered router pair
    ``s != d``; ``u, v: RouterVector = Float[Array, "router"]``) to the same. Both are pure
    and written for one design point; static sizes are bound in closures.
    ``nnz`` is the number of table entries (a size indicator).
    ``compile_key`` (optional): operators of one topology with equal keys
    have functions that differ only in their tables (same shapes, same
    static sizes), so the kernel compiled for one serves the others (path
    sets bound to different router pairs); None: one compilation per spec.
    ``endpoints`` (optional, int array, shape [node]) and ``n_endpoints``: a
    routing that routes by more than the router (D-mod-k on a fat tree routes
    by destination node) gives every node an endpoint id; the kernel then
    passes ``apply`` the endpoints of each flow's nodes (weight 0 where both
    nodes sit on one router) and ``apply_dense`` ``u``/``v`` summed per
    endpoint, and ``apply`` must put no router-link load on two endpoints of
    one router. None (the default): endpoints are routers.
    ``pair_paths`` (path sets):
    ``(keys, counts)``, the sorted keys ``src * R + dst`` of the pairs the
    operator serves and the router paths carrying each pair's bytes
    (:func:`evaluator.routing._paths.pair_path_counts`); None otherwise.
    ``flow_links`` (optional): ``flow_links(flow_tables, src_router,
    dst_router) -> (links, fractions)``, ``Int[Array, "flow K"]`` and
    ``Float[Array, "flow K"]`` with ``K = flow_width``: every flow's router
    links and the fraction of its bytes on each (-1 and 0 past its path). A
    routing whose flows take few links gives it so that a handful of flows
    is routed without ``apply``'s work over every link (the mapping search's
    moves: :meth:`route_few`); None: use ``apply``.
    ``flow_count`` and ``flow_compact`` (optional, with ``flow_links``):
    ``flow_count(flow_tables, src, dst) -> Int[Array, "flow"]``, the number
    of links each flow lists, and ``flow_compact(flow_tables, src, dst,
    weight, size) -> (links [size], bytes [size, ...], needed)``, the
    flows' links back to back (each flow's in ``flow_links``' order) with the
    bytes of ``weight [flow, ...]`` on each (-1 and 0 past ``needed``, the
    total; cut short when ``needed > size``): a few
    flows routed in as many entries as they have links, not ``flow_width``
    each (DOR's paths are mostly much shorter than its longest).
    """

    routing: Routing
    topology_name: str
    tables: dict[str, Shaped[np.ndarray, "..."]]
    apply: Callable
    apply_dense: Callable
    nnz: int
    compile_key: tuple | None = None
    pair_paths: tuple[Int[np.ndarray, "pair"], Int[np.ndarray, "pair"]] | None = None
    endpoints: Int[np.ndarray, "node"] | None = None
    n_endpoints: int | None = None
    flow_links: Callable | None = None
    flow_tables: dict[str, Shaped[np.ndarray, "..."]] | None = None
    flow_width: int = 0
    flow_count: Callable | None = None
    flow_compact: Callable | None = None

    def route_few(self, tables: dict, flow_tables: dict | None, src: Int[Array, "flow"], dst: Int[Array, "flow"],
                  weight: Float[Array, "flow"], n_router_links: int) -> Float[Array, "router_link"]:
        """Router-link loads of a few flows: a scatter of their listed links (:attr:`flow_links`) where the
        routing lists them, else :attr:`apply`. ``tables``/``flow_tables``: the device copies of :attr:`tables`
        and :attr:`flow_tables`."""
        import jax.numpy as jnp

        if self.flow_links is None:
            return self.apply(tables, src, dst, weight)
        links, frac = self.flow_links(flow_tables, src, dst)
        links = jnp.where(links >= 0, links, n_router_links)  # past the end: dropped
        return jnp.zeros(n_router_links, weight.dtype).at[links.ravel()].add((weight[:, None] * frac).ravel(),
                                                                              mode="drop")

    def route(self, topology, src: int, dst: int) -> tuple[Int[np.ndarray, "hop"], Float[np.ndarray, "hop"]]:
        """The router links one flow from endpoint ``src`` to endpoint ``dst`` crosses, ascending, and the fraction
        of its bytes on each (an expectation over its paths: a split tie, Valiant intermediates, an even ECMP
        split); none when the two are one endpoint. Endpoints are routers, or the routing's own
        (:attr:`endpoints`: nodes for D-mod-k and hashed ECMP on a fat tree).

        Every routing answers: from its listed links (:attr:`flow_links`) where it lists them, else from
        :attr:`apply` of one flow of one byte. An adaptive routing's route is the one it takes alone (its split
        depends on the other flows). The sum of ``weight x route`` over a point's flows is its router-link loads
        (for the routings whose loads are linear)."""
        from ..errors import is_int, require

        # built for one network: another's ids would name other links (a torus's links for a Dragonfly's flow)
        require(getattr(topology, "name", None) == self.topology_name, "topology", getattr(topology, "name", topology),
                f"the network this routing was built for ({self.topology_name})")
        n = self.endpoint_count(topology)
        # routers without nodes (a fat tree's upper switches) start and end no flow: their ids are refused, not routed
        hosts = None if self.endpoints is not None else _host_routers(topology)
        for name, v in (("src", src), ("dst", dst)):
            require(is_int(v) and 0 <= int(v) < n, name, v, f"an endpoint id in [0, {n})")
            if hosts is not None and hosts.size < n and not np.isin(int(v), hosts):
                span = (f"[{hosts[0]}, {hosts[-1] + 1})" if hosts[-1] - hosts[0] + 1 == hosts.size else
                        f"{hosts.size} of them, e.g. {hosts[:4].tolist()}")
                require(False, name, v, f"an endpoint id: a router that holds nodes, {span} (flows start and end "
                        f"at nodes; router {int(v)} holds none)")
        src, dst = int(src), int(dst)
        if src == dst:
            return np.zeros(0, np.int64), np.zeros(0)
        loads = np.asarray(_route_fn(self, int(topology.n_router_links))(src, dst))
        links = np.flatnonzero(loads)
        return links.astype(np.int64), loads[links]

    def endpoint_count(self, topology) -> int:
        """How many endpoints ``apply_dense``'s ``u``/``v`` have: :attr:`n_endpoints`, or the topology's routers."""
        return int(topology.n_routers if self.n_endpoints is None else self.n_endpoints)

    def device_tables(self) -> dict[str, Shaped[np.ndarray, "..."]]:
        """The tables the kernel moves to the device: :attr:`tables`, plus the node -> endpoint map where set."""
        out = {k: np.asarray(v) for k, v in self.tables.items()}
        if self.endpoints is not None:
            out[NODE_ENDPOINT] = np.asarray(self.endpoints, dtype=np.int32)
        return out


_HOSTS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _host_routers(topology) -> np.ndarray:
    """The routers that hold nodes, ascending (kept per topology: :meth:`RoutingOperator.route` is called per
    flow by the walks that check the kernels)."""
    try:
        return _HOSTS[topology]
    except (KeyError, TypeError):
        hosts = np.unique(np.asarray(topology.node_router))
        try:
            _HOSTS[topology] = hosts
        except TypeError:  # (an object that cannot be weakly referenced: computed each time)
            pass
        return hosts


@dataclasses.dataclass(frozen=True)
class RoutingKind(Kind):
    """A routing member.

    ``build(cfg) -> Routing`` makes the spec from its config schema;
    ``topologies`` are the topology kinds it serves, or None for every
    topology (a routing that needs only the base contract, e.g. paths on the
    router graph of ``link_src``/``link_dst``); ``operator(topology,
    routing) -> RoutingOperator`` compiles the spec for one topology. What a
    routing does beyond that (binding to router pairs, paths per pair) is
    in the methods of its spec (:class:`Routing`).
    """

    topologies: tuple[str, ...] | None = ()
    operator: Callable[..., RoutingOperator] | None = None

    def serves(self, topology_kind: str) -> bool:
        """Whether this routing serves topologies of kind ``topology_kind``."""
        return self.topologies is None or topology_kind in self.topologies

    def served(self) -> str:
        """The topologies it serves, for messages (``"every topology"`` when not limited)."""
        return "every topology" if self.topologies is None else ", ".join(self.topologies)


def require_linear(routing: Routing, consumer: str, field: str = "routing.kind", hint: str = "") -> None:
    """Refuse (:class:`ConfigError` naming ``field``) a routing whose loads are not linear in the demand
    (:attr:`Routing.linear`) where ``consumer`` routes demands separately and adds, or differentiates, the loads."""
    if getattr(routing, "linear", True):
        return
    raise ConfigError(field, routing.kind,
                      "a routing whose link loads are linear in the demand (an oblivious routing: dor, minimal, "
                      "valiant, valiant_router, dmodk, ecmp, ecmp_spray, kshortest, optiq_heuristic, optiq_lp, tago)",
                      f"{consumer} routes parts of the demand separately and adds (or differentiates) their loads; "
                      f"{routing.kind!r} is adaptive (a fixed point over the whole demand, "
                      f"docs/adaptive_routing.md). {hint}".strip())


_ROUTE_FNS: "weakref.WeakKeyDictionary[RoutingOperator, Callable]" = weakref.WeakKeyDictionary()


def _route_fn(op: RoutingOperator, n_router_links: int) -> Callable:
    """The jitted router-link loads of one flow of one byte under ``op`` (:meth:`RoutingOperator.route`), made
    once per operator."""
    fn = _ROUTE_FNS.get(op)
    if fn is not None:
        return fn
    import jax
    import jax.numpy as jnp

    tables = jax.device_put({k: np.asarray(v) for k, v in op.tables.items()})
    ftables = None if op.flow_tables is None else jax.device_put({k: np.asarray(v) for k, v in op.flow_tables.items()})

    def one(src, dst):
        s, d = jnp.asarray([src], jnp.int32), jnp.asarray([dst], jnp.int32)
        w = jnp.ones(1)
        return op.route_few(tables, ftables, s, d, w, n_router_links)[:n_router_links]

    fn = _ROUTE_FNS[op] = jax.jit(one)
    return fn
