"""The Messages API's wire format: request checks, message JSON, SSE event streams and error bodies.

Shapes follow the anthropic SDK's types and stream accumulator (anthropic/types, anthropic/lib/streaming):
a streamed message is message_start (usage, empty content), then per block content_block_start,
deltas (text_delta / input_json_delta / thinking_delta + signature_delta), content_block_stop, with a
ping after the first block starts, then message_delta (stop_reason, cumulative usage) and message_stop.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from .usage import Usage

# Deltas are cut into pieces this long, so clients exercise their accumulation without paying for
# one event per character.
DELTA_CHARS = 32


def dumps(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def error_body(error_type: str, message: str, request_id: str) -> bytes:
    return dumps(
        {"type": "error", "error": {"type": error_type, "message": message}, "request_id": request_id}
    )


# The beta under which a conversation may carry `system` messages between turns (the Claude Code
# CLI sends its environment block as one since 2.1.3xx); without it the API rejects the role.
SYSTEM_MESSAGES_BETA = "per-turn-control-"


def allows_system_messages(beta_header: str) -> bool:
    """Whether an `anthropic-beta` header value opts into mid-conversation `system` messages."""
    return any(beta.strip().startswith(SYSTEM_MESSAGES_BETA) for beta in beta_header.split(","))


def check_request(body: Any, needs_max_tokens: bool = True, system_messages: bool = False) -> str | None:
    """What the real API would reject in a /v1/messages body with a 400, or None when it is fine.

    count_tokens takes the same body without `max_tokens` (`needs_max_tokens=False`). With
    `system_messages` (the request's betas allow them, `allows_system_messages`) a message may have
    the role "system": it sits between turns and plays no part in tool_use/tool_result pairing.
    """
    roles = ("user", "assistant", "system") if system_messages else ("user", "assistant")
    if not isinstance(body, dict):
        return "the request body must be a JSON object"
    if not isinstance(body.get("model"), str) or not body["model"]:
        return "model: Field required"
    max_tokens = body.get("max_tokens")
    if needs_max_tokens and (
        not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1
    ):
        return "max_tokens: Field required (an integer >= 1)"
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "messages: at least one message is required"
    previous_uses: set[str] = set()
    for i, message in enumerate(messages):
        if not isinstance(message, dict) or message.get("role") not in roles:
            return f"messages.{i}: each message needs a role of {' or '.join(map(repr, roles))}"
        content = message.get("content")
        if isinstance(content, str):
            blocks: list[Any] = []
        elif isinstance(content, list):
            blocks = content
        else:
            return f"messages.{i}.content: a string or a list of content blocks is required"
        for j, block in enumerate(blocks):
            if not isinstance(block, dict) or not isinstance(block.get("type"), str):
                return f"messages.{i}.content.{j}: a content block needs a 'type'"
        if message["role"] == "system":
            continue
        results = {b.get("tool_use_id") for b in blocks if b.get("type") == "tool_result"}
        if message["role"] == "user":
            unexpected = sorted(str(r) for r in results - previous_uses)
            if unexpected:
                return (
                    f"messages.{i}.content: unexpected `tool_use_id` found in `tool_result` blocks: "
                    f"{', '.join(unexpected)}. Each `tool_result` block must have a corresponding `tool_use` "
                    "block in the previous message."
                )
            previous_uses = set()
        else:
            previous_uses = {str(b.get("id")) for b in blocks if b.get("type") == "tool_use"}
            following_at = next(
                (j for j in range(i + 1, len(messages)) if _role(messages[j]) != "system"), None
            )
            if previous_uses and following_at is not None:
                following = messages[following_at]
                following_content = following.get("content") if isinstance(following, dict) else None
                answered = {
                    b.get("tool_use_id")
                    for b in (following_content if isinstance(following_content, list) else [])
                    if isinstance(b, dict) and b.get("type") == "tool_result"
                }
                if previous_uses - answered:
                    return _missing_results(following_at, previous_uses - answered)
    return None


def _role(message: Any) -> Any:
    return message.get("role") if isinstance(message, dict) else None


def _missing_results(i: int, ids: set[str]) -> str:
    return (
        f"messages.{i}: `tool_use` ids were found without `tool_result` blocks immediately after: "
        f"{', '.join(sorted(ids))}. Each `tool_use` block must have a corresponding `tool_result` block "
        "in the next message."
    )


def shape_content(
    content: Sequence[Mapping[str, Any]], stop_sequences: Sequence[str], max_tokens: int
) -> tuple[list[dict[str, Any]], str | None, str | None]:
    """Cut a reply the way generation would: at a requested stop sequence, or at `max_tokens`.

    Returns the content, and the stop reason and sequence when a cut happened (else None, None). Text
    is cut at four characters a token; a tool_use that does not fit whole is left out.
    """
    blocks = [dict(block) for block in content]
    for i, block in enumerate(blocks):
        if block["type"] != "text" or not stop_sequences:
            continue
        found = [(block["text"].find(s), s) for s in stop_sequences if s and s in block["text"]]
        if found:
            at, sequence = min(found)
            block["text"] = block["text"][:at]
            return blocks[: i + 1], "stop_sequence", sequence
    budget = max_tokens * 4
    for i, block in enumerate(blocks):
        if block["type"] == "text":
            size = len(block["text"])
        elif block["type"] == "tool_use":
            size = len(block["name"]) + len(dumps(block.get("input", {})))
        else:
            size = len(dumps(block))
        if size > budget:
            if block["type"] == "text":
                block["text"] = block["text"][:budget]
                return blocks[: i + 1], "max_tokens", None
            return blocks[:i], "max_tokens", None
        budget -= size
    return blocks, None, None


def usage_json(usage: Usage, output_tokens: int) -> dict[str, Any]:
    return {
        "input_tokens": usage.input_tokens,
        "cache_creation_input_tokens": usage.cache_creation_input_tokens,
        "cache_read_input_tokens": usage.cache_read_input_tokens,
        "cache_creation": {
            "ephemeral_5m_input_tokens": usage.ephemeral_5m_input_tokens,
            "ephemeral_1h_input_tokens": usage.ephemeral_1h_input_tokens,
        },
        "output_tokens": output_tokens,
        "service_tier": "standard",
    }


def message_json(
    message_id: str,
    model: str,
    content: list[dict[str, Any]],
    stop_reason: str,
    stop_sequence: str | None,
    usage: dict[str, Any],
) -> dict[str, Any]:
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": stop_sequence,
        "usage": usage,
    }


def sse_events(message: Mapping[str, Any]) -> Iterator[bytes]:
    """The SSE events that stream `message` (a complete message as `message_json` builds it)."""
    usage = message["usage"]
    start = {
        **message,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {**usage, "output_tokens": 1},
    }
    yield _event("message_start", {"type": "message_start", "message": start})
    for index, block in enumerate(message["content"]):
        kind = block["type"]
        if kind == "text":
            opening: dict[str, Any] = {"type": "text", "text": ""}
        elif kind == "tool_use":
            opening = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
        elif kind == "thinking":
            opening = {"type": "thinking", "thinking": "", "signature": ""}
        else:
            opening = dict(block)
        yield _event(
            "content_block_start", {"type": "content_block_start", "index": index, "content_block": opening}
        )
        if index == 0:
            yield _event("ping", {"type": "ping"})
        for delta in _deltas(block):
            yield _event(
                "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
            )
        yield _event("content_block_stop", {"type": "content_block_stop", "index": index})
    final_usage = {
        "input_tokens": usage["input_tokens"],
        "cache_creation_input_tokens": usage["cache_creation_input_tokens"],
        "cache_read_input_tokens": usage["cache_read_input_tokens"],
        "output_tokens": usage["output_tokens"],
    }
    delta = {"stop_reason": message["stop_reason"], "stop_sequence": message["stop_sequence"]}
    yield _event("message_delta", {"type": "message_delta", "delta": delta, "usage": final_usage})
    yield _event("message_stop", {"type": "message_stop"})


def _deltas(block: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    kind = block["type"]
    if kind == "text":
        for piece in _pieces(block["text"]):
            yield {"type": "text_delta", "text": piece}
    elif kind == "tool_use":
        # The API opens a tool's input with an empty fragment before the JSON itself.
        yield {"type": "input_json_delta", "partial_json": ""}
        for piece in _pieces(dumps(block.get("input", {})).decode("utf-8")):
            yield {"type": "input_json_delta", "partial_json": piece}
    elif kind == "thinking":
        for piece in _pieces(block.get("thinking", "")):
            yield {"type": "thinking_delta", "thinking": piece}
        yield {"type": "signature_delta", "signature": block.get("signature", "")}


def _pieces(text: str) -> Iterator[str]:
    for start in range(0, len(text), DELTA_CHARS):
        yield text[start : start + DELTA_CHARS]


def _event(name: str, data: Mapping[str, Any]) -> bytes:
    return b"event: " + name.encode("ascii") + b"\ndata: " + dumps(data) + b"\n\n"


def chunked(pieces: Iterator[bytes] | Sequence[bytes], final: bool = True) -> bytes:
    """HTTP/1.1 chunked transfer encoding of `pieces`, one chunk each, ended by the empty chunk."""
    out = bytearray()
    for piece in pieces:
        out += b"%x\r\n" % len(piece) + piece + b"\r\n"
    if final:
        out += b"0\r\n\r\n"
    return bytes(out)
