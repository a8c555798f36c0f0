"""The otlp reader on spans the real OpenTelemetry Python SDK made: opentelemetry-instrumentation-
anthropic around a real anthropic client loop against the simulated server, tool spans and the
agent span made with the SDK's API per the GenAI conventions, exported by the in-memory exporter and
serialized by the OTLP encoder (protobuf JSON mapping). Imported at the `content` tier (and then
replayed by the same loop) and, with content capture off, at the `outline` tier; the older event
form and the Collector's file-exporter lines too; and the reader's bounds on crafted files."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import pytest

from pytest_agentevals.cli import main
from pytest_agentevals.errors import AgentEvalsError
from pytest_agentevals.imports import SourceFormatError, import_file
from pytest_agentevals.replay import Replayer
from pytest_agentevals.sim import Reply, SimServer
from pytest_agentevals.trace.reader import read_trace

from ..conftest import make_fake_key
from ..schema_support import read_valid
from .otel_support import need

sdk_trace = need("opentelemetry.sdk.trace")
need("opentelemetry.exporter.otlp.proto.common")
instrumentation = need("opentelemetry.instrumentation.anthropic")

from google.protobuf.json_format import MessageToJson  # noqa: E402  (comes with the encoder)
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402

TOOLS = [{"name": "read", "description": "Read a file.", "input_schema": {"type": "object"}}]
FILES = {"notes.txt": "ship friday"}


def policy(request: Any) -> Reply:
    if request.tool_results:
        return Reply.text(f"Read {len(request.tool_results)} file(s).")
    return Reply.tool_use("read", {"path": "notes.txt"})


@pytest.fixture(scope="module")
def sim() -> Iterator[SimServer]:
    with SimServer(policy, seed=3) as server:
        yield server


@pytest.fixture(scope="module")
def otel() -> Iterator[tuple[Any, InMemorySpanExporter]]:
    exporter = InMemorySpanExporter()
    provider = sdk_trace.TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrumentor = instrumentation.AnthropicInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    yield provider, exporter
    instrumentor.uninstrument()


def agent(base_url: str, tracer: Any) -> str:
    """A real agent loop: the model asks for a tool, the tool runs in its own span, the model ends."""
    client = anthropic.Anthropic(base_url=base_url, api_key=make_fake_key("otel"), max_retries=0)
    messages: list[Any] = [{"role": "user", "content": "summarize notes.txt"}]
    agent_span = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "summarizer"}
    with tracer.start_as_current_span("invoke_agent summarizer", attributes=agent_span):
        while True:
            reply = client.messages.create(
                model="sim-otel-1",
                max_tokens=256,
                system="Be brief.",
                tools=TOOLS,
                messages=messages,  # type: ignore[arg-type]
            )
            uses = [b for b in reply.content if b.type == "tool_use"]
            if not uses:
                return reply.content[0].text  # type: ignore[union-attr]
            messages.append({"role": "assistant", "content": [b.model_dump() for b in reply.content]})
            results = []
            for use in uses:
                attributes = {
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": use.name,
                    "gen_ai.tool.call.id": use.id,
                    "gen_ai.tool.call.arguments": json.dumps(use.input),
                }
                with tracer.start_as_current_span(f"execute_tool {use.name}", attributes=attributes) as span:
                    output = FILES[use.input["path"]]  # type: ignore[index]
                    span.set_attribute("gen_ai.tool.call.result", output)
                results.append({"type": "tool_result", "tool_use_id": use.id, "content": output})
            messages.append({"role": "user", "content": results})


def spans_file(path: Path, otel: tuple[Any, InMemorySpanExporter], sim: SimServer) -> Path:
    provider, exporter = otel
    exporter.clear()
    assert agent(sim.url, provider.get_tracer("test-agent")) == "Read 1 file(s)."
    path.write_text(MessageToJson(encode_spans(exporter.get_finished_spans())))
    return path


def test_real_sdk_spans_import_at_the_content_tier_and_replay(
    tmp_path: Path, otel: Any, sim: SimServer
) -> None:
    spans = spans_file(tmp_path / "spans.json", otel, sim)
    assert make_fake_key("otel") not in spans.read_text()
    done = import_file("otlp", spans, tmp_path / "t.trace.jsonl")
    assert done.fidelity.tier == "content"
    assert done.fidelity.missing == ("the exact request bytes and headers",)
    start, first, tool, second, end = read_valid(tmp_path / "t.trace.jsonl")
    assert start["agent"] == "summarizer"
    assert first["request"]["body"]["system"] == [{"type": "text", "text": "Be brief."}]
    assert first["request"]["body"]["tools"] == TOOLS
    assert first["response"]["json"]["content"][0]["name"] == "read"
    assert first["usage"]["input_tokens"] > 0
    assert (tool["name"], tool["input"], tool["output"]) == ("read", {"path": "notes.txt"}, "ship friday")
    assert second["request"]["body"]["messages"][-1]["content"][0]["content"] == "ship friday"
    assert end["totals"]["model_calls"] == 2
    # The imported run replays the same loop offline: matched on messages, system and tools.
    provider, _ = otel
    with Replayer(tmp_path / "t.trace.jsonl") as replay:
        assert agent("http://127.0.0.1:9", provider.get_tracer("replayed")) == "Read 1 file(s)."
    assert "no divergence" in replay.report.summary()


def test_with_content_capture_off_the_import_is_an_outline_and_is_not_promoted(
    tmp_path: Path,
    otel: Any,
    sim: SimServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("TRACELOOP_TRACE_CONTENT", "false")
    spans = spans_file(tmp_path / "spans.json", otel, sim)
    done = import_file("otlp", spans, tmp_path / "t.trace.jsonl")
    assert done.fidelity.tier == "outline"
    assert any("message content" in item for item in done.fidelity.missing)
    events = read_valid(tmp_path / "t.trace.jsonl")
    assert [e["type"] for e in events] == ["run_start", "model_call", "tool_call", "model_call", "run_end"]
    assert events[1]["model"] == "sim-otel-1"
    assert "messages" not in events[1]["request"]["body"]
    assert events[2]["name"] == "read"  # the tool span kept its own attributes
    (tmp_path / "pyproject.toml").write_text("[tool.agentevals]\n")
    monkeypatch.chdir(tmp_path)
    assert main(["promote", str(tmp_path / "t.trace.jsonl"), "--name", "x"]) == 2
    assert (
        "cannot promote a trace of fidelity `outline` (imported from otlp; missing:"
        in capsys.readouterr().err
    )


def test_the_older_event_form(tmp_path: Path, otel: Any) -> None:
    provider, exporter = otel
    exporter.clear()
    tracer = provider.get_tracer("events")
    call = {"id": "call_1", "type": "function", "function": {"name": "read", "arguments": '{"path": "a"}'}}
    with tracer.start_as_current_span(
        "chat m", attributes={"gen_ai.operation.name": "chat", "gen_ai.request.model": "m"}
    ) as span:
        span.add_event("gen_ai.system.message", {"content": "Be brief."})
        span.add_event("gen_ai.user.message", {"content": "read a"})
        span.add_event(
            "gen_ai.choice",
            {"index": 0, "finish_reason": "tool_calls", "message": json.dumps({"tool_calls": [call]})},
        )
    with tracer.start_as_current_span(
        "chat m", attributes={"gen_ai.operation.name": "chat", "gen_ai.request.model": "m"}
    ) as span:
        span.add_event("gen_ai.user.message", {"content": "read a"})
        span.add_event("gen_ai.assistant.message", {"tool_calls": json.dumps([call])})
        span.add_event("gen_ai.tool.message", {"id": "call_1", "content": "text of a"})
        span.add_event(
            "gen_ai.choice", {"index": 0, "finish_reason": "stop", "message": json.dumps({"content": "done"})}
        )
    spans = tmp_path / "spans.json"
    spans.write_text(MessageToJson(encode_spans(exporter.get_finished_spans())))
    with pytest.raises(AgentEvalsError, match="holds the model calls of 2 traces"):
        import_file("otlp", spans, tmp_path / "t.trace.jsonl")  # two root spans: two traces
    first_trace = read_ids(spans)[0]
    done = import_file("otlp", spans, tmp_path / "t.trace.jsonl", trace_id=first_trace)
    assert done.model_calls == 1
    (first, *_) = [e for e in read_trace(tmp_path / "t.trace.jsonl") if e["type"] == "model_call"]
    assert first["request"]["body"]["system"] == [{"type": "text", "text": "Be brief."}]
    assert first["response"]["json"]["content"] == [
        {"type": "tool_use", "id": "call_1", "name": "read", "input": {"path": "a"}}
    ]
    assert first["response"]["json"]["stop_reason"] == "tool_use"


def read_ids(spans: Path) -> list[str]:
    import base64

    data = json.loads(spans.read_text())
    found = [s["traceId"] for r in data["resourceSpans"] for ss in r["scopeSpans"] for s in ss["spans"]]
    return sorted(
        {base64.b64decode(t).hex() for t in found}, key=[base64.b64decode(t).hex() for t in found].index
    )


def collector_line(spans: list[dict[str, Any]]) -> str:
    return json.dumps(
        {"resourceSpans": [{"resource": {}, "scopeSpans": [{"scope": {"name": "x"}, "spans": spans}]}]}
    )


def chat_span(number: int, **attributes: Any) -> dict[str, Any]:
    values = {"gen_ai.operation.name": {"stringValue": "chat"}, "gen_ai.request.model": {"stringValue": "m"}}
    values.update({k: v for k, v in attributes.items()})
    return {
        "traceId": "5b8efff798038103d269b633813fc60c",
        "spanId": f"{number:016x}",
        "name": "chat m",
        "startTimeUnixNano": str(1_700_000_000_000_000_000 + number),
        "endTimeUnixNano": str(1_700_000_000_000_000_000 + number + 5),
        "attributes": [{"key": k, "value": v} for k, v in values.items()],
    }


def test_collector_file_exporter_lines(tmp_path: Path) -> None:
    spans = tmp_path / "otel.jsonl"
    usage = {"gen_ai.usage.input_tokens": {"intValue": "12"}, "gen_ai.usage.output_tokens": {"intValue": 3}}
    spans.write_text(collector_line([chat_span(1, **usage)]) + "\n" + collector_line([chat_span(2)]) + "\n")
    done = import_file("otlp", spans, tmp_path / "t.trace.jsonl")
    assert (done.model_calls, done.fidelity.tier) == (2, "outline")
    first = read_trace(tmp_path / "t.trace.jsonl")[1]
    assert first["usage"] == {"input_tokens": 12, "output_tokens": 3}


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('{"spans": []}', "1: no resourceSpans: not an OTLP traces request"),
        (
            collector_line([{**chat_span(1), "attributes": [{"value": {}}]}]),
            "1: an attribute without a string key",
        ),
        (
            '{"resourceSpans": ' + "[" * 300 + "]" * 300 + "}",
            "1: not valid JSON here: nested deeper than 128 levels",
        ),
    ],
)
def test_a_malformed_file_is_named(tmp_path: Path, text: str, problem: str) -> None:
    spans = tmp_path / "bad.json"
    spans.write_text(text)
    with pytest.raises(SourceFormatError) as raised:
        import_file("otlp", spans, tmp_path / "t.trace.jsonl")
    assert str(raised.value).startswith(f"{spans}:{problem}")
