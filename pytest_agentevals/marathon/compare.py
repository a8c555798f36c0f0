"""Two commits' marathon runs, paired by test and seed: did the head regress, improve, or can these runs
not tell?

- verified pass: the exact McNemar test on the discordant pairs (a seed that passed at one commit and
  not at the other), two-sided at the 5% level;
- progress-AUC and cost per run: a paired bootstrap of the mean difference (head - base), seeded;
  a 95% interval wholly on one side of 0 is a change.

When neither says so: "no difference detectable — the smallest effect these runs could detect is X"
(for verified pass 6/n, the fewest discordant pairs the exact test needs; for a mean, 2.8 standard
errors of the differences: 80% power at the 5% level).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..settings.seeds import describe
from ..trace.terminal import safe
from . import estimators
from .results import SeedResult

REGRESSED, IMPROVED, NO_DIFFERENCE = "regressed", "improved", "no difference detectable"


@dataclass(frozen=True)
class Change:
    """One metric compared over the pairs."""

    metric: str  # verified_pass, progress_auc, cost_usd
    label: str
    unit: str  # rate or usd
    base: float | None
    head: float | None
    verdict: str
    low: float | None = None  # the 95% interval of the mean difference (bootstrap)
    high: float | None = None
    p_value: float | None = None  # McNemar
    worse: int = 0  # discordant pairs: passed at base, not at head
    better: int = 0
    smallest_detectable: float | None = None
    note: str = ""

    @property
    def difference(self) -> float | None:
        return None if self.base is None or self.head is None else self.head - self.base

    def to_json(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "base": self.base,
            "head": self.head,
            "difference": self.difference,
            "verdict": self.verdict,
            "low": self.low,
            "high": self.high,
            "p_value": self.p_value,
            "worse": self.worse,
            "better": self.better,
            "smallest_detectable": self.smallest_detectable,
            "note": self.note,
        }


@dataclass(frozen=True)
class Comparison:
    test: str
    seeds: tuple[int, ...]  # paired
    base_only: tuple[int, ...]
    head_only: tuple[int, ...]
    changes: tuple[Change, ...]

    @property
    def regressed(self) -> bool:
        return any(change.verdict == REGRESSED for change in self.changes)

    def to_json(self) -> dict[str, Any]:
        return {
            "test": self.test,
            "pairs": len(self.seeds),
            "seeds": list(self.seeds),
            "base_only": list(self.base_only),
            "head_only": list(self.head_only),
            "regressed": self.regressed,
            "changes": [change.to_json() for change in self.changes],
        }


def compare(base: Sequence[SeedResult], head: Sequence[SeedResult]) -> list[Comparison]:
    """Every test with runs on both sides, paired by seed (one result per test and seed a side)."""
    base_by = _by_test(base, "base")
    head_by = _by_test(head, "head")
    out: list[Comparison] = []
    for test in sorted(set(base_by) & set(head_by)):
        b, h = base_by[test], head_by[test]
        seeds = tuple(sorted(set(b) & set(h)))
        pairs = [(b[seed], h[seed]) for seed in seeds]
        changes = (
            (_verified(pairs), _mean(test, pairs, "progress_auc"), _mean(test, pairs, "cost_usd"))
            if pairs
            else ()
        )
        out.append(
            Comparison(
                test,
                seeds,
                tuple(sorted(set(b) - set(h))),
                tuple(sorted(set(h) - set(b))),
                changes,
            )
        )
    return out


def nothing_paired(comparisons: Sequence[Comparison], base: str, head: str) -> str | None:
    """Why these comparisons are no evidence (no test with a seed run on both sides), or None: a gate
    that compared nothing must not pass."""
    if any(comparison.seeds for comparison in comparisons):
        return None
    if not comparisons:
        return (
            f"nothing compared: no marathon test has runs at both {base} and {head}; "
            "give --base and --head commits (or results files) that both ran the marathon"
        )
    unpaired = "; ".join(
        f"{c.test}: base seeds {describe(c.base_only) or 'none'}, "
        f"head seeds {describe(c.head_only) or 'none'}"
        for c in comparisons
    )
    return f"nothing compared: no seed ran at both {base} and {head} ({unpaired}); run the same seeds on both"


def _by_test(results: Sequence[SeedResult], side: str) -> dict[str, dict[int, SeedResult]]:
    out: dict[str, dict[int, SeedResult]] = {}
    for result in results:
        seeds = out.setdefault(result.test, {})
        if result.seed in seeds:
            raise ValueError(
                f"the {side} holds two runs of {result.test} seed {result.seed} "
                f"({seeds[result.seed].commit} and "
                f"{result.commit}): name one commit per side"
            )
        seeds[result.seed] = result
    return out


def _verified(pairs: Sequence[tuple[SeedResult, SeedResult]]) -> Change:
    n = len(pairs)
    worse = sum(1 for b, h in pairs if b.passed and not h.passed)
    better = sum(1 for b, h in pairs if h.passed and not b.passed)
    p = estimators.mcnemar_exact(worse, better)
    verdict = NO_DIFFERENCE
    if p < estimators.ALPHA:
        verdict = REGRESSED if worse > better else IMPROVED
    return Change(
        "verified_pass",
        "verified-pass rate",
        "rate",
        sum(1 for b, _ in pairs if b.passed) / n,
        sum(1 for _, h in pairs if h.passed) / n,
        verdict,
        p_value=p,
        worse=worse,
        better=better,
        smallest_detectable=estimators.smallest_detectable_pass_rate(n),
    )


def _mean(test: str, pairs: Sequence[tuple[SeedResult, SeedResult]], metric: str) -> Change:
    label, unit = (
        ("progress-AUC (mean)", "rate") if metric == "progress_auc" else ("cost per run (mean)", "usd")
    )
    higher_is_better = metric == "progress_auc"
    if metric == "cost_usd" and any(b.metrics.unpriced_models or h.metrics.unpriced_models for b, h in pairs):
        return Change(
            metric, label, unit, None, None, NO_DIFFERENCE, note="cost unknown: a model without a price"
        )
    base = [float(getattr(b.metrics, metric)) for b, _ in pairs]
    head = [float(getattr(h.metrics, metric)) for _, h in pairs]
    differences = [h - b for b, h in zip(base, head, strict=True)]
    interval = estimators.bootstrap(differences, seed=estimators.seed_of(test, metric, "compare"))
    verdict = NO_DIFFERENCE
    if interval is not None and (interval.low > 0 or interval.high < 0):
        up = interval.low > 0
        verdict = IMPROVED if up == higher_is_better else REGRESSED
    return Change(
        metric,
        label,
        unit,
        math.fsum(base) / len(base),
        math.fsum(head) / len(head),
        verdict,
        low=interval.low if interval else None,
        high=interval.high if interval else None,
        smallest_detectable=estimators.smallest_detectable_difference(differences),
    )


# -- as people read it ------------------------------------------------------------------------------------


def _value(value: float | None, unit: str, signed: bool = False) -> str:
    if value is None:
        return "n/a"
    sign = "+" if signed and value >= 0 else ("-" if value < 0 else "")
    magnitude = abs(value) if signed or value < 0 else value
    return f"{sign}${magnitude:.4g}" if unit == "usd" else f"{sign}{magnitude:.3f}"


def describe_change(change: Change, pairs: int) -> str:
    """The change in one line: the values, the evidence, the verdict."""
    head = (
        f"{change.label}: base {_value(change.base, change.unit)}, head {_value(change.head, change.unit)}, "
        f"change {_value(change.difference, change.unit, signed=True)}"
    )
    if change.metric == "verified_pass":
        evidence = (
            f"exact McNemar p={change.p_value:.3g} ({change.worse} seed(s) worse, {change.better} better)"
        )
    elif change.low is not None and change.high is not None:
        evidence = (
            f"paired bootstrap 95% interval {_value(change.low, change.unit, signed=True)} to "
            f"{_value(change.high, change.unit, signed=True)}"
        )
    else:
        evidence = change.note or f"{pairs} pair(s): too few for an interval"
    if change.verdict != NO_DIFFERENCE:
        return f"{head}; {evidence}: {change.verdict.upper()}"
    if change.smallest_detectable == 0 and change.difference == 0:
        return f"{head}: no difference — every pair is the same"
    if change.smallest_detectable is None:
        why = (
            f"{pairs} pair(s) cannot show any difference (the exact test needs at least "
            f"{estimators.MCNEMAR_MIN_DISCORDANT} discordant seeds)"
            if change.metric == "verified_pass"
            else "too few pairs to say how small"
        )
        return f"{head}; {evidence}: no difference detectable — {why}"
    return (
        f"{head}; {evidence}: no difference detectable — the smallest effect these runs could detect is "
        f"{_value(change.smallest_detectable, change.unit)}"
    )


def text(comparisons: Sequence[Comparison], base: str, head: str) -> str:
    if not comparisons:
        return safe(f"no marathon test has runs at both {base} and {head}")
    lines: list[str] = []
    for comparison in comparisons:
        pairs = len(comparison.seeds)
        lines.append(
            f"{comparison.test}: {pairs} pair(s) (seeds {describe(comparison.seeds)}), "
            f"base {base}, head {head}"
        )
        for change in comparison.changes:
            lines.append(f"  {describe_change(change, pairs)}")
        if comparison.base_only or comparison.head_only:
            lines.append(
                f"  unpaired, left out: base only {describe(comparison.base_only)}; "
                f"head only {describe(comparison.head_only)}"
            )
        lines.append("")
    return safe("\n".join(lines).rstrip())  # test ids come from results files: escaped


def as_json(comparisons: Sequence[Comparison], base: str, head: str) -> str:
    """One JSON object: the two sides' names and each test's comparison (no NaN: JSON has none)."""
    data = {"base": base, "head": head, "tests": [c.to_json() for c in comparisons]}
    return json.dumps(data, indent=2, allow_nan=False)


def markdown(comparisons: Sequence[Comparison], base: str, head: str) -> str:
    out = [f"### Marathon: `{base}` → `{head}`", ""]
    if not comparisons:
        return "\n".join([*out, f"No marathon test has runs at both `{base}` and `{head}`."]) + "\n"
    for comparison in comparisons:
        pairs = len(comparison.seeds)
        out.append(f"#### `{comparison.test}` ({pairs} pairs)")
        out.append("")
        out.extend("- " + _cell(describe_change(change, pairs)) for change in comparison.changes)
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")
