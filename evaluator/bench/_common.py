"""What the bench's scenarios share (:mod:`evaluator.bench.run`): timing (medians, interleaved A/B calls),
peak memory, the device, the per-flow baseline's timing, and the worker processes (launched, collected)."""

from __future__ import annotations

import json
import math
import os
import resource
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

BLOCK_S = 0.1  # interleaved timing: each side is called for this long (at least once) before the other's turn


# --------------------------------------------------------------------------------------
# Helpers (worker side)
# --------------------------------------------------------------------------------------


def _peak_mb() -> float:
    """Peak resident set size of this process in decimal MB (10^6 bytes; Linux reports KiB). Before 2026-12-07 the
    bench recorded MiB (2^20 bytes) here, 4.9 % below MB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e6


def _device() -> dict:
    import jax

    d = jax.devices()[0]
    out = {"platform": d.platform, "kind": d.device_kind, "cpus": len(os.sched_getaffinity(0))}
    try:
        stats = d.memory_stats() or {}
        if "peak_bytes_in_use" in stats:
            out["device_peak_mb"] = stats["peak_bytes_in_use"] / 2**20
    except Exception:  # pragma: no cover - backend without memory stats
        pass
    return out


def _device_label(dev: dict) -> str:
    if dev["platform"] == "cpu":
        return f"cpu x{dev['cpus']}"
    return f"{dev['platform']} {dev['kind']}"


def _timed(fn, repeat: int = 3, min_total: float = 0.0, max_repeat: int = 500) -> float:
    """Median wall time of ``fn()`` (seconds) over at least ``repeat`` calls, more until they took ``min_total``
    seconds in all (at most ``max_repeat``): calls of a few ms on a VM vary by 2x from one to the next."""
    return _interleaved([fn], repeat, min_total, block=0.0, max_rounds=max_repeat)[0]


def _interleaved(fns, repeat: int, min_total: float, block: float = BLOCK_S, max_rounds: int = 500) -> list[float]:
    """Median wall time of each of ``fns`` (seconds), over rounds in which each is called in turn for a block of
    ``block`` seconds (at least once): at least ``repeat`` rounds, more until they took ``min_total`` seconds in
    all (at most ``max_rounds``).

    Both sides of a ratio are timed over the same stretch of time, so a slow spell of the machine (a VM's
    neighbours) slows both: timed one after the other, Mira's 5D stencil read 4.9x to 11x SciPy from run to run.
    Blocks rather than single calls in turn: each side then runs with its own data in the caches, as it would
    on its own (single calls in turn slowed the evaluator's DF(8,16,8) stencil from 2.5 to 3.7 ms).
    """
    times: list[list[float]] = [[] for _ in fns]
    start = time.perf_counter()
    rounds = 0
    while rounds < repeat or (time.perf_counter() - start < min_total and rounds < max_rounds):
        for fn, t in zip(fns, times):
            calls, spent = 0, 0.0
            while not calls or spent < block:
                t0 = time.perf_counter()
                fn()
                t.append(time.perf_counter() - t0)
                calls, spent = calls + 1, spent + t[-1]
        rounds += 1
    return [float(np.median(t)) for t in times]


def _rel_dev(fast: np.ndarray, ref: np.ndarray) -> float:
    """Largest |fast - ref| over links, relative to the largest load."""
    scale = max(float(np.abs(ref).max(initial=0.0)), 1e-300)
    return float(np.abs(np.asarray(fast) - ref).max(initial=0.0) / scale)


def _sample_flows(traffic, k: int, rng) -> list[tuple[int, int, float]]:
    """``k`` random flows of a traffic (:meth:`~evaluator.traffic.AbstractTraffic.sample_flows`; for timing the
    per-flow walk)."""
    f = traffic.sample_flows(k, rng)
    return list(zip(f.src.tolist(), f.dst.tolist(), f.nbytes.tolist()))


def _baseline_seconds(topology, routing, traffic, placement, k: int, seed: int = 0) -> tuple[float, int]:
    """Per-flow walk time for the whole traffic, extrapolated from ``k`` sampled flows."""
    from .baseline import PerFlowBaseline

    base = PerFlowBaseline(topology, routing)
    flows = _sample_flows(traffic, k, np.random.default_rng(seed))
    tn = placement.task_node.tolist()
    t0 = time.perf_counter()
    base.flow_loads(flows, tn)
    dt = time.perf_counter() - t0
    return dt / len(flows) * traffic.n_flows, len(flows)


def _launch(name: str, quick: bool, cpus: list[int] | None, extra: list[str] = ()) -> tuple[subprocess.Popen, Path]:
    fd, out = tempfile.mkstemp(prefix=f"bench-{name}-", suffix=".json")
    os.close(fd)
    cmd = [sys.executable, "-m", "evaluator.bench", "--worker", name, "--out", out, *extra]
    if quick:
        cmd.append("--quick")
    pin = (lambda: os.sched_setaffinity(0, set(cpus))) if cpus else None
    # the workers time compilation: no persistent compilation cache of ours (`import evaluator` turns it on;
    # a cache the user gave JAX through its own variables is left as it is, as before)
    env = dict(os.environ, EVALUATOR_COMPILATION_CACHE="0")
    try:
        return subprocess.Popen(cmd, preexec_fn=pin, env=env), Path(out)
    except BaseException:  # (the worker did not start: no result file left behind)
        Path(out).unlink(missing_ok=True)
        raise


TIMEOUT_VARIABLE = "EVALUATOR_BENCH_TIMEOUT_S"
"""The environment variable that sets :func:`child_timeout` (seconds)."""

CHILD_TIMEOUT_S = 4 * 3600.0
"""Default wall-time limit of each process the bench starts and waits for (a worker, the start-up probe, an
``evaluator`` command): four hours, where the longest, the mapping scenario's worker (24 searches of 60 s beside
Scotch, KaHIP and METIS), took about 50 minutes on a quiet day (the whole bench 60 min 29 s, 2026-12-05) and a
slow day runs this machine up to 1.8x slower."""


def child_timeout() -> float:
    """Seconds the bench waits for each process it starts: ``$EVALUATOR_BENCH_TIMEOUT_S``, else
    :data:`CHILD_TIMEOUT_S`; a :class:`~evaluator.errors.ConfigError` for a value that is not a finite number > 0."""
    raw = os.environ.get(TIMEOUT_VARIABLE, "").strip()
    if not raw:
        return CHILD_TIMEOUT_S
    try:
        t = float(raw)
    except ValueError:
        t = math.nan
    if not (math.isfinite(t) and t > 0):
        from ..errors import ConfigError

        raise ConfigError(TIMEOUT_VARIABLE, raw, "a finite number of seconds > 0",
                          f"Unset it for the default ({CHILD_TIMEOUT_S:g} s).")
    return t


def timed_out(what: str, cmd, timeout: float) -> RuntimeError:
    """The error of a child process of the bench (``what``, run as ``cmd``) stopped after ``timeout`` seconds."""
    return RuntimeError(f"{what} ran past {timeout:g} s and was stopped (command: {shlex.join(map(str, cmd))}). "
                        f"It hung or is much slower than expected: run the command alone to see where it waits, "
                        f"or allow more time with {TIMEOUT_VARIABLE}=SECONDS (now {timeout:g}).")


def run_child(cmd: list[str], env: dict, what: str, shown=None) -> subprocess.CompletedProcess:
    """Run ``cmd`` (a Python child of the bench: the start-up probe, an ``evaluator`` command) with ``env``, its
    output captured, waited for at most :func:`child_timeout` seconds, in its own process group
    (:func:`run_in_group`): past them, or on an interrupt (Ctrl-C), the whole group is stopped (``evaluator sweep``
    starts a local Ray with processes of its own; stopping the command alone left them running) and, past them, a
    :class:`RuntimeError` names it (``what``) and its command (``shown``, by default ``cmd``)."""
    timeout = child_timeout()
    rc, stdout, stderr = run_in_group(cmd, timeout, env=env)
    if rc is None:
        raise timed_out(what, cmd if shown is None else shown, timeout)
    return subprocess.CompletedProcess(cmd, rc, stdout, stderr)


def run_in_group(argv: list[str], timeout: float, cwd=None, env=None) -> tuple[int | None, str, str]:
    """Run the program ``argv`` (in ``cwd``, with the environment ``env``; by default this process's) in its own
    process group; ``(exit status, stdout, stderr)``, the status ``None`` where it ran past ``timeout`` seconds.
    Past it, or on an interrupt (Ctrl-C), the whole group is killed: an outside program is often a script whose
    children do the work (``smpirun``, ``smpicc``, a wrapper of a mapper), and killing the script alone left them
    running, for ever where they hung. What it wrote is then collected for at most a few seconds more (a child
    that left the group may hold the pipes open)."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=cwd, env=env,
                            start_new_session=True)
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
        return proc.returncode, stdout, stderr
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        try:
            stdout, stderr = proc.communicate(timeout=5.0)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            stdout, stderr = "", ""
        return None, stdout or "", stderr or ""
    except BaseException:
        _kill_group(proc)
        proc.wait()
        raise


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _collect(proc: subprocess.Popen, out: Path, name: str, timeout: float | None = None) -> dict:
    """The JSON worker ``name`` (``proc``) wrote to ``out``, waited for at most ``timeout`` seconds
    (:func:`child_timeout` by default; past it the worker is killed and a :class:`RuntimeError` says so). The
    file ``out`` is removed whatever happens (read, the worker failed or ran past the time, an interrupt), and a
    worker still running on the way out (an interrupt) is killed."""
    timeout = child_timeout() if timeout is None else timeout
    try:
        try:
            rc = proc.wait(timeout)
        except subprocess.TimeoutExpired:
            _stop(proc)
            raise timed_out(f"bench worker {name!r}", proc.args, timeout) from None
        if rc != 0:
            raise RuntimeError(f"bench worker {name!r} failed with exit status {rc}")
        return json.loads(out.read_text())
    finally:
        _stop(proc)
        out.unlink(missing_ok=True)


def _stop(proc: subprocess.Popen) -> None:
    """Kill ``proc`` (a worker) if it still runs, and wait for it."""
    if proc.poll() is None:
        proc.kill()
        proc.wait()
