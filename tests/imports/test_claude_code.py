"""The claude-code reader on crafted session files: what it takes from the CLI's entries, and its
promises for an untrusted file — bounded, inert, every error naming the file and line, no secret
reaching the trace."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from pytest_agentevals.cli import main
from pytest_agentevals.imports import SourceFormatError, import_file, limits
from pytest_agentevals.trace.reader import read_trace

from ..conftest import make_fake_key
from ..schema_support import read_valid

CWD = "/home/dev/project"


def entry(kind: str, content: Any, **extra: Any) -> dict[str, Any]:
    message: dict[str, Any] = {"role": kind, "content": content}
    if kind == "assistant":
        message.update(
            id=extra.pop("id", "msg_1"), type="message", model="claude-x", usage={"output_tokens": 3}
        )
    return {
        "type": kind,
        "message": message,
        "cwd": CWD,
        "sessionId": "s-1",
        "version": "2.1.332",
        "timestamp": "2026-01-01T00:00:00.000Z",
        **extra,
    }


def session(path: Path, *entries: dict[str, Any], tail: str = "") -> Path:
    path.write_text("".join(json.dumps(e) + "\n" for e in entries) + tail)
    return path


def tool_session(path: Path, result: str = "a.txt b.txt", **extra: Any) -> Path:
    use = {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}}
    return session(
        path,
        {"type": "queue-operation", "operation": "enqueue"},
        entry("user", "list the files"),
        entry("assistant", [{"type": "text", "text": "Listing."}], id="msg_1"),
        entry("assistant", [use], id="msg_1"),  # one message, written one entry per block
        entry("user", [{"type": "tool_result", "tool_use_id": "toolu_1", "content": result, **extra}]),
        entry("assistant", [{"type": "text", "text": "Two files."}], id="msg_2"),
        {"type": "attachment", "attachment": {"type": "date"}},
    )


def test_a_session_becomes_model_calls_and_tool_calls(tmp_path: Path) -> None:
    done = import_file("claude-code", tool_session(tmp_path / "s.jsonl"), tmp_path / "t.trace.jsonl")
    assert (done.events, done.model_calls, done.fidelity.tier) == (5, 2, "content")
    events = read_valid(tmp_path / "t.trace.jsonl")  # held to the documented schema
    start, first, tool, second, end = events
    assert start["fidelity"]["volatile"] == {"cwd": CWD}
    assert {"system", "tools"} <= set(start["fidelity"]["missing"])  # no api-request-shape entries
    assert start["task"] == {"prompt": "list the files"}
    assert [b["type"] for b in first["request"]["body"]["messages"][0]["content"]] == ["text"]
    assert first["request"]["headers"]["user-agent"].startswith("claude-cli/2.1.332 ")
    assert first["request"]["body"]["stream"] is True  # the CLI streams: a replay streams the answer
    assert first["response"]["json"]["content"][0]["type"] == "text"
    assert (tool["name"], tool["input"], tool["output"], tool["by_client"]) == (
        "Bash",
        {"command": "ls"},
        "a.txt b.txt",
        True,
    )
    assert [m["role"] for m in second["request"]["body"]["messages"]] == ["user", "assistant", "user"]
    assert end["totals"]["tool_calls"] == 1


def test_an_error_result_is_a_tool_error(tmp_path: Path) -> None:
    import_file(
        "claude-code",
        tool_session(tmp_path / "s.jsonl", "no such file", is_error=True),
        tmp_path / "t.trace.jsonl",
    )
    tool = read_trace(tmp_path / "t.trace.jsonl")[2]
    assert tool["error"] == {"type": "ToolError", "message": "no such file"}


def test_a_key_in_the_session_never_reaches_the_trace(tmp_path: Path) -> None:
    key = make_fake_key("session")
    done = import_file(
        "claude-code",
        tool_session(tmp_path / "s.jsonl", f"ANTHROPIC_API_KEY={key}"),
        tmp_path / "t.trace.jsonl",
    )
    assert done.redactions >= 1
    assert key not in (tmp_path / "t.trace.jsonl").read_text()
    assert "secret(s) scrubbed" in done.text()


@pytest.mark.parametrize(
    ("tail", "line", "problem"),
    [
        ("[" * 200 + "]" * 200 + "\n", 8, "not valid JSON here: nested deeper than 128 levels"),
        ("[1, 2]\n", 8, "expected a JSON object per line"),
        ('{"type": "user", "message": "hi"}\n', 8, "a user entry without a user message"),
        ('{"type": "user", "message": {"role": "user", "content": 7}}\n', 8, "message.content must be"),
        ("{not json\n", 8, "not valid JSON"),
    ],
)
def test_a_malformed_line_is_named_by_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], tail: str, line: int, problem: str
) -> None:
    path = tool_session(tmp_path / "s.jsonl")
    with path.open("a") as handle:
        handle.write(tail)
    assert main(["import", "claude-code", str(path), "-o", str(tmp_path / "t.trace.jsonl")]) == 2
    err = capsys.readouterr().err
    assert f"{path}:{line}: {problem}" in err
    assert len(err.strip().splitlines()) == 1
    assert "Traceback" not in err
    assert not (tmp_path / "t.trace.jsonl").exists()


def test_a_torn_last_line_is_left_out(tmp_path: Path) -> None:
    path = tool_session(tmp_path / "s.jsonl")
    with path.open("a") as handle:
        handle.write('{"type": "assistant", "message": {"role": "assi')
    assert import_file("claude-code", path, tmp_path / "t.trace.jsonl").model_calls == 2


def test_bounds_on_size_and_entries_and_no_links(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tool_session(tmp_path / "s.jsonl")
    out = tmp_path / "t.trace.jsonl"
    monkeypatch.setattr(limits, "MAX_ENTRIES", 3)
    with pytest.raises(SourceFormatError, match=r"s.jsonl:4: more than 3 entries"):
        import_file("claude-code", path, out)
    monkeypatch.setattr(limits, "MAX_ENTRIES", 1000)
    monkeypatch.setattr(limits, "MAX_BYTES", 100)
    with pytest.raises(SourceFormatError, match=r"over the 100 an import reads"):
        import_file("claude-code", path, out)
    monkeypatch.setattr(limits, "MAX_BYTES", 1 << 20)
    monkeypatch.setattr(limits, "MAX_LINE", 100)
    with pytest.raises(SourceFormatError, match=r"s.jsonl:2: the line is over 100 bytes"):
        import_file("claude-code", path, out)
    link = tmp_path / "link.jsonl"
    os.symlink(path, link)
    with pytest.raises(SourceFormatError, match="is a symbolic link; refused to follow it"):
        import_file("claude-code", link, out)
    assert not out.exists()


def test_no_conversation_and_an_existing_output_are_refused(tmp_path: Path) -> None:
    empty = session(tmp_path / "e.jsonl", {"type": "queue-operation"})
    with pytest.raises(Exception, match="holds no model call to import"):
        import_file("claude-code", empty, tmp_path / "t.trace.jsonl")
    (tmp_path / "t.trace.jsonl").write_text("mine")
    with pytest.raises(Exception, match="exists: choose another -o, or --force"):
        import_file("claude-code", tool_session(tmp_path / "s.jsonl"), tmp_path / "t.trace.jsonl")
    assert (tmp_path / "t.trace.jsonl").read_text() == "mine"
