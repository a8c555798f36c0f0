"""The guard interface: what a guard sees of a model call, and what it may answer.

The recorder asks every guard before a model request leaves (`before_call`: let it pass, or stop the
run) and tells every guard how it went (`after_call`: the usage and cost, or None when the call never
completed). Guards also see the run's harness and tool events (`observe`), the run's start (where a
guard may refuse to start it at all) and its end.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from .prices import PriceTable

TOKEN_KINDS = ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")


@dataclass(frozen=True)
class Call:
    """A model request about to leave, as the guards see it.

    `input_tokens` is an estimate made before the request is sent: the request body's bytes / 4
    (rounded up), which a little overcounts (the JSON's keys and punctuation count too); `cost_usd` is
    the most the call can cost at that estimate — its input at the model's input price plus
    `max_tokens` of output at its output price — or None for a model the price table does not know.
    """

    index: int  # this request's number among the run's model requests, from 1
    model: str
    max_tokens: int
    input_tokens: int
    cost_usd: float | None
    body: Mapping[str, Any] = field(repr=False, compare=False)

    @property
    def tokens(self) -> int:
        """The most tokens the call can use: its estimated input plus `max_tokens` of output."""
        return self.input_tokens + self.max_tokens


@dataclass(frozen=True)
class CallResult:
    """How a call went: its HTTP status, usage (the four token kinds) and cost (None when unpriced)."""

    status: int
    usage: Mapping[str, int]
    cost_usd: float | None

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    @property
    def tokens(self) -> int:
        """Every token the call used: input, output, cache writes and cache reads."""
        return sum(int(self.usage.get(kind) or 0) for kind in TOKEN_KINDS)


@dataclass(frozen=True)
class Ruling:
    """A guard's answer: stop the run (with the status its `run_end` gets), or report something.

    `details` are written into the `guard` event beside the reason (`key`, `limit`, `spent`...).
    """

    action: Literal["stop", "warn"]
    reason: str
    status: str | None = None
    fix: str = ""
    details: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def stop(cls, status: str, reason: str, *, fix: str = "", **details: Any) -> Ruling:
        return cls("stop", reason, status, fix, details)

    @classmethod
    def warn(cls, reason: str, **details: Any) -> Ruling:
        return cls("warn", reason, None, "", details)


class Run(Protocol):
    """What a guard may use of its run; the `Recorder` is one."""

    path: Path
    run_id: str
    agent: str
    steps: int

    @property
    def prices(self) -> PriceTable: ...

    @property
    def last_checkpoint(self) -> int | None: ...

    def emit(self, kind: str, sync: bool = False, **fields: Any) -> dict[str, Any]: ...


class Guard:
    """Base class of guards: every method does nothing, so a guard overrides only what it needs.

    A guard stops a run by returning `Ruling.stop(...)`; any exception it raises ends the run as
    `error` (an `AgentEvalsError` as itself, anything else as a `GuardError` with its traceback).
    Methods are called one at a time (the recorder serializes them), from the thread that makes the
    call.
    """

    name = "guard"

    def limits(self) -> dict[str, float]:
        """The limits this guard enforces, by budget key: written to `run_start.budget`."""
        return {}

    def start(self, run: Run) -> Ruling | None:
        """The run starts (its `run_start` is written); a stop here refuses the whole run."""
        return None

    def before_call(self, call: Call) -> Ruling | None:
        """A model request is about to leave: None lets it go."""
        return None

    def after_call(self, call: Call, result: CallResult | None) -> Ruling | None:
        """The call came back (`result`), or never completed (None: refused, or the connection broke).
        A ruling here can only report (`warn`); stops are decided before a call."""
        return None

    def observe(self, event: Mapping[str, Any]) -> None:
        """An event was written: a tool call, checkpoint, compaction, verification or note, or a model
        call (after `after_call`)."""

    def end(self, status: str) -> None:
        """The run ended with `status`: release whatever the guard holds."""
