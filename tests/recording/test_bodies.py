"""Incremental request-body decoding gives exactly what json.loads gives, whatever the history does."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_agentevals.recording.bodies import BodyDecoder


def sdk_bytes(body: dict[str, Any]) -> bytes:
    # How the anthropic SDK serializes a request body.
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


MESSAGE = st.fixed_dictionaries(
    {
        "role": st.sampled_from(["user", "assistant"]),
        "content": st.one_of(
            st.text(), st.lists(st.dictionaries(st.text(max_size=3), st.text(max_size=5)), max_size=2)
        ),
    }
)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.lists(MESSAGE, max_size=4), min_size=1, max_size=6),
    st.lists(st.sampled_from(["append", "reset", "pretty", "drop-system"]), min_size=6, max_size=6),
    st.text(max_size=5),
)
def test_decoding_equals_json_loads(chunks: list[list[Any]], moves: list[str], system: str) -> None:
    decoder = BodyDecoder()
    history: list[Any] = []
    for step, chunk in enumerate(chunks):
        history = chunk if moves[step] == "reset" else history + chunk  # a compaction resets it
        body: dict[str, Any] = {
            "max_tokens": 5,
            "messages": history,
            "model": "m",
            "system": system + str(step),
        }
        if moves[step] == "drop-system":
            body.pop("system")
        # Another client's serializer: the bytes no longer predict the next body.
        raw = json.dumps(body).encode() if moves[step] == "pretty" else sdk_bytes(body)
        assert decoder.decode(raw) == json.loads(raw)


def test_a_growing_history_is_parsed_incrementally() -> None:
    decoder = BodyDecoder()
    history: list[Any] = []
    first: Any = None
    for step in range(5):
        history = [*history, {"role": "user", "content": f"step {step} ünïcode"}]
        raw = sdk_bytes({"max_tokens": 5, "messages": history, "model": "m", "tools": [{"name": "t"}]})
        body = decoder.decode(raw)
        assert body == json.loads(raw)
        if first is not None:
            # The kept messages are the very objects decoded the step before: nothing was re-parsed.
            assert body["messages"][0] is first
        first = body["messages"][0]
