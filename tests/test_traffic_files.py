"""``traffic=file``: docs/traffic_files.md runs as written, every example printing the output the document shows;
task ids that are fractions or negative are refused naming the line or entry, the column, the value and the fix.

The document's grammar: a ``bash`` block runs in ``bash`` (in a fresh directory, this environment's ``bin/`` first on
``PATH``); a ``console`` block is commands (``$ `` first, ``\\`` continuing a line), each followed by the output it
prints (stdout, then stderr), compared line by line. ``EVALUATOR_DOCS_REGEN=1`` writes the outputs into the
document instead (for its authors).
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from evaluator.errors import ConfigError
from evaluator.traffic import from_file

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "traffic_files.md"
_FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```[ \t]*$", re.M | re.S)


def _console(text: str) -> list[tuple[str, list[str], list[str]]]:
    """``[(command, its lines as written, expected output lines)]`` of a console block."""
    out = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        assert line.startswith("$ "), f"{DOC.name}: console block line {line!r} belongs to no command"
        written, cmd = [line], line[2:]
        while cmd.endswith("\\"):
            i += 1
            written.append(lines[i])
            cmd = cmd[:-1] + lines[i].strip()
        i += 1
        expected = []
        while i < len(lines) and not lines[i].startswith("$ "):
            expected.append(lines[i].rstrip())
            i += 1
        out.append((cmd, written, expected))
    return out


def _run_evaluator(cmd: str) -> tuple[int, list[str]]:
    from evaluator import cli

    argv = shlex.split(cmd)
    assert argv[0] == "evaluator", cmd
    o, e = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(o), contextlib.redirect_stderr(e):
        rc = cli.main(argv[1:])
    return rc, [ln.rstrip() for ln in (o.getvalue() + e.getvalue()).splitlines()]


def test_the_document_runs_as_written(tmp_path, monkeypatch):
    text = DOC.read_text()
    monkeypatch.chdir(tmp_path)
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    regen = bool(os.environ.get("EVALUATOR_DOCS_REGEN"))
    new_text, pos, n_commands = [], 0, 0
    for m in _FENCE.finditer(text):
        lang, body = m.group(1), m.group(2)
        if lang == "bash":
            r = subprocess.run(["bash", "-e", "-c", body], cwd=tmp_path, env=env, capture_output=True, text=True,
                               timeout=120)
            assert r.returncode == 0, f"{DOC.name}: {body!r} failed: {r.stderr}"
        elif lang == "console":
            rebuilt = []
            for cmd, written, expected in _console(body):
                rc, got = _run_evaluator(cmd)
                n_commands += 1
                refused = any(ln.startswith("evaluator eval: error:") for ln in (got if regen else expected))
                assert rc == (2 if refused else 0), (cmd, got)
                if not regen:
                    assert got == expected, f"{DOC.name}: {cmd}\nprints\n" + "\n".join(got)
                rebuilt += written + got
            if regen:
                new_text += [text[pos:m.start(2)], "\n".join(rebuilt) + "\n"]
                pos = m.end(2)
    if regen:
        DOC.write_text("".join(new_text) + text[pos:])
    assert n_commands >= 12


@pytest.mark.parametrize("content,words", [
    ("src,dst,bytes\n0,1,5\n1.5,0,5\n", ["line 3 has src = 1.5 (column 1 of src,dst,bytes: the sending task)",
                                         "a fraction", "are the columns in the order src,dst,bytes"]),
    ("0,1,5\n0,-2,5\n", ["line 2 has dst = -2.0 (column 2 of src,dst,bytes: the receiving task)", "a negative id",
                         "count from 0"]),
    ("0,1,5\n-0.5,2,5\n", ["line 2 has src = -0.5", "a fraction"]),
])
def test_csv_task_ids_name_line_column_value_and_fix(tmp_path, content, words):
    p = tmp_path / "t.csv"
    p.write_text(content)
    with pytest.raises(ConfigError) as e:
        from_file(p)
    msg = str(e.value)
    assert e.value.field == "traffic.path" and str(p) in msg and "\n" not in msg
    for w in words:
        assert w in msg, msg


@pytest.mark.parametrize("arrays,words", [
    (dict(row=[0, -1], col=[1, 0], data=[1.0, 1.0]), ["entry 1 of 'row' has row = -1 (the COO 'row' array: the "
                                                      "sending task)", "a negative id"]),
    (dict(row=[0, 1], col=[1.0, 2.5], data=[1.0, 1.0]), ["entry 1 of 'col' has col = 2.5 (the COO 'col' array: the "
                                                         "receiving task)", "a fraction"]),
])
def test_npz_task_ids_name_entry_array_value_and_fix(tmp_path, arrays, words):
    p = tmp_path / "t.npz"
    np.savez(p, **{k: np.asarray(v) for k, v in arrays.items()})
    with pytest.raises(ConfigError) as e:
        from_file(p)
    for w in words:
        assert w in str(e.value), str(e.value)


def test_the_ending_says_the_format(tmp_path):
    """The same ring in each of the four formats gives the same flows; another ending is refused naming all four."""
    ring = [(0, 1, 1e6), (1, 2, 1e6), (2, 3, 1e6), (3, 0, 1e6)]
    (tmp_path / "r.csv").write_text("".join(f"{s},{d},{b:g}\n" for s, d, b in ring))
    np.savez(tmp_path / "r.npz", row=[r[0] for r in ring], col=[r[1] for r in ring], data=[r[2] for r in ring])
    np.save(tmp_path / "r.npy", np.asarray(ring))
    (tmp_path / "r.mtx").write_text("%%MatrixMarket matrix coordinate real general\n4 4 4\n"
                                    + "".join(f"{s + 1} {d + 1} {b:g}\n" for s, d, b in ring))
    got = {}
    for ext in ("csv", "npz", "npy", "mtx"):
        t = from_file(tmp_path / f"r.{ext}")
        got[ext] = sorted(zip(t.src.tolist(), t.dst.tolist(), t.nbytes.tolist()))
    assert all(g == sorted(ring) for g in got.values()), got
    (tmp_path / "r.txt").write_text("0,1,5\n")
    with pytest.raises(ConfigError) as e:
        from_file(tmp_path / "r.txt")
    assert "a file ending in .mtx, .npy, .npz or .csv" in str(e.value)
