"""An audit of ``traffic=file`` as a user bringing their own data sees it: files that were read differently from
what they say, or refused with an error that did not name the line, value and what is allowed. Each test failed
on the reader before its fix (evaluator/traffic/_file.py).
"""

from __future__ import annotations

import numpy as np
import pytest

from evaluator.errors import ConfigError
from evaluator.traffic import from_file


def test_float32_task_ids_near_the_top_of_float32_are_read_not_refused(tmp_path):
    """An (E, 3) float32 .npy whose largest id is 16777216 (2**24, exact in float32) has 16777217 tasks; the id
    was compared with the task count in float32 (16777217 rounds to 16777216) and refused as 'not in [0,
    16777216]', a refusal that contradicted itself and named no file."""
    p = tmp_path / "f32.npy"
    np.save(p, np.array([[2 ** 24, 0, 1000.0], [0, 2 ** 24, 500.0]], dtype=np.float32))
    t = from_file(p)
    assert t.n_tasks == 2 ** 24 + 1
    assert t.src.tolist() == [2 ** 24, 0] and t.dst.tolist() == [0, 2 ** 24]
    assert t.nbytes.tolist() == [1000.0, 500.0]


def test_npz_with_both_a_matrix_and_coo_arrays_is_refused(tmp_path):
    """An .npz holding a dense 'matrix' and COO 'row', 'col', 'data' was read as the matrix alone: the COO flows
    were dropped without a word. Which one is the traffic is the user's to say."""
    p = tmp_path / "both.npz"
    np.savez(p, matrix=np.array([[0.0, 1.0], [1.0, 0.0]]), row=[0, 1], col=[1, 0], data=[5e6, 5e6])
    with pytest.raises(ConfigError) as e:
        from_file(p)
    msg = str(e.value)
    assert e.value.field == "traffic.path" and str(p) in msg
    assert "not both" in msg and "'matrix'" in msg and "['row', 'col', 'data']" in msg, msg


@pytest.mark.parametrize("digit", ["\uff11", "\u0661"])  # FULLWIDTH DIGIT ONE, ARABIC-INDIC DIGIT ONE
def test_csv_non_ascii_digits_name_their_line_and_field(tmp_path, digit):
    """Python's float reads other scripts' digits, NumPy's loadtxt not: such a field passed the per-field check,
    so the refusal was the bare 'numpy.loadtxt could not parse it', naming no line, field or value."""
    p = tmp_path / "t.csv"
    p.write_text(f"src,dst,bytes\n0,1,1000\n{digit},0,1000\n", encoding="utf-8")
    with pytest.raises(ConfigError) as e:
        from_file(p)
    msg = str(e.value)
    assert e.value.field == "traffic.path" and str(p) in msg
    assert f"line 3 has src = {digit!r}" in msg and "ASCII" in msg, msg


def test_csv_task_count_below_the_ids_says_at_least(tmp_path):
    """A .csv may name more tasks than its ids (the extra tasks idle): the refusal of fewer said 'allowed is the
    file's task count 6', as if it had to be equal."""
    p = tmp_path / "t.csv"
    p.write_text("0,5,1000\n")
    with pytest.raises(ConfigError) as e:
        from_file(p, n_tasks=3)
    msg = str(e.value)
    assert e.value.field == "traffic.n_tasks" and "at least the file's task count 6" in msg, msg
    assert "largest task id 5" in msg, msg
    assert from_file(p, n_tasks=8).n_tasks == 8


@pytest.mark.parametrize("entry,what", [("0 2 5", "Row"), ("1 0 5", "Column"), ("4 2 5", "Row")])
def test_mtx_index_out_of_bounds_names_the_range(tmp_path, entry, what):
    """SciPy's 'Line 3: Row index out of bounds' named neither the range nor that Matrix Market counts from 1 (a
    file written counted from 0 is the usual cause)."""
    p = tmp_path / "t.mtx"
    p.write_text(f"%%MatrixMarket matrix coordinate real general\n3 3 1\n{entry}\n")
    with pytest.raises(ConfigError) as e:
        from_file(p)
    msg = str(e.value)
    assert e.value.field == "traffic.path" and str(p) in msg
    assert f"Line 3: {what} index out of bounds" in msg and "count from 1 to 3" in msg, msg


def test_mtx_symmetric_duplicates_and_diagonal_match_scipy(tmp_path):
    """Already right (kept as a check): a symmetric file sends each off-diagonal entry both ways and a diagonal
    entry once, and a repeated entry sends both amounts, as scipy.io.mmread's matrix sums them."""
    import scipy.io

    p = tmp_path / "s.mtx"
    p.write_text("%%MatrixMarket matrix coordinate real symmetric\n3 3 4\n2 1 5\n3 3 7\n3 1 2\n2 1 5\n")
    t = from_file(p)
    M = np.zeros((3, 3))
    np.add.at(M, (t.src, t.dst), t.nbytes)
    np.testing.assert_array_equal(M, scipy.io.mmread(p).toarray())


def _trace(path, times_us):
    """An OTF2 trace of 4 ranks (times in microseconds): rank 0 sends 1000 B to rank 1 at each time."""
    otf2 = pytest.importorskip("otf2")
    from otf2.enums import GroupType, Paradigm

    with otf2.writer.open(str(path), timer_resolution=10 ** 6) as trace:
        d = trace.definitions
        node = d.system_tree_node("machine")
        locs = [d.location(f"rank {r}", group=d.location_group(f"MPI Rank {r}", system_tree_parent=node))
                for r in range(4)]
        d.group("world locations", group_type=GroupType.COMM_LOCATIONS, paradigm=Paradigm.MPI, members=locs)
        world = d.comm("MPI_COMM_WORLD", group=d.group("world", group_type=GroupType.COMM_GROUP,
                                                       paradigm=Paradigm.MPI, members=list(range(4))))
        writers = [trace.event_writer_from_location(loc) for loc in locs]
        for t in times_us:
            writers[0].mpi_send(t, 1, world, 0, 1000)
    return path


def test_trace_window_too_short_to_number_is_refused(tmp_path):
    """traffic.window=1e-300 numbered the windows past int64 (a NumPy 'invalid value encountered in cast'
    warning): the sends of different windows merged into one phase 'window-9223372036854775808'. Refused now,
    naming the shortest window the trace allows; a short window that can be numbered still splits them."""
    from evaluator.traffic import from_trace

    path = _trace(tmp_path / "t", [1, 2])
    with pytest.raises(ConfigError) as e:
        from_trace(path, mode="phased", phase_rule="window", window=1e-300)
    assert e.value.field == "traffic.window" and "at least 1.11e-22 s" in str(e.value), str(e.value)
    assert from_trace(path, mode="phased", phase_rule="window", window=1e-15).phase_names == \
        ("window0", "window1000000000")


def test_trace_bytes_scale_overflow_names_the_key(tmp_path):
    """A bytes_scale that makes a byte count inf was refused as 'traffic.nbytes = inf', naming neither the key
    nor the trace."""
    from evaluator.traffic import from_trace

    path = _trace(tmp_path / "t", [1])
    with pytest.raises(ConfigError) as e:
        from_trace(path, bytes_scale=1e308)
    assert e.value.field == "traffic.bytes_scale" and "largest is 1000 B" in str(e.value), str(e.value)
    assert from_trace(path, bytes_scale=2.0).nbytes.tolist() == [2000.0]


def test_from_flows_reads_float32_ids_near_the_top_of_float32():
    """The Python API's from_flows compared float32 task ids with the task count in float32, where 2**24 + 1
    rounds to 2**24: id 2**24 of 2**24 + 1 tasks was refused as out of range ("task ids in [0, 16777216]")."""
    from evaluator.traffic import from_flows

    ids = np.array([2**24, 0], np.float32)
    t = from_flows(2**24 + 1, ids, ids[::-1].copy(), 1e6)
    assert t.src.tolist() == [2**24, 0] and t.dst.tolist() == [0, 2**24] and t.src.dtype == np.int64
    with pytest.raises(ConfigError, match=r"traffic.src\[0\].*task ids in \[0, 16777215\]"):
        from_flows(2**24, ids, ids[::-1].copy(), 1e6)


def test_npz_array_nothing_reads_is_refused_with_the_name_it_may_be(tmp_path):
    """A misspelt 'shape' (``shap=[8, 8]``) was ignored: the task count came from the largest id (2, not 8) without
    a word. Arrays nothing reads are refused, naming them and the nearest key; scipy.sparse.save_npz's own
    'format' and '_is_array' stay accepted."""
    import scipy.sparse

    f = tmp_path / "typo.npz"
    np.savez(f, row=[0, 1], col=[1, 0], data=[5.0, 5.0], shap=[8, 8])
    with pytest.raises(ConfigError, match=r"it also holds \['shap'\], which nothing reads.*Did you mean 'shape'\?"):
        from_file(str(f))
    g = tmp_path / "dense.npz"
    np.savez(g, matrix=np.ones((2, 2)), note=[1])
    with pytest.raises(ConfigError, match=r"\['note'\], which nothing reads"):
        from_file(str(g))
    s = tmp_path / "scipy.npz"
    scipy.sparse.save_npz(s, scipy.sparse.coo_array(np.array([[0.0, 3.0], [4.0, 0.0]])))
    t = from_file(str(s))
    assert t.n_tasks == 2 and sorted(zip(t.src.tolist(), t.dst.tolist(), t.nbytes.tolist())) == [(0, 1, 3.0),
                                                                                             (1, 0, 4.0)]


def test_a_traffics_flows_cannot_be_changed_behind_its_checks():
    """A Traffic's arrays are checked when it is made (finite bytes >= 0, ids in range); they were writable, so
    ``t.nbytes[0] = nan`` afterwards gave ``completion_time = nan`` with no error. They are now read-only views;
    the arrays the caller passed stay the caller's (still writable)."""
    from evaluator import evaluate, placement, topology
    from evaluator.traffic import Traffic, from_flows

    t = from_flows(4, [0, 1], [1, 2], [8.0, 16.0])
    for field, bad in (("nbytes", np.nan), ("src", 7), ("dst", -1)):
        with pytest.raises(ValueError, match="read-only"):
            getattr(t, field)[0] = bad
    own = np.array([5.0, 6.0])
    u = Traffic(4, np.array([0, 1]), np.array([2, 3]), own)
    assert own.flags.writeable and not u.nbytes.flags.writeable
    topo = topology.torus((4,))
    ds = evaluate(topo, t, placement.linear(topo, 4), "dor")
    # one hop each on a 4-ring: the busiest router link carries 16 B (the node links as much, at the same speed)
    assert float(ds["completion_time"]) == pytest.approx(16.0 / float(topo.capacity[0]), rel=1e-12)
