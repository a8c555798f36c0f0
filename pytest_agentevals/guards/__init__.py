"""Guards on the recorder: budgets like cgroups (per call, per run, per day), the watchdog on
verified progress and the loop guard. See docs/guards.md.

Every model request passes the run's guards before it leaves the machine; a guard that stops the
run raises `RunStopped` (status `budget_exhausted`, `stalled` or `loop`), writes a `guard` event,
and the run's `run_end.status` says so.
"""

from typing import TYPE_CHECKING

from .._lazy import attach

if TYPE_CHECKING:
    from ..errors import GuardError, LedgerError, RunStopped
    from ..settings.budgets import Budget, split_keywords
    from .build import guards_for
    from .costs import estimate_input_tokens
    from .daily import DailyBudget
    from .ledger import Ledger
    from .left import BudgetLeft, Grace, left_of
    from .loop import LoopGuard
    from .protocol import Call, CallResult, Guard, Ruling, Run
    from .run_budget import RunBudget
    from .watchdog import Watchdog

__all__ = [
    "Budget",
    "BudgetLeft",
    "Call",
    "CallResult",
    "DailyBudget",
    "Grace",
    "Guard",
    "GuardError",
    "Ledger",
    "LedgerError",
    "LoopGuard",
    "Ruling",
    "Run",
    "RunBudget",
    "RunStopped",
    "Watchdog",
    "estimate_input_tokens",
    "guards_for",
    "left_of",
    "split_keywords",
]

__getattr__, __dir__ = attach(__name__, __file__, deprecated={"Verdict": "Ruling"})
