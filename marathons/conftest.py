"""How the marathon starts the example agent (examples/taskrunner) on one seed: against the simulated
model, offline, with the night's weather (429s, retried by the SDK) and the incidents a long run must
survive, each on a seed of its own:

- seed 1, a crash: three dropped connections in a row from request 14, more than the SDK retries.
  The call fails and the harness crashes (`let_it_crash`: it leaves restarts to the marathon); the
  marathon's supervisor boots the run's last checkpoint from its trace and resumes it through
  `pytest_agentevals_resume_agent` (`max_restarts` in the marker);
- seed 3, a stall: from step 12 the model re-reads one file forever; the framework's watchdog
  (`stall_calls` in the marker) finds no verified progress and stops the run as `stalled`.

`pytest_agentevals_run_agent(run)` is the replay and marathon layers' run hook, called for each seed
with the marker's task (the seed under "seed") and the seed's run (`marathon.workspace`...).

The agent (and the anthropic SDK under it, a second of imports) is imported inside the hooks: under
xdist the controller loads this file too, before it starts the workers, and never runs an agent.
"""

from __future__ import annotations

from typing import Any

from pytest_agentevals import AgentRun
from pytest_agentevals.sim import Fault, FaultPlan

CRASH_SEED = 1
STALL_SEED = 3
CRASH_AT = (14, 15, 16)  # request indices (retries included): one more than the SDK's two retries
STALL_AT = 12  # the model's step
RATE_LIMITED = 0.08  # the share of requests answered 429: weather


def faults_for(seed: int, *, crash: bool) -> FaultPlan:
    at = {index: Fault.drop() for index in CRASH_AT} if crash else {}
    return FaultPlan(rate_limit=RATE_LIMITED, seed=seed, max_in_a_row=1, at=at)


def _taskrunner(task: Any) -> bool:
    return isinstance(task, dict) and task.get("agent") == "taskrunner"


def pytest_agentevals_run_agent(run: AgentRun) -> Any:
    task = run.task
    if run.layer != "marathon":
        return None  # a replay's call: another hook's
    from examples import notes_run, taskrunner

    if notes_run.is_notes_task(task):
        return notes_run.run_task(task, run.workspace)  # the framework examples (docs/frameworks.md)
    if not _taskrunner(task):
        return None  # not a marathon of this agent: another hook's
    seed = task["seed"]
    return taskrunner.run(
        task["tasks"],
        seed=seed,
        workspace=run.workspace,
        stream=True,
        faults=faults_for(seed, crash=seed == CRASH_SEED),
        stall_at=STALL_AT if seed == STALL_SEED else None,
        stall_persists=True,
        max_retries=2,
        let_it_crash=True,
    )


def pytest_agentevals_contract() -> dict[str, Any]:
    from examples import taskrunner

    return taskrunner.contract()  # in each seed's trace: a checkpoint of it boots as a fixture would


def pytest_agentevals_resume_agent(checkpoint: Any) -> Any:
    """The next leg of a crashed seed, from its last checkpoint: the restored workspace and state. The
    crash happened once; the weather goes on."""
    from examples import taskrunner
    from examples.taskrunner import AgentState, Checkpoint

    task = checkpoint.task
    if not _taskrunner(task):
        return None
    state = AgentState.from_dict(checkpoint.state)
    return taskrunner.run(
        task["tasks"],
        seed=task["seed"],
        workspace=checkpoint.workspace,
        resume=Checkpoint.capture(state, checkpoint.workspace),
        stream=True,
        faults=faults_for(task["seed"], crash=False),
        max_retries=2,
        let_it_crash=True,
    )
