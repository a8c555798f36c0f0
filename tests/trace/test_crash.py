"""A recording process killed with SIGKILL mid-run leaves a trace that reads up to the last complete
event."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest

from pytest_agentevals.trace.reader import TraceReader

LOOP = """
import sys
import pytest_agentevals as ae

@ae.tool
def produce(i):
    return "x" * (50_000 + i)  # large lines, so a kill can land in the middle of one

with ae.Recorder(sys.argv[1], agent="doomed"):
    i = 0
    while True:
        produce(i)
        if i % 10 == 0:
            ae.checkpoint({"i": i})
        i += 1
"""


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_sigkill_mid_run_leaves_a_readable_trace(tmp_path: Path) -> None:
    script = tmp_path / "loop.py"
    script.write_text(LOOP)
    trace = tmp_path / "doomed.trace.jsonl"
    process = subprocess.Popen([sys.executable, str(script), str(trace)])
    try:
        # Wait for real progress (not for a time): enough events that the kill lands mid-run.
        deadline = time.monotonic() + 60
        while (not trace.exists() or trace.stat().st_size < 3_000_000) and time.monotonic() < deadline:
            assert process.poll() is None, "the recording process died on its own"
            time.sleep(0.01)
        os.kill(process.pid, signal.SIGKILL)
    finally:
        process.wait(timeout=30)
    assert process.returncode == -signal.SIGKILL

    reader = TraceReader(trace)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        events = list(reader)
    assert events[0]["type"] == "run_start"
    assert len(events) > 50
    assert [event["seq"] for event in events[1:]] == list(range(1, len(events)))
    assert reader.complete is False
    assert all(event["type"] in ("tool_call", "checkpoint") for event in events[1:])
    # Whatever was cut off, nothing before the last complete line was lost.
    complete_lines = trace.read_bytes().count(b"\n")
    assert len(events) == complete_lines
