"""The topology contract: routers, nodes and directed links with capacities.

A topology is built once on the host (NumPy) and returned as an immutable
description. Every topology shares the same link layout:

* links ``0 .. n_router_links-1`` are directed router-to-router channels;
* links ``n_router_links + n`` for ``n`` in ``0 .. n_nodes-1`` are the
  injection links of node ``n`` (node -> its router);
* links ``n_router_links + n_nodes + n`` are the ejection links of node ``n``
  (router -> node).

``link_src``/``link_dst`` hold router ids, with ``-1`` for the node side of
injection and ejection links; ``link_node`` holds the node id of injection
and ejection links and ``-1`` for router links. Capacities are bytes/s per
direction.

Conventions (DESIGN.md): torus router ids are the row-major order of router
coordinates (last dimension fastest, as :func:`numpy.ravel_multi_index`);
Dragonfly router id is ``group * a + index_in_group``; node id is
``router * nodes_per_router + port`` where every router carries the same number
of nodes. Which router a node hangs off is topology data,
:attr:`Topology.node_router`: routers may carry no nodes (a fat tree's
spine switches), and generic code asks the topology (``node_router``,
``n_nodes``, :meth:`Topology.diameter_bound`) rather than doing arithmetic on
``nodes_per_router``.

A member of the family is one private module holding the topology class (a
subclass of :class:`Topology` with its own ``kind``), its builder function,
its config schema and a :class:`TopologyKind` entry for the registry in
``evaluator/topology/__init__.py``.
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np

from .._registry import Kind
from .._types import Float, Int, LinkFloats, LinkInts, NodeInts, RouterCoords, RouterInts, Shaped
from ..errors import ConfigError, ResourceError

__all__ = ["Topology", "TopologyKind", "frozen", "node_links"]


@dataclasses.dataclass(frozen=True)
class TopologyKind(Kind):
    """A topology member: ``build(cfg) -> Topology``."""


def frozen(a: Shaped[np.ndarray, "*shape"]) -> Shaped[np.ndarray, "*shape"]:
    """A read-only contiguous copy (topology arrays are immutable)."""
    a = np.ascontiguousarray(a)
    a.setflags(write=False)
    return a


MAX_IDS = 2**31 - 1
"""The most links (and nodes) a :class:`Topology` may have: ids are int32 in the kernels."""


@dataclasses.dataclass(frozen=True, eq=False)
class Topology:
    """Common description of a network.

    Attributes
    ----------
    name
        Human-readable name, e.g. ``"DF(4,8,4,33)"``.
    n_routers, nodes_per_router
        Router count and the nodes attached to each router where every router
        carries the same number; 0 where they differ (a member with such
        routers overrides :attr:`node_router`).
    router_coords : int ndarray, shape [router, coord]
        Torus: the router's coordinates. Dragonfly: ``(group, index_in_group)``.
    link_src, link_dst : int ndarray, shape [link]
        Router ids at the ends of each directed link (-1 on the node side).
    link_node : int ndarray, shape [link]
        Node id for injection/ejection links, -1 for router links.
    link_class : int ndarray, shape [link]
        Index into ``class_names``.
    class_names : tuple of str
        Link class names, e.g. ``("torus-dim0", ..., "injection", "ejection")``.
    capacity : float ndarray, shape [link]
        Bandwidth of each link in bytes/s per direction.
    n_router_links
        Number of router-to-router links (they come first).
    latency
        The network's latency model (:class:`evaluator.latency.Latency`: per-message overheads, router and
        wire latency, rendezvous), or None: no latency model (bandwidth only). Keyword-only; set it with
        :meth:`with_latency`.
    """

    name: str
    n_routers: int
    nodes_per_router: int
    router_coords: RouterCoords
    link_src: LinkInts
    link_dst: LinkInts
    link_node: LinkInts
    link_class: LinkInts
    class_names: tuple[str, ...]
    capacity: LinkFloats
    n_router_links: int
    latency: object = dataclasses.field(default=None, kw_only=True)

    def __post_init__(self) -> None:
        # the kernels, routings and the batch engine index links and nodes in int32 (their fast gathers): a
        # network of 2^31 links (about 90 GB of link arrays, a machine some hosts can build) would wrap their ids
        # negative without a word; refused here, as every member's builder ends (a node has an injection and an
        # ejection link: fewer nodes than links)
        n = int(np.shape(self.link_src)[0])
        if n > MAX_IDS:
            raise ResourceError("topology", f"{self.name}: {n:,} links",
                                f"at most {MAX_IDS:,} links (2^31 - 1: links and nodes are indexed in int32)",
                                "Evaluate a smaller network.")

    @property
    def kind(self) -> str:  # pragma: no cover - overridden
        """Name of the topology's kind in the registry (``"torus"``, ``"dragonfly"``, ...)."""
        raise NotImplementedError

    def with_latency(self, latency) -> "Topology":
        """This network with the latency model ``latency`` (:class:`evaluator.latency.Latency`, or None for
        none); a link class it names must be one of this network's."""
        from ..latency import Latency

        if latency is not None and not isinstance(latency, Latency):
            raise ConfigError("topology.latency", latency, "an evaluator.latency.Latency, or None")
        if latency is not None:
            latency.check_classes(tuple(self.class_names))
        return dataclasses.replace(self, latency=latency)

    @property
    def n_nodes(self) -> int:
        """Number of endpoints (nodes)."""
        return int(self.node_router.shape[0])

    @property
    def n_links(self) -> int:
        """Number of directed links, router links plus injection and ejection."""
        return int(self.link_src.shape[0])

    @functools.cached_property
    def node_router(self) -> NodeInts:
        """Router id of every node, shape [node] (nondecreasing: a router's nodes are numbered together).

        The default is ``nodes_per_router`` nodes on every router; a member
        whose routers differ overrides this."""
        return frozen(np.repeat(np.arange(self.n_routers, dtype=np.int64), self.nodes_per_router))

    @functools.cached_property
    def router_nodes(self) -> tuple[RouterInts, RouterInts]:
        """``(start, count)``, shape [router] each: router ``r`` carries nodes ``start[r] .. start[r]+count[r]-1``."""
        count = np.bincount(self.node_router, minlength=self.n_routers)
        return frozen(np.concatenate([[0], np.cumsum(count)[:-1]]).astype(np.int64)), frozen(count.astype(np.int64))

    def nodes_of(self, routers) -> NodeInts:
        """The nodes of ``routers`` (int array), router by router in the order given, each router's in id order."""
        start, count = self.router_nodes
        r = np.asarray(routers, dtype=np.int64).reshape(-1)
        c = count[r]
        offset = np.arange(int(c.sum())) - np.repeat(np.cumsum(c) - c, c)
        return np.repeat(start[r], c) + offset

    def router_distances(self) -> Float[np.ndarray, "router router"]:
        """All-pairs router hop distance by breadth-first search (SciPy), float, shape [router, router] (inf: unreachable)."""
        from scipy.sparse import csr_matrix
        from scipy.sparse.csgraph import shortest_path

        n = self.n_router_links
        A = csr_matrix((np.ones(n), (self.link_src[:n], self.link_dst[:n])), shape=(self.n_routers, self.n_routers))
        return shortest_path(A, unweighted=True, directed=True)

    def furthest_routers(self) -> RouterInts:
        """A partner for every router that carries nodes, far from it, shape [router] (-1: a router without nodes).

        The default: the permutation of the host routers that maximises the
        total hop distance (``scipy.optimize.linear_sum_assignment``), no
        router mapped to itself; members with a closed form override it. A router another cannot reach (a
        reconfigurable Dragonfly's group in no job) is further than any it can: its distance counts as
        ``n_routers`` (the assignment refused the infinite one with a ValueError)."""
        from scipy.optimize import linear_sum_assignment

        hosts = self.host_routers
        dist = self.router_distances()[np.ix_(hosts, hosts)]
        dist[np.isinf(dist)] = float(self.n_routers)
        np.fill_diagonal(dist, -1.0)
        _, col = linear_sum_assignment(dist, maximize=True)
        out = np.full(self.n_routers, -1, dtype=np.int64)
        out[hosts] = hosts[col]
        return out

    @property
    def host_routers(self) -> Int[np.ndarray, "host_router"]:
        """Ids of the routers that carry at least one node, ascending."""
        return frozen(np.flatnonzero(self.router_nodes[1] > 0))

    def node_groups(self) -> Int[np.ndarray, "level node"]:
        """The node hierarchy, finest first: per level the group id of every node, int, shape [level, node].

        Row 0 is the node's router; each further row groups the previous
        row's groups (a group of one level lies inside one group of the next);
        the whole machine, above the last row, is implied. Hierarchy-aware
        placements (``block``) read it. The default is the routers alone (a
        torus); members with a hierarchy add levels (a fat tree: leaf, pod, ...)."""
        return np.asarray(self.node_router, dtype=np.int64)[None, :]

    def diameter_bound(self) -> int:
        """An upper bound on the router hops of a shortest path between two routers (size estimates use it).

        The default, ``n_routers``, holds for any connected router graph;
        members with a closed form override it."""
        return int(self.n_routers)

    def injection_link(self, node: Int[np.ndarray, "*shape"] | int) -> Int[np.ndarray, "*shape"] | int:
        """Link id of the injection link of ``node``."""
        return self.n_router_links + np.asarray(node)

    def ejection_link(self, node: Int[np.ndarray, "*shape"] | int) -> Int[np.ndarray, "*shape"] | int:
        """Link id of the ejection link of ``node``."""
        return self.n_router_links + self.n_nodes + np.asarray(node)

    def class_id(self, name: str) -> int:
        """Index of link class ``name`` in :attr:`class_names`."""
        if name not in self.class_names:
            raise ConfigError("link_class", name, f"one of {list(self.class_names)}")
        return self.class_names.index(name)

    def link_class_names(self) -> Shaped[np.ndarray, "link"]:
        """Class name of every link, shape [link] (a read-only unicode array, built once per topology)."""
        return self._link_class_names

    @functools.cached_property
    def _link_class_names(self) -> np.ndarray:
        return frozen(np.asarray(self.class_names, dtype=str)[self.link_class])

    def router_edges(self) -> list[tuple[int, int, int]]:
        """``(src_router, dst_router, link_id)`` for every router-to-router link."""
        n = self.n_router_links
        return list(zip(self.link_src[:n].tolist(), self.link_dst[:n].tolist(), range(n)))


def check_name(name) -> str | None:
    """A builder's ``name``, checked before any work: None (the builder's own name) or a non-empty string
    (``name=5`` was kept as the number, then shown and written to datasets as the network's name)."""
    if name is not None and (not isinstance(name, str) or not name.strip()):
        raise ConfigError("topology.name", name, "a non-empty string, or null for the builder's own name")
    return name


def node_links(n_routers: int, nodes_per_router: int | NodeInts, n_router_links: int, injection_bandwidth: float,
                n_router_classes: int):
    """Injection and ejection link arrays appended after the router links.

    ``nodes_per_router``: the nodes on every router (an int), or the router
    of every node (an int array, shape [node], nondecreasing)."""
    if np.ndim(nodes_per_router) == 0:
        router = np.repeat(np.arange(n_routers, dtype=np.int64), int(nodes_per_router))
    else:
        router = np.asarray(nodes_per_router, dtype=np.int64)
    n_nodes = int(router.shape[0])
    node = np.arange(n_nodes)
    minus = -np.ones(n_nodes, dtype=np.int64)
    src = np.concatenate([minus, router])
    dst = np.concatenate([router, minus])
    lnode = np.concatenate([node, node])
    cls = np.concatenate([np.full(n_nodes, n_router_classes), np.full(n_nodes, n_router_classes + 1)])
    cap = np.full(2 * n_nodes, injection_bandwidth, dtype=np.float64)
    return src, dst, lnode, cls, cap
