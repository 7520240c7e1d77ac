"""Everything that touches Hydra or OmegaConf: composition, typed conversion, sweep requests.

The rest of the package sees only the typed dataclasses (:class:`~evaluator.config.schemas.EvalConfig`
and the per-kind schemas of the families' registries) and plain Python
containers. Composition errors (unknown key, a key of another kind, a bad
type, an unknown group option) become one-line
:class:`~evaluator.errors.ConfigCompositionError`.

One module per concern, imported one way (studies -> grammar -> composition):

* :mod:`~evaluator.config.hydra.composition`: schema registration, composing a config (and its memo), typed
  conversion, YAML text, Hydra's errors made one line;
* :mod:`~evaluator.config.hydra.grammar`: Hydra's sweep grammar made ``sweep.axes``
  (:func:`~evaluator.config.hydra.grammar.sweep_axes_from_overrides`, the table of forms is there) and
  :func:`~evaluator.config.hydra.grammar.check_assignment`;
* :mod:`~evaluator.config.hydra.studies`: which study a sweep composes (``sweeps=``, ``--config-dir``,
  :data:`~evaluator.config.hydra.studies.DEFAULT_STUDY`) and the composed sweep
  (:func:`~evaluator.config.hydra.studies.compose_sweep`).

This package re-exports the names the rest of the package and the tests use.
"""

from __future__ import annotations

from .composition import compose, compose_object, group_options, one_line, register_schemas, to_object, to_yaml
from .grammar import AXIS_GENERATORS, check_assignment, sweep_axes_from_overrides
from .studies import (DEFAULT_STUDY, IDENTITY_EXCLUDED, SweepRequest, compose_sweep, compose_sweep_config,
                      is_run_setting, study_overrides, with_default_study)

__all__ = ["register_schemas", "compose", "to_object", "compose_object", "to_yaml", "check_assignment",
           "SweepRequest", "compose_sweep", "compose_sweep_config", "sweep_axes_from_overrides", "AXIS_GENERATORS",
           "IDENTITY_EXCLUDED", "DEFAULT_STUDY", "with_default_study", "is_run_setting", "study_overrides",
           "group_options", "one_line"]
