"""An LLM judge for compaction summaries: off unless a case asks for one with `judge: {rubric: ...}`.

The verdict is kept with the model that gave it (in the failure message and the test's
`user_properties`), so a judge's noise can be told apart from the agent's.

A judge is measured, not trusted: `judge: {rubric: ..., repeats: 5}` asks it five times and takes
the majority of the replies that gave a verdict, with its agreement (the share of scored replies
that agree with the majority). A reply without a verdict (no JSON object with a boolean "pass") is
*unscored*: never a pass, never a fail. A majority of none (every reply unscored, or a tie) is
unscored too: the case's other checks decide it, and the row says the judge could not.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import GoldenError

DEFAULT_JUDGE_MODEL = "claude-haiku-4-5"

JUDGE_SYSTEM = (
    "You grade a summary an AI agent wrote of its own work before its context was wiped. Judge it "
    "only against the rubric. Reply with one JSON object and nothing else: "
    '{"pass": true or false, "reason": "one sentence"}.'
)


_PROMPT = re.compile(r"\ARubric:\n(?P<rubric>.*?)\n\nSummary:\n(?P<summary>.*)\Z", re.S)


def judge_prompt(rubric: str, summary: str) -> str:
    """What the judge is asked (its user message): the rubric, then the summary."""
    return f"Rubric:\n{rubric}\n\nSummary:\n{summary}"


def judged_summary(prompt: str) -> tuple[str, str] | None:
    """The (rubric, summary) a judge's prompt asked about, or None when `prompt` is not one."""
    found = _PROMPT.match(prompt)
    return (found.group("rubric"), found.group("summary")) if found else None


MAX_REPEATS = 25  # a judge asked more often than this per case costs more than it tells


@dataclass(frozen=True)
class JudgeSpec:
    """What the judge is asked: a rubric, optionally which model judges, and how many times."""

    rubric: str
    model: str | None = None
    repeats: int = 1

    @classmethod
    def parse(cls, raw: Any, where: str) -> JudgeSpec:
        example = '{rubric: "the summary names the failing check", model: claude-haiku-4-5, repeats: 5}'
        if not isinstance(raw, Mapping):
            raise GoldenError(where, f"is {type(raw).__name__}, not a mapping", f"write {example}")
        unknown = sorted(set(raw) - {"rubric", "model", "repeats"})
        if unknown:
            raise GoldenError(f"{where}.{unknown[0]}", "unknown key", "use: rubric, model, repeats")
        rubric, model, repeats = raw.get("rubric"), raw.get("model"), raw.get("repeats", 1)
        if not isinstance(rubric, str) or not rubric.strip():
            raise GoldenError(f"{where}.rubric", "is required and must be text", f"write {example}")
        if model is not None and not isinstance(model, str):
            raise GoldenError(f"{where}.model", f"{model!r} is not a model id", f"write {example}")
        if not isinstance(repeats, int) or isinstance(repeats, bool) or not 1 <= repeats <= MAX_REPEATS:
            raise GoldenError(
                f"{where}.repeats",
                f"{repeats!r} is not a number of times to ask",
                f"give a whole number from 1 to {MAX_REPEATS} (an odd one leaves no tie)",
            )
        return cls(rubric, model, repeats)

    def to_data(self) -> dict[str, Any]:
        return {
            "rubric": self.rubric,
            **({"model": self.model} if self.model else {}),
            **({"repeats": self.repeats} if self.repeats != 1 else {}),
        }


@dataclass(frozen=True)
class JudgeVerdict:
    """A judge's verdict: `passed` True or False, or None when unscored (no verdict in the reply, or
    no majority among the replies). With repeats, `votes` holds each reply's (True, False or None)
    and `agreement` the share of the scored replies that agree with the majority."""

    passed: bool | None
    reason: str
    model: str
    votes: tuple[bool | None, ...] = ()
    agreement: float | None = None

    @property
    def unscored(self) -> bool:
        return self.passed is None

    def as_data(self) -> dict[str, Any]:
        data: dict[str, Any] = {"passed": self.passed, "reason": self.reason, "model": self.model}
        if self.votes:
            data["votes"] = list(self.votes)
            data["agreement"] = self.agreement
        return data


def majority(replies: Sequence[JudgeVerdict]) -> JudgeVerdict:
    """The majority of the replies that gave a verdict, with its agreement; unscored when none did or
    they tie. One reply is returned as it is."""
    if len(replies) == 1:
        return replies[0]
    votes = tuple(reply.passed for reply in replies)
    passes, fails = votes.count(True), votes.count(False)
    scored = passes + fails
    model = replies[0].model if replies else ""
    unscored = len(votes) - scored
    said = (
        f"{passes} pass, {fails} fail" + (f", {unscored} unscored" if unscored else "") + f" of {len(votes)}"
    )
    if passes == fails:
        why = "no reply gave a verdict" if not scored else "the replies tie"
        return JudgeVerdict(None, f"{why} ({said})", model, votes, 0.5 if scored else None)
    passed = passes > fails
    agreeing = [reply for reply in replies if reply.passed is passed]
    return JudgeVerdict(passed, f"{agreeing[0].reason} ({said})", model, votes, len(agreeing) / scored)


# A judge: (what to judge by, the summary) -> verdict. The `agentevals_judge` fixture returns one.
Judge = Callable[[JudgeSpec, str], JudgeVerdict]


def anthropic_judge(client: Any = None) -> Judge:
    """A judge that asks an Anthropic model. `client` defaults to `anthropic.Anthropic()`, which reads
    ANTHROPIC_API_KEY and ANTHROPIC_BASE_URL; its call is recorded and replayed like the agent's."""

    def judge(spec: JudgeSpec, summary: str) -> JudgeVerdict:
        nonlocal client
        if client is None:
            import anthropic

            client = anthropic.Anthropic()
        model = spec.model or DEFAULT_JUDGE_MODEL
        message = client.messages.create(
            model=model,
            max_tokens=300,
            system=JUDGE_SYSTEM,
            messages=[{"role": "user", "content": judge_prompt(spec.rubric, summary)}],
        )
        text = "".join(getattr(block, "text", "") for block in message.content)
        return parse_verdict(text, getattr(message, "model", None) or model)

    return judge


def parse_verdict(text: str, model: str) -> JudgeVerdict:
    """The verdict in a judge's reply: the first JSON object with a boolean "pass"; unscored (passed
    None) when there is none — never a fail."""
    for found in re.finditer(r"\{.*?\}", text, re.S):
        try:
            data = json.loads(found.group(0))
        except ValueError:
            continue
        if isinstance(data, dict) and isinstance(data.get("pass"), bool):
            return JudgeVerdict(data["pass"], str(data.get("reason", "")), model)
    return JudgeVerdict(None, f"unscored: the judge's reply had no verdict: {text[:200]!r}", model)
