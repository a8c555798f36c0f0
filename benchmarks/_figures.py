"""What every benchmark prints: one JSON line per figure, so a run's figures read side by side
(`python benchmarks/X.py | jq`) and a note can quote them as they were printed."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any


def emit(bench: str, case: str, metric: str, value: float, *, digits: int = 4, **extra: Any) -> None:
    record = {"bench": bench, "case": case, "metric": metric, "value": round(value, digits), **extra}
    print(json.dumps(record), flush=True)


def cpu_seconds(work: Callable[[], object]) -> float:
    """CPU seconds of `work` in this process: steadier than wall time on a shared machine."""
    started = time.process_time()
    work()
    return time.process_time() - started
