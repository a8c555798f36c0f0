"""Event types of trace format version 1 and the fields each one must carry."""

from __future__ import annotations

from typing import Any

TRACE_VERSION = 1

Event = dict[str, Any]

# Required fields per event type, beyond "type". Optional fields are documented in
# docs/trace-format.md and the JSON Schema beside this module.
REQUIRED: dict[str, tuple[str, ...]] = {
    "run_start": ("v", "run_id", "agent", "started_at", "contract"),
    "model_call": ("seq", "t", "step", "provider", "request", "response"),
    "tool_call": ("seq", "t", "step", "name", "input", "duration_ms"),
    "checkpoint": ("seq", "t", "step", "state"),
    "compaction": ("seq", "t", "step", "tokens_before", "tokens_after", "summary"),
    "verification": ("seq", "t", "step", "name", "passed"),
    "note": ("seq", "t", "step", "message"),
    "run_end": ("seq", "t", "status", "totals"),
}
EVENT_TYPES: tuple[str, ...] = tuple(REQUIRED)

RUN_STATUSES = ("ok", "failed", "error", "interrupted", "budget_exhausted", "escalated")
