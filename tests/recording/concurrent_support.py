"""Sessions of a small agent, run side by side: each makes model calls through the real SDK against
the simulated server and calls an `@ae.tool`, tagging both with its own name, so a trace can be
checked to hold exactly its own session's events."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import anthropic

import pytest_agentevals as ae
from pytest_agentevals.sim import Reply, SimRequest

MODEL = "sim-concurrent-1"
CALLS = 20


def echo(request: SimRequest) -> Reply:
    return Reply.text("seen " + request.last_text)


@ae.tool
def lookup(session: str, n: int) -> str:
    return f"{session}:{n}"


@ae.tool
async def lookup_async(session: str, n: int) -> str:
    return f"{session}:{n}"


def ask(client: anthropic.Anthropic, session: str, n: int) -> str:
    message = client.messages.create(
        model=MODEL, max_tokens=16, messages=[{"role": "user", "content": f"{session} call {n}"}]
    )
    return str(message.content[0].text)  # type: ignore[union-attr]


async def ask_async(client: anthropic.AsyncAnthropic, session: str, n: int) -> str:
    message = await client.messages.create(
        model=MODEL, max_tokens=16, messages=[{"role": "user", "content": f"{session} call {n}"}]
    )
    return str(message.content[0].text)  # type: ignore[union-attr]


def session(
    name: str, trace: Path, url: str, key: str, started: threading.Barrier | None = None, calls: int = CALLS
) -> None:
    """One session: its own recorder, `calls` model calls and as many tool calls."""
    client = anthropic.Anthropic(base_url=url, api_key=key, max_retries=0)
    with ae.Recorder(trace, agent=name):
        if started is not None:
            started.wait()  # every session's recorder is open before any of them calls anything
        for n in range(calls):
            ask(client, name, n)
            lookup(name, n)


def events(trace: Path) -> list[dict[str, Any]]:
    return list(ae.read_trace(trace))


def sessions_seen(trace: Path) -> tuple[list[str], list[str], str]:
    """The `session call n` texts of a trace's model calls, the `session:n` of its tool calls, and
    how the run ended."""
    found = events(trace)
    asked = []
    for event in found:
        if event["type"] == "model_call":
            asked.append(event["request"]["body"]["messages"][-1]["content"])
    tools = [event["output"] for event in found if event["type"] == "tool_call"]
    status = found[-1]["status"] if found[-1]["type"] == "run_end" else "?"
    return asked, tools, status


def expected(name: str, calls: int = CALLS) -> tuple[list[str], list[str]]:
    return [f"{name} call {n}" for n in range(calls)], [f"{name}:{n}" for n in range(calls)]


def dump(trace: Path) -> str:
    return json.dumps(events(trace), indent=1)[:2000]


EXECUTED: list[str] = []  # the `counted` tool calls that really ran (a replay answers them instead)


@ae.tool
def counted(session: str, n: int) -> str:
    EXECUTED.append(f"{session}:{n}")
    return f"{session}:{n}"


def steps(client: anthropic.Anthropic, name: str, calls: int) -> list[str]:
    """A session's work without a recorder of its own: what each model call and tool call gave."""
    seen = []
    for n in range(calls):
        seen.append(ask(client, name, n))
        seen.append(counted(name, n))
    return seen
