"""One attempt of the agent loop: model step, tools, verification and checkpoints, the watchdog,
compaction at a high-water mark and the token budget. The supervisor (supervisor.py) runs attempts
and restarts crashed ones from the last checkpoint.

The harness's single decisions are public functions — `over_budget`, `should_compact`,
`should_restart` and the watchdog's `Watchdog.step` — called by the loop and by the golden step
cases (goldens/conftest.py) alike, so a changed rule is a changed case.

Under a framework budget (`pytest_agentevals.budget_left()` reports one: a recorder with guards, the
`agentevals_budget` marker, `agentevals record --budget`), the harness defers to it: the framework
enforces its limits before each request leaves, and the harness's own token budget, step limit,
no-progress and repeat rules step aside where the framework has the same one. The model is told
what is left.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anthropic

import pytest_agentevals
from pytest_agentevals.errors import GuardError, LedgerError
from pytest_agentevals.guards import BudgetLeft

from . import prompts
from .model import Turn, call_model
from .tasks import Task
from .tools import Toolbox, ToolError
from .watchdog import Watchdog

# After a failed check, the fix and the check again take this many model calls before progress.
FIX_CALLS = 3


@dataclass(frozen=True)
class HarnessConfig:
    """The harness's knobs. Token counts are as the API reports them (for `compact_at`, the context
    of the last call: input plus cache creation plus cache read)."""

    model: str = "claude-sonnet-4-6"
    max_tokens: int = 1024
    stream: bool = False
    step_timeout: float = 60.0  # seconds per HTTP attempt of one model call
    max_retries: int = 2  # the SDK's own retries of one call
    compact_at: int = 8000  # compact when the last call's context was larger than this
    token_budget: int | None = None  # stop with budget_exhausted once more tokens than this were spent
    max_steps: int = 5000  # a hard stop, also reported as budget_exhausted
    no_progress_steps: int = 20  # watchdog: steps without a newly verified task
    repeat_limit: int = 4  # watchdog: the same tool call this many times in a row
    max_restarts: int = 3  # supervisor: restarts from the last checkpoint before giving up
    let_it_crash: bool = False  # supervisor: raise a crash instead, for a supervisor above to restart
    prompt_cache: bool = True  # ask the API to cache the prompt (top-level cache_control)


@dataclass
class RunResult:
    """How a run went. `status` uses the trace's words: ok (every task verified), budget_exhausted,
    escalated (the watchdog kept firing after restarts) or failed (crashes outlasted the restarts)."""

    status: str
    steps: int = 0
    tokens: int = 0
    restarts: int = 0
    tasks_done: int = 0
    tasks_total: int = 0
    compactions: int = 0
    watchdog_fires: int = 0
    tool_calls: list[str] = field(default_factory=list)
    error: str | None = None
    seconds: float = 0.0

    def line(self) -> str:
        text = (
            f"status={self.status} steps={self.steps} tokens={self.tokens} restarts={self.restarts} "
            f"tasks={self.tasks_done}/{self.tasks_total} compactions={self.compactions} "
            f"watchdog={self.watchdog_fires} time={self.seconds:.2f}s"
        )
        return text + (f" error={self.error}" if self.error else "")


# The shape of `AgentState.to_dict()`: declared in the harness's environment contract (see
# `taskrunner.contract()`), so a checkpoint saved by another shape is not resumed as if it were this one.
STATE_VERSION = 1


@dataclass
class AgentState:
    """What a checkpoint keeps: the verified tasks, in order, and the last compaction summary."""

    verified: list[str] = field(default_factory=list)
    summary: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"verified": list(self.verified), "summary": self.summary}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AgentState:
        return cls(verified=[str(t) for t in data.get("verified", [])], summary=data.get("summary"))


@dataclass
class Totals:
    """What the whole run spent, across restarts (a restart does not give tokens back)."""

    steps: int = 0
    tokens: int = 0
    compactions: int = 0
    watchdog_fires: int = 0
    tool_calls: list[str] = field(default_factory=list)


class BudgetExhausted(Exception):
    """The run spent its token or step budget."""


class WatchdogAbort(Exception):
    """The watchdog fired again after its nudge: this attempt is abandoned."""


# -- the harness's decisions ------------------------------------------------------------------------


def over_budget(config: HarnessConfig, tokens_spent: int, left: BudgetLeft | None = None) -> str | None:
    """Why the run must stop for its token budget (more tokens spent than `token_budget`), or None.
    A framework token budget (`left.tokens` set) replaces the harness's: it is enforced before each
    request leaves, so the harness does not count it again."""
    budget = config.token_budget
    if budget is None or (left is not None and left.tokens is not None):
        return None
    return f"spent {tokens_spent} tokens of a budget of {budget}" if tokens_spent > budget else None


def should_compact(config: HarnessConfig, prompt_tokens: int) -> bool:
    """Compact when the last call's context (input + cache tokens) passed the high-water mark."""
    return prompt_tokens > config.compact_at


def should_restart(config: HarnessConfig, restarts: int, error: BaseException) -> bool:
    """Restart a crashed attempt from the last checkpoint? Not when a budget stopped it (the harness's
    or the framework's, whose guards also stop stalled and looping runs) or a guard refused it (a
    model with no price, a failed watchdog hook), nor after `max_restarts`."""
    if isinstance(error, BudgetExhausted | pytest_agentevals.RunStopped | GuardError):
        return False
    if isinstance(error, pytest_agentevals.ConfigError | LedgerError):
        return False
    return restarts < config.max_restarts


def framework_watchdog(config: HarnessConfig, left: BudgetLeft) -> Watchdog:
    """The harness's watchdog, its rules off where the framework's guards do the same job."""
    return Watchdog(
        None if "watchdog" in left.guards else config.no_progress_steps,
        None if "loop" in left.guards else config.repeat_limit,
    )


class Attempt:
    """One pass of the loop from a checkpointed state, until done, or an exception ends it."""

    def __init__(
        self,
        client: anthropic.Anthropic,
        tasks: list[Task],
        workspace: Path,
        config: HarnessConfig,
        totals: Totals,
        on_checkpoint: Callable[[AgentState], None],
    ) -> None:
        self.client = client
        self.tasks = tasks
        self.workspace = workspace
        self.config = config
        self.totals = totals
        self.on_checkpoint = on_checkpoint
        self.toolbox = Toolbox(workspace, tasks)
        self.watchdog = framework_watchdog(config, pytest_agentevals.budget_left())
        self.nudged = False  # the watchdog fired once in this attempt

    def run(self, state: AgentState) -> None:
        """Work until every task is verified and the model says it is done."""
        messages = [self._opening(state)]
        while True:
            turn = self._call(messages)
            messages.append({"role": "assistant", "content": turn.content})
            if turn.tool_uses:
                results, progressed = self._run_tools(turn.tool_uses, state)
                messages.append({"role": "user", "content": results})
            elif len(state.verified) == len(self.tasks):
                return
            else:
                # The model stopped (or was cut off) with work left: say what is left.
                cut = "Your reply was cut off; keep it short. " if turn.stop_reason == "max_tokens" else ""
                reminder = cut + self._progress(state) + " Continue with the next task."
                messages.append({"role": "user", "content": [{"type": "text", "text": reminder}]})
                progressed = False
            self._watch(turn, progressed, messages[-1], state)
            if should_compact(self.config, turn.prompt_tokens):
                messages = self._compact(messages, turn.prompt_tokens, state)

    def _watch(self, turn: Turn, progressed: bool, reply: dict[str, Any], state: AgentState) -> None:
        """Let the watchdog see the step. Its first firing adds a nudge to `reply`; the next aborts."""
        calls = [(use["name"], use["input"]) for use in turn.tool_uses]
        verdict = self.watchdog.step(calls, progressed, self.nudged)
        if verdict is None:
            return
        self.totals.watchdog_fires += 1
        pytest_agentevals.note(
            "watchdog fired", reason=verdict.reason, action=verdict.action, step=self.totals.steps
        )
        if verdict.action == "abort":
            raise WatchdogAbort(verdict.reason)
        reply["content"].append(
            {"type": "text", "text": f"Watchdog: {verdict.reason}. Change approach. {self._progress(state)}"}
        )
        self.nudged = True

    # -- steps -----------------------------------------------------------------------------------

    def _call(self, messages: list[dict[str, Any]], compaction: bool = False) -> Turn:
        left = pytest_agentevals.budget_left()
        if left.calls is None and self.totals.steps >= self.config.max_steps:
            raise BudgetExhausted(f"the step budget ({self.config.max_steps} model calls) is spent")
        params: dict[str, Any] = {
            "model": self.config.model,
            "max_tokens": self.config.max_tokens,
            "system": prompts.SYSTEM,
            "tools": prompts.TOOLS,
            "messages": messages,
        }
        if compaction:
            params["tool_choice"] = {"type": "none"}
        if self.config.prompt_cache:
            params["cache_control"] = {"type": "ephemeral"}
        turn = call_model(self.client, stream=self.config.stream, timeout=self.config.step_timeout, **params)
        self.totals.steps += 1
        self.totals.tokens += turn.tokens
        reason = over_budget(self.config, self.totals.tokens, left)
        if reason is not None:
            budget = self.config.token_budget
            pytest_agentevals.note("token budget exhausted", budget=budget, spent=self.totals.tokens)
            raise BudgetExhausted(reason)
        return turn

    def _run_tools(self, uses: list[dict[str, Any]], state: AgentState) -> tuple[list[dict[str, Any]], bool]:
        results: list[dict[str, Any]] = []
        progressed = False
        for use in uses:
            name, tool_input = use["name"], use["input"]
            self.totals.tool_calls.append(f"{name}({json.dumps(tool_input, sort_keys=True)})")
            result: dict[str, Any] = {"type": "tool_result", "tool_use_id": use["id"]}
            try:
                output = self.toolbox.call(name, tool_input)
            except ToolError as exc:
                results.append({**result, "content": str(exc), "is_error": True})
                continue
            if name == "run_check":
                progressed = self._verified(output, state) or progressed
            results.append({**result, "content": output if isinstance(output, str) else json.dumps(output)})
        return results, progressed

    def _verified(self, outcome: dict[str, Any], state: AgentState) -> bool:
        """Report a check; at a newly verified task, checkpoint. True when the task is newly verified."""
        task, passed = str(outcome["task"]), bool(outcome["passed"])
        new = passed and task not in state.verified
        if new:
            state.verified.append(task)
        progress = len(state.verified) / len(self.tasks)
        pytest_agentevals.verification(task, passed, progress=progress, detail=outcome["detail"])
        if new:
            pytest_agentevals.checkpoint(state.to_dict(), workspace=self.workspace, name=f"{task} verified")
            self.on_checkpoint(state)
        elif not passed:
            # The longest check is a failed one: the fix and the check again take a few more calls
            # before progress. Said to the framework's watchdog, so it is not taken for a stall.
            pytest_agentevals.expect_progress(within=FIX_CALLS, reason=f"{task} failed its check: fixing it")
        return new

    def _compact(
        self, messages: list[dict[str, Any]], tokens_before: int, state: AgentState
    ) -> list[dict[str, Any]]:
        """Summarize the context with a model call and start over from the summary."""
        last = messages[-1]
        ask = {**last, "content": [*last["content"], {"type": "text", "text": prompts.COMPACT_REQUEST}]}
        turn = self._call([*messages[:-1], ask], compaction=True)
        state.summary = turn.text.strip() or self._progress(state)
        fresh = [self._opening(state)]
        tokens_after = _estimate_tokens(prompts.SYSTEM, prompts.TOOLS, fresh)
        self.totals.compactions += 1
        pytest_agentevals.compaction(
            tokens_before=tokens_before,
            tokens_after=tokens_after,
            summary=state.summary,
            high_water=self.config.compact_at,  # the mark it compacts at, for the run report's chart
        )
        return fresh

    # -- text ------------------------------------------------------------------------------------

    def _opening(self, state: AgentState) -> dict[str, Any]:
        budget = pytest_agentevals.budget_left().describe()  # "" outside a framework budget
        text = prompts.opening(self.tasks, set(state.verified), state.summary, budget)
        return {"role": "user", "content": [{"type": "text", "text": text}]}

    def _progress(self, state: AgentState) -> str:
        remaining = [task.id for task in self.tasks if task.id not in state.verified]
        return prompts.progress_line(
            len(state.verified), len(self.tasks), remaining[0] if remaining else None
        )


def _estimate_tokens(*parts: Any) -> int:
    # The new context's size before any call measures it: about four characters a token.
    return math.ceil(len(json.dumps(parts, separators=(",", ":"))) / 4)
