"""Numbers docs/latency.md states, rerun (tests/claims.py): the evaluator's side of its tables and examples.

SMPI's numbers there are measurements of SimGrid (tests/test_smpi_collectives.py compares the two sides)."""

from __future__ import annotations

import re

import pytest

import evaluator as ev
from claims import check_stated, stated
from evaluator import placement, traffic
from evaluator.latency import Latency

DOC = "docs/latency.md"
PY = "ds = ev.evaluate(topo, traffic.collective(\"allreduce\", alg, n_tasks=16, nbytes=4096.0)"
LAT = Latency(link=(("torus-dim0", 1e-6),), eager_threshold=65535.0, rendezvous_round_trips=0, eager_buffered=False)
COLUMNS = [("allreduce", "ring"), ("allreduce", "recursive_doubling"), ("allreduce", "rabenseifner"),
           ("broadcast", "binomial"), ("broadcast", "scatter_recursive_doubling_allgather"),
           ("broadcast", "scatter_ring_allgather")]


def _max_min(op: str, alg: str, nbytes: float) -> float:
    topo = ev.torus([16], link_bandwidth=1e9, injection_bandwidth=1e15).with_latency(LAT)
    ds = ev.evaluate(topo, traffic.collective(op, alg, n_tasks=16, nbytes=nbytes), placement.linear(topo, 16),
                     ev.dor(tie="positive"), sharing="max_min", fairness="rtt", progression="rank")
    return float(ds.time_max_min)


@pytest.mark.parametrize("row", ["16", "4,096", "65,536"])
def test_winner_table_rows(row):
    """Three rows of the table (the small, the crossover and the 64 kB dip), every column's evaluator side."""
    nbytes = float(row.replace(",", ""))
    cells = stated(DOC, rf"\| {re.escape(row)} \|((?: [^|]+ \|){{6}})", 1)[0].split("|")[:-1]
    for (op, alg), cell in zip(COLUMNS, cells):
        ours = cell.strip().split("/")[0].replace("**", "").strip()
        want = _max_min(op, alg, nbytes) * 1e6
        pattern = rf"\| {re.escape(row)} \|" + r"(?: [^|]+ \|)" * COLUMNS.index((op, alg)) + r" \**([0-9.,]+)\**"
        check_stated(DOC, pattern, want, command=PY, count=1)
        assert ours  # (the cell holds the number checked)


def test_python_example_and_cli():
    for alg, value in (("ring", "3.768e-05"), ("recursive_doubling", "7.644e-05"), ("rabenseifner", "4.638e-05")):
        got = _max_min("allreduce", alg, 4096.0)
        check_stated(DOC, rf"{alg} ([0-9.]+)e-05", got * 1e5, command=PY, count=None)
        assert f"{got:.4g}" == value
    cmd = "evaluator eval topology=torus topology.dims=[16]"
    check_stated(DOC, r"latency +([0-9.]+) us +with per-message", _max_min("allreduce", "ring", 4096.0) * 1e6,
                 command=cmd)
    topo = ev.torus([16], link_bandwidth=1e9, injection_bandwidth=1e15).with_latency(
        Latency(link=(("torus-dim0", 1e-6),)))
    ds = ev.evaluate(topo, traffic.collective("allreduce", "auto", n_tasks=16, nbytes=4096.0),
                     placement.linear(topo, 16), ev.dor(tie="positive"))
    assert ds.attrs["traffic"] == "allreduce auto(mpich) -> rabenseifner"
    check_stated(DOC, r"-> rabenseifner`, ([0-9.]+) us with latency", float(ds.time_with_latency) * 1e6, command=cmd)
    check_stated(DOC, r"\(([0-9.]+)% of it latency", 100 * (1 - 7.68e-6 / 37.68e-6), command=cmd)


def test_jobs_example():
    import numpy as np

    from evaluator.jobs import Job, evaluate_jobs

    t = ev.torus([8], wrap=False)
    a = Job(traffic.from_flows(2, [0], [1], [4e6]), placement.explicit(t, np.array([0, 7])), name="a")
    b = Job(traffic.from_flows(4, [0, 1], [2, 3], [4e6, 4e6]), placement.explicit(t, np.array([1, 2, 5, 6])), name="b")
    cmd = 'job_summary_lines(evaluate_jobs(t, [a, b], "dor", sharing="max_min", fairness="flow"))'
    flow = evaluate_jobs(t, [a, b], "dor", sharing="max_min", fairness="flow")
    job = evaluate_jobs(t, [a, b], "dor", sharing="max_min", fairness="job")
    check_stated(DOC, r"flow-fair \[ms\]: a [0-9.]+ -> ([0-9.]+) \(x", float(flow.time_max_min[0]) * 1e3, command=cmd)
    check_stated(DOC, r"flow-fair \[ms\]: a ([0-9.]+) ->", float(flow.time_max_min_alone[0]) * 1e3, command=cmd)
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
        for size, best in ((1024, "recursive_doubling"), (16384, "rabenseifner")):
            times = {a: at(net, a, size) for a in ("ring", "recursive_doubling", "rabenseifner")}
            assert min(times, key=times.get) == best, (net, size, times)
