"""The two transposes of a 3-D FFT on a 2-D pencil decomposition (PSDNS, Fiedler's slides).

A grid of ``Nx x Ny x Nz`` points (``bytes_per_point`` each: 16 for complex
double) is split over ``P = p_row x p_col`` ranks as x-pencils: every rank
holds all of x and a ``Ny/p_row x Nz/p_col`` block of (y, z), that is
``D = bytes_per_point * Nx*Ny*Nz / P`` bytes. A forward 3-D FFT needs two
transposes, done one after another:

* ``xy`` (within xy planes): a concurrent all-to-all inside every *row*
  communicator, the ``p_row`` ranks that share a z range (together they hold
  whole xy planes). Every rank sends ``D / p_row`` bytes to each other rank
  of its row (the block of its data the other rank owns after the
  transpose) and keeps ``D / p_row``: it sends ``(p_row - 1) / p_row`` of
  its data.
* ``yz`` (within yz planes): a concurrent all-to-all inside every *column*
  communicator, the ``p_col`` ranks at the same position of every row;
  ``D / p_col`` bytes per pair, ``(p_col - 1) / p_col`` of each rank's data.

Ranks are numbered row by row: rank ``t`` is at position ``t % p_row`` of
row ``t // p_row`` (a row's ranks are consecutive, as MPI_Cart_create with
the row dimension fastest gives them), so a linear placement with
``tasks_per_node`` a multiple of ``p_row`` puts whole rows, i.e. whole xy
planes, on a node. Whole blocks need ``p_row | Nx``, ``p_row | Ny``,
``p_col | Ny`` and ``p_col | Nz``.

``xy_planes_on_node = True`` models exactly that placement without its
flows: a *task* is then a whole row (``p_row`` ranks, ``Nz/p_col`` whole xy
planes) kept on one node, so the ``xy`` transpose never leaves the node
(an empty phase: the model puts no intra-node bytes on any link) and the
``yz`` transpose is, node to node, a uniform all-to-all among the
``p_col`` row-tasks with ``p_row * D / p_col`` bytes per pair (each of the
``p_row`` column all-to-alls moves ``D / p_col`` between the two nodes).
Because link loads are linear in the node-to-node demand, this is exactly
the rank-level pattern under a placement that keeps each row on one node,
without its ``P * (p_col - 1)`` flows (a dense, rank-one pattern:
``1.2e9`` flows for the 6,144-node Blue Waters study become none). Place
the row-tasks with ``tasks_per_node`` = rows per node.

Real-to-complex transforms store about ``Nx/2`` complex values along x: use
``bytes_per_point = 8`` for double precision there. Several fields
transposed together scale every byte count (``bytes_per_point`` times the
number of fields).
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._types import ConfigOf
from ..errors import check_memory, positive_float, positive_int, require
from .base import PhasedTraffic, Traffic, TrafficKind, dense

__all__ = ["pencil", "pencil_volumes", "PencilConfig", "PENCIL", "PENCIL_PHASES"]

PENCIL_PHASES = ("xy", "yz")
"""Phase labels: the transpose within xy planes (rows), then within yz planes (columns)."""


def _grid(grid) -> tuple[int, int, int]:
    allowed = "one positive integer N (an N^3 grid) or a list of 3 positive integers [Nx, Ny, Nz] (points)"
    if isinstance(grid, (list, tuple, np.ndarray)):
        require(len(grid) == 3, "traffic.grid", list(grid), allowed)
        return tuple(positive_int(f"traffic.grid[{k}]", g) for k, g in enumerate(grid))  # type: ignore[return-value]
    n = positive_int("traffic.grid", grid)
    return (n, n, n)


def pencil_volumes(grid, p_row: int, p_col: int, bytes_per_point: float = 16.0) -> dict[str, float]:
    """The data volumes of one forward 3-D FFT's transposes, in bytes (validated).

    Returns ``per_rank`` (``D``, bytes each rank holds), ``xy_pair``
    (``D / p_row``, bytes between two ranks of a row), ``yz_pair``
    (``D / p_col``), ``xy_sent`` and ``yz_sent`` (bytes each rank sends:
    ``(p_row - 1) D / p_row`` and ``(p_col - 1) D / p_col``) and ``total``
    (``bytes_per_point * Nx*Ny*Nz``).
    """
    nx, ny, nz = _grid(grid)
    pr = positive_int("traffic.p_row", p_row)
    pc = positive_int("traffic.p_col", p_col)
    bpp = positive_float("traffic.bytes_per_point", bytes_per_point)
    for field, p, n, axis in (("traffic.p_row", pr, nx, "Nx"), ("traffic.p_row", pr, ny, "Ny"),
                              ("traffic.p_col", pc, ny, "Ny"), ("traffic.p_col", pc, nz, "Nz")):
        require(n % p == 0, field, p, f"a divisor of {axis} = {n} (grid {nx}x{ny}x{nz})",
                "Pencils of x (Ny/p_row x Nz/p_col), y (Nx/p_row x Nz/p_col) and z (Nx/p_row x Ny/p_col) "
                "need whole blocks.")
    try:
        total = bpp * float(nx * ny * nz)
    except OverflowError:  # (a grid past 1.8e308 points crashed; one past it in bytes answered inf)
        total = math.inf
    require(math.isfinite(total), "traffic.grid", [nx, ny, nz],
            f"a grid whose bytes_per_point x Nx x Ny x Nz bytes are finite (at most {sys.float_info.max:.3g})")
    d = total / (pr * pc)
    return {"total": total, "per_rank": d, "xy_pair": d / pr, "yz_pair": d / pc,
            "xy_sent": d * (pr - 1) / pr, "yz_sent": d * (pc - 1) / pc}


def pencil(grid, p_row: int, p_col: int, bytes_per_point: float = 16.0,
           xy_planes_on_node: bool = False) -> PhasedTraffic:
    """The two transposes of a forward 3-D FFT on a ``p_row x p_col`` pencil grid, as two phases.

    Parameters
    ----------
    grid
        ``N`` (an ``N^3`` grid) or ``[Nx, Ny, Nz]`` points.
    p_row, p_col
        Ranks per row communicator (the xy transpose; consecutive ranks) and
        per column communicator (the yz transpose; ranks ``p_row`` apart).
    bytes_per_point
        Bytes of one grid point (16: complex double).
    xy_planes_on_node
        ``False``: one task per rank (``p_row * p_col`` tasks), sparse flows.
        ``True``: one task per row (``p_col`` tasks, each ``p_row`` ranks
        holding whole xy planes on one node): the ``xy`` phase is empty and
        the ``yz`` phase a dense all-to-all of ``p_row * D / p_col`` bytes
        per pair (see the module docstring).

    Returns
    -------
    PhasedTraffic
        Phases ``xy`` then ``yz`` (bytes per exchange; the step's time is
        the sum of the two).
    """
    v = pencil_volumes(grid, p_row, p_col, bytes_per_point)
    require(isinstance(xy_planes_on_node, (bool, np.bool_)), "traffic.xy_planes_on_node", xy_planes_on_node,
            "true or false")
    pr, pc = int(p_row), int(p_col)
    nx, ny, nz = _grid(grid)
    label = f"pencil {nx}x{ny}x{nz} on {pr}x{pc}"
    if xy_planes_on_node:
        empty = Traffic(pc, np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0), label + " xy (on node)")
        yz = dense(pc, 1.0, 1.0, pr * v["yz_pair"], name=label + " yz")
        return PhasedTraffic((empty, yz), PENCIL_PHASES, label + " (xy planes on node)")
    n = pr * pc
    n_flows = n * (pr - 1 + pc - 1)
    check_memory("traffic.p_row", [pr, pc], 24.0 * 3 * n_flows,
                 f"the {n_flows} flows of the pencil transposes of {n} ranks",
                 "Set traffic.xy_planes_on_node=true (whole rows on a node: a dense pattern, no flow list).")
    phases = (_all_to_alls(n, pr, 1, v["xy_pair"], label + " xy"),
              _all_to_alls(n, pc, pr, v["yz_pair"], label + " yz"))
    return PhasedTraffic(phases, PENCIL_PHASES, label)


def _all_to_alls(n: int, size: int, stride: int, nbytes: float, label: str) -> Traffic:
    """Concurrent all-to-alls within groups of ``size`` ranks ``stride`` apart (``n`` ranks in all)."""
    if size == 1:
        return Traffic(n, np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0), label)
    t = np.arange(n, dtype=np.int64)
    pos = (t // stride) % size                   # position in the group
    base = t - pos * stride                      # the group's first rank
    k = np.arange(1, size, dtype=np.int64)       # partner offsets within the group (cyclic)
    src = np.repeat(t, size - 1)
    dst = (base[:, None] + ((pos[:, None] + k[None, :]) % size) * stride).reshape(-1)
    return Traffic(n, src, dst, np.full(src.size, float(nbytes)), label)


@dataclass
class PencilConfig:
    """3-D FFT transposes on a pencil grid: ``grid`` (N or [Nx, Ny, Nz] points), ``p_row`` x ``p_col`` ranks,
    ``bytes_per_point`` (16: complex double), ``xy_planes_on_node`` (one task per row of pencils, the xy
    transpose on node)."""

    kind: str = "pencil"
    grid: Any = 64
    p_row: int = 4
    p_col: int = 8
    bytes_per_point: float = 16.0
    xy_planes_on_node: bool = False


def _from_config(cfg: ConfigOf[PencilConfig], topology) -> PhasedTraffic:
    grid = cfg.grid if isinstance(cfg.grid, (int, float, str, bool)) or cfg.grid is None else list(cfg.grid)
    return pencil(grid, cfg.p_row, cfg.p_col, cfg.bytes_per_point, cfg.xy_planes_on_node)


PENCIL = TrafficKind("pencil", PencilConfig, _from_config)
