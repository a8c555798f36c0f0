"""The GitHub Actions workflows: real linters pass them (zizmor, the Actions security linter, offline;
check-jsonschema with the workflow schema), every command line in them parses with the parser that
will run it, and every step is documented in docs/ci.md as a command a developer can run."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from pytest_agentevals.cli import build_parser

from ..conftest import REPO

WORKFLOWS = sorted((REPO / ".github" / "workflows").glob("*.yml"))
BIN = Path(sys.executable).parent

# Commands of layers still being built, written as their issues specify them and expected to parse once
# they land: their lines are expected failures that do not fail the suite. Every layer is built now.
EXPECTED_TO_EXIST: tuple[str, ...] = ()


def test_there_is_a_workflow_per_cadence() -> None:
    assert [path.name for path in WORKFLOWS] == ["merge.yml", "nightly.yml", "push.yml"]


def test_zizmor_finds_nothing() -> None:
    result = subprocess.run(
        [BIN / "zizmor", "--offline", "--no-progress", *WORKFLOWS],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "No findings to report" in result.stdout + result.stderr


def test_the_workflows_match_the_github_workflow_schema() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.github-workflows", *WORKFLOWS],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


# -- the command lines --------------------------------------------------------------------------------


def run_scripts() -> Iterator[tuple[str, str]]:
    """(workflow/job, script) of every `run:` step."""
    for path in WORKFLOWS:
        workflow = yaml.safe_load(path.read_text())
        for name, job in workflow["jobs"].items():
            for step in job["steps"]:
                if "run" in step:
                    yield f"{path.name}/{name}", step["run"]


def commands(script: str) -> Iterator[list[str]]:
    """Each simple command of a shell script, as argv; `sh -c '...'` scripts are looked into,
    redirections dropped, and variables stood in for by a value."""
    script = re.sub(r"\\\n", " ", script)
    for line in script.splitlines():
        lexer = shlex.shlex(re.sub(r"\$\{?\w+\}?", "1", line), posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        segment: list[str] = []
        tokens = [*lexer, ";"]
        skip = False
        for token in tokens:
            if skip:
                skip = False
            elif token in (">", ">>", "<"):
                skip = True
            elif token in ("&&", "||", ";", "|"):
                if segment:
                    if "-c" in segment and segment[0] in ("sh", "bash", "unshare", "sudo"):
                        yield from commands(segment[segment.index("-c") + 1])
                    else:
                        yield segment
                segment = []
            else:
                segment.append(token)


def test_the_merge_gate_replays_with_no_network_at_all() -> None:
    """docs/security.md: inside Python a replay guards every socket call, but a subprocess the agent
    starts is out of its reach; in CI the step and replay layers run in a network namespace whose
    only device is loopback, so nothing reaches the network whatever starts it."""
    layers = {}
    for where, script in run_scripts():
        layer = re.search(r"pytest .*-m (step|replay)\b", script)
        if where.startswith("merge.yml/") and layer:
            layers[layer.group(1)] = script
            assert script.startswith("unshare -rn sh -c 'ip link set lo up && python -m pytest "), where
    assert sorted(layers) == ["replay", "step"]


def ours(argv: list[str]) -> list[str] | None:
    """The arguments of an `agentevals` or `pytest` command line, with its program first."""
    if argv[:1] == ["agentevals"]:
        return argv
    if argv[:3] == ["python", "-m", "pytest"]:
        return ["pytest", *argv[3:]]
    if argv[:1] == ["pytest"]:
        return argv
    return None


def command_lines() -> list[object]:
    found = []
    for where, script in run_scripts():
        for argv in commands(script):
            command = ours(argv)
            if command is None:
                continue
            text = shlex.join(command)
            marks = []
            if any(name in text for name in EXPECTED_TO_EXIST):
                marks.append(pytest.mark.xfail(reason="a command of a layer still being built", strict=False))
            found.append(pytest.param(command, id=f"{where}: {text}", marks=marks))
    return found


def test_the_workflows_hold_agentevals_and_pytest_commands() -> None:
    programs = {param.values[0][0] for param in command_lines()}  # type: ignore[attr-defined]
    assert programs == {"agentevals", "pytest"}


@pytest.mark.parametrize("command", command_lines())
def test_every_command_line_parses(command: list[str], tmp_path: Path) -> None:
    program, *args = command
    if program == "agentevals":
        try:
            parsed = build_parser().parse_args(args)
        except SystemExit as exc:
            pytest.fail(f"agentevals {shlex.join(args)}: the parser refused it (exit {exc.code})")
        assert getattr(parsed, "func", None) is not None
        return
    # pytest: its own option parsing with every plugin loaded, then collection (--co): an unknown
    # option is a usage error (exit 4); files it would write go to a temporary folder.
    args = [re.sub(r"^(--junitxml|--agentevals-report)=.*$", rf"\1={tmp_path}/out", arg) for arg in args]
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            *args,
            "--co",
            "-q",
            "-p",
            "no:cacheprovider",
            "--agentevals-history=off",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode in (0, 5), result.stdout[-2000:] + result.stderr[-2000:]


# -- documented ---------------------------------------------------------------------------------------


def test_every_step_is_a_command_documented_in_docs_ci() -> None:
    doc = " ".join((REPO / "docs" / "ci.md").read_text().split())
    for where, script in run_scripts():
        for line in script.splitlines():
            assert " ".join(line.split()) in doc, f"{where}: `{line}` is not in docs/ci.md"
