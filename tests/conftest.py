"""Strict JAX settings for the whole test suite (Diffrax-style)."""

import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")
# The CLI turns JAX's persistent compilation cache on (~/.cache/evaluator/jax): not in tests, which call
# the CLI in-process and in subprocesses (tests/test_compilation_cache.py sets its own directories).
os.environ.setdefault("EVALUATOR_COMPILATION_CACHE", "0")

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)
jax.config.update("jax_numpy_rank_promotion", "raise")
jax.config.update("jax_numpy_dtype_promotion", "strict")

import evaluator  # noqa: E402,F401  (sets x64 as well)

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
