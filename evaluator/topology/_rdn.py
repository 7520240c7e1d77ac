"""Reconfigurable Dragonfly (RDN, Feng et al. 2023): a Dragonfly whose global ports attach to optical circuit switches.

Dragonfly(p, a, h, g) groups (full-mesh local links, :func:`~evaluator.topology.dragonfly`'s
numbering: router ``group * a + index``, node ``router * p + port``). Each
group has ``P = a * h`` global ports; port ``j`` belongs to router ``j // h``.
Port ``j`` of every group attaches to optical circuit switch ``j // k``
(``k = ports_per_switch`` ports of each group per switch, the paper's Fig. 1
has ``k = 2``), so there are ``P / k`` switches of ``g * k`` ports each.

A **configuration** connects ports of the same switch in pairs (never two
ports of one group): each switch realises a union of ``k`` matchings between
groups. The builder only produces such configurations
(:attr:`RdnTopology.port_peer_group` / ``port_peer_port`` are the ground truth;
every connected port pair becomes one cable, i.e. two directed global links).
Ports left unconnected carry nothing. Configurations:

* ``standard``: the traditional Dragonfly's global layer: every pair of groups
  joined by ``m = floor(P / (g - 1))`` links, as :func:`dragonfly` builds it
  (it supplies the local links and ``m``). The switch constraint fixes which
  port serves which pair: ports ``0 .. m (g-1) - 1`` realise ``m`` rounds of a
  1-factorisation of the complete graph (circle method) when ``g`` is even;
  when ``g`` is odd, Walecki's Hamiltonian cycles, each on one switch with two
  ports per group (needs an even ``k``), or ``g`` near-perfect matchings
  (needs ``m g <= P`` ports). (The ``consecutive`` / ``relative`` port rules
  of :func:`dragonfly` join port ``j`` of one group to a different port
  number of the other, which no switch of this layout can do; so routers own
  different links here, the group-level structure is the same.)
* ``jobs``: per large job (``jobs``: each a list of groups, disjoint): the
  job's groups connected only among themselves as a smaller Dragonfly, all
  ``P`` ports of each group used, links spread as evenly as matchings allow
  (port ``j`` takes round ``j mod (q - 1)`` of a 1-factorisation of the ``q``
  groups, or Walecki cycles for odd ``q`` with even ``k``, or near-perfect
  matchings for odd ``q`` with odd ``k``). Two groups: all ``P`` links join them.
  Groups in no job keep their ports unconnected (GRAP: small jobs need none).
* ``traffic``: per large job, links given to the job's group pairs in
  proportion to its group-to-group demand (``demand``: one ``q x q`` matrix
  per job, bytes, rows/columns in the order of the job's groups), min-max: port
  round by port round, a greedy matching over the pairs in decreasing
  ``demand / links`` (demand of a pair: the larger of its two directions; a
  pair with demand and no link yet ranks first), so the largest per-link demand
  falls as fast as the matchings allow.

Routing on an RDN: ``tago`` (:mod:`evaluator.routing._tago`), inter-group
traffic balanced over all direct links between the two groups, no indirect
paths.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np

from ..latency import LatencyConfig
from .._types import ConfigOf, Int
from ..errors import ConfigError, check_memory, positive_float, positive_int, require
from ._dragonfly import dragonfly, dragonfly_bytes
from .base import Topology, TopologyKind, check_name, frozen, node_links

__all__ = ["RdnTopology", "rdn", "CONFIGURATIONS", "RdnConfig", "RDN", "circle_matchings", "walecki_cycles"]

CONFIGURATIONS = ("standard", "jobs", "traffic")
"""RDN switch configurations (see the module docstring)."""


@dataclasses.dataclass(frozen=True, eq=False)
class RdnTopology(Topology):
    """A reconfigurable Dragonfly in one switch configuration.

    Extra attributes
    ----------------
    p, a, h, g
        Nodes per router, routers per group, global ports per router, groups.
    ports_per_switch
        ``k``: ports of each group on one optical switch; port ``j`` is on switch ``j // k``.
    configuration, jobs
        Configuration name (:data:`CONFIGURATIONS`) and the job group lists it was built for.
    port_peer_group, port_peer_port : int ndarray, shape [group, a*h]
        The group and port that port ``j`` of group ``G`` is connected to (-1: unconnected).
    port_link : int ndarray, shape [group, a*h]
        Link id of the directed global link leaving port ``j`` of group ``G`` (-1: unconnected).
    pair_links : int ndarray, shape [group, group]
        Global links (cables) between every pair of groups (symmetric, zero diagonal).
    local_link : int ndarray, shape [group, a, a]
        Link id of local link ``i -> j`` in a group (-1 on the diagonal), as in :func:`dragonfly`.
    bandwidth_p, bandwidth_l, bandwidth_r
        Injection, local and global bandwidths, bytes/s per direction.
    """

    p: int = 0
    a: int = 0
    h: int = 0
    g: int = 0
    ports_per_switch: int = 1
    configuration: str = "standard"
    jobs: tuple[tuple[int, ...], ...] = ()
    port_peer_group: Int[np.ndarray, "group port"] = dataclasses.field(default_factory=lambda: np.zeros((0, 0), np.int64))
    port_peer_port: Int[np.ndarray, "group port"] = dataclasses.field(default_factory=lambda: np.zeros((0, 0), np.int64))
    port_link: Int[np.ndarray, "group port"] = dataclasses.field(default_factory=lambda: np.zeros((0, 0), np.int64))
    pair_links: Int[np.ndarray, "group group"] = dataclasses.field(default_factory=lambda: np.zeros((0, 0), np.int64))
    local_link: Int[np.ndarray, "group a a"] = dataclasses.field(default_factory=lambda: np.zeros((0, 0, 0), np.int64))
    bandwidth_p: float = 0.0
    bandwidth_l: float = 0.0
    bandwidth_r: float = 0.0

    @property
    def kind(self) -> str:
        return "rdn"

    @property
    def n_switches(self) -> int:
        """Optical circuit switches: ``a * h / ports_per_switch``."""
        return self.a * self.h // self.ports_per_switch

    def switch_of_port(self, port: Int[np.ndarray, "*shape"] | int) -> Int[np.ndarray, "*shape"] | int:
        """Switch a global port index (0 .. a*h-1) attaches to."""
        return np.asarray(port) // self.ports_per_switch


# ---------------------------------------------------------------------------- decompositions
def circle_matchings(q: int) -> list[list[tuple[int, int]]]:
    """A 1-factorisation of the complete graph on ``q`` vertices by the circle method.

    ``q`` even: ``q - 1`` perfect matchings; ``q`` odd: ``q`` near-perfect
    matchings (vertex ``r`` unmatched in round ``r``). Every pair appears in exactly one round.
    """
    if q < 2:
        return []
    n = q if q % 2 == 0 else q + 1           # a dummy vertex n-1 (the bye) when q is odd
    out = []
    for r in range(n - 1):
        pairs = [(r, n - 1)]
        for i in range(1, n // 2):
            pairs.append(((r + i) % (n - 1), (r - i) % (n - 1)))
        out.append([(min(u, v), max(u, v)) for u, v in pairs if u < q and v < q])
    return out


def walecki_cycles(q: int) -> list[list[int]]:
    """Walecki's decomposition of the complete graph on odd ``q`` vertices into ``(q-1)/2`` Hamiltonian cycles
    (each a vertex sequence; the cycle closes from the last vertex to the first)."""
    assert q % 2 == 1 and q >= 3
    n = q - 1                                   # vertices 0..n-1 on a circle, vertex n at the centre
    cycles = []
    for i in range(n // 2):
        seq = [i]
        for t in range(1, n):
            step = (t + 1) // 2
            seq.append((i + step) % n if t % 2 else (i - step) % n)
        cycles.append([n] + seq)
    return cycles


def _connect(peer_g, peer_p, G, j, H, jj):
    assert peer_g[G, j] < 0 and peer_g[H, jj] < 0 and G != H
    peer_g[G, j], peer_p[G, j], peer_g[H, jj], peer_p[H, jj] = H, jj, G, j


def _check_rounds(q: int, ports: int, k: int, n_rounds: int, what: str) -> None:
    """Refuse ``n_rounds`` port rounds of near-perfect matchings of ``q`` (odd) groups that do not fit ``ports``."""
    if n_rounds > ports:
        raise ConfigError("topology.configuration", what,
                          f"a configuration that fits the {ports} global ports of a group",
                          f"{q} groups (odd) need {n_rounds} port rounds of near-perfect matchings with "
                          f"ports_per_switch = {k}; use an even ports_per_switch (Walecki cycles) or an even g")


def _complete(peer_g, peer_p, groups: list[int], ports: int, k: int, rounds: int | None, what: str) -> None:
    """Join ``groups`` as a complete graph: ``rounds`` port rounds of matchings (None: all ``ports``)."""
    q = len(groups)
    if q < 2:
        return
    if q % 2 == 1 and k % 2 == 0:
        cyc = walecki_cycles(q)
        n_cyc = (ports // 2) if rounds is None else rounds // 2
        for c in range(n_cyc):                  # cycle c on ports 2c (out) and 2c+1 (in): one switch (k even)
            seq = cyc[c % len(cyc)]
            for u, v in zip(seq, seq[1:] + seq[:1]):
                _connect(peer_g, peer_p, groups[u], 2 * c, groups[v], 2 * c + 1)
        return
    n_rounds = ports if rounds is None else rounds
    _check_rounds(q, ports, k, n_rounds, what)  # before the matchings are listed (q^2 / 2 pairs)
    mats = circle_matchings(q)
    for j in range(n_rounds):
        for u, v in mats[j % len(mats)]:
            _connect(peer_g, peer_p, groups[u], j, groups[v], j)


def _traffic_matched(peer_g, peer_p, groups: list[int], ports: int, demand: np.ndarray) -> None:
    """Min-max greedy: port round by round, a matching over pairs in decreasing demand per link."""
    q = len(groups)
    D = np.maximum(demand, demand.T).astype(np.float64)
    np.fill_diagonal(D, 0.0)
    iu, ju = np.triu_indices(q, 1)
    d = D[iu, ju]
    want = d > 0
    x = np.zeros(d.size)
    for j in range(ports):
        ratio = np.where(want, np.where(x > 0, d / np.maximum(x, 1), np.inf), -1.0)
        order = np.lexsort((np.arange(d.size), -ratio))
        used = np.zeros(q, dtype=bool)
        for e in order:
            if ratio[e] < 0:
                break
            u, v = iu[e], ju[e]
            if used[u] or used[v]:
                continue
            used[u] = used[v] = True
            x[e] += 1
            _connect(peer_g, peer_p, groups[u], j, groups[v], j)


def rdn_bytes(p: int, a: int, h: int, g: int) -> int:
    """Estimated peak bytes of building :func:`rdn`: the Dragonfly's (:func:`dragonfly_bytes`) plus 64 bytes per
    global port (peer group, peer port, link id, the pair table) and the ``g x g`` pair count."""
    return dragonfly_bytes(p, a, h, g) + 64 * g * a * h + 16 * g * g


def _job_groups(jobs, configuration: str, g: int, k: int, P: int) -> list[list[int]]:
    """The large jobs' groups, checked: none for ``standard``; else lists of at least two distinct group ids, no
    group in two jobs, and for ``jobs`` no more groups than a complete graph of the group's ports allows."""
    job_groups: list[list[int]] = []
    if configuration == "standard":
        require(not jobs, "topology.jobs", jobs, "empty for configuration 'standard'")
    else:
        ok = isinstance(jobs, (list, tuple)) and len(jobs) > 0
        require(ok, "topology.jobs", jobs, "a non-empty list of group lists (one per large job)")
        seen: set[int] = set()
        for i, grp in enumerate(jobs):
            gl = list(grp) if isinstance(grp, (list, tuple, np.ndarray)) else None
            good = gl is not None and len(gl) >= 2 and all(
                isinstance(x, (int, np.integer)) and not isinstance(x, bool) and 0 <= x < g for x in gl) \
                and len(set(gl)) == len(gl)
            require(good, f"topology.jobs[{i}]", grp, f"a list of at least 2 distinct group ids in [0, {g})")
            clash = seen.intersection(gl)
            require(not clash, f"topology.jobs[{i}]", grp, "groups of no other job (GRAP: one large job a group)",
                    f"group {sorted(clash)[0] if clash else ''} is in an earlier job")
            seen.update(gl)
            job_groups.append([int(x) for x in gl])
            if configuration == "jobs":
                q = len(gl)
                need = (q if q % 2 else q - 1) if not (q % 2 and k % 2 == 0) else q - 1
                require(need <= P, f"topology.jobs[{i}]", grp,
                        f"at most {P + 1 if k % 2 == 0 else P} groups (each pair needs a link; a group has {P} ports)")
    return job_groups


def _demands(demand, configuration: str, job_groups: list[list[int]]) -> list[np.ndarray]:
    """The demand matrices of ``traffic`` (one ``q x q`` of bytes >= 0 per job), checked; none otherwise."""
    demands: list[np.ndarray] = []
    if configuration == "traffic":
        ok = isinstance(demand, (list, tuple)) and len(demand) == len(job_groups)
        require(ok, "topology.demand", demand, f"one demand matrix per job ({len(job_groups)})")
        for i, (dm, gl) in enumerate(zip(demand, job_groups)):
            try:
                arr = np.asarray(dm, dtype=np.float64)
            except (TypeError, ValueError):
                arr = np.zeros(0)
            q = len(gl)
            good = arr.shape == (q, q) and np.isfinite(arr).all() and (arr >= 0).all()
            require(good, f"topology.demand[{i}]", dm, f"a {q} x {q} matrix of bytes >= 0 (job {i}'s groups)")
            demands.append(arr)
    else:
        require(demand is None, "topology.demand", demand, "null unless configuration is 'traffic'")
    return demands


def _peers(configuration: str, g: int, P: int, k: int, m: int, job_groups, demands):
    """``(peer group, peer port)`` of every group's global port (-1: unconnected) in the configuration: the
    standard Dragonfly's ``m`` links per group pair, a complete graph per large job, or a traffic-matched one."""
    peer_g = np.full((g, P), -1, dtype=np.int64)
    peer_p = np.full((g, P), -1, dtype=np.int64)
    if configuration == "standard":
        rounds = m * (g - 1) if g % 2 == 0 or k % 2 == 0 else m * g
        _complete(peer_g, peer_p, list(range(g)), P, k, rounds, "standard")
    elif configuration == "jobs":
        for gl in job_groups:
            _complete(peer_g, peer_p, gl, P, k, None, "jobs")
    else:
        for gl, dm in zip(job_groups, demands):
            _traffic_matched(peer_g, peer_p, gl, P, dm)
    return peer_g, peer_p


def rdn(
    p: int,
    a: int,
    h: int,
    g: int,
    ports_per_switch: int = 1,
    configuration: str = "standard",
    jobs: Any = (),
    demand: Any = None,
    bandwidth_p: float = 10.0e9,
    bandwidth_l: float = 10.0e9,
    bandwidth_r: float = 10.0e9,
    name: str | None = None,
) -> RdnTopology:
    """Build a reconfigurable Dragonfly(p, a, h, g) in one switch configuration (module docstring).

    ``jobs``: for ``jobs`` and ``traffic``, the large jobs' groups (lists of
    distinct group ids, no group in two jobs, at least two groups each);
    ``demand``: for ``traffic``, one ``q x q`` demand matrix (bytes, >= 0) per
    job. Bandwidths in bytes/s per direction. Refused with a
    :class:`~evaluator.errors.ResourceError` before allocating when the arrays
    would not fit in memory (:func:`rdn_bytes`).
    """
    name = check_name(name)
    p = positive_int("topology.p", p)
    a = positive_int("topology.a", a)
    h = positive_int("topology.h", h)
    P = a * h
    g = positive_int("topology.g", g, minimum=2)
    require(g <= P + 1, "topology.g", g, f"an integer in [2, a*h+1] = [2, {P + 1}] (a={a}, h={h})")
    k = positive_int("topology.ports_per_switch", ports_per_switch)
    require(P % k == 0, "topology.ports_per_switch", k, f"a divisor of the a*h = {P} global ports of a group")
    require(configuration in CONFIGURATIONS, "topology.configuration", configuration, " | ".join(CONFIGURATIONS))
    bp = positive_float("topology.bandwidth_p", bandwidth_p)
    bl = positive_float("topology.bandwidth_l", bandwidth_l)
    br = positive_float("topology.bandwidth_r", bandwidth_r)
    job_groups = _job_groups(jobs, configuration, g, k, P)
    demands = _demands(demand, configuration, job_groups)
    check_memory("topology", {"p": p, "a": a, "h": h, "g": g}, rdn_bytes(p, a, h, g),
                 f"its {g * a * p:,} nodes' links and port tables", "Lower p, a, h or g.")

    if configuration == "standard" and g % 2 == 1 and k % 2 == 1:  # refused before the Dragonfly is built
        _check_rounds(g, P, k, (P // (g - 1)) * g, "standard")
    base = dragonfly(p, a, h, g, bandwidth_p=bp, bandwidth_l=bl, bandwidth_r=br)   # local links and m
    n_local = g * a * (a - 1)
    peer_g, peer_p = _peers(configuration, g, P, k, base.links_per_pair, job_groups, demands)

    # directed global links, ordered by (group, port)
    Gs, Js = np.nonzero(peer_g >= 0)
    port_link = np.full((g, P), -1, dtype=np.int64)
    port_link[Gs, Js] = n_local + np.arange(Gs.size)
    g_src = Gs * a + Js // h
    g_dst = peer_g[Gs, Js] * a + peer_p[Gs, Js] // h
    pair_links = np.zeros((g, g), dtype=np.int64)
    np.add.at(pair_links, (Gs, peer_g[Gs, Js]), 1)

    R = g * a
    n_rl = n_local + Gs.size
    nsrc, ndst, nnode, ncls, ncap = node_links(R, p, n_rl, bp, 2)
    src = np.concatenate([base.link_src[:n_local], g_src, nsrc])
    dst = np.concatenate([base.link_dst[:n_local], g_dst, ndst])
    cls = np.concatenate([np.zeros(n_local, np.int64), np.ones(Gs.size, np.int64), ncls])
    cap = np.concatenate([np.full(n_local, bl), np.full(Gs.size, br), ncap])
    lnode = np.concatenate([-np.ones(n_rl, np.int64), nnode])
    if name is None:
        name = f"RDN({p},{a},{h},{g};k={k},{configuration})"
    return RdnTopology(
        name=name, n_routers=R, nodes_per_router=p, router_coords=base.router_coords,
        link_src=frozen(src.astype(np.int64)), link_dst=frozen(dst.astype(np.int64)), link_node=frozen(lnode),
        link_class=frozen(cls), class_names=("local", "global", "injection", "ejection"),
        capacity=frozen(cap.astype(np.float64)), n_router_links=int(n_rl),
        p=p, a=a, h=h, g=g, ports_per_switch=k, configuration=configuration,
        jobs=tuple(tuple(x) for x in job_groups), port_peer_group=frozen(peer_g), port_peer_port=frozen(peer_p),
        port_link=frozen(port_link), pair_links=frozen(pair_links), local_link=base.local_link,
        bandwidth_p=bp, bandwidth_l=bl, bandwidth_r=br,
    )


@dataclass
class RdnConfig:
    """Reconfigurable Dragonfly(p, a, h, g): ``ports_per_switch``, ``configuration`` (standard | jobs | traffic),
    ``jobs`` (group lists of the large jobs), ``demand`` (one group-to-group matrix per job, bytes; traffic only).
    Bandwidths in bytes/s per direction."""

    kind: str = "rdn"
    p: int = 2
    a: int = 4
    h: int = 2
    g: int = 8
    ports_per_switch: int = 1
    configuration: str = "standard"
    jobs: list[list[int]] = field(default_factory=list)
    demand: Optional[Any] = None  # q x q matrices of bytes (integers or floats: rdn() checks them)
    bandwidth_p: float = 10.0e9
    bandwidth_l: float = 10.0e9
    bandwidth_r: float = 10.0e9
    latency: LatencyConfig = field(default_factory=LatencyConfig)  # evaluator.latency (SI units)

def _from_config(cfg: ConfigOf[RdnConfig]) -> RdnTopology:
    jobs = [list(x) for x in cfg.jobs]
    demand = None if cfg.demand is None else [[list(r) for r in m] for m in cfg.demand]
    return rdn(cfg.p, cfg.a, cfg.h, cfg.g, ports_per_switch=cfg.ports_per_switch, configuration=cfg.configuration,
               jobs=jobs, demand=demand, bandwidth_p=cfg.bandwidth_p, bandwidth_l=cfg.bandwidth_l,
               bandwidth_r=cfg.bandwidth_r)


RDN = TopologyKind("rdn", RdnConfig, _from_config)
