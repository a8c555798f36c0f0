"""A budget stop names where its limit was set: the pyproject table, the command-line flag, the marker
(`agentevals_budget`, or a layer's: `@pytest.mark.resume(..., max_calls=5)`) or the guard made in
Python, whichever set the limit in force. The engine's view; tests/guards/test_pytest.py and
tests/resume/test_pytest.py show the same through pytest and `agentevals record`."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_agentevals.guards import Budget, Call, DailyBudget, RunBudget, guards_for
from pytest_agentevals.settings import Settings
from pytest_agentevals.settings.budgets import with_marks

TABLE = {"budget": {"max_call_tokens": 5, "max_calls": 100}}


def fix_of(budget: Budget) -> str:
    """The fix of the stop of a first call of 20 tokens, over every max_call_tokens below."""
    ruling = RunBudget(budget).before_call(Call(1, "claude-sonnet-4-6", 10, 10, None, {}))
    assert ruling is not None
    assert ruling.action == "stop"
    return ruling.fix


def test_the_table(tmp_path: Path) -> None:
    budget = Settings.resolve(tmp_path, pyproject=TABLE).budget
    assert fix_of(budget) == (
        "max_call_tokens was set by [tool.agentevals.budget] max_call_tokens = 5 (pyproject.toml): "
        "raise it there"
    )


@pytest.mark.parametrize(("prefix", "flag"), [("--", "--budget"), ("--agentevals-", "--agentevals-budget")])
def test_the_command_line_flag_over_the_table(tmp_path: Path, prefix: str, flag: str) -> None:
    budget = Settings.resolve(
        tmp_path, cli={"budget": ["max_call_tokens=7"]}, pyproject=TABLE, flag_prefix=prefix
    ).budget
    assert fix_of(budget) == f"max_call_tokens was set by {flag} max_call_tokens=7: raise it there"
    # A key the flag does not set keeps the table as its origin.
    assert budget.origin("max_calls") == "[tool.agentevals.budget] max_calls = 100 (pyproject.toml)"


def test_the_resume_marker_over_the_table(tmp_path: Path) -> None:
    table = Settings.resolve(tmp_path, pyproject=TABLE).budget
    budget = with_marks(table, [("resume", ("counter-2",), {"max_call_tokens": 5, "until": "x"})])
    fix = fix_of(budget)
    assert fix == "max_call_tokens was set by @pytest.mark.resume(..., max_call_tokens=5): raise it there"
    assert "[tool.agentevals.budget]" not in fix


def test_the_budget_marker_the_closest_wins(tmp_path: Path) -> None:
    table = Settings.resolve(tmp_path, pyproject=TABLE).budget
    budget = with_marks(
        table,
        [
            ("agentevals_budget", (), {"max_call_tokens": 9}),
            ("agentevals_budget", (), {"max_call_tokens": 6}),
        ],
    )
    assert fix_of(budget) == (
        "max_call_tokens was set by @pytest.mark.agentevals_budget(max_call_tokens=6): raise it there"
    )


def test_a_marker_does_not_take_a_flags_limit_nor_its_origin(tmp_path: Path) -> None:
    flag = Settings.resolve(tmp_path, cli={"budget": "max_call_tokens=7"}, pyproject=TABLE).budget
    budget = with_marks(flag, [("resume", ("counter-2",), {"max_call_tokens": 50})])
    assert budget.max_call_tokens == 7
    assert (
        fix_of(budget) == "max_call_tokens was set by --agentevals-budget max_call_tokens=7: raise it there"
    )


def test_a_guard_made_in_python_and_a_budget_of_unknown_origin() -> None:
    assert fix_of(RunBudget(max_call_tokens=5).budget) == (
        "max_call_tokens was set by RunBudget(max_call_tokens=5): raise it there"
    )
    # Nowhere known: every way to raise it, as before.
    assert fix_of(Budget(max_call_tokens=5)) == (
        "raise max_call_tokens in [tool.agentevals.budget], per test with "
        "@pytest.mark.agentevals_budget(max_call_tokens=...), or per command with "
        "--budget max_call_tokens=..."
    )


def test_the_day_budget_names_its_origin_too(tmp_path: Path) -> None:
    budget = Settings.resolve(
        tmp_path, cli={"budget": "max_daily_cost_usd=2.5"}, pyproject=TABLE, flag_prefix="--"
    ).budget
    (daily,) = [g for g in guards_for(budget, ledger=tmp_path / "ledger.json") if isinstance(g, DailyBudget)]
    assert daily.fix == "max_daily_cost_usd was set by --budget max_daily_cost_usd=2.5: raise it there"
