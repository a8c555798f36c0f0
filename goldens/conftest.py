"""How the example agent (examples/taskrunner) decides at a golden step case.

`agentevals_decide` gets a case and returns the agent's decision there, through the harness's own
code: a model step is `Attempt._call` on the frozen messages (so today's system prompt, tool schemas
and model settings are what is sent: a change to any of them is a changed request), a compaction is
`Attempt._compact`, and the harness's escalation calls are `Attempt._watch` and the budget and
restart rules applied to the frozen harness state.

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

from examples.taskrunner import prompts
from examples.taskrunner.harness import AgentState, Attempt, HarnessConfig, Totals, WatchdogAbort
from examples.taskrunner.model import Turn
from examples.taskrunner.policy import ScriptedModel
from examples.taskrunner.tasks import make_tasks
from pytest_agentevals.golden import Decision, StepCase
from pytest_agentevals.sim import SimServer

SEED = 1  # the seed of the recorded runs (goldens/extract_taskrunner.py)


@pytest.fixture(scope="session")
def model_url() -> Iterator[str]:
    with SimServer(ScriptedModel(SEED), seed=SEED) as sim:
        yield sim.url


@pytest.fixture(scope="session")
def new_attempt(model_url: str, tmp_path_factory: pytest.TempPathFactory) -> Callable[[], Attempt]:
    """A fresh attempt of the harness's loop (its own watchdog), on the simulated model."""
    client = anthropic.Anthropic(base_url=model_url, api_key="sim", max_retries=0)
    workspace: Path = tmp_path_factory.mktemp("workspace")
    tasks = make_tasks(12, SEED)
    return lambda: Attempt(client, tasks, workspace, HarnessConfig(), Totals(), lambda state: None)


@pytest.fixture(scope="session")
def agentevals_decide(new_attempt: Callable[[], Attempt]) -> Callable[[StepCase], Any]:
    attempt = new_attempt()

    def decide(case: StepCase) -> Any:
        if case.kind == "compaction":
            return compact(attempt, case)
        if case.state is not None:
            return harness_decision(new_attempt(), case.state)
        turn = attempt._call(case.messages)  # one model step, as the harness takes it
        return {"content": turn.content, "stop_reason": turn.stop_reason}

    return decide


def compact(attempt: Attempt, case: StepCase) -> Decision:
    """The harness's compaction, from the conversation it was about to cut."""
    *earlier, last = case.messages
    asked = {"type": "text", "text": prompts.COMPACT_REQUEST}
    conversation = [*earlier, {**last, "content": [b for b in last["content"] if b != asked]}]
    state = AgentState()
    attempt._compact(conversation, case.state["tokens_before"] if case.state else 0, state)
    return Decision.compaction(state.summary or "")


def harness_decision(attempt: Attempt, state: dict[str, Any]) -> Decision:
    """The harness's escalation calls on a frozen state: the token budget, the watchdog (a nudge
    first, then it aborts the attempt), and the supervisor (out of restarts: escalate; out of
    budget: stop, no restart)."""
    config = HarnessConfig()
    trigger, notes, counts = state["trigger"], state["earlier_notes"], state["note_counts"]
    if trigger["message"] == "token budget exhausted":
        spent = state["tokens_spent"] > trigger["budget"]
        return Decision.escalate("token_budget_exhausted", action="stop") if spent else Decision.proceed()
    if trigger["message"] == "run ended budget_exhausted":
        stopped = notes[-1:] == ["token budget exhausted"]
        return Decision.escalate("budget_exhausted", action="stop") if stopped else Decision.proceed()
    if trigger["message"] == "run ended escalated":
        out = counts.get("restarting from the last checkpoint", 0) >= config.max_restarts
        return Decision.escalate("escalated") if out else Decision.proceed()
    return watchdog_decision(attempt, state)


def watchdog_decision(attempt: Attempt, state: dict[str, Any]) -> Decision:
    """`Attempt._watch` on the tool calls since the last verified task."""
    notes = state["earlier_notes"]
    since_restart = notes[_last_index(notes, "restarting from the last checkpoint") + 1 :]
    attempt.nudged = "watchdog fired" in since_restart
    since = state["steps_since_verified"]
    *earlier, last = state["recent_tool_calls"][-since:] if since else [None]
    for call in earlier:
        attempt.watchdog.observe([(call["name"], call["input"])], progressed=False)
    uses = (
        []
        if last is None
        else [{"type": "tool_use", "id": "t", "name": last["name"], "input": last["input"]}]
    )
    reply: dict[str, Any] = {"content": []}
    try:
        attempt._watch(Turn(uses, "tool_use", 0, 0), False, reply, AgentState())
    except WatchdogAbort as abort:
        return Decision.escalate("watchdog_fired", action="yield", reason=str(abort))
    return Decision.proceed(" ".join(block["text"] for block in reply["content"]))


def _last_index(items: list[str], value: str) -> int:
    return max((i for i, item in enumerate(items) if item == value), default=-1)
