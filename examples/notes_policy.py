"""The simulated model both framework examples talk to: it writes the notes a task asks for, one
`write_note` call per step, then says it is done. Deterministic: what it answers depends only on the
conversation, so a recorded run replays and a booted thread goes on the way the live run did."""

from __future__ import annotations

import re
from typing import Any

from pytest_agentevals.sim import Reply, SimRequest

MODEL = "sim-notes-1"
SYSTEM = "You keep a folder of notes. Write each note the task asks for, one write_note call at a time."
TASK = "Write notes 1 to {count}."
_COUNT = re.compile(r"Write notes 1 to (\d+)\.")


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return " ".join(block.get("text", "") for block in content if block.get("type") == "text")


def policy(request: SimRequest) -> Reply:
    messages = request.body["messages"]
    found = _COUNT.search(_text(messages[0]["content"]))
    count = int(found.group(1)) if found else 1
    done = sum(
        1
        for message in messages
        if message["role"] == "user" and isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    )
    if done < count:
        number = done + 1
        return Reply.tool_use(
            "write_note", {"name": f"note-{number:03d}", "text": f"Note {number} of {count}."}
        )
    return Reply.text(f"Wrote {count} notes.")
