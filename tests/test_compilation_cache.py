"""JAX's persistent compilation cache in the CLI: where it goes, the off switches, an unwritable directory,
entries written by the CLI (and by a sweep's Ray workers) and read back by the next run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import jax
import pytest

from evaluator import _jax_cache
from evaluator._jax_cache import ENV, cache_dir, enable_compilation_cache
from evaluator.io import repo_dir

EVAL = ["eval", "topology.p=2", "topology.a=4", "topology.h=2", "traffic=all_to_all", "placement=linear",
        "save=false"]


def entries(path: Path) -> dict[str, bytes]:
    """Cache entry -> its last access stamp (JAX writes ``<key>-atime`` on every write and read)."""
    if not path.exists():
        return {}
    return {p.name[: -len("-cache")]: (path / (p.name[: -len("-cache")] + "-atime")).read_bytes()
            for p in path.glob("*-cache")}


def run_cli(args, env_extra, tmp_path):
    # the CLI as a user starts it: none of the suite's own cache settings (its unbounded temporary cache among
    # them: JAX writes the access stamps these tests read only for a bounded cache, the CLI's default)
    drop = (ENV, "JAX_COMPILATION_CACHE_DIR", "XDG_CACHE_HOME", "JAX_COMPILATION_CACHE_MAX_SIZE")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env.update(JAX_PLATFORMS="cpu", PYTHONPATH=str(repo_dir()), HOME=str(tmp_path / "home"), **env_extra)
    proc = subprocess.run([sys.executable, "-m", "evaluator", *args], env=env, cwd=tmp_path, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


@pytest.mark.parametrize("env,expected", [
    ({}, "HOME/.cache/evaluator/jax"),
    ({"XDG_CACHE_HOME": "/x/cache"}, "/x/cache/evaluator/jax"),
    ({"XDG_CACHE_HOME": "relative/cache"}, "HOME/.cache/evaluator/jax"),  # XDG: relative paths are ignored
    ({ENV: "1"}, "HOME/.cache/evaluator/jax"),
    ({ENV: ""}, "HOME/.cache/evaluator/jax"),
    ({ENV: "on", "JAX_COMPILATION_CACHE_DIR": "/jax/own"}, "/jax/own"),
    ({ENV: "/my/dir", "XDG_CACHE_HOME": "/x/cache"}, "/my/dir"),
    ({ENV: "0"}, None),
    ({ENV: "off", "JAX_COMPILATION_CACHE_DIR": "/jax/own"}, None),
    ({ENV: "False"}, None),
])
def test_cache_dir(env, expected, monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    got = cache_dir(env)
    assert got == (None if expected is None else Path(expected.replace("HOME", str(tmp_path))))


@pytest.fixture
def restore_jax_cache_config():
    names = ["jax_compilation_cache_dir", "jax_persistent_cache_min_compile_time_secs",
             "jax_persistent_cache_min_entry_size_bytes", "jax_compilation_cache_max_size",
             "jax_enable_compilation_cache"]
    saved = {n: getattr(jax.config, n) for n in names}
    choice = dict(_jax_cache._choice)
    yield
    for n, v in saved.items():
        jax.config.update(n, v)
    _jax_cache._choice.clear()
    _jax_cache._choice.update(choice)


def test_enable_sets_this_process_and_exports_for_workers(tmp_path, restore_jax_cache_config):
    env = {ENV: str(tmp_path / "c")}
    assert enable_compilation_cache(environ=env) == tmp_path / "c"
    assert jax.config.jax_compilation_cache_dir == str(tmp_path / "c")
    assert jax.config.jax_persistent_cache_min_compile_time_secs == 0
    assert jax.config.jax_persistent_cache_min_entry_size_bytes == -1
    assert jax.config.jax_compilation_cache_max_size == _jax_cache.DEFAULT_MAX_BYTES
    assert env["JAX_COMPILATION_CACHE_DIR"] == str(tmp_path / "c")
    assert float(env["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"]) == 0
    assert int(env["JAX_COMPILATION_CACHE_MAX_SIZE"]) == _jax_cache.DEFAULT_MAX_BYTES
    # the user's own JAX settings are kept
    env = {ENV: str(tmp_path / "d"), "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "2"}
    enable_compilation_cache(environ=env)
    assert env["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] == "2"


def test_off_and_unwritable(tmp_path, restore_jax_cache_config):
    env = {ENV: str(tmp_path / "c")}
    assert enable_compilation_cache(False, environ=env) is None
    assert env[ENV] == "0" and "JAX_COMPILATION_CACHE_DIR" not in env and not (tmp_path / "c").exists()
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    warnings: list[str] = []
    for _ in range(2):
        env = {ENV: str(blocker / "cache")}
        assert enable_compilation_cache(environ=env, warn=warnings.append) is None
        assert env[ENV] == "0" and "JAX_COMPILATION_CACHE_DIR" not in env
    assert len(warnings) == 1 and str(blocker / "cache") in warnings[0] and ENV in warnings[0]


def test_choice_forwarded_to_workers_elsewhere(tmp_path, monkeypatch, restore_jax_cache_config):
    monkeypatch.setattr(_jax_cache, "_choice", {})
    assert _jax_cache.worker_env() == {}  # not chosen (library use): workers are left as JAX has them
    monkeypatch.setenv("HOME", str(tmp_path))
    enable_compilation_cache(environ={})
    assert _jax_cache.worker_env() == {ENV: "1"}  # each machine its own ~/.cache/evaluator/jax
    enable_compilation_cache(environ={ENV: str(tmp_path / "shared")})
    assert _jax_cache.worker_env() == {ENV: str(tmp_path / "shared")}  # the directory the user named
    enable_compilation_cache(False, environ={})
    assert _jax_cache.worker_env() == {ENV: "0"}


def test_apply_in_worker(tmp_path, monkeypatch, restore_jax_cache_config):
    monkeypatch.setattr(_jax_cache, "_applied", False)
    monkeypatch.setattr(os, "environ", {})
    _jax_cache.apply_in_worker()  # no choice forwarded: nothing
    assert os.environ == {} and not _jax_cache._applied
    monkeypatch.setattr(os, "environ", {ENV: str(tmp_path / "w")})
    _jax_cache.apply_in_worker()
    assert jax.config.jax_compilation_cache_dir == str(tmp_path / "w") and (tmp_path / "w").is_dir()
    jax.config.update("jax_compilation_cache_dir", None)
    _jax_cache.apply_in_worker()  # once per process
    assert jax.config.jax_compilation_cache_dir is None


def test_cli_writes_entries_and_the_next_run_reads_them(tmp_path):
    cache = tmp_path / "xdg" / "evaluator" / "jax"
    first = run_cli(EVAL, {"XDG_CACHE_HOME": str(tmp_path / "xdg")}, tmp_path)
    written = entries(cache)
    assert written, f"no cache entries in {cache}"
    second = run_cli(EVAL, {"XDG_CACHE_HOME": str(tmp_path / "xdg")}, tmp_path)
    again = entries(cache)
    assert set(again) == set(written)  # nothing compiled anew
    assert all(again[k] != written[k] for k in written)  # every entry read back (access stamps renewed)
    assert first.stdout == second.stdout and first.stderr == second.stderr == ""


@pytest.mark.parametrize("how", ["env", "flag"])
def test_cli_off_switch_leaves_the_cache_empty(how, tmp_path):
    extra = {"XDG_CACHE_HOME": str(tmp_path / "xdg")}
    args = list(EVAL)
    if how == "env":
        extra[ENV] = "0"
    else:
        args.insert(1, "--no-compilation-cache")
    proc = run_cli(args, extra, tmp_path)
    assert "completion" in proc.stdout and not (tmp_path / "xdg").exists()


def test_cli_unwritable_cache_warns_once_and_runs(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    proc = run_cli(EVAL, {ENV: str(blocker / "jax")}, tmp_path)
    assert "completion" in proc.stdout
    assert proc.stderr.count("\n") == 1 and str(blocker / "jax") in proc.stderr and "warning" in proc.stderr


SWEEP = ["sweep", "sweeps=dragonfly_nne_placement", "topology.p=2", "topology.a=4", "topology.h=2",
         "traffic.alpha=[16,16,16]", "traffic.beta=choice([2,2,2])", "routing=choice(minimal)", "--no-progress"]


@pytest.mark.parametrize("ray", [False, True])
def test_sweep_uses_the_cache_in_its_ray_workers(ray, tmp_path):
    """Compilations are logged (JAX_LOG_COMPILES) to the driver's stderr: with Ray there are none, so the
    entries are the workers'."""
    if ray:
        pytest.importorskip("ray")
    cache = tmp_path / "c"
    args = [*SWEEP, *(["ray.num_cpus=1", "ray.driver_chunks=false"] if ray else ["ray.enabled=false"]),
            f"sweep.output_dir={tmp_path / 'out'}"]
    proc = run_cli(args, {ENV: str(cache), "JAX_LOG_COMPILES": "1"}, tmp_path)
    assert "feasible of" in proc.stdout
    assert ("Compiling" in proc.stderr) is not ray, proc.stderr[-2000:]
    assert entries(cache), "no cache entries"
