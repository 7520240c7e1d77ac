"""traffic=group_tornado: every node to its counterpart half the groups on (the Dragonfly adversarial pattern)."""

from __future__ import annotations

import numpy as np
import pytest

import evaluator as ev
from evaluator import placement, traffic
from evaluator.errors import ConfigError


def test_destinations_and_minimal_closed_form():
    """DF(4,8,4): 33 groups of 32 nodes; node j of group i -> node j of group i + 16; under minimal routing the
    group pair's one global link carries the group's 32 MB: 32 MB / 10 GB/s = 3.2 ms."""
    df = ev.dragonfly(4, 8, 4)
    tr = traffic.group_tornado(df, 1e6)
    n = df.n_nodes
    assert tr.n_tasks == n == 33 * 32
    np.testing.assert_array_equal(tr.dst, (np.arange(n) + 16 * 32) % n)
    ds = ev.evaluate(df, tr, placement.linear(df, n), "minimal")
    assert float(ds.completion_time) == pytest.approx(32e6 / 10e9, rel=1e-12)
    assert ds.bottleneck.item() == "global"
    assert float(ev.evaluate(df, tr, placement.linear(df, n), "valiant").completion_time) < 3.2e-3 / 4


def test_fat_tree_pods_and_offset():
    ft = ev.topology.fat_tree(k=4, levels=3)  # 4 pods of 16 nodes
    tr = traffic.group_tornado(ft, 2.0, offset=1)
    np.testing.assert_array_equal(tr.dst, (np.arange(64) + 16) % 64)
    assert tr.name == "group_tornado +1 of 4 groups"


def test_refusals():
    with pytest.raises(ConfigError, match=r"traffic.kind = 'group_tornado' is invalid.*no groups above its routers"
                                          r".*traffic=tornado"):
        traffic.group_tornado(ev.torus([4, 4]))
    with pytest.raises(ConfigError, match=r"traffic.offset = 33 is invalid: allowed is an integer that is not a "
                                          r"multiple of the 33 groups"):
        traffic.group_tornado(ev.dragonfly(4, 8, 4), offset=33)
