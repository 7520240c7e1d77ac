"""The evaluator's processes keep large blocks in the heap (``evaluator._malloc``): observed with glibc's own
``mallinfo2`` (bytes in mmapped blocks), in fresh interpreters (the setting is process-wide)."""

from __future__ import annotations

import os
import platform
import subprocess
import sys

import pytest

CODE = """
import ctypes
from evaluator import _malloc
ok = _malloc.tune()
assert _malloc.tune() == ok  # idempotent
libc = ctypes.CDLL("libc.so.6")

class Info(ctypes.Structure):  # struct mallinfo2 (glibc >= 2.33)
    _fields_ = [(k, ctypes.c_size_t) for k in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                               "fsmblks", "uordblks", "fordblks", "keepcost")]

libc.mallinfo2.restype = Info
libc.malloc.restype = ctypes.c_void_p
before = libc.mallinfo2().hblkhd
block = libc.malloc(64 << 20)  # 64 MB, as XLA's temporaries of a large point
main = (libc.mallinfo2().hblkhd - before) >> 20  # MB newly held in mmapped blocks
# a thread's block (XLA allocates on its worker threads): 128 MB, more than a thread arena's heap holds
import threading
before = libc.mallinfo2().hblkhd
worker = threading.Thread(target=lambda: libc.malloc(128 << 20))
worker.start()
worker.join()
print(ok, main, (libc.mallinfo2().hblkhd - before) >> 20)
"""


def run(env_value: str | None) -> tuple[bool, int, int]:
    env = dict(os.environ)
    env.pop("EVALUATOR_MALLOC", None)
    if env_value is not None:
        env["EVALUATOR_MALLOC"] = env_value
    out = subprocess.run([sys.executable, "-c", CODE], env=env, capture_output=True, text=True, check=True).stdout
    ok, main, thread = out.split()
    return ok == "True", int(main), int(thread)


GLIBC = platform.libc_ver()


@pytest.mark.skipif(not (sys.platform.startswith("linux") and GLIBC[0] == "glibc"
                         and tuple(int(x) for x in GLIBC[1].split(".")[:2]) >= (2, 33)),
                    reason="glibc >= 2.33 (mallopt, mallinfo2) on Linux only")
def test_large_blocks_come_from_the_heap_unless_turned_off():
    ok, main, thread = run(None)
    assert ok and main == 0 and thread == 0  # from the heap, on the main thread and on another
    ok, main, thread = run("0")
    assert not ok and main >= 64 and thread >= 128  # glibc's default: a fresh mmap for each large block
