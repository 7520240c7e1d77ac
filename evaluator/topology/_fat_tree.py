"""Fat trees (folded Clos networks): :func:`fat_tree`, an extended generalized fat tree (XGFT).

The parameterisation is Ohring et al.'s XGFT(h; m_1..m_h; w_1..w_h) (Ohring,
Ibel, Das, Kumar, "On generalized fat trees", IPPS 1995):

* ``levels`` ``h``: switch levels (level 1: the leaf switches, level ``h``: the top);
* ``children`` ``[m_1, ..., m_h]``: ``m_1`` hosts per leaf switch, ``m_i``
  children per level-``i`` switch;
* ``parents`` ``[w_1, ..., w_h]``: ``w_1 = 1`` (a host has one uplink),
  ``w_i`` parents of every level-``(i-1)`` switch; ``w_i < m_{i-1}`` tapers
  (oversubscribes) the links between levels ``i-1`` and ``i``. Default: ``[1,
  m_1, ..., m_{h-1}]``, as many uplinks as downlinks on every switch (non-blocking);
* the k-ary n-tree shortcut (Petrini and Vanneschi): ``k`` and ``levels = n``
  give ``m = [k] * n``, ``w = [1, k, ..., k]`` (``k^n`` hosts, ``n k^(n-1)``
  switches of ``2k`` ports);
* ``parallel_links``: links between a switch and each of its parents, one
  value or one per switch tier (``h - 1`` values: tier ``t`` joins levels
  ``t`` and ``t + 1``);
* ``link_bandwidth``: bytes/s per direction of every switch-to-switch link,
  one value or one per tier; ``injection_bandwidth``: of the host links.

Labels and ids
--------------
A level-``i`` switch is labelled by the XGFT digit tuple ``(x_h, ..., x_{i+1},
y_i, ..., y_1)`` with ``x_j < m_j`` (which subtree it serves) and ``y_j < w_j``
(which of the parallel switches it is); its parents replace ``x_{i+1}`` by
``y_{i+1}``; a host is ``(x_h, ..., x_1)``. The switches whose labels share
``x_h .. x_{i+1}`` all reach the same hosts: a *level-i subtree* (level 1: one
leaf; level 2: a *pod*).

* Router ids: level by level, leaves first; within a level the row-major order
  of the label (``x_h`` slowest, ``y_1`` fastest; radices ``m_h .. m_{i+1}, w_i
  .. w_1``), so router id ``= level_offset[i - 1] + X * Y_i + yy`` with ``X`` the
  subtree index, ``Y_i = w_1 ... w_i`` and ``yy`` the index of ``(y_i .. y_1)``.
  Leaf switch ``l`` is router ``l``.
* ``router_coords[r] = (i, x_h, ..., x_{i+1}, y_i, ..., y_1)``: the level,
  then the label (``h + 1`` columns).
* Node ids: leaf-major, ``node = leaf * m_1 + port``, i.e. the row-major order of
  the host label ``(x_h, ..., x_1)``; only leaves carry nodes
  (``nodes_per_router = 0``; :attr:`FatTreeTopology.node_router`).
* Links: tier by tier (``t = 1 .. h-1``), first the *up* links of the tier
  (class ``level<t>-up``, level ``t`` -> ``t + 1``) then its *down* links
  (``level<t>-down``, the reverse), then injection and ejection. With ``pl_t =
  parallel_links[t - 1]`` and ``U_t = w_{t+1} pl_t`` up ports per level-``t``
  switch, the up link of port ``u`` of the level-``t`` switch with local index
  ``c`` (router ``level_offset[t - 1] + c``) is link ``up_offset[t - 1] + c
  U_t + u``; it leads to parent digit ``y_{t+1} = u // pl_t`` (parallel copy
  ``u % pl_t``); the link with the same index after ``down_offset[t - 1]`` is
  its reverse.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any, Optional, no_type_check

import numpy as np

from ..latency import LatencyConfig
from .._types import ConfigOf, Int, RouterInts
from ..errors import ConfigError, check_memory, is_int, positive_float, positive_int, require
from .base import Topology, TopologyKind, check_name, frozen, node_links

__all__ = ["FatTreeTopology", "fat_tree", "fat_tree_bytes", "FatTreeConfig", "FAT_TREE"]


@dataclasses.dataclass(frozen=True, eq=False)
class FatTreeTopology(Topology):
    """An XGFT(h; m; w) fat tree (module docstring: labels, ids and link layout).

    Extra attributes
    ----------------
    levels
        Switch levels ``h``.
    children, parents
        ``(m_1, ..., m_h)`` and ``(w_1 = 1, w_2, ..., w_h)``.
    parallel_links, link_bandwidth
        Per switch tier ``t = 1 .. h-1`` (levels ``t`` and ``t + 1``): links per
        connected switch pair, and bytes/s per direction of each.
    injection_bandwidth
        Bytes/s per direction of a host's link to its leaf.
    radix
        The switch product's port count where the config gives one (every switch fits in it; the cost buys
        switches of this radix), else None (the cost buys the most ports a level needs).
    level_offset : int ndarray, shape [h + 1]
        Router id of the first switch of level ``i`` at index ``i - 1``; the last entry is ``n_routers``.
    up_offset, down_offset : int ndarray, shape [h - 1]
        Link id of the first up (down) link of tier ``t`` at index ``t - 1``.
    leaf_of_node : int ndarray, shape [node]
        Leaf switch (router id) of every node, ``node // m_1``.
    """

    levels: int = 1
    children: tuple[int, ...] = ()
    parents: tuple[int, ...] = ()
    parallel_links: tuple[int, ...] = ()
    link_bandwidth: tuple[float, ...] = ()
    injection_bandwidth: float = 0.0
    radix: int | None = None
    level_offset: Int[np.ndarray, "level"] = dataclasses.field(default_factory=lambda: np.zeros(0, np.int64))
    up_offset: Int[np.ndarray, "tier"] = dataclasses.field(default_factory=lambda: np.zeros(0, np.int64))
    down_offset: Int[np.ndarray, "tier"] = dataclasses.field(default_factory=lambda: np.zeros(0, np.int64))
    leaf_of_node: Int[np.ndarray, "node"] = dataclasses.field(default_factory=lambda: np.zeros(0, np.int64))

    @property
    def kind(self) -> str:
        return "fat_tree"

    @property
    def node_router(self):
        """Leaf switch of every node (``node // m_1``): switches above the leaves carry no nodes."""
        return self.leaf_of_node

    def diameter_bound(self) -> int:
        """Up to the top level and down again: ``2 (h - 1)`` router hops."""
        return 2 * (int(self.levels) - 1)

    # ------------------------------------------------------------------ sizes per level and tier

    def switches(self, level: int) -> int:
        """Switches at ``level`` (1 .. h): ``m_{level+1} ... m_h * w_1 ... w_level``."""
        return int(self.level_offset[level] - self.level_offset[level - 1])

    def parallel(self, level: int) -> int:
        """Switches per level-``level`` subtree: ``Y = w_1 ... w_level``."""
        return math.prod(self.parents[:level])

    def subtree_nodes(self, level: int) -> int:
        """Nodes under one level-``level`` subtree: ``m_1 ... m_level``."""
        return math.prod(self.children[:level])

    def up_ports(self, tier: int) -> int:
        """Up ports of a level-``tier`` switch: ``w_{tier+1} * pl_tier``."""
        return int(self.parents[tier]) * int(self.parallel_links[tier - 1])

    def router_level(self) -> RouterInts:
        """Level (1 .. h) of every router, shape [router]."""
        return np.asarray(self.router_coords[:, 0])

    # ------------------------------------------------------------------ what generic code asks

    def node_groups(self) -> Int[np.ndarray, "level node"]:
        """Per level, the subtree of every node, shape [level, node]: leaf, pod (level-2 subtree), ... up to
        level ``h - 1`` (the whole machine, level ``h``, is implied)."""
        node = np.arange(self.n_nodes, dtype=np.int64)
        return np.stack([node // self.subtree_nodes(t) for t in range(1, max(int(self.levels) - 1, 1) + 1)])

    def furthest_routers(self) -> RouterInts:
        """Closed form: the leaf whose digit at the highest level ``t`` with ``m_t >= 2`` (``t >= 2``) is
        shifted by ``floor(m_t / 2)`` (mod ``m_t``): ``2 (t - 1)`` hops, the largest distance of any leaf
        pair; a single leaf is its own partner. -1 for switches above the leaves."""
        out = np.full(self.n_routers, -1, dtype=np.int64)
        n_leaves = self.switches(1)
        leaf = np.arange(n_leaves, dtype=np.int64)
        top = [t for t in range(2, int(self.levels) + 1) if self.children[t - 1] >= 2]
        if not top:
            out[:n_leaves] = leaf
            return out
        t = top[-1]
        B = math.prod(self.children[1:t - 1])  # leaves per level-(t-1) subtree
        m_t = int(self.children[t - 1])
        digit = (leaf // B) % m_t
        out[:n_leaves] = leaf + (((digit + m_t // 2) % m_t) - digit) * B
        return out


def _levels_list(field: str, value: Any, h: int, what: str) -> tuple[int, ...]:
    """A list of ``h`` positive integers (the XGFT's ``children`` or ``parents``)."""
    ok = isinstance(value, (list, tuple, np.ndarray)) and not isinstance(value, str)
    if not ok:
        raise ConfigError(field, value, f"a list of {h} positive integers ({what}, one per level)")
    vals = list(value)
    require(len(vals) == h, field, vals, f"a list of {h} positive integers ({what}, one per level: levels = {h})",
            f"Give one entry per switch level, or set topology.levels = {len(vals)}.")
    return tuple(positive_int(f"{field}[{i}]", v) for i, v in enumerate(vals))


def _per_tier(field: str, value: Any, n_tiers: int) -> list[tuple[str, Any]]:
    """``(field name, value)`` per switch tier: one value for every tier, or a list of exactly ``n_tiers``."""
    if isinstance(value, (list, tuple, np.ndarray)) and not isinstance(value, str):
        require(len(value) == n_tiers, field, list(value), f"one value or a list of {n_tiers} (one per switch tier: "
                f"levels - 1 = {n_tiers}; tier t joins levels t and t+1)")
        return [(f"{field}[{i}]", v) for i, v in enumerate(value)]
    return [(field, value)] * n_tiers


def fat_tree_bytes(children, parents, parallel_links) -> int:
    """Estimated peak bytes of building :func:`fat_tree`, from the parameters alone.

    With ``N`` nodes, ``R`` switches, ``E`` router links (up and down) and
    ``h`` levels: 120 bytes per router link (a tier's index temporaries and
    the final per-link arrays), 200 per node (its injection and ejection
    links while they are built and in the final arrays) and ``24 (h + 1)`` per
    switch for the coordinates. Measured with ``tracemalloc`` this is
    1.0-1.3x the real peak (16-ary 3-tree: 2.9 MB estimated, 2.6 MB measured;
    4-ary 6-tree: 6.8 MB vs 5.3 MB).
    """
    m = [int(x) for x in children]
    w = [int(x) for x in parents]
    pl = [int(x) for x in parallel_links]
    h = len(m)
    n_nodes = math.prod(m)
    n_sw = sum(math.prod(m[t:]) * math.prod(w[:t]) for t in range(1, h + 1))
    n_rl = 2 * sum(math.prod(m[t:]) * math.prod(w[:t]) * w[t] * pl[t - 1] for t in range(1, h))
    return 120 * n_rl + 200 * n_nodes + 24 * (h + 1) * n_sw


@no_type_check  # takes raw configuration and refuses bad values itself (ConfigError naming the field)
def _tree_shape(children, parents, levels, k) -> tuple[tuple, tuple, str | None]:
    """``(m, w, default name)`` of the tree: the k-ary n-tree shortcut when ``children`` is None, else the lists
    given (``parents`` None: no taper), checked."""
    if children is None:
        require(parents is None, "topology.parents", parents, "null when children is null (the k-ary n-tree "
                "shortcut sets both)", "Give topology.children as well, or drop topology.parents.")
        n = 3 if levels is None else positive_int("topology.levels", levels)
        k = 8 if k is None else k
        require(is_int(k) and int(k) >= 2, "topology.k", k, "an integer >= 2 (the k of a k-ary n-tree)",
                "Or give topology.children and topology.parents for any XGFT.")
        k = int(k)
        m = (k,) * n
        w = (1,) + (k,) * (n - 1)
        default_name = f"FT({k}-ary {n}-tree)"
    else:
        require(k is None, "topology.k", k, "null when topology.children is given (k is the k-ary n-tree shortcut)",
                "Set topology.k=null, or drop topology.children.")
        if not isinstance(children, (list, tuple, np.ndarray)) or isinstance(children, str) or len(children) < 1:
            raise ConfigError("topology.children", children, "a non-empty list of positive integers (m_1 = hosts "
                              "per leaf switch, m_i = children per level-i switch)")
        h = len(children) if levels is None else positive_int("topology.levels", levels)
        m = _levels_list("topology.children", children, h, "children per switch")
        if parents is None:
            w = (1,) + m[:-1]
        else:
            w = _levels_list("topology.parents", parents, h, "parents per switch or host")
        default_name = None
    h = len(m)
    require(w[0] == 1, "topology.parents", list(w), "a list whose first entry is 1 (w_1: a host has one uplink)",
            "Hosts hang off one leaf switch each; w_2 .. w_h are the parents of the switches.")
    one = [i + 1 for i in range(1, h) if m[i] == 1]
    require(not one, "topology.children", list(m), "m_i >= 2 at every level i >= 2 (a switch level whose switches "
            f"have one child joins nothing: level {one[0] if one else 0} here)",
            "Drop that level (and its entry in parents), or give its switches at least 2 children.")
    return m, w, default_name


def _tier_links(m, w, parallel_links, link_bandwidth, injection_bandwidth, radix):
    """``(parallel links, bandwidths)`` per switch tier and the injection bandwidth, checked, and every switch's
    ports within ``radix``."""
    h = len(m)
    n_tiers = h - 1
    pl = tuple(positive_int(f, v) for f, v in _per_tier("topology.parallel_links", parallel_links, n_tiers))
    bw = tuple(positive_float(f, v) for f, v in _per_tier("topology.link_bandwidth", link_bandwidth, n_tiers))
    if n_tiers == 0:  # no switch-to-switch links: a single value is still checked
        if not isinstance(parallel_links, (list, tuple, np.ndarray)):
            positive_int("topology.parallel_links", parallel_links)
        if not isinstance(link_bandwidth, (list, tuple, np.ndarray)):
            positive_float("topology.link_bandwidth", link_bandwidth)
    b_inj = positive_float("topology.injection_bandwidth", injection_bandwidth)
    if radix is not None:
        r = positive_int("topology.radix", radix, minimum=2)
        for i in range(1, h + 1):
            down = m[i - 1] * (1 if i == 1 else pl[i - 2])
            up = w[i] * pl[i - 1] if i < h else 0
            require(down + up <= r, "topology.radix", r,
                    f"at least the ports of every switch: a level-{i} switch has {down} down + {up} up = "
                    f"{down + up} ports (children {list(m)}, parents {list(w)}, parallel_links {list(pl)})",
                    "Raise the radix, or give the switches fewer children or parents.")
    return pl, bw, b_inj


def _switches(m, w):
    """``(switches per level, level offsets, coords[router, level + labels])``, leaves first."""
    h = len(m)
    n_sw = [math.prod(m[t:]) * math.prod(w[:t]) for t in range(1, h + 1)]
    level_offset = np.concatenate([[0], np.cumsum(n_sw)]).astype(np.int64)
    R = int(level_offset[-1])
    coords = np.zeros((R, h + 1), dtype=np.int64)
    for t in range(1, h + 1):
        radices = tuple(m[t:][::-1]) + tuple(w[:t][::-1])  # (m_h .. m_{t+1}, w_t .. w_1)
        lo, hi = int(level_offset[t - 1]), int(level_offset[t])
        coords[lo:hi, 0] = t
        if radices:
            coords[lo:hi, 1:] = np.stack(np.unravel_index(np.arange(hi - lo), radices), axis=1)

    return n_sw, level_offset, coords


def _tier_link_arrays(m, w, pl, bw, n_sw, level_offset):
    """The router links, tier by tier (up links, child ``c`` and port ``u``, then the down links in the same
    order): their ends, classes and capacities, each tier's up and down offsets, the count and the class
    names."""
    h = len(m)
    srcs, dsts, classes, caps = [], [], [], []
    up_offset, down_offset = [], []
    n_rl = 0
    class_names = []
    for t in range(1, h):
        Y = math.prod(w[:t])
        U = w[t] * pl[t - 1]
        c = np.arange(n_sw[t - 1], dtype=np.int64)
        u = np.arange(U, dtype=np.int64)
        X, yy = c // Y, c % Y
        parent_local = ((X // m[t])[:, None] * (w[t] * Y) + (u // pl[t - 1])[None, :] * Y + yy[:, None]).reshape(-1)
        child = np.repeat(level_offset[t - 1] + c, U)
        parent = level_offset[t] + parent_local
        E = child.size
        up_offset.append(n_rl)
        down_offset.append(n_rl + E)
        n_rl += 2 * E
        srcs += [child, parent]
        dsts += [parent, child]
        classes += [np.full(E, 2 * (t - 1), np.int64), np.full(E, 2 * (t - 1) + 1, np.int64)]
        caps += [np.full(2 * E, bw[t - 1])]
        class_names += [f"level{t}-up", f"level{t}-down"]
    return srcs, dsts, classes, caps, up_offset, down_offset, n_rl, class_names


def _xgft_name(m, w, pl) -> str:
    """A tree's own name where it is no k-ary n-tree: ``XGFT(h;m_1,..;w_1,..)``, ``x`` its parallel links."""
    return (f"XGFT({len(m)};{','.join(map(str, m))};{','.join(map(str, w))})"
            + ("" if all(p == 1 for p in pl) else f"x{','.join(map(str, pl))}"))


def fat_tree(
    children: list[int] | None = None,
    parents: list[int] | None = None,
    *,
    levels: int | None = None,
    k: int | None = None,
    parallel_links: int | list[int] = 1,
    link_bandwidth: float | list[float] = 12.5e9,
    injection_bandwidth: float = 12.5e9,
    radix: int | None = None,
    name: str | None = None,
) -> FatTreeTopology:
    """Build an XGFT fat tree (labels, ids and link layout: module docstring).

    Parameters
    ----------
    children, parents
        ``[m_1, ..., m_h]`` and ``[w_1 = 1, w_2, ..., w_h]``; ``parents`` None
        gives ``[1, m_1, ..., m_{h-1}]`` (no taper: as many up as down ports).
    levels, k
        The k-ary n-tree shortcut when ``children`` is None: ``m = [k] *
        levels``, ``w = [1, k, ..., k]`` (``levels`` default 3, ``k`` default 8).
        With ``children``, ``levels`` (optional) must equal its length and
        ``k`` must be None.
    parallel_links
        Links between a switch and each parent: one value, or one per switch
        tier (``h - 1`` values, tier ``t`` joining levels ``t`` and ``t + 1``).
    link_bandwidth
        Bytes/s per direction of each switch-to-switch link, one value or one per tier.
    injection_bandwidth
        Bytes/s per direction of each host link.
    radix
        Optional switch port count, the product bought: every switch's ports
        (``m_i`` down, times the tier's parallel links above the leaves, plus
        ``w_{i+1}`` times the parallel links up) must fit in it, and the cost
        (:func:`evaluator.cost.network_cost`) buys switches of that many ports
        (until 2026-12-06 it was checked, then forgotten: the cost bought the
        most ports a level needs).

    Refused with a :class:`~evaluator.errors.ConfigError` naming the field:
    ``levels < 1``, lists of the wrong length, counts below 1, ``w_1 != 1``,
    a switch level above the leaves with one child per switch (it joins
    nothing: every pair meets below it), switches that need more than
    ``radix`` ports, ``k < 2``, non-positive bandwidths; and with a
    :class:`~evaluator.errors.ResourceError` a tree whose arrays would not fit
    in memory (:func:`fat_tree_bytes`), before anything is allocated.
    """
    name = check_name(name)
    m, w, default_name = _tree_shape(children, parents, levels, k)
    h = len(m)
    pl, bw, b_inj = _tier_links(m, w, parallel_links, link_bandwidth, injection_bandwidth, radix)
    check_memory("topology", {"children": list(m), "parents": list(w), "parallel_links": list(pl)},
                 fat_tree_bytes(m, w, pl), f"its {math.prod(m):,} nodes' and switches' links",
                 "Lower the children or parents per level, or the levels.")

    n_sw, level_offset, coords = _switches(m, w)
    R = int(level_offset[-1])

    # router links, tier by tier: up links (child c, port u) then the down links in the same order
    srcs, dsts, classes, caps, up_offset, down_offset, n_rl, class_names = _tier_link_arrays(
        m, w, pl, bw, n_sw, level_offset)
    leaf_of_node = np.repeat(np.arange(n_sw[0], dtype=np.int64), m[0])
    nsrc, ndst, nnode, ncls, ncap = node_links(R, leaf_of_node, n_rl, b_inj, len(class_names))
    src = np.concatenate(srcs + [nsrc])
    dst = np.concatenate(dsts + [ndst])
    cls = np.concatenate(classes + [ncls])
    cap = np.concatenate(caps + [ncap])
    lnode = np.concatenate([-np.ones(n_rl, np.int64), nnode])
    return FatTreeTopology(
        name=(default_name or _xgft_name(m, w, pl)) if name is None else name, n_routers=R, nodes_per_router=0,
        router_coords=frozen(coords),
        link_src=frozen(src.astype(np.int64)), link_dst=frozen(dst.astype(np.int64)), link_node=frozen(lnode),
        link_class=frozen(cls.astype(np.int64)), class_names=tuple(class_names) + ("injection", "ejection"),
        capacity=frozen(cap.astype(np.float64)), n_router_links=int(n_rl),
        levels=h, children=tuple(m), parents=tuple(w), parallel_links=tuple(pl), link_bandwidth=tuple(bw),
        injection_bandwidth=b_inj, radix=None if radix is None else int(radix), level_offset=frozen(level_offset),
        up_offset=frozen(np.asarray(up_offset, np.int64)), down_offset=frozen(np.asarray(down_offset, np.int64)),
        leaf_of_node=frozen(leaf_of_node),
    )


@dataclass
class FatTreeConfig:
    """A fat tree (XGFT). Default: the 8-ary 3-tree (512 hosts, 192 switches of 16 ports, no taper) with
    100 Gb/s links (12.5 GB/s per direction, an InfiniBand EDR port).

    ``children`` null: the k-ary n-tree of ``k`` (null: 8) and ``levels`` (null: 3); else
    ``children`` ``[m_1..m_h]`` and ``parents`` ``[1, w_2..w_h]`` (null: no taper)
    with ``k: null``. ``parallel_links`` and ``link_bandwidth`` take one value
    or one per switch tier (``levels - 1``); bandwidths in bytes/s per
    direction; ``radix`` (optional) caps every switch's ports.
    """

    kind: str = "fat_tree"
    levels: Optional[int] = None
    k: Optional[int] = None
    children: Optional[list[int]] = None
    parents: Optional[list[int]] = None
    parallel_links: Any = 1
    link_bandwidth: Any = 12.5e9
    injection_bandwidth: float = 12.5e9
    radix: Optional[int] = None
    latency: LatencyConfig = field(default_factory=LatencyConfig)  # evaluator.latency (SI units)

def _from_config(cfg: ConfigOf[FatTreeConfig]) -> FatTreeTopology:
    def plain(v):
        return list(v) if v is not None and not isinstance(v, (str, int, float)) and hasattr(v, "__iter__") else v

    return fat_tree(plain(cfg.children), plain(cfg.parents), levels=cfg.levels, k=cfg.k,
                    parallel_links=plain(cfg.parallel_links), link_bandwidth=plain(cfg.link_bandwidth),
                    injection_bandwidth=cfg.injection_bandwidth, radix=cfg.radix)


FAT_TREE = TopologyKind("fat_tree", FatTreeConfig, _from_config)
