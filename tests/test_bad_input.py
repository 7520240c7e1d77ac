"""Bad input gets one clear error that names the field, the value and what is allowed."""

import numpy as np
import pytest

import evaluator as ev
from evaluator import ConfigError
from evaluator import placement as P
from evaluator import traffic as T


def check(exc, field, value_text):
    msg = str(exc.value)
    assert field in msg and value_text in msg and "allowed" in msg, msg


def test_negative_size():
    with pytest.raises(ConfigError) as e:
        ev.torus([4, -2, 4])
    check(e, "topology.dims[1]", "-2")
    with pytest.raises(ConfigError) as e:
        ev.bgq_partition([1, 0, 1, 1])
    check(e, "topology.midplanes[1]", "0")


def test_too_many_groups():
    with pytest.raises(ConfigError) as e:
        ev.dragonfly(4, 8, 4, g=34)
    check(e, "topology.g", "34")
    assert "33" in str(e.value)


def test_beta_must_divide_alpha():
    with pytest.raises(ConfigError) as e:
        T.stencil((512, 512, 500), (8, 8, 3))
    check(e, "traffic.beta[2]", "3")


def test_gamma_must_divide_beta_and_fit():
    df = ev.dragonfly(4, 8, 4)
    with pytest.raises(ConfigError) as e:
        P.dragonfly_cartesian(df, (8, 8, 4), (3, 4, 2))
    check(e, "placement.gamma[0]", "3")
    with pytest.raises(ConfigError) as e:
        P.dragonfly_cartesian(df, (8, 8, 4), (8, 8, 1))
    check(e, "placement.gamma", "[8, 8, 1]")
    assert "32" in str(e.value)
    with pytest.raises(ConfigError) as e:  # needs 64 groups > 33
        P.dragonfly_cartesian(df, (8, 8, 4), (2, 2, 1))
    check(e, "placement.gamma", "[2, 2, 1]")


def test_more_tasks_than_nodes():
    topo = ev.torus([2, 2])
    with pytest.raises(ConfigError) as e:
        P.linear(topo, 5)
    check(e, "placement.n_tasks", "5")
    with pytest.raises(ConfigError) as e:
        P.fully_random(topo, 9, tasks_per_node=2)
    check(e, "placement.n_tasks", "9")


def test_traffic_file_shape_mismatch(tmp_path):
    f = tmp_path / "m.npz"
    np.savez(f, matrix=np.ones((3, 4)))
    with pytest.raises(ConfigError) as e:
        T.from_file(f)
    check(e, "traffic.path", "m.npz")
    g = tmp_path / "ok.npz"
    np.savez(g, matrix=np.ones((4, 4)))
    with pytest.raises(ConfigError) as e:
        T.from_file(g, n_tasks=8)
    check(e, "traffic.n_tasks", "8")
    c = tmp_path / "t.csv"
    c.write_text("0,1\n1,2\n")
    with pytest.raises(ConfigError) as e:
        T.from_file(c)
    check(e, "traffic.path", "t.csv")


def test_nan_or_negative_bytes(tmp_path):
    with pytest.raises(ConfigError) as e:
        T.from_flows(4, [0, 1], [1, 2], [1.0, float("nan")])
    check(e, "traffic.bytes", "nan")
    with pytest.raises(ConfigError) as e:
        T.from_flows(4, [0, 1], [1, 2], [1.0, -5.0])
    check(e, "traffic.bytes", "-5.0")
    c = tmp_path / "neg.csv"
    c.write_text("src,dst,bytes\n0,1,10\n1,0,-1\n")
    with pytest.raises(ConfigError) as e:
        T.from_file(c)
    check(e, "traffic.bytes", "-1.0")


def test_task_count_mismatch_and_wrong_routing():
    topo = ev.torus([4, 4])
    with pytest.raises(ConfigError) as e:
        ev.evaluate(topo, T.all_to_all(8), P.linear(topo, 16), ev.dor())
    check(e, "placement.n_tasks", "16")
    with pytest.raises(ConfigError) as e:
        ev.evaluate(topo, T.all_to_all(16), P.linear(topo, 16), ev.valiant())
    check(e, "routing.kind", "valiant")
    with pytest.raises(ConfigError) as e:
        ev.dragonfly(2, 2, 1, arrangement="spiral")
    check(e, "topology.arrangement", "spiral")
    with pytest.raises(ConfigError) as e:
        ev.dor(tie="negative")
    check(e, "routing.tie", "negative")
