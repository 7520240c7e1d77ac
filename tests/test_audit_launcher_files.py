"""The launcher's files (``MPICH_RANK_ORDER`` for ``MPICH_RANK_REORDER_METHOD=3`` and ``node_list`` for ``aprun
-L``) as a job launcher reads them, and as ``evaluator map --start`` / ``--nodes`` read them back.

The launcher is simulated here on its own terms, not by the tool's reader: MPICH reads the file's ranks as one list
(commas, ranges ``a-b``, ``#`` comments; its lines do not matter) and puts them, in order, in the slots of the nodes
ALPS fills ``-N`` at a time, in ALPS's own order of the listed nodes on a 3-D torus (the project's model,
``docs/gemini.md``), by ascending id elsewhere.
"""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

from evaluator import cli, config
from evaluator.errors import ConfigError
from evaluator.mapping import parse_node_ids, read_start_file
from evaluator.placement import alps_order
from evaluator.topology import torus

T444 = ["topology=torus", "topology.dims=[4,4,4]", "routing=dor"]


def _ids(text: str) -> list[int]:
    out = []
    for part in text.replace("\n", ",").split(","):
        part = part.split("#", 1)[0].strip()
        if part:
            lo, _, hi = part.partition("-")
            out.extend(range(int(lo), int(hi or lo) + 1))
    return out


def _launched(directory, topology, tpn: int) -> np.ndarray:
    """The node of every rank as aprun + MPICH place it from ``directory``'s two files."""
    text = (directory / "MPICH_RANK_ORDER").read_text()
    ranks = _ids("\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#")))
    nodes = np.asarray(_ids((directory / "node_list").read_text()), np.int64)
    if getattr(topology, "ndim", 0) == 3:  # ALPS fills the listed nodes in its own order
        pos = np.empty(topology.n_nodes, np.int64)
        pos[alps_order(topology)] = np.arange(topology.n_nodes)
        nodes = nodes[np.argsort(pos[nodes], kind="stable")]
    assert len(ranks) == len(set(ranks)) and len(ranks) <= nodes.size * tpn
    task_node = np.full(len(ranks), -1, np.int64)
    for slot, rank in enumerate(ranks):
        task_node[rank] = nodes[slot // tpn]
    return task_node


def _point(over):
    return config.build(config.to_object(config.compose(over)))


PLACEMENTS = {  # several machines, several tasks per node, a partial last node
    "alps 30 on 4x4x4, 4 a node": [*T444, "traffic=random_pairs", "traffic.n_tasks=30", "placement=alps",
                                   "placement.tasks_per_node=4"],
    "alps grid_order 4x4x4": [*T444, "traffic=random_pairs", "traffic.n_tasks=30", "placement=alps",
                              "placement.tasks_per_node=4", "placement.rank_order.method=grid_order",
                              "placement.rank_order.grid=[5,6]", "placement.rank_order.cell=[1,2]"],
    "linear 37 on DF, 2 a node": ["traffic=random_pairs", "traffic.n_tasks=37", "placement=linear",
                                  "placement.tasks_per_node=2"],
    "random 11 on a fat tree": ["topology=fat_tree", "topology.k=4", "topology.levels=3", "traffic=random_pairs",
                                "traffic.n_tasks=11", "placement=random", "placement.tasks_per_node=3"],
}


@pytest.mark.parametrize("name,fill", [(n, None) for n in PLACEMENTS] + [(n, "id") for n in PLACEMENTS if "4x4x4" in n])
def test_placement_files_launch_and_read_back_as_the_placement(name, fill, tmp_path, capsys):
    """``evaluator placement --write-rank-order``: the launcher puts every rank on its placement's node, and
    ``--start FILE`` and ``--nodes node_list`` read the same mapping and nodes back (``--fill id`` on the 3-D
    torus too: id is the only order elsewhere)."""
    over = PLACEMENTS[name]
    d = tmp_path / "launch"
    assert cli.main(["placement", *over, "--write-rank-order", str(d), *(["--fill", fill] if fill else [])]) == 0
    capsys.readouterr()
    point = _point(over)
    topo, tn = point.topology, point.placement.task_node
    tpn = int(np.bincount(tn).max())
    if fill is None:  # a launcher filling in id order reads an id-order file the same way
        assert np.array_equal(_launched(d, topo, tpn), tn)
    start = read_start_file(d / "MPICH_RANK_ORDER", topo, tn.size, np.arange(topo.n_nodes), tpn)
    assert np.array_equal(start.task_node, tn)
    assert parse_node_ids((d / "node_list").read_text()).tolist() == np.unique(tn).tolist()


@pytest.mark.parametrize("n_tasks,tpn", [(16, 1), (32, 4)])
def test_map_files_are_filled_in_alps_order_on_a_3d_torus(n_tasks, tpn, tmp_path, capsys):
    """``evaluator map --write-rank-order`` on a 3-D torus wrote its lines in id order, with no ``# fill:`` line,
    where ALPS fills the listed nodes in its own order (as ``evaluator placement`` writes them): the launcher put
    the ranks on other nodes than the mapping found. Now the lines follow ALPS's order and say so; with 4 tasks a
    node and full nodes (32 tasks on 8 nodes) too. Both read back through ``--start`` as found."""
    d = tmp_path / "launch"
    over = [*T444, "traffic=random_pairs", f"traffic.n_tasks={n_tasks}"]
    rc = cli.main(["map", *over, f"output_dir={tmp_path / 'res'}", "--nodes", f"0-{n_tasks - 1}", "--tasks-per-node",
                   str(tpn), "--no-progress", "--iterations", "1", "--candidates", "64", "--write-rank-order", str(d)])
    out = capsys.readouterr().out
    assert rc == 0
    (path,) = [line.split(": ", 1)[1] for line in out.splitlines() if line.startswith("dataset: ")]
    with xr.open_dataset(path) as ds:
        found = ds.task_node.values.astype(np.int64)
    topo = torus([4, 4, 4])
    assert np.array_equal(_launched(d, topo, tpn), found)
    assert "# fill: alps" in (d / "MPICH_RANK_ORDER").read_text()
    start = read_start_file(d / "MPICH_RANK_ORDER", topo, n_tasks, np.arange(n_tasks), tpn)
    assert np.array_equal(start.task_node, found)


def test_a_rank_order_with_lines_shorter_than_a_node_is_not_read_as_another_mapping(tmp_path):
    """MPICH fills the nodes ``-N`` ranks at a time whatever the file's lines (Cray's ``grid_order -n`` sets the
    ranks per line apart from the ranks per node). A file of two ranks a line read at 4 tasks per node was taken
    as 2 ranks on each of 16 nodes, in silence, where the launcher puts 4 on each of 8. Now it is the launcher's
    mapping or an error naming the line."""
    topo = torus([4, 4, 4])
    f = tmp_path / "MPICH_RANK_ORDER"
    f.write_text("# grid_order -R -g 8,4 -c 1,2 -n 2\n" + "\n".join(f"{2 * i},{2 * i + 1}" for i in range(16)) + "\n")
    launcher = np.arange(32) // 4  # the first 8 available nodes, 4 ranks each
    try:
        got = read_start_file(f, topo, 32, np.arange(64), 4).task_node
    except ConfigError as e:
        assert e.field == "--start" and e.value == str(f)
        assert "Line 2 holds 2" in str(e) and "4 ranks (--tasks-per-node) on every line but the last" in str(e)
    else:
        assert np.array_equal(got, launcher)
    # one rank a line (a hand-written order) at 4 a node: the same
    f.write_text("\n".join(map(str, range(32))) + "\n")
    with pytest.raises(ConfigError, match="Line 1 holds 1"):
        read_start_file(f, topo, 32, np.arange(64), 4, kind="rank_order")
    # a short last line is a partial last node, as aprun runs it
    f.write_text("0-3\n4-7\n8,9\n")
    assert read_start_file(f, topo, 10, np.arange(64), 4).task_node.tolist() == [0] * 4 + [1] * 4 + [2] * 2


def test_the_search_keeps_its_partly_filled_node_last_in_alps_order(tmp_path):
    """With several tasks per node on a 3-D torus the search kept the node of *highest id* partly filled, while ALPS
    fills the listed nodes in its own order: a search from the id-order start (32 tasks, 3 a node: 10 full nodes
    and node 10 with 2) gave a mapping ``--write-rank-order`` had to refuse. Now the search keeps the node ALPS
    fills last partly filled (it begins from the start with that node's tasks and the ALPS-last node's
    exchanged), and the files it writes put every rank where the mapping says, read by the launcher's rules."""
    from evaluator import routing, traffic
    from evaluator.mapping import Start, launchable, search_mapping

    topo = torus([4, 4, 4])
    tr = traffic.stencil([32, 32, 32], [2, 4, 4], 8.0)
    pos = np.empty(topo.n_nodes, np.int64)
    pos[alps_order(topo)] = np.arange(topo.n_nodes)
    id_order = Start("id order", np.arange(32) // 3)
    assert launchable(id_order.task_node, 3) and not launchable(id_order.task_node, 3, pos)
    r = search_mapping(topo, tr, routing.dor(), tasks_per_node=3, starts=[id_order], time_budget=60,
                       max_iterations=4, seed=0, candidates=64, progress=False)
    counts = np.bincount(r.task_node, minlength=topo.n_nodes)
    used = np.flatnonzero(counts)
    last = used[np.argmax(pos[used])]  # the used node ALPS fills last: the only one with fewer than 3
    assert counts[last] == 2 and (np.delete(counts[used], np.searchsorted(used, last)) == 3).all(), counts[used]
    assert r.launchable and r.fill == "alps" and r.completion_time <= r.starts["id order"] * (1 + 1e-12)
    r.write_launch_files(tmp_path)
    assert "# fill: alps" in (tmp_path / "MPICH_RANK_ORDER").read_text()
    assert np.array_equal(_launched(tmp_path, topo, 3), r.task_node)
    # in id order (a launcher that fills by ascending id, --fill id) the search keeps node 10 partly filled
    r_id = search_mapping(topo, tr, routing.dor(), tasks_per_node=3, starts=[id_order], time_budget=60,
                          max_iterations=4, seed=0, candidates=64, progress=False, fill="id")
    assert r_id.launchable and launchable(r_id.task_node, 3) and r_id.fill == "id"
    with pytest.raises(ConfigError, match="mapping.fill = 'hilbert' is invalid: allowed is alps, id or None"):
        search_mapping(topo, tr, routing.dor(), tasks_per_node=3, starts=[id_order], fill="hilbert",
                       time_budget=1, max_iterations=1, progress=False)
