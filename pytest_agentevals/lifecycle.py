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

Runner = Callable[[Any], Any]  # starts the agent on a run: runner(run) -> its result; None: not mine


@dataclass(frozen=True)
class RunSpec:
    """What one run of the agent is, whichever layer runs it.

    - `name`: what messages call it (a test id, a command line);
    - `agent`: the agent's name in its trace; `task` and `seed`: what it is started on;
    - `trace`: where its trace is written (None: the layer's own choice, or no trace of its own);
    - `workspace`: the folder the agent works in (None: the harness chooses);
    - `guards`: the budgets, watchdog and loop guard every model request passes;
    - `contract`: what the harness declares about its environment (`pytest_agentevals_contract`);
    - `settings`: the run's settings (a marker's overrides applied); None: the engines' defaults;
    - `runner`: what `run_agent()` starts the agent with (the layer's hook, in pytest).
    """

    name: str
    agent: str = "agent"
    task: Any = None
    seed: int | None = None
    trace: Path | None = None
    workspace: Path | None = None
    guards: tuple[Guard, ...] = ()
    contract: Mapping[str, Any] = field(default_factory=dict)
    settings: Settings | None = None
    runner: Runner | None = field(default=None, compare=False)


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
