"""Side effects in a replay (issue 19, item 5): a tool answered from the recording never runs, so a
harness that reads what it wrote diverges — with a message that says so, not only a changed prompt."""

from __future__ import annotations

from pathlib import Path

import anthropic
import pytest

import pytest_agentevals as ae
from pytest_agentevals import ReplayDivergence, Replayer
from pytest_agentevals.sim import Reply, SimServer

TOOLS = [{"name": "write_note", "description": "Write a note", "input_schema": {"type": "object"}}]


def harness(base_url: str, workspace: Path) -> str:
    client = anthropic.Anthropic(base_url=base_url, api_key="sim-" + "k" * 12, max_retries=0)

    @ae.tool
    def write_note(name: str) -> str:
        (workspace / name).write_text("hello")
        return f"wrote {name}"

    messages: list[dict[str, object]] = [{"role": "user", "content": "write a note"}]
    first = client.messages.create(model="sim-1", max_tokens=50, messages=messages, tools=TOOLS)  # type: ignore[arg-type]
    call = next(block for block in first.content if block.type == "tool_use")
    result = write_note(**call.input)  # type: ignore[arg-type]
    # The harness checks its own side effect, and tells the model what it found.
    found = (workspace / "n.txt").read_text() if (workspace / "n.txt").exists() else "nothing"
    messages += [
        {"role": "assistant", "content": [block.model_dump() for block in first.content]},
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": call.id, "content": f"{result}; found {found}"}
            ],
        },
    ]
    second = client.messages.create(model="sim-1", max_tokens=50, messages=messages, tools=TOOLS)  # type: ignore[arg-type]
    return "".join(block.text for block in second.content if block.type == "text")


def test_a_harness_reading_a_replayed_tools_side_effect_is_told_why_it_diverged(tmp_path: Path) -> None:
    trace = tmp_path / "run.trace.jsonl"
    (tmp_path / "live").mkdir()
    script = [Reply.tool_use("write_note", {"name": "n.txt"}), Reply.text("done")]
    with SimServer(script, seed=1) as sim, ae.Recorder(trace):
        assert harness(sim.url, tmp_path / "live") == "done"
    (tmp_path / "replay").mkdir()
    with pytest.raises(ReplayDivergence) as caught, Replayer(trace):
        harness("http://127.0.0.1:9", tmp_path / "replay")
    message = str(caught.value)
    assert "model call 2 of the run" in message
    assert "found hello" in message  # the diff: what the recorded run found, and now
    assert "1 tool call(s) of this replay were answered from the recording and never ran" in message
    assert "docs/replay.md#side-effects-in-a-replay" in message
