"""A secret-named variable set between two events written is caught in the next one wherever it
shows: in its line, and in streamed text that only the scrubber's `prepare` sees joined."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pytest_agentevals.trace import TraceWriter
from pytest_agentevals.trace.scrub import REDACTED, Scrubber


def _model_call(seq: int, text: str, pieces: list[str]) -> dict[str, Any]:
    deltas = [
        {
            "event": "content_block_delta",
            "data": {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": piece},
            },
        }
        for piece in pieces
    ]
    return {
        "type": "model_call",
        "seq": seq,
        "request": {"method": "POST", "url": "http://127.0.0.1:9/v1/messages", "body": {"note": text}},
        "response": {"status": 200, "sse": deltas},
    }


def test_a_secret_set_between_two_events_is_caught_in_the_next_ones_line_and_stream(tmp_path: Path) -> None:
    late = "late-token-" + "7q" * 8
    environ: dict[str, str] = {}
    path = tmp_path / "late.trace.jsonl"
    with TraceWriter(path) as writer:
        writer.scrubber = Scrubber(environ=environ)
        writer.write(_model_call(1, f"early {late}", [late[:9], late[9:]]))  # no secret yet
        environ["LATE_TOKEN"] = late
        writer.write(_model_call(2, f"then {late}", [late[:9], late[9:]]))  # split over two pieces
        writer.write({"type": "tool_call", "seq": 3, "output": f"and {late}"})
    first, second, third = (json.loads(line) for line in path.read_text().splitlines())
    assert first["request"]["body"]["note"] == f"early {late}"  # it was no secret then
    assert second["request"]["body"]["note"] == f"then {REDACTED}"
    assert [event["data"]["delta"]["text"] for event in second["response"]["sse"]] == [REDACTED, ""]
    assert third["output"] == f"and {REDACTED}"
    assert late not in "".join(path.read_text().splitlines()[1:])
