"""The package's architecture, checked: registries, per-kind schemas, and the import graph.

* every registered kind of every family has a schema (a dataclass whose
  ``kind`` is its name), a builder, is an option of its config group (a YAML
  file in ``conf/<family>/`` or, without one, its schema's defaults) that
  composes to that schema, and builds into a working design point;
* a key that belongs to another kind fails at composition with one line that
  names it (and the kinds that have it);
* the import graph of ``evaluator`` (every ``import`` statement, module level
  or not, read with :mod:`ast`) has no cycle and no upward import between
  layers; only the config layer touches Hydra/OmegaConf.
"""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

import evaluator as ev
from evaluator import cli, config
from evaluator.errors import ConfigCompositionError
from evaluator.io import conf_dir
from tests.helpers import composed_option

PKG = Path(ev.__file__).resolve().parent

# ----------------------------------------------------------------------------------
# registries
# ----------------------------------------------------------------------------------

KINDS = [(family, name) for family, reg in config.FAMILIES.items() for name in reg]

# Overrides that make a kind buildable next to the others (small networks, a matching routing/placement).
BUILD_CONTEXT = {
    ("topology", "torus"): ["topology.dims=[4,4,2]", "routing=dor", "traffic=all_to_all", "placement=linear"],
    ("topology", "bgq"): ["routing=dor_bgq", "traffic=all_to_all", "placement=linear"],
    ("topology", "gemini"): ["topology.dims=[4,2,4]", "routing=dor", "traffic=all_to_all", "placement=linear"],
    ("topology", "dragonfly"): ["topology.p=2", "topology.a=4", "topology.h=2", "traffic=all_to_all",
                                "placement=linear"],
    ("topology", "machine"): ["topology.name=Mira", "topology.partition=[1,1,1,1]", "routing=dor_bgq",
                              "traffic=all_to_all", "placement=linear"],
    ("routing", "dor"): ["topology=torus", "topology.dims=[4,4,2]", "traffic=all_to_all", "placement=linear"],
    ("routing", "minimal"): ["topology.p=2", "topology.a=4", "topology.h=2", "traffic=all_to_all",
                             "placement=linear"],
    ("routing", "valiant"): ["topology.p=2", "topology.a=4", "topology.h=2", "traffic=all_to_all",
                             "placement=linear"],
    ("topology", "rdn"): ["routing=tago", "traffic=all_to_all", "placement=linear"],
    ("routing", "tago"): ["topology=rdn", "traffic=all_to_all", "placement=linear"],
    ("routing", "valiant_router"): ["topology.p=2", "topology.a=4", "topology.h=2", "traffic=all_to_all",
                                    "placement=linear"],
    ("routing", "kshortest"): ["topology=torus", "topology.dims=[4,4,2]", "traffic=all_to_all", "placement=linear"],
    ("routing", "optiq_heuristic"): ["topology=torus", "topology.dims=[4,4,2]", "traffic=all_to_all",
                                     "placement=linear"],
    ("routing", "optiq_lp"): ["topology=torus", "topology.dims=[4,4,2]", "traffic=all_to_all", "placement=linear"],
    ("placement", "linear"): ["topology=torus", "topology.dims=[4,4,2]", "routing=dor", "traffic=all_to_all"],
    ("placement", "random"): ["topology=torus", "topology.dims=[4,4,2]", "routing=dor", "traffic=all_to_all"],
    ("placement", "dragonfly_cartesian"): [],
    ("placement", "dragonfly_random"): ["traffic.beta=[8,8,2]", "placement.tasks_per_group=16"],
    ("placement", "torus_block"): ["topology=torus", "topology.dims=[4,4,2]", "routing=dor", "traffic.alpha=[8,8,8]",
                                   "traffic.beta=[4,4,2]"],
    ("placement", "subprism"): ["topology=torus", "topology.dims=[4,4,4]", "routing=dor", "traffic=all_to_all",
                                "traffic.n_tasks=8", "placement.task_grid=[2,2,2]"],
    ("placement", "alps"): ["topology=torus", "topology.dims=[4,4,4]", "routing=dor", "traffic=all_to_all",
                            "traffic.n_tasks=16"],
    ("placement", "fragmented"): ["topology=torus", "topology.dims=[4,4,4]", "routing=dor", "traffic=all_to_all",
                                  "traffic.n_tasks=8", "placement.job_nodes=[1,4]", "placement.events=20"],
    ("placement", "features"): ["topology=machine", "topology.name=BlueWaters", "topology.partition=null",
                                "routing=dor", "traffic=all_to_all", "traffic.n_tasks=16"],
    ("placement", "topaware"): ["topology=torus", "topology.dims=[4,4,4]", "routing=dor", "traffic=all_to_all",
                                "traffic.n_tasks=32", "placement.grid=[4,4,2]", "placement.tasks_per_node=2"],
    ("topology", "fat_tree"): ["topology.k=4", "routing=dmodk", "traffic=all_to_all", "placement=linear"],
    ("routing", "dmodk"): ["topology=fat_tree", "topology.k=2", "traffic=all_to_all", "placement=linear"],
    ("routing", "ecmp"): ["topology=fat_tree", "topology.k=2", "traffic=all_to_all", "placement=linear"],
    ("routing", "ecmp_spray"): ["topology=fat_tree", "topology.k=2", "traffic=all_to_all", "placement=linear"],
    ("routing", "ugal"): ["topology.p=2", "topology.a=4", "topology.h=2", "traffic=all_to_all", "traffic.n_tasks=16",
                          "placement=linear", "routing.iterations=4"],
    ("routing", "torus_adaptive"): ["topology=torus", "topology.dims=[4,4]", "traffic=all_to_all", "placement=linear",
                                    "routing.iterations=4"],
    ("routing", "ft_adaptive"): ["topology=fat_tree", "topology.k=2", "traffic=all_to_all", "placement=linear",
                                 "routing.iterations=4"],
    ("placement", "block"): ["topology=fat_tree", "topology.k=2", "routing=ecmp", "traffic=all_to_all"],
}
for _traffic in config.FAMILIES["traffic"]:
    BUILD_CONTEXT[("traffic", _traffic)] = ["topology=torus", "topology.dims=[4,4,2]", "routing=dor",
                                            "placement=linear"] + {
        "stencil": ["traffic.alpha=[8,8,8]", "traffic.beta=[4,4,2]"],
        "tornado": ["traffic.grid=[4,4,2]"],
        "many_to_many": ["traffic.n_sources=8", "traffic.n_destinations=8", "traffic.n_tasks=32"],
        "neighbouring": ["traffic.block_sizes=[8,8,8,8]"],
        "m_to_n": ["traffic.n_sources=4", "traffic.n_destinations=16", "traffic.dests_per_source=4"],
    }.get(_traffic, [])
BUILD_CONTEXT[("traffic", "group_tornado")] = ["topology=dragonfly", "topology.p=2", "topology.a=4", "topology.h=2",
                                               "routing=minimal", "placement=linear"]  # (a network with groups)


def test_every_registered_kind_has_a_build_context():
    assert set(BUILD_CONTEXT) == set(KINDS), "a new kind needs a line in BUILD_CONTEXT"


@pytest.mark.parametrize("family,name", KINDS)
def test_registered_kind_has_schema_builder_yaml_and_composes(family, name, tmp_path):
    kind = config.FAMILIES[family][name]
    assert kind.name == name
    assert dataclasses.is_dataclass(kind.schema) and kind.schema().kind == name
    assert callable(kind.build)
    # an option of its group: its YAML file in conf/<family>/, or without one its schema's defaults
    # (register_schemas stores them in Hydra's ConfigStore: a new member needs no YAML file)
    from evaluator.config.hydra import group_options

    assert name in group_options(family), f"{family} kind {name!r} is not an option of {family}"
    extra = list(BUILD_CONTEXT[(family, name)])
    if (family, name) == ("traffic", "file"):
        f = tmp_path / "t.csv"
        f.write_text("0,1,100\n1,2,200\n2,0,300\n")
        extra.append(f"traffic.path={f}")
    if (family, name) == ("traffic", "trace"):
        from test_trace_otf2 import write_trace
        extra.append(f"traffic.path={write_trace(tmp_path / 't', 4, [('send', 0, 0, 1, 'world', 100)])}")
    obj = config.to_object(config.compose([f"{family}={name}", *extra]))
    assert type(getattr(obj, family)) is kind.schema
    point = config.build(obj)
    ds = ev.evaluate(point.topology, point.traffic, point.placement, point.routing)
    assert float(ds.completion_time) > 0 and float(ds.total_bytes) > 0


@pytest.mark.parametrize("family", list(config.FAMILIES))
def test_every_yaml_option_is_a_registered_kind(family):
    for path in sorted((conf_dir() / family).glob("*.yaml")):
        _, obj = composed_option(family, path.stem)  # compose + to_object, shared with tests/test_config_cli.py
        assert getattr(obj, family).kind in config.FAMILIES[family], path


def test_routings_serve_registered_topologies():
    built = {ev.topology.KINDS[k].build(ev.topology.KINDS[k].schema()).kind
             for k in ("torus", "bgq", "gemini", "dragonfly")}
    served = {t for t in built if any(k.serves(t) for k in ev.routing.KINDS.values())}
    assert built <= served and all(k.operator is not None for k in ev.routing.KINDS.values())


# ----------------------------------------------------------------------------------
# a key of another kind
# ----------------------------------------------------------------------------------


@pytest.mark.parametrize("overrides,needles", [
    (["traffic=stencil", "traffic.n_sources=4"], ["traffic.n_sources", "stencil", "many_to_many"]),
    (["traffic=stencil", "+traffic.grid=[2,2]"], ["traffic.grid", "stencil", "shift", "tornado"]),
    (["placement=linear", "placement.gamma=[2,2,2]"], ["placement.gamma", "linear", "dragonfly_cartesian"]),
    (["routing=minimal", "routing.tie=positive"], ["routing.tie", "minimal", "routing=dor"]),
])
def test_key_of_another_kind_fails_at_composition(overrides, needles, capsys):
    with pytest.raises(ConfigCompositionError) as e:
        config.to_object(config.compose(overrides))
    msg = str(e.value)
    assert all(n in msg for n in needles) and "\n" not in msg, msg
    assert cli.main(["eval", *overrides, "save=false"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and needles[0] in err, err


# ----------------------------------------------------------------------------------
# import graph
# ----------------------------------------------------------------------------------

LAYERS = [
    ("evaluator._version", "evaluator._types", "evaluator._ops", "evaluator._registry", "evaluator.errors",
     "evaluator.io", "evaluator.dataset", "evaluator.display", "evaluator.machines", "evaluator._jax_cache",
     "evaluator._malloc", "evaluator._threads", "evaluator.runs", "evaluator._program_store", "evaluator.latency",
     "evaluator._args", "evaluator._threefry", "evaluator._signals"),
    ("evaluator.topology",),
    ("evaluator.lp",),
    ("evaluator.routing", "evaluator.traffic", "evaluator.placement", "evaluator.policies", "evaluator.cost"),
    ("evaluator.kernel", "evaluator.lp.bounds"),  # the one-point maths (and the bounds' LPs)
    ("evaluator._batch", "evaluator.flowlevel"),  # the batch engine: compiled kernels, runners, memory
    ("evaluator.evaluation",),  # its front: evaluate, evaluate_batch, evaluate_groups
    ("evaluator.jobs", "evaluator.mapping"),
    ("evaluator.config",),
    ("evaluator.query", "evaluator.plot", "evaluator.studies"),
    ("evaluator.workload",),
    ("evaluator.sweep", "evaluator.partitions", "evaluator.bench", "evaluator.tiles"),
    ("evaluator.cli",),
    ("evaluator", "evaluator.__main__", "evaluator.studies.__main__"),  # entry points (python -m) on top
]
"""Layers, lowest first: a module may import its own layer's modules or lower ones, never higher."""


def _module_name(path: Path) -> str:
    rel = path.relative_to(PKG.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in PKG.rglob("*.py")}


def _from_target(name: str, is_pkg: bool, node: ast.ImportFrom) -> str:
    """The absolute module a ``from ... import`` in module ``name`` reads from (relative levels resolved)."""
    if not node.level:
        return node.module or ""
    base = name.split(".") if is_pkg else name.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _imports(name: str, path: Path, known: set[str]) -> set[str]:
    """Internal modules imported anywhere in ``path`` (module level or inside functions)."""
    is_pkg = path.name == "__init__.py"
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.split(".")[0] == "evaluator")
        elif isinstance(node, ast.ImportFrom):
            target = _from_target(name, is_pkg, node)
            if target.split(".")[0] != "evaluator":
                continue
            subs = [f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in known]
            out.update(subs)
            if len(subs) < len(node.names):
                out.add(target)
    return {m for m in out if m in known and m != name}


def _graph() -> dict[str, set[str]]:
    mods = _modules()
    known = set(mods)
    return {m: _imports(m, p, known) for m, p in mods.items()}


def _layer(mod: str) -> int:
    best = None
    for i, layer in enumerate(LAYERS):
        for prefix in layer:
            if mod == prefix or mod.startswith(prefix + "."):
                if best is None or len(prefix) > best[1]:
                    best = (i, len(prefix))
    assert best is not None, f"module {mod} is in no layer of LAYERS"
    return best[0]


def test_import_graph_has_no_cycle():
    graph = _graph()
    assert "evaluator.config.hydra" in graph and "evaluator.topology._torus" in graph
    state: dict[str, int] = {}

    def visit(m, stack):
        state[m] = 1
        for d in sorted(graph[m]):
            if state.get(d) == 1:
                raise AssertionError("import cycle: " + " -> ".join(stack[stack.index(d):] + [d]))
            if d not in state:
                visit(d, stack + [d])
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])


def test_no_upward_import():
    bad = [f"{m} (layer {_layer(m)}) imports {d} (layer {_layer(d)})"
           for m, deps in sorted(_graph().items()) for d in sorted(deps) if _layer(d) > _layer(m)]
    assert not bad, "\n".join(bad)


def test_only_the_config_layer_touches_hydra_and_omegaconf():
    users = set()
    for m, p in _modules().items():
        for node in ast.walk(ast.parse(p.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
            if any(n.split(".")[0] in ("hydra", "omegaconf") for n in names):
                users.add(m)
    # the package evaluator.config.hydra and its modules, nothing else
    assert users and all(u == "evaluator.config.hydra" or u.startswith("evaluator.config.hydra.")
                         for u in users), users


def test_every_family_member_is_a_private_module_with_a_base():
    for family in config.FAMILIES:
        d = PKG / family
        assert (d / "base.py").is_file() and (d / "__init__.py").is_file(), family
        members = [p for p in d.glob("_*.py") if p.name != "__init__.py"]
        assert members, family


def _package(mod: str) -> str:
    """The package a module belongs to: ``evaluator.<first component>`` (a top-level module is its own)."""
    parts = mod.split(".")
    return ".".join(parts[:2])


def _private_imports() -> list[str]:
    """Every import of another package's private module (a component starting with ``_``) or private name.

    The root package's own private modules (``evaluator._ops``, ``evaluator._registry``, ``evaluator._batch``,
    ...) are shared infrastructure of every subpackage and are allowed; a private name (``_x``) of another
    package, or a module ``evaluator.<pkg>._y`` imported from outside ``evaluator.<pkg>``, is not."""
    mods = _modules()
    known = set(mods)
    bad = []
    for name, path in sorted(mods.items()):
        is_pkg = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                pairs = [(a.name, None) for a in node.names if a.name.split(".")[0] == "evaluator"]
            elif isinstance(node, ast.ImportFrom):
                target = _from_target(name, is_pkg, node)
                if target.split(".")[0] != "evaluator":
                    continue
                pairs = [(f"{target}.{a.name}", None) if f"{target}.{a.name}" in known else (target, a.name)
                         for a in node.names]
            else:
                continue
            for mod, attr in pairs:
                if _package(mod) == _package(name):
                    continue
                inner = mod.split(".")[2:]
                if any(c.startswith("_") and not c.startswith("__") for c in inner) or (
                        attr is not None and attr.startswith("_") and not attr.startswith("__")):
                    bad.append(f"{name} imports {mod}{'' if attr is None else ' ' + attr}")
    return bad


def test_no_module_imports_another_packages_private_names():
    bad = _private_imports()
    assert not bad, "\n".join(bad)


def test_one_road_to_the_device():
    """The sweep reaches the kernels through the batch engine's front (:func:`evaluator.evaluation.evaluate_groups`)
    only: no sweep module imports the kernels, the compiled layer, the blocks or the memory rule, and no module
    outside ``evaluator._batch`` calls a private name of a compiled kernel (``._cache_size``, ``._run``,
    ``._jits``; :meth:`evaluator._batch.compiled.Kernels.n_compiles` is the public count)."""
    graph = _graph()
    near = {"evaluator.kernel", "evaluator._batch.compiled", "evaluator._batch.blocks", "evaluator._batch.memory",
            "evaluator._batch.banked", "evaluator._batch.dispatch"}
    bad = [f"{m} imports {d}" for m, deps in sorted(graph.items()) if m.startswith("evaluator.sweep")
           for d in sorted(deps & near)]
    assert not bad, "\n".join(bad)
    assert "evaluator.sweep._runner" not in graph
    private = {"_cache_size", "_run", "_jits", "_per_point", "_shared", "_dense"}
    for name, path in sorted(_modules().items()):
        if name.startswith("evaluator._batch"):
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Attribute) and node.attr in private and isinstance(node.value, ast.Attribute) \
                    and node.value.attr == "fn":
                bad.append(f"{name}:{node.lineno} calls .fn.{node.attr}")
    assert not bad, "\n".join(bad)
