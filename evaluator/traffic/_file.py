"""User traffic from a file (.npz dense or COO, .csv triples)."""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from typing import Optional

import numpy as np

from ..errors import ConfigError, require
from .base import Traffic, TrafficKind, from_flows, from_matrix

__all__ = ['from_file', 'FileConfig', 'FILE']


def from_file(path: str | os.PathLike, n_tasks: int | None = None) -> Traffic:
    """User traffic from a file.

    * ``.npz`` with a dense ``matrix`` array ``[src_task, dst_task]``, or sparse
      COO arrays ``row``, ``col``, ``data`` (and optionally ``shape``);
    * ``.csv`` with ``src,dst,bytes`` triples per line (a header line is allowed).

    ``n_tasks``, when given, must match the file's task count.
    """
    p = os.fspath(path)
    require(os.path.exists(p), "traffic.path", p, "an existing .npz or .csv file")
    ext = os.path.splitext(p)[1].lower()
    if ext == ".npz":
        with np.load(p) as z:
            keys = set(z.files)
            if "matrix" in keys:
                M = np.asarray(z["matrix"], dtype=np.float64)
                require(M.ndim == 2 and M.shape[0] == M.shape[1], "traffic.path", p,
                        f"a square 'matrix' array; got shape {M.shape}")
                if n_tasks is not None:
                    require(M.shape[0] == n_tasks, "traffic.n_tasks", n_tasks,
                            f"the file's task count {M.shape[0]} (matrix shape {M.shape})")
                return dataclasses.replace(from_matrix(M, field="traffic"), name=os.path.basename(p))
            require({"row", "col", "data"} <= keys, "traffic.path", p,
                    f"an .npz holding 'matrix' or 'row','col','data'; found {sorted(keys)}")
            row, col, data = z["row"], z["col"], z["data"]
            shape = tuple(int(v) for v in z["shape"]) if "shape" in keys else None
    elif ext == ".csv":
        try:
            arr = np.loadtxt(p, delimiter=",", ndmin=2)
        except ValueError:
            arr = np.loadtxt(p, delimiter=",", ndmin=2, skiprows=1)
        require(arr.shape[1] == 3, "traffic.path", p, f"CSV rows of 3 columns src,dst,bytes; got {arr.shape[1]}")
        row, col, data = arr[:, 0], arr[:, 1], arr[:, 2]
        shape = None
    else:
        raise ConfigError("traffic.path", p, "a file ending in .npz or .csv")
    inferred = int(max(row.max(initial=-1), col.max(initial=-1))) + 1
    if shape is not None:
        require(len(shape) == 2 and shape[0] == shape[1], "traffic.path", p, f"a square shape; got {shape}")
        require(inferred <= shape[0], "traffic.path", p,
                f"task ids below the declared shape {shape}; found id {inferred - 1}")
        inferred = shape[0]
    if n_tasks is not None:
        require(inferred <= n_tasks if shape is None else inferred == n_tasks, "traffic.n_tasks", n_tasks,
                f"the file's task count {inferred}")
        inferred = n_tasks
    return from_flows(inferred, row, col, data, name=os.path.basename(p))


@dataclass
class FileConfig:
    """A traffic file: ``path`` (.npz or .csv), ``n_tasks`` (optional check)."""

    kind: str = "file"
    path: Optional[str] = None
    n_tasks: Optional[int] = None


def _from_config(cfg: FileConfig, topology) -> Traffic:
    require(cfg.path is not None, "traffic.path", None, "a path to a .npz or .csv traffic file")
    return from_file(cfg.path, cfg.n_tasks)


FILE = TrafficKind("file", FileConfig, _from_config)
