"""`agentevals export otlp`: a recorded run as GenAI spans in OTLP JSON; re-imported, it gives the
same steps (model calls with their messages, system, tools, answers and usage; tool calls with their
input and output or error; verifications), and the file is OTLP by the protocol's own definitions."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import pytest_agentevals as ae
from pytest_agentevals.cli import main
from pytest_agentevals.replay import Replayer
from pytest_agentevals.replay.content import _blocks, messages_form
from pytest_agentevals.trace.messages import response_message
from pytest_agentevals.trace.reader import read_trace

from .. import replay_support as agent
from ..schema_support import read_valid
from .otel_support import need

TASK = "Fix the bug in a.txt"


@pytest.fixture(autouse=True)
def _fresh_files() -> Iterator[None]:
    saved = dict(agent.FILES)
    yield
    agent.FILES.clear()
    agent.FILES.update(saved)
    agent.EXECUTED.clear()


@pytest.fixture
def recorded(tmp_path: Path) -> Path:
    path = tmp_path / "run.trace.jsonl"
    with agent.sim() as server, ae.Recorder(path, task=TASK, agent="toolbox"):
        agent.run_agent(agent.client(server.url, max_retries=0), TASK)
        ae.verification("tests pass", True, progress=1.0)
    agent.FILES.update({"a.txt": "def add(a, b):\n    return a - b\n"})
    return path


def steps(path: Path) -> list[tuple[Any, ...]]:
    """What a run did, step by step, in the terms every tier holds."""
    out: list[tuple[Any, ...]] = []
    for event in read_trace(path):
        if event["type"] == "model_call":
            body = event["request"]["body"]
            answer = response_message(event["response"]) or {}
            out.append(
                (
                    "model",
                    messages_form(body["messages"]),
                    _blocks(body.get("system")),
                    body.get("tools"),
                    messages_form([{"role": "assistant", "content": answer.get("content")}]),
                    {k: v for k, v in event.get("usage", {}).items() if v},
                )
            )
        elif event["type"] == "tool_call":
            outcome = event["error"]["message"] if "error" in event else event.get("output")
            out.append(("tool", event["name"], event["input"], outcome))
        elif event["type"] == "verification":
            out.append(("verification", event["name"], event["passed"], event.get("progress")))
    return out


def test_export_then_import_gives_the_same_steps(
    recorded: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spans = tmp_path / "run.otlp.json"
    assert main(["export", "otlp", str(recorded), "-o", str(spans)]) == 0
    assert "(8 spans" in capsys.readouterr().out  # the agent, 4 chats, 3 tool calls
    data = json.loads(spans.read_text())
    exported = data["resourceSpans"][0]["scopeSpans"][0]["spans"]
    names = [s["name"] for s in exported]
    assert names[0] == "invoke_agent toolbox"
    assert names.count(f"chat {agent.MODEL}") == 4
    assert names.count("execute_tool read_file") == 2
    assert names.count("execute_tool write_file") == 1
    (evaluation,) = exported[0]["events"]
    assert evaluation["name"] == "gen_ai.evaluation.result"
    failed = next(s for s in exported if s["name"] == "execute_tool read_file" and s["status"])
    assert failed["status"]["message"] == "no such file: missing.txt"

    assert main(["import", "otlp", str(spans), "-o", str(tmp_path / "back.trace.jsonl")]) == 0
    assert "fidelity `content` (imported from otlp" in capsys.readouterr().out
    read_valid(tmp_path / "back.trace.jsonl")
    assert steps(tmp_path / "back.trace.jsonl") == steps(recorded)
    ids = [b["id"] for e in read_trace(recorded) if e["type"] == "model_call"
           for b in response_message(e["response"])["content"] if b["type"] == "tool_use"]  # fmt: skip
    back = [b["id"] for e in read_trace(tmp_path / "back.trace.jsonl") if e["type"] == "model_call"
            for b in e["response"]["json"]["content"] if b["type"] == "tool_use"]  # fmt: skip
    assert back == ids
    # And the re-imported run replays the same agent offline.
    with Replayer(tmp_path / "back.trace.jsonl") as replay:
        assert agent.run_agent(agent.client(), TASK) == "Fixed: add() now adds."
    assert "no divergence" in replay.report.summary()


def test_the_export_is_otlp_by_the_protocol_definitions(recorded: Path, tmp_path: Path) -> None:
    need("opentelemetry.proto.collector.trace.v1.trace_service_pb2")
    from google.protobuf.json_format import Parse
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    spans = tmp_path / "run.otlp.json"
    assert main(["export", "otlp", str(recorded), "-o", str(spans)]) == 0
    data = json.loads(spans.read_text())
    for span in data["resourceSpans"][0]["scopeSpans"][0]["spans"]:
        # OTLP/JSON writes ids in hex; the generic protobuf JSON parser reads bytes as base64.
        for key in ("traceId", "spanId", "parentSpanId"):
            if key in span:
                assert len(span[key]) in (16, 32)
                span[key] = base64.b64encode(bytes.fromhex(span[key])).decode()
    request = Parse(json.dumps(data), ExportTraceServiceRequest())
    parsed = request.resource_spans[0].scope_spans[0].spans
    assert len(parsed) == 8
    chat = next(s for s in parsed if s.name.startswith("chat "))
    assert {a.key for a in chat.attributes} >= {
        "gen_ai.operation.name",
        "gen_ai.input.messages",
        "gen_ai.usage.input_tokens",
    }


def test_an_existing_output_is_kept(
    recorded: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "x.json"
    out.write_text("mine")
    assert main(["export", "otlp", str(recorded), "-o", str(out)]) == 2
    assert "exists: choose another -o, or --force" in capsys.readouterr().err
    assert out.read_text() == "mine"
