"""Recording overhead: the same 300-step streamed run of the example agent, recording off and on.

Both run in this one process, alternately, against the simulated server; the figure is the ratio of
their median wall times (`overhead_ratio`), plus the trace's size per step at 100 and 300 steps, so
linear growth can be read off. Run from the repository root:

    python benchmarks/record.py [--quick]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

import _figures as figures  # benchmarks/: the folder of the script run

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the examples package

from examples.taskrunner import run
from pytest_agentevals import Recorder, read_trace

TASKS = 130  # enough tasks that the step cap, not the task list, ends the run


def once(steps: int, trace: Path | None) -> tuple[float, float]:
    """Wall and CPU seconds of one run (CPU time is steadier when the machine is busy)."""
    started, cpu = time.perf_counter(), time.process_time()
    if trace is None:
        result = run(TASKS, seed=1, stream=True, max_steps=steps)
    else:
        with Recorder(trace, agent="taskrunner", seed=1, task={"tasks": TASKS, "max_steps": steps}):
            result = run(TASKS, seed=1, stream=True, max_steps=steps)
    elapsed = time.perf_counter() - started, time.process_time() - cpu
    if result.steps != steps:
        raise SystemExit(f"the run took {result.steps} steps, not {steps}: not comparing like runs")
    return elapsed


emit = partial(figures.emit, "record")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    args = parser.parse_args()
    repeats = 2 if args.quick else 7
    with tempfile.TemporaryDirectory() as folder:
        once(300, None)  # warm up imports, the SDK and the file system
        # ...and recording's own (vcrpy, the scrubber's patterns): else the first recorded run pays
        # them, half the median with --quick's two repetitions.
        once(300, Path(folder) / "warm.trace.jsonl")
        off: list[tuple[float, float]] = []
        on: list[tuple[float, float]] = []
        for index in range(repeats):
            # Alternate, so drift in the machine's load falls on both sides alike.
            off.append(once(300, None))
            trace = Path(folder) / f"run-{index}.trace.jsonl"
            on.append(once(300, trace))
        wall_off = statistics.median(run[0] for run in off)
        wall_on = statistics.median(run[0] for run in on)
        emit("300 steps", "seconds_recording_off", wall_off)
        emit("300 steps", "seconds_recording_on", wall_on)
        emit("300 steps", "overhead_ratio", wall_on / wall_off)
        cpu_ratio = statistics.median(run[1] for run in on) / statistics.median(run[1] for run in off)
        emit("300 steps", "cpu_overhead_ratio", cpu_ratio)

        for steps in (100, 300):
            trace = Path(folder) / f"size-{steps}.trace.jsonl"
            once(steps, trace)
            events = read_trace(trace)
            assert events[-1]["totals"]["steps"] == steps
            emit(f"{steps} steps", "bytes_per_step", trace.stat().st_size / steps)


if __name__ == "__main__":
    main()
