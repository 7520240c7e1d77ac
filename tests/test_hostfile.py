"""Slurm's hostfile (``evaluator placement`` / ``evaluator map --write-hostfile FILE --hostnames FORMAT|FILE``), read
back here as Slurm reads it, not by the tool: ``slurm_read_hostfile`` (Slurm's ``src/api/allocate.c``) takes ``#``
to the end of a line as a comment, skips blank lines, splits a line at commas and reads ``NAME*K`` as ``NAME`` K
times; ``srun --distribution=arbitrary`` puts rank ``i`` on the ``i``-th name. Each rank must land on the node the
placement or mapping gives it, whatever the tasks per node (a partly filled node anywhere: aprun's files refuse
such a mapping, the hostfile launches it)."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

from evaluator import cli, config
from evaluator.errors import ConfigError
from evaluator.placement import explicit
from evaluator.placement.hostfile import hostfile_text, hostnames
from evaluator.topology import torus

T444 = ["topology=torus", "topology.dims=[4,4,4]", "routing=dor"]


def slurm_hosts(text: str) -> list[str]:
    """The host of every rank, as slurm_read_hostfile and srun -m arbitrary read the file."""
    out = []
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        assert line[0].isalnum(), line  # Slurm: "Invalid hostfile contents"
        for name in line.split(","):
            base, star, k = name.partition("*")
            out.extend([base] * (int(k) if star and int(k) else 1))
    return out


def _node_of(hosts: list[str], names: list[str]) -> np.ndarray:
    index = {n: i for i, n in enumerate(names)}
    return np.array([index[h] for h in hosts], np.int64)


@pytest.mark.parametrize("over,n_tasks", [
    ([*T444, "traffic=random_pairs", "traffic.n_tasks=30", "placement=alps", "placement.tasks_per_node=4"], 30),
    (["traffic=random_pairs", "traffic.n_tasks=37", "placement=random", "placement.tasks_per_node=2"], 37),
    (["topology=fat_tree", "topology.k=4", "topology.levels=3", "traffic=random_pairs", "traffic.n_tasks=11",
      "placement=random", "placement.tasks_per_node=3"], 11),
])
def test_every_rank_lands_on_its_node(over, n_tasks):
    point = config.build(config.to_object(config.compose(over)))
    names = hostnames("nid{:05d}", point.topology.n_nodes)
    text = hostfile_text(point.placement, names, header="a\nb")
    hosts = slurm_hosts(text)
    assert len(hosts) == n_tasks and text.startswith("# a\n# b\n")
    assert np.array_equal(_node_of(hosts, names), point.placement.task_node)
    assert names[42] == "nid00042"


def test_a_names_file_comments_blank_lines_and_refusals(tmp_path):
    f = tmp_path / "names"
    f.write_text("\ufeff# from scontrol show hostnames\nc001\n\nc002  # the second\nc003\nc004\n")
    assert hostnames(f, 4) == ["c001", "c002", "c003", "c004"]
    pl = explicit(torus([2, 2]), np.array([3, 3, 0, 2]), "hand")
    assert _node_of(slurm_hosts(hostfile_text(pl, hostnames(f, 4))), hostnames(f, 4)).tolist() == [3, 3, 0, 2]
    with pytest.raises(ConfigError, match=r"allowed is 5 host names, one per node .* It holds 4"):
        hostnames(f, 5)
    f.write_text("c001\nc002\nc001\nc004\n")
    with pytest.raises(ConfigError, match=r"names:3' is invalid: allowed is a name per node, none twice. 'c001' is on "
                                          r"line 1 too"):
        hostnames(f, 4)
    for bad in ("c 1", "c,1", "-c1", "c*2"):
        f.write_text(f"c0\n{bad}\nc2\nc3\n")
        with pytest.raises(ConfigError, match="--hostnames") as e:
            hostnames(f, 4)
        assert f"names:2' is invalid" in str(e.value) and f"{bad!r} is not one" in str(e.value), str(e.value)
    with pytest.raises(ConfigError, match="No such file"):
        hostnames(tmp_path / "absent", 4)
    with pytest.raises(ConfigError, match="Formatting node 0 failed"):
        hostnames("n{x}", 4)
    with pytest.raises(ConfigError, match="'n 0' is not one"):
        hostnames("n {}", 4)
    with pytest.raises(ConfigError, match="its own name"):
        hostnames("node{{}}", 4)  # (no field: every node 'node{}')


def test_map_writes_a_hostfile_where_aprun_files_are_refused(tmp_path, capsys):
    """32 tasks of a stencil at up to 3 a node: the mapping found (one task a node on 32 nodes) has many partly
    filled nodes, which aprun -N cannot launch; Slurm's hostfile launches it, rank for rank."""
    hf, launch = tmp_path / "hosts", tmp_path / "launch"
    args = ["map", *T444, "traffic=stencil", "traffic.beta=[2,4,4]", "traffic.alpha=[32,32,32]",
            f"output_dir={tmp_path / 'res'}", "--nodes", "0-63", "--tasks-per-node", "3", "--no-progress",
            "--iterations", "1", "--candidates", "64", "--write-hostfile", str(hf), "--hostnames", "nid{:05d}"]
    assert cli.main(args) == 0
    out = capsys.readouterr().out
    (path,) = [line.split(": ", 1)[1] for line in out.splitlines() if line.startswith("dataset: ")]
    with xr.open_dataset(path) as ds:
        found = ds.task_node.values.astype(np.int64)
    names = [f"nid{i:05d}" for i in range(64)]
    assert np.array_equal(_node_of(slurm_hosts(hf.read_text()), names), found)
    assert f"SLURM_HOSTFILE={hf} srun --distribution=arbitrary -n 32" in out
    from evaluator.mapping import launchable
    from evaluator.placement import launch_fill_order

    assert not launchable(found, 3, launch_fill_order(torus([4, 4, 4]))[1])  # aprun -N 3 cannot run it
    assert cli.main([*args, "--force", "--write-rank-order", str(launch)]) == 2
    assert "--write-hostfile" in capsys.readouterr().err and hf.exists() and not launch.exists()


def test_the_options_are_checked_before_anything_is_computed(tmp_path, capsys):
    over = [*T444, "traffic=random_pairs", "traffic.n_tasks=8", "placement=linear"]
    hf = tmp_path / "hosts"
    assert cli.main(["placement", *over, "--hostnames", "nid{:05d}"]) == 2
    assert "--hostnames = 'nid{:05d}' is invalid: allowed is with --write-hostfile" in capsys.readouterr().err
    assert cli.main(["map", *over, "save=false", "--write-hostfile", str(hf)]) == 2
    assert f"--write-hostfile = '{hf}' is invalid: allowed is with --hostnames" in capsys.readouterr().err
    assert cli.main(["placement", *over, "--write-hostfile", str(tmp_path), "--hostnames", "n{}"]) == 2
    assert "It is a directory" in capsys.readouterr().err
    assert cli.main(["placement", *over, "--write-hostfile", str(hf), "--hostnames", "n{}"]) == 0
    first = hf.read_text()
    assert slurm_hosts(first) == [f"n{i}" for i in range(8)]
    assert cli.main(["placement", *over, "--write-hostfile", str(hf), "--hostnames", "m{}"]) == 2
    assert "It exists; choose another path, or add --force" in capsys.readouterr().err and hf.read_text() == first
    assert cli.main(["placement", *over, "--write-hostfile", str(hf), "--hostnames", "m{}", "--force"]) == 0
    assert slurm_hosts(hf.read_text()) == [f"m{i}" for i in range(8)]
    assert cli.main(["map", *over, "save=false", "--write-hostfile", str(tmp_path / "h2"), "--hostnames",
                     str(tmp_path / "absent")]) == 2
    assert "--hostnames" in capsys.readouterr().err and not (tmp_path / "h2").exists()
