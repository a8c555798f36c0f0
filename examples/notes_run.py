"""The framework examples started by the pyramid's run hook (cassettes/ and marathons/ conftests):
a task `{"agent": "notes_graph" | "notes_pydantic", "notes": N}` run in a workspace, against the
simulated model it starts (or `base_url`: a replay answers every request from its cassette), ending
with a verification of the notes in the workspace (the marathon's verified pass and progress)."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest_agentevals as ae
from pytest_agentevals.sim import SimServer

from .notes_policy import policy

AGENTS = ("notes_graph", "notes_pydantic")
REPLAYED = "http://127.0.0.1:9"  # nothing listens: in a replay every request is answered recorded


# The extra each example needs, by the module that tells whether it is installed.
EXTRAS = {"notes_graph": ("langgraph", "langgraph"), "notes_pydantic": ("pydantic_ai", "pydantic-ai")}


def missing_extra(agent: str) -> str | None:
    """Why `agent` cannot run here (its framework is not installed), or None."""
    module, extra = EXTRAS[agent]
    if importlib.util.find_spec(module) is None:
        return f"the {agent} example needs its framework: pip install -e '.[{extra}]' (or '.[test]')"
    return None


def is_notes_task(task: Any) -> bool:
    return isinstance(task, dict) and task.get("agent") in AGENTS and isinstance(task.get("notes"), int)


def _runner(agent: str) -> Callable[[str, Path, int], Any]:
    if agent == "notes_graph":
        from . import notes_graph

        return notes_graph.run
    from . import notes_pydantic

    return notes_pydantic.run


def run_task(task: dict[str, Any], workspace: str | Path, base_url: str | None = None) -> int:
    """Run the task; how many of its notes are in the workspace after it."""
    folder, notes = Path(workspace), task["notes"]
    run = _runner(task["agent"])
    if base_url is None:
        with SimServer(policy, seed=task.get("seed", 1)) as sim:
            run(sim.url, folder, notes)
    else:
        run(base_url, folder, notes)
    written = sum(1 for n in range(1, notes + 1) if (folder / f"note-{n:03d}.txt").exists())
    ae.verification("notes written", written == notes, progress=written / notes)
    return written


def resume_task(checkpoint: Any) -> int:
    """The next leg from a checkpoint the resume layer booted (its `workspace` restored, its `state`
    the example's): live against the simulated model, ending with the same verification."""
    task, folder = checkpoint.task, Path(checkpoint.workspace)
    with SimServer(policy, seed=1) as sim:
        if task["agent"] == "notes_graph":
            from langgraph.checkpoint.memory import InMemorySaver

            from pytest_agentevals.adapters import RecordedCheckpointer, boot_thread

            from . import notes_graph

            saver = InMemorySaver()
            graph = notes_graph.build(sim.url, RecordedCheckpointer(saver, workspace=folder))
            booted = boot_thread(saver, checkpoint.state, "resumed")
            config = notes_graph.config(folder, "resumed", task["notes"])
            config["configurable"].update(booted["configurable"])
            graph.invoke(None, config, durability="sync")
        else:
            from pydantic_ai.messages import ModelMessagesTypeAdapter

            from . import notes_pydantic

            history = ModelMessagesTypeAdapter.validate_python(checkpoint.state["messages"])
            # Checkpointed when the model had answered, before its tool ran: ask it again.
            notes_pydantic.run(sim.url, folder, task["notes"], history=history[:-1])
    notes = task["notes"]
    written = sum(1 for n in range(1, notes + 1) if (folder / f"note-{n:03d}.txt").exists())
    ae.verification("notes written", written == notes, progress=written / notes)
    return written
