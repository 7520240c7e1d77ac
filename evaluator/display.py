"""Readable numbers for people: each quantity in a decimal SI unit fit for its size, a few significant digits.

Datasets keep SI base units (seconds, bytes, bytes/s; the metric table
:data:`evaluator.dataset.TABLE`, ``units`` on every variable); only what a
person reads is rescaled: tables, summaries, log lines and plot axes. The one
convention:

* ``s``: h, s, ms, us, ns (hours from 1 h on as shown, 3599.5 s included: a schedule's waits and makespans);
* ``bytes/s``: TB/s, GB/s, MB/s, kB/s, B/s (decimal: 1 GB/s = 10^9 bytes/s);
* ``bytes``: TB, GB, MB, kB, B (decimal: 1 MB = 10^6 bytes; never KiB/MiB/GiB).

**One unit per quantity in a table.** Every column of a table whose SI unit is
the same (all its times; all its bandwidths; all its byte counts) is shown in
one display unit, named in each header (``completion_time [us]`` beside
``optimal_completion_time [us]``), so that numbers side by side compare at a
glance. That unit (:func:`shared_unit`) is the largest in which the geometric
mean of the columns' medians (finite non-zero magnitudes), as shown (rounded to the digits
shown: 999.96 us is 1.000 ms, never "1000 us"), is at least 1, or in which it would show as
a whole unit or more in the unit below (3599.7 s would show as "3600 s" at four digits, so it is
shown in hours, 0.9999 h; between decimal units the two agree): a
single column's median is at least 1 in it (but for that 0.9999 h), and columns orders of magnitude
apart (a machine's aggregate throughput beside a task's bandwidth) meet in the
middle. A column's SI unit comes from the metric table
(:func:`evaluator.dataset.metric`) or from ``df.attrs["units"]``. Summaries
(``evaluator eval``), fixed-width tables (``tiles``, ``partitions``, several
jobs) and plot axes (:func:`axis_label`, unit in brackets) follow the same rule
over what they show together. Ratios, hops and counts have no scale and are
shown as they are.

Numbers are shown with :data:`SIGNIFICANT` significant digits (more where an
integer part is longer), in scientific notation only below 10^-3 or from
10^9 on in the chosen unit. Nothing a person reads is a Python repr.
"""

from __future__ import annotations

import contextlib
import functools
import math
import re
import sys
import threading
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from .dataset import BOUND_VARIABLES, metric

__all__ = ["SIGNIFICANT", "SCALES", "LOG_INTERVAL_S", "progress_bar", "display_unit", "shared_unit", "format_number",
           "format_value", "format_values", "format_table", "format_timing", "axis_label", "si_unit", "summary_lines", "elapsed"]

SIGNIFICANT = 4
"""Significant digits shown by default."""

SCALES: dict[str, tuple[tuple[str, float], ...]] = {
    "s": (("h", 3600.0), ("s", 1.0), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9)),
    "bytes/s": (("TB/s", 1e12), ("GB/s", 1e9), ("MB/s", 1e6), ("kB/s", 1e3), ("B/s", 1.0)),
    "bytes": (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3), ("B", 1.0)),
    "W": (("MW", 1e6), ("kW", 1e3), ("W", 1.0)),
}
"""SI unit (as in the metric table) -> display units and their size in that SI unit, largest first."""


def _median(values: Any) -> float | None:
    """Median of the finite non-zero magnitudes of ``values`` (None if there are none)."""
    mags = np.abs(np.asarray(values, dtype=float).reshape(-1))
    mags = mags[np.isfinite(mags) & (mags > 0)]
    return float(np.median(mags)) if mags.size else None


def _scale_of(si_unit: str) -> tuple[tuple[str, float], ...] | None:
    """The display units of ``si_unit``: its :data:`SCALES` entry, or a scaled unit per something (``bytes/s`` per
    a currency: ``bytes/s/relative`` -> ``GB/s/relative``, ...); None for units without a scale."""
    if si_unit in SCALES:
        return SCALES[si_unit]
    for base in sorted(SCALES, key=len, reverse=True):
        if si_unit.startswith(base + "/"):
            per = si_unit[len(base):]
            return tuple((u + per, f) for u, f in SCALES[base])
    return None


def shared_unit(si_unit: str, columns: Sequence[Any], sig: int = SIGNIFICANT) -> tuple[str, float]:
    """``(unit, factor)`` to show every column of ``columns`` (values in ``si_unit``) as ``values / factor``.

    The largest unit in which the geometric mean of the columns' medians (of their finite non-zero
    magnitudes; columns without such values left out), rounded to ``sig`` significant digits as it is shown,
    is at least 1 (999.96 us is 1.000 ms, not "1000 us"), or in which, shown in the unit below, it would
    round to this unit's size or more (3599.7 s is "3600 s" at four digits: hours, 0.9999 h; the ratio of
    hours to seconds is not a power of ten, so the two roundings differ there); the SI unit itself (factor 1)
    for units without a scale (``"1"``, ``"links"``, unknown) and where no column has such values.
    """
    scale = _scale_of(si_unit)
    if scale is None:
        return si_unit, 1.0
    medians = [m for m in (_median(c) for c in columns) if m is not None]
    if not medians:
        return next((u, f) for u, f in scale if f == 1.0)
    typical = float(np.exp(np.mean(np.log(medians))))
    for (unit, factor), below in zip(scale, [f for _, f in scale[1:]] + [None]):
        if _rounded(typical / factor, sig) >= 1 - 1e-12:
            return unit, factor
        if below is not None and _rounded(typical / below, sig) >= factor / below * (1 - 1e-12):
            return unit, factor  # it would roll over in the unit below: 3599.7 s shows as "3600 s"
    return scale[-1]


def _rounded(x: float, sig: int) -> float:
    """``x`` rounded to ``sig`` significant digits (as :func:`format_number` shows it)."""
    return float(f"{x:.{max(sig, 1) - 1}e}") if math.isfinite(x) else x


def display_unit(si_unit: str, values: Any, sig: int = SIGNIFICANT) -> tuple[str, float]:
    """``(unit, factor)`` to show ``values`` (in ``si_unit``) as ``values / factor`` in ``unit``: the largest
    unit in which their median magnitude, rounded to ``sig`` significant digits, is at least 1 or would be this
    unit's size or more in the unit below (:func:`shared_unit` of one column)."""
    return shared_unit(si_unit, [values], sig)


def axis_label(name: str, unit: str) -> str:
    """A plot axis label with its display unit: ``completion_time [ms]``; ``[1]`` for ratios and counts
    without a unit of their own, so that no axis goes without one."""
    return f"{name} [{unit or '1'}]"


def si_unit(name: str) -> str | None:
    """The SI unit of a variable from the metric table (:func:`evaluator.dataset.metric`); None if it has no
    entry."""
    try:
        return metric(name).units
    except KeyError:
        return None


def format_number(x: float, sig: int = SIGNIFICANT) -> str:
    """``x`` with ``sig`` significant digits: ``2.895``, ``0.01234``, ``123.5``, ``12346`` (whole part kept),
    ``1.235e-05`` below 10^-3, ``1.235e+09`` from 10^9 on; ``nan``/``inf`` as such."""
    x = float(x)
    if not math.isfinite(x):
        return str(x)
    if x == 0:
        return "0"
    mag = abs(_rounded(x, sig))  # as shown: 999999999.9 is 1.000e+09, 0.00099996 is 0.001000
    if mag < 1e-3 or mag >= 1e9:
        return f"{x:.{sig - 1}e}"
    decimals = max(0, sig - 1 - math.floor(math.log10(mag)))
    text = f"{x:.{decimals}f}"
    if decimals and abs(float(text)) >= 10 ** (sig - decimals):  # 9.9996 -> "10.000": one digit too many
        text = f"{x:.{decimals - 1}f}"
    return text


def format_value(x: float, si_unit: str, sig: int = SIGNIFICANT) -> str:
    """One value with its display unit: ``format_value(0.002895, "s")`` -> ``"2.895 ms"``."""
    unit, factor = display_unit(si_unit, [x], sig)
    text = format_number(float(x) / factor, sig)
    return f"{text} {unit}" if unit not in ("", "1") else text


def format_values(values: Any, si_unit: str, unit: tuple[str, float] | None = None,
                  sig: int = SIGNIFICANT) -> tuple[list[str], str]:
    """Values shown together, in one display unit: ``(texts, unit)``; ``unit = (name, factor)`` from
    :func:`shared_unit` where they belong with other values, else :func:`display_unit` of ``values``."""
    flat = np.asarray(values, dtype=float).reshape(-1)
    name, factor = unit if unit is not None else display_unit(si_unit, flat, sig)
    return [format_number(v / factor, sig) for v in flat], name


def rank_labels(index: Sequence[Any], tied: Sequence[int] = ()) -> list[str]:
    """A ranking's ``rank`` index as text: a rank that several rows share is marked ``=`` (``1=``, ``1=``, ``3``):
    a tie (:data:`evaluator.query.TIE_RTOL`); so is a rank of ``tied`` (shared with rows not in ``index``: the
    ranking was cut or a table shows some of its rows)."""
    from .errors import is_int, require

    require(not isinstance(index, (str, bytes)) and all(is_int(r) for r in index), "index", index,
            "a sequence of integer ranks (a ranking's rank index)")
    ranks = [int(r) for r in index]
    counts = pd.Series(ranks).value_counts().to_dict() if ranks else {}
    tied = {int(r) for r in tied}
    return [f"{r}=" if counts[r] > 1 or r in tied else str(r) for r in ranks]


def format_table(df: pd.DataFrame, sig: int = SIGNIFICANT, width: int = 200) -> str:
    """``df`` as text with every metric column in its display unit, named in the header (``completion_time
    [ms]``), and every float column with ``sig`` significant digits. ``df`` is not changed.

    A column's SI unit is ``df.attrs["units"][column]`` where ``df.attrs`` has ``units`` (:func:`evaluator.query.best`
    sets it for its metric columns, also per-label ones such as ``completion_time(a)``, and not for label columns),
    else the metric table's entry of the column's name (:func:`evaluator.dataset.metric`, ``max_load_*``
    included). Columns of one SI unit share one display unit (:func:`shared_unit`: every time column of the table
    in the same unit, every bandwidth column in another). Integer columns of a unit without a scale (links,
    nodes) are printed as they are. ``df.attrs["missing"]`` (``{column: text}``) prints a NaN of those columns as
    the text (``ahead_by`` of a ranking's last row: ``-``); ``df.attrs["tied_ranks"]`` marks those ranks tied
    (``3=``) where the table shows one of the tied rows."""
    out = df.copy()
    names = {}
    given = df.attrs.get("units")
    scaled: dict[str, list] = {}
    for col in df.columns:
        series = df[col]
        if series.dtype.kind not in "fiu" or series.dtype.kind == "b":
            continue
        si = given.get(col) if given is not None else si_unit(str(col))
        if si is not None and si not in SCALES and series.dtype.kind in "iu":
            if si not in ("", "1", str(col)):  # counts (links, nodes): as they are, the unit in the header
                names[col] = f"{col} [{si}]"
        elif si is not None:
            scaled.setdefault(si, []).append(col)
        elif series.dtype.kind == "f":
            out[col] = [format_number(v, sig) for v in series.to_numpy()]
    for si, cols in scaled.items():
        unit, factor = shared_unit(si, [df[c].to_numpy(dtype=float) for c in cols], sig)
        for col in cols:
            out[col] = [format_number(v / factor, sig) for v in df[col].to_numpy(dtype=float)]
            if unit not in ("", "1"):
                names[col] = f"{col} [{unit}]"
    for col, text in df.attrs.get("missing", {}).items():  # a NaN that means "none", in that column's words
        if col in df.columns:
            out[col] = [text if isinstance(v, float) and math.isnan(v) else w
                        for v, w in zip(df[col].to_numpy(), out[col])]
    out = out.rename(columns=names)
    tied = df.attrs.get("tied_ranks", ())
    if out.index.name == "rank" and out.index.dtype.kind in "iu" and (out.index.has_duplicates or len(tied)):
        out.index = pd.Index(rank_labels(out.index, tied), name="rank")
    with pd.option_context("display.width", width, "display.max_columns", 50, "display.max_colwidth", 80):
        return out.to_string()


def format_timing(timing: Mapping[str, float]) -> str:
    """A sweep's ``timing_json`` as one line, e.g. ``wall 11.44 s; driver: expand 1.300 ms, chunk files (summed
    over threads) 12.00 ms, dataset assembly 4.100 ms; chunks (summed): build 86.30 ms, compile 5.042 s, evaluate
    0 s; peak memory: driver 296.4 MB, worker 484.3 MB``.

    ``chunk files``: the finished chunks persisted as they came, on the driver's writer threads (their time summed;
    it overlaps the evaluation and is mostly a wait on ``fsync``); ``dataset assembly``: the dataset built from the
    chunks (its file is written after the record). Records of earlier versions have ``write_s`` instead (the chunk
    files), shown as ``write``.

    Times are seconds (``*_s``); build, compile and evaluate are summed over the chunks (worker time, not
    wall time); memory is bytes in the record (``*_peak_rss_bytes``, from ``ru_maxrss``; records before 2026-12-07
    held MiB, ``*_peak_rss_mb``) and shown in decimal MB/GB, both peaks in one unit. Keys that are missing are left out.
    """
    def times(keys: Sequence[tuple[str, str]]) -> str:
        return ", ".join(f"{label} {format_value(timing[k], 's')}" for k, label in keys if k in timing)

    parts = []
    if "wall_s" in timing:
        parts.append(f"wall {format_value(timing['wall_s'], 's')}")
    for title, keys in (("driver", (("expand_s", "expand"), ("persist_s", "chunk files (summed over threads)"),
                                    ("assemble_s", "dataset assembly"), ("write_s", "write"))),
                        ("chunks (summed)", (("build_s", "build"), ("compile_s", "compile"), ("eval_s", "evaluate")))):
        text = times(keys)
        if text:
            parts.append(f"{title}: {text}")
    peaks = [(who, float(timing[f"{who}_peak_rss_bytes"]) if f"{who}_peak_rss_bytes" in timing else
              float(timing[f"{who}_peak_rss_mb"]) * 2**20) for who in ("driver", "worker")  # (MiB in old records)
             if f"{who}_peak_rss_bytes" in timing or f"{who}_peak_rss_mb" in timing]
    texts, unit = format_values([b for _, b in peaks], "bytes", shared_unit("bytes", [[b] for _, b in peaks]))
    mem = ", ".join(f"{who} {t} {unit}" for (who, _), t in zip(peaks, texts))
    if mem:
        parts.append(f"peak memory: {mem}")
    return "; ".join(parts)


def summary_lines(ds: xr.Dataset) -> list[str]:
    """A short human summary of one evaluation, in the display units of :mod:`evaluator.display` (decimal SI):
    its times (completion, phases, bounds) in one unit, its per-class maximum loads in one unit."""
    a = ds.attrs
    total = float(ds.total_bytes)
    tp, eib = float(ds.throughput), float(ds.effective_injection_bandwidth)
    (tp_text, eib_text), bw_unit = format_values([tp, eib], "bytes/s", shared_unit("bytes/s", [[tp], [eib]]))
    times = [[float(ds.completion_time)]]
    phased = "phase" in ds.dims and ds["phase_completion_time"].ndim == 1
    if phased:
        times.append(ds["phase_completion_time"].values)
    bounds = [(label, names) for label, names in BOUND_VARIABLES.items() if names[0] in ds]
    times += [[float(ds[n]) for n in names[:2]] for _, names in bounds]
    beyond = [v for v in ("time_with_latency", "time_max_min") if v in ds]  # times beyond the bound
    times += [[float(ds[v]) for v in beyond]] if beyond else []
    t_unit = shared_unit("s", times)

    def t(x: float) -> str:
        return f"{format_values([x], 's', t_unit)[0][0]} {t_unit[0]}"

    lines = [
        f"topology    {a.get('topology')}  routing {a.get('routing')}",
        f"traffic     {a.get('traffic', '?')}  placement {a.get('placement', '?')}",
        f"bytes       {format_value(total, 'bytes')} ({total:,.0f} B)",
        f"completion  {t(float(ds.completion_time))}   bottleneck: {ds.bottleneck.item()}"
        + ("   (bandwidth bound)" if beyond else ""),
        (f"throughput  {tp_text} {bw_unit} aggregate, {eib_text} {bw_unit} per task" if total > 0 and tp < math.inf
         else "throughput  unbounded: every byte stays on its node (no link carries one; the model has no "
              "on-node bandwidth)" if total > 0 else "throughput  none: the traffic sends no bytes"),
        f"mean hops   {format_number(float(ds.mean_hops))}",
    ]
    if "time_with_latency" in ds:
        lines.append(f"latency     {t(float(ds.time_with_latency))}   with per-message latency "
                     f"({100 * float(ds.latency_share):.1f}% of it latency; docs/latency.md)")
    if "time_max_min" in ds:
        lines.append(f"max-min     {t(float(ds.time_max_min))}   flow-level max-min sharing, "
                     f"{ds.attrs.get('fairness', 'flow')}-fair")
    if "paths_per_pair" in ds and np.isfinite(float(ds.paths_per_pair)):
        lines.append(f"paths/pair  {format_number(float(ds.paths_per_pair))} (router paths per communicating "
                     f"router pair)")
    loads = sorted(str(k) for k in ds.data_vars if str(k).startswith("max_load_"))
    if loads:
        texts, unit = format_values([float(ds[v]) for v in loads], "bytes",
                                    shared_unit("bytes", [[float(ds[v])] for v in loads]))
        lines += [f"{v:<22}{x} {unit}" if np.isfinite(float(ds[v])) else f"{v:<22}- (no link of this class)"
                  for v, x in zip(loads, texts)]
    if phased:
        for name, x, b in zip(ds["phase"].values, ds["phase_completion_time"].values, ds["phase_bottleneck"].values):
            lines.append(f"phase {str(name):<15} {t(float(x))}   bottleneck: {b}")
    for note in str(a.get("notes", "")).splitlines():
        lines.append(f"note        {note}")
    for label, (lower, upper, eff) in bounds:
        lines.append(f"{label:<12}>= {t(float(ds[lower]))} (certified lower bound; feasible "
                     f"{t(float(ds[upper]))}; {a.get('bound_method')}, {a.get('bound_solver')}, gap "
                     f"{float(a.get('bound_gap', 0.0)):.1e})   {eff} {format_number(float(ds[eff]))}")
        lines.append(f"{'':<12}bounds {a.get('bound_bounds', '')}")
    return lines


@contextlib.contextmanager
def elapsed(what: str, delay: float = 5.0, stream=None) -> Iterator[None]:
    """A line on a terminal's stderr that counts the seconds of one long computation that has no steps to count
    (one design point's evaluation: a single device call). It appears after ``delay`` seconds, is updated every
    second and is erased at the end; where ``stream`` (default ``sys.stderr``) is not a terminal nothing is
    written. A Ctrl-C inside still interrupts (the line is erased on the way out)."""
    out = sys.stderr if stream is None else stream
    if not getattr(out, "isatty", lambda: False)():
        yield
        return
    import time

    from tqdm import tqdm

    stop = threading.Event()
    bars: list = []
    t0 = time.monotonic()

    def tick() -> None:
        if stop.wait(delay):
            return
        bars.append(tqdm(total=None, bar_format="{desc}", file=out, leave=False))
        while True:
            bars[0].set_description_str(f"{what}: {tqdm.format_interval(time.monotonic() - t0)}")
            if stop.wait(1.0):
                return

    thread = threading.Thread(target=tick, name="elapsed", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
        if bars:
            bars[0].close()


LOG_INTERVAL_S = 30.0
"""Seconds between a progress bar's lines where stderr is not a terminal (a log, a batch job's output file)."""

_ESCAPES = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


class _LogLines:
    """A stream for tqdm where stderr is not a terminal: each status tqdm would redraw in place (``\\r`` +
    status + padding) becomes one line of its own, cursor moves and blank clears are dropped, and a status equal
    to the line before is not written again (the close repeats the last one)."""

    def __init__(self, out) -> None:
        self.out, self._last = out, None

    def write(self, text: str) -> None:
        for part in _ESCAPES.sub("", text).replace("\n", "\r").split("\r"):
            line = part.rstrip()
            if line and line != self._last:
                self.out.write(line + "\n")
                self._last = line
        self.out.flush()

    def flush(self) -> None:
        self.out.flush()


def progress_bar(iterable=None, *, enabled: bool = True, stream=None, **options):
    """The progress bar of every long computation (a ``tqdm`` with ``options``: ``total``, ``unit``, ``desc``...).

    * ``enabled`` false: a bar that writes nothing (the commands' ``--no-progress``);
    * ``stream`` (default ``sys.stderr``) a terminal, or a Jupyter kernel: tqdm's own bar, redrawn in place
      (a notebook's widget there);
    * anything else (a log file, a pipe, a batch job's output): plain ASCII lines, the first at the start, then
      at most one every :data:`LOG_INTERVAL_S` seconds, and the last state when the work ends, so that a log
      holds a few readable lines rather than every redraw joined by carriage returns."""
    from tqdm.auto import tqdm as auto

    out = sys.stderr if stream is None else stream
    if not enabled:
        return auto(iterable, disable=True, **options)
    if getattr(out, "isatty", lambda: False)() or any(c.__module__ == "tqdm.notebook" for c in auto.__mro__):
        return auto(iterable, file=out, **options)
    options.update(file=_LogLines(out), ascii=True, leave=True, dynamic_ncols=False, ncols=100,
                   mininterval=LOG_INTERVAL_S, maxinterval=LOG_INTERVAL_S, miniters=0)
    return _log_bar()(iterable, **options)


@functools.cache
def _log_bar():
    """tqdm's bar with its redraws at most one every ``mininterval`` seconds, explicit ones included
    (``set_postfix_str``, ``bar.n = ...; bar.refresh()``: a search's bar refreshes after every batch)."""
    from tqdm import tqdm

    class LogBar(tqdm):
        _line_t = -math.inf

        def refresh(self, nolock=False, lock_args=None):
            now = self._time()
            if now - self._line_t < self.mininterval:
                return False
            self._line_t = now
            return super().refresh(nolock=nolock, lock_args=lock_args)

    return LogBar
