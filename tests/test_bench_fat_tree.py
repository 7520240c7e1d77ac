"""The bench's SciPy routing matrix for fat trees (:mod:`evaluator.bench._fat_tree_matrix`).

* its loads against the per-flow walk on the XGFT labels written in ``tests/test_fat_tree.py`` (not the
  routing module's), link for link, for D-mod-k and ECMP on five trees (tapered, parallel links, mixed
  radices), for random flows with shared nodes and for dense rank-one traffic with uneven weights;
* one matrix serves every point (built once), its entries stay within the size estimate, and a matrix
  estimated too large is refused before anything is built.
"""

from __future__ import annotations

import numpy as np
import pytest

from evaluator import placement, routing, traffic
from evaluator.bench.baseline import routing_matrix, scipy_serves
from evaluator.errors import ResourceError
from evaluator.topology import fat_tree
from evaluator.traffic import dense as structured
from tests.helpers import TOL
from tests.test_fat_tree import TREES, random_case, tree, walk_loads


@pytest.mark.parametrize("kind", ["dmodk", "ecmp_spray"])
@pytest.mark.parametrize("name", sorted(TREES))
def test_matrix_against_the_label_walk(name, kind):
    t = tree(name)
    rt = routing.dmodk() if kind == "dmodk" else routing.ecmp_spray()
    assert scipy_serves(t, rt)
    base = routing_matrix(t, rt)
    R = None
    for seed in (0, 1):
        n_tasks, src, dst, nbytes, tn = random_case(t, seed)
        got = base.link_loads(traffic.from_flows(n_tasks, src, dst, nbytes), placement.explicit(t, tn))
        want = walk_loads(t, zip(src.tolist(), dst.tolist(), nbytes.tolist()), tn, kind)
        np.testing.assert_allclose(got, want, rtol=TOL["rel"], atol=TOL["bytes"], err_msg=f"{name} {kind} {seed}")
        R = base.R if R is None else R
        assert base.R is R  # built once
    assert 0 < base.nnz <= base.estimate()
    rng = np.random.default_rng(4)
    n = t.n_nodes
    pl = placement.explicit(t, rng.permutation(n))
    for dense in (structured.all_to_all(n, 3.0),
                  structured.dense(n, rng.random(n) * (rng.random(n) < 0.7), rng.random(n), 1e3, name="weighted")):
        flows = dense.to_traffic()
        want = walk_loads(t, zip(flows.src.tolist(), flows.dst.tolist(), flows.nbytes.tolist()), pl.task_node, kind)
        np.testing.assert_allclose(base.link_loads(dense, pl), want, rtol=TOL["rel"], atol=TOL["bytes_loose"],
                                   err_msg=f"{name} {kind} {dense.name}")


def test_too_large_a_matrix_is_refused_before_building():
    big = fat_tree(k=48, levels=3)  # D-mod-k: 2,304 leaves x 2,304 keys x (1 + 2) entries
    base = routing_matrix(big, routing.dmodk(), max_bytes=1e8)
    assert base.estimate() == (2304 * 48 * 48 + big.n_nodes) * 3  # 16 M entries: about 1.8 GB to build
    assert base.bytes_per_entry == 112  # a fat tree's build peaks at 66-95 bytes an entry (tests/test_audit_bench.py)
    with pytest.raises(ResourceError) as e:
        base.build()
    assert e.value.field == "bench.scipy_baseline" and "1.82 GB" in str(e.value)
    assert base.R is None
    small = tree("tapered")
    tiny = routing_matrix(small, routing.ecmp_spray(), max_bytes=112 * 3)
    with pytest.raises(ResourceError):
        tiny.link_loads(*_one_point(small))
    assert tiny.R is None


def _one_point(t):
    n_tasks, src, dst, nbytes, tn = random_case(t, 0)
    return traffic.from_flows(n_tasks, src, dst, nbytes), placement.explicit(t, tn)
