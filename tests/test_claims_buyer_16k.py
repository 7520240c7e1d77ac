"""docs/buyer.md's results at 16,384 nodes, rerun (the cells of tests/test_claims_buyer.py at the largest size, in a
module of their own: `make test` keeps a module on one worker, and the two halves take minutes each)."""

from __future__ import annotations

import pytest

from tests.test_claims_buyer import NETWORKS, WORKLOADS, results_cell, suite_level


@pytest.mark.parametrize("workload", WORKLOADS)
@pytest.mark.parametrize("fam", NETWORKS)
def test_results_cell_16384(fam, workload):
    results_cell(16384, fam, workload)


OPTIMIZED_CELLS = {("torus", "all_to_all"), ("dragonfly", "mix"), ("dragonfly", "permutation"),
                   ("fat_tree", "all_to_all")}
"""The cells whose kernels keep this module's optimised options (tests/conftest.py, OPTIMIZED_MODULES): those whose
points run for seconds at 16,384 nodes. The others compile a few kernels, each run on a few points, at the suite's
``-O0`` (as tests/test_claims_buyer.py does for its short cells): the module 71.1 and 68.8 s -> 59.5 and 62.1 s,
its backend compilation 21.8 and 19.9 s -> 9.6 and 10.0 s (two pairs back to back on 2 loaded cores, 2026-12-06).
Code generation only: the same numbers."""


@pytest.fixture(autouse=True)
def _suite_level(request):
    """The cells outside :data:`OPTIMIZED_CELLS` compiled with the suite's options (tests/test_claims_buyer.py
    ``suite_level``)."""
    params = request.node.callspec.params
    if (params["fam"], params["workload"]) in OPTIMIZED_CELLS:
        yield
        return
    with suite_level():
        yield
