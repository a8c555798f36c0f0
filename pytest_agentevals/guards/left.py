"""What a harness may ask a run's guards: the budget left, and room for long work.

`left_of(guards)` says what remains of the budgets ("you have ~200k tokens left"); `Grace(guards,
within=N, reason=...)` tells the watchdog that the next N model calls may pass without verified
progress. The harness asks them of its current run through `pytest_agentevals.budget_left()` and
`expect_progress()` (`recording/harness.py`), harmless when nothing records or no guard is on.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from types import TracebackType

from .daily import DailyBudget
from .protocol import Guard
from .run_budget import RunBudget
from .watchdog import Watchdog


@dataclass(frozen=True)
class BudgetLeft:
    """What is left of the current run's budgets; None where there is no limit.

    `tokens`, `cost_usd`, `calls` and `seconds` are the run's (after what was spent and what calls in
    flight reserved), `daily_cost_usd` the machine's for today (as of the run's last look at the
    ledger), `calls_until_stall` the model calls the watchdog allows before it asks. `guards` names
    the guards on the run.
    """

    tokens: int | None = None
    cost_usd: float | None = None
    calls: int | None = None
    seconds: float | None = None
    daily_cost_usd: float | None = None
    calls_until_stall: int | None = None
    guards: tuple[str, ...] = ()

    @property
    def limited(self) -> bool:
        """Whether any budget applies (the run's or the day's)."""
        return any(value is not None for value in (self.tokens, self.cost_usd, self.calls, self.seconds)) or (
            self.daily_cost_usd is not None
        )

    def describe(self) -> str:
        """One line for a prompt: "Budget left: about 182,000 tokens, $1.20, 40 model calls."."""
        parts = []
        if self.tokens is not None:
            parts.append(f"about {self.tokens:,} tokens")
        if self.cost_usd is not None:
            parts.append(f"${self.cost_usd:.2f}")
        if self.calls is not None:
            parts.append(f"{self.calls} model call{'s' if self.calls != 1 else ''}")
        if self.seconds is not None:
            parts.append(f"{self.seconds:.0f} seconds")
        if self.daily_cost_usd is not None and self.cost_usd is None:
            parts.append(f"${self.daily_cost_usd:.2f} today")
        return "Budget left: " + ", ".join(parts) + "." if parts else ""


def left_of(guards: Sequence[Guard]) -> BudgetLeft:
    """What is left of the budgets `guards` enforce (all None when none limits)."""
    fields: dict[str, object] = {"guards": tuple(guard.name for guard in guards)}
    for guard in guards:
        if isinstance(guard, RunBudget):
            left = guard.left()
            fields.update(tokens=left.tokens, cost_usd=left.cost_usd, calls=left.calls, seconds=left.seconds)
        elif isinstance(guard, DailyBudget):
            fields["daily_cost_usd"] = guard.left()
        elif isinstance(guard, Watchdog):
            fields["calls_until_stall"] = guard.calls_left
    return BudgetLeft(**fields)  # type: ignore[arg-type]


class Grace:
    """Long work announced to the watchdogs among `guards`: they allow `within` model calls without
    verified progress from here. A plain call lasts until progress or those calls pass; as a `with`
    block, the grace ends at the block's end (the normal window counts from there). A no-op without
    a watchdog."""

    def __init__(self, guards: Sequence[Guard], within: int, reason: str) -> None:
        if isinstance(within, bool) or not isinstance(within, int) or within < 1:
            raise ValueError(f"expect_progress needs within >= 1 model calls, got {within!r}")
        if not isinstance(reason, str) or not reason.strip():
            raise ValueError("expect_progress needs a reason: what the long work is")
        self.within = within
        self.reason = reason
        self._watchdogs = [guard for guard in guards if isinstance(guard, Watchdog)]
        for watchdog in self._watchdogs:
            watchdog.expect(within, reason)

    def __enter__(self) -> Grace:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        for watchdog in self._watchdogs:
            watchdog.end_grace(self.reason)
