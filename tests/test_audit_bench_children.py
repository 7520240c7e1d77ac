"""Audit of the bench's children and of the duration ladder's unit boundaries.

* :func:`evaluator.bench._common.run_child` (the start-up probe, the end-to-end ``evaluator`` commands) stops the
  whole process group it started, at its limit and on an interrupt: a child that started a grandchild (as
  ``evaluator sweep`` starts a local Ray) left it running before.
* A scenario worker's temporary JSON result file is removed on every path (read, failed, past the limit, an
  interrupt, a result that is not JSON), the two-core scenario-1 workers' files and barrier folder too.
* Durations are shown in the largest unit in which they do not show as a whole unit of the next one: 3599.7 s was
  "3600 s" (hours only from 1 h on) while 999.96 us was already "1.000 ms".

Every expectation comes from the operating system (is the process there), the file system, or a reference written
here with exact decimal arithmetic, never from the code under test.
"""

from __future__ import annotations

import importlib
import math
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from decimal import ROUND_HALF_EVEN, Decimal
from pathlib import Path

import numpy as np
import pytest

from evaluator.bench import _common, _small, startup
from evaluator.display import format_value, shared_unit

bench_run = importlib.import_module("evaluator.bench.run")  # (the package's ``run`` is the function)

LIMIT_S = "1.5"

# A child that starts a sleeping grandchild (its own child: the same process group), writes "child grandchild" pids
# to the file named by its first argument, then sleeps itself.
_SPAWNER = ("import os, subprocess, sys, time\n"
            "g = subprocess.Popen(['sleep', '60'])\n"
            "tmp = sys.argv[1] + '.tmp'\n"
            "open(tmp, 'w').write(f'{os.getpid()} {g.pid}')\n"
            "os.replace(tmp, sys.argv[1])\n"
            "time.sleep(60)\n")


# ----------------------------------------------------------------------------------------------- helpers
def _running(pid: int) -> bool:
    """Whether ``pid`` is a process that still runs (a zombie waiting for init to reap it has stopped)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, IndexError):
        return False


def _gone(pid: int, wait_s: float = 8.0) -> bool:
    """Whether ``pid`` has gone (``os.kill(pid, 0)`` raises) within ``wait_s`` seconds; a zombie left to init
    at the end counts as gone (it no longer runs; init reaps it within a second or two here)."""
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return not _running(pid)


def _pids(path: Path) -> list[int]:
    return [int(p) for p in path.read_text().split()] if path.exists() else []


def _cleanup(path: Path) -> None:
    """Kill what the original code left running (the test's own children only: their pids from ``path``)."""
    for pid in _pids(path):
        if _running(pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def _interrupt_when(path: Path):
    """A thread that raises KeyboardInterrupt in the main thread (through SIGUSR1) once ``path`` exists."""
    def fire() -> None:
        deadline = time.monotonic() + 20
        while not path.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(0.1)
        os.kill(os.getpid(), signal.SIGUSR1)

    return threading.Thread(target=fire, daemon=True)


def _raise_interrupt(signum, frame):
    raise KeyboardInterrupt


# --------------------------------------------------------------------------- 1. run_child stops the whole group
def _via_run_child(pidfile: Path, tmp_path: Path):
    cmd = [sys.executable, "-c", _SPAWNER, str(pidfile)]
    return lambda: _common.run_child(cmd, dict(os.environ), "the test's spawner"), ["the test's spawner", str(pidfile)]


def _via_run_cli(pidfile: Path, tmp_path: Path, monkeypatch):
    monkeypatch.setattr(bench_run, "_DRIVER", _SPAWNER)  # the driver gets the command's arguments: argv[1] = pidfile
    return (lambda: bench_run._run_cli([str(pidfile), "sweep=readme"], dict(os.environ), tmp_path),
            [f"`evaluator {pidfile}` (a bench scenario)", f"evaluator {pidfile} sweep=readme"])


def _via_probe(pidfile: Path, tmp_path: Path, monkeypatch):
    monkeypatch.setattr(startup, "PROBE", _SPAWNER.replace("sys.argv[1]", repr(str(pidfile))))
    return lambda: startup._probe(dict(os.environ)), ["start-up probe", "<evaluator.bench.startup.PROBE>"]


@pytest.mark.parametrize("entry", ["run_child", "run_cli", "probe"])
def test_child_and_grandchild_are_stopped_at_the_limit(tmp_path, monkeypatch, entry):
    monkeypatch.setenv("EVALUATOR_BENCH_TIMEOUT_S", LIMIT_S)
    pidfile = tmp_path / "pids"
    call, named = (_via_run_child(pidfile, tmp_path) if entry == "run_child" else
                   _via_run_cli(pidfile, tmp_path, monkeypatch) if entry == "run_cli" else
                   _via_probe(pidfile, tmp_path, monkeypatch))
    try:
        t0 = time.monotonic()
        with pytest.raises(RuntimeError) as e:
            call()
        assert time.monotonic() - t0 < 12, "stopped long after its limit"
        msg = str(e.value)
        assert f"ran past {LIMIT_S} s" in msg and "EVALUATOR_BENCH_TIMEOUT_S" in msg, msg
        assert all(n in msg for n in named), (named, msg)  # the process and its command
        pids = _pids(pidfile)
        assert len(pids) == 2, "the child never wrote its pids"
        assert _gone(pids[0]), "the child still runs"
        assert _gone(pids[1]), "the grandchild still runs past the limit"
    finally:
        _cleanup(pidfile)


def test_child_and_grandchild_are_stopped_on_an_interrupt(tmp_path, monkeypatch):
    monkeypatch.setenv("EVALUATOR_BENCH_TIMEOUT_S", "60")
    pidfile = tmp_path / "pids"
    old = signal.signal(signal.SIGUSR1, _raise_interrupt)
    try:
        _interrupt_when(pidfile).start()
        with pytest.raises(KeyboardInterrupt):
            _common.run_child([sys.executable, "-c", _SPAWNER, str(pidfile)], dict(os.environ), "the spawner")
        pids = _pids(pidfile)
        assert len(pids) == 2
        assert _gone(pids[0]), "the child still runs after Ctrl-C"
        assert _gone(pids[1]), "the grandchild still runs after Ctrl-C"
    finally:
        signal.signal(signal.SIGUSR1, old)
        _cleanup(pidfile)


def test_run_child_result_env_and_output(monkeypatch):
    monkeypatch.setenv("EVALUATOR_BENCH_TIMEOUT_S", "20")
    code = ("import os, sys\n"
            "print(os.environ['AUDIT_MARK'])\n"
            "print('to stderr', file=sys.stderr)\n"
            "sys.exit(3)\n")
    proc = _common.run_child([sys.executable, "-c", code], dict(os.environ, AUDIT_MARK="m-42"), "a child")
    assert (proc.returncode, proc.stdout, proc.stderr) == (3, "m-42\n", "to stderr\n")


# ------------------------------------------------------------- 2. a worker's temporary JSON result file goes away
_WORKER = ("import sys, time\n"
           "role, out = sys.argv[1], sys.argv[2]\n"
           "if role == 'ok': open(out, 'w').write('{\"device\": {\"platform\": \"cpu\"}, \"v\": 5}')\n"
           "if role == 'fail': open(out, 'w').write('{\"partial'); sys.exit(3)\n"
           "if role == 'notjson': open(out, 'w').write('{\"partial')\n"
           "if role == 'hang': time.sleep(60)\n")


@pytest.fixture
def fake_workers(tmp_path, monkeypatch):
    """``_launch`` starts a tiny Python worker instead of ``python -m evaluator.bench --worker`` (its role from
    ``roles``: 'ok', 'fail', 'notjson', 'hang'; in launch order, the last repeated), temporary files in
    ``tmp_path / 'tmp'``."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    real = subprocess.Popen
    roles: list[str] = []
    started: list[subprocess.Popen] = []

    def popen(cmd, preexec_fn=None, env=None, **kw):
        role = roles.pop(0) if len(roles) > 1 else roles[0]
        started.append(real([sys.executable, "-c", _WORKER, role, cmd[cmd.index("--out") + 1]], env=env, **kw))
        return started[-1]

    monkeypatch.setattr(_common.subprocess, "Popen", popen)
    yield tmp, roles, started
    for p in started:
        if p.poll() is None:
            p.kill()
            p.wait()


def test_worker_result_read_and_removed(fake_workers, monkeypatch):
    tmp, roles, _ = fake_workers
    monkeypatch.setenv("EVALUATOR_BENCH_TIMEOUT_S", "20")
    roles.append("ok")
    data = _common._collect(*_common._launch("scaling", True, None), "scaling")
    assert data == {"device": {"platform": "cpu"}, "v": 5}
    assert list(tmp.iterdir()) == []


@pytest.mark.parametrize("role,error", [("fail", "bench worker 'scaling' failed with exit status 3"),
                                        ("notjson", "Unterminated string"),
                                        ("hang", "bench worker 'scaling' ran past 0.5 s")])
def test_failed_worker_leaves_no_result_file(fake_workers, monkeypatch, role, error):
    tmp, roles, started = fake_workers
    monkeypatch.setenv("EVALUATOR_BENCH_TIMEOUT_S", "0.5" if role == "hang" else "20")
    roles.append(role)
    with pytest.raises(Exception) as e:
        bench_run._scaling(True, lambda m: None, {}, tmp)  # the scaling scenario: one worker
    assert error in str(e.value), str(e.value)  # the worker's error is not hidden
    assert list(tmp.iterdir()) == [], "a temporary result file was left behind"
    assert all(p.poll() is not None for p in started)


def test_interrupted_worker_leaves_no_result_file(fake_workers, monkeypatch):
    tmp, roles, started = fake_workers
    monkeypatch.setenv("EVALUATOR_BENCH_TIMEOUT_S", "60")
    roles.append("hang")
    flag = tmp.parent / "started"
    old = signal.signal(signal.SIGUSR1, _raise_interrupt)
    try:
        proc, out = _common._launch("scaling", True, None)
        flag.touch()
        _interrupt_when(flag).start()
        with pytest.raises(KeyboardInterrupt):
            _common._collect(proc, out, "scaling")
    finally:
        signal.signal(signal.SIGUSR1, old)
    assert list(tmp.iterdir()) == [], "the result file was left behind after Ctrl-C"
    assert started[0].poll() is not None, "the worker still runs after Ctrl-C"


def test_two_core_workers_leave_nothing_when_one_fails(fake_workers, monkeypatch):
    """Scenario 1's two-core stage: the one-core worker succeeds, then of the two workers at the barrier part 0
    fails and part 1 waits (for ever): both stopped, neither's result file nor the barrier folder left."""
    tmp, roles, started = fake_workers
    monkeypatch.setenv("EVALUATOR_BENCH_TIMEOUT_S", "20")
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
    roles.extend(["ok", "fail", "hang"])
    with pytest.raises(RuntimeError, match="bench worker 'small' failed") as e:
        _small._run_small(True, lambda m: None, {})
    assert len(started) == 3
    assert list(tmp.iterdir()) == [], [p.name for p in tmp.iterdir()]
    assert all(p.poll() is not None for p in started), "a two-core worker still runs"
    assert "exit status 3" in str(e.value)  # which status (it said only "failed")


# --------------------------------------------------------------------- 3. the duration ladder's unit boundaries
SIG = 4
LADDER = [("h", Decimal(3600)), ("s", Decimal(1)), ("ms", Decimal("1e-3")), ("us", Decimal("1e-6")),
          ("ns", Decimal("1e-9"))]
"""Display units of seconds, largest first, their sizes exact."""


def _round_sig(d: Decimal, sig: int = SIG) -> Decimal:
    if d == 0:
        return d
    return d.quantize(Decimal(1).scaleb(d.adjusted() - sig + 1), rounding=ROUND_HALF_EVEN)


def ref_unit(x: float) -> int:
    """Index in :data:`LADDER` of the unit ``x`` seconds is shown in: the largest in which its magnitude, rounded
    to SIG digits, is at least 1, or in which, rounded to SIG digits in the next smaller unit, it reaches this
    unit's size (it would roll over there: 3599.7 s rounds to 3600 s); the smallest unit below all of them."""
    d = abs(Decimal(x))
    for i, (_, f) in enumerate(LADDER):
        if _round_sig(d / f) >= 1:
            return i
        if i + 1 < len(LADDER) and _round_sig(d / LADDER[i + 1][1]) >= f / LADDER[i + 1][1]:
            return i
    return len(LADDER) - 1


def ref_text(x: float) -> str:
    """``x`` seconds as shown: SIG significant digits in :func:`ref_unit`'s unit (plain notation: the values here
    are from 10^-3 to below 10^9 in their unit)."""
    i = ref_unit(x)
    unit, f = LADDER[i]
    v = Decimal(x) / f
    decimals = max(0, SIG - 1 - _round_sig(v).adjusted())
    q = v.quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_EVEN)
    if decimals and abs(q) >= Decimal(10) ** (SIG - decimals):  # 9.9996 -> 10.00, not 10.000
        decimals -= 1
        q = v.quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_EVEN)
    return f"{q:f} {unit}"


def _near_boundaries() -> list[float]:
    """Values within +-3e-4 (relative) of each unit's size, on a grid kept off rounding ties (an offset of 0.37
    steps), both signs; and the s/h band by hand."""
    rel = (np.arange(-300, 301) + 0.37) * 1e-6
    xs = [float(f) * (1 + r) for _, f in LADDER for r in rel]
    xs += [3599.4, 3599.49, 3599.5, 3599.51, 3599.64, 3599.7, 3599.8, 3599.81, 3599.83, 3599.9, 3600.0, 3601.7]
    return xs + [-x for x in xs]


def test_duration_ladder_matches_the_reference_at_every_boundary():
    bad = [(x, format_value(x, "s"), ref_text(x)) for x in _near_boundaries() if format_value(x, "s") != ref_text(x)]
    assert not bad, bad[:6]


@pytest.mark.parametrize("x,text", [
    (3599.4, "3599 s"), (3599.5, "0.9999 h"),  # 3599.5 rounds (half even) to 3600 s: rolled over
    (3599.7, "0.9999 h"), (-3599.7, "-0.9999 h"),  # was "3600 s": a number that should have rolled over
    (3599.83, "1.000 h"), (999.96e-6, "1.000 ms"), (999.94e-6, "999.9 us"), (0.99996, "1.000 s"),
    (999.96e-9, "1.000 us"), (0.5e-9, "0.5000 ns"), (7.2e6, "2000 h"),
])
def test_duration_boundaries_by_hand(x, text):
    assert ref_text(x) == text  # the reference says what the rule says
    assert format_value(x, "s") == text


def test_no_duration_shows_a_whole_unit_of_the_next():
    """The invariant the rule keeps: below the largest unit no shown magnitude reaches the next unit's size (1000,
    or 3600 s for an hour), and every value shown is within half its last digit of the value."""
    rng = np.random.default_rng(5)
    xs = _near_boundaries() + list(10 ** rng.uniform(-8.5, 4.5, 400))
    for x in xs:
        text, unit = format_value(x, "s").rsplit(" ", 1)
        i = [u for u, _ in LADDER].index(unit)
        if i > 0:
            assert abs(Decimal(text)) < LADDER[i - 1][1] / LADDER[i][1], (x, text, unit)
        decimals = len(text.split(".")[1]) if "." in text else 0
        err = abs(Decimal(text) * LADDER[i][1] - Decimal(x))
        assert err <= Decimal(5).scaleb(-decimals - 1) * LADDER[i][1], (x, text, unit)


def test_shared_unit_of_columns_near_an_hour():
    # one column: its median 3599.7 s -> hours; two columns whose geometric mean is 3599.7 s -> hours
    assert shared_unit("s", [[3599.7]]) == ("h", 3600.0)
    assert shared_unit("s", [[3599.7, 1.0, 7200.0]]) == ("h", 3600.0)
    a = 1799.85
    assert math.isclose(math.sqrt(a * 7199.4), 3599.7)
    assert shared_unit("s", [[a], [7199.4]]) == ("h", 3600.0)
    assert shared_unit("s", [[3599.4]]) == ("s", 1.0)
