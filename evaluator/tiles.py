"""Tile-size advisor: decompositions and per-node tiles of a 3-D (any-D) stencil job, ranked by the link model.

Fiedler's slides ("Choosing Tile Sizes") argue that on a Gemini torus, whose
Y links have half the bandwidth of X and Z, a halo exchange limited by the
links is fastest with tiles twice as long in Y. This module enumerates every
way to run a global grid on a given number of nodes and tasks per node on a
catalogue machine, evaluates the halo exchange with the link model
(:func:`evaluator.evaluate_batch`, stencil traffic) both with all dimensions
at once and one dimension after another (the phases of a per-dimension
exchange), and ranks the candidates.

A candidate
-----------

* ``decomposition`` (``beta``): tasks along each dimension of the grid;
  ``beta_k | grid_k`` and ``prod(beta) = nodes x tasks_per_node``. A task
  (rank) holds ``grid / beta`` points (the *rank tile*).
* ``tile`` (``c``): the tasks of one node, a ``c_1 x ... x c_d`` block of the
  task grid (``c_k | beta_k``, ``prod(c) = tasks_per_node``), as grid_order's
  ``-c`` keeps them; the node grid is ``beta / c``.
* ``router_block`` (``b``): how the nodes of one router sit in the node grid
  (``prod(b) = nodes_per_router``; on Gemini, two nodes side by side along
  one dimension: the *node pair*); the job's routers form a ``beta / (c b)``
  prism, placed at the machine's origin with virtual dimension ``k`` along
  torus dimension ``k`` and routed over the whole host torus (dimension-order
  routing in the machine's ``routing_order``, ties split).

The *router tile* ``grid / beta * c * b`` (points behind one router) is the
slides' "tile": an interior link of dimension ``k`` carries one face of it,
``bytes_per_point * prod_{i != k} router_tile_i`` per exchange, which is the
closed form below. Node injection (and ejection) carries every face of the
node tile that leaves the node, including those to the other node of the
router (DESIGN.md: traffic between nodes of one router uses injection and
ejection only).

Closed form (slides 20-21)
--------------------------

With ``face_k`` the router tile's face and ``bw_k`` the link bandwidth,
``T_k = face_k * bytes_per_point / bw_k``; the exchange takes ``max_k T_k``
with all dimensions at once and ``sum_k T_k`` one after another. Tiles with
``L_k`` proportional to ``1 / bw_k`` equalise the ``T_k``; against a cubic
tile of the same volume they take ``min(bw) / prod(bw)^(1/d)`` of its time
concurrently and ``d / (prod(bw)^(1/d) * sum(1 / bw))`` in sequence:
``2^(1/3) / 2 = 0.630`` and ``3 * 2^(1/3) / 4 = 0.945`` with Y at half
bandwidth (:func:`ideal_ratios`). Tiles of different volume scale by
``(V / V_cubic)^((d-1)/d)``.

Where the link model and the closed form differ (docs/tiles.md):

* injection: when every node sends its whole halo through a NIC slower than
  ``face / bw`` of the links, the NIC is the limit, the time follows the
  node tile's surface and the link bandwidths, hence the tile's shape, matter
  little; the advisor says so;
* boundaries: a periodic exchange on a prism that does not span the host
  ring sends the wrap-around faces back through the prism (twice the load on
  one direction's links); a non-periodic one (default) matches the closed
  form on interior links;
* wrap routes: a prism longer than half a host ring sends some faces the
  short way round, outside the prism.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import xarray as xr

from ._types import Float
from .errors import (ConfigError, MachineError, UnknownMachineError, available_memory, check_memory, is_int,
                     positive_float, positive_int, require)
from .dataset import with_units
from .display import progress_bar
from .evaluation import evaluate_batch
from .machines import Machine, TorusMachine, load_machine
from .placement import Placement
from .routing import dor
from .topology import TorusTopology, torus
from .traffic import Traffic, stencil

__all__ = ["TileRequest", "Candidate", "EXCHANGES", "LIMITS", "ideal_ratios", "closed_form", "candidates",
           "advise", "compare", "format_advice", "plot_advice", "placement_for"]

EXCHANGES = ("all_at_once", "per_dimension")
"""How the halo exchange is done: every dimension at once, or one dimension after another."""

LIMITS = ("all", "links")
"""What bounds the exchange when ranking: every link (router links and node injection/ejection), or the router
links alone (the slides' argument: injection not modelled)."""

_LABEL = {"all_at_once": "all", "per_dimension": "seq"}


def _x(shape) -> str:
    return "x".join(str(int(s)) for s in shape)


@dataclasses.dataclass(frozen=True)
class TileRequest:
    """What the advisor is asked.

    Attributes
    ----------
    grid
        Global grid points per dimension (as many dimensions as the machine's torus).
    nodes, tasks_per_node
        Job size: ``nodes x tasks_per_node`` tasks.
    machine
        A catalogue machine name, a YAML path or a :class:`~evaluator.machines.Machine` (a torus).
    bytes_per_point
        Bytes of one halo point (8: one double, one layer; several fields or layers multiply it).
    periodic
        Periodic boundaries (the wrap-around faces are exchanged too).
    decomposition, tile
        Restrict the search to one task grid ``beta`` and/or one node tile ``c`` (tasks per dimension).
    injection_bandwidth
        Node injection/ejection bandwidth in bytes/s per direction; None: the machine's.
    limit
        ``all`` or ``links`` (see :data:`LIMITS`): what the ranking's times include.
    rank_by
        ``all_at_once`` or ``per_dimension``: which exchange ranks the candidates.
    max_evaluated
        Candidates evaluated with the link model (the best by the closed form of each exchange, ``0``: all).
    """

    grid: tuple[int, ...]
    nodes: int
    tasks_per_node: int
    machine: str | Machine = "BlueWaters"
    bytes_per_point: float = 8.0
    periodic: bool = False
    decomposition: tuple[int, ...] | None = None
    tile: tuple[int, ...] | None = None
    injection_bandwidth: float | None = None
    limit: str = "all"
    rank_by: str = "all_at_once"
    max_evaluated: int = 64


@dataclasses.dataclass(frozen=True)
class Candidate:
    """One way to run the job: task grid, node tile and router block (see the module docstring)."""

    decomposition: tuple[int, ...]
    tile: tuple[int, ...]
    router_block: tuple[int, ...]

    @property
    def node_grid(self) -> tuple[int, ...]:
        return tuple(b // c for b, c in zip(self.decomposition, self.tile))

    @property
    def prism(self) -> tuple[int, ...]:
        """Routers along each dimension."""
        return tuple(n // r for n, r in zip(self.node_grid, self.router_block))

    def rank_tile(self, grid: Sequence[int]) -> tuple[int, ...]:
        return tuple(g // b for g, b in zip(grid, self.decomposition))

    def node_tile(self, grid: Sequence[int]) -> tuple[int, ...]:
        return tuple(r * c for r, c in zip(self.rank_tile(grid), self.tile))

    def router_tile(self, grid: Sequence[int]) -> tuple[int, ...]:
        return tuple(n * b for n, b in zip(self.node_tile(grid), self.router_block))


# ----------------------------------------------------------------------------------
# closed forms
# ----------------------------------------------------------------------------------


def ideal_ratios(bandwidths: Sequence[float]) -> tuple[float, float]:
    """Time of the best tile shape over a cubic tile of the same volume, link-limited (slides 20-21).

    The best tile has sides proportional to ``1 / bw_k`` (every dimension's
    link time equal). Returns ``(concurrent, sequential)``:
    ``min(bw) / g`` and ``d / (g * sum(1 / bw))`` with ``g`` the geometric
    mean of the bandwidths; ``(0.630, 0.945)`` for bandwidths ``(1, 1/2, 1)``.
    """
    bw = np.array([positive_float(f"bandwidths[{k}]", b) for k, b in enumerate(bandwidths)])
    g = float(np.exp(np.log(bw).mean()))
    return float(bw.min() / g), float(len(bw) / (g * (1.0 / bw).sum()))


def _faces(tile: Sequence[int]) -> np.ndarray:
    t = np.asarray(tile, dtype=np.float64)
    return np.array([np.prod(np.delete(t, k)) for k in range(t.size)])


def closed_form(candidate: Candidate, grid: Sequence[int], link_bandwidth: Sequence[float],
                injection_bandwidth: float, bytes_per_point: float,
                periodic: bool = False) -> dict[str, float | Float[np.ndarray, "dim"]]:
    """The slides' halo-exchange times of one candidate, in seconds (interior links and nodes).

    ``link[k]`` = one face of the router tile over ``bw_k`` (0 where the job
    has one router along ``k``); ``injection[k]`` = the node tile's faces
    that leave the busiest node along ``k`` (two where the node grid has
    more than two nodes along ``k``, or two and ``periodic``; one for two
    nodes without; none for one) over the injection bandwidth. Returns those arrays
    and ``all_links = max(link)``, ``seq_links = sum(link)``, ``all =
    max(all_links, sum(injection))``, ``seq = sum(max(link, injection))``.
    """
    bw = np.asarray(link_bandwidth, dtype=np.float64)
    link = _faces(candidate.router_tile(grid)) * bytes_per_point / bw
    link = np.where(np.array(candidate.prism) > 1, link, 0.0)
    ng = np.array(candidate.node_grid)
    faces_out = np.where(ng > 2, 2.0, np.where(ng == 2, 2.0 if periodic else 1.0, 0.0))
    inj = faces_out * _faces(candidate.node_tile(grid)) * bytes_per_point / injection_bandwidth
    return {"link": link, "injection": inj, "all_links": float(link.max()), "seq_links": float(link.sum()),
            "all": float(max(link.max(), inj.sum())), "seq": float(np.maximum(link, inj).sum())}


# ----------------------------------------------------------------------------------
# request, enumeration, placement
# ----------------------------------------------------------------------------------


def _factorizations(n: int, bounds: Sequence[int]) -> list[tuple[int, ...]]:
    """Ordered factorizations ``f`` of ``n`` with ``f_k | bounds_k``."""
    if not bounds:
        return [()] if n == 1 else []
    out = []
    for f in range(1, min(n, bounds[0]) + 1):
        if n % f == 0 and bounds[0] % f == 0:
            out.extend((f,) + rest for rest in _factorizations(n // f, bounds[1:]))
    return out


def _machine(value) -> TorusMachine:
    """The machine, as a torus (a machine without torus geometry is refused naming the kinds that have it)."""
    try:
        m = load_machine(value)
    except UnknownMachineError as exc:
        raise ConfigError("--machine", str(value), str(exc)) from None
    except MachineError as exc:
        raise ConfigError("--machine", str(value), "a valid machine description", str(exc)) from None
    try:
        return m.torus("tiles")
    except MachineError as exc:
        raise ConfigError("--machine", str(value), exc.allowed, str(exc)) from None


def _vector(field: str, value, d: int, what: str) -> tuple[int, ...]:
    allowed = f"a list of {d} positive integers ({what}), one per dimension of the machine's torus"
    require(isinstance(value, (list, tuple, np.ndarray)) and len(value) == d
            and all(is_int(v) and int(v) >= 1 for v in value), field,
            list(value) if isinstance(value, (tuple, np.ndarray)) else value, allowed)
    return tuple(int(v) for v in value)


def check_request(req: TileRequest) -> tuple[TileRequest, TorusMachine]:
    """The request with its fields validated and normalised, and its machine (ConfigError naming the field)."""
    m = _machine(req.machine)
    d = len(m.dims)
    grid = _vector("--grid", req.grid, d, f"points per dimension; {m.name} is a {d}-D torus {_x(m.dims)}")
    tpn = positive_int("--tasks-per-node", req.tasks_per_node)
    nodes = positive_int("--nodes", req.nodes)
    require(nodes <= m.n_nodes, "--nodes", nodes, f"at most the {m.n_nodes} nodes of {m.name}")
    total = nodes * tpn
    require(math.prod(grid) % total == 0, "--nodes", nodes,
            f"a job whose {nodes} x {tpn} = {total} tasks divide the grid's {math.prod(grid)} points "
            f"({_x(grid)}) into whole tiles",
            "Change the node count, the tasks per node or the grid.")
    bpp = positive_float("--bytes-per-point", req.bytes_per_point)
    require(isinstance(req.periodic, (bool, np.bool_)), "--periodic", req.periodic, "true or false")
    require(req.limit in LIMITS, "--limit", req.limit, f"one of {list(LIMITS)}")
    require(req.rank_by in EXCHANGES, "--rank-by", req.rank_by, f"one of {list(EXCHANGES)}")
    require(is_int(req.max_evaluated) and int(req.max_evaluated) >= 0, "--max-evaluated", req.max_evaluated,
            "an integer >= 0 (0: evaluate every candidate)")
    beta = None
    if req.decomposition is not None:
        beta = _vector("--decomposition", req.decomposition, d, "tasks per dimension")
        for k, (g, b) in enumerate(zip(grid, beta)):
            require(g % b == 0, "--decomposition", _x(beta), f"task counts that divide the grid {_x(grid)}",
                    f"Dimension {k}: {b} tasks do not divide {g} points into whole tiles.")
        require(math.prod(beta) == total, "--decomposition", _x(beta),
                f"a task grid of nodes x tasks_per_node = {nodes} x {tpn} = {total} tasks")
    tile = None
    if req.tile is not None:
        tile = _vector("--tile", req.tile, d, "tasks per node along each dimension")
        require(math.prod(tile) == tpn, "--tile", _x(tile), f"a block of tasks_per_node = {tpn} tasks")
        if beta is not None:
            for k, (b, c) in enumerate(zip(beta, tile)):
                require(b % c == 0, "--tile", _x(tile), f"a node tile that divides the decomposition {_x(beta)}",
                        f"Dimension {k}: a node holding {c} tasks does not divide {b} tasks.")
    inj = m.injection_bandwidth if req.injection_bandwidth is None else \
        positive_float("--injection-bandwidth", req.injection_bandwidth)
    norm = dataclasses.replace(req, grid=grid, nodes=nodes, tasks_per_node=tpn, machine=m, bytes_per_point=bpp,
                               periodic=bool(req.periodic), decomposition=beta, tile=tile,
                               injection_bandwidth=inj, max_evaluated=int(req.max_evaluated))
    return norm, m


def candidates(req: TileRequest) -> tuple[list[Candidate], dict[str, int]]:
    """Every candidate of a (checked) request whose router prism fits the machine, and counts of the rest."""
    req, m = check_request(req)
    total = req.nodes * req.tasks_per_node
    betas = [req.decomposition] if req.decomposition is not None else _factorizations(total, req.grid)
    out, counts = [], {"decompositions": len(betas), "too_large": 0, "unpaired": 0}
    for beta in betas:
        tiles = [req.tile] if req.tile is not None else _factorizations(req.tasks_per_node, beta)
        for c in tiles:
            if any(b % t for b, t in zip(beta, c)):
                continue
            ng = tuple(b // t for b, t in zip(beta, c))
            blocks = _factorizations(m.nodes_per_router, ng)
            counts["unpaired"] += not blocks   # a node grid that no block of a router's nodes tiles
            for blk in blocks:
                cand = Candidate(tuple(beta), tuple(c), blk)
                if all(p <= dim for p, dim in zip(cand.prism, m.dims)):
                    out.append(cand)
                else:
                    counts["too_large"] += 1
    return out, counts


def _require_candidates(req: TileRequest, m: TorusMachine, cands: list, counts: dict) -> None:
    """Refuse a request without candidates, naming why: no router prism fits the machine, or no node grid is
    tiled by blocks of a router's nodes (an odd node count on two nodes per router: fewer nodes do not help)."""
    if cands:
        return
    what = (f"{req.nodes} x {req.tasks_per_node} tasks{' with tile ' + _x(req.tile) if req.tile else ''}")
    if counts["too_large"] == 0 and counts["unpaired"] > 0:
        raise ConfigError("--nodes", req.nodes,
                          f"a node count whose node grid (decomposition / node tile) splits into blocks of the "
                          f"{m.nodes_per_router} nodes of one {m.name} router; none of the "
                          f"{counts['decompositions']} decompositions of {_x(req.grid)} over {what} does",
                          f"Use a multiple of {m.nodes_per_router} nodes (a job holds whole routers here).")
    raise ConfigError("--nodes", req.nodes,
                      f"a job that fits {m.name} ({_x(m.dims)} routers x {m.nodes_per_router} nodes) for some "
                      f"decomposition and node tile; none of the {counts['decompositions']} decompositions of "
                      f"{_x(req.grid)} over {what} has a router prism that fits",
                      "Use fewer nodes, other tasks per node or another --tile.")


def _topology(m: TorusMachine) -> TorusTopology:
    """The machine's whole torus, one object per network (so that its compiled kernels are reused)."""
    return _torus(m.dims, m.wrap, m.link_bandwidth, m.nodes_per_router, m.injection_bandwidth)


@functools.lru_cache(maxsize=8)
def _torus(dims, wrap, link_bandwidth, nodes_per_router, injection_bandwidth) -> TorusTopology:
    return torus(list(dims), wrap=list(wrap), link_bandwidth=list(link_bandwidth), nodes_per_router=nodes_per_router,
                 injection_bandwidth=injection_bandwidth, name="torus " + _x(dims))


def placement_for(topology: TorusTopology, candidate: Candidate) -> Placement:
    """Tasks of ``candidate`` on ``topology`` (the stencil's row-major task ids; prism at the origin).

    Task ``x`` (coordinates in the task grid) runs on node ``x // c`` of the
    node grid, which sits on router ``x // (c b)`` at port ``(x // c) mod
    b`` (row-major within the router block).
    """
    beta, c, b = (np.array(v) for v in (candidate.decomposition, candidate.tile, candidate.router_block))
    n = int(np.prod(beta))
    x = np.stack(np.unravel_index(np.arange(n), tuple(beta)), axis=1)
    nc = x // c
    router = np.ravel_multi_index(tuple((nc // b).T), topology.dims)
    port = np.ravel_multi_index(tuple((nc % b).T), tuple(b))
    node = router * topology.nodes_per_router + port
    return Placement(node.astype(np.int64), topology.n_nodes,
                     f"{_x(candidate.decomposition)} tile {_x(candidate.tile)} block {_x(candidate.router_block)}")


def _padded(t: Traffic, n_flows: int) -> Traffic:
    """``t`` with zero-byte flows of task 0 to itself appended up to ``n_flows`` (one shape bucket for all)."""
    pad = n_flows - t.n_flows
    if pad <= 0:
        return t
    z = np.zeros(pad, np.int64)
    return Traffic(t.n_tasks, np.concatenate([t.src, z]), np.concatenate([t.dst, z]),
                   np.concatenate([t.nbytes, np.zeros(pad)]), t.name)


# ----------------------------------------------------------------------------------
# the advisor
# ----------------------------------------------------------------------------------


def _screened(req: TileRequest, cands: list, cf: list) -> tuple[list, list]:
    """The candidates (and their closed forms) left after screening by the closed form: the best
    ``max_evaluated`` of each exchange at the ranking's limit (all of them without a limit)."""
    # screen by the closed form: the best max_evaluated of each exchange (at the ranking's limit)
    keep = set(range(len(cands)))
    if req.max_evaluated and len(cands) > req.max_evaluated:
        suffix = "_links" if req.limit == "links" else ""
        keep = set()
        for e in ("all", "seq"):
            order = sorted(range(len(cands)), key=lambda i: (cf[i][e + suffix], i))
            keep.update(order[: req.max_evaluated])
    idx = sorted(keep)
    cands = [cands[i] for i in idx]
    cf = [cf[i] for i in idx]
    return cands, cf


_BYTES_PER_FLOW_SLOT = 96.0
"""Host and device bytes one padded stencil flow costs while a chunk is evaluated (the traffics, their padding and
:func:`~evaluator.evaluate_batch`'s arrays). Measured 72-75 bytes (peak resident memory of ``advise`` at 1 and 16
candidates a chunk, 1024^3 grid, 32 tasks per node, BlueWaters: 4,096 nodes 0.64 and 3.46 GB, 8,192 nodes 0.86 GB at
one and 1.31 GB at two), rounded up."""

_CHUNK_BYTES = 1e9
"""A chunk holds as many candidates as fit in this many bytes (at least one): above it, batching gains nothing (a
4,096-node candidate evaluates in 0.3 s whether alone or among 16) and only memory grows."""


def _candidate_bytes(req: TileRequest) -> float:
    """Bytes one candidate's exchanges need while evaluated (every traffic padded to the largest's flows)."""
    d = len(req.grid)
    n_tasks = req.nodes * req.tasks_per_node
    return (d + 1) * (2 * d * n_tasks) * _BYTES_PER_FLOW_SLOT + 8.0 * n_tasks


def _chunk(req: TileRequest, chunk_size: int) -> int:
    """Candidates per chunk: at most ``chunk_size``, within :data:`_CHUNK_BYTES` and the memory available (one
    candidate that does not fit is refused before any work)."""
    per_cand = _candidate_bytes(req)
    n_tasks = req.nodes * req.tasks_per_node
    check_memory("--nodes", req.nodes, per_cand,
                 f"the stencil exchanges of one candidate decomposition of {n_tasks:,} tasks",
                 "Use fewer nodes or fewer tasks per node.")
    return max(1, min(chunk_size, int(min(_CHUNK_BYTES, 0.5 * available_memory()) // per_cand)))


def _candidate_loads(req: TileRequest, m, topo, cands: list, chunk_size: int, progress: bool = False) -> np.ndarray:
    """``[candidate, exchange, class]`` busiest-link bytes: every candidate's placement with the stencil's
    exchanges (all dimensions at once, then each one), every traffic padded to the largest exchange's flows (one
    flow bucket: one compilation), a chunk at a time (:func:`_chunk`: memory checked first)."""
    bpp = req.bytes_per_point
    d = len(req.grid)
    full = 2 * d * req.nodes * req.tasks_per_node   # flows of the largest exchange: every traffic is padded to it
    chunk = _chunk(req, chunk_size)
    loads = []
    with progress_bar(total=len(cands), enabled=progress, unit="candidate", desc="tiles: evaluating",
                      leave=False) as bar:
        for start in range(0, len(cands), chunk):   # a chunk at a time: one compiled kernel, bounded memory
            traffics, placements = [], []
            for c in cands[start:start + chunk]:
                pl = placement_for(topo, c)
                tr = stencil(list(req.grid), list(c.decomposition), bpp, req.periodic, "per_dimension")
                traffics.append(_padded(stencil(list(req.grid), list(c.decomposition), bpp, req.periodic), full))
                traffics.extend(_padded(p, full) for p in tr.phases)   # one flow bucket: one compilation
                placements.extend([pl] * (d + 1))
            res = evaluate_batch(topo, dor(m.routing_order), traffics, placements, chunk_size=chunk)
            loads.append(res.metrics["max_load_class"].reshape(len(traffics) // (d + 1), d + 1, -1))
            bar.update(len(traffics) // (d + 1))
    return np.concatenate(loads, axis=0)


def _exchange_times(loads: np.ndarray, cap: np.ndarray, node_cls: list, class_names, cf: list) -> dict:
    """Per candidate, for ``all`` and ``seq``: the time, its router-link and injection parts, which limits it,
    the bottleneck classes and the closed forms (:func:`advise`'s variables)."""
    link_cls = [i for i in range(len(cap)) if i not in node_cls]
    has = np.isfinite(cap)                     # a class without links (capacity inf, see advise) takes no time
    t_cls = np.where(has, loads / np.where(has, cap, 1.0), 0.0)       # [cand, exchange, class] seconds
    t_links = t_cls[:, :, link_cls].max(axis=2)
    t_inj = t_cls[:, :, node_cls].max(axis=2)
    t = t_cls.max(axis=2)
    names = np.where(t > 0, np.asarray(class_names)[t_cls.argmax(axis=2)], "none")
    lim = np.where(t_inj > t_links, "injection", "links")
    lim = np.where(t == 0, "none", lim)
    seq_lim = []
    for row in lim[:, 1:]:
        used = {x for x in row if x != "none"}
        seq_lim.append(used.pop() if len(used) == 1 else ("mixed" if used else "none"))
    data = {
        "time_all": t[:, 0], "time_seq": t[:, 1:].sum(axis=1),
        "links_all": t_links[:, 0], "links_seq": t_links[:, 1:].sum(axis=1),
        "injection_all": t_inj[:, 0], "injection_seq": t_inj[:, 1:].sum(axis=1),
        "limit_all": lim[:, 0], "limit_seq": np.array(seq_lim),
        "bottleneck_all": names[:, 0], "bottleneck_seq": np.array(["/".join(r) for r in names[:, 1:]]),
        "closed_all": np.array([x["all"] for x in cf]), "closed_seq": np.array([x["seq"] for x in cf]),
        "closed_links_all": np.array([x["all_links"] for x in cf]),
        "closed_links_seq": np.array([x["seq_links"] for x in cf]),
    }
    return data


def advise(req: TileRequest, chunk_size: int = 16, progress: bool = False) -> xr.Dataset:
    """Enumerate, evaluate and rank the candidates of ``req``; one row per evaluated candidate, best first.

    Returns a dataset along ``candidate`` (rank order) with the candidate's
    ``decomposition``, ``tile``, ``router_block``, ``prism``, ``rank_tile``,
    ``router_tile`` (labels such as ``"40x20x40"``), and for each exchange
    ``e`` in ``all`` (all dimensions at once) and ``seq`` (one dimension
    after another): ``time_<e>`` (s, the link model: slowest link including
    node injection/ejection), ``links_<e>`` (s, router links only),
    ``injection_<e>`` (s, node injection/ejection only), ``limit_<e>``
    (``links``, ``injection``, or for ``seq`` ``mixed`` when phases differ),
    ``bottleneck_<e>`` (link class per phase joined by ``/`` for ``seq``),
    ``closed_<e>`` (s, the closed form with injection) and
    ``closed_links_<e>`` (s, the slides' formula, links only). ``attrs``
    say what was asked and how many candidates were enumerated and
    evaluated, and carry the ideal-tile ratios (:func:`ideal_ratios`).

    Candidates are evaluated ``chunk_size`` at a time, fewer where a chunk
    would pass about 1 GB; a job of which one candidate does not fit in
    memory is refused (:class:`~evaluator.errors.ResourceError` naming
    ``--nodes``) before any work. ``progress`` shows a bar over the
    candidates (stderr).
    """
    req, m = check_request(req)
    cands, counts = candidates(req)
    _require_candidates(req, m, cands, counts)
    topo = _topology(m)
    # every link of a class has one capacity here, so an exchange's time is max over classes of
    # max_load_class / capacity: the injection bandwidth asked for is applied below, without a new network
    # (a class without links - a dimension of one router, as on a 2x1x1 torus - carries no byte: capacity inf)
    cap = np.array([topo.capacity[topo.link_class == i].min() if np.any(topo.link_class == i) else np.inf
                    for i in range(len(topo.class_names))])
    assert all(np.all(topo.capacity[topo.link_class == i] == c) for i, c in enumerate(cap))
    node_cls = [i for i, n in enumerate(topo.class_names) if n in ("injection", "ejection")]
    inj_bw = float(cap[node_cls[0]]) if req.injection_bandwidth is None else float(req.injection_bandwidth)
    cap[node_cls] = inj_bw
    bw = list(m.link_bandwidth)
    bpp = req.bytes_per_point
    cf = [closed_form(c, req.grid, bw, inj_bw, bpp, req.periodic) for c in cands]
    n_all = len(cands)
    cands, cf = _screened(req, cands, cf)
    loads = _candidate_loads(req, m, topo, cands, chunk_size, progress)
    data = _exchange_times(loads, cap, node_cls, topo.class_names, cf)
    key = _LABEL[req.rank_by]
    score = data[("links_" if req.limit == "links" else "time_") + key]
    other = data[("links_" if req.limit == "links" else "time_") + ("seq" if key == "all" else "all")]
    # ties: the other exchange, then the full time (injection included), then enumeration order
    order = np.lexsort((np.arange(len(cands)), data["time_seq"], data["time_all"], other, score))
    units = {"time": "s", "links": "s", "injection": "s", "closed": "s", "closed_links": "s"}
    ds = xr.Dataset(coords={"candidate": np.arange(1, len(cands) + 1)})
    for k, v in (("decomposition", [c.decomposition for c in cands]), ("tile", [c.tile for c in cands]),
                 ("router_block", [c.router_block for c in cands]), ("prism", [c.prism for c in cands]),
                 ("rank_tile", [c.rank_tile(req.grid) for c in cands]),
                 ("router_tile", [c.router_tile(req.grid) for c in cands])):
        ds[k] = ("candidate", np.array([_x(s) for s in v])[order])
    for k, v in data.items():
        ds[k] = ("candidate", np.asarray(v)[order])
        stem = k.rsplit("_", 1)[0]
        if stem in units:
            ds[k].attrs["units"] = units[stem]
    ideal = ideal_ratios(bw)
    ds.attrs.update({
        "title": "evaluator tiles: halo-exchange tile advisor",
        "machine": m.name, "grid": _x(req.grid), "nodes": req.nodes, "tasks_per_node": req.tasks_per_node,
        "bytes_per_point": bpp, "periodic": int(req.periodic), "limit": req.limit, "rank_by": req.rank_by,
        "link_bandwidth": ",".join(f"{b:.4g}" for b in bw), "injection_bandwidth": inj_bw,
        "n_candidates": n_all, "n_evaluated": len(cands), "n_too_large": counts["too_large"],
        "n_decompositions": counts["decompositions"],
        "ideal_ratio_all": ideal[0], "ideal_ratio_seq": ideal[1],
    })
    return with_units(ds)


def compare(ds: xr.Dataset, baseline: xr.Dataset) -> xr.Dataset:
    """``ds`` with the speedups over the baseline's best candidate, each named by what it compares.

    * ``speedup_links_all`` / ``speedup_links_seq``: router links only on both sides (the slides' argument):
      the baseline's best ``links_*`` over the candidate's ``links_*``;
    * ``speedup_time_all`` / ``speedup_time_seq``: every link, the NIC included, on both sides: the baseline's
      best ``time_*`` over the candidate's ``time_*``.

    ``_all``: all dimensions at once; ``_seq``: one dimension at a time. The baseline's best is its first row
    (its own ranking, by its ``limit``). A links-only speedup is never shown beside a time with the NIC: where
    injection limits, the two differ (Blue Waters' example: 1.638x links only, 1.092x with the NIC).
    """
    out = ds.copy()
    b0 = baseline.isel(candidate=0)
    for what in ("links", "time"):
        for e in ("all", "seq"):
            name = f"speedup_{what}_{e}"
            out[name] = float(b0[f"{what}_{e}"]) / ds[f"{what}_{e}"]
            out[name].attrs["units"] = "1"
    out.attrs["baseline"] = (f"grid {baseline.attrs['grid']} on {baseline.attrs['nodes']} nodes x "
                             f"{baseline.attrs['tasks_per_node']}: {b0.decomposition.item()} tile "
                             f"{b0.tile.item()} router tile {b0.router_tile.item()}")
    return with_units(out)


# ----------------------------------------------------------------------------------
# presentation
# ----------------------------------------------------------------------------------


_TIME_COLUMNS = ("time_all", "time_seq", "links_all", "links_seq", "closed_links_all", "closed_links_seq")
"""The time columns of the ranked table, shown in one display unit (:func:`evaluator.display.shared_unit`)."""


def _bandwidths(a: dict) -> tuple[str, str]:
    """The machine's link bandwidths (one unit) and the node's injection bandwidth, for people: ``("9.375,
    4.688, 9.375 GB/s", "6.400 GB/s")``."""
    from .display import format_value, format_values, shared_unit

    bw = [float(b) for b in str(a["link_bandwidth"]).split(",")]
    texts, unit = format_values(bw, "bytes/s", shared_unit("bytes/s", [bw]))
    return f"{', '.join(texts)} {unit}", format_value(float(a["injection_bandwidth"]), "bytes/s")


def _rank_labels(ds: xr.Dataset) -> list[str]:
    """Each ranked candidate's rank: candidates equal in every time the ranking reads (the router links' and the
    full exchange's, all at once and per dimension) share the first one's rank, marked ``=`` (``1=``, ``1=``,
    ``3``): the enumeration order that breaks such ties is no ranking."""
    from .display import rank_labels

    keys = np.stack([np.asarray(ds[v].values, float) for v in ("links_all", "links_seq", "time_all", "time_seq")], 1)
    ranks = [1]
    for i in range(1, len(keys)):
        ranks.append(ranks[-1] if np.allclose(keys[i], keys[i - 1], rtol=1e-12, atol=0.0) else i + 1)
    return rank_labels(ranks[:len(keys)])


_SPEEDUPS = ("speedup_links_all", "speedup_links_seq", "speedup_time_all", "speedup_time_seq")


def _ratio(x) -> str:
    """A speedup for people: ``1.638``; ``inf`` (the candidate's time is 0 s, the baseline's not); ``-`` (0 s over
    0 s: neither exchange crosses the links the ratio reads, so there is no ratio; the dataset keeps NaN)."""
    v = float(x)
    return "-" if np.isnan(v) else ("inf" if np.isinf(v) else f"{v:.3f}")


def format_advice(ds: xr.Dataset, top: int = 10) -> str:
    """The ranked table and plain-language notes (what limits the exchange, the closed form, the baseline).

    Times are in one display unit for the whole table, chosen from the shown rows' times and named in the headers
    (:mod:`evaluator.display`); bandwidths in decimal SI (GB/s)."""
    from .display import format_values, shared_unit

    a = ds.attrs
    n = ds.sizes["candidate"] if top <= 0 else min(top, ds.sizes["candidate"])
    links_bw, inj_bw = _bandwidths(a)
    lines = [f"{a['machine']}: grid {a['grid']} on {a['nodes']} nodes x {a['tasks_per_node']} tasks, "
             f"{a['bytes_per_point']:g} bytes per halo point, {'periodic' if a['periodic'] else 'non-periodic'}; "
             f"links {links_bw}, injection {inj_bw} per node",
             f"{a['n_candidates']} candidates fit ({a['n_too_large']} too large for the machine), "
             f"{a['n_evaluated']} evaluated with the link model; ranked by "
             f"{a['rank_by'].replace('_', ' ')} ({'router links only' if a['limit'] == 'links' else 'every link'})"]
    shown = ds.isel(candidate=slice(0, n))
    tu = shared_unit("s", [shown[c].values for c in _TIME_COLUMNS])
    u = tu[0]

    def t(x: float) -> str:
        return format_values([x], "s", tu)[0][0]

    speed = "speedup_links_all" in ds
    # the shape columns: their usual widths, wider where a shown shape is longer (5-D grids, large extents)
    shapes = [(name, field, max(width, len(name) + 1, *(len(v) + 1 for v in shown[field].values.tolist())))
              for name, field, width in (("decomposition", "decomposition", 14), ("tile/node", "tile", 10),
                                         ("pair", "router_block", 7), ("prism", "prism", 9),
                                         ("router tile", "router_tile", 13))]
    head = (f"{'rank':>4}  " + "".join(f"{name:<{w}}" for name, _, w in shapes) +
            f"{f'all-at-once [{u}]':>17} {'limit':<10}{f'per-dim [{u}]':>13} {'limit':<10}"
            f"{f'links only [{u}]':>18}{f'closed form [{u}]':>19}")
    if speed:
        head += f"{'speedup links':>15}{'speedup w/ NIC':>16}"
    lines += ["", head]
    ranks = _rank_labels(ds)
    for i in range(n):
        r = ds.isel(candidate=i)
        row = (f"{ranks[i]:>4}  " + "".join(f"{r[field].item():<{w}}" for _, field, w in shapes) +
               f"{t(float(r.time_all)):>17} "
               f"{r.limit_all.item():<10}{t(float(r.time_seq)):>13} {r.limit_seq.item():<10}"
               f"{t(float(r.links_all)) + '/' + t(float(r.links_seq)):>18}"
               f"{t(float(r.closed_links_all)) + '/' + t(float(r.closed_links_seq)):>19}")
        if speed:
            row += (f"{_ratio(r.speedup_links_all) + '/' + _ratio(r.speedup_links_seq):>15}"
                    f"{_ratio(r.speedup_time_all) + '/' + _ratio(r.speedup_time_seq):>16}")
        lines.append(row)
    lines += ["", "columns: tile/node = tasks per node along each dimension; pair = how a router's nodes sit "
              "(1x2x1: side by side along Y); router tile = points behind one router (the slides' tile); "
              "links only and closed form: all-at-once/per-dimension, router links only"]
    best = ds.isel(candidate=0)
    key = _LABEL[a["rank_by"]]
    limit = best[f"limit_{key}"].item()
    if limit in ("injection", "mixed"):
        lim_t, inj_t = float(best[f"links_{key}"]), float(best[f"injection_{key}"])
        what = (f"node injection, not the links, limits the best candidate's {a['rank_by'].replace('_', ' ')} "
                f"exchange{' in some phases' if limit == 'mixed' else ''}: {t(inj_t)} {u} through the NIC "
                f"({inj_bw}) against {t(lim_t)} {u} on the busiest router link.")
        if a["limit"] == "links":
            lines.append(f"NOTE: ranked by the router links alone (the slides' argument), but {what} With "
                         f"injection counted the times are the 'all-at-once' and 'per-dim' columns, which "
                         f"follow the node tile's surface: the tile's shape matters little there.")
        else:
            lines.append(f"NOTE: {what} The time then follows the node tile's surface, and the tile's shape "
                         f"(the slower Y links) matters little; rerun with --limit links for the slides' "
                         f"link-limited ranking.")
    n_inj = int((ds[f"limit_{key}"] == "injection").sum())
    if n_inj and limit == "links":
        lines.append(f"note: {n_inj} of {ds.sizes['candidate']} evaluated candidates are injection-limited.")
    lines.append(f"closed form (slides 20-21): tiles with sides proportional to 1/bandwidth take "
                 f"{a['ideal_ratio_all']:.3f} of a cubic tile's time with all dimensions at once and "
                 f"{a['ideal_ratio_seq']:.3f} one dimension at a time (same volume, links only).")
    if speed:
        lines.append(f"speedup links = the baseline's best time over this candidate's on the router links alone "
                     f"(both sides links only); speedup w/ NIC = the same with every link and the NIC counted "
                     f"(all-at-once/per-dimension each); baseline: {a['baseline']}")
        if any(not np.isfinite(float(ds.isel(candidate=i)[v])) for i in range(n) for v in _SPEEDUPS):
            lines.append("a speedup of '-' compares two exchanges that cross no router link (0 s over 0 s: no "
                         "ratio); 'inf' a candidate that crosses none against a baseline that does")
    return "\n".join(lines)


def plot_advice(ds: xr.Dataset, path: str | Path, top: int = 15) -> Path:
    """Horizontal bars of the best ``top`` candidates: each exchange's time, with the NIC and links only."""
    from matplotlib.figure import Figure

    from .display import axis_label, shared_unit
    from .io import save_figure

    sub = ds.isel(candidate=slice(0, top)) if top > 0 else ds
    n = sub.sizes["candidate"]
    fig = Figure(figsize=(10.0, 1.2 + 0.42 * n))
    ax = fig.add_subplot(1, 1, 1)
    y = np.arange(n)[::-1]
    series = (("time_all", "all at once", "tab:blue"), ("links_all", "all at once, links only", "tab:cyan"),
              ("time_seq", "one dimension at a time", "tab:red"),
              ("links_seq", "one at a time, links only", "tab:orange"))
    h = 0.8 / len(series)
    unit, factor = shared_unit("s", [sub[var].values for var, _, _ in series])  # the table's rule
    for i, (var, lab, col) in enumerate(series):
        ax.barh(y + (len(series) / 2 - i - 0.5) * h, sub[var].values / factor, h, label=lab, color=col)
    ax.set_yticks(y)
    ax.set_yticklabels([f"{r.decomposition.item()} / {r.tile.item()} / {r.router_block.item()}"
                        for r in (sub.isel(candidate=i) for i in range(n))], fontsize=7)
    ax.set_xlabel(axis_label("halo exchange time", unit))
    ax.set_ylabel("decomposition / tile per node / node pair [tasks, tasks, nodes]")
    ax.set_title(f"{ds.attrs['machine']}: grid {ds.attrs['grid']} on {ds.attrs['nodes']} nodes x "
                 f"{ds.attrs['tasks_per_node']}", fontsize=9)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    return save_figure(fig, path)
