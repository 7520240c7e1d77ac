"""Job allocation policies (one module per member, one registry line each).

:data:`KINDS` maps a policy name to its class; :func:`build_policy` makes one.
Members: ``grap`` (the reconfigurable Dragonfly's group-level policy, Feng et
al.), and the traditional-Dragonfly baselines ``slurm_round_robin``,
``contiguous``, ``random``. Interface: :mod:`evaluator.policies.base`.
"""

from __future__ import annotations

import inspect

from ..errors import ConfigError
from ._baselines import Contiguous, RandomNodes, SlurmRoundRobin
from ._grap import Grap
from .base import CUSTOM_MODES, MODES, Allocation, AllocationPolicy, JobRequest, check_request

__all__ = ["MODES", "CUSTOM_MODES", "JobRequest", "Allocation", "AllocationPolicy", "check_request",
           "Grap", "SlurmRoundRobin", "Contiguous", "RandomNodes", "KINDS", "build_policy"]

KINDS: dict[str, type[AllocationPolicy]] = {
    Grap.name: Grap,
    SlurmRoundRobin.name: SlurmRoundRobin,
    Contiguous.name: Contiguous,
    RandomNodes.name: RandomNodes,
}
"""Allocation policies by name."""


def build_policy(name: str, groups: int, nodes_per_group: int, seed: int = 0, **params) -> AllocationPolicy:
    """The policy ``name`` on ``groups`` groups of ``nodes_per_group`` nodes (``params``: the member's own,
    e.g. ``ports_per_group`` for ``grap``)."""
    if name not in KINDS:
        raise ConfigError("policy", name, " | ".join(KINDS))
    cls = KINDS[name]
    allowed = [p for p in inspect.signature(cls.__init__).parameters if p not in ("self", "groups",
                                                                                 "nodes_per_group", "seed")]
    for key in params:
        if key not in allowed:
            raise ConfigError(f"policy.{key}", params[key], " | ".join(allowed) or "no parameters",
                              f"unknown parameter of policy {name!r}")
    return cls(groups, nodes_per_group, seed, **params)
