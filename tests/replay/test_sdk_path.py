"""Strict replay at the SDK's own request method (`replay/sdk.py`): every way the SDK makes a Messages
call gets the SDK's own objects, the same as from the HTTP path, and what the SDK path cannot prove
recorded goes to the HTTP path, which words the divergence as it always has."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import anthropic
import pytest

import pytest_agentevals as ae
from pytest_agentevals.errors import ReplayDivergence
from pytest_agentevals.replay import Replayer
from pytest_agentevals.sim import Reply

from .. import replay_support as agent

TASK = "Fix the bug in a.txt"
STYLES = ("create", "raw", "beta", "stream", "streaming", "beta_stream")


def replies() -> list[Reply]:
    return [
        *(Reply.tool_use("read_file", {"path": f"f{i}.txt"}, text=f"Reading f{i}.") for i in range(5)),
        Reply.text("All read."),
    ]


def kwargs(messages: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "model": agent.MODEL,
        "max_tokens": 512,
        "system": agent.SYSTEM,
        "tools": agent.TOOLS,
        "messages": messages,
    }


def call(
    client: anthropic.Anthropic, style: str, messages: list[dict[str, Any]], seen: list[Any], **extra: Any
) -> Any:
    """One model call in `style`; what the harness can observe of it goes into `seen`."""
    request = kwargs(messages) | extra
    if style == "create":
        message = client.messages.create(**request)
    elif style == "beta":
        message = client.beta.messages.create(**request)
    elif style == "raw":
        raw = client.messages.with_raw_response.create(**request)
        seen.append((type(raw).__name__, raw.status_code, raw.headers.get("content-type")))
        message = raw.parse()
    elif style == "streaming":
        with client.messages.with_streaming_response.create(**request) as response:
            seen.append((type(response).__name__, response.status_code))
            message = response.parse()
    elif style == "stream":
        with client.messages.stream(**request) as stream:
            seen.append(list(stream.text_stream))
            message = stream.get_final_message()
    else:
        with client.beta.messages.stream(**request) as beta_stream:
            seen.append([event.type for event in beta_stream])
            message = beta_stream.get_final_message()
    seen.append((style, type(message).__name__, message.model_dump()))
    return message


def answer(messages: list[dict[str, Any]], message: Any) -> None:
    """The model's turn and the harness's answer to it (every tool use answered "ok"), appended."""
    messages.append(
        {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in message.content]}
    )
    uses = [b for b in message.content if b.type == "tool_use"]
    messages.append(
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": u.id, "content": "ok"} for u in uses],
        }
    )


def harness(client: anthropic.Anthropic, edit: Any = None, extra: Any = None) -> list[Any]:
    """The loop, calling the model every way in turn; `edit(step, messages)` runs before each call,
    and `extra(step)` gives parameters to add to it."""
    seen: list[Any] = []
    messages: list[dict[str, Any]] = [{"role": "user", "content": TASK}]
    for step, style in enumerate(STYLES):
        if edit is not None:
            edit(step, messages)
        message = call(client, style, messages, seen, **(extra(step) if extra else {}))
        answer(messages, message)
    return seen


@pytest.fixture(scope="module")
def styled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One recording that makes its calls every way the SDK offers."""
    path = tmp_path_factory.mktemp("sdk") / "styles.trace.jsonl"
    with agent.sim(replies()) as server, ae.Recorder(path, task=TASK, agent="styles"):
        harness(agent.client(server.url, max_retries=0))
    return path


def replayed(path: Path, via: str) -> tuple[list[Any], Replayer]:
    with Replayer(path, via=via) as replay:
        seen = harness(agent.client(max_retries=0))
    return seen, replay


def test_every_style_of_call_is_answered_at_the_sdk_and_looks_the_same(styled: Path) -> None:
    by_sdk, sdk_replay = replayed(styled, "sdk")
    by_http, http_replay = replayed(styled, "http")
    assert by_sdk == by_http
    # The first call carries the stale-cassette check and goes the HTTP way; every later one is
    # answered at the SDK's request method.
    assert sdk_replay.report.served_sdk == sdk_replay.report.served_http - 1 == 5
    assert http_replay.report.served_sdk == 0
    assert sdk_replay.report.summary() == http_replay.report.summary()
    kinds = [entry[1] for entry in by_sdk if isinstance(entry, tuple) and entry[0] in STYLES]
    assert kinds == ["Message", "Message", "BetaMessage", "ParsedMessage", "Message", "ParsedBetaMessage"]
    texts, events = (entry for entry in by_sdk if isinstance(entry, list))
    assert texts == ["Reading f3."]  # MessageStream.text_stream, from the recorded events
    assert events[0] == "message_start"
    assert events[-1] == "message_stop"
    assert "content_block_delta" in events


async def _async_harness(client: anthropic.AsyncAnthropic) -> list[Any]:
    seen: list[Any] = []
    messages: list[dict[str, Any]] = [{"role": "user", "content": TASK}]
    for style in STYLES:
        request = kwargs(messages)
        if style == "create":
            message = await client.messages.create(**request)
        elif style == "beta":
            message = await client.beta.messages.create(**request)
        elif style == "raw":
            raw = await client.messages.with_raw_response.create(**request)
            seen.append((type(raw).__name__, raw.status_code))
            message = await raw.parse()
        elif style == "streaming":
            async with client.messages.with_streaming_response.create(**request) as response:
                message = await response.parse()
        elif style == "stream":
            async with client.messages.stream(**request) as stream:
                seen.append([text async for text in stream.text_stream])
                message = await stream.get_final_message()
        else:
            async with client.beta.messages.stream(**request) as beta_stream:
                seen.append([event.type async for event in beta_stream])
                message = await beta_stream.get_final_message()
        seen.append((style, type(message).__name__, message.model_dump()))
        answer(messages, message)
    return seen


def test_the_async_client_is_answered_at_the_sdk_too(styled: Path) -> None:
    results = {}
    for via in ("sdk", "http"):
        with Replayer(styled, via=via) as replay:
            client = anthropic.AsyncAnthropic(api_key=agent.fake_key(), max_retries=0)
            results[via] = (asyncio.run(_async_harness(client)), replay.report.served_sdk)
    assert results["sdk"][0] == results["http"][0]
    assert (results["sdk"][1], results["http"][1]) == (5, 0)


def _edit_the_task(step: int, messages: list[dict[str, Any]]) -> None:
    if step == 3:
        messages[0]["content"] = TASK + "!"  # an earlier message edited in place, at the fourth call


@pytest.mark.parametrize(
    "edit",
    [
        pytest.param(_edit_the_task, id="an-earlier-message-edited-in-place"),
        pytest.param(
            lambda step, messages: (
                messages[-1]["content"][0].update(content="changed") if step == 2 else None
            ),
            id="the-appended-tool-result",
        ),
        pytest.param(
            lambda step, messages: (
                messages.insert(1, {"role": "user", "content": "x"}) if step == 4 else None
            ),
            id="a-message-inserted",
        ),
    ],
)
def test_a_divergence_reads_the_same_from_either_path(styled: Path, edit: Any) -> None:
    errors = {}
    for via in ("sdk", "http"):
        with pytest.raises(ReplayDivergence) as caught, Replayer(styled, via=via):
            harness(agent.client(max_retries=0), edit)
        errors[via] = str(caught.value)
    assert errors["sdk"] == errors["http"]
    assert "replay diverged at model call" in errors["sdk"]


def test_a_changed_parameter_diverges_alike_on_either_path(styled: Path) -> None:
    errors = {}
    for via in ("sdk", "http"):
        with pytest.raises(ReplayDivergence) as caught, Replayer(styled, via=via) as replay:
            harness(
                agent.client(max_retries=0),
                extra=lambda step: {"stop_sequences": ["END"]} if step == 2 else {},
            )
        errors[via] = (str(caught.value), replay.report.served_http)
    assert errors["sdk"] == errors["http"]
    assert "stop_sequences" in errors["sdk"][0]
    assert errors["sdk"][1] == 2


def test_with_replay_via_http_the_sdk_is_not_patched(styled: Path) -> None:
    from anthropic import _base_client

    before = _base_client.SyncAPIClient.request
    for via, patched in (("http", False), ("sdk", True)):
        with (
            pytest.raises(ReplayDivergence, match="the run ended after 0 HTTP call"),
            Replayer(styled, via=via),
        ):
            assert (_base_client.SyncAPIClient.request is not before) is patched
        assert _base_client.SyncAPIClient.request is before


def test_an_unknown_via_is_refused(styled: Path) -> None:
    with pytest.raises(ValueError, match="replay via 'socket' is not one of sdk, http"):
        Replayer(styled, via="socket")


def _recorded_loop(path: Path, harness_loop: Any, steps: int = 4) -> Path:
    from .test_sdk_property import mock_client

    with ae.Recorder(path, agent="shapes"):
        harness_loop(mock_client(steps), steps)
    return path


def _model_objects_loop(client: anthropic.Anthropic, steps: int, tools: Any = None, task: str = TASK) -> None:
    """A harness that sends the SDK's own content blocks back, and may give its tools as an iterator."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": TASK}]
    for step in range(steps):
        if step == 2:
            messages[0]["content"] = task
        given = iter(agent.TOOLS) if tools == "iterator" else agent.TOOLS
        message = client.messages.create(model="sim-a", max_tokens=64, tools=given, messages=messages)
        messages.append({"role": "assistant", "content": message.content})  # pydantic blocks, as they came
        use = next(b for b in message.content if b.type == "tool_use")
        messages.append(
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id, "content": "ok"}]}
        )


def test_content_blocks_sent_back_as_the_sdks_objects_are_answered_at_the_sdk(tmp_path: Path) -> None:
    trace = _recorded_loop(tmp_path / "objects.trace.jsonl", _model_objects_loop)
    with Replayer(trace) as replay:
        _model_objects_loop(anthropic.Anthropic(api_key=agent.fake_key(), max_retries=0), 4)
    assert replay.report.served_sdk == 3


def test_an_iterator_the_sdk_reads_once_is_left_for_the_sdk(tmp_path: Path) -> None:
    # Preparing a one-shot iterator to compare it would leave the SDK an empty one to send when the
    # request then goes the HTTP way: the divergence would be about the tools, not the task.
    trace = _recorded_loop(tmp_path / "objects.trace.jsonl", _model_objects_loop)
    client = anthropic.Anthropic(api_key=agent.fake_key(), max_retries=0)
    with Replayer(trace) as replay:
        _model_objects_loop(client, 4, tools="iterator")
    assert replay.report.served_sdk == 0
    errors = []
    for via in ("sdk", "http"):
        with pytest.raises(ReplayDivergence) as caught, Replayer(trace, via=via):
            _model_objects_loop(client, 4, tools="iterator", task="Fix a.txt")
        errors.append(str(caught.value))
    assert errors[0] == errors[1]
    assert "messages[0]" in errors[0]


def test_an_sdk_without_the_private_parts_the_sdk_path_uses_replays_the_http_way(
    styled: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The SDK path builds its answers with the SDK's private methods: a release that renamed one
    must not break a replay, only slow it to the HTTP path."""
    from anthropic import _base_client

    before = _base_client.SyncAPIClient.request
    from anthropic._utils import _prepare

    monkeypatch.delattr(_prepare, "prepare_request_data")  # the SDK itself holds its own reference
    seen, replay = replayed(styled, "sdk")
    assert _base_client.SyncAPIClient.request is before
    assert replay.report.served_sdk == 0
    assert len(seen) == len(replayed(styled, "http")[0])


def test_the_small_fields_are_proved_as_the_sdk_would_send_them() -> None:
    """`same_body` compares a small field as given when it equals the recording, prepares it as the
    SDK does when it does not (a tuple, a model object), leaves an omitted one out, and proves
    nothing it cannot: a field the recording lacks or holds and the request does not, `metadata`,
    a changed value, a one-shot iterator (left unread for the SDK)."""
    from anthropic import omit
    from anthropic._utils._prepare import prepare_request_data
    from anthropic.types import TextBlock

    from pytest_agentevals.replay import sdk

    def prepare(value: Any) -> Any:
        return prepare_request_data(value, location="body")

    messages = [{"role": "user", "content": TASK}]
    recorded = {"model": "sim-a", "max_tokens": 64, "tools": agent.TOOLS, "messages": messages}
    live = dict(recorded, messages=[dict(messages[0])])
    assert sdk.same_body(live, recorded, prepare)
    assert sdk.same_body(live | {"temperature": omit}, recorded, prepare)
    assert sdk.same_body(live | {"tools": tuple(agent.TOOLS)}, recorded, prepare)
    system = {**recorded, "system": [{"type": "text", "text": "Be brief."}]}
    model_object = TextBlock(type="text", text="Be brief.")  # sent as its dump
    assert sdk.same_body(live | {"system": [model_object]}, system, prepare)
    assert not sdk.same_body(live | {"temperature": 0.5}, recorded, prepare)
    assert not sdk.same_body({k: v for k, v in live.items() if k != "tools"}, recorded, prepare)
    assert not sdk.same_body(live | {"metadata": {"user_id": "u"}}, recorded | {"metadata": {}}, prepare)
    assert not sdk.same_body(live | {"max_tokens": 65}, recorded, prepare)
    assert not sdk.same_body(live | {"max_tokens": True}, recorded | {"max_tokens": 2}, prepare)
    tools = iter(agent.TOOLS)
    assert not sdk.same_body(live | {"tools": tools}, recorded, prepare)
    assert next(tools) == agent.TOOLS[0]  # not consumed
