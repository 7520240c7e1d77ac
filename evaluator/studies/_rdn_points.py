"""The machine, the jobs and the points of the allocation-mode study (:mod:`evaluator.studies.rdn`, whose
docstring says what is computed): :class:`RdnMachine`, each pattern's job and GRAP allocation (:func:`_job`),
one job's times on the RDN (:func:`_rdn_point`) and on the TDN (:func:`_tdn_point`)."""

from __future__ import annotations

import dataclasses
import functools
import math
import time
from collections.abc import Sequence

import jax
import numpy as np

from ..errors import ConfigError, ResourceError, is_int, positive_float, positive_int, require
from ..evaluation import evaluate_batch
from ..jobs import Background, background_rates
from ..lp import adaptive_size, edge_size
from ..lp.bounds import optimal, router_demand
from ..placement import Placement
from ..policies import Grap, JobRequest
from ..routing import tago, unconnected_bytes
from ..topology import rdn
from ..traffic import Traffic, all_to_all_dense, neighbouring, stencil



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

    def __post_init__(self):
        """Refuse a bad field at construction, named ``machine.FIELD`` (the topology built from it named its own
        fields, ``topology.p``, and text crashed in a comparison)."""
        for name in ("p", "a", "h", "g", "ports_per_switch"):
            positive_int(f"machine.{name}", getattr(self, name))
        require(2 <= self.g <= self.a * self.h + 1, "machine.g", self.g,
                f"groups in [2, A*H+1] = [2, {self.a * self.h + 1}] (one global link between every two groups)")
        positive_float("machine.bandwidth", self.bandwidth)
        if self.nodes_per_adaptive is not None:
            require(is_int(self.nodes_per_adaptive) and 1 <= self.nodes_per_adaptive <= self.nodes_per_group,
                    "machine.nodes_per_adaptive", self.nodes_per_adaptive,
                    f"None (8/9 of a group) or an integer in [1, A*P] = [1, {self.nodes_per_group}]")

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


def _time(load: np.ndarray, cap: np.ndarray, bg: np.ndarray, used: np.ndarray | None = None) -> float:
    """The largest time of the links the job loads, ``load / (cap - bg)`` (inf where the background leaves one of
    them nothing; 0 where none is loaded). ``used``: the loaded links' indices (``np.flatnonzero(load > 0)``),
    where the caller has them: the job loads a small part of a large machine's links, and the time is read off
    those alone (the paper's machine: 408,000 links; the study's 2,304 calls took 7.4 s on the whole arrays)."""
    if used is None:
        used = np.flatnonzero(load > 0)
    if not used.size:
        return 0.0
    left = cap[used] - bg[used]
    if (left <= 0).any():
        return math.inf
    return float((load[used] / left).max())


def _times(load: np.ndarray, cap: np.ndarray, bg: np.ndarray, n_router_links: int) -> tuple[float, float, float]:
    """:func:`_time` of ``load`` without background, with ``bg``, and with ``bg`` on the first ``n_router_links``
    links only (the router links), the loaded links found once."""
    used = np.flatnonzero(load > 0)
    net = used[:np.searchsorted(used, n_router_links)]
    return (_time(load, cap, np.zeros_like(cap), used), _time(load, cap, bg, used),
            _time(load, cap, bg, net))


def _background(m: RdnMachine, q: int, local: np.ndarray, fraction: float) -> tuple[np.ndarray, Traffic | None]:
    """The free nodes of the job's ``q`` groups and their background traffic (None: none), uniform inside each
    group: every free node sends ``fraction`` of a link's bandwidth, spread over the other free nodes of its group."""
    npg = m.nodes_per_group
    free = np.ones(q * npg, dtype=bool)
    free[local] = False
    fnodes = np.flatnonzero(free)
    if not (fraction > 0 and fnodes.size):
        return fnodes, None
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
    if not src:
        return fnodes, None
    return fnodes, Traffic(fnodes.size, np.concatenate(src), np.concatenate(dst), np.concatenate(rate),
                           "background inside groups")


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
    fnodes, btr = _background(m, q, local, fraction)
    bpl = Placement(fnodes, topo.n_nodes, "free nodes") if btr is not None else None
    out = {}
    for intra in INTRA:
        if intra == "valiant" and m.a < 3:
            continue
        rt = tago(intra)
        # the job and its background in one call where both are flow lists (one compiled program on this RDN, not
        # two); each point's loads are its own, whatever the batch it runs in
        both = btr is not None and tr.kernel_input == btr.kernel_input
        res = evaluate_batch(topo, rt, [tr, btr] if both else [tr], [pl, bpl] if both else [pl],
                             keep_link_load=True, chunk_size=1)
        load = np.asarray(res.link_load[0], dtype=np.float64)
        bg = np.zeros_like(cap)
        if both:
            bg = np.asarray(res.link_load[1], dtype=np.float64)
        elif btr is not None:
            bres = evaluate_batch(topo, rt, [btr], [bpl], keep_link_load=True, chunk_size=1)
            bg = np.asarray(bres.link_load[0], dtype=np.float64)
        out[f"rdn_{intra}_time"], out[f"rdn_{intra}_time_bg"], out[f"rdn_{intra}_net_time_bg"] = \
            _times(load, cap, bg, nr)
        out[f"rdn_{intra}_hops"] = float(res.metrics["mean_hops"][0])
    return out


INTRA = ("minimal", "valiant")
"""RDN routings inside groups (TAGO between groups): the paper runs adaptive routing there; these bound it."""

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
    free = np.ones(tdn.n_nodes, dtype=bool)
    free[nodes] = False
    others = np.flatnonzero(free)  # the nodes not drawn, ascending (np.setdiff1d sorted 82,944 ids: 20 ms a draw)
    out: dict = {}
    bg_of = {}
    for rt in TDN_ROUTINGS:
        if rt == "valiant" and m.g < 3:
            continue                                   # Valiant needs a third group: NaN
        res = evaluate_batch(tdn, rt, [tr], [pl], keep_link_load=True, chunk_size=1)
        load = np.asarray(res.link_load[0], dtype=np.float64)
        out[f"tdn_{rt}_hops"] = float(res.metrics["mean_hops"][0])
        bg = background_rates(tdn, Background(fraction, "uniform"), others, rt) if fraction > 0 else np.zeros_like(cap)
        bg_of[rt] = bg
        out[f"tdn_{rt}_time"], out[f"tdn_{rt}_time_bg"], out[f"tdn_{rt}_net_time_bg"] = _times(load, cap, bg, nr)
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
