"""How the framework examples decide at a golden step case (goldens/notes-*.yaml), in the few lines
docs/frameworks.md shows: the case's conversation becomes the framework's own history behind today's
system prompt, and the framework asks the model once. An unchanged request is answered from
goldens/notes-*.decisions.trace.jsonl; a changed prompt or tool schema is stale."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from .notes_policy import SYSTEM

SCENARIOS = ("notes-graph", "notes-pydantic")


def decide(case: Any, base_url: str) -> Any:
    if case.path.stem == "notes-graph":
        from pytest_agentevals.adapters import langchain_decision, langchain_messages

        from . import notes_graph

        model = notes_graph.model(base_url)
        return langchain_decision(model.invoke(langchain_messages(case, system=SYSTEM)))
    from pytest_agentevals.adapters import first_decision, pydantic_ai_history

    from . import notes_pydantic

    agent = notes_pydantic.agent(base_url)
    with tempfile.TemporaryDirectory(prefix="notes-step-") as workspace:  # no tool runs in a step case
        return first_decision(agent, pydantic_ai_history(case, system=SYSTEM), deps=Path(workspace))
