"""One seed's run of a marathon test: the state machine behind the `agentevals_marathon` fixture, with no
pytest in it. It follows the one run lifecycle (`lifecycle.py`):

```python
spec = RunSpec("t.py::test_x", seed=3, task={"tasks": 8}, trace=path, workspace=folder, guards=guards,
               runner=lambda run: my_agent(run.task["tasks"], seed=run.seed))
run = SeedRun(spec)
run.start()                     # the recorder: this seed's trace, under its budgets and watchdog
try:
    run.run_agent()             # the runner on the seeded task; a guard's stop is the run's status
finally:
    run.close(failed=False)     # the trace's run_end
result = run.result("passed", plan=plan, commit=...)  # its metrics, as a line of the results file
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
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..errors import AgentEvalsError, CheckpointError, RunStopped
from ..lifecycle import RunSpec
from ..metrics import compute_file
from ..recording import Recorder
from ..resume import ResumePoint, resume_point_from_trace
from .results import Plan, SeedResult, now

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
    """One seed of a marathon test (see the module docstring). From `spec`: the test it belongs to
    (`name`), its `seed`, the `task` (the seed is added to a dict task), `trace`, `workspace`, the
    `guards` (its budgets, watchdog and loop guard), `contract`, `settings` and `runner(run)`, which
    starts the agent. `trace_name` is the trace relative to the results file's folder; a run ending
    with a status in `fail_on` fails; a crash restarts from the last checkpoint up to `max_restarts`
    times, through `resumer`; `verify`, a check command, runs in the workspace after the agent, its
    result the run's verification event."""

    layer = "marathon"

    def __init__(
        self,
        spec: RunSpec,
        *,
        trace_name: str | None = None,
        fail_on: Sequence[str] = (),
        max_restarts: int = 0,
        resumer: Resumer | None = None,
        verify: Sequence[str] | None = None,
    ) -> None:
        if spec.seed is None or spec.trace is None or spec.workspace is None:
            raise AgentEvalsError(
                f"{spec.name}: a marathon seed needs a seed, a trace and a workspace (RunSpec)"
            )
        self.test = spec.name
        self.seed = spec.seed
        self.spec = replace(spec, task=seeded_task(spec.task, spec.seed))
        self.task = self.spec.task
        self.trace = Path(spec.trace)
        self.trace_name = trace_name  # the trace, relative to the results file's folder
        self.workspace = Path(spec.workspace)
        self.fail_on = tuple(fail_on)
        self.max_restarts = max_restarts
        self.resumer = resumer
        self.verify = tuple(verify) if verify is not None else None
        self.restarts = 0
        self.checkpoint: ResumePoint | None = None  # what the last restart booted from
        self.refused = False  # a guard refused the run before it began (the day's budget was spent)
        self.result_of_agent: Any = None
        self.crash: BaseException | None = None  # what ended the run when the agent raised
        self.recorder = Recorder.for_spec(self.spec)

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
        (`RunStopped`) ends the run with the guard's status and returns None, and so does any exception
        the agent raises once a guard stopped the run (it is kept as a note); any other exception is
        the run's crash, raised."""
        if self.refused:
            self._check_status()
            return None
        attempt: Callable[[], Any] = self._start_agent
        while True:
            try:
                self.result_of_agent = attempt()
                break
            except RunStopped:
                break  # the trace's guard event and run_end say why
            except Exception as exc:
                if isinstance(self.recorder.guarding.halt, RunStopped):
                    self._after_stop(exc)  # the stop's consequence (a client's error about the final answer)
                    break
                if isinstance(exc, AgentEvalsError) or self.restarts >= self.max_restarts:
                    self.crash = exc
                    raise
                attempt = self._restart(exc)
            except BaseException as exc:
                self.crash = exc
                raise
        if self.verify is not None:  # the work is judged where it was done, after the agent (or its stop)
            self.recorder.verify(self.verify, self.workspace)
        self._check_status()
        return self.result_of_agent

    def _after_stop(self, error: Exception) -> None:
        """The agent raised after a guard stopped the run: a client process that met the stop as the
        endpoint's final answer, an SDK's own error about it. The stop is the run's end, as if the hook
        had let `RunStopped` through; what the agent raised is kept as a note, not as a crash."""
        reason = f"{type(error).__name__}: {error}"
        data = {"reason": reason, "by": "marathon"}
        self.recorder.emit("note", message="the agent raised after the guard's stop", data=data)

    def _start_agent(self) -> Any:
        result = self.spec.runner(self) if self.spec.runner is not None else None
        if result is None:
            raise NoRunner(
                f"{self.test} seed {self.seed}: no pytest_agentevals_run_agent hook started the agent on the "
                f"task {self.task!r}: add `def pytest_agentevals_run_agent(run): ...` to a conftest.py that, "
                'when run.layer == "marathon", starts your agent with run.seed and returns its result (see '
                "docs/marathon.md)"
            )
        return result

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
            return self._start_agent
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

    def finish(self, error: BaseException | None) -> None:
        """The agent's part is over: a crash was kept by `run_agent`; `fail_on` was checked there."""

    def section(self) -> str | None:
        return None

    def close(self, failed: bool = False) -> None:
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
