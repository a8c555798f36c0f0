"""The subcommands' old names (`goldens`, `checkpoint`) run the new ones (`step`, `resume`) for one
release: the same options and the same stdout, plus one line on stderr naming the new command."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pytest_agentevals.cli import DEPRECATED, renamed

from ..conftest import REPO
from ..conftest import run_agentevals as agentevals

TRACE = REPO / "cassettes" / "taskrunner-3-tasks.trace.jsonl"


def warning(old: str, new: str) -> str:
    return (
        f"agentevals: 'agentevals {old}' is deprecated; use 'agentevals {new}' "
        "(the old name goes in the next release)"
    )


@pytest.mark.parametrize(
    ("old", "new", "args"),
    [
        ("checkpoint", "resume", ["list"]),
        ("checkpoint", "resume", ["list", "--json"]),
        ("checkpoint", "resume", ["show", "taskrunner-early"]),
        ("checkpoint", "resume", ["verify", "--format", "json"]),
        ("goldens", "step", ["points", str(TRACE)]),
    ],
    ids=lambda value: " ".join(value).replace(str(TRACE), "TRACE") if isinstance(value, list) else value,
)
def test_an_old_name_prints_what_the_new_one_prints_and_names_it_on_stderr(
    old: str, new: str, args: list[str]
) -> None:
    # Read-only commands, run where the repository's fixtures are (paths in the output are relative).
    now = agentevals(new, *args, cwd=REPO)
    before = agentevals(old, *args, cwd=REPO)
    assert now.returncode == before.returncode == 0, before.stderr
    assert now.stdout, "the command printed nothing: the comparison would prove nothing"
    assert before.stdout == now.stdout
    assert now.stderr == ""
    assert before.stderr == warning(old, new) + "\n"


def test_an_old_name_writes_what_the_new_one_writes(tmp_path: Path) -> None:
    # `goldens extract` writes the same cases and says the same; its options are the new command's.
    runs = {}
    for word in ("step", "goldens"):
        folder = tmp_path / word
        folder.mkdir()
        shutil.copy(TRACE, folder / "run.trace.jsonl")
        args = ["extract", "run.trace.jsonl", "--steps", "1-2", "--kind", "tool_choice", "--output", "g.yaml"]
        runs[word] = agentevals(word, *args, cwd=folder)
        assert runs[word].returncode == 0, runs[word].stderr
    assert runs["goldens"].stdout == runs["step"].stdout
    assert "wrote 2 step case(s) to g.yaml" in runs["step"].stdout
    assert (tmp_path / "goldens" / "g.yaml").read_text() == (tmp_path / "step" / "g.yaml").read_text()
    assert runs["goldens"].stderr == warning("goldens", "step") + "\n"


def test_an_old_name_fails_as_the_new_one_does_and_its_error_names_the_new_command(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.agentevals]\n")
    now = agentevals("resume", "verify", "nope", cwd=tmp_path)
    before = agentevals("checkpoint", "verify", "nope", cwd=tmp_path)
    assert now.returncode == before.returncode == 2
    assert now.stdout == before.stdout == ""
    assert now.stderr.startswith("agentevals resume: error: nope: no such checkpoint fixture in")
    assert before.stderr == warning("checkpoint", "resume") + "\n" + now.stderr


def test_help_lists_the_new_names_and_mentions_the_old_ones_last(tmp_path: Path) -> None:
    shown = agentevals("--help", cwd=tmp_path)
    assert shown.returncode == 0
    listed = [line.split()[0] for line in shown.stdout.splitlines() if line.startswith("    ")]
    assert {"step", "resume", "flaky"} <= set(listed)
    assert not {"goldens", "checkpoint"} & set(listed)  # not offered as commands of their own
    epilog = shown.stdout.rstrip().splitlines()[-2:]
    assert "goldens (now step), checkpoint (now resume)" in " ".join(epilog)
    assert shown.stdout.index("resume") < shown.stdout.index("checkpoint (now resume)")


def test_an_old_names_help_is_the_new_commands(tmp_path: Path) -> None:
    before = agentevals("checkpoint", "--help", cwd=tmp_path)
    assert before.returncode == 0
    assert before.stdout == agentevals("resume", "--help", cwd=tmp_path).stdout
    assert before.stdout.startswith("usage: agentevals resume ")
    assert before.stderr == warning("checkpoint", "resume") + "\n"


def test_only_the_subcommand_word_is_renamed() -> None:
    assert renamed(["checkpoint", "verify", "checkpoint"]) == (
        ["resume", "verify", "checkpoint"],
        warning("checkpoint", "resume"),
    )
    # The same word elsewhere on the line is a value (an output file, a program's argument).
    for words in (["record", "-o", "goldens", "agent.py"], ["show", "checkpoint"], ["resume", "list"], []):
        assert renamed(words) == (words, None)
    assert renamed(["--version"]) == (["--version"], None)
    assert DEPRECATED == {"goldens": "step", "checkpoint": "resume"}
