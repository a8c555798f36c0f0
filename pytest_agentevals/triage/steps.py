"""A recorded run as triage reads it: one `Step` per model call, with what the decision was, what came of
it before the next call (tool errors, compactions, guard and watchdog notes, failed checks), where it
stands in the run (verified tasks so far) and its features, the words rank counts over seeds.

A feature abstracts a decision so two seeds can share it: a call's arguments keep their shape, not
their values (`t007.txt` and `t012.txt` are both `a#.a`; `t007-notes.txt` is `a#-a.a`), so the
pattern of a mistake repeats across seeds while each seed's own words do not.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import TriageError
from ..metrics import compute
from ..trace import Event, read_trace

_UPPER = re.compile(r"[A-Z]+")
_LOWER = re.compile(r"[a-z]+")
_MIXED = re.compile(r"(?:A|a){2,}")
_DIGITS = re.compile(r"[0-9]+")
_SPACE = re.compile(r"\s+")
MAX_SHAPE = 40  # a long text is its first characters' shape


def shape(value: Any) -> str:
    """A value's shape: letters, digits and spaces collapsed (`t007.txt` -> `a#.a`, `TODO` -> `A`)."""
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, int | float):
        return "#"
    if isinstance(value, Mapping):
        return "{" + ",".join(f"{key}={shape(value[key])}" for key in sorted(value)) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(sorted({shape(item) for item in value})) + "]"
    text = _SPACE.sub(" ", str(value))[:MAX_SHAPE]
    text = _DIGITS.sub("#", _LOWER.sub("a", _UPPER.sub("A", text)))
    return _MIXED.sub("a", text)


def call_pattern(name: str, arguments: Mapping[str, Any]) -> str:
    """`read_file(path=a#-a.a)`: a tool call with its arguments' shapes."""
    return f"{name}({','.join(f'{key}={shape(arguments[key])}' for key in sorted(arguments))})"


@dataclass(frozen=True)
class Call:
    name: str
    input: Mapping[str, Any]

    @property
    def exact(self) -> str:
        return f"{self.name}({json.dumps(self.input, sort_keys=True)})"

    @property
    def pattern(self) -> str:
        return call_pattern(self.name, self.input)


@dataclass
class Step:
    """One model call of a run and what followed it up to the next one."""

    number: int  # the trace's step number
    line: int  # the model_call's line in the trace (1-based), for a reader
    request: Mapping[str, Any]  # the request body, deltas resolved
    content: Sequence[Mapping[str, Any]]  # the response's content blocks
    verified: int  # tasks verified before this step
    since_verified: int  # steps since the last newly verified task (0: the first after it)
    calls: list[Call] = field(default_factory=list)
    tool_errors: list[str] = field(default_factory=list)
    after: list[str] = field(default_factory=list)  # features of what followed (notes, compactions)

    @property
    def decision(self) -> str:
        """How a person reads the decision: its calls, or its text."""
        if self.calls:
            return ", ".join(call.exact for call in self.calls)
        text = " ".join(str(b.get("text", "")) for b in self.content if b.get("type") == "text").strip()
        return f"text {text[:60]!r}" if text else "(empty reply)"

    @property
    def signature(self) -> str:
        """The decision abstracted: its call patterns, or that it answered in text."""
        return " + ".join(call.pattern for call in self.calls) if self.calls else "text"

    def features(self, previous: Step | None) -> set[str]:
        found = {f"call:{call.pattern}" for call in self.calls} | {f"tool:{call.name}" for call in self.calls}
        if not self.calls:
            found.add("text-reply")
        found |= {f"error:{name}" for name in self.tool_errors}
        found |= set(self.after)
        if (
            previous is not None
            and self.calls
            and [c.exact for c in previous.calls] == [c.exact for c in self.calls]
        ):
            found.add(f"repeat:{self.signature}")
        return found


@dataclass
class Run:
    """One recorded run: its steps, whether it was a verified pass, and its identity."""

    trace: Path
    passed: bool
    status: str | None
    seed: Any
    task: Any
    steps: list[Step]
    budget: Mapping[str, Any] | None = None  # the limits its guards enforced (run_start's budget)

    @property
    def label(self) -> str:
        return f"seed {self.seed}" if self.seed is not None else self.trace.name

    def step(self, number: int) -> Step:
        for step in self.steps:
            if step.number == number:
                return step
        numbers = f"{self.steps[0].number}-{self.steps[-1].number}" if self.steps else "none"
        raise TriageError(f"{self.trace}: no step {number} (its steps are {numbers})")

    def features(self) -> list[set[str]]:
        """Each step's features, the run's end counted at its last step."""
        out: list[set[str]] = []
        previous: Step | None = None
        for step in self.steps:
            out.append(step.features(previous))
            previous = step
        if out and not self.passed:
            out[-1].add(f"end:{self.status or 'incomplete'}")
        return out


def load_run(path: str | Path, passed: bool | None = None) -> Run:
    """A trace read into steps. `passed` overrides the trace's own verdict (a verified pass, as the
    marathon counts it)."""
    trace = Path(path)
    events = list(read_trace(trace))
    metrics = compute(events)
    start = events[0] if events and events[0].get("type") == "run_start" else {}
    steps = list(_steps(events))
    if not steps:
        raise TriageError(f"{trace}: the trace holds no model call: nothing to triage")
    return Run(
        trace=trace,
        passed=metrics.verified_pass if passed is None else passed,
        status=metrics.status,
        seed=start.get("seed"),
        task=start.get("task"),
        steps=steps,
        budget=start.get("budget") if isinstance(start.get("budget"), Mapping) else None,
    )


def load_runs(paths: Iterable[str | Path]) -> list[Run]:
    return [load_run(path) for path in paths]


def _steps(events: Sequence[Event]) -> Iterable[Step]:
    verified: set[str] = set()
    since = 0
    current: Step | None = None
    for line, event in enumerate(events, 1):
        kind = event.get("type")
        if kind == "model_call":
            if current is not None:
                yield current
            response = event.get("response") or {}
            body = response.get("json") if isinstance(response, Mapping) else None
            content = body.get("content") if isinstance(body, Mapping) else None
            content = [b for b in content if isinstance(b, Mapping)] if isinstance(content, list) else []
            request = (event.get("request") or {}).get("body")
            current = Step(
                number=int(event.get("step") or 0),
                line=line,
                request=request if isinstance(request, Mapping) else {},
                content=content,
                verified=len(verified),
                since_verified=since,
            )
            since += 1
            current.calls = [
                Call(str(b.get("name")), dict(b.get("input") or {}))
                for b in content
                if b.get("type") == "tool_use"
            ]
            if not isinstance(body, Mapping) and response.get("status") not in (None, 200):
                current.after.append(f"model-error:{response.get('status')}")
        elif current is None:
            continue
        elif kind == "tool_call":
            if event.get("error") is not None:
                current.tool_errors.append(str(event.get("name")))
        elif kind == "verification":
            name = str(event.get("name"))
            if event.get("passed") and name not in verified:
                verified.add(name)
                since = 0
            elif not event.get("passed"):
                current.after.append("check-failed")
        elif kind == "compaction":
            current.after.append("compaction")
        elif kind == "note":
            # A note's message is the harness's fixed words ("watchdog fired"): kept as written.
            current.after.append(f"note:{_SPACE.sub(' ', str(event.get('message', '')))[:MAX_SHAPE]}")
        elif kind == "checkpoint":
            current.after.append("checkpoint")
    if current is not None:
        yield current
