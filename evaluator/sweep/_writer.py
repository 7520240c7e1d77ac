"""The sweep driver's chunk files: each finished chunk persisted on a few threads while the evaluation goes on
(:class:`ChunkWriter`), and the run's files removed once its dataset is written (:func:`remove_chunk_files`)."""

from __future__ import annotations

import concurrent.futures
import contextlib
import itertools
import os
import threading
import time

from . import store
from .plan import SweepPlan

__all__ = ["ChunkWriter", "remove_chunk_files"]


def remove_chunk_files(plan: SweepPlan) -> None:
    """Unlink the run's chunk files on a few threads (their metadata updates overlap), before
    :func:`~evaluator.sweep.store.clear` removes what is left."""
    try:
        files = [e.path for e in os.scandir(store.chunk_dir(plan)) if e.name.endswith(".pkl")]
    except OSError:
        return

    def unlink(path: str) -> None:
        with contextlib.suppress(OSError):
            os.unlink(path)

    with concurrent.futures.ThreadPoolExecutor(ChunkWriter.THREADS) as pool:
        list(pool.map(unlink, files))


class ChunkWriter:
    """Persists finished chunks on a few threads (their ``fsync`` calls overlap and batch), keeping the
    results of this call in memory for assembly (chunks of an earlier call are read back and verified).

    :meth:`drain` waits for every submitted chunk and returns how many this
    call has persisted; a write's :class:`~evaluator.errors.StorageError` is
    raised by the next :meth:`submit` or :meth:`drain`.
    """

    THREADS = 8
    _serial = itertools.count()

    def __init__(self, plan: SweepPlan, timings: dict, bar):
        self.plan, self.timings, self.bar = plan, timings, bar
        self.prefix = f"chunk-writer-{next(self._serial)}"  # (this writer's threads, found again by close)
        self.pool = concurrent.futures.ThreadPoolExecutor(self.THREADS, thread_name_prefix=self.prefix)
        self.futures: dict[concurrent.futures.Future, tuple[str, dict]] = {}
        self.results: dict[str, dict] = {}
        self.persisted = 0

    def _write(self, cid: str, res: dict) -> float:
        t = time.perf_counter()
        store.write_chunk(self.plan, cid, res)
        return time.perf_counter() - t

    def submit(self, cid: str, res: dict) -> None:
        self._collect(block=False)
        for k in ("build_s", "compile_s", "eval_s"):
            self.timings[k] += float(res.get(k, 0.0))
        if "bound_s" in res:  # sweeps with bounds: the LPs' time
            self.timings["bound_s"] = self.timings.get("bound_s", 0.0) + float(res["bound_s"])
        self.timings["worker_peak_rss_bytes"] = max(self.timings.get("worker_peak_rss_bytes", 0),
                                                    int(res.get("peak_rss_bytes", 0)))
        # every chunk's worker had a one-thread XLA:CPU pool (evaluator._threads; False in the command's process)
        self.timings["worker_xla_one_core"] = (self.timings.get("worker_xla_one_core", True)
                                               and bool(res.get("xla_one_core", False)))
        self.futures[self.pool.submit(self._write, cid, res)] = (cid, res)
        self._collect(block=len(self.futures) > 4 * self.THREADS)

    def _collect(self, block: bool, raise_errors: bool = True) -> None:
        if not self.futures:
            return
        done, _ = concurrent.futures.wait(
            list(self.futures), timeout=None if block else 0,
            return_when=concurrent.futures.ALL_COMPLETED if block else concurrent.futures.FIRST_COMPLETED)
        error = None
        for fut in done:
            cid, res = self.futures.pop(fut)
            exc = fut.exception()
            if exc is not None:
                error = error or exc
                continue
            self.timings["persist_s"] += fut.result()
            self.persisted += 1
            if "link_load" not in res:  # small: kept for assembly (per-link loads are read back instead)
                self.results[cid] = res
            self.bar.update(int(res["flat"].size))
        if error is not None and raise_errors:
            failed = getattr(error, "write", None)
            if failed is not None:
                # the other threads' writes settle first, so that the message counts the chunks that are kept
                # (counted while they were in flight, it said 1 where 2 were kept)
                self._collect(block=True, raise_errors=False)
                raise store.storage_error(self.plan, *failed) from None
            raise error

    def drain(self, raise_errors: bool = True) -> int:
        self._collect(block=True, raise_errors=raise_errors)
        return self.persisted

    def close(self) -> None:
        """Every write submitted done (the pool shut down), those of a thread the pool does not know included: an
        interrupt inside the ``Thread.start`` of a submit left the started thread out of the pool's own set, so
        ``shutdown`` did not wait for its write and the message of an interrupted sweep counted one chunk file
        fewer than it kept (8 of 9: tests/test_ray_connect.py in a clean clone, 2026-12-08)."""
        self.pool.shutdown(wait=True)
        for t in threading.enumerate():
            if t.name.startswith(self.prefix + "_") and t is not threading.current_thread():
                t.join()

    def read_chunk(self, plan: SweepPlan, cid: str) -> dict:
        res = self.results.pop(cid, None)
        return res if res is not None else store.read_chunk(plan, cid)
