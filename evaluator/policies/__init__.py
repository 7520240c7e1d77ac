"""Job allocation policies (one module per member, one registry line each).

:data:`KINDS` maps a policy name to its class; :func:`build_policy` makes one.
Members: ``grap`` (the reconfigurable Dragonfly's group-level policy, Feng et
al.), and the traditional-Dragonfly baselines ``slurm_round_robin``,
``contiguous``, ``random``. Interface: :mod:`evaluator.policies.base`.
"""

from __future__ import annotations

import difflib
import inspect

from ..errors import ConfigError, ConfigTypeError
from ._baselines import Contiguous, RandomNodes, SlurmRoundRobin
from ._grap import Grap
from .base import CUSTOM_MODES, MODES, Allocation, AllocationPolicy, JobRequest, PolicyBase, check_request

__all__ = ["MODES", "CUSTOM_MODES", "JobRequest", "Allocation", "AllocationPolicy", "PolicyBase", "check_request",
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
    if not isinstance(name, str):
        raise ConfigTypeError("policy", name, " | ".join(KINDS))
    if name not in KINDS:
        raise ConfigError("policy", name, " | ".join(KINDS), _did_you_mean(name, KINDS))
    cls = KINDS[name]
    allowed = policy_params(name)
    for key in params:
        if key not in allowed:
            raise ConfigError(f"policy.{key}", params[key], " | ".join(allowed) or "no parameters",
                              f"unknown parameter of policy {name!r}." + (f" {_did_you_mean(key, allowed)}"
                                                                          if _did_you_mean(key, allowed) else ""))
    return cls(groups, nodes_per_group, seed, **params)


def policy_params(name: str) -> list[str]:
    """The member's own parameters (beyond ``groups``, ``nodes_per_group``, ``seed``)."""
    return [p for p in inspect.signature(KINDS[name].__init__).parameters
            if p not in ("self", "groups", "nodes_per_group", "seed")]


def _did_you_mean(key: str, allowed) -> str | None:
    got = difflib.get_close_matches(str(key), list(allowed), n=1, cutoff=0.6)
    return f"Did you mean {got[0]!r}?" if got else None
