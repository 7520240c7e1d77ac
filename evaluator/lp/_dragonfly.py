"""Dragonfly adaptive-routing bound: the best per-group-pair mix of minimal and Valiant path classes.

For every ordered pair of groups ``(S, D)`` with traffic, the LP chooses
how much of the pair's bytes take each of its path classes (``g - 1``;
``2 (g - 1)`` with ``router=True``):

* *minimal* (``I = -1``): local hop to the owner of an ``S -> D`` global
  link, the global link, local hop to the destination router;
* *group-level Valiant* through each intermediate group ``I != S, D``
  (the ``valiant`` routing's paths): minimal to ``I``, landing on the
  router where the ``S -> I`` link lands, local hop to the owner of the
  ``I -> D`` link, minimal from there to ``D``;
* with ``router=True`` (``bounds=dragonfly_adaptive_router``), also
  *router-level Valiant* through a router of each group ``I != S``, the
  intermediate router uniform within ``I`` (the ``valiant_router``
  routing's paths, as BookSim2's Valiant): minimal to the router ``x``
  (landing router, local hop to ``x``), then minimal from ``x`` to the
  destination (local hop to the owner of the ``I -> D`` link, global link,
  local hop); with ``I = D`` the detour is the local hop from the landing
  router to ``x`` and from ``x`` to the destination router.

Within a class the bytes spread exactly as the ``minimal``, ``valiant``
and ``valiant_router`` routings spread them
(:mod:`evaluator.routing._dragonfly`): evenly over the ``m`` parallel
global links, in proportion to the source routers' and destination
routers' shares of the pair's bytes. Intra-group traffic stays on its
direct local link, injection and ejection are fixed loads.

It is Model 1 (:mod:`._model1`) with group pairs as pairs and these
classes as paths (incidence = the fraction of the class's bytes on each
link): ``Z`` is the rate an ideal UGAL could reach, which chooses per group
pair (not per packet) among these paths. All-minimal and uniform
group-level Valiant (each intermediate ``1 / (g - 2)``) are feasible mixes,
so it bounds the ``minimal`` and ``valiant`` routings (no mix of theirs
finishes sooner); with the router-level classes ``valiant_router`` (minimal
``a / R``, each group's router class ``a / R``, ``R = g a``) is one more, so
it bounds that routing too. Without them it does *not* bound
``valiant_router``, which can beat it (its detours through a random router
spread over the intermediate group's local links). It never bounds routings
over other paths (path sets; the all-paths optimum is never slower).

Why the router-level classes are opt-in: their detours load every local
link of the intermediate group (``a (a - 1)`` entries per class, against one
or two for a group-level class), so the LP has about 2.7x the nonzeros
(DF(4,8,4), every router to every group: 1,660,824 against 606,936) and its
rows couple densely: HiGHS's interior point, 40 s of CPU on DF(4,8,4)
all-to-all without them, had not finished in 10 minutes with them.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..errors import ConfigError, check_memory
from ..topology import DragonflyTopology, Topology
from ._flow import BYTES_PER_NNZ, RouterDemand
from ._model1 import PathBound, bound_of, solve_path_lp

__all__ = ["CLASS_KINDS", "METHOD", "adaptive_classes", "adaptive_size", "check_adaptive_size", "dragonfly_adaptive_bound"]


CLASS_KINDS = ("minimal", "group", "router")
"""The path classes of the adaptive bound: minimal, group-level Valiant, router-level Valiant (module docstring)."""

METHOD = {False: "dragonfly_adaptive", True: "dragonfly_adaptive_router"}
"""The bound method's name without and with the router-level classes."""


def _own(topo: DragonflyTopology) -> np.ndarray:
    """``own[G, H, r]``: fraction of group ``G``'s traffic to ``H`` that leaves through router ``r`` of ``G``
    (also the fraction of ``H``'s traffic to ``G`` that lands on ``r``)."""
    g, a, m = topo.g, topo.a, topo.links_per_pair
    go = np.asarray(topo.global_owner)
    own = np.zeros((g, g, a))
    G, H = np.nonzero(~np.eye(g, dtype=bool))
    for c in range(m):
        np.add.at(own, (G, H, go[G, H, c]), 1.0 / m)
    return own


def _check_topology(topo) -> None:
    if not isinstance(topo, DragonflyTopology):
        raise ConfigError("topology", topo.name, "a Dragonfly (the adaptive bound mixes minimal and Valiant)")
    if topo.g < 3:
        raise ConfigError("topology", topo.name, "a Dragonfly with at least 3 groups",
                          "Valiant needs an intermediate group other than source and destination.")


def _supports(topo: DragonflyTopology, demand: RouterDemand):
    """``(out, inn)`` boolean ``[S, D, router]``: routers of group ``S`` sending to group ``D`` and routers of
    ``D`` receiving from ``S`` (inter-group pairs with bytes only)."""
    g, a = topo.g, topo.a
    Gs, Gd = demand.src // a, demand.dst // a
    inter = (Gs != Gd) & (demand.nbytes > 0)
    out = np.zeros((g, g, a), bool)
    inn = np.zeros((g, g, a), bool)
    out[Gs[inter], Gd[inter], demand.src[inter] % a] = True
    inn[Gs[inter], Gd[inter], demand.dst[inter] % a] = True
    return out, inn


def adaptive_size(topo: DragonflyTopology, demand: RouterDemand | None = None, router: bool = False
                  ) -> dict[str, int]:
    """Size of the adaptive bound's LP (:func:`adaptive_classes` then :func:`~evaluator.lp.path_lp`), before it
    is built: ``classes``, ``vars``, ``rows``, ``nnz`` and ``bytes`` (as :func:`~evaluator.lp.edge_size`:
    :data:`~evaluator.lp._flow.BYTES_PER_NNZ` per nonzero plus 64 per variable and row).

    Counted from what the builder creates, not guessed: a group pair ``(S, D)``
    with traffic gets ``g - 1`` classes (``2 (g - 1)`` with ``router``); a local hop part ``outer(w_from,
    w_to)`` off its diagonal has ``|w_from| |w_to| - |w_from & w_to|`` entries
    (supports), a router-level detour ``a (a - 1) - (|not w_from| |not w_to| -
    |neither|)``, a global part ``m``. With ``demand`` the supports are the
    demand's own routers (the incidence count is then exact); without, every
    router of every group sends to and receives from every other group (an
    upper bound for any demand on ``topo``). The capacity rows and the
    fixed-load column are bounded by the router links and by the incidence
    entries (``path_lp`` keeps the links some class uses).
    """
    _check_topology(topo)
    g, a, m = topo.g, topo.a, topo.links_per_pair
    O = _own(topo) > 0  # [G, H, r]: r of G owns a link to H
    o = O.sum(2).astype(np.int64)  # [G, H]
    if demand is None:
        pairs = ~np.eye(g, dtype=bool)
        out = np.broadcast_to(pairs[:, :, None], (g, g, a))
        inn = out
    else:
        out, inn = _supports(topo, demand)
        pairs = out.any(2)
    nu = out.sum(2).astype(np.int64)  # [S, D]
    nv = inn.sum(2).astype(np.int64)
    Oi = O.astype(np.int64)
    osum, Osum = o.sum(1), Oi.sum(1)  # [G], [G, r]: over every H (own[G, G] is empty)
    ou = out.astype(np.int64)
    iv = inn.astype(np.int64)
    # minimal (S, D): local(S, u, own[S, D]) + m + local(D, own[D, S], v)
    src_min = nu * o - np.einsum("sdr,sdr->sd", ou, Oi)
    dst_min = nv * o.T - np.einsum("sdr,dsr->sd", iv, Oi)
    # Valiant through every I != S, D: local(S, u, own[S, I]) + m + local(I, own[I, S], own[I, D]) + m +
    # local(D, own[D, I], v); own[S, S] and own[D, D] are empty, so the sums over I may include S and D
    src_val = nu * (osum[:, None] - o) - (np.einsum("sdr,sr->sd", ou, Osum) - np.einsum("sdr,sdr->sd", ou, Oi))
    dst_val = nv * (osum[None, :] - o.T) - (np.einsum("sdr,dr->sd", iv, Osum) - np.einsum("sdr,dsr->sd", iv, Oi))
    mid = (o[:, :, None] * o[:, None, :] - np.einsum("isr,idr->isd", Oi, Oi)).sum(0)  # [S, D]
    # router-level Valiant: a detour part (w_from -> uniform x -> w_to, off the diagonal) has an entry at (i, j),
    # i != j, where i is in supp(w_from) or j in supp(w_to): a (a - 1) - (|not from| |not to| - |neither|)
    Zi = 1 - Oi  # [G, H, r]: r of G owns no link to H
    z = a - o  # [G, H]
    det = a * (a - 1) - (z[:, :, None] * z[:, None, :] - np.einsum("isr,idr->isd", Zi, Zi))  # [I, S, D]
    through = np.ones((g, g, g), bool)  # I != S, D
    k = np.arange(g)
    through[k, k, :] = False
    through[k, :, k] = False
    mid_r = np.where(through, det, 0).sum(0)
    # I = D: local(S, u, own[S, D]) + m + detour(D, own[D, S], v)
    det_d = a * (a - 1) - (z.T * (a - nv) - np.einsum("dsr,sdr->sd", Zi, 1 - iv))
    per_pair = src_min + dst_min + m + src_val + dst_val + mid + 2 * m * (g - 2)
    if router:
        per_pair = per_pair + src_min + m + det_d + src_val + dst_val + mid_r + 2 * m * (g - 2)
    P = int(pairs.sum())
    inc = int(per_pair[pairs].sum())
    K = P * (g - 1) * (2 if router else 1)
    used = min(int(topo.n_router_links), inc)  # capacity rows: links some class uses (at most one per entry)
    n_vars, rows = K + 1, P + used
    nnz = inc + used + K + P  # incidence, fixed-load column, demand rows (classes and the Z column)
    return {"classes": K, "incidence_nnz": inc, "vars": n_vars, "rows": rows, "nnz": nnz,
            "bytes": BYTES_PER_NNZ * nnz + 64 * (n_vars + rows)}


def describe_adaptive(topo, size: dict[str, int]) -> str:
    """What :func:`adaptive_size` counted, for messages."""
    return (f"on {topo.name}, the Dragonfly adaptive LP ({size['classes']:,} path classes, {size['vars']:,} "
            f"variables, {size['rows']:,} rows, {size['nnz']:,} nonzeros)")


def check_adaptive_size(topo, demand: RouterDemand | None = None, batch: int = 1, router: bool = False) -> None:
    """Refuse (:class:`~evaluator.errors.ResourceError` naming the estimate) an adaptive LP, ``batch`` at once,
    whose :func:`adaptive_size` exceeds 80% of the available memory, before anything is built."""
    size = adaptive_size(topo, demand, router)
    check_memory("bounds", METHOD[router], batch * size["bytes"],
                 describe_adaptive(topo, size) + (f" x {batch} at once" if batch > 1 else ""),
                 "Use bounds=garg_konemann (the all-paths optimum, no LP) or a smaller network.")


def adaptive_classes(topo: DragonflyTopology, demand: RouterDemand, router: bool = False):
    """Model 1 data of the adaptive bound: ``(incidence [link, class], pair [class], bytes [pair], fixed [link],
    classes)``; ``classes[k] = (S, D, I, kind)`` with ``kind`` in :data:`CLASS_KINDS` and ``I = -1`` for the
    minimal class; router-level classes only with ``router``."""
    _check_topology(topo)
    g, a, m = topo.g, topo.a, topo.links_per_pair
    L = topo.n_links
    ll = np.asarray(topo.local_link)
    gl = np.asarray(topo.global_link)
    own = _own(topo)
    fixed = np.array(demand.fixed_load, dtype=np.float64)
    Gs, Gd = demand.src // a, demand.dst // a
    rs, rd = demand.src % a, demand.dst % a
    intra = Gs == Gd
    np.add.at(fixed, ll[Gs[intra], rs[intra], rd[intra]], demand.nbytes[intra])
    inter = ~intra
    out = np.zeros((g, g, a))  # out[S, D, i]: bytes from router i of S to group D
    inn = np.zeros((g, g, a))  # inn[S, D, j]: bytes to router j of D from group S
    np.add.at(out, (Gs[inter], Gd[inter], rs[inter]), demand.nbytes[inter])
    np.add.at(inn, (Gs[inter], Gd[inter], rd[inter]), demand.nbytes[inter])
    GG = out.sum(2)
    S_, D_ = np.nonzero(GG > 0)
    P = S_.size
    per = (g - 1) * (2 if router else 1)  # classes per pair: minimal, g - 2 group-level, g - 1 router-level
    classes = [(S, D, I, kind) for S, D in zip(S_.tolist(), D_.tolist())
               for I, kind in [(-1, "minimal")] + [(I, "group") for I in range(g) if I != S and I != D]
               + ([(I, "router") for I in range(g) if I != S] if router else [])]
    ii, jj = np.nonzero(~np.eye(a, dtype=bool))  # the off-diagonal (from, to) router pairs of a group
    LL = ll[:, ii, jj]                               # [G, a (a - 1)]: their local links

    def local(G, w_from, w_to):  # one local hop from the routers w_from to the routers w_to: [..., a (a - 1)]
        return LL[G], w_from[..., ii] * w_to[..., jj]

    def detour(G, w_from, w_to):  # w_from -> x -> w_to, x uniform in G (the two hops' fractions add on a link)
        return LL[G], w_from[..., ii] * (1.0 / a) + (1.0 / a) * w_to[..., jj]

    def glob(G, H):  # the m parallel global links of G -> H, 1 / m each
        links = gl[G, H]
        return links, np.full(links.shape, 1.0 / m)

    parts = []  # (column of each class [n], [(links [n, e], fractions [n, e]), ...])
    per_chunk = max(1, 4_000_000 // max(1, per * (a * a + 2 * m)))  # bounds the dense intermediates
    for lo in range(0, P, per_chunk):
        q = np.arange(lo, min(P, lo + per_chunk))
        S, D = S_[q], D_[q]
        ou, iu = out[S, D] / GG[S, D, None], inn[S, D] / GG[S, D, None]
        base = q * per
        parts.append((base, [local(S, ou, own[S, D]), glob(S, D), local(D, own[D, S], iu)]))
        Ik = np.arange(g)[None, :]
        Q, I = np.nonzero((Ik != S[:, None]) & (Ik != D[:, None]))  # pair-major, I ascending: the class order
        Sq, Dq = S[Q], D[Q]
        parts.append((base[Q] + 1 + I - (I > Sq) - (I > Dq),
                      [local(Sq, ou[Q], own[Sq, I]), glob(Sq, I), local(I, own[I, Sq], own[I, Dq]), glob(I, Dq),
                       local(Dq, own[Dq, I], iu[Q])]))
        if router:
            Q, I = np.nonzero(Ik != S[:, None])
            Sq, Dq = S[Q], D[Q]
            col = base[Q] + (g - 1) + I - (I > Sq)
            at_d = I == Dq
            x, y = Q[at_d], Dq[at_d]
            parts.append((col[at_d], [local(Sq[at_d], ou[x], own[Sq[at_d], y]), glob(Sq[at_d], y),
                                      detour(y, own[y, Sq[at_d]], iu[x])]))
            x, Ir, Sr, Dr = Q[~at_d], I[~at_d], Sq[~at_d], Dq[~at_d]
            parts.append((col[~at_d], [local(Sr, ou[x], own[Sr, Ir]), glob(Sr, Ir),
                                       detour(Ir, own[Ir, Sr], own[Ir, Dr]), glob(Ir, Dr), local(Dr, own[Dr, Ir], iu[x])]))
    rows, cols, vals = [], [], []
    for col, pieces in parts:
        for links, w in pieces:
            nz = w > 0
            rows.append(links[nz])
            vals.append(w[nz])
            cols.append(np.broadcast_to(col[:, None], w.shape)[nz])
    pair = np.repeat(np.arange(P, dtype=np.int64), per)
    K = len(classes)
    if K:
        inc = sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols).astype(np.int64))),
                            shape=(L, K))
    else:
        inc = sp.csr_matrix((L, 0))
    return inc, pair, GG[S_, D_], fixed, classes


def dragonfly_adaptive_bound(topology: Topology, demand: RouterDemand, solver: str = "highs",
                             router: bool = False) -> PathBound:
    """The adaptive-routing bound (module docstring): Model 1 over the minimal and group-level Valiant classes
    per group pair (and the router-level ones with ``router``), certified
    (:func:`~evaluator.lp._model1.certify_path`).

    Refused with a :class:`~evaluator.errors.ResourceError` naming the estimate (:func:`adaptive_size`)
    before anything is built when the LP would not fit in 80% of the available memory.
    """
    from ._flow import check_demand, normalized, rescaled

    check_demand(topology, demand)
    check_adaptive_size(topology, demand, router=router)
    demand, e = normalized(demand)  # bytes by a power of two: capacity / bytes stays finite (1e-300 bytes)
    return rescaled(_adaptive(topology, demand, solver, router), e)


def _adaptive(topology: Topology, demand: RouterDemand, solver: str, router: bool) -> PathBound:
    inc, pair, gbytes, fixed, _ = adaptive_classes(topology, demand, router)
    if not gbytes.size:  # only fixed loads
        m = fixed > 0
        z = float((topology.capacity[m] / fixed[m]).min()) if m.any() else np.inf
        return bound_of(z, z, np.zeros(0), METHOD[router], solver)
    return solve_path_lp(inc, pair, gbytes, np.asarray(topology.capacity, dtype=np.float64), fixed, solver,
                         method=METHOD[router])
