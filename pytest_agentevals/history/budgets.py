"""Per-layer flakiness budgets, decided so that the decision is not itself flaky.

- A zero-budget layer (step and replay by default: they must be deterministic) breaches on any FLAKY
  verdict in its window, however few verdicts there are.
- Any other layer needs `min_samples` verdicts before it is judged ("not enough data" below). It
  breaches when the lower bound of the Wilson 95% interval exceeds the budget (the rate is above the
  budget beyond reasonable doubt) and warns when only the point estimate does.
- An expired quarantine entry is a breach of its own.

With `--agentevals-flaky=fail`, a breach ends the pytest session with `FLAKY_EXIT_CODE`, which is
not one of pytest's own exit codes (0-5); `agentevals flaky check` exits with the same code.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from .verdicts import LayerMetrics

FLAKY_EXIT_CODE: Final = 6

BREACH: Final = "breach"
WARN: Final = "warn"
OK: Final = "ok"
NOT_ENOUGH_DATA: Final = "not enough data"
NO_BUDGET: Final = "no budget"  # the tests outside the pyramid: shown, never judged


@dataclass(frozen=True)
class Decision:
    layer: str | None  # None: the tests outside the pyramid
    status: str  # BREACH, WARN, OK, NOT_ENOUGH_DATA, or NO_BUDGET outside the pyramid
    budget: float | None
    min_samples: int
    reason: str  # one line with the numbers behind the status


def _pct(value: float) -> str:
    return f"{value * 100:.1f}%"


def decide(metrics: LayerMetrics, budget: float, min_samples: int) -> Decision:
    """The budget decision for one layer's metrics."""
    n, k = metrics.verdicts, metrics.flaky
    low, high = metrics.interval.low, metrics.interval.high
    seen = f"{k} FLAKY of {n} verdicts"
    if budget == 0:
        if k:
            reason = f"{seen}; the budget is 0: any flaky verdict breaches"
            return Decision(metrics.layer, BREACH, budget, min_samples, reason)
        if n < min_samples:
            reason = f"{seen}; {n} < min_samples {min_samples}"
            return Decision(metrics.layer, NOT_ENOUGH_DATA, budget, min_samples, reason)
        reason = f"{seen}; flaky < {_pct(metrics.demonstrated or 1.0)} demonstrated (95%)"
        return Decision(metrics.layer, OK, budget, min_samples, reason)
    if n < min_samples:
        reason = f"{seen}; {n} < min_samples {min_samples}"
        return Decision(metrics.layer, NOT_ENOUGH_DATA, budget, min_samples, reason)
    rate = k / n
    interval = f"rate {_pct(rate)} (95% CI {_pct(low)}-{_pct(high)}) vs budget {_pct(budget)}"
    if low > budget:
        return Decision(
            metrics.layer, BREACH, budget, min_samples, f"{seen}; {interval}: lower bound above budget"
        )
    if rate > budget:
        return Decision(
            metrics.layer, WARN, budget, min_samples, f"{seen}; {interval}: estimate above budget"
        )
    return Decision(metrics.layer, OK, budget, min_samples, f"{seen}; {interval}")


def outside_the_pyramid(metrics: LayerMetrics, min_samples: int) -> Decision:
    """The tests without a layer: their numbers, but no budget to hold them to."""
    reason = f"{metrics.flaky} FLAKY of {metrics.verdicts} verdicts; no layer, so no budget"
    return Decision(None, NO_BUDGET, None, min_samples, reason)


def budget_for(budgets: Mapping[str, float], layer: str) -> tuple[float, int]:
    """(budget, min_samples) for a layer from the resolved `flaky_budget` setting."""
    return float(budgets[layer]), int(budgets["min_samples"])
