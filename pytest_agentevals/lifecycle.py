"""One run of the agent, as every layer runs one: a `RunSpec` says what the run is, and the layer's
run object goes through one lifecycle — the same from pytest, from the command line and from plain
Python:

```python
run = ReplayRun(spec, cassette=path)      # or Recorder.for_spec(spec), ResumeRun(spec, ...), SeedRun(spec)
run.start()                               # recording, replaying or booted: before the agent's first step
try:
    run.run_agent()                       # spec.runner(run), or the test's own code
except BaseException as error:
    run.finish(error)                     # the run is judged: its own failure wins over what it caused
    raise
else:
    run.finish(None)                      # a divergence, a swallowed stop or a drift raises here
finally:
    run.close()                           # everything released and its trace ended, whatever happened
```

The four implementations are the recorder (`recording.Recorder`, the `agentevals_recorder` fixture),
a replay (`replay.ReplayRun`), a resumed leg (`resume.ResumeRun`) and a marathon seed
(`marathon.SeedRun`). Each fixture that runs an agent makes its spec from its test
(`runs.spec_for`), opens the run (`runs.opened`), has it finished when the test function returns and
closed at teardown; the pytest side is `runs.py`, one for every layer.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from .guards.protocol import Guard
from .settings import Settings
from .settings.budgets import Budget

Ask = Callable[[Any, str], Any]  # the watchdog's question: (run, reason) -> go on?
Runner = Callable[[Any], Any]  # starts the agent on a run: runner(run) -> its result; None: not mine


@dataclass(frozen=True)
class RunSpec:
    """What one run of the agent is, whichever layer runs it.

    - `name`: what messages call it (a test id, a command line);
    - `agent`: the agent's name in its trace; `task` and `seed`: what it is started on;
    - `trace`: where its trace is written (None: the layer's own choice, or no trace of its own);
    - `workspace`: the folder the agent works in (None: the harness chooses);
    - `budget`: the limits its guards enforce (per call, per run, per day; the watchdog and the loop
      guard), and `watchdog`: what the watchdog asks when progress stops (the test's hook, in pytest);
    - `guards`: guards of its own beyond the budget's (a `Guard` subclass of yours);
    - `contract`: what the harness declares about its environment (`pytest_agentevals_contract`);
    - `settings`: the run's settings (a marker's overrides applied); None: the engines' defaults;
    - `runner`: what `run_agent()` starts the agent with (the layer's hook, in pytest).

    A spec is a description: each run made from it gets guards of its own (`make_guards`), so one spec
    may start several runs (a re-drive, a retry) without one spending another's budget.
    """

    name: str
    agent: str = "agent"
    task: Any = None
    seed: int | None = None
    trace: Path | None = None
    workspace: Path | None = None
    budget: Budget = field(default_factory=Budget)
    watchdog: Ask | None = field(default=None, compare=False)
    guards: tuple[Guard, ...] = ()
    contract: Mapping[str, Any] = field(default_factory=dict)
    settings: Settings | None = None
    runner: Runner | None = field(default=None, compare=False)

    def make_guards(self) -> list[Guard]:
        """Fresh guards for one run: the budget's (its day ledger the settings' `ledger`), then the
        spec's own."""
        from .guards.build import guards_for  # the guards' modules load with the first run

        settings = self.settings
        built = guards_for(
            self.budget,
            ledger=settings.ledger if settings is not None else None,
            unreachable=settings.ledger_unreachable if settings is not None else "refuse",
            ask=self.watchdog,
        )
        return [*built, *self.guards]


class RunLifecycle(Protocol):
    """What every layer's run does, in this order (see the module docstring)."""

    layer: str  # "record", "replay", "resume" or "marathon": what `AgentRun.layer` says
    spec: RunSpec

    def start(self) -> object:
        """Begin: the recording, the replay or the resumed leg is in place before the agent runs."""
        ...

    def run_agent(self) -> Any:
        """Start the agent on this run through `spec.runner` and return its result."""
        ...

    def finish(self, error: BaseException | None) -> None:
        """The agent's part is over (`error`: what it raised, None when it returned): raise the
        run's own failure — a divergence, a guard's stop the harness swallowed, a drift."""
        ...

    def close(self, failed: bool = False) -> None:
        """Release everything and end the trace, whatever happened before (idempotent); `failed`:
        the caller judged the run failed (a test that failed), for a trace whose status is unset."""
        ...

    def section(self) -> str | None:
        """What a test's report shows of this run (its own section), or None."""
        ...


__all__ = ["RunLifecycle", "RunSpec", "Runner"]
