"""Recording overhead: the same 300-step streamed run of the example agent, recording off and on.

Both run in this one process against the simulated server, in rounds: each round runs the agent once
bare and once recorded, the two in turn first (off-on, on-off, ...), so drift in the machine's load
and the order within a round fall on both sides alike. Each round gives a ratio (on over off); the
figure is their median (`overhead_ratio`), beside their smallest, the same for CPU time (steadier
when others share the machine), and what recording adds per step in milliseconds (`on - off`,
which does not depend on how fast the bare run happened to be). The trace's size per step at 100
and 300 steps shows that it grows linearly. Run from the repository root:

    python benchmarks/record.py [--quick]
"""

from __future__ import annotations

import argparse
import gc
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
STEPS = 300
# A round's ratio spreads over about 0.95-1.20 on this 2-core machine (the two threads' wakeups across
# cores, the SDK's pydantic classes the collector happened to free): sixteen rounds for the median.
ROUNDS, QUICK_ROUNDS = 16, 2
AIM = 1.05


def once(steps: int, trace: Path | None) -> tuple[float, float]:
    """Wall and CPU seconds of one run (CPU time is steadier when the machine is busy)."""
    gc.collect()  # the garbage of the run before is not this run's to collect
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
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_ROUNDS} rounds, not {ROUNDS}")
    args = parser.parse_args()
    rounds = QUICK_ROUNDS if args.quick else ROUNDS
    with tempfile.TemporaryDirectory() as folder:
        once(STEPS, None)  # warm up imports, the SDK and the file system
        # ...and recording's own (vcrpy, the scrubber's patterns): else the first recorded run pays
        # them, half the median with --quick's two rounds.
        once(STEPS, Path(folder) / "warm.trace.jsonl")
        off: list[tuple[float, float]] = []
        on: list[tuple[float, float]] = []
        traces = [Path(folder) / f"run-{index}.trace.jsonl" for index in range(rounds)]
        for index, trace in enumerate(traces):
            if index % 2 == 0:
                off.append(once(STEPS, None))
                on.append(once(STEPS, trace))
            else:
                on.append(once(STEPS, trace))
                off.append(once(STEPS, None))
        case = f"{STEPS} steps"
        emit(case, "seconds_recording_off", statistics.median(run[0] for run in off))
        emit(case, "seconds_recording_on", statistics.median(run[0] for run in on))
        for prefix, ratios, added in figures.rounds_compared(off, on, STEPS):
            emit(case, f"{prefix}overhead_ratio", statistics.median(ratios), aim=AIM, rounds=rounds)
            emit(case, f"{prefix}overhead_ratio_min", min(ratios), rounds=rounds)
            emit(case, f"{prefix}ms_added_per_step", statistics.median(added), rounds=rounds)

        size_100 = Path(folder) / "size-100.trace.jsonl"
        once(100, size_100)
        for steps, path in ((100, size_100), (STEPS, traces[-1])):  # the last recorded round's trace
            events = read_trace(path)
            assert events[-1]["totals"]["steps"] == steps
            emit(f"{steps} steps", "bytes_per_step", path.stat().st_size / steps)


if __name__ == "__main__":
    main()
