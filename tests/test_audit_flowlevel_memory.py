"""Audit: the flow-level runner (``sharing="max_min"``) in the memory estimate ("a bound must bound").

Before: the flow-level pass (:func:`evaluator._batch.flowlevel.phase_max_min`) was in no estimate. On an 8^3 torus,
32 points of 512 flows, the working set of the call was 1.3 MB while a warm run of the pass grew the process by
62 MB (the Jacobian chunk of :func:`evaluator.flowlevel.flow_incidence`, every exchange's incidence, the stacked
``points x flows x K`` arrays, their padded copy and the simulation's XLA buffers), and the pass was never split.

Measured here independently of the estimator:

* the peak RSS growth of a warm run of the pass in a child (``/proc/self/clear_refs`` then ``VmHWM``; the programs
  compiled by a first run), and XLA's own buffers of the compiled simulation and incidence calls
  (``memory_analysis``) against the estimate made before anything runs (within 4x of the measurement);
* a memory limit below one point's need is refused before any flow is routed, naming ``sharing`` (the hint,
  ``sharing=bound``, then runs at the same limit);
* a budget of about two points splits the points into blocks: every finish time equals an exact rational reference
  (progressive filling on hand-built dimension-order paths, :mod:`tests.test_audit_flowlevel`), and the split and
  unsplit runs agree bit for bit (phase and rank progression, with a latency model).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import evaluator as ev
from evaluator import placement as P
from evaluator import traffic as T
from evaluator.errors import MEMORY_ENV, ResourceError
from evaluator.latency import Latency
from tests.test_audit_flowlevel import ref_finish, torus_dor_paths

NOISE = 2_000_000
"""RSS growth (bytes) that is no part of the work: allocator arenas, page rounding (spread of repeated runs < 1 MB)."""

LAT = Latency(send_overhead=3e-7, recv_overhead=2e-7, router=5e-8)

_CHILD = textwrap.dedent("""
    import json, sys
    import numpy as np
    import evaluator as ev
    import evaluator.flowlevel as FI
    import evaluator._batch.flowlevel as FL
    from evaluator._batch.checks import as_routing
    from evaluator._batch.compiled import batch_kernel
    from tests.helpers import peak_bytes, reset_peak, rss_bytes
    from tests.test_audit_flowlevel_memory import case

    def xla(compiled):
        ma = compiled.memory_analysis()
        return int(ma.argument_size_in_bytes + ma.output_size_in_bytes + ma.temp_size_in_bytes)

    topo, routing, trs, pls, prog = case(*json.loads(sys.argv[1]))
    kern = batch_kernel(topo, as_routing(routing), False)
    need = FL.flowlevel_working_set(kern, topo, trs, prog, "flow")  # before anything runs
    calls = {"sim": [], "inc": []}
    real_sim, real_prog, real_col = FL._batched, FL._progress, FI._column_fn

    def spy(name, fn):
        def call(*a):
            calls[name].append(a)
            return fn(*a)
        return call

    FL._batched, FL._progress = spy("sim", real_sim), spy("sim", real_prog)
    FI._column_fn = lambda op: spy("inc", real_col(op))
    FL.phase_max_min(kern, topo, trs, pls, "flow", progression=prog)  # compiles: not the work measured
    FL._batched, FL._progress, FI._column_fn = real_sim, real_prog, real_col
    reset_peak()
    r0 = rss_bytes()
    FL.phase_max_min(kern, topo, trs, pls, "flow", progression=prog)
    grow = peak_bytes() - r0
    sim_fn = real_prog if prog == "rank" else real_sim
    sim = max(xla(sim_fn.lower(*a).compile()) for a in calls["sim"])
    op = kern.operator
    inc = max(xla(real_col(op).lower(*a).compile()) for a in calls["inc"][:1])
    print("RESULT " + json.dumps({"grow": grow, "need": need, "xla_sim": sim, "xla_inc": inc}))
""")


def case(net: str, points: int, flows: int, latency: bool, progression: str):
    """``(topology, routing, traffics, placements, progression)``: random flows of equal sizes."""
    topo, routing = (ev.torus([6, 6, 6]), ev.dor()) if net == "torus" else (ev.dragonfly(2, 4, 2), ev.valiant())
    if latency:
        topo = topo.with_latency(LAT)
    N = topo.n_nodes
    trs = []
    for s in range(points):
        g = np.random.default_rng(s)
        a = g.integers(0, N, flows)
        trs.append(T.from_flows(N, a, (a + 1 + g.integers(0, N - 1, flows)) % N, np.full(flows, 1e6)))
    return topo, routing, trs, [P.fully_random(topo, N, seed=s) for s in range(points)], progression


def _child(*args) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in (MEMORY_ENV, "XLA_FLAGS")}
    env["PYTHONPATH"] = os.pathsep.join([os.getcwd(), env.get("PYTHONPATH", "")])
    # a fixed mmap threshold: every large array is mapped and unmapped, not kept in the heap by the first run (glibc
    # raises its threshold after a free, and a warm run then reused the first run's pages: 12 kB of growth)
    env["MALLOC_MMAP_THRESHOLD_"] = "65536"
    p = subprocess.run([sys.executable, "-c", _CHILD, json.dumps(list(args))], capture_output=True, text=True,
                       timeout=120, env=env)
    line = [x for x in p.stdout.splitlines() if x.startswith("RESULT ")]
    assert line, p.stderr[-3000:]
    return json.loads(line[0][7:])


@pytest.mark.parametrize("args", [("torus", 4, 256, True, "phase")])
def test_estimate_bounds_warm_run_and_xla_buffers(args):
    """4 points of 256 flows on a 6^3 torus under DOR with a latency model: the estimate made before anything runs
    bounds the warm run's RSS growth and XLA's buffers of the simulation and of the incidence chunk, within 4x.
    Before the fix there was no estimate of the pass (the working set of the call: inputs and results only)."""
    out = _child(*args)
    need, grow = out["need"], out["grow"]
    assert need["total"] + NOISE >= grow, out
    # (the upper side against XLA's buffers, below: a warm run's RSS growth can read near 0 on a loaded machine,
    # its pages reused, so it bounds from one side only)
    assert out["xla_sim"] <= need["simulation"] <= 4 * out["xla_sim"], out
    assert out["xla_inc"] <= need["incidence"] <= 4 * out["xla_inc"], out


# -- refusal before any work, naming sharing; the hint runs ----------------------------------------------------------

def test_refusal_names_sharing_before_any_flow_is_routed(monkeypatch):
    """A memory limit above the bound pass's working set but below one point of the flow-level pass: refused
    naming ``sharing`` before :func:`evaluator.flowlevel.flow_incidence` runs; ``sharing=bound`` (the hint) runs."""
    import evaluator._batch.flowlevel as FL
    from evaluator._batch.checks import as_routing
    from evaluator._batch.compiled import batch_kernel
    from evaluator._batch.memory import working_set

    topo, routing, trs, pls, _ = case("torus", 1, 20_000, False, "phase")
    kern = batch_kernel(topo, as_routing(routing), False)
    ws = working_set(kern, topo, trs, 64, False)
    bound = ws["inputs"] + ws["block"] + ws["results"]
    limit = 1 << 28
    for _ in range(4):  # (the incidence's chunk shrinks with the memory: a limit just under one point's need)
        monkeypatch.setenv(MEMORY_ENV, str(limit))
        one = FL.flowlevel_working_set(kern, topo, trs, "phase", "flow", points=1)["total"]
        limit = int(0.95 * one / 0.8)
    monkeypatch.setenv(MEMORY_ENV, str(limit))
    assert FL.flowlevel_working_set(kern, topo, trs, "phase", "flow", points=1)["total"] > 0.8 * limit
    assert bound < 0.5 * limit, (bound, limit)  # the bound pass alone fits
    monkeypatch.setattr(FL, "exchange_flows", lambda *a: pytest.fail("a flow was routed before the refusal"))
    with pytest.raises(ResourceError) as e:
        ev.evaluate_batch(topo, routing, trs, pls, sharing="max_min")
    assert e.value.field == "sharing" and e.value.value == "max_min", e.value
    assert "sharing=bound" in str(e.value)
    res = ev.evaluate_batch(topo, routing, trs, pls, sharing="bound")
    assert res is not None


# -- split into blocks of points: exact times, bit-identical to one call ---------------------------------------------

DIMS = (3, 5)


def _points(n: int, seed: int):
    """``n`` points of two phases of random flows of random integer sizes on a 3 x 5 torus (odd rings: DOR has no
    ties, its paths are built by hand in the reference), each with its own placement."""
    topo = ev.torus(list(DIMS))
    trs, pls = [], []
    for i in range(n):
        g = np.random.default_rng(seed + i)
        ph = []
        for m in (10 + i % 3, 7):
            s, d = g.integers(0, 15, m), g.integers(0, 15, m)
            ph.append(T.from_flows(15, s, d, g.integers(1, 10**6, m).astype(float)))
        trs.append(T.phased(ph))
        pls.append(P.fully_random(topo, 15, seed=seed + i))
    return topo, trs, pls


def _run(topo, trs, pls, progression, budget, monkeypatch):
    """``phase_max_min`` with the block budget set to ``budget`` bytes: ``(result, simulation calls)``."""
    import evaluator._batch.flowlevel as FL
    from evaluator._batch.checks import as_routing
    from evaluator._batch.compiled import batch_kernel

    kern = batch_kernel(topo, as_routing(ev.dor()), False)
    calls = []
    for name in ("max_min_batch", "progress_batch"):
        real = getattr(FL, name)
        monkeypatch.setattr(FL, name, lambda *a, _r=real, **k: (calls.append(len(a[0])), _r(*a, **k))[1])
    monkeypatch.setattr(FL, "available_memory", lambda: int(budget / FL.FLOW_MEMORY_FRACTION))
    res = FL.phase_max_min(kern, topo, trs, pls, "flow", progression=progression)
    monkeypatch.undo()
    return res, calls


@pytest.mark.parametrize("progression", ["phase", "rank"])
def test_blocks_of_points_exact_and_bit_identical(progression, monkeypatch):
    """7 points, a budget of about two points a block: the points run in 2+ calls, every phase's finish times
    equal the exact reference (phase progression) and every number equals the one-call run bit for bit."""
    import evaluator._batch.flowlevel as FL

    topo, trs, pls = _points(7, 40)
    F = max(sum(x.n_flows for x in t.phases) if progression == "rank" else max(x.n_flows for x in t.phases)
            for t in trs)
    two = FL.flowlevel_need(topo, trs, progression, "flow", 2, 16, F)["total"]
    one_call, c1 = _run(topo, trs, pls, progression, 1 << 40, monkeypatch)
    split, c2 = _run(topo, trs, pls, progression, two * 1.05, monkeypatch)
    assert len(c1) == 1 and len(c2) >= 2 and sum(c2) >= 7, (c1, c2)
    for k in ("phase_time_max_min", "time_max_min"):
        assert np.array_equal(split[k], one_call[k], equal_nan=True), k
    for a, b in zip(split["message_finish_time"], one_call["message_finish_time"]):
        assert len(a) == len(b) and all(np.array_equal(x, y, equal_nan=True) for x, y in zip(a, b))
    if progression == "rank":
        return
    cap = [int(c) for c in np.asarray(topo.capacity)]
    for i, (t, pl) in enumerate(zip(trs, pls)):
        tn = np.asarray(pl.task_node)
        for k, x in enumerate(t.phases):
            paths = torus_dor_paths(topo, DIMS, tn[x.src], tn[x.dst])
            want = ref_finish(paths, cap, [int(b) for b in x.nbytes], [0] * x.n_flows)
            got = split["message_finish_time"][i][k]
            assert np.allclose(got, [float(w) for w in want], rtol=1e-9, atol=0), (i, k)


def test_blocks_with_latency_model_bit_identical(monkeypatch):
    """With a latency model (every message starts after its latency): split and one-call runs agree bit for bit."""
    import evaluator._batch.flowlevel as FL

    topo, trs, pls = _points(5, 70)
    topo = topo.with_latency(LAT)
    two = FL.flowlevel_need(topo, trs, "phase", "flow", 2, 16, 12)["total"]
    one_call, c1 = _run(topo, trs, pls, "phase", 1 << 40, monkeypatch)
    split, c2 = _run(topo, trs, pls, "phase", two * 1.05, monkeypatch)
    assert len(c1) == 1 and len(c2) >= 2, (c1, c2)
    assert np.array_equal(split["phase_time_max_min"], one_call["phase_time_max_min"], equal_nan=True)
    assert np.array_equal(split["time_max_min"], one_call["time_max_min"])
