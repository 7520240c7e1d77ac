"""A watchdog that removes an embedded Ray's processes when the sweep driver dies.

Started by the driver right after it starts a local Ray
(``python -m evaluator.sweep.reaper DRIVER_PID``). While the driver lives it
records every descendant process of the driver (Ray's GCS, raylet, agents and
workers), with their start times; once the driver is gone, killed with
``kill -9`` included, it terminates those that still run (same pid and start
time, so a reused pid is never hit). Linux only (it reads ``/proc``);
elsewhere it exits at once.
"""

from __future__ import annotations

import os
import signal
import sys
import time

__all__ = ["main"]


def _table() -> dict[int, tuple[int, int]]:
    """``pid -> (parent pid, start time)`` of every process."""
    out: dict[int, tuple[int, int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as fh:
                text = fh.read()
        except OSError:
            continue
        fields = text[text.rfind(")") + 2:].split()
        out[int(name)] = (int(fields[1]), int(fields[19]))
    return out


def _descendants(root: int, table: dict[int, tuple[int, int]]) -> set[int]:
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    out, todo = set(), [root]
    while todo:
        for c in children.get(todo.pop(), []):
            if c not in out:
                out.add(c)
                todo.append(c)
    return out


def main(argv: list[str]) -> int:
    if not os.path.isdir("/proc") or len(argv) != 1:
        return 0
    driver = int(argv[0])
    me = os.getpid()
    table = _table()
    if driver not in table:
        return 0
    driver_start = table[driver][1]
    tracked: dict[int, int] = {}
    while True:
        table = _table()
        if table.get(driver, (None, None))[1] != driver_start:
            break
        for pid in _descendants(driver, table) - {me}:
            tracked[pid] = table[pid][1]
        time.sleep(0.5)
    for sig, wait in ((signal.SIGTERM, 3.0), (signal.SIGKILL, 0.0)):
        table = _table()
        alive = [pid for pid, start in tracked.items() if table.get(pid, (None, None))[1] == start]
        for pid in alive:
            try:
                os.kill(pid, sig)
            except OSError:
                pass
        if not alive:
            break
        time.sleep(wait)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
