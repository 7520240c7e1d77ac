"""Chunks evaluated together (issue 36): :func:`evaluate_chunks` against :func:`evaluate_chunk`, chunk by chunk.

A Ray task evaluates the chunks of its batch (one network) in one device
evaluation and splits the per-point outputs back per chunk; every chunk's
result must equal what :func:`evaluate_chunk` gives for it alone: every key,
every array (dtype included), infeasible points, reasons, bounds, link loads;
the kinds of chunk that are not batched (path sets, latency models, phased
traffic, jobs) go per chunk and must equal too. Timings are the only keys
allowed to differ.
"""

from __future__ import annotations


import numpy as np
import pytest
import xarray as xr

from evaluator import config
from evaluator.errors import MEMORY_ENV, ResourceError
from evaluator.sweep import plan_sweep
from evaluator.sweep import worker as W
from evaluator.sweep.worker import evaluate_chunk, evaluate_chunks

TIMINGS = {"build_s", "compile_s", "eval_s", "bound_s", "peak_rss_bytes", "n_compiles"}
"""Keys that say how long (and with how many compilations) a chunk took, not what it computed."""

SMALL = ["topology.p=2", "topology.a=4", "topology.h=2", "traffic.alpha=[16,16,8]"]


def make_plan(name, extra, out, axes=None, user=None):
    ov = [f"sweeps={name}", *extra, f"sweep.output_dir={out}"]
    user = [o for o in extra if not o.startswith("sweep.")] if user is None else user
    return plan_sweep(config.compose_sweep(ov, user_overrides=user, axes=axes))


def assert_same(a, b, where="result"):
    """``a == b`` exactly: dicts key by key, arrays by dtype, shape and value (NaN equal to NaN)."""
    if isinstance(a, dict):
        assert isinstance(b, dict), where
        ka, kb = set(a) - TIMINGS, set(b) - TIMINGS
        assert ka == kb, f"{where}: keys {sorted(ka ^ kb)}"
        for k in sorted(ka):
            assert_same(a[k], b[k], f"{where}[{k!r}]")
    elif isinstance(a, np.ndarray):
        assert isinstance(b, np.ndarray), where
        assert a.dtype == b.dtype and a.shape == b.shape, f"{where}: {a.dtype}{a.shape} vs {b.dtype}{b.shape}"
        if a.dtype.kind in "fc":
            np.testing.assert_array_equal(a, b, err_msg=where)  # (NaN == NaN here)
        else:
            assert np.array_equal(a, b), where
    elif isinstance(a, (list, tuple)):
        assert type(a) is type(b) and len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            assert_same(x, y, f"{where}[{i}]")
    elif isinstance(a, float) and np.isnan(a):
        assert isinstance(b, float) and np.isnan(b), where
    else:
        assert a == b, f"{where}: {a!r} != {b!r}"


def per_chunk_and_together(make, monkeypatch):
    """``(alone, together, calls)``: every chunk of the plan ``make()`` by :func:`evaluate_chunk` (a plan of its
    own: a fresh worker state), then all of them by one :func:`evaluate_chunks` (another fresh plan), with the
    engine calls the latter made."""
    plan = make()
    chunks = [pts for _, pts in plan.chunks()]
    alone = [evaluate_chunk(plan, pts) for pts in chunks]
    calls = []
    real = W.evaluate_groups
    monkeypatch.setattr(W, "evaluate_groups", lambda *a, **k: calls.append(sum(g.positions.size for g in a[2]))
                        or real(*a, **k))
    together = evaluate_chunks(make(), chunks)
    monkeypatch.undo()
    assert len(together) == len(alone)
    for i, (a, b) in enumerate(zip(alone, together)):
        assert_same(a, b, f"chunk {i}")
    return plan, alone, together, calls


def networks(plan):
    return {cid.split("-", 1)[0] for cid, _ in plan.chunks()}


# ----------------------------------------------------------------------------------
# batched kinds: flow lists through the banked runner
# ----------------------------------------------------------------------------------


@pytest.mark.parametrize("extra,axes", [
    # seeded placements drawn on the device, infeasible gammas, two routings (two networks), short last chunks
    (["traffic.beta=[4,4,2]", "sweep.chunk_size=8"],
     {"placement.gamma": {"divisors": [4, 4, 2]}, "routing": ["minimal", "valiant"],
      "placement.seed": {"range": [0, 7]}}),
    # per-link loads kept
    (["traffic.beta=[4,4,2]", "sweep.chunk_size=5", "sweep.keep_link_load=true"],
     {"placement.gamma": [[2, 2, 2], [4, 4, 1], [3, 1, 1]], "placement.seed": {"range": [0, 6]}}),
    # placements drawn on the host (numpy generator) and seeds the threefry key refuses
    (["traffic.beta=[4,4,2]", "sweep.chunk_size=2", "placement.generator=numpy"],
     {"placement.gamma": [[2, 2, 2], [4, 4, 1], [3, 1, 1]], "placement.seed": [-1, 0, 3, 2**64]}),
    (["traffic.beta=[4,4,2]", "sweep.chunk_size=2", "placement.generator=threefry"],
     {"placement.gamma": [[2, 2, 2], [4, 4, 1], [3, 1, 1]], "placement.seed": [-1, 0, 3, 2**64]}),
])
def test_nne_chunks_together_equal_each_alone(tmp_path, monkeypatch, extra, axes):
    plan, alone, together, calls = per_chunk_and_together(
        lambda: make_plan("dragonfly_nne_placement", SMALL + extra, tmp_path, axes), monkeypatch)
    assert any(r["reason_code"].any() for r in alone)  # infeasible points among them
    assert any("ok" in r for r in alone)
    # one engine call per network with feasible points, not one per chunk
    n_feasible_chunks = sum("ok" in r for r in alone)
    assert len(calls) <= len(networks(plan)) < n_feasible_chunks
    assert sum(calls) == sum(r["ok"].size for r in alone if "ok" in r)


def test_random_placement_several_traffics_in_one_network(tmp_path, monkeypatch):
    """Two betas (two traffics of one flow bank) and tasks per group in one network, chunks of 8."""
    axes = {"traffic.beta": [[4, 2, 2], [4, 4, 2]],
            "placement.tasks_per_group": {"divisors": "traffic.beta", "total": True},
            "placement.seed": {"range": [0, 5]}}
    plan, alone, _, calls = per_chunk_and_together(
        lambda: make_plan("dragonfly_random_placement", SMALL + ["sweep.chunk_size=8"], tmp_path, axes), monkeypatch)
    assert len(calls) == len(networks(plan)) == 1 and len(alone) > 2


def test_without_seed_axis(tmp_path, monkeypatch):
    axes = {"traffic.beta": {"factorizations": {"n": 32, "d": 3}}, "placement.gamma": {"divisors": "traffic.beta"},
            "routing": ["minimal", "valiant"]}
    plan, alone, _, calls = per_chunk_and_together(
        lambda: make_plan("dragonfly_nne_decomposition", SMALL + ["sweep.chunk_size=16"], tmp_path, axes),
        monkeypatch)
    assert plan.seed_axis is None and len(calls) <= len(networks(plan)) < len(alone)


def test_bounds_per_chunk(tmp_path, monkeypatch):
    """Bounds are solved per chunk after the split: the same intervals, methods and gaps."""
    torus = ["topology.dims=[4,4]", "traffic.n_tasks=12", "sweep.chunk_size=2"]
    axes = {"routing.tie": ["split", "positive"], "placement.seed": {"range": [0, 5]}}
    _, alone, _, calls = per_chunk_and_together(lambda: make_plan("torus_bounds", torus, tmp_path, axes), monkeypatch)
    assert all("bounds" in r for r in alone) and len(calls) == 2


# ----------------------------------------------------------------------------------
# kinds evaluated per chunk (see evaluate_chunks): still equal
# ----------------------------------------------------------------------------------


def test_path_sets_go_per_chunk(tmp_path, monkeypatch):
    """kshortest with a hop limit on a 4x4 mesh: unroutable pairs make single points infeasible."""
    mesh = ["topology.dims=[4,4]", "topology.wrap=false", "routing=kshortest", "routing.k=2", "routing.hop_limit=5",
            "bounds=false"]
    extra = ["sweep.chunk_size=3", "sweep.keep_link_load=true", "sweep.name=ppp"]
    axes = {"traffic.n_tasks": [8, 16], "placement.seed": {"range": [0, 4]}}
    _, alone, _, calls = per_chunk_and_together(
        lambda: make_plan("torus_bounds", mesh + extra, tmp_path, axes, user=mesh), monkeypatch)
    assert any(r["reason_code"].any() for r in alone) and len(calls) == sum("ok" in r or r["reason_code"].any()
                                                                            for r in alone)


def test_latency_and_phases_go_per_chunk(tmp_path, monkeypatch):
    axes = {"network": {"zip": {"topology": [{"kind": "torus", "dims": [4, 4, 4], "link_bandwidth": 2.0e9,
                                              "latency": {"send_overhead": 9.4e-7, "recv_overhead": 9.4e-7,
                                                          "router": 4.0e-8}}],
                                "routing": ["dor"]}, "label": ["torus-dor"]},
            "traffic.algorithm": ["ring", "recursive_doubling"], "traffic.bytes": [64, 4096]}
    _, alone, _, calls = per_chunk_and_together(
        lambda: make_plan("collective_sizes", ["sweep.chunk_size=1"], tmp_path, axes, user=[]), monkeypatch)
    assert len(calls) == len(alone) == 4


def test_jobs_go_per_chunk(tmp_path, monkeypatch):
    base = ["bounds=false", "topology.dims=[4,4]", "traffic.n_tasks=12"]
    per_chunk_and_together(lambda: make_plan("torus_bounds", base + ["sweep.chunk_size=1"], tmp_path,
                                             {"background.fraction": [0.05, 0.1]}, user=base), monkeypatch)


# ----------------------------------------------------------------------------------
# the check itself fails on a wrong split
# ----------------------------------------------------------------------------------


NNE = (["traffic.beta=[4,4,2]", "sweep.chunk_size=8"],
       {"placement.gamma": {"divisors": [4, 4, 2]}, "routing": ["minimal", "valiant"],
        "placement.seed": {"range": [0, 7]}})


@pytest.mark.parametrize("wrong", ["swap", "roll"])
def test_a_wrong_split_is_caught(tmp_path, monkeypatch, wrong):
    """The batched call's split made wrong on purpose (``swap``: the first point of two chunks swapped between
    them; ``roll``: a chunk's rows shifted by one): the comparison with :func:`evaluate_chunk` fails."""
    real = W._evaluate_together
    spoiled = []

    def spoil(plan, st, preps):
        parts = real(plan, st, preps)
        fed = [k for k, p in enumerate(parts) if p.positions.size > 1]
        if len(fed) < 2:
            return parts
        a, b = fed[:2]
        ma, mb = parts[a].metrics, parts[b].metrics
        for key in ma:
            if wrong == "swap":
                ma[key][0], mb[key][0] = mb[key][0].copy(), ma[key][0].copy()
            else:
                ma[key] = np.roll(ma[key], 1, axis=0)
        spoiled.append((a, b))
        return parts

    monkeypatch.setattr(W, "_evaluate_together", spoil)
    extra, axes = NNE
    with pytest.raises(AssertionError, match="metrics"):
        per_chunk_and_together(lambda: make_plan("dragonfly_nne_placement", SMALL + extra, tmp_path, axes),
                               monkeypatch)
    assert spoiled


# ----------------------------------------------------------------------------------
# the memory rule: the batched call is checked, a refusal falls back per chunk
# ----------------------------------------------------------------------------------


def test_a_batched_call_refused_goes_per_chunk(tmp_path, monkeypatch):
    """The batched call (block: the chunks' points together) refused by the memory rule: each chunk is evaluated on
    its own, at ``chunk_size``, with the same results."""
    extra, axes = NNE
    plan = make_plan("dragonfly_nne_placement", SMALL + extra, tmp_path, axes)
    chunks = [pts for _, pts in plan.chunks()]
    alone = [evaluate_chunk(plan, pts) for pts in chunks]
    real = W.evaluate_groups
    blocks = []

    def refuse_large(*a, **k):
        blocks.append(k["chunk_size"])
        if k["chunk_size"] > plan.chunk_size:
            raise ResourceError("chunk_size", k["chunk_size"], "a size that fits in memory")
        return real(*a, **k)

    monkeypatch.setattr(W, "evaluate_groups", refuse_large)
    together = evaluate_chunks(make_plan("dragonfly_nne_placement", SMALL + extra, tmp_path, axes), chunks)
    assert max(blocks) > plan.chunk_size and plan.chunk_size in blocks
    for i, (a, b) in enumerate(zip(alone, together)):
        assert_same(a, b, f"chunk {i}")


def test_work_that_does_not_fit_is_still_refused(tmp_path, monkeypatch):
    """Memory for nothing: evaluate_chunks refuses as evaluate_chunk does, naming ``chunk_size`` at its value."""
    extra, axes = NNE
    plan = make_plan("dragonfly_nne_placement", SMALL + extra, tmp_path, axes)
    chunks = [pts for _, pts in plan.chunks()]
    fed = [pts for pts in chunks if "ok" in evaluate_chunk(plan, pts)]
    assert len(fed) > 1
    monkeypatch.setenv(MEMORY_ENV, "1000")  # (the networks built already: only the evaluation is refused)
    with pytest.raises(ResourceError, match=r"chunk_size = 8 is invalid") as alone:
        evaluate_chunk(plan, fed[0])
    with pytest.raises(ResourceError, match=r"chunk_size = 8 is invalid") as together:
        evaluate_chunks(plan, fed)
    assert str(alone.value) == str(together.value)


# ----------------------------------------------------------------------------------
# end to end: Ray tasks of several chunks
# ----------------------------------------------------------------------------------


def test_ray_batches_of_several_chunks_equal_the_local_sweep(tmp_path):
    """A real Ray sweep whose tasks hold several chunks each (evaluated together) writes the dataset the local
    path (chunk by chunk) writes."""
    ray = pytest.importorskip("ray")
    from evaluator.config import RayConfig
    from evaluator.query import open_results
    from evaluator.sweep import run_sweep
    from evaluator.sweep._wait import _batches, _interleaved
    from tests.helpers import strip

    extra, axes = (["traffic.beta=[4,4,2]", "sweep.chunk_size=4"], NNE[1])
    plan = make_plan("dragonfly_nne_placement", SMALL + extra, tmp_path / "ray", axes)
    assert max(len(b) for b in _batches(_interleaved(plan.chunks()), plan.chunk_size, 2)) > 1
    try:
        path = run_sweep(plan, RayConfig(num_cpus=2), progress=False)
    finally:
        ray.shutdown()
    ref = run_sweep(make_plan("dragonfly_nne_placement", SMALL + extra, tmp_path / "local", axes),
                    RayConfig(enabled=False), progress=False)
    ds = open_results(path)
    assert 0 < int(ds.feasible.sum()) < ds.feasible.size
    xr.testing.assert_identical(strip(ds), strip(open_results(ref)))
