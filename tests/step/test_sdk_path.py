"""A step case's model request answered at the SDK's request method (`replay/sdk.py`) when it provably
is the recorded one, and sent on to the HTTP path, which decides as it always has, when it is not: the
same decisions, the same staleness, nothing live."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import anthropic
import pytest

from pytest_agentevals.errors import StaleGolden
from pytest_agentevals.step.cassette import StepCassette
from pytest_agentevals.step.loader import parse_goldens
from pytest_agentevals.step.runner import run_case
from pytest_agentevals.step.store import Exchange

MODEL = "claude-sonnet-4-6"
SYSTEM = "You are careful."
MESSAGES = [{"role": "user", "content": "please read src/a.py"}]
CLOSED = "http://127.0.0.1:9"  # nothing listens: a case that passes was answered from its recording

GOLDENS = """\
cases:
  - id: step-1-tool-choice
    kind: tool_choice
    context:
      request: {messages: [{role: user, content: "please read src/a.py"}]}
    expect: {tool: read_file, args: {path: src/a.py}}
"""


def _exchange(body: dict[str, Any], status: int = 200) -> Exchange:
    message = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": MODEL,
        "content": [{"type": "tool_use", "id": "tu_1", "name": "read_file", "input": {"path": "src/a.py"}}],
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {"input_tokens": 12, "output_tokens": 5},
    }
    error = {"type": "error", "error": {"type": "api_error", "message": "boom"}}
    return Exchange.of(
        {
            "provider": "anthropic",
            "model": MODEL,
            "request": {"method": "POST", "url": f"{CLOSED}/v1/messages", "body": body},
            "response": {
                "status": status,
                "headers": {"content-type": "application/json"},
                "json": message if status == 200 else error,
            },
        }
    )


RECORDED = {"max_tokens": 100, "messages": MESSAGES, "model": MODEL, "system": SYSTEM}


@pytest.fixture
def case(tmp_path: Path) -> Any:
    path = tmp_path / "demo.yaml"
    return parse_goldens(GOLDENS, path, "demo.yaml").case("step-1-tool-choice")


@pytest.fixture
def http_asked(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The URLs the HTTP path (vcrpy's patching, to the case's cassette) was asked about."""
    asked: list[str] = []
    original = StepCassette.can_play_response_for

    def counting(self: StepCassette, request: Any) -> bool:
        asked.append(request.uri)
        return original(self, request)

    monkeypatch.setattr(StepCassette, "can_play_response_for", counting)
    return asked


def _sync(system: str = SYSTEM, **extra: Any) -> Any:
    client = anthropic.Anthropic(base_url=CLOSED, api_key="test-key", max_retries=0)
    return lambda case: client.messages.create(
        model=MODEL, max_tokens=100, system=system, messages=case.messages, **extra
    )


def _async(case: Any) -> Any:
    client = anthropic.AsyncAnthropic(base_url=CLOSED, api_key="test-key", max_retries=0)
    return asyncio.run(
        client.messages.create(model=MODEL, max_tokens=100, system=SYSTEM, messages=case.messages)
    )


@pytest.mark.parametrize("decide", [_sync(), _async], ids=["sync", "async"])
def test_a_recorded_request_is_answered_at_the_sdk_never_reaching_the_transport(
    case: Any, http_asked: list[str], decide: Any
) -> None:
    recorded = [_exchange(RECORDED)]
    run = run_case(case, decide, recorded)
    assert run.outcome.ok, run.outcome
    assert http_asked == []
    assert run.cassette.used == recorded
    assert not run.cassette.new


def test_a_changed_request_goes_on_to_the_http_path_and_is_stale_as_before(
    case: Any, http_asked: list[str]
) -> None:
    with pytest.raises(StaleGolden) as raised:
        run_case(case, _sync(system="You are reckless."), [_exchange(RECORDED)])
    assert http_asked == [f"{CLOSED}/v1/messages"]
    message = str(raised.value)
    assert "is stale: its model request changed since its decision was recorded" in message
    assert "system prompt: sha256" in message
    assert "'You are reckless.'" in message


def test_what_the_sdk_path_does_not_prove_the_http_path_still_answers(
    case: Any, http_asked: list[str]
) -> None:
    # `metadata` is not part of a request's identity: the HTTP path's canonical form drops it, the
    # SDK path does not try to, so the request is answered there, from the same recording.
    recorded = [_exchange(RECORDED)]
    run = run_case(case, _sync(metadata={"user_id": "u-1"}), recorded)
    assert run.outcome.ok
    assert http_asked == [f"{CLOSED}/v1/messages"]
    assert run.cassette.used == recorded


def test_a_recorded_error_is_served_the_http_way_for_the_sdk_to_raise(
    case: Any, http_asked: list[str]
) -> None:
    with pytest.raises(anthropic.InternalServerError):
        run_case(case, _sync(), [_exchange(RECORDED, status=500)])
    assert http_asked == [f"{CLOSED}/v1/messages"]


def test_replay_via_http_sends_every_request_the_http_way(case: Any, http_asked: list[str]) -> None:
    recorded = [_exchange(RECORDED)]
    run = run_case(case, _sync(), recorded, via="http")
    assert run.outcome.ok
    assert http_asked == [f"{CLOSED}/v1/messages"]
    assert run.cassette.used == recorded


def test_replay_normalize_folds_a_step_case_s_request_as_a_replay_s(case: Any, http_asked: list[str]) -> None:
    from pytest_agentevals.settings import rules

    recorded = _exchange({**RECORDED, "system": f"{SYSTEM} Today is 2026-12-01."})
    with pytest.raises(StaleGolden):  # byte-strict without a rule
        run_case(case, _sync(system=f"{SYSTEM} Today is 2026-12-02."), [recorded])
    dates = rules("replay_normalize", ["dates"])
    run = run_case(case, _sync(system=f"{SYSTEM} Today is 2026-12-02."), [recorded], normalize=dates)
    assert run.outcome.ok
    assert run.cassette.folds is not None
    assert run.cassette.folds.lines()[:2] == [
        "normalized by [tool.agentevals] replay_normalize: 1 text(s) folded by 2 rule(s):",
        "  dates (stock rule dates v1): 1 text(s) in 1 request(s); 1 differed from the recording; at /system "
        "— ISO dates and times ('2026-12-02', '2026-12-02T19:14:17Z')",
    ]
    # What no rule folds still makes the case stale.
    with pytest.raises(StaleGolden):
        run_case(case, _sync(system="You are reckless. Today is 2026-12-02."), [recorded], normalize=dates)
