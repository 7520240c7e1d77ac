"""A worker node of a real multi-node Ray cluster lost mid-sweep (issue 34): the sweep finishes on the remaining
node with nothing lost or computed twice.

Two ``ray start`` nodes on this machine stand in for two machines: a head (1 CPU) and a worker node (1 CPU), each
``ray start --block`` in its own process group, in a Ray temp directory of this test (``RAY_TMPDIR``; the machine's
``/tmp/ray`` is never touched, and nothing here runs ``ray stop``, which would stop every Ray of the machine). The
sweep is ``evaluator sweep ... ray.address=HOST:PORT`` in a driver process of its own; once it has persisted a
chunk and the worker node is running one of its tasks (a process titled ``ray::_remote_chunk`` among the node's
processes), the whole node is killed (SIGKILL to its raylet, agents and workers at once, as a machine that loses
power). Checked: the sweep exits 0, the lost node is dead in the cluster's view, every chunk was
persisted exactly once (the driver logs each write), and the dataset's values equal an in-process run's.

About 20-25 s on this 2-core machine (2026-11-28: 21.6 s, of which the two nodes' start-up is most), so it runs
with the rest of the suite, in the group of the modules that start Ray (tests/conftest.py).
"""

from __future__ import annotations

import collections
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest
import xarray as xr

from evaluator import config
from evaluator.config import RayConfig
from evaluator.query import open_results
from evaluator.sweep import plan_sweep, run_sweep

REPO = Path(__file__).resolve().parent.parent
RAY = str(Path(sys.executable).with_name("ray"))

pytestmark = [pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc (Linux)"),
              pytest.mark.skipif(not Path(RAY).exists(), reason="needs the ray command next to this Python")]
STUDY = ["sweeps=dragonfly_random_placement", "placement.seed=range(0,4)", "sweep.chunk_size=4",
         "ray.max_in_flight=2"]  # 24 chunks; two tasks at a time, one per node

DRIVER = textwrap.dedent("""
    import json, sys, time
    from evaluator import cli
    from evaluator.sweep import driver, store

    log = open(sys.argv[1], "a")
    real_write, real_init = store.write_chunk, driver._ray_init

    def write_chunk(plan, cid, res):  # every persisted chunk, logged
        real_write(plan, cid, res)
        log.write(cid + "\\n")
        log.flush()

    def ray_init(cfg, while_starting=None):  # the sweep's own connection; then wait until both nodes have joined
        ray = real_init(cfg, while_starting)
        while sum(n["Alive"] for n in ray.nodes()) < 2:
            time.sleep(0.2)
        return ray

    store.write_chunk, driver._ray_init = write_chunk, ray_init
    rc = cli.main(sys.argv[2:])
    import ray
    deadline = time.time() + 30  # the cluster's view of the lost node (its health checks: about 3 s)
    while all(n["Alive"] for n in ray.nodes()) and time.time() < deadline:
        time.sleep(0.2)
    print("NODES " + json.dumps(sorted(bool(n["Alive"]) for n in ray.nodes())))
    sys.exit(rc)
""")


def _free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def _tree(root: int) -> dict[int, str]:
    """pid -> command line of ``root``'s live descendants (a node's raylet, agents and Ray workers: the workers
    have process groups of their own)."""
    parent, cmd = {}, {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                stat = Path(f"/proc/{name}/stat").read_text()
                parent[int(name)] = int(stat[stat.rfind(")") + 2:].split()[1])
                cmd[int(name)] = Path(f"/proc/{name}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            except (OSError, ValueError, IndexError):
                continue
    kids: dict[int, list[int]] = collections.defaultdict(list)
    for pid, ppid in parent.items():
        kids[ppid].append(pid)
    out, todo = {}, [root]
    while todo:
        for c in kids.get(todo.pop(), []):
            if c not in out:
                out[c] = cmd.get(c, "")
                todo.append(c)
    return out


def _kill_node(proc: subprocess.Popen) -> None:
    """SIGKILL to a ``ray start --block`` node: its process group and every process it started, at once."""
    tree = _tree(proc.pid)
    for pid in [proc.pid, *tree]:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


@pytest.fixture
def cluster():
    """A head and a worker node (``ray start --block``, one process group each) on this machine; both killed after
    the test, their temp directory removed."""
    base = tempfile.mkdtemp(prefix="ray-", dir="/tmp")  # short: Ray's socket paths must fit in 107 bytes
    port = _free_port()
    env = dict(os.environ, RAY_TMPDIR=base, JAX_PLATFORMS="cpu", RAY_AUTH_MODE="token",
               RAY_AUTH_TOKEN=os.urandom(32).hex(),
               RAY_health_check_period_ms="1000", RAY_health_check_failure_threshold="3")  # a lost node: ~3 s
    env.pop("RAY_ADDRESS", None)
    common = ["--num-cpus=1", "--block", "--disable-usage-stats"]
    head = subprocess.Popen([RAY, "start", "--head", f"--port={port}", "--include-dashboard=false", *common],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    nodes = [head]
    try:
        deadline = time.time() + 120
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), 1).close()
                break
            except OSError:
                assert time.time() < deadline and head.poll() is None, "the head node did not start"
                time.sleep(0.2)
        worker = subprocess.Popen([RAY, "start", f"--address=127.0.0.1:{port}", *common], env=env,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        nodes.append(worker)
        yield f"127.0.0.1:{port}", env, worker
    finally:
        for p in reversed(nodes):
            _kill_node(p)
        shutil.rmtree(base, ignore_errors=True)


def test_worker_node_lost_mid_sweep(cluster, tmp_path):
    address, env, worker = cluster
    out, log = tmp_path / "out", tmp_path / "writes.log"
    script = tmp_path / "driver.py"
    script.write_text(DRIVER)
    t0 = time.time()
    driver = subprocess.Popen([sys.executable, str(script), str(log), "sweep", *STUDY, f"sweep.output_dir={out}",
                               f"ray.address={address}", "ray.connect_timeout_s=60", "--no-progress"],
                              env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    killed_at = None
    try:
        deadline = time.time() + 240
        while time.time() < deadline and driver.poll() is None:
            written = log.read_text().split() if log.exists() else []
            busy = [c for c in _tree(worker.pid).values() if c.startswith("ray::_remote_chunk")]
            if written and busy:
                killed_at = len(written)
                _kill_node(worker)  # the whole node, at once
                break
            time.sleep(0.1)
        if killed_at is None:
            stdout, stderr = driver.communicate(timeout=240)
            pytest.fail(f"the worker node never ran a task while the sweep went on: {stdout[-1500:]}{stderr[-3000:]}")
        stdout, stderr = driver.communicate(timeout=240)
    finally:
        if driver.poll() is None:
            driver.kill()
            driver.communicate()
    took = time.time() - t0
    assert driver.returncode == 0, stderr[-3000:]
    assert "NODES [false, true]" in stdout, stdout[-2000:]  # the worker node is gone, the head finished
    writes = collections.Counter(log.read_text().split())
    plan = plan_sweep(config.compose_sweep([*STUDY, f"sweep.output_dir={tmp_path / 'ref'}"]))
    chunks = [cid for cid, _ in plan.chunks()]
    assert sorted(writes) == sorted(chunks) and set(writes.values()) == {1}, writes  # none lost, none twice
    assert 0 < killed_at < len(chunks)
    got = open_results(next(out.glob("dragonfly_random_placement/*.nc")))
    ref = open_results(run_sweep(plan, RayConfig(enabled=False), progress=False))
    xr.testing.assert_equal(got, ref)  # every value and label (attributes, which say how it ran, aside)
    print(f"multi-node sweep with a lost node: {took:.1f} s; node killed after {killed_at} of {len(chunks)} chunks")
