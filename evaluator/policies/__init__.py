"""Job allocation policies (one module per member, one registry line each).

:data:`KINDS` maps a policy name to its :class:`~evaluator.policies.base.PolicyKind`: the schema of its own
parameters (a typed dataclass, e.g. :class:`GrapConfig`) and its builder; :func:`build_policy` makes one,
checking the parameters against the schema. Members: ``grap`` (the reconfigurable Dragonfly's group-level
policy, Feng et al.), and the traditional-Dragonfly baselines ``slurm_round_robin``, ``contiguous``,
``random``. Interface: :mod:`evaluator.policies.base`.
"""

from __future__ import annotations

import dataclasses

from .._registry import Registry, from_mapping
from ..errors import ConfigError, ConfigTypeError, nearest
from . import _baselines, _grap
from ._baselines import Contiguous, RandomNodes, SlurmRoundRobin
from ._grap import Grap, GrapConfig
from .base import (CUSTOM_MODES, MODES, Allocation, AllocationPolicy, JobRequest, NoParams, PolicyBase, PolicyKind,
                   check_request)

__all__ = ["MODES", "CUSTOM_MODES", "JobRequest", "Allocation", "AllocationPolicy", "PolicyBase", "check_request",
           "Grap", "SlurmRoundRobin", "Contiguous", "RandomNodes", "GrapConfig", "NoParams", "PolicyKind", "KINDS",
           "build_policy", "policy_config", "policy_params"]

KINDS: Registry[PolicyKind] = Registry("policy", [
    _grap.GRAP,
    _baselines.SLURM_ROUND_ROBIN,
    _baselines.CONTIGUOUS,
    _baselines.RANDOM,
])
"""Allocation policies by name."""


def _kind(name) -> PolicyKind:
    if not isinstance(name, str):
        raise ConfigTypeError("policy", name, " | ".join(KINDS))
    if name not in KINDS:
        raise ConfigError("policy", name, " | ".join(KINDS), nearest(name, KINDS))
    return KINDS[name]


def policy_config(name: str, **params):
    """The schema instance of policy ``name``'s own parameters (e.g. ``ports_per_group`` for ``grap``): every
    key a field of the schema (the error names the policy's parameters and the nearest), every value of its
    field's type."""
    kind = _kind(name)
    own = policy_params(name)
    for key in params:
        if key not in own:
            hint = nearest(key, own)
            raise ConfigError(f"policy.{key}", params[key], " | ".join(own) or "no parameters",
                              f"unknown parameter of policy {name!r}." + (f" {hint}" if hint else ""))
    return from_mapping(kind.schema, params, "policy")


def build_policy(name: str, groups: int, nodes_per_group: int, seed: int = 0, **params) -> AllocationPolicy:
    """The policy ``name`` on ``groups`` groups of ``nodes_per_group`` nodes (``params``: the member's own,
    checked against its schema, e.g. ``ports_per_group`` for ``grap``)."""
    cfg = policy_config(name, **params)
    return KINDS[name].build(cfg, groups, nodes_per_group, seed)


def policy_params(name: str) -> list[str]:
    """The member's own parameters (the fields of its schema; ``groups``, ``nodes_per_group`` and ``seed`` are
    every policy's)."""
    return [f.name for f in dataclasses.fields(_kind(name).schema)]
