"""The sweep's fast path against the per-point path it replaces.

A worker builds each group of points that differ only in their seed once,
draws seeded placements on the device and evaluates flows from a bank; every
point must still equal a direct evaluation of its own config (built by the
library, placement drawn on the host), infeasible points must carry the reason
that config gives, and an interrupted sweep resumed must equal an uninterrupted
one.
"""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

from evaluator import config
from evaluator.config import RayConfig
from evaluator.placement._seeded import GENERATOR_ID
from evaluator.query import open_results
from evaluator.sweep import plan_sweep, run_sweep
from evaluator.sweep.worker import evaluate_chunk
from tests.helpers import TOL, per_point, strip

NO_RAY = RayConfig(enabled=False)
ONE_THREAD = RayConfig(enabled=False, num_cpus=1)
SMALL = ["topology.p=2", "topology.a=4", "topology.h=2", "traffic.alpha=[16,16,8]"]


def make_plan(name, extra, out, axes=None):
    ov = [f"sweeps={name}", *SMALL, *extra, f"sweep.output_dir={out}"]
    user = [o for o in [*SMALL, *extra] if not o.startswith("sweep.")]
    return plan_sweep(config.compose_sweep(ov, user_overrides=user, axes=axes))





def check_against_per_point(plan, ds, sample=None):
    flats = np.arange(plan.n_points) if sample is None else sample
    ct = ds.completion_time.values.reshape(-1)
    for flat in flats:
        why, ref = per_point(plan, int(flat))
        assert str(ds.reason.values.reshape(-1)[flat]) == why, flat
        assert bool(ds.feasible.values.reshape(-1)[flat]) == (why == "")
        if ref is None:
            assert np.isnan(ct[flat])
            continue
        assert ct[flat] == pytest.approx(float(ref.completion_time), rel=TOL["rel"])
        for v in ("throughput", "mean_hops", "max_load_global", "max_load_local"):
            assert float(ds[v].values.reshape(-1)[flat]) == pytest.approx(float(ref[v]), rel=TOL["rel_sum"])
        assert str(ds.bottleneck.values.reshape(-1)[flat]) == ref.bottleneck.item()


@pytest.mark.parametrize("name,extra,axes", [
    ("dragonfly_nne_placement", ["traffic.beta=[4,4,2]", "sweep.chunk_size=16"],
     {"placement.gamma": {"divisors": [4, 4, 2]}, "routing": ["minimal", "valiant"],
      "placement.seed": {"range": [0, 6]}}),
    ("dragonfly_random_placement", ["sweep.chunk_size=8"],
     {"traffic.beta": [[4, 2, 2], [4, 4, 2]], "placement.tasks_per_group": {"divisors": "traffic.beta", "total": True},
      "placement.seed": {"range": [0, 5]}}),
])
def test_every_point_equals_its_own_evaluation(name, extra, axes, tmp_path):
    plan = make_plan(name, extra, tmp_path, axes)
    assert plan.seed_axis is not None
    ds = open_results(run_sweep(plan, NO_RAY, progress=False))
    assert 0 < int(ds.feasible.sum()) < plan.n_points
    assert ds.attrs["placement_generator"].startswith(GENERATOR_ID)
    check_against_per_point(plan, ds)


def test_numpy_generator_and_bad_seeds_go_the_host_way(tmp_path):
    """placement.generator=numpy: drawn per point on the host; seeds the threefry key refuses are infeasible."""
    extra = ["traffic.beta=[4,4,2]", "sweep.chunk_size=4"]
    axes = {"placement.gamma": [[2, 2, 2], [4, 4, 1], [3, 1, 1]], "placement.seed": [-1, 0, 3, 2**64]}
    for gen in ("numpy", "threefry"):
        plan = make_plan("dragonfly_nne_placement", extra + [f"placement.generator={gen}"], tmp_path / gen, axes)
        ds = open_results(run_sweep(plan, NO_RAY, progress=False))
        check_against_per_point(plan, ds)
        big = ds.reason.sel({"placement.seed": "18446744073709551616", "placement.gamma": "2x2x2"}).item()
        assert (big == "") == (gen == "numpy")
        assert ds.reason.sel({"placement.seed": "-1", "placement.gamma": "2x2x2"}).item().startswith("placement.seed")


def test_without_seed_axis_and_on_one_thread(tmp_path):
    """No seed axis (each group one point, every beta in one flow bank); one thread or two, the same dataset."""
    extra = ["sweep.chunk_size=32"]
    axes = {"traffic.beta": {"factorizations": {"n": 32, "d": 3}}, "placement.gamma": {"divisors": "traffic.beta"},
            "routing": ["minimal", "valiant"]}
    plan = make_plan("dragonfly_nne_decomposition", extra, tmp_path / "two", axes)
    assert plan.seed_axis is None
    two = open_results(run_sweep(plan, NO_RAY, progress=False))
    one = open_results(run_sweep(make_plan("dragonfly_nne_decomposition", extra, tmp_path / "one", axes), ONE_THREAD,
                                 progress=False))
    xr.testing.assert_identical(strip(one), strip(two))
    feasible = np.flatnonzero(two.feasible.values.reshape(-1))
    rng = np.random.default_rng(0)
    sample = np.concatenate([rng.choice(feasible, 40, replace=False),
                             rng.choice(np.flatnonzero(~two.feasible.values.reshape(-1)), 20, replace=False)])
    check_against_per_point(plan, two, sample)


def test_resumed_seed_sweep_is_identical_to_uninterrupted(tmp_path):
    extra = ["traffic.beta=[4,4,2]", "sweep.chunk_size=8"]
    axes = {"placement.gamma": {"divisors": [4, 4, 2]}, "routing": ["minimal", "valiant"],
            "placement.seed": {"range": [0, 10]}}
    full = make_plan("dragonfly_nne_placement", extra, tmp_path / "a", axes)
    ref = open_results(run_sweep(full, NO_RAY, progress=False))
    part = make_plan("dragonfly_nne_placement", extra, tmp_path / "b", axes)
    assert run_sweep(part, NO_RAY, progress=False, stop_after=5) is None
    chunk_dir = part.out_dir / f".{part.run_id}.chunks"
    assert len(list(chunk_dir.glob("*.pkl"))) == 5
    again = make_plan("dragonfly_nne_placement", extra, tmp_path / "b", axes)  # a new driver: nothing in memory
    done = open_results(run_sweep(again, ONE_THREAD, progress=False))
    xr.testing.assert_identical(strip(done), strip(ref))
    assert not chunk_dir.exists()


def test_a_chunk_is_a_pure_function_of_its_points(tmp_path):
    """A chunk evaluated alone, after others, or split across groups gives the same result."""
    extra = ["traffic.beta=[4,4,2]", "sweep.chunk_size=11"]
    axes = {"placement.gamma": {"divisors": [4, 4, 2]}, "placement.seed": {"range": [0, 7]}}
    plan = make_plan("dragonfly_nne_placement", extra, tmp_path, axes)
    chunks = plan.chunks()
    later = [evaluate_chunk(plan, pts) for _, pts in chunks][-1]
    fresh = make_plan("dragonfly_nne_placement", extra, tmp_path, axes)
    alone = evaluate_chunk(fresh, chunks[-1][1])
    for k in ("flat", "reason_code", "ok"):
        np.testing.assert_array_equal(later.get(k, []), alone.get(k, []))
    assert later["reasons"] == alone["reasons"]
    for k, v in later.get("metrics", {}).items():
        np.testing.assert_array_equal(v, alone["metrics"][k])


@pytest.mark.parametrize("keep, given, want", [("false", None, 1024), ("true", None, 256), ("false", 40, 40)])
def test_chunk_size_null_takes_the_default_of_the_results_kept(keep, given, want, tmp_path):
    """``sweep.chunk_size`` null (the default): 1,024 points a chunk, 256 when every point's link loads are kept;
    a number given is taken as it is, and the chunks are cut at it."""
    extra = [f"sweep.keep_link_load={keep}"] + ([f"sweep.chunk_size={given}"] if given is not None else [])
    plan = make_plan("dragonfly_nne_placement", extra, tmp_path,
                     axes={"traffic.beta": [[4, 4, 2]], "placement.gamma": {"divisors": [4, 4, 2]},
                           "routing": ["minimal"], "placement.seed": {"range": [0, 300]}})
    assert plan.chunk_size == want
    sizes = [pts.size for _, pts in plan.chunks()]
    assert plan.n_points > 1024 and max(sizes) == want
    from evaluator.sweep.assemble import _attrs

    # the dataset says what it ran with (its config_yaml keeps the null given)
    assert _attrs(plan, {"start_time": "t"}, [])["chunk_size"] == want


def test_on_dataset_is_shown_the_dataset_as_it_is_written(tmp_path):
    """``run_sweep(..., on_dataset=...)`` (the CLI's summary, printed while the file is written): called once with
    the dataset the file holds and the file's path; not called for a run that had finished before; an error it
    raises comes out after the file is written."""
    plan = make_plan("dragonfly_nne_placement", ["sweep.chunk_size=64"], tmp_path / "a")
    seen = []
    path = run_sweep(plan, NO_RAY, progress=False, on_dataset=lambda ds, p: seen.append((ds, p)))
    assert [p for _, p in seen] == [path]
    shown, read = seen[0][0], open_results(path)
    xr.testing.assert_equal(shown, read)  # every variable and coordinate (netCDF writes a list of one as a scalar)
    for key in ("n_feasible", "n_points", "timing_json", "reason_counts_json"):  # the attributes the summary reads
        assert str(shown.attrs[key]) == str(read.attrs[key]), key
    again = []
    assert run_sweep(plan, NO_RAY, progress=False, on_dataset=lambda ds, p: again.append(p), warn=again.append) \
        == path and len(again) == 1 and "already finished" in again[0]

    other = make_plan("dragonfly_nne_placement", ["sweep.chunk_size=64"], tmp_path / "b")

    def fails(ds, p):
        raise RuntimeError("the summary failed")

    with pytest.raises(RuntimeError, match="the summary failed"):
        run_sweep(other, NO_RAY, progress=False, on_dataset=fails)
    written = list((tmp_path / "b").rglob("*.nc"))
    assert len(written) == 1
    xr.testing.assert_identical(strip(open_results(written[0])), strip(open_results(path)))


def test_the_drivers_own_chunks_stop_when_ray_answers_or_at_the_limit(tmp_path):
    """:class:`~evaluator.sweep.driver._DriverChunks` (the driver's work while its local Ray starts): the first
    chunks to do, in order, each exactly :func:`evaluate_chunk`'s result, until ``ready()`` says Ray has answered,
    and never past ``stop_after`` (a run stopped there) or the chunks there are."""
    from evaluator.sweep._wait import _interleaved
    from evaluator.sweep.driver import _DriverChunks

    axes = {"placement.gamma": {"divisors": [4, 4, 2]}, "routing": ["minimal", "valiant"],
            "placement.seed": {"range": [0, 10]}}
    plan = make_plan("dragonfly_nne_placement", ["traffic.beta=[4,4,2]", "sweep.chunk_size=8"], tmp_path / "a", axes)
    todo = _interleaved(plan.chunks())[:12]  # (the driver's order: its networks in turn; the last two evaluate)

    class Recorder:
        def __init__(self):
            self.got = []

        def submit(self, cid, res):
            self.got.append((cid, res))

    def run(stop_after, answers_after):
        rec = Recorder()
        own = _DriverChunks(plan, todo, rec, stop_after)
        own(lambda: len(rec.got) >= answers_after)
        assert own.count == len(rec.got)
        return [cid for cid, _ in rec.got], rec.got

    assert run(None, 2)[0] == [cid for cid, _ in todo[:2]]
    assert run(3, 99)[0] == [cid for cid, _ in todo[:3]]
    assert run(None, 99)[0] == [cid for cid, _ in todo]
    assert run(None, 0)[0] == []
    feasible = 0
    # a second full run, not the one above: its chunks compile nothing, as evaluate_chunk's below, so the keys of
    # both results agree (a chunk that compiled records n_compiles and xla_one_core)
    for (cid, res), (cid2, pts) in zip(run(None, 99)[1], todo):
        want = evaluate_chunk(plan, pts)
        assert cid == cid2 and sorted(res) == sorted(want)
        for key in set(want) - {"build_s", "compile_s", "eval_s", "peak_rss_bytes", "n_compiles"}:
            a, b = res[key], want[key]
            if isinstance(b, np.ndarray):
                assert np.array_equal(a, b, equal_nan=b.dtype.kind == "f"), key
            else:
                assert str(a) == str(b), key
        feasible += len(want.get("ok", ()))
    assert feasible > 0  # (the chunks compared evaluate points, not only refuse them)
