"""Degenerate sweeps (audit, 2026-12-07): the sweep engine and the ``sweep`` / ``optimize`` commands on grids of
one point, of no feasible point, of nothing to route, and run again or resumed.

What is checked, on a ring of 4 routers (a 1-D torus, 1 GB/s links, one node a router, DOR with the half-ring tie
split, all-to-all traffic of 1 MB per ordered pair, linear placement), every number against a per-flow walk
written here:

* a grid of one point, chunks of one point and one chunk larger than the grid give the same dataset, every grid
  point present (a task count that does not fit kept with its reason);
* an axis given one value in each syntax (``choice(4)``, ``range(4,5)``, ``[4]``, ``{range: [4, 5]}``,
  ``glob(dor)``, a zip of one row, a product of one axis, ``factorizations`` with one answer) is an axis of one
  value, and the Hydra and ``sweep.axes`` forms of one axis are one run;
* an axis holding a value twice is refused in every syntax (docs/sweeps.md: "An axis gives each value once"),
  naming the axis, the values and that distinct values are allowed;
* ``sweep.max_points`` at the grid's size runs, one below is refused naming it;
* a finished run run again computes nothing and returns its dataset; a run interrupted and resumed after its
  config changed never mixes the two configs' chunks (a new run id, or ``sweep.run_id`` given again refused);
* a sweep with no feasible point writes every point with its reason and exits 2 with one line, run again too;
* a sweep whose every point sends nothing, with ``bounds=true``: time 0, bound 0, exit 0;
* ``evaluator optimize`` on the smallest problem (one task, a 1x1x1 domain).

Defects found and fixed here (each test fails on the code before):

* evaluator/config/hydra/grammar.py: ``traffic.n_tasks=sort(4)`` was no axis (Hydra reads ``sort`` of one value as
  that value; alone, the sweep was refused as having no axis) while ``choice(4)`` and ``range(4,5)`` are axes of
  one value; it is one now. ``shuffle(4)`` was refused as "'[4]' is not an integer", not as shuffle.
* evaluator/config/hydra/composition.py: ``topology.dims='shuffle([4,2,3])'`` (a plain value, in a sweep or in
  ``eval``) composed a network in another random order on every process (another run id each time, or the
  first order frozen in the composition memo); refused now, as ``shuffle(a,b)`` already was.
* evaluator/cli/sweep.py, optimize.py: "1 points on axes", "0 feasible of 1 points", "searched 1 configurations".
"""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from evaluator import cli, config
from evaluator.config import RayConfig
from evaluator.errors import ConfigError
from evaluator.query import open_results
from evaluator.sweep import driver, plan_sweep, run_sweep
from tests.helpers import within as run_within

K = 4  # routers (and nodes) on the ring
BW = 1e9  # link bandwidth, B/s
NBYTES = 1e6  # bytes per ordered task pair
LIMIT_S = 90.0
NO_RAY = RayConfig(enabled=False)
RING = ["topology=torus", f"topology.dims=[{K}]", f"topology.link_bandwidth={BW:g}", "routing=dor",
        "traffic=all_to_all", "placement=linear"]
FITS = f"at most nodes x tasks_per_node = {K} x 1 = {K}"  # the reason of a task count past the ring


def within(fn, seconds: float = LIMIT_S):
    """``fn()`` within ``seconds``: a hang fails the test, not the suite."""
    return run_within(fn, seconds)


# ------------------------------------------------------------------------------------------------ the reference

def ring_walk(n_tasks: int, nbytes: float = NBYTES, first: int = 0) -> dict:
    """Every ordered pair's flow walked along DOR on the ring (half a ring: half each way); task i on node
    ``first + i``; injection and ejection at the sum of a router's 2 outgoing links."""
    load: dict[tuple[int, int], float] = {}
    inj = np.zeros(K)
    ej = np.zeros(K)
    hops = 0.0
    for s, t in itertools.permutations(range(n_tasks), 2):
        a, b = first + s, first + t
        d = (b - a) % K
        ways = [(0.5, +1, d), (0.5, -1, d)] if 2 * d == K else [(1.0, +1, d)] if 2 * d < K else [(1.0, -1, K - d)]
        inj[a] += nbytes
        ej[b] += nbytes
        for w, step, n in ways:
            p = a
            for _ in range(n):
                q = (p + step) % K
                load[(p, q)] = load.get((p, q), 0.0) + w * nbytes
                hops += w * nbytes
                p = q
    total = n_tasks * (n_tasks - 1) * nbytes
    ct = max(max(load.values(), default=0.0) / BW, inj.max() / (2 * BW), ej.max() / (2 * BW))
    return {"completion_time": ct, "total_bytes": total, "max_load_injection": inj.max(),
            "throughput": total / ct if ct > 0 else float("nan"), "mean_hops": hops / total if total else 0.0}


def check_points(ds: xr.Dataset, n_values: list[int], nbytes: float = NBYTES) -> None:
    """Every grid point present: a task count that fits equals its walk, one that does not is kept with its reason."""
    assert ds["traffic.n_tasks"].values.tolist() == [str(n) for n in n_values]
    for n in n_values:
        pt = ds.sel({"traffic.n_tasks": str(n)})
        if n > K:
            assert not bool(pt.feasible) and FITS in str(pt.reason.values), str(pt.reason.values)
            continue
        assert bool(pt.feasible) and str(pt.reason.values) == ""
        for var, want in ring_walk(n, nbytes).items():
            got = float(pt[var])
            assert got == pytest.approx(want, rel=1e-12, nan_ok=True), (n, var, got, want)


def plan(out: Path, axes: dict | None = None, extra=(), base=RING):
    """The plan of a sweep of ``base`` with ``extra`` overrides and ``axes`` (sweep.axes), results under ``out``."""
    return plan_sweep(config.compose_sweep([*base, *extra, f"sweep.output_dir={out}"], axes=axes))


def run(p, **kw) -> Path | None:
    return within(lambda: run_sweep(p, NO_RAY, progress=False, **kw))


def refused(fn, *parts: str) -> str:
    """``fn()`` raises one ConfigError line holding every one of ``parts``."""
    with pytest.raises(ConfigError) as info:
        within(fn)
    msg = str(info.value).strip()
    assert "\n" not in msg, msg
    for part in parts:
        assert part in msg, (part, msg)
    return msg


# ------------------------------------------------------------------------------------------------ one point, chunks

def test_one_point_and_chunks_of_one_and_larger_than_the_grid(tmp_path):
    one = plan(tmp_path, {"traffic.n_tasks": [3]})
    assert one.shape == (1,) and len(one.chunks()) == 1
    check_points(open_results(run(one)), [3])
    values = [2, 5, 3, 4]  # (5 does not fit: kept, with its reason)
    sets = {}
    for size, n_chunks in ((1, 4), (3, 2), (10**12, 1)):  # (a chunk size past any grid: one chunk)
        p = plan(tmp_path, {"traffic.n_tasks": values}, [f"sweep.chunk_size={size}", f"sweep.name=c{size}"])
        assert len(p.chunks()) == n_chunks and sorted(np.concatenate([c for _, c in p.chunks()])) == [0, 1, 2, 3]
        ds = open_results(run(p))
        check_points(ds, values)
        assert int(ds.attrs["n_points"]) == 4 and int(ds.attrs["n_feasible"]) == 3
        sets[size] = ds
    keep = ["completion_time", "throughput", "total_bytes", "mean_hops", "feasible", "reason"]
    for size in (3, 10**12):
        xr.testing.assert_equal(sets[1][keep].drop_attrs(), sets[size][keep].drop_attrs())


# ------------------------------------------------------------------------------------------------ one value, twice

ONE_VALUE = [
    ("traffic.n_tasks=choice(4)", None, "traffic.n_tasks", [(4,)], "list"),
    ("+sweep.axes.traffic.n_tasks=[4]", None, "traffic.n_tasks", [(4,)], "list"),
    ("traffic.n_tasks=range(4,5)", None, "traffic.n_tasks", [(4,)], "range"),
    ("traffic.n_tasks=sort(4)", None, "traffic.n_tasks", [(4,)], "list"),  # (Hydra reads it as the plain value 4)
    ("+sweep.axes.traffic.n_tasks={range:[4,5]}", None, "traffic.n_tasks", [(4,)], "range"),
    (None, {"traffic.n_tasks": {"range": {"start": 4, "stop": 5}}}, "traffic.n_tasks", [(4,)], "range"),
    ("+sweep.axes.s={zip:{traffic.n_tasks:[4],placement.first_node:[0]}}", None, "s", [(4, 0)], "zip"),
    ("+sweep.axes.p={product:{traffic.n_tasks:[4]}}", None, "traffic.n_tasks", [(4,)], "list"),
    ("+sweep.axes.traffic.n_tasks={divisors:1}", None, "traffic.n_tasks", [(1,)], "div"),
]


@pytest.mark.parametrize("override,axes,name,values,form", ONE_VALUE)
def test_an_axis_of_one_value_in_each_syntax(override, axes, name, values, form, tmp_path):
    p = within(lambda: plan(tmp_path, axes, [override] if override else []))
    assert p.shape == (1,) and p.n_points == 1
    assert p.axes[0].name == name and [tuple(v) for v in p.axes[0].values] == values


def test_one_value_axes_of_groups_and_generators(tmp_path):
    no_routing = [o for o in RING if not o.startswith("routing=")]
    p = within(lambda: plan(tmp_path, None, ["routing=glob(dor)"], base=no_routing))
    assert p.shape == (1,) and p.axes[0].name == "routing" and p.axes[0].labels == ("dor",)
    no_dims = [o for o in RING if not o.startswith("topology.dims=")]
    p = within(lambda: plan(tmp_path, {"topology.dims": {"factorizations": {"n": K, "d": 1}}}, base=no_dims))
    assert p.shape == (1,) and [list(v[0]) for v in p.axes[0].values] == [[K]]


@pytest.mark.parametrize("form", ["list", "range"])
def test_the_hydra_and_sweep_axes_forms_of_one_value_are_one_run(form, tmp_path):
    """docs/sweeps.md: "Hydra's grammar and the sweep.axes form of the same axis are the same run"."""
    hydra, axes = {"list": ("choice(4)", "[4]"), "range": ("range(4,5)", "{range:[4,5]}")}[form]
    a = within(lambda: plan(tmp_path, None, [f"traffic.n_tasks={hydra}"]))
    b = within(lambda: plan(tmp_path, None, [f"+sweep.axes.traffic.n_tasks={axes}"]))
    assert a.run_id == b.run_id


TWICE = [
    (["traffic.n_tasks=4,4"], None, "sweep.axes.traffic.n_tasks", "[4, 4]"),
    (["traffic.n_tasks=choice(2,4,2)"], None, "sweep.axes.traffic.n_tasks", "[2, 4, 2]"),
    (["traffic.n_tasks=sort(4,2,4)"], None, "sweep.axes.traffic.n_tasks", "[2, 4, 4]"),
    ([], {"traffic.n_tasks": [3, 3]}, "sweep.axes.traffic.n_tasks", "[3, 3]"),
    (["traffic.bytes=1e6,1000000.0"], None, "sweep.axes.traffic.bytes", "[1000000.0, 1000000.0]"),
    ([], {"s": {"zip": {"traffic.n_tasks": [2, 2], "traffic.bytes": [1e6, 1e6]}}}, "sweep.axes.s", "(2, 1000000.0)"),
    (["topology.dims=choice([4],[4])"], None, "sweep.axes.topology.dims", "[[4], [4]]"),
    (["routing=dor,dor"], None, "sweep.axes.routing", "['dor', 'dor']"),
]


@pytest.mark.parametrize("overrides,axes,field,value", TWICE)
def test_a_value_given_twice_is_refused_in_every_syntax(overrides, axes, field, value, tmp_path):
    """Refused, not kept twice: the dataset's coordinate would name two rows and ``query --where`` one of them."""
    keys = {o.split("=")[0] for o in overrides} | set(axes or {})
    base = [o for o in RING if o.split("=")[0] not in keys]
    refused(lambda: plan(tmp_path, axes, overrides, base=base), field, value, "distinct values", "twice")


@pytest.mark.parametrize("override", ["traffic.n_tasks=shuffle(4)", "topology.dims=shuffle([4,2])"])
def test_shuffle_of_one_value_or_of_a_list_is_refused_as_shuffle(override, tmp_path):
    """Hydra makes no sweep of ``shuffle(4)`` (the list [4]) nor of ``shuffle([4,2])`` (that list in a random order:
    another network, and another run id, on every run); refused as ``shuffle(4,2)`` is, naming the key."""
    key = override.split("=")[0]
    base = [o for o in RING if o.split("=")[0] != key]
    refused(lambda: plan(tmp_path, {"placement.first_node": [0, 1]}, [override], base=base),
            key, repr(override.split("=", 1)[1]), "in a fixed order", "shuffle()")
    # and one point's config (eval, map): a shuffled list composed another network on every run
    refused(lambda: config.compose([*base, "traffic.n_tasks=2", override]), key, "in a fixed order", "shuffle()")


# ------------------------------------------------------------------------------------------------ max_points

def test_max_points_at_the_grid_size_runs_and_one_below_is_refused(tmp_path):
    axes = {"traffic.n_tasks": [2, 3], "placement.first_node": [0, 1, 2]}  # 6 points
    p = plan(tmp_path, axes, ["sweep.max_points=6"])
    assert p.n_points == 6
    ds = open_results(run(p))
    for n, f in itertools.product([2, 3], [0, 1, 2]):
        pt = ds.sel({"traffic.n_tasks": str(n), "placement.first_node": str(f)})
        if n + f > K:  # linear placement runs off the ring's last node: infeasible with its reason
            assert not bool(pt.feasible) and str(pt.reason.values), (n, f)
        else:
            assert bool(pt.feasible) and float(pt.completion_time) == pytest.approx(
                ring_walk(n, first=f)["completion_time"], rel=1e-12)
    refused(lambda: plan(tmp_path, axes, ["sweep.max_points=5"]), "sweep.max_points = 5", "6 points")
    refused(lambda: plan(tmp_path, {"traffic.n_tasks": {"divisors": 12}}, ["sweep.max_points=5"]),
            "sweep.axes.traffic.n_tasks", "sweep.max_points = 5", "6 divisors")  # (sized before it is made)


def test_bounds_beside_points_with_nothing_to_route(tmp_path):
    """One chunk: 1 task (nothing to route), 2 tasks, 5 (does not fit), 4. Closed forms of the best routing: 2
    adjacent tasks send 1 MB each way; each flow may split over its 1-hop and its 3-hop path, disjoint from the
    other flow's links, so half each way loads every link 0.5 MB and the injection 1 MB / 2 GB/s: 0.5 ms either
    way. 4 tasks: 16 MB-hops at least (4 nodes x (1 + 1 + 2) MB hops) over 8 links, 2 MB a link: 2 ms, DOR's."""
    p = plan(tmp_path, {"traffic.n_tasks": [1, 2, 5, 4]}, ["bounds=true", "sweep.chunk_size=4"])
    ds = open_results(run(p))
    check_points(ds, [1, 2, 5, 4])
    opt = ds.optimal_completion_time.values
    assert opt[0] == 0.0 and opt[1] == pytest.approx(0.5e-3, rel=1e-6) and opt[3] == pytest.approx(2e-3, rel=1e-6)
    assert np.isnan(opt[2]) and ds.bound_status.values.tolist() == ["ok", "ok", "", "ok"]
    eff = ds.routing_efficiency.values
    assert eff[1] == pytest.approx(0.5, rel=1e-6) and eff[3] == pytest.approx(1.0, rel=1e-6) and eff[0] == 1.0


# ------------------------------------------------------------------------------------------------ run again, resume

def test_a_finished_run_run_again_computes_nothing(tmp_path, monkeypatch):
    p = plan(tmp_path, {"traffic.n_tasks": [2, 3]})
    first = run(p)
    said: list[str] = []

    def boom(*a, **k):
        raise AssertionError("a point was computed")
    monkeypatch.setattr(driver, "_run_locked", boom)
    again = run(plan(tmp_path, {"traffic.n_tasks": [2, 3]}), warn=said.append)
    assert again == first and any("already finished" in s for s in said), said
    assert len(list((tmp_path / "sweep").glob("*.nc"))) == 1
    check_points(open_results(again), [2, 3])


def test_a_resume_after_the_config_changed_never_mixes_the_two(tmp_path):
    values = [2, 3, 4]
    old = plan(tmp_path, {"traffic.n_tasks": values}, ["sweep.chunk_size=1", f"traffic.bytes={NBYTES:g}"])
    assert run(old, stop_after=1) is None  # interrupted: one chunk (n_tasks=2 at 1 MB) kept
    new = plan(tmp_path, {"traffic.n_tasks": values}, ["sweep.chunk_size=1", f"traffic.bytes={2 * NBYTES:g}"])
    assert new.run_id != old.run_id  # another config is another run: started fresh
    check_points(open_results(run(new)), values, 2 * NBYTES)
    check_points(open_results(run(old)), values, NBYTES)  # and the first resumes with its own chunks


def test_a_run_id_given_again_with_another_config_is_refused(tmp_path, monkeypatch):
    given = ["sweep.chunk_size=1", "sweep.run_id=mine"]
    old = plan(tmp_path, {"traffic.n_tasks": [2, 3]}, [*given, f"traffic.bytes={NBYTES:g}"])
    assert run(old, stop_after=1) is None  # interrupted: one chunk of the 1 MB config kept under run 'mine'
    new = plan(tmp_path, {"traffic.n_tasks": [2, 3]}, [*given, f"traffic.bytes={2 * NBYTES:g}"])
    assert new.run_id == "mine"

    def boom(*a, **k):
        raise AssertionError("a point was computed")
    monkeypatch.setattr(driver, "_run_locked", boom)
    refused(lambda: run_sweep(new, NO_RAY, progress=False), "sweep.run_id", "'mine'", "another config")


# ------------------------------------------------------------------------------------------------ the commands

def sweep_cmd(out: Path, *args: str) -> list[str]:
    return ["sweep", *RING, *args, "ray.enabled=false", "--no-progress", f"sweep.output_dir={out}"]


def test_no_feasible_point_writes_every_point_and_exits_2_run_again_too(tmp_path, capsys):
    """One point, a task count past the ring: its dataset written with the reason, exit 2 with one line, the same
    line when run again (nothing computed), and the header counts "1 point"."""
    cmd = sweep_cmd(tmp_path, "+sweep.axes.traffic.n_tasks=[5]", "sweep.name=none")
    capsys.readouterr()
    for attempt in range(2):
        rc = within(lambda: cli.main(cmd))
        cap = capsys.readouterr()
        err = cap.err.strip().splitlines()[-1] if cap.err.strip() else ""
        assert rc == 2 and "Traceback" not in cap.out + cap.err, (rc, cap)
        assert "0 feasible of 1 point:" in err and "placement.n_tasks" in err and FITS in err, err
        assert "none: 1 point on axes traffic.n_tasks[1]" in cap.out, cap.out
        (path,) = (tmp_path / "none").glob("*.nc")  # the dataset, written once
        assert str(path) in err
        if attempt == 1:
            assert "already finished" in cap.err, cap.err
    with xr.open_dataset(path) as ds:
        assert ds["traffic.n_tasks"].values.tolist() == ["5"]
        assert not ds.feasible.values.any() and FITS in str(ds.reason.values[0])
        assert int(ds.attrs["n_points"]) == 1 and int(ds.attrs["n_feasible"]) == 0
        assert bool(ds.completion_time.isnull().all())  # no time where nothing ran


def test_every_point_sending_nothing_with_bounds(tmp_path, capsys):
    """One task on any node of the ring: no byte at all. Time 0 and optimal bound 0 (a number: defined), the
    throughput of no byte in no time NaN (README "Model notes"), and the command ranks and exits 0."""
    cmd = sweep_cmd(tmp_path, "traffic.n_tasks=1", "placement.first_node=0,1,2,3", "bounds=true", "sweep.name=zero")
    capsys.readouterr()
    rc = within(lambda: cli.main(cmd))
    cap = capsys.readouterr()
    assert rc == 0 and "Traceback" not in cap.out + cap.err, cap
    assert "4 feasible of 4 points" in cap.out, cap.out
    (path,) = (tmp_path / "zero").glob("*.nc")
    with xr.open_dataset(path) as ds:
        assert ds["placement.first_node"].values.tolist() == ["0", "1", "2", "3"]
        assert ds.feasible.values.all()
        for var in ("completion_time", "total_bytes", "off_node_bytes", "optimal_completion_time",
                    "optimal_completion_time_upper", "max_load_injection", "max_load_torus_dim0"):
            assert ds[var].values.tolist() == [0.0] * 4, (var, ds[var].values)
        assert ds.bound_status.values.tolist() == ["ok"] * 4
        assert bool(ds.throughput.isnull().all())


def test_optimize_on_the_smallest_problem(tmp_path, capsys):
    """One task, a 1x1x1 domain, one routing: one configuration (beta = gamma = 1x1x1), nothing sent."""
    capsys.readouterr()
    rc = within(lambda: cli.main(["optimize", "--tasks", "1", "--alpha", "1,1,1", "--routings", "minimal",
                                  f"sweep.output_dir={tmp_path}", "--no-progress"]))
    cap = capsys.readouterr()
    assert rc == 0 and "Traceback" not in cap.out + cap.err, cap
    assert "searched 1 configuration (1 feasible) on DF(4,8,4,33)" in cap.out, cap.out
    (path,) = (tmp_path / "optimize").glob("*.nc")
    with xr.open_dataset(path) as ds:
        assert int(ds.attrs["n_points"]) == 1 and ds.feasible.values.all()
        assert ds.completion_time.values.ravel().tolist() == [0.0]
        assert ds.total_bytes.values.ravel().tolist() == [0.0]
