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
  tasks on uniformly random nodes (random mapping), evaluated two ways that
  bracket a real adaptive router (UGAL, PAR):

  - *oblivious* routings ``minimal``, ``valiant`` (group-level) and
    ``valiant_router`` (router-level); ``tdn_oblivious_*`` is the fastest of
    them at each point, a time some routing reaches: the gain against it is
    the *upper* end of RDN-GRAP's gain;
  - *bounds* (:func:`evaluator.lp.bounds.optimal`, certified lower bounds of
    the time): ``adaptive``, the ideal adaptive (UGAL) bound
    (``dragonfly_adaptive``: the best per-group-pair mix of the minimal and
    Valiant path classes), and ``optimal``, the best any routing over all
    paths can do (``auto``: edge LP or Garg-Konemann). The gain against the
    adaptive bound is the *conservative* end, the study's headline; the
    optimum is context (no routing beats it). A bound the LP cannot give is
    NaN with the reason in ``bound_refused``: the adaptive bound needs 3
    groups (Valiant needs an intermediate group), and an LP with more than
    ``max_lp_nnz`` nonzeros (the paper's machine: tens of millions) is not
    attempted.

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
import math
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import xarray as xr

from .._version import __version__
from ..errors import ConfigError, ConfigTypeError, ResourceError, is_int, positive_float, positive_int, require
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
           "MACHINE_GRAMMAR"]

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

BOUNDS = {"adaptive": "dragonfly_adaptive", "optimal": "auto"}
"""Bounds of the TDN -> the :func:`evaluator.lp.bounds.optimal` method that gives them."""

BOUND_TEXT = {"adaptive": "ideal adaptive (UGAL) bound: best per-group-pair mix of minimal and Valiant path classes",
              "optimal": "best any routing over all paths can do (maximum concurrent flow)"}

MAX_LP_NNZ = 2_000_000
"""Largest LP (nonzeros, :func:`evaluator.lp.adaptive_size` / :func:`evaluator.lp.edge_size`) the study solves:
DF(4, 8, 4, 32) needs at most 1.5 million (30-70 s a solve on a shared 2-core box); the paper's machine 45 million
and more (refused: NaN, the reason in ``bound_refused``)."""


def _tdn_point(m: RdnMachine, tdn, tr, n_tasks: int, fraction: float, seed: int, bounds: Sequence[str],
               max_lp_nnz: int, solver: str) -> tuple[dict, str]:
    """TDN: the job on random nodes of the whole machine, every oblivious routing and the bounds, with and without
    background; also the reasons of bounds not computed ('' when all were)."""
    rng = np.random.default_rng(seed)
    nodes = np.sort(rng.choice(tdn.n_nodes, size=n_tasks, replace=False))
    order = rng.permutation(n_tasks)
    pl = Placement(nodes[order].astype(np.int64), tdn.n_nodes, f"random(seed={seed})")
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
                  + [f"tdn_{rt}_{v}" for rt in TDN_ROUTINGS for v in _KINDS]
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


GAINS = {"adaptive": "the ideal adaptive (UGAL) lower bound, or the fastest oblivious routing where faster "
                     "(the adaptive bound covers minimal and valiant, not valiant_router): the conservative end "
                     "(headline)",
         "oblivious": "the fastest oblivious routing (minimal, valiant, valiant_router): the upper end",
         "optimal": "the best any routing can do (context)"}
"""Baselines of the gain ``T_TDN / T_RDN``."""


def allocation_mode_study(machine: RdnMachine = PAPER_MACHINE, groups: Sequence[int] = DEFAULT_GROUPS,
                          patterns: Sequence[str] = tuple(PATTERNS), background: float = 0.26,
                          seed: int = 0, progress=None, bounds: Sequence[str] = ("adaptive",),
                          max_lp_nnz: int = MAX_LP_NNZ, solver: str = "highs") -> xr.Dataset:
    """The paper's Fig. 4 study on ``machine``: dataset with dims ``(pattern, groups)``, times in seconds.

    Raw variables (:data:`VARIABLES`; times in s per exchange of the pattern;
    hops: router-to-router links per byte that leaves its node): per network
    and routing, ``rdn_{minimal,valiant}_*`` (inside groups, TAGO between
    them) and ``tdn_{minimal,valiant,valiant_router}_*``: ``_time`` (no
    background), ``_time_bg``, ``_net_time_bg`` (router links only),
    ``_hops``; the TDN's bounds (certified lower bounds of the time; NaN with
    the reason in ``bound_refused`` where not computed, NaN too when not asked
    for in ``bounds``): ``tdn_adaptive_time``, ``tdn_adaptive_time_bg``,
    ``tdn_optimal_time``, ``tdn_optimal_time_bg``, ``tdn_*_bound_s``.

    Derived: ``rdn_time``, ``rdn_time_bg``, ``rdn_net_time_bg``, ``rdn_hops``
    (the faster routing inside groups); ``tdn_oblivious_time``,
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
    point), ``refused`` (the ResourceError message, '' when it ran) and
    ``bound_refused``. Coordinate ``mode``: the GRAP mode of each pattern.

    ``bounds``: which of ``adaptive`` and ``optimal`` to compute;
    ``max_lp_nnz``: the largest LP attempted; ``solver``: ``highs`` or ``pdhg``. The TDN's random mapping at
    a point is seeded ``seed + 1000 * k + j`` (``k``: the pattern's place in :data:`PATTERNS`, ``j``: the size's
    place in the sorted sizes), so a run of some patterns gives the same numbers as a run of all.
    """
    for arg, value, what in (("patterns", patterns, f"a list of pattern names among {' | '.join(PATTERNS)}"),
                             ("groups", groups, "a list of group counts (integers >= 2)"),
                             ("bounds", bounds, f"a list among {' | '.join(BOUNDS)}")):
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
    max_lp_nnz = positive_int("max_lp_nnz", max_lp_nnz)
    fraction = positive_float("background", background, allow_zero=True)
    require(fraction < 1, "background", background, "a fraction in [0, 1)")
    sizes = sorted({positive_int("groups", q, minimum=2) for q in groups if q <= machine.g} | {machine.g})
    pats = list(patterns)
    data = {v: np.full((len(pats), len(sizes)), np.nan) for v in VARIABLES}
    secs = np.zeros((len(pats), len(sizes)))
    refused = np.full((len(pats), len(sizes)), "", dtype=object)
    bound_refused = np.full((len(pats), len(sizes)), "", dtype=object)
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
                if tdn is not None:
                    point_seed = seed + 1000 * list(PATTERNS).index(pat) + j
                    more, why = _tdn_point(machine, tdn, tr, nodes.size, fraction, point_seed, bounds,
                                           max_lp_nnz, solver)
                    vals.update(more)
                    bound_refused[i, j] = why
                for k, v in vals.items():
                    data[k][i, j] = v
            except (ResourceError, PointRefused) as e:
                refused[i, j] = (refused[i, j] + "; " if refused[i, j] else "") + str(e)
            secs[i, j] = time.perf_counter() - t0
            if progress is not None:
                progress(pat, q, secs[i, j])
    derived: dict[str, tuple[np.ndarray, dict]] = {}
    T = "T_TDN / T_RDN (1: no change)"
    # RDN: the faster routing inside groups
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
    # TDN: the fastest oblivious routing (NaN only where every routing is NaN)
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
                den = derived[f"rdn_time{'_bg' if not suffix else ''}"][0]
                derived[f"gain_{b}{suffix}"] = (num / den, {"units": "1", "long_name": f"RDN-GRAP's gain {T} "
                                                            f"against {text}, {bg_text}"})
        derived["network_gain_oblivious"] = (derived["tdn_oblivious_net_time_bg"][0] / derived["rdn_net_time_bg"][0],
                                             {"units": "1", "long_name": f"{T} on router-to-router links only, "
                                                                         "against the fastest oblivious routing"})
        for rt in TDN_ROUTINGS + tuple(BOUNDS):
            derived[f"tdn_bg_slowdown_{rt}"] = (data[f"tdn_{rt}_time_bg"] / data[f"tdn_{rt}_time"] - 1.0,
                                                {"units": "1", "long_name": f"TDN {rt}: time_bg / time - 1, the "
                                                                            "time the background adds"})
        derived["hops_reduction"] = (1.0 - derived["rdn_hops"][0] / derived["tdn_oblivious_hops"][0],
                                     {"units": "1", "long_name": "1 - RDN hops / hops of the TDN's fastest "
                                                                 "oblivious routing"})
        derived["hops_reduction_minimal"] = (1.0 - data["rdn_minimal_hops"] / data["tdn_minimal_hops"],
                                             {"units": "1", "long_name": "1 - RDN hops / TDN hops, both minimal"})
    dims = ("pattern", "groups")
    ds = xr.Dataset(
        {k: (dims, v, _attrs(k)) for k, v in data.items()}
        | {k: (dims, v, a) for k, (v, a) in derived.items()}
        | {"tdn_oblivious_routing": (dims, routing_name, {"long_name": "TDN: the fastest oblivious routing with "
                                                                       "background"}),
           "seconds": (dims, secs, {"units": "s", "long_name": "wall time of the point"}),
           "refused": (dims, refused.astype(str), {"long_name": "why the evaluator refused the point ('' ran)"}),
           "bound_refused": (dims, bound_refused.astype(str),
                             {"long_name": "why a TDN bound is NaN ('' when every asked bound was computed)"})},
        coords={"pattern": pats, "groups": sizes, "mode": ("pattern", [PATTERNS[p] for p in pats]),
                "job_nodes_per_group": ("pattern", [machine.nodes_per_group if p == "stencil" else
                                                     machine.adaptive_nodes if p == "all_to_all" else
                                                     (machine.nodes_per_group + (3 * machine.nodes_per_group) // 4) / 2
                                                     for p in pats])},
    )
    ds.attrs.update({"machine": f"DF({machine.p},{machine.a},{machine.h},{machine.g})",
                     "n_nodes": machine.g * machine.nodes_per_group, "bandwidth": machine.bandwidth,
                     "ports_per_switch": machine.ports_per_switch, "background": fraction, "seed": seed,
                     "tdn_mapping": "random nodes of the whole machine", "rdn_routing": "tago",
                     "tdn_routings": ",".join(TDN_ROUTINGS), "tdn_bounds": ",".join(bounds),
                     "max_lp_nnz": max_lp_nnz, "bound_solver": solver,
                     "headline": "gain_adaptive (conservative: RDN-GRAP against the ideal adaptive lower bound)",
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


def speedup_table(machine: RdnMachine = PAPER_MACHINE, groups: Sequence[int] = DEFAULT_GROUPS,
                  background: float = 0.26, seed: int = 0, study: xr.Dataset | None = None,
                  baseline: str = "adaptive") -> xr.Dataset:
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
    without background). ``groups`` is the job size in groups (job nodes =
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
                                      bounds=(baseline,) if baseline in BOUNDS else ())
    ds = study
    of_mode = {"minimal_balance": "stencil", "custom_balance": "stencil", "custom": "neighbouring",
               "adaptive": "all_to_all"}
    modes = [mo for mo, pat in of_mode.items() if pat in ds.pattern.values]
    pats = [of_mode[mo] for mo in modes]
    gain = ds[f"gain_{baseline}"].sel(pattern=pats).values
    gain0 = ds[f"gain_{baseline}_no_bg"].sel(pattern=pats).values
    with np.errstate(divide="ignore", invalid="ignore"):
        saved = 1.0 - 1.0 / gain
    against = f"against {GAINS[baseline]}"
    out = xr.Dataset(
        {"speedup": (("mode", "groups"), gain, {"units": "1",
                                                "long_name": f"T_TDN / T_RDN with background, {against}"}),
         "time_saved": (("mode", "groups"), saved, {"units": "1", "long_name": "1 - T_RDN / T_TDN = 1 - 1 / speedup"}),
         "speedup_no_bg": (("mode", "groups"), gain0, {"units": "1", "long_name": f"T_TDN / T_RDN, no background, "
                                                                                     f"{against}"})},
        coords={"mode": modes, "groups": ds.groups.values, "pattern": ("mode", pats)})
    out.attrs.update(ds.attrs)
    out.attrs["baseline"] = baseline
    out.attrs["baseline_text"] = GAINS[baseline]
    return out


def _fmt_time_columns(df, cols):
    """Each time column in one decimal SI unit chosen for it (DESIGN.md), named in its header."""
    from ..display import display_unit, format_number

    out = {}
    for c in cols:
        unit, factor = display_unit("s", df[c].to_numpy(dtype=float))
        out[f"{c} [{unit}]"] = [format_number(v / factor) if np.isfinite(v) else "n/a"
                                for v in df[c].to_numpy(dtype=float)]
    return out


def format_study(ds: xr.Dataset) -> str:
    """The study as three tables for people: times and gains (``x``: the ratio ``T_TDN / T_RDN``), the TDN's
    slowdown from the background per routing, hops; times in decimal SI units, one per column."""
    import pandas as pd

    df = ds.drop_vars([v for v in ds.data_vars if ds[v].dtype.kind not in "fU" or v == "refused"]) \
        .to_dataframe().reset_index().set_index(["pattern", "groups"])
    shown = tuple(b for b in BOUNDS if b in ds.attrs.get("tdn_bounds", ",".join(BOUNDS)).split(","))
    tcols = ["rdn_time_bg", "tdn_oblivious_time_bg"] + [f"tdn_{b}_time_bg" for b in shown]
    t = pd.DataFrame(_fmt_time_columns(df, tcols), index=df.index)
    t.insert(2, "oblivious routing", df["tdn_oblivious_routing"].values)
    x = lambda v: "n/a" if not np.isfinite(v) else f"{v:.2f}x"  # noqa: E731
    for b in ("adaptive", "oblivious", "optimal"):
        if b == "oblivious" or b in shown:
            t[f"gain vs {b}"] = [x(v) for v in df[f"gain_{b}"]]
    for b in ("adaptive", "oblivious"):
        t[f"no bg vs {b}"] = [x(v) for v in df[f"gain_{b}_no_bg"]]
    pct = lambda v: "n/a" if not np.isfinite(v) else f"{100 * v:+.1f}%"  # noqa: E731
    s = pd.DataFrame({rt: [pct(v) for v in df[f"tdn_bg_slowdown_{rt}"]] for rt in TDN_ROUTINGS + shown},
                     index=df.index)
    h = pd.DataFrame({"RDN hops": [f"{v:.2f}" for v in df["rdn_hops"]],
                      "TDN hops": [f"{v:.2f}" for v in df["tdn_oblivious_hops"]],
                      "fewer hops": [pct(v) for v in df["hops_reduction"]],
                      "fewer hops, both minimal": [pct(v) for v in df["hops_reduction_minimal"]]}, index=df.index)
    notes = sorted({w for v in ds.bound_refused.values.reshape(-1) for w in str(v).split("; ") if w})
    lines = [f"{ds.attrs['machine']}, {100 * ds.attrs['background']:g}% background, seed {ds.attrs['seed']}; "
             "times with background; gain = T_TDN / T_RDN; headline: gain vs adaptive (the ideal adaptive lower "
             "bound: conservative); gain vs oblivious: the fastest of minimal/valiant/valiant_router (upper end); "
             "n/a: not computed (below)",
             t.to_string(), "", "TDN slowdown from the background (time_bg / time - 1), per routing and bound:",
             s.to_string(), "", h.to_string()]
    if notes:
        lines += ["", "bounds not computed (n/a):"] + [f"  {w}" for w in notes]
    points = [f"  {pat} {int(q)} groups: {ds.refused.sel(pattern=pat, groups=q).item()}"
              for pat in ds.pattern.values for q in ds.groups.values if ds.refused.sel(pattern=pat, groups=q).item()]
    if points:
        lines += ["", "points not computed (n/a):"] + points
    return "\n".join(lines)


def format_speedup_table(table: xr.Dataset) -> str:
    """The workload's speedup table (:func:`speedup_table`) for people: one row per GRAP mode, one column per job
    size in groups, the ratio ``T_TDN / T_RDN`` with background (``1.30x``: the paper's "30% speedup")."""
    import pandas as pd

    x = lambda v: "n/a" if not np.isfinite(v) else f"{v:.2f}x"  # noqa: E731
    df = pd.DataFrame({f"{int(q)} groups": [x(float(v)) for v in table.speedup.sel(groups=q).values]
                       for q in table.groups.values},
                      index=pd.Index([f"{mo} ({pat})" for mo, pat in zip(table["mode"].values,
                                                                          table["pattern"].values)], name="mode"))
    return (f"speedup table, {table.attrs.get('machine', '')}: T_TDN / T_RDN with background, against "
            f"{table.attrs.get('baseline', '')} ({table.attrs.get('baseline_text', '')})\n" + df.to_string())


def plot_study(ds: xr.Dataset, path) -> None:
    """One PNG of the study: RDN-GRAP's gain ``T_TDN / T_RDN`` (with background) against job size, both ends
    (the ideal adaptive bound, solid; the fastest oblivious routing, dashed), a reference line at 1; and the
    completion times with background (RDN-GRAP solid, the TDN's fastest oblivious routing dashed) in one
    decimal SI unit. One colour per pattern, job sizes ascending on a log axis, points marked."""
    from matplotlib.figure import Figure

    from ..display import axis_label, shared_unit
    from ..io import save_figure

    fig = Figure(figsize=(11, 4.2))
    ax_g, ax_t = fig.subplots(1, 2)
    q = np.asarray(ds.groups.values, dtype=float)
    times = [ds[v].values for v in ("rdn_time_bg", "tdn_oblivious_time_bg")]
    unit, factor = shared_unit("s", times)
    for k, pat in enumerate(ds.pattern.values):
        colour = f"C{k}"
        for b, style in (("adaptive", "-"), ("oblivious", "--")):
            if f"gain_{b}" in ds and np.isfinite(ds[f"gain_{b}"].sel(pattern=pat).values).any():
                ax_g.plot(q, ds[f"gain_{b}"].sel(pattern=pat).values, style, marker="o", color=colour,
                          label=f"{pat}, vs {b}")
        ax_t.plot(q, ds.rdn_time_bg.sel(pattern=pat).values / factor, "-", marker="o", color=colour,
                  label=f"{pat}, RDN-GRAP")
        ax_t.plot(q, ds.tdn_oblivious_time_bg.sel(pattern=pat).values / factor, "--", marker="s", color=colour,
                  label=f"{pat}, TDN oblivious")
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
    fig.suptitle(f"RDN-GRAP vs TDN on {ds.attrs.get('machine', '')}, "
                 f"{100 * float(ds.attrs.get('background', 0)):g}% background")
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
    [--background F] [--out DIR|FILE.nc] [--speedup-out FILE.nc --baseline adaptive]``: run
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
    ap.add_argument("--max-lp-nnz", default=str(MAX_LP_NNZ), metavar="N",
                    help="largest LP attempted, in nonzeros (default %(default)s)")
    ap.add_argument("--background", default="0.26", metavar="F",
                    help="fraction of their injection bandwidth the other nodes send, in [0, 1) (default 0.26)")
    ap.add_argument("--seed", default="0", help="seed of the TDN's random mapping (default 0)")
    ap.add_argument("--bandwidth", default="12e9", metavar="BYTES_PER_S",
                    help="bytes/s per direction, every link (default 12e9: 12 GB/s)")
    ap.add_argument("--out", default=DEFAULT_OUT, metavar="DIR|FILE.nc",
                    help="where the study's dataset and plot go: a directory (default %(default)s; files "
                         "rdn-P-A-H-G-<UTC time>.nc and .png) or a FILE.nc (the plot beside it, FILE.png)")
    ap.add_argument("--speedup-out", default=None, metavar="FILE.nc",
                    help="netCDF file for the speedup table (mode x groups) that `evaluator schedule --speedups` "
                         "and sweeps/workload/grap_vs_slurm.yaml read (e.g. results/rdn/speedup.nc)")
    ap.add_argument("--baseline", default="adaptive", choices=tuple(GAINS),
                    help="the TDN time the speedup table is against (default adaptive: the conservative end)")
    args = ap.parse_args(argv)
    bandwidth = _parse_number("--bandwidth", args.bandwidth, "float", "a finite number of bytes/s > 0 (e.g. 12e9)",
                              lambda v: math.isfinite(v) and v > 0)
    m = parse_machine(args.machine, "--machine", bandwidth=bandwidth)
    groups = _parse_groups(args.groups)
    patterns = _parse_names("--patterns", args.patterns, tuple(PATTERNS))
    bounds = _parse_names("--bounds", args.bounds, tuple(BOUNDS), none_ok=True)
    max_lp_nnz = _parse_number("--max-lp-nnz", args.max_lp_nnz, "int", "an integer >= 1 (nonzeros)", lambda v: v >= 1)
    background = _parse_number("--background", args.background, "float", "a fraction in [0, 1)",
                               lambda v: 0 <= v < 1)
    seed = _parse_number("--seed", args.seed, "int", "an integer >= 0", lambda v: v >= 0)
    check_seed("--seed", seed)
    check_machine(m, patterns, "--machine", args.machine)
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
                               max_lp_nnz=max_lp_nnz,
                               progress=lambda pat, q, s: print(f"{pat:>13} {q:>4} groups  {s:7.1f} s", flush=True))
    ds.attrs["total_seconds"] = time.perf_counter() - t0
    print(format_study(ds))
    print(f"total {ds.attrs['total_seconds']:.1f} s")
    table = speedup_table(study=ds, baseline=args.baseline) if not (args.baseline in BOUNDS and
                                                                     args.baseline not in bounds) else None
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
