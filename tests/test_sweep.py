"""Sweeps: named studies compose and run shrunken, real Ray with 2 workers, resume after
an interruption (including kill -9 of the driver), the optimizer against brute force,
and clear errors for bad specifications."""

import dataclasses
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

import evaluator as ev
from evaluator import cli, config
from evaluator import placement as P
from evaluator._threads import is_one_core
from evaluator import traffic as T
from evaluator.config import RayConfig
from evaluator.errors import ConfigCompositionError, ConfigError
from evaluator.io import repo_dir
from evaluator.query import best, open_results
from evaluator.sweep import label, ordered_factorizations, plan_sweep, run_sweep
from tests.helpers import TOL, strip

SWEEPS = sorted(p.stem for p in (repo_dir() / "sweeps").glob("*.yaml"))
NO_RAY = RayConfig(enabled=False)


def make_plan(name, extra=(), out=None):
    ov = [f"sweeps={name}", *extra] + ([f"sweep.output_dir={out}"] if out else [])
    return plan_sweep(config.compose_sweep(ov, user_overrides=list(extra)))


def shrink(plan, k=3):
    """Keep at most k evenly spaced coordinates of every axis (group axes keep their base indices, topology axes
    their first two values)."""
    axes = []
    for i, ax in enumerate(plan.axes):
        kk = 3 * k if ax.name == "placement.gamma" else k  # most gammas are infeasible for a given beta
        idx = sorted(set(np.linspace(0, ax.size - 1, min(kk, ax.size)).round().astype(int).tolist()))
        if i in plan.group_axes:
            idx = list(range(min(k, ax.size)))
        elif any(key.startswith("topology.") for key in ax.keys):  # machine sizes: the two smallest (large: the study)
            idx = list(range(min(2, ax.size)))
        axes.append(dataclasses.replace(ax, values=tuple(ax.values[j] for j in idx),
                                        labels=tuple(ax.labels[j] for j in idx)))
    plan.axes = axes
    plan.run_id += "-small"
    return plan



def test_generators():
    assert ordered_factorizations(12, 2) == [(1, 12), (2, 6), (3, 4), (4, 3), (6, 2), (12, 1)]
    assert len(ordered_factorizations(64, 3)) == 28  # C(6+2, 2)
    assert label([8, 8, 4]) == "8x8x4"


@pytest.mark.parametrize("name", SWEEPS)
def test_named_sweep_composes_and_runs_shrunken(name, tmp_path):
    assert {"dragonfly_nne_decomposition", "dragonfly_nne_placement", "dragonfly_random_placement",
            "dragonfly_balance", "torus_bgq_pairing"} <= set(SWEEPS)
    plan = shrink(make_plan(name, out=tmp_path))
    path = run_sweep(plan, NO_RAY, progress=False)
    ds = open_results(path)
    jobs = config.has_jobs(plan.point_config(0))
    extra_dims = {"job": ds.sizes.get("job"), "other_job": ds.sizes.get("other_job")} if jobs else {}
    if "phase" in ds.dims:  # a phased traffic (e.g. psdns_slab_orientation) adds per-phase metrics
        extra_dims["phase"] = ds.sizes["phase"]
    assert ds.sizes == {**dict(zip([a.name for a in plan.axes], plan.shape)), **extra_dims}
    assert int(ds.feasible.sum()) >= 1, name
    # every feasible point equals a direct evaluation of its config
    from evaluator.config import build, build_jobs
    from evaluator.jobs import evaluate_jobs

    flat = int(np.flatnonzero(ds.feasible.values.ravel())[-1])
    if jobs:
        jp = build_jobs(plan.point_config(flat))
        ref = evaluate_jobs(jp.topology, list(jp.jobs), jp.routing, jp.background)
        idx = np.unravel_index(flat, plan.shape)
        got = ds.completion_time.values[idx]
        np.testing.assert_allclose(got, ref.completion_time.values, rtol=TOL["rel"])
        np.testing.assert_allclose(ds.interference.values[idx], ref.interference.values, rtol=TOL["rel"])
        assert float(ds.makespan.values[idx]) == pytest.approx(float(ref.makespan), rel=TOL["rel"])
    else:
        pt = build(plan.point_config(flat))
        ref = ev.evaluate(pt.topology, pt.traffic, pt.placement, pt.routing)
        got = ds.completion_time.values.ravel()[flat]
        assert got == pytest.approx(float(ref.completion_time), rel=TOL["rel"])
    infeasible = ~ds.feasible.values
    assert (ds.reason.values[infeasible] != "").all() and (ds.reason.values[~infeasible] == "").all()
    for attr in ("config_yaml", "evaluator_version", "git_commit", "start_time", "end_time", "seeds"):
        assert attr in ds.attrs
    assert ds.completion_time.attrs["units"] == "s"


def test_nne_placement_coordinates_and_infeasible_reasons(tmp_path):
    plan = make_plan("dragonfly_nne_placement", out=tmp_path)
    assert [a.name for a in plan.axes] == ["traffic.beta", "placement.gamma", "routing"]
    assert plan.axes[0].labels == ("8x8x4", "16x8x8")
    assert "4x4x2" in plan.axes[1].labels


def test_real_ray_two_workers_and_retry_after_killed_worker(tmp_path, monkeypatch):
    """The Ray path, 2 CPUs; the first task's worker dies (os._exit) and Ray retries it."""
    ray = pytest.importorskip("ray")
    marker = tmp_path / "crashed"
    monkeypatch.setenv("EVALUATOR_TEST_CRASH_ONCE", str(marker))
    plan = make_plan("dragonfly_nne_placement", ["sweep.chunk_size=16"], out=tmp_path / "ray")
    plan = shrink(plan, k=4)
    ref_plan = make_plan("dragonfly_nne_placement", ["sweep.chunk_size=16"], out=tmp_path / "local")
    ref_plan = shrink(ref_plan, k=4)
    try:
        # (every chunk on Ray's workers: the driver's own chunks while Ray starts, the test below, would leave the
        # crash hook of this small sweep unreached where Ray starts slowly)
        path = run_sweep(plan, RayConfig(num_cpus=2, max_retries=3, driver_chunks=False), progress=False)
        assert not ray.is_initialized()  # the local Ray the sweep started is stopped once its results are in
    finally:
        ray.shutdown()
    timing = json.loads(open_results(path).attrs["timing_json"])
    assert timing["ray_cpus"] == 2 and timing["driver_chunks"] == 0
    assert timing["worker_xla_one_core"] is True  # each task held one CPU: a one-thread XLA:CPU pool (_threads)
    assert marker.exists(), "the crash hook did not run in a Ray worker"
    monkeypatch.delenv("EVALUATOR_TEST_CRASH_ONCE")
    ref = run_sweep(ref_plan, NO_RAY, progress=False)
    # the command's own process keeps JAX's pool: the same numbers either way
    assert json.loads(open_results(ref).attrs["timing_json"])["worker_xla_one_core"] is is_one_core()
    xr.testing.assert_identical(strip(open_results(path)), strip(open_results(ref)))


def test_the_driver_evaluates_chunks_while_its_ray_starts(tmp_path, monkeypatch):
    """``ray.driver_chunks`` (the default): while the local Ray it starts comes up, the driver evaluates the first
    chunks itself, Ray's workers the rest, and the dataset is the one the command's own process gives. Made
    deterministic: Ray's start waits until the driver has evaluated two chunks, and the driver's second chunk
    returns once Ray has started (each wait at most a minute), so that a few chunks at most are the driver's."""
    import threading

    ray = pytest.importorskip("ray")
    from evaluator.sweep import driver

    two, started = threading.Event(), threading.Event()
    calls = []
    real_chunk, real_init = driver.evaluate_chunk, ray.init

    def counted(plan, pts):
        out = real_chunk(plan, pts)
        calls.append(pts.size)
        if len(calls) == 2:
            two.set()
            started.wait(60)
        return out

    def slow_init(*args, **kwargs):
        two.wait(60)
        try:
            return real_init(*args, **kwargs)
        finally:
            started.set()

    monkeypatch.setattr(driver, "evaluate_chunk", counted)
    monkeypatch.setattr(ray, "init", slow_init)
    plan = shrink(make_plan("dragonfly_nne_placement", ["sweep.chunk_size=4"], out=tmp_path / "ray"), k=4)
    ref_plan = shrink(make_plan("dragonfly_nne_placement", ["sweep.chunk_size=4"], out=tmp_path / "local"), k=4)
    n_chunks = len(plan.chunks())
    try:
        path = run_sweep(plan, RayConfig(num_cpus=2), progress=False)
    finally:
        ray.shutdown()
    timing = json.loads(open_results(path).attrs["timing_json"])
    assert two.is_set() and timing["driver_chunks"] == len(calls) >= 2
    assert n_chunks >= 8 and len(calls) < n_chunks, (len(calls), n_chunks)  # Ray's workers evaluated the rest
    monkeypatch.setattr(driver, "evaluate_chunk", real_chunk)
    ref = run_sweep(ref_plan, NO_RAY, progress=False)
    xr.testing.assert_identical(strip(open_results(path)), strip(open_results(ref)))


def test_resume_after_interruption_is_identical(tmp_path):
    full = shrink(make_plan("dragonfly_nne_placement", ["sweep.chunk_size=8"], out=tmp_path / "a"), k=5)
    ref = open_results(run_sweep(full, NO_RAY, progress=False))
    part = shrink(make_plan("dragonfly_nne_placement", ["sweep.chunk_size=8"], out=tmp_path / "b"), k=5)
    assert run_sweep(part, NO_RAY, progress=False, stop_after=2) is None
    chunk_dir = part.out_dir / f".{part.run_id}.chunks"
    assert len(list(chunk_dir.glob("*.pkl"))) == 2
    done = run_sweep(part, NO_RAY, progress=False)
    xr.testing.assert_identical(strip(open_results(done)), strip(ref))
    assert not chunk_dir.exists()


def test_kill_minus_9_of_the_driver_then_resume(tmp_path):
    out = tmp_path / "k"
    args = [sys.executable, "-m", "evaluator", "sweep", "sweeps=dragonfly_random_placement", "ray.enabled=false",
            "sweep.chunk_size=4", f"sweep.output_dir={out}", "--no-progress"]
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
                            start_new_session=True)
    deadline = time.time() + 120
    chunks = []
    while time.time() < deadline:
        chunks = list(out.glob("dragonfly_random_placement/.*.chunks/*.pkl"))
        if len(chunks) >= 3:
            break
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert len(chunks) >= 3, "sweep made no progress before the kill"
    assert not list(out.glob("dragonfly_random_placement/*.nc"))
    n_before = len(list(out.glob("dragonfly_random_placement/.*.chunks/*.pkl")))
    assert cli.main(args[3:]) == 0  # the same command again, resumed here in this process
    (path,) = out.glob("dragonfly_random_placement/*.nc")
    ds = open_results(path)
    plan = make_plan("dragonfly_random_placement", ["ray.enabled=false", "sweep.chunk_size=4"], out=tmp_path / "ref")
    assert ds.attrs["run_id"] == plan.run_id and n_before < len(plan.chunks())
    ref = open_results(run_sweep(plan, NO_RAY, progress=False))
    xr.testing.assert_identical(strip(ds), strip(ref))


def test_optimizer_matches_brute_force(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rc = cli.main(["optimize", "--tasks", "16", "--alpha", "16,16", "--routings", "minimal,valiant",
                   "topology.p=2", "topology.a=4", "topology.h=2", "--top", "3", "--no-progress"])
    out = capsys.readouterr().out
    assert rc == 0
    path = Path(out.strip().splitlines()[-1].split("dataset: ")[1])
    ds = open_results(path)
    df = ev.dragonfly(2, 4, 2)
    brute = []
    for beta in ordered_factorizations(16, 2):
        tr = T.stencil((16, 16), beta, 1024.0)
        for g0 in range(1, beta[0] + 1):
            for g1 in range(1, beta[1] + 1):
                try:
                    pl = P.dragonfly_cartesian(df, beta, (g0, g1), seed=0)
                except ConfigError:
                    continue
                for rt in (ev.minimal(), ev.valiant()):
                    t = float(ev.evaluate(df, tr, pl, rt).completion_time)
                    brute.append((t, label(beta), label((g0, g1)), rt.kind))
    brute.sort()
    table = best(ds, "completion_time")
    assert len(table) == len(brute) == int(ds.feasible.sum())
    assert table.iloc[0]["completion_time"] == pytest.approx(brute[0][0], rel=TOL["rel"])
    best_set = {b[1:] for b in brute if b[0] <= brute[0][0] * (1 + TOL["rel"])}
    row = table.iloc[0]
    assert (row["traffic.beta"], row["placement.gamma"], row["routing"]) in best_set


def test_query_best_over_axis(tmp_path):
    plan = shrink(make_plan("dragonfly_nne_placement", out=tmp_path), k=6)
    ds = open_results(run_sweep(plan, NO_RAY, progress=False))
    table = best(ds, "completion_time", over=["placement.gamma"])
    ct = ds.completion_time.where(ds.feasible)
    for _, row in table.iterrows():
        sub = ct.sel({"traffic.beta": row["traffic.beta"], "routing": row["routing"]})
        assert row["completion_time"] == float(sub.min())
    # one group per (beta, routing) with a feasible point; a group keeps every gamma tied with its best (ties are
    # ties: values within 1e-9 relative share the rank, issue 35)
    groups = table.groupby(["traffic.beta", "routing"]).size()
    assert len(groups) == int((ct.notnull().any("placement.gamma")).sum())
    only = best(ds, "throughput", where={"routing": "valiant"}, n=2)
    assert len(only) <= 2 and set(only["routing"]) <= {"valiant"}
    assert only["throughput"].is_monotonic_decreasing
    from evaluator.plot import plot_sweep

    png = plot_sweep(ds, tmp_path / "fig.png")
    assert png.stat().st_size > 5000


@pytest.mark.parametrize("extra,needle", [
    (["+sweep.axes.bogus=[1,2]"], "bogus"),
    (["sweep.axes={traffic:{beta:[]}}"], "sweep.axes"),
    (["placement.gamma=[2,2,2]"], "placement.gamma"),
])
def test_bad_specs(extra, needle, tmp_path):
    with pytest.raises((ConfigError, ConfigCompositionError)) as e:
        make_plan("dragonfly_nne_placement", extra, out=tmp_path)
    assert needle in str(e.value)


def test_empty_axis_and_unknown_key_in_axes():
    from evaluator.sweep import expand_axes

    with pytest.raises(ConfigError, match="empty axis|non-empty"):
        expand_axes({"placement.gamma": []})
    with pytest.raises(ConfigError, match="same key|once"):
        expand_axes({"x": {"zip": {"placement.seed": [1]}}, "placement.seed": [2]})
    with pytest.raises(ConfigError, match="replaces"):
        expand_axes({"placement": ["linear"], "placement.seed": [1]})


def test_axis_added_from_the_command_line(tmp_path):
    plan = make_plan("dragonfly_nne_placement", ["+sweep.axes.placement.seed={range:[0,3]}"], out=tmp_path)
    assert [a.name for a in plan.axes][-1] == "placement.seed"
    assert plan.axes[-1].labels == ("0", "1", "2") and plan.seeds == [0, 1, 2]
