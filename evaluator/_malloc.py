"""glibc ``malloc`` settings for the evaluator's own processes (private).

XLA:CPU takes each run's temporaries as one block from ``malloc``. With
glibc's defaults a block above the mmap threshold (128 kB rising to 32 MB)
is a fresh ``mmap`` on every call and is returned with ``munmap``: every page
is faulted in again on each evaluation. Mira's 5D stencil (tens of MB of
temporaries) spent half of its 34 ms there on one core. With mmap off
(``M_MMAP_MAX = 0``) and 512 MB of top padding (``M_TOP_PAD``: freed memory
stays in the heap instead of going back to the system) the same call takes
15 ms. Small points (DF(4,8,4): under 1 MB per point) are not affected.

XLA allocates on its worker threads, and glibc gives each thread its own
arena, whose heaps are at most 64 MB: a larger block there is mmapped
whatever ``M_MMAP_MAX`` says (glibc's ``sysmalloc`` falls back to ``mmap``
when a thread heap cannot hold it) and unmapped when freed. The
256x256x4 torus's 125 MB of temporaries were faulted in on every call
(30,000 page faults, half of its 88 ms on one core). One arena for all
threads (``M_ARENA_MAX = 1``) sends every block to the main heap: 43 ms,
no faults. The evaluator's threads allocate a few large blocks per call,
so they do not contend for the one arena.

:func:`tune` sets these in the processes the evaluator starts itself (the
console command, the bench's and the sweep's workers), never on import: a
program that imports the library keeps its own allocator settings (it may
call :func:`tune`). ``EVALUATOR_MALLOC=0`` turns it off. Linux with glibc
only (elsewhere nothing happens). Peak memory is unchanged; memory freed
after the peak is kept by the process for its next call.
"""

from __future__ import annotations

import ctypes
import os
import sys

__all__ = ["tune", "ENV"]

ENV = "EVALUATOR_MALLOC"
M_TOP_PAD, M_MMAP_MAX, M_ARENA_MAX = -2, -4, -8  # glibc's mallopt parameters (malloc.h)
TOP_PAD = 512 << 20

_DONE: list[bool] = []


def tune() -> bool:
    """Keep large blocks in the heap (no mmap, one arena, 512 MB top padding); True when glibc took the settings.

    Idempotent. Off with ``EVALUATOR_MALLOC=0`` (or ``off``, ``false``, ``no``)
    and on systems without glibc's ``mallopt``.
    """
    if _DONE:
        return _DONE[0]
    ok = False
    if os.environ.get(ENV, "").strip().lower() not in ("0", "off", "false", "no") and sys.platform.startswith("linux"):
        try:
            mallopt = ctypes.CDLL("libc.so.6").mallopt
        except (OSError, AttributeError):  # not glibc (musl has no mallopt)
            mallopt = None
        if mallopt is not None:
            mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
            ok = bool(mallopt(M_MMAP_MAX, 0)) and bool(mallopt(M_TOP_PAD, TOP_PAD)) and bool(mallopt(M_ARENA_MAX, 1))
    _DONE.append(ok)
    return ok
