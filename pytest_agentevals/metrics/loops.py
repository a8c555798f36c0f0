"""Loop detection on a run's tool actions: pure, incremental, shared by the loop guard and the metrics.

An action is what loop detection sees of one tool call: the tool, its arguments in canonical JSON
and a short hash of what came back (its output, or its error). Thought text never enters it.
Three rules, each reported once per loop (see `LoopDetector`):

- **repeat**: the same action with the same result `repeat` times in a row;
- **failing_repeat**: the same failing action (same tool and arguments, whatever the error)
  `failing_repeat` times within the last `window` actions, not necessarily in a row — an agent
  that retries a broken call between other calls is looping too;
- **alternation**: two actions taking turns, A-B-A-B-A-B, for `alternation` full cycles.

Where do actions come from? From a trace's `tool_call` events, written by `@tool`. A run whose
tools are not recorded has none; `actions_of` then derives them from the model's side of the
conversation: each `tool_use` block of a successful model call, with the `tool_result` of the same
id in the next successful request (`is_error` for failed). A `tool_use` whose result never comes
back (the run ended, or the harness compacted its context first) is not an action. From a trace's
first `tool_call` event on, its `tool_call` events alone are the actions.
"""

from __future__ import annotations

import hashlib
from collections import deque
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from ..trace.jsonable import canonical_json
from ..trace.messages import response_message

RULES = ("repeat", "failing_repeat", "alternation")

# How much of an action's arguments a description shows.
_SHOWN_ARGS = 80


@dataclass(frozen=True)
class Action:
    """One tool action of a run, as loop detection sees it."""

    tool: str
    args: str  # canonical JSON of the input (sorted keys, compact)
    result: str  # short hash of the canonical output, or of "error:<type>:<message>"
    failed: bool
    step: int
    seq: int  # the event's seq (for a derived action, the seq of the model call that asked for it)

    @property
    def key(self) -> tuple[str, str, str]:
        """What makes two actions the same: tool, arguments and result."""
        return (self.tool, self.args, self.result)

    def call(self) -> str:
        """The call as a person reads it: `read_file {"path":"a.txt"}`, long arguments cut."""
        args = self.args if len(self.args) <= _SHOWN_ARGS else self.args[: _SHOWN_ARGS - 3] + "..."
        return f"{self.tool} {args}"


def short_hash(text: str) -> str:
    """16 hex digits of the text's BLAKE2b hash."""
    return hashlib.blake2b(text.encode("utf-8", errors="surrogatepass"), digest_size=8).hexdigest()


def action_of(event: Mapping[str, Any]) -> Action:
    """The action of a trace's `tool_call` event: a failed one when it carries an `error`."""
    error = event.get("error")
    failed = "error" in event
    if failed:
        kind = error.get("type") if isinstance(error, Mapping) else None
        message = error.get("message") if isinstance(error, Mapping) else error
        result = short_hash(f"error:{kind}:{message}")
    else:
        result = short_hash(canonical_json(event.get("output")))
    name = event.get("name")
    step, seq = event.get("step"), event.get("seq")
    return Action(
        name if type(name) is str else str(name),
        canonical_json(event.get("input", {})),
        result,
        failed,
        step if type(step) is int else 0,
        seq if type(seq) is int else 0,
    )


def actions_of(events: Iterable[Mapping[str, Any]]) -> Iterator[Action]:
    """A run's actions in order: its `tool_call` events, or, until the first of those, actions
    derived from the model's `tool_use` blocks and the next request's `tool_result` blocks."""
    stream = ActionStream()
    for event in events:
        kind = event.get("type")
        if kind == "tool_call":
            yield stream.tool_call(event)
        elif kind == "model_call":
            yield from stream.model_call(event)


class ActionStream:
    """The actions of a run as its events arrive: `tool_call` events, or derived ones until the
    first `tool_call` event shows that the run records its tools."""

    def __init__(self) -> None:
        self._deriver: ActionDeriver | None = ActionDeriver()

    @property
    def deriving(self) -> bool:
        return self._deriver is not None

    def stop_deriving(self) -> None:
        """A `tool_call` event was seen: the run records its tools, derive nothing more."""
        self._deriver = None

    def tool_call(self, event: Mapping[str, Any]) -> Action:
        self._deriver = None
        return action_of(event)

    def model_call(self, event: Mapping[str, Any]) -> list[Action]:
        return self._deriver.model_call(event) if self._deriver is not None else []


class ActionDeriver:
    """Derives actions from model calls, one call at a time, for runs whose tools are not recorded.

    `model_call(event)` returns the actions completed by that call's request: the previous
    successful call's `tool_use` blocks answered by a `tool_result` in this request.
    """

    def __init__(self) -> None:
        self._pending: dict[str, tuple[str, Any, int, int]] = {}  # tool_use id -> name, input, step, seq
        self._order: list[str] = []

    def model_call(self, event: Mapping[str, Any]) -> list[Action]:
        response = event.get("response")
        if not isinstance(response, Mapping) or not _ok(response.get("status")):
            return []  # a failed call (429, 529...) is retried with the same request: wait for it
        actions = self._answered(event.get("request"))
        self._pending.clear()
        self._order.clear()
        message = response_message(response)
        for block in message.get("content", ()) if isinstance(message, dict) else ():
            if not isinstance(block, dict) or block.get("type") != "tool_use":
                continue
            if isinstance(block.get("id"), str):
                self._pending[block["id"]] = (
                    str(block.get("name")),
                    block.get("input", {}),
                    _int(event.get("step")),
                    _int(event.get("seq")),
                )
                self._order.append(block["id"])
        return actions

    def _answered(self, request: Any) -> list[Action]:
        if not self._pending or not isinstance(request, Mapping):
            return []
        results: dict[str, Mapping[str, Any]] = {}
        for message in _new_messages(request):
            content = message.get("content") if isinstance(message, Mapping) else None
            for block in content if isinstance(content, list) else ():
                if isinstance(block, Mapping) and block.get("type") == "tool_result":
                    results[str(block.get("tool_use_id"))] = block
        actions = []
        for use_id in self._order:
            block = results.get(use_id)
            if block is None:
                continue
            name, tool_input, step, seq = self._pending[use_id]
            failed = bool(block.get("is_error"))
            content = canonical_json(block.get("content"))
            result = short_hash(f"error:tool_result:{content}" if failed else content)
            actions.append(Action(name, canonical_json(tool_input), result, failed, step, seq))
        return actions


def _new_messages(request: Mapping[str, Any]) -> list[Any]:
    """The messages a request adds: the appended ones of a stored delta, or the last of a whole body
    (tool results answer the call just before, so they are in the last user message)."""
    delta = request.get("body_delta")
    if isinstance(delta, Mapping):
        appended = delta.get("append")
        return appended if isinstance(appended, list) else []
    body = request.get("body")
    messages = body.get("messages") if isinstance(body, Mapping) else None
    return messages[-1:] if isinstance(messages, list) else []


@dataclass(frozen=True)
class LoopHit:
    """A loop found by one rule: the actions that make it up so far, and a line for a person."""

    rule: str  # "repeat" | "failing_repeat" | "alternation"
    actions: tuple[Action, ...]
    description: str  # one line a person reads: the call, the count

    @property
    def step(self) -> int:
        """The step at which the loop was found (its last action's)."""
        return self.actions[-1].step if self.actions else 0


class LoopDetector:
    """Finds loops in a stream of actions, one `observe` at a time, in O(1) amortized per action.

    `observe` returns a `LoopHit` when an action completes a loop by one of the rules, once per
    loop: the actions that carry on a loop already reported return None, and `in_loop` is True
    after each of them (and after the one that completed it). A loop that is broken and starts
    again is reported again. When two rules complete at the same action, one hit is returned,
    in this order: failing_repeat (the most specific), repeat, alternation.

    A rule whose threshold is 0 is off. `window` bounds how far apart the failures counted by
    failing_repeat may be, in actions (default: 10, or `failing_repeat` if larger).
    """

    def __init__(
        self, repeat: int = 3, failing_repeat: int = 3, alternation: int = 3, *, window: int | None = None
    ) -> None:
        thresholds = {"repeat": repeat, "failing_repeat": failing_repeat, "alternation": alternation}
        for name, value in thresholds.items():
            if value == 1 or value < 0:
                raise ValueError(f"{name} must be 0 (off) or at least 2, got {value}")
        if window is not None and window < 2:
            raise ValueError(f"window must be at least 2 actions, got {window}")
        self.repeat = repeat
        self.failing_repeat = failing_repeat
        self.alternation = alternation
        self.window = max(window if window is not None else 10, failing_repeat)
        self.reset()

    def reset(self) -> None:
        """Forget everything seen (after a restart, say)."""
        self.in_loop = False
        self._count = 0  # actions observed
        self._recent: deque[Action] = deque(maxlen=max(self.repeat, 2 * self.alternation, 2))
        self._previous: tuple[str, str, str] | None = None  # the last two actions' keys
        self._before: tuple[str, str, str] | None = None
        self._run = 0  # length of the current stretch of identical actions
        self._alternating = 0  # length of the current A-B-A-B stretch
        self._run_reported = False
        self._alternation_reported = False
        # failing_repeat: the failures of each (tool, args) within the window, oldest first, and
        # all failures within the window in order, to let old ones go in O(1) amortized.
        self._failures: dict[tuple[str, str], deque[tuple[int, Action]]] = {}
        self._window_failures: deque[tuple[int, tuple[str, str]]] = deque()
        self._failing_reported: set[tuple[str, str]] = set()

    def observe(self, action: Action) -> LoopHit | None:
        """Take one more action; a hit when it completes a loop not reported yet."""
        self._count += 1
        key = (action.tool, action.args, action.result)
        previous, before = self._previous, self._before
        self._previous, self._before = key, previous
        self._recent.append(action)

        # repeat: the same action, same result, in a row.
        if key == previous:
            self._run += 1
        else:
            self._run, self._run_reported = 1, False
        # alternation: each action equals the one two before and differs from the one before.
        if previous is not None and key != previous and key == before:
            self._alternating += 1
        else:
            self._alternating = 2 if previous is not None and key != previous else 1
            self._alternation_reported = False
        failing = self._observe_failure(action) if action.failed or self._window_failures else None

        hit: LoopHit | None = None
        looping = False
        if failing is not None:
            looping = True
            if failing:
                hit = failing[0]
        if self.repeat and self._run >= self.repeat:
            looping = True
            if not self._run_reported:
                self._run_reported = True
                hit = hit or self._repeat_hit()
        if self.alternation and self._alternating >= 2 * self.alternation:
            looping = True
            if not self._alternation_reported:
                self._alternation_reported = True
                hit = hit or self._alternation_hit()
        self.in_loop = looping
        return hit

    def _observe_failure(self, action: Action) -> tuple[LoopHit, ...] | None:
        """failing_repeat: None when the action is not inside such a loop; () when it carries on
        a reported one; (hit,) when it completes one."""
        index = self._count
        window = self._window_failures
        while window and window[0][0] <= index - self.window:
            _, old = window.popleft()
            kept = self._failures[old]
            kept.popleft()
            if not kept:
                del self._failures[old]
                self._failing_reported.discard(old)
        if not self.failing_repeat or not action.failed:
            return None
        call = (action.tool, action.args)
        kept = self._failures.setdefault(call, deque())
        kept.append((index, action))
        window.append((index, call))
        if len(kept) < self.failing_repeat:
            self._failing_reported.discard(call)  # the earlier loop fell out of the window
            return None
        if call in self._failing_reported:
            return ()
        self._failing_reported.add(call)
        first = kept[0][0]
        failures = tuple(failed for _, failed in kept)
        description = (
            f"{action.call()} failed {len(failures)} times in {index - first + 1} actions "
            f"(steps {failures[0].step}-{action.step})"
        )
        return (LoopHit("failing_repeat", failures, description),)

    def _repeat_hit(self) -> LoopHit:
        actions = tuple(self._recent)[-self._run :]
        last = actions[-1]
        description = (
            f"{last.call()} returned the same result {self._run} times in a row "
            f"(steps {actions[0].step}-{last.step})"
        )
        return LoopHit("repeat", actions, description)

    def _alternation_hit(self) -> LoopHit:
        actions = tuple(self._recent)[-self._alternating :]
        first, second = actions[0], actions[1]
        description = (
            f"{first.call()} and {second.call()} alternated {self._alternating // 2} times "
            f"(steps {first.step}-{actions[-1].step})"
        )
        return LoopHit("alternation", actions, description)


def _ok(status: Any) -> bool:
    return isinstance(status, int) and 200 <= status < 300


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


class LoopTally:
    """Loop rate: the share of a run's actions inside detected loops, one action at a time.

    An action is inside a loop when it belongs to a hit (the actions that completed a loop, found
    back to the first) or carries on a loop already found (`LoopDetector.in_loop`).
    """

    def __init__(self, detector: LoopDetector | None = None) -> None:
        self.detector = detector or LoopDetector()
        self.detector.reset()
        self.actions = 0
        self.looped = 0
        self.hits: list[LoopHit] = []
        # The recent actions with their positions, to mark a hit's earlier actions once each.
        self._span = max(self.detector.window, self.detector.repeat, 2 * self.detector.alternation) + 1
        self._recent: deque[tuple[int, Action]] = deque(maxlen=self._span)
        self._marked: set[int] = set()

    def add(self, action: Action) -> LoopHit | None:
        index = self.actions
        self.actions += 1
        self._recent.append((index, action))
        hit = self.detector.observe(action)
        if hit is not None:
            self.hits.append(hit)
            members = {id(member) for member in hit.actions}
            for earlier, seen in self._recent:
                if id(seen) in members:
                    self._mark(earlier)
        if self.detector.in_loop:
            self._mark(index)
        return hit

    def _mark(self, index: int) -> None:
        if index in self._marked:
            return
        self._marked.add(index)
        self.looped += 1
        if len(self._marked) > 2 * self._span:
            # Only recent actions can be marked again: forget the rest (O(1) amortized).
            oldest = self.actions - self._span
            self._marked = {kept for kept in self._marked if kept >= oldest}

    def by_rule(self) -> dict[str, int]:
        """How many loops each rule found."""
        counts = dict.fromkeys(RULES, 0)
        for hit in self.hits:
            counts[hit.rule] += 1
        return counts

    @property
    def rate(self) -> float | None:
        """Looped actions over actions; None for a run without actions."""
        return self.looped / self.actions if self.actions else None


def loop_rate(events: Iterable[Mapping[str, Any]], detector: LoopDetector | None = None) -> float | None:
    """The loop rate of a run's events (None when it took no tool action)."""
    tally = LoopTally(detector)
    for action in actions_of(events):
        tally.add(action)
    return tally.rate
