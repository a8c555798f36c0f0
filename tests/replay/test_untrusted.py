"""Cassettes and traces are untrusted data (they arrive in pull requests): loading one never runs the
code it names, never writes outside the workspace, never expands without bound, and a damaged one is
one clear error naming the file and the fix. Each promise is tested with a crafted file.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

import pytest_agentevals as ae
from examples.taskrunner.supervisor import MARKER, Checkpoint
from pytest_agentevals.errors import TraceFormatError
from pytest_agentevals.settings import Settings
from pytest_agentevals.trace.paths import link_problem

from .. import replay_support as agent
from ..conftest import run_agentevals as agentevals

START = {"type": "run_start", "v": 1, "run_id": "r", "agent": "a", "started_at": "2026-01-01", "contract": {}}
END = {"type": "run_end", "seq": 9, "t": 1.0, "status": "ok", "totals": {}}


def write_trace(path: Path, *events: dict[str, Any], start: dict[str, Any] | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(e) + "\n" for e in (start or START, *events, END)))
    return path


# -- the program a recorded run is replayed against is the repository's choice ----------------------

PROGRAM = """
import os
from pathlib import Path
Path("ran.txt").write_text("the trace's program ran: " + Path("input.txt").read_text())
Path(__file__).with_name("ran-in.txt").write_text(os.getcwd())
"""
# The folder a recorded program started in, as `agentevals record` keeps it: what a replay runs it in.
PROGRAM_START = {
    "type": "checkpoint",
    "seq": 1,
    "t": 0.0,
    "step": 0,
    "name": "program start",
    "state": {"format": "agentevals-program/1", "argv": ["tool.py"]},
    "workspace": {"root": "/ws", "files": {"input.txt": {"sha256": "0", "size": 1, "text": "x"}}},
}


@pytest.fixture
def recorded_program(pytester: pytest.Pytester) -> pytest.Pytester:
    """A cassette whose task names a program (as `agentevals record` writes it), and that program."""
    (pytester.path / "tool.py").write_text(PROGRAM)
    (pytester.path / "pkgtool").mkdir()
    (pytester.path / "pkgtool" / "__init__.py").write_text("")
    (pytester.path / "pkgtool" / "__main__.py").write_text(PROGRAM)
    write_trace(
        pytester.path / "cassettes" / "script.trace.jsonl",
        PROGRAM_START,
        start={**START, "task": {"argv": ["tool.py"]}},
    )
    write_trace(
        pytester.path / "cassettes" / "module.trace.jsonl",
        {**PROGRAM_START, "state": {"format": "agentevals-program/1", "argv": ["-m", "pkgtool", "--x"]}},
        start={**START, "task": {"argv": ["-m", "pkgtool", "--x"]}},
    )
    return pytester


def test_a_cassette_cannot_choose_the_program_it_runs(recorded_program: pytest.Pytester) -> None:
    result = recorded_program.runpytest("cassettes")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        [
            "E   AgentEvalsError: */cassettes/module.trace.jsonl: this run was recorded from `-m pkgtool` "
            "(run_start.task.argv), and a replay runs only a program the repository allows, never one a "
            "trace names. If that program is yours, allow it in pyproject.toml: [[]tool.agentevals[]] "
            'replay_programs = [[]"-m pkgtool"[]]; or start the agent yourself in a '
            "`pytest_agentevals_run_agent(run)` hook (see docs/replay.md)",
            "E   AgentEvalsError: */cassettes/script.trace.jsonl: this run was recorded from `tool.py`*"
            'replay_programs = [[]"tool.py"[]]*',
        ]
    )
    assert not (recorded_program.path / "ran.txt").exists()
    assert not (recorded_program.path / "pkgtool" / "ran-in.txt").exists()
    assert not (recorded_program.path / "ran-in.txt").exists()


def test_a_program_the_repository_allows_is_replayed_in_a_copy_of_its_recorded_folder(
    recorded_program: pytest.Pytester,
) -> None:
    recorded_program.makepyprojecttoml('[tool.agentevals]\nreplay_programs = ["-m pkgtool"]\n')
    result = recorded_program.runpytest("cassettes")
    result.assert_outcomes(passed=1, failed=1)  # tool.py is still not allowed
    # The repository's code ran, in a fresh copy of the recorded folder (input.txt there), not here.
    ran_in = (recorded_program.path / "pkgtool" / "ran-in.txt").read_text()
    assert "agentevals-replay-" in ran_in
    assert not (recorded_program.path / "ran.txt").exists()
    assert not (recorded_program.path / "ran-in.txt").exists()


def test_a_recorded_program_whose_trace_kept_no_start_folder_is_not_run(pytester: pytest.Pytester) -> None:
    (pytester.path / "tool.py").write_text(PROGRAM)
    write_trace(
        pytester.path / "cassettes" / "old.trace.jsonl", start={**START, "task": {"argv": ["tool.py"]}}
    )
    pytester.makepyprojecttoml('[tool.agentevals]\nreplay_programs = ["tool.py"]\n')
    result = pytester.runpytest("cassettes")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*old.trace.jsonl: cannot restore the workspace to re-run `tool.py` in: *no checkpoint at or "
            "before step 0*a run recorded by `agentevals record script.py (or -m module)` keeps the folder "
            "it starts in; record it again*"
        ]
    )
    assert not (pytester.path / "ran-in.txt").exists()


def test_an_allow_list_entry_names_a_program_only(tmp_path: Path) -> None:
    with pytest.raises(ae.ConfigError, match=r"replay_programs: '-m pkg --x' is not a program"):
        Settings.resolve(tmp_path, pyproject={"replay_programs": ["-m pkg --x"]})


# -- checkpoint paths never leave the workspace ------------------------------------------------------


def checkpoint(files: dict[str, Any], removed: list[str] | None = None, base: bool = False) -> dict[str, Any]:
    workspace: dict[str, Any] = {"root": "/ws", "files": files}
    if base:
        workspace.update(base="previous", removed=removed or [])
    return {"type": "checkpoint", "seq": 1, "t": 0.1, "step": 1, "state": {}, "workspace": workspace}


TEXT = {"sha256": "0", "size": 1, "text": "x"}


@pytest.mark.parametrize(
    ("files", "problem"),
    [
        ({"../x": TEXT}, "'../x' climbs out of the workspace (`..`)"),
        ({"a/../../x": TEXT}, "'a/../../x' climbs out of the workspace (`..`)"),
        ({"/etc/x": TEXT}, "'/etc/x' is absolute: a workspace path is relative to the workspace"),
        ({"C:\\x": TEXT}, "'C:\\\\x' is absolute"),
        ({"a\x00b": TEXT}, "'a\\x00b' holds a NUL byte"),
        ({"key": {"link": 7}}, "'key' is a link without a target text"),
    ],
)
def test_a_checkpoint_naming_a_path_outside_its_workspace_is_refused_on_read(
    tmp_path: Path, files: dict[str, Any], problem: str
) -> None:
    trace = write_trace(tmp_path / "t.trace.jsonl", checkpoint(files))
    with pytest.raises(TraceFormatError) as caught:
        ae.read_trace(trace)
    assert caught.value.line == 2
    assert str(caught.value).startswith(f"{trace}:2: checkpoint.workspace.files: {problem}")


def test_a_removed_path_outside_the_workspace_is_refused_on_read(tmp_path: Path) -> None:
    trace = write_trace(
        tmp_path / "t.trace.jsonl",
        checkpoint({"a.txt": TEXT}),
        {**checkpoint({}, ["../../x"], base=True), "seq": 2},
    )
    with pytest.raises(TraceFormatError, match=r":3: checkpoint.workspace.removed: '../../x' climbs out"):
        ae.read_trace(trace)


def test_links_inside_the_workspace_are_read(tmp_path: Path) -> None:
    trace = write_trace(tmp_path / "t.trace.jsonl", checkpoint({"a/b": {"link": "../c"}, "c": TEXT}))
    assert ae.read_trace(trace)[1]["workspace"]["files"]["a/b"] == {"link": "../c"}


@pytest.mark.parametrize(
    ("name", "target", "problem"),
    [
        ("key", "../../home/me/.ssh/id_ed25519", "is a link to '../../home/me/.ssh/id_ed25519', outside"),
        ("key", "/home/me/.ssh/id_ed25519", "is a link to '/home/me/.ssh/id_ed25519', outside"),
        ("a/key", "b/../../../x", "is a link to 'b/../../../x', outside the workspace"),
    ],
)
def test_a_link_leaving_the_workspace_is_read_as_its_target_text_and_refused_on_restore(
    tmp_path: Path, name: str, target: str, problem: str
) -> None:
    # The recorder stores such a link faithfully (never following it), so its own reader reads it;
    # it is where a workspace is written back that a link may not leave.
    trace = write_trace(tmp_path / "t.trace.jsonl", checkpoint({name: {"link": target}}))
    assert ae.read_trace(trace)[1]["workspace"]["files"][name] == {"link": target}
    assert link_problem(name, target) is not None
    assert problem in (link_problem(name, target) or "")
    assert link_problem("a/b", "../c") is None


@pytest.mark.parametrize("name", ["../outside.txt", "/tmp/outside.txt", "a/../../outside.txt", "a\x00b"])
def test_the_example_refuses_to_restore_a_path_outside_the_workspace(tmp_path: Path, name: str) -> None:
    if name.startswith("/"):
        name = str(tmp_path / "outside.txt")
    workspace = tmp_path / "ws" / "inner"
    workspace.mkdir(parents=True)
    (workspace / MARKER).touch()
    (workspace / "kept.txt").write_text("still here")
    event = checkpoint({name: TEXT, "fine.txt": TEXT})
    with pytest.raises(ValueError, match="refused to restore it"):
        Checkpoint.from_event(event)
    crafted = Checkpoint(files={name: "owned", "fine.txt": "x"})  # built by hand, not read
    with pytest.raises(ValueError, match="refused to restore it"):
        crafted.restore(workspace)
    assert not (tmp_path / "outside.txt").exists()
    assert not (tmp_path / "ws" / "outside.txt").exists()
    assert (workspace / "kept.txt").read_text() == "still here"  # refused before anything was removed


# -- YAML aliases never expand without bound --------------------------------------------------------

BOMB = """\
a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
interactions:
- request: {method: POST, uri: "https://api.anthropic.com/v1/messages", headers: {x: *i}}
  response: {status: {code: 200, message: OK}, headers: {}, body: {string: "{}"}}
"""


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (BOMB, "holds YAML aliases that expand 54 written nodes into 926,177,140"),
        ("a: &a [1, *a]\ninteractions: []\n", "holds an alias that contains itself"),
    ],
)
def test_a_yaml_cassette_whose_aliases_explode_is_refused(tmp_path: Path, text: str, problem: str) -> None:
    (tmp_path / "bomb.yaml").write_text(text)
    (tmp_path / "agent.py").write_text("print('never runs')\n")
    # A subprocess, so a regression that expands the bomb is stopped by the timeout, not the machine.
    result = agentevals("replay", "bomb.yaml", "agent.py", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr == (
        f"agentevals replay: error: bomb.yaml: {problem} (vcrpy never writes aliases: refused to expand "
        "them; restore the cassette from version control, re-record it, or write the repeated parts out)\n"
    )


def test_a_few_harmless_aliases_still_load(tmp_path: Path) -> None:
    text = (
        "h: &h {content-type: [application/json]}\n"
        "interactions:\n"
        "- request: {method: GET, uri: 'https://example.com/a', headers: *h}\n"
        "  response: {status: {code: 200, message: OK}, headers: *h, body: {string: '{}'}}\n"
    )
    (tmp_path / "ok.yaml").write_text(text)
    from pytest_agentevals.replay import load_cassette

    assert len(load_cassette(tmp_path / "ok.yaml").interactions) == 1


# -- one clear error where there was a traceback --------------------------------------------------


def test_a_symlink_loop_under_the_cassettes_is_one_clear_failure(pytester: pytest.Pytester) -> None:
    folder = pytester.path / "cassettes"
    folder.mkdir()
    os.symlink("loop.trace.jsonl", folder / "loop.trace.jsonl")
    os.symlink(".", folder / "again")  # a folder that contains itself
    pytester.makepyfile(test_fine="def test_fine():\n    pass\n")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "E   CassetteError: */cassettes/loop.trace.jsonl: is a symbolic link that loops or points "
            "nowhere (replace it with the cassette file it stands for, or delete it)"
        ]
    )
    assert "INTERNALERROR" not in result.stdout.str()


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "replay_support.py").write_text(Path(agent.__file__).read_text())
    (tmp_path / "fix_it.py").write_text(
        "import replay_support as agent\nagent.run_agent(agent.client(), 'x')\n"
    )
    agent.record(tmp_path / "run.trace.jsonl")
    return tmp_path


@pytest.mark.parametrize(
    ("field", "value", "problem"),
    [
        ("method", 1, "model_call.request.method must be a string, found an integer"),
        ("url", ["https://x"], "model_call.request.url must be a string, found an array"),
        ("headers", "x", "model_call.request.headers must be an object, found a string"),
    ],
)
def test_a_model_call_with_a_bad_request_is_one_clear_error(
    folder: Path, field: str, value: Any, problem: str
) -> None:
    trace = folder / "run.trace.jsonl"
    lines = trace.read_text().splitlines(keepends=True)
    event = json.loads(lines[1])
    event["request"][field] = value
    lines[1] = json.dumps(event) + "\n"
    trace.write_text("".join(lines))
    result = agentevals("replay", "run.trace.jsonl", "fix_it.py", cwd=folder)
    assert result.returncode == 2
    assert result.stderr == (
        f"agentevals replay: error: run.trace.jsonl:2: {problem} (the file is damaged: restore it from "
        "version control, or re-record it (pytest --agentevals-record=all, or agentevals record))\n"
    )


def test_a_cassette_from_a_newer_version_says_upgrade(folder: Path) -> None:
    trace = folder / "run.trace.jsonl"
    lines = trace.read_text().splitlines(keepends=True)
    lines[0] = lines[0].replace('"v":1', '"v":2', 1)
    trace.write_text("".join(lines))
    result = agentevals("replay", "run.trace.jsonl", "fix_it.py", cwd=folder)
    assert result.returncode == 2
    assert result.stderr == (
        "agentevals replay: error: run.trace.jsonl:1: written in trace format version 2 by a newer version "
        "of pytest-agentevals (this one reads version 1): upgrade pytest-agentevals (pip install -U "
        "pytest-agentevals; or re-record the cassette with this version (pytest --agentevals-record=all, or "
        "agentevals record))\n"
    )
