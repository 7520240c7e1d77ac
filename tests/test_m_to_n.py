"""``m_to_n`` traffic (Bui et al. many-to-many families): flows counted by hand, layouts, bad input."""

from __future__ import annotations

import numpy as np
import pytest

from evaluator import traffic as TR
from evaluator.errors import ConfigError


def test_constant_ratio_every_destination_once():
    p = 512
    t = TR.m_to_n(p // 16, p // 2, 8, 8e6, "disjoint", n_tasks=p)
    assert t.n_tasks == p and t.n_flows == 32 * 8
    assert set(t.src.tolist()) == set(range(32))
    np.testing.assert_array_equal(np.sort(t.dst), np.arange(256, 512))  # the last p/2 nodes, once each
    np.testing.assert_array_equal(np.bincount(t.src), np.full(32, 8))
    assert (t.nbytes == 8e6).all()


def test_fixed_128_to_256_two_each():
    t = TR.m_to_n(128, 256, 2, 8e6, n_tasks=8192)
    np.testing.assert_array_equal(t.src[:4], [0, 0, 1, 1])
    np.testing.assert_array_equal(t.dst[:4], [8192 - 256, 8192 - 255, 8192 - 254, 8192 - 253])


def test_modes():
    ov = TR.m_to_n(8, 8, 1, mode="overlap", overlap=4)
    np.testing.assert_array_equal(np.sort(np.unique(ov.dst)), np.arange(4, 12))
    conc = TR.m_to_n(8, 2, 1, mode="subset_concentrated")
    spread = TR.m_to_n(8, 2, 1, mode="subset_spread")
    assert set(conc.dst.tolist()) == {0, 1} and set(spread.dst.tolist()) == {0, 4}
    assert (conc.src != conc.dst).all() and conc.n_flows == 6  # sources 0 and 1 would send to themselves
    moved = TR.m_to_n(4, 4, 1, n_tasks=20, dst_start=10)
    np.testing.assert_array_equal(moved.dst, [10, 11, 12, 13])


@pytest.mark.parametrize("kwargs,field", [
    (dict(n_sources=0, n_destinations=4), "traffic.n_sources"),
    (dict(n_sources=4, n_destinations=4, dests_per_source=5), "traffic.dests_per_source"),
    (dict(n_sources=4, n_destinations=8, mode="subset_spread"), "traffic.n_destinations"),
    (dict(n_sources=4, n_destinations=4, mode="bogus"), "traffic.mode"),
    (dict(n_sources=4, n_destinations=4, n_tasks=6), "traffic.dst_start"),
    (dict(n_sources=4, n_destinations=4, n_tasks=10, dst_start=2), "traffic.dst_start"),
])
def test_bad_input(kwargs, field):
    with pytest.raises(ConfigError, match=field.replace(".", r"\.")):
        TR.m_to_n(**kwargs)
