"""The chunk store: finished chunks persisted atomically, so a killed sweep resumes.

Chunks live under ``<output_dir>/<sweep>/.<run_id>.chunks/<chunk_id>.pkl``,
each written atomically and durably (:func:`evaluator.io.write_pickle`); a
chunk file exists complete or not at all, so a rerun computes exactly the
missing chunks. ``manifest.json`` keeps what must survive a resume (the first
start time).
"""

from __future__ import annotations

import datetime as _dt
import json
import shutil
from pathlib import Path

from .. import io
from .plan import SweepPlan

__all__ = ["chunk_dir", "write_chunk", "read_chunk", "done_chunks", "manifest", "clear"]


def chunk_dir(plan: SweepPlan) -> Path:
    """Directory of the persisted chunks of ``plan``'s run."""
    return plan.out_dir / f".{plan.run_id}.chunks"


def write_chunk(plan: SweepPlan, chunk_id: str, res: dict) -> None:
    """Persist one finished chunk atomically."""
    io.write_pickle(res, chunk_dir(plan) / f"{chunk_id}.pkl")


def done_chunks(plan: SweepPlan) -> set[str]:
    """Ids of the chunks already persisted (stale temporary files are removed)."""
    d = chunk_dir(plan)
    if not d.exists():
        return set()
    io.remove_stale(d)
    return {p.stem for p in d.glob("*.pkl")}


def read_chunk(plan: SweepPlan, chunk_id: str) -> dict:
    """One persisted chunk."""
    return io.read_pickle(chunk_dir(plan) / f"{chunk_id}.pkl")


def manifest(plan: SweepPlan) -> dict:
    """Provenance that must survive a resume (the first start time); created on the first run."""
    path = chunk_dir(plan) / "manifest.json"
    if path.exists():
        return json.loads(path.read_text())
    m = {"start_time": _dt.datetime.now(_dt.timezone.utc).isoformat(), "run_id": plan.run_id}
    io.write_json(path, m)
    return m


def clear(plan: SweepPlan) -> None:
    """Remove the run's chunks (after the final dataset is written)."""
    shutil.rmtree(chunk_dir(plan), ignore_errors=True)
