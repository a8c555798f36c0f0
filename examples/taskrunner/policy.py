"""The scripted model: a deterministic policy for `pytest_agentevals.sim` that does the task list.

It reads what a model would read, the task list and progress line in the first message and the
tool results since, and decides the next call: for each task, write the file and run its check, now
and then read a file first or get a task wrong and fix it after the failed check; a summary when
asked to compact; a closing text when every task is verified. Its choices are a function of the
seed and the conversation only, so a retried or restarted request gets the same answer.

An injected *stall* makes it re-read the same file from a given step on, the loop a watchdog must
catch. A stall lasts until the context is reset (a restart or a compaction) unless it persists.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from pytest_agentevals.sim import Reply, SimRequest

from .prompts import COMPACT_REQUEST, parse_progress, progress_line
from .tasks import Task, parse_task


@dataclass(frozen=True)
class LastCall:
    name: str
    input: dict[str, Any]
    result: str
    is_error: bool


class ScriptedModel:
    """A policy `(SimRequest) -> Reply`; `steps` counts the work requests it answered (not summaries)."""

    def __init__(
        self,
        seed: int = 0,
        *,
        read_rate: float = 0.15,
        mistake_rate: float = 0.1,
        stall_at: int | None = None,
        stall_persists: bool = False,
    ) -> None:
        self.seed = seed
        self.read_rate = read_rate
        self.mistake_rate = mistake_rate
        self.stall_at = stall_at
        self.stall_persists = stall_persists
        self.steps = 0
        self._stall_context: int | None = None  # the context length when the stall began
        self._stall_path = ""
        self._stall_over = False
        self._task_lists: dict[str, list[Task]] = {}

    def __call__(self, request: SimRequest) -> Reply:
        messages = request.messages
        opening = _text(request.blocks(messages[0])) if messages else ""
        tasks = self._tasks(opening)  # the tasks the opening lists: those not verified before it
        before, total = parse_progress(opening) or (0, len(tasks))
        passed = self._passed(request)
        remaining = [task for task in tasks if task.id not in passed]
        done = before + len(tasks) - len(remaining)
        if any(COMPACT_REQUEST in block.get("text", "") for block in request.blocks()):
            return Reply.text(progress_line(done, total, remaining[0].id if remaining else None))
        self.steps += 1
        if self._stalling(len(messages), remaining):
            return Reply.tool_use("read_file", {"path": self._stall_path})
        if not remaining:
            return Reply.text(f"All {total} tasks are done and verified.")
        task = remaining[0]
        last = _last_call(request)
        if last is not None and last.name == "write_file":
            return Reply.tool_use("run_check", {"task": _task_for(tasks, last.input.get("path"), task).id})
        if last is not None and last.name == "run_check" and _failed(last):
            return self._write(task, correct=True)
        if last is None or last.name != "read_file":
            checked = [t for t in tasks if t.id in passed]
            if checked and self._chance("read", task.id) < self.read_rate:
                return Reply.tool_use("read_file", {"path": checked[-1].path})
        return self._write(task, correct=self._chance("mistake", task.id) >= self.mistake_rate)

    def _write(self, task: Task, correct: bool) -> Reply:
        content = task.expected() if correct else "TODO"
        return Reply.tool_use(
            "write_file", {"path": task.path, "content": content}, text=f"Working on {task.id}."
        )

    def _stalling(self, context: int, remaining: list[Task]) -> bool:
        if self.stall_at is None or self.steps < self.stall_at or self._stall_over:
            return False
        if self._stall_context is None:
            self._stall_context = context
            self._stall_path = remaining[0].path if remaining else "t001.txt"
        elif context < self._stall_context and not self.stall_persists:
            self._stall_over = True  # a fresh context broke the loop
            return False
        return True

    def _tasks(self, opening: str) -> list[Task]:
        tasks = self._task_lists.get(opening)
        if tasks is None:
            tasks = [task for line in opening.splitlines() if (task := parse_task(line)) is not None]
            if not tasks and parse_progress(opening) is None:
                raise ValueError(
                    "the first message holds no task list (lines like 'T001: write `t001.txt` ...') "
                    "and no progress line"
                )
            self._task_lists[opening] = tasks
        return tasks

    @staticmethod
    def _passed(request: SimRequest) -> set[str]:
        """The tasks whose check passed in this context."""
        passed: set[str] = set()
        for message in request.messages:
            if message.get("role") != "user":
                continue
            for block in request.blocks(message):
                if block.get("type") == "tool_result" and not block.get("is_error"):
                    outcome = _json(_result_text(block))
                    if isinstance(outcome, dict) and outcome.get("passed") is True:
                        passed.add(str(outcome.get("task")))
        return passed

    def _chance(self, salt: str, task_id: str) -> float:
        digest = hashlib.sha256(f"{self.seed}:{salt}:{task_id}".encode()).digest()
        return int.from_bytes(digest[:8], "big") / 2**64


def _last_call(request: SimRequest) -> LastCall | None:
    messages = request.messages
    if len(messages) < 2 or messages[-2].get("role") != "assistant":
        return None
    uses = [b for b in request.blocks(messages[-2]) if b.get("type") == "tool_use"]
    if not uses:
        return None
    use = uses[-1]
    result = next((b for b in request.blocks() if b.get("tool_use_id") == use.get("id")), {})
    return LastCall(
        str(use.get("name")), dict(use.get("input") or {}), _result_text(result), bool(result.get("is_error"))
    )


def _failed(call: LastCall) -> bool:
    outcome = _json(call.result)
    return not call.is_error and isinstance(outcome, dict) and outcome.get("passed") is False


def _task_for(tasks: list[Task], path: Any, default: Task) -> Task:
    return next((task for task in tasks if task.path == path), default)


def _text(blocks: list[dict[str, Any]]) -> str:
    return "\n".join(str(b.get("text", "")) for b in blocks if b.get("type") == "text")


def _result_text(block: dict[str, Any]) -> str:
    content = block.get("content", "")
    if isinstance(content, list):
        return _text([b for b in content if isinstance(b, dict)])
    return str(content)


def _json(text: str) -> Any:
    if not text.startswith("{"):
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None
