"""A promoted `agentevals record -- COMMAND` run replays by itself: `promote` writes a test that re-runs
the command in a fresh copy of the folder it was recorded in, against the replay, with no hook to
write; the repository allows the command by its whole command line (`replay_programs`), never the
trace. End to end, as a user runs it: record, promote, the promoted test passes offline; the agent
changed, it fails with the replay's divergence."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest

from pytest_agentevals.sim import Reply, SimServer
from pytest_agentevals.trace.reader import read_trace
from tests.conftest import make_fake_key, run_agentevals

# The agent lives outside the folder it works on (as an installed agent does); the folder is its work.
AGENT = """\
import pathlib, sys
import anthropic

ASK = "fix calc.py"
client = anthropic.Anthropic(max_retries=0)
reply = client.messages.create(model="sim-1", max_tokens=50, messages=[{"role": "user", "content": ASK}])
source = pathlib.Path("calc.py").read_text()  # the recorded workspace's file, in the replay too
pathlib.Path("calc.py").write_text(source.replace("a - b", "a + b"))
print(reply.content[0].text)
"""
BUGGY = "def add(a, b):\n    return a - b\n"


@pytest.fixture(scope="module")
def model() -> Iterator[SimServer]:
    with SimServer(lambda request: Reply.text("Fixed.")) as sim:
        yield sim


def test_a_promoted_command_run_replays_by_itself_and_a_changed_agent_diverges(
    pytester: pytest.Pytester, tmp_path_factory: pytest.TempPathFactory, model: SimServer
) -> None:
    agent = tmp_path_factory.mktemp("agents") / "fixer.py"
    agent.write_text(AGENT)
    root = pytester.path
    (root / "calc.py").write_text(BUGGY)
    command = [sys.executable, str(agent)]
    label = " ".join(command)

    env = {"ANTHROPIC_API_KEY": make_fake_key("promote")}
    done = run_agentevals(
        "record", "-o", "run.trace.jsonl", "--upstream", model.url, "--", *command, cwd=root, env=env
    )
    assert done.returncode == 0, done.stderr
    start = next(e for e in read_trace(root / "run.trace.jsonl") if e["type"] == "checkpoint")
    assert start["name"] == "command start"
    assert start["workspace"]["files"]["calc.py"]["text"] == BUGGY  # the folder as the command found it
    assert "run.trace.jsonl" not in start["workspace"]["files"]
    assert (root / "calc.py").read_text() != BUGGY  # the agent fixed the real one

    promoted = run_agentevals("promote", "run.trace.jsonl", "--name", "fix-calc", cwd=root)
    assert promoted.returncode == 0, promoted.stderr
    test_file = root / "tests" / "test_replay_fix_calc.py"
    assert "re-runs the recorded command" not in test_file.read_text()  # the hint is on the terminal
    assert f"fresh copy of the folder it was recorded in: `{label}`" in test_file.read_text()
    assert "replay_programs = " in promoted.stdout  # not allowed yet: promote says what to add

    # Not allowed by the repository: the test fails saying how to allow it, and nothing runs.
    (root / "calc.py").write_text(BUGGY)
    test = "tests/test_replay_fix_calc.py"
    refused = pytester.runpytest("-p", "no:cacheprovider", test)
    refused.assert_outcomes(failed=1)
    refused.stdout.fnmatch_lines(["*a replay runs only a command the repository allows*"])

    pytester.makepyprojecttoml(f'[tool.agentevals]\nreplay_programs = ["{label}"]\n')
    pytester.runpytest("-p", "no:cacheprovider", test).assert_outcomes(passed=1)
    assert (root / "calc.py").read_text() == BUGGY  # it ran in a copy, not in the project

    agent.write_text(AGENT.replace('ASK = "fix calc.py"', 'ASK = "fix calc.py, quickly"'))
    diverged = pytester.runpytest("-p", "no:cacheprovider", test)
    diverged.assert_outcomes(failed=1)
    diverged.stdout.fnmatch_lines(["*ReplayDivergence*", "*fix calc.py, quickly*"])
