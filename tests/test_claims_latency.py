"""Numbers docs/latency.md states, rerun (tests/claims.py): the evaluator's side of its tables and examples (and
README.md's deviation from SMPI, the same as this page's).

SMPI's numbers there are measurements of SimGrid (tests/test_smpi_collectives.py compares the two sides); the table
marks them cited, and the claims below read them only to check that the document's "in both tools" holds for them."""

from __future__ import annotations

import functools
import re

import numpy as np
import pytest

import evaluator as ev
from claims import ROOT, check_output_block, check_stated, stated
from evaluator import placement, traffic
from evaluator.latency import Latency

DOC = "docs/latency.md"
PY = "ds = ev.evaluate(topo, traffic.collective(\"allreduce\", alg, n_tasks=16, nbytes=4096.0)"
CLI = ("evaluator eval topology=torus topology.dims=[16] topology.link_bandwidth=1e9 topology.injection_bandwidth=1e15 "
       "+topology.latency.link.torus-dim0=1e-6 routing=dor routing.tie=positive traffic=collective "
       "traffic.op=allreduce traffic.algorithm=ring traffic.bytes=4096 placement=linear "
       "sharing=max_min fairness=rtt progression=rank save=false")
BOUND = ("evaluator eval topology=torus topology.dims=[8] topology.link_bandwidth=1e9 routing=dor traffic=collective "
         "traffic.op=allreduce traffic.algorithm=ring traffic.bytes=8192 placement=linear save=false")
LAT = Latency(link=(("torus-dim0", 1e-6),), eager_threshold=65535.0, rendezvous_round_trips=0, eager_buffered=False)
COLUMNS = [("allreduce", "ring"), ("allreduce", "recursive_doubling"), ("allreduce", "rabenseifner"),
           ("broadcast", "binomial"), ("broadcast", "scatter_recursive_doubling_allgather"),
           ("broadcast", "scatter_ring_allgather")]
ROWS = ["16", "1,024", "4,096", "16,384", "65,536", "1,048,576", "67,108,864"]
SIZES = sorted({int(r.replace(",", "")) for r in ROWS} | {262144})
"""The table's sizes, and 256 kB (docs/collectives.md states the broadcast's winner there too)."""


def _topology():
    return ev.torus([16], link_bandwidth=1e9, injection_bandwidth=1e15).with_latency(LAT)


def _max_min(op: str, alg: str, nbytes: float) -> float:
    topo = _topology()
    ds = ev.evaluate(topo, traffic.collective(op, alg, n_tasks=16, nbytes=nbytes), placement.linear(topo, 16),
                     ev.dor(tie="positive"), sharing="max_min", fairness="rtt", progression="rank")
    return float(ds.time_max_min)


@functools.lru_cache(maxsize=None)
def winner_table() -> dict[str, dict[tuple[str, str], dict[int, float]]]:
    """The table's computation (the Python example's evaluation for every size and column), as one batch:
    ``{"max_min" | "with_latency": {(op, algorithm): {bytes: us}}}``. Also read by the claims of
    docs/collectives.md and docs/traces.md, which state its winners."""
    topo = _topology()
    trs = [traffic.collective(op, alg, n_tasks=16, nbytes=float(n)) for n in SIZES for op, alg in COLUMNS]
    res = ev.evaluate_batch(topo, ev.dor(tie="positive"), trs, placement.linear(topo, 16), sharing="max_min",
                            fairness="rtt", progression="rank")
    out = {}
    for key, metric in (("max_min", "time_max_min"), ("with_latency", "time_with_latency")):
        t = np.asarray(res.metrics[metric]).reshape(len(SIZES), len(COLUMNS)) * 1e6
        out[key] = {c: {n: float(t[i, j]) for i, n in enumerate(SIZES)} for j, c in enumerate(COLUMNS)}
    return out


def winners(op: str, key: str = "max_min") -> dict[int, str]:
    """Per size, the fastest algorithm of ``op`` (the table's columns)."""
    t = winner_table()[key]
    return {n: min((alg for o, alg in COLUMNS if o == op), key=lambda a: t[(op, a)][n]) for n in SIZES}


def smpi_winners(op: str) -> dict[int, str]:
    """Per row of docs/latency.md's table, the fastest algorithm of ``op`` by SMPI's (cited) numbers there."""
    text = " ".join((ROOT / DOC).read_text().split())
    out = {}
    for row in ROWS:
        cells = re.search(rf"\| {re.escape(row)} \|((?: [^|]+ \|){{6}})", text).group(1).split("|")[:-1]
        smpi = [float(c.split("/")[1].replace(",", "")) for c in cells]
        algs = [(alg, v) for (o, alg), v in zip(COLUMNS, smpi) if o == op]
        out[int(row.replace(",", ""))] = min(algs, key=lambda a: a[1])[0]
    return out


def _kb(n: int) -> float:
    return n / 1024


@pytest.mark.parametrize("row", ROWS)
def test_winner_table_rows(row):
    """Every row of the table, every column's evaluator side (the bold cells: each operation's fastest)."""
    nbytes = int(row.replace(",", ""))
    t = winner_table()["max_min"]
    for k, (op, alg) in enumerate(COLUMNS):
        want = t[(op, alg)][nbytes]
        pattern = rf"\| {re.escape(row)} \|" + r"(?: [^|]+ \|)" * k + r" (\**[0-9.,]+\**) /"
        cell = stated(DOC, pattern)[0]
        bold, number = cell.startswith("**"), cell.strip("*")
        if "." in number:  # four significant digits with decimals: to the printed precision
            check_stated(DOC, pattern.replace(r"(\**[0-9.,]+\**)", r"\**([0-9.,]+)\**"), want, command=PY)
        else:  # 1,996 ... 1,007,000: four significant digits
            assert float(number.replace(",", "")) == float(f"{want:.4g}"), (row, alg, number, want)
        assert bold == (winners(op)[nbytes] == alg), (row, alg, cell)


def test_winners_prose():
    """The paragraph under the table: who wins where, in both tools, and what the phase-synchronous model misses."""
    ar, bc = winners("allreduce"), winners("broadcast")
    for op, ours in (("allreduce", ar), ("broadcast", bc)):
        theirs = smpi_winners(op)
        assert {n: ours[n] for n in theirs} == theirs, (op, ours, theirs)  # "in both tools"
    rd = [n for n in SIZES if ar[n] == "recursive_doubling"]
    ring_from = min(n for n in SIZES if all(ar[m] == "ring" for m in SIZES if m >= n))
    assert rd == [n for n in SIZES if n < ring_from] and "rabenseifner" not in ar.values()
    check_stated(DOC, r"Recursive doubling wins the allreduce up to ([0-9]+) kB", _kb(max(rd)), command=PY)
    check_stated(DOC, r"up to 1 kB and the ring from ([0-9]+) kB on, in both tools; on this ring", _kb(ring_from),
                 command=PY)
    mpich = min(n for n in range(1, 1 << 16) if traffic.select_algorithm("allreduce", 16, n)[0] == "rabenseifner")
    check_stated(DOC, r"Rabenseifner \(MPICH's choice above ([0-9]+) kB\)", _kb(mpich - 1), command=PY)
    scatter_from = min(n for n in SIZES if bc[n] == "scatter_ring_allgather")
    dips = [n for n in SIZES if n > scatter_from and bc[n] != "scatter_ring_allgather"]
    assert set(bc.values()) == {"binomial", "scatter_ring_allgather"} and len(dips) == 1
    check_stated(DOC, r"The binomial broadcast wins up to ([0-9]+) kB, the scatter", _kb(max(
        n for n in SIZES if n < scatter_from)), command=PY)
    check_stated(DOC, r"the scatter \+ ring broadcast from ([0-9]+) kB on, except", _kb(scatter_from), command=PY)
    check_stated(DOC, r"kB on, except at ([0-9]+) kB, where the binomial", _kb(dips[0]), command=PY)
    # the phase-synchronous model (time_with_latency): the sizes where its broadcast winner differs
    synch = winners("broadcast", "with_latency")
    missed = sorted(n for n in SIZES if synch[n] != bc[n])
    assert len(missed) == 2 and synch[dips[0]] == "scatter_ring_allgather", (missed, synch)
    check_stated(DOC, r"misses that ([0-9]+) kB dip", _kb(missed[1]), command=PY)
    check_stated(DOC, r"kB dip and the ([0-9]+) kB change", _kb(missed[0]), command=PY)


def test_python_example_and_cli(capsys):
    from evaluator import cli

    for alg, value in (("ring", "3.768e-05"), ("recursive_doubling", "7.644e-05"), ("rabenseifner", "4.638e-05")):
        got = _max_min("allreduce", alg, 4096.0)
        check_stated(DOC, rf"{alg} ([0-9.]+)e-05", got * 1e5, command=PY, count=None)
        assert f"{got:.4g}" == value
        assert got * 1e6 == pytest.approx(winner_table()["max_min"][("allreduce", alg)][4096], rel=1e-9)
    assert cli.main(CLI.split()[1:]) == 0
    assert check_output_block(DOC, CLI, capsys.readouterr().out) >= 4
    cmd = "evaluator eval topology=torus topology.dims=[16]"
    topo = ev.torus([16], link_bandwidth=1e9, injection_bandwidth=1e15).with_latency(
        Latency(link=(("torus-dim0", 1e-6),)))
    ds = ev.evaluate(topo, traffic.collective("allreduce", "auto", n_tasks=16, nbytes=4096.0),
                     placement.linear(topo, 16), ev.dor(tie="positive"))
    assert ds.attrs["traffic"] == "allreduce auto(mpich) -> rabenseifner"
    check_stated(DOC, r"-> rabenseifner`, ([0-9.]+) us with latency", float(ds.time_with_latency) * 1e6, command=cmd)


def test_the_bound_of_the_opening(capsys):
    """The opening's example: the bandwidth bound of a ring allreduce of 8 kB on 8 ranks at 1 GB/s."""
    from evaluator import cli

    assert cli.main(BOUND.split()[1:]) == 0
    m = re.search(r"^completion\s+([0-9.]+) us", capsys.readouterr().out, re.M)
    check_stated(DOC, r"and ([0-9.]+) us by the bound", float(m.group(1)), command=BOUND)


def test_jobs_example():
    from evaluator.jobs import Job, evaluate_jobs, job_summary_lines

    t = ev.torus([8], wrap=False)
    a = Job(traffic.from_flows(2, [0], [1], [4e6]), placement.explicit(t, np.array([0, 7])), name="a")
    b = Job(traffic.from_flows(4, [0, 1], [2, 3], [4e6, 4e6]), placement.explicit(t, np.array([1, 2, 5, 6])), name="b")
    cmd = 'job_summary_lines(evaluate_jobs(t, [a, b], "dor", sharing="max_min", fairness="flow"))'
    flow = evaluate_jobs(t, [a, b], "dor", sharing="max_min", fairness="flow")
    job = evaluate_jobs(t, [a, b], "dor", sharing="max_min", fairness="job")
    assert check_output_block(DOC, cmd, "\n".join(job_summary_lines(flow))) == 6
    check_stated(DOC, r"finishes at ([0-9.]+) ms \(x", float(job.time_max_min[0]) * 1e3, command=cmd)
    check_stated(DOC, r"a third and takes ([0-9.]+) ms", float(flow.time_max_min[0]) * 1e3, command=cmd)


def test_collective_sizes_study(tmp_path):
    """docs/latency.md's three-network table: the study run in-process, the cells with numbers rechecked."""
    from evaluator import cli

    assert cli.main(["sweep", "sweeps=collective_sizes", "ray.enabled=false", f"sweep.output_dir={tmp_path}",
                     "--no-progress"]) == 0
    ds = ev.open_results(str(next(tmp_path.rglob("*.nc"))))
    t = ds.time_with_latency
    cmd = "evaluator sweep sweeps=collective_sizes"

    def at(net, alg, size):
        return float(t.sel({"network": net, "traffic.algorithm": alg, "traffic.bytes": str(size)}
                           if ds["traffic.bytes"].dtype.kind in "US" else
                           {"network": net, "traffic.algorithm": alg, "traffic.bytes": size}))

    for net, pat in (("torus-dor", r"recursive doubling \(MPICH's Rabenseifner: ([0-9.]+)x\)"),
                     ("dragonfly-minimal", r"\| recursive doubling \(([0-9.]+)x\) \| recursive doubling \(")):
        check_stated(DOC, pat, at(net, "rabenseifner", 4096) / at(net, "recursive_doubling", 4096), command=cmd)
    check_stated(DOC, r"\| recursive doubling \([0-9.]+x\) \| recursive doubling \(([0-9.]+)x\) \|",
                 at("fat_tree-dmodk", "rabenseifner", 4096) / at("fat_tree-dmodk", "recursive_doubling", 4096),
                 command=cmd)
    check_stated(DOC, r"ring \(MPICH's Rabenseifner: ([0-9.]+)x\)",
                 at("dragonfly-minimal", "rabenseifner", 4194304) / at("dragonfly-minimal", "ring", 4194304),
                 command=cmd)
    for net in ("torus-dor", "dragonfly-minimal", "fat_tree-dmodk"):
        for size, best in ((1024, "recursive_doubling"), (4096, "recursive_doubling"), (16384, "rabenseifner")):
            times = {a: at(net, a, size) for a in ("ring", "recursive_doubling", "rabenseifner")}
            assert min(times, key=times.get) == best, (net, size, times)
    # the prose under the table: MPICH's switch (64 ranks), where the ring overtakes on the Dragonfly, the 16-ring
    switch = min(n for n in range(1, 1 << 16) if traffic.select_algorithm("allreduce", 64, n)[0] == "rabenseifner")
    check_stated(DOC, r"Rabenseifner at ([0-9]+) kB comes a size too early", _kb(switch - 1), command=cmd)
    sizes = sorted(int(s) for s in np.asarray(ds["traffic.bytes"].values))
    overtakes = min(n for n in sizes if at("dragonfly-minimal", "ring", n) < at("dragonfly-minimal", "rabenseifner", n))
    check_stated(DOC, r"the ring overtakes Rabenseifner at ([0-9]+) MiB", overtakes / 2 ** 20, command=cmd)
    ar = winners("allreduce")
    ring_from = min(n for n in SIZES if all(ar[m] == "ring" for m in SIZES if m >= n))
    check_stated(DOC, r"on the 16-node ring above the ring won from ([0-9]+) kB", _kb(ring_from), command=PY)


# "Against SMPI" and the first limit: the deviations of the SMPI-like model from SMPI 3.32 (what
# tests/test_smpi_collectives.py and `evaluator bench --only time` run), rerun through SMPI: p = 8 and 16 at every size
# (about 6 s). The max-min simulations at p = 64 (+2.3 %, -0.5 %) take a minute at the suite's -O0 and are not rerun
# (the section's whole p = 64 sweep, rechecked 2026-11-28: every case within 1.563 % but that +2.316 %).
SMPI_CMD = "evaluator bench --only time"
SMPI_ALGS = [("allreduce", "ring", {}, None), ("allreduce", "recursive_doubling", {}, None),
             ("allreduce", "rabenseifner", {}, None), ("alltoall", "pairwise", {}, None),
             ("alltoall", "bruck", {}, None), ("alltoall", "scattered", {"throttle": 4}, "mvapich2_scatter_dest"),
             ("alltoall", "ring", {}, "ring"), ("allgather", "ring", {}, None),
             ("allgather", "recursive_doubling", {}, None), ("allgather", "bruck", {}, "bruck"),
             ("allgather", "direct_ring", {}, "ring"), ("broadcast", "binomial", {}, None),
             ("broadcast", "scatter_recursive_doubling_allgather", {}, "scatter_rdb_allgather"),
             ("broadcast", "scatter_ring_allgather", {}, "scatter_LR_allgather")]
"""Every algorithm both tools implement (the section's list), with SMPI's name where it is not
evaluator.bench.smpi.smpi_algorithm's (the selections' algorithms, as tests/test_smpi_collectives.py's NEW)."""


def _smpi_sizes(op: str, alg: str, p: int) -> list[int]:
    """8 B to 1 MiB as tests/test_smpi_collectives.py runs them (the ring allreduce from 8 p B: SMPI runs another
    schedule when p does not divide the size; alltoall up to 16 MiB per rank)."""
    out = [8 * p if (op, alg) == ("allreduce", "ring") else 8, 8192, 65536, 1 << 20]
    return [s for s in out if not (op == "alltoall" and s * p > 1 << 24)]


@functools.lru_cache(maxsize=None)
def smpi_comparison(p: int) -> dict:
    """``{(op, alg, bytes): (SMPI s, time_max_min s, time_with_latency s)}`` on a ring of ``p`` nodes at 1 us and
    1 GB/s, every algorithm and size of the section."""
    from evaluator.bench import smpi

    topo = ev.torus([p], link_bandwidth=1e9, injection_bandwidth=1e15).with_latency(LAT)
    plat = smpi.torus_platform([p], 1e9, 1e-6)
    cases, refs = [], []
    for op, alg, params, name in SMPI_ALGS:
        ss = _smpi_sizes(op, alg, p)
        refs += smpi.run_collectives(plat, [(op, name or smpi.smpi_algorithm(op, alg, p), p, s) for s in ss], p)
        cases += [(op, alg, params, s) for s in ss]
    trs = [traffic.collective(op, alg, n_tasks=p, nbytes=float(s), **prm) for op, alg, prm, s in cases]
    res = ev.evaluate_batch(topo, ev.dor(tie="positive"), trs, placement.linear(topo, p), sharing="max_min",
                            fairness="rtt", progression="rank")
    mm, wl = (np.asarray(res.metrics[k], dtype=float) for k in ("time_max_min", "time_with_latency"))
    return {(op, alg, s): (ref, float(a), float(b)) for (op, alg, _, s), ref, a, b in zip(cases, refs, mm, wl)}


def _dev(p: int, op: str, alg: str, nbytes: int, which: int = 1) -> float:
    """Our time (1: time_max_min, 2: time_with_latency) against SMPI's, in percent."""
    got = smpi_comparison(p)[(op, alg, nbytes)]
    return (got[which] / got[0] - 1) * 100


needs_smpi = pytest.mark.skipif("not __import__('evaluator.bench.smpi', fromlist=['x']).available()",
                                reason="SMPI (smpicc, smpirun: libsimgrid-dev) not installed")


@needs_smpi
def test_smpi_max_min_within_envelope():
    """``time_max_min`` within 1.6 % of SMPI (p = 8 and 16, every algorithm and size), the largest at the smallest
    messages (SMPI's 16-byte envelope: 1.6 % at 8 B, nothing above 64 kB)."""
    worst, above = [], []
    for p in (8, 16):
        for (op, alg, s), (ref, mm, _) in smpi_comparison(p).items():
            worst.append((abs(mm / ref - 1) * 100, s, p, op, alg))
            if s > 65536:
                above.append(abs(mm / ref - 1) * 100)
    top = max(worst)
    check_stated(DOC, r"`time_max_min` is within ([0-9.]+) % of SMPI", top[0], command="tests/test_smpi_collectives.py")
    check_stated("README.md", r"ranks, is within ([0-9.]+) % \(`tests/test_smpi_collectives.py`; 64 ranks", top[0],
                 command="tests/test_smpi_collectives.py")
    check_stated(DOC, r"not modelled \(([0-9.]+) % at 8 B", top[0], command=SMPI_CMD)
    check_stated(DOC, r"% at ([0-9]+) B on links of", top[1], command=SMPI_CMD)  # the largest deviation: at 8 B
    assert 65536 in {s for (_, _, s) in smpi_comparison(8)}  # 64 kB is run, the last size not "above"
    assert max(above) < 0.05, above  # "nothing": below the printed 0.1 %
    check_stated(DOC, r"nothing above ([0-9]+) kB\)", 65536 / 1024, command=SMPI_CMD)


@needs_smpi
def test_smpi_phase_synchronous_model():
    """``time_with_latency`` against SMPI: within 0.1 % at 1 MiB (p = 8 and 16), the binomial broadcast and the
    pairwise alltoall of 8 kB off (the alltoall at p = 64 too: no flow simulation, fast), and progression=rank
    (time_max_min) removing the first at p = 8."""
    from evaluator.bench import smpi

    mib = [abs(_dev(p, op, alg, s, 2)) for p in (8, 16) for (op, alg, s) in smpi_comparison(p) if s == 1 << 20]
    check_stated(DOC, r"\(within ([0-9.]+) % at 1 MiB\)", max(mib), command=SMPI_CMD)
    ref, _, wl = smpi_comparison(8)[("broadcast", "binomial", 8192)]
    check_stated(DOC, r"<!-- input --> takes ([0-9.]+)x our step sum at p = 8", ref / wl, command=SMPI_CMD)
    check_stated(DOC, r"is off by ([0-9.]+) % at p = 8", _dev(8, "alltoall", "pairwise", 8192, 2), command=SMPI_CMD)
    topo = ev.torus([64], link_bandwidth=1e9, injection_bandwidth=1e15).with_latency(LAT)
    ds = ev.evaluate(topo, traffic.collective("alltoall", "pairwise", n_tasks=64, nbytes=8192.0),
                     placement.linear(topo, 64), ev.dor(tie="positive"), sharing="max_min", fairness="rtt",
                     progression="rank")
    ref64 = smpi.run_collective(smpi.torus_platform([64], 1e9, 1e-6), "alltoall",
                                smpi.smpi_algorithm("alltoall", "pairwise", 64), 64, 8192)
    check_stated(DOC, r"% at p = 8, ([0-9]+) % at p = 64\)", (float(ds.time_with_latency) / ref64 - 1) * 100,
                 command=SMPI_CMD)
    check_stated(DOC, r"removes both \((-[0-9.]+) % and", _dev(8, "broadcast", "binomial", 8192), command=SMPI_CMD)
    # the second: the pairwise alltoall at p = 64, where the lock step is furthest off (time_max_min, rank
    # progression)
    check_stated(DOC, r"removes both \(-[0-9.]+ % and (-[0-9.]+) %\)", (float(ds.time_max_min) / ref64 - 1) * 100,
                 command=SMPI_CMD)


@needs_smpi
def test_smpi_max_min_scatter_ring_broadcast_at_64():
    """The one case the section names above the 1.6 %: the scatter + ring-allgather broadcast of 8 kB at p = 64,
    ``time_max_min`` against SMPI's ``scatter_LR_allgather`` (one SMPI run and one evaluation)."""
    from evaluator.bench import smpi

    p = 64
    topo = ev.torus([p], link_bandwidth=1e9, injection_bandwidth=1e15).with_latency(LAT)
    ref = smpi.run_collective(smpi.torus_platform([p], 1e9, 1e-6), "broadcast", "scatter_LR_allgather", p, 8192)
    ds = ev.evaluate(topo, traffic.collective("broadcast", "scatter_ring_allgather", n_tasks=p, nbytes=8192.0),
                     placement.linear(topo, p), ev.dor(tie="positive"), sharing="max_min", fairness="rtt",
                     progression="rank")
    dev = (float(ds.time_max_min) / ref - 1) * 100
    assert dev > 1.6  # above the bound the section states for the rest
    check_stated(DOC, r"broadcast of 8 kB at p = 64 <!-- input --> \((\+[0-9.]+) %\)", dev, command=SMPI_CMD)


def test_rank_progression_events():
    """The last limit: ``progression=rank`` simulates up to 3 events a message (posted, its latency over, its last
    byte in; evaluator/flowlevel.py's max_min_progress), counted on a message alone (3) and a two-step exchange."""
    from evaluator.flowlevel import max_min_progress

    def events(links, nbytes, latency, sender, receiver, step, n_ranks, n_steps):
        f = len(nbytes)
        post, finish = max_min_progress(np.array(links), np.ones((f, 1)), np.full(2, 1e9), np.array(nbytes),
                                        np.array(latency), np.array(sender), np.array(receiver), np.array(step),
                                        np.zeros(f, bool), n_ranks, n_steps)
        post, finish = np.asarray(post), np.asarray(finish)
        return len(set(post) | set(post + np.array(latency)) | set(finish)) / f

    one = events([[0]], [1000.0], [1e-6], [0], [1], [0], 2, 1)
    two = events([[0], [1], [0]], [1000.0, 3000.0, 500.0], [1e-6, 2e-6, 5e-7], [0, 1, 1], [1, 0, 0], [0, 0, 1], 2, 2)
    assert two <= one
    check_stated(DOC, r"over all its phases \(events up to ([0-9]+)x the messages\)", one,
                 command="progression=rank")
