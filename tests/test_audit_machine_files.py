"""An HPC centre describing its own machine: its YAML files (copies of catalogue files, varied) read as the
README and docs/gemini.md say, every wrong value refused naming the file, the key path, the value and what is
allowed (audit of how machine files are read)."""

from pathlib import Path

import pytest
import yaml

from evaluator import cli, machines as M
from evaluator.errors import MachineError
from evaluator.topology import machine_topology

CATALOGUE = Path(M.builtin_machine_dir())


def _file(name: str, **changes) -> dict:
    """A catalogue machine file as a mapping, with keys changed (None: dropped)."""
    data = yaml.safe_load((CATALOGUE / f"{name}.yaml").read_text())
    for k, v in changes.items():
        if v is None:
            data.pop(k, None)
        else:
            data[k] = v
    return data


def _refused(data: dict, tmp_path: Path, *needles: str) -> str:
    path = tmp_path / "ours.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(MachineError) as exc:
        M.load_machine(path)
    msg = str(exc.value)
    for n in (str(path), *needles):
        assert n in msg, msg
    return msg


def test_a_user_file_overrides_the_catalogue_machine_whatever_its_file_name(tmp_path, monkeypatch):
    """README: directories of $EVALUATOR_MACHINE_PATH are searched first, so a user file overrides a built-in
    machine of the same name. Before: load_machine('Mira') took conf/machine/mira.yaml (named after the machine)
    and ignored the centre's own file, which list_machines and the catalogue took."""
    (tmp_path / "our_bgq.yaml").write_text(yaml.safe_dump(_file("mira", link_bandwidth=1.0e9)))
    monkeypatch.setenv(M.MACHINE_PATH_ENV, str(tmp_path))
    with pytest.warns(M.MachineOverrideWarning):  # (said since: the test below)
        m = M.load_machine("Mira")
    assert m.source == str(tmp_path / "our_bgq.yaml") and m.link_bandwidth[0] == 1.0e9
    assert M.load_machine("titan").source == str(CATALOGUE / "titan.yaml")  # the others: the catalogue's


def test_a_misspelt_or_wrong_latency_key_is_refused_when_the_file_is_read(tmp_path):
    """The latency block was only checked once a latency model was asked for: a file with latency.rooter, a
    negative router time or a latency.enabled (a run's switch, ignored in a file) loaded silently."""
    lat = _file("mira")["latency"]
    _refused(_file("mira", latency={**lat, "rooter": 4.0e-8}), tmp_path, "latency.rooter", "Did you mean 'router'")
    _refused(_file("mira", latency={**lat, "router": -4.0e-8}), tmp_path, "latency.router", "seconds >= 0")
    _refused(_file("mira", latency={**lat, "send_overhead": "1us"}), tmp_path, "latency.send_overhead")
    _refused(_file("mira", latency={**lat, "enabled": False}), tmp_path, "latency.enabled",
             "topology.latency.enabled")
    assert M.load_machine("Mira").latency is not None  # the catalogue's blocks pass


def test_a_latency_block_inside_the_topology_block_is_refused_not_ignored(tmp_path):
    """A kind-topology machine built its network without topology.latency: the block was silently dropped,
    with and without topology.latency.enabled."""
    fly = _file("theta", latency=None)
    fly["topology"]["latency"] = {"router": 5.0e-7}
    _refused(fly, tmp_path, "topology.latency", "top-level latency block")
    fly["topology"]["latency"] = {"router": None}  # (an all-null block, as a copied topology config has)
    path = tmp_path / "fly.yaml"
    path.write_text(yaml.safe_dump(fly))
    assert machine_topology(M.load_machine(path)).n_nodes == 4608


def test_a_torus_machine_s_allowed_partitions_and_slabs_fit_in_its_dimension_order(tmp_path):
    """A torus machine's partitions are not rotated for you (Titan 25x16x24: Y is 16 routers). Before, an
    allowed partition [16, 25, 24] loaded (it fits in some rotation) and then never matched any partition
    (``partitions --size 9600``: "allowed list: no geometry of this size"); a slab [16, 25, 24] was refused only
    by ``partitions --slabs``, without the file or the key."""
    msg = _refused(_file("titan", allowed_partitions=[[16, 25, 24]]), tmp_path, "allowed_partitions[0]",
                   "[16, 25, 24]", "25x16x24 routers in the machine's dimension order")
    assert "rotation 25x16x24 fits" in msg
    _refused(_file("titan", slabs=[[25, 16, 12], [16, 25, 24]]), tmp_path, "slabs[1]", "dimension order")
    bgq = _file("mira", allowed_partitions=[[1, 1, 1, 4]])  # Blue Gene/Q midplane cuboids: any rotation
    assert M.machine_from_dict(bgq).allowed_set() == {(4, 1, 1, 1)}


def test_node_classes_that_share_routers_are_refused(tmp_path):
    """A router's nodes are of one class; a later region silently took over an earlier one's routers (XK2 over
    all of XK: XK had no router left)."""
    bw = _file("bluewaters")
    xk = bw["node_classes"][0]
    _refused(_file("bluewaters", node_classes=[xk, dict(xk, name="XK2")]), tmp_path, "node_classes[1]",
             "node_classes[0] ('XK') holds router [9, 18, 0]")
    # wrapping around the torus: x 20..3 meets x 0..1 at x 0
    a = {"name": "A", "offset": [20, 0, 0], "shape": [8, 1, 1]}
    _refused(_file("bluewaters", node_classes=[a, {"name": "B", "offset": [0, 0, 0], "shape": [2, 1, 1]}]),
             tmp_path, "node_classes[1]", "holds router [0, 0, 0]")
    apart = _file("bluewaters", node_classes=[a, {"name": "B", "offset": [4, 0, 0], "shape": [2, 1, 1]}])
    names, code = M.machine_from_dict(apart).router_classes()
    assert names[:3] == ("XE", "A", "B")


def test_reserved_class_names_are_refused_in_any_case(tmp_path):
    """'service' and 'down' are refused as class names; 'Service' and 'Down' loaded (every other name
    comparison of the file ignores case), giving two classes read alike."""
    xk = _file("bluewaters")["node_classes"][0]
    _refused(_file("bluewaters", node_classes=[dict(xk, name="Service")]), tmp_path, "node_classes[0].name",
             "'Service'")
    _refused(_file("bluewaters", default_class="Down"), tmp_path, "default_class", "'Down'")


def test_a_region_offset_outside_the_machine_names_its_key_path(tmp_path):
    """Before: ``node_classes[0].offset[0] = [24, 0, 0]`` (the whole offset under an index of it)."""
    xk = _file("bluewaters")["node_classes"][0]
    msg = _refused(_file("bluewaters", node_classes=[dict(xk, offset=[24, 0, 0])]), tmp_path,
                   "node_classes[0].offset = [24, 0, 0] is invalid")
    assert "offset[0]" not in msg
    feat = {"name": "f", "offset": [0, 0, 30], "shape": [1, 1, 1]}
    _refused(_file("bluewaters", features=[feat]), tmp_path, "features[0].offset = [0, 0, 30] is invalid")


def test_a_figure_in_another_unit_is_warned_of_and_the_catalogue_is_quiet(tmp_path):
    """Titan's links written in GB/s (9.375 for 9.375e9) or a router latency in ns (79 for 7.9e-8) loaded in
    silence and gave times a billion times off. A figure below 1 MB/s or above 1 ms is now warned of, naming the
    file, the key and the unit, and used as given; no catalogue machine is warned of."""
    import warnings

    from evaluator.machines.base import MachineUnitWarning

    data = _file("titan", link_bandwidth=[9.375, 4.6875, 9.375])
    data["name"] = "OurTitan"
    data["latency"]["router"] = 79
    path = tmp_path / "ours.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.warns(MachineUnitWarning) as got:
        m = M.load_machine(path)
    text = [str(w.message) for w in got]
    assert any(f"({path}): link_bandwidth = [9.375, 4.6875, 9.375] is below 1e+06 bytes/s" in t for t in text), text
    assert any("latency.router = 79 is above 1e-03 s: machine files give seconds" in t for t in text), text
    assert m.link_bandwidth == (9.375, 4.6875, 9.375)  # used as given
    with warnings.catch_warnings():
        warnings.simplefilter("error", MachineUnitWarning)
        for f in sorted(CATALOGUE.glob("*.yaml")):
            M.load_machine(f)


def test_the_commands_word_the_evaluators_own_warnings_on_one_line():
    """A machine file's or a trace's warning was printed as Python's 'FILE:LINE: Category: ...' plus a line of the
    evaluator's source; the commands now print it as they print errors: 'evaluator CMD: warning: ...'."""
    import warnings

    import evaluator.machines.base as base
    from evaluator.cli import _own_warnings_worded

    saved = warnings.formatwarning
    try:
        _own_warnings_worded("partitions")
        _own_warnings_worded("eval")  # (installed once: the command of the latest call words it)
        line = warnings.formatwarning("x is odd", UserWarning, base.__file__, 12)
        other = warnings.formatwarning("y", UserWarning, warnings.__file__, 3)
    finally:
        warnings.formatwarning = saved
    assert line == "evaluator eval: warning: x is odd\n"
    assert other.startswith(warnings.__file__) and "UserWarning: y" in other


def test_only_the_machine_loaded_is_warned_of_and_its_size_refusal_names_its_file(tmp_path, monkeypatch):
    """Loading one machine searches every file of the directory: another file's figures are not warned of (only
    the machine loaded). A machine too large for memory was refused as 'topology.dims = ...', a key the user
    never set; it now names the machine, its file and its key."""
    import warnings

    from evaluator.errors import ResourceError
    from evaluator.machines.base import MachineUnitWarning

    odd = _file("titan", link_bandwidth=9.375)
    odd["name"] = "OddTitan"
    huge = _file("titan", dims=[1000, 1000, 1000])
    huge["name"] = "HugeTorus"
    (tmp_path / "odd.yaml").write_text(yaml.safe_dump(odd))
    (tmp_path / "huge.yaml").write_text(yaml.safe_dump(huge))
    monkeypatch.setenv("EVALUATOR_MACHINE_PATH", str(tmp_path))
    with warnings.catch_warnings():
        warnings.simplefilter("error", MachineUnitWarning)
        assert M.load_machine("HugeTorus").name == "HugeTorus"  # (odd.yaml read in the search, not warned of)
        with pytest.raises(ResourceError, match=rf"^machine 'HugeTorus' \({tmp_path / 'huge.yaml'}\): dims = "
                                                r"\[1000, 1000, 1000\] is invalid: allowed is a size that fits"):
            machine_topology("HugeTorus", None)
    with pytest.warns(MachineUnitWarning, match="OddTitan"):
        M.load_machine("OddTitan")


def test_a_user_file_that_overrides_a_catalogue_machine_is_said(tmp_path, monkeypatch, capsys):
    """A centre's own 'Mira' (1 GB/s links) took the catalogue's place in silence: every number of a command then
    differed from those the documents state for Mira, and nothing in the output said which file gave them. Now
    loading it by name warns, naming both files; the catalogue's own machines, a file given by its path and a user
    machine of a new name stay quiet."""
    import warnings

    (tmp_path / "our_bgq.yaml").write_text(yaml.safe_dump(_file("mira", link_bandwidth=1.0e9)))
    new = _file("titan")
    new["name"] = "OurTitan"
    (tmp_path / "ours.yaml").write_text(yaml.safe_dump(new))
    monkeypatch.setenv(M.MACHINE_PATH_ENV, str(tmp_path))
    with pytest.warns(M.MachineOverrideWarning) as got:
        assert M.load_machine("mira").link_bandwidth[0] == 1.0e9
    (text,) = [str(w.message) for w in got]
    assert f"machine 'Mira' is read from {tmp_path / 'our_bgq.yaml'} ($EVALUATOR_MACHINE_PATH)" in text, text
    assert f"overrides the catalogue's {CATALOGUE / 'mira.yaml'}" in text, text
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        M.load_machine("titan"), M.load_machine("OurTitan"), M.load_machine(tmp_path / "our_bgq.yaml")
    with pytest.warns(M.MachineOverrideWarning, match="machine 'Mira' is read from"):  # (a command's load too)
        assert cli.main(["partitions", "mira", "--size", "512", "--no-plot", "--out", str(tmp_path / "out")]) == 0
    assert "link bandwidth 1.000, 1.000, 1.000, 1.000, 1.000 GB/s" in capsys.readouterr().out
