"""Claims of the studies' documents rerun (issue 23, item 8): every number below is stated in README.md, docs/ or
a sweep's YAML header next to the command that produces it; each test recomputes it (the same sweep's points,
built from the shipped sweep file and evaluated in this process; a shrunken subset where the full sweep takes
minutes) and fails when the stated number drifts beyond its printed precision (tests/claims.py)."""

from __future__ import annotations

import numpy as np
import pytest

import evaluator as ev
from evaluator import config
from evaluator.jobs import evaluate_jobs
from evaluator.sweep import plan_sweep
from tests.claims import check_stated


def _plan(*overrides):
    return plan_sweep(config.compose_sweep(list(overrides)))


def _batch(plan, points=None):
    """Build the sweep's points (all, or the flat indices ``points``) and evaluate them in one batch; returns the
    point configs, the built points and the batch's metrics."""
    points = range(plan.n_points) if points is None else points
    cfgs = [plan.point_config(i) for i in points]
    built = [config.build(c) for c in cfgs]
    p0 = built[0]
    res = ev.evaluate_batch(p0.topology, p0.routing, [p.traffic for p in built], [p.placement for p in built],
                            keep_link_load=True)
    return cfgs, built, res


# --- PSDNS slab orientation (docs/tiles.md, README.md, sweeps/psdns_slab_orientation.yaml) -----------------

PSDNS = "sweep sweeps=psdns_slab_orientation ray.enabled=false"


def _psdns_times(*overrides):
    plan = _plan("sweeps=psdns_slab_orientation", *overrides)
    cfgs, _, res = _batch(plan)
    grids = [tuple(c.placement.task_grid) for c in cfgs]
    t = dict(zip(grids, np.asarray(res.metrics["completion_time"], dtype=float)))
    return t[(6, 24, 24)], t[(23, 6, 24)]


def test_psdns_slab_orientation_ratio():
    slow, fast = _psdns_times()
    ratio = slow / fast
    doc = "docs/tiles.md"
    check_stated(doc, r"\| ratio \| \*\*([0-9.]+)x\*\* \|", ratio, command=PSDNS)
    check_stated(doc, r"\| 6x24x24 \| ([0-9.]+) ms \|", slow * 1e3, command=PSDNS)
    check_stated(doc, r"\| 23x6x24 \| ([0-9.]+) ms \|", fast * 1e3, command=PSDNS)
    # the share of the step that the transposes must take for the measured 1.64x
    check_stated(doc, r"1\.64x needs f = ([0-9.]+)", (1 - 1 / 1.64) / (1 - 1 / ratio), command=PSDNS)
    check_stated("README.md", r"6x24x24 vs 23x6x24: predicted ([0-9.]+)x \(measured 1\.64x\)", ratio,
                 command=PSDNS)
    check_stated("sweeps/psdns_slab_orientation.yaml", r"transpose-time ratio ([0-9.]+) ms", slow * 1e3,
                 command="evaluator sweep sweeps=psdns_slab_orientation")
    check_stated("sweeps/psdns_slab_orientation.yaml", r"/ ([0-9.]+) ms = [0-9.]+x", fast * 1e3,
                 command="evaluator sweep sweeps=psdns_slab_orientation")
    check_stated("sweeps/psdns_slab_orientation.yaml", r"ms = ([0-9.]+)x \(evaluator sweep", ratio,
                 command="evaluator sweep sweeps=psdns_slab_orientation")


def test_psdns_slab_orientation_bare_torus():
    slow, fast = _psdns_times("topology.layout=ideal")
    cmd = PSDNS + " topology.layout=ideal"
    doc = "docs/tiles.md"
    check_stated(doc, r"\| 6x24x24 \| [0-9.]+ ms \| Y links \| ([0-9.]+) ms \|", slow * 1e3, command=cmd)
    check_stated(doc, r"\| 23x6x24 \| [0-9.]+ ms \| X links \| ([0-9.]+) ms \|", fast * 1e3, command=cmd)
    check_stated(doc, r"\| ratio \| \*\*[0-9.]+x\*\* \| \| ([0-9.]+)x \|", slow / fast, command=cmd)
    check_stated("sweeps/psdns_slab_orientation.yaml", r"ray.enabled=false; ([0-9.]+)x on the bare torus",
                 slow / fast, command="topology.layout=ideal")


# --- Fragmentation (docs/gemini.md, sweeps/gemini_fragmentation.yaml) ---------------------------------------

FRAG = "sweep sweeps=gemini_fragmentation ray.enabled=false"
FRAG_BG = FRAG + " background.fraction=0.05"
ROWS = {0.0: r"0 \(empty\)", 0.5: r"0\.5", 0.8: r"0\.8", 0.9: r"0\.9"}


@pytest.fixture(scope="module")
def fragmentation():
    """Every point of the shipped sweep: {(occupancy, seed): (time s, mean hops, router links used, max Y-link
    bytes)}."""
    plan = _plan("sweeps=gemini_fragmentation")
    cfgs, built, res = _batch(plan)
    topo = built[0].topology
    nrl = topo.n_router_links
    ydim = np.asarray(topo.link_class_names()) == "torus-dim1"
    out = {}
    for j, c in enumerate(cfgs):
        load = np.asarray(res.link_load[j], dtype=float)
        out[(float(c.placement.occupancy), int(c.placement.seed))] = (
            float(res.metrics["completion_time"][j]), float(res.metrics["mean_hops"][j]),
            int((load[:nrl] > 0).sum()), float(load[ydim].max()))
    return out


def test_fragmentation_table(fragmentation):
    doc = "docs/gemini.md"
    for occ, row in ROWS.items():
        for seed in range(3):
            cell = r"\| " + row + r" \|" + r" [0-9.]+ \|" * seed + r" ([0-9.]+) \|"
            check_stated(doc, cell, fragmentation[(occ, seed)][0] * 1e6, command=FRAG)
    yaml = "sweeps/gemini_fragmentation.yaml"
    times = [v[0] * 1e6 for k, v in fragmentation.items() if k[0] > 0]
    ycmd = "evaluator sweep sweeps=gemini_fragmentation ray.enabled=false"
    check_stated(yaml, r"empty machine takes ([0-9.]+) us", fragmentation[(0.0, 0)][0] * 1e6, command=ycmd)
    check_stated(yaml, r"the fragmented ones ([0-9.]+)-[0-9.]+ us: FASTER", min(times), command=ycmd)
    check_stated(yaml, r"the fragmented ones [0-9.]+-([0-9.]+) us: FASTER", max(times), command=ycmd)


def test_fragmentation_explanation(fragmentation):
    """The numbers of the explanation: mean hops, links used and the busiest Y link (per-link loads)."""
    doc = "docs/gemini.md"
    compact = fragmentation[(0.0, 0)]
    spread = fragmentation[(0.8, 0)]
    hops = [v[1] for v in fragmentation.values()]
    check_stated(doc, r"\| 0 \(empty\) \|(?: [0-9.]+ \|){3} ([0-9.]+) \|", compact[1], command=FRAG)
    for occ in (0.5, 0.8, 0.9):
        h = [fragmentation[(occ, s)][1] for s in range(3)]
        check_stated(doc, r"\| " + ROWS[occ] + r" \|(?: [0-9.]+ \|){3} ([0-9.]+)-[0-9.]+ \|", min(h), command=FRAG)
        check_stated(doc, r"\| " + ROWS[occ] + r" \|(?: [0-9.]+ \|){3} [0-9.]+-([0-9.]+) \|", max(h), command=FRAG)
    check_stated(doc, r"mean hops ([0-9.]+) -> up\s+to [0-9.]+", compact[1], command=FRAG)
    check_stated(doc, r"mean hops [0-9.]+ -> up\s+to ([0-9.]+)", max(hops), command=FRAG)
    check_stated(doc, r"bytes x hops on router links grow up to ([0-9.]+)x", max(hops) / compact[1], command=FRAG)
    check_stated(doc, r"carries less: ([0-9.]+) MB in the compact block", compact[3] / 1e6,
                 command="sweep.keep_link_load=true")
    check_stated(doc, r"against ([0-9.]+) MB at\s+occupancy 0\.8, seed 0", spread[3] / 1e6,
                 command="sweep.keep_link_load=true")
    check_stated(doc, r"([0-9,]+) router links used against [0-9,]+", compact[2], command="sweep.keep_link_load=true")
    check_stated(doc, r"[0-9,]+ router links used against ([0-9,]+)", spread[2], command="sweep.keep_link_load=true")
    links = [v[2] / compact[2] for k, v in fragmentation.items() if k[0] > 0]
    check_stated(doc, r"cross ([0-9.]+)-[0-9.]+x as many distinct router links", min(links), command=FRAG)
    check_stated(doc, r"cross [0-9.]+-([0-9.]+)x as many distinct router links", max(links), command=FRAG)


def test_fragmentation_with_background():
    """The uniform 5% background (the sweep with background.fraction=0.05), shrunk to two points: the empty
    machine and occupancy 0.8, seed 0."""
    plan = _plan("sweeps=gemini_fragmentation", "background.fraction=0.05")
    doc = "docs/gemini.md"
    topo = None
    for i in range(plan.n_points):
        c = plan.point_config(i)
        occ, seed = float(c.placement.occupancy), int(c.placement.seed)
        if (occ, seed) not in ((0.0, 0), (0.8, 0)):
            continue
        jp = config.build_jobs(c, topo)
        topo = jp.topology
        ds = evaluate_jobs(jp.topology, list(jp.jobs), jp.routing, jp.background,
                           exclusive_nodes=jp.exclusive_nodes, interference=False)
        t = float(ds["completion_time"].values.ravel()[0])
        cell = r"\| " + ROWS[occ] + r" \|" + r" [0-9.-]+ \|" * 4 + r" ([0-9.]+) \|"
        check_stated(doc, cell, t * 1e6, command=FRAG_BG)
        yaml = "sweeps/gemini_fragmentation.yaml"
        if occ == 0.0:
            check_stated(yaml, r"the compact job takes ([0-9.]+) us", t * 1e6, command="background.fraction=0.05")
        else:
            check_stated(yaml, r"the fragmented ones ([0-9.]+)-[0-9.]+ us: a uniform", t * 1e6,
                         command="background.fraction=0.05")


# --- OPTIQ: the heuristic, Model 1 and the optimum (docs/routing_paths.md), shrunk to the 512-node row --------

OPTIQ = ("evaluator sweep sweeps=bgq_m2n_constant_ratio ray.enabled=false "
         "routing=dor_bgq,optiq_heuristic,optiq_lp")
OPTIQ_BOUND = OPTIQ + " bounds=garg_konemann"


def test_optiq_constant_ratio_512_nodes():
    """The constant-ratio table's 512-node rows (disjoint and overlap): DOR, Algorithm 2, Model 1 and the
    certified any-routing optimum, from the shipped sweep's points on that partition."""
    from evaluator.lp.bounds import optimal

    plan = _plan("sweeps=bgq_m2n_constant_ratio", "routing=dor_bgq,optiq_heuristic,optiq_lp")
    rows: dict[str, dict[str, float]] = {}
    groups: dict[str, list] = {}
    for i in range(plan.n_points):
        c = plan.point_config(i)
        if list(c.topology.midplanes) != [1, 1, 1, 1]:
            continue
        groups.setdefault(c.routing.kind, []).append(c)
    for cfgs in groups.values():
        built = [config.build(c) for c in cfgs]
        res = ev.evaluate_batch(built[0].topology, built[0].routing, [p.traffic for p in built],
                                [p.placement for p in built])
        for c, t in zip(cfgs, np.asarray(res.metrics["completion_time"], dtype=float)):
            name = {"dor": "dor", "optiq_heuristic": "heuristic", "optiq_lp": "lp"}[c.routing.kind]
            rows.setdefault(c.traffic.mode, {})[name] = t * 1e3
            if name == "dor":
                p = config.build(c)
                rows[c.traffic.mode]["optimal"] = optimal(p.topology, p.traffic, p.placement,
                                                          "garg_konemann").completion_time * 1e3
    doc = "docs/routing_paths.md"
    for mode, r in rows.items():
        assert set(r) == {"dor", "heuristic", "lp", "optimal"}
        head = r"\| 512 \| " + mode + r" \|"
        num = r" [0-9.]+x? \|"
        check_stated(doc, head + r" ([0-9.]+) \|", r["dor"], command=OPTIQ)
        check_stated(doc, head + num + r" ([0-9.]+) \|", r["heuristic"], command=OPTIQ)
        check_stated(doc, head + num * 2 + r" ([0-9.]+) \|", r["lp"], command=OPTIQ)
        check_stated(doc, head + num * 3 + r" ([0-9.]+) \|", r["optimal"], command=OPTIQ_BOUND)
        check_stated(doc, head + num * 4 + r" ([0-9.]+)x \|", r["dor"] / r["heuristic"], command=OPTIQ)
        check_stated(doc, head + num * 5 + r" ([0-9.]+)x \|", r["dor"] / r["lp"], command=OPTIQ)
        check_stated(doc, head + num * 6 + r" ([0-9.]+)x \|", r["lp"] / r["optimal"], command=OPTIQ_BOUND)
    # the hand check: 32 sources x 8 x 8 MB across the 128 links (2 GB/s) out of the slab A = B = 0
    check_stated(doc, r"routing beats 2\.048 GB / 256 GB/s = 8 ms, the bound's ([0-9.]+)\.", rows["disjoint"]["optimal"],
                 command=OPTIQ_BOUND)
    assert 32 * 8 * 8e6 / (128 * 2e9) * 1e3 == pytest.approx(rows["disjoint"]["optimal"], rel=1e-9)
