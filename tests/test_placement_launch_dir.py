"""``evaluator placement --write-rank-order DIR``: the docs' ``launch/`` is ignored by git, and a directory inside
the checkout that git does not ignore gets a note (the files would show in ``git status``)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
CONFIG = ["topology=torus", "topology.dims=[2,2]", "traffic=all_to_all", "traffic.n_tasks=4", "placement=linear",
          "routing=dor"]


def _git(*args, cwd):
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=30)


@pytest.mark.skipif(not (ROOT / ".git").exists(), reason="not a git checkout")
def test_the_docs_launch_dir_is_ignored_by_git():
    # the README, docs/gemini.md and the stencil tutorial write --write-rank-order launch/ from the checkout
    assert _git("check-ignore", "-q", "launch/MPICH_RANK_ORDER", cwd=ROOT).returncode == 0
    assert _git("check-ignore", "-q", "launch/node_list", cwd=ROOT).returncode == 0


def test_a_directory_git_does_not_ignore_gets_a_note(tmp_path, monkeypatch, capsys):
    from evaluator import cli
    from evaluator.cli import placement

    repo = tmp_path / "clone"  # a checkout with the project's .gitignore
    repo.mkdir()
    assert _git("init", "-q", cwd=repo).returncode == 0
    shutil.copy(ROOT / ".gitignore", repo / ".gitignore")
    monkeypatch.setattr(placement, "repo_dir", lambda: repo)
    monkeypatch.chdir(repo)
    assert cli.main(["placement", *CONFIG, "--write-rank-order", "launch/"]) == 0
    out = capsys.readouterr().out
    assert "note:" not in out and (repo / "launch" / "MPICH_RANK_ORDER").is_file()
    assert _git("status", "--porcelain", "launch", cwd=repo).stdout == ""
    assert cli.main(["placement", *CONFIG, "--write-rank-order", "mine"]) == 0
    out = capsys.readouterr().out
    assert f"note: mine/ is inside the checkout {repo.resolve()} and git does not ignore it" in out
    assert "mine/" in _git("status", "--porcelain", cwd=repo).stdout
    assert cli.main(["placement", *CONFIG, "--write-rank-order", str(tmp_path / "outside")]) == 0
    assert "note:" not in capsys.readouterr().out  # outside the checkout: nothing to say
