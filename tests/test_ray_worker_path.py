"""A local Ray's workers find this source tree through the driver's environment (``evaluator.sweep.driver
._worker_path``): first on ``PYTHONPATH`` while Ray starts, the user's entries after it, and the driver's own
environment as it was afterwards, whatever happens in between. A cluster given by address is left alone (its
workers get the package as a ``runtime_env``)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from evaluator.sweep import driver

TREE = str(Path(driver.__file__).resolve().parents[2])


@pytest.mark.parametrize("before", [None, "", "/opt/a" + os.pathsep + "/opt/b"])
def test_the_tree_comes_first_while_ray_starts_and_the_environment_is_restored(monkeypatch, before):
    if before is None:
        monkeypatch.delenv("PYTHONPATH", raising=False)
    else:
        monkeypatch.setenv("PYTHONPATH", before)
    with driver._worker_path(True):
        inside = os.environ["PYTHONPATH"].split(os.pathsep)
    assert inside[0] == TREE
    assert inside[1:] == (before.split(os.pathsep) if before else [])
    assert os.environ.get("PYTHONPATH") == before


def test_restored_when_ray_fails_to_start(monkeypatch):
    monkeypatch.setenv("PYTHONPATH", "/opt/a")
    with pytest.raises(RuntimeError, match="no cluster"), driver._worker_path(True):
        raise RuntimeError("no cluster")
    assert os.environ["PYTHONPATH"] == "/opt/a"


def test_a_cluster_by_address_keeps_the_environment(monkeypatch):
    monkeypatch.setenv("PYTHONPATH", "/opt/a")
    with driver._worker_path(False):
        assert os.environ["PYTHONPATH"] == "/opt/a"
    assert os.environ["PYTHONPATH"] == "/opt/a"
