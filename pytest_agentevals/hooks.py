"""Every hook the plugin adds, in one module: what each asks, who calls it, what an answer means.

Implement them in a `conftest.py` (or a plugin). In every hook an answer of None means "not mine":
the next implementation is asked, and when none answers, the layer says so, naming the hook.

- `pytest_agentevals_run_agent(run)`: asked by the replay and marathon layers for each run; answers
  the agent's result.
- `pytest_agentevals_resume_agent(checkpoint)`: asked by the resume layer, and by a marathon
  restarting a crashed seed; answers the agent's result.
- `pytest_agentevals_contract()`: asked by every recording and every resume; answers a dict of the
  values the harness declares.
- `pytest_agentevals_watchdog(run, reason)`: asked by the watchdog when verified progress stops;
  answers True to go on.
- `pytest_agentevals_verdicts(config)`: asked by the report (the pyramid table, the run console)
  at the end of the session; answered by the marathon layer with its verdicts over seeds.

`run_agent`'s one argument, an `AgentRun`, says which layer asks and for what: its `layer`
("record", "replay" or "marathon"), `task`, `seed`, `cassette` and `workspace`, and the layer's own
run (`run.layer_run`, also as `run.replay` or `run.marathon`), which follows the one run lifecycle
(`lifecycle.py`). The spellings of 0.1, `pytest_agentevals_run_agent(task, replay)` and `(task,
marathon)`, still work in this release, with a deprecation warning naming this one; so does
`run.session` (now `run.layer_run`).

The helpers below the hookspecs are how the faces ask them (`ask_run_agent`, `ask_resume_agent`,
`declared_contract`, `watchdog_ask`, `verdicts_of`), so every face asks a hook the same way.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pluggy

from .errors import AgentEvalsDeprecationWarning, AgentEvalsError
from .lifecycle import RunLifecycle

# pytest's own marker (`pytest.hookspec`), taken from pluggy so that importing the public API
# (which names AgentRun) does not import pytest.
hookspec = pluggy.HookspecMarker("pytest")

# The argument names of run_agent's 0.1 spellings; an implementation asking for one is warned once.
DEPRECATED_RUN_AGENT_ARGS = ("task", "replay", "marathon")
RUN_AGENT_LAYERS = ("record", "replay", "marathon")


@dataclass(frozen=True)
class AgentRun:
    """What `pytest_agentevals_run_agent(run)` is asked to run: one layer's one run of the agent.

    - `layer`: "record" (the `agentevals_recorder` fixture's `run_agent()`), "replay" (a recorded run
      re-executed offline) or "marathon" (one seed, live);
    - `task`: the recorded `run_start.task` (replay) or the marker's `task=` with the seed under
      "seed" (marathon);
    - `seed`: the marathon's seed, or the recorded run's seed in a replay (None if it had none);
    - `cassette`: the replayed trace (None elsewhere); `workspace`: the run's workspace folder (a
      seed's fresh one; None where the harness chooses its own);
    - `layer_run`: the layer's own run — a `Recorder`, a `ReplayRun` or a marathon `SeedRun` — also
      as `replay` / `marathon` (None for the other layers).
    """

    layer: str
    task: Any
    layer_run: RunLifecycle
    seed: int | None = None
    cassette: Path | None = None
    workspace: Path | None = None

    @classmethod
    def of(cls, layer: str, run: Any) -> AgentRun:
        """What a layer's run asks its agent: a recorder's task; a replay's recorded task, seed and
        cassette; a marathon seed's seeded task, seed and fresh workspace."""
        if layer == "replay":
            seed = run.cassette.run_start.get("seed") if run.path is not None else None
            seeded = seed if isinstance(seed, int) and not isinstance(seed, bool) else None
            return cls("replay", run.task, run, seed=seeded, cassette=run.path)
        if layer == "marathon":
            return cls("marathon", run.task, run, seed=run.seed, workspace=run.workspace)
        return cls(layer, run.spec.task, run)

    @property
    def replay(self) -> RunLifecycle | None:
        """The `ReplayRun` when the replay layer asks, else None."""
        return self.layer_run if self.layer == "replay" else None

    @property
    def marathon(self) -> RunLifecycle | None:
        """The marathon's `SeedRun` when the marathon layer asks, else None."""
        return self.layer_run if self.layer == "marathon" else None

    @property
    def session(self) -> RunLifecycle:
        """The 0.x name of `layer_run`."""
        warnings.warn(
            AgentEvalsDeprecationWarning(
                "AgentRun.session is the 0.x name of AgentRun.layer_run (it goes in the next release)"
            ),
            stacklevel=2,
        )
        return self.layer_run


@hookspec
def pytest_agentevals_run_agent(run: AgentRun, task: Any, replay: Any, marathon: Any) -> Any:
    """Start the user's agent on one run and return its result (any value but None).

    Asked by `agentevals_replay.run_agent()` (in auto-collected cassette tests and in the tests
    `agentevals promote` writes) and by `agentevals_marathon.run_agent()` for each seed of a marathon
    test; only the implementations of the conftest.py files that apply to the test are asked.
    `run` (an `AgentRun`) says which layer asks, for which task, seed and cassette. Return None from
    an implementation that does not handle this run (another layer's, another agent's task).

    `task`, `replay` and `marathon` are the 0.1 spellings (`run.task`, `run.replay`,
    `run.marathon`): accepted in this release with an `AgentEvalsDeprecationWarning`.
    """


@hookspec(firstresult=True)
def pytest_agentevals_resume_agent(checkpoint: Any) -> Any:
    """Start the user's agent from a checkpoint and run it: the next leg of a resumed run.

    `checkpoint` has `name` (the fixture's, or None for a live run's own checkpoint), `state` (the
    agent's state, JSON), `workspace` (the restored workspace folder), `task` and `seed` (the source
    run's), `step`, `lineage` and `events` (the source trace up to the checkpoint). Called by
    `agentevals_resume.run_agent()`, and by the marathon layer when it restarts a crashed seed.
    Return the agent's result (any value but None); return None from an implementation that does not
    handle this checkpoint's agent, so another one may. When every implementation returns None the
    leg fails, saying so.
    """


@hookspec
def pytest_agentevals_contract() -> dict[str, Any] | None:
    """What the harness declares about its environment, for checkpoint contracts: a dict of raw
    JSON values by key (`{"db.schema": 42, "fixtures.users": "sha256:..."}`). Every
    implementation's dict is merged. A resumed checkpoint compares the values it recorded with these
    before anything runs; a run recorded by the plugin stores them in `run_start.contract`.
    """


@hookspec(firstresult=True)
def pytest_agentevals_watchdog(run: Any, reason: str) -> bool | None:
    """The watchdog found no verified progress for too long: go on with the run?

    Called after the watchdog wrote its `watchdog` event (action `ask`) and fsynced the trace, before
    the held model request leaves. `run` is the test's `Recorder` (its `path`, `steps`, `totals`,
    `last_checkpoint`); `reason` says how long the run went without progress. Return True to grant
    the run another window of calls; False or None (no implementation) stops it as `stalled`. An
    exception here ends the run as `error`, with its traceback in the trace.
    """
    return None


@hookspec
def pytest_agentevals_verdicts(config: Any) -> Sequence[Any] | None:
    """The session's verdicts over repeated runs, as rows for what people read: a sequence of
    `pytest_agentevals.marathon.VerdictRow` (one per bar a test set), or None for none.

    Implemented by the marathon layer's face, which judges its tests' seeds when the session
    finishes; asked by the report's faces — the pyramid table (a verdict below its bar counts as a
    failure of the marathon layer, an inconclusive one is said) and the run console's marathon
    section — after that. Every implementation's rows are shown, in the order pluggy returns them.
    """


def verdicts_of(config: Any) -> list[Any]:
    """Every `pytest_agentevals_verdicts` answer of the session, as one list of rows."""
    answers = config.hook.pytest_agentevals_verdicts(config=config)
    return [row for answer in answers if answer for row in answer]


def declared_contract(hooks: Any) -> dict[str, Any]:
    """What the harness declares now for a test: every `pytest_agentevals_contract()` dict of the
    plugins and of the conftest.py files that apply to the test (`hooks`, its `item.ihook`), merged."""
    declared: dict[str, Any] = {}
    for part in reversed(hooks.pytest_agentevals_contract()):
        if part is None:
            continue
        if not isinstance(part, dict):
            raise AgentEvalsError(
                f"a pytest_agentevals_contract() hook returned {type(part).__name__}; return a dict of "
                "JSON values by key (or None)"
            )
        declared.update(part)
    return declared


def watchdog_ask(hooks: Any) -> Callable[[Any, str], Any]:
    """How a test's watchdog asks whether its run may go on: the `pytest_agentevals_watchdog` hooks of
    the conftest.py files that apply to the test (`hooks`, its `item.ihook`)."""

    def ask(run: Any, reason: str) -> Any:
        return hooks.pytest_agentevals_watchdog(run=run, reason=reason)

    return ask


def ask_resume_agent(hooks: Any, checkpoint: Any, label: str) -> Any:
    """Ask the `pytest_agentevals_resume_agent` hooks of a test (`hooks`, its `item.ihook`) to resume
    `checkpoint`: the first answer, or None when there is no implementation. When every
    implementation answered None, the error says so, naming them (`label` names the run)."""
    __tracebackhide__ = True
    result = hooks.pytest_agentevals_resume_agent(checkpoint=checkpoint)
    takers = implementations(hooks.pytest_agentevals_resume_agent)
    if result is None and takers:
        raise AgentEvalsError(
            f"{label}: every pytest_agentevals_resume_agent hook ({', '.join(takers)}) returned None for "
            f"the checkpoint {getattr(checkpoint, 'name', None)!r}: a hook that starts the agent returns "
            "its result (any value but None); None means the checkpoint's agent is not that hook's"
        )
    return result


def ask_run_agent(hook: Any, run: AgentRun) -> Any:
    """Ask the run_agent implementations `hook` holds (a test's `item.ihook.pytest_agentevals_run_agent`)
    about `run`: the first answer that is not None, or None when every one declined."""
    warn_deprecated_spellings(hook)
    results = hook(
        run=run,
        task=run.task,
        replay=run.replay,
        marathon=run.marathon,
    )
    return next((result for result in results if result is not None), None)


def warn_deprecated_spellings(hook: Any) -> None:
    """One warning per implementation of run_agent that still takes a 0.1 argument."""
    for impl in _impls(hook):
        old = [name for name in impl.argnames if name in DEPRECATED_RUN_AGENT_ARGS]
        if old:
            where = getattr(impl.plugin, "__file__", None) or impl.plugin_name
            warnings.warn(
                AgentEvalsDeprecationWarning(
                    f"{where}: pytest_agentevals_run_agent({', '.join(impl.argnames)}) is the 0.1 "
                    "spelling; write `def pytest_agentevals_run_agent(run):` and read run.task, run.layer, "
                    "run.replay or run.marathon (the old arguments go in the next release)"
                ),
                stacklevel=1,
            )


def implementations(hook: Any) -> list[str]:
    """Where the implementations of a hook live (conftest files or plugin names), for messages."""
    return [str(getattr(impl.plugin, "__file__", None) or impl.plugin_name) for impl in _impls(hook)]


def _impls(hook: Any) -> Sequence[Any]:
    getter = getattr(hook, "get_hookimpls", None)
    return getter() if getter is not None else []


# The hookspecs (implemented by name in a conftest.py) and their argument: the helpers above are how
# this package's faces ask them, not API (docs/api.md).
__all__ = [
    "AgentRun",
    "pytest_agentevals_contract",
    "pytest_agentevals_resume_agent",
    "pytest_agentevals_run_agent",
    "pytest_agentevals_verdicts",
    "pytest_agentevals_watchdog",
]
