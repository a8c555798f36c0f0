"""What every benchmark prints: one JSON line per figure, so a run's figures read side by side
(`python benchmarks/X.py | jq`) and a note can quote them as they were printed."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any


def emit(bench: str, case: str, metric: str, value: float, *, digits: int = 4, **extra: Any) -> None:
    record = {"bench": bench, "case": case, "metric": metric, "value": round(value, digits), **extra}
    print(json.dumps(record), flush=True)


def cpu_seconds(work: Callable[[], object]) -> float:
    """CPU seconds of `work` in this process: steadier than wall time on a shared machine."""
    started = time.process_time()
    work()
    return time.process_time() - started


Run = tuple[float, float]  # wall and CPU seconds of one run


def rounds_compared(
    off: Sequence[Run], on: Sequence[Run], steps: int
) -> Iterator[tuple[str, list[float], list[float]]]:
    """Per clock (wall, then CPU: the metric prefix "" or "cpu_"), each round's ratio of its on run
    over its off run, and the milliseconds per step each round's on run added."""
    for clock, prefix in ((0, ""), (1, "cpu_")):
        pairs = list(zip(off, on, strict=True))
        ratios = [b[clock] / a[clock] for a, b in pairs]
        added = [(b[clock] - a[clock]) * 1000 / steps for a, b in pairs]
        yield prefix, ratios, added
