"""The two framework examples recorded against the simulated model, replayed strictly offline (their
tools answered from the recording, never run), and resumed from a recorded checkpoint live."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import pytest_agentevals as ae
from pytest_agentevals import Replayer, read_trace
from pytest_agentevals.sim import SimServer

pytest.importorskip("langgraph", reason="needs pytest-agentevals[langgraph]")
pytest.importorskip("pydantic_ai", reason="needs pytest-agentevals[pydantic-ai]")

from langgraph.checkpoint.memory import InMemorySaver
from pydantic_ai.messages import ModelMessagesTypeAdapter

from examples import notes_graph, notes_pydantic
from examples.notes_policy import policy
from pytest_agentevals.adapters import boot_thread

OFFLINE = "http://127.0.0.1:9"
NOTES = 3


@pytest.fixture(scope="module")
def sim_url() -> Iterator[str]:
    with SimServer(policy, seed=1) as sim:
        yield sim.url


def restored(snapshot: dict[str, Any], into: Path) -> Path:
    """A checkpoint's workspace written back (these examples' notes are small text files)."""
    into.mkdir()
    for name, entry in snapshot["files"].items():
        (into / name).write_text(entry["text"], encoding="utf-8")
    return into


def notes_in(folder: Path) -> list[str]:
    return sorted(path.name for path in folder.iterdir())


@pytest.mark.parametrize("example", ["langgraph", "pydantic-ai"])
def test_an_example_replays_strictly_offline_without_running_its_tools(
    tmp_path: Path, sim_url: str, example: str
) -> None:
    run = notes_graph.run if example == "langgraph" else notes_pydantic.run
    trace = tmp_path / "run.trace.jsonl"
    (tmp_path / "live").mkdir()
    with ae.Recorder(trace, agent=example):
        live = run(sim_url, tmp_path / "live", NOTES)
    assert notes_in(tmp_path / "live") == ["note-001.txt", "note-002.txt", "note-003.txt"]
    (tmp_path / "replay").mkdir()
    with Replayer(trace) as replay:
        replayed = run(OFFLINE, tmp_path / "replay", NOTES)
    final = live if isinstance(live, str) else live["messages"][-1].content
    assert (replayed if isinstance(replayed, str) else replayed["messages"][-1].content) == final
    assert replay.report.served_tools == NOTES
    assert notes_in(tmp_path / "replay") == []  # the tools answered from the recording: nothing written


def test_the_langgraph_example_resumes_from_a_recorded_checkpoint(tmp_path: Path, sim_url: str) -> None:
    trace = tmp_path / "run.trace.jsonl"
    (tmp_path / "live").mkdir()
    with ae.Recorder(trace, agent="langgraph"):
        notes_graph.run(sim_url, tmp_path / "live", NOTES)
    # The checkpoint after the first note was written, the model next.
    point = next(
        event
        for event in read_trace(trace)
        if event["type"] == "checkpoint"
        and event["state"]["next"] == ["agent"]
        and event["workspace"]["files"]
    )
    workspace = restored(point["workspace"], tmp_path / "resumed")
    assert notes_in(workspace) == ["note-001.txt"]
    saver = InMemorySaver()
    graph = notes_graph.build(sim_url, saver)
    config = boot_thread(saver, point["state"], "resumed")
    config["configurable"]["workspace"] = str(workspace)
    out = graph.invoke(None, config, durability="sync")
    assert out["messages"][-1].content == f"Wrote {NOTES} notes."
    assert notes_in(workspace) == ["note-001.txt", "note-002.txt", "note-003.txt"]


def test_the_pydantic_ai_example_resumes_from_a_recorded_checkpoint(tmp_path: Path, sim_url: str) -> None:
    trace = tmp_path / "run.trace.jsonl"
    (tmp_path / "live").mkdir()
    with ae.Recorder(trace, agent="pydantic-ai"):
        notes_pydantic.run(sim_url, tmp_path / "live", NOTES)
    first = next(event for event in read_trace(trace) if event["type"] == "checkpoint")
    history = ModelMessagesTypeAdapter.validate_python(first["state"]["messages"])
    workspace = restored(first["workspace"], tmp_path / "resumed")
    # The model had asked for the first note; the resumed run writes all three and finishes.
    assert notes_pydantic.run(sim_url, workspace, NOTES, history=history[:-1]) == f"Wrote {NOTES} notes."
    assert notes_in(workspace) == ["note-001.txt", "note-002.txt", "note-003.txt"]
