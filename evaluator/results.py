"""Writing and summarising result datasets (netCDF via h5netcdf, written atomically)."""

from __future__ import annotations

import datetime as _dt
import os
import subprocess
import tempfile
import uuid
from pathlib import Path

import xarray as xr

__all__ = ["write_dataset", "atomic_to_netcdf", "summary_lines", "git_commit", "new_run_id"]


def git_commit() -> str:
    """Commit of the source tree the package runs from, or ``"unknown"``."""
    try:
        here = Path(__file__).resolve().parent
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True, timeout=5)
        return out.stdout.strip() or "unknown"
    except Exception:  # pragma: no cover - git missing
        return "unknown"


def new_run_id() -> str:
    """A sortable unique id: UTC time plus a short random suffix."""
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ") + "-" + uuid.uuid4().hex[:6]


def write_dataset(ds: xr.Dataset, directory: Path | str, run_id: str | None = None) -> Path:
    """Write ``ds`` to ``directory/<run_id>.nc`` atomically (temp file, then rename)."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    run_id = run_id or new_run_id()
    path = directory / f"{run_id}.nc"
    ds = ds.copy()
    ds.attrs.setdefault("git_commit", git_commit())
    ds.attrs.setdefault("created", _dt.datetime.now(_dt.timezone.utc).isoformat())
    return atomic_to_netcdf(ds, path)


def atomic_to_netcdf(ds: xr.Dataset, path: Path) -> Path:
    """Write ``ds`` to ``path`` via a temporary file in the same directory and a rename."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".nc.tmp")
    os.close(fd)
    try:
        ds.to_netcdf(tmp, engine="h5netcdf")
        mask = os.umask(0)
        os.umask(mask)
        os.chmod(tmp, 0o666 & ~mask)  # mkstemp makes 0600; give the file the usual permissions
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path


def _fmt_bytes(x: float) -> str:
    for unit, f in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(x) >= f:
            return f"{x / f:.3f} {unit} ({x:,.0f} B)"
    return f"{x:,.1f} B"


def summary_lines(ds: xr.Dataset) -> list[str]:
    """A short human summary of one evaluation."""
    a = ds.attrs
    lines = [
        f"topology    {a.get('topology')}  routing {a.get('routing')}",
        f"traffic     {a.get('traffic', '?')}  placement {a.get('placement', '?')}",
        f"bytes       {_fmt_bytes(float(ds.total_bytes))}",
        f"completion  {float(ds.completion_time):.6g} s   bottleneck: {ds.bottleneck.item()}",
        f"throughput  {float(ds.throughput) / 1e9:.4g} GB/s aggregate, "
        f"{float(ds.effective_injection_bandwidth) / 1e9:.4g} GB/s per task",
        f"mean hops   {float(ds.mean_hops):.4f}",
    ]
    for v in sorted(k for k in ds.data_vars if k.startswith("max_load_")):
        lines.append(f"{v:<22}{_fmt_bytes(float(ds[v]))}")
    return lines
