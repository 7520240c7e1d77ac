"""Runs under ``results/``: list them, and find one by its study's name.

Every command writes its datasets into a directory of ``results/`` (``evaluator sweep`` into
``results/<study>/``, ``eval`` into ``results/eval/``, ``tiles`` into ``results/tiles/``, ``partitions`` into
``results/partitions/<machine>/``, ``schedule`` into ``results/schedule/``) under a name that says when the run
started, ``<UTC time>-<hash>.nc`` (or ``.zarr``), with ``latest`` next to them pointing at the newest
(:func:`evaluator.io.run_name`, :func:`evaluator.io.point_latest`). The directory, relative to the results
directory, is the run's *study*.

* :func:`list_runs`: every dataset under a results directory, newest first, described from its attributes
  (opened lazily: no variable is read);
* :func:`resolve`: what ``query`` and ``plot`` take: a dataset's path, a study name (its latest run),
  ``STUDY/latest``, or a glob that matches one dataset.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import glob as _glob
import json
import math
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from .errors import ConfigError, WordedError, cause_text
from .io import LATEST, run_time

if TYPE_CHECKING:
    import xarray as xr

__all__ = ["Run", "RESULTS_DIR", "list_runs", "describe", "resolve", "runs_table", "latest", "refuse_unfinished",
           "feasible_lost", "unreadable_chunk", "dataset_kind", "dataset_kind_at", "check_latest_owner"]

RESULTS_DIR = "results"
"""Where the commands write by default (relative to the working directory)."""

_SUFFIXES = (".nc", ".zarr")
_GLOB_CHARS = set("*?[")


@dataclasses.dataclass(frozen=True)
class Run:
    """One dataset under a results directory."""

    study: str
    """Its directory relative to the results directory (``dragonfly_nne_placement``, ``eval``,
    ``partitions/mira``)."""
    time: _dt.datetime | None
    """When it started (UTC): from its name, else its ``start_time`` or ``created`` attribute."""
    points: int | None
    """Design points (a sweep's ``n_points``; else the entries of its first rankable variable)."""
    feasible: int | None
    """Feasible points (a sweep's ``n_feasible``); None where the dataset does not say."""
    axes: tuple[tuple[str, int], ...]
    """``(name, size)`` of its axes (a sweep's axes; else the dimensions of its first rankable variable)."""
    path: Path
    error: str = ""
    """Why it could not be read (then only ``study``, ``time`` and ``path`` are known)."""


def _is_dataset_name(name: str) -> bool:
    return not name.startswith(".") and name.endswith(_SUFFIXES)


def _datasets(root: Path) -> Iterator[Path]:
    """Every ``.nc`` file and ``.zarr`` store under ``root``, hidden directories (a sweep's chunks) left out;
    symbolic links (``latest``) are not followed."""
    for d, dirs, files in os.walk(root):
        here = Path(d)
        keep = []
        for name in dirs:
            if name.startswith("."):
                continue
            if name.endswith(".zarr"):
                if not (here / name).is_symlink():
                    yield here / name
                continue
            keep.append(name)
        dirs[:] = sorted(keep)
        for name in sorted(files):
            if _is_dataset_name(name) and not (here / name).is_symlink():
                yield here / name


def _parse_iso(text) -> _dt.datetime | None:
    try:
        t = _dt.datetime.fromisoformat(str(text))
    except ValueError:
        return None
    return t.replace(tzinfo=_dt.timezone.utc) if t.tzinfo is None else t.astimezone(_dt.timezone.utc)


def _study(path: Path, root: Path) -> str:
    try:
        rel = path.parent.relative_to(root)
    except ValueError:
        return str(path.parent)
    return "" if str(rel) == "." else rel.as_posix()


def _open_lazily(path: Path):
    import warnings

    import xarray as xr

    with warnings.catch_warnings():  # a store of another writer (no consolidated metadata): only its attributes
        warnings.simplefilter("ignore")  # are read here, whatever it costs
        if path.is_dir():
            return xr.open_dataset(path, engine="zarr", chunks=None, decode_times=False)
        return xr.open_dataset(path, engine="h5netcdf", decode_times=False, cache=False)


def describe(path: str | os.PathLike[str], root: str | os.PathLike[str] = RESULTS_DIR) -> Run:
    """A :class:`Run` for the dataset at ``path`` (its attributes and dimensions; no variable is read)."""
    path, root = Path(path), Path(root)
    study = _study(path, root)
    when = run_time(path.name)
    try:
        ds = _open_lazily(path)
    except Exception as exc:  # a damaged or foreign file is listed, with the reason
        if when is None:
            when = _dt.datetime.fromtimestamp(path.stat().st_mtime, _dt.timezone.utc)
        return Run(study, when, None, None, (), path, error=f"unreadable ({type(exc).__name__})")
    with ds:
        attrs = ds.attrs
        if when is None:
            when = _parse_iso(attrs.get("start_time", attrs.get("created", "")))
        if when is None:
            when = _dt.datetime.fromtimestamp(path.stat().st_mtime, _dt.timezone.utc)
        feasible = int(attrs["n_feasible"]) if "n_feasible" in attrs else None
        if "axes_json" in attrs and "n_points" in attrs:  # a sweep
            names = [a["name"] for a in json.loads(attrs["axes_json"])]
            axes = tuple((n, int(ds.sizes.get(n, 0))) for n in names)
            points = int(attrs["n_points"])
        else:
            from .dataset import first_rankable

            name = first_rankable(ds)
            if name is not None:
                dims = ds[name].dims
                axes = tuple((str(d), int(ds.sizes[d])) for d in dims)
                points = math.prod(n for _, n in axes)
            else:
                axes, points = tuple((str(d), int(n)) for d, n in ds.sizes.items()), None
    return Run(study, when, points, feasible, axes, path)


def list_runs(results_dir: str | os.PathLike[str] = RESULTS_DIR, study: str | None = None) -> list[Run]:
    """Every dataset under ``results_dir`` (of ``study`` and the studies below it, if given), newest first."""
    root = Path(results_dir)
    top = root / study if study else root
    runs = [describe(p, root) for p in _datasets(top)] if top.is_dir() else []
    runs += _unfinished(top, root) if top.is_dir() else []
    oldest = _dt.datetime.min.replace(tzinfo=_dt.timezone.utc)
    return sorted(runs, key=lambda r: (r.time or oldest, _mtime(r.path), r.path.name), reverse=True)


def _mtime(p: Path) -> int:
    try:
        return p.stat().st_mtime_ns
    except OSError:
        return 0


def _unfinished(top: Path, root: Path) -> list[Run]:
    """Sweeps stopped before their dataset was written: their chunk stores (``.<run id>.chunks/``)."""
    out = []
    for manifest in sorted(top.glob("**/.*.chunks/manifest.json")):
        d = manifest.parent
        try:
            start = _parse_iso(json.loads(manifest.read_text()).get("start_time", ""))
        except (OSError, ValueError):
            start = None
        n = sum(1 for _ in d.glob("*.pkl"))
        out.append(Run(_study(d, root), start, None, None, (), d,
                       error=f"unfinished: {n} chunk(s) kept; the same command resumes it"))
    return out


def studies(results_dir: str | os.PathLike[str] = RESULTS_DIR) -> list[str]:
    """The studies (directories holding datasets) under ``results_dir``, sorted."""
    root = Path(results_dir)
    return sorted({_study(p, root) for p in _datasets(root)} - {""}) if root.is_dir() else []


def _axes_text(axes: Sequence[tuple[str, int]]) -> str:
    return " x ".join(f"{n}[{s}]" for n, s in axes) or "-"


def runs_table(runs: Sequence[Run]):
    """``runs`` as a :class:`pandas.DataFrame` of text (study, time, points, feasible, axes, path)."""
    import pandas as pd

    rows = []
    for r in runs:
        rows.append({"study": r.study or ".",
                     "time (UTC)": r.time.strftime("%Y-%m-%d %H:%M:%S") if r.time else "-",
                     "points": "-" if r.points is None else str(r.points),
                     "feasible": "-" if r.feasible is None else str(r.feasible),
                     "axes": r.error or _axes_text(r.axes),
                     "path": str(r.path)})
    df = pd.DataFrame(rows, columns=["study", "time (UTC)", "points", "feasible", "axes", "path"])
    df.index = pd.RangeIndex(1, len(df) + 1)
    return df


# ----------------------------------------------------------------------------------------------------------
# resolve: a path, a study name, STUDY/latest or a glob -> one dataset
# ----------------------------------------------------------------------------------------------------------

_ALLOWED = ("a results dataset (.nc file or .zarr store), a study name under the results directory for its "
            "latest run, STUDY/latest, or a glob that matches one dataset")


def _is_zarr_store(p: Path) -> bool:
    return p.is_dir() and any((p / m).exists() for m in ("zarr.json", ".zgroup", ".zmetadata", ".zattrs"))


def _read_latest(link: Path) -> Path:
    """The dataset ``<dir>/latest`` points at (a symbolic link, or a text file holding its name)."""
    if link.is_symlink():
        target = link.parent / os.readlink(link)
    else:
        try:
            with open(link, "rb") as fh:
                head = fh.read(4097)
        except OSError as exc:
            raise ConfigError("path", str(link), _ALLOWED, f"It cannot be read ({exc.strerror or exc}).") from None
        text = head.decode(errors="replace").strip()
        if len(head) > 4096 or not text or "\n" in text or "/" in text or "\0" in text:
            return link  # not a name: a file of another kind, for open_results to judge
        target = link.parent / text
    if not target.exists():
        raise ConfigError("path", str(link), _ALLOWED,
                          f"It points at {target.name}, which no longer exists; `evaluator runs "
                          f"{link.parent.name} --results {link.parent.parent}` lists what is there.")
    return target


def latest(directory: str | os.PathLike[str]) -> Path | None:
    """The newest dataset of a study directory: what ``latest`` points at, else the newest dataset directly in
    it (by the time in its name or attributes); None if it holds none."""
    d = Path(directory)
    link = d / LATEST
    if link.exists() or link.is_symlink():
        return _read_latest(link)
    here = [p for p in d.iterdir() if _is_dataset_name(p.name) and (p.is_file() or _is_zarr_store(p))] \
        if d.is_dir() else []
    if not here:
        return None
    if len(here) == 1:
        return here[0]
    oldest = _dt.datetime.min.replace(tzinfo=_dt.timezone.utc)
    return max(here, key=lambda p: (describe(p, d).time or oldest, p.name))


_NOT_EVAL = ("sweep", "axes_json", "study", "study_id", "kind")
"""Attributes that a dataset of another command holds and ``evaluator eval``'s never does."""


def dataset_kind(ds: xr.Dataset) -> str:
    """Which command wrote ``ds``, in words, from its dimensions and attributes (no variable is read):
    ``"evaluator eval"``, ``"evaluator sweep (sweep NAME)"``, ``"evaluator schedule --study (workload study
    NAME)"``, ``"evaluator schedule"``, ``"evaluator study rdn (machine M)"``, a speedup table, ``"evaluator
    map"``, ``"evaluator tiles"``, ``"evaluator partitions --slabs (machine M)"``, ...; ``""`` where it cannot tell
    (a dataset of the user's own, or of a command not listed here)."""
    attrs, dims = ds.attrs, set(ds.dims)
    if "sweep" in attrs or "axes_json" in attrs:
        return f"evaluator sweep (sweep {attrs.get('sweep', '?')})"
    if "study_id" in attrs:
        return f"evaluator schedule --study (workload study {attrs.get('study', '?')})"
    if {"run", "job"} <= dims:
        return "evaluator schedule"
    if "rdn_routing" in attrs:
        if {"pattern", "groups"} <= dims:
            return f"evaluator study rdn (machine {attrs.get('machine', '?')})"
        if "speedup" in ds.data_vars:
            return f"evaluator study rdn --speedup-out (a speedup table, machine {attrs.get('machine', '?')})"
    if "study" in attrs:
        return f"evaluator study {attrs['study']}"
    if attrs.get("kind") == "mapping":
        return "evaluator map"
    if str(attrs.get("title", "")).startswith("evaluator tiles"):
        return "evaluator tiles"
    if attrs.get("created_by") == "evaluator.partitions" or "benchmark" in attrs and "comparison" in attrs:
        if "machines" in attrs:
            return "evaluator partitions --compare"
        machine = attrs.get("machine", "?")
        if "benchmark" in attrs:
            return f"evaluator partitions --pairing (machine {machine})"
        return f"evaluator partitions {'--slabs ' if 'slab' in dims else ''}(machine {machine})"
    if "config_yaml" in attrs and "topology" in attrs and not set(_NOT_EVAL) & set(attrs):
        return "evaluator eval"
    return ""


def dataset_kind_at(path: str | os.PathLike[str]) -> str | None:
    """:func:`dataset_kind` of the dataset at ``path`` (opened lazily); None where it cannot be read."""
    try:
        ds = _open_lazily(Path(path))
    except Exception:  # noqa: BLE001 (a damaged or foreign file: its kind is unknown)
        return None
    with ds:
        return dataset_kind(ds)


def _owns(kind: str, own: Sequence[str]) -> bool:
    """Whether ``kind`` (:func:`dataset_kind`) is one of ``own``: the same words, or those followed by what they
    say in parentheses (``"evaluator study rdn"`` owns ``"evaluator study rdn (machine M)"``)."""
    return any(kind == k or kind.startswith(k + " (") for k in own)


def check_latest_owner(directory: str | os.PathLike[str], command: str, option: str, value: str | None = None, *,
                       own: str | Sequence[str], expected: str, new: str, taken_by: str, instead: str,
                       remedy: str) -> None:
    """Before a command computes a dataset it will write into ``directory`` and point ``<directory>/latest`` at
    (what ``evaluator query DIR``, ``plot DIR`` and ``open_results`` read), every saving command calls this:

    * where ``latest`` there is a file or directory of the user's own (:func:`evaluator.io.foreign_latest`, left
      as it is by :func:`~evaluator.io.point_latest`), say so on stderr, ``"<command>: warning: ..."`` (the new
      dataset is written; ``latest`` will not point at it);
    * where the dataset ``latest`` reads (:func:`latest`) is not of the command's ``own`` kinds (:func:`dataset_kind`
      in words: the same words, or those followed by a parenthesis; an unreadable one, or one no evaluator command
      wrote, such as a netCDF file of the user's own, is let through), refuse with a
      :class:`~evaluator.errors.ConfigError` naming ``option`` and ``value`` (``directory`` by default): the new
      dataset would take that directory's ``latest`` over, and the next query of the other command's study would
      read it instead. A directory holding no dataset, or a ``latest`` whose dataset is gone, is the command's to
      take.

    ``expected``: what ``option`` should be (``"a directory of evaluator eval's own datasets ..."``); ``new``: the
    new dataset, for the warning (``"this evaluation's dataset"``); ``taken_by``: what would take ``latest`` over
    (``"an eval saved there"``); ``instead``: what the next query would read (``"the one point"``); ``remedy``:
    the sentence that says what to give instead. Each command says what its own kind is; none switches on
    another's. Nothing is written."""
    import sys

    from .io import foreign_latest

    d = Path(directory)
    value = str(directory) if value is None else value
    mine = foreign_latest(d)
    if mine is not None:
        print(f"{command}: warning: {option} = {value!r}: {mine} is a "
              f"{'directory' if mine.is_dir() else 'file'} of your own, not the link evaluator writes: it is left as "
              f"it is and will not point at {new} (its path is printed at the end)", file=sys.stderr, flush=True)
        return
    try:
        current = latest(d)
    except (ConfigError, OSError):  # a link to a dataset that is gone (or a directory it cannot list): taken over
        return
    kind = None if current is None else dataset_kind_at(current)
    # none, unreadable, not an evaluator command's (a user's own netCDF file: no study of ours to lose), or own
    if not kind or _owns(kind, (own,) if isinstance(own, str) else tuple(own)):
        return
    raise ConfigError(option, value, expected,
                      f"evaluator query {d} reads {current}, the dataset of {kind}; {taken_by} would take "
                      f"{d / LATEST} over and the next query would read {instead} instead. {remedy} Nothing was "
                      f"computed.")


def _several(paths: Sequence[str], given: str, root: Path) -> ConfigError:
    shown = ", ".join(paths[:6]) + (f", ... ({len(paths)} in all)" if len(paths) > 6 else "")
    dirs = sorted({_study(Path(p), root) or str(Path(p).parent) for p in paths})
    which = " or ".join(dirs[:3]) if dirs else "STUDY"
    return ConfigError("path", given, "one dataset: " + _ALLOWED,
                       f"It matches {len(paths)} datasets: {shown}. Name one of them, or give the study name "
                       f"({which}) or {dirs[0] if dirs else 'STUDY'}/latest for its newest run; "
                       f"`evaluator runs` lists them.")


def _at(p: Path, given: str, root: Path) -> Path:
    """The dataset an existing path stands for: itself, what ``latest`` points at, or a study's newest."""
    if p.name == LATEST and (p.is_symlink() or p.is_file()):
        return _read_latest(p)
    if p.is_dir() and not _is_zarr_store(p):
        if (p / LATEST).exists() or (p / LATEST).is_symlink() or any(_is_dataset_name(c.name) for c in p.iterdir()):
            found = latest(p)
            if found is not None:
                return found
    return p  # a dataset, or something open_results explains


def resolve(arg: str | os.PathLike[str] | Sequence[str], results_dir: str | os.PathLike[str] = RESULTS_DIR) -> Path:
    """The one dataset ``arg`` names: a path to a dataset (returned as given), a study's directory or name
    (``dragonfly_nne_placement``, resolved under ``results_dir``: its latest run), ``STUDY/latest``, or a glob
    that matches one dataset. A glob that matches several (also when the shell expanded it: ``arg`` is then a
    list of paths) is a :class:`~evaluator.errors.ConfigError` listing them and suggesting the study name or
    ``latest``; so is a name that is neither a path nor a study."""
    root = Path(results_dir)
    explicit = isinstance(arg, os.PathLike)  # (a Path: a path already, e.g. what resolve returned, not a name)
    args = [str(arg)] if isinstance(arg, (str, os.PathLike)) else [str(a) for a in arg]
    if not args:
        raise ConfigError("path", "", _ALLOWED)
    if len(args) > 1:  # a glob the shell expanded: the datasets among the paths, not latest or plots
        found = [a for a in args if Path(a).name != LATEST and a.rstrip("/").endswith(_SUFFIXES)]
        missing = [a for a in args if not (Path(a).exists() or Path(a).is_symlink())]
        if missing:  # a glob the shell expanded lists files that exist: a study name or a path that is not there
            # beside another is a second dataset asked for, which would be left unread
            there = [a for a in args if a not in missing]
            raise ConfigError("path", " ".join(args), "one dataset",
                              (f"{', '.join(map(repr, missing))}: no such file (beside {', '.join(map(repr, there))})"
                               if there else f"{len(args)} names") +
                              ": give one dataset or study at a time (a glob the shell expands may list plots and "
                              "`latest` beside one dataset).")
        if len(found) != 1:
            raise _several(found or args, f"{args[0]} ... ({len(args)} paths)", root)
        args = found
    given = args[0]
    p = Path(given)
    if not (p.exists() or p.is_symlink()) and _GLOB_CHARS & set(given):
        matches = sorted(_glob.glob(given)) or sorted(_glob.glob(str(root / given)))
        # the latest links beside the datasets a glob matches are not more datasets; a glob of latest links
        # (results/*/latest) asks for them (it "matched nothing" until 2026-12-06)
        wants_latest = Path(given).name == LATEST
        matches = [m for m in matches if (Path(m).name == LATEST) == wants_latest]
        matches = [m for m in matches if m.endswith(_SUFFIXES)] or matches  # not the plots beside them
        if len(matches) > 1:
            raise _several(matches, given, root)
        if not matches:
            raise ConfigError("path", given, _ALLOWED, f"The glob matches nothing. {_known(root)}")
        p = Path(matches[0])
    q = root / given
    if not explicit and "/" not in given and str(p) == given and (p.exists() or p.is_symlink()) \
            and (q.exists() or q.is_symlink()) and not _same(p, q):
        # a bare name that is both here and a study: which one was meant is not for this command to guess (a
        # directory ./rdn shadowed the study rdn until 2026-12-06, with "not a zarr store")
        raise ConfigError("path", given, _ALLOWED,
                          f"{given!r} names two things: ./{given} in this directory and the study {q} under the "
                          f"results directory. Say which: ./{given} for the one here, {q} for the study's latest "
                          f"run.")
    if p.exists() or p.is_symlink():
        return _at(p, given, root)
    if not p.is_absolute() and (q.exists() or q.is_symlink()):
        return _at(q, given, root)
    if p.suffix in _SUFFIXES or p.is_absolute() or len(p.parts) > 2:
        return p  # a dataset's path: open_results says it does not exist
    raise ConfigError("path", given, _ALLOWED, f"No such file, directory or study. {_known(root)}")


def _same(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve() or os.path.samefile(a, b)
    except OSError:
        return False


def _known(root: Path) -> str:
    known = studies(root)
    if not known:
        return f"There are no runs under {root}/ yet (--results DIR: another results directory)."
    shown = ", ".join(known[:12]) + (", ..." if len(known) > 12 else "")
    return f"Studies under {root}/: {shown}."


# what is wrong with a results store that query and plot cannot read (evaluator.query.open_results)

def refuse_unfinished(p: Path, written_by: str) -> None:
    """Refuse a directory that holds a sweep's chunks but no dataset (the sweep stopped before writing it; or
    the chunk directory itself), saying so and how to resume, instead of "not a zarr store"."""
    stores = [p] if (p.name.startswith(".") and p.name.endswith(".chunks") and (p / "manifest.json").exists()) \
        else sorted(m.parent for m in p.glob(".*.chunks/manifest.json"))
    if not stores:
        return
    runs = []
    for d in stores:
        try:
            run_id = json.loads((d / "manifest.json").read_text()).get("run_id") or d.name[1:-len(".chunks")]
        except (OSError, ValueError, AttributeError):
            run_id = d.name[1:-len(".chunks")]
        runs.append(f"run {run_id} ({sum(1 for _ in d.glob('*.pkl'))} chunk file(s) of its points kept in {d})")
    raise WordedError(f"{p} holds no dataset yet: the sweep is unfinished, stopped before writing its dataset: "
                      f"{'; '.join(runs)}. Rerun the same `evaluator sweep` command (the same sweeps= and "
                      f"overrides) to resume it: it computes only the points not kept and writes the dataset that "
                      f"query and plot read; `evaluator runs` lists it as unfinished.", "path", str(p), written_by)


def feasible_lost(p: Path, ds: xr.Dataset) -> str | None:
    """A sweep's store (one without :data:`~evaluator.io.ZARR_FILES`, written before 2026-12-06) whose ``feasible``
    counts fewer points than the run recorded (``n_feasible``): zarr read a lost chunk file as False. In words
    naming the missing files, else None."""
    if "feasible" not in ds.data_vars or "n_feasible" not in ds.attrs:
        return None
    ok = ds["feasible"].fillna(False).astype(bool)
    if "completion_time" in ds.data_vars and ds["completion_time"].dims == ok.dims:
        lost = int((ok & ds["completion_time"].isnull()).sum())  # a sweep's feasible point always has its time
        if lost:
            d = p / "completion_time"
            on_disk = sorted(f.name for f in d.iterdir() if not f.name.startswith(".")) if d.is_dir() else []
            return (f"its variable completion_time ({d}) has no value at {lost} feasible point(s): a chunk file of "
                    f"it is missing (chunk files there: {', '.join(on_disk) or 'none'})")
    try:
        recorded, got = int(ds.attrs["n_feasible"]), int(ds["feasible"].fillna(False).astype(bool).sum())
    except (TypeError, ValueError):
        return None
    if recorded == got:
        return None
    on_disk = sorted(f.name for f in (p / "feasible").iterdir() if not f.name.startswith(".")) \
        if (p / "feasible").is_dir() else []
    return (f"its variable feasible ({p / 'feasible'}) reads {got} feasible points where the run recorded "
            f"{recorded} (n_feasible): a chunk file of it is missing or changed (chunk files there: "
            f"{', '.join(on_disk) or 'none'})")


def unreadable_chunk(p: Path) -> str | None:
    """The first chunk file of the zarr store ``p`` that zarr cannot decode, in words (None: none found)."""
    import itertools

    import zarr

    try:
        group = zarr.open_group(str(p), mode="r")
        arrays = list(group.arrays())
    except Exception:  # noqa: BLE001 (the caller says the store could not be read)
        return None
    for name, arr in arrays:
        try:
            arr[...]
        except Exception as exc:  # noqa: BLE001
            why = f"{type(exc).__name__}: {cause_text(exc)}"
            try:
                sep = getattr(arr.metadata, "dimension_separator", None) or "."
                grid = [range(-(-n // max(c, 1))) for n, c in zip(arr.shape, arr.chunks)]
                for idx in itertools.product(*grid):
                    try:
                        arr.blocks[idx] if idx else arr[...]
                    except Exception:  # noqa: BLE001
                        key = sep.join(str(i) for i in idx) if idx else "0"
                        return f"its chunk file {p / name / key} cannot be decoded ({why})"
            except Exception:  # noqa: BLE001
                pass
            return f"the files of its variable {name} ({p / name}) cannot be decoded ({why})"
    return None
