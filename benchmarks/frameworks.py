"""The framework examples recorded: trace size per step and recording overhead (issue 19).

- `bytes_per_step` of the LangGraph example (examples/notes_graph) at 20 and 200 notes, a step being
  one model call, and `growth` (the ratio of the two: linear growth is about 1; every checkpoint
  holds the graph's whole state, stored as a delta against the previous one);
- `overhead_ratio` of each example (LangGraph, pydantic-ai) at 20 notes: recording on over off, in
  rounds against one simulated server in this one process. Each round runs the example once bare and
  once recorded, which goes first alternating, each after a `gc.collect()`; the figure is the median
  of the rounds' ratios (`overhead_ratio_min` their smallest), the same for CPU time beside it, and
  `cpu_ms_per_step`, the CPU milliseconds recording adds per model step (the median of the rounds'
  differences). A run is about 20 steps and a few hundred milliseconds, so one pair of runs is
  mostly noise: the rounds are many.

Run from the repository root (needs pytest-agentevals[langgraph] and [pydantic-ai]):

    python benchmarks/frameworks.py [--quick]
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import _figures as figures  # benchmarks/: the folder of the script run

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the examples package

from examples import notes_graph, notes_pydantic
from examples.notes_policy import policy
from pytest_agentevals import Recorder, read_trace
from pytest_agentevals.sim import SimServer

emit = partial(figures.emit, "frameworks")
Run = Callable[[str, Path, int], object]
EXAMPLES: dict[str, Run] = {"langgraph": notes_graph.run, "pydantic-ai": notes_pydantic.run}
ROUNDS, QUICK_ROUNDS = 15, 3


def once(run: Run, url: str, folder: Path, notes: int, trace: Path | None) -> tuple[float, float]:
    workspace = Path(tempfile.mkdtemp(dir=folder))
    gc.collect()  # the garbage of the run before is not this run's to collect
    started, cpu = time.perf_counter(), time.process_time()
    if trace is None:
        run(url, workspace, notes)
    else:
        with Recorder(trace, agent="notes", packages=("anthropic",)):
            run(url, workspace, notes)
    return time.perf_counter() - started, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick", action="store_true", help=f"{QUICK_ROUNDS} rounds, not {ROUNDS}; 100 notes for 200"
    )
    args = parser.parse_args()
    rounds = QUICK_ROUNDS if args.quick else ROUNDS
    with tempfile.TemporaryDirectory() as scratch, SimServer(policy, seed=1) as sim:
        folder = Path(scratch)
        sizes: dict[int, float] = {}
        for notes in (20, 100 if args.quick else 200):
            trace = folder / f"size-{notes}.trace.jsonl"
            once(notes_graph.run, sim.url, folder, notes, trace)
            steps = sum(1 for event in read_trace(trace) if event["type"] == "model_call")
            sizes[notes] = trace.stat().st_size / steps
            emit(f"langgraph {notes} notes", "bytes_per_step", sizes[notes], digits=1, steps=steps)
        small, large = sorted(sizes)
        emit(f"langgraph {small} to {large} notes", "growth", sizes[large] / sizes[small])

        for name, run in EXAMPLES.items():
            once(run, sim.url, folder, 20, None)  # warm up imports, the SDK, the framework
            once(run, sim.url, folder, 20, folder / f"{name}-warm.trace.jsonl")  # and recording's
            off: list[tuple[float, float]] = []
            on: list[tuple[float, float]] = []
            for index in range(rounds):
                # Alternate, so drift in the machine's load falls on both sides alike, and so does
                # going first (the second run of a pair finds the caches the first one warmed).
                trace = folder / f"{name}-{index}.trace.jsonl"
                for recorded in (False, True) if index % 2 == 0 else (True, False):
                    (on if recorded else off).append(
                        once(run, sim.url, folder, 20, trace if recorded else None)
                    )
            steps = sum(1 for event in read_trace(trace) if event["type"] == "model_call")
            case = f"{name} 20 notes"
            for prefix, ratios, added in figures.rounds_compared(off, on, steps):
                emit(case, f"{prefix}overhead_ratio", statistics.median(ratios), rounds=rounds)
                emit(case, f"{prefix}overhead_ratio_min", min(ratios), rounds=rounds)
                if prefix == "cpu_":
                    emit(
                        case,
                        "cpu_ms_per_step",
                        statistics.median(added),
                        digits=3,
                        steps=steps,
                        rounds=rounds,
                    )


if __name__ == "__main__":
    main()
