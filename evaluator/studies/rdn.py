"""GRAP's allocation modes on a reconfigurable Dragonfly (RDN) against a traditional one (TDN): Feng et al. Sec. 5.2.

For every pattern and job size (groups ``q``), one job is evaluated on both networks:

* **RDN-GRAP**: the job's nodes come from :class:`~evaluator.policies.Grap`
  on the machine (3-D stencil: ``minimal_balance``, whole groups, task grid
  ``(q, x, y)`` with ``x * y`` the group's nodes, plane ``z`` in the ``z``-th
  group, each router holding a tile of the plane (:func:`_tiled_order`);
  neighbouring pattern: ``custom``, requirements alternating a whole group and
  three quarters of one; all-to-all, the ``adaptive`` pattern: ``nodes_per_adaptive``
  nodes in each of ``q`` groups, 256 of 288 on the paper's machine, as in its
  Fig. 4a; GRAP's Algorithm 3 would use ``ceil(n / nodes_per_group)`` groups,
  fewer than ``q`` from 9 groups on, so the nodes come from its balance path with
  ``q`` equal requirements, which the paper found performs the same). The
  job owns every switch port of its groups, so it is evaluated on the RDN of
  just its ``q`` groups (what the rest of the machine does cannot reach it):
  ``traffic`` configuration (links in proportion to its group-to-group demand)
  for stencil and neighbouring, ``jobs`` (a smaller Dragonfly) for all-to-all,
  TAGO routing. Background: the nodes of its groups that it does not use
  (the small jobs) send ``background`` of their injection bandwidth uniformly
  to the other free nodes of their own group (GRAP keeps small jobs in a group;
  the paper: "the noise traffic is limited within groups").
* **TDN**: the standard Dragonfly(p, a, h, g) of the whole machine, the job's
  tasks on uniformly random nodes (random mapping; ``n_seeds`` of them per
  point, each seeded by the point and its index alone, :func:`mapping_seed`;
  every figure is their mean with its spread), evaluated three ways:

  - *oblivious* routings ``minimal``, ``valiant`` (group-level) and
    ``valiant_router`` (router-level); ``tdn_oblivious_*`` is the fastest of
    them at each point, a time some routing reaches: the gain against it is
    the *upper* end of RDN-GRAP's gain;
  - *UGAL-G* (``tdn_ugal_*``), the adaptive routing Dragonflies deploy, as a
    flow-level model (:func:`evaluator.routing.ugal`, docs/adaptive_routing.md):
    each communicating router pair splits its bytes between its minimal and
    Valiant paths at the fixed point of the loads it sees, on the capacity
    the (minimally routed) background leaves;
  - *bounds* (:func:`evaluator.lp.bounds.optimal`, certified lower bounds of
    the time): ``adaptive``, the ideal adaptive bound
    (``dragonfly_adaptive``: the best per-group-pair mix of the minimal and
    Valiant path classes; a bound for routings that split per group pair, not
    for UGAL, which adapts per router pair and can beat it), and ``optimal``,
    the best any routing over all paths can do (``auto``: edge LP or
    Garg-Konemann). The gain against the adaptive bound is the study's
    headline; the lowest gain of the three baselines is the conservative end,
    and the optimum the floor no routing passes. A bound the LP cannot give is
    NaN with the reason in ``bound_refused``: the adaptive bound needs 3
    groups (Valiant needs an intermediate group), and an LP with more than
    ``max_lp_nnz`` nonzeros (the paper's machine: tens of millions) is not
    attempted; so is UGAL above :data:`MAX_UGAL_PAIRS` router pairs.

  Background: every node outside the job sends ``background`` of its injection
  bandwidth uniformly to all the others (:class:`evaluator.jobs.Background`),
  routed as the job is for the oblivious routings, minimally for the bounds
  (uniform traffic: what an adaptive router sends minimally, and the fewest
  link bytes); a bound with background is the bound of the job on the
  capacity the background leaves (``capacity - background rate``, at least 0).

The job's time is its communication step's completion time on what the
background leaves of each link, ``max_link load / (capacity - background
rate)`` (seconds; bytes scale out of every ratio). Sizes larger than the
machine's groups are dropped; a point the evaluator refuses
(:class:`~evaluator.errors.ResourceError`) is NaN with the reason in
``refused``.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import time
from collections.abc import Sequence
from pathlib import Path

import jax
import numpy as np
import xarray as xr

from .._version import __version__
from ..errors import (ConfigError, ConfigTypeError, ResourceError, check_seed, is_int, positive_float, positive_int,
                      require)
from ..evaluation import evaluate_batch
from ..jobs import Background, background_rates
from ..lp import adaptive_size, edge_size
from ..lp.bounds import optimal, router_demand
from ..placement import Placement
from ..policies import Grap, JobRequest
from ..routing import tago, unconnected_bytes
from ..topology import dragonfly, rdn
from ..traffic import Traffic, all_to_all_dense, neighbouring, stencil

__all__ = ["RdnMachine", "PAPER_MACHINE", "PATTERNS", "DEFAULT_GROUPS", "BOUNDS", "GAINS", "allocation_mode_study",
           "speedup_table", "format_study", "format_speedup_table", "plot_study", "parse_machine", "check_machine",
           "MACHINE_GRAMMAR", "DEFAULT_SEEDS", "SUMMARIES", "mapping_seed"]

PATTERNS = {"stencil": "minimal_balance", "neighbouring": "custom", "all_to_all": "adaptive"}
"""Pattern -> the GRAP mode it runs in (the paper's Sec. 5.1.3)."""

DEFAULT_GROUPS = (2, 4, 8, 16, 32, 64, 128, 288)
"""Job sizes in groups (those above the machine's group count are dropped; the whole machine is always added)."""


@dataclasses.dataclass(frozen=True)
class RdnMachine:
    """A Dragonfly(p, a, h, g) machine, every link ``bandwidth`` bytes/s per direction; ``ports_per_switch`` of
    each group on one optical switch of the RDN; the adaptive all-to-all uses ``nodes_per_adaptive`` nodes per group
    (default: 8/9 of a group, 256 of 288)."""

    p: int
    a: int
    h: int
    g: int
    bandwidth: float = 12.0e9
    ports_per_switch: int = 1
    nodes_per_adaptive: int | None = None

    @property
    def nodes_per_group(self) -> int:
        return self.a * self.p

    @property
    def adaptive_nodes(self) -> int:
        return self.nodes_per_adaptive if self.nodes_per_adaptive is not None else \
            max(1, (8 * self.nodes_per_group) // 9)


PAPER_MACHINE = RdnMachine(p=12, a=24, h=12, g=288, bandwidth=12.0e9)
"""The paper's machine: 48-port switches (12 nodes, 23 local, 12 global, 1 service), 24 per group, 288 groups
(82,944 nodes), 288-port optical switches (one port per group), 12 GB/s links."""

MACHINE_GRAMMAR = ("four integers P,A,H,G or DF(P,A,H,G): P >= 1 nodes per router, A >= 1 routers per group, "
                   "H >= 1 global links per router, G groups in [2, A*H+1] (the paper's: 12,24,12,288)")
"""What ``--machine`` (:func:`parse_machine`) accepts; the form the study's dataset records is ``DF(P,A,H,G)``."""


def parse_machine(text: str, field: str = "--machine", bandwidth: float = 12.0e9) -> RdnMachine:
    """An :class:`RdnMachine` from ``"P,A,H,G"`` or ``"DF(P,A,H,G)"`` (what the study's ``machine`` attribute
    holds); ConfigError naming ``field``, the text and :data:`MACHINE_GRAMMAR` otherwise."""
    import re

    raw = str(text).strip()
    m = re.fullmatch(r"(?:DF\s*\(\s*(.*?)\s*\)|(.*))", raw, flags=re.IGNORECASE)
    body = m.group(1) if m.group(1) is not None else m.group(2)
    parts = [x.strip() for x in body.split(",")]
    if len(parts) != 4 or not all(re.fullmatch(r"[+]?[0-9]+", x) for x in parts):
        raise ConfigError(field, text, MACHINE_GRAMMAR)
    p, a, h, g = (int(x) for x in parts)
    if min(p, a, h) < 1 or not 2 <= g <= a * h + 1:
        raise ConfigError(field, text, MACHINE_GRAMMAR, f"Here A*H+1 = {a * h + 1}." if min(p, a, h) >= 1 else None)
    return RdnMachine(p, a, h, g, bandwidth=bandwidth)


def check_machine(machine: RdnMachine, patterns: Sequence[str], field: str = "machine",
                  value: str | None = None) -> None:
    """Refuse (ConfigError naming ``field``) a machine the study cannot place ``patterns`` on, before any work:
    the all-to-all takes :attr:`RdnMachine.adaptive_nodes` nodes in each of ``q`` groups, which must be more than
    half a group (else GRAP packs two groups' shares into one). ``value``: the text the user gave (default: the
    machine as ``DF(P,A,H,G)``)."""
    require(isinstance(machine, RdnMachine), field, machine, "an evaluator.studies.rdn.RdnMachine")
    text = f"DF({machine.p},{machine.a},{machine.h},{machine.g})" if value is None else value
    require(min(machine.p, machine.a, machine.h) >= 1 and 2 <= machine.g <= machine.a * machine.h + 1, field, text,
            MACHINE_GRAMMAR)
    npg, per = machine.nodes_per_group, machine.adaptive_nodes
    if "all_to_all" in patterns and not (2 * per > npg and per <= npg):
        raise ConfigError(field, text, "a machine whose all-to-all job fills more than half of each of its groups "
                                       f"(here {per} of A*P = {npg} nodes: A*P = 2 is the one size that fails)",
                          "Use groups of 1 or at least 3 nodes (A*P), or leave all_to_all out of --patterns.")


# ------------------------------------------------------------------------------------------- jobs
def _grid2(n: int) -> tuple[int, int]:
    """``(x, y)`` with ``x * y = n`` and ``x <= y`` closest."""
    x = int(math.isqrt(n))
    while n % x:
        x -= 1
    return x, n // x


def _tiled_order(x: int, y: int, p: int, a: int) -> np.ndarray:
    """Node index in a group of every task ``(i, j)`` (row-major) of an ``x * y`` plane, each router holding a
    ``tx * ty`` tile of it (``tx * ty = p``, ``(x / tx) * (y / ty) = a``, the squarest such tile) when one
    exists, else row-major.

    GRAP leaves the placement inside a group open (Feng et al. Sec. 4.1); tiles keep a stencil's in-plane faces
    on few local links, as a user who maps to groups would."""
    tiles = [(max(tx, p // tx), tx, p // tx) for tx in range(1, p + 1)
             if p % tx == 0 and x % tx == 0 and y % (p // tx) == 0 and (x // tx) * (y // (p // tx)) == a]
    for _, tx, ty in sorted(tiles)[:1]:                # the squarest tile: fewest faces on one local link
        i, j = np.divmod(np.arange(x * y), y)
        router = (i // tx) * (y // ty) + j // ty
        return router * p + (i % tx) * ty + j % ty
    return np.arange(x * y)


class PointRefused(Exception):
    """A point the study cannot evaluate on this machine (NaN, the reason in ``refused``): the RDN's optical
    switches cannot connect every group pair the job needs."""


def _require_groups(m: RdnMachine, pattern: str, q: int, alloc) -> None:
    """GRAP gave the job exactly ``q`` groups (else the machine cannot hold the pattern as the study places it)."""
    if alloc is None or len(alloc.groups) != q:
        got = "no allocation" if alloc is None else f"{len(alloc.groups)} groups"
        raise ConfigError("machine", f"DF({m.p},{m.a},{m.h},{m.g})",
                          f"a machine on which GRAP gives the {pattern} job of {q} groups {q} groups (it gave {got})")


def _job(m: RdnMachine, pattern: str, q: int) -> tuple[Traffic, Grap, np.ndarray]:
    """The job's traffic, the GRAP state after allocating it, and its task -> node map (machine numbering)."""
    npg = m.nodes_per_group
    pol = Grap(m.g, npg)
    if pattern == "stencil":
        x, y = _grid2(npg)
        beta = [q, x, y]                               # task (z, x, y): plane z is one group
        tr = stencil([4 * b for b in beta], beta, 256.0)
        alloc = pol.allocate(JobRequest(0, q * npg, "minimal_balance"))
        _require_groups(m, pattern, q, alloc)
        base = np.asarray(alloc.groups, dtype=np.int64) * npg   # plane z -> the z-th group, tiled over its routers
        order = (base[:, None] + _tiled_order(x, y, m.p, m.a)[None, :]).reshape(-1)
        return tr, pol, order
    if pattern == "neighbouring":
        small = max(1, (3 * npg) // 4)
        req = tuple(npg if i % 2 == 0 else small for i in range(q))
        alloc = pol.allocate(JobRequest(0, sum(req), "custom", req))
        _require_groups(m, pattern, q, alloc)
        grp = alloc.nodes // npg
        sizes = [int((grp == G).sum()) for G in alloc.groups]
        tr = neighbouring(sizes, 4, 4, 1.0e6)
        return tr, pol, alloc.nodes                    # blocks in group order, nodes ascending
    if pattern == "all_to_all":
        # The paper's Fig. 4a runs the adaptive-mode all-to-all at about 256 of 288 nodes in each of q groups.
        # Algorithm 3 itself takes ceil(n / nodes_per_group) groups (fewer than q once q >= 9), so the nodes
        # come from GRAP's balance path with q equal requirements; the paper found both modes equal here.
        per = m.adaptive_nodes
        alloc = pol.allocate(JobRequest(0, q * per, "custom_balance", (per,) * q))
        _require_groups(m, pattern, q, alloc)
        return all_to_all_dense(q * per, 1.0e6), pol, alloc.nodes
    raise ConfigError("pattern", pattern, " | ".join(PATTERNS))


def _time(load: np.ndarray, cap: np.ndarray, bg: np.ndarray) -> float:
    left = cap - bg
    used = load > 0
    if not used.any():
        return 0.0
    if (left[used] <= 0).any():
        return math.inf
    return float((load[used] / left[used]).max())


def _rdn_point(m: RdnMachine, pattern: str, q: int, tr: Traffic, pol: Grap, nodes: np.ndarray,
               fraction: float) -> dict:
    """RDN-GRAP: the job on the RDN of its own groups, TAGO, background inside its groups."""
    npg = m.nodes_per_group
    groups = np.unique(nodes // npg)
    rank = np.full(m.g, -1)
    rank[groups] = np.arange(q)
    local = rank[nodes // npg] * npg + nodes % npg
    if pattern == "all_to_all":
        try:
            topo = rdn(m.p, m.a, m.h, q, ports_per_switch=m.ports_per_switch, configuration="jobs",
                       jobs=[list(range(q))], bandwidth_p=m.bandwidth, bandwidth_l=m.bandwidth,
                       bandwidth_r=m.bandwidth)
        except ResourceError:
            raise
        except ConfigError as e:  # too many groups for one job's direct links: a limit of this machine, not input
            raise PointRefused(f"RDN: {e}") from None
    else:
        flows = tr.to_flows()  # (a flow list already: the patterns other than all_to_all are sparse)
        ts, td, w = flows.src, flows.dst, flows.nbytes
        gs, gd = local[ts] // npg, local[td] // npg
        demand = np.zeros((q, q))
        np.add.at(demand, (gs, gd), w)
        np.fill_diagonal(demand, 0.0)
        if q == 2 or not demand.any():
            cfg = dict(configuration="jobs", jobs=[list(range(q))])
        else:
            cfg = dict(configuration="traffic", jobs=[list(range(q))], demand=[demand])
        topo = rdn(m.p, m.a, m.h, q, ports_per_switch=m.ports_per_switch, bandwidth_p=m.bandwidth,
                   bandwidth_l=m.bandwidth, bandwidth_r=m.bandwidth, **cfg)
        lost = unconnected_bytes(topo, local[ts] // m.p, local[td] // m.p, w)
        if lost > 0:
            from ..display import format_value

            raise PointRefused(f"RDN: the optical switches (A*H = {m.a * m.h} ports per group, "
                               f"{m.ports_per_switch} per switch) cannot connect every group pair of the job: "
                               f"{format_value(lost, 'bytes')} of it unconnected")
    pl = Placement(local.astype(np.int64), topo.n_nodes, f"GRAP {PATTERNS[pattern]}")
    cap = np.asarray(topo.capacity)
    nr = topo.n_router_links
    # background: free nodes of the job's groups, uniform inside their group
    free = np.ones(q * npg, dtype=bool)
    free[local] = False
    fnodes = np.flatnonzero(free)
    btr = None
    if fraction > 0 and fnodes.size:
        fg = fnodes // npg
        src, dst, rate = [], [], []
        for G in np.unique(fg):
            members = np.flatnonzero(fg == G)
            k = members.size
            if k < 2:
                continue
            s, d = np.meshgrid(members, members, indexing="ij")
            off = s != d
            src.append(s[off])
            dst.append(d[off])
            rate.append(np.full(int(off.sum()), fraction * m.bandwidth / (k - 1)))
        if src:
            btr = Traffic(fnodes.size, np.concatenate(src), np.concatenate(dst), np.concatenate(rate),
                          "background inside groups")
    out = {}
    for intra in INTRA:
        if intra == "valiant" and m.a < 3:
            continue
        rt = tago(intra)
        res = evaluate_batch(topo, rt, [tr], [pl], keep_link_load=True, chunk_size=1)
        load = np.asarray(res.link_load[0], dtype=np.float64)
        bg = np.zeros_like(cap)
        if btr is not None:
            bres = evaluate_batch(topo, rt, [btr], [Placement(fnodes, topo.n_nodes, "free nodes")],
                                  keep_link_load=True, chunk_size=1)
            bg = np.asarray(bres.link_load[0], dtype=np.float64)
        out[f"rdn_{intra}_time"] = _time(load, cap, np.zeros_like(cap))
        out[f"rdn_{intra}_time_bg"] = _time(load, cap, bg)
        out[f"rdn_{intra}_net_time_bg"] = _time(load[:nr], cap[:nr], bg[:nr])
        out[f"rdn_{intra}_hops"] = float(res.metrics["mean_hops"][0])
    return out


TDN_ROUTINGS = ("minimal", "valiant", "valiant_router")
"""Oblivious routings of the TDN (``valiant`` needs 3 groups: NaN on fewer)."""

TDN_ADAPTIVE = ("ugal",)
"""Adaptive routings of the TDN (flow-level models, :mod:`evaluator.routing._adaptive`): UGAL-G, the routing
Dragonflies deploy, between the oblivious routings and the ideal adaptive bound (``ugal`` needs 3 groups)."""

MAX_UGAL_PAIRS = 1 << 21
"""Most communicating router pairs the study routes with UGAL (each a flow of its fixed point); above: NaN with the
reason in ``bound_refused``."""


def _pad_size(n: int) -> int:
    """Flows padded to the next power of two (at least 64): one compilation per size class, not per point."""
    return max(64, 1 << max(0, int(n - 1).bit_length()))


@functools.lru_cache(maxsize=8)
def _ugal_solver(tdn):
    from ..routing import build_routing, ugal

    op = build_routing(tdn, ugal())
    return op, jax.jit(op.solve)


def _ugal_loads(tdn, demand, cap_left: np.ndarray) -> np.ndarray:
    """UGAL-G's router-link loads of a router-pair demand (:func:`evaluator.lp.bounds.router_demand`) on the
    capacities ``cap_left`` (what the background leaves: its fixed point sees the busy times of the job on them)."""
    op, solve = _ugal_solver(tdn)
    n = demand.src.size
    if n > MAX_UGAL_PAIRS:
        raise ResourceError("ugal", n, f"at most {MAX_UGAL_PAIRS:,} communicating router pairs for the UGAL "
                            "baseline", "The study routes every router pair of the job as one flow of UGAL's fixed "
                            "point; the oblivious and bound baselines still apply.")
    size = _pad_size(n)
    src = np.zeros(size, np.int32)
    dst = np.zeros(size, np.int32)
    w = np.zeros(size)
    src[:n], dst[:n], w[:n] = demand.src, demand.dst, demand.nbytes
    nr = tdn.n_router_links
    tables = dict(op.tables)
    left = np.asarray(cap_left, np.float64)[:nr]
    tables["_inv_cap"] = np.where(left > 0, 1.0 / np.where(left > 0, left, 1.0), 0.0)
    loads, _, _ = solve(tables, src, dst, w)
    return np.asarray(loads, np.float64)

BOUNDS = {"adaptive": "dragonfly_adaptive", "optimal": "auto"}
"""Bounds of the TDN -> the :func:`evaluator.lp.bounds.optimal` method that gives them."""

BOUND_TEXT = {"adaptive": "ideal adaptive bound: best per-group-pair mix of minimal and Valiant path classes",
              "optimal": "best any routing over all paths can do (maximum concurrent flow)"}

MAX_LP_NNZ = 2_000_000
"""Largest LP (nonzeros, :func:`evaluator.lp.adaptive_size` / :func:`evaluator.lp.edge_size`) the study solves:
DF(4, 8, 4, 32) needs at most 1.5 million (30-70 s a solve on a shared 2-core box); the paper's machine 45 million
and more (refused: NaN, the reason in ``bound_refused``)."""


def mapping_seed(seed: int, pattern: str, groups: int, draw: int) -> tuple[int, int, int, int]:
    """The seed of the TDN's random mapping of one point and draw: ``(seed, k, groups, draw)`` (``k``: the
    pattern's place in :data:`PATTERNS`), the entropy of ``numpy.random.default_rng``. It depends on the point's
    own parameters and the draw's index only, never on which other points or how many draws a run asks for."""
    return (int(seed), list(PATTERNS).index(pattern), int(groups), int(draw))


def _tdn_point(m: RdnMachine, tdn, tr, n_tasks: int, fraction: float, seed: tuple[int, ...],
               bounds: Sequence[str], max_lp_nnz: int, solver: str, adaptive: Sequence[str] = TDN_ADAPTIVE
               ) -> tuple[dict, str]:
    """TDN: the job on random nodes of the whole machine (``default_rng(seed)``, ``seed`` from
    :func:`mapping_seed`), every oblivious routing, UGAL-G (``adaptive``; its fixed point on the capacity the
    minimally routed background leaves, as for the bounds) and the bounds, with and without background; also the
    reasons of bounds and UGAL not computed ('' when all were)."""
    rng = np.random.default_rng(list(seed))
    nodes = np.sort(rng.choice(tdn.n_nodes, size=n_tasks, replace=False))
    order = rng.permutation(n_tasks)
    pl = Placement(nodes[order].astype(np.int64), tdn.n_nodes, f"random(seed={list(seed)})")
    cap = np.asarray(tdn.capacity, dtype=np.float64)
    nr = tdn.n_router_links
    others = np.setdiff1d(np.arange(tdn.n_nodes), nodes)
    out: dict = {}
    bg_of = {}
    for rt in TDN_ROUTINGS:
        if rt == "valiant" and m.g < 3:
            continue                                   # Valiant needs a third group: NaN
        res = evaluate_batch(tdn, rt, [tr], [pl], keep_link_load=True, chunk_size=1)
        load = np.asarray(res.link_load[0], dtype=np.float64)
        out[f"tdn_{rt}_time"] = _time(load, cap, np.zeros_like(cap))
        out[f"tdn_{rt}_hops"] = float(res.metrics["mean_hops"][0])
        bg = background_rates(tdn, Background(fraction, "uniform"), others, rt) if fraction > 0 else np.zeros_like(cap)
        bg_of[rt] = bg
        out[f"tdn_{rt}_time_bg"] = _time(load, cap, bg)
        out[f"tdn_{rt}_net_time_bg"] = _time(load[:nr], cap[:nr], bg[:nr])
    why = []
    if "ugal" in adaptive:
        try:
            if tdn.g < 3:
                raise ConfigError("topology", tdn.name, "a Dragonfly with at least 3 groups",
                                  "UGAL's non-minimal candidate needs an intermediate group.")
            demand = router_demand(tdn, tr, pl)
            node = demand.fixed_load[nr:]
            sent = float(demand.fixed_load[tdn.injection_link(np.arange(tdn.n_nodes))].sum())
            for suffix, bg in (("", np.zeros_like(cap)), ("_bg", bg_of["minimal"])):
                left = np.maximum(cap - bg, 0.0)  # the background routed minimally, as for the bounds
                rl = _ugal_loads(tdn, demand, left)
                load = np.concatenate([rl, node])
                out[f"tdn_ugal_time{suffix}"] = _time(load, cap, bg)
                if suffix == "_bg":
                    out["tdn_ugal_net_time_bg"] = _time(rl, cap[:nr], bg[:nr])
            out["tdn_ugal_hops"] = float(rl.sum() / sent) if sent > 0 else 0.0
        except (ConfigError, ResourceError) as e:
            why.append(f"ugal: {e}")
    for name in bounds:
        method = BOUNDS[name]
        try:
            demand = router_demand(tdn, tr, pl)
            if method == "dragonfly_adaptive":
                if tdn.g < 3:
                    raise ConfigError("topology", tdn.name, "a Dragonfly with at least 3 groups",
                                      "Valiant needs an intermediate group other than source and destination.")
                nnz = adaptive_size(tdn, demand)["nnz"]
            else:
                nnz = edge_size(tdn, demand)["nnz"]
            if nnz > max_lp_nnz:
                raise ResourceError("max_lp_nnz", max_lp_nnz, f"at least the {name} bound's LP ({nnz:,} nonzeros)",
                                    "Not attempted: raise --max-lp-nnz to try it.")
            t0 = time.perf_counter()
            lo = optimal(tdn, tr, pl, method, solver)
            bgm = bg_of["minimal"]
            if bgm.any():                              # the job on what the (minimally routed) background leaves
                left = dataclasses.replace(tdn, capacity=np.maximum(cap - bgm, 0.0))
                lo_bg = optimal(left, tr, pl, method, solver)
            else:
                lo_bg = lo
            out[f"tdn_{name}_time"] = lo.completion_time
            out[f"tdn_{name}_time_bg"] = lo_bg.completion_time
            out[f"tdn_{name}_bound_s"] = time.perf_counter() - t0
        except (ConfigError, ResourceError) as e:
            why.append(f"{name}: {e}")
    return out, "; ".join(why)


INTRA = ("minimal", "valiant")
"""RDN routings inside groups (TAGO between groups): the paper runs adaptive routing there; these bound it."""

_KINDS = {"time": ("s", "{net} {rt}: completion time of the job's exchange, no background"),
          "time_bg": ("s", "{net} {rt}: completion time on what the background leaves"),
          "net_time_bg": ("s", "{net} {rt}: completion time with background, router-to-router links only"),
          "hops": ("1", "{net} {rt}: router-to-router links per byte that leaves its node")}

VARIABLES = tuple([f"rdn_{rt}_{v}" for rt in INTRA for v in _KINDS]
                  + [f"tdn_{rt}_{v}" for rt in TDN_ROUTINGS + TDN_ADAPTIVE for v in _KINDS]
                  + [f"tdn_{b}_{v}" for b in BOUNDS for v in ("time", "time_bg", "bound_s")])
"""The raw variables of the study (derived ones are listed in :func:`allocation_mode_study`)."""


def _attrs(name: str) -> dict:
    """``units`` and ``long_name`` of a raw variable."""
    net, rest = name.split("_", 1)
    for b in BOUNDS:
        if rest.startswith(b + "_"):
            v = rest[len(b) + 1:]
            if v == "bound_s":
                return {"units": "s", "long_name": f"TDN {b} bound: wall time of its LPs"}
            bg = "on the capacity the (minimally routed) background leaves" if v == "time_bg" else "no background"
            return {"units": "s", "long_name": f"TDN {BOUND_TEXT[b]}: certified lower bound of the time, {bg}"}
    for v in sorted(_KINDS, key=len, reverse=True):
        if rest.endswith("_" + v):
            rt = rest[: -len(v) - 1]
            units, text = _KINDS[v]
            label = f"{rt} inside groups, TAGO between" if net == "rdn" else rt
            return {"units": units, "long_name": text.format(net=net.upper(), rt=label)}
    raise KeyError(name)


GAINS = {"adaptive": "the ideal adaptive bound (the best per-group-pair mix of minimal and Valiant paths: a lower "
                     "bound for routings that split per group pair, not for UGAL, which adapts per router pair), or "
                     "the fastest oblivious routing where faster (the bound covers minimal and valiant, not "
                     "valiant_router): the study's headline",
         "oblivious": "the fastest oblivious routing (minimal, valiant, valiant_router): the upper end",
         "ugal": "UGAL-G, the adaptive routing Dragonflies deploy (a flow-level model, docs/adaptive_routing.md; "
                 "the background routed minimally)",
         "optimal": "the best any routing can do (context)"}
"""Baselines of the gain ``T_TDN / T_RDN``."""


DEFAULT_SEEDS = 10
"""Random mappings of the TDN per point (``n_seeds``, ``--seeds``): every figure is reported as the mean over them
and their spread."""

SUMMARIES = ("mean", "std", "min", "max")
"""Summaries over the ``seed`` dimension, one variable each (``gain_adaptive_mean``, ...): ``std`` is the sample
standard deviation (``ddof=1``; NaN with one seed); a NaN draw makes every summary of the point NaN (a mean over
fewer draws would be another statistic), an infinite one its mean and max."""


def _summaries(a: np.ndarray) -> dict[str, np.ndarray]:
    """``{summary: array}`` of ``a`` (last axis: the seeds), :data:`SUMMARIES`."""
    with np.errstate(invalid="ignore", over="ignore"):
        return {"mean": a.mean(axis=-1), "min": a.min(axis=-1), "max": a.max(axis=-1),
                "std": a.std(axis=-1, ddof=1) if a.shape[-1] > 1 else np.full(a.shape[:-1], np.nan)}


_SUMMARY_TEXT = {"mean": "mean over the seeds (the TDN's random mappings)",
                 "std": "sample standard deviation (ddof=1) over the seeds",
                 "min": "smallest over the seeds", "max": "largest over the seeds"}


def allocation_mode_study(machine: RdnMachine = PAPER_MACHINE, groups: Sequence[int] = DEFAULT_GROUPS,
                          patterns: Sequence[str] = tuple(PATTERNS), background: float = 0.26,
                          seed: int = 0, progress=None, bounds: Sequence[str] = ("adaptive",),
                          max_lp_nnz: int = MAX_LP_NNZ, solver: str = "highs",
                          n_seeds: int = DEFAULT_SEEDS, adaptive: Sequence[str] = TDN_ADAPTIVE) -> xr.Dataset:
    """The paper's Fig. 4 study on ``machine``: dataset with dims ``(pattern, groups)`` and, for everything that
    depends on the TDN's random mapping, ``seed`` (``n_seeds`` draws); times in seconds.

    Raw variables (:data:`VARIABLES`; times in s per exchange of the pattern;
    hops: router-to-router links per byte that leaves its node): per network
    and routing, ``rdn_{minimal,valiant}_*`` (inside groups, TAGO between
    them; dims ``(pattern, groups)``: GRAP's allocation is not random) and
    ``tdn_{minimal,valiant,valiant_router}_*`` (dims ``(pattern, groups,
    seed)``): ``_time`` (no background), ``_time_bg``, ``_net_time_bg``
    (router links only), ``_hops``; the TDN's bounds (certified lower bounds
    of the time; NaN with the reason in ``bound_refused`` where not computed,
    NaN too when not asked for in ``bounds``): ``tdn_adaptive_time``,
    ``tdn_adaptive_time_bg``, ``tdn_optimal_time``, ``tdn_optimal_time_bg``,
    ``tdn_*_bound_s``.

    Derived: ``rdn_time``, ``rdn_time_bg``, ``rdn_net_time_bg``, ``rdn_hops``
    (the faster routing inside groups); per seed, ``tdn_oblivious_time``,
    ``tdn_oblivious_time_bg``, ``tdn_oblivious_net_time_bg``,
    ``tdn_oblivious_hops`` and ``tdn_oblivious_routing`` (the fastest
    oblivious routing, with background for ``_bg`` and hops); gains, ratios
    ``T_TDN / T_RDN`` (1: no change; 1.32 is the paper's "32% speedup"), with
    background (the paper's baseline) and ``_no_bg``: ``gain_adaptive``
    against the ideal adaptive bound (conservative: the headline),
    ``gain_oblivious`` (the upper end: real adaptive routing lies between),
    ``gain_optimal`` (against the best any routing can do); ``network_gain_oblivious`` (router links only);
    ``tdn_bg_slowdown_{routing}`` = ``time_bg / time - 1`` for every TDN
    routing and bound; ``hops_reduction`` = ``1 - rdn_hops / tdn_oblivious_hops``,
    ``hops_reduction_minimal`` (both minimal); ``seconds`` (wall time per
    point, every seed), ``refused`` (the ResourceError message, '' when it ran) and
    ``bound_refused`` (per seed). Coordinate ``mode``: the GRAP mode of each pattern.

    Summaries over the seeds (dims ``(pattern, groups)``), for the TDN's bounds' times and every derived variable
    with a ``seed`` dimension: ``<name>_mean``, ``<name>_std`` (sample, ``ddof=1``), ``<name>_min``,
    ``<name>_max`` (:data:`SUMMARIES`).

    ``bounds``: which of ``adaptive`` and ``optimal`` to compute; ``adaptive``: which adaptive routings of the TDN
    to compute (:data:`TDN_ADAPTIVE`: UGAL-G, a fixed point per seed, with and without background; ``()``: none,
    their columns NaN: on DF(12, 24, 12, 288) about 13 s per solve, most of a point's time);
    ``max_lp_nnz``: the largest LP attempted; ``solver``: ``highs`` or ``pdhg``. ``n_seeds``: random mappings of
    the TDN per point; draw ``s`` of a point is seeded :func:`mapping_seed` ``(seed, pattern, q, s)``, which
    depends on the point and ``s`` only: a run of some patterns, some sizes or fewer seeds gives the same numbers
    for what it shares with a larger run.
    """
    for arg, value, what in (("patterns", patterns, f"a list of pattern names among {' | '.join(PATTERNS)}"),
                             ("groups", groups, "a list of group counts (integers >= 2)"),
                             ("bounds", bounds, f"a list among {' | '.join(BOUNDS)}"),
                             ("adaptive", adaptive, f"a list among {' | '.join(TDN_ADAPTIVE)} (or empty)")):
        if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple, np.ndarray, range)):
            raise ConfigTypeError(arg, value, what, f"Got a {type(value).__name__}; e.g. {arg}=[...].")
    for name in patterns:
        require(name in PATTERNS, "patterns", name, " | ".join(PATTERNS))
    for q in groups:
        if isinstance(q, bool) or not is_int(q):
            raise ConfigTypeError("groups", q, "integers >= 2 (group counts)")
    check_machine(machine, patterns)
    bounds = tuple(bounds)
    for name in bounds:
        require(name in BOUNDS, "bounds", name, " | ".join(BOUNDS))
    adaptive = tuple(adaptive)
    for name in adaptive:
        require(name in TDN_ADAPTIVE, "adaptive", name, " | ".join(TDN_ADAPTIVE))
    seed = check_seed("seed", seed)
    n_seeds = positive_int("n_seeds", n_seeds)
    max_lp_nnz = positive_int("max_lp_nnz", max_lp_nnz)
    fraction = positive_float("background", background, allow_zero=True)
    require(fraction < 1, "background", background, "a fraction in [0, 1)")
    sizes = sorted({positive_int("groups", q, minimum=2) for q in groups if q <= machine.g} | {machine.g})
    pats = list(patterns)
    shape, shape_s = (len(pats), len(sizes)), (len(pats), len(sizes), n_seeds)
    data = {v: np.full(shape_s if v.startswith("tdn_") else shape, np.nan) for v in VARIABLES}
    secs = np.zeros(shape)
    refused = np.full(shape, "", dtype=object)
    bound_refused = np.full(shape_s, "", dtype=object)
    tdn = None
    try:
        tdn = dragonfly(machine.p, machine.a, machine.h, machine.g, bandwidth_p=machine.bandwidth,
                        bandwidth_l=machine.bandwidth, bandwidth_r=machine.bandwidth)
    except ResourceError as e:
        refused[:] = f"TDN: {e}"
    for i, pat in enumerate(pats):
        for j, q in enumerate(sizes):
            t0 = time.perf_counter()
            try:
                tr, pol, nodes = _job(machine, pat, q)
                vals = _rdn_point(machine, pat, q, tr, pol, nodes, fraction)
                draws = [_tdn_point(machine, tdn, tr, nodes.size, fraction, mapping_seed(seed, pat, q, s), bounds,
                                    max_lp_nnz, solver, adaptive) for s in range(n_seeds)] if tdn is not None else []
                for k, v in vals.items():
                    data[k][i, j] = v
                for s, (more, why) in enumerate(draws):
                    for k, v in more.items():
                        data[k][i, j, s] = v
                    bound_refused[i, j, s] = why
            except (ResourceError, PointRefused) as e:
                refused[i, j] = (refused[i, j] + "; " if refused[i, j] else "") + str(e)
            secs[i, j] = time.perf_counter() - t0
            if progress is not None:
                progress(pat, q, secs[i, j])
    derived: dict[str, tuple[np.ndarray, dict]] = {}
    T = "T_TDN / T_RDN (1: no change)"
    # RDN: the faster routing inside groups (no seed: GRAP's allocation is deterministic)
    mn, va = data["rdn_minimal_time_bg"], data["rdn_valiant_time_bg"]
    use_val = va < mn
    derived["rdn_time"] = (np.fmin(data["rdn_minimal_time"], data["rdn_valiant_time"]),
                           {"units": "s", "long_name": "RDN-GRAP: completion time, faster routing inside groups, "
                                                       "no background"})
    derived["rdn_time_bg"] = (np.where(use_val, va, mn), {"units": "s", "long_name": "RDN-GRAP: completion time "
                                                          "with background, faster routing inside groups"})
    derived["rdn_net_time_bg"] = (np.fmin(data["rdn_minimal_net_time_bg"], data["rdn_valiant_net_time_bg"]),
                                  {"units": "s", "long_name": "RDN-GRAP: time with background, router links only"})
    derived["rdn_hops"] = (np.where(use_val, data["rdn_valiant_hops"], data["rdn_minimal_hops"]),
                           {"units": "1", "long_name": "RDN-GRAP: hops of the faster routing"})
    rdn_ = lambda name: derived[name][0][..., None]  # noqa: E731  (broadcast over the seeds)
    # TDN: the fastest oblivious routing per seed (NaN only where every routing is NaN)
    stack = {v: np.stack([data[f"tdn_{rt}_{v}"] for rt in TDN_ROUTINGS]) for v in _KINDS}
    tbg = np.where(np.isnan(stack["time_bg"]), np.inf, stack["time_bg"])
    best = np.argmin(tbg, axis=0)
    none = np.isnan(stack["time_bg"]).all(axis=0)
    pick = lambda a: np.where(none, np.nan, np.take_along_axis(a, best[None], 0)[0])  # noqa: E731
    with np.errstate(all="ignore"):
        derived["tdn_oblivious_time"] = (np.where(none, np.nan, np.nanmin(np.where(np.isnan(stack["time"]), np.inf,
                                                                                     stack["time"]), axis=0)),
                                         {"units": "s", "long_name": "TDN: completion time of the fastest oblivious "
                                                                     "routing (minimal, valiant, valiant_router), "
                                                                     "no background"})
    derived["tdn_oblivious_time_bg"] = (pick(stack["time_bg"]), {"units": "s", "long_name": "TDN: completion time "
                                        "of the fastest oblivious routing with background"})
    derived["tdn_oblivious_net_time_bg"] = (pick(stack["net_time_bg"]), {"units": "s", "long_name": "TDN: time "
                                            "with background of that routing, router links only"})
    derived["tdn_oblivious_hops"] = (pick(stack["hops"]), {"units": "1", "long_name": "TDN: hops of the fastest "
                                                                                        "oblivious routing"})
    routing_name = np.where(none, "", np.asarray(TDN_ROUTINGS, dtype=object)[best]).astype(str)
    with np.errstate(divide="ignore", invalid="ignore"):
        for b, text in GAINS.items():
            for suffix, bg_text in (("", "with background"), ("_no_bg", "no background")):
                obl = derived[f"tdn_oblivious_time{'_bg' if not suffix else ''}"][0]
                num = obl if b == "oblivious" else data[f"tdn_{b}_time{'_bg' if not suffix else ''}"]
                if b == "adaptive":  # conservative: never above a routing the bound does not cover
                    num = np.where(np.isnan(num), num, np.fmin(num, obl))
                den = rdn_(f"rdn_time{'_bg' if not suffix else ''}")
                derived[f"gain_{b}{suffix}"] = (num / den, {"units": "1", "long_name": f"RDN-GRAP's gain {T} "
                                                            f"against {text}, {bg_text}"})
        derived["network_gain_oblivious"] = (derived["tdn_oblivious_net_time_bg"][0] / rdn_("rdn_net_time_bg"),
                                             {"units": "1", "long_name": f"{T} on router-to-router links only, "
                                                                         "against the fastest oblivious routing"})
        for rt in TDN_ROUTINGS + TDN_ADAPTIVE + tuple(BOUNDS):
            derived[f"tdn_bg_slowdown_{rt}"] = (data[f"tdn_{rt}_time_bg"] / data[f"tdn_{rt}_time"] - 1.0,
                                                {"units": "1", "long_name": f"TDN {rt}: time_bg / time - 1, the "
                                                                            "time the background adds"})
        derived["hops_reduction"] = (1.0 - rdn_("rdn_hops") / derived["tdn_oblivious_hops"][0],
                                     {"units": "1", "long_name": "1 - RDN hops / hops of the TDN's fastest "
                                                                 "oblivious routing"})
        derived["hops_reduction_minimal"] = (1.0 - data["rdn_minimal_hops"][..., None] / data["tdn_minimal_hops"],
                                             {"units": "1", "long_name": "1 - RDN hops / TDN hops, both minimal"})
    summarised = [f"tdn_{b}_{v}" for b in tuple(BOUNDS) + TDN_ADAPTIVE for v in ("time", "time_bg")] + \
        [k for k, (v, _) in derived.items() if v.ndim == 3]
    summaries: dict[str, tuple[np.ndarray, dict]] = {}
    for k in summarised:
        arr, attrs = (data[k], _attrs(k)) if k in data else derived[k]
        for stat, v in _summaries(arr).items():
            summaries[f"{k}_{stat}"] = (v, {"units": attrs["units"],
                                            "long_name": f"{attrs['long_name']}: {_SUMMARY_TEXT[stat]}"})
    dim = lambda v: ("pattern", "groups", "seed")[: np.ndim(v)]  # noqa: E731
    ds = xr.Dataset(
        {k: (dim(v), v, _attrs(k)) for k, v in data.items()}
        | {k: (dim(v), v, a) for k, (v, a) in derived.items()}
        | {k: (dim(v), v, a) for k, (v, a) in summaries.items()}
        | {"tdn_oblivious_routing": (dim(routing_name), routing_name,
                                     {"long_name": "TDN: the fastest oblivious routing with background"}),
           "seconds": (dim(secs), secs, {"units": "s", "long_name": "wall time of the point, every seed"}),
           "refused": (dim(refused), refused.astype(str), {"long_name": "why the evaluator refused the point "
                                                                        "('' ran)"}),
           "bound_refused": (dim(bound_refused), bound_refused.astype(str),
                             {"long_name": "why a TDN bound is NaN ('' when every asked bound was computed)"})},
        coords={"pattern": pats, "groups": sizes,
                "seed": ("seed", np.arange(n_seeds), {"long_name": "draw of the TDN's random mapping: seeded "
                                                                   "(attrs seed, pattern's place in PATTERNS, "
                                                                   "groups, draw)"}),
                "mode": ("pattern", [PATTERNS[p] for p in pats]),
                "job_nodes_per_group": ("pattern", [machine.nodes_per_group if p == "stencil" else
                                                     machine.adaptive_nodes if p == "all_to_all" else
                                                     (machine.nodes_per_group + (3 * machine.nodes_per_group) // 4) / 2
                                                     for p in pats])},
    )
    ds.attrs.update({"machine": f"DF({machine.p},{machine.a},{machine.h},{machine.g})",
                     "n_nodes": machine.g * machine.nodes_per_group, "bandwidth": machine.bandwidth,
                     "ports_per_switch": machine.ports_per_switch, "background": fraction, "seed": seed,
                     "n_seeds": n_seeds,
                     "seed_rule": "the TDN's mapping of a point, draw s: numpy default_rng((seed, k, groups, s)), "
                                  "k the pattern's place in stencil, neighbouring, all_to_all",
                     "summaries": "_mean, _std (sample, ddof=1), _min, _max over the seed dimension",
                     "tdn_mapping": "random nodes of the whole machine", "rdn_routing": "tago",
                     "tdn_routings": ",".join(TDN_ROUTINGS), "tdn_adaptive": ",".join(adaptive),
                     "tdn_bounds": ",".join(bounds),
                     "max_lp_nnz": max_lp_nnz, "bound_solver": solver,
                     "headline": "gain_adaptive_mean (conservative: RDN-GRAP against the ideal adaptive lower bound, "
                                 "mean over the seeds)",
                     "evaluator_version": __version__})
    return ds


def _check_study(study, baseline: str) -> None:
    """``study`` (of :func:`speedup_table`) is a dataset of :func:`allocation_mode_study` with what ``baseline``
    needs; a :class:`ConfigTypeError`/:class:`ConfigError` naming ``study`` otherwise."""
    allowed = ("an xarray.Dataset of evaluator.studies.allocation_mode_study (dims pattern, groups; "
               "or None: computed here)")
    if not isinstance(study, xr.Dataset):
        value = study if isinstance(study, (int, float, str, bool)) else type(study).__name__
        raise ConfigTypeError("study", value, allowed,
                              "Pass study=allocation_mode_study(machine, groups), or xarray.open_dataset(PATH) of a "
                              "study written by evaluator study rdn --out PATH.")
    need = ["pattern", "groups", f"gain_{baseline}", f"gain_{baseline}_no_bg"]
    missing = [v for v in need if v not in study.variables]
    if missing:
        raise ConfigError("study", f"a dataset without {missing}", f"{allowed}, with {need} for baseline="
                                                                  f"{baseline!r}",
                          "Is it the dataset of allocation_mode_study (not its speedup table)? A study computed "
                          "by another version of the evaluator may lack the variables of this baseline.")
    if baseline in TDN_ADAPTIVE and baseline not in str(study.attrs.get("tdn_adaptive", baseline)).split(","):
        raise ConfigError("study", f"a study without {baseline} (adaptive={study.attrs.get('tdn_adaptive')!r})",
                          f"a study that computed {baseline} for baseline={baseline!r}",
                          f"Compute it: allocation_mode_study(..., adaptive=({baseline!r},)), or evaluator study "
                          f"rdn --adaptive {baseline}.")


def speedup_table(machine: RdnMachine = PAPER_MACHINE, groups: Sequence[int] = DEFAULT_GROUPS,
                  background: float = 0.26, seed: int = 0, study: xr.Dataset | None = None,
                  baseline: str = "adaptive", n_seeds: int = DEFAULT_SEEDS) -> xr.Dataset:
    """Speedup of RDN-GRAP over the TDN per GRAP mode and job size: dims ``(mode, groups)``.

    ``mode``: the four GRAP modes; ``minimal_balance`` and ``custom_balance``
    take the stencil's numbers, ``custom`` the neighbouring pattern's,
    ``adaptive`` the all-to-all's. ``baseline``: the TDN time the ratio is
    against, ``adaptive`` (default: the ideal adaptive lower bound, the
    conservative end), ``oblivious`` (the fastest oblivious routing, the
    upper end) or ``optimal``; recorded in ``attrs["baseline"]`` with the
    machine. Variables: ``speedup`` (the ratio ``T_TDN / T_RDN`` with
    background, the study's ``gain_<baseline>``, 1: no change; what
    :class:`evaluator.workload.SpeedupTable` reads: the workload's
    ``speedup_rule`` ``time_ratio`` makes a job's MPI time ``MPI_Time /
    speedup``, ``excess`` saves ``speedup - 1`` of it, the paper's ``Acc_Time
    = Job_Time - MPI_Time x Speedup(Mode, Job_Size)`` read with "32% speedup"
    as 0.32), ``time_saved`` (``1 - T_RDN / T_TDN = 1 - 1 / speedup``, the
    fraction of communication time removed), ``speedup_no_bg`` (the ratio
    without background); ``speedup`` and ``speedup_no_bg`` are means over the study's seeds (the TDN's random
    mappings), ``speedup_std``, ``speedup_min`` and ``speedup_max`` the spread of ``speedup`` (:data:`SUMMARIES`).
    ``groups`` is the job size in groups (job nodes =
    groups x nodes per group used; the workload simulation interpolates
    between them). Points the evaluator refused, and bounds not computed, are
    NaN. ``study``: a dataset from :func:`allocation_mode_study` to reuse (else
    it is computed, with the bound ``baseline`` needs).
    """
    require(baseline in GAINS, "baseline", baseline, " | ".join(GAINS))
    if study is not None:
        _check_study(study, baseline)
    if study is None:
        study = allocation_mode_study(machine, groups, tuple(PATTERNS), background, seed,
                                      bounds=(baseline,) if baseline in BOUNDS else (), n_seeds=n_seeds,
                                      adaptive=(baseline,) if baseline in TDN_ADAPTIVE else ())
    ds = study
    of_mode = {"minimal_balance": "stencil", "custom_balance": "stencil", "custom": "neighbouring",
               "adaptive": "all_to_all"}
    modes = [mo for mo, pat in of_mode.items() if pat in ds.pattern.values]
    pats = [of_mode[mo] for mo in modes]
    def over_seeds(name: str) -> dict[str, np.ndarray]:
        a = ds[name].sel(pattern=pats)
        if "seed" not in a.dims:                       # a study of one mapping (before n_seeds): one draw
            a = a.expand_dims("seed", axis=-1)
        return _summaries(a.transpose("pattern", "groups", "seed").values)

    gain, gain0 = over_seeds(f"gain_{baseline}"), over_seeds(f"gain_{baseline}_no_bg")
    with np.errstate(divide="ignore", invalid="ignore"):
        saved = 1.0 - 1.0 / gain["mean"]
    against = f"against {GAINS[baseline]}"
    seeds = f"mean over the study's {ds.sizes.get('seed', 1)} random mappings of the TDN"
    out = xr.Dataset(
        {"speedup": (("mode", "groups"), gain["mean"], {"units": "1", "long_name": f"T_TDN / T_RDN with background, "
                                                                                   f"{against}, {seeds}"}),
         "time_saved": (("mode", "groups"), saved, {"units": "1", "long_name": "1 - T_RDN / T_TDN = 1 - 1 / speedup"}),
         "speedup_no_bg": (("mode", "groups"), gain0["mean"], {"units": "1", "long_name": f"T_TDN / T_RDN, no "
                                                                                          f"background, {against}, "
                                                                                          f"{seeds}"})}
        | {f"speedup_{stat}": (("mode", "groups"), gain[stat], {"units": "1", "long_name": f"T_TDN / T_RDN with "
                                                                 f"background, {against}: {_SUMMARY_TEXT[stat]}"})
           for stat in ("std", "min", "max")},
        coords={"mode": modes, "groups": ds.groups.values, "pattern": ("mode", pats)})
    out.attrs.update(ds.attrs)
    out.attrs["baseline"] = baseline
    out.attrs["baseline_text"] = GAINS[baseline]
    return out


def _over_seeds(ds: xr.Dataset, name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool]:
    """``(mean, min, max, per_seed)`` of ``name`` over the seeds, each of dims ``(pattern, groups)``
    (``per_seed``: whether it has a ``seed`` dimension; else the three are the values)."""
    a = ds[name]
    if "seed" not in a.dims:
        v = a.transpose("pattern", "groups").values
        return v, v, v, False
    st = _summaries(a.transpose("pattern", "groups", "seed").values)
    return st["mean"], st["min"], st["max"], a.sizes["seed"] > 1


def _cells(ds: xr.Dataset, name: str, fmt, scale: float = 1.0) -> list[str]:
    """One text per point (pattern-major): ``fmt(mean)``, then ``[fmt(min), fmt(max)]`` over the seeds where
    ``name`` has more than one; ``n/a`` where not finite."""
    mean, lo, hi, spread = _over_seeds(ds, name)
    f = lambda v: "n/a" if not np.isfinite(v) else fmt(v / scale)  # noqa: E731
    return [f(m) + (f" [{f(a)}, {f(b)}]" if spread and np.isfinite(m) else "")
            for m, a, b in zip(mean.reshape(-1), lo.reshape(-1), hi.reshape(-1))]


def _time_cells(ds: xr.Dataset, name: str) -> tuple[str, list[str]]:
    """A time column in one decimal SI unit chosen for it (DESIGN.md): its header and its cells."""
    from ..display import display_unit, format_number

    unit, factor = display_unit("s", _over_seeds(ds, name)[0].reshape(-1))
    return f"{name} [{unit}]", _cells(ds, name, format_number, factor)


def _routing_cells(ds: xr.Dataset) -> list[str]:
    """The TDN's fastest oblivious routing per point: its name, or each name with its count of seeds."""
    r = ds["tdn_oblivious_routing"]
    r = r.expand_dims("seed", axis=-1) if "seed" not in r.dims else r.transpose("pattern", "groups", "seed")
    out = []
    for row in r.values.reshape(-1, r.shape[-1]):
        names, counts = np.unique([x for x in row if x], return_counts=True)
        order = np.argsort(-counts, kind="stable")
        out.append(str(names[0]) if len(names) == 1 else
                   ", ".join(f"{names[k]} {counts[k]}" for k in order) if len(names) else "n/a")
    return out


def format_study(ds: xr.Dataset) -> str:
    """The study as three tables for people: times and gains (``x``: the ratio ``T_TDN / T_RDN``), the TDN's
    slowdown from the background per routing, hops; times in decimal SI units, one per column. A figure that
    depends on the TDN's random mapping is the mean over the seeds, then ``[min, max]`` over them."""
    import pandas as pd

    index = pd.MultiIndex.from_product([list(ds.pattern.values), [int(q) for q in ds.groups.values]],
                                       names=["pattern", "groups"])
    shown = tuple(b for b in BOUNDS if b in ds.attrs.get("tdn_bounds", ",".join(BOUNDS)).split(","))
    asked = ds.attrs.get("tdn_adaptive", ",".join(TDN_ADAPTIVE)).split(",")
    adaptive = tuple(a for a in TDN_ADAPTIVE if f"tdn_{a}_time_bg" in ds and a in asked)
    tcols = ["rdn_time_bg", "tdn_oblivious_time_bg"] + [f"tdn_{a}_time_bg" for a in adaptive] + \
        [f"tdn_{b}_time_bg" for b in shown]
    t = pd.DataFrame(dict(_time_cells(ds, c) for c in tcols), index=index)
    t.insert(2, "oblivious routing", _routing_cells(ds))
    x = lambda v: f"{v:.2f}x"  # noqa: E731
    for b in ("adaptive",) + adaptive + ("oblivious", "optimal"):
        if b in ("oblivious",) + adaptive or b in shown:
            t[f"gain vs {b}"] = _cells(ds, f"gain_{b}", x)
    for b in ("adaptive",) + adaptive + ("oblivious",):
        t[f"no bg vs {b}"] = _cells(ds, f"gain_{b}_no_bg", x)
    pct = lambda v: f"{100 * v:+.1f}%"  # noqa: E731
    s = pd.DataFrame({rt: _cells(ds, f"tdn_bg_slowdown_{rt}", pct) for rt in TDN_ROUTINGS + adaptive + shown},
                     index=index)
    h = pd.DataFrame({"RDN hops": _cells(ds, "rdn_hops", lambda v: f"{v:.2f}"),
                      "TDN hops": _cells(ds, "tdn_oblivious_hops", lambda v: f"{v:.2f}"),
                      "fewer hops": _cells(ds, "hops_reduction", pct),
                      "fewer hops, both minimal": _cells(ds, "hops_reduction_minimal", pct)}, index=index)
    notes = sorted({w for v in ds.bound_refused.values.reshape(-1) for w in str(v).split("; ") if w})
    n = int(ds.sizes.get("seed", 1))
    seeds = (f"{n} seeds (random mappings of the TDN, base seed {ds.attrs['seed']}): mean [min, max] over them"
             if n > 1 else f"seed {ds.attrs['seed']}, one random mapping of the TDN")
    lines = [f"{ds.attrs['machine']}, {100 * ds.attrs['background']:g}% background, {seeds}; "
             "times with background; gain = T_TDN / T_RDN, against "
             + ("three TDN baselines side by side: adaptive (the ideal adaptive bound, best per-group-pair mix of "
                "minimal and Valiant: the headline), ugal (UGAL-G, the adaptive routing Dragonflies deploy, a "
                "flow-level model that adapts per router pair and can beat that bound) and oblivious"
                if "ugal" in adaptive else
                "two TDN baselines side by side (UGAL-G not computed: --adaptive none): adaptive (the ideal adaptive "
                "bound, best per-group-pair mix of minimal and Valiant: the headline) and oblivious")
             + " (the fastest of minimal/valiant/valiant_router: the upper end; oblivious routing: "
             "the fastest, with its count of seeds where they differ); the lowest gain is the conservative end "
             "(against any routing: --bounds optimal); n/a: not computed (below)",
             t.to_string(), "", "TDN slowdown from the background (time_bg / time - 1), per routing and bound:",
             s.to_string(), "", h.to_string()]
    if notes:
        lines += ["", "bounds and UGAL not computed (n/a):"] + [f"  {w}" for w in notes]
    points = [f"  {pat} {int(q)} groups: {ds.refused.sel(pattern=pat, groups=q).item()}"
              for pat in ds.pattern.values for q in ds.groups.values if ds.refused.sel(pattern=pat, groups=q).item()]
    if points:
        lines += ["", "points not computed (n/a):"] + points
    return "\n".join(lines)


def format_speedup_table(table: xr.Dataset) -> str:
    """The workload's speedup table (:func:`speedup_table`) for people: one row per GRAP mode, one column per job
    size in groups, the ratio ``T_TDN / T_RDN`` with background (``1.30x``: the paper's "30% speedup"), the mean
    over the study's seeds, then ``[min, max]`` over them where there are several."""
    import pandas as pd

    x = lambda v: "n/a" if not np.isfinite(v) else f"{v:.2f}x"  # noqa: E731
    n = int(table.attrs.get("n_seeds", 1))
    spread = n > 1 and "speedup_min" in table

    def cell(mo, q):
        v = float(table.speedup.sel(mode=mo, groups=q))
        if not spread or not np.isfinite(v):
            return x(v)
        return f"{x(v)} [{x(float(table.speedup_min.sel(mode=mo, groups=q)))}, " \
               f"{x(float(table.speedup_max.sel(mode=mo, groups=q)))}]"

    df = pd.DataFrame({f"{int(q)} groups": [cell(mo, q) for mo in table["mode"].values] for q in table.groups.values},
                      index=pd.Index([f"{mo} ({pat})" for mo, pat in zip(table["mode"].values,
                                                                          table["pattern"].values)], name="mode"))
    seeds = f"; mean [min, max] over {n} seeds" if spread else ""
    return (f"speedup table, {table.attrs.get('machine', '')}: T_TDN / T_RDN with background, against "
            f"{table.attrs.get('baseline', '')} ({table.attrs.get('baseline_text', '')}){seeds}\n" + df.to_string())


def plot_study(ds: xr.Dataset, path) -> None:
    """One PNG of the study: RDN-GRAP's gain ``T_TDN / T_RDN`` (with background) against job size, both ends
    (the ideal adaptive bound, solid; the fastest oblivious routing, dashed), a reference line at 1; and the
    completion times with background (RDN-GRAP solid, the TDN's fastest oblivious routing dashed) in one
    decimal SI unit. One colour per pattern, job sizes ascending on a log axis, points marked; what depends on
    the TDN's random mapping is the mean over the seeds with a band from their min to their max."""
    from matplotlib.figure import Figure

    from ..display import axis_label, shared_unit
    from ..io import save_figure

    fig = Figure(figsize=(11, 4.2))
    ax_g, ax_t = fig.subplots(1, 2)
    q = np.asarray(ds.groups.values, dtype=float)
    stats = {v: _over_seeds(ds, v) for v in ("rdn_time_bg", "tdn_oblivious_time_bg", "gain_adaptive",
                                              "gain_oblivious") if v in ds}
    unit, factor = shared_unit("s", [stats[v][0] for v in ("rdn_time_bg", "tdn_oblivious_time_bg")])
    for k, pat in enumerate(ds.pattern.values):
        colour = f"C{k}"
        for b, style in (("adaptive", "-"), ("oblivious", "--")):
            if f"gain_{b}" in stats and np.isfinite(stats[f"gain_{b}"][0][k]).any():
                mean, lo, hi, spread = stats[f"gain_{b}"]
                ax_g.plot(q, mean[k], style, marker="o", color=colour, label=f"{pat}, vs {b}")
                if spread:                             # min-max over the seeds
                    ax_g.fill_between(q, lo[k], hi[k], color=colour, alpha=0.15, linewidth=0)
        ax_t.plot(q, stats["rdn_time_bg"][0][k] / factor, "-", marker="o", color=colour, label=f"{pat}, RDN-GRAP")
        mean, lo, hi, spread = stats["tdn_oblivious_time_bg"]
        ax_t.plot(q, mean[k] / factor, "--", marker="s", color=colour, label=f"{pat}, TDN oblivious")
        if spread:
            ax_t.fill_between(q, lo[k] / factor, hi[k] / factor, color=colour, alpha=0.15, linewidth=0)
    ax_g.axhline(1.0, color="0.3", linewidth=0.8)
    ax_g.set_ylabel(axis_label("gain T_TDN / T_RDN", "1"))
    ax_t.set_ylabel(axis_label("completion time with background", unit))
    ax_t.set_yscale("log")
    for ax in (ax_g, ax_t):
        ax.set_xscale("log", base=2)
        ax.set_xticks(q, [str(int(v)) for v in q])
        ax.set_xlabel(axis_label("job size", "groups"))
        ax.legend(fontsize=7)
        ax.grid(True, alpha=0.3)
    n = int(ds.sizes.get("seed", 1))
    fig.suptitle(f"RDN-GRAP vs TDN on {ds.attrs.get('machine', '')}, "
                 f"{100 * float(ds.attrs.get('background', 0)):g}% background"
                 + (f"; mean over {n} random mappings of the TDN, band: min-max" if n > 1 else ""))
    fig.tight_layout()
    save_figure(fig, path)


DEFAULT_OUT = "results/rdn"
"""Where ``evaluator study rdn`` writes without ``--out``."""


def _parse_groups(text: str) -> list[int]:
    import re

    parts = [x.strip() for x in str(text).split(",")]
    if not parts or not all(re.fullmatch(r"[+]?[0-9]+", x) and int(x) >= 2 for x in parts):
        raise ConfigError("--groups", text, "comma-separated job sizes in groups, integers >= 2 (e.g. 2,4,8; sizes "
                                            "above the machine's G are dropped, G itself is always added)")
    return [int(x) for x in parts]


def _parse_names(flag: str, text: str, allowed: Sequence[str], none_ok: bool = False) -> tuple[str, ...]:
    what = f"comma-separated names among {','.join(allowed)}, each once" + (", or none" if none_ok else "")
    if none_ok and str(text).strip() == "none":
        return ()
    names = [x.strip() for x in str(text).split(",")]
    if not names or not all(n in allowed for n in names) or len(set(names)) != len(names):
        raise ConfigError(flag, text, what)
    return tuple(names)


def _parse_number(flag: str, text: str, kind: str, allowed: str, ok) -> float | int:
    try:
        value = int(text) if kind == "int" else float(text)
    except (TypeError, ValueError):
        raise ConfigError(flag, text, allowed) from None
    if not ok(value):
        raise ConfigError(flag, text, allowed)
    return value


def output_paths(out: str, machine: RdnMachine, stamp: str) -> tuple[Path, Path]:
    """``(dataset, plot)`` of ``--out``: a path ending in ``.nc`` is the dataset's file (the plot next to it, same
    name, ``.png``); anything else is a directory, where both are named after the machine and the UTC time
    ``stamp`` (``rdn-P-A-H-G-YYYYmmddTHHMMSSZ.nc``: no run overwrites another)."""
    o = Path(out)
    if o.suffix == ".nc":
        return o, o.with_suffix(".png")
    stem = f"rdn-{machine.p}-{machine.a}-{machine.h}-{machine.g}-{stamp}"
    return o / f"{stem}.nc", o / f"{stem}.png"


def check_output_file(flag: str, value: str, path: Path) -> None:
    """Refuse (ConfigError naming ``flag`` and ``value``) a file that cannot be written, before any work: an
    existing directory, or a directory that cannot be made or written to. Leaves nothing behind."""
    from ..io import check_writable

    if path.is_dir():
        raise ConfigError(flag, value, "a file path (FILE.nc) or a directory for the outputs",
                          f"{path} is a directory; nothing was computed.")
    up = path.parent
    while not up.exists() and up != up.parent:
        up = up.parent
    if up.exists() and not up.is_dir():
        raise ConfigError(flag, value, "a path in a directory this user can create and write",
                          f"{up} is a file, not a directory; nothing was computed.")
    try:
        check_writable(flag, path.parent)
    except ConfigError as e:
        raise ConfigError(flag, value, "a path in a directory this user can create and write", e.hint) from None


def main(argv: Sequence[str] | None = None, prog: str = "evaluator study rdn") -> int:
    """``evaluator study rdn [--machine P,A,H,G] [--groups 2,4,...] [--patterns ...] [--bounds ...]
    [--background F] [--seed S] [--seeds N] [--out DIR|FILE.nc] [--speedup-out FILE.nc --baseline adaptive]``: run
    :func:`allocation_mode_study` (default: the paper's machine), print the times, the gains (ratios T_TDN /
    T_RDN) against both ends, the TDN's background slowdown, hops and the workload's speedup table (mode x
    groups), then write the study as netCDF and its plot as PNG (``--out``) and, with ``--speedup-out``, the
    speedup table as netCDF (:func:`speedup_table`). Every option and output is checked before any work."""
    from .._args import ArgumentParser  # an option given twice with two values is refused, not the last kept
    from ..errors import WordedError, check_seed
    from ..io import write_netcdf

    class Parser(ArgumentParser):
        def error(self, message):  # one line through the CLI's error handling, not argparse's usage + exit
            raise WordedError(f"{message} (see {prog} --help)")

    ap = Parser(prog=prog, description="GRAP's allocation modes on a reconfigurable Dragonfly (RDN) against a "
                "traditional one (TDN), Feng et al. Sec. 5.2. Prints the times, the gains T_TDN / T_RDN against both "
                "ends (the ideal adaptive bound, the fastest oblivious routing), the TDN's background slowdown, "
                "hops and the workload's speedup table (mode x groups); writes the study's dataset (netCDF) and plot "
                "(PNG) under --out and the speedup table to --speedup-out. Every option and output is checked "
                "before any work. See docs/rdn.md.")
    ap.add_argument("--machine", default="12,24,12,288", metavar="P,A,H,G",
                    help=f"the Dragonfly: {MACHINE_GRAMMAR}; DF(P,A,H,G) as the datasets record it is accepted too")
    ap.add_argument("--groups", default=",".join(map(str, DEFAULT_GROUPS)), metavar="Q,Q,...",
                    help="job sizes in groups, integers >= 2 (default %(default)s; sizes above G are dropped, G is "
                         "always added)")
    ap.add_argument("--patterns", default=",".join(PATTERNS), help=f"some of {','.join(PATTERNS)} (default: all)")
    ap.add_argument("--bounds", default="adaptive",
                    help="TDN bounds to compute: adaptive, optimal, both (adaptive,optimal) or none")
    ap.add_argument("--adaptive", default=",".join(TDN_ADAPTIVE),
                    help=f"TDN adaptive routings to compute: {','.join(TDN_ADAPTIVE)} (UGAL-G, the default) or none "
                         "(its columns n/a; on the paper's machine most of a point's time)")
    ap.add_argument("--max-lp-nnz", default=str(MAX_LP_NNZ), metavar="N",
                    help="largest LP attempted, in nonzeros (default %(default)s)")
    ap.add_argument("--background", default="0.26", metavar="F",
                    help="fraction of their injection bandwidth the other nodes send, in [0, 1) (default 0.26)")
    ap.add_argument("--seed", default="0", help="base seed of the TDN's random mappings (default 0)")
    ap.add_argument("--seeds", default=str(DEFAULT_SEEDS), metavar="N",
                    help="random mappings of the TDN per point (default %(default)s): every figure is printed as the "
                         "mean over them [min, max]; the dataset keeps each (dimension seed) and _mean, _std, _min, "
                         "_max. Draw s of a point depends on the point and s only, not on the other points or N")
    ap.add_argument("--bandwidth", default="12e9", metavar="BYTES_PER_S",
                    help="bytes/s per direction, every link (default 12e9: 12 GB/s)")
    ap.add_argument("--out", default=DEFAULT_OUT, metavar="DIR|FILE.nc",
                    help="where the study's dataset and plot go: a directory (default %(default)s; files "
                         "rdn-P-A-H-G-<UTC time>.nc and .png) or a FILE.nc (the plot beside it, FILE.png)")
    ap.add_argument("--speedup-out", default=None, metavar="FILE.nc",
                    help="netCDF file for the speedup table (mode x groups) that `evaluator schedule --speedups` "
                         "and sweeps/workload/grap_vs_slurm.yaml read (e.g. results/rdn/speedup.nc)")
    ap.add_argument("--baseline", default="adaptive", choices=tuple(GAINS),
                    help="the TDN time the speedup table is against: adaptive (the ideal adaptive bound, the "
                         "default), ugal (UGAL-G, the deployed routing) or oblivious (the fastest oblivious routing, "
                         "the upper end); the lowest gain of the three is the conservative end")
    args = ap.parse_args(argv)
    bandwidth = _parse_number("--bandwidth", args.bandwidth, "float", "a finite number of bytes/s > 0 (e.g. 12e9)",
                              lambda v: math.isfinite(v) and v > 0)
    m = parse_machine(args.machine, "--machine", bandwidth=bandwidth)
    groups = _parse_groups(args.groups)
    patterns = _parse_names("--patterns", args.patterns, tuple(PATTERNS))
    bounds = _parse_names("--bounds", args.bounds, tuple(BOUNDS), none_ok=True)
    adaptive = _parse_names("--adaptive", args.adaptive, TDN_ADAPTIVE, none_ok=True)
    max_lp_nnz = _parse_number("--max-lp-nnz", args.max_lp_nnz, "int", "an integer >= 1 (nonzeros)", lambda v: v >= 1)
    background = _parse_number("--background", args.background, "float", "a fraction in [0, 1)",
                               lambda v: 0 <= v < 1)
    seed = _parse_number("--seed", args.seed, "int", "an integer >= 0", lambda v: v >= 0)
    check_seed("--seed", seed)
    n_seeds = _parse_number("--seeds", args.seeds, "int", "an integer >= 1 (random mappings per point)",
                            lambda v: v >= 1)
    check_machine(m, patterns, "--machine", args.machine)
    # a baseline that is a bound or an adaptive routing the study was told not to compute: no speedup table
    uncomputed = args.baseline in tuple(BOUNDS) + TDN_ADAPTIVE and args.baseline not in bounds + adaptive
    if args.speedup_out and args.baseline in TDN_ADAPTIVE and args.baseline not in adaptive:
        raise ConfigError("--baseline", args.baseline, f"an adaptive routing that --adaptive computes ({args.adaptive})",
                          f"Add it: --adaptive {','.join(adaptive + (args.baseline,))}")
    if args.speedup_out and args.baseline in BOUNDS and args.baseline not in bounds:
        raise ConfigError("--baseline", args.baseline, f"a bound that --bounds computes ({args.bounds})",
                          f"Add it: --bounds {','.join(bounds + (args.baseline,))}")
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    ds_path, png_path = output_paths(args.out, m, stamp)
    if Path(args.out).suffix != ".nc" and Path(args.out).exists() and not Path(args.out).is_dir():
        raise ConfigError("--out", args.out, "a directory or a FILE.nc path",
                          f"{args.out} exists and is not a directory; nothing was computed.")
    check_output_file("--out", args.out, ds_path)
    if args.speedup_out:
        sp = Path(args.speedup_out)
        if sp.suffix != ".nc":
            raise ConfigError("--speedup-out", args.speedup_out, "a netCDF file path ending in .nc")
        check_output_file("--speedup-out", args.speedup_out, sp)
    t0 = time.perf_counter()
    ds = allocation_mode_study(m, groups, patterns=patterns, background=background, seed=seed, bounds=bounds,
                               max_lp_nnz=max_lp_nnz, n_seeds=n_seeds, adaptive=adaptive,
                               progress=lambda pat, q, s: print(f"{pat:>13} {q:>4} groups  {s:7.1f} s", flush=True))
    ds.attrs["total_seconds"] = time.perf_counter() - t0
    print(format_study(ds))
    print(f"total {ds.attrs['total_seconds']:.1f} s")
    table = speedup_table(study=ds, baseline=args.baseline) if not uncomputed else None
    if table is not None:
        print()
        print(format_speedup_table(table))
    write_netcdf(ds, ds_path)
    plot_study(ds, png_path)
    print(f"dataset: {ds_path}")
    print(f"plot: {png_path}")
    if args.speedup_out:
        write_netcdf(table, args.speedup_out)
        print(f"speedup table (against {args.baseline}): {args.speedup_out}")
    return 0
