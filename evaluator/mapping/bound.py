"""A certified lower bound on the completion time of every mapping of a job (:func:`mapping_bound`).

The search (:mod:`evaluator.mapping`) reports how far its mapping is from
this bound: no task-to-node mapping of the job onto the available nodes,
with at most ``tasks_per_node`` tasks on a node, has a smaller predicted
completion time under the routing. It is the largest of several bounds,
each certified on its own:

**Node links** (``endpoint``). Task ``i``'s node sends at least the bytes
``i`` sends to tasks outside it; with ``c`` tasks per node at most ``c - 1``
of ``i``'s partners share its node, so at least ``out_i`` minus ``i``'s
``c - 1`` largest partner bytes leave over one injection link (and
likewise into one ejection link). Per phase the largest over tasks, over
the fastest node link of the available nodes; summed over phases.

**Weighted hop-bytes with ball counting** (one per weighting ``w >= 0`` of
the links: the links of one class, all router links, all router links
weighted by ``1 / capacity``, the injection or ejection links). For any
mapping and any ``w``, ``max_l load_l / cap_l >= sum_l w_l load_l / sum_l
w_l cap_l`` over a set of links that holds every loaded one. The numerator
is ``sum_f bytes_f D_w(node(src_f), node(dst_f))``, where ``D_w(u, v)`` is
the ``w``-length of the routing's expected route from node ``u`` to node
``v`` (injection link, router links, ejection link; 0 on one node): the
routing is oblivious, so a flow's loads do not depend on the other flows,
and ``D_w`` is read off the routing's own tables (a unit flow per pair of
routing endpoints: its listed links where the routing lists them, else its
``apply``; the unit flows are checked to add up to the pairs routed
together). The denominator
counts the router links that any pair of available nodes loads and, of
the node links, only the ``min(nodes, tasks)`` largest (no mapping uses
more nodes). The smallest numerator any mapping can have is bounded by
*ball counting*: a task ``i`` on node ``u`` has its partners on distinct
other slots, so with its partner bytes sorted descending ``b_1 >= b_2 >=
...`` and ``d_1 <= d_2 <= ...`` the distances from ``u`` to the other
slots (``tasks_per_node - 1`` of them at distance 0 on ``u`` itself, then
``tasks_per_node`` per available node), its flows cost at least ``sum_k
b_k d_k`` (rearrangement inequality), and at least the minimum of that over
the nodes ``u``. Summed over tasks this bounds the total from the senders'
side; the receivers' side (distances into ``u``) and both halves (each flow
half to each end, ``min(D(u, v), D(v, u))``) are bounds too, and the
largest is taken. All phases share the mapping and the denominator, so
their bytes are summed first (a bound on the sum of the phases' times).

**Weighted hop-bytes with a cut** (``"<weighting> cut"``). The nodes that
``D_w`` joins at distance 0 form classes (a router, a Dragonfly group, a
fat-tree leaf, a torus plane for one dimension's links); a flow between
two classes costs at least ``delta``, the smallest distance between
classes, and the bytes between the classes of any mapping are at least
the Donath-Hoffman bound ``1/2 sum_i o_i lambda_i`` (``lambda`` the
eigenvalues of the traffic graph's Laplacian ascending, ``o`` the tasks
per class descending, the largest classes filled first: the smallest such
sum). Left out above :data:`_EIG_MAX` tasks.

**Weighted hop-bytes with clusters** (``"<weighting> cluster"``, two or more tasks per node). The nodes keep at
most the bytes that the densest sets of their task counts exchange (:func:`._clusters.max_internal_bytes`: exact
for sets of up to 4 tasks where the enumeration fits), so at least the rest crosses between nodes, each byte at
least the smallest ``D_w`` between two available nodes. Ball counting lets every task keep its heaviest partners
on its node at once; this does not.

A routing that is not linear in the bytes (``Routing.linear`` False: the
adaptive routings; or one whose unit flows do not add up) is not read off
its tables: its routes are counted as shortest paths under ``w``, which
bounds the length of any route.

The value is the largest of these; :attr:`MappingBound.binding` names it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .._batch.checks import check_type
from ..errors import ResourceError, check_memory, positive_int
from ._boundary import boundary_bound
from ._clusters import max_internal_bytes
from ._ports import port_bound, whole_pairs

__all__ = ["MappingBound", "mapping_bound", "endpoint_bound", "task_node_bound"]

_CHUNK = 1 << 16
"""Endpoint pairs per call of the routing's ``apply`` when its distances are read."""

_WORK = 4e8
"""Multiply-adds of the ball counting above which every node shares the smallest profile (still a bound)."""


@dataclass(frozen=True)
class MappingBound:
    """A lower bound (s) on the completion time of every mapping: ``value`` = the largest of ``parts`` (each a
    certified bound, by name), ``binding`` its name; ``notes``: what was left out and why."""

    value: float
    binding: str
    parts: dict[str, float] = field(default_factory=dict)
    notes: tuple[str, ...] = ()

    def describe(self, part: str | None = None) -> str:
        """The bound ``part`` (default: the binding one) in words, for the line that prints the bound."""
        part = self.binding if part is None else part
        if part.endswith(" cluster"):
            return (_WORDS.get(part[:-8].split(":")[0], part[:-8]).format(cls=part[:-8].partition(":")[2])
                    .replace("ball counting", "the bytes that leave every node: the traffic less the most that "
                             "any node's tasks exchange"))
        base, cut = (part[:-4], True) if part.endswith(" cut") else (part, False)
        base, ports = (base[:-6], True) if base.endswith(" ports") else (base, False)
        words = _WORDS.get(base.split(":")[0], base).format(cls=base.partition(":")[2])
        if ports:
            return words + ", and the first and last links: a flow crosses them whole unless the routing splits it"
        return words.replace("ball counting", "the traffic's cut between the nodes it joins at distance 0 "
                                              "(Donath-Hoffman)") if cut else words

    def network(self) -> tuple[str, float] | None:
        """``(name, value)`` of the largest bound that counts router links, or None (none computed)."""
        net = {k: v for k, v in self.parts.items() if k not in _NODE_PARTS}
        if not net:
            return None
        k = max(net, key=net.get)
        return k, net[k]


_NODE_PARTS = ("endpoint", "injection", "ejection")

_WORDS = {
    "endpoint": "the busiest task's bytes over its node link",
    "class": "hop-bytes over the {cls} links, ball counting",
    "network": "hop-bytes over every network link, ball counting",
    "network/cap": "link-time hops over every network link, ball counting",
    "injection": "bytes leaving nodes over every injection link",
    "boundary": "the traffic's least cut (algebraic connectivity) over the links out of the routers with {cls}",
    "ejection": "bytes entering nodes over every ejection link",
}


def _phase_flows(traffic) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    out = []
    for ph in traffic.to_flows().phases:
        s, d, b = np.asarray(ph.src, np.int64), np.asarray(ph.dst, np.int64), np.asarray(ph.nbytes, float)
        keep = (s != d) & (b > 0)
        out.append((s[keep], d[keep], b[keep]))
    return out


def _ranked_partners(src: np.ndarray, dst: np.ndarray, b: np.ndarray, n: int):
    """Every (task, partner) pair's bytes (``src`` -> ``dst``, merged per pair) with the task ``s`` and the
    partner's rank ``rank`` among the task's partners by bytes, largest first: ``(s, w, rank)``."""
    key = src * n + dst
    uk, inv = np.unique(key, return_inverse=True)
    w = np.bincount(inv, weights=b, minlength=uk.size)
    s = uk // n
    order = np.lexsort((-w, s))
    s, w = s[order], w[order]
    start = np.searchsorted(s, s, side="left")
    return s, w, np.arange(s.size) - start


def _top_sum(src: np.ndarray, dst: np.ndarray, b: np.ndarray, n: int, k: int) -> np.ndarray:
    """Per task ``src``: the sum of its ``k`` largest partner bytes (partners merged)."""
    if k <= 0 or src.size == 0:
        return np.zeros(n)
    s, w, rank = _ranked_partners(src, dst, b, n)
    keep = rank < k
    return np.bincount(s[keep], weights=w[keep], minlength=n)


def task_node_bound(topology, traffic, nodes=None, tasks_per_node: int = 1) -> float:
    """The node-link bound (s): per phase, the largest over tasks of the bytes a task sends to tasks other than
    its ``tasks_per_node - 1`` largest partners over the fastest injection link of ``nodes`` (or receives, over
    the fastest ejection link), summed over phases. Every mapping with at most ``tasks_per_node`` tasks per node
    is at least this slow, whatever the routing."""
    check_type("topology", "topology", topology)
    check_type("traffic", "traffic", traffic)
    tasks_per_node = positive_int("tasks_per_node", tasks_per_node)
    n_rl, N = int(topology.n_router_links), int(topology.n_nodes)
    nodes = np.arange(N) if nodes is None else np.asarray(nodes, np.int64)
    cap = np.asarray(topology.capacity, float)
    inj, ej = cap[n_rl + nodes].max(), cap[n_rl + N + nodes].max()
    n = int(traffic.n_tasks)
    total = 0.0
    for s, d, b in _phase_flows(traffic):
        sent = np.bincount(s, weights=b, minlength=n) - _top_sum(s, d, b, n, tasks_per_node - 1)
        recv = np.bincount(d, weights=b, minlength=n) - _top_sum(d, s, b, n, tasks_per_node - 1)
        total += max(max(sent.max(initial=0.0), 0.0) / inj, max(recv.max(initial=0.0), 0.0) / ej)
    return float(total)


def endpoint_bound(topology, traffic) -> float:
    """The node-link bound with one task per node on every node (:func:`task_node_bound`)."""
    return task_node_bound(topology, traffic)


# -- the routing's distances ------------------------------------------------------------------------------------

def _probe_fn(op, n_rl: int, width: int):
    """jit of ``(tables, flow_tables, s, d, sr, dr, lsrc, ldst, out_links, in_links, x, W) -> (D [weight, pair],
    first [pair], last [pair], loads [router_link])``: the ``W``-weighted length of every pair's route (a unit
    flow each: its listed links where the routing lists them, else its own ``apply``), the largest share of it on
    one router link leaving its source router ``sr`` (``first``) and on one entering its destination router
    ``dr`` (``last``; ``lsrc``/``ldst`` the router links' ends, ``out_links``/``in_links`` ``[router, degree]``
    each router's links out and in, padded with ``n_rl``), and the loads of all the pairs routed together by ``apply`` (the
    routing's support, and the check that the unit flows add up). A share taken per listed entry is at most
    the link's whole share (a link listed twice counts as split: the safe side)."""

    def f(tables, flow_tables, s, d, sr, dr, lsrc, ldst, out_links, in_links, x, W):
        if op.flow_links is not None:
            links, frac = op.flow_links(flow_tables, s, d)  # [pair, K]
            ok = links >= 0
            li = jnp.where(ok, links, 0)
            fr = jnp.where(ok, frac, 0.0)
            D = (W[:, li] * fr[None]).sum(axis=2)  # [weight, pair]
            first = jnp.where(lsrc[li] == sr[:, None], fr, 0.0).max(axis=1)
            last = jnp.where(ldst[li] == dr[:, None], fr, 0.0).max(axis=1)
        else:
            def one(si, di, ri, qi):
                v = op.apply(tables, si[None], di[None], jnp.where(si != di, 1.0, 0.0)[None])[:n_rl]
                def share(tab, r):  # the largest share on the router's links (the tables' padding n_rl: none)
                    idx = tab[r]
                    return jnp.where(idx < n_rl, v[jnp.minimum(idx, n_rl - 1)], 0.0).max()

                return W @ v, share(out_links, ri), share(in_links, qi)

            D, first, last = jax.lax.map(lambda a: one(*a), (s, d, sr, dr), batch_size=width)
            D = D.T
        return D, first, last, op.apply(tables, s, d, x)[:n_rl]

    return jax.jit(f)


class _Routes(NamedTuple):
    """What :func:`_router_distances` reads off a routing's tables for every pair of endpoints ``(e, e')``."""

    D: np.ndarray  # [weight, e, e']: the weighted router-link length of the expected route
    support: np.ndarray  # [router_link] bool: loaded by some pair
    oblivious: bool  # the pairs' loads add up (else the distances are not used)
    first: np.ndarray  # [e, e']: the largest share of the route on one link leaving its source router
    last: np.ndarray  # [e, e']: the largest share on one link entering its destination router


def _router_distances(topology, routing, ends: np.ndarray, W: np.ndarray, ends_router: np.ndarray | None = None
                      ) -> _Routes:
    """For the routing's endpoints ``ends`` (distinct; their routers ``ends_router``, default ``ends``: endpoints
    that are routers), the ``W``-weighted router-link length of the expected route from ``ends[i]`` to
    ``ends[j]`` (0 on one router), read off the routing's own tables (a unit flow per pair); ``support``: router
    links that some pair of ``ends`` loads; ``oblivious``: whether the pairs' loads add up (routed together at
    random bytes, their weighted loads equal the sum of the unit flows'; a routing whose shares depend on the
    load does not, and its distances are not used); ``first``/``last``: the largest share of each route on one
    router link out of its source router / into its destination router (1: that link carries the flow whole)."""
    from .._batch.compiled import batch_kernel

    k = batch_kernel(topology, routing, False)
    op, tables = k.operator, k.net.routing
    flow_tables = jax.device_put(op.flow_tables) if op.flow_tables is not None else None
    n_rl = int(topology.n_router_links)
    src, dst = np.asarray(topology.link_src)[:n_rl], np.asarray(topology.link_dst)[:n_rl]
    lsrc, ldst = jnp.asarray(src, jnp.int32), jnp.asarray(dst, jnp.int32)
    out_links, in_links = (jnp.asarray(_incident(e, int(topology.n_routers), n_rl), jnp.int32) for e in (src, dst))
    routers = np.asarray(ends if ends_router is None else ends_router, np.int64)
    E = ends.size
    per_pair = 1 if op.flow_links is not None else n_rl  # work per pair
    chunk = int(min(_CHUNK, max(E * E, 1), max(256, (1 << 24) // max(per_pair, 1))))
    width = max(1, min(chunk, (1 << 22) // max(n_rl, 1)))
    fn = _probe_fn(op, n_rl, width)
    Wd = jnp.asarray(W)
    pairs = np.arange(E * E, dtype=np.int64)
    D = np.zeros((W.shape[0], E * E))
    first, last = np.zeros(E * E), np.zeros(E * E)
    support = np.zeros(n_rl)
    oblivious = True
    rng = np.random.default_rng(0)
    for lo in range(0, pairs.size, chunk):
        p = pairs[lo:lo + chunk]
        m = p.size
        p = np.pad(p, (0, chunk - m))
        si, di = ends[p // E], ends[p % E]
        valid = (si != di) & (np.arange(chunk) < m)
        x = np.where(valid, 1.0, 0.0)
        if lo == 0:
            x = x * rng.uniform(0.5, 2.0, chunk)  # random bytes: the check that unit flows add up
        i32 = lambda v: jnp.asarray(v, jnp.int32)  # noqa: E731
        g, fo, la, out = fn(tables, flow_tables, i32(si), i32(di), i32(routers[p // E]), i32(routers[p % E]),
                            lsrc, ldst, out_links, in_links, jnp.asarray(x), Wd)
        g, out = np.asarray(g) * valid, np.asarray(out)
        if lo == 0:
            lhs, rhs = W @ out, g @ x
            oblivious = bool(np.allclose(lhs, rhs, rtol=1e-9, atol=1e-12 * max(np.abs(rhs).max(initial=0.0), 1e-300)))
        D[:, lo:lo + m] = g[:, :m]
        first[lo:lo + m], last[lo:lo + m] = np.asarray(fo)[:m], np.asarray(la)[:m]
        support += out
    return _Routes(D.reshape(W.shape[0], E, E), support > 0, oblivious, first.reshape(E, E), last.reshape(E, E))


def _least(D: np.ndarray, where: np.ndarray) -> float:
    """The least entry of ``D`` where ``where`` holds (inf where it holds nowhere)."""
    return float(D[where].min()) if where.any() else np.inf


def _incident(end: np.ndarray, n_routers: int, pad: int) -> np.ndarray:
    """``[router, degree]``: the links whose ``end`` is each router, ascending, padded with ``pad``."""
    order = np.argsort(end, kind="stable")
    count = np.bincount(end, minlength=n_routers)
    start = np.concatenate([[0], np.cumsum(count)[:-1]])
    out = np.full((n_routers, max(int(count.max(initial=0)), 1)), pad, np.int64)
    e = end[order]
    out[e, np.arange(e.size) - start[e]] = order
    return out


def _shortest_distances(topology, ends_router: np.ndarray, W: np.ndarray) -> np.ndarray:
    """``D [weight, e, e']``: the ``W``-weighted shortest router-link path between the routers of the endpoints (a
    bound on the length of any route)."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import dijkstra

    n_rl, R = int(topology.n_router_links), int(topology.n_routers)
    src, dst = np.asarray(topology.link_src)[:n_rl], np.asarray(topology.link_dst)[:n_rl]
    ur, inv = np.unique(ends_router, return_inverse=True)
    out = np.empty((W.shape[0], ends_router.size, ends_router.size))
    for i, w in enumerate(W):
        # zero-weight links: a tiny positive weight keeps them as edges (scipy drops explicit zeros); then cut
        ww = np.where(w > 0, w, 0.0)
        tiny = 1e-300
        g = csr_matrix((ww + tiny, (src, dst)), shape=(R, R))
        dist = dijkstra(g, directed=True, indices=ur, min_only=False)[:, ur]
        dist = np.where(np.isfinite(dist), dist, 0.0)  # unreachable: no bound from it (0)
        dist = np.where(dist < 1e-200, 0.0, dist)
        out[i] = dist[np.ix_(inv, inv)]
    return out


# -- ball counting ------------------------------------------------------------------------------------------------

def _partner_bytes(src, dst, b, n: int) -> np.ndarray:
    """``[task, K]``: every task's partner bytes (``src`` -> ``dst``, merged per pair), sorted descending, 0-padded."""
    if src.size == 0:
        return np.zeros((n, 1))
    s, w, rank = _ranked_partners(src, dst, b, n)
    K = int(rank.max()) + 1
    check_memory("traffic", f"{n} tasks, {K} partners at most", 8.0 * n * K, "the partner bytes of the mapping bound")
    out = np.zeros((n, K))
    out[s, rank] = w
    return out


def _profiles(Dn: np.ndarray, tpn: int, K: int) -> np.ndarray:
    """``[profile, K]``: for every available node (distinct rows only), the ``K`` smallest distances from it to
    the other slots (``tpn`` slots per node, one of its own taken), ascending."""
    N = Dn.shape[0]
    kn = min(N, -(-(K + 1) // tpn) + 1)
    part = np.partition(Dn, kn - 1, axis=1)[:, :kn] if kn < N else Dn.copy()
    part.sort(axis=1)
    exp = np.repeat(part, tpn, axis=1)[:, 1:K + 1]  # the first entry: the node itself (distance 0), one slot taken
    if exp.shape[1] < K:  # fewer slots than partners: not a job that fits; 0 keeps it a bound anyway
        exp = np.pad(exp, ((0, 0), (0, K - exp.shape[1])))
    return np.unique(exp, axis=0)


def _ball(B: np.ndarray, prof: np.ndarray) -> float:
    """``sum_i min_p sum_k B[i, k] prof[p, k]`` (``B`` sorted descending, ``prof`` ascending)."""
    K = min(B.shape[1], prof.shape[1])
    B, prof = B[:, :K], prof[:, :K]
    if B.shape[0] * K * prof.shape[0] > _WORK:
        prof = prof.min(axis=0, keepdims=True)  # every node no farther than the closest: still a bound
    cost = B @ prof.T
    return float(cost.min(axis=1).sum())


_EIG_MAX = 4096
"""Tasks above which the cut bound (a dense eigenvalue problem of that order) is left out."""


class _Laplacian:
    """The smallest eigenvalues (ascending) of the Laplacian of the traffic graph (bytes between two tasks, both
    ways summed), computed on first need, as many as asked (``None``: too many tasks, noted)."""

    def __init__(self, src, dst, b, n: int, notes: list):
        self.n, self.notes, self.vals, self.L = n, notes, np.zeros(0), None
        if n > _EIG_MAX:
            notes.append(f"the cut bound is left out above {_EIG_MAX} tasks (an eigenvalue problem of order {n})")
            return
        check_memory("traffic", f"{n} tasks", 4 * 8.0 * n * n, "the Laplacian of the traffic graph for the mapping "
                     "bound")
        W = np.zeros((n, n))
        np.add.at(W, (src, dst), b)
        W = W + W.T
        self.L = np.diag(W.sum(axis=1)) - W

    def smallest(self, k: int) -> np.ndarray | None:
        if self.L is None:
            return None
        k = min(k, self.n)
        if self.vals.size < k:  # all of them: LAPACK's full symmetric solver is faster here than a subset
            self.vals = np.linalg.eigvalsh(self.L)
            self.top = float(np.abs(self.L).sum(axis=1).max())  # >= the largest eigenvalue (Gershgorin)
        return self.vals[:k]


def _cut_bound(Dn: np.ndarray, tpn: int, n: int, lap: _Laplacian) -> float:
    """A lower bound on ``sum_f bytes_f Dn(node(src_f), node(dst_f))`` over mappings: the nodes split into the
    classes that ``Dn`` joins at distance 0 (its zero pattern's connected components: a router, a group, a leaf,
    a plane of a torus), every flow between two classes costs at least ``delta`` (the smallest distance between
    classes), and the bytes between the classes of any mapping are at least the Donath-Hoffman bound ``1/2 sum_i
    o_i lambda_i`` (``lambda`` the traffic graph's Laplacian eigenvalues ascending, ``o`` the classes' task
    counts descending; the smallest such sum fills the largest classes first)."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import connected_components

    k, comp = connected_components(csr_matrix(Dn == 0), directed=False)
    if k < 2:
        return 0.0
    cross = comp[:, None] != comp[None, :]
    delta = float(Dn[cross].min())
    if delta <= 0:
        return 0.0
    sizes = np.sort(np.bincount(comp, minlength=k) * tpn)[::-1]
    occ = np.diff(np.minimum(np.concatenate([[0], np.cumsum(sizes)]), n))  # greedy: the largest classes first
    occ = occ[occ > 0]
    if occ.size >= n:  # one task per class: every byte crosses (the ball counting has it already)
        return 0.0
    vals = lap.smallest(occ.size)
    if vals is None:
        return 0.0
    dh = 0.5 * float(occ @ vals)
    dh -= 1e-10 * n * lap.top  # the eigenvalues' rounding (a few ulps of the largest each, far above)
    return max(delta * dh, 0.0)


# -- the bound ----------------------------------------------------------------------------------------------------

def mapping_bound(topology, traffic, routing, nodes=None, tasks_per_node: int = 1) -> MappingBound:
    """A lower bound (s) on the predicted completion time of every mapping of ``traffic``'s tasks onto ``nodes``
    (default: every node) with at most ``tasks_per_node`` tasks per node, under ``routing``: the largest of the
    node-link bound and the weighted hop-bytes bounds with ball counting (see the module's docstring)."""
    from ..evaluation import as_routing
    from ._partition import check_job

    routing = as_routing(routing)
    # the job checked as the search checks it (65 tasks on 64 nodes of one slot, or node 100 of 64, gave a bound)
    nodes, tpn = check_job(topology, traffic, np.arange(topology.n_nodes, dtype=np.int64) if nodes is None
                           else nodes, tasks_per_node)
    N = int(topology.n_nodes)
    nodes = np.unique(nodes)
    n = int(traffic.n_tasks)
    n_rl = int(topology.n_router_links)
    cap = np.asarray(topology.capacity, float)
    parts: dict[str, float] = {"endpoint": task_node_bound(topology, traffic, nodes, tpn)}
    notes: list[str] = []
    flows = _phase_flows(traffic)
    if flows and any(f[0].size for f in flows):
        s = np.concatenate([f[0] for f in flows])
        d = np.concatenate([f[1] for f in flows])
        b = np.concatenate([f[2] for f in flows])
        try:
            parts.update(_ball_bounds(topology, routing, nodes, tpn, n, n_rl, cap, s, d, b, flows, notes))
        except ResourceError as exc:  # refused before allocating: the node-link bound stands alone
            notes.append(f"the network's bounds were not computed: {exc}")
    else:  # every part but the node links' is left out: say why (a part absent without a reason read as missing)
        notes.append("the network's and the node links' hop-bytes parts are left out: no byte goes between two "
                     "tasks (no flow, or every flow a self flow), so every mapping takes 0 s on them")
    binding = max(parts, key=parts.get)
    return MappingBound(float(parts[binding]), binding, parts, tuple(notes))


def _weights(topology, n_rl: int, cap: np.ndarray) -> dict[str, np.ndarray]:
    """The weightings of the links (``[link]`` each) whose hop-bytes bounds are taken, by name."""
    N = int(topology.n_nodes)
    L = n_rl + 2 * N
    cls = np.asarray(topology.link_class)
    out: dict[str, np.ndarray] = {}
    router_classes = np.unique(cls[:n_rl])
    for c in router_classes:
        w = np.zeros(L)
        w[:n_rl] = cls[:n_rl] == c
        out[f"class:{topology.class_names[c]}"] = w
    if n_rl and router_classes.size > 1:
        w = np.zeros(L)
        w[:n_rl] = 1.0
        out["network"] = w
    if n_rl and np.ptp(cap[:n_rl]) > 0:
        w = np.zeros(L)
        w[:n_rl] = 1.0 / cap[:n_rl]
        out["network/cap"] = w
    w = np.zeros(L)
    w[n_rl:n_rl + N] = 1.0
    out["injection"] = w
    w = np.zeros(L)
    w[n_rl + N:] = 1.0
    out["ejection"] = w
    return out


def _left_out(name: str, one_node: bool, one_router: bool) -> str:
    """The note of a part of :func:`_ball_bounds` that no mapping can load."""
    return f"the {name} part is left out: " + (
        "one node is available, so every byte stays on it" if one_node else
        "the available nodes are all on one router" if one_router else
        "no route between two available nodes crosses these links")


def _ball_bounds(topology, routing, nodes, tpn, n, n_rl, cap, s, d, b, phases, notes) -> dict[str, float]:
    N = int(topology.n_nodes)
    A = nodes.size
    weights = _weights(topology, n_rl, cap)
    names = list(weights)
    notes += [f"the class:{c} part is left out: the network has no {c} router link" for c in topology.class_names
              if c not in ("injection", "ejection") and f"class:{c}" not in weights]  # (a one-router network)
    W = np.stack([weights[k] for k in names])  # [weight, link]
    node_router = np.asarray(topology.node_router, np.int64)
    linear = bool(getattr(routing, "linear", True))  # an adaptive routing shares bytes by load: not linear
    endpoint = node_router
    if linear:
        from ..routing import build_routing

        op = build_routing(topology, routing)
        if getattr(op, "endpoints", None) is not None:
            endpoint = np.asarray(op.endpoints, np.int64)
    ends, e_of = np.unique(endpoint[nodes], return_inverse=True)
    E = ends.size
    ends_router = node_router[nodes][np.unique(e_of, return_index=True)[1]]
    check_memory("nodes", f"{A} nodes ({E} routing endpoints)", 8.0 * ((W.shape[0] + 3) * E * E + 4 * A * A),
                 "the route lengths between the available nodes for the mapping bound",
                 "Search a smaller set of nodes (--nodes).")
    routes = None  # the routing's own routes, where its loads add up (their first and last links: the ports)
    if n_rl and E > 1:
        if linear:
            routes = _router_distances(topology, routing, ends, W[:, :n_rl], ends_router)
            routes = routes if routes.oblivious else None
        if routes is None:
            notes.append(f"routing {routing.kind} shares bytes by load: its routes are counted as shortest "
                         f"paths")
            Dr = _shortest_distances(topology, ends_router, W[:, :n_rl])
            support = np.ones(n_rl, bool)
        else:
            Dr, support = routes.D, routes.support
    else:
        Dr, support = np.zeros((W.shape[0], E, E)), np.zeros(n_rl, bool)
    same_router = node_router[nodes][:, None] == node_router[nodes][None, :]
    m_nodes = min(A, n)  # no mapping loads more node links than this
    B_out = _partner_bytes(s, d, b, n)
    B_in = _partner_bytes(d, s, b, n)
    B_sym = 0.5 * _partner_bytes(np.concatenate([s, d]), np.concatenate([d, s]), np.concatenate([b, b]), n)
    lap = _Laplacian(s, d, b, n, notes)
    # the bytes that leave their node in any mapping: all of them less what the nodes' tasks can exchange at most
    external = float(b.sum()) - max_internal_bytes(s, d, b, n, tpn, A) if tpn > 1 else 0.0
    if routes is not None:  # per phase (each phase's busiest link), the routes' first and last links
        B_out_ph, B_in_ph, split_out, split_in, c_out, c_in = _port_inputs(
            topology, routes, phases, B_out, B_in, ends_router, node_router[nodes], cap, n)
    out: dict[str, float] = {}
    for i, name in enumerate(names):
        w = W[i]
        wc = w * cap
        denom = (wc[:n_rl][support].sum() + np.sort(wc[n_rl + nodes])[::-1][:m_nodes].sum()
                 + np.sort(wc[n_rl + N + nodes])[::-1][:m_nodes].sum())
        Dn = Dr[i][np.ix_(e_of, e_of)]
        Dn = np.where(same_router, 0.0, Dn) + w[n_rl + nodes][:, None] + w[n_rl + N + nodes][None, :]
        np.fill_diagonal(Dn, 0.0)
        if denom <= 0 or not Dn.any():
            notes.append(_left_out(name, denom > 0 and A == 1, denom > 0 and np.unique(node_router[nodes]).size == 1))
            continue
        K = max(B_out.shape[1], B_in.shape[1], B_sym.shape[1])
        p_out = _profiles(Dn, tpn, K)
        sym = np.allclose(Dn, Dn.T, rtol=1e-12, atol=0.0)
        p_in = p_out if sym else _profiles(Dn.T, tpn, K)
        p_sym = p_out if sym else _profiles(np.minimum(Dn, Dn.T), tpn, K)
        hb = max(_ball(B_out, p_out), _ball(B_in, p_in), _ball(B_sym, p_sym))
        out[name] = float(hb / denom)
        cut = _cut_bound(Dn, tpn, n, lap)
        if cut > 0:
            out[f"{name} cut"] = float(cut / denom)
        if external > 0 and A > 1:  # every byte between two nodes goes at least the shortest distance between two
            off = Dn[~np.eye(A, dtype=bool)].min()
            if off > 0:
                out[f"{name} cluster"] = float(off * external / denom)
        if routes is not None and not w[n_rl:].any():  # router links only: the ports' hops are counted
            ports = max(port_bound(B_out_ph, p_out, _least(Dr[i], split_out), c_out, denom, _WORK),
                        port_bound(B_in_ph, p_in, _least(Dr[i], split_in), c_in, denom, _WORK))
            if ports > out[name]:
                out[f"{name} ports"] = ports
    return {**out, **_boundary_part(topology, nodes, tpn, n, lap, support, cap[:n_rl])}


def _boundary_part(topology, nodes, tpn: int, n: int, lap: _Laplacian, support, cap) -> dict[str, float]:
    """The boundary part (:func:`._boundary.boundary_bound`) by name, where the traffic graph's eigenvalues are
    computed (none above :data:`_EIG_MAX` tasks)."""
    vals = lap.smallest(2) if n > 1 else None
    if vals is None or vals.size < 2:
        return {}
    part = boundary_bound(topology, nodes, tpn, n, float(vals[1]) - 1e-10 * n * lap.top, support, cap)
    return dict([part]) if part is not None else {}


def _port_inputs(topology, routes: _Routes, phases, B_out, B_in, ends_router, routers, cap, n: int):
    """What the port part needs (:func:`._ports.port_bound`): every phase's partner bytes sent and received (one
    phase: ``B_out``, ``B_in`` as computed), the endpoint pairs on two routers whose route is split at its first
    / last link, and the fastest router link out of / into the available nodes' ``routers``."""
    if len(phases) == 1:
        B_out_ph, B_in_ph = [B_out], [B_in]
    else:
        B_out_ph = [_partner_bytes(ps, pd, pb, n) for ps, pd, pb in phases]
        B_in_ph = [_partner_bytes(pd, ps, pb, n) for ps, pd, pb in phases]
    apart = ends_router[:, None] != ends_router[None, :]
    n_rl = int(topology.n_router_links)
    used = np.unique(routers)
    c_out, c_in = (float(cap[:n_rl][np.isin(np.asarray(e)[:n_rl], used)].max(initial=0.0))
                   for e in (topology.link_src, topology.link_dst))
    return (B_out_ph, B_in_ph, ~whole_pairs(routes.first) & apart, ~whole_pairs(routes.last) & apart, c_out, c_in)
