"""From a recorded run to golden step cases: find its decision points, freeze the context at each, and
take the recorded decision as the starting expectation for a person to edit.

Decision points in a trace:
- a model call that called tools: `tool_choice` (one call) or `trajectory` (several at once);
- a model call that called an escalation tool, or ended its turn without a tool: `escalation`;
- a `compaction` event: `compaction`, its context the summarizing model call when there was one;
- a harness decision: a `note` whose data has an `action` or `decision` (a watchdog firing, a budget
  spent), and a run that ended `escalated` or `budget_exhausted`: `escalation`, its context a
  snapshot of the harness's state built from the trace (recent tool calls, progress, tokens spent).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import GoldenError, TraceError
from ..trace.events import Event
from ..trace.fidelity import require
from ..trace.messages import response_message
from ..trace.reader import TraceReader
from .decision import Decision
from .kinds import KIND_NAMES, KINDS
from .store import Exchange

# How harness notes name what they did, mapped onto escalate / yield / stop (None: carried on).
NOTE_ACTIONS: dict[str, str | None] = {
    "escalate": "escalate",
    "yield": "yield",
    "abort": "yield",
    "restart": "yield",
    "stop": "stop",
    "halt": "stop",
    "give_up": "stop",
    "continue": None,
    "nudge": None,
    "proceed": None,
}
ENDINGS = {"escalated": "escalate", "budget_exhausted": "stop"}
RECENT_TOOL_CALLS = 10


@dataclass
class DecisionPoint:
    """One decision found in a trace, ready to become a step case."""

    kind: str
    step: int
    context: dict[str, Any]
    decision: Decision
    exchange: Exchange | None = None  # the model exchange to replay, for a model decision
    line: int = 0  # the event's 1-based line in the trace
    what: str = ""

    @property
    def case_id(self) -> str:
        return f"step-{self.step}-{self.kind.replace('_', '-')}"


@dataclass
class _Harness:
    """The harness's state as the trace tells it, kept up to date event by event."""

    steps: int = 0
    tokens: int = 0
    verified: list[str] = field(default_factory=list)
    last_verified_step: int = 0
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    note_counts: dict[str, int] = field(default_factory=dict)
    checkpoint: Any = None

    def see(self, event: Event) -> None:
        kind = event["type"]
        if kind == "model_call" and isinstance(event.get("usage"), Mapping):
            self.steps = max(self.steps, int(event.get("step") or 0))
            self.tokens += sum(v for v in event["usage"].values() if isinstance(v, int))
        elif kind == "tool_call":
            call = {"name": event.get("name"), "input": event.get("input")}
            if "error" in event:
                call["error"] = (
                    event["error"].get("message") if isinstance(event["error"], Mapping) else event["error"]
                )
            self.tool_calls = [*self.tool_calls, call][-RECENT_TOOL_CALLS:]
        elif kind == "verification" and event.get("passed"):
            if event.get("name") not in self.verified:
                self.verified.append(str(event.get("name")))
            self.last_verified_step = int(event.get("step") or 0)
        elif kind == "note":
            self.notes = [*self.notes, str(event.get("message"))][-RECENT_TOOL_CALLS:]
            self.note_counts[str(event.get("message"))] = (
                self.note_counts.get(str(event.get("message")), 0) + 1
            )
        elif kind == "checkpoint":
            self.checkpoint = event.get("state")

    def snapshot(self, step: int, trigger: Mapping[str, Any]) -> dict[str, Any]:
        return {
            "trigger": dict(trigger),
            "step": step,
            "tokens_spent": self.tokens,
            "verified": list(self.verified),
            "steps_since_verified": step - self.last_verified_step,
            "recent_tool_calls": list(self.tool_calls),
            "earlier_notes": list(self.notes),
            "note_counts": dict(self.note_counts),
            "checkpoint": self.checkpoint,
        }


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_") or "note"


def _data(event: Event) -> Mapping[str, Any]:
    data = event.get("data")
    return data if isinstance(data, Mapping) else {}


def _note_decision(event: Event) -> Decision | None:
    """The harness decision a note records, or None when the note is not a decision."""
    data = _data(event)
    said = data.get("decision", data.get("action"))
    message = str(event.get("message", ""))
    kind = str(data.get("kind") or _slug(message))
    if isinstance(said, str) and said in NOTE_ACTIONS:
        action = NOTE_ACTIONS[said]
        return (
            Decision.proceed(message)
            if action is None
            else Decision.escalate(kind, action=action, reason=message)
        )
    if "exhausted" in message.lower():
        return Decision.escalate(kind, action="stop", reason=message)
    return None


def _trigger(event: Event) -> dict[str, Any]:
    """What a harness decision was about, without what was decided."""
    data = _data(event)
    return {
        "message": event.get("message"),
        **{k: v for k, v in data.items() if k not in ("action", "decision")},
    }


def decision_points(events: Sequence[Event]) -> list[DecisionPoint]:
    """Every decision point of a trace, in the order they happened."""
    points: list[DecisionPoint] = []
    harness = _Harness()
    summarizers = _summarizing_calls(events)
    for line, event in enumerate(events, start=1):
        kind = event["type"]
        step = int(event.get("step") or 0)
        if kind == "model_call" and event.get("provider") == "anthropic" and id(event) not in summarizers:
            point = _model_point(event, line)
            if point is not None:
                points.append(point)
        elif kind == "compaction":
            call = summarizers.get(id(event))
            context: dict[str, Any] = {"state": {"tokens_before": event.get("tokens_before")}}
            exchange = None
            if call is not None:
                context["request"] = dict(call["request"].get("body") or {})
                exchange = Exchange.of(call)
            summary = str(event.get("summary", ""))
            points.append(
                DecisionPoint(
                    "compaction", step, context, Decision.compaction(summary), exchange, line, "compaction"
                )
            )
        elif kind == "note":
            decision = _note_decision(event)
            if decision is not None:
                state = harness.snapshot(step, _trigger(event))
                points.append(
                    DecisionPoint(
                        "escalation", step, {"state": state}, decision, None, line, str(event.get("message"))
                    )
                )
        elif kind == "run_end" and event.get("status") in ENDINGS:
            status = str(event["status"])
            state = harness.snapshot(harness.steps, {"message": f"run ended {status}"})
            decision = Decision.escalate(status, action=ENDINGS[status])
            points.append(
                DecisionPoint(
                    "escalation", harness.steps, {"state": state}, decision, None, line, f"run {status}"
                )
            )
        harness.see(event)
    return points


def _model_point(event: Event, line: int) -> DecisionPoint | None:
    response = event.get("response") or {}
    status = response.get("status", 0)
    body = (event.get("request") or {}).get("body")
    if not (isinstance(status, int) and 200 <= status < 300) or not isinstance(body, Mapping):
        return None
    message = response_message(response)
    if message is None:
        return None
    decision = Decision.from_message(message)
    if decision.escalation is not None:
        kind = "escalation"
    elif len(decision.tool_calls) == 1:
        kind = "tool_choice"
    elif decision.tool_calls:
        kind = "trajectory"
    else:
        return None
    step = int(event.get("step") or 0)
    return DecisionPoint(
        kind, step, {"request": dict(body)}, decision, Exchange.of(event), line, "model call"
    )


def _summarizing_calls(events: Sequence[Event]) -> dict[int, Event]:
    """Compaction events and the model calls that wrote their summaries, both ways round (by id)."""
    pairs: dict[int, Event] = {}
    for index, event in enumerate(events):
        if event["type"] != "compaction":
            continue
        summary = str(event.get("summary", "")).strip()
        for earlier in reversed(events[max(0, index - 5) : index]):
            if earlier["type"] != "model_call":
                continue
            message = response_message(earlier.get("response") or {})
            text = Decision.from_message(message).text.strip() if message else ""
            if summary and text and (text in summary or summary in text):
                pairs[id(event)] = earlier
                pairs[id(earlier)] = event
            break
    return pairs


def select(
    points: Iterable[DecisionPoint], steps: Iterable[int] = (), kinds: Iterable[str] = ()
) -> list[DecisionPoint]:
    """The points at the given steps and of the given kinds (all of them when none are given)."""
    wanted_steps, wanted_kinds = set(steps), set(kinds)
    return [
        point
        for point in points
        if (not wanted_steps or point.step in wanted_steps)
        and (not wanted_kinds or point.kind in wanted_kinds)
    ]


def points_in(trace: str | Path) -> list[DecisionPoint]:
    """Every decision point of a recorded run. Raises GoldenError when it cannot be read."""
    try:
        # A decision needs a checkpoint's state, never its workspace: workspace deltas stay as stored.
        events = list(TraceReader(trace, workspaces=False))
    except TraceError as exc:
        raise GoldenError(
            str(trace), f"cannot be read: {exc}", "give a trace recorded by agentevals"
        ) from None
    require(events[0], "step extract", trace)  # an `outline` import holds no context to freeze
    return decision_points(events)


def extract(trace: str | Path, steps: Iterable[int] = (), kinds: Iterable[str] = ()) -> list[DecisionPoint]:
    """The chosen decision points of a recorded run. Raises GoldenError when none match."""
    unknown = [kind for kind in kinds if kind not in KIND_NAMES]
    if unknown:
        raise GoldenError("--kind", f"{unknown[0]!r} is not a kind", "use one of: " + ", ".join(KIND_NAMES))
    points = points_in(trace)
    chosen = select(points, steps, kinds)
    if not chosen:
        found = ", ".join(f"{p.step} ({p.kind})" for p in points[:40]) or "none"
        raise GoldenError(
            str(trace),
            "has no decision point at the steps and kinds asked for",
            f"its decision points are at steps: {found}",
        )
    return chosen


def case_data(point: DecisionPoint, trace_label: str, case_id: str) -> dict[str, Any]:
    """A case as a goldens file writes it: expectation first, for the person who edits it."""
    return {
        "id": case_id,
        "kind": point.kind,
        "source": {"trace": trace_label, "step": point.step, "line": point.line},
        "expect": KINDS[point.kind].data_from(point.decision),
        "context": point.context,
    }


def unique_ids(points: Sequence[DecisionPoint], taken: Iterable[str] = ()) -> list[str]:
    """Case ids for the points, made unique among themselves and the ids already taken."""
    used = set(taken)
    ids: list[str] = []
    for point in points:
        candidate, n = point.case_id, 2
        while candidate in used:
            candidate, n = f"{point.case_id}-{n}", n + 1
        used.add(candidate)
        ids.append(candidate)
    return ids


def shared_request(cases: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The request fields every case with a request has alike (model, system, tools...), messages
    excepted: they go to the file's `defaults`, so each case shows only its own history."""
    requests = [case["context"]["request"] for case in cases if "request" in case["context"]]
    if len(requests) < 2:
        return {}
    first = requests[0]
    return {
        key: value
        for key, value in first.items()
        if key != "messages" and all(key in other and other[key] == value for other in requests[1:])
    }
