"""Metrics speed: computing every metric of a 10,000-step trace against just reading it.

The trace is made once, with the real recorder and writer: the example agent's run against the
simulated server (300 steps, non-streamed: the smaller lines make reading cheapest, so the ratio
hardest) is recorded, then its events are written again end to end by a `TraceWriter`, steps,
sequence numbers and times shifted, until the trace holds 10,000 steps; verified progress is scaled
so it rises over the whole run. Then, alternately in this one process:

- read: `read_trace(path)`, every event parsed and its request resolved;
- metrics: `metrics.compute_file(path)`, the same file read once and every metric computed;
- read+compute: `read_trace(path)` and then `metrics.compute(events)` on the list it returned.

Prints one JSON line per figure: `metrics_ratio_to_read` (metrics over read, medians of CPU time)
and `read_then_compute_ratio` (read+compute over read). The first can come out below 1: the metrics
stream the file without resolving request deltas into whole requests or keeping the events, which
`read_trace` does; the second is what the metrics add for a caller who already holds the events.
Run from the repository root:

    python benchmarks/metrics.py [--quick]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from functools import partial
from pathlib import Path

import _figures as figures
from _tiles import record_tile, tiled_trace  # benchmarks/: the folder of the script run

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the examples package

from pytest_agentevals import metrics, read_trace

STEPS = 10_000


def make_trace(folder: Path, steps: int) -> Path:
    return tiled_trace(folder, record_tile(folder, stream=False), steps)


emit = partial(figures.emit, "metrics")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a 1,000-step trace, fewer repetitions")
    args = parser.parse_args()
    steps, repeats = (1_000, 3) if args.quick else (STEPS, 7)
    case = f"{steps} steps"
    with tempfile.TemporaryDirectory() as folder:
        path = make_trace(Path(folder), steps)
        found = metrics.compute_file(path)
        if found.steps != steps:
            raise SystemExit(f"the trace holds {found.steps} steps, not {steps}")
        read: list[float] = []
        computed: list[float] = []
        both: list[float] = []
        figures.cpu_seconds(lambda: read_trace(path))  # warm the page cache and the imports
        for _ in range(repeats):
            # Alternate, so drift in the machine's load falls on every side alike.
            read.append(figures.cpu_seconds(lambda: read_trace(path)))
            computed.append(figures.cpu_seconds(lambda: metrics.compute_file(path)))
            both.append(figures.cpu_seconds(lambda: metrics.compute(read_trace(path))))
        floor = statistics.median(read)
        emit(case, "read_seconds", floor)
        emit(case, "metrics_seconds", statistics.median(computed))
        emit(case, "metrics_ratio_to_read", statistics.median(computed) / floor)
        emit(case, "read_then_compute_ratio", statistics.median(both) / floor)
        emit(case, "trace_mib", path.stat().st_size / 2**20)


if __name__ == "__main__":
    main()
