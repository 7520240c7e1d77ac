"""docs/buyer.md's results at 16,384 nodes, rerun (the cells of tests/test_claims_buyer.py at the largest size, in a
module of their own: `make test` keeps a module on one worker, and the two halves take minutes each)."""

from __future__ import annotations

import pytest

from tests.test_claims_buyer import NETWORKS, WORKLOADS, results_cell


@pytest.mark.parametrize("workload", WORKLOADS)
@pytest.mark.parametrize("fam", NETWORKS)
def test_results_cell_16384(fam, workload):
    results_cell(16384, fam, workload)
