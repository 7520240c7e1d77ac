"""A placement for another family of network is refused first, with the kinds that serve the network.

Before, ``placement=alps`` on a fat tree named the value ``'alps order'`` (not what the user wrote), and
``torus_block`` or ``subprism`` there asked for a task grid first; fixing that only led to the next refusal.
Each kind now declares the networks it serves (:class:`evaluator.placement.base.Needs`), and a config's
placement is checked against it before any of its own fields.
"""

from __future__ import annotations

import numpy as np
import pytest

from evaluator import cli, placement as P, topology as T
from evaluator.errors import ConfigError
from evaluator.machines import machine_from_dict
from evaluator.placement.base import PlacementContext
from evaluator.topology import machine_topology


def _machine(**kw):
    d = dict(name="Tiny", kind="torus", dims=[4, 4, 4], link_bandwidth=[2.0, 1.0, 2.0], nodes_per_router=2,
             injection_bandwidth=4.0, routing_order="as_given")
    d.update(kw)
    return machine_topology(machine_from_dict(d))


NETWORKS = {
    "torus 4x4x4": lambda: T.torus((4, 4, 4)),
    "torus 4x4": lambda: T.torus((4, 4)),
    "bgq midplane": lambda: T.bgq_partition((1, 1, 1, 1)),
    "gemini 4x4x4": lambda: T.gemini((4, 4, 4)),
    "dragonfly": lambda: T.dragonfly(2, 4, 2),
    "rdn": lambda: T.rdn(p=1, a=4, h=2, g=6),
    "fat tree": lambda: T.fat_tree(k=4, levels=3),
    "machine": lambda: _machine(),
    "machine with features": lambda: _machine(features=[{"name": "a", "offset": [0, 0, 0], "shape": [2, 2, 2]}]),
}

EXPECTED = {  # the kinds that serve each network, written out (not read from the kinds' declarations)
    "torus 4x4x4": {"linear", "random", "block", "torus_block", "subprism", "alps", "fragmented", "topaware"},
    "torus 4x4": {"linear", "random", "block", "torus_block", "subprism"},
    "bgq midplane": {"linear", "random", "block", "torus_block", "subprism"},
    "gemini 4x4x4": {"linear", "random", "block", "torus_block", "subprism", "alps", "fragmented", "topaware"},
    "dragonfly": {"linear", "random", "block", "dragonfly_cartesian", "dragonfly_random"},
    "rdn": {"linear", "random", "block"},
    "fat tree": {"linear", "random", "block"},
    "machine": {"linear", "random", "block", "torus_block", "subprism", "alps", "fragmented", "topaware"},
    "machine with features": {"linear", "random", "block", "torus_block", "subprism", "alps", "fragmented",
                              "topaware", "features"},
}


class _Stencil:
    """A traffic config with a task grid, for the placements that read one."""

    kind = "stencil"
    beta = [2, 2, 2]


@pytest.mark.parametrize("net", list(NETWORKS))
def test_the_kinds_that_serve_each_network(net):
    topo = NETWORKS[net]()
    assert set(P.placements_for(topo)) == EXPECTED[net]


@pytest.mark.parametrize("net", list(NETWORKS))
def test_a_kind_that_does_not_serve_is_refused_by_its_own_builder_too(net):
    """The declaration agrees with each member's own check: a kind that does not serve the network fails on
    ``placement.kind`` when built directly (no registry check in between), one that serves it does not."""
    topo = NETWORKS[net]()
    for name, kind in P.KINDS.items():
        cfg = kind.schema()
        for key, value in (("n_tasks", 8), ("task_grid", [2, 2, 2]), ("grid", [2, 2, 2]), ("gamma", [1, 2, 2]),
                           ("tasks_per_group", 4)):
            if hasattr(cfg, key) and getattr(cfg, key) is None:
                setattr(cfg, key, value)
        ctx = PlacementContext(topo, 8, _Stencil(), None)
        try:
            kind.build(cfg, ctx)
            field = None
        except ConfigError as exc:
            field = exc.field
        if kind.serves(topo):
            assert field != "placement.kind", (net, name)
        else:
            assert field == "placement.kind", (net, name, field)


@pytest.mark.parametrize("argv,kind,allowed", [
    (["topology=fat_tree", "topology.k=4", "topology.levels=3", "routing=dmodk", "placement=alps"], "alps",
     "one of ['linear', 'random', 'block'] on a fat_tree. 'alps' needs a 3-D torus"),
    (["topology=fat_tree", "topology.k=4", "topology.levels=3", "routing=dmodk", "placement=torus_block"],
     "torus_block", "one of ['linear', 'random', 'block'] on a fat_tree. 'torus_block' needs a torus"),
    (["topology=torus", "routing=dor", "placement=dragonfly_random"], "dragonfly_random",
     "'dragonfly_random' needs a Dragonfly"),
    (["placement=fragmented"], "fragmented", "on a dragonfly. 'fragmented' needs a 3-D torus"),
])
def test_the_cli_names_the_kind_given_and_the_kinds_allowed(argv, kind, allowed, capsys):
    rc = cli.main(["eval", *argv, "save=false"])
    err = capsys.readouterr().err
    assert rc == 2, err
    assert err.count("\n") == 1 and f"placement.kind = '{kind}' is invalid: allowed is " in err, err
    assert allowed in err, err


def test_a_job_of_several_names_its_own_placement(capsys):
    rc = cli.main(["eval", "jobs=[{name: a}, {name: b, placement: {kind: alps}}]", "save=false"])
    err = capsys.readouterr().err
    assert rc == 2 and "jobs[1].placement.kind = 'alps' is invalid" in err, err
    assert "on a dragonfly. 'alps' needs a 3-D torus" in err, err


def test_the_library_functions_name_their_own_kind():
    ft = T.fat_tree(k=4, levels=3)
    for fn, name in ((P.alps, "alps"), (P.fragmented, "fragmented"), (P.topaware, "topaware")):
        with pytest.raises(ConfigError) as exc:
            fn(ft, [2, 2, 2], 1) if fn is P.topaware else fn(ft, 8)
        assert exc.value.field == "placement.kind" and exc.value.value == name, str(exc.value)
    with pytest.raises(ConfigError) as exc:
        P.free_after_history(ft, 0.5)
    assert exc.value.value == "fragmented"
    assert np.array_equal(P.linear(ft, 8).task_node, np.arange(8))
