"""The program store (issue 24 item 10, library start-up): a later process loads the kernel's compiled executable
and its working-set estimate instead of tracing and lowering the kernel again (evaluator/_program_store.py).

A "later process" is played here by a new topology object with the same parameters, after the process's kernels
shared by content are forgotten (``forget_kernels``): it gets new kernels, which look the program up in the store. Every result must be bit for bit the one of the usual path (the store off: JAX
traces, lowers and compiles), on several topologies, routings and kernel variants; a damaged entry falls back
silently; the store is off with ``EVALUATOR_COMPILATION_CACHE=0``. The timing is ``evaluator bench --only
startup``."""

from __future__ import annotations

import os

import jax
import numpy as np
import pytest

import evaluator as ev
from evaluator import _program_store as store
from evaluator import placement as P
from evaluator import routing as RT
from evaluator import structured as S
from evaluator import topology as T
from evaluator import traffic as TR
from evaluator._jax_cache import ENV
from evaluator.evaluation import evaluate_batch
from evaluator._batch.compiled import batch_kernel, forget_kernels
from tests.helpers import COMPILE_EVENT, TRACE_EVENT, jax_events

FRESH = "EVALUATOR_TEST_FRESH_PROCESS"
# These checks model a later process loading stored programs; in a worker that has run hundreds of other tests,
# XLA:CPU may refuse to load a deserialized executable beside the ones it holds (the reason the store is opt-in),
# and the store then falls back to tracing. So they run in a fresh process: tests/test_startup_cache_fresh.py
# runs this file in one (with FRESH set) and fails with its output when any check fails.
pytestmark = pytest.mark.skipif(os.environ.get(FRESH) != "1",
                                reason="run in a fresh process by tests/test_startup_cache_fresh.py")

def events():
    return jax_events(TRACE_EVENT, COMPILE_EVENT, this_thread=True)


@pytest.fixture
def programs(tmp_path, monkeypatch):
    """A fresh store directory (JAX's own cache left as the session has it); ``off()`` turns the store off."""
    path = tmp_path / "programs"
    on = {"dir": path}
    monkeypatch.setattr(store, "store_dir", lambda: on["dir"])

    class Handle:
        dir = path

        @staticmethod
        def off():
            on["dir"] = None

        @staticmethod
        def files():
            return sorted(path.glob("*.program")) if path.exists() else []

    return Handle


def _stencil_case():
    def build():  # a later process: the kernels shared by content forgotten
        forget_kernels()
        topo = T.torus((4, 4))
        tr = [TR.stencil((8, 8), (4, 4), 8.0), TR.stencil((8, 8), (4, 4), 24.0)]  # two flow lists: per point
        return topo, RT.dor(), tr, [P.linear(topo, 16)] * 2
    return build


def _dragonfly_case(routing):
    def build():  # a later process: the kernels shared by content forgotten
        forget_kernels()
        topo = T.dragonfly(2, 4, 2, 9)
        pls = [P.dragonfly_cartesian(topo, (4, 4, 2), (2, 2, 2), seed=s) for s in range(3)]
        return topo, routing, TR.stencil((4, 4, 2), (4, 4, 2), 8.0), pls  # one flow list: shared
    return build


def _dense_case():
    def build():  # a later process: the kernels shared by content forgotten
        forget_kernels()
        topo = T.torus((4, 3, 2))
        return topo, RT.dor("longest_first"), S.all_to_all(24, 3.0), P.linear(topo, 24)
    return build


CASES = {
    "torus-dor-per-point": _stencil_case(),
    "dragonfly-minimal-shared": _dragonfly_case(RT.minimal()),
    "dragonfly-valiant-shared": _dragonfly_case(RT.valiant()),
    "torus-dense": _dense_case(),
}


def _same(a, b):
    assert a.metrics.keys() == b.metrics.keys()
    for k in a.metrics:
        np.testing.assert_array_equal(a.metrics[k], b.metrics[k], err_msg=k, strict=True)
    np.testing.assert_array_equal(a.link_load, b.link_load, strict=True)


@pytest.mark.parametrize("case", list(CASES))
def test_a_stored_program_gives_the_usual_results_bit_for_bit(case, programs):
    build = CASES[case]
    topo, routing, tr, pl = build()
    first = evaluate_batch(topo, routing, tr, pl, keep_link_load=True)  # compiles, stores the program
    assert len(programs.files()) == 1
    topo, routing, tr, pl = build()  # a later process: new kernels
    with events() as seen:
        loaded = evaluate_batch(topo, routing, tr, pl, keep_link_load=True)
    assert seen == []  # neither traced (working set included) nor compiled: loaded
    assert batch_kernel(topo, routing, True).fn._cache_size() == 1  # the loaded program counts as one
    programs.off()
    topo, routing, tr, pl = build()
    with events() as seen:
        usual = evaluate_batch(topo, routing, tr, pl, keep_link_load=True)
    assert TRACE_EVENT in seen  # the usual path: traced again
    _same(loaded, usual)
    _same(first, usual)
    assert np.all(usual.metrics["completion_time"] > 0)


def test_evaluate_of_an_8x8_torus_as_the_bench_runs_it(programs):
    """``ev.evaluate`` (the bench's call: one point, link loads kept): the loaded program's dataset is identical."""
    def run():
        forget_kernels()  # a later process
        topo = ev.torus((8, 8))
        return ev.evaluate(topo, TR.stencil((512, 512), (8, 8)), P.linear(topo, 64), "dor")

    run()
    with events() as seen:
        loaded = run()
    assert seen == []
    programs.off()
    usual = run()
    assert loaded.identical(usual)
    # one message per link: a face of 512/8 = 64 elements of 1,024 bytes, over 2 GB/s
    assert float(usual.completion_time) == 64 * 1024 / 2.0e9


def test_a_damaged_entry_falls_back_silently_and_is_replaced(programs, capsys):
    build = CASES["torus-dense"]
    topo, routing, tr, pl = build()
    ref = evaluate_batch(topo, routing, tr, pl, keep_link_load=True)
    (entry,) = programs.files()
    good = entry.read_bytes()
    for damage in (b"not a pickle", good[: len(good) // 2]):
        entry.write_bytes(damage)
        topo, routing, tr, pl = build()
        _same(evaluate_batch(topo, routing, tr, pl, keep_link_load=True), ref)
        assert entry.read_bytes() != damage  # stored again
    # a readable entry whose executable does not load: the usual path
    import pickle

    data = pickle.loads(entry.read_bytes())
    entry.write_bytes(pickle.dumps({**data, "program": (b"\0garbage", data["program"][1], data["program"][2])}))
    topo, routing, tr, pl = build()
    _same(evaluate_batch(topo, routing, tr, pl, keep_link_load=True), ref)
    assert capsys.readouterr() == ("", "")


def test_no_entry_for_another_topology_or_routing(programs):
    """Keys come from the topology's and routing's fields: another capacity or routing is another program."""
    a = T.torus((4, 4))
    b = T.torus((4, 4), link_bandwidth=1.0e9)
    tr = TR.stencil((8, 8), (4, 4), 8.0)
    for topo, routing in ((a, RT.dor()), (b, RT.dor()), (a, RT.dor("longest_first"))):
        evaluate_batch(topo, routing, tr, P.linear(topo, 16))
    assert len(programs.files()) == 3
    assert store.fingerprint(T.torus((4, 4))) == store.fingerprint(a) != store.fingerprint(b)
    assert store.fingerprint(a, object()) is None  # anything else: no store


def test_off_switch_and_directory(monkeypatch, tmp_path):
    saved = {n: getattr(jax.config, n) for n in ("jax_compilation_cache_dir", "jax_enable_compilation_cache")}
    try:
        jax.config.update("jax_compilation_cache_dir", str(tmp_path / "jax"))
        jax.config.update("jax_enable_compilation_cache", True)
        monkeypatch.setenv(ENV, str(tmp_path / "jax"))
        monkeypatch.delenv(store.OPT_IN, raising=False)
        assert store.store_dir() is None  # off unless asked for
        monkeypatch.setenv(store.OPT_IN, "1")
        assert store.store_dir() == tmp_path / "jax" / store.SUBDIR
        for value in ("0", "off", "False", "no"):
            monkeypatch.setenv(ENV, value)
            assert store.store_dir() is None
        monkeypatch.delenv(ENV)
        jax.config.update("jax_enable_compilation_cache", False)
        assert store.store_dir() is None
        jax.config.update("jax_enable_compilation_cache", True)
        jax.config.update("jax_compilation_cache_dir", None)
        assert store.store_dir() is None
    finally:
        for n, v in saved.items():
            jax.config.update(n, v)


def test_the_store_keeps_its_bounds(programs, monkeypatch):
    monkeypatch.setattr(store, "MAX_ENTRIES", 2)
    for i, key in enumerate("abc"):
        assert store.save(key, {"program": None, "peak": i})
        os.utime(programs.dir / f"{key}.program", (1000 + i, 1000 + i))  # c the newest
    store.save("d", {"program": None, "peak": 3})
    assert [p.stem for p in programs.files()] == ["c", "d"]
    assert store.load("c")["peak"] == 2 and store.load("a") is None
    # an entry saved under another key is not taken for this one
    (programs.dir / "e.program").write_bytes((programs.dir / "c.program").read_bytes())
    assert store.load("e") is None



def test_a_program_that_fails_when_it_runs_falls_back(programs, monkeypatch):
    """XLA:CPU may load an executable that then fails when its result is fetched ("NOT_FOUND: Function
    bitcast_gather_fusion.3 not found", a repeated RDN study): the first call of a loaded program is waited for,
    and the usual path answers when it fails."""
    build = CASES["torus-dense"]
    topo, routing, tr, pl = build()
    ref = evaluate_batch(topo, routing, tr, pl, keep_link_load=True)
    assert programs.files()

    def fails_when_run(packed):
        def prog(*a):
            raise RuntimeError("NOT_FOUND: Function bitcast_gather_fusion.3 not found")
        return prog

    monkeypatch.setattr(store, "unpack_executable", fails_when_run)
    topo, routing, tr, pl = build()
    _same(evaluate_batch(topo, routing, tr, pl, keep_link_load=True), ref)

