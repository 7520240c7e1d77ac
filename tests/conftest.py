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
