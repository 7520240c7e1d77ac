"""README.md and the tutorials (docs/tutorial_*.md) run as a user pastes them: every shell block, in order.

One test per document. The document runs in a fresh temporary directory that stands in for a fresh clone
after ``make setup``: the checkout's ``conf/``, ``sweeps/``, ``tests/``, ``docs/`` and ``evaluator/`` are
linked in, ``.venv`` is this interpreter's environment, ``results/`` starts empty and ``~`` (``$HOME``) is a
directory of its own, outside the "clone" (a study file written to ``~/studies`` is outside the checkout).

The grammar, in the order it is applied:

* **Blocks.** Fenced blocks marked ``bash`` or ``sh``, in document order; ``python`` blocks run too (``exec``,
  one namespace per document, in the same directory). Other fences (output, YAML, layouts) are text.
* **Shrinking.** An HTML comment right before a block (blank lines between allowed) changes that block for
  the test only, so the text says how it is shrunk::

      <!-- test: replace 'OLD' 'NEW'; append 'WHERE' 'ARGS' -->

  ``replace 'OLD' 'NEW'``: every occurrence of the text OLD in the block becomes NEW.
  ``append 'WHERE' 'ARGS'``: every command of the block whose text contains WHERE gets ARGS at its end
  (``''``: every command). Rules are separated by ``;`` and applied in order; a rule that matches nothing
  fails the test (the block changed: update the comment).
* **Commands.** A block is cut into commands as the shell does: a line ending in ``\\`` continues, a quote
  left open continues on the next line, a here-document (``<<'EOF'`` ... ``EOF``) belongs to its command;
  ``#`` starts a comment. ``make setup`` is not run (the environment exists), nor ``make test`` (the suite
  this test belongs to); ``make TARGET`` otherwise runs the target's recipe from the Makefile (``make run``:
  ``$(BIN)/evaluator sweep``, run as below).
* **Variables.** A command made only of ``NAME=value`` words sets shell variables; ``$NAME`` and ``${NAME}``
  outside single quotes and a leading ``~/`` are expanded, then the command is split into words (``$B``
  unquoted splits into its words, as in the shell).
* **Running.** A command whose first word is ``evaluator`` or ends in ``/evaluator`` (``$E``) runs in this
  process, ``evaluator.cli.main(argv)``, with two shared settings that only change where the work runs:
  ``evaluator sweep`` gets ``ray.enabled=false --no-progress`` and ``evaluator schedule`` gets
  ``--no-progress`` (``--no-ray`` with ``--study``): Ray's start-up would dominate these small runs.
  Any other command (``mkdir``, ``cat > file <<'EOF'``, pipes) runs in ``bash`` in the directory, with the
  variables exported and the environment's ``bin/`` first on ``PATH``.
* **Failing.** A command with a non-zero exit status fails the test, naming the document, the command as
  run and its stderr.

The whole file takes about 150 s of CPU (2026-11-26, with tests/conftest.py's XLA settings; 225 s without them;
217 s of wall time at load 4.5: the README 154 s, mostly JIT compilation of ~40 distinct kernels, the four
tutorials 63 s): the documents' slow commands carry a ``<!-- test: ... -->`` comment. Keep new examples small,
or shrink them. The documents run in one process, in order (``make test`` keeps a module on one worker): a
tutorial reuses the kernels the README compiled (the RDN tutorial's study is the README's, both with
``--groups 2``).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest

from evaluator import cli

ROOT = Path(__file__).resolve().parents[1]
DOCS = ["README.md", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("tutorial_*.md"))]
LINKED = ("conf", "sweeps", "tests", "docs", "evaluator")
SHELL_LANGS = {"bash", "sh", "shell"}
VERBOSE = bool(os.environ.get("EVALUATOR_DOCS_VERBOSE"))
"""``EVALUATOR_DOCS_VERBOSE=1``: print every command with its seconds as it finishes (with ``-s``);
``EVALUATOR_DOCS_LOG=FILE``: append every command and its output to FILE (for the documents' authors)."""
LOG = os.environ.get("EVALUATOR_DOCS_LOG")
FULL = bool(os.environ.get("EVALUATOR_DOCS_FULL"))
"""``EVALUATOR_DOCS_FULL=1``: ignore the ``<!-- test: ... -->`` rules, run the commands as written (the numbers a
document states come from this run; minutes)."""

_FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```[ \t]*$", re.M | re.S)
_RULES = re.compile(r"<!--\s*test:(.*?)-->", re.S)
_HEREDOC = re.compile(r"<<-?\s*(['\"]?)(\w+)\1")
_ASSIGN = re.compile(r"^[A-Za-z_]\w*=")
_VAR = re.compile(r"\$(?:\{(\w+)\}|(\w+))")


# ---------------------------------------------------------------------------------------------------------------
# parsing
# ---------------------------------------------------------------------------------------------------------------

def blocks(text: str) -> list[tuple[str, str, str]]:
    """``(language, body, rules)`` of every fenced block; ``rules``: the ``<!-- test: ... -->`` right before it."""
    out, last = [], 0
    for m in _FENCE.finditer(text):
        before = text[last:m.start()]
        rules = ""
        found = list(_RULES.finditer(before))
        if found and not before[found[-1].end():].strip():
            rules = found[-1].group(1)
        out.append((m.group(1).lower(), m.group(2), rules))
        last = m.end()
    return out


def apply_rules(body: str, rules: str, where: str) -> tuple[str, list[tuple[str, str]]]:
    """The block with its ``replace`` rules applied, and its ``append`` rules ``(WHERE, ARGS)``."""
    appends = []
    for rule in filter(None, (r.strip() for r in rules.split(";"))):
        words = shlex.split(rule)
        assert len(words) == 3 and words[0] in ("replace", "append"), \
            f"{where}: bad test rule {rule!r} (replace 'OLD' 'NEW' or append 'WHERE' 'ARGS')"
        if words[0] == "replace":
            assert words[1] in body, f"{where}: test rule {rule!r}: {words[1]!r} is not in the block"
            body = body.replace(words[1], words[2])
        else:
            appends.append((words[1], words[2]))
    return body, appends


def commands(body: str) -> list[str]:
    """The block cut into commands, as the shell reads it (continuations, open quotes, here-documents)."""
    out, buf, lines = [], "", body.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        buf = f"{buf}\n{line}" if buf else line
        if buf.endswith("\\"):
            continue
        try:
            shlex.split(buf, comments=True)
        except ValueError:  # an open quote: the command goes on
            continue
        m = _HEREDOC.search(buf)
        if m:
            while i < len(lines) and lines[i].strip() != m.group(2):
                buf += "\n" + lines[i]
                i += 1
            buf += "\n" + (lines[i] if i < len(lines) else "")
            i += 1
        if shlex.split(head(buf), comments=True):
            out.append(buf)
        buf = ""
    assert not buf.strip(), f"unterminated command: {buf!r}"
    return out


def head(cmd: str) -> str:
    """The command without its here-document's body (the words the shell splits)."""
    m = _HEREDOC.search(cmd)
    return cmd if m is None else cmd[:m.end()] + cmd[m.end():].split("\n", 1)[0]


def expand(cmd: str, env: dict[str, str], home: str) -> str:
    """``$NAME``/``${NAME}`` outside single quotes and a word-leading ``~/``, expanded."""
    out, quote, i = [], None, 0
    while i < len(cmd):
        c = cmd[i]
        if quote == "'":
            out.append(c)
            quote = None if c == "'" else quote
        elif c == "'" and quote is None:
            quote = "'"
            out.append(c)
        elif c == '"':
            quote = None if quote == '"' else '"'
            out.append(c)
        elif c == "\\" and i + 1 < len(cmd):
            out.append("" if cmd[i + 1] == "\n" else cmd[i:i + 2])  # a line continuation goes
            i += 1
        elif c == "$" and (m := _VAR.match(cmd, i)):
            name = m.group(1) or m.group(2)
            out.append(env.get(name, os.environ.get(name, "")))
            i = m.end() - 1
        elif c == "~" and cmd[i:i + 2] in ("~/", "~") and (i == 0 or cmd[i - 1] in " \t\n=:") and quote is None:
            out.append(home)
        else:
            out.append(c)
        i += 1
    return "".join(out)


def _is_shell(cmd: str) -> bool:
    """Whether the command needs a shell: pipes, redirections, lists, here-documents."""
    lex = shlex.shlex(head(cmd), posix=True, punctuation_chars=True)
    lex.commenters = "#"
    lex.whitespace_split = True
    return any(tok and set(tok) <= set("|&;<>()") for tok in lex)


def _is_evaluator(word: str) -> bool:
    return word == "evaluator" or word.endswith("/evaluator")


# ---------------------------------------------------------------------------------------------------------------
# running
# ---------------------------------------------------------------------------------------------------------------

def make_recipe(target: str) -> list[str]:
    """The commands of a Makefile target's recipe, with ``$(BIN)`` and ``$(VENV)`` as ``make setup`` makes them."""
    text = (ROOT / "Makefile").read_text()
    m = re.search(rf"^{re.escape(target)}:.*\n((?:\t.*\n?)+)", text, re.M)
    assert m, f"Makefile: no recipe for {target!r}"
    return [line.strip().lstrip("@").replace("$(BIN)", ".venv/bin").replace("$(VENV)", ".venv")
            for line in m.group(1).splitlines()]


def shared_settings(argv: list[str]) -> list[str]:
    """The settings every document's commands run with here (module docstring): where, not what."""
    if argv[:1] == ["sweep"]:
        return [*argv, "ray.enabled=false", "--no-progress"]
    if argv[:1] == ["schedule"]:
        return [*argv, "--no-progress", *(["--no-ray"] if "--study" in argv else [])]
    return argv


@pytest.fixture
def clone(tmp_path, monkeypatch):
    """A stand-in for a fresh clone after ``make setup``, and a home directory beside it."""
    d = tmp_path / "clone"
    d.mkdir()
    for name in LINKED:
        (d / name).symlink_to(ROOT / name)
    (d / ".venv").symlink_to(Path(sys.prefix))
    (d / "results").mkdir()
    (tmp_path / "home").mkdir()
    monkeypatch.chdir(d)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return d


def run_document(doc: str, clone: Path, capsys) -> list[tuple[str, float]]:
    """Run ``doc``'s blocks in order in ``clone``; the commands as run and their seconds."""
    home = os.environ["HOME"]
    env: dict[str, str] = {}
    timings, namespace = [], {"__name__": "__doc__"}
    shell_env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    for k, (lang, body, rules) in enumerate(blocks((ROOT / doc).read_text())):
        where = f"{doc}, block {k + 1}"
        if lang == "python":
            t0 = time.perf_counter()
            try:
                exec(compile(body, where, "exec"), namespace)
            except Exception as exc:  # noqa: BLE001 (the failure is the test's message)
                pytest.fail(f"{where} (python) failed: {type(exc).__name__}: {exc}\n{body}")
            timings.append((f"[python] {body.splitlines()[0]}", time.perf_counter() - t0))
            continue
        if lang not in SHELL_LANGS:
            assert not rules, f"{where}: a test rule before a {lang or 'plain'} block"
            continue
        body, appends = apply_rules(body, "" if FULL else rules, where)
        used = set()
        pending = commands(body)
        while pending:
            raw = pending.pop(0)
            words = shlex.split(head(raw), comments=True)
            if words[0] == "make":
                assert len(words) == 2, f"{where}: one make target at a time: {raw!r}"
                if words[1] not in ("setup", "test"):
                    pending[:0] = make_recipe(words[1])
                continue
            for i, (needle, extra) in enumerate(appends):
                if needle in raw:
                    raw = _append(raw, extra)
                    used.add(i)
            text = expand(raw, env, home)
            if not _is_shell(text):
                words = shlex.split(text, comments=True)
                if all(_ASSIGN.match(w) for w in words):
                    env.update(w.split("=", 1) for w in words)
                    continue
            t0 = time.perf_counter()
            if not _is_shell(text) and _is_evaluator(words[0]):
                argv = shared_settings(words[1:])
                capsys.readouterr()
                try:
                    rc = cli.main(argv)
                except SystemExit as exc:  # argparse
                    rc = exc.code if isinstance(exc.code, int) else 1
                out, err = capsys.readouterr()
                shown = "evaluator " + shlex.join(argv)
            else:
                proc = subprocess.run(["bash", "-c", raw], cwd=clone, capture_output=True, text=True,
                                      env={**shell_env, **env, "HOME": home})
                rc, out, err, shown = proc.returncode, proc.stdout, proc.stderr, raw
            if rc != 0:
                pytest.fail(f"{where}: exit status {rc} from\n  {shown}\nstderr:\n{err[-4000:]}")
            timings.append((shown, time.perf_counter() - t0))
            if LOG:
                with open(LOG, "a") as f:
                    f.write(f"$ {shown}\n{out}{err}\n")
            if VERBOSE:
                with capsys.disabled():
                    print(f"  {timings[-1][1]:6.1f} s  {shown[:150]}", flush=True)
        missing = [appends[i] for i in range(len(appends)) if i not in used]
        assert not missing, f"{where}: test rule append {missing} matches no command (the block changed)"
    return timings


def _append(raw: str, extra: str) -> str:
    """``extra`` added to the command, before its trailing comment (``cmd args   # comment``)."""
    pos, quote = None, None
    for j, c in enumerate(raw):
        if quote:
            quote = None if c == quote else quote
        elif c in "'\"":
            quote = c
        elif c == "#" and (j == 0 or raw[j - 1] in " \t\n"):
            pos = j
            break
    if pos is None:
        return raw.rstrip() + " " + extra
    return raw[:pos].rstrip() + " " + extra + "  " + raw[pos:]


def test_the_grammar():
    """The parser on a block with every construct (independent of the documents)."""
    body = ("make setup   # once\nE=.venv/bin/evaluator\n$E eval a=1 \\\n   b=2   # two lines\n"
            "$E eval 'x=[{a: 1},\n  {b: 2}]' save=false\ncat > ~/s.yaml <<'EOF'\nk: v  # it's kept\nEOF\n"
            "B=\"t=1 u=2\"\n$E eval $B '$B' \"$B\"\n")
    cmds = commands(body)
    assert len(cmds) == 7 and cmds[2].endswith("b=2   # two lines") and cmds[4].endswith("EOF")
    assert shlex.split(cmds[3], comments=True)[2] == "x=[{a: 1},\n  {b: 2}]"
    env = {"E": "ev", "B": "t=1 u=2"}
    assert shlex.split(expand(cmds[6], env, "/h")) == ["ev", "eval", "t=1", "u=2", "$B", "t=1 u=2"]
    assert expand("cat ~/x a~/b", env, "/h") == "cat /h/x a~/b"
    assert shlex.split(expand(cmds[2], env, "/h"), comments=True) == ["ev", "eval", "a=1", "b=2"]
    assert _is_shell(cmds[4]) and not _is_shell(cmds[2]) and _is_shell("$E runs | head")
    assert _append("$E eval a=1   # note", "k=2") == "$E eval a=1 k=2  # note"
    text = "x\n<!-- test: replace 'a=1' 'a=3'; append 'eval' 'z=0' -->\n\n```bash\n$E eval a=1\n```\n```\nout\n```\n"
    (lang, b, rules), (lang2, _, rules2) = blocks(text)
    assert lang == "bash" and lang2 == "" and rules2 == ""
    new, appends = apply_rules(b, rules, "t")
    assert new == "$E eval a=3\n" and appends == [("eval", "z=0")]
    with pytest.raises(AssertionError, match="not in the block"):
        apply_rules(b, "replace 'nope' 'x'", "t")


@pytest.mark.parametrize("doc", DOCS)
def test_document_runs(doc, clone, capsys):
    timings = run_document(doc, clone, capsys)
    assert timings, f"{doc}: no command ran"
    with capsys.disabled():
        slow = sorted(timings, key=lambda t: -t[1])[:3]
        print(f"\n{doc}: {len(timings)} commands, {sum(t for _, t in timings):.1f} s; slowest: "
              + "; ".join(f"{t:.1f} s {c[:70]}" for c, t in slow))
