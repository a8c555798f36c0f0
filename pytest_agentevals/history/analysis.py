"""From a store to a flakiness report: verdicts, per-layer metrics, budget decisions, quarantine."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ..settings.layers import LAYER_NAMES
from .budgets import BREACH, Decision, budget_for, decide, outside_the_pyramid
from .model import STOPS_EXCLUDED
from .quarantine import Entry, Quarantine
from .store import ExcludedSource, HistoryStore
from .verdicts import FalseRed, LayerMetrics, false_red_of, layer_metrics, recent_runs, verdicts


@dataclass(frozen=True)
class LayerReport:
    metrics: LayerMetrics
    decision: Decision


@dataclass(frozen=True)
class FlakinessReport:
    location: str  # the store's location
    window: int
    layers: tuple[LayerReport, ...]
    outside: LayerReport  # the tests outside the pyramid (no layer marker): shown, never judged
    false_red: FalseRed  # over every layer (and tests outside the pyramid)
    quarantined: tuple[Entry, ...]  # entries still in force
    expired: tuple[Entry, ...]
    excluded: tuple[ExcludedSource, ...]  # sessions treated as outages
    unjudged: int  # attempts without a commit sha
    budget_stops: str = STOPS_EXCLUDED  # what a budget-stopped attempt counted as: left out, or "fail"

    @property
    def attempts(self) -> int:
        """Attempts behind every layer's window (tests outside the pyramid too)."""
        return sum(r.metrics.attempts for r in (*self.layers, self.outside))

    @property
    def stopped(self) -> int:
        """Of which a budget stopped."""
        return sum(r.metrics.stopped for r in (*self.layers, self.outside))

    def layer_breaches(self, layers: Iterable[str] = LAYER_NAMES) -> list[str]:
        """One line per layer among `layers` that is over its budget."""
        wanted = set(layers)
        return [
            f"{r.metrics.layer}: {r.decision.reason}"
            for r in self.layers
            if r.metrics.layer in wanted and r.decision.status == BREACH
        ]

    def expired_breaches(self) -> list[str]:
        """One line per expired quarantine entry."""
        return [f"quarantine expired: {entry.describe()}" for entry in self.expired]

    @property
    def breaches(self) -> list[str]:
        """Every breach: a layer over its budget, or an expired quarantine entry."""
        return self.layer_breaches() + self.expired_breaches()

    @property
    def breached(self) -> bool:
        return bool(self.breaches)

    def layer(self, name: str) -> LayerReport:
        for report in self.layers:
            if report.metrics.layer == name:
                return report
        raise KeyError(name)


def analyze(
    store: HistoryStore,
    budgets: Mapping[str, float],
    quarantine: Quarantine,
    today: dt.date,
    budget_stops: str = STOPS_EXCLUDED,
) -> FlakinessReport:
    """The flakiness report of everything in `store`, judged against `budgets` (the resolved
    `flaky_budget` setting: a rate per layer, min_samples and window). A budget-stopped attempt is left
    out of the verdicts, flips and red runs, counted apart, unless `budget_stops` (the setting) is
    "fail": then it is a failure."""
    window = int(budgets["window"])
    today_entries = [e for e in quarantine.entries if not e.expired(today)]
    ignored: dict[str, bool] = {}

    def ignore(test_id: str) -> bool:
        if not today_entries:
            return False
        if test_id not in ignored:
            ignored[test_id] = any(entry.matches(test_id) for entry in today_entries)
        return ignored[test_id]

    # Quarantined tests are left out after the query, so their verdicts must not use up a window.
    all_verdicts = verdicts(store.verdict_counts(None if today_entries else window), budget_stops)
    flaky = store.flaky_keys(budget_stops)
    run_layers = store.run_layers(budget_stops)
    failing = store.failing_finals(budget_stops)
    layers = []
    for name in LAYER_NAMES:
        metrics = layer_metrics(
            name,
            all_verdicts,
            window=window,
            run_layers=run_layers,
            failing=failing,
            flaky=flaky,
            ignore=ignore,
        )
        budget, min_samples = budget_for(budgets, name)
        layers.append(LayerReport(metrics, decide(metrics, budget, min_samples)))
    unlayered = layer_metrics(
        None, all_verdicts, window=window, run_layers=run_layers, failing=failing, flaky=flaky, ignore=ignore
    )
    outside = LayerReport(unlayered, outside_the_pyramid(unlayered, int(budgets["min_samples"])))
    overall = false_red_of(recent_runs(run_layers, window), failing, flaky, ignore)
    return FlakinessReport(
        location=store.location,
        window=window,
        layers=tuple(layers),
        outside=outside,
        false_red=overall,
        quarantined=tuple(today_entries),
        expired=tuple(quarantine.expired(today)),
        excluded=tuple(store.excluded_sources()),
        unjudged=store.unjudged_attempts(),
        budget_stops=budget_stops,
    )
