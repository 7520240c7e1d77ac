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
``router * nodes_per_router + port``.

A member of the family is one private module holding the topology class (a
subclass of :class:`Topology` with its own ``kind``), its builder function,
its config schema and a :class:`TopologyKind` entry for the registry in
``evaluator/topology/__init__.py``.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .._registry import Kind
from .._types import LinkFloats, LinkInts, NodeInts, RouterCoords
from ..errors import ConfigError

__all__ = ["Topology", "TopologyKind", "frozen", "node_links"]


@dataclasses.dataclass(frozen=True)
class TopologyKind(Kind):
    """A topology member: ``build(cfg) -> Topology``."""


def frozen(a: np.ndarray) -> np.ndarray:
    """A read-only contiguous copy (topology arrays are immutable)."""
    a = np.ascontiguousarray(a)
    a.setflags(write=False)
    return a


@dataclasses.dataclass(frozen=True, eq=False)
class Topology:
    """Common description of a network.

    Attributes
    ----------
    name
        Human-readable name, e.g. ``"DF(4,8,4,33)"``.
    n_routers, nodes_per_router
        Router count and nodes attached to each router.
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

    @property
    def kind(self) -> str:  # pragma: no cover - overridden
        """Name of the topology's kind in the registry (``"torus"``, ``"dragonfly"``, ...)."""
        raise NotImplementedError

    @property
    def n_nodes(self) -> int:
        """Number of endpoints (nodes)."""
        return self.n_routers * self.nodes_per_router

    @property
    def n_links(self) -> int:
        """Number of directed links, router links plus injection and ejection."""
        return int(self.link_src.shape[0])

    @property
    def node_router(self) -> NodeInts:
        """Router id of every node, shape [node]."""
        return np.repeat(np.arange(self.n_routers), self.nodes_per_router)

    def injection_link(self, node: np.ndarray | int) -> np.ndarray | int:
        """Link id of the injection link of ``node``."""
        return self.n_router_links + np.asarray(node)

    def ejection_link(self, node: np.ndarray | int) -> np.ndarray | int:
        """Link id of the ejection link of ``node``."""
        return self.n_router_links + self.n_nodes + np.asarray(node)

    def class_id(self, name: str) -> int:
        """Index of link class ``name`` in :attr:`class_names`."""
        if name not in self.class_names:
            raise ConfigError("link_class", name, f"one of {list(self.class_names)}")
        return self.class_names.index(name)

    def link_class_names(self) -> np.ndarray:
        """Class name of every link, shape [link]."""
        return np.asarray(self.class_names, dtype=object)[self.link_class].astype(str)

    def router_edges(self) -> list[tuple[int, int, int]]:
        """``(src_router, dst_router, link_id)`` for every router-to-router link."""
        n = self.n_router_links
        return list(zip(self.link_src[:n].tolist(), self.link_dst[:n].tolist(), range(n)))


def node_links(n_routers: int, nodes_per_router: int, n_router_links: int, injection_bandwidth: float,
                n_router_classes: int):
    """Injection and ejection link arrays appended after the router links."""
    n_nodes = n_routers * nodes_per_router
    node = np.arange(n_nodes)
    router = node // nodes_per_router
    minus = -np.ones(n_nodes, dtype=np.int64)
    src = np.concatenate([minus, router])
    dst = np.concatenate([router, minus])
    lnode = np.concatenate([node, node])
    cls = np.concatenate([np.full(n_nodes, n_router_classes), np.full(n_nodes, n_router_classes + 1)])
    cap = np.full(2 * n_nodes, injection_bandwidth, dtype=np.float64)
    return src, dst, lnode, cls, cap
