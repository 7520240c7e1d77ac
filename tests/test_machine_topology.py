"""Catalogue machines as topologies: own-torus partitions and embedded sub-prisms."""

import numpy as np
import pytest

import evaluator as ev
from evaluator import ConfigError
from evaluator import placement as P
from evaluator import traffic as T
from evaluator.topology import machine_topology
from tests.helpers import TOL

try:
    from tests.reference import reference_link_loads
except ImportError:  # pragma: no cover
    from reference import reference_link_loads


def test_bgq_partition_is_its_own_torus():
    topo = machine_topology("JUQUEEN", [2, 1, 1, 1])
    assert topo.dims == (8, 4, 4, 4, 2) and all(topo.wrap)
    assert set(topo.capacity[: topo.n_router_links]) == {2.0e9}
    whole = machine_topology("juqueen-48", None)
    assert whole.dims == (16, 12, 8, 8, 2)


def test_embedded_subprism_routes_over_the_host():
    host = machine_topology("BlueWaters", [3, 2, 3], mode="embedded", layout="ideal")  # no service nodes
    assert host.dims == (24, 24, 24) and host.nodes_per_router == 2
    pl = P.subprism(host, [3, 2, 3], offset=[22, 5, 0])
    assert pl.n_tasks == 36
    tr = T.all_to_all(36, 1e6)
    ds = ev.evaluate(host, tr, pl, ev.dor())
    flows = list(zip(tr.src.tolist(), tr.dst.tolist(), tr.nbytes.tolist()))
    ref = reference_link_loads(host, flows, pl.task_node, {"kind": "dor", "order": "as_given", "tie": "split"})
    np.testing.assert_allclose(ds.link_load.values, ref, rtol=TOL["rel"], atol=TOL["bytes_loose"])
    # the prism wraps around the host's X edge (22, 23, 0): routes use the host's wrap links
    used = ds.link_load.values[: host.n_router_links] > 0
    xs = host.router_coords[host.link_src[: host.n_router_links][used], 0]
    assert {22, 23, 0} <= set(xs.tolist())


def test_own_partition_differs_from_embedded():
    own = machine_topology("BlueWaters", [4, 4, 4], mode="own")
    emb = machine_topology("BlueWaters", [4, 4, 4], mode="embedded", layout="ideal")
    tr = T.all_to_all(128, 1.0)
    def network_time(topo, pl):
        ds = ev.evaluate(topo, tr, pl, ev.dor())
        n = topo.n_router_links
        return float((ds.link_load.values[:n] / topo.capacity[:n]).max())

    # a partition with its own wrap links has more bisection than a sub-prism of a larger host
    assert network_time(own, P.linear(own, 128)) < network_time(emb, P.subprism(emb, [4, 4, 4]))


def test_machine_topology_errors():
    with pytest.raises(ConfigError, match="known machines"):
        machine_topology("NoSuchMachine")
    with pytest.raises(ConfigError, match="topology.partition"):
        machine_topology("Mira", [5, 1, 1, 1])
    with pytest.raises(ConfigError, match="topology.mode"):
        machine_topology("Mira", None, mode="sideways")


def test_pairing_time_matches_bisection_closed_form(capsys):
    """Furthest-node pairs: half the nodes push their bytes across the bisection in each direction,
    so the link-level time must equal (N/2 x bytes) / (bisection links x link bandwidth); the
    bisection itself is checked against exhaustive search in test_partitions.py. With ``progress`` a bar counts
    the sizes on stderr (every size of Blue Waters ran over 10 minutes without a word)."""
    from evaluator.partitions import confirm_machine

    res = confirm_machine("JUQUEEN", sizes=[2048, 3072], progress=True)
    err = capsys.readouterr().err  # not a terminal: a log's lines, the first and the last count
    assert "\r" not in err and err.startswith("pairing on JUQUEEN:   0%") and "| 2/2 [" in err.splitlines()[-1], err
    from evaluator.machines import load_machine
    from evaluator.partitions.geometry import feasible_sizes

    assert len(feasible_sizes(load_machine("BlueWaters").torus("sizes"))) == 1130   # the README's count
    assert [r.nodes for r in res] == [2048, 3072]
    for r in res:
        for geo, t in ((r.a, r.time_a), (r.b, r.time_b)):
            expect = (geo.nodes / 2 * 2.0e9) / (geo.bisection.links * 2.0e9)
            assert t == pytest.approx(expect, rel=TOL["rel"]), geo.label
        assert r.time_ratio == pytest.approx(r.bisection_ratio, rel=TOL["rel"])


def test_pairing_ctrl_c_keeps_the_sizes_finished(tmp_path, capsys, monkeypatch):
    """A Ctrl-C during ``partitions --pairing`` (1,130 sizes on Blue Waters: minutes) printed and wrote nothing;
    now the sizes finished are printed and written (the dataset's ``interrupted`` says how far it got), and the
    command still stops as interrupted (130)."""
    import xarray as xr

    from evaluator import cli
    from evaluator.partitions import pairing

    real, calls = pairing.analyse_size, []

    def stop_at_the_fourth(m, n):
        calls.append(n)
        if len(calls) == 4:
            raise KeyboardInterrupt
        return real(m, n)

    monkeypatch.setattr(pairing, "analyse_size", stop_at_the_fourth)
    rc = cli.main(["partitions", "BlueWaters", "--pairing", "--size", "4", "6", "8", "10", "12",
                   "--out", str(tmp_path)])
    out, err = capsys.readouterr()
    assert rc == 130
    assert "interrupted after 3 of 5 sizes" in err and "evaluator partitions: interrupted" in err
    rows = [line.split()[0] for line in out.splitlines() if line.strip() and line.split()[0].isdigit()]
    assert rows == ["4", "6", "8"]
    ds = xr.load_dataset(next((tmp_path / "bluewaters_pairing").glob("*.nc")))
    assert ds.nodes.values.tolist() == [4, 6, 8] and ds.attrs["interrupted"] == "interrupted after 3 of 5 sizes"
    complete = pairing.confirm_machine("BlueWaters", [4, 6, 8])
    np.testing.assert_array_equal(ds.time_a.values, [r.time_a for r in complete])
