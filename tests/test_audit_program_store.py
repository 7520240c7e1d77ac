"""Audit of the program store (evaluator/_program_store.py; evaluator/_batch/compiled.py Kernels._run/peak_bytes).

A stored executable must never answer for a network or routing it was not compiled for. Each test points the store
at a fresh temporary directory through its real switches (``EVALUATOR_PROGRAM_STORE=1``, ``EVALUATOR_COMPILATION_CACHE``
and JAX's cache directory: an empty JAX cache, as a process on a cold machine), plays "a later process" in this one
(:func:`forget_kernels` and new topology objects: new kernels, which look their programs up in the store, as
tests/test_startup_cache.py does), checks that the program WAS loaded (else the comparison would be vacuous), and
compares with the same evaluation with the store off (``EVALUATOR_COMPILATION_CACHE=0``, JAX's cache off too: a
fresh compilation) and, on a torus under DOR, with a per-flow walk written here.
"""

from __future__ import annotations

import contextlib
import pickle

import jax
import numpy as np
import pytest
from jax._src import compilation_cache as jax_cc

from evaluator import _program_store as store
from evaluator import placement as P
from evaluator import routing as RT
from evaluator import topology as T
from evaluator import traffic as TR
from evaluator._batch import compiled as C
from evaluator._jax_cache import ENV
from evaluator.evaluation import evaluate_batch
from tests.helpers import COMPILE_EVENT, TRACE_EVENT, jax_events

_JAX = ("jax_compilation_cache_dir", "jax_enable_compilation_cache", "jax_persistent_cache_min_compile_time_secs")


class Store:
    """The store of one test: ``on()`` (a fresh directory, JAX's own cache an empty directory beside it, into which
    nothing is written: every program is compiled here, as in a process whose JAX cache is cold; an executable that
    JAX deserialized from its cache cannot be held beside the store's copy of it in one process, see
    tests/test_startup_cache_fresh.py) or ``off()`` (the documented switch, JAX's persistent cache off as well)."""

    def __init__(self, root, monkeypatch):
        self.root, self.mp = root, monkeypatch
        self.dir = root / "jax" / store.SUBDIR

    def on(self):
        self.mp.setenv(store.OPT_IN, "1")
        self.mp.setenv(ENV, str(self.root / "jax"))
        jax.config.update("jax_compilation_cache_dir", str(self.root / "jax"))
        jax.config.update("jax_enable_compilation_cache", True)
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 1.0e9)
        jax_cc.reset_cache()

    def off(self):
        self.mp.setenv(ENV, "0")
        jax.config.update("jax_enable_compilation_cache", False)
        jax_cc.reset_cache()
        assert store.store_dir() is None

    def files(self):
        return sorted(self.dir.glob("*.program")) if self.dir.exists() else []


@pytest.fixture
def programs(tmp_path, monkeypatch):
    saved = {n: getattr(jax.config, n) for n in _JAX}
    s = Store(tmp_path, monkeypatch)
    s.on()
    assert store.store_dir() == s.dir
    C.forget_kernels()
    try:
        yield s
    finally:
        for n, v in saved.items():
            jax.config.update(n, v)
        jax_cc.reset_cache()
        C.forget_kernels()


@pytest.fixture
def loads(monkeypatch):
    """Programs the store handed out and that ran (``Kernels._programs`` of every kernel built meanwhile)."""
    made = []
    init = C.Kernels.__init__

    def spy(self, *a, **k):
        init(self, *a, **k)
        made.append(self)

    monkeypatch.setattr(C.Kernels, "__init__", spy)

    def count():
        return sum(p is not None for k in made for p in k._programs.values())
    return count


def evaluate(case, keep):
    """``case`` evaluated as a new process would: new kernels (the kernels shared by content forgotten), a new
    topology object."""
    C.forget_kernels()
    topo = case["topo"]()
    tr, pl = case["traffic"](topo), case["placement"](topo)
    return topo, evaluate_batch(topo, case["routing"], tr, pl, keep_link_load=keep)


def same(a, b, what):
    assert a.metrics.keys() == b.metrics.keys(), what
    for k in a.metrics:
        np.testing.assert_array_equal(a.metrics[k], b.metrics[k], err_msg=f"{what}: {k}", strict=True)
    if a.link_load is None or b.link_load is None:
        assert a.link_load is None and b.link_load is None, what
    else:
        np.testing.assert_array_equal(a.link_load, b.link_load, err_msg=what, strict=True)


# ---------------------------------------------------------------------------------------------------------------
# the reference: a per-flow walk of dimension-order routes on a torus (router i holds node i, task i on node i)
# ---------------------------------------------------------------------------------------------------------------

def _flows(seed, n=12, m=30):
    rng = np.random.default_rng(seed)
    src = rng.integers(0, n, m)
    dst = (src + rng.integers(1, n, m)) % n  # never src itself
    return src, dst, rng.integers(1, 1000, m).astype(float) * 1024.0


def dor_walk(topo, order, tie, src, dst, nbytes):
    """Every link's bytes: each flow travels the dimensions in ``order``, the shorter way round each ring, a tie
    (exactly half a ring) split in two halves or sent the positive way; plus its node's injection and ejection."""
    nrl = int(topo.n_router_links)
    coords = np.asarray(topo.router_coords)
    at = {tuple(int(x) for x in c): i for i, c in enumerate(coords)}
    link = {(int(s), int(d)): i for i, (s, d) in enumerate(zip(topo.link_src[:nrl], topo.link_dst[:nrl]))}
    kind = [topo.class_names[c] for c in topo.link_class]
    inj = {int(topo.link_node[i]): i for i in range(topo.n_links) if kind[i] == "injection"}
    ej = {int(topo.link_node[i]): i for i in range(topo.n_links) if kind[i] == "ejection"}
    loads = np.zeros(topo.n_links)

    def hop_run(c, dim, step, hops, w):
        c = list(c)
        for _ in range(hops):
            nxt = list(c)
            nxt[dim] = (c[dim] + step) % topo.dims[dim]
            loads[link[(at[tuple(c)], at[tuple(nxt)])]] += w
            c = nxt

    for s, d, b in zip(src, dst, nbytes):
        c, goal = [int(x) for x in coords[s]], [int(x) for x in coords[d]]
        for dim in order:
            n = topo.dims[dim]
            delta = (goal[dim] - c[dim]) % n
            if 0 < 2 * delta < n:
                hop_run(c, dim, +1, delta, b)
            elif 2 * delta > n:
                hop_run(c, dim, -1, n - delta, b)
            elif delta and tie == "split":
                hop_run(c, dim, +1, delta, b / 2)
                hop_run(c, dim, -1, delta, b / 2)
            elif delta:
                hop_run(c, dim, +1, delta, b)
            c[dim] = goal[dim]
        loads[inj[int(s)]] += b
        loads[ej[int(d)]] += b
    return loads


def _torus_case(bw=(2.0e9, 3.0e9), inj=None, routing=None, order=(0, 1), tie="split"):
    traffics = [_flows(1), _flows(2)]
    return {"topo": lambda: T.torus((4, 3), link_bandwidth=bw, injection_bandwidth=inj),
            "routing": routing or RT.dor(), "order": order, "tie": tie, "flows": traffics,
            "traffic": lambda topo: [TR.from_flows(12, *f) for f in traffics],
            "placement": lambda topo: P.linear(topo, 12)}


# same shapes, other contents: bandwidths, injection, dimension order, tie rule (and keep_link_load below)
TORUS = {
    "bw-2-3": _torus_case(),
    "bw-5-1": _torus_case(bw=(5.0e9, 1.0e9)),
    "injection-1e9": _torus_case(inj=1.0e9),
    "order-1-0": _torus_case(routing=RT.dor((1, 0)), order=(1, 0)),
    "tie-positive": _torus_case(routing=RT.dor(tie="positive"), tie="positive"),
}


def _check_walk(topo, case, res, keep, what):
    cap = np.asarray(topo.capacity)
    for p, (s, d, b) in enumerate(case["flows"]):
        ref = dor_walk(topo, case["order"], case["tie"], s, d, b)
        if keep:
            np.testing.assert_array_equal(res.link_load[p], ref, err_msg=what)
        np.testing.assert_allclose(res.metrics["completion_time"][p], np.max(ref / cap), rtol=1e-12, err_msg=what)


def _store_load_usual(programs, loads, cases, runs, compiles=False, off=True):
    """``runs`` ((case name, keep_link_load)) evaluated as: compiled (the jit's result) and stored; loaded by a
    later process (checked: every one loaded, nothing compiled unless ``compiles``); with ``off``, with the store
    off. Returns {run: (topology, result)} of the last of these, each checked bit for bit against the others."""
    stored = {r: evaluate(cases[r[0]], r[1]) for r in runs}
    assert len(programs.files()) == len(runs)  # one entry per content: no two of them share a key
    before = loads()
    with jax_events(COMPILE_EVENT, this_thread=True) as seen:
        loaded = {r: evaluate(cases[r[0]], r[1]) for r in reversed(runs)}
    assert loads() - before == len(runs)  # each run answered by a loaded program
    assert compiles or seen == []
    for r in runs:
        same(loaded[r][1], stored[r][1], f"loaded {r}")
    if not off:
        return loaded
    programs.off()
    usual = {r: evaluate(cases[r[0]], r[1]) for r in runs}
    for r in runs:
        same(loaded[r][1], usual[r][1], f"loaded {r}")
    return usual


def test_torus_contents_of_one_shape_each_get_their_own_program(programs, loads):
    """Bandwidths, injection bandwidth, DOR order and tie rule, keep_link_load: the arrays' shapes are the same;
    every content is its own entry, and the loaded results are the compiled ones and the per-flow walk's."""
    runs = [(name, True) for name in TORUS] + [("bw-2-3", False)]
    usual = _store_load_usual(programs, loads, TORUS, runs, off=False)  # (the walk: the reference)
    for r in runs:
        topo, res = usual[r]
        assert (res.link_load is None) == (not r[1])
        _check_walk(topo, TORUS[r[0]], res, r[1], str(r))
    # the contents do change the numbers (else the check above could not tell one program from another)
    times = {r[0]: tuple(usual[r][1].metrics["completion_time"]) for r in runs if r[1]}
    assert len(set(times.values())) == len(times), times


def _dragonfly_case(routing, bw_r=10.0e9):
    return {"topo": lambda: T.dragonfly(2, 4, 2, 9, bandwidth_r=bw_r), "routing": routing,
            "traffic": lambda topo: TR.stencil((4, 4, 2), (4, 4, 2), 8.0e3),
            "placement": lambda topo: [P.dragonfly_cartesian(topo, (4, 4, 2), (2, 2, 2), seed=s) for s in range(3)]}


DRAGONFLY = {
    "minimal": _dragonfly_case(RT.minimal()),
    "minimal-global-1e9": _dragonfly_case(RT.minimal(), bw_r=1.0e9),
    "valiant": _dragonfly_case(RT.valiant()),
}


def test_dragonfly_global_bandwidth_and_routings(programs, loads):
    runs = [(name, True) for name in DRAGONFLY]
    usual = _store_load_usual(programs, loads, DRAGONFLY, runs)
    loads_of = {r[0]: usual[r][1].link_load for r in runs}
    assert not np.array_equal(loads_of["minimal"], loads_of["valiant"])
    t = {r[0]: usual[r][1].metrics["completion_time"] for r in runs}
    assert np.all(t["minimal-global-1e9"] > t["minimal"])


def _ecmp_case(seed):
    flows = _flows(7, n=16, m=40)
    return {"topo": lambda: T.fat_tree((4, 4), (1, 4)), "routing": RT.ecmp(seed),
            "traffic": lambda topo: TR.from_flows(16, *flows), "placement": lambda topo: P.linear(topo, 16)}


def test_hashed_ecmp_seeds_share_one_program_each_with_its_own_seed(programs, loads):
    """Hashed ECMP's operators share one program (``compile_key``: the seed is a table, an argument): the program
    stored for seed 0 answers for seed 3 with seed 3's numbers."""
    evaluate(_ecmp_case(0), True)
    assert len(programs.files()) == 1
    before = loads()
    topo, loaded = evaluate(_ecmp_case(3), True)
    assert loads() - before == 1 and len(programs.files()) == 1  # seed 0's program, loaded for seed 3
    programs.off()
    _, usual0 = evaluate(_ecmp_case(0), True)
    _, usual3 = evaluate(_ecmp_case(3), True)
    same(loaded, usual3, "seed 3")
    assert not np.array_equal(usual0.link_load, usual3.link_load)  # the seed matters
    # independent: a flow between two leaves crosses one up and one down link; each leaf's up links carry the
    # bytes that leave it, its down links the bytes that enter it
    src, dst, nbytes = _flows(7, n=16, m=40)
    leaf = np.asarray(topo.node_router)
    cross = leaf[src] != leaf[dst]
    nrl = int(topo.n_router_links)
    rl = loaded.link_load[0, :nrl]
    assert rl.sum() == 2 * nbytes[cross].sum()
    up = np.isin(np.asarray(topo.link_src[:nrl]), leaf)
    for r in np.unique(leaf):
        assert rl[np.asarray(topo.link_src[:nrl]) == r].sum() == nbytes[cross & (leaf[src] == r)].sum()
        assert rl[np.asarray(topo.link_dst[:nrl]) == r].sum() == nbytes[cross & (leaf[dst] == r)].sum()
    assert rl[up].sum() == nbytes[cross].sum()


def _reentry(path, **change):
    data = pickle.loads(path.read_bytes())
    return pickle.dumps({**data, **change})


def test_damaged_or_foreign_entries_are_ignored_without_a_word(programs, loads, capfd, recwarn):
    """Garbage, a truncated or empty file, another key's entry (a program of the same shapes for another DOR
    order), an entry whose executable does not load or whose peak is not a number: the results are the walk's,
    nothing is printed or warned, and the entry is stored again."""
    case, other = TORUS["bw-2-3"], TORUS["order-1-0"]
    evaluate(other, True)
    (theirs,) = programs.files()
    topo, _ = evaluate(case, True)
    (ours,) = [p for p in programs.files() if p != theirs]
    good = ours.read_bytes()
    damages = {"garbage": b"\x80\x05not a pickle\xff" * 7, "truncated": good[: len(good) // 3],
               "another key's entry": theirs.read_bytes(),
               "executable garbage": _reentry(ours, program=(b"\0garbage", *pickle.loads(good)["program"][1:]))}
    for what, damage in damages.items():  # (a later process each time)
        ours.write_bytes(damage)
        topo, res = evaluate(case, True)
        _check_walk(topo, case, res, True, what)
        assert ours.read_bytes() != damage, what  # stored again
        before = loads()
        topo, res = evaluate(case, True)  # and the entry stored again is the right one
        assert loads() - before == 1, what
        _check_walk(topo, case, res, True, what)
    assert capfd.readouterr() == ("", "")
    assert not [w for w in recwarn if "evaluator" in str(w.filename)]


def test_a_stored_peak_belongs_to_its_own_signature(programs, monkeypatch):
    """The memory guard's working set read from the store is the one measured for that very program: two block
    sizes of one kernel (two signatures) keep their own peaks, read back without tracing, equal to the peaks the
    store-off path measures."""
    seen = []
    peak_bytes = C.Kernels.peak_bytes

    def spy(self, variant, *args, step, measure):
        measured = []

        def m(jaxpr):
            measured.append(1)
            return measure(jaxpr)
        value = peak_bytes(self, variant, *args, step=step, measure=m)
        shapes = tuple(tuple(x.shape) for x in jax.tree_util.tree_leaves(args))
        seen.append(((variant, shapes, step), value, bool(measured)))
        return value

    monkeypatch.setattr(C.Kernels, "peak_bytes", spy)
    cases = {n: {**TORUS["bw-2-3"], "traffic": (lambda k: lambda topo: [TR.from_flows(12, *_flows(s)) for s in
                                                                        range(k)])(n)} for n in (1, 5)}

    def run():
        seen.clear()
        for n, case in cases.items():
            evaluate(case, True)
        return {sig: (value, measured) for sig, value, measured in seen}

    stored = run()
    assert len(stored) == 2 and all(m for _, m in stored.values())  # two signatures, measured
    assert len({v for v, _ in stored.values()}) == 2  # their peaks differ
    with jax_events(TRACE_EVENT, this_thread=True) as traced:
        loaded = run()
    assert traced == [] and not any(m for _, m in loaded.values())  # read from the store: nothing traced
    programs.off()
    usual = run()
    assert loaded.keys() == usual.keys() == stored.keys()
    for sig in usual:
        assert loaded[sig][0] == usual[sig][0] == stored[sig][0], sig


def test_environment_key_covers_versions_backend_flags_and_settings(monkeypatch):
    import jaxlib

    key = store.environment_key()
    for part in (jax.__version__, jaxlib.__version__, repr(jax.default_backend()), repr(jax.devices()[0].device_kind)):
        assert part in key, part
    monkeypatch.setenv("XLA_FLAGS", "")  # the suite's -O0 flags against none: another key
    assert store.environment_key() != key
    monkeypatch.undo()
    assert store.environment_key() == key
    for name, value in (("jax_enable_x64", False), ("jax_default_matmul_precision", "highest"),
                        ("jax_numpy_dtype_promotion", "standard"), ("jax_optimization_level", "O1")):
        with _setting(name, value):
            assert store.environment_key() != key, name
    # with 64-bit mode off, int64/float64 asked for by name are kept (ALLOW) or narrowed (WARN): other programs
    with _setting("jax_enable_x64", False):
        narrowed = store.environment_key()
        with _setting("jax_explicit_x64_dtypes", "allow"):
            assert store.environment_key() != narrowed
    assert store.environment_key() == key


@contextlib.contextmanager
def _setting(name, value):
    was = getattr(jax.config, name)
    jax.config.update(name, value)
    try:
        yield
    finally:
        jax.config.update(name, was)


def test_a_program_is_not_loaded_under_other_xla_flags_or_options(programs, loads, monkeypatch):
    """Stored under the suite's XLA flags and the kernels' options; a later process with other flags, or with
    other kernel options, compiles its own (and gets the walk's numbers)."""
    import os

    case = TORUS["bw-2-3"]
    evaluate(case, True)
    before = loads()
    monkeypatch.setenv("XLA_FLAGS", os.environ.get("XLA_FLAGS", "") + " --xla_cpu_enable_fast_math=false")
    evaluate(case, True)
    monkeypatch.setitem(C.COMPILER_OPTIONS, "xla_backend_optimization_level", 1)
    topo, res = evaluate(case, True)
    assert loads() == before and len(programs.files()) == 3
    _check_walk(topo, case, res, True, "other options")


def test_the_key_holds_the_options_the_kernels_were_built_with(programs, loads, monkeypatch):
    """Kernels keyed by their topology and routing (an operator whose data cannot be hashed): kernels built under
    some XLA options and first called after the options changed compile with the options they were built with, so
    their program is stored under those; a later process under the new options compiles its own."""
    monkeypatch.setattr(C, "content_key", lambda *a: None)
    case = TORUS["bw-2-3"]
    C.forget_kernels()
    topo = case["topo"]()
    C.batch_kernel(topo, case["routing"], True)  # built under the default options
    monkeypatch.setitem(C.COMPILER_OPTIONS, "xla_backend_optimization_level", 1)
    evaluate_batch(topo, case["routing"], case["traffic"](topo), case["placement"](topo), keep_link_load=True)
    assert len(programs.files()) == 1
    before = loads()
    topo, res = evaluate(case, True)  # a later process, built and called under the new options
    assert loads() == before and len(programs.files()) == 2
    _check_walk(topo, case, res, True, "options")


ADAPTIVE = {"it-8-power-32": _torus_case(routing=RT.torus_adaptive(iterations=8)),
            "it-3-power-2": _torus_case(routing=RT.torus_adaptive(iterations=3, power=2.0))}


def test_adaptive_parameters_of_one_shape_each_get_their_own_program(programs, loads):
    """The fixed point's power and iterations are constants of the traced program, not arguments: each its own
    program, the loaded results the compiled ones."""
    runs = [(name, True) for name in ADAPTIVE]
    # (the memory guard compiles a non-linear routing's program for XLA's buffer sizes: compile events here)
    # (the reference: the jit's own results, compiled here before they were stored)
    usual = _store_load_usual(programs, loads, ADAPTIVE, runs, compiles=True, off=False)
    res = {r[0]: usual[r][1].link_load for r in runs}
    assert not np.array_equal(res["it-8-power-32"], res["it-3-power-2"])
