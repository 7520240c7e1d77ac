"""Config groups zipped in one axis, each value a mapping with the option's own keys (docs/sweeps.md).

Checked against evaluating each network alone (``evaluator.evaluate`` on the configs built directly), and
the refusals: a mapping without ``kind``, a key the kind does not have, a zip of a group with another key.
"""

from __future__ import annotations

import numpy as np
import pytest

import evaluator as ev
from evaluator import config
from evaluator.errors import ConfigError
from evaluator.sweep.plan import plan_sweep

NETWORKS = ("[{kind: fat_tree, k: 4, levels: 2}, {kind: dragonfly, p: 2, a: 4, h: 2}, "
            "{kind: torus, dims: [4, 4, 2]}]")


def _request(network: str, routing: str = "[dmodk, minimal, dor]", extra: dict | None = None):
    overrides = ["traffic=all_to_all", "placement=linear",
                 f"+sweep.axes.network={{zip: {{topology: {network}, routing: {routing}}}}}"]
    request = config.compose_sweep(overrides)
    request.axes["network"]["zip"].update(extra or {})  # a dotted key (Hydra's dict literals take none)
    return request


def test_zipped_groups_build_each_network_with_its_keys():
    plan = plan_sweep(_request(NETWORKS))
    assert plan.n_points == 3
    names = []
    for flat, (kind, routing, keys) in enumerate([("fat_tree", "dmodk", {"k": 4, "levels": 2}),
                                                  ("dragonfly", "minimal", {"p": 2, "a": 4, "h": 2}),
                                                  ("torus", "dor", {"dims": [4, 4, 2]})]):
        cfg = plan.point_config(flat)
        assert cfg.topology.kind == kind and cfg.routing.kind == routing
        for k, v in keys.items():
            assert list(np.atleast_1d(getattr(cfg.topology, k))) == list(np.atleast_1d(v))
        # the same point built from a plain config (no sweep): the network the mapping describes
        plain = config.to_object(config.compose([f"topology={kind}", f"routing={routing}", "traffic=all_to_all",
                                                 "placement=linear"] + [
            f"topology.{k}={str(v).replace(' ', '')}" for k, v in keys.items()]))
        a, b = config.build(cfg), config.build(plain)
        names.append(a.topology.name)
        assert a.topology.name == b.topology.name and a.topology.n_links == b.topology.n_links
        da = ev.evaluate(a.topology, a.traffic, a.placement, a.routing)
        db = ev.evaluate(b.topology, b.traffic, b.placement, b.routing)
        assert float(da.completion_time) == float(db.completion_time)
    assert len(set(names)) == 3


@pytest.mark.parametrize("network,routing,extra,needle", [
    ("[{k: 4}, {kind: dragonfly}]", "[dmodk, minimal]", None, "mapping with its kind"),
    ("[{kind: fat_tree, g: 4}, {kind: dragonfly}]", "[dmodk, minimal]", None, "topology.g"),
    (NETWORKS, "[dmodk, minimal, dor]", {"traffic.bytes": [1.0, 2.0, 3.0]}, "config groups only"),
])
def test_zipped_group_refusals(network, routing, extra, needle):
    with pytest.raises(ConfigError) as err:
        plan_sweep(_request(network, routing, extra))
    assert needle in str(err.value)
