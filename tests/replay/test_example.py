"""The example agent's replay tests: its recorded runs, re-executed offline with the network blocked.

The cassettes are recorded by `python cassettes/record_examples.py` against the seeded simulated
model; each trace's run_start task says how to start the agent again (`start` below). Run them
with `pytest -m replay`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from examples import taskrunner
from examples.taskrunner.supervisor import Checkpoint
from pytest_agentevals.replay import network

pytestmark = pytest.mark.replay


def start(task: dict[str, Any], workspace: Path, resume: Checkpoint | None = None, **config: Any) -> Any:
    return taskrunner.start_recorded(task, workspace, resume, **config)


@pytest.mark.replay("taskrunner-3-tasks")
def test_a_recorded_run_replays_offline(agentevals_replay: Any, tmp_path: Path) -> None:
    assert network.blocked()
    result = start(agentevals_replay.task, tmp_path / "ws")
    assert result.status == "ok"
    assert result.tasks_done == 3
    assert result.steps == 11
    # The tools answered from the recording: the workspace was never written.
    assert sorted(p.name for p in (tmp_path / "ws").iterdir()) == [".taskrunner-workspace"]


@pytest.mark.replay("incident-taskrunner-stall", replay_mode="sequential")
def test_the_stall_incident_is_caught_by_the_watchdog(agentevals_replay: Any, tmp_path: Path) -> None:
    result = start(agentevals_replay.task, tmp_path / "ws")
    assert result.watchdog_fires >= 1
    assert result.restarts == 1  # the supervisor restarted from the last checkpoint
    assert result.status == "ok"
    assert agentevals_replay.report.divergences == []


# These two diverge on purpose and assert the report; the warning that tells a user so is expected.
EXPECTED_DIVERGENCE = pytest.mark.filterwarnings("ignore::pytest_agentevals.replay.ReplayDivergenceWarning")


@EXPECTED_DIVERGENCE
@pytest.mark.replay("incident-taskrunner-stall", replay_mode="sequential")
def test_a_stricter_watchdog_still_catches_the_recorded_stall(agentevals_replay: Any, tmp_path: Path) -> None:
    # A changed harness, tested against the model's recorded behaviour: it fires one call earlier,
    # so its requests differ from the recording; sequential mode serves the answers in order.
    result = start(agentevals_replay.task, tmp_path / "ws", repeat_limit=3)
    assert result.watchdog_fires >= 1
    assert agentevals_replay.report.divergences


@EXPECTED_DIVERGENCE
@pytest.mark.replay("taskrunner-3-tasks", from_step=5, replay_mode="sequential")
def test_a_run_replays_from_a_checkpoint_onward(agentevals_replay: Any, tmp_path: Path) -> None:
    checkpoint = agentevals_replay.cassette.checkpoint
    assert checkpoint["step"] <= 5
    resume = Checkpoint.from_event(checkpoint)
    result = start(agentevals_replay.task, tmp_path / "ws", resume=resume)
    assert result.status == "ok"
    assert result.tasks_done == 3
    report = agentevals_replay.report
    assert report.served_http == report.recorded_http == 11 - checkpoint["step"]
    # A resumed attempt opens a fresh context, so its first request is not the recorded one: that is
    # why this replay is sequential. The divergence is reported, not raised.
    assert report.divergences[0].headline.startswith(
        "model call 1: the request differs from recorded model call"
    )
