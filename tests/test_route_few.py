"""``RoutingOperator.route_few``: a few flows routed by scattering their listed links (DOR's ``flow_links``)
equal the routing's ``apply`` (which works over every link), and the per-flow walk of ``tests/reference.py``.

Tori and meshes, split and positive ties, explicit and longest-first orders, two-router rings, size-1
dimensions and two nodes per router; flows with ``src == dst`` carry no bytes. Routings that list no links
(``minimal``) fall back to ``apply`` exactly.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from evaluator import routing as RT
from evaluator import topology as T
from evaluator.routing import build_routing
from tests.helpers import TOL

try:
    from tests.reference import reference_link_loads
except ImportError:  # pragma: no cover
    from reference import reference_link_loads

CASES = [
    (lambda: T.torus((4, 4)), RT.dor()),
    (lambda: T.torus((5, 3, 4)), RT.dor()),
    (lambda: T.torus((4, 4, 6), wrap=(True, False, True)), RT.dor("longest_first", "positive")),
    (lambda: T.torus((4, 4, 6), wrap=(True, False, True)), RT.dor("longest_first", "split")),
    (lambda: T.torus((2, 1, 4, 2)), RT.dor((3, 2, 1, 0))),
    (lambda: T.torus((3, 5), wrap=False), RT.dor()),
    (lambda: T.torus((6, 4, 2), nodes_per_router=2), RT.dor()),
    (lambda: T.dragonfly(p=2, a=4, h=2), RT.minimal()),
]


@pytest.mark.parametrize("make,routing", CASES)
def test_route_few_equals_apply_and_the_walk(make, routing):
    topo = make()
    op = build_routing(topo, routing)
    R = topo.n_routers
    rng = np.random.default_rng(0)
    src, dst = rng.integers(0, R, 120), rng.integers(0, R, 120)
    w = np.where(src != dst, rng.random(120) * 1e6, 0.0)
    tables, flow_tables = jax.device_put(op.device_tables()), jax.device_put(op.flow_tables)
    args = (jnp.asarray(src), jnp.asarray(dst), jnp.asarray(w))
    got = np.asarray(op.route_few(tables, flow_tables, *args, topo.n_router_links))
    want = np.asarray(op.apply(tables, *args))
    np.testing.assert_allclose(got, want, rtol=TOL["rel"], atol=TOL["bytes"])
    if routing.kind == "dor":
        assert op.flow_links is not None and op.flow_width <= 2 * topo.diameter_bound()
        # the walk, flow by flow (one node per router here: the first node of each router stands for it)
        npr = topo.nodes_per_router
        flows = zip(range(120), range(120, 240), w.tolist())
        task_node = np.concatenate([src * npr, dst * npr])
        ref = reference_link_loads(topo, flows, task_node, {"kind": "dor", "order": routing.order, "tie": routing.tie})
        np.testing.assert_allclose(got, ref[: topo.n_router_links], rtol=TOL["rel"], atol=TOL["bytes"])
    else:
        assert op.flow_links is None
