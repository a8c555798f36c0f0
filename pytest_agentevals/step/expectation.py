"""What every kind of expectation offers: parse from a goldens file, check a decision, re-bless."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ..errors import GoldenError
from .decision import Decision
from .judge import Judge, JudgeVerdict
from .matchers import Row


@dataclass
class Outcome:
    """The result of checking one decision: a row per field, and what the judge said if it was asked."""

    rows: list[Row]
    verdict: JudgeVerdict | None = None
    detail: str = ""
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(row.ok for row in self.rows)


class Expectation(ABC):
    """The expected decision of one step case, as written under `expect:`."""

    kind: ClassVar[str]
    keys: ClassVar[tuple[str, ...]]
    required: ClassVar[tuple[str, ...]] = ()

    def __init__(self, raw: Mapping[str, Any]) -> None:
        self.raw = dict(raw)

    @classmethod
    def parse(cls, raw: Any, where: str) -> Expectation:
        if not isinstance(raw, Mapping):
            raise GoldenError(where, f"is {type(raw).__name__}, not a mapping", f"write {cls.example()}")
        unknown = [key for key in raw if key not in cls.keys]
        if unknown:
            raise GoldenError(
                f"{where}.{unknown[0]}",
                f"unknown key for a {cls.kind} expectation",
                "use: " + ", ".join(cls.keys),
            )
        missing = [key for key in cls.required if key not in raw]
        if missing:
            raise GoldenError(f"{where}.{missing[0]}", "is required", f"write {cls.example()}")
        return cls._parse(raw, where)

    @classmethod
    @abstractmethod
    def _parse(cls, raw: Mapping[str, Any], where: str) -> Expectation: ...

    @classmethod
    @abstractmethod
    def example(cls) -> str:
        """A one-line example of the YAML, for error messages."""

    @classmethod
    @abstractmethod
    def data_from(cls, decision: Decision) -> dict[str, Any]:
        """A starting expectation that the decision passes (what `goldens extract` writes)."""

    @abstractmethod
    def check(self, decision: Decision, judge: Judge | None = None) -> Outcome: ...

    @abstractmethod
    def rebless(self, decision: Decision) -> dict[str, Any]:
        """The expectation changed as little as it takes for the decision to pass."""


def describe_decision(decision: Decision) -> str:
    """A decision in a few words, for the table's decision column when the field does not apply."""
    if decision.escalation is not None:
        escalation = decision.escalation
        what = {"escalate": "escalated", "yield": "yielded", "stop": "stopped"}[escalation.action]
        return f"{what} ({escalation.kind})" if escalation.kind else what
    if decision.tool_calls:
        return "called " + ", ".join(call.name for call in decision.tool_calls)
    text = decision.summary_text.strip().replace("\n", " ")
    return f"wrote {text[:40]!r}" if text else "(no decision)"


def require_bool(raw: Mapping[str, Any], key: str, where: str, example: str) -> bool:
    value = raw[key]
    if not isinstance(value, bool):
        raise GoldenError(f"{where}.{key}", f"{value!r} is not true or false", f"write {example}")
    return value


def choice(raw: Mapping[str, Any], key: str, where: str, choices: tuple[str, ...]) -> str:
    value = raw.get(key, choices[0])
    if value not in choices:
        raise GoldenError(f"{where}.{key}", f"{value!r} is not allowed", "use one of: " + ", ".join(choices))
    return str(value)
