"""Path-set routings: explicit paths per communicating router pair, turned into link loads in JAX.

A path-set routing (``kshortest``, ``optiq_heuristic``; later ``optiq_lp``)
splits each router pair's demand over a few explicit paths with weights (the
fraction of the pair's bytes each carries). This module holds what they
share:

* the router graph of any topology (its router links, parallel links kept:
  :mod:`evaluator.routing._yen`);
* Yen's k shortest loopless paths with a hop limit (:func:`yen_paths`,
  from :mod:`evaluator.routing._yen` with the router graph), cached per
  topology and pair under byte budgets (:data:`PATH_STATE_BYTES` for the
  resumable search states, the oldest dropped to their found paths;
  :data:`PATH_FOUND_BYTES` for the paths);
* :class:`PathTable`: the host-built, padded table of a set of router pairs,
  their paths (router-link ids, padded to a bucketed hop count) and weights;
* :func:`path_operator`: the jit-compatible ``apply``/``apply_dense`` of the
  :class:`~evaluator.routing.base.RoutingOperator` contract over a table;
* :func:`path_incidence`: the path-link incidence and per-path pair index of
  a table (scipy.sparse), the hook for an LP split of the demand (Bui et al.
  Model 1, ``optiq_lp``).

Which pairs get paths (decision)
--------------------------------
The operator is built per topology, but a path set depends on the pairs that
communicate: all ``R (R - 1)`` pairs of a 8,192-router partition with k = 16
paths of ~12 hops would be 5e10 bytes, and OPTIQ's heuristic selects paths
jointly over the communicating pairs. So a path-set routing is *bound* to a
pair set: :func:`evaluator.evaluation.evaluate_batch` collects the router pairs
of its points (sparse flows: the pairs with bytes; dense traffic: every pair
of a router with source weight and one with destination weight) and builds
the operator for them (:class:`PairSet`, part of the routing spec, so the
kernel cache keys on it):

* ``kshortest``: one operator for the union of the batch's pairs (a pair's
  paths do not depend on the others; they are cached per topology and pair,
  so a later batch recomputes none within the cache's budgets);
* ``optiq_heuristic``: one operator per distinct pair set (the selection
  depends on every pair of the exchange), points grouped by pair set.

Which is the spec's own :meth:`PathSetRouting.bind_pairs` (the base of the
routing contract, :class:`~evaluator.routing.base.Routing`), so that
``evaluate_batch`` binds any path set without asking which one it is.

An unbound spec (``build_routing(topology, kshortest())``) gets every router
pair, allowed only while that fits (:func:`table_bytes` under
:func:`~evaluator.errors.check_memory`, and at most :data:`ALL_PAIRS_MAX_ROUTERS`
routers, as Yen's paths for millions of pairs take hours on the host).

Memory (decision): a table of ``P`` pairs and ``N`` paths padded to ``H``
hops holds ``4 N H`` bytes of link ids plus ``16 N + 24 P`` of indices and
weights, on the host and again on the device; a point's scatter adds ``12 N
H``: :func:`table_bytes`. Refused before any path is searched, from the
estimate ``N <= k P`` and ``H <= hop_limit`` (or the diameter plus 2k), and
again from the sizes found before the table is allocated (the estimate is no
bound: Yen's k-th path can be longer, parallel links multiply paths).
"""

from __future__ import annotations

import collections
import dataclasses
import itertools
import hashlib
import time
import weakref
from collections.abc import Sequence

import jax.numpy as jnp
import numpy as np
from jaxtyping import Bool, Float, Int

from .._ops import segment_add, take, with_extra
from ..display import progress_bar
from ..errors import ConfigError, check_memory, int_array, is_int, require
from ..topology import Topology
from ._yen import _Yen, RouterGraph, router_graph, yen_paths
from .base import Routing, RoutingOperator

__all__ = ["PairSet", "PathSetRouting", "RouterGraph", "router_graph", "yen_paths", "PathTable", "path_table",
           "path_operator", "PathSetOperator", "path_incidence", "table_bytes", "check_k", "check_hop_limit",
           "hop_bucket",
           "ALL_PAIRS_MAX_ROUTERS", "SHARE_TOL", "pair_path_counts",
           "paths_per_pair", "bind_by_pair_set", "unroutable_pair"]

ALL_PAIRS_MAX_ROUTERS = 128
"""An unbound path-set routing serves every router pair only up to this many routers."""

PROGRESS_DELAY_S = 2.0
"""A path search shows its progress bar (router pairs done, on stderr) once it has run this long."""


# --------------------------------------------------------------------------------------
# the spec: parameters and the bound pair set
# --------------------------------------------------------------------------------------


class PairSet:
    """An immutable set of ordered router pairs ``(s, d)``, ``s != d``, as sorted keys ``s * R + d``.

    Hashable and comparable by content (a SHA-1 of the keys, and of the
    demand when there is one), so a routing spec holding one keys the kernel
    and operator caches. ``demand`` (optional, bytes per entry of ``keys``,
    summed over repeated keys) is what a demand-aware split (``optiq_lp``)
    is solved for; ``None`` for routings whose paths depend on the pairs only.
    """

    __slots__ = ("keys", "n_routers", "demand", "_digest")

    def __init__(self, keys: Int[np.ndarray, "pair"], n_routers: int,
                 demand: Float[np.ndarray, "pair"] | None = None):
        require(is_int(n_routers) and int(n_routers) >= 1, "pairs.n_routers", n_routers, "an integer >= 1")
        keys = _int_array("pairs.keys", keys)
        R = int(n_routers)
        bad = (keys < 0) | (keys >= R * R) | (keys // R == keys % R)
        if bad.any():
            k = int(keys[np.argmax(bad)])
            raise ConfigError("pairs.keys", k, f"keys s * {R} + d of router pairs with s != d in [0, {R - 1}]")
        if demand is None:
            keys, dem = np.unique(keys), None
        else:
            dem = _demand(demand, keys.size)
            keys, inv = np.unique(keys, return_inverse=True)
            dem, raw = np.zeros(keys.size), dem
            np.add.at(dem, inv.reshape(-1), raw)
            dem.setflags(write=False)
        keys.setflags(write=False)
        self.keys = keys
        self.n_routers = int(n_routers)
        self.demand = dem
        h = hashlib.sha1(keys.tobytes() + self.n_routers.to_bytes(8, "little"))
        if dem is not None:
            h.update(b"demand" + dem.tobytes())
        self._digest = h.hexdigest()

    @classmethod
    def of(cls, src: Sequence[int], dst: Sequence[int], n_routers: int) -> "PairSet":
        src = _int_array("pairs.src", src)
        dst = _int_array("pairs.dst", dst)
        require(src.size == dst.size, "pairs.dst", f"{dst.size} routers", f"one per source router ({src.size})")
        keep = src != dst
        return cls(src[keep] * n_routers + dst[keep], n_routers)

    @property
    def src(self) -> Int[np.ndarray, "pair"]:
        return self.keys // self.n_routers

    @property
    def dst(self) -> Int[np.ndarray, "pair"]:
        return self.keys % self.n_routers

    def __len__(self) -> int:
        return int(self.keys.size)

    def __hash__(self) -> int:
        return hash(self._digest)

    def __eq__(self, other) -> bool:
        return isinstance(other, PairSet) and other._digest == self._digest

    def __repr__(self) -> str:
        return f"PairSet({len(self)} pairs of {self.n_routers} routers, {self._digest[:8]})"


def _int_array(field: str, values) -> Int[np.ndarray, "entry"]:
    """``values`` as a flat int64 array; non-integers (1.7 was truncated to 1, strings, NaN) are a ConfigError."""
    return int_array(field, values, "integer router ids (keys s * R + d)").reshape(-1)


def _demand(demand, n: int) -> Float[np.ndarray, "entry"]:
    """The bytes of each of ``n`` key entries: finite, >= 0, one per entry (a single number is not broadcast)."""
    try:
        d = np.asarray(demand, np.float64).reshape(-1)
    except (TypeError, ValueError):
        raise ConfigError("pairs.demand", demand, f"{n} byte counts, one per key") from None
    if d.size != n:
        raise ConfigError("pairs.demand", f"{d.size} values", f"one byte count per key ({n} keys)")
    bad = ~np.isfinite(d) | (d < 0)
    if bad.any():
        raise ConfigError("pairs.demand", float(d[np.argmax(bad)]), "finite bytes >= 0 per key")
    return d


@dataclasses.dataclass(frozen=True)
class PathSetRouting(Routing):
    """A path-set routing: ``k`` candidate paths per pair (Yen), a hop limit, and the bound pairs.

    Attributes
    ----------
    k
        Paths per pair searched by Yen's algorithm (``kshortest``: used; ``optiq_heuristic``: candidates).
    hop_limit
        Longest path kept, in router-to-router hops (None: no limit).
    maxload
        ``optiq_heuristic`` only: the initial bound on paths per link (raised where a pair would get none).
    pairs
        The router pairs the operator serves (:class:`PairSet`), None: every pair (small topologies only).
    """

    kind: str = "kshortest"
    k: int = 4
    hop_limit: int | None = None
    maxload: int | None = None
    pairs: PairSet | None = None

    @property
    def label(self) -> str:
        lim = "" if self.hop_limit is None else f"-h{self.hop_limit}"
        ml = "" if self.maxload is None else f"-m{self.maxload}"
        return f"{self.kind}-k{self.k}{lim}{ml}"

    def bind(self, pairs: PairSet) -> "PathSetRouting":
        """This spec bound to ``pairs``."""
        if not isinstance(pairs, PairSet):  # (a list failed in the cache as unhashable, a name with AttributeError)
            raise ConfigError("routing.pairs", pairs, "a PairSet (e.g. PairSet.of(src_routers, dst_routers, R))")
        return dataclasses.replace(self, pairs=pairs)

    @property
    def needs_pairs(self) -> bool:
        """True until the spec is bound to a pair set (an unbound spec is compiled for every router pair only
        through :func:`~evaluator.routing.build_routing` on a small topology)."""
        return self.pairs is None

    def bind_pairs(self, point_pairs, n_routers: int) -> list[tuple[Routing, list[int]]]:
        """One spec bound to the union of the points' pairs, for every point (a pair's paths do not depend on the
        other pairs: ``kshortest``). See :meth:`~evaluator.routing.base.Routing.bind_pairs`."""
        keys = [np.asarray(k, np.int64) for k, _ in point_pairs]
        union = PairSet(np.concatenate(keys) if keys else np.zeros(0, np.int64), n_routers)
        return [(self.bind(union), list(range(len(point_pairs))))]

    def paths_per_pair(self, n_points: int, op: RoutingOperator | None = None, point_keys=None
                       ) -> Float[np.ndarray, "point"]:
        """The router paths carrying each communicating pair's bytes under ``op``, averaged over a point's pairs
        (:func:`paths_per_pair`); NaN where the operator does not count them."""
        if op is None or op.pair_paths is None or point_keys is None:
            return np.full(n_points, np.nan)
        return paths_per_pair(op, point_keys())

    def check_size(self, topo: Topology, n_pairs: int) -> None:
        """Refuse (:class:`~evaluator.errors.ResourceError`) a path table for ``n_pairs`` router pairs on
        ``topo`` that does not fit in memory: the check :func:`path_table` makes, from the counts alone, so
        that a caller can make it before it lists the pairs (an all-to-all on 4,096 routers has 16.7 M)."""
        k = int(self.k)
        hops = hop_bound(topo, self)
        check_memory("routing", self.label, table_bytes(n_pairs, k * n_pairs, hop_bucket(hops)),
                     f"its path table on {topo.name} ({n_pairs:,} router pairs x up to {k} paths x up to "
                     f"{hops} hops)", "Use fewer paths per pair (routing.k), a hop limit, or fewer communicating "
                     "pairs.")


def check_k(k) -> int:
    """``k`` as an int >= 1, else a :class:`ConfigError` naming ``routing.k``."""
    if isinstance(k, bool) or not is_int(k) or int(k) < 1:
        raise ConfigError("routing.k", k, "an integer >= 1 (paths per router pair)",
                          "k = 1 is the single shortest path; Bui et al. use up to 16.")
    return int(k)


def check_hop_limit(hop_limit) -> int | None:
    """``hop_limit`` as None or an int >= 1."""
    if hop_limit is None:
        return None
    if isinstance(hop_limit, bool) or not is_int(hop_limit) or int(hop_limit) < 1:
        raise ConfigError("routing.hop_limit", hop_limit, "null (no limit) or an integer >= 1 (router hops)")
    return int(hop_limit)



PATH_STATE_BYTES = 256_000_000
"""Budget of the Yen search states (:meth:`~evaluator.routing._yen._Yen.nbytes`) kept per topology: beyond it the
least recently used pairs keep their found paths only (a later larger ``k`` searches such a pair again from scratch;
its first paths do not depend on ``k``). A 16x16x16 torus permutation with k = 16 holds about 530 MB of states, a
32x32x32 one about 8 GB."""

PATH_FOUND_BYTES = 512_000_000
"""Budget of the found paths kept per topology (a tuple of ``L`` routers: ``56 + 8 L`` bytes a path); beyond it the
least recently used pairs are forgotten (searched again when asked)."""


class _PairCache:
    """One topology's saved searches, least recently used first: ``entries[(s, t, hop_limit)] = [state or None,
    found paths, done, state bytes, path bytes]`` and ``live`` (the keys whose state is kept), under
    :data:`PATH_STATE_BYTES` and :data:`PATH_FOUND_BYTES`."""

    __slots__ = ("entries", "live", "state_bytes", "path_bytes", "__weakref__")

    def __init__(self):
        self.entries: collections.OrderedDict = collections.OrderedDict()
        self.live: collections.OrderedDict = collections.OrderedDict()
        self.state_bytes = 0
        self.path_bytes = 0

    def paths(self, graph: RouterGraph, s: int, t: int, k: int, hop_limit: int | None) -> list[tuple[int, ...]]:
        key = (s, t, hop_limit)
        e = self.entries.get(key)
        if e is None:
            e = self.entries[key] = [None, [], False, 0, 0]
        else:
            self.entries.move_to_end(key)
            if e[0] is None and (len(e[1]) >= k or e[2]):
                return e[1][:k]
        state = e[0]
        if state is None:                                  # new, or dropped to its paths: searched from scratch
            state = _Yen(graph, s, t, hop_limit)
        out = state.extend(k)
        e[1], e[2] = state.A, state.done
        nb = 0 if state.done else state.nbytes()           # a finished search keeps its paths only
        pb = len(state.A) * (56 + 8 * (len(state.A[-1]) if state.A else 0))
        self.state_bytes += nb - e[3]
        self.path_bytes += pb - e[4]
        e[0], e[3], e[4] = (None if state.done else state), nb, pb
        if e[0] is None:
            self.live.pop(key, None)
        else:
            self.live[key] = None
            self.live.move_to_end(key)
        self._trim(key)
        return out

    def _trim(self, keep) -> None:
        """Drop the oldest states to their paths, then the oldest pairs, until both budgets hold (never ``keep``)."""
        while self.state_bytes > PATH_STATE_BYTES and len(self.live) > 1:
            key = next(iter(self.live))
            if key == keep:
                self.live.move_to_end(key)
                key = next(iter(self.live))
            del self.live[key]
            e = self.entries[key]
            self.state_bytes -= e[3]
            e[0], e[3] = None, 0
        while self.path_bytes > PATH_FOUND_BYTES and len(self.entries) > 1:
            key = next(iter(self.entries))
            if key == keep:
                self.entries.move_to_end(key)
                key = next(iter(self.entries))
            e = self.entries.pop(key)
            self.live.pop(key, None)
            self.state_bytes -= e[3]
            self.path_bytes -= e[4]


_PATH_CACHE: "weakref.WeakKeyDictionary[Topology, _PairCache]" = weakref.WeakKeyDictionary()


def _pair_paths(topo: Topology, s: int, t: int, k: int, hop_limit: int | None) -> list[tuple[int, ...]]:
    """:func:`yen_paths` of one pair, cached per topology (:class:`_PairCache`): a larger ``k`` later continues the
    same search while its state is kept, else searches again (the same first paths)."""
    cache = _PATH_CACHE.get(topo)
    if cache is None:
        cache = _PATH_CACHE[topo] = _PairCache()
    return cache.paths(router_graph(topo), s, t, k, hop_limit)


# --------------------------------------------------------------------------------------
# the padded path table
# --------------------------------------------------------------------------------------


def hop_bucket(h: int) -> int:
    """Padded hop count: the next multiple of 4 (at least 4)."""
    return max(4, -(-int(h) // 4) * 4)


@dataclasses.dataclass(frozen=True, eq=False)
class PathTable:
    """Paths of a set of router pairs, padded (host side, NumPy).

    Attributes
    ----------
    n_routers, n_router_links
        Of the topology (``n_router_links`` is the padding link id).
    pair_src, pair_dst : int ndarray, shape [pair]
        The pairs, sorted by key ``src * n_routers + dst``.
    path_pair : int ndarray, shape [path]
        Index of each path's pair (paths of a pair are contiguous, in Yen order).
    path_links : int ndarray, shape [path, hop]
        Router-link ids in travel order, padded with ``n_router_links``.
    path_hops : int ndarray, shape [path]
        Hops of each path.
    path_weight : float ndarray, shape [path]
        Fraction of the pair's bytes on each path (sums to 1 per pair).
    """

    n_routers: int
    n_router_links: int
    pair_src: Int[np.ndarray, "pair"]
    pair_dst: Int[np.ndarray, "pair"]
    path_pair: Int[np.ndarray, "path"]
    path_links: Int[np.ndarray, "path hop"]
    path_hops: Int[np.ndarray, "path"]
    path_weight: Float[np.ndarray, "path"]

    @property
    def n_pairs(self) -> int:
        return int(self.pair_src.size)

    @property
    def n_paths(self) -> int:
        return int(self.path_pair.size)

    def paths_of(self, i: int) -> list[list[int]]:
        """Router-link ids of every path of pair ``i``."""
        rows = np.nonzero(self.path_pair == i)[0]
        return [self.path_links[r, : self.path_hops[r]].tolist() for r in rows]

    def with_weights(self, weight: Float[np.ndarray, "path"]) -> "PathTable":
        """The same paths with other weights (e.g. an LP split; each pair's must sum to 1)."""
        w = np.asarray(weight, np.float64)
        assert w.shape == self.path_weight.shape
        return dataclasses.replace(self, path_weight=w)

    def select(self, keep: Bool[np.ndarray, "path"]) -> "PathTable":
        """The paths where ``keep``, each pair's demand split evenly over its kept paths."""
        keep = np.asarray(keep, bool)
        pp = self.path_pair[keep]
        cnt = np.bincount(pp, minlength=self.n_pairs)
        return dataclasses.replace(self, path_pair=pp, path_links=self.path_links[keep],
                                   path_hops=self.path_hops[keep], path_weight=1.0 / cnt[pp])


def table_bytes(n_pairs: int, n_paths: float, hops: int) -> float:
    """Estimated bytes of a :class:`PathTable` and its operator: host and device copies, one point's scatter
    (``n_paths`` a float where it is counted before the paths are made: it can pass int64 before it is refused)."""
    return 2 * (4 * n_paths * hops + 16 * n_paths + 24 * n_pairs) + 12 * n_paths * hops


def hop_bound(topo: Topology, routing: PathSetRouting) -> int:
    """The longest path the size estimates assume: ``diameter bound + 2 k`` (Yen's ``k`` shortest paths of a
    pair are found within a few hops of its distance on these topologies), or the hop limit where that is
    smaller (a hop limit of 10^8 on an 8x8 torus bounds nothing)."""
    H = topo.diameter_bound() + 2 * int(routing.k)
    return H if routing.hop_limit is None else min(int(routing.hop_limit), H)


HOP_BYTES = 48
"""Host bytes per router hop of the found paths while they become a table (their padded router, count, start and
suffix-product matrices, int64)."""

ROW_BYTES = 40
"""Host bytes of one link-id path while the table is filled, beyond the table itself (its router path and
expansion index, and one column's temporaries)."""


def _link_rows(graph: RouterGraph, found: list[list[tuple[int, ...]]], check) -> tuple:
    """The link-id rows of the router paths ``found`` (per pair, in order): ``(path_pair, links, hops, weight)``.

    A router path's hops ``x -> y`` are looked up in :meth:`RouterGraph.edge_table` (a binary search); a hop
    with ``c`` parallel links multiplies the rows: the path's rows are every choice of one link per hop, the
    last hop's varying fastest, each with weight ``(1 / c_1) / c_2 ... / (paths of the pair)`` (divided in this
    order). ``check(n_rows, longest)`` is called with the row count (a float: it can exceed int64 before it is
    refused) before any per-row array is made (the per-hop matrices of the router paths, made before it, are
    the size of the found paths' tuples already held). NumPy throughout: no per-path Python list.
    """
    R = graph.n_routers
    n_per_pair = np.fromiter((len(p) for p in found), np.int64, count=len(found))
    plen = np.fromiter((len(x) for p in found for x in p), np.int64, count=int(n_per_pair.sum()))
    nodes = np.fromiter(itertools.chain.from_iterable(itertools.chain.from_iterable(found)), np.int64,
                        count=int(plen.sum()))
    P, hops = plen.size, plen - 1
    Hm = int(hops.max()) if P else 1
    first = np.cumsum(plen) - plen                            # each path's start in nodes (none: no pair)
    pos = np.arange(nodes.size, dtype=np.int64) - np.repeat(first, plen)
    grid = np.full((P, Hm + 1), -1, np.int64)                 # router j of every path, -1 past its end
    grid[np.repeat(np.arange(P), plen), pos] = nodes
    keys, start, count, lids = graph.edge_table()
    on = np.arange(Hm) < hops[:, None]                        # [path, hop]: a hop of the path
    e = np.searchsorted(keys, (grid[:, :-1] * R + grid[:, 1:])[on])
    cnt = np.ones((P, Hm), np.int64)
    beg = np.zeros((P, Hm), np.int64)
    cnt[on], beg[on] = count[e], start[e]
    check(float(np.prod(cnt.astype(np.float64), axis=1).sum()), Hm)
    w = np.ones(P)
    for j in range(Hm):
        w = w / cnt[:, j]                                     # padding hops divide by 1
    path_of_pair = np.repeat(np.arange(n_per_pair.size), n_per_pair)
    w = w / n_per_pair[path_of_pair]
    H = hop_bucket(Hm)
    if (cnt == 1).all():                                      # no parallel links: one row a router path
        links = np.full((P, H), graph.n_router_links, np.int32)
        links[:, :Hm][on] = lids[beg[on]]
        return path_of_pair.astype(np.int32), links, hops.astype(np.int32), w
    suffix = np.ones((P, Hm), np.int64)                       # links of the hops after j: the digit's place value
    for j in range(Hm - 2, -1, -1):
        suffix[:, j] = suffix[:, j + 1] * cnt[:, j + 1]
    expand = suffix[:, 0] * cnt[:, 0]
    n = int(expand.sum())
    rp = np.repeat(np.arange(P), expand)                      # the router path of every row
    x = np.arange(n, dtype=np.int64) - np.repeat(np.cumsum(expand) - expand, expand)
    links = np.full((n, H), graph.n_router_links, np.int32)
    rh = hops[rp]
    for j in range(Hm):
        sel = j < rh
        r = rp[sel]
        links[sel, j] = lids[beg[r, j] + (x[sel] // suffix[r, j]) % cnt[r, j]]
    return path_of_pair[rp].astype(np.int32), links, rh.astype(np.int32), w[rp]


def _no_path(topo: Topology, routing: PathSetRouting, s: int, t: int, dist: int) -> ConfigError:
    """The error of router pair ``(s, t)`` without a path (``dist`` hops apart, -1: unreachable)."""
    if dist < 0:
        return ConfigError("routing", routing.label, f"a topology where router {s} reaches router {t}",
                           f"Router pair ({s}, {t}) of {topo.name} has no path.")
    return ConfigError("routing.hop_limit", routing.hop_limit,
                       f"at least {dist} (router pair ({s}, {t}) of {topo.name} is {dist} hops apart)",
                       "Raise the hop limit or set it to null.")


def unroutable_pair(topo: Topology, routing: PathSetRouting, keys: Int[np.ndarray, "pair"]) -> ConfigError | None:
    """The error :func:`path_table` raises for the first pair of ``keys`` (``src * R + dst``) it cannot route.

    A pair has a path within ``routing.hop_limit`` iff its BFS distance is at
    most the limit (Yen's first path is a shortest one), so this checks
    distances only (one cached BFS per destination), no path search. None:
    every pair is routable. Lets a sweep mark infeasible only the points
    whose traffic holds such a pair (:mod:`evaluator.sweep.worker`).
    """
    R = int(topo.n_routers)
    keys = np.unique(np.asarray(keys, np.int64).reshape(-1))
    if keys.size == 0:
        return None
    graph = router_graph(topo)
    src, dst = keys // R, keys % R
    limit = (1 << 30) if routing.hop_limit is None else int(routing.hop_limit)
    dist = np.empty(keys.size, np.int64)
    for t in np.unique(dst).tolist():
        sel = dst == t
        dist[sel] = graph.dist_to(int(t))[src[sel]]
    bad = np.nonzero((dist < 0) | (dist > limit))[0]
    if bad.size == 0:
        return None
    i = int(bad[0])
    return _no_path(topo, routing, int(src[i]), int(dst[i]), int(dist[i]))


def path_table(topo: Topology, routing: PathSetRouting, pairs: PairSet | None) -> PathTable:
    """Yen's ``routing.k`` paths (within ``routing.hop_limit``) of every pair, demand split evenly.

    ``pairs`` None: every ordered router pair (at most
    :data:`ALL_PAIRS_MAX_ROUTERS` routers). Refused with a
    :class:`~evaluator.errors.ResourceError` before any search when the
    estimate ``k x pairs x hops`` of :func:`table_bytes` does not fit in memory,
    and after it when the table found does not;
    a pair without a path within the hop limit is a :class:`ConfigError`
    naming the pair and its distance.
    """
    R = int(topo.n_routers)
    if pairs is None:
        if R > ALL_PAIRS_MAX_ROUTERS:
            raise ConfigError("routing.kind", routing.kind,
                              f"a routing bound to its communicating pairs on {topo.name} ({R} routers > "
                              f"{ALL_PAIRS_MAX_ROUTERS})",
                              "Evaluate through evaluator.evaluate / evaluate_batch, which bind the pairs of the "
                              "traffic, or bind them yourself: routing.bind(PairSet.of(src, dst, n_routers)).")
        s, d = np.nonzero(~np.eye(R, dtype=bool))
        pairs = PairSet.of(s, d, R)
    if pairs.n_routers != R:
        raise ConfigError("routing.pairs", pairs, f"pairs of the {R} routers of {topo.name}")
    k = int(routing.k)
    routing.check_size(topo, len(pairs))
    graph = router_graph(topo)
    src, dst = pairs.src.tolist(), pairs.dst.tolist()
    found = []
    # a search of minutes (k = 16 on a 32x32x32 torus's permutation) says so on stderr, not silent: a bar of the
    # pairs done once it has run PROGRESS_DELAY_S (made then: tqdm's own delay never shows a log file's bar)
    bar, since = None, time.monotonic()
    try:
        for i, (s, t) in enumerate(zip(src, dst)):
            paths = _pair_paths(topo, s, t, k, routing.hop_limit)
            if not paths:
                raise _no_path(topo, routing, s, t, int(graph.dist_to(t)[s]))
            found.append(paths)
            if bar is not None:
                bar.update()
            elif not i & 63 and time.monotonic() - since >= PROGRESS_DELAY_S:
                bar = progress_bar(total=len(src), initial=i + 1, unit="pair", leave=False,
                                   desc=f"{routing.label} paths on {topo.name}")
    finally:
        if bar is not None:
            bar.close()
    # the link-id paths counted before they are made: parallel links multiply them (a fat tree's 4-hop router
    # path over 32 parallel links a tier is 32^4 = 1,048,576 link-id paths)
    def check(n: float, longest: int) -> None:
        H = hop_bucket(longest)
        need = n * ROW_BYTES + table_bytes(len(src), n, H) + HOP_BYTES * (longest + 1) * sum(map(len, found))
        check_memory("routing", routing.label, need,
                     f"its {int(n):,} link-id paths on {topo.name} while they are listed ({len(src):,} router pairs, "
                     f"up to {longest} hops; parallel links multiply a router path)",
                     "Use fewer paths per pair (routing.k), a hop limit, fewer communicating pairs or fewer "
                     "parallel links.")
        # the sizes found, checked again before the table is allocated: the estimate before the search is no
        # bound (a 60-ring's second path of (0, 1) has 59 hops, not the 34 assumed; parallel links multiply paths)
        check_memory("routing", routing.label, table_bytes(len(src), int(n), H),
                     f"its path table on {topo.name} ({len(src):,} router pairs, {int(n):,} paths, padded to {H} "
                     "hops)", "Use fewer paths per pair (routing.k), a hop limit, or fewer communicating pairs.")

    rows_pair, links, hops, rows_w = _link_rows(graph, found, check)
    return PathTable(R, graph.n_router_links, np.asarray(src, np.int64), np.asarray(dst, np.int64),
                     rows_pair, links, hops, rows_w)


# --------------------------------------------------------------------------------------
# the operator
# --------------------------------------------------------------------------------------


def _bucket(n: int) -> int:
    """Padded count: the next power of two up to 64, then steps of an eighth of the power of two."""
    n = max(int(n), 1)
    p = 1 << max(0, int(np.ceil(np.log2(n))))
    if p > 64:
        q = p // 8
        p = -(-n // q) * q
    return max(16, p)


@dataclasses.dataclass(frozen=True, eq=False)
class PathSetOperator(RoutingOperator):
    """The operator of a path table: :meth:`route` refuses a router pair the table does not serve (its ``apply``
    drops such a flow's bytes, so the route would come back empty as if the flow crossed no link)."""

    def route(self, topology, src: int, dst: int):
        links, frac = super().route(topology, src, dst)
        if int(src) != int(dst) and links.size == 0:
            keys = self.pair_paths[0]
            key = int(src) * int(topology.n_routers) + int(dst)
            j = int(np.searchsorted(keys, key))
            if j >= keys.size or int(keys[j]) != key:
                raise ConfigError("(src, dst)", (int(src), int(dst)),
                                  f"one of the {keys.size} router pairs this {self.routing.label} operator is bound to",
                                  "Bind a PairSet holding the pair: routing.bind(PairSet.of(src, dst, n_routers)).")
        return links, frac


def path_operator(topo: Topology, routing: Routing, table: PathTable) -> RoutingOperator:
    """The :class:`RoutingOperator` of a path table (host tables padded to buckets, jit-compatible functions).

    ``apply`` looks each flow's pair up by key (a binary search over the
    sorted pair keys; a flow whose pair is not in the table, or with ``src
    == dst``, adds nothing), sums the bytes per pair, and scatters ``pair
    bytes x path weight`` onto every link of every path: ``O(flows + paths x
    hops)`` per point. ``apply_dense`` takes the pair demand ``u[src] v[dst]``
    directly. Padding pairs have an impossible key, padding paths weight 0
    and padding hops the dummy link ``n_router_links`` (dropped). The operator is a :class:`PathSetOperator`,
    whose ``route`` refuses a pair outside the table instead of answering with no links.
    """
    R, n_rl = table.n_routers, table.n_router_links
    P, N, H = _bucket(table.n_pairs), _bucket(table.n_paths), table.path_links.shape[1]
    key = np.full(P, np.iinfo(np.int64).max, np.int64)
    key[: table.n_pairs] = table.pair_src * R + table.pair_dst
    psrc = np.zeros(P, np.int32)
    pdst = np.zeros(P, np.int32)
    psrc[: table.n_pairs] = table.pair_src
    pdst[: table.n_pairs] = table.pair_dst
    ppair = np.zeros(N, np.int32)
    ppair[: table.n_paths] = table.path_pair
    plinks = np.full((N, H), n_rl, np.int32)
    plinks[: table.n_paths] = table.path_links
    pw = np.zeros(N, np.float64)
    pw[: table.n_paths] = table.path_weight
    tables = {"pair_key": key, "pair_src": psrc, "pair_dst": pdst, "path_pair": ppair, "path_links": plinks,
              "path_weight": pw}

    def spread(tables, pair_bytes):
        """Router-link loads from the bytes of every pair."""
        per_path = take(pair_bytes, tables["path_pair"]) * tables["path_weight"]
        vals = jnp.broadcast_to(per_path[:, None], (N, H)).reshape(-1)
        return segment_add(vals, tables["path_links"].reshape(-1), n_rl + 1)

    def apply(tables, src, dst, weight, extra=None):
        k = src.astype(jnp.int64) * R + dst.astype(jnp.int64)
        i = jnp.clip(jnp.searchsorted(tables["pair_key"], k), 0, P - 1).astype(jnp.int32)
        found = take(tables["pair_key"], i) == k
        pair_bytes = segment_add(jnp.where(found, weight, 0.0), i, P)
        loads = spread(tables, pair_bytes)
        return with_extra(loads[:n_rl], extra)

    def apply_dense(tables, u, v):
        pair_bytes = take(u, tables["pair_src"]) * take(v, tables["pair_dst"])
        pair_bytes = jnp.where(tables["pair_key"] < np.iinfo(np.int64).max, pair_bytes, 0.0)
        return spread(tables, pair_bytes)[:n_rl]

    nnz = int(sum(t.size for t in tables.values()))
    return PathSetOperator(routing, topo.name, tables, apply, apply_dense, nnz, compile_key=("paths", R, n_rl, P, N, H),
                           pair_paths=(key[: table.n_pairs].copy(), pair_path_counts(topo, table)))


# --------------------------------------------------------------------------------------
# paths per pair (the dataset variable ``paths_per_pair``)
# --------------------------------------------------------------------------------------


SHARE_TOL = 1e-9
"""A router path counts towards ``paths_per_pair`` when it carries more than this fraction of its pair's bytes."""

def pair_path_counts(topo: Topology, table: PathTable, tol: float = SHARE_TOL) -> Int[np.ndarray, "pair"]:
    """Distinct router paths of every pair of ``table`` that carry more than ``tol`` of the pair's bytes.

    A router path is a pair's sequence of routers: the rows of its
    parallel-link copies (:func:`_link_rows`) count once, with their shares
    summed. ``kshortest``: the Yen paths found (``<= k``); ``optiq_heuristic``:
    the selected ones; ``optiq_lp``: those with a positive LP share (more than
    ``tol`` of the pair's demand).
    """
    if table.n_paths == 0:
        return np.zeros(table.n_pairs, np.int64)
    n_rl, R = int(table.n_router_links), int(table.n_routers)
    after = np.append(np.asarray(topo.link_dst[:n_rl], np.int64), -1)  # the router each hop reaches; padding: -1
    routers = after[table.path_links] + 1                               # in [0, R]
    pair = np.asarray(table.path_pair, np.int64)
    # equal rows found by sorting: the routers packed into 64-bit words (b bits a router, 63 // b a word), sorted
    # with the pair by np.lexsort (np.unique(axis=0) compared whole rows as bytes: 0.4 s on 65,536 rows)
    b = max(1, int(R).bit_length())
    per = max(1, 63 // b)
    words = [pair]
    for j0 in range(0, routers.shape[1], per):
        w = np.zeros(routers.shape[0], np.int64)
        for j in range(j0, min(j0 + per, routers.shape[1])):
            w |= routers[:, j] << (b * (j - j0))
        words.append(w)
    order = np.lexsort(words[::-1])
    new = np.zeros(order.size, bool)
    new[0] = True
    for w in words:
        ws = w[order]
        new[1:] |= ws[1:] != ws[:-1]
    inv = np.empty(order.size, np.int64)
    inv[order] = np.cumsum(new) - 1
    share = np.bincount(inv, weights=np.asarray(table.path_weight, np.float64), minlength=int(new.sum()))
    route_pair = pair[order][new]
    return np.bincount(route_pair[share > tol], minlength=table.n_pairs).astype(np.int64)


def paths_per_pair(op: RoutingOperator, point_keys: Sequence[Int[np.ndarray, "pair"]]) -> Float[np.ndarray, "point"]:
    """Mean over each point's communicating router pairs (unweighted) of the router paths carrying its bytes.

    ``point_keys[i]``: the keys ``src * R + dst`` of point ``i``'s pairs (any
    order, repeats allowed); a pair the operator does not serve counts 0 (its
    bytes are dropped); a point without pairs (every byte stays on a router)
    is NaN.
    """
    keys, counts = op.pair_paths
    out = np.full(len(point_keys), np.nan)
    for i, k in enumerate(point_keys):
        k = np.unique(np.asarray(k, np.int64))
        if k.size == 0:
            continue
        j = np.clip(np.searchsorted(keys, k), 0, max(keys.size - 1, 0))
        found = keys[j] == k if keys.size else np.zeros(k.size, bool)
        out[i] = float(np.where(found, counts[j] if keys.size else 0, 0).mean())
    return out


def bind_by_pair_set(routing: PathSetRouting, sets: Sequence[PairSet]) -> list[tuple[Routing, list[int]]]:
    """``routing`` bound to each distinct pair set of ``sets`` (point ``i``'s is ``sets[i]``), with the points
    that have it, in order of first appearance: the :meth:`~PathSetRouting.bind_pairs` of routings whose paths
    depend on every pair of the point (``optiq_heuristic``) or on its demand (``optiq_lp``)."""
    groups: dict[PairSet, list[int]] = {}
    for i, ps in enumerate(sets):
        groups.setdefault(ps, []).append(i)
    return [(routing.bind(ps), idx) for ps, idx in groups.items()]


def path_incidence(table: PathTable):
    """The hook of an LP split (Bui et al. Model 1, ``optiq_lp``) over a path table.

    Returns ``(incidence, path_pair)``: ``incidence`` a
    ``scipy.sparse.csr_matrix`` of shape ``[router_link, path]`` with 1 where
    the path crosses the link (parallel copies of one hop are separate
    paths already), and ``path_pair: Int[ndarray, "path"]`` the pair of each
    path (``table.pair_src/pair_dst``). Model 1 is then: maximise ``Z``
    subject to ``sum_{p of pair j} f_p = demand_j Z`` and ``incidence @ f <=
    capacity[:n_router_links]``, ``f >= 0``; the split ``f_p / sum_{pair}
    f`` goes back through :meth:`PathTable.with_weights` and
    :func:`path_operator`.
    """
    import scipy.sparse as sp

    rows = table.path_links.reshape(-1)
    cols = np.repeat(np.arange(table.n_paths), table.path_links.shape[1])
    keep = rows < table.n_router_links
    inc = sp.csr_matrix((np.ones(int(keep.sum())), (rows[keep], cols[keep])),
                        shape=(table.n_router_links, table.n_paths))
    return inc, table.path_pair.copy()
