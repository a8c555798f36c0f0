"""Booting the Claude Code CLI from a checkpoint the endpoint wrote: the checkpoint's conversation
written as a session of the CLI's own, which `claude -p PROMPT --resume ID` loads and goes on from.

The CLI keeps a session as JSON Lines under `$CLAUDE_CONFIG_DIR/projects/<folder>/<id>.jsonl`
(`~/.claude` without the variable), `<folder>` the working directory with every character but
letters and digits made `-`; each line an entry (`type` user or assistant, `message` as the API
has it, `uuid`, `parentUuid` chaining them). Read off what claude-cli 2.1.332 writes and loads.

What is written is the conversation only, scrubbed as a trace is (docs/security.md): the user and
assistant messages of the request, less the `<system-reminder>` texts and the system messages the
CLI adds to every request itself (it adds them again when it resumes). The resumed leg then sends
that history, the prompt it was given, and what it does next.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import AgentEvalsError
from ..trace.scrub import Scrubber
from .server import STATE_FORMAT

# The CLI names a longer folder's sessions by a hash of its own after 200 characters.
MAX_FOLDER_NAME = 200
_NOT_ALNUM = re.compile(r"[^a-zA-Z0-9]")


def session_folder(config_dir: Path, cwd: Path) -> Path:
    """Where the CLI looks for the sessions of `cwd`: `config_dir/projects/<cwd, sanitized>`."""
    name = _NOT_ALNUM.sub("-", str(cwd))
    if len(name) > MAX_FOLDER_NAME:
        raise AgentEvalsError(
            f"{cwd}: the Claude Code CLI names the sessions of a folder over {MAX_FOLDER_NAME} characters "
            "by a hash of its own; resume it in a folder with a shorter path"
        )
    return config_dir / "projects" / name


def write_claude_session(state: Mapping[str, Any], cwd: str | Path, config_dir: str | Path) -> str:
    """Write the conversation of an endpoint checkpoint's `state` as a Claude Code session for the
    working folder `cwd`, under `config_dir` (give the CLI `CLAUDE_CONFIG_DIR=config_dir`); the
    session id, for `claude -p PROMPT --resume ID`."""
    request = state.get("request") if state.get("format") == STATE_FORMAT else None
    messages = request.get("messages") if isinstance(request, Mapping) else None
    if not isinstance(messages, list):
        raise AgentEvalsError(
            f"the checkpoint's state is not one the model endpoint wrote (format {STATE_FORMAT!r} with "
            "request.messages): record the run through the endpoint with checkpoints on"
        )
    assert isinstance(request, Mapping)
    folder = Path(cwd).resolve()
    session = str(uuid.uuid4())
    now = dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    lines: list[str] = []
    parent: str | None = None
    # A file the CLI keeps under its config folder is a file we write: scrubbed as a trace is (a
    # state handed in by hand, not read from a scrubbed trace, may hold any key shape).
    scrubber = Scrubber()
    for number, message in enumerate(messages):
        if not isinstance(message, Mapping) or message.get("role") not in ("user", "assistant"):
            continue  # the CLI's own system messages: it writes them again
        content = _conversation(message.get("content"))
        if not content:
            continue
        entry_id = str(uuid.uuid4())
        entry: dict[str, Any] = {
            "parentUuid": parent,
            "isSidechain": False,
            "type": message["role"],
            "uuid": entry_id,
            "timestamp": now,
            "userType": "external",
            "cwd": str(folder),
            "sessionId": session,
        }
        if message["role"] == "assistant":
            uses_tool = any(isinstance(b, Mapping) and b.get("type") == "tool_use" for b in content)
            entry["message"] = {
                "id": f"msg_checkpoint_{number}",
                "type": "message",
                "role": "assistant",
                "model": request.get("model"),
                "content": content,
                "stop_reason": "tool_use" if uses_tool else "end_turn",
                "stop_sequence": None,
                "usage": {"input_tokens": 0, "output_tokens": 0},
            }
        else:
            entry["message"] = {"role": "user", "content": content}
        lines.append(json.dumps(scrubber.scrub_value(entry)))
        parent = entry_id
    if not lines:
        raise AgentEvalsError("the checkpoint's conversation holds no user or assistant message to resume")
    target = session_folder(Path(config_dir), folder)
    target.mkdir(parents=True, exist_ok=True)
    (target / f"{session}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return session


def _conversation(content: Any) -> Any:
    """A message's content without the `<system-reminder>` texts the CLI adds to each request."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return None
    return [
        block
        for block in content
        if not (
            isinstance(block, Mapping)
            and block.get("type") == "text"
            and str(block.get("text", "")).startswith("<system-reminder>")
        )
    ]
