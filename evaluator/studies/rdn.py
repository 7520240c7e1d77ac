"""GRAP's allocation modes on a reconfigurable Dragonfly (RDN) against a traditional one (TDN): Feng et al. Sec. 5.2.

For every pattern and job size (groups ``q``), one job is evaluated three ways:

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
  tasks on uniformly random nodes (random mapping), routed ``minimal`` and
  ``valiant``; ``best`` is the faster of the two at each point (the best
  adaptive-routing bound available here: no UGAL/PAR mix, no LP bound).
  Background: every node outside the job sends ``background`` of its injection
  bandwidth uniformly to all the others (:class:`evaluator.jobs.Background`).

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

import numpy as np
import xarray as xr

from .._version import __version__
from ..errors import ConfigError, ResourceError, positive_float, positive_int, require
from ..evaluate import evaluate_batch
from ..jobs import Background, background_rates
from ..placement import Placement
from ..policies import Grap, JobRequest
from ..routing import tago
from ..routing._tago import unconnected_bytes
from ..topology import dragonfly, rdn
from ..traffic import Traffic, neighbouring, stencil
from ..traffic._all_to_all import all_to_all_dense  # not re-exported by evaluator.traffic

__all__ = ["RdnMachine", "PAPER_MACHINE", "PATTERNS", "DEFAULT_GROUPS", "allocation_mode_study", "speedup_table"]

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


def _job(m: RdnMachine, pattern: str, q: int) -> tuple[Traffic, Grap, np.ndarray]:
    """The job's traffic, the GRAP state after allocating it, and its task -> node map (machine numbering)."""
    npg = m.nodes_per_group
    pol = Grap(m.g, npg)
    if pattern == "stencil":
        x, y = _grid2(npg)
        beta = [q, x, y]                               # task (z, x, y): plane z is one group
        tr = stencil([4 * b for b in beta], beta, 256.0)
        alloc = pol.allocate(JobRequest(0, q * npg, "minimal_balance"))
        assert alloc is not None and len(alloc.groups) == q
        base = np.asarray(alloc.groups, dtype=np.int64) * npg   # plane z -> the z-th group, tiled over its routers
        order = (base[:, None] + _tiled_order(x, y, m.p, m.a)[None, :]).reshape(-1)
        return tr, pol, order
    if pattern == "neighbouring":
        small = max(1, (3 * npg) // 4)
        req = tuple(npg if i % 2 == 0 else small for i in range(q))
        alloc = pol.allocate(JobRequest(0, sum(req), "custom", req))
        assert alloc is not None and len(alloc.groups) == q
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
        assert alloc is not None and len(alloc.groups) == q
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
    ts, td, w = (tr.src, tr.dst, tr.nbytes) if isinstance(tr, Traffic) else (None, None, None)
    if pattern == "all_to_all":
        topo = rdn(m.p, m.a, m.h, q, ports_per_switch=m.ports_per_switch, configuration="jobs",
                   jobs=[list(range(q))], bandwidth_p=m.bandwidth, bandwidth_l=m.bandwidth, bandwidth_r=m.bandwidth)
    else:
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
        assert lost == 0.0, f"the configuration leaves {lost} bytes of the job unconnected"
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


def _tdn_point(m: RdnMachine, tdn, tr, n_tasks: int, fraction: float, seed: int) -> dict:
    """TDN: the job on random nodes of the whole machine, minimal and valiant, with and without background."""
    rng = np.random.default_rng(seed)
    nodes = np.sort(rng.choice(tdn.n_nodes, size=n_tasks, replace=False))
    order = rng.permutation(n_tasks)
    pl = Placement(nodes[order].astype(np.int64), tdn.n_nodes, f"random(seed={seed})")
    cap = np.asarray(tdn.capacity)
    others = np.setdiff1d(np.arange(tdn.n_nodes), nodes)
    out = {}
    for rt in ("minimal", "valiant"):
        if rt == "valiant" and m.g < 3:
            continue                                   # Valiant needs a third group: NaN, the best is minimal
        res = evaluate_batch(tdn, rt, [tr], [pl], keep_link_load=True, chunk_size=1)
        load = np.asarray(res.link_load[0], dtype=np.float64)
        out[f"tdn_{rt}_time"] = _time(load, cap, np.zeros_like(cap))
        out[f"tdn_{rt}_hops"] = float(res.metrics["mean_hops"][0])
        bg = background_rates(tdn, Background(fraction, "uniform"), others, rt) if fraction > 0 else np.zeros_like(cap)
        out[f"tdn_{rt}_time_bg"] = _time(load, cap, bg)
        nr = tdn.n_router_links
        out[f"tdn_{rt}_net_time_bg"] = _time(load[:nr], cap[:nr], bg[:nr])
    return out


INTRA = ("minimal", "valiant")
"""RDN routings inside groups (TAGO between groups): the paper runs adaptive routing there; these bound it."""

VARIABLES = tuple(f"{net}_{rt}_{v}" for net in ("rdn", "tdn") for rt in ("minimal", "valiant")
                  for v in ("time", "time_bg", "net_time_bg", "hops"))


def allocation_mode_study(machine: RdnMachine = PAPER_MACHINE, groups: Sequence[int] = DEFAULT_GROUPS,
                          patterns: Sequence[str] = tuple(PATTERNS), background: float = 0.26,
                          seed: int = 0, progress=None) -> xr.Dataset:
    """The paper's Fig. 4 study on ``machine``: dataset with dims ``(pattern, groups)``.

    Variables (times in s per exchange of the pattern; hops: router-to-router
    links per byte that leaves its node), per network ``rdn`` / ``tdn`` and
    routing ``minimal`` / ``valiant`` (on the RDN: inside groups, TAGO between
    them): ``{net}_{routing}_time`` (no background), ``..._time_bg``,
    ``..._net_time_bg`` (router links only), ``..._hops``; per network the
    best routing at each point: ``{net}_time``, ``{net}_time_bg``,
    ``{net}_net_time_bg`` and ``{net}_hops`` (hops of the routing that is
    fastest with background); ``speedup`` = ``tdn_time_bg / rdn_time_bg``,
    the *ratio* (1: no change; 1.32 is the paper's "32% speedup"; the
    project's one convention for a variable named ``speedup``, the one
    :class:`evaluator.workload.SpeedupTable` reads) against the paper's
    baseline, the TDN with noise; ``speedup_no_bg`` (the ratio without
    background), ``time_saved`` = ``1 - rdn_time_bg / tdn_time_bg`` (the
    fraction of communication time RDN-GRAP removes, ``1 - 1 / speedup``),
    ``network_speedup`` (the same ratio on router-to-router links only,
    ``*_net_time_bg``: how much less congested the network is, endpoints aside), ``hops_reduction`` =
    ``1 - rdn_hops / tdn_hops`` (``hops_reduction_minimal``: both minimal); ``seconds`` (wall time per point) and
    ``refused`` (the ResourceError message, '' when it ran). Coordinate
    ``mode``: the GRAP mode of each pattern.
    """
    require(isinstance(machine, RdnMachine), "machine", machine, "an evaluator.studies.rdn.RdnMachine")
    for name in patterns:
        require(name in PATTERNS, "patterns", name, " | ".join(PATTERNS))
    fraction = positive_float("background", background, allow_zero=True)
    require(fraction < 1, "background", background, "a fraction in [0, 1)")
    sizes = sorted({positive_int("groups", q, minimum=2) for q in groups if q <= machine.g} | {machine.g})
    pats = list(patterns)
    data = {v: np.full((len(pats), len(sizes)), np.nan) for v in VARIABLES}
    secs = np.zeros((len(pats), len(sizes)))
    refused = np.full((len(pats), len(sizes)), "", dtype=object)
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
                    vals.update(_tdn_point(machine, tdn, tr, nodes.size, fraction, seed + 1000 * i + j))
                for k, v in vals.items():
                    data[k][i, j] = v
            except ResourceError as e:
                refused[i, j] = (refused[i, j] + "; " if refused[i, j] else "") + str(e)
            secs[i, j] = time.perf_counter() - t0
            if progress is not None:
                progress(pat, q, secs[i, j])
    derived = {}
    for net in ("rdn", "tdn"):
        mn, va = data[f"{net}_minimal_time_bg"], data[f"{net}_valiant_time_bg"]
        use_val = va < mn
        derived[f"{net}_time_bg"] = np.where(use_val, va, mn)
        derived[f"{net}_time"] = np.fmin(data[f"{net}_minimal_time"], data[f"{net}_valiant_time"])
        derived[f"{net}_net_time_bg"] = np.fmin(data[f"{net}_minimal_net_time_bg"], data[f"{net}_valiant_net_time_bg"])
        derived[f"{net}_hops"] = np.where(use_val, data[f"{net}_valiant_hops"], data[f"{net}_minimal_hops"])
    with np.errstate(divide="ignore", invalid="ignore"):
        derived.update({
            "speedup": derived["tdn_time_bg"] / derived["rdn_time_bg"],
            "speedup_no_bg": derived["tdn_time"] / derived["rdn_time"],
            "network_speedup": derived["tdn_net_time_bg"] / derived["rdn_net_time_bg"],
            "time_saved": 1.0 - derived["rdn_time_bg"] / derived["tdn_time_bg"],
            "hops_reduction": 1.0 - derived["rdn_hops"] / derived["tdn_hops"],
            "hops_reduction_minimal": 1.0 - data["rdn_minimal_hops"] / data["tdn_minimal_hops"],
        })
    units = {"hops": "1", "time": "s"}
    dims = ("pattern", "groups")
    ds = xr.Dataset(
        {k: (dims, v, {"units": units["hops"] if "hops" in k else units["time"]}) for k, v in data.items()}
        | {k: (dims, v, {"units": "s" if "time" in k else "1"}) for k, v in derived.items()}
        | {"seconds": (dims, secs, {"units": "s", "long_name": "wall time of the point"}),
           "refused": (dims, refused.astype(str), {"long_name": "why the evaluator refused the point ('' ran)"})},
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
                     "evaluator_version": __version__})
    return ds


def speedup_table(machine: RdnMachine = PAPER_MACHINE, groups: Sequence[int] = DEFAULT_GROUPS,
                  background: float = 0.26, seed: int = 0, study: xr.Dataset | None = None) -> xr.Dataset:
    """Speedup of RDN-GRAP over the TDN per GRAP mode and job size: dims ``(mode, groups)``.

    ``mode``: the four GRAP modes; ``minimal_balance`` and ``custom_balance``
    take the stencil's numbers, ``custom`` the neighbouring pattern's,
    ``adaptive`` the all-to-all's. Variables: ``speedup`` (the ratio ``T_TDN /
    T_RDN`` with background, 1: no change; what
    :class:`evaluator.workload.SpeedupTable` reads: the workload's
    ``speedup_rule`` ``time_ratio`` makes a job's MPI time ``MPI_Time /
    speedup``, ``excess`` saves ``speedup - 1`` of it, the paper's ``Acc_Time
    = Job_Time - MPI_Time x Speedup(Mode, Job_Size)`` read with "32% speedup"
    as 0.32), ``time_saved`` (``1 - T_RDN / T_TDN = 1 - 1 / speedup``, the
    fraction of communication time removed), ``speedup_no_bg`` (the ratio
    without background). ``groups`` is the job size in groups (job nodes =
    groups x nodes per group used; the workload simulation interpolates
    between them). Points the evaluator refused are NaN. ``study``: a dataset
    from :func:`allocation_mode_study` to reuse (else it is computed).
    """
    ds = study if study is not None else allocation_mode_study(machine, groups, tuple(PATTERNS), background, seed)
    of_mode = {"minimal_balance": "stencil", "custom_balance": "stencil", "custom": "neighbouring",
               "adaptive": "all_to_all"}
    modes = [mo for mo, pat in of_mode.items() if pat in ds.pattern.values]
    pats = [of_mode[mo] for mo in modes]
    out = xr.Dataset(
        {v: (("mode", "groups"), ds[v].sel(pattern=pats).values, dict(ds[v].attrs))
         for v in ("speedup", "time_saved", "speedup_no_bg")},
        coords={"mode": modes, "groups": ds.groups.values, "pattern": ("mode", pats)})
    out.attrs.update(ds.attrs)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m evaluator.studies rdn [--machine p,a,h,g] [--groups 2,4,...] [--background f] [--out f.nc]
    [--speedup-out speedup.nc]``: run :func:`allocation_mode_study` (default: the paper's machine), print the
    speedups (ratios T_TDN / T_RDN) and hops, write the study (``--out``) and/or the workload simulation's
    speedup table (``--speedup-out``, :func:`speedup_table`, dims ``(mode, groups)``) as netCDF."""
    import argparse
    from pathlib import Path

    from ..io import write_netcdf

    ap = argparse.ArgumentParser(prog="python -m evaluator.studies rdn", description=main.__doc__)
    ap.add_argument("--machine", default="12,24,12,288", help="p,a,h,g (default: the paper's 12,24,12,288)")
    ap.add_argument("--groups", default=",".join(map(str, DEFAULT_GROUPS)), help="job sizes in groups")
    ap.add_argument("--background", type=float, default=0.26)
    ap.add_argument("--bandwidth", type=float, default=12.0e9, help="bytes/s per direction, every link")
    ap.add_argument("--out", default=None, help="netCDF file for the dataset")
    ap.add_argument("--speedup-out", default=None, metavar="NC",
                    help="netCDF file for the speedup table (mode x groups) that `evaluator schedule --speedups` "
                         "and sweeps/workload/grap_vs_slurm.yaml read (e.g. results/rdn/speedup.nc)")
    args = ap.parse_args(argv)
    try:
        p, a, h, g = (int(x) for x in args.machine.split(","))
        groups = [int(x) for x in args.groups.split(",")]
    except ValueError:
        raise ConfigError("--machine/--groups", f"{args.machine} / {args.groups}", "comma-separated integers")
    m = RdnMachine(p, a, h, g, bandwidth=args.bandwidth)
    t0 = time.perf_counter()
    ds = allocation_mode_study(m, groups, background=args.background,
                               progress=lambda pat, q, s: print(f"{pat:>13} {q:>4} groups  {s:7.1f} s", flush=True))
    ds.attrs["total_seconds"] = time.perf_counter() - t0
    cols = ["speedup", "speedup_no_bg", "network_speedup", "rdn_hops", "tdn_hops", "hops_reduction",
            "hops_reduction_minimal"]
    print(ds[cols].to_dataframe().round(3).to_string())
    print(f"total {ds.attrs['total_seconds']:.1f} s")
    if args.out:
        write_netcdf(ds, args.out)
    if args.speedup_out:
        Path(args.speedup_out).parent.mkdir(parents=True, exist_ok=True)
        write_netcdf(speedup_table(study=ds), args.speedup_out)
        print(f"speedup table -> {args.speedup_out}")
    return 0
