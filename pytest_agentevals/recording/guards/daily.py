"""The per-day budget: a circuit breaker on the cost of every run on this machine today.

Each call reserves its most possible cost in the shared ledger before it leaves; when the day's
spending plus every run's reservations would pass `max_daily_cost_usd`, the breaker trips: this run
stops as `budget_exhausted`, and every later run that day is refused before it starts (until the
limit is raised above the one it tripped at). Settling a finished call's real cost rides on the next
reservation (one locked transaction per call), and the rest is settled when the run ends.
"""

from __future__ import annotations

from pathlib import Path

from .costs import unpriced
from .guard import Call, CallResult, Guard, Run, Verdict
from .ledger import DayState, Ledger
from .run_budget import fix_for

KEY = "max_daily_cost_usd"


class DailyBudget(Guard):
    """`DailyBudget(limit_usd, ledger)`: the day's limit, kept in `ledger` (a `Ledger` or its path)."""

    name = "daily_budget"

    def __init__(self, limit_usd: float, ledger: Ledger | str | Path) -> None:
        if limit_usd < 0:
            raise ValueError(f"{KEY} must be >= 0, got {limit_usd!r}")
        self.limit_usd = float(limit_usd)
        self.ledger = ledger if isinstance(ledger, Ledger) else Ledger(ledger)
        self._run_id = ""
        self._in_flight: dict[int, tuple[str, float]] = {}  # call index -> (day, reserved USD)
        self._settle: list[tuple[str, float, float]] = []  # (day, reserved, actual), not yet written
        self._last: DayState | None = None

    def limits(self) -> dict[str, float]:
        return {KEY: self.limit_usd}

    def start(self, run: Run) -> Verdict | None:
        self._run_id = run.run_id
        refused = self.ledger.start_run(run.run_id, self.limit_usd)
        if refused is None:
            return None
        self.ledger.close()
        why = (
            f"today's cost breaker tripped at ${float(refused.tripped['limit_usd']):g}"
            if refused.tripped is not None
            else f"today's runs spent ${refused.spent_usd:.4f}"
        )
        return Verdict.stop(
            "budget_exhausted",
            f"refused before it started: {why} of {KEY} ${self.limit_usd:g} ({self.ledger.path})",
            fix=fix_for(KEY),
            key=KEY,
            limit=self.limit_usd,
            spent=round(refused.spent_usd, 8),
            ledger=str(self.ledger.path),
        )

    def before_call(self, call: Call) -> Verdict | None:
        if call.cost_usd is None:
            raise unpriced(call.model, (KEY,))
        settle, self._settle = self._settle, []
        refused, reserved = self.ledger.reserve(self._run_id, call.cost_usd, self.limit_usd, settle)
        self._last = refused
        if not reserved:
            held = refused.spent_usd + refused.reserved_usd
            return Verdict.stop(
                "budget_exhausted",
                f"model call {call.index} may cost ${call.cost_usd:.4f} and today's runs hold "
                f"${held:.4f} (spent ${refused.spent_usd:.4f}, in flight ${refused.reserved_usd:.4f}) of "
                f"{KEY} ${self.limit_usd:g}: the day's breaker tripped ({self.ledger.path})",
                fix=fix_for(KEY),
                key=KEY,
                limit=self.limit_usd,
                spent=round(refused.spent_usd, 8),
                wanted=round(call.cost_usd, 8),
                ledger=str(self.ledger.path),
            )
        self._in_flight[call.index] = (self.ledger.today(), call.cost_usd)
        return None

    def after_call(self, call: Call, result: CallResult | None) -> Verdict | None:
        held = self._in_flight.pop(call.index, None)
        if held is not None:
            day, reserved = held
            actual = (result.cost_usd or 0.0) if result is not None and result.ok else 0.0
            self._settle.append((day, reserved, actual))
        return None

    def end(self, status: str) -> None:
        if not self._run_id:
            return
        settle, self._settle = self._settle, []
        settle += [(day, reserved, 0.0) for day, reserved in self._in_flight.values()]
        self._in_flight.clear()
        self.ledger.finish(self._run_id, settle)

    def left(self) -> float:
        """USD left today, as of this run's last look at the ledger (reading it now if never): the
        limit less what was spent and what runs in flight reserved."""
        state = self._last or self.ledger.state()
        return max(0.0, self.limit_usd - state.spent_usd - state.reserved_usd)
