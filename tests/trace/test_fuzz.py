"""The reader under Hypothesis: arbitrary bytes, truncated and mutated real traces.

Whatever the input, it returns events or raises TraceFormatError — never anything else.
"""

from __future__ import annotations

import json
import tempfile
import warnings
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_agentevals import Recorder, note, read_trace, tool, verification
from pytest_agentevals.errors import TraceFormatError
from pytest_agentevals.trace import TraceWriter
from pytest_agentevals.trace.summary import summarize


def _real_trace() -> bytes:
    """A trace written by the real recorder and writer: harness events, tools and model calls."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "real.trace.jsonl"

        @tool
        def look(path: str) -> str:
            return f"contents of {path}"

        with Recorder(path, agent="fuzz", seed=3, task={"goal": "g"}, http=False) as recorder:
            history: list[dict[str, str]] = []
            for step in range(6):
                history = [*history, {"role": "user", "content": f"step {step} ü"}]
                recorder.emit(
                    "model_call",
                    provider="anthropic",
                    request={
                        "method": "POST",
                        "url": "http://127.0.0.1/v1/messages",
                        "headers": {"x": "1"},
                        "body": {"model": "sim-1", "messages": history},
                    },
                    response={
                        "status": 200,
                        "sse": [{"event": "message_stop", "data": {"type": "message_stop"}}],
                    },
                )
                look(f"f{step}")
            note("halfway", done=3)
            verification("done", True, progress=1.0)
        return path.read_bytes()


REAL = _real_trace()


def _read(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "fuzz.trace.jsonl"
        path.write_bytes(data)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                events = read_trace(path)
            except TraceFormatError as exc:
                error: TraceFormatError | None = exc
            else:
                error = None
                assert events[0]["type"] == "run_start"
            if error is not None:
                assert error.path == str(path)
                assert error.line >= 0
                return
            summarize(path)  # what `agentevals show` does must hold up too


FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def test_the_real_trace_reads() -> None:
    assert len(REAL.splitlines()) == 16
    _read(REAL)


@FUZZ
@given(st.binary(max_size=2000))
def test_arbitrary_bytes(data: bytes) -> None:
    _read(data)


@FUZZ
@given(st.integers(min_value=0, max_value=len(REAL)))
def test_truncated_real_trace(cut: int) -> None:
    _read(REAL[:cut])


@FUZZ
@given(st.lists(st.tuples(st.integers(0, len(REAL) - 1), st.integers(0, 255)), min_size=1, max_size=8))
def test_mutated_real_trace(mutations: list[tuple[int, int]]) -> None:
    data = bytearray(REAL)
    for index, value in mutations:
        data[index] = value
    _read(bytes(data))


@FUZZ
@given(st.lists(st.integers(0, 15), min_size=1, max_size=6), st.booleans())
def test_shuffled_or_dropped_lines(order: list[int], drop_newline: bool) -> None:
    lines = REAL.splitlines(keepends=True)
    data = b"".join(lines[i] for i in order)
    _read(data[:-1] if drop_newline else data)


def test_writer_output_is_what_the_reader_reads(tmp_path: Path) -> None:
    path = tmp_path / "w.trace.jsonl"
    path.write_bytes(REAL)
    events = read_trace(path)
    copy = tmp_path / "copy.trace.jsonl"
    with TraceWriter(copy) as writer:
        for event in events:
            writer.write(event)
    assert read_trace(copy) == events


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3)
    ),
    max_leaves=6,
)


@FUZZ
@given(st.integers(0, 15), st.data())
def test_well_formed_json_with_wrong_shapes(line_index: int, data: st.DataObject) -> None:
    """Valid JSON lines whose fields hold the wrong types: still only TraceFormatError."""
    lines = REAL.splitlines()
    event = json.loads(lines[line_index])
    target = event
    key = data.draw(st.sampled_from(sorted(target)))
    while isinstance(target[key], dict) and target[key] and data.draw(st.booleans()):
        target = target[key]
        key = data.draw(st.sampled_from(sorted(target)))
    target[key] = data.draw(JSON_VALUES)
    lines[line_index] = json.dumps(event).encode()
    _read(b"\n".join(lines) + b"\n")
