"""Defects found by the third round of audits (2026-12-06): answers given in silence."""

from __future__ import annotations

from evaluator import config


def _topology_name(*overrides: str) -> str:
    obj = config.to_object(config.compose(["topology=machine", "topology.name=Mira", *overrides]))
    return config.build_topology(obj.topology).name


def test_a_partition_outside_the_allowed_list_says_so():
    """Mira's scheduler grants 1x1x1x1, 2x1x1x1, ... (Oltchik & Schwartz, Table 6), not 1x1x3x1: eval evaluated it
    under the plain name, as if it could be allocated. It stays a what-if, named as one."""
    assert _topology_name("topology.partition=[1,1,3,1]") == (
        "Mira 1x1x3x1 midplanes, not in Mira's allowed partitions")
    assert _topology_name("topology.partition=[1,2,1,1]") == "Mira 1x2x1x1 midplanes"  # a rotation of 2x1x1x1
    assert _topology_name("topology.partition=null") == "Mira 4x4x3x2 midplanes"
