"""A promoted `agentevals record agent.py` run (a Python program run in agentevals' process) replays by
itself in a fresh copy of the folder it was recorded in, never in the repository: the recording keeps
that folder (a `program start` checkpoint), the promoted test and `agentevals replay TRACE agent.py`
restore it into a temporary folder and run the repository's script there. End to end, as a user runs
it: record, promote, replay offline (the project untouched, the files the script reads are there); the
script changed, it fails with the replay's divergence."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_agentevals.sim import Reply, SimServer
from pytest_agentevals.trace.reader import read_trace
from tests.conftest import make_fake_key, run_agentevals

# The script works on the folder it runs in: it reads calc.py there, fixes it and leaves a note.
AGENT = """\
import os, pathlib
import anthropic

ASK = "fix calc.py"
client = anthropic.Anthropic(max_retries=0)
reply = client.messages.create(model="sim-1", max_tokens=50, messages=[{"role": "user", "content": ASK}])
source = pathlib.Path("calc.py").read_text()  # the recorded workspace's file, in the replay too
pathlib.Path("calc.py").write_text(source.replace("a - b", "a + b"))
pathlib.Path("notes.txt").write_text(reply.content[0].text)
print("ran in", os.getcwd())
data = pathlib.Path("data.txt")
print("data", len(data.read_text()) if data.exists() else None)
"""
BUGGY = "def add(a, b):\n    return a - b\n"


@pytest.fixture(scope="module")
def model() -> Iterator[SimServer]:
    with SimServer(lambda request: Reply.text("Fixed.")) as sim:
        yield sim


def recorded(root: Path, model: SimServer) -> Path:
    (root / "agent.py").write_text(AGENT)
    (root / "calc.py").write_text(BUGGY)
    env = {"ANTHROPIC_API_KEY": make_fake_key("program")}
    done = run_agentevals(
        "record", "-o", "run.trace.jsonl", "--upstream", model.url, "agent.py", cwd=root, env=env
    )
    assert done.returncode == 0, done.stderr
    assert (root / "calc.py").read_text() != BUGGY  # the script fixed the real one
    # The project as it was before the recording, for the replays below to leave alone.
    (root / "calc.py").write_text(BUGGY)
    (root / "notes.txt").unlink()
    return root / "run.trace.jsonl"


def test_a_promoted_program_run_replays_in_a_fresh_copy_and_a_changed_script_diverges(
    pytester: pytest.Pytester, model: SimServer
) -> None:
    root = pytester.path
    trace = recorded(root, model)
    # The recording keeps the folder the script started in, before its first step.
    checkpoints = [e for e in read_trace(trace) if e["type"] == "checkpoint"]
    assert [c["name"] for c in checkpoints] == ["program start"]
    start = checkpoints[0]
    assert start["step"] == 0
    assert start["state"] == {"format": "agentevals-program/1", "argv": ["agent.py"]}
    assert start["workspace"]["files"]["calc.py"]["text"] == BUGGY  # the folder as the script found it
    assert "run.trace.jsonl" not in start["workspace"]["files"]

    promoted = run_agentevals("promote", "run.trace.jsonl", "--name", "fix-calc", cwd=root)
    assert promoted.returncode == 0, promoted.stderr
    test_file = root / "tests" / "test_replay_fix_calc.py"
    assert "recorded program, run again in a\nfresh copy of the folder it was recorded in: `agent.py`" in (
        test_file.read_text()
    )
    assert 'replay_programs = ["agent.py"]' in promoted.stdout  # not allowed yet: promote says so

    test = "tests/test_replay_fix_calc.py"
    refused = pytester.runpytest("-p", "no:cacheprovider", test)
    refused.assert_outcomes(failed=1)
    refused.stdout.fnmatch_lines(["*a replay runs only a program the repository allows*"])

    pytester.makepyprojecttoml('[tool.agentevals]\nreplay_programs = ["agent.py"]\n')
    passed = pytester.runpytest("-p", "no:cacheprovider", "-s", test)
    passed.assert_outcomes(passed=1)
    ran_in = next(line for line in passed.outlines if "ran in " in line).split("ran in ", 1)[1]
    assert "agentevals-replay-" in ran_in
    assert str(root) not in ran_in
    assert (root / "calc.py").read_text() == BUGGY  # it ran in a copy, not in the project
    assert not (root / "notes.txt").exists()

    (root / "agent.py").write_text(AGENT.replace('ASK = "fix calc.py"', 'ASK = "fix calc.py, quickly"'))
    diverged = pytester.runpytest("-p", "no:cacheprovider", test)
    diverged.assert_outcomes(failed=1)
    diverged.stdout.fnmatch_lines(["*ReplayDivergence*", "*fix calc.py, quickly*"])


def test_agentevals_replay_runs_the_program_in_a_fresh_copy_and_a_changed_script_diverges(
    pytester: pytest.Pytester, model: SimServer
) -> None:
    root = pytester.path
    recorded(root, model)
    offline = {"ANTHROPIC_API_KEY": make_fake_key("offline")}
    done = run_agentevals("replay", "run.trace.jsonl", "agent.py", cwd=root, env=offline)
    assert done.returncode == 0, done.stderr
    assert "agentevals-replay-" in done.stdout
    assert f"ran in {root}\n" not in done.stdout
    assert "ran in a fresh copy of the folder the run was recorded in" in done.stderr
    assert (root / "calc.py").read_text() == BUGGY
    assert not (root / "notes.txt").exists()

    (root / "agent.py").write_text(AGENT.replace('ASK = "fix calc.py"', 'ASK = "fix calc.py, quickly"'))
    diverged = run_agentevals("replay", "run.trace.jsonl", "agent.py", cwd=root, env=offline)
    assert diverged.returncode == 1
    assert "ReplayDivergence" in diverged.stderr
    assert "fix calc.py, quickly" in diverged.stderr
    assert (root / "calc.py").read_text() == BUGGY


def test_a_file_too_large_for_the_trace_comes_from_the_project_if_unchanged(
    pytester: pytest.Pytester, model: SimServer
) -> None:
    root = pytester.path
    (root / "data.txt").write_text("x" * (300 * 1024))  # over 256 KiB: the trace keeps its hash only
    trace = recorded(root, model)
    start = next(e for e in read_trace(trace) if e["type"] == "checkpoint")
    assert "text" not in start["workspace"]["files"]["data.txt"]
    offline = {"ANTHROPIC_API_KEY": make_fake_key("offline")}
    done = run_agentevals("replay", "run.trace.jsonl", "agent.py", cwd=root, env=offline)
    assert done.returncode == 0, done.stderr
    assert f"data {300 * 1024}\n" in done.stdout  # in the copy, checked against the recorded hash

    (root / "data.txt").write_text("y" * (300 * 1024))
    changed = run_agentevals("replay", "run.trace.jsonl", "agent.py", cwd=root, env=offline)
    assert changed.returncode == 2
    assert "cannot restore the workspace to re-run `agent.py` in" in changed.stderr
    assert "is not the file 'data.txt' the checkpoint recorded" in changed.stderr
    assert "Traceback" not in changed.stderr
    assert "ran in" not in changed.stdout  # nothing ran
