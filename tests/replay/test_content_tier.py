"""Replay of a `content` trace (an imported run): the real anthropic SDK's requests are matched on
their messages, system and tools, not their bytes, and the report says so; an `outline` trace is
refused before anything runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anthropic
import pytest

from pytest_agentevals.errors import AgentEvalsError, ReplayDivergence
from pytest_agentevals.replay import Replayer

from ..conftest import make_fake_key

SYSTEM = "You list files."
TOOLS = [{"name": "ls", "description": "List a folder.", "input_schema": {"type": "object"}}]


def content_trace(path: Path, tier: str = "content", missing: tuple[str, ...] = ()) -> Path:
    first = [{"role": "user", "content": "list the files"}]
    use = {"type": "tool_use", "id": "toolu_1", "name": "ls", "input": {"path": "."}}
    second = [
        *first,
        {"role": "assistant", "content": [use]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "a.txt"}]},
    ]

    def call(seq: int, messages: list[Any], content: list[Any], stop: str) -> dict[str, Any]:
        body = {"model": "m", "messages": messages}
        if "system" not in missing:
            body["system"] = SYSTEM
        if "tools" not in missing:
            body["tools"] = TOOLS
        answer = {
            "id": f"msg_{seq}",
            "type": "message",
            "role": "assistant",
            "model": "m",
            "content": content,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": {"input_tokens": 3, "output_tokens": 2},
        }
        return {
            "type": "model_call",
            "seq": seq,
            "t": 0.0,
            "step": seq,
            "provider": "anthropic",
            "request": {"method": "POST", "url": "https://api.anthropic.com/v1/messages", "body": body},
            "response": {"status": 200, "json": answer},
        }

    events = [
        {
            "type": "run_start",
            "v": 1,
            "run_id": "r",
            "agent": "a",
            "started_at": "2026-01-01T00:00:00+00:00",
            "contract": {},
            "fidelity": {"tier": tier, "source": "otlp", "missing": list(missing)},
        },
        call(1, first, [use], "tool_use"),
        {
            "type": "tool_call",
            "seq": 2,
            "t": 0.0,
            "step": 1,
            "name": "ls",
            "input": {"path": "."},
            "output": "a.txt",
            "duration_ms": 0.0,
            "by_client": True,
        },
        call(3, second, [{"type": "text", "text": "One file: a.txt"}], "end_turn"),
        {"type": "run_end", "seq": 4, "t": 0.0, "status": "ok", "totals": {}},
    ]
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    return path


def agent(result: str = "a.txt", system: str = SYSTEM) -> str:
    """The agent as it runs today: its own max_tokens, cache markers, a reminder block, tool ids."""
    client = anthropic.Anthropic(base_url="http://127.0.0.1:9", api_key=make_fake_key(), max_retries=0)
    messages: list[Any] = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "<system-reminder>today is a day</system-reminder>"},
                {"type": "text", "text": "list the files", "cache_control": {"type": "ephemeral"}},
            ],
        }
    ]
    while True:
        reply = client.messages.create(
            model="m",
            max_tokens=1024,
            system=SYSTEM if system is None else system,
            tools=TOOLS,
            messages=messages,
        )  # type: ignore[arg-type]
        if reply.stop_reason != "tool_use":
            return reply.content[0].text  # type: ignore[union-attr]
        use = reply.content[0]
        messages += [
            {"role": "assistant", "content": [use.model_dump()]},
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": use.id,  # type: ignore[union-attr]
                        "content": [{"type": "text", "text": result}],
                    }
                ],
            },
        ]


def test_a_content_trace_replays_on_messages_system_and_tools(tmp_path: Path) -> None:
    with Replayer(content_trace(tmp_path / "c.trace.jsonl")) as replay:
        assert agent() == "One file: a.txt"
    assert replay.report.summary().endswith("served 2 of 2 recorded HTTP exchanges; no divergence")
    assert any(
        "matched on their messages, system, tools, not on their bytes" in n for n in replay.report.notes
    )


def test_a_changed_tool_result_diverges(tmp_path: Path) -> None:
    with (
        pytest.raises(ReplayDivergence, match="replay diverged at model call 2"),
        Replayer(content_trace(tmp_path / "c.trace.jsonl")),
    ):
        agent(result="b.txt")


def test_a_changed_system_prompt_diverges_and_a_missing_one_is_not_compared(tmp_path: Path) -> None:
    with pytest.raises(ReplayDivergence, match="system"), Replayer(content_trace(tmp_path / "c.trace.jsonl")):
        agent(system="You delete files.")
    unsystemed = content_trace(tmp_path / "n.trace.jsonl", missing=("system",))
    with Replayer(unsystemed) as replay:
        assert agent(system="You delete files.") == "One file: a.txt"
    assert any("(system missing from the import)" in n for n in replay.report.notes)


def test_an_outline_trace_is_refused(tmp_path: Path) -> None:
    with pytest.raises(AgentEvalsError, match="cannot replay a trace of fidelity `outline`"):
        Replayer(content_trace(tmp_path / "o.trace.jsonl", tier="outline"))
