"""The framework examples recorded: trace size per step and recording overhead (issue 19).

- `bytes_per_step` of the LangGraph example (examples/notes_graph) at 20 and 200 notes, a step being
  one model call, and `growth` (the ratio of the two: linear growth is about 1; every checkpoint
  holds the graph's whole state, stored as a delta against the previous one);
- `overhead_ratio` of each example (LangGraph, pydantic-ai) at 20 notes: recording on over off, the
  median wall time of runs alternated in this one process against one simulated server (which of the
  two goes first alternating too), with the CPU time ratio beside it and `cpu_ms_per_step`, the CPU
  milliseconds recording adds per model step (median on - median off, over the run's steps).

Run from the repository root (needs pytest-agentevals[langgraph] and [pydantic-ai]):

    python benchmarks/frameworks.py [--quick]
"""

from __future__ import annotations

import argparse
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


def once(run: Run, url: str, folder: Path, notes: int, trace: Path | None) -> tuple[float, float]:
    workspace = Path(tempfile.mkdtemp(dir=folder))
    started, cpu = time.perf_counter(), time.process_time()
    if trace is None:
        run(url, workspace, notes)
    else:
        with Recorder(trace, agent="notes", packages=("anthropic",)):
            run(url, workspace, notes)
    return time.perf_counter() - started, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions, 100 notes for 200")
    args = parser.parse_args()
    repeats = 2 if args.quick else 5
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
            off: list[tuple[float, float]] = []
            on: list[tuple[float, float]] = []
            for index in range(repeats):
                # Alternate, so drift in the machine's load falls on both sides alike, and so does
                # going first (the second run of a pair finds the caches the first one warmed).
                trace = folder / f"{name}-{index}.trace.jsonl"
                for recorded in (False, True) if index % 2 == 0 else (True, False):
                    (on if recorded else off).append(
                        once(run, sim.url, folder, 20, trace if recorded else None)
                    )
            steps = sum(1 for event in read_trace(trace) if event["type"] == "model_call")
            wall = statistics.median(r[0] for r in on) / statistics.median(r[0] for r in off)
            cpu_on, cpu_off = statistics.median(r[1] for r in on), statistics.median(r[1] for r in off)
            emit(f"{name} 20 notes", "overhead_ratio", wall)
            emit(f"{name} 20 notes", "cpu_overhead_ratio", cpu_on / cpu_off)
            emit(
                f"{name} 20 notes",
                "cpu_ms_per_step",
                (cpu_on - cpu_off) * 1000 / steps,
                digits=3,
                steps=steps,
            )


if __name__ == "__main__":
    main()
