"""Audit of what people read: one decimal SI convention (kB, MB, GB/s, ms, us; never KiB/MiB/GiB), a value shown in
the largest unit in which it *as shown* is at least 1 (999.96 us is "1.000 ms", not "1000 us"), the digits of
evaluator.display.SIGNIFICANT, and one unit for the values a table or a line shows together.

Every expectation comes from the reference below (exact decimal arithmetic with :mod:`decimal`), or from the
dataset's SI values run through it, never from the formatter under test."""

from __future__ import annotations

import math
import re
import types
from decimal import ROUND_HALF_EVEN, Decimal

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from evaluator import cli
from evaluator.display import format_number, format_table, format_value, format_values, shared_unit

SIG = 4
UNITS = {  # SI unit -> display units, largest first (decimal: 1 kB = 1000 B), as the design's display section says
    "s": [("h", 3600.0), ("s", 1.0), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9)],
    "bytes": [("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3), ("B", 1.0)],
    "bytes/s": [("TB/s", 1e12), ("GB/s", 1e9), ("MB/s", 1e6), ("kB/s", 1e3), ("B/s", 1.0)],
    "W": [("MW", 1e6), ("kW", 1e3), ("W", 1.0)],
}
BASE = {"s": "s", "bytes": "B", "bytes/s": "B/s", "W": "W"}


# ----------------------------------------------------------------------------------------------- the reference
def _round_sig(x: float, sig: int = SIG) -> Decimal:
    """``x`` (its exact binary value) rounded half-even to ``sig`` significant digits."""
    d = Decimal(x)
    if d == 0:
        return d
    return d.quantize(Decimal(1).scaleb(d.adjusted() - sig + 1), rounding=ROUND_HALF_EVEN)


def ref_number(x: float, sig: int = SIG) -> str:
    """The number as the convention shows it: ``sig`` significant digits (the whole part kept), scientific where
    the *shown* value is below 10^-3 or from 10^9 on."""
    if not math.isfinite(x):
        return str(x)
    if x == 0:
        return "0"
    r = _round_sig(x, sig)
    e = r.adjusted()
    if abs(r) < Decimal("0.001") or abs(r) >= Decimal(10) ** 9:
        digits = r.as_tuple().digits + (0,) * sig
        mant = f"{digits[0]}.{''.join(map(str, digits[1:sig]))}" if sig > 1 else f"{digits[0]}"
        return f"{'-' if r < 0 else ''}{mant}e{'-' if e < 0 else '+'}{abs(e):02d}"
    decimals = max(0, sig - 1 - e)
    q = Decimal(x).quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_EVEN)
    return f"{q:f}"


def ref_unit(si: str, typical: float | None, sig: int = SIG) -> tuple[str, float]:
    """The largest display unit in which ``typical`` rounded to ``sig`` digits is at least 1, or in which the
    unit below would show a whole unit of it (3599.7 s rounds to 3600 s: shown as 0.9999 h)."""
    if typical is None or not math.isfinite(typical) or typical == 0:
        return BASE[si], 1.0
    scale = UNITS[si]
    for i, (unit, f) in enumerate(scale):
        below = scale[i + 1][1] if i + 1 < len(scale) else None
        if abs(_round_sig(abs(typical) / f, sig)) >= 1 or (
                below is not None and abs(_round_sig(abs(typical) / below, sig)) >= f / below):
            return unit, f
    return scale[-1]


def ref_value(x: float, si: str, sig: int = SIG) -> str:
    unit, f = ref_unit(si, abs(x), sig)
    return f"{ref_number(x / f, sig)} {unit}"


def ref_shared(si: str, columns) -> tuple[str, float]:
    """One unit for columns shown together: the geometric mean of their medians (finite non-zero magnitudes)."""
    meds = []
    for c in columns:
        m = np.abs(np.asarray(c, float).ravel())
        m = m[np.isfinite(m) & (m > 0)]
        if m.size:
            meds.append(float(np.median(m)))
    return ref_unit(si, math.exp(sum(math.log(m) for m in meds) / len(meds)) if meds else None)


# ------------------------------------------------------------------------------------ display.py against it
@pytest.mark.parametrize("x,si,text", [
    (999.96e-6, "s", "1.000 ms"),  # was "1000 us": rounds up into the next unit
    (999.94e-6, "s", "999.9 us"),
    (-999.96e-6, "s", "-1.000 ms"),  # was "-1000 us"
    (999_960.0, "bytes", "1.000 MB"),  # was "1000 kB"
    (999.97e9, "bytes/s", "1.000 TB/s"),  # was "1000 GB/s"
    (3599.9, "s", "1.000 h"),  # was "3600 s"
    (999.96, "W", "1.000 kW"),  # was "1000 W"
    (0.99996e-3, "s", "1.000 ms"),
    (1e-3, "s", "1.000 ms"),
    (134_217_728.0, "bytes", "134.2 MB"),  # 2^27 bytes: decimal MB, never "128 MiB"
    (0.0134217728, "s", "13.42 ms"),
    (0.0, "s", "0 s"),
    (-0.0, "bytes", "0 B"),
    (5e15, "bytes", "5000 TB"),  # beyond the largest unit: the whole part kept
    (2e21, "bytes", "2.000e+09 TB"),
    (999_999_999.9e12, "bytes", "1.000e+09 TB"),  # was "1000000000 TB": shown as 10^9, so scientific
    (1e-13, "s", "1.000e-04 ns"),
    (math.nan, "s", "nan s"),
    (math.inf, "bytes/s", "inf B/s"),
    (-math.inf, "s", "-inf s"),
])
def test_format_value_boundaries(x, si, text):
    assert ref_value(x, si) == text  # the reference says what the convention says
    assert format_value(x, si) == text


@pytest.mark.parametrize("x,text", [
    (999_999_999.9, "1.000e+09"),  # was "1000000000": 10 digits where the shown value is 10^9
    (0.00099996, "0.001000"),  # was "1.000e-03": the shown value is 10^-3, not below it
    (9.99996, "10.00"), (999.96, "1000"), (-0.0123456, "-0.01235"), (12345.6, "12346"),
])
def test_format_number_as_shown(x, text):
    assert ref_number(x) == text and format_number(x) == text


def _samples(rng, n: int) -> np.ndarray:
    """Log-uniform magnitudes from 10^-14 to 10^22, both signs, and values just below and above each unit's size
    (where rounding carries into the next unit)."""
    mags = 10 ** rng.uniform(-14, 22, n)
    near = [f * (1 + d) for s in UNITS.values() for _, f in s for d in (-7e-5, -4e-5, -1e-6, 0.0, 1e-6, 4e-5)]
    near += [f * 1000 * (1 + d) for s in UNITS.values() for _, f in s for d in (-7e-5, -4e-5, -1e-6)]
    vals = np.concatenate([mags, near])
    return vals * rng.choice([-1.0, 1.0], vals.size)


@pytest.mark.parametrize("si", sorted(UNITS))
def test_format_value_matches_the_reference_everywhere(si):
    rng = np.random.default_rng(7)
    bad = [(x, format_value(x, si), ref_value(x, si)) for x in _samples(rng, 1500)
           if format_value(x, si) != ref_value(x, si)]
    assert not bad, bad[:5]


@pytest.mark.parametrize("sig", [2, 3, 5])
def test_format_value_other_significant_digits(sig):
    rng = np.random.default_rng(sig)
    bad = [(x, format_value(x, "s", sig)) for x in _samples(rng, 400)
           if format_value(x, "s", sig) != ref_value(x, "s", sig)]
    assert not bad, bad[:5]


def test_no_value_shown_is_1000_of_a_unit_below_the_largest():
    """The convention's invariant, over every value: in any unit but the largest the shown magnitude is below the
    next unit's size (1000, or 3600 s an hour) and at least 1 (but in the smallest unit), or 0.9999 where the unit
    below would show a whole unit (3599.5-3599.8 s is 0.9999 h at 4 digits, not "3600 s")."""
    rng = np.random.default_rng(11)
    for si, scale in UNITS.items():
        for x in _samples(rng, 500):
            text, unit = format_value(x, si).rsplit(" ", 1)
            i = [u for u, _ in scale].index(unit)
            shown = abs(float(text))
            if i > 0:
                ratio = scale[i - 1][1] / scale[i][1]
                assert shown < ratio, (x, si, text, unit)
            if i < len(scale) - 1:
                assert shown >= 1 or shown == 0.9999, (x, si, text, unit)


def test_format_values_and_tables_pick_the_unit_as_shown():
    texts, unit = format_values([999.96e-6, 999.97e-6], "s")
    assert (texts, unit) == ([ref_number(999.96e-6 / 1e-3), ref_number(999.97e-6 / 1e-3)], "ms")
    df = pd.DataFrame({"completion_time": [999.96e-6, 999.98e-6, 999.97e-6],
                       "throughput": [999.96e9, 999.99e9, 999.98e9]})
    head = format_table(df).splitlines()[0]
    assert "completion_time [ms]" in head and "throughput [TB/s]" in head, head  # were [us] and [GB/s]: "1000"
    assert shared_unit("s", [[999.96e-6]]) == ref_shared("s", [[999.96e-6]]) == ("ms", 1e-3)
    assert shared_unit("bytes", [[1.0], [0.0], [math.nan]]) == ref_shared("bytes", [[1.0], [0.0], [math.nan]])


def test_the_units_a_person_reads_are_decimal_si_and_bases_stay_si():
    """Only decimal prefixes; 1 kB is 1000 B (not 1024); a value below 1 B shows B, not a binary unit."""
    assert format_value(1000.0, "bytes") == "1.000 kB" and format_value(1024.0, "bytes") == "1.024 kB"
    assert format_value(2 ** 30, "bytes") == "1.074 GB" and format_value(2 ** 20, "bytes/s") == "1.049 MB/s"
    assert format_value(0.5, "bytes") == "0.5000 B"


# ---------------------------------------------------------------------------------------- CLI printed text
_VALUE = re.compile(r"(?<![\w.,])(-?\d+(?:\.\d+)?(?:e[+-]\d+)?) (TB/s|GB/s|MB/s|kB/s|B/s|TB|GB|MB|kB|B|h|s|ms|us|ns|"
                    r"MW|kW|W)(?![\w/])")
_BINARY = re.compile(r"\b\d[\d.]* ?(?:[KMGT]iB|KB|kiB)\b|\[(?:[KMGT]iB)")


def _check_text(out: str) -> list[tuple[str, str]]:
    """Every 'number unit' in ``out``: no binary unit anywhere; at most SIG significant digits beyond the whole
    part (no raw 0.0134217728 s). Returns the pairs found."""
    assert not _BINARY.search(out), _BINARY.search(out)
    pairs = _VALUE.findall(out)
    for num, unit in pairs:
        digits = num.split("e")[0].lstrip("-").replace(".", "").lstrip("0")
        whole = len(num.split("e")[0].lstrip("-").split(".")[0].lstrip("0"))
        assert len(digits) <= max(SIG, whole), (num, unit)
    return pairs


def test_eval_summary_in_the_unit_its_value_shows(tmp_path, capsys):
    """A shift whose completion time is 999.96 us printed "completion  1000 us"; every value of the summary is the
    dataset's SI value through the reference."""
    per_task = 0.99996e-3 * 2e9  # one 2 GB/s link per task under DOR: 999.96 us
    assert cli.main(["eval", "topology=torus", "topology.dims=[4,4]", "routing=dor", "traffic=shift",
                     "traffic.n_tasks=16", f"traffic.bytes={per_task!r}", "placement=linear",
                     f"output_dir={tmp_path}"]) == 0
    out = capsys.readouterr().out
    _check_text(out)
    ds = xr.open_dataset(out.split("dataset: ")[1].split()[0])
    ct, total = float(ds.completion_time), float(ds.total_bytes)
    assert abs(ct - 999.96e-6) < 1e-12
    assert f"completion  {ref_value(ct, 's')}   bottleneck" in out, out
    assert f"bytes       {ref_value(total, 'bytes')} ({total:,.0f} B)" in out
    tp, eib = float(ds.throughput), float(ds.effective_injection_bandwidth)
    unit, f = ref_shared("bytes/s", [[tp], [eib]])
    assert f"throughput  {ref_number(tp / f)} {unit} aggregate, {ref_number(eib / f)} {unit} per task" in out
    ds.close()


def test_partitions_and_tiles_print_decimal_units(tmp_path, capsys):
    assert cli.main(["partitions", "BlueWaters", "--size", "64", "128", "--out", str(tmp_path), "--no-plot"]) == 0
    out = capsys.readouterr().out
    pairs = _check_text(out)
    # links of 9.375e9 and 4.6875e9 bytes/s per direction (Gemini X/Z and Y), shown in GB/s
    assert "link bandwidth 9.375, 4.688, 9.375 GB/s per direction" in out
    assert ("75.00", "GB/s") in pairs and "bisection [GB/s]" in out
    assert cli.main(["tiles", "--grid", "64,64,64", "--nodes", "8", "--tasks-per-node", "4", "--no-save",
                     "-n", "3"]) == 0
    out = capsys.readouterr().out
    _check_text(out)
    assert "injection 6.400 GB/s per node" in out and "all-at-once [us]" in out


# ---------------------------------------------------------------- CLI lines whose values share one unit
def _ns(**kw):
    return types.SimpleNamespace(**kw)


def test_map_starts_column_is_in_one_unit(capsys):
    """The starts' completion times straddling 1 ms were printed as '750.0 us' above '1.200 ms' in one column."""
    from evaluator.cli import mapping as M

    starts = {"linear": 750e-6, "partition": 1.2e-3, "random(seed=0)": 999.96e-6, "alps": 2.5e-3}
    best = min(starts.values())
    res = _ns(starts=starts, gain=lambda n: 1 - best / starts[n], skipped={})
    M._print_starts(res, verbose=False)
    lines = capsys.readouterr().out.splitlines()[1:]
    unit, f = ref_shared("s", [list(starts.values())])
    assert unit == "ms"
    for name, line in zip(starts, lines):
        assert line.split()[:3] == [name, ref_number(starts[name] / f), unit], line


def test_map_draws_table_is_in_one_unit(capsys, monkeypatch):
    from evaluator.cli import mapping as M

    names = [M.FOUND, "linear (as configured)"]
    mean, p95 = [0.9e-3, 1.3e-3], [0.95e-3, 1.6e-3]
    ds = xr.Dataset({"completion_time_mean": ("mapping", mean), "completion_time_p95": ("mapping", p95)},
                    coords={"mapping": names, "draw": ["seed=0", "seed=1"]})
    monkeypatch.setattr(M, "over_draws", lambda *a, **k: ds)
    res = _ns(starts={"linear (as configured)": 1.2e-3}, skipped={}, best_start="linear (as configured)",
              task_node=np.arange(4), start_nodes={"linear (as configured)": np.arange(4)})
    point = _ns(routing=_ns(draws=lambda k: True), topology=None, traffic=None)
    M._print_draws(res, point)
    rows = capsys.readouterr().out.splitlines()[1:3]
    unit, f = ref_shared("s", [mean, p95])
    for i, row in enumerate(rows):
        words = row.split()
        assert words[-4:] == [ref_number(mean[i] / f), unit, ref_number(p95[i] / f), unit], row


def test_eval_draws_line_is_in_one_unit(monkeypatch):
    """The draws line of `evaluator eval` gave 'mean 1.100 ms, 95th percentile 1.250 ms, range 950.0 us to ...'."""
    from evaluator.cli import evaluate as E

    times = np.array([[1.0e-3, 0.95e-3, 1.1e-3, 1.3e-3]])
    stats = {"mean": times.mean(1), "p95": np.array([1.25e-3]), "max": times.max(1), "min": times.min(1)}
    d = xr.Dataset({"completion_time": (("point", "draw"), times),
                    **{f"completion_time_{k}": ("point", v) for k, v in stats.items()}},
                   coords={"draw": [f"seed={i}" for i in range(4)]})
    monkeypatch.setattr(E, "evaluate_draws", lambda *a, **k: d)
    point = _ns(routing=_ns(draws=lambda k: True), topology=None, traffic=None, placement=None)
    lines, stopped = E._draws(xr.Dataset(), point, 4, {})
    assert not stopped and len(lines) == 1
    unit, f = ref_shared("s", [[float(v[0])] for v in stats.values()])
    t = {k: f"{ref_number(float(v[0]) / f)} {unit}" for k, v in stats.items()}
    assert (f"mean {t['mean']}, 95th percentile {t['p95']}, range {t['min']} to {t['max']}; seed=0, above, "
            f"ranks 2 of 4") in lines[0], lines[0]
