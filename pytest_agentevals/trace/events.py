"""Event types of trace format version 1 and the fields each one must carry."""

from __future__ import annotations

import math
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
    "guard": ("seq", "t", "step", "guard", "action", "reason"),
    "watchdog": ("seq", "t", "step", "action", "reason"),
    "run_end": ("seq", "t", "status", "totals"),
}
EVENT_TYPES: tuple[str, ...] = tuple(REQUIRED)

_NUMBER = (int, float)
# The JSON types of the required fields, checked by the reader so every consumer can rely on them.
FIELD_TYPES: dict[str, tuple[type, ...]] = {
    "v": (int,),
    "run_id": (str,),
    "agent": (str,),
    "started_at": (str,),
    "contract": (dict,),
    "seq": (int,),
    "t": _NUMBER,
    "step": (int,),
    "provider": (str,),
    "request": (dict,),
    "response": (dict,),
    "name": (str,),
    "input": (dict,),
    "duration_ms": _NUMBER,
    "state": (dict,),
    "tokens_before": (int,),
    "tokens_after": (int,),
    "summary": (str,),
    "passed": (bool,),
    "message": (str,),
    "status": (str,),
    "totals": (dict,),
    "guard": (str,),
    "action": (str,),
    "reason": (str,),
}

_JSON_NAMES = {
    int: "an integer",
    float: "a number",
    str: "a string",
    dict: "an object",
    bool: "true or false",
}


def type_problem(name: str, value: object) -> str | None:
    """What is wrong with a required field's value, or None when its type is right."""
    expected = FIELD_TYPES.get(name)
    if expected is None:
        return None
    # JSON true/false are not numbers, whatever Python's bool thinks.
    if isinstance(value, expected) and (bool in expected or not isinstance(value, bool)):
        return None
    return f"{name} must be {_JSON_NAMES[expected[0]]}, found {json_type(value)}"


def cost_problem(value: object) -> str | None:
    """What is wrong with a stored cost in dollars (absent or null is no cost), or None."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return f"must be a number of dollars, found {json_type(value)}"
    if not math.isfinite(value) or value < 0:
        return f"is {value!r}: a cost is a finite number of dollars, at least 0"
    return None


def json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    return {dict: "an object", list: "an array", str: "a string", int: "an integer", float: "a number"}.get(
        type(value), type(value).__name__
    )


RUN_STATUSES = (
    "ok",
    "failed",
    "error",
    "interrupted",
    "budget_exhausted",
    "escalated",
    "stalled",
    "loop",
    "no_model_calls",
)
# A recording that saw no model call ended as `no_model_calls`, not `ok`: it checked nothing.
NO_MODEL_CALLS = "no_model_calls"
NO_MODEL_CALLS_REASON = (
    "the run made no model call that was recorded: neither the agent in this process (through httpx) "
    "nor any process through the model endpoint. If the agent runs in a subprocess (the Claude Code "
    "CLI, the Claude Agent SDK, a Node agent), it was likely not pointed at the endpoint: run it with "
    "`agentevals record -- COMMAND ...`, or give it the endpoint's environment (model_endpoint().env, "
    "the agentevals_endpoint fixture's env) — see docs/endpoint.md"
)
# What a guard event's `action` says: it stopped the run, reported something, or failed itself.
GUARD_ACTIONS = ("stop", "warn", "error")
# What a watchdog event's `action` says: it asks whether to go on, the answer was to go on, or the
# harness announced long work (`expect_progress`).
WATCHDOG_ACTIONS = ("ask", "continue", "expect")
