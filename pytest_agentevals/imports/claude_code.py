"""`agentevals import claude-code SESSION.jsonl`: a Claude Code session file as a `content` trace.

The CLI keeps each session as JSON Lines under `~/.claude/projects/<folder>/<id>.jsonl`
(`endpoint/claude_session.py` writes the same format). Read off what claude-cli 2.1.332 writes:
entries of `type` user and assistant carry a `message` as the API has it (an assistant message is
written one entry per content block, each with the message's `id`), chained by `uuid` and
`parentUuid`; `isSidechain` marks a subagent's conversation; `api-request` entries name each call's
parameters (`params.model`, `params.max_tokens`) and the `shapeHash` of an `api-request-shape` entry
holding the system prompt and tools sent. Every other entry (attachments, queue operations, costs)
is the CLI's own bookkeeping and is skipped.

Each assistant message is one model call, its request the conversation before it (and the system
prompt and tools when the session kept the call's shape); each tool use, with the tool result the
next user entry holds for it, one tool call. The tier is `content`: the exact request bytes (the
system reminders, cache markers and headers the CLI adds) are not in a session.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..trace.fidelity import CONTENT, Fidelity
from .build import Call, ImportedRun, ToolRun
from .limits import SourceFormatError, json_lines

SOURCE = "claude-code"
WHAT = "a Claude Code session file (~/.claude/projects/<folder>/<session id>.jsonl)"


def read(path: Path) -> ImportedRun:
    shapes: dict[str, Mapping[str, Any]] = {}
    requests: dict[str, Mapping[str, Any]] = {}
    conversation: list[dict[str, Any]] = []  # messages so far, as a request holds them
    pending: dict[str, Any] | None = None  # the assistant message being assembled
    calls: list[tuple[dict[str, Any], list[dict[str, Any]], Mapping[str, Any]]] = []
    first_time: dt.datetime | None = None
    info: dict[str, Any] = {}
    sidechains = 0

    def close() -> None:
        nonlocal pending
        if pending is not None:
            message, entry = pending["message"], pending["entry"]
            calls.append((message, list(conversation), entry))
            conversation.append({"role": "assistant", "content": list(message["content"])})
            pending = None

    for number, entry in json_lines(path, WHAT):
        if not isinstance(entry, Mapping):
            raise SourceFormatError(path, number, "expected a JSON object per line", f"give {WHAT}")
        kind = entry.get("type")
        if kind == "api-request-shape" and isinstance(entry.get("shapeHash"), str):
            shape = entry.get("shape")
            if isinstance(shape, Mapping):
                shapes[entry["shapeHash"]] = shape
            continue
        if kind == "api-request" and isinstance(entry.get("id"), str):
            requests[entry["id"]] = entry
            continue
        if kind not in ("user", "assistant"):
            continue
        if entry.get("isSidechain") is True:
            sidechains += 1
            continue
        message = entry.get("message")
        if not isinstance(message, Mapping) or message.get("role") != kind:
            raise SourceFormatError(path, number, f"a {kind} entry without a {kind} message", f"give {WHAT}")
        for key in ("sessionId", "cwd", "version", "entrypoint"):
            if isinstance(entry.get(key), str):
                info.setdefault(key, entry[key])
        when = _time(entry.get("timestamp"))
        if when is not None and first_time is None:
            first_time = when
        content = _content(message.get("content"), path, number)
        if kind == "assistant":
            message_id = message.get("id")
            if pending is not None and pending["message"].get("id") == message_id and message_id:
                pending["message"]["content"].extend(content)
                continue
            close()
            pending = {
                "message": {
                    "id": message_id,
                    "type": "message",
                    "role": "assistant",
                    "model": message.get("model"),
                    "content": list(content),
                    "stop_reason": message.get("stop_reason"),
                    "stop_sequence": message.get("stop_sequence"),
                    "usage": _usage(message.get("usage")),
                },
                "entry": {**entry, "_line": number, "_time": when},
            }
        else:
            close()
            if conversation and conversation[-1]["role"] == "user":
                conversation[-1] = {
                    "role": "user",
                    "content": _blocks(conversation[-1]["content"]) + _blocks(content),
                }
            else:
                conversation.append({"role": "user", "content": content})
    close()
    return _run(path, calls, conversation, shapes, requests, info, first_time, sidechains)


def _run(
    path: Path,
    calls: list[tuple[dict[str, Any], list[dict[str, Any]], Mapping[str, Any]]],
    conversation: list[dict[str, Any]],
    shapes: Mapping[str, Mapping[str, Any]],
    requests: Mapping[str, Mapping[str, Any]],
    info: Mapping[str, Any],
    first_time: dt.datetime | None,
    sidechains: int,
) -> ImportedRun:
    missing = ["the exact request bytes and headers"]
    shaped = 0
    run_calls: list[Call] = []
    results = _tool_results(conversation)
    for message, history, entry in calls:
        # The CLI streams every call: so does the request, and a replay answers it with a stream.
        body: dict[str, Any] = {"model": message.get("model"), "messages": history, "stream": True}
        request = requests.get(str(entry.get("requestRef")))
        shape = shapes.get(str(request.get("shapeHash"))) if request is not None else None
        if request is not None and isinstance(request.get("params"), Mapping):
            params = request["params"]
            for key in ("model", "max_tokens"):
                if key in params:
                    body[key] = params[key]
        if shape is not None:
            shaped += 1
            for key in ("system", "tools"):
                if key in shape:
                    body[key] = shape[key]
        when = entry.get("_time")
        t = (when - first_time).total_seconds() if when is not None and first_time is not None else 0.0
        tools = [
            ToolRun(
                name=str(block.get("name")),
                input=dict(block["input"]) if isinstance(block.get("input"), Mapping) else {},
                output=results.get(block.get("id"), (None, None))[0],
                error=results.get(block.get("id"), (None, None))[1],
                id=block.get("id") if isinstance(block.get("id"), str) else None,
            )
            for block in message["content"]
            if isinstance(block, Mapping) and block.get("type") == "tool_use"
        ]
        run_calls.append(
            Call(
                body=body,
                message=message,
                model=message.get("model") if isinstance(message.get("model"), str) else None,
                usage=message["usage"],
                stream=True,
                headers=_headers(info),
                t=max(0.0, t),
                tools=tools,
            )
        )
    if shaped < len(run_calls):
        missing += ["system", "tools"] if shaped == 0 else ["the system prompt and tools of some calls"]
    if sidechains:
        missing.append(f"{sidechains} subagent (sidechain) entries, not imported")
    volatile = {"cwd": info["cwd"]} if isinstance(info.get("cwd"), str) and len(info["cwd"]) > 1 else None
    first_user = next((m for m in conversation if m["role"] == "user"), None)
    return ImportedRun(
        source=SOURCE,
        path=path,
        fidelity=Fidelity(CONTENT, SOURCE, tuple(missing), volatile),
        calls=run_calls,
        agent=f"claude-code {info['version']}" if "version" in info else "claude-code",
        run_id=str(info.get("sessionId") or ""),
        started_at=first_time.isoformat() if first_time is not None else "",
        task={"prompt": _text(first_user["content"])} if first_user is not None else None,
    )


def _headers(info: Mapping[str, Any]) -> dict[str, str] | None:
    """The User-Agent the CLI sends, rebuilt from the session's version: a replay then knows its
    client and applies its normalization profile (`replay/profiles.py`)."""
    version = info.get("version")
    if not isinstance(version, str):
        return None
    return {"user-agent": f"claude-cli/{version} (external, {info.get('entrypoint') or 'cli'})"}


def _content(content: Any, path: Path, line: int) -> list[Any]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return [block for block in content if isinstance(block, Mapping)]
    raise SourceFormatError(
        path, line, "message.content must be a string or a list of blocks", f"give {WHAT}"
    )


def _blocks(content: Any) -> list[Any]:
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content)


def _usage(usage: Any) -> dict[str, int]:
    keys = ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    if not isinstance(usage, Mapping):
        return {}
    return {key: usage[key] for key in keys if type(usage.get(key)) is int}


def _tool_results(conversation: list[dict[str, Any]]) -> dict[Any, tuple[Any, str | None]]:
    """Each tool use id's result: (output, None), or (None, error text) when it was an error."""
    found: dict[Any, tuple[Any, str | None]] = {}
    for message in conversation:
        if message["role"] != "user" or not isinstance(message["content"], list):
            continue
        for block in message["content"]:
            if isinstance(block, Mapping) and block.get("type") == "tool_result":
                text = _text(block.get("content"))
                found[block.get("tool_use_id")] = (None, text) if block.get("is_error") else (text, None)
    return found


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(b.get("text", "")) for b in content if isinstance(b, Mapping) and b.get("type") == "text"
        )
    return ""


def _time(value: Any) -> dt.datetime | None:
    if not isinstance(value, str) or len(value) > 40:
        return None
    try:
        return dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
