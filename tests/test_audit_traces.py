"""Audit of the trace readers (``traffic=trace``: evaluator/traffic/_trace.py, _otf2_read.py) and of the ``phased``
traffic kind (_phased.py). OTF2 traces are written here with the ``otf2`` package's own writer and the expected
flows, phases and windows are computed in plain Python from what was written (closed forms of the collectives'
bytes, the documented phase rules, integer tick arithmetic), never with the code under test."""

from __future__ import annotations

import os
import shutil

import numpy as np
import pytest

otf2 = pytest.importorskip("otf2")
from otf2.enums import CollectiveOp, GroupType, Paradigm  # noqa: E402

from evaluator.errors import ConfigError  # noqa: E402
from evaluator.traffic import KINDS, from_trace, read_otf2  # noqa: E402
from evaluator.traffic._phased import PhasedConfig  # noqa: E402

UNDEF = 2 ** 32 - 1


def _write(path, n, events, subs=None, res=10 ** 6):
    """An OTF2 trace of ``n`` ranks, ``res`` ticks a second. ``events``: ``(rank, tick, kind, ...)`` with kind
    ``send`` (receiver, comm, bytes) or ``coll`` (op, comm, root, sent, received; a Begin one tick before the End).
    ``subs``: ``{name: [ranks in communicator order]}``. Returns the anchor file."""
    with otf2.writer.open(str(path), timer_resolution=res) as tr:
        d = tr.definitions
        node = d.system_tree_node("m")
        locs = [d.location(f"rank {r}", group=d.location_group(f"R{r}", system_tree_parent=node)) for r in range(n)]
        d.group("wl", group_type=GroupType.COMM_LOCATIONS, paradigm=Paradigm.MPI, members=locs)
        comms = {"world": d.comm("W", group=d.group("w", group_type=GroupType.COMM_GROUP, paradigm=Paradigm.MPI,
                                                    members=list(range(n))))}
        for name, m in (subs or {}).items():
            comms[name] = d.comm(name, group=d.group(name, group_type=GroupType.COMM_GROUP, paradigm=Paradigm.MPI,
                                                     members=list(m)), parent=comms["world"])
        for r in range(n):
            mine = sorted((e for e in events if e[0] == r), key=lambda e: e[1])
            if not mine:
                continue
            w = tr.event_writer_from_location(locs[r])
            for e in mine:
                if e[2] == "send":
                    w.mpi_send(e[1], e[3], comms[e[4]], 0, e[5])
                else:
                    w.mpi_collective_begin(e[1] - 1)
                    w.mpi_collective_end(e[1], getattr(CollectiveOp, e[3]), comms[e[4]], e[5], e[6], e[7])
    return os.path.join(str(path), "traces.otf2")


def _dense(n, flows):
    T = np.zeros((n, n))
    for s, d, b in flows:
        T[s, d] += b
    return T


def _coll(members, tick, op, comm, root, sent, received):
    return [(r, tick, "coll", op, comm, root, sent, received) for r in members]


# ----------------------------------------------------------------------------------------------
# collectives against closed forms
# ----------------------------------------------------------------------------------------------


def test_collectives_expand_to_their_closed_form_bytes(tmp_path):
    """On a sub-communicator (members not in rank order): a ring allreduce of x sends 2 (N-1) x / N from each
    member to one ring neighbour (communicator order); a pairwise alltoall x to every other member; a binomial
    broadcast x once to every non-root member; a reduce x once from every non-root member. Score-P's sizes."""
    m, n, x = [5, 1, 4, 0, 2], 7, 1500.0
    N = len(m)
    cases = {"ALLREDUCE": (N * x, N * x, UNDEF), "ALLTOALL": (N * x, N * x, UNDEF), "BCAST": (0, x, 3),
             "REDUCE": (x, 0, 3)}
    for op, (sent, recv, root) in cases.items():
        p = _write(tmp_path / op, n, _coll(m, 10, op, "sub", root, int(sent), int(recv)), subs={"sub": m})
        T = from_trace(p).to_dense()
        inside = np.zeros((n, n), bool)
        inside[np.ix_(m, m)] = True
        assert not T[~inside].any(), op  # only between members
        if op == "ALLREDUCE":
            nz = {(int(a), int(b)) for a, b in zip(*np.nonzero(T))}
            right = {(m[j], m[(j + 1) % N]) for j in range(N)}
            left = {(m[j], m[(j - 1) % N]) for j in range(N)}
            assert nz in (right, left), nz
            assert np.allclose([T[a, b] for a, b in nz], 2 * (N - 1) * x / N)
        elif op == "ALLTOALL":
            want = np.full((N, N), x) - np.diag(np.full(N, x))
            np.testing.assert_allclose(T[np.ix_(m, m)], want)
        elif op == "BCAST":
            got_in = T.sum(axis=0)
            np.testing.assert_allclose(got_in[m], [0.0 if r == m[3] else x for r in m])
            assert T.sum() == pytest.approx((N - 1) * x)
        else:  # REDUCE
            got_out = T.sum(axis=1)
            np.testing.assert_allclose(got_out[m], [0.0 if r == m[3] else x for r in m])
            assert T.sum() == pytest.approx((N - 1) * x)


# ----------------------------------------------------------------------------------------------
# phases
# ----------------------------------------------------------------------------------------------


def test_a_send_follows_every_collective_its_rank_took_part_in(tmp_path):
    """Rank 0 does an allreduce on {0, 1} (its record at 10 us; rank 1's at 100 us: it completes at 100 us),
    then a barrier on {0, 2} (completes at 30 us), then sends at 25 us. In completion order the barrier is
    collective 0 and the allreduce collective 1; the send comes after both of rank 0's collectives, so it is
    ``p2p2`` (docs/traces.md: the sends after its k-th collective and before its next form p2p{k+1}). It went into
    ``p2p1``, before the allreduce's steps, although rank 0 sent it after taking part in that allreduce."""
    ev = (_coll([0], 10, "ALLREDUCE", "A", UNDEF, 200, 200) + _coll([1], 100, "ALLREDUCE", "A", UNDEF, 200, 200)
          + _coll([0], 20, "BARRIER", "B", UNDEF, 0, 0) + _coll([2], 30, "BARRIER", "B", UNDEF, 0, 0)
          + [(0, 25, "send", 3, "world", 7), (3, 1, "send", 2, "world", 5)])
    p = _write(tmp_path / "t", 4, ev, subs={"A": [0, 1], "B": [0, 2]})
    rec = read_otf2(p)
    assert [c.op for c in rec.collectives] == ["BARRIER", "ALLREDUCE"]
    assert dict(zip(rec.src.tolist(), rec.after.tolist())) == {3: -1, 0: 1}
    tr = from_trace(p, mode="phased")
    assert tr.phase_names[0] == "p2p0" and tr.phase_names[-1] == "p2p2", tr.phase_names
    assert all(n.startswith("allreduce1.step") for n in tr.phase_names[1:-1])
    np.testing.assert_array_equal(tr.phases[-1].to_dense(), _dense(4, [(0, 3, 7)]))
    np.testing.assert_array_equal(tr.phases[0].to_dense(), _dense(4, [(3, 2, 5)]))


def test_window_of_a_send_one_tick_before_a_boundary_in_a_long_trace(tmp_path):
    """ns ticks, 1 s windows: a send at tick 2e12 - 1 (1999.999999999 s) is in window 1999 (integer arithmetic:
    tick // 1e9). The relative 1e-12 tolerance put it in window2000."""
    ticks = [0, 2 * 10 ** 12 - 1, 2 * 10 ** 12, 3 * 10 ** 12 - 2]
    ev = [(0, t, "send", 1, "world", 10 + i) for i, t in enumerate(ticks)]
    p = _write(tmp_path / "t", 2, ev, res=10 ** 9)
    tr = from_trace(p, mode="phased", phase_rule="window", window=1.0)
    want = {}
    for i, t in enumerate(ticks):
        want[t // 10 ** 9] = want.get(t // 10 ** 9, 0) + 10 + i
    assert tr.phase_names == tuple(f"window{k}" for k in sorted(want))
    assert [p.total_bytes for p in tr.phases] == [want[k] for k in sorted(want)]


@pytest.mark.parametrize("window,ticks_per_window", [(0.1, 100_000), (0.3, 300_000), (1.5e-6, 1.5), (7e-6, 7)])
def test_windows_are_counted_from_the_trace_start_in_ticks(tmp_path, window, ticks_per_window):
    """us ticks; the trace starts at its first event (tick 40). The sends sit on and next to window boundaries
    (0.3 s = 3 windows of 0.1 s, where 0.3 / 0.1 < 3 in floats); a window of 1.5 ticks is not a whole number of
    ticks. Expected: floor((tick - 40) / ticks_per_window) in exact rational arithmetic."""
    from fractions import Fraction

    tpw = Fraction(ticks_per_window).limit_denominator(10)
    rel = sorted({0, 1, 2, 3, 5, 6, 7, 8, 13, 14, 15, 20, 21} | {int(k * tpw) + d for k in (1, 2, 3, 10) for d in
                                                                   (-1, 0, 1)})
    ev = [(0, 40 + t, "send", 1, "world", 2 ** i) for i, t in enumerate(rel)]  # distinct powers of two
    p = _write(tmp_path / "t", 2, ev)
    tr = from_trace(p, mode="phased", phase_rule="window", window=window)
    want = {}
    for i, t in enumerate(rel):
        k = int(Fraction(t) // tpw)
        want[k] = want.get(k, 0) + 2 ** i
    assert tr.phase_names == tuple(f"window{k}" for k in sorted(want))
    assert [int(q.total_bytes) for q in tr.phases] == [want[k] for k in sorted(want)]


# ----------------------------------------------------------------------------------------------
# refusals
# ----------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    return _write(tmp_path_factory.mktemp("small") / "t", 3, [(0, 0, "send", 1, "world", 100),
                                                              (2, 3, "send", 0, "world", 0)])


def test_bytes_scale_zero_is_refused_naming_bytes_scale(small):
    """bytes_scale=0 on a trace with bytes was refused as ``traffic.path``: 'an OTF2 trace with MPI traffic ...
    It has 1 MpiSend ... records with bytes' (it has)."""
    with pytest.raises(ConfigError) as e:
        from_trace(small, bytes_scale=0)
    assert e.value.field == "traffic.bytes_scale" and e.value.value == 0 and "> 0" in str(e.value)
    assert small in str(e.value)
    assert from_trace(small, bytes_scale=2).total_bytes == 200


def test_a_trace_of_zero_byte_sends_says_none_carries_bytes(tmp_path):
    p = _write(tmp_path / "z", 2, [(0, 0, "send", 1, "world", 0), (1, 1, "send", 0, "world", 0)])
    with pytest.raises(ConfigError) as e:
        from_trace(p, mode="phased")
    msg = str(e.value)
    assert e.value.field == "traffic.path" and "2 MpiSend" in msg and "(0 with bytes)" in msg, msg


def test_paths_refused_by_name(tmp_path, small):
    d = tmp_path / "two"
    shutil.copytree(os.path.dirname(small), d)
    shutil.copy(d / "traces.otf2", d / "other.otf2")
    cases = [(str(d), "exactly one", "other.otf2"), (str(d / "traces"), "holds no .otf2 file"),
             (str(d / "traces.def"), "ends in .otf2"), (3, "anchor file")]
    for path, *words in cases:
        with pytest.raises(ConfigError) as e:
            read_otf2(path)
        assert e.value.field == "traffic.path", path
        for w in words:
            assert w in str(e.value), str(e.value)


# ----------------------------------------------------------------------------------------------
# the phased kind
# ----------------------------------------------------------------------------------------------


def _phased(phases, names=None):
    return KINDS["phased"].build(PhasedConfig(phases=phases, names=names), None)


def test_phased_names_one_per_entry_and_totals():
    """A collective entry is several phases (its steps): ``names`` with one label per entry labels its steps
    ``<name>.<step>``; it was refused as ``traffic.phase_names`` (not a key) asking for 7 labels. Totals by closed
    form: Rabenseifner allreduce of x over 8 ranks: halving x/2, x/4, x/8 per rank, then doubling back; all_to_all
    8 x 7 x b."""
    x, b = 8e5, 3e3
    ph = [{"kind": "collective", "op": "allreduce", "algorithm": "rabenseifner", "n_tasks": 8, "bytes": x},
          {"kind": "all_to_all", "n_tasks": 8, "bytes": b}]
    tr = _phased(ph, names=["ar", "a2a"])
    assert tr.phase_names[-1] == "a2a" and len(tr.phase_names) == 7
    assert all(n.startswith("ar.") for n in tr.phase_names[:6]) and len(set(tr.phase_names)) == 7
    want = [8 * x / 2, 8 * x / 4, 8 * x / 8, 8 * x / 8, 8 * x / 4, 8 * x / 2, 8 * 7 * b]
    np.testing.assert_allclose([p.total_bytes for p in tr.phases], want)
    assert tr.total_bytes == pytest.approx(sum(want))
    # one label per phase after the expansion is accepted as before
    flat = [f"s{k}" for k in range(7)]
    assert _phased(ph, names=flat).phase_names == tuple(flat)
    for bad in (["a"], ["a", "a"], flat[:5]):
        with pytest.raises(ConfigError) as e:
            _phased(ph, names=bad)
        assert e.value.field == "traffic.names" and "2 or 7 distinct labels" in str(e.value), str(e.value)


def test_phased_task_count_mismatch_names_the_entry():
    """The second entry has 4 tasks against the first's 8: refused as ``traffic.phases[1].n_tasks`` (it said
    ``traffic.phases[6].n_tasks``, counting the first entry's 6 steps, in a list of 2)."""
    ph = [{"kind": "collective", "op": "allreduce", "algorithm": "rabenseifner", "n_tasks": 8},
          {"kind": "all_to_all", "n_tasks": 4}]
    with pytest.raises(ConfigError) as e:
        _phased(ph)
    assert e.value.field == "traffic.phases[1].n_tasks" and e.value.value == 4 and "(8)" in str(e.value)
    with pytest.raises(ConfigError) as e:
        _phased([{"kind": "all_to_all", "n_tasks": 4}, {"kind": "all_to_all", "n_tasks": 4}], names=["a", "a"])
    assert e.value.field == "traffic.names"


def test_phased_memory_refusal_names_the_phase_s_key():
    """A phase too large for memory (a ResourceError from its own kind) named ``traffic.n_tasks``, a key the phased
    config does not have; it is ``traffic.phases[0].n_tasks`` as for every other refusal of a phase."""
    from evaluator.errors import ResourceError

    with pytest.raises(ResourceError) as e:
        _phased([{"kind": "collective", "op": "allreduce", "n_tasks": 10 ** 12}])
    assert e.value.field == "traffic.phases[0].n_tasks" and e.value.value == 10 ** 12
    assert "traffic.phases[0].n_tasks = 1000000000000" in str(e.value)


def test_collective_record_of_a_non_member_is_refused(tmp_path):
    """Rank 3 records an allreduce on communicator {0, 1, 2}, of which it is no member (records that contradict
    the definitions). Its 3 MB record was taken for the operation's size: the 300 B allreduce of 100 B a rank
    (ring: 2 (N-1) x = 400 B) became 4 MB. Refused now, naming the communicator, the rank and the members."""
    ev = (_coll([0, 1, 2], 10, "ALLREDUCE", "sub", UNDEF, 300, 300)
          + _coll([3], 10, "ALLREDUCE", "sub", UNDEF, 3 * 10 ** 6, 0))
    p = _write(tmp_path / "out", 4, ev, subs={"sub": [0, 1, 2]})
    with pytest.raises(ConfigError) as e:
        from_trace(p)
    msg = str(e.value)
    assert e.value.field == "traffic.path" and p in msg
    for w in ("ALLREDUCE", "'sub'", "ranks [0, 1, 2]", "rank(s) [3]", "no members"):
        assert w in msg, msg
    ok = _write(tmp_path / "in", 4, _coll([0, 1, 2], 10, "ALLREDUCE", "sub", UNDEF, 300, 300), subs={"sub": [0, 1, 2]})
    assert from_trace(ok).total_bytes == pytest.approx(2 * 2 * 100)
