"""Fat-tree routings: ``dmodk`` (deterministic D-mod-k up*/down*), ``ecmp`` (hashed ECMP: one path per flow,
chosen by a seeded hash) and ``ecmp_spray`` (an ideal per-packet spraying: the even fluid split over every
up port).

All three route up*/down* on shortest paths: from the source leaf up to the
nearest common ancestor level ``l`` (the lowest level whose subtree holds
both hosts: their host labels agree on ``x_h .. x_{l+1}``), then down the
unique path to the destination. Ids and labels are those of
:mod:`evaluator.topology._fat_tree` (XGFT(h; m; w), tier ``t`` joining
levels ``t`` and ``t + 1``, ``pl_t`` its parallel links, ``U_t = w_{t+1} pl_t``
up ports per level-``t`` switch, port ``u`` leading to parent digit ``u //
pl_t``).

* ``dmodk`` (Zahavi's D-Mod-K, the destination-based up-port rule of
  InfiniBand fat-tree routing engines such as OpenSM's ``ftree``, and of
  SimGrid's ``FAT_TREE`` zone): going up from a level-``t`` switch a packet
  for destination *node* ``d`` takes up port ``v_t(d) = floor(d / (w_1 w_2
  ... w_t)) mod U_t``: one destination digit per level, in the mixed radix of
  the parents, that chooses among *all* ``U_t = w_{t+1} pl_t`` up ports of the
  level (parents times parallel links), the ports numbered parent fastest:
  port ``v`` leads to parent digit ``y_{t+1} = v mod w_{t+1}`` over parallel
  copy ``v div w_{t+1}`` (our port number ``y_{t+1} pl_t + v div w_{t+1}``).
  The parent digit is then the digit of the same tree without parallel links,
  ``floor(d / (w_1 ... w_t)) mod w_{t+1}``, and the copy spreads by the next
  digit. This is the rule of E. Zahavi, "D-Mod-K routing providing
  non-blocking traffic for shift permutations on real life fat trees"
  (Technion CCIT report 776, 2010; parallel-port generalized fat trees) and of
  SimGrid's ``FAT_TREE`` zone (``FatTreeZone::get_local_route``, with its port
  order ``parent + copy * w``). Until issue 35 the divisor was ``U_1 ...
  U_{t-1}`` (parents times links) and the copy the low digit: with parallel
  links whole top switches then went unused (the 4-ary 3-tree with 2 links per
  switch pair left 96 of its 128 top-to-pod links idle under all-to-all, 1.52x
  the ECMP time; now it equals it).
  The up ports
  depend on ``d`` only, so the switch a packet reaches at level ``t`` has the
  digits ``y_t .. y_1`` of ``d``'s ports below it, whatever the source; the
  down path goes through the switches with the same digits, each down link
  being the reverse of the up link that ``d``'s own subtree would take
  (same parallel copy: every switch forwards by destination only, as an
  InfiniBand linear forwarding table does). One path per (source node,
  destination node); on a k-ary n-tree a shift permutation loads no link with
  more than one flow (Zahavi et al. 2010), and on any untapered tree,
  parallel links or not, neither does a shift by a multiple of a leaf's node
  count (tests/test_fat_tree.py). The operator routes by node
  (:attr:`~evaluator.routing.base.RoutingOperator.endpoints`: every node is
  its own endpoint).
* ``ecmp`` (hashed ECMP, what a switch's ECMP does): each flow (source node,
  destination node) takes one path. Going up from a level-``t`` switch it
  takes up port ``u = H(seed, 2 (t - 1), a, d) mod U_t`` (any of the
  ``w_{t+1} pl_t`` ports: port ``u`` leads to parent digit ``u // pl_t``
  over copy ``u % pl_t``); going down from level ``t + 1`` to level ``t``
  (the switch is fixed by the digits chosen on the way up and ``d``'s label)
  it takes parallel copy ``H(seed, 2 (t - 1) + 1, a, d) mod pl_t``.
  ``H(seed, stream, a, d)`` is the first word of Threefry-2x32-20 (the
  counter-based generator of the seeded placements) with key ``(seed,
  stream)`` and counter ``(a, d)``: a uniform, independent choice per flow,
  tier and direction for every seed (the modulo's bias is below ``U_t /
  2^32``), the same on the host and the device. One seed (an integer in
  ``[0, 2^32)``) is one hash function, i.e. one draw of the routing; its
  answer is a distribution over seeds: evaluate the specs of
  :func:`ecmp_seeds` (one compilation for all) or sweep ``routing.seed``,
  and :func:`ecmp_seed_summary` gives the expectation and the 95th
  percentile of the completion time over the seeds.
* ``ecmp_spray`` (an ideal per-packet spraying; before issue 35 this was
  ``ecmp``): every switch splits a flow evenly over all its up ports on the
  way up, and over the parallel links to the next switch on the way down (the
  expectation of hashed ECMP over seeds, and the load of a perfect packet
  sprayer). A flow from leaf ``s`` crossing tier ``t`` then loads each of the ``Y_t U_t`` up links of the
  tier leaving ``s``'s level-``t`` subtree with ``1 / (Y_t U_t)`` of its
  bytes (``Y_t = w_1 ... w_t``), and each of the ``Y_t U_t`` down links of the
  tier entering the destination's subtree with the same share. The maximum of
  expected loads is not the expected maximum: on the 8-ary 3-tree with 12.5
  GB/s links a random permutation of 32 MB flows takes 2.56 ms sprayed and
  13.4 ms in expectation hashed (seeds 0-199; 95th percentile 15.4 ms, 4 to
  7 flows on the busiest link).

How the operators work
----------------------
No router pair is listed. ``ecmp_spray`` sums, per tier ``t``, the bytes leaving
and entering every level-``t`` subtree (flows whose two leaves lie in
different level-``t`` subtrees) and spreads each sum evenly over that
subtree's up (down) links of the tier. Two scatters per flow, whatever the
tiers: its bytes by (source leaf, tiers climbed) and by (destination leaf,
tiers climbed), into ``2 x leaves x h`` sums (a subtree's bytes out of tier
``t`` are its leaves' sums over the flows that climb ``t`` tiers or more);
then a broadcast. (Until 2026-12-08 two scatters per tier into the links'
sums; the 24-ary 3-tree's stencil point 10-15 % faster since.) For dense rank-one traffic the sums are ``u_sub (V -
v_sub)`` and ``v_sub (U - u_sub)`` of per-subtree sums of the router weights.
``dmodk`` adds every flow's bytes straight to its up link and its down link
of every tier it crosses (the link ids are the subtree index times ``Y_t U_t``
plus a per-destination code ``yy_t(d) U_t + u_t(d)``, a ``[tier, node]``
table). Dense: per tier, ``v`` summed per (subtree, code) (one scatter over
the nodes) gives the down links at once, ``v_code[X, k] (U - u_sub[X])``, and
the up links are ``u_sub[X] (v_code_total[k] - v_code[X, k])`` (clamped at 0:
exact in exact arithmetic).

:func:`dmodk_paths`, :func:`ecmp_paths` (``ecmp_spray``'s paths) and
:func:`ecmp_hash_paths` walk one (source node, destination node) pair hop by
hop and return its weighted link-id paths (the per-flow reference of the
bench and the tests). ``ecmp`` computes every flow's hashes on the device and
adds its bytes to its up and down link of every tier it crosses (as
``dmodk``, with the port from the hash instead of the destination's digit);
dense traffic loops over the source nodes, all destinations at once
(``O(N^2)`` work, ``O(N)`` memory).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from .._threefry import threefry2x32, threefry2x32_int
from .._ops import add_at, add_extra, fused_size, segment_add, take
from .._types import Int
from ..errors import ConfigError, check_memory, is_int, require
from ..topology import FatTreeTopology
from .base import Routing, RoutingKind, RoutingOperator

__all__ = ["dmodk", "ecmp", "ecmp_spray", "EcmpRouting", "dmodk_paths", "ecmp_paths", "ecmp_hash_paths",
           "ecmp_seeds", "ecmp_seed_summary", "DmodkConfig", "EcmpConfig", "EcmpSprayConfig", "DMODK", "ECMP",
           "ECMP_SPRAY"]

MAX_ECMP_SEED = 2**32 - 1


def dmodk() -> Routing:
    """Fat-tree D-mod-k routing: deterministic up*/down*, up port chosen by the destination node."""
    return Routing("dmodk")


@dataclasses.dataclass(frozen=True)
class EcmpRouting(Routing):
    """Hashed ECMP on a fat tree: one path per flow, chosen at every hop by a hash of the flow keyed by ``seed``
    (module docstring). One seed is one draw; :func:`ecmp_seed_summary` gives the distribution over seeds."""

    kind: str = "ecmp"
    seed: int = 0

    @property
    def label(self) -> str:
        return f"ecmp-s{self.seed}"

    def draws(self, k: int) -> tuple[Routing, ...]:
        """``k`` hash seeds from this one's on (``seed .. seed + k - 1``, wrapping below 2^32)."""
        require(is_int(k) and int(k) >= 1, "draws", k, "an integer >= 1 (hash seeds)")
        return tuple(ecmp((self.seed + i) % (MAX_ECMP_SEED + 1)) for i in range(int(k)))

    def notes(self, topology, pairs) -> tuple[str, ...]:
        return (f"ecmp: hashed ECMP with hash seed {self.seed}, one draw of a random routing; evaluate several "
                "seeds (evaluator eval prints 16 by default; a sweep axis routing.seed='range(0,16)', then evaluator "
                "query RUN --draws routing.seed; in "
                "Python evaluator.routing.ecmp_seeds and ecmp_seed_summary: expected, p95); ecmp_spray is the "
                "ideal per-packet split",)


def ecmp(seed: int = 0) -> EcmpRouting:
    """Fat-tree hashed ECMP: one path per flow, the up port at every level (and the parallel copy on the way
    down) chosen by a Threefry hash of (seed, tier, source node, destination node); ``seed`` in ``[0, 2^32)``."""
    require(is_int(seed) and 0 <= int(seed) <= MAX_ECMP_SEED, "routing.seed", seed,
            "an integer in [0, 2^32) (the hash seed of ECMP)")
    return EcmpRouting(seed=int(seed))


def ecmp_spray() -> Routing:
    """Fat-tree ideal per-packet spraying: every switch splits a flow evenly over its up ports (the fluid split;
    the expectation of hashed ECMP over seeds)."""
    return Routing("ecmp_spray")


def _tiers(topo: FatTreeTopology) -> list[dict]:
    """Sizes of every switch tier ``t = 1 .. h-1``: ``Y`` (switches per level-t subtree, ``w_1 ... w_t``: also
    D-mod-k's divisor), ``U`` (up ports per switch), ``S`` (nodes per level-t subtree), ``B`` (leaves per level-t
    subtree), ``nX`` (level-t subtrees), ``pl`` (parallel links) and the tier's link offsets."""
    out = []
    for t in range(1, int(topo.levels)):
        Y, U = topo.parallel(t), topo.up_ports(t)
        S = topo.subtree_nodes(t)
        out.append(dict(t=t, Y=Y, U=U, S=S, B=S // int(topo.children[0]), nX=topo.n_nodes // S,
                        pl=int(topo.parallel_links[t - 1]), up=int(topo.up_offset[t - 1]),
                        down=int(topo.down_offset[t - 1])))
    return out


def dmodk_codes(topo: FatTreeTopology) -> Int[np.ndarray, "tier node"]:
    """``code[t-1, d] = yy_t(d) * U_t + u_t(d)``, shape [tier, node]: D-mod-k's port ``u_t(d)`` at level ``t``
    for destination node ``d`` and the index ``yy_t(d)`` of the digits ``y_t .. y_1`` of the level-``t`` switch
    its packets pass (module docstring)."""
    tiers = _tiers(topo)
    d = np.arange(topo.n_nodes, dtype=np.int64)
    code = np.zeros((len(tiers), topo.n_nodes), dtype=np.int64)
    yy = np.zeros_like(d)
    for i, T in enumerate(tiers):
        w = T["U"] // T["pl"]
        v = (d // T["Y"]) % T["U"]  # one destination digit per level, among all U_t up ports
        y = v % w  # parent digit y_{t+1}: the digit of a tree without parallel links
        u = y * T["pl"] + v // w  # our port number of (parent y, parallel copy v // w)
        code[i] = yy * T["U"] + u
        yy = y * T["Y"] + yy  # the parent's digits y_{t+1} .. y_1
    return code


def dmodk_operator(topo: FatTreeTopology, routing: Routing) -> RoutingOperator:
    """Compile ``dmodk`` for one fat tree (host side; tables linear in the nodes)."""
    tiers = _tiers(topo)
    n_rl = int(topo.n_router_links)
    n_nodes = int(topo.n_nodes)
    code = dmodk_codes(topo)
    itype = np.int32 if max(n_rl, 1) < 2**31 else np.int64
    tables = {"code": code.astype(itype)}

    def tier_links(code, src, dst):
        """Per tier ``(crosses, up link, down link)`` of every flow between nodes ``src -> dst``."""
        src, dst = src.astype(code.dtype), dst.astype(code.dtype)
        for i, T in enumerate(tiers):
            Xs, Xd = src // T["S"], dst // T["S"]
            c = take(code[i], dst)
            YU = T["Y"] * T["U"]
            yield Xs != Xd, T["up"] + Xs * YU + c, T["down"] + Xd * YU + c

    def apply(tables, src, dst, weight, extra=None):
        """``src``/``dst``: node ids (the kernel's endpoints); each flow's up and down link of every tier it
        crosses, added in link order."""
        buf = jnp.zeros(n_rl + fused_size(extra), weight.dtype)
        for on, up, down in tier_links(tables["code"], src, dst):
            w = jnp.where(on, weight, 0.0)
            buf = add_at(add_at(buf, up, w), down, w)
        return add_extra(buf, extra, n_rl)

    def apply_dense(tables, u, v):
        """``u``, ``v``: per node (the endpoints)."""
        U_all = u.sum()
        parts = []
        for i, T in enumerate(tiers):
            YU, nX = T["Y"] * T["U"], T["nX"]
            X = jnp.arange(n_nodes, dtype=tables["code"].dtype) // T["S"]
            v_code = segment_add(v, X * YU + tables["code"][i], nX * YU).reshape(nX, YU)
            u_sub = u.reshape(nX, T["S"]).sum(1)
            up = u_sub[:, None] * jnp.maximum(v_code.sum(0)[None, :] - v_code, 0.0)
            down = v_code * jnp.maximum(U_all - u_sub, 0.0)[:, None]
            parts += [up.reshape(-1), down.reshape(-1)]
        return jnp.concatenate(parts) if parts else jnp.zeros(0, u.dtype)

    def flow_links(ftables, src, dst):
        """``src``/``dst``: node ids; every flow's up and down link of each tier, tier by tier (``-1`` and 0
        from the first tier it does not cross: its nearest common ancestor's subtree), all of its bytes."""
        links = [jnp.where(on, x, -1) for on, up, down in tier_links(ftables["code"], src, dst) for x in (up, down)]
        links = jnp.stack(links, axis=1) if links else jnp.full((src.shape[0], 1), -1, ftables["code"].dtype)
        return links, jnp.where(links >= 0, 1.0, 0.0)

    return RoutingOperator(routing, topo.name, tables, apply, apply_dense, int(code.size),
                           endpoints=np.arange(n_nodes, dtype=np.int64), n_endpoints=n_nodes,
                           flow_links=flow_links, flow_tables=dict(tables), flow_width=max(2 * len(tiers), 1))


def ecmp_operator(topo: FatTreeTopology, routing: Routing) -> RoutingOperator:
    """Compile ``ecmp`` (hashed) for one fat tree (host side)."""
    return _hashed_operator(topo, routing, _tiers(topo))


def spray_operator(topo: FatTreeTopology, routing: Routing) -> RoutingOperator:
    """Compile ``ecmp_spray`` for one fat tree (host side): per-subtree sums, spread evenly over the subtree's
    links of the tier."""
    tiers = _tiers(topo)
    n_leaves = topo.switches(1)

    def spread(sums):
        """Router-link loads from the bytes leaving/entering every subtree (``sums``: ``[up_0, down_0, ...]``)."""
        parts = []
        for i, T in enumerate(tiers):
            YU = T["Y"] * T["U"]
            for s in sums[2 * i: 2 * i + 2]:
                parts.append(jnp.broadcast_to((s * (1.0 / YU))[:, None], (T["nX"], YU)).reshape(-1))
        return parts

    n_cls = len(tiers) + 1  # tiers a flow climbs: 0 (one leaf) .. h-1
    LEAF = n_leaves * n_cls

    def apply(tables, src, dst, weight, extra=None):
        """``src``/``dst``: leaf (router) ids. Two scatters, whatever the tiers: each flow's bytes by (source
        leaf, tiers climbed) and by (destination leaf, tiers climbed), into ``2 x leaves x h`` sums; a level-t
        subtree's bytes out (in) are then its leaves' sums over the flows that climb t tiers or more."""
        cls = sum(((src // T["B"]) != (dst // T["B"])).astype(src.dtype) for T in tiers) if tiers else 0 * src
        buf = jnp.zeros(2 * LEAF + fused_size(extra), weight.dtype)
        buf = add_at(add_at(buf, src * n_cls + cls, weight), LEAF + dst * n_cls + cls, weight)
        buf = add_extra(buf, extra, 2 * LEAF)
        out, into = buf[:LEAF].reshape(n_leaves, n_cls), buf[LEAF: 2 * LEAF].reshape(n_leaves, n_cls)
        sums = []
        for i, T in enumerate(tiers):  # flows climbing tier i + 1 or more leave (enter) the level-(i+1) subtree
            sums += [s[:, i + 1:].sum(1).reshape(T["nX"], T["B"]).sum(1) for s in (out, into)]
        parts = spread(sums) + ([buf[2 * LEAF:]] if extra is not None else [])
        return jnp.concatenate(parts) if parts else jnp.zeros(0, weight.dtype)

    def apply_dense(tables, u, v):
        """``u``, ``v``: per router (only the leaves, the first routers, carry weight)."""
        ul, vl = u[:n_leaves], v[:n_leaves]
        U_all, V_all = ul.sum(), vl.sum()
        sums = []
        for T in tiers:
            us = ul.reshape(T["nX"], T["B"]).sum(1)
            vs = vl.reshape(T["nX"], T["B"]).sum(1)
            sums += [us * jnp.maximum(V_all - vs, 0.0), vs * jnp.maximum(U_all - us, 0.0)]
        parts = spread(sums)
        return jnp.concatenate(parts) if parts else jnp.zeros(0, u.dtype)

    return RoutingOperator(routing, topo.name, {}, apply, apply_dense, 0)


def _threefry_word(xp, k0, k1, x0, x1):
    """First output word of Threefry-2x32-20 (:func:`evaluator._threefry.threefry2x32`, the generator of the seeded
    placements) for key ``(k0, k1)`` and counter ``(x0, x1)``."""
    return threefry2x32(xp, k0, k1, x0, x1)[0]


def _threefry_word_int(k0: int, k1: int, x0: int, x1: int) -> int:
    """:func:`_threefry_word` of one counter in Python ints (:func:`~evaluator._threefry.threefry2x32_int`)."""
    return threefry2x32_int(k0, k1, x0, x1)[0]


def _hash_hops(xp, topo: FatTreeTopology, tiers: list[dict], seed, a, d, words=None) -> list[tuple]:
    """Hashed ECMP's hops of flows ``a -> d`` (node id arrays of ``xp``: NumPy or ``jax.numpy``), per tier
    ``(crosses, up link id, down link id)``: whether the flow crosses the tier, the up link it takes out of its
    level-``t`` switch and the down link it takes into the level-``t`` switch above ``d`` (module docstring).
    ``seed``: a ``uint32`` scalar. ``words`` (one flow, ``a`` and ``d`` Python ints): the hash words of streams
    ``0 .. 2 (h - 1) - 1`` made already (:func:`ecmp_hash_paths`: one Threefry call for every tier), Python ints."""
    m1 = int(topo.children[0])
    c_up, c_down = a // m1, d // m1  # local index of the level-t switch on the way up / above d
    out = []
    for T in tiers:
        U, pl, Y, t = T["U"], T["pl"], T["Y"], T["t"]
        w, m_next = U // pl, int(topo.children[t])
        if words is not None:
            u, k = words[2 * (t - 1)] % U, words[2 * (t - 1) + 1] % pl
        else:
            u = (_threefry_word(xp, seed, 2 * (t - 1), a, d) % xp.uint32(U)).astype(a.dtype)
            # (one parallel link: the hash of the link among them is not drawn, its residue mod 1 being 0; half
            # the hashing of every fat tree without parallel links)
            k = (_threefry_word(xp, seed, 2 * (t - 1) + 1, a, d) % xp.uint32(pl)).astype(a.dtype) if pl > 1 else 0
        y = u // pl  # parent digit y_{t+1}
        out.append(((a // T["S"]) != (d // T["S"]), T["up"] + c_up * U + u, T["down"] + c_down * U + y * pl + k))
        c_up = (c_up // Y // m_next) * (w * Y) + y * Y + c_up % Y
        c_down = (c_down // Y // m_next) * (w * Y) + y * Y + c_down % Y
    return out


def _hashed_operator(topo: FatTreeTopology, routing: EcmpRouting, tiers: list[dict]) -> RoutingOperator:
    """Hashed ECMP compiled for one fat tree: the seed is its only table, so every seed shares one compilation
    (``compile_key``)."""
    n_rl, n_nodes = int(topo.n_router_links), int(topo.n_nodes)
    itype = jnp.int32 if max(n_rl, n_nodes) < 2**31 else jnp.int64

    def apply(tables, src, dst, weight, extra=None):
        """``src``/``dst``: node ids (the endpoints); each flow's hashed up and down link of every tier it
        crosses."""
        buf = jnp.zeros(n_rl + fused_size(extra), weight.dtype)
        for crosses, up, down in _hash_hops(jnp, topo, tiers, tables["seed"][0], src.astype(itype),
                                            dst.astype(itype)):
            w = jnp.where(crosses, weight, 0.0)
            buf = add_at(buf, up, w)
            buf = add_at(buf, down, w)
        return add_extra(buf, extra, n_rl)

    def apply_dense(tables, u, v):
        """``u``, ``v``: per node. One source node at a time, every destination at once."""
        dst = jnp.arange(n_nodes, dtype=itype)

        def one_source(a, buf):
            src = jnp.full(n_nodes, a, itype)
            w = jnp.where(dst == a, 0.0, u[a] * v)
            for crosses, up, down in _hash_hops(jnp, topo, tiers, tables["seed"][0], src, dst):
                wt = jnp.where(crosses, w, 0.0)
                buf = buf.at[up].add(wt).at[down].add(wt)
            return buf

        return jax.lax.fori_loop(0, n_nodes, one_source, jnp.zeros(n_rl, u.dtype))

    tables = {"seed": np.asarray([routing.seed], dtype=np.uint32)}
    return RoutingOperator(routing, topo.name, tables, apply, apply_dense, 1,
                           compile_key=("ecmp_hash", n_nodes, n_rl),
                           endpoints=np.arange(n_nodes, dtype=np.int64), n_endpoints=n_nodes)


MAX_SEEDS = 10_000
"""The most hash seeds :func:`ecmp_seeds` lists (as many as :func:`evaluator.evaluate_draws` evaluates)."""


def ecmp_seeds(seeds: int = 16, seed: int = 0) -> list[EcmpRouting]:
    """The hashed-ECMP specs of ``seeds`` hash seeds ``seed .. seed + seeds - 1`` (their operators share one
    compilation: the seed is the only table)."""
    require(is_int(seeds) and 1 <= int(seeds) <= MAX_SEEDS, "seeds", seeds,
            f"an integer in [1, {MAX_SEEDS:,}] (hash seeds to evaluate; evaluate_draws takes as many draws)")
    require(is_int(seed) and 0 <= int(seed) and int(seed) + int(seeds) <= 2**32, "seed", seed,
            f"an integer >= 0 with seed + seeds <= 2^32 (the hash seeds are in [0, 2^32))")
    return [ecmp(int(seed) + i) for i in range(int(seeds))]


def ecmp_seed_summary(completion_time, seeds=None, quantile: float = 0.95):
    """Hashed ECMP's answer over hash seeds: the expectation and a tail of the completion time.

    ``completion_time``: one value per seed, or ``[seed, ...]`` (e.g. one
    :func:`~evaluator.evaluation.evaluate_batch` call per seed of
    :func:`ecmp_seeds`, each over many points), or an :class:`xarray.DataArray`
    with a ``seed`` dimension (a sweep with a ``routing.seed`` axis).
    ``seeds``: the seeds, for the coordinate (default ``0 .. K-1``; a
    DataArray keeps its own). Returns an :class:`xarray.Dataset` with
    ``completion_time[seed, ...]`` and, reduced over the seeds,
    ``completion_time_expected`` (the mean), ``completion_time_p95`` (the
    ``quantile``, linear interpolation; 0.95 by default) and
    ``completion_time_max`` (s). The spray (:func:`ecmp_spray`) is the
    expectation of the loads, which is at most the expectation of the maximum::

        specs = routing.ecmp_seeds(16)
        times = [ev.evaluate_batch(t, r, traffic, placement).metrics["completion_time"] for r in specs]
        summary = routing.ecmp_seed_summary(times, [r.seed for r in specs])
    """
    import xarray as xr

    require(isinstance(quantile, (int, float, np.integer, np.floating)) and not isinstance(quantile, bool)
            and 0.0 <= float(quantile) <= 1.0, "quantile", quantile, "a number in [0, 1]")
    if isinstance(completion_time, xr.DataArray):
        require("seed" in completion_time.dims, "completion_time", list(completion_time.dims),
                "a DataArray with a 'seed' dimension (one value per hash seed)")
        da = completion_time.transpose("seed", ...)
    else:
        try:
            values = np.asarray(completion_time, dtype=np.float64)
        except (TypeError, ValueError):  # text, or rows of different lengths
            raise ConfigError("completion_time", type(completion_time).__name__, "numbers: one per hash seed, or "
                              "[seed, ...] rows of one length") from None
        require(values.ndim >= 1 and values.shape[0] >= 1, "completion_time", values.shape,
                "one value per hash seed (leading axis: seed)")
        require(seeds is None or (isinstance(seeds, (list, tuple, np.ndarray)) and all(is_int(x) for x in seeds)),
                "seeds", seeds, "a list of integer hash seeds")
        seeds = list(range(values.shape[0])) if seeds is None else [int(x) for x in seeds]
        require(len(seeds) == values.shape[0], "seeds", seeds, f"{values.shape[0]} seeds (one per row)")
        da = xr.DataArray(values, dims=("seed",) + tuple(f"point_{i}" for i in range(values.ndim - 1)),
                          coords={"seed": seeds})
    da = da.rename("completion_time").assign_attrs(units="s")
    q = float(quantile)
    ds = da.to_dataset()
    # a point with an infeasible (NaN) seed is NaN in every summary, never one of its feasible seeds only
    ds["completion_time_expected"] = da.mean("seed", skipna=False).assign_attrs(
        units="s", long_name="expected completion time over hash seeds")
    ds["completion_time_p95"] = da.quantile(q, "seed", skipna=False).drop_vars("quantile").assign_attrs(
        units="s", long_name=f"{q:g} quantile of the completion time over hash seeds")
    ds["completion_time_max"] = da.max("seed", skipna=False).assign_attrs(units="s")
    ds.attrs.update(routing="ecmp", seeds=int(da.sizes["seed"]), quantile=q)
    return ds


# --------------------------------------------------------------------------------------
# per-flow walks (the reference of the bench's per-flow baseline)
# --------------------------------------------------------------------------------------


def _nca_tier_count(topo: FatTreeTopology, a: int, d: int) -> int:
    """Tiers a flow from node ``a`` to node ``d`` climbs: the nearest common ancestor level minus 1."""
    for t in range(1, int(topo.levels)):
        if a // topo.subtree_nodes(t) == d // topo.subtree_nodes(t):
            return t - 1
    return int(topo.levels) - 1


def dmodk_paths(topo: FatTreeTopology, src_node: int, dst_node: int) -> list[tuple[float, list[int]]]:
    """D-mod-k's one path from ``src_node`` to ``dst_node``: ``[(1.0, link ids)]`` (router links only; ``[(1.0,
    [])]`` on one leaf, ``[]`` on one node). Walked hop by hop: up port ``v = floor(d / (w_1 .. w_t)) mod
    U_t`` (parent ``v mod w_{t+1}``, parallel copy ``v div w_{t+1}``) at every level below the nearest common
    ancestor, then down through the switches with the same digits."""
    a, d = int(src_node), int(dst_node)
    if a == d:
        return []
    top = _nca_tier_count(topo, a, d)
    links, down = [], []
    c_up = a // int(topo.children[0])  # local index of the current switch (level t) on the way up
    c_down = d // int(topo.children[0])  # ... and of the switch above d on the way down
    for t in range(1, top + 1):
        Y, U, pl, w = topo.parallel(t), topo.up_ports(t), int(topo.parallel_links[t - 1]), int(topo.parents[t])
        m_next = int(topo.children[t])
        v = (d // Y) % U  # Y = w_1 ... w_t
        y = v % w  # parent digit y_{t+1}
        u = y * pl + v // w  # parallel copy v // w
        links.append(int(topo.up_offset[t - 1]) + c_up * U + u)
        down.append(int(topo.down_offset[t - 1]) + c_down * U + u)
        c_up = (c_up // Y // m_next) * (w * Y) + y * Y + c_up % Y
        c_down = (c_down // Y // m_next) * (w * Y) + y * Y + c_down % Y
    assert c_up == c_down, "D-mod-k walk: the up and down paths do not meet"
    return [(1.0, links + down[::-1])]


PATH_BYTES = 200
"""Host bytes of one listed path of :func:`ecmp_paths` beyond its links (16 bytes a hop): its tuples, lists and
probability."""


def ecmp_paths(topo: FatTreeTopology, src_node: int, dst_node: int) -> list[tuple[float, list[int]]]:
    """``ecmp_spray``'s paths (the fluid split; the name predates hashed ECMP) from ``src_node`` to ``dst_node``
    with their probabilities: every up port of every switch below the nearest common ancestor (``1 / U_t``
    each), then the down path through the reached switch's digits,
    every parallel copy (``1 / pl_t`` each). Router links only."""
    a, d = int(src_node), int(dst_node)
    if a == d:
        return []
    top = _nca_tier_count(topo, a, d)
    # every up port times every parallel copy down, per tier: counted before any is listed (a tree with 3,000
    # parallel links a tier had 1.3 x 10^15 paths for one flow, listed until a MemoryError)
    n_paths = math.prod(int(topo.up_ports(t)) * int(topo.parallel_links[t - 1]) for t in range(1, top + 1))
    check_memory("topology", topo.name, float(n_paths) * (PATH_BYTES + 16 * top),
                 f"the {n_paths:,} paths ecmp_spray splits the flow {a} -> {d} over ({top} tiers up and down: every "
                 f"up port times every parallel copy down)",
                 "Use ecmp_hash_paths (hashed ECMP's one path per flow), or a tree with fewer parallel links.")
    paths = [(1.0, [], a // int(topo.children[0]), d // int(topo.children[0]), [])]
    for t in range(1, top + 1):
        Y, U, pl, w = topo.parallel(t), topo.up_ports(t), int(topo.parallel_links[t - 1]), int(topo.parents[t])
        m_next = int(topo.children[t])
        grown = []
        for prob, up, c_up, c_down, down in paths:
            for u in range(U):
                y = u // pl
                up_link = int(topo.up_offset[t - 1]) + c_up * U + u
                # down: from the parent with digit y to c_down, over any of its pl parallel links
                copies = [int(topo.down_offset[t - 1]) + c_down * U + y * pl + c for c in range(pl)]
                nu = (c_up // Y // m_next) * (w * Y) + y * Y + c_up % Y
                nd = (c_down // Y // m_next) * (w * Y) + y * Y + c_down % Y
                for lk in copies:
                    grown.append((prob / (U * pl), up + [up_link], nu, nd, [lk] + down))
        paths = grown
    return [(prob, up + down) for prob, up, _, _, down in paths]


def ecmp_hash_paths(topo: FatTreeTopology, src_node: int, dst_node: int, seed: int = 0
                    ) -> list[tuple[float, list[int]]]:
    """Hashed ECMP's one path from ``src_node`` to ``dst_node`` under hash ``seed``: ``[(1.0, link ids)]``
    (router links only; ``[(1.0, [])]`` on one leaf, ``[]`` on one node), walked with the operator's hash
    on the host (its tiers of :func:`_hash_hops`, the Threefry words in Python ints: :func:`_threefry_word_int`)."""
    a, d = int(src_node), int(dst_node)
    if a == d:
        return []
    top = _nca_tier_count(topo, a, d)
    # the hash words and the walk in Python ints (4,096 flows of a 16-ary 3-tree took 1.1 s with NumPy calls on
    # one-element arrays, 100 per Threefry word)
    words = [_threefry_word_int(int(seed), stream, a, d) for stream in range(2 * top)]
    hops = _hash_hops(np, topo, _tiers(topo)[:top], None, a, d, words)
    up = [int(h[1]) for h in hops]
    down = [int(h[2]) for h in hops]
    return [(1.0, up + down[::-1])]


@dataclass
class DmodkConfig:
    """Fat-tree D-mod-k routing (no parameters)."""

    kind: str = "dmodk"


@dataclass
class EcmpConfig:
    """Fat-tree hashed ECMP: one path per flow; ``seed`` (in [0, 2^32)) picks the hash function. Sweep
    ``routing.seed`` for its distribution, or use ``evaluator.routing.ecmp_seed_summary``."""

    kind: str = "ecmp"
    seed: int = 0


@dataclass
class EcmpSprayConfig:
    """Fat-tree ideal per-packet spraying (the fluid split over every up port; no parameters)."""

    kind: str = "ecmp_spray"


DMODK = RoutingKind("dmodk", DmodkConfig, lambda cfg: dmodk(), topologies=("fat_tree",), operator=dmodk_operator)
ECMP = RoutingKind("ecmp", EcmpConfig, lambda cfg: ecmp(cfg.seed), topologies=("fat_tree",), operator=ecmp_operator)
ECMP_SPRAY = RoutingKind("ecmp_spray", EcmpSprayConfig, lambda cfg: ecmp_spray(), topologies=("fat_tree",),
                         operator=spray_operator)
