"""What every importer builds: a run of model calls and tool calls, written as a trace with its
fidelity stated (`trace/fidelity.py`), through a trace writer (so through its scrubber: a source
may hold keys, and none reaches the trace).

An importer fills an `ImportedRun` call by call: each `Call` is one model call, its request as the
source tells it (messages, and the system prompt, tools and model when it has them), the assistant
message that answered, its usage, and the tool calls run on its answer. The trace's model calls are
what the replay and step layers read: request bodies hold the whole history (stored as deltas by the
writer), responses the assistant message, as JSON or, for a client that streamed, as the SSE events
the API sends.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import AgentEvalsError
from ..fileio import atomic_path
from ..trace.events import TRACE_VERSION, Event
from ..trace.fidelity import Fidelity
from ..trace.totals import RunTotals
from ..trace.writer import TraceWriter

MESSAGES_URL = "https://api.anthropic.com/v1/messages"


@dataclass
class ToolRun:
    """A tool call the agent ran: its input, and its output or error text."""

    name: str
    input: dict[str, Any]
    output: Any = None
    error: str | None = None
    duration_ms: float = 0.0
    id: str | None = None


@dataclass
class Call:
    """One model call. `body` is the request (messages at least, for `content`); `message` the
    assistant message that answered (None when the source kept no content: `outline`)."""

    body: dict[str, Any]
    message: dict[str, Any] | None
    model: str | None = None
    usage: dict[str, int] = field(default_factory=dict)
    stream: bool = False
    headers: dict[str, str] | None = None
    latency_ms: float = 0.0
    t: float = 0.0
    tools: list[ToolRun] = field(default_factory=list)
    error: str | None = None
    cost_usd: float | None = None


@dataclass
class ImportedRun:
    source: str
    path: Path
    fidelity: Fidelity
    calls: list[Call] = field(default_factory=list)
    agent: str = ""
    run_id: str = ""
    started_at: str = ""
    task: Any = None
    status: str = "ok"
    verifications: list[dict[str, Any]] = field(default_factory=list)

    def events(self) -> Iterator[Event]:
        totals = RunTotals()
        models = sorted({c.model for c in self.calls if c.model})
        start: Event = {
            "type": "run_start",
            "v": TRACE_VERSION,
            "run_id": self.run_id or str(uuid.uuid4()),
            "agent": self.agent or self.source,
            "started_at": self.started_at or dt.datetime.now(dt.UTC).isoformat(),
            "contract": {"models": models} if models else {},
            "fidelity": self.fidelity.as_event(),
        }
        if self.task is not None:
            start["task"] = self.task
        yield start
        seq = 0
        step = 0
        for call in self.calls:
            seq += 1
            event = self._model_call(call, seq, step + (call.error is None))
            totals.add(event)
            if call.error is None:
                step += 1
            yield event
            for tool in call.tools:
                seq += 1
                tool_event: Event = {
                    "type": "tool_call",
                    "seq": seq,
                    "t": call.t,
                    "step": step,
                    "name": tool.name,
                    "input": tool.input,
                    "duration_ms": max(0.0, float(tool.duration_ms)),
                    # Run by the agent itself, not through @tool: a replay matches its result in
                    # the next request's messages rather than serving it.
                    "by_client": True,
                }
                if tool.error is not None:
                    tool_event["error"] = {"type": "ToolError", "message": tool.error}
                else:
                    tool_event["output"] = tool.output
                totals.add(tool_event)
                yield tool_event
        for verification in self.verifications:
            seq += 1
            event = {"type": "verification", "seq": seq, "t": 0.0, "step": step, **verification}
            totals.add(event)
            yield event
        seq += 1
        last = max((c.t for c in self.calls), default=0.0)
        yield {"type": "run_end", "seq": seq, "t": last, "status": self.status, "totals": totals.as_run_end()}

    def _model_call(self, call: Call, seq: int, step: int) -> Event:
        request: dict[str, Any] = {"method": "POST", "url": MESSAGES_URL, "body": call.body}
        if call.headers:
            request["headers"] = call.headers
        if call.message is None:
            response: dict[str, Any] = {"status": 200 if call.error is None else 500}
        else:
            # As a message even when the client streamed: a replay streams it to a client that
            # asks for a stream (`trace/messages.py`), and the writer scrubs one text, not pieces.
            response = {"status": 200, "json": call.message}
        if call.error is not None:
            response = {
                "status": 500,
                "json": {"type": "error", "error": {"type": "api_error", "message": call.error}},
            }
        event: Event = {
            "type": "model_call",
            "seq": seq,
            "t": max(0.0, call.t),
            "step": step,
            "provider": "anthropic",
            "stream": call.stream,
            "request": request,
            "response": response,
            "latency_ms": max(0.0, float(call.latency_ms)),
            "usage": {k: v for k, v in call.usage.items() if type(v) is int and v >= 0},
        }
        if call.model:
            event["model"] = call.model
        if call.cost_usd is not None:
            event["cost_usd"] = call.cost_usd
        if call.error is not None:
            event["error"] = call.error
        return event


def write(run: ImportedRun, out: Path, *, force: bool = False) -> tuple[int, int]:
    """Write `run` as a trace at `out` (atomically; an existing file only with `force`). Returns the
    events written and the secrets scrubbed on the way."""
    if out.exists() and not force:
        raise AgentEvalsError(f"{out} exists: choose another -o, or --force to replace it")
    if not run.calls:
        raise AgentEvalsError(f"{run.path}: holds no model call to import (is it a {run.source} file?)")
    out.parent.mkdir(parents=True, exist_ok=True)
    written = 0
    with atomic_path(out) as scratch:
        with TraceWriter(scratch) as writer:
            for event in run.events():
                writer.write(event)
                written += 1
        redactions = writer.scrubber.redactions
    return written, redactions
