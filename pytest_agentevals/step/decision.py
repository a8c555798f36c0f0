"""One agent decision, in a form every expectation can read.

The user's `agentevals_decide` returns whatever their harness produces: an anthropic `Message`, its
JSON as a dict, a summary string, or a `Decision` built by hand for a harness decision (an
escalation, a stop). `Decision.of` turns each into the same shape.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import GoldenError

# Tool names a model uses to hand over to a person; a tool_use of one of them is an escalation.
ESCALATION_TOOLS: frozenset[str] = frozenset(
    {"escalate", "ask_human", "request_human", "yield_to_human", "handoff_to_human"}
)
ESCALATION_ACTIONS = ("escalate", "yield", "stop")


@dataclass(frozen=True)
class ToolCall:
    """A tool the agent chose to call, with its arguments."""

    name: str
    input: Mapping[str, Any] = field(default_factory=dict)

    def as_data(self) -> dict[str, Any]:
        return {"tool": self.name, "args": dict(self.input)}


@dataclass(frozen=True)
class Escalation:
    """The agent handed the run back: to a person (escalate), to its supervisor (yield), or stopped.

    `kind` names why (`budget_exhausted`, `watchdog`, `unsafe`, `end_turn`...).
    """

    action: str = "escalate"
    kind: str | None = None
    reason: str | None = None

    def __post_init__(self) -> None:
        if self.action not in ESCALATION_ACTIONS:
            raise ValueError(f"escalation action {self.action!r}: use one of {', '.join(ESCALATION_ACTIONS)}")


@dataclass(frozen=True)
class Decision:
    """What the agent decided at one step.

    `tool_calls` in the order the agent made them; `text` the prose it wrote; `escalation` when it
    handed over or stopped; `summary` and `tokens` for a compaction (`tokens` is the summary's size
    when the harness knows it, e.g. the summarizing call's output tokens).
    """

    tool_calls: tuple[ToolCall, ...] = ()
    text: str = ""
    escalation: Escalation | None = None
    summary: str | None = None
    tokens: int | None = None
    stop_reason: str | None = None
    raw: Any = field(default=None, compare=False, repr=False)

    # -- constructors for harness decisions ------------------------------------------------------

    @classmethod
    def tool(cls, name: str, /, **arguments: Any) -> Decision:
        return cls(tool_calls=(ToolCall(name, arguments),))

    @classmethod
    def calls(cls, calls: Iterable[Decision | ToolCall | tuple[str, Mapping[str, Any]]]) -> Decision:
        """Several tool calls in one decision, in order. Each item is a `Decision.tool(name, **args)`
        (or any Decision that holds only tool calls), a `ToolCall(name, args)`, or a `(name, args)`
        pair."""
        found: list[ToolCall] = []
        for index, item in enumerate(calls):
            found.extend(_tool_calls(index, item))
        return cls(tool_calls=tuple(found))

    @classmethod
    def escalate(
        cls, kind: str | None = None, *, action: str = "escalate", reason: str | None = None
    ) -> Decision:
        return cls(escalation=Escalation(action, kind, reason))

    @classmethod
    def proceed(cls, text: str = "") -> Decision:
        """The harness let the agent go on: no escalation, no stop."""
        return cls(text=text)

    @classmethod
    def compaction(cls, summary: str, tokens: int | None = None) -> Decision:
        return cls(summary=summary, tokens=tokens)

    # -- normalizing what a decide function returns ----------------------------------------------

    @classmethod
    def of(cls, value: Any, escalation_tools: Iterable[str] = ESCALATION_TOOLS) -> Decision:
        """The decision in `value`: a Decision, an anthropic Message (or its dict), a ToolCall, a list of
        ToolCalls, or a string (a summary)."""
        if isinstance(value, Decision):
            return value
        if isinstance(value, ToolCall):
            return cls(tool_calls=(value,))
        if isinstance(value, str):
            return cls(text=value, summary=value, raw=value)
        if isinstance(value, list | tuple) and all(isinstance(item, ToolCall) for item in value):
            return cls(tool_calls=tuple(value))
        message = _as_message_dict(value)
        if message is not None:
            return cls.from_message(message, escalation_tools)
        raise GoldenError(
            "agentevals_decide",
            f"returned {type(value).__name__}, which is not a decision",
            "return the model's Message (or its dict), a summary string, or a "
            "pytest_agentevals.step.Decision",
        )

    @classmethod
    def from_message(
        cls, message: Mapping[str, Any], escalation_tools: Iterable[str] = ESCALATION_TOOLS
    ) -> Decision:
        """The decision in an assistant message: its tool_use blocks, its text, and an escalation when
        it called an escalation tool or ended its turn without calling any tool."""
        escalating = frozenset(escalation_tools)
        calls: list[ToolCall] = []
        texts: list[str] = []
        escalation: Escalation | None = None
        for block in message.get("content") or ():
            if not isinstance(block, Mapping):
                continue
            if block.get("type") == "tool_use":
                name = str(block.get("name", ""))
                given = block.get("input")
                arguments: Mapping[str, Any] = given if isinstance(given, Mapping) else {}
                if name in escalating and escalation is None:
                    escalation = Escalation(
                        "escalate",
                        _str_or_none(arguments.get("kind")) or name,
                        _str_or_none(arguments.get("reason")),
                    )
                else:
                    calls.append(ToolCall(name, dict(arguments)))
            elif block.get("type") == "text":
                texts.append(str(block.get("text", "")))
        stop_reason = _str_or_none(message.get("stop_reason"))
        if escalation is None and not calls and stop_reason in ("end_turn", "stop_sequence"):
            escalation = Escalation("stop", stop_reason)
        usage = message.get("usage")
        tokens = usage.get("output_tokens") if isinstance(usage, Mapping) else None
        text = "\n".join(texts)
        return cls(
            tool_calls=tuple(calls),
            text=text,
            escalation=escalation,
            summary=text,
            tokens=tokens if isinstance(tokens, int) else None,
            stop_reason=stop_reason,
            raw=message,
        )

    # -- reading -----------------------------------------------------------------------------------

    @property
    def summary_text(self) -> str:
        return self.summary if self.summary is not None else self.text

    @property
    def summary_tokens(self) -> int:
        """The summary's size in tokens: as the harness measured it, else about four characters a token."""
        return self.tokens if self.tokens is not None else approx_tokens(self.summary_text)


def approx_tokens(text: str) -> int:
    """About four characters a token, rounded up: the rule of thumb when no tokenizer is at hand."""
    return math.ceil(len(text) / 4)


_CALLS_FIX = (
    "give Decision.calls a list of Decision.tool(name, **args), ToolCall(name, args) or (name, args) items"
)


def _tool_calls(index: int, item: Any) -> tuple[ToolCall, ...]:
    """The tool calls of one item of `Decision.calls([...])`, or the error that names it."""
    if isinstance(item, ToolCall):
        return (item,)
    if isinstance(item, Decision):
        if item.escalation is not None or item.summary is not None or item.text or not item.tool_calls:
            raise GoldenError(
                "Decision.calls",
                f"item {index} is a Decision that is not only tool calls ({item!r})",
                _CALLS_FIX,
            )
        return item.tool_calls
    if (
        isinstance(item, tuple)
        and len(item) == 2
        and isinstance(item[0], str)
        and isinstance(item[1], Mapping)
    ):
        return (ToolCall(item[0], dict(item[1])),)
    raise GoldenError("Decision.calls", f"item {index} is {type(item).__name__} {item!r:.80}", _CALLS_FIX)


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _as_message_dict(value: Any) -> Mapping[str, Any] | None:
    if isinstance(value, Mapping):
        return value if "content" in value else None
    dump = getattr(value, "model_dump", None) or getattr(value, "to_dict", None)
    if callable(dump) and hasattr(value, "content"):
        data = dump()
        return data if isinstance(data, Mapping) else None
    return None
