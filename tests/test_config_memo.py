"""The config layer's memos: :func:`evaluator.config.compose` serves a repeated composition from memory (and, in a
new process, from disk: :mod:`evaluator.config.hydra.disk_memo`), and :func:`evaluator.config.register_schemas`
stores the schemas once per process. None may serve anything stale: a result the caller changed, a file edited
since, a kind registered since (or from outside the package), an entry damaged on disk, or an error.

The references are independent of the memo: the YAML files read with PyYAML, the schemas' dataclass defaults,
and a composition made with the memo emptied first.
"""

from __future__ import annotations

import dataclasses

import pytest
import yaml
from omegaconf import OmegaConf

from evaluator import config
from evaluator.config.hydra import composition as H  # the module whose globals compose() reads (patched below)
from evaluator.config.hydra import disk_memo as D
from evaluator.errors import ConfigCompositionError, ConfigError
from evaluator.io import conf_dir
from evaluator.traffic import _shift
from evaluator.traffic.base import TrafficKind


@pytest.fixture(autouse=True)
def no_disk_memo(monkeypatch):
    """The in-process memo alone (the disk memo, :mod:`evaluator.config.hydra.disk_memo`, off), except where a test
    points it at a directory of its own (:func:`disk_memo_at`)."""
    monkeypatch.setattr(D, "memo_dir", lambda: None)


@pytest.fixture
def disk_memo_at(monkeypatch, tmp_path):
    """The disk memo on, in a fresh directory (returned)."""
    d = tmp_path / "compose-memo"
    monkeypatch.setattr(D, "memo_dir", lambda: d)
    return d


@pytest.fixture
def hydra_calls(monkeypatch):
    """The overrides of every composition that reached Hydra (not served from the memo)."""
    calls: list[list[str]] = []
    real = H._compose

    def counting(overrides, config_name, search_path):
        calls.append(list(overrides))
        return real(overrides, config_name, search_path)

    monkeypatch.setattr(H, "_compose", counting)
    return calls


def _fresh(overrides, config_name="config", search_path=()):
    H._clear_compose_cache()
    return OmegaConf.to_container(config.compose(overrides, config_name, search_path), resolve=True)


def test_a_repeated_composition_is_an_independent_equal_copy(hydra_calls):
    overrides = ["routing=valiant", "placement.seed=3"]
    H._clear_compose_cache()
    first = config.compose(overrides)
    second = config.compose(overrides)
    assert len(hydra_calls) == 1  # the second came from the memo
    assert first is not second
    assert OmegaConf.to_container(first) == OmegaConf.to_container(second)
    # what conf/ says, read without Hydra
    shipped = yaml.safe_load((conf_dir() / "config.yaml").read_text())
    assert second.output_dir == shipped["output_dir"] and second.placement.seed == 3
    assert second.routing.kind == "valiant"
    # changing what one call got changes neither the memo nor what the next call gets
    first.output_dir = "elsewhere"
    first.placement.seed = 99
    second.topology.g = 1
    third = config.compose(overrides)
    assert len(hydra_calls) == 1
    assert third.output_dir == shipped["output_dir"] and third.placement.seed == 3
    assert OmegaConf.to_container(third) == _fresh(overrides)
    # still a typed config: a value of the wrong type is refused, as in a composition made afresh
    with pytest.raises(Exception, match="placement.seed|seed"):
        third.placement.seed = "not a number"
    assert OmegaConf.is_struct(third) and OmegaConf.get_type(third.routing) is OmegaConf.get_type(first.routing)
    with pytest.raises(Exception, match="not_a_key"):
        third.not_a_key = 1
    assert type(config.to_object(config.compose(overrides)).routing) is type(config.to_object(first).routing)


def test_the_memo_keeps_at_most_its_bound(monkeypatch, hydra_calls):
    monkeypatch.setattr(H, "_COMPOSED_MAX", 2)
    H._clear_compose_cache()
    for seed in (1, 2, 3):
        config.compose([f"placement.seed={seed}"])
    assert len(H._COMPOSED) == 2
    config.compose(["placement.seed=1"])  # the oldest was dropped: composed again
    assert len(hydra_calls) == 4


STUDY = """# @package _global_
defaults:
  - override /routing: my_k
sweep:
  name: a
"""
MY_K = """defaults:
  - kshortest_schema
  - _self_
kind: kshortest
k: 3
"""


def test_a_file_edited_between_two_compositions_is_read_again(tmp_path, monkeypatch):
    d = tmp_path / "studies"
    (d / "routing").mkdir(parents=True)
    (d / "mystudy.yaml").write_text(STUDY)
    (d / "routing" / "my_k.yaml").write_text(MY_K)
    monkeypatch.chdir(tmp_path)

    def composed():
        request = config.compose_sweep(["sweeps=mystudy"], config_dir=str(d))
        return request.config.sweep.name, request.config.routing.k

    assert composed() == ("a", 3)
    assert composed() == ("a", 3)
    # the same sizes, rewritten at once (within the clock's granularity): the contents count, not the times
    (d / "mystudy.yaml").write_text(STUDY.replace("name: a", "name: b"))
    (d / "routing" / "my_k.yaml").write_text(MY_K.replace("k: 3", "k: 5"))
    assert composed() == ("b", 5)
    # a file removed: Hydra's own error again, not the last result
    (d / "routing" / "my_k.yaml").unlink()
    with pytest.raises(ConfigCompositionError, match="my_k"):
        composed()
    # a new option of a group, in a directory on the search path
    (d / "routing" / "my_k.yaml").write_text(MY_K)
    (d / "routing" / "my_k2.yaml").write_text(MY_K.replace("k: 3", "k: 2"))
    assert config.compose(["routing=my_k2"], search_path=[str(d)]).routing.k == 2


@dataclasses.dataclass
class MyShiftConfig:
    """A traffic kind registered at run time (the fields of shift, another name)."""

    kind: str = "my_shift"
    n_tasks: int | None = None
    grid: list[int] | None = None
    offset: int = 2
    bytes: float = 5.0e5


@pytest.fixture
def my_shift(monkeypatch):
    """``traffic=my_shift`` registered in the traffic registry while the test runs."""
    kind = TrafficKind("my_shift", MyShiftConfig, _shift.SHIFT.build)
    yield lambda: monkeypatch.setitem(config.FAMILIES["traffic"]._kinds, "my_shift", kind)
    monkeypatch.undo()
    H.register_schemas()  # the kind is gone again: so is its ConfigStore entry
    with pytest.raises(ConfigCompositionError, match="my_shift"):
        config.compose(["traffic=my_shift"])


def test_a_kind_registered_after_a_composition_is_an_option(my_shift, hydra_calls):
    with pytest.raises(ConfigCompositionError, match="my_shift") as before:
        config.compose(["traffic=my_shift"])
    assert "Available options" in str(before.value) and "stencil" in str(before.value)
    config.compose([])
    my_shift()
    assert "my_shift" in H.group_options("traffic")
    cfg = config.compose(["traffic=my_shift", "topology=torus", "routing=dor", "placement=linear"])
    obj = config.to_object(cfg)
    assert obj.traffic == MyShiftConfig()  # the schema's own defaults (it has no YAML file)
    assert obj.traffic.offset == 2 and obj.traffic.bytes == 5.0e5


def test_register_schemas_stores_once_and_again_when_the_store_lost_an_entry(monkeypatch):
    from hydra.core.config_store import ConfigStore

    H.register_schemas()
    stores: list[str] = []
    real = ConfigStore.store

    def counting(self, name, node, group=None, package=None, provider=None):
        stores.append(f"{group}/{name}")
        return real(self, name, node, group=group, package=package, provider=provider)

    monkeypatch.setattr(ConfigStore, "store", counting)
    H.register_schemas()
    H.register_schemas()
    assert stores == []
    group = ConfigStore.instance().repo["routing"]
    monkeypatch.delitem(group, "dor_schema.yaml")  # someone else's doing: stored again
    H.register_schemas()
    assert "routing/dor_schema" in stores
    assert H._stored(ConfigStore.instance().repo, "routing", "dor_schema") is not None
    # every registered kind, file or not, is an option with its schema (as before the memo)
    for group, kinds in config.FAMILIES.items():
        for name in kinds:
            assert H._stored(ConfigStore.instance().repo, group, f"{name}_schema") is not None
            has_file = (conf_dir() / group / f"{name}.yaml").is_file()
            assert (H._stored(ConfigStore.instance().repo, group, name) is not None) is not has_file


@pytest.mark.parametrize("overrides", [
    ["routing=no_such_routing"],
    ["traffic=stencil", "traffic.n_sources=4"],
    ["topology.g=not_a_number"],
    ["sweeps=no_such_study"],
])
def test_errors_are_the_same_every_time(overrides, hydra_calls):
    H._clear_compose_cache()
    messages = []
    for _ in range(3):
        with pytest.raises(ConfigCompositionError) as err:
            config.compose(overrides)
        messages.append(str(err.value))
    assert len(set(messages)) == 1 and messages[0]
    assert len(hydra_calls) == 3  # never served from the memo
    assert not H._COMPOSED


def test_an_interpolation_that_calls_a_resolver_is_not_memoized(monkeypatch, hydra_calls):
    monkeypatch.setenv("EVALUATOR_TEST_MEMO_DIR", "one")
    overrides = ["output_dir=${oc.env:EVALUATOR_TEST_MEMO_DIR}"]
    assert config.compose(overrides).output_dir == "one"
    monkeypatch.setenv("EVALUATOR_TEST_MEMO_DIR", "two")
    assert config.compose(overrides).output_dir == "two"
    assert len(hydra_calls) == 2


def test_check_assignment_probes_without_changing_the_config():
    obj = config.compose_object(["topology=torus", "routing=dor", "placement=linear", "traffic=shift"])
    before = dataclasses.asdict(obj)
    config.check_assignment(obj, "topology.dims", [[4, 4], [2, 2, 2]])
    config.check_assignment(obj, "traffic.bytes", [1.0, 2])
    with pytest.raises(ConfigError, match="sweep.axes.topology.dims"):
        config.check_assignment(obj, "topology.dims", [[4, 4], "four"])
    with pytest.raises(ConfigError, match="sweep.axes.traffic.n_tasks"):
        config.check_assignment(obj, "traffic.n_tasks", [8, None, "x"])
    with pytest.raises(ConfigError, match="not a key of topology kind 'torus'"):
        config.check_assignment(obj, "topology.g", [4])
    assert dataclasses.asdict(obj) == before


def _whole_config_outcome(obj, key, value):
    """What assigning ``value`` to ``key`` on the whole config, converted to OmegaConf, does: ``"ok"`` or the first
    line of the refusal (the check as it was before it converted one section only)."""
    import copy

    node = OmegaConf.structured(obj)
    if OmegaConf.select(node, key, default="__missing__") == "__missing__":
        return "missing"
    try:
        OmegaConf.update(copy.deepcopy(node), key, value, merge=False)
    except Exception as exc:
        return str(exc).splitlines()[0]
    return "ok"


@pytest.mark.parametrize("key", ["topology.dims", "topology.wrap", "topology.link_bandwidth", "routing.order",
                                 "traffic.n_tasks", "traffic.offset", "placement.tasks_per_node",
                                 "background.fraction", "background.routing", "sweep.chunk_size", "ray.num_cpus"])
def test_check_assignment_takes_and_refuses_what_the_whole_config_does(key):
    obj = config.compose_object(["topology=torus", "routing=dor", "placement=linear", "traffic=shift"])
    for value in (1, -2, 2.5, "abc", True, None, [4, 4], [1, "x"], {"kind": "dor"}, "1e6"):
        expected = _whole_config_outcome(obj, key, value)
        try:
            config.check_assignment(obj, key, [value])
            got = "ok"
        except ConfigError as exc:
            got = exc
        if expected == "ok":
            assert got == "ok", (key, value, got)
        else:
            assert isinstance(got, ConfigError) and expected in str(got), (key, value, expected, got)


_READ_BACK = r"""
import json, sys
from omegaconf import OmegaConf
from evaluator import config
from evaluator.config.hydra import composition as H
if sys.argv[1] == "forbid":  # every composition must come from the disk memo
    def no_hydra(*a, **k):
        raise AssertionError("composed by Hydra")
    H._compose = no_hydra
out = []
for overrides, name in ((["routing=valiant", "placement.seed=3"], "config"),
                        (["sweeps=dragonfly_nne_placement"], "sweep")):
    cfg = config.compose(overrides, name)
    obj = config.to_object(cfg)
    out.append([OmegaConf.to_container(cfg), type(obj.routing).__name__, OmegaConf.is_struct(cfg),
                OmegaConf.get_type(cfg.routing).__name__])
print(json.dumps(out))
"""


def test_a_composition_is_read_back_from_disk_in_a_new_process(tmp_path):
    """A first process composes and stores; a second one, with Hydra's composition made to fail, gets the same
    configs (contents, struct flag, schema types) from disk; both equal a composition made here without either
    memo."""
    import json
    import os
    import subprocess
    import sys

    env = {**os.environ, "EVALUATOR_COMPILATION_CACHE": str(tmp_path / "cc")}
    env.pop("JAX_COMPILATION_CACHE_DIR", None)
    runs = [subprocess.run([sys.executable, "-c", _READ_BACK, mode], env=env, capture_output=True,
                           text=True, cwd=tmp_path) for mode in ("store", "forbid")]
    for r in runs:
        assert r.returncode == 0, r.stderr[-3000:]
    first, second = (json.loads(r.stdout.strip().splitlines()[-1]) for r in runs)
    assert first == second
    assert len(list((tmp_path / "cc" / D.SUBDIR).glob("*.pkl"))) >= 2
    assert first[0][0] == _fresh(["routing=valiant", "placement.seed=3"])
    assert first[0][1:] == ["ValiantConfig", True, "ValiantConfig"]
    assert first[1][0] == _fresh(["sweeps=dragonfly_nne_placement"], "sweep")


def test_the_disk_memo_serves_nothing_stale(tmp_path, monkeypatch, disk_memo_at, hydra_calls, my_shift):
    d = tmp_path / "studies"
    (d / "routing").mkdir(parents=True)
    (d / "routing" / "my_k.yaml").write_text(MY_K)

    def k_of():
        H._clear_compose_cache()  # as a new process: the in-process memo empty
        return config.compose(["routing=my_k"], search_path=[str(d)]).routing.k

    assert k_of() == 3 and len(hydra_calls) == 1
    assert k_of() == 3 and len(hydra_calls) == 1  # from disk
    (d / "routing" / "my_k.yaml").write_text(MY_K.replace("k: 3", "k: 5"))  # edited: another key
    assert k_of() == 5 and len(hydra_calls) == 2
    for entry in disk_memo_at.glob("*.pkl"):  # damaged entries: composed afresh, the same result
        entry.write_bytes(b"not a pickle")
    assert k_of() == 5 and len(hydra_calls) == 3
    assert k_of() == 5 and len(hydra_calls) == 3  # (stored again)
    # a kind registered from outside the package: the package's source hash does not cover its schema
    my_shift()
    n = len(list(disk_memo_at.glob("*.pkl")))
    overrides = ["traffic=my_shift", "topology=torus", "routing=dor", "placement=linear"]
    for _ in range(2):
        H._clear_compose_cache()
        assert config.to_object(config.compose(overrides)).traffic == MyShiftConfig()
    assert len(hydra_calls) == 5 and len(list(disk_memo_at.glob("*.pkl"))) == n


def test_the_disk_memo_follows_the_compilation_cache_setting(tmp_path, monkeypatch):
    monkeypatch.undo()  # this module's own switch off, to read the real setting
    monkeypatch.setenv("EVALUATOR_COMPILATION_CACHE", "0")
    assert D.memo_dir() is None and not D.save("k", {"a": 1}) and D.load("k") is None
    monkeypatch.setenv("EVALUATOR_COMPILATION_CACHE", str(tmp_path / "cc"))
    assert D.memo_dir() == tmp_path / "cc" / D.SUBDIR
    assert D.save("k", {"a": 1}) and D.load("k") == {"a": 1}
    monkeypatch.setattr(D, "MAX_ENTRIES", 3)
    for i in range(5):
        assert D.save(f"e{i}", i)
    assert len(list(D.memo_dir().glob("*.pkl"))) == 3
