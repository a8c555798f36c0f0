"""The endpoint's own pieces that need no real client: checkpoints at model requests, a Claude Code
session written from one, and the header reader the endpoint parses requests and answers with."""

from __future__ import annotations

import io
import json
import os
import re
import socket
from pathlib import Path
from typing import Any

import anthropic
import pytest

from pytest_agentevals import Recorder, model_endpoint
from pytest_agentevals.endpoint import conversation_state, write_claude_session
from pytest_agentevals.endpoint.claude_session import session_folder
from pytest_agentevals.endpoint.command import children_pointed
from pytest_agentevals.endpoint.headers import read_headers
from pytest_agentevals.errors import AgentEvalsError, RecordingError
from pytest_agentevals.sim import Reply, SimServer
from pytest_agentevals.trace.reader import read_trace
from tests.conftest import make_fake_key


def ask(url: str, calls: int) -> None:
    client = anthropic.Anthropic(base_url=url, api_key=make_fake_key("cp"), max_retries=0)
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Go."}]
    for n in range(calls):
        reply = client.messages.create(
            model="claude-sonnet-4-6",
            max_tokens=50,
            system="Be brief.",
            messages=messages,
            metadata={"user_id": "u"},
        )
        messages += [
            {"role": "assistant", "content": reply.content[0].text},
            {"role": "user", "content": f"More ({n})."},
        ]


def test_every_nth_request_is_a_checkpoint_of_the_conversation_and_the_folder(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "a.txt").write_text("a\n")
    trace = work / "t.trace.jsonl"  # in the folder: the run's own trace is not part of a snapshot
    with (
        SimServer([Reply.text(f"r{i}") for i in range(5)]) as sim,
        Recorder(trace),
        model_endpoint(upstream=sim.url, checkpoints=work, checkpoint_every=2) as ep,
    ):
        ask(ep.url, 5)  # not streamed: five sized answers over one kept-alive upstream connection
    checkpoints = [e for e in read_trace(trace) if e["type"] == "checkpoint"]
    assert [c["step"] for c in checkpoints] == [0, 2, 4]
    assert [c["name"] for c in checkpoints] == [
        "endpoint request 1",
        "endpoint request 3",
        "endpoint request 5",
    ]
    state = checkpoints[1]["state"]
    assert state["format"] == "agentevals-endpoint/1"
    assert state["route"] == "/v1/messages"
    assert state["request"]["system"] == "Be brief."
    assert [m["content"] for m in state["request"]["messages"]] == [
        "Go.",
        "r0",
        "More (0).",
        "r1",
        "More (1).",
    ]
    assert "metadata" not in state["request"]  # session ids are not the conversation
    assert checkpoints[0]["workspace"]["files"]["a.txt"]["text"] == "a\n"
    assert [sorted(c["workspace"]["files"]) for c in checkpoints] == [["a.txt"]] * 3
    assert read_trace(trace)[-1]["totals"]["checkpoints"] == 3


@pytest.mark.parametrize("every", [0, -1, 1.5, True])
def test_a_bad_checkpoint_interval_is_one_error(tmp_path: Path, every: Any) -> None:
    with pytest.raises(RecordingError, match="checkpoint every"):
        model_endpoint(checkpoints=tmp_path, checkpoint_every=every).__enter__()


def test_a_claude_session_holds_the_conversation_less_what_the_cli_adds(tmp_path: Path) -> None:
    body = {
        "model": "claude-opus-5-5",
        "metadata": {"user_id": "x"},
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "<system-reminder>\nAttribution ...</system-reminder>"},
                    {"type": "text", "text": "write hello.txt"},
                ],
            },
            {"role": "system", "content": "# Environment ..."},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t1", "name": "Write", "input": {}}],
            },
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]},
        ],
    }
    work = tmp_path / "work.d"
    work.mkdir()
    session = write_claude_session(conversation_state(body, "/v1/messages"), work, tmp_path / "config")
    folder = session_folder(tmp_path / "config", work.resolve())
    assert folder.name == re.sub(r"[^a-zA-Z0-9]", "-", str(work.resolve()))  # as the CLI names it
    entries = [json.loads(line) for line in (folder / f"{session}.jsonl").read_text().splitlines()]
    assert [e["type"] for e in entries] == ["user", "assistant", "user"]
    assert entries[0]["message"]["content"] == [{"type": "text", "text": "write hello.txt"}]
    assert entries[1]["message"]["stop_reason"] == "tool_use"
    assert [e["parentUuid"] for e in entries] == [None, entries[0]["uuid"], entries[1]["uuid"]]
    assert {e["sessionId"] for e in entries} == {session}


def test_a_state_the_endpoint_did_not_write_or_a_long_folder_is_refused(tmp_path: Path) -> None:
    with pytest.raises(AgentEvalsError, match="not one the model endpoint wrote"):
        write_claude_session({"messages": []}, tmp_path, tmp_path / "config")
    deep = tmp_path / ("d" * 210)
    state = conversation_state({"messages": [{"role": "user", "content": "hi"}]}, "/v1/messages")
    with pytest.raises(AgentEvalsError, match="over 200 characters"):
        write_claude_session(state, deep, tmp_path / "config")


def test_headers_are_read_as_http_client_reads_them() -> None:
    raw = b"Host: x\r\nX-Folded: a\r\n  b\r\ncontent-length: 3\r\nX-Twice: 1\r\nX-Twice: 2\r\n\r\nrest"
    stream = io.BytesIO(raw)
    headers = read_headers(stream)
    assert headers["Content-Length"] == "3"
    assert headers["x-folded"] == "a b"
    assert headers.get_all("x-twice") == ["1", "2"]
    assert stream.read() == b"rest"


def raw_request(port: int, head: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(head)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    return answer


def test_too_many_or_too_long_headers_and_a_bad_request_line_are_refused() -> None:
    """As `http.server` refuses them (a request line it cannot read gets an HTTP/0.9 answer: no
    status line, the error page alone)."""
    many = b"".join(b"X-%d: 1\r\n" % n for n in range(101))
    long = b"X-Long: " + b"a" * 70000 + b"\r\n"
    with model_endpoint() as endpoint:
        port = endpoint.port
        assert raw_request(port, b"POST / HTTP/1.1\r\n%s\r\n" % many).startswith(b"HTTP/1.1 431")
        assert raw_request(port, b"POST / HTTP/1.1\r\n%s\r\n" % long).startswith(b"HTTP/1.1 431")
        assert b"Error code: 505" in raw_request(port, b"POST / HTTP/2.0\r\n\r\n")
        assert b"Error code: 400" in raw_request(port, b"POST / HTTP/x.y\r\n\r\n")
        assert b"Error code: 400" in raw_request(port, b"POST /\r\n\r\n")


def test_an_endpoint_started_inside_a_pointed_program_forwards_past_the_outer_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under `agentevals record harness.py` the environment names an endpoint already: a harness that
    starts one of its own forwards where that one does, and its calls are recorded once."""
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    trace = tmp_path / "t.trace.jsonl"
    with SimServer([Reply.text("r0")]) as sim, Recorder(trace):
        with children_pointed(upstream=sim.url) as outer:
            assert os.environ["ANTHROPIC_BASE_URL"] == outer.url
            with model_endpoint() as inner:
                assert inner.upstream.base_url == sim.url
                ask(inner.url, 1)
        assert "ANTHROPIC_BASE_URL" not in os.environ  # put back as it was
        assert outer.forwarded == 0
        assert len(sim.requests) == 1
    assert [e["type"] for e in read_trace(trace)].count("model_call") == 1
