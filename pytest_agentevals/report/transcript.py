"""The transcript of a run, step by step, kept light for a long run.

The events of step *s* are its model call (failed attempts included) and what the harness did after
it, up to the next step (docs/metrics.md, "Steps"). Every step gets one line of text (its tools,
checks and markers); the steps that matter get their whole record — the request's new messages, the
model's answer, each tool's input and output: the first steps, the last ones, and those with an
incident, a failure or a marker. Those are sampled evenly when a long run has too many, so a
30-hour run's page holds a few hundred records, not tens of thousands. Texts are cut to a preview,
with more (up to `FULL_CHARS`) one click away and the size of the whole said.

Fed one event at a time, in the same pass as the metrics; the raw events of only the last
`LAST_STEPS` steps are held at once.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..metrics import incident_of, weather
from ..trace.events import Event
from ..trace.messages import response_message
from ..trace.render import trace_id
from ..trace.totals import http_ok, is_model_call, number

PREVIEW_CHARS = 600  # shown at once
FULL_CHARS = 6_000  # one click away; beyond it the trace holds the rest
LINE_CHARS = 160  # one step's line of text
FIRST_STEPS = 3
LAST_STEPS = 20

# Why a step's whole record is kept, by tier: incidents first, then failures and compactions, then
# the common markers (a run may checkpoint every other step, or meet a 429 an hour).
INCIDENTS = frozenset(
    {"crash", "guard", "budget_stop", "watchdog", "loop", "divergence", "restart", "model_error"}
)
FAILURES = frozenset({"tool_error", "failed_check", "compaction"})
TIER_CAPS = (120, 80, 60)  # incidents, failures and compactions, checkpoints and retries


@dataclass(frozen=True)
class Text:
    """A text of the trace as the page holds it: `preview`, then `more` (None when the preview is
    all of it), and the length of the whole in characters and UTF-8 bytes."""

    preview: str
    more: str | None
    chars: int
    size: int

    @property
    def cut(self) -> bool:
        """Whether even `more` stops short of the whole."""
        shown = self.preview + (self.more or "")
        return len(shown) < self.chars

    @classmethod
    def of(cls, value: Any) -> Text:
        text = value if isinstance(value, str) else _json(value)
        if len(text) <= PREVIEW_CHARS:
            return cls(text, None, len(text), len(text.encode("utf-8", "replace")))
        return cls(
            text[:PREVIEW_CHARS],
            text[PREVIEW_CHARS:FULL_CHARS],
            len(text),
            len(text.encode("utf-8", "replace")),
        )

    def light(self) -> Text:
        """Only the preview: for records past the page's size budget."""
        return Text(self.preview, None, self.chars, self.size)


@dataclass(frozen=True)
class Item:
    """One thing that happened in a step: a model call, a failed attempt, a tool call, a check..."""

    kind: str  # model_call, attempt, tool_call, verification, checkpoint, compaction, note, guard...
    title: str
    failed: bool = False
    texts: tuple[tuple[str, Text], ...] = ()

    def light(self) -> Item:
        return Item(self.kind, self.title, self.failed, tuple((label, t.light()) for label, t in self.texts))


@dataclass
class StepRecord:
    """A step kept whole: its number, time, why it was kept, and what happened."""

    index: int  # its position among the run's steps (a crafted trace may repeat a step number)
    step: int
    t: float
    reasons: list[str]
    items: list[Item]
    line: str

    def light(self) -> StepRecord:
        return StepRecord(
            self.index, self.step, self.t, self.reasons, [item.light() for item in self.items], self.line
        )

    @property
    def chars(self) -> int:
        return sum(
            len(t.preview) + len(t.more or "") + len(item.title) for item in self.items for _, t in item.texts
        )


@dataclass
class Transcript:
    lines: list[str] = field(default_factory=list)  # one per step, every step
    records: list[StepRecord] = field(default_factory=list)  # the steps kept whole, in order
    steps: int = 0  # how many steps (groups of events) the run had
    sampled: bool = False  # more steps mattered than are kept whole: the kept ones are spread evenly


class _Sampler:
    """Keeps at most `cap` of a stream, evenly spaced: every `stride`-th, the stride doubling as
    it fills (so the kept ones span the whole run, not its start)."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.kept: list[StepRecord] = []
        self._seen = 0
        self.stride = 1

    def add(self, record: StepRecord) -> None:
        if self._seen % self.stride == 0:
            self.kept.append(record)
            if len(self.kept) > self.cap:
                self.kept = self.kept[::2]
                self.stride *= 2
        self._seen += 1


class TranscriptBuilder:
    """Builds a `Transcript` from a run's events, fed one at a time. `loop_steps` is the set of steps
    the metrics found a loop at (filled during the same pass; read when a step is finished)."""

    def __init__(self, loop_steps: set[int] | None = None) -> None:
        self._loop_steps = loop_steps if loop_steps is not None else set()
        self._group: list[Event] = []
        self._group_step: int | None = None
        self._pending: deque[tuple[int, list[Event]]] = deque()
        self._index = 0
        self._lines: list[str] = []
        self._first: list[StepRecord] = []
        self._tiers = [_Sampler(cap) for cap in TIER_CAPS]
        # The open steps' records as the last snapshot made them: index -> (events then, looped, record).
        # A step's events only grow, so the same count is the same step (the live console snapshots
        # at every update, and re-making the last twenty steps' records was most of a snapshot).
        self._snapped: dict[int, tuple[int, bool, StepRecord]] = {}

    def add(self, event: Event) -> None:
        kind = event.get("type")
        if kind == "run_start":
            return
        step = event.get("step")
        if type(step) is int and step != self._group_step and kind != "run_end":
            self._close_group()
            self._group_step = step
        self._group.append(event)

    def _close_group(self) -> None:
        if not self._group:
            return
        self._pending.append((self._index, self._group))
        self._lines.append("")  # filled when the step is finished
        self._index += 1
        self._group = []
        if len(self._pending) > LAST_STEPS:
            index, events = self._pending.popleft()
            self._finish(index, events, last=False)

    def _finish(self, index: int, events: list[Event], last: bool) -> None:
        step, t = _step_of(events), _t(events[0])
        reasons = reasons_of(events, step in self._loop_steps)
        line = step_line(step, t, events, reasons)
        self._lines[index] = line
        keep_first = index < FIRST_STEPS
        if not (last or keep_first or reasons):
            return
        record = StepRecord(index, step, t, reasons, items_of(events), line)
        if last or keep_first:
            record.reasons = [*reasons, "last steps" if last else "first steps"]
            self._first.append(record)
            return
        tier = 0 if INCIDENTS.intersection(reasons) else 1 if FAILURES.intersection(reasons) else 2
        self._tiers[tier].add(record)

    def snapshot(self) -> Transcript:
        """The transcript so far, without closing anything: the steps not yet finished are shown as
        the last ones, and adding events afterwards goes on as if this was never asked."""
        pending = list(self._pending)
        if self._group:
            pending.append((self._index, self._group))
        lines = list(self._lines)  # the open group (not closed yet) has no line so far
        if self._group:
            lines.append("")
        records = {r.index: r for tier in self._tiers for r in tier.kept}
        records.update({r.index: r for r in self._first})
        snapped: dict[int, tuple[int, bool, StepRecord]] = {}
        for index, events in pending:
            step = _step_of(events)
            looped = step in self._loop_steps
            known = self._snapped.get(index)
            if known is not None and known[0] == len(events) and known[1] == looped:
                record = known[2]
            else:
                t = _t(events[0])
                reasons = reasons_of(events, looped)
                line = step_line(step, t, events, reasons)
                record = StepRecord(index, step, t, [*reasons, "last steps"], items_of(events), line)
            snapped[index] = (len(events), looped, record)
            lines[index] = record.line
            records[index] = record
        self._snapped = snapped
        sampled = any(tier.stride > 1 for tier in self._tiers)
        return Transcript(lines, [records[i] for i in sorted(records)], len(lines), sampled)

    def transcript(self) -> Transcript:
        self._close_group()
        while self._pending:
            index, events = self._pending.popleft()
            self._finish(index, events, last=True)
        records = {r.index: r for tier in self._tiers for r in tier.kept}
        records.update({r.index: r for r in self._first})
        sampled = any(tier.stride > 1 for tier in self._tiers)
        return Transcript(self._lines, [records[i] for i in sorted(records)], len(self._lines), sampled)


def reasons_of(events: Iterable[Event], looped: bool) -> list[str]:
    """Why a step matters: the markers of its events (the metrics' incidents), its failures."""
    found: dict[str, None] = {}
    for event in events:
        kind = event.get("type")
        marker = incident_of(event)
        if marker is not None:
            found[marker] = None
        if kind == "tool_call" and "error" in event:
            found["tool_error"] = None
        elif kind == "verification" and not event.get("passed"):
            found["failed_check"] = None
        elif kind == "model_call" and is_model_call(event) and not http_ok(event) and not weather(event):
            found["model_error"] = None
    if looped:
        found["loop"] = None
    return list(found)


def step_line(step: int, t: float, events: list[Event], reasons: list[str]) -> str:
    """One line for a person: the step, its time, its tool calls and checks, its markers."""
    parts: list[str] = []
    tools = [event for event in events if event.get("type") == "tool_call"]
    if tools:
        for event in tools:  # the tool's own result: it answered, or it raised
            result = "→ error" if "error" in event else "→ returned"
            parts.append(f"tool {event.get('name')}({_args(event.get('input'))}) {result}")
    else:
        for event in events:
            if event.get("type") == "model_call" and http_ok(event):
                parts.extend(f"{name} (asked)" for name in _tool_uses(event))
    for event in events:
        kind = event.get("type")
        if kind == "verification":
            progress = number(event.get("progress"))
            shown = f" {progress:.2f}" if progress is not None else ""
            verdict = "PASSED" if event.get("passed") else "FAILED"  # the harness's check, not a tool's
            parts.append(f"harness check {event.get('name')} {verdict}{shown}")
        elif kind == "run_end":
            parts.append(f"run ended {event.get('status')}")
    markers = [reason for reason in reasons if reason not in ("tool_error", "failed_check")]
    text = " · ".join(parts) or "no tool call"
    if markers:
        text += "  [" + ", ".join(markers) + "]"
    line = f"step {step:>5}  {t:>9.1f}s  {text}"
    return line if len(line) <= LINE_CHARS else line[: LINE_CHARS - 1] + "…"


def items_of(events: Iterable[Event]) -> list[Item]:
    """What happened in a step, in order, as the transcript shows it."""
    items: list[Item] = []
    for event in events:
        item = _item(event)
        if item is not None:
            items.append(item)
    return items


Texts = tuple[tuple[str, Text], ...]


def _item(event: Event) -> Item | None:
    kind = str(event.get("type"))
    texts: Texts
    if kind == "model_call":
        return _model_call(event)
    if kind == "tool_call":
        duration = number(event.get("duration_ms"))
        took = f" · {duration:,.1f} ms" if duration is not None else ""
        error = event.get("error")
        result = (
            ("error", Text.of(_error_text(error)))
            if error is not None
            else ("output", Text.of(event.get("output")))
        )
        texts = (("input", Text.of(event.get("input"))), result)
        outcome = " · raised an error" if error is not None else " · returned"
        return Item(kind, f"tool {event.get('name')}{outcome}{took}", error is not None, texts)
    if kind == "verification":
        progress = number(event.get("progress"))
        shown = f" · progress {progress:.2f}" if progress is not None else ""
        passed = bool(event.get("passed"))
        detail = {k: v for k, v in event.items() if k not in ("type", "seq", "t", "step", "name", "passed")}
        texts = (("detail", Text.of(detail)),) if detail.keys() - {"progress"} else ()
        return Item(
            kind,
            f"harness check {event.get('name')} {'passed' if passed else 'FAILED'}{shown}",
            not passed,
            texts,
        )
    if kind == "checkpoint":
        # Read unresolved, a state stored as a delta shows what changed since the previous checkpoint.
        state = ("state", event.get("state"))
        if "state_delta" in event and "state" not in event:
            state = ("state changes", event.get("state_delta"))
        return Item(
            kind, f"checkpoint {event.get('name') or ''}".rstrip(), texts=((state[0], Text.of(state[1])),)
        )
    if kind == "compaction":
        title = f"compaction {event.get('tokens_before')} → {event.get('tokens_after')} tokens"
        return Item(kind, title, texts=(("summary", Text.of(event.get("summary"))),))
    if kind == "note":
        data = event.get("data")
        texts = (("data", Text.of(data)),) if data else ()
        return Item(kind, f"note: {event.get('message')}", texts=texts)
    if kind in ("guard", "watchdog"):
        who = f" {event.get('guard')}" if kind == "guard" else ""
        status = f" → {event.get('status')}" if event.get("status") else ""
        stopped = event.get("action") in ("stop", "error", "ask")
        detail = {k: v for k, v in event.items() if k not in ("type", "seq", "t", "step")}
        return Item(
            kind,
            f"{kind}{who} {event.get('action')}{status}: {event.get('reason')}",
            stopped,
            (("detail", Text.of(detail)),),
        )
    if kind == "run_end":
        end_error = event.get("error")
        texts = (("error", Text.of(_error_text(end_error))),) if end_error else ()
        return Item(
            kind, f"run ended {event.get('status')}", bool(end_error) or event.get("status") != "ok", texts
        )
    return None


def _model_call(event: Event) -> Item:
    response = event.get("response")
    response = response if isinstance(response, dict) else {}
    status = response.get("status")
    model = event.get("model") or "model"
    if not is_model_call(event) or not http_ok(event):
        label = weather(event)
        title = f"{model} answered HTTP {status}" + (
            f" ({label.replace('_', ' ')}, retried)" if label else ""
        )
        error = event.get("error") or response.get("json") or response.get("text")
        return Item("attempt", title, label is None, (("error", Text.of(error)),) if error else ())
    stored = event.get("usage")
    usage: dict[str, Any] = stored if isinstance(stored, dict) else {}
    context = sum(
        _int(usage.get(k)) for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    )
    cost = number(event.get("cost_usd"))
    latency = number(event.get("latency_ms"))
    parts = [
        f"{model}",
        f"{context:,} in · {_int(usage.get('output_tokens')):,} out",
        f"${cost:.4f}" if cost is not None else "unpriced",
    ]
    if latency is not None:
        parts.append(f"{latency:,.0f} ms")
    if isinstance(event.get("request_id"), str):
        parts.append(f"request-id {event['request_id']}")
    if isinstance(event.get("traceparent"), str):
        parts.append(f"trace {trace_id(event['traceparent'])}")
    texts: list[tuple[str, Text]] = []
    request = event.get("request")
    sent = _sent(request if isinstance(request, dict) else {})
    if sent:
        texts.append(("sent", Text.of(sent)))
    message = response_message(response)
    if message is not None:
        stop = message.get("stop_reason")
        if stop:
            parts.append(f"stop: {stop}")
        texts.append(("answer", Text.of(_content_text(message.get("content")))))
    return Item("model_call", "model call " + " · ".join(parts), False, tuple(texts))


def _sent(request: Mapping[str, Any]) -> str:
    """What a request sent that was new: the whole first request, else a delta's appended messages
    after the previous answer (which the transcript shows already)."""
    delta = request.get("body_delta")
    if isinstance(delta, dict):
        messages = delta.get("append")
        messages = list(messages) if isinstance(messages, list) else []
        while messages and isinstance(messages[0], dict) and messages[0].get("role") == "assistant":
            messages.pop(0)
        changed = delta.get("set")
        head = f"(changed: {', '.join(map(str, changed))})\n" if isinstance(changed, dict) and changed else ""
        return head + "\n\n".join(_message_text(m) for m in messages)
    body = request.get("body")
    if not isinstance(body, dict):
        return ""
    parts = []
    system = body.get("system")
    if system:
        parts.append("system: " + _content_text(system))
    messages = body.get("messages")
    if isinstance(messages, list):
        parts.extend(_message_text(m) for m in messages)
    return "\n\n".join(parts)


def _message_text(message: Any) -> str:
    if not isinstance(message, dict):
        return _json(message)
    return f"{message.get('role')}: {_content_text(message.get('content'))}"


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return _json(content)
    parts = []
    for block in content:
        if not isinstance(block, dict):
            parts.append(_json(block))
            continue
        kind = block.get("type")
        if kind == "text":
            parts.append(str(block.get("text")))
        elif kind == "thinking":
            parts.append(f"(thinking) {block.get('thinking')}")
        elif kind == "tool_use":
            parts.append(f"→ {block.get('name')}({_json(block.get('input'))})")
        elif kind == "tool_result":
            error = " error" if block.get("is_error") else ""
            parts.append(f"tool_result{error}: {_content_text(block.get('content'))}")
        else:
            parts.append(f"[{kind}]")
    return "\n".join(parts)


def _tool_uses(event: Event) -> list[str]:
    response = event.get("response")
    message = response_message(response) if isinstance(response, dict) else None
    content = message.get("content") if message else None
    if not isinstance(content, list):
        return []
    return [str(b.get("name")) for b in content if isinstance(b, dict) and b.get("type") == "tool_use"]


def _error_text(error: Any) -> str:
    if isinstance(error, dict):
        text = f"{error.get('type')}: {error.get('message')}"
        traceback = error.get("traceback")
        return text + (f"\n{traceback}" if isinstance(traceback, str) else "")
    return str(error)


def _args(value: Any) -> str:
    if not isinstance(value, dict):
        return ""
    text = ", ".join(f"{k}={_short(v)}" for k, v in value.items())
    return text if len(text) <= 60 else text[:59] + "…"


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else _json(value)
    text = text.replace("\n", " ")
    return text if len(text) <= 24 else text[:23] + "…"


def _json(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, indent=1, default=str)
    except (TypeError, ValueError):
        return str(value)


def _step_of(events: list[Event]) -> int:
    for event in events:
        step = event.get("step")
        if type(step) is int:
            return step
    return 0


def _t(event: Event) -> float:
    return number(event.get("t")) or 0.0


def _int(value: Any) -> int:
    return value if type(value) is int else 0
