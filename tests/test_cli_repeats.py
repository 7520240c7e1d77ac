"""No option of a command is silently reduced to its last occurrence (issue 34, "every repeated option
accumulates or is refused").

``evaluator query ... --where routing=minimal --where traffic.beta=16x8x8`` dropped the first ``--where`` and
ranked a Valiant row first. Options where several values make sense (``query --where/--over``, ``partitions
--size/--compare``, ``bench --only``) accumulate; every other option refuses a second occurrence with another
value (exit status 2, one line naming the option and both values); a repeat with the same value means the same
and is kept. (Hydra overrides keep Hydra's rule, the last of a key wins: command lines are built as a base plus
changes, ``$E eval $B routing=kshortest``.) The audit covers every parser of the commands: each one is built here
and every single-valued option is given twice.
"""

from __future__ import annotations

import argparse
import importlib

import numpy as np
import pytest
import xarray as xr

from evaluator import cli
from evaluator._args import ArgumentParser, StoreOnce, override_key
from evaluator.errors import ConfigError


@pytest.fixture
def dataset(tmp_path):
    """Valiant is fastest on 16x8x8; minimal on 16x8x8 is the row asked for."""
    ds = xr.Dataset({"completion_time": (("routing", "traffic.beta"), np.array([[3.0e-3, 1.0e-3], [2.0e-3, 0.5e-3]]),
                                         {"units": "s"})},
                    coords={"routing": ["minimal", "valiant"], "traffic.beta": ["8x8x4", "16x8x8"]})
    path = tmp_path / "d.nc"
    ds.to_netcdf(path)
    return path


def _rows(out: str) -> list[str]:
    return [line for line in out.splitlines() if line.strip()[:1].isdigit()]


def test_two_where_options_both_restrict(dataset, capsys):
    # before: the first --where was dropped, and the Valiant row (0.5 ms) ranked first
    assert cli.main(["query", str(dataset), "--where", "routing=minimal", "--where", "traffic.beta=16x8x8"]) == 0
    rows = _rows(capsys.readouterr().out)
    assert len(rows) == 1 and "minimal" in rows[0] and "16x8x8" in rows[0], rows


def test_where_on_one_axis_twice_is_any_of_its_labels(dataset, capsys):
    assert cli.main(["query", str(dataset), "--where", "routing=minimal", "--where", "routing=valiant",
                     "--where", "traffic.beta=8x8x4"]) == 0
    rows = _rows(capsys.readouterr().out)
    assert len(rows) == 2 and "valiant" in rows[0] and "minimal" in rows[1], rows


def test_over_accumulates(dataset, capsys):
    printed = []
    for args in (["--over", "routing", "--over", "traffic.beta"], ["--over", "routing", "traffic.beta"],
                 ["--over", "traffic.beta"]):
        assert cli.main(["query", str(dataset), *args]) == 0
        printed.append(capsys.readouterr().out)
    assert printed[0] == printed[1] != printed[2]  # before: the first equalled the last (--over traffic.beta)


def test_single_valued_option_twice_is_refused_naming_both(dataset, capsys):
    assert cli.main(["query", str(dataset), "-n", "3", "--top", "5"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--top" in err and "-n 3" in err and "--top 5" in err, err
    assert cli.main(["query", str(dataset), "-n", "1", "-n", "1"]) == 0  # the same value again: the same


def test_override_key():
    assert [override_key(o) for o in ("+a.b=1", "++a.b=2", "~c", "g@p=x", "--flag", "sweeps=x")] == \
        ["a.b", "a.b", "c", "g@p", None, "sweeps"]


# every parser of the commands: (module, how to build it, arguments that make it parse without other errors)
PARSERS = ["bench", "evaluate", "mapping", "optimize", "partitions", "placement", "plot", "query", "runs",
           "schedule", "sweep", "tiles"]


def _parsers(monkeypatch) -> dict[str, argparse.ArgumentParser]:
    """Each command's parser, caught as its ``main`` calls ``parse_*args`` (nothing runs)."""
    caught: dict[str, argparse.ArgumentParser] = {}

    class Stop(Exception):
        pass

    def grab(self, *a, **k):
        caught[self.prog] = self
        raise Stop

    for name in ("parse_args", "parse_intermixed_args", "parse_known_args"):
        monkeypatch.setattr(ArgumentParser, name, grab)
    for name in PARSERS:
        module = importlib.import_module(f"evaluator.cli.{name}")
        with pytest.raises(Stop):
            module.main(["x"])
    from evaluator.studies import rdn

    with pytest.raises(Stop):
        rdn.main([])
    monkeypatch.undo()
    return caught


def test_every_command_refuses_or_accumulates_every_repeated_option(monkeypatch):
    parsers = _parsers(monkeypatch)
    assert len(parsers) == len(PARSERS) + 1
    kinds = (StoreOnce, argparse._StoreTrueAction, argparse._ExtendAction, argparse._HelpAction)
    for prog, p in parsers.items():
        assert isinstance(p, ArgumentParser), prog
        for action in p._actions:
            if action.option_strings:
                assert isinstance(action, kinds), (prog, action.option_strings, type(action).__name__)
                if isinstance(action, StoreOnce) and action.nargs is None and not action.choices:
                    # the option twice, with two values: refused before anything else is read
                    opt = action.option_strings[-1]
                    with pytest.raises(ConfigError, match="given twice"):
                        p.parse_known_args([opt, "1", opt, "2"])
                elif isinstance(action, argparse._StoreAction):  # nargs="+" / "*" must be extend
                    assert action.nargs is None, (prog, action.option_strings)
