"""A pydantic-ai agent (pytest-agentevals[pydantic-ai]) writing the notes a task asks for into a
workspace, against the simulated model (`examples/notes_policy.py`) on loopback with a fake key.

Its one tool is a plain function taking pydantic-ai's `RunContext` (the workspace is its deps),
wrapped by `ae.tool`: recorded and replayed, the context never part of its input. The harness reports
a checkpoint after each model step (`ae.checkpoint`) with the run's message history as JSON
(pydantic-ai's own `ModelMessagesTypeAdapter`) and the workspace beside it.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from anthropic import AsyncAnthropic, DefaultAsyncHttpxClient
from httpx2 import Limits
from pydantic_ai import Agent, RunContext
from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter
from pydantic_ai.models.anthropic import AnthropicModel
from pydantic_ai.providers.anthropic import AnthropicProvider

import pytest_agentevals as ae

from ..notes_policy import MODEL, SYSTEM, TASK

FAKE_KEY = "sim-" + "notes"


@ae.tool
def write_note(ctx: RunContext[Path], name: str, text: str) -> str:
    """Write a note into the workspace, replacing one of the same name."""
    (ctx.deps / f"{name}.txt").write_text(text + "\n", encoding="utf-8")
    return f"wrote {name}.txt"


def agent(base_url: str, system: str = SYSTEM) -> Agent[Path, str]:
    # No connection kept alive: each run (and each step case's decision) is an event loop of its
    # own, and a pooled connection would outlive the loop it was opened in.
    http = DefaultAsyncHttpxClient(limits=Limits(max_keepalive_connections=0), timeout=30)
    client = AsyncAnthropic(base_url=base_url, api_key=FAKE_KEY, max_retries=0, http_client=http)
    model = AnthropicModel(MODEL, provider=AnthropicProvider(anthropic_client=client))
    return Agent(model, deps_type=Path, system_prompt=system, tools=[write_note])


def history_json(messages: list[ModelMessage]) -> Any:
    return ModelMessagesTypeAdapter.dump_python(messages, mode="json")


def run(base_url: str, workspace: Path, notes: int, *, history: list[ModelMessage] | None = None) -> str:
    """Write `notes` notes into `workspace` (going on from `history` if given); the agent's answer."""
    return asyncio.run(_run(agent(base_url), workspace, notes, history))


async def _run(
    notes_agent: Agent[Path, str], workspace: Path, notes: int, history: list[ModelMessage] | None
) -> str:
    prompt = None if history else TASK.format(count=notes)
    async with notes_agent.iter(prompt, deps=workspace, message_history=history) as running:
        async for node in running:
            if Agent.is_call_tools_node(node):  # the model answered: a resumable point
                ae.checkpoint({"messages": history_json(running.all_messages())}, workspace=workspace)
    assert running.result is not None
    return running.result.output
