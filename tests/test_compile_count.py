"""No waste (STYLE.md item 7; issue 5 item 6).

* a second chunk (block) of the same bucket compiles nothing: the number of
  XLA backend compilations is counted with ``jax.monitoring`` (every
  compilation reports ``/jax/core/compile/backend_compile_duration``, eager
  ones included) and with the kernels' own jit caches;
* host-to-device transfers are batched: one explicit transfer per block, and
  none implicit (``jax.transfer_guard``), checked on the accelerators' path (on a
  CPU a block's NumPy arrays go to the compiled call as they are: same results);
* results stay on the device until the reduction is done: without
  ``keep_link_load`` the kernels return only the per-point metrics.
"""

from __future__ import annotations

import contextlib
import importlib

import jax
import numpy as np
import pytest

from evaluator import placement as P
from evaluator import routing as RT
from evaluator import structured as S
from evaluator import topology as T
from evaluator import traffic as TR
from evaluator.evaluation import evaluate_batch
from evaluator._batch.compiled import batch_kernel
from evaluator.kernel import SCALAR_METRICS
from tests.helpers import COMPILE_EVENT, jax_events

EV = importlib.import_module("evaluator._batch.blocks")  # buckets, padding, the one host-to-device transfer

def count_compiles():
    return jax_events(COMPILE_EVENT)


@contextlib.contextmanager
def count_transfers(monkeypatch):
    calls: list[int] = []
    real = EV.to_device

    def counting(arrays):
        calls.append(1)
        return real(arrays)

    monkeypatch.setattr(EV, "to_device", counting)
    yield calls


@pytest.fixture
def explicit_blocks(monkeypatch):
    """The accelerators' path on this CPU: every block put on the device explicitly (:func:`count_transfers`
    counts them; on a CPU the blocks go to the call as NumPy arrays, a jit cache entry of their own)."""
    monkeypatch.setattr(EV, "_on_cpu", lambda: False)


def _placements(topo, n, seed=0):
    return [P.dragonfly_cartesian(topo, (4, 4, 2), (2, 2, 2), seed=seed + s) for s in range(n)]


@pytest.mark.parametrize("chunk", [1, 2])
def test_padding_points_are_not_evaluated(chunk):
    """A block's points past ``n_valid`` are padding: the loop stops at the chunk that holds the last valid point,
    later rows stay zero, and the valid rows are the ones a full block gives (one compilation for both calls)."""
    topo = T.dragonfly(2, 4, 2, 9)
    traffic = TR.stencil((4, 4, 2), (4, 4, 2), 8.0)
    kern = batch_kernel(topo, RT.minimal(), False)
    F, Tn = EV.bucket_size(traffic.n_flows), EV.bucket_size(traffic.n_tasks)
    tn = jax.device_put(EV.task_nodes(_placements(topo, 8), Tn))
    flows = EV.device_flows(traffic, F)
    full = np.asarray(kern.fn.shared(kern.net, tn, *flows, step=chunk)[0])
    size = kern.fn._cache_size()
    part = np.asarray(kern.fn.shared(kern.net, tn, *flows, step=chunk, n_valid=3)[0])
    assert kern.fn._cache_size() == size
    done = -(-3 // chunk) * chunk  # whole chunks
    np.testing.assert_array_equal(part[:done], full[:done])
    assert np.all(full[done:] != 0, axis=1).any() and np.all(part[done:] == 0)


@pytest.mark.parametrize("routing", [RT.minimal(), RT.valiant()])
def test_second_chunk_of_shared_flows_compiles_nothing(routing, monkeypatch, explicit_blocks):
    topo = T.dragonfly(2, 4, 2, 9)
    traffic = TR.stencil((4, 4, 2), (4, 4, 2), 8.0)
    pls = _placements(topo, 40)
    kern = batch_kernel(topo, routing, False)
    first = evaluate_batch(topo, routing, traffic, pls[:8], chunk_size=8)  # compiles this bucket (once)
    size = kern.fn._cache_size()
    with count_compiles() as compiles, count_transfers(monkeypatch) as transfers, jax.transfer_guard("disallow"):
        second = evaluate_batch(topo, routing, traffic, pls[8:40], chunk_size=8)  # four more blocks
    assert compiles == [], f"{len(compiles)} compilations for a second chunk of the same bucket"
    assert kern.fn._cache_size() == size
    assert len(transfers) == 4  # one per block; the shared flow list is on the device already
    both = evaluate_batch(topo, routing, traffic, pls[:40], chunk_size=8)
    np.testing.assert_array_equal(both.metrics["completion_time"],
                                  np.concatenate([first.metrics["completion_time"], second.metrics["completion_time"]]))


def test_second_chunk_of_per_point_flows_compiles_nothing(monkeypatch, explicit_blocks):
    topo = T.torus((4, 3, 2))
    routing = RT.dor("longest_first")
    rng = np.random.default_rng(0)

    def point(i):
        n_tasks = int(rng.integers(9, 16))  # one task bucket (16)
        f = int(rng.integers(17, 32))  # one flow bucket (32)
        tr = TR.from_flows(n_tasks, rng.integers(0, n_tasks, f), rng.integers(0, n_tasks, f), rng.random(f))
        return tr, P.explicit(topo, rng.integers(0, topo.n_nodes, n_tasks))

    pts = [point(i) for i in range(20)]
    evaluate_batch(topo, routing, [t for t, _ in pts[:4]], [p for _, p in pts[:4]], chunk_size=4)
    with count_compiles() as compiles, count_transfers(monkeypatch) as transfers, jax.transfer_guard("disallow"):
        evaluate_batch(topo, routing, [t for t, _ in pts[4:]], [p for _, p in pts[4:]], chunk_size=4)
    assert compiles == []
    assert len(transfers) == 4  # 16 points in blocks of 4: one transfer each (all arrays of a block at once)


def test_second_chunk_of_dense_traffic_compiles_nothing(monkeypatch, explicit_blocks):
    topo = T.dragonfly(2, 4, 2, 9)
    routing = RT.valiant()
    traffics = [S.all_to_all(int(n), float(n)) for n in np.random.default_rng(1).integers(33, 64, 12)]
    pls = [P.fully_random(topo, t.n_tasks, seed=i) for i, t in enumerate(traffics)]
    evaluate_batch(topo, routing, traffics[:4], pls[:4], chunk_size=4)
    with count_compiles() as compiles, count_transfers(monkeypatch) as transfers, jax.transfer_guard("disallow"):
        evaluate_batch(topo, routing, traffics[4:], pls[4:], chunk_size=4)
    assert compiles == []
    assert len(transfers) == 2


def test_cpu_blocks_go_to_the_call_as_host_arrays(monkeypatch):
    """On a CPU a block's arrays reach the compiled call as NumPy arrays (no ``jax.device_put`` per block), with
    the results of the explicit path bit for bit; arrays kept for several calls are on the device."""
    assert jax.default_backend() == "cpu"
    rows = (np.arange(6, dtype=np.int32).reshape(2, 3), np.int32(2))
    assert EV.to_device(rows) is rows
    assert all(isinstance(a, jax.Array) for a in EV.to_device_kept(rows))
    topo = T.dragonfly(2, 4, 2, 9)
    traffic = TR.stencil((4, 4, 2), (4, 4, 2), 8.0)
    pls = _placements(topo, 12, seed=3)
    for routing in (RT.minimal(), RT.valiant()):
        host = evaluate_batch(topo, routing, traffic, pls, chunk_size=8, keep_link_load=True)
        with monkeypatch.context() as m:
            m.setattr(EV, "_on_cpu", lambda: False)
            put = evaluate_batch(topo, routing, traffic, pls, chunk_size=8, keep_link_load=True)
        np.testing.assert_array_equal(host.link_load, put.link_load)
        for k, v in put.metrics.items():
            np.testing.assert_array_equal(host.metrics[k], v)


def test_results_stay_on_device_until_reduced():
    """Without keep_link_load a block returns only [point, metric]; per-link loads never leave the device."""
    topo = T.dragonfly(2, 4, 2, 9)
    traffic = TR.stencil((4, 4, 2), (4, 4, 2), 8.0)
    pls = _placements(topo, 8)
    for keep in (False, True):
        kern = batch_kernel(topo, RT.valiant(), keep)
        flows = EV.device_flows(traffic, EV.bucket_size(traffic.n_flows))
        tn = jax.device_put(np.stack([p.task_node for p in pls]).astype(np.int32))
        packed, loads = kern.fn.shared(kern.net, tn, *flows, step=4)
        assert isinstance(packed, jax.Array) and packed.shape == (8, len(SCALAR_METRICS) + len(topo.class_names))
        if keep:
            assert loads.shape == (8, topo.n_links)
        else:
            assert loads is None


def test_optimize_compiles_one_kernel_per_routing_and_flow_bucket(tmp_path, monkeypatch, capsys):
    """``evaluator optimize`` on a small network: decompositions with different flow counts (beta 1x16 has 32
    flows, 4x4 has 64) share one flow bucket, and chunks that mix them run the same compiled kernel: one
    compilation per routing, none for a per-point fallback. Two chunk threads, chunks of 4 points: the
    threads share every kernel (see also :func:`test_threads_share_one_build`)."""
    from evaluator import cli
    from evaluator._batch import groups
    from evaluator.sweep import driver

    from evaluator._batch.compiled import forget_kernels

    forget_kernels()  # kernels of the same networks compiled by earlier tests of this process are not reused here
    kernels = []
    real = groups.batch_kernel

    def recording(*args):
        kern = real(*args)
        kernels.append(kern)
        return kern

    monkeypatch.setattr(groups, "batch_kernel", recording)
    monkeypatch.setattr(driver, "_local_threads", lambda ray_cfg: 2)
    monkeypatch.chdir(tmp_path)
    names: list[str] = []

    def listener(name, duration, **kwargs):
        if name == COMPILE_EVENT:
            names.append(str(kwargs.get("fun_name", "")))

    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        rc = cli.main(["optimize", "--tasks", "16", "--alpha", "16,16", "--routings", "minimal,valiant",
                       "topology.p=2", "topology.a=4", "topology.h=2", "sweep.chunk_size=4", "--no-progress"])
    finally:
        jax.monitoring.unregister_event_duration_listener(listener)
    assert rc == 0 and "searched" in capsys.readouterr().out
    used = {id(k.fn): k for k in kernels}.values()
    assert sorted(k.operator.routing.kind for k in used) == ["minimal", "valiant"]
    for k in used:
        assert k.fn._cache_size() == 1, k.operator.routing.kind  # one flow bucket, one variant (shared flows)
    kernel_compiles = [n for n in names if n in ("jit(shared)", "jit(per_point)", "jit(dense)")]
    assert len(kernel_compiles) <= 2, names  # (fewer when a persistent compilation cache already holds them)


def test_threads_share_one_build(tmp_path, monkeypatch):
    """Two chunk threads that miss the same topology at once both build it, and both go on with the first
    build kept: one topology object, hence one kernel and one compilation. (Before, each kept its own: in
    about one cold ``optimize`` run in ten, a kernel was compiled a second time, 1-2 s.)"""
    import threading

    from evaluator import config
    from evaluator.sweep import plan_sweep, worker

    plan = plan_sweep(config.compose_sweep(["sweeps=dragonfly_nne_placement", f"sweep.output_dir={tmp_path}",
                                            "topology.p=2", "topology.a=4",
                                            "topology.h=2"]))
    st = worker._State(plan)
    idx = (0,) * len(plan.axes)
    cfg = plan.group_config(idx, st.group_cols)
    together = threading.Barrier(2, timeout=30)
    build = worker.C.build_topology
    got: dict[str, object] = {}

    def build_at_once(c):
        topo = build(c)
        together.wait()  # both threads hold their own build before either keeps it
        return topo

    def miss(name):
        got[name] = st.topology(idx, cfg)

    monkeypatch.setattr(worker.C, "build_topology", build_at_once)
    threads = [threading.Thread(target=miss, args=(n,)) for n in "ab"]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    monkeypatch.undo()
    assert not together.broken and set(got) == {"a", "b"}
    assert got["a"] is got["b"] is st.topology(idx, cfg)


@pytest.mark.parametrize("routing", [RT.minimal(), RT.valiant()])
def test_a_network_built_again_shares_the_kernels_compiled_for_it(routing):
    """A Dragonfly built again with the same parameters (another object, the same links and capacities) gets the
    kernels already compiled for the first: it traces and compiles nothing, and its results are bit for bit those
    of kernels compiled afresh (``forget_kernels``: a later process). Another capacity is another network: its own
    kernels."""
    from evaluator._batch.compiled import forget_kernels
    from tests.helpers import TRACE_EVENT

    traffic = TR.stencil((4, 4, 2), (4, 4, 2), 8.0)

    def run(topo):
        return evaluate_batch(topo, routing, traffic, _placements(topo, 4), keep_link_load=True)

    forget_kernels()
    first_topo = T.dragonfly(2, 4, 2, 9)
    first = run(first_topo)
    again_topo = T.dragonfly(2, 4, 2, 9)
    assert again_topo is not first_topo
    with jax_events(TRACE_EVENT, COMPILE_EVENT, this_thread=True) as seen:
        again = run(again_topo)
    assert seen == []
    assert batch_kernel(again_topo, routing, True).fn is batch_kernel(first_topo, routing, True).fn
    # and the operator and device arrays (what is cached per operator is shared too: nothing transferred again)
    assert batch_kernel(again_topo, routing, True).operator is batch_kernel(first_topo, routing, True).operator
    assert batch_kernel(again_topo, routing, True).net is batch_kernel(first_topo, routing, True).net
    other = T.dragonfly(2, 4, 2, 9, bandwidth_l=1.0e9)
    assert batch_kernel(other, routing, True).fn is not batch_kernel(first_topo, routing, True).fn
    forget_kernels()
    fresh_topo = T.dragonfly(2, 4, 2, 9)
    with jax_events(TRACE_EVENT, this_thread=True) as seen:
        fresh = run(fresh_topo)
    assert TRACE_EVENT in seen  # new kernels: traced again
    assert batch_kernel(fresh_topo, routing, True).fn is not batch_kernel(first_topo, routing, True).fn
    for res in (again, fresh):
        assert res.metrics.keys() == first.metrics.keys()
        for k in first.metrics:
            np.testing.assert_array_equal(res.metrics[k], first.metrics[k], err_msg=k, strict=True)
        np.testing.assert_array_equal(res.link_load, first.link_load, strict=True)


def test_an_operator_built_otherwise_gets_kernels_of_its_own(monkeypatch):
    """The key of the kernels shared by content holds the operator's data: DOR's coordinates packed in uint64 (a
    bit budget forced small) on a torus of the same content are another operator, with kernels of its own, and it
    gives the same numbers."""
    from evaluator.routing import _dor

    traffic = TR.stencil((12, 8, 6), (6, 4, 3), 8.0)
    first_topo = T.torus((6, 4, 3))  # (coordinates, not a pair table: a size that is not a power of two)
    first = evaluate_batch(first_topo, RT.dor(), traffic, P.linear(first_topo, 72), keep_link_load=True)
    monkeypatch.setattr(_dor, "_NARROW_BITS", 4)
    wide_topo = T.torus((6, 4, 3))
    wide = evaluate_batch(wide_topo, RT.dor(), traffic, P.linear(wide_topo, 72), keep_link_load=True)
    a, b = batch_kernel(first_topo, RT.dor(), True), batch_kernel(wide_topo, RT.dor(), True)
    assert a.operator.tables["coords"].dtype != np.uint64 and b.operator.tables["coords"].dtype == np.uint64
    assert a.fn is not b.fn
    np.testing.assert_array_equal(wide.link_load, first.link_load, strict=True)
    np.testing.assert_array_equal(wide.metrics["completion_time"], first.metrics["completion_time"], strict=True)
