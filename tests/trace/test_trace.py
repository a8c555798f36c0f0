"""The trace writer and reader: round trips, deltas, torn lines and every malformed shape."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_agentevals import read_trace
from pytest_agentevals.errors import TraceFormatError
from pytest_agentevals.trace import TraceWriter
from pytest_agentevals.trace.reader import TornTraceWarning, TraceReader

START = {
    "type": "run_start",
    "v": 1,
    "run_id": "r1",
    "agent": "a",
    "started_at": "2026-01-01T00:00:00Z",
    "contract": {"python": "3.11", "packages": {}},
}


def model_call(seq: int, messages: list[Any], **body: Any) -> dict[str, Any]:
    return {
        "type": "model_call",
        "seq": seq,
        "t": 0.1 * seq,
        "step": seq,
        "provider": "anthropic",
        "request": {
            "method": "POST",
            "url": "http://127.0.0.1/v1/messages",
            "headers": {"a": "1"},
            "body": {"model": "m", "messages": messages, **body},
        },
        "response": {"status": 200, "json": {"content": []}},
    }


def write(path: Path, events: list[dict[str, Any]]) -> None:
    with TraceWriter(path) as writer:
        for event in events:
            writer.write(event)


def test_round_trip_resolves_deltas(tmp_path: Path) -> None:
    path = tmp_path / "t.trace.jsonl"
    history = [{"role": "user", "content": f"m{i}"} for i in range(5)]
    events = [START]
    for step in range(1, 5):
        extra = {"max_tokens": 10} if step < 3 else {"max_tokens": 20}
        events.append(model_call(step, history[: step + 1], **extra))
    events.append({"type": "run_end", "seq": 5, "t": 1.0, "status": "ok", "totals": {}})
    write(path, events)
    raw = [json.loads(line) for line in path.read_text().splitlines()]
    assert "body" in raw[1]["request"]
    assert "body_delta" in raw[2]["request"]
    assert raw[2]["request"]["body_delta"] == {"keep": 2, "append": [history[2]]}
    assert raw[3]["request"]["body_delta"]["set"] == {"max_tokens": 20}
    assert "headers" not in raw[2]["request"]  # unchanged headers are carried forward
    assert read_trace(path) == events


def test_delta_after_compaction_keeps_everything(tmp_path: Path) -> None:
    path = tmp_path / "t.trace.jsonl"
    long = [{"role": "user", "content": str(i)} for i in range(6)]
    compacted = [{"role": "user", "content": "summary"}, {"role": "user", "content": "next"}]
    events = [START, model_call(1, long), model_call(2, compacted, system="s")]
    write(path, events)
    assert read_trace(path)[2]["request"]["body"]["messages"] == compacted
    assert read_trace(path)[2]["request"]["body"]["system"] == "s"


def test_size_grows_linearly_with_steps(tmp_path: Path) -> None:
    def size(steps: int) -> int:
        path = tmp_path / f"{steps}.trace.jsonl"
        history: list[Any] = []
        events = [START]
        for step in range(1, steps + 1):
            history = [*history, {"role": "user", "content": "x" * 50}]
            events.append(model_call(step, history))
        write(path, events)
        return path.stat().st_size

    per_step_small, per_step_large = size(50) / 50, size(400) / 400
    assert per_step_large < per_step_small * 1.2


def test_torn_last_line_is_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "t.trace.jsonl"
    write(path, [START, model_call(1, [])])
    with path.open("a") as handle:
        handle.write('{"type": "tool_call", "seq": 2, "t"')
    reader = TraceReader(path)
    with pytest.warns(TornTraceWarning, match=r"t.trace.jsonl:3: the last line is incomplete"):
        events = list(reader)
    assert [event["type"] for event in events] == ["run_start", "model_call"]
    assert reader.complete is False
    assert len(reader.problems) == 1


@pytest.mark.parametrize(
    ("lines", "line", "message"),
    [
        (["{not json"], 1, "the line is not valid JSON"),
        (["[1, 2]"], 1, "expected a JSON object, found list"),
        (['{"type": "note"}'], 1, "expected a run_start event first, found 'note'"),
        ([json.dumps({**START, "v": 2})], 1, "written in trace format version 2 by a newer version of pyt"),
        ([json.dumps({**START, "v": "1"})], 1, "trace format version '1' is not one this reader knows"),
        ([json.dumps(START), '{"type": "telepathy", "seq": 1}'], 2, "unknown event type 'telepathy'"),
        ([json.dumps(START), '{"type": "note", "seq": 1, "t": 0}'], 2, "note event lacks step, message"),
        ([json.dumps(START), "garbage", '{"type": "x"}'], 2, "the line is not valid JSON"),
        ([json.dumps(START), json.dumps(START)], 2, "a second run_start event"),
        (
            [
                json.dumps(START),
                '{"type":"run_end","seq":1,"t":0,"status":"ok","totals":{}}',
                '{"type":"note","seq":2,"t":0,"step":0,"message":"m"}',
            ],
            3,
            "a note event after run_end",
        ),
        (
            [
                json.dumps(START),
                json.dumps(
                    {
                        **model_call(1, []),
                        "request": {"method": "POST", "url": "u", "body_delta": {"keep": 0, "append": []}},
                    }
                ),
            ],
            2,
            "body_delta with no earlier model_call",
        ),
        ([""], 1, "no complete event"),
    ],
)
def test_malformed_lines_name_file_and_line(
    tmp_path: Path, lines: list[str], line: int, message: str
) -> None:
    path = tmp_path / "bad.trace.jsonl"
    path.write_text("".join(text + "\n" for text in lines) if lines != [""] else "")
    with pytest.raises(TraceFormatError, match=message) as info:
        read_trace(path)
    assert info.value.line == line
    assert str(info.value).startswith(f"{path}:{line}: ")


def test_bad_delta_is_an_error_with_the_line(tmp_path: Path) -> None:
    path = tmp_path / "t.trace.jsonl"
    write(path, [START, model_call(1, [{"role": "user", "content": "a"}])])
    with path.open("a") as handle:
        handle.write(
            json.dumps(
                {
                    **model_call(2, []),
                    "request": {"method": "POST", "url": "u", "body_delta": {"keep": 9, "append": []}},
                }
            )
            + "\n"
        )
    with pytest.raises(TraceFormatError, match=r":3: model_call.request.body_delta: body_delta keeps 9"):
        read_trace(path)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(TraceFormatError, match="does not exist"):
        read_trace(tmp_path / "nope.trace.jsonl")


def test_non_json_values_are_kept_readable(tmp_path: Path) -> None:
    path = tmp_path / "t.trace.jsonl"
    write(
        path,
        [
            START,
            {
                "type": "note",
                "seq": 1,
                "t": 0,
                "step": 0,
                "message": "m",
                "data": {"path": Path("/x"), "raw": b"bytes", "set": {1}},
            },
        ],
    )
    assert read_trace(path)[1]["data"] == {"path": "/x", "raw": "bytes", "set": [1]}


@pytest.mark.parametrize("cost", ["NaN", "Infinity", "-Infinity", "-0.5", '"0.1"', "true"])
@pytest.mark.parametrize("where", ["model_call", "run_end"])
def test_a_cost_that_is_no_amount_of_dollars_is_refused_naming_the_line(
    tmp_path: Path, cost: str, where: str
) -> None:
    start = '{"type": "run_start", "v": 1, "run_id": "r", "agent": "a", "started_at": "", "contract": {}}'
    call_cost = cost if where == "model_call" else "0.001"
    end_cost = cost if where == "run_end" else "0.001"
    call = (
        '{"type": "model_call", "seq": 1, "t": 0, "step": 0, "provider": "anthropic", "request": {}, '
        f'"response": {{"status": 200}}, "cost_usd": {call_cost}}}'
    )
    end = f'{{"type": "run_end", "seq": 2, "t": 1, "status": "ok", "totals": {{"cost_usd": {end_cost}}}}}'
    path = tmp_path / "t.trace.jsonl"
    path.write_text("\n".join([start, call, end]) + "\n")
    line = 2 if where == "model_call" else 3
    with pytest.raises(TraceFormatError, match=rf"t\.trace\.jsonl:{line}.*cost_usd (is|must be)") as raised:
        read_trace(path)
    assert "dollars" in str(raised.value)
