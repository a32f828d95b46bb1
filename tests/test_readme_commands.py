"""The front door cannot go stale: every `attnbench` command README.md shows in a shell code block runs
for real, and every `attnbench …` the README names in its text (the command table) is a command with
those options.

The commands run as written, with three changes that keep them fast and out of the checkout: a suite file
they name is a tiny suite instead (one small model on one of study-lite's datasets at 256 rows, so that
`--against study-lite` holds too), `run` with no suite runs that tiny suite rather than the whole smoke suite,
and every file they write (`--db`, `--reports`, `--out`, `--into`) goes to a temporary folder. One real
run writes the results file that the README's other commands (`query`, `report`, …) then read, as they
would read the one `make run` writes."""

from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from pipeline.cli import build_parser

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
SHELL_FENCE = re.compile(r"^```(?:bash|sh|shell|console)[ \t]*\n(?P<body>.*?)^```[ \t]*$", re.M | re.S)
INLINE = re.compile(r"`(attnbench [^`]+)`")
PATH_OPTIONS = ("--db", "--reports", "--out", "--into")
CANNOT_RUN = {("serve",): "it serves until stopped", ("suites", "pin"): "it needs OpenML"}


@dataclass
class Command:
    where: str  # README.md:LINE
    cwd: str  # relative to the checkout: where a `cd` earlier in its block left the shell
    argv: list[str]  # the words after `attnbench`

    def __str__(self) -> str:
        return f"{self.where}: attnbench {shlex.join(self.argv)}"


def shell_commands(text: str, name: str = "README.md") -> list[Command]:
    """The `attnbench` commands of every shell code block, as a shell would read them: a line ending in a
    backslash goes on, `# …` is a comment, `&&` and `;` separate commands, and `cd DIR` moves the rest of
    its block to DIR."""
    found = []
    for block in SHELL_FENCE.finditer(text):
        first = text[: block.start("body")].count("\n") + 1
        cwd, joined, start = ".", "", None
        for n, line in enumerate(block.group("body").split("\n")):
            start = first + n if start is None else start
            if line.rstrip().endswith("\\"):
                joined += line.rstrip()[:-1] + " "
                continue
            words, joined, lineno, start = shlex.split(joined + line, comments=True), "", start, None
            segments: list[list[str]] = [[]]
            for w in words:
                if w in ("&&", ";", "||"):
                    segments.append([])
                else:
                    segments[-1].append(w)
            for seg in segments:
                if seg[:1] == ["cd"]:
                    cwd = os.path.normpath(os.path.join(cwd, seg[1]))
                elif seg[:1] == ["attnbench"]:
                    assert "|" not in seg, f"{name}:{lineno}: a pipe in a shown command; show the command alone"
                    found.append(Command(f"{name}:{lineno}", cwd, seg[1:]))
    return found


def subparsers(p: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in p._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def options(p: argparse.ArgumentParser) -> set[str]:
    return {o for action in p._actions for o in action.option_strings}


def resolve(words: list[str]) -> tuple[list[str], argparse.ArgumentParser]:
    """The command path (`reference`, `list`) a command line names, and the parser of its last word."""
    parser, path = build_parser(), []
    while subparsers(parser):
        choices = subparsers(parser)
        if not words or words[0] not in choices:
            raise LookupError(f"attnbench {' '.join(path + words[:1])}: no such command (there are: "
                              f"{', '.join(sorted(choices))})")
        path.append(words[0])
        parser, words = choices[words[0]], words[1:]
    return path, parser


# ------------------------------------------------------------------ what the README shows
COMMANDS = shell_commands(README.read_text(encoding="utf-8"))


def test_the_reader_finds_commands_as_a_shell_would():
    text = """
```bash
. .venv/bin/activate                              # not attnbench
make run
cd examples/x && attnbench run s.yaml --db ../../a.duckdb   # a comment with attnbench run in it
attnbench query "SELECT 1 -- # not a comment" \\
    --db a.duckdb
```

```python
attnbench = "not a shell block"
```
"""
    got = [(c.where, c.cwd, c.argv) for c in shell_commands(text, "X.md")]
    assert got == [("X.md:5", "examples/x", ["run", "s.yaml", "--db", "../../a.duckdb"]),
                   ("X.md:6", "examples/x", ["query", "SELECT 1 -- # not a comment", "--db", "a.duckdb"])]


def test_the_readme_shows_commands_to_run():
    assert COMMANDS, "README.md shows no attnbench command in a shell block"
    assert any(c.argv[:1] == ["query"] for c in COMMANDS), "README.md should show a query"


def test_every_command_named_in_the_readme_text_exists_with_its_options():
    """The command table and the prose: each `attnbench …` names a command, and each --option it shows is
    one of that command's (a renamed or removed option fails here)."""
    spans = INLINE.findall(README.read_text(encoding="utf-8"))
    assert len(spans) >= 10, spans  # the command table
    problems = []
    for span in spans:
        words = [w for w in span.split()[1:] if not w.startswith(("[", "-"))]
        try:
            path, parser = resolve(words)
        except LookupError as e:
            problems.append(f"`{span}`: {e}")
            continue
        for flag in re.findall(r"--[a-z][a-z0-9-]*", span):
            if flag not in options(parser) | options(build_parser()):
                problems.append(f"`{span}`: attnbench {' '.join(path)} has no option {flag}")
    assert not problems, "\n".join(problems)


# ------------------------------------------------------------------ running them
@pytest.fixture(scope="module")
def tiny_suite(tmp_path_factory: pytest.TempPathFactory, shared_data: Path) -> Path:
    """One of study-lite's datasets as study-lite's suite writes it, one small model: 1 cell (256 rows)."""
    study = yaml.safe_load((REPO / "suites" / "study-lite.yaml").read_text())
    entry = next(d for d in study["datasets"] if d["name"] == "blood-transfusion-service-center")
    entry = {**entry, "file": str((REPO / "suites" / entry["file"]).resolve())}
    path = tmp_path_factory.mktemp("suite") / "mine.yaml"
    path.write_text(yaml.safe_dump({"name": "mine", "datasets": [entry], "models": [
        {"name": "mlp", "label": "my-mlp", "trials": 1, "fixed": {"max_epochs": 5, "d_block": 64}}]}))
    return path


def attnbench() -> list[str]:
    script = Path(sys.executable).with_name("attnbench")  # the console script `pip install` made
    return [str(script)] if script.exists() else [sys.executable, "-m", "pipeline.cli"]


def prepared(cmd: Command, work: Path, suite: Path) -> tuple[list[str], Path]:
    """The command line to run, and the results file it reads or writes: the shown one, with the changes
    the module's docstring lists."""
    path, parser = resolve([w for w in cmd.argv if not w.startswith("-")][:2])
    for words, why in CANNOT_RUN.items():
        if tuple(path[: len(words)]) == words:
            pytest.fail(f"{cmd}: cannot run in a test ({why}); name it in the command table instead")
    argv, db = [], work / "results.duckdb"
    words = iter(cmd.argv)
    for w in words:
        if w in PATH_OPTIONS:
            value = Path(next(words))
            target = work / ("reports" if w == "--reports" else "") / value.name
            argv += [w, str(target)]
            db = target if w == "--db" else db
        elif w.endswith((".yaml", ".yml")):
            argv.append(str(suite))
        else:
            argv.append(w)
    have = options(parser)
    if path == ["run"] and not any(w.endswith((".yaml", ".yml")) for w in cmd.argv):
        argv.insert(1, str(suite))  # `attnbench run` alone: the tiny suite, not the whole smoke suite
    if "--db" in have and "--db" not in argv:
        argv += ["--db", str(db)]
    if "--reports" in have and "--reports" not in argv:
        argv += ["--reports", str(work / "reports" / "default")]
    return argv, db


@pytest.mark.slow
def test_every_command_the_readme_shows_runs(tiny_suite: Path, tmp_path: Path, ray_address: str):
    """The runs first (at most two), then the others in the README's order, each reading the results file the
    first run wrote where it names none of its own. The runs join the session's Ray ($RAY_ADDRESS, as a user's
    cluster would be named): what is tested here is the README's commands, not a local Ray's start."""
    runs = [c for c in COMMANDS if c.argv[:1] == ["run"]]
    assert len(runs) <= 2, f"README.md shows {len(runs)} runs; this test runs at most two: {runs}"
    if not runs:  # the README's queries read what `make run` writes: a run of the tiny suite stands in
        runs = [Command("(make run)", ".", ["run"])]
    written = None
    for cmd in runs + [c for c in COMMANDS if c.argv[:1] != ["run"]]:
        argv, db = prepared(cmd, tmp_path, tiny_suite)
        if cmd.argv[:1] != ["run"] and not db.exists() and "merge" not in argv[:1] and "export" not in argv[:2]:
            assert written is not None
            shutil.copy(written, db)  # the results file the command reads: the run's
        out = subprocess.run(attnbench() + argv, cwd=REPO / cmd.cwd, capture_output=True, text=True,
                             timeout=300, env={**os.environ, "COLUMNS": "200", "RAY_ADDRESS": ray_address})
        said = out.stdout + out.stderr
        assert out.returncode == 0, f"{cmd}\n  ran as: attnbench {shlex.join(argv)}\n  exit {out.returncode}:\n{said}"
        if argv[0] == "run":
            assert db.exists() and " 0 failed" in said, said
            written = written or db
        elif argv[0] == "query":
            rows = [line for line in out.stdout.splitlines() if line.strip()]
            assert len(rows) >= 2, f"{cmd}: a header and the run's rows:\n{said}"
            assert "model" not in argv[1] or "my-mlp" in out.stdout, f"{cmd}: the run's model:\n{said}"
        elif argv[0] == "models":
            assert "ft_transformer" in out.stdout and "gradient boosting" in out.stdout, said
        elif argv[:2] == ["reference", "list"]:
            assert "study-lite" in out.stdout, said
        if argv[0] in ("run", "report") and "--no-report" not in argv:
            reports = Path(argv[argv.index("--reports") + 1])
            assert (reports / "index.html").is_file(), f"{cmd}: no report in {reports}\n{said}"


def test_a_command_with_an_option_that_no_longer_exists_fails(tmp_path: Path):
    """What the test above would meet if the README kept an option the command has lost: exit 2, not 0."""
    cmd = Command("X.md:1", ".", ["query", "SELECT 1", "--no-such-option"])
    argv, _ = prepared(cmd, tmp_path, tmp_path / "unused.yaml")
    out = subprocess.run(attnbench() + argv, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and "--no-such-option" in out.stderr, out.stderr
