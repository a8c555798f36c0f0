"""The example agent's marathon: five seeded end-to-end runs against the simulated model, under a budget
and a watchdog, judged over the seeds (`pytest -m marathon` at the repository root; docs/marathon.md).
"""

from __future__ import annotations

import pytest

from examples.taskrunner import RunResult


@pytest.mark.marathon(
    seeds=5,
    task={"agent": "taskrunner", "tasks": 12},
    max_calls=100,  # each run's budget: the guards stop it there (and progress-AUC is over 100 steps)
    max_cost_usd=1.0,
    stall_calls=6,  # the watchdog asks after 6 model calls without verified progress
    max_restarts=2,  # a crashed run restarts from its last checkpoint, twice at most
    min_pass_rate=0.5,  # judged on the 95% interval over the seeds, never on one seed's luck
    min_progress_auc=0.6,
    max_loop_rate=0.5,
)
def test_taskrunner_marathon(agentevals_marathon) -> None:  # type: ignore[no-untyped-def]
    result = agentevals_marathon.run_agent()
    assert isinstance(result, RunResult)  # a guard's stop ends the run with its status, not a crash
