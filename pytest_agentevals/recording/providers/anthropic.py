"""The Anthropic Messages API: requests, JSON and SSE responses, and usage.

Used both ways: recording turns raw HTTP into the parts of a model_call event; replay turns a stored
response back into the bytes the SDK expects.
"""

from __future__ import annotations

import base64
import json
import zlib
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ...trace.scrub import REDACTED, is_secret_header
from ...trace.totals import CACHE_WRITE_SPLIT

USAGE_KEYS = ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")

# Request headers that change between identical calls (SDK telemetry, retry counters, transport)
# and say nothing about what was asked.
_VOLATILE_REQUEST_HEADERS = frozenset(
    {"content-length", "host", "connection", "accept-encoding", "idempotency-key"}
)
_KEPT_RESPONSE_HEADERS = ("content-type", "request-id", "retry-after", "x-should-retry")
_KEPT_RESPONSE_PREFIXES = ("anthropic-ratelimit-",)


def is_messages_call(method: str, url: str) -> bool:
    path = url.split("?", 1)[0].rstrip("/")
    return method.upper() == "POST" and path.endswith("/v1/messages")


# What becomes of a request header, by its lower-case name: dropped, redacted or kept. Every request
# of a run sends the same twenty names, each decided once (a bounded memo: names come from the
# harness's code, but nothing stops a client from sending new ones at every call).
_DROP, _REDACT, _KEEP = 0, 1, 2
_HEADER_FATE: dict[str, int] = {}
_HEADER_FATE_ENTRIES = 1024


def _decide(lower: str) -> int:
    """A header name's fate, decided and remembered (the caller looked in the memo first)."""
    if lower in _VOLATILE_REQUEST_HEADERS or lower.startswith("x-stainless-"):
        fate = _DROP
    else:
        fate = _REDACT if is_secret_header(lower) else _KEEP
    if len(_HEADER_FATE) >= _HEADER_FATE_ENTRIES:
        _HEADER_FATE.clear()
    _HEADER_FATE[lower] = fate
    return fate


def request_headers(lowered: Mapping[str, Any]) -> dict[str, str]:
    """The headers worth keeping, with the value of any that carries a credential redacted, whatever
    its name or value looks like (a gateway's own key is no known key shape). `lowered`: the
    request's headers by lower-case name (`exchange._lowered`)."""
    kept: dict[str, str] = {}
    fates = _HEADER_FATE
    for lower, value in lowered.items():
        fate = fates.get(lower)  # the memo read here: a call per header was a tenth of this
        if fate is None:
            fate = _decide(lower)
        if fate == _KEEP:
            kept[lower] = value if isinstance(value, str) else ", ".join(value)
        elif fate == _REDACT:
            kept[lower] = REDACTED
    return kept


def response_headers(lowered: Mapping[str, Any]) -> dict[str, str]:
    """The response headers worth keeping; `lowered`: the headers by lower-case name."""
    kept: dict[str, str] = {}
    for lower, value in lowered.items():
        if lower in _KEPT_RESPONSE_HEADERS or lower.startswith(_KEPT_RESPONSE_PREFIXES):
            kept[lower] = value if isinstance(value, str) else ", ".join(value)
    return kept


# Content-encoded bodies are stored decoded (so they are scrubbed, and replay serves plain bytes);
# decoding stops at this size, a bound against a compressed bomb.
MAX_DECODED_BYTES = 64 * 1024 * 1024
_ZLIB_WINDOWS = {
    "gzip": (16 + zlib.MAX_WBITS,),
    "x-gzip": (16 + zlib.MAX_WBITS,),
    "deflate": (zlib.MAX_WBITS, -zlib.MAX_WBITS),
}


def decode_body(raw: bytes | None, content_type: str, content_encoding: str = "") -> dict[str, Any]:
    """A body as the trace stores it: {"json": ...}, {"sse": [...]}, {"text": ...} or {"base64": ...}.

    A body sent with a content-encoding is stored decoded, with `"decoded": <encoding>`; one that
    cannot be decoded (an encoding this does not know, corrupt or too large) is not stored at all:
    `{"omitted": why, "size": bytes}`, since what cannot be read cannot be scrubbed."""
    if not raw:
        return {}
    encodings = [
        e.strip().lower() for e in content_encoding.split(",") if e.strip().lower() not in ("", "identity")
    ]
    if encodings:
        data: bytes | None = raw
        for encoding in reversed(encodings):  # the last encoding applied is undone first
            data = _decompress(data, encoding) if data is not None else None
        if data is None:
            why = f"{content_encoding.strip()}-encoded, could not be decoded (so could not be scrubbed)"
            return {"omitted": why, "size": len(raw)}
        return {**decode_body(data, content_type), "decoded": ", ".join(encodings)}
    if "text/event-stream" in content_type:
        return {"sse": parse_sse(raw)}
    if "json" in content_type:
        try:
            return {"json": json.loads(raw)}
        except ValueError:
            pass
    try:
        return {"text": raw.decode("utf-8")}
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(raw).decode("ascii")}


def _decompress(data: bytes, encoding: str) -> bytes | None:
    """`data` decoded from `encoding` (gzip or deflate, zlib-wrapped or raw), or None if it cannot
    be, whole and within MAX_DECODED_BYTES."""
    for window in _ZLIB_WINDOWS.get(encoding, ()):
        decoder = zlib.decompressobj(window)
        try:
            out = decoder.decompress(data, MAX_DECODED_BYTES + 1)
        except zlib.error:
            continue
        if decoder.eof and len(out) <= MAX_DECODED_BYTES:
            return out
        return None
    return None


def encode_body(stored: Mapping[str, Any]) -> bytes:
    """The bytes of a body stored by `decode_body`."""
    if "sse" in stored:
        return render_sse(stored["sse"])
    if "json" in stored:
        return json.dumps(stored["json"], separators=(",", ":")).encode("utf-8")
    if "text" in stored:
        return str(stored["text"]).encode("utf-8")
    if "base64" in stored:
        return base64.b64decode(stored["base64"])
    return b""


def parse_sse(raw: bytes) -> list[dict[str, Any]]:
    """Server-sent events as a list of {"event": name, "data": parsed JSON or text}."""
    events: list[dict[str, Any]] = []
    text = raw.decode("utf-8", errors="replace")
    if "\r" in text:  # a character's search, where replace() walks the text for a pair
        text = text.replace("\r\n", "\n")
    for block in text.split("\n\n"):
        name: str | None = None
        head, newline, rest = block.partition("\n")
        if newline and head.startswith("event:") and rest.startswith("data:") and "\n" not in rest:
            # What every API event is, one event line and one data line: read without the loop.
            name, data_text = head[6:].strip(), rest[5:].lstrip(" ")
        else:
            data_lines: list[str] = []
            for line in block.split("\n"):
                if line.startswith("event:"):
                    name = line[6:].strip()
                elif line.startswith("data:"):
                    data_lines.append(line[5:].lstrip(" "))
            if name is None and not data_lines:
                continue
            data_text = "\n".join(data_lines)
        event: dict[str, Any] = {"data": _json_or_text(data_text)}
        if name is not None:
            event["event"] = name
        events.append(event)
    return events


# The JSON scanner `json.loads` ends in, called directly: loads' own steps around it (a type check,
# a BOM check, two whitespace matches, a decoder method and its error wrapping) cost three times
# what scanning an SSE event's data does (issue 22: recording overhead).
_SCAN: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]


def _json_or_text(text: str) -> Any:
    """`json.loads(text)`, or `text` itself when it is no JSON document."""
    # RecursionError: data nested deeper than the parser goes is kept as text, not raised into the
    # agent's request.
    try:
        value, end = _SCAN(text, 0)
    except (StopIteration, ValueError, RecursionError):  # nothing, or something broken, at its start
        end = -1
    if end == len(text):  # a whole document, with nothing around it: what loads would return
        return value
    try:  # whitespace around it, or something after it: loads says which
        return json.loads(text)
    except (ValueError, RecursionError):
        return text


def render_sse(events: Iterable[Mapping[str, Any]]) -> bytes:
    parts: list[str] = []
    for event in events:
        data = event.get("data")
        text = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
        head = f"event: {event['event']}\n" if "event" in event else ""
        parts.append(head + "".join(f"data: {line}\n" for line in text.split("\n")) + "\n")
    return "".join(parts).encode("utf-8")


def usage_of(stored_body: Mapping[str, Any]) -> dict[str, int]:
    """Token usage of a response: input, output, cache-creation and cache-read tokens, and the cache
    writes by lifetime (`usage.cache_creation`, flattened) when the response reports them."""
    usage: dict[str, int] = {}
    if "json" in stored_body and isinstance(stored_body["json"], dict):
        _merge_usage(usage, stored_body["json"].get("usage"))
    for event in stored_body.get("sse", ()):
        data = event.get("data")
        if not isinstance(data, dict):
            continue
        if data.get("type") == "message_start" and isinstance(data.get("message"), dict):
            _merge_usage(usage, data["message"].get("usage"))
        elif data.get("type") == "message_delta":
            # message_delta carries cumulative counts; later values replace earlier ones.
            _merge_usage(usage, data.get("usage"))
    out = {key: usage.get(key, 0) for key in USAGE_KEYS}
    out.update({key: usage[key] for key in CACHE_WRITE_SPLIT if key in usage})
    return out


def _merge_usage(into: dict[str, int], usage: Any) -> None:
    if not isinstance(usage, dict):
        return
    for key in USAGE_KEYS:
        value = usage.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            into[key] = value
    split = usage.get("cache_creation")
    if isinstance(split, dict):
        for key in CACHE_WRITE_SPLIT:
            value = split.get(key)
            if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
                into[key] = value
