"""A judge's calls are decisions like the agent's (issue 34, point 3): recorded with the case, replayed
offline with the same votes, and re-recorded when the judge changes (its model, its prompt, its
rubric), since each is part of the recorded request. A session with repeated judges says how far the
judge agreed with itself across the cases."""

from __future__ import annotations

import json
from pathlib import Path
from xml.etree import ElementTree

import anthropic  # noqa: F401 - imported once here, not again in every in-process pytester run
import pytest

import pytest_agentevals.sim  # noqa: F401 - likewise
from pytest_agentevals import read_trace
from pytest_agentevals.step.agreement import JudgeAgreement

pytest_plugins = ["pytester"]

# The agent writes one summary; the judge is the simulated noisy one, flipping JUDGE_FLIP of its
# verdicts (seeded). STEP_OFFLINE points the client at a closed port: what passes then was replayed.
CONFTEST = """
import os
import anthropic, pytest
import pytest_agentevals.step.judge as judge_module
from pytest_agentevals.step import anthropic_judge
from pytest_agentevals.sim import NoisyJudge, Reply, SimServer

def agent(request):
    return Reply.text("Progress: 5/12 tasks verified; next is T006.")

@pytest.fixture(scope="session")
def model():
    with SimServer(NoisyJudge(float(os.environ.get("JUDGE_FLIP", "0")), seed=3, other=agent)) as sim:
        yield sim

@pytest.fixture
def client(model):
    url = "http://127.0.0.1:9" if os.environ.get("STEP_OFFLINE") else model.url
    return anthropic.Anthropic(base_url=url, api_key="test-" + "k" * 12, max_retries=0)

@pytest.fixture
def agentevals_decide(client):
    return lambda case: client.messages.create(model="sim-1", max_tokens=100, messages=case.messages)

@pytest.fixture
def agentevals_judge(client, monkeypatch):
    if os.environ.get("STEP_JUDGE_SYSTEM"):  # the judge's prompt changed, as a new release would
        monkeypatch.setattr(judge_module, "JUDGE_SYSTEM", os.environ["STEP_JUDGE_SYSTEM"])
    return anthropic_judge(client)
"""


def case(case_id: str, rubric: str, repeats: int = 9, model: str = "sim-judge") -> str:
    return f"""\
  - id: {case_id}
    kind: compaction
    context:
      request: {{messages: [{{role: user, content: "summarize {case_id}"}}]}}
    expect:
      keep: [T006]
      judge: {{rubric: "{rubric}", model: {model}, repeats: {repeats}}}
"""


THREE = "cases:\n" + "".join(
    [
        case("step-1-compaction", "names the next task, `T006`"),
        case("step-2-compaction", "names how far it got, `5/12`"),
        case("step-3-compaction", "names the failing check, `check_T004`"),  # not in the summary
    ]
)


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest("-p", "no:hypothesispytest", "goldens", *args)


@pytest.fixture
def goldens(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = pytester.mkdir("goldens")
    (folder / "conftest.py").write_text(CONFTEST)
    monkeypatch.setenv("JUDGE_FLIP", "0.25")
    return folder


def junit_votes(path: Path) -> dict[str, list[bool | None]]:
    votes = {}
    for testcase in ElementTree.parse(path).iter("testcase"):
        for prop in testcase.iter("property"):
            if prop.get("name") == "agentevals_judge":
                votes[testcase.get("name", "")] = json.loads(prop.get("value", ""))["votes"]
    return votes


def test_repeated_judges_record_replay_offline_and_report_their_agreement(
    pytester: pytest.Pytester, goldens: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (goldens / "demo.yaml").write_text(THREE)
    recorded = run(pytester, "--agentevals-record=new", "--junitxml=rec.xml")
    votes = junit_votes(pytester.path / "rec.xml")
    assert sorted(votes) == ["step-1-compaction", "step-2-compaction", "step-3-compaction"]
    assert all(len(case_votes) == 9 for case_votes in votes.values())
    assert len(set(map(tuple, votes.values()))) > 1  # a noisy judge: not every case voted alike
    line = JudgeAgreement.of(list(votes.values())).describe()
    assert line.startswith("judge agreement: mean ")
    assert " over 3 cases (27 votes)" in line
    recorded.stdout.fnmatch_lines(["*= agentevals step cases =*", line])
    calls = read_trace(goldens / "demo.decisions.trace.jsonl")[1:-1]
    assert len(calls) == 3 * (1 + 9)  # each case: the agent's call and the judge's nine

    monkeypatch.setenv("STEP_OFFLINE", "1")
    replayed = run(pytester, "--junitxml=replay.xml")
    assert junit_votes(pytester.path / "replay.xml") == votes  # the same replies, in the same order
    replayed.stdout.fnmatch_lines([line])
    assert replayed.ret == recorded.ret


@pytest.mark.parametrize(
    "change",
    ["model", "rubric", "prompt"],
)
def test_a_changed_judge_re_records(
    pytester: pytest.Pytester, goldens: Path, monkeypatch: pytest.MonkeyPatch, change: str
) -> None:
    monkeypatch.setenv("JUDGE_FLIP", "0")
    rubric = "names the next task, `T006`"
    (goldens / "demo.yaml").write_text("cases:\n" + case("step-1-compaction", rubric, repeats=3))
    run(pytester, "--agentevals-record=new").assert_outcomes(passed=1)
    store = goldens / "demo.decisions.trace.jsonl"
    before = read_trace(store)[1:-1]
    monkeypatch.setenv("STEP_OFFLINE", "1")
    run(pytester).assert_outcomes(passed=1)  # unchanged: replayed offline

    if change == "model":
        (goldens / "demo.yaml").write_text("cases:\n" + case("step-1-compaction", rubric, 3, "sim-judge-2"))
    elif change == "rubric":
        (goldens / "demo.yaml").write_text("cases:\n" + case("step-1-compaction", rubric + " and why", 3))
    else:
        monkeypatch.setenv("STEP_JUDGE_SYSTEM", "You grade summaries. Reply with JSON only.")
    stale = run(pytester)
    stale.assert_outcomes(failed=1)
    stale.stdout.fnmatch_lines(["*is stale: its model request #2 changed since its decision was recorded*"])

    monkeypatch.delenv("STEP_OFFLINE")
    run(pytester, "--agentevals-record=new").assert_outcomes(passed=1)
    after = read_trace(store)[1:-1]
    assert len(after) == 1 + 3
    assert after[0]["request"] == before[0]["request"]  # the agent's call is what it was
    judged = [call["request"]["body"] for call in after[1:]]
    if change == "model":
        assert {body["model"] for body in judged} == {"sim-judge-2"}
    elif change == "rubric":
        assert all("and why" in body["messages"][-1]["content"] for body in judged)
    else:
        assert {body["system"] for body in judged} == {"You grade summaries. Reply with JSON only."}
    monkeypatch.setenv("STEP_OFFLINE", "1")
    run(pytester).assert_outcomes(passed=1)  # and the re-recorded judge replays offline
