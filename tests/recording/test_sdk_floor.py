"""What the recorder needs of the anthropic SDK, held on whichever version is installed: a run made with
it (a plain answer, a streamed one, a tool use and its result) is recorded as model calls with their
usage, and replays offline, answered from the trace.

The suite runs it on the SDK the `test` extra installs; .ci/run runs it once more in a virtualenv of
its own with the oldest SDK the project supports (`SDK_FLOOR` in .ci/run, the `anthropic` extra's
floor in pyproject.toml), so a change that needs a newer SDK fails there, and the floor is true.
"""

from __future__ import annotations

from pathlib import Path

import anthropic

from pytest_agentevals import Recorder, Replayer
from pytest_agentevals.sim import Reply, SimServer
from pytest_agentevals.trace.reader import read_trace

TOOL = {"name": "add", "description": "add two numbers", "input_schema": {"type": "object", "properties": {}}}


def run(client: anthropic.Anthropic) -> list[str]:
    """A tiny agent: a plain question, a streamed one, a tool use answered with its result."""
    said = []
    ask = [{"role": "user", "content": "hi"}]
    reply = client.messages.create(model="sim-1", max_tokens=50, messages=ask)  # type: ignore[arg-type]
    said.append(reply.content[0].text)  # type: ignore[union-attr]
    with client.messages.stream(model="sim-1", max_tokens=50, messages=ask) as stream:  # type: ignore[arg-type]
        said.append("".join(stream.text_stream))
    used = client.messages.create(model="sim-1", max_tokens=50, messages=ask, tools=[TOOL])  # type: ignore[arg-type,list-item]
    block = used.content[0]
    assert block.type == "tool_use"
    follow = [
        *ask,
        {"role": "assistant", "content": [block.model_dump()]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": block.id, "content": "5"}]},
    ]
    done = client.messages.create(model="sim-1", max_tokens=50, messages=follow, tools=[TOOL])  # type: ignore[arg-type,list-item]
    said.append(done.content[0].text)  # type: ignore[union-attr]
    return said


def test_a_run_on_the_installed_sdk_is_recorded_and_replays_offline(tmp_path: Path) -> None:
    script = [
        Reply.text("one"),
        Reply.text("two"),
        Reply.tool_use("add", {"a": 2, "b": 3}),
        Reply.text("five"),
    ]
    trace = tmp_path / "floor.trace.jsonl"
    with SimServer(script, seed=7) as sim, Recorder(trace):
        said = run(anthropic.Anthropic(base_url=sim.url, api_key="sim-key", max_retries=0))
    assert said == ["one", "two", "five"]
    calls = [event for event in read_trace(trace) if event["type"] == "model_call"]
    assert len(calls) == 4
    assert [call["stream"] for call in calls] == [False, True, False, False]
    assert all(call["usage"]["output_tokens"] > 0 for call in calls)
    with Replayer(trace) as replay:  # nothing listens there: every answer comes from the trace
        again = run(anthropic.Anthropic(base_url="http://127.0.0.1:9", api_key="unused", max_retries=0))
    assert again == said
    assert replay.report.served_http == 4
