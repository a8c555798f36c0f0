"""Chat messages in the OpenAI (and litellm) shape, to and from the Anthropic shape traces store.

Step cases and checkpoints hold a conversation as the Messages API has it: a `system` prompt apart,
then `user`/`assistant` messages whose content is a string or blocks (`text`, `image`, `tool_use`,
`tool_result`). A harness that keeps OpenAI-format history (litellm, an OpenAI-compatible client)
converts with `to_openai(messages, system)` and `from_openai(messages)`:

- leading `system` (or `developer`) messages are the `system` prompt (one: its text; several: one
  text block each);
- a `user` message, a string or `text` / `image_url` parts, is a `user` message of a string or
  `text` / `image` blocks;
- an `assistant` message's text, then its `tool_calls`, are its text and a `tool_use` block per call
  (`arguments` parsed as the JSON object `input`);
- consecutive `tool` messages (`tool_call_id`, `content`) are one `user` message of `tool_result`
  blocks.

A conversation converted one way and back is the one it was (tests/trace/test_openai_chat.py, with
Hypothesis). What one shape cannot say is refused with the message's index and what to do, never
dropped: a system message after the conversation started, a `thinking` block, a tool result marked
`is_error` (OpenAI has no such flag), arguments that are not a JSON object, an unknown key or part.
What one shape says two ways comes back in one: a `developer` message as `system`, an assistant's text
parts as its text, an empty text beside tool calls as none.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import MessageFormatError

SYSTEM_ROLES = ("system", "developer")
_OPENAI_KEYS = {
    "system": {"role", "content"},
    "developer": {"role", "content"},
    "user": {"role", "content"},
    "assistant": {"role", "content", "tool_calls"},
    "tool": {"role", "content", "tool_call_id"},
}


def _refuse(where: str, problem: str, fix: str) -> MessageFormatError:
    return MessageFormatError(f"{where}: {problem} ({fix})")


# -- OpenAI -> Anthropic ---------------------------------------------------------------------------


def from_openai(
    messages: Sequence[Mapping[str, Any]],
) -> tuple[str | list[dict[str, Any]] | None, list[dict[str, Any]]]:
    """`(system, messages)` in the Anthropic shape, from an OpenAI-shape conversation."""
    system: list[str] = []
    out: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    started = False
    for index, message in enumerate(messages):
        where = f"message {index}"
        if not isinstance(message, Mapping):
            raise _refuse(where, f"is {type(message).__name__}, not a message", "give dicts with a role")
        role = message.get("role")
        if role not in _OPENAI_KEYS:
            raise _refuse(where, f"has role {role!r}", f"use one of {', '.join(_OPENAI_KEYS)}")
        unknown = sorted(set(message) - _OPENAI_KEYS[str(role)])
        if unknown:
            raise _refuse(where, f"has {unknown[0]!r}, which has no Anthropic form", "leave it out")
        if role != "tool" and results:
            out.append({"role": "user", "content": results})
            results = []
        if role in SYSTEM_ROLES:
            if started:
                raise _refuse(
                    where,
                    "is a system message after the conversation started; Anthropic's shape has one system "
                    "prompt, before it",
                    "put system text first, or fold it into a user message",
                )
            system.append(_text_of(where, message.get("content")))
            continue
        started = True
        if role == "user":
            out.append({"role": "user", "content": _user_content(where, message.get("content"))})
        elif role == "assistant":
            out.append({"role": "assistant", "content": _assistant_content(where, message)})
        else:
            results.append(_tool_result(where, message))
    if results:
        out.append({"role": "user", "content": results})
    if not system:
        return None, out
    return (system[0] if len(system) == 1 else [{"type": "text", "text": text} for text in system]), out


def _text_of(where: str, content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(isinstance(p, Mapping) and p.get("type") == "text" for p in content):
        return "".join(str(part.get("text", "")) for part in content)
    raise _refuse(where, "has content that is not text", "give a string or text parts")


def _user_content(where: str, content: Any) -> str | list[dict[str, Any]]:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise _refuse(where, f"has content {type(content).__name__}", "give a string or a list of parts")
    return [_user_part(f"{where} part {i}", part) for i, part in enumerate(content)]


def _user_part(where: str, part: Any) -> dict[str, Any]:
    kind = part.get("type") if isinstance(part, Mapping) else None
    if kind == "text" and set(part) == {"type", "text"} and isinstance(part["text"], str):
        return {"type": "text", "text": part["text"]}
    if kind == "image_url" and set(part) == {"type", "image_url"} and isinstance(part["image_url"], Mapping):
        url = part["image_url"].get("url")
        if isinstance(url, str) and set(part["image_url"]) == {"url"}:
            if url.startswith("data:") and ";base64," in url:
                media, data = url[len("data:") :].split(";base64,", 1)
                return {"type": "image", "source": {"type": "base64", "media_type": media, "data": data}}
            return {"type": "image", "source": {"type": "url", "url": url}}
    raise _refuse(where, f"is a {kind!r} part this conversion does not know", "give text or image_url parts")


def _assistant_content(where: str, message: Mapping[str, Any]) -> str | list[dict[str, Any]]:
    content = message.get("content")
    calls = message.get("tool_calls") or []
    if not isinstance(calls, list):
        raise _refuse(where, "has tool_calls that are not a list", "give a list of function calls")
    if not calls and isinstance(content, str):
        return content
    blocks: list[dict[str, Any]] = []
    if isinstance(content, str):
        if content:
            blocks.append({"type": "text", "text": content})
    elif isinstance(content, list):
        blocks.extend(_user_part(f"{where} part {i}", part) for i, part in enumerate(content))
    elif content is not None:
        raise _refuse(where, f"has content {type(content).__name__}", "give a string, parts or None")
    for i, call in enumerate(calls):
        blocks.append(_tool_use(f"{where} tool_calls[{i}]", call))
    return blocks


def _tool_use(where: str, call: Any) -> dict[str, Any]:
    function = call.get("function") if isinstance(call, Mapping) else None
    if (
        not isinstance(call, Mapping)
        or call.get("type", "function") != "function"
        or not isinstance(function, Mapping)
        or not isinstance(call.get("id"), str)
        or not isinstance(function.get("name"), str)
    ):
        raise _refuse(
            where, "is not a function call", 'give {"id", "type": "function", "function": {name, arguments}}'
        )
    arguments = function.get("arguments") or "{}"
    try:
        parsed = json.loads(arguments) if isinstance(arguments, str) else None
    except json.JSONDecodeError:
        parsed = None
    if not isinstance(parsed, dict):
        raise _refuse(
            where, f"has arguments {str(arguments)[:80]!r}, not a JSON object", "give a JSON object"
        )
    return {"type": "tool_use", "id": call["id"], "name": function["name"], "input": parsed}


def _tool_result(where: str, message: Mapping[str, Any]) -> dict[str, Any]:
    call = message.get("tool_call_id")
    if not isinstance(call, str):
        raise _refuse(where, "is a tool message without a tool_call_id", "give the id of the call it answers")
    content = message.get("content")
    if isinstance(content, list):
        content = [_user_part(f"{where} part {i}", part) for i, part in enumerate(content)]
    elif not isinstance(content, str):
        raise _refuse(where, f"has content {type(content).__name__}", "give a string or text parts")
    return {"type": "tool_result", "tool_use_id": call, "content": content}


# -- Anthropic -> OpenAI ---------------------------------------------------------------------------


def to_openai(messages: Sequence[Mapping[str, Any]], system: Any = None) -> list[dict[str, Any]]:
    """An OpenAI-shape conversation from Anthropic-shape `messages` and their `system` prompt."""
    out: list[dict[str, Any]] = []
    if isinstance(system, str):
        out.append({"role": "system", "content": system})
    elif isinstance(system, list):
        for i, block in enumerate(system):
            if not isinstance(block, Mapping) or block.get("type") != "text":
                raise _refuse(f"system block {i}", "is not text", "give text blocks")
            out.append({"role": "system", "content": str(block.get("text", ""))})
    elif system is not None:
        raise _refuse("system", f"is {type(system).__name__}", "give a string or text blocks")
    for index, message in enumerate(messages):
        where = f"message {index}"
        role = message.get("role") if isinstance(message, Mapping) else None
        content = message.get("content") if isinstance(message, Mapping) else None
        if role == "user":
            out.extend(_from_user(where, content))
        elif role == "assistant":
            out.append(_from_assistant(where, content))
        else:
            raise _refuse(
                where, f"has role {role!r}", "give user and assistant messages (the system prompt apart)"
            )
    return out


def _from_user(where: str, content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"role": "user", "content": content}]
    if not isinstance(content, list):
        raise _refuse(where, f"has content {type(content).__name__}", "give a string or blocks")
    out: list[dict[str, Any]] = []
    parts: list[dict[str, Any]] = []
    for i, block in enumerate(content):
        at = f"{where} block {i}"
        kind = block.get("type") if isinstance(block, Mapping) else None
        if kind == "tool_result":
            if parts:
                raise _refuse(at, "is a tool result after text in one message", "put tool results first")
            if block.get("is_error"):
                raise _refuse(
                    at,
                    "is a tool result marked is_error, which OpenAI's shape cannot say",
                    "say it in its text",
                )
            result = block.get("content", "")
            if isinstance(result, list):
                result = [_openai_part(f"{at} part {j}", part) for j, part in enumerate(result)]
            out.append({"role": "tool", "tool_call_id": str(block.get("tool_use_id")), "content": result})
        else:
            parts.append(_openai_part(at, block))
    if parts or not out:
        out.append({"role": "user", "content": parts})
    return out


def _openai_part(where: str, block: Any) -> dict[str, Any]:
    kind = block.get("type") if isinstance(block, Mapping) else None
    if kind == "text":
        return {"type": "text", "text": str(block.get("text", ""))}
    if kind == "image":
        source = block.get("source") if isinstance(block.get("source"), Mapping) else {}
        if source.get("type") == "base64":
            url = f"data:{source.get('media_type')};base64,{source.get('data')}"
            return {"type": "image_url", "image_url": {"url": url}}
        if source.get("type") == "url":
            return {"type": "image_url", "image_url": {"url": str(source.get("url"))}}
    raise _refuse(
        where, f"is a {kind!r} block, which has no OpenAI chat form", "leave it out of the conversation"
    )


def _from_assistant(where: str, content: Any) -> dict[str, Any]:
    if isinstance(content, str):
        return {"role": "assistant", "content": content}
    if not isinstance(content, list):
        raise _refuse(where, f"has content {type(content).__name__}", "give a string or blocks")
    parts: list[dict[str, Any]] = []
    calls: list[dict[str, Any]] = []
    for i, block in enumerate(content):
        at = f"{where} block {i}"
        if isinstance(block, Mapping) and block.get("type") == "tool_use":
            arguments = json.dumps(block.get("input", {}), ensure_ascii=False)
            calls.append(
                {
                    "id": str(block.get("id")),
                    "type": "function",
                    "function": {"name": str(block.get("name")), "arguments": arguments},
                }
            )
        elif calls:
            raise _refuse(
                at, "comes after a tool call", "put an assistant message's text before its tool calls"
            )
        else:
            parts.append(_openai_part(at, block))
    message: dict[str, Any] = {"role": "assistant"}
    if len(parts) == 1 and parts[0]["type"] == "text":
        message["content"] = parts[0]["text"]
    else:
        message["content"] = parts or None
    if calls:
        message["tool_calls"] = calls
    return message
