"""The LangGraph checkpointer adapter: each saved checkpoint a harness checkpoint event with its state
as plain JSON (scrubbed), a workspace snapshot that matches it, and a thread booted back from one."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest

import pytest_agentevals as ae
from pytest_agentevals import read_trace
from pytest_agentevals.errors import RecordingError
from pytest_agentevals.report.scan import scan
from pytest_agentevals.resume import extract

pytest.importorskip("langgraph", reason="needs pytest-agentevals[langgraph]")

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages

from pytest_agentevals.adapters import (
    RecordedCheckpointer,
    boot_thread,
    graph_contract,
    import_thread,
    langgraph_state,
)

SECRET = "sk-ant-api03-" + "planted" + "Q" * 50


@dataclass
class Point:  # LangGraph's serializer takes a dataclass; JSON does not
    x: int
    y: int


class State(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    done: int


def builder(workspace: Path, steps: int = 3) -> StateGraph[Any]:
    """A graph that writes one file per step into the workspace and says so in its state."""

    def work(state: State) -> dict[str, Any]:
        done = state.get("done", 0) + 1
        (workspace / f"{done}.txt").write_text(str(done))
        return {"done": done, "messages": [AIMessage(content=f"wrote {done}.txt")]}

    graph = StateGraph(State)
    graph.add_node("work", work)
    graph.add_edge(START, "work")
    graph.add_conditional_edges("work", lambda state: END if state["done"] >= steps else "work")
    return graph


def record(tmp_path: Path, *, asynchronous: bool = False, **invoke: Any) -> tuple[Path, Path]:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    graph = builder(workspace).compile(
        checkpointer=RecordedCheckpointer(InMemorySaver(), workspace=workspace)
    )
    trace = tmp_path / "run.trace.jsonl"
    start = {"messages": [HumanMessage(content=f"my key is {SECRET}")], "done": 0}
    config: Any = {"configurable": {"thread_id": "t1"}}
    with ae.Recorder(trace, http=False):
        if asynchronous:  # ainvoke: the saver's aget_tuple and aput
            asyncio.run(graph.ainvoke(start, config, **invoke))
        else:
            graph.invoke(start, config, **invoke)
    return trace, workspace


def checkpoints(trace: Path) -> list[dict[str, Any]]:
    return [event for event in read_trace(trace) if event["type"] == "checkpoint"]


def test_each_checkpoint_is_plain_json_with_a_matching_workspace_and_no_secret(tmp_path: Path) -> None:
    trace, _ = record(tmp_path, durability="sync")
    saved = checkpoints(trace)
    assert [event["state"]["step"] for event in saved] == [-1, 0, 1, 2, 3]
    for event in saved[1:]:
        state = event["state"]
        # The snapshot was taken with the state: one file per step done, no more, no fewer.
        assert sorted(event["workspace"]["files"]) == [
            f"{n}.txt" for n in range(1, state["values"]["done"] + 1)
        ]
    last = saved[-1]["state"]
    assert last["next"] == []
    assert saved[1]["state"]["next"] == ["work"]
    assert last["values"]["messages"][1] == {
        "$langchain": "message",
        "type": "ai",
        "data": {**last["values"]["messages"][1]["data"], "content": "wrote 1.txt"},
    }
    text = trace.read_text()
    assert SECRET not in text  # readable state: scrubbed like everything
    assert "planted" not in text
    assert "[REDACTED]" in last["values"]["messages"][0]["data"]["content"]


def test_an_older_message_edited_in_place_by_a_node_shows_in_the_next_checkpoint(tmp_path: Path) -> None:
    """Each message is encoded once while it is unchanged (`MessageMemo`); a node that edits an older
    message in place, a field replaced or a value deep inside one changed, is seen at once: every
    recorded state is the saver's own checkpoint, as LangGraph holds it."""
    edits = [
        lambda first: setattr(first, "content", "edited"),
        lambda first: first.additional_kwargs.setdefault("notes", []).append({"n": 1}),
        lambda first: first.additional_kwargs["notes"][0].update(n=2),
    ]

    def work(state: State) -> dict[str, Any]:
        done = state["done"]
        edits[done](state["messages"][0])  # the run's first message, in place
        return {"done": done + 1, "messages": [AIMessage(content=f"step {done}")]}

    graph = StateGraph(State)
    graph.add_node("work", work)
    graph.add_edge(START, "work")
    graph.add_conditional_edges("work", lambda state: END if state["done"] >= len(edits) else "work")
    saver = InMemorySaver()
    config: Any = {"configurable": {"thread_id": "t1"}}
    trace = tmp_path / "run.trace.jsonl"
    with ae.Recorder(trace, http=False):
        graph.compile(checkpointer=RecordedCheckpointer(saver)).invoke(
            {"messages": [HumanMessage(content="first")], "done": 0}, config, durability="sync"
        )
    recorded = [event["state"]["values"] for event in checkpoints(trace)]
    saved = [
        langgraph_state.encode(saved.checkpoint["channel_values"], {})
        for saved in reversed(list(saver.list(config)))
    ]
    assert json.dumps(recorded) == json.dumps(saved)
    first = [values["messages"][0]["data"] for values in recorded[1:]]
    assert [data["content"] for data in first] == ["first", "edited", "edited", "edited"]
    assert [data["additional_kwargs"] for data in first[2:]] == [{"notes": [{"n": 1}]}, {"notes": [{"n": 2}]}]


@pytest.mark.parametrize("invoke", [{}, {"durability": "async"}, {"asynchronous": True}])
def test_async_durability_with_a_workspace_is_refused_at_the_first_checkpoint(
    tmp_path: Path, invoke: dict[str, Any]
) -> None:
    # LangGraph's default saves while the next step runs: a snapshot then disagrees with the state. It
    # saves on a worker thread, so a refusal there would reach the caller only when the graph ended.
    with pytest.raises(
        RecordingError, match=r"durability='async'.*Invoke the graph with durability=\"sync\""
    ):
        record(tmp_path, **invoke)
    assert list((tmp_path / "workspace").iterdir()) == []  # refused before the first step ran
    events = read_trace(tmp_path / "run.trace.jsonl")
    assert checkpoints(tmp_path / "run.trace.jsonl") == []
    assert events[-1]["status"] == "error"
    assert events[-1]["totals"]["checkpoints"] == 0
    assert events[-1]["error"]["type"] == "RecordingError"


def test_exit_durability_with_a_workspace_records_the_final_checkpoint(tmp_path: Path) -> None:
    trace, _ = record(tmp_path, durability="exit")
    (only,) = checkpoints(trace)
    assert only["state"]["values"]["done"] == 3
    assert sorted(only["workspace"]["files"]) == ["1.txt", "2.txt", "3.txt"]


def test_a_thread_boots_from_a_recorded_checkpoint_and_goes_on(tmp_path: Path) -> None:
    trace, workspace = record(tmp_path, durability="sync")
    middle = checkpoints(trace)[2]["state"]  # after step 1: one file written
    assert middle["values"]["done"] == 1
    saver = InMemorySaver()
    graph = builder(workspace).compile(checkpointer=saver)
    config = boot_thread(saver, middle, "booted")
    out = graph.invoke(None, config)
    assert out["done"] == 3
    assert [m.content for m in out["messages"][1:]] == ["wrote 1.txt", "wrote 2.txt", "wrote 3.txt"]
    with pytest.raises(RecordingError, match="not written by RecordedCheckpointer"):
        boot_thread(saver, {"step": 1}, "other")


def test_a_secret_planted_in_a_fixtures_state_is_found_by_scan(tmp_path: Path) -> None:
    trace, _ = record(tmp_path, durability="sync")
    fixture, _ = extract(trace, "latest", "lg-done", tmp_path / "fixtures")
    state_file = fixture.folder / "state.json"
    assert scan([tmp_path / "fixtures"], environ={}) == []
    state = json.loads(state_file.read_text())
    state["values"]["messages"][0]["data"]["content"] = f"my key is {SECRET}"
    state_file.write_text(json.dumps(state))
    found = scan([tmp_path / "fixtures"], environ={})
    assert len(found) == 1
    assert "state.json" in found[0]
    assert SECRET not in found[0]  # masked


def test_a_value_with_no_json_form_names_its_field_and_a_codec_takes_it(tmp_path: Path) -> None:
    class Held(TypedDict):
        handle: Any

    graph = StateGraph(Held)
    graph.add_node("keep", lambda state: {"handle": Point(7, 8)})
    graph.add_edge(START, "keep")
    trace = tmp_path / "run.trace.jsonl"
    plain = graph.compile(checkpointer=RecordedCheckpointer(InMemorySaver()))
    refused = r"state field 'handle' holds a .*Point, which has no JSON form.*codecs=\{'handle'"
    with pytest.raises(RecordingError, match=refused), ae.Recorder(trace, http=False):
        plain.invoke({"handle": None}, {"configurable": {"thread_id": "t"}}, durability="sync")
    coded = RecordedCheckpointer(
        InMemorySaver(), codecs={"handle": (lambda p: p and [p.x, p.y], lambda v: Point(*v))}
    )
    trace.unlink()
    with ae.Recorder(trace, http=False):
        graph.compile(checkpointer=coded).invoke({"handle": None}, {"configurable": {"thread_id": "t"}})
    assert checkpoints(trace)[-1]["state"]["values"] == {"handle": [7, 8]}


def test_the_graph_implies_its_contract_keys(tmp_path: Path) -> None:
    one = graph_contract(builder(tmp_path).compile())
    assert set(one["langgraph"]) == {"graph", "tools"}
    assert one == graph_contract(builder(tmp_path).compile())
    changed = StateGraph(State)
    changed.add_node("other", lambda state: {})
    changed.add_edge(START, "other")
    assert graph_contract(changed.compile())["langgraph"]["graph"] != one["langgraph"]["graph"]


def test_a_thread_saved_by_sqlite_saver_becomes_a_fixture_with_its_contract(tmp_path: Path) -> None:
    sqlite = pytest.importorskip("langgraph.checkpoint.sqlite", reason="needs langgraph-checkpoint-sqlite")
    import sqlite3

    workspace = tmp_path / "workspace"
    workspace.mkdir()
    connection = sqlite3.connect(tmp_path / "threads.sqlite", check_same_thread=False)
    saver = sqlite.SqliteSaver(connection)
    graph = builder(workspace).compile(checkpointer=saver)
    start = {"messages": [HumanMessage(content=f"my key is {SECRET}")], "done": 0}
    graph.invoke(start, {"configurable": {"thread_id": "saved"}})  # no recorder: a thread of yesterday
    trace = tmp_path / "imported.trace.jsonl"
    imported = import_thread(saver, "saved", trace, contract=graph_contract(graph))
    assert (imported.checkpoints, imported.steps) == (5, (-1, 0, 1, 2, 3))
    assert "have no workspace" in imported.summary()
    assert SECRET not in trace.read_text()
    events = read_trace(trace)
    # Every checkpoint at its own step (the input checkpoint, LangGraph's -1, at 0 before step 0's).
    saved = [event for event in events if event["type"] == "checkpoint"]
    assert [e["step"] for e in saved] == [0, 0, 1, 2, 3]
    assert [e["state"]["values"].get("done") for e in saved] == [None, 0, 1, 2, 3]
    assert all("workspace" not in e for e in saved)
    (said,) = [event for event in events if event["type"] == "note"]  # said once, in the trace too
    assert "have no workspace" in said["message"]
    middle, _ = extract(trace, 1, "after-step-1", tmp_path / "fixtures")
    assert middle.step == 1
    assert json.loads((middle.folder / "state.json").read_text())["values"]["done"] == 1
    assert middle.manifest["workspace"]["files"] == 0
    fixture, _ = extract(trace, "latest", "from-sqlite", tmp_path / "fixtures")
    state = json.loads((fixture.folder / "state.json").read_text())
    assert state["values"]["done"] == 3
    # The graph's contract keys are the fixture's (flattened, as every contract is).
    assert fixture.manifest["contract"]["langgraph.graph"] == graph_contract(graph)["langgraph"]["graph"]
    # Booted back into a fresh saver, the thread's state is the one saved.
    fresh = InMemorySaver()
    config = boot_thread(fresh, state, "again")
    assert builder(workspace).compile(checkpointer=fresh).get_state(config).values["done"] == 3
    with pytest.raises(RecordingError, match=r"thread 'nope' has no checkpoint in SqliteSaver"):
        import_thread(saver, "nope", tmp_path / "none.trace.jsonl")


def test_a_thread_in_a_newer_checkpoint_format_is_refused_naming_the_version(tmp_path: Path) -> None:
    saver = InMemorySaver()
    config = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    checkpoint = {**empty_checkpoint(), "v": 99}
    saver.put(config, checkpoint, {"source": "input", "step": -1}, {})  # type: ignore[arg-type]
    with pytest.raises(RecordingError, match=r"checkpoint format version 99, newer than the \d+"):
        import_thread(saver, "t", tmp_path / "t.trace.jsonl")
