"""Matching at the `content` tier: a request compared on its messages, system prompt and tools, not
on its bytes, for a trace imported from a source that kept the conversation but not the exact
requests (`trace/fidelity.py`; a Claude Code session, OpenTelemetry spans with content captured).

Both sides, the recorded request and the live one, are projected alike: only user and assistant
messages (a client's mid-conversation system messages are not in such a source), each as its
blocks' text, tool uses (name and input) and tool results (their text); `<system-reminder>` texts a
client adds to every turn, cache markers and ids left out; consecutive messages of one role joined
(a source may split one message over entries). The system prompt and tools are compared when the
import has them, and left out of both sides when it says they are missing. Texts the import names as
volatile (the folder the source run ran in) read as the placeholder of the normalization rule of
the same name, as the live request's do once folded.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..trace.fidelity import Fidelity

REMINDER = "<system-reminder>"
# The Claude Code CLI puts a billing header first in every request's system prompt; a session's
# request shape leaves it out. Neither asks the model anything.
BILLING = "x-anthropic-billing-header:"
COMPARED = ("messages", "system", "tools")


class ContentMatch:
    """Projects canonical requests (`trace/canonical.py`) onto what a `content` trace holds."""

    def __init__(self, fidelity: Fidelity, rule_names: Iterable[str] = ()) -> None:
        self.fidelity = fidelity
        self.fields = tuple(name for name in COMPARED if name not in fidelity.missing)
        names = set(rule_names)
        # Longest first, so a folder inside another is not folded half.
        self._volatile = sorted(
            (
                (text, f"<{name}>")
                for name, text in (fidelity.volatile or {}).items()
                if name in names and text
            ),
            key=lambda pair: len(pair[0]),
            reverse=True,
        )

    def note(self) -> str:
        compared = ", ".join(self.fields)
        left = [name for name in COMPARED if name not in self.fields]
        out = f" ({' and '.join(left)} missing from the import)" if left else ""
        return (
            f"a trace of fidelity {self.fidelity.describe()}: requests were matched on their "
            f"{compared}{out}, not on their bytes"
        )

    def project(self, canonical: Mapping[str, Any], recorded: bool = False) -> dict[str, Any]:
        body = canonical.get("body")
        path = str(canonical.get("path", "")).split("?", 1)[0]
        projected: dict[str, Any] = {}
        if isinstance(body, Mapping):
            if "messages" in self.fields:
                projected["messages"] = messages_form(body.get("messages"))
            if "system" in self.fields:
                projected["system"] = _blocks(body.get("system"))
            if "tools" in self.fields:
                projected["tools"] = _tools(body.get("tools"))
        if recorded and self._volatile:
            projected = _replace(projected, self._volatile)
        return {"method": canonical.get("method"), "path": path, "body": projected}


def messages_form(messages: Any) -> list[dict[str, Any]]:
    """User and assistant messages as their compared blocks, same-role neighbours joined."""
    out: list[dict[str, Any]] = []
    for message in messages if isinstance(messages, list) else ():
        if not isinstance(message, Mapping) or message.get("role") not in ("user", "assistant"):
            continue
        blocks = _blocks(message.get("content"))
        if not blocks:
            continue
        if out and out[-1]["role"] == message["role"]:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": message["role"], "content": blocks})
    return out


def _blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        content = [{"type": "text", "text": content}]
    if not isinstance(content, list):
        return []
    out: list[dict[str, Any]] = []
    for block in content:
        if not isinstance(block, Mapping):
            continue
        kind = block.get("type")
        if kind == "text":
            text = block.get("text")
            if isinstance(text, str) and text.strip() and not text.lstrip().startswith((REMINDER, BILLING)):
                out.append({"type": "text", "text": text.strip()})
        elif kind == "tool_use":
            out.append({"type": "tool_use", "name": block.get("name"), "input": block.get("input")})
        elif kind == "tool_result":
            entry: dict[str, Any] = {"type": "tool_result", "content": result_text(block.get("content"))}
            if block.get("is_error"):
                entry["is_error"] = True
            out.append(entry)
        elif kind not in ("thinking", "redacted_thinking"):  # a client may keep or drop these
            out.append({"type": kind})
    return out


def result_text(content: Any) -> str:
    """A tool result's content as one text (a string, or its text blocks joined)."""
    if isinstance(content, str):
        return content.strip()
    if isinstance(content, list):
        return "\n".join(
            str(block.get("text", "")).strip()
            for block in content
            if isinstance(block, Mapping) and block.get("type") == "text"
        ).strip()
    return "" if content is None else str(content)


def _tools(tools: Any) -> list[dict[str, Any]]:
    return [
        {key: tool.get(key) for key in ("name", "description", "input_schema")}
        for tool in (tools if isinstance(tools, list) else ())
        if isinstance(tool, Mapping)
    ]


def _replace(value: Any, pairs: list[tuple[str, str]]) -> Any:
    if isinstance(value, str):
        for text, placeholder in pairs:
            if text in value:
                value = value.replace(text, placeholder)
        return value
    if isinstance(value, dict):
        return {key: _replace(item, pairs) for key, item in value.items()}
    if isinstance(value, list):
        return [_replace(item, pairs) for item in value]
    return value
