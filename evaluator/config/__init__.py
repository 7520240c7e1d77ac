"""The config layer: typed schemas, registry-based builders, and Hydra composition.

* :mod:`~evaluator.config.schemas`: :class:`EvalConfig`, :class:`SweepConfig`,
  :class:`RayConfig` and :data:`FAMILIES` (config group -> registry of kinds;
  each kind's schema lives with its member, e.g.
  :class:`evaluator.routing._dor.DorConfig`);
* :mod:`~evaluator.config.build`: config -> library objects (:func:`build`);
* :mod:`~evaluator.config.hydra`: the only package that touches Hydra and
  OmegaConf (:func:`compose`, :func:`to_object`, :func:`compose_sweep`).
"""

from __future__ import annotations

from .build import (DesignPoint, JobsPoint, as_dict, build, build_jobs, build_placement, has_jobs, build_routing_spec,
                    build_topology, build_traffic, check_settings, drawn_choices, refuse_unread_keys)
from .hydra import (DEFAULT_STUDY, SweepRequest, check_assignment, compose, compose_object, compose_sweep, one_line,
                    register_schemas, study_overrides, to_object, to_yaml)
from .schemas import FAMILIES, GROUPS, JOB_KEYS, MISSING, BackgroundConfig, EvalConfig, RayConfig, SweepConfig

__all__ = [
    "EvalConfig",
    "SweepConfig",
    "RayConfig",
    "BackgroundConfig",
    "JOB_KEYS",
    "JobsPoint",
    "build_jobs",
    "has_jobs",
    "MISSING",
    "FAMILIES",
    "GROUPS",
    "DesignPoint",
    "build",
    "build_topology",
    "build_routing_spec",
    "drawn_choices",
    "check_settings",
    "refuse_unread_keys",
    "build_traffic",
    "build_placement",
    "as_dict",
    "register_schemas",
    "compose",
    "one_line",
    "to_object",
    "compose_object",
    "to_yaml",
    "check_assignment",
    "SweepRequest",
    "compose_sweep",
    "study_overrides",
    "DEFAULT_STUDY",
]
