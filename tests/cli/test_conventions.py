"""What holds for every agentevals subcommand: a closed pipe ends it quietly, one machine-output
convention, and help text on every subcommand and option."""

from __future__ import annotations

import argparse
import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_agentevals.cli import SIGPIPE_EXIT, build_parser
from pytest_agentevals.history.model import PYTEST, Attempt, Source
from pytest_agentevals.history.sqlite import SQLiteStore

from ..conftest import REPO
from ..conftest import run_agentevals as agentevals

CLI = REPO / "pytest_agentevals" / "cli"

TRACE = REPO / "cassettes" / "taskrunner-3-tasks.trace.jsonl"


@pytest.fixture
def history(tmp_path: Path) -> Path:
    path = tmp_path / "h.sqlite"
    store = SQLiteStore(path)
    for i in range(3):
        attempt = Attempt("t.py::test_a", "step", "", 1, "passed", 0.1)
        store.append(Source(f"pytest:{i}", PYTEST, f"run{i}", f"sha{i}"), [attempt])
    store.close()
    return path


def into_a_closed_pipe(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The command with its stdout a pipe whose reader is gone, as `| head -1` leaves it once head
    has read its line. The reader closes before the command starts, so every write finds it closed."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return subprocess.run(
            [sys.executable, "-m", "pytest_agentevals", *map(str, args)],
            cwd=cwd,
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
            check=False,
        )
    finally:
        os.close(write_end)


@pytest.mark.parametrize(
    "args",
    [
        ["show", TRACE],
        ["show", "--json", TRACE],
        ["step", "points", TRACE],
        ["flaky", "report", "--history", "h.sqlite"],
        ["flaky", "check", "--json", "--history", "h.sqlite"],
    ],
    ids=lambda args: " ".join(map(str, args)).replace(str(TRACE), "TRACE"),
)
def test_a_closed_pipe_ends_the_command_quietly(tmp_path: Path, history: Path, args: list[str]) -> None:
    result = into_a_closed_pipe(*args, cwd=tmp_path)
    assert result.stderr == ""  # no BrokenPipeError traceback, no "Exception ignored"
    assert result.returncode == SIGPIPE_EXIT == 141


@pytest.mark.parametrize("args", [["--help"], ["show", "--help"], ["--version"]], ids=" ".join)
def test_a_closed_pipe_ends_help_quietly(tmp_path: Path, args: list[str]) -> None:
    result = into_a_closed_pipe(*args, cwd=tmp_path)
    assert result.stderr == ""
    assert result.returncode in (0, SIGPIPE_EXIT)  # argparse itself ignores a failed write of its help


def subcommands(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> list[tuple[tuple[str, ...], argparse.ArgumentParser, str | None]]:
    """Every (sub)command under `parser`: its words, its parser, and the help its parent lists."""
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            listed = {choice.dest: choice.help for choice in action._choices_actions}
            for name, sub in action.choices.items():
                found.append(((*path, name), sub, listed.get(name)))
                found.extend(subcommands(sub, (*path, name)))
    return found


COMMANDS = subcommands(build_parser())


@pytest.mark.parametrize(
    ("words", "parser", "listed"), COMMANDS, ids=[" ".join(words) for words, _, _ in COMMANDS]
)
def test_every_subcommand_and_option_has_help(
    words: tuple[str, ...], parser: argparse.ArgumentParser, listed: str | None
) -> None:
    assert listed, f"agentevals {' '.join(words)}: no help line in its parent's list"
    assert parser.description, f"agentevals {' '.join(words)}: no description"
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction | argparse._SubParsersAction):
            continue
        name = "/".join(action.option_strings) or action.dest
        assert action.help, f"agentevals {' '.join(words)} {name}: no help text"


MACHINE_OUTPUT = [("show",), ("flaky", "report"), ("flaky", "check")]


@pytest.mark.parametrize("words", MACHINE_OUTPUT, ids=" ".join)
def test_json_is_the_short_form_of_format_json(words: tuple[str, ...]) -> None:
    parser = dict((w, p) for w, p, _ in COMMANDS)[words]
    options = {option for action in parser._actions for option in action.option_strings}
    assert {"--json", "--format"} <= options
    args = ["--history", "h.sqlite"] if words[0] == "flaky" else ["x.trace.jsonl"]
    short = build_parser().parse_args([*words, "--json", *args])
    long = build_parser().parse_args([*words, "--format", "json", *args])
    assert short.format == long.format == "json"


def test_flaky_report_json_and_format_json_print_the_same(tmp_path: Path, history: Path) -> None:
    short = agentevals("flaky", "report", "--json", "--history", history, cwd=tmp_path)
    long = agentevals("flaky", "report", "--format", "json", "--history", history, cwd=tmp_path)
    assert short.returncode == long.returncode == 0, short.stderr
    assert json.loads(short.stdout) == json.loads(long.stdout)
    assert json.loads(short.stdout)["layers"][-1]["verdicts"] == 3


def test_show_format_json(tmp_path: Path) -> None:
    result = agentevals("show", "--format", "json", TRACE, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["model_calls"] > 0


def rendering_imports(path: Path) -> set[str]:
    """The modules a file imports that build output of an engine's result: JSON documents, tracebacks."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            found.add(node.module)
    return found & {"json", "traceback"}


def test_the_command_parses_calls_and_prints_what_an_engine_rendered() -> None:
    # DESIGN.md: one renderer per engine. A subcommand that dumps JSON or formats a traceback itself
    # is rendering an engine's result; that belongs to the engine's package (render.py, report.py,
    # or the result's own text()), where plain Python gets it too.
    found = {path.name: sorted(rendering_imports(path)) for path in sorted(CLI.glob("*.py"))}
    assert {name: imports for name, imports in found.items() if imports} == {}
    assert rendering_imports(REPO / "pytest_agentevals" / "marathon" / "merge.py") == {"json"}  # it sees
