"""Decoding request bodies incrementally: an agent's next request repeats the previous one's history.

Parsing every request whole costs O(history) per step, the main cost of recording a long run. When
the new body's bytes start with the previous body's bytes up to its last message — as they do when
the SDK (compact JSON, `ensure_ascii=False`) resends a history with messages appended — only the
new messages and the fields after the list are parsed. Anything else is parsed whole, so the
result is always exactly `json.loads(raw)`.
"""

from __future__ import annotations

import json
import threading
from typing import Any

_DECODER = json.JSONDecoder()
_MESSAGES_KEY = b'"messages":['


def _compact(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")


class BodyDecoder:
    """Decodes JSON request bodies, reusing what the previous body shares with the next one."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._prefix: bytes | None = None  # the previous raw body, up to its last message
        self._body: dict[str, Any] | None = None  # the previous parsed body
        # The text after the previous body's messages and what it parsed to: the model, system
        # prompt and tools, most of a body's bytes after its history, the same at every step.
        self._tail: tuple[str, dict[str, Any]] | None = None

    def decode(self, raw: bytes) -> Any:
        with self._lock:
            found = self._incremental(raw)
            if found is not None:
                self._body, self._prefix = found
                return found[0]
            body = json.loads(raw)
            self._remember(raw, body)
            return body

    def _incremental(self, raw: bytes) -> tuple[dict[str, Any], bytes] | None:
        """The body and the new prefix (up to its last message), or None to parse whole."""
        prefix, previous = self._prefix, self._body
        if prefix is None or previous is None or not raw.startswith(prefix):
            return None
        kept: list[Any] = previous["messages"]
        try:
            rest = raw[len(prefix) :].decode("utf-8")
            if rest.startswith("]"):
                appended: list[Any] = []
                tail = rest[1:]
                new_prefix = prefix
            else:
                # `[` + what follows the kept messages (after their comma, if any) is a JSON array.
                start = 1 if kept else 0
                if kept and not rest.startswith(","):
                    return None
                appended, end = _DECODER.raw_decode("[" + rest[start:])
                closing = start + end - 2  # where the list's "]" is, in `rest`
                tail = rest[closing + 1 :]
                new_prefix = prefix + rest[:closing].encode("utf-8")
            after = self._after(tail)
        except (UnicodeDecodeError, ValueError):
            return None
        if not isinstance(after, dict) or not isinstance(appended, list):
            return None
        body: dict[str, Any] = {}
        for key, value in previous.items():  # the keys before "messages" were in the shared bytes
            if key == "messages":
                break
            body[key] = value
        body["messages"] = kept + appended
        body.update(after)
        return body, new_prefix

    def _after(self, tail: str) -> dict[str, Any] | None:
        """The fields after the messages list, from the text after it (`,"model":...}`). The same
        text as the previous body's gives the same values, shared as the kept messages are."""
        known = self._tail
        if known is not None and known[0] == tail:
            return known[1]
        after = json.loads("{" + tail[1:]) if tail.startswith(",") else ({} if tail == "}" else None)
        if isinstance(after, dict):
            self._tail = (tail, after)
        return after

    def _remember(self, raw: bytes, body: Any) -> None:
        """After a whole parse: can this body's bytes predict the next one's?"""
        self._prefix = self._body = None
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            return
        at = raw.find(_MESSAGES_KEY)
        if at < 0:
            return
        start = at + len(_MESSAGES_KEY) - 1  # at the "["
        messages = _compact(body["messages"])
        # Only when the body was written the way we would write it do its bytes predict the next.
        if raw[start : start + len(messages)] != messages:
            return
        self._prefix = raw[: start + len(messages) - 1]  # without the closing "]"
        self._body = body
