"""One resumed leg: the state machine behind the `agentevals_checkpoint` fixture, with no pytest in it.

```python
session = ResumeSession(fixture, workspace=tmp / "workspace", trace=tmp / "leg.trace.jsonl",
                        until=Condition.parse("until", "progress>=0.6"), runner=start_my_agent)
session.boot()                 # contract, workspace, state; the leg's recorder starts
try:
    result = session.run_agent()   # runner(session); the leg ends; session.phase is its metrics
finally:
    session.close()
```

Boot, in this order, and nothing runs before the first step passed:
1. the contract: Python, packages and what the harness declares now, against the recorded values
   (a drift fails under the `fail` policy with the drift table);
2. the workspace, restored into `workspace` (whole, or nothing);
3. the state, loaded (JSON);
4. a recorder for the leg's trace — its `run_start.resumed_from` names the fixture and its SHA-256 —
   with the guards: the contract guard (the request keys, at the first model request), `until`,
   then the phase's budgets;
5. in `replayed` mode, the replay engine serving the recorded continuation (sequential: a resumed
   harness opens a fresh context, so its requests differ from the recorded run's; the answers are
   served in order and differences reported), the network blocked.

`run_agent()` ends the leg: the recorder stops, `phase` is computed from the leg's trace. A guard's
stop other than `until` is raised even if the harness swallowed it; the until stop is the leg's
normal end. Whatever the harness raises is raised, after the trace is written.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..contract import Drift, Tolerance
from ..errors import AgentEvalsError, RunStopped
from ..fileio import make_folders
from ..guards.protocol import Guard
from ..recording.factory import recorder_for
from ..recording.recorder import Recorder, current_recorder
from ..replay.engine import Replayer
from ..settings import Settings
from ..trace.events import Event
from ..trace.reader import TornTraceWarning, TraceReader
from .contract_guard import ContractGuard
from .fixture import Fixture
from .phase import Phase
from .until import Condition, Until

MODES = ("live", "replayed")
Runner = Callable[["ResumeSession"], Any]  # the agent's result; None when no runner took it


class GuardedReplayer(Replayer):
    """A replay whose requests pass the leg's guards first, as live ones do (until, the budgets)."""

    def _decide(self, vcr_request: Any) -> dict[str, Any] | None:
        recorder = current_recorder()
        if recorder is not None and recorder.guards:
            recorder.guarding.before_call(vcr_request)
        return super()._decide(vcr_request)


class ResumeSession:
    """One leg resumed from a checkpoint fixture. Has what a `ResumePoint` has (`name`, `state`,
    `workspace`, `task`, `seed`, `step`, `lineage`, `events`), so the resume hook takes either."""

    def __init__(
        self,
        fixture: Fixture,
        *,
        workspace: Path,
        trace: Path,
        mode: str = "live",
        until: Condition | None = None,
        guards: Sequence[Guard] = (),
        declared: Mapping[str, Any] | None = None,
        policy: str = "fail",
        tolerate: Sequence[Tolerance] = (),
        runner: Runner | None = None,
        label: str = "the resumed leg",
        settings: Settings | None = None,
    ) -> None:
        if mode not in MODES:
            raise ValueError(f"resume mode {mode!r} is not one of {', '.join(MODES)}")
        self.fixture = fixture
        self.workspace = Path(workspace)
        self.trace = Path(trace)
        self.mode = mode
        self.until = until
        self.declared = dict(declared or {})
        self.policy = policy
        self.tolerate = tuple(tolerate)
        self.runner = runner
        self.label = label
        self._settings = settings
        self._packages = settings.contract_packages if settings is not None else ("anthropic",)
        self._contract_guard = ContractGuard(
            fixture.contract, policy, fixture.where, fixture.name, self.tolerate
        )
        self._until = Until(until, fixture.progress) if until is not None else None
        self._guards: list[Guard] = [self._contract_guard, *([self._until] if self._until else []), *guards]
        self.state: dict[str, Any] = {}
        self.drifts: list[Drift] = []
        self.recorder: Recorder | None = None
        self.replayer: Replayer | None = None
        self.result: Any = None
        self._phase: Phase | None = None
        self._events: list[Event] | None = None
        self._ran = False

    # -- what a ResumePoint has -------------------------------------------------------------------

    @property
    def name(self) -> str:
        return self.fixture.name

    @property
    def task(self) -> Any:
        return self.fixture.task

    @property
    def seed(self) -> Any:
        return self.fixture.seed

    @property
    def step(self) -> int:
        return self.fixture.step

    @property
    def lineage(self) -> dict[str, Any]:
        return self.fixture.lineage

    @property
    def events(self) -> list[Event]:
        """The source run up to and including the checkpoint (read when first asked for)."""
        if self._events is None:
            self._events = self.fixture.events()
        return self._events

    @property
    def progress(self) -> float:
        """The verified progress the source run had made at the checkpoint."""
        return self.fixture.progress

    # -- boot -------------------------------------------------------------------------------------

    def boot(self) -> ResumeSession:
        """Contract, workspace, state, then the leg's recorder (and replay): see the module docstring."""
        self.drifts = self.fixture.check_contract(self.declared, policy=self.policy, tolerate=self.tolerate)
        self.fixture.restore(self.workspace)
        self.state = self.fixture.state()
        # Never made through a committed link (`.agentevals` pointing outside the tree).
        make_folders(self.trace.parent, self._settings.rootdir if self._settings is not None else None)
        self.trace.unlink(missing_ok=True)
        self.recorder = recorder_for(
            self.trace,
            self._settings,
            agent=self.fixture.agent or "agent",
            seed=self.seed if isinstance(self.seed, int) and not isinstance(self.seed, bool) else None,
            task=self.task,
            contract=self.declared,
            guards=self._guards,
            resumed_from={
                "fixture": self.name,
                "sha256": self.fixture.sha256,
                "step": self.step,
                "run_id": self.lineage.get("run_id"),
                "checkpoint": self.fixture.manifest.get("checkpoint"),
                "mode": self.mode,
            },
        )
        self.recorder.start()
        if self.mode == "replayed":
            try:
                self.replayer = GuardedReplayer(
                    self.fixture.continuation(),
                    mode="sequential",
                    packages=self._packages,
                    check_contract=False,
                )
                self.replayer.start()
            except BaseException:
                self.close()
                raise
        return self

    # -- the leg ----------------------------------------------------------------------------------

    def run_agent(self) -> Any:
        """Start the agent from the checkpoint through the runner (the resume hook), and end the leg.
        Returns the agent's result; `phase` holds the leg's metrics afterwards."""
        __tracebackhide__ = True  # a harness's own error reads from the test to the harness
        if self.recorder is None:
            raise AgentEvalsError(f"{self.label}: boot() the checkpoint before run_agent()")
        if self._ran:
            raise AgentEvalsError(
                f"{self.label}: run_agent() already ran this leg (one leg per test; its metrics are in phase)"
            )
        self._ran = True
        error: BaseException | None = None
        try:
            self.result = self.runner(self) if self.runner is not None else None
            if self.result is None:
                raise AgentEvalsError(
                    f"{self.label}: no pytest_agentevals_resume_agent hook took the checkpoint "
                    f"{self.name!r} (its task: {self.task!r}). Add one to a conftest.py that starts your "
                    "agent from `checkpoint.state` in `checkpoint.workspace` and returns its result (see "
                    "docs/resume.md)"
                )
        except BaseException as exc:
            if not self._is_until_stop(exc):
                error = exc
        self.finish(error)
        if error is not None:
            raise error
        return self.result

    def _is_until_stop(self, error: BaseException) -> bool:
        return isinstance(error, RunStopped) and error.guard == Until.name and self._until is not None

    def finish(self, error: BaseException | None) -> None:
        """End the leg (`error`: what the harness raised): the replay, the recorder, then `phase`.
        Raises the replay's failure, a contract drift found at the first request, or a guard's stop
        the harness swallowed — after the trace is written."""
        raised: BaseException | None = None
        replayer, self.replayer = self.replayer, None
        if replayer is not None and replayer.running:
            try:
                replayer.stop(error)
            except AgentEvalsError as failure:
                raised = failure
        recorder = self.recorder
        if recorder is None:
            return
        halt = recorder.guarding.halt
        recorder.stop(error=error)
        self._phase = Phase.of(
            self._read_leg(),
            self.trace,
            self.progress,
            str(self.until) if self.until is not None else None,
            self._until.reached if self._until is not None else False,
        )
        if self._contract_guard.drifts and self.policy == "warn":
            self.drifts = [*self.drifts, *self._contract_guard.drifts]
        swallowed = halt is not None and error is None and not self._is_until_stop(halt)
        if raised is None and swallowed:
            raised = halt  # a stop or a drift the harness swallowed still fails the leg
        if raised is not None and raised is not error:
            raise raised

    def _read_leg(self) -> list[Event]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", TornTraceWarning)
            return list(TraceReader(self.trace, resolve=False))

    @property
    def phase(self) -> Phase:
        """The metrics of the leg just run (after `run_agent()`)."""
        if self._phase is None:
            raise AgentEvalsError(
                f"{self.label}: phase holds the metrics of the leg, which has not run: call run_agent() first"
            )
        return self._phase

    @property
    def ran(self) -> bool:
        return self._phase is not None

    def close(self) -> None:
        """Stop whatever still runs (a test that never called run_agent(), or one that errored)."""
        replayer, self.replayer = self.replayer, None
        if replayer is not None and replayer.running:
            with contextlib.suppress(AgentEvalsError):
                replayer.stop()
        recorder = self.recorder
        if recorder is not None and self._phase is None:
            with contextlib.suppress(AgentEvalsError):
                recorder.stop(status="interrupted" if self._ran else None)
