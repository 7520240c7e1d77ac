"""A Ctrl-C or SIGTERM during a named study keeps what it finished (evaluator/errors.py ``with_partial``,
evaluator/studies/rdn.py, evaluator/studies/buyer.py, evaluator/cli/study.py): the library raises the same
KeyboardInterrupt carrying ``.partial``, the dataset of the points finished (equal to an uninterrupted run's there,
the rest NaN with the reason ``NOT_COMPUTED``), and ``evaluator study`` writes it and exits 130 (Ctrl-C) or 143
(SIGTERM). The interruption is raised (or signalled, for real) from inside a point at a chosen call."""

from __future__ import annotations

import os
import signal

import numpy as np
import pytest
import xarray as xr

import evaluator.studies.buyer as B
import evaluator.studies.rdn as R
from evaluator.errors import NOT_COMPUTED, ConfigError
from evaluator.studies.rdn import RdnMachine, allocation_mode_study
from tests.helpers import once

M8 = RdnMachine(p=2, a=4, h=2, g=8, bandwidth=1.0e9)
RDN_KW = dict(groups=(2, 4, 8), patterns=("stencil",), n_seeds=2, bounds=(), adaptive=())
TINY = 32


def _stop_at(monkeypatch, module, name: str, call: int, how=None):
    """``module.name`` raising KeyboardInterrupt (or doing ``how()``) at its ``call``-th call (1-based)."""
    real, n = getattr(module, name), [0]

    def wrapped(*a, **k):
        n[0] += 1
        if n[0] == call:
            if how is None:
                raise KeyboardInterrupt
            how()
        return real(*a, **k)

    monkeypatch.setattr(module, name, wrapped)
    return n


@pytest.fixture(scope="module")
@once
def rdn_full():
    return allocation_mode_study(M8, **RDN_KW)


@pytest.fixture(scope="module")
@once
def buyer_full():
    return B.buyer_study([TINY], n_seeds=2, workloads=("permutation", "allreduce_8B"))


def test_rdn_keeps_the_points_finished(monkeypatch, rdn_full):
    """Interrupted in the third point's first TDN draw: the two points before it are the full run's, bit for bit,
    the third NaN with the reason; the exception is a KeyboardInterrupt (what a caller that does not look sees)."""
    _stop_at(monkeypatch, R, "_tdn_point", 2 * 2 + 1)
    with pytest.raises(KeyboardInterrupt) as info:
        allocation_mode_study(M8, **RDN_KW)
    part = info.value.partial
    assert part.attrs["interrupted"].startswith("2 of 3 points (pattern, groups) finished")
    assert list(part.refused.values.reshape(-1)) == ["", "", NOT_COMPUTED]
    for v in ("rdn_time_bg", "tdn_minimal_time_bg", "tdn_oblivious_time_bg", "gain_oblivious", "rdn_hops"):
        a, b = part[v].transpose("pattern", "groups", ...).values, rdn_full[v].transpose("pattern", "groups",
                                                                                           ...).values
        np.testing.assert_array_equal(a[:, :2], b[:, :2], err_msg=v)
        assert np.isfinite(b[:, 2]).all() and np.isnan(a[:, 2]).all(), v
    text = R.format_study(part)
    assert f"1 of the 3 points, the last in the order pattern then groups: {NOT_COMPUTED}" in text


def test_rdn_interrupted_before_a_point_finished_has_nothing_to_keep(monkeypatch):
    _stop_at(monkeypatch, R, "_tdn_point", 1)
    with pytest.raises(KeyboardInterrupt) as info:
        allocation_mode_study(M8, **RDN_KW)
    assert not hasattr(info.value, "partial")


def test_rdn_command_writes_the_partial_study_at_a_real_sigterm(monkeypatch, tmp_path, capsys):
    """A SIGTERM sent to this process in the second point: ``evaluator study rdn`` (through the command line's
    own handling: SIGTERM becomes the study's interrupt) writes the first point's dataset and plot, says the
    speedup table is not written, and exits 143."""
    from evaluator.cli import main

    before = signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a terminal (xdist's workers ignore SIGINT)
    try:
        _stop_at(monkeypatch, R, "_tdn_point", 3, how=lambda: os.kill(os.getpid(), signal.SIGTERM))
        out = tmp_path / "study.nc"
        rc = main(["study", "rdn", "--machine", "2,4,2,8", "--groups", "2,4,8", "--patterns", "stencil",
                   "--seeds", "2", "--bounds", "none", "--adaptive", "none", "--baseline", "oblivious",
                   "--out", str(out), "--speedup-out", str(tmp_path / "speedup.nc")])
    finally:
        signal.signal(signal.SIGINT, before)
    got = capsys.readouterr()
    assert rc == 128 + signal.SIGTERM
    assert "study interrupted after" in got.out and "1 of 3 points (pattern, groups) finished" in got.out
    assert f"speedup table not written ({tmp_path / 'speedup.nc'}): the study is partial" in got.out
    assert not (tmp_path / "speedup.nc").exists()
    assert out.with_suffix(".png").exists()
    with xr.open_dataset(out) as ds:
        assert list(ds.refused.values.reshape(-1)) == ["", NOT_COMPUTED, NOT_COMPUTED]
        assert np.isfinite(ds.rdn_time_bg.values[0, 0]) and np.isnan(ds.rdn_time_bg.values[0, 1:]).all()
    assert "evaluator study: interrupted (SIGTERM)" in got.err


def test_buyer_keeps_what_finished_and_ranks_nothing_it_did_not_finish(monkeypatch, buyer_full):
    """Interrupted in the 9th evaluation: the cells finished equal the full run's; a (network, workload) with a
    routing not computed has no best routing (the best of the others would be one-sided); the report says so."""
    _stop_at(monkeypatch, B, "evaluate_point", 9)
    with pytest.raises(KeyboardInterrupt) as info:
        B.buyer_study([TINY], n_seeds=2, workloads=("permutation", "allreduce_8B"))
    part = info.value.partial
    left = part["refused"].values == NOT_COMPUTED
    assert left.any() and (~left & (part["refused"].values == "")).any()
    kept = ~left
    a, b = part["time"].values, buyer_full["time"].values
    np.testing.assert_array_equal(a[kept], b[kept])
    assert np.isnan(a[left]).all() and np.isfinite(b[left]).any()  # (some cells the full run refuses: NaN there too)
    rows = B.best_table(part)
    for r in rows:
        routings = [B.ALL_ROUTINGS.index(x) for x in B.ROUTINGS[r["network"]]]
        j, w = B.NETWORKS.index(r["network"]), list(part["workload"].values).index(r["workload"])
        if left[0, j, routings, w].any():
            assert r.get("not_computed") and r["best"] == () and np.isnan(r["time"])
        else:
            assert r["best"] and not r.get("not_computed")
    text = B.format_study(part)
    assert "not computed NaN" in text and f"interrupted: {part.attrs['interrupted']}" in text
    assert part.attrs["interrupted"].endswith(f"NaN, refused '{NOT_COMPUTED}'")


def test_buyer_command_writes_what_finished_at_ctrl_c(monkeypatch, tmp_path, capsys):
    """``evaluator study buyer --equal cost,power`` stopped by Ctrl-C in its first study: that study's partial
    dataset and plot are written, the second is said not to have started, exit 130."""
    from evaluator.cli import main

    _stop_at(monkeypatch, B, "evaluate_point", 5)
    rc = main(["study", "buyer", "--nodes", str(TINY), "--seeds", "2", "--workloads", "permutation",
               "--equal", "cost,power", "--out", str(tmp_path)])
    got = capsys.readouterr()
    assert rc == 130
    assert [p.suffix for p in sorted(tmp_path.glob("buyer-cost-*"))] == [".nc", ".png"]
    assert not list(tmp_path.glob("buyer-power-*"))
    assert "study interrupted (equal cost): what finished is written above; equal power not started" in got.err
    with xr.open_dataset(next(tmp_path.glob("buyer-cost-*.nc"))) as ds:
        assert (ds["refused"].values == NOT_COMPUTED).any() and "interrupted" in ds.attrs


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # the swallowed one, printed
def test_a_signal_a_gc_callback_swallowed_still_stops_the_study(monkeypatch, tmp_path, capsys):
    """A SIGTERM whose exception a garbage-collector callback dropped (delivered while one runs: tests/
    test_signals_swallowed.py) stops the study at its next point, which keeps what finished: the rdn command
    writes the points before and exits 143 instead of running to its end."""
    from evaluator.cli import main
    from tests.test_signals_swallowed import _swallowed

    before = signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        _stop_at(monkeypatch, R, "_tdn_point", 3, how=lambda: _swallowed(signal.SIGTERM))
        out = tmp_path / "study.nc"
        rc = main(["study", "rdn", "--machine", "2,4,2,8", "--groups", "2,4,8", "--patterns", "stencil",
                   "--seeds", "2", "--bounds", "none", "--adaptive", "none", "--baseline", "oblivious",
                   "--out", str(out)])
    finally:
        signal.signal(signal.SIGINT, before)
    assert rc == 128 + signal.SIGTERM, capsys.readouterr()
    with xr.open_dataset(out) as ds:  # the second point, in which the signal came, finished; the third did not
        assert list(ds.refused.values.reshape(-1)) == ["", "", NOT_COMPUTED]


@pytest.mark.parametrize("study", ["rdn", "buyer"])
def test_seeds_beyond_the_limit_are_refused_before_anything_is_allocated(study, capsys):
    """--seeds 10^9 tried to allocate arrays of 67-179 GiB: refused as bad input, naming the option and the range."""
    from evaluator.cli import main

    args = ["--machine", "2,4,2,8"] if study == "rdn" else ["--nodes", "32", "--workloads", "permutation"]
    assert main(["study", study, *args, "--seeds", "1000000000"]) == 2
    assert "--seeds = '1000000000' is invalid: allowed is an integer in [1, 10,000]" in capsys.readouterr().err
    with pytest.raises(ConfigError, match="n_seeds"):
        (allocation_mode_study(M8, n_seeds=10**9) if study == "rdn" else B.buyer_study([TINY], n_seeds=10**9))
