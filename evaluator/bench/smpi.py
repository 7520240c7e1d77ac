"""MPI collectives simulated by SMPI (SimGrid 3.32's MPI simulator): the reference for collective times with latency.

The evaluator's collectives (:mod:`evaluator.traffic._collectives`) are step-by-step contention bounds; a time
that adds latency is compared with SMPI on the same platform (DESIGN.md, "Two kinds of time"). This module runs
MPI collectives under SMPI and returns their simulated times:

* :func:`torus_platform`, :func:`fat_tree_platform`: SimGrid cluster platforms (XML) whose host ``i`` is our node
  ``i``;
* :func:`run_collectives` (many cases, one ``smpirun`` per algorithm and communicator size) and
  :func:`run_collective` (one case): the simulated seconds of each case;
* :data:`SMPI_ALGORITHMS` / :func:`smpi_algorithm`: our (op, algorithm) -> the SMPI algorithm that sends the same
  messages (verified by reading both sources; the conditions are in the comments);
* :func:`mpich_choice`: the algorithm SMPI's ``mpich`` selector runs (a transcription of
  ``src/smpi/colls/smpi_mpich_selector.cpp``, SimGrid 3.32);
* :data:`MISSING_ALGORITHMS`: the algorithms MPICH's selector uses that we lack, with their message schedules.

How a case is timed
-------------------
One C program (:data:`C_SOURCE`, compiled once with ``smpicc`` and cached in the temp directory under the hash of
its source) loops over the cases of one ``smpirun``. Before the cases it calls the collective once on 1 byte
(the ``mpich`` selector and the SMP algorithms build SMPI's node communicators on their first call, with messages),
then for every case: ``MPI_Barrier``; rank 0 gathers every rank's ``MPI_Wtime`` (point to point, so that the
algorithm under test is not used) and sends back ``T``, ``max + margin`` rounded up to a multiple of 2^-10 s and
at least 1024 s; every rank sleeps until exactly ``T`` (``sg_actor_sleep_until``; ``MPI_Wtime`` is set to take no
simulated time, ``smpi/wtime:0``), runs the collective and reads its end time; the case's time is ``max over
ranks (end) - T``. A rank that finds ``T`` already past, or wakes at another time, aborts the run, so the common
start is checked, not assumed. All starts lie in [1024, 2048) s (while the cases of one run take less than
1024 simulated seconds): the clock's float rounding is then the same relative to every start, so a case's time is
bit-identical whatever ran before it in the same smpirun (with starts near 0, concurrent flows finishing
together could be ordered differently: 2e-5 relative was seen on a 12-rank alltoall). Times carry ~1e-9
relative rounding (ulp 2.3e-13 s at 1024 s).

Buffers come from ``SMPI_SHARED_MALLOC`` (all ranks share the memory: the data is garbage, the sizes and hence
the times are right, and SMPI skips copying shared data). The algorithms' own temporary buffers are real memory
with real copies: Bruck's alltoall packs ``p x nbytes`` per rank (p = 64, 1 MB per destination: 4 GB and 27 s of
wall time, against 0.3-2 s for the other algorithms at that scale). Counts are bytes: ``MPI_BYTE`` for
alltoall, allgather and bcast, ``MPI_CHAR`` with ``MPI_SUM`` (a commutative predefined op) for allreduce, so
SMPI's thresholds, computed from count x type size, are byte thresholds.

SMPI facts measured here (SMPI 3.32, CM02, the flags of :data:`SMPI_RUN_FLAGS`)
-------------------------------------------------------------------------------
* Every MPI message carries a 16-byte envelope: a message of ``n`` bytes over one link takes ``latency + (n + 16)
  / bandwidth`` (``smpi_request.cpp``: ``payload_size = size + 16``); 14 ring steps of 1024 B at 1 us / 1 GB/s
  take 14 x 2.04 us = 28.56 us.
* No rendezvous round trip: 64 KiB and 64 KiB + 1 differ by one byte time; 1 MB over one link is 1 us + 1.000016
  ms. Sends below ``smpi/send-is-detached-thresh`` (65536 B) return at once (the sender does not wait for the
  transfer), larger ones when the transfer ends: a root that sends several small messages in a row overlaps them.
* Many SMPI algorithms copy locally with a send-receive to self (``lr``, ``rdb``, ``ring``, ``pair``, ``bruck``):
  such a message crosses the cluster's loopback link; the platforms here give it ``loopback_bandwidth``
  (default 1e15 B/s, i.e. free, as our model treats traffic within a node) and zero latency.
* SimGrid's torus routes its first dimension first and ties (exactly half a ring) the positive way, except the
  node at coordinate ``d/2`` sending to coordinate ``0``, which goes the negative way (``TorusZone.cpp``; on a ring
  of 8, 4 -> 0 goes 4, 3, 2, 1, 0 while 5 -> 1 goes 5, 6, 7, 0, 1). :func:`torus_platform` reverses the dims so that
  SimGrid's host ``i`` is our node ``i`` (our last dimension varies fastest, SimGrid's first): SimGrid then routes
  OUR LAST dimension first. A torus cluster has no injection link (the host sits on its torus links).
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import shutil
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import positive_float
from ._common import run_in_group

__all__ = [
    "available", "SMPI_RUN_FLAGS", "HARNESS_FLAGS", "torus_platform", "fat_tree_platform", "SmpiCase",
    "run_collectives", "run_collective", "SMPI_ALGORITHMS", "smpi_algorithm", "mpich_choice", "MISSING_ALGORITHMS",
    "SMPI_OPS", "C_SOURCE", "compile_program", "ompi_pipeline_segment_size",
]

SMPI_RUN_FLAGS: tuple[str, ...] = (
    "--cfg=network/model:CM02",
    "--cfg=network/crosstraffic:0",
    "--cfg=smpi/bw-factor:1",
    "--cfg=smpi/lat-factor:1",
    "--cfg=smpi/simulate-computation:no",
)
"""The SMPI model of issue 33: the plain fluid model (CM02, no cross traffic), no bandwidth or latency factors, no
benchmarking of the program's own computation."""

HARNESS_FLAGS: tuple[str, ...] = (
    "--cfg=smpi/wtime:0",            # MPI_Wtime takes no simulated time (default 10 ns), so the common start is exact
    "--cfg=smpi/privatization:no",   # the program has no global variables to privatise (faster start)
    "--log=root.thres:warning",      # SMPI's INFO chatter off; warnings and errors still reach stderr
)
"""Flags of the harness itself (they change no collective's time)."""

SMPI_OPS: dict[str, str] = {"allreduce": "allreduce", "alltoall": "alltoall", "allgather": "allgather",
                            "broadcast": "bcast", "bcast": "bcast"}
"""Op name (ours, or SMPI's ``bcast``) -> SMPI's ``--cfg=smpi/<op>`` name."""

_DEFAULT_LOOPBACK = 1.0e15
DEFAULT_MARGIN = 0.01
"""Seconds between the last rank's arrival and the common start of a case (checked in the program)."""


def available() -> bool:
    """Whether ``smpicc`` and ``smpirun`` are on ``PATH``."""
    return shutil.which("smpicc") is not None and shutil.which("smpirun") is not None


# --- platforms -------------------------------------------------------------------------------------------------

def _num(x: float, unit: str) -> str:
    """A SimGrid quantity: ``repr`` of the float (round-trips exactly) and the unit, e.g. ``1e-06s``."""
    return f"{float(x)!r}{unit}"


def _cluster_xml(n_hosts: int, topology: str, params: str, bandwidth: float, latency: float,
                 loopback_bandwidth: float, prefix: str) -> str:
    if not (float(bandwidth) > 0 and float(latency) >= 0 and float(loopback_bandwidth) > 0):
        raise ValueError(f"bandwidth and loopback_bandwidth must be > 0 and latency >= 0 "
                         f"(got {bandwidth!r}, {loopback_bandwidth!r}, {latency!r})")
    return (
        "<?xml version='1.0'?>\n"
        '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">\n'
        '<platform version="4.1">\n<zone id="world" routing="Full">\n'
        f' <cluster id="c" prefix="{prefix}" suffix="" radical="0-{n_hosts - 1}" speed="1Gf"'
        f' bw="{_num(bandwidth, "Bps")}" lat="{_num(latency, "s")}" topology="{topology}" topo_parameters="{params}"'
        f' sharing_policy="SPLITDUPLEX" loopback_bw="{_num(loopback_bandwidth, "Bps")}" loopback_lat="0s"/>\n'
        "</zone>\n</platform>\n")


def torus_platform(dims: Sequence[int], bandwidth: float, latency: float, *,
                   loopback_bandwidth: float = _DEFAULT_LOOPBACK, prefix: str = "node-") -> str:
    """A SimGrid torus cluster (XML): hosts ``node-0 .. node-(N-1)``, host ``i`` our node ``i`` of ``torus(dims)``.

    ``bandwidth`` is bytes/s per direction of every torus link (``SPLITDUPLEX``: one link each way),
    ``latency`` seconds per link (a message crossing ``h`` links pays ``h x latency``). The dims are written
    reversed in ``topo_parameters`` because SimGrid's first dimension varies fastest and ours (row-major) the
    last: host ``i`` then has our coordinates. SimGrid routes its first listed dimension first, so this is
    dimension-order routing with OUR dimensions in reverse order (``dor(order=(n-1, ..., 0))``), ties positive
    except coordinate ``d/2`` -> ``0`` (negative). No injection links. ``loopback_bandwidth``: of a host's
    messages to itself (SMPI algorithms' local copies), zero latency; the default makes them free.
    """
    dims = [int(d) for d in dims]
    if not dims or any(d < 1 for d in dims):
        raise ValueError(f"dims must be positive integers, got {dims!r}")
    n = 1
    for d in dims:
        n *= d
    return _cluster_xml(n, "TORUS", ",".join(str(d) for d in reversed(dims)), bandwidth, latency,
                        loopback_bandwidth, prefix)


def fat_tree_platform(levels: int, down: Sequence[int], up: Sequence[int], parallel: Sequence[int],
                      bandwidth: float, latency: float, *, loopback_bandwidth: float = _DEFAULT_LOOPBACK,
                      prefix: str = "node-") -> str:
    """A SimGrid ``FAT_TREE`` cluster (XML): ``topo_parameters="levels;down...;up...;parallel..."``.

    SimGrid's parameters, lowest level first: ``down[i]`` children of a level-``i+1`` switch (``down[0]``: hosts
    per leaf), ``up[i]`` parents of a level-``i`` element (``up[0]``: uplinks of a host, 1), ``parallel[i]`` links
    between an element and each parent. Our :func:`~evaluator.topology.fat_tree` ``(children, parents,
    parallel_links)`` is ``down = children``, ``up = parents``, ``parallel = [1] + parallel_links`` (one value per
    tier); hosts ``node-0 .. node-(N-1)``, ``N = prod(down)``, in our node order. Every link (host links too) has
    ``bandwidth`` bytes/s per direction and ``latency`` seconds.
    """
    levels = int(levels)
    down, up, parallel = ([int(x) for x in v] for v in (down, up, parallel))
    if levels < 1 or not (len(down) == len(up) == len(parallel) == levels):
        raise ValueError(f"down, up and parallel need one value per level ({levels}); got {down}, {up}, {parallel}")
    if any(x < 1 for x in down + up + parallel):
        raise ValueError("down, up and parallel must be positive integers")
    n = 1
    for d in down:
        n *= d
    params = f"{levels};{','.join(map(str, down))};{','.join(map(str, up))};{','.join(map(str, parallel))}"
    return _cluster_xml(n, "FAT_TREE", params, bandwidth, latency, loopback_bandwidth, prefix)


# --- the program -----------------------------------------------------------------------------------------------

C_SOURCE = r"""
/* evaluator.bench.smpi: time MPI collectives under SMPI from one common simulated start.
   argv: margin_seconds op nbytes:root [nbytes:root ...]; op in allreduce alltoall allgather bcast.
   Prints "SMPI_HARNESS_RESULT <case> <seconds>" (rank 0), one line per case. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <simgrid/actor.h>

#define GRID 1024.0
#define START_BASE 1024.0

static double common_start(int rank, int size, double margin) {
  double now, tmax, t;
  int r;
  MPI_Barrier(MPI_COMM_WORLD);
  now = MPI_Wtime();
  tmax = now;
  if (rank == 0) {
    for (r = 1; r < size; r++) {
      MPI_Recv(&t, 1, MPI_DOUBLE, r, 9901, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      if (t > tmax) tmax = t;
    }
    /* the start: on a grid of 2^-10 s, and at least START_BASE; every start then lies in [1024, 2048) s (one
       binade: the clock's rounding is the same relative to every start, so a case's time does not depend on
       what ran before it) */
    tmax = ceil((tmax + margin) * GRID) / GRID;
    if (tmax < START_BASE) tmax = START_BASE;
    for (r = 1; r < size; r++) MPI_Send(&tmax, 1, MPI_DOUBLE, r, 9902, MPI_COMM_WORLD);
  } else {
    MPI_Send(&now, 1, MPI_DOUBLE, 0, 9901, MPI_COMM_WORLD);
    MPI_Recv(&tmax, 1, MPI_DOUBLE, 0, 9902, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  }
  now = MPI_Wtime();
  if (!(now < tmax)) {
    fprintf(stderr, "SMPI_HARNESS_ERROR rank %d reached the common start %.9e s late: margin too small\n",
            rank, now - tmax);
    MPI_Abort(MPI_COMM_WORLD, 3);
  }
  sg_actor_sleep_until(tmax);
  now = MPI_Wtime();
  if (now != tmax) {
    fprintf(stderr, "SMPI_HARNESS_ERROR rank %d woke at %.17g, not at the common start %.17g\n", rank, now, tmax);
    MPI_Abort(MPI_COMM_WORLD, 3);
  }
  return tmax;
}

static void run(int op, void *s, void *r, long n, int root, int size) {
  (void)size;
  switch (op) {
    case 0: MPI_Allreduce(s, r, (int)n, MPI_CHAR, MPI_SUM, MPI_COMM_WORLD); break;
    case 1: MPI_Alltoall(s, (int)n, MPI_BYTE, r, (int)n, MPI_BYTE, MPI_COMM_WORLD); break;
    case 2: MPI_Allgather(s, (int)n, MPI_BYTE, r, (int)n, MPI_BYTE, MPI_COMM_WORLD); break;
    case 3: MPI_Bcast(s, (int)n, MPI_BYTE, root, MPI_COMM_WORLD); break;
  }
}

int main(int argc, char **argv) {
  int rank, size, i, r;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc < 4) { if (rank == 0) fprintf(stderr, "SMPI_HARNESS_ERROR usage\n"); MPI_Abort(MPI_COMM_WORLD, 2); }
  double margin = atof(argv[1]);
  const char *ops[4] = {"allreduce", "alltoall", "allgather", "bcast"};
  int op = -1;
  for (i = 0; i < 4; i++) if (strcmp(argv[2], ops[i]) == 0) op = i;
  if (op < 0) { if (rank == 0) fprintf(stderr, "SMPI_HARNESS_ERROR op %s\n", argv[2]); MPI_Abort(MPI_COMM_WORLD, 2); }
  int ncase = argc - 3;
  long *nb = (long *)malloc(sizeof(long) * ncase);
  int *root = (int *)malloc(sizeof(int) * ncase);
  long nmax = 1, nmin = -1;
  for (i = 0; i < ncase; i++) {
    if (sscanf(argv[3 + i], "%ld:%d", &nb[i], &root[i]) != 2 || nb[i] < 0 || root[i] < 0 || root[i] >= size) {
      if (rank == 0) fprintf(stderr, "SMPI_HARNESS_ERROR case %s\n", argv[3 + i]);
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (nb[i] > nmax) nmax = nb[i];
    if (nmin < 0 || nb[i] < nmin) nmin = nb[i];
  }
  long per = (op == 1 || op == 2) ? (long)size : 1L;  /* alltoall, allgather: p blocks */
  char *sbuf = (char *)SMPI_SHARED_MALLOC((size_t)(nmax * per));
  char *rbuf = (char *)SMPI_SHARED_MALLOC((size_t)(nmax * per));
  /* warm-up (1 byte): selectors and SMP algorithms build their node communicators on their first call */
  run(op, sbuf, rbuf, nmin < 1 ? nmin : 1, 0, size);
  double *res = (double *)malloc(sizeof(double) * ncase);
  for (i = 0; i < ncase; i++) {
    double t0 = common_start(rank, size, margin);
    run(op, sbuf, rbuf, nb[i], root[i], size);
    double mine = MPI_Wtime() - t0, other;
    if (rank == 0) {
      for (r = 1; r < size; r++) {
        MPI_Recv(&other, 1, MPI_DOUBLE, r, 9903, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (other > mine) mine = other;
      }
      res[i] = mine;
    } else {
      MPI_Send(&mine, 1, MPI_DOUBLE, 0, 9903, MPI_COMM_WORLD);
    }
  }
  if (rank == 0) {
    for (i = 0; i < ncase; i++) printf("SMPI_HARNESS_RESULT %d %.17g\n", i, res[i]);
    fflush(stdout);
  }
  SMPI_SHARED_FREE(sbuf);
  SMPI_SHARED_FREE(rbuf);
  MPI_Finalize();
  return 0;
}
"""
"""The C program of :func:`run_collectives` (compiled once by :func:`compile_program`)."""


def compile_program(cache_dir: str | os.PathLike | None = None, timeout: float = 300.0) -> Path:
    """The compiled :data:`C_SOURCE` (``smpicc -O1``), cached under ``<tmp>/evaluator-smpi-<hash>/``.

    The cache key is the hash of the source and of ``smpicc``'s path; the binary is written under a temporary name
    and renamed, so concurrent callers never see half a file. ``timeout``: seconds allowed to ``smpicc`` (past
    them it is stopped, with its children, and a :class:`RuntimeError` says so).
    """
    timeout = positive_float("timeout", timeout)  # (None, inf and nan waited for ever)
    if not available():
        raise RuntimeError("SMPI is not available: smpicc and smpirun must be on PATH (SimGrid's SMPI)")
    key = hashlib.sha256((C_SOURCE + "\0" + str(shutil.which("smpicc"))).encode()).hexdigest()[:16]
    base = Path(cache_dir) if cache_dir is not None else Path(tempfile.gettempdir())
    folder = base / f"evaluator-smpi-{key}"
    exe = folder / "smpi_collective"
    if exe.is_file() and os.access(exe, os.X_OK):
        return exe
    folder.mkdir(parents=True, exist_ok=True)
    src = folder / "smpi_collective.c"
    tmp_src = folder / f".src-{os.getpid()}.c"
    tmp_src.write_text(C_SOURCE)
    os.replace(tmp_src, src)
    tmp_exe = folder / f".exe-{os.getpid()}"
    cmd = ["smpicc", "-O1", "-o", str(tmp_exe), str(src), "-lm"]
    rc, stdout, stderr = run_in_group(cmd, timeout)
    if rc is None:
        tmp_exe.unlink(missing_ok=True)
        raise RuntimeError(f"smpicc ran past {timeout:g} s and was stopped (command: {' '.join(cmd)}); check that "
                           f"SimGrid's smpicc compiles a small C program, or allow more time (compile_program's "
                           f"timeout):\n{_tail(stderr + stdout)}")
    if rc != 0:
        raise RuntimeError(f"smpicc failed (exit {rc}; command: {' '.join(cmd)}):\n{_tail(stderr + stdout)}")
    os.replace(tmp_exe, exe)
    return exe


def _tail(text: str, n: int = 40) -> str:
    lines = text.strip().splitlines()
    return "\n".join(lines[-n:])


# --- running cases ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class SmpiCase:
    """One collective to time: ``op`` (ours: allreduce, alltoall, allgather, broadcast; or ``bcast``),
    ``algorithm`` (an SMPI algorithm name, ``"mpich"`` or another SMPI selector), ``n_ranks``, ``nbytes`` (our
    byte convention: allreduce each rank's vector, allgather each rank's contribution, alltoall the bytes to EACH
    other rank, broadcast the root's message) and ``root`` (broadcast)."""

    op: str
    algorithm: str
    n_ranks: int
    nbytes: int
    root: int = 0


def _as_case(c) -> SmpiCase:
    if isinstance(c, SmpiCase):
        case = c
    elif isinstance(c, Mapping):
        case = SmpiCase(**c)
    else:
        case = SmpiCase(*c)
    op = SMPI_OPS.get(case.op)
    if op is None:
        raise ValueError(f"op {case.op!r}: allowed are {sorted(SMPI_OPS)}")
    if not re.fullmatch(r"[A-Za-z0-9_]+", str(case.algorithm)):
        raise ValueError(f"algorithm {case.algorithm!r} is not an SMPI algorithm name")
    nb = float(case.nbytes)
    if not (nb >= 0 and nb == int(nb) and nb < 2 ** 31):
        raise ValueError(f"nbytes {case.nbytes!r}: a whole number of bytes in [0, 2^31) (MPI counts are int)")
    p = int(case.n_ranks)
    if p < 1 or not (0 <= int(case.root) < p):
        raise ValueError(f"n_ranks {case.n_ranks!r} must be >= 1 and root {case.root!r} a rank")
    return SmpiCase(op, str(case.algorithm), p, int(nb), int(case.root))


def run_collectives(platform_xml: str, cases: Iterable, n_hosts: int, *, timeout: float = 600.0,
                    margin: float = DEFAULT_MARGIN, extra_flags: Sequence[str] = (), prefix: str = "node-",
                    stats: dict | None = None) -> list[float]:
    """The simulated seconds of each case, in order, on ``platform_xml`` (ranks placed linearly: rank i on host i).

    Parameters
    ----------
    platform_xml
        A SimGrid platform whose hosts are ``<prefix>0 .. <prefix>(n_hosts-1)`` (:func:`torus_platform`,
        :func:`fat_tree_platform`).
    cases
        :class:`SmpiCase` objects, or tuples / dicts of its fields ``(op, algorithm, n_ranks, nbytes, root=0)``.
    n_hosts
        Hosts of the platform; every case needs ``n_ranks <= n_hosts``.
    timeout
        Seconds of wall time allowed to each ``smpirun``.
    margin
        Simulated seconds from the last rank's arrival to the common start (checked by the program).
    extra_flags
        More ``smpirun`` arguments (e.g. ``--cfg=smpi/send-is-detached-thresh:0``), after :data:`SMPI_RUN_FLAGS`.
    stats
        If a dict, filled with ``runs`` (smpirun processes) and ``wall_s`` (their summed wall time).

    Cases with the same op, algorithm and ``n_ranks`` share one ``smpirun`` (the algorithm is a run-wide
    ``--cfg=smpi/<op>:<name>``); the program loops over their sizes with the common start before each.
    Raises :class:`RuntimeError` with the tail of SMPI's output when a run fails (an unknown algorithm name, an
    SMPI algorithm that refuses the communicator size, a timeout).
    """
    timeout = positive_float("timeout", timeout)  # (None, inf and nan waited for ever)
    cases = [_as_case(c) for c in cases]
    n_hosts = int(n_hosts)
    for c in cases:
        if c.n_ranks > n_hosts:
            raise ValueError(f"a case has {c.n_ranks} ranks but the platform {n_hosts} hosts")
    groups: dict[tuple[str, str, int], list[int]] = {}
    for i, c in enumerate(cases):
        groups.setdefault((c.op, c.algorithm, c.n_ranks), []).append(i)
    out = [float("nan")] * len(cases)
    if not cases:
        return out
    exe = compile_program()
    runs, wall = 0, 0.0
    with tempfile.TemporaryDirectory(prefix="evaluator-smpi-run-") as tmp:
        plat = Path(tmp) / "platform.xml"
        plat.write_text(platform_xml)
        hostfile = Path(tmp) / "hostfile"
        hostfile.write_text("".join(f"{prefix}{i}\n" for i in range(n_hosts)))
        for (op, alg, p), idx in groups.items():
            argv = ["smpirun", "-np", str(p), "-platform", str(plat), "-hostfile", str(hostfile),
                    *SMPI_RUN_FLAGS, *HARNESS_FLAGS, f"--cfg=smpi/{op}:{alg}", *extra_flags,
                    str(exe), repr(float(margin)), op, *(f"{cases[i].nbytes}:{cases[i].root}" for i in idx)]
            t0 = time.perf_counter()
            # smpirun is a script that starts the simulation as its child: run it in its own process group
            # so that a timeout ends both
            rc, stdout, stderr = run_in_group(argv, timeout, cwd=tmp)
            if rc is None:
                raise RuntimeError(f"smpirun timed out after {timeout:g} s ({op} {alg}, {p} ranks, "
                                   f"{len(idx)} cases; the run_collectives timeout):\n{_tail(stderr + stdout)}")
            wall += time.perf_counter() - t0
            runs += 1
            found = _harness_results(stdout)
            if rc != 0 or found is None or sorted(found) != list(range(len(idx))):
                raise RuntimeError(
                    f"smpirun failed (exit {rc}{'' if found is not None else ', unreadable results'}) for {op} "
                    f"algorithm {alg!r} on {p} ranks, sizes {[cases[i].nbytes for i in idx]}:\n"
                    f"{_tail(stderr + stdout)}")
            for k, i in enumerate(idx):
                out[i] = found[k]
    if stats is not None:
        stats["runs"] = stats.get("runs", 0) + runs
        stats["wall_s"] = stats.get("wall_s", 0.0) + wall
    return out


def _harness_results(stdout: str) -> dict[int, float] | None:
    """``{case index: simulated seconds}`` of the program's ``SMPI_HARNESS_RESULT <k> <seconds>`` lines; None where
    one of them does not read as that (an index, a finite number)."""
    found: dict[int, float] = {}
    for line in stdout.splitlines():
        if line.startswith("SMPI_HARNESS_RESULT "):
            parts = line.split()
            try:
                k, v = int(parts[1]), float(parts[2])
            except (IndexError, ValueError):
                return None
            if len(parts) != 3 or not math.isfinite(v):
                return None
            found[k] = v
    return found


def run_collective(platform_xml: str, op: str, algorithm: str, n_ranks: int, nbytes: int, root: int = 0,
                   n_hosts: int | None = None, **kwargs) -> float:
    """The simulated seconds of one collective (:func:`run_collectives` with one case; ``n_hosts`` defaults to
    ``n_ranks``)."""
    return run_collectives(platform_xml, [SmpiCase(op, algorithm, n_ranks, nbytes, root)],
                           n_ranks if n_hosts is None else n_hosts, **kwargs)[0]


# --- algorithm mapping -----------------------------------------------------------------------------------------

SMPI_ALGORITHMS: dict[tuple[str, str], str] = {
    # allreduce ring <-> SMPI "lr" (allreduce-lr.cpp): a self send-receive of count/p, then 2(p-1) sendrecv steps,
    # every rank sends count/p to rank+1 (reduce-scatter, then allgather): the same messages when p divides
    # nbytes. Differences: lr cuts count/p with floor and sends the remainder count % p afterwards with a second
    # MPI_Allreduce (itself lr, which for count < p falls back to "redbcast" = SMPI's configured reduce, then
    # bcast); MPICH's ring gives the first count % p blocks one more element; ours uses nbytes/p exactly.
    # For nbytes < p lr is redbcast altogether. Use nbytes divisible by p.
    ("allreduce", "ring"): "lr",
    # recursive doubling <-> "rdb" (allreduce-rdb.cpp): identical partners, fold (even ranks < 2r send to rank+1,
    # new rank x is 2x+1 for x < r, else x+r; post-step back), whole vector each step; any p, any count.
    # Extra: a self send-receive of the vector first and, in every step where the partner's rank is higher, a
    # self send-receive that copies the result back (free with the platforms' default loopback).
    ("allreduce", "recursive_doubling"): "rdb",
    # Rabenseifner <-> "rab_rdb" (allreduce-rab-rdb.cpp): same fold, reduce-scatter by recursive halving with
    # partner distance 1, 2, ..., p'/2 (the lower rank keeps the lower half) and allgather by recursive doubling
    # p'/2, ..., 1; the same bytes when p' divides nbytes (blocks count/p', the last p'-th block takes the
    # remainder, so for other sizes the halves are unequal). It never falls back for count < p' (blocks of 0).
    # Not rab1 (distance p'/2 first, pof2 only, allgather by the configured allgather) nor rab2 (alltoall +
    # allgather) nor mvapich2_rs.
    ("allreduce", "rabenseifner"): "rab_rdb",
    # alltoall pairwise <-> "pair" for a power-of-two p (alltoall-pair.cpp: step i = 0..p-1 sendrecv with
    # rank ^ i; step 0 is a self copy); SMPI's "pair" throws for other p. For p not a power of two our pairwise
    # is (x + i) mod p = SMPI "ring" (alltoall-ring.cpp): use smpi_algorithm(), which picks by p.
    ("alltoall", "pairwise"): "pair",
    # Bruck <-> "bruck" (alltoall-bruck.cpp): step k sends to (rank + 2^k) mod p the packed blocks whose index
    # (1..p-1) has bit k set, the same count as ours, any p; plus local rotations (self send-receives of up to
    # p x nbytes, free with the default loopback) and the 16-byte envelope per message.
    ("alltoall", "bruck"): "bruck",
    # allgather ring <-> "NTSLR" (allgather-NTSLR.cpp, logical ring: p-1 sendrecv steps, block to rank+1 from
    # rank-1), any p. NOT SMPI's "ring" (allgather-ring.cpp), which in step i sends the rank's own block to
    # rank + i: see MISSING_ALGORITHMS["allgather", "ring"] (the one SMPI's mpich selector uses).
    ("allgather", "ring"): "NTSLR",
    # recursive doubling <-> "rdb" (allgather-rdb.cpp) for a power-of-two p (partner rank ^ 2^k, 2^k blocks).
    # For other p SMPI's rdb does MPICH's tree fix-up of the missing subtrees, while ours is Bruck = SMPI
    # "bruck" (allgather-bruck.cpp: 2^k blocks to rank - 2^k, last step the p - 2^(L-1) remaining blocks):
    # use smpi_algorithm(), which picks by p.
    ("allgather", "recursive_doubling"): "rdb",
    # broadcast binomial <-> "binomial_tree" (bcast-binomial-tree.cpp): receive from rank - mask at the lowest
    # set bit of the relative rank, then send to relative + mask for mask from high to low, as MPICH; any p and
    # root. Note: sends below 64 KiB are detached in SMPI, so a parent's successive small sends overlap (our
    # steps serialise them); above 64 KiB they are sequential as in our steps.
    ("broadcast", "binomial"): "binomial_tree",
}
"""Our (op, algorithm) -> the SMPI algorithm (``--cfg=smpi/<op>:<name>``) that sends the same messages (partners,
bytes per step, steps), under the conditions in the comments (source: SimGrid 3.32 ``src/smpi/colls/``).

Excluded, because they differ:

* ``allreduce binomial`` (binomial reduce then binomial bcast): SMPI's ``redbcast`` calls the run-wide reduce and
  bcast algorithms (``--cfg=smpi/reduce:binomial --cfg=smpi/bcast:binomial_tree`` make it ours: reduce-binomial.cpp
  sends the whole vector from relative rank ``x`` with bit ``m`` lowest set to ``x - m``, then the binomial tree);
  the harness runs one algorithm per op, so pass those two flags in ``extra_flags`` with algorithm ``redbcast``.
* ``broadcast pipelined_ring``: SMPI's ``NTSL`` (8 KiB segments) posts all segments at once (they share the
  first link and arrive together: no pipeline in a fluid model); ``ompi_pipeline`` is a chain root, root+1, ...
  that sends one segment at a time, but its segment size is chosen by Open MPI's rule (16, 64 or 128 KiB from p
  and the size, :func:`ompi_pipeline_segment_size`) and segments under 64 KiB are detached sends, so only 128 KiB
  segments pipeline as ours (``n_segments = ceil(nbytes / 131072)``, equal segments when 131072 divides nbytes;
  measured on the 8-ring at 5 and 8 MiB: our step sum within 4e-6).

Same messages is not same timing: SMPI runs each rank as soon as its own partners allow (no global step
barrier), and sends below 64 KiB are detached (a parent's successive small sends overlap). Measured on an 8-ring
(1 us, 1 GB/s, 16-byte envelope added to our bytes) every pair above equals the sum of per-step times
``max hops x latency + max link load / bandwidth`` (SimGrid's routes) to 1e-9 at p = 8 from 64 KiB up and at
p = 5, 6, 7 for 27.5 MB, except where ranks run ahead of the lock-step: alltoall pairwise at p = 8 (XOR partners
of unequal hop counts; SMPI overlaps latencies: 8 us less over 7 steps), the folded p = 6 recursive doubling
and Rabenseifner (1-4 us less). Below 64 KiB the binomial broadcast (and redbcast) takes up to 1.9x the step sum
(its parent's detached sends share the first link) unless ``--cfg=smpi/send-is-detached-thresh:0`` is passed,
which makes them equal.
"""


def ompi_pipeline_segment_size(n_ranks: int, nbytes: int) -> int:
    """The segment size (bytes) SMPI's bcast ``ompi_pipeline`` uses (bcast-ompi-pipeline.cpp; 1-byte type).

    128 KiB unless ``p >= 1.6134e-6 n + 2.1102`` and then 64 KiB if ``p < 2.3679e-6 n + 1.1787``, else 16 KiB if
    ``p < 3.2118e-6 n + 8.7936`` (else 128 KiB). A message of at most one segment is sent whole. Our
    ``pipelined_ring`` with ``n_segments = ceil(n / 131072)`` sends the same messages when this is 131072 and
    131072 divides ``n`` (smaller segments are detached sends in SMPI and stop pipelining).
    """
    p, m = int(n_ranks), float(nbytes)
    if p < 1.6134e-6 * m + 2.1102:
        return 131072
    if p < 2.3679e-6 * m + 1.1787:
        return 65536
    if p < 3.2118e-6 * m + 8.7936:
        return 16384
    return 131072


def smpi_algorithm(op: str, algorithm: str, n_ranks: int) -> str | None:
    """The SMPI algorithm sending our ``algorithm``'s messages on ``n_ranks`` ranks, or None where none does.

    As :data:`SMPI_ALGORITHMS`, with the cases that depend on ``p``: alltoall ``pairwise`` is ``pair`` for a
    power-of-two ``p`` and ``ring`` otherwise; allgather ``recursive_doubling`` is ``rdb`` for a power-of-two
    ``p`` and ``bruck`` otherwise (both as our module builds them).
    """
    op = "broadcast" if op == "bcast" else op
    p = int(n_ranks)
    pow2 = p >= 1 and p & (p - 1) == 0
    if (op, algorithm) == ("alltoall", "pairwise"):
        return "pair" if pow2 else "ring"
    if (op, algorithm) == ("allgather", "recursive_doubling"):
        return "rdb" if pow2 else "bruck"
    return SMPI_ALGORITHMS.get((op, algorithm))


# --- SMPI's mpich selector -------------------------------------------------------------------------------------

def _pof2_floor(p: int) -> int:
    pof2 = 1
    while pof2 <= p:
        pof2 <<= 1
    return pof2 >> 1


def mpich_choice(op: str, n_ranks: int, nbytes: int, *, smp_comm: bool = False, effective: bool = False) -> str:
    """The SMPI algorithm that ``--cfg=smpi/<op>:mpich`` runs (SimGrid 3.32 ``smpi_mpich_selector.cpp``).

    ``nbytes`` in our convention with 1-byte types (``MPI_CHAR`` / ``MPI_BYTE``), so SMPI's ``count x type
    size`` is bytes. Rules (``p = n_ranks``, ``p'`` the largest power of two <= p):

    * allreduce, called on ``MPI_COMM_WORLD`` (not an SMP communicator) with a commutative op: always
      ``mvapich2_two_level`` (the selector's first branch), which reduces within each host, runs ``rdb`` (its
      default inter-node algorithm, as the mvapich2 selector is not in use) among the host leaders and
      broadcasts within each host. On an SMP communicator (``smp_comm=True``, or a non-commutative op):
      ``rab_rdb`` if ``nbytes > 2048`` and ``count >= p'``, else ``rdb``.
    * bcast on ``MPI_COMM_WORLD`` with the same number of ranks on every host (one rank per host: always):
      ``SMP_binomial`` (binomial tree among hosts, then within each host; a root other than 0 first sends to
      rank 0). On an SMP communicator: ``binomial_tree`` if ``nbytes < 12288`` or ``p <= 8``; else
      ``scatter_rdb_allgather`` if ``nbytes < 524288`` and ``p`` even; else ``scatter_LR_allgather``.
    * alltoall (per-destination bytes): ``bruck`` if ``nbytes < 256`` and ``p >= 8``; else
      ``mvapich2_scatter_dest`` if ``nbytes < 32768``; else ``pair`` if ``p`` is odd (SMPI's ``pair`` then
      throws: it needs a power of two; a bug of SMPI's selector); else ``ring``.
    * allgather (``total = p x nbytes``): ``rdb`` if ``p`` is a power of two and ``total < 524288``; else
      ``bruck`` if ``total <= 81920``; else ``ring`` (SMPI's ring: own block to rank + i in step i).

    ``effective=True`` gives the algorithm that moves the bytes with ONE rank per host: ``mvapich2_two_level`` ->
    ``rdb`` and ``SMP_binomial`` -> ``binomial_tree`` (the same messages for root 0; verified equal in time).
    """
    op = SMPI_OPS.get(op)
    if op is None:
        raise ValueError(f"op: allowed are {sorted(SMPI_OPS)}")
    p, n = int(n_ranks), int(nbytes)
    if p < 1 or n < 0:
        raise ValueError("n_ranks >= 1 and nbytes >= 0")
    if op == "allreduce":
        if not smp_comm:
            return "rdb" if effective else "mvapich2_two_level"
        return "rab_rdb" if n > 2048 and n >= _pof2_floor(p) else "rdb"
    if op == "bcast":
        if not smp_comm:
            return "binomial_tree" if effective else "SMP_binomial"
        if n < 12288 or p <= 8:
            return "binomial_tree"
        if n < 524288 and p % 2 == 0:
            return "scatter_rdb_allgather"
        return "scatter_LR_allgather"
    if op == "alltoall":
        if n < 256 and p >= 8:
            return "bruck"
        if n < 32768:
            return "mvapich2_scatter_dest"
        if p % 2:
            return "pair"
        return "ring"
    # allgather
    pow2 = 1
    while pow2 < p:
        pow2 <<= 1
    total = n * p
    if pow2 == p and total < 524288:
        return "rdb"
    if total <= 81920:
        return "bruck"
    return "ring"


# --- what MPICH's selector uses and we lack --------------------------------------------------------------------

MISSING_ALGORITHMS: dict[tuple[str, str], str] = {
    ("broadcast", "scatter_rdb_allgather"): """\
MPICH MPIR_Bcast_intra_scatter_recursive_doubling_allgather (SMPI bcast-scatter-rdb-allgather.cpp). n bytes from
root, relative ranks x = (rank - root) mod p, chunk c = ceil(n / p); rank x owns bytes [x c, min((x+1) c, n)).
Scatter (binomial, as the binomial bcast): L = ceil(log2 p) steps, step k with m = 2^(L-1-k): every x with
x mod 2m = 0 and x + m < p sends to x + m the bytes of the subtree [x+m, min(x+2m, p)) blocks, i.e.
max(0, min(n, min(x+2m, p) c) - (x+m) c) bytes (sizes are clipped at n, so the last ranks may get 0).
Allgather by recursive doubling on relative ranks: step k = 0..L-1, x exchanges with x XOR 2^k (when < p) all
it holds: the bytes of its aligned subtree of 2^k blocks [(x >> k) << k, +2^k) clipped at n. For p a power
of two: 2^k c bytes each way (c = n/p when p divides n), log2 p steps. For p not a power of two SMPI runs
MPICH's fix-up (partners >= p skip; ranks whose partner subtree is missing get it by recursive halving inside
the subtree). MPICH's rule picks it for p > 8, p even and 12288 <= n < 524288; SMPI's mpich selector only on
an SMP communicator (on MPI_COMM_WORLD SMPI's bcast:mpich is SMP_binomial = binomial_tree with one rank per
host).""",
    ("broadcast", "scatter_LR_allgather"): """\
MPICH MPIR_Bcast_intra_scatter_ring_allgather (SMPI bcast-scatter-LR-allgather.cpp). The same binomial scatter
of chunks c = ceil(n / p) (above), then a ring allgather: p - 1 steps, in step i (1..p-1) every rank sends to
rank + 1 (mod p, real ranks) the chunk it received in the previous step (its own chunk first), i.e. chunk of
relative rank (x - i + 1) mod p, min(c, max(0, n - j c)) bytes for chunk j. Any p. Used by MPICH for large
messages (n >= 524288, or odd p and n >= 12288) with p > 8.""",
    ("alltoall", "scatter_dest"): """\
MPICH's medium alltoall (MPIR_Alltoall_intra_scattered; SMPI alltoall-mvapich-scatter-dest.cpp with throttle
bblock = min(4, p)). ceil(p / bblock) phases; phase b posts, for i = 0..ss-1 (ss = min(bblock, p - b bblock)),
an irecv from (x + i + b bblock) mod p and an isend of nbytes to (x - i - b bblock) mod p, then waits for all
2 ss. So in phase b rank x sends nbytes to each of the ranks at distance -(b bblock) .. -(b bblock + ss - 1)
(mod p) concurrently; phase 0 includes the self copy (i = 0). Any p (no power-of-two case). Phases are
separated by the waitall (a rank starts phase b+1 when its own messages of phase b are done).""",
    ("allgather", "ring"): """\
SMPI's allgather "ring" (allgather-ring.cpp), the one SMPI's mpich selector uses for large sizes (it is NOT
MPICH's logical ring, which is SMPI's NTSLR = our ring): a self copy, then p - 1 sendrecv steps; in step
i (1..p-1) rank x sends its OWN block (nbytes) to (x + i) mod p and receives from (x - i) mod p. Same bytes
as the logical ring, but step i crosses i hops (min(i, p-i) on a ring) instead of 1. Any p.""",
    ("alltoall", "ring"): """\
SMPI's alltoall "ring" (alltoall-ring.cpp), mpich's choice for nbytes >= 32768 and even p: p sendrecv steps
i = 0..p-1 (i = 0 a self copy): rank x sends nbytes to (x + i) mod p, receives from (x - i) mod p. For p not a
power of two this IS our pairwise; for a power of two it differs from ours (XOR partners).""",
    ("allreduce", "mvapich2_two_level"): """\
SMPI's allreduce:mpich on MPI_COMM_WORLD with a commutative op: reduce within each host (to its first rank),
allreduce among the host leaders with rdb (recursive doubling, whole vector every step, MPICH fold for p not a
power of two), broadcast within each host. With one rank per host the intra-host parts are empty: = rdb
(MPICH's size rule rdb / rab_rdb is not applied on MPI_COMM_WORLD).""",
}
"""Algorithms that SMPI's ``mpich`` selector (or MPICH's) runs and our module lacks, or runs in a form we lack:
(op, SMPI-ish name) -> the message schedule, for p a power of two and not."""
