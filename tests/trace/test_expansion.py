"""Deltas from an untrusted trace never expand without bound (issue 17, item 3).

A request delta that keeps every message of the previous request costs a few bytes on disk and a
whole message list once resolved; a workspace delta that changes nothing costs a line and a whole
workspace. A small crafted file of such deltas is refused by the reader once what it built passes
`MAX_RESOLVED_PER_BYTE` (cassettes and `read_trace`), and `resume extract` never resolves the
deltas it does not need: it applies the chain to one state.
"""

from __future__ import annotations

import json
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_agentevals.errors import CassetteError, TraceFormatError
from pytest_agentevals.replay.loader import load_cassette
from pytest_agentevals.replay.promote import complete_events
from pytest_agentevals.resume.extraction import extract
from pytest_agentevals.trace.reader import TraceReader, read_trace
from pytest_agentevals.trace.writer import TraceWriter

START = {"type": "run_start", "v": 1, "run_id": "r", "agent": "a", "started_at": "2026-01-01", "contract": {}}
END = {"type": "run_end", "seq": 0, "t": 0.0, "status": "ok", "totals": {}}


def model_call(seq: int, request: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "model_call",
        "seq": seq,
        "t": 0.0,
        "step": seq,
        "provider": "anthropic",
        "request": {"method": "POST", "url": "http://127.0.0.1/v1/messages", **request},
        "response": {"status": 200, "json": {}},
    }


def checkpoint(seq: int, workspace: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "checkpoint",
        "seq": seq,
        "t": 0.0,
        "step": seq,
        "state": {"n": seq},
        "workspace": workspace,
    }


def write_lines(path: Path, events: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(event) + "\n" for event in events))
    return path


def request_bomb(path: Path, messages: int = 20_000, deltas: int = 2_000) -> Path:
    """A first request of `messages` tiny messages, then `deltas` requests that keep them all:
    about 340 KB standing for 40 million message references."""
    first = model_call(1, {"headers": {}, "body": {"model": "m", "messages": [0] * messages}})
    rest = [model_call(n + 2, {"body_delta": {"keep": messages, "append": []}}) for n in range(deltas)]
    return write_lines(path, [START, first, *rest, END])


def workspace_chain(path: Path, files: int = 2_000, checkpoints: int = 2_000) -> Path:
    """A workspace of `files` files, then `checkpoints` checkpoints that change one file each:
    about 300 KB standing for four million workspace entries."""
    whole = {"root": "/w", "files": {f"f{n}": {"size": 1, "text": "a"} for n in range(files)}}
    events = [START, checkpoint(1, whole)]
    for n in range(checkpoints):
        changed = {f"f{n % files}": {"size": 1, "text": "b"}}
        events.append(checkpoint(n + 2, {"root": "/w", "base": "previous", "files": changed}))
    return write_lines(path, [*events, END])


def peak_of(action: Callable[[], object]) -> tuple[object, int]:
    tracemalloc.start()
    try:
        result: object = action()
        _, peak = tracemalloc.get_traced_memory()
    except Exception as exc:  # returned, so the peak is measured whatever happened
        _, peak = tracemalloc.get_traced_memory()
        result = exc
    finally:
        tracemalloc.stop()
    return result, peak


def test_request_deltas_that_keep_everything_are_refused_with_bounded_memory(tmp_path: Path) -> None:
    path = request_bomb(tmp_path / "bomb.trace.jsonl")
    refused, peak = peak_of(lambda: load_cassette(path))
    assert isinstance(refused, CassetteError), refused
    message = str(refused)
    assert f"{path}:" in message
    assert "request deltas expand" in message
    assert refused.line < 600  # refused where the expansion passes the bound, not at the end
    assert "re-record it" in message
    assert peak < 100_000_000  # resolved, the file takes 320 MB of list slots


def test_read_trace_refuses_the_same_file_naming_the_line(tmp_path: Path) -> None:
    path = request_bomb(tmp_path / "bomb.trace.jsonl")
    with pytest.raises(
        TraceFormatError, match=r"bomb\.trace\.jsonl:\d+: its request deltas expand [\d,]+ bytes"
    ):
        read_trace(path)
    # Not resolving, a reader only checks each delta: constant work each, nothing refused.
    assert sum(1 for _ in TraceReader(path, resolve=False)) == 2_003


def test_a_delta_is_still_checked_when_not_resolved(tmp_path: Path) -> None:
    first = model_call(1, {"body": {"messages": [1, 2]}})
    path = write_lines(
        tmp_path / "t.trace.jsonl",
        [START, first, model_call(2, {"body_delta": {"keep": 3, "append": []}}), END],
    )
    with pytest.raises(
        TraceFormatError, match=r"t\.trace\.jsonl:3: .*keeps 3 messages but the previous request had 2"
    ):
        list(TraceReader(path, resolve=False))


def test_workspace_deltas_resolved_whole_are_refused(tmp_path: Path) -> None:
    path = workspace_chain(tmp_path / "w.trace.jsonl")
    refused, peak = peak_of(lambda: read_trace(path))
    assert isinstance(refused, TraceFormatError), refused
    assert "workspace deltas expand" in str(refused)
    assert f"{path}:" in str(refused)
    assert peak < 200_000_000  # resolved, 2,000 copies of a 2,000-file workspace: about 400 MB


def test_extract_applies_a_workspace_chain_to_one_state(tmp_path: Path) -> None:
    path = workspace_chain(tmp_path / "w.trace.jsonl")
    result, peak = peak_of(lambda: extract(path, "latest", "fx", tmp_path / "fixtures"))
    assert not isinstance(result, Exception), result
    assert peak < 40_000_000  # one state, not a whole copy per checkpoint
    fixture, _ = result  # type: ignore[misc]
    index = json.loads((fixture.folder / "workspace.index.json").read_text())
    assert len(index["entries"]) == 2_000  # the whole workspace at the last checkpoint


def _resolved(events: Iterator[dict[str, Any]]) -> list[Any]:
    return [
        (e["type"], e.get("workspace"), e.get("request", {}).get("body"))
        for e in events
        if e["type"] != "run_end"
    ]


def small_run(path: Path) -> Path:
    """A recorded run with request and workspace deltas, written by the writer as a run writes them."""
    with TraceWriter(path) as writer:
        writer.write(START)
        files: dict[str, Any] = {"a": {"size": 1, "text": "a"}, "b": {"size": 1, "text": "b"}}
        messages: list[Any] = [{"role": "user", "content": "go"}]
        for n in range(1, 5):
            writer.write(model_call(n, {"headers": {}, "body": {"model": "m", "messages": list(messages)}}))
            messages.append({"role": "assistant", "content": f"step {n}"})
            files = {**files, f"n{n}": {"size": 1, "text": str(n)}}
            if n == 3:
                files = {k: v for k, v in files.items() if k != "a"}
            writer.write(checkpoint(n, {"root": "/w", "files": files}))
        writer.write({**END, "seq": 9})
    return path


def test_delta_workspaces_written_back_read_as_the_original(tmp_path: Path) -> None:
    source = small_run(tmp_path / "run.trace.jsonl")
    stored = [json.loads(line) for line in source.read_text().splitlines()]
    assert [e["workspace"].get("base") for e in stored if e["type"] == "checkpoint"] == [None] + [
        "previous"
    ] * 3
    events, _ = complete_events(source)  # what `agentevals promote` writes back, as it writes it
    with TraceWriter(tmp_path / "promoted.trace.jsonl") as writer:
        for event in events:
            writer.write(event)
    promoted = writer.path
    assert _resolved(iter(read_trace(promoted))) == _resolved(iter(read_trace(source)))
    fixture, _ = extract(source, 2, "two", tmp_path / "fixtures", continuation=True)
    whole = read_trace(source)
    assert _resolved(iter(read_trace(fixture.folder / "trace.jsonl"))) == _resolved(iter(whole[:5]))
    # The continuation stands alone: its first workspace is whole, the rest as recorded.
    assert _resolved(iter(read_trace(fixture.folder / "continuation.trace.jsonl")))[1:] == _resolved(
        iter(whole[5:])
    )
