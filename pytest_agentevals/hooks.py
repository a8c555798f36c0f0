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

`run_agent`'s one argument, an `AgentRun`, says which layer asks and for what: its `layer`
("replay" or "marathon"), `task`, `seed`, `cassette` and `workspace`, and the layer's own session
(`run.replay` or `run.marathon`). The spellings of 0.1, `pytest_agentevals_run_agent(task, replay)`
and `(task, marathon)`, still work in this release, with a deprecation warning naming this one.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pluggy

# pytest's own marker (`pytest.hookspec`), taken from pluggy so that importing the public API
# (which names AgentRun) does not import pytest.
hookspec = pluggy.HookspecMarker("pytest")

# The argument names of run_agent's 0.1 spellings; an implementation asking for one is warned once.
DEPRECATED_RUN_AGENT_ARGS = ("task", "replay", "marathon")
RUN_AGENT_LAYERS = ("replay", "marathon")


class AgentEvalsDeprecationWarning(DeprecationWarning):
    """A spelling that works in this release and not in the next; the message names the new one."""


@dataclass(frozen=True)
class AgentRun:
    """What `pytest_agentevals_run_agent(run)` is asked to run: one layer's one run of the agent.

    - `layer`: "replay" (a recorded run re-executed offline) or "marathon" (one seed, live);
    - `task`: the recorded `run_start.task` (replay) or the marker's `task=` with the seed under
      "seed" (marathon);
    - `seed`: the marathon's seed, or the recorded run's seed in a replay (None if it had none);
    - `cassette`: the replayed trace (None in a marathon); `workspace`: the seed's workspace folder
      (None in a replay, whose harness chooses its own);
    - `session`: the layer's own object — a `ReplaySession` or a marathon `SeedRun` — also as
      `replay` / `marathon` (None for the other layer).
    """

    layer: str
    task: Any
    session: Any
    seed: int | None = None
    cassette: Path | None = None
    workspace: Path | None = None

    @property
    def replay(self) -> Any:
        """The `ReplaySession` when the replay layer asks, else None."""
        return self.session if self.layer == "replay" else None

    @property
    def marathon(self) -> Any:
        """The marathon's `SeedRun` when the marathon layer asks, else None."""
        return self.session if self.layer == "marathon" else None


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
    `agentevals_checkpoint.run_agent()`, and by the marathon layer when it restarts a crashed seed.
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


def ask_run_agent(hook: Any, run: AgentRun) -> Any:
    """Ask the run_agent implementations `hook` holds (a test's `item.ihook.pytest_agentevals_run_agent`)
    about `run`: the first answer that is not None, or None when every one declined."""
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
