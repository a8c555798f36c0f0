"""Secrets never reach a file, in any form (issue 8, items 1-7), and recording never fails a run
that works unrecorded (item 13).

Every test writes through the real code paths (the SDK against the simulated server, httpx against a
loopback server, real pytest runs, the CLI as a subprocess) and then greps every file written for
each secret in every form it could take: raw, JSON-escaped, percent-encoded and base64.
"""

from __future__ import annotations

import base64
import gzip
import http.server
import io
import json
import sqlite3
import tarfile
import tempfile
import threading
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote, quote_plus

import anthropic
import httpx2 as httpx
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

import pytest_agentevals as ae
from pytest_agentevals.guards import LoopGuard
from pytest_agentevals.report import scan
from pytest_agentevals.sim import Reply, SimServer
from pytest_agentevals.trace import TraceWriter, streams
from pytest_agentevals.trace.scrub import NOT_SECRETS, REDACTED, Scrubber, is_secret_header
from pytest_agentevals.trace.writer import serialize

from ..conftest import make_fake_key, run_agentevals
from ..schema_support import read_valid

MODEL = "claude-sonnet-4-6"


def forms(secret: str) -> set[bytes]:
    """Every form a secret could reach a file in: raw, JSON-escaped (either way), percent-encoded,
    and base64 at each of the three alignments (the part that does not depend on its neighbours)."""
    raw = secret.encode("utf-8")
    found = {
        raw,
        json.dumps(secret)[1:-1].encode(),
        json.dumps(secret, ensure_ascii=False)[1:-1].encode("utf-8"),
        quote(secret, safe="").encode(),
        quote_plus(secret).encode(),
    }
    for shift in range(3):
        encoded = base64.b64encode(b"\0" * shift + raw)
        found.add(encoded[4 if shift else 0 : -4])
    return found


def written_files(folder: Path) -> list[Path]:
    return [path for path in folder.rglob("*") if path.is_file() and "__pycache__" not in path.parts]


def assert_nowhere(folder: Path, *secrets: str) -> None:
    """No secret, in any of its forms, in any file below `folder`."""
    paths = written_files(folder)
    assert paths
    for path in paths:
        data = path.read_bytes()
        for secret in secrets:
            for form in forms(secret):
                assert form not in data, f"{secret[:10]}... reached {path} as {form[:30]!r}"


validate = read_valid  # every line valid against the documented schema; the reader reads it all


# -- 1. streamed content -------------------------------------------------------------------------------


def test_a_key_streamed_in_pieces_is_scrubbed_joined_and_the_stream_still_replays(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = make_fake_key("streamed")  # 58 characters: the simulated server streams 32 per piece
    password = 'pa"ss\\word-' + "7" * 12  # JSON-escaped inside the tool input's partial_json
    monkeypatch.setenv("APP_PASSWORD", password)
    answer = Reply.tool_use("login", {"password": password, "key": key}, text=f"the key is {key}, keep it")
    path = tmp_path / "stream.trace.jsonl"
    request = {"model": MODEL, "max_tokens": 100, "messages": [{"role": "user", "content": "log in"}]}
    with SimServer([answer], seed=1) as sim, ae.Recorder(path):
        client = anthropic.Anthropic(base_url=sim.url, api_key="sim", max_retries=0)
        with client.messages.stream(**request) as live:  # type: ignore[arg-type]
            message = live.get_final_message()
    assert message.content[0].text == f"the key is {key}, keep it"  # type: ignore[union-attr]
    assert_nowhere(tmp_path, key, password)

    (call,) = [event for event in validate(path) if event["type"] == "model_call"]
    pieces = streams.blocks(call["response"]["sse"])
    assert [len(block) > 1 for block in pieces] == [True, True]  # the text and the tool input were split
    text, tool_input = (streams.joined(block) for block in pieces)
    assert text == f"the key is {REDACTED}, keep it"
    assert json.loads(tool_input) == {"password": REDACTED, "key": REDACTED}

    with ae.Replayer(path, block_network=False):  # what was stored renders to a stream the SDK parses
        client = anthropic.Anthropic(base_url="http://127.0.0.1:9", api_key="sim", max_retries=0)
        with client.messages.stream(**request) as replayed:  # type: ignore[arg-type]
            again = replayed.get_final_message()
    assert again.content[0].text == f"the key is {REDACTED}, keep it"  # type: ignore[union-attr]
    assert again.content[1].input == {"password": REDACTED, "key": REDACTED}  # type: ignore[union-attr]


def _sse_delta(index: int, text: str) -> dict[str, Any]:
    delta = {"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": text}}
    return {"event": "content_block_delta", "data": delta}


def test_scan_finds_a_key_split_over_stream_pieces(tmp_path: Path) -> None:
    key = make_fake_key("split")
    sse = [_sse_delta(0, "here is " + key[:20]), _sse_delta(0, key[20:40]), _sse_delta(0, key[40:] + ".")]
    call = {"type": "model_call", "seq": 1, "t": 0, "step": 1, "provider": "anthropic", "request": {}}
    lines = [{"type": "run_start"}, {**call, "response": {"status": 200, "sse": sse}}]
    (tmp_path / "split.trace.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert all(key[:30] not in json.dumps(piece) for piece in sse)  # no piece shows it
    result = run_agentevals("scan", ".", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stdout.splitlines() == [f"split.trace.jsonl:2: API-key pattern ({len(key)} characters)"]


def test_scan_finds_a_key_split_over_the_stream_of_a_vcrpy_cassette(tmp_path: Path) -> None:
    key = make_fake_key("vcr")
    events = [_sse_delta(0, "key: " + key[:25]), _sse_delta(0, key[25:] + " ok")]
    body = "".join(f"event: {e['event']}\ndata: {json.dumps(e['data'])}\n\n" for e in events)
    interaction = {
        "request": {"method": "POST", "uri": "https://api.anthropic.com/v1/messages", "body": "{}"},
        "response": {"status": {"code": 200}, "headers": {}, "body": {"string": body}},
    }
    (tmp_path / "cassette.yaml").write_text(yaml.safe_dump({"interactions": [interaction], "version": 1}))
    found = scan.scan([tmp_path], environ={})
    assert len(found) == 1
    assert found[0].startswith(f"{tmp_path / 'cassette.yaml'}:")
    assert found[0].endswith(f": API-key pattern ({len(key)} characters)")


# -- 2. one scrubbing path for every writer ------------------------------------------------------------


def test_a_trace_writer_cannot_be_built_without_its_scrubber(tmp_path: Path) -> None:
    with pytest.raises(TypeError):
        TraceWriter(tmp_path / "a.trace.jsonl", scrub=None)  # type: ignore[call-arg]
    key = make_fake_key("writer")
    with TraceWriter(tmp_path / "b.trace.jsonl", secrets=["opaque-value-1"]) as writer:
        writer.scrubber.add(["opaque-value-2"])
        writer.write(
            {"type": "run_start", "v": 1, "run_id": "r", "agent": "a", "started_at": "", "contract": {}}
        )
        note = {
            "type": "note",
            "seq": 1,
            "t": 0,
            "step": 0,
            "message": f"{key} opaque-value-1 opaque-value-2",
        }
        writer.write(note)
    assert ae.read_trace(tmp_path / "b.trace.jsonl")[1]["message"] == " ".join([REDACTED] * 3)
    assert_nowhere(tmp_path, key, "opaque-value-1", "opaque-value-2")


STEP_CONFTEST = """
import os
import anthropic, pytest
from pytest_agentevals.sim import Reply, SimServer

KEY = os.environ["STEP_KEY"]

@pytest.fixture(scope="session")
def model():
    policy = lambda request: Reply.tool_use("read_file", {"path": "src/a.py"}, text=f"using {KEY}")
    with SimServer(policy, seed=1) as sim:
        yield sim

@pytest.fixture
def agentevals_decide(model):
    url = "http://127.0.0.1:9" if os.environ.get("STEP_OFFLINE") else model.url
    client = anthropic.Anthropic(base_url=url, api_key="test-" + "k" * 12, max_retries=0)
    def decide(case):
        return client.messages.create(
            model="sim-1", max_tokens=200, messages=case.messages, system=f"You are careful. Key: {KEY}",
            extra_query={"key": KEY, "page": "2"},
        )
    return decide
"""

STEP_GOLDENS = """\
cases:
  - id: step-1-tool-choice
    kind: tool_choice
    context:
      request: {messages: [{role: user, content: "please read src/a.py"}]}
    expect: {tool: read_file, args: {path: src/a.py}}
"""


def test_the_decisions_file_is_scrubbed_and_still_replays(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = make_fake_key("decision")
    monkeypatch.setenv("STEP_KEY", key)  # a key-shaped value in no secret-named variable
    goldens = pytester.mkdir("goldens")
    (goldens / "conftest.py").write_text(STEP_CONFTEST)
    (goldens / "demo.yaml").write_text(STEP_GOLDENS)
    args = ("-p", "no:hypothesispytest", "-p", "no:cacheprovider", "goldens")
    pytester.runpytest(*args, "--agentevals-record=new").assert_outcomes(passed=1)
    decisions = goldens / "demo.decisions.trace.jsonl"
    (call,) = ae.read_trace(decisions)[1:-1]
    assert call["request"]["url"].endswith(f"/v1/messages?key={REDACTED}&page=2")
    assert call["request"]["body"]["system"] == f"You are careful. Key: {REDACTED}"
    assert call["response"]["json"]["content"][0]["text"] == f"using {REDACTED}"
    assert_nowhere(pytester.path / "goldens", key)
    assert_nowhere(pytester.path / ".agentevals", key)

    # Offline, the live request still carries the key; it matches its recording scrubbed alike.
    monkeypatch.setenv("STEP_OFFLINE", "1")
    pytester.runpytest(*args).assert_outcomes(passed=1)
    # And a request that changed says so without showing the key.
    (goldens / "demo.yaml").write_text(STEP_GOLDENS.replace("please read", "please open"))
    result = pytester.runpytest(*args, "--junitxml=out.xml")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*is stale: its model request changed*"])
    assert key[:20] not in result.stdout.str()


def test_a_failing_step_case_never_shows_a_key_the_model_echoed(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The failure text goes to the terminal and into the JUnit XML a CI run keeps: a key the model
    said back (live, recording on) is redacted there as in the trace."""
    key = make_fake_key("echoed")
    monkeypatch.setenv("STEP_KEY", key)
    goldens = pytester.mkdir("goldens")
    echoing = STEP_CONFTEST.replace('{"path": "src/a.py"}', '{"path": f"keys/{KEY}"}')
    (goldens / "conftest.py").write_text(echoing)
    (goldens / "demo.yaml").write_text(STEP_GOLDENS)
    args = ("-p", "no:hypothesispytest", "-p", "no:cacheprovider", "goldens", "--junitxml=out.xml")
    result = pytester.runpytest(*args, "--agentevals-record=all")
    result.assert_outcomes(failed=1)
    assert f'"keys/{REDACTED}"' in result.stdout.str()  # it still says what the model said
    assert key[:20] not in result.stdout.str()
    assert key[:20] not in (pytester.path / "out.xml").read_text()
    assert_nowhere(pytester.path, key)


def test_a_test_id_holding_a_key_names_no_file_with_it(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A parametrized id holds its value: the per-test trace's name, the marathon's seed folders
    and its results file carry it redacted (and the history, as before)."""
    key = make_fake_key("named")
    monkeypatch.setenv("NAMED_VALUE", key)  # a key-shaped value in no secret-named variable
    pytester.makeconftest(
        """
        import pytest_agentevals as ae

        def pytest_agentevals_run_agent(run):
            ae.verification("done", True, progress=1.0)
            return "done"
        """
    )
    pytester.makepyfile(
        test_keyed="""
        import os

        import pytest

        import pytest_agentevals as ae

        @pytest.mark.parametrize("token", [os.environ["NAMED_VALUE"]])
        def test_recorded(agentevals_recorder, token):
            ae.note("hello")

        @pytest.mark.parametrize("token", [os.environ["NAMED_VALUE"]])
        @pytest.mark.marathon(seeds=2)
        def test_night(agentevals_marathon, token):
            agentevals_marathon.run_agent()
        """
    )
    # (pytest itself prints the ids it runs: not a file of ours.)
    result = pytester.runpytest("--agentevals-sha=c0ffee", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=3)
    names = [path.relative_to(pytester.path).as_posix() for path in pytester.path.rglob("*")]
    assert any("REDACTED" in name for name in names if name.endswith(".trace.jsonl"))
    assert not [name for name in names if key[:20] in name]
    assert_nowhere(pytester.path, key)


def test_a_replay_matches_a_request_that_carried_a_key_and_never_shows_it(tmp_path: Path) -> None:
    key = make_fake_key("replay")
    path = tmp_path / "keyed.trace.jsonl"

    def ask(client: anthropic.Anthropic, question: str) -> Any:
        messages = [{"role": "user", "content": question}]
        return client.messages.create(model=MODEL, max_tokens=50, system=f"Key: {key}", messages=messages)  # type: ignore[arg-type]

    with SimServer([Reply.text("fine")], seed=1) as sim, ae.Recorder(path):
        ask(anthropic.Anthropic(base_url=sim.url, api_key="sim", max_retries=0), "how are you?")
    assert_nowhere(tmp_path, key)
    offline = anthropic.Anthropic(base_url="http://127.0.0.1:9", api_key="sim", max_retries=0)
    with ae.Replayer(path, block_network=False):
        assert ask(offline, "how are you?").content[0].text == "fine"
    with pytest.raises(ae.ReplayDivergence) as diverged, ae.Replayer(path, block_network=False):
        ask(offline, "how old are you?")
    assert "how old are you?" in str(diverged.value)
    assert key[:20] not in str(diverged.value)


def test_goldens_extracted_from_a_trace_holding_a_key_are_written_without_it(tmp_path: Path) -> None:
    key = make_fake_key("extract")
    trace = tmp_path / "run.trace.jsonl"
    with SimServer([Reply.tool_use("read_file", {"path": "a.py"})], seed=1) as sim, ae.Recorder(trace):
        client = anthropic.Anthropic(base_url=sim.url, api_key="sim", max_retries=0)
        messages = [{"role": "user", "content": "read a.py with KEY_PLACEHOLDER"}]
        client.messages.create(model=MODEL, max_tokens=50, messages=messages)  # type: ignore[arg-type]
    # A trace from elsewhere, never scrubbed: the key is in its request.
    trace.write_text(trace.read_text().replace("KEY_PLACEHOLDER", key))
    out = tmp_path / "goldens" / "x.yaml"
    result = run_agentevals("step", "extract", trace, "--steps", "1", "--output", out, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert f"read a.py with {REDACTED}" in out.read_text()
    assert_nowhere(tmp_path / "goldens", key)


# -- 3. bodies that are not UTF-8 JSON -----------------------------------------------------------------


class _Handler(http.server.BaseHTTPRequestHandler):
    """A loopback server: answers /gzip with a gzip-encoded JSON echo of the `X-Echo` header, and
    anything else with 204."""

    def do_GET(self) -> None:
        body = gzip.compress(json.dumps({"echo": self.headers.get("x-echo", "")}).encode())
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", 0)))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def loopback() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_compressed_and_binary_bodies_are_decoded_and_scrubbed_or_left_out(
    tmp_path: Path, loopback: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = make_fake_key("body")
    token = "opaque-token-" + "5" * 10
    monkeypatch.setenv("UPLOAD_TOKEN", token)
    path = tmp_path / "bodies.trace.jsonl"
    payload = json.dumps({"key": key, "token": token}).encode()
    with ae.Recorder(path), httpx.Client() as client:
        json_headers = {"content-type": "application/json"}
        client.post(
            f"{loopback}/gz",
            content=gzip.compress(payload),
            headers={**json_headers, "content-encoding": "gzip"},
        )
        client.post(
            f"{loopback}/deflate", content=zlib.compress(payload), headers={"content-encoding": "deflate"}
        )
        client.post(f"{loopback}/bin", content=b"\x00\xff" + key.encode() + b"\xfe" + token.encode())
        client.post(f"{loopback}/br", content=b"\x8b\x05" + payload, headers={"content-encoding": "br"})
        client.post(f"{loopback}/bad", content=b"not gzip " + payload, headers={"content-encoding": "gzip"})
        assert client.get(f"{loopback}/echo", headers={"x-echo": key}).json() == {"echo": key}
    assert_nowhere(tmp_path, key, token)

    calls = [event for event in validate(path) if event["type"] == "model_call"]
    bodies = [call["request"].get("body_raw") for call in calls]
    scrubbed = {"key": REDACTED, "token": REDACTED}
    assert bodies[0] == {"json": scrubbed, "decoded": "gzip"}
    assert bodies[1] == {"json": scrubbed, "decoded": "deflate"}  # httpx sent no content-type: JSON assumed
    assert base64.b64decode(bodies[2]["base64"]) == f"\x00\xff{REDACTED}\xfe{REDACTED}".encode("latin-1")
    assert bodies[3] == {
        "omitted": "br-encoded, could not be decoded (so could not be scrubbed)",
        "size": len(payload) + 2,
    }
    assert bodies[4]["omitted"].startswith("gzip-encoded, could not be decoded")
    assert calls[5]["response"]["json"] == {"echo": REDACTED}
    assert calls[5]["response"]["decoded"] == "gzip"


# -- 4. every form of a secret value, values set late, credential header names -------------------------


def test_secret_values_are_caught_json_escaped_percent_encoded_and_when_set_late(
    tmp_path: Path, loopback: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    quoted = 'he said "open sesame" \\ é'  # a value with a quote, a backslash, a space, non-ASCII
    late = "late-loaded-" + "x1" * 8
    path = tmp_path / "forms.trace.jsonl"

    @ae.tool
    def echo(value: Any) -> Any:
        return value

    with ae.Recorder(path, secrets=(quoted,)), httpx.Client() as client:
        echo(json.dumps({"password": quoted}))  # the value JSON-escaped inside a string
        echo(json.dumps({"password": quoted}, ensure_ascii=True))
        echo(f"https://example.test/login?pw={quote(quoted, safe='')}&alt={quote_plus(quoted)}")
        client.post(f"{loopback}/login?pw={quote(quoted)}", content=b"")
        monkeypatch.setenv("LATE_API_KEY", late)  # load_dotenv() after the recording started
        echo(f"now {late}")
    assert_nowhere(tmp_path, quoted, late)
    outputs = [event["output"] for event in validate(path) if event["type"] == "tool_call"]
    assert outputs == [
        json.dumps({"password": REDACTED}),
        json.dumps({"password": REDACTED}),
        f"https://example.test/login?pw={REDACTED}&alt={REDACTED}",
        f"now {REDACTED}",
    ]


def test_headers_named_like_credentials_are_redacted_whatever_their_value(
    tmp_path: Path, loopback: str
) -> None:
    opaque = {
        name: f"value-of-{name}-{i}" * 2
        for i, name in enumerate(
            (
                "x-auth-key",
                "ocp-apim-subscription-key",
                "x-gateway-auth",
                "x-client-credential",
                "proxy-authorization",
            )
        )
    }
    path = tmp_path / "headers.trace.jsonl"
    with ae.Recorder(path), httpx.Client() as client:
        client.post(f"{loopback}/h", content=b"{}", headers={**opaque, "x-request-source": "ci-runner-42"})
    assert_nowhere(tmp_path, *opaque.values())
    (call,) = [event for event in validate(path) if event["type"] == "model_call"]
    headers = call["request"]["headers"]
    assert {name: headers[name] for name in opaque} == dict.fromkeys(opaque, REDACTED)
    assert headers["x-request-source"] == "ci-runner-42"
    for name in ("authorization", "x-api-key", "cookie", "x-amz-security-token", "x-db-password"):
        assert is_secret_header(name), name
    assert not is_secret_header("anthropic-version")
    assert not is_secret_header("content-type")


# -- 5. scrubbing never corrupts a trace ---------------------------------------------------------------


def test_scrubbing_never_corrupts_a_trace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("APP_PASSWORD", "12345678")
    monkeypatch.setenv("EVENT_TOKEN", "odel_call")  # a part of a structural field's value
    monkeypatch.setenv("SHORT_TOKEN", "abc1234")  # shorter than the minimum: not a secret
    monkeypatch.setenv("PLACEHOLDER_SECRET", "changeme")  # a word that cannot be a secret
    monkeypatch.setenv("STARS_PASSWORD", "********")
    path = tmp_path / "corrupt.trace.jsonl"

    @ae.tool
    def lookup() -> Any:
        return {"id": 1234567890, "label": "id 1234567890", "12345678": ["abc1234", "changeme", "********"]}

    with ae.Recorder(path, secrets=("tool_call", "verification")) as recorder:
        lookup()
        request = {"method": "GET", "url": "odel_call"}
        recorder.emit("model_call", provider="http", request=request, response={"status": 200})
        ae.verification("verification done", True)
    events = validate(path)  # every line is JSON, every event type is intact
    assert [event["type"] for event in events] == [
        "run_start",
        "tool_call",
        "model_call",
        "verification",
        "run_end",
    ]
    assert events[1]["output"] == {
        "id": 1234567890,
        "label": f"id {REDACTED}90",
        REDACTED: ["abc1234", "changeme", "********"],
    }
    assert events[2]["request"]["url"] == REDACTED
    assert events[3]["name"] == "verification done"
    assert {"tool_call", "verification", "password", "changeme"} <= NOT_SECRETS


_SPECIAL = st.sampled_from(['"', "\\", " ", "é", "\n", "/", "%", "+", "&", "😀", "\x01"])
_SECRET = st.lists(st.one_of(st.sampled_from("abcXYZ019-_."), _SPECIAL), min_size=8, max_size=20).map("".join)


@st.composite
def _carriers(draw: st.DrawFn) -> tuple[str, Any]:
    """A secret, and a JSON value holding it somewhere in one of its forms (or not at all)."""
    secret = draw(_SECRET.filter(lambda s: len(set(s)) > 1 and s.lower() not in NOT_SECRETS))
    form = draw(
        st.sampled_from(
            [
                secret,
                json.dumps(secret)[1:-1],
                json.dumps(secret, ensure_ascii=False)[1:-1],
                quote(secret, safe=""),
                quote_plus(secret),
                "absent",
            ]
        )
    )
    text = draw(st.text(max_size=5)) + form + draw(st.text(max_size=5))
    where = draw(st.sampled_from(["value", "key", "list", "deep"]))
    value: Any = {
        "value": text,
        "key": {text: 1},
        "list": [1, None, text],
        "deep": {"a": [{"b": text}]},
    }[where]
    return secret, value


@settings(max_examples=300, deadline=None)
@given(_carriers())
def test_the_line_check_never_misses_what_scrubbing_would_change(case: tuple[str, Any]) -> None:
    """The writer walks an event's values only when its serialized line might hold a secret: that
    check must never say no when the walk would change something."""
    secret, value = case
    scrubber = Scrubber([secret], environ={})
    event = {"type": "note", "seq": 1, "t": 0.0, "step": 0, "message": "m", "data": value}
    scrubbed = scrubber.scrub_event(event)
    if scrubbed != event:
        assert scrubber.might_hold(serialize(event))
    assert secret not in json.dumps(scrubbed, ensure_ascii=False)
    assert json.dumps(secret)[1:-1] not in json.dumps(scrubbed)


# -- 6. workspace snapshots and links ------------------------------------------------------------------


def test_a_workspace_snapshot_stores_links_as_links_and_never_reads_through_one(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    private = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA" + "Z" * 40 + "\n"
    (home / ".ssh" / "id_ed25519").write_text(private)
    workspace = tmp_path / "ws"
    (workspace / "src").mkdir(parents=True)
    (workspace / "src" / "a.py").write_text("print(1)\n")
    (workspace / "deploy_key").symlink_to(home / ".ssh" / "id_ed25519")  # absolute, to a file outside
    (workspace / "ssh").symlink_to("../home/.ssh")  # relative, to a folder outside
    (workspace / "src" / "alias.py").symlink_to("a.py")  # inside the workspace: still a link
    (workspace / "dangling").symlink_to("nowhere")
    path = tmp_path / "trace" / "ws.trace.jsonl"
    with ae.Recorder(path, http=False):
        ae.checkpoint({"n": 1}, workspace=workspace)
        (workspace / "src" / "alias.py").unlink()
        (workspace / "src" / "alias.py").symlink_to("../deploy_key")
        ae.checkpoint({"n": 2}, workspace=workspace)
    assert_nowhere(tmp_path / "trace", private.split("\n")[1])
    first, second = [event["workspace"]["files"] for event in validate(path) if event["type"] == "checkpoint"]
    assert first == {
        "dangling": {"link": "nowhere"},
        "deploy_key": {"link": str(home / ".ssh" / "id_ed25519")},
        "src/a.py": first["src/a.py"],
        "src/alias.py": {"link": "a.py"},
        "ssh": {"link": "../home/.ssh"},
    }
    assert first["src/a.py"]["text"] == "print(1)\n"
    assert second == {**first, "src/alias.py": {"link": "../deploy_key"}}
    stored = [json.loads(line) for line in path.read_text().splitlines()]
    assert stored[2]["workspace"]["files"] == {"src/alias.py": {"link": "../deploy_key"}}  # as a delta


@pytest.mark.parametrize("watch", [True, False], ids=["watched", "walked"])
def test_a_file_swapped_for_a_link_during_the_walk_is_not_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, watch: bool
) -> None:
    from pytest_agentevals.workspace import snapshot as snapshots
    from pytest_agentevals.workspace import watch as workspace_watch

    secret_file = tmp_path / "outside.txt"
    secret_file.write_text("outside content " + "Q" * 20)
    root = tmp_path / "ws"
    root.mkdir()
    (root / "f.txt").write_text("inside")
    real_read = snapshots.file_entry

    def swap_then_read(folder: Any, name: str, with_content: bool) -> dict[str, Any] | None:
        (root / name).unlink()
        (root / name).symlink_to(secret_file)  # the race: the walk saw a file, a link is read
        return real_read(folder, name, with_content)

    monkeypatch.setattr(snapshots, "file_entry", swap_then_read)
    monkeypatch.setattr(workspace_watch, "file_entry", swap_then_read)
    snapshotter = snapshots.Snapshotter(watch=watch)
    assert snapshotter.snapshot(root)["files"] == {}
    monkeypatch.setattr(workspace_watch, "file_entry", real_read)
    monkeypatch.setattr(snapshots, "file_entry", real_read)
    # The next snapshot looks again, and stores the link as a link.
    assert snapshotter.snapshot(root)["files"] == {"f.txt": {"link": str(secret_file)}}


# -- 7. history and scan -------------------------------------------------------------------------------


def test_test_ids_holding_a_key_are_scrubbed_on_the_way_into_the_history(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = make_fake_key("param")
    db_password = "db-password-" + "3" * 8
    monkeypatch.setenv("DB_PASSWORD", db_password)
    pytester.makepyfile(
        f"""
        import pytest

        @pytest.mark.parametrize("credential", [{key!r}, {db_password!r}])
        def test_login(credential):
            assert credential
        """
    )
    pytester.runpytest("-p", "no:cacheprovider", "--agentevals-sha=c1").assert_outcomes(passed=2)
    history = pytester.path / ".agentevals" / "history.sqlite"
    with sqlite3.connect(history) as conn:
        ids = [row[0] for row in conn.execute("SELECT test_id FROM attempt_rows")]
    # Both ids differ only in their secret, so they become one test of the history (docs/security.md).
    module = "test_test_ids_holding_a_key_are_scrubbed_on_the_way_into_the_history.py"
    assert ids == [f"{module}::test_login[{REDACTED}]"] * 2
    assert_nowhere(pytester.path / ".agentevals", key, db_password)


JUNIT = """\
<testsuite name="pytest" tests="1">
  <testcase classname="tests.test_api" name="test_call[{key}]" time="0.1" />
</testsuite>
"""


def test_junit_ids_holding_a_key_are_scrubbed_on_ingest(tmp_path: Path) -> None:
    key = make_fake_key("junit")
    (tmp_path / "junit.xml").write_text(JUNIT.format(key=key))
    result = run_agentevals(
        "flaky", "ingest", "junit.xml", "--sha", "abc", "--history", "h.sqlite", cwd=tmp_path, bare_env=True
    )
    assert result.returncode == 0, result.stderr
    with sqlite3.connect(tmp_path / "h.sqlite") as conn:
        assert [row[0] for row in conn.execute("SELECT test_id FROM tests")] == [
            f"tests/test_api.py::test_call[{REDACTED}]"
        ]
    (tmp_path / "junit.xml").unlink()
    assert_nowhere(tmp_path, key)


def test_ingest_scrubs_each_id_once_yet_every_occurrence_of_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ingest scrubs each distinct test id once (issue 22, item 2): the id's second file is scrubbed
    from the memo all the same, and a secret that enters the environment between two files drops
    the memo, so an id that was clean before is scrubbed after."""
    from pytest_agentevals.history.ingest import Ingester
    from pytest_agentevals.history.sqlite import SQLiteStore

    key = make_fake_key("memo")
    token = "memo-token-" + "7" * 10  # not key-shaped: a secret only once a variable holds it
    monkeypatch.delenv("MEMO_TOKEN", raising=False)
    suite = '<testsuite name="pytest" tests="2">{}</testsuite>'
    case = '<testcase classname="tests.test_api" name="{}" time="0.{}" />'  # each file its own bytes
    files = []
    for number in range(3):
        path = tmp_path / f"junit{number}.xml"
        cases = case.format(f"test_call[{key}]", number) + case.format(f"test_as[{token}]", number)
        path.write_text(suite.format(cases))
        files.append(path)
    store = SQLiteStore(tmp_path / "h.sqlite")
    ingester = Ingester(store, tmp_path)
    ingester.ingest(files[:1], sha="a", run_id="r0")
    ingester.ingest(files[1:2], sha="b", run_id="r1")  # the key's id again: from the memo
    monkeypatch.setenv("MEMO_TOKEN", token)
    ingester.ingest(files[2:], sha="c", run_id="r2")
    ids = [(a.sha, a.test_id) for a in store.attempts()]
    store.close()
    assert sorted(ids) == [
        ("a", f"tests/test_api.py::test_as[{token}]"),  # not a secret then
        ("a", f"tests/test_api.py::test_call[{REDACTED}]"),
        ("b", f"tests/test_api.py::test_as[{token}]"),
        ("b", f"tests/test_api.py::test_call[{REDACTED}]"),
        ("c", f"tests/test_api.py::test_as[{REDACTED}]"),
        ("c", f"tests/test_api.py::test_call[{REDACTED}]"),
    ]
    assert ingester.scrubber.redactions == 4  # each occurrence counted, memo or not


def test_the_scrubbers_memo_answers_as_scrub_text_does() -> None:
    scrubber = Scrubber(["given-secret-1"], environ={})
    plain = Scrubber(["given-secret-1"], environ={})
    texts = ["short", "a given-secret-1 here", "nothing at all here", make_fake_key("m")]
    texts += texts
    scrub = scrubber.memo()
    assert [scrub(t) for t in texts] == [plain.scrub_text(t) for t in texts]
    assert scrubber.redactions == plain.redactions == 4
    scrubber.add(["nothing at all"])  # a secret added later: the next memo knows it
    assert scrubber.memo()("nothing at all here") == f"{REDACTED} here"


def test_a_remembered_blob_is_scrubbed_at_every_occurrence_and_forgotten_with_new_secrets(
    tmp_path: Path,
) -> None:
    """The scrubber remembers each base64 blob's verdict (issue 22, item 2): a blob holding a key is
    replaced in every event that repeats it, and one found clean is searched again once the secrets
    change."""
    key = make_fake_key("blob")
    later = "later-secret-" + "5" * 12
    holding = base64.b64encode(f'{{"state": "{key}"}}'.encode()).decode()
    clean_now = base64.b64encode(f'{{"state": "{later}"}}'.encode()).decode()
    path = tmp_path / "blobs.trace.jsonl"
    environ: dict[str, str] = {}
    with TraceWriter(path) as writer:
        writer.scrubber = Scrubber(environ=environ)
        for number in range(2):
            writer.write({"type": "note", "seq": number, "blob": holding, "other": clean_now})
        environ["LATER_TOKEN"] = later
        writer.write({"type": "note", "seq": 2, "other": clean_now})
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [line["blob"] == holding for line in lines[:2]] == [False, False]
    assert [line["other"] == clean_now for line in lines] == [True, True, False]
    assert_nowhere(tmp_path, key)  # `later` was no secret when the first two lines were written


def _tar(members: dict[str, bytes], links: dict[str, str] | None = None) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
        for name, target in (links or {}).items():
            info = tarfile.TarInfo(name)
            info.type = tarfile.SYMTYPE
            info.linkname = target
            archive.addfile(info)
    return buffer.getvalue()


def test_bare_scan_reads_cassettes_goldens_fixtures_and_the_history(tmp_path: Path) -> None:
    key = make_fake_key("scan")
    token = "svc-token-" + "8" * 10
    (tmp_path / "pyproject.toml").write_text("[tool.agentevals]\n")
    (tmp_path / "cassettes").mkdir()
    (tmp_path / "cassettes" / "run.trace.jsonl").write_text('{"a": 1}\n' + json.dumps({"k": token}) + "\n")
    (tmp_path / "goldens").mkdir()
    (tmp_path / "goldens" / "case.yaml").write_text(
        f"cases:\n  - id: x\n    note: >-\n      folded\n      {key}\n"
    )
    fixture = tmp_path / "fixtures" / "hour-20"
    fixture.mkdir(parents=True)
    (fixture / "state.json").write_text(json.dumps({"plan": "ok"}, indent=2))
    (fixture / "notes.txt").write_text(f"line one\nuse {token}\n")
    archive = _tar(
        {"src/config.env": f"A=1\nKEY={key}\n".encode(), "../../escape.txt": b"never written"},
        links={"link": f"/tmp/{token}"},
    )
    (fixture / "workspace.tar.gz").write_bytes(archive)
    (fixture / "blob.bin").write_bytes(b"\xff\xfe\x00" + key.encode() + b"\x00")
    outside = tmp_path.parent / f"{tmp_path.name}-outside.txt"
    outside.write_text(f"KEY={key}\n")
    (fixture / "linked.txt").symlink_to(outside)  # its target's content is never read
    (tmp_path / ".agentevals").mkdir()
    with sqlite3.connect(tmp_path / ".agentevals" / "history.sqlite") as conn:
        conn.execute("CREATE TABLE tests (id INTEGER PRIMARY KEY, test_id TEXT, note BLOB)")
        conn.execute(
            "INSERT INTO tests (test_id, note) VALUES ('clean', NULL), (?, ?)", (f"t[{key}]", token.encode())
        )
    (tmp_path / "elsewhere.json").write_text(json.dumps({"k": key}))  # not in a default place

    result = run_agentevals("scan", cwd=tmp_path, env={"SVC_TOKEN": token})
    archive_at = "fixtures/hour-20/workspace.tar.gz"
    assert result.returncode == 1, result.stderr
    assert sorted(result.stdout.splitlines()) == sorted(
        [
            "cassettes/run.trace.jsonl:2: the value of $SVC_TOKEN (20 characters)",
            f"goldens/case.yaml:5: API-key pattern ({len(key)} characters)",
            "fixtures/hour-20/notes.txt:2: the value of $SVC_TOKEN (20 characters)",
            f"{archive_at}::src/config.env:2: API-key pattern ({len(key)} characters)",
            f"{archive_at}::link: the value of $SVC_TOKEN (20 characters)",
            f"fixtures/hour-20/blob.bin: API-key pattern ({len(key)} characters)",
            f".agentevals/history.sqlite:tests.test_id:2: API-key pattern ({len(key)} characters)",
            ".agentevals/history.sqlite:tests.note:2: the value of $SVC_TOKEN (20 characters)",
        ]
    ), result.stdout
    assert "8 file(s) scanned" in result.stderr
    assert not (tmp_path.parent / "escape.txt").exists()
    assert not (tmp_path / "src").exists()  # nothing was extracted


def test_scan_finds_a_secret_in_a_name_and_never_prints_it(tmp_path: Path) -> None:
    key = make_fake_key("name")
    (tmp_path / f"incident-{key}.trace.jsonl").write_text('{"a": 1}\n')  # clean content
    archive = _tar({f"keys/{key}.txt": f"KEY={key}\n".encode()})
    (tmp_path / "workspace.tar").write_bytes(archive)
    result = run_agentevals("scan", ".", cwd=tmp_path)
    assert result.returncode == 1
    assert key[:20] not in result.stdout + result.stderr
    masked = f"API-key pattern ({len(key)} characters)"
    assert sorted(result.stdout.splitlines()) == sorted(
        [
            f"incident-{REDACTED}.trace.jsonl (its path): {masked}",
            f"workspace.tar::keys/{REDACTED}.txt: {masked}",
            f"workspace.tar::keys/{REDACTED}.txt:1: {masked}",
        ]
    ), result.stdout


def test_scan_of_an_archive_is_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "big.tar.gz").write_bytes(_tar({"a.txt": b"a" * 5000, "b.txt": b"b" * 5000}))
    monkeypatch.setattr(scan, "MAX_MEMBER_BYTES", 4000)
    monkeypatch.setattr(scan, "MAX_ARCHIVE_BYTES", 8000)
    found = scan.scan([tmp_path], environ={})
    big = tmp_path / "big.tar.gz"
    assert found == [
        f"{big}::a.txt: not scanned: 5000 bytes, over the bound",
        f"{big}::b.txt: not scanned: the archive is over the scan's bounds",
    ]


# -- 13. a recording never makes an agent fail ---------------------------------------------------------


class _Unprintable:
    def __repr__(self) -> str:
        raise RuntimeError("no repr")


class _Mute(Exception):
    def __str__(self) -> str:
        raise ValueError("no str")


@pytest.mark.parametrize("guarded", [False, True], ids=["plain", "loop-guard"])
def test_values_json_cannot_hold_are_stored_as_documented_and_the_agent_goes_on(
    tmp_path: Path, guarded: bool
) -> None:
    circular: dict[str, Any] = {"name": "loop"}
    circular["self"] = circular
    huge = 10**5000
    weird = _Unprintable()
    values = {"listing": ["caf\udce9.txt"], "circular": circular, "huge": huge, "weird": weird}

    @ae.tool
    def give(which: str) -> Any:
        return values[which]

    @ae.tool
    def mute() -> None:
        raise _Mute()

    path = tmp_path / "odd.trace.jsonl"
    # The loop guard fingerprints every tool action live: it must not fail on these values either.
    with ae.Recorder(path, http=False, guards=[LoopGuard()] if guarded else ()):
        for which, value in values.items():
            assert give(which) is value  # the agent gets the real value, unchanged
        with pytest.raises(_Mute):
            mute()
        ae.checkpoint({"huge": huge, tuple([1, 2]): "tuple key"})  # type: ignore[dict-item]
        ae.note("odd", path=Path("caf\udce9"))
    events = validate(path)
    outputs = [event.get("output") for event in events if event["type"] == "tool_call"]
    assert outputs[:4] == [
        ["caf\\udce9.txt"],
        {"name": "loop", "self": "<dict: circular reference, not stored again>"},
        f"<integer of {huge.bit_length()} bits: {huge:#x}>",
        "<_Unprintable: repr() raised RuntimeError>",
    ]
    assert events[5]["error"] == {
        "type": "tests.trace.test_secrets._Mute",
        "message": "<str() raised ValueError>",
    }
    assert events[6]["state"] == {"huge": outputs[2], "(1, 2)": "tuple key"}
    assert events[7]["data"] == {"path": "caf\\udce9"}
    assert events[-1]["status"] == "ok"


_ODD_TEXT = st.text(st.one_of(st.characters(), st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF)))
_ODD_LEAF = st.one_of(
    _ODD_TEXT,
    st.integers(),
    st.integers(min_value=10**4300, max_value=10**4400),
    st.floats(allow_nan=False),
    st.binary(max_size=20),
    st.builds(_Unprintable),
)
_ODD = st.recursive(
    _ODD_LEAF,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.lists(inner, max_size=4).map(tuple),
        st.dictionaries(st.one_of(_ODD_TEXT, st.integers(), st.tuples(st.integers())), inner, max_size=4),
    ),
    max_leaves=12,
)


@settings(max_examples=150, deadline=None)
@given(_ODD, st.booleans())
def test_the_writer_stores_any_value_and_the_trace_reads(value: Any, circular: bool) -> None:
    if circular:
        value = [value]
        value.append(value)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "any.trace.jsonl"
        with ae.Recorder(path, http=False):
            ae.note("anything", value=value)
        events = ae.read_trace(path)
    assert [event["type"] for event in events] == ["run_start", "note", "run_end"]
