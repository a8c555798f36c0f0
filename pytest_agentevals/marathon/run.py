"""One seed's run of a marathon test: the state machine behind the `agentevals_marathon` fixture, with no
pytest in it.

```python
run = SeedRun(test="t.py::test_x", seed=3, task={"tasks": 8}, trace=path, workspace=folder,
              runner=lambda task, run: my_agent(task["tasks"], seed=run.seed), guards=guards)
run.start()                     # the recorder: this seed's trace, under its budgets and watchdog
try:
    run.run_agent()             # the runner on the seeded task; a guard's stop is the run's status
finally:
    run.stop(failed=False)      # the trace's run_end
result = run.result("passed", commit=...)  # its metrics, as a line of the results file
```

The seed reaches the agent twice: as `run.seed`, and inside a dict task as `task["seed"]` (the shape
of a recorded task, so a seed's trace replays through the same hook).

Supervision ("let it crash"): when the agent raises (anything but a guard's stop or an error of ours),
the run is restarted from its last checkpoint, up to `max_restarts` times: the checkpoint is booted
from the seed's own trace into a fresh workspace (`resume_point_from_trace`) and handed to `resumer`
(the resume layer's `pytest_agentevals_resume_agent` hook). Before its first checkpoint a run restarts
from the start, through the runner. Each restart is a note in the trace ("restarting from the last
checkpoint", `data.action` "restart"), counted by the metrics; the run stays one trace, under one
budget.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import AgentEvalsError, CheckpointError, RunStopped
from ..guards.protocol import Guard
from ..metrics import compute_file
from ..recording.factory import recorder_for
from ..resume.boot import ResumePoint, resume_point_from_trace
from ..settings import Settings
from .results import Plan, SeedResult, now

Runner = Callable[[Any, "SeedRun"], Any]  # (task, run) -> the agent's result; raises NoRunner if none
Resumer = Callable[[ResumePoint], Any]  # a checkpoint -> the resumed agent's result; None if none resumed


class NoRunner(AgentEvalsError):
    """Nothing started the agent on a marathon's task."""


class SeedFailed(AgentEvalsError):
    """A seed's run ended with a status its marker's `fail_on` lists."""


class NotResumed(AgentEvalsError):
    """A crashed seed could not be restarted from its checkpoint."""


def seeded_task(task: Any, seed: int) -> Any:
    """The task handed to the agent: a dict task (none is `{}`) with the seed under "seed"; any other
    task as it is."""
    if task is None:
        return {"seed": seed}
    if isinstance(task, Mapping):
        return {**task, "seed": seed}
    return task


class SeedRun:
    """One seed of a marathon test (see the module docstring). `runner(task, run)` starts the agent;
    `guards` are the run's budgets, watchdog and loop guard."""

    def __init__(
        self,
        *,
        test: str,
        seed: int,
        task: Any,
        trace: Path,
        workspace: Path,
        runner: Runner | None = None,
        guards: Sequence[Guard] = (),
        agent: str = "agent",
        settings: Settings | None = None,
        trace_name: str | None = None,
        fail_on: Sequence[str] = (),
        max_restarts: int = 0,
        resumer: Resumer | None = None,
        contract: Mapping[str, Any] | None = None,
    ) -> None:
        self.test = test
        self.seed = seed
        self.task = seeded_task(task, seed)
        self.trace = Path(trace)
        self.trace_name = trace_name  # the trace, relative to the results file's folder
        self.workspace = Path(workspace)
        self.runner = runner
        self.fail_on = tuple(fail_on)
        self.max_restarts = max_restarts
        self.resumer = resumer
        self.restarts = 0
        self.checkpoint: ResumePoint | None = None  # what the last restart booted from
        self.refused = False  # a guard refused the run before it began (the day's budget was spent)
        self.result_of_agent: Any = None
        self.crash: BaseException | None = None  # what ended the run when the agent raised
        self.recorder = recorder_for(
            self.trace, settings, agent=agent, seed=seed, task=self.task, contract=contract, guards=guards
        )

    # -- life cycle ------------------------------------------------------------------------------------

    def start(self) -> SeedRun:
        """Start recording this seed's trace (replacing one an earlier session left)."""
        self.trace.parent.mkdir(parents=True, exist_ok=True)
        self.trace.unlink(missing_ok=True)
        self.workspace.mkdir(parents=True, exist_ok=True)
        try:
            self.recorder.start()
        except RunStopped:
            self.refused = True  # its trace holds the guard's refusal and run_end; no request left
        return self

    def run_agent(self) -> Any:
        """Start the agent on the seeded task through the runner and return its result. A guard's stop
        (`RunStopped`) ends the run with the guard's status and returns None; any other exception is
        the run's crash, raised."""
        if self.runner is None:
            raise NoRunner(f"{self.test} seed {self.seed}: no runner to start the agent with")
        if self.refused:
            self._check_status()
            return None
        runner = self.runner
        attempt: Callable[[], Any] = lambda: runner(self.task, self)  # noqa: E731
        while True:
            try:
                self.result_of_agent = attempt()
                break
            except RunStopped:
                break  # the trace's guard event and run_end say why
            except Exception as exc:
                if isinstance(exc, AgentEvalsError) or self.restarts >= self.max_restarts:
                    self.crash = exc
                    raise
                attempt = self._restart(exc)
            except BaseException as exc:
                self.crash = exc
                raise
        self._check_status()
        return self.result_of_agent

    def _restart(self, crash: Exception) -> Callable[[], Any]:
        """The next attempt after `crash`: from the trace's last checkpoint through the resumer, or
        from the start before the run's first checkpoint. Raises the crash when it cannot be."""
        reason = f"{type(crash).__name__}: {crash}"
        workspace = self.workspace.with_name(f"{self.workspace.name}-restart-{self.restarts + 1}")
        if self.recorder.last_checkpoint is None:
            self.restarts += 1
            self._note("restarting from the start (no checkpoint yet)", reason, None)
            self.workspace = workspace
            self.workspace.mkdir(parents=True, exist_ok=True)
            runner = self.runner
            assert runner is not None
            return lambda: runner(self.task, self)
        if self.resumer is None:
            self._note("not restarted: nothing resumes a checkpoint", reason, None)
            raise crash
        try:
            point = resume_point_from_trace(self.trace, "latest", workspace)
        except CheckpointError as exc:
            self._note(f"not restarted: {exc}", reason, None)
            raise crash from exc
        self.restarts += 1
        self.checkpoint = point
        self.workspace = point.workspace
        self._note("restarting from the last checkpoint", reason, point.step)
        resumer = self.resumer

        def resume() -> Any:
            result = resumer(point)
            if result is None:
                raise NotResumed(
                    f"{self.test} seed {self.seed} crashed ({reason}) and no pytest_agentevals_resume_agent "
                    "hook resumed it from its checkpoint: add one to a conftest.py that starts your agent "
                    "from checkpoint.state in checkpoint.workspace (see docs/marathon.md)"
                )
            return result

        return resume

    def _note(self, message: str, reason: str, step: int | None) -> None:
        data: dict[str, Any] = {"reason": reason, "restarts": self.restarts, "by": "marathon"}
        if message.startswith("restarting"):
            data["action"] = "restart"
        if step is not None:
            data["checkpoint_step"] = step
        self.recorder.emit("note", message=message, data=data)

    def ended_as(self) -> str | None:
        """How the run ended so far: a guard's stop, or the status the harness set."""
        return self.recorder.guarding.halt_status or self.recorder.status

    def _check_status(self) -> None:
        status = self.ended_as()
        if status is not None and status in self.fail_on:
            raise SeedFailed(
                f"{self.test} seed {self.seed}: the run ended {status}, and the marker's "
                f"fail_on={self.fail_on!r} fails its item (the verdict over the seeds counts it either way)"
            )

    def stop(self, *, failed: bool = False) -> None:
        """End the trace: with the run's own status (the harness's `end`, a guard's), else `error` for
        a crash, `failed` when the test failed, `ok` otherwise."""
        recorder = self.recorder
        if recorder.status is None and self.crash is None and failed:
            recorder.end("failed")
        if isinstance(self.crash, KeyboardInterrupt):
            recorder.stop(status="interrupted")
        else:
            recorder.stop(error=self.crash if isinstance(self.crash, Exception) else None)

    @property
    def status(self) -> str | None:
        return self.recorder.status

    # -- the result ----------------------------------------------------------------------------------

    def result(
        self,
        outcome: str,
        *,
        plan: Plan,
        commit: str | None,
        branch: str | None = None,
        run_id: str | None = None,
    ) -> SeedResult:
        """This seed's line of the results file, measured from its trace."""
        return SeedResult(
            test=self.test,
            seed=self.seed,
            commit=commit,
            outcome=outcome,
            metrics=compute_file(self.trace),
            plan=plan,
            trace=self.trace_name,
            branch=branch,
            run_id=run_id,
            finished_at=now(),
        )
