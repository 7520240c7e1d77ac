"""Every default the documents (README.md, docs/*.md) and the commands' ``--help`` texts state is the default the
code uses.

Each test reads the stated value FROM THE TEXT (a regex over the sentence, whitespace collapsed) and compares it
with the value loaded from the code: the composed Hydra config (conf/ and the schema dataclasses), a public
function's signature, or an argparse option's default (the parser each command builds, captured as it parses).
A changed sentence, a changed default or a sentence gone all fail here.
"""

from __future__ import annotations

import argparse
import inspect
import re
from pathlib import Path

import pytest

from evaluator import _args, cli, config

ROOT = Path(__file__).resolve().parents[1]


# --------------------------------------------------------------------------- reading the documents

def _text(doc: str) -> str:
    """The document with its whitespace collapsed (a sentence may wrap over lines)."""
    return re.sub(r"\s+", " ", (ROOT / doc).read_text(encoding="utf-8"))


def stated(doc: str, pattern: str, group: int | str = 1) -> str:
    """The value ``pattern``'s group captures in ``doc``; fails naming the sentence when the text has none."""
    m = re.search(pattern, _text(doc))
    assert m is not None, f"{doc}: no sentence matches {pattern!r} (the stated default was reworded or removed)"
    return m.group(group)


def number(text: str) -> float:
    """``1,024`` / ``2,000,000`` / ``25e9`` / ``0.1`` as a float."""
    return float(text.replace(",", ""))


def table_defaults(doc: str, heading: str) -> dict[str, str]:
    """The ``| key | default | meaning |`` table under ``heading``: key -> the default cell (backticks off)."""
    lines = (ROOT / doc).read_text(encoding="utf-8").splitlines()
    start = lines.index(heading)
    out: dict[str, str] = {}
    for line in lines[start + 1:]:
        if line.startswith("#"):
            break
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 3 and cells[0].startswith("`"):
            out[cells[0].strip("`")] = cells[1].strip("`")
    assert out, f"{doc}: no key table under {heading!r}"
    return out


def as_value(cell: str):
    """A table cell as YAML reads it: ``null`` -> None, ``1.0e6`` -> 1e6, ``8`` -> 8, a word stays a word."""
    if cell == "null":
        return None
    try:
        return int(cell)
    except ValueError:
        pass
    try:
        return float(cell)
    except ValueError:
        return cell


# --------------------------------------------------------------------------- the code's defaults

class _Captured(BaseException):  # (BaseException: cli.main turns an Exception into exit status 1)
    def __init__(self, parser):
        super().__init__("parser captured")
        self.parser = parser


def parser_of(argv: list[str]) -> argparse.ArgumentParser:
    """The parser ``evaluator ARGV...`` builds, captured when it starts parsing (nothing runs)."""

    def capture(self, args=None, namespace=None):
        raise _Captured(self)

    saved = _args.ArgumentParser.parse_known_args
    _args.ArgumentParser.parse_known_args = capture
    try:
        cli.main(list(argv))
    except _Captured as got:
        return got.parser
    finally:
        _args.ArgumentParser.parse_known_args = saved
    raise AssertionError(f"evaluator {' '.join(argv)} built no evaluator ArgumentParser")


def option(argv: list[str], flag: str) -> argparse.Action:
    for action in parser_of(argv)._actions:
        if flag in action.option_strings:
            return action
    raise AssertionError(f"evaluator {' '.join(argv)} has no option {flag}")


def help_says(argv: list[str], flag: str, pattern: str) -> str:
    """The value an option's help text states (group 1 of ``pattern``)."""
    text = re.sub(r"\s+", " ", option(argv, flag).help or "")
    text = text.replace("%(default)s", str(option(argv, flag).default))
    m = re.search(pattern, text)
    assert m is not None, f"evaluator {' '.join(argv)} {flag}: help {text!r} states no default matching {pattern!r}"
    return m.group(1)


def default_of(key: str, *overrides: str):
    """``key`` of the composed config (conf/ YAML over the schemas) with ``overrides``."""
    cfg = config.compose(list(overrides))
    for part in key.split("."):
        cfg = cfg[part]
    return cfg


def param_default(fn, name: str):
    return inspect.signature(fn).parameters[name].default


# --------------------------------------------------------------------------- README.md

def test_readme_chunk_sizes_are_the_planners():
    from evaluator.sweep import plan

    m = re.search(r"`sweep\.chunk_size`: ([\d,]+) points, ([\d,]+) with `sweep\.keep_link_load=true`",
                  _text("README.md"))
    assert m, "README.md: the sentence on sweep.chunk_size's default was reworded or removed"
    assert default_of("sweep.chunk_size") is None  # null: the planner's size
    assert number(m.group(1)) == plan.default_chunk_size(False)
    assert number(m.group(2)) == plan.default_chunk_size(True)
    assert number(stated("README.md", r"With ([\d,]+)-point chunks \(the default")) == plan.default_chunk_size(False)
    bench = stated("docs/bench.md", r"the default is ([\d,]+) without `keep_link_load` and ([\d,]+) with it")
    assert number(bench) == plan.default_chunk_size(False)
    assert number(stated("docs/bench.md", r"the default is [\d,]+ without `keep_link_load` and ([\d,]+) with it")) \
        == plan.default_chunk_size(True)


def test_readme_ray_connect_timeout():
    seconds = stated("README.md", r"`ray\.connect_timeout_s` \(([\d.]+) s\)")
    assert number(seconds) == default_of("ray.connect_timeout_s")


def test_readme_dragonfly_groups_default_to_a_h_plus_1():
    import evaluator as ev

    formula = stated("README.md", r"# g defaults to (a\*h\+1) = (\d+)")
    groups = int(stated("README.md", r"# g defaults to a\*h\+1 = (\d+)"))
    assert formula == "a*h+1" and param_default(ev.dragonfly, "g") is None
    assert default_of("topology.g") is None  # the config group's g: null too
    df = ev.dragonfly(p=4, a=8, h=4)
    assert df.g == groups == 8 * 4 + 1


def test_readme_rdn_seeds_and_baseline():
    seeds = stated("README.md", r"random mappings of the traditional Dragonfly \(default (\d+)\)")
    assert int(option(["study", "rdn"], "--seeds").default) == int(seeds)
    assert re.search(r"ideal adaptive \(UGAL\) lower bound of the traditional Dragonfly by default",
                     _text("README.md"))
    assert option(["study", "rdn"], "--baseline").default == "adaptive"


def test_readme_fat_tree_default_is_8_ary_3_tree():
    from evaluator.config.build import build_topology

    m = re.search(r"k-ary n-tree \(the default: (\d+)-ary (\d+)-tree, ([\d,]+) nodes\)", _text("README.md"))
    assert m, "README.md: the fat tree's default sentence was reworded or removed"
    cfg = config.to_object(config.compose(["topology=fat_tree"])).topology
    topo = build_topology(cfg)
    assert topo.n_nodes == number(m.group(3)) == int(m.group(1)) ** int(m.group(2))
    # a k-ary n-tree (Petrini and Vanneschi): k^n nodes, n k^(n-1) switches
    assert topo.n_routers == int(m.group(2)) * int(m.group(1)) ** (int(m.group(2)) - 1)


def test_readme_stencil_neighbours_faces():
    word = stated("README.md", r"`traffic\.neighbours=(\w+)` \(the default\)")
    assert default_of("traffic.neighbours", "traffic=stencil") == word
    assert default_of("traffic.kind") == "stencil"


def test_readme_draws_of_eval_and_map():
    from evaluator import evaluation, mapping

    eval_draws = int(stated("README.md", r"`evaluator eval` prints (\d+) seeds' mean"))
    map_draws = int(stated("README.md", r"`evaluator map` prints its mapping's over (\d+) seeds"))
    assert eval_draws == evaluation.DRAWS == map_draws
    assert param_default(mapping.over_draws, "k") == map_draws
    assert int(help_says(["eval"], "--draws", r"\(default (\d+);")) == evaluation.DRAWS


def test_readme_tie_split_default():
    word = stated("README.md", r"`--tie (\w+)`, the default")
    assert option(["partitions"], "--tie").default == word


def test_default_study_is_the_main_job():
    from evaluator.config.hydra import DEFAULT_STUDY

    main_job = stated("README.md", r"The main job is the default sweep, `(\w+)`")
    table = stated("docs/sweeps.md", r"\| the default study, `sweeps/(\w+)\.yaml`")
    assert DEFAULT_STUDY == main_job == table
    assert (ROOT / "sweeps" / f"{DEFAULT_STUDY}.yaml").is_file()


# --------------------------------------------------------------------------- docs/adaptive_routing.md

@pytest.mark.parametrize("group", ["ugal", "ugal_local", "torus_adaptive", "ft_adaptive"])
def test_adaptive_power_and_iterations(group):
    power = number(stated("docs/adaptive_routing.md", r"`routing\.power` \(default ([\d.]+),"))
    iterations = int(stated("docs/adaptive_routing.md", r"`routing\.iterations` steps, default (\d+)\)"))
    table = stated("docs/adaptive_routing.md", r"\| p = (\d+) \(default\) \|")
    at = stated("docs/adaptive_routing.md", r"UGAL-G at the default `power` (\d+)")
    assert default_of("routing.power", f"routing={group}") == power == number(table) == number(at)
    assert default_of("routing.iterations", f"routing={group}") == iterations


def test_adaptive_variants_table():
    row = {}
    for line in (ROOT / "docs/adaptive_routing.md").read_text(encoding="utf-8").splitlines():
        m = re.match(r"\| `(\w+)` [^|]*\|[^|]*\|([^|]*)\|([^|]*)\|([^|]*)\|", line)
        if m and m.group(1) in ("ugal", "torus_adaptive", "ft_adaptive"):
            row[m.group(1)] = (m.group(2), m.group(3), m.group(4))
    assert set(row) == {"ugal", "torus_adaptive", "ft_adaptive"}, row
    for kind, (_, glob, local) in row.items():
        said = "global" if "default" in glob else "local" if "default" in local else None
        assert said is not None, (kind, row[kind])
        assert default_of("routing.variant", f"routing={kind}") == said, kind
    nonminimal = re.search(r"`nonminimal=(\w+)`: [^;]*, default;", row["ugal"][0])
    assert nonminimal, row["ugal"][0]
    assert default_of("routing.nonminimal", "routing=ugal") == nonminimal.group(1)


# --------------------------------------------------------------------------- docs/bounds.md, routing_paths.md

def test_garg_konemann_defaults():
    from evaluator.lp import garg_konemann

    assert re.search(r"\(`refine=True`, the default\)", _text("docs/bounds.md"))
    steps = stated("docs/bounds.md", r"`max_steps=(\d+)`, the default\)")
    assert param_default(garg_konemann, "refine") is True
    assert param_default(garg_konemann, "max_steps") == int(steps)


def test_path_lp_solver_highs():
    assert re.search(r"HiGHS by default, `routing\.solver=pdhg`", _text("docs/routing_paths.md"))
    assert default_of("routing.solver", "routing=optiq_lp") == "highs"


# --------------------------------------------------------------------------- docs/buyer.md, docs/rdn.md

def test_buyer_options():
    assert number(stated("docs/buyer.md", r"\(`--link`, default ([\de.]+) bytes/s")) \
        == number(option(["study", "buyer"], "--link").default)
    assert number(stated("docs/buyer.md", r"within `--tolerance` \(default ([\d.]+):")) \
        == number(option(["study", "buyer"], "--tolerance").default)
    equal = stated("docs/buyer.md", r"--seeds \d+ +# equal (\w+) only \(the default\)")
    assert option(["study", "buyer"], "--equal").default == equal


def test_rdn_study_options():
    rdn = ["study", "rdn"]
    assert int(stated("docs/rdn.md", r"\(`--seeds N`, default (\d+)\)")) == int(option(rdn, "--seeds").default)
    assert int(stated("docs/rdn.md", r"\(`seed`: `--seed`, default (\d+);")) == int(option(rdn, "--seed").default)
    assert number(stated("docs/rdn.md", r"`--max-lp-nnz` nonzeros \(default ([\d,]+),")) \
        == number(option(rdn, "--max-lp-nnz").default)
    assert stated("docs/rdn.md", r"`--out DIR\|FILE\.nc` \(default `([\w/]+)`\)") == option(rdn, "--out").default
    assert stated("docs/rdn.md", r"`--baseline (\w+)` \(default,") == option(rdn, "--baseline").default
    assert option(rdn, "--bounds").default == "adaptive"  # "needs --bounds to compute it, the default does"
    assert re.search(r"needs `--bounds` to compute it, the default does", _text("docs/rdn.md"))


# --------------------------------------------------------------------------- key tables

def test_collective_key_table():
    table = table_defaults("docs/collectives.md", "## Config keys")
    assert set(table) == {"op", "algorithm", "n_tasks", "bytes", "root", "n_segments", "throttle", "selection"}
    cfg = config.compose(["traffic=collective"]).traffic
    for key, cell in table.items():
        assert cfg[key] == as_value(cell), (key, cell, cfg[key])
    assert int(stated("docs/collectives.md", r"the count is `(\d+)`, today's default")) == cfg.n_segments


def test_collective_and_trace_op_defaults():
    from evaluator.traffic._collectives import COLLECTIVES, SELECTIONS

    row = stated("docs/traces.md", r"\| `algorithms` \| all `null` \| algorithm per operation: keys ([^|]*)\|")
    ops = re.findall(r"`(\w+)`", row[:row.index("; null")])
    said = re.findall(r"`(\w+)`", row[row.index("COLLECTIVES"):])
    assert ops == ["allreduce", "alltoall", "allgather", "broadcast", "reduce"], row
    from evaluator.traffic._trace import _algorithms

    used = _algorithms(None)  # the algorithms a trace runs with `algorithms` all null
    assert set(used) == set(ops) and said == [used[op] for op in ops], (said, used)
    assert [used[op] for op in ops[:4]] == [COLLECTIVES[op][0] for op in ops[:4]]
    assert used["reduce"] == COLLECTIVES["broadcast"][0]  # a reduce is its broadcast run backwards
    for op in ("allreduce", "alltoall", "allgather", "broadcast"):
        row = re.search(rf"\| {op} \| `(\w+)` \(default\) \|", _text("docs/collectives.md"))
        assert row and row.group(1) == COLLECTIVES[op][0], op
    assert stated("docs/collectives.md", r"### `(\w+)` \(default\): MPICH's CVAR rules") == SELECTIONS[0]
    assert stated("docs/traces.md", r"`traffic\.selection`: `(\w+)`, the default") == SELECTIONS[0]


def test_trace_key_table():
    from evaluator.traffic._trace import TraceConfig

    table = table_defaults("docs/traces.md", "## Config keys")
    fields = TraceConfig()
    for key in ("mode", "phase_rule", "window", "n_tasks", "bytes_scale"):
        assert getattr(fields, key) == as_value(table[key]), (key, table[key])
    assert table["path"] == "(required)" and fields.path is None  # refused when missing
    assert all(v is None for v in fields.algorithms.values()) and table["algorithms"] == "all `null"
    assert param_default(__import__("evaluator.traffic", fromlist=["from_trace"]).from_trace, "mode") == "aggregate"


def test_traffic_file_key_table():
    table = table_defaults("docs/traffic_files.md", "## Config keys")
    cfg = config.compose(["traffic=file", "traffic.path=x.csv"]).traffic
    for key in ("n_tasks", "grid", "bytes"):
        assert cfg[key] == as_value(table[key]), (key, table[key])
    from omegaconf import OmegaConf

    assert table["path"] == "(required)"
    assert OmegaConf.is_missing(OmegaConf.load(ROOT / "conf/traffic/file.yaml"), "path")  # ???: must be given


def test_workload_model_table():
    from evaluator.workload.model import WorkloadModel

    text = _text("docs/workload.md")
    model = WorkloadModel()
    sched = ["schedule"]
    enlarge = re.search(r"\| job-size enlargement, clamped to the machine \| ([\d.]+) \| `--enlarge` \|", text)
    assert enlarge and number(enlarge.group(1)) == model.enlarge == option(sched, "--enlarge").default
    rng = re.search(r"\| sizes that draw a mode \| ([\d,]+) \.\.\. ([\d,]+) nodes \|", text)
    assert rng and (number(rng.group(1)), number(rng.group(2))) == (model.mode_lo, model.mode_hi)
    assert option(sched, "--mode-range").default == f"{model.mode_lo},{model.mode_hi}"
    mix = re.search(r"\| their mode mix \| (\d+)% minimal balance, (\d+)% adaptive, (\d+)% custom balance, "
                    r"(\d+)% custom \|", text)
    shares = {"minimal_balance": 1, "adaptive": 2, "custom_balance": 3, "custom": 4}
    assert mix and {k: int(mix.group(i)) / 100 for k, i in shares.items()} == dict(model.mode_mix)
    cli_mix = dict(kv.split("=") for kv in option(sched, "--mode-mix").default.split(","))
    assert {k: float(v) for k, v in cli_mix.items()} == dict(model.mode_mix)
    other = re.search(r"\| mode of every other job \| minimal balance \|", text)
    assert other and model.default_mode == "minimal_balance"
    frac = re.search(r"\| MPI fraction of run time, per size bin \| ([\d.]+) everywhere", text)
    assert frac and number(frac.group(1)) == model.mpi_fraction == number(option(sched, "--mpi-fraction").default)
    rule = re.search(r"\| speedup rule \| `(\w+)` \| `--speedup-rule` \|", text)
    assert rule and rule.group(1) == model.speedup_rule == option(sched, "--speedup-rule").default
    assert stated("docs/workload.md", r"`(\w+)` \(default\) makes the MPI time") == model.speedup_rule


# --------------------------------------------------------------------------- docs/sweeps.md, mapping.md, others

def test_sweep_output_dir_and_max_points():
    assert stated("docs/sweeps.md", r"\(`sweep\.output_dir`, default `(\w+)`") == default_of("sweep.output_dir")
    exp = stated("docs/sweeps.md", r"past `sweep\.max_points` \(10\^(\d+)\)")
    assert default_of("sweep.max_points") == 10 ** int(exp)


def test_mapping_options():
    m = ["map"]
    assert stated("docs/mapping.md", r"`--nodes (\w+)` \(default\)") == option(m, "--nodes").default
    assert number(stated("docs/mapping.md", r"`--candidates` moves \(default ([\d,]+)\)")) \
        == option(m, "--candidates").default
    assert re.search(r"`--tasks-per-node` slots \(default: the config's `placement\.tasks_per_node`, else 1\)",
                     _text("docs/mapping.md"))
    assert option(m, "--tasks-per-node").default is None  # None: the config's, else 1
    assert re.search(r"Off by default:", _text("docs/mapping.md")) and option(m, "--anneal").default is False
    net = re.search(r"the default topology is DF\((\d+),(\d+),(\d+)\) with (\w+) routing", _text("docs/mapping.md"))
    assert net, "docs/mapping.md: the default network sentence was reworded"
    cfg = config.compose([])
    assert (cfg.topology.kind, cfg.topology.p, cfg.topology.a, cfg.topology.h) == \
        ("dragonfly", *map(int, net.group(1, 2, 3)))
    assert cfg.routing.kind == net.group(4)


def test_gemini_defaults():
    assert stated("docs/gemini.md", r"`topology=machine` \(`layout=(\w+)`, the default\)") == \
        default_of("topology.layout", "topology=machine")
    method = stated("docs/gemini.md", r"`method: (\w+)` \(default\) is the identity")
    for group in ("topaware", "features"):
        assert default_of("placement.rank_order.method", f"placement={group}") == method


def test_tiles_defaults():
    assert re.search(r"halo point, non-periodic by default\)", _text("docs/tiles.md"))
    assert re.search(r"non-periodic \(default\) interior links", _text("docs/tiles.md"))
    assert option(["tiles"], "--periodic").default is False
    assert re.search(r"best first by `--rank-by`, all at once by default", _text("docs/tiles.md"))
    assert option(["tiles"], "--rank-by").default == "all_at_once"


def test_bench_output_file():
    out = stated("docs/bench.md", r"`([\w/]+)/bench\.json` \(`bench-quick\.json` with `--quick`")
    assert out == option(["bench"], "--out").default


# --------------------------------------------------------------------------- the --help texts

HELP_DEFAULTS = [  # (command, option, the help's stated default as a regex group)
    (["bench"], "--out", r"\(default ([\w/]+)\)"),
    (["bench"], "--settle", r"\(default (\d+);"),
    (["map"], "--budget", r"\(default ([\d.]+)\)"),
    (["optimize"], "--top", r"default (\d+)\)"),
    (["partitions"], "--out", r"\(default: ([\w/]+)\)"),
    (["partitions"], "--tie", r"\(default (\w+)\)"),
    (["plot"], "--results", r"\(default: ([\w/]+)\)"),
    (["query"], "--results", r"\(default: ([\w/]+)\)"),
    (["runs"], "--results", r"\(default: ([\w/]+)\)"),
    (["runs"], "--top", r"\(default (\d+): all\)"),
    (["schedule"], "--synthetic", r"\(default (\d+);"),
    (["schedule"], "--load", r"\(default ([\d.]+);"),
    (["schedule"], "--policy", r"\(default (\w+);"),
    (["schedule"], "--mode-range", r"\(default ([\d,]+)\)"),
    (["schedule"], "--mpi-fraction", r"default ([\d.]+) \("),
    (["tiles"], "--machine", r"\(default (\w+)\)"),
    (["tiles"], "--bytes-per-point", r"\(default (\d+):"),
    (["tiles"], "--limit", r"\((\w+), default\)"),
    (["tiles"], "--max-evaluated", r"default (\d+)\)"),
    (["tiles"], "--top", r"default (\d+)\)"),
    (["tiles"], "--out", r"\(default ([\w/]+)\)"),
    (["study", "rdn"], "--background", r"\(default ([\d.]+)\)"),
    (["study", "rdn"], "--seed", r"\(default (\d+)\)"),
    (["study", "rdn"], "--bandwidth", r"\(default ([\de.]+):"),
    (["study", "rdn"], "--adaptive", r"(\w+) \(UGAL-G, the default\)"),
    (["study", "rdn"], "--baseline", r"(\w+) \(the ideal adaptive bound, the default\)"),
    (["study", "buyer"], "--equal", r"\(default (\w+);"),
]


@pytest.mark.parametrize("argv,flag,pattern", HELP_DEFAULTS, ids=[f"{' '.join(a)} {f}" for a, f, _ in HELP_DEFAULTS])
def test_help_states_the_option_default(argv, flag, pattern):
    said = help_says(argv, flag, pattern)
    default = option(argv, flag).default
    if isinstance(default, (int, float)) and not isinstance(default, bool):
        assert number(said) == default, (flag, said, default)
    else:
        assert said == str(default), (flag, said, default)


def test_schedule_machine_help_matches_its_fallback():
    from evaluator.cli.schedule import _machine_size

    groups = int(help_says(["schedule"], "--groups", r"\(default (\d+), the paper's\)"))
    per_group = int(help_says(["schedule"], "--nodes-per-group", r"\(default (\d+)\)"))
    args = argparse.Namespace(machine=None, groups=None, nodes_per_group=None)
    assert _machine_size(args) == (groups, per_group)


@pytest.mark.parametrize("argv,flag", [(["study", "rdn"], "--patterns"), (["study", "buyer"], "--workloads")])
def test_help_default_all_is_every_choice(argv, flag):
    listed = help_says(argv, flag, r"some of ([\w,]+) \(default: all\)")
    assert option(argv, flag).default == listed


def test_schedule_help_paper_mix_and_rule():
    from evaluator.workload.model import PAPER_MODE_MIX

    assert re.search(r"\(default: the paper's\)", option(["schedule"], "--mode-mix").help)
    given = dict(kv.split("=") for kv in option(["schedule"], "--mode-mix").default.split(","))
    assert {k: float(v) for k, v in given.items()} == dict(PAPER_MODE_MIX)
    rule = option(["schedule"], "--speedup-rule")
    said = re.search(r"1-1/S \(default\) or S-1", rule.help)
    assert said and rule.choices[0] == rule.default == "time_ratio"  # time_ratio saves 1 - 1/S
    assert re.search(r"off by default", option(["map"], "--anneal").help)
    assert option(["map"], "--anneal").default is False


def test_synthetic_trace_defaults():
    from evaluator.workload.synthetic import synthetic_trace

    m = re.search(r"log-normal run times \(median (\d+) h, (\d+) s to (\d+) h: `synthetic_trace`'s defaults\)",
                  _text("docs/workload.md"))
    assert m, "docs/workload.md: the synthetic trace's defaults sentence was reworded"
    assert param_default(synthetic_trace, "median_run_s") == int(m.group(1)) * 3600
    assert param_default(synthetic_trace, "max_run_s") == int(m.group(3)) * 3600
    load = stated("docs/workload.md", r"Poisson arrivals at (\d+)% offered load")
    assert param_default(synthetic_trace, "load") == int(load) / 100 == option(["schedule"], "--load").default


def test_dragonfly_bandwidth_and_placement_defaults():
    import evaluator as ev

    gbs = stated("docs/cost.md", r"The Dragonfly's default (\d+) GB/s")
    for key in ("bandwidth_p", "bandwidth_l", "bandwidth_r"):
        assert default_of(f"topology.{key}") == number(gbs) * 1e9 == param_default(ev.dragonfly, key), key
    kind = stated("docs/sweeps.md", r"hashed ECMP, the default `(\w+)` placement")
    assert default_of("placement.kind") == kind
    per_point = stated("docs/gemini.md", r"the stencil's default (\d+) bytes per point")
    assert default_of("traffic.bytes_per_element", "traffic=stencil") == int(per_point)


def _signature_defaults(doc: str, name: str) -> dict[str, object]:
    """The keyword defaults of the signature ``name(...)`` the document writes in backticks, as Python reads
    them (``bounds=("adaptive",)`` -> a tuple)."""
    import ast

    m = re.search(rf"`{re.escape(name)}\(([^`]*?)\)(?: -> [^`]*)?`", _text(doc))
    assert m, f"{doc}: no signature `{name}(...)`"
    fn = ast.parse(f"def f({m.group(1)}): pass").body[0].args
    out = {}
    positional = fn.posonlyargs + fn.args
    for arg, default in zip(positional[len(positional) - len(fn.defaults):], fn.defaults):
        out[arg.arg] = ast.literal_eval(default)
    for arg, default in zip(fn.kwonlyargs, fn.kw_defaults):
        if default is not None:
            out[arg.arg] = ast.literal_eval(default)
    assert out, (doc, name)
    return out


def _traffic(name):
    from evaluator import traffic

    return getattr(traffic, name)


def _background():
    from evaluator.jobs import Background

    return Background


def _rdn_study():
    from evaluator.studies import rdn

    return rdn.allocation_mode_study


SIGNATURES = [
    ("docs/collectives.md", "traffic.collective", lambda: _traffic("collective")),
    ("docs/collectives.md", "traffic.collective_steps", lambda: _traffic("collective_steps")),
    ("docs/collectives.md", "traffic.select_algorithm", lambda: _traffic("select_algorithm")),
    ("docs/collectives.md", "traffic.optimal_segments", lambda: _traffic("optimal_segments")),
    ("docs/jobs.md", "Background", _background),
    ("docs/rdn.md", "allocation_mode_study", _rdn_study),
]


@pytest.mark.parametrize("doc,name,fn", SIGNATURES, ids=[s[1] for s in SIGNATURES])
def test_written_signature_defaults(doc, name, fn):
    params = inspect.signature(fn()).parameters
    for key, said in _signature_defaults(doc, name).items():
        assert key in params, (name, key)
        actual = params[key].default
        assert actual == said and type(actual) is type(said) or (
            isinstance(said, (int, float)) and actual == said), (name, key, said, actual)


def test_sweep_run_setting_defaults_readme_implies():
    text = _text("README.md")
    assert "Without `ray.address` a sweep starts its own Ray on this machine" in text
    assert default_of("ray.address") is None and default_of("ray.enabled") is True
    assert re.search(r"`ray\.enabled=false` runs the sweep in the command's own process", text)
    assert re.search(r"sweep\.format=zarr +# zarr instead of netCDF", text)
    assert default_of("sweep.format") == "netcdf"
    assert re.search(r"sweep\.keep_link_load=true +# keep per-link loads", text)
    assert default_of("sweep.keep_link_load") is False


def test_blue_waters_layout_defaults():
    from omegaconf import OmegaConf

    text = _text("docs/gemini.md")
    cls = stated("docs/gemini.md", r"\| `default_class` \| class of compute nodes outside every region "
                                   r"\(Blue Waters: `(\w+)`\)")
    machine = OmegaConf.load(ROOT / "conf/machine/bluewaters.yaml")
    assert machine.default_class == cls
    assert "No down nodes by default" in text
    assert machine.down_routers is None and machine.down_fraction is None


def test_backfill_depth():
    import importlib

    simulate = importlib.import_module("evaluator.workload.simulate")  # (the package exports a function too)
    depth = int(stated("docs/workload.md", r"among the first `--backfill-depth` \((\d+), Slurm's `bf_max_job_test`\)"))
    assert option(["schedule"], "--backfill-depth").default == depth == simulate.DEFAULT_BACKFILL_DEPTH
    assert param_default(simulate.simulate, "backfill_depth") == depth


def test_jobs_config_sample_and_latency_nulls():
    text = _text("docs/jobs.md")
    assert re.search(r"jobs: +# null: one job, the top-level groups", text) and default_of("jobs") is None
    assert re.search(r"exclusive_nodes: true +# jobs may not share a node", text)
    assert re.search(r"interference: true +# the job x job matrix", text)
    assert default_of("exclusive_nodes") is True and default_of("interference") is True
    assert re.search(r"# fraction 0: none", text) and default_of("background.fraction") == 0
    sample = re.search(r"background: \{fraction: [\d.]+, pattern: (\w+), seed: (\d+), routing: (\w+)\}", text)
    assert sample, "docs/jobs.md: the background sample was reworded"
    assert default_of("background.pattern") == sample.group(1)
    assert default_of("background.seed") == int(sample.group(2))
    assert default_of("background.routing") is as_value(sample.group(3))
    lat = _text("docs/latency.md")
    assert "| `enabled` | null: on when any key below is set;" in lat
    assert "| `eager_threshold` | bytes; null: every message eager |" in lat
    for topo in ("dragonfly", "torus", "fat_tree"):
        assert default_of("topology.latency.enabled", f"topology={topo}") is None, topo
        assert default_of("topology.latency.eager_threshold", f"topology={topo}") is None, topo


def test_output_directories():
    assert stated("README.md", r"a study's that study's, `([\w/]+)` every eval") == default_of("output_dir")
    mapped = stated("docs/mapping.md", r"and a dataset under `([\w/]+)/` with the mapping")
    description = parser_of(["map"]).description
    assert f"writes a dataset under {mapped}/" in re.sub(r"\s+", " ", description)
    # map writes beside eval's default: output_dir results/eval -> results/mapping (evaluator/cli/mapping.py)
    assert str(Path(default_of("output_dir")).parent / "mapping") == mapped
    assert stated("docs/workload.md", r"`evaluator schedule` writes `([\w/]+)/<run-id>\.nc`") \
        == option(["schedule"], "--out").default


@pytest.mark.parametrize("command", ["placement", "map"])
def test_fill_help_matches_the_launch_order(command):
    import evaluator as ev
    from evaluator.placement.nodes import launch_fill_order

    on_torus = help_says([command], "--fill", r"(\w+) \(the ALPS-like order; default on 3-D tori\)")
    elsewhere = help_says([command], "--fill", r"or (\w+) \(ascending node id; default elsewhere\)")
    assert option([command], "--fill").default is None  # None: chosen by the topology
    assert launch_fill_order(ev.torus((4, 4, 2)))[0] == on_torus
    assert launch_fill_order(ev.dragonfly(p=2, a=2, h=1))[0] == elsewhere
