"""How the marathon starts the example agent (examples/taskrunner) on one seed: against the simulated
model, offline, with the night's weather (429s, retried by the SDK) and the incidents a long run must
survive, each on a seed of its own:

- seed 1, a crash: three dropped connections in a row from request 14, more than the SDK retries;
  the call fails, the harness crashes, and the supervisor restarts the run from its last checkpoint;
- seed 3, a stall: from step 12 the model re-reads one file forever; the framework's watchdog
  (`stall_calls` in the marker) finds no verified progress and stops the run as `stalled`.

`pytest_agentevals_run_agent(task, marathon)` is the replay layer's run hook, called for each seed
with the marker's task (the seed under "seed") and the seed's run (`marathon.workspace`...).
"""

from __future__ import annotations

from typing import Any

from examples import taskrunner
from pytest_agentevals.sim import Fault, FaultPlan

CRASH_SEED = 1
STALL_SEED = 3
CRASH_AT = (14, 15, 16)  # request indices (retries included): one more than the SDK's two retries
STALL_AT = 12  # the model's step
RATE_LIMITED = 0.08  # the share of requests answered 429: weather


def faults_for(seed: int) -> FaultPlan:
    at = {index: Fault.drop() for index in CRASH_AT} if seed == CRASH_SEED else {}
    return FaultPlan(rate_limit=RATE_LIMITED, seed=seed, max_in_a_row=1, at=at)


def pytest_agentevals_run_agent(task: Any, marathon: Any) -> Any:
    if marathon is None or not isinstance(task, dict) or task.get("agent") != "taskrunner":
        return None  # not a marathon of this agent: another hook's
    seed = task["seed"]
    return taskrunner.run(
        task["tasks"],
        seed=seed,
        workspace=marathon.workspace,
        stream=True,
        faults=faults_for(seed),
        stall_at=STALL_AT if seed == STALL_SEED else None,
        stall_persists=True,
        max_retries=2,
    )
