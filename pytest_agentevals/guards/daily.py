"""The per-day budget: a circuit breaker on the cost of every run sharing a ledger today.

Each call reserves its most possible cost before it leaves. The run takes those reservations from a
*lease* it holds in the shared ledger — a fiftieth of the day's limit at a time, or one call's worth
when the day is nearly spent — so most calls cost no file I/O, and the ledger always counts what
every run holds. When the lease runs out, one locked transaction settles the real cost of the calls
made since and takes a new lease; when not even the next call fits in what the day has left (its
spending plus every run's holdings), the breaker trips: this run stops as `budget_exhausted`, and
every later run that day is refused before it starts (until the limit is raised above the one it
tripped at). The run's spending is settled, and its lease given back, when it ends.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import LedgerError
from ..settings.dburl import DatabaseURL
from .costs import unpriced
from .ledger import DayLedger, DayState, Ledger
from .pg_ledger import PostgresLedger
from .protocol import Call, CallResult, Guard, Ruling, Run
from .run_budget import fix_for

KEY = "max_daily_cost_usd"
LEASE_SHARE = 50  # a run leases a fiftieth of the day's limit at a time


class DailyBudget(Guard):
    """`DailyBudget(limit_usd, ledger)`: the day's limit, kept in `ledger` (a ledger, its file's path
    or a PostgreSQL `DatabaseURL`). A ledger that cannot be reached stops the run before it starts
    (fail closed), unless `unreachable` is "run": then the run goes on without the day's budget, and
    its trace says so in a `guard` warning."""

    name = "daily_budget"

    def __init__(
        self,
        limit_usd: float,
        ledger: DayLedger | str | Path | DatabaseURL,
        *,
        unreachable: str = "refuse",
        origin: str | None = None,
    ) -> None:
        if limit_usd < 0:
            raise ValueError(f"{KEY} must be >= 0, got {limit_usd!r}")
        if unreachable not in ("refuse", "run"):
            raise ValueError(f"unreachable must be 'refuse' or 'run', got {unreachable!r}")
        self.limit_usd = float(limit_usd)
        self.ledger = open_ledger(ledger)
        self.unreachable = unreachable
        self.fix = fix_for(KEY, origin)  # where the limit was set (Budget.origin), when known
        self._off = False  # the ledger was unreachable and the run goes on without it
        self._run_id = ""
        self._lease = 0.0  # what the run holds in the ledger beyond its calls in flight and spending
        self._lease_day = ""
        self._in_flight: dict[int, tuple[str, float]] = {}  # call index -> (day, reserved USD)
        self._settle: list[tuple[str, float]] = []  # (day, actual USD) of calls not yet written
        self._last: DayState | None = None

    def limits(self) -> dict[str, float]:
        return {KEY: self.limit_usd}

    def start(self, run: Run) -> Ruling | None:
        self._run_id = run.run_id
        try:
            refused = self.ledger.start_run(run.run_id, self.limit_usd)
        except LedgerError as exc:
            if self.unreachable != "run" or not isinstance(self.ledger, PostgresLedger):
                self._run_id = ""  # refused: nothing to settle, and no second wait on a ledger gone bad
                raise
            self._off, self._run_id = True, ""
            return Ruling.warn(
                f"the day ledger cannot be reached, and ledger_unreachable = 'run': this run is not "
                f"counted against {KEY} ${self.limit_usd:g} ({exc})",
                key=KEY,
                ledger=self.ledger.location,
            )
        if refused is None:
            return None
        self.ledger.close()
        self._run_id = ""  # nothing to settle at the end
        why = (
            f"today's cost breaker tripped at ${float(refused.tripped['limit_usd']):g}"
            if refused.tripped is not None
            else f"today's runs spent ${refused.spent_usd:.4f}"
        )
        return Ruling.stop(
            "budget_exhausted",
            f"refused before it started: {why} of {KEY} ${self.limit_usd:g} ({self.ledger.location})",
            fix=self.fix,
            key=KEY,
            limit=self.limit_usd,
            spent=round(refused.spent_usd, 8),
            ledger=self.ledger.location,
        )

    def before_call(self, call: Call) -> Ruling | None:
        if call.cost_usd is None:
            raise unpriced(call.model, (KEY,))
        if self._off:
            return None
        cost = call.cost_usd
        today = self.ledger.today()
        if cost > self._lease or today != self._lease_day:
            refused = self._renew(cost, today)
            if refused is not None:
                held = refused.spent_usd + refused.reserved_usd
                return Ruling.stop(
                    "budget_exhausted",
                    f"model call {call.index} may cost ${cost:.4f} and today's runs hold ${held:.4f} "
                    f"(spent ${refused.spent_usd:.4f}, reserved by runs in flight "
                    f"${refused.reserved_usd:.4f}) of {KEY} ${self.limit_usd:g}: the day's breaker "
                    f"tripped ({self.ledger.location})",
                    fix=self.fix,
                    key=KEY,
                    limit=self.limit_usd,
                    spent=round(refused.spent_usd, 8),
                    wanted=round(cost, 8),
                    ledger=self.ledger.location,
                )
        self._lease -= cost
        self._in_flight[call.index] = (today, cost)
        return None

    def _renew(self, cost: float, today: str) -> DayState | None:
        """Settle what the run spent, and lease enough for this call and more; the refusing day's
        state when not even this call fits."""
        flying = sum(reserved for _, reserved in self._in_flight.values())
        settle, self._settle = self._settle, []
        want = max(cost, self.limit_usd / LEASE_SHARE)
        state, granted = self.ledger.hold(
            self._run_id, settle, flying, flying + cost, flying + want, self.limit_usd
        )
        self._last = state
        if granted is None:
            self._lease = 0.0
            return state
        self._lease, self._lease_day = granted - flying, today
        return None

    def after_call(self, call: Call, result: CallResult | None) -> Ruling | None:
        if self._off:
            return None
        held = self._in_flight.pop(call.index, None)
        if held is not None:
            day, reserved = held
            actual = (result.cost_usd or 0.0) if result is not None and result.ok else 0.0
            if result is not None and result.ok:
                self._settle.append((day, actual))
            self._lease += reserved - actual  # what the call did not use goes back to the lease
        return None

    def end(self, status: str) -> None:
        if not self._run_id:
            return
        settle, self._settle = self._settle, []
        self._in_flight.clear()
        self._lease = 0.0
        self.ledger.finish(self._run_id, settle)

    def left(self) -> float:
        """USD left today, as of this run's last look at the ledger (reading it now if never): the
        limit less what was spent and what every run holds."""
        state = self._last or self.ledger.state()
        return max(0.0, self.limit_usd - state.spent_usd - state.reserved_usd)


def open_ledger(where: DayLedger | str | Path | DatabaseURL) -> DayLedger:
    """The ledger `where` names: a ledger as it is, a database URL in PostgreSQL (connected on first
    use), else the JSON file at that path."""
    if isinstance(where, DatabaseURL):
        return PostgresLedger(where)
    if isinstance(where, str | Path):
        return Ledger(where)
    return where
