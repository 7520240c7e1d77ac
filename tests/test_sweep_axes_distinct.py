"""A sweep axis that gives one value twice is refused before anything runs.

``traffic.n_tasks=16,16,8`` used to evaluate the 16-task points twice and write a dataset whose
``traffic.n_tasks`` coordinate named two rows ``16`` (``--where``, ``.sel`` and the tables then mix them);
``[1.0e6, 1000000]`` did the same under two labels. A zip's columns may repeat (the buyer's study has the fat
tree twice, with two routings); its rows may not.
"""

from __future__ import annotations

import pytest

from evaluator import cli
from evaluator.errors import ConfigError
from evaluator.sweep.axes import expand_axes


@pytest.mark.parametrize("axes,field,text", [
    ({"traffic.n_tasks": [16, 16, 8]}, "sweep.axes.traffic.n_tasks", "Entries 0 and 1: '16' is given twice"),
    ({"traffic.bytes": [1.0e6, 2.0, 1000000]}, "sweep.axes.traffic.bytes",
     "Entries 0 and 2: '1e+06' and '1000000' are the same value"),
    ({"traffic.beta": [[8, 8, 4], [4, 8, 8], [8, 8, 4]]}, "sweep.axes.traffic.beta", "'8x8x4' is given twice"),
    ({"topology": [{"kind": "torus", "dims": [4, 4]}, {"dims": [4, 4], "kind": "torus"}]}, "sweep.axes.topology",
     "are the same value"),
    ({"s": {"zip": {"traffic.n_tasks": [8, 16, 8], "traffic.bytes": [1, 1, 1]}}}, "sweep.axes.s.zip",
     "Entries 0 and 2: 'n_tasks=8 bytes=1' is given twice"),
])
def test_a_repeated_value_is_refused(axes, field, text):
    with pytest.raises(ConfigError) as exc:
        expand_axes(axes)
    assert exc.value.field == field and text in str(exc.value), str(exc.value)


@pytest.mark.parametrize("axes,sizes", [
    ({"s": {"zip": {"traffic.n_tasks": [8, 8, 16], "traffic.bytes": [1, 2, 1]}}}, [3]),  # columns repeat, rows do not
    ({"traffic.bytes": [1, 1.5, 2]}, [3]),
    ({"placement.seed": {"range": [0, 1000]}, "routing": ["dor", "kshortest"]}, [1000, 2]),
    ({"traffic.n_tasks": [True, 1]}, [2]),  # a bool is not the number 1 to a config key
])
def test_distinct_values_pass(axes, sizes):
    assert [ax.size for ax in expand_axes(axes)] == sizes


def test_the_command_line_refuses_before_it_runs(tmp_path, capsys):
    rc = cli.main(["sweep", "topology=torus", "topology.dims=[4,4]", "routing=dor,dor", "traffic=all_to_all",
                   "placement=linear", f"sweep.output_dir={tmp_path}", "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 2 and "sweep.axes.routing = ['dor', 'dor'] is invalid: allowed is distinct values" in err, err
    assert not list(tmp_path.iterdir())
