"""Strict JAX settings for the whole test suite (Diffrax-style)."""

import os
import shutil
import tempfile

os.environ.setdefault("JAX_PLATFORMS", "cpu")
# JAX's persistent compilation cache, which the CLI keeps under ~/.cache/evaluator/jax, goes to one fresh
# directory per test run instead, shared by this process, the xdist workers (they inherit the variable) and the
# CLI subprocesses and local Ray workers the tests start: a kernel that several tests build on the same network
# is compiled once. The run that made the directory removes it at the end. tests/test_compilation_cache.py
# sets its own directories; EVALUATOR_COMPILATION_CACHE=0 in the environment turns it off.
_OWN_CACHE = "EVALUATOR_TEST_JAX_CACHE" not in os.environ
if _OWN_CACHE:
    os.environ["EVALUATOR_TEST_JAX_CACHE"] = tempfile.mkdtemp(prefix="evaluator-tests-jax-")
os.environ.setdefault("EVALUATOR_COMPILATION_CACHE", os.environ["EVALUATOR_TEST_JAX_CACHE"])
# The suite compiles hundreds of small kernels and runs each on a few points: XLA:CPU's LLVM back end at -O0
# compiles them faster than it runs them slower (the whole suite: 553 -> 458 s on 2 cores). Program semantics
# are the same at every level (XLA's own HLO passes still run; LLVM keeps IEEE arithmetic without fast-math),
# so every check holds as in an optimised build; `evaluator bench` measures the optimised build. A level the
# environment already gives is kept, as are other XLA flags; subprocesses and Ray workers inherit it.
if "xla_backend_optimization_level" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_backend_optimization_level=0").strip()

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)
jax.config.update("jax_numpy_rank_promotion", "raise")
jax.config.update("jax_numpy_dtype_promotion", "strict")

import evaluator  # noqa: E402,F401  (sets x64 as well)
from evaluator._jax_cache import enable_compilation_cache  # noqa: E402

enable_compilation_cache()


def pytest_sessionfinish(session, exitstatus):
    if _OWN_CACHE and not hasattr(session.config, "workerinput"):  # the run that made it, not an xdist worker
        shutil.rmtree(os.environ["EVALUATOR_TEST_JAX_CACHE"], ignore_errors=True)

# Tolerances: the one table is tests/helpers.py (TOL).


# Parallel runs (`make test` uses pytest-xdist, `-n 2 --dist loadgroup`): a module's tests stay on one worker
# (its JIT-compiled kernels and module fixtures are reused, as in a serial run), and the modules that start a
# local Ray or kill drivers share one worker so that no two Ray clusters compete for the cores (the named
# studies of tests/test_sweep.py run in-process without Ray and are spread over both workers).
_RAY_MODULES = {"test_sweep", "test_faults", "test_compilation_cache"}


def pytest_collection_modifyitems(config, items):
    import pytest

    for item in items:
        module = item.nodeid.split("::", 1)[0].rsplit("/", 1)[-1].removesuffix(".py")
        group = "ray" if module in _RAY_MODULES else module
        if "::test_named_sweep_composes_and_runs_shrunken[" in item.nodeid:
            group = item.nodeid  # one named study each, no Ray: spread over the workers
        item.add_marker(pytest.mark.xdist_group(group))
