"""Strict JAX settings for the whole test suite (Diffrax-style)."""

import contextlib
import os
import shutil
import tempfile

import pytest

os.environ.setdefault("JAX_PLATFORMS", "cpu")
# JAX's persistent compilation cache, which the CLI keeps under ~/.cache/evaluator/jax, goes to one fresh
# directory per test run instead, shared by this process, the xdist workers (they inherit the variable) and the
# CLI subprocesses and local Ray workers the tests start: a kernel that several tests build on the same network
# is compiled once. The run that made the directory removes it at the end. tests/test_compilation_cache.py
# sets its own directories; EVALUATOR_COMPILATION_CACHE=0 in the environment turns it off.
_OWN_CACHE = "EVALUATOR_TEST_JAX_CACHE" not in os.environ
if _OWN_CACHE:
    os.environ["EVALUATOR_TEST_JAX_CACHE"] = tempfile.mkdtemp(prefix="evaluator-tests-jax-")
    # JAX's own "no limit" (-1, its default) for the run's temporary cache: with a bound (the CLI's 2 GiB) JAX
    # lists the directory and stats every entry on *every* write to see whether to evict, quadratic in the entries
    # (3,000 writes: 276 s against 0.4 s; tests/test_routing_fast.py with 2,000 entries there: 69.8 -> 55.7 CPU-s,
    # 2026-11-26). The directory is removed when the run ends and never nears 2 GiB. Exported, so the xdist workers,
    # CLI subprocesses and Ray workers of the run do the same; enable_compilation_cache keeps a setting given.
    os.environ.setdefault("JAX_COMPILATION_CACHE_MAX_SIZE", "-1")
os.environ.setdefault("EVALUATOR_COMPILATION_CACHE", os.environ["EVALUATOR_TEST_JAX_CACHE"])
# The suite compiles hundreds of small kernels and runs each on a few points: XLA:CPU's LLVM back end at -O0
# compiles them faster than it runs them slower (the whole suite: 553 -> 458 s on 2 cores). Program semantics
# are the same at every level (XLA's own HLO passes still run; LLVM keeps IEEE arithmetic without fast-math),
# so every check holds as in an optimised build; `evaluator bench` measures the optimised build. A level the
# environment already gives is kept, as are other XLA flags; subprocesses and Ray workers inherit it.
# Two more XLA:CPU settings of the same kind (code generation only, not what is computed): the fused loops are
# emitted by XLA's classic elemental emitter instead of the MLIR fusion emitters, and each module is compiled as one
# LLVM module instead of being split for parallel code generation (the tests' modules are small, and the two
# xdist workers already use both cores). Compilation CPU time: 7 small CLI evaluations 16.7 -> 8.1-9.8 s,
# tests/test_jobs.py 76 -> 51 s user (2026-11-26). Every check holds as before (the suite passes with and without).
# A fourth (2026-12-05): LLVM's expensive passes skipped (xla_llvm_disable_expensive_passes; code generation only):
# tests/test_latency.py, test_sharing.py and test_fat_tree.py 64.2 and 62.8 s without, 55.5 and 60.9 s with it
# (interleaved), tests/test_dor_compact.py with test_adaptive_routing.py 106.7 and 101.7 s against 98.2 and 98.7 s.
# The optimised modules below set it back for their kernels.
_XLA_TEST_FLAGS = {"xla_backend_optimization_level": "0", "xla_cpu_use_fusion_emitters": "false",
                   "xla_cpu_parallel_codegen_split_count": "1", "xla_llvm_disable_expensive_passes": "true"}
for _flag, _value in _XLA_TEST_FLAGS.items():
    if _flag not in os.environ.get("XLA_FLAGS", ""):
        os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + f" --{_flag}={_value}").strip()

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)
jax.config.update("jax_numpy_rank_promotion", "raise")
jax.config.update("jax_numpy_dtype_promotion", "strict")

import evaluator  # noqa: E402,F401  (sets x64 as well)
from evaluator._jax_cache import enable_compilation_cache  # noqa: E402
from evaluator._threads import one_core  # noqa: E402

enable_compilation_cache()
# Each xdist worker holds one of the cores, as a sweep's Ray worker does: XLA:CPU's pool of one thread
# (evaluator._threads; EVALUATOR_WORKER_THREADS=all keeps JAX's pool).
one_core()


# Modules whose tests run a few large kernels for seconds each (the buyer's study cells at 512-16,384 nodes: dense
# all-to-alls, hashed ECMP, adaptive fixed points): compiled at XLA's own optimisation level and with its fusion
# emitters (the jits' compiler options override the flags above), where -O0 code ran 2-9x slower than it compiled
# faster (a 16,384-node fat tree's hashed ECMP all-to-all 13.0 -> 1.4 s per seed; ft_adaptive on a 4,096-node halo
# 18.5 -> 9.4 s; the two modules 472 -> 177 CPU-s, 2026-11-28). Not worth it where a test compiles many small
# kernels (tests/test_claims_adaptive.py took 47 -> 60 s). The kernels they build keep these options.
# tests/test_claims_pencil_layouts.py evaluates 6,498 layouts of two 1,024- and 512-rank pencil FFTs: 52 -> 23 s.
OPTIMIZED_MODULES = {"test_claims_buyer", "test_claims_buyer_16k", "test_claims_pencil_layouts"} | set(
    filter(None, os.environ.get("EVALUATOR_TEST_OPTIMIZED", "").split(",")))  # (more, to measure: a, b)
_OPTIMIZED_OPTIONS = {"xla_backend_optimization_level": 2, "xla_cpu_use_fusion_emitters": True,
                      "xla_llvm_disable_expensive_passes": False}


@contextlib.contextmanager
def _options_for(request, modules: set, holder: dict, options: dict):
    """``holder`` (a dict of XLA options) updated with ``options`` while a module of ``modules`` runs, as it was
    after."""
    if request.module.__name__.rsplit(".", 1)[-1] not in modules:
        yield
        return
    saved = dict(holder)
    holder.update(options)
    try:
        yield
    finally:
        holder.clear()
        holder.update(saved)


@pytest.fixture(autouse=True, scope="module")
def _optimized_kernels(request):
    """The kernels compiled by the tests of :data:`OPTIMIZED_MODULES` (module fixtures included) are optimised."""
    from evaluator._batch import compiled

    with _options_for(request, OPTIMIZED_MODULES, compiled.COMPILER_OPTIONS, _OPTIMIZED_OPTIONS):
        yield


# Modules whose tests run mapping searches of many moves (tens of thousands, 1,024 ranks): the move scorers
# (evaluator.mapping._move_scores.move_jit) compiled at LLVM's -O1, where -O0 code ran them 2x slower
# (tests/test_claims_mapping.py's torus trace example: 139 s at -O0, 69 s at -O1, 76 s at -O2, 85 s at -O2 with the
# fusion emitters; -O1 for the whole suite instead: tests/test_jobs.py and tests/test_routing_fast.py 100 -> 127 s,
# 2026-12-01; the tile layouts' annealing, built by move_jit too, on the 8x8x8 pencil: 20.5 s at -O0, 9.4 s at -O1,
# 2026-12-04). Only the move scorers: the kernels these modules evaluate keep the suite's -O0.
MOVES_O1_MODULES = set(filter(None, os.environ.get("EVALUATOR_TEST_MOVES_O1",
                                                   "test_claims_mapping,test_mapping_tiles").split(",")))


_MOVES_O1_OPTIONS = {"xla_backend_optimization_level": 1, "xla_llvm_disable_expensive_passes": False}


@pytest.fixture(autouse=True, scope="module")
def _moves_o1(request):
    """The move scorers built by the tests of :data:`MOVES_O1_MODULES` are compiled at ``-O1``."""
    from evaluator.mapping import _move_scores

    with _options_for(request, MOVES_O1_MODULES, _move_scores.COMPILER_OPTIONS, _MOVES_O1_OPTIONS):
        yield


# The claim tests' ledger (tests/claims.py appends every span a claim reads; tests/stated_numbers.py lists the stated
# results of README.md and docs/ that no claim reads): one file per run, made here, inherited by the workers.
_OWN_LEDGER = "EVALUATOR_CLAIMS_LEDGER" not in os.environ
if _OWN_LEDGER:
    _fd, _ledger = tempfile.mkstemp(prefix="evaluator-claims-", suffix=".jsonl")
    os.close(_fd)
    os.environ["EVALUATOR_CLAIMS_LEDGER"] = _ledger
_CLAIMS_RUN = {"passed": 0, "failed": 0, "skipped": 0}


def pytest_runtest_logreport(report):
    """Count the claim tests' outcomes (on the controller: the workers' reports arrive here too). A skipped claim
    test (its reference absent, e.g. SMPI) leaves its numbers uncovered: the ceilings are then reported, not
    enforced."""
    if "test_claims_" not in report.nodeid:
        return
    if report.skipped:
        _CLAIMS_RUN["skipped"] += 1
    elif report.when == "call":
        _CLAIMS_RUN["passed" if report.passed else "failed"] += 1


def _whole_suite(config) -> bool:
    """Whether this run is the whole suite (``make test``): no keyword, mark or last-failed selection, and no path
    narrower than tests/."""
    from pathlib import Path

    root = Path(__file__).resolve().parent
    o = config.option
    if o.keyword or o.markexpr or getattr(o, "lf", False) or getattr(o, "deselect", None):
        return False
    return all(Path(a.split("::")[0]).resolve() in (root, root.parent) for a in config.args)


def pytest_sessionfinish(session, exitstatus):
    if hasattr(session.config, "workerinput"):
        return
    if (exitstatus == 0 and _CLAIMS_RUN["passed"] and not _CLAIMS_RUN["failed"] and _whole_suite(session.config)):
        from tests import stated_numbers as numbers

        missing = numbers.not_covered(numbers.covered_spans(os.environ["EVALUATOR_CLAIMS_LEDGER"]))
        over = numbers.check_ceilings(missing)
        tr = session.config.pluginmanager.get_plugin("terminalreporter")
        total = sum(len(v) for v in missing.values())
        if tr is not None:
            tr.write_line(f"numbers: {total} stated results of README.md and docs/ neither claim-tested nor marked "
                          f"(a timing, a citation or an input; `make numbers` lists them; tests/stated_numbers.py)")
            for msg in over:
                if _CLAIMS_RUN["skipped"]:
                    tr.write_line(f"numbers: over the ceiling, not enforced ({_CLAIMS_RUN['skipped']} claim tests "
                                  f"skipped): {msg}")
                else:
                    tr.write_line(f"numbers: FAIL {msg}", red=True)
        if over and not _CLAIMS_RUN["skipped"]:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
    if _OWN_LEDGER:
        os.unlink(os.environ["EVALUATOR_CLAIMS_LEDGER"]) if os.path.exists(os.environ["EVALUATOR_CLAIMS_LEDGER"]) \
            else None
    if _OWN_CACHE:  # the run that made it, not an xdist worker
        shutil.rmtree(os.environ["EVALUATOR_TEST_JAX_CACHE"], ignore_errors=True)

# Tolerances: the one table is tests/helpers.py (TOL).


# Parallel runs (`make test`: pytest-xdist, `-n 2 --dist loadgroup`): a module's tests stay on one worker (its
# JIT-compiled kernels and module fixtures are reused, as in a serial run), and the modules that start a local Ray
# or kill drivers share one worker so that no two Ray clusters compete for the cores (the named studies of
# tests/test_sweep.py run in-process without Ray and are spread over both workers). The groups are made by the
# scheduler below from the test ids: xdist's own `xdist_group` marks do not group anything with pytest >= 9 (xdist
# renames `item._nodeid`, which pytest 9 no longer reads: every test was its own group, and module fixtures such
# as tests/test_claims_rdn.py's study were computed on both workers). The groups go out heaviest first (longest
# processing time first: the last groups to finish are short ones), by the seconds below.
_RAY_MODULES = {"test_sweep", "test_faults", "test_compilation_cache", "test_ray_connect", "test_ray_multinode"}
# modules that share a per-process cache (tests/helpers.py composed_option: every config-group option composed once)
_SHARED = {"test_layout": "config options", "test_config_cli": "config options"}
from tests.slow_tests import group_seconds  # noqa: E402

_GROUP_SECONDS = group_seconds()
"""Seconds of each group in the last full run the file was made from (tests/data/group_seconds.json, written by
``python -m tests.slow_tests JUNIT.xml`` with the slow-test list); only their order matters; a group not in it
(new): 0.1 s a test. Until 2026-12-01 a table typed in here, which had fallen behind (tests/test_claims_mapping.py
at 14 s took 254 s and started among the last groups)."""

SLOW_GROUPS = {"ray", "test_docs_run", "test_sweep_docs_h1", "test_routing_fast", "test_mapping_search",
               "test_hydra_axes", "test_sweep_bounds", "test_structured", "test_reference_walk",
               "test_bounds_certified", "test_smpi_collectives", "test_startup_cache_fresh",
               # a module fixture of 10-14 s that most of the module's tests share (a study, the commands whose
               # outputs are ranked): listing the tests one by one moves it to the next (2026-12-01)
               "test_buyer_study", "test_rdn_study", "test_query_rank",
               # the same, 11-18 s in a make test-quick run (2026-12-07)
               "test_audit_buyer", "test_audit_rdn_study", "test_audit_plot"}
"""Groups that ``make test-quick`` leaves out (with every claim test, tests/test_claims_*.py): marked ``slow``."""


def pytest_collection_modifyitems(config, items):
    """Mark the slow groups' tests ``slow``, and the tests of tests/data/slow_tests.txt (half a second or more in
    a full run: tests/slow_tests.py); ``make test-quick`` runs ``-m "not slow"``."""
    from tests.slow_tests import listed

    slow_tests = listed()
    # tests/test_startup_cache.py's checks run in a fresh process (tests/test_startup_cache_fresh.py runs the file
    # there): in a run of more than that file they are deselected, not reported as 10 skips (alone, its skipif says
    # why they do not run here)
    fresh = [i for i in items if i.nodeid.startswith("tests/test_startup_cache.py::")]
    if fresh and len(fresh) < len(items) and os.environ.get("EVALUATOR_TEST_FRESH_PROCESS") != "1":
        config.hook.pytest_deselected(items=fresh)
        items[:] = [i for i in items if not i.nodeid.startswith("tests/test_startup_cache.py::")]
    for item in items:
        group = xdist_group(item.nodeid)
        if group in SLOW_GROUPS or group.startswith(("test_claims_", "named ")) or item.nodeid in slow_tests:
            item.add_marker(pytest.mark.slow)
# (2026-11-26: test_mapping_search, 60 s, was not listed: 12 tests at the old default of 0.3 s a test put it among
# the last groups to start, a tail of a minute on one worker; the modules of hundreds of quick tests, e.g.
# tests/test_workload.py, 139 tests in 1.4 s, were counted 40 s)
_NAMED = "::test_named_sweep_composes_and_runs_shrunken["


def xdist_group(nodeid: str) -> str:
    """The group of a test id: its module, ``ray`` for the modules that start Ray, ``config options`` for the two
    modules that share the composed config-group options, ``named STUDY`` for each named study of
    tests/test_sweep.py."""
    if _NAMED in nodeid:
        return "named " + nodeid.split(_NAMED, 1)[1].rstrip("]")
    module = nodeid.split("::", 1)[0].rsplit("/", 1)[-1].removesuffix(".py")
    return "ray" if module in _RAY_MODULES else _SHARED.get(module, module)


def pytest_xdist_make_scheduler(config, log):
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class GroupScheduling(LoadScopeScheduling):
        """xdist's scope scheduling with :func:`xdist_group` as the scope, heaviest waiting group first."""

        def _split_scope(self, nodeid):
            return xdist_group(nodeid)

        def _assign_work_unit(self, node):
            heaviest = max(self.workqueue, key=lambda g: _GROUP_SECONDS.get(g, 0.1 * len(self.workqueue[g])))
            self.workqueue.move_to_end(heaviest, last=False)
            super()._assign_work_unit(node)

    return GroupScheduling(config, log)
