"""Bench scenario ``mapping``: the mapping search (:mod:`evaluator.mapping`, issue 27).

Three measurements, each against a reference measured in the same run:

* **moves per second**: candidate moves (task swaps) of 1,024 ranks on each
  network family (:data:`MOVE_CASES`: a 3-D stencil on a Dragonfly, a torus
  and a fat tree; an unstructured-mesh halo and a power-law pattern), scored
  incrementally by the search's evaluator as the search scores them (degree
  buckets and levels), against the same candidates evaluated in full by the
  batched kernel (:func:`evaluator.evaluate_batch` with one flow list for
  every point: the placement-sweep path, the fastest full evaluation the
  project has); the first 512 (quick) or 2,048 incremental times are checked
  against the kernel's;
* **quality against the budget**: the predicted completion time the search
  reaches after 5, 15, 30 and 60 s (one run, read off its progress) on
  irregular traffic: a random sparse graph, an unstructured-mesh halo and a
  trace-derived matrix (an OTF2 trace of a halo exchange with an allreduce,
  written here and read back by the ``trace`` traffic), on a torus, a
  Dragonfly and a tapered fat tree, against the graph-partitioning mapping
  (METIS) and the best named placement (both computed by the search as its
  starting points), and against Scotch's mapping (``scotch_gmap`` onto its own model of the machine:
  :mod:`.scotch`) and KaHIP's process mapping (``kaffpa --enable_mapping`` onto a hierarchy of the machine:
  :mod:`.kahip`) evaluated by the same model; "Scotch absent" ("KaHIP absent") where it is not installed;
* **held-out cases** (full run only, :data:`HELDOUT_CASES`, issue 37's done-when): a LULESH-like 27-point
  stencil with uneven faces, a pencil FFT and a power-law pattern on an 8x8x8 and a 16x8x8 torus (DOR), 1 and 4
  tasks per node, 512-1,024 ranks, 60 s each, against Scotch, KaHIP, METIS and the best named placement, with the
  bound and the gain against the best of Scotch, KaHIP (where it ran) and the named placements.

The patterns (:func:`random_graph`, :func:`mesh_halo`, :func:`trace_matrix`)
are deterministic for a seed.
"""

from __future__ import annotations

import math
import os
import tempfile
import time

import numpy as np

from . import kahip, prism_pencil_bound, scotch

__all__ = ["OUTSIDE_MAPPERS", "random_graph", "mesh_halo", "power_law", "MOVE_CASES", "write_halo_trace",
           "trace_matrix", "w_mapping", "w_moves", "mapping_rows", "QUALITY_BUDGETS", "QUALITY_CASES", "HELDOUT_CASES",
           "HELDOUT_CERTIFICATES", "HELDOUT_PATTERNS", "heldout_case", "heldout", "heldout_verdict"]

OUTSIDE_MAPPERS = (scotch.MAPPER, kahip.MAPPER)
"""The outside mappers the bench compares the search with (:class:`.outside.Mapper`), in the order printed."""

_UNDEFINED_RANK = 2 ** 32 - 1  # OTF2_UNDEFINED_UINT32: no root (an allreduce)

QUALITY_BUDGETS = (5.0, 15.0, 30.0, 60.0)
"""Seconds of search at which the quality rows read the best time."""


def random_graph(n: int, degree: int = 6, seed: int = 0):
    """A random sparse graph: every task exchanges with ``degree`` random partners (``degree / 2`` random
    permutations, both ways), 0.5-2 MB per message (uniform)."""
    from ..traffic import from_flows

    rng = np.random.default_rng(seed)
    src = np.concatenate([np.arange(n)] * (degree // 2))
    dst = np.concatenate([rng.permutation(n) for _ in range(degree // 2)])
    b = rng.uniform(0.5e6, 2e6, src.size)
    return from_flows(n, np.concatenate([src, dst]), np.concatenate([dst, src]), np.concatenate([b, b]),
                      name=f"random graph (degree {degree})")


def _mesh_edges(n: int, k: int, seed: int):
    from scipy.spatial import cKDTree

    rng = np.random.default_rng(seed)
    pts = rng.random((n, 3))
    _, nb = cKDTree(pts).query(pts, k + 1)
    a = np.repeat(np.arange(n), k)
    b = nb[:, 1:].ravel()
    pairs = np.unique(np.sort(np.stack([a, b], 1), axis=1), axis=0)  # undirected neighbour pairs
    area = rng.uniform(0.5, 1.5, len(pairs))  # the shared face's size, relative
    order = rng.permutation(n)  # ranks as a partitioner numbered the parts: unrelated to the geometry
    return order[pairs[:, 0]], order[pairs[:, 1]], area


def mesh_halo(n: int, k: int = 6, bytes_per_face: float = 1e6, seed: int = 0):
    """An unstructured-mesh halo exchange: ``n`` parts at random points of a cube, each a neighbour of its ``k``
    nearest (symmetrised), exchanging ``bytes_per_face`` times a random face size (0.5-1.5) both ways; ranks
    numbered at random (as a mesh partitioner leaves them, unrelated to the machine)."""
    from ..traffic import from_flows

    s, d, area = _mesh_edges(n, k, seed)
    b = bytes_per_face * area
    return from_flows(n, np.concatenate([s, d]), np.concatenate([d, s]), np.concatenate([b, b]),
                      name=f"mesh halo ({k} nearest)")


def write_halo_trace(path: str, n: int, iterations: int = 2, seed: int = 0) -> str:
    """An OTF2 trace of a mini-app: ``iterations`` times a mesh halo exchange (:func:`mesh_halo`'s pairs,
    non-blocking sends) then an allreduce of 8 kB; returns the anchor file."""
    import otf2
    from otf2.enums import CollectiveOp, GroupType, Paradigm

    s, d, area = _mesh_edges(n, 6, seed)
    by_rank: dict[int, list] = {}
    for a, b, x in zip(s.tolist(), d.tolist(), (1e6 * area).astype(np.int64).tolist()):
        by_rank.setdefault(a, []).append((b, x))
        by_rank.setdefault(b, []).append((a, x))
    with otf2.writer.open(path, timer_resolution=1_000_000) as tr:
        defs = tr.definitions
        node = defs.system_tree_node("machine")
        groups = [defs.location_group(f"MPI Rank {r}", system_tree_parent=node) for r in range(n)]
        locs = [defs.location(f"rank {r}", group=groups[r]) for r in range(n)]
        defs.group("world locations", group_type=GroupType.COMM_LOCATIONS, paradigm=Paradigm.MPI, members=locs)
        world = defs.comm("MPI_COMM_WORLD", group=defs.group("world", group_type=GroupType.COMM_GROUP,
                                                              paradigm=Paradigm.MPI, members=list(range(n))))
        for r in range(n):
            w = tr.event_writer_from_location(locs[r])
            t = 10
            for _ in range(iterations):
                for peer, nbytes in by_rank.get(r, []):
                    w.mpi_isend(t, peer, world, 0, nbytes, t)
                    t += 1
                t = max(t, 10) + 100
                w.mpi_collective_begin(t - 1)
                w.mpi_collective_end(t, CollectiveOp.ALLREDUCE, world, _UNDEFINED_RANK, 8000 * n, 8000 * n)
                t += 100
    return os.path.join(path, "traces.otf2")


def trace_matrix(n: int, seed: int = 0, directory: str | None = None):
    """The aggregated traffic of :func:`write_halo_trace` read back by the ``trace`` traffic (allreduce by the
    default algorithm)."""
    from ..traffic import from_trace

    with tempfile.TemporaryDirectory(dir=directory) as d:
        anchor = write_halo_trace(os.path.join(d, "trace"), n, seed=seed)
        tr = from_trace(anchor, mode="aggregate")
    return tr


def _networks(n: int):
    """(label, topology, routing) of ``n`` nodes: a 3-D torus (DOR), a Dragonfly (minimal), a fat tree with a
    2:1 taper (D-mod-k)."""
    from ..topology import dragonfly, fat_tree, torus

    if n == 1024:
        return [("torus 16x8x8, dor", torus((16, 8, 8)), "dor"),
                ("DF(4,8,4), minimal", dragonfly(4, 8, 4), "minimal"),
                ("fat tree XGFT(2;32,32;1,16), dmodk", fat_tree([32, 32], [1, 16]), "dmodk")]
    return [("torus 16x16x16, dor", torus((16, 16, 16)), "dor"),
            ("DF(8,16,8), minimal", dragonfly(8, 16, 8, 33), "minimal"),
            ("fat tree XGFT(2;64,64;1,32), dmodk", fat_tree([64, 64], [1, 32]), "dmodk")]


QUALITY_CASES = {False: [(1024, p) for p in ("random graph", "mesh halo", "trace")] + [(4096, "mesh halo")],
                 True: [(1024, "mesh halo")]}
"""(ranks, pattern) of the quality rows (full, quick); each on the three networks of :func:`_networks`."""


def _pattern(name: str, n: int):
    return {"random graph": lambda: random_graph(n, 6, seed=1), "mesh halo": lambda: mesh_halo(n, seed=2),
            "trace": lambda: trace_matrix(n, seed=3)}[name]()


def power_law(n: int, m_per: int = 4, alpha: float = 1.1, seed: int = 0):
    """A power-law sparse pattern: flows both ways between tasks drawn with probability ~ rank^-alpha (a Chung-Lu
    graph), 0.5-2 MB each (uniform): a few hub tasks with hundreds of partners, most with a handful."""
    from ..traffic import from_flows

    rng = np.random.default_rng(seed)
    w = 1.0 / np.arange(1, n + 1) ** alpha
    p = (w / w.sum())[rng.permutation(n)]
    s, d = rng.choice(n, m_per * n, p=p), rng.choice(n, m_per * n, p=p)
    keep = s != d
    s, d = s[keep], d[keep]
    b = rng.uniform(0.5e6, 2e6, s.size)
    return from_flows(n, np.concatenate([s, d]), np.concatenate([d, s]), np.concatenate([b, b]),
                      name=f"power law (alpha {alpha})")


MOVE_CASES = (("stencil 16x8x8", "DF(4,8,4), minimal"), ("stencil 16x8x8", "torus 16x8x8, dor"),
              ("stencil 16x8x8", "fat tree XGFT(2;32,32;1,16), dmodk"), ("mesh halo", "torus 16x8x8, dor"),
              ("power law", "DF(4,8,4), minimal"), ("power law", "torus 16x8x8, dor"))
"""(pattern, network) of the candidate-move rows: 1,024 ranks, one per node; each family of :func:`_networks` and
the patterns whose moves cost the most (a 3-D stencil, an unstructured-mesh halo, a power-law pattern)."""


MOVE_MIN_S = {False: 2.0, True: 1.0}
"""Seconds of timed batches a move row's case gets (at least three; full, ``--quick``): :func:`_move_rates`."""


def _move_pattern(name: str, n: int):
    from .. import traffic

    if name == "stencil 16x8x8":
        return traffic.stencil([64, 64, 64], [16, 8, 8])
    if name == "power law":
        return power_law(n, seed=4)
    return _pattern(name, n)


def _move_case(quick: bool, pattern: str, network: str):
    """One case of the move rows, set up and warm: ``(incremental, finish)``. ``incremental()`` scores the case's
    candidate moves (single task swaps, drawn uniformly) incrementally, as the search scores them (its degree
    buckets and levels); ``finish(seconds, timed)`` is the case's row for a median of ``seconds`` per batch, with
    the same candidates evaluated in full by the batched kernel (the reference, timed by ``timed``)."""
    from .. import placement
    from ..evaluation import as_routing, evaluate_batch
    from ..mapping import move_evaluator

    n = 1024
    topo, rt = next((t, as_routing(r)) for label, t, r in _networks(n) if label == network)
    tr = _move_pattern(pattern, n)
    nodes = np.arange(n)
    me = move_evaluator(topo, rt, tr, nodes)
    rng = np.random.default_rng(0)
    slot_task = rng.permutation(n)
    loads = me.loads(slot_task)
    st, tn = me.device_state(slot_task)
    K = 4096 if quick else 16384
    pairs = np.stack([rng.choice(n, 2, replace=False) for _ in range(K)])
    a, b = pairs[:, :1], pairs[:, 1:]

    def incremental():
        t, _ = me.scores(st, tn, loads, a, b, host_state=slot_task)
        return np.asarray(t)

    t_inc = incremental()
    for _ in range(8):  # warm: until a call compiles nothing (DOR's compact listing settles its sizes in 2-3)
        compiled = me.n_compiled
        incremental()
        if me.n_compiled == compiled:
            break

    def finish(inc_s: float, timed) -> dict:
        # the reference: the same candidates in full by the batched kernel (one flow list, task_node per point)
        k_ref = 512 if quick else 2048
        task_nodes = []
        for i in range(k_ref):
            s2 = slot_task.copy()
            s2[a[i]], s2[b[i]] = slot_task[b[i]], slot_task[a[i]]
            task_nodes.append(me.task_node(s2))
        pls = [placement.explicit(topo, x) for x in task_nodes]

        def full():
            return evaluate_batch(topo, rt, tr, pls).metrics["completion_time"]

        t_full = full()
        full_s = timed(full, 3)
        check = float(np.max(np.abs(t_inc[:k_ref] - t_full) / t_full))
        return {"pattern": pattern, "network": network, "moves": K, "seconds": inc_s, "moves_per_s": K / inc_s,
                "ref_points": k_ref, "ref_seconds": full_s, "ref_per_s": k_ref / full_s, "check": check,
                "evaluator": type(me).__name__}

    return incremental, finish


def _move_rates(quick: bool, timed, cases=MOVE_CASES) -> list[dict]:
    """The move rows of ``cases``: every case set up and warmed (:func:`_move_case`), then their batches timed in
    rounds, one batch of each case in turn, until each has had three and the rounds took :data:`MOVE_MIN_S` a case;
    each row the median of its case's batches. Timed in turn, a slow spell of this shared VM slows every row
    alike: timed one case after the other (three batches each), the torus power law read 75,000 to 117,000
    moves/s and the mesh halo 94,000 to 125,000 within an hour, a different row low in each run."""
    from ._common import _interleaved

    made = [_move_case(quick, p, net) for p, net in cases]
    secs = _interleaved([inc for inc, _ in made], 3, MOVE_MIN_S[quick] * len(made), block=0.0)
    return [finish(s, timed) for (_, finish), s in zip(made, secs)]


def _outside(topo, routing, tr, nodes=None, tasks_per_node: int = 1) -> dict:
    """Every outside mapper's mapping of the case (:data:`OUTSIDE_MAPPERS`: Scotch, KaHIP) onto the available
    ``nodes`` (default every node), ``tasks_per_node`` tasks each, its completion time by the project's model
    (the evaluation the search's starts get) and how it was made; ``{key_absent: reason}`` for a mapper absent,
    not applicable or failing."""
    return {k: v for m in OUTSIDE_MAPPERS for k, v in m.row(topo, routing, tr, nodes, tasks_per_node).items()}


def _quality(quick: bool) -> list[dict]:
    from ..mapping import search_mapping

    budget = 10.0 if quick else QUALITY_BUDGETS[-1]
    rows = []
    for n, pattern in QUALITY_CASES[quick]:
        tr = _pattern(pattern, n)
        for label, topo, routing in _networks(n):
            t0 = time.perf_counter()
            res = search_mapping(topo, tr, routing, time_budget=budget, seed=0, progress=False)
            wall = time.perf_counter() - t0
            named = {k: v for k, v in res.starts.items() if k != "partition" and not k.startswith("random")}
            best_named = min(named, key=named.get)
            el = np.asarray(res.trace.elapsed)
            bt = np.asarray(res.trace.best_completion_time)
            at = {b: float(bt[el <= b][-1]) for b in QUALITY_BUDGETS if b <= budget}
            rows.append({"ranks": n, "pattern": pattern, "network": label, "budget": budget, "wall_s": wall,
                         "time": res.completion_time, "partition": res.starts["partition"],
                         "best_named": named[best_named], "best_named_name": best_named, "at": at,
                         "moves": int(res.trace.evaluated[-1]), "search_s": float(el[-1]),
                         "bound": res.lower_bound, "bound_kind": res.bound.describe(),
                         "evaluator": res.info["evaluator"], "starts_s": res.info["starts_seconds"],
                         **_outside(topo, routing, tr)})
    return rows


HELDOUT_PATTERNS = ("27-point stencil", "pencil FFT", "power law")
"""The held-out patterns of issue 37: a LULESH-like 27-point stencil with uneven faces (48x40x32 elements per task,
8 bytes each, non-periodic; the task grid given to the search, so its grid-aware starts apply), a pencil FFT (the
``pencil`` traffic, 256^3 points of 16 bytes) and a power-law sparse pattern (:func:`power_law`)."""

HELDOUT_CASES = tuple((dims, tpn, ranks, box, pattern)
                      for dims, tpn, ranks, box in (((8, 8, 8), 1, 512, (8, 8, 8)), ((16, 8, 8), 1, 1024, (16, 8, 8)),
                                                    ((8, 8, 8), 4, 1024, (4, 8, 8)), ((16, 8, 8), 4, 1024, (16, 4, 4)))
                      for pattern in HELDOUT_PATTERNS)
"""(torus dims, tasks per node, ranks, job box, pattern) of the held-out rows, DOR routing. The job's nodes are the
routers of the box at the torus's origin (one node per router, row-major: the launcher's fill order; the rest of the
machine idle): with 1 task per node the whole machine, with 4 per node 256 nodes for 1,024 ranks, a 4x8x8 half of
the 8x8x8 torus and a long 16x4x4 prism of the 16x8x8 one (its wrapped ring of 16 kept)."""

HELDOUT_CERTIFICATES = {((16, 8, 8), 4, 1024, (16, 4, 4), "pencil FFT"): prism_pencil_bound}
"""Held-out rows with a certificate of their own (a module with ``certified_seconds(topology, traffic, nodes,
tasks_per_node, routing) -> (seconds, why not)``, run as ``python -m`` to print it): a lower
bound on every mapping of that row which the search's general bound (:func:`evaluator.mapping.mapping_bound`) does
not reach. :func:`heldout_case` computes it beside the search and :func:`heldout_verdict` counts the larger of the
two as the row's bound."""

_HELDOUT_GRID = {512: (8, 8, 8), 1024: (16, 8, 8)}  # the stencil's task grid
_HELDOUT_PENCIL = {512: (16, 32), 1024: (32, 32)}  # the pencil FFT's p_row x p_col


def _heldout_traffic(pattern: str, n: int):
    """``(traffic, traffic_cfg)`` of a held-out pattern of ``n`` ranks (the config where the traffic has one)."""
    from .. import traffic

    if pattern == "27-point stencil":
        beta = list(_HELDOUT_GRID[n])
        cfg = {"kind": "stencil", "alpha": [48 * beta[0], 40 * beta[1], 32 * beta[2]], "beta": beta,
               "bytes_per_element": 8.0, "periodic": False, "exchange": "all_at_once", "neighbours": "full"}
        return traffic.stencil(cfg["alpha"], beta, 8.0, False, neighbours="full"), cfg
    if pattern == "pencil FFT":
        p_row, p_col = _HELDOUT_PENCIL[n]
        cfg = {"kind": "pencil", "grid": 256, "p_row": p_row, "p_col": p_col, "bytes_per_point": 16.0,
               "xy_planes_on_node": False}
        return traffic.pencil(256, p_row, p_col, 16.0), cfg
    return power_law(n, seed=5), None


def heldout_case(dims, tasks_per_node: int, ranks: int, box, pattern: str, budget: float = 60.0) -> dict:
    """One held-out row: the search (``budget`` seconds, seed 0) against Scotch, KaHIP, METIS and the named
    placements."""
    from ..evaluation import as_routing
    from ..mapping import search_mapping
    from ..mapping import is_embedding, is_tile_layout
    from ..topology import torus

    topo = torus(tuple(dims))
    tr, cfg = _heldout_traffic(pattern, ranks)
    nodes = np.ravel_multi_index(tuple(np.indices(tuple(box)).reshape(len(box), -1)), tuple(dims))
    if not np.array_equal(np.asarray(topo.node_router)[nodes], nodes):
        raise RuntimeError(f"torus {dims}: node ids are not router ids (one node per router, row-major)")
    t0 = time.perf_counter()
    res = search_mapping(topo, tr, "dor", nodes=nodes, tasks_per_node=tasks_per_node, time_budget=budget, seed=0,
                         progress=False, traffic_cfg=cfg)
    wall = time.perf_counter() - t0
    # named: the placements a user could have run (not METIS, the random start or the search's grid embeddings and
    # tile layouts)
    named = {k: v for k, v in res.starts.items() if k != "partition" and not k.startswith("random")
             and not is_embedding(k) and not is_tile_layout(k)}
    best_named = min(named, key=named.get)
    el = np.asarray(res.trace.elapsed)
    label = "x".join(map(str, dims))
    cert = _certificate((tuple(dims), tasks_per_node, ranks, tuple(box), pattern), topo, tr, nodes, tasks_per_node)
    metis = res.starts.get("partition")
    if metis is None:  # METIS found a start already there ("the same mapping as 'linear'"): that start's time
        same = res.skipped.get("partition", "")
        metis = next((v for k, v in res.starts.items() if same.endswith(f"{k!r}")), float("nan"))
    return {"ranks": ranks, "pattern": pattern, "network": f"torus {label}, dor", "tasks_per_node": tasks_per_node,
            "job_nodes": int(nodes.size), "job_box": "x".join(map(str, box)), "budget": budget, "wall_s": wall, "time": res.completion_time,
            "partition": metis, "metis_note": res.skipped.get("partition", ""), "best_named": named[best_named],
            "best_named_name": best_named, "best_start": res.best_start, "moves": int(res.trace.evaluated[-1]),
            "search_s": float(el[-1]),
            "bound": res.lower_bound, "bound_kind": res.bound.describe() if res.bound is not None else "none",
            "starts_s": res.info["starts_seconds"], **cert,
            **_outside(topo, as_routing("dor"), tr, nodes=nodes, tasks_per_node=tasks_per_node)}


def _certificate(case: tuple, topo, tr, nodes, tasks_per_node: int) -> dict:
    """``{"certificate": seconds, "certificate_cmd": command}`` of a row of :data:`HELDOUT_CERTIFICATES` (``{}``
    for the others); a certificate that does not apply to the row as built (the module's own checks) is an error,
    not a silent NaN."""
    mod = HELDOUT_CERTIFICATES.get(case)
    if mod is None:
        return {}
    seconds, why = mod.certified_seconds(topo, tr, nodes, tasks_per_node, "dor")
    if why:
        raise RuntimeError(f"held-out row {case}: the certificate {mod.__name__} does not apply ({why})")
    return {"certificate": seconds, "certificate_cmd": f"python -m {mod.__name__}"}


def heldout(cases=HELDOUT_CASES, budget: float = 60.0) -> list[dict]:
    """The held-out rows of ``cases`` (default every one of :data:`HELDOUT_CASES`)."""
    return [heldout_case(*c, budget=budget) for c in cases]


def w_mapping(args, device, peak_mb, timed) -> dict:
    """The worker: ``device()``, ``peak_mb()`` and ``timed(fn, repeat)`` (median seconds) are the bench's own
    probes, passed in by :mod:`.run`."""
    quick = bool(args.quick)
    return {"rates": _move_rates(quick, timed), "quality": _quality(quick),
            "heldout": [] if quick else heldout(), "peak_mb": peak_mb(), "device": device()}


def w_moves(args, device, peak_mb, timed) -> dict:
    """The worker of the ``moves`` scenario: :func:`w_mapping`'s candidate-move rows alone (the same
    :data:`MOVE_CASES`, moves and timing), without its quality and held-out searches (a full ``mapping`` run
    takes about an hour on 2 cores, these rows a few minutes)."""
    return {"rates": _move_rates(bool(args.quick), timed), "quality": [],
            "heldout": [], "peak_mb": peak_mb(), "device": device()}


def mapping_rows(data: dict, device_label) -> list[dict]:
    dev = device_label(data["device"])
    rates = data.get("rates") or [{**data["rate"], "pattern": "stencil 16x8x8", "network": "DF(4,8,4), minimal"}]
    out = []
    for r in rates:  # older records: one rate, the stencil on the Dragonfly
        out.append({
            "scenario": f"mapping: candidate moves, 1,024 ranks, {r['pattern']} on {r['network']}",
            "points": r["moves"], "seconds": r["seconds"], "points_per_s": r["moves_per_s"],
            "ratio": float("nan"), "ratio_scipy": float("nan"),
            "check": f"vs kernel: {r['check']:.1g}", "peak_mb": data["peak_mb"], "device": dev,
            "note": (f"{r['moves_per_s']:,.0f} task swaps scored per second incrementally ({r['evaluator']}), "
                     f"{r['moves_per_s'] / r['ref_per_s']:.1f}x the "
                     f"{r['ref_per_s']:,.0f} candidate mappings per second evaluated in full by the batched kernel "
                     f"(evaluate_batch, one flow list, {r['ref_points']} points)")})
    for q in data["quality"]:
        gp = 1 - q["time"] / q["partition"]
        gn = 1 - q["time"] / q["best_named"]
        steps = ", ".join(f"{float(b):.0f} s: {v * 1e6:.4g} us" for b, v in q["at"].items())  # JSON keys: text
        kind = q.get("bound_kind", "the busiest task's bytes over its node link")  # older records: that bound
        scotch_m, kahip_m = OUTSIDE_MAPPERS
        vs_scotch, scotch_note = scotch_m.texts(q, "Scotch not run (older record)")
        vs_kahip, kahip_note = kahip_m.texts(q)
        out.append({
            "scenario": f"mapping: {q['ranks']:,} ranks, {q['pattern']}, {q['network']}, {q['budget']:.0f} s budget",
            "points": q["moves"], "seconds": q["search_s"], "points_per_s": q["moves"] / max(q["search_s"], 1e-9),
            "ratio": float("nan"), "ratio_scipy": float("nan"),
            "check": f"-{gp * 100:.1f}% vs METIS, -{gn * 100:.1f}% vs named{vs_scotch}{vs_kahip}",
            "peak_mb": data["peak_mb"],
            "device": dev,
            "note": (f"found {q['time'] * 1e6:.4g} us; METIS partition {q['partition'] * 1e6:.4g} us, best named "
                     f"placement {q['best_named_name']} {q['best_named'] * 1e6:.4g} us; {scotch_note}{kahip_note}"
                     f"no mapping below "
                     f"{q['bound'] * 1e6:.4g} us ({kind}); "
                     f"best after {steps}; starts "
                     f"built and evaluated in {q['starts_s']:.1f} s ({q['evaluator']})")})
    out.extend(_heldout_row(q, data["peak_mb"], dev) for q in data.get("heldout", []))
    return out


def heldout_verdict(q: dict) -> dict:
    """Issue 37's done-when on one held-out row: ``ref`` the best of Scotch, KaHIP (where they ran) and the named
    placements, ``gain`` ``1 - time / ref``, ``bound`` the larger of the search's bound and the row's certificate
    (:data:`HELDOUT_CERTIFICATES`, where it has one), ``room`` whether that bound is at most 0.85 ``ref``,
    ``not_worse`` (time <= Scotch's and KaHIP's where they ran, ``None`` without either) and ``holds`` (not worse,
    and a gain of at least 15% where there is room)."""
    outside = [q[k] for k in ("scotch", "kahip") if k in q]
    refs = [q["best_named"]] + outside
    ref = min(refs)
    gain = 1 - q["time"] / ref
    bound = max((b for b in (q["bound"], q.get("certificate", math.nan)) if np.isfinite(b)), default=math.nan)
    room = bool(np.isfinite(bound) and bound <= 0.85 * ref)
    not_worse = None if not outside else bool(q["time"] <= min(outside) * (1 + 1e-9))
    holds = (not_worse is not False) and (gain >= 0.15 or not room)
    return {"ref": ref, "gain": gain, "bound": bound, "room": room, "not_worse": not_worse, "holds": holds}


def _heldout_row(q: dict, peak_mb, dev) -> dict:
    v = heldout_verdict(q)
    scotch_m, kahip_m = OUTSIDE_MAPPERS
    sc = scotch_m.short(q, "Scotch not run")
    if "kahip" in q or "kahip_absent" in q:
        sc += f"; {kahip_m.short(q, '')}"
    vs = "best of Scotch, KaHIP and named" if "kahip" in q else "best of Scotch and named"
    return {
        "scenario": (f"mapping (held out): {q['ranks']:,} ranks, {q['tasks_per_node']} per node on {q['job_nodes']} "
                     f"nodes ({q.get('job_box', 'the first')}), {q['pattern']}, {q['network']}, {q['budget']:.0f} s budget"),
        "points": q["moves"], "seconds": q["search_s"], "points_per_s": q["moves"] / max(q["search_s"], 1e-9),
        "ratio": float("nan"), "ratio_scipy": float("nan"),
        "check": (f"{-v['gain'] * 100:+.1f}% vs {vs}; done-when "
                  f"{'holds' if v['holds'] else 'fails'}"),
        "peak_mb": peak_mb, "device": dev,
        "note": (f"search {q['time'] * 1e6:.4g} us; {sc}; METIS {q['partition'] * 1e6:.4g} us"
                 f"{' (' + q['metis_note'] + ')' if q.get('metis_note') else ''}; best named "
                 f"{q['best_named_name']} {q['best_named'] * 1e6:.4g} us; bound {q['bound'] * 1e6:.4g} us "
                 f"({q['bound_kind']}"
                 + (f"; certificate {q['certificate'] * 1e6:.4g} us, {q['certificate_cmd']}" if "certificate" in q
                    else "")
                 + f"; {'room' if v['room'] else 'no room'} for 15%); best start {q['best_start']}")}
