"""`agentevals record --verify CMD -- COMMAND`: a check run after the command, in its folder, is the
run's verification event, so a command's run has a verdict beyond its exit code. A tiny scripted
agent asks the (simulated) model once, then fixes a bug or gives up — and exits 0 either way, as
mini-swe-agent does when it gives up."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_agentevals import Recorder
from pytest_agentevals.sim import Reply, SimServer
from pytest_agentevals.trace.reader import read_trace
from tests.conftest import make_fake_key, run_agentevals

AGENT = """\
import sys
import anthropic

client = anthropic.Anthropic()  # the endpoint's URL from the environment
client.messages.create(model="sim-1", max_tokens=50, messages=[{"role": "user", "content": "fix calc.py"}])
if sys.argv[1] == "fix":
    open("calc.py", "w").write("def add(a, b):\\n    return a + b\\n")
print("done")  # and exits 0, fixed or not
"""
BUGGY = "def add(a, b):\n    return a - b\n"
CHECK = "import calc, sys; sys.exit(0 if calc.add(2, 3) == 5 else 1)"


@pytest.fixture(scope="module")
def model() -> Iterator[SimServer]:
    with SimServer(lambda request: Reply.text("I will try.")) as sim:
        yield sim


def project(root: Path) -> Path:
    root.mkdir()
    (root / "agent.py").write_text(AGENT)
    (root / "calc.py").write_text(BUGGY)
    return root


def record(root: Path, model: SimServer, *args: str) -> tuple[str, list[dict]]:
    env = {"ANTHROPIC_API_KEY": make_fake_key("verify")}
    done = run_agentevals(
        "record", "-o", "run.trace.jsonl", "--upstream", model.url, *args, cwd=root, env=env
    )
    assert done.returncode == 0, done.stderr  # the agent's own exit code: 0 whether it fixed it or not
    return done.stderr, read_trace(root / "run.trace.jsonl")


def show(root: Path) -> str:
    done = run_agentevals("show", "run.trace.jsonl", cwd=root)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize(
    ("mode", "passed", "verdict"),
    [("fix", True, "verified pass at step 1"), ("give-up", False, "FALSE CLAIM")],
)
def test_the_check_after_the_command_is_the_runs_verification(
    tmp_path: Path, model: SimServer, mode: str, passed: bool, verdict: str
) -> None:
    root = project(tmp_path / mode)
    said, events = record(root, model, "--verify", f"python -c '{CHECK}'", "--", "python", "agent.py", mode)
    checks = [event for event in events if event["type"] == "verification"]
    assert len(checks) == 1
    check = checks[0]
    assert check["passed"] is passed
    assert check["exit_code"] == (0 if passed else 1)
    assert check["name"].startswith("verify: python -c ")
    assert events[-1]["type"] == "run_end"
    assert events[-1]["status"] == "ok"  # the command's exit code; the check is the verdict
    assert events[-1]["totals"]["verifications"] == {"passed": int(passed), "failed": int(not passed)}
    assert (
        f"agentevals record: verify python -c '{CHECK}': {'passed' if passed else 'failed (exit code 1)'}"
        in said
    )
    assert verdict in show(root)


def test_without_a_check_a_commands_run_is_unverified_not_a_false_claim(
    tmp_path: Path, model: SimServer
) -> None:
    root = project(tmp_path / "plain")
    _, events = record(root, model, "--", "python", "agent.py", "fix")
    assert not [event for event in events if event["type"] == "verification"]
    shown = show(root)
    assert "unverified" in shown
    assert "FALSE CLAIM" not in shown


def test_a_check_that_cannot_be_split_or_run_is_one_clear_error(tmp_path: Path, model: SimServer) -> None:
    root = project(tmp_path / "bad")
    done = run_agentevals(
        "record", "-o", "run.trace.jsonl", "--verify", "python -c 'unclosed", "--", "true", cwd=root
    )
    assert done.returncode == 2
    assert "--verify: cannot be split into words" in done.stderr
    assert "Traceback" not in done.stderr
    with Recorder(root / "direct.trace.jsonl", http=False) as recorder:
        with pytest.raises(Exception, match="cannot run the check no-such-check-command"):
            recorder.verify("no-such-check-command --flag", cwd=root)
        check = recorder.verify(["python", "-c", "print('x' * 9000)"], cwd=root)  # a long output: its tail
    assert check.passed
    stored = next(e for e in read_trace(root / "direct.trace.jsonl") if e["type"] == "verification")
    assert len(stored["output"]) == 4000
    assert json.dumps(stored["command"]) == '["python", "-c", "print(\'x\' * 9000)"]'
