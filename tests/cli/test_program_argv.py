"""`agentevals record` and `agentevals replay` take a program's words as python does: everything after
the script or `-m module` is the program's, verbatim; a `--` before the program ends agentevals' own
options. The trace keeps the program's real argv, as a list.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from pytest_agentevals import read_trace
from pytest_agentevals.cli import program as words
from pytest_agentevals.errors import AgentEvalsError
from pytest_agentevals.settings.argv import Program

from .. import replay_support as agent
from ..conftest import run_agentevals as agentevals

SCRIPT = """
import sys, json
print(json.dumps(sys.argv[1:]))
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "agent.py").write_text(SCRIPT)
    (tmp_path / "myagent").mkdir()
    (tmp_path / "myagent" / "__init__.py").write_text("")
    (tmp_path / "myagent" / "__main__.py").write_text(SCRIPT)
    return tmp_path


@pytest.mark.parametrize(
    ("command", "argv", "program_sees"),
    [
        (["-m", "myagent", "--tasks", "20"], ["-m", "myagent", "--tasks", "20"], ["--tasks", "20"]),
        (
            ["-m", "myagent", "--", "--tasks", "20"],
            ["-m", "myagent", "--", "--tasks", "20"],
            ["--", "--tasks", "20"],
        ),
        (["-mmyagent", "-o", "x"], ["-m", "myagent", "-o", "x"], ["-o", "x"]),
        (["agent.py", "--", "--foo"], ["agent.py", "--", "--foo"], ["--", "--foo"]),
        (
            ["agent.py", "-o", "x", "--seed", "3"],
            ["agent.py", "-o", "x", "--seed", "3"],
            ["-o", "x", "--seed", "3"],
        ),
        (["--", "agent.py", "--foo"], ["agent.py", "--foo"], ["--foo"]),
        (["--", "-m", "myagent", "x"], ["-m", "myagent", "x"], ["x"]),
    ],
)
def test_record_takes_the_programs_words_as_python_does(
    project: Path, command: list[str], argv: list[str], program_sees: list[str]
) -> None:
    # The script only prints its argv (no model call): --allow-no-model-calls keeps its exit status,
    # and is one more of agentevals' own options (a flag) before the program.
    result = agentevals(
        "record", "-o", "run.trace.jsonl", "--seed", "4", "--allow-no-model-calls", *command, cwd=project
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == program_sees
    start = read_trace(project / "run.trace.jsonl")[0]
    assert start["task"] == {"argv": argv}
    assert start["seed"] == 4  # agentevals' own options before the program are still its own


def test_replay_takes_the_programs_words_the_same_way(tmp_path: Path) -> None:
    (tmp_path / "replay_support.py").write_text(Path(agent.__file__).read_text())
    (tmp_path / "fix_it.py").write_text(
        "import sys, json\nimport replay_support as agent\n"
        "print(json.dumps(sys.argv[1:]))\nagent.run_agent(agent.client(), 'Fix the bug in a.txt')\n"
    )
    agent.record(tmp_path / "run.trace.jsonl")
    for command, sees in (
        (["run.trace.jsonl", "--mode", "strict", "fix_it.py", "--mode", "x"], ["--mode", "x"]),
        (["--mode", "strict", "run.trace.jsonl", "--", "fix_it.py", "--", "y"], ["--", "y"]),
    ):
        result = agentevals("replay", *command, cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        assert json.loads(result.stdout.splitlines()[0]) == sees


def test_nothing_to_run_says_how(project: Path) -> None:
    result = agentevals("record", "-o", "x.trace.jsonl", cwd=project)
    assert result.returncode == 2
    assert result.stderr == (
        "agentevals record: error: nothing to run: give a script or a module "
        "(script.py [args] | -m module [args] | -- COMMAND [args])\n"
    )


def split(argv: list[str], positionals: int = 0) -> tuple[list[str], list[str]]:
    parser = argparse.ArgumentParser()
    parser.add_argument("-o", "--output")
    parser.add_argument("--flag", action="store_true")
    return words.split(parser, argv, positionals)


def test_the_split_rule() -> None:
    assert split(["-o", "out", "--flag", "a.py", "-o", "x"]) == (["-o", "out", "--flag"], ["a.py", "-o", "x"])
    assert split(["--output=out", "-m", "pkg", "--", "x"]) == (["--output=out"], ["-m", "pkg", "--", "x"])
    assert split(["T", "--flag", "a.py"], positionals=1) == (["T", "--flag"], ["a.py"])
    assert split(["--flag", "--", "-m", "pkg"]) == (["--flag"], ["-m", "pkg"])
    assert split(["--flag"]) == (["--flag"], [])


def test_a_program_round_trips_through_its_argv() -> None:
    for argv in (["-m", "pkg.mod", "--a", "1"], ["run.py", "--", "x"], ["run.py"]):
        assert Program.from_argv(argv).argv == argv
    assert Program.from_argv(["-mpkg", "x"]) == Program("pkg", True, ("x",))
    for bad in ([], ["-m"], ["-m", "--x"], ["--x"], [1]):
        with pytest.raises(AgentEvalsError):
            Program.from_argv(bad)
