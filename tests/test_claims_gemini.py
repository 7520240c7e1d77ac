"""Claims of docs/gemini.md rerun: the studies' table ("Studies: predicted against measured"), the 4-D halo's
numbers of "Topaware", the explanations below the table and the fragmentation text's background numbers. Every
point is built from the shipped sweep file (or the one-off ``evaluator eval`` command the document writes) and
all are evaluated in one batch on the Blue Waters torus; each stated number must match to its printed precision
(tests/claims.py). The slides' own numbers in the document are marked ``<!-- cited -->`` (Fiedler's slides)."""

from __future__ import annotations

import math
import shlex

import numpy as np
import pytest

import evaluator as ev
from evaluator import config
from evaluator.jobs import evaluate_jobs
from evaluator.machines import load_machine
from evaluator.sweep import plan_sweep
from tests.claims import check_stated, precision, stated

DOC = "docs/gemini.md"
C = r"(?: <!-- cited -->)?"  # a line's cited marker, as it sits in the whitespace-normalised text

WRF = "sweep sweeps=wrf_grid_order ray.enabled=false"
SPEC = "sweep sweeps=specfem_on_node_share ray.enabled=false"
MILC = "sweep sweeps=milc_4d_placement ray.enabled=false"
HALO = "sweep sweeps=halo4d_placement ray.enabled=false"
VPIC = "sweep sweeps=vpic_topaware ray.enabled=false"
HALO1024 = HALO + " traffic.bytes_per_element=1024"
SPEC_PERIODIC = "traffic.periodic=true"
FRAG = "sweep sweeps=gemini_fragmentation ray.enabled=false"
FRAG_BG = FRAG + " background.fraction=0.05"
BW = "eval topology=machine topology.name=BlueWaters topology.partition=null routing=dor traffic=stencil"
HALO_ALPS = BW + " 'traffic.alpha=[144,144,144,288]' 'traffic.beta=[12,16,16,16]' placement=alps " \
                 "placement.tasks_per_node=32"
HALO_ALPS_C = HALO_ALPS + " 'placement.rank_order={method: grid_order, major: C, cell: [2,2,2,4], grid: [12,16,16,16]}'"
MILC_ALPS = BW + " 'traffic.alpha=[84,84,84,144]' 'traffic.beta=[14,14,14,24]' traffic.bytes_per_element=48 " \
                 "placement=alps placement.tasks_per_node=16"
MILC_ALPS_GO = MILC_ALPS + " 'placement.rank_order={method: grid_order, major: R, cell: [2,2,2,2], grid: [14,14,14,24]}'"
VPIC_ALPS = BW + " 'traffic.alpha=[1536,1536,1024]' 'traffic.beta=[48,48,32]' traffic.bytes_per_element=8 " \
                 "placement=alps placement.tasks_per_node=16 placement.node_class=XE"


def _sweep(*overrides):
    plan = plan_sweep(config.compose_sweep(list(overrides)))
    return [plan.point_config(i) for i in range(plan.n_points)]


def _eval(command):
    """The config of an ``evaluator eval`` command line as the document writes it."""
    return config.compose(shlex.split(command)[1:])


@pytest.fixture(scope="module")
def studies():
    """Every point of the five study sweeps, the 4-D halo at 1024 bytes per point, SPECFEM3D periodic, the one-off
    ALPS rows and the compact fragmentation point, in one batch: {name: (time s, on-node share, busiest node's
    injected bytes)} plus the configs and built placements."""
    cfgs = {}
    for key, sweep in (("wrf", "wrf_grid_order"), ("spec", "specfem_on_node_share"), ("milc", "milc_4d_placement"),
                       ("halo", "halo4d_placement"), ("vpic", "vpic_topaware")):
        for i, c in enumerate(_sweep(f"sweeps={sweep}")):
            cfgs[f"{key}{i}"] = c
    for i, c in enumerate(_sweep("sweeps=halo4d_placement", "traffic.bytes_per_element=1024")):
        if i in (0, 1, 4):
            cfgs[f"halo1024_{i}"] = c
    for i, c in enumerate(_sweep("sweeps=specfem_on_node_share", SPEC_PERIODIC)):
        cfgs[f"spec_periodic{i}"] = c
    cfgs["frag0"] = _sweep("sweeps=gemini_fragmentation")[0]
    for name, cmd in (("halo_alps", HALO_ALPS), ("halo_alps_C", HALO_ALPS_C), ("milc_alps", MILC_ALPS),
                      ("milc_alps_go", MILC_ALPS_GO), ("vpic_alps", VPIC_ALPS)):
        cfgs[name] = _eval(cmd)
    names = list(cfgs)
    built = [config.build(cfgs[n]) for n in names]
    p0 = built[0]
    res = ev.evaluate_batch(p0.topology, p0.routing, [p.traffic for p in built], [p.placement for p in built],
                            keep_link_load=True)
    inj = np.asarray(p0.topology.link_class_names()) == "injection"
    m = {k: np.asarray(v, dtype=float) for k, v in res.metrics.items() if k in
         ("completion_time", "total_bytes", "off_node_bytes")}
    out = {n: (m["completion_time"][j], 1.0 - m["off_node_bytes"][j] / m["total_bytes"][j],
               float(np.asarray(res.link_load[j], dtype=float)[inj].max())) for j, n in enumerate(names)}
    return out, cfgs, dict(zip(names, built))


def _pair(head: str, a: float, b: float, cmd_a: str, cmd_b: str, ratio: str) -> None:
    """A row ``head A / B ms | ratio``: both times (ms) and A / B (``ratio``: the pattern of its cell, whose group
    is the number), each against the command that gives it (the ratio against ``cmd_a``'s)."""
    ms = 1e3
    check_stated(DOC, head + r"([0-9.]+) / [0-9.]+ ms", a * ms, command=cmd_a)
    check_stated(DOC, head + r"[0-9.]+ / ([0-9.]+) ms", b * ms, command=cmd_b)
    check_stated(DOC, head + r"[0-9.]+ / [0-9.]+ ms \| " + ratio, a / b, command=cmd_a)


def test_studies_table(studies):
    r, _, _ = studies
    t = {k: v[0] for k, v in r.items()}
    us, ns, ms = 1e6, 1e9, 1e3
    # WRF, SPECFEM3D
    check_stated(DOC, r"190,384` \| ([0-9.]+) / [0-9.]+ us", t["wrf0"] * us, command=WRF)
    check_stated(DOC, r"190,384` \| [0-9.]+ / ([0-9.]+) us", t["wrf1"] * us, command=WRF)
    check_stated(DOC, r"[0-9.]+ us \| \*\*([0-9.]+)x\*\*", t["wrf0"] / t["wrf1"], command=WRF)
    check_stated(DOC, r"-c 4,1` \| ([0-9.]+) / [0-9.]+ ns", t["spec0"] * ns, command=SPEC)
    check_stated(DOC, r"-c 4,1` \| [0-9.]+ / ([0-9.]+) ns", t["spec1"] * ns, command=SPEC)
    check_stated(DOC, r"[0-9.]+ ns \| \*\*([0-9.]+)x\*\*", t["spec0"] / t["spec1"], command=SPEC)
    check_stated(DOC, r"on-node byte share \| ([0-9.]+)% /", r["spec0"][1] * 100, command=SPEC)
    check_stated(DOC, r"on-node byte share \| [0-9.]+% / ([0-9.]+)%", r["spec1"][1] * 100, command=SPEC)
    # MILC on Topaware's nodes and on ALPS nodes (the one-off rows)
    check_stated(DOC, r"2,2,2,2` \| ([0-9.]+) / [0-9.]+ ms", t["milc0"] * ms, command=MILC)
    check_stated(DOC, r"2,2,2,2` \| [0-9.]+ / ([0-9.]+) ms", t["milc1"] * ms, command=MILC)
    check_stated(DOC, r"2,2,2,2` \| [0-9.]+ / [0-9.]+ ms \| \*\*([0-9.]+)x", t["milc0"] / t["milc1"], command=MILC)
    check_stated(DOC, r"per task\) \| ([0-9.]+) / [0-9.]+ ms", t["milc0"] * ms, command=MILC)
    check_stated(DOC, r"per task\) \| [0-9.]+ / ([0-9.]+) ms", t["milc2"] * ms, command=MILC)
    check_stated(DOC, r"per task\) \| [0-9.]+ / [0-9.]+ ms \| \*\*([0-9.]+)x", t["milc0"] / t["milc2"], command=MILC)
    check_stated(DOC, r"grid_order / Topaware \| \| \*\*([0-9.]+)x", t["milc1"] / t["milc2"], command=MILC)
    row = r"SMP / grid_order / Topaware \| "
    check_stated(DOC, row + r"([0-9.]+) / [0-9.]+ / [0-9.]+ ms", t["milc_alps"] * ms, command=MILC_ALPS)
    check_stated(DOC, row + r"[0-9.]+ / ([0-9.]+) / [0-9.]+ ms", t["milc_alps_go"] * ms, command=MILC_ALPS_GO)
    check_stated(DOC, row + r"[0-9.]+ / [0-9.]+ / ([0-9.]+) ms", t["milc2"] * ms, command=MILC)
    check_stated(DOC, row + r"[0-9.]+ / [0-9.]+ / [0-9.]+ ms \| \*\*([0-9.]+)x", t["milc_alps"] / t["milc_alps_go"],
                 command=MILC_ALPS_GO)
    check_stated(DOC, row + r"[0-9.]+ / [0-9.]+ / [0-9.]+ ms \| \*\*[0-9.]+x\*\*, \*\*([0-9.]+)x",
                 t["milc_alps"] / t["milc2"], command=MILC_ALPS)
    check_stated(DOC, row + r"[0-9.]+ / [0-9.]+ / [0-9.]+ ms \| \*\*[0-9.]+x\*\*, \*\*[0-9.]+x\*\*, ([0-9.]+)x",
                 t["milc_alps_go"] / t["milc2"], command=MILC_ALPS_GO)
    # 4-D halo: C-numbered code (points 2, 3), R-numbered (0, 1), Topaware (4)
    _pair(r"`-C -c 2,2,2,4` \| ", t["halo2"], t["halo3"], HALO, HALO, r"\*\*([0-9.]+)x")
    _pair(r"\| \| SMP / Topaware \| ", t["halo2"], t["halo4"], HALO, HALO, r"\*\*([0-9.]+)x")
    row = r"`-R -c 2,2,2,4` / Topaware \| "
    check_stated(DOC, row + r"([0-9.]+) / [0-9.]+ / [0-9.]+ ms", t["halo0"] * ms, command=HALO)
    check_stated(DOC, row + r"[0-9.]+ / ([0-9.]+) / [0-9.]+ ms", t["halo1"] * ms, command=HALO)
    check_stated(DOC, row + r"[0-9.]+ / [0-9.]+ / ([0-9.]+) ms", t["halo4"] * ms, command=HALO)
    check_stated(DOC, row + r"[0-9.]+ / [0-9.]+ / [0-9.]+ ms \| ([0-9.]+)x", t["halo0"] / t["halo1"], command=HALO)
    check_stated(DOC, row + r"[0-9.]+ / [0-9.]+ / [0-9.]+ ms \| [0-9.]+x, ([0-9.]+)x", t["halo0"] / t["halo4"],
                 command=HALO)
    # VPIC
    _pair(r"nodes / Topaware \| ", t["vpic0"], t["vpic1"], VPIC, VPIC, r"\*\*([0-9.]+)x")
    _pair(r"ALPS order / Topaware \| ", t["vpic_alps"], t["vpic1"], VPIC_ALPS, VPIC, r"([0-9.]+)x")



def test_topaware_section_4d_halo(studies):
    """"Topaware": the 4-D halo at the stencil's default 1024 bytes per point, on Topaware's nodes and on ALPS's."""
    r, cfgs, _ = studies
    t = {k: v[0] for k, v in r.items()}
    check_stated(DOC, r"SMP on Topaware's nodes ([0-9.]+) s", t["halo1024_0"], command=HALO1024)
    check_stated(DOC, r"2,2,2,4` on them ([0-9.]+) s", t["halo1024_1"], command=HALO1024)
    check_stated(DOC, r"on them [0-9.]+ s, Topaware ([0-9.]+) s", t["halo1024_4"], command=HALO1024)
    check_stated(DOC, r"Topaware [0-9.]+ s \(([0-9.]+)x SMP\)", t["halo1024_0"] / t["halo1024_4"], command=HALO1024)
    check_stated(DOC, r"nodes, takes ([0-9.]+) s against SMP's", t["halo_alps_C"], command=HALO_ALPS_C)
    check_stated(DOC, r"against SMP's ([0-9.]+) s there", t["halo_alps"], command=HALO_ALPS)
    check_stated(DOC, r"`sweeps/halo4d_placement.yaml`, ([0-9]+) bytes per point\)",
                 cfgs["halo0"].traffic.bytes_per_element, command=HALO)


def test_study_setup_numbers(studies):
    """The machine as the studies see it, the WRF tile the slides' mesh gives, SPECFEM3D's counted shares."""
    r, cfgs, built = studies
    bw = load_machine("BlueWaters")
    check_stated(DOC, r"DOR, X/Z ([0-9.]+) GB/s, Y half", bw.link_bandwidth[0] / 1e9, command="bluewaters.yaml")
    assert bw.link_bandwidth[1] == bw.link_bandwidth[0] / 2 == bw.link_bandwidth[2] / 2
    check_stated(DOC, r"Y half, NIC ([0-9.]+) GB/s\)", bw.injection_bandwidth / 1e9, command="bluewaters.yaml")
    mesh = float(stated(DOC, r"([0-9]+) divides by neither 190 nor 384")[0])
    beta = list(cfgs["wrf0"].traffic.beta)  # (y, x) tasks
    check_stated(DOC, r"the slides' mesh gives ([0-9.]+) x [0-9.]+\)", mesh / beta[0], command=WRF)
    check_stated(DOC, r"the slides' mesh gives [0-9.]+ x ([0-9.]+)\)", mesh / beta[1], command=WRF)
    check_stated(DOC, r"give ([0-9.]+)% / [0-9.]+%, the same rounded", r["spec_periodic0"][1] * 100,
                 command=SPEC_PERIODIC)
    check_stated(DOC, r"give [0-9.]+% / ([0-9.]+)%, the same rounded", r["spec_periodic1"][1] * 100,
                 command=SPEC_PERIODIC)
    # the counted shares: a node's best share of (task, neighbour) relations inside it, 4 per task
    rows, cols = cfgs["spec0"].traffic.beta
    for key, pattern in (("spec1", r"neighbour pairs inside \(([0-9.]+)%\)"), ("spec0", r"31 of 64 \(([0-9.]+)%\)")):
        node = np.asarray(built[key].placement.task_node)[: rows * cols].reshape(rows, cols)
        inside = np.zeros(node.max() + 1)
        for a, b in ((node[1:], node[:-1]), (node[:, 1:], node[:, :-1])):
            same = (a == b).ravel()
            np.add.at(inside, a.ravel()[same], 2)  # both directions of the pair
        per_node = np.bincount(node.ravel())
        share = inside.max() / (4 * per_node.max())
        check_stated(DOC, pattern, share * 100, command=SPEC)


def test_why_predictions_differ(studies):
    r, _, _ = studies
    t = {k: v[0] for k, v in r.items()}
    nic = load_machine("BlueWaters").injection_bandwidth
    # run time includes compute: the share f of communication the measured speed-ups need
    rw, rs, rv, ra = t["wrf0"] / t["wrf1"], t["spec0"] / t["spec1"], t["vpic0"] / t["vpic1"], t["vpic_alps"] / t["vpic1"]
    check_stated(DOC, r"WRF's 1\.18x needs" + C + r" f = ([0-9.]+)", (1 - 1 / 1.18) / (1 - 1 / rw), command=WRF)
    check_stated(DOC, r"SPECFEM3D's 1\.16x f = ([0-9.]+)", (1 - 1 / 1.16) / (1 - 1 / rs), command=SPEC)
    check_stated(DOC, r"VPIC's 1\.05x f = ([0-9.]+)", (1 - 1 / 1.05) / (1 - 1 / rv), command=VPIC)
    check_stated(DOC, r"the prediction is ([0-9.]+)x with", 1 / (0.92 + 0.08 / rv), command=VPIC)
    check_stated(DOC, r"the prediction is [0-9.]+x with ([0-9.]+)x", rv, command=VPIC)
    check_stated(DOC, r"x with [0-9.]+x, ([0-9.]+)x" + C + " with", 1 / (0.92 + 0.08 / ra), command=VPIC_ALPS)
    check_stated(DOC, r"x" + C + r" with ([0-9.]+)x\)\. These", ra, command=VPIC_ALPS)
    # the NIC: the busiest node's injected bytes
    check_stated(DOC, r"the busiest node sends ([0-9.]+) MB", r["halo4"][2] / 1e6, command=HALO)
    check_stated(DOC, r"MB through a ([0-9.]+) GB/s NIC", nic / 1e9, command="bluewaters.yaml")
    check_stated(DOC, r"GB/s NIC, ([0-9.]+) ms of the", r["halo4"][2] / nic * 1e3, command=HALO)
    check_stated(DOC, r"ms of the ([0-9.]+) ms\. Gemini's", t["halo4"] * 1e3, command=HALO)
    check_stated(DOC, r"injects at about ([0-9.]+) GB/s", r["halo4"][2] / (t["halo2"] / 1.89) / 1e9, command=HALO)
    check_stated(DOC, r"GB/s \(([0-9.]+) MB in", r["halo4"][2] / 1e6, command=HALO)
    check_stated(DOC, r"MB in ([0-9.]+) ms / 1\.89\)", t["halo2"] * 1e3, command=HALO)
    check_stated(DOC, r"the NIC takes ([0-9.]+) ms of", r["milc2"][2] / nic * 1e3, command=MILC)
    check_stated(DOC, r"the NIC takes [0-9.]+ ms of ([0-9.]+) ms", t["milc2"] * 1e3, command=MILC)
    check_stated(DOC, r"ms and ([0-9.]+) ms of", r["vpic1"][2] / nic * 1e3, command=VPIC)
    check_stated(DOC, r"ms and [0-9.]+ ms of ([0-9.]+) ms\)", t["vpic1"] * 1e3, command=VPIC)
    # on-node shares
    for key, pattern, command in (("wrf", "WRF", WRF), ("spec", "SPECFEM3D", SPEC)):
        check_stated(DOC, pattern + r" ([0-9]+)% -> [0-9]+%", r[key + "0"][1] * 100, command=command)
        check_stated(DOC, pattern + r" [0-9]+% -> ([0-9]+)%", r[key + "1"][1] * 100, command=command)
    check_stated(DOC, r"4-D halo ([0-9]+)% -> [0-9]+%", r["halo2"][1] * 100, command=HALO)
    check_stated(DOC, r"4-D halo [0-9]+% -> ([0-9]+)%", r["halo3"][1] * 100, command=HALO)
    check_stated(DOC, r"stay on the node \(([0-9]+)% against", r["halo3"][1] * 100, command=HALO)
    check_stated(DOC, r"stay on the node \([0-9]+% against ([0-9]+)%\)", r["halo2"][1] * 100, command=HALO)
    # which nodes, rank numbering
    check_stated(DOC, r"gives for grid_order \(([0-9.]+)x\)", t["milc0"] / t["milc1"], command=MILC)
    check_stated(DOC, r"match Topaware's ([0-9.]+)x", t["milc0"] / t["milc2"], command=MILC)
    check_stated(DOC, r"grid_order gives ([0-9.]+)x and Topaware", t["milc_alps"] / t["milc_alps_go"],
                 command=MILC_ALPS_GO)
    check_stated(DOC, r"and Topaware ([0-9.]+)x\. `placement=fragmented`", t["milc_alps"] / t["milc2"],
                 command=MILC_ALPS)
    check_stated(DOC, r"no better than SMP \(([0-9.]+)x, the slides'", t["halo2"] / t["halo3"], command=HALO)
    check_stated(DOC, r"R-numbered code gains ([0-9.]+)x over its SMP", t["halo0"] / t["halo1"], command=HALO)


def test_fragmentation_rows_and_background(studies):
    """The fragmentation table's occupancies (the sweep's axis), the background's slow-down of the compact job and
    every cell of the background columns, the share above which the job never finishes (the second command with another fraction)."""
    r, _, _ = studies
    plan = plan_sweep(config.compose_sweep(["sweeps=gemini_fragmentation"]))
    occupancies = sorted({float(plan.point_config(i).placement.occupancy) for i in range(plan.n_points)})
    for occ in occupancies[1:]:
        check_stated(DOC, r"\| (" + f"{occ:g}".replace(".", r"\.") + r") \| [0-9.]+ \| [0-9.]+ \|", occ, command=FRAG)
    rows = {0.0: r"0 \(empty\)", **{o: f"{o:g}".replace(".", r"\.") for o in occupancies[1:]}}
    topo = None

    def with_background(fraction, point=0):
        """The job's time at the sweep's ``point`` with a uniform background (the second command)."""
        nonlocal topo
        c = plan_sweep(config.compose_sweep(["sweeps=gemini_fragmentation", f"background.fraction={fraction}"]))
        c = c.point_config(point)
        jp = config.build_jobs(c, topo)
        topo = jp.topology
        ds = evaluate_jobs(jp.topology, list(jp.jobs), jp.routing, jp.background,
                           exclusive_nodes=jp.exclusive_nodes, interference=False)
        return float(c.placement.occupancy), int(c.placement.seed), float(ds["completion_time"].values.ravel()[0])

    for i in range(plan.n_points):  # every cell of the background columns
        occ, seed, t = with_background(0.05, i)
        cell = r"\| " + rows[occ] + r" \|" + r" [0-9.-]+ \|" * (4 + seed) + r" ([0-9.]+) \|"
        check_stated(DOC, cell, t * 1e6, command=FRAG_BG)
        if (occ, seed) == (0.0, 0):
            check_stated(DOC, r"the compact job slows ([0-9.]+)x", t / r["frag0"][0], command=FRAG_BG)
    (limit,) = stated(DOC, r"more than about ([0-9.]+) fills Blue Waters' Y links")
    x, h = float(limit), precision(limit)
    assert math.isfinite(with_background(x - h)[2]), f"{DOC}: the job finishes below about {limit}"
    assert math.isinf(with_background(x + h)[2]), f"{DOC}: the job never finishes above about {limit}"
