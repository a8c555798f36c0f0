"""The step adapters: a case frozen from a LangGraph or a pydantic-ai run decides again through the
framework, the same request served from the recording; a changed system prompt makes it stale."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

import pytest_agentevals as ae
from pytest_agentevals import read_trace
from pytest_agentevals.errors import StaleGolden
from pytest_agentevals.sim import SimServer
from pytest_agentevals.step import load_case, run_case
from pytest_agentevals.step.store import Exchange

pytest.importorskip("langgraph", reason="needs pytest-agentevals[langgraph]")
pytest.importorskip("pydantic_ai", reason="needs pytest-agentevals[pydantic-ai]")

from examples import notes_graph, notes_pydantic
from examples.notes_policy import SYSTEM, policy
from pytest_agentevals.adapters import (
    first_decision,
    langchain_decision,
    langchain_messages,
    pydantic_ai_history,
)

OFFLINE = "http://127.0.0.1:9"  # a closed port: a case that passes was answered from its recording


@pytest.fixture(scope="module")
def sim_url() -> Iterator[str]:
    with SimServer(policy, seed=1) as sim:
        yield sim.url


def frozen(tmp_path: Path, trace: Path, at: int) -> tuple[Any, list[Exchange]]:
    """Model call `at` of a recorded run as a tool-choice step case, and its recorded exchange."""
    call = [event for event in read_trace(trace) if event["type"] == "model_call"][at]
    number = f"{at + 1:03d}"
    goldens = tmp_path / "notes.yaml"
    case = {
        "id": "next-note",
        "kind": "tool_choice",
        "context": {"request": call["request"]["body"]},
        "expect": {"tool": "write_note", "args": {"name": f"note-{number}", "text": f"Note {at + 1} of 3."}},
    }
    goldens.write_text(yaml.safe_dump({"cases": [case]}), encoding="utf-8")
    return load_case(goldens, "next-note"), [Exchange.of(call)]


def check(case: Any, recorded: list[Exchange], decide: Callable[[Any], Any]) -> None:
    outcome = run_case(case, decide, recorded, mode="none").outcome
    assert outcome.ok, outcome


def test_a_langgraph_step_case_decides_again_and_a_changed_prompt_is_stale(
    tmp_path: Path, sim_url: str
) -> None:
    trace = tmp_path / "graph.trace.jsonl"
    workspace = tmp_path / "ws"
    workspace.mkdir()
    with ae.Recorder(trace, agent="notes_graph"):
        notes_graph.run(sim_url, workspace, 3)
    case, recorded = frozen(tmp_path, trace, 2)
    model = notes_graph.model(OFFLINE)

    def decide(system: str) -> Callable[[Any], Any]:
        return lambda case: langchain_decision(model.invoke(langchain_messages(case, system=system)))

    check(case, recorded, decide(SYSTEM))  # the same request as the run's: served offline
    with pytest.raises(StaleGolden, match="system"):
        run_case(case, decide(SYSTEM + " Be brief."), recorded, mode="none")


def test_a_pydantic_ai_step_case_decides_again_and_a_changed_prompt_is_stale(
    tmp_path: Path, sim_url: str
) -> None:
    trace = tmp_path / "pydantic.trace.jsonl"
    workspace = tmp_path / "ws"
    workspace.mkdir()
    with ae.Recorder(trace, agent="notes_pydantic"):
        notes_pydantic.run(sim_url, workspace, 3)
    for at in (0, 2):  # the first step (the task alone) and one deep in the conversation
        step_case, recorded = frozen(tmp_path, trace, at)

        def decide(system: str) -> Callable[[Any], Any]:
            # The agent under test carries today's prompt; so does the history the case becomes.
            agent = notes_pydantic.agent(OFFLINE, system=system)
            return lambda case: first_decision(
                agent, pydantic_ai_history(case, system=system), deps=workspace
            )

        check(step_case, recorded, decide(SYSTEM))
        # pydantic-ai sends the prompt the history carries: with the recorded one, this would pass.
        with pytest.raises(StaleGolden, match="system"):
            run_case(step_case, decide(SYSTEM + " Be brief."), recorded, mode="none")
