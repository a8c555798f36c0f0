"""Incidents: the events of a run worth a marker and a count — checkpoints, compactions, restarts,
watchdog firings, guards, retried 429/529s (weather), replay divergences, budget stops, a crash.

Harnesses report some of them as plain notes, so they are recognised by what a note says:

- a restart: a note whose message starts with "restart" ("restarting from the last checkpoint"),
  or whose `data.action` or `data.decision` is "restart";
- a watchdog firing: a `watchdog` event whose action is "ask" (the framework's watchdog asking
  whether to go on; its "continue" and "expect" events are markers, not firings), or a note whose
  message starts with "watchdog" ("watchdog fired"); both are counted, as a harness reports either
  one or the other;
- a budget stop: a `guard` event whose status is `budget_exhausted`, or a note whose message says
  "budget exhausted";
- a replay divergence: the note the replay engine writes ("replay divergence").

Case is ignored. A 429 (rate limited) or 529 (overloaded) answer is weather, not an error of the
agent's: counted apart from the other failed model calls.
"""

from __future__ import annotations

from typing import Any

from ..trace.events import Event

WEATHER = {429: "rate_limited", 529: "overloaded"}
STOPPING_STATUSES = ("budget_exhausted", "stalled", "loop", "escalated")


def _data(event: Event) -> dict[str, Any]:
    data = event.get("data")
    return data if isinstance(data, dict) else {}


def _message(event: Event) -> str:
    message = event.get("message")
    return message.strip().lower() if isinstance(message, str) else ""


def is_restart(event: Event) -> bool:
    if event.get("type") != "note":
        return False
    data = _data(event)
    return _message(event).startswith("restart") or "restart" in (data.get("action"), data.get("decision"))


def is_watchdog(event: Event) -> bool:
    """A watchdog event or note (a marker)."""
    kind = event.get("type")
    return kind == "watchdog" or (kind == "note" and _message(event).startswith("watchdog"))


def is_watchdog_fire(event: Event) -> bool:
    """A watchdog firing (counted): see the module docstring."""
    kind = event.get("type")
    if kind == "watchdog":
        return event.get("action") in ("ask", None)
    return kind == "note" and _message(event).startswith("watchdog")


def is_budget_stop(event: Event) -> bool:
    kind = event.get("type")
    if kind == "guard":
        return event.get("status") == "budget_exhausted"
    return kind == "note" and "budget exhausted" in _message(event)


def is_divergence(event: Event) -> bool:
    return event.get("type") == "note" and _message(event).startswith("replay divergence")


def weather(event: Event) -> str | None:
    """ "rate_limited" or "overloaded" for a model call answered 429 or 529, else None."""
    if event.get("type") != "model_call":
        return None
    response = event.get("response")
    status = response.get("status") if isinstance(response, dict) else None
    return WEATHER.get(status) if isinstance(status, int) else None


def incident_of(event: Event) -> str | None:
    """The marker an event makes, if any: checkpoint, compaction, restart, watchdog, budget_stop,
    guard, retry, divergence or crash (a run_end with an error)."""
    kind = event.get("type")
    if kind == "model_call":
        return "retry" if weather(event) else None
    if kind in ("checkpoint", "compaction"):
        return str(kind)
    if kind == "watchdog":
        return "watchdog"
    if kind == "guard":
        return "budget_stop" if is_budget_stop(event) else "guard"
    if kind == "note":
        if is_restart(event):
            return "restart"
        if is_watchdog(event):
            return "watchdog"
        if is_budget_stop(event):
            return "budget_stop"
        if is_divergence(event):
            return "divergence"
        return None
    if kind == "run_end" and isinstance(event.get("error"), dict):
        return "crash"
    return None


def describe(event: Event) -> str:
    """One line a person reads about an incident's event."""
    kind = event.get("type")
    data = _data(event)
    if kind == "model_call":
        error = event.get("error")
        return str(error) if error else f"HTTP {event.get('response', {}).get('status')}"
    if kind == "checkpoint":
        return str(event.get("name") or "checkpoint")
    if kind == "compaction":
        return f"compacted {event.get('tokens_before')} → {event.get('tokens_after')} tokens"
    if kind in ("guard", "watchdog"):
        parts = [event.get("guard"), event.get("action"), event.get("status"), event.get("reason")]
        return " · ".join(str(part) for part in parts if part)
    if kind == "run_end":
        error = event.get("error") or {}
        return f"{error.get('type')}: {error.get('message')}"
    reason = data.get("reason") or data.get("headline")
    return str(event.get("message")) + (f": {reason}" if reason else "")
