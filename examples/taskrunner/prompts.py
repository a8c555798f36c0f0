"""What the model is told: the system prompt, the tool schemas and the harness's messages.

The same text goes to the real API and to the scripted policy, which reads it back the way a model
would (the progress line and the compaction request are written so both can).
"""

from __future__ import annotations

import re
from typing import Any

from .tasks import Task, task_list_text

SYSTEM = """\
You are a careful worker in a scratch workspace. The user gives you a numbered task list. Each task \
asks you to write one file with an exact content. Work through the tasks strictly in order:
1. call write_file with the task's path and the exact content (nothing else in the file, no quotes),
2. call run_check with the task id; it reports whether the file is right,
3. if the check fails, fix the file and check again; when it passes, go on to the next task.
You may call read_file to look at a file. Use one tool call per reply and keep replies short. When \
every task has passed its check, answer with a one-line summary and no tool call."""

TOOLS: list[dict[str, Any]] = [
    {
        "name": "read_file",
        "description": "Read a file of the workspace. Returns its content, or an error if it does not exist.",
        "input_schema": {
            "type": "object",
            "properties": {"path": {"type": "string", "description": "A path relative to the workspace."}},
            "required": ["path"],
        },
    },
    {
        "name": "write_file",
        "description": "Create or replace a file of the workspace with the given content.",
        "input_schema": {
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "A path relative to the workspace."},
                "content": {"type": "string", "description": "The whole new content of the file."},
            },
            "required": ["path", "content"],
        },
    },
    {
        "name": "run_check",
        "description": "Check one task's file. Returns JSON with passed (true/false) and a detail.",
        "input_schema": {
            "type": "object",
            "properties": {"task": {"type": "string", "description": "The task id, e.g. T007."}},
            "required": ["task"],
        },
    },
]

COMPACT_REQUEST = (
    "COMPACTION: the conversation is about to be cut. Reply with a short summary of the work so far "
    "(which tasks passed their checks, anything learned), in plain text, with no tool call."
)

_PROGRESS = re.compile(r"Progress: (\d+)/(\d+) tasks verified")


def progress_line(done: int, total: int, next_task: str | None) -> str:
    after = f"; next is {next_task}" if next_task else "; all done"
    return f"Progress: {done}/{total} tasks verified{after}."


def parse_progress(text: str) -> tuple[int, int] | None:
    """The "done/total tasks verified" of the last progress line in `text`, if any."""
    found = list(_PROGRESS.finditer(text))
    return (int(found[-1].group(1)), int(found[-1].group(2))) if found else None


def opening(tasks: list[Task], verified: set[str], summary: str | None, budget: str = "") -> str:
    """The first user message of a context: where the work stands and the tasks still to do, and
    `budget`, what is left of the run's budget when a framework budget applies (`BudgetLeft.describe`).

    Verified tasks are left out, so a fresh context (after a compaction or a restart) shrinks as the
    work progresses instead of carrying the whole list forever.
    """
    remaining = [task for task in tasks if task.id not in verified]
    if not verified:
        parts = ["Here is your task list.", task_list_text(tasks), f"Start with {tasks[0].id}."]
    elif remaining:
        parts = [
            f"Here are the tasks still to do ({len(remaining)} of {len(tasks)}).",
            task_list_text(remaining),
        ]
    else:
        parts = [f"All {len(tasks)} tasks are verified."]
    if summary:
        parts.append(f"Summary of the earlier work:\n{summary}")
    if verified:
        line = progress_line(len(verified), len(tasks), remaining[0].id if remaining else None)
        parts.append(line + " Files of verified tasks are in place.")
    if budget:
        parts.append(budget + " Use it well: one tool call per reply, no detours.")
    return "\n\n".join(parts)
