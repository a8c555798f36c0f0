"""Shared by the guards' tests: a chat loop on the real SDK, a spy guard, a fake clock, trace checks."""

from __future__ import annotations

from typing import Any

import anthropic

from pytest_agentevals.guards import Call, CallResult, Guard, Ruling

from .schema_support import read_valid

MODEL = "claude-sonnet-4-6"  # priced at $3 / $15 per MTok in the built-in table


def chat(
    client: anthropic.Anthropic, turns: int, *, max_tokens: int = 64, grow: bool = False, model: str = MODEL
) -> int:
    """Up to `turns` model calls; with `grow`, the conversation keeps every turn (the prompt grows).
    Returns how many calls came back."""
    messages: list[dict[str, Any]] = []
    done = 0
    for turn in range(turns):
        question = {"role": "user", "content": f"question {turn}: " + "words " * 20}
        messages = [*messages, question] if grow else [question]
        message = client.messages.create(model=model, max_tokens=max_tokens, messages=messages)
        done += 1
        if grow:
            messages.append(
                {"role": "assistant", "content": [{"type": "text", "text": message.content[0].text}]}
            )  # type: ignore[union-attr]
    return done


class Spy(Guard):
    """Records what the guards see: each call's estimate and result. Put it first."""

    name = "spy"

    def __init__(self) -> None:
        self.calls: list[Call] = []
        self.results: list[tuple[Call, CallResult | None]] = []
        self.events: list[str] = []

    def before_call(self, call: Call) -> Ruling | None:
        self.calls.append(call)
        return None

    def after_call(self, call: Call, result: CallResult | None) -> Ruling | None:
        self.results.append((call, result))
        return None

    def observe(self, event: Any) -> None:
        self.events.append(str(event["type"]))


class Clock:
    """A monotonic clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


events_of = read_valid  # the trace, every line checked against the schema, read back


def kinds(events: list[dict[str, Any]]) -> list[str]:
    return [str(event["type"]) for event in events]


def guard_events(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [event for event in events if event["type"] == "guard"]
