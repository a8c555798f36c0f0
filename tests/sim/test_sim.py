"""The simulated model server against the real anthropic SDK, over loopback."""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import anthropic
import httpx2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_agentevals.errors import SimError
from pytest_agentevals.sim import Fault, FaultPlan, Reply, SimRequest, SimServer

# Built at run time: nothing shaped like a real key sits in the repository.
API_KEY = "sk-ant-" + "test-" + "x" * 20
MODEL = "claude-sim-1"
HI = [{"role": "user", "content": "hi"}]


def client(sim: SimServer, **options: Any) -> anthropic.Anthropic:
    options.setdefault("max_retries", 0)
    return anthropic.Anthropic(base_url=sim.url, api_key=API_KEY, **options)


def create(c: anthropic.Anthropic, **kwargs: Any) -> anthropic.types.Message:
    kwargs.setdefault("messages", HI)
    return c.messages.create(model=MODEL, max_tokens=kwargs.pop("max_tokens", 200), **kwargs)


# -- plain and streamed answers ------------------------------------------------------------------


def test_plain_text_reply_has_the_messages_shape() -> None:
    with SimServer([Reply.text("Hello, world")], seed=1) as sim:
        raw = client(sim).messages.with_raw_response.create(model=MODEL, max_tokens=50, messages=HI)
        message = raw.parse()
    assert message.content[0].type == "text"
    assert message.content[0].text == "Hello, world"
    assert message.model == MODEL
    assert message.stop_reason == "end_turn"
    assert message.id.startswith("msg_")
    assert raw.headers["request-id"].startswith("req_")
    assert message.usage.input_tokens == sim.requests[0].tokens
    assert message.usage.output_tokens == 3  # 12 characters at four a token
    assert sim.requests[0].body["messages"] == HI
    assert sim.requests[0].last_text == "hi"


def test_streamed_create_yields_the_api_event_sequence() -> None:
    text = "a sentence long enough to arrive in more than one text delta"
    with SimServer([Reply.text(text)]) as sim:
        events = list(create(client(sim), stream=True))
    kinds = [event.type for event in events]
    assert kinds[:2] == ["message_start", "content_block_start"]
    assert kinds[-4:] == ["content_block_delta", "content_block_stop", "message_delta", "message_stop"]
    deltas = [
        e.delta.text for e in events if e.type == "content_block_delta" and e.delta.type == "text_delta"
    ]
    assert len(deltas) > 1
    assert "".join(deltas) == text
    start = events[0]
    assert start.type == "message_start"
    assert start.message.content == []
    assert start.message.stop_reason is None
    end = events[-2]
    assert end.type == "message_delta"
    assert end.delta.stop_reason == "end_turn"
    assert end.usage.output_tokens == sim.replies[0]["usage"]["output_tokens"]


def test_raw_stream_carries_a_ping_and_event_names() -> None:
    with SimServer([Reply.text("pong")]) as sim:
        body = {"model": MODEL, "max_tokens": 10, "messages": HI, "stream": True}
        response = httpx2.post(f"{sim.url}/v1/messages", json=body, headers={"x-api-key": API_KEY})
    assert response.headers["content-type"].startswith("text/event-stream")
    names = [
        line.removeprefix("event: ") for line in response.text.splitlines() if line.startswith("event: ")
    ]
    assert names == [
        "message_start",
        "content_block_start",
        "ping",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]


def test_stream_helper_assembles_tool_use_input_from_json_deltas() -> None:
    arguments = {"path": "notes/todo.md", "content": "line one\nline two " * 5, "mode": {"append": False}}
    script = [Reply.tool_use("write_file", arguments, text="Writing the file.")]
    with (
        SimServer(script, seed=3) as sim,
        client(sim).messages.stream(model=MODEL, max_tokens=500, messages=HI) as stream,
    ):
        json_events = [e for e in stream if e.type == "input_json"]
        final = stream.get_final_message()
    assert len(json_events) > 2
    assert final.stop_reason == "tool_use"
    assert [block.type for block in final.content] == ["text", "tool_use"]
    text, call = final.content
    assert text.type == "text"
    assert text.text == "Writing the file."
    assert call.type == "tool_use"
    assert call.name == "write_file"
    assert call.input == arguments
    assert call.id.startswith("toolu_")
    assert final.usage.output_tokens == sim.replies[0]["usage"]["output_tokens"]


def test_parallel_tool_uses_and_explicit_ids() -> None:
    reply = Reply(
        content=[
            {"type": "tool_use", "id": "toolu_fixed", "name": "read_file", "input": {"path": "a"}},
            {"type": "tool_use", "name": "read_file", "input": {"path": "b"}},
        ]
    )
    with SimServer([reply, Reply.tool_uses([("a", {}), ("b", {"x": 1})])]) as sim:
        c = client(sim)
        first = create(c)
        with c.messages.stream(model=MODEL, max_tokens=100, messages=HI) as stream:
            second = stream.get_final_message()
    assert next(b.id for b in first.content if b.type == "tool_use") == "toolu_fixed"
    assert [(b.name, b.input) for b in second.content if b.type == "tool_use"] == [("a", {}), ("b", {"x": 1})]


def test_async_client_plain_and_streamed() -> None:
    async def main(url: str) -> tuple[str, dict[str, object]]:
        async with anthropic.AsyncAnthropic(base_url=url, api_key=API_KEY, max_retries=0) as c:
            plain = await c.messages.create(model=MODEL, max_tokens=50, messages=HI)
            async with c.messages.stream(model=MODEL, max_tokens=200, messages=HI) as stream:
                final = await stream.get_final_message()
        assert plain.content[0].type == "text"
        assert final.content[0].type == "tool_use"
        return plain.content[0].text, final.content[0].input

    with SimServer([Reply.text("async hello"), Reply.tool_use("run_check", {"task": 7})]) as sim:
        assert asyncio.run(main(sim.url)) == ("async hello", {"task": 7})


def test_the_connection_is_kept_alive_across_calls() -> None:
    with SimServer(lambda request: Reply.text("ok")) as sim:
        c = client(sim)
        for _ in range(5):
            create(c)
        with c.messages.stream(model=MODEL, max_tokens=10, messages=HI) as stream:
            stream.get_final_message()
        create(c)
    assert len(sim.requests) == 7
    assert sim.connections == 1


def test_count_tokens_matches_the_usage_estimate() -> None:
    messages = [{"role": "user", "content": "x" * 400}]
    with SimServer([Reply.text("ok")]) as sim:
        c = client(sim)
        counted = c.messages.count_tokens(model=MODEL, messages=messages)
        used = create(c, messages=messages).usage
    assert counted.input_tokens == used.input_tokens > 100
    assert len(sim.requests) == 1  # count_tokens is not a model call


# -- stop reasons --------------------------------------------------------------------------------


def test_stop_reasons() -> None:
    script = [
        Reply.text("done"),
        Reply.tool_use("read_file", {"path": "a"}),
        Reply(content=[{"type": "text", "text": "I was cut"}], stop_reason="max_tokens"),
        Reply.text("ends here", stop_sequence="###"),
        Reply.text("word " * 100),  # longer than max_tokens below: cut by the server
        Reply.text("keep this STOP drop this"),  # the request asks to stop at STOP
    ]
    with SimServer(script) as sim:
        c = client(sim)
        got = [create(c) for _ in range(4)]
        truncated = create(c, max_tokens=10)
        stopped = create(c, stop_sequences=["STOP"])
    assert [m.stop_reason for m in got] == ["end_turn", "tool_use", "max_tokens", "stop_sequence"]
    assert got[3].stop_sequence == "###"
    assert truncated.stop_reason == "max_tokens"
    assert truncated.content[0].type == "text"
    assert len(truncated.content[0].text) == 40
    assert truncated.usage.output_tokens == 10
    assert stopped.stop_reason == "stop_sequence"
    assert stopped.stop_sequence == "STOP"
    assert stopped.content[0].type == "text"
    assert stopped.content[0].text == "keep this "


def test_stop_reason_survives_streaming() -> None:
    script = [Reply(content=[{"type": "text", "text": "partial"}], stop_reason="max_tokens")]
    with SimServer(script) as sim, client(sim).messages.stream(model=MODEL, max_tokens=9, messages=HI) as s:
        assert s.get_final_message().stop_reason == "max_tokens"


# -- usage and prompt caching --------------------------------------------------------------------


def _conversation(turns: int) -> list[dict[str, Any]]:
    """A conversation whose newest user block carries the cache marker, as harnesses usually do."""
    messages: list[dict[str, Any]] = []
    for turn in range(turns):
        if messages:
            messages.append({"role": "assistant", "content": [{"type": "text", "text": f"answer {turn}"}]})
        messages.append({"role": "user", "content": [{"type": "text", "text": f"question {turn} " * 40}]})
    messages[-1]["content"][-1]["cache_control"] = {"type": "ephemeral"}
    return messages


def test_prompt_caching_writes_then_reads_the_prefix() -> None:
    system = [{"type": "text", "text": "You are careful. " * 100, "cache_control": {"type": "ephemeral"}}]
    with SimServer(lambda request: Reply.text("ok")) as sim:
        c = client(sim)
        first = create(c, system=system, messages=_conversation(1)).usage
        again = create(c, system=system, messages=_conversation(1)).usage
        longer = create(c, system=system, messages=_conversation(2)).usage
        plain = create(c, system="You are careful.").usage
    tokens = [request.tokens for request in sim.requests]
    assert first.cache_read_input_tokens == 0
    assert first.cache_creation_input_tokens == tokens[0]  # everything up to the marker is written
    assert first.input_tokens == 0
    assert first.cache_creation is not None
    assert first.cache_creation.ephemeral_5m_input_tokens == tokens[0]
    assert again.cache_read_input_tokens == tokens[1]
    assert again.cache_creation_input_tokens == 0
    # The marker moved to the newest block: last turn's prefix is read, the new part written.
    assert longer.cache_read_input_tokens == tokens[0]
    assert longer.cache_creation_input_tokens == tokens[2] - tokens[0]
    assert plain.cache_creation_input_tokens == plain.cache_read_input_tokens == 0
    assert plain.input_tokens == tokens[3]


def test_top_level_cache_control_and_one_hour_ttl() -> None:
    with SimServer(lambda request: Reply.text("ok")) as sim:
        c = client(sim)
        first = create(c, cache_control={"type": "ephemeral", "ttl": "1h"}).usage
        second = create(c, cache_control={"type": "ephemeral", "ttl": "1h"}).usage
    assert first.cache_creation is not None
    assert first.cache_creation.ephemeral_1h_input_tokens == first.cache_creation_input_tokens > 0
    assert second.cache_read_input_tokens == first.cache_creation_input_tokens


def test_short_prefixes_are_not_cached_below_the_minimum() -> None:
    with SimServer(lambda request: Reply.text("ok"), cache_min_tokens=1024) as sim:
        usage = create(client(sim), messages=_conversation(1)).usage
    assert usage.cache_creation_input_tokens == 0
    assert usage.input_tokens == sim.requests[0].tokens


def test_streamed_usage_carries_cache_counts() -> None:
    with SimServer(lambda request: Reply.text("ok")) as sim:
        c = client(sim)
        for _ in range(2):
            with c.messages.stream(model=MODEL, max_tokens=10, messages=_conversation(1)) as stream:
                usage = stream.get_final_message().usage
    assert usage.cache_read_input_tokens == sim.requests[0].tokens
    assert usage.input_tokens == 0


def test_reply_usage_override() -> None:
    reply = Reply(
        content=[{"type": "text", "text": "ok"}], usage={"input_tokens": 150_000, "output_tokens": 7}
    )
    with SimServer([reply]) as sim:
        usage = create(client(sim)).usage
    assert (usage.input_tokens, usage.output_tokens) == (150_000, 7)


# -- faults --------------------------------------------------------------------------------------


@pytest.fixture
def sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The SDK's retry sleeps, recorded instead of slept (the server never calls time.sleep)."""
    recorded: list[float] = []
    monkeypatch.setattr(time, "sleep", recorded.append)
    return recorded


def test_rate_limit_is_retried_honouring_retry_after(sleeps: list[float]) -> None:
    with SimServer([Fault.rate_limit(retry_after=7), Reply.text("ok")]) as sim:
        message = create(client(sim, max_retries=2))
    assert message.content[0].type == "text"
    assert message.content[0].text == "ok"
    assert [e.outcome for e in sim.exchanges] == ["rate_limit", "reply"]
    assert sim.requests[1].retry_count == 1
    assert sleeps == [7.0]


def test_rate_limit_error_body_and_headers() -> None:
    with (
        SimServer([Fault.rate_limit(retry_after=0.5)]) as sim,
        pytest.raises(anthropic.RateLimitError) as caught,
    ):
        create(client(sim))
    error = caught.value
    assert error.status_code == 429
    assert error.type == "rate_limit_error"
    assert error.body is not None
    assert isinstance(error.body, dict)
    assert error.body["type"] == "error"
    assert error.response.headers["retry-after"] == "0.5"
    assert error.request_id is not None
    assert error.request_id.startswith("req_")


def test_overloaded_is_a_529(sleeps: list[float]) -> None:
    with SimServer([Fault.overloaded(), Fault.overloaded(), Reply.text("ok")]) as sim:
        with pytest.raises(anthropic.OverloadedError) as caught:
            create(client(sim))
        assert caught.value.status_code == 529
        assert caught.value.type == "overloaded_error"
        assert create(client(sim, max_retries=1)).content[0].type == "text"
    assert [e.outcome for e in sim.exchanges] == ["overloaded", "overloaded", "reply"]


def test_other_errors() -> None:
    script = [Fault.error(400, "invalid_request_error", "bad thing"), Fault.error()]
    with SimServer(script) as sim:
        c = client(sim)
        with pytest.raises(anthropic.BadRequestError, match="bad thing"):
            create(c)
        with pytest.raises(anthropic.InternalServerError):
            create(c)


def test_dropped_connection_raises_connection_error_without_retries() -> None:
    with SimServer([Fault.drop(), Reply.text("ok")]) as sim:
        c = client(sim)
        with pytest.raises(anthropic.APIConnectionError):
            create(c)
        # The next call opens a new connection and gets the next reply.
        assert create(c).content[0].type == "text"
    assert [e.outcome for e in sim.exchanges] == ["drop", "reply"]
    assert sim.connections == 2


def test_dropped_connection_is_retried(sleeps: list[float]) -> None:
    with SimServer([Fault.drop(), Reply.text("ok")]) as sim:
        assert create(client(sim, max_retries=1)).content[0].type == "text"
    assert len(sleeps) == 1  # the SDK backed off once


def test_drop_mid_stream_fails_while_iterating() -> None:
    with SimServer([Fault.drop(mid_stream=True)]) as sim:
        seen: list[str] = []
        with (
            pytest.raises(httpx2.RemoteProtocolError),
            client(sim, max_retries=3).messages.stream(model=MODEL, max_tokens=50, messages=HI) as stream,
        ):
            seen.extend(event.type for event in stream)
    assert seen[:2] == ["message_start", "content_block_start"]
    assert len(sim.requests) == 1  # a stream that already began is not retried


def test_slow_answer_trips_the_sdk_timeout_without_using_up_the_reply() -> None:
    with SimServer([Fault.slow(60), Reply.text("ok")]) as sim:
        c = client(sim, timeout=0.2)
        with pytest.raises(anthropic.APITimeoutError):
            create(c)
        # The server noticed the hang-up and never consulted the script for that request.
        assert create(c).content[0].type == "text"
    assert [e.outcome for e in sim.exchanges] == ["client_gone", "reply"]


def test_slow_answer_within_the_timeout_arrives() -> None:
    with SimServer([Fault.slow(0.01, then=Reply.text("late")), Fault.slow(0.01), Reply.text("next")]) as sim:
        c = client(sim)
        assert [create(c).content[0], create(c).content[0]] == [
            anthropic.types.TextBlock(type="text", text="late"),
            anthropic.types.TextBlock(type="text", text="next"),
        ]


def test_stop_does_not_wait_for_a_pending_slow_fault() -> None:
    sim = SimServer([Fault.slow(600)]).start()
    raw = httpx2.Client(timeout=30)
    body = {"model": MODEL, "max_tokens": 10, "messages": HI}

    def call() -> None:
        # The request is in flight while the server stops; its outcome does not matter.
        with contextlib.suppress(httpx2.HTTPError):
            raw.post(f"{sim.url}/v1/messages", json=body, headers={"x-api-key": API_KEY})

    caller = threading.Thread(target=call)
    caller.start()
    while not sim.exchanges:
        time.sleep(0.001)
    sim.stop()
    caller.join()
    raw.close()
    assert sim.exchanges[0].outcome == "client_gone"


def test_fault_plan_pins_faults_and_caps_runs(sleeps: list[float]) -> None:
    plan = FaultPlan(rate_limit=1.0, max_in_a_row=2, at={4: Fault.drop()})
    with SimServer(lambda request: Reply.text("ok"), faults=plan) as sim:
        c = client(sim, max_retries=2)
        for _ in range(2):
            create(c)
    outcomes = [e.outcome for e in sim.exchanges]
    assert outcomes == ["rate_limit", "rate_limit", "reply", "rate_limit", "drop", "reply"]


def test_injected_faults_do_not_consume_the_script(sleeps: list[float]) -> None:
    script = [Reply.text(f"reply {i}") for i in range(20)]
    with SimServer(script, faults=FaultPlan(rate_limit=0.3, overloaded=0.2, seed=4)) as sim:
        c = client(sim, max_retries=20)
        texts = [create(c).content[0] for _ in range(20)]
    assert [block.text for block in texts if block.type == "text"] == [f"reply {i}" for i in range(20)]
    assert len(sim.exchanges) > 20


# -- script errors and request checks ------------------------------------------------------------


def test_exhausted_script_answers_500_once_and_fails_the_block() -> None:
    seen: dict[str, int] = {}

    def run() -> None:
        with SimServer([Reply.text("only one")]) as sim:
            c = client(sim, max_retries=3)
            create(c)
            with pytest.raises(anthropic.InternalServerError, match="script is exhausted"):
                create(c)
            seen.update(requests=len(sim.requests), errors=len(sim.errors))

    with pytest.raises(SimError, match="exhausted"):
        run()  # a strict server raises as the block ends
    assert seen == {"requests": 2, "errors": 1}  # x-should-retry: false, so the SDK did not retry it


def test_policy_that_raises_is_reported() -> None:
    def policy(request: SimRequest) -> Reply:
        raise KeyError("no such task")

    sim = SimServer(policy, strict=False)
    with sim, pytest.raises(anthropic.InternalServerError, match="KeyError"):
        create(client(sim))
    assert "policy raised KeyError on request #0" in str(sim.errors[0])
    with pytest.raises(SimError, match="KeyError"):
        sim.check()


def test_policy_must_return_a_reply_or_fault() -> None:
    sim = SimServer(lambda request: "hello", strict=False)  # type: ignore[arg-type,return-value]
    with sim, pytest.raises(anthropic.InternalServerError, match="must return a Reply or a Fault"):
        create(client(sim))


def test_a_reply_the_sim_cannot_render_is_a_loud_500() -> None:
    sim = SimServer([Reply.tool_use("tag", {"tags": {"not", "json"}})], strict=False)
    with sim, pytest.raises(anthropic.InternalServerError, match="not JSON serializable"):
        create(client(sim, max_retries=2))
    assert len(sim.requests) == 1
    assert "TypeError" in str(sim.errors[0])


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: Reply(content="hello"), "list of content blocks"),  # type: ignore[arg-type]
        (lambda: Reply(content=[{"text": "no type"}]), "with a 'type'"),
        (lambda: Reply(content=[{"type": "tool_use", "name": "x"}]), "tool_use without"),
        (lambda: Reply.text("x", stop_reason="finished"), "stop_reason"),  # type: ignore[arg-type]
        (lambda: Fault.slow(-1), "seconds"),
        (lambda: Fault.error(200), "error status"),
        (lambda: FaultPlan(rate_limit=0.7, drop=0.7), "add up"),
        (lambda: SimServer(42), "a script is"),  # type: ignore[arg-type]
        (lambda: SimServer([Reply.text("ok"), "text"]), r"script\[1\]"),  # type: ignore[list-item]
    ],
)
def test_bad_scripts_are_refused_where_they_are_written(make: Any, message: str) -> None:
    with pytest.raises(SimError, match=message):
        make()


def test_tool_use_without_tool_result_is_a_400_like_the_api() -> None:
    messages = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_a", "name": "x", "input": {}}]},
        {"role": "user", "content": "I forgot the result"},
    ]
    with SimServer([Reply.text("never sent")]) as sim:
        with pytest.raises(anthropic.BadRequestError, match="without `tool_result`"):
            create(client(sim), messages=messages)
        assert sim.exchanges[0].outcome == "invalid_request"


SYSTEM_TURN = [
    {"role": "user", "content": "go"},
    {"role": "system", "content": "# Environment\n - Primary working directory: /somewhere"},
    {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_a", "name": "x", "input": {}}]},
    {"role": "system", "content": [{"type": "text", "text": "a reminder between the turns"}]},
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_a", "content": "ok"}]},
]


def test_system_messages_between_turns_are_taken_under_their_beta_only() -> None:
    # The Claude Code CLI sends its environment block as a mid-conversation system message, under
    # the per-turn-control beta; without that beta the API (and the sim) refuses the role.
    beta = {"anthropic-beta": "claude-code-20250219,per-turn-control-2026-07-01"}
    with SimServer([Reply.text("done")]) as sim:
        message = create(client(sim), messages=SYSTEM_TURN, extra_headers=beta)
        assert message.content[0].text == "done"
        assert sim.requests[0].tool_results[0]["tool_use_id"] == "toolu_a"
        with pytest.raises(anthropic.BadRequestError, match=r"messages\.1: each message needs a role"):
            create(client(sim), messages=SYSTEM_TURN)
        unanswered = [*SYSTEM_TURN[:4], {"role": "user", "content": "I forgot the result"}]
        with pytest.raises(anthropic.BadRequestError, match=r"messages\.4: `tool_use` ids"):
            create(client(sim), messages=unanswered, extra_headers=beta)


def test_prompt_longer_than_the_context_window_is_a_400() -> None:
    with (
        SimServer([Reply.text("never sent")], context_window=50) as sim,
        pytest.raises(anthropic.BadRequestError, match="prompt is too long"),
    ):
        create(client(sim), messages=[{"role": "user", "content": "x" * 1000}])


def test_unknown_paths_and_missing_keys() -> None:
    with SimServer([]) as sim, httpx2.Client(base_url=sim.url) as raw:
        assert raw.post("/v1/complete", json={}).status_code == 404
        missing_key = raw.post("/v1/messages", json={"model": MODEL, "max_tokens": 1, "messages": HI})
        assert missing_key.status_code == 401
        assert missing_key.json()["error"]["type"] == "authentication_error"
        bad_json = raw.post("/v1/messages", content=b"{", headers={"x-api-key": API_KEY})
        assert bad_json.status_code == 400
        assert bad_json.json()["error"]["type"] == "invalid_request_error"


def test_url_before_start_is_an_error() -> None:
    with pytest.raises(SimError, match="not running"):
        _ = SimServer([]).url


# -- determinism ---------------------------------------------------------------------------------


def _run(seed: int, fault_seed: int) -> tuple[list[str], list[dict[str, Any]]]:
    def policy(request: SimRequest) -> Reply:
        n = len(request.messages)
        return Reply.tool_use("step", {"n": n}) if n % 3 else Reply.text(f"turn {n}")

    plan = FaultPlan(rate_limit=0.2, overloaded=0.1, drop=0.1, seed=fault_seed, retry_after=0.001)
    with SimServer(policy, seed=seed, faults=plan) as sim:
        c = client(sim, max_retries=10)
        for n in range(1, 16):
            create(c, messages=[{"role": "user", "content": str(i)} for i in range(n)])
    return [e.outcome for e in sim.exchanges], sim.replies


def test_same_seed_same_replies_and_fault_positions(sleeps: list[float]) -> None:
    outcomes, replies = _run(seed=7, fault_seed=7)
    assert (outcomes, replies) == _run(seed=7, fault_seed=7)
    assert {"rate_limit", "overloaded", "drop"} <= set(outcomes)
    other_outcomes, other_replies = _run(seed=8, fault_seed=8)
    assert other_outcomes != outcomes
    assert [r["id"] for r in other_replies] != [r["id"] for r in replies]
    assert [r["content"][0].get("input") for r in other_replies] == [
        r["content"][0].get("input") for r in replies
    ]


# -- the stream carries exactly what a plain answer carries ---------------------------------------


def _echo(request: SimRequest) -> Reply:
    """Answers with the reply described, as JSON, by the last user message."""
    return Reply(content=json.loads(request.last_text))


@pytest.fixture(scope="module")
def echo() -> Iterator[SimServer]:
    with SimServer(_echo) as sim:
        yield sim


_text = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=120)
_json = st.recursive(
    st.none() | st.booleans() | st.integers() | _text, lambda inner: st.lists(inner, max_size=3), max_leaves=6
)
_block = st.one_of(
    st.builds(lambda t: {"type": "text", "text": t}, _text),
    st.builds(
        lambda name, args: {"type": "tool_use", "name": name, "input": args},
        st.sampled_from(["read_file", "write_file", "run_check"]),
        st.dictionaries(st.text(min_size=1, max_size=8), _json, max_size=4),
    ),
)


@settings(max_examples=40, deadline=None)
@given(content=st.lists(_block, max_size=4))
def test_streamed_and_plain_messages_agree(echo: SimServer, content: list[dict[str, Any]]) -> None:
    c = client(echo)
    prompt = [{"role": "user", "content": json.dumps(content)}]
    plain = c.messages.create(model=MODEL, max_tokens=4096, messages=prompt)
    with c.messages.stream(model=MODEL, max_tokens=4096, messages=prompt) as stream:
        streamed = stream.get_final_message()
    strip = {"id"}  # tool ids differ per response

    def shape(blocks: list[Any]) -> list[dict[str, Any]]:
        return [{k: v for k, v in b.to_dict().items() if k not in strip} for b in blocks]

    assert shape(streamed.content) == shape(plain.content)
    assert streamed.stop_reason == plain.stop_reason
    assert streamed.usage.output_tokens == plain.usage.output_tokens


def test_a_client_resetting_a_kept_alive_connection_prints_nothing(capfd: pytest.CaptureFixture[str]) -> None:
    import socket
    import struct

    with SimServer([Reply.text("one")]) as sim:
        client = anthropic.Anthropic(base_url=sim.url, api_key="fake", max_retries=0)
        client.messages.create(
            model="claude-sonnet-4-6", max_tokens=10, messages=[{"role": "user", "content": "x"}]
        )
        host, port = sim.url.removeprefix("http://").split(":")
        raw = socket.create_connection((host, int(port)))
        raw.sendall(b"POST /v1/messages HTTP/1.1\r\nHost: x\r\n")  # a request started, then a reset
        raw.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        raw.close()
        client.close()
    captured = capfd.readouterr()
    assert "Traceback" not in captured.err, captured.err
    assert "ConnectionResetError" not in captured.err
