"""`agentevals export otlp TRACE -o FILE`: a trace as OpenTelemetry GenAI spans, in OTLP JSON (one
`ExportTraceServiceRequest`, ids in hex as OTLP/JSON writes them), so a run tested here opens in a
team's own trace viewer (Jaeger, Langfuse, Phoenix, Datadog: whatever takes OTLP).

One `invoke_agent` span for the run, and under it, in order, a `chat` span per model call (model,
usage, response id and finish reason, and the content: `gen_ai.system_instructions`,
`gen_ai.tool.definitions`, `gen_ai.input.messages`, `gen_ai.output.messages`) and an `execute_tool`
span per tool call (name, call id, arguments, result; an error as the span's status). The run's
verifications are `gen_ai.evaluation.result` events on the agent span (name, pass/fail label, the
progress as score). `agentevals import otlp` reads the file back into the same steps.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import AgentEvalsError, TraceError
from ..fileio import atomic_path
from ..trace.events import Event
from ..trace.messages import response_message
from ..trace.reader import TraceReader

FINISH = {"tool_use": "tool_call", "end_turn": "stop", "max_tokens": "length", "stop_sequence": "stop"}
ERROR = 2  # STATUS_CODE_ERROR
OK = 1


@dataclass(frozen=True)
class Exported:
    out: Path
    spans: int
    bytes: int

    def text(self) -> str:
        return f"agentevals export: wrote {self.out} ({self.spans} spans, {self.bytes:,} bytes of OTLP JSON)"


def export_otlp(trace: str | Path, out: str | Path, *, force: bool = False) -> Exported:
    trace, out = Path(trace), Path(out)
    if out.exists() and not force:
        raise AgentEvalsError(f"{out} exists: choose another -o, or --force to replace it")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            events = list(TraceReader(trace, workspaces=False))
    except TraceError as exc:
        raise AgentEvalsError(f"cannot export {trace}: {exc}") from None
    spans = spans_of(events)
    document = {
        "resourceSpans": [
            {
                "resource": {"attributes": _attributes({"service.name": "pytest-agentevals"})},
                "scopeSpans": [{"scope": {"name": "pytest-agentevals"}, "spans": spans}],
            }
        ]
    }
    data = json.dumps(document, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    out.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(out) as scratch:
        scratch.write_bytes(data)
    return Exported(out, len(spans), len(data))


def spans_of(events: list[Event]) -> list[dict[str, Any]]:
    start = events[0]
    run_id = str(start.get("run_id", ""))
    trace_id = hashlib.sha256(run_id.encode()).hexdigest()[:32]
    origin = _epoch_nanos(start.get("started_at"))
    ids = _Ids(run_id)
    root = ids.next()
    spans: list[dict[str, Any]] = []
    pending_uses: list[dict[str, Any]] = []
    evaluations: list[dict[str, Any]] = []
    end = next((e for e in reversed(events) if e.get("type") == "run_end"), None)
    last = origin
    for event in events[1:]:
        kind = event.get("type")
        at = origin + int(float(event.get("t", 0) or 0) * 1e9)
        if kind == "model_call":
            span, uses = _chat(event, trace_id, ids.next(), root, at)
            pending_uses = uses
            spans.append(span)
            last = max(last, int(span["endTimeUnixNano"]))
        elif kind == "tool_call":
            span = _tool(event, trace_id, ids.next(), root, at, pending_uses)
            spans.append(span)
            last = max(last, int(span["endTimeUnixNano"]))
        elif kind == "verification":
            evaluations.append(_evaluation(event, at))
    agent = str(start.get("agent") or "agent")
    status = str(end.get("status")) if end is not None else "interrupted"
    agent_span = {
        "traceId": trace_id,
        "spanId": root,
        "name": f"invoke_agent {agent}",
        "kind": 1,  # SPAN_KIND_INTERNAL
        "startTimeUnixNano": str(origin),
        "endTimeUnixNano": str(max(last, origin + int(float((end or {}).get("t", 0) or 0) * 1e9))),
        "attributes": _attributes(
            {
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": agent,
                "gen_ai.conversation.id": run_id,
                "agentevals.run.status": status,
            }
        ),
        "events": evaluations,
        "status": {"code": OK} if status == "ok" else {"code": ERROR, "message": f"the run ended {status}"},
    }
    return [agent_span, *spans]


def _chat(
    event: Event, trace_id: str, span_id: str, parent: str, at: int
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    request = _mapping(event.get("request"))
    body = _mapping(request.get("body"))
    response = _mapping(event.get("response"))
    message: dict[str, Any] = response_message(response) or {}
    model = event.get("model") or body.get("model") or message.get("model")
    usage = _mapping(event.get("usage"))
    values: dict[str, Any] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "anthropic"
        if event.get("provider") == "anthropic"
        else event.get("provider"),
        "gen_ai.request.model": model,
        "gen_ai.request.max_tokens": body.get("max_tokens"),
        "gen_ai.response.model": message.get("model"),
        "gen_ai.response.id": message.get("id"),
        "gen_ai.usage.input_tokens": usage.get("input_tokens"),
        "gen_ai.usage.output_tokens": usage.get("output_tokens"),
        "gen_ai.usage.cache_read.input_tokens": usage.get("cache_read_input_tokens"),
        "gen_ai.usage.cache_creation.input_tokens": usage.get("cache_creation_input_tokens"),
    }
    if message.get("stop_reason"):
        values["gen_ai.response.finish_reasons"] = [
            FINISH.get(message["stop_reason"], message["stop_reason"])
        ]
    if "messages" in body:
        values["gen_ai.input.messages"] = _dumps(
            [_message(m) for m in body["messages"] if isinstance(m, Mapping)]
        )
    if body.get("system"):
        values["gen_ai.system_instructions"] = _dumps(_parts(body["system"]))
    if isinstance(body.get("tools"), list):
        values["gen_ai.tool.definitions"] = _dumps(body["tools"])
    if message.get("content") is not None:
        reason = values.get("gen_ai.response.finish_reasons", [None])[0]
        output = {"role": "assistant", "parts": _parts(message["content"]), "finish_reason": reason}
        values["gen_ai.output.messages"] = _dumps([output])
    latency = int(float(event.get("latency_ms", 0) or 0) * 1e6)
    status = response.get("status")
    failed = not (isinstance(status, int) and 200 <= status < 300)
    span: dict[str, Any] = {
        "traceId": trace_id,
        "spanId": span_id,
        "parentSpanId": parent,
        "name": f"chat {model}",
        "kind": 3,  # SPAN_KIND_CLIENT
        "startTimeUnixNano": str(at),
        "endTimeUnixNano": str(at + latency),
        "attributes": _attributes(values),
        "status": {"code": ERROR, "message": str(event.get("error") or f"HTTP {status}")} if failed else {},
    }
    uses = [
        dict(b)
        for b in message.get("content") or []
        if isinstance(b, Mapping) and b.get("type") == "tool_use"
    ]
    return span, uses


def _tool(
    event: Event, trace_id: str, span_id: str, parent: str, at: int, uses: list[dict[str, Any]]
) -> dict[str, Any]:
    name = str(event.get("name"))
    use = next((u for u in uses if u.get("name") == name and u.get("input") == event.get("input")), None)
    if use is None:
        use = next((u for u in uses if u.get("name") == name), None)
    if use is not None:
        uses.remove(use)  # each model tool use answers one tool call
    error = event.get("error") if isinstance(event.get("error"), Mapping) else None
    values: dict[str, Any] = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": name,
        "gen_ai.tool.call.id": use.get("id") if use is not None else None,
        "gen_ai.tool.call.arguments": _dumps(event.get("input")),
    }
    if error is None:
        output = event.get("output")
        values["gen_ai.tool.call.result"] = output if isinstance(output, str) else _dumps(output)
    else:
        values["error.type"] = str(error.get("type") or "error")
    duration = int(float(event.get("duration_ms", 0) or 0) * 1e6)
    return {
        "traceId": trace_id,
        "spanId": span_id,
        "parentSpanId": parent,
        "name": f"execute_tool {name}",
        "kind": 1,
        "startTimeUnixNano": str(at),
        "endTimeUnixNano": str(at + duration),
        "attributes": _attributes(values),
        "status": {"code": ERROR, "message": str(error.get("message", ""))} if error is not None else {},
    }


def _evaluation(event: Event, at: int) -> dict[str, Any]:
    values: dict[str, Any] = {
        "gen_ai.evaluation.name": str(event.get("name")),
        "gen_ai.evaluation.score.label": "pass" if event.get("passed") else "fail",
    }
    progress = event.get("progress")
    if isinstance(progress, int | float) and not isinstance(progress, bool):
        values["gen_ai.evaluation.score.value"] = float(progress)
    if isinstance(event.get("detail"), str):
        values["gen_ai.evaluation.explanation"] = event["detail"]
    return {"timeUnixNano": str(at), "name": "gen_ai.evaluation.result", "attributes": _attributes(values)}


def _message(message: Mapping[str, Any]) -> dict[str, Any]:
    parts = _parts(message.get("content"))
    role = message.get("role")
    if role == "user" and parts and all(p["type"] == "tool_call_response" for p in parts):
        role = "tool"
    return {"role": role, "parts": parts}


def _parts(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "content": content}]
    parts: list[dict[str, Any]] = []
    for block in content if isinstance(content, list) else ():
        if not isinstance(block, Mapping):
            continue
        kind = block.get("type")
        if kind == "text":
            parts.append({"type": "text", "content": block.get("text", "")})
        elif kind == "tool_use":
            parts.append(
                {
                    "type": "tool_call",
                    "id": block.get("id"),
                    "name": block.get("name"),
                    "arguments": block.get("input"),
                }
            )
        elif kind == "tool_result":
            part = {
                "type": "tool_call_response",
                "id": block.get("tool_use_id"),
                "response": _result(block.get("content")),
            }
            if block.get("is_error"):
                part["is_error"] = True
            parts.append(part)
        elif kind == "thinking":
            parts.append({"type": "reasoning", "content": block.get("thinking", "")})
        elif isinstance(kind, str):
            parts.append({"type": kind})
    return parts


def _result(content: Any) -> Any:
    if isinstance(content, list) and all(isinstance(b, Mapping) and b.get("type") == "text" for b in content):
        return "\n".join(str(b.get("text", "")) for b in content)
    return content


def _attributes(values: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [{"key": key, "value": _value(value)} for key, value in values.items() if value is not None]


def _value(value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}  # int64 is a string in the JSON mapping
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, list):
        return {"arrayValue": {"values": [_value(v) for v in value]}}
    return {"stringValue": value if isinstance(value, str) else _dumps(value)}


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _epoch_nanos(started_at: Any) -> int:
    try:
        when = dt.datetime.fromisoformat(str(started_at).replace("Z", "+00:00"))
    except ValueError:
        return 0
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    return int(when.timestamp() * 1e9)


class _Ids:
    """Span ids derived from the run's id: an export of one trace is the same file each time."""

    def __init__(self, run_id: str) -> None:
        self._run = run_id
        self._n = 0

    def next(self) -> str:
        self._n += 1
        return hashlib.sha256(f"{self._run}/{self._n}".encode()).hexdigest()[:16]
