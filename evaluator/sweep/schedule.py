"""Workload studies: a grid of machines x mode mixes x runs (policy, speedups), one simulation per point, on Ray.

A study is a YAML file (``sweeps/workload/*.yaml``; not a Hydra sweep)::

    name: workload_smoke
    trace: {synthetic: 2000, load: 0.9, seed: 0}   # or {swf: PATH, procs_per_node: 1, limit: null}
    machines: {16x64: [16, 64], 32x64: [32, 64]}    # label: [groups, nodes_per_group]
    mode_mixes: {paper: {minimal_balance: 0.4, adaptive: 0.4, custom_balance: 0.1, custom: 0.1}}
    runs:                                           # label: {policy, speedups (netCDF path or
      tdn: {policy: unrestricted}                   #   {mode: {groups: ratio}}), params}
      rdn: {policy: grap, speedups: "results/rdn/speedup-{groups}x{nodes_per_group}.nc"}
    workload: {enlarge: 2.0, mode_lo: 576, mode_hi: 65536, mpi_fraction: 0.3, speedup_rule: time_ratio,
               allow_foreign_speedups: false}
    backfill_depth: 500
    seed: 0
    seeds: 8                                        # optional: the study at seeds 0 .. 7 (dimension seed)
    ray: {address: null, num_cpus: null}

Every (machine, mix, run) point is one :func:`evaluator.workload.run.run_schedule`
call with one run, sent as a Ray task (a local Ray by default, as
``evaluator sweep`` starts one; ``use_ray=False``: in this process). Points
of one (machine, mix) simulate the same prepared trace (same sizes, modes and
MPI fractions).

Speedup tables. A path may name the machine: ``{groups}``,
``{nodes_per_group}`` and ``{machine}`` (its label) are replaced per
machine, so each machine reads the table computed on it. Every table is
loaded and checked when the study is read, before any point runs: a table
that records another machine (or none: a hand-made ``{mode: {groups:
ratio}}``) is refused (:meth:`evaluator.workload.SpeedupTable.check_machine`)
unless ``workload: {allow_foreign_speedups: true}``. The dataset records
which table each (machine, run) used: coordinates ``speedup_table``,
``speedup_table_machine``, ``speedup_table_baseline``.

The dataset has dims ``(machine, mix, run)`` with the scalars
of :data:`evaluator.workload.run.SUMMARY_VARS` and ``wait_reduction``: ``1 -
mean wait / mean wait of the first run`` of the same machine and mix. It is
written atomically under ``results/<name>/<run-id>.nc``.

Seeds. A synthetic trace, the mode draws and the policies' random choices
follow ``seed``, so one study answers for one draw of them: a queue's mean
wait moves a lot with the trace (docs/workload.md). ``seeds: K`` runs every
point at the seeds ``seed .. seed + K - 1`` (each exactly what the study
with that ``seed`` gives; a ``trace.seed`` of its own stays), adds the
dimension ``seed`` (``wait_reduction`` against the first run of the same
seed), and the table gives each row's mean over the seeds with their
range.

Resume. Every finished point is stored at once, atomically, as
``<out>/.<study-id>.points/<index>.json`` (its labels and scalars), where the
study id is a hash of the study's content (every key but the Ray settings)
and of the files it names (SWF trace, speedup tables). A point is a pure
function of the study and its labels, so a study that crashed or was killed,
run again, computes only the points missing there and writes the same
dataset, ``<out>/<UTC time>-<hash of the study id>.nc`` (tested: no point
lost or computed twice). Once the dataset is written the points directory is
removed; the same study run again finds its dataset
(:func:`finished_study`), says so on stderr and returns it: nothing is
computed or written again (as ``evaluator sweep`` treats a finished run). A
changed study (or input file) gets another id and starts afresh. Ctrl-C
and SIGTERM stop a study at any moment, starting Ray included, as they stop
a sweep (exit status 130 and 143; points still running on Ray are cancelled)
and say how many points are kept and where.

Not (yet) what ``evaluator sweep`` gives: no Hydra composition or
overrides, no per-month variables (``evaluator schedule`` has them for one
machine).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import xarray as xr
import yaml

from ..display import progress_bar
from ..errors import ConfigError, ConfigTypeError, is_int
from ..io import check_writable, read_yaml, repo_dir, write_dataset, write_json
from ..workload import check_keys, check_machine_size, int_arg, make_policy
from ..workload.model import WorkloadModel
from ._wait import STALL_DEFAULT_S, Stalled, check_stall_timeout, finished, stall_error
from .driver import _ray_init, reraise_signalled, stop_on_sigterm

__all__ = ["load_study", "check_study", "run_study", "study_points", "study_id", "STUDY_KEYS", "study_table",
           "study_seeds", "finished_study"]

STUDY_KEYS = ("name", "trace", "machines", "mode_mixes", "runs", "workload", "backfill_depth", "seed", "seeds",
              "ray")
"""Keys of a study file."""


def load_study(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read and check a study YAML file (see the module docstring): every key at every depth against its schema,
    every value, every speedup table and the SWF trace, before any point runs (:func:`check_study`)."""
    if not isinstance(path, (str, os.PathLike)):
        raise ConfigTypeError("study", path, "a study YAML file path (e.g. sweeps/workload/smoke.yaml)")
    p = Path(path)
    if not p.is_file():
        alt = next((a for a in (repo_dir() / "sweeps" / "workload" / f"{path}.yaml", repo_dir() / p)
                    if not p.is_absolute() and a.is_file()), None)  # a name, or a path in the repository
        if alt is not None:
            p = alt
        else:
            raise ConfigError("--study", str(path), "a study YAML file (e.g. sweeps/workload/smoke.yaml)",
                              "It is a directory." if p.is_dir() else None)
    try:
        study = read_yaml(p.read_text())
    except yaml.YAMLError as exc:
        raise ConfigError(str(p), "", "a YAML mapping", str(exc).splitlines()[0]) from None
    except (OSError, UnicodeError) as exc:
        raise ConfigError("--study", str(p), "a readable study YAML file", str(exc).splitlines()[0]) from None
    if not isinstance(study, dict):
        raise ConfigError(str(p), type(study).__name__, "a YAML mapping of study keys")
    study.setdefault("name", p.stem)
    study["_source"] = str(p)
    return check_study(study, p.name)


_RUN_KEYS = ("policy", "speedups", "params")
_RAY_KEYS = ("address", "num_cpus", "stall_timeout_s")
_WORKLOAD_KEYS = tuple(f.name for f in dataclasses.fields(WorkloadModel))


def _in(where: str, exc: ConfigError, rename: tuple[str, str] | None = None) -> ConfigError:
    """``exc`` with its field prefixed by the file (``where: field``), same type and message otherwise."""
    field = exc.field
    if rename and field.startswith(rename[0]):
        field = rename[1] + field[len(rename[0]):]
    try:
        return type(exc)(f"{where}: {field}", exc.value, exc.allowed, exc.hint)
    except TypeError:  # a WordedError: its message is whole already
        return exc



def _section(study: dict, where: str, name: str, keys) -> dict:
    """The mapping ``study[name]`` (missing or null: an empty one, put in the study), its keys checked against
    ``keys``."""
    sec = study.get(name)
    if sec is None:
        sec = study[name] = {}
    if not isinstance(sec, dict):
        raise ConfigTypeError(f"{where}: {name}", sec, f"a mapping with keys {', '.join(keys)}")
    check_keys(where, name, sec, keys)
    return sec

def check_study(study: dict[str, Any], where: str = "study") -> dict[str, Any]:
    """Check a study (a mapping as read from its YAML file) completely, fill in its defaults and return it.

    Every key at every depth is checked against its schema (unknown keys are named with the allowed keys and the
    nearest match), every value against what it may be (integers are accepted where a number is expected), the
    machines' sizes are estimated, the policies and their parameters, the workload model of every mode mix, the
    trace (an SWF file is read) and every speedup table are built: nothing runs before all of it passed."""
    from ..workload.run import TRACE_KEYS, TraceSpec
    from ..workload.swf import read_swf

    check_keys(where, "", study, STUDY_KEYS)
    name = study.get("name")
    if not isinstance(name, str) or not name or "/" in name or name.startswith("."):
        raise ConfigError(f"{where}: name", name, "a non-empty name without '/' (the results directory)")
    for key in ("machines", "runs"):
        if not isinstance(study.get(key), dict) or not study[key]:
            raise ConfigError(f"{where}: {key}", study.get(key), "a non-empty mapping label -> entry")
    seed = study.get("seed", 0)
    try:
        int_arg("seed", seed, 0, what="a NumPy default_rng seed")
        int_arg("seeds", study.get("seeds", 1), 1, what="how many seeds from seed on (the draws of the trace, "
                "the mode draws and the policies)")
        depth = study.get("backfill_depth", 500)
        int_arg("backfill_depth", depth, -1, none=True, what="queued jobs tried per pass; -1 or null: all")
    except ConfigError as exc:
        raise _in(where, exc) from None
    for lab, m in study["machines"].items():
        if not (isinstance(m, (list, tuple)) and len(m) == 2 and all(is_int(x) and x >= 1 for x in m)):
            raise ConfigError(f"{where}: machines.{lab}", m, "[groups, nodes_per_group], positive integers")
        try:
            check_machine_size(*m)
        except ConfigError as exc:
            raise ConfigError(f"{where}: machines.{lab}", list(m), exc.allowed, exc.hint) from None
    tr = _section(study, where, "trace", TRACE_KEYS)
    try:
        spec = TraceSpec(**dict(tr, seed=tr.get("seed", seed)))
    except ConfigError as exc:
        raise _in(where, exc) from None
    if spec.swf:
        try:
            read_swf(spec.swf, None, spec.procs_per_node)
        except ConfigError as exc:
            raise _in(f"{where}: trace.swf", exc) from None
    wl = _section(study, where, "workload", _WORKLOAD_KEYS)
    mixes = study.setdefault("mode_mixes", {"paper": None})
    if not isinstance(mixes, dict) or not mixes:
        raise ConfigError(f"{where}: mode_mixes", mixes, "a non-empty mapping label -> {mode: share} (or null: "
                                                         "workload.mode_mix)")
    for lab, mix in mixes.items():
        if mix is not None and not isinstance(mix, dict):
            raise ConfigTypeError(f"{where}: mode_mixes.{lab}", mix, "a mapping {mode: share >= 0}, or null")
        kw = dict(wl)
        if mix is not None:
            kw["mode_mix"] = dict(mix)
        kw.setdefault("seed", seed)
        try:
            WorkloadModel(**kw)
        except ConfigError as exc:
            raise _in(where, exc, ("workload.mode_mix", f"mode_mixes.{lab}") if mix is not None else None) from None
    _check_size(study, where)
    for lab, r in study["runs"].items():
        if not isinstance(r, dict):
            raise ConfigTypeError(f"{where}: runs.{lab}", r, "{policy: NAME, speedups: PATH or table, params: {...}}")
        check_keys(where, f"runs.{lab}", r, _RUN_KEYS)
        if "policy" not in r:
            raise ConfigError(f"{where}: runs.{lab}", r, "{policy: NAME, speedups: PATH or table, params: {...}}",
                              "The key 'policy' is required.")
        params = r.get("params") or {}
        if not isinstance(params, dict):
            raise ConfigTypeError(f"{where}: runs.{lab}.params", params, "a mapping of the policy's parameters")
        sp = r.get("speedups")
        if sp is not None and not isinstance(sp, (str, dict)):
            raise ConfigTypeError(f"{where}: runs.{lab}.speedups", sp,
                                  "a netCDF path (may hold {groups}, {nodes_per_group}, {machine}) or "
                                  "{mode: {groups: ratio}}")
        try:
            make_policy(r["policy"], 1, 1, 0, **params)  # name and parameters, on a one-node machine
        except ConfigError as exc:
            raise _in(f"{where}: runs.{lab}", exc) from None
    ray = study.get("ray") or {}
    if not isinstance(ray, dict):
        raise ConfigTypeError(f"{where}: ray", ray, f"a mapping with keys {', '.join(_RAY_KEYS)}")
    check_keys(where, "ray", ray, _RAY_KEYS)
    if ray.get("address") is not None and not isinstance(ray["address"], str):
        raise ConfigTypeError(f"{where}: ray.address", ray["address"], "null (a local Ray), 'auto' or an address")
    try:
        int_arg("ray.num_cpus", ray.get("num_cpus"), 1, none=True)
        check_stall_timeout(ray.get("stall_timeout_s"))
    except ConfigError as exc:
        raise _in(where, exc) from None
    allow = wl.get("allow_foreign_speedups", False)
    for m in study["machines"]:                       # every table, before any point runs (on Ray)
        groups, npg = study["machines"][m]
        for lab in study["runs"]:
            try:
                tab = _table(study, m, lab, f"{where}: runs.{lab}.speedups")
            except ConfigError as exc:
                raise (exc if exc.field.startswith(where) else _in(f"{where}: runs.{lab}.speedups", exc)) from None
            if tab is not None:
                try:
                    tab.check_machine(groups, npg, allow)
                except ConfigError as exc:
                    raise ConfigError(f"{where}: runs.{lab}.speedups.machine (machine {m})", exc.value, exc.allowed,
                                      exc.hint) from None
    study["_checked"] = True
    return study


MAX_STUDY_POINTS = 100_000
"""The most (machine, mix, run, seed) points a study may have: each is a whole schedule (seconds to minutes), and
more are refused before their list is made."""


def _check_size(study: dict, where: str) -> None:
    """A study of more than :data:`MAX_STUDY_POINTS` points is refused, naming ``seeds`` where it has them."""
    n = len(study["machines"]) * len(study["mode_mixes"]) * len(study["runs"])
    k = int(study.get("seeds", 1))
    if n * k > MAX_STUDY_POINTS:
        field = "seeds" if k > 1 else "machines"
        raise ConfigError(f"{where}: {field}", study.get(field), f"a study of at most {MAX_STUDY_POINTS:,} points",
                          f"{n:,} (machine, mix, run) points x {k:,} seeds = {n * k:,}; each point is a whole "
                          f"schedule.")


def speedups_path(study: Mapping[str, Any], machine: str, run: str):
    """The run's ``speedups`` entry for ``machine``: a path with ``{groups}``, ``{nodes_per_group}`` and
    ``{machine}`` filled in and made relative to the repository (as sweeps' paths) when it is not a file
    here; a table or None as given."""
    sp = study["runs"][run].get("speedups")
    if not isinstance(sp, str):
        return sp
    groups, npg = study["machines"][machine]
    sp = sp.replace("{groups}", str(groups)).replace("{nodes_per_group}", str(npg)).replace("{machine}", machine)
    if not os.path.isabs(sp) and not os.path.exists(sp):
        sp = str(repo_dir() / sp)
    return sp


def _table(study: Mapping[str, Any], machine: str, run: str, field: str | None = None):
    """The run's :class:`~evaluator.workload.SpeedupTable` on ``machine`` (None: no speedups)."""
    from ..workload.run import load_speedups

    sp = speedups_path(study, machine, run)
    if isinstance(sp, str) and not os.path.isfile(sp):
        groups, npg = study["machines"][machine]
        raise ConfigError(field or f"runs.{run}.speedups", sp, "a netCDF speedup table (dims mode x groups)",
                          f"Compute it on machine {machine} first: evaluator study rdn "
                          f"--machine p,a,h,{groups} (a * p = {npg}) --speedup-out {sp}")
    return load_speedups(sp)


def study_seeds(study: Mapping[str, Any]) -> list[int] | None:
    """The seeds of a study with ``seeds: K`` (``seed .. seed + K - 1``), or None without the key (one seed, no
    ``seed`` dimension)."""
    if "seeds" not in study:
        return None
    first = int(study.get("seed", 0))
    return list(range(first, first + int(study["seeds"])))


def study_points(study: Mapping[str, Any]) -> list[tuple]:
    """Every (machine, mix, run) label triple, machines outermost; with ``seeds``, every (machine, mix, run,
    seed)."""
    seeds = study_seeds(study)
    return [(m, x, r) + ((s,) if seeds is not None else ()) for m in study["machines"] for x in study["mode_mixes"]
            for r in study["runs"] for s in (seeds or [None])]


def _point(study: Mapping[str, Any], machine: str, mix: str, run: str, seed: int | None = None) -> dict[str, float]:
    """Simulate one point (at ``seed``, else the study's); returns the summary scalars."""
    from ..workload import WorkloadModel
    from ..workload.run import RunSpec, TraceSpec, run_schedule

    seed = int(study.get("seed", 0)) if seed is None else int(seed)
    groups, G = study["machines"][machine]
    wl = dict(study.get("workload") or {})
    if study["mode_mixes"][mix] is not None:
        wl["mode_mix"] = dict(study["mode_mixes"][mix])
    wl.setdefault("seed", seed)
    model = WorkloadModel(**wl)
    tr = dict(study.get("trace") or {})
    tr.setdefault("seed", seed)
    r = study["runs"][run]
    spd = speedups_path(study, machine, run)
    depth = study.get("backfill_depth", 500)
    ds = run_schedule(TraceSpec(**tr), [RunSpec(r["policy"], spd, dict(r.get("params") or {}), run)], groups, G,
                      model, None if depth is None or depth < 0 else int(depth), seed)
    from ..workload.run import SUMMARY_VARS

    return {k: float(ds[k].values[0]) for k in SUMMARY_VARS} | {"n_jobs": int(ds.sizes["job"])}


def study_id(study: Mapping[str, Any]) -> str:
    """``<name>-<12 hex>``: a hash of the study's content (not its Ray settings or source path) and of the files it
    names, by content (its SWF trace and speedup tables): the same study after a table was recomputed is computed
    again, not answered by its finished dataset (until 2026-12-06 its stored points were reused)."""
    clean = {k: v for k, v in study.items() if not k.startswith("_") and k != "ray"}
    text = yaml.safe_dump(clean, sort_keys=True)
    files = _input_files(study)
    if files:  # (the ids of studies that name no file stay as they were)
        from ._inputs import _file_digest

        text += "\n" + "\n".join(_file_digest(f).hex() for f in files)
    digest = hashlib.sha1(text.encode()).hexdigest()[:12]
    return f"{study['name']}-{digest}"


def _input_files(study: Mapping[str, Any]) -> list[str]:
    """The files a study reads, each once, in a fixed order: its SWF trace and every machine's speedup tables."""
    files = []
    swf = (study.get("trace") or {}).get("swf")
    if isinstance(swf, (str, os.PathLike)) and os.path.isfile(swf):
        files.append(str(swf))
    for m in study.get("machines") or {}:
        for r in study.get("runs") or {}:
            sp = speedups_path(study, m, r)
            if isinstance(sp, str) and os.path.isfile(sp):
                files.append(sp)
    return list(dict.fromkeys(files))


def finished_study(out: str | os.PathLike[str], sid: str) -> Path | None:
    """The dataset the study ``sid`` wrote in ``out`` when it finished (``<UTC time>-<hash of sid>.nc``, the newest
    should there be several), else None. One that cannot be read is refused (StorageError naming it): its points
    went when it was written."""
    from ..errors import StorageError
    from ..io import content_key, run_name, run_time

    key = content_key(sid) + ".nc"
    try:
        names = sorted(e.name for e in os.scandir(out) if e.name.endswith("-" + key) and e.is_file()
                       and run_time(e.name) is not None and run_name(run_time(e.name), key) == e.name)
    except OSError:
        return None
    for name in reversed(names):
        path = Path(out) / name
        try:
            with xr.open_dataset(path, engine="h5netcdf") as ds:
                if ds.attrs.get("study_id") == sid:
                    return path
        except Exception as exc:  # noqa: BLE001 (netCDF and HDF5 word a damaged file in many ways)
            why = " ".join(str(exc).split())[:160] or type(exc).__name__
            raise StorageError(f"schedule study {sid}: it has finished, but its dataset {path} cannot be read "
                               f"({why}). Its points went when it was written: move the file away (or delete it) "
                               f"and rerun the same command to compute the study again. Nothing was computed.",
                               "dataset", str(path), "a readable dataset of this study") from None
    return None


def _stored(store: Path, points: list[tuple]) -> dict[tuple, dict]:
    """The points already computed (a file that is unreadable or names other labels is computed again)."""
    done = {}
    for i, p in enumerate(points):
        f = store / f"{i:06d}.json"
        try:
            rec = json.loads(f.read_text())
        except (OSError, ValueError):
            continue
        if tuple(rec.get("point", ())) == p and isinstance(rec.get("values"), dict):
            done[p] = rec["values"]
    return done


def _compute(study: Mapping[str, Any], todo: list, use_ray: bool, keep, bar) -> None:
    """Every point of ``todo`` computed (on Ray unless ``use_ray`` is False), each kept by ``keep(point,
    values)`` as it finishes; the waits are short steps, so that a signal stops them (:func:`stop_on_sigterm`),
    and points still running on Ray are left to finish when one does (not cancelled: see
    :func:`~evaluator.sweep.driver.run_sweep`'s end). No point finished for the study's ``ray.stall_timeout_s``
    (default :data:`~evaluator.sweep._wait.STALL_DEFAULT_S` seconds; null: no limit): the points outstanding are
    cancelled and :class:`~evaluator.sweep._wait.Stalled` is raised."""
    if not (use_ray and todo):
        for p in todo:
            keep(p, _point(study, *p))
            bar.update(1)
        return
    from ..config.schemas import RayConfig

    rc = study.get("ray") or {}
    ray = _ray_init(RayConfig(address=rc.get("address"), num_cpus=rc.get("num_cpus")))
    remote = ray.remote(max_retries=1)(_point)
    ref = ray.put(dict(study))
    pending = {remote.remote(ref, *p): p for p in todo}
    try:
        for p, values in finished(ray, pending, check_stall_timeout(rc.get("stall_timeout_s", STALL_DEFAULT_S))):
            keep(p, values)
            bar.update(1)
    except KeyboardInterrupt as exc:
        reraise_signalled(exc)  # the points still running are left to finish, not cancelled (as in run_sweep)


def run_study(study: Mapping[str, Any], use_ray: bool = True, progress: bool = True,
              out_dir: str | os.PathLike[str] | None = None) -> Path:
    """Run every point of ``study`` (on Ray unless ``use_ray`` is False) and write the dataset; return its path.

    A study not read by :func:`load_study` is checked first (:func:`check_study`); the output directory is made
    and probed for writing before any point runs (ConfigError naming it: nothing is computed)."""
    t0 = time.perf_counter()
    if not isinstance(study, Mapping):
        raise ConfigTypeError("study", type(study).__name__, "a study mapping (evaluator.sweep.schedule.load_study)")
    if not study.get("_checked"):
        study = check_study(dict(study))
    points = study_points(study)
    sid = study_id(study)
    out = Path(out_dir) if out_dir is not None else Path("results") / str(study["name"])
    store = out / f".{sid}.points"
    done = _done(out, store, study, sid)
    if done is not None:
        return done
    check_writable("--out", out)
    # one process at a time per study run (as a sweep's run): a second one ran beside it, and the first to finish
    # removed the points store under the other (FileNotFoundError in its next write)
    with _study_lock(out, study, sid):
        return _done(out, store, study, sid) or _run_locked(study, use_ray, progress, out, store, sid, points, t0)


def _done(out: Path, store: Path, study: Mapping[str, Any], sid: str) -> Path | None:
    """The dataset of ``study`` if it has finished (said on stderr), else None."""
    done = finished_study(out, sid)
    if done is not None:  # the same study, the same input files: its dataset, not a second copy (as a sweep's run)
        _finished_here(out, store)
        print(f"schedule study {study['name']}: {sid} has already finished; nothing to compute: {done}",
              file=sys.stderr)
    return done


def _study_lock(out: Path, study: Mapping[str, Any], sid: str):
    from ..errors import RunBusyError, StorageError
    from .store import RunLock

    path = out / f".{sid}.lock"
    return RunLock(path=path, busy=lambda holder: RunBusyError(
        f"schedule study {study['name']} ({sid}) is busy: {holder} is running it (lock {path}). Wait for it to "
        f"finish, or stop it and rerun to resume.", "--study", str(study["name"]),
        "a study no other live process is working on"),
        fail=lambda where, exc: StorageError(
            f"--out = {str(out)!r} is invalid: cannot write {where} ({exc.strerror or exc}); nothing was computed.",
            "--out", str(out), "a writable directory"))


def _run_locked(study, use_ray: bool, progress: bool, out: Path, store: Path, sid: str, points: list,
                t0: float) -> Path:
    """:func:`run_study` with its lock held, the study not finished."""
    _check_latest(out, study)
    check_writable("--out", store)
    results: dict[tuple, dict] = _stored(store, points)
    index = {p: i for i, p in enumerate(points)}

    def keep(p, values):
        results[p] = values
        write_json(store / f"{index[p]:06d}.json", {"point": list(p), "values": values})

    todo = [p for p in points if p not in results]
    bar = progress_bar(total=len(points), enabled=progress, initial=len(points) - len(todo), unit="pt",
                       desc=str(study["name"]))
    try:
        with stop_on_sigterm():  # Ctrl-C and SIGTERM stop the study at any moment, connecting to Ray included
            _compute(study, todo, use_ray, keep, bar)
    except KeyboardInterrupt:
        print(f"\nschedule study {study['name']}: interrupted; {len(results)} of {len(points)} points are kept in "
              f"{store}. Rerun the same command to resume.", file=sys.stderr)
        raise
    except Stalled as stall:
        raise stall_error(f"schedule study {study['name']}", stall.limit_s, "point", [
            "/".join(map(str, p)) for p in stall.outstanding], 0, f"{len(results)} of {len(points)} points are "
            f"kept in {store}", setting="ray: {{stall_timeout_s: {}}} in the study file") from None
    finally:
        bar.close()
    ds = _assemble(study, results)
    ds.attrs.update({"n_points": len(points), "study_id": sid, "n_computed": len(todo),
                     "wall_s": time.perf_counter() - t0, "ray": int(bool(use_ray))})
    path = write_dataset(ds, out, identity=sid)  # <UTC time>-<hash>.nc: an earlier result is never replaced
    shutil.rmtree(store, ignore_errors=True)  # every point is in the dataset now; a rerun finds the dataset
    return path


def _check_latest(out: Path, study: Mapping[str, Any]) -> None:
    """Before any point: ``out``'s ``latest`` must read a run of this study (or nothing): a study saved into a
    sweep's, an eval's or another study's directory took its ``latest`` over (until 2026-12-06); a ``latest`` of
    the user's own is said on stderr (:func:`evaluator.runs.check_latest_owner`)."""
    from ..runs import check_latest_owner

    name = str(study["name"])
    check_latest_owner(out, "evaluator schedule --study", "--out", str(out),
                       own=f"evaluator schedule --study (workload study {name})",
                       expected=f"a directory of the runs of workload study {name} (results/{name} by default), or "
                                f"one holding none",
                       new="this study's dataset", taken_by="the study saved there", instead="this study",
                       remedy="Give another --out DIR (or rename the study: its name is its directory under "
                              "results/ without --out).")


def _finished_here(out: Path, store: Path) -> None:
    """A finished study met again: the points a study killed after its final write left behind go, and ``latest``
    points at the newest result (as a finished sweep's rerun does); a directory it cannot write is left as it is."""
    from ..io import point_latest

    shutil.rmtree(store, ignore_errors=True)
    try:
        point_latest(out)
    except OSError:
        pass


def _assemble(study: Mapping[str, Any], results: dict[tuple, dict]) -> xr.Dataset:
    """The study's dataset from every point's scalars: dims ``(machine, mix, run)``, and ``seed`` last with
    ``seeds``; ``wait_reduction`` against the first run of the same machine, mix (and seed)."""
    from ..workload.run import SUMMARY_VARS, table_coords

    machines, mixes, runs = list(study["machines"]), list(study["mode_mixes"]), list(study["runs"])
    seeds = study_seeds(study)
    dims = ("machine", "mix", "run") + (("seed",) if seeds is not None else ())
    shape = (len(machines), len(mixes), len(runs)) + ((len(seeds),) if seeds is not None else ())
    data = {}
    for k, (units, long) in SUMMARY_VARS.items():
        arr = np.array([results[p][k] for p in study_points(study)]).reshape(shape)
        data[k] = (dims, arr, {"units": units, "long_name": long})
    mw = data["mean_wait"][1]
    with np.errstate(divide="ignore", invalid="ignore"):
        red = np.where(mw[:, :, :1] > 0, 1.0 - mw / mw[:, :, :1], np.nan)
    data["wait_reduction"] = (dims, red, {"units": "1", "long_name": f"1 - mean wait / mean wait of run {runs[0]!r}"
                                                                     + (" on the same seed" if seeds else "")})
    from ..workload.run import table_coords

    tabs = {k: np.stack([table_coords([_table(study, m, r) for r in runs])[k] for m in machines])
            for k in ("speedup_table", "speedup_table_machine", "speedup_table_baseline")}
    ds = xr.Dataset(data, coords={
        "machine": ("machine", np.asarray(machines, dtype=str)), "mix": ("mix", np.asarray(mixes, dtype=str)),
        "run": ("run", np.asarray(runs, dtype=str)),
        "groups": ("machine", np.array([study["machines"][m][0] for m in machines])),
        "nodes_per_group": ("machine", np.array([study["machines"][m][1] for m in machines])),
        "policy": ("run", np.asarray([study["runs"][r]["policy"] for r in runs], dtype=str)),
        **({"seed": ("seed", np.asarray(seeds, dtype=np.int64))} if seeds is not None else {}),
        **{k: (("machine", "run"), v) for k, v in tabs.items()}})
    clean = {k: v for k, v in study.items() if not k.startswith("_")}
    ds.attrs.update({"study": str(study["name"]), "config": yaml.safe_dump(clean, sort_keys=False),
                     "source": str(study.get("_source", ""))})
    return ds


def study_table(ds: xr.Dataset) -> str:
    """A study dataset as a table for people: one row per (machine, mix, run) with its policy, the mean and 95th
    percentile wait, the wait reduction against the first run of the same machine and mix (%), and the mean
    utilisation (%); times in one display unit (:func:`evaluator.display.format_table`). With a ``seed``
    dimension (``seeds``): each the mean over the seeds, and the wait reduction's range over them."""
    import pandas as pd

    from ..display import format_table

    seeds = "seed" in ds.dims
    rows = []
    for m in ds.machine.values:
        for x in ds.mix.values:
            for r in ds.run.values:
                pt = ds.sel(machine=m, mix=x, run=r)
                red = pt.wait_reduction.values.reshape(-1)
                text = "n/a" if not np.isfinite(red).all() else f"{100 * red.mean():+.1f}%"
                if seeds and np.isfinite(red).all() and r != ds.run.values[0]:
                    text += f" [{100 * red.min():+.1f}%, {100 * red.max():+.1f}%]"
                rows.append({"machine": str(m), "mix": str(x), "run": str(r), "policy": str(pt.policy.values),
                             "mean_wait": float(pt.mean_wait.mean()), "p95_wait": float(pt.p95_wait.mean()),
                             "wait reduction": text,
                             "utilisation": f"{100 * float(pt.mean_utilisation.mean()):.1f}%",
                             "mean_speedup": float(pt.mean_speedup.mean())})
    df = pd.DataFrame(rows).set_index(["machine", "mix", "run"])
    df.attrs["units"] = {"mean_wait": "s", "p95_wait": "s", "mean_speedup": "1"}
    table = format_table(df)
    if seeds:
        table += (f"\n(mean over the {ds.sizes['seed']} seeds {int(ds.seed[0])} .. {int(ds.seed[-1])}: trace, mode "
                  f"draws and policies; wait reduction: mean [min, max] over them, each seed against its own first "
                  f"run)")
    return table
