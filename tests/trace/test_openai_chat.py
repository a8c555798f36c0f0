"""OpenAI / litellm chat messages to the Anthropic shape step cases and checkpoints store, and back:
a conversation converted one way and back is the one it was (Hypothesis), and what one shape cannot
say is one error naming the message."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pytest_agentevals as ae
from pytest_agentevals.errors import MessageFormatError
from pytest_agentevals.resume import resume_point_from_trace
from pytest_agentevals.step.loader import parse_goldens
from pytest_agentevals.trace import from_openai, to_openai


def call(id_: str, arguments: str) -> dict[str, Any]:
    return {"id": id_, "type": "function", "function": {"name": "bash", "arguments": arguments}}


PNG = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}
# A mini-swe-agent-like history through litellm: a system prompt, a task, bash calls and their output.
LITELLM_HISTORY: list[dict[str, Any]] = [
    {"role": "system", "content": "You are a helpful assistant that can interact with a computer."},
    {"role": "user", "content": "Fix the failing test in src/calc.py."},
    {
        "role": "assistant",
        "content": "Let me run the tests.",
        "tool_calls": [call("call_1", '{"command": "pytest"}')],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": "1 failed, 3 passed in 0.05s"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [call("call_2", '{"command": "cat a.py"}'), call("call_3", "{}")],
    },
    {"role": "tool", "tool_call_id": "call_2", "content": "def add(a, b):\n    return a - b\n"},
    {"role": "tool", "tool_call_id": "call_3", "content": [{"type": "text", "text": "ok"}]},
    {"role": "user", "content": [{"type": "text", "text": "Go on."}, PNG]},
]


def test_a_litellm_history_is_the_anthropic_conversation_a_trace_holds() -> None:
    system, messages = from_openai(LITELLM_HISTORY)
    assert system == "You are a helpful assistant that can interact with a computer."
    assert messages[1] == {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Let me run the tests."},
            {"type": "tool_use", "id": "call_1", "name": "bash", "input": {"command": "pytest"}},
        ],
    }
    assert messages[2] == {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "call_1", "content": "1 failed, 3 passed in 0.05s"}
        ],
    }
    assert [block["tool_use_id"] for block in messages[4]["content"]] == ["call_2", "call_3"]
    assert messages[5]["content"][1] == {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="},
    }
    assert to_openai(messages, system) == LITELLM_HISTORY


_text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)
_args = st.dictionaries(st.text("abc", min_size=1, max_size=3), st.integers() | _text, max_size=3)
_id = st.text("abcdef0123456789", min_size=1, max_size=6).map(lambda s: f"call_{s}")
_part = st.builds(lambda t: {"type": "text", "text": t}, _text) | st.builds(
    lambda u: {"type": "image_url", "image_url": {"url": u}},
    st.sampled_from(["https://example.com/a.png", "data:image/jpeg;base64,/9j/4AAQ"]),
)
_call = st.builds(
    lambda i, n, a: {"id": i, "type": "function", "function": {"name": n, "arguments": json.dumps(a)}},
    _id,
    st.sampled_from(["bash", "read_file"]),
    _args,
)


@st.composite
def _conversation(draw: st.DrawFn) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"role": "system", "content": t} for t in draw(st.lists(_text, max_size=2))]
    for _ in range(draw(st.integers(0, 5))):
        kind = draw(st.sampled_from(["user", "user-parts", "assistant", "assistant-calls"]))
        if kind == "user":
            out.append({"role": "user", "content": draw(_text)})
        elif kind == "user-parts":
            out.append({"role": "user", "content": draw(st.lists(_part, max_size=3))})
        elif kind == "assistant":
            out.append({"role": "assistant", "content": draw(_text)})
        else:
            calls = draw(st.lists(_call, min_size=1, max_size=3))
            text = draw(st.none() | _text.filter(bool))
            out.append({"role": "assistant", "content": text, "tool_calls": calls})
            for call in calls:
                content = draw(
                    _text | st.lists(st.builds(lambda t: {"type": "text", "text": t}, _text), max_size=2)
                )
                out.append({"role": "tool", "tool_call_id": call["id"], "content": content})
    return out


@settings(max_examples=150, deadline=None)
@given(_conversation())
def test_any_conversation_converted_to_anthropic_and_back_is_itself(
    conversation: list[dict[str, Any]],
) -> None:
    system, messages = from_openai(conversation)
    assert all(message["role"] in ("user", "assistant") for message in messages)
    assert json.loads(json.dumps(messages)) == messages  # JSON, as a trace stores it
    # The arguments come back as json.dumps(input, ensure_ascii=False): the same JSON, maybe spelled
    # otherwise (an escape, a space) than the harness had it.
    assert _parsed(to_openai(messages, system)) == _parsed(conversation)
    assert from_openai(to_openai(messages, system)) == (system, messages)


def _parsed(conversation: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for message in conversation:
        if "tool_calls" in message:
            calls = [
                {**c, "function": {**c["function"], "arguments": json.loads(c["function"]["arguments"])}}
                for c in message["tool_calls"]
            ]
            message = {**message, "tool_calls": calls}
        out.append(message)
    return out


LATE_SYSTEM = [{"role": "user", "content": "hi"}, {"role": "system", "content": "late"}]
LIST_ARGUMENTS = [{"role": "assistant", "content": None, "tool_calls": [call("c", "[1]")]}]


@pytest.mark.parametrize(
    ("messages", "said"),
    [
        (LATE_SYSTEM, "message 1: is a system message after"),
        (LIST_ARGUMENTS, "message 0 tool_calls[0]: has arguments '[1]', not a JSON object"),
        ([{"role": "tool", "content": "x"}], "message 0: is a tool message without a tool_call_id"),
        (
            [{"role": "user", "content": "x", "audio": {}}],
            "message 0: has 'audio', which has no Anthropic form",
        ),
        ([{"role": "function", "content": "x"}], "message 0: has role 'function'"),
        (
            [{"role": "user", "content": [{"type": "input_audio"}]}],
            "message 0 part 0: is a 'input_audio' part",
        ),
    ],
)
def test_what_anthropic_s_shape_cannot_say_is_refused_naming_the_message(messages: Any, said: str) -> None:
    with pytest.raises(MessageFormatError) as raised:
        from_openai(messages)
    assert str(raised.value).startswith(said)


THINKING = [{"role": "assistant", "content": [{"type": "thinking", "thinking": "hm", "signature": "s"}]}]
FAILED_TOOL = [
    {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "t", "content": "boom", "is_error": True}],
    }
]


@pytest.mark.parametrize(
    ("messages", "said"),
    [
        (THINKING, "message 0 block 0: is a 'thinking' block"),
        (FAILED_TOOL, "message 0 block 0: is a tool result marked is_error"),
        ([{"role": "system", "content": "x"}], "message 0: has role 'system'"),
    ],
)
def test_what_openai_s_shape_cannot_say_is_refused_naming_the_message(messages: Any, said: str) -> None:
    with pytest.raises(MessageFormatError) as raised:
        to_openai(messages)
    assert str(raised.value).startswith(said)


def test_a_step_case_gives_its_conversation_in_the_openai_shape(tmp_path: Path) -> None:
    system, messages = from_openai(LITELLM_HISTORY[:4])
    goldens = {
        "cases": [
            {
                "id": "bash-1",
                "kind": "tool_choice",
                "context": {"request": {"model": "m", "system": system, "messages": messages}},
                "expect": {"tool": "bash"},
            }
        ]
    }
    case = parse_goldens(json.dumps(goldens), tmp_path / "g.yaml", "g.yaml").case("bash-1")
    assert case.openai_messages == LITELLM_HISTORY[:4]


def test_a_checkpoint_gives_the_conversation_it_was_taken_in_the_openai_shape(tmp_path: Path) -> None:
    import anthropic

    from pytest_agentevals.sim import Reply, SimServer

    with SimServer([Reply.text("Done.")]) as sim, ae.Recorder(tmp_path / "run.trace.jsonl"):
        client = anthropic.Anthropic(base_url=sim.url, api_key="sim", max_retries=0)
        system, messages = from_openai(LITELLM_HISTORY[:4])
        client.messages.create(model="sim-1", max_tokens=32, system=system, messages=messages)
        ae.checkpoint({"turn": 1})
    point = resume_point_from_trace(tmp_path / "run.trace.jsonl", "latest", tmp_path / "ws")
    assert point.openai_messages() == [*LITELLM_HISTORY[:4], {"role": "assistant", "content": "Done."}]
    assert point.conversation()[0] == LITELLM_HISTORY[0]["content"]
