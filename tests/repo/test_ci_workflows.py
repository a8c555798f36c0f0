"""The GitHub Actions workflows: real linters pass them (zizmor, the Actions security linter, offline;
check-jsonschema with the workflow schema), every command line in them parses with the parser that
will run it, and every step is documented in docs/ci.md as a command a developer can run."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_agentevals.cli import build_parser

from ..conftest import REPO
from ..session_support import Session, run_sessions

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


def push_job(name: str) -> dict[str, Any]:
    workflow = yaml.safe_load((REPO / ".github" / "workflows" / "push.yml").read_text())
    job: dict[str, Any] = workflow["jobs"][name]
    return job


def scripts(job: dict[str, Any]) -> list[str]:
    return [step["run"] for step in job["steps"] if "run" in step]


def test_the_sdist_and_wheel_are_built_once_and_uploaded() -> None:
    build = push_job("build")
    assert "strategy" not in build  # once, whatever the matrix below
    assert scripts(build)[-1] == "python -m build"
    upload = [step for step in build["steps"] if step.get("uses", "").startswith("actions/upload-artifact@")]
    assert [step["with"]["name"] for step in upload] == ["dist"]
    assert upload[0]["with"]["path"] == "dist/"
    assert upload[0]["with"]["if-no-files-found"] == "error"  # a build that made nothing fails here


def test_the_wheel_cells_cover_each_python_and_both_ends_of_the_pytest_range() -> None:
    job = push_job("wheel")
    assert job["needs"] == ["build"]
    matrix = job["strategy"]["matrix"]
    pythons = [f"3.{minor}" for minor in range(11, 14)]
    assert matrix["python"] == pythons
    # The declared floor, read from pyproject: raising it there without CI following fails here.
    declared = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    floor = next(re.fullmatch(r"pytest>=(\d+\.\d+)", dep) for dep in declared if dep.startswith("pytest>="))
    assert floor is not None
    # GitHub's expansion: the product of the axes, then each `include` that matches no cell as a cell.
    cells = [{"python": py, "pytest": pytest} for py in matrix["python"] for pytest in matrix["pytest"]]
    cells += matrix["include"]
    assert cells == [
        *({"python": python, "pytest": "pytest"} for python in pythons),
        {"python": pythons[0], "pytest": f"pytest=={floor.group(1)}.*"},
        {"python": pythons[-1], "pytest": "pytest>=0.0.dev0"},
    ]
    python = next(step for step in job["steps"] if step.get("uses", "").startswith("actions/setup-python@"))
    assert python["with"]["python-version"] == "${{ matrix.python }}"
    assert job["env"]["PYTEST"] == "${{ matrix.pytest }}"


def test_the_wheel_cells_test_the_downloaded_wheel_not_the_source_tree() -> None:
    job = push_job("wheel")
    uses = [step.get("uses", "").split("@")[0] for step in job["steps"]]
    download = uses.index("actions/download-artifact")
    assert job["steps"][download]["with"] == {"name": "dist", "path": "dist/"}
    assert download < min(i for i, step in enumerate(job["steps"]) if "run" in step)
    run = scripts(job)
    assert not [script for script in run if "-e ." in script or "-e '." in script]
    # The source package goes before anything imports it, so the suite can only find the wheel's.
    assert run[0] == "rm -r pytest_agentevals"
    assert run[1] == 'python -m pip install "$(ls dist/*.whl)[test]" "$PYTEST"'
    assert run[2].startswith('python -c "import pytest_agentevals')
    assert "'site-packages' in p.__file__" in run[2]
    assert run[-1].startswith("python -m pytest")


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


# pytest's own option parsing with every plugin and the named folders' conftests loaded: an unknown
# option or a missing path is a usage error (exit 4); files it would write go to a temporary folder.
# `--ignore-glob=*` stops before importing the test files, which only cost seconds per line
# (collecting them is the layers' own tests' business). Every line is parsed by `pytest.main` in one
# fresh process, one after another, each with a config of its own: a process per line spent most of
# its seconds importing the same pytest, plugins and conftests again (`session_support`).
def pytest_args(args: list[str], out: Path) -> list[str]:
    args = [re.sub(r"^(--junitxml|--agentevals-report)=.*$", rf"\1={out}/out", arg) for arg in args]
    return [*args, "--co", "--ignore-glob=*", "-q", "-p", "no:cacheprovider", "--agentevals-history=off"]


@pytest.fixture(scope="module")
def parsed_by_pytest(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, ...], tuple[int, str]]:
    """Each pytest command line of the workflows -> pytest's exit code and its output. The lines share
    a process but not a config: each `pytest.main` builds its own, with the plugins and conftests its
    own arguments name, so a line cannot lend another an option."""
    lines = sorted(
        {
            tuple(command[1:])
            for _, script in run_scripts()
            for argv in commands(script)
            if (command := ours(argv)) is not None and command[0] == "pytest"
        }
    )
    root = tmp_path_factory.mktemp("parsed")
    sessions = []
    for n, args in enumerate(lines):
        (root / str(n)).mkdir()
        sessions.append(Session(pytest_args(list(args), root / str(n)), str(root / f"{n}.log")))
    return dict(zip(lines, run_sessions(sessions, REPO), strict=True))


@pytest.mark.parametrize("command", command_lines())
def test_every_command_line_parses(command: list[str], request: pytest.FixtureRequest) -> None:
    program, *args = command
    if program == "agentevals":
        try:
            parsed = build_parser().parse_args(args)
        except SystemExit as exc:
            if exc.code == 0 and args == ["--version"]:
                return  # answered and exited, as it should
            pytest.fail(f"agentevals {shlex.join(args)}: the parser refused it (exit {exc.code})")
        assert getattr(parsed, "func", None) is not None
        return
    parsed_by_pytest = request.getfixturevalue("parsed_by_pytest")  # only where a pytest line is
    code, output = parsed_by_pytest[tuple(args)]
    assert code in (0, 5), output[-4000:]


# -- documented ---------------------------------------------------------------------------------------


def test_every_step_is_a_command_documented_in_docs_ci() -> None:
    doc = " ".join((REPO / "docs" / "ci.md").read_text().split())
    for where, script in run_scripts():
        for line in script.splitlines():
            assert " ".join(line.split()) in doc, f"{where}: `{line}` is not in docs/ci.md"
