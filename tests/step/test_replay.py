"""Step cases whose decision is a real model call (the anthropic SDK against the simulated server):
recorded once, replayed offline, stale with what changed when recording is off."""

from __future__ import annotations

import json
from pathlib import Path
from xml.etree import ElementTree

import anthropic  # noqa: F401 - imported once here, not again in every in-process pytester run
import pytest

import pytest_agentevals.sim  # noqa: F401 - likewise
from pytest_agentevals import read_trace

from ..schema_support import VALIDATOR

# The harness under test: its system prompt, tools and model come from the environment, so a test
# can change them the way a commit would. STEP_OFFLINE points the client at a closed port: a case
# that passes then was answered from its recording.
CONFTEST = """
import os
import anthropic, pytest
from pytest_agentevals.step import JudgeSpec, JudgeVerdict, anthropic_judge
from pytest_agentevals.sim import Reply, SimServer

TOOLS = [{"name": "read_file", "description": os.environ.get("STEP_TOOL_DOC", "Read a file"),
          "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}}]

def policy(request):
    text = request.messages[-1]["content"]
    if text.startswith("Rubric:"):
        return Reply.text('{"pass": true, "reason": "names the task"}')
    if text.startswith("COMPACT"):
        return Reply.text("Done T001 and T002; next is T003.")
    return Reply.tool_use("read_file", {"path": text.split()[-1]})

@pytest.fixture(scope="session")
def model():
    with SimServer(policy, seed=1) as sim:
        yield sim

@pytest.fixture
def client(model):
    url = "http://127.0.0.1:9" if os.environ.get("STEP_OFFLINE") else model.url
    return anthropic.Anthropic(base_url=url, api_key="test-" + "k" * 12, max_retries=0)

@pytest.fixture
def agentevals_decide(client):
    def decide(case):
        params = dict(model="sim-1", max_tokens=200, messages=case.messages, tools=TOOLS,
                      system=os.environ.get("STEP_SYSTEM", "You are careful."))
        if os.environ.get("STEP_STREAM"):
            with client.messages.stream(**params) as stream:
                return stream.get_final_message()
        try:
            return client.messages.create(**params)
        except Exception:
            if os.environ.get("STEP_SWALLOW"):
                return "the harness swallowed an error"
            raise
    return decide

@pytest.fixture
def agentevals_judge(client):
    return anthropic_judge(client)
"""

GOLDENS = """\
cases:
  - id: step-1-tool-choice
    kind: tool_choice
    context:
      request: {messages: [{role: user, content: "please read src/a.py"}]}
    expect: {tool: read_file, args: {path: src/a.py}}
  - id: step-2-tool-choice
    kind: tool_choice
    context:
      request: {messages: [{role: user, content: "please read src/b.py"}]}
    expect: {tool: read_file, args: {path: src/b.py}}
"""


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest("-p", "no:hypothesispytest", "goldens", *args)


@pytest.fixture
def goldens(pytester: pytest.Pytester) -> Path:
    folder = pytester.mkdir("goldens")
    (folder / "conftest.py").write_text(CONFTEST)
    (folder / "demo.yaml").write_text(GOLDENS)
    return folder


@pytest.fixture
def recorded(pytester: pytest.Pytester, goldens: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    result = run(pytester, "--agentevals-record=new")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        ["recorded 2 model exchange(s) for 2 case(s) into goldens/demo.decisions.trace.jsonl (2 in all)"]
    )
    monkeypatch.setenv("STEP_OFFLINE", "1")
    return goldens / "demo.decisions.trace.jsonl"


def test_with_nothing_recorded_and_recording_off_a_case_says_how_to_record(
    pytester: pytest.Pytester, goldens: Path
) -> None:
    result = run(pytester)
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        [
            "has no recorded decision for its model request, and recording is off "
            "(--agentevals-record=none) (run the step cases once with --agentevals-record=new*"
        ]
    )
    assert not (goldens / "demo.decisions.trace.jsonl").exists()


def test_recorded_decisions_replay_offline(pytester: pytest.Pytester, recorded: Path) -> None:
    events = read_trace(recorded)
    calls = [event for event in events if event["type"] == "model_call"]
    assert [call["case"] for call in calls] == ["step-1-tool-choice", "step-2-tool-choice"]
    assert all(call["request"].get("headers") is None for call in calls)  # no credentials stored
    assert "kkkkkkkkkkkk" not in recorded.read_text()
    for line in recorded.read_text().splitlines():  # a trace like any other: `show`, `report` read it
        VALIDATOR.validate(json.loads(line))
    totals = events[-1]["totals"]
    assert (totals["model_calls"], totals["steps"]) == (2, 2)
    assert totals["tokens"]["input_tokens"] == sum(call["usage"]["input_tokens"] for call in calls)
    before = recorded.read_text()
    run(pytester).assert_outcomes(passed=2)
    assert recorded.read_text() == before  # replaying writes nothing


def test_a_changed_system_prompt_makes_the_case_stale_naming_it(
    pytester: pytest.Pytester, recorded: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STEP_SYSTEM", "You are reckless.")
    result = run(pytester)
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        [
            "is stale: its model request changed since its decision was recorded, and recording is off "
            "(--agentevals-record=none).",
            "  what changed:",
            "    - system prompt: sha256 * recorded, * now",
            "        recorded: 'You are careful.'",
            "        now:      'You are reckless.'",
            "    - first difference in field system (its diff is above)",
            "  fix: if the change is intended, run the step cases with --agentevals-record=new*",
        ]
    )
    assert "APIConnectionError" not in result.stdout.str()


def test_a_changed_tool_schema_and_history_are_named(
    pytester: pytest.Pytester, recorded: Path, goldens: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STEP_TOOL_DOC", "Read one file")
    result = run(pytester, "-k", "step-1")
    result.stdout.fnmatch_lines(["    - tool 'read_file': schema changed (description)"])
    monkeypatch.delenv("STEP_TOOL_DOC")
    (goldens / "demo.yaml").write_text(GOLDENS.replace("please read src/a.py", "please open src/a.py"))
    result = run(pytester, "-k", "step-1")
    result.stdout.fnmatch_lines(["    - first difference in message 0 (user), field content:"])


def test_a_harness_that_swallows_the_error_is_still_stale(
    pytester: pytest.Pytester, recorded: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STEP_SYSTEM", "You are reckless.")
    monkeypatch.setenv("STEP_SWALLOW", "1")
    result = run(pytester)
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(["is stale: its model request changed*"])


def test_record_new_calls_the_model_once_for_a_changed_case_and_replaces_its_recording(
    pytester: pytest.Pytester, recorded: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("STEP_OFFLINE")
    monkeypatch.setenv("STEP_SYSTEM", "You are reckless.")
    result = run(pytester, "--agentevals-record=new", "-k", "step-1")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["recorded 1 model exchange(s) for 1 case(s) into *(2 in all)"])
    systems = {call["case"]: call["request"]["body"]["system"] for call in read_trace(recorded)[1:-1]}
    assert systems == {"step-1-tool-choice": "You are reckless.", "step-2-tool-choice": "You are careful."}
    monkeypatch.setenv("STEP_OFFLINE", "1")
    run(pytester, "-k", "step-1").assert_outcomes(passed=1)


def test_record_once_records_only_cases_with_nothing_recorded(
    pytester: pytest.Pytester, recorded: Path, goldens: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("STEP_OFFLINE")
    monkeypatch.setenv("STEP_SYSTEM", "You are reckless.")
    (goldens / "demo.yaml").write_text(GOLDENS + GOLDENS.split("cases:\n")[1].replace("step-", "new-"))
    result = run(pytester, "--agentevals-record=once")
    result.assert_outcomes(passed=2, failed=2)
    result.stdout.fnmatch_lines(["*--agentevals-record=once records only cases with nothing recorded*"])
    cases = [call["case"] for call in read_trace(recorded)[1:-1]]
    assert cases == ["step-1-tool-choice", "step-2-tool-choice", "new-1-tool-choice", "new-2-tool-choice"]


def test_streamed_decisions_record_and_replay(
    pytester: pytest.Pytester, goldens: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STEP_STREAM", "1")
    run(pytester, "--agentevals-record=new").assert_outcomes(passed=2)
    calls = read_trace(goldens / "demo.decisions.trace.jsonl")[1:-1]
    assert all("sse" in call["response"] for call in calls)
    monkeypatch.setenv("STEP_OFFLINE", "1")
    run(pytester).assert_outcomes(passed=2)


def test_under_xdist_the_controller_writes_what_workers_recorded(
    pytester: pytest.Pytester, goldens: Path
) -> None:
    run(pytester, "-p", "xdist", "-n", "2", "--agentevals-record=new").assert_outcomes(passed=2)
    cases = [call["case"] for call in read_trace(goldens / "demo.decisions.trace.jsonl")[1:-1]]
    assert cases == ["step-1-tool-choice", "step-2-tool-choice"]


def test_a_judges_verdict_is_recorded_with_its_model_and_replayed(
    pytester: pytest.Pytester, goldens: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (goldens / "demo.yaml").write_text(
        """\
cases:
  - id: step-9-compaction
    kind: compaction
    context:
      request: {messages: [{role: user, content: "COMPACT now"}]}
    expect:
      keep: [T003]
      judge: {rubric: "says which task is next", model: sim-judge}
"""
    )
    run(pytester, "--agentevals-record=new").assert_outcomes(passed=1)
    assert len(read_trace(goldens / "demo.decisions.trace.jsonl")) == 4  # the agent's call and the judge's
    monkeypatch.setenv("STEP_OFFLINE", "1")
    result = run(pytester, "--junitxml=out.xml")
    result.assert_outcomes(passed=1)
    junit = ElementTree.parse(pytester.path / "out.xml")
    (prop,) = [p for p in junit.iter("property") if p.get("name") == "agentevals_judge"]
    assert json.loads(prop.get("value", "")) == {
        "passed": True,
        "reason": "names the task",
        "model": "sim-judge",
    }
