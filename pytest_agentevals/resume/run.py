"""One resumed leg: the state machine behind the `agentevals_resume` fixture, with no pytest in it. It
follows the one run lifecycle (`lifecycle.py`):

```python
spec = RunSpec("leg", trace=tmp / "leg.trace.jsonl", workspace=tmp / "workspace", runner=start_my_agent)
leg = ResumeRun(spec, fixture, until=Condition.parse("until", "progress>=0.6"))
leg.start()                    # contract, workspace, state; the leg's recorder starts
try:
    result = leg.run_agent()   # runner(leg); the leg ends; leg.phase is its metrics
finally:
    leg.close()
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
normal end. Whatever the harness raises is raised, after the trace is written — but once a guard
stopped the leg, what the harness raises is taken as that stop's consequence (a client's own error
about the final 500): the stop is raised (the harness's error its cause), or for `until` the leg
ends normally.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..contract import Drift, Tolerance, tolerances
from ..errors import AgentEvalsDeprecationWarning, AgentEvalsError, RunStopped
from ..fileio import make_folders
from ..guards.protocol import Guard
from ..lifecycle import Runner, RunSpec
from ..recording import Recorder
from ..replay import Replayer
from ..settings import Settings
from ..settings.budgets import Budget
from ..trace.events import Event
from ..trace.messages import conversation_at
from ..trace.openai_chat import to_openai
from ..trace.reader import TornTraceWarning, TraceReader
from .contract_guard import ContractGuard
from .fixture import Fixture
from .phase import Phase
from .store import open_fixture
from .until import Condition, Until

MODES = ("live", "replayed")


class ResumeRun:
    """One leg resumed from a checkpoint fixture. Has what a `ResumePoint` has (`name`, `state`,
    `workspace`, `task`, `seed`, `step`, `lineage`, `events`), so the resume hook takes either.

    `fixture` is a checkpoint fixture, or the name of one under the settings' `fixtures_dir`. From
    `spec`: `trace` (the leg's trace), `workspace` (where the fixture's workspace is restored),
    `budget` and `guards` (the leg's; a `replayed` leg's calls cost nothing, so no day budget holds
    it), `contract` (what the harness declares now), `runner` (the resume hook), `name` (what
    messages call the leg) and `settings` (the contract policy and tolerances, unless `policy` and
    `tolerate` are given). The task, seed and agent are the fixture's.
    """

    layer = "resume"

    def __init__(
        self,
        spec: RunSpec,
        fixture: Fixture | str,
        *,
        mode: str = "live",
        until: Condition | None = None,
        policy: str | None = None,
        tolerate: Sequence[Tolerance] | None = None,
    ) -> None:
        if mode not in MODES:
            raise ValueError(f"resume mode {mode!r} is not one of {', '.join(MODES)}")
        if spec.trace is None or spec.workspace is None:
            raise AgentEvalsError(f"{spec.name}: a resumed leg needs a trace and a workspace (RunSpec)")
        self.workspace, self.trace = Path(spec.workspace), Path(spec.trace)
        settings = spec.settings
        if isinstance(fixture, str) and settings is None:
            raise AgentEvalsError(f"{spec.name}: name a fixture only with settings (its fixtures_dir)")
        if mode == "replayed":
            spec = replace(spec, budget=replace(spec.budget, max_daily_cost_usd=None))
        self.spec = spec
        self._fixture = fixture  # a name is opened (read and checked) when the leg starts
        self.mode = mode
        self.until = until
        self.declared = dict(spec.contract)
        self.policy = policy if policy is not None else (settings.contract_policy if settings else "fail")
        if tolerate is None:
            tolerate = tolerances("contract_tolerate", settings.contract_tolerate) if settings else ()
        self.tolerate = tuple(tolerate)
        self.runner = spec.runner
        self.label = spec.name
        self._settings = settings
        self._packages = settings.contract_packages if settings is not None else ("anthropic",)
        self._contract_guard: ContractGuard | None = None
        self._until: Until | None = None
        self.state: dict[str, Any] = {}
        self.drifts: list[Drift] = []
        self.recorder: Recorder | None = None
        self.replayer: Replayer | None = None
        self._replay_lines: list[str] = []  # a replayed leg's replay summary and folds, for its section
        self.result: Any = None
        self._phase: Phase | None = None
        self._events: list[Event] | None = None
        self._ran = False
        self._finished = False
        self._booted = False

    # -- what a ResumePoint has -------------------------------------------------------------------

    @property
    def fixture(self) -> Fixture:
        """The checkpoint fixture the leg resumes (opened by `start()` when it was given by name)."""
        if isinstance(self._fixture, str):
            raise AgentEvalsError(
                f"{self.label}: the fixture {self._fixture!r} is opened when the leg starts"
            )
        return self._fixture

    @property
    def name(self) -> str:
        return self._fixture if isinstance(self._fixture, str) else self._fixture.name

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

    def conversation(self) -> tuple[Any, list[dict[str, Any]]]:
        """`(system, messages)` at the checkpoint, in the Anthropic shape (as `ResumePoint.conversation`)."""
        return conversation_at(self.events)

    def openai_messages(self) -> list[dict[str, Any]]:
        """The conversation at the checkpoint in the OpenAI / litellm chat shape (`trace.to_openai`)."""
        system, messages = self.conversation()
        return to_openai(messages, system)

    # -- boot -------------------------------------------------------------------------------------

    def start(self) -> ResumeRun:
        """Boot: contract, workspace, state, then the leg's recorder (and replay): see the module
        docstring. Booting twice is an error."""
        if self._booted:
            raise AgentEvalsError(f"{self.label}: this leg was booted already (one leg per run)")
        self._booted = True
        if isinstance(self._fixture, str):
            assert self._settings is not None
            self._fixture = open_fixture(self._fixture, self._settings.fixtures_dir, self._settings.rootdir)
        fixture = self._fixture
        self._contract_guard = ContractGuard(
            fixture.contract, self.policy, fixture.where, fixture.name, self.tolerate
        )
        self._until = Until(self.until, fixture.progress) if self.until is not None else None
        own: list[Guard] = [self._contract_guard, *([self._until] if self._until else [])]
        self.drifts = self.fixture.check_contract(self.declared, policy=self.policy, tolerate=self.tolerate)
        self.fixture.restore(self.workspace)
        self.state = self.fixture.state()
        # Never made through a committed link (`.agentevals` pointing outside the tree).
        make_folders(self.trace.parent, self._settings.rootdir if self._settings is not None else None)
        self.trace.unlink(missing_ok=True)
        seed = self.seed if isinstance(self.seed, int) and not isinstance(self.seed, bool) else None
        leg = replace(
            self.spec,
            agent=self.fixture.agent or "agent",
            seed=seed,
            task=self.task,
            budget=Budget(),  # the leg's guards, made here: the contract's and until's first
            guards=(*own, *self.spec.make_guards()),
        )
        self.recorder = Recorder.for_spec(
            leg,
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
                settings = self._settings
                self.replayer = Replayer(
                    self.fixture.continuation(),
                    mode="sequential",
                    packages=self._packages,
                    check_contract=False,
                    before_serve=self._guarded,
                    # the same folds as a replay: a replayed leg compares requests as a replay does
                    normalize=settings.replay_normalize if settings is not None else (),
                    profile=settings.replay_profile if settings is not None else "auto",
                )
                self.replayer.start()
            except BaseException:
                self.close()
                raise
        return self

    def boot(self) -> ResumeRun:
        """The 0.x name of `start()`."""
        warnings.warn(
            AgentEvalsDeprecationWarning(
                "ResumeRun.boot() is the 0.x name of start() (the run lifecycle's); it goes in the next "
                "release"
            ),
            stacklevel=2,
        )
        return self.start()

    def _guarded(self, request: Any) -> None:
        """A replayed request passes the leg's guards first, as a live one does (until, the budgets)."""
        recorder = self.recorder
        if recorder is not None and recorder.guards:
            recorder.guarding.before_call(request)

    # -- the leg ----------------------------------------------------------------------------------

    def run_agent(self) -> Any:
        """Start the agent from the checkpoint through the runner (the resume hook), and end the leg.
        Returns the agent's result; `phase` holds the leg's metrics afterwards."""
        __tracebackhide__ = True  # a harness's own error reads from the test to the harness
        if self.recorder is None:
            raise AgentEvalsError(f"{self.label}: start() the leg (boot the checkpoint) before run_agent()")
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
            stopped = self._stop_behind(exc)
            if not self._is_until_stop(stopped):
                error = stopped
        self.finish(error)
        if error is not None:
            raise error
        return self.result

    def _stop_behind(self, error: BaseException) -> BaseException:
        """What the leg raises for `error`, raised by the hook: once a guard stopped the leg (until, a
        budget, a contract drift at the first request), any exception the hook raises is that stop's
        consequence (a client process answered the final 500 and an SDK's own error about it, say),
        so the stop is raised instead, `error` its cause. Known by the leg's recorder, never by the
        error's text; an interrupt (not an `Exception`) stays what it is."""
        recorder = self.recorder
        halt = recorder.guarding.halt if recorder is not None else None
        if halt is None or not isinstance(error, Exception) or isinstance(error, RunStopped | type(halt)):
            return error
        if recorder is not None:  # kept in the leg's trace too: an until stop raises nothing
            reason = f"{type(error).__name__}: {error}"
            recorder.emit("note", message="the hook raised after the guard's stop", data={"reason": reason})
        halt.__cause__ = error
        return halt.with_traceback(None)  # raised again here, not with the frames it was first raised in

    def _is_until_stop(self, error: BaseException) -> bool:
        return isinstance(error, RunStopped) and error.guard == Until.name and self._until is not None

    def finish(self, error: BaseException | None) -> None:
        """End the leg (`error`: what the harness raised): the replay, the recorder, then `phase`.
        Raises the replay's failure, a contract drift found at the first request, or a guard's stop
        the harness swallowed — after the trace is written. Once only: `run_agent()` ends its leg
        here, and a leg that never ran is ended by `close()`."""
        if not self._ran or self._finished:
            return
        self._finished = True
        raised: BaseException | None = None
        replayer, self.replayer = self.replayer, None
        if replayer is not None and replayer.running:
            try:
                replayer.stop(error)
            except AgentEvalsError as failure:
                raised = failure
        if replayer is not None:  # what the replay served, where it differed, what it folded
            self._replay_lines = [replayer.report.summary(), *replayer.report.fold_lines()]
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
        if self._contract_guard is not None and self._contract_guard.drifts and self.policy == "warn":
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

    def section(self) -> str | None:
        """What the test's report shows: the fixture resumed, any contract drift, and the leg's
        metrics (or where its trace is, when it did not run); None before the fixture was opened."""
        if isinstance(self._fixture, str):
            return None
        from ..contract import table
        from ..trace.terminal import safe

        fixture = self.fixture
        lines = [
            f"resumed {fixture.name} (sha256 {fixture.sha256[:12]}, step {fixture.step} of run "
            f"{self.lineage.get('run_id')}, progress {self.progress:.3g}) in {self.mode} mode"
        ]
        if self.drifts:
            lines.append("contract drift:\n" + table(self.drifts))
        lines.extend(self._replay_lines)
        lines.append(self.phase.summary() if self.ran else f"the leg did not run; trace {self.trace}")
        return safe("\n".join(lines))  # names and contract values come from a fixture

    def close(self, failed: bool = False) -> None:
        """Stop whatever still runs (a test that never called run_agent(), or one that errored)."""
        replayer, self.replayer = self.replayer, None
        if replayer is not None and replayer.running:
            with contextlib.suppress(AgentEvalsError):
                replayer.stop()
        recorder = self.recorder
        if recorder is not None and self._phase is None:
            with contextlib.suppress(AgentEvalsError):
                recorder.stop(status="interrupted" if self._ran else None)


def resume_session(
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
) -> ResumeRun:
    """`ResumeSession(...)`, the 0.x spelling of a leg: a `ResumeRun` made from its old arguments."""
    spec = RunSpec(
        label,
        trace=Path(trace),
        workspace=Path(workspace),
        guards=tuple(guards),
        contract=dict(declared or {}),
        settings=settings,
        runner=runner,
    )
    return ResumeRun(spec, fixture, mode=mode, until=until, policy=policy, tolerate=tolerate)
