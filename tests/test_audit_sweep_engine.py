"""Audit of the sweep engine (evaluator/sweep): every grid point against independent references.

A small torus sweep (DOR, all-to-all, linear placement) is run in this process with several chunks per network, an
axis of values out of order, a zip axis with labels, a network axis (link bandwidth) and a routing axis whose values
are a name and a mapping; a point whose placement does not fit is infeasible. Each point is compared with

* a per-flow walk written here (every ordered task pair's bytes along its DOR path on the torus, split at half a ring
  as ``tie: split`` does; injection and ejection links at the sum of a router's outgoing links), and
* the public one-point API (:func:`evaluator.evaluate`) on a config assembled here from the composed base (not through
  the plan's own point configs).

Also: resuming an interrupted run recomputes exactly the chunks not stored and gives the dataset an uninterrupted run
gives; the dataset's units are SI; bad inputs are refused before any chunk runs, naming the field, the value and
what is allowed.
"""

from __future__ import annotations

import copy
import itertools

import numpy as np
import pytest
import xarray as xr

import evaluator as ev
from evaluator import config
from evaluator.config import RayConfig
from evaluator.errors import ConfigError, StorageError
from evaluator.query import open_results
from evaluator.sweep import driver, plan_sweep, run_sweep
from tests.helpers import TOL, strip

NO_RAY = RayConfig(enabled=False)
DIMS = (3, 4)
BASE = ["topology=torus", "topology.dims=[3,4]", "routing=dor", "traffic=all_to_all", "placement=linear"]
N_TASKS = [12, 4, 8]  # (out of order: coordinates keep the order given)
JOB = [(3, 2.5e6, "far"), (0, 1.0e6, "near")]  # (first_node, bytes, label)
ROUTINGS = [("dor", "split"), ({"kind": "dor", "tie": "positive"}, "positive")]  # (value, tie)
BANDWIDTHS = [3.0e9, 2.0e9]
AXES = {
    "traffic.n_tasks": N_TASKS,
    "job": {"zip": {"placement.first_node": [j[0] for j in JOB], "traffic.bytes": [j[1] for j in JOB]},
            "label": [j[2] for j in JOB]},
    "routing": [r[0] for r in ROUTINGS],
    "topology.link_bandwidth": BANDWIDTHS,
}
CHUNK = 4  # 6 points per network (routing x bandwidth): chunks of 4 and 2


def _plan(out, axes=None, extra=()):
    axes = AXES if axes is None else axes
    base = [o for o in BASE if o.split("=")[0] not in axes]  # (an override an axis sets is a conflict)
    ov = [*base, f"sweep.chunk_size={CHUNK}", *extra, f"sweep.output_dir={out}"]
    return plan_sweep(config.compose_sweep(ov, axes=copy.deepcopy(axes)))


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    out = tmp_path_factory.mktemp("full")
    plan = _plan(out)
    return plan, open_results(run_sweep(plan, NO_RAY, progress=False))


# ------------------------------------------------------------------ references

def _ring_steps(a: int, b: int, k: int, tie: str) -> list[tuple[float, int, int]]:
    """``(weight, direction, hops)`` of DOR on a ring of ``k`` from ``a`` to ``b`` (at half a ring: half each way,
    or all the positive way)."""
    d = (b - a) % k
    if d == 0:
        return [(1.0, 0, 0)]
    if 2 * d == k and tie == "split":
        return [(0.5, +1, d), (0.5, -1, d)]
    return [(1.0, +1, d)] if 2 * d < k else [(1.0, -1, k - d)]


def walk(n_tasks, first_node, nbytes, tie, bw):
    """Every flow walked along its DOR path: the metrics of the point (SI units)."""
    load: dict[tuple, float] = {}
    inj = np.zeros(int(np.prod(DIMS)))
    ej = np.zeros_like(inj)
    total = off = 0.0
    for s, t in itertools.permutations(range(n_tasks), 2):
        a, b = first_node + s, first_node + t  # linear: one task per node, node = router
        total += nbytes
        if a == b:
            continue
        off += nbytes
        inj[a] += nbytes
        ej[b] += nbytes
        paths = [(1.0, list(np.unravel_index(a, DIMS)))]
        for dim in range(len(DIMS)):  # dimension order as given
            nxt = []
            for w, pos in paths:
                for w2, step, hops in _ring_steps(pos[dim], int(np.unravel_index(b, DIMS)[dim]), DIMS[dim], tie):
                    p = list(pos)
                    for _ in range(hops):
                        q = list(p)
                        q[dim] = (p[dim] + step) % DIMS[dim]
                        key = (dim, int(np.ravel_multi_index(p, DIMS)), int(np.ravel_multi_index(q, DIMS)))
                        load[key] = load.get(key, 0.0) + w * w2 * nbytes
                        p = q
                    nxt.append((w * w2, p))
            paths = nxt
    node_bw = 2 * len(DIMS) * bw  # every ring here has more than 2 routers: 2 outgoing links per dimension
    per_dim = [max([v for (d, _, _), v in load.items() if d == dim], default=0.0) for dim in range(len(DIMS))]
    ct = max(max(per_dim) / bw, inj.max() / node_bw, ej.max() / node_bw)
    return {"completion_time": ct, "total_bytes": total, "off_node_bytes": off, "throughput": total / ct,
            "effective_injection_bandwidth": (n_tasks - 1) * nbytes / ct,
            "mean_hops": sum(load.values()) / off, "max_load_torus_dim0": per_dim[0],
            "max_load_torus_dim1": per_dim[1], "max_load_injection": inj.max(), "max_load_ejection": ej.max()}


_BASE_OBJ: list = []


def one_point(n, first, nbytes, routing, bw):
    """The point evaluated alone with the public API, on a config assembled here (None: infeasible)."""
    if not _BASE_OBJ:
        _BASE_OBJ.append(config.to_object(config.compose(BASE)))
    cfg = copy.deepcopy(_BASE_OBJ[0])
    cfg.traffic.n_tasks, cfg.traffic.bytes, cfg.placement.first_node = n, nbytes, first
    cfg.topology.link_bandwidth = bw
    if isinstance(routing, dict):
        cfg.routing.tie = routing["tie"]
    try:
        p = config.build(cfg)
    except ConfigError:
        return None
    return ev.evaluate(p.topology, p.traffic, p.placement, p.routing)


def grid():
    """Every point as (coordinate labels, axis values), in the grid's order (product of the axes as given)."""
    for n, job, rt, bw in itertools.product(N_TASKS, JOB, ROUTINGS, BANDWIDTHS):
        coords = {"traffic.n_tasks": str(n), "job": job[2], "routing": None, "topology.link_bandwidth": f"{bw:.6g}"}
        yield coords, (n, job[0], job[1], rt, bw)


METRICS = ("completion_time", "total_bytes", "off_node_bytes", "throughput", "effective_injection_bandwidth",
           "mean_hops", "max_load_torus_dim0", "max_load_torus_dim1", "max_load_injection", "max_load_ejection")


# ------------------------------------------------------------------ every point

def test_coordinates_keep_the_axes_and_values_in_the_order_given(swept):
    plan, ds = swept
    assert list(ds.completion_time.dims) == list(AXES)
    assert list(ds["traffic.n_tasks"].values) == [str(n) for n in N_TASKS]
    assert list(ds["job"].values) == [j[2] for j in JOB]
    assert list(ds["topology.link_bandwidth"].values) == [f"{b:.6g}" for b in BANDWIDTHS]
    assert ds.completion_time.shape == (3, 2, 2, 2) and ds.attrs["n_points"] == 24
    assert len(plan.chunks()) == 8 and {p.size for _, p in plan.chunks()} == {CHUNK, 6 - CHUNK}


def test_every_point_equals_its_per_flow_walk_and_its_own_evaluation(swept):
    _, ds = swept
    infeasible = 0
    for flat, (_, (n, first, nbytes, (rt, tie), bw)) in enumerate(grid()):
        idx = np.unravel_index(flat, ds.completion_time.shape)
        at = {k: ds[k].values[idx] for k in METRICS + ("feasible", "reason")}
        if first + n > int(np.prod(DIMS)):  # the placement does not fit: kept, NaN, with a reason
            infeasible += 1
            assert not at["feasible"] and "placement.first_node" in str(at["reason"]), (flat, at["reason"])
            assert all(np.isnan(at[k]) for k in METRICS), flat
            assert one_point(n, first, nbytes, rt, bw) is None
            continue
        assert at["feasible"] and at["reason"] == "", (flat, at["reason"])
        ref = walk(n, first, nbytes, tie, bw)
        alone = one_point(n, first, nbytes, rt, bw)
        for k in METRICS:
            assert at[k] == pytest.approx(ref[k], rel=TOL["rel_sum"]), (flat, k)
            assert at[k] == pytest.approx(float(alone[k]), rel=TOL["rel"]), (flat, k)
    assert infeasible == 4 and int(ds.feasible.sum()) == 20 and ds.attrs["n_feasible"] == 20


def test_the_routing_axis_changes_the_answer_where_the_walk_says(swept):
    """The two ties give different loads on the 4-router rings at some point: the routing axis is not ignored,
    and the per-point comparison above tells its values apart."""
    _, ds = swept
    a = ds.max_load_torus_dim1.isel(routing=0).values
    b = ds.max_load_torus_dim1.isel(routing=1).values
    ref = {tie: walk(8, 0, 1e6, tie, 2e9)["max_load_torus_dim1"] for _, tie in ROUTINGS}
    assert ref["positive"] > ref["split"]
    assert np.nanmax(np.abs(a - b)) > 0


def test_distinct_values_get_distinct_labels_that_give_the_value_back(tmp_path):
    """1234567.0 and 1234568.0 were both labelled '1.23457e+06': one coordinate naming two rows."""
    values = [1234567.0, 1234568.0, 2.0e9, 2.5e9, 12345678901.0, 1500.0]
    plan = _plan(tmp_path, {"traffic.bytes": values})
    labels = plan.axes[0].labels
    assert len(set(labels)) == len(values)
    assert [float(x) for x in labels] == values
    assert labels[2:4] == ("2e+09", "2.5e+09")  # (six digits where they suffice: the labels sweeps had)


def test_dataset_units_are_si(swept):
    _, ds = swept
    want = {"completion_time": "s", "throughput": "bytes/s", "effective_injection_bandwidth": "bytes/s",
            "total_bytes": "bytes", "off_node_bytes": "bytes", "max_load_injection": "bytes",
            "max_load_torus_dim0": "bytes", "max_load_torus_dim1": "bytes", "max_load_ejection": "bytes"}
    for k, u in want.items():
        assert ds[k].attrs.get("units") == u, k
    # 4 tasks, 1 MB each way, on a 2 GB/s torus: milliseconds, stored in seconds (the walk's number)
    v = float(ds.completion_time.sel({"traffic.n_tasks": "4", "job": "near", "topology.link_bandwidth": "2e+09"})
              .isel(routing=0))
    assert v == pytest.approx(walk(4, 0, 1e6, "split", 2e9)["completion_time"], rel=TOL["rel"]) and 1e-5 < v < 1e-2


# ------------------------------------------------------------------ resume

def test_resume_recomputes_only_the_chunks_not_stored(swept, tmp_path, monkeypatch):
    plan0, full = swept
    part = _plan(tmp_path)
    assert part.run_id == plan0.run_id
    assert run_sweep(part, NO_RAY, progress=False, stop_after=3) is None
    chunk_dir = part.out_dir / f".{part.run_id}.chunks"
    stored = {p.stem for p in chunk_dir.glob("*.pkl")}
    assert len(stored) == 3
    chunks = dict((cid, set(map(int, pts))) for cid, pts in part.chunks())
    seen: list[set[int]] = []
    real = driver.evaluate_chunk

    def recording(plan, pts):
        seen.append(set(map(int, pts)))
        return real(plan, pts)

    monkeypatch.setattr(driver, "evaluate_chunk", recording)
    done = open_results(run_sweep(_plan(tmp_path), NO_RAY, progress=False))
    assert sorted(map(sorted, seen)) == sorted(sorted(v) for k, v in chunks.items() if k not in stored)
    a, b = strip(done), strip(full)
    for ds in (a, b):  # (the checkout's HEAD may move between the two runs: other work commits meanwhile)
        ds.attrs.pop("git_commit", None)
        ds.attrs.pop("git_commits_resumed", None)
    xr.testing.assert_identical(a, b)
    assert not chunk_dir.exists()


def test_a_run_resumed_under_another_commit_says_so_and_names_both(tmp_path, monkeypatch):
    """The dataset's ``git_commit`` named the commit at assembly: a run started under one commit and resumed under
    another (its first chunks computed by the earlier code) claimed the later one alone."""
    import evaluator.io as evio

    first, second = "a" * 40, "b" * 40
    monkeypatch.setattr(evio, "git_commit", lambda: first)
    assert run_sweep(_plan(tmp_path), NO_RAY, progress=False, stop_after=2) is None
    monkeypatch.setattr(evio, "git_commit", lambda: second)
    said: list[str] = []
    ds = open_results(run_sweep(_plan(tmp_path), NO_RAY, progress=False, warn=said.append))
    assert ds.attrs["git_commit"] == first and ds.attrs["git_commits_resumed"] == second
    assert any("started at commit aaaaaaaaaaaa and was resumed at bbbbbbbbbbbb: its 2 finished chunk(s)" in m
               for m in said), said
    fresh = open_results(run_sweep(_plan(tmp_path / "fresh"), NO_RAY, progress=False, warn=said.append))
    assert fresh.attrs["git_commit"] == second and "git_commits_resumed" not in fresh.attrs


# ------------------------------------------------------------------ bad inputs

def _no_chunk(monkeypatch):
    def boom(*a, **k):
        raise AssertionError("a chunk ran before the bad input was refused")

    monkeypatch.setattr(driver, "evaluate_chunk", boom)


@pytest.mark.parametrize("axes,extra,field,allowed", [
    ({"traffic.n_tasks": ["a", "b"]}, [], "sweep.axes.traffic.n_tasks", "the key's type"),
    ({"traffic.n_tasks": [4.5, 8]}, [], "sweep.axes.traffic.n_tasks", "the key's type"),
    ({"traffic.n_tasks": [4, "8"]}, [], "sweep.axes.traffic.n_tasks", "an integer"),
    ({"traffic.bytes": ["1e6", 2e6]}, [], "sweep.axes.traffic.bytes", "a number"),
    ({"topology.dims": [[3, "4"], [3, 5]]}, [], "sweep.axes.topology.dims", "a list of integers"),
    ({"traffic.n_tasks": {"range": [5, 5]}}, [], "sweep.axes.traffic.n_tasks", "at least one value"),
    ({"traffic.n_tasks": {"range": [8, 4]}}, [], "sweep.axes.traffic.n_tasks", "at least one value"),
    ({"traffic.n_tasks": {"range": [0, 8, 0]}}, [], "sweep.axes.traffic.n_tasks", "non-zero step"),
    ({"traffic.n_tasks": []}, [], "sweep.axes.traffic.n_tasks", "non-empty"),
    ({"traffic.n_tasks": [4, 4.0]}, [], "sweep.axes.traffic.n_tasks", "distinct"),
    ({"traffic.n_tasks": [4, 8], "z": {"zip": {"traffic.n_tasks": [4, 8], "traffic.bytes": [1.0, 2.0]}}}, [],
     "sweep.axes", "each config key swept once"),
    ({"z": {"zip": {"traffic.n_tasks": [4, 8, 12], "traffic.bytes": [1.0, 2.0]}}}, [], "sweep.axes.z.zip",
     "equal length"),
    ({"topology.link_bandwidth": [2000.0, "2000"]}, [], "sweep.axes.topology.link_bandwidth", "labels differ"),
    ({"traffic.nope": [1, 2]}, [], "sweep.axes", "a key of the traffic kind"),
    ({"nope": [1, 2]}, [], "sweep.axes", "a key of the composed config"),
    ({"traffic.n_tasks": [4, 8]}, ["sweep.chunk_size=0"], "sweep.chunk_size", "an integer >= 1"),
    ({"traffic.n_tasks": [4, 8]}, ["sweep.chunk_size=-3"], "sweep.chunk_size", "an integer >= 1"),
    ({"traffic.n_tasks": [4, 8]}, ["sweep.max_points=1"], "sweep.axes.traffic.n_tasks", "sweep.max_points"),
])
def test_bad_inputs_are_refused_naming_field_value_and_allowed(axes, extra, field, allowed, tmp_path, monkeypatch):
    _no_chunk(monkeypatch)
    with pytest.raises(ConfigError) as e:
        run_sweep(_plan(tmp_path, axes, extra), NO_RAY, progress=False)
    msg = str(e.value)
    assert e.value.field == field and allowed in msg, msg
    assert "is invalid: allowed is" in msg
    assert not list(tmp_path.rglob("*.pkl"))


def test_chunk_size_not_an_integer_is_refused(tmp_path):
    for bad in ("2.5", "true"):
        with pytest.raises(ConfigError) as e:
            _plan(tmp_path, {"traffic.n_tasks": [4, 8]}, [f"sweep.chunk_size={bad}"])
        assert "sweep.chunk_size" in str(e.value) and bad.lower() in str(e.value).lower()


def test_output_dir_that_cannot_be_written_is_refused_before_any_chunk(tmp_path, monkeypatch):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a directory")
    plan = _plan(blocker, {"traffic.n_tasks": [4, 8]})
    _no_chunk(monkeypatch)
    with pytest.raises(StorageError) as e:
        run_sweep(plan, NO_RAY, progress=False)
    assert e.value.field == "sweep.output_dir" and str(blocker) in str(e.value)
    assert blocker.read_text() == "not a directory"
