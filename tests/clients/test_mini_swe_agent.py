"""mini-swe-agent (on litellm), an agent nobody here wrote, through record, verify, promote, replay and
step extraction with no bridge code: only the command line, `--verify` and `replay_programs`.

Its `mini` command runs as a user runs it, against the endpoint `agentevals record -- COMMAND` starts,
forwarding to a simulated model that answers with mini's `bash` tool: read calc.py, fix it, submit.
The check of the work is the project's own tests (`--verify`; a run that gives up and one that fixes,
both exiting 0, are tests/endpoint/test_verify.py's, with a scripted agent: mini costs seconds a run).
"""

from __future__ import annotations

import json
import shlex
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_agentevals.sim import Reply, SimRequest, SimServer
from pytest_agentevals.step.loader import load_goldens
from pytest_agentevals.trace.reader import read_trace
from tests.conftest import make_fake_key, run_agentevals

from ..clients_support import need

BUGGY = "def add(a, b):\n    return a - b\n"
TESTS = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
SUBMIT = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
FIXES = ["cat calc.py", "sed -i 's/a - b/a + b/' calc.py", SUBMIT]


def policy(request: SimRequest) -> Reply:
    """Answers from the request alone: the task names the script, the assistant turns so far the step."""
    done = sum(1 for message in request.messages if message.get("role") == "assistant")
    command = FIXES[min(done, len(FIXES) - 1)]
    call = {"type": "tool_use", "name": "bash", "input": {"command": command}}
    return Reply([{"type": "text", "text": f"Step {done}."}, call])


@pytest.fixture(scope="module")
def model() -> Iterator[SimServer]:
    with SimServer(policy, seed=5) as sim:
        yield sim


def mini_command(task: str) -> list[str]:
    # Not imported here: importing minisweagent writes its config under the user's HOME.
    mini = shutil.which("mini")
    if mini is None:
        need("no-mini-command-on-path")  # skips (fails under CI) saying how to install the clients
    # -y: no confirmation; --exit-immediately: no prompt at the end; -l 0: no cost limit (the simulated
    # model has no price litellm knows); -o: its trajectory outside the folder it works on.
    flags = ["-y", "--exit-immediately", "-l", "0", "-o", "../traj.json"]
    return [mini, "-m", "anthropic/sim-1", "-t", task, *flags]


def mini_env(home: Path) -> dict[str, str]:
    """mini-swe-agent's own settings: configured (no first-run questions), its config folder in the
    test's temp folder, litellm's unknown-model cost lookup not fatal, and a fake key; litellm's own
    price list, not the one it fetches from the network when it is imported."""
    return {
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "MSWEA_CONFIGURED": "true",
        "MSWEA_GLOBAL_CONFIG_DIR": str(home / "mswea"),
        "MSWEA_COST_TRACKING": "ignore_errors",
        "ANTHROPIC_API_KEY": make_fake_key("mini"),
        "HOME": str(home),
    }


def record(work: Path, model: SimServer, task: str, home: Path) -> Any:
    return run_agentevals(
        "record", "-o", "run.trace.jsonl", "--upstream", model.url,
        "--verify", "python -m pytest -q -p no:cacheprovider test_calc.py",
        "--", *mini_command(task), cwd=work, env=mini_env(home),
    )  # fmt: skip


def test_mini_swe_agent_recorded_promoted_replayed_and_stepped_with_config_alone(
    pytester: pytest.Pytester, model: SimServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    work = pytester.path
    (work / "calc.py").write_text(BUGGY)
    (work / "test_calc.py").write_text(TESTS)
    command = mini_command("fix calc.py so the tests pass")

    done = record(work, model, "fix calc.py so the tests pass", home)
    assert done.returncode == 0, done.stderr
    assert "test_calc.py: passed" in done.stderr
    events = list(read_trace(work / "run.trace.jsonl"))
    assert [e["passed"] for e in events if e["type"] == "verification"] == [True]
    assert sum(e["type"] == "model_call" for e in events) == 3
    assert (work / "calc.py").read_text() != BUGGY
    asked = len(model.requests)
    assert "FALSE CLAIM" not in run_agentevals("show", "run.trace.jsonl", cwd=work).stdout

    # Step: the context mini had before its second decision, in the shape mini keeps it (litellm's).
    extracted = run_agentevals("step", "extract", "run.trace.jsonl", "--steps=2", "-o", "mini.yaml", cwd=work)
    assert extracted.returncode == 0, extracted.stderr
    (case,) = load_goldens(work / "mini.yaml").cases
    own = json.loads((work.parent / "traj.json").read_text())["messages"]
    frozen = case.openai_messages
    assert [m["role"] for m in frozen] == [m["role"] for m in own[: len(frozen)]]
    assert frozen[0]["content"] == own[0]["content"]  # mini's system prompt
    called = [c["function"] for m in frozen for c in m.get("tool_calls", [])]
    assert [json.loads(c["arguments"]) for c in called] == [{"command": "cat calc.py"}]
    # litellm sent mini's string tool output as text blocks: they come back as OpenAI text parts.
    (result,) = (m for m in frozen if m["role"] == "tool")
    assert "".join(part["text"] for part in result["content"]) == own[3]["content"]
    assert result["tool_call_id"] == own[3]["tool_call_id"]

    # Promote: a replay test, allowed by the command line alone; it runs offline in a fresh copy.
    (work / "calc.py").write_text(BUGGY)
    promoted = run_agentevals("promote", "run.trace.jsonl", "--name", "mini-fix", cwd=work)
    assert promoted.returncode == 0, promoted.stderr
    pytester.makepyprojecttoml(f"[tool.agentevals]\nreplay_programs = [{json.dumps(shlex.join(command))}]\n")
    for name, value in mini_env(home).items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    replayed = pytester.runpytest("-p", "no:cacheprovider", "tests/test_replay_mini_fix.py")
    replayed.assert_outcomes(passed=1)
    assert len(model.requests) == asked  # nothing reached the model
    assert (work / "calc.py").read_text() == BUGGY  # the replay worked on a copy
