"""The verdict over a marathon's seeds: what n runs say, with 95% intervals, judged against the bars.

```python
verdict = judge("tests/test_x.py::test_x", results)      # SeedResults of one test (and commit)
verdict.estimates["pass_rate"]                           # Estimate(value=0.6, low=0.23, high=0.88)
verdict.outcome                                          # "met", "inconclusive" or "below"
```

Each threshold is judged on its metric's interval, never on the point value: *below* its bar when the
whole interval is on the wrong side (`min_*`: high < bar; `max_*`: low > bar — reported as *above*),
*met* when the whole interval is on the right side (low >= bar; high <= bar), *inconclusive* when the
interval holds the bar. Only a *below* fails; an inconclusive verdict is reported loudly, and with
`max_seeds=` it asks for more seeds (`grow`).

A seed a budget stopped (`budget_exhausted`) is its own class: the guard worked, which says nothing
of the agent. It is counted and shown ("2 of 5 seeds stopped by budget max_cost_usd=0.5"), left out
of the pass rates (the verified-pass rate, pass@k, pass^k and the seeds that missed the pass-rate
bar) unless `budget_stops="fail"` counts it as a failure, and when most seeds were stopped no bar is
*met*: it is *inconclusive*, saying why. Progress, loops and cost count every seed (a stopped run's
spend was spent).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..metrics import cost_per_verified_pass
from ..settings.options import BUDGET_STOP_MODES
from ..settings.seeds import extra_seeds
from . import estimators
from .results import STATUS_ORDER, Plan, SeedResult

MET, BELOW, ABOVE, INCONCLUSIVE = "met", "below", "above", "inconclusive"


@dataclass(frozen=True)
class Threshold:
    """A bar a marathon may set with a marker keyword: `min_*` (the metric must reach it) or `max_*`."""

    keyword: str
    metric: str
    label: str
    unit: str  # "rate" or "usd"

    @property
    def at_least(self) -> bool:
        return self.keyword.startswith("min_")

    def describe(self, bar: float) -> str:
        return (">= " if self.at_least else "<= ") + format_value(bar, self.unit)


THRESHOLDS: dict[str, Threshold] = {
    t.keyword: t
    for t in (
        Threshold("min_pass_rate", "pass_rate", "verified-pass rate", "rate"),
        Threshold("min_progress_auc", "progress_auc", "progress-AUC (mean)", "rate"),
        Threshold("max_loop_rate", "loop_rate", "loop rate (mean)", "rate"),
        Threshold("max_mean_cost_usd", "cost_per_run_usd", "cost per run (mean)", "usd"),
        Threshold("max_cost_per_pass_usd", "cost_per_pass_usd", "cost per verified pass", "usd"),
    )
}
METRICS: dict[str, tuple[str, str]] = {  # metric -> (label, unit), in the order a table shows them
    "pass_rate": ("verified-pass rate", "rate"),
    "progress_auc": ("progress-AUC (mean)", "rate"),
    "loop_rate": ("loop rate (mean)", "rate"),
    "cost_per_run_usd": ("cost per run (mean)", "usd"),
    "cost_per_pass_usd": ("cost per verified pass", "usd"),
}


def format_value(value: float | None, unit: str) -> str:
    if value is None:
        return "n/a"
    if math.isinf(value):
        return "inf"
    return f"${value:.4g}" if unit == "usd" else f"{value:.2f}"


@dataclass(frozen=True)
class Estimate:
    """A metric over the seeds: its value and 95% interval [low, high] (high may be infinite), how it
    was computed, and over how many seeds."""

    value: float | None
    low: float | None
    high: float | None
    method: str  # "wilson", "bootstrap", "range" (too few seeds: the whole range), "none"
    n: int

    def to_json(self) -> dict[str, Any]:
        """JSON has no infinity: an unbounded end is null, with `high_unbounded` (or `low_unbounded`)."""
        return {
            "value": _finite(self.value),
            "low": _finite(self.low),
            "high": _finite(self.high),
            "low_unbounded": self.low is not None and math.isinf(self.low),
            "high_unbounded": self.high is not None and math.isinf(self.high),
            "method": self.method,
            "n": self.n,
        }


def _finite(value: float | None) -> float | None:
    return None if value is None or not math.isfinite(value) else value


@dataclass(frozen=True)
class Judgement:
    """One threshold, judged: the bar, the verdict, and the seeds that missed the bar on their own."""

    threshold: Threshold
    bar: float
    verdict: str  # met, below, above, inconclusive
    estimate: Estimate
    failed_seeds: tuple[int, ...]
    why: str = ""  # why it is inconclusive when its interval alone would have met the bar

    @property
    def failed(self) -> bool:
        return self.verdict in (BELOW, ABOVE)

    def to_json(self) -> dict[str, Any]:
        return {
            "keyword": self.threshold.keyword,
            "metric": self.threshold.metric,
            "bar": self.bar,
            "verdict": self.verdict,
            "failed_seeds": list(self.failed_seeds),
            **({"why": self.why} if self.why else {}),
        }


@dataclass(frozen=True)
class Verdict:
    """What a marathon test's seeds say (see the module docstring)."""

    test: str
    commits: tuple[str | None, ...]
    results: tuple[SeedResult, ...]  # by commit, then seed
    plan: Plan
    estimates: Mapping[str, Estimate]
    pass_at_k: tuple[float, ...]  # k = 1..n
    pass_hat_k: tuple[float, ...]
    statuses: Mapping[str, int]
    judgements: tuple[Judgement, ...]
    missing: tuple[int, ...] = ()  # expected seeds without a result
    partial: bool = False  # a seed selection left planned seeds out: not the whole marathon
    grow: tuple[int, ...] = ()  # the seeds max_seeds adds next
    unknown_thresholds: tuple[str, ...] = ()
    notes: tuple[str, ...] = field(default=())
    budget_stops: str = "exclude"  # what the pass rates do with budget-stopped seeds (BUDGET_STOP_MODES)

    @property
    def n(self) -> int:
        return len(self.results)

    @property
    def passes(self) -> int:
        return sum(1 for result in self.results if result.passed)

    @property
    def stopped(self) -> tuple[SeedResult, ...]:
        """The seeds a budget stopped (their own class; see the module docstring)."""
        return tuple(result for result in self.results if result.stopped_by_budget)

    @property
    def mostly_stopped(self) -> bool:
        """Whether most seeds were stopped by a budget: then no bar can be met."""
        return 2 * len(self.stopped) > self.n

    @property
    def seeds(self) -> tuple[int, ...]:
        return tuple(result.seed for result in self.results)

    @property
    def restarts(self) -> dict[int, int]:
        """Restarts by seed, for the seeds that had any."""
        return {r.seed: r.metrics.restarts for r in self.results if r.metrics.restarts}

    @property
    def outcome(self) -> str:
        """below (some bar failed), inconclusive (none failed, some undecided), met, or none (no bar)."""
        if not self.judgements:
            return "none"
        if any(judgement.failed for judgement in self.judgements):
            return BELOW
        if any(judgement.verdict == INCONCLUSIVE for judgement in self.judgements):
            return INCONCLUSIVE
        return MET

    @property
    def fails(self) -> bool:
        """Whether this verdict fails the session: a bar failed, over the whole marathon."""
        return self.outcome == BELOW and not self.partial

    def by_seed(self) -> dict[int, SeedResult]:
        return {result.seed: result for result in self.results}

    def to_json(self) -> dict[str, Any]:
        return {
            "test": self.test,
            "commits": list(self.commits),
            "n": self.n,
            "seeds": list(self.seeds),
            "passes": self.passes,
            "outcome": self.outcome,
            "partial": self.partial,
            "missing": list(self.missing),
            "grow": list(self.grow),
            "estimates": {name: estimate.to_json() for name, estimate in self.estimates.items()},
            "pass_at_k": list(self.pass_at_k),
            "pass_hat_k": list(self.pass_hat_k),
            "statuses": dict(self.statuses),
            "restarts": {str(seed): count for seed, count in self.restarts.items()},
            "thresholds": [judgement.to_json() for judgement in self.judgements],
            "unknown_thresholds": list(self.unknown_thresholds),
            "plan": self.plan.to_json(),
            "notes": list(self.notes),
            "budget_stops": {
                "mode": self.budget_stops,
                "seeds": [r.seed for r in self.stopped],
                "by": {r.seed: r.metrics.budget_stop for r in self.stopped},
            },
            "runs": [
                {
                    "seed": r.seed,
                    "commit": r.commit,
                    "outcome": r.outcome,
                    "status": r.status,
                    "verified_pass": r.passed,
                    "progress_auc": r.metrics.progress_auc,
                    "loop_rate": r.metrics.loop_rate,
                    "cost_usd": None if r.metrics.unpriced_models else r.metrics.cost_usd,
                    "restarts": r.metrics.restarts,
                    "stopped_by_budget": r.stopped_by_budget,
                    "trace": r.trace,
                }
                for r in self.results
            ],
        }


# -- judging ---------------------------------------------------------------------------------------------


def judge(
    test: str,
    results: Iterable[SeedResult],
    *,
    expected: Sequence[int] | None = None,
    partial: bool = False,
    plan: Plan | None = None,
    budget_stops: str = "exclude",
) -> Verdict:
    """The verdict over `results` (one test's seeds; one commit's, or several pooled). `expected` are
    the seeds that should have a result (default: the plan's); `plan` the test's plan (default: the
    latest result's); `budget_stops` what the pass rates do with seeds a budget stopped: "exclude"
    (left out) or "fail" (counted as failures)."""
    if budget_stops not in BUDGET_STOP_MODES:
        raise ValueError(f"budget_stops={budget_stops!r}: use one of {', '.join(BUDGET_STOP_MODES)}")
    ordered = tuple(sorted(results, key=lambda r: (r.commit or "", r.seed)))
    if plan is None:
        if not ordered:
            raise ValueError(f"{test}: no result to judge and no plan")
        plan = ordered[-1].plan
    # The seeds the pass rates are over: without the budget-stopped ones, unless they count as failures.
    rated = ordered if budget_stops == "fail" else tuple(r for r in ordered if not r.stopped_by_budget)
    n = len(rated)
    passes = sum(1 for r in rated if r.passed)
    seed = estimators.seed_of(test)
    estimates = _estimates(ordered, rated, seed)
    stopped = [r for r in ordered if r.stopped_by_budget]
    mostly_stopped = 2 * len(stopped) > len(ordered)
    why = (
        f"{len(stopped)} of {len(ordered)} seeds were stopped by budget ({_budgets(stopped)}): most runs "
        "ended on a guard, not on the agent's work, so no bar can be met"
        if mostly_stopped
        else ""
    )
    judgements: list[Judgement] = []
    unknown: list[str] = []
    for keyword, bar in plan.thresholds.items():
        threshold = THRESHOLDS.get(keyword)
        if threshold is None:
            unknown.append(keyword)
            continue
        estimate = estimates[threshold.metric]
        decided = decide(threshold, bar, estimate)
        missed = _failed(threshold, bar, rated if threshold.metric == "pass_rate" else ordered)
        if decided == MET and mostly_stopped:
            judgements.append(Judgement(threshold, bar, INCONCLUSIVE, estimate, missed, why))
        else:
            judgements.append(Judgement(threshold, bar, decided, estimate, missed))
    present = {r.seed for r in ordered}
    wanted = plan.seeds if expected is None else expected
    missing = tuple(s for s in wanted if s not in present)
    statuses: dict[str, int] = {}
    for result in ordered:
        statuses[result.status] = statuses.get(result.status, 0) + 1
    verdict = Verdict(
        test=test,
        commits=tuple(dict.fromkeys(r.commit for r in ordered)),
        results=ordered,
        plan=plan,
        estimates=estimates,
        pass_at_k=tuple(estimators.pass_at_k(n, passes, k) or 0.0 for k in range(1, n + 1)),
        pass_hat_k=tuple(estimators.pass_hat_k(n, passes, k) or 0.0 for k in range(1, n + 1)),
        statuses=dict(sorted(statuses.items(), key=lambda item: _status_rank(item[0]))),
        judgements=tuple(judgements),
        missing=missing,
        partial=partial,
        unknown_thresholds=tuple(unknown),
        notes=(stop_note(stopped, len(ordered), budget_stops),) if stopped else (),
        budget_stops=budget_stops,
    )
    return _with_growth(verdict)


def stop_note(stopped: Sequence[SeedResult], n: int, mode: str) -> str:
    """The line a verdict shows for its budget-stopped seeds."""
    counted = (
        'counted as failures (budget_stops = "fail")'
        if mode == "fail"
        else 'left out of the pass rates (budget_stops = "fail" counts them as failures)'
    )
    seeds = ", ".join(str(r.seed) for r in stopped)
    return f"{len(stopped)} of {n} seeds stopped by budget {_budgets(stopped)} (seed {seeds}): {counted}"


def _budgets(stopped: Sequence[SeedResult]) -> str:
    names = list(dict.fromkeys(r.metrics.budget_stop or "(unnamed)" for r in stopped))
    return ", ".join(names)


def decide(threshold: Threshold, bar: float, estimate: Estimate) -> str:
    """met, below (above for a max_ bar) or inconclusive, from the interval (see the module doc)."""
    low, high = estimate.low, estimate.high
    if low is None or high is None:
        return INCONCLUSIVE
    if threshold.at_least:
        if high < bar:
            return BELOW
        return MET if low >= bar else INCONCLUSIVE
    if low > bar:
        return ABOVE
    return MET if high <= bar else INCONCLUSIVE


def _estimates(results: Sequence[SeedResult], rated: Sequence[SeedResult], seed: int) -> dict[str, Estimate]:
    """The estimates: the pass rate over `rated` (the seeds it counts), the rest over every seed."""
    out: dict[str, Estimate] = {}
    rated_n = len(rated)
    rated_passes = sum(1 for r in rated if r.passed)
    if rated_n:
        interval = estimators.wilson(rated_passes, rated_n)
        out["pass_rate"] = Estimate(rated_passes / rated_n, interval.low, interval.high, "wilson", rated_n)
    else:  # every seed was stopped by a budget: nothing to rate
        out["pass_rate"] = Estimate(None, None, None, "none", 0)
    n = len(results)
    passes = sum(1 for r in results if r.passed)
    out["progress_auc"] = _mean([r.metrics.progress_auc for r in results], seed + 1, bounded=True)
    rates = [r.metrics.loop_rate for r in results if r.metrics.loop_rate is not None]
    out["loop_rate"] = _mean(rates, seed + 2, bounded=True)
    if any(r.metrics.unpriced_models for r in results):
        out["cost_per_run_usd"] = Estimate(None, None, None, "none", n)  # an unknown cost is not $0
        out["cost_per_pass_usd"] = Estimate(None, None, None, "none", n)
        return out
    costs = [r.metrics.cost_usd for r in results]
    out["cost_per_run_usd"] = _mean(costs, seed + 3, bounded=False)
    value = cost_per_verified_pass(math.fsum(costs), passes)
    ratio = estimators.bootstrap_ratio(costs, [1.0 if r.passed else 0.0 for r in results], seed=seed + 4)
    if ratio is not None:
        out["cost_per_pass_usd"] = Estimate(value, ratio.low, ratio.high, "bootstrap", n)
    elif n == 1:
        out["cost_per_pass_usd"] = Estimate(value, 0.0, math.inf, "range", n)
    else:
        out["cost_per_pass_usd"] = Estimate(None, None, None, "none", n)
    return out


def _mean(values: Sequence[float], seed: int, *, bounded: bool) -> Estimate:
    n = len(values)
    if n == 0:
        return Estimate(None, None, None, "none", 0)
    mean = math.fsum(values) / n
    interval = estimators.bootstrap(values, seed=seed)
    if interval is None:  # one seed says nothing about the spread: the whole range
        return Estimate(mean, 0.0, 1.0 if bounded else math.inf, "range", n)
    return Estimate(mean, interval.low, interval.high, "bootstrap", n)


def _failed(threshold: Threshold, bar: float, results: Sequence[SeedResult]) -> tuple[int, ...]:
    """The seeds that miss the bar on their own (what to look at, and promote, first)."""
    out: list[int] = []
    for r in results:
        m = r.metrics
        if threshold.metric == "pass_rate":
            missed = not r.passed
        elif threshold.metric == "progress_auc":
            missed = m.progress_auc < bar
        elif threshold.metric == "loop_rate":
            missed = m.loop_rate is not None and m.loop_rate > bar
        elif threshold.metric == "cost_per_run_usd":
            missed = m.cost_usd > bar
        else:
            own = cost_per_verified_pass(m.cost_usd, 1 if r.passed else 0)
            missed = own is None or own > bar
        if missed:
            out.append(r.seed)
    return tuple(dict.fromkeys(out))


def _status_rank(status: str) -> int:
    return STATUS_ORDER.index(status) if status in STATUS_ORDER else len(STATUS_ORDER)


def _with_growth(verdict: Verdict) -> Verdict:
    """The verdict with the seeds `max_seeds` adds next: while it is inconclusive (nothing below),
    every planned seed has a result, seeds are left under `max_seeds`, and the marathon's total budget
    (`max_total_cost_usd`, at the mean cost per run so far) pays for them."""
    plan = verdict.plan
    if plan.max_seeds is None or verdict.outcome != INCONCLUSIVE or verdict.missing or verdict.partial:
        return verdict
    room = plan.max_seeds - verdict.n
    note = ""
    if room > 0 and plan.max_total_cost_usd is not None:
        cost = verdict.estimates["cost_per_run_usd"]
        spent = math.fsum(r.metrics.cost_usd for r in verdict.results)
        if cost.value is None:
            room = 0
            note = (
                "no more seeds: the cost so far is unknown (an unpriced model), so max_total_cost_usd "
                "cannot be kept"
            )
        elif cost.value > 0:
            fits = math.floor((plan.max_total_cost_usd - spent) / cost.value + 1e-9)
            if fits < room:
                note = (
                    f"max_total_cost_usd={plan.max_total_cost_usd:g} pays for {max(0, fits)} more seed(s) "
                    f"at ${cost.value:.4g} a run (${spent:.4g} spent)"
                )
            room = min(room, max(0, fits))
    taken = sorted({*plan.seeds, *verdict.seeds})
    grow = extra_seeds(taken, room) if room > 0 else ()
    notes = (*verdict.notes, note) if note else verdict.notes
    return dataclasses.replace(verdict, grow=grow, notes=notes)


def group(
    results: Iterable[SeedResult], *, pool: bool = False
) -> dict[tuple[str, str | None], list[SeedResult]]:
    """Results by test and commit (by test alone, under the key commit None, when pooling nights)."""
    groups: dict[tuple[str, str | None], list[SeedResult]] = {}
    for result in results:
        groups.setdefault((result.test, None if pool else result.commit), []).append(result)
    return groups


def pooled_duplicates(results: Sequence[SeedResult]) -> list[int]:
    """Seeds that appear more than once in a pooled group (several nights): each run counts."""
    seen: dict[int, int] = {}
    for result in results:
        seen[result.seed] = seen.get(result.seed, 0) + 1
    return sorted(seed for seed, count in seen.items() if count > 1)
