"""Ray's side of a run: the chunks' order and batches, their submission, and the wait for their results.

The waits are short steps (a Ctrl-C or SIGTERM, run by the main thread between them, stops a run at any moment)
with a limit on a stall: a task whose worker hangs without dying (a dead worker's task goes through Ray's
retries) held a sweep or a workload study for ever. When no task has finished for ``ray.stall_timeout_s``
(:data:`STALL_DEFAULT_S`; null: no limit), the outstanding tasks are cancelled and the run stops with a
:class:`~evaluator.errors.ClusterError` saying what was outstanding; every finished chunk or point is already on
disk, so the same command again resumes from them.
"""

from __future__ import annotations

import collections
import math
import time
import uuid
from typing import Any, Callable, Iterator

from .._signals import raise_if_signalled
from ..errors import ClusterError, ConfigError

__all__ = ["STALL_FIELD", "STALL_DEFAULT_S", "STALL_ALLOWED", "check_stall_timeout", "Stalled", "finished",
           "stall_error", "run_on_ray", "BATCH_POINTS"]

STALL_FIELD = "ray.stall_timeout_s"
STALL_DEFAULT_S = 3600.0
"""Seconds without a finished task before a run on Ray stops (``ray.stall_timeout_s``): an hour."""
STALL_ALLOWED = "a finite number of seconds > 0, or null (no limit)"
_STEP_S = 0.5  # one wait's step: a signal is seen within it


def check_stall_timeout(value: Any, field: str = STALL_FIELD) -> float | None:
    """``value`` as seconds (None: no limit); a ConfigError naming ``field`` unless it is null or a finite
    number > 0 (0, -1, nan, inf, text and booleans are refused)."""
    if value is None:
        return None
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0
    if not ok:
        raise ConfigError(field, value, STALL_ALLOWED,
                          "It is how long a run on Ray waits with no task finished before it stops (cancelling "
                          "what is outstanding and keeping what finished).")
    return float(value)


class Stalled(Exception):
    """No task finished within ``limit_s``: ``outstanding`` holds the values of the tasks cancelled (as the
    ``pending`` mapping held them)."""

    def __init__(self, limit_s: float, outstanding: list):
        super().__init__(f"no task finished within {limit_s:g} s")
        self.limit_s, self.outstanding = limit_s, outstanding


def finished(ray, pending: dict, limit_s: float | None, refill: Callable[[], None] | None = None
             ) -> Iterator[tuple[Any, Any]]:
    """``(pending.pop(ref), ray.get(ref))`` for each task of ``pending`` (object ref -> what it is) as it finishes,
    ``refill()`` (optional) adding tasks to ``pending`` before each wait. When none has finished for ``limit_s``
    seconds (None: no limit), every task still pending is cancelled (its worker killed where Ray allows) and
    :class:`Stalled` is raised."""
    last = time.monotonic()
    while True:
        if refill is not None:
            refill()
        if not pending:
            return
        ready, _ = ray.wait(list(pending), num_returns=1, timeout=_STEP_S)
        raise_if_signalled()
        if ready:
            last = time.monotonic()
        for ref in ready:
            yield pending.pop(ref), ray.get(ref)
        if not ready and limit_s is not None and time.monotonic() - last >= limit_s:
            outstanding = list(pending.values())
            _cancel(ray, list(pending))
            pending.clear()
            raise Stalled(limit_s, outstanding)


def _cancel(ray, refs: list) -> None:
    """Cancel ``refs``, killing the workers that run them (``force``; a task waiting for a worker is dropped)."""
    for ref in refs:
        try:
            ray.cancel(ref, force=True)
        except Exception:  # noqa: BLE001 (an actor task, or one that has just finished: nothing to stop)
            try:
                ray.cancel(ref)
            except Exception:  # noqa: BLE001
                pass


def stall_error(run: str, limit_s: float, noun: str, names: list[str], more: int, kept: str,
                setting: str = STALL_FIELD + "={}") -> ClusterError:
    """The refusal of a stalled run: the setting and its value, the ``names`` of the ``noun`` outstanding (a few),
    ``more`` not yet sent, what is ``kept`` (and where), that a rerun resumes, and how to raise or lift the limit
    (``setting``: how the user sets it, ``{}`` the value)."""
    shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
    n = len(names)
    waiting = f" ({more} more not yet sent)" if more else ""
    return ClusterError(
        f"{run}: no {noun} finished for {STALL_FIELD} = {limit_s:g} s, so it stopped (a Ray worker hangs, or a task "
        f"takes longer than that). The {n} {noun}{'s' if n != 1 else ''} outstanding on Ray ({shown}) "
        f"{'were' if n != 1 else 'was'} cancelled{waiting}. {kept}: rerun the same command to resume from them. "
        f"Raise the limit ({setting.format(f'{2 * limit_s:g}')}) if a task may take longer, or lift it "
        f"({setting.format('null')}).",
        STALL_FIELD, limit_s, STALL_ALLOWED)


BATCH_POINTS = 2048
"""A Ray task evaluates chunks of about this many points in all (each persisted on its own): fewer tasks,
less scheduling per point, when chunks are small."""


def _by_network(todo: list[tuple[str, Any]]) -> list[list[tuple[str, Any]]]:
    """The chunks of ``todo`` per network (ids ``b<network>-c<chunk>``), in their order."""
    out: dict[str, list] = collections.defaultdict(list)
    for item in todo:
        out[item[0].split("-", 1)[0]].append(item)
    return list(out.values())


def _round_robin(lists: list[list]) -> list:
    out = []
    for i in range(max((len(v) for v in lists), default=0)):
        out.extend(v[i] for v in lists if i < len(v))
    return out


def _interleaved(todo: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """Chunks in round-robin order over their networks (ids ``b<network>-c<chunk>``): workers starting together
    compile different kernels, and a network's kernels are warm while its chunks keep coming."""
    return _round_robin(_by_network(todo))


def _batches(todo: list[tuple[str, Any]], chunk_size: int, n_cpus: int) -> list[list[tuple[str, Any]]]:
    """Chunks of ``todo`` in batches of about :data:`BATCH_POINTS` points, keeping at least four tasks per CPU
    to share out. A batch holds chunks of one network (one routing and topology: one set of kernels), in ``todo``'s
    order, and the batches go round-robin over the networks: Ray workers starting together compile different
    kernels (each writes its compilations to the persistent cache, where the others find them) instead of every
    worker compiling every kernel in its first task."""
    per = max(1, min(BATCH_POINTS // max(int(chunk_size), 1), -(-len(todo) // (4 * max(n_cpus, 1)))))
    return _round_robin([[v[i:i + per] for i in range(0, len(v), per)] for v in _by_network(todo)])


def run_on_ray(ray, ray_cfg, plan, todo: list, writer, stop_after: int | None, timings: dict, task,
               kept: Callable[[], str]) -> bool:
    """The chunks of ``todo`` evaluated by Ray tasks (``task``, the driver's ``_remote_chunk``) in batches, at most
    ``ray.max_in_flight`` at once, each result handed to ``writer`` as it comes; True when ``stop_after`` chunks
    were persisted (tests: a run stopped there). No task finished for ``ray.stall_timeout_s``: the outstanding ones
    are cancelled, the writer drained, and a :class:`~evaluator.errors.ClusterError` says what ``kept()`` says."""
    remote = ray.remote(max_retries=int(getattr(ray_cfg, "max_retries", 3)), retry_exceptions=False)(task)
    plan_box = [ray.put(plan)]  # in a list: Ray passes the reference, a worker fetches the plan once
    token = f"{plan.run_id}-{uuid.uuid4().hex}"
    ncpu = int(ray.cluster_resources().get("CPU", 1))
    timings["ray_cpus"] = ncpu
    limit = int(getattr(ray_cfg, "max_in_flight", None) or 2 * max(ncpu, 1))
    queue = collections.deque(_batches(todo, plan.chunk_size, ncpu))
    pending: dict[Any, list[str]] = {}

    def refill() -> None:
        while queue and len(pending) < limit:
            batch = queue.popleft()
            pending[remote.remote(token, plan_box, [pts for _, pts in batch])] = [cid for cid, _ in batch]

    try:
        for cids, results in finished(ray, pending, check_stall_timeout(getattr(ray_cfg, "stall_timeout_s",
                                                                                STALL_DEFAULT_S)), refill):
            for cid, res in zip(cids, results):
                writer.submit(cid, res)
                if stop_after is not None and writer.drain() >= stop_after:
                    return True
    except Stalled as stall:
        writer.drain()
        names = [cid for cids in stall.outstanding for cid in cids]
        raise stall_error(f"sweep {plan.name}", stall.limit_s, "chunk", names, sum(map(len, queue)),
                          kept()) from None
    return False
