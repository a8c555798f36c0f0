"""parse_sse's fast path (one `event:` line and one `data:` line) reads a stream exactly as the
line-by-line reading does (issue 22: recording overhead)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_agentevals.recording.providers.anthropic import parse_sse


def _line_by_line(raw: bytes) -> list[dict[str, Any]]:
    """The SSE reading the fast path must agree with: every line of every block."""
    events: list[dict[str, Any]] = []
    for block in raw.decode("utf-8", errors="replace").replace("\r\n", "\n").split("\n\n"):
        name: str | None = None
        data_lines: list[str] = []
        for line in block.split("\n"):
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                data_lines.append(line[5:].lstrip(" "))
        if name is None and not data_lines:
            continue
        data_text = "\n".join(data_lines)
        try:
            data: Any = json.loads(data_text)
        except ValueError:
            data = data_text
        event: dict[str, Any] = {"data": data}
        if name is not None:
            event["event"] = name
        events.append(event)
    return events


_LINE = st.one_of(
    st.tuples(
        st.sampled_from(["event:", "event: ", "data:", "data: ", "id: ", ": ", ""]), st.text(max_size=12)
    ).map("".join),
    st.sampled_from(['data: {"type":"ping"}', "event: message_stop", "data: [1, 2]", "data:"]),
)
# Data the JSON scanner reads whole, in part, or not at all, as `json.loads` must judge it: values
# with whitespace or something else around them, two values, a broken one, a BOM before one.
_JSON_DATA = st.tuples(
    st.sampled_from(["", " ", "\t", "\ufeff"]),
    st.sampled_from(['{"type":"ping"}', '{"a": [1, 2.5, null]}', "[]", '"text"', "3", '{"a":', "1 2"]),
    st.sampled_from(["", " ", "\t", "x", ",{}", "}"]),
).map(lambda parts: "data: " + "".join(parts))
_BLOCK = st.lists(st.one_of(_LINE, _JSON_DATA), max_size=4).map("\n".join)
_STREAM = st.lists(_BLOCK, max_size=5).map(lambda blocks: "\n\n".join(blocks).encode("utf-8"))


@settings(max_examples=300, deadline=None)
@given(_STREAM)
def test_parse_sse_reads_every_stream_as_line_by_line_reading_does(raw: bytes) -> None:
    assert parse_sse(raw) == _line_by_line(raw)


def test_an_api_stream_is_read_event_by_event() -> None:
    raw = b'event: message_start\ndata: {"type":"message_start"}\n\nevent: ping\ndata: {"type": "ping"}\n\n'
    assert parse_sse(raw) == [
        {"event": "message_start", "data": {"type": "message_start"}},
        {"event": "ping", "data": {"type": "ping"}},
    ]


def test_event_data_nested_deeper_than_the_parser_goes_is_kept_as_text() -> None:
    # A stream is what the server sent: data no JSON parser can nest that deep is stored as the
    # text it was, never raised into the agent's request as a RecursionError.
    deep = "[" * 100_000 + "]" * 100_000
    raw = f"event: message_delta\ndata: {deep}\n\nevent: ping\ndata:  {deep}\n\n".encode()
    assert parse_sse(raw) == [
        {"event": "message_delta", "data": deep},
        {"event": "ping", "data": deep},
    ]
