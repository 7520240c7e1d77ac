"""Shared test helpers: the one tolerance table every test reads.

Every comparison in the suite is against an independent reference (a
per-flow walk, BFS, a closed form, an exhaustive search); these are the only
tolerances allowed, each with what it covers.
"""

TOL = {
    "rel": 1e-12,         # relative: loads, times, bytes and ratios computed two ways in float64
    "rel_sum": 1e-11,     # relative: sums over many links (mean hops, bytes x hops)
    "bytes": 1e-9,        # absolute, bytes on one link (against the per-flow reference walk)
    "bytes_loose": 1e-6,  # absolute, bytes of closed forms over MB-sized loads
    "prob": 1e-12,        # absolute: route probabilities and hop counts
    "time": 1e-15,        # absolute, seconds
    "count": 1e-9,        # absolute: integer-valued float counts (links, isoperimetric bounds)
    "lp": 1e-7,           # relative: optima of LPs solved by HiGHS (simplex/IPM tolerances) vs hand or other LPs
    "pdhg": 1e-2,         # relative: the batched first-order LP solver against HiGHS (issue 12: within 1% on Z)
}
"""Tolerances by what they compare."""

RTOL = TOL["rel"]
ATOL = TOL["bytes"]


def strip(ds):
    """A copy of a sweep dataset without the attributes that differ between runs (times, hosts: VOLATILE_ATTRS)."""
    from evaluator.sweep import VOLATILE_ATTRS

    ds = ds.copy()
    for a in VOLATILE_ATTRS:
        ds.attrs.pop(a, None)
    return ds


_TOPOLOGIES: dict[str, object] = {}


def per_point(plan, flat, **evaluate_kwargs):
    """The reference for a sweep point: its config built alone with the library and evaluated alone.

    Returns ``(reason, dataset)``: ``("", evaluate(...))``, or the infeasibility reason and None.
    ``evaluate_kwargs`` go to :func:`evaluator.evaluate` (e.g. ``bounds=True``). Topologies are kept by
    their config, so that points of one network share one kernel compilation.
    """
    import evaluator as ev
    from evaluator import config as C
    from evaluator.errors import ConfigError, reason

    cfg = plan.point_config(flat)
    try:
        key = repr(cfg.topology)
        topo = _TOPOLOGIES.get(key) or _TOPOLOGIES.setdefault(key, C.build_topology(cfg.topology))
        routing = C.build_routing_spec(cfg.routing)
        traffic = C.build_traffic(cfg.traffic, topo)
        placement = C.build_placement(cfg.placement, topo, cfg.traffic, traffic.n_tasks, cfg.topology)
        return "", ev.evaluate(topo, traffic, placement, routing, **evaluate_kwargs)  # a mismatch raises too
    except ConfigError as exc:
        return reason(exc), None


def once(fixture_fn):
    """A module fixture's value computed once per test process.

    Under ``pytest -n 2 --dist loadgroup`` a worker may run another module's tests between two of a module's
    tests, and pytest then tears the module's fixtures down and sets them up again (the RDN study of
    tests/test_claims_rdn.py was computed twice, 75 s each). Fixtures whose value nothing mutates are wrapped
    in this (below ``@pytest.fixture``), so the second setup returns the first value; temporary directories made
    with ``tmp_path_factory`` live until the session ends.
    """
    import functools

    box: dict = {}

    @functools.wraps(fixture_fn)
    def wrapper(*args, **kwargs):
        if "value" not in box:
            box["value"] = fixture_fn(*args, **kwargs)
        return box["value"]

    return wrapper


_OPTIONS: dict[tuple[str, str], tuple] = {}


def composed_option(group: str, option: str):
    """``(cfg, obj)``: ``config.compose(["GROUP=OPTION"])`` (the ``file`` traffic with a path) and its
    ``config.to_object``, once per test process.

    tests/test_config_cli.py and tests/test_layout.py both compose every option of every config group alone
    (about 120 compositions, 15 s) and only read the results; tests/conftest.py keeps the two modules on one
    worker, so each option is composed once. A composition that fails raises every time (nothing is kept).
    """
    from evaluator import config

    key = (group, option)
    if key not in _OPTIONS:
        cfg = config.compose([f"{group}={option}"] + (["traffic.path=x.csv"] if option == "file" else []))
        _OPTIONS[key] = (cfg, config.to_object(cfg))
    return _OPTIONS[key]


TRACE_EVENT = "/jax/core/compile/jaxpr_trace_duration"
COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"


def jax_events(*names: str, this_thread: bool = False):
    """A context manager yielding the list of JAX duration events among ``names`` (e.g. :data:`COMPILE_EVENT`)
    recorded while it is open; with ``this_thread``, only those of the thread that opened it (a call that runs
    in the caller's thread, such as ``evaluate_batch``, checked apart from threads other tests left running)."""
    import contextlib
    import threading

    import jax

    owner = threading.get_ident()

    @contextlib.contextmanager
    def recording():
        seen: list[str] = []

        def listener(name, duration, **kwargs):
            if name in names and (not this_thread or threading.get_ident() == owner):
                seen.append(name)

        jax.monitoring.register_event_duration_secs_listener(listener)
        try:
            yield seen
        finally:
            jax.monitoring.unregister_event_duration_listener(listener)

    return recording()


def link_map(topo) -> dict:
    """``(x, y) -> [router-link ids]`` read from ``link_src`` / ``link_dst`` (parallel links kept, ascending ids): the
    tests' own reading of a topology's router graph, independent of :mod:`evaluator.routing._yen`."""
    import collections

    import numpy as np

    n = int(topo.n_router_links)
    out = collections.defaultdict(list)
    for lid, (s, d) in enumerate(zip(np.asarray(topo.link_src[:n]).tolist(), np.asarray(topo.link_dst[:n]).tolist())):
        out[(s, d)].append(lid)
    return dict(out)


def digraph(topo):
    """The router graph of :func:`link_map` as a NetworkX ``DiGraph`` (every router a node)."""
    import networkx as nx

    g = nx.DiGraph()
    g.add_nodes_from(range(int(topo.n_routers)))
    g.add_edges_from(link_map(topo))
    return g


def rss_bytes() -> int:
    """This process's resident set size now (bytes; Linux ``/proc``)."""
    import os

    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def reset_peak() -> None:
    """Reset this process's resident peak (``VmHWM``) to what it holds now: what ran before (imports, a warm-up)
    is not the work a memory test measures."""
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def peak_bytes() -> int:
    """This process's resident peak since :func:`reset_peak` (``VmHWM``, bytes)."""
    with open("/proc/self/status") as f:
        return 1024 * int(next(x for x in f if x.startswith("VmHWM")).split()[1])


def within(fn, seconds: float):
    """``fn()`` in a daemon thread; the test fails if it has not returned after ``seconds`` (a hang fails the test,
    not the suite), and raises what ``fn`` raised."""
    import threading

    box: dict = {}

    def run():
        try:
            box["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            box["error"] = exc

    th = threading.Thread(target=run, daemon=True)
    th.start()
    th.join(seconds)
    assert not th.is_alive(), f"still running after {seconds} s"
    if "error" in box:
        raise box["error"]
    return box.get("value")


def same_bits(x, y, what) -> None:
    """``x`` and ``y`` equal bit for bit (NaN where both are NaN); the assertion names ``what`` and the first
    entries that differ."""
    import numpy as np

    x, y = np.asarray(x), np.asarray(y)
    assert x.shape == y.shape, what
    if x.dtype.kind == "f":
        bad = np.flatnonzero(~((x == y) | (np.isnan(x) & np.isnan(y))).reshape(-1))
        assert bad.size == 0, (what, bad[:5], x.reshape(-1)[bad[:5]], y.reshape(-1)[bad[:5]])
    else:
        assert np.array_equal(x, y), what


def run_free(ds):
    """A sweep's dataset loaded, without what differs from run to run (its provenance, run id and timings)."""
    ds = strip(ds).load()
    for a in ("git_commit", "git_commits_resumed", "run_id", "timing_json"):
        ds.attrs.pop(a, None)
    return ds
