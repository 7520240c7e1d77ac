"""Design-space sweeps: expand axes, bucket, run chunks on Ray, persist, assemble a dataset.

A sweep names *axes*: config keys mapped to a list of values or to a
generator. The grid is the Cartesian product of the axes (a ``zip`` axis moves
several keys together along one dimension). Every point of the grid is built
(config -> build) and evaluated; points whose config is invalid (a gamma that
does not divide beta, a placement that does not fit...) are kept with
``feasible = False`` and a ``reason`` instead of stopping the sweep.

Axis syntax (in ``sweep.axes``; order matters, later generators may refer to
earlier axes):

* ``key: [v1, v2, ...]`` literal values; ``key`` is a dotted config key
  (``placement.gamma``) or a config group (``routing``: option names);
* ``key: {divisors: [8, 8, 4]}`` every vector dividing the given one, or
  ``{divisors: other.key}``: every divisor of every value of an earlier axis;
  ``{divisors: other.key, total: true}``: divisors of the product (a scalar);
* ``key: {factorizations: {n: 64, d: 3}}`` ordered factorizations of ``n``
  into ``d`` factors (``n`` may name an earlier axis);
* ``key: {range: [start, stop, step]}`` (``stop`` excluded);
* ``name: {zip: {key1: [...], key2: [...]}}`` several keys along one dimension;
* ``name: {product: {key1: ..., key2: ...}}`` the same as listing them.

Nested mappings are dotted keys: ``placement: {seed: {range: [0, 8]}}`` is
``placement.seed``, so an axis can be added from the command line with
``+sweep.axes.placement.seed={range:[0,8]}``.

Execution: points are grouped into shape buckets (same topology and
routing: one compilation each), cut into fixed-size chunks, and sent to Ray
tasks (an embedded Ray by default, ``ray.address=auto`` or a URL for a
cluster). Every finished chunk is written atomically under
``<output_dir>/<sweep>/.<run_id>.chunks/``; a rerun of the same config has
the same ``run_id`` and computes only the missing chunks, so a sweep killed
at any moment (even ``kill -9``) resumes without losing or repeating points.
"""

from __future__ import annotations

import copy
import dataclasses
import datetime as _dt
import hashlib
import itertools
import json
import math
import os
import shutil
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from . import __version__
from .errors import ConfigError, require
from .evaluate import UNITS as _UNITS

__all__ = ["Axis", "SweepPlan", "expand_axes", "plan_sweep", "run_sweep", "label", "divisor_vectors",
           "ordered_factorizations", "optimize_axes"]

GROUPS = ("topology", "routing", "traffic", "placement")
BUCKET_PREFIXES = ("topology", "routing")
GENERATORS = ("divisors", "factorizations", "range", "zip", "product")


# --------------------------------------------------------------------------------------
# Generators
# --------------------------------------------------------------------------------------


def divisor_vectors(vec: Sequence[int]) -> list[tuple[int, ...]]:
    """Every vector ``d`` with ``d[k]`` dividing ``vec[k]``, in lexicographic order."""
    return list(itertools.product(*([d for d in range(1, int(v) + 1) if int(v) % d == 0] for v in vec)))


def ordered_factorizations(n: int, d: int) -> list[tuple[int, ...]]:
    """Every ordered ``d``-tuple of positive integers whose product is ``n``."""
    if d == 1:
        return [(n,)]
    out = []
    for f in range(1, n + 1):
        if n % f == 0:
            out.extend((f,) + rest for rest in ordered_factorizations(n // f, d - 1))
    return out


def label(value: Any) -> str:
    """Readable coordinate label: ``(8, 8, 4)`` -> ``"8x8x4"``."""
    if isinstance(value, (list, tuple)):
        return "x".join(label(v) for v in value)
    if isinstance(value, float) and value.is_integer() and abs(value) >= 1e3:
        return f"{value:.6g}"
    return str(value)


def _plain(v):
    """OmegaConf containers and tuples -> plain lists / scalars."""
    try:
        from omegaconf import DictConfig, ListConfig, OmegaConf

        if isinstance(v, (DictConfig, ListConfig)):
            return OmegaConf.to_container(v, resolve=True)
    except ImportError:  # pragma: no cover
        pass
    if isinstance(v, tuple):
        return [_plain(x) for x in v]
    if isinstance(v, list):
        return [_plain(x) for x in v]
    if isinstance(v, np.generic):
        return v.item()
    return v


@dataclasses.dataclass(frozen=True)
class Axis:
    """One dimension of the sweep grid.

    ``keys`` are the config keys it sets (several for a ``zip``), ``values[i]``
    the tuple of values (one per key) at coordinate ``i``, ``labels[i]`` its
    readable label.
    """

    name: str
    keys: tuple[str, ...]
    values: tuple[tuple[Any, ...], ...]
    labels: tuple[str, ...]

    @property
    def size(self) -> int:
        return len(self.values)

    @property
    def is_group(self) -> bool:
        return any(k in GROUPS for k in self.keys)

    @property
    def affects_bucket(self) -> bool:
        return any(k.split(".")[0] in BUCKET_PREFIXES for k in self.keys)


def _resolve_ref(ref, earlier: dict[str, list], field: str):
    """A generator argument: a literal, or the name of an earlier axis (-> its values)."""
    if isinstance(ref, str):
        require(ref in earlier, field, ref, f"a literal or the key of an earlier axis: {sorted(earlier)}")
        return earlier[ref]
    return [ref]


def _generate(key: str, spec: Any, earlier: dict[str, list]) -> list[Any]:
    field = f"sweep.axes.{key}"
    if isinstance(spec, list):
        require(len(spec) > 0, field, spec, "a non-empty list of values or a generator",
                "An empty axis would make the sweep empty.")
        return spec
    if not isinstance(spec, dict):
        return [spec]
    gens = [g for g in spec if g in GENERATORS]
    require(len(gens) == 1, field, spec, f"a list, or a mapping with exactly one generator of {list(GENERATORS)}")
    g = gens[0]
    arg = spec[g]
    if g == "divisors":
        total = bool(spec.get("total", False))
        out: list[Any] = []
        for v in _resolve_ref(arg, earlier, field + ".divisors"):
            if total or not isinstance(v, (list, tuple)):
                n = math.prod(v) if isinstance(v, (list, tuple)) else int(v)
                cand = [d for d in range(1, n + 1) if n % d == 0]
            else:
                cand = [list(d) for d in divisor_vectors(v)]
            out.extend(c for c in cand if c not in out)
        if total or (out and not isinstance(out[0], list)):
            out = sorted(out)
        else:
            out.sort(key=lambda d: (-math.prod(d), [-x for x in d]))  # denser first, as Prisacari's figures
        return out
    if g == "factorizations":
        require(isinstance(arg, dict) and "n" in arg and "d" in arg, field + ".factorizations", arg,
                "a mapping {n: tasks, d: dimensions}")
        out = []
        for n in _resolve_ref(arg["n"], earlier, field + ".factorizations.n"):
            for f in ordered_factorizations(int(n), int(arg["d"])):
                if list(f) not in out:
                    out.append(list(f))
        return out
    if g == "range":
        a = arg if isinstance(arg, list) else [arg.get("start", 0), arg["stop"], arg.get("step", 1)]
        vals = list(range(*[int(x) for x in a]))
        require(len(vals) > 0, field, spec, "a range with at least one value")
        return vals
    raise AssertionError(g)  # zip/product handled by the caller


def _flatten_axes(axes_cfg: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested mappings become dotted keys, so ``+sweep.axes.placement.seed={range:[0,8]}`` works
    from the command line; a mapping holding a generator is a leaf."""
    out: dict[str, Any] = {}
    for k, v in axes_cfg.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict) and v and not any(g in v for g in GENERATORS):
            out.update(_flatten_axes(v, key + "."))
        else:
            out[key] = v
    return out


def expand_axes(axes_cfg: dict[str, Any]) -> list[Axis]:
    """Expand the ``sweep.axes`` mapping into :class:`Axis` objects (see module docstring)."""
    require(isinstance(axes_cfg, dict) and len(axes_cfg) > 0, "sweep.axes", axes_cfg,
            "a non-empty mapping of config keys to values or generators")
    axes_cfg = _flatten_axes(_plain(axes_cfg))
    earlier: dict[str, list] = {}
    axes: list[Axis] = []
    for name, spec in axes_cfg.items():
        spec = _plain(spec)
        if isinstance(spec, dict) and "product" in spec:
            sub = expand_axes(spec["product"])
            for ax in sub:
                for k, vals in zip(ax.keys, zip(*ax.values)):
                    earlier[k] = list(vals)
            axes.extend(sub)
            continue
        if isinstance(spec, dict) and "zip" in spec:
            z = spec["zip"]
            require(isinstance(z, dict) and len(z) > 0, f"sweep.axes.{name}.zip", z, "a mapping of keys to lists")
            cols = {k: _generate(k, _plain(v), earlier) for k, v in z.items()}
            lens = {k: len(v) for k, v in cols.items()}
            require(len(set(lens.values())) == 1, f"sweep.axes.{name}.zip", lens, "lists of equal length")
            keys = tuple(cols)
            values = tuple(zip(*cols.values()))
            labels = tuple(",".join(label(x) for x in row) for row in values)
            for k in keys:
                earlier[k] = cols[k]
            axes.append(Axis(name, keys, values, labels))
            continue
        vals = _generate(name, spec, earlier)
        earlier[name] = vals
        axes.append(Axis(name, (name,), tuple((v,) for v in vals), tuple(label(v) for v in vals)))
    keys = [k for ax in axes for k in ax.keys]
    dup = sorted({k for k in keys if keys.count(k) > 1})
    require(not dup, "sweep.axes", dup, "each config key swept once", "Two axes set the same key.")
    for k in keys:
        for other in keys:
            if other != k and other.startswith(k + "."):
                raise ConfigError("sweep.axes", [k, other], "axes that do not overlap",
                                  f"'{k}' replaces the whole of '{other}'; sweep one or the other.")
    names = [ax.name for ax in axes]
    require(len(set(names)) == len(names), "sweep.axes", names, "distinct axis names")
    return axes


def optimize_axes(n_tasks: int, n_dims: int, routings: Sequence[str],
                  placement: str = "dragonfly_cartesian") -> dict[str, Any]:
    """Axes of Prisacari's selection procedure (Sec. 4.4), exhaustive: every decomposition
    beta of ``n_tasks`` into ``n_dims`` factors, every gamma dividing it (Cartesian
    placement), every routing."""
    axes: dict[str, Any] = {"traffic.beta": {"factorizations": {"n": int(n_tasks), "d": int(n_dims)}}}
    if placement == "dragonfly_cartesian":
        axes["placement.gamma"] = {"divisors": "traffic.beta"}
    axes["routing"] = list(routings)
    return axes


# --------------------------------------------------------------------------------------
# Plan
# --------------------------------------------------------------------------------------


def _get_path(obj, key: str):
    cur = obj
    for part in key.split("."):
        if not hasattr(cur, part):
            raise AttributeError(part)
        cur = getattr(cur, part)
    return cur


def _set_path(obj, key: str, value) -> None:
    parts = key.split(".")
    cur = obj
    for part in parts[:-1]:
        cur = getattr(cur, part)
    setattr(cur, parts[-1], copy.deepcopy(value))


@dataclasses.dataclass
class SweepPlan:
    """Everything the driver and the workers need, decided before any evaluation.

    ``bases`` maps a tuple of group-axis value indices to the composed config
    object for that group choice (one Hydra composition per combination).
    """

    name: str
    run_id: str
    axes: list[Axis]
    bases: dict[tuple[int, ...], Any]
    group_axes: tuple[int, ...]
    config_yaml: str
    chunk_size: int
    keep_link_load: bool
    fmt: str
    out_dir: Path
    seeds: list[int]

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(ax.size for ax in self.axes)

    @property
    def n_points(self) -> int:
        return math.prod(self.shape)

    @property
    def bucket_axes(self) -> tuple[int, ...]:
        return tuple(i for i, ax in enumerate(self.axes) if ax.affects_bucket)

    def chunks(self) -> list[tuple[str, np.ndarray]]:
        """Deterministic ``(chunk_id, flat point indices)``, each chunk inside one bucket."""
        flat = np.arange(self.n_points, dtype=np.int64)
        idx = np.unravel_index(flat, self.shape)
        bax = self.bucket_axes
        if bax:
            bshape = tuple(self.shape[i] for i in bax)
            bucket = np.ravel_multi_index(tuple(idx[i] for i in bax), bshape)
        else:
            bucket = np.zeros_like(flat)
        order = np.argsort(bucket, kind="stable")
        out = []
        for b in np.unique(bucket):
            pts = order[bucket[order] == b]
            for k in range(0, pts.size, self.chunk_size):
                out.append((f"b{int(b):05d}-c{k // self.chunk_size:06d}", pts[k:k + self.chunk_size]))
        return out

    def point_config(self, flat: int):
        """The config object of one grid point (a deep copy of its group base, axis values set)."""
        idx = np.unravel_index(int(flat), self.shape)
        gkey = tuple(int(idx[i]) for i in self.group_axes)
        obj = copy.deepcopy(self.bases[gkey])
        for ax, i in zip(self.axes, idx):
            if ax.is_group:
                continue
            for k, v in zip(ax.keys, ax.values[int(i)]):
                _set_path(obj, k, v)
        return obj


def plan_sweep(cfg, overrides: Sequence[str] = (), compose_fn=None) -> SweepPlan:
    """Validate a composed sweep config and decide the grid, buckets and run id.

    ``cfg`` is the composed OmegaConf config; ``overrides`` the command-line
    overrides (a key both swept and overridden is a conflict);
    ``compose_fn(extra_overrides) -> cfg`` composes the config again for each
    group choice of a group axis.
    """
    from omegaconf import OmegaConf

    sw = cfg.sweep
    axes = expand_axes(OmegaConf.to_container(sw.axes, resolve=True))
    swept = {k for ax in axes for k in ax.keys}
    for ov in overrides:
        key = ov.split("=", 1)[0].lstrip("+~")
        if key in swept or any(key.startswith(s + ".") for s in swept) or any(s.startswith(key + ".") for s in swept):
            raise ConfigError("sweep.axes", key, "keys that are not also overridden on the command line",
                              f"'{ov}' conflicts with the sweep axis on '{key}'. Drop the override or the axis.")
    group_axes = tuple(i for i, ax in enumerate(axes) if ax.is_group)
    for i in group_axes:
        require(len(axes[i].keys) == 1, "sweep.axes", axes[i].name, "a group axis on its own, not in a zip")
    bases: dict[tuple[int, ...], Any] = {}
    combos = list(itertools.product(*(range(axes[i].size) for i in group_axes)))
    from .cli import to_object

    for combo in combos:
        if combo:
            extra = [f"{axes[i].keys[0]}={axes[i].values[j][0]}" for i, j in zip(group_axes, combo)]
            c = compose_fn(extra)
        else:
            c = cfg
        # validate every non-group key and value against the typed schema
        for ax in axes:
            if ax.is_group:
                continue
            for kk, key in enumerate(ax.keys):
                if OmegaConf.select(c, key, default="__missing__") == "__missing__":
                    raise ConfigError("sweep.axes", key, "a key of the composed config",
                                      f"Unknown axis. Top-level keys: {sorted(k for k in c.keys() if k != 'sweep')}")
                for row in ax.values:
                    probe = copy.deepcopy(c)
                    try:
                        OmegaConf.update(probe, key, row[kk], merge=False)
                    except Exception as exc:
                        raise ConfigError(f"sweep.axes.{key}", row[kk], "a value of the key's type",
                                          str(exc).splitlines()[0]) from None
        bases[combo] = to_object(c)
    # What was computed, not where or how: storage and Ray settings are left out of the
    # provenance and of the run id, so a local and a cluster run give identical datasets.
    ident = OmegaConf.to_container(cfg, resolve=True)
    for k in ("ray", "output_dir", "save"):
        ident.pop(k, None)
    for k in ("output_dir", "run_id"):
        ident["sweep"].pop(k, None)
    base_yaml = OmegaConf.to_yaml(OmegaConf.create(ident))
    run_hash = hashlib.sha256(
        (base_yaml + json.dumps([dataclasses.asdict(a) for a in axes], default=str) + __version__).encode()
    ).hexdigest()[:12]
    run_id = sw.run_id or f"{sw.name}-{run_hash}"
    require(sw.format in ("netcdf", "zarr"), "sweep.format", sw.format, "netcdf or zarr")
    require(int(sw.chunk_size) >= 1, "sweep.chunk_size", sw.chunk_size, "a positive integer")
    plan = SweepPlan(sw.name, run_id, axes, bases, group_axes, base_yaml, int(sw.chunk_size), bool(sw.keep_link_load),
                     sw.format, Path(sw.output_dir) / sw.name, [])
    require(plan.n_points <= int(sw.max_points), "sweep.max_points", plan.n_points,
            f"at most {sw.max_points} points (raise sweep.max_points)")
    seeds: set[int] = set()
    for ax in axes:
        for k, col in zip(ax.keys, zip(*ax.values)):
            if k.endswith("seed"):
                seeds.update(int(v) for v in col)
    for base in bases.values():
        for key in ("traffic.seed", "placement.seed"):
            seeds.add(int(_get_path(base, key)))
    plan.seeds = sorted(seeds)
    return plan


# --------------------------------------------------------------------------------------
# Worker side
# --------------------------------------------------------------------------------------

_CACHE: dict[str, Any] = {}


def _cached(kind: str, cfg_obj, builder):
    key = kind + repr(cfg_obj)
    if key not in _CACHE:
        if len(_CACHE) > 256:
            _CACHE.clear()
        _CACHE[key] = builder()
    return _CACHE[key]


def _reason(exc: ConfigError) -> str:
    field = exc.field.split("[")[0]
    return f"{field}: {exc.allowed}"


def evaluate_chunk(plan: SweepPlan, flat: np.ndarray) -> dict[str, Any]:
    """Build and evaluate the points ``flat`` of one chunk (one bucket). Pure function of its inputs."""
    from . import config as C
    from .evaluate import evaluate_batch
    from .kernel import batch_kernel

    t0 = time.perf_counter()
    n = flat.size
    reasons = [""] * n
    ok_idx, traffics, placements = [], [], []
    topo = routing = None
    for j, f in enumerate(flat):
        obj = plan.point_config(int(f))
        try:
            topo = _cached("topology", obj.topology, lambda: C.build_topology(obj.topology))
            routing = C.build_routing_spec(obj.routing)
            tr = _cached("traffic" + repr(obj.topology), obj.traffic, lambda: C.build_traffic(obj.traffic, topo))
            pl = C.build_placement(obj.placement, topo, obj.traffic, tr.n_tasks, obj.topology)
            if tr.n_tasks != pl.n_tasks:
                raise ConfigError("placement.n_tasks", pl.n_tasks, f"the traffic's task count {tr.n_tasks}")
            from .routing import build_routing

            build_routing(topo, routing)  # routing/topology mismatch -> infeasible, not a crash
        except ConfigError as exc:
            reasons[j] = _reason(exc)
            continue
        ok_idx.append(j)
        traffics.append(tr)
        placements.append(pl)
    t_build = time.perf_counter() - t0
    out: dict[str, Any] = {"flat": flat, "reason": reasons, "build_s": t_build, "compile_s": 0.0, "eval_s": 0.0}
    if ok_idx:
        kern = batch_kernel(topo, routing, plan.keep_link_load)
        before = kern.fn._cache_size()
        t1 = time.perf_counter()
        # Pad every call to the full chunk (repeating the last feasible point) so that chunks with
        # fewer feasible points, and a bucket's last chunk, reuse the bucket's compilation.
        pad = plan.chunk_size - len(traffics)
        res = evaluate_batch(topo, routing, traffics + traffics[-1:] * pad, placements + placements[-1:] * pad,
                             keep_link_load=plan.keep_link_load, chunk_size=plan.chunk_size)
        res.metrics = {k: v[: len(ok_idx)] for k, v in res.metrics.items()}
        if res.link_load is not None:
            res.link_load = res.link_load[: len(ok_idx)]
        dt = time.perf_counter() - t1
        if kern.fn._cache_size() > before:
            out["compile_s"] = dt
        else:
            out["eval_s"] = dt
        out["ok"] = np.asarray(ok_idx, dtype=np.int64)
        out["class_names"] = list(topo.class_names)
        out["metrics"] = {k: np.asarray(v) for k, v in res.metrics.items()}
        out["bottleneck"] = res.bottleneck_names().tolist()
        if res.link_load is not None:
            out["link_load"] = res.link_load
            out["n_links"] = topo.n_links
    out["peak_rss_mb"] = _peak_rss_mb()
    return out


def _peak_rss_mb() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


# --------------------------------------------------------------------------------------
# Persistence
# --------------------------------------------------------------------------------------


def _chunk_dir(plan: SweepPlan) -> Path:
    return plan.out_dir / f".{plan.run_id}.chunks"


def _write_chunk(plan: SweepPlan, chunk_id: str, res: dict) -> None:
    import pickle

    d = _chunk_dir(plan)
    d.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=d, suffix=".tmp")
    with os.fdopen(fd, "wb") as fh:
        pickle.dump(res, fh, protocol=pickle.HIGHEST_PROTOCOL)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, d / f"{chunk_id}.pkl")


def _done_chunks(plan: SweepPlan) -> set[str]:
    d = _chunk_dir(plan)
    if not d.exists():
        return set()
    for stale in d.glob("*.tmp"):
        stale.unlink()
    return {p.stem for p in d.glob("*.pkl")}


def _read_chunk(plan: SweepPlan, chunk_id: str) -> dict:
    import pickle

    with open(_chunk_dir(plan) / f"{chunk_id}.pkl", "rb") as fh:
        return pickle.load(fh)


def _manifest(plan: SweepPlan) -> dict:
    """Provenance that must survive a resume (the first start time)."""
    d = _chunk_dir(plan)
    d.mkdir(parents=True, exist_ok=True)
    path = d / "manifest.json"
    if path.exists():
        return json.loads(path.read_text())
    m = {"start_time": _dt.datetime.now(_dt.timezone.utc).isoformat(), "run_id": plan.run_id}
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(m))
    os.replace(tmp, path)
    return m


# --------------------------------------------------------------------------------------
# Driver
# --------------------------------------------------------------------------------------


def _ray_init(ray_cfg):
    import ray

    if ray.is_initialized():
        return ray
    kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False, "configure_logging": False}
    if ray_cfg.address:
        kwargs["address"] = ray_cfg.address
        # ship this source tree to the cluster's workers (its dependencies must be installed there)
        kwargs["runtime_env"] = {"py_modules": [str(Path(__file__).resolve().parent)],
                                 "env_vars": {"JAX_ENABLE_X64": "1"}}
    else:
        if ray_cfg.num_cpus:
            kwargs["num_cpus"] = int(ray_cfg.num_cpus)
        # workers import the package from this source tree
        kwargs["runtime_env"] = {"env_vars": {"JAX_PLATFORMS": os.environ.get("JAX_PLATFORMS", ""),
                                              "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}}
    ray.init(**kwargs)
    return ray


def run_sweep(plan: SweepPlan, ray_cfg=None, progress: bool = True, stop_after: int | None = None) -> Path | None:
    """Run (or resume) a sweep and write its dataset; return the dataset path.

    ``stop_after`` (tests) returns ``None`` after that many chunks were
    persisted in this call, as an interrupted run would.
    """
    from tqdm.auto import tqdm

    t_start = time.perf_counter()
    timings = {"expand_s": 0.0, "build_s": 0.0, "compile_s": 0.0, "eval_s": 0.0, "write_s": 0.0}
    manifest = _manifest(plan)
    chunks = plan.chunks()
    done = _done_chunks(plan)
    todo = [(cid, pts) for cid, pts in chunks if cid not in done]
    timings["expand_s"] = time.perf_counter() - t_start
    n_done_pts = sum(pts.size for cid, pts in chunks if cid in done)
    bar = tqdm(total=plan.n_points, initial=n_done_pts, unit="pt", desc=plan.name, disable=not progress,
               smoothing=0.1, dynamic_ncols=True)
    finished = 0
    use_ray = ray_cfg is None or bool(ray_cfg.enabled)
    try:
        if use_ray and todo:
            ray = _ray_init(ray_cfg or _default_ray_cfg())
            remote = ray.remote(max_retries=int(getattr(ray_cfg, "max_retries", 3)), retry_exceptions=False)(
                _remote_chunk)
            plan_ref = ray.put(plan)
            ncpu = int(ray.cluster_resources().get("CPU", 1))
            limit = int(getattr(ray_cfg, "max_in_flight", None) or 2 * max(ncpu, 1))
            pending: dict[Any, str] = {}
            queue = list(todo)
            while queue or pending:
                while queue and len(pending) < limit:
                    cid, pts = queue.pop(0)
                    pending[remote.remote(plan_ref, pts)] = cid
                ready, _ = ray.wait(list(pending), num_returns=1)
                for ref in ready:
                    cid = pending.pop(ref)
                    res = ray.get(ref)
                    _persist(plan, cid, res, timings, bar)
                    finished += 1
                    if stop_after is not None and finished >= stop_after:
                        for r in pending:
                            ray.cancel(r, force=True)
                        return None
        else:
            for cid, pts in todo:
                res = evaluate_chunk(plan, pts)
                _persist(plan, cid, res, timings, bar)
                finished += 1
                if stop_after is not None and finished >= stop_after:
                    return None
    finally:
        bar.close()
    t_w = time.perf_counter()
    timings["wall_s"] = time.perf_counter() - t_start
    timings["driver_peak_rss_mb"] = _peak_rss_mb()
    ds = assemble(plan, [cid for cid, _ in chunks], manifest, timings)
    path = write_results(ds, plan)
    timings["write_s"] += time.perf_counter() - t_w
    shutil.rmtree(_chunk_dir(plan), ignore_errors=True)
    return path


def _default_ray_cfg():
    from .config import RayConfig

    return RayConfig()


def _remote_chunk(plan, pts):
    import jax

    jax.config.update("jax_enable_x64", True)
    if os.environ.get("EVALUATOR_TEST_CRASH_ONCE"):
        marker = Path(os.environ["EVALUATOR_TEST_CRASH_ONCE"])
        if not marker.exists():
            marker.write_text("crashed")
            os._exit(1)  # simulate a killed worker: Ray must retry the task
    return evaluate_chunk(plan, pts)


def _persist(plan, cid, res, timings, bar):
    t = time.perf_counter()
    _write_chunk(plan, cid, res)
    timings["write_s"] += time.perf_counter() - t
    for k in ("build_s", "compile_s", "eval_s"):
        timings[k] += float(res.get(k, 0.0))
    timings["worker_peak_rss_mb"] = max(timings.get("worker_peak_rss_mb", 0.0), float(res.get("peak_rss_mb", 0.0)))
    bar.update(int(res["flat"].size))


METRICS = ("completion_time", "throughput", "effective_injection_bandwidth", "mean_hops", "total_bytes")
UNITS = _UNITS  # units and long names shared with single evaluations
def assemble(plan: SweepPlan, chunk_ids: list[str], manifest: dict, timings: dict) -> xr.Dataset:
    """Merge the persisted chunks into one dataset (deterministic: independent of run order)."""
    shape = plan.shape
    n = plan.n_points
    vals = {k: np.full(n, np.nan) for k in METRICS}
    feasible = np.zeros(n, dtype=bool)
    reason = np.full(n, "", dtype=object)
    bottleneck = np.full(n, "", dtype=object)
    class_max: dict[str, np.ndarray] = {}
    link_load = None
    for cid in sorted(chunk_ids):
        res = _read_chunk(plan, cid)
        flat = res["flat"]
        reason[flat] = res["reason"]
        if "ok" not in res:
            continue
        ok = flat[res["ok"]]
        feasible[ok] = True
        for k in METRICS:
            vals[k][ok] = res["metrics"][k]
        bottleneck[ok] = res["bottleneck"]
        for c, cname in enumerate(res["class_names"]):
            arr = class_max.setdefault(cname, np.full(n, np.nan))
            arr[ok] = res["metrics"]["max_load_class"][:, c]
        if "link_load" in res:
            if link_load is None:
                nl = int(res["n_links"])
                require(n * nl <= 2e8, "sweep.keep_link_load", True, "sweeps of at most 2e8 point-links")
                link_load = np.full((n, nl), np.nan)
            require(link_load.shape[1] == res["link_load"].shape[1], "sweep.keep_link_load", True,
                    "a single topology across the sweep (link counts differ)")
            link_load[ok] = res["link_load"]
    dims = tuple(ax.name for ax in plan.axes)
    data: dict[str, Any] = {}
    for k in METRICS:
        data[k] = (dims, vals[k].reshape(shape), {"units": UNITS[k][0], "long_name": UNITS[k][1]})
    for cname in sorted(class_max):
        vname = "max_load_" + cname.replace("-", "_")
        data[vname] = (dims, class_max[cname].reshape(shape), {"units": "bytes",
                                                               "long_name": f"largest load on a {cname} link"})
    data["bottleneck"] = (dims, bottleneck.astype(str).reshape(shape),
                          {"long_name": "class of the link that sets the completion time ('' if infeasible)"})
    data["feasible"] = (dims, feasible.reshape(shape), {"long_name": "whether the point's config is valid"})
    data["reason"] = (dims, reason.astype(str).reshape(shape),
                      {"long_name": "why the point is infeasible: 'field: what is allowed' ('' if feasible)"})
    coords: dict[str, Any] = {}
    for ax in plan.axes:
        coords[ax.name] = (ax.name, np.asarray(ax.labels, dtype=str), {"long_name": ", ".join(ax.keys)})
    if link_load is not None:
        data["link_load"] = (dims + ("link",), link_load.reshape(shape + (link_load.shape[1],)),
                             {"units": "bytes", "long_name": "expected bytes crossing the link in one exchange"})
    ds = xr.Dataset(data, coords=coords)
    end = _dt.datetime.now(_dt.timezone.utc).isoformat()
    ds.attrs.update({
        "title": f"evaluator sweep {plan.name}",
        "sweep": plan.name,
        "run_id": plan.run_id,
        "config_yaml": plan.config_yaml,
        "axes_json": json.dumps([{"name": a.name, "keys": list(a.keys), "values": [list(v) for v in a.values]}
                                 for a in plan.axes], default=_json_default),
        "evaluator_version": __version__,
        "git_commit": _git_commit(),
        "seeds": np.asarray(plan.seeds, dtype=np.int64),
        "n_points": int(n),
        "n_feasible": int(feasible.sum()),
        "start_time": manifest["start_time"],
        "end_time": end,
        "timing_json": json.dumps({k: round(v, 4) for k, v in timings.items()}),
        "Conventions": "CF-1.8",
    })
    return ds


def _json_default(o):
    if isinstance(o, (np.integer,)):
        return int(o)
    if isinstance(o, (np.floating,)):
        return float(o)
    return str(o)


def _git_commit() -> str:
    from .results import git_commit

    return git_commit()


VOLATILE_ATTRS = ("start_time", "end_time", "timing_json")
"""Attrs that record when and how fast a run went; they differ between runs of one sweep."""


def write_results(ds: xr.Dataset, plan: SweepPlan) -> Path:
    """Write atomically to ``<output_dir>/<sweep>/<run_id>.nc`` (or ``.zarr``)."""
    plan.out_dir.mkdir(parents=True, exist_ok=True)
    if plan.fmt == "zarr":
        final = plan.out_dir / f"{plan.run_id}.zarr"
        tmp = Path(tempfile.mkdtemp(dir=plan.out_dir, suffix=".zarr.tmp"))
        shutil.rmtree(tmp)
        ds.to_zarr(tmp, mode="w")
        if final.exists():
            shutil.rmtree(final)
        os.replace(tmp, final)
        return final
    from .results import atomic_to_netcdf

    return atomic_to_netcdf(ds, plan.out_dir / f"{plan.run_id}.nc")
