"""The assistant message of a stored response, whether it was stored as JSON or as a parsed stream.

Below every layer: the recorder, the step layer's extraction and the metrics all read it.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping, Sequence
from typing import Any


def conversation_at(events: Sequence[Mapping[str, Any]]) -> tuple[Any, list[dict[str, Any]]]:
    """`(system, messages)` of the conversation the events end on: the last model request's system
    prompt and messages, then its answer as an assistant message. `(None, [])` with no model call."""
    for event in reversed(events):
        if event.get("type") != "model_call":
            continue
        request = event.get("request")
        body = request.get("body") if isinstance(request, Mapping) else None
        if not isinstance(body, Mapping) or not isinstance(body.get("messages"), list):
            continue
        response = event.get("response")
        answer = response_message(response) if isinstance(response, Mapping) else None
        messages = list(body["messages"])
        if answer is not None:
            messages.append({"role": "assistant", "content": answer.get("content") or []})
        return body.get("system"), messages
    return None, []


def response_message(stored_body: Mapping[str, Any]) -> dict[str, Any] | None:
    """The assistant message of a response, assembled from the stream when it was streamed.

    A trace is untrusted: pieces of the wrong shape are skipped, never raised on."""
    if "json" in stored_body:
        body = stored_body["json"]
        return body if isinstance(body, dict) and body.get("type") == "message" else None
    stream = stored_body.get("sse")
    if not isinstance(stream, list):
        return None
    message: dict[str, Any] | None = None
    partial_json: dict[int, str] = {}
    for event in stream:
        data = event.get("data") if isinstance(event, dict) else None
        if not isinstance(data, dict):
            continue
        kind = data.get("type")
        if kind == "message_start" and isinstance(data.get("message"), dict):
            message = {**data["message"], "content": []}
        elif message is None:
            continue
        elif kind == "content_block_start":
            block = data.get("content_block")
            message["content"].append(dict(block) if isinstance(block, dict) else {})
        elif kind == "content_block_delta":
            _apply_delta(message["content"], data, partial_json)
        elif kind == "content_block_stop":
            index = data.get("index", len(message["content"]) - 1)
            if type(index) is int and index in partial_json and 0 <= index < len(message["content"]):
                with contextlib.suppress(ValueError):
                    message["content"][index]["input"] = json.loads(partial_json.pop(index) or "{}")
        elif kind == "message_delta":
            delta = data.get("delta")
            if isinstance(delta, dict):
                message.update({k: v for k, v in delta.items() if v is not None})
            usage, before = data.get("usage"), message.get("usage")
            if isinstance(usage, dict):
                message["usage"] = {**(before if isinstance(before, dict) else {}), **usage}
    return message


def _apply_delta(content: list[dict[str, Any]], data: dict[str, Any], partial_json: dict[int, str]) -> None:
    index = data.get("index", len(content) - 1)
    delta = data.get("delta")
    if type(index) is not int or not 0 <= index < len(content) or not isinstance(delta, dict):
        return
    block = content[index]
    kind = delta.get("type")
    for name, field in (("text_delta", "text"), ("thinking_delta", "thinking")):
        if kind == name:
            before, piece = block.get(field, ""), delta.get(field, "")
            if isinstance(before, str) and isinstance(piece, str):
                block[field] = before + piece
    if kind == "input_json_delta":
        piece = delta.get("partial_json", "")
        if isinstance(piece, str):
            partial_json[index] = partial_json.get(index, "") + piece
    elif kind == "signature_delta":
        block["signature"] = delta.get("signature", "")


def message_events(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The SSE events (as a trace stores them: {"event", "data"}) that stream `message` as the API
    streams one: what a replay serves a client that asked for a stream of a response stored whole
    (an imported run's)."""
    stated = message.get("usage")
    usage: Mapping[str, Any] = stated if isinstance(stated, Mapping) else {}
    start = {**message, "content": [], "stop_reason": None, "stop_sequence": None}
    events = [{"event": "message_start", "data": {"type": "message_start", "message": start}}]
    for index, block in enumerate(message.get("content") or []):
        if not isinstance(block, Mapping):
            continue
        kind = block.get("type")
        if kind == "text":
            opening: dict[str, Any] = {"type": "text", "text": ""}
            delta: dict[str, Any] | None = {"type": "text_delta", "text": str(block.get("text", ""))}
        elif kind == "tool_use":
            opening = {"type": "tool_use", "id": block.get("id"), "name": block.get("name"), "input": {}}
            text = json.dumps(block.get("input", {}), ensure_ascii=False, separators=(",", ":"))
            delta = {"type": "input_json_delta", "partial_json": text}
        elif kind == "thinking":
            opening = {"type": "thinking", "thinking": "", "signature": ""}
            delta = {"type": "thinking_delta", "thinking": str(block.get("thinking", ""))}
        else:
            opening, delta = dict(block), None
        events.append(
            {
                "event": "content_block_start",
                "data": {"type": "content_block_start", "index": index, "content_block": opening},
            }
        )
        if delta is not None:
            events.append(
                {
                    "event": "content_block_delta",
                    "data": {"type": "content_block_delta", "index": index, "delta": delta},
                }
            )
        events.append({"event": "content_block_stop", "data": {"type": "content_block_stop", "index": index}})
    final = {"stop_reason": message.get("stop_reason"), "stop_sequence": message.get("stop_sequence")}
    events.append(
        {
            "event": "message_delta",
            "data": {
                "type": "message_delta",
                "delta": final,
                "usage": {"output_tokens": usage.get("output_tokens", 0)},
            },
        }
    )
    events.append({"event": "message_stop", "data": {"type": "message_stop"}})
    return events
