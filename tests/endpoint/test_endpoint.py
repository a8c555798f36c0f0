"""The model endpoint, driven by the real anthropic SDK (in this process or in a subprocess) against the
simulated server, and by hand-made upstreams that pause, drop or answer garbage."""

from __future__ import annotations

import http.client
import json
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import pytest

from pytest_agentevals import ModelEndpoint, Recorder, ReplayDivergence, Replayer, model_endpoint
from pytest_agentevals.endpoint.final import final_answer
from pytest_agentevals.guards import guards_for
from pytest_agentevals.settings.budgets import Budget
from pytest_agentevals.sim import Fault, Reply, SimServer
from pytest_agentevals.trace.reader import read_trace
from tests.conftest import make_fake_key, run_agentevals

from . import agent

AGENT = Path(__file__).with_name("agent.py")
VOLATILE = ("t", "latency_ms")


def script(n: int = 4) -> list[Reply]:
    return [Reply.text(f"answer {i}") for i in range(n)]


def subprocess_env(env: dict[str, str]) -> dict[str, str]:
    return {**env, "ANTHROPIC_API_KEY": env.get("ANTHROPIC_API_KEY") or make_fake_key("endpoint")}


def run_child(env: dict[str, str], calls: int = 4) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(AGENT), str(calls)], env=env, capture_output=True, text=True, timeout=120
    )


def model_calls(path: Path) -> list[dict[str, Any]]:
    return [
        {k: v for k, v in event.items() if k not in VOLATILE}
        for event in read_trace(path)
        if event["type"] == "model_call"
    ]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """One agent run recorded in this process and the same run recorded through the endpoint from a
    subprocess, against twin simulated servers; the endpoint's trace is then replayed by the tests."""
    root = tmp_path_factory.mktemp("endpoint")
    key = make_fake_key("endpoint")
    with SimServer(script(), seed=3) as sim:
        in_process = root / "in-process.trace.jsonl"
        with Recorder(in_process):
            agent.run(anthropic.Anthropic(base_url=sim.url, api_key=key, max_retries=0), 4)
    with SimServer(script(), seed=3) as sim:
        through = root / "endpoint.trace.jsonl"
        with Recorder(through, http=False), model_endpoint(upstream=sim.url) as endpoint:
            child = run_child({**endpoint.env, "ANTHROPIC_API_KEY": key})
            forwarded = endpoint.forwarded
        upstream_url = sim.url
    assert child.returncode == 0, child.stderr
    return {"in_process": in_process, "endpoint": through, "forwarded": forwarded, "upstream": upstream_url}


def test_a_subprocess_is_recorded_as_the_in_process_recorder_records_it(recorded: dict[str, Any]) -> None:
    assert recorded["forwarded"] == 4
    mine, theirs = model_calls(recorded["endpoint"]), model_calls(recorded["in_process"])
    assert len(mine) == 4
    assert [c["stream"] for c in mine] == [True, True, True, False]
    # The same events, field by field (timings aside): URLs, kept headers, deltas, SSE, usage, cost.
    for ours, in_process in zip(mine, theirs, strict=True):
        ours_url = ours["request"].pop("url")
        in_process_url = in_process["request"].pop("url")
        assert ours_url.rsplit("/v1/", 1)[1] == in_process_url.rsplit("/v1/", 1)[1]
        assert ours_url.startswith(recorded["upstream"])  # the upstream it went to, not the endpoint
        assert ours == in_process
    end = read_trace(recorded["endpoint"])[-1]
    assert end["status"] == "ok"
    assert end["totals"]["model_calls"] == 4
    assert end["totals"]["steps"] == 4
    assert make_fake_key("endpoint") not in recorded["endpoint"].read_text()


def test_a_replay_answers_a_subprocess_offline(recorded: dict[str, Any]) -> None:
    with SimServer(script()) as sim:  # an upstream that must not be contacted
        with Replayer(recorded["endpoint"]) as replay, model_endpoint(upstream=sim.url) as endpoint:
            env = endpoint.env
            child = run_child(env)
        assert sim.requests == []
        assert endpoint.forwarded == 0
    assert child.returncode == 0, child.stderr
    assert child.stdout.strip() == "answer 3"
    assert env["ANTHROPIC_API_KEY"] == "agentevals-replay-placeholder"
    assert replay.report.served_http == 4
    assert replay.failure is None


def test_a_request_the_recording_lacks_fails_the_replay_loudly_and_is_not_retried(
    recorded: dict[str, Any],
) -> None:
    replay = Replayer(recorded["endpoint"])
    with model_endpoint(upstream="http://127.0.0.1:9") as endpoint:
        replay.start()
        child = run_child(endpoint.env, calls=5)  # call 4 is streamed now, and there is a fifth
        with pytest.raises(ReplayDivergence, match="replay diverged at model call 4") as raised:
            replay.stop()
        # Three answered, the diverging fourth refused once: its 500 carried x-should-retry: false.
        assert endpoint.requests == 4
    assert "stream:\n    recorded: (absent)\n    now:      true" in str(raised.value)
    assert child.returncode != 0
    assert "InternalServerError" in child.stderr
    assert "replay diverged" in child.stderr
    assert replay.report.served_http == 3


def test_record_and_replay_a_command_on_the_command_line(tmp_path: Path) -> None:
    with SimServer(script()) as sim:
        env = {"ANTHROPIC_BASE_URL": sim.url, "ANTHROPIC_API_KEY": make_fake_key("cli")}
        out = tmp_path / "run.trace.jsonl"
        done = run_agentevals("record", "-o", out, "--", sys.executable, AGENT, "4", cwd=tmp_path, env=env)
        assert done.returncode == 0, done.stderr
        assert "4 steps, ended ok" in done.stderr
        assert read_trace(out)[0]["task"] == {"command": [sys.executable, str(AGENT), "4"]}
        seen = len(sim.requests)
        replayed = run_agentevals("replay", out, "--", sys.executable, AGENT, "4", cwd=tmp_path, env=env)
        assert len(sim.requests) == seen  # nothing went upstream
    assert replayed.returncode == 0, replayed.stderr
    assert "served 4 of 4 recorded HTTP exchanges; no divergence" in replayed.stderr
    assert replayed.stdout.strip() == "answer 3"


def test_a_budget_stops_a_command_with_exit_3_and_no_retry_storm(tmp_path: Path) -> None:
    with SimServer(script()) as sim:
        env = {"ANTHROPIC_BASE_URL": sim.url, "ANTHROPIC_API_KEY": make_fake_key("cli")}
        out = tmp_path / "stopped.trace.jsonl"
        done = run_agentevals(
            "record",
            "-o",
            out,
            "--budget",
            "max_calls=2",
            "--",
            sys.executable,
            AGENT,
            "4",
            cwd=tmp_path,
            env=env,
        )
        assert len(sim.requests) == 2
    assert done.returncode == 3, done.stderr
    assert "max_calls" in done.stderr
    assert "InternalServerError" in done.stderr
    events = read_trace(out)
    guard = [e for e in events if e["type"] == "guard"]
    assert len(guard) == 1
    assert guard[0]["action"] == "stop"
    assert guard[0]["status"] == "budget_exhausted"
    assert events[-1]["status"] == "budget_exhausted"
    assert events[-1]["totals"]["model_calls"] == 2


def test_a_stopped_run_refuses_once_per_request_the_client_makes(tmp_path: Path) -> None:
    budget = Budget(max_calls=1)
    with SimServer(script()) as sim:
        recorder = Recorder(tmp_path / "t.trace.jsonl", http=False, guards=guards_for(budget))
        with recorder, model_endpoint(upstream=sim.url) as endpoint:
            child = run_child(subprocess_env(endpoint.env), calls=3)
            requests = endpoint.requests
    assert child.returncode != 0
    assert requests == 2  # one forwarded, one refused, and the SDK did not retry the refusal
    assert len(sim.requests) == 1
    assert read_trace(tmp_path / "t.trace.jsonl")[-1]["status"] == "budget_exhausted"


def test_a_recording_that_saw_no_model_call_is_not_ok(tmp_path: Path) -> None:
    out = tmp_path / "empty.trace.jsonl"
    done = run_agentevals(
        "record", "-o", out, "--", sys.executable, "-c", "print('no model here')", cwd=tmp_path
    )
    assert done.returncode == 4  # the command exited 0, and checked nothing
    assert (
        "agentevals record: error: no model call, so the run checked nothing (exit status 4)" in done.stderr
    )
    assert "not pointed at the endpoint" in done.stderr  # the trace's reason
    assert "ended no_model_calls" in done.stderr
    end = read_trace(out)[-1]
    assert end["status"] == "no_model_calls"
    assert "not pointed at the endpoint" in end["reason"]
    shown = run_agentevals("show", out, cwd=tmp_path)
    assert "no_model_calls" in shown.stdout
    assert "not pointed at the endpoint" in shown.stdout
    assert "AUC" not in shown.stdout
    # A command that fails keeps its own exit code.
    failing = run_agentevals(
        "record",
        "-o",
        tmp_path / "f.trace.jsonl",
        "--",
        sys.executable,
        "-c",
        "raise SystemExit(5)",
        cwd=tmp_path,
    )
    assert failing.returncode == 5
    allowed = run_agentevals(
        "record", "-o", tmp_path / "a.trace.jsonl", "--allow-no-model-calls", "--", sys.executable, "-c",
        "print('no model here')", cwd=tmp_path,
    )  # fmt: skip
    assert allowed.returncode == 0, allowed.stderr
    assert read_trace(tmp_path / "a.trace.jsonl")[-1]["status"] == "no_model_calls"


# -- bad upstreams, bad requests ------------------------------------------------------------------


def client(endpoint_url: str) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=endpoint_url, api_key=make_fake_key("endpoint"), max_retries=0)


def test_an_upstream_that_drops_mid_stream_cuts_the_client_short_and_is_recorded(tmp_path: Path) -> None:
    path = tmp_path / "dropped.trace.jsonl"
    with (
        SimServer([Fault.drop(mid_stream=True)]) as sim,
        Recorder(path, http=False),
        model_endpoint(upstream=sim.url) as endpoint,
        pytest.raises(Exception, match="incomplete chunked read") as raised,
    ):
        agent.run(client(endpoint.url), 2)
    # The stream breaks in the client's hands, as the API's own broken stream does (no retry there).
    assert type(raised.value).__name__ == "RemoteProtocolError"
    (call,) = model_calls(path)
    assert call["response"]["status"] == 200
    assert [e["data"]["type"] for e in call["response"]["sse"]][:2] == [
        "message_start",
        "content_block_start",
    ]
    assert "cut short" in call["error"]
    end = read_trace(path)[-1]
    assert end["totals"]["model_errors"] == 1
    assert end["totals"]["steps"] == 0


class HandMadeUpstream:
    """A TCP server on loopback that answers each connection with `answer(socket)`."""

    def __init__(self, answer: Any) -> None:
        self.answer = answer
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return
            with connection:
                connection.recv(65536)
                self.answer(connection)

    def close(self) -> None:
        self.listener.close()


def test_an_upstream_answering_garbage_is_a_bad_gateway_with_our_message(tmp_path: Path) -> None:
    upstream = HandMadeUpstream(lambda conn: conn.sendall(b"this is not HTTP at all\r\n\r\n"))
    path = tmp_path / "garbage.trace.jsonl"
    try:
        with (
            Recorder(path, http=False),
            model_endpoint(upstream=upstream.url) as endpoint,
            pytest.raises(anthropic.APIStatusError) as raised,
        ):
            agent.run(client(endpoint.url), 1)
    finally:
        upstream.close()
    assert raised.value.status_code == 502
    assert "not HTTP" in str(raised.value)
    (call,) = model_calls(path)
    assert call["response"]["status"] == 502
    assert "not HTTP" in call["error"]


def test_an_upstream_that_times_out_is_a_gateway_timeout(tmp_path: Path) -> None:
    release = threading.Event()
    upstream = HandMadeUpstream(lambda conn: release.wait(10))
    path = tmp_path / "slow.trace.jsonl"
    try:
        with (
            Recorder(path, http=False),
            model_endpoint(upstream=upstream.url, timeout=0.3) as endpoint,
            pytest.raises(anthropic.APIStatusError) as raised,
        ):
            agent.run(client(endpoint.url), 1)
    finally:
        release.set()
        upstream.close()
    assert raised.value.status_code == 504
    (call,) = model_calls(path)
    assert call["response"]["status"] == 504
    assert "in time" in call["error"]


def test_a_request_that_cannot_be_parsed_is_a_400_with_our_message_recorded(tmp_path: Path) -> None:
    path = tmp_path / "bad.trace.jsonl"
    with SimServer(script()) as sim:
        with Recorder(path, http=False), model_endpoint(upstream=sim.url) as endpoint:
            connection = http.client.HTTPConnection("127.0.0.1", endpoint.port, timeout=10)
            connection.request(
                "POST", endpoint.url.split(str(endpoint.port), 1)[1] + "/v1/messages", b"{not json"
            )
            response = connection.getresponse()
            body = json.loads(response.read())
        assert sim.requests == []
    assert response.status == 400
    assert response.getheader("x-should-retry") == "false"
    assert body["error"]["type"] == "invalid_request_error"
    assert "not JSON" in body["error"]["message"]
    (call,) = model_calls(path)
    assert call["response"]["status"] == 400
    assert "not JSON" in call["error"]
    assert call["request"]["body_raw"] == {"text": "{not json"}


def test_another_runs_client_is_never_answered() -> None:
    with (
        model_endpoint(upstream="http://127.0.0.1:9") as first,
        model_endpoint(upstream="http://127.0.0.1:9") as second,
    ):
        wrong = first.url.replace(first.token, second.token)
        with pytest.raises(anthropic.NotFoundError, match="not this run's endpoint"):
            client(wrong).messages.create(
                model="m", max_tokens=1, messages=[{"role": "user", "content": "x"}]
            )
        assert first.forwarded == 0
        assert first.url.startswith(f"http://127.0.0.1:{first.port}/agentevals-")


def test_the_first_event_reaches_the_client_before_the_upstream_finishes(tmp_path: Path) -> None:
    release = threading.Event()
    head = b'event: message_start\ndata: {"type":"message_start"}\n\n'
    tail = b'event: message_stop\ndata: {"type":"message_stop"}\n\n'

    def answer(conn: socket.socket) -> None:
        conn.sendall(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
            + b"%x\r\n%s\r\n" % (len(head), head)
        )
        release.wait(10)  # the rest only once the client has seen the first event
        conn.sendall(b"%x\r\n%s\r\n0\r\n\r\n" % (len(tail), tail))

    upstream = HandMadeUpstream(answer)
    path = tmp_path / "streamed.trace.jsonl"
    try:
        with Recorder(path, http=False), model_endpoint(upstream=upstream.url) as endpoint:
            connection = http.client.HTTPConnection("127.0.0.1", endpoint.port, timeout=5)
            body = json.dumps({"model": "m", "max_tokens": 1, "stream": True, "messages": []})
            connection.request("POST", endpoint.url.split(str(endpoint.port), 1)[1] + "/v1/messages", body)
            response = connection.getresponse()
            first = response.read1(len(head))
            released_before = release.is_set()
            release.set()
            rest = response.read()
    finally:
        release.set()
        upstream.close()
    assert first == head
    assert not released_before
    assert rest == tail
    (call,) = model_calls(path)
    assert [e["event"] for e in call["response"]["sse"]] == ["message_start", "message_stop"]


def post(endpoint_url: str, port: int, path: str, body: dict[str, Any]) -> tuple[int, Any]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    headers = {"content-type": "application/json", "x-api-key": make_fake_key("raw")}
    connection.request("POST", endpoint_url.split(str(port), 1)[1] + path, json.dumps(body), headers)
    response = connection.getresponse()
    return response.status, json.loads(response.read())


def test_beta_messages_and_count_tokens_are_recorded_and_replayed(tmp_path: Path) -> None:
    path = tmp_path / "beta.trace.jsonl"
    ask = {"model": agent.MODEL, "messages": [{"role": "user", "content": "How long is this?"}]}
    with SimServer([Reply.text("beta answer")]) as sim:
        with Recorder(path, http=False), model_endpoint(upstream=sim.url) as endpoint:
            counted = post(endpoint.url, endpoint.port, "/v1/messages/count_tokens", ask)
            answered = post(endpoint.url, endpoint.port, "/v1/messages?beta=true", {**ask, "max_tokens": 50})
        assert len(sim.requests) == 1  # the sim lists Messages requests, not count_tokens
        assert endpoint.forwarded == 2
    assert counted[0] == 200
    assert counted[1]["input_tokens"] > 0
    assert answered[0] == 200
    assert answered[1]["content"][0]["text"] == "beta answer"
    urls = [call["request"]["url"] for call in model_calls(path)]
    assert urls[0].endswith("/v1/messages/count_tokens")
    assert urls[1].endswith("/v1/messages?beta=true")
    with Replayer(path) as replay, model_endpoint(upstream="http://127.0.0.1:9") as endpoint:
        assert post(endpoint.url, endpoint.port, "/v1/messages/count_tokens", ask) == counted
        assert (
            post(endpoint.url, endpoint.port, "/v1/messages?beta=true", {**ask, "max_tokens": 50}) == answered
        )
    assert replay.report.served_http == 2
    assert endpoint.forwarded == 0


def test_with_no_run_active_nothing_is_answered_nor_forwarded() -> None:
    with SimServer(script()) as sim, model_endpoint(upstream=sim.url) as endpoint:
        status, body = post(endpoint.url, endpoint.port, "/v1/messages", {"model": "m", "max_tokens": 1})
        assert sim.requests == []
        assert endpoint.forwarded == 0
    assert status == 403  # final for a client that is not an anthropic SDK (endpoint/final.py)
    assert body["error"]["type"] == "permission_error"
    assert "no run is being recorded or replayed" in body["error"]["message"]


@pytest.mark.parametrize(
    ("agent", "answer"),
    [
        ("Anthropic/Python 2.16.0", (500, "api_error")),
        ("Anthropic/JS 0.60.0", (500, "api_error")),
        ("claude-cli/2.1.3 (external, sdk-py)", (500, "api_error")),  # a 403 reads as a failed login
        ("litellm/1.110.2", (403, "permission_error")),  # a 500 is retried by litellm's agents
        ("OpenAI/Python 3.57.0", (403, "permission_error")),
        ("", (403, "permission_error")),
    ],
)
def test_a_final_refusal_takes_the_form_its_client_obeys(agent: str, answer: tuple[int, str]) -> None:
    assert final_answer(agent) == answer


# -- the Claude Code profile's pins -------------------------------------------------------------------


def test_a_childs_environment_holds_the_profiles_pins_and_the_callers_own_values_win() -> None:
    with ModelEndpoint(upstream="http://127.0.0.1:9", environ={"ENABLE_TOOL_SEARCH": "true"}) as endpoint:
        env = endpoint.env
    assert env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] == "1"
    assert env["CLAUDE_CODE_DISABLE_AUTO_MEMORY"] == "1"
    assert env["ENABLE_TOOL_SEARCH"] == "true"  # set by the caller: kept, and said so in the trace
    assert endpoint.kept == {"ENABLE_TOOL_SEARCH": "true"}


def test_a_claude_code_recording_states_what_was_pinned_once_and_sdk_traffic_states_nothing(
    tmp_path: Path,
) -> None:
    ask = {"model": agent.MODEL, "max_tokens": 50, "messages": [{"role": "user", "content": "hi"}]}
    traces = {}
    for name, user_agent in [("cli", "claude-cli/2.1.332 (external, cli)"), ("sdk", "Anthropic/Python 1.0")]:
        traces[name] = tmp_path / f"{name}.trace.jsonl"
        with (
            SimServer(script(2)) as sim,
            Recorder(traces[name], http=False),
            ModelEndpoint(upstream=sim.url, environ={}) as endpoint,
        ):
            for _ in range(2):
                connection = http.client.HTTPConnection("127.0.0.1", endpoint.port, timeout=30)
                headers = {"content-type": "application/json", "user-agent": user_agent}
                headers["x-api-key"] = make_fake_key("raw")
                path = endpoint.url.split(str(endpoint.port), 1)[1] + "/v1/messages"
                connection.request("POST", path, json.dumps(ask), headers)
                assert connection.getresponse().status == 200
    notes = [e for e in read_trace(traces["cli"]) if e["type"] == "note"]
    assert len(notes) == 1  # once per recording, not per request
    assert notes[0]["message"].startswith("endpoint: claude-code 2.1.332 recorded through the claude-code")
    assert "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1" in notes[0]["message"]
    assert "--setting-sources '' --strict-mcp-config" in notes[0]["message"]
    assert notes[0]["data"]["kept"] == {}
    assert not [e for e in read_trace(traces["sdk"]) if e["type"] == "note"]
