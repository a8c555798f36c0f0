"""What the simulated model says: replies, faults, the request a policy sees, and seeded fault plans.

A *script* is either a list of `Reply`/`Fault` played in order, or a *policy*: a callable that gets
each `SimRequest` and returns the `Reply` or `Fault` for it. Both are deterministic by construction;
randomness lives only in `FaultPlan`, drawn from its own seeded generator, one draw per request.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from ..errors import SimError

StopReason: TypeAlias = Literal[
    "end_turn", "tool_use", "max_tokens", "stop_sequence", "pause_turn", "refusal"
]
FaultKind: TypeAlias = Literal["rate_limit", "overloaded", "error", "drop", "slow"]

_STOP_REASONS = frozenset(StopReason.__args__)  # type: ignore[attr-defined]


@dataclass(frozen=True)
class Reply:
    """One assistant message: content blocks in the API's wire form, and why the model stopped.

    `stop_reason` defaults to "tool_use" when a block is a tool_use and "end_turn" otherwise. Usage is
    estimated by the server (see `pytest_agentevals.sim.usage`) unless `usage` overrides some of its
    fields. A tool_use block without an "id" gets a deterministic one from the server's seed.
    """

    content: Sequence[Mapping[str, Any]]
    stop_reason: StopReason | None = None
    stop_sequence: str | None = None
    usage: Mapping[str, int] | None = None
    model: str | None = None

    def __post_init__(self) -> None:
        if isinstance(self.content, (str, bytes)) or not isinstance(self.content, Sequence):
            raise SimError(
                f"Reply content must be a list of content blocks, got {type(self.content).__name__}"
            )
        for i, block in enumerate(self.content):
            if not isinstance(block, Mapping) or not isinstance(block.get("type"), str):
                raise SimError(f"Reply content[{i}] must be a dict with a 'type', got {block!r}")
            if block["type"] == "tool_use" and not (
                isinstance(block.get("name"), str) and isinstance(block.get("input"), Mapping)
            ):
                raise SimError(f"Reply content[{i}] is a tool_use without a str 'name' and a dict 'input'")
            if block["type"] == "text" and not isinstance(block.get("text"), str):
                raise SimError(f"Reply content[{i}] is a text block without a str 'text'")
        if self.stop_reason is not None and self.stop_reason not in _STOP_REASONS:
            raise SimError(f"Reply stop_reason {self.stop_reason!r} is not one of {sorted(_STOP_REASONS)}")
        if self.stop_sequence is not None and self.stop_reason not in (None, "stop_sequence"):
            raise SimError("Reply stop_sequence goes with stop_reason='stop_sequence'")

    @classmethod
    def text(
        cls, text: str, *, stop_reason: StopReason | None = None, stop_sequence: str | None = None
    ) -> Reply:
        """A text answer; with `stop_sequence`, one that stopped on that sequence."""
        if stop_sequence is not None and stop_reason is None:
            stop_reason = "stop_sequence"
        return cls(
            content=[{"type": "text", "text": text}], stop_reason=stop_reason, stop_sequence=stop_sequence
        )

    @classmethod
    def tool_use(
        cls, name: str, input: Mapping[str, Any], *, text: str | None = None, id: str | None = None
    ) -> Reply:
        """A call of tool `name` with `input`, optionally after a text preamble."""
        block: dict[str, Any] = {"type": "tool_use", "name": name, "input": dict(input)}
        if id is not None:
            block["id"] = id
        content: list[Mapping[str, Any]] = [{"type": "text", "text": text}] if text else []
        return cls(content=[*content, block])

    @classmethod
    def tool_uses(cls, calls: Sequence[tuple[str, Mapping[str, Any]]], *, text: str | None = None) -> Reply:
        """Several tool calls in one message (parallel tool use)."""
        content: list[Mapping[str, Any]] = [{"type": "text", "text": text}] if text else []
        content += [{"type": "tool_use", "name": name, "input": dict(args)} for name, args in calls]
        return cls(content=content)

    @property
    def resolved_stop_reason(self) -> StopReason:
        if self.stop_reason is not None:
            return self.stop_reason
        return "tool_use" if any(block["type"] == "tool_use" for block in self.content) else "end_turn"


@dataclass(frozen=True)
class Fault:
    """A failure the server produces instead of (or before) a reply. Build one with the class methods.

    Error faults answer with the API's error body, `{"type": "error", "error": {"type": ..., "message":
    ...}}`. `retry_after` (seconds) sets the `retry-after` header, which the SDK honours; it defaults to
    a hundredth of a second so tests stay fast. Pass `retry_after=None` to leave the header out and let
    the SDK back off on its own (half a second and up).
    """

    kind: FaultKind
    status: int = 0
    error_type: str = ""
    message: str = ""
    retry_after: float | None = None
    seconds: float = 0.0
    then: Reply | None = None
    mid_stream: bool = False

    @classmethod
    def rate_limit(
        cls,
        retry_after: float | None = 0.01,
        message: str = "Number of request tokens has exceeded your rate limit.",
    ) -> Fault:
        """HTTP 429 rate_limit_error (retried by the SDK)."""
        return cls("rate_limit", 429, "rate_limit_error", message, retry_after=retry_after)

    @classmethod
    def overloaded(cls, retry_after: float | None = 0.01, message: str = "Overloaded") -> Fault:
        """HTTP 529 overloaded_error (retried by the SDK)."""
        return cls("overloaded", 529, "overloaded_error", message, retry_after=retry_after)

    @classmethod
    def error(
        cls,
        status: int = 500,
        error_type: str = "api_error",
        message: str = "Internal server error",
        retry_after: float | None = None,
    ) -> Fault:
        """Any other API error, e.g. `Fault.error(400, "invalid_request_error", "prompt is too long")`."""
        if not 400 <= status <= 599:
            raise SimError(f"Fault.error status must be an HTTP error status (400-599), got {status}")
        return cls("error", status, error_type, message, retry_after=retry_after)

    @classmethod
    def drop(cls, *, mid_stream: bool = False) -> Fault:
        """Close the connection without an answer (the SDK raises APIConnectionError after its retries).

        With `mid_stream=True` a streamed request gets its headers and first events, then the socket
        closes: the error surfaces while the caller iterates the stream, where the SDK does not retry.
        For a request that is not streamed it is the same as a plain drop.
        """
        return cls("drop", mid_stream=mid_stream)

    @classmethod
    def slow(cls, seconds: float, then: Reply | None = None) -> Fault:
        """Wait `seconds` before answering, with `then` or, when None, with what the script says next.

        The script is consulted only after the wait and only if the client is still connected, so a
        client whose timeout fires (APITimeoutError) does not use up a reply: its retry gets it.
        """
        if seconds < 0:
            raise SimError(f"Fault.slow seconds must be >= 0, got {seconds}")
        return cls("slow", seconds=seconds, then=then)

    @property
    def is_error(self) -> bool:
        return self.kind in ("rate_limit", "overloaded", "error")


@dataclass(frozen=True)
class SimRequest:
    """A request as the server received it: the parsed JSON body plus a few conveniences.

    `index` counts every /v1/messages request the server received (retries included), from 0.
    `tokens` is the server's estimate of the prompt's size, the same total usage reports.
    """

    index: int
    body: Mapping[str, Any]
    headers: Mapping[str, str]
    path: str = "/v1/messages"
    tokens: int = 0

    @property
    def model(self) -> str:
        return str(self.body.get("model", ""))

    @property
    def max_tokens(self) -> int:
        value = self.body.get("max_tokens", 0)
        return value if isinstance(value, int) else 0

    @property
    def messages(self) -> list[dict[str, Any]]:
        value = self.body.get("messages", [])
        return value if isinstance(value, list) else []

    @property
    def system(self) -> str:
        """The system prompt as one string (blocks joined by newlines)."""
        value = self.body.get("system")
        if isinstance(value, str):
            return value
        if isinstance(value, list):
            return "\n".join(b.get("text", "") for b in value if isinstance(b, dict))
        return ""

    @property
    def tools(self) -> list[dict[str, Any]]:
        value = self.body.get("tools", [])
        return value if isinstance(value, list) else []

    @property
    def stream(self) -> bool:
        return bool(self.body.get("stream", False))

    @property
    def retry_count(self) -> int:
        """How many times the SDK had already tried this call (its `x-stainless-retry-count`)."""
        try:
            return int(self.headers.get("x-stainless-retry-count", "0"))
        except ValueError:
            return 0

    @property
    def last_message(self) -> dict[str, Any] | None:
        messages = self.messages
        return messages[-1] if messages else None

    def blocks(self, message: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        """The content blocks of `message` (default: the last one), a string content as one text block."""
        message = self.last_message if message is None else message
        if message is None:
            return []
        content = message.get("content")
        if isinstance(content, str):
            return [{"type": "text", "text": content}]
        return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []

    @property
    def last_text(self) -> str:
        """The text of the last message's text blocks, joined by newlines."""
        return "\n".join(
            b["text"] for b in self.blocks() if b.get("type") == "text" and isinstance(b.get("text"), str)
        )

    @property
    def tool_results(self) -> list[dict[str, Any]]:
        """The tool_result blocks of the last message (what the tools answered the previous reply)."""
        return [b for b in self.blocks() if b.get("type") == "tool_result"]


Policy: TypeAlias = Callable[[SimRequest], "Reply | Fault"]
Script: TypeAlias = "Policy | Sequence[Reply | Fault]"


class ScriptPlayer:
    """Turns a script (a list or a policy) into "the next answer for this request", with clear errors."""

    def __init__(self, script: Script) -> None:
        if callable(script):
            self._policy: Policy | None = script
            self._items: Sequence[Reply | Fault] = ()
        elif isinstance(script, Sequence) and not isinstance(script, (str, bytes)):
            self._policy = None
            self._items = list(script)
            for i, item in enumerate(self._items):
                if not isinstance(item, (Reply, Fault)):
                    raise SimError(
                        f"script[{i}] is a {type(item).__name__}; a script holds Reply and Fault only"
                    )
        else:
            raise SimError(
                f"a script is a callable policy or a list of Reply/Fault, got {type(script).__name__}"
            )
        self.position = 0

    def next(self, request: SimRequest) -> Reply | Fault:
        if self._policy is None:
            if self.position >= len(self._items):
                raise SimError(
                    f"the script is exhausted: request #{request.index} arrived after all "
                    f"{len(self._items)} scripted answers were used (add replies to the script, or check "
                    "why the client made more calls than expected)"
                )
            item = self._items[self.position]
            self.position += 1
            return item
        self.position += 1
        try:
            answer = self._policy(request)
        except SimError:
            raise
        except Exception as exc:
            raise SimError(
                f"the policy raised {type(exc).__name__} on request #{request.index}: {exc}"
            ) from exc
        if not isinstance(answer, (Reply, Fault)):
            raise SimError(
                f"the policy returned a {type(answer).__name__} on request #{request.index}; "
                "it must return a Reply or a Fault"
            )
        return answer


@dataclass(frozen=True)
class FaultPlan:
    """Faults injected at seeded random positions, on top of whatever the script says.

    Each /v1/messages request draws one number from `random.Random(seed)` (drawn even when no fault
    fires, so positions depend only on the seed and the request count) and gets a fault with the given
    probabilities. `at` pins faults to request indices (0-based, retries included). `max_in_a_row`
    caps consecutive injected faults, so a client with at least that many retries always gets through.
    An injected fault does not consume the script's reply: the retry gets it.
    """

    rate_limit: float = 0.0
    overloaded: float = 0.0
    drop: float = 0.0
    slow: float = 0.0
    slow_seconds: float = 1.0
    retry_after: float | None = 0.01
    seed: int = 0
    at: Mapping[int, Fault] = field(default_factory=dict)
    max_in_a_row: int | None = None

    def __post_init__(self) -> None:
        rates = {
            "rate_limit": self.rate_limit,
            "overloaded": self.overloaded,
            "drop": self.drop,
            "slow": self.slow,
        }
        for name, rate in rates.items():
            if not (0.0 <= rate <= 1.0) or math.isnan(rate):
                raise SimError(f"FaultPlan.{name} is a probability in [0, 1], got {rate}")
        if sum(rates.values()) > 1.0 + 1e-9:
            raise SimError(f"FaultPlan probabilities add up to more than 1: {rates}")
        for index, fault in self.at.items():
            if not isinstance(fault, Fault):
                raise SimError(f"FaultPlan.at[{index}] must be a Fault, got {type(fault).__name__}")

    def sampler(self) -> Callable[[int], Fault | None]:
        """A fresh, stateful draw function: call it once per request, in order, with the request index."""
        rng = random.Random(self.seed)
        in_a_row = 0
        thresholds = [
            (self.rate_limit, Fault.rate_limit(retry_after=self.retry_after)),
            (self.overloaded, Fault.overloaded(retry_after=self.retry_after)),
            (self.drop, Fault.drop()),
            (self.slow, Fault.slow(self.slow_seconds)),
        ]

        def draw(index: int) -> Fault | None:
            nonlocal in_a_row
            u = rng.random()
            fault = self.at.get(index)
            if fault is None and (self.max_in_a_row is None or in_a_row < self.max_in_a_row):
                edge = 0.0
                for rate, candidate in thresholds:
                    edge += rate
                    if u < edge:
                        fault = candidate
                        break
            in_a_row = in_a_row + 1 if fault is not None else 0
            return fault

        return draw
