"""The benchmark's SciPy baseline and its table, against independent references (no timings asserted).

* :class:`evaluator.bench.baseline.SparseMatrixBaseline` (a SciPy sparse
  routing matrix, links x router pairs on Dragonflies, links x flows on tori)
  against the per-flow walk of ``tests/reference.py``, link for link:
  Dragonfly minimal and Valiant (parallel global links, both arrangements),
  torus DOR with split and positive ties, meshes, 2-rings, several nodes per
  router, explicit orders; sparse and dense rank-one traffic; every path of
  its apply (few flows, many flows on few pairs, most pairs); one matrix
  reused over placements (Dragonfly) and rebuilt for a new one (torus);
* its size estimate bounds the matrix it builds, and a matrix that would not
  fit is refused before anything is built;
* the bench table has a ``vs SciPy`` column (a ratio, ``R too big (...)`` or
  ``-``), and the end-to-end rows read the driver's peak and the dataset's
  attributes from a command's output;
* the large-torus pattern of the bench against the reference.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest
import xarray as xr

from evaluator import placement as P
from evaluator import routing as RT
from evaluator import topology as T
from evaluator import traffic as TR
from evaluator.bench import format_table
from evaluator.bench.baseline import BYTES_PER_ENTRY, SparseMatrixBaseline
from evaluator.bench._big import BIG_REPEAT, _big_table_rows, _scipy_big, _torus_patterns
from evaluator.bench._common import _interleaved
from evaluator.bench.run import parse_cli_output
from evaluator.errors import ResourceError
from evaluator.evaluation import evaluate
from evaluator.traffic import DenseTraffic
from evaluator.traffic import dense as structured
from tests.helpers import TOL

try:
    from tests.reference import reference_link_loads
except ImportError:  # pragma: no cover
    from reference import reference_link_loads


def as_dict(r: RT.Routing) -> dict:
    return {"kind": r.kind, "order": getattr(r, "order", "as_given"), "tie": getattr(r, "tie", "split")}


def ref_loads(topo, traffic, placement, routing) -> np.ndarray:
    if isinstance(traffic, DenseTraffic):
        traffic = traffic.to_traffic()
    flows = zip(traffic.src.tolist(), traffic.dst.tolist(), traffic.nbytes.tolist())
    return reference_link_loads(topo, flows, placement.task_node, as_dict(routing))


def assert_loads(got, ref, label=""):
    got = np.asarray(got)
    assert got.shape == ref.shape
    assert ref.max() > 0, "a case that routes nothing checks nothing"
    scale = max(1.0, float(np.abs(ref).max()))
    np.testing.assert_allclose(got, ref, rtol=TOL["rel"], atol=TOL["bytes"] * scale / 1e6 + TOL["bytes"],
                               err_msg=label)


def random_point(topo, n_flows: int, seed: int):
    """Random flows between 2 x nodes tasks on a random placement: same-node and same-router flows included."""
    rng = np.random.default_rng(seed)
    n = topo.n_nodes
    k = 2 * n
    traffic = TR.from_flows(k, rng.integers(0, k, n_flows), rng.integers(0, k, n_flows), rng.random(n_flows) * 1e6)
    return traffic, P.explicit(topo, rng.integers(0, n, k))


CASES = [
    (lambda: T.dragonfly(2, 4, 2, 5), RT.minimal()),  # 2 global links per group pair
    (lambda: T.dragonfly(2, 4, 2, 5), RT.valiant()),
    (lambda: T.dragonfly(1, 3, 3, 4, arrangement="relative"), RT.valiant()),  # 3 per pair, relative
    (lambda: T.dragonfly(2, 4, 2), RT.valiant()),  # 9 groups, one link per pair
    (lambda: T.dragonfly(2, 4, 2), RT.minimal()),
    (lambda: T.torus((4, 3, 2)), RT.dor()),  # split ties on the 4-ring, a 2-ring
    (lambda: T.torus((6, 4, 2)), RT.dor()),
    (lambda: T.torus((4, 4, 6), wrap=(True, False, True), nodes_per_router=2), RT.dor("longest_first", "positive")),
    (lambda: T.torus((4, 4, 6), wrap=(True, False, True)), RT.dor("longest_first", "split")),
    (lambda: T.torus((2, 1, 4, 2)), RT.dor((3, 2, 1, 0))),
    (lambda: T.torus((3, 5), wrap=False), RT.dor()),  # a mesh
]


@pytest.mark.parametrize("make,routing", CASES)
def test_scipy_baseline_matches_reference(make, routing):
    topo = make()
    traffic, placement = random_point(topo, 300, seed=2)
    base = SparseMatrixBaseline(topo, routing)
    got = base.link_loads(traffic, placement)
    assert_loads(got, ref_loads(topo, traffic, placement, routing), f"{topo.name} {routing.label}")
    assert 0 < base.nnz <= base.estimate(traffic, placement)  # the estimate bounds what is built


@pytest.mark.parametrize("make,routing", CASES)
def test_scipy_baseline_dense_traffic(make, routing):
    topo = make()
    n = topo.n_nodes
    rng = np.random.default_rng(5)
    pl = P.explicit(topo, rng.permutation(n))
    for traffic in (structured.all_to_all(n, 3.0),
                    structured.dense(n, rng.random(n) * (rng.random(n) < 0.7), rng.random(n), 1e3, name="weighted")):
        got = SparseMatrixBaseline(topo, routing).link_loads(traffic, pl)
        assert_loads(got, ref_loads(topo, traffic, pl, routing), f"{topo.name} {routing.label} {traffic.name}")


def test_dragonfly_matrix_built_once_and_every_apply_path():
    """One R for every placement; few flows (sorted by pair), many flows on few pairs, most pairs used."""
    topo = T.dragonfly(2, 4, 2)  # 36 routers, 1,296 router pairs
    n = topo.n_nodes
    rng = np.random.default_rng(11)
    few = TR.from_flows(n, rng.integers(0, n, 40), rng.integers(0, n, 40), rng.random(40) * 1e3)
    src = rng.integers(0, 8, 2000)  # nodes 0..7: routers 0..3, pairs among 4 routers and their targets
    narrow = TR.from_flows(n, src, rng.integers(0, 24, 2000), rng.random(2000) * 1e3)
    s, d = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    wide = TR.from_flows(n, s.ravel(), d.ravel(), rng.random(n * n) * 1e3)
    for routing in (RT.minimal(), RT.valiant()):
        base = SparseMatrixBaseline(topo, routing)
        R = None
        for traffic in (few, narrow, wide):
            for seed in range(2):
                pl = P.explicit(topo, np.random.default_rng(seed).permutation(n))
                got = base.link_loads(traffic, pl)
                R = base.R if R is None else R
                assert base.R is R  # built once, applied to every point
                assert_loads(got, ref_loads(topo, traffic, pl, routing), f"{routing.label} {traffic.n_flows}")


def test_torus_matrix_follows_the_point():
    topo = T.torus((4, 4, 2))
    routing = RT.dor()
    base = SparseMatrixBaseline(topo, routing)
    tr1, pl1 = random_point(topo, 200, seed=1)
    tr2, pl2 = random_point(topo, 150, seed=2)
    for traffic, pl in ((tr1, pl1), (tr2, pl2), (tr1, pl2), (tr1, pl1)):
        assert_loads(base.link_loads(traffic, pl), ref_loads(topo, traffic, pl, routing))
        assert base.R.shape == (topo.n_links, traffic.n_flows)


def test_too_large_matrix_refused_before_building():
    big = T.dragonfly(8, 16, 8)
    base = SparseMatrixBaseline(big, RT.valiant())
    entries = base.estimate()
    assert entries == 129 * 16 * 15 + 129 * 16 * 128 * 16 * 127 * 5  # intra + inter x (g-2) m (2 + 3m)
    with pytest.raises(ResourceError) as e:
        base.build()
    assert e.value.field == "bench.scipy_baseline" and "GB" in str(e.value)
    assert base.R is None
    small = T.dragonfly(2, 4, 2)
    tiny = SparseMatrixBaseline(small, RT.minimal(), max_bytes=BYTES_PER_ENTRY * 10)
    traffic, pl = random_point(small, 50, seed=0)
    with pytest.raises(ResourceError):
        tiny.link_loads(traffic, pl)
    assert tiny.R is None


def test_scipy_row_and_table(monkeypatch):
    """A big-scenario row: the SciPy columns when the matrix fits and when it is refused; the table shows both."""
    topo = T.torus((4, 4, 2))
    routing = RT.dor()
    traffic, pl = random_point(topo, 100, seed=3)
    ref = ref_loads(topo, traffic, pl, routing)
    row = {"pattern": "random", "routing": routing.label, "flows": traffic.n_flows, "eval_s": 0.5,
           "first_call_s": 1.0, "baseline_s": 2.0, "baseline_flows_sampled": 100, "check_rel_dev": 0.0,
           "check_topology": topo.name}
    calls = []
    _scipy_big(topo, routing, traffic, pl, ref, row, None, lambda: calls.append(1))
    assert len(calls) >= BIG_REPEAT  # the evaluator timed again, in the same rounds as SciPy
    assert row["eval_alone_s"] == 0.5 and 0 <= row["eval_s"] < 0.5
    assert row["scipy_rel_dev"] <= TOL["rel"] and row["scipy_per_point_build"]
    assert row["scipy_s"] == pytest.approx(row["scipy_build_s"] + row["scipy_apply_s"], rel=TOL["rel"])
    row["eval_s"] = row["scipy_s"] / 3  # the evaluator 3x faster than SciPy
    refused = dict(row)
    for k in [k for k in refused if k.startswith("scipy")]:
        del refused[k]
    monkeypatch.setenv("EVALUATOR_MEMORY_LIMIT", "1000")  # check_memory: nothing fits
    _scipy_big(topo, routing, traffic, pl, ref, refused, None, lambda: calls.append(1))
    assert refused["scipy_na"].startswith("R too big") and "scipy_s" not in refused
    data = {"rows": [row, refused], "peak_mb": 100.0, "device": {"platform": "cpu", "kind": "cpu", "cpus": 2}}
    rows = _big_table_rows(data, "torus")
    assert rows[0]["ratio_scipy"] == pytest.approx(3.0, rel=TOL["rel"])
    assert np.isnan(rows[1]["ratio_scipy"])
    table = format_table(rows + [{"scenario": "scaling", "points": 3, "seconds": 1.0, "points_per_s": float("nan"),
                                  "ratio": float("nan"), "check": "", "peak_mb": 1.0, "device": "cpu x1"}])
    head, rule, first, second, third = table.splitlines()
    assert head.split() == ["scenario", "points", "time", "s", "points/s", "vs", "per-flow", "vs", "SciPy", "check",
                            "peak", "MB", "device"]
    assert " 3x " in first and f"SciPy {row['scipy_rel_dev']:.1e}" in first
    assert refused["scipy_na"] in second and "SciPy -" in second
    cells = third.split()
    assert cells[cells.index("scaling") + 3:][:3] == ["-", "-", "-"]  # points/s, vs per-flow, vs SciPy


def test_interleaved_rounds(monkeypatch):
    """Each function in turn for a block of time (at least one call) per round; at least `repeat` rounds, more
    until min_total; the median of each function's calls."""
    import time

    clock, order = [0.0], []

    def fn(name, seconds):
        def call():
            order.append(name)
            clock[0] += seconds
        return call

    monkeypatch.setattr(time, "perf_counter", lambda: clock[0])
    a, b = 2.0**-6, 3 * 2.0**-6  # binary fractions: the fake clock adds them exactly
    got = _interleaved([fn("a", a), fn("b", b)], repeat=2, min_total=0.4, block=4 * a)
    assert got == pytest.approx([a, b])
    assert order == (["a"] * 4 + ["b"] * 2) * 3  # 10 / 64 s per round: the third reaches 0.4 s
    order.clear()
    assert _interleaved([fn("a", 1.0), fn("b", 2.0)], repeat=3, min_total=0.1, block=0.05) == pytest.approx([1, 2])
    assert order == ["a", "b"] * 3  # one call per block at least; the minimum number of rounds


def test_parse_cli_output(tmp_path):
    ds = xr.Dataset({"x": ("p", np.arange(3.0))},
                    attrs={"n_points": 3, "n_feasible": 2, "timing_json": '{"wall_s": 1.5, "compile_s": 0.5}'})
    path = tmp_path / "out" / "run.nc"
    path.parent.mkdir()
    ds.to_netcdf(path, engine="h5netcdf")
    got = parse_cli_output(f"searched 3 configurations\ndataset: {path}\nbench-driver-peak-kib 2048\n", tmp_path)
    assert got == {"driver_peak_mb": 2.097152, "n_points": 3, "n_feasible": 2,  # 2,048 KiB in decimal MB
                   "timing": {"wall_s": 1.5, "compile_s": 0.5}}
    # no "dataset:" line: the dataset under the output directory; no peak line: NaN
    got = parse_cli_output("done\n", tmp_path)
    assert got["n_points"] == 3 and np.isnan(got["driver_peak_mb"])


def test_peak_memory_is_in_decimal_megabytes_and_bytes():
    """The bench's "peak MB" column and the sweep record's peaks against the kernel's own high-water mark
    (``VmHWM`` of /proc/self/status, in KiB): MiB read as MB were 4.9 % low."""
    from evaluator.bench._common import _peak_mb
    from evaluator.sweep.worker import peak_rss_bytes

    with open("/proc/self/status") as fh:
        kib = next(int(line.split()[1]) for line in fh if line.startswith("VmHWM:"))
    assert _peak_mb() == pytest.approx(kib * 1024 / 1e6, rel=0.01)
    assert peak_rss_bytes() == pytest.approx(kib * 1024, rel=0.01)


def test_torus_pattern_on_a_small_torus():
    topo = T.torus((6, 4, 4))
    routing = RT.dor()
    (name, traffic, pl), = _torus_patterns(topo)
    assert traffic.n_flows == 6 * topo.n_nodes
    ds = evaluate(topo, traffic, pl, routing)
    ref = ref_loads(topo, traffic, pl, routing)
    assert_loads(ds["link_load"].values, ref, name)
    assert_loads(SparseMatrixBaseline(topo, routing).link_loads(traffic, pl), ref, name)
    assert float(ds["mean_hops"]) == pytest.approx(1.0, rel=TOL["rel_sum"])  # a one-hop stencil


def test_settle_pauses_between_scenarios_only(monkeypatch, tmp_path):
    """``--settle S``: a pause of S seconds before each scenario after the first, none before the first; the
    value is recorded; a bad value is refused naming the option."""
    import sys
    import time

    from evaluator.errors import ConfigError

    R = sys.modules["evaluator.bench.run"]  # (the package exports a function of the same name)
    monkeypatch.setattr(R, "_launch", lambda name, quick, cpus, extra=(): (name, None))
    order: list = []
    monkeypatch.setattr(R, "_collect", lambda proc, out, name: order.append(name) or {"ran": name})
    monkeypatch.setattr(R, "_big_table_rows", lambda data, label: [])
    monkeypatch.setattr(time, "sleep", lambda s: order.append(("sleep", s)))
    out = R.run(only=["mira", "torus", "dragonfly"], out_dir=tmp_path, log=lambda m: None, settle=2.5)
    assert order == ["mira", ("sleep", 2.5), "dragonfly", ("sleep", 2.5), "torus"]
    assert out["settle_s"] == 2.5
    order.clear()
    R.run(only=["mira", "torus"], out_dir=tmp_path, log=lambda m: None)
    assert order == ["mira", "torus"]  # default: no pause
    for bad in (-1, "abc", float("inf"), True):
        with pytest.raises(ConfigError, match="--settle"):
            R.run(only=["mira"], out_dir=tmp_path, log=lambda m: None, settle=bad)


def test_every_scenario_has_one_row_of_the_table():
    """`evaluator bench` runs the scenarios of one table (evaluator.bench.run.SCENARIO_TABLE): each name `--only`
    takes once, each with a runner."""
    from evaluator.bench.run import SCENARIO_TABLE, SCENARIOS

    names = [s.name for s in SCENARIO_TABLE]
    assert sorted(names) == sorted(SCENARIOS) and len(set(names)) == len(names)
    assert all(callable(s.run) and isinstance(s.label(True), str) for s in SCENARIO_TABLE)


def test_moves_scenario_is_the_mapping_move_rows_alone(monkeypatch):
    """``--only moves``: the rows of ``mapping``'s candidate moves (the same cases, in order, timed the same way)
    without its quality and held-out searches; a run without ``--only`` leaves it out (``mapping`` has its rows)."""
    import sys
    from types import SimpleNamespace

    from evaluator.bench import mapping as BMap

    R = sys.modules["evaluator.bench.run"]
    assert "moves" in R.SCENARIOS and "moves" not in R.DEFAULT_SCENARIOS
    assert set(R.DEFAULT_SCENARIOS) == set(R.SCENARIOS) - {"moves"}
    asked, timed_calls = [], []

    def case(quick, pattern, network):
        asked.append((quick, pattern, network))

        def finish(seconds, timed):
            return {"pattern": pattern, "network": network, "moves": 4, "seconds": seconds, "moves_per_s": 4 / seconds,
                    "ref_points": 2, "ref_seconds": 1.0, "ref_per_s": 2.0, "check": 0.0, "evaluator": "e"}
        return (lambda: timed_calls.append(pattern)), finish

    monkeypatch.setattr(BMap, "_move_case", case)
    monkeypatch.setattr(BMap, "MOVE_MIN_S", {False: 0.0, True: 0.0})
    monkeypatch.setattr(BMap, "_quality", lambda quick: pytest.fail("moves ran a quality search"))
    monkeypatch.setattr(BMap, "heldout", lambda *a, **k: pytest.fail("moves ran a held-out search"))
    data = BMap.w_moves(SimpleNamespace(quick=False), lambda: "cpu", lambda: 1.0, None)
    assert asked == [(False, p, n) for p, n in BMap.MOVE_CASES]
    # every case set up first, then timed in rounds: one batch of each in turn, three rounds at least
    patterns = [p for p, _ in BMap.MOVE_CASES]
    assert len(timed_calls) >= 3 * len(patterns) and timed_calls[:2 * len(patterns)] == patterns * 2
    assert data["quality"] == [] and data["heldout"] == []
    rows = BMap.mapping_rows(data, lambda d: d)
    assert [r["scenario"] for r in rows] == [f"mapping: candidate moves, 1,024 ranks, {p} on {n}"
                                             for p, n in BMap.MOVE_CASES]
    assert all(r["seconds"] > 0 for r in data["rates"])


def test_a_ctrl_c_keeps_the_scenarios_finished(monkeypatch, tmp_path, capsys):
    """``evaluator bench`` stopped by Ctrl-C in its second scenario: the first scenario's rows go to
    ``bench-interrupted.json`` (saying which scenarios did not finish), a complete run's ``bench.json`` is left as
    it was, and the KeyboardInterrupt goes on (the command exits 130)."""
    import json

    import evaluator.bench.run  # noqa: F401  (the package exports its function run under the same name)
    B = sys.modules["evaluator.bench.run"]

    row = {"scenario": "first", "points": 3, "seconds": 1.5, "points_per_s": 2.0, "ratio": 4.0, "check": "",
           "peak_mb": 10.0, "device": "cpu"}

    def stop(*a):
        raise KeyboardInterrupt

    monkeypatch.setattr(B, "SCENARIO_TABLE", (B.Scenario("small", lambda q: "", lambda *a: [dict(row)]),
                                              B.Scenario("mira", lambda q: "", stop),
                                              B.Scenario("torus", lambda q: "", lambda *a: [dict(row)])))
    (tmp_path / "bench.json").write_text('{"rows": "a complete run"}')
    with pytest.raises(KeyboardInterrupt):
        B.run(out_dir=tmp_path, only=["small", "mira", "torus"])
    kept = json.loads((tmp_path / "bench-interrupted.json").read_text())
    assert kept["rows"] == [row]
    assert kept["interrupted"] == "Ctrl-C; finished: small; not finished: mira, torus"
    assert json.loads((tmp_path / "bench.json").read_text()) == {"rows": "a complete run"}
    out = capsys.readouterr().out
    assert f"interrupted: the rows of small are written to {tmp_path / 'bench-interrupted.json'}" in out
    assert "first" in out and "bench.json is left as it was" in out
    monkeypatch.setattr(B, "SCENARIO_TABLE", (B.Scenario("small", lambda q: "", stop),))  # nothing finished
    (tmp_path / "bench-interrupted.json").unlink()
    with pytest.raises(KeyboardInterrupt):
        B.run(out_dir=tmp_path, only=["small"])
    assert not (tmp_path / "bench-interrupted.json").exists()


def test_a_run_of_some_scenarios_keeps_a_whole_runs_file_and_no_users_file_is_replaced(monkeypatch, tmp_path,
                                                                                        capsys):
    """`bench --only startup` replaced a whole run's bench.json (its other rows lost), and any file named so of the
    user's own: a selection writes bench-<scenarios>.json, and a file there that a run did not write is refused
    before any work."""
    import json

    import evaluator.bench.run  # noqa: F401
    from evaluator.errors import ConfigError
    B = sys.modules["evaluator.bench.run"]

    row = {"scenario": "first", "points": 3, "seconds": 1.5, "points_per_s": 2.0, "ratio": 4.0, "check": "",
           "peak_mb": 10.0, "device": "cpu"}
    ran = []
    monkeypatch.setattr(B, "SCENARIO_TABLE", tuple(B.Scenario(n, lambda q: "", lambda *a, n=n: ran.append(n) or
                                                              [dict(row)]) for n in ("small", "mira")))
    whole = '{"rows": "a complete run", "gpu": "none"}'
    (tmp_path / "bench.json").write_text(whole)
    B.run(out_dir=tmp_path, only=["small"])
    assert json.loads((tmp_path / "bench-small.json").read_text())["rows"] == [row]
    assert (tmp_path / "bench.json").read_text() == whole
    B.run(out_dir=tmp_path, only=["small"])  # its own file again: replaced
    (tmp_path / "bench-quick-small.json").write_text("my own notes\n")
    ran.clear()
    with pytest.raises(ConfigError, match="bench-quick-small.json is a file this command did not write"):
        B.run(quick=True, out_dir=tmp_path, only=["small"])
    assert ran == [] and (tmp_path / "bench-quick-small.json").read_text() == "my own notes\n"
    capsys.readouterr()
