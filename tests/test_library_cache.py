"""JAX's persistent compilation cache for library users (issue 24 item 10): `import evaluator` turns it on from
``$EVALUATOR_COMPILATION_CACHE`` as the CLI does, touching no file and no environment variable, and leaves JAX
as it is when the switch says off, the directory cannot be written, or the user gave JAX a directory of their
own. A second process reads the entries the first one wrote (the timing is `evaluator bench --only startup`)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import jax
import pytest

from evaluator import _jax_cache
from evaluator._jax_cache import ENV, library_default

NAMES = ["jax_compilation_cache_dir", "jax_persistent_cache_min_compile_time_secs",
         "jax_persistent_cache_min_entry_size_bytes", "jax_compilation_cache_max_size", "jax_enable_compilation_cache"]
JAX_DEFAULTS = {"jax_compilation_cache_dir": None, "jax_persistent_cache_min_compile_time_secs": 1.0,
                "jax_persistent_cache_min_entry_size_bytes": 0, "jax_compilation_cache_max_size": -1}


@pytest.fixture
def jax_as_new():
    """JAX's cache settings as a fresh process has them (JAX's documented defaults), restored afterwards."""
    saved = {n: getattr(jax.config, n) for n in NAMES}
    for n, v in JAX_DEFAULTS.items():
        jax.config.update(n, v)
    yield
    for n, v in saved.items():
        jax.config.update(n, v)


def test_on_from_the_switch_without_touching_anything(tmp_path, jax_as_new):
    env = {ENV: str(tmp_path / "c")}
    assert library_default(env) == tmp_path / "c"
    assert jax.config.jax_compilation_cache_dir == str(tmp_path / "c")
    assert jax.config.jax_persistent_cache_min_compile_time_secs == 0  # every kernel cached (they compile < 1 s)
    assert jax.config.jax_persistent_cache_min_entry_size_bytes == -1
    assert jax.config.jax_compilation_cache_max_size == 2 << 30
    assert env == {ENV: str(tmp_path / "c")}  # nothing exported
    assert not (tmp_path / "c").exists()      # nothing made: JAX makes it at the first compilation


def test_default_directory_and_relative_one(tmp_path, monkeypatch, jax_as_new):
    assert library_default({"HOME": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path / "x")}) == \
        tmp_path / "x" / "evaluator" / "jax"
    monkeypatch.chdir(tmp_path)
    assert library_default({ENV: "rel"}) == tmp_path / "rel"  # absolute, from where the program started
    assert jax.config.jax_compilation_cache_dir == str(tmp_path / "rel")


@pytest.mark.parametrize("value", ["0", "off", "False", "no"])
def test_off_leaves_jax_alone(value, jax_as_new):
    assert library_default({ENV: value}) is None
    assert {n: getattr(jax.config, n) for n in JAX_DEFAULTS} == JAX_DEFAULTS


def test_unwritable_directory_leaves_jax_alone_silently(tmp_path, capsys, jax_as_new):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert library_default({ENV: str(blocker / "jax")}) is None
    assert jax.config.jax_compilation_cache_dir is None
    assert capsys.readouterr() == ("", "")  # the CLI warns; a library import does not
    assert blocker.read_text() == "x"


def test_the_users_own_jax_settings_are_kept(tmp_path, jax_as_new):
    jax.config.update("jax_compilation_cache_dir", str(tmp_path / "mine"))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 2.0)
    assert library_default({}) == tmp_path / "mine"
    assert jax.config.jax_compilation_cache_dir == str(tmp_path / "mine")
    assert jax.config.jax_persistent_cache_min_compile_time_secs == 2.0
    # an explicit directory of ours wins over JAX's; the user's own minimum is still kept
    assert library_default({ENV: str(tmp_path / "ours")}) == tmp_path / "ours"
    assert jax.config.jax_persistent_cache_min_compile_time_secs == 2.0
    # JAX's own environment variables are kept as well
    jax.config.update("jax_compilation_cache_dir", None)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 1.0)
    library_default({ENV: str(tmp_path / "c"), "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "1"})
    assert jax.config.jax_persistent_cache_min_compile_time_secs == 1.0


PROBE = ("import sys, evaluator, jax\n"
         "y = jax.jit(lambda x: x * 3 + 1)(2.0) if sys.argv[1:] == ['compile'] else 0\n"  # any kernel will do
         "print(jax.config.jax_compilation_cache_dir, float(y))\n")
"""A library process: the package imported, one small kernel compiled (a whole ``ev.evaluate`` costs seconds of
compilation here; tests/test_compilation_cache.py runs one through the CLI)."""


def _python(env_extra: dict, tmp_path: Path, *args: str) -> str:
    # a new library user's process: none of the JAX_* settings that in-process CLI runs of other tests export
    # (e.g. JAX_ENABLE_COMPILATION_CACHE=false after a --no-compilation-cache run on the same worker)
    env = {k: v for k, v in os.environ.items()
           if k not in (ENV, "XDG_CACHE_HOME", "EVALUATOR_PROGRAM_STORE") and not k.startswith("JAX_")}
    env.update(JAX_PLATFORMS="cpu", PYTHONPATH=str(Path(__file__).resolve().parents[1]), HOME=str(tmp_path / "h"),
               **env_extra)
    proc = subprocess.run([sys.executable, "-c", PROBE, *args], env=env, cwd=tmp_path, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr[-2000:]
    return proc.stdout


def _entries(path: Path) -> dict[str, bytes]:
    return {p.name: (path / p.name.replace("-cache", "-atime")).read_bytes() for p in path.glob("*-cache")}


def test_a_second_process_reads_what_the_first_compiled(tmp_path):
    """Library use, no CLI: the first process writes entries under the default directory, the second reads every
    one of them back (JAX renews an entry's access stamp on each read) and compiles nothing new."""
    cache = tmp_path / "h" / ".cache" / "evaluator" / "jax"
    first = _python({}, tmp_path, "compile")
    written = _entries(cache)
    assert written and first.split()[0] == str(cache)
    second = _python({}, tmp_path, "compile")
    again = _entries(cache)
    assert set(again) == set(written) and all(again[k] != written[k] for k in written)
    assert first == second == f"{cache} 7.0\n"


def test_off_switch_in_a_library_process(tmp_path):
    out = _python({ENV: "0"}, tmp_path)
    assert out.split()[0] == "None" and not (tmp_path / "h").exists()


def test_no_choice_forwarded_to_remote_workers(monkeypatch, jax_as_new, tmp_path):
    """Import-time use is not the CLI's choice: remote Ray workers are left to their own import."""
    monkeypatch.setattr(_jax_cache, "_choice", {})
    library_default({ENV: str(tmp_path)})
    assert _jax_cache.worker_env() == {}
