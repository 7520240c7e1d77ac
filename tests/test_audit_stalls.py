"""Audit of the hangs left in the Ray loops: a worker that hangs without dying (a dead one goes through Ray's retries)
held a sweep (``driver._run_locked``) or a workload study (``schedule._compute``) for ever, and the join on the
local Ray's shutdown after the dataset was written was unbounded.

``ray.stall_timeout_s`` (default 3600 s, null: no limit): when no chunk (point) has finished for that long the run
cancels what is outstanding (``ray.cancel(force=True)``), keeps every finished chunk on disk and stops with a
:class:`~evaluator.errors.ClusterError` naming the key, its value and the chunks outstanding; the same command with
the limit lifted resumes and gives the uninterrupted run's numbers.

The sweep is a ring of 8 routers (1-D torus, DOR splitting a half-ring tie), all-to-all between 8 tasks placed one
per node, over 8 message sizes (one chunk each). Its reference is a per-flow walk written here. A fake Ray (tasks
computed in this process; chosen ones never finish) makes most checks deterministic and fast; one test uses a real
local Ray (1 CPU) whose worker sleeps in a hook passed to it by monkeypatching ``driver._remote_chunk``.
"""

from __future__ import annotations

import itertools
import os
import re
import threading
import time

import numpy as np
import pytest
import xarray as xr
import yaml

from evaluator import cli, config
from evaluator.config import RayConfig
from evaluator.errors import ClusterError, ConfigError
from evaluator.query import open_results
from evaluator.sweep import driver, plan_sweep, run_sweep, schedule
from evaluator.sweep.worker import evaluate_chunks
from tests.helpers import strip

K, BW = 8, 2.0e9
BYTES = [1.0e6 * (i + 1) for i in range(8)]
BASE = ["topology=torus", f"topology.dims=[{K}]", "routing=dor", "traffic=all_to_all", "placement=linear",
        f"traffic.n_tasks={K}", f"topology.link_bandwidth={BW:g}", "sweep.chunk_size=1"]
NO_RAY = RayConfig(enabled=False)
KEY = "ray.stall_timeout_s"


def _plan(out):
    return plan_sweep(config.compose_sweep([*BASE, f"sweep.output_dir={out}"], axes={"traffic.bytes": list(BYTES)}))


def ring_time(nbytes: float) -> float:
    """Every flow of the all-to-all walked along the ring (the shorter way; half each way at half a ring): the
    largest of the directed link loads / BW and the node injection and ejection / (2 BW)."""
    load = np.zeros((2, K))  # [direction +1 / -1, link leaving router r]
    inj = np.zeros(K)
    for a, b in itertools.permutations(range(K), 2):
        inj[a] += nbytes
        d = (b - a) % K
        ways = [(+1, d, 1.0)] if 2 * d < K else [(-1, K - d, 1.0)] if 2 * d > K else [(+1, d, .5), (-1, d, .5)]
        for step, hops, w in ways:
            for h in range(hops):
                load[0 if step > 0 else 1, (a + step * h) % K] += w * nbytes
    return max(load.max() / BW, inj.max() / (2 * BW))  # (ejection: the same as injection here)


def _chunk_files(plan) -> set[str]:
    d = plan.out_dir / f".{plan.run_id}.chunks"
    return {p.stem for p in d.glob("*.pkl")} if d.exists() else set()


def _check_numbers(path) -> None:
    ds = open_results(path)
    assert ds.completion_time.dims == ("traffic.bytes",) and ds.sizes["traffic.bytes"] == len(BYTES)
    np.testing.assert_allclose(ds.completion_time.values, [ring_time(b) for b in BYTES], rtol=1e-12)


# ------------------------------------------------------------------ a fake Ray: tasks run here, some never finish

class _Ref:
    def __init__(self, thunk, ready):
        self.thunk, self.ready = thunk, ready


class FakeRay:
    """What the sweep's and the study's loops call of Ray; the first ``n_ok`` tasks finish, the others never."""

    def __init__(self, n_ok: int | None):
        self.n_ok, self.submitted, self.cancelled, self.shut = n_ok, 0, [], False

    def remote(self, **_):
        fake = self

        class _Remote:
            def __init__(self, fn):
                self.fn = fn

            def remote(self, *args):
                ok = fake.n_ok is None or fake.submitted < fake.n_ok
                fake.submitted += 1
                return _Ref(lambda: self.fn(*args), ok)
        return _Remote

    def put(self, obj):
        return obj

    def cluster_resources(self):
        return {"CPU": 1.0}

    def wait(self, refs, num_returns=1, timeout=None):
        ready = [r for r in refs if r.ready][:num_returns]
        if not ready:
            time.sleep(min(timeout or 0.0, 0.05))
        return ready, [r for r in refs if r not in ready]

    def get(self, ref):
        assert ref.ready, "a task that never finishes was read"
        return ref.thunk()

    def cancel(self, ref, force=False):
        self.cancelled.append((ref, force))

    def shutdown(self):
        self.shut = True


def _fake_remote_chunk(token, plan_box, batch):
    return evaluate_chunks(plan_box[0], batch)


@pytest.fixture
def fake(monkeypatch):
    """A FakeRay the sweep gets instead of Ray (``fake.n_ok`` set by the test)."""
    ray = FakeRay(None)
    monkeypatch.setattr(driver, "_ray_initialized", lambda: False)
    monkeypatch.setattr(driver, "_ray_init", lambda cfg, while_starting=None: ray)
    monkeypatch.setattr(driver, "_remote_chunk", _fake_remote_chunk)
    return ray


def _stall_parts(msg: str) -> dict:
    m = re.search(r"The (\d+) chunks? outstanding on Ray \(([^)]*)\)", msg)
    kept = re.search(r"(\d+) of (\d+) chunks are kept in (\S+):", msg)
    assert m and kept, msg
    return {"n": int(m.group(1)), "names": m.group(2).split(", "), "kept": int(kept.group(1)),
            "total": int(kept.group(2))}


def test_a_stalled_sweep_cancels_keeps_its_chunks_and_resumes(tmp_path, fake, monkeypatch):
    plan = _plan(tmp_path)
    ids = [cid for cid, _ in plan.chunks()]
    fake.n_ok = 2  # 8 chunks, 1 CPU: 4 batches of 2 chunks, 1 in flight; the first 2 batches finish, then nothing
    t0 = time.monotonic()
    with pytest.raises(ClusterError) as err:
        run_sweep(plan, RayConfig(num_cpus=1, driver_chunks=False, max_in_flight=1, stall_timeout_s=0.4),
                  progress=False)
    took = time.monotonic() - t0
    msg = str(err.value)
    assert err.value.field == KEY and err.value.value == 0.4, msg
    assert f"{KEY} = 0.4 s" in msg and f"{KEY}=null" in msg and "rerun the same command to resume" in msg, msg
    parts = _stall_parts(msg)
    on_disk = _chunk_files(plan)
    assert parts["kept"] == len(on_disk) == 4 and parts["total"] == 8, msg
    assert parts["n"] == 2 and set(parts["names"]) <= set(ids) and not set(parts["names"]) & on_disk, msg
    assert "(2 more not yet sent)" in msg, msg
    assert len(on_disk | set(parts["names"])) == 6  # (the other 2: the batch not yet sent)
    assert len(fake.cancelled) == 1 and all(force for _, force in fake.cancelled)  # the one outstanding batch
    assert 0.4 <= took < 15, took
    # the same command, the limit lifted: only the 4 missing chunks are computed, the numbers are the walk's
    again = FakeRay(None)
    monkeypatch.setattr(driver, "_ray_init", lambda cfg, while_starting=None: again)
    path = run_sweep(_plan(tmp_path), RayConfig(num_cpus=1, driver_chunks=False, stall_timeout_s=None),
                     progress=False)
    assert again.submitted == 4 and not again.cancelled  # the 4 missing chunks (a batch each), no more
    _check_numbers(path)
    ref = run_sweep(_plan(tmp_path / "ref"), NO_RAY, progress=False)  # an uninterrupted run, in this process
    xr.testing.assert_identical(strip(open_results(path)), strip(open_results(ref)))


def test_a_sweep_that_keeps_finishing_chunks_is_not_stopped(tmp_path, fake, monkeypatch):
    """The limit is on the time since the last finished chunk, not on the whole run."""
    calls = []
    real = _fake_remote_chunk

    def slow(token, box, batch):
        calls.append(1)
        time.sleep(0.15)  # each task 0.15 s: the run (4 tasks) takes longer than the limit, no gap does
        return real(token, box, batch)

    monkeypatch.setattr(driver, "_remote_chunk", slow)
    _check_numbers(run_sweep(_plan(tmp_path), RayConfig(num_cpus=1, driver_chunks=False, stall_timeout_s=0.5),
                             progress=False))
    assert len(calls) == 4 and not fake.cancelled


def test_the_shutdown_join_is_bounded_and_warns_once(tmp_path, fake, monkeypatch):
    """After the dataset is written the local Ray's shutdown was joined without a limit."""
    never = threading.Event()
    monkeypatch.setattr(driver, "SHUTDOWN_WAIT_S", 0.3, raising=False)

    def stuck(ray):
        t = threading.Thread(target=never.wait, args=(20.0,), daemon=True)
        t.start()
        return t

    monkeypatch.setattr(driver, "_stop_ray_in_background", stuck)
    said: list[str] = []
    t0 = time.monotonic()
    try:
        path = run_sweep(_plan(tmp_path), RayConfig(num_cpus=1, driver_chunks=False), progress=False,
                         warn=said.append)
    finally:
        never.set()
    assert time.monotonic() - t0 < 10
    _check_numbers(path)  # the dataset is written
    shut = [s for s in said if "did not shut down" in s]
    assert len(shut) == 1 and "the dataset is written" in shut[0], said


# ------------------------------------------------------------------ bad values: refused before any work

@pytest.mark.parametrize("value", [0, -1, 0.0, "abc", float("nan"), float("inf"), True, "60"])
def test_a_bad_stall_timeout_is_refused_before_any_work(value, tmp_path, monkeypatch):
    monkeypatch.setattr(driver, "_ray_init", lambda *a, **k: pytest.fail("Ray was started"))
    monkeypatch.setattr(driver, "evaluate_chunk", lambda *a, **k: pytest.fail("a chunk was evaluated"))
    plan = _plan(tmp_path / "out")
    with pytest.raises(ConfigError) as err:
        run_sweep(plan, RayConfig(stall_timeout_s=value), progress=False)
    msg = str(err.value)
    assert err.value.field == KEY and f"{KEY} = {value!r}" in msg, msg
    assert "a finite number of seconds > 0, or null (no limit)" in msg, msg
    assert not (tmp_path / "out").exists()  # nothing written, not even the run's directory


def test_the_key_defaults_to_an_hour_and_takes_null_on_the_command_line():
    assert RayConfig().stall_timeout_s == 3600.0
    cfg = config.compose_sweep([*BASE, "ray.stall_timeout_s=null"], axes={"traffic.bytes": [1e6]})
    assert cfg.config.ray.stall_timeout_s is None
    limit = config.compose_sweep([*BASE, "ray.stall_timeout_s=90"], axes={"traffic.bytes": [1e6]})
    assert limit.config.ray.stall_timeout_s == 90.0
    assert config.compose_sweep(BASE, axes={"traffic.bytes": [1e6]}).config.ray.stall_timeout_s == 3600.0


@pytest.mark.parametrize("value, said", [("0", f"{KEY} = 0"), ("-1", f"{KEY} = -1"), ("abc", "stall_timeout_s")])
def test_the_command_refuses_a_bad_stall_timeout(value, said, tmp_path, capsys):
    assert cli.main(["sweep", *BASE, "traffic.bytes=1e6,2e6", f"sweep.output_dir={tmp_path / 'r'}",
                     f"ray.stall_timeout_s={value}", "--no-progress"]) == 2
    assert said in capsys.readouterr().err
    assert not (tmp_path / "r").exists()


# ------------------------------------------------------------------ a workload study (schedule._compute)

SMOKE = yaml.safe_load((schedule.repo_dir() / "sweeps" / "workload" / "smoke.yaml").read_text())


def _study(tmp_path, **ray):
    study = dict(SMOKE, trace={"synthetic": 60, "load": 0.9}, machines={"16x64": [16, 64]},
                 mode_mixes={"paper": SMOKE["mode_mixes"]["paper"]}, ray=ray)
    f = tmp_path / "stall.yaml"
    f.write_text(yaml.safe_dump(study, sort_keys=False))
    return schedule.load_study(f)


@pytest.mark.parametrize("value", [0, -5, "abc", float("inf")])
def test_a_study_refuses_a_bad_stall_timeout(value, tmp_path):
    with pytest.raises(ConfigError) as err:
        _study(tmp_path, stall_timeout_s=value)
    assert "ray.stall_timeout_s" in err.value.field and "or null (no limit)" in str(err.value), str(err.value)


def test_a_stalled_study_cancels_keeps_its_points_and_resumes(tmp_path, monkeypatch):
    fake = FakeRay(1)  # 2 points (tdn, rdn_speedup): the first finishes, the second never
    monkeypatch.setattr(schedule, "_ray_init", lambda cfg: fake)
    study = _study(tmp_path, stall_timeout_s=0.3)
    with pytest.raises(ClusterError) as err:
        schedule.run_study(study, progress=False, out_dir=tmp_path / "out")
    msg = str(err.value)
    assert err.value.field == KEY and f"{KEY} = 0.3 s" in msg and "stall_timeout_s: null" in msg, msg
    assert "The 1 point outstanding on Ray (16x64/paper/rdn_speedup) was cancelled" in msg, msg
    assert "1 of 2 points are kept" in msg and fake.cancelled and fake.cancelled[0][1] is True, msg
    kept = list((tmp_path / "out").glob(".*.points/*.json"))
    assert len(kept) == 1
    again = FakeRay(None)
    monkeypatch.setattr(schedule, "_ray_init", lambda cfg: again)
    path = schedule.run_study(_study(tmp_path, stall_timeout_s=None), progress=False, out_dir=tmp_path / "out")
    assert again.submitted == 1  # the missing point alone
    ref = schedule.run_study(_study(tmp_path), use_ray=False, progress=False, out_dir=tmp_path / "ref")
    with xr.open_dataset(path) as a, xr.open_dataset(ref) as b:
        for v in ("mean_wait", "p95_wait", "mean_utilisation", "wait_reduction"):
            np.testing.assert_array_equal(a[v].values, b[v].values, err_msg=v)


# ------------------------------------------------------------------ a real local Ray whose worker hangs

def _hanging(real, calls: str, n_ok: int, hang_s: float):
    """``real`` in a Ray worker, except that calls ``n_ok`` and later (counted by files in ``calls``) sleep
    ``hang_s`` first: a worker that hangs without dying. (A closure: Ray ships it by value.)"""
    def task(*args):
        i = 0
        while True:
            try:
                os.close(os.open(os.path.join(calls, f"call-{i}"), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
                break
            except FileExistsError:
                i += 1
        if i >= n_ok:
            time.sleep(hang_s)
        return real(*args)
    return task


class _TwoChunks(driver._DriverChunks):
    """The driver's own chunks while Ray starts: exactly the first two (deterministic)."""

    def __call__(self, ready) -> None:
        while self.count < min(2, self.limit):
            cid, pts = self.todo[self.count]
            self.writer.submit(cid, driver.evaluate_chunk(self.plan, pts))
            self.count += 1


def test_a_real_hung_worker_is_cancelled_and_the_rerun_completes(tmp_path, monkeypatch):
    import ray

    if ray.is_initialized():
        ray.shutdown()
    calls = tmp_path / "calls"
    calls.mkdir()
    monkeypatch.setattr(driver, "_remote_chunk", _hanging(driver._remote_chunk, str(calls), 0, 60.0))
    monkeypatch.setattr(driver, "_DriverChunks", _TwoChunks)
    plan = _plan(tmp_path)
    try:
        with pytest.raises(ClusterError) as err:  # the driver's 2 chunks, then every Ray task hangs
            run_sweep(plan, RayConfig(num_cpus=1, stall_timeout_s=1), progress=False)
        msg = str(err.value)
        parts = _stall_parts(msg)
        assert f"{KEY} = 1 s" in msg and parts["kept"] == 2 == len(_chunk_files(plan)), msg
        assert parts["n"] == 4 and "(2 more not yet sent)" in msg, msg
        assert not set(parts["names"]) & _chunk_files(plan)
        deadline = time.monotonic() + 20  # the hung worker was killed (force): its CPU is free again
        while ray.available_resources().get("CPU", 0) < 1 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert ray.available_resources().get("CPU", 0) >= 1, "the hung task still holds its CPU"
        monkeypatch.undo()
        path = run_sweep(_plan(tmp_path), RayConfig(num_cpus=1, stall_timeout_s=None), progress=False)
    finally:
        ray.shutdown()
    _check_numbers(path)


def test_the_docs_state_the_default_the_code_uses():
    text = " ".join((driver._PACKAGE_DIR.parent / "docs" / "sweeps.md").read_text().split())
    m = re.search(r"`ray\.stall_timeout_s` \(default ([\d.,]+) s, an hour; null: no limit\)", text)
    assert m is not None, "docs/sweeps.md no longer states ray.stall_timeout_s's default"
    assert float(m.group(1).replace(",", "")) == RayConfig().stall_timeout_s == 3600.0


def test_a_study_another_process_runs_is_refused_at_once(tmp_path, monkeypatch):
    """Two identical studies ran side by side, and the first to finish removed the points store under the other
    (FileNotFoundError in its next write). A study run is now locked as a sweep's run is: the second is refused
    before any point, naming the study and the lock; the lock goes with its holder."""
    from evaluator.errors import RunBusyError

    study = _study(tmp_path)
    out = tmp_path / "out"
    sid = schedule.study_id(study)

    def no_point(*a, **k):
        raise AssertionError("a point was computed")

    with schedule._study_lock(out, study, sid):  # another open file description: as another process's flock
        monkeypatch.setattr(schedule, "_compute", no_point)
        with pytest.raises(RunBusyError) as err:
            schedule.run_study(study, use_ray=False, progress=False, out_dir=out)
    msg = str(err.value)
    assert err.value.field == "--study" and f"({sid}) is busy" in msg and f".{sid}.lock" in msg, msg
    monkeypatch.undo()
    path = schedule.run_study(study, use_ray=False, progress=False, out_dir=out)
    assert path.is_file() and not list(out.glob(".*.lock")) and not list(out.glob(".*.points"))
