"""Rank: which steps of a failing run separate failing runs from passing ones (spectrum-based).

Each run is a set of features (`steps`: call patterns, tool errors, repeats, compactions, notes such
as the watchdog's, failed checks, how a failing run ended). A feature's suspicion is its Ochiai
coefficient over the runs,

    ochiai(f) = failing(f) / sqrt(failing * (failing(f) + passing(f)))

1 for a feature every failing run shows and no passing run does, near 0 for one passing runs show as
often. A failing run's candidate steps are the steps where a feature first occurs in it (a later
occurrence is a consequence, not a new cause), scored by their most suspicious feature; ties go to
the step with more such features, then to the earlier step (what follows a mistake separates the
runs as well as the mistake does, but comes after it). Beside the score each candidate says whether
it is where the run first parts from its closest passing run (the most alike in decisions).
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import TriageError
from .steps import Run, Step


@dataclass(frozen=True)
class Evidence:
    """One feature of a candidate step, and how it splits the runs."""

    feature: str
    failing: int  # failing runs showing it
    passing: int  # passing runs showing it
    score: float

    def to_json(self) -> dict[str, Any]:
        return {
            "feature": self.feature,
            "failing": self.failing,
            "passing": self.passing,
            "score": self.score,
        }


@dataclass(frozen=True)
class Candidate:
    step: Step
    score: float
    evidence: tuple[Evidence, ...]
    divergence: bool  # the first step where the run parts from its closest passing run

    def to_json(self) -> dict[str, Any]:
        return {
            "step": self.step.number,
            "line": self.step.line,
            "decision": self.step.decision,
            "score": round(self.score, 4),
            "divergence": self.divergence,
            "evidence": [e.to_json() for e in self.evidence],
        }


@dataclass
class RunRanking:
    """One failing run's candidate steps, most suspicious first."""

    run: Run
    candidates: list[Candidate]
    closest: Run | None  # the passing run most alike in decisions
    divergence: int | None  # the step where it first parts from `closest`

    def top(self, n: int) -> list[Candidate]:
        return self.candidates[:n]

    def to_json(self, top: int | None = None) -> dict[str, Any]:
        return {
            "run": self.run.label,
            "trace": str(self.run.trace),
            "status": self.run.status,
            "steps": len(self.run.steps),
            "closest_passing": None if self.closest is None else self.closest.label,
            "divergence": self.divergence,
            "candidates": [c.to_json() for c in self.candidates[:top]],
        }


@dataclass
class Ranking:
    failing: list[Run]
    passing: list[Run]
    runs: list[RunRanking] = field(default_factory=list)

    def of(self, run: Run | str) -> RunRanking:
        for ranked in self.runs:
            if ranked.run is run or ranked.run.label == run or str(ranked.run.trace) == str(run):
                return ranked
        raise TriageError(f"{run}: not one of the failing runs ranked")

    def to_json(self, top: int | None = None) -> dict[str, Any]:
        return {
            "failing": [run.label for run in self.failing],
            "passing": [run.label for run in self.passing],
            "runs": [ranked.to_json(top) for ranked in self.runs],
        }


def ochiai(failing_with: int, passing_with: int, failing: int) -> float:
    if failing_with == 0:
        return 0.0
    return failing_with / math.sqrt(failing * (failing_with + passing_with))


def rank(runs: Sequence[Run]) -> Ranking:
    """Rank the steps of every failing run among `runs` (at least one failing and one passing)."""
    ordered = sorted(runs, key=_seed_order)
    failing = [run for run in ordered if not run.passed]
    passing = [run for run in ordered if run.passed]
    if not failing or not passing:
        have = "failing" if failing else "passing"
        raise TriageError(
            f"rank compares failing runs with passing ones, and all {len(runs)} run(s) given are {have}: "
            "give the traces of both (a marathon's seeds, or the same task re-run)"
        )
    per_run = {id(run): run.features() for run in runs}
    covered: dict[str, tuple[int, int]] = {}
    for run in runs:
        for feature in set().union(*per_run[id(run)]):
            fails, passes = covered.get(feature, (0, 0))
            covered[feature] = (fails + (not run.passed), passes + run.passed)
    ranking = Ranking(failing, passing)
    for run in failing:
        closest, divergence = closest_passing(run, passing)
        seen: set[str] = set()
        candidates: list[tuple[tuple[float, int, int], Candidate]] = []
        for step, features in zip(run.steps, per_run[id(run)], strict=True):
            new = features - seen
            seen |= features
            evidence = sorted(
                (Evidence(f, *covered[f], ochiai(*covered[f], len(failing))) for f in new),
                key=lambda e: (-e.score, e.feature),
            )
            if not evidence or evidence[0].score <= 0:
                continue
            best = evidence[0].score
            ties = sum(1 for e in evidence if math.isclose(e.score, best))
            candidate = Candidate(step, best, tuple(evidence), step.number == divergence)
            candidates.append(((-best, -ties, step.number), candidate))
        candidates.sort(key=lambda pair: pair[0])
        ranking.runs.append(RunRanking(run, [c for _, c in candidates], closest, divergence))
    return ranking


def _seed_order(run: Run) -> tuple[int, int | str]:
    """Seed 2 before seed 10; runs without a numeric seed after, by file."""
    return (0, run.seed) if isinstance(run.seed, int) else (1, str(run.trace))


def closest_passing(run: Run, passing: Sequence[Run]) -> tuple[Run | None, int | None]:
    """The passing run most alike in its sequence of decisions, and the step where `run` first parts
    from it (None when one is a prefix of the other's decisions... and they never part)."""
    mine = [step.signature for step in run.steps]
    best: Run | None = None
    best_ratio = -1.0
    for other in passing:
        ratio = difflib.SequenceMatcher(
            None, mine, [s.signature for s in other.steps], autojunk=False
        ).ratio()
        if ratio > best_ratio:
            best, best_ratio = other, ratio
    if best is None:
        return None, None
    for step, theirs in zip(run.steps, best.steps, strict=False):
        if step.signature != theirs.signature:
            return best, step.number
    return best, None


def aligned_decision(run: Run, number: int, other: Run) -> Step | None:
    """The step of `other` at the same point of its work as `run`'s step `number`: as many tasks
    verified, as many steps since the last one (or the last step of `other` at that count)."""
    step = run.step(number)
    same = [s for s in other.steps if s.verified == step.verified]
    if not same:
        return None
    exact = [s for s in same if s.since_verified == step.since_verified]
    return exact[0] if exact else same[-1]
