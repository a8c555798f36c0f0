"""The framework examples' marathons (docs/frameworks.md): five seeded runs each of the LangGraph and
the pydantic-ai agent against the simulated model, judged over the seeds. Skipped without the extras
pytest-agentevals[langgraph] / [pydantic-ai]."""

from __future__ import annotations

import pytest

pytest.importorskip("langgraph", reason="needs pytest-agentevals[langgraph]")
pytest.importorskip("pydantic_ai", reason="needs pytest-agentevals[pydantic-ai]")


@pytest.mark.marathon(seeds=5, task={"agent": "notes_graph", "notes": 3}, max_calls=20, min_pass_rate=0.5)
def test_notes_graph_marathon(agentevals_marathon) -> None:  # type: ignore[no-untyped-def]
    assert agentevals_marathon.run_agent() == 3


@pytest.mark.marathon(seeds=5, task={"agent": "notes_pydantic", "notes": 3}, max_calls=20, min_pass_rate=0.5)
def test_notes_pydantic_marathon(agentevals_marathon) -> None:  # type: ignore[no-untyped-def]
    assert agentevals_marathon.run_agent() == 3
