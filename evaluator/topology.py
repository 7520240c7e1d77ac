"""Network topologies: routers, nodes and directed links with capacities.

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
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Literal

import numpy as np

from .errors import ConfigError, positive_float, positive_int, require

__all__ = [
    "Topology",
    "TorusTopology",
    "DragonflyTopology",
    "torus",
    "bgq_partition",
    "gemini",
    "dragonfly",
    "GLOBAL_ARRANGEMENTS",
]

GLOBAL_ARRANGEMENTS = ("consecutive", "relative")
_ARRANGEMENT_ALIASES = {"consecutive": "consecutive", "absolute": "consecutive", "relative": "relative"}


def _frozen(a: np.ndarray) -> np.ndarray:
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
    router_coords: np.ndarray
    link_src: np.ndarray
    link_dst: np.ndarray
    link_node: np.ndarray
    link_class: np.ndarray
    class_names: tuple[str, ...]
    capacity: np.ndarray
    n_router_links: int

    @property
    def kind(self) -> str:  # pragma: no cover - overridden
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
    def node_router(self) -> np.ndarray:
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


def _node_links(n_routers: int, nodes_per_router: int, n_router_links: int, injection_bandwidth: float,
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


# --------------------------------------------------------------------------------------
# Torus / mesh
# --------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, eq=False)
class TorusTopology(Topology):
    """A torus or mesh (per-dimension wrap flag).

    Extra attributes
    ----------------
    dims : tuple of int
        Router count along each dimension, as given by the user.
    wrap : tuple of bool
        Whether each dimension has wrap-around links.
    link_bandwidth : tuple of float
        Bandwidth of the links of each dimension, bytes/s per direction.
    injection_bandwidth : float
        Node injection (and ejection) bandwidth, bytes/s.
    neighbor_link : int ndarray, shape [router, dim, 2]
        Link id leaving a router in the +1 (index 0) and -1 (index 1) direction of
        each dimension, -1 where there is none (mesh boundary, size-1 dimension).
        In a wrapped dimension of size 2 both directions lead to the same
        neighbour over one link (the torus is a simple graph, as in Oltchik &
        Schwartz), so both entries hold the same id.
    """

    dims: tuple[int, ...] = ()
    wrap: tuple[bool, ...] = ()
    link_bandwidth: tuple[float, ...] = ()
    injection_bandwidth: float = 0.0
    neighbor_link: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros((0, 0, 2), np.int64))

    @property
    def kind(self) -> str:
        return "torus"

    @property
    def ndim(self) -> int:
        return len(self.dims)


def _per_dim(field: str, value, ndim: int, cast):
    if isinstance(value, (list, tuple, np.ndarray)):
        require(len(value) == ndim, field, list(value), f"a scalar or a list of {ndim} values (one per dimension)")
        return tuple(cast(v) for v in value)
    return tuple(cast(value) for _ in range(ndim))


def torus(
    dims: Sequence[int],
    wrap: bool | Sequence[bool] = True,
    link_bandwidth: float | Sequence[float] = 2.0e9,
    nodes_per_router: int = 1,
    injection_bandwidth: float | None = None,
    name: str | None = None,
) -> TorusTopology:
    """Build a torus or mesh network.

    Parameters
    ----------
    dims
        Number of routers along each dimension (any number of dimensions).
    wrap
        Wrap-around links, one flag for all dimensions or one per dimension.
        ``False`` makes that dimension a mesh (a line).
    link_bandwidth
        Bandwidth of every link of a dimension in bytes/s per direction, a
        scalar or one per dimension.
    nodes_per_router
        Endpoints attached to each router (1 on Blue Gene/Q, 2 on Cray Gemini).
    injection_bandwidth
        Per-node injection and ejection bandwidth in bytes/s. Defaults to the sum of
        the router's outgoing link bandwidths divided by ``nodes_per_router``,
        so that injection does not bind before the network does.
    name
        Optional label.

    Notes
    -----
    Links are numbered router by router (row-major router id), and within a
    router by dimension, the ``+1`` link before the ``-1`` link. A dimension
    of size 1 has no links; a wrapped dimension of size 2 has one link per
    direction between the two routers.
    """
    require(isinstance(dims, (list, tuple, np.ndarray)) and len(dims) >= 1, "topology.dims", dims,
            "a non-empty list of positive integers")
    dims_t = tuple(positive_int(f"topology.dims[{k}]", d) for k, d in enumerate(dims))
    ndim = len(dims_t)
    wrap_t = _per_dim("topology.wrap", wrap, ndim, bool)
    bw_t = _per_dim("topology.link_bandwidth", link_bandwidth, ndim, float)
    for k, b in enumerate(bw_t):
        positive_float(f"topology.link_bandwidth[{k}]", b)
    npr = positive_int("topology.nodes_per_router", nodes_per_router)

    R = int(np.prod(dims_t))
    coords = np.stack(np.unravel_index(np.arange(R), dims_t), axis=1).astype(np.int64)
    neighbor = -np.ones((R, ndim, 2), dtype=np.int64)
    src_l, dst_l, cls_l, cap_l = [], [], [], []
    # Candidate links in the order (router, dim, direction); built vectorised.
    cand_src, cand_dst, cand_dim, cand_dir = [], [], [], []
    for k in range(ndim):
        n = dims_t[k]
        for d_idx, step in enumerate((+1, -1)):
            c = coords[:, k] + step
            if wrap_t[k]:
                valid = np.full(R, n >= 2)
                if n == 2 and step == -1:
                    valid[:] = False  # same link as the +1 direction
                c = c % n
            else:
                valid = (c >= 0) & (c < n)
            nb = coords.copy()
            nb[:, k] = np.clip(c, 0, n - 1)
            dst = np.ravel_multi_index(tuple(nb.T), dims_t)
            r = np.nonzero(valid)[0]
            cand_src.append(r)
            cand_dst.append(dst[r])
            cand_dim.append(np.full(r.size, k))
            cand_dir.append(np.full(r.size, d_idx))
    cs = np.concatenate(cand_src)
    cd = np.concatenate(cand_dst)
    ck = np.concatenate(cand_dim)
    cdir = np.concatenate(cand_dir)
    order = np.lexsort((cdir, ck, cs))
    cs, cd, ck, cdir = cs[order], cd[order], ck[order], cdir[order]
    link_ids = np.arange(cs.size)
    neighbor[cs, ck, cdir] = link_ids
    for k in range(ndim):
        if wrap_t[k] and dims_t[k] == 2:
            neighbor[:, k, 1] = neighbor[:, k, 0]
    src_l, dst_l, cls_l = cs, cd, ck
    cap_l = np.asarray(bw_t, dtype=np.float64)[ck]
    n_rl = int(cs.size)

    if injection_bandwidth is None:
        out_bw = np.zeros(R)
        np.add.at(out_bw, cs, cap_l)
        injection_bandwidth = float(out_bw.max() / npr) if n_rl else float(max(bw_t))
    inj = positive_float("topology.injection_bandwidth", injection_bandwidth)
    nsrc, ndst, nnode, ncls, ncap = _node_links(R, npr, n_rl, inj, ndim)
    class_names = tuple(f"torus-dim{k}" for k in range(ndim)) + ("injection", "ejection")
    if name is None:
        shape = "x".join(str(d) for d in dims_t)
        kind = "torus" if all(wrap_t) else ("mesh" if not any(wrap_t) else "torus/mesh")
        name = f"{kind} {shape}" + (f" ({npr} nodes/router)" if npr > 1 else "")
    return TorusTopology(
        name=name,
        n_routers=R,
        nodes_per_router=npr,
        router_coords=_frozen(coords),
        link_src=_frozen(np.concatenate([src_l, nsrc]).astype(np.int64)),
        link_dst=_frozen(np.concatenate([dst_l, ndst]).astype(np.int64)),
        link_node=_frozen(np.concatenate([-np.ones(n_rl, np.int64), nnode]).astype(np.int64)),
        link_class=_frozen(np.concatenate([cls_l, ncls]).astype(np.int64)),
        class_names=class_names,
        capacity=_frozen(np.concatenate([cap_l, ncap])),
        n_router_links=n_rl,
        dims=dims_t,
        wrap=wrap_t,
        link_bandwidth=bw_t,
        injection_bandwidth=inj,
        neighbor_link=_frozen(neighbor),
    )


def bgq_partition(
    midplanes: Sequence[int],
    link_bandwidth: float = 2.0e9,
    injection_bandwidth: float | None = None,
    name: str | None = None,
) -> TorusTopology:
    """Blue Gene/Q partition of ``A x B x C x D`` midplanes.

    A midplane is a 4x4x4x4x2 torus of 512 nodes, so the partition is the
    5D torus ``4A x 4B x 4C x 4D x 2`` with one node per router, wrap-around
    in every dimension (a partition is its own torus) and 2 GB/s links.
    """
    require(isinstance(midplanes, (list, tuple, np.ndarray)) and len(midplanes) == 4, "topology.midplanes",
            midplanes, "a list of 4 positive integers (A, B, C, D midplanes)")
    mp = tuple(positive_int(f"topology.midplanes[{k}]", m) for k, m in enumerate(midplanes))
    dims = tuple(4 * m for m in mp) + (2,)
    if name is None:
        name = "BG/Q " + "x".join(map(str, mp)) + " midplanes (" + "x".join(map(str, dims)) + ")"
    return torus(dims, wrap=True, link_bandwidth=link_bandwidth, nodes_per_router=1,
                 injection_bandwidth=injection_bandwidth, name=name)


GEMINI_XZ_BANDWIDTH = 9.375e9
"""Cray Gemini X and Z link bandwidth, bytes/s per direction (Y is half)."""


def gemini(
    dims: Sequence[int],
    wrap: bool | Sequence[bool] = True,
    xz_bandwidth: float = GEMINI_XZ_BANDWIDTH,
    injection_bandwidth: float = 6.4e9,
    name: str | None = None,
) -> TorusTopology:
    """Cray XE Gemini 3D torus: 2 nodes per router, Y links at half the X/Z bandwidth.

    ``dims`` is the router grid (X, Y, Z); Blue Waters is ``(24, 24, 24)``.
    """
    require(isinstance(dims, (list, tuple, np.ndarray)) and len(dims) == 3, "topology.dims", dims,
            "a list of 3 positive integers (X, Y, Z Gemini routers)")
    bw = positive_float("topology.xz_bandwidth", xz_bandwidth)
    if name is None:
        name = "Gemini " + "x".join(str(int(d)) for d in dims)
    return torus(dims, wrap=wrap, link_bandwidth=(bw, bw / 2, bw), nodes_per_router=2,
                 injection_bandwidth=injection_bandwidth, name=name)


# --------------------------------------------------------------------------------------
# Dragonfly
# --------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, eq=False)
class DragonflyTopology(Topology):
    """Dragonfly(p, a, h, g) with fully connected groups.

    Extra attributes
    ----------------
    p, a, h, g
        Nodes per router, routers per group, global ports per router, groups.
    arrangement
        ``"consecutive"`` or ``"relative"`` (see :func:`dragonfly`).
    links_per_pair
        Global links between every pair of groups (``m``).
    local_link : int ndarray, shape [group, a, a]
        Link id of the local link ``i -> j`` inside a group (-1 on the diagonal).
    global_link : int ndarray, shape [group, group, m]
        Link id of the ``c``-th global link from group ``G`` to group ``H``
        (-1 on the diagonal).
    global_owner : int ndarray, shape [group, group, m]
        Index in group ``G`` of the router that owns that link. The link lands on
        router ``global_owner[H, G, c]`` of group ``H``.
    bandwidth_p, bandwidth_l, bandwidth_r
        B_P (injection), B_L (local) and B_R (global) in bytes/s per direction.
    """

    p: int = 0
    a: int = 0
    h: int = 0
    g: int = 0
    arrangement: str = "consecutive"
    links_per_pair: int = 1
    local_link: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros((0, 0, 0), np.int64))
    global_link: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros((0, 0, 0), np.int64))
    global_owner: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros((0, 0, 0), np.int64))
    bandwidth_p: float = 0.0
    bandwidth_l: float = 0.0
    bandwidth_r: float = 0.0

    @property
    def kind(self) -> str:
        return "dragonfly"

    def landing_router(self, src_group: int, dst_group: int, copy: int = 0) -> int:
        """Router id in ``dst_group`` where the ``copy``-th global link from ``src_group`` lands."""
        return dst_group * self.a + int(self.global_owner[dst_group, src_group, copy])

    def owner_router(self, src_group: int, dst_group: int, copy: int = 0) -> int:
        """Router id in ``src_group`` owning the ``copy``-th global link to ``dst_group``."""
        return src_group * self.a + int(self.global_owner[src_group, dst_group, copy])


def _global_port_target(arrangement: str, G: np.ndarray, t: np.ndarray, g: int) -> np.ndarray:
    """Destination group of offset slot ``t`` (0..g-2) of group ``G``."""
    if arrangement == "consecutive":
        return np.where(t < G, t, t + 1)
    return (G + t + 1) % g


def dragonfly(
    p: int,
    a: int,
    h: int,
    g: int | None = None,
    bandwidth_p: float = 10.0e9,
    bandwidth_l: float = 10.0e9,
    bandwidth_r: float = 10.0e9,
    arrangement: Literal["consecutive", "absolute", "relative"] = "consecutive",
    name: str | None = None,
) -> DragonflyTopology:
    """Build a Dragonfly(p, a, h, g).

    Each group is a full mesh of ``a`` routers (one local link each way between
    every pair). Each router has ``p`` nodes and ``h`` global ports. ``g``
    defaults to the maximum ``a*h + 1``; with fewer groups every pair of
    groups gets ``m = floor(a*h / (g-1))`` parallel global links and the
    remaining ``a*h - m*(g-1)`` ports of each group stay unconnected.

    Global port ``j`` (0 .. a*h-1) of a group belongs to router ``j // h``
    (port ``j % h`` of that router). Ports are dealt round-robin over the
    ``g-1`` other groups: port ``j`` serves offset slot ``t = j mod (g-1)``
    as copy ``c = j // (g-1)`` (so the copies to one group sit on different
    routers). Slot ``t`` of group ``G`` leads to group

    * ``consecutive`` (also called absolute, Hastings et al. 2015):
      ``t`` if ``t < G`` else ``t + 1`` — the other groups in increasing order;
    * ``relative``: ``(G + t + 1) mod g``.

    Copy ``c`` of the link from ``G`` to ``H`` is joined to copy ``c`` of the
    link from ``H`` to ``G``; the two directions are two directed links.

    Parameters
    ----------
    p, a, h, g
        Nodes per router, routers per group, global ports per router, groups.
    bandwidth_p, bandwidth_l, bandwidth_r
        B_P (node injection/ejection), B_L (local) and B_R (global) link
        bandwidths, bytes/s per direction.
    arrangement
        Global link arrangement, ``"consecutive"`` (alias ``"absolute"``) or
        ``"relative"``.
    """
    p = positive_int("topology.p", p)
    a = positive_int("topology.a", a)
    h = positive_int("topology.h", h)
    gmax = a * h + 1
    if g is None:
        g = gmax
    g = positive_int("topology.g", g, minimum=2)
    require(g <= gmax, "topology.g", g, f"an integer in [2, a*h+1] = [2, {gmax}] (a={a}, h={h})",
            "Lower g, or raise a or h.")
    require(arrangement in _ARRANGEMENT_ALIASES, "topology.arrangement", arrangement,
            f"one of {sorted(_ARRANGEMENT_ALIASES)}")
    arr = _ARRANGEMENT_ALIASES[arrangement]
    bp = positive_float("topology.bandwidth_p", bandwidth_p)
    bl = positive_float("topology.bandwidth_l", bandwidth_l)
    br = positive_float("topology.bandwidth_r", bandwidth_r)
    m = (a * h) // (g - 1)
    R = g * a

    coords = np.stack([np.arange(R) // a, np.arange(R) % a], axis=1).astype(np.int64)

    # Local links: group by group, (i, j) row-major, i != j.
    G_, I_, J_ = np.meshgrid(np.arange(g), np.arange(a), np.arange(a), indexing="ij")
    off = I_ != J_
    lg, li, lj = G_[off], I_[off], J_[off]
    n_local = lg.size
    local_link = -np.ones((g, a, a), dtype=np.int64)
    local_link[lg, li, lj] = np.arange(n_local)
    l_src = lg * a + li
    l_dst = lg * a + lj

    # Global links: group by group, port by port (used ports only).
    n_used = m * (g - 1)
    Gp, Jp = np.meshgrid(np.arange(g), np.arange(n_used), indexing="ij")
    Gp, Jp = Gp.ravel(), Jp.ravel()
    t = Jp % (g - 1)
    c = Jp // (g - 1)
    H = _global_port_target(arr, Gp, t, g)
    owner_idx = Jp // h
    global_link = -np.ones((g, g, m), dtype=np.int64)
    global_owner = -np.ones((g, g, m), dtype=np.int64)
    global_link[Gp, H, c] = n_local + np.arange(Gp.size)
    global_owner[Gp, H, c] = owner_idx
    if m > 0:
        offd = ~np.eye(g, dtype=bool)
        assert (global_link[offd] >= 0).all(), "global arrangement left a group pair unconnected"
    g_src = Gp * a + owner_idx
    g_dst = H * a + global_owner[H, Gp, c]

    n_rl = n_local + Gp.size
    nsrc, ndst, nnode, ncls, ncap = _node_links(R, p, n_rl, bp, 2)
    src = np.concatenate([l_src, g_src, nsrc])
    dst = np.concatenate([l_dst, g_dst, ndst])
    cls = np.concatenate([np.zeros(n_local, np.int64), np.ones(Gp.size, np.int64), ncls])
    cap = np.concatenate([np.full(n_local, bl), np.full(Gp.size, br), ncap])
    lnode = np.concatenate([-np.ones(n_rl, np.int64), nnode])
    if name is None:
        name = f"DF({p},{a},{h},{g})"
    return DragonflyTopology(
        name=name,
        n_routers=R,
        nodes_per_router=p,
        router_coords=_frozen(coords),
        link_src=_frozen(src.astype(np.int64)),
        link_dst=_frozen(dst.astype(np.int64)),
        link_node=_frozen(lnode),
        link_class=_frozen(cls),
        class_names=("local", "global", "injection", "ejection"),
        capacity=_frozen(cap.astype(np.float64)),
        n_router_links=int(n_rl),
        p=p,
        a=a,
        h=h,
        g=g,
        arrangement=arr,
        links_per_pair=m,
        local_link=_frozen(local_link),
        global_link=_frozen(global_link),
        global_owner=_frozen(global_owner),
        bandwidth_p=bp,
        bandwidth_l=bl,
        bandwidth_r=br,
    )
