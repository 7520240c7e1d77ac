"""The sweep driver: run the chunks of a plan on Ray (or in this process), persist, assemble, write.

Points are grouped by network (topology and routing) and cut into fixed-size chunks (see
:class:`~evaluator.sweep.plan.SweepPlan`), sent to Ray tasks (an embedded Ray
by default, ``ray.address=auto`` or a URL for a cluster) and persisted as they
finish (:mod:`~evaluator.sweep.store`); a rerun of the same config computes
only the missing chunks, so a sweep killed at any moment (even ``kill -9``)
resumes without losing or repeating points.

The dataset is ``<output_dir>/<sweep>/<UTC time>-<hash>.nc`` (or ``.zarr``):
the time of the run's first start (kept in the chunk store's manifest, so a
resumed run keeps its name) and the hash of its config (the run id's);
``<output_dir>/<sweep>/latest`` points at the newest run
(:func:`evaluator.io.point_latest`). A rerun of a finished run finds its
dataset and returns it: nothing is computed or written again.
"""

from __future__ import annotations

import collections
import concurrent.futures
import contextlib
import json
import logging
import os
import queue
import socket
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from pathlib import Path
from typing import Any

import xarray as xr

from .. import io
from .._jax_cache import apply_in_worker, worker_env
from .._malloc import tune as tune_malloc
from .._signals import Interrupted, reclaim_signals, reraise_signalled, stop_on_sigterm  # noqa: F401
from .._signals import raise_if_signalled as _raise_if_signalled
from .._threads import one_core
from ..config import RayConfig
from ..display import progress_bar
from ..errors import ClusterError, StorageError, keeps_ignored_keys
from . import store
from ._wait import STALL_DEFAULT_S, _interleaved, check_stall_timeout, run_on_ray
from ._writer import ChunkWriter, remove_chunk_files
from .assemble import assemble, check_link_load
from .bounds import check_sweep_bounds
from .plan import SweepPlan
from .worker import evaluate_chunk, evaluate_chunks, peak_rss_bytes

__all__ = ["run_sweep", "write_results", "VOLATILE_ATTRS", "cluster_address", "ray_address_file", "Interrupted",
           "stop_on_sigterm", "reclaim_signals", "reraise_signalled"]

_PACKAGE_DIR = Path(__file__).resolve().parent.parent

RAY_ADDRESS_VARIABLE = "RAY_ADDRESS"
"""Ray's environment variable naming a cluster; read with ``ray.address=auto`` only."""


def _joins(ray_cfg) -> bool:
    """Whether ``ray_cfg`` names a cluster to join (``ray.address`` set, not ``local``); else a local Ray."""
    address = getattr(ray_cfg, "address", None)
    return address is not None and str(address).strip() not in ("", "local")


def ray_address_file() -> Path:
    """Ray's "current cluster" file, ``<Ray temp dir>/ray_current_cluster``, which ``ray start --head`` writes (and
    ``ray stop`` removes; a cluster that died leaves it behind): Ray's own temp dir (``RAY_TMPDIR``, else
    ``TMPDIR`` on Linux, else ``/tmp``, then ``ray``)."""
    try:
        from ray._common.utils import get_ray_address_file

        return Path(get_ray_address_file(None))
    except (ImportError, AttributeError):  # pragma: no cover - another Ray version: its documented place
        base = os.environ.get("RAY_TMPDIR") or (os.environ.get("TMPDIR") if sys.platform.startswith("linux")
                                                else None) or "/tmp"
        return Path(base) / "ray" / "ray_current_cluster"


def cluster_address(ray_cfg) -> tuple[str | None, str]:
    """``(address, field)``: the cluster a sweep joins and the setting that named it (``ray.address``,
    ``RAY_ADDRESS`` or the path of Ray's current-cluster file); ``(None, "")`` for a local Ray of the sweep's own.

    ``ray.address`` unset (or ``local``) starts a local Ray whatever the environment holds: neither
    ``RAY_ADDRESS`` nor a current-cluster file left by a ``ray start --head`` is read (Ray's own ``ray.init()``
    would join them). ``ray.address=auto`` joins the cluster ``RAY_ADDRESS`` names, else the one in the
    current-cluster file (:func:`ray_address_file`); any other value is the cluster's address.
    """
    if not _joins(ray_cfg):
        return None, ""
    address = str(ray_cfg.address).strip()
    if address != "auto":
        return address, "ray.address"
    env = os.environ.get(RAY_ADDRESS_VARIABLE, "").strip()
    if env:
        return env, RAY_ADDRESS_VARIABLE
    path = ray_address_file()
    try:
        text = path.read_text().strip()
    except OSError:
        text = ""
    if not text:
        raise ClusterError(
            f"ray.address = 'auto' is invalid here: there is no Ray cluster to join ({RAY_ADDRESS_VARIABLE} is "
            f"unset and {path}, which `ray start --head` writes, does not exist). Start one (ray start --head), give "
            f"its address (ray.address=HOST:PORT), drop ray.address to start a local Ray, or set ray.enabled=false "
            f"to run in this process.", "ray.address", "auto", "the address of a running Ray cluster")
    return text, str(path)


def _dead(field: str, address: str, why: str, answered: bool = False) -> ClusterError:
    """The refusal of a cluster that did not answer (or, ``answered``, that Ray could not join): the setting that
    named it, the address, and each way out."""
    if field == "ray.address":
        named = f"ray.address = {address!r}"
        fix = "Start a cluster there (ray start --head), fix the address or raise ray.connect_timeout_s"
    elif field == RAY_ADDRESS_VARIABLE:
        named = f"{RAY_ADDRESS_VARIABLE} = {address!r} (the environment variable ray.address=auto reads)"
        fix = f"Unset {RAY_ADDRESS_VARIABLE} or point it at a running cluster"
    else:
        named = (f"{field} = {address!r} (Ray's current-cluster file, written by `ray start --head`, which "
                 f"ray.address=auto reads)")
        fix = f"That cluster has stopped: remove {field} (ray stop does) or start a cluster (ray start --head)"
    what = "Ray could not join the cluster there" if answered else "no Ray cluster answered there"
    return ClusterError(
        f"{named} is invalid: {what} ({why}). {fix}; or drop ray.address to start a local Ray, or set "
        f"ray.enabled=false to run the sweep in this process.", field, address, "the address of a running Ray cluster")


def _probe(address: str, timeout: float, field: str = "ray.address") -> None:
    """Fail within ``timeout`` seconds when a ``host:port`` (or ``ray://host:port``) cluster address does not
    accept a connection."""
    addr = address.split("://", 1)[1] if "://" in address else address
    host, _, port = addr.rpartition(":")
    if not port.isdigit():
        return  # a form Ray resolves itself
    host = host.strip("[]") or "127.0.0.1"
    result: dict[str, OSError | None] = {}

    def connect() -> None:  # name resolution too is bounded by the timeout: on a thread
        try:
            socket.create_connection((host, int(port)), timeout=timeout).close()
            result["exc"] = None
        except OSError as exc:
            result["exc"] = exc

    _wait_for(threading.Thread(target=connect, name="ray-probe", daemon=True), timeout + 1.0)
    if "exc" not in result or result["exc"] is not None:
        exc = result.get("exc")
        cause = ((exc.strerror or str(exc) or type(exc).__name__) if exc is not None and not isinstance(
            exc, TimeoutError) else "no answer")
        raise _dead(field, address, f"connecting to it: {cause}, within ray.connect_timeout_s = {timeout:g} s") \
            from None


def _wait_for(thread: threading.Thread, timeout: float | None = None, started: bool = False) -> bool:
    """Start ``thread`` (unless ``started``) and wait for it in short steps, so that Ctrl-C and SIGTERM (run by the
    main thread between steps) stop the wait at any moment; whether it finished within ``timeout``."""
    if not started:
        thread.start()
    deadline = None if timeout is None else time.monotonic() + timeout
    while thread.is_alive():
        thread.join(0.1)
        _raise_if_signalled()
        if deadline is not None and time.monotonic() > deadline:
            return False
    return True


@contextlib.contextmanager
def _stderr_kept_on_success():
    """Hold back what is written to file descriptor 2 (C++ logs included); replay it only on success."""
    try:
        saved = os.dup(2)
    except OSError:  # pragma: no cover - no stderr
        yield
        return
    with tempfile.TemporaryFile() as buf:
        sys.stderr.flush()
        os.dup2(buf.fileno(), 2)
        ok = False
        try:
            yield
            ok = True
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            if ok:
                buf.seek(0)
                text = buf.read().decode(errors="replace")
                if text:
                    sys.stderr.write(text)


def _start_reaper() -> None:
    """Watch this driver; if it dies (even by kill -9), stop the local Ray's processes it started."""
    try:
        # run as a plain script: the watchdog must not import the package (JAX) to watch a pid
        subprocess.Popen([sys.executable, str(Path(__file__).with_name("reaper.py")), str(os.getpid())],
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True)
    except OSError:  # pragma: no cover - cannot spawn: Ray's own shutdown still runs on a clean exit
        pass


class _NotMainThread(logging.Filter):
    """Ray's warning that it set no SIGTERM handler off the main thread: the sweep sets its own."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "not the main thread" not in record.getMessage()


_OWNER_JOBS: queue.SimpleQueue = queue.SimpleQueue()
_OWNER_LOCK = threading.Lock()
_OWNER: list[threading.Thread] = []


def _owner_loop() -> None:
    while True:
        fn, fut = _OWNER_JOBS.get()
        if fut.set_running_or_notify_cancel():
            try:
                fut.set_result(fn())
            except BaseException as exc:  # re-raised by the waiting thread
                fut.set_exception(exc)


def _on_owner_thread(fn, while_waiting=None):
    """``fn()`` run on the Ray owner thread, one daemon thread that lives as long as the process, while the calling
    thread waits in short steps (so that Ctrl-C and SIGTERM stop the wait at any moment). ``while_waiting(done)``
    (optional) runs on the calling thread first, ``done()`` saying whether ``fn`` has returned; the wait follows.

    Ray's connection attempts run in C++ and hold off the Python signal handlers of the thread that calls them:
    ``ray.init`` on the main thread made a Ctrl-C or SIGTERM wait until Ray gave up (minutes). The thread must
    outlive the local Ray: Ray starts its processes with a parent-death signal, which Linux sends when the thread
    that started them ends."""
    with _OWNER_LOCK:
        if not _OWNER or not _OWNER[0].is_alive():
            _OWNER[:] = [threading.Thread(target=_owner_loop, name="ray-owner", daemon=True)]
            _OWNER[0].start()
    fut: concurrent.futures.Future = concurrent.futures.Future()
    _OWNER_JOBS.put((fn, fut))
    if while_waiting is not None:
        while_waiting(fut.done)
    while True:
        try:
            return fut.result(timeout=0.1)
        except concurrent.futures.TimeoutError:
            _raise_if_signalled()


def _init_on_thread(ray, kwargs: dict, while_starting=None) -> None:
    """``ray.init(**kwargs)`` on the Ray owner thread (:func:`_on_owner_thread`, ``while_starting`` its
    ``while_waiting``), without Ray's warning that it set no SIGTERM handler there (:func:`stop_on_sigterm` sets the
    sweep's)."""
    log = logging.getLogger("ray._private.worker")
    quiet = _NotMainThread()
    log.addFilter(quiet)
    try:
        _on_owner_thread(lambda: ray.init(**kwargs), while_starting)
    finally:
        log.removeFilter(quiet)


def _result(fut: concurrent.futures.Future):
    """``fut.result()``, waited for in short steps (:func:`_raise_if_signalled` between them)."""
    while True:
        try:
            return fut.result(timeout=0.5)
        except concurrent.futures.TimeoutError:
            _raise_if_signalled()


def check_ray_config(ray_cfg) -> None:
    """Refuse a ``ray.connect_timeout_s`` that is not a finite number of seconds above 0 before anything runs
    (nan, -1 and inf were taken: a probe that never waits, or waits for ever), and a ``ray.stall_timeout_s`` that
    is neither that nor null."""
    if ray_cfg is None:
        return
    import math

    from ..errors import require

    t = getattr(ray_cfg, "connect_timeout_s", 15.0)
    ok = isinstance(t, (int, float)) and not isinstance(t, bool) and math.isfinite(t) and t > 0
    require(ok, "ray.connect_timeout_s", t, "a finite number of seconds > 0")
    check_stall_timeout(getattr(ray_cfg, "stall_timeout_s", STALL_DEFAULT_S))  # (null: no limit)


def _ray_init(ray_cfg, while_starting=None):
    """Ray, started here (a local Ray, ``ray.address`` null) or joined (a cluster), on the Ray owner thread.

    ``while_starting(ready)`` (optional): the caller's own work while a local Ray starts, run on this thread
    (``ready()``: whether Ray has answered; return when it has or when the work is done); ignored when joining a
    cluster (a connection takes a fraction of a second, or fails within ``ray.connect_timeout_s``)."""
    if _ray_initialized():
        return sys.modules["ray"]
    timeout = float(getattr(ray_cfg, "connect_timeout_s", 15.0))
    address, field = cluster_address(ray_cfg)
    if address is not None:
        _probe(address, timeout, field)  # before Ray is imported: a dead cluster fails within the timeout
    import ray

    kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False, "configure_logging": False}
    if address is not None:
        kwargs["address"] = address
        # ship this source tree to the cluster's workers (its dependencies must be installed there)
        kwargs["runtime_env"] = {"py_modules": [str(_PACKAGE_DIR)],
                                 "env_vars": {"JAX_ENABLE_X64": "1", **worker_env()}}  # the compilation cache
        # Ray retries the cluster once a second for this many attempts (default 30): our timeout
        os.environ["RAY_gcs_server_port_wait_time_s"] = str(max(1, int(round(timeout))))
    else:
        kwargs["address"] = "local"  # never a cluster named by RAY_ADDRESS or a current-cluster file
        if os.environ.get(RAY_ADDRESS_VARIABLE, "").strip():
            print(f"sweep: {RAY_ADDRESS_VARIABLE}={os.environ[RAY_ADDRESS_VARIABLE].strip()} is not read: "
                  f"ray.address is unset, so the sweep starts its own local Ray (ray.address=auto joins the "
                  f"cluster {RAY_ADDRESS_VARIABLE} names)", file=sys.stderr)
        if ray_cfg.num_cpus:
            kwargs["num_cpus"] = int(ray_cfg.num_cpus)
        _choose_token_auth()
        _quiet_exec_forks()
        _start_reaper()  # first: a driver killed while Ray starts leaves nothing running either
    try:
        # a local Ray's workers import the package from this source tree: they inherit the driver's environment
        # (JAX_PLATFORMS too), this directory first on PYTHONPATH (:func:`_worker_path`)
        with _stderr_kept_on_success(), _worker_path(address is None):  # (Ray's C++ client logs failed attempts)
            _init_on_thread(ray, kwargs, while_starting if address is None else None)
        reclaim_signals()  # over the C++ SIGTERM handler Ray's core worker installed
    except KeyboardInterrupt:
        raise
    except Exception as exc:
        if address is None:
            raise
        first = str(exc).splitlines()[0] if str(exc) else ""
        raise _dead(field, address, f"{type(exc).__name__}: {first}".rstrip(": "),
                    answered=not isinstance(exc, (ConnectionError, TimeoutError))) from None
    return ray


@contextlib.contextmanager
def _worker_path(local: bool):
    """While a local Ray starts (its raylet and the workers it starts take this process's environment), this
    source tree first on ``PYTHONPATH``; restored after. Inherited rather than passed as a ``runtime_env``: the
    raylet's prestarted workers then serve the sweep's tasks (a runtime environment starts two more, through
    Ray's runtime-env agent): the warm 10^6-point sweep 0.8 s sooner on 2 cores, the median of 7 alternating
    pairs (docs/bench.md)."""
    if not local:
        yield
        return
    before = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join([str(_PACKAGE_DIR.parent)] + ([before] if before else []))
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = before


EXEC_FORK_WARNING = r"os\.fork\(\) was called"
"""The start of JAX's at-fork warning (a regular expression), ignored where ``subprocess`` forks to ``exec``."""


def _quiet_exec_forks() -> None:
    """Without JAX's "os.fork() was called ... will likely lead to a deadlock" warning for the processes a local Ray
    starts (its GCS server and raylet: two of these lines on every ``make run``, the driver's JAX already busy with
    the first chunks). JAX warns of a child that goes on running Python with the parent's threads gone; Ray's
    children run only ``preexec_fn`` (block SIGINT, set the parent-death signal) and then ``exec`` a new program, so
    nothing of JAX's runs in them. The filter is narrow: this message, attributed to ``subprocess`` (whose
    ``Popen`` always ends its child in an ``exec``), so a bare ``os.fork`` elsewhere is still warned of."""
    warnings.filterwarnings("ignore", message=EXEC_FORK_WARNING, category=RuntimeWarning, module="subprocess")


def _choose_token_auth() -> None:
    """Start a local Ray with token authentication, Ray's own default for a new local cluster, chosen
    explicitly: left to itself, Ray prints "Token authentication is enabled for this Ray cluster..." on every
    start. A ``RAY_AUTH_MODE`` the user set is kept."""
    if "RAY_AUTH_MODE" in os.environ:
        return
    os.environ["RAY_AUTH_MODE"] = "token"
    _reread_ray_config()


def _reread_ray_config() -> None:
    """Ray caches its config when it is imported: read it again, as Ray does when it enables token mode."""
    try:
        from ray._raylet import Config

        Config.initialize("")
    except (ImportError, AttributeError):  # pragma: no cover - another Ray version: its own default applies
        pass


@keeps_ignored_keys
def run_sweep(plan: SweepPlan, ray_cfg=None, progress: bool = True, stop_after: int | None = None,
              warn=None, on_dataset=None) -> Path | None:
    """Run (or resume) a sweep and write its dataset; return the dataset path.

    ``on_dataset(ds, path)`` (optional): called with the dataset and the path it goes to while it is written
    (on another thread; both done before this returns, the write's error raised first), so that a caller that
    shows it need not read it back; not called when the run had finished before (nothing is assembled: read
    the path returned).

    The run is locked (:class:`~evaluator.sweep.store.RunLock`) for the whole
    call: a second driver on the same run id gets a
    :class:`~evaluator.errors.RunBusyError` naming the holder. Persisted chunks
    are verified first; invalid ones are reported through ``warn`` (default:
    stderr) and recomputed. A run whose dataset is already written (the same
    command after it finished) is not computed again: its dataset's path is
    returned (and ``warn`` says so). A failed write (full disk, unwritable directory)
    raises :class:`~evaluator.errors.StorageError` saying what is kept; Ctrl-C
    (and SIGTERM, as :class:`Interrupted`, in the main thread) stops the run at any
    moment, connecting to Ray included, keeping the finished chunks. ``ray.address``
    unset starts a local Ray whatever ``RAY_ADDRESS`` or Ray's current-cluster file
    say; a cluster to join is probed within ``ray.connect_timeout_s``
    (:func:`cluster_address`). ``stop_after`` (tests) returns
    ``None`` after that many chunks were persisted in this call, as an
    interrupted run would.
    """
    check_ray_config(ray_cfg)
    say = warn or (lambda msg: print(msg, file=sys.stderr))
    lock = store.RunLock(plan)
    try:
        lock.__enter__()
    except StorageError as locked:  # (a directory it cannot write: a finished run is still read, as a query reads it)
        done = finished(plan)
        try:
            attrs = _finished_attrs(plan, done)
        except StorageError:
            attrs = None
        if attrs is None or _stored_hash(plan, attrs) not in (None, plan.content_hash):
            raise locked from None
        say(f"sweep {plan.name}: run {plan.run_id} has already finished; nothing to compute: {done} (its "
            f"directory cannot be written: its latest link was left as it is)")
        return done
    try:
        with stop_on_sigterm():
            done = finished(plan)
            attrs = _finished_attrs(plan, done)
            _check_same_content(plan, done, attrs)
            if done is not None:
                store.clear(plan)  # chunks a run killed after its final write left behind
                io.point_latest(plan.out_dir)
                say(f"sweep {plan.name}: run {plan.run_id} has already finished; nothing to compute: {done}")
                if attrs.get("bound_failures"):  # said again: the run's points without a bound (NaN)
                    say(f"sweep {plan.name}: {attrs['bound_failures']}")
                return done
            store.check_latest(plan)  # another command's directory: refused before any point
            return _run_locked(plan, ray_cfg, progress, stop_after, warn, on_dataset)
    finally:
        lock.__exit__(None, None, None)


def run_key(plan: SweepPlan) -> str:
    """The hash part of ``plan``'s run id (the run id is ``<sweep>-<hash>``, or the ``sweep.run_id`` given)."""
    prefix = f"{plan.name}-"
    return plan.run_id[len(prefix):] if plan.run_id.startswith(prefix) and len(plan.run_id) > len(prefix) \
        else plan.run_id


def _suffix(plan: SweepPlan) -> str:
    return ".zarr" if plan.fmt == "zarr" else ".nc"


def result_path(plan: SweepPlan, start_time: str) -> Path:
    """``<output_dir>/<sweep>/<UTC time>-<hash>.nc`` (or ``.zarr``) of a run that first started at ``start_time``."""
    return plan.out_dir / (io.run_name(start_time, run_key(plan)) + _suffix(plan))


def _finished_attrs(plan: SweepPlan, done: Path | None) -> dict | None:
    """The attributes of ``done`` (a finished run's dataset, opened once), None without one; refused where it
    cannot be read: its chunks went when it was written, and "already finished" returned a file that ``evaluator
    query`` then called damaged (until 2026-12-06)."""
    if done is None:
        return None
    try:
        with xr.open_zarr(done) if done.suffix == ".zarr" else xr.open_dataset(done) as ds:
            return dict(ds.attrs)
    except Exception as exc:  # noqa: BLE001 (netCDF, HDF5 and zarr raise many types for a damaged file)
        why = " ".join(str(exc).split())[:160] or type(exc).__name__
        raise StorageError(f"sweep {plan.name}: run {plan.run_id} has finished, but its dataset {done} cannot be "
                           f"read ({why}). Its chunks went when it was written: move the file away (or delete it) "
                           f"and rerun the same command to compute the run again. Nothing was computed.",
                           "dataset", str(done), "a readable dataset of this run") from None


def _stored_hash(plan: SweepPlan, attrs: dict | None) -> str | None:
    """The content hash the run id's earlier start recorded (its dataset's ``attrs``, else its chunks'
    manifest's); None where it recorded none (a run of a version before 2026-12-06) or there is none."""
    if attrs is not None:
        return attrs.get("content_hash") or None
    path = store.chunk_dir(plan) / "manifest.json"
    try:
        return json.loads(path.read_text()).get("content_hash") or None
    except (OSError, ValueError, AttributeError):
        return None


def _check_same_content(plan: SweepPlan, done: Path | None, attrs: dict | None) -> None:
    """A run id given again (``sweep.run_id``) must name a run of the same content: another config's dataset was
    returned as this one's, or its chunks resumed with this config's (until 2026-12-06)."""
    if not plan.content_hash or plan.run_id == f"{plan.name}-{plan.content_hash}":
        return  # (the run id is the content's own hash)
    stored = _stored_hash(plan, attrs)
    if stored is not None and stored != plan.content_hash:
        from ..errors import ConfigError

        what = f"its dataset {done}" if done is not None else f"its chunks in {store.chunk_dir(plan)}"
        raise ConfigError("sweep.run_id", plan.run_id, "the run id of this configuration's run, or a new one",
                          f"Run {plan.run_id} was started with another config, axes or input files ({what}); "
                          f"give another sweep.run_id, or none for this configuration's own "
                          f"({plan.name}-{plan.content_hash}). Nothing was computed.")


def finished(plan: SweepPlan) -> Path | None:
    """The dataset of ``plan``'s run if it has been written: ``<UTC time>-<hash>`` (the newest, should there be
    several), or ``<run id>`` as earlier versions named it; else None."""
    suffix = _suffix(plan)
    try:
        names = [e.name for e in os.scandir(plan.out_dir) if e.name.endswith(suffix)]
    except OSError:
        return None
    key = run_key(plan) + suffix
    mine = sorted(n for n in names if n.endswith("-" + key) and io.run_time(n) is not None
                  and io.run_name(io.run_time(n), key) == n)
    if mine:
        return plan.out_dir / mine[-1]
    if plan.run_id + suffix in names:
        return plan.out_dir / (plan.run_id + suffix)
    return None


def _run_locked(plan: SweepPlan, ray_cfg, progress: bool, stop_after: int | None, warn, on_dataset=None
                ) -> Path | None:
    t_start = time.perf_counter()
    check_sweep_bounds(plan)  # LPs that would not fit: refused before anything runs
    check_link_load(plan)  # (and link loads kept that would not)
    # persist_s: the chunk files, summed over the writer's threads (they overlap the evaluation: mostly waiting on
    # fsync); assemble_s: the dataset's assembly from the chunks (its file is written after this record)
    timings = {"expand_s": 0.0, "build_s": 0.0, "compile_s": 0.0, "eval_s": 0.0, "persist_s": 0.0}
    io.remove_stale(plan.out_dir, prefix=f".{plan.run_id}.")  # a final write killed midway (earlier naming)
    manifest = store.manifest(plan)
    io.remove_stale(plan.out_dir, prefix=f".{result_path(plan, manifest['start_time']).name}.")
    chunks = plan.chunks()
    done = store.done_chunks(plan, chunks, warn)
    store.note_resume(plan, manifest, len(done), warn)  # (resumed under other code than its first start)
    todo = _interleaved([(cid, pts) for cid, pts in chunks if cid not in done])
    timings["expand_s"] = time.perf_counter() - t_start
    n_done_pts = sum(pts.size for cid, pts in chunks if cid in done)
    bar = progress_bar(total=plan.n_points, enabled=progress, initial=n_done_pts, unit="pt", desc=plan.name,
                       smoothing=0.1, dynamic_ncols=True)
    writer = ChunkWriter(plan, timings, bar)
    use_ray = ray_cfg is None or bool(ray_cfg.enabled)
    ray = None
    started_here = False
    try:
        if use_ray and todo:
            started_here = not _ray_initialized() and not _joins(ray_cfg)
            ray_cfg = ray_cfg or _default_ray_cfg()
            own = None
            if started_here and getattr(ray_cfg, "driver_chunks", True):
                own = _DriverChunks(plan, todo, writer, stop_after)
            ray = _ray_init(ray_cfg, own)
            n_own = own.count if own is not None else 0
            timings["driver_chunks"] = n_own
            if stop_after is not None and n_own >= stop_after:
                writer.drain()
                return None
            # (stop_after, for tests: submit no more chunks than that, as a run stopped there computed)
            if run_on_ray(ray, ray_cfg, plan, todo[n_own:stop_after], writer, stop_after, timings, _remote_chunk,
                          lambda: _kept(plan, chunks)):
                return None
        elif todo and _in_process(plan, todo[:stop_after], writer, stop_after, ray_cfg):
            return None
        writer.drain()
    except KeyboardInterrupt as exc:
        # every write in flight finishes first (one the interrupt caught between its submission and its
        # bookkeeping too: counted from the counter it was one short of the files), then the files are counted
        writer.drain(raise_errors=False)
        writer.close()
        print(f"\nsweep {plan.name}: interrupted; {_kept(plan, chunks)}. Rerun the same command to resume.",
              file=sys.stderr)
        reraise_signalled(exc)
    finally:
        writer.close()
        bar.close()
        # Ray tasks still running are left to finish, not cancelled: in Ray 2.60 a ``ray.cancel`` that meets the
        # task's own reply kills the driver in a RAY_CHECK ("Tried to complete task that was not pending", exit 1
        # after the run had stopped and said what it kept: 2 of 13 SIGTERMs of a schedule study, 2026-12-03;
        # ray-project/ray#54798 fixed a sibling). They go with the driver: a local Ray it started is shut down at
        # exit, and a cluster's raylets stop the workers of a job whose driver has gone. (A stall, no task finished
        # for ray.stall_timeout_s, cancels them: they hang, so no reply is on its way; _wait.run_on_ray.)
    # every result is in: a local Ray this call started stops meanwhile (1.4 s of Ray's own shutdown, done at
    # exit otherwise), overlapping the assembly and the write
    stopping = _stop_ray_in_background(ray) if ray is not None and started_here else None
    try:
        return _finish(plan, chunks, manifest, writer, timings, t_start, on_dataset)
    finally:
        if stopping is not None:
            _join_shutdown(stopping, warn)


def _in_process(plan: SweepPlan, todo: list, writer: ChunkWriter, stop_after: int | None, ray_cfg) -> bool:
    """The chunks of ``todo`` evaluated on threads of this process (``ray.enabled=false``), each result handed to
    ``writer`` in ``todo``'s order; True when ``stop_after`` chunks were persisted (tests: a run stopped there)."""
    n_threads = _local_threads(ray_cfg)
    window: collections.deque = collections.deque()
    queue = collections.deque(todo)
    with concurrent.futures.ThreadPoolExecutor(n_threads, thread_name_prefix="chunk") as pool:
        try:
            while queue or window:
                while queue and len(window) < 2 * n_threads:
                    cid, pts = queue.popleft()
                    window.append((cid, pool.submit(evaluate_chunk, plan, pts)))
                cid, fut = window.popleft()
                writer.submit(cid, _result(fut))
                if stop_after is not None and writer.drain() >= stop_after:
                    return True
        finally:
            for _, fut in window:
                fut.cancel()
    return False


def _kept(plan: SweepPlan, chunks) -> str:
    """``"K of N chunks are kept in DIR"``: the chunk files of ``chunks`` on disk."""
    ids = {cid for cid, _ in chunks}
    kept = sum(1 for p in store.chunk_dir(plan).glob("*.pkl") if p.stem in ids)
    return f"{kept} of {len(chunks)} chunks are kept in {store.chunk_dir(plan)}"


class _DriverChunks:
    """The driver's own work while the local Ray it starts comes up (``ray.driver_chunks``): the first chunks to do,
    evaluated here one after the other (:func:`~evaluator.sweep.worker.evaluate_chunk`, as ``ray.enabled=false``
    evaluates them) until Ray answers; ``count``: how many (the first ``count`` of ``todo``), Ray's workers take
    the rest. A local Ray's start leaves the cores partly idle for seconds (3-6 s on 2 cores, starting its
    processes and workers): the warm 10^6-point sweep of the README took 1.1 s less on average over 9 pairs of
    runs on a loaded 2-core machine, its driver evaluating 248-293 of its 977 chunks meanwhile, and the driver's
    peak grew by about 170 MB (its own JAX runtime and kernels; docs/bench.md)."""

    def __init__(self, plan: SweepPlan, todo: list, writer: "ChunkWriter", stop_after: int | None):
        self.plan, self.todo, self.writer = plan, todo, writer
        self.limit = len(todo) if stop_after is None else min(stop_after, len(todo))
        self.count = 0

    def __call__(self, ready) -> None:
        while self.count < self.limit and not ready():
            cid, pts = self.todo[self.count]
            self.writer.submit(cid, evaluate_chunk(self.plan, pts))
            self.count += 1
            _raise_if_signalled()


def _finish(plan: SweepPlan, chunks, manifest, writer, timings: dict, t_start: float, on_dataset=None) -> Path:
    """Assemble the dataset from the chunks, write it (``on_dataset(ds, path)`` meanwhile) and clear the run's chunk
    files; return its path."""
    t_w = time.perf_counter()
    ds = assemble(plan, [cid for cid, _ in chunks], manifest, writer.read_chunk)
    timings["assemble_s"] = time.perf_counter() - t_w
    timings["wall_s"] = time.perf_counter() - t_start
    timings["driver_peak_rss_bytes"] = peak_rss_bytes()  # after assembly, the driver's peak
    ds.attrs["timing_json"] = json.dumps({k: v if isinstance(v, bool) else round(v, 4) for k, v in timings.items()})
    path = write_results(ds, plan) if on_dataset is None else _write_while(ds, plan, on_dataset)
    remove_chunk_files(plan)
    store.clear(plan)
    return path


def _write_while(ds: xr.Dataset, plan: SweepPlan, show) -> Path:
    """:func:`write_results` of ``ds`` on a thread while ``show(ds, path)`` runs on this one (both read ``ds``, neither
    changes it); the write's error first (what ``show`` printed may name a file that was not written). The README's
    10^6-point sweep: its file written in 1.5 s while its summary and table took 0.7 s, where reading the file back
    for them took 1.35 s more (docs/bench.md)."""
    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="dataset-writer") as pool:
        written = pool.submit(write_results, ds, plan)
        try:
            show(ds, result_path(plan, ds.attrs["start_time"]))
        except BaseException:
            _result(written)
            raise
        return _result(written)


def _ray_initialized() -> bool:
    ray = sys.modules.get("ray")
    return ray is not None and ray.is_initialized()


SHUTDOWN_WAIT_S = 60.0
"""How long a sweep waits, its dataset written, for the local Ray it started to shut down (1.4 s as a rule)."""


def _join_shutdown(stopping: threading.Thread, warn=None) -> None:
    """Wait for Ray's shutdown on ``stopping`` at most :data:`SHUTDOWN_WAIT_S` (in short steps: a signal stops
    the wait); past that, say so once and go on: the dataset is written (Ray's processes go at exit, or with the
    watchdog of :func:`_start_reaper`)."""
    if not _wait_for(stopping, SHUTDOWN_WAIT_S, started=True):
        (warn or (lambda msg: print(msg, file=sys.stderr)))(
            f"sweep: the local Ray did not shut down within {SHUTDOWN_WAIT_S:g} s; the dataset is written, the sweep "
            f"returns without waiting for it (its processes stop when this one exits)")


def _stop_ray_in_background(ray) -> threading.Thread:
    """``ray.shutdown()`` on a thread (joined by the caller): the local cluster's processes stop while the
    driver goes on."""
    thread = threading.Thread(target=ray.shutdown, name="ray-shutdown", daemon=True)
    thread.start()
    return thread


def _local_threads(ray_cfg) -> int:
    """Threads that evaluate chunks in this process (``ray.enabled=false``): ``ray.num_cpus``, else the CPUs
    this process may use. Compilation and evaluation release the GIL, so they overlap."""
    n = getattr(ray_cfg, "num_cpus", None) if ray_cfg is not None else None
    if n:
        return max(1, int(n))
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def _default_ray_cfg() -> RayConfig:
    return RayConfig()


_PLANS: dict[str, SweepPlan] = {}


def _remote_chunk(token: str, plan_box: list, batch: list):
    """A Ray task: evaluate a few chunks (``batch``: their points, of one network) together
    (:func:`~evaluator.sweep.worker.evaluate_chunks`: one device evaluation, a result per chunk, each equal to
    :func:`~evaluator.sweep.worker.evaluate_chunk`'s). The plan is fetched from the object store once per worker
    process and driver call (``token``)."""
    import jax

    one_core()  # a task holds one CPU: XLA:CPU's pool of one thread, before anything starts JAX (evaluator._threads)
    jax.config.update("jax_enable_x64", True)
    apply_in_worker()  # the persistent compilation cache, as the driver chose
    tune_malloc()  # large blocks stay in the heap (evaluator._malloc), as in the console command
    plan = _PLANS.get(token)
    if plan is None:
        import ray

        _PLANS.clear()
        plan = _PLANS[token] = ray.get(plan_box[0])
    if os.environ.get("EVALUATOR_TEST_CRASH_ONCE"):
        marker = Path(os.environ["EVALUATOR_TEST_CRASH_ONCE"])
        if not marker.exists():
            marker.write_text("crashed")
            os._exit(1)  # simulate a killed worker: Ray must retry the task
    return evaluate_chunks(plan, batch)  # the batch's chunks in one evaluation, each result on its own


VOLATILE_ATTRS = ("start_time", "end_time", "timing_json")
"""Attrs that record when and how fast a run went; they differ between runs of one sweep."""


def write_results(ds: xr.Dataset, plan: SweepPlan) -> Path:
    """Write atomically to ``<output_dir>/<sweep>/<UTC time>-<hash>.nc`` (or ``.zarr``; the time is the run's
    first start, ``ds.attrs["start_time"]``) and point ``<output_dir>/<sweep>/latest`` at the newest run."""
    path = result_path(plan, ds.attrs["start_time"])
    try:
        io.write_zarr(ds, path) if plan.fmt == "zarr" else io.write_netcdf(ds, path)
        io.point_latest(plan.out_dir)
    except OSError as exc:
        raise store.storage_error(plan, path, exc) from None
    return path
