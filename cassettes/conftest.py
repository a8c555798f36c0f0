"""How the replay layer starts the example agent on a cassette's recorded task.

With this hook, every `cassettes/*.trace.jsonl` that no test replays is collected as a replay test
of its own (`pytest cassettes -m replay`): an incident dropped into this folder — `agentevals
promote` puts it here — is a regression test with no code written.
"""

from __future__ import annotations

import tempfile
from typing import Any

import pytest

from examples import notes_run, taskrunner
from pytest_agentevals import AgentRun


def pytest_agentevals_run_agent(run: AgentRun) -> Any:
    if run.layer == "replay" and notes_run.is_notes_task(run.task):  # the framework examples
        if reason := notes_run.missing_extra(run.task["agent"]):
            pytest.skip(reason)
        with tempfile.TemporaryDirectory(prefix="notes-replay-") as workspace:
            return notes_run.run_task(run.task, workspace, base_url=notes_run.REPLAYED)
    if run.layer != "replay" or not isinstance(run.task, dict) or run.task.get("agent") != "taskrunner":
        return None  # not this agent's replay: another hook, or the recorded command line, starts it
    with tempfile.TemporaryDirectory(prefix="taskrunner-replay-") as workspace:
        return taskrunner.start_recorded(run.task, workspace)
