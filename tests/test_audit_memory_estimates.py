"""Audit: a memory estimate that refuses work must bound the memory that work takes ("a bound must bound").

The evaluator refuses (:class:`~evaluator.errors.ResourceError`) work whose estimated memory exceeds 80% of what
is available, before allocating it. An estimate below the real peak makes that refusal useless: the process is
killed instead of told. Each estimate here is compared with a measurement made independently of the estimator:

* the edge LP (:func:`evaluator.lp.edge_size`): the peak RSS growth of :func:`evaluator.lp.edge_bound` (build and
  HiGHS solve) in a child process, after a first small solve has loaded HiGHS (``ru_maxrss`` minus the child's
  RSS before the work); then the refusal is checked to come, before anything is built, at a memory limit equal
  to that measured peak.

The batch engine's working set was measured the same way (see the audit report); no under-estimate of its
data was found there that a fast test could pin down.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import evaluator as ev
from evaluator.errors import MEMORY_ENV, ResourceError
from evaluator.lp import RouterDemand, edge_bound, edge_size

NOISE = 2_000_000
"""Allowance (bytes) for RSS growth that is no part of the work: allocator arenas and page rounding of a
child that has already solved one LP (measured spread of repeated runs: under 1 MB)."""

_LP_CHILD = textwrap.dedent("""
    import json, os, sys
    import numpy as np
    import evaluator as ev
    from evaluator.lp import RouterDemand, edge_bound

    def rss():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

    def peak():  # the resident peak since the reset below (VmHWM, kB)
        with open("/proc/self/status") as f:
            return 1024 * int(next(x for x in f if x.startswith("VmHWM")).split()[1])

    topo = ev.torus([5, 5, 5])
    src, dst = (np.array(json.loads(a), np.int64) for a in sys.argv[1:3])
    fixed = np.zeros(topo.n_links)
    edge_bound(topo, RouterDemand(src[:1], dst[:1], np.ones(1), fixed))  # loads HiGHS: not the work measured
    with open("/proc/self/clear_refs", "w") as f:  # the peak so far (imports, the warm-up) is not the work's
        f.write("5")
    r0 = rss()
    b = edge_bound(topo, RouterDemand(src, dst, np.full(src.size, 1e6), fixed))
    grow = peak() - r0
    print("RESULT " + json.dumps({"grow": grow, "z": b.z}))
""")


def _demand(topo, n_src: int, per_src: int, seed: int = 0) -> RouterDemand:
    rng = np.random.default_rng(seed)
    R = topo.n_routers
    srcs = rng.choice(R, size=n_src, replace=False)
    src = np.repeat(srcs, per_src)
    dst = np.concatenate([rng.choice(np.setdiff1d(np.arange(R), [s]), size=per_src, replace=False) for s in srcs])
    return RouterDemand(src.astype(np.int64), dst.astype(np.int64), np.full(src.size, 1e6), np.zeros(topo.n_links))


def _child_lp_growth(dem: RouterDemand) -> dict:
    env = {k: v for k, v in os.environ.items() if k != MEMORY_ENV}
    p = subprocess.run([sys.executable, "-c", _LP_CHILD, json.dumps(dem.src.tolist()), json.dumps(dem.dst.tolist())],
                       capture_output=True, text=True, timeout=120, env=env)
    line = [x for x in p.stdout.splitlines() if x.startswith("RESULT ")]
    assert line, p.stderr[-2000:]
    return json.loads(line[0][7:])


def test_edge_lp_estimate_bounds_the_solve_and_refuses_below_it(monkeypatch):
    """10 sources x 8 destinations on a 5^3 torus (22,590 nonzeros): the solve grew the child by about 11 MB;
    the estimate at 160 bytes a nonzero was 4.2 MB (0.38x), so a limit of 11 MB let it run."""
    topo = ev.torus([5, 5, 5])
    dem = _demand(topo, 10, 8)
    size = edge_size(topo, dem)
    # the size of the LP itself, counted independently: S*E flow variables + Z; S*R conservation rows + E caps
    S, E, R = 10, topo.n_router_links, topo.n_routers
    assert (size["vars"], size["rows"], size["nnz"]) == (S * E + 1, S * R + E, 3 * S * E + dem.n_pairs + S)
    out = _child_lp_growth(dem)
    assert out["z"] > 0
    assert size["bytes"] + NOISE >= out["grow"], (size["bytes"], out["grow"])
    # a memory limit at the measured peak is refused, before the LP is built
    monkeypatch.setenv(MEMORY_ENV, str(out["grow"]))
    import evaluator.lp._flow as F
    monkeypatch.setattr(F, "edge_lp", lambda *a: pytest.fail("the LP was built before the refusal"))
    with pytest.raises(ResourceError) as e:
        edge_bound(topo, dem)
    assert e.value.field == "method" and e.value.value == "edge"
    with pytest.raises(ResourceError):
        ev.lp.optimal_bound(topo, dem, "edge")
