"""The assistant message of a stored response, whether it was stored as JSON or as a parsed stream.

Below every layer: the recorder, the step layer's extraction and the metrics all read it.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping
from typing import Any


def response_message(stored_body: Mapping[str, Any]) -> dict[str, Any] | None:
    """The assistant message of a response, assembled from the stream when it was streamed."""
    if "json" in stored_body:
        body = stored_body["json"]
        return body if isinstance(body, dict) and body.get("type") == "message" else None
    if "sse" not in stored_body:
        return None
    message: dict[str, Any] | None = None
    partial_json: dict[int, str] = {}
    for event in stored_body["sse"]:
        data = event.get("data")
        if not isinstance(data, dict):
            continue
        kind = data.get("type")
        if kind == "message_start" and isinstance(data.get("message"), dict):
            message = {**data["message"], "content": []}
        elif message is None:
            continue
        elif kind == "content_block_start":
            message["content"].append(dict(data.get("content_block", {})))
        elif kind == "content_block_delta":
            _apply_delta(message["content"], data, partial_json)
        elif kind == "content_block_stop":
            index = data.get("index", len(message["content"]) - 1)
            if index in partial_json and 0 <= index < len(message["content"]):
                with contextlib.suppress(ValueError):
                    message["content"][index]["input"] = json.loads(partial_json.pop(index) or "{}")
        elif kind == "message_delta":
            message.update({k: v for k, v in data.get("delta", {}).items() if v is not None})
            if isinstance(data.get("usage"), dict):
                message["usage"] = {**message.get("usage", {}), **data["usage"]}
    return message


def _apply_delta(content: list[dict[str, Any]], data: dict[str, Any], partial_json: dict[int, str]) -> None:
    index = data.get("index", len(content) - 1)
    if not isinstance(index, int) or not 0 <= index < len(content):
        return
    delta = data.get("delta", {})
    block = content[index]
    kind = delta.get("type")
    if kind == "text_delta":
        block["text"] = block.get("text", "") + delta.get("text", "")
    elif kind == "input_json_delta":
        partial_json[index] = partial_json.get(index, "") + delta.get("partial_json", "")
    elif kind == "thinking_delta":
        block["thinking"] = block.get("thinking", "") + delta.get("thinking", "")
    elif kind == "signature_delta":
        block["signature"] = delta.get("signature", "")
