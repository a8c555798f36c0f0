"""`agentevals judge audit`: the judge's noise measured apart from the agent's.

For each step case with a judge (`judge: {rubric: ...}` under a compaction case's `expect`), the
summary that was recorded is graded again, k times, by the case's judge; nothing of the agent runs.
Each case gets its votes (pass, fail, unscored), its majority and its agreement; the whole audit the
mean agreement and the chance-corrected statistics of `agreement.py`. A judge that agrees with itself
at 80% on a fixed summary flips one verdict in five whatever the agent does.

The recorded summary is the one the judge was recorded grading (its prompt, in the case's recorded
exchanges), else the text of the case's recorded model answer (the agent's summarizing call). A
case with neither is skipped and says how to record it. The audit asks the judge live (it is a
measurement); it never writes beside the goldens.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import GoldenError
from ..trace.messages import response_message
from .agreement import JudgeAgreement, judge_counts
from .case import StepCase
from .decision import Decision
from .expect_compaction import Compaction
from .judge import DEFAULT_JUDGE_MODEL, Judge, JudgeSpec, JudgeVerdict, judged_summary, majority
from .loader import GoldensFile, load_goldens
from .store import DecisionStore, Exchange, store_path

MAX_AUDIT_REPEATS = 500  # an audit may ask more often than a case does: it is the measurement
NOT_RECORDED = (
    "no recorded summary: run the step cases once with --agentevals-record=new and commit the "
    "*.decisions.trace.jsonl beside the goldens file"
)


@dataclass(frozen=True)
class AuditedCase:
    file: str
    case: str
    rubric: str
    model: str
    summary_from: str  # "judge" (the prompt the judge was recorded grading) or "decision"
    verdict: JudgeVerdict

    @property
    def votes(self) -> tuple[bool | None, ...]:
        return self.verdict.votes or (self.verdict.passed,)

    def as_data(self) -> dict[str, Any]:
        passes, fails = judge_counts(self.votes)
        return {
            "file": self.file,
            "case": self.case,
            "rubric": self.rubric,
            "model": self.model,
            "summary_from": self.summary_from,
            "votes": {"pass": passes, "fail": fails, "unscored": self.votes.count(None)},
            "verdict": {True: "pass", False: "fail", None: "unscored"}[self.verdict.passed],
            "agreement": _agreement(self.votes),
        }


@dataclass(frozen=True)
class Audit:
    repeats: int
    cases: tuple[AuditedCase, ...]
    skipped: tuple[tuple[str, str, str], ...] = ()  # (file, case, why)
    files: tuple[str, ...] = field(default=())

    @property
    def agreement(self) -> JudgeAgreement:
        return JudgeAgreement.of([case.votes for case in self.cases])

    def as_data(self) -> dict[str, Any]:
        return {
            "files": list(self.files),
            "repeats": self.repeats,
            "cases": [case.as_data() for case in self.cases],
            "skipped": [{"file": f, "case": c, "why": why} for f, c, why in self.skipped],
            "agreement": self.agreement.as_data(),
        }

    def json(self) -> str:
        return json.dumps(self.as_data(), indent=2)

    def text(self) -> str:
        """The audit as a person reads it: a table per goldens file, then the agreement over all."""
        lines = [f"judge audit: each recorded summary graded {self.repeats} time(s)"]
        width = max([len(case.case) for case in self.cases] + [len("case")])
        for file in self.files:
            cases = [case for case in self.cases if case.file == file]
            if not cases:
                continue
            lines += ["", file, f"  {'case':<{width}}  verdict   pass  fail  unscored  agreement  judge"]
            for case in cases:
                data = case.as_data()
                votes, share = data["votes"], data["agreement"]
                lines.append(
                    f"  {case.case:<{width}}  {data['verdict']:<8} {votes['pass']:>5} {votes['fail']:>5} "
                    f"{votes['unscored']:>9}  {'n/a' if share is None else f'{share:.0%}':>9}  {case.model}"
                )
        for file, case_id, why in self.skipped:
            lines.append(f"skipped {file}::{case_id}: {why}")
        lines += ["", self.agreement.describe() if self.cases else "judge agreement: no case was graded"]
        return "\n".join(lines)


def _agreement(votes: Sequence[bool | None]) -> float | None:
    passes, fails = judge_counts(votes)
    return max(passes, fails) / (passes + fails) if passes + fails else None


def judged_cases(goldens: GoldensFile) -> list[tuple[StepCase, JudgeSpec]]:
    """The cases of a goldens file that ask for a judge, with what they ask it."""
    return [
        (case, case.expect.judge)
        for case in goldens.cases
        if isinstance(case.expect, Compaction) and case.expect.judge is not None
    ]


def recorded_summary(exchanges: Sequence[Exchange]) -> tuple[str, str] | None:
    """(where from, the summary) of a case's recorded exchanges: what a recorded judge call graded,
    else the text of the first recorded model answer that is not a judge's; None with neither."""
    answers: list[dict[str, Any]] = []
    for exchange in exchanges:
        prompt = _last_user_text(exchange.fields.get("request"))
        asked = judged_summary(prompt) if prompt is not None else None
        if asked is not None:
            return "judge", asked[1]
        response = exchange.fields.get("response")
        message = response_message(response) if isinstance(response, Mapping) else None
        if message is not None:
            answers.append(message)
    for message in answers:
        summary = Decision.from_message(message).summary_text.strip()
        if summary:
            return "decision", summary
    return None


def _last_user_text(request: Any) -> str | None:
    body = request.get("body") if isinstance(request, Mapping) else None
    messages = body.get("messages") if isinstance(body, Mapping) else None
    if not isinstance(messages, list) or not messages or not isinstance(messages[-1], Mapping):
        return None
    content = messages[-1].get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [b.get("text") for b in content if isinstance(b, Mapping) and b.get("type") == "text"]
        return "".join(t for t in texts if isinstance(t, str))
    return None


def audit(paths: Sequence[str | Path], judge: Judge, repeats: int, model: str | None = None) -> Audit:
    """Re-grade the recorded summary of every judged case of the goldens files `repeats` times with
    `judge` (the case's own model, or `model` for all). Raises GoldenError, naming the file, for a
    file that cannot be read, and when no case of any of them asks for a judge."""
    if isinstance(repeats, bool) or not 1 <= repeats <= MAX_AUDIT_REPEATS:
        raise ValueError(f"repeats={repeats!r}: give 1 to {MAX_AUDIT_REPEATS}")
    audited: list[AuditedCase] = []
    skipped: list[tuple[str, str, str]] = []
    files: list[str] = []
    for raw in paths:
        path = Path(raw)
        goldens = load_goldens(path, str(raw))
        files.append(str(raw))
        judged = judged_cases(goldens)
        if not judged:
            continue
        store = DecisionStore(store_path(path), str(store_path(Path(str(raw)))))
        for case, spec in judged:
            found = recorded_summary(store.exchanges(case.id))
            if found is None:
                skipped.append((str(raw), case.id, NOT_RECORDED))
                continue
            source, summary = found
            asked = JudgeSpec(spec.rubric, model or spec.model, repeats)
            replies = [judge(asked, summary) for _ in range(repeats)]
            verdict = majority(replies)
            audited.append(
                AuditedCase(
                    str(raw),
                    case.id,
                    spec.rubric,
                    verdict.model or asked.model or DEFAULT_JUDGE_MODEL,
                    source,
                    verdict,
                )
            )
    if not audited and not skipped:
        raise GoldenError(
            ", ".join(files),
            "has no step case with a judge",
            "add one under a compaction case's expect: judge: {rubric: \"the summary names the next "
            'task", repeats: 5}',
        )
    return Audit(repeats, tuple(audited), tuple(skipped), tuple(files))
