"""What a run report draws: per-call series, verified progress over steps, and markers.

Filled by the same single pass as the metrics (`metrics.analyze`); `to_json` stores the series as
columns (one list per field), compact to embed in a page and quick to chart.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

# Marker kinds, in the order a legend lists them.
MARKER_KINDS = (
    "checkpoint",
    "compaction",
    "watchdog",
    "loop",
    "restart",
    "crash",
    "retry",
    "guard",
    "budget_stop",
    "divergence",
)


@dataclass(frozen=True)
class CallPoint:
    """One successful model call."""

    step: int
    t: float
    model: str
    context_tokens: int  # input + cache write + cache read
    context_pressure: float | None  # context over the model's window; None for an unknown window
    input_tokens: int  # uncached input
    cache_write_tokens: int
    cache_read_tokens: int
    output_tokens: int
    cost_usd: float | None  # None when the price table did not know the model
    cumulative_cost_usd: float  # the known costs so far, from the start of the scope


@dataclass(frozen=True)
class ProgressPoint:
    """One verification: its own progress and the verified progress (max so far) after it."""

    step: int
    t: float
    name: str
    passed: bool
    value: float
    progress: float


@dataclass(frozen=True)
class Marker:
    kind: str  # one of MARKER_KINDS
    step: int
    t: float
    label: str  # one line a person reads (a tooltip)


@dataclass
class RunSeries:
    calls: list[CallPoint] = field(default_factory=list)
    progress: list[ProgressPoint] = field(default_factory=list)
    markers: list[Marker] = field(default_factory=list)
    budget: dict[str, Any] | None = None  # the run's recorded budgets (run_start.budget), if any

    def to_json(self) -> dict[str, Any]:
        return {
            "calls": _columns(CallPoint, self.calls),
            "progress": _columns(ProgressPoint, self.progress),
            "markers": [{"kind": m.kind, "step": m.step, "t": m.t, "label": m.label} for m in self.markers],
            "budget": self.budget,
        }


def _columns(kind: type, rows: list[Any]) -> dict[str, list[Any]]:
    names = [f.name for f in fields(kind)]
    return {name: [getattr(row, name) for row in rows] for name in names}
