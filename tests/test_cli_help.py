"""Every CLI command answers ``--help`` with its usage and options, exit status 0, without computing anything
(issue 36 item 5), and so does every named study of ``evaluator study``."""

from __future__ import annotations

import subprocess
import sys

import pytest

from evaluator import cli


def _help(capsys, argv: list[str]) -> tuple[int, str]:
    try:
        rc = cli.main(argv)
    except SystemExit as exc:  # argparse's --help exits (the console command turns it into its exit status)
        rc = exc.code or 0
    cap = capsys.readouterr()
    return int(rc), cap.out + cap.err


@pytest.mark.parametrize("command", sorted(cli.COMMANDS))
def test_every_command_answers_help(capsys, command):
    rc, out = _help(capsys, [command, "--help"])
    assert rc == 0, out
    assert out.startswith(f"usage: evaluator {command}"), out[:200]
    assert len(out.splitlines()) >= 3, out  # the usage and the options, not a bare line


def test_every_study_answers_help(capsys):
    from evaluator.studies import STUDIES

    assert STUDIES
    for name in STUDIES:
        rc, out = _help(capsys, ["study", name, "--help"])
        assert rc == 0 and "usage:" in out and name in out, (name, out[:200])


def test_the_console_command_lists_every_command():
    out = subprocess.run([sys.executable, "-m", "evaluator", "--help"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    for command in cli.COMMANDS:
        assert f"  {command} " in out.stdout, command
