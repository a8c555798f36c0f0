"""Per-call and per-run budgets: tokens, cost, model calls and wall time, reserved before each call.

Before a call leaves, its reservation (estimated input + `max_tokens`, and that at the model's price)
is added to what the run spent and what its other calls in flight reserved; if that passes a limit,
the call is refused and the run stops as `budget_exhausted`. After the call, the reservation is
replaced by the real usage. So a budget is overshot only when a call used more than its estimate,
and then by that one call's difference.

A call whose real size is ten times the median of the run's earlier calls is reported (a `guard`
event with action `warn`): the watchdog's signal that something grew, not a limit.
"""

from __future__ import annotations

import bisect
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..settings.budgets import COST_KEYS, Budget
from .costs import unpriced
from .protocol import Call, CallResult, Guard, Ruling, Run

# A call this many times the median size of the run's earlier calls is reported...
OUTLIER_FACTOR = 10
# ...once the run has made this many calls (a median of fewer says little).
OUTLIER_MIN_CALLS = 3

_CALL_KEYS = ("max_call_tokens", "max_call_cost_usd")
_RUN_KEYS = ("max_tokens", "max_cost_usd", "max_calls", "max_seconds")


@dataclass(frozen=True)
class Left:
    """What is left of a run's budgets (None: no limit): tokens, USD, model calls, seconds."""

    tokens: int | None = None
    cost_usd: float | None = None
    calls: int | None = None
    seconds: float | None = None


def fix_for(key: str, origin: str | None = None) -> str:
    """How to give a run more of `key`: where its limit was set (`Budget.origin`), when known."""
    if origin is not None:
        return f"{key} was set by {origin}: raise it there"
    return (
        f"raise {key} in [tool.agentevals.budget], per test with @pytest.mark.agentevals_budget({key}=...), "
        f"or per command with --budget {key}=..."
    )


class RunBudget(Guard):
    """The per-call and per-run limits of a `Budget` (its other keys belong to other guards).

    `RunBudget(max_tokens=200_000, max_cost_usd=5)` from Python; `clock` (seconds, monotonic) is
    injectable for tests of `max_seconds`.
    """

    name = "budget"

    def __init__(
        self, budget: Budget | None = None, *, clock: Callable[[], float] = time.monotonic, **limits: Any
    ) -> None:
        base = budget or Budget()
        self.budget = base.with_keywords(limits, "RunBudget") if limits else base
        self._clock = clock
        self._started = clock()
        self.calls = 0
        self.tokens = 0
        self.cost_usd = 0.0
        self._in_flight: dict[int, Call] = {}
        self._sizes: list[int] = []  # the run's call sizes so far, sorted (for the median)
        self._cost_keys = tuple(k for k in COST_KEYS[:2] if getattr(self.budget, k) is not None)

    def limits(self) -> dict[str, float]:
        all_limits = self.budget.as_dict()
        return {key: all_limits[key] for key in (*_CALL_KEYS, *_RUN_KEYS) if key in all_limits}

    def start(self, run: Run) -> Ruling | None:
        self._started = self._clock()
        return None

    # -- before and after a call ----------------------------------------------------------------

    def before_call(self, call: Call) -> Ruling | None:
        budget = self.budget
        if self._cost_keys and call.cost_usd is None:
            raise unpriced(call.model, self._cost_keys)
        if budget.max_call_tokens is not None and call.tokens > budget.max_call_tokens:
            return self._stop(
                "max_call_tokens",
                budget.max_call_tokens,
                f"model call {call.index} may use {call.tokens:,} tokens (about {call.input_tokens:,} "
                f"input + max_tokens {call.max_tokens:,}), over max_call_tokens {budget.max_call_tokens:,}",
                wanted=call.tokens,
            )
        cost = call.cost_usd or 0.0
        if budget.max_call_cost_usd is not None and cost > budget.max_call_cost_usd:
            return self._stop(
                "max_call_cost_usd",
                budget.max_call_cost_usd,
                f"model call {call.index} may cost ${cost:.4f} ({call.model}, about {call.input_tokens:,} "
                f"input + max_tokens {call.max_tokens:,}), over max_call_cost_usd "
                f"${budget.max_call_cost_usd:g}",
                wanted=round(cost, 8),
            )
        flying = self._in_flight.values()
        if budget.max_calls is not None and self.calls + len(self._in_flight) + 1 > budget.max_calls:
            return self._stop(
                "max_calls",
                budget.max_calls,
                f"the run made {self.calls} model calls of max_calls {budget.max_calls}",
                spent=self.calls,
            )
        if budget.max_tokens is not None:
            held = self.tokens + sum(c.tokens for c in flying)
            if held + call.tokens > budget.max_tokens:
                return self._stop(
                    "max_tokens",
                    budget.max_tokens,
                    f"model call {call.index} may use {call.tokens:,} tokens and the run holds {held:,} "
                    f"(spent or in flight) of max_tokens {budget.max_tokens:,}",
                    spent=self.tokens,
                    wanted=call.tokens,
                )
        if budget.max_cost_usd is not None:
            held_usd = self.cost_usd + sum(c.cost_usd or 0.0 for c in flying)
            if held_usd + cost > budget.max_cost_usd:
                return self._stop(
                    "max_cost_usd",
                    budget.max_cost_usd,
                    f"model call {call.index} may cost ${cost:.4f} and the run holds ${held_usd:.4f} "
                    f"(spent or in flight) of max_cost_usd ${budget.max_cost_usd:g}",
                    spent=round(self.cost_usd, 8),
                    wanted=round(cost, 8),
                )
        if budget.max_seconds is not None:
            elapsed = self._clock() - self._started
            if elapsed >= budget.max_seconds:
                return self._stop(
                    "max_seconds",
                    budget.max_seconds,
                    f"the run has taken {elapsed:.1f} s of max_seconds {budget.max_seconds:g}",
                    spent=round(elapsed, 3),
                )
        self._in_flight[call.index] = call
        return None

    def after_call(self, call: Call, result: CallResult | None) -> Ruling | None:
        if self._in_flight.pop(call.index, None) is None or result is None or not result.ok:
            return None  # a refused, broken or failed (429, 529...) call costs nothing
        self.calls += 1
        self.tokens += result.tokens
        self.cost_usd += result.cost_usd or 0.0
        size = result.tokens
        ruling = None
        limit = self.budget.max_call_tokens
        if limit is not None and size > limit:
            ruling = Ruling.warn(
                f"model call {call.index} used {size:,} tokens, over max_call_tokens {limit:,} "
                f"(its estimate was {call.tokens:,})",
                key="max_call_tokens",
                limit=limit,
                used=size,
            )
        elif len(self._sizes) >= OUTLIER_MIN_CALLS:
            median = self._median()
            if median > 0 and size >= OUTLIER_FACTOR * median:
                ruling = Ruling.warn(
                    f"model call {call.index} used {size:,} tokens, {size / median:.0f}x the median "
                    f"({median:,.0f}) of the run's calls so far",
                    key="call_size",
                    used=size,
                    median=median,
                )
        bisect.insort(self._sizes, size)
        return ruling

    # -- reading --------------------------------------------------------------------------------

    def left(self) -> Left:
        """What is left, after what was spent and what calls in flight hold."""
        budget = self.budget
        flying = self._in_flight.values()
        tokens = cost = calls = seconds = None
        if budget.max_tokens is not None:
            tokens = max(0, budget.max_tokens - self.tokens - sum(c.tokens for c in flying))
        if budget.max_cost_usd is not None:
            held = self.cost_usd + sum(c.cost_usd or 0.0 for c in flying)
            cost = max(0.0, budget.max_cost_usd - held)
        if budget.max_calls is not None:
            calls = max(0, budget.max_calls - self.calls - len(self._in_flight))
        if budget.max_seconds is not None:
            seconds = max(0.0, budget.max_seconds - (self._clock() - self._started))
        return Left(tokens, cost, calls, seconds)

    def _median(self) -> float:
        sizes, n = self._sizes, len(self._sizes)
        middle = n // 2
        return float(sizes[middle]) if n % 2 else (sizes[middle - 1] + sizes[middle]) / 2

    def _stop(self, key: str, limit: float, reason: str, **details: Any) -> Ruling:
        fix = fix_for(key, self.budget.origin(key))
        return Ruling.stop("budget_exhausted", reason, fix=fix, key=key, limit=limit, **details)
