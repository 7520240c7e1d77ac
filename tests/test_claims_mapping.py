"""docs/mapping.md's stated results, rerun (tests/claims.py): the three examples of ``evaluator map`` (the DF(4,8,4)
stencil and the halo trace on the 16x8x8 torus, one and four tasks per node) run in full, their searches included
(a search of ``--iterations N`` batches makes the same moves on any machine: it counts batches, not seconds), the Python
example, and the deterministic columns of the bench table (METIS, best named placement, lower bound) on every row.

What is not rerun: the moves per second and search seconds (measurements of a machine; the documents show them as
``...`` in the output blocks and state them beside, marked as timings), and the search columns of the bench table
where the best start is above the bound (the best mapping after a 60 s budget, marked ``budgeted``: those are
certified instead, each between the row's lower bound and its best start)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from evaluator import cli
from tests.claims import check_output_block, check_stated, stated

DOC = "docs/mapping.md"

DF_CMD = "evaluator map traffic=stencil traffic.alpha=[64,64,64] traffic.beta=[16,8,8] --iterations 100 --budget 600"
TORUS_CMD = ("evaluator map topology=torus topology.dims=[16,8,8] routing=dor traffic=trace "
             "traffic.path=halo/traces.otf2 --iterations 30 --budget 600 --write-rank-order launch")
TORUS4_CMD = ("evaluator map topology=torus topology.dims=[16,8,8] routing=dor traffic=trace "
              "traffic.path=halo/traces.otf2 --tasks-per-node 4 --nodes 0-255 --iterations 60 --budget 600")
_LEFT_OUT = ("...", "dataset:", "rank order:", "node list:")
"""Output lines the claims pass over: the search's line (its rate and seconds are the machine's, shown as ``...``)
and the files written (named by the run's time)."""


def _map(command: str, tmp) -> str:
    """The output of ``command`` (its search included), run in ``tmp`` with nothing saved there but the files the
    command itself asks for."""
    import contextlib
    import io

    argv = command.split()[1:]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli.main([*argv, "--no-progress", "save=false", f"output_dir={tmp}"]) == 0
    return out.getvalue()


def _value(pattern: str, out: str) -> float:
    m = re.search(pattern, out, re.M)
    assert m, (pattern, out)
    return float(m.group(1))


def _check_quoted(out: str, command: str, pairs: list[tuple[str, str]]) -> None:
    """For each ``(pattern in the document, pattern in the output)``: the number the document states there equals
    the output's (the prose that quotes an example's output)."""
    for doc_pattern, out_pattern in pairs:
        check_stated(DOC, doc_pattern, _value(out_pattern, out), command=command)


def _starts(out: str) -> dict[str, tuple[float, str]]:
    """Every start's time (value, unit) from a map output's table."""
    rows = out.split("gain of the search\n", 1)[1].splitlines()
    got = {}
    for line in rows:
        m = re.match(r"^(.+?)\s+([0-9.]+) (us|ms)\s+[0-9.]+ %$", line)
        if not m:
            break
        got[m.group(1)] = (float(m.group(2)), m.group(3))
    assert got, out
    return got


def _check_starts(out: str, header: str, command: str, expected: int) -> None:
    """Each start's time that the block after ``header`` (the output's first line, as the document shows it)
    states, against a fresh run; the gain column is the search's (not rerun)."""
    starts = _starts(out)
    assert len(starts) == expected, starts
    within = re.escape(header) + r"(?:(?!```).)*? "  # inside that output block
    for name, (t, unit) in starts.items():
        check_stated(DOC, within + re.escape(name) + rf" ([0-9.]+) {unit} [0-9.]+ %", t, command=command)


@pytest.fixture(scope="module")
def df_stencil_output(tmp_path_factory) -> str:
    """The DF(4,8,4) stencil example's output, its 100 batches of search included (3-10 s on 2 cores)."""
    return _map(DF_CMD, tmp_path_factory.mktemp("map"))


def test_df_stencil_example_starts_and_bounds(df_stencil_output):
    """Every start's time, its gain, the mapping found, the node-link bound and the network's bound, in the output
    block and in the prose."""
    out = df_stencil_output
    assert check_output_block(DOC, DF_CMD, out, skip=_LEFT_OUT) == 32
    found, ratio = r"^mapping found: ([0-9.]+) us", r"the mapping found is ([0-9.]+)x that\)"
    _check_quoted(out, DF_CMD, [
        (r"The search takes ([0-9.]+) % off the default placement",
         r"^mapping found: [0-9.]+ us \(([0-9.]+) % below the best start"),
        (r"off the default placement and lands ([0-9.]+)x above the lower bound", ratio),
        (r"on DF\(4,8,4\) \([0-9.]+ us, ([0-9.]+) us found", found),
        (r"on DF\(4,8,4\) \([0-9.]+ us, [0-9.]+ us found, ([0-9.]+)x\)", ratio)])
    _check_starts(out, "mapping search: 1024 tasks of stencil 16x8x8 on DF(4,8,4,33) (1056 nodes available, 1 per "
                  "node), routing minimal", DF_CMD, 8)
    bound = _value(r"^no mapping is below ([0-9.]+) us \(the busiest task's bytes over its node link", out)
    net = _value(r"^\s+the network's bound: ([0-9.]+) us \(hop-bytes over every network link, the traffic's cut", out)
    check_stated(DOC, r"no mapping is below ([0-9.]+) us \(the busiest task's bytes", bound, command=DF_CMD)
    check_stated(DOC, r"the network's bound: ([0-9.]+) us \(hop-bytes", net, command=DF_CMD)
    default = _starts(out)["dragonfly_cartesian (as configured, the default)"][0]
    rand = _starts(out)["random (as configured)"][0]
    check_stated(DOC, r"That default is the best start here \(([0-9.]+) us, against", default, command=DF_CMD)
    check_stated(DOC, r"against ([0-9.]+) us for a random placement\)", rand, command=DF_CMD)
    check_stated(DOC, r"and ([0-9.]+) us on DF\(4,8,4\)", net, command=DF_CMD)
    check_stated(DOC, r"on DF\(4,8,4\) \(([0-9.]+) us, [0-9.]+ us found", bound, command=DF_CMD)


@pytest.fixture(scope="module")
def halo_dir(tmp_path_factory):
    """A directory holding the trace example's ``halo/`` (the document's ``write_halo_trace('halo', 1024)``)."""
    from evaluator.bench.mapping import write_halo_trace

    d = tmp_path_factory.mktemp("trace")
    write_halo_trace(str(d / "halo"), 1024)
    return d


def test_torus_trace_example(halo_dir, monkeypatch):
    """The halo trace on the 16x8x8 torus, one task per node: the output block (starts, gains, the mapping found,
    both bounds), the rank-order file it writes, and the prose that quotes it."""
    monkeypatch.chdir(halo_dir)
    out = _map(TORUS_CMD, halo_dir / "out")
    assert check_output_block(DOC, TORUS_CMD, out, skip=_LEFT_OUT) == 23
    assert (halo_dir / "launch" / "MPICH_RANK_ORDER").is_file() and (halo_dir / "launch" / "node_list").is_file()
    _check_quoted(out, TORUS_CMD, [
        (r"the search takes another ([0-9]+) % off METIS's mapping", r"^partition\s+[0-9.]+ ms\s+([0-9.]+) %$"),
        (r"the network's best bound is ([0-9.]+) ms on the torus", r"the network's bound: ([0-9.]+) ms"),
        (r"on the torus \(against ([0-9.]+) ms for the node links", r"^no mapping is below ([0-9.]+) ms"),
        (r"for the node links and ([0-9.]+) ms found", r"^mapping found: ([0-9.]+) ms"),
        (r"ms found, ([0-9.]+)x, as before\)", r"the mapping found is ([0-9.]+)x that\)")])


def test_torus_trace_four_per_node_example(halo_dir, monkeypatch):
    """The same trace, four tasks per node on a quarter of the torus: the output block and the prose's network
    bound and gap."""
    monkeypatch.chdir(halo_dir)
    out = _map(TORUS4_CMD, halo_dir / "out4")
    assert check_output_block(DOC, TORUS4_CMD, out, skip=_LEFT_OUT) == 19
    _check_quoted(out, TORUS4_CMD, [
        (r"the network's ([0-9.]+) ms binds", r"^no mapping is below ([0-9.]+) ms \(hop-bytes over every network link"),
        (r"The gap to the mapping found \(([0-9.]+)x\)", r"the mapping found is ([0-9.]+)x that\)")])


PY_CMD = 'search_mapping(topo, halo, "minimal", time_budget=600, max_iterations=40, seed=0, progress=False)'


def test_python_example():
    """The Python example's output block. Its best start (the random one) is already at the lower bound, so the
    search of 40 batches cannot move (never worse than its start, never below the bound): the test searches 0
    batches, checks that the best start sits on the bound, and prints what the example prints."""
    import evaluator as ev
    from evaluator.bench.mapping import mesh_halo
    from evaluator.mapping import search_mapping

    topo = ev.topology.dragonfly(4, 8, 4)
    halo = mesh_halo(512, seed=2)
    res = search_mapping(topo, halo, "minimal", time_budget=600, max_iterations=0, seed=0, progress=False)
    assert res.completion_time == pytest.approx(min(res.starts.values()), rel=1e-9)
    assert res.completion_time <= res.lower_bound * (1 + 1e-9)  # on the bound: no search can do better
    lines = [f"{name:16s} {t * 1e6:8.2f} us   search gains {res.gain(name):6.1%}" for name, t in res.starts.items()]
    lines.append(f"found {res.completion_time * 1e6:.2f} us from {res.best_start}, "
                 f"bound {res.lower_bound * 1e6:.2f} us")
    assert check_output_block(DOC, PY_CMD, "\n".join(lines)) == 10
    node_link = np.asarray(topo.capacity)[int(topo.n_router_links):]
    assert node_link.min() == node_link.max()
    check_stated(DOC, r"bytes over its ([0-9.]+) GB/s node link", float(node_link[0]) / 1e9, command=PY_CMD)


BENCH = "evaluator bench --only mapping"
_NUM = r"-?[0-9][0-9,]*(?:\.[0-9]+)?"


def _row_pattern(prefix: str, best: str, k: int) -> str:
    """The table row that starts with ``prefix`` with its ``k``-th number (found, METIS, best named, lower bound,
    vs METIS, vs named, best after 5, 15, 30, 60 s) as the group."""
    cells = ["{n} us", "{n} us", re.escape(best) + " {n} us", "{n} us", "{n} %", "{n} %",
             "{n} us / {n} us / {n} us / {n} us"]
    pat = re.escape(prefix) + " " + r" \| ".join(cells) + r" \|"
    parts = pat.split("{n}")
    return "".join(p + ("" if i == len(parts) - 1 else f"({_NUM})" if i == k else _NUM) for i, p in enumerate(parts))


@pytest.mark.parametrize("ranks,pattern", [(1024, "random graph"), (1024, "mesh halo"), (1024, "trace"),
                                           (4096, "mesh halo")])
def test_bench_table_starts_and_bound(ranks, pattern):
    """The bench table's deterministic columns, every row: the METIS mapping's time, the best named placement's
    and the lower bound (in that run the node-link bound, which still binds on these rows), computed as the
    bench computes them (the search's starting points, evaluated in one batch). Where the best start sits on the
    bound the whole row is determined: the search never returns worse than its start nor finds below the bound,
    so the mapping found, both gains and the best after every budget are that start's time. Elsewhere the
    search columns are what a 60 s budget reached on that machine (marked ``budgeted``): each found time and
    each best-after time must lie between the bound and the best start, never rise with the budget, end at the
    found time, and the gains must be the found time's against METIS and the named placement."""
    from evaluator.bench.mapping import _networks, _pattern
    from evaluator.evaluation import evaluate_batch
    from evaluator.mapping._starts import starting_points
    from evaluator.mapping.bound import task_node_bound
    from evaluator.placement import explicit

    tr = _pattern(pattern, ranks)
    forced = 0
    for label, topo, routing in _networks(ranks):
        starts, _ = starting_points(topo, tr, np.arange(topo.n_nodes), 1, seed=0)
        res = evaluate_batch(topo, routing, [tr] * len(starts), [explicit(topo, s.task_node, s.name) for s in starts])
        times = dict(zip([s.name for s in starts], np.asarray(res.metrics["completion_time"], float) * 1e6))
        named = {k: v for k, v in times.items() if k != "partition" and not k.startswith("random")}
        best = min(named, key=named.get)
        bound = task_node_bound(topo, tr) * 1e6
        prefix = f"| {ranks:,}, {pattern} | {label} |"
        check_stated(DOC, _row_pattern(prefix, best, 1), times["partition"], command=BENCH)
        check_stated(DOC, _row_pattern(prefix, best, 2), named[best], command=BENCH)
        check_stated(DOC, _row_pattern(prefix, best, 3), bound, command=BENCH)
        first = min(times.values())
        if first <= bound * (1 + 1e-9):  # the best start is on the bound: the search's outcome is that start
            forced += 1
            found = first
            check_stated(DOC, _row_pattern(prefix, best, 0), found, command=BENCH)
            check_stated(DOC, _row_pattern(prefix, best, 4), -100 * (1 - found / times["partition"]), command=BENCH)
            check_stated(DOC, _row_pattern(prefix, best, 5), -100 * (1 - found / named[best]), command=BENCH)
            for k in range(6, 10):
                check_stated(DOC, _row_pattern(prefix, best, k), found, command=BENCH)
            continue
        cell = [float(stated(DOC, _row_pattern(prefix, best, k), record=False)[0].replace(",", "")) for k in range(10)]
        found, after = cell[0], cell[6:10]
        for t in (found, *after):
            assert bound * (1 - 1e-3) <= t <= first * (1 + 1e-3), (prefix, t, bound, first)
        assert after == sorted(after, reverse=True) and after[-1] == found, (prefix, after)
        for gain, base in ((cell[4], times["partition"]), (cell[5], named[best])):  # found and base shown to 1 us
            slack = 0.05 + 100 * 0.5 * (1 / base + found / base**2)
            assert gain == pytest.approx(-100 * (1 - found / base), abs=slack), prefix
    assert forced == {"random graph": 0, "mesh halo": 1 if ranks == 1024 else 2, "trace": 1}[pattern]


def test_bench_budget():
    """The bench's quality budget (its last column and the text's '60 s'): an input the bench sets."""
    from evaluator.bench.mapping import QUALITY_BUDGETS

    check_stated(DOC, r"best after 5 / 15 / 30 / ([0-9]+) s", QUALITY_BUDGETS[-1], command=BENCH)
    check_stated(DOC, r"(?:the|best at|placement,|in) ([0-9]+) s\b", QUALITY_BUDGETS[-1], command=BENCH, count=3)


PORTS_CMD = ("python -c 'from evaluator.bench.mapping import _heldout_traffic as t; from evaluator.topology import torus; "
             "from evaluator.mapping.bound import mapping_bound; [print(d, mapping_bound(torus(d), t(\"27-point stencil\", "
             "n)[0], \"dor\").parts) for d, n in (((8, 8, 8), 512), ((16, 8, 8), 1024))]'")


def test_ports_bound_on_the_held_out_stencil():
    """The lower bound's port part on the held-out uneven 27-point stencil (both tori, one task per node): the
    heaviest flow over one link, above every other part, and the linear mapping's time (the best found)."""
    from evaluator import evaluate
    from evaluator.bench.mapping import _heldout_traffic
    from evaluator.mapping.bound import mapping_bound
    from evaluator.placement import Placement
    from evaluator.topology import torus

    for dims, n in (((8, 8, 8), 512), ((16, 8, 8), 1024)):
        topo, tr = torus(dims), _heldout_traffic("27-point stencil", n)[0]
        parts = mapping_bound(topo, tr, "dor").parts
        heaviest = float(np.max(np.asarray(tr.to_flows().phases[0].nbytes)))
        cap = float(np.asarray(topo.capacity)[0])
        assert parts["network ports"] == pytest.approx(heaviest / cap, rel=1e-12)
        check_stated(DOC, r"8 bytes: the heaviest flow ([0-9,]+) B;", heaviest, command=PORTS_CMD)
        check_stated(DOC, r"it binds: .{0,600}? ([0-9.]+) us on the 8x8x8 and the 16x8x8 torus",
                     parts["network ports"] * 1e6, command=PORTS_CMD)
        check_stated(DOC, r"that flow over one ([0-9.]+) GB/s link", cap / 1e9, command=PORTS_CMD)
        other = max(v for k, v in parts.items() if k != "network ports")
        check_stated(DOC, r"against ([0-9.]+) us for the largest other part", other * 1e6, command=PORTS_CMD)
        linear = float(evaluate(topo, tr, Placement(np.arange(n), topo.n_nodes), "dor")["completion_time"])
        check_stated(DOC, r"the linear mapping, the best any tool has found there, takes ([0-9.]+) us", linear * 1e6,
                     command=PORTS_CMD)
        assert parts["network ports"] > 0.85 * linear  # no room for 15 % below the linear mapping


RANDOM_TORUS_CMD = ("python -c 'from evaluator.bench.mapping import _networks, _pattern; from evaluator.mapping.bound "
                    "import mapping_bound; _, topo, rt = _networks(1024)[0]; print(mapping_bound(topo, "
                    "_pattern(\"random graph\", 1024), rt))'")


def test_bench_random_graph_torus_bound_with_ports():
    """The bench table's note: the random graph's bound on the 16x8x8 torus with the port part, and the node-link
    bound of the run beside it."""
    from evaluator.bench.mapping import _networks, _pattern
    from evaluator.mapping.bound import mapping_bound, task_node_bound

    _, topo, rt = _networks(1024)[0]
    tr = _pattern("random graph", 1024)
    bd = mapping_bound(topo, tr, rt)
    assert bd.binding.startswith("boundary:") and bd.value > bd.parts["network ports"]
    check_stated(DOC, r"the random graph's bound on the 16x8x8 torus was ([0-9.]+) us", bd.parts["network ports"] * 1e6,
                 command=RANDOM_TORUS_CMD)
    check_stated(DOC, r"since the boundary part \(2026-12-01\)\s+it is ([0-9.,]+) us", bd.value * 1e6,
                 command=RANDOM_TORUS_CMD)
    check_stated(DOC, r"random graph of the bench's quality rows gets ([0-9.,]+) us", bd.value * 1e6,
                 command=RANDOM_TORUS_CMD)
    check_stated(DOC, r"\(the ports part gave ([0-9.,]+) us\)", bd.parts["network ports"] * 1e6,
                 command=RANDOM_TORUS_CMD)
    check_stated(DOC, r"up from the ([0-9.]+) us of this run's node links", task_node_bound(topo, tr) * 1e6,
                 command=RANDOM_TORUS_CMD)


PENCIL_CMD = ("python -c 'import numpy as np; from evaluator.bench.mapping import _heldout_traffic, HELDOUT_CASES; "
              "from evaluator.topology import torus; from evaluator.mapping import mapping_bound; [print(d, tpn, box, "
              "mapping_bound(torus(d), _heldout_traffic(p, n)[0], \"dor\", nodes=np.ravel_multi_index(tuple("
              "np.indices(box).reshape(3, -1)), d), tasks_per_node=tpn)) for d, tpn, n, box, p in HELDOUT_CASES if "
              "p == \"pencil FFT\"]'")


def test_boundary_bound_on_the_held_out_pencil_rows():
    """The boundary part on issue 37's held-out pencil FFT rows (the table of "The lower bound"): the bound before
    (the largest other part) and the boundary part, which binds on every row; on the 8x8x8 torus it is the closed
    form: a 16x32 pencil's graph is a product of cliques (``lambda_2`` = min(16 x 2 x 32,768, 32 x 2 x 16,384)
    bytes, both ways), so any half of the ranks exchanges at least 67,108,864 B each way with the other half (32
    rows of 16 split 8 and 8, 32,768 B a pair), over the 128 links each way of the torus's half (2 GB/s)."""
    from evaluator.bench.mapping import HELDOUT_CASES, _heldout_traffic
    from evaluator.evaluation import evaluate_batch
    from evaluator.mapping.bound import mapping_bound
    from evaluator.placement import explicit
    from evaluator.topology import torus

    rows = [(d, tpn, n, box) for d, tpn, n, box, p in HELDOUT_CASES if p == "pencil FFT"]
    labels = ("16x32 ranks, 8x8x8 torus", "32x32 ranks, 16x8x8 torus", "32x32 ranks, 4 a node, 4x8x8 half",
              "32x32 ranks, 4 a node, 16x4x4 prism")
    for label, (d, tpn, n, box) in zip(labels, rows):
        nodes = np.ravel_multi_index(tuple(np.indices(box).reshape(3, -1)), d)
        tr = _heldout_traffic("pencil FFT", n)[0]
        bd = mapping_bound(torus(d), tr, "dor", nodes=nodes, tasks_per_node=tpn)
        before = max(v for k, v in bd.parts.items() if not k.startswith("boundary:"))
        assert bd.binding.startswith("boundary:") and bd.value > before, (label, bd)
        # certified against a mapping: the launcher's fill (tasks_per_node consecutive ranks a node, in order)
        filled = explicit(torus(d), np.repeat(nodes, tpn), "linear")
        linear = float(evaluate_batch(torus(d), "dor", tr, [filled]).metrics["completion_time"][0])
        assert bd.value <= linear * (1 + 1e-9), (label, bd.value, linear)
        check_stated(DOC, rf"\| {re.escape(label)} \| ([0-9.,]+) us \|", before * 1e6, command=PENCIL_CMD)
        check_stated(DOC, rf"\| {re.escape(label)} \| [0-9.,]+ us \| ([0-9.,]+) us \|", bd.value * 1e6,
                     command=PENCIL_CMD)
        if d == (8, 8, 8) and tpn == 1:
            each_way = 32 * 8 * 8 * 32768.0
            assert each_way == pytest.approx(67_108_864)
            closed = each_way / (128 * 2e9)
            assert closed * (1 - 1e-6) <= bd.value <= closed  # less the eigenvalue's rounding margin
            check_stated(DOC, r"must carry at least ([0-9.]+) MB each way", each_way / 1e6, command=PENCIL_CMD)
            check_stated(DOC, r"each way:\s+([0-9.]+) us at", bd.value * 1e6, command=PENCIL_CMD)
