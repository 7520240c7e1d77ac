"""Readable numbers for the terminal: each metric in a unit fit for its size, a few significant digits.

Datasets keep SI units (seconds, bytes, bytes/s; the metric table :data:`evaluator.dataset.TABLE`);
only what is printed is rescaled. A table column gets one display unit, named
in its header (``completion_time [ms]``), chosen from the metric's SI unit
(:func:`evaluator.dataset.metric`) so that the column's median magnitude is
at least 1 in it:

* ``s``: s, ms, us, ns;
* ``bytes/s``: TB/s, GB/s, MB/s, kB/s, B/s (decimal: 1 GB/s = 10^9 bytes/s);
* ``bytes``: TB, GB, MB, kB, B (decimal: 1 MB = 10^6 bytes).

Numbers are shown with :data:`SIGNIFICANT` significant digits (more where an
integer part is longer), in scientific notation only below 10^-3 or from
10^9 on in the chosen unit.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from .dataset import metric

__all__ = ["SIGNIFICANT", "SCALES", "display_unit", "format_number", "format_value", "format_table",
           "format_timing"]

SIGNIFICANT = 4
"""Significant digits shown by default."""

SCALES: dict[str, tuple[tuple[str, float], ...]] = {
    "s": (("s", 1.0), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9)),
    "bytes/s": (("TB/s", 1e12), ("GB/s", 1e9), ("MB/s", 1e6), ("kB/s", 1e3), ("B/s", 1.0)),
    "bytes": (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3), ("B", 1.0)),
}
"""SI unit (as in the metric table) -> display units and their size in that SI unit, largest first."""


def display_unit(si_unit: str, values: Any) -> tuple[str, float]:
    """``(unit, factor)`` to show ``values`` (in ``si_unit``) as ``values / factor`` in ``unit``.

    The largest unit in which the median of the finite non-zero magnitudes is
    at least 1; the SI unit itself (factor 1) for units without a scale
    (``"1"``, unknown) and for columns without such values.
    """
    scale = SCALES.get(si_unit)
    if scale is None:
        return si_unit, 1.0
    mags = np.abs(np.asarray(values, dtype=float).reshape(-1))
    mags = mags[np.isfinite(mags) & (mags > 0)]
    if mags.size == 0:
        return next((u, f) for u, f in scale if f == 1.0)
    typical = float(np.median(mags))
    for unit, factor in scale:
        if typical >= factor * (1 - 1e-12):
            return unit, factor
    return scale[-1]


def format_number(x: float, sig: int = SIGNIFICANT) -> str:
    """``x`` with ``sig`` significant digits: ``2.895``, ``0.01234``, ``123.5``, ``12346`` (whole part kept),
    ``1.235e-05`` below 10^-3, ``1.235e+09`` from 10^9 on; ``nan``/``inf`` as such."""
    x = float(x)
    if not math.isfinite(x):
        return str(x)
    if x == 0:
        return "0"
    mag = abs(x)
    if mag < 1e-3 or mag >= 1e9:
        return f"{x:.{sig - 1}e}"
    decimals = max(0, sig - 1 - math.floor(math.log10(mag)))
    text = f"{x:.{decimals}f}"
    if decimals and abs(float(text)) >= 10 ** (sig - decimals):  # 9.9996 -> "10.000": one digit too many
        text = f"{x:.{decimals - 1}f}"
    return text


def format_value(x: float, si_unit: str, sig: int = SIGNIFICANT) -> str:
    """One value with its display unit: ``format_value(0.002895, "s")`` -> ``"2.895 ms"``."""
    unit, factor = display_unit(si_unit, [x])
    text = format_number(float(x) / factor, sig)
    return f"{text} {unit}" if unit not in ("", "1") else text


def _si_unit(column: str) -> str | None:
    try:
        return metric(column).units
    except KeyError:
        return None


def format_table(df: pd.DataFrame, sig: int = SIGNIFICANT, width: int = 200) -> str:
    """``df`` as text with every metric column in its display unit, named in the header (``completion_time
    [ms]``), and every float column with ``sig`` significant digits. ``df`` is not changed.

    A column's SI unit is ``df.attrs["units"][column]`` where ``df.attrs`` has ``units`` (:func:`evaluator.query.best`
    sets it for its metric columns, also per-label ones such as ``completion_time(a)``, and not for label columns),
    else the metric table's entry of the column's name (:func:`evaluator.dataset.metric`, ``max_load_*``
    included). Integer columns of a unit without a scale (links, nodes) are printed as they are."""
    out = df.copy()
    names = {}
    given = df.attrs.get("units")
    for col in df.columns:
        series = df[col]
        if series.dtype.kind not in "fiu" or series.dtype.kind == "b":
            continue
        si = given.get(col) if given is not None else _si_unit(str(col))
        if si is not None and si not in SCALES and series.dtype.kind in "iu":
            if si not in ("", "1", str(col)):  # counts (links, nodes): as they are, the unit in the header
                names[col] = f"{col} [{si}]"
        elif si is not None:
            unit, factor = display_unit(si, series.to_numpy())
            out[col] = [format_number(v / factor, sig) for v in series.to_numpy(dtype=float)]
            if unit not in ("", "1"):
                names[col] = f"{col} [{unit}]"
        elif series.dtype.kind == "f":
            out[col] = [format_number(v, sig) for v in series.to_numpy()]
    out = out.rename(columns=names)
    with pd.option_context("display.width", width, "display.max_columns", 50, "display.max_colwidth", 80):
        return out.to_string()


def format_timing(timing: Mapping[str, float]) -> str:
    """A sweep's ``timing_json`` as one line, e.g. ``wall 11.44 s; driver: expand 1.3 ms, write 4.1 ms; chunks
    (summed): build 86.3 ms, compile 5.042 s, evaluate 0 s; peak memory: driver 282.6 MiB, worker 461.9 MiB``.

    Times are seconds (``*_s``); build, compile and evaluate are summed over the chunks (worker time, not
    wall time); memory is MiB (``*_mb``, from ``ru_maxrss``). Keys that are missing are left out.
    """
    def times(keys: Sequence[tuple[str, str]]) -> str:
        return ", ".join(f"{label} {format_value(timing[k], 's')}" for k, label in keys if k in timing)

    parts = []
    if "wall_s" in timing:
        parts.append(f"wall {format_value(timing['wall_s'], 's')}")
    for title, keys in (("driver", (("expand_s", "expand"), ("write_s", "write"))),
                        ("chunks (summed)", (("build_s", "build"), ("compile_s", "compile"), ("eval_s", "evaluate")))):
        text = times(keys)
        if text:
            parts.append(f"{title}: {text}")
    mem = ", ".join(f"{who} {format_number(timing[k])} MiB" for k, who in
                    (("driver_peak_rss_mb", "driver"), ("worker_peak_rss_mb", "worker")) if k in timing)
    if mem:
        parts.append(f"peak memory: {mem}")
    return "; ".join(parts)
