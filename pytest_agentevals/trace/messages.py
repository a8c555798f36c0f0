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
