"""The SDK path is exactly as strict as the HTTP path: for generated runs, replayed unchanged or with
one part of one request changed (the system prompt, the model, a parameter, a tool, an earlier
message replaced or edited in place, the step's new message), both paths pass or fail alike, with
the same error at the same call."""

from __future__ import annotations

import copy
import json
import tempfile
import warnings
from pathlib import Path
from typing import Any

import anthropic
import httpx2
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pytest_agentevals as ae
from pytest_agentevals.errors import AgentEvalsError
from pytest_agentevals.replay import Replayer

TOOL_POOL = [
    {"name": "read", "description": "Read a file.", "input_schema": {"type": "object", "properties": {}}},
    {"name": "grep", "description": "Search files.", "input_schema": {"type": "object", "properties": {}}},
]
PARTS = ("none", "system", "model", "max_tokens", "tool", "added", "replaced", "in_place", "appended")
words = st.text(alphabet="abc xyz", min_size=1, max_size=8)


@st.composite
def runs(draw: st.DrawFn) -> dict[str, Any]:
    steps = draw(st.integers(1, 4))
    part = draw(st.sampled_from(PARTS))
    return {
        "steps": steps,
        "system": draw(
            st.one_of(
                words,
                st.lists(st.builds(lambda t: {"type": "text", "text": t}, words), min_size=1, max_size=2),
            )
        ),
        "model": draw(st.sampled_from(["sim-a", "sim-b"])),
        "max_tokens": draw(st.integers(1, 4096)),
        "tools": draw(st.lists(st.sampled_from(TOOL_POOL), max_size=2, unique_by=lambda t: t["name"])),
        "stop": draw(st.one_of(st.none(), st.lists(words, min_size=1, max_size=2))),
        "task": draw(words),
        "results": draw(st.lists(words, min_size=steps, max_size=steps)),
        "mutation": {
            "part": part,
            "step": draw(st.integers(0, steps - 1)),
            "index": draw(st.integers(0, 10)),
            "word": draw(words),
        },
    }


def answers(steps: int) -> list[bytes]:
    return [
        json.dumps(
            {
                "id": f"msg_{i}",
                "type": "message",
                "role": "assistant",
                "model": "sim-a",
                "content": [
                    {"type": "text", "text": f"step {i}"},
                    {"type": "tool_use", "id": f"toolu_{i}", "name": "read", "input": {"n": i}},
                ],
                "stop_reason": "tool_use",
                "stop_sequence": None,
                "usage": {"input_tokens": 10, "output_tokens": 5},
            }
        ).encode()
        for i in range(steps)
    ]


def mock_client(steps: int) -> anthropic.Anthropic:
    canned = iter(answers(steps))

    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers={"content-type": "application/json"}, content=next(canned))

    return anthropic.Anthropic(
        api_key="prop-" + "not-a-key",
        base_url="http://127.0.0.1:9",
        max_retries=0,
        http_client=httpx2.Client(transport=httpx2.MockTransport(handler)),
    )


def harness(client: anthropic.Anthropic, run: dict[str, Any], mutate: bool) -> None:
    mutation = run["mutation"]
    messages: list[dict[str, Any]] = [{"role": "user", "content": run["task"]}]
    for step in range(run["steps"]):
        params: dict[str, Any] = {
            "model": run["model"],
            "max_tokens": run["max_tokens"],
            "system": copy.deepcopy(run["system"]),
        }
        if run["tools"]:
            params["tools"] = copy.deepcopy(run["tools"])
        if run["stop"] is not None:
            params["stop_sequences"] = list(run["stop"])
        if mutate and step == mutation["step"]:
            change(mutation, params, messages)
        message = client.messages.create(messages=messages, **params)
        messages.append(
            {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in message.content]}
        )
        use = next(b for b in message.content if b.type == "tool_use")
        messages.append(
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": use.id, "content": run["results"][step]}],
            }
        )


def change(mutation: dict[str, Any], params: dict[str, Any], messages: list[dict[str, Any]]) -> None:
    """One single-point change; a change to a message stays for the later requests, as in a harness."""
    part, word = mutation["part"], mutation["word"]
    target = mutation["index"] % len(messages)
    if part == "system":
        params["system"] = (
            word + "!" if isinstance(params["system"], str) else [{"type": "text", "text": word + "!"}]
        )
    elif part == "model":
        params["model"] = params["model"] + "-x"
    elif part == "max_tokens":
        params["max_tokens"] += 1
    elif part == "tool":
        params["tools"] = [*params.get("tools", []), {"name": "edit", "input_schema": {"type": "object"}}]
    elif part == "added":
        params["service_tier"] = "auto"
    elif part == "replaced":
        messages[target] = {**messages[target], "role": messages[target]["role"], "content": word + "?"}
    elif part == "in_place":
        content = messages[target]["content"]
        if isinstance(content, str):
            messages[target]["content"] = content + word
        else:
            content[-1].setdefault("extra", word)  # a field added deep inside, the same dict kept
    elif part == "appended":
        messages[-1]["content"] = (
            messages[-1]["content"] + word
            if isinstance(messages[-1]["content"], str)
            else [
                *messages[-1]["content"],
                {"type": "text", "text": word},
            ]
        )


def outcome(path: Path, run: dict[str, Any], via: str) -> tuple[tuple[str, str, int], int]:
    """(what the replay ended with, its message, the calls served), and how many the SDK path served."""
    replay = Replayer(path, via=via)
    try:
        with replay:
            harness(anthropic.Anthropic(api_key="prop-" + "not-a-key", max_retries=0), run, mutate=True)
    except AgentEvalsError as error:
        return (type(error).__name__, str(error), replay.report.served_http), replay.report.served_sdk
    return ("passed", replay.report.summary(), replay.report.served_http), replay.report.served_sdk


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(run=runs())
def test_both_paths_agree_on_matches_and_divergences(run: dict[str, Any]) -> None:
    with tempfile.TemporaryDirectory() as folder, warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        path = Path(folder) / "run.trace.jsonl"
        with ae.Recorder(path, agent="prop"):
            harness(mock_client(run["steps"]), run, mutate=False)
        (by_sdk, served_sdk), (by_http, served_by_http_at_sdk) = (
            outcome(path, run, "sdk"),
            outcome(path, run, "http"),
        )
    assert by_sdk == by_http
    assert served_by_http_at_sdk == 0
    if run["mutation"]["part"] == "none":
        assert by_sdk[0] == "passed"
        assert served_sdk == run["steps"] - 1  # all but the first call, which checks the contract
