"""Escalation calls: the agent yields to a person (or does not) when the budget is gone, the watchdog
fired, or the task is unsafe."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import GoldenError
from .decision import ESCALATION_ACTIONS, Decision, Escalation
from .expectation import Expectation, Outcome, describe_decision, require_bool
from .judge import Judge
from .matchers import Row, compare, compile_expected, show


class EscalationExpectation(Expectation):
    """`escalate: true` — the decision must hand over, of the given `action` and `kind` when named.
    `escalate: false` — it must not (with `kind`/`action`: must not hand over of that kind)."""

    kind = "escalation"
    keys = ("escalate", "action", "kind")
    required = ("escalate",)

    def __init__(self, raw: Mapping[str, Any], escalate: bool, action: Any, kind: Any) -> None:
        super().__init__(raw)
        self.escalate = escalate
        self.action = action
        self.escalation_kind = kind

    @classmethod
    def example(cls) -> str:
        return "expect: {escalate: true, action: escalate, kind: budget_exhausted}"

    @classmethod
    def _parse(cls, raw: Mapping[str, Any], where: str) -> EscalationExpectation:
        escalate = require_bool(raw, "escalate", where, cls.example())
        action = raw.get("action")
        if isinstance(action, str) and action not in ESCALATION_ACTIONS:
            raise GoldenError(
                f"{where}.action",
                f"{action!r} is not allowed",
                "use one of: " + ", ".join(ESCALATION_ACTIONS),
            )
        return cls(
            raw,
            escalate,
            None if action is None else compile_expected(action, f"{where}.action"),
            None if raw.get("kind") is None else compile_expected(raw["kind"], f"{where}.kind"),
        )

    @classmethod
    def data_from(cls, decision: Decision) -> dict[str, Any]:
        escalation = decision.escalation
        if escalation is None:
            return {"escalate": False}
        data: dict[str, Any] = {"escalate": True, "action": escalation.action}
        if escalation.kind is not None:
            data["kind"] = escalation.kind
        return data

    def _named_rows(self, escalation: Escalation | None) -> list[Row]:
        rows: list[Row] = []
        for field, want in (("action", self.action), ("kind", self.escalation_kind)):
            if want is None:
                continue
            if escalation is None:
                rows.append(Row(field, show(want), "(none)", False))
            else:
                rows.extend(compare(want, getattr(escalation, field), field))
        return rows

    def check(self, decision: Decision, judge: Judge | None = None) -> Outcome:
        escalation = decision.escalation
        what = describe_decision(decision)
        if self.escalate:
            return Outcome(
                [Row("escalate", "true", what, escalation is not None), *self._named_rows(escalation)]
            )
        named = self._named_rows(escalation)
        forbidden = escalation is not None and all(row.ok for row in named)
        expected = "false" + (
            " (" + ", ".join(f"{r.field} {r.expected}" for r in named) + ")" if named else ""
        )
        return Outcome([Row("escalate", expected, what, not forbidden)])

    def rebless(self, decision: Decision) -> dict[str, Any]:
        if self.check(decision).ok:
            return dict(self.raw)
        return self.data_from(decision)
