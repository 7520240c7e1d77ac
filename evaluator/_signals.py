"""Ctrl-C and SIGTERM for the long runs (sweeps, schedule studies, named studies): SIGTERM raised in the main
thread as Ctrl-C's KeyboardInterrupt is, while :func:`stop_on_sigterm` is active, and every signal recorded, so
that one whose exception a garbage-collector callback swallowed is raised again at the run's next check
(:func:`raise_if_signalled`). :mod:`evaluator.sweep.driver` re-exports these for the sweep."""

from __future__ import annotations

import contextlib
import gc
import os
import signal
import threading
from typing import Any

__all__ = ["Interrupted", "stop_on_sigterm", "reclaim_signals", "reraise_signalled", "raise_if_signalled",
           "interrupt_handler", "take_ctrl_c"]

RESEND_S = 0.02
"""How long after a Ctrl-C that arrived inside a garbage-collector callback :func:`interrupt_handler` sends it
again (the callback has returned by then; if not, it is sent again after as long)."""


def _in_gc_callback(frame) -> bool:
    """Whether ``frame`` (a signal handler's) is inside a function of ``gc.callbacks``, where a raised exception is
    printed as "Exception ignored" and dropped."""
    codes = {getattr(cb, "__code__", None) for cb in gc.callbacks} - {None}
    while frame is not None and codes:
        if frame.f_code in codes:
            return True
        frame = frame.f_back
    return False


def interrupt_handler(signum, frame) -> None:
    """Ctrl-C as Python's own handler does it (KeyboardInterrupt in the main thread), but never lost: a handler runs
    at the main thread's next bytecode, and where that is inside a garbage-collector callback (JAX registers one,
    busy while a command starts up) the exception would be dropped and the command run on to its end (`evaluator
    eval` interrupted 0.8 s in: 1 of 3 tries, 2026-12-08). There the signal is sent again :data:`RESEND_S` later
    instead, once the callback has returned."""
    if _in_gc_callback(frame):
        threading.Timer(RESEND_S, os.kill, (os.getpid(), signum)).start()
        return
    signal.default_int_handler(signum, frame)


def take_ctrl_c() -> None:
    """Handle Ctrl-C with :func:`interrupt_handler` where Python's own handler is set (in the main thread; a command
    started with SIGINT ignored, as by nohup, keeps it ignored). The console command calls it first."""
    if threading.current_thread() is threading.main_thread() and \
            signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, interrupt_handler)


class Interrupted(KeyboardInterrupt):
    """SIGTERM, raised in the main thread as Ctrl-C's KeyboardInterrupt is: the sweep stops the same way (the
    finished chunks kept); ``signum`` says which signal (exit status 128 + signum)."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


_SIGNALLED: list[int] = []
"""The signals received while :func:`stop_on_sigterm` is active, in order (cleared when it ends)."""

_HANDLING: dict[int, Any] = {}
"""The signals :func:`stop_on_sigterm` handles while it is active, and its handler for them."""


def reclaim_signals() -> None:
    """Set :func:`stop_on_sigterm`'s handlers again (where it is active, in the main thread).

    Ray's core worker, started by ``ray.init``, installs a C++ failure handler for SIGTERM over the one Python
    set: on SIGTERM it dumped "*** SIGTERM received at time=... ***" and a stack to stderr before passing the
    signal on, and now and then the process then died of SIGABRT (exit -6, not 143) after the sweep had stopped
    cleanly. Called right after Ray is started, so that a signal reaches the sweep's handler alone."""
    if threading.current_thread() is threading.main_thread():
        for sig, handler in _HANDLING.items():
            signal.signal(sig, handler)


def raise_if_signalled() -> None:
    """Raise the interrupt of a signal received meanwhile whose exception was swallowed.

    Python runs a signal's handler at the next bytecode of the main thread, and that may be inside a garbage
    collector callback (JAX registers one), where an exception is printed as "Exception ignored" and dropped: a
    Ctrl-C 0.1-0.2 s into Ray's connection attempts was lost that way and the sweep kept connecting for
    ``ray.connect_timeout_s``. The waits of the sweep (connecting included) call this between their steps."""
    if _SIGNALLED:
        raise _interrupt(_SIGNALLED[-1])


def _interrupt(signum: int) -> KeyboardInterrupt:
    """The exception a signal stops the sweep with: KeyboardInterrupt for Ctrl-C, :class:`Interrupted` else."""
    return KeyboardInterrupt() if signum == signal.SIGINT else Interrupted(signum)


def reraise_signalled(exc: KeyboardInterrupt) -> None:
    """Raise ``exc`` as the signal that stopped the run: Ray's waits turn any KeyboardInterrupt their signal check
    meets into a plain one, so that a SIGTERM would exit 130; it is raised again as :class:`Interrupted` (143)."""
    if _SIGNALLED and _SIGNALLED[-1] != signal.SIGINT and not isinstance(exc, Interrupted):
        raise _interrupt(_SIGNALLED[-1]) from None
    raise exc


@contextlib.contextmanager
def stop_on_sigterm():
    """While the block runs in the main thread, SIGTERM raises :class:`Interrupted` there (as Ctrl-C raises
    KeyboardInterrupt), so a terminated sweep stops at once, connecting to Ray included, and keeps its chunks.
    Both signals are also recorded (:func:`raise_if_signalled`), so that the waits raise one whose exception a
    garbage-collector callback swallowed."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, frame):
        _SIGNALLED.append(signum)
        raise _interrupt(signum)

    # SIGINT only where Python's own handler (or the console's, interrupt_handler) is set (a sweep started with
    # SIGINT ignored, as by nohup, keeps it so)
    sigs = [signal.SIGTERM] + ([signal.SIGINT] if signal.getsignal(signal.SIGINT) in (signal.default_int_handler,
                                                                                      interrupt_handler) else [])
    previous = {sig: signal.signal(sig, handler) for sig in sigs}
    _HANDLING.update(dict.fromkeys(sigs, handler))
    try:
        yield
    finally:
        _HANDLING.clear()
        for sig, prev in previous.items():
            signal.signal(sig, prev if prev is not None else signal.SIG_DFL)
        _SIGNALLED.clear()
