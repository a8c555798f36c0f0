"""Compaction summaries: what must survive the wipe did, what must not appear does not, and the
summary fits its token ceiling. Optionally a judge grades it against a rubric."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ..errors import GoldenError
from .decision import Decision
from .expectation import Expectation, Outcome
from .judge import Judge, JudgeSpec, JudgeVerdict, majority
from .matchers import Regex, Row, compile_expected, show

Fact = str | Regex

# What `goldens extract` proposes as facts: file paths, ids like T006 or PROJ-12, counts like 5/12.
_FACT_CANDIDATES = re.compile(
    r"\b[A-Z][A-Z0-9]*-?\d+\b|\b\d+/\d+\b|"
    r"(?<![\w/.-])(?:[\w.-]+/)*[\w-]+\.(?:py|md|txt|json|yaml|yml|toml|cfg|ini|js|ts)\b"
)


def _facts(raw: Any, where: str) -> list[Fact]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise GoldenError(where, f"is {type(raw).__name__}, not a list", 'write ["a fact", {$regex: "..."}]')
    facts: list[Fact] = []
    for index, item in enumerate(raw):
        fact = compile_expected(item, f"{where}[{index}]")
        if not isinstance(fact, str | Regex):
            raise GoldenError(
                f"{where}[{index}]", f"{item!r} is not text or a regex", 'write "text" or {$regex: "pattern"}'
            )
        facts.append(fact)
    return facts


def _found(fact: Fact, summary: str) -> str | None:
    """The part of the summary the fact was found in, or None."""
    if isinstance(fact, Regex):
        return fact.find(summary)
    return fact if fact in summary else None


class Compaction(Expectation):
    kind = "compaction"
    keys = ("keep", "drop", "max_tokens", "judge")

    def __init__(
        self,
        raw: Mapping[str, Any],
        keep: list[Fact],
        drop: list[Fact],
        max_tokens: int | None,
        judge: JudgeSpec | None,
    ) -> None:
        super().__init__(raw)
        self.keep = keep
        self.drop = drop
        self.max_tokens = max_tokens
        self.judge = judge

    @classmethod
    def example(cls) -> str:
        return (
            'expect: {keep: ["src/parser.py", {$regex: "3/5 checks"}], drop: ["Traceback"], max_tokens: 500}'
        )

    @classmethod
    def _parse(cls, raw: Mapping[str, Any], where: str) -> Compaction:
        ceiling = raw.get("max_tokens")
        if ceiling is not None and (isinstance(ceiling, bool) or not isinstance(ceiling, int) or ceiling < 1):
            raise GoldenError(
                f"{where}.max_tokens", f"{ceiling!r} is not a positive whole number", "write 500"
            )
        judge = None if raw.get("judge") is None else JudgeSpec.parse(raw["judge"], f"{where}.judge")
        return cls(
            raw,
            _facts(raw.get("keep"), f"{where}.keep"),
            _facts(raw.get("drop"), f"{where}.drop"),
            ceiling,
            judge,
        )

    @classmethod
    def data_from(cls, decision: Decision) -> dict[str, Any]:
        summary = decision.summary_text
        facts = list(dict.fromkeys(_FACT_CANDIDATES.findall(summary)))[:8]
        return {"keep": facts, "drop": [], "max_tokens": max(1, -(-decision.summary_tokens * 5 // 4))}

    def check(self, decision: Decision, judge: Judge | None = None) -> Outcome:
        summary = decision.summary_text
        rows: list[Row] = []
        for index, fact in enumerate(self.keep):
            found = _found(fact, summary)
            rows.append(
                Row(f"keep[{index}]", show(fact), "kept" if found is not None else "lost", found is not None)
            )
        for index, fact in enumerate(self.drop):
            found = _found(fact, summary)
            actual = "absent" if found is None else f"present: {found!r}"
            rows.append(Row(f"drop[{index}]", f"not {show(fact)}", actual, found is None))
        if self.max_tokens is not None:
            tokens = decision.summary_tokens
            measured = "" if decision.tokens is not None else " (≈ chars/4)"
            rows.append(
                Row("tokens", f"<= {self.max_tokens}", f"{tokens}{measured}", tokens <= self.max_tokens)
            )
        verdict: JudgeVerdict | None = None
        if self.judge is not None and judge is not None:
            verdict = majority([judge(self.judge, summary) for _ in range(self.judge.repeats)])
            said = {True: "pass", False: "fail", None: "unscored"}[verdict.passed]
            if verdict.agreement is not None and verdict.passed is not None:
                said += f", agreement {verdict.agreement:.0%}"
            rows.append(
                Row(
                    "judge",
                    self.judge.rubric,
                    f"{said} (judge {verdict.model}): {verdict.reason}",
                    verdict.passed is not False,  # unscored is no fail (nor a pass: the row says so)
                    "judge",
                )
            )
        return Outcome(
            rows, verdict=verdict, detail=f"summary ({decision.summary_tokens} tokens):\n{summary}"
        )

    def rebless(self, decision: Decision) -> dict[str, Any]:
        summary = decision.summary_text
        raw = dict(self.raw)
        if "keep" in raw:
            raw["keep"] = [
                item
                for item, fact in zip(raw["keep"], self.keep, strict=True)
                if _found(fact, summary) is not None
            ]
        if "drop" in raw:
            raw["drop"] = [
                item
                for item, fact in zip(raw["drop"], self.drop, strict=True)
                if _found(fact, summary) is None
            ]
        if self.max_tokens is not None and decision.summary_tokens > self.max_tokens:
            raw["max_tokens"] = decision.summary_tokens
        return raw
