"""A summary of one trace: what a person wants to know in ten seconds, computed in one pass."""

from __future__ import annotations

import warnings
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..errors import TraceFormatError
from .reader import TraceReader

TOKEN_KINDS = ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")


@dataclass
class TraceSummary:
    path: str
    run_id: str | None = None
    agent: str | None = None
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
    # Why reading stopped before the end (a damaged line in the middle), or None: read to the end.
    unreadable: str | None = None
    unpriced: set[str] = field(default_factory=set, repr=False)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("unpriced")
        return data


def summarize(path: str | Path) -> TraceSummary:
    """Summarize a trace. A torn last line or a missing run_end is a problem listed, not an error;
    a malformed line in the middle stops the summary there, is listed too, and sets `unreadable`."""
    summary = TraceSummary(path=str(path))
    summary.bytes = Path(path).stat().st_size if Path(path).exists() else 0
    reader = TraceReader(path, resolve=False)  # deltas need no resolving to count
    tools: Counter[str] = Counter()
    models: dict[str, None] = {}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the reader's warnings are listed as problems instead
            for event in reader:
                _add(summary, event, tools, models)
    except TraceFormatError as exc:
        if exc.line <= 1:
            raise
        summary.unreadable = f"{exc}; the summary covers the events before that line"
        summary.problems.append(str(exc))
    summary.problems[:0] = reader.problems
    if not reader.complete and summary.status is None:
        summary.problems.append("no run_end event: the run was killed or is still going")
    summary.tools = dict(tools.most_common())
    summary.models = list(models)
    summary.cost_usd = round(summary.cost_usd, 6)
    if summary.unpriced:
        summary.problems.append(
            f"no price for {', '.join(sorted(summary.unpriced))}: the cost leaves those calls out "
            "(add them under [tool.agentevals.prices])"
        )
    return summary


def _add(summary: TraceSummary, event: dict[str, Any], tools: Counter[str], models: dict[str, None]) -> None:
    kind = event["type"]
    if isinstance(event.get("t"), int | float):
        summary.duration_s = max(summary.duration_s, float(event["t"]))
    if kind == "run_start":
        summary.run_id = event["run_id"]
        summary.agent = event["agent"]
        summary.seed = event.get("seed")
        summary.started_at = event.get("started_at")
    elif kind == "model_call":
        summary.model_calls += 1
        status = event.get("response", {}).get("status", 0)
        if not (isinstance(status, int) and 200 <= status < 300):
            summary.model_errors += 1
            return
        summary.steps = max(summary.steps, int(event.get("step", 0)))
        if event.get("stream"):
            summary.streamed_calls += 1
        if isinstance(event.get("model"), str) and event["model"]:
            models[event["model"]] = None
        usage = event.get("usage")
        for key, value in usage.items() if isinstance(usage, dict) else ():
            if key in summary.tokens and isinstance(value, int):
                summary.tokens[key] += value
        cost = event.get("cost_usd")
        if isinstance(cost, int | float) and not isinstance(cost, bool):
            summary.cost_usd += cost
        elif cost is None and isinstance(event.get("model"), str):
            summary.unpriced.add(event["model"])
    elif kind == "tool_call":
        summary.tool_calls += 1
        tools[str(event.get("name"))] += 1
        if "error" in event:
            summary.tool_errors += 1
    elif kind == "checkpoint":
        summary.checkpoints += 1
    elif kind == "compaction":
        summary.compactions += 1
    elif kind == "verification":
        if event.get("passed"):
            summary.verifications_passed += 1
        else:
            summary.verifications_failed += 1
        if isinstance(event.get("progress"), int | float) and not isinstance(event["progress"], bool):
            summary.last_progress = float(event["progress"])
    elif kind == "note":
        summary.notes += 1
    elif kind == "run_end":
        summary.status = event.get("status")
        error = event.get("error")
        if isinstance(error, dict):
            summary.error = f"{error.get('type')}: {error.get('message')}"
