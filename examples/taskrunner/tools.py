"""The agent's tools, confined to one workspace directory: read_file, write_file and run_check.

Each is recorded with `@pytest_agentevals.tool` (a plain call when nothing records), so a recorded
run keeps every tool's input and output and a replay can answer them without touching the disk.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest_agentevals

from .tasks import Task

# Outputs go back into the model's context: keep them short.
MAX_READ_CHARS = 2000
MAX_WRITE_CHARS = 20_000


class ToolError(Exception):
    """A tool refused or failed; the model gets the message as an error tool_result."""


class Toolbox:
    """The tools over `root`, checking files against `tasks`."""

    def __init__(self, root: Path, tasks: list[Task]) -> None:
        self.root = root.resolve()
        self.tasks = {task.id: task for task in tasks}

    def _path(self, path: str) -> Path:
        target = (self.root / path).resolve()
        if not target.is_relative_to(self.root) or target == self.root:
            raise ToolError(f"{path!r} is outside the workspace; use a path relative to it")
        return target

    @pytest_agentevals.tool
    def read_file(self, path: str) -> str:
        target = self._path(path)
        if not target.is_file():
            raise ToolError(f"no such file: {path}")
        text = target.read_text(encoding="utf-8", errors="replace")
        return text if len(text) <= MAX_READ_CHARS else text[:MAX_READ_CHARS] + "\n[truncated]"

    @pytest_agentevals.tool
    def write_file(self, path: str, content: str) -> str:
        if len(content) > MAX_WRITE_CHARS:
            raise ToolError(f"content too long ({len(content)} characters; at most {MAX_WRITE_CHARS})")
        target = self._path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8")
        return f"wrote {len(content)} characters to {path}"

    @pytest_agentevals.tool
    def run_check(self, task: str) -> dict[str, Any]:
        spec = self.tasks.get(task)
        if spec is None:
            raise ToolError(f"no task {task!r}; task ids look like T001")
        target = self.root / spec.path
        if not target.is_file():
            return {"task": task, "passed": False, "detail": f"{spec.path} does not exist"}
        found = target.read_text(encoding="utf-8", errors="replace").strip()
        if found == spec.expected():
            return {"task": task, "passed": True, "detail": "ok"}
        return {"task": task, "passed": False, "detail": f"{spec.path} holds {found[:60]!r}, which is wrong"}

    def call(self, name: str, tool_input: dict[str, Any]) -> Any:
        """Run the tool the model named; ToolError for an unknown tool or bad arguments."""
        methods: dict[str, Callable[..., Any]] = {
            "read_file": self.read_file,
            "write_file": self.write_file,
            "run_check": self.run_check,
        }
        method = methods.get(name)
        if method is None:
            raise ToolError(f"unknown tool {name!r}; the tools are read_file, write_file and run_check")
        try:
            return method(**tool_input)
        except TypeError as exc:
            raise ToolError(f"bad arguments for {name}: {exc}") from None
