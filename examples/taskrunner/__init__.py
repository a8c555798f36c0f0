"""taskrunner: a small long-running agent on the anthropic SDK, with the six parts of a serious loop.

A step loop with per-step timeouts, compaction at a high-water mark, a token budget, checkpoints at
verified milestones, a watchdog for stalls and loops, and a supervisor that restarts from the last
checkpoint. It works through a seeded task list in a scratch workspace with three tools.

Offline it talks to `pytest_agentevals.sim` driven by `ScriptedModel`; with `live=True` to the real
API (ANTHROPIC_API_KEY). `python -m examples.taskrunner --help` runs it from the command line.
"""

from __future__ import annotations

import contextlib
import dataclasses
import tempfile
from pathlib import Path
from typing import Any

import anthropic

from pytest_agentevals.sim import FaultPlan, SimServer

from .harness import STATE_VERSION, AgentState, HarnessConfig, RunResult
from .policy import ScriptedModel
from .supervisor import Checkpoint, run_agent
from .tasks import Task, make_tasks

__all__ = [
    "AgentState",
    "Checkpoint",
    "HarnessConfig",
    "RunResult",
    "ScriptedModel",
    "Task",
    "contract",
    "make_tasks",
    "resume_recorded",
    "run",
    "run_agent",
    "start_recorded",
]


def run(
    tasks: int = 10,
    *,
    seed: int = 0,
    workspace: str | Path | None = None,
    stream: bool | None = None,
    stall_at: int | None = None,
    stall_persists: bool = False,
    faults: FaultPlan | None = None,
    live: bool = False,
    resume: Checkpoint | None = None,
    config: HarnessConfig | None = None,
    **overrides: Any,
) -> RunResult:
    """Run the agent on `tasks` seeded tasks and return how it went.

    Offline (the default) a `SimServer` plays `ScriptedModel(seed, stall_at=...)`, with `faults`
    injected on top; `live=True` uses the real API with the key in ANTHROPIC_API_KEY. `overrides` are
    `HarnessConfig` fields (`compact_at=2000`, `token_budget=50_000`...), as is `stream` when given.
    Without a `workspace` the run works in a temporary directory.
    """
    if stream is not None:
        overrides["stream"] = stream
    config = dataclasses.replace(config or HarnessConfig(), **overrides)
    task_list = make_tasks(tasks, seed)
    with contextlib.ExitStack() as cleanup:
        if workspace is None:
            workspace = cleanup.enter_context(tempfile.TemporaryDirectory(prefix="taskrunner-"))
        if live:
            client = anthropic.Anthropic(max_retries=config.max_retries)
        else:
            policy = ScriptedModel(seed, stall_at=stall_at, stall_persists=stall_persists)
            sim = cleanup.enter_context(SimServer(policy, seed=seed, faults=faults))
            # The sim takes any key; this one only satisfies the SDK's check that there is one.
            client = anthropic.Anthropic(base_url=sim.url, api_key="sim", max_retries=config.max_retries)
        with client:
            return run_agent(client, task_list, workspace, config, resume)


def contract() -> dict[str, Any]:
    """What this harness declares about its environment, for a recorded run's contract
    (`Recorder(contract=...)`) and a resumed checkpoint's (the `pytest_agentevals_contract()` hook):
    the shape of the state it checkpoints."""
    return {"taskrunner.state_version": STATE_VERSION}


def _config_of(task: dict[str, Any], overrides: dict[str, Any]) -> HarnessConfig:
    """The harness's settings a recorded task names (`compact_at`), under `overrides`."""
    named = {key: task[key] for key in ("compact_at",) if task.get(key) is not None}
    return dataclasses.replace(HarnessConfig(), **{**named, **overrides})


def resume_recorded(checkpoint: Any, **overrides: Any) -> RunResult:
    """Resume a recorded run from one of its checkpoints, against the seeded simulated model: the next
    leg. `checkpoint` is what the resume layer's hook receives (a fixture booted by
    `@pytest.mark.resume`, or a `ResumePoint`): its `workspace` is already restored, its `state` is
    the agent's, its `task` the recorded run's (agent, tasks, seed, stall_at, compact_at).

    The model's script goes on where the recorded run's was: a stall the run met after the checkpoint
    comes at the same point of the leg (the model's work calls so far are the checkpoint's steps less
    its compaction calls)."""
    task = checkpoint.task
    if not isinstance(task, dict) or task.get("agent") != "taskrunner":
        raise ValueError(f"not a taskrunner task: {task!r}")
    workspace = Path(checkpoint.workspace)
    state = AgentState.from_dict(dict(checkpoint.state))
    done = int(checkpoint.step) - int(checkpoint.lineage.get("compactions") or 0)
    stall_at = task.get("stall_at")
    left = stall_at - done if isinstance(stall_at, int) and stall_at > done else None
    return run(
        task["tasks"],
        seed=task["seed"],
        stall_at=left,
        workspace=workspace,
        resume=Checkpoint.capture(state, workspace),
        config=_config_of(task, overrides),
    )


def start_recorded(
    task: dict[str, Any], workspace: str | Path, resume: Checkpoint | None = None, **overrides: Any
) -> RunResult:
    """Start the agent again on a recorded run's task (its trace's run_start `task`, as written by
    cassettes/record_examples.py: agent, tasks, seed), against whatever answers the SDK — inside a
    replay, the recording. `overrides` are HarnessConfig fields, for testing a changed harness."""
    if task.get("agent") != "taskrunner":
        raise ValueError(f"not a taskrunner task: {task!r}")
    config = _config_of(task, overrides)
    # The default base URL: inside a replay nothing leaves the machine; the replay answers first.
    client = anthropic.Anthropic(api_key="replay-" + "no-key-needed", max_retries=config.max_retries)
    with client:
        return run_agent(client, make_tasks(task["tasks"], task["seed"]), workspace, config, resume)
