"""The buyer's study: for the same money (or the same power), which network runs my workloads fastest?

At each size ``N`` (nodes) three networks are built with the project's constructors and priced with
:mod:`evaluator.cost` (``network_cost``; docs/cost.md):

* the **Dragonfly** is the reference: balanced, ``a = 2p = 2h``, the smallest ``p`` whose ``g = ceil(N / (a p))``
  groups fit (``g <= a h + 1``). Its cost (or power, ``equal="power"``) is the **budget** ``B``;
* the **fat tree** is a 3-level XGFT whose ``children`` are the most cubic factors of ``N``
  (``[8, 8, 8]`` at 512: the 8-ary 3-tree), **tapered** to meet the budget: ``parents = [1, w, w]`` with
  ``w = max(1, round(t m_i))`` for the taper ``t`` in ``1/m_1 .. 1`` whose cost is nearest ``B``;
* the **3-D torus** meets the budget with its **nodes per router** ``c`` (a divisor of ``N``; the ``N / c`` routers
  as cubic as possible): more nodes per router, fewer routers and cables.

The cost model prices parts (switches, ports, cables, transceivers, NICs), not bandwidth, so the link speed
cannot be the equaliser: every link is the same product (``link_bandwidth``, default 25e9 bytes/s per
direction, 200 Gb/s: InfiniBand HDR, Slingshot; :func:`evaluator.cost.link_product` must name it). The
structure (taper, nodes per router) is chosen so that ``|cost / B - 1| <= tolerance`` (default 0.1); the achieved
costs are in the dataset and printed. A network that cannot get within the tolerance is kept, flagged
(``within_tolerance`` false) and printed as such.

Every network is evaluated with its deployed routings (fat tree: ``dmodk``, hashed ``ecmp``, ``ft_adaptive``;
Dragonfly: ``minimal``, ``valiant``, ``ugal``; torus: ``dor``, ``torus_adaptive``) on six workloads of ``N``
tasks, one per node, linear placement: ``all_to_all`` (32 MB sent per task), ``halo3d`` (a periodic 3-D stencil,
31 x 31 elements of 1,024 bytes, 0.984 MB, per face: the nearest to 1 MB), ``permutation`` (a random
permutation, 32 MB per task), ``fft_pencil`` (the two transposes of a 3-D FFT on a pencil grid), ``allreduce_8B``
(recursive-doubling allreduce of 8 bytes, timed with the latency model: :data:`LATENCY`) and ``mix`` (a mix of
jobs, :data:`MIX`: a halo on half the machine, an FFT and a permutation on a quarter each, their flows at once:
:func:`mix_of_jobs`). Seed ``s`` is permutation seed ``s``
(the mix's permutation too) and ECMP hash seed ``s``; every other point is the same at every seed (evaluated
once). A point the evaluator refuses (adaptive routings on dense traffic above
2^20 endpoint pairs or under the latency model, memory) is NaN with the reason in ``refused``.
"""

from __future__ import annotations

import hashlib
import math
import re
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import xarray as xr

from .._signals import raise_if_signalled
from ..evaluation import MAX_DRAWS, check_draws
from .._version import __version__
from ..cost import link_product, network_cost
from ..display import progress_bar
from ..errors import NOT_COMPUTED, ConfigError, WordedError, with_partial
from ..latency import Latency
from ..placement import linear
from ..routing import ecmp
from ..topology import dragonfly, fat_tree, torus
from ..traffic import all_to_all_dense, collective, from_flows, pencil, random_permutation, stencil

__all__ = ["NETWORKS", "ROUTINGS", "WORKLOADS", "LATENCY", "DEFAULT_SIZES", "DEFAULT_SEEDS", "DEFAULT_TOLERANCE",
           "DEFAULT_LINK", "balanced_dragonfly", "fat_tree_candidates", "torus_candidates", "equal_networks",
           "build_workload", "mix_of_jobs", "evaluate_point", "buyer_study", "best_table", "format_study", "plot_study", "main"]

NETWORKS = ("fat_tree", "dragonfly", "torus")
ROUTINGS = {"fat_tree": ("dmodk", "ecmp", "ft_adaptive"), "dragonfly": ("minimal", "valiant", "ugal"),
            "torus": ("dor", "torus_adaptive")}
"""Network family -> its deployed routings (kinds of :mod:`evaluator.routing`)."""
ALL_ROUTINGS = tuple(r for n in NETWORKS for r in ROUTINGS[n])
WORKLOADS = ("all_to_all", "halo3d", "permutation", "fft_pencil", "allreduce_8B", "mix")
SEEDED = ("permutation", "mix")
MIX = (("halo3d", 2), ("fft_pencil", 4), ("permutation", 4))
"""The mix of jobs: ``(workload, d)``, a job of ``N / d`` tasks each, placed one after another (linear, the
first job on the first nodes)."""
DEFAULT_SIZES = (512, 4096)
DEFAULT_SEEDS = 4
DEFAULT_TOLERANCE = 0.1
DEFAULT_LINK = 25.0e9
LATENCY = Latency(send_overhead=0.255e-6, recv_overhead=0.255e-6, router=90e-9)
"""One latency model for every network (the same product class): 0.51 us of end-to-end overheads split evenly and
90 ns per switch crossed, HDR InfiniBand's figures as conf/machine/frontera.yaml cites them; no wire time."""
BYTES_PER_TASK = 32.0e6
FACE_BYTES = 1.0e6
TIE_RTOL = 1e-9


# ------------------------------------------------------------------------------------------- networks
def _cubic(n: int, k: int = 3) -> list[int]:
    """``k`` factors of ``n`` as equal as possible, largest first (``_cubic(512) = [8, 8, 8]``)."""
    best = None
    for a in range(1, n + 1):
        if n % a:
            continue
        if k == 2:
            f = sorted((a, n // a), reverse=True)
        else:
            if a ** 3 > n * 8 and a > n:
                break
            rest = _cubic(n // a, 2)
            f = sorted([a, *rest], reverse=True)
        key = (f[0] / f[-1], f)
        if best is None or key < best[0]:
            best = (key, f)
    return best[1]


MAX_NODES = 200_000
"""The largest machine ``--nodes`` may ask for (Fugaku's 158,976 nodes fit; the candidates of 200,000 nodes take
3.7 s and 2.7 GB to build, those of 10^6 more than 17 GB; 10^16 spun in the Dragonfly's search of its ``p``)."""


def _check_sizes(given: str) -> list[int]:
    """The sizes of ``--nodes``; refused when not in [16, :data:`MAX_NODES`], given twice or where a family cannot
    be built (a prime has no 3-level fat tree; 33 = 11 x 3 x 1 leaves a level of one switch), before anything is
    computed."""
    sizes = _ints("--nodes", given, f"comma-separated integers in [16, {MAX_NODES:,}] (nodes), e.g. 512,4096",
                  lambda v: 16 <= v <= MAX_NODES)
    return _check_size_list("--nodes", given, sizes)


def _check_size_list(field: str, given, sizes: list[int]) -> list[int]:
    """``sizes`` (at least one, each in [16, :data:`MAX_NODES`], none twice, every family buildable), else one
    :class:`ConfigError` naming ``field`` and ``given``."""
    if not sizes or not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) and 16 <= v <= MAX_NODES
                            for v in sizes):
        raise ConfigError(field, given, f"one or more integers in [16, {MAX_NODES:,}] (nodes), e.g. 512,4096")
    sizes = [int(v) for v in sizes]
    dup = sorted({n for n in sizes if sizes.count(n) > 1})
    if dup:
        raise ConfigError(field, given, "distinct sizes", f"{', '.join(map(str, dup))} given twice.")
    for n in sizes:
        for fam, build in (("Dragonfly", lambda: [balanced_dragonfly(n)]), ("fat tree", lambda: fat_tree_candidates(n)),
                           ("torus", lambda: torus_candidates(n))):
            try:
                ok, why = bool(build()), "none of its shapes applies"
            except (ConfigError, ValueError) as exc:
                ok, why = False, str(exc)
            if not ok:
                raise ConfigError(field, given, "sizes at which every family (Dragonfly, 3-level fat tree, 3-D "
                                                    "torus) can be built", f"At {n} nodes no {fam}: {why}")
    return sizes


def balanced_dragonfly(n: int, link: float = DEFAULT_LINK):
    """The balanced Dragonfly ``DF(p, 2p, p, g)`` with the fewest nodes ``>= n`` (``n`` itself where some ``2p^2``
    divides it; the smallest such ``p``), ``g = ceil(n / (2 p^2))`` groups, ``2 <= g <= 2p^2 + 1``."""
    best = None
    for p in range(1, int(math.isqrt(n)) + 2):
        a, h = 2 * p, p
        g = max(2, -(-n // (a * p)))
        if g <= a * h + 1 and (best is None or g * a * p < best[0]):
            best = (g * a * p, p, g)
    _, p, g = best
    return dragonfly(p, 2 * p, p, g, bandwidth_p=link, bandwidth_l=link, bandwidth_r=link)


def fat_tree_candidates(n: int, link: float = DEFAULT_LINK):
    """3-level XGFTs of ``n`` nodes (``children``: the most cubic factors of ``n``, hosts per leaf first), tapered
    ``parents = [1, w_2, w_3]``, ``w_i = max(1, round(t m_{i-1}))``, one per taper ``t = j / m_1``; untapered first."""
    m = _cubic(n)
    out, seen = [], set()
    for j in range(m[0], 0, -1):
        t = j / m[0]
        w = [1, max(1, round(t * m[0])), max(1, round(t * m[1]))]
        if tuple(w) in seen or (m[1] == 1 and m[2] == 1):
            continue
        seen.add(tuple(w))
        out.append(fat_tree(m, w, link_bandwidth=link, injection_bandwidth=link))
    return out


def torus_candidates(n: int, link: float = DEFAULT_LINK, max_per_router: int = 64):
    """3-D tori of ``n`` nodes: ``c`` nodes per router (every divisor of ``n`` up to ``max_per_router`` leaving at
    least 8 routers), the ``n / c`` routers as cubic as possible."""
    out = []
    for c in range(1, max_per_router + 1):
        if n % c or n // c < 8:
            continue
        out.append(torus(_cubic(n // c), link_bandwidth=link, nodes_per_router=c, injection_bandwidth=link))
    return out


def _measure(t, equal: str) -> float:
    nc = network_cost(t)
    return float(nc.cost if equal == "cost" else nc.power)


def _check_measure(equal: str, tolerance: float, link: float) -> None:
    """``equal`` is ``"cost"`` or ``"power"``, ``tolerance`` in (0, 1), ``link`` a finite bytes/s > 0."""
    if equal not in ("cost", "power"):
        raise ConfigError("equal", equal, "cost or power (what the three networks share)")
    if not (isinstance(tolerance, (int, float, np.floating)) and 0 < tolerance < 1):
        raise ConfigError("tolerance", tolerance, "a number in (0, 1), e.g. 0.1")
    if not (isinstance(link, (int, float, np.floating)) and math.isfinite(link) and link > 0):
        raise ConfigError("link", link, "a finite number of bytes/s > 0 per direction, e.g. 25e9 (200 Gb/s)")


def equal_networks(n: int, equal: str = "cost", tolerance: float = DEFAULT_TOLERANCE,
                   link: float = DEFAULT_LINK) -> dict:
    """The three networks of about ``n`` nodes at equal ``equal`` (``"cost"`` or ``"power"``): the balanced
    Dragonfly sets the budget; the fat tree's taper and the torus's nodes per router are those nearest it.
    Returns ``{family: (topology, measure, within_tolerance)}`` and ``"budget"``."""
    _check_measure(equal, tolerance, link)
    ref = balanced_dragonfly(n, link)
    budget = _measure(ref, equal)
    out = {"budget": budget, "dragonfly": (ref, budget, True)}
    for fam, cands in (("fat_tree", fat_tree_candidates(n, link)), ("torus", torus_candidates(n, link))):
        scored = [(abs(_measure(t, equal) / budget - 1.0), i, t) for i, t in enumerate(cands)]
        dev, _, t = min(scored, key=lambda x: x[:2])
        out[fam] = (t, _measure(t, equal), bool(dev <= tolerance))
    return out


# ------------------------------------------------------------------------------------------- workloads
def build_workload(name: str, n: int, seed: int = 0):
    """Workload ``name`` over ``n`` tasks (seed: the permutation's)."""
    if name == "all_to_all":
        return all_to_all_dense(n, BYTES_PER_TASK / n)
    if name == "halo3d":
        beta = _cubic(n)
        side = int(round(math.sqrt(FACE_BYTES / 1024.0)))    # 31 x 31 elements of 1,024 bytes: 984,064 bytes a face
        return stencil([side * b for b in beta], beta, bytes_per_element=1024.0)
    if name == "permutation":
        return random_permutation(n, BYTES_PER_TASK, seed=seed)
    if name == "fft_pencil":
        pr, pc = sorted(_cubic(n, 2))
        return pencil(16 * pc, pr, pc)
    if name == "allreduce_8B":
        return collective("allreduce", "recursive_doubling", n_tasks=n, nbytes=8.0)
    if name == "mix":
        return mix_of_jobs(n, seed)
    raise ConfigError("workload", name, f"one of {', '.join(WORKLOADS)}")


def mix_of_jobs(n: int, seed: int = 0):
    """The jobs of :data:`MIX` on ``n`` tasks (``4 | n``), one after another, as one exchange: every flow of every
    job (the FFT's two transposes included) at once. Its time is the busiest link's bytes from all the jobs over
    its capacity: a lower bound on when the last job finishes, whatever the order of each job's phases."""
    if n % 4:
        raise ConfigError("--nodes", n, "a multiple of 4 for the mix of jobs (halo3d on N/2, fft_pencil and "
                                        "permutation on N/4 each)")
    src, dst, nb, off = [], [], [], 0
    for name, d in MIX:
        job = build_workload(name, n // d, seed)
        for t in getattr(job, "phases", (job,)):
            f = t.to_flows()
            src.append(np.asarray(f.src) + off)
            dst.append(np.asarray(f.dst) + off)
            nb.append(np.asarray(f.nbytes, np.float64))
        off += n // d
    return from_flows(n, np.concatenate(src), np.concatenate(dst), np.concatenate(nb), name="mix")


def _routing(name: str, seed: int):
    return ecmp(int(seed)) if name == "ecmp" else name


def evaluate_point(topology, workload: str, routing: str, n_tasks: int, seed: int = 0) -> tuple[float, float, str]:
    """``(time s, throughput bytes/s, refused reason or "")`` of one point: :func:`evaluator.evaluate` of the
    workload on the first ``n_tasks`` nodes (linear placement); ``allreduce_8B`` on ``topology`` with
    :data:`LATENCY`, timed by ``time_with_latency``; a refusal (ConfigError, ResourceError) is NaN with its reason."""
    from ..evaluation import evaluate

    tr = build_workload(workload, n_tasks, seed)
    topo = topology.with_latency(LATENCY) if workload == "allreduce_8B" else topology
    try:
        ds = evaluate(topo, tr, linear(topo, n_tasks), _routing(routing, seed))
    except (ConfigError, MemoryError) as exc:
        return math.nan, math.nan, " ".join(str(exc).split())[:300]
    t = float(ds["time_with_latency"]) if workload == "allreduce_8B" else float(ds["completion_time"])
    total = float(ds["total_bytes"])
    return t, (total / t if t > 0 else math.inf if total > 0 else math.nan), ""   # no byte in no time: NaN


# ------------------------------------------------------------------------------------------- the study
def _evaluate_draws(tm, thr, refused, at: tuple, topo, fam: str, wname: str, rname: str, n: int, K: int, memo,
                    pbar) -> None:
    """One (size, network, routing, workload) of :func:`buyer_study`: its ``K`` draws (one where nothing in it is
    random) into ``tm`` and ``thr`` at ``at``, the first refusal's reason into ``refused``; ``memo`` as there."""
    draws = K if (wname in SEEDED or rname == "ecmp") else 1
    pbar.set_postfix_str(f"{n} nodes {fam}/{rname} {wname}", refresh=False)
    for s in range(draws):
        key = (_topology_key(topo), wname, rname, n, s)
        if memo is None or key not in memo:
            res = evaluate_point(topo, wname, rname, n, s)
            if memo is not None:
                memo[key] = res
        tm[at + (s,)], thr[at + (s,)], why = res if memo is None else memo[key]
        if why:
            refused[at] = why
            pbar.update(draws - s)
            break
        pbar.update(1)
    if draws == 1:
        tm[at], thr[at] = tm[at + (0,)], thr[at + (0,)]


def _topology_key(topo) -> tuple[str, str]:
    """The network's name and a digest of its links (ends and capacities): equal keys, the same network."""
    h = hashlib.sha1()
    for a in (topo.link_src, topo.link_dst, topo.capacity, topo.node_router):
        h.update(np.ascontiguousarray(np.asarray(a)).tobytes())
    return str(topo.name), h.hexdigest()


def buyer_study(sizes: Sequence[int] = DEFAULT_SIZES, n_seeds: int = DEFAULT_SEEDS, equal: str = "cost",
                tolerance: float = DEFAULT_TOLERANCE, link: float = DEFAULT_LINK,
                workloads: Sequence[str] = WORKLOADS,
                progress: Callable[[int, str, float], None] | None = None, bar: bool = False,
                memo: dict | None = None) -> xr.Dataset:
    """The study's dataset: ``time[size, network, routing, workload, seed]`` (s, NaN where refused or where the
    routing is not the network's), ``refused`` (the reason), ``time_mean/_std/_min/_max/_p95`` over seeds,
    ``throughput_per_cost`` (bytes/s per currency unit: the mean over seeds of each seed's bytes over its time), and
    per ``size, network``: ``cost``, ``power``, ``nodes``, ``topology`` (its name), ``within_tolerance``.

    ``memo`` (optional, a dict the caller keeps): points already evaluated, by topology, workload, routing, size
    and seed; a second study with the same memo (``--equal cost,power``) evaluates only the networks the first did
    not build (the same network at equal cost and at equal power is evaluated once).

    A Ctrl-C (KeyboardInterrupt; ``evaluator study`` turns SIGTERM into one) stops the study at once and is raised
    again carrying ``.partial``: this dataset with what finished (the rest NaN, ``refused`` saying
    :data:`~evaluator.errors.NOT_COMPUTED`, the attribute ``interrupted`` saying how much), which ``evaluator study
    buyer`` writes (:func:`~evaluator.errors.with_partial`)."""
    given = sizes
    sizes = _check_size_list("sizes", given, list(sizes))
    sizes, workloads = _check_buildable("sizes", given, sizes, _check_workloads("workloads", workloads))
    K = check_draws("n_seeds", n_seeds, "permutation and ECMP hash seeds per point")
    _check_measure(equal, tolerance, link)
    if "mix" in workloads and any(n % 4 for n in sizes):
        raise ConfigError("sizes", given, "sizes that are multiples of 4 with the workload mix (a job on N/2 nodes "
                                          "and two on N/4)")
    S, Nw, R, W = len(sizes), len(NETWORKS), len(ALL_ROUTINGS), len(workloads)
    tm = np.full((S, Nw, R, W, K), np.nan)
    thr = np.full((S, Nw, R, W, K), np.nan)
    refused = np.full((S, Nw, R, W), "", dtype=object)
    cost, power, nodes, within = (np.full((S, Nw), np.nan), np.full((S, Nw), np.nan), np.zeros((S, Nw), int),
                                  np.zeros((S, Nw), bool))
    names = np.full((S, Nw), "", dtype=object)
    budgets = np.full(S, np.nan)
    done = np.zeros((S, Nw, R, W), bool)  # (size, network, routing, workload) finished, every seed
    for j, fam in enumerate(NETWORKS):
        for r, rname in enumerate(ALL_ROUTINGS):
            if rname not in ROUTINGS[fam]:
                refused[:, j, r, :], done[:, j, r, :] = "not a routing of this network", True
    to_do = ~done
    per_size = sum(sum(K if (w in SEEDED or r == "ecmp") else 1 for w in workloads) for fam in NETWORKS
                   for r in ROUTINGS[fam])
    pbar = progress_bar(total=per_size * S, enabled=bar, unit="point", desc="buyer", dynamic_ncols=True)
    stopped = None
    try:
        for i, n in enumerate(sizes):
            t0 = time.perf_counter()
            nets = equal_networks(n, equal, tolerance, link)
            budgets[i] = nets["budget"]
            for j, fam in enumerate(NETWORKS):
                topo, _, ok = nets[fam]
                nc = network_cost(topo)
                cost[i, j], power[i, j], nodes[i, j], within[i, j], names[i, j] = nc.cost, nc.power, topo.n_nodes, \
                    ok, topo.name
                for r, rname in enumerate(ALL_ROUTINGS):
                    if rname not in ROUTINGS[fam]:
                        continue
                    for w, wname in enumerate(workloads):
                        raise_if_signalled()  # a Ctrl-C or SIGTERM whose exception a gc callback swallowed
                        _evaluate_draws(tm, thr, refused, (i, j, r, w), topo, fam, wname, rname, n, K, memo, pbar)
                        done[i, j, r, w] = True
            if progress is not None:
                progress(n, equal, time.perf_counter() - t0)
    except KeyboardInterrupt as exc:  # what finished is kept; the rest is marked
        stopped = exc
        tm[~done], thr[~done], refused[~done] = np.nan, np.nan, NOT_COMPUTED
    finally:
        pbar.close()
    dims5 = ("size", "network", "routing", "workload", "seed")
    ds = xr.Dataset(
        {"time": (dims5, tm, {"units": "s", "long_name": "completion time (bandwidth bound; allreduce_8B: "
                                                          "time_with_latency)"}),
         "throughput": (dims5, thr, {"units": "bytes/s"}),
         "refused": (dims5[:4], refused.astype(str)),
         "cost": (("size", "network"), cost, {"units": "relative"}),
         "power": (("size", "network"), power, {"units": "W"}),
         "nodes": (("size", "network"), nodes),
         "topology": (("size", "network"), names.astype(str)),
         "within_tolerance": (("size", "network"), within),
         "budget": (("size",), budgets, {"units": "relative" if equal == "cost" else "W"})},
        coords={"size": sizes, "network": list(NETWORKS), "routing": list(ALL_ROUTINGS), "workload": workloads,
                "seed": np.arange(K)})
    with np.errstate(all="ignore"):
        ds["time_mean"] = ds["time"].mean("seed", skipna=False)
        ds["time_std"] = ds["time"].std("seed", skipna=False)
        ds["time_min"] = ds["time"].min("seed", skipna=False)
        ds["time_max"] = ds["time"].max("seed", skipna=False)
        ds["time_p95"] = ds["time"].quantile(0.95, "seed", skipna=False).drop_vars("quantile")
        ds["throughput_per_cost"] = ds["throughput"].mean("seed", skipna=False) / ds["cost"]
    ds["throughput_per_cost"].attrs = {"units": "bytes/s per relative", "long_name": "mean throughput / cost"}
    ds.attrs.update({"study": "buyer", "equal": equal, "tolerance": tolerance, "link_bandwidth": link,
                     "link_product": str(link_product(link)), "evaluator_version": __version__,
                     "latency": repr(LATENCY),
                     "routings": "; ".join(f"{k}: {', '.join(v)}" for k, v in ROUTINGS.items())})
    if stopped is not None:
        finished, total = int((done & to_do).sum()), int(to_do.sum())
        if not finished:
            raise stopped
        ds.attrs["interrupted"] = (f"{finished} of {total} (size, network, routing, workload) finished, every seed; "
                                   f"the other {total - finished} NaN, refused '{NOT_COMPUTED}'")
        raise with_partial(stopped, ds)
    return ds


def best_table(ds: xr.Dataset) -> list[dict]:
    """Per size, network and workload: the best routing(s) by mean time (ties within 1e-9 relative, all listed);
    none where an interruption left a routing not computed (``not_computed``: the best of the others is not the
    best)."""
    rows = []
    for n in ds["size"].values:
        for fam in NETWORKS:
            for wl in ds["workload"].values:
                if any(str(ds["refused"].sel(size=n, network=fam, routing=r, workload=wl).values) == NOT_COMPUTED
                       for r in ROUTINGS[fam]):
                    rows.append({"size": int(n), "network": fam, "workload": str(wl), "best": (), "time": math.nan,
                                 "not_computed": True})
                    continue
                t = {r: float(ds["time_mean"].sel(size=n, network=fam, routing=r, workload=wl)) for r in ROUTINGS[fam]}
                ok = {r: v for r, v in t.items() if math.isfinite(v)}
                if not ok:
                    rows.append({"size": int(n), "network": fam, "workload": str(wl), "best": (), "time": math.nan})
                    continue
                lo = min(ok.values())
                best = tuple(r for r, v in ok.items() if v <= lo * (1 + TIE_RTOL))
                rows.append({"size": int(n), "network": fam, "workload": str(wl), "best": best, "time": lo})
    return rows


def _fmt_t(t: float, unit: tuple[str, float]) -> str:
    """A time in its column's unit, four significant digits (three hid a ranking: 3.7232 and 3.7245 us both
    showed 3.72 us)."""
    from ..display import format_number

    return format_number(t / unit[1]) if math.isfinite(t) else "NaN"


def _column_units(ds: xr.Dataset, n, wls: list[str]) -> dict[str, tuple[str, float]]:
    """One display unit per workload column of one size's tables (DESIGN.md: decimal SI prefixes chosen per
    column, never a mix within one table): :func:`evaluator.display.shared_unit` of every mean, min and max."""
    from ..display import shared_unit

    return {w: shared_unit("s", [ds[v].sel(size=n, workload=w).values for v in ("time_mean", "time_min", "time_max")])
            for w in wls}


def format_study(ds: xr.Dataset) -> str:
    """The printed report: per size the networks with their cost, power and nodes, then best routing per network
    and workload (ties joined by ``=``), every routing's mean time [min, max], and the refusals. Each workload's
    times are in one unit, named in its column's head."""
    from ..display import format_value, format_values, shared_unit

    lines = [f"equal {ds.attrs['equal']} (tolerance {ds.attrs['tolerance']:g}); links "
             f"{format_value(float(ds.attrs['link_bandwidth']), 'bytes/s')} ({ds.attrs['link_product']})"]
    rows = best_table(ds)
    for n in ds["size"].values:
        lines.append("")
        budget = float(ds["budget"].sel(size=n))
        lines.append(f"== {int(n)} nodes: budget " + (f"{budget:.1f} (relative)" if ds.attrs["equal"] == "cost"
                                                      else format_value(budget, "W")))
        power_unit = shared_unit("W", [ds["power"].sel(size=n).values])  # one unit for the block's power column
        for fam in NETWORKS:
            sel = ds.sel(size=n, network=fam)
            flag = "" if bool(sel["within_tolerance"]) else "  OUTSIDE TOLERANCE"
            power = format_values([float(sel["power"])], "W", power_unit)[0][0]
            lines.append(f"  {fam:<10} {str(sel['topology'].values):<34} nodes {int(sel['nodes']):>6}  cost "
                         f"{float(sel['cost']):10.1f}  power {power:>10} {power_unit[0]}{flag}")
        wls = [str(w) for w in ds["workload"].values]
        units = _column_units(ds, n, wls)
        heads = [f"{w} [{units[w][0]}]" for w in wls]
        lines.append("  best routing per network (mean time over seeds):")
        lines.append("  " + f"{'network':<10}" + "".join(f"{h:>30}" for h in heads))
        for fam in NETWORKS:
            cells = []
            for w in wls:
                r = next(x for x in rows if x["size"] == int(n) and x["network"] == fam and x["workload"] == w)
                cells.append(f"{'='.join(r['best']) or ('not computed' if r.get('not_computed') else 'refused')} "
                             f"{_fmt_t(r['time'], units[w])}")
            lines.append("  " + f"{fam:<10}" + "".join(f"{c:>30}" for c in cells))
        lines.append("  every routing: mean [min, max] over seeds")
        lines.append("  " + f"{'routing':<26}" + " | ".join(heads))
        for fam in NETWORKS:
            for r in ROUTINGS[fam]:
                cells = []
                for w in wls:
                    sel, u = ds.sel(size=n, network=fam, routing=r, workload=w), units[w]
                    m = float(sel["time_mean"])
                    same = not math.isfinite(m) or float(sel["time_min"]) == float(sel["time_max"])
                    cells.append(_fmt_t(m, u) if same else f"{_fmt_t(m, u)} [{_fmt_t(float(sel['time_min']), u)}, "
                                      f"{_fmt_t(float(sel['time_max']), u)}]")
                lines.append("  " + f"{fam + '/' + r:<26}" + " | ".join(cells))
        for fam in NETWORKS:
            for r in ROUTINGS[fam]:
                for w in wls:
                    why = str(ds["refused"].sel(size=n, network=fam, routing=r, workload=w).values)
                    if why and why != NOT_COMPUTED:
                        lines.append(f"  refused {fam}/{r} {w}: {why[:160]}")
    if "interrupted" in ds.attrs:
        lines += ["", f"interrupted: {ds.attrs['interrupted']}"]
    return "\n".join(lines)


def plot_study(ds: xr.Dataset, path) -> None:
    """One panel per size: the best mean time of each network per workload, relative to the fastest network."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = [int(s) for s in ds["size"].values]
    wls = [str(w) for w in ds["workload"].values]
    fig, axes = plt.subplots(1, len(sizes), figsize=(5 * len(sizes), 4), squeeze=False)
    full = (ds["refused"] != NOT_COMPUTED).all("routing")  # an interrupted run: (size, network, workload) whole
    best = ds["time_mean"].min("routing", skipna=True).where(full)
    for ax, n in zip(axes[0], sizes):
        b = best.sel(size=n).where(full.sel(size=n).all("network"))  # a workload every network finished
        rel = b / b.min("network", skipna=True)
        x = np.arange(len(wls))
        for j, fam in enumerate(NETWORKS):
            ax.bar(x + (j - 1) * 0.27, rel.sel(network=fam).values, 0.27, label=fam)
        ax.set_xticks(x, wls, rotation=30, ha="right")
        ax.set_title(f"{n} nodes, equal {ds.attrs['equal']}"
                     + ("\n(interrupted: not computed where no bars)" if "interrupted" in ds.attrs else ""))
        ax.set_ylabel("best time / fastest network")
        ax.legend()
    fig.tight_layout()
    from ..io import save_figure

    save_figure(fig, path)  # (atomic: a reader, or a second run, never finds half a figure)
    plt.close(fig)


# ------------------------------------------------------------------------------------------- command line
def _ints(flag: str, text: str, allowed: str, ok) -> list[int]:
    items = [x.strip() for x in str(text).split(",")]
    if not all(re.fullmatch(r"[+-]?[0-9]+", x) for x in items):  # int() would take 3_2 and non-ASCII digits
        raise ConfigError(flag, text, allowed)
    vals = [int(x) for x in items]
    if not vals or not all(ok(v) for v in vals):
        raise ConfigError(flag, text, allowed)
    return vals


def _check_workloads(field: str, given, wls: list | None = None) -> list:
    """``wls`` (``list(given)`` by default), each a known workload and none twice (a repeated one made a
    coordinate the tables cannot select)."""
    wls = list(given) if wls is None else wls
    if not wls or any(w not in WORKLOADS for w in wls) or len(set(wls)) != len(wls):
        raise ConfigError(field, given, f"distinct names among {', '.join(WORKLOADS)}")
    return wls


def _check_buildable(field: str, given, sizes: list[int], wls: list[str]) -> tuple[list[int], list[str]]:
    """``(sizes, wls)`` where every workload can be built at every size, before anything is computed: the FFT's
    ``16 p_col`` grid must split into whole pencils over its squarest ``p_row x p_col`` grid (48 = 6 x 8 does not:
    128 / 6), on ``N`` tasks for ``fft_pencil`` and on ``N / 4`` for the mix's FFT job."""
    from ..traffic import pencil_volumes

    for n in sizes:
        for w, m in (("fft_pencil", n), ("mix", n // 4)):
            if w not in wls or (w == "mix" and n % 4):
                continue
            pr, pc = sorted(_cubic(m, 2))
            try:
                pencil_volumes(16 * pc, pr, pc)
            except ConfigError as exc:
                raise ConfigError(field, given, f"sizes at which every workload of {', '.join(wls)} can be built",
                                  f"At {n} nodes {w}: its FFT on {m} tasks ({pr} x {pc} pencils) cannot be built "
                                  f"({exc}); nothing was computed.") from None
    return sizes, wls


def _check_out(out: Path, given: str) -> None:
    """Before the study computes: ``--out`` can be written, and it holds this study's datasets or none (a study
    saved into a sweep's or another command's directory took its ``latest`` over;
    :func:`evaluator.runs.check_latest_owner`)."""
    from ..io import check_writable
    from ..runs import check_latest_owner

    check_writable("--out", out)
    check_latest_owner(out, "evaluator study buyer", "--out", given, own="evaluator study buyer",
                       expected="a directory of evaluator study buyer's own datasets (results/buyer by default), or "
                                "one holding none", new="this study's dataset", taken_by="the study saved there",
                       instead="this study", remedy="Give another --out DIR (e.g. results/buyer).")


def main(argv: Sequence[str] | None = None, prog: str = "evaluator study buyer") -> int:
    """``evaluator study buyer [--nodes 512,4096] [--seeds N] [--equal cost|power|cost,power] [--tolerance F]
    [--link BYTES_PER_S] [--workloads ...] [--out DIR]``: build the three networks at equal cost (or power) per
    size, evaluate every deployed routing on every workload, print the table, write the dataset (netCDF) and the
    plot (PNG) under ``--out``. Every option is checked before any work."""
    from .._args import ArgumentParser

    class Parser(ArgumentParser):
        def error(self, message):
            raise WordedError(f"{message} (see {prog} --help)")

    ap = Parser(prog=prog, description="For the same money (or power), which network runs my workloads fastest? "
                "A fat tree (tapered), a balanced Dragonfly and a 3-D torus (nodes per router) of equal cost within "
                "--tolerance, each with its deployed routings, on six workloads. See docs/buyer.md.")
    ap.add_argument("--nodes", default=",".join(map(str, DEFAULT_SIZES)), metavar="N,N,...",
                    help="sizes in nodes, integers >= 16 (default %(default)s)")
    ap.add_argument("--seeds", default=str(DEFAULT_SEEDS), metavar="K",
                    help="permutation and ECMP hash seeds per point, >= 1 (default %(default)s)")
    ap.add_argument("--equal", default="cost", help="cost, power or cost,power: what the three networks share "
                    "(default cost; cost,power runs both, each network evaluated once, one dataset each)")
    ap.add_argument("--tolerance", default=str(DEFAULT_TOLERANCE), metavar="F",
                    help="largest |measure / budget - 1| a network may have, in (0, 1) (default %(default)s)")
    ap.add_argument("--link", default="25e9", metavar="BYTES_PER_S",
                    help="bytes/s per direction of every link; must be a product (12.5e9: 100 Gb/s, 25e9: 200 Gb/s, "
                         "50e9: 400 Gb/s; default %(default)s)")
    ap.add_argument("--workloads", default=",".join(WORKLOADS), help=f"some of {','.join(WORKLOADS)} (default: all)")
    ap.add_argument("--out", default="results/buyer", metavar="DIR",
                    help="directory for buyer-<equal>-<UTC time>.nc and .png (default %(default)s)")
    args = ap.parse_args(argv)
    sizes = _check_sizes(args.nodes)
    n_seeds = _ints("--seeds", args.seeds, f"an integer in [1, {MAX_DRAWS:,}]", lambda v: 1 <= v <= MAX_DRAWS)
    if len(n_seeds) != 1:
        raise ConfigError("--seeds", args.seeds, f"one integer in [1, {MAX_DRAWS:,}]")
    equals = [e.strip() for e in str(args.equal).split(",")]
    if not equals or any(e not in ("cost", "power") for e in equals) or len(set(equals)) != len(equals):
        raise ConfigError("--equal", args.equal, "cost, power, or cost,power (both: the networks both studies "
                                                 "build are evaluated once)")
    try:
        tol = float(args.tolerance)
    except ValueError:
        tol = math.nan
    if not 0 < tol < 1:
        raise ConfigError("--tolerance", args.tolerance, "a number in (0, 1), e.g. 0.1")
    try:
        link = float(args.link)
    except ValueError:
        link = math.nan
    if not (math.isfinite(link) and link > 0) or link_product(link) is None:
        raise ConfigError("--link", args.link, "the bytes/s of a link product: 12.5e9 (100 Gb/s), 25e9 (200 Gb/s), "
                                               "50e9 (400 Gb/s), 100e9 (800 Gb/s)")
    wls = _check_workloads("--workloads", args.workloads, [w.strip() for w in args.workloads.split(",")])
    _check_buildable("--nodes", args.nodes, sizes, wls)
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise ConfigError("--out", args.out, "a directory", f"{args.out} exists and is not one; nothing was computed.")
    if "mix" in wls:
        for n in sizes:
            if n % 4:
                raise ConfigError("--nodes", args.nodes, "sizes that are multiples of 4 with the workload mix (a job "
                                                         "on N/2 nodes and two on N/4)")
    _check_out(out, args.out)
    memo: dict = {}
    for k, equal in enumerate(equals):
        t0 = time.perf_counter()
        try:
            ds = buyer_study(sizes, n_seeds[0], equal, tol, link, wls, memo=memo, bar=True,
                             progress=lambda n, e, s: print(f"{n:>6} nodes (equal {e}) {s:7.1f} s", flush=True))
        except KeyboardInterrupt as exc:  # what finished is written, then the run stops as interrupted
            part = getattr(exc, "partial", None)
            if part is not None:
                _write(part, equal, time.perf_counter() - t0, out)
            print(f"study interrupted (equal {equal}): " + ("what finished is written above" if part is not None
                  else "nothing finished, nothing written") + (f"; equal {', '.join(equals[k + 1:])} not started"
                                                               if equals[k + 1:] else ""), file=sys.stderr)
            raise
        _write(ds, equal, time.perf_counter() - t0, out)
    return 0


def _write(ds: xr.Dataset, equal: str, seconds: float, out: Path) -> None:
    """Print the study's report and write its dataset and plot under ``out``."""
    from ..io import point_latest_at, write_netcdf

    ds.attrs["total_seconds"] = seconds
    print(format_study(ds))
    print(f"total {seconds:.1f} s (equal {equal})")
    out.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    nc, png = out / f"buyer-{equal}-{stamp}.nc", out / f"buyer-{equal}-{stamp}.png"
    write_netcdf(ds, nc)
    point_latest_at(out, nc.name)  # (evaluator query buyer: this run, whatever else the directory holds)
    plot_study(ds, png)
    print(f"dataset: {nc}")
    print(f"plot: {png}", flush=True)
