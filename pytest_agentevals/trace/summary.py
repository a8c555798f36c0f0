"""A summary of one trace: what a person wants to know in ten seconds, computed in one pass."""

from __future__ import annotations

import warnings
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..errors import TraceFormatError
from .events import Event
from .reader import TraceReader
from .totals import TOKEN_KINDS, RunTotals, number

Observer = Callable[[Event], object]


@dataclass
class TraceSummary:
    path: str
    run_id: str | None = None
    agent: str | None = None
    session: str | None = None
    seed: Any = None
    started_at: str | None = None
    models: list[str] = field(default_factory=list)
    steps: int = 0
    model_calls: int = 0
    model_errors: int = 0
    streamed_calls: int = 0
    tool_calls: int = 0
    tool_errors: int = 0
    tools: dict[str, int] = field(default_factory=dict)
    tokens: dict[str, int] = field(default_factory=lambda: dict.fromkeys(TOKEN_KINDS, 0))
    cost_usd: float = 0.0
    # Cache-write tokens by lifetime (5m, 1h) and those recorded without the split ("unsplit").
    cache_writes: dict[str, int] = field(default_factory=lambda: {"5m": 0, "1h": 0, "unsplit": 0})
    checkpoints: int = 0
    compactions: int = 0
    verifications_passed: int = 0
    verifications_failed: int = 0
    last_progress: float | None = None
    notes: int = 0
    duration_s: float = 0.0
    status: str | None = None
    error: str | None = None
    bytes: int = 0
    problems: list[str] = field(default_factory=list)
    # Each model call that names itself to the world: seq, step, `request_id`, `traceparent`.
    correlation: list[dict[str, Any]] = field(default_factory=list)
    # Why reading stopped before the end (a damaged line in the middle), or None: read to the end.
    unreadable: str | None = None
    unpriced: set[str] = field(default_factory=set, repr=False)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("unpriced")
        return data


def summarize(path: str | Path, observers: Iterable[Observer] = ()) -> TraceSummary:
    """Summarize a trace. A torn last line or a missing run_end is a problem listed, not an error;
    a malformed line in the middle stops the summary there, is listed too, and sets `unreadable`.

    Each of `observers` is called with every event read (as read with `resolve=False`), so another
    consumer — the metrics of `agentevals show` — shares this one read of the file."""
    summary = TraceSummary(path=str(path))
    summary.bytes = Path(path).stat().st_size if Path(path).exists() else 0
    reader = TraceReader(path, resolve=False)  # deltas need no resolving to count
    totals = RunTotals()
    tools: Counter[str] = Counter()
    models: dict[str, None] = {}
    observing = tuple(observers)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the reader's warnings are listed as problems instead
            for event in reader:
                _add(summary, event, totals, tools, models)
                for observe in observing:
                    observe(event)
    except TraceFormatError as exc:
        if exc.line <= 1:
            raise
        summary.unreadable = f"{exc}; the summary covers the events before that line"
        summary.problems.append(str(exc))
    summary.problems[:0] = reader.problems
    if not reader.complete and summary.status is None:
        summary.problems.append("no run_end event: the run was killed or is still going")
    _take_totals(summary, totals)
    summary.tools = dict(tools.most_common())
    summary.models = list(models)
    if summary.unpriced:
        summary.problems.append(
            f"no price for {', '.join(sorted(summary.unpriced))}: the cost leaves those calls out "
            "(add them under [tool.agentevals.prices])"
        )
    return summary


def _take_totals(summary: TraceSummary, totals: RunTotals) -> None:
    summary.steps = totals.steps
    summary.model_calls = totals.model_calls
    summary.model_errors = totals.model_errors
    summary.tool_calls = totals.tool_calls
    summary.tool_errors = totals.tool_errors
    summary.tokens = totals.tokens
    summary.cost_usd = round(totals.cost_usd, 6)
    summary.cache_writes = totals.cache_writes
    summary.checkpoints = totals.checkpoints
    summary.compactions = totals.compactions
    summary.verifications_passed = totals.verifications_passed
    summary.verifications_failed = totals.verifications_failed
    summary.unpriced = totals.unpriced


def _add(
    summary: TraceSummary, event: Event, totals: RunTotals, tools: Counter[str], models: dict[str, None]
) -> None:
    kind = event["type"]
    t = number(event.get("t"))
    if t is not None:
        summary.duration_s = max(summary.duration_s, t)
    if kind == "model_call":
        _correlate(summary, event)
        if totals.add_model_call(event):
            if event.get("stream"):
                summary.streamed_calls += 1
            if isinstance(event.get("model"), str) and event["model"]:
                models[event["model"]] = None
        return
    totals.add(event)
    if kind == "run_start":
        summary.run_id = event["run_id"]
        summary.agent = event["agent"]
        session = event.get("session")
        summary.session = session if isinstance(session, str) else None
        summary.seed = event.get("seed")
        summary.started_at = event.get("started_at")
    elif kind == "tool_call":
        tools[str(event.get("name"))] += 1
    elif kind == "verification":
        progress = number(event.get("progress"))
        if progress is not None:
            summary.last_progress = progress
    elif kind == "note":
        summary.notes += 1
    elif kind == "run_end":
        summary.status = event.get("status")
        error = event.get("error")
        if isinstance(error, dict):
            summary.error = f"{error.get('type')}: {error.get('message')}"
        elif isinstance(event.get("reason"), str):  # why the run ended as it did (no_model_calls)
            summary.error = event["reason"]
        if summary.status == "no_model_calls":
            summary.problems.append("no model call was recorded: the run checked nothing (see `ended`)")
        elif summary.status not in (None, "ok"):
            # A run that its budget, watchdog or loop guard stopped, or that failed, is not a clean
            # run, and `problems none` under it read as one.
            summary.problems.append(
                f"the run ended {summary.status}, not ok" + (f": {summary.error}" if summary.error else "")
            )


def _correlate(summary: TraceSummary, event: Event) -> None:
    found = {key: event[key] for key in ("request_id", "traceparent") if isinstance(event.get(key), str)}
    if found:
        summary.correlation.append({"seq": event.get("seq"), "step": event.get("step"), **found})
