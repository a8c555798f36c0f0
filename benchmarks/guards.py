"""Guard overhead: the same 300-step streamed run of the example agent, recorded without guards and
with every guard on — per-call and per-run budgets, the daily ledger (a lease of the day's budget
taken at the start and given back at the end: the file is locked about twice per run, not per
call; the limit here is far away, so no lease runs out), the watchdog and the loop guard.

Both run in this one process, alternately, against the simulated server; the figure is the ratio of
their median wall times (`overhead_ratio`, aim: under 1.05), and of their CPU times. The limits are
far above what the run uses, so both runs take the same 300 steps. Run from the repository root:

    python benchmarks/guards.py [--quick]
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
from pytest_agentevals import Budget, Recorder
from pytest_agentevals.guards import guards_for

TASKS = 130  # enough tasks that the step cap, not the task list, ends the run
STEPS = 300
# Every guard on, every limit out of reach. No max_calls: the harness's own step cap ends both runs
# the same way (the harness leaves a call limit to the framework when one is set).
BUDGET = Budget(
    max_call_tokens=1_000_000,
    max_call_cost_usd=100.0,
    max_tokens=100_000_000,
    max_cost_usd=10_000.0,
    max_seconds=3600.0,
    max_daily_cost_usd=1_000_000.0,
    stall_calls=100,
    loop_repeat=5,
)


def once(trace: Path, ledger: Path | None) -> tuple[float, float]:
    """Wall and CPU seconds of one recorded run, guarded when a ledger is given."""
    guards = guards_for(BUDGET, ledger=ledger) if ledger is not None else []
    started, cpu = time.perf_counter(), time.process_time()
    with Recorder(trace, agent="taskrunner", seed=1, guards=guards):
        result = run(TASKS, seed=1, stream=True, max_steps=STEPS)
    elapsed = time.perf_counter() - started, time.process_time() - cpu
    if result.steps != STEPS:
        raise SystemExit(f"the run took {result.steps} steps, not {STEPS}: not comparing like runs")
    return elapsed


emit = partial(figures.emit, "guards")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    args = parser.parse_args()
    repeats = 2 if args.quick else 7
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        ledger = root / "ledger.json"
        once(root / "warm-off.trace.jsonl", None)  # warm up imports, the SDK and the file system
        once(root / "warm-on.trace.jsonl", ledger)
        off: list[tuple[float, float]] = []
        on: list[tuple[float, float]] = []
        for index in range(repeats):
            # Alternate, so drift in the machine's load falls on both sides alike.
            off.append(once(root / f"off-{index}.trace.jsonl", None))
            on.append(once(root / f"on-{index}.trace.jsonl", ledger))
        case = f"{STEPS} steps, every guard"
        wall_off = statistics.median(run[0] for run in off)
        wall_on = statistics.median(run[0] for run in on)
        emit(case, "seconds_guards_off", wall_off)
        emit(case, "seconds_guards_on", wall_on)
        emit(case, "overhead_ratio", wall_on / wall_off)
        cpu_ratio = statistics.median(run[1] for run in on) / statistics.median(run[1] for run in off)
        emit(case, "cpu_overhead_ratio", cpu_ratio)


if __name__ == "__main__":
    main()
