"""What each attempt of a test ended as, read off pytest's reports: one reading shared by the
history and the pyramid table (which layer a test is in, and how each attempt ended).

- The layer is the test's `agentevals.layer` property, put there at collection from its markers.
  Properties travel inside reports to an xdist controller and into JUnit XML; a report's keywords
  would not do, since a parametrize id or a folder named `replay` is a keyword too.
- An attempt is one run of a test's setup, call and teardown, or of the part of them that ran
  before pytest-rerunfailures ran it again (a report with the outcome "rerun"). It ended as its
  worst phase.
- A quarantined test's xfail is its real outcome: its XPASS passed, its XFAIL failed. A genuine
  xfail, like a skip, is no signal (skipped); a genuine non-strict XPASS passed.

Reports and items are read by their attributes (pytest's `TestReport` and `Item`), so this module
imports no pytest: the faces hand them over.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from ..settings.layers import layer_of
from . import quarantine
from .model import ERROR, FAILED, PASSED, SKIPPED
from .variant import LAYER_PROPERTY, from_properties


class Report(Protocol):
    """What is read of one of pytest's phase reports (a `TestReport`)."""

    nodeid: str
    duration: float
    user_properties: list[tuple[str, object]]

    @property
    def when(self) -> str | None: ...

    @property
    def outcome(self) -> str: ...

    @property
    def passed(self) -> bool: ...

    @property
    def failed(self) -> bool: ...


class Marked(Protocol):
    """What is read of a collected test (a pytest `Item`)."""

    user_properties: list[tuple[str, object]]

    def iter_markers(self, name: str | None = None) -> Iterator[Any]: ...


def tag_layer(item: Marked) -> str | None:
    """Record the layer of a test (from its markers) as its property, and return it."""
    layer = layer_of({marker.name for marker in item.iter_markers()})
    if layer is not None:
        item.user_properties.append((LAYER_PROPERTY, layer))
    return layer


def report_layer(report: Report) -> str | None:
    """The layer of the test a report is about (None: outside the pyramid)."""
    return from_properties(report.user_properties)[0]


def is_rerun(report: Report) -> bool:
    """Whether pytest-rerunfailures marked this report: its attempt failed and the test runs again."""
    return report.outcome == "rerun"


def is_quarantined(report: Report) -> bool:
    """Whether the report is of a test the quarantine turned into a non-strict xfail."""
    wasxfail = getattr(report, "wasxfail", None)
    return isinstance(wasxfail, str) and wasxfail.startswith(quarantine.REASON_PREFIX)


def phase_outcome(report: Report) -> str:
    """What one phase report says about its attempt."""
    failing = FAILED if report.when == "call" else ERROR
    if is_rerun(report):  # pytest-rerunfailures: this attempt failed and runs again
        return failing
    if report.passed:
        return PASSED  # an XPASS included: a quarantined test that passed, passed
    if report.failed:
        return failing
    if is_quarantined(report):
        return failing  # a quarantined test's XFAIL is the failure it really was
    return SKIPPED  # a skip, or a genuine xfail: no signal


_RANK = {PASSED: 0, SKIPPED: 1, ERROR: 2, FAILED: 3}


@dataclass
class ReportedAttempt:
    """One attempt of one test, as its reports arrive."""

    nodeid: str
    outcome: str = PASSED
    duration: float = 0.0
    quarantined: bool = False
    last: Report | None = None  # the latest report: its user_properties are the fullest
    rerun: bool = False  # it failed and the test runs again: not the test's final attempt

    @property
    def layer(self) -> str | None:
        return report_layer(self.last) if self.last is not None else None


class Attempts:
    """Folds phase reports into attempts, for whoever receives reports (the xdist controller too)."""

    def __init__(self) -> None:
        self._open: dict[str, ReportedAttempt] = {}

    def add(self, report: Report) -> ReportedAttempt | None:
        """Take one report; the attempt it completes (at teardown, or at a rerun), else None."""
        attempt = self._open.setdefault(report.nodeid, ReportedAttempt(report.nodeid))
        attempt.duration += report.duration
        attempt.last = report
        attempt.quarantined = attempt.quarantined or is_quarantined(report)
        outcome = phase_outcome(report)
        if _RANK[outcome] > _RANK[attempt.outcome]:
            attempt.outcome = outcome
        if report.when == "teardown" or is_rerun(report):
            attempt.rerun = is_rerun(report)
            return self._open.pop(report.nodeid)
        return None

    def unfinished(self) -> Iterable[ReportedAttempt]:
        """The attempts whose teardown never came (a crashed xdist worker's last test), closed now."""
        left = [attempt for attempt in self._open.values() if attempt.last is not None]
        self._open.clear()
        return left
