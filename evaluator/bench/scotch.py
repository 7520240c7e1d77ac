"""Scotch's static mapping (``scotch_gmap``, Scotch 7.0.3): the outside reference of the mapping bench (issue 37).

:func:`scotch_mapping` maps one job's tasks onto a machine's nodes the way a user of Scotch would, and returns
the mapping as ``task_node`` for the project's own evaluation (:func:`evaluator.evaluate_batch`):

1. **the source graph** (:func:`traffic_graph`, :func:`write_grf`): one vertex per task (weight 1), one edge per
   communicating task pair, its weight the bytes the pair exchanges in both directions summed over every phase
   (``traffic.to_flows().phases``; Scotch's graphs are undirected), scaled to integers: ``round(bytes / unit)``,
   at least 1, with ``unit`` chosen so that the heaviest edge is at most 65,535 and the weights times 64 (a cap
   on the target's distances) sum to at most 2^30 (safe for a 32-bit ``SCOTCH_Num``). Written in Scotch's
   graph format (version ``0``; vertex count, arc count; base 0, flag ``010``: edge weights; per vertex its
   degree then ``weight neighbour`` pairs), as defined in the Scotch user's guide, section "Graph files";
   :func:`read_grf` reads it back.
2. **the target architecture** (:func:`target_architecture`), the machine as Scotch sees it (the user's guide,
   "Target files"):

   * a **torus** (every dimension wrapped, or none): Scotch's algorithmic ``torusXD`` (``meshXD``) target of
     the router grid, dimensions given last first (Scotch's label ``pos_0 + pos_1 dim_0 + ...`` then equals our
     router id, whose last coordinate varies fastest); restricted with ``sub`` to the routers that hold
     available nodes where those are not all. Algorithmic targets have unit vertex weights, so the
     ``tasks_per_node`` slots (and several nodes per router) cannot be said: Scotch balances the tasks evenly
     over the routers, a router's tasks go to its available nodes in id order, ``tasks_per_node`` each, and
     anything over capacity is repaired (step 4). A torus with some dimensions wrapped and others not is mapped
     through the graph target below;
   * a **fat tree**: Scotch's ``tleaf`` (tree-leaf) target, levels ``m_h ... m_1`` from the top (plus a level of
     ``tasks_per_node`` slots when that exceeds 1), the cost of a level the links a path through it crosses
     (``2 t`` for a lowest common switch at level ``t``, times 4, and 1 between two slots of one node: tleaf
     costs must be positive). ``tleaf`` rather than ``amk_grf`` because an XGFT's distance depends only on the
     lowest common subtree, which ``tleaf`` states exactly and without a quadratic distance table, and because
     its recursive bipartition is the tree itself (``amk_grf`` would bipartition the switch graph, whose many
     parallel upper switches blur the subtrees). The taper is not said (tleaf costs are distances; Scotch
     minimises hop-bytes, not the load of the busiest link). Leaves are numbered as our nodes are (node id
     ``= sum_t digit_t * m_1 ... m_(t-1)``); ``sub`` keeps the available nodes' slots;
   * a **Dragonfly** (and any other network): a decomposition-defined target built by ``amk_grf`` from the
     machine's graph: one vertex per router and per node, an edge per router-router link and per node's link
     to its router, every node of weight ``tasks_per_node``; ``-l`` keeps the available nodes as the target's
     vertices (the routers only carry distances: hops). Scotch balances load in proportion to these weights.

3. **the mapping**: ``scotch_gmap -Cd graph.grf target.tgt out.map``: Scotch's default strategy and load
   imbalance tolerance (0.05), deterministic (``-Cd``: a fixed seed, the same result whatever the threads; without
   it two runs of the same bench case gave mappings 11 % apart in time). The binary is ``scotch_gmap`` or
   ``gmap``, whichever :func:`shutil.which` finds first; the ``.map`` file (a count, then ``vertex label``
   pairs: a ``deco`` target's labels are the graph's vertex numbers, a ``sub`` target's are its part indices)
   is read back into ``task -> node``.
4. **capacity**: no node may hold more than ``tasks_per_node`` tasks. Where Scotch's mapping does (it balances
   within its imbalance tolerance), :func:`repair` moves the excess tasks deterministically: from every
   overfull node (ascending id) its highest-numbered excess tasks, each to the free slot nearest the node in
   router hops (ties: the lowest node id). :attr:`.OutsideMapping.repaired` counts the tasks moved.

:func:`available` says whether ``scotch_gmap`` is installed; a missing binary or a failing run raises
:class:`ScotchError` naming the binary.
"""

from __future__ import annotations

import dataclasses
import math
import os
import shutil
import tempfile
import time

import numpy as np

from .outside import Mapper, OutsideMapping, adjacency, repair, run_tool, traffic_graph

__all__ = ["GMAP_BINARIES", "MAPPER", "ScotchError", "available", "gmap_binary", "traffic_graph",
           "write_grf", "read_grf", "target_architecture", "read_map", "repair", "scotch_mapping"]

GMAP_BINARIES = ("scotch_gmap", "gmap")
"""Names of Scotch's sequential mapper, in the order looked for (Debian installs ``scotch_gmap``)."""

_MAX_EDGE_WEIGHT = 65535
_DIST_CAP = 64  # an upper bound on a target distance used to keep Scotch's sums in 32-bit integers


class ScotchError(RuntimeError):
    """Scotch is absent or one of its programs failed (the message names the binary)."""


def gmap_binary() -> str | None:
    """Path of Scotch's ``scotch_gmap`` (or ``gmap``), or None where Scotch is not installed."""
    for name in GMAP_BINARIES:
        p = shutil.which(name)
        if p:
            return p
    return None


def available() -> bool:
    """Whether Scotch's mapper (``scotch_gmap`` or ``gmap``) is on ``PATH``."""
    return gmap_binary() is not None


def _need(name: str, *alternatives: str) -> str:
    for n in (name, *alternatives):
        p = shutil.which(n)
        if p:
            return p
    names = " or ".join(repr(n) for n in (name, *alternatives))
    raise ScotchError(f"Scotch's {names} is not on PATH: install Scotch (Debian/Ubuntu: apt-get install scotch)")


# --- the source graph -----------------------------------------------------------------------------------------

def _unit(w: np.ndarray) -> float:
    """Bytes per integer weight unit: the heaviest edge at most ``_MAX_EDGE_WEIGHT``, the arcs' weights times
    ``_DIST_CAP`` at most 2^30."""
    if w.size == 0 or float(w.max()) <= 0:
        return 1.0
    return max(float(w.max()) / _MAX_EDGE_WEIGHT, 2.0 * float(w.sum()) * _DIST_CAP / 2 ** 30)


def _write_graph(path: str, n: int, u, v, w_int=None, velo=None) -> None:
    """A Scotch graph file (base 0): flag digits ``0 (edge weights) (vertex weights)``."""
    u, v = np.asarray(u, np.int64), np.asarray(v, np.int64)
    wi = np.ones(u.size, np.int64) if w_int is None else np.asarray(w_int, np.int64)
    start, nb, x = adjacency(n, u, v, wi)
    flag = f"0{1 if w_int is not None else 0}{1 if velo is not None else 0}"
    lines = ["0", f"{n}\t{int(nb.size)}", f"0\t{flag}"]
    for i in range(n):
        lo, hi = int(start[i]), int(start[i + 1])
        head = [str(int(velo[i]))] if velo is not None else []
        head.append(str(hi - lo))
        if w_int is not None:
            body = [f"{int(x[k])}\t{int(nb[k])}" for k in range(lo, hi)]
        else:
            body = [str(int(nb[k])) for k in range(lo, hi)]
        lines.append("\t".join(head + body))
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def write_grf(path: str, traffic) -> float:
    """Write ``traffic``'s task graph (:func:`traffic_graph`) as a Scotch source graph with integer edge weights;
    returns the bytes per weight unit (an edge of weight ``k`` stands for ``k * unit`` bytes, to within
    ``unit / 2``)."""
    n, u, v, w = traffic_graph(traffic)
    unit = _unit(w)
    w_int = np.maximum(np.rint(w / unit), 1).astype(np.int64)
    _write_graph(path, n, u, v, w_int)
    return unit


def read_grf(path: str) -> tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
    """Read a Scotch graph file (without vertex labels): ``(n, u, v, edge_weight, vertex_weight)``, one entry per
    edge ``u < v`` (sorted); an edge given with two different weights in its two arcs is an error."""
    tok = open(path).read().split()
    if not tok or tok[0] != "0":
        raise ValueError(f"{path}: not a Scotch graph file (version 0)")
    n, n_arcs, base, flag = int(tok[1]), int(tok[2]), int(tok[3]), tok[4].zfill(3)
    if flag[0] != "0":
        raise ValueError(f"{path}: vertex labels are not read here")
    has_e, has_v = flag[1] != "0", flag[2] != "0"
    pos = 5
    velo = np.ones(n, np.int64) if has_v else None
    a, b, x = [], [], []
    for i in range(n):
        if has_v:
            velo[i] = int(tok[pos])
            pos += 1
        deg = int(tok[pos])
        pos += 1
        for _ in range(deg):
            wt = int(tok[pos]) if has_e else 1
            pos += 1 if has_e else 0
            a.append(i)
            b.append(int(tok[pos]) - base)
            x.append(wt)
            pos += 1
    a, b, x = np.array(a, np.int64), np.array(b, np.int64), np.array(x, np.int64)
    if a.size != n_arcs:
        raise ValueError(f"{path}: header says {n_arcs} arcs, the file has {a.size}")
    fw = a < b
    key_f = a[fw] * n + b[fw]
    key_b = b[~fw] * n + a[~fw]
    of, ob = np.argsort(key_f), np.argsort(key_b)
    if not (np.array_equal(key_f[of], key_b[ob]) and np.array_equal(x[fw][of], x[~fw][ob])):
        raise ValueError(f"{path}: the graph is not symmetric")
    return n, a[fw][of], b[fw][of], x[fw][of], velo


# --- the target -----------------------------------------------------------------------------------------------

@dataclasses.dataclass
class _Target:
    text: str | None  # the target file's text, or None: built by amk_grf into ``path``
    kind: str  # a one-line description
    label_node: dict | None = None  # Scotch's target label -> node (deco, tleaf)
    label_router: np.ndarray | None = None  # label -> router (torus)
    path: str | None = None


def _torus_target(topology, nodes: np.ndarray) -> _Target | None:
    wrap = tuple(bool(w) for w in topology.wrap)
    if any(wrap) and not all(wrap):
        return None
    dims = [int(d) for d in topology.dims][::-1]
    arch = f"{'torusXD' if all(wrap) else 'meshXD'} {len(dims)} " + " ".join(map(str, dims))
    routers = np.unique(np.asarray(topology.node_router)[nodes])
    name = f"{'torusXD' if all(wrap) else 'meshXD'} {'x'.join(map(str, dims))} (our dims last first)"
    if routers.size == topology.n_routers:
        return _Target(arch, f"{name}, {routers.size} routers", label_router=np.arange(topology.n_routers))
    return _Target(f"sub {routers.size} " + " ".join(map(str, routers)) + " " + arch,
                   f"sub of {name}: the {routers.size} routers with available nodes", label_router=routers)


def _fat_tree_target(topology, nodes: np.ndarray, tpn: int) -> _Target:
    m = [int(c) for c in topology.children]
    h = len(m)
    sizes = m[::-1]
    costs = [4 * 2 * t for t in range(h, 0, -1)]
    if tpn > 1:
        sizes.append(tpn)
        costs.append(1)
    arch = f"tleaf {len(sizes)} " + " ".join(f"{s} {c}" for s, c in zip(sizes, costs))
    if math.prod(m) != topology.n_nodes:
        raise ScotchError(f"fat tree {topology.name}: {topology.n_nodes} nodes, not the product of its children "
                          f"{m}; tleaf needs every leaf")
    slots = (np.asarray(nodes, np.int64)[:, None] * tpn + np.arange(tpn)).reshape(-1)
    desc = f"tleaf {' '.join(f'{s}:{c}' for s, c in zip(sizes, costs))} (size:cost, top first)"
    if slots.size == topology.n_nodes * tpn and np.array_equal(np.sort(slots), np.arange(slots.size)):
        return _Target(arch, desc, label_node={i: i // tpn for i in range(slots.size)})
    return _Target(f"sub {slots.size} " + " ".join(map(str, slots)) + " " + arch,
                   f"sub of {desc}: the available nodes' slots",
                   label_node={i: int(s) // tpn for i, s in enumerate(slots.tolist())})


def _graph_target(topology, nodes: np.ndarray, tpn: int, directory: str) -> _Target:
    """The machine's router + node graph, built into a ``deco`` target by ``amk_grf`` (vertex ``r``: router
    ``r``; vertex ``R + i``: node ``i``)."""
    amk = _need("amk_grf")
    R, N = int(topology.n_routers), int(topology.n_nodes)
    nr = int(topology.n_router_links)
    a = np.asarray(topology.link_src[:nr], np.int64)
    b = np.asarray(topology.link_dst[:nr], np.int64)
    keep = a != b
    pair = np.unique(np.stack([np.minimum(a, b), np.maximum(a, b)], 1)[keep], axis=0)
    node = np.arange(N, dtype=np.int64)
    u = np.concatenate([pair[:, 0], np.asarray(topology.node_router, np.int64)])
    v = np.concatenate([pair[:, 1], R + node])
    velo = np.concatenate([np.ones(R, np.int64), np.full(N, tpn, np.int64)])
    grf = os.path.join(directory, "machine.grf")
    lst = os.path.join(directory, "machine.lst")
    tgt = os.path.join(directory, "machine.tgt")
    _write_graph(grf, R + N, u, v, None, velo)
    keep_v = np.sort(R + np.asarray(nodes, np.int64))
    with open(lst, "w") as f:
        f.write(f"{keep_v.size}\n" + " ".join(map(str, keep_v)) + "\n")
    _run([amk, f"-l{lst}", grf, tgt])
    return _Target(None, f"deco (amk_grf) of the router+node graph: {R} routers, {keep_v.size} nodes of "
                         f"weight {tpn}", label_node={int(x): int(x) - R for x in keep_v}, path=tgt)


def target_architecture(topology, nodes, tasks_per_node: int, directory: str) -> _Target:
    """The Scotch target of the machine (module docstring): written into ``directory`` as ``target.tgt``."""
    nodes = np.asarray(nodes, np.int64)
    t = None
    if topology.kind == "torus":
        t = _torus_target(topology, nodes)
    elif topology.kind == "fat_tree":
        t = _fat_tree_target(topology, nodes, tasks_per_node)
    if t is None:
        t = _graph_target(topology, nodes, tasks_per_node, directory)
    if t.path is None:
        t.path = os.path.join(directory, "target.tgt")
        with open(t.path, "w") as f:
            f.write(t.text + "\n")
    return t


# --- running and reading ----------------------------------------------------------------------------------------

def _run(cmd: list[str], timeout: float = 900.0) -> str:
    return run_tool(cmd, "Scotch's", ScotchError, timeout)


def read_map(path: str, n_tasks: int) -> np.ndarray:
    """Scotch's mapping file: a count then ``vertex label`` pairs; returns ``label[task]`` (every task once)."""
    try:  # (a missing file or a word that is no integer raised FileNotFoundError or ValueError, not ScotchError)
        with open(path) as fh:
            tok = np.array(fh.read().split(), dtype=np.int64)
    except (OSError, ValueError) as e:
        raise ScotchError(f"{path}: scotch_gmap's mapping file is missing or not a Scotch mapping file ({e})") \
            from None
    if tok.size < 1 or tok.size != 1 + 2 * int(tok[0]):
        raise ScotchError(f"{path}: not a Scotch mapping file ({tok.size} numbers)")
    pairs = tok[1:].reshape(-1, 2)
    out = np.full(n_tasks, -1, np.int64)
    if pairs.shape[0] != n_tasks or pairs[:, 0].min(initial=0) < 0 or pairs[:, 0].max(initial=0) >= n_tasks:
        raise ScotchError(f"{path}: {pairs.shape[0]} mapping lines for {n_tasks} tasks")
    out[pairs[:, 0]] = pairs[:, 1]
    if (out < 0).any() or np.unique(pairs[:, 0]).size != n_tasks:
        raise ScotchError(f"{path}: not every task mapped once")
    return out


def scotch_mapping(topology, traffic, nodes=None, tasks_per_node: int = 1, directory: str | None = None,
                   timeout: float = 900.0) -> OutsideMapping:
    """Scotch's mapping (``scotch_gmap``, default strategy) of ``traffic``'s tasks onto ``nodes`` of
    ``topology`` (default: every compute node) with at most ``tasks_per_node`` tasks per node (module
    docstring: the graph, the target, the repair). Raises :class:`ScotchError` where Scotch is absent or
    fails."""
    from ..mapping import available_nodes

    gmap = gmap_binary()
    if gmap is None:
        _need(*GMAP_BINARIES)
    nodes = np.asarray(available_nodes(topology, nodes), np.int64)
    tpn = int(tasks_per_node)
    n = int(traffic.n_tasks)
    if n > nodes.size * tpn:
        raise ScotchError(f"{n} tasks do not fit {nodes.size} nodes x {tpn} slots")
    with tempfile.TemporaryDirectory(prefix="scotch_", dir=directory) as d:
        grf = os.path.join(d, "job.grf")
        unit = write_grf(grf, traffic)
        tgt = target_architecture(topology, nodes, tpn, d)
        out = os.path.join(d, "job.map")
        t0 = time.perf_counter()
        _run([gmap, "-Cd", grf, tgt.path, out], timeout)
        seconds = time.perf_counter() - t0
        label = read_map(out, n)
    if tgt.label_router is not None:
        if label.max(initial=0) >= tgt.label_router.size or label.min(initial=0) < 0:
            raise ScotchError(f"{gmap}: target label out of range for {tgt.kind}")
        router = tgt.label_router[label]
        avail = np.zeros(topology.n_nodes, bool)
        avail[nodes] = True
        tn = np.empty(n, np.int64)
        for r in np.unique(router):  # a router's tasks (id order) fill its available nodes (id order), tpn each
            tasks = np.flatnonzero(router == r)
            own = topology.nodes_of([r])
            own = own[avail[own]]
            slots = np.repeat(own, tpn)
            k = min(tasks.size, slots.size)
            tn[tasks[:k]] = slots[:k]
            tn[tasks[k:]] = own[-1]  # over capacity: the repair moves them
    else:
        try:
            tn = np.array([tgt.label_node[int(x)] for x in label], np.int64)
        except KeyError as e:
            raise ScotchError(f"{gmap}: target label {e} is not a vertex of {tgt.kind}") from None
    tn, moved = repair(topology, tn, nodes, tpn)
    return OutsideMapping(tn, tgt.kind, moved, seconds, unit, gmap)


MAPPER = Mapper("scotch", "Scotch", "scotch_gmap", available, "Scotch absent (no scotch_gmap on PATH)",
                scotch_mapping, ScotchError)
"""Scotch as the mapping bench's outside reference (:mod:`.outside`)."""
