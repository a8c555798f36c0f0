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
    live: str | None = None  # watched (`agentevals report --watch`): "running", or "silent for 2 m"

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
    reading = RunReading(Path(path), context_windows=context_windows)
    for event in source:
        reading.add(event)
    return reading.view(problems=source.problems, damaged=source.damaged)


class RunReading:
    """A run as it is read, one event at a time, in one pass: what `read_run` builds from a whole
    trace, and what the live console (`live.py`) keeps up to date as a trace grows — `view()` at any
    point is the run so far, and reading on after it is not disturbed."""

    def __init__(self, path: Path, *, context_windows: Mapping[str, int] | None = None) -> None:
        self.path = path
        self._scan = MetricsScan(series=True, context_windows=context_windows)
        self._markers = self._scan.series().markers  # filled during the pass: loops tell the transcript
        self._loop_steps: set[int] = set()
        self._builder = TranscriptBuilder(self._loop_steps)
        self._seen = 0
        self.start: Event = {}
        self.end: Event | None = None
        self.compactions: list[Compaction] = []
        self.events = 0

    def add(self, event: Event) -> None:
        self.events += 1
        self._scan.add(event)
        markers = self._markers
        if len(markers) > self._seen:
            self._loop_steps.update(m.step for m in markers[self._seen :] if m.kind == "loop")
            self._seen = len(markers)
        self._builder.add(event)
        kind = event.get("type")
        if kind == "run_start":
            self.start = event
        elif kind == "run_end":
            self.end = event
        elif kind == "compaction":
            compaction = _compaction(event)
            if compaction is not None:
                self.compactions.append(compaction)

    def view(self, *, problems: list[str] | None = None, damaged: bool = False) -> RunView:
        """The run so far. While it is still being read, its transcript is a snapshot (its open steps
        as its last ones), and its series the scan's own (read it before reading on)."""
        return RunView(
            path=self.path,
            metrics=self._scan.metrics(),
            series=self._scan.series(),
            transcript=self._builder.snapshot(),
            start=self.start,
            end=self.end,
            problems=list(problems or []),
            damaged=damaged,
            compactions=list(self.compactions),
        )


def _compaction(event: Event) -> Compaction | None:
    before, after, step = event.get("tokens_before"), event.get("tokens_after"), event.get("step")
    if type(before) is not int or type(after) is not int:
        return None
    mark = number(event.get("high_water"))
    return Compaction(
        step if type(step) is int else 0, before, after, int(mark) if mark is not None else None
    )
