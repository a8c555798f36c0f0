"""The LangGraph state encoder's memo of messages: at every checkpoint a message unchanged since the
previous one is not encoded again, and the memo's encoding is exactly the encoding afresh, whatever a
node edits in place between checkpoints (a field replaced, a value deep inside one, a key moved, 1
made True or 1.0, bytes made a bytearray)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("langgraph", reason="needs pytest-agentevals[langgraph]")

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from pytest_agentevals.adapters import langgraph_state
from pytest_agentevals.trace.delta import Frozen

LEAVES = st.sampled_from([0, 1, True, False, 0.0, -0.0, 1.0, None, ""]) | st.text(max_size=3)
VALUES = st.recursive(
    LEAVES,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.text(max_size=2), inner, max_size=3)
        | st.tuples(inner, inner)
    ),
    max_leaves=6,
)
# What an edit puts in may also be bytes: not plain, so the message is encoded every time from then on.
NEW = VALUES | st.sampled_from([b"ab", bytearray(b"ab"), {"raw": b"ab"}])
CONTAINERS = st.dictionaries(st.text(max_size=2), VALUES, max_size=3)
# A leaf's twin: equal to it (or the same bytes) and of another type, so encoded otherwise.
TWINS: dict[tuple[str, str], Any] = {
    ("int", "1"): 1.0,
    ("float", "1.0"): True,
    ("bool", "True"): 1,
    ("int", "0"): -0.0,
    ("float", "-0.0"): False,
    ("bool", "False"): 0.0,
    ("float", "0.0"): 0,
    ("bytes", "b'ab'"): bytearray(b"ab"),
    ("bytearray", "bytearray(b'ab')"): b"ab",
}


@st.composite
def messages(draw: st.DrawFn) -> BaseMessage:
    kind = draw(st.sampled_from(["human", "ai", "tool"]))
    content = draw(st.text(max_size=4) | st.lists(CONTAINERS, max_size=2))
    common = {"additional_kwargs": draw(CONTAINERS), "response_metadata": draw(CONTAINERS)}
    if kind == "human":
        return HumanMessage(content=content, **common)
    if kind == "tool":
        return ToolMessage(content=content, tool_call_id=draw(st.text(max_size=3)), **common)
    calls = [{"name": "t", "args": draw(CONTAINERS), "id": str(n)} for n in range(draw(st.integers(0, 2)))]
    return AIMessage(content=content, tool_calls=calls, **common)


def containers_in(value: Any) -> list[Any]:
    """Every list and dict inside `value`, itself first (the places an edit in place can reach)."""
    found = []
    if isinstance(value, dict | list):
        found.append(value)
    children = value.values() if isinstance(value, dict) else value if isinstance(value, list | tuple) else []
    for child in children:
        found.extend(containers_in(child))
    return found


ACTIONS = ("field", "set", "delete", "add", "move", "twin", "twin")  # (twins: the likeliest misses)


def edit(message: BaseMessage, field_pick: int, action: str, pick: int, new: Any) -> None:
    """One edit in place of `message`: a field replaced, or in a list or dict inside a field an item
    set, deleted or added, a key moved last, or a leaf made its twin."""
    fields = ["content", "additional_kwargs", "response_metadata"]
    if isinstance(message, AIMessage):
        fields.append("tool_calls")
    field = fields[field_pick % len(fields)]
    if field == "tool_calls":  # a tool call's shape is fixed: what a node edits is its args
        places = [place for call in message.tool_calls for place in containers_in(call["args"])]
    else:
        places = containers_in(getattr(message, field))
    if action == "field" or not places:
        if field != "tool_calls":
            setattr(message, field, str(new) if field == "content" else {"new": new})
        return
    if action == "twin":
        leaves = [(place, key) for place in places for key in keys_of(place) if twin_key(place[key]) in TWINS]
        if leaves:
            place, key = leaves[pick % len(leaves)]
            place[key] = TWINS[twin_key(place[key])]
        return
    place = places[pick % len(places)]
    if place is message.content:
        new = {"type": "text", "text": new}  # a content list holds blocks
    keys = keys_of(place)
    if action == "add" or not keys:
        if isinstance(place, list):
            place.append(new)
        else:
            place[f"k{pick % 3}"] = new
        return
    key = keys[pick % len(keys)]
    if action == "set":
        place[key] = new
    elif action == "delete":
        del place[key]
    elif isinstance(place, dict):  # move
        place[key] = place.pop(key)  # the same key and value, last now


def keys_of(place: Any) -> list[Any]:
    return list(range(len(place))) if isinstance(place, list) else list(place)


def twin_key(value: Any) -> tuple[str, str]:
    return (type(value).__name__, repr(value))


def typed(value: Any) -> Any:
    """`value` with every type and every object's key order spelled out: what "exactly" compares."""
    if isinstance(value, dict):
        return ("dict", [(key, typed(item)) for key, item in value.items()])
    if isinstance(value, list | tuple):
        return (type(value).__name__, [typed(item) for item in value])
    return (type(value).__name__, repr(value))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(messages(), min_size=1, max_size=4),
    st.lists(
        st.tuples(st.integers(0, 3), st.integers(0, 3), st.sampled_from(ACTIONS), st.integers(0, 20), NEW),
        min_size=1,
        max_size=12,
    ),
)
def test_the_memo_encodes_exactly_as_encoding_afresh_whatever_is_edited_in_place(
    history: list[BaseMessage], edits: list[tuple[int, int, str, int, Any]]
) -> None:
    memo = langgraph_state.MessageMemo()
    values = {"messages": history}
    langgraph_state.encode(values, {}, memo, "thread")  # each message remembered as it is now
    for which, field, action, pick, new in edits:
        edit(history[which % len(history)], field, action, pick, new)
        remembered = langgraph_state.encode(values, {}, memo, "thread")
        assert typed(remembered) == typed(langgraph_state.encode(values, {}))


def test_an_unchanged_message_is_the_very_object_encoded_before_and_frozen() -> None:
    memo = langgraph_state.MessageMemo()
    first, second = HumanMessage(content="a"), AIMessage(content="b", additional_kwargs={"n": [1]})
    before = langgraph_state.encode({"messages": [first, second]}, {}, memo, "t")["messages"]
    after = langgraph_state.encode({"messages": [first, second]}, {}, memo, "t")["messages"]
    assert after[0] is before[0]
    assert after[1] is before[1]
    assert type(after[0]) is Frozen
    second.additional_kwargs["n"].append(2)
    edited = langgraph_state.encode({"messages": [first, second]}, {}, memo, "t")["messages"]
    assert edited[0] is before[0]
    assert edited[1] is not before[1]
    assert edited[1]["data"]["additional_kwargs"] == {"n": [1, 2]}
    held = AIMessage(content="c", additional_kwargs={"raw": b"bytes"})  # not plain: never remembered
    one, two = (langgraph_state.encode({"m": [held]}, {}, memo, "t")["m"][0] for _ in range(2))
    assert one is not two
    assert type(one) is dict


def test_the_memo_holds_the_latest_state_of_the_threads_last_checkpointed() -> None:
    memo = langgraph_state.MessageMemo()
    kept = [HumanMessage(content="kept"), HumanMessage(content="dropped")]
    langgraph_state.encode({"messages": kept}, {}, memo, "t")
    langgraph_state.encode({"messages": kept[:1]}, {}, memo, "t")
    assert [entry[0] for entry in memo.entries("t").values()] == kept[:1]  # what the state holds now
    for thread in range(langgraph_state.MessageMemo.MAX_THREADS + 4):
        langgraph_state.encode({"messages": kept}, {}, memo, thread)
    assert memo.entries("t") == {}
    assert memo.entries(4) != {}
    assert memo.entries(3) == {}  # the four threads checkpointed first are forgotten
