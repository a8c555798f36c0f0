"""An LLM judge for compaction summaries: off unless a case asks for one with `judge: {rubric: ...}`.

The verdict is kept with the model that gave it (in the failure message and the test's
`user_properties`), so a judge's noise can be told apart from the agent's.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import GoldenError

DEFAULT_JUDGE_MODEL = "claude-haiku-4-5"

JUDGE_SYSTEM = (
    "You grade a summary an AI agent wrote of its own work before its context was wiped. Judge it "
    "only against the rubric. Reply with one JSON object and nothing else: "
    '{"pass": true or false, "reason": "one sentence"}.'
)


@dataclass(frozen=True)
class JudgeSpec:
    """What the judge is asked: a rubric, and optionally which model judges."""

    rubric: str
    model: str | None = None

    @classmethod
    def parse(cls, raw: Any, where: str) -> JudgeSpec:
        example = '{rubric: "the summary names the failing check", model: claude-haiku-4-5}'
        if not isinstance(raw, Mapping):
            raise GoldenError(where, f"is {type(raw).__name__}, not a mapping", f"write {example}")
        unknown = sorted(set(raw) - {"rubric", "model"})
        if unknown:
            raise GoldenError(f"{where}.{unknown[0]}", "unknown key", "use: rubric, model")
        rubric, model = raw.get("rubric"), raw.get("model")
        if not isinstance(rubric, str) or not rubric.strip():
            raise GoldenError(f"{where}.rubric", "is required and must be text", f"write {example}")
        if model is not None and not isinstance(model, str):
            raise GoldenError(f"{where}.model", f"{model!r} is not a model id", f"write {example}")
        return cls(rubric, model)

    def to_data(self) -> dict[str, Any]:
        return {"rubric": self.rubric, **({"model": self.model} if self.model else {})}


@dataclass(frozen=True)
class JudgeVerdict:
    passed: bool
    reason: str
    model: str

    def as_data(self) -> dict[str, Any]:
        return {"passed": self.passed, "reason": self.reason, "model": self.model}


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
            messages=[{"role": "user", "content": f"Rubric:\n{spec.rubric}\n\nSummary:\n{summary}"}],
        )
        text = "".join(getattr(block, "text", "") for block in message.content)
        return parse_verdict(text, getattr(message, "model", None) or model)

    return judge


def parse_verdict(text: str, model: str) -> JudgeVerdict:
    """The verdict in a judge's reply: the first JSON object with a boolean "pass"."""
    for found in re.finditer(r"\{.*?\}", text, re.S):
        try:
            data = json.loads(found.group(0))
        except ValueError:
            continue
        if isinstance(data, dict) and isinstance(data.get("pass"), bool):
            return JudgeVerdict(data["pass"], str(data.get("reason", "")), model)
    return JudgeVerdict(False, f"the judge's reply had no verdict: {text[:200]!r}", model)
