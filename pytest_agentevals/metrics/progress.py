"""Verified progress over steps: verified pass, claimed vs verified, progress-AUC and the longest
stretch without progress. Formulas and edge cases: docs/metrics.md.

A verification's progress is its `progress` field (clamped to [0, 1]) or, without one, 1.0 when it
passed and 0.0 when it failed: a check that says nothing of how far the work is, is all or nothing.
The run's verified progress at step s is the largest progress of any verification at or before s
(max so far: a later failing check does not take back what was verified).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable
from dataclasses import dataclass

from ..trace.events import Event
from ..trace.totals import number

# Progress within this of 1.0 is full (so 1/3 + 1/3 + 1/3 is a pass).
FULL = 1.0 - 1e-9


def progress_of(event: Event) -> float:
    """The progress a `verification` event reports (see the module docstring)."""
    value = number(event.get("progress"))
    if value is None:
        return 1.0 if event.get("passed") else 0.0
    return min(1.0, max(0.0, value))


@dataclass(frozen=True)
class Stall:
    """The longest stretch of steps in which verified progress did not rise."""

    steps: int  # how many model calls long (0: progress rose at every step, or there were none)
    first_step: int | None  # its first step


class ProgressCurve:
    """The max-so-far verified progress of a run, built one event at a time.

    It keeps only the steps at which progress rose, so asking for the progress at a step, the AUC
    over a range of steps or the longest stall costs O(rises), not O(steps).
    """

    def __init__(self, start: float = 0.0) -> None:
        self.start = min(1.0, max(0.0, start))
        self.level = self.start  # the progress so far
        self.rise_steps: list[int] = []  # steps at which progress rose, ascending
        self.rise_levels: list[float] = []  # the progress from that step on
        self.passed_at: int | None = None  # the step of the first verified pass
        self._last_step = 0

    def add(self, event: Event) -> bool:
        """Take a verification event; True when it raised verified progress."""
        step = event.get("step")
        # Steps never go back in a trace; should one (a hand-edited file), it counts from the latest.
        step = max(step, self._last_step) if isinstance(step, int) else self._last_step
        self._last_step = step
        value = progress_of(event)
        if self.passed_at is None and value >= FULL and event.get("passed"):
            self.passed_at = step
        if value <= self.level:
            return False
        self.level = value
        if self.rise_steps and self.rise_steps[-1] == step:
            self.rise_levels[-1] = value
        else:
            self.rise_steps.append(step)
            self.rise_levels.append(value)
        return True

    def at(self, step: int) -> float:
        """Verified progress at the end of `step` (before any step: the start)."""
        index = bisect_right(self.rise_steps, step)
        return self.rise_levels[index - 1] if index else self.start

    def passed_by(self, step: int | None = None) -> bool:
        """Whether a verified pass came at or before `step` (None: ever)."""
        return self.passed_at is not None and (step is None or self.passed_at <= step)

    def auc(self, first: int, budget: int) -> float:
        """The mean verified progress over `budget` steps from `first`, progress carried forward past
        the last recorded step; with a budget of 0, the progress at the end of step `first - 1`."""
        if budget <= 0:
            return self.at(first - 1)
        last = first + budget - 1
        total = 0.0
        step, level = first, self.at(first)
        index = bisect_right(self.rise_steps, first)
        while index < len(self.rise_steps) and self.rise_steps[index] <= last:
            rise = self.rise_steps[index]
            total += level * (rise - step)
            step, level = rise, self.rise_levels[index]
            index += 1
        total += level * (last - step + 1)
        return min(1.0, max(0.0, total / budget))

    def longest_stall(self, first: int, last: int) -> Stall:
        """The longest run of consecutive steps in [first, last] at none of which progress rose,
        counting up to the verified pass (after it there is nothing left to verify)."""
        if self.passed_at is not None:
            last = min(last, self.passed_at)
        best, best_first = 0, None
        start = first
        index = bisect_right(self.rise_steps, first - 1)
        while index < len(self.rise_steps) and self.rise_steps[index] <= last:
            rise = self.rise_steps[index]
            if rise - start > best:
                best, best_first = rise - start, start
            start = rise + 1
            index += 1
        if last - start + 1 > best:
            best, best_first = last - start + 1, start
        return Stall(best, best_first)


def progress_curve(events: Iterable[Event], start: float = 0.0) -> ProgressCurve:
    """The verified progress curve of a run's events."""
    curve = ProgressCurve(start)
    for event in events:
        if event.get("type") == "verification":
            curve.add(event)
    return curve


def false_claim(status: str | None, verified_pass: bool, checked: bool = True) -> bool:
    """A run that says it finished (`ok`) while its checks did not pass claims what it did not verify.
    `checked`: whether the run has any verification at all; without one there is no evidence either
    way, and the run is unverified, not a false claim."""
    return status == "ok" and checked and not verified_pass
