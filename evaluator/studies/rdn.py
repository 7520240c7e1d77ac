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
    attempted; so is UGAL above :data:`._rdn_points.MAX_UGAL_PAIRS` router pairs.

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

import math
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import xarray as xr

from .._signals import raise_if_signalled
from ..evaluation import MAX_DRAWS, check_draws
from .._version import __version__
from ..errors import (NOT_COMPUTED, ConfigError, ConfigTypeError, ResourceError, check_seed, is_int, positive_float,
                      positive_int, require, with_partial)
from ..topology import dragonfly
from ._rdn_points import (BOUND_TEXT, BOUNDS, DEFAULT_GROUPS, INTRA, MACHINE_GRAMMAR, MAX_LP_NNZ, PAPER_MACHINE,
                          PATTERNS, TDN_ADAPTIVE, TDN_ROUTINGS, PointRefused, RdnMachine, _job, _rdn_point, _tdn_point,
                          check_machine, mapping_seed, parse_machine)
from ._rdn_report import SUMMARIES, _SUMMARY_TEXT, _summaries, format_speedup_table, format_study, plot_study

__all__ = ["RdnMachine", "PAPER_MACHINE", "PATTERNS", "DEFAULT_GROUPS", "BOUNDS", "GAINS", "allocation_mode_study",
           "speedup_table", "format_study", "format_speedup_table", "plot_study", "parse_machine", "check_machine",
           "MACHINE_GRAMMAR", "DEFAULT_SEEDS", "SUMMARIES", "mapping_seed"]

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



def _check_study_args(machine, groups, patterns, background, seed, bounds, max_lp_nnz, n_seeds, adaptive, solver):
    """:func:`allocation_mode_study`'s arguments checked (a :class:`ConfigError` naming the first bad one):
    ``(bounds, adaptive, seed, n_seeds, max_lp_nnz, background fraction)``."""
    for arg, value, what in (("patterns", patterns, f"a list of pattern names among {' | '.join(PATTERNS)}"),
                             ("groups", groups, "a list of group counts (integers >= 2)"),
                             ("bounds", bounds, f"a list among {' | '.join(BOUNDS)}"),
                             ("adaptive", adaptive, f"a list among {' | '.join(TDN_ADAPTIVE)} (or empty)")):
        if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple, np.ndarray, range)):
            raise ConfigTypeError(arg, value, what, f"Got a {type(value).__name__}; e.g. {arg}=[...].")
    for name in patterns:
        require(name in PATTERNS, "patterns", name, " | ".join(PATTERNS))
    require(len(patterns) > 0, "patterns", list(patterns), f"at least one of {' | '.join(PATTERNS)}")
    for arg, value in (("patterns", patterns), ("bounds", bounds), ("adaptive", adaptive)):
        twice = [x for i, x in enumerate(value) if x in list(value)[:i]]
        require(not twice, arg, list(value), "each name once", f"{twice[0] if twice else ''!r} is given twice.")
    from ..lp import SOLVERS
    require(solver in SOLVERS, "solver", solver, " | ".join(SOLVERS))
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
    n_seeds = check_draws("n_seeds", n_seeds, "random mappings of the TDN per point")
    max_lp_nnz = positive_int("max_lp_nnz", max_lp_nnz)
    fraction = positive_float("background", background, allow_zero=True)
    require(fraction < 1, "background", background, "a fraction in [0, 1)")
    return bounds, adaptive, seed, n_seeds, max_lp_nnz, fraction


def _run_points(machine, pats, sizes, fraction, seed, n_seeds, bounds, max_lp_nnz, solver, adaptive, progress):
    """Every ``(pattern, groups)`` point on the RDN and, per seed, on the TDN: the raw variables
    (:data:`VARIABLES`), the seconds of each point, why a point was refused and why a seed's bound is NaN; and
    ``(points finished, the KeyboardInterrupt that stopped the run or None)``: a Ctrl-C (or SIGTERM) keeps the
    points finished, the one in progress and those after it NaN with the reason :data:`NOT_COMPUTED`."""
    shape, shape_s = (len(pats), len(sizes)), (len(pats), len(sizes), n_seeds)
    data = {v: np.full(shape_s if v.startswith("tdn_") else shape, np.nan) for v in VARIABLES}
    secs = np.zeros(shape)
    refused = np.full(shape, "", dtype=object)
    bound_refused = np.full(shape_s, "", dtype=object)
    done, stopped = 0, None
    try:
        tdn = None
        try:
            tdn = dragonfly(machine.p, machine.a, machine.h, machine.g, bandwidth_p=machine.bandwidth,
                            bandwidth_l=machine.bandwidth, bandwidth_r=machine.bandwidth)
        except ResourceError as e:
            refused[:] = f"TDN: {e}"
        for i, pat in enumerate(pats):
            for j, q in enumerate(sizes):
                raise_if_signalled()  # a Ctrl-C or SIGTERM whose exception a gc callback swallowed
                t0 = time.perf_counter()
                try:
                    tr, pol, nodes = _job(machine, pat, q)
                    vals = _rdn_point(machine, pat, q, tr, pol, nodes, fraction)
                    draws = [_tdn_point(machine, tdn, tr, nodes.size, fraction, mapping_seed(seed, pat, q, s),
                                        bounds, max_lp_nnz, solver, adaptive)
                             for s in range(n_seeds)] if tdn is not None else []
                    for k, v in vals.items():
                        data[k][i, j] = v
                    for s, (more, why) in enumerate(draws):
                        for k, v in more.items():
                            data[k][i, j, s] = v
                        bound_refused[i, j, s] = why
                except (ResourceError, PointRefused) as e:
                    refused[i, j] = (refused[i, j] + "; " if refused[i, j] else "") + str(e)
                secs[i, j] = time.perf_counter() - t0
                done += 1
                if progress is not None:
                    progress(pat, q, secs[i, j])
    except KeyboardInterrupt as exc:  # the points finished are kept; the rest are marked
        stopped = exc
        left = np.unravel_index(np.arange(done, refused.size), shape)
        for v, a in data.items():
            a[left] = np.nan
        secs[left], refused[left], bound_refused[left] = np.nan, NOT_COMPUTED, ""
    return data, secs, refused, bound_refused, (done, stopped)


def _derived(data: dict) -> tuple[dict, np.ndarray]:
    """The derived variables (name -> (values, attrs)): the RDN's faster routing inside groups, the TDN's fastest
    oblivious routing per seed (and its name), the gains, the background's slowdowns and the hop reductions."""
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
    # the routing rdn_time_bg takes, as the TDN's side of network_gain_oblivious (the faster on these links alone
    # mixed two choices until 2026-12-07)
    derived["rdn_net_time_bg"] = (np.where(use_val, data["rdn_valiant_net_time_bg"], data["rdn_minimal_net_time_bg"]),
                                  {"units": "s", "long_name": "RDN-GRAP: time with background of the faster "
                                                              "routing inside groups (by its whole time), router "
                                                              "links only"})
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
    # ties are ties (DESIGN.md): every routing within 1e-9 of the fastest is named, "minimal=valiant"
    tied = tbg <= np.take_along_axis(tbg, best[None], 0) * (1 + 1e-9)
    routing_name = np.array(["=".join(rt for rt, x in zip(TDN_ROUTINGS, t) if x)
                             for t in tied.reshape(len(tied), -1).T], dtype=object).reshape(none.shape)
    routing_name = np.where(none, "", routing_name).astype(str)
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
    return derived, routing_name


def _seed_summaries(data: dict, derived: dict) -> dict:
    """``<name>_{mean,std,min,max}`` over the seeds of the TDN's bounds' times and every derived variable with a
    seed dimension (:data:`SUMMARIES`)."""
    summarised = [f"tdn_{b}_{v}" for b in tuple(BOUNDS) + TDN_ADAPTIVE for v in ("time", "time_bg")] + \
        [k for k, (v, _) in derived.items() if v.ndim == 3]
    summaries: dict[str, tuple[np.ndarray, dict]] = {}
    for k in summarised:
        arr, attrs = (data[k], _attrs(k)) if k in data else derived[k]
        for stat, v in _summaries(arr).items():
            summaries[f"{k}_{stat}"] = (v, {"units": attrs["units"],
                                            "long_name": f"{attrs['long_name']}: {_SUMMARY_TEXT[stat]}"})
    return summaries


_EXTRA_ATTRS = {
    "tdn_oblivious_routing": {"long_name": "TDN: the fastest oblivious routing with background (tied ones joined "
                                           "by '=', e.g. minimal=valiant)"},
    "seconds": {"units": "s", "long_name": "wall time of the point, every seed"},
    "refused": {"long_name": "why the evaluator refused the point ('' ran)"},
    "bound_refused": {"long_name": "why a TDN bound is NaN ('' when every asked bound was computed)"},
}
"""The study's variables beside the raw, derived and summary ones: their attributes."""


def _study_dataset(machine, pats, sizes, n_seeds: int, data: dict, derived: dict, summaries: dict,
                   extra: dict) -> xr.Dataset:
    """The study's dataset (without its attributes): raw, derived and summary variables, and ``extra`` (the
    fastest routing's name, the seconds, the refusals)."""
    dim = lambda v: ("pattern", "groups", "seed")[: np.ndim(v)]  # noqa: E731
    ds = xr.Dataset(
        {k: (dim(v), v, _attrs(k)) for k, v in data.items()}
        | {k: (dim(v), v, a) for k, (v, a) in derived.items()}
        | {k: (dim(v), v, a) for k, (v, a) in summaries.items()}
        | {k: (dim(extra[k]), np.asarray(extra[k]).astype(str) if k.endswith("refused") else extra[k], a)
           for k, a in _EXTRA_ATTRS.items()},
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
    return ds


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

    A Ctrl-C (or the CLI's SIGTERM) stops it at once and is raised again carrying ``.partial``, the dataset of the
    points finished, which ``evaluator study rdn`` writes (:func:`~evaluator.errors.with_partial`).
    ``groups`` above the machine's ``g`` are left out, named in ``attrs["groups_left_out"]``.
    """
    bounds, adaptive, seed, n_seeds, max_lp_nnz, fraction = _check_study_args(
        machine, groups, patterns, background, seed, bounds, max_lp_nnz, n_seeds, adaptive, solver)
    sizes = sorted({positive_int("groups", q, minimum=2) for q in groups if q <= machine.g} | {machine.g})
    pats = list(patterns)
    data, secs, refused, bound_refused, (done, stopped) = _run_points(
        machine, pats, sizes, fraction, seed, n_seeds, bounds, max_lp_nnz, solver, adaptive, progress)
    derived, routing_name = _derived(data)
    summaries = _seed_summaries(data, derived)
    ds = _study_dataset(machine, pats, sizes, n_seeds, data, derived, summaries,
                        {"tdn_oblivious_routing": routing_name, "seconds": secs, "refused": refused,
                         "bound_refused": bound_refused})
    ds.attrs.update({"machine": f"DF({machine.p},{machine.a},{machine.h},{machine.g})",
                     "n_nodes": machine.g * machine.nodes_per_group, "bandwidth": machine.bandwidth,
                     "ports_per_switch": machine.ports_per_switch, "background": fraction, "seed": seed,
                     "n_seeds": n_seeds,
                     "seed_rule": "the TDN's mapping of a point, draw s: numpy default_rng((seed, k, groups, s)), "
                                  "k the pattern's place in stencil, neighbouring, all_to_all",
                     "summaries": "_mean, _std (sample, ddof=1), _min, _max over the seed dimension",
                     "tdn_mapping": "random nodes of the whole machine", "rdn_routing": "tago",
                     "tdn_routings": ",".join(TDN_ROUTINGS), "tdn_adaptive": ",".join(adaptive),
                     "tdn_bounds": ",".join(bounds), "max_lp_nnz": max_lp_nnz, "bound_solver": solver,
                     "headline": "gain_adaptive_mean (conservative: RDN-GRAP against the ideal adaptive lower bound, "
                                 "mean over the seeds)",
                     "evaluator_version": __version__})
    ds.attrs.update(_left_out(groups, machine))
    if stopped is not None:
        raise _kept(stopped, ds, done)
    return ds


def _left_out(groups: Sequence[int], machine: RdnMachine) -> dict[str, str]:
    """``{"groups_left_out": ...}`` naming the group counts above the machine's ``g`` (a size asked for is never
    missing in silence; the whole machine, ``g`` groups, is always a size), or nothing."""
    above = sorted({int(q) for q in groups if int(q) > machine.g})
    return {"groups_left_out": f"{', '.join(map(str, above))}: above the machine's {machine.g} groups (the whole "
                               f"machine, {machine.g} groups, is always a size)"} if above else {}


def _kept(stopped: KeyboardInterrupt, ds: xr.Dataset, done: int) -> KeyboardInterrupt:
    """The interrupt that stopped :func:`allocation_mode_study` after ``done`` points, carrying ``ds`` (marked
    partial) where any finished."""
    if not done:
        return stopped
    ds.attrs["interrupted"] = (f"{done} of {ds.refused.size} points (pattern, groups) finished, in the order "
                               f"pattern then groups; the rest are NaN, refused '{NOT_COMPUTED}'")
    return with_partial(stopped, ds)


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


def _is_study(ds: xr.Dataset) -> bool:
    """Whether ``ds`` is a dataset this study wrote (``--out``)."""
    return {"pattern", "groups"} <= set(ds.dims) and "rdn_routing" in ds.attrs


def _is_speedup_table(ds: xr.Dataset) -> bool:
    """Whether ``ds`` is a speedup table this study wrote (``--speedup-out``)."""
    return set(ds.dims) == {"mode", "groups"} and "baseline" in ds.attrs and "rdn_routing" in ds.attrs


def _ours(path: Path, is_ours) -> bool:
    """Whether the existing file ``path`` is a netCDF dataset that ``is_ours(ds)`` recognises."""
    try:
        with xr.open_dataset(path, engine="h5netcdf") as ds:
            return bool(is_ours(ds))
    except Exception:  # not netCDF, unreadable: not ours
        return False


def check_output_file(flag: str, value: str, path: Path, is_ours=None, beside: Path | None = None) -> None:
    """Refuse (ConfigError naming ``flag`` and ``value``) a file that cannot be written, before any work: an
    existing directory, or a directory that cannot be made or written to; with ``is_ours``, an existing file that
    is not this study's own output of that kind (``is_ours(dataset)``: a rerun replaces its own file, never
    another command's or a user's), and a file ``beside`` it (its plot) that exists where ``path`` is not ours.
    Leaves nothing behind."""
    from ..io import check_writable

    if is_ours is not None and path.is_file() and not _ours(path, is_ours):
        raise ConfigError(flag, value, "a new file, or this study's own output of a previous run (which it replaces)",
                          f"{path} exists and is not one; move it or choose another path. Nothing was computed.")
    if beside is not None and beside.exists() and not (path.is_file() and _ours(path, is_ours)):
        raise ConfigError(flag, value, "a path whose plot would not replace another file",
                          f"{beside} exists beside no dataset of this study; move it or choose another path. "
                          f"Nothing was computed.")
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


def _study_parser(prog: str):
    """``evaluator study rdn``'s argument parser (an error is one line through the CLI's error handling)."""
    from .._args import ArgumentParser  # an option given twice with two values is refused, not the last kept
    from ..errors import WordedError

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
    return ap


def _study_options(args):
    """The options parsed and checked before any work: ``(machine, groups, patterns, bounds, adaptive, max_lp_nnz,
    background, seed, n_seeds, uncomputed)`` (``uncomputed``: the baseline is a bound or an adaptive routing the
    study was told not to compute, so no speedup table)."""
    from ..errors import check_seed

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
    n_seeds = _parse_number("--seeds", args.seeds, "int", f"an integer in [1, {MAX_DRAWS:,}] (random mappings per "
                            f"point)", lambda v: 1 <= v <= MAX_DRAWS)
    check_machine(m, patterns, "--machine", args.machine)
    # a baseline that is a bound or an adaptive routing the study was told not to compute: no speedup table
    uncomputed = args.baseline in tuple(BOUNDS) + TDN_ADAPTIVE and args.baseline not in bounds + adaptive
    if args.speedup_out and args.baseline in TDN_ADAPTIVE and args.baseline not in adaptive:
        raise ConfigError("--baseline", args.baseline, f"an adaptive routing that --adaptive computes ({args.adaptive})",
                          f"Add it: --adaptive {','.join(adaptive + (args.baseline,))}")
    if args.speedup_out and args.baseline in BOUNDS and args.baseline not in bounds:
        raise ConfigError("--baseline", args.baseline, f"a bound that --bounds computes ({args.bounds})",
                          f"Add it: --bounds {','.join(bounds + (args.baseline,))}")
    return m, groups, patterns, bounds, adaptive, max_lp_nnz, background, seed, n_seeds, uncomputed


def _write_partial(ds: xr.Dataset | None, seconds: float, ds_path: Path, png_path: Path, speedup_out) -> None:
    """An interrupted study (:func:`~evaluator.errors.with_partial`): its points finished as a table, dataset and
    plot; the speedup table is not written (it would hold the points not reached as NaN)."""
    from ..io import write_netcdf

    if ds is None:
        print("study interrupted before its first point finished: nothing written", file=sys.stderr, flush=True)
        return
    ds.attrs["total_seconds"] = seconds
    print(format_study(ds))
    write_netcdf(ds, ds_path)
    plot_study(ds, png_path)
    print(f"study interrupted after {seconds:.1f} s: {ds.attrs['interrupted'].split(';')[0]}; written as they are "
          f"(the rest NaN)\ndataset: {ds_path}\nplot: {png_path}"
          + (f"\nspeedup table not written ({speedup_out}): the study is partial" if speedup_out else ""),
          flush=True)


def main(argv: Sequence[str] | None = None, prog: str = "evaluator study rdn") -> int:
    """``evaluator study rdn [--machine P,A,H,G] [--groups 2,4,...] [--patterns ...] [--bounds ...]
    [--background F] [--seed S] [--seeds N] [--out DIR|FILE.nc] [--speedup-out FILE.nc --baseline adaptive]``: run
    :func:`allocation_mode_study` (default: the paper's machine), print the times, the gains (ratios T_TDN /
    T_RDN) against both ends, the TDN's background slowdown, hops and the workload's speedup table (mode x
    groups), then write the study as netCDF and its plot as PNG (``--out``) and, with ``--speedup-out``, the
    speedup table as netCDF (:func:`speedup_table`). Every option and output is checked before any work."""
    from ..io import point_latest_at, write_netcdf
    from ..runs import check_latest_owner

    args = _study_parser(prog).parse_args(argv)
    m, groups, patterns, bounds, adaptive, max_lp_nnz, background, seed, n_seeds, uncomputed = _study_options(args)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    ds_path, png_path = output_paths(args.out, m, stamp)
    if Path(args.out).suffix != ".nc" and Path(args.out).exists() and not Path(args.out).is_dir():
        raise ConfigError("--out", args.out, "a directory or a FILE.nc path",
                          f"{args.out} exists and is not a directory; nothing was computed.")
    check_output_file("--out", args.out, ds_path, _is_study, beside=png_path)
    check_latest_owner(ds_path.parent, "evaluator study rdn", "--out", args.out,
                       own=("evaluator study rdn", "evaluator study rdn --speedup-out"),
                       expected=f"a directory of evaluator study rdn's own datasets ({DEFAULT_OUT} by default), or "
                                f"one holding none", new="this study's dataset", taken_by="the study saved there",
                       instead="this study", remedy=f"Give another --out DIR (e.g. {DEFAULT_OUT}).")
    if args.speedup_out:
        sp = Path(args.speedup_out)
        if sp.suffix != ".nc":
            raise ConfigError("--speedup-out", args.speedup_out, "a netCDF file path ending in .nc")
        check_output_file("--speedup-out", args.speedup_out, sp, _is_speedup_table)
        if sp.resolve() in (ds_path.resolve(), png_path.resolve()):
            raise ConfigError("--speedup-out", args.speedup_out, f"a path other than the study's own ({ds_path})",
                              "The table would overwrite the study's dataset; nothing was computed.")
    above = sorted({int(q) for q in groups if int(q) > m.g})
    if above:  # (documented in --groups; said here so that a size asked for is not missing in silence)
        print(f"job sizes above the machine's {m.g} groups left out: {', '.join(map(str, above))} (the whole "
              f"machine, {m.g} groups, is always a size)", flush=True)
    t0 = time.perf_counter()
    try:
        ds = allocation_mode_study(m, groups, patterns=patterns, background=background, seed=seed, bounds=bounds,
                                   max_lp_nnz=max_lp_nnz, n_seeds=n_seeds, adaptive=adaptive,
                                   progress=lambda pat, q, s: print(f"{pat:>13} {q:>4} groups  {s:7.1f} s",
                                                                    flush=True))
    except KeyboardInterrupt as exc:  # the points finished are written, then the run stops as interrupted
        _write_partial(getattr(exc, "partial", None), time.perf_counter() - t0, ds_path, png_path,
                       args.speedup_out)
        raise
    ds.attrs["total_seconds"] = time.perf_counter() - t0
    print(format_study(ds))
    print(f"total {ds.attrs['total_seconds']:.1f} s")
    table = speedup_table(study=ds, baseline=args.baseline) if not uncomputed else None
    if table is not None:
        print()
        print(format_speedup_table(table))
    write_netcdf(ds, ds_path)
    point_latest_at(ds_path.parent, ds_path.name)  # (evaluator query rdn: this run, not a table written beside)
    plot_study(ds, png_path)
    print(f"dataset: {ds_path}")
    print(f"plot: {png_path}")
    if args.speedup_out:
        write_netcdf(table, args.speedup_out)
        print(f"speedup table (against {args.baseline}): {args.speedup_out}")
    return 0
