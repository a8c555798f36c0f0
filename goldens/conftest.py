"""How the example agent (examples/taskrunner) decides at a golden step case.

`agentevals_decide` gets a case and returns the agent's decision there, through the harness's own
code and its public decision seams, under the settings the case's scenario was recorded with
(`examples/taskrunner/scenarios.py`): a model step is `Attempt._call` on the frozen messages (so
today's system prompt, tool schemas and model settings are what is sent: a change to any of them is
a changed request); a compaction is `should_compact`, then `Attempt._compact`; a budget stop is
`over_budget`; the supervisor's call is `should_restart`; the watchdog's is `Watchdog.step`, replayed
over the steps since the last verified task. No rule is copied here: change one in the harness (the
budget, the repeat limit, the compaction mark, the restart limit) and a case sees it.

The model is the simulated one the cases were recorded against (`ScriptedModel`, seed 1). It is only
asked when a request is not recorded and recording is on (`--agentevals-record=new`); otherwise every
model call is answered from goldens/*.decisions.trace.jsonl, offline.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anthropic
import pytest

from examples import notes_decide, notes_policy, notes_run
from examples.taskrunner import prompts, scenarios
from examples.taskrunner.harness import (
    AgentState,
    Attempt,
    BudgetExhausted,
    HarnessConfig,
    Totals,
    WatchdogAbort,
    framework_watchdog,
    over_budget,
    should_compact,
    should_restart,
)
from examples.taskrunner.policy import ScriptedModel
from examples.taskrunner.tasks import make_tasks
from pytest_agentevals.guards import BudgetLeft
from pytest_agentevals.sim import SimServer
from pytest_agentevals.step import Decision, StepCase

SEED = scenarios.SEED  # the seed of the recorded runs (goldens/extract_taskrunner.py)
RESTART = "restarting from the last checkpoint"


@pytest.fixture(scope="session")
def model_url() -> Iterator[str]:
    with SimServer(ScriptedModel(SEED), seed=SEED) as sim:
        yield sim.url


@pytest.fixture(scope="session")
def new_attempt(
    model_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Callable[[HarnessConfig], Attempt]:
    """A fresh attempt of the harness's loop (its own watchdog) under `config`, on the simulated model."""
    client = anthropic.Anthropic(base_url=model_url, api_key="sim", max_retries=0)
    workspace: Path = tmp_path_factory.mktemp("workspace")
    tasks = make_tasks(12, SEED)
    return lambda config: Attempt(client, tasks, workspace, config, Totals(), lambda state: None)


@pytest.fixture(scope="session")
def notes_url() -> Iterator[str]:
    """The simulated model of the framework examples (examples/notes_policy.py): asked only when a
    request is not recorded and recording is on."""
    with SimServer(notes_policy.policy, seed=1) as sim:
        yield sim.url


@pytest.fixture(scope="session")
def agentevals_decide(
    new_attempt: Callable[[HarnessConfig], Attempt], request: pytest.FixtureRequest
) -> Callable[[StepCase], Any]:
    def decide(case: StepCase) -> Any:
        if case.path.stem in notes_decide.SCENARIOS:  # the framework examples: docs/frameworks.md
            if reason := notes_run.missing_extra(case.path.stem.replace("-", "_")):
                pytest.skip(reason)
            return notes_decide.decide(case, request.getfixturevalue("notes_url"))
        config = scenarios.harness_config(case.path.stem)
        if case.kind == "compaction":
            return compact(new_attempt(config), case, config)
        if case.state is not None:
            return harness_decision(config, case.state)
        turn = new_attempt(config)._call(case.messages)  # one model step, as the harness takes it
        return {"content": turn.content, "stop_reason": turn.stop_reason}

    return decide


def compact(attempt: Attempt, case: StepCase, config: HarnessConfig) -> Decision:
    """The harness's compaction, from the conversation it was about to cut — if it compacts there."""
    tokens_before = case.state["tokens_before"] if case.state else 0
    if not should_compact(config, tokens_before):
        return Decision.proceed()  # the harness would go on with the whole context
    *earlier, last = case.messages
    asked = {"type": "text", "text": prompts.COMPACT_REQUEST}
    conversation = [*earlier, {**last, "content": [b for b in last["content"] if b != asked]}]
    state = AgentState()
    attempt._compact(conversation, tokens_before, state)
    return Decision.compaction(state.summary or "")


def harness_decision(config: HarnessConfig, state: dict[str, Any]) -> Decision:
    """The harness's escalation calls on a frozen state: the token budget (stop), the supervisor
    after a budget stop or a watchdog abort (restart, or stop / escalate), and the watchdog."""
    message = state["trigger"]["message"]
    restarts = state["note_counts"].get(RESTART, 0)
    if message == "token budget exhausted":
        reason = over_budget(config, state["tokens_spent"])
        if reason is None:
            return Decision.proceed()
        return Decision.escalate("token_budget_exhausted", action="stop", reason=reason)
    if message == "run ended budget_exhausted":
        reason = over_budget(config, state["tokens_spent"])
        if reason is None or should_restart(config, restarts, BudgetExhausted(reason)):
            return Decision.proceed()
        return Decision.escalate("budget_exhausted", action="stop")
    if message == "run ended escalated":
        if should_restart(config, restarts, WatchdogAbort(str(state["trigger"]))):
            return Decision.proceed()
        return Decision.escalate("escalated")
    return watchdog_decision(config, state)


def watchdog_decision(config: HarnessConfig, state: dict[str, Any]) -> Decision:
    """`Watchdog.step` replayed over the steps since the last verified task, the supervisor's restarts
    included: the verdict at the case's step (a nudge goes on; an abort yields to the supervisor).

    A case keeps the last 10 tool calls; the earlier steps of a longer stretch without progress are
    taken to repeat the earliest one kept (the stretch is one loop). An attempt that aborted with no
    restart left before the case's step yields, as it did then.
    """
    since = state["steps_since_verified"]
    kept = state["recent_tool_calls"][-since:] if since else []
    calls = [kept[0]] * (since - len(kept)) + kept if kept else []
    watchdog, nudged, restarts = framework_watchdog(config, BudgetLeft()), False, 0
    verdict = None
    for call in calls:
        verdict = watchdog.step([(call["name"], call["input"])], False, nudged)
        if verdict is None:
            continue
        if verdict.action == "nudge":
            nudged = True
        elif should_restart(config, restarts, WatchdogAbort(verdict.reason)):
            watchdog, nudged, restarts = framework_watchdog(config, BudgetLeft()), False, restarts + 1
        else:
            break  # out of restarts: the run ended here
    if verdict is None:
        return Decision.proceed()
    if verdict.action == "abort":
        return Decision.escalate("watchdog_fired", action="yield", reason=verdict.reason)
    return Decision.proceed(f"Watchdog: {verdict.reason}. Change approach.")
