"""Defects an audit of the public Python API found (2026-12-06): objects built directly and never checked (a node id
-1 read as the last node, negative or NaN bytes, phases of different task counts), a torus built with wrap-around
from wrap="false", a mapping bound for jobs that do not fit, NaN draws left out of a hashed-ECMP summary, a query
mask that was not one, a shift's n_tasks ignored beside its grid, a routing's route asked of another network, a
max-min fill that never ended on NaN, and sizes allocated before their memory check. Each is now refused, naming the
argument, before anything is computed."""

from __future__ import annotations

import numpy as np
import pytest

import evaluator as ev
from evaluator import placement as P
from evaluator import routing as R
from evaluator import traffic as T
from evaluator.cost import network_cost
from evaluator.errors import ConfigError

TOR = ev.torus((4, 4, 4))


@pytest.mark.parametrize("make, field", [
    (lambda: P.Placement(np.array([0, 1, 2, -1]), 64), "placement.task_node"),      # was node 63
    (lambda: P.Placement(np.array([0, 1, 2, 100]), 64), "placement.task_node"),     # was an IndexError
    (lambda: P.Placement([0, 1], 64), "placement.task_node"),
    (lambda: T.Traffic(4, np.array([0]), np.array([1]), np.array([-1.0])), "traffic.nbytes"),   # total -1 B
    (lambda: T.Traffic(4, np.array([0]), np.array([1]), np.array([np.nan])), "traffic.nbytes"),
    (lambda: T.Traffic(4, np.array([0]), np.array([7]), np.array([1.0])), "traffic.dst"),       # an IndexError
    (lambda: T.Traffic(4, np.array([0, 1]), np.array([1]), np.array([1.0])), "traffic.nbytes"),
    (lambda: T.PhasedTraffic((T.all_to_all(4), T.all_to_all(2)), ("a", "b")), "traffic.phases"),
    (lambda: T.PhasedTraffic((T.all_to_all(4),), ("a", "b")), "traffic.phase_names"),
    (lambda: T.DenseTraffic(4, np.ones(4), np.ones(4), float("nan")), "traffic.bytes_per_pair"),  # a NaN time
    (lambda: T.DenseTraffic(4, np.ones(3), np.ones(4), 1.0), "traffic.src_weight"),
])
def test_objects_built_directly_are_checked(make, field):
    with pytest.raises(ConfigError) as e:
        make()
    assert e.value.field == field, str(e.value)


def test_the_checks_keep_what_was_right():
    pl = P.Placement(np.array([0, 1, 2, 3]), 64)
    tr = T.Traffic(4, np.array([0, 1]), np.array([1, 0]), np.array([1e6, 0.0]))
    assert float(ev.evaluate(TOR, tr, pl, "dor").completion_time) > 0
    assert T.PhasedTraffic((T.all_to_all(4), T.all_to_all(4)), ("a", "b")).n_tasks == 4


@pytest.mark.parametrize("wrap", ["false", "no", [True, 0], 1])
def test_torus_wrap_is_a_boolean(wrap):
    """bool('false') is True: wrap='false' built a torus with wrap-around links (mean_hops 1 where a mesh has 3)."""
    with pytest.raises(ConfigError, match=r"topology.wrap(\[\d\])? = .* is invalid: allowed is true or false"):
        ev.torus([4, 4], wrap=wrap)
    mesh = ev.torus([4], wrap=False, link_bandwidth=1e9)
    ds = ev.evaluate(mesh, T.from_flows(2, [0], [1], [1e6]), P.explicit(mesh, [0, 3]), "dor")
    assert float(ds.mean_hops) == 3.0
    with pytest.raises(ConfigError, match="topology.link_bandwidth"):
        ev.torus([4, 4], link_bandwidth=None)


@pytest.mark.parametrize("kw, field", [({"nodes": [0, 1]}, "traffic.n_tasks"), ({"tasks_per_node": 0},
                                        "mapping.tasks_per_node"), ({"tasks_per_node": 1.5}, "mapping.tasks_per_node"),
                                       ({"nodes": [0, 1, 2, 100]}, "mapping.nodes")])
def test_mapping_bound_checks_the_job(kw, field):
    """4 tasks on 2 nodes of one slot each gave a bound; tasks_per_node 0 raised ZeroDivisionError, 1.5 was read
    as 1, node 100 of 64 raised IndexError."""
    from evaluator.mapping import mapping_bound

    with pytest.raises(ConfigError) as e:
        mapping_bound(TOR, T.all_to_all(4), "dor", **kw)
    assert e.value.field == field
    with pytest.raises(ConfigError, match="traffic.n_tasks = 65"):
        mapping_bound(TOR, T.all_to_all(65), "dor")
    assert mapping_bound(TOR, T.all_to_all(4), "dor").value > 0


def test_an_infeasible_seed_makes_the_ecmp_summary_nan():
    """[1, NaN, 3] was summarised as 2.0 (mean of the feasible seeds), p95 2.9: one-sided."""
    s = R.ecmp_seed_summary([1.0, float("nan"), 3.0])
    assert np.isnan(float(s.completion_time_expected)) and np.isnan(float(s.completion_time_p95))
    assert np.isnan(float(s.completion_time_max))
    assert float(R.ecmp_seed_summary([1.0, 2.0, 3.0]).completion_time_expected) == 2.0
    for kw in ({"quantile": "a"}, {"seeds": ["a", "b", "c"]}):
        with pytest.raises(ConfigError):
            R.ecmp_seed_summary([1.0, 2.0, 3.0], **kw)
    with pytest.raises(ConfigError, match="rows of one length"):
        R.ecmp_seed_summary([[1.0, 2.0], [3.0]])


def test_a_query_mask_must_be_one():
    """where=lambda ds: 5 (or a name) kept every row in silence."""
    import xarray as xr

    ds = xr.Dataset({"completion_time": (("n",), np.array([1.0, 2.0, 3.0]), {"units": "s"})}, coords={"n": [1, 2, 3]})
    for mask in (lambda d: 5, lambda d: "n", lambda d: d.completion_time):
        with pytest.raises(ConfigError, match="where = .* is invalid: allowed is a function of the dataset "
                                              "returning a boolean DataArray"):
            ev.best(ds, "completion_time", where=mask)
    assert len(ev.best(ds, "completion_time", where=lambda d: d.completion_time < 2.5)) == 2


def test_shift_n_tasks_must_agree_with_its_grid():
    with pytest.raises(ConfigError, match=r"traffic.n_tasks = 5 is invalid: allowed is the grid's task count 4"):
        T.shift(n_tasks=5, grid=[2, 2])
    assert T.shift(n_tasks=4, grid=[2, 2]).n_tasks == T.shift(grid=[2, 2]).n_tasks == 4


def test_route_is_asked_of_the_network_it_was_built_for():
    op = R.build_routing(TOR, ev.dor())
    assert op.route(TOR, 0, 1)[0].tolist() == [4]
    with pytest.raises(ConfigError, match=r"the network this routing was built for \(torus 4x4x4\)"):
        op.route(ev.dragonfly(2, 4, 2), 0, 1)                  # returned the torus's links
    with pytest.raises(ConfigError, match="routing = 'dor' is invalid: allowed is a Routing"):
        R.build_routing(TOR, "dor")                             # AttributeError


def test_max_min_fill_refuses_nan_and_shapes():
    """A NaN rate or capacity never froze a job: the loop ran forever."""
    from evaluator.jobs import max_min_speeds, share

    for rates, cap, field in ((np.array([[np.nan, 0], [1.0, 1.0]]), np.ones(2), "rates"),
                              (np.array([[1.0, 0], [1.0, 1.0]]), np.array([np.nan, 1.0]), "capacity"),
                              (np.array([[1.0, 0], [1.0, 1.0]]), np.ones(3), "capacity")):
        with pytest.raises(ConfigError) as e:
            max_min_speeds(rates, cap)
        assert e.value.field == field
    assert max_min_speeds(np.array([[1.0, 0], [1.0, 1.0]]), np.ones(2)).tolist() == [0.5, 0.5]
    with pytest.raises(ConfigError, match=r"times\[0\]"):
        share([np.ones((1, 2))], [np.array([-1.0])], np.ones(2))           # finished at -1 s


@pytest.mark.parametrize("make, field", [
    (lambda: T.collective("allreduce", n_tasks=10**10), "traffic.n_tasks"),   # MemoryError (74.5 GiB)
    (lambda: R.ecmp_seeds(10**9), "seeds"),                                    # ~330 GB of specs
    (lambda: R.ecmp_seeds(3, seed=2**32 - 2), "seed"),
    (lambda: P.fragmented(TOR, 8, events=10**9), "placement.events"),          # ran without end
])
def test_sizes_are_refused_before_they_are_built(make, field):
    with pytest.raises(ConfigError) as e:
        make()
    assert e.value.field == field


def test_search_candidates_are_bounded():
    from evaluator.mapping import MAX_CANDIDATES, search_mapping

    with pytest.raises(ConfigError, match=f"at most {MAX_CANDIDATES:,} candidate moves"):
        search_mapping(TOR, T.all_to_all(4), "dor", candidates=10**12, time_budget=1, max_iterations=1,
                       progress=False)                                         # MemoryError (7.28 TiB)


@pytest.mark.parametrize("make, field", [
    (lambda: network_cost(None), "topology"),                        # AttributeError
    (lambda: network_cost(TOR, prices="x"), "cost"),                 # AttributeError
    (lambda: ev.load_machine(None), "machine"),                              # TypeError from os.fspath
    (lambda: P.alps_order(TOR, block=(0, 2, 2)), "placement.block"),        # ZeroDivisionError
    (lambda: ev.best(None), "ds"),                                            # AttributeError
    (lambda: ev.latency.Latency(link=5), "topology.latency.link"),           # ValueError (unpacking)
    (lambda: P.write_launch_files(P.linear(TOR, 4), "/nonexistent/x", fill="x"), "fill"),
])
def test_internal_errors_are_refusals_naming_the_argument(make, field):
    with pytest.raises(ConfigError) as e:
        make()
    assert e.value.field == field, str(e.value)
    assert ev.latency.Latency(link={"default": 1e-6}).link == (("default", 1e-6),)    # a mapping, as configs write
