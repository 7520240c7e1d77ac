"""How much of a test run is JAX's compilation: a pytest plugin and its summary.

    .venv/bin/python -m pytest -q -n 2 --dist loadgroup -p tests.compile_share --junitxml=/tmp/suite.xml
    .venv/bin/python -m tests.compile_share /tmp/suite.xml

The plugin records, per test, the seconds of JAX's own compilation events (``jax.monitoring``: tracing to a jaxpr,
lowering to MLIR, XLA's backend compilation, and the compilation cache's retrievals) in the pytest processes, and
writes them to ``$EVALUATOR_COMPILE_SHARE_DIR`` (default: the system's temporary directory), one JSON file per
xdist worker; and the same events by the compiled function's name (JAX passes it with each event: ``shared`` is
the batched kernel's step of evaluator/_batch/compiled.py), one more file per worker. Subprocesses (the CLI runs,
Ray workers) are not counted. A jit traced inside another's trace (the
kernels' inner ``vmap`` of a step) reports its tracing inside the outer one's as well, so the tracing seconds
overstate: the summary gives both ends, backend and lowering alone, and with tracing. It prints the totals, the
test time of the run (from the JUnit XML), the modules that compile most and the functions compiled most (their
tracings, lowerings and backend compilations: counts and seconds).
"""

from __future__ import annotations

import collections
import glob
import json
import os
import sys
import tempfile
import xml.etree.ElementTree as ET

import pytest

EVENTS = ("/jax/core/compile/backend_compile_duration", "/jax/core/compile/jaxpr_trace_duration",
          "/jax/core/compile/jaxpr_to_mlir_module_duration", "/jax/compilation_cache/cache_retrieval_time_sec")
"""The events counted (seconds, and a count per event)."""

_current = ["<collection>"]
_seconds: dict = collections.defaultdict(lambda: collections.defaultdict(float))
_by_function: dict = collections.defaultdict(lambda: collections.defaultdict(float))


def _out_dir() -> str:
    return os.environ.get("EVALUATOR_COMPILE_SHARE_DIR", tempfile.gettempdir())


def _listener(event: str, duration: float, **kwargs) -> None:
    if event in EVENTS:
        rows = [_seconds[_current[0]]]
        name = str(kwargs.get("fun_name") or "")
        if name:  # tracing names the function, lowering and compiling name its jit: jit(NAME)
            rows.append(_by_function[name[4:-1] if name.startswith("jit(") and name.endswith(")") else name])
        for row in rows:
            row[event] += duration
            row[event + "#n"] += 1


def pytest_configure(config) -> None:
    import jax.monitoring

    jax.monitoring.register_event_duration_secs_listener(_listener)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    _current[0] = item.nodeid
    yield
    _current[0] = "<between tests>"


def pytest_unconfigure(config) -> None:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    with open(os.path.join(_out_dir(), f"evaluator-compile-share-{worker}.json"), "w") as f:
        json.dump(_seconds, f)
    with open(os.path.join(_out_dir(), f"evaluator-compile-functions-{worker}.json"), "w") as f:
        json.dump(_by_function, f)


def summary(junit: str | None = None, directory: str | None = None, top: int = 15) -> str:
    """The totals per event, the run's test time (from ``junit``) and the ``top`` modules by compilation."""
    totals, counts, per_module = collections.Counter(), collections.Counter(), collections.Counter()
    for path in glob.glob(os.path.join(directory or _out_dir(), "evaluator-compile-share-*.json")):
        with open(path) as f:
            for test, row in json.load(f).items():
                for k, v in row.items():
                    (counts if k.endswith("#n") else totals)[k.removesuffix("#n")] += v
                per_module[test.split("::")[0]] += sum(row.get(e, 0.0) for e in EVENTS[:3])
    lines = [f"{totals[e]:9.1f} s in {int(counts[e]):6d} events  {e}" for e in EVENTS]
    low = totals[EVENTS[0]] + totals[EVENTS[2]]
    compiling = low + totals[EVENTS[1]]
    lines.append(f"{low:9.1f} to {compiling:.1f} s compiling in the pytest processes (backend and lowering; "
                 "with tracing, where a nested trace counts in both)")
    if junit:
        tested = sum(float(tc.get("time", 0.0)) for tc in ET.parse(junit).iter("testcase"))
        lines.append(f"{tested:9.1f} s of test time in {junit} ({low / tested:.0%} to {compiling / tested:.0%} "
                     "compiling)")
    lines += [f"{v:9.1f} s  {m}" for m, v in per_module.most_common(top)]
    per_function: dict = collections.defaultdict(collections.Counter)
    for path in glob.glob(os.path.join(directory or _out_dir(), "evaluator-compile-functions-*.json")):
        with open(path) as f:
            for name, row in json.load(f).items():
                per_function[name].update(row)
    if per_function:
        lines.append("functions: traced (n, s), lowered (n, s), compiled by XLA (n, s)")
        ranked = sorted(per_function.items(), key=lambda kv: -sum(kv[1][e] for e in EVENTS[:3]))
        for name, row in ranked[:top]:
            cells = "  ".join(f"{int(row[e + '#n']):6d} {row[e]:7.1f}" for e in (EVENTS[1], EVENTS[2], EVENTS[0]))
            lines.append(f"{cells}  {name}")
    return "\n".join(lines)


if __name__ == "__main__":
    print(summary(sys.argv[1] if len(sys.argv) > 1 else None))
