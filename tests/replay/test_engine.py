"""The replay engine from plain Python: the real anthropic SDK against recordings of the sim server."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
from pathlib import Path
from typing import Any

import anthropic
import pytest
import vcr

import pytest_agentevals as ae
from pytest_agentevals.contract import tolerances
from pytest_agentevals.errors import CassetteError, ReplayDivergence, StaleCassette, UnrecordedRequest
from pytest_agentevals.replay import RecordedToolError, Replayer, load_cassette
from pytest_agentevals.replay import network as guard
from pytest_agentevals.sim import Reply

from .. import replay_support as agent

TASK = "Fix the bug in a.txt"
REREC = "re-record it (pytest --agentevals-record=all, or agentevals record)"


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    return agent.record(tmp_path / "fix.trace.jsonl")


@pytest.fixture(autouse=True)
def _fresh_files() -> Any:
    saved = dict(agent.FILES)
    agent.EXECUTED.clear()
    yield
    agent.FILES.clear()
    agent.FILES.update(saved)


def rewrite(path: Path, edit: Any) -> None:
    """Apply `edit(events)` to a trace's resolved events and write it back whole (no deltas)."""
    events = ae.read_trace(path)
    edit(events)
    path.write_text("".join(json.dumps(e) + "\n" for e in events))


def test_strict_replay_serves_the_recording_without_running_tools(trace: Path) -> None:
    with Replayer(trace) as replay:
        answer = agent.run_agent(agent.client(), TASK)
    assert answer == "Fixed: add() now adds."
    assert agent.EXECUTED == []
    assert replay.report.summary().endswith(
        "served 4 of 4 recorded HTTP exchanges, 3 of 3 tool calls; no divergence"
    )


def test_a_recorded_tool_exception_is_raised_again(trace: Path) -> None:
    replay = Replayer(trace).start()
    assert agent.read_file("a.txt") == "def add(a, b):\n    return a - b\n"
    with pytest.raises(FileNotFoundError, match=r"no such file: missing\.txt"):
        agent.read_file("missing.txt")
    with pytest.raises(ReplayDivergence, match="earlier than the recording"):
        replay.stop()
    assert agent.EXECUTED == []


def test_a_changed_prompt_fails_at_once_with_a_diff_and_candidates(trace: Path) -> None:
    replay = Replayer(trace)
    with pytest.raises(ReplayDivergence) as caught, replay:
        agent.run_agent(agent.client(max_retries=3), "Fix the bug in b.txt")
    message = str(caught.value)
    assert message.splitlines()[0] == (
        f"replay diverged at model call 1 of the run: the request differs from recorded model call 1 "
        f"(step 1, line 2) of {trace} in message 0 (user), field content"
    )
    assert "    recorded: 'Fix the bug in a.txt'" in message
    assert "    now:      'Fix the bug in b.txt'" in message
    assert "nearest recorded requests:\n  - recorded model call 1 (step 1, line 2)" in message
    assert 'replay_mode="sequential"' in message
    # Raised from inside the transport, once: the SDK neither retried nor wrapped it.
    assert not isinstance(caught.value, anthropic.APIConnectionError)
    assert replay.report.served_http == 0


def test_a_divergence_deep_in_the_history_names_the_message_and_field(trace: Path) -> None:
    # The tool now answers something else: the model's next request carries it in its history.
    rewrite(
        trace, lambda events: next(e for e in events if e["type"] == "tool_call").update(output="changed")
    )
    with pytest.raises(ReplayDivergence) as caught, Replayer(trace):
        agent.run_agent(agent.client(), TASK)
    lines = str(caught.value).splitlines()
    assert "model call 2 of the run" in lines[0]
    assert lines[0].endswith("in message 2 (user), field content[0].content")
    assert lines[1:8] == [
        "  messages[2].content[0].content:",
        "    --- recorded",
        "    +++ now",
        "    @@ -1,2 +1 @@",
        "    -def add(a, b):",
        "    -    return a - b",
        "    +changed",
    ]
    assert "  - recorded model call 2 (step 2, line 4): same first 2 of 3 recorded messages" in str(
        caught.value
    )


def test_an_error_the_harness_swallows_still_fails_the_replay(trace: Path) -> None:
    def supervisor() -> None:
        with contextlib.suppress(Exception):  # a harness that restarts on any error
            agent.run_agent(agent.client(), "Fix the bug in b.txt")
        with pytest.raises(ReplayDivergence):  # every later request fails too
            agent.run_agent(agent.client(), TASK)

    with pytest.raises(ReplayDivergence, match="model call 1 of the run"), Replayer(trace):
        supervisor()


def test_a_request_past_the_end_of_the_recording_is_unrecorded(trace: Path) -> None:
    def run_and_ask_once_more() -> None:
        agent.run_agent(agent.client(), TASK)
        agent.client().messages.create(
            model=agent.MODEL, max_tokens=10, messages=[{"role": "user", "content": "hi"}]
        )

    with pytest.raises(UnrecordedRequest) as caught, Replayer(trace):
        run_and_ask_once_more()
    assert str(caught.value) == (
        f"model call 5 of the run (POST /v1/messages) is not in the recording {trace}: all 4 recorded "
        "POST /v1/messages exchanges were already served: the run goes on past the recording. Nothing was "
        "sent: the network is blocked during a replay. Re-record the cassette (pytest "
        "--agentevals-record=all, or agentevals record), or with --agentevals-record=new let requests "
        "missing from it go live and be added"
    )


def test_a_route_never_recorded_is_unrecorded(trace: Path) -> None:
    with (
        pytest.raises(UnrecordedRequest, match=r"the recording holds no GET /v1/models request"),
        Replayer(trace),
    ):
        agent.client().models.list()


def test_a_run_that_stops_early_is_a_divergence_in_strict_mode(trace: Path) -> None:
    with pytest.raises(ReplayDivergence) as caught, Replayer(trace):
        agent.run_agent(agent.client(), TASK, max_steps=2)
    assert "the run ended after 2 HTTP call(s) and 2 tool call(s), earlier than the recording" in str(
        caught.value
    )
    assert "2 recorded HTTP exchange(s) were never requested, from recorded model call 3 (step 3" in str(
        caught.value
    )


def test_a_tool_called_with_other_arguments_is_a_divergence(trace: Path) -> None:
    with pytest.raises(ReplayDivergence) as caught, Replayer(trace):
        agent.read_file("b.txt")
    assert str(caught.value).splitlines()[:4] == [
        "replay diverged at tool call 1 of the run: 'read_file' was called with other arguments "
        "than recorded tool call 1 'read_file' (step 1, line 3)",
        "  input.path:",
        "    recorded: 'a.txt'",
        "    now:      'b.txt'",
    ]


def test_sequential_mode_serves_in_order_and_reports_divergences(trace: Path) -> None:
    with Replayer(trace, mode="sequential") as replay:
        answer = agent.run_agent(agent.client(), "Fix the bug in a.txt, quickly")
    assert answer == "Fixed: add() now adds."
    report = replay.report
    assert [d.kind for d in report.divergences] == ["model"] * 4
    assert report.divergences[0].headline == (
        "model call 1: the request differs from recorded model call 1 (step 1, line 2) in message 0 (user), "
        "field content; served the recorded response"
    )
    assert "    now:      'Fix the bug in a.txt, quickly'" in report.text()


def test_sequential_divergences_are_noted_in_the_trace_of_the_replayed_run(
    trace: Path, tmp_path: Path
) -> None:
    out = tmp_path / "replayed.trace.jsonl"
    with ae.Recorder(out, task="changed"), Replayer(trace, mode="sequential"):
        agent.run_agent(agent.client(), "changed")
    events = ae.read_trace(out)
    notes = [e for e in events if e["type"] == "note"]
    assert notes[0]["message"] == "replay divergence"
    assert notes[0]["data"]["call"] == 1
    assert sum(e["type"] == "model_call" for e in events) == 4


def test_stale_tool_schema_fails_before_any_step_with_the_differences(trace: Path) -> None:
    tools = [dict(agent.TOOLS[0], description="Read one file."), agent.TOOLS[1]]
    with pytest.raises(StaleCassette) as caught, Replayer(trace, rerecord="make cassettes"):
        agent.run_agent(agent.client(), TASK, tools=tools)
    message = str(caught.value)
    assert message.startswith(
        f"{trace}: the cassette is stale: it was recorded against another environment:\n"
    )
    assert "  - tool 'read_file': schema changed (description)\n" in message
    assert message.endswith("Re-record it: make cassettes")


def test_stale_package_versions_fail_when_the_replay_starts(trace: Path) -> None:
    rewrite(trace, lambda events: events[0]["contract"]["packages"].update(anthropic="0.0.1"))
    with pytest.raises(StaleCassette) as caught:
        Replayer(trace).start()
    assert f"  - package anthropic: recorded with 0.0.1, now {anthropic.__version__}" in str(caught.value)


def _other_version(level: str) -> str:
    """A version of the installed anthropic SDK that differs from it at `level` (an older minor
    release where there is one)."""
    major, minor = (int(part) for part in anthropic.__version__.split(".")[:2])
    if level == "major":
        return f"{major + 1}.{minor}.0"
    return f"{major}.{minor - 1 if minor else minor + 1}.0"


def test_a_tolerated_package_drift_replays_and_says_so_in_the_report(trace: Path) -> None:
    older = _other_version("minor")
    rewrite(trace, lambda events: events[0]["contract"]["packages"].update(anthropic=older))
    with Replayer(trace, tolerate=tolerances("t", ["packages.anthropic:minor"])) as replay:
        assert agent.run_agent(agent.client(), TASK) == "Fixed: add() now adds."
    assert [(d.key, d.recorded, d.now, d.severity) for d in replay.report.tolerated] == [
        ("packages.anthropic", older, anthropic.__version__, "minor")
    ]
    assert replay.report.summary().endswith(
        "3 of 3 tool calls; no divergence; contract drift tolerated (contract_tolerate): "
        "packages.anthropic (minor)"
    )
    assert (
        replay.report.text()
        .splitlines()[3]
        .startswith(f"  packages.anthropic | {older}   | {anthropic.__version__} | minor (tolerated)")
    )


def test_a_drift_beyond_the_tolerance_is_stale(trace: Path) -> None:
    newer = _other_version("major")
    rewrite(trace, lambda events: events[0]["contract"]["packages"].update(anthropic=newer))
    replay = Replayer(trace, tolerate=tolerances("t", ["packages.anthropic:minor", "python"]))
    with pytest.raises(StaleCassette) as caught:
        replay.start()
    assert f"  - package anthropic: recorded with {newer}, now {anthropic.__version__}\n" in str(caught.value)
    assert replay.report.tolerated == []


def test_a_tolerated_tool_leaves_the_others_in_the_stale_message(trace: Path) -> None:
    tools = [dict(agent.TOOLS[0], description="Read one file.")]  # read_file changed, write_file gone
    replay = Replayer(trace, tolerate=tolerances("t", ["tools.read_file"]))
    with pytest.raises(StaleCassette) as caught, replay:
        agent.run_agent(agent.client(), TASK, tools=tools)
    lines = str(caught.value).splitlines()
    assert lines[1].startswith("  - tool schemas: sha256 ")
    assert lines[2:] == ["  - tool 'write_file': removed", f"Re-record it: {REREC}"]
    assert [(d.key, d.severity) for d in replay.report.tolerated] == [("tools.read_file", "changed")]


def test_tools_in_another_order_are_stale_whatever_the_tolerances(trace: Path) -> None:
    replay = Replayer(trace, tolerate=tolerances("t", ["tools.*"]))
    with pytest.raises(StaleCassette) as caught, replay:
        agent.run_agent(agent.client(), TASK, tools=agent.TOOLS[::-1])
    assert "  - tools: the same schemas in another order\n" in str(caught.value)


def test_a_tolerated_model_in_a_sequential_replay(trace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(agent, "MODEL", "sim-replay-2")
    stale = pytest.raises(StaleCassette, match="  - model: recorded 'sim-replay-1', now 'sim-replay-2'")
    with stale, Replayer(trace, mode="sequential"):
        agent.run_agent(agent.client(), TASK)
    with Replayer(trace, mode="sequential", tolerate=tolerances("t", ["model"])) as replay:
        assert agent.run_agent(agent.client(), TASK) == "Fixed: add() now adds."
    assert [(d.key, d.recorded, d.now) for d in replay.report.tolerated] == [
        ("model", "sim-replay-1", "sim-replay-2")
    ]
    assert len(replay.report.divergences) == 4  # every request names the other model


@pytest.mark.parametrize(
    ("damage", "expected"),
    [
        (lambda lines: [*lines[:2], "{not json\n", *lines[3:]], ":3: the line is not valid JSON"),
        (
            lambda lines: [*lines[:-1], lines[-1][:20]],
            ":9: the last line is incomplete: the recording was cut off mid-write",
        ),
        (lambda lines: lines[:-1], ":8: the recording ends after 8 events without a run_end event"),
        (lambda lines: [], ":1: no complete event"),
    ],
    ids=["corrupt", "torn", "no-run-end", "empty"],
)
def test_a_damaged_cassette_is_an_error_naming_file_and_line(trace: Path, damage: Any, expected: str) -> None:
    lines = trace.read_text().splitlines(keepends=True)
    trace.write_text("".join(damage(lines)))
    with pytest.raises(CassetteError) as caught:
        Replayer(trace)
    assert str(caught.value).startswith(str(trace) + expected)
    assert "re-record" in str(caught.value) or "promote" in str(caught.value)


def test_a_missing_cassette_says_how_to_record_it(tmp_path: Path) -> None:
    with pytest.raises(CassetteError) as caught:
        Replayer(tmp_path / "nope.trace.jsonl")
    assert str(caught.value) == (
        f"{tmp_path / 'nope.trace.jsonl'}: no such cassette (record it: pytest --agentevals-record=once, "
        "or `agentevals record`; or check the name)"
    )


def test_the_network_is_blocked_except_loopback(trace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    attempts: list[Any] = []
    # Stand in for the real connect, so nothing could leave the machine even if the guard failed.
    monkeypatch.setattr(socket.socket, "connect", lambda self, address: attempts.append(address))

    def connect(address: tuple[str, int]) -> None:
        with socket.socket() as sock:
            sock.connect(address)

    replay = Replayer(trace, mode="sequential").start()
    connect(("127.0.0.1", 9))
    with pytest.raises(UnrecordedRequest) as caught:
        connect(("203.0.113.7", 443))
    with pytest.raises(UnrecordedRequest):  # caught by the code under test, it still fails the replay
        replay.stop()
    assert attempts == [("127.0.0.1", 9)]
    assert str(caught.value).startswith(
        "a connection to 203.0.113.7:443 (socket.connect) during a replay: the network is blocked"
    )
    assert not guard.blocked()


@pytest.mark.parametrize(
    ("address", "loopback"),
    [
        (("127.0.0.1", 1), True),
        (("127.8.9.1", 1), True),
        (("::1", 1, 0, 0), True),
        (("localhost", 1), True),
        (("::ffff:127.0.0.1", 1, 0, 0), True),
        ("/tmp/sock", True),
        (("10.0.0.1", 1), False),
        (("example.com", 443), False),
        (("2001:db8::1", 1, 0, 0), False),
    ],
)
def test_loopback_addresses(address: Any, loopback: bool) -> None:
    assert guard.is_loopback(address) is loopback


def test_streamed_responses_replay(tmp_path: Path) -> None:
    trace = agent.record(tmp_path / "stream.trace.jsonl", stream=True)
    with Replayer(trace) as replay:
        assert agent.run_agent(agent.client(), TASK, stream=True) == "Fixed: add() now adds."
    assert replay.report.served_http == 4


def test_concurrent_calls_match_by_request_whatever_their_order(tmp_path: Path) -> None:
    questions = [f"question {i}" for i in range(4)]

    async def ask_all(client: anthropic.AsyncAnthropic, order: list[str]) -> list[str]:
        async def ask(question: str) -> str:
            message = await client.messages.create(
                model=agent.MODEL, max_tokens=10, messages=[{"role": "user", "content": question}]
            )
            return message.content[0].text  # type: ignore[union-attr]

        return list(await asyncio.gather(*(ask(q) for q in order)))

    def policy(request: Any) -> Reply:
        return Reply.text("answer to " + request.last_text)

    trace = tmp_path / "async.trace.jsonl"
    with agent.sim(policy) as server, ae.Recorder(trace):  # type: ignore[arg-type]
        recorded = asyncio.run(
            ask_all(anthropic.AsyncAnthropic(base_url=server.url, api_key=agent.fake_key()), questions)
        )
    with Replayer(trace):
        client = anthropic.AsyncAnthropic(api_key=agent.fake_key())
        replayed = asyncio.run(ask_all(client, list(reversed(questions))))
    assert replayed == list(reversed(recorded))


def test_from_step_starts_after_the_checkpoint(tmp_path: Path) -> None:
    trace = tmp_path / "checkpointed.trace.jsonl"
    with agent.sim() as server, ae.Recorder(trace, task=TASK):
        model = agent.client(server.url)
        agent.run_agent(model, TASK, max_steps=2)
        ae.checkpoint({"files": dict(agent.FILES)}, name="after two steps")
        model.messages.create(
            model=agent.MODEL, max_tokens=10, messages=[{"role": "user", "content": "go on"}]
        )
    cassette = load_cassette(trace, from_step=2)
    assert cassette.checkpoint is not None
    assert cassette.checkpoint["state"] == {"files": agent.FILES}
    with Replayer(cassette) as replay:
        agent.client().messages.create(
            model=agent.MODEL, max_tokens=10, messages=[{"role": "user", "content": "go on"}]
        )
    assert replay.report.served_http == 1
    with pytest.raises(CassetteError, match=r"no checkpoint at or before step 1 \(checkpoints at steps: 2\)"):
        load_cassette(trace, from_step=1)


def test_vcrpy_yaml_cassettes_replay_too(tmp_path: Path) -> None:
    cassette = tmp_path / "legacy.yaml"
    with agent.sim() as server, vcr.use_cassette(str(cassette), record_mode="all"):
        agent.run_agent(agent.client(server.url), TASK)
    agent.FILES["a.txt"] = "def add(a, b):\n    return a - b\n"
    agent.EXECUTED.clear()
    with Replayer(cassette) as replay:
        assert agent.run_agent(agent.client(), TASK) == "Fixed: add() now adds."
    assert replay.report.served_http == 4
    assert len(agent.EXECUTED) == 3  # a YAML cassette records HTTP only: tools ran for real
    with (
        pytest.raises(ReplayDivergence, match=r"recorded model call 1 of .*legacy\.yaml in message 0"),
        Replayer(cassette),
    ):
        agent.run_agent(agent.client(), "Fix the bug in b.txt")


def test_a_broken_yaml_cassette_names_the_line(tmp_path: Path) -> None:
    cassette = tmp_path / "broken.yaml"
    cassette.write_text("interactions:\n- request: {method: POST\n  uri: x\n")
    with pytest.raises(CassetteError, match=r"broken\.yaml:\d+: is not valid YAML"):
        Replayer(cassette)


def test_an_unrebuildable_exception_is_raised_as_recorded_tool_error(trace: Path) -> None:
    rewrite(
        trace,
        lambda events: next(e for e in events if e["type"] == "tool_call").update(
            output=None, error={"type": "somewhere.unimported.Boom", "message": "it broke"}
        ),
    )
    with pytest.raises(RecordedToolError, match=r"^somewhere\.unimported\.Boom: it broke$"), Replayer(trace):
        agent.read_file("a.txt")


def test_recorded_retries_replay_in_order_without_waiting_out_the_delay(tmp_path: Path) -> None:
    from pytest_agentevals.sim import Fault

    trace = tmp_path / "retry.trace.jsonl"
    with (
        agent.sim([Fault.overloaded(retry_after=0.01), *agent.script()]) as server,
        ae.Recorder(trace, task=TASK),
    ):
        agent.run_agent(agent.client(server.url, max_retries=2), TASK)
    cassette = load_cassette(trace)
    assert [i.response["status"] for i in cassette.interactions] == [529, 200, 200, 200, 200]
    assert cassette.interactions[0].served_response()["headers"]["retry-after-ms"] == ["1"]
    with Replayer(cassette) as replay:
        assert agent.run_agent(agent.client(max_retries=2), TASK) == "Fixed: add() now adds."
    assert replay.report.served_http == 5
