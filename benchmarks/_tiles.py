"""Long traces for the benchmarks that read one: a recorded 300-step run of the example agent,
repeated end to end to any length (steps, seq and time carried on; verified progress spread over
the tiles, so the whole run reaches 1.0 once, at its end)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the examples package

from examples.taskrunner import run
from pytest_agentevals import Recorder, read_trace
from pytest_agentevals.trace.events import Event
from pytest_agentevals.trace.writer import TraceWriter

TILE_STEPS = 300
TASKS = 130  # enough tasks that the step cap, not the task list, ends the run


def record_tile(folder: Path, stream: bool) -> list[Event]:
    tile = folder / "tile.trace.jsonl"
    with Recorder(tile, agent="taskrunner", seed=1, task={"tasks": TASKS, "max_steps": TILE_STEPS}):
        run(TASKS, seed=1, stream=stream, max_steps=TILE_STEPS)
    return read_trace(tile)


def tiled_trace(
    folder: Path,
    events: list[Event],
    steps: int,
    incidents: Callable[[int, Event], list[Event]] = lambda step, call: [],
) -> Path:
    """`events` repeated to `steps` model-call steps; `incidents(step, call)` are events written just
    before the model call of each step."""
    start, body, end = events[0], events[1:-1], events[-1]
    tiles = -(-steps // TILE_STEPS)
    path = folder / f"run-{steps}.trace.jsonl"
    with TraceWriter(path) as writer:
        writer.write(start)
        seq = step = 0
        t = 0.0
        for k in range(tiles):
            tile_steps = 0
            for event in body:
                now = event["step"] + step
                if event["type"] == "model_call" and now > steps:
                    break
                copied: dict[str, Any] = {
                    **event,
                    "seq": event["seq"] + seq,
                    "t": event["t"] + t,
                    "step": now,
                }
                if event["type"] == "model_call":
                    copied["request"] = dict(event["request"])  # the writer stores it as a delta again
                    for extra in incidents(now, copied):
                        seq += 1
                        copied["seq"] += 1
                        writer.write(extra | {"seq": copied["seq"] - 1})
                if event["type"] == "verification" and "progress" in event:
                    copied["progress"] = (k + event["progress"]) / tiles
                    copied["passed"] = event["passed"] and (k == tiles - 1 or event["progress"] < 1)
                writer.write(copied)
                tile_steps = max(tile_steps, event["step"])
            seq, step, t = seq + len(body), step + tile_steps, t + end["t"]
        writer.write({**end, "seq": seq + 1, "t": t, "totals": {**end["totals"], "steps": step}})
    return path
