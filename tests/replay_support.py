"""A small tool-using agent and helpers for the replay tests: record it against the simulated server,
replay it offline. Also copied into pytester folders, so it imports nothing from the test suite."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import anthropic

import pytest_agentevals as ae
from pytest_agentevals.sim import Reply, SimServer

SYSTEM = "You fix bugs in small repositories."
TOOLS: list[dict[str, Any]] = [
    {
        "name": "read_file",
        "description": "Read a file of the repository.",
        "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    },
    {
        "name": "write_file",
        "description": "Write a file of the repository.",
        "input_schema": {
            "type": "object",
            "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
            "required": ["path", "content"],
        },
    },
]
MODEL = "sim-replay-1"

FILES = {"a.txt": "def add(a, b):\n    return a - b\n"}
EXECUTED: list[tuple[str, Any]] = []  # tool calls that really ran


@ae.tool
def read_file(path: str) -> str:
    EXECUTED.append(("read_file", path))
    if path not in FILES:
        raise FileNotFoundError(f"no such file: {path}")
    return FILES[path]


@ae.tool
def write_file(path: str, content: str) -> str:
    EXECUTED.append(("write_file", path))
    FILES[path] = content
    return f"wrote {len(content)} bytes to {path}"


TOOL_FUNCTIONS = {"read_file": read_file, "write_file": write_file}


def script() -> list[Reply]:
    return [
        Reply.tool_use("read_file", {"path": "a.txt"}, text="Let me look at the file."),
        Reply.tool_use("read_file", {"path": "missing.txt"}),
        Reply.tool_use("write_file", {"path": "a.txt", "content": "def add(a, b):\n    return a + b\n"}),
        Reply.text("Fixed: add() now adds."),
    ]


def fake_key() -> str:
    return "sk-ant-" + "api03-" + "fakereplay" + "Z" * 40


def client(base_url: str = "https://api.anthropic.com", **options: Any) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=base_url, api_key=fake_key(), **options)


def run_agent(
    model_client: anthropic.Anthropic,
    task: str,
    *,
    system: str = SYSTEM,
    tools: Sequence[dict[str, Any]] = TOOLS,
    max_steps: int = 10,
    stream: bool = False,
) -> str:
    """The agent loop: ask, run the tools it asks for (an error goes back as is_error), repeat."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": task}]
    for _ in range(max_steps):
        kwargs: dict[str, Any] = {
            "model": MODEL,
            "max_tokens": 512,
            "system": system,
            "tools": list(tools),
            "messages": messages,
        }
        if stream:
            with model_client.messages.stream(**kwargs) as events:
                message = events.get_final_message()
        else:
            message = model_client.messages.create(**kwargs)
        messages.append(
            {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in message.content]}
        )
        uses = [block for block in message.content if block.type == "tool_use"]
        if not uses:
            return "".join(block.text for block in message.content if block.type == "text")
        results = []
        for use in uses:
            try:
                output, is_error = TOOL_FUNCTIONS[use.name](**use.input), False
            except OSError as exc:
                output, is_error = str(exc), True
            results.append(
                {"type": "tool_result", "tool_use_id": use.id, "content": output, "is_error": is_error}
            )
        messages.append({"role": "user", "content": results})
    return "gave up"


@contextlib.contextmanager
def sim(replies: list[Reply] | None = None) -> Iterator[SimServer]:
    with SimServer(replies if replies is not None else script(), seed=7) as server:
        yield server


def record(
    path: Path, task: str = "Fix the bug in a.txt", replies: list[Reply] | None = None, **options: Any
) -> Path:
    """Record the agent on `task` against the simulated server into the trace at `path`."""
    saved = dict(FILES)
    with sim(replies) as server, ae.Recorder(path, task=task, agent="toolbox"):
        run_agent(client(server.url, max_retries=0), task, **options)
    FILES.clear()
    FILES.update(saved)
    EXECUTED.clear()
    return path
