"""Every key of a composed config, at every depth, checked against its schema.

Hydra's ``+key=value`` adds a key even where the structured schema has none, and
:func:`omegaconf.OmegaConf.to_object` then drops it silently: ``+background.fractoin=0.2``,
``+bound=true``, ``+sweep.chunk_sze=4`` and ``+ray.num_cpu=2`` all ran with the defaults. :func:`check_keys`
walks the composed config beside the typed object it became and refuses the first key the schema does not have,
naming its full path, the allowed keys and the nearest one. Values typed ``Any`` (a job's entries, a phase) are
checked where they are built (:mod:`evaluator.config.build`, :mod:`evaluator.traffic._phased`).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..errors import ConfigError, nearest

__all__ = ["check_keys"]


def check_keys(node: Any, typed: Any, path: str = "") -> None:
    """Refuse (:class:`~evaluator.errors.ConfigError`) a key of ``node`` (a composed config as plain containers:
    ``OmegaConf.to_container``) that the dataclass ``typed`` (what ``node`` became) has no field for,
    recursively."""
    if dataclasses.is_dataclass(typed) and not isinstance(typed, type):
        if not isinstance(node, dict):
            return
        fields = [f.name for f in dataclasses.fields(typed)]
        for k in node:
            where = f"{path}.{k}" if path else str(k)
            if k not in fields:
                value = node[k]
                owner = f"{path} ({type(typed).__name__})" if path else "the top level"
                raise ConfigError(where, value, f"a key of {owner}: one of {fields}", nearest(k, fields))
            check_keys(node[k], getattr(typed, k), where)
    elif isinstance(typed, (list, tuple)) and isinstance(node, (list, tuple)):
        if len(node) == len(typed):
            for i, (n, t) in enumerate(zip(node, typed)):
                check_keys(n, t, f"{path}[{i}]")
