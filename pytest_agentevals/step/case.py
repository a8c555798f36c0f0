"""A step case: the frozen context at one decision point, and what the decision there should be."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..trace.openai_chat import to_openai
from .decision import Decision
from .expectation import Expectation, Outcome
from .judge import Judge


@dataclass(frozen=True)
class StepCase:
    """One golden step case.

    `context` holds what was frozen: `request` (the model request at that step: model, system,
    tools, messages...) for a model decision, `state` (the harness's state) for a harness decision,
    and anything else the case carries. `source` says where it was extracted from.
    """

    id: str
    kind: str
    context: Mapping[str, Any]
    expect: Expectation
    path: Path
    index: int = 0
    source: Mapping[str, Any] | None = None
    description: str | None = None
    xfail: str | None = None

    @property
    def request(self) -> dict[str, Any] | None:
        """The frozen model request (a Messages API body), when the decision is the model's."""
        request = self.context.get("request")
        return dict(request) if isinstance(request, Mapping) else None

    @property
    def messages(self) -> list[Any]:
        """The frozen conversation: the request's messages, or [] for a harness decision."""
        request = self.request or {}
        messages = request.get("messages")
        return list(messages) if isinstance(messages, list) else []

    @property
    def openai_messages(self) -> list[dict[str, Any]]:
        """The frozen conversation in the OpenAI / litellm chat shape: the system prompt first, tool
        calls as `tool_calls`, tool results as `tool` messages (`pytest_agentevals.trace.to_openai`;
        `from_openai` converts a harness's history back). [] for a harness decision."""
        request = self.request or {}
        return to_openai(self.messages, request.get("system")) if request else []

    @property
    def state(self) -> dict[str, Any] | None:
        """The frozen harness state, when the decision is the harness's."""
        state = self.context.get("state")
        return dict(state) if isinstance(state, Mapping) else None

    @property
    def label(self) -> str:
        return f"{self.path.name}::{self.id}"

    def with_context(self, **changes: Any) -> StepCase:
        """This case with some of its context replaced (what a metamorphic perturbation makes)."""
        return dataclasses.replace(self, context={**self.context, **changes})

    def check(self, decision: Any, judge: Judge | None = None) -> Outcome:
        """Check a decision (anything `Decision.of` reads) against this case's expectation."""
        return self.expect.check(Decision.of(decision), judge)
