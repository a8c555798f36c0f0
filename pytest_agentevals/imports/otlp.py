"""`agentevals import otlp SPANS.json`: OpenTelemetry GenAI spans as a trace.

The file is OTLP JSON: what the OpenTelemetry Collector's file exporter writes (JSON Lines, one
`ExportTraceServiceRequest` per line) or one such request in the protobuf JSON mapping
(`{"resourceSpans": [...]}`, camelCase fields; snake_case read too). Spans are read per the GenAI
semantic conventions:

- `gen_ai.operation.name` `chat` (a model call): `gen_ai.request.model`, `gen_ai.usage.*`,
  `gen_ai.input.messages`, `gen_ai.output.messages`, `gen_ai.system_instructions` and
  `gen_ai.tool.definitions` when content capture was on — or, in the older event form, span events
  `gen_ai.system.message`, `gen_ai.user.message`, `gen_ai.assistant.message`, `gen_ai.tool.message`
  and `gen_ai.choice` (their fields as attributes, or the body as JSON in `gen_ai.event.content`);
- `execute_tool` (a tool call): `gen_ai.tool.name`, `gen_ai.tool.call.id`,
  `gen_ai.tool.call.arguments`, `gen_ai.tool.call.result`;
- `invoke_agent`: `gen_ai.agent.name` names the run.

Messages' parts (text, tool_call, tool_call_response, reasoning) become Messages API blocks. The
tier is `content` when every model call kept its input and output messages, `outline` when any did
not (content capture is off by default): then only models, tools, usage and timing are imported.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ..errors import AgentEvalsError
from ..trace.fidelity import CONTENT, OUTLINE, Fidelity
from .build import Call, ImportedRun, ToolRun
from .limits import SourceFormatError, count, json_document, json_lines

SOURCE = "otlp"
WHAT = "OTLP JSON: the Collector's file exporter output, or an ExportTraceServiceRequest as JSON"
CHAT = ("chat", "text_completion", "generate_content")
STOPS = {"tool_call": "tool_use", "tool_calls": "tool_use", "stop": "end_turn", "length": "max_tokens"}
USAGE = {
    "gen_ai.usage.input_tokens": "input_tokens",
    "gen_ai.usage.output_tokens": "output_tokens",
    "gen_ai.usage.cache_read.input_tokens": "cache_read_input_tokens",
    "gen_ai.usage.cache_creation.input_tokens": "cache_creation_input_tokens",
}


class Span:
    __slots__ = ("attributes", "end", "events", "line", "name", "span_id", "start", "status", "trace_id")

    def __init__(self, data: Mapping[str, Any], line: int, path: Path) -> None:
        self.line = line
        self.name = str(_field(data, "name") or "")
        self.trace_id = _id(_field(data, "traceId", "trace_id"))
        self.span_id = _id(_field(data, "spanId", "span_id"))
        self.start = _nanos(_field(data, "startTimeUnixNano", "start_time_unix_nano"))
        self.end = _nanos(_field(data, "endTimeUnixNano", "end_time_unix_nano")) or self.start
        self.attributes = attributes(_field(data, "attributes"), path, line)
        self.events = [
            (str(_field(e, "name") or ""), attributes(_field(e, "attributes"), path, line))
            for e in _list(_field(data, "events"))
            if isinstance(e, Mapping)
        ]
        status = _field(data, "status")
        self.status = status if isinstance(status, Mapping) else {}

    @property
    def operation(self) -> str:
        return str(self.attributes.get("gen_ai.operation.name") or "")

    @property
    def failed(self) -> str | None:
        code = _field(self.status, "code")
        if code in (2, "STATUS_CODE_ERROR", "ERROR"):
            return str(_field(self.status, "message") or "the span's status is ERROR")
        return None


def read(path: Path, trace_id: str | None = None) -> ImportedRun:
    spans = [span for span in _spans(path) if not trace_id or span.trace_id == trace_id]
    chats = [s for s in spans if s.operation in CHAT]
    traces = sorted({s.trace_id for s in chats})
    if len(traces) > 1:
        raise AgentEvalsError(
            f"{path}: holds the model calls of {len(traces)} traces ({', '.join(traces[:5])}"
            f"{' ...' if len(traces) > 5 else ''}); import one with --trace-id ID"
        )
    if trace_id and not spans:
        raise AgentEvalsError(f"{path}: no span of trace {trace_id}")
    spans = [s for s in spans if not traces or s.trace_id == traces[0]]
    spans.sort(key=lambda s: (s.start, s.line))
    return _run(path, spans)


def _spans(path: Path) -> list[Span]:
    spans: list[Span] = []
    for line, request in _requests(path):
        if not isinstance(request, Mapping):
            raise SourceFormatError(path, line, "expected an object with resourceSpans", f"give {WHAT}")
        resources = _field(request, "resourceSpans", "resource_spans")
        if resources is None:
            raise SourceFormatError(
                path, line, "no resourceSpans: not an OTLP traces request", f"give {WHAT}"
            )
        for resource in _list(resources):
            for scope in _list(_field(resource, "scopeSpans", "scope_spans", "instrumentationLibrarySpans")):
                for data in _list(_field(scope, "spans")):
                    if not isinstance(data, Mapping):
                        raise SourceFormatError(path, line, "a span that is not an object", f"give {WHAT}")
                    spans.append(Span(data, line, path))
                    count(path, line, len(spans), "spans")
    return spans


def _requests(path: Path) -> Iterable[tuple[int, Any]]:
    """One request (a document) or one per line (the Collector's file exporter)."""
    with path.open("rb") as handle:
        head = handle.read(1 << 16)
    first = head.split(b"\n", 1)[0].strip()
    if first.startswith(b"{") and first.endswith(b"}") and b"\n" in head.strip():
        return json_lines(path, WHAT)  # one whole object on the first line: JSON Lines
    return [(1, json_document(path, WHAT))]


def _run(path: Path, spans: list[Span]) -> ImportedRun:
    chats = [s for s in spans if s.operation in CHAT]
    tools = [s for s in spans if s.operation == "execute_tool"]
    agents = [s for s in spans if s.operation == "invoke_agent"]
    origin = spans[0].start if spans else 0
    calls: list[Call] = []
    missing: set[str] = {"the exact request bytes and headers"}
    content = bool(chats)
    has_system = has_tools = False
    by_id: dict[str, Call] = {}
    for span in chats:
        inputs, outputs, system, definitions = _content(span)
        content = content and inputs is not None and outputs is not None
        has_system = has_system or bool(system)
        has_tools = has_tools or definitions is not None
        attrs = span.attributes
        model = _str(attrs.get("gen_ai.request.model")) or _str(attrs.get("gen_ai.response.model"))
        usage = {key: int(attrs[name]) for name, key in USAGE.items() if _integer(attrs.get(name))}
        body: dict[str, Any] = {"model": model, "messages": inputs or []}
        if system:
            body["system"] = system
        if definitions is not None:
            body["tools"] = definitions
        if _integer(attrs.get("gen_ai.request.max_tokens")):
            body["max_tokens"] = int(attrs["gen_ai.request.max_tokens"])
        message = None
        if outputs is not None:
            finish = attrs.get("gen_ai.response.finish_reasons")
            reason = outputs[1] or (finish[0] if isinstance(finish, list) and finish else None)
            message = {
                "id": _str(attrs.get("gen_ai.response.id")) or f"msg_{span.span_id}",
                "type": "message",
                "role": "assistant",
                "model": _str(attrs.get("gen_ai.response.model")) or model,
                "content": outputs[0],
                "stop_reason": STOPS.get(str(reason), reason),
                "stop_sequence": None,
                "usage": usage,
            }
        call = Call(
            body=body,
            message=message,
            model=model,
            usage=usage,
            latency_ms=(span.end - span.start) / 1e6,
            t=(span.start - origin) / 1e9,
            error=span.failed,
        )
        calls.append(call)
        for block in outputs[0] if outputs is not None else []:
            if block.get("type") == "tool_use" and isinstance(block.get("id"), str):
                by_id[block["id"]] = call
    for span in tools:
        tool = _tool(span)
        if tool.input is None:
            missing.add("tool call arguments")
            tool.input = {}
        if tool.output is None and tool.error is None:
            missing.add("tool call results")
        owner = by_id.get(tool.id or "") or _before(calls, chats, span)
        if owner is not None:
            owner.tools.append(tool)
    if calls and not tools:
        _tools_from_conversation(calls)
    if not content:
        missing.add("message content (gen_ai.input.messages / gen_ai.output.messages were not captured)")
    if not has_system:
        missing.add("system")
    if not has_tools:
        missing.add("tools")
    agent = next(
        (
            _str(s.attributes.get("gen_ai.agent.name"))
            for s in agents
            if s.attributes.get("gen_ai.agent.name")
        ),
        None,
    )
    if not content:
        for call in calls:
            call.message = None
            call.body = {"model": call.model} if call.model else {}
    status = next((_str(s.attributes.get("agentevals.run.status")) for s in agents), None)
    return ImportedRun(
        source=SOURCE,
        path=path,
        fidelity=Fidelity(CONTENT if content else OUTLINE, SOURCE, tuple(sorted(missing))),
        calls=calls,
        agent=agent or "otlp",
        run_id=chats[0].trace_id if chats else "",
        status=status or ("error" if any(c.error for c in calls) else "ok"),
        verifications=[v for s in agents for v in _evaluations(s)],
    )


def _evaluations(span: Span) -> list[dict[str, Any]]:
    """The `gen_ai.evaluation.result` events of an agent span, as verification fields."""
    found = []
    for name, attrs in span.events:
        if name != "gen_ai.evaluation.result" or not _str(attrs.get("gen_ai.evaluation.name")):
            continue
        label = attrs.get("gen_ai.evaluation.score.label")
        verification: dict[str, Any] = {"name": attrs["gen_ai.evaluation.name"], "passed": label == "pass"}
        score = attrs.get("gen_ai.evaluation.score.value")
        if isinstance(score, int | float) and not isinstance(score, bool) and 0 <= score <= 1:
            verification["progress"] = float(score)
        if _str(attrs.get("gen_ai.evaluation.explanation")):
            verification["detail"] = attrs["gen_ai.evaluation.explanation"]
        found.append(verification)
    return found


def _before(calls: list[Call], chats: list[Span], span: Span) -> Call | None:
    owner = None
    for call, chat in zip(calls, chats, strict=True):
        if chat.start <= span.start:
            owner = call
    return owner


def _tools_from_conversation(calls: list[Call]) -> None:
    """Without execute_tool spans, the tool calls are the model's tool uses and the results the next
    call's input carries for them."""
    for index, call in enumerate(calls):
        uses = [b for b in (call.message or {}).get("content", []) if b.get("type") == "tool_use"]
        later = calls[index + 1].body.get("messages", []) if index + 1 < len(calls) else []
        results = {
            b.get("tool_use_id"): b
            for m in later
            if m.get("role") == "user" and isinstance(m.get("content"), list)
            for b in m["content"]
            if isinstance(b, Mapping) and b.get("type") == "tool_result"
        }
        for use in uses:
            result = results.get(use.get("id"))
            call.tools.append(
                ToolRun(
                    name=str(use.get("name")),
                    input=use.get("input") if isinstance(use.get("input"), dict) else {},
                    output=None if result is None or result.get("is_error") else result.get("content"),
                    error=str(result.get("content"))
                    if result is not None and result.get("is_error")
                    else None,
                    id=use.get("id"),
                )
            )


def _tool(span: Span) -> ToolRun:
    attrs = span.attributes
    arguments = _json(attrs.get("gen_ai.tool.call.arguments"))
    result = attrs.get("gen_ai.tool.call.result")
    for name, event in span.events:  # the older event form
        if name == "gen_ai.tool.message" and result is None:
            result = _body(event).get("content")
    failed = span.failed
    if failed is not None and _str(attrs.get("error.type")) and failed == "the span's status is ERROR":
        failed = str(attrs["error.type"])
    return ToolRun(
        name=_str(attrs.get("gen_ai.tool.name")) or span.name,
        input=arguments
        if isinstance(arguments, dict)
        else ({"arguments": arguments} if arguments is not None else None),  # type: ignore[arg-type]
        output=None if failed else _json(result),
        error=failed,
        duration_ms=(span.end - span.start) / 1e6,
        id=_str(attrs.get("gen_ai.tool.call.id")),
    )


def _content(
    span: Span,
) -> tuple[
    list[dict[str, Any]] | None,
    tuple[list[dict[str, Any]], Any] | None,
    list[dict[str, Any]],
    list[Any] | None,
]:
    """A chat span's (input messages, (output blocks, finish reason), system blocks, tool
    definitions), from the attributes or else the older events; None where not captured."""
    attrs = span.attributes
    system: list[dict[str, Any]] = []
    inputs: list[dict[str, Any]] | None = None
    outputs: tuple[list[dict[str, Any]], Any] | None = None
    raw_in = _json(attrs.get("gen_ai.input.messages"))
    if isinstance(raw_in, list):
        inputs = []
        for message in raw_in:
            if not isinstance(message, Mapping):
                continue
            role, blocks = str(message.get("role")), _parts(message.get("parts"))
            if role == "system":
                system += blocks
            else:
                _append(inputs, "assistant" if role == "assistant" else "user", blocks)
    raw_out = _json(attrs.get("gen_ai.output.messages"))
    if isinstance(raw_out, list):
        blocks, reason = [], None
        for message in raw_out:
            if isinstance(message, Mapping):
                blocks += _parts(message.get("parts"))
                reason = reason or message.get("finish_reason")
        outputs = (blocks, reason)
    raw_system = _json(attrs.get("gen_ai.system_instructions"))
    if isinstance(raw_system, list):
        system += _parts(raw_system)
    elif isinstance(raw_system, str):
        system.append({"type": "text", "text": raw_system})
    definitions = _json(attrs.get("gen_ai.tool.definitions"))
    if inputs is None and outputs is None:
        inputs, outputs, system = _from_events(span.events, system)
    return inputs, outputs, system, definitions if isinstance(definitions, list) else None


def _from_events(
    events: list[tuple[str, dict[str, Any]]], system: list[dict[str, Any]]
) -> tuple[list[dict[str, Any]] | None, tuple[list[dict[str, Any]], Any] | None, list[dict[str, Any]]]:
    inputs: list[dict[str, Any]] = []
    outputs: tuple[list[dict[str, Any]], Any] | None = None
    seen = False
    for name, attrs in events:
        body = _body(attrs)
        if name == "gen_ai.system.message":
            system += _text_blocks(body.get("content"))
        elif name == "gen_ai.user.message":
            _append(inputs, "user", _text_blocks(body.get("content")))
        elif name == "gen_ai.assistant.message":
            _append(inputs, "assistant", _text_blocks(body.get("content")) + _calls(body.get("tool_calls")))
        elif name == "gen_ai.tool.message":
            block = {
                "type": "tool_result",
                "tool_use_id": body.get("id"),
                "content": _as_text(body.get("content")),
            }
            _append(inputs, "user", [block])
        elif name == "gen_ai.choice":
            message = _json(body.get("message"))
            message = message if isinstance(message, Mapping) else {}
            blocks = _text_blocks(message.get("content")) + _calls(message.get("tool_calls"))
            outputs = ((outputs[0] if outputs else []) + blocks, body.get("finish_reason"))
        else:
            continue
        seen = True
    return (inputs if seen else None), outputs, system


def _body(attrs: Mapping[str, Any]) -> dict[str, Any]:
    body = _json(attrs.get("gen_ai.event.content"))
    return dict(body) if isinstance(body, Mapping) else {k: _json(v) for k, v in attrs.items()}


def _calls(tool_calls: Any) -> list[dict[str, Any]]:
    out = []
    for call in _list(_json(tool_calls)):
        if isinstance(call, Mapping):
            named = call.get("function")
            function: Mapping[str, Any] = named if isinstance(named, Mapping) else call
            arguments = _json(function.get("arguments"))
            out.append(
                {
                    "type": "tool_use",
                    "id": call.get("id"),
                    "name": function.get("name"),
                    "input": arguments if isinstance(arguments, dict) else {},
                }
            )
    return out


def _parts(parts: Any) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for part in _list(parts):
        if not isinstance(part, Mapping):
            continue
        kind = part.get("type")
        if kind == "text":
            blocks.append({"type": "text", "text": _as_text(part.get("content"))})
        elif kind == "tool_call":
            arguments = _json(part.get("arguments"))
            blocks.append(
                {
                    "type": "tool_use",
                    "id": part.get("id"),
                    "name": part.get("name"),
                    "input": arguments if isinstance(arguments, dict) else {},
                }
            )
        elif kind == "tool_call_response":
            result = {
                "type": "tool_result",
                "tool_use_id": part.get("id"),
                "content": _as_text(part.get("response")),
            }
            if part.get("is_error") is True:
                result["is_error"] = True
            blocks.append(result)
        elif kind == "reasoning":
            blocks.append({"type": "thinking", "thinking": _as_text(part.get("content"))})
    return blocks


def _append(messages: list[dict[str, Any]], role: str, blocks: list[dict[str, Any]]) -> None:
    if not blocks:
        return
    if messages and messages[-1]["role"] == role:
        messages[-1]["content"].extend(blocks)
    else:
        messages.append({"role": role, "content": list(blocks)})


def _text_blocks(content: Any) -> list[dict[str, Any]]:
    content = _json(content)
    if isinstance(content, list):
        return _parts(content) or [{"type": "text", "text": _as_text(content)}]
    return [] if content in (None, "") else [{"type": "text", "text": _as_text(content)}]


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


# -- OTLP JSON values ---------------------------------------------------------------------------


def attributes(raw: Any, path: Path, line: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in _list(raw):
        if not isinstance(item, Mapping) or not isinstance(item.get("key"), str):
            raise SourceFormatError(path, line, "an attribute without a string key", f"give {WHAT}")
        out[item["key"]] = value_of(item.get("value"))
    return out


def value_of(value: Any) -> Any:
    """An OTLP AnyValue as plain JSON (the JSON mapping's int64 is a string: read as a number)."""
    if not isinstance(value, Mapping):
        return None
    for key, snake in (
        ("stringValue", "string_value"),
        ("boolValue", "bool_value"),
        ("doubleValue", "double_value"),
    ):
        if key in value or snake in value:
            return value.get(key, value.get(snake))
    if "intValue" in value or "int_value" in value:
        number = value.get("intValue", value.get("int_value"))
        try:
            return int(number) if isinstance(number, str) and len(number) < 25 else number
        except ValueError:
            return number
    if "arrayValue" in value or "array_value" in value:
        array = value.get("arrayValue", value.get("array_value")) or {}
        return [value_of(v) for v in _list(array.get("values") if isinstance(array, Mapping) else None)]
    if "kvlistValue" in value or "kvlist_value" in value:
        kvlist = value.get("kvlistValue", value.get("kvlist_value")) or {}
        items = kvlist.get("values") if isinstance(kvlist, Mapping) else None
        return {
            str(item.get("key")): value_of(item.get("value"))
            for item in _list(items)
            if isinstance(item, Mapping)
        }
    if "bytesValue" in value or "bytes_value" in value:
        return str(value.get("bytesValue", value.get("bytes_value")))
    return None


def _field(data: Any, *names: str) -> Any:
    if not isinstance(data, Mapping):
        return None
    for name in names:
        if name in data:
            return data[name]
        snake = "".join(f"_{c.lower()}" if c.isupper() else c for c in name)
        if snake in data:
            return data[snake]
    return None


def _id(value: Any) -> str:
    """A trace or span id as hex: OTLP JSON writes hex, the generic protobuf JSON mapping base64."""
    if not isinstance(value, str) or len(value) > 64:
        return ""
    if all(c in "0123456789abcdefABCDEF" for c in value) and len(value) in (16, 32):
        return value.lower()
    try:
        return base64.b64decode(value, validate=True).hex()
    except ValueError:
        return value


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _nanos(value: Any) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.isdigit() and len(value) < 25:
        return int(value)
    return 0


def _integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _json(value: Any) -> Any:
    """A value that a convention carries as a JSON string (messages, arguments), parsed; other
    values as they are. Bounded: an attribute is a string inside a file already bounded in size,
    and parsing it goes through the same depth check."""
    if isinstance(value, str) and value[:1] in ("[", "{"):
        from ..trace.loaders import load_json

        try:
            return load_json(value, lambda line, problem: ValueError(problem))
        except ValueError:
            return value
    return value
