"""Machines as a registered family: the ``topology`` member (any topology kind in one YAML file), refusals by
the tools that need torus geometry, typed schemas with errors naming the file, field, value and what is
allowed, and the allocation policies' parameter schemas.

References: hop counts by NetworkX BFS against the torus closed form; the Dragonfly's link counts and group
graph from its definition (a-1 local and h global ports per router, one global link per pair of groups).
"""

import ast
import dataclasses
import itertools
from pathlib import Path

import networkx as nx
import numpy as np
import pytest

import evaluator as ev
from evaluator import cli, config
from evaluator import machines as M
from evaluator import partitions as P
from evaluator import tiles as TL
from evaluator._registry import from_mapping
from evaluator.errors import ConfigError, ConfigTypeError, MachineError
from evaluator.policies import KINDS as POLICIES
from evaluator.policies import Grap, JobRequest, build_policy, policy_config
from evaluator.topology import machine_topology
from evaluator.topology._machine import MachineTopologyConfig

RING = """# a 4x6 torus with one open dimension, as one machine file
name: Ring
kind: topology
description: "test machine: a 4x6 torus, Y open"
topology:
  kind: torus
  dims: [4, 6]
  wrap: [true, false]
  link_bandwidth: 2.0e9
  nodes_per_router: 2
"""

FLY = """name: SmallFly
kind: topology
topology: {kind: dragonfly, p: 2, a: 4, h: 2, bandwidth_l: 5.0e9}
"""


@pytest.fixture
def machine_dir(tmp_path, monkeypatch):
    """A user machine directory holding Ring and SmallFly, on EVALUATOR_MACHINE_PATH."""
    (tmp_path / "ring.yaml").write_text(RING)
    (tmp_path / "smallfly.yaml").write_text(FLY)
    monkeypatch.setenv(M.MACHINE_PATH_ENV, str(tmp_path))
    return tmp_path


def router_graph(topo) -> nx.MultiDiGraph:
    g = nx.MultiDiGraph()
    g.add_nodes_from(range(topo.n_routers))
    g.add_edges_from((int(s), int(d)) for s, d, _ in topo.router_edges())
    return g


# ----------------------------------------------------------------------------------
# the topology member
# ----------------------------------------------------------------------------------


def test_registry_lists_three_kinds_each_a_typed_schema():
    assert list(M.KINDS) == ["bgq", "torus", "topology"]
    for name, kind in M.KINDS.items():
        assert dataclasses.is_dataclass(kind.schema)
        assert [f.default for f in dataclasses.fields(kind.schema) if f.name == "kind"] == [name]
    assert M.torus_kinds() == ["bgq", "torus"]


def test_torus_block_builds_through_the_topology_registry(machine_dir):
    m = M.load_machine("ring")
    assert m.kind == "topology" and m.source.endswith("ring.yaml") and m.description.startswith("test machine")
    assert "Ring" in M.list_machines()
    topo = machine_topology("Ring")
    assert topo.n_routers == 24 and topo.n_nodes == 48 and topo.name.startswith("Ring ")
    # directed router links: X wraps (4 x 6 routers x 2 directions), Y is a line of 6 (4 x 5 x 2)
    assert topo.n_router_links == 48 + 40
    assert set(topo.capacity[: topo.n_router_links].tolist()) == {2.0e9}
    # hop counts by BFS against the torus closed form (X ring of 4, Y line of 6)
    dist = dict(nx.all_pairs_shortest_path_length(router_graph(topo)))
    for r, s in itertools.product(range(24), repeat=2):
        (x1, y1), (x2, y2) = divmod(r, 6), divmod(s, 6)
        dx = abs(x1 - x2)
        assert dist[r][s] == min(dx, 4 - dx) + abs(y1 - y2), (r, s)
    # the same through a composed eval config (the machine topology kind of the config group)
    cfg = MachineTopologyConfig(name="ring", partition=None)
    built = config.build_topology(cfg)
    assert np.array_equal(built.link_src, topo.link_src) and np.array_equal(built.link_dst, topo.link_dst)


def test_dragonfly_block(machine_dir):
    topo = machine_topology("smallfly")
    p, a, h = 2, 4, 2
    g = a * h + 1
    assert topo.n_routers == g * a and topo.n_nodes == g * a * p
    edges = topo.router_edges()
    group = lambda r: r // a  # noqa: E731 - Dragonfly router id is group * a + index (DESIGN.md)
    local = [(s, d) for s, d, _ in edges if group(s) == group(d)]
    glob = [(s, d) for s, d, _ in edges if group(s) != group(d)]
    assert len(local) == g * a * (a - 1) and len(glob) == g * a * h
    # one global link (each direction) between every pair of groups
    pairs = sorted((group(s), group(d)) for s, d in glob)
    assert pairs == sorted((i, j) for i in range(g) for j in range(g) if i != j)
    local_ids = [i for s, d, i in edges if group(s) == group(d)]
    assert set(topo.capacity[local_ids].tolist()) == {5.0e9}


def test_topology_machine_is_refused_by_torus_tools(machine_dir, capsys, tmp_path):
    m = M.load_machine("SmallFly")
    with pytest.raises(MachineError) as e:
        m.torus("tiles")
    msg = str(e.value)
    assert "SmallFly" in msg and "smallfly.yaml" in msg and "bgq | torus" in msg and "'topology'" in msg
    with pytest.raises(ConfigError) as e:
        TL.advise(TL.TileRequest((8, 8, 8), 8, 1, "SmallFly"))
    assert e.value.field == "--machine" and "SmallFly" in str(e.value) and "bgq | torus" in str(e.value)
    for call in (lambda: P.analyse_machine("SmallFly"), lambda: P.partition_geometries("SmallFly", 8),
                 lambda: P.slab_bisections("SmallFly"), lambda: M.check_partition("SmallFly", [1, 1])):
        with pytest.raises(MachineError, match=r"SmallFly.*bgq \| torus"):
            call()
    assert cli.main(["partitions", "SmallFly", "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "SmallFly" in err and "bgq | torus" in err
    with pytest.raises(ConfigError) as e:
        machine_topology("SmallFly", [1, 1])
    assert e.value.field == "topology.partition" and "null (the whole machine)" in str(e.value)


def test_slab_analysis_names_the_kinds_it_accepts():
    with pytest.raises(ConfigError) as e:
        P.slab_bisections("Mira")
    assert "kind = 'bgq'" in str(e.value) and "(kind: torus)" in str(e.value)


@pytest.mark.parametrize("block,needles", [
    ("{kind: torus, dims: [4, 4], link_bandwith: 1.0e9}", ["topology.link_bandwith", "Did you mean 'link_bandwidth'?"]),
    ("{kind: torus, dims: four}", ["topology.dims = 'four'", "a list"]),
    ("{kind: dragonfy, p: 2}", ["topology.kind = 'dragonfy'", "Did you mean 'dragonfly'?"]),
    ("{kind: machine, name: Bad}", ["topology.kind = 'machine'", "not another machine"]),
    ("{kind: torus, dims: [4, 0]}", ["topology.dims[1] = 0", "an integer >= 1"]),
])
def test_bad_topology_block_names_machine_file_and_field(tmp_path, monkeypatch, block, needles):
    (tmp_path / "bad.yaml").write_text(f"name: Bad\nkind: topology\ntopology: {block}\n")
    monkeypatch.setenv(M.MACHINE_PATH_ENV, str(tmp_path))
    with pytest.raises(MachineError) as e:
        machine_topology("Bad")
    msg = str(e.value)
    assert "machine 'Bad'" in msg and "bad.yaml" in msg and all(n in msg for n in needles), msg


@pytest.mark.parametrize("text,needles", [
    ("name: X\nkind: topology\ntopology: {p: 2}\n", ["topology.kind = None", "conf/topology"]),
    ("name: X\nkind: topology\ntopology: [1, 2]\n", ["topology = [1, 2]", "a topology config"]),
    ("name: X\nkind: topology\n", ["required key 'topology' is missing"]),
    ("name: X\nkind: topology\ntopology: {kind: torus}\ndims: [4, 4]\n",
     ["dims = [4, 4]", "null for kind 'topology'", "machine kind torus"]),
    ("name: X\nkind: torus\ndims: [4, 4]\nlink_bandwidth: 1.0\nnodes_per_router: '2'\n",
     ["nodes_per_router = '2'", "an integer"]),
    ("name: X\nkind: torus\ndims: [4, 4]\nlink_bandwidth: fast\n", ["link_bandwidth = 'fast'", "> 0"]),
    ("name: X\nkind: torus\ndims: [4, 4]\nlink_bandwidth: 1.0\nrouting_order: xyz\n",
     ["routing_order = 'xyz'", "as_given | longest_first"]),
    ("name: X\nkind: bgq\nmidplanes: [1, 1, 1, 1]\nlink_bandwidth: [1.0, 2.0]\n",
     ["link_bandwidth = [1.0, 2.0]", "one number for kind 'bgq'"]),
    ("name: X\nkind: torus\ndims: [4, 4]\nlink_bandwidth: 1.0\nfeatures: [{name: a, offset: [0, 0], shape: [5, 1]}]\n",
     ["features[0].shape = [5, 1]", "within the machine"]),
    ("name: X\nkind: torus\ndims: [4, 4]\nlink_bandwidth: 1.0\nnode_classes: [{name: A, offset: [0, 0], "
     "shape: [1, 1], colour: red}]\n", ["node_classes[0].colour", "'name', 'offset', 'shape', 'service_fraction'"]),
])
def test_machine_schema_errors_name_file_field_value_allowed(tmp_path, text, needles):
    p = tmp_path / "x.yaml"
    p.write_text(text)
    with pytest.raises(MachineError) as e:
        M.load_machine(p)
    msg = str(e.value)
    assert "machine 'X'" in msg and "x.yaml" in msg and all(n in msg for n in needles), msg


def test_null_keys_of_another_kind_still_load(tmp_path):
    """Files written for the flat catalogue list every key, null where unused: they load as before."""
    p = tmp_path / "flat.yaml"
    p.write_text("name: Flat\nkind: bgq\nmidplanes: [2, 1, 1, 1]\nlink_bandwidth: 2e9\ndims: null\nwrap: null\n"
                 "slabs: null\nnode_classes: null\ntopology: null\n")
    m = M.load_machine(p)
    assert m.n_nodes == 1024 and m.link_bandwidth == (2.0e9,) * 5


def test_no_machine_kind_branches_outside_the_machines_package():
    """Consumers ask the machine (methods, capabilities); none compares a machine's kind with a member name."""
    root = Path(ev.__file__).parent
    members = set(M.KINDS)
    bad = []
    for path in [root / "cli" / "partitions.py", root / "tiles.py", root / "topology" / "_machine.py",
                 *sorted((root / "partitions").glob("*.py"))]:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Compare):
                names = [n for n in [node.left, *node.comparators]
                         if getattr(n, "attr", getattr(n, "id", "")) == "kind"]
                consts = {c.value for c in ast.walk(node) if isinstance(c, ast.Constant)}
                if names and consts & members:
                    bad.append(f"{path.name}:{node.lineno}")
    assert not bad, bad


# ----------------------------------------------------------------------------------
# the schema check every family shares
# ----------------------------------------------------------------------------------


@dataclasses.dataclass
class _Inner:
    name: str
    size: list[int]


@dataclasses.dataclass
class _Schema:
    n: int
    rate: float = 1.0
    tag: str | None = None
    items: list[_Inner] | None = None


def test_from_mapping_checks_keys_types_and_nested_fields():
    s = from_mapping(_Schema, {"n": 3, "rate": "2e9", "tag": None, "items": [{"name": "a", "size": [1, 2]}]}, "x")
    assert s == _Schema(3, 2.0e9, None, [_Inner("a", [1, 2])])
    assert from_mapping(_Schema, {"n": 1, "rate": None}).rate == 1.0  # null: the default
    with pytest.raises(ConfigError, match=r"x.nn = 3 .*Did you mean 'n'\?"):
        from_mapping(_Schema, {"nn": 3}, "x")
    with pytest.raises(ConfigError, match=r"x.n = None .*a required key"):
        from_mapping(_Schema, {}, "x")
    with pytest.raises(ConfigTypeError, match=r"x.n = 2.5 .*an integer"):
        from_mapping(_Schema, {"n": 2.5}, "x")
    with pytest.raises(ConfigTypeError, match=r"x.items\[0\].size\[1\] = 'b'"):
        from_mapping(_Schema, {"n": 1, "items": [{"name": "a", "size": [1, "b"]}]}, "x")


# ----------------------------------------------------------------------------------
# policies: a schema per member
# ----------------------------------------------------------------------------------


def test_every_policy_has_a_schema_of_its_own_parameters():
    assert list(POLICIES) == ["grap", "slurm_round_robin", "contiguous", "random"]
    for name, kind in POLICIES.items():
        assert dataclasses.is_dataclass(kind.schema), name
    assert policy_config("grap", ports_per_group=3).ports_per_group == 3
    assert policy_config("grap").ports_per_group == 1
    with pytest.raises(ConfigTypeError, match=r"policy.ports_per_group = '3' .*an integer"):
        build_policy("grap", 4, 8, ports_per_group="3")
    with pytest.raises(ConfigError, match=r"policy.ports = 2 .*no parameters"):
        build_policy("contiguous", 4, 8, ports=2)


def test_built_policy_behaves_as_the_class_built_directly():
    """The registry builds the same policy as the constructor: same allocations on the same request stream."""
    rng = np.random.default_rng(0)
    a, b = build_policy("grap", 4, 8, seed=1, ports_per_group=2), Grap(4, 8, 1, ports_per_group=2)
    assert b.ports_per_group == a.ports_per_group == 2
    live = []
    for jid in range(60):
        if live and rng.random() < 0.4:
            x, y = live.pop(int(rng.integers(len(live))))
            a.release(x), b.release(y)
            continue
        job = JobRequest(jid, int(rng.integers(1, 20)), "minimal_balance")
        x, y = a.allocate(job), b.allocate(job)
        assert (x is None) == (y is None)
        if x is not None:
            assert np.array_equal(x.nodes, y.nodes) and x.groups == y.groups and x.large == y.large
            live.append((x, y))
