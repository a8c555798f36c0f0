"""Recording the real anthropic SDK (sync, async, plain and streaming) against the simulated server."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import anthropic
import pytest

import pytest_agentevals as ae
from pytest_agentevals.errors import RecordingError, TraceFormatError
from pytest_agentevals.recording import current_recorder
from pytest_agentevals.sim import Fault, Reply, SimServer
from pytest_agentevals.trace.messages import response_message
from pytest_agentevals.trace.summary import summarize

from ..conftest import REPO, make_fake_key
from ..schema_support import read_valid

TOOLS = [
    {
        "name": "read_file",
        "description": "Read a file",
        "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    }
]
MODEL = "claude-sonnet-4-6"


validate = read_valid  # every stored line of a real trace is valid against the documented schema


# Every trace the repository ships: the example's cassettes, its step decisions, each checkpoint
# fixture's run up to the checkpoint and its recorded continuation.
SHIPPED = sorted(
    path.relative_to(REPO).as_posix()
    for folder in ("cassettes", "goldens", "fixtures")
    for path in (REPO / folder).glob("**/*.jsonl")
)


@pytest.mark.parametrize("name", SHIPPED)
def test_every_shipped_trace_is_valid_against_the_schema(name: str) -> None:
    validate(REPO / name)


@ae.tool
def read_file(path: str) -> str:
    if path == "missing.txt":
        raise FileNotFoundError(path)
    return f"contents of {path}"


def tool_loop(client: anthropic.Anthropic, steps: int, stream: bool) -> None:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "read the files"}]
    for _ in range(steps):
        kwargs: dict[str, Any] = {
            "model": MODEL,
            "max_tokens": 256,
            "system": "You read files.",
            "tools": TOOLS,
            "messages": messages,
        }
        if stream:
            with client.messages.stream(**kwargs) as live:
                message = live.get_final_message()
        else:
            message = client.messages.create(**kwargs)
        messages.append(
            {
                "role": "assistant",
                "content": [block.model_dump(exclude_none=True) for block in message.content],
            }
        )
        if message.stop_reason != "tool_use":
            return
        use = next(block for block in message.content if block.type == "tool_use")
        try:
            result = read_file(**use.input)
        except FileNotFoundError as exc:
            result = f"error: {exc}"
        messages.append(
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id, "content": result}]}
        )


SCRIPT = [
    Reply.tool_use("read_file", {"path": "a.txt"}, text="Let me look."),
    Reply.tool_use("read_file", {"path": "missing.txt"}),
    Reply.text("All read."),
]


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_sync_tool_loop(tmp_path: Path, fake_api_key: str, stream: bool) -> None:
    path = tmp_path / "run.trace.jsonl"
    with SimServer(SCRIPT, seed=1) as sim, ae.Recorder(path, agent="loop", seed=1, task={"goal": "read"}):
        tool_loop(anthropic.Anthropic(base_url=sim.url, api_key=fake_api_key), 5, stream)
    events = validate(path)
    assert [e["type"] for e in events] == [
        "run_start",
        "model_call",
        "tool_call",
        "model_call",
        "tool_call",
        "model_call",
        "run_end",
    ]
    calls = [e for e in events if e["type"] == "model_call"]
    assert [c["step"] for c in calls] == [1, 2, 3]
    assert all(c["stream"] is stream and c["provider"] == "anthropic" and c["model"] == MODEL for c in calls)
    if stream:
        kinds = [item["event"] for item in calls[0]["response"]["sse"]]
        assert kinds[0] == "message_start"
        assert "content_block_delta" in kinds
        assert kinds[-1] == "message_stop"
    else:
        assert calls[0]["response"]["json"]["content"][1]["name"] == "read_file"
    # The third request is stored as a delta but read back whole.
    assert len(calls[2]["request"]["body"]["messages"]) == 5
    assert calls[2]["request"]["body"]["system"] == "You read files."
    for call in calls:
        usage = call["usage"]
        assert usage["input_tokens"] > 0
        assert usage["output_tokens"] > 0
        assert call["cost_usd"] == pytest.approx(
            (
                usage["input_tokens"] * 3
                + usage["output_tokens"] * 15
                + usage["cache_creation_input_tokens"] * 3.75
                + usage["cache_read_input_tokens"] * 0.3
            )
            / 1e6
        )
    tools = [e for e in events if e["type"] == "tool_call"]
    assert tools[0]["output"] == "contents of a.txt"
    assert tools[1]["error"] == {"type": "FileNotFoundError", "message": "missing.txt"}
    end = events[-1]
    assert end["status"] == "ok"
    assert end["totals"]["steps"] == 3
    assert end["totals"]["tool_errors"] == 1
    assert end["observed_contract"]["model"] == MODEL
    assert end["totals"]["tokens"]["input_tokens"] == sum(c["usage"]["input_tokens"] for c in calls)


def test_async_concurrent_calls(tmp_path: Path, fake_api_key: str) -> None:
    path = tmp_path / "async.trace.jsonl"

    async def main(url: str) -> list[str]:
        client = anthropic.AsyncAnthropic(base_url=url, api_key=fake_api_key)

        async def ask(i: int) -> str:
            message = await client.messages.create(
                model=MODEL,
                max_tokens=50,
                messages=[{"role": "user", "content": f"question {i}"}],
                stream=False,
            )
            return message.content[0].text  # type: ignore[union-attr]

        async def ask_streaming(i: int) -> str:
            async with client.messages.stream(
                model=MODEL, max_tokens=50, messages=[{"role": "user", "content": f"streamed {i}"}]
            ) as live:
                return (await live.get_final_message()).content[0].text  # type: ignore[union-attr]

        return await asyncio.gather(*(ask(i) for i in range(3)), *(ask_streaming(i) for i in range(3)))

    with (
        SimServer(lambda request: Reply.text("answer to " + request.last_text), seed=2) as sim,
        ae.Recorder(path),
    ):
        answers = asyncio.run(main(sim.url))
    assert sorted(answers) == sorted(
        [f"answer to question {i}" for i in range(3)] + [f"answer to streamed {i}" for i in range(3)]
    )
    calls = [e for e in validate(path) if e["type"] == "model_call"]
    assert len(calls) == 6
    assert sum(c["stream"] for c in calls) == 3
    # Whatever order they finished in, each recorded response answers its own request.
    for call in calls:
        asked = call["request"]["body"]["messages"][-1]["content"]
        message = response_message(call["response"])
        assert message is not None
        assert message["content"][0]["text"] == f"answer to {asked}"


def test_retried_errors_are_recorded_and_do_not_count_as_steps(tmp_path: Path, fake_api_key: str) -> None:
    path = tmp_path / "retry.trace.jsonl"
    script = [Fault.rate_limit(retry_after=0.001), Fault.overloaded(retry_after=0.001), Reply.text("finally")]
    with SimServer(script, seed=3) as sim, ae.Recorder(path):
        client = anthropic.Anthropic(base_url=sim.url, api_key=fake_api_key, max_retries=2)
        client.messages.create(model=MODEL, max_tokens=10, messages=[{"role": "user", "content": "hi"}])
    calls = [e for e in validate(path) if e["type"] == "model_call"]
    assert [c["response"]["status"] for c in calls] == [429, 529, 200]
    assert [c["step"] for c in calls] == [1, 1, 1]
    assert calls[0]["error"].startswith("HTTP 429: rate_limit_error")
    assert calls[0]["response"]["headers"]["retry-after"]
    assert calls[0]["cost_usd"] == 0.0
    end = ae.read_trace(path)[-1]
    assert end["totals"]["model_errors"] == 2
    assert end["totals"]["steps"] == 1


def test_no_api_key_reaches_any_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env_key = make_fake_key("env")
    header_key = make_fake_key("header")
    other_token = "tok" + "-" + "9" * 30
    gateway_secret = "gw" + "7" * 12  # no known key shape, in no environment variable: only its header tells
    monkeypatch.setenv("ANTHROPIC_API_KEY", env_key)
    monkeypatch.setenv("MY_SERVICE_TOKEN", other_token)
    echo = Reply.text(f"you said {env_key} and {other_token}")  # a model echoing a secret back
    with SimServer([echo, echo, echo], seed=4) as sim, ae.Recorder(tmp_path / "s.trace.jsonl"):
        # 2.x sends the key as Authorization: Bearer; proxies put keys in other headers too.
        client = anthropic.Anthropic(
            base_url=sim.url,
            api_key=header_key,
            default_headers={
                "x-api-key": env_key,
                "X-Gateway-Token": other_token,
                "X-Proxy-Authorization": gateway_secret,
            },
        )
        client.messages.create(model=MODEL, max_tokens=10, messages=[{"role": "user", "content": env_key}])
        with client.messages.stream(
            model=MODEL, max_tokens=10, messages=[{"role": "user", "content": "x"}]
        ) as s:
            s.get_final_message()
        read_file(other_token)
        ae.note("debug", key=header_key)
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert written
    for file in written:
        text = file.read_text()
        for secret in (env_key, header_key, other_token, header_key[:30], gateway_secret):
            assert secret not in text, f"{secret[:12]}... reached {file}"
    assert "[REDACTED]" in (tmp_path / "s.trace.jsonl").read_text()


def test_tool_decorator_is_a_pass_through_when_not_recording() -> None:
    assert current_recorder() is None
    assert read_file("x") == "contents of x"
    with pytest.raises(FileNotFoundError):
        read_file("missing.txt")
    ae.note("ignored")
    ae.checkpoint({"a": 1})


def test_checkpoint_snapshots_the_workspace(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    (workspace / "src").mkdir(parents=True)
    (workspace / "src" / "a.py").write_text("print(1)\n")
    (workspace / "blob.bin").write_bytes(b"\xff\x00")
    path = tmp_path / "c.trace.jsonl"
    with ae.Recorder(path, http=False):
        ae.checkpoint({"task": 3}, workspace=workspace, name="milestone-3")
    event = validate(path)[1]
    assert event["name"] == "milestone-3"
    assert event["state"] == {"task": 3}
    files = event["workspace"]["files"]
    assert files["src/a.py"]["text"] == "print(1)\n"
    assert files["blob.bin"]["base64"] == "/wA="
    assert files["src/a.py"]["size"] == 9


def test_recorders_reject_bad_harness_values(tmp_path: Path) -> None:
    with ae.Recorder(tmp_path / "v.trace.jsonl", http=False) as recorder:
        with pytest.raises(ValueError, match=r"progress must be in \[0, 1\], got 1.5"):
            ae.verification("x", True, progress=1.5)
        with pytest.raises(ValueError, match="unknown run status 'great'; use one of: ok, failed"):
            recorder.end("great")


def test_unwritable_trace_is_a_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(RecordingError, match=r"cannot write the trace .*file/x.trace.jsonl"):
        ae.Recorder(blocker / "x.trace.jsonl").start()


def test_price_overrides(tmp_path: Path, fake_api_key: str) -> None:
    path = tmp_path / "p.trace.jsonl"
    with (
        SimServer([Reply.text("hi")], seed=5) as sim,
        ae.Recorder(path, prices={"claude-sonnet-4-6": {"input": 1000.0, "output": 0.0}}),
    ):
        client = anthropic.Anthropic(base_url=sim.url, api_key=fake_api_key)
        client.messages.create(model=MODEL, max_tokens=10, messages=[{"role": "user", "content": "hi"}])
    call = ae.read_trace(path)[1]
    assert call["cost_usd"] == pytest.approx(call["usage"]["input_tokens"] * 1000 / 1e6)


def test_unknown_model_has_no_cost_and_show_says_so(tmp_path: Path, fake_api_key: str) -> None:
    path = tmp_path / "u.trace.jsonl"
    with SimServer([Reply.text("hi")], seed=6) as sim, ae.Recorder(path):
        client = anthropic.Anthropic(base_url=sim.url, api_key=fake_api_key)
        client.messages.create(
            model="house-model-7", max_tokens=10, messages=[{"role": "user", "content": "hi"}]
        )
    assert ae.read_trace(path)[1]["cost_usd"] is None
    summary = summarize(path)
    assert summary.problems == [
        "no price for house-model-7: the cost leaves those calls out "
        "(add them under [tool.agentevals.prices])"
    ]


def test_checkpoints_store_only_what_changed_and_read_back_whole(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "keep.txt").write_text("same")
    (workspace / "edit.txt").write_text("v1")
    (workspace / "gone.txt").write_text("bye")
    path = tmp_path / "d.trace.jsonl"
    with ae.Recorder(path, http=False):
        ae.checkpoint({"n": 1}, workspace=workspace)
        (workspace / "edit.txt").write_text("v2")  # same size, same instant: must still be seen
        (workspace / "gone.txt").unlink()
        (workspace / "new.txt").write_text("hello")
        ae.checkpoint({"n": 2}, workspace=workspace)
        ae.checkpoint({"n": 3}, workspace=workspace)
    stored = [json.loads(line) for line in path.read_text().splitlines()]
    assert stored[2]["workspace"]["base"] == "previous"
    assert sorted(stored[2]["workspace"]["files"]) == ["edit.txt", "new.txt"]
    assert stored[2]["workspace"]["removed"] == ["gone.txt"]
    assert stored[3]["workspace"]["files"] == {}
    events = validate(path)
    assert {p: e["text"] for p, e in events[1]["workspace"]["files"].items()} == {
        "edit.txt": "v1",
        "gone.txt": "bye",
        "keep.txt": "same",
    }
    for event in events[2:4]:
        assert {p: e["text"] for p, e in event["workspace"]["files"].items()} == {
            "edit.txt": "v2",
            "keep.txt": "same",
            "new.txt": "hello",
        }


def test_a_workspace_delta_without_its_base_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "bad.trace.jsonl"
    with ae.Recorder(path, http=False):
        pass
    lines = path.read_text().splitlines()
    orphan = {
        "type": "checkpoint",
        "seq": 1,
        "t": 0,
        "step": 0,
        "state": {},
        "workspace": {"root": "/w", "base": "previous", "files": {}},
    }
    path.write_text("\n".join([lines[0], json.dumps(orphan), lines[1]]) + "\n")
    with pytest.raises(TraceFormatError, match=r":2: checkpoint.workspace changes an earlier snapshot of /w"):
        ae.read_trace(path)
