"""One run as a report shows it, read from its trace in one pass: the metrics and the series they
draw (`metrics.analyze`'s single scan, not computed again here), the transcript, the run's start and
end, its compactions, and what was wrong with the file."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..metrics import MetricsScan, RunMetrics, RunSeries
from ..trace.events import Event
from ..trace.totals import number
from .load import TraceSource
from .transcript import Transcript, TranscriptBuilder


@dataclass(frozen=True)
class Compaction:
    step: int
    tokens_before: int
    tokens_after: int
    high_water: int | None  # the harness's mark, when it said (`high_water=` on the event)


@dataclass
class RunView:
    path: Path
    metrics: RunMetrics
    series: RunSeries
    transcript: Transcript
    start: Event
    end: Event | None
    problems: list[str] = field(default_factory=list)
    damaged: bool = False  # a line in the middle could not be read
    compactions: list[Compaction] = field(default_factory=list)

    @property
    def status(self) -> str:
        """run_end's status, or what the page says when there is none."""
        status = self.end.get("status") if self.end is not None else None
        return status if isinstance(status, str) else "unknown"

    @property
    def task(self) -> Any:
        return self.start.get("task")

    @property
    def error(self) -> str | None:
        error = self.end.get("error") if self.end is not None else None
        if not isinstance(error, dict):
            return None
        return f"{error.get('type')}: {error.get('message')}"


def read_run(path: str | Path, *, context_windows: Mapping[str, int] | None = None) -> RunView:
    """Read a trace for the report. Raises `TraceError` for a file that is not a trace; a damaged,
    torn or newer-version trace is read as far as it can be, its problems listed."""
    source = TraceSource(path)
    scan = MetricsScan(series=True, context_windows=context_windows)
    markers = scan.series().markers  # filled during the pass: the loop markers tell the transcript
    loop_steps: set[int] = set()
    builder = TranscriptBuilder(loop_steps)
    start: Event = {}
    end: Event | None = None
    compactions: list[Compaction] = []
    seen = 0
    for event in source:
        scan.add(event)
        if len(markers) > seen:
            loop_steps.update(m.step for m in markers[seen:] if m.kind == "loop")
            seen = len(markers)
        builder.add(event)
        kind = event.get("type")
        if kind == "run_start":
            start = event
        elif kind == "run_end":
            end = event
        elif kind == "compaction":
            compaction = _compaction(event)
            if compaction is not None:
                compactions.append(compaction)
    return RunView(
        path=Path(path),
        metrics=scan.metrics(),
        series=scan.series(),
        transcript=builder.transcript(),
        start=start,
        end=end,
        problems=source.problems,
        damaged=source.damaged,
        compactions=compactions,
    )


def _compaction(event: Event) -> Compaction | None:
    before, after, step = event.get("tokens_before"), event.get("tokens_after"), event.get("step")
    if type(before) is not int or type(after) is not int:
        return None
    mark = number(event.get("high_water"))
    return Compaction(
        step if type(step) is int else 0, before, after, int(mark) if mark is not None else None
    )
