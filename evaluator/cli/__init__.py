"""Command line: ``evaluator <command> [options] [hydra overrides...]``.

A thin layer: each command (one module here) parses its arguments, composes
a config through :mod:`evaluator.config` and calls the library. Bad input of
any kind (:class:`~evaluator.errors.ConfigError` and its subclasses, and
files that cannot be read or written) is printed as one line naming the field
or file, the value and what is allowed (exit status 2); Ctrl-C exits with 130 (a sweep's SIGTERM with 143);
anything else is a bug, printed as one line (exit status 1). ``--debug``
anywhere on the command line shows the traceback instead.

JAX's persistent compilation cache is on for every command but ``bench``
(which measures compilation), under ``~/.cache/evaluator/jax``; see
:mod:`evaluator._jax_cache` (``$EVALUATOR_COMPILATION_CACHE``).
``--no-compilation-cache`` anywhere on the command line turns it off for one
run.
"""

from __future__ import annotations

import importlib
import os
import sys

from .._jax_cache import OFF_FLAG, enable_compilation_cache
from .._malloc import tune as tune_malloc
from ..errors import ConfigError

__all__ = ["main", "run", "COMMANDS"]

COMMANDS = {
    "eval": "evaluate one design point from the config and write a dataset under results/",
    "sweep": "run (or resume) a sweep on Ray: a study (sweeps=NAME; your own with --config-dir DIR) or exactly the "
             "axes given; writes results/<study>/<UTC time>-<hash>.nc",
    "query": "rank the rows of a results dataset or a study's latest run (--best METRIC --over AXIS ...)",
    "map": "search the task-to-node mapping of one job (traces, collectives, any traffic) that minimises its "
           "predicted completion time; writes MPICH_RANK_ORDER and node_list (--write-rank-order)",
    "optimize": "exhaustive search of decompositions, placements and routings for a stencil job",
    "plot": "write PNG figures of a sweep dataset or a study's latest run",
    "partitions": "torus partition shapes of a machine, their bisection and best/worst (see --help)",
    "tiles": "tile-size advisor: decompositions and per-node tiles of a stencil job ranked by the link model",
    "schedule": "simulate a job trace (SWF or synthetic) under allocation policies, FCFS + EASY backfilling",
    "bench": "benchmark the JAX kernels against a per-flow Python evaluator (--quick for a short run)",
    "placement": "build one placement, describe it, write MPICH_RANK_ORDER and node_list (--write-rank-order)",
    "runs": "list the runs under results/ (study, time, points, feasible, axes, path), newest first",
    "study": "run a named study of the papers (evaluator study rdn ...) and print its table",
}
"""Command -> one-line description; command ``X`` is ``evaluator.cli.X.main(argv)`` (``eval`` is ``evaluate``)."""

_MODULES = {"eval": "evaluate", "map": "mapping"}

_UNCACHED = ("bench",)
"""Commands that leave the compilation cache as JAX has it (off unless the user set JAX's own): the benchmark
times compilation itself."""


_WARNING_COMMAND = ["evaluator"]
"""The command the evaluator's own warnings are worded under (:func:`_own_warnings_worded`)."""


def _own_warnings_worded(cmd: str) -> None:
    """The evaluator's own warnings (a trace's ignored records, a machine file's figure in another unit, ...) as one
    line, ``evaluator CMD: warning: ...``, like its errors, not Python's file, line and source; a library's
    warnings keep Python's format. Installed once per process (a test calls ``main`` thousands of times)."""
    import warnings

    _WARNING_COMMAND[0] = f"evaluator {cmd}"
    if getattr(warnings.formatwarning, "_evaluator", False):
        return
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    plain = warnings.formatwarning

    def worded(message, category, filename, lineno, line=None):
        if os.path.abspath(filename).startswith(package + os.sep):
            return f"{_WARNING_COMMAND[0]}: warning: {message}\n"
        return plain(message, category, filename, lineno, line)

    worded._evaluator = True  # type: ignore[attr-defined]
    warnings.formatwarning = worded


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``evaluator`` console command."""
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv
    cache = OFF_FLAG not in argv
    argv = [a for a in argv if a not in ("--debug", OFF_FLAG)]
    if not argv or argv[0] in ("-h", "--help", "help"):
        print("usage: evaluator <command> [options] [overrides...]\n\n"
              "  --debug                 show tracebacks\n"
              f"  {OFF_FLAG}  do not use JAX's persistent compilation cache (~/.cache/evaluator/jax;\n"
              "                          EVALUATOR_COMPILATION_CACHE=0 or =DIR: off or another directory)\n\n"
              "commands:")
        for k, v in COMMANDS.items():
            print(f"  {k:<11} {v}")
        return 0 if argv else 2
    cmd, rest = argv[0], argv[1:]
    if cmd not in COMMANDS:
        print(f"evaluator: unknown command {cmd!r}; known commands: {sorted(COMMANDS)}", file=sys.stderr)
        return 2
    if cmd not in _UNCACHED:
        enable_compilation_cache(cache)
    if not debug:
        _own_warnings_worded(cmd)
    module = importlib.import_module(f"{__name__}.{_MODULES.get(cmd, cmd)}")
    try:
        return int(module.main(rest) or 0)
    except ConfigError as exc:
        if debug:
            raise
        print(f"evaluator {cmd}: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # (evaluator query ... | head: the reader is done; "error: Broken pipe" was printed)
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # (no second error at exit's flush)
        except OSError:
            pass
        return 128 + 13  # as a process that SIGPIPE ends
    except OSError as exc:
        if debug:
            raise
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"evaluator {cmd}: error: {where}{exc.strerror or exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM where a command turns it into one (evaluator sweep)
        if debug:
            raise
        signum = int(getattr(exc, "signum", 2))
        print(f"evaluator {cmd}: interrupted" + (f" ({exc})" if signum != 2 else ""), file=sys.stderr)
        return 128 + signum
    except Exception as exc:  # a bug, not bad input: one line, the traceback with --debug
        if debug:
            raise
        first = str(exc).splitlines()[0] if str(exc) else ""
        print(f"evaluator {cmd}: internal error: {type(exc).__name__}: {first} (rerun with --debug for the "
              f"traceback, and please report it)", file=sys.stderr)
        return 1


def run() -> None:
    """The console command: :func:`main`, then a quick exit.

    After the exit handlers (``atexit``: Ray's shutdown, logging's flush,
    h5py's closing of files) and a flush of stdout and stderr, the process
    ends with :func:`os._exit`: the interpreter's teardown of every module and
    object (XLA's executables and buffers, the sweep's caches) adds nothing a
    finished command needs and took 0.3-0.5 s of a 3 s ``evaluator optimize``.
    ``main`` itself returns normally (tests and library callers call it).
    """
    import atexit
    import os

    from .._signals import take_ctrl_c

    take_ctrl_c()  # (set already where the package was imported by the console command: evaluator/__init__.py)
    tune_malloc()  # large blocks stay in the heap (evaluator._malloc): this process is ours
    try:
        rc = main()
    except SystemExit as exc:  # (argparse's --help and usage errors)
        rc = exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
        if not isinstance(exc.code, int) and exc.code is not None:  # sys.exit("message"), as Python prints it
            print(exc.code, file=sys.stderr)
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe (evaluator ... | head): nothing more to say
            rc = rc or 1
    os._exit(rc)


if __name__ == "__main__":  # pragma: no cover
    run()
