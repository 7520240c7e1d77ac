"""Several ``evaluator`` processes on one machine share files on disk: the Hydra composition memo
(:mod:`evaluator.config.hydra.disk_memo`), the program store (:mod:`evaluator._program_store`) and the results
directories (:mod:`evaluator.io`: ``write_json``, ``write_zarr``, ``write_dataset`` and the ``latest`` link).

Each test here runs real concurrent writers (forked processes) on the same key or path for about a second, with
readers in between, and checks every read against what the writers wrote (a SHA-256 carried in the payload,
recomputed here), the final file, and that no temporary file is left behind. Damaged entries (garbage, truncated,
another key's) must read as a miss.
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing as mp
import os
import pickle
import time
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from evaluator import _program_store as PS
from evaluator import io
from evaluator.config.hydra import disk_memo as DM

HAMMER_S = 0.8
CTX = mp.get_context("forkserver")  # children forked from a server without JAX's threads (not from pytest's)
CTX.set_forkserver_preload(["evaluator.io", "evaluator._program_store", "evaluator.config.hydra.disk_memo",
                            "xarray", "h5netcdf"])


def _payload(writer: int, size: int = 150_000) -> dict:
    """A payload that names its writer and carries the digest of its bytes."""
    blob = np.random.default_rng(writer).integers(0, 256, size, dtype=np.uint8).tobytes()
    return {"writer": writer, "blob": blob, "sha": hashlib.sha256(blob).hexdigest()}


def _valid(obj, writers: range) -> bool:
    """Whether ``obj`` is one writer's payload, whole: its bytes hash to the digest and are that writer's."""
    return (isinstance(obj, dict) and obj.get("writer") in writers
            and hashlib.sha256(obj["blob"]).hexdigest() == obj["sha"] == _payload(obj["writer"])["sha"])


def _temps(d: Path) -> list[str]:
    return sorted(p.name for p in d.rglob("*") if p.name.endswith(".tmp") or p.name.startswith(".tmp-"))


def _run(fn, args_list):
    with CTX.Pool(len(args_list)) as pool:
        return pool.starmap(fn, args_list)


# ----------------------------------------------------------------------------------------------------------
# the composition memo and the program store: same key, several writers and readers
# ----------------------------------------------------------------------------------------------------------

def _point_at(mod_name: str, d: Path, max_entries: int | None = None):
    """Point the memo (``memo``) or the program store at ``d`` (in this process)."""
    mod = DM if mod_name == "memo" else PS
    setattr(mod, "memo_dir" if mod is DM else "store_dir", lambda: Path(d))
    if max_entries is not None:
        mod.MAX_ENTRIES = max_entries
    return mod


def _store_worker(mod_name: str, d: str, role: str, i: int, keys: list[str], writers: range):
    mod = _point_at(mod_name, Path(d), 2)  # three keys: entries evicted while others read them
    hits = misses = 0
    bad = []
    mine = _payload(i)
    t0 = time.monotonic()
    while time.monotonic() - t0 < HAMMER_S:
        for k in keys:
            if role == "w":
                assert mod.save(k, mine)
            got = mod.load(k)
            if got is None:
                misses += 1
                continue
            if mod is PS:  # the store adds its own fields
                got = {f: got.get(f) for f in ("writer", "blob", "sha")}
            if _valid(got, writers):
                hits += 1
            else:
                bad.append(repr(got)[:80])
    return hits, misses, bad


@pytest.mark.parametrize("which", ["memo", "programs"])
def test_concurrent_writers_and_readers_of_one_key(which, tmp_path, monkeypatch):
    d = tmp_path / which
    monkeypatch.setattr(DM, "memo_dir", lambda: d)
    monkeypatch.setattr(PS, "store_dir", lambda: d)
    keys = ["k0", "k1", "k2"]
    writers = range(3)
    out = _run(_store_worker, [(which, str(d), "w", i, keys, writers) for i in writers]
               + [(which, str(d), "r", 9, keys, writers) for _ in range(2)])
    assert [b for _, _, b in out] == [[]] * 5  # every read a miss or one writer's whole payload
    assert sum(h for h, _, _ in out[3:]) > 0  # the readers did read entries
    assert _temps(d) == []
    left = [k for k in keys if (DM.load(k) if which == "memo" else PS.load(k)) is not None]
    assert 1 <= len(left) <= 2


def test_a_damaged_memo_entry_reads_as_a_miss(tmp_path, monkeypatch):
    monkeypatch.setattr(DM, "memo_dir", lambda: tmp_path)
    cfg = {"routing": {"kind": "dor"}, "n": 64}
    assert DM.save("aa", cfg) and DM.save("bb", {"other": True})
    assert DM.load("aa") == cfg
    good = (tmp_path / "aa.pkl").read_bytes()
    damaged = {
        "truncated": good[: len(good) // 2],
        "garbage": b"\x80\x05 not a pickle at all",
        "empty": b"",
        "another key's entry": (tmp_path / "bb.pkl").read_bytes(),  # a copied or misplaced file
        "the old format (the composition alone)": pickle.dumps({"other": True}),
        "a pickle of no entry": pickle.dumps(42),
    }
    for what, data in damaged.items():
        (tmp_path / "aa.pkl").write_bytes(data)
        assert DM.load("aa") is None, what  # composed afresh, never the other key's composition
    assert DM.save("aa", cfg) and DM.load("aa") == cfg  # stored again over the damaged file


def test_a_damaged_program_entry_reads_as_a_miss(tmp_path, monkeypatch):
    monkeypatch.setattr(PS, "store_dir", lambda: tmp_path)
    entry = {"program": b"x" * 1000, "peak": 123}
    assert PS.save("aa", entry) and PS.save("bb", {"program": b"y", "peak": 1})
    assert PS.load("aa")["peak"] == 123
    good = (tmp_path / "aa.program").read_bytes()
    for data in (good[:-7], b"garbage", b"", (tmp_path / "bb.program").read_bytes(), pickle.dumps(entry)):
        (tmp_path / "aa.program").write_bytes(data)
        assert PS.load("aa") is None


@pytest.mark.parametrize("which", ["memo", "programs"])
def test_no_temporary_file_outlives_its_writer(which, tmp_path, monkeypatch):
    """A failed write removes its temporary file; one a killed writer left (an hour old) goes at the next store,
    while a fresh one (another process's write in flight) stays."""
    if which == "memo":
        monkeypatch.setattr(DM, "memo_dir", lambda: tmp_path)
        mod, old, fresh = DM, tmp_path / ".k.abc123.tmp", tmp_path / ".k.def456.tmp"
    else:
        monkeypatch.setattr(PS, "store_dir", lambda: tmp_path)
        mod, old, fresh = PS, tmp_path / ".tmp-abc123.program", tmp_path / ".tmp-def456.program"
    assert not mod.save("k", {"cannot be pickled": lambda: 0})
    assert _temps(tmp_path) == []
    old.write_bytes(b"half")
    fresh.write_bytes(b"half")
    os.utime(old, (time.time() - 2 * 3600,) * 2)
    assert mod.save("k", {"a": 1})
    assert _temps(tmp_path) == [fresh.name]


# ----------------------------------------------------------------------------------------------------------
# results files: write_json (atomic_write), write_zarr
# ----------------------------------------------------------------------------------------------------------

def _json_worker(path: str, role: str, i: int, writers: range):
    bad, hits = [], 0
    text = {"writer": i, "values": list(range(i, i + 20000)), "sha": None}
    text["sha"] = hashlib.sha256(json.dumps(text["values"]).encode()).hexdigest()
    t0 = time.monotonic()
    while time.monotonic() - t0 < HAMMER_S:
        if role == "w":
            io.write_json(path, text)
        try:
            with open(path) as fh:
                got = json.load(fh)
        except FileNotFoundError:
            continue
        except ValueError as exc:  # a half-written file
            bad.append(str(exc)[:80])
            continue
        w = got.get("writer")
        ok = (w in writers and got["values"] == list(range(w, w + 20000))
              and hashlib.sha256(json.dumps(got["values"]).encode()).hexdigest() == got["sha"])
        hits += ok
        if not ok:
            bad.append(repr(got)[:80])
    return hits, bad


def test_json_results_written_concurrently_are_always_whole(tmp_path):
    path = tmp_path / "out" / "summary.json"
    writers = range(3)
    out = _run(_json_worker, [(str(path), "w", i, writers) for i in writers] + [(str(path), "r", 9, writers)])
    assert [b for _, b in out] == [[]] * 4 and out[3][0] > 0
    assert json.loads(path.read_text())["writer"] in writers
    assert _temps(path.parent) == []


def _zarr_worker(path: str, i: int):
    ds = xr.Dataset({"v": ("x", np.full(64, float(i)))}, attrs={"writer": i})
    errors, n = [], 0
    t0 = time.monotonic()
    while time.monotonic() - t0 < HAMMER_S:
        try:
            io.write_zarr(ds, path)
            n += 1
        except Exception as exc:
            errors.append(repr(exc)[:100])
    return n, errors


def test_zarr_stores_written_concurrently_to_one_path(tmp_path):
    """Three writers of one store: every write succeeds (it failed with FileNotFoundError or 'Directory not
    empty'), the store left is one writer's whole store, and no temporary directory remains."""
    path = tmp_path / "run.zarr"
    out = _run(_zarr_worker, [(str(path), i) for i in range(3)])
    assert [e for _, e in out] == [[]] * 3 and all(n > 0 for n, _ in out)
    assert io.zarr_damage(path) is None
    ds = xr.open_zarr(path, consolidated=True).load()
    w = ds.attrs["writer"]
    assert w in range(3) and np.array_equal(ds["v"].values, np.full(64, float(w)))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.zarr"]


# ----------------------------------------------------------------------------------------------------------
# write_dataset: names that collide, and the latest link
# ----------------------------------------------------------------------------------------------------------

FIXED = "20261126T004512Z"
_RUN_NAME = io.run_name


def _ds(i: int) -> xr.Dataset:
    return xr.Dataset({"completion_time": ("point", np.array([1.0, 2.0]) * (i + 1))}, attrs={"config_yaml": "c"})


def _fixed_name(when, key):
    return f"{FIXED}-{key}"


def test_the_same_identity_in_the_same_second_with_other_contents_is_not_lost(tmp_path, monkeypatch):
    """``evaluator eval`` names its dataset by its config alone: the same config with ``--draws 1`` and
    ``--draws 8`` in one second returned the first dataset's path for the second (its draws lost, the path
    printed holding other numbers)."""
    monkeypatch.setattr(io, "run_name", _fixed_name)
    a = io.write_dataset(_ds(0), tmp_path, identity="same config")
    b = io.write_dataset(_ds(1), tmp_path, identity="same config")
    again = io.write_dataset(_ds(0), tmp_path, identity="same config")  # the very same result: one file
    assert again == a and b != a
    for path, i in ((a, 0), (b, 1)):
        with xr.open_dataset(path, engine="h5netcdf") as got:
            np.testing.assert_array_equal(got["completion_time"].values, np.array([1.0, 2.0]) * (i + 1))
    assert sorted(p.name for p in tmp_path.glob("*.nc")) == sorted([a.name, b.name])


def _dataset_worker(d: str, i: int, same_second: bool):
    io.run_name = _fixed_name if same_second else _RUN_NAME  # (this worker process only)
    out = []
    t0 = time.monotonic()
    while time.monotonic() - t0 < HAMMER_S:
        k = len(out)
        path = io.write_dataset(_ds(i % 2 if same_second else 10 * i + k), d,
                                identity="one identity" if same_second else f"{i}-{k}")
        with xr.open_dataset(path, engine="h5netcdf") as got:
            out.append((str(path), got["completion_time"].values.tolist()))
    return i, out


def test_concurrent_datasets_of_one_identity_each_keep_their_contents(tmp_path):
    """Four processes write datasets of one identity in one second, two contents among them: every path returned
    holds what its writer wrote; the same contents share one file."""
    out = _run(_dataset_worker, [(str(tmp_path), i, True) for i in range(4)])
    names = {}
    for i, results in out:
        for path, values in results:
            assert values == (np.array([1.0, 2.0]) * (i % 2 + 1)).tolist()
            names.setdefault(i % 2, set()).add(path)
    assert all(len(v) >= 1 for v in names.values()) and not names[0] & names[1]
    assert _temps(tmp_path) == []


def _newest_by_hand(d: Path) -> str:
    """The result ``latest`` should name: the latest time in the name, then the file written last."""
    files = [p for p in d.iterdir() if p.suffix == ".nc" and not p.name.startswith(".")]
    return max(files, key=lambda p: (p.name[:16], p.lstat().st_mtime_ns, p.name)).name


def test_latest_names_the_newest_result_after_concurrent_writers(tmp_path):
    out = _run(_dataset_worker, [(str(tmp_path), i, False) for i in range(3)])
    assert all(values == (np.array([1.0, 2.0]) * (10 * i + k + 1)).tolist()
               for i, results in out for k, (_, values) in enumerate(results))
    assert os.readlink(tmp_path / io.LATEST) == _newest_by_hand(tmp_path)
    assert _temps(tmp_path) == []


def test_latest_is_not_taken_back_by_a_writer_that_scanned_first(tmp_path, monkeypatch):
    """Process A scans the directory, then B writes a newer result and points ``latest`` at it, then A replaces
    the link with its own (older) result: ``latest`` named the older run, which ``evaluator query STUDY`` read."""
    (tmp_path / "20261126T004512Z-aaaa.nc").write_bytes(b"a")
    real = io.point_latest_at
    calls = []

    def racing(d, target):
        if not calls:  # B's whole write between A's scan and A's replace
            calls.append(target)
            (tmp_path / "20261126T004513Z-bbbb.nc").write_bytes(b"b")
            real(d, "20261126T004513Z-bbbb.nc")
        return real(d, target)

    monkeypatch.setattr(io, "point_latest_at", racing)
    io.point_latest(tmp_path)
    assert calls == ["20261126T004512Z-aaaa.nc"]  # A did scan before B wrote
    assert os.readlink(tmp_path / io.LATEST) == "20261126T004513Z-bbbb.nc" == _newest_by_hand(tmp_path)
