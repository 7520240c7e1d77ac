"""KaHIP's process mapping (``kaffpa --enable_mapping``, KaHIP 3.25's wheel): an outside reference of the mapping
bench beside Scotch (:mod:`.scotch`, issue 37).

:func:`kahip_mapping` maps one job's tasks onto a machine's nodes with KaHIP's hierarchical process mapping and
returns the mapping as ``task_node`` for the project's own evaluation (:func:`evaluator.evaluate_batch`):

1. **the source graph** (:func:`write_metis`): the task graph of :func:`.scotch.traffic_graph` (bytes per step of
   every task pair, both directions and every phase summed), edge weights scaled to integers ``round(bytes /
   unit)`` (at least 1; ``unit`` such that the heaviest edge is at most 65,535 and the weights times the largest
   distance sum to at most 2^30), written in METIS's graph format (header ``n m 1``: edge weights; per vertex its
   ``neighbour weight`` pairs, neighbours numbered from 1), which KaHIP reads; :func:`read_metis` reads it back.
   Where the job has fewer tasks than the processing elements (PEs, below), isolated dummy vertices (no edges)
   pad the graph to one vertex per PE and are dropped from the result.
2. **the machine** (:func:`machine_hierarchy`): KaHIP models the machine as a regular tree given by
   ``--hierarchy_parameter_string=a_1:a_2:...`` (``a_1`` PEs per lowest group, ``a_2`` such groups per next
   group, ...) and ``--distance_parameter_string=d_1:d_2:...`` (two PEs whose lowest common group is at level
   ``l`` are ``d_l`` apart); PE ``i``'s digits are read lowest level first (``i = c_1 + a_1 c_2 + a_1 a_2 c_3
   ...``: checked by a run). A PE is one slot of a node (``tasks_per_node`` per node; step 3 merges some),
   ``K`` the product of the levels. Distances are the **links a path crosses**, times 4 (integers with room for the
   torus's fractional means), and 1 between two slots of one node (KaHIP's distances are positive; no link is
   crossed): the hop-bytes KaHIP minimises then count node links and router links alike, as Scotch's Dragonfly
   target does. Per family:

   * **fat tree** XGFT(h; m_1..m_h): ``tasks_per_node : m_1 : ... : m_h``, distances ``1 : 8 : 16 : ... : 8h``
     (two nodes whose lowest common switch is at level ``t`` are ``2t`` links apart), the same costs as
     Scotch's ``tleaf`` target;
   * **Dragonfly** DF(p, a, h, g): ``tasks_per_node : p : a : g``, distances ``1 : 8 : 12 : 20`` (same router: 2
     node links; same group: 2 + 1 local; other groups: 2 + local, global, local, the longest minimal route;
     KaHIP's tree cannot say that some router pairs of two groups hold the global link between them);
   * **torus** (an approximation: a torus is not a tree): the box of routers is halved recursively (each level
     splits the dimension of the largest extent by its smallest prime factor: a hierarchy of 2s for powers of
     two), each level's distance ``4 (2 + mean router hops between two routers of different parts of the
     box)`` (torus metric where the dimension wraps, whatever part of it the box covers), below them a level
     of ``nodes_per_router`` nodes (distance 8) and one of ``tasks_per_node`` slots (distance 1). Two routers
     of one part are thus taken to be nearer than any two of different parts, which on a torus is true on
     average only (neighbours across a cut are 1 hop apart).

   **Fewer nodes than the machine**: the available nodes must be a product of subsets of every coordinate
   (Dragonfly: nodes of a router x routers of a group x groups; fat tree: one subset per tree digit; torus: one
   contiguous range per dimension, a box, x nodes of a router); the hierarchy is then that of the available
   nodes only (the subsets' sizes; a torus box's extents; distances as above, within the box). Any other set
   is not a regular hierarchy: :func:`machine_hierarchy` raises :class:`KahipUnsupported` with the reason (the
   bench reports it) rather than map onto nodes the job may not use.
3. **the mapping**: ``kaffpa job.graph --k=K' --preconfiguration=eco --enable_mapping
   --hierarchy_parameter_string=... --distance_parameter_string=... --seed=0 --imbalance=0
   --output_filename=...`` (``--online_distances`` above 4,096 PEs): deterministic (fixed seed); the output, one
   block (PE) per vertex, is read back. ``K' = K``, one slot per PE, except where ``K`` is a power of two: KaHIP
   3.25 then skips its mapping step ("number of processors is a power of two, so no mapping algorithm is
   performed (identity is best)"), trusting its recursive bisection to number the blocks along the hierarchy,
   and with one vertex per block every partition has the same cut, so what it returns is close to a random
   mapping (1,024 ranks of the bench's mesh halo: 2.6x Scotch's time on the torus, 2.0x on the fat tree). There
   the lowest levels are merged into PEs of at least :data:`BLOCK_MIN` (8) slots (the fat tree's leaf switch,
   the torus's lowest three halvings), ``K' = K / b`` blocks of ``b`` slots, and a block's vertices fill its
   slots in vertex id order (the one choice made here, not by KaHIP). ``--imbalance=0`` asks for exactly ``b``
   vertices per block; KaHIP may leave a block over (its balance constraint rounds up). Where one level is left
   (every PE pair equally far) ``kaffpa`` partitions without ``--enable_mapping`` (3.25 crashes mapping onto one
   level of a size not a power of two; the partition is then the mapping). And:
4. **capacity**: :func:`.scotch.repair` moves any excess task to the nearest free slot (deterministic);
   :attr:`.OutsideMapping.repaired` counts them.

:func:`available` says whether the binary is installed: ``kaffpa`` in ``.venv/kahip/bin`` (``make setup``
installs the wheel there, ``pip install --no-deps --target .venv/kahip``, isolated: the wheel's ``bin/`` also
holds a program named ``evaluator``, so that directory is never put on ``PATH``), else ``$KAHIP_KAFFPA``, else
``kaffpa`` on ``PATH``. A missing binary or a failing run raises :class:`KahipError` naming the binary.
"""

from __future__ import annotations

import dataclasses
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

from .._types import Int
from .outside import Mapper, OutsideMapping, adjacency, repair, run_tool, traffic_graph

__all__ = ["KahipError", "KahipUnsupported", "MAPPER", "Hierarchy", "available", "kaffpa_binary",
           "write_metis", "read_metis", "machine_hierarchy", "kahip_mapping", "SCALE"]

SCALE = 4
"""Distance units per link crossed (1: two slots of one node)."""

BLOCK_MIN = 8
"""Slots per PE given to KaHIP where the machine's slot count is a power of two (module docstring, step 3)."""

ONLINE_DISTANCES_ABOVE = 4096
"""Above this many PEs ``--online_distances``: KaHIP recomputes distances rather than store a K x K matrix."""

_MAX_EDGE_WEIGHT = 65535


class KahipError(RuntimeError):
    """KaHIP is absent or its ``kaffpa`` failed (the message names the binary)."""


class KahipUnsupported(KahipError):
    """The machine or the job's nodes are not a regular hierarchy KaHIP can be given (the message says why)."""


def _venv_kaffpa() -> str:
    """``kaffpa`` of the isolated install ``<venv>/kahip/bin`` (the venv of the running interpreter)."""
    return os.path.join(sys.prefix, "kahip", "bin", "kaffpa")


def kaffpa_binary() -> str | None:
    """Path of KaHIP's ``kaffpa``: ``<venv>/kahip/bin/kaffpa``, else ``$KAHIP_KAFFPA``, else ``kaffpa`` on
    ``PATH``; None where none is found."""
    for p in (_venv_kaffpa(), os.environ.get("KAHIP_KAFFPA") or ""):
        if p and os.path.isfile(p) and os.access(p, os.X_OK):
            return p
    return shutil.which("kaffpa")


def available() -> bool:
    """Whether KaHIP's ``kaffpa`` is installed (:func:`kaffpa_binary`)."""
    return kaffpa_binary() is not None


# --- the source graph -----------------------------------------------------------------------------------------

def _unit(w: np.ndarray, max_distance: int) -> float:
    if w.size == 0 or float(w.max()) <= 0:
        return 1.0
    return max(float(w.max()) / _MAX_EDGE_WEIGHT, 2.0 * float(w.sum()) * max(max_distance, 1) / 2 ** 30)


def write_metis(path: str, traffic, n_vertices: int | None = None, max_distance: int = 64) -> float:
    """Write ``traffic``'s task graph (:func:`.scotch.traffic_graph`) as a METIS graph with integer edge weights,
    padded with isolated vertices to ``n_vertices`` (default: the tasks); returns the bytes per weight unit."""
    n, u, v, w = traffic_graph(traffic)
    nv = n if n_vertices is None else int(n_vertices)
    if nv < n:
        raise ValueError(f"{nv} vertices for {n} tasks")
    unit = _unit(w, max_distance)
    wi = np.maximum(np.rint(w / unit), 1).astype(np.int64)
    start, nb, x = adjacency(nv, u, v, wi)
    lines = [f"{nv} {int(u.size)} 1"]
    for i in range(nv):
        lo, hi = int(start[i]), int(start[i + 1])
        lines.append(" ".join(f"{int(nb[k]) + 1} {int(x[k])}" for k in range(lo, hi)))
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return unit


def read_metis(path: str) -> tuple[int, np.ndarray, np.ndarray, np.ndarray]:
    """Read a METIS graph with edge weights (format ``1``): ``(n, u, v, weight)``, one entry per edge ``u < v``
    (0-based, sorted); an asymmetric graph (an arc without its reverse, or with another weight) is an error."""
    with open(path) as f:
        rows = [ln for ln in f.read().split("\n") if not ln.startswith("%")]
    head = rows[0].split()
    n, m, fmt = int(head[0]), int(head[1]), head[2] if len(head) > 2 else "0"
    if fmt != "1":
        raise ValueError(f"{path}: format {fmt!r}, only edge weights ('1') are read here")
    a, b, x = [], [], []
    for i in range(n):
        tok = rows[1 + i].split() if 1 + i < len(rows) else []
        if len(tok) % 2:
            raise ValueError(f"{path}: vertex {i + 1}: odd number of entries")
        for k in range(0, len(tok), 2):
            a.append(i)
            b.append(int(tok[k]) - 1)
            x.append(int(tok[k + 1]))
    a, b, x = np.array(a, np.int64), np.array(b, np.int64), np.array(x, np.int64)
    if a.size != 2 * m:
        raise ValueError(f"{path}: header says {m} edges, the file has {a.size} arcs")
    fw = a < b
    kf, kb = a[fw] * n + b[fw], b[~fw] * n + a[~fw]
    of, ob = np.argsort(kf), np.argsort(kb)
    if not (np.array_equal(kf[of], kb[ob]) and np.array_equal(x[fw][of], x[~fw][ob])):
        raise ValueError(f"{path}: the graph is not symmetric")
    return n, a[fw][of], b[fw][of], x[fw][of]


# --- the machine hierarchy --------------------------------------------------------------------------------------

@dataclasses.dataclass
class Hierarchy:
    """KaHIP's machine: ``sizes`` and ``distances`` lowest level first (the strings of ``--hierarchy_parameter_string``
    and ``--distance_parameter_string``), ``pe_node[i]``: the node of PE ``i`` (``tasks_per_node`` consecutive
    PEs per node), ``kind``: a one-line description."""

    sizes: list[int]
    distances: list[int]
    pe_node: Int[np.ndarray, "slot"]  # (a PE is a slot: tasks_per_node consecutive PEs per node)
    kind: str

    @property
    def k(self) -> int:
        return int(math.prod(self.sizes))

    @property
    def hierarchy_string(self) -> str:
        return ":".join(map(str, self.sizes))

    @property
    def distance_string(self) -> str:
        return ":".join(map(str, self.distances))


def _product_subsets(coords: np.ndarray, what: str) -> list[np.ndarray]:
    """Per-column sorted subsets whose product is exactly the rows of ``coords`` (else :class:`KahipUnsupported`)."""
    subsets = [np.unique(coords[:, j]) for j in range(coords.shape[1])]
    if math.prod(s.size for s in subsets) != np.unique(coords, axis=0).shape[0]:
        raise KahipUnsupported(f"the available nodes are not a product of {what} (KaHIP needs a regular "
                               f"hierarchy): {coords.shape[0]} nodes over "
                               + " x ".join(str(s.size) for s in subsets))
    return subsets


def _pe_digits(sizes_low_first: list[int]) -> np.ndarray:
    """digits[pe, level] of every PE, lowest level fastest."""
    k = math.prod(sizes_low_first)
    pe = np.arange(k, dtype=np.int64)
    out = np.empty((k, len(sizes_low_first)), np.int64)
    for j, s in enumerate(sizes_low_first):
        out[:, j] = pe % s
        pe //= s
    return out


def _tree_hierarchy(levels, tpn: int, kind: str) -> Hierarchy:
    """``levels``: (subset of digit values, distance, stride of the digit in the node id) lowest first, one per
    node digit; levels of one value are left out (KaHIP's tree needs none), a slot level added below."""
    fixed = sum(int(sub[0]) * stride for sub, _, stride in levels if sub.size == 1)
    levels = [lv for lv in levels if lv[0].size > 1]
    sizes = ([tpn] if tpn > 1 else []) + [int(s.size) for s, _, _ in levels]
    dists = ([1] if tpn > 1 else []) + [int(d) for _, d, _ in levels]
    if not sizes:
        sizes, dists = [1], [1]
    dig = _pe_digits(sizes)
    off = 1 if tpn > 1 else 0
    node = np.full(dig.shape[0], fixed, np.int64)
    for j, (sub, _, stride) in enumerate(levels):
        node += sub[dig[:, off + j]] * stride
    return Hierarchy(sizes, dists, node, kind)


def _fat_tree_hierarchy(topology, nodes: np.ndarray, tpn: int) -> Hierarchy:
    m = [int(c) for c in topology.children]
    if math.prod(m) != topology.n_nodes:
        raise KahipUnsupported(f"fat tree {topology.name}: {topology.n_nodes} nodes, not the product of {m}")
    strides = np.cumprod([1] + m[:-1])
    digits = (nodes[:, None] // strides[None, :]) % np.array(m)[None, :]
    subsets = _product_subsets(digits, "subsets of the tree's digits")
    levels = [(subsets[t], SCALE * 2 * (t + 1), int(strides[t])) for t in range(len(m))]
    h = _tree_hierarchy(levels, tpn, "")
    h.kind = f"fat tree {h.hierarchy_string} (distances {h.distance_string}, lowest level first)"
    return h


def _dragonfly_hierarchy(topology, nodes: np.ndarray, tpn: int) -> Hierarchy:
    p, a, g = int(topology.p), int(topology.a), int(topology.g)
    if p * a * g != topology.n_nodes:
        raise KahipUnsupported(f"Dragonfly {topology.name}: {topology.n_nodes} nodes, not p a g = {p * a * g}")
    digits = np.stack([nodes % p, (nodes // p) % a, nodes // (p * a)], 1)
    subsets = _product_subsets(digits, "nodes of a router x routers of a group x groups")
    levels = [(subsets[0], SCALE * 2, 1), (subsets[1], SCALE * 3, p), (subsets[2], SCALE * 5, p * a)]
    h = _tree_hierarchy(levels, tpn, "")
    h.kind = (f"Dragonfly tasks:nodes:routers:groups {h.hierarchy_string} (distances {h.distance_string}, lowest "
              f"level first)")
    return h


def _smallest_prime(n: int) -> int:
    for f in range(2, int(math.isqrt(n)) + 1):
        if n % f == 0:
            return f
    return n


def _axis_mean(extent: int, size: int, wrap: bool, factor: int | None = None) -> float:
    """Mean hops along one dimension between two coordinates of a range of ``extent`` (a dimension of ``size``,
    torus metric when ``wrap``): all pairs, or (``factor``) only pairs in different of ``factor`` equal parts."""
    x = np.arange(extent)
    d = np.abs(x[:, None] - x[None, :])
    if wrap:
        d = np.minimum(d, size - d)
    if factor is not None:
        part = x // (extent // factor)
        d = d[part[:, None] != part[None, :]]
    return float(d.mean())


def _torus_hierarchy(topology, nodes: np.ndarray, tpn: int) -> Hierarchy:
    dims = [int(x) for x in topology.dims]
    wrap = [bool(w) for w in topology.wrap]
    npr = int(topology.nodes_per_router)
    router = nodes // npr
    coords = np.stack(np.unravel_index(router, dims), 1).astype(np.int64)
    digits = np.concatenate([coords, (nodes % npr)[:, None]], 1)
    subsets = _product_subsets(digits, "a box of routers x nodes of a router")
    lo = []
    for j, (s, size) in enumerate(zip(subsets[:-1], dims)):
        if not np.array_equal(s, np.arange(s[0], s[0] + s.size)):
            raise KahipUnsupported(f"torus {topology.name}: the available routers' coordinates {s.tolist()} of "
                                   f"dimension {j} are not a contiguous range (KaHIP's halving needs a box)")
        lo.append(int(s[0]))
    extent = [int(s.size) for s in subsets[:-1]]
    # recursive halving, top first: split the dimension of the largest extent by its smallest prime factor
    splits = []  # (dim, factor, distance) top first
    cur = list(extent)
    while any(e > 1 for e in cur):
        j = max(range(len(cur)), key=lambda i: (cur[i], -i))
        f = _smallest_prime(cur[j])
        hops = sum(_axis_mean(cur[i], dims[i], wrap[i]) for i in range(len(cur)) if i != j)
        hops += _axis_mean(cur[j], dims[j], wrap[j], f)
        splits.append((j, f, int(round(SCALE * (2 + hops)))))
        cur[j] //= f
    low = splits[::-1]
    sizes = ([tpn] if tpn > 1 else []) + ([int(subsets[-1].size)] if subsets[-1].size > 1 else []) \
        + [f for _, f, _ in low]
    dists = ([1] if tpn > 1 else []) + ([SCALE * 2] if subsets[-1].size > 1 else []) + [d for _, _, d in low]
    if not sizes:  # one node, one slot
        sizes, dists = [1], [1]
    dig = _pe_digits(sizes)
    off = (1 if tpn > 1 else 0)
    port = subsets[-1][dig[:, off]] if subsets[-1].size > 1 else np.full(dig.shape[0], subsets[-1][0])
    off += 1 if subsets[-1].size > 1 else 0
    idx = np.zeros((dig.shape[0], len(dims)), np.int64)
    for col, (j, f, _) in zip(range(len(sizes) - 1, off - 1, -1), splits):  # top level first
        idx[:, j] = idx[:, j] * f + dig[:, col]
    r = np.ravel_multi_index(tuple((idx + np.array(lo)[None, :]).T), dims)
    node = r * npr + port
    box = "x".join(map(str, extent))
    kind = (f"torus box {box} halved recursively, hierarchy {':'.join(map(str, sizes))} (distances "
            f"{':'.join(map(str, dists))}, lowest level first; an approximation)")
    return Hierarchy(sizes, dists, node.astype(np.int64), kind)


def machine_hierarchy(topology, nodes, tasks_per_node: int = 1) -> Hierarchy:
    """KaHIP's hierarchy of the available ``nodes`` of ``topology`` (module docstring); raises
    :class:`KahipUnsupported` where they are not a regular hierarchy or the family has none here."""
    nodes = np.unique(np.asarray(nodes, np.int64))
    tpn = int(tasks_per_node)
    if topology.kind == "fat_tree":
        return _fat_tree_hierarchy(topology, nodes, tpn)
    if topology.kind == "dragonfly":
        return _dragonfly_hierarchy(topology, nodes, tpn)
    if topology.kind == "torus":
        return _torus_hierarchy(topology, nodes, tpn)
    raise KahipUnsupported(f"no KaHIP hierarchy for a {topology.kind} network")


# --- running ------------------------------------------------------------------------------------------------------

def _run(cmd: list[str], timeout: float) -> str:
    return run_tool(cmd, "KaHIP's", KahipError, timeout)


def kahip_mapping(topology, traffic, nodes=None, tasks_per_node: int = 1, directory: str | None = None,
                  timeout: float = 900.0, seed: int = 0, preconfiguration: str = "eco",
                  block_min: int | None = None) -> OutsideMapping:
    """KaHIP's process mapping (``kaffpa --enable_mapping``) of ``traffic``'s tasks onto ``nodes`` of ``topology``
    (default: every compute node), at most ``tasks_per_node`` tasks per node (module docstring). Raises
    :class:`KahipError` where KaHIP is absent or fails, :class:`KahipUnsupported` where the nodes are not a
    regular hierarchy. ``block_min``: the lowest levels are merged into PEs of at least this many slots (default:
    8 where the number of slots is a power of two, else 1; module docstring, step 3)."""
    from ..mapping import available_nodes

    kaffpa = kaffpa_binary()
    if kaffpa is None:
        raise KahipError(f"KaHIP's 'kaffpa' is not installed ({_venv_kaffpa()} absent; `make setup` installs "
                         f"kahip into .venv/kahip)")
    nodes = np.asarray(available_nodes(topology, nodes), np.int64)
    tpn = int(tasks_per_node)
    n = int(traffic.n_tasks)
    if n > nodes.size * tpn:
        raise KahipError(f"{n} tasks do not fit {nodes.size} nodes x {tpn} slots")
    h = machine_hierarchy(topology, nodes, tpn)
    if h.pe_node.size != nodes.size * tpn:
        raise KahipError(f"hierarchy of {h.pe_node.size} PEs for {nodes.size} nodes x {tpn} slots")
    if block_min is None:
        block_min = BLOCK_MIN if h.k & (h.k - 1) == 0 else 1
    j = 0
    while j < len(h.sizes) and math.prod(h.sizes[:j]) < block_min:
        j += 1
    j = min(j, len(h.sizes) - 1)
    b = math.prod(h.sizes[:j])
    hs, ds = ":".join(map(str, h.sizes[j:])), ":".join(map(str, h.distances[j:]))
    kk = h.k // b
    with tempfile.TemporaryDirectory(prefix="kahip_", dir=directory) as d:
        graph = os.path.join(d, "job.graph")
        unit = write_metis(graph, traffic, h.k, max(h.distances))
        out = os.path.join(d, "job.map")
        cmd = [kaffpa, graph, f"--k={kk}", f"--preconfiguration={preconfiguration}", "--enable_mapping",
               f"--hierarchy_parameter_string={hs}", f"--distance_parameter_string={ds}", f"--seed={seed}",
               "--imbalance=0", f"--output_filename={out}"]
        if len(h.sizes) - j == 1:  # one level: every PE pair equally far, a partition is the mapping (and
            cmd = [c for c in cmd if not c.startswith(("--enable_mapping", "--hierarchy", "--distance"))]
            # kaffpa 3.25 crashes mapping onto a single level of a size that is not a power of two)
        if kk > ONLINE_DISTANCES_ABOVE:
            cmd.append("--online_distances")
        t0 = time.perf_counter()
        _run(cmd, timeout)
        seconds = time.perf_counter() - t0
        try:
            block = np.loadtxt(out, dtype=np.int64, ndmin=1)
        except (OSError, ValueError) as e:
            raise KahipError(f"KaHIP's kaffpa ({kaffpa}): unreadable output {out}: {e}") from None
    if block.size != h.k or block.min(initial=0) < 0 or block.max(initial=0) >= kk:
        raise KahipError(f"KaHIP's kaffpa ({kaffpa}): {block.size} blocks in [{block.min(initial=0)}, "
                         f"{block.max(initial=0)}] for {h.k} vertices and PEs")
    order = np.lexsort((np.arange(h.k), block))  # by block, then vertex id
    first = np.searchsorted(block[order], np.arange(kk))
    rank = np.empty(h.k, np.int64)
    rank[order] = np.arange(h.k) - first[block[order]]
    pe = block * b + np.minimum(rank, b - 1)  # a block's vertices fill its PEs in id order (any excess: repaired)
    tn = h.pe_node[pe[:n]]
    tn, moved = repair(topology, tn, nodes, tpn)
    kind = h.kind if b == 1 else f"{h.kind}; PEs of {b} slots: --k={kk} --hierarchy_parameter_string={hs}"
    if len(h.sizes) - j == 1:
        kind += " (one level: partitioned without --enable_mapping)"
    return OutsideMapping(tn, kind, moved, seconds, unit, kaffpa, h.k - n)


MAPPER = Mapper("kahip", "KaHIP", "kaffpa --enable_mapping", available,
                "KaHIP absent (no .venv/kahip/bin/kaffpa: make setup installs it)", kahip_mapping, KahipError,
                KahipUnsupported)
"""KaHIP as the mapping bench's outside reference (:mod:`.outside`)."""
