"""From a `Budget` (settings, marker keywords, --budget) to the guards that enforce it."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from ..settings.budgets import Budget
from ..settings.dburl import DatabaseURL
from .daily import DailyBudget
from .ledger import DayLedger
from .loop import LoopGuard
from .protocol import Guard
from .run_budget import RunBudget
from .watchdog import Ask, Watchdog

_RUN_BUDGET_KEYS = (
    "max_call_tokens",
    "max_call_cost_usd",
    "max_tokens",
    "max_cost_usd",
    "max_calls",
    "max_seconds",
)


def guards_for(
    budget: Budget,
    *,
    ledger: DayLedger | str | Path | DatabaseURL | None = None,
    unreachable: str = "refuse",
    ask: Ask | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> list[Guard]:
    """The guards a budget asks for, in the order they are consulted: the run's budget, the day's
    (kept in `ledger`; `unreachable`: what a ledger database out of reach does), the watchdog (asking
    `ask`), the loop guard. None for an empty budget."""
    guards: list[Guard] = []
    if any(getattr(budget, key) is not None for key in _RUN_BUDGET_KEYS):
        guards.append(RunBudget(budget, clock=clock))
    if budget.max_daily_cost_usd is not None:
        if ledger is None:
            raise ValueError("max_daily_cost_usd needs a ledger file")
        origin = budget.origin("max_daily_cost_usd")
        guards.append(DailyBudget(budget.max_daily_cost_usd, ledger, unreachable=unreachable, origin=origin))
    within = budget.watchdog_calls
    if within is not None:
        guards.append(Watchdog(within, ask=ask))
    loops = budget.loops
    if loops is not None:
        guards.append(LoopGuard(**loops))
    return guards
