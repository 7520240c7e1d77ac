"""Slurm's hostfile of a placement: ``SLURM_HOSTFILE=FILE srun --distribution=arbitrary -n N ...``.

With ``--distribution=arbitrary`` (``-m arbitrary``) srun puts rank ``i``
on the host named on the file's ``i``-th name, whatever the number of ranks
per node: any placement can be launched, a partly filled node anywhere (unlike
``aprun -N``, which fills every listed node). Slurm reads the file as
``slurm_read_hostfile`` does (``src/api/allocate.c``): ``#`` starts a comment,
blank lines are skipped, a line holds one name or several separated by commas,
``NAME*K`` is ``NAME`` ``K`` times. :func:`hostfile_text` writes one name per
line, in rank order, after ``#`` lines that say what the file is.

The topology numbers its nodes; Slurm names them. :func:`hostnames` turns a
user's ``--hostnames`` into the name of every node id: a format with one
field for the id (``nid{:05d}``: Cray's node names, ``nid00042`` for node
42; ``node{}``), or a file holding one name per line, node id 0 first
(``scontrol show hostnames`` of the machine's nodes, in the topology's node
order; ``#`` comments and blank lines skipped). A name must be one a hostfile
can hold: a letter or digit first, and no whitespace, ``,``, ``#`` or ``*``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np

from ..errors import ConfigError
from ..io import write_text
from .base import Placement

__all__ = ["hostnames", "hostfile_text", "write_hostfile"]

_NAME = re.compile(r"[A-Za-z0-9][^\s,#*]*\Z")


def _check_name(name: str, field: str, where: str) -> str:
    if not _NAME.match(name):
        raise ConfigError(field, where, "host names that start with a letter or digit and hold no whitespace, ',', '#' "
                          "or '*' (a Slurm hostfile reads those as separators, comments or repeats)",
                          f"{name!r} is not one.")
    return name


def hostnames(spec: str | os.PathLike[str], n_nodes: int, field: str = "--hostnames") -> list[str]:
    """The host name of every node id ``0 .. n_nodes - 1``: ``spec`` a format with one field for the id (it holds
    ``{``: ``nid{:05d}``) or a file of one name per line, node 0 first, exactly ``n_nodes`` of them, no name
    twice (module docstring). A :class:`ConfigError` naming ``field`` otherwise."""
    text = os.fspath(spec)
    if "{" in text:
        try:
            names = [text.format(i) for i in range(int(n_nodes))]
        except (IndexError, KeyError, ValueError) as exc:
            raise ConfigError(field, text, "a format with one field for the node id, e.g. nid{:05d} or node{}",
                              f"Formatting node 0 failed: {exc}.") from None
        for name in names[:1] + names[-1:]:
            _check_name(name, field, text)
        if len(set(names)) != len(names):
            raise ConfigError(field, text, "a format that gives every node id its own name (one field for the id)")
        return names
    p = Path(text)
    if not p.is_file():
        raise ConfigError(field, text, "a format with one field for the node id (nid{:05d}) or a file of host names, "
                          "one per line, node 0 first", "No such file." if not p.exists() else "It is not a file.")
    names, line_of = [], {}
    with open(p, encoding="utf-8-sig") as fh:
        for lineno, line in enumerate(fh, 1):
            name = line.split("#", 1)[0].strip()
            if not name:
                continue
            _check_name(name, field, f"{p}:{lineno}")
            if name in line_of:
                raise ConfigError(field, f"{p}:{lineno}", "a name per node, none twice",
                                  f"{name!r} is on line {line_of[name]} too.")
            line_of[name] = lineno
            names.append(name)
    if len(names) != int(n_nodes):
        raise ConfigError(field, text, f"{int(n_nodes)} host names, one per node of the topology, node 0 first",
                          f"It holds {len(names)}.")
    return names


def hostfile_text(placement: Placement, names: list[str], header: str = "") -> str:
    """The Slurm hostfile of ``placement``: ``#`` lines (``header``'s, then what the file is), then the host name of
    every rank's node, one per line, rank 0 first. ``names``: every node id's name (:func:`hostnames`)."""
    tn = np.asarray(placement.task_node, np.int64)
    if tn.size and int(tn.max()) >= len(names):
        raise ConfigError("hostnames", len(names), f"a name for every node the placement uses (it uses node "
                          f"{int(tn.max())})")
    lines = [f"# {line}" for line in header.splitlines() if line]
    lines.append(f"# {placement.n_tasks} ranks on {np.unique(tn).size} nodes, rank 0 first; use with "
                 f"SLURM_HOSTFILE=<this file> srun --distribution=arbitrary -n {placement.n_tasks}")
    lines.extend(names[i] for i in tn.tolist())
    return "\n".join(lines) + "\n"


def write_hostfile(placement: Placement, path: str | os.PathLike[str], names: list[str], header: str = "") -> Path:
    """Write :func:`hostfile_text` to ``path`` (atomically); return the path."""
    text = hostfile_text(placement, names, header)  # checked before anything is written
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    return write_text(path, text)
