"""The example agent under the framework's guards: it tells its model the budget left, announces its
long work, and defers to the framework's budget and watchdog instead of counting twice."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import pytest_agentevals as ae
from examples.taskrunner import run
from examples.taskrunner.harness import HarnessConfig, over_budget, should_compact, should_restart
from pytest_agentevals import Budget, RunStopped
from pytest_agentevals.guards import BudgetLeft, guards_for

from ..guard_support import events_of, guard_events


def recorded(path: Path, budget: Budget, tasks: int = 6, **options: Any) -> Any:
    with ae.Recorder(path, agent="taskrunner", guards=guards_for(budget)):
        return run(tasks, seed=1, **options)


def test_under_a_framework_budget_the_framework_stops_the_run_and_the_model_is_told(tmp_path: Path) -> None:
    path = tmp_path / "budget.trace.jsonl"
    # The harness's own budget (5000 tokens) would stop the run early; the framework's (20000) rules.
    result = recorded(path, Budget(max_tokens=20_000), tasks=8, token_budget=5_000)
    assert result.status == "budget_exhausted"
    assert result.tokens > 5_000  # the harness did not count its own budget as well
    events = events_of(path)
    assert not [e for e in events if e["type"] == "note" and e["message"] == "token budget exhausted"]
    stop = guard_events(events)[-1]
    assert (stop["guard"], stop["key"]) == ("budget", "max_tokens")
    assert events[-1]["status"] == "budget_exhausted"
    first = next(e for e in events if e["type"] == "model_call")
    opening = first["request"]["body"]["messages"][0]["content"][0]["text"]
    assert "Budget left: about 20,000 tokens." in opening
    assert result.restarts == 0  # a framework stop is not restarted


def test_the_framework_watchdog_and_loop_guard_replace_the_harness_watchdog(tmp_path: Path) -> None:
    path = tmp_path / "stall.trace.jsonl"
    result = recorded(path, Budget(stall_calls=30, loop_repeat=3), tasks=8, stall_at=5, stall_persists=True)
    assert result.status == "loop"
    assert result.watchdog_fires == 0  # its repeat rule stepped aside for the loop guard
    events = events_of(path)
    assert not [e for e in events if e["type"] == "note" and e["message"] == "watchdog fired"]
    stop = guard_events(events)[-1]
    # The stalled model re-reads a file that is not there: the same failing action, again and again.
    assert (stop["guard"], stop["rule"]) == ("loop", "failing_repeat")
    assert events[-1]["status"] == "loop"


def test_a_failed_check_announces_the_fix_to_the_watchdog(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "fix.trace.jsonl"
    result = recorded(path, Budget(stall_calls=3), tasks=12)
    events = events_of(path)
    expects = [e for e in events if e["type"] == "watchdog" and e["action"] == "expect"]
    failed = [e for e in events if e["type"] == "verification" and not e["passed"]]
    assert failed  # seed 1 gets some tasks wrong first
    assert len(expects) == len(failed)
    assert expects[0]["within"] == 3
    assert expects[0]["reason"].endswith("failed its check: fixing it")
    # A task needs write + check (and now and then a read first): a 3-call window fits it. A failed
    # check adds a fix and a check again, which the window allows only because the harness said so.
    assert result.status == "ok", result.error
    monkeypatch.setattr(ae, "expect_progress", lambda **kw: None)
    unannounced = recorded(tmp_path / "unannounced.trace.jsonl", Budget(stall_calls=3), tasks=12)
    assert unannounced.status == "stalled"


def test_the_harness_decisions_are_public_seams() -> None:
    config = HarnessConfig(token_budget=1000, compact_at=500, max_restarts=2)
    assert over_budget(config, 1001) == "spent 1001 tokens of a budget of 1000"
    assert over_budget(config, 1000) is None
    assert over_budget(config, 5000, BudgetLeft(tokens=10)) is None  # the framework's budget rules
    assert should_compact(config, 501)
    assert not should_compact(config, 500)
    assert should_restart(config, 1, TimeoutError())
    assert not should_restart(config, 2, TimeoutError())
    assert not should_restart(config, 0, RunStopped("stalled", "watchdog", "no progress"))
