"""The flow-level max-min simulation (evaluator/flowlevel.py) against SimGrid's flow model (CM02).

SimGrid runs in a subprocess of the system Python (``/usr/bin/python3``, Debian's python3-simgrid); the tests are
skipped where it is absent. Each flow gets its own sender and receiver host and an explicit route (a Full zone);
a flow starts when its sender's ``sleep_for(start)`` ends and its receiver's ``get()`` is already posted. CM02 is
pure max-min (latency and bandwidth factors 1, weight-S 0); cross traffic off; TCP-gamma large (with a route latency
> 0 it bounds a flow's rate by gamma / (2 latency)).

What SimGrid's CM02 does with latency (src/kernel/resource/models/network_cm02.cpp): a flow uses no bandwidth during
its route's latency, then shares with a *weight 1 / that latency* (its sharing penalty is the latency: TCP's RTT
unfairness); with no latency the weight is 1. So flow-fair sharing with ``start + latency`` is SimGrid only where
every route has the same latency; ``flow_weight = 1 / latency`` reproduces it in general.
"""

from __future__ import annotations

import json
import shutil
import subprocess

import numpy as np
import pytest

from evaluator._batch.flowlevel import max_min_batch
from tests.helpers import TOL

SYSTEM_PYTHON = shutil.which("python3", path="/usr/bin") or "/usr/bin/python3"


def _have_simgrid() -> bool:
    try:
        return subprocess.run([SYSTEM_PYTHON, "-c", "import simgrid"], capture_output=True, timeout=60).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


pytestmark = pytest.mark.skipif(not _have_simgrid(), reason="SimGrid's Python module is not installed")

CFG = ["--cfg=network/model:CM02", "--cfg=network/crosstraffic:0", "--cfg=network/TCP-gamma:1e30",
       "--cfg=maxmin/precision:1e-9", "--cfg=surf/precision:1e-9", "--log=root.thres:critical"]
"""(Precisions below 1e-11 crashed SimGrid 3.32 on routes with latency.)"""

DRIVER = r'''
import json, os, sys, tempfile
from simgrid import Actor, Engine, Mailbox, this_actor
spec = json.load(sys.stdin)
cap, routes, size, start, lat = spec["capacity"], spec["routes"], spec["nbytes"], spec["start"], spec["latency"]
F = len(size)
xml = ['<?xml version="1.0"?>', '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">',
       '<platform version="4.1">', '<zone id="z" routing="Full">']
xml += [f'<host id="s{f}" speed="1f"/><host id="d{f}" speed="1f"/>' for f in range(F)]
xml += [f'<link id="l{l}" bandwidth="{c!r}Bps" latency="{lat[l]!r}s"/>' for l, c in enumerate(cap)]
xml += [f'<route src="s{f}" dst="d{f}" symmetrical="NO">' + "".join(f'<link_ctn id="l{l}"/>' for l in r) + "</route>"
        for f, r in enumerate(routes)]
xml += ["</zone>", "</platform>"]
fd, path = tempfile.mkstemp(suffix=".xml")
with os.fdopen(fd, "w") as fh:
    fh.write("\n".join(xml))
e = Engine(["flowlevel"] + spec["cfg"])
e.load_platform(path)
os.unlink(path)
finish = [None] * F
def sender(f):
    this_actor.sleep_for(start[f])
    Mailbox.by_name(f"m{f}").put(f, int(size[f]))
def receiver(f):
    Mailbox.by_name(f"m{f}").get()
    finish[f] = Engine.clock
for f in range(F):
    Actor.create(f"r{f}", e.host_by_name(f"d{f}"), receiver, f)
    Actor.create(f"s{f}", e.host_by_name(f"s{f}"), sender, f)
e.run()
json.dump(finish, sys.stdout)
'''


def simgrid_finish(capacity, routes, nbytes, start, latency):
    spec = dict(capacity=list(map(float, capacity)), routes=[list(map(int, r)) for r in routes],
                nbytes=list(map(float, nbytes)), start=list(map(float, start)), latency=list(map(float, latency)),
                cfg=CFG)
    out = subprocess.run([SYSTEM_PYTHON, "-c", DRIVER], input=json.dumps(spec), capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    return np.array(json.loads(out.stdout))


def network(rng, F=16, L=8, hops=None):
    """Random single-path routes (SimGrid routes one path), capacities 1-10 GB/s, integer sizes (SimGrid's Python
    ``put`` takes an integer size) of 1-100 MB, half the flows starting within 10 ms."""
    routes = [sorted(rng.choice(L, size=hops or int(rng.integers(1, 4)), replace=False).tolist()) for _ in range(F)]
    cap = rng.uniform(1e9, 1e10, L)
    nbytes = rng.integers(10 ** 6, 10 ** 8, F).astype(float)
    start = np.where(rng.random(F) < 0.5, 0.0, rng.uniform(0, 1e-2, F))
    return routes, cap, nbytes, start


def ours(routes, cap, nbytes, start, flow_weight=None):
    K = max(len(r) for r in routes)
    links = -np.ones((1, len(routes), K), np.int32)
    for f, r in enumerate(routes):
        links[0, f, : len(r)] = r
    frac = (links >= 0).astype(float)
    fw = None if flow_weight is None else np.asarray(flow_weight)[None]
    return max_min_batch(links, frac, cap, nbytes[None], start[None], "flow", flow_weight=fw)[0]


def rel(a, b):
    return float(np.max(np.abs(a - b) / b))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_no_latency_equals_simgrid(seed):
    routes, cap, nbytes, start = network(np.random.default_rng(seed))
    sg = simgrid_finish(cap, routes, nbytes, start, np.zeros(cap.size))
    assert rel(ours(routes, cap, nbytes, start), sg) <= TOL["rel"]


def test_latency_is_a_start_offset_and_a_weight():
    """With link latencies a flow starts after its route's latency and shares with weight 1 / that latency."""
    rng = np.random.default_rng(3)
    routes, cap, nbytes, start = network(rng)
    lat = rng.uniform(1e-6, 1e-4, cap.size)
    route_lat = np.array([lat[r].sum() for r in routes])
    sg = simgrid_finish(cap, routes, nbytes, start, lat)
    assert rel(ours(routes, cap, nbytes, start + route_lat, flow_weight=1 / route_lat), sg) <= TOL["rel"]
    assert rel(ours(routes, cap, nbytes, start + route_lat), sg) > 0.01  # flow-fair is not what SimGrid does here


def test_equal_route_latencies_are_flow_fair():
    """Every route of two links of one latency: equal weights, so flow-fair sharing from start + latency."""
    rng = np.random.default_rng(4)
    routes, cap, nbytes, start = network(rng, hops=2)
    lat = np.full(cap.size, 5e-5)
    sg = simgrid_finish(cap, routes, nbytes, start, lat)
    route_lat = np.array([lat[r].sum() for r in routes])
    assert rel(ours(routes, cap, nbytes, start + route_lat), sg) <= TOL["rel"]
