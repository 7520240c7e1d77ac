"""The working set of an adaptive routing's point counts XLA's own buffers (evaluator/_batch/memory.py
``compiled_peak_bytes``): the traced program under-counts the fixed point's gathers, and a 16,384-node fat tree's
halo under ``ft_adaptive`` was killed by the kernel's OOM killer (24 GB) where the traced estimate said 10.5 GB."""

from __future__ import annotations

import pytest

import evaluator as ev
from evaluator import errors
from evaluator._batch import memory
from evaluator.placement import linear
from evaluator.studies.buyer import build_workload, equal_networks


@pytest.fixture(scope="module")
def point():
    topo = equal_networks(512)["fat_tree"][0]
    return topo, build_workload("halo3d", 512), linear(topo, 512)


def test_adaptive_block_peak_is_at_least_xla_buffers(point, monkeypatch):
    topo, tr, pl = point
    seen = {}
    real_jaxpr, real_compiled = memory.jaxpr_peak_bytes, memory.compiled_peak_bytes

    def spy_compiled(kern, variant, structs, step):
        seen["xla"] = real_compiled(kern, variant, structs, step)
        return seen["xla"]

    def spy_jaxpr(jaxpr):
        seen["traced"] = real_jaxpr(jaxpr)
        return seen["traced"]

    monkeypatch.setattr(memory, "compiled_peak_bytes", spy_compiled)
    monkeypatch.setattr(memory, "jaxpr_peak_bytes", spy_jaxpr)
    monkeypatch.setattr(memory, "_PEAK_CACHE", type(memory._PEAK_CACHE)())
    ev.evaluate(topo, tr, pl, "ft_adaptive")
    assert seen["xla"] > seen["traced"] > 0     # the case that ran out of memory: XLA holds more than traced
    # an oblivious routing is sized by the traced program alone (no second compilation)
    seen.clear()
    ev.evaluate(topo, tr, pl, "dmodk")
    assert "xla" not in seen


def test_adaptive_point_refused_by_xla_buffers(point, monkeypatch):
    """With memory between the traced peak and XLA's buffers, the point is refused before it runs."""
    topo, tr, pl = point
    seen = {}
    real_jaxpr, real_compiled = memory.jaxpr_peak_bytes, memory.compiled_peak_bytes
    monkeypatch.setattr(memory, "compiled_peak_bytes",
                        lambda *a: seen.setdefault("xla", real_compiled(*a)))
    monkeypatch.setattr(memory, "jaxpr_peak_bytes", lambda j: seen.setdefault("traced", real_jaxpr(j)))
    monkeypatch.setattr(memory, "_PEAK_CACHE", type(memory._PEAK_CACHE)())
    ev.evaluate(topo, tr, pl, "ft_adaptive")
    assert seen["xla"] > 1.2 * seen["traced"]
    monkeypatch.setattr(memory, "_PEAK_CACHE", type(memory._PEAK_CACHE)())
    between = 0.5 * (seen["xla"] + 1.2 * seen["traced"])
    monkeypatch.setattr(errors, "available_memory", lambda: between / 0.8)
    with pytest.raises(errors.ResourceError, match="traffic.*fits in memory"):
        ev.evaluate(topo, tr, pl, "ft_adaptive")
