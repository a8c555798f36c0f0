"""What a hostile client sends the endpoint: bodies whose framing lies, paths that mean one route to
the guards and another to the upstream, and a replayed child's environment (issue 35)."""

from __future__ import annotations

import http.client
import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_agentevals import ModelEndpoint, Recorder, Replayer, model_endpoint
from pytest_agentevals.endpoint.credentials import is_credential
from pytest_agentevals.endpoint.final import final_answer
from pytest_agentevals.endpoint.inbound import Refused, normalized_path, read_body
from pytest_agentevals.guards import guards_for
from pytest_agentevals.settings.budgets import Budget
from pytest_agentevals.sim import Reply, SimServer
from pytest_agentevals.trace.reader import read_trace
from tests.conftest import make_fake_key

ROOT = Path(__file__).resolve().parents[2]


def headers_of(text: str) -> http.client.HTTPMessage:
    message = http.client.HTTPMessage()
    for line in filter(None, text.split("\n")):
        name, _, value = line.partition(":")
        message[name.strip()] = value.strip()
    return message


# -- bodies ------------------------------------------------------------------------------------------


def test_a_300_mib_body_is_refused_in_every_lying_framing_without_the_server_growing() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "tests.memory_probe", "body", "300"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    cases = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(cases) == 6
    first = cases[0]["peak_before_mb"]
    for case in cases:
        assert case["answer"] == "HTTP/1.1 400 Bad Request", case
        # The body is 300 MiB: read whole it would add 300 MB or more (632 MB before the fix).
        assert case["peak_after_mb"] - first < 40, case


@pytest.mark.parametrize(
    ("framing", "body", "says"),
    [
        ("Transfer-Encoding: chunked", b"-1\r\nabc", "not a chunk size"),
        ("Transfer-Encoding: chunked", b"+5\r\nabcde\r\n0\r\n\r\n", "not a chunk size"),
        ("Transfer-Encoding: chunked", b"0x5\r\nabcde\r\n0\r\n\r\n", "not a chunk size"),
        ("Transfer-Encoding: chunked", b"1_0\r\n" + b"a" * 16 + b"\r\n0\r\n\r\n", "not a chunk size"),
        ("Transfer-Encoding: chunked", b"100000000\r\n", "over the endpoint's bound"),
        ("Transfer-Encoding: chunked", b"5\r\nabcdefgh\r\n0\r\n\r\n", "longer than its size"),
        ("Transfer-Encoding: chunked", b"5\r\nab", "ended inside a chunk"),
        ("Transfer-Encoding: chunked", b"5" * 2000, "cut short or too long"),
        ("Transfer-Encoding: chunked", b"3\r\nabc\r\n0\r\n" + b"x: y\r\n" * 200, "trailer lines"),
        ("Transfer-Encoding: gzip, chunked", b"0\r\n\r\n", "not one the endpoint reads"),
        ("Content-Length: 3\nTransfer-Encoding: chunked", b"3\r\nabc\r\n0\r\n\r\n", "both"),
        ("Content-Length: 3\nContent-Length: 5", b"abcde", "differ"),
        ("Content-Length: +3", b"abc", "not a number"),
        ("Content-Length: 1_0", b"a" * 10, "not a number"),
        ("Content-Length: -1", b"abc", "not a number"),
        ("Content-Length: 268435457", b"", "over the endpoint's bound"),
        ("Content-Length: 10", b"abc", "ended after 3 of its 10"),
    ],
)
def test_a_body_whose_framing_lies_is_refused_with_one_sentence(framing: str, body: bytes, says: str) -> None:
    with pytest.raises(Refused, match=says):
        read_body(io.BufferedReader(io.BytesIO(body)), headers_of(framing))  # type: ignore[arg-type]


def test_an_honest_body_reads_in_either_framing() -> None:
    chunked = b"3;ext=1\r\nabc\r\n2\r\nde\r\n0\r\nx-trailer: 1\r\n\r\n"
    assert (
        read_body(io.BufferedReader(io.BytesIO(chunked)), headers_of("Transfer-Encoding: Chunked"))
        == b"abcde"
    )  # type: ignore[arg-type]
    assert read_body(io.BufferedReader(io.BytesIO(b"abcde")), headers_of("Content-Length: 5")) == b"abcde"  # type: ignore[arg-type]
    assert read_body(io.BufferedReader(io.BytesIO(b"")), headers_of("")) == b""  # type: ignore[arg-type]


# -- paths -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "clean"),
    [
        ("/v1//messages", "/v1/messages"),
        ("/v1/./messages", "/v1/messages"),
        ("//v1/messages/", "/v1/messages/"),
        ("/v1/messages?beta=true&x=%2F", "/v1/messages?beta=true&x=%2F"),
        ("/", "/"),
        ("", "/"),
    ],
)
def test_a_path_is_normalized_before_anything_reads_it(path: str, clean: str) -> None:
    assert normalized_path(path) == clean


@pytest.mark.parametrize(
    "path", ["/v1/%2e/messages", "/v1/me%73sages", "/v1/x/../messages", "/v1/messages;a=b", "/v1\\messages"]
)
def test_a_path_a_server_may_decode_otherwise_is_refused(path: str) -> None:
    with pytest.raises(Refused, match="send the path as the API spells it"):
        normalized_path(path)


def raw_post(endpoint: ModelEndpoint, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    connection = http.client.HTTPConnection("127.0.0.1", endpoint.port, timeout=30)
    headers = {"content-type": "application/json", "x-api-key": make_fake_key("raw")}
    prefix = endpoint.url.split(str(endpoint.port), 1)[1]
    connection.request("POST", prefix + path, json.dumps(body), headers)
    response = connection.getresponse()
    answer = json.loads(response.read())
    connection.close()
    return response.status, answer


def test_odd_spellings_of_the_messages_route_are_counted_by_the_guards_or_refused(tmp_path: Path) -> None:
    ask = {"model": "claude-sonnet-4-6", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}
    path = tmp_path / "odd.trace.jsonl"
    with SimServer([Reply.text("one"), Reply.text("two")]) as sim:
        recorder = Recorder(path, http=False, guards=guards_for(Budget(max_calls=1)))
        with recorder, model_endpoint(upstream=sim.url) as endpoint:
            first = raw_post(endpoint, "/v1//messages", ask)
            second = raw_post(endpoint, "/v1/./messages", ask)
            encoded = raw_post(endpoint, "/v1/%2e/messages", ask)
        forwarded = [request.path for request in sim.requests]
    assert first[0] == 200
    assert forwarded == ["/v1/messages"]  # the upstream is sent the path the guards counted
    assert second[0] == final_answer("")[0]  # a stop, in the form a client with no User-Agent takes as final
    assert "max_calls" in second[1]["error"]["message"]
    assert encoded[0] == 400
    assert "%" in encoded[1]["error"]["message"]
    calls = [event for event in read_trace(path) if event["type"] == "model_call"]
    assert len(calls) == 1
    assert calls[0]["request"]["url"].endswith("/v1/messages")


# -- a replayed child's environment ------------------------------------------------------------------

REAL = {
    "ANTHROPIC_API_KEY": make_fake_key("real"),
    "ANTHROPIC_AUTH_TOKEN": "auth-token-value-123",
    "CLAUDE_CODE_OAUTH_TOKEN": "sk-ant-oat01-" + "o" * 40,
    "AWS_ACCESS_KEY_ID": "AKIA" + "A" * 16,
    "AWS_SECRET_ACCESS_KEY": "s" * 40,
    "AWS_SESSION_TOKEN": "session-token-value",
    "OPENAI_API_KEY": "sk-proj-" + "p" * 40,
    "GOOGLE_APPLICATION_CREDENTIALS": "/home/me/gcp.json",
    "SSH_AUTH_SOCK": "/tmp/ssh-agent.sock",
    "my_service_key": "lower-case-key-value",
    "DB_PASSWORD": "hunter2-but-longer",
    "STRIPE_SECRET": "rk_live_" + "r" * 24,
    "GITLAB_TOKEN_FILE": "/run/token",
}
SETTINGS = {
    "MAX_THINKING_TOKENS": "1024",
    "CLAUDE_CODE_MAX_OUTPUT_TOKENS": "2048",
    "PATH": "/usr/bin",
    "HOME": "/h",
}


def test_every_credential_shaped_name_is_one_and_a_count_of_tokens_is_not() -> None:
    assert [name for name in REAL if not is_credential(name)] == []
    assert [name for name in SETTINGS if is_credential(name)] == []


def test_a_replayed_child_sees_no_credential_but_the_placeholder(tmp_path: Path) -> None:
    trace = tmp_path / "empty.trace.jsonl"
    with Recorder(trace, http=False):
        pass
    environ = {**REAL, **SETTINGS}
    recording = ModelEndpoint(upstream="http://127.0.0.1:9", environ=environ)
    with recording:
        assert recording.env["OPENAI_API_KEY"] == REAL["OPENAI_API_KEY"]  # a recording forwards: kept
    with Replayer(trace), ModelEndpoint(upstream="http://127.0.0.1:9", environ=environ) as endpoint:
        env = endpoint.env
    assert env["ANTHROPIC_API_KEY"] == "agentevals-replay-placeholder"
    assert [name for name in REAL if name in env and name != "ANTHROPIC_API_KEY"] == []
    assert {name: env[name] for name in SETTINGS} == SETTINGS
    assert not any(value in env.values() for value in REAL.values())
