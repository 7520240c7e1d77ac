"""Hangs audit: no call of the product waits for ever or spins on an outside program that hangs, a child process
that never ends, a file that never opens or an adversarial input.

Each test runs the call under a hard wall-clock limit of its own (a thread joined with a timeout: a call that does
not return within it fails the test instead of hanging the run), against fake programs written to ``tmp_path``
(shell scripts that sleep, exit non-zero or print garbage). Sleeps in the fakes are short enough (at most 20 s) that
a process left behind by a failing test ends on its own."""

from __future__ import annotations

import importlib
import math
import os
import signal
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from evaluator.bench import _common, outside, scotch, smpi
from evaluator.bench import startup
from evaluator.errors import ConfigError

bench_run = importlib.import_module("evaluator.bench.run")  # (evaluator.bench.run is also its run function)

LIMIT_S = 6.0  # every call below must come back (return or raise) within this many seconds


def _within(fn, limit: float = LIMIT_S):
    """``fn()``'s result or exception, or a test failure when it has not come back after ``limit`` seconds."""
    box: dict = {}

    def target():
        try:
            box["value"] = fn()
        except BaseException as exc:  # re-raised below, on the test's thread
            box["exc"] = exc

    t = threading.Thread(target=target, daemon=True)
    t0 = time.monotonic()
    t.start()
    t.join(limit)
    if t.is_alive():
        pytest.fail(f"the call did not return within {limit} s (it waits for ever or spins)")
    box["elapsed"] = time.monotonic() - t0
    return box


def _script(path: Path, body: str) -> Path:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie counts as ended)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _ended(pid: int, within: float = 3.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not _alive(pid):
            return True
        time.sleep(0.05)
    return False


def _kill(pid: int) -> None:
    """End a fake's leftover child (a process these tests started, by its id)."""
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass


def _sleeper_with_child(tmp_path: Path, name: str) -> tuple[Path, Path]:
    """A script that starts ``sleep 20`` as its child (its pid written to a file), then waits for it: killing the
    script alone leaves the child running."""
    pidfile = tmp_path / f"{name}.child"
    return _script(tmp_path / name, f"sleep 20 &\necho $! > {pidfile}\nwait\n"), pidfile


# --- outside mappers (scotch_gmap, kaffpa): run_tool ----------------------------------------------------------

def test_run_tool_timeout_stops_the_program_and_its_children(tmp_path):
    prog, pidfile = _sleeper_with_child(tmp_path, "scotch_gmap")
    box = _within(lambda: outside.run_tool([str(prog), "-Cd", "a", "b"], "Scotch's", scotch.ScotchError, 0.5))
    try:
        exc = box.get("exc")
        assert isinstance(exc, scotch.ScotchError), box
        assert box["elapsed"] < 4.0
        child = int(pidfile.read_text())
        assert _ended(child), f"the mapper's child {child} still runs after the timeout"
        msg = str(exc)
        assert "scotch_gmap" in msg and str(prog) in msg and "0.5 s" in msg, msg  # (it said "ran past 0 s")
    finally:
        if pidfile.exists():
            _kill(int(pidfile.read_text()))


def test_run_tool_failure_and_missing_program_name_it(tmp_path):
    prog = _script(tmp_path / "kaffpa", "echo 'bad graph file' >&2\nexit 3\n")
    box = _within(lambda: outside.run_tool([str(prog), "g.graph"], "KaHIP's", RuntimeError, 5.0))
    msg = str(box.get("exc"))
    assert isinstance(box.get("exc"), RuntimeError) and "exit 3" in msg and "bad graph file" in msg
    assert "kaffpa" in msg and "g.graph" in msg
    box = _within(lambda: outside.run_tool([str(tmp_path / "nonesuch")], "KaHIP's", RuntimeError, 5.0))
    assert isinstance(box.get("exc"), RuntimeError) and "could not be run" in str(box["exc"])
    prog = _script(tmp_path / "ok", "echo mapped\n")
    assert _within(lambda: outside.run_tool([str(prog)], "Scotch's", RuntimeError, 5.0))["value"] == "mapped\n"


@pytest.mark.parametrize("text", ["garbage here\n", "", "2\n0 x\n1 2\n"])
def test_scotch_map_garbage_is_a_scotch_error(tmp_path, text):
    path = tmp_path / "job.map"
    path.write_text(text)
    with pytest.raises(scotch.ScotchError, match="job.map"):
        scotch.read_map(str(path), 2)
    with pytest.raises(scotch.ScotchError, match="missing or not a Scotch mapping file"):
        scotch.read_map(str(tmp_path / "never_written.map"), 2)
    path.write_text("2\n0 7\n1 3\n")  # a good file still reads (reference: the pairs as written)
    assert scotch.read_map(str(path), 2).tolist() == [7, 3]


# --- SMPI: smpicc and smpirun --------------------------------------------------------------------------------

@pytest.fixture
def fake_smpi(tmp_path, monkeypatch):
    """A directory first on PATH for fake ``smpicc`` / ``smpirun``; the compiled program faked."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setattr(smpi, "compile_program", lambda *a, **k: tmp_path / "program")
    return bin_dir


def _run_smpi(timeout=0.5):
    return smpi.run_collectives("<platform version='4.1'/>", [("allreduce", "lr", 2, 64)], 2, timeout=timeout)


def test_smpirun_that_hangs_is_stopped_with_its_children(fake_smpi):
    _script(fake_smpi / "smpicc", "exit 0\n")
    _, pidfile = _sleeper_with_child(fake_smpi, "smpirun")
    box = _within(_run_smpi)
    try:
        exc = box.get("exc")
        assert isinstance(exc, RuntimeError) and "smpirun timed out after 0.5 s" in str(exc), box
        assert _ended(int(pidfile.read_text()))
    finally:
        if pidfile.exists():
            _kill(int(pidfile.read_text()))


@pytest.mark.parametrize("out", ["SMPI_HARNESS_RESULT 0 garbage", "SMPI_HARNESS_RESULT", "SMPI_HARNESS_RESULT 0 nan",
                                 "SMPI_HARNESS_RESULT 5 1e-3", "nothing at all"])
def test_smpirun_garbage_is_a_clear_error(fake_smpi, out):
    _script(fake_smpi / "smpicc", "exit 0\n")
    _script(fake_smpi / "smpirun", f"echo '{out}'\nexit 0\n")
    exc = _within(_run_smpi).get("exc")
    assert isinstance(exc, RuntimeError) and "smpirun failed" in str(exc) and "allreduce" in str(exc), exc


def test_smpirun_good_output_is_read(fake_smpi):
    _script(fake_smpi / "smpicc", "exit 0\n")
    _script(fake_smpi / "smpirun", "echo 'SMPI_HARNESS_RESULT 0 1.5e-05'\nexit 0\n")
    assert _within(_run_smpi)["value"] == [1.5e-05]


def test_smpirun_interrupted_leaves_nothing_running(fake_smpi):
    """Ctrl-C while smpirun runs (in its own process group, which a terminal's SIGINT does not reach): the
    simulation is stopped too."""
    _script(fake_smpi / "smpicc", "exit 0\n")
    _, pidfile = _sleeper_with_child(fake_smpi, "smpirun")
    old = signal.signal(signal.SIGALRM, lambda *a: (_ for _ in ()).throw(KeyboardInterrupt()))
    signal.setitimer(signal.ITIMER_REAL, 1.0)
    try:
        with pytest.raises(KeyboardInterrupt):
            _run_smpi(timeout=10.0)
        assert _ended(int(pidfile.read_text())), "smpirun's child still runs after Ctrl-C"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
        if pidfile.exists():
            _kill(int(pidfile.read_text()))


@pytest.mark.parametrize("bad", [math.inf, math.nan, -1.0, 0.0, None])
def test_smpi_timeouts_are_checked_before_any_work(fake_smpi, monkeypatch, bad):
    monkeypatch.setattr(smpi, "compile_program", lambda *a, **k: pytest.fail("compiled with a bad timeout"))
    with pytest.raises(ConfigError, match="timeout"):
        _run_smpi(timeout=bad)


def test_smpicc_that_hangs_or_fails_is_a_clear_error(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    _script(bin_dir / "smpirun", "exit 0\n")
    _, pidfile = _sleeper_with_child(bin_dir, "smpicc")
    box = _within(lambda: smpi.compile_program(cache_dir=tmp_path / "cache", timeout=0.5))
    try:
        msg = str(box.get("exc"))
        assert isinstance(box.get("exc"), RuntimeError) and "smpicc ran past 0.5 s" in msg and "-O1" in msg, msg
        assert _ended(int(pidfile.read_text()))
    finally:
        if pidfile.exists():
            _kill(int(pidfile.read_text()))
    _script(bin_dir / "smpicc", "echo 'smpicc: cannot find simgrid' >&2\nexit 2\n")
    box = _within(lambda: smpi.compile_program(cache_dir=tmp_path / "cache2", timeout=5.0))
    msg = str(box.get("exc"))
    assert "smpicc failed (exit 2" in msg and "cannot find simgrid" in msg, msg
    with pytest.raises(ConfigError, match="timeout"):
        smpi.compile_program(cache_dir=tmp_path / "cache3", timeout=math.inf)


# --- the bench's child processes (workers, the start-up probe, `evaluator` commands) -------------------------

def _sleeping_python(seconds: int = 20) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", f"import time; time.sleep({seconds})"])


def test_bench_worker_that_hangs_is_killed_and_named(tmp_path, monkeypatch):
    monkeypatch.setenv("EVALUATOR_BENCH_TIMEOUT_S", "0.5")
    proc = _sleeping_python()
    out = tmp_path / "bench-small.json"
    out.write_text("")
    try:
        box = _within(lambda: _common._collect(proc, out, "small"))
        msg = str(box.get("exc"))
        assert isinstance(box.get("exc"), RuntimeError), box
        assert "bench worker 'small'" in msg and "0.5 s" in msg and "EVALUATOR_BENCH_TIMEOUT_S" in msg, msg
        assert proc.poll() is not None, "the worker still runs"
        assert not out.exists()
    finally:
        proc.kill()
        proc.wait()


def test_bench_worker_that_finishes_is_read(tmp_path, monkeypatch):
    monkeypatch.setenv("EVALUATOR_BENCH_TIMEOUT_S", "10")
    out = tmp_path / "w.json"
    proc = subprocess.Popen([sys.executable, "-c", f"open({str(out)!r}, 'w').write('{{\"ok\": 7}}')"])
    assert _within(lambda: _common._collect(proc, out, "small"))["value"] == {"ok": 7}


def test_startup_probe_that_hangs_is_stopped(monkeypatch):
    monkeypatch.setenv("EVALUATOR_BENCH_TIMEOUT_S", "0.5")
    monkeypatch.setattr(startup, "PROBE", "import time; time.sleep(20)")
    box = _within(lambda: startup._probe(dict(os.environ)))
    msg = str(box.get("exc"))
    assert isinstance(box.get("exc"), RuntimeError) and "start-up probe ran past 0.5 s" in msg, box


def test_bench_cli_run_that_hangs_is_stopped(tmp_path, monkeypatch):
    monkeypatch.setenv("EVALUATOR_BENCH_TIMEOUT_S", "0.5")
    monkeypatch.setattr(bench_run, "_DRIVER", "import time; time.sleep(20)")
    box = _within(lambda: bench_run._run_cli(["sweep", "sweep=readme"], dict(os.environ), tmp_path))
    msg = str(box.get("exc"))
    assert isinstance(box.get("exc"), RuntimeError) and "`evaluator sweep`" in msg and "0.5 s" in msg, box
    assert "evaluator sweep sweep=readme" in msg


@pytest.mark.parametrize("raw", ["inf", "nan", "-3", "0", "ten"])
def test_bench_timeout_variable_is_checked_before_any_scenario(tmp_path, monkeypatch, raw):
    monkeypatch.setenv("EVALUATOR_BENCH_TIMEOUT_S", raw)
    with pytest.raises(ConfigError, match="EVALUATOR_BENCH_TIMEOUT_S") as e:
        _common.child_timeout()
    assert repr(raw) in str(e.value)
    monkeypatch.setattr(bench_run, "SCENARIO_TABLE", ())  # nothing would run: the check must come first
    with pytest.raises(ConfigError, match="EVALUATOR_BENCH_TIMEOUT_S"):
        bench_run.run(quick=True, out_dir=tmp_path / "bench", only=["startup"], log=lambda m: None)
    assert not (tmp_path / "bench").exists()


def test_bench_timeout_variable_values(monkeypatch):
    monkeypatch.delenv("EVALUATOR_BENCH_TIMEOUT_S", raising=False)
    assert _common.child_timeout() == 4 * 3600.0  # (the mapping worker took about 50 min on a quiet day)
    monkeypatch.setenv("EVALUATOR_BENCH_TIMEOUT_S", " 2.5 ")
    assert _common.child_timeout() == 2.5


# --- files that never open, inputs that could make a loop spin -----------------------------------------------

def test_is_our_figure_on_a_fifo_returns_at_once(tmp_path):
    from evaluator.io import is_our_figure

    fifo = tmp_path / "figure.png"
    os.mkfifo(fifo)
    try:
        box = _within(lambda: is_our_figure(fifo), limit=3.0)
        assert box.get("value") is False, box
    finally:  # a reader still blocked in open() (the original) is released by a writer
        try:
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            pass


def test_plot_out_on_a_fifo_is_refused_at_once(tmp_path):
    """``evaluator plot --out`` opened an existing ``--out`` itself (its PNG signature) before
    :func:`~evaluator.io.is_our_figure`: a FIFO there made it wait for a writer for ever."""
    from evaluator.cli.plot import _check_png_out

    fifo = tmp_path / "figure.png"
    os.mkfifo(fifo)
    try:
        box = _within(lambda: _check_png_out(str(fifo), tmp_path / "run.nc"), limit=3.0)
        assert isinstance(box.get("exc"), ConfigError) and "--out" in str(box["exc"]), box
    finally:
        try:
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            pass


def test_bench_barrier_stops_when_its_parent_dies_or_past_the_limit(tmp_path, monkeypatch):
    """A two-core scenario-1 worker polled every millisecond for its parent's ``go`` file, for ever where the
    parent had died (or never wrote it)."""
    from evaluator.bench import _small

    pids = iter([os.getppid()] + [1] * 100)  # the parent at the start, then init: re-parented, the parent died
    monkeypatch.setattr(_small.os, "getppid", lambda: next(pids))
    box = _within(lambda: _small._wait_barrier(str(tmp_path), 0, ""), limit=3.0)
    assert isinstance(box.get("exc"), SystemExit) and "no go from its parent" in str(box["exc"]), box
    assert (tmp_path / "ready-0").exists()
    monkeypatch.undo()
    monkeypatch.setenv("EVALUATOR_BENCH_TIMEOUT_S", "0.3")
    box = _within(lambda: _small._wait_barrier(str(tmp_path), 1, "scipy"), limit=3.0)
    assert isinstance(box.get("exc"), SystemExit) and box["elapsed"] >= 0.3, box


def _png(chunks: list[tuple[bytes, bytes]]) -> bytes:
    out = b"\x89PNG\r\n\x1a\n"
    for kind, data in chunks:
        out += len(data).to_bytes(4, "big") + kind + data + b"\0\0\0\0"
    return out


@pytest.mark.parametrize("tail,want", [
    (b"", False),  # the signature alone
    (b"\x00\x00", False),  # a truncated chunk head
    (b"\xff\xff\xff\xfftEXt", False),  # a chunk that claims 4 GiB and ends at once
    (_png([(b"tEXt", b"Software\0evaluator 1.0 (matplotlib)")])[8:], True),
    (_png([(b"tEXt", b"Comment\0x"), (b"IEND", b"")])[8:], False),
])
def test_is_our_figure_on_truncated_pngs(tmp_path, tail, want):
    from evaluator.io import FIGURE_SOFTWARE, is_our_figure

    path = tmp_path / "f.png"
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + tail.replace(b"evaluator", FIGURE_SOFTWARE.encode()))
    assert _within(lambda: is_our_figure(path), limit=3.0)["value"] is want


def _progressive_filling(rates: np.ndarray, cap: np.ndarray) -> np.ndarray:
    """Reference max-min speeds: raise every unfrozen job's speed in small exact steps of the bottleneck level
    (the smallest ``(cap - used) / free_use`` over links with unfrozen users), freezing the jobs on full links."""
    J, L = rates.shape
    speed, frozen = np.ones(J), np.zeros(J, bool)
    for _ in range(J + 1):
        live = [l for l in range(L) if any(rates[j, l] > 0 and not frozen[j] for j in range(J))]
        levels = {l: (cap[l] - sum(speed[j] * rates[j, l] for j in range(J) if frozen[j]))
                  / sum(rates[j, l] for j in range(J) if not frozen[j]) for l in live}
        if not levels or min(levels.values()) >= 1:
            break
        low = max(min(levels.values()), 0.0)
        for l, v in levels.items():
            if v <= low * (1 + 1e-12) + 1e-300:
                for j in range(J):
                    if rates[j, l] > 0 and not frozen[j]:
                        speed[j], frozen[j] = low, True
    return speed


@pytest.mark.parametrize("rates,cap", [
    ([[1.0, 1.0], [1.0, 0.0]], [0.0, 1.0]),  # a zero capacity: both jobs stop
    ([[2.0, 0.0], [1.0, 3.0]], [1.0, 0.0]),
    ([[1.0], [1.0]], [math.inf]),  # an infinite capacity: never a bottleneck
    ([[0.0, 0.0]], [0.0, 0.0]),  # a job that uses nothing
])
def test_max_min_speeds_adversarial_capacities(rates, cap):
    from evaluator.jobs.sharing import max_min_speeds

    r, c = np.array(rates), np.array(cap)
    got = _within(lambda: max_min_speeds(r, c), limit=3.0)["value"]
    np.testing.assert_allclose(got, _progressive_filling(r, c))


@pytest.mark.filterwarnings("ignore:divide by zero")
def test_share_with_a_zero_capacity_link_ends():
    """Jobs on a link of no capacity never finish (inf), and the loop ends; a job beside them finishes at its
    solo time (reference: 2 phases of 1 s and 0.5 s at full speed)."""
    from evaluator.jobs.sharing import share

    loads = [np.array([[1.0, 0.0]]), np.array([[0.0, 1.0], [0.0, 1.0]])]
    times = [np.array([1.0]), np.array([1.0, 0.5])]
    res = _within(lambda: share(loads, times, np.array([0.0, 10.0])), limit=3.0)["value"]
    assert math.isinf(res.finish[0]) and res.finish[1] == pytest.approx(1.5)
